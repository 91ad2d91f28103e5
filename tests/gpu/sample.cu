/*
 * sample.cu - runtime/sample.h's draw of the next token on a GPU block,
 * against the same function run on the host (one lane, as the C target
 * runs it), token for token: the same logits and seed must draw the same
 * token on every target (tests/backends/test_sample.c checks the host copy's
 * draws against the probabilities); then the same draws with the
 * vocabulary cut between 264 blocks, a launch a phase (as exec.cuh's
 * sample kernel takes them; generate's grid meets at a barrier instead).
 * Then the time of a draw from 128256 logits both ways.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o sample tests/gpu/sample.cu && ./sample
 *
 * (tools/gpu_check.sh does this, and again with -DMKC_BODIES_HIP: 64 lanes
 * a warp through tests/gpu/hip_on_cuda.h.) A line per case; exit 1 if any
 * differs.
 */
#include "rt_stub.cuh"

/* the draw built for both sides, as portable.cu builds the bodies: the
 * device copy with common.h's lanes and shared atomics, the host copy with
 * the C target's one lane */
#undef MKC_BODY
#define MKC_BODY MKC_HD
#ifndef __CUDA_ARCH__
#undef MKC_LANE
#undef MKC_NLANES
#undef MKC_LANES_SYNC
#define MKC_LANE ((int64_t)0)
#define MKC_NLANES ((int64_t)1)
#define MKC_LANES_SYNC() ((void)0)
#define MKC_SMP_ADD(p, v) (*(p) += (unsigned long long)(v))
#define MKC_SMP_MAX(p, v) (*(p) = *(p) > (unsigned long long)(v) ? *(p) : (unsigned long long)(v))
#endif
#include "../../runtime/sample.h"

enum { DRAWS = 512 };

/* block b: the draw with counter b (the argmax at temperature 0) */
static __global__ void
draws(const void *x, int64_t n, int half, mkc_rt_sampling s, int64_t *out)
{
	__shared__ mkc_rt_sample_scratch sh;
	__shared__ mkc_rt_draw_acc acc;
	const int64_t t = mkc_rt_sample(x, n, half, &s, (uint64_t)blockIdx.x, &sh, &acc);
	if (threadIdx.x == 0)
		out[blockIdx.x] = t;
}

enum { GRID = 264 };

/* phase p of draw ctr, block b of GRID taking its share; then the token */
static __global__ void
grid_phase(int p, const void *x, int64_t n, mkc_rt_sampling s, uint64_t ctr, mkc_rt_draw_acc *acc)
{
	__shared__ mkc_rt_sample_scratch sh;
	int kinds[MKC_DRAW_MAX_PHASES];
	mkc_rt_draw_plan(&s, n, kinds);
	mkc_rt_draw_begin(p, kinds, x, 0, &s, acc, &sh, blockIdx.x == 0);
	mkc_rt_draw_work(kinds[p], x, n * blockIdx.x / GRID, n * (blockIdx.x + 1) / GRID, 0, &s, ctr,
			 acc, &sh);
}

static __global__ void
grid_token(int64_t n, mkc_rt_sampling s, mkc_rt_draw_acc *acc, int64_t *out)
{
	int kinds[MKC_DRAW_MAX_PHASES];
	*out = mkc_rt_draw_token(mkc_rt_draw_plan(&s, n, kinds), acc);
}

/* draw ctr by the grid, into *out (device memory) */
static void
grid_draw(const float *x, int64_t n, mkc_rt_sampling s, uint64_t ctr, mkc_rt_draw_acc *acc,
	  int64_t *out)
{
	int kinds[MKC_DRAW_MAX_PHASES];
	const int np = mkc_rt_draw_plan(&s, n, kinds);
	CHECK(cudaMemsetAsync(acc, 0, sizeof *acc));
	for (int p = 0; p < np; p++)
		grid_phase<<<GRID, MKC_THREADS>>>(p, x, n, s, ctr, acc);
	grid_token<<<1, 1>>>(n, s, acc, out);
}

/* n logits: a spread of values, some ties, a -inf and a NaN */
static float *
make_logits(int64_t n, uint64_t seed)
{
	float *x;
	CHECK(cudaMallocManaged(&x, (size_t)n * sizeof *x));
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (float)((double)(seed >> 11) * 0x1p-53 * 16.0 - 8.0);
		if (i % 97 == 5)
			x[i] = x[i / 2];
	}
	if (n > 3) {
		x[1] = -INFINITY;
		x[2] = NAN;
	}
	return x;
}

static int
check(const char *what, const float *x, int64_t n, mkc_rt_sampling s)
{
	int64_t *dev;
	CHECK(cudaMallocManaged(&dev, DRAWS * sizeof *dev));
	draws<<<DRAWS, MKC_THREADS>>>(x, n, 0, s, dev);
	CHECK(cudaDeviceSynchronize());
	int bad = 0, distinct = 0, gbad = 0;
	static mkc_rt_draw_acc hacc;
	mkc_rt_draw_acc *acc;
	int64_t *g;
	CHECK(cudaMalloc(&acc, sizeof *acc));
	CHECK(cudaMallocManaged(&g, 32 * sizeof *g));
	for (int d = 0; d < 32; d++)
		grid_draw(x, n, s, (uint64_t)d, acc, &g[d]);
	CHECK(cudaDeviceSynchronize());
	for (int d = 0; d < DRAWS; d++) {
		mkc_rt_sample_scratch sh;
		int64_t h = mkc_rt_sample(x, n, 0, &s, (uint64_t)d, &sh, &hacc);
		if (h != dev[d] && bad++ < 3)
			printf("  draw %d: host %lld, device %lld\n", d, (long long)h,
			       (long long)dev[d]);
		if (d < 32 && h != g[d] && gbad++ < 3)
			printf("  draw %d: host %lld, grid %lld\n", d, (long long)h, (long long)g[d]);
		distinct += d > 0 && dev[d] != dev[d - 1];
	}
	printf("%-4s %-44s n %6lld: %d draws, %d differ, %d changes of token; grid: 32, %d differ\n",
	       bad || gbad ? "FAIL" : "ok", what, (long long)n, DRAWS, bad, distinct, gbad);
	bad += gbad;
	CHECK(cudaFree(dev));
	CHECK(cudaFree(acc));
	CHECK(cudaFree(g));
	return bad != 0;
}

int
main(void)
{
	int fails = 0;
	const int64_t sizes[3] = {10, 1000, 128256};
	const struct {
		const char *what;
		mkc_rt_sampling s;
	} cases[] = {
		{"greedy (argmax)", {0, 0, 0, 0}},
		{"temperature 1", {1.0f, 0, 0, 1}},
		{"temperature 0.6", {0.6f, 0, 0, 2}},
		{"temperature 1.3, top-k 40", {1.3f, 40, 0, 3}},
		{"temperature 0.8, top-p 0.9", {0.8f, 0, 0.9f, 4}},
		{"temperature 1, top-k 50, top-p 0.95", {1.0f, 50, 0.95f, 5}},
		{"temperature 2, top-p 0.5", {2.0f, 0, 0.5f, 6}},
	};
	for (int k = 0; k < 3; k++) {
		float *x = make_logits(sizes[k], 17 + (uint64_t)k);
		for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
			fails += check(cases[c].what, x, sizes[k], cases[c].s);
		CHECK(cudaFree(x));
	}
	/* one block, one draw at a time, as generate's block 0 takes it */
	float *x = make_logits(128256, 5);
	int64_t *dev;
	CHECK(cudaMallocManaged(&dev, sizeof *dev));
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		draws<<<1, MKC_THREADS>>>(x, 128256, 0, cases[c].s, dev);
		CHECK(cudaEventRecord(a));
		for (int r = 0; r < 100; r++)
			draws<<<1, MKC_THREADS>>>(x, 128256, 0, cases[c].s, dev);
		CHECK(cudaEventRecord(b));
		CHECK(cudaEventSynchronize(b));
		float ms;
		CHECK(cudaEventElapsedTime(&ms, a, b));
		printf("time %-44s n 128256: %.1f us a draw (one block of %d, a launch each)\n",
		       cases[c].what, ms * 10, MKC_THREADS);
		mkc_rt_draw_acc *acc;
		CHECK(cudaMalloc(&acc, sizeof *acc));
		grid_draw(x, 128256, cases[c].s, 0, acc, dev);
		CHECK(cudaEventRecord(a));
		for (int r = 0; r < 100; r++)
			grid_draw(x, 128256, cases[c].s, (uint64_t)r, acc, dev);
		CHECK(cudaEventRecord(b));
		CHECK(cudaEventSynchronize(b));
		CHECK(cudaEventElapsedTime(&ms, a, b));
		printf("time %-44s n 128256: %.1f us a draw (%d blocks, a launch a phase)\n",
		       cases[c].what, ms * 10, GRID);
		CHECK(cudaFree(acc));
	}
	printf("%s\n", fails ? "FAILED" : "all draws equal");
	return fails != 0;
}
