/*
 * bodies.cu - how fast the memory-bound tile bodies of a prompt chunk run
 * alone on every SM, one block of MKC_THREADS an SM as in the megakernel,
 * against a plain 16-byte copy of the same bytes at that block size.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o bodies bench/bodies.cu && ./bodies
 *
 * The shapes are the 1B shape's for a 1024-token chunk, cut as
 * passes/tile.c cuts them on a GPU: the SiLU product [1024, 8192] in tiles
 * of 8 rows (mkc_elementwise, flat), the RMS norm [1024, 2048] in tiles of
 * 8 rows and of 128 (mkc_norm), and the queries' heads [1024, 32, 64] moved
 * to [32, 1024, 64] in tiles of a head and 128 positions (mkc_strided, as
 * mkc_transpose calls it). Each tile is a block's; the blocks walk the
 * tiles as workers walk their queues, none waiting for another. Printed:
 * us a pass (median of 20) and GB/s counting each byte read or written
 * once. A number for the bodies, not a benchmark (bench/run.py times the
 * model).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../tests/gpu/rt_stub.cuh"

#include "../backends/c/scalar.h"
#include "../backends/c/data.h"
#include "../backends/c/elementwise.h"
#include "../backends/c/rows.h"

static __device__ mkc_view
view2(void *p, int64_t a, int64_t b)
{
	mkc_view v = {p, {a, b}, {b, 1}, 2, MKC_T_FLOAT, 0};
	return v;
}

static __global__ void __launch_bounds__(MKC_THREADS, 1)
silu_kernel(float *y, const float *g, const float *u, int64_t rows, int64_t cols, int64_t tr)
{
	const mkc_view vy = view2(y, rows, cols), vg = view2((void *)g, rows, cols),
		       vu = view2((void *)u, rows, cols);
	const mkc_view *const in[2] = {&vg, &vu};
	for (int64_t t = blockIdx.x; t < rows / tr; t += gridDim.x) {
		const int64_t lo[2] = {t * tr, 0}, hi[2] = {(t + 1) * tr, cols};
		mkc_elementwise(MKC_EW_SILU_MUL, 1, &vy, 2, in, 1, lo, hi);
	}
}

static __global__ void __launch_bounds__(MKC_THREADS, 1)
norm_kernel(float *y, const float *x, const float *w, int64_t rows, int64_t cols, int64_t tr)
{
	const mkc_view vy = view2(y, rows, cols), vx = view2((void *)x, rows, cols);
	const mkc_view vw = {(void *)w, {cols}, {1}, 1, MKC_T_FLOAT, 0};
	const mkc_norm_opt o = {1, 1e-5f, 0};
	for (int64_t t = blockIdx.x; t < rows / tr; t += gridDim.x) {
		const int64_t lo[2] = {t * tr, 0}, hi[2] = {(t + 1) * tr, cols};
		mkc_norm(&vy, &vx, &vw, NULL, NULL, NULL, &o, lo, hi);
	}
}

/* x [S, H, D] into y [H, S, D], tiles of a head and tr positions */
static __global__ void __launch_bounds__(MKC_THREADS, 1)
heads_kernel(float *y, const float *x, int64_t s, int64_t h, int64_t d, int64_t tr)
{
	const mkc_view vy = {y, {h, s, d}, {s * d, d, 1}, 3, MKC_T_FLOAT, 0};
	const mkc_view vx = {(void *)x, {s, h, d}, {h * d, d, 1}, 3, MKC_T_FLOAT, 0};
	const int64_t xs[4] = {d, h * d, 1, 0};
	for (int64_t t = blockIdx.x; t < h * (s / tr); t += gridDim.x) {
		const int64_t lo[3] = {t % h, t / h * tr, 0}, hi[3] = {t % h + 1, t / h * tr + tr, d};
		mkc_strided(&vy, &vx, 0, xs, lo, hi);
	}
}

/* the plain copy: n4 16-byte units, 4 loads in flight a lane */
static __global__ void __launch_bounds__(MKC_THREADS, 1)
copy_kernel(float4 *y, const float4 *x, int64_t n4)
{
	const int64_t step = (int64_t)gridDim.x * blockDim.x;
#pragma unroll 4
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += step)
		y[i] = x[i];
}

static void
line(const char *what, double us, double bytes)
{
	printf("%-52s %9.1f us  %7.1f GB/s\n", what, us, bytes / us * 1e-3);
}

int
main(void)
{
	int sms = 0;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const int64_t S = 1024, H = 2048, I = 8192;
	float *a, *b, *c, *w;
	CHECK(cudaMalloc(&a, S * I * 4));
	CHECK(cudaMalloc(&b, S * I * 4));
	CHECK(cudaMalloc(&c, S * I * 4));
	CHECK(cudaMalloc(&w, H * 4));
	CHECK(cudaMemset(a, 0, S * I * 4));
	CHECK(cudaMemset(b, 0, S * I * 4));
	CHECK(cudaMemset(w, 0, H * 4));
	printf("%d SMs, %d threads a block, one block an SM\n", sms, MKC_THREADS);
	double us = 1e3 * median_ms([&] { copy_kernel<<<sms, MKC_THREADS>>>((float4 *)c, (float4 *)a, S * I / 4); });
	line("plain copy, 32 MiB", us, 2.0 * S * I * 4);
	us = 1e3 * median_ms([&] { silu_kernel<<<sms, MKC_THREADS>>>(c, a, b, S, I, 8); });
	line("SiLU product [1024, 8192], tiles of 8 rows", us, 3.0 * S * I * 4);
	for (int64_t tr : {8, 128}) {
		char what[80];
		us = 1e3 * median_ms([&] { norm_kernel<<<sms, MKC_THREADS>>>(c, a, w, S, H, tr); });
		snprintf(what, sizeof what, "RMS norm [1024, 2048], tiles of %lld rows", (long long)tr);
		line(what, us, 2.0 * S * H * 4);
	}
	us = 1e3 * median_ms([&] { heads_kernel<<<sms, MKC_THREADS>>>(c, a, S, 32, 64, 128); });
	line("heads [1024, 32, 64] -> [32, 1024, 64], 128 positions", us, 2.0 * S * 32 * 64 * 4);
	cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(w);
	return 0;
}
