/*
 * gqa.h - GroupQueryAttention (com.microsoft) as a tile body in plain C
 * over the lanes of a tile (runtime/common.h: MKC_LANE of MKC_NLANES,
 * MKC_LANES_SYNC), embedded by every target. The node is one whole tile,
 * in two phases:
 *
 *   0. the lengths the caller gives checked against the past it gives
 *      (mkc_gqa_check): seqlens_k[b] + 1 = P + S = total_sequence_length;
 *   1. the present keys and values pk_out, pv_out [B, Hk, L, D]: the past
 *      (P positions, NULL when none), then the S new positions, the keys
 *      rotated when cos is given, at position seqlens_k[b] + 1 - S + s =
 *      P + s for new token s;
 *   2. once every lane's writes are visible, attention of each query
 *      (rotated likewise) over present positions 0 .. P + s (causal), key
 *      and value head = head / (Hq / Hk), scores scaled and soft-capped
 *      (softcap > 0), an online softmax as in Attention (attention.h's
 *      mkc_attn_score and mkc_online_add: this file comes after it).
 *
 * Layouts: q [B, S, Hq * D], k and v [B, S, Hk * D], y [B, S, Hq * D]
 * (strides of their first two axes given); the caches by their strides.
 * The rotation, over the first R dimensions of a row, takes halves (i,
 * i + R/2) or, interleaved, pairs (2i, 2i + 1), by rows of R / 2 cos and
 * sin values, one a position.
 */

/* Element d of row x rotated by the cos/sin rows pc, ps. */
static inline MKC_BODY float MKC_UNUSED
mkc_gqa_rot(const float *x, int64_t d, int64_t R, int inter, const float *pc, const float *ps)
{
	if (d >= R)
		return x[d];
	if (inter)
		return d % 2 == 0 ? x[d] * pc[d / 2] - x[d + 1] * ps[d / 2]
				  : x[d] * pc[d / 2] + x[d - 1] * ps[d / 2];
	return d < R / 2 ? x[d] * pc[d] - x[d + R / 2] * ps[d]
			 : x[d] * pc[d - R / 2] + x[d - R / 2] * ps[d - R / 2];
}

/*
 * The operands of one GroupQueryAttention tile, and its options; NULL for
 * what the node leaves out (past, total length, cos and sin).
 */
typedef struct {
	const mkc_view *y, *pk_out, *pv_out;   /* the output, the present keys and values */
	const mkc_view *q, *k, *v;
	const mkc_view *pk, *pv;               /* the past keys and values */
	const mkc_view *seqlens_k;             /* int32 [B] */
	const mkc_view *total;                 /* int32 scalar: total_sequence_length */
	const mkc_view *cos, *sin;             /* [positions, R / 2] */
	int64_t hq, hk, d;                     /* query heads, key heads, head size */
	int inter;
	float scale, softcap;
} mkc_gqa_args;

/*
 * The lengths the caller gives against L = P + S, the past and new
 * positions: seqlens_k [B] must hold L - 1 for every batch entry and
 * total_sequence_length (NULL: not given) L. 0, or 1 with what was found
 * in *bad.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_gqa_lengths(const mkc_view *seqlens_k, const mkc_view *total, int64_t L, mkc_rt_bad *bad)
{
	const int32_t *sl = (const int32_t *)seqlens_k->p;
	for (int64_t b = 0; b < seqlens_k->d[0]; b++)
		if (mkc_rt_check_index(sl[b * seqlens_k->s[0]], L - 1, L - 1, MKC_IX_SEQLEN, b, bad))
			return 1;
	if (total && mkc_rt_check_index(*(const int32_t *)total->p, L, L, MKC_IX_TOTAL, 0, bad))
		return 1;
	return 0;
}

/*
 * The lengths the caller gives, against the past it gives: present is the
 * past then the new positions, so seqlens_k[b] must be P + S - 1 for every
 * batch entry and total_sequence_length P + S (a right-padded or shared
 * past, which onnxruntime reads by seqlens_k, would be read here as all in
 * use: a wrong answer, so it is refused), and the new tokens' positions,
 * P .. P + S - 1, must be rows of the cos/sin caches. Every lane checks
 * all of it before anything is written. 0, or 1 with what was found in
 * *bad (runtime/common.h's mkc_rt_check_index).
 */
static inline MKC_BODY int MKC_UNUSED
mkc_gqa_check(const mkc_gqa_args *a, mkc_rt_bad *bad)
{
	const int64_t S = a->q->d[1], P = a->pk ? a->pk->d[2] : 0;
	if (mkc_gqa_lengths(a->seqlens_k, a->total, P + S, bad))
		return 1;
	if (a->cos && mkc_rt_check_index(P + S - 1, 0, mkc_rt_imin(a->cos->d[0], a->sin->d[0]) - 1,
					 MKC_IX_NEW_POSITION, 0, bad))
		return 1;
	return 0;
}

/*
 * LengthCheck (passes/gqa.c), the lengths of the GroupQueryAttention nodes
 * taken apart into the Hugging Face path's: want (int64 [1]) holds P + S;
 * y (int32 [1]) is written 0. 0, or 1 with what was found in *bad.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_length_check(const mkc_view *y, const mkc_view *seqlens_k, const mkc_view *want,
		 const mkc_view *total, mkc_rt_bad *bad)
{
	if (mkc_gqa_lengths(seqlens_k, total, *(const int64_t *)want->p, bad))
		return 1;
	if (MKC_LANE == 0)
		*(int32_t *)y->p = 0;
	return 0;
}

/* The cos/sin rows of new token s into *pc, *ps (NULL without rotation): row P + s. */
static inline MKC_BODY void MKC_UNUSED
mkc_gqa_rows(const mkc_gqa_args *a, int64_t P, int64_t s, const float **pc, const float **ps)
{
	*pc = *ps = NULL;
	if (!a->cos)
		return;
	*pc = (const float *)a->cos->p + (P + s) * a->cos->s[0];
	*ps = (const float *)a->sin->p + (P + s) * a->sin->s[0];
}

/*
 * The tile; qr holds D floats of the lane's own (its rotated query).
 * Returns 0, or 1 with what was found in *bad when the lengths or
 * positions the caller gave do not fit (mkc_gqa_check): then nothing is
 * written.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_gqa(const mkc_gqa_args *a, float *qr, mkc_rt_bad *bad)
{
	const int64_t B = a->q->d[0], S = a->q->d[1], Hq = a->hq, Hk = a->hk, D = a->d;
	const int64_t P = a->pk ? a->pk->d[2] : 0, R = a->cos ? 2 * a->cos->d[1] : 0;
	const int64_t L = P + S;
	if (mkc_gqa_check(a, bad))
		return 1;   /* every lane, before any write: they all reach the sync below or none */
	float *MKC_RESTRICT y = (float *)a->y->p, *MKC_RESTRICT y1 = (float *)a->pk_out->p;
	float *MKC_RESTRICT y2 = (float *)a->pv_out->p;
	const int64_t *ys = a->y->s, *y1s = a->pk_out->s, *y2s = a->pv_out->s;
	const float *q = (const float *)a->q->p, *k = (const float *)a->k->p;
	const float *v = (const float *)a->v->p;
	const float *pk = a->pk ? (const float *)a->pk->p : NULL;
	const float *pv = a->pv ? (const float *)a->pv->p : NULL;
	const int64_t *qs = a->q->s, *ks = a->k->s, *vs = a->v->s;
	const int64_t *pks = a->pk ? a->pk->s : ks, *pvs = a->pv ? a->pv->s : vs;
	const int inter = a->inter;
	const float scale = a->scale, softcap = a->softcap;
	const float *pc, *ps;
	for (int64_t o = MKC_LANE; o < B * Hk * L * D; o += MKC_NLANES) {
		const int64_t b = o / (Hk * L * D), h = o / (L * D) % Hk, t = o / D % L, d = o % D;
		const int64_t at = b * y1s[0] + h * y1s[1] + t * y1s[2] + d;
		if (t < P) {
			y1[at] = pk[b * pks[0] + h * pks[1] + t * pks[2] + d];
			y2[at] = pv[b * pvs[0] + h * pvs[1] + t * pvs[2] + d];
			continue;
		}
		const int64_t s = t - P, kb = b * ks[0] + s * ks[1] + h * D;
		mkc_gqa_rows(a, P, s, &pc, &ps);
		y1[at] = mkc_gqa_rot(k + kb, d, R, inter, pc, ps);
		y2[at] = v[b * vs[0] + s * vs[1] + h * D + d];
	}
	MKC_LANES_SYNC();   /* the present keys and values of every lane, before they are read */
	for (int64_t o = MKC_LANE; o < B * S * Hq * D; o += MKC_NLANES) {
		const int64_t b = o / (S * Hq * D), s = o / (Hq * D) % S, h = o / D % Hq, dv = o % D;
		const int64_t kh = h / (Hq / Hk), qb = b * qs[0] + s * qs[1] + h * D;
		mkc_gqa_rows(a, P, s, &pc, &ps);
		for (int64_t d = 0; d < D; d++)
			qr[d] = mkc_gqa_rot(q + qb, d, R, inter, pc, ps);
		float mx = -INFINITY, sum = 0, acc = 0;
		for (int64_t t = 0; t <= P + s; t++) {
			const float *rk = y1 + b * y1s[0] + kh * y1s[1] + t * y1s[2];
			mkc_online_add(&mx, &sum, &acc, mkc_attn_score(qr, rk, D, scale, softcap),
				       y2[b * y2s[0] + kh * y2s[1] + t * y2s[2] + dv]);
		}
		y[b * ys[0] + s * ys[1] + h * D + dv] = acc / sum;
	}
	return 0;
}
