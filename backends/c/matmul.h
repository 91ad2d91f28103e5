/*
 * matmul.h - MatMul, Gemm, NormGemm, NormGlu, Glu and HeadProj as tile bodies
 * in plain C over the lanes of a tile (runtime/common.h: MKC_LANE of
 * MKC_NLANES), embedded by every target. A GPU target calls
 * backends/cuda/matvec.cuh's body where a tile is one row of activations;
 * these are the rest.
 *
 * A product's operands are views: a [.., M, K] and b [.., K, N] (b read
 * [.., N, K] with trans_b, as Hugging Face keeps Linear weights; Gemm's a
 * [K, M] with trans_a), their leading axes broadcast into y's (numpy's
 * MatMul rule), b in float32 or bf16. Every output element is a dot
 * product over k in ascending order, then the epilogue: MatMul's result is
 * the sum; Gemm's alpha * sum, plus beta * C (C broadcast into y) when it
 * has C.
 */

/* A product's options, as passes/lower.c resolved them. */
typedef struct {
	int trans_a, trans_b;
	int gemm;              /* Gemm's epilogue (alpha, beta, C); MatMul's is the sum */
	float alpha, beta;
	float eps;             /* NormGemm, NormGlu, HeadProj: the norm's epsilon */
	int pairs;             /* HeadProj: 0 rows; 1 rotated halves; 2 rotated pairs */
} mkc_mm_opt;

/* On a GPU the K walks keep several loads in flight. */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_MM_UNROLL _Pragma("unroll 8")
#else
#define MKC_MM_UNROLL
#endif

/* A tile's epilogue: Gemm's or none, and C (or NULL) with its strides broadcast into y. */
typedef struct {
	int gemm;
	float alpha, beta;
	const float *c;
	int64_t cs[3];
} mkc_mm_epi;

static inline MKC_BODY mkc_mm_epi MKC_UNUSED
mkc_mm_epi_of(const mkc_view *c, const mkc_mm_opt *o)
{
	mkc_mm_epi e = {o->gemm, o->alpha, o->beta, c ? (const float *)c->p : NULL, {0, 0, 0}};
	if (c)
		mkc_rt_bmap(c->d, c->s, c->rank, 2, e.cs);
	return e;
}

/* The epilogue of the sum acc at output idx (rank 2 for Gemm). */
static inline MKC_BODY float MKC_UNUSED
mkc_mm_out(float acc, const int64_t *idx, const mkc_mm_epi *e)
{
	if (!e->gemm)
		return acc;
	return e->c ? e->alpha * acc + e->beta * e->c[mkc_rt_dot(idx, e->cs, 2)] : e->alpha * acc;
}

/* Element i of a vector kept in float32 or bf16. */
static inline MKC_BODY float MKC_UNUSED
mkc_mm_ld(const mkc_view *v, int64_t i)
{
	return v->bf16 ? mkc_rt_bf16(((const uint16_t *)v->p)[i]) : ((const float *)v->p)[i];
}

/*
 * How a product walks its operands over y's coordinates: as and bs (rank
 * of y, + 1) give an output element's first a and b elements, ak and bk
 * the steps along K; returns K.
 */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_mm_walk(const mkc_view *y, const mkc_view *a, const mkc_view *b, const mkc_mm_opt *o,
	    int64_t *as, int64_t *ak, int64_t *bs, int64_t *bk)
{
	const int r = y->rank, ra = a->rank, rb = b->rank;
	mkc_rt_bmap(a->d, a->s, ra - 2, r - 2, as);
	mkc_rt_bmap(b->d, b->s, rb - 2, r - 2, bs);
	as[r - 2] = a->s[o->trans_a ? ra - 1 : ra - 2];
	as[r - 1] = 0;
	bs[r - 2] = 0;
	bs[r - 1] = b->s[o->trans_b ? rb - 2 : rb - 1];
	as[r] = bs[r] = 0;
	*ak = a->s[o->trans_a ? ra - 2 : ra - 1];
	*bk = b->s[o->trans_b ? rb - 1 : rb - 2];
	return a->d[o->trans_a ? ra - 2 : ra - 1];
}

/* The general product: a lane an output element of the box lo..hi of y. */
static inline MKC_BODY void MKC_UNUSED
mkc_matmul(const mkc_view *y, const mkc_view *a, const mkc_view *b, const mkc_view *c,
	   const mkc_mm_opt *o, const int64_t *lo, const int64_t *hi)
{
	const int r = y->rank;
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], as[MKC_RANK + 1], bs[MKC_RANK + 1], ak, bk;
	const int64_t K = mkc_mm_walk(y, a, b, o, as, &ak, bs, &bk);
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	const mkc_mm_epi e = mkc_mm_epi_of(c, o);
	float *MKC_RESTRICT py = (float *)y->p;
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *pa = (const float *)a->p + mkc_rt_dot(idx, as, r);
		const int64_t ob = mkc_rt_dot(idx, bs, r);
		float acc = 0;
		if (b->bf16) {
			const uint16_t *pb = (const uint16_t *)b->p + ob;
			for (int64_t k = 0; k < K; k++)
				acc += pa[k * ak] * mkc_rt_bf16(pb[k * bk]);
		} else {
			const float *pb = (const float *)b->p + ob;
			for (int64_t k = 0; k < K; k++)
				acc += pa[k * ak] * pb[k * bk];
		}
		py[mkc_rt_dot(idx, y->s, r)] = mkc_mm_out(acc, idx, &e);
	}
}

/*
 * MatMul by a weight [K, N] on a GPU: lane l of the block takes output
 * element o = l mod P of the tile and slice s = l / P of the K axis (S
 * slices, P = lanes / S outputs at a time), so that neighbouring lanes read
 * neighbouring weights of one row and the whole block streams; the slices'
 * partial sums meet in part (MKC_NLANES floats the lanes share: a
 * __shared__ array on a GPU).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_matmul_split_k(const mkc_view *y, const mkc_view *a, const mkc_view *b, const mkc_mm_opt *o,
		   const int64_t *lo, const int64_t *hi, float *part)
{
	const int r = y->rank;
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], as[MKC_RANK + 1], bs[MKC_RANK + 1], ak, bk;
	const int64_t K = mkc_mm_walk(y, a, b, o, as, &ak, bs, &bk);
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	if (cnt == 0)   /* every lane sees it: none is left at a sync */
		return;
	const int64_t S = cnt >= MKC_NLANES ? 1 : MKC_NLANES / cnt, P = MKC_NLANES / S;
	const int64_t o0 = MKC_LANE % P, s = MKC_LANE / P;
	for (int64_t base = 0; base < cnt; base += P) {
		const int64_t f = base + o0;
		float acc = 0;
		if (f < cnt && s < S) {
			mkc_rt_unflat(f, lo, ext, r, idx);
			const float *pa = (const float *)a->p + mkc_rt_dot(idx, as, r);
			const int64_t ob = mkc_rt_dot(idx, bs, r);
			if (b->bf16) {
				const uint16_t *pb = (const uint16_t *)b->p + ob;
				MKC_MM_UNROLL
				for (int64_t k = s * K / S; k < (s + 1) * K / S; k++)
					acc += pa[k * ak] * mkc_rt_bf16(pb[k * bk]);
			} else {
				const float *pb = (const float *)b->p + ob;
				MKC_MM_UNROLL
				for (int64_t k = s * K / S; k < (s + 1) * K / S; k++)
					acc += pa[k * ak] * pb[k * bk];
			}
		}
		part[MKC_LANE] = acc;
		MKC_LANES_SYNC();
		if (s == 0 && f < cnt) {
			for (int64_t t = 1; t < S; t++)
				acc += part[t * P + o0];
			((float *)y->p)[mkc_rt_dot(idx, y->s, r)] = acc;
		}
		MKC_LANES_SYNC();
	}
}

/*
 * NormGemm (passes/fuse_norm.c): the product of the normalised rows x of K
 * (one, or a few-token step's), RMSNormalization's x * (1 / sqrt(mean(x^2)
 * + eps)) * scale, by the rows of W, output (idx[0], idx[1]) taking row
 * idx[0] of x and row idx[1] of W; then Gemm's epilogue. With
 * a second weight U (NormGlu, passes/fuse_glu.c) the result is SiluMul's
 * (elementwise.h) of alpha times the two products. The float operations
 * are the norm's and the Gemm's own, in their order, so the result is
 * theirs bit for bit.
 */
static inline MKC_BODY float MKC_UNUSED
mkc_norm_dot(const float *x, int64_t K, float mean, float inv, const mkc_view *scale,
	     const mkc_view *w, int64_t row)
{
	float acc = 0;
	const int64_t o = row * w->s[0];
	for (int64_t k = 0; k < K; k++)
		acc += (x[k] - mean) * inv * mkc_mm_ld(scale, k) * mkc_mm_ld(w, o + k);
	return acc;
}

/* RMSNormalization's 1 / sqrt(mean(x^2) + eps) of the row x of K, in its order (mean 0). */
static inline MKC_BODY float MKC_UNUSED
mkc_norm_inv(const float *x, int64_t K, float eps)
{
	float mean = 0, ss = 0;
	for (int64_t j = 0; j < K; j++)
		ss += (x[j] - mean) * (x[j] - mean);
	return 1.0f / sqrtf(ss / (float)K + eps);
}

/* The row's y values of two products, as NormGlu's SiluMul combines them. */
static inline MKC_BODY float MKC_UNUSED
mkc_glu_out(float acc, float acc2, const mkc_mm_opt *o)
{
	return mkc_ew_f(MKC_EW_SILU_MUL, o->alpha * acc, o->alpha * acc2);
}

static inline MKC_BODY void MKC_UNUSED
mkc_norm_gemm(const mkc_view *y, const mkc_view *x, const mkc_view *scale, const mkc_view *w,
	      const mkc_view *u, const mkc_view *c, const mkc_mm_opt *o, const int64_t *lo,
	      const int64_t *hi)
{
	const int64_t K = x->d[1];
	const float mean = 0;
	float inv = 0;
	int64_t at = -1;   /* the row whose inv is held */
	int64_t ext[3], idx[3];
	const int64_t cnt = mkc_rt_extents(lo, hi, 2, ext);
	const mkc_mm_epi e = mkc_mm_epi_of(c, o);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, 2, idx);
		const float *px = (const float *)x->p + idx[0] * x->s[0];
		if (idx[0] != at) {
			inv = mkc_norm_inv(px, K, o->eps);
			at = idx[0];
		}
		const float acc = mkc_norm_dot(px, K, mean, inv, scale, w, idx[1]);
		const float out = u ? mkc_glu_out(acc, mkc_norm_dot(px, K, mean, inv, scale, u, idx[1]), o)
				    : mkc_mm_out(acc, idx, &e);
		((float *)y->p)[mkc_rt_dot(idx, y->s, 2)] = out;
	}
}

/*
 * Glu (passes/fuse_glu.c): rows x [S, K] by the rows of two weights w and
 * u [N, K], output (i, j) SiluMul's of alpha times the products of row i
 * by rows j of w and of u (mkc_glu_out), a lane an output element. Each
 * product sums over k in ascending order as mkc_matmul does, so the
 * result is that of the two Gemm nodes and the SiluMul, bit for bit.
 */
static inline MKC_BODY float MKC_UNUSED
mkc_row_dot(const mkc_view *x, int64_t i, const mkc_view *w, int64_t j)
{
	const float *px = (const float *)x->p + i * x->s[0];
	float acc = 0;
	for (int64_t k = 0; k < x->d[1]; k++)
		acc += px[k * x->s[1]] * mkc_mm_ld(w, j * w->s[0] + k * w->s[1]);
	return acc;
}

static inline MKC_BODY void MKC_UNUSED
mkc_glu(const mkc_view *y, const mkc_view *x, const mkc_view *w, const mkc_view *u,
	const mkc_mm_opt *o, const int64_t *lo, const int64_t *hi)
{
	int64_t ext[2], idx[2];
	const int64_t cnt = mkc_rt_extents(lo, hi, 2, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, 2, idx);
		const float acc = mkc_row_dot(x, idx[0], w, idx[1]);
		((float *)y->p)[mkc_rt_dot(idx, y->s, 2)] =
			mkc_glu_out(acc, mkc_row_dot(x, idx[0], u, idx[1]), o);
	}
}

/*
 * HeadProj's output (passes/fuse_qkv.c) for one unit of a tile: the
 * product a of a row, stored at o1 of y (float32, or a bf16 cache); or,
 * with cs and sn (the pair's cos and sin), the pair (a, b) rotated as
 * RotaryEmbedding rotates it and stored at o1 and o2. Both the C body
 * below and the GPU tile (after backends/cuda/matvec.cuh's products) end
 * here.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_head_put(const mkc_view *y, int64_t o1, int64_t o2, float a, float b, const float *cs,
	     const float *sn)
{
	if (!cs) {
		mkc_cache_put(y, o1, a);
		return;
	}
	const float px[2] = {a, b};
	float r[2];
	mkc_rope_pair(r, px, 0, 1, 0, 1, *cs, *sn);
	mkc_cache_put(y, o1, r[0]);
	mkc_cache_put(y, o2, r[1]);
}

/*
 * Where a HeadProj tile is (passes/tile.c's tile_head_proj): head lo[1] of
 * y [1, H, positions, D], at position lo[2] (a cache's new one, or 0), or
 * with caches in pages (pg, mkc --max-seqs: a step of one row) at the row
 * that holds its sequence's position; its units from d0 = lo[3] (a unit a
 * row, or a pair of rows when it rotates them: halves d0 + f and d0 + f +
 * D/2, or pairs d0 + 2f and d0 + 2f + 1).
 */
typedef struct {
	int64_t n;      /* the units */
	int64_t step;   /* rows a unit takes along D: 2 for pairs, else 1 */
	int64_t off;    /* from a unit's first row to its second: D/2 for halves, 1 for pairs */
	int64_t h0;     /* the unit 0's weight row */
	int64_t o0;     /* and its element of y */
	int64_t c0;     /* and its cos and sin */
} mkc_head_tile;

static inline MKC_BODY mkc_head_tile MKC_UNUSED
mkc_head_at(const mkc_view *y, const mkc_mm_opt *o, const int64_t *lo, const int64_t *hi,
	    const mkc_rt_pages *pg)
{
	const int64_t D = y->d[3], d0 = lo[3];
	const int64_t row = pg ? mkc_rt_page_at(pg, pg->seq[0], pg->pos[0]) : lo[2];
	mkc_head_tile t;
	t.step = o->pairs == 2 ? 2 : 1;
	t.off = o->pairs == 1 ? D / 2 : 1;
	t.n = (hi[3] - lo[3]) / t.step;
	t.h0 = lo[1] * D + d0;
	t.o0 = lo[1] * y->s[1] + row * y->s[2] + d0;
	t.c0 = d0 / t.step;
	return t;
}

/*
 * HeadProj (passes/fuse_qkv.c): the tile's units of NormGemm(x, scale, W)
 * into y, rotated by cos and sin when o->pairs. The float operations are
 * NormGemm's (alpha * acc) and then the rotary's or the append's, in their
 * order: the results of the nodes it replaced, bit for bit.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_head_proj(const mkc_view *y, const mkc_view *x, const mkc_view *scale, const mkc_view *w,
	      const mkc_view *cos, const mkc_view *sin, const mkc_mm_opt *o, const int64_t *lo,
	      const int64_t *hi, const mkc_rt_pages *pg)
{
	const float *px = (const float *)x->p;
	const int64_t K = x->d[1];
	const float inv = mkc_norm_inv(px, K, o->eps);
	const mkc_head_tile t = mkc_head_at(y, o, lo, hi, pg);
	const float *pc = o->pairs ? (const float *)cos->p + t.c0 : NULL;
	const float *pn = o->pairs ? (const float *)sin->p + t.c0 : NULL;
	for (int64_t f = MKC_LANE; f < t.n; f += MKC_NLANES) {
		const int64_t r = t.h0 + t.step * f, at = t.o0 + t.step * f;
		const float a = o->alpha * mkc_norm_dot(px, K, 0, inv, scale, w, r);
		float b = 0;
		if (o->pairs)
			b = o->alpha * mkc_norm_dot(px, K, 0, inv, scale, w, r + t.off);
		mkc_head_put(y, at, at + t.off, a, b, pc ? pc + f : NULL, pn ? pn + f : NULL);
	}
}

/*
 * The lanes that share an output of mkc_dot_rows: a warp on a GPU, whose
 * shuffles sum their products; one lane alone where a tile has fewer lanes
 * than a warp (no shuffle then: a partial warp's is undefined), and on the
 * host.
 */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_DOT_GROUP (MKC_NLANES >= MKC_WARP ? (int64_t)MKC_WARP : 1)
#else
#define MKC_DOT_GROUP 1
#endif

/*
 * A product by a weight stored [N, K] (Gemm with transB, as Hugging Face
 * keeps Linear weights; MatMul with canon's mkc_trans_b) on a GPU: one
 * group of lanes (MKC_DOT_GROUP, a warp) per output element walks the two
 * contiguous rows, the activations' and the weight's row idx[r - 1], with
 * 16-byte loads (8 bf16 or 4 float32 weights a lane; K a multiple of
 * them, and both rows 16-byte aligned), and a shuffle reduction sums the
 * lanes; lane 0 of the group stores the epilogue. With a second weight u
 * (Glu, passes/fuse_glu.c: y takes one column of two products) the lanes
 * walk row idx[r - 1] of u beside it, and the epilogue is mkc_glu_out's.
 * Lanes past the last
 * whole group (a block that is not a multiple of the warp) idle. K is a
 * constant in the tile function this is inlined into, so the walk unrolls
 * and a lane has several loads in flight (one block per SM holds few warps
 * to hide latency). The emitter calls it on a GPU only; it is plain C so
 * that it runs on the host too (tests/backends/test_bodies.c), one lane
 * an output.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_dot_rows(const mkc_view *y, const mkc_view *a, const mkc_view *b, const mkc_view *u,
	     const mkc_view *c, const mkc_mm_opt *o, const int64_t *lo, const int64_t *hi)
{
	const int r = y->rank;
	const int64_t g = MKC_DOT_GROUP, lane = MKC_LANE % g, wp = MKC_LANE / g;
	const int64_t ngroup = MKC_NLANES / g;   /* at least 1: a group never outgrows the tile */
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1], as[MKC_RANK + 1], bs[MKC_RANK + 1], ak, bk;
	const int64_t K = mkc_mm_walk(y, a, b, o, as, &ak, bs, &bk);
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	const mkc_mm_epi e = mkc_mm_epi_of(c, o);
	for (int64_t f = wp; wp < ngroup && f < cnt; f += ngroup) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *pa = (const float *)a->p + mkc_rt_dot(idx, as, r);
		float acc = 0, acc2 = 0;
		if (b->bf16) {
			const uint16_t *pb = (const uint16_t *)b->p + idx[r - 1] * b->s[0];
			const uint16_t *pu = u ? (const uint16_t *)u->p + idx[r - 1] * u->s[0] : NULL;
			MKC_MM_UNROLL
			for (int64_t k = lane * 8; k < K; k += 8 * g) {
				acc += mkc_rt_dot8_bf16(pa + k, pb + k);
				if (pu)
					acc2 += mkc_rt_dot8_bf16(pa + k, pu + k);
			}
		} else {
			const float *pb = (const float *)b->p + idx[r - 1] * b->s[0];
			const float *pu = u ? (const float *)u->p + idx[r - 1] * u->s[0] : NULL;
			MKC_MM_UNROLL
			for (int64_t k = lane * 4; k < K; k += 4 * g) {
				acc += mkc_rt_dot4(pa + k, pb + k);
				if (pu)
					acc2 += mkc_rt_dot4(pa + k, pu + k);
			}
		}
		if (g > 1) {   /* the same in every lane of the block: a whole warp sums, or none */
			acc = mkc_rt_warp_sum(acc);
			if (u)
				acc2 = mkc_rt_warp_sum(acc2);
		}
		if (lane == 0)
			((float *)y->p)[mkc_rt_dot(idx, y->s, r)] =
				u ? mkc_glu_out(acc, acc2, o) : mkc_mm_out(acc, idx, &e);
	}
}
