/*
 * attn.cu - how long one decode-attention part (mkc_attn_part: a key head's
 * query heads over one chunk of positions) takes when every SM runs one at
 * once, as the 1B step's parts do, with the cache in HBM (L2 flushed
 * before each pass) or asked into L2 beforehand (what a worker can do
 * before a part's wait: the cache rows do not depend on the step).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 [-DATTN_HDR='"file.cuh"'] \
 *        -o attn bench/attn.cu && ./attn
 *
 * ATTN_HDR names the body's header (backends/cuda/attention.cuh by
 * default), so that two builds time two versions of the body on the same
 * cases. Printed per case: the median and largest time of a block from its
 * first instruction of the body to its barrier after it, in microseconds
 * (%globaltimer), over the blocks of 20 passes.
 *
 * ./attn paged: the parts of a step of B sequences whose caches are in
 * pages of 16 (the W walk of a --max-seqs file: a warp a sequence's row
 * of one chunk), every sequence at the same context, its pages shuffled
 * over the pool; a block a part row (key head by chunk) over all B
 * sequences, as many blocks as the 1B shape's part rows (8 key heads by
 * 16 chunks), the cache in HBM.
 */
#include <algorithm>
#include <vector>

#include "../tests/gpu/rt_stub.cuh"
#include "../tests/test_data.h"

#ifndef ATTN_HDR
#define ATTN_HDR "../backends/cuda/attention.cuh"
#endif
#include ATTN_HDR

#define PASSES 20

static __device__ __forceinline__ unsigned long long
now_ns(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/*
 * Block r runs part row r (key head r / C, chunk r % C). With warm, thread
 * 0 first asks the row's keys and values into L2 and waits 20 us, as a
 * worker would between its prefetch and the end of the part's wait.
 */
template <int D, int G>
static __global__ void
part_kernel(const float *q, const int64_t *qs, const float *k, const int64_t *ks, const float *v,
	    float *part, const int64_t *ps, int64_t L, int64_t C, float scale, int warm,
	    unsigned long long *ns)
{
	const int64_t r = blockIdx.x, kh = r / C, c = r % C;
	const int64_t t0 = c * L / C, t1 = (c + 1) * L / C;
	if (warm && threadIdx.x == 0 && t1 > t0) {
		const unsigned bytes = (unsigned)((t1 - t0) * D * sizeof(float));
		asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(k + kh * ks[1] + t0 * D),
			     "r"(bytes) : "memory");
		asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(v + kh * ks[1] + t0 * D),
			     "r"(bytes) : "memory");
		const unsigned long long s = now_ns();
		while (now_ns() - s < 20000)
			;
	}
	__syncthreads();
	const unsigned long long s = now_ns();
	mkc_attn_part<D, G>(q, qs, k, ks, v, ks, part, ps, 1, 1, L, C, r, r + 1, scale, NULL);
	__syncthreads();
	if (threadIdx.x == 0)
		ns[r] = now_ns() - s;
}

/* n int64s in a new device buffer */
static int64_t *
dev_ints(const int64_t *h, size_t n)
{
	int64_t *d;
	CHECK(cudaMalloc(&d, n * sizeof *h));
	CHECK(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
	return d;
}

/*
 * PASSES times launch(), each after the cache is flushed out of L2, whose
 * blocks (blocks of them) each write their time into ns: every block's
 * time of every pass, sorted.
 */
template <typename F>
static std::vector<unsigned long long>
block_times(int64_t blocks, unsigned long long *ns, F launch)
{
	static char *flush;
	const size_t flush_bytes = 256u << 20;
	if (!flush)
		CHECK(cudaMalloc(&flush, flush_bytes));
	std::vector<unsigned long long> all, got(blocks);
	for (int p = 0; p < PASSES; p++) {
		CHECK(cudaMemset(flush, p, flush_bytes));
		launch();
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(got.data(), ns, sizeof *ns * blocks, cudaMemcpyDeviceToHost));
		all.insert(all.end(), got.begin(), got.end());
	}
	std::sort(all.begin(), all.end());
	return all;
}

template <int D, int G>
static void
run(int hk, int64_t L, int64_t cap, int64_t C, const char *shape)
{
	const size_t nq = (size_t)hk * G * D, nk = (size_t)hk * cap * D;
	const size_t npart = (size_t)hk * C * G * (D + 2);
	std::vector<float> h(nk);
	for (size_t i = 0; i < nk; i++)
		h[i] = urand();
	float *q, *q2, *k, *v, *part;
	unsigned long long *ns;
	CHECK(cudaMalloc(&q, nq * 4));
	CHECK(cudaMalloc(&q2, nq * 4));
	CHECK(cudaMalloc(&k, nk * 4));
	CHECK(cudaMalloc(&v, nk * 4));
	CHECK(cudaMalloc(&part, npart * 4));
	CHECK(cudaMalloc(&ns, sizeof *ns * hk * C));
	CHECK(cudaMemcpy(q2, h.data(), nq * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(k, h.data(), nk * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(v, h.data(), nk * 4, cudaMemcpyHostToDevice));
	const int64_t qs[4] = {(int64_t)nq, D, D, 1}, ks[4] = {(int64_t)nk, cap * D, D, 1};
	const int64_t ps[4] = {hk * C * G * (D + 2), G * (D + 2), D + 2, 1};
	int64_t *dqs = dev_ints(qs, 4), *dks = dev_ints(ks, 4), *dps = dev_ints(ps, 4);
	for (int warm = 0; warm < 2; warm++) {
		const std::vector<unsigned long long> all = block_times(hk * C, ns, [&] {
			/* the query written just before, as a producer's output is */
			CHECK(cudaMemcpy(q, q2, nq * 4, cudaMemcpyDeviceToDevice));
			part_kernel<D, G><<<hk * C, MKC_THREADS>>>(q, dqs, k, dks, v, part, dps, L, C,
								   0.125f, warm, ns);
		});
		printf("%-12s D %3d G %d  L %5lld  C %2lld  %-6s  median %6.2f us  max %6.2f us\n", shape,
		       D, G, (long long)L, (long long)C, warm ? "in L2" : "HBM", all[all.size() / 2] / 1e3,
		       all.back() / 1e3);
	}
	cudaFree(q);
	cudaFree(q2);
	cudaFree(k);
	cudaFree(v);
	cudaFree(part);
	cudaFree(ns);
	cudaFree(dqs);
	cudaFree(dks);
	cudaFree(dps);
}

template <int D, int G, typename T>
static __global__ void
paged_kernel(const float *q, const int64_t *qs, const T *k, const int64_t *ks, const T *v,
	     float *part, const int64_t *ps, int64_t B, int64_t C, float scale, mkc_rt_pages pg,
	     unsigned long long *ns)
{
	const int64_t r = blockIdx.x;
	__syncthreads();
	const unsigned long long s = now_ns();
	mkc_attn_part<D, G, T, true>(q, qs, k, ks, v, ks, part, ps, 1, B, 0, C, r, r + 1, scale,
				     &pg);
	__syncthreads();
	if (threadIdx.x == 0)
		ns[r] = now_ns() - s;
}

template <int D, int G, typename T>
static void
run_paged(int hk, int64_t B, int64_t n, int64_t C, const char *shape)
{
	const int64_t page = 16, per = (n + page - 1) / page, rows = B * per * page;
	const size_t nq = (size_t)hk * G * B * D, nk = (size_t)hk * rows * D;
	const size_t npart = (size_t)hk * C * G * B * (D + 2);
	std::vector<T> h(nk);
	for (size_t i = 0; i < nk; i++) {
		const float f = urand();
		if (sizeof(T) == 2)
			h[i] = (T)to_bf16(f);
		else
			memcpy(&h[i], &f, sizeof f);
	}
	std::vector<float> hq(nq);
	for (size_t i = 0; i < nq; i++)
		hq[i] = urand();
	/* sequence b's pages: a shuffle of the pool's */
	std::vector<int32_t> tab(B * per), seq(B);
	std::vector<int64_t> pos(B, n - 1);
	for (int64_t i = 0; i < B * per; i++)
		tab[i] = (int32_t)i;
	for (int64_t i = B * per - 1; i > 0; i--) {
		/* urand is in [-1, 1): 0 .. 65535 from it */
		const int64_t j = (int64_t)((urand() + 1.0f) * 32768.0f) % (i + 1);
		std::swap(tab[i], tab[j]);
	}
	for (int64_t b = 0; b < B; b++)
		seq[b] = (int32_t)b;
	float *q, *part;
	T *k, *v;
	unsigned long long *ns;
	mkc_rt_pages pg;
	CHECK(cudaMalloc(&q, nq * 4));
	CHECK(cudaMalloc(&k, nk * sizeof(T)));
	CHECK(cudaMalloc(&v, nk * sizeof(T)));
	CHECK(cudaMalloc(&part, npart * 4));
	CHECK(cudaMalloc(&ns, sizeof *ns * hk * C));
	CHECK(cudaMalloc(&pg.seq, B * 4));
	CHECK(cudaMalloc(&pg.pos, B * 8));
	CHECK(cudaMalloc(&pg.table, B * per * 4));
	pg.page = page;
	pg.per_seq = per;
	CHECK(cudaMemcpy(q, hq.data(), nq * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(k, h.data(), nk * sizeof(T), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(v, h.data(), nk * sizeof(T), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(pg.seq, seq.data(), B * 4, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(pg.pos, pos.data(), B * 8, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(pg.table, tab.data(), B * per * 4, cudaMemcpyHostToDevice));
	const int64_t qs[4] = {(int64_t)nq, B * D, D, 1}, ks[4] = {(int64_t)nk, rows * D, D, 1};
	const int64_t ps[4] = {(int64_t)npart, G * B * (D + 2), D + 2, 1};
	int64_t *dqs = dev_ints(qs, 4), *dks = dev_ints(ks, 4), *dps = dev_ints(ps, 4);
	const std::vector<unsigned long long> all = block_times(hk * C, ns, [&] {
		paged_kernel<D, G, T><<<hk * C, MKC_THREADS>>>(q, dqs, k, dks, v, part, dps, B, C,
							       0.125f, pg, ns);
	});
	printf("%-12s D %3d G %d  %s  B %2lld  context %5lld  C %2lld  paged  median %6.2f us  "
	       "max %6.2f us\n", shape, D, G, sizeof(T) == 2 ? "bf16" : "f32 ", (long long)B,
	       (long long)n, (long long)C, all[all.size() / 2] / 1e3, all.back() / 1e3);
	cudaFree(q);
	cudaFree(k);
	cudaFree(v);
	cudaFree(part);
	cudaFree(ns);
	cudaFree(pg.seq);
	cudaFree(pg.pos);
	cudaFree(pg.table);
	cudaFree(dqs);
	cudaFree(dks);
	cudaFree(dps);
}

int
main(int argc, char **argv)
{
	printf("%s\n", ATTN_HDR);
	if (argc > 1 && strcmp(argv[1], "paged") == 0) {
		for (int64_t B : {8, 64})
			for (int64_t n : {128, 1024}) {
				run_paged<64, 4, float>(8, B, n, 16, "llama-1b");
				run_paged<64, 4, uint16_t>(8, B, n, 16, "llama-1b");
			}
		return 0;
	}
	for (int64_t L : {1, 64, 1024, 4096}) {
		run<64, 4>(8, L, 4160, 16, "llama-1b");
		run<128, 2>(8, L, 4160, 16, "qwen3-0.6b");
	}
	return 0;
}
