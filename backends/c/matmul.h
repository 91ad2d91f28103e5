/*
 * matmul.h - MatMul, Gemm, NormGemm and NormGlu as tile bodies in plain C
 * over the lanes of a tile (runtime/common.h: MKC_LANE of MKC_NLANES),
 * embedded by every target. A GPU target calls backends/cuda/matvec.cuh's
 * body where a tile is one row of activations; these are the rest.
 *
 * A product's operands come as the emitter resolved them: a and b with
 * broadcast strides as and bs over the output's coordinates (rank r), and
 * the strides ak and bk of the K axis in each; b in float32 (bf) or bf16
 * (bh), the other NULL. Every output element is a dot product over k in
 * ascending order, then the epilogue (mkc_mm_epi).
 */

/* MatMul's result is acc; Gemm's alpha * acc, plus beta * C when it has C. */
typedef struct {
	int gemm;
	float alpha, beta;
	const float *c;        /* C, or NULL */
	const int64_t *cs;     /* C's broadcast strides over the output's two axes */
} mkc_mm_epi;

/* On a GPU the K walks keep several loads in flight. */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_MM_UNROLL _Pragma("unroll 8")
#else
#define MKC_MM_UNROLL
#endif

static inline MKC_BODY float MKC_UNUSED
mkc_mm_out(float acc, const int64_t *idx, const mkc_mm_epi *ep)
{
	if (!ep->gemm)
		return acc;
	return ep->c ? ep->alpha * acc + ep->beta * ep->c[mkc_rt_dot(idx, ep->cs, 2)]
		     : ep->alpha * acc;
}

/* Element i of a vector kept in float32 (f) or bf16 (h). */
static inline MKC_BODY float MKC_UNUSED
mkc_mm_ld(const float *f, const uint16_t *h, int64_t i)
{
	return h ? mkc_rt_bf16(h[i]) : f[i];
}

/* The general product: a lane an output element of the box lo..hi of y. */
static inline MKC_BODY void MKC_UNUSED
mkc_matmul(float *MKC_RESTRICT y, const int64_t *ys, int r, const int64_t *lo, const int64_t *hi,
	   const float *a, const int64_t *as, int64_t ak, const float *bf, const uint16_t *bh,
	   const int64_t *bs, int64_t bk, int64_t K, const mkc_mm_epi *ep)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *pa = a + mkc_rt_dot(idx, as, r);
		const int64_t ob = mkc_rt_dot(idx, bs, r);
		float acc = 0;
		if (bh) {
			const uint16_t *pb = bh + ob;
			for (int64_t k = 0; k < K; k++)
				acc += pa[k * ak] * mkc_rt_bf16(pb[k * bk]);
		} else {
			const float *pb = bf + ob;
			for (int64_t k = 0; k < K; k++)
				acc += pa[k * ak] * pb[k * bk];
		}
		y[mkc_rt_dot(idx, ys, r)] = mkc_mm_out(acc, idx, ep);
	}
}

/*
 * MatMul by a weight [K, N] on a GPU: lane l of the block takes output
 * element o = l mod P of the tile and slice s = l / P of the K axis (S
 * slices, P = lanes / S outputs at a time), so that neighbouring lanes read
 * neighbouring weights of one row and the whole block streams; the slices'
 * partial sums meet in part (MKC_NLANES floats the lanes share: the tile
 * function's __shared__ array on a GPU).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_matmul_split_k(float *MKC_RESTRICT y, const int64_t *ys, int r, const int64_t *lo,
		   const int64_t *hi, const float *a, const int64_t *as, int64_t ak, const float *bf,
		   const uint16_t *bh, const int64_t *bs, int64_t bk, int64_t K, float *part)
{
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	if (cnt == 0)   /* every lane sees it: none is left at a sync */
		return;
	const int64_t S = cnt >= MKC_NLANES ? 1 : MKC_NLANES / cnt, P = MKC_NLANES / S;
	const int64_t o0 = MKC_LANE % P, s = MKC_LANE / P;
	for (int64_t base = 0; base < cnt; base += P) {
		const int64_t o = base + o0;
		float acc = 0;
		if (o < cnt && s < S) {
			mkc_rt_unflat(o, lo, ext, r, idx);
			const float *pa = a + mkc_rt_dot(idx, as, r);
			const int64_t ob = mkc_rt_dot(idx, bs, r);
			if (bh) {
				const uint16_t *pb = bh + ob;
				MKC_MM_UNROLL
				for (int64_t k = s * K / S; k < (s + 1) * K / S; k++)
					acc += pa[k * ak] * mkc_rt_bf16(pb[k * bk]);
			} else {
				const float *pb = bf + ob;
				MKC_MM_UNROLL
				for (int64_t k = s * K / S; k < (s + 1) * K / S; k++)
					acc += pa[k * ak] * pb[k * bk];
			}
		}
		part[MKC_LANE] = acc;
		MKC_LANES_SYNC();
		if (s == 0 && o < cnt) {
			for (int64_t t = 1; t < S; t++)
				acc += part[t * P + o0];
			y[mkc_rt_dot(idx, ys, r)] = acc;
		}
		MKC_LANES_SYNC();
	}
}

/*
 * NormGemm (passes/fuse_norm.c): the product of the normalised row x of K,
 * RMSNormalization's x * (1 / sqrt(mean(x^2) + eps)) * scale (scale in
 * float32 sf or bf16 sh), by the rows of W (wf or wh, ws apart), output
 * column idx[1] taking row idx[1]; then the epilogue. With a second weight
 * U (uf or uh, us apart: NormGlu, passes/fuse_glu.c) the result is
 * SiluMul's (alpha * acc) * sigmoid(alpha * acc) * (alpha * acc2) of the
 * two products. The float operations are the norm's and the Gemm's own,
 * in their order, so the result is theirs bit for bit.
 */
static inline MKC_BODY float MKC_UNUSED
mkc_norm_dot(const float *x, int64_t K, float mean, float inv, const float *sf,
	     const uint16_t *sh, const float *wf, const uint16_t *wh)
{
	float acc = 0;
	for (int64_t k = 0; k < K; k++)
		acc += (x[k] - mean) * inv * mkc_mm_ld(sf, sh, k) * mkc_mm_ld(wf, wh, k);
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

static inline MKC_BODY void MKC_UNUSED
mkc_norm_gemm(float *MKC_RESTRICT y, const int64_t *ys, const int64_t *lo, const int64_t *hi,
	      const float *x, int64_t K, float eps, const float *sf, const uint16_t *sh,
	      const float *wf, const uint16_t *wh, int64_t ws, const float *uf, const uint16_t *uh,
	      int64_t us, const mkc_mm_epi *ep)
{
	const int glu = uf || uh;
	const float mean = 0, inv = mkc_norm_inv(x, K, eps);
	int64_t ext[3], idx[3];
	const int64_t cnt = mkc_rt_extents(lo, hi, 2, ext);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, 2, idx);
		const int64_t row = idx[1];
		const float acc = mkc_norm_dot(x, K, mean, inv, sf, sh, wf ? wf + row * ws : NULL,
					       wh ? wh + row * ws : NULL);
		float out;
		if (glu) {
			const float acc2 = mkc_norm_dot(x, K, mean, inv, sf, sh,
							uf ? uf + row * us : NULL,
							uh ? uh + row * us : NULL);
			const float alpha = ep->alpha;
			out = (alpha * acc) * (1.0f / (1.0f + expf(-(alpha * acc)))) * (alpha * acc2);
		} else {
			out = mkc_mm_out(acc, idx, ep);
		}
		y[mkc_rt_dot(idx, ys, 2)] = out;
	}
}

/*
 * HeadProj's output (passes/fuse_qkv.c) for one unit of a tile: the
 * product a of a row, stored at o1 of y (float32) or yh (a bf16 cache);
 * or, with cs and sn (the pair's cos and sin), the pair (a, b) rotated as
 * RotaryEmbedding rotates it and stored at o1 and o2. Both the C body
 * below and the GPU tile (after backends/cuda/matvec.cuh's products) end
 * here.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_head_put(float *y, uint16_t *yh, int64_t o1, int64_t o2, float a, float b, const float *cs,
	     const float *sn)
{
	if (!cs) {
		mkc_cache_put(y, yh, o1, a);
		return;
	}
	const float px[2] = {a, b};
	float r[2];
	mkc_rope_pair(r, px, 0, 1, 0, 1, *cs, *sn);
	mkc_cache_put(y, yh, o1, r[0]);
	mkc_cache_put(y, yh, o2, r[1]);
}

/*
 * HeadProj (passes/fuse_qkv.c): n units of a head of NormGemm(x, scale,
 * W) (scale sf or sh, W wf or wh, ws apart), its first row h0 of W, into
 * y or yh from element o0 on. pairs 0: unit f is row h0 + f, stored at
 * o0 + f; 1 (halves of a head of D): rows h0 + f and h0 + f + D/2,
 * rotated by cos[f] and sin[f], stored at o0 + f and o0 + f + D/2; 2
 * (interleaved): rows h0 + 2f and h0 + 2f + 1, stored alike. The float
 * operations are NormGemm's (alpha * acc) and then the rotary's or the
 * append's, in their order: the results of the nodes it replaced, bit
 * for bit.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_head_proj(float *y, uint16_t *yh, int64_t o0, int64_t n, int pairs, int64_t D,
	      const float *x, int64_t K, float eps, float alpha, const float *sf,
	      const uint16_t *sh, const float *wf, const uint16_t *wh, int64_t ws, int64_t h0,
	      const float *cos, const float *sin)
{
	const float inv = mkc_norm_inv(x, K, eps);
	const int64_t step = pairs == 2 ? 2 : 1, off = pairs == 1 ? D / 2 : 1;
	for (int64_t f = MKC_LANE; f < n; f += MKC_NLANES) {
		const int64_t r = h0 + step * f, o = o0 + step * f;
		const float a = alpha * mkc_norm_dot(x, K, 0, inv, sf, sh, wf ? wf + r * ws : NULL,
						     wh ? wh + r * ws : NULL);
		float b = 0;
		if (pairs)
			b = alpha * mkc_norm_dot(x, K, 0, inv, sf, sh, wf ? wf + (r + off) * ws : NULL,
						 wh ? wh + (r + off) * ws : NULL);
		mkc_head_put(y, yh, o, o + off, a, b, pairs ? cos + f : NULL, pairs ? sin + f : NULL);
	}
}

#if defined(__CUDACC__) || defined(__HIPCC__)
/*
 * A product by a weight stored [N, K] (Gemm with transB, as Hugging Face
 * keeps Linear weights; MatMul with canon's mkc_trans_b) on a GPU: one
 * group of warp lanes per output element walks the two contiguous rows,
 * the activations' (a at idx . as) and the weight's row idx[r - 1] (bs0
 * apart), with 16-byte loads (8 bf16 or 4 float32 weights a lane), and a
 * shuffle reduction sums the lanes; lane 0 stores the epilogue. K and warp
 * are constants at the call, so the walk unrolls and a lane has several
 * loads in flight (one block per SM holds few warps to hide latency).
 */
static inline MKC_BODY void MKC_UNUSED
mkc_dot_rows(float *MKC_RESTRICT y, const int64_t *ys, int r, const int64_t *lo,
	     const int64_t *hi, const float *a, const int64_t *as, const float *bf,
	     const uint16_t *bh, int64_t bs0, int64_t K, int warp, const mkc_mm_epi *ep)
{
	const int64_t lane = MKC_LANE % warp, wp = MKC_LANE / warp, nwarp = MKC_NLANES / warp;
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	for (int64_t f = wp; f < cnt; f += nwarp) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		const float *pa = a + mkc_rt_dot(idx, as, r);
		float acc = 0;
		if (bh) {
			const uint16_t *pb = bh + idx[r - 1] * bs0;
			MKC_MM_UNROLL
			for (int64_t k = lane * 8; k < K; k += 8 * warp)
				acc += mkc_rt_dot8_bf16(pa + k, pb + k);
		} else {
			const float *pb = bf + idx[r - 1] * bs0;
			MKC_MM_UNROLL
			for (int64_t k = lane * 4; k < K; k += 4 * warp)
				acc += mkc_rt_dot4(pa + k, pb + k);
		}
		acc = mkc_rt_warp_sum(acc);
		if (lane == 0)
			y[mkc_rt_dot(idx, ys, r)] = mkc_mm_out(acc, idx, ep);
	}
}
#endif
