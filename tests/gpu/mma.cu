/*
 * mma.cu - backends/cuda/mma.cuh's tensor-core tile run alone, against a
 * float64 reference on the host, then timed over a grid of tiles at the
 * products of a 1B-shaped prompt chunk.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o mma tests/gpu/mma.cu && ./mma
 *
 * Correctness: random x and w, y poisoned with NaN, every tile of the
 * product computed (one block a tile), compared with a float64 sum over the
 * bf16-rounded operands (the body rounds x to bf16; what is left is float32
 * summation, so the tolerance is 1e-5 of the largest value). Shapes cover
 * partial tiles in both directions, a single token, ADD into a residual,
 * bf16 x, and Glu tiles (silu(x w^T) * (x u^T), half as many features a
 * tile) with float32 or bf16 y, for each variant of the tile (below); a
 * bf16 y may differ from the reference by its rounding too (2^-8 of the
 * value), and a Glu's sums go through the SiLU (1e-4). Timing: the products
 * of a 1024-token chunk of the Llama-3.2-1B shape, each over every SM,
 * random operands, median of 20, in TFLOPS; a number for the plan, not a
 * benchmark (bench/ times the model).
 *
 * A step of few tokens' tile (mkc_mm_few_tile, `./mma few`) likewise: 1 to
 * 100 tokens by tiles of 16 to 128 weight rows, and with an RMS norm of x
 * first (NormGemm's: the reference rounds x * scale to bf16 as the tile
 * does and scales each row's sums by its float64 1 / rms), then timed on the 1B shape's
 * products at 8 to 64 tokens as the few-token plan cuts them (a tile a
 * worker), beside the 128-feature tile on the same tokens.
 *
 * The chunk's attention (mkc_attn_chunk_mma) likewise: random queries,
 * keys and values (float32 or bf16 caches with room past L), every block
 * of 128 query rows of every head, against a float64 softmax over the
 * unrounded values (the body rounds the scaled queries, the keys, values
 * and weights to bf16: the tolerance is 2e-2 of the largest value), causal
 * with and without a past, not causal, heads sharing keys; then timed at
 * the 1B shape's 1024-token chunk (32 query heads, 8 key heads, 64).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_stub.cuh"
#include "../../backends/cuda/tma.h"

#include "../../backends/c/scalar.h"
#include "../../backends/c/elementwise.h"
#include "../../backends/cuda/mma.cuh"

/*
 * The tile a variant: 0 mma.sync, 1 mkc_mma_tile inlined into the kernel
 * (wgmma for a bf16 x on sm_90a), 2 the same behind a call, as the
 * megakernel's bodies are (ptxas then serialises the wgmma instructions:
 * its C7510 note); 3 and 4 mma.cuh's mkc_tma_tile behind a call, 128 and
 * 256 weight rows a tile, three stages (a bf16 x only). Its operands'
 * tensor maps lie in global memory, as an emitted file's do: x, the
 * weight, the up weight.
 */
template <bool XH, bool GLU, bool YH>
static __device__ __noinline__ void
tile_call(void *y, const void *x, const uint16_t *w, const uint16_t *u, const float *c, int64_t m,
	  int64_t n, int64_t k, int64_t m0, int64_t n0, void *smem)
{
	mkc_mma_tile<XH, GLU, YH>(y, n, x, k, w, u, k, c, n, m, n, k, m0, n0, smem);
}

static __device__ struct mkc_tmap tma_maps[3];

template <int TN, bool GLU, bool YH>
static __device__ __noinline__ void
tma_call(void *y, const float *c, int64_t m, int64_t n, int64_t k, int64_t m0, int64_t n0,
	 void *smem)
{
	mkc_tma_tile<TN, 3, GLU, YH>(y, n, &tma_maps[0], &tma_maps[1], &tma_maps[2], c, n, m, n, k,
				     m0, n0, smem);
}

/* a variant's weight rows a tile, and its shared memory */
#define TILE_ROWS(V) ((V) == 4 ? 256 : MKC_MM_TN)
#define TILE_SMEM(V) ((V) >= 3 ? MKC_MM_RING_SMEM(TILE_ROWS(V), 3) : MKC_MM_SMEM)

template <int V, bool XH, bool ADD, bool GLU, bool YH>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
mma_kernel(void *y, const void *x, const uint16_t *w, const uint16_t *u, int64_t m, int64_t n,
	   int64_t k, int reps)
{
	extern __shared__ __align__(128) unsigned char smem[];
	const int64_t tw = GLU ? TILE_ROWS(V) / 2 : TILE_ROWS(V);   /* a tile's features */
	const int64_t tm = (m + MKC_MM_TM - 1) / MKC_MM_TM, tn = (n + tw - 1) / tw;
	const float *c = ADD ? (const float *)y : NULL;
	for (int r = 0; r < reps; r++)
		for (int64_t t = blockIdx.x; t < tm * tn; t += gridDim.x) {
			int64_t m0 = t % tm * MKC_MM_TM, n0 = t / tm * tw;
			if (V == 0)
				mkc_mma_sync_tile<XH, GLU, YH>(y, n, x, k, w, u, k, c, n, m, n, k, m0,
							       n0, smem);
			else if (V == 1)
				mkc_mma_tile<XH, GLU, YH>(y, n, x, k, w, u, k, c, n, m, n, k, m0, n0,
							  smem);
			else if (V == 2)
				tile_call<XH, GLU, YH>(y, x, w, u, c, m, n, k, m0, n0, smem);
			else if (V >= 3 && XH)
				tma_call<TILE_ROWS(V), GLU, YH>(y, c, m, n, k, m0, n0, smem);
		}
}

/*
 * Variant 5: mma.cuh's mkc_mm_few_tile (a step of few tokens), behind a
 * call as in the megakernel, tiles of tw features (a Glu's of each
 * weight) by up to MKC_FEW_ROWS tokens.
 */
template <bool XH, bool GLU, bool YH, int NS>
static __device__ __noinline__ void
few_call(void *y, int64_t ldy, const void *x, const uint16_t *w, const uint16_t *u,
	 const float *c, int64_t m, int64_t n, int64_t k, int64_t m0, int64_t n0, void *smem,
	 const void *sc, float eps)
{
	mkc_mm_few_tile<XH, GLU, YH, NS>(y, ldy, x, k, w, u, k, c, ldy, m, n, k, m0, n0, smem, sc,
					 eps);
}

/* NS: x normalised first (an RMS norm of scale sc, float32 or bf16), or not */
template <bool XH, bool ADD, bool GLU, bool YH, int NS = MKC_NORM_NONE>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
few_kernel(void *y, const void *x, const uint16_t *w, const uint16_t *u, int64_t m, int64_t n,
	   int64_t k, int64_t tw, const void *sc = NULL, float eps = 0)
{
	extern __shared__ __align__(128) unsigned char smem[];
	const int64_t tm = (m + MKC_FEW_ROWS - 1) / MKC_FEW_ROWS, tn = (n + tw - 1) / tw;
	const float *c = ADD ? (const float *)y : NULL;
	for (int64_t t = blockIdx.x; t < tm * tn; t += gridDim.x) {
		int64_t m0 = t % tm * MKC_FEW_ROWS, n0 = t / tm * tw;
		few_call<XH, GLU, YH, NS>(y, n, x, w, u, c, m0 + MKC_FEW_ROWS < m ? m0 + MKC_FEW_ROWS : m,
					  n0 + tw < n ? n0 + tw : n, k, m0, n0, smem, sc, eps);
	}
}

static uint16_t
to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static float
from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static double
frand(void)
{
	return rand() / (double)RAND_MAX * 2 - 1;
}

/* x [m, k], w and u [n, k] (u only for a Glu), as exec.cuh's mkc_tmaps makes them */
template <bool GLU>
static void
tma_set(const void *x, const void *w, const void *u, int64_t m, int64_t n, int64_t k)
{
	static mkc_tma_encoder enc;
	if (!enc && !(enc = mkc_tma_find_encoder(0))) {
		fprintf(stderr, "no TMA here (not sm_90, or no cuTensorMapEncodeTiled)\n");
		exit(1);
	}
	struct mkc_tmap t[3];
	if (mkc_tma_map(enc, &t[0], (void *)x, m, k, MKC_MM_TM) ||
	    mkc_tma_map(enc, &t[1], (void *)w, n, k, MKC_TMA_WROWS) ||
	    mkc_tma_map(enc, &t[2], (void *)(GLU ? u : w), n, k, MKC_TMA_WROWS)) {
		fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
		exit(1);
	}
	CHECK(cudaMemcpyToSymbol(tma_maps, t, sizeof t));
}

static int failures;

template <int V, bool XH, bool ADD, bool GLU = false, bool YH = false, int NS = MKC_NORM_NONE>
static void
check(int64_t m, int64_t n, int64_t k, int64_t tw = 0)
{
	size_t nx = (size_t)(m * k), nw = (size_t)(n * k), ny = (size_t)(m * n), ys = YH ? 2 : 4;
	float *xf = (float *)malloc(nx * 4), *y0 = (float *)malloc(ny * 4);
	unsigned char *y = (unsigned char *)malloc(ny * ys);
	uint16_t *xh = (uint16_t *)malloc(nx * 2), *wh = (uint16_t *)malloc(nw * 2 * 2);
	uint16_t *uh = wh + nw;   /* GLU's up weight */
	/* a norm's scale (in [0.5, 1.5), bf16 values where it is kept so), and
	 * each row's 1 / rms in float64; x as the tile rounds it: x * scale */
	float *scf = (float *)malloc((size_t)k * 4);
	uint16_t *sch = (uint16_t *)malloc((size_t)k * 2);
	double *inv = (double *)malloc((size_t)m * 8);
	const float eps = 1e-5f;
	for (int64_t q = 0; q < k; q++) {
		scf[q] = 0.5f + (float)frand() * 0.5f + 0.5f;
		sch[q] = to_bf16(scf[q]);
		if (NS == MKC_NORM_BF16)
			scf[q] = from_bf16(sch[q]);
	}
	for (size_t i = 0; i < nx; i++)
		xf[i] = (float)frand();
	for (int64_t i = 0; i < m; i++) {
		double ss = 0;
		for (int64_t q = 0; q < k; q++)
			ss += (double)xf[i * k + q] * xf[i * k + q];
		inv[i] = NS ? 1 / sqrt(ss / k + eps) : 1;
		for (int64_t q = 0; q < k; q++)
			xh[i * k + q] = to_bf16(NS ? xf[i * k + q] * scf[q] : xf[i * k + q]);
	}
	void *dsc = NULL;
	if (NS) {
		CHECK(cudaMalloc(&dsc, (size_t)k * 4));
		CHECK(cudaMemcpy(dsc, NS == MKC_NORM_BF16 ? (void *)sch : (void *)scf,
				 (size_t)k * (NS == MKC_NORM_BF16 ? 2 : 4), cudaMemcpyHostToDevice));
	}
	for (size_t i = 0; i < 2 * nw; i++)
		wh[i] = to_bf16((float)frand());
	for (size_t i = 0; i < ny; i++)
		y0[i] = ADD ? (float)frand() : NAN;
	void *dx, *dw, *dy;
	CHECK(cudaMalloc(&dx, XH ? nx * 2 : nx * 4));
	CHECK(cudaMalloc(&dw, nw * 2 * 2));
	CHECK(cudaMalloc(&dy, ny * ys));
	CHECK(cudaMemcpy(dx, XH ? (void *)xh : (void *)xf, XH ? nx * 2 : nx * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dw, wh, nw * 2 * 2, cudaMemcpyHostToDevice));
	if (YH)
		CHECK(cudaMemset(dy, 0xff, ny * 2));   /* bf16 NaNs */
	else
		CHECK(cudaMemcpy(dy, y0, ny * 4, cudaMemcpyHostToDevice));
	if (V >= 3 && V < 5)
		tma_set<GLU>(dx, dw, (uint16_t *)dw + nw, m, n, k);
	if (V == 5) {
		CHECK(cudaFuncSetAttribute(few_kernel<XH, ADD, GLU, YH, NS>,
					   cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_FEW_SMEM));
		few_kernel<XH, ADD, GLU, YH, NS><<<7, MKC_THREADS, MKC_FEW_SMEM>>>(
			dy, dx, (uint16_t *)dw, (uint16_t *)dw + nw, m, n, k, tw, dsc, eps);
	} else {
		CHECK(cudaFuncSetAttribute(mma_kernel<V, XH, ADD, GLU, YH>,
					   cudaFuncAttributeMaxDynamicSharedMemorySize, TILE_SMEM(V)));
		mma_kernel<V, XH, ADD, GLU, YH><<<7, MKC_THREADS, TILE_SMEM(V)>>>(
			dy, dx, (uint16_t *)dw, (uint16_t *)dw + nw, m, n, k, 1);
	}
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(y, dy, ny * ys, cudaMemcpyDeviceToHost));
	double big = 0, err = 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0, su = 0;
			for (int64_t q = 0; q < k; q++) {
				s += (double)from_bf16(xh[i * k + q]) * from_bf16(wh[j * k + q]);
				su += (double)from_bf16(xh[i * k + q]) * from_bf16(uh[j * k + q]);
			}
			s = s * inv[i] + (ADD ? y0[i * n + j] : 0);
			su *= inv[i];
			if (GLU)
				s = s / (1 + exp(-s)) * su;
			big = fmax(big, fabs(s));
			float g = YH ? from_bf16(((uint16_t *)y)[i * n + j]) : ((float *)y)[i * n + j];
			/* a bf16 y: its own rounding off the float32 sum, then the sum's error */
			double e = fabs(g - s) - (YH ? fabs(s) / 256 : 0);
			err = isnan(g) ? INFINITY : fmax(err, e);
		}
	const double rel = err / big, tol = GLU ? 1e-4 : 1e-5;
	char what[80];
	snprintf(what, sizeof what, "mma%d %lld x %lld x %lld%s%s%s%s%s%s", V, (long long)m,
		 (long long)n, (long long)k, V == 5 ? (tw > 32 ? " wide" : " narrow") : "",
		 XH ? " bf16 x" : "", ADD ? " add" : "", GLU ? " glu" : "", YH ? " bf16 y" : "",
		 NS == MKC_NORM_F32 ? " norm" : NS == MKC_NORM_BF16 ? " norm bf16" : "");
	printf("%-44s %s  largest error %.2e of %.2e\n", what, rel <= tol ? "ok  " : "FAIL", rel, big);
	failures += !(rel <= tol);
	cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(dsc);
	free(xf), free(y), free(y0), free(xh), free(wh), free(scf), free(sch), free(inv);
}

/*
 * The median of 20 timed launches of every tile of an m x n x k product, in
 * TFLOPS; GLU: of two (n features of two weights), y in bf16.
 */
template <int V, bool XH, bool GLU = false>
static void
timeit(const char *what, int64_t m, int64_t n, int64_t k)
{
	void *dx, *dw, *dy;
	size_t nx = (size_t)(m * k), nw = (size_t)(n * k) * (GLU ? 2 : 1);
	CHECK(cudaMalloc(&dx, nx * 4));
	CHECK(cudaMalloc(&dw, nw * 2));
	CHECK(cudaMalloc(&dy, (size_t)(m * n * 4)));
	/* random operands: the tensor cores' power, and so their clock, depends on the bits */
	size_t nh = nx * 2 > nw ? nx * 2 : nw;
	uint16_t *h = (uint16_t *)malloc(nh * 2);
	for (size_t i = 0; i < nh; i++)
		h[i] = to_bf16((float)frand() * 0.1f);
	CHECK(cudaMemcpy(dx, h, nx * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dw, h, nw * 2, cudaMemcpyHostToDevice));
	free(h);
	if (V >= 3)
		tma_set<GLU>(dx, dw, (uint16_t *)dw + (GLU ? nw / 2 : 0), m, n, k);
	CHECK(cudaFuncSetAttribute(mma_kernel<V, XH, false, GLU, GLU>,
				   cudaFuncAttributeMaxDynamicSharedMemorySize, TILE_SMEM(V)));
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	double t = 1e-3 * median_ms([&] {
		mma_kernel<V, XH, false, GLU, GLU><<<sms, MKC_THREADS, TILE_SMEM(V)>>>(
			dy, dx, (uint16_t *)dw, (uint16_t *)dw + (GLU ? nw / 2 : 0), m, n, k, 1);
	});
	printf("mma%d%s %-20s %5lld x %5lld x %5lld  %8.1f us  %6.1f TFLOPS\n", V,
	       XH ? " bf16 x" : "       ", what, (long long)m, (long long)n, (long long)k, t * 1e6,
	       (GLU ? 4.0 : 2.0) * m * n * k / t * 1e-12);
	cudaFree(dx), cudaFree(dw), cudaFree(dy);
}

template <int V, bool XH>
static void
time_products(void)
{
	timeit<V, XH>("q/k/v (fused)", 1024, 3072, 2048);
	timeit<V, XH>("o_proj", 1024, 2048, 2048);
	timeit<V, XH>("gate/up (fused)", 1024, 16384, 2048);
	timeit<V, XH, true>("gate/up glu, bf16 y", 1024, 8192, 2048);
	timeit<V, XH>("down_proj", 1024, 2048, 8192);
	timeit<V, XH>("lm head", 1024, 128256, 2048);
}

/*
 * A step of m few tokens: each product of the 1B shape as the few-token
 * plan cuts it (a tile a worker: n / SMs features, rounded up) by
 * mkc_mm_few_tile, beside the chunk plan's 128-feature tile (mkc_mma_tile),
 * a bf16 x; the median of 20 launches and the weights' bytes over it.
 */
/* ./mma fewt: the few-token tile alone, not the chunk's tile beside it */
static bool few_alone;

template <bool GLU>
static void
time_few_one(const char *what, int64_t m, int64_t n, int64_t k)
{
	void *dx, *dw, *dy;
	size_t nw = (size_t)(n * k) * (GLU ? 2 : 1);
	CHECK(cudaMalloc(&dx, (size_t)(m * k * 2)));
	CHECK(cudaMalloc(&dw, nw * 2));
	CHECK(cudaMalloc(&dy, (size_t)(m * n * 4)));
	uint16_t *h = (uint16_t *)malloc(nw * 2);
	for (size_t i = 0; i < nw; i++)
		h[i] = to_bf16((float)frand() * 0.1f);
	CHECK(cudaMemcpy(dw, h, nw * 2, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dx, h, (size_t)(m * k * 2), cudaMemcpyHostToDevice));
	free(h);
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	/* a tile a worker, or as the plan cuts a product past the workers'
	 * MKC_GEMV_ROWS rows: a whole number of tiles a worker */
	int64_t tiles = sms;
	while ((n + tiles - 1) / tiles > (GLU ? MKC_GEMV_ROWS / 2 : MKC_GEMV_ROWS))
		tiles += sms;
	const int64_t tw = (n + tiles - 1) / tiles;
	const uint16_t *u = (uint16_t *)dw + (GLU ? nw / 2 : 0);
	CHECK(cudaFuncSetAttribute(few_kernel<true, false, GLU, GLU>,
				   cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_FEW_SMEM));
	double t = 1e-3 * median_ms([&] {
		few_kernel<true, false, GLU, GLU><<<sms, MKC_THREADS, MKC_FEW_SMEM>>>(
			dy, dx, (uint16_t *)dw, u, m, n, k, tw);
	});
	double t2 = 0;   /* the chunk's tile, unless few_alone */
	if (!few_alone) {
		CHECK(cudaFuncSetAttribute(mma_kernel<1, true, false, GLU, GLU>,
					   cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_MM_SMEM));
		t2 = 1e-3 * median_ms([&] {
			mma_kernel<1, true, false, GLU, GLU><<<sms, MKC_THREADS, MKC_MM_SMEM>>>(
				dy, dx, (uint16_t *)dw, u, m, n, k, 1);
		});
	}
	printf("few %-18s %2lld x %5lld x %5lld, %3lld rows a tile  %7.1f us  %6.0f GB/s;"
	       "  128-feature tile %7.1f us\n", what, (long long)m, (long long)n, (long long)k,
	       (long long)(GLU ? 2 * tw : tw), t * 1e6, nw * 2 / t * 1e-9, t2 * 1e6);
	cudaFree(dx), cudaFree(dw), cudaFree(dy);
}

static void
time_few(void)
{
	for (int64_t m = 8; m <= 64; m *= 2) {
		time_few_one<false>("q/k/v (fused)", m, 3072, 2048);
		time_few_one<false>("o_proj", m, 2048, 2048);
		time_few_one<true>("gate/up glu", m, 8192, 2048);
		time_few_one<false>("down_proj", m, 2048, 8192);
		time_few_one<false>("lm head", m, 128256, 2048);
	}
}

/* the few-token tile's cases: 1 to 64 tokens a tile (blocks of 8 to 64),
 * 16 to 128 rows, float32 or bf16 x, residual, Glu */
static void
check_few(void)
{
	check<5, false, false>(1, 40, 2048, 16);
	check<5, false, false>(8, 300, 256, 24);
	check<5, true, false>(16, 130, 8192, 128);
	check<5, true, true>(9, 200, 512, 64);
	check<5, false, true>(16, 100, 96, 40);
	check<5, true, false, true, true>(8, 200, 2048, 62);
	check<5, false, false, true, false>(13, 70, 160, 20);
	check<5, true, false, false, true>(3, 129, 1024, 33);
	check<5, true, false, false, false>(32, 256, 64, 100);
	check<5, false, false>(24, 300, 256, 24);
	check<5, true, false>(64, 130, 2048, 128);
	check<5, false, true>(40, 100, 96, 40);
	check<5, true, false, true, true>(57, 200, 512, 62);
	check<5, false, false, true, false>(33, 70, 160, 20);
	check<5, true, false, false, true>(100, 129, 1024, 33);
	/* x normalised first (NormGemm, NormGlu): float32 x, scale float32 or bf16 */
	check<5, false, false, false, false, MKC_NORM_F32>(8, 96, 2048, 24);
	check<5, false, true, false, false, MKC_NORM_BF16>(13, 70, 160, 20);
	check<5, false, false, true, true, MKC_NORM_BF16>(8, 200, 2048, 62);
	check<5, false, false, true, false, MKC_NORM_F32>(33, 130, 512, 64);
	check<5, false, true, false, false, MKC_NORM_F32>(64, 300, 256, 128);
	check<5, false, false, false, false, MKC_NORM_BF16>(1, 40, 2048, 16);
}

/* the TMA tile's cases: a bf16 x, partial tiles both ways, residual, Glu */
template <int V>
static void
check_tma(void)
{
	check<V, true, false>(77, 130, 320);
	check<V, true, false>(300, 520, 192);
	check<V, true, true>(256, 256, 1024);
	check<V, true, false, true, true>(130, 72, 256);
	check<V, true, false, true, false>(1, 64, 128);
	check<V, true, false, true, true>(128, 300, 128);
	check<V, true, false, false, true>(129, 260, 64);
}

template <int V>
static void
check_products(void)
{
	check<V, false, false>(128, 128, 64);
	check<V, false, false>(100, 200, 192);
	check<V, false, false>(1, 128, 2048);
	check<V, false, false>(300, 96, 128);
	check<V, false, true>(130, 257, 256);
	check<V, true, false>(77, 130, 320);
	check<V, true, true>(256, 256, 1024);
	check<V, false, false, true, false>(100, 200, 192);
	check<V, true, false, true, true>(130, 72, 256);
	check<V, true, false, true, false>(1, 64, 128);
	check<V, false, false, false, true>(77, 130, 320);
}

template <int D, typename T, bool YH>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
attn_kernel(const float *q, const T *k, const T *v, void *y, int64_t hq, int64_t hk, int64_t sq,
	    int64_t l, int64_t cap, int causal, float scale, int64_t hper)
{
	extern __shared__ __align__(128) unsigned char smem[];
	const int64_t nb = (sq + 127) / 128, qs[3] = {hq * sq * D, sq * D, D};
	const int64_t ks[3] = {hk * cap * D, cap * D, D};
	for (int64_t t = blockIdx.x; t < hq / hper * nb; t += gridDim.x) {
		int64_t h = t / nb * hper, s0 = t % nb * 128, s1 = s0 + 128 < sq ? s0 + 128 : sq;
		mkc_attn_chunk_mma<D, T, YH>(q, qs, k, ks, v, ks, y, qs, hq, hk, sq, l, causal, h,
					     h + hper, s0, s1, scale, smem);
	}
}

static const int attn_smem = MKC_MA_SMEM(128);

/* YH: y stored as bf16 (its rounding, 2^-8 of the largest value, is in the tolerance) */
template <int D, typename T, bool YH = false>
static void
check_attn(int64_t hq, int64_t hk, int64_t sq, int64_t l, int causal, int64_t hper = 1)
{
	const int64_t cap = l + 5;
	size_t nq = (size_t)(hq * sq * D), nk = (size_t)(hk * cap * D);
	float *q = (float *)malloc(nq * 4), *y = (float *)malloc(nq * 4);
	float *kf = (float *)malloc(nk * 4), *vf = (float *)malloc(nk * 4);
	T *kc = (T *)malloc(nk * sizeof(T)), *vc = (T *)malloc(nk * sizeof(T));
	for (size_t i = 0; i < nq; i++)
		q[i] = (float)frand(), y[i] = NAN;
	for (size_t i = 0; i < nk; i++) {
		kf[i] = (float)frand(), vf[i] = (float)frand();
		if (sizeof(T) == 2) {   /* the reference sees the cache's own values */
			((uint16_t *)kc)[i] = to_bf16(kf[i]), kf[i] = from_bf16(to_bf16(kf[i]));
			((uint16_t *)vc)[i] = to_bf16(vf[i]), vf[i] = from_bf16(to_bf16(vf[i]));
		} else {
			((float *)kc)[i] = kf[i], ((float *)vc)[i] = vf[i];
		}
	}
	for (int64_t i = l; i < cap; i++)   /* room past L: never read */
		for (int64_t h = 0; h < hk; h++)
			for (int d = 0; d < D; d++)
				kf[(h * cap + i) * D + d] = NAN;
	void *dq, *dk, *dv, *dy;
	CHECK(cudaMalloc(&dq, nq * 4));
	CHECK(cudaMalloc(&dy, nq * 4));
	CHECK(cudaMalloc(&dk, nk * sizeof(T)));
	CHECK(cudaMalloc(&dv, nk * sizeof(T)));
	CHECK(cudaMemcpy(dq, q, nq * 4, cudaMemcpyHostToDevice));
	if (YH)
		CHECK(cudaMemset(dy, 0xff, nq * 2));   /* bf16 NaN */
	else
		CHECK(cudaMemcpy(dy, y, nq * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dk, kc, nk * sizeof(T), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dv, vc, nk * sizeof(T), cudaMemcpyHostToDevice));
	const float scale = 1.f / sqrtf((float)D);
	CHECK(cudaFuncSetAttribute(attn_kernel<D, T, YH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				   attn_smem));
	attn_kernel<D, T, YH><<<5, MKC_THREADS, attn_smem>>>((float *)dq, (T *)dk, (T *)dv, dy, hq,
							     hk, sq, l, cap, causal, scale, hper);
	CHECK(cudaGetLastError());
	if (YH) {
		uint16_t *yh = (uint16_t *)malloc(nq * 2);
		CHECK(cudaMemcpy(yh, dy, nq * 2, cudaMemcpyDeviceToHost));
		for (size_t i = 0; i < nq; i++)
			y[i] = from_bf16(yh[i]);
		free(yh);
	} else {
		CHECK(cudaMemcpy(y, dy, nq * 4, cudaMemcpyDeviceToHost));
	}
	double big = 0, err = 0, *w = (double *)malloc((size_t)l * sizeof *w);
	for (int64_t h = 0; h < hq; h++)
		for (int64_t s = 0; s < sq; s++) {
			const int64_t kh = h / (hq / hk), end = causal == 2 ? l - sq + s + 1 : l;
			double m = -INFINITY, z = 0;
			for (int64_t t = 0; t < end; t++) {
				double d = 0;
				for (int c = 0; c < D; c++)
					d += (double)q[(h * sq + s) * D + c] * kf[(kh * cap + t) * D + c];
				w[t] = d * scale;
				m = fmax(m, w[t]);
			}
			for (int64_t t = 0; t < end; t++)
				z += w[t] = exp(w[t] - m);
			for (int c = 0; c < D; c++) {
				double a = 0;
				for (int64_t t = 0; t < end; t++)
					a += w[t] / z * vf[(kh * cap + t) * D + c];
				float g = y[(h * sq + s) * D + c];
				big = fmax(big, fabs(a));
				err = isnan(g) ? INFINITY : fmax(err, fabs(g - a));
			}
		}
	double rel = err / big;
	char what[96];
	snprintf(what, sizeof what, "attention %lldq %lldk x %d, %lld rows of %lld, causal %d%s%s",
		 (long long)hq, (long long)hk, D, (long long)sq, (long long)l, causal,
		 sizeof(T) == 2 ? ", bf16" : "", hper > 1 ? ", 2 heads a task" : YH ? ", bf16 y" : "");
	printf("%-56s %s  largest error %.2e of %.2e\n", what, rel <= 2e-2 ? "ok  " : "FAIL", rel, big);
	failures += !(rel <= 2e-2);
	cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dy);
	free(q), free(y), free(kf), free(vf), free(kc), free(vc), free(w);
}

/* the chunk's attention of every head, causal, median of 20: 32 query heads,
 * 8 key heads of D (64: the 1B shape; 128: Qwen3-8B's), a float32 cache */
template <int D>
static void
time_attn(int64_t sq, int64_t l)
{
	const int64_t hq = 32, hk = 8, cap = l;
	void *dq, *dk, *dv, *dy;
	CHECK(cudaMalloc(&dq, (size_t)(hq * sq * D * 4)));
	CHECK(cudaMalloc(&dy, (size_t)(hq * sq * D * 4)));
	CHECK(cudaMalloc(&dk, (size_t)(hk * cap * D * 4)));
	CHECK(cudaMalloc(&dv, (size_t)(hk * cap * D * 4)));
	CHECK(cudaMemset(dq, 0, (size_t)(hq * sq * D * 4)));
	CHECK(cudaMemset(dk, 0, (size_t)(hk * cap * D * 4)));
	CHECK(cudaMemset(dv, 0, (size_t)(hk * cap * D * 4)));
	CHECK(cudaFuncSetAttribute(attn_kernel<D, float, false>,
				   cudaFuncAttributeMaxDynamicSharedMemorySize, attn_smem));
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	double t = 1e-3 * median_ms([&] {
		attn_kernel<D, float, false><<<sms, MKC_THREADS, attn_smem>>>((float *)dq, (float *)dk,
			(float *)dv, (float *)dy, hq, hk, sq, l, cap, 2, 0.125f, 1);
	}), pairs = 0;   /* query-key pairs seen */
	for (int64_t s = 0; s < sq; s++)
		pairs += (double)(l - sq + s + 1);
	printf("attention, 32q 8k x %3d, %5lld rows of %5lld  %8.1f us  %6.1f TFLOPS\n", D,
	       (long long)sq, (long long)l, t * 1e6, 4.0 * hq * D * pairs / t * 1e-12);
	cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dy);
}

/* ./mma: every check and timing; ./mma tma, ./mma few, ./mma attn: one tile's; ./mma fewt:
 * the few-token tile alone */
int
main(int argc, char **argv)
{
	srand(7);
	if (argc > 1 && strcmp(argv[1], "tma") == 0) {
		check_tma<3>();
		check_tma<4>();
		time_products<3, true>();
		time_products<4, true>();
		return failures ? 1 : 0;
	}
	if (argc > 1 && strcmp(argv[1], "attn") == 0)
		goto attn;
	if (argc > 1 && strcmp(argv[1], "fewt") == 0) {   /* build with -DMKC_FEW_LOADS=N to compare */
		few_alone = true;
		printf("MKC_FEW_LOADS %d\n", MKC_FEW_LOADS);
		check_few();
		time_few();
		return failures ? 1 : 0;
	}
	if (argc > 1 && strcmp(argv[1], "few") == 0) {
		check_few();
		time_few();
		return failures ? 1 : 0;
	}
	check_few();
	check_products<0>();
	check_products<1>();
	check_products<2>();
	check_tma<3>();
	check_tma<4>();
	time_products<0, false>();
	time_products<0, true>();
	time_products<1, true>();
	time_products<2, true>();
	time_products<3, true>();
	time_products<4, true>();
attn:
	check_attn<64, float>(4, 2, 7, 12, 2);
	check_attn<64, float>(2, 1, 200, 200, 2);
	check_attn<64, float>(4, 4, 33, 100, 0);
	check_attn<128, float>(2, 1, 130, 1000, 2);
	check_attn<64, uint16_t>(4, 1, 1, 77, 2);
	check_attn<128, uint16_t>(2, 2, 65, 70, 2);
	check_attn<64, float>(4, 2, 300, 900, 2, 2);
	check_attn<64, uint16_t>(4, 1, 129, 129, 2, 2);
	check_attn<128, float>(2, 2, 100, 333, 0, 2);
	check_attn<64, float, true>(4, 1, 150, 700, 2);
	check_attn<128, uint16_t, true>(2, 1, 40, 90, 2);
	time_attn<64>(128, 128);
	time_attn<64>(1024, 1024);
	time_attn<64>(1024, 4000);
	time_attn<128>(1024, 1024);
	time_attn<128>(1024, 4000);
	return failures ? 1 : 0;
}
