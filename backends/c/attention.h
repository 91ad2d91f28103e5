/*
 * attention.h - flash-decoding's two tile bodies (passes/split_attn.c) in
 * plain C over the lanes of a tile (runtime/common.h: MKC_LANE of
 * MKC_NLANES), so the C, CUDA and HIP targets all embed them; a GPU target
 * with a faster body for the head size (backends/cuda/attention.cuh) calls
 * that one instead. A lane takes an output element.
 *
 * Layouts, with strides (element counts) for every tensor:
 *   q     [B, Hq, Sq, D]          Hq = Hk * G query heads
 *   k, v  [B, Hk, L, D]           (the caches: only the first L positions)
 *   part  [B, Hk * C, G * Sq, D + 2]
 *   y     [B, Hq, Sq, D]
 * Row r of part is key head r / C over chunk r % C of the L positions
 * (positions c * L / C up to (c + 1) * L / C); in it, row g * Sq + s is
 * query head (r / C) * G + g at position s: D unnormalised sums of the
 * values, then the maximum score and the sum of exp(score - maximum)
 * (-inf and 0 for an empty chunk).
 */

/* AttnPart: rows r0 .. r1 of part. */
static inline MKC_BODY void MKC_UNUSED
mkc_attn_part_c(const float *q, const int64_t *qs, const float *k, const int64_t *ks,
		const float *v, const int64_t *vs, float *MKC_RESTRICT part, const int64_t *ps,
		int64_t B, int64_t Sq, int64_t D, int64_t L, int64_t C, int64_t G, int64_t r0,
		int64_t r1, float scale)
{
	const int64_t n = B * (r1 - r0) * G * Sq * D;
	for (int64_t o = MKC_LANE; o < n; o += MKC_NLANES) {
		const int64_t b = o / ((r1 - r0) * G * Sq * D);
		const int64_t r = r0 + o / (G * Sq * D) % (r1 - r0), kh = r / C, ch = r % C;
		const int64_t i = o / D % (G * Sq), dd = o % D, h = kh * G + i / Sq, s = i % Sq;
		const float *pq = q + b * qs[0] + h * qs[1] + s * qs[2];
		float mx = -INFINITY, sum = 0, acc = 0;
		for (int64_t t = ch * L / C; t < (ch + 1) * L / C; t++) {
			const float *pk = k + b * ks[0] + kh * ks[1] + t * ks[2];
			const float *pv = v + b * vs[0] + kh * vs[1] + t * vs[2];
			float sc = 0;
			for (int64_t j = 0; j < D; j++)
				sc += pq[j] * pk[j];
			sc *= scale;
			if (sc == -INFINITY)
				continue;
			const float nm = fmaxf(mx, sc), rr = expf(mx - nm), w = expf(sc - nm);
			sum = sum * rr + w;
			acc = acc * rr + w * pv[dd];
			mx = nm;
		}
		float *py = part + b * ps[0] + r * ps[1] + i * ps[2];
		py[dd] = acc;
		if (dd == 0) {
			py[D] = mx;
			py[D + 1] = sum;
		}
	}
}

/* AttnMerge: query heads h0 .. h1 of y from the C partial results of their key head. */
static inline MKC_BODY void MKC_UNUSED
mkc_attn_merge_c(const float *part, const int64_t *ps, float *MKC_RESTRICT y, const int64_t *ys,
		 int64_t B, int64_t Sq, int64_t D, int64_t C, int64_t G, int64_t h0, int64_t h1)
{
	const int64_t nh = h1 - h0;
	for (int64_t o = MKC_LANE; o < B * nh * Sq * D; o += MKC_NLANES) {
		const int64_t b = o / (nh * Sq * D), h = h0 + o / (Sq * D) % nh;
		const int64_t s = o / D % Sq, d = o % D, kh = h / G;
		const float *pp = part + b * ps[0] + kh * C * ps[1] + (h % G * Sq + s) * ps[2];
		float m = -INFINITY, sum = 0, acc = 0;
		for (int64_t c = 0; c < C; c++)
			m = fmaxf(m, pp[c * ps[1] + D]);
		for (int64_t c = 0; c < C; c++) {
			const float *pc = pp + c * ps[1];
			if (pc[D] == -INFINITY)
				continue;
			const float w = expf(pc[D] - m);
			sum += pc[D + 1] * w;
			acc += pc[d] * w;
		}
		y[b * ys[0] + h * ys[1] + s * ys[2] + d] = sum > 0 ? acc / sum : 0;
	}
}
