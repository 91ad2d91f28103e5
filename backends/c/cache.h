/*
 * cache.h - RotaryEmbedding and the KV cache append, tile bodies in plain
 * C over the lanes of a tile (runtime/common.h: MKC_LANE of MKC_NLANES,
 * MKC_BODY), so the C, CUDA and HIP targets all embed them and call them the
 * same way. Both rotate pairs of a row the way RotaryEmbedding does:
 * halves (i, i + R/2) of the first R dimensions, or pairs (2i, 2i + 1)
 * when interleaved, by cos[i] and sin[i] of the row's position.
 *
 * The emitter (backends/core/emit_ops.c) calls mkc_rotary for every
 * RotaryEmbedding, and mkc_cache_append for a CacheAppend whose cache keeps
 * its positions on axis 2 of four; other layouts move the box with data.h's
 * mkc_strided.
 */

/* Pair (i1, i2) of row px rotated by (cs, sn) into py[o1] and py[o2]. */
static inline MKC_BODY void MKC_UNUSED
mkc_rope_pair(float *py, const float *px, int64_t i1, int64_t i2, int64_t o1, int64_t o2,
	      float cs, float sn)
{
	const float a = px[i1], c = px[i2];
	py[o1] = a * cs - c * sn;
	py[o2] = c * cs + a * sn;
}

/*
 * RotaryEmbedding of x [B, H, S, D] (strides sb, sh, ss; dimension stride
 * 1) into y, laid out alike. The cos/sin row of (b, s): without positions,
 * cb * b + cs * s; with pos, row pos[pb * b + ps * s] + padd * s, cb apart
 * (ONNX's position_ids [B, S]: padd 0; onnxruntime's one first position:
 * pb = ps = 0, padd 1).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_rotary(float *MKC_RESTRICT y, const float *MKC_RESTRICT x, int64_t B, int64_t H, int64_t S,
	   int64_t D, int64_t sb, int64_t sh, int64_t ss, const float *cos, const float *sin,
	   int64_t cb, int64_t cs, const int64_t *pos, int64_t pb, int64_t ps, int64_t padd,
	   int64_t R, int inter)
{
	const int64_t half = R / 2, W = D - half;   /* lanes a row: pairs, then the rest */
	for (int64_t p = MKC_LANE; p < B * H * S * W; p += MKC_NLANES) {
		const int64_t q = p / W, i = p % W;
		const int64_t b = q / (H * S), h = q / S % H, s = q % S;
		const float *px = x + b * sb + h * sh + s * ss;
		float *py = y + b * sb + h * sh + s * ss;
		if (i >= half) {
			py[i + half] = px[i + half];
			continue;
		}
		const int64_t c = pos ? (pos[b * pb + s * ps] + padd * s) * cb : b * cb + s * cs;
		const int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
		mkc_rope_pair(py, px, i1, i2, i1, i2, cos[c + i], sin[c + i]);
	}
}

/* Element o of a cache kept in float32 (y) or bf16 (yh), the other NULL. */
static inline MKC_BODY void MKC_UNUSED
mkc_cache_put(float *y, uint16_t *yh, int64_t o, float v)
{
	if (yh)
		yh[o] = mkc_rt_to_bf16(v);
	else
		y[o] = v;
}

/*
 * The S new positions of x, dense [B, H, S, D], into the cache, dense
 * [B, H, cap, D], at positions pos .. pos + S - 1: the cache is y in
 * float32, or yh in bf16 (passes/kv.c; the other pointer NULL), rounded to
 * nearest even. With cos and sin (rows of R / 2 values, cs_b apart a batch
 * and cs_s a position) the first R dimensions of every row are rotated on
 * the way, as RotaryEmbedding does: halves (i, i + R/2), or pairs (2i,
 * 2i + 1) when inter; the others are copied. A lane takes a pair (or one
 * copied value), so that a decode step's few rows still keep every lane
 * busy; the float operations are RotaryEmbedding's body's, in its order.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_cache_append(float *MKC_RESTRICT y, uint16_t *MKC_RESTRICT yh, const float *MKC_RESTRICT x,
		 int64_t B, int64_t H, int64_t S, int64_t D, int64_t cap, int64_t pos,
		 const float *cos, const float *sin, int64_t cs_b, int64_t cs_s, int64_t R, int inter)
{
	const int64_t half = cos ? R / 2 : 0, W = D - half;   /* lanes a row */
	for (int64_t p = MKC_LANE; p < B * H * S * W; p += MKC_NLANES) {
		const int64_t row = p / W, i = p % W;   /* row: (b * H + h) * S + s */
		const int64_t s = row % S, bh = row / S;
		const float *px = x + row * D;
		const int64_t at = (bh * cap + pos + s) * D;
		if (i >= half) {
			mkc_cache_put(y, yh, at + i + half, px[i + half]);
			continue;
		}
		const int64_t c = bh / H * cs_b + s * cs_s;
		const int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
		float r[2];
		mkc_rope_pair(r, px, i1, i2, 0, 1, cos[c + i], sin[c + i]);
		mkc_cache_put(y, yh, at + i1, r[0]);
		mkc_cache_put(y, yh, at + i2, r[1]);
	}
}
