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
 * and bf16 x. Timing: the products of a 1024-token chunk of the
 * Llama-3.2-1B shape, each over every SM, median of 20, in TFLOPS; a
 * number for the plan, not a benchmark (bench/ times the model).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_stub.cuh"

#include "../../backends/cuda/mma.cuh"

template <bool XH, bool ADD>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
mma_kernel(float *y, const void *x, const uint16_t *w, int64_t m, int64_t n, int64_t k, int reps)
{
	extern __shared__ __align__(128) unsigned char smem[];
	int64_t tm = (m + MKC_MM_TM - 1) / MKC_MM_TM, tn = (n + MKC_MM_TN - 1) / MKC_MM_TN;
	for (int r = 0; r < reps; r++)
		for (int64_t t = blockIdx.x; t < tm * tn; t += gridDim.x)
			mkc_mma_tile<XH>(y, n, x, k, w, k, ADD ? y : NULL, n, m, n, k,
					 t % tm * MKC_MM_TM, t / tm * MKC_MM_TN, smem);
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

static int failures;

template <bool XH, bool ADD>
static void
check(int64_t m, int64_t n, int64_t k)
{
	size_t nx = (size_t)(m * k), nw = (size_t)(n * k), ny = (size_t)(m * n);
	float *xf = (float *)malloc(nx * 4), *y = (float *)malloc(ny * 4), *y0 = (float *)malloc(ny * 4);
	uint16_t *xh = (uint16_t *)malloc(nx * 2), *wh = (uint16_t *)malloc(nw * 2);
	for (size_t i = 0; i < nx; i++) {
		xf[i] = (float)frand();
		xh[i] = to_bf16(xf[i]);
	}
	for (size_t i = 0; i < nw; i++)
		wh[i] = to_bf16((float)frand());
	for (size_t i = 0; i < ny; i++)
		y0[i] = ADD ? (float)frand() : NAN;
	void *dx, *dw, *dy;
	CHECK(cudaMalloc(&dx, XH ? nx * 2 : nx * 4));
	CHECK(cudaMalloc(&dw, nw * 2));
	CHECK(cudaMalloc(&dy, ny * 4));
	CHECK(cudaMemcpy(dx, XH ? (void *)xh : (void *)xf, XH ? nx * 2 : nx * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dw, wh, nw * 2, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dy, y0, ny * 4, cudaMemcpyHostToDevice));
	CHECK(cudaFuncSetAttribute(mma_kernel<XH, ADD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				   MKC_MM_SMEM));
	mma_kernel<XH, ADD><<<7, MKC_THREADS, MKC_MM_SMEM>>>((float *)dy, dx, (uint16_t *)dw, m, n, k, 1);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(y, dy, ny * 4, cudaMemcpyDeviceToHost));
	double big = 0, err = 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = ADD ? y0[i * n + j] : 0;
			for (int64_t q = 0; q < k; q++)
				s += (double)from_bf16(xh[i * k + q]) * from_bf16(wh[j * k + q]);
			big = fmax(big, fabs(s));
			float g = y[i * n + j];
			err = isnan(g) ? INFINITY : fmax(err, fabs(g - s));
		}
	double rel = err / big;
	char what[80];
	snprintf(what, sizeof what, "mma %lld x %lld x %lld%s%s", (long long)m, (long long)n,
		 (long long)k, XH ? " bf16 x" : "", ADD ? " add" : "");
	printf("%-44s %s  largest error %.2e of %.2e\n", what, rel <= 1e-5 ? "ok  " : "FAIL", rel, big);
	failures += !(rel <= 1e-5);
	cudaFree(dx), cudaFree(dw), cudaFree(dy);
	free(xf), free(y), free(y0), free(xh), free(wh);
}

/* the median of 20 timed launches of every tile of an m x n x k product, in TFLOPS */
static void
timeit(const char *what, int64_t m, int64_t n, int64_t k)
{
	void *dx, *dw, *dy;
	CHECK(cudaMalloc(&dx, (size_t)(m * k * 4)));
	CHECK(cudaMalloc(&dw, (size_t)(n * k * 2)));
	CHECK(cudaMalloc(&dy, (size_t)(m * n * 4)));
	CHECK(cudaMemset(dx, 0, (size_t)(m * k * 4)));
	CHECK(cudaMemset(dw, 0, (size_t)(n * k * 2)));
	CHECK(cudaFuncSetAttribute(mma_kernel<false, false>,
				   cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_MM_SMEM));
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	cudaEvent_t a, b;
	cudaEventCreate(&a), cudaEventCreate(&b);
	float ms[20];
	for (int r = -2; r < 20; r++) {
		cudaEventRecord(a);
		mma_kernel<false, false><<<sms, MKC_THREADS, MKC_MM_SMEM>>>((float *)dy, dx,
									    (uint16_t *)dw, m, n, k, 1);
		cudaEventRecord(b);
		CHECK(cudaEventSynchronize(b));
		if (r >= 0)
			cudaEventElapsedTime(&ms[r], a, b);
	}
	for (int i = 0; i < 20; i++)
		for (int j = i + 1; j < 20; j++)
			if (ms[j] < ms[i]) {
				float t = ms[i];
				ms[i] = ms[j], ms[j] = t;
			}
	double t = ms[10] * 1e-3;
	printf("%-28s %5lld x %5lld x %5lld  %8.1f us  %6.1f TFLOPS\n", what, (long long)m,
	       (long long)n, (long long)k, t * 1e6, 2.0 * m * n * k / t * 1e-12);
	cudaFree(dx), cudaFree(dw), cudaFree(dy);
}

int
main(void)
{
	srand(7);
	check<false, false>(128, 128, 64);
	check<false, false>(100, 200, 192);
	check<false, false>(1, 128, 2048);
	check<false, false>(300, 96, 128);
	check<false, true>(130, 257, 256);
	check<true, false>(77, 130, 320);
	check<true, true>(256, 256, 1024);
	timeit("q/k/v (fused)", 1024, 3072, 2048);
	timeit("o_proj", 1024, 2048, 2048);
	timeit("gate/up (fused)", 1024, 16384, 2048);
	timeit("down_proj", 1024, 2048, 8192);
	timeit("lm head", 1024, 128256, 2048);
	return failures ? 1 : 0;
}
