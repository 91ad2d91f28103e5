/*
 * mma.cuh - products of many tokens on tensor cores, for prompt chunks
 * (issue 29): one tile of y[i, j] = sum_k x[i, k] * w[j, k] over
 * MKC_MM_TM tokens by MKC_MM_TN features, bf16 operands and float32 sums,
 * by the warp-level mma.sync.m16n8k16 of sm_80 and later. Hopper's wgmma
 * may follow as a second body if it measures faster; the HIP target will
 * need MFMA's own fragments, so this file is CUDA's alone for now.
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
 * bytes, four a thread; rows past nrows come as zeros.
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_mm_load(uint16_t *s, const uint16_t *src, int64_t ld, int64_t nrows, int64_t r0, int64_t k0)
{
	static_assert(MKC_MM_TM == MKC_MM_TN, "one loader for both operands");
	for (int i = 0; i < MKC_MM_TN * MKC_MM_TK / 8 / MKC_THREADS; i++) {
		int idx = threadIdx.x + i * MKC_THREADS, r = idx >> 3, c = idx & 7;
		bool ok = r0 + r < nrows;
		mkc_copy16_or_zero(s + mkc_mm_swz(r, c), ok ? src + (r0 + r) * ld + k0 + c * 8 : src, ok);
	}
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
 * 16-aligned). XH: x is bf16.
 */
template <bool XH>
static __device__ __noinline__ void MKC_UNUSED
mkc_mma_tile(float *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w, int64_t ldw,
	     const float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, int64_t m0, int64_t n0,
	     void *smem)
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
			mkc_mm_load(ws + s * MKC_MM_TN * MKC_MM_TK, w, ldw, n, n0, s * MKC_MM_TK);
			if (XH) {
				mkc_mm_load(xs + s * MKC_MM_TM * MKC_MM_TK, (const uint16_t *)x, ldx, m,
					    m0, s * MKC_MM_TK);
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
			mkc_mm_load(ws + ns * MKC_MM_TN * MKC_MM_TK, w, ldw, n, n0,
				    (int64_t)next * MKC_MM_TK);
			if (XH)
				mkc_mm_load(xs + ns * MKC_MM_TM * MKC_MM_TK, (const uint16_t *)x, ldx, m,
					    m0, (int64_t)next * MKC_MM_TK);
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
		for (int ni = 0; ni < 4; ni++)
			for (int h = 0; h < 2; h++) {
				int64_t i = m0 + wm * 64 + mi * 16 + (lane >> 2) + h * 8;
				int64_t j = n0 + wn * 32 + ni * 8 + (lane & 3) * 2;
				if (i >= m)
					continue;
				float *p = y + i * ldy + j;
				for (int e = 0; e < 2; e++)
					if (j + e < n)
						p[e] = (c ? c[i * ldc + j + e] : 0.f) + acc[mi][ni][h * 2 + e];
			}
}
