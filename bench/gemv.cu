/*
 * gemv.cu - how fast the matvec body streams weights when it runs alone on
 * every SM, against a plain read of the same bytes: the ceiling the
 * megakernel's matvec tasks can reach, and the knobs that move it.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 [-DMKC_THREADS=N]
 *        [-DMKC_GEMV_INFLIGHT=N] -o gemv bench/gemv.cu && [GEMV_ALL=1] ./gemv [SMS]
 *
 * The weights are 1 GiB of bf16 (so L2 holds none of them between
 * passes), viewed as layers of [N, K] matrices. With GEMV_ALL set, one
 * block per SM walks the layers as the megakernel's queue does: tasks of
 * R rows dealt round-robin, each an mkc_gemv call writing its dots out. No task waits
 * for another, so the rate is the body's alone. Printed: GB/s for each
 * shape and R, with the plain read (every thread summing 16-byte loads,
 * 16 in flight) at the same block size and at 1024 threads for scale;
 * then the Llama-3.2-1B step's products with one tile a block, streamed and
 * in phases (gemv_phases: a barrier between layers, as the kernel's events).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../tests/gpu/rt_stub.cuh"

/* the portable bodies matvec.cuh's tile functions end in, in the targets' order */
#include "../backends/c/cache.h"
#include "../backends/c/elementwise.h"
#include "../backends/c/matmul.h"
#include "../backends/cuda/matvec.cuh"

#define BYTES (1ll << 30)

/*
 * An alternative body, to compare: each warp owns whole rows (warp w rows
 * w, w + 8, ...), the normalised x in shared memory, a lane streams its
 * chunks of its warp's rows D loads at a time with the next D in flight,
 * and a row's sum is one warp shuffle (no block-wide reduction).
 */
template <int K, int NORM, int D>
static __device__ __noinline__ void
gemv_warp(const float *x, const uint16_t *w, int64_t n, float *dots, const uint16_t *scale, float eps)
{
	constexpr int T = K / 8, CPR = T / 32, NW = MKC_THREADS / 32;
	static_assert(T % 32 == 0 && (D % CPR == 0 || CPR % D == 0), "shape");
	__shared__ __align__(16) float xs[K];
	const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
	float ss = 0;
	for (int k = t; k < K; k += MKC_THREADS) {
		xs[k] = x[k];
		ss += x[k] * x[k];
	}
	if (NORM) {
		ss = mkc_rt_block_sum(ss);
		const float inv = 1.0f / sqrtf(ss / K + eps);
		for (int k = t; k < K; k += MKC_THREADS)
			xs[k] *= inv * mkc_rt_bf16(scale[k]);
	}
	__syncthreads();
	const int64_t rows = n > warp ? (n - warp + NW - 1) / NW : 0, U = rows * CPR;
	const uint4 *wv = (const uint4 *)w;
	uint4 cur[D], nxt[D];
#pragma unroll
	for (int d = 0; d < D; d++) {
		const int64_t u = d, q = u / CPR, j = u % CPR;
		cur[d] = u < U ? wv[(warp + q * NW) * T + lane + 32 * j] : make_uint4(0, 0, 0, 0);
	}
	float acc = 0;
	for (int64_t u0 = 0; u0 < U; u0 += D) {
#pragma unroll
		for (int d = 0; d < D; d++) {
			const int64_t u = u0 + D + d, q = u / CPR, j = u % CPR;
			nxt[d] = u < U ? wv[(warp + q * NW) * T + lane + 32 * j] : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int d = 0; d < D; d++) {
			const int j = (int)((u0 + d) % CPR), k = 8 * (lane + 32 * j);
			const float4 a = *(const float4 *)&xs[k], b = *(const float4 *)&xs[k + 4];
			acc += mkc_gemv_dot16<true>(a, b, cur[d]);   /* 8 bf16 weights */
			if (j == CPR - 1) {
				acc = mkc_rt_warp_sum(acc);
				const int64_t q = (u0 + d) / CPR;
				if (lane == 0 && q < rows)
					dots[warp + q * NW] = acc;
				acc = 0;
			}
		}
#pragma unroll
		for (int d = 0; d < D; d++)
			cur[d] = nxt[d];
	}
	__syncthreads();
}

template <int K, int NORM, int D>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
warp_stream(const float *x, const uint16_t *w, int64_t n, int layers, int r, float *y,
	    const uint16_t *scale)
{
	__shared__ float dots[MKC_GEMV_ROWS];
	const int64_t tasks = (n + r - 1) / r;
	for (int l = 0; l < layers; l++)
		for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
			const int64_t lo = t * r, rows = lo + r <= n ? r : n - lo;
			gemv_warp<K, NORM, D>(x, w + ((int64_t)l * n + lo) * K, rows, dots, scale, 1e-5f);
			for (int64_t i = threadIdx.x; i < rows; i += MKC_THREADS)
				y[(int64_t)l * n + lo + i] = dots[i];
		}
}

/* layers of [n, K] bf16 weights, tasks of r rows, round-robin over the blocks */
template <int K, int NORM, bool TWO = false>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
gemv_stream(const float *x, const uint16_t *w, int64_t n, int layers, int r, float *y,
	    const uint16_t *scale)
{
	__shared__ float dots[MKC_GEMV_ROWS];
	/* with TWO, layers go in pairs: tiles read r rows of each (NormGlu's) */
	const int64_t tasks = (n + r - 1) / r;
	for (int l = 0; l + TWO < layers; l += 1 + TWO)
		for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
			const int64_t lo = t * r, rows = lo + r <= n ? r : n - lo;
			const uint16_t *p = w + ((int64_t)l * n + lo) * K;
			mkc_gemv<K, true, NORM>(x, p, K, rows, dots, scale, 1e-5f,
						   TWO ? p + n * K : nullptr);
			for (int64_t i = threadIdx.x; i < rows; i += MKC_THREADS)
				y[(int64_t)l * n + lo + i] = dots[i];
		}
}

/*
 * As the megakernel runs a layer's products: one tile of r rows a block, a
 * phase a layer, and between phases every block waits for all (thread 0
 * adds to a counter with a release and polls it with acquire loads, as
 * exec.cuh's events do). Against gemv_stream's rate this says how much of
 * the gap between the body alone and the body in the kernel is the phase
 * structure (every SM starting and ending together) rather than the code.
 */
template <int K, int NORM, bool TWO = false>
static __global__ void __launch_bounds__(MKC_THREADS, 1)
gemv_phases(const float *x, const uint16_t *w, int64_t n, int layers, int r, float *y,
	    const uint16_t *scale, unsigned long long *counter)
{
	__shared__ float dots[MKC_GEMV_ROWS];
	for (int l = 0; l + TWO < layers; l += 1 + TWO) {
		for (int64_t lo = (int64_t)blockIdx.x * r; lo < n; lo += (int64_t)gridDim.x * r) {
			const int64_t rows = lo + r <= n ? r : n - lo;
			const uint16_t *p = w + ((int64_t)l * n + lo) * K;
			mkc_gemv<K, true, NORM>(x, p, K, rows, dots, scale, 1e-5f,
						   TWO ? p + n * K : nullptr);
			for (int64_t i = threadIdx.x; i < rows; i += MKC_THREADS)
				y[(int64_t)l * n + lo + i] = dots[i];
		}
		__syncthreads();
		if (threadIdx.x == 0) {
			const unsigned long long want = (unsigned long long)(l / (1 + TWO) + 1) * gridDim.x;
			asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(counter) : "memory");
			unsigned long long v;
			do
				asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(counter) : "memory");
			while (v < want);
		}
		__syncthreads();
	}
}

/* every thread sums 16-byte loads, 16 in flight */
static __global__ void
read_stream(const uint4 *p, int64_t n, unsigned *sink)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	unsigned s = 0;
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	for (; i + 15 * stride < n; i += 16 * stride) {
		uint4 v[16];
#pragma unroll
		for (int j = 0; j < 16; j++)
			v[j] = p[i + j * stride];
#pragma unroll
		for (int j = 0; j < 16; j++)
			s ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
	}
	for (; i < n; i += stride)
		s ^= p[i].x;
	if (s == 0x12345678u)
		*sink = s;
}

static float
ms_of(cudaEvent_t a, cudaEvent_t b)
{
	float ms;
	CHECK(cudaEventSynchronize(b));
	CHECK(cudaEventElapsedTime(&ms, a, b));
	return ms;
}

typedef void (*stream_fn)(const float *, const uint16_t *, int64_t, int, int, float *,
			  const uint16_t *);

static void
gemv_case(const char *what, stream_fn f, int K, int sms, const uint16_t *w, const float *x,
	  float *y, const uint16_t *scale, int64_t n, int r)
{
	const int layers = (int)(BYTES / (n * K * 2));
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	f<<<sms, MKC_THREADS>>>(x, w, n, layers, r, y, scale);
	CHECK(cudaEventRecord(a));
	for (int k = 0; k < 5; k++)
		f<<<sms, MKC_THREADS>>>(x, w, n, layers, r, y, scale);
	CHECK(cudaEventRecord(b));
	const double ms = ms_of(a, b) / 5, bytes = (double)layers * n * K * 2;
	printf("%-16s K %5d n %5lld rows/task %2d tasks/layer %4lld: %7.1f GB/s\n", what, K,
	       (long long)n, r, (long long)((n + r - 1) / r), bytes / ms / 1e6);
	CHECK(cudaGetLastError());
}

typedef void (*phase_fn)(const float *, const uint16_t *, int64_t, int, int, float *,
			 const uint16_t *, unsigned long long *);

/* gemv_phases over n rows a layer (tiles of r, one a block when n = blocks * r) */
static void
phase_case(const char *what, phase_fn f, int K, int sms, const uint16_t *w, const float *x,
	   float *y, const uint16_t *scale, int64_t n, int r, unsigned long long *counter)
{
	const int layers = (int)(BYTES / (n * K * 2));
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	float ms = 0;
	for (int k = 0; k < 6; k++) {   /* the first is a warm-up */
		CHECK(cudaMemset(counter, 0, 8));
		CHECK(cudaEventRecord(a));
		f<<<sms, MKC_THREADS>>>(x, w, n, layers, r, y, scale, counter);
		CHECK(cudaEventRecord(b));
		if (k)
			ms += ms_of(a, b) / 5;
		else
			ms_of(a, b);
	}
	printf("%-16s K %5d n %5lld rows/task %2d, a phase a layer: %7.1f GB/s\n", what, K,
	       (long long)n, r, (double)layers * n * K * 2 / ms / 1e6);
	CHECK(cudaGetLastError());
}

static void
read_case(int blocks, int threads, const uint16_t *w, unsigned *sink)
{
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	read_stream<<<blocks, threads>>>((const uint4 *)w, BYTES / 16, sink);
	CHECK(cudaEventRecord(a));
	for (int k = 0; k < 5; k++)
		read_stream<<<blocks, threads>>>((const uint4 *)w, BYTES / 16, sink);
	CHECK(cudaEventRecord(b));
	printf("read %4d blocks x %4d threads: %7.1f GB/s\n", blocks, threads,
	       (double)BYTES / (ms_of(a, b) / 5) / 1e6);
}

int
main(int argc, char **argv)
{
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	if (argc > 1)
		sms = atoi(argv[1]);
	printf("MKC_THREADS %d, MKC_GEMV_INFLIGHT %d, %d blocks\n", MKC_THREADS, MKC_GEMV_INFLIGHT, sms);
	uint16_t *w, *scale;
	float *x, *y;
	unsigned *sink;
	CHECK(cudaMalloc(&w, BYTES));
	CHECK(cudaMemset(w, 0x3c, BYTES));   /* bf16 0x3c3c: about 0.011 */
	CHECK(cudaMalloc(&x, 8192 * 4));
	CHECK(cudaMemset(x, 0, 8192 * 4));
	CHECK(cudaMalloc(&scale, 8192 * 2));
	CHECK(cudaMemset(scale, 0x3f, 8192 * 2));
	CHECK(cudaMalloc(&y, BYTES / 2048 * 4));
	CHECK(cudaMalloc(&sink, 4));
	read_case(sms, MKC_THREADS, w, sink);
	read_case(sms, 1024, w, sink);
	read_case(4 * sms, 512, w, sink);
	const int rs[] = {16, 31, 48, 64};
	for (int i = 0; i < (getenv("GEMV_ALL") ? 4 : 0); i++) {
		gemv_case("mkc_gemv norm", gemv_stream<2048, 2>, 2048, sms, w, x, y, scale, 8192, rs[i]);
		gemv_case("mkc_gemv", gemv_stream<8192, 0>, 8192, sms, w, x, y, scale, 2048, rs[i]);
		gemv_case("warp D8 norm", warp_stream<2048, 2, 8>, 2048, sms, w, x, y, scale, 8192, rs[i]);
		gemv_case("warp D16 norm", warp_stream<2048, 2, 16>, 2048, sms, w, x, y, scale, 8192, rs[i]);
		gemv_case("warp D16", warp_stream<8192, 0, 16>, 8192, sms, w, x, y, scale, 2048, rs[i]);
		gemv_case("warp D32", warp_stream<8192, 0, 32>, 8192, sms, w, x, y, scale, 2048, rs[i]);
	}
	gemv_case("mkc_gemv", gemv_stream<2048, 0>, 2048, sms, w, x, y, scale, 2048, 16);
	/* the 1B step's shapes, one tile a worker, with and without the phases */
	unsigned long long *counter;
	CHECK(cudaMalloc(&counter, 8));
	gemv_case("down", gemv_stream<8192, 0>, 8192, sms, w, x, y, scale, 16 * sms, 16);
	phase_case("down", gemv_phases<8192, 0>, 8192, sms, w, x, y, scale, 16 * sms, 16, counter);
	gemv_case("o_proj", gemv_stream<2048, 0>, 2048, sms, w, x, y, scale, 16 * sms, 16);
	phase_case("o_proj", gemv_phases<2048, 0>, 2048, sms, w, x, y, scale, 16 * sms, 16, counter);
	gemv_case("glu 62+62", gemv_stream<2048, 2, true>, 2048, sms, w, x, y, scale, 62 * sms, 62);
	phase_case("glu 62+62", gemv_phases<2048, 2, true>, 2048, sms, w, x, y, scale, 62 * sms, 62,
		   counter);
	/* the 1B step's MLP: gate and up as two nodes, or as NormGlu's tiles */
	gemv_case("gate, up", gemv_stream<2048, 2>, 2048, sms, w, x, y, scale, 8192, 62);
	gemv_case("glu 31+31", gemv_stream<2048, 2, true>, 2048, sms, w, x, y, scale, 8192, 31);
	if (MKC_GEMV_ROWS >= 124)
		gemv_case("glu 62+62", gemv_stream<2048, 2, true>, 2048, sms, w, x, y, scale, 8192, 62);
	return 0;
}
