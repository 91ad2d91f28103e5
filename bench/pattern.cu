/*
 * pattern.cu - whether the way the few-token tile (backends/cuda/mma.cuh's
 * mkc_few_rows) spreads its weight loads over rows is what holds it near
 * 2.2 TB/s where the decode matvec streams about 3.3: the loads alone, no
 * products (each lane xors what came in), one block of 256 threads an SM,
 * a tile of a product's rows a block as the few-token plan cuts it, the
 * weights cold (each launch reads another copy of them, 8 copies apart).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o pattern bench/pattern.cu && ./pattern
 *
 * Patterns (16-byte loads, NL of them a lane a batch, the next batch
 * issued before this one is used, as the tile does):
 *   rows   the matvec's: the block takes its rows a few at a time, thread t
 *          the 16-byte chunks t, t + 256, ... of every row (a warp
 *          instruction: 512 bytes of one row)
 *   few    the few tile's: warps as groups of 32 rows by splits of K (4 by
 *          2 for a tile of more than 64 rows, 1 by 8 for 32 or fewer), lane
 *          (r, q) rows r, r + 8 of each 16-row block at k 8 q.. of a group of
 *          32 k, a split's groups side by side (a warp instruction: 8 rows
 *          by 64 bytes)
 *   wide   the same rows and K a warp, an instruction 4 rows by 128 bytes
 *   long   the same, an instruction 1 row by 512 bytes
 *   tiled  few's loads, the weights laid out in blocks of 16 rows by 32 k
 *          in the order the lanes read them (an instruction: 512
 *          contiguous bytes; session 38's s38-tiled)
 * Printed: the median of 20 launches in us and the bytes over it.
 */
#include <algorithm>
#include <vector>

#include "../tests/gpu/rt_stub.cuh"

enum { P_ROWS, P_FEW, P_WIDE, P_LONG, P_TILED };
static const char *pname[] = {"rows", "few", "wide", "long", "tiled"};

/* a lane's pieces of a group (32 k for few and tiled, 64 for wide, 256 for long) */
template <int P>
struct pat {
	static constexpr int PG = P == P_WIDE ? 8 : P == P_LONG ? 32 : 4;
	static constexpr int GK = P == P_WIDE ? 8 : P == P_LONG ? 32 : 4;   /* 16-byte chunks a group */
};

/*
 * This lane's piece j of the tile (nr rows of k8 16-byte chunks), as an
 * index of 16-byte chunks from the tile's first, or -1: shifts and
 * compares only, so that the loads, not the addresses, take the time.
 */
template <int P>
static __device__ __forceinline__ int64_t
piece(int j, int nr, int k8)
{
	const int t = threadIdx.x, lane = t & 31, warp = t >> 5, r = lane >> 2, q = lane & 3;
	if (P == P_ROWS) {   /* k8 a power-of-2 multiple of MKC_THREADS: 2^lc chunks a thread a row */
		const int lc = __ffs(k8 / MKC_THREADS) - 1, row = j >> lc;
		const int ch = t + (j & ((1 << lc) - 1)) * MKC_THREADS;
		return row < nr ? (int64_t)row * k8 + ch : -1;
	}
	constexpr int PG = pat<P>::PG, GK = pat<P>::GK;
	const int rg = nr > 64 ? 4 : nr > 32 ? 2 : 1, ks = 8 / rg, gi = warp / ks, s = warp % ks;
	const int ng = k8 / GK, per = (ng + ks - 1) / ks, gb = s * per;
	const int ge = gb + per < ng ? gb + per : ng, g = gb + j / PG, i = j % PG;
	int row, ch;
	if (P == P_FEW || P == P_TILED) {
		row = gi * 32 + i / 2 * 16 + r + (i % 2) * 8;
		ch = g * GK + q;
	} else if (P == P_WIDE) {
		row = gi * 32 + i * 4 + (lane >> 3);
		ch = g * GK + (lane & 7);
	} else {
		row = gi * 32 + i;
		ch = g * GK + lane;
	}
	if (g >= ge || row >= nr)
		return -1;
	if (P == P_TILED)   /* block (16-row block, group): 1 KB, rows r and r + 8's halves */
		return ((int64_t)((gi * 2 + i / 2) * ng + g) * 2 + i % 2) * 32 + lane;
	return (int64_t)row * k8 + ch;
}

template <int P, int NL>
static __device__ __forceinline__ void
fetch(uint4 (&v)[NL], const uint4 *w, int j0, int nr, int k8)
{
#pragma unroll
	for (int i = 0; i < NL; i++) {
		const int64_t at = piece<P>(j0 + i, nr, k8);
		v[i] = mkc_ld16<true>(at >= 0 ? w + at : w, at >= 0);
	}
}

template <int NL>
static __device__ __forceinline__ unsigned
fold(const uint4 (&v)[NL], unsigned acc)
{
#pragma unroll
	for (int i = 0; i < NL; i++)
		acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
	return acc;
}

/* block b reads rows b * tw .. of w ([n, k8] chunks); n_pieces: a lane's most */
template <int P, int NL>
static __global__ void
pattern_kernel(const uint4 *w, int64_t n, int64_t k8, int64_t tw, int64_t n_pieces, unsigned *out)
{
	const int64_t r0 = blockIdx.x * tw;
	const int nr = (int)(n - r0 < tw ? n - r0 : tw), kc = (int)k8;
	const uint4 *tile = w + r0 * k8;
	uint4 a[NL], b[NL];
	unsigned acc = 0;
	fetch<P, NL>(a, tile, 0, nr, kc);
	for (int j = 0; j < n_pieces; j += 2 * NL) {
		fetch<P, NL>(b, tile, j + NL, nr, kc);
		acc = fold<NL>(a, acc);
		if (j + NL >= n_pieces)
			break;
		fetch<P, NL>(a, tile, j + 2 * NL, nr, kc);
		acc = fold<NL>(b, acc);
	}
	out[blockIdx.x * MKC_THREADS + threadIdx.x] = acc;
}

template <int P, int NL>
static void
time_one(const char *what, const uint4 *w, size_t copy, int64_t n, int64_t k, unsigned *out, int sms)
{
	const int64_t k8 = k / 8;
	int64_t tiles = sms;
	while ((n + tiles - 1) / tiles > 128)
		tiles += sms;
	const int64_t tw = (n + tiles - 1) / tiles;
	/* a lane's pieces at most: every row's chunks (rows), or its split's groups' */
	const int64_t ks = 8 / (tw > 64 ? 4 : tw > 32 ? 2 : 1);
	const int64_t n_pieces = P == P_ROWS ? tw * (k8 / MKC_THREADS)
					     : (k8 / pat<P>::GK + ks - 1) / ks * pat<P>::PG;
	cudaEvent_t e0, e1;
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	std::vector<float> ms;
	for (int i = 0; i < 21; i++) {
		CHECK(cudaEventRecord(e0));
		pattern_kernel<P, NL><<<tiles, MKC_THREADS>>>(w + (i % 8) * copy, n, k8, tw, n_pieces,
							      out);
		CHECK(cudaEventRecord(e1));
		CHECK(cudaEventSynchronize(e1));
		float t;
		CHECK(cudaEventElapsedTime(&t, e0, e1));
		if (i)
			ms.push_back(t);
	}
	std::sort(ms.begin(), ms.end());
	const double us = ms[ms.size() / 2] * 1e3, bytes = (double)n * k * 2;
	printf("%-10s %5lld x %5lld, %3lld rows a tile  %-6s %2d loads a batch  %7.1f us  %5.0f GB/s\n",
	       what, (long long)n, (long long)k, (long long)tw, pname[P], NL, us, bytes / us * 1e-3);
	CHECK(cudaEventDestroy(e0));
	CHECK(cudaEventDestroy(e1));
}

template <int NL>
static void
time_all(const char *what, const uint4 *w, size_t copy, int64_t n, int64_t k, unsigned *out, int sms)
{
	time_one<P_ROWS, NL>(what, w, copy, n, k, out, sms);
	time_one<P_FEW, NL>(what, w, copy, n, k, out, sms);
	time_one<P_WIDE, NL>(what, w, copy, n, k, out, sms);
	time_one<P_LONG, NL>(what, w, copy, n, k, out, sms);
	time_one<P_TILED, NL>(what, w, copy, n, k, out, sms);
}

int
main(void)
{
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const size_t copy = (size_t)128 << 20 >> 4;   /* 128 MB apart, in 16-byte chunks */
	uint4 *w;
	unsigned *out;
	CHECK(cudaMalloc(&w, copy * 16 * 9));
	CHECK(cudaMemset(w, 1, copy * 16 * 9));
	CHECK(cudaMalloc(&out, (size_t)sms * 8 * MKC_THREADS * sizeof *out));
	for (int nl : {8, 16}) {
		const struct {
			const char *what;
			int64_t n, k;
		} shapes[] = {{"gate/up", 16384, 2048}, {"down_proj", 2048, 8192}, {"q/k/v", 3072, 2048}};
		for (const auto &s : shapes)
			if (nl == 8)
				time_all<8>(s.what, w, copy, s.n, s.k, out, sms);
			else
				time_all<16>(s.what, w, copy, s.n, s.k, out, sms);
	}
	cudaFree(w);
	cudaFree(out);
	return 0;
}
