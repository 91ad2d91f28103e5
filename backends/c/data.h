/*
 * data.h - the ops that move elements without reading them as numbers
 * (Reshape and its kin, Transpose, Concat, Slice, Gather, Split), and
 * Range, as tile bodies in plain C over the lanes of a tile
 * (runtime/common.h: MKC_LANE of MKC_NLANES), embedded by every target.
 *
 * A moved element is es bytes (1, 2, 4 or 8: mkc_view_es, from the view)
 * and is copied as bits, so one body serves every type; es is a constant
 * at every call, and its switch folds once the body is inlined. A body
 * walks the box lo..hi of its output view y, a lane an element, and finds
 * the input element each one is.
 */

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

#if defined(__CUDACC__) || defined(__HIPCC__)
/*
 * mkc_strided's box on a GPU when its last axis is a run in both views of
 * a whole number of 16-byte units, u a row, that divides a warp or that a
 * warp divides (a prompt chunk's heads, 64 floats: 16 units): 32 / u rows
 * a warp at once, or a warp a row, each lane moving 16 bytes a load (a
 * warp a row of 4-byte loads moved a 64K-value tile in 200 us on an H200).
 * Every row's start must be 16-byte aligned in both: checked for the
 * first row and every stride. False, and nothing done, otherwise.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_strided_rows16(void *MKC_RESTRICT py, const void *MKC_RESTRICT px, int64_t base,
		   const int64_t *xs, const mkc_view *y, int es, const int64_t *lo,
		   const int64_t *ext, int64_t cnt)
{
	const int r = y->rank;
	const int64_t n = ext[r - 1], u = n * es / 16;
	if (n * es % 16 || u == 0 || (u < MKC_WARP ? MKC_WARP % u : u % MKC_WARP))
		return 0;
	int64_t al = (int64_t)((uintptr_t)py | (uintptr_t)px) | (mkc_rt_dot(lo, y->s, r) * es) |
		     ((base + mkc_rt_dot(lo, xs, r)) * es);
	for (int d = 0; d + 1 < r; d++)
		al |= (y->s[d] | xs[d]) * es;
	if (al % 16)
		return 0;
	int64_t idx[MKC_RANK + 1];
	const int64_t per = u < MKC_WARP ? u : MKC_WARP;   /* lanes a row */
	const int64_t rpw = MKC_WARP / per, lane = MKC_LANE % MKC_WARP;
	const int64_t step = MKC_NLANES / MKC_WARP * rpw;
	_Pragma("unroll 2")
	for (int64_t f = MKC_LANE / MKC_WARP * rpw + lane / per; f < cnt / n; f += step) {
		mkc_rt_unflat(f * n, lo, ext, r, idx);
		uint4 *MKC_RESTRICT oy = (uint4 *)((char *)py + mkc_rt_dot(idx, y->s, r) * es);
		const uint4 *MKC_RESTRICT ox =
			(const uint4 *)((const char *)px + (base + mkc_rt_dot(idx, xs, r)) * es);
		for (int64_t k = lane % per; k < u; k += per)
			oy[k] = ox[k];
	}
	return 1;
}
#endif

/* The box lo..hi of y: element idx is x's element base + idx . xs (xs: rank + 1 entries). */
static inline MKC_BODY void MKC_UNUSED
mkc_strided(const mkc_view *y, const mkc_view *x, int64_t base, const int64_t *xs,
	    const int64_t *lo, const int64_t *hi)
{
	void *MKC_RESTRICT py = y->p;
	const void *MKC_RESTRICT px = x->p;
	const int r = y->rank, es = mkc_view_es(y);
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
#if defined(__CUDACC__) || defined(__HIPCC__)
	/*
	 * The box's last axis a run in both (a prompt chunk's heads moved
	 * between [S, H, D] and [H, S, D]): a warp a row, which it finds once,
	 * and the rows unrolled so that a lane has several loads in flight (a
	 * lane an element, two 64-bit divisions an axis each, took 200 us for a
	 * tile of 64K values on an H200).
	 */
	if (r > 0 && xs[r - 1] == 1 && y->s[r - 1] == 1 && MKC_NLANES % MKC_WARP == 0 &&
	    mkc_strided_rows16(py, px, base, xs, y, es, lo, ext, cnt))
		return;
	if (r > 0 && xs[r - 1] == 1 && y->s[r - 1] == 1 && ext[r - 1] >= MKC_WARP &&
	    MKC_NLANES % MKC_WARP == 0) {
		const int64_t n = ext[r - 1], lane = MKC_LANE % MKC_WARP;
		_Pragma("unroll 4")
		for (int64_t f = MKC_LANE / MKC_WARP; f < cnt / n; f += MKC_NLANES / MKC_WARP) {
			mkc_rt_unflat(f * n, lo, ext, r, idx);
			const int64_t oy = mkc_rt_dot(idx, y->s, r), ox = base + mkc_rt_dot(idx, xs, r);
			for (int64_t j = lane; j < n; j += MKC_WARP)
				mkc_data_mov(py, oy + j, px, ox + j, es);
		}
		return;
	}
#endif
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		mkc_data_mov(py, mkc_rt_dot(idx, y->s, r), px, base + mkc_rt_dot(idx, xs, r), es);
	}
}

/*
 * Reshape and its kin: element i of y is element i of x, both dense. When
 * every tile is a run of consecutive elements (flat), the lanes walk flat
 * indices: no lane splits an index into coordinates (two 64-bit divisions
 * an axis), which made a small copy cost more than its memory traffic.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_copy(const mkc_view *y, const mkc_view *x, int flat, const int64_t *lo, const int64_t *hi)
{
	if (!flat) {
		mkc_strided(y, x, 0, y->s, lo, hi);
		return;
	}
	void *MKC_RESTRICT py = y->p;
	const void *MKC_RESTRICT px = x->p;
	const int es = mkc_view_es(y);
	int64_t ext[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, y->rank, ext);
	const int64_t i0 = mkc_rt_dot(lo, y->s, y->rank);
	for (int64_t i = i0 + MKC_LANE; i < i0 + cnt; i += MKC_NLANES)
		mkc_data_mov(py, i, px, i, es);
}

/* Transpose: axis d of y is axis perm[d] of x. */
static inline MKC_BODY void MKC_UNUSED
mkc_transpose(const mkc_view *y, const mkc_view *x, const int *perm, const int64_t *lo,
	      const int64_t *hi)
{
	int64_t ps[MKC_RANK + 1] = {0};
	for (int d = 0; d < y->rank; d++)
		ps[d] = x->s[perm[d]];
	mkc_strided(y, x, 0, ps, lo, hi);
}

/*
 * Slice: along axis d, element i of y is element start[d] + i * step[d] of
 * x, start as the model gives it (negative: from the end; clamped here, by
 * the axis's length at run time); an axis not sliced has start 0, step 1.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_slice(const mkc_view *y, const mkc_view *x, const int64_t *start, const int64_t *step,
	  const int64_t *lo, const int64_t *hi)
{
	int64_t sp[MKC_RANK + 1] = {0}, base = 0;
	for (int d = 0; d < y->rank; d++) {
		base += mkc_rt_slice_start(start[d], step[d], x->d[d]) * x->s[d];
		sp[d] = step[d] * x->s[d];
	}
	mkc_strided(y, x, base, sp, lo, hi);
}

/* Concat of the n inputs x[k] along axis. */
static inline MKC_BODY void MKC_UNUSED
mkc_concat(const mkc_view *y, int n, const mkc_view *const *x, int axis, const int64_t *lo,
	   const int64_t *hi)
{
	void *MKC_RESTRICT py = y->p;
	const int r = y->rank, es = mkc_view_es(y);
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t oy = mkc_rt_dot(idx, y->s, r);
		for (int k = 0; k < n; k++) {
			if (idx[axis] < x[k]->d[axis]) {   /* idx is now input k's element */
				mkc_data_mov(py, oy, x[k]->p, mkc_rt_dot(idx, x[k]->s, r), es);
				break;
			}
			idx[axis] -= x[k]->d[axis];
		}
	}
}

/* Split of x along axis into the n outputs y[k], each one whole tile, one after another. */
static inline MKC_BODY void MKC_UNUSED
mkc_split(int n, const mkc_view *const *y, const mkc_view *x, int axis)
{
	const int64_t zero[MKC_RANK + 1] = {0};
	int64_t at = 0;
	for (int k = 0; k < n; k++) {
		mkc_strided(y[k], x, at * x->s[axis], x->s, zero, y[k]->d);
		at += y[k]->d[axis];
	}
}

/* Index at of ind (int32 or int64), as it is. */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_index_at(const mkc_view *ind, int64_t at)
{
	return ind->type == MKC_T_INT32 ? ((const int32_t *)ind->p)[at]
					: ((const int64_t *)ind->p)[at];
}

/* Element o of a Gather's table into element oy of y: a bf16 table's as float32. */
static inline MKC_BODY void MKC_UNUSED
mkc_gather_mov(void *y, int64_t oy, const void *x, int64_t o, int bf16, int es)
{
	if (bf16)
		((float *)y)[oy] = mkc_rt_bf16(((const uint16_t *)x)[o]);
	else
		mkc_data_mov(y, oy, x, o, es);
}

/*
 * Gather from x along axis by the indices ind (int32 or int64): element
 * idx of y is x's element with coordinate axis the index at idx[axis ..
 * axis + ind's rank), the others idx's in order. A bf16 table is read as
 * float32 into y. The indices come from the caller: every index the tile
 * reads (the box's sub-box on those axes, one per row of the table it
 * moves) is checked before any element moves, -n..n-1 along an axis of n
 * (a negative one counts from the end, as ONNX has it); one outside
 * returns -1 with it in *bad (runtime/common.h's mkc_rt_check_index; the
 * caller says which node), else 0.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_gather(const mkc_view *y, const mkc_view *x, const mkc_view *ind, int axis, const int64_t *lo,
	   const int64_t *hi, mkc_rt_bad *bad)
{
	void *MKC_RESTRICT py = y->p;
	const void *MKC_RESTRICT px = x->p;
	const int r = y->rank, es = mkc_view_es(x), ir = ind->rank;
	const int64_t n = x->d[axis];
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t nind = mkc_rt_extents(lo + axis, hi + axis, ir, ext);
	for (int64_t f = 0; f < nind; f++) {   /* every lane alike: they must agree */
		mkc_rt_unflat(f, lo + axis, ext, ir, idx);
		const int64_t at = mkc_rt_dot(idx, ind->s, ir);
		const int64_t j = mkc_index_at(ind, at);
		int64_t flat = 0;   /* its place among the indices, for the sentence */
		for (int d = 0; d < ir; d++)
			flat = flat * ind->d[d] + idx[d];
		if (mkc_rt_check_index(j, -n, n - 1, MKC_IX_INDEX, flat, bad))
			return -1;
	}
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	if (x->rank == 2 && axis == 0 && x->s[1] == 1 && y->s[r - 1] == 1 && ext[r - 1] > 0) {
		/* an embedding's rows: the lanes walk a row's columns, every lane
		 * finding the row's index once (a lane an element split each
		 * element's flat index into coordinates) */
		const int64_t len = ext[r - 1];
		for (int64_t q = 0; q < cnt / len; q++) {
			mkc_rt_unflat(q * len, lo, ext, r, idx);
			const int64_t at = mkc_rt_dot(idx, ind->s, ir);
			int64_t j = mkc_index_at(ind, at);
			if (j < 0)
				j += n;
			const int64_t o = j * x->s[0] + idx[r - 1], oy = mkc_rt_dot(idx, y->s, r);
			for (int64_t c = MKC_LANE; c < len; c += MKC_NLANES)
				mkc_gather_mov(py, oy + c, px, o + c, x->bf16, es);
		}
		return 0;
	}
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t at = mkc_rt_dot(idx + axis, ind->s, ir);
		int64_t j = mkc_index_at(ind, at);
		if (j < 0)
			j += n;
		int64_t o = j * x->s[axis];
		for (int d = 0; d < axis; d++)
			o += idx[d] * x->s[d];
		for (int d = axis + 1; d < x->rank; d++)
			o += idx[d - 1 + ir] * x->s[d];
		mkc_gather_mov(py, mkc_rt_dot(idx, y->s, r), px, o, x->bf16, es);
	}
	return 0;
}

/* Range: y[i] = start + i * delta for i in lo..hi, in the arithmetic of y's type. */
#define MKC_RANGE_CASE(code, T) \
	case code: ((T *)py)[i] = (T)(*(const T *)start->p + i * *(const T *)delta->p); break;

static inline MKC_BODY void MKC_UNUSED
mkc_range(const mkc_view *y, const mkc_view *start, const mkc_view *delta, const int64_t *lo,
	  const int64_t *hi)
{
	void *MKC_RESTRICT py = y->p;
	for (int64_t i = lo[0] + MKC_LANE; i < hi[0]; i += MKC_NLANES)
		switch (y->type) {
		MKC_T_EACH(MKC_RANGE_CASE)
		default: break;
		}
}
