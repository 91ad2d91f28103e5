/*
 * rows.h - the row operations (Softmax, RMSNormalization,
 * LayerNormalization, onnxruntime's Simplified and SkipSimplified
 * LayerNormalization) as tile bodies in plain C over the lanes of a tile
 * (runtime/common.h: MKC_LANE of MKC_NLANES, mkc_rt_block_sum), embedded
 * by every target.
 *
 * A row is the elements that differ only in the row axes: axis alone
 * (one_axis) or the axes from axis to the last (passes/lower.c decides
 * which, from the op and Softmax's opset). A tile's box holds
 * whole rows; y and x have the same shape. Scales and biases are float32
 * or bf16 (their views say which); a norm's broadcast to x as the spec
 * allows (mkc_rows_wkind).
 */

/*
 * The rows of box lo..hi of v: ext (rank + 1 entries) is the box with the
 * row axes at 1, *len a row's elements and *st the stride between them
 * (one_axis; otherwise the row is dense); returns how many rows.
 */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_rows_box(const mkc_view *v, int axis, int one_axis, const int64_t *lo, const int64_t *hi,
	     int64_t *ext, int64_t *len, int64_t *st)
{
	const int r = v->rank;
	mkc_rt_extents(lo, hi, r, ext);
	*len = 1;
	*st = 1;
	if (one_axis) {
		*len = v->d[axis];
		*st = v->s[axis];
		ext[axis] = 1;
	} else {
		for (int k = axis; k < r; k++) {
			*len *= v->d[k];
			ext[k] = 1;
		}
	}
	int64_t cnt = 1;
	for (int k = 0; k < r; k++)
		cnt *= ext[k];
	return cnt;
}

/* Element i of a vector kept in float32 or bf16. */
static inline MKC_BODY float MKC_UNUSED
mkc_rows_at(const mkc_view *w, int64_t i)
{
	return w->bf16 ? mkc_rt_bf16(((const uint16_t *)w->p)[i]) : ((const float *)w->p)[i];
}

/*
 * How a norm's scale or bias w (broadcast to y unidirectionally: its axes
 * are y's last ones, each of extent 1 or y's; passes/infer.c checked it) is
 * read along a row of len elements: as the row itself (it holds exactly the
 * row axes, densely: element j at j; the usual [hidden] scale), one value
 * (at 0), or by coordinates (it varies per row, [3,1] for y [3,8], or
 * repeats within it).
 */
enum { MKC_ROWS_W_ROW, MKC_ROWS_W_ONE, MKC_ROWS_W_BCAST };

static inline MKC_BODY int MKC_UNUSED
mkc_rows_wkind(const mkc_view *w, const mkc_view *y, int axis, int64_t len)
{
	int64_t n = 1;
	for (int e = w->rank - 1, d = y->rank - 1; e >= 0; e--, d--) {
		if (d >= axis ? w->d[e] != y->d[d] || (w->d[e] != 1 && w->s[e] != n) : w->d[e] != 1)
			return mkc_rt_count(w->d, w->rank) == 1 ? MKC_ROWS_W_ONE : MKC_ROWS_W_BCAST;
		n *= w->d[e];
	}
	return n == len ? MKC_ROWS_W_ROW : n == 1 ? MKC_ROWS_W_ONE : MKC_ROWS_W_BCAST;
}

/*
 * Element j (row-major over the axes from axis on) of the row at idx of y,
 * read from w of that kind: by coordinates, w's axes being y's last ones
 * and an axis of extent 1 repeating.
 */
static inline MKC_BODY float MKC_UNUSED
mkc_rows_w(const mkc_view *w, int kind, const mkc_view *y, int axis, const int64_t *idx,
	   int64_t j)
{
	if (kind != MKC_ROWS_W_BCAST)
		return mkc_rows_at(w, kind == MKC_ROWS_W_ROW ? j : 0);
	int64_t o = 0;
	for (int e = w->rank - 1, d = y->rank - 1; e >= 0; e--, d--) {
		int64_t c = idx[d];
		if (d >= axis) {
			c = j % y->d[d];
			j /= y->d[d];
		}
		o += w->d[e] != 1 ? c * w->s[e] : 0;
	}
	return mkc_rows_at(w, o);
}

/* Softmax over each row of the box, a lane a row. */
static inline MKC_BODY void MKC_UNUSED
mkc_softmax(const mkc_view *y, const mkc_view *x, int axis, int one_axis, const int64_t *lo,
	    const int64_t *hi)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], len, st;
	const int r = y->rank;
	const int64_t cnt = mkc_rows_box(y, axis, one_axis, lo, hi, ext, &len, &st);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *MKC_RESTRICT px = (const float *)x->p + mkc_rt_dot(idx, x->s, r);
		float *MKC_RESTRICT py = (float *)y->p + mkc_rt_dot(idx, y->s, r);
		float mx = -INFINITY, sum = 0;
		for (int64_t j = 0; j < len; j++)
			mx = fmaxf(mx, px[j * st]);
		for (int64_t j = 0; j < len; j++) {
			py[j * st] = expf(px[j * st] - mx);
			sum += py[j * st];
		}
		for (int64_t j = 0; j < len; j++)
			py[j * st] /= sum;
	}
}

/* RMSNormalization's (layer 0) or LayerNormalization's (layer 1) options. */
typedef struct {
	int axis;      /* the row is the axes from axis on */
	float eps;
	int layer;
} mkc_norm_opt;

/* Per-row output v (NULL: none) at the row's coordinates idx. */
static inline MKC_BODY void MKC_UNUSED
mkc_rows_put(const mkc_view *v, const int64_t *idx, float val)
{
	if (v)
		((float *)v->p)[mkc_rt_dot(idx, v->s, v->rank)] = val;
}

#if defined(__CUDACC__) || defined(__HIPCC__)
/*
 * One row of mkc_norm on a GPU warp, 16 bytes a load: the row's len
 * floats at px into py, both 16-byte aligned (else false, and nothing
 * done); its mean and 1 / deviation into *mean and *inv.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_norm_row4(void *MKC_RESTRICT py, const float *MKC_RESTRICT px, int64_t len,
	      const mkc_view *scale, int sk, const mkc_view *bias, int bk, const mkc_view *y,
	      const int64_t *idx, const mkc_norm_opt *o, float *mean, float *inv)
{
	if (len % 4 || (uintptr_t)px % 16 || (uintptr_t)py % (y->bf16 ? 8 : 16))
		return 0;
	const float4 *MKC_RESTRICT x4 = (const float4 *)px;
	const int64_t n4 = len / 4, lane = MKC_LANE % MKC_WARP;
	float m = 0, ss = 0;
	if (o->layer) {
		_Pragma("unroll 4")
		for (int64_t q = lane; q < n4; q += MKC_WARP)
			m += x4[q].x + x4[q].y + x4[q].z + x4[q].w;
		m = mkc_rt_warp_sum(m) / (float)len;
	}
	_Pragma("unroll 4")
	for (int64_t q = lane; q < n4; q += MKC_WARP) {
		const float4 v = x4[q];
		ss += (v.x - m) * (v.x - m) + (v.y - m) * (v.y - m) + (v.z - m) * (v.z - m) +
		      (v.w - m) * (v.w - m);
	}
	ss = mkc_rt_warp_sum(ss);
	const float iv = 1.0f / sqrtf(ss / (float)len + o->eps);
	_Pragma("unroll 4")
	for (int64_t q = lane; q < n4; q += MKC_WARP) {
		const float4 v = x4[q];
		float w[4] = {v.x, v.y, v.z, v.w};
		for (int c = 0; c < 4; c++) {
			w[c] = (w[c] - m) * iv * mkc_rows_w(scale, sk, y, o->axis, idx, 4 * q + c);
			if (bias)
				w[c] += mkc_rows_w(bias, bk, y, o->axis, idx, 4 * q + c);
		}
		mkc_rt_put4(py, q, y->bf16, make_float4(w[0], w[1], w[2], w[3]));
	}
	*mean = m;
	*inv = iv;
	return 1;
}
#endif

/*
 * The lanes that share a row of a box of cnt rows: on a GPU a warp when
 * every warp gets a row (*by_warp 1, a warp's shuffles sum it), else the
 * whole block; on the C target the one lane.
 */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_rows_lanes(int64_t cnt, int *by_warp)
{
#if defined(__CUDACC__) || defined(__HIPCC__)
	*by_warp = MKC_NLANES % MKC_WARP == 0 && cnt >= MKC_NLANES / MKC_WARP;
	return *by_warp ? (int64_t)MKC_WARP : MKC_NLANES;
#else
	(void)cnt;
	*by_warp = 0;
	return 1;
#endif
}

/*
 * RMSNormalization and LayerNormalization over the axes from o->axis on:
 * y = (x - mean) / sqrt(mean of squares + eps) * scale (+ bias), the mean
 * 0 for RMS. On a GPU the lanes share each row: a decode step's norms are
 * one row of the hidden size, a block-wide reduction; a box of at least as
 * many rows as the block has warps (a prompt chunk's block of tokens)
 * gives each warp rows of its own, a warp's shuffles summing them and no
 * barrier between rows (a block a row took 3 us a row on an H200). Optional
 * per-row outputs (NULL: none): y1 (the mean for LayerNormalization, 1 /
 * deviation otherwise) and y2 (1 / deviation).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_norm(const mkc_view *y, const mkc_view *x, const mkc_view *scale, const mkc_view *bias,
	 const mkc_view *y1, const mkc_view *y2, const mkc_norm_opt *o, const int64_t *lo,
	 const int64_t *hi)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], len, st;
	const int r = y->rank;
	const int64_t cnt = mkc_rows_box(y, o->axis, 0, lo, hi, ext, &len, &st);
	const int sk = mkc_rows_wkind(scale, y, o->axis, len);
	const int bk = bias ? mkc_rows_wkind(bias, y, o->axis, len) : MKC_ROWS_W_ONE;
	int by_warp;
	const int64_t g = mkc_rows_lanes(cnt, &by_warp);
	const int64_t lane = MKC_LANE % g;
	for (int64_t f = MKC_LANE / g; f < cnt; f += MKC_NLANES / g) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *MKC_RESTRICT px = (const float *)x->p + mkc_rt_dot(idx, x->s, r);
		void *MKC_RESTRICT py = (char *)y->p + mkc_rt_dot(idx, y->s, r) * mkc_view_es(y);
		float mean = 0, ss = 0, inv = 0;
		int done = 0;
#if defined(__CUDACC__) || defined(__HIPCC__)
		done = by_warp && mkc_norm_row4(py, px, len, scale, sk, bias, bk, y, idx, o, &mean, &inv);
#endif
		if (!done && o->layer) {
			for (int64_t j = lane; j < len; j += g)
				mean += px[j];
			mean = (by_warp ? mkc_rt_warp_sum(mean) : mkc_rt_block_sum(mean)) / (float)len;
		}
		for (int64_t j = lane; !done && j < len; j += g)
			ss += (px[j] - mean) * (px[j] - mean);
		if (!done) {
			ss = by_warp ? mkc_rt_warp_sum(ss) : mkc_rt_block_sum(ss);
			inv = 1.0f / sqrtf(ss / (float)len + o->eps);
		}
		for (int64_t j = lane; !done && j < len; j += g) {
			float v = (px[j] - mean) * inv * mkc_rows_w(scale, sk, y, o->axis, idx, j);
			mkc_rt_put(py, j, y->bf16, bias ? v + mkc_rows_w(bias, bk, y, o->axis, idx, j) : v);
		}
		if (lane == 0) {
			mkc_rows_put(y1, idx, o->layer ? mean : inv);
			mkc_rows_put(y2, idx, inv);
		}
	}
}

/*
 * SkipSimplifiedLayerNormalization over the last axis: t = a + b (+ bias),
 * kept in sum when it is wanted (else in y), then y = t / sqrt(mean(t^2) +
 * eps) * gamma; per-row outputs y2 = 1 / deviation and y1 = 0 (the mean
 * output onnxruntime leaves empty). Views that are NULL are outputs the
 * node does not have. The lanes share rows as mkc_norm's do (a warp a row,
 * or the block for fewer rows than warps: a decode step's one row took 172
 * us on one lane of an H200); each lane reads back only the t it wrote.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_skip_norm(const mkc_view *y, const mkc_view *a, const mkc_view *b, const mkc_view *gamma,
	      const mkc_view *bias, const mkc_view *y1, const mkc_view *y2, const mkc_view *sum,
	      float eps, const int64_t *lo, const int64_t *hi)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], len, st;
	const int r = y->rank;
	const int64_t cnt = mkc_rows_box(y, r - 1, 0, lo, hi, ext, &len, &st);
	int by_warp;
	const int64_t g = mkc_rows_lanes(cnt, &by_warp);
	const int64_t lane = MKC_LANE % g;
	for (int64_t f = MKC_LANE / g; f < cnt; f += MKC_NLANES / g) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *pa = (const float *)a->p + mkc_rt_dot(idx, a->s, r);
		const float *pb = (const float *)b->p + mkc_rt_dot(idx, b->s, r);
		float *py = (float *)y->p + mkc_rt_dot(idx, y->s, r);
		float *ps = sum ? (float *)sum->p + mkc_rt_dot(idx, sum->s, r) : py;
		float ss = 0;
		for (int64_t j = lane; j < len; j += g) {
			ps[j] = bias ? pa[j] + pb[j] + mkc_rows_at(bias, j) : pa[j] + pb[j];
			ss += ps[j] * ps[j];
		}
		if (g > 1)
			ss = by_warp ? mkc_rt_warp_sum(ss) : mkc_rt_block_sum(ss);
		float inv = 1.0f / sqrtf(ss / (float)len + eps);
		for (int64_t j = lane; j < len; j += g)
			py[j] = ps[j] * inv * mkc_rows_at(gamma, j);
		if (lane == 0) {
			mkc_rows_put(y2, idx, inv);
			mkc_rows_put(y1, idx, 0);
		}
	}
}
