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
 * whole rows; y and x have the same shape, dims d and strides s (rank r).
 * Scales and biases are float32 or bf16 (one pointer of the two is NULL)
 * and hold the whole row or one value: element j of a row reads entry
 * j % wn.
 */

/*
 * The rows of box lo..hi: ext (r + 1 entries) is the box with the row axes
 * at 1, *len a row's elements and *st the stride between them (one_axis;
 * otherwise the row is dense); returns how many rows.
 */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_rows_box(const int64_t *d, const int64_t *s, int r, int axis, int one_axis,
	     const int64_t *lo, const int64_t *hi, int64_t *ext, int64_t *len, int64_t *st)
{
	mkc_rt_extents(lo, hi, r, ext);
	*len = 1;
	*st = 1;
	if (one_axis) {
		*len = d[axis];
		*st = s[axis];
		ext[axis] = 1;
	} else {
		for (int k = axis; k < r; k++) {
			*len *= d[k];
			ext[k] = 1;
		}
	}
	int64_t cnt = 1;
	for (int k = 0; k < r; k++)
		cnt *= ext[k];
	return cnt;
}

/* An element of a float32 or bf16 (wb) vector. */
static inline MKC_BODY float MKC_UNUSED
mkc_rows_at(const float *wf, const uint16_t *wb, int64_t i)
{
	return wf ? wf[i] : mkc_rt_bf16(wb[i]);
}

/* Softmax over each row of the box, a lane a row. */
static inline MKC_BODY void MKC_UNUSED
mkc_softmax(float *MKC_RESTRICT y, const float *MKC_RESTRICT x, const int64_t *d,
	    const int64_t *s, int r, int axis, int one_axis, const int64_t *lo, const int64_t *hi)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], len, st;
	const int64_t cnt = mkc_rows_box(d, s, r, axis, one_axis, lo, hi, ext, &len, &st);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t oy = mkc_rt_dot(idx, s, r);
		const float *px = x + oy;
		float *py = y + oy;
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

/*
 * RMSNormalization (layer 0) and LayerNormalization (layer 1) over the
 * axes from axis on: y = (x - mean) / sqrt(mean of squares + eps) * scale
 * (+ bias), the mean 0 for RMS. The lanes share each row (a decode step's
 * norms are one row of the hidden size), rows go one after another and
 * each sum is a block-wide reduction. Optional per-row outputs: y1 (mean
 * for LayerNormalization, 1 / deviation otherwise) and y2 (1 / deviation),
 * at strides s1, s2 of their own shapes.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_norm(float *MKC_RESTRICT y, const float *MKC_RESTRICT x, const int64_t *d, const int64_t *s,
	 int r, int axis, const int64_t *lo, const int64_t *hi, const float *wf,
	 const uint16_t *wb, const float *bf, const uint16_t *bb, int64_t wn, float eps, int layer,
	 float *y1, const int64_t *s1, float *y2, const int64_t *s2)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], len, st;
	const int64_t cnt = mkc_rows_box(d, s, r, axis, 0, lo, hi, ext, &len, &st);
	for (int64_t f = 0; f < cnt; f++) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t oy = mkc_rt_dot(idx, s, r);
		const float *px = x + oy;
		float *py = y + oy;
		float mean = 0, ss = 0;
		if (layer) {
			for (int64_t j = MKC_LANE; j < len; j += MKC_NLANES)
				mean += px[j];
			mean = mkc_rt_block_sum(mean) / (float)len;
		}
		for (int64_t j = MKC_LANE; j < len; j += MKC_NLANES)
			ss += (px[j] - mean) * (px[j] - mean);
		ss = mkc_rt_block_sum(ss);
		float inv = 1.0f / sqrtf(ss / (float)len + eps);
		for (int64_t j = MKC_LANE; j < len; j += MKC_NLANES) {
			float v = (px[j] - mean) * inv * mkc_rows_at(wf, wb, j % wn);
			py[j] = bf || bb ? v + mkc_rows_at(bf, bb, j % wn) : v;
		}
		if (y1 && MKC_LANE == 0)
			y1[mkc_rt_dot(idx, s1, r)] = layer ? mean : inv;
		if (y2 && MKC_LANE == 0)
			y2[mkc_rt_dot(idx, s2, r)] = inv;
	}
}

/*
 * SkipSimplifiedLayerNormalization over the last axis, a lane a row:
 * t = a + b (+ bias), kept in sum when it is wanted (else in y), then
 * y = t / sqrt(mean(t^2) + eps) * gamma; per-row outputs y2 = 1 / deviation
 * and y1 = 0 (the mean output onnxruntime leaves empty).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_skip_norm(float *MKC_RESTRICT y, const float *a, const float *b, const int64_t *d,
	      const int64_t *s, int r, int axis, const int64_t *lo, const int64_t *hi,
	      const float *gf, const uint16_t *gb, const float *bf, const uint16_t *bb, float eps,
	      float *sum, float *y1, const int64_t *s1, float *y2, const int64_t *s2)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], len, st;
	const int64_t cnt = mkc_rows_box(d, s, r, axis, 0, lo, hi, ext, &len, &st);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const int64_t oy = mkc_rt_dot(idx, s, r);
		const float *pa = a + oy, *pb = b + oy;
		float *py = y + oy, *ps = sum ? sum + oy : py;
		float ss = 0;
		for (int64_t j = 0; j < len; j++) {
			ps[j] = bf || bb ? pa[j] + pb[j] + mkc_rows_at(bf, bb, j) : pa[j] + pb[j];
			ss += ps[j] * ps[j];
		}
		float inv = 1.0f / sqrtf(ss / (float)len + eps);
		for (int64_t j = 0; j < len; j++)
			py[j] = ps[j] * inv * mkc_rows_at(gf, gb, j);
		if (y2)
			y2[mkc_rt_dot(idx, s2, r)] = inv;
		if (y1)
			y1[mkc_rt_dot(idx, s1, r)] = 0;
	}
}
