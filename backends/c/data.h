/*
 * data.h - the ops that move elements without reading them as numbers
 * (Reshape and its kin, Transpose, Concat, Slice, Gather, Split), and
 * Range, as tile bodies in plain C over the lanes of a tile
 * (runtime/common.h: MKC_LANE of MKC_NLANES), embedded by every target.
 *
 * A moved element is es bytes (1, 2, 4 or 8) and is copied as bits, so one
 * body serves every type; es is a constant at every call, and its switch
 * folds once the body is inlined. A body walks the box lo..hi of its
 * output (rank r, strides ys), a lane an element, and finds the input
 * element each one is. Also here: the element types' codes, for the
 * bodies that do read elements as numbers (Range, elementwise.h).
 */

/* Element types, numbered as ONNX's (ir/dtypes.def), and their C types. */
enum {
	MKC_T_FLOAT = 1, MKC_T_UINT8 = 2, MKC_T_INT8 = 3, MKC_T_UINT16 = 4, MKC_T_INT16 = 5,
	MKC_T_INT32 = 6, MKC_T_INT64 = 7, MKC_T_BOOL = 9, MKC_T_DOUBLE = 11, MKC_T_UINT32 = 12,
	MKC_T_UINT64 = 13
};

/* X(code, C type) for each of them: the typed bodies' cases */
#define MKC_T_EACH(X) \
	X(MKC_T_FLOAT, float) X(MKC_T_UINT8, uint8_t) X(MKC_T_INT8, int8_t) \
	X(MKC_T_UINT16, uint16_t) X(MKC_T_INT16, int16_t) X(MKC_T_INT32, int32_t) \
	X(MKC_T_INT64, int64_t) X(MKC_T_BOOL, uint8_t) X(MKC_T_DOUBLE, double) \
	X(MKC_T_UINT32, uint32_t) X(MKC_T_UINT64, uint64_t)

/* Elements as bits; may_alias, because a float (say) is read and written as one. */
typedef uint16_t __attribute__((may_alias)) mkc_bits16;
typedef uint32_t __attribute__((may_alias)) mkc_bits32;
typedef uint64_t __attribute__((may_alias)) mkc_bits64;

/* Element ox of x into element oy of y, es bytes each. */
static inline MKC_BODY void MKC_UNUSED
mkc_data_mov(void *y, int64_t oy, const void *x, int64_t ox, int es)
{
	switch (es) {
	case 1: ((uint8_t *)y)[oy] = ((const uint8_t *)x)[ox]; break;
	case 2: ((mkc_bits16 *)y)[oy] = ((const mkc_bits16 *)x)[ox]; break;
	case 4: ((mkc_bits32 *)y)[oy] = ((const mkc_bits32 *)x)[ox]; break;
	default: ((mkc_bits64 *)y)[oy] = ((const mkc_bits64 *)x)[ox]; break;
	}
}

/* The box lo..hi of y: element idx is x's element base + idx . xs. */
static inline MKC_BODY void MKC_UNUSED
mkc_strided(void *MKC_RESTRICT y, const int64_t *ys, const void *MKC_RESTRICT x, int64_t base,
	    const int64_t *xs, int r, int es, const int64_t *lo, const int64_t *hi)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		mkc_data_mov(y, mkc_rt_dot(idx, ys, r), x, base + mkc_rt_dot(idx, xs, r), es);
	}
}

/*
 * Reshape and its kin: element i of y is element i of x, both dense. When
 * every tile is a run of consecutive elements (flat), the lanes walk flat
 * indices: no lane splits an index into coordinates (two 64-bit divisions
 * an axis), which made a small copy cost more than its memory traffic.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_copy(void *MKC_RESTRICT y, const int64_t *ys, const void *MKC_RESTRICT x, int r, int es,
	 int flat, const int64_t *lo, const int64_t *hi)
{
	if (!flat) {
		mkc_strided(y, ys, x, 0, ys, r, es, lo, hi);
		return;
	}
	int64_t ext[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	const int64_t i0 = mkc_rt_dot(lo, ys, r);
	for (int64_t i = i0 + MKC_LANE; i < i0 + cnt; i += MKC_NLANES)
		mkc_data_mov(y, i, x, i, es);
}

/* Transpose: axis d of y is axis perm[d] of x. */
static inline MKC_BODY void MKC_UNUSED
mkc_transpose(void *MKC_RESTRICT y, const int64_t *ys, const void *MKC_RESTRICT x,
	      const int64_t *xs, const int *perm, int r, int es, const int64_t *lo,
	      const int64_t *hi)
{
	int64_t ps[MKC_RANK + 1];
	for (int d = 0; d < r; d++)
		ps[d] = xs[perm[d]];
	mkc_strided(y, ys, x, 0, ps, r, es, lo, hi);
}

/*
 * Slice: along axis d, element i of y is element start[d] + i * step[d] of
 * x, start as the model gives it (negative: from the end; clamped here, by
 * the axis's length at run time); an axis not sliced has start 0, step 1.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_slice(void *MKC_RESTRICT y, const int64_t *ys, const void *MKC_RESTRICT x, const int64_t *xd,
	  const int64_t *xs, const int64_t *start, const int64_t *step, int r, int es,
	  const int64_t *lo, const int64_t *hi)
{
	int64_t sp[MKC_RANK + 1], base = 0;
	for (int d = 0; d < r; d++) {
		base += mkc_rt_slice_start(start[d], step[d], xd[d]) * xs[d];
		sp[d] = step[d] * xs[d];
	}
	mkc_strided(y, ys, x, base, sp, r, es, lo, hi);
}

/* Concat of the n inputs x[k] (dims xd[k], strides xs[k]) along axis. */
static inline MKC_BODY void MKC_UNUSED
mkc_concat(void *MKC_RESTRICT y, const int64_t *ys, int n, const void *const *x,
	   const int64_t *const *xd, const int64_t *const *xs, int axis, int r, int es,
	   const int64_t *lo, const int64_t *hi)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t oy = mkc_rt_dot(idx, ys, r);
		for (int k = 0; k < n; k++) {
			if (idx[axis] < xd[k][axis]) {   /* idx is now input k's element */
				mkc_data_mov(y, oy, x[k], mkc_rt_dot(idx, xs[k], r), es);
				break;
			}
			idx[axis] -= xd[k][axis];
		}
	}
}

/*
 * Split of x (rank r, strides xs) along axis into the n outputs y[k], each
 * one whole tile, dense, of dims yd[k], one after another.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_split(int n, void *const *y, const int64_t *const *yd, const int64_t *const *ys,
	  const void *MKC_RESTRICT x, const int64_t *xs, int axis, int r, int es)
{
	const int64_t zero[MKC_RANK + 1] = {0};
	int64_t at = 0;
	for (int k = 0; k < n; k++) {
		mkc_strided(y[k], ys[k], x, at * xs[axis], xs, r, es, zero, yd[k]);
		at += yd[k][axis];
	}
}

/*
 * Gather from x (rank xr, dims xd, strides xs) along axis by the indices
 * ind (rank ir, strides is; iw bytes each: int32 or int64): element idx of
 * y is x's element with coordinate axis the index at idx[axis .. axis +
 * ir), the others idx's in order. A bf16 table (wide) is read as float32
 * into y. An index out of range ends the lane's walk: it returns -1 with
 * the index in *bad (the caller says which node), else 0.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_gather(void *MKC_RESTRICT y, const int64_t *ys, int r, const void *MKC_RESTRICT x,
	   const int64_t *xd, const int64_t *xs, int xr, int es, int wide, const void *ind,
	   const int64_t *is, int ir, int iw, int axis, const int64_t *lo, const int64_t *hi,
	   int64_t *bad)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t at = mkc_rt_dot(idx + axis, is, ir);
		int64_t j = iw == 4 ? ((const int32_t *)ind)[at] : ((const int64_t *)ind)[at];
		if (j < 0)
			j += xd[axis];
		if (j < 0 || j >= xd[axis]) {
			*bad = j;
			return -1;
		}
		int64_t o = j * xs[axis];
		for (int d = 0; d < axis; d++)
			o += idx[d] * xs[d];
		for (int d = axis + 1; d < xr; d++)
			o += idx[d - 1 + ir] * xs[d];
		const int64_t oy = mkc_rt_dot(idx, ys, r);
		if (wide)
			((float *)y)[oy] = mkc_rt_bf16(((const uint16_t *)x)[o]);
		else
			mkc_data_mov(y, oy, x, o, es);
	}
	return 0;
}

/* Range: y[i] = start + i * delta for i in lo..hi, in the arithmetic of type t. */
#define MKC_RANGE_CASE(code, T) \
	case code: ((T *)y)[i] = (T)(*(const T *)start + i * *(const T *)delta); break;

static inline MKC_BODY void MKC_UNUSED
mkc_range(void *MKC_RESTRICT y, int t, const void *start, const void *delta, int64_t lo,
	  int64_t hi)
{
	for (int64_t i = lo + MKC_LANE; i < hi; i += MKC_NLANES)
		switch (t) {
		MKC_T_EACH(MKC_RANGE_CASE)
		default: break;
		}
}
