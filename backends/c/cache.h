/*
 * cache.h - the KV cache append, a tile body in plain C over the lanes of
 * a tile (runtime/common.h: MKC_LANE of MKC_NLANES, MKC_HD), so the C,
 * CUDA and HIP targets all embed it and call it the same way.
 *
 * The emitter (backends/core/emit_ops.c, CacheAppend) calls it when the
 * cache keeps its positions on axis 2 of four; other layouts keep the
 * general box walk.
 */

/*
 * The S new positions of x, dense [B, H, S, D], into the cache y, dense
 * [B, H, cap, D], at positions pos .. pos + S - 1. With cos and sin (rows
 * of R / 2 values, cs_b apart a batch and cs_s a position) the first R
 * dimensions of every row are rotated on the way, as RotaryEmbedding does:
 * halves (i, i + R/2), or pairs (2i, 2i + 1) when inter; the others are
 * copied. A lane takes a pair (or one copied value), so that a decode
 * step's few rows still keep every lane busy; the float operations are
 * RotaryEmbedding's body's, in its order.
 */
static inline MKC_HD void MKC_UNUSED
mkc_cache_append(float *MKC_RESTRICT y, const float *MKC_RESTRICT x, int64_t B, int64_t H,
		 int64_t S, int64_t D, int64_t cap, int64_t pos, const float *cos, const float *sin,
		 int64_t cs_b, int64_t cs_s, int64_t R, int inter)
{
	const int64_t half = cos ? R / 2 : 0, W = D - half;   /* lanes a row */
	for (int64_t p = MKC_LANE; p < B * H * S * W; p += MKC_NLANES) {
		const int64_t row = p / W, i = p % W;   /* row: (b * H + h) * S + s */
		const int64_t s = row % S, bh = row / S;
		const float *px = x + row * D;
		float *py = y + (bh * cap + pos + s) * D;
		if (i >= half) {
			py[i + half] = px[i + half];
			continue;
		}
		const int64_t b = bh / H;
		const float *pc = cos + b * cs_b + s * cs_s, *ps = sin + b * cs_b + s * cs_s;
		const int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
		const float a = px[i1], c = px[i2];
		py[i1] = a * pc[i] - c * ps[i];
		py[i2] = c * pc[i] + a * ps[i];
	}
}
