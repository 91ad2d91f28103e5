/*
 * mfma.h - the HIP target's tile of a prompt chunk's products, on AMD's
 * matrix cores (issue 29): y[i, j] = sum_k x[i, k] * w[j, k] over
 * MKC_MM_TM tokens by MKC_MM_TN features, bf16 operands and float32 sums,
 * by v_mfma_f32_32x32x8bf16_1k (gfx90a, and gfx942's v_mfma_f32_32x32x8_bf16:
 * the same operands). It is backends/cuda/mma.cuh's mkc_mma_tile by the
 * same name and arguments, so that the emitted call is one text for both
 * vendors; mma.cuh's other tiles (a few-token plan's, the chunk's
 * attention) have no HIP twin, and the HIP target does not emit them
 * (its few_tiles and chunk_attn are off).
 *
 * NEVER RUN on AMD hardware: compiled in the tests (hipcc for gfx90a,
 * clang-19 for gfx942), and run on an NVIDIA GPU only through
 * tests/gpu/hip_on_cuda.h, whose stand-in for the instruction computes
 * each lane's sums by the register layout below. That layout is AMD's
 * (the CDNA2 and CDNA3 ISA guides; ROCm's matrix instruction calculator
 * gives the same for both): a wavefront of 64 lanes, for A (32 x 8) and
 * B (8 x 32) a lane l holds four bf16 of row (A) or column (B) l % 32 at
 * k 4 (l / 32) .. 4 (l / 32) + 3, and of D (32 x 32) sixteen floats,
 * register r at row 8 (r / 4) + 4 (l / 32) + r % 4, column l % 32.
 *
 * Operands. As mma.cuh's: the weight bf16 [n, k] row-major, x float32
 * (rounded to bf16 on its way into LDS, as the C bodies round) or bf16.
 * One K step (MKC_MM_TK) of both in LDS, 32 KB (backends/hip/sync.h sets
 * MKC_MM_STAGES to 1: an MI300's LDS is 64 KB a workgroup, and mma.cuh's
 * three stages take 97): the next step's rows come into registers while
 * the step in LDS is computed, then are stored once every wave is past
 * it. A row is 128 bytes, its eight 16-byte chunks XOR-swizzled by the
 * row, as mma.cuh's.
 *
 * Order of k. A lane reads 16 bytes of its row, k 8 c .. 8 c + 7 with c =
 * 2 p + l / 32 for p = 0..3, and gives its first four to one instruction
 * and its last four to another; both operands take the same order, which
 * a sum does not notice, and the eight instructions of a step cover its
 * 64 k once each.
 *
 * Waves. Four as 2 x 2: each computes 64 tokens by 64 stage rows, 2 x 2
 * blocks of 32 x 32, 64 float32 sums a lane. A Glu tile (passes/fuse_glu.c)
 * takes MKC_MM_TN / 2 features of two weights: a wave's 64 stage rows are
 * 32 features of the gate's then the same 32 of the up's, so a lane holds
 * a feature's two sums in blocks 0 and 1 and stores silu(gate) * up
 * (SiluMul's expression, backends/c/elementwise.h's mkc_ew_f).
 *
 * Edges and output as mma.cuh's: tokens past m and features past n read
 * as zeros and are not stored; k a multiple of MKC_MM_TK, the rows
 * 16-byte aligned (the emitter checks); y float32 plus c where there is
 * one (a residual [m, ldc], which may be y itself, or with ldc 0 a bias),
 * or bf16 (YH) rounded to nearest even. Every thread of the block calls it.
 */
static_assert(MKC_THREADS == 256 && MKC_WARP == 64, "mfma.h's tile is four 64-lane waves");
static_assert(MKC_MM_TM == 128 && MKC_MM_TN == 128 && MKC_MM_TK == 64, "mfma.h's tile shape");

/* 16-byte chunks of a bf16 operand's K step a thread */
#define MKC_MF_CH (MKC_MM_TN * MKC_MM_TK / 8 / MKC_THREADS)

/* the instruction's block: rows of A, columns of B and D (not a warp's lanes) */
#define MKC_MF_B 32

/* the bf16 element offset of chunk c (8 elements) of row r in LDS */
static __device__ __forceinline__ int MKC_UNUSED
mkc_mf_swz(int r, int c)
{
	return r * MKC_MM_TK + ((c ^ (r & 7)) << 3);
}

/*
 * d += A B for the 32 x 32 x 8 block: a and b this lane's four bf16 (two
 * to a word, the lower k in the low half). The host pass only parses it.
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_32x32x8(float (&d)[16], uint2 a, uint2 b)
{
#if defined(__HIP_DEVICE_COMPILE__)
	typedef short v4s __attribute__((ext_vector_type(4)));
	typedef float v16f __attribute__((ext_vector_type(16)));
	v4s va, vb;
	__builtin_memcpy(&va, &a, sizeof va);
	__builtin_memcpy(&vb, &b, sizeof vb);
	v16f c;
	for (int r = 0; r < 16; r++)
		c[r] = d[r];
	c = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(va, vb, c, 0, 0, 0);
	for (int r = 0; r < 16; r++)
		d[r] = c[r];
#elif defined(MKC_HOC_MFMA_32X32X8)
	MKC_HOC_MFMA_32X32X8(d, a, b);   /* tests/gpu/hip_on_cuda.h */
#else
	(void)d, (void)a, (void)b;
#endif
}

/*
 * A bf16 operand's K step k0.. of rows r0.. (the weight's features, or a
 * bf16 x's tokens) into registers, MKC_MF_CH chunks a thread; rows past
 * nrows as zeros. GLU: stage rows 64 q .. 64 q + 31 are features r0 + 32 q
 * .. of src, the next 32 the same of u.
 */
template <bool GLU>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_fetch(uint4 *v, const uint16_t *src, const uint16_t *u, int64_t ld,
	     int64_t nrows, int64_t r0, int64_t k0)
{
	for (int i = 0; i < MKC_MF_CH; i++) {
		const int idx = threadIdx.x + i * MKC_THREADS, r = idx >> 3, c = idx & 7;
		const int64_t f = GLU ? r0 + r / 64 * MKC_MF_B + r % MKC_MF_B : r0 + r;
		const uint16_t *from = GLU && r / MKC_MF_B % 2 ? u : src;
		v[i] = f < nrows ? *(const uint4 *)(from + f * ld + k0 + c * 8) : make_uint4(0, 0, 0, 0);
	}
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_store(uint16_t *s, const uint4 *v)
{
	for (int i = 0; i < MKC_MF_CH; i++) {
		const int idx = threadIdx.x + i * MKC_THREADS;
		*(uint4 *)(s + mkc_mf_swz(idx >> 3, idx & 7)) = v[i];
	}
}

/* two float32 as a bf16 pair, rounded to nearest even (runtime/bf16.h) */
static __device__ __forceinline__ uint32_t MKC_UNUSED
mkc_mf_pack(uint32_t lo, uint32_t hi)
{
	return (uint32_t)mkc_rt_to_bf16(__uint_as_float(lo)) |
	       (uint32_t)mkc_rt_to_bf16(__uint_as_float(hi)) << 16;
}

static __device__ __forceinline__ uint4 MKC_UNUSED
mkc_mf_bits(float4 f)
{
	return make_uint4(__float_as_uint(f.x), __float_as_uint(f.y), __float_as_uint(f.z),
			  __float_as_uint(f.w));
}

/*
 * x's K step k0.. of tokens m0.. into registers (tokens past m as zeros):
 * bf16 (XH) as the weight's (mkc_mf_fetch, the first MKC_MF_CH entries);
 * float32 the same chunks' eight floats as the bits of two uint4 each.
 */
template <bool XH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_fetch_x(uint4 (&v)[2 * MKC_MF_CH], const void *x, int64_t ldx, int64_t m, int64_t m0,
	       int64_t k0)
{
	if (XH)
		mkc_mf_fetch<false>(v, (const uint16_t *)x, NULL, ldx, m, m0, k0);
	for (int i = 0; i < (XH ? 0 : MKC_MF_CH); i++) {
		const int idx = threadIdx.x + i * MKC_THREADS, r = idx >> 3, c = idx & 7;
		const bool ok = m0 + r < m;
		const int64_t at = ok ? (m0 + r) * ldx + k0 + c * 8 : 0;
		const float4 *p = (const float4 *)((const float *)x + at);
		v[2 * i] = ok ? mkc_mf_bits(p[0]) : make_uint4(0, 0, 0, 0);
		v[2 * i + 1] = ok ? mkc_mf_bits(p[1]) : make_uint4(0, 0, 0, 0);
	}
}

/* ...and into LDS as bf16 */
template <bool XH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_store_x(uint16_t *s, const uint4 (&v)[2 * MKC_MF_CH])
{
	if (XH)
		mkc_mf_store(s, v);
	for (int i = 0; i < (XH ? 0 : MKC_MF_CH); i++) {
		const int idx = threadIdx.x + i * MKC_THREADS;
		const uint4 a = v[2 * i], b = v[2 * i + 1];
		*(uint4 *)(s + mkc_mf_swz(idx >> 3, idx & 7)) =
			make_uint4(mkc_mf_pack(a.x, a.y), mkc_mf_pack(a.z, a.w), mkc_mf_pack(b.x, b.y),
				   mkc_mf_pack(b.z, b.w));
	}
}

/*
 * One K step's products from LDS, xs (tokens) and ws (stage rows): a wave
 * at tokens 64 wm.. and rows 64 wn..; four reads of 16 bytes and eight
 * instructions a block pair p (the order of k above).
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_step(float (&acc)[2][2][16], const uint16_t *xs, const uint16_t *ws, int wm, int wn,
	    int lane)
{
	for (int p = 0; p < MKC_MM_TK / 16; p++) {
		const int c = 2 * p + lane / MKC_MF_B;
		uint4 a[2], b[2];
		for (int i = 0; i < 2; i++) {
			const int r = i * MKC_MF_B + lane % MKC_MF_B;
			a[i] = *(const uint4 *)(xs + mkc_mf_swz(wm * 64 + r, c));
			b[i] = *(const uint4 *)(ws + mkc_mf_swz(wn * 64 + r, c));
		}
		for (int mi = 0; mi < 2; mi++)
			for (int ni = 0; ni < 2; ni++) {
				mkc_mf_32x32x8(acc[mi][ni], make_uint2(a[mi].x, a[mi].y),
					       make_uint2(b[ni].x, b[ni].y));
				mkc_mf_32x32x8(acc[mi][ni], make_uint2(a[mi].z, a[mi].w),
					       make_uint2(b[ni].z, b[ni].w));
			}
	}
}

/* Output j of row i (dropped at n and past), c's added where there is a c. */
template <bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mf_put(void *y, int64_t ldy, const float *c, int64_t ldc, int64_t i, int64_t j, int64_t n,
	   float v)
{
	if (j >= n)
		return;
	if (c)
		v = c[i * ldc + j] + v;
	if (YH)
		((uint16_t *)y)[i * ldy + j] = mkc_rt_to_bf16(v);
	else
		((float *)y)[i * ldy + j] = v;
}

/*
 * The tile at tokens m0.. and features n0.. (to n, at most MKC_MM_TN; GLU
 * MKC_MM_TN / 2 of w and of u, no c) of y [m, ldy] = x [m, ldx] *
 * w [n, ldw]^T over k (+ c), in smem (MKC_MM_SMEM bytes, 16-aligned).
 */
template <bool XH, bool GLU, bool YH>
static __device__ __noinline__ void MKC_UNUSED
mkc_mf_tile(void *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w,
	    const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m, int64_t n,
	    int64_t k, int64_t m0, int64_t n0, void *smem)
{
	const int nk = (int)(k / MKC_MM_TK);
	const int lane = threadIdx.x & 63, wave = threadIdx.x >> 6, wm = wave >> 1, wn = wave & 1;
	uint16_t *xs = (uint16_t *)smem, *ws = xs + MKC_MM_TM * MKC_MM_TK;
	float acc[2][2][16] = {};
	uint4 wv[MKC_MF_CH], xv[2 * MKC_MF_CH];

	mkc_mf_fetch<GLU>(wv, w, u, ldw, n, n0, 0);
	mkc_mf_fetch_x<XH>(xv, x, ldx, m, m0, 0);
	for (int kt = 0; kt < nk; kt++) {
		__syncthreads();   /* every wave is past step kt - 1's LDS */
		mkc_mf_store(ws, wv);
		mkc_mf_store_x<XH>(xs, xv);
		__syncthreads();
		if (kt + 1 < nk) {   /* in flight while this step is computed */
			mkc_mf_fetch<GLU>(wv, w, u, ldw, n, n0, (int64_t)(kt + 1) * MKC_MM_TK);
			mkc_mf_fetch_x<XH>(xv, x, ldx, m, m0, (int64_t)(kt + 1) * MKC_MM_TK);
		}
		mkc_mf_step(acc, xs, ws, wm, wn, lane);
	}
	__syncthreads();   /* the caller may reuse smem */

	/* register r of a block: row 8 (r / 4) + 4 (lane / 32) + r % 4, column lane % 32 */
	for (int mi = 0; mi < 2; mi++)
		for (int r = 0; r < 16; r++) {
			const int64_t i = m0 + wm * 64 + mi * MKC_MF_B + 8 * (r / 4) +
					  4 * (lane / MKC_MF_B) + r % 4;
			const int64_t j = lane % MKC_MF_B;
			if (i >= m)
				continue;
			if (GLU)
				mkc_mf_put<YH>(y, ldy, NULL, 0, i, n0 + wn * MKC_MF_B + j, n,
					       mkc_ew_f(MKC_EW_SILU_MUL, acc[mi][0][r], acc[mi][1][r]));
			for (int ni = 0; ni < (GLU ? 0 : 2); ni++)
				mkc_mf_put<YH>(y, ldy, c, ldc, i, n0 + wn * 64 + ni * MKC_MF_B + j, n,
					       acc[mi][ni][r]);
		}
}

/*
 * mma.cuh's mkc_mma_tile by name and arguments (the HIP target has no TMA:
 * no maps are passed): features n0 .. n in tiles of MKC_MM_TN, or of
 * MKC_MM_TN / 2 for a Glu. The planner gives a tile one such piece
 * (passes/tile.c: a Glu's wider tiles are TMA's); more are taken in turn.
 */
template <bool XH, bool GLU, bool YH>
static __device__ __forceinline__ void MKC_UNUSED
mkc_mma_tile(void *y, int64_t ldy, const void *x, int64_t ldx, const uint16_t *w,
	     const uint16_t *u, int64_t ldw, const float *c, int64_t ldc, int64_t m, int64_t n,
	     int64_t k, int64_t m0, int64_t n0, void *smem)
{
	const int64_t tn = GLU ? MKC_MM_TN / 2 : MKC_MM_TN;
	for (int64_t f = n0; f < n; f += tn)
		mkc_mf_tile<XH, GLU, YH>(y, ldy, x, ldx, w, u, ldw, c, ldc, m, f + tn < n ? f + tn : n,
					 k, m0, f, smem);
}
