/*
 * mma.cuh - products of many tokens on tensor cores, for prompt chunks
 * (issue 29): one tile of y[i, j] = sum_k x[i, k] * w[j, k] over
 * MKC_MM_TM tokens by MKC_MM_TN features, bf16 operands and float32 sums,
 * by the warp-level mma.sync.m16n8k16 of sm_80 and later; for a bf16 x,
 * by Hopper's wgmma where the build is for sm_90a (below). A Glu tile
 * (passes/fuse_glu.c) takes MKC_MM_TN / 2 features of two weights, the
 * gate's and the up's, and stores silu(gate) * up (SiluMul's expression,
 * backends/c/elementwise.h's mkc_ew_f). The HIP target's chunk tile is
 * backends/hip/mfma.h, on MFMA's own fragments: this file is CUDA's alone.
 *
 * Operands. The weight is bf16 [n, k] row-major, as the matvec bodies take
 * it: a row is one feature, which is exactly the column-major B operand
 * the instruction wants, so both operands come into shared memory by rows
 * and out of it by ldmatrix with no transpose. x is float32 (the residual
 * stream's type, rounded to bf16 on its way into shared memory) or bf16.
 *
 * Pipeline. MKC_MM_STAGES buffers of one K step (MKC_MM_TK) each: the
 * weight comes by cp.async (sync.cuh's mkc_copy16_or_zero) MKC_MM_STAGES - 1
 * steps ahead of the step computed; a float32 x comes through registers one step ahead (cp.async
 * cannot convert), stored after the step's products are issued. A shared
 * row is 128 bytes; its eight 16-byte chunks are XOR-swizzled by the row,
 * so the eight rows one ldmatrix phase reads lie on distinct banks.
 *
 * Warps. Eight warps as 2 x 4: each computes 64 tokens by 32 features, 4 x 4
 * fragments of 16 x 8, 64 float32 sums a lane.
 *
 * Edges. Tokens past m (the step's count, known at run time) and features
 * past n read as zeros and are not stored, so a tile fixed at compile time
 * for the largest chunk costs only its loads for a smaller one; k must be
 * a multiple of MKC_MM_TK and the rows 16-byte aligned (the emitter
 * checks, the body asserts).
 *
 * Output. y is float32, plus c where there is one; or bf16 (YH: a
 * product's output that only tensor-core tiles read, passes/narrow.c),
 * rounded to nearest even as the C bodies round (runtime/bf16.h).
 */

/* MKC_MM_TM, TN, TK, STAGES and SMEM: runtime/limits.h */

static_assert(MKC_THREADS == 256, "mma.cuh's tile is eight warps");

/* the bf16 element offset of chunk c (8 elements) of row r in a stage */
static __device__ __forceinline__ int MKC_UNUSED
mkc_mm_swz(int r, int c)
{
	return r * MKC_MM_TK + ((c ^ (r & 7)) << 3);
}

static __device__ __forceinline__ uint32_t MKC_UNUSED
mkc_mm_saddr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_ldsm4(uint32_t (&r)[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two float32 as a bf16 pair, round to nearest even; lo in the low half */
static __device__ __forceinline__ uint32_t MKC_UNUSED
mkc_mm_pack(float lo, float hi)
{
	uint32_t r;
	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}

/*
 * K step k0.. of rows r0.. of a bf16 operand (the weight's features, or a
 * bf16 x's tokens) into stage buffer s by cp.async: 1024 chunks of 16
 * bytes, four a thread; rows past nrows come as zeros. GLU: the stage's
 * rows are features r0.. of src and of u in turns of 8 (stage rows 16 q ..
 * 16 q + 7 are src's rows r0 + 8 q.., the next 8 u's same rows), so that
 * a lane's sums of a gate feature and of its up twin are in n8 blocks
 * 2 q and 2 q + 1, which both instructions give the same lane.
 */
template <bool GLU>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_load(uint16_t *s, const uint16_t *src, const uint16_t *u, int64_t ld, int64_t nrows,
	    int64_t r0, int64_t k0)
{
	static_assert(MKC_MM_TM == MKC_MM_TN, "one loader for both operands");
	for (int i = 0; i < MKC_MM_TN * MKC_MM_TK / 8 / MKC_THREADS; i++) {
		int idx = threadIdx.x + i * MKC_THREADS, r = idx >> 3, c = idx & 7;
		const int64_t f = GLU ? r0 + ((r >> 4) << 3) + (r & 7) : r0 + r;
		const uint16_t *from = GLU && (r >> 3) & 1 ? u : src;
		bool ok = f < nrows;
		mkc_copy16_or_zero(s + mkc_mm_swz(r, c), ok ? from + f * ld + k0 + c * 8 : from, ok);
	}
}

/*
 * Outputs j and j + 1 of row i (those at n and past dropped), c's added
 * where there is a c (ldc 0: a bias), stored as float32 or, YH, bf16.
 */
template <bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_put2(void *y, int64_t ldy, const float *c, int64_t ldc, int64_t i, int64_t j, int64_t n,
	    float v0, float v1)
{
	if (c && j < n)
		v0 = c[i * ldc + j] + v0;
	if (c && j + 1 < n)
		v1 = c[i * ldc + j + 1] + v1;
	const int64_t at = i * ldy + j;
	if (YH) {
		uint16_t *p = (uint16_t *)y + at;
		const uint32_t h = mkc_mm_pack(v0, v1);
		if (j + 1 < n && !(at & 1)) {
			*(uint32_t *)p = h;
			return;
		}
		if (j < n)
			p[0] = (uint16_t)h;
		if (j + 1 < n)
			p[1] = (uint16_t)(h >> 16);
		return;
	}
	float *p = (float *)y + at;
	if (j < n)
		p[0] = v0;
	if (j + 1 < n)
		p[1] = v1;
}

/* a float32 x's K step into registers: four chunks of 8 a thread */
#define MKC_MM_XCH (MKC_MM_TM * MKC_MM_TK / 8 / MKC_THREADS)

static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_fetch_xf(float4 (&v)[MKC_MM_XCH][2], const float *x, int64_t ldx, int64_t m, int64_t m0,
		int64_t k0)
{
	for (int i = 0; i < MKC_MM_XCH; i++) {
		int idx = threadIdx.x + i * MKC_THREADS, r = idx >> 3, c = idx & 7;
		if (m0 + r < m) {
			const float4 *p = (const float4 *)(x + (m0 + r) * ldx + k0 + c * 8);
			v[i][0] = p[0];
			v[i][1] = p[1];
		} else {
			v[i][0] = v[i][1] = make_float4(0.f, 0.f, 0.f, 0.f);
		}
	}
}

/* ...and from registers into stage buffer s, as bf16 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_store_xf(uint16_t *s, const float4 (&v)[MKC_MM_XCH][2])
{
	for (int i = 0; i < MKC_MM_XCH; i++) {
		int idx = threadIdx.x + i * MKC_THREADS, r = idx >> 3, c = idx & 7;
		uint4 h = {mkc_mm_pack(v[i][0].x, v[i][0].y), mkc_mm_pack(v[i][0].z, v[i][0].w),
			   mkc_mm_pack(v[i][1].x, v[i][1].y), mkc_mm_pack(v[i][1].z, v[i][1].w)};
		*(uint4 *)(s + mkc_mm_swz(r, c)) = h;
	}
}

/*
 * One K step's products from stage buffers xs (tokens) and ws (features):
 * four k16 slices, each 4 A fragments and 4 B fragment pairs by ldmatrix
 * and 16 mma.
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_step(float (&acc)[4][4][4], const uint16_t *xs, const uint16_t *ws, int wm, int wn,
	    int lane)
{
	for (int kk = 0; kk < MKC_MM_TK / 16; kk++) {
		uint32_t a[4][4], b[2][4];
		for (int mi = 0; mi < 4; mi++) {
			/* lanes 0-15 name rows 0-15 at k 0-7, lanes 16-31 the same at k 8-15 */
			int r = wm * 64 + mi * 16 + (lane & 15);
			mkc_mm_ldsm4(a[mi], mkc_mm_saddr(xs + mkc_mm_swz(r, kk * 2 + (lane >> 4))));
		}
		for (int nj = 0; nj < 2; nj++) {
			/* four 8 x 8 matrices: features 0-7 at k 0-7 and 8-15, then 8-15 */
			int r = wn * 32 + nj * 16 + (lane & 7) + ((lane >> 4) << 3);
			mkc_mm_ldsm4(b[nj], mkc_mm_saddr(ws + mkc_mm_swz(r, kk * 2 + ((lane >> 3) & 1))));
		}
		for (int mi = 0; mi < 4; mi++)
			for (int ni = 0; ni < 4; ni++)
				mkc_mm_mma(acc[mi][ni], a[mi], b[ni >> 1][(ni & 1) * 2],
					   b[ni >> 1][(ni & 1) * 2 + 1]);
	}
}

/*
 * The tile at tokens m0.. and features n0.. of y [m, ldy] = x [m, ldx] *
 * w [n, ldw]^T over k (+ c [m, ldc]: a residual, which may be y itself, or
 * with ldc 0 a bias a feature; NULL: none), in smem (MKC_MM_SMEM bytes,
 * 16-aligned). XH: x is bf16; YH: y is. GLU: y = silu(x w^T) * (x u^T),
 * u [n, ldw] the up weight, features n0 .. n0 + MKC_MM_TN / 2 (no c).
 */
template <bool XH, bool GLU, bool YH>
static __device__ __noinline__ void MKC_UNUSED
mkc_mma_sync_tile(void *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w,
		  const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m, int64_t n,
		  int64_t k, int64_t m0, int64_t n0, void *smem)
{
	const int nk = (int)(k / MKC_MM_TK);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp >> 2, wn = warp & 3;
	uint16_t *xs = (uint16_t *)smem;
	uint16_t *ws = xs + MKC_MM_STAGES * MKC_MM_TM * MKC_MM_TK;
	float acc[4][4][4] = {};
	float4 xv[MKC_MM_XCH][2];

	/* the first stages: a float32 x is stored at once, the weight in flight */
	for (int s = 0; s < MKC_MM_STAGES - 1; s++) {
		if (s < nk) {
			mkc_mm_load<GLU>(ws + s * MKC_MM_TN * MKC_MM_TK, w, u, ldw, n, n0,
					 s * MKC_MM_TK);
			if (XH) {
				mkc_mm_load<false>(xs + s * MKC_MM_TM * MKC_MM_TK, (const uint16_t *)x,
						   NULL, ldx, m, m0, s * MKC_MM_TK);
			} else {
				mkc_mm_fetch_xf(xv, (const float *)x, ldx, m, m0, s * MKC_MM_TK);
				mkc_mm_store_xf(xs + s * MKC_MM_TM * MKC_MM_TK, xv);
			}
		}
		mkc_copy_commit();
	}
	for (int kt = 0; kt < nk; kt++) {
		/* step kt's weight has landed; every warp is past step kt - 1 */
		mkc_copy_wait_but<MKC_MM_STAGES - 2>();
		__syncthreads();
		int next = kt + MKC_MM_STAGES - 1, ns = next % MKC_MM_STAGES;
		if (next < nk) {
			mkc_mm_load<GLU>(ws + ns * MKC_MM_TN * MKC_MM_TK, w, u, ldw, n, n0,
					 (int64_t)next * MKC_MM_TK);
			if (XH)
				mkc_mm_load<false>(xs + ns * MKC_MM_TM * MKC_MM_TK, (const uint16_t *)x,
						   NULL, ldx, m, m0, (int64_t)next * MKC_MM_TK);
			else
				mkc_mm_fetch_xf(xv, (const float *)x, ldx, m, m0,
						(int64_t)next * MKC_MM_TK);
		}
		mkc_copy_commit();
		int cs = kt % MKC_MM_STAGES;
		mkc_mm_step(acc, xs + cs * MKC_MM_TM * MKC_MM_TK, ws + cs * MKC_MM_TN * MKC_MM_TK,
			    wm, wn, lane);
		/* the buffer written here was read in step kt - 1: done, by the barrier */
		if (!XH && next < nk)
			mkc_mm_store_xf(xs + ns * MKC_MM_TM * MKC_MM_TK, xv);
	}
	mkc_copy_wait();
	__syncthreads();   /* the caller may reuse smem */

	/* c0, c1 at row lane / 4, features 2 (lane % 4) and one more; c2, c3 eight rows down */
	for (int mi = 0; mi < 4; mi++)
		for (int ni = 0; ni < 4; ni += GLU ? 2 : 1)
			for (int h = 0; h < 2; h++) {
				int64_t i = m0 + wm * 64 + mi * 16 + (lane >> 2) + h * 8;
				if (i >= m)
					continue;
				const float *a = &acc[mi][ni][h * 2], *b = &acc[mi][ni + GLU][h * 2];
				if (GLU)
					mkc_mm_put2<YH>(y, ldy, NULL, 0, i,
							n0 + (wn * 2 + ni / 2) * 8 + (lane & 3) * 2, n,
							mkc_ew_f(MKC_EW_SILU_MUL, a[0], b[0]),
						mkc_ew_f(MKC_EW_SILU_MUL, a[1], b[1]));
				else
					mkc_mm_put2<YH>(y, ldy, c, ldc, i, n0 + wn * 32 + ni * 8 + (lane & 3) * 2,
							n, a[0], a[1]);
			}
}

/*
 * A product of few tokens: a step of 2 to MKC_FEW_ROWS tokens runs a plan
 * of its own (compiler/driver.c) whose products are cut as a decode step's
 * (a tile a worker, 16 to 128 weight rows: passes/tile.c), because such a
 * step, like a decode step, is the time it takes to stream every weight
 * once. The tile y[i, j] = sum_k x[i, k] w[j, k] at tokens m0..m (at most
 * MKC_FEW_ROWS) and features n0..n (at most MKC_GEMV_ROWS weight rows; a
 * Glu's n - n0 of each of its two weights, its gate's rows first) turns
 * the chunk tile's roles: the weight's rows are the mma's A operand, 16
 * features a fragment, and the tokens its B, an n8 block for 8 of them, so
 * a tile pays for the features and tokens it has, not 128 of each.
 *
 * Loads, as matvec.cuh's: the 8 warps take the tile's rows 32 at a time
 * (1, 2 or 4 such groups) and split K among the warps of a group in groups
 * of 32 (group g to the group's warp g % splits); in a group a lane loads, straight into registers, 16 bytes
 * of two weight rows (rows r and r + 8 of a 16-row block, r = lane / 4) at
 * k 8 q.. (q = lane % 4) and the same 8 k of token r of each n8 block; x
 * (and a norm's scale) through L1, which the warps of a split of K share
 * (mkc_ld16<MKC_LD_L1>: the tile's weights, read once, leave L1 out).
 * Both operands take the same order of k, which a sum does not notice:
 * of a lane's 8, k 4 s + 0..1 are the k 2 q, 2 q + 1 of k16 slice s and
 * 4 s + 2..3 its k 2 q + 8, 2 q + 9, where the fragments want them. A
 * batch of groups, about MKC_FEW_LOADS 16-byte loads a lane (weights and
 * x), is in flight while the batch before it is summed.
 *
 * Sums: each warp's partial sums of its rows and every token go to shared
 * memory (smem, MKC_FEW_SMEM bytes: 8 warps by 32 rows, the splits of a
 * group of rows side by side), and one thread an output adds the
 * splits' in one order (the result does not depend on timing), adds c (a
 * residual [m, ldc], which may be y itself, or with ldc 0 a bias) or takes
 * silu(gate) * up (SiluMul's expression), and stores float32 or, YH, bf16.
 * A float32 x is rounded to bf16 as it is loaded, as the chunk tile rounds
 * it. Every thread of the block calls it (it synchronises the block).
 *
 * With a norm (NS, the scale's type: NormGemm and NormGlu, passes/
 * fuse_norm.c) x is the float32 rows before RMSNormalization: each loaded
 * x is multiplied by its scale before it is rounded, the first group of
 * rows' warps sum every token's squares of the x they load (together all
 * of K; past smem's sums, MKC_FEW_NORM_SMEM) and the sums of the products
 * are multiplied by the token's 1 / sqrt(mean(x^2) + eps) before the
 * epilogue. The norm rounded x * inv * scale to bf16 where this rounds x *
 * scale: the same relative rounding, not the same bits.
 */
#ifndef MKC_FEW_LOADS
#define MKC_FEW_LOADS 12
#endif
/*
 * The loop's batches in turns (two in flight) for tiles of at most
 * MKC_FEW_PP_NB blocks of 8 tokens, a copy of the next batch into the
 * current one past that. tests/gpu/mma.cu fewt on an H200 (session 35): in
 * turns the Glu tile 34.4 -> 31.5 us at 8 tokens and 43.6 -> 42.2 at 32, no
 * better at 64 (53.9 -> 53.3), where the 64-sequence step was 1% slower.
 */
/* 1: a split of K takes its groups side by side (an experiment, tests/gpu/mma.cu fewt) */
#ifndef MKC_FEW_SPAN
#define MKC_FEW_SPAN 1
#endif
#ifndef MKC_FEW_PP_NB
#define MKC_FEW_PP_NB 4
#endif

/* a lane's 8 k of x at token t (zeros past m): bf16, or float32 rounded (times sc with a norm) */
template <bool XH>
static __device__ __forceinline__ uint4 MKC_UNUSED
mkc_few_x(const uint4 (&v)[XH ? 1 : 2], const float *sc)
{
	if (XH)
		return v[0];
	float f[8];
	const float *p = (const float *)v;
#pragma unroll
	for (int i = 0; i < 8; i++)
		f[i] = sc ? p[i] * sc[i] : p[i];
	return make_uint4(mkc_mm_pack(f[0], f[1]), mkc_mm_pack(f[2], f[3]), mkc_mm_pack(f[4], f[5]),
			  mkc_mm_pack(f[6], f[7]));
}

/* a norm's scale at a lane's 8 k: its 16-byte loads (two of float32, NS = MKC_NORM_F32, or one of bf16) */
template <int NS>
static __device__ __forceinline__ void MKC_UNUSED
mkc_few_scale_load(uint4 (&v)[2], const void *sc, int64_t k, bool on)
{
	if (NS == MKC_NORM_BF16) {
		v[0] = mkc_ld16<MKC_LD_L1>(on ? (const uint16_t *)sc + k : sc, on);
	} else if (NS == MKC_NORM_F32) {
		const float *p = on ? (const float *)sc + k : (const float *)sc;
		v[0] = mkc_ld16<MKC_LD_L1>(p, on);
		v[1] = mkc_ld16<MKC_LD_L1>(p + 4, on);
	}
}

/* ... and as float32 */
template <int NS>
static __device__ __forceinline__ void MKC_UNUSED
mkc_few_scale(float (&f)[8], const uint4 (&v)[2])
{
	const uint32_t u[8] = {v[0].x, v[0].y, v[0].z, v[0].w, v[1].x, v[1].y, v[1].z, v[1].w};
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (NS == MKC_NORM_BF16) {
			f[2 * i] = mkc_rt_bf16((uint16_t)u[i]);
			f[2 * i + 1] = mkc_rt_bf16((uint16_t)(u[i] >> 16));
		} else {
			f[2 * i] = __uint_as_float(u[2 * i]);
			f[2 * i + 1] = __uint_as_float(u[2 * i + 1]);
		}
}

/*
 * Batch loads: groups g0, g0 + st, ... (U of them) of rows r0.. (MB blocks
 * of 16) and of tokens m0.. (NB blocks of 8); a row past nr, a token past
 * m or a group from ge on reads zeros. Row r < nn is w's, the rest u's.
 */
template <int MB, int NB, int U, bool XH, int NS>
static __device__ __forceinline__ void MKC_UNUSED
mkc_few_load(uint4 (&wv)[U][MB][2], uint4 (&xv)[U][NB][XH ? 1 : 2], uint4 (&sv)[U][2],
	     const uint16_t *w, const uint16_t *u, int64_t ldw, int64_t r0, int64_t nr, int64_t nn,
	     const void *x, int64_t ldx, const void *sc, int64_t m, int64_t m0, int64_t g0,
	     int64_t ge, int64_t st)
{
	const int lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
#pragma unroll
	for (int j = 0; j < U; j++) {
		const int64_t g = g0 + st * j, k = g * 32 + q * 8;
		const bool on = g < ge;
		mkc_few_scale_load<NS>(sv[j], sc, k, on);
#pragma unroll
		for (int b = 0; b < MB; b++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int64_t row = r0 + b * 16 + r + h * 8;
				const bool ok = on && row < nr;
				const uint16_t *p = row < nn ? w + row * ldw : u + (row - nn) * ldw;
				wv[j][b][h] = mkc_ld16<true>(ok ? p + k : w, ok);
			}
#pragma unroll
		for (int b = 0; b < NB; b++) {
			const int64_t t = m0 + b * 8 + r;
			const bool ok = on && t < m;
			if (XH) {
				const void *p = ok ? (const uint16_t *)x + t * ldx + k : x;
				xv[j][b][0] = mkc_ld16<MKC_LD_L1>(p, ok);
			} else {
				const float *p = ok ? (const float *)x + t * ldx + k : (const float *)x;
				xv[j][b][0] = mkc_ld16<MKC_LD_L1>(p, ok);
				xv[j][b][XH ? 0 : 1] = mkc_ld16<MKC_LD_L1>(p + 4, ok);
			}
		}
	}
}

/*
 * acc += a batch of U groups: rows (MB blocks of 16) by tokens (NB blocks
 * of 8); with a norm (NS) x times its scale sv, and each token's squares
 * of this lane's x into ss
 */
template <int MB, int NB, int U, bool XH, int NS>
static __device__ __forceinline__ void MKC_UNUSED
mkc_few_sum(float (&acc)[MB][NB][4], float (&ss)[NB], const uint4 (&wv)[U][MB][2],
	    const uint4 (&xv)[U][NB][XH ? 1 : 2], const uint4 (&sv)[U][2])
{
#pragma unroll
	for (int j = 0; j < U; j++) {
		float f[8];
		if (NS != MKC_NORM_NONE)
			mkc_few_scale<NS>(f, sv[j]);
#pragma unroll
		for (int b = 0; b < NB; b++) {
			if (NS != MKC_NORM_NONE) {
				const float *p = (const float *)xv[j][b];
#pragma unroll
				for (int i = 0; i < 8; i++)
					ss[b] += p[i] * p[i];
			}
			const uint4 xb = mkc_few_x<XH>(xv[j][b], NS != MKC_NORM_NONE ? f : NULL);
#pragma unroll
			for (int a = 0; a < MB; a++) {
				const uint4 lo = wv[j][a][0], hi = wv[j][a][1];
				const uint32_t f0[4] = {lo.x, hi.x, lo.y, hi.y};
				const uint32_t f1[4] = {lo.z, hi.z, lo.w, hi.w};
				mkc_mm_mma(acc[a][b], f0, xb.x, xb.y);
				mkc_mm_mma(acc[a][b], f1, xb.z, xb.w);
			}
		}
	}
}

/*
 * this warp's sums of rows r0.. (MB blocks of 16) by tokens m0.. (NB blocks
 * of 8) over split s of ks of K's groups into split s of its sums in smem
 * (a split holds the tile's `rows`, 32 a group of rows); with a norm (NS)
 * each x scaled by sc as it is rounded and, where sq is given, the
 * tokens' sums of squares of the x it loaded into split s of sq (a call
 * of its own: inlined into one function, the six forms took 250
 * registers where each takes 128-173)
 */
template <int MB, int NB, bool XH, int NS>
static __device__ __noinline__ void MKC_UNUSED
mkc_few_rows(float *red, const uint16_t *w, const uint16_t *u, int64_t ldw, int64_t r0,
	     int64_t nr, int64_t nn, const void *x, int64_t ldx, const void *sc, float *sq,
	     int64_t m, int64_t m0, int64_t k, int s, int ks, int rows)
{
	static_assert(!XH || NS == MKC_NORM_NONE, "a norm's rows are float32");
	/* a group's 16-byte loads: two a block of rows, one or two a block of
	 * tokens (a norm's scale, one or two more, hits in cache: not counted) */
	constexpr int LG = 2 * MB + NB * (XH ? 1 : 2);
	constexpr int U = MKC_FEW_LOADS / LG > 0 ? MKC_FEW_LOADS / LG : 1;
	const int lane = threadIdx.x & 31;
	const int64_t ng = k / 32;
	float acc[MB][NB][4] = {}, ss[NB] = {};
	uint4 cw[U][MB][2], nw[U][MB][2], cx[U][NB][XH ? 1 : 2], nx[U][NB][XH ? 1 : 2];
	uint4 cs[U][2], ns[U][2];
#if MKC_FEW_SPAN
	/* split s's groups side by side: a warp reads a row's 64-byte pieces
	 * one after another, not every ks-th of them */
	const int64_t per = (ng + ks - 1) / ks, gb = s * per, st = 1,
		      ge = gb + per < ng ? gb + per : ng;
#else
	const int64_t gb = s, st = ks, ge = ng;   /* split s: groups s, s + ks, ... */
#endif
	mkc_few_load<MB, NB, U, XH, NS>(cw, cx, cs, w, u, ldw, r0, nr, nn, x, ldx, sc, m, m0, gb,
					ge, st);
	if (NB <= MKC_FEW_PP_NB) {
		/* two batches in flight while one is waited for: the loop takes them in
		 * turns, each batch loaded into the registers the one before the last
		 * left, so no copy waits for a load (a batch from ge on reads zeros) */
		for (int64_t g0 = gb; g0 < ge; g0 += 2 * st * U) {
			mkc_few_load<MB, NB, U, XH, NS>(nw, nx, ns, w, u, ldw, r0, nr, nn, x, ldx, sc,
							m, m0, g0 + st * U, ge, st);
			mkc_few_sum<MB, NB, U, XH, NS>(acc, ss, cw, cx, cs);
			if (g0 + st * U >= ge)
				break;
			mkc_few_load<MB, NB, U, XH, NS>(cw, cx, cs, w, u, ldw, r0, nr, nn, x, ldx, sc,
							m, m0, g0 + 2 * st * U, ge, st);
			mkc_few_sum<MB, NB, U, XH, NS>(acc, ss, nw, nx, ns);
		}
	} else {
		for (int64_t g0 = gb; g0 < ge; g0 += st * U) {
			/* the next batch's loads go out before this one is summed */
			mkc_few_load<MB, NB, U, XH, NS>(nw, nx, ns, w, u, ldw, r0, nr, nn, x, ldx, sc,
							m, m0, g0 + st * U, ge, st);
			mkc_few_sum<MB, NB, U, XH, NS>(acc, ss, cw, cx, cs);
#pragma unroll
			for (int j = 0; j < U; j++) {
#pragma unroll
				for (int a = 0; a < MB; a++)
					cw[j][a][0] = nw[j][a][0], cw[j][a][1] = nw[j][a][1];
#pragma unroll
				for (int b = 0; b < NB; b++)
#pragma unroll
					for (int h = 0; h < (XH ? 1 : 2); h++)
						cx[j][b][h] = nx[j][b][h];
				cs[j][0] = ns[j][0], cs[j][1] = ns[j][1];
			}
		}
	}
	/* c0, c1: row lane / 4, tokens 2 (lane % 4) and one more; c2, c3 eight rows down */
#pragma unroll
	for (int a = 0; a < MB; a++)
#pragma unroll
		for (int b = 0; b < NB; b++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int64_t row = r0 + a * 16 + (lane >> 2) + h * 8;
				float *o = red + (s * rows + row) * (MKC_FEW_ROWS + 1) +
					   b * 8 + (lane & 3) * 2;
				if (row < nr) {
					o[0] = acc[a][b][h * 2];
					o[1] = acc[a][b][h * 2 + 1];
				}
			}
	/* a token's squares: its 4 lanes' (k 8 q.. of each group) added */
	if (NS != MKC_NORM_NONE && sq)
#pragma unroll
		for (int b = 0; b < NB; b++) {
			float v = ss[b];
			v += __shfl_xor_sync(0xffffffffu, v, 1);
			v += __shfl_xor_sync(0xffffffffu, v, 2);
			if ((lane & 3) == 0)
				sq[s * MKC_FEW_ROWS + b * 8 + (lane >> 2)] = v;
		}
}

/*
 * the tile's tokens in 1, 2, 4 or 8 blocks of 8 (a float32 x at most 4:
 * its loads are twice a bf16 x's, and in one walk of 8 the callers
 * spilled; mkc_mm_few_tile gives its warps 32 tokens each)
 */
template <int MB, bool XH, int NS>
static __device__ __forceinline__ void MKC_UNUSED
mkc_few_rows_nb(float *red, const uint16_t *w, const uint16_t *u, int64_t ldw, int64_t r0,
		int64_t nr, int64_t nn, const void *x, int64_t ldx, const void *sc, float *sq,
		int64_t m, int64_t m0, int64_t k, int s, int ks, int rows)
{
	if (m - m0 > 32)
		mkc_few_rows<MB, XH ? 8 : 4, XH, NS>(red, w, u, ldw, r0, nr, nn, x, ldx, sc, sq, m, m0,
						     k, s, ks, rows);
	else if (m - m0 > 16)
		mkc_few_rows<MB, 4, XH, NS>(red, w, u, ldw, r0, nr, nn, x, ldx, sc, sq, m, m0, k, s,
					    ks, rows);
	else if (m - m0 > 8)
		mkc_few_rows<MB, 2, XH, NS>(red, w, u, ldw, r0, nr, nn, x, ldx, sc, sq, m, m0, k, s,
					    ks, rows);
	else
		mkc_few_rows<MB, 1, XH, NS>(red, w, u, ldw, r0, nr, nn, x, ldx, sc, sq, m, m0, k, s,
					    ks, rows);
}

/* NS and sc, eps: a norm of x first (MKC_NORM_F32 or _BF16, the scale's type), or none */
template <bool XH, bool GLU, bool YH, int NS = MKC_NORM_NONE>
static __device__ __noinline__ void MKC_UNUSED
mkc_mm_few_tile(void *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w,
		const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m, int64_t n,
		int64_t k, int64_t m0, int64_t n0, void *smem, const void *sc = NULL,
		float eps = 0)
{
	const int64_t nn = n - n0, nr = GLU ? 2 * nn : nn, nt = m - m0;
	float *red = (float *)smem, *sq = red + 8 * 32 * (MKC_FEW_ROWS + 1);
	const uint16_t *pw = w + n0 * ldw, *pu = GLU ? u + n0 * ldw : pw;
	/* the warps as groups of 32 rows by splits of K: a warp's rows go in one
	 * walk of its share of K (walks of 32 rows one after another, each over
	 * K / 8: the 1B shape's Glu tile of 126 rows 45.2 -> 38.0 us, its head's
	 * of 122 rows 304 -> 231 us; tests/gpu/mma.cu on an H100, session 31) */
	const int rg = nr > 64 ? 4 : nr > 32 ? 2 : 1, ks0 = MKC_THREADS / 32 / rg;
	const int warp = threadIdx.x >> 5, r0 = warp / ks0 * 32, left = (int)nr - r0, rows = 32 * rg;
	/* a float32 x of more than 32 tokens: a group's warps in two halves,
	 * each 32 of the tokens over K in half as many splits, so the weights
	 * stream once (the halves read each row about together: the second
	 * from L2), where a warp walked them twice, 32 tokens a walk */
	const int hv = !XH && nt > 32 ? 2 : 1, ks = ks0 / hv, s = warp % ks0 % ks,
		  h = warp % ks0 / ks;
	float *wsq = NS != MKC_NORM_NONE && r0 == 0 ? sq + h * 32 : NULL;   /* the first group's */
	if (left > 16)
		mkc_few_rows_nb<2, XH, NS>(red + h * 32, pw, pu, ldw, r0, nr, nn, x, ldx, sc, wsq, m,
					   m0 + h * 32, k, s, ks, rows);
	else if (left > 0)
		mkc_few_rows_nb<1, XH, NS>(red + h * 32, pw, pu, ldw, r0, nr, nn, x, ldx, sc, wsq, m,
					   m0 + h * 32, k, s, ks, rows);
	__syncthreads();
	/* an output a thread, neighbouring threads neighbouring features of a token */
	for (int64_t i = threadIdx.x; i < nn * nt; i += MKC_THREADS) {
		const int64_t t = i / nn, f = i % nn;
		float s = 0, s2 = 0;
		for (int v = 0; v < ks; v++) {
			s += red[(v * rows + f) * (MKC_FEW_ROWS + 1) + t];
			if (GLU)
				s2 += red[(v * rows + nn + f) * (MKC_FEW_ROWS + 1) + t];
		}
		if (NS != MKC_NORM_NONE) {
			float q = 0;
			for (int v = 0; v < ks; v++)
				q += sq[v * MKC_FEW_ROWS + t];
			const float inv = 1.0f / sqrtf(q / (float)k + eps);
			s *= inv;
			s2 *= inv;
		}
		const int64_t at = (m0 + t) * ldy + n0 + f;
		float o = GLU ? mkc_ew_f(MKC_EW_SILU_MUL, s, s2) : c ? c[(m0 + t) * ldc + n0 + f] + s : s;
		if (YH)
			((uint16_t *)y)[at] = (uint16_t)mkc_mm_pack(o, 0.0f);
		else
			((float *)y)[at] = o;
	}
	__syncthreads();   /* the caller may reuse smem */
}

/*
 * The same tile by Hopper's wgmma (sm_90a: nvcc's
 * __CUDA_ARCH_FEAT_SM90_ALL) for a bf16 x (passes/narrow.c): the block's
 * two warpgroups take 64 tokens each, all MKC_MM_TN features, one
 * m64n128k16 a k16 slice with both operands read from shared memory by
 * descriptor; the sums in 64 registers a thread laid out as mma.sync's
 * (warp w of the group rows 16 w.., n8 block j in registers 4 j..4 j + 3).
 * The stages are mkc_mm_load's, which are the 128-byte-swizzled K-major
 * layout the instruction reads once a stage starts on 1024 bytes: 8-row
 * groups 1024 bytes apart, a k16 slice 32 bytes further along the row.
 * MKC_MM_STAGES steps in flight; the tensor cores are waited for at the
 * end of each step, so a stage is free when the next barrier is passed.
 *
 * A float32 x stays on mma.sync: built from float32 rows staged by cp.async
 * and rounded in registers, wgmma measured no faster than mma.sync, both
 * bound by the twice as many bytes (tests/gpu/mma.cu on an H200, session
 * 20: 113-181 TFLOPS against mma.sync's 129-191; a bf16 x 198-331).
 *
 * cp.async writes shared memory through the generic proxy and wgmma reads
 * it through the async one: each thread fences its landed copies before
 * the barrier that shows them to the block. ptxas serialises the wgmma
 * instructions of a function that is called rather than inlined (its
 * C7510 note; the megakernel's bodies are): about 10% of the tile's rate
 * in tests/gpu/mma.cu.
 */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MKC_WGMMA 1

/* a K-major operand at p: 128-byte swizzle, 8-row groups 1024 bytes apart */
static __device__ __forceinline__ uint64_t MKC_UNUSED
mkc_wg_desc(const void *p)
{
	uint64_t a = mkc_mm_saddr(p);
	return ((a & 0x3ffff) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

/* d += A B^T over one k16 slice, both by descriptor */
static __device__ __forceinline__ void MKC_UNUSED
mkc_wg_mma(float (&d)[64], uint64_t da, uint64_t db)
{
#define MKC_WG_D8(i)                                                                             \
	"+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
		"+f"(d[i + 6]), "+f"(d[i + 7])
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
		     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
		     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
		     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
		     "%64, %65, p, 1, 1, 0, 0;\n}\n"
		     : MKC_WG_D8(0), MKC_WG_D8(8), MKC_WG_D8(16), MKC_WG_D8(24), MKC_WG_D8(32),
		       MKC_WG_D8(40), MKC_WG_D8(48), MKC_WG_D8(56)
		     : "l"(da), "l"(db));
#undef MKC_WG_D8
}

/* the sums stay where the instructions put them: nothing moves them in between */
static __device__ __forceinline__ void MKC_UNUSED
mkc_wg_pin(float (&d)[64])
{
	for (int i = 0; i < 64; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

/* d += A B^T over one k16 slice, N = 256, both by descriptor */
static __device__ __forceinline__ void MKC_UNUSED
mkc_wg_mma(float (&d)[128], uint64_t da, uint64_t db)
{
#define MKC_WG_D8(i)                                                                             \
	"+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
		"+f"(d[i + 6]), "+f"(d[i + 7])
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
		     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
		     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
		     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
		     "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
		     "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
		     "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, "
		     "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
		     "%123, %124, %125, %126, %127}, "
		     "%128, %129, p, 1, 1, 0, 0;\n}\n"
		     : MKC_WG_D8(0), MKC_WG_D8(8), MKC_WG_D8(16), MKC_WG_D8(24), MKC_WG_D8(32),
		       MKC_WG_D8(40), MKC_WG_D8(48), MKC_WG_D8(56), MKC_WG_D8(64), MKC_WG_D8(72),
		       MKC_WG_D8(80), MKC_WG_D8(88), MKC_WG_D8(96), MKC_WG_D8(104), MKC_WG_D8(112),
		       MKC_WG_D8(120)
		     : "l"(da), "l"(db));
#undef MKC_WG_D8
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_wg_pin(float (&d)[128])
{
#pragma unroll
	for (int i = 0; i < 128; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

template <bool GLU, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_wgmma_tile(void *y, int64_t ldy, const uint16_t *x, int64_t ldx, const uint16_t *w,
	       const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m, int64_t n,
	       int64_t k, int64_t m0, int64_t n0, void *smem)
{
	constexpr int STAGE = MKC_MM_TM * MKC_MM_TK;   /* bf16 elements of an operand's stage */
	const int nk = (int)(k / MKC_MM_TK);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = warp >> 2;
	uint16_t *ws = (uint16_t *)(((uintptr_t)smem + 1023) & ~(uintptr_t)1023);
	uint16_t *xs = ws + MKC_MM_STAGES * STAGE;
	float d[64];
	for (int i = 0; i < 64; i++)
		d[i] = 0.f;

	for (int s = 0; s < MKC_MM_STAGES - 1; s++) {
		if (s < nk) {
			mkc_mm_load<GLU>(ws + s * STAGE, w, u, ldw, n, n0, s * MKC_MM_TK);
			mkc_mm_load<false>(xs + s * STAGE, x, NULL, ldx, m, m0, s * MKC_MM_TK);
		}
		mkc_copy_commit();
	}
	for (int kt = 0; kt < nk; kt++) {
		mkc_copy_wait_but<MKC_MM_STAGES - 2>();
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		__syncthreads();
		int next = kt + MKC_MM_STAGES - 1, ns = next % MKC_MM_STAGES;
		if (next < nk) {
			mkc_mm_load<GLU>(ws + ns * STAGE, w, u, ldw, n, n0, (int64_t)next * MKC_MM_TK);
			mkc_mm_load<false>(xs + ns * STAGE, x, NULL, ldx, m, m0,
					   (int64_t)next * MKC_MM_TK);
		}
		mkc_copy_commit();
		int cs = kt % MKC_MM_STAGES;
		const uint16_t *wst = ws + cs * STAGE, *xst = xs + cs * STAGE + g * 64 * MKC_MM_TK;
		mkc_wg_pin(d);
		asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
		for (int kk = 0; kk < MKC_MM_TK / 16; kk++)
			mkc_wg_mma(d, mkc_wg_desc(xst + kk * 16), mkc_wg_desc(wst + kk * 16));
		asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
		mkc_wg_pin(d);
	}
	mkc_copy_wait();
	__syncthreads();   /* the caller may reuse smem */

	/* d[4 j + e]: row 16 (warp % 4) + lane / 4 (+ 8 for e >= 2), feature 8 j + 2 (lane % 4) + e % 2 */
	for (int j = 0; j < MKC_MM_TN / 8; j += GLU ? 2 : 1)
		for (int h = 0; h < 2; h++) {
			int64_t i = m0 + g * 64 + (warp & 3) * 16 + (lane >> 2) + h * 8;
			if (i >= m)
				continue;
			const float *a = &d[j * 4 + h * 2], *b = &d[(j + GLU) * 4 + h * 2];
			if (GLU)
				mkc_mm_put2<YH>(y, ldy, NULL, 0, i, n0 + j / 2 * 8 + (lane & 3) * 2, n,
						mkc_ew_f(MKC_EW_SILU_MUL, a[0], b[0]),
						mkc_ew_f(MKC_EW_SILU_MUL, a[1], b[1]));
			else
				mkc_mm_put2<YH>(y, ldy, c, ldc, i, n0 + j * 8 + (lane & 3) * 2, n, a[0],
						a[1]);
		}
}

/*
 * The tile with its operands brought by the Tensor Memory Accelerator
 * (sm_90a): MKC_MM_TM tokens by TN weight rows (128 or 256; a Glu's TN / 2
 * features of the gate and of the up weight), ST stages of one K step.
 * Why: the cp.async tiles above issue an operand's 1024 16-byte copies
 * from every thread, each with its own 64-bit address, wait for the tensor
 * cores at the end of every step, and pass a block barrier a step. Here
 * one thread asks for a whole stage (a box of x, boxes of the weights) and
 * an mbarrier counts its bytes in; the warpgroups wait on that barrier
 * only, keep one step of wgmma in flight while the next starts, and each
 * warp says on a second barrier that a stage is free once the step that
 * read it has retired; the asking thread waits there before it reuses
 * one. tests/gpu/mma.cu (H100, session 28, behind a call as in the
 * megakernel): the 1024-token chunk's Glu 311 -> 366 TFLOPS at 128 rows,
 * 498 at 256 rows (the re-reads from L2 a third fewer); down_proj 311 ->
 * 392 at 128 rows, 302 at 256 (64 tiles for 132 workers).
 *
 * The operands are named by tensor maps (tma.h's struct mkc_tmap, in
 * global memory, made on the host by the driver's cuTensorMapEncodeTiled):
 * bf16, dims {k, rows}, boxes of {64, 128} for x and {64, MKC_TMA_WROWS}
 * for a weight (a tile asks for TN / 64 of them; a Glu's half from each
 * weight), 128-byte swizzle, which lands a box in the layout mkc_wg_desc
 * describes. Rows past a map's rows arrive as zeros; x's rows past m (the
 * step's tokens) are read but not stored. Shared memory:
 * ST * (MKC_MM_TM + TN) * 128 bytes from the first 1024-byte boundary,
 * then 2 * ST barriers (runtime/limits.h's MKC_MM_RING_SMEM).
 *
 * x is written by other workers through the generic proxy and read here
 * through the async one: the thread that asks fences (fence.proxy.async)
 * after the task's wait acquired it. The barriers are made anew at each
 * tile (the shared memory is every body's), after a block barrier, and
 * every copy asked for has landed before the tile returns.
 */

static __device__ __forceinline__ void MKC_UNUSED
mkc_bar_init(uint64_t *b, int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mkc_mm_saddr(b)), "r"(count)
		     : "memory");
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_bar_arrive(uint64_t *b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mkc_mm_saddr(b)) : "memory");
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_bar_expect(uint64_t *b, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mkc_mm_saddr(b)),
		     "r"(bytes)
		     : "memory");
}

/* until the barrier's phase of this parity has completed */
static __device__ __forceinline__ void MKC_UNUSED
mkc_bar_wait(uint64_t *b, int parity)
{
	uint32_t done;
	do
		asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
			     "selp.u32 %0, 1, 0, p;\n}\n"
			     : "=r"(done)
			     : "r"(mkc_mm_saddr(b)), "r"(parity)
			     : "memory");
	while (!done);
}

/* the box of map at {c0, c1} (c0 the inner, k) into s; its bytes counted on b */
static __device__ __forceinline__ void MKC_UNUSED
mkc_tma_load(void *s, const void *map, int c0, int c1, uint64_t *b)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
		     "[%0], [%1, {%2, %3}], [%4];" ::"r"(mkc_mm_saddr(s)),
		     "l"(map), "r"(c0), "r"(c1), "r"(mkc_mm_saddr(b))
		     : "memory");
}

template <int TN, int ST, bool GLU, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_tma_tile(void *y, int64_t ldy, const void *xm, const void *wm, const void *um,
	     const float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, int64_t m0, int64_t n0,
	     void *smem)
{
	static_assert(TN == 128 || TN == 256, "a box has at most 256 rows");
	constexpr int XS = MKC_MM_TM * MKC_MM_TK, WS = TN * MKC_MM_TK, NB = TN / 8;
	constexpr uint32_t BYTES = (XS + WS) * 2;
	const int nk = (int)(k / MKC_MM_TK);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = warp >> 2;
	uint16_t *ws = (uint16_t *)(((uintptr_t)smem + 1023) & ~(uintptr_t)1023);
	uint16_t *xs = ws + ST * WS;
	uint64_t *full = (uint64_t *)(xs + ST * XS), *empty = full + ST;
	/* x in one box of 128 rows; a weight in boxes of MKC_TMA_WROWS rows */
	auto ask = [&](int step, int slot) {
		const int k0 = step * MKC_MM_TK;
		uint16_t *wd = ws + slot * WS;
		mkc_bar_expect(&full[slot], BYTES);
		mkc_tma_load(xs + slot * XS, xm, k0, (int)m0, &full[slot]);
		for (int b = 0; b < (GLU ? TN / 2 : TN) / MKC_TMA_WROWS; b++) {
			mkc_tma_load(wd + b * MKC_TMA_WROWS * MKC_MM_TK, wm, k0,
				     (int)n0 + b * MKC_TMA_WROWS, &full[slot]);
			if (GLU)
				mkc_tma_load(wd + WS / 2 + b * MKC_TMA_WROWS * MKC_MM_TK, um, k0,
					     (int)n0 + b * MKC_TMA_WROWS, &full[slot]);
		}
	};
	if (tid == 0) {
		for (int s = 0; s < ST; s++) {
			mkc_bar_init(&full[s], 1);
			mkc_bar_init(&empty[s], MKC_THREADS / 32);   /* a lane of each warp */
		}
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (tid == 0) {
		/* x came through the generic proxy; what the last body wrote here too */
		asm volatile("fence.proxy.async.global;" ::: "memory");
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		for (int s = 0; s < ST && s < nk; s++)
			ask(s, s);
	}
	float d[NB * 4];
#pragma unroll
	for (int i = 0; i < NB * 4; i++)
		d[i] = 0.f;
	for (int kt = 0; kt < nk; kt++) {
		const int slot = kt % ST;
		mkc_bar_wait(&full[slot], (kt / ST) & 1);
		const uint16_t *wst = ws + slot * WS, *xst = xs + slot * XS + g * 64 * MKC_MM_TK;
		mkc_wg_pin(d);
		asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
		for (int kk = 0; kk < MKC_MM_TK / 16; kk++)
			mkc_wg_mma(d, mkc_wg_desc(xst + kk * 16), mkc_wg_desc(wst + kk * 16));
		asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
		mkc_wg_pin(d);
		if (kt > 0) {   /* step kt - 1 has retired: its stage is free */
			const int ps = (kt - 1) % ST;
			if (lane == 0)
				mkc_bar_arrive(&empty[ps]);
			if (tid == 0 && kt - 1 + ST < nk) {
				mkc_bar_wait(&empty[ps], ((kt - 1) / ST) & 1);
				ask(kt - 1 + ST, ps);
			}
			__syncwarp();   /* the next wgmma is the whole warp's */
		}
	}
	asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
	mkc_wg_pin(d);
	__syncthreads();   /* every barrier's last use is behind us */
	if (tid == 0)
		for (int s = 0; s < 2 * ST; s++)   /* before the memory is anything else */
			asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(mkc_mm_saddr(&full[s]))
				     : "memory");

	/* d[4 j + e]: row 16 (warp % 4) + lane / 4 (+ 8 for e >= 2), stage row 8 j + 2 (lane % 4) + e % 2;
	 * a Glu's up twin of gate row r is stage row TN / 2 + r */
#pragma unroll
	for (int j = 0; j < (GLU ? NB / 2 : NB); j++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			int64_t i = m0 + g * 64 + (warp & 3) * 16 + (lane >> 2) + h * 8;
			if (i >= m)
				continue;
			const float *a = &d[j * 4 + h * 2], *b = &d[(j + NB / 2) * 4 + h * 2];
			if (GLU)
				mkc_mm_put2<YH>(y, ldy, NULL, 0, i, n0 + j * 8 + (lane & 3) * 2, n,
						mkc_ew_f(MKC_EW_SILU_MUL, a[0], b[0]),
						mkc_ew_f(MKC_EW_SILU_MUL, a[1], b[1]));
			else
				mkc_mm_put2<YH>(y, ldy, c, ldc, i, n0 + j * 8 + (lane & 3) * 2, n, a[0],
						a[1]);
		}
	__syncthreads();   /* the caller may reuse smem */
}
#else
/* no wgmma on this architecture (or the host's pass): a plan never calls it there */
template <int TN, int ST, bool GLU, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_tma_tile(void *y, int64_t ldy, const void *xm, const void *wm, const void *um,
	     const float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, int64_t m0, int64_t n0,
	     void *smem)
{
	__trap();
}
#endif

/* the tile without maps: by cp.async for a bf16 x on sm_90a, else mma.sync */
template <bool XH, bool GLU, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mma_tile_copied(void *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w,
		    const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m,
		    int64_t n, int64_t k, int64_t m0, int64_t n0, void *smem)
{
#if MKC_WGMMA
	if (XH) {
		mkc_wgmma_tile<GLU, YH>(y, ldy, (const uint16_t *)x, ldx, w, u, ldw, c, ldc, m, n, k,
					m0, n0, smem);
		return;
	}
#endif
	mkc_mma_sync_tile<XH, GLU, YH>(y, ldy, x, ldx, w, u, ldw, c, ldc, m, n, k, m0, n0, smem);
}

/*
 * The tile: for a bf16 x where the build is for sm_90a, by TMA where x's and
 * the weights' tensor maps are given (xm, wm, and um for a Glu; the
 * emitted file makes them on the host, exec.cuh's mkc_tmaps), else by
 * cp.async; else mma.sync. A Glu tile of more than MKC_MM_TN / 2 features
 * (passes/tile.c's wide_glu, MKC_MM_WIDE_SMEM) is one TMA tile of twice
 * the weight rows, or without maps two of the usual width.
 */
template <bool XH, bool GLU, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mma_tile(void *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w,
	     const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m, int64_t n,
	     int64_t k, int64_t m0, int64_t n0, void *smem, const void *xm = NULL,
	     const void *wm = NULL, const void *um = NULL)
{
	const bool wide = GLU && n - n0 > MKC_MM_TN / 2;
#if MKC_WGMMA
	if (XH && xm && wm && (um || !GLU)) {
		if (wide)
			mkc_tma_tile<2 * MKC_MM_TN, MKC_MM_STAGES, GLU, YH>(y, ldy, xm, wm, um, c, ldc,
									    m, n, k, m0, n0, smem);
		else
			mkc_tma_tile<MKC_MM_TN, MKC_MM_STAGES, GLU, YH>(y, ldy, xm, wm, um, c, ldc, m,
									n, k, m0, n0, smem);
		return;
	}
#else
	(void)xm, (void)wm, (void)um;
#endif
	const int64_t half = n0 + MKC_MM_TN / 2;
	mkc_mma_tile_copied<XH, GLU, YH>(y, ldy, x, ldx, w, u, ldw, c, ldc, m, wide ? half : n, k,
					 m0, n0, smem);
	if (wide)
		mkc_mma_tile_copied<XH, GLU, YH>(y, ldy, x, ldx, w, u, ldw, c, ldc, m, n, k, m0,
						 half, smem);
}

/*
 * A chunk's attention on tensor cores: query heads h0..h1 at positions
 * s0..s1 (at most 128: a block of the chunk's rows, passes/tile.c) of
 *
 *   y[h, s, :] = softmax(q[h, s, :] . k[kh, t, :] * scale) v[kh, t, :]
 *                over t < L (causal 0) or t <= L - Sq + s (causal 2)
 *
 * kh = h / (Hq / Hk), as attention.cuh's mkc_attn_chunk, which this
 * replaces where the products already run on tensor cores (their rounding
 * to bf16 is the model's; emit_ops.c decides).
 *
 * Warp w takes the 16 rows s0 + 16 w..: its queries, scaled by scale *
 * log2(e) and rounded to bf16, stay in registers as A fragments for the
 * whole walk. The keys come MKC_MA_BK at a time: the block stages that
 * many keys and values in shared memory as bf16 (a float32 cache is
 * rounded on the way), rows of D values XOR-swizzled by 16-byte chunks as
 * the product tile's, in two stages at a head size of 64: the next
 * block's loads are issued into registers before this block computes and
 * stored into the other stage after it, so their latency hides behind the
 * mma (8-12% faster alone on an H100, session 30; at 128 those registers
 * would spill, and a block is loaded where it is used). Then each
 * warp
 *   - scores its rows against the block's keys: S = Q K^T by mma, the keys
 *     as column-major B fragments straight from their rows by ldmatrix;
 *   - masks what its rows may not see (a block that every row of the warp
 *     sees whole is not masked), and folds the block into a running
 *     maximum and sum a row (an online softmax in base 2);
 *   - adds P V: P's float32 sums become the A fragments of the next mma
 *     where they lie (the accumulator's layout is the operand's), V's
 *     fragments by ldmatrix.trans.
 * A block past a warp's last visible key is loaded (the block's warps
 * share it) but not computed. The head size is a multiple of 64, at most
 * 128; smem holds MKC_MA_SMEM(D) bytes. Every thread of the block calls
 * it (it synchronises the block).
 */
#define MKC_MA_BK 64
#define MKC_MA_SMEM(D) (2 * 2 * MKC_MA_BK * (D) * 2)   /* two stages of keys and values */
static_assert(MKC_MA_SMEM(128) <= MKC_MM_SMEM, "the attention's stages fit the tile's memory");

/* the bf16 element offset of 16-byte chunk c of row r in rows of D values */
template <int D>
static __device__ __forceinline__ int MKC_UNUSED
mkc_ma_swz(int r, int c)
{
	return r * D + (((c & ~7) | ((c & 7) ^ (r & 7))) << 3);
}

/*
 * Eight values of a cache row in flight: loaded (zeros when !on), later
 * stored to shared memory as bf16 (a float32 cache's rounded on the way),
 * so that a block's loads can be issued before the block ahead computes.
 */
template <typename T>
struct mkc_ma_raw {
	uint4 x[sizeof(T) / 2];
};

template <typename T>
static __device__ __forceinline__ void MKC_UNUSED
mkc_ma_load(mkc_ma_raw<T> &r, const T *p, bool on)
{
	for (int i = 0; i < (int)(sizeof(T) / 2); i++)
		r.x[i] = mkc_ld16<false>(p + i * (16 / sizeof(T)), on);
}

static __device__ __forceinline__ uint4 MKC_UNUSED
mkc_ma_bf16(const mkc_ma_raw<float> &r)
{
	return make_uint4(mkc_mm_pack(__uint_as_float(r.x[0].x), __uint_as_float(r.x[0].y)),
			  mkc_mm_pack(__uint_as_float(r.x[0].z), __uint_as_float(r.x[0].w)),
			  mkc_mm_pack(__uint_as_float(r.x[1].x), __uint_as_float(r.x[1].y)),
			  mkc_mm_pack(__uint_as_float(r.x[1].z), __uint_as_float(r.x[1].w)));
}

static __device__ __forceinline__ uint4 MKC_UNUSED
mkc_ma_bf16(const mkc_ma_raw<uint16_t> &r)
{
	return r.x[0];
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_ldsm4t(uint32_t (&r)[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

/* a block's rows of keys and values, NL loads of 16 bytes a thread each, for keys t0.. */
template <int D, int NL, typename T>
static __device__ __forceinline__ void MKC_UNUSED
mkc_ma_fetch(mkc_ma_raw<T> (&rk)[NL], mkc_ma_raw<T> (&rv)[NL], const T *kb, int64_t kst,
	     const T *vb, int64_t vst, int64_t t0, int64_t gend)
{
#pragma unroll
	for (int i = 0; i < NL; i++) {
		const int j = threadIdx.x + i * MKC_THREADS, r = j / (D / 8), c = j % (D / 8);
		const bool on = t0 + r < gend;
		const int64_t t = on ? t0 + r : 0;
		mkc_ma_load(rk[i], kb + t * kst + c * 8, on);
		mkc_ma_load(rv[i], vb + t * vst + c * 8, on);
	}
}

/* ... stored as bf16 into a stage: kt, then vt, BK rows of D each, swizzled */
template <int D, int NL, typename T>
static __device__ __forceinline__ void MKC_UNUSED
mkc_ma_put(uint16_t *kt, uint16_t *vt, const mkc_ma_raw<T> (&rk)[NL],
	   const mkc_ma_raw<T> (&rv)[NL])
{
#pragma unroll
	for (int i = 0; i < NL; i++) {
		const int j = threadIdx.x + i * MKC_THREADS, r = j / (D / 8), c = j % (D / 8);
		*(uint4 *)(kt + mkc_ma_swz<D>(r, c)) = mkc_ma_bf16(rk[i]);
		*(uint4 *)(vt + mkc_ma_swz<D>(r, c)) = mkc_ma_bf16(rv[i]);
	}
}

/* 2^x by the special function unit alone (denormal results flushed to 0;
 * exp2f adds a range check and two multiplies to each, which at a head size
 * of 64 was a tenth of the block's instructions) */
static __device__ __forceinline__ float MKC_UNUSED
mkc_ma_exp2(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

template <int D, typename T, bool YH>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_chunk_mma(const float *q, const int64_t *qs, const T *k, const int64_t *ks, const T *v,
		   const int64_t *vs, void *y, const int64_t *ys, int64_t Hq, int64_t Hk,
		   int64_t Sq, int64_t L, int causal, int64_t h0, int64_t h1, int64_t s0,
		   int64_t s1, float scale, void *smem)
{
	static_assert(D % 64 == 0 && D <= 128, "the head size is 64 or 128");
	static_assert(MKC_THREADS / 32 * 16 >= 128, "a warp a 16 rows of the block");
	constexpr int BK = MKC_MA_BK, NC = D / 8, NT = BK / 8, NL = BK * NC / MKC_THREADS;
	static_assert(NL * MKC_THREADS == BK * NC, "a block's rows in whole loads a thread");
	/* the next block in registers (32 a thread at D 64); at D 128 they
	 * would not fit beside the sums without spills: one stage, loaded
	 * where it is used */
	constexpr bool PF = D <= 64;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
	const float sl = scale * 1.4426950408889634f;
	const int64_t r0 = s0 + warp * 16;                       /* the warp's first row */
	const int64_t past = causal == 2 ? L - Sq : L;           /* row s sees t < past + s + 1 */
	const int64_t gend = causal == 2 ? past + s1 : L;        /* the block's last key + 1 */
	const int64_t wend = r0 >= s1 ? 0 : causal == 2 ? past + (r0 + 16 < s1 ? r0 + 16 : s1) : L;
	/* every row of the warp sees the keys below wall: a block below it is not masked */
	const int64_t wall = causal == 2 ? (past + r0 + 1 < gend ? past + r0 + 1 : gend) : L;
	const int nb = (int)((gend + BK - 1) / BK);
	for (int64_t h = h0; h < h1; h++) {
		const T *kb = k + h / (Hq / Hk) * ks[1], *vb = v + h / (Hq / Hk) * vs[1];
		uint32_t qa[D / 16][4];
		for (int kk = 0; kk < D / 16; kk++)
			for (int e = 0; e < 4; e++) {
				const int64_t s = r0 + g + (e & 1) * 8;
				const int c = kk * 16 + tq * 2 + (e >> 1) * 8;
				float2 x = make_float2(0.f, 0.f);
				if (s < s1)
					x = *(const float2 *)(q + h * qs[1] + s * qs[2] + c);
				qa[kk][e] = mkc_mm_pack(x.x * sl, x.y * sl);
			}
		float o[D / 8][4] = {}, mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f};
		mkc_ma_raw<T> rk[NL], rv[NL];
		__syncthreads();   /* the last head's blocks are used up */
		if (PF) {
			mkc_ma_fetch<D, NL, T>(rk, rv, kb, ks[2], vb, vs[2], 0, gend);
			mkc_ma_put<D, NL, T>((uint16_t *)smem, (uint16_t *)smem + BK * D, rk, rv);
		}
		for (int b = 0; b < nb; b++) {
			const int64_t t0 = (int64_t)b * BK;
			const uint16_t *kt = (const uint16_t *)smem + (PF ? b & 1 : 0) * 2 * BK * D;
			const uint16_t *vt = kt + BK * D;
			if (!PF) {   /* the last block is used up: this one in its place */
				if (b)
					__syncthreads();
				mkc_ma_fetch<D, NL, T>(rk, rv, kb, ks[2], vb, vs[2], t0, gend);
				mkc_ma_put<D, NL, T>((uint16_t *)smem, (uint16_t *)smem + BK * D, rk, rv);
			}
			__syncthreads();   /* block b is in; the other stage is used up */
			if (PF && b + 1 < nb)   /* block b + 1 in flight while b computes */
				mkc_ma_fetch<D, NL, T>(rk, rv, kb, ks[2], vb, vs[2], t0 + BK, gend);
			if (t0 < wend) {
				float sc[NT][4] = {};
				for (int kk = 0; kk < D / 16; kk++)
					for (int nj = 0; nj < NT / 2; nj++) {
						uint32_t bf[4];
						int r = nj * 16 + (lane & 7) + ((lane >> 4) << 3);
						mkc_mm_ldsm4(bf, mkc_mm_saddr(kt + mkc_ma_swz<D>(r, kk * 2 + ((lane >> 3) & 1))));
						mkc_mm_mma(sc[2 * nj], qa[kk], bf[0], bf[1]);
						mkc_mm_mma(sc[2 * nj + 1], qa[kk], bf[2], bf[3]);
					}
				/* c0, c1: row g, keys 2 tq and one more of the 8; c2, c3: row g + 8.
				 * A block that every row of the warp sees whole skips the mask
				 * (a branch the warp takes as one): a lane's rows see keys t0 + j
				 * for j below vis, compared as ints */
				if (t0 + BK > wall) {
					int vis[2];
#pragma unroll
					for (int a = 0; a < 2; a++) {
						const int64_t s = r0 + g + a * 8;
						int64_t n = causal == 2 ? past + s + 1 : L;
						n = (n < gend ? n : gend) - t0 - tq * 2;
						vis[a] = n < 0 ? 0 : n > BK ? BK : (int)n;
					}
#pragma unroll
					for (int j = 0; j < NT; j++)
#pragma unroll
						for (int e = 0; e < 4; e++)
							if (j * 8 + (e & 1) >= vis[e >> 1])
								sc[j][e] = -INFINITY;
				}
				float bm[2] = {-INFINITY, -INFINITY};
#pragma unroll
				for (int j = 0; j < NT; j++)
#pragma unroll
					for (int e = 0; e < 4; e++)
						bm[e >> 1] = fmaxf(bm[e >> 1], sc[j][e]);
				/* the new maxima; ms: one a row that is finite (a row that has
				 * seen no key yet has only -inf scores, whose exponentials are 0) */
				float rs[2], ps[2] = {0.f, 0.f}, ms[2];
#pragma unroll
				for (int a = 0; a < 2; a++) {
					bm[a] = fmaxf(bm[a], __shfl_xor_sync(0xffffffffu, bm[a], 1));
					bm[a] = fmaxf(bm[a], __shfl_xor_sync(0xffffffffu, bm[a], 2));
					const float nm = fmaxf(mx[a], bm[a]);
					rs[a] = nm == -INFINITY ? 1.f : mkc_ma_exp2(mx[a] - nm);
					mx[a] = nm;
					ms[a] = nm == -INFINITY ? 0.f : nm;
				}
#pragma unroll
				for (int j = 0; j < NT; j++)
#pragma unroll
					for (int e = 0; e < 4; e++) {
						sc[j][e] = mkc_ma_exp2(sc[j][e] - ms[e >> 1]);
						ps[e >> 1] += sc[j][e];
					}
				for (int a = 0; a < 2; a++)
					sum[a] = sum[a] * rs[a] + ps[a];
				for (int j = 0; j < D / 8; j++)
					for (int e = 0; e < 4; e++)
						o[j][e] *= rs[e >> 1];
				for (int kk = 0; kk < BK / 16; kk++) {
					const uint32_t pa[4] = {mkc_mm_pack(sc[2 * kk][0], sc[2 * kk][1]),
								mkc_mm_pack(sc[2 * kk][2], sc[2 * kk][3]),
								mkc_mm_pack(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
								mkc_mm_pack(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
					for (int nd = 0; nd < D / 16; nd++) {
						uint32_t bf[4];
						int r = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
						mkc_mm_ldsm4t(bf, mkc_mm_saddr(vt + mkc_ma_swz<D>(r, nd * 2 + (lane >> 4))));
						mkc_mm_mma(o[2 * nd], pa, bf[0], bf[1]);
						mkc_mm_mma(o[2 * nd + 1], pa, bf[2], bf[3]);
					}
				}
			}
			if (PF && b + 1 < nb) {
				uint16_t *kn = (uint16_t *)smem + ((b + 1) & 1) * 2 * BK * D;
				mkc_ma_put<D, NL, T>(kn, kn + BK * D, rk, rv);
			}
		}
		for (int a = 0; a < 2; a++) {
			sum[a] += __shfl_xor_sync(0xffffffffu, sum[a], 1);
			sum[a] += __shfl_xor_sync(0xffffffffu, sum[a], 2);
		}
		for (int a = 0; a < 2; a++) {
			const int64_t s = r0 + g + a * 8;
			if (s >= s1)
				continue;
			const int64_t at = h * ys[1] + s * ys[2] + tq * 2;
			for (int j = 0; j < D / 8; j++) {
				const float y0 = o[j][2 * a] / sum[a], y1 = o[j][2 * a + 1] / sum[a];
				if (YH)
					*(uint32_t *)((uint16_t *)y + at + j * 8) = mkc_mm_pack(y0, y1);
				else
					*(float2 *)((float *)y + at + j * 8) = make_float2(y0, y1);
			}
		}
	}
	__syncthreads();   /* the caller may reuse smem */
}

/*
 * The tile's views (attention.cuh's mkc_attn_chunk_tile's form); T: the
 * caches' type; YH: y stored as bf16 (passes/narrow.c: o_proj's x).
 */
template <int D, typename T, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_attn_chunk_mma_tile(const mkc_view *q, const mkc_view *k, const mkc_view *v, const mkc_view *y,
			int causal, int64_t h0, int64_t h1, int64_t s0, int64_t s1, float scale,
			void *smem)
{
	const int64_t qs[3] = {q->s[0], q->s[1], q->s[2]}, ks[3] = {k->s[0], k->s[1], k->s[2]};
	const int64_t vs[3] = {v->s[0], v->s[1], v->s[2]}, ys[3] = {y->s[0], y->s[1], y->s[2]};
	mkc_attn_chunk_mma<D, T, YH>((const float *)q->p, qs, (const T *)k->p, ks, (const T *)v->p, vs,
				     (void *)y->p, ys, q->d[1], k->d[1], q->d[2], k->d[2], causal, h0, h1,
				     s0, s1, scale, smem);
}
