/*
 * attention.h - flash-decoding's two tile bodies (passes/split_attn.c) and
 * Attention's general form, in plain C over the lanes of a tile
 * (runtime/common.h: MKC_LANE of MKC_NLANES), so the C, CUDA and HIP
 * targets all embed them; a GPU target with a faster body for the head size
 * (backends/cuda/attention.cuh) calls that one instead. A lane takes an
 * output element.
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

/* A position's score: q . k over D, scaled, then soft-capped when softcap > 0. */
static inline MKC_BODY float MKC_UNUSED
mkc_attn_score(const float *q, const float *k, int64_t D, float scale, float softcap)
{
	float sc = 0;
	for (int64_t i = 0; i < D; i++)
		sc += q[i] * k[i];
	sc *= scale;
	return softcap > 0 ? softcap * tanhf(sc / softcap) : sc;
}

/*
 * One position of an online softmax: score sc, value val into the running
 * maximum mx, the sum of exp(score - mx) and the weighted sum of values,
 * both rescaled to the new maximum.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_online_add(float *mx, float *sum, float *acc, float sc, float val)
{
	const float nm = fmaxf(*mx, sc), r = expf(*mx - nm), w = expf(sc - nm);
	*sum = *sum * r + w;
	*acc = *acc * r + w * val;
	*mx = nm;
}

/* Element o of a cache kept in float32 (f) or bf16 (h), the other NULL. */
static inline MKC_BODY float MKC_UNUSED
mkc_attn_kv(const float *f, const uint16_t *h, int64_t o)
{
	return h ? mkc_rt_bf16(h[o]) : f[o];
}

/* AttnPart: rows r0 .. r1 of part; the keys in k or kh and the values in
 * v or vh (float32 or bf16, passes/kv.c; the other pointer NULL). */
static inline MKC_BODY void MKC_UNUSED
mkc_attn_part_c(const float *q, const int64_t *qs, const float *k, const uint16_t *kh,
		const int64_t *ks, const float *v, const uint16_t *vh, const int64_t *vs,
		float *MKC_RESTRICT part, const int64_t *ps, int64_t B, int64_t Sq, int64_t D,
		int64_t L, int64_t C, int64_t G, int64_t r0, int64_t r1, float scale)
{
	const int64_t n = B * (r1 - r0) * G * Sq * D;
	for (int64_t o = MKC_LANE; o < n; o += MKC_NLANES) {
		const int64_t b = o / ((r1 - r0) * G * Sq * D);
		const int64_t r = r0 + o / (G * Sq * D) % (r1 - r0), hk = r / C, ch = r % C;
		const int64_t i = o / D % (G * Sq), dd = o % D, h = hk * G + i / Sq, s = i % Sq;
		const float *pq = q + b * qs[0] + h * qs[1] + s * qs[2];
		float mx = -INFINITY, sum = 0, acc = 0;
		for (int64_t t = ch * L / C; t < (ch + 1) * L / C; t++) {
			const int64_t ko = b * ks[0] + hk * ks[1] + t * ks[2];
			const int64_t vo = b * vs[0] + hk * vs[1] + t * vs[2];
			float sc = 0;
			for (int64_t e = 0; e < D; e++)
				sc += pq[e] * mkc_attn_kv(k, kh, ko + e);
			sc *= scale;
			if (sc == -INFINITY)
				continue;
			mkc_online_add(&mx, &sum, &acc, sc, mkc_attn_kv(v, vh, vo + dd));
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

/*
 * Attention (opset 23), 4-D, in general: query heads h0 .. h1 of y [B, Hq,
 * Sq, Dv] from q [B, Hq, Sq, D] over L = P + Sn positions, the past keys
 * and values pk, pv [B, Hk, P, .] (NULL when P is 0) followed by the new
 * k, v [B, Hk, Sn, .]; query head h reads key head h / (Hq / Hk). Lanes
 * share the output elements; each walks the positions once with an online
 * softmax (running maximum and rescaled sums), so no scratch memory is
 * needed. A score is scaled, soft-capped when softcap > 0, then masked
 * (mask: float mf added or bool mb keeping where true, by the broadcast
 * strides ms over (b, h, s, t); ms NULL: no mask); a row with no position
 * left is 0. The present keys and values y1, y2 [B, Hk, L, .] (NULL when
 * not wanted; y1n, y2n their last dims) are the past then the new ones.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_attention(float *MKC_RESTRICT y, const int64_t *ys, const float *q, const int64_t *qs,
	      const float *k, const int64_t *ks, const float *v, const int64_t *vs, const float *pk,
	      const int64_t *pks, const float *pv, const int64_t *pvs, const float *mf,
	      const uint8_t *mb, const int64_t *ms, int64_t B, int64_t Hq, int64_t Sq, int64_t D,
	      int64_t Hk, int64_t P, int64_t Sn, int64_t Dv, int64_t h0, int64_t h1, float scale,
	      float softcap, float *MKC_RESTRICT y1, const int64_t *y1s, int64_t y1n,
	      float *MKC_RESTRICT y2, const int64_t *y2s, int64_t y2n)
{
	const int64_t L = P + Sn, NH = h1 - h0;
	for (int64_t o = MKC_LANE; o < B * NH * Sq * Dv; o += MKC_NLANES) {
		const int64_t b = o / (NH * Sq * Dv), h = h0 + o / (Sq * Dv) % NH;
		const int64_t s = o / Dv % Sq, d = o % Dv, kh = h / (Hq / Hk);
		const float *pq = q + b * qs[0] + h * qs[1] + s * qs[2];
		float mx = -INFINITY, sum = 0, acc = 0;
		for (int64_t t = 0; t < L; t++) {
			const float *rk = t < P ? pk + b * pks[0] + kh * pks[1] + t * pks[2]
					       : k + b * ks[0] + kh * ks[1] + (t - P) * ks[2];
			const float *rv = t < P ? pv + b * pvs[0] + kh * pvs[1] + t * pvs[2]
					       : v + b * vs[0] + kh * vs[1] + (t - P) * vs[2];
			float sc = mkc_attn_score(pq, rk, D, scale, softcap);
			if (ms) {
				const int64_t mo = b * ms[0] + h * ms[1] + s * ms[2] + t * ms[3];
				if (mb && !mb[mo])
					continue;
				if (mf)
					sc += mf[mo];
			}
			if (sc == -INFINITY)
				continue;
			mkc_online_add(&mx, &sum, &acc, sc, rv[d]);
		}
		y[b * ys[0] + h * ys[1] + s * ys[2] + d] = sum > 0 ? acc / sum : 0;
	}
	for (int kv = 0; kv < 2; kv++) {   /* the present keys, then values */
		float *py = kv ? y2 : y1;
		const int64_t *pys = kv ? y2s : y1s;
		const int64_t n = kv ? y2n : y1n;
		const float *px = kv ? v : k, *pp = kv ? pv : pk;
		const int64_t *pxs = kv ? vs : ks, *pps = kv ? pvs : pks;
		if (!py)
			continue;
		for (int64_t o = MKC_LANE; o < B * Hk * L * n; o += MKC_NLANES) {
			const int64_t b = o / (Hk * L * n), h = o / (L * n) % Hk;
			const int64_t t = o / n % L, d = o % n;
			py[b * pys[0] + h * pys[1] + t * pys[2] + d] =
				t < P ? pp[b * pps[0] + h * pps[1] + t * pps[2] + d]
				      : px[b * pxs[0] + h * pxs[1] + (t - P) * pxs[2] + d];
		}
	}
}
