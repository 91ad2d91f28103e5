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

/* Element o of a cache kept in float32 or bf16. */
static inline MKC_BODY float MKC_UNUSED
mkc_attn_kv(const mkc_view *c, int64_t o)
{
	return c->bf16 ? mkc_rt_bf16(((const uint16_t *)c->p)[o]) : ((const float *)c->p)[o];
}

/*
 * AttnPart: rows r0 .. r1 of part [B, Hk * C, G * Sq, D + 2], row r being
 * key head r / C over chunk r % C of the L positions of k and v [B, Hk,
 * L, D] (float32 or bf16 caches, passes/kv.c), for each of the G query
 * heads of q [B, Hk * G, Sq, D] that share that key head and each query
 * position: the unnormalised sums of the values, the maximum score and
 * the sum of exp(score - maximum). With caches in pages (pg), query
 * position s's are its sequence's 0 .. pg->pos[s], chunk j of them
 * mkc_rt_part_lo(j) .. mkc_rt_part_lo(j + 1), j = mkc_rt_part_chunk(c, C, s).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_attn_part_c(const mkc_view *q, const mkc_view *k, const mkc_view *v, const mkc_view *part,
		int64_t C, int64_t r0, int64_t r1, float scale, const mkc_rt_pages *pg)
{
	const int64_t B = q->d[0], Sq = q->d[2], D = q->d[3], L = k->d[2], G = q->d[1] / k->d[1];
	const int64_t *qs = q->s, *ks = k->s, *vs = v->s, *ps = part->s;
	const int64_t n = B * (r1 - r0) * G * Sq * D;
	for (int64_t o = MKC_LANE; o < n; o += MKC_NLANES) {
		const int64_t b = o / ((r1 - r0) * G * Sq * D);
		const int64_t r = r0 + o / (G * Sq * D) % (r1 - r0), hk = r / C, ch = r % C;
		const int64_t i = o / D % (G * Sq), dd = o % D, h = hk * G + i / Sq, s = i % Sq;
		const float *pq = (const float *)q->p + b * qs[0] + h * qs[1] + s * qs[2];
		float mx = -INFINITY, sum = 0, acc = 0;
		const int64_t n_s = pg ? pg->pos[s] + 1 : L, j = pg ? mkc_rt_part_chunk(ch, C, s) : ch;
		const int64_t t0 = pg ? mkc_rt_part_lo(j, C, n_s) : ch * L / C;
		const int64_t t1 = pg ? mkc_rt_part_lo(j + 1, C, n_s) : (ch + 1) * L / C;
		for (int64_t t = t0; t < t1; t++) {
			const int64_t row = pg ? mkc_rt_page_at(pg, pg->seq[s], t) : t;
			const int64_t ko = b * ks[0] + hk * ks[1] + row * ks[2];
			const int64_t vo = b * vs[0] + hk * vs[1] + row * vs[2];
			float sc = 0;
			for (int64_t e = 0; e < D; e++)
				sc += pq[e] * mkc_attn_kv(k, ko + e);
			sc *= scale;
			if (sc == -INFINITY)
				continue;
			mkc_online_add(&mx, &sum, &acc, sc, mkc_attn_kv(v, vo + dd));
		}
		float *py = (float *)part->p + b * ps[0] + r * ps[1] + i * ps[2];
		py[dd] = acc;
		if (dd == 0) {
			py[D] = mx;
			py[D + 1] = sum;
		}
	}
}

/*
 * AttnMerge: query heads h0 .. h1 at query positions s0 .. s1 of y [B, Hq,
 * Sq, D] from the C partial results of their key head.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_attn_merge_c(const mkc_view *part, const mkc_view *y, int64_t C, int64_t h0, int64_t h1,
		 int64_t s0, int64_t s1)
{
	const int64_t B = y->d[0], Sq = y->d[2], D = y->d[3], G = y->d[1] / (part->d[1] / C);
	const int64_t *ps = part->s, *ys = y->s, nh = h1 - h0, ns = s1 - s0;
	for (int64_t o = MKC_LANE; o < B * nh * ns * D; o += MKC_NLANES) {
		const int64_t b = o / (nh * ns * D), h = h0 + o / (ns * D) % nh;
		const int64_t s = s0 + o / D % ns, d = o % D, kh = h / G;
		const float *pp =
			(const float *)part->p + b * ps[0] + kh * C * ps[1] + (h % G * Sq + s) * ps[2];
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
		((float *)y->p)[b * ys[0] + h * ys[1] + s * ys[2] + d] = sum > 0 ? acc / sum : 0;
	}
}

/* Attention's options, as passes/lower.c resolved them. */
typedef struct {
	float scale;
	float softcap;   /* > 0: scores soft-capped */
	int causal;      /* 1: query s sees positions up to P + s; 2: up to L - Sq + s */
	int64_t h0, h1;  /* the tile's query heads */
	int64_t s0, s1;  /* its query positions (a block of a chunk's); s1 0: all */
	/* caches in pages (mkc --max-seqs; NULL: none): query row s sees the
	 * positions 0 .. pages->pos[s] of sequence pages->seq[s] in k and v */
	const mkc_rt_pages *pages;
} mkc_attn_opt;

/*
 * Attention (opset 23), 4-D, in general: query heads h0 .. h1 of y [B, Hq,
 * Sq, Dv] from q [B, Hq, Sq, D] over L = P + Sn positions, the past keys
 * and values pk, pv [B, Hk, P, .] (NULL: none, P 0) followed by the new
 * k, v [B, Hk, Sn, .]; query head h reads key head h / (Hq / Hk). Lanes
 * share the output elements; each walks the positions once with an online
 * softmax (running maximum and rescaled sums), so no scratch memory is
 * needed. A score is scaled, soft-capped when softcap > 0, then masked
 * (mask, broadcast over (b, h, s, t): a float one added, a bool one
 * keeping where true; NULL: none); with causal 1, query s sees the
 * positions up to P + s, as onnxruntime aligns is_causal (the past, then
 * the new positions up to its own; top-left when there is no past); with
 * causal 2 (passes/state.c, once the past is part of k and v), up to
 * L - Sq + s; with pages (o->pages), query s sees positions 0 .. pos[s]
 * of its sequence's (P 0, no mask: lower.c). A row with no position left is 0. The
 * present keys and values y1, y2 [B, Hk, L, .] (NULL when not wanted) are
 * the past then the new ones.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_attention(const mkc_view *y, const mkc_view *q, const mkc_view *k, const mkc_view *v,
	      const mkc_view *mask, const mkc_view *pk, const mkc_view *pv, const mkc_view *y1,
	      const mkc_view *y2, const mkc_attn_opt *o)
{
	const int64_t B = q->d[0], Hq = q->d[1], Sq = q->d[2], D = q->d[3], Hk = k->d[1];
	const int64_t P = pk ? pk->d[2] : 0, Sn = k->d[2], Dv = v->d[3];
	const int64_t L = P + Sn, NH = o->h1 - o->h0;
	const int64_t s0 = o->s1 ? o->s0 : 0, NS = o->s1 ? o->s1 - o->s0 : Sq;
	const int64_t *qs = q->s, *ks = k->s, *vs = v->s, *ys = y->s;
	const int64_t *pks = pk ? pk->s : ks, *pvs = pv ? pv->s : vs;
	int64_t ms[5] = {0};
	if (mask)
		mkc_rt_bmap(mask->d, mask->s, mask->rank, 4, ms);
	for (int64_t f = MKC_LANE; f < B * NH * NS * Dv; f += MKC_NLANES) {
		const int64_t b = f / (NH * NS * Dv), h = o->h0 + f / (NS * Dv) % NH;
		const int64_t s = s0 + f / Dv % NS, d = f % Dv, kh = h / (Hq / Hk);
		const float *pq = (const float *)q->p + b * qs[0] + h * qs[1] + s * qs[2];
		float mx = -INFINITY, sum = 0, acc = 0;
		const mkc_rt_pages *pg = o->pages;
		const int64_t see = pg ? pg->pos[s] + 1
				       : o->causal == 2 ? L - Sq + s + 1 : o->causal ? P + s + 1 : L;
		const int64_t end = see < L || pg ? see : L;
		for (int64_t t = 0; t < end; t++) {
			const int64_t at = pg ? mkc_rt_page_at(pg, pg->seq[s], t) : t - P;
			const float *rk = t < P ? (const float *)pk->p + b * pks[0] + kh * pks[1] + t * pks[2]
					       : (const float *)k->p + b * ks[0] + kh * ks[1] + at * ks[2];
			const float *rv = t < P ? (const float *)pv->p + b * pvs[0] + kh * pvs[1] + t * pvs[2]
					       : (const float *)v->p + b * vs[0] + kh * vs[1] + at * vs[2];
			float sc = mkc_attn_score(pq, rk, D, o->scale, o->softcap);
			if (mask) {
				const int64_t mo = b * ms[0] + h * ms[1] + s * ms[2] + t * ms[3];
				if (mask->type == MKC_T_BOOL && !((const uint8_t *)mask->p)[mo])
					continue;
				if (mask->type != MKC_T_BOOL)
					sc += ((const float *)mask->p)[mo];
			}
			if (sc == -INFINITY)
				continue;
			mkc_online_add(&mx, &sum, &acc, sc, rv[d]);
		}
		((float *)y->p)[b * ys[0] + h * ys[1] + s * ys[2] + d] = sum > 0 ? acc / sum : 0;
	}
	for (int kv = 0; kv < 2; kv++) {   /* the present keys, then values */
		const mkc_view *py = kv ? y2 : y1, *px = kv ? v : k, *pp = kv ? pv : pk;
		if (!py)
			continue;
		const int64_t n = py->d[3];
		for (int64_t f = MKC_LANE; f < B * Hk * L * n; f += MKC_NLANES) {
			const int64_t b = f / (Hk * L * n), h = f / (L * n) % Hk;
			const int64_t t = f / n % L, d = f % n;
			((float *)py->p)[b * py->s[0] + h * py->s[1] + t * py->s[2] + d] =
				t < P ? ((const float *)pp->p)[b * pp->s[0] + h * pp->s[1] + t * pp->s[2] + d]
				      : ((const float *)px->p)[b * px->s[0] + h * px->s[1] +
							       (t - P) * px->s[2] + d];
		}
	}
}
