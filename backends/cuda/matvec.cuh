/*
 * matvec.cuh - the GPU tile body (CUDA and HIP) of a product by a weight kept [N, K]
 * (Linear layers: Gemm with transB, MatMul after canon's mkc_trans_b) when
 * the tile has one row of activations, as every decode step has.
 *
 * mkc_gemv<K, BF16, NORM>(x, w, ldw, n, dots, ...) sets dots[r] = x . w[r] for the
 * n <= MKC_GEMV_ROWS weight rows of the tile. A decode step streams every
 * weight once, so the body exists to keep loads in flight: every thread of
 * the block owns the same C 16-byte chunks of K in every row (thread t
 * chunks t, t + MKC_THREADS, ... below K; its activations stay in
 * registers), and the rows go RB at a time, the loads of the next batch
 * issued before this one is summed, so a thread keeps 8 to 16 independent
 * 16-byte weight loads outstanding (32-64 KB a block: what one SM needs to
 * stream its share of the HBM bandwidth). Each row's partial sums
 * then meet: a shuffle reduction in each warp (MKC_WARP lanes), the warps'
 * sums in shared memory, added in one order (the result does not depend on
 * timing).
 * Every lane of the block calls it; dots is valid after it returns.
 *
 * K must be whole 16-byte chunks of weights (rows 16-byte aligned); when
 * a row has fewer chunks than the block has threads, the rest idle.
 */

/* 16-byte weight loads a thread has in one batch (two batches in flight) */
#ifndef MKC_GEMV_INFLIGHT
#define MKC_GEMV_INFLIGHT 8
#endif

/* scales this thread's chunks of x by 1 / sqrt(mean(x^2) + eps) and the scale */
template <int K, int E, int C, int NORM>
static __device__ __forceinline__ void
mkc_gemv_norm(float4 *xa, float4 *xb, const void *scale, float eps)
{
	constexpr int T = K / E;
	const int t = threadIdx.x;
	float s[C][8];   /* the scale's chunks, loaded before the sum is known */
#pragma unroll
	for (int c = 0; c < C; c++) {
		const int64_t k = (int64_t)E * (t + c * MKC_THREADS);
		if (k >= K)
			continue;
		if (NORM == 2) {
			const uint16_t *p = (const uint16_t *)scale + k;
			uint4 v = make_uint4(0, 0, 0, 0);
			if (E == 8)
				v = *(const uint4 *)p;
			else
				*(uint2 *)&v = *(const uint2 *)p;
			const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
			for (int i = 0; i < 4 && 2 * i < E; i++) {
				s[c][2 * i] = mkc_rt_bf16((uint16_t)u[i]);
				s[c][2 * i + 1] = mkc_rt_bf16((uint16_t)(u[i] >> 16));
			}
		} else {
#pragma unroll
			for (int i = 0; i < E; i++)
				s[c][i] = ((const float *)scale)[k + i];
		}
	}
	float ss = 0;
#pragma unroll
	for (int c = 0; c < C; c++)
		if (t + c * MKC_THREADS < T) {
			ss += xa[c].x * xa[c].x + xa[c].y * xa[c].y + xa[c].z * xa[c].z + xa[c].w * xa[c].w;
			if (E == 8)
				ss += xb[c].x * xb[c].x + xb[c].y * xb[c].y + xb[c].z * xb[c].z +
				      xb[c].w * xb[c].w;
		}
	ss = mkc_rt_block_sum(ss);
	const float inv = 1.0f / sqrtf(ss / (float)K + eps);
#pragma unroll
	for (int c = 0; c < C; c++) {
		const int64_t k = (int64_t)E * (t + c * MKC_THREADS);
		if (k >= K)
			continue;
		xa[c] = make_float4(xa[c].x * inv * s[c][0], xa[c].y * inv * s[c][1],
				    xa[c].z * inv * s[c][2], xa[c].w * inv * s[c][3]);
		if (E == 8)
			xb[c] = make_float4(xb[c].x * inv * s[c][4], xb[c].y * inv * s[c][5],
					    xb[c].z * inv * s[c][6], xb[c].w * inv * s[c][7]);
	}
}

/*
 * rows r .. r + RB of the tile, this thread's C chunks of each (zero past
 * nt): rows below n of w, the rest of w2 (from its row 0)
 */
template <int RB, int C, bool BF16>
static __device__ __forceinline__ void
mkc_gemv_load(uint4 (*v)[C], const void *w, const void *w2, int64_t ldw, int64_t r, int64_t n,
	      int64_t nt, int T)
{
	const int t = threadIdx.x;
#pragma unroll
	for (int j = 0; j < RB; j++) {
		const int64_t q = r + j;
		const char *base = (const char *)(q < n ? w : w2);
		const uint4 *row = (const uint4 *)(base + (q < n ? q : q - n) * ldw * (BF16 ? 2 : 4));
#pragma unroll
		for (int c = 0; c < C; c++) {
			const int k = t + c * MKC_THREADS;
			v[j][c] = mkc_ld16<true>(row + k, q < nt && k < T);
		}
	}
}

/* x . w with w 16 bytes of weights (8 bf16 or 4 float32) */
template <bool BF16>
static __device__ __forceinline__ float
mkc_gemv_dot16(float4 xa, float4 xb, uint4 w)
{
	return BF16 ? mkc_rt_fma8_bf16(0.0f, xa, xb, w) : mkc_rt_fma4(0.0f, xa, w);
}

/* this thread's C chunks of x (E floats each), normalised when NORM asks */
template <int K, int E, int C, int NORM>
static __device__ __forceinline__ void
mkc_gemv_x(const float *x, float4 *xa, float4 *xb, const void *scale, float eps)
{
	constexpr int T = K / E;
#pragma unroll
	for (int c = 0; c < C; c++) {
		const int k = threadIdx.x + c * MKC_THREADS;
		const float4 *p = (const float4 *)(x + (int64_t)E * (k < T ? k : 0));
		xa[c] = p[0];
		xb[c] = E == 8 ? p[1] : xa[c];
	}
	if (NORM)
		mkc_gemv_norm<K, E, C, NORM>(xa, xb, scale, eps);
}

/* rows r .. r + RB of the tile from v: each warp's sum of a row into red */
template <int RB, int C, bool BF16>
static __device__ __forceinline__ void
mkc_gemv_rows(const uint4 (*v)[C], const float4 *xa, const float4 *xb,
	      float (*red)[MKC_GEMV_ROWS], int64_t r, int64_t nt)
{
	const int lane = threadIdx.x % MKC_WARP, warp = threadIdx.x / MKC_WARP;
#pragma unroll
	for (int j = 0; j < RB; j++) {
		float acc = 0;
#pragma unroll
		for (int c = 0; c < C; c++)
			acc += mkc_gemv_dot16<BF16>(xa[c], xb[c], v[j][c]);
		acc = mkc_rt_warp_sum(acc);
		if (lane == 0 && r + j < nt)
			red[warp][r + j] = acc;
	}
}

/* the warps' sums of each row, added in one order */
template <int T>
static __device__ __forceinline__ void
mkc_gemv_sum(float (*red)[MKC_GEMV_ROWS], int64_t n, float *dots)
{
	__syncthreads();
	for (int64_t r = threadIdx.x; r < n; r += MKC_THREADS) {
		float s = 0;
		for (int k = 0; k < (T < MKC_THREADS ? (T + MKC_WARP - 1) / MKC_WARP : MKC_THREADS / MKC_WARP); k++)
			s += red[k][r];
		dots[r] = s;
	}
	__syncthreads();
}

/*
 * NORM 1 or 2: x is first RMS-normalised with eps and a float32 (1) or bf16
 * (2) scale of K elements, as a NormGemm node asks (passes/fuse_norm.c).
 * With a second weight w2 (NormGlu, HeadProj's rotated pairs),
 * dots[n + r] = x . w2[r] too
 * (2 n <= MKC_GEMV_ROWS): both weights' rows stream as one tile's.
 */
template <int K, bool BF16, int NORM>
static __device__ __noinline__ void MKC_UNUSED
mkc_gemv(const float *x, const void *w, int64_t ldw, int64_t n, float *dots, const void *scale,
	 float eps, const void *w2 = nullptr)
{
	constexpr int E = BF16 ? 8 : 4;                 /* weights in 16 bytes */
	static_assert(K % E == 0, "K: whole 16-byte chunks");
	constexpr int T = K / E;                        /* chunks a row */
	constexpr int C = (T + MKC_THREADS - 1) / MKC_THREADS;   /* chunks a thread */
	constexpr int RB = C >= MKC_GEMV_INFLIGHT ? 1 : MKC_GEMV_INFLIGHT / C;   /* rows a batch; two in flight */
	__shared__ float red[MKC_THREADS / MKC_WARP][MKC_GEMV_ROWS];
	/* the first rows' loads go out first: they wait on nothing, and the
	 * memory can stream them while the activations and the norm's sum
	 * come in */
	const int64_t nt = w2 ? 2 * n : n;   /* the tile's rows */
	uint4 cur[RB][C], nxt[RB][C];
	mkc_gemv_load<RB, C, BF16>(cur, w, w2, ldw, 0, n, nt, T);
	float4 xa[C], xb[C];
	mkc_gemv_x<K, E, C, NORM>(x, xa, xb, scale, eps);
	for (int64_t r = 0; r < nt; r += RB) {
		/* the next rows' loads go out before this batch is summed */
		mkc_gemv_load<RB, C, BF16>(nxt, w, w2, ldw, r + RB, n, nt, T);
		mkc_gemv_rows<RB, C, BF16>(cur, xa, xb, red, r, nt);
#pragma unroll
		for (int j = 0; j < RB; j++)
#pragma unroll
			for (int c = 0; c < C; c++)
				cur[j][c] = nxt[j][c];
	}
	mkc_gemv_sum<T>(red, nt, dots);
}

/* the element type of weights in float32 (false) or bf16 (true) */
template <bool BF16>
struct mkc_gemv_elem {
	typedef float type;
};

template <>
struct mkc_gemv_elem<true> {
	typedef uint16_t type;
};

/* mkc_gemv_tile's options: the weights' type, the norm's scale (runtime/limits.h), the epilogue */
enum { MKC_W_F32, MKC_W_BF16 };
enum { MKC_EPI_MM, MKC_EPI_GLU };   /* a product's own epilogue (mkc_mm_out), or SiluMul's */

/*
 * A matvec tile of MatMul, Gemm, NormGemm or NormGlu (the emitter's
 * choice: every tile one row of activations x, K a constant): output
 * columns lo[r-1] .. hi[r-1] of y, the rows of weight w [N, K] they take
 * (and of w2 with EPI_GLU), x normalised first by scale with NORM, then the
 * product's epilogue (C: c, or NULL) or SiluMul's of the two products.
 */
template <int K, int W, int NORM, int EPI>
static __device__ __forceinline__ void MKC_UNUSED
mkc_gemv_tile(const mkc_view *y, const mkc_view *x, const mkc_view *w, const mkc_view *w2,
	      const mkc_view *scale, const mkc_view *c, const mkc_mm_opt *o, const int64_t *lo,
	      const int64_t *hi)
{
	typedef typename mkc_gemv_elem<W == MKC_W_BF16>::type T;
	__shared__ float dots[MKC_GEMV_ROWS];
	const int r = y->rank;
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	const T *pw2 = EPI == MKC_EPI_GLU ? (const T *)w2->p + lo[r - 1] * w2->s[0] : NULL;
	mkc_gemv<K, W == MKC_W_BF16, NORM>((const float *)x->p,
					   (const T *)w->p + lo[r - 1] * w->s[0], w->s[0], cnt, dots,
					   NORM ? scale->p : NULL, o->eps, pw2);
	const mkc_mm_epi e = mkc_mm_epi_of(c, o);
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		((float *)y->p)[mkc_rt_dot(idx, y->s, r)] =
			EPI == MKC_EPI_GLU ? mkc_glu_out(dots[f], dots[cnt + f], o)
					   : mkc_mm_out(dots[f], idx, &e);
	}
}

/*
 * A HeadProj tile (passes/fuse_qkv.c): the rows of its units (matmul.h's
 * mkc_head_at), a pair's second rows as the second weight, normalised
 * first by scale with NORM; then a lane a unit rotates and stores them
 * (matmul.h's mkc_head_put).
 */
template <int K, int W, int NORM>
static __device__ __forceinline__ void MKC_UNUSED
mkc_head_proj_tile(const mkc_view *y, const mkc_view *x, const mkc_view *scale,
		   const mkc_view *w, const mkc_view *cos, const mkc_view *sin,
		   const mkc_mm_opt *o, const int64_t *lo, const int64_t *hi, const mkc_rt_pages *pg)
{
	typedef typename mkc_gemv_elem<W == MKC_W_BF16>::type T;
	__shared__ float dots[MKC_GEMV_ROWS];
	const mkc_head_tile t = mkc_head_at(y, o, lo, hi, pg);
	const int64_t ws = w->s[0];
	const T *pw = (const T *)w->p;
	mkc_gemv<K, W == MKC_W_BF16, NORM>((const float *)x->p, pw + t.h0 * ws, t.step * ws, t.n, dots,
					   scale->p, o->eps,
					   o->pairs ? pw + (t.h0 + t.off) * ws : NULL);
	const float *pc = o->pairs ? (const float *)cos->p + t.c0 : NULL;
	const float *pn = o->pairs ? (const float *)sin->p + t.c0 : NULL;
	for (int64_t f = MKC_LANE; f < t.n; f += MKC_NLANES)
		mkc_head_put(y, t.o0 + t.step * f, t.o0 + t.step * f + t.off, o->alpha * dots[f],
			     o->pairs ? o->alpha * dots[t.n + f] : 0.0f, pc ? pc + f : NULL,
			     pn ? pn + f : NULL);
}
