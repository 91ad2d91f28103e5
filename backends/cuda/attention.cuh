/*
 * attention.cuh - the CUDA tile body of decode attention, as device code.
 *
 * The emitter calls mkc_attn_rows<D>() from an Attention tile, and
 * mkc_attn_part<D>() from an AttnPart tile (passes/split_attn.c), with the
 * tensors' pointers and strides; they compute, for query rows,
 *
 *   y[b, h, s, :] = softmax(q[b, h, s, :] . k[b, kh, t, :] * scale) over t < L
 *                   times v[b, kh, t, :],        kh = h / (Hq / Hk)
 *
 * Decode has one query row a head and L cached positions, so the work is
 * spread over positions, not output elements. The parts (mkc_attn_group)
 * give a position's key to several lanes, below; the whole-row body
 * (mkc_attn_range, for Attention nodes not split): warp w takes positions in
 * chunks of 32 (chunk c of warp w starts at (c * NWARPS + w) * 32), and in
 * a chunk
 *   - lane i scores position i of the chunk: the dot product of the query
 *     (in shared memory) with its key row, D / 4 independent 16-byte loads;
 *   - the warp folds the chunk into its running maximum and sum (an online
 *     softmax, as flash-decoding does);
 *   - lane i owns output elements i, i + 32, ...: for each position of the
 *     chunk it adds weight * v[t][d], a coalesced 128-byte load a warp.
 * At the end the warps' (maximum, sum, accumulator) meet in shared memory.
 * Every lane of the block calls it (it synchronises the block).
 *
 * The key and value rows are float32, the head size D a multiple of 32
 * (at most 256), no mask and no soft cap: emit_ops.c checks all that and
 * uses the general body otherwise.
 */

#define MKC_ATTN_WARPS (MKC_THREADS / 32)

/* 1: the cache's loads written in PTX (mkc_attn_ld4), as matvec.cuh's */
#ifndef MKC_PTX_LOADS
#define MKC_PTX_LOADS 1
#endif

/*
 * One query row pq against positions t0..t1 of keys pk and values pv (rows
 * kst and vst apart): with y, the normalised output y[0..D); with part,
 * flash-decoding's partial result part[0..D) (unnormalised), part[D] the
 * maximum score, part[D + 1] the sum of exp(score - maximum) (-inf and 0
 * for an empty range). Every lane of the block calls it.
 */
template <int D>
static __device__ void
mkc_attn_range(const float *pq, const float *pk, int64_t kst, const float *pv, int64_t vst,
	       int64_t t0, int64_t t1, float scale, float *y, float *part)
{
	static_assert(D % 32 == 0 && D <= 256, "head size: a multiple of 32, at most 256");
	constexpr int J = D / 32;   /* output elements a lane owns */
	__shared__ float4 qsh[D / 4];
	__shared__ float wm[MKC_ATTN_WARPS], wsum[MKC_ATTN_WARPS], wacc[MKC_ATTN_WARPS][D];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();   /* the last row's reads of qsh and wacc are done */
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		((float *)qsh)[i] = pq[i];
	__syncthreads();
	float mx = -INFINITY, sum = 0, acc[J];
#pragma unroll
	for (int j = 0; j < J; j++)
		acc[j] = 0;
	for (int64_t base = t0 + (int64_t)warp * 32; base < t1; base += 32 * MKC_ATTN_WARPS) {
		const int64_t t = base + lane;
		float sc = -INFINITY;
		if (t < t1) {
			const float4 *kr = (const float4 *)(pk + t * kst);
			float4 kv[D / 4];
#pragma unroll
			for (int i = 0; i < D / 4; i++)
				kv[i] = kr[i];
			float dot = 0;
#pragma unroll
			for (int i = 0; i < D / 4; i++) {
				const float4 a = qsh[i];
				dot += a.x * kv[i].x;
				dot += a.y * kv[i].y;
				dot += a.z * kv[i].z;
				dot += a.w * kv[i].w;
			}
			sc = dot * scale;
		}
		float cm = sc;
		for (int o = 16; o > 0; o >>= 1)
			cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, o));
		const float nm = fmaxf(mx, cm);   /* finite: position base is < t1 */
		const float r = expf(mx - nm), p = expf(sc - nm);
		float ps = p;
		for (int o = 16; o > 0; o >>= 1)
			ps += __shfl_xor_sync(0xffffffffu, ps, o);
		sum = sum * r + ps;
#pragma unroll
		for (int j = 0; j < J; j++)
			acc[j] *= r;
		const int64_t n = t1 - base < 32 ? t1 - base : 32;
		const float *vr = pv + base * vst + lane;
#pragma unroll 8
		for (int i = 0; i < n; i++) {
			const float w = __shfl_sync(0xffffffffu, p, i);
#pragma unroll
			for (int j = 0; j < J; j++)
				acc[j] += w * vr[i * vst + 32 * j];
		}
		mx = nm;
	}
	if (lane == 0) {
		wm[warp] = mx;
		wsum[warp] = sum;
	}
#pragma unroll
	for (int j = 0; j < J; j++)
		wacc[warp][lane + 32 * j] = acc[j];
	__syncthreads();
	float m = -INFINITY, tot = 0;
	for (int w = 0; w < MKC_ATTN_WARPS; w++)
		m = fmaxf(m, wm[w]);
	for (int w = 0; w < MKC_ATTN_WARPS; w++)
		if (wm[w] != -INFINITY)   /* a warp that got no positions */
			tot += wsum[w] * expf(wm[w] - m);
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float out = 0;
		for (int w = 0; w < MKC_ATTN_WARPS; w++)
			if (wm[w] != -INFINITY)
				out += wacc[w][d] * expf(wm[w] - m);
		if (y)
			y[d] = tot > 0 ? out / tot : 0;
		else
			part[d] = out;
	}
	if (part && threadIdx.x == 0) {
		part[D] = m;
		part[D + 1] = tot;
	}
}

/* The query heads h0..h1 of every (batch, position) row over all L positions. */
template <int D>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_rows(const float *q, const int64_t *qs, const float *k, const int64_t *ks,
	      const float *v, const int64_t *vs, float *y, const int64_t *ys, int64_t B,
	      int64_t Sq, int64_t L, int64_t group, int64_t h0, int64_t h1, float scale)
{
	for (int64_t row = 0; row < B * (h1 - h0) * Sq; row++) {
		const int64_t b = row / ((h1 - h0) * Sq), h = h0 + row / Sq % (h1 - h0), s = row % Sq;
		const int64_t kh = h / group;
		mkc_attn_range<D>(q + b * qs[0] + h * qs[1] + s * qs[2], k + b * ks[0] + kh * ks[1], ks[2],
				  v + b * vs[0] + kh * vs[1], vs[2], 0, L, scale,
				  y + b * ys[0] + h * ys[1] + s * ys[2], NULL);
	}
}

/*
 * A predicated load of the cache: the registers it returns are the load's
 * own, zeros when !on. Written as a select (on ? *p : 0), the compiler
 * loads into other registers and moves them, and the move waits for the
 * load at once (see matvec.cuh's mkc_ld16). Plain ld.global: the caches
 * are written in the same launch, before the wait that orders this read.
 */
static __device__ __forceinline__ float4 MKC_UNUSED
mkc_attn_ld4(const float *p, bool on)
{
	float4 v = make_float4(0, 0, 0, 0);
#if MKC_PTX_LOADS
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\t"
		     "@p ld.global.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];\n\t}"
		     : "+f"(v.x), "+f"(v.y), "+f"(v.z), "+f"(v.w)
		     : "l"(__cvta_generic_to_global(p)), "r"((int)on));
#else
	if (on)
		v = *(const float4 *)p;
#endif
	return v;
}

static __device__ __forceinline__ float MKC_UNUSED
mkc_attn_ld1(const float *p, bool on)
{
	float v = 0;
#if MKC_PTX_LOADS
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t"
		     "@p ld.global.L1::no_allocate.f32 %0, [%1];\n\t}"
		     : "+f"(v) : "l"(__cvta_generic_to_global(p)), "r"((int)on));
#else
	if (on)
		v = *p;
#endif
	return v;
}

/*
 * A warp's keys and values for one round of mkc_attn_group: positions
 * base .. base + 32 / (D / 16) (those below t1; zeros for the rest, so
 * that a weight of 0 meets a value of 0). Lane i reads 16 floats of the
 * key of position base + i / (D / 16) (four 16-byte loads, the lanes of a
 * position side by side) and elements i, i + 32, ... of every value row.
 * All of them are independent: one trip to memory for the round.
 */
template <int D>
static __device__ __forceinline__ void
mkc_attn_fetch(const float *pk, int64_t kst, const float *pv, int64_t vst, int64_t base,
	       int64_t t1, float4 (&kv)[4], float (&vv)[32 / (D / 16)][D / 32])
{
	constexpr int KL = D / 16, PW = 32 / KL, J = D / 32;
	const int lane = threadIdx.x & 31;
	const int64_t t = base + lane / KL;
	const float *kr = pk + t * kst + 4 * (lane % KL);
#pragma unroll
	for (int i = 0; i < 4; i++)
		kv[i] = mkc_attn_ld4(kr + 4 * KL * i, t < t1);
#pragma unroll
	for (int p = 0; p < PW; p++)
#pragma unroll
		for (int j = 0; j < J; j++)
			vv[p][j] = mkc_attn_ld1(pv + (base + p) * vst + lane + 32 * j, base + p < t1);
}

/*
 * One round of mkc_attn_group for G query rows (qsh): the warp's positions
 * base .. (keys kv, values vv, fetched by mkc_attn_fetch) folded into the
 * running maximum mx, sum and accumulator acc of each row.
 */
template <int D, int G>
static __device__ __forceinline__ void
mkc_attn_round(const float4 (*qsh)[D / 4], const float4 (&kv)[4],
	       const float (&vv)[32 / (D / 16)][D / 32], bool live, float scale, float *mx,
	       float *sum, float (*acc)[D / 32])
{
	constexpr int KL = D / 16, PW = 32 / KL, J = D / 32;
	const int sub = (threadIdx.x & 31) % KL;
#pragma unroll
	for (int g = 0; g < G; g++) {
		float dot = 0;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const float4 a = qsh[g][sub + KL * i];
			dot += a.x * kv[i].x;
			dot += a.y * kv[i].y;
			dot += a.z * kv[i].z;
			dot += a.w * kv[i].w;
		}
#pragma unroll
		for (int o = KL / 2; o > 0; o >>= 1)
			dot += __shfl_xor_sync(0xffffffffu, dot, o);
		const float sc = live ? dot * scale : -INFINITY;
		float cm = sc;
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, o));
		const float nm = fmaxf(mx[g], cm);   /* finite: the round's first position is < t1 */
		const float r = expf(mx[g] - nm), p = expf(sc - nm);
		float ps = sub == 0 ? p : 0;   /* a position's lanes hold the same p */
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			ps += __shfl_xor_sync(0xffffffffu, ps, o);
		sum[g] = sum[g] * r + ps;
		mx[g] = nm;
#pragma unroll
		for (int j = 0; j < J; j++)
			acc[g][j] *= r;
#pragma unroll
		for (int q = 0; q < PW; q++) {
			const float w = __shfl_sync(0xffffffffu, p, q * KL);
#pragma unroll
			for (int j = 0; j < J; j++)
				acc[g][j] += w * vv[q][j];
		}
	}
}

/*
 * G query rows that share their keys and values (the query heads of one
 * key head), against positions t0..t1, for flash-decoding's partial
 * results: part + g * pst holds row g's D unnormalised sums, its maximum
 * score and its sum of exp(score - maximum).
 *
 * A round is 32 / (D / 16) positions a warp (8 for D = 64) and eight
 * warps: D / 16 lanes share a key row, so a round's keys and values are
 * one load each a lane, all issued at once, and the next round's are
 * issued before this one's scores are computed. A position's score, for
 * all G rows from the one load of its key, is summed over its lanes; the
 * warp folds the round into its running maximum and sum (an online
 * softmax); lane i adds weight * value for output elements i, i + 32, ...
 * At the end the warps' (maximum, sum, accumulator) meet in shared memory.
 * (The body before gave a lane a whole position: at context 1024 two of
 * the eight warps had work, and the values came in eight dependent trips.
 * Measured alone, bench/attn.cu on an H200, a part of the Llama-3.2-1B
 * shape at context 1024 went from 12.6 to 4.7 us; the 1B step from 1.372
 * to 1.321 ms.)
 */
template <int D, int G>
static __device__ void
mkc_attn_group(const float *pq, int64_t qst, const float *pk, int64_t kst, const float *pv,
	       int64_t vst, int64_t t0, int64_t t1, float scale, float *part, int64_t pst)
{
	static_assert(D % 32 == 0 && D <= 256 && G >= 1 && G <= 8, "head size, group");
	constexpr int KL = D / 16, PW = 32 / KL, J = D / 32, NW = MKC_ATTN_WARPS, R = NW * PW;
	__shared__ float4 qsh[G][D / 4];
	__shared__ float wm[NW][G], wsum[NW][G], wacc[NW][G][D];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float4 ka[4], kb[4];
	float va[PW][J], vb[PW][J];
	mkc_attn_fetch<D>(pk, kst, pv, vst, t0 + (int64_t)warp * PW, t1, ka, va);
	__syncthreads();   /* the last call's reads of qsh and wacc are done */
	for (int i = threadIdx.x; i < G * D; i += blockDim.x)
		((float *)qsh)[i] = pq[i / D * qst + i % D];
	__syncthreads();
	float mx[G], sum[G], acc[G][J];
#pragma unroll
	for (int g = 0; g < G; g++) {
		mx[g] = -INFINITY;
		sum[g] = 0;
#pragma unroll
		for (int j = 0; j < J; j++)
			acc[g][j] = 0;
	}
	/* two register sets in turn (a, b), so that no copy waits for the
	 * round behind: while one round is summed the next is in flight */
	for (int64_t base = t0 + (int64_t)warp * PW; base < t1; base += 2 * R) {
		mkc_attn_fetch<D>(pk, kst, pv, vst, base + R, t1, kb, vb);
		mkc_attn_round<D, G>(qsh, ka, va, base + lane / KL < t1, scale, mx, sum, acc);
		if (base + R >= t1)
			break;
		mkc_attn_fetch<D>(pk, kst, pv, vst, base + 2 * R, t1, ka, va);
		mkc_attn_round<D, G>(qsh, kb, vb, base + R + lane / KL < t1, scale, mx, sum, acc);
	}
#pragma unroll
	for (int g = 0; g < G; g++) {
		if (lane == 0) {
			wm[warp][g] = mx[g];
			wsum[warp][g] = sum[g];
		}
#pragma unroll
		for (int j = 0; j < J; j++)
			wacc[warp][g][lane + 32 * j] = acc[g][j];
	}
	__syncthreads();
	for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
		const int g = i / D, d = i % D;
		float m = -INFINITY, tot = 0, out = 0;
		for (int w = 0; w < NW; w++)
			m = fmaxf(m, wm[w][g]);
		for (int w = 0; w < NW; w++)
			if (wm[w][g] != -INFINITY) {   /* a warp that got no positions */
				const float f = expf(wm[w][g] - m);
				tot += wsum[w][g] * f;
				out += wacc[w][g][d] * f;
			}
		float *pp = part + g * pst;
		pp[d] = out;
		if (d == 0) {
			pp[D] = m;
			pp[D + 1] = tot;
		}
	}
}

/*
 * AttnPart (passes/split_attn.c): rows r0..r1 of part [B, Hk * C, G * Sq,
 * D + 2], row r being key head r / C over chunk r % C of the L positions,
 * for each of the G query heads of that key head and each query position.
 */
template <int D, int G>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_part(const float *q, const int64_t *qs, const float *k, const int64_t *ks,
	      const float *v, const int64_t *vs, float *part, const int64_t *ps, int64_t B,
	      int64_t Sq, int64_t L, int64_t C, int64_t r0, int64_t r1, float scale)
{
	for (int64_t b = 0; b < B; b++)
		for (int64_t r = r0; r < r1; r++) {
			const int64_t kh = r / C, c = r % C;
			for (int64_t s = 0; s < Sq; s++)
				mkc_attn_group<D, G>(q + b * qs[0] + kh * G * qs[1] + s * qs[2], qs[1],
						     k + b * ks[0] + kh * ks[1], ks[2],
						     v + b * vs[0] + kh * vs[1], vs[2], c * L / C,
						     (c + 1) * L / C, scale,
						     part + b * ps[0] + r * ps[1] + s * ps[2], Sq * ps[2]);
		}
}

