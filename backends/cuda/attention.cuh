/*
 * attention.cuh - the GPU tile body (CUDA and HIP) of decode attention.
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
 * chunks of MKC_WARP (W: chunk c of warp w starts at (c * NWARPS + w) * W),
 * and in a chunk
 *   - lane i scores position i of the chunk: the dot product of the query
 *     (in shared memory) with its key row, D / 4 independent 16-byte loads;
 *   - the warp folds the chunk into its running maximum and sum (an online
 *     softmax, as flash-decoding does);
 *   - lane i owns output elements i, i + W, ...: for each position of the
 *     chunk it adds weight * v[t][d], a coalesced load of W values a warp.
 * At the end the warps' (maximum, sum, accumulator) meet in shared memory.
 * Every lane of the block calls it (it synchronises the block).
 *
 * The key and value rows are float32 (the parts also take a bf16 cache,
 * T = uint16_t: passes/kv.c), the head size D a multiple of MKC_WARP (at
 * most 256), no mask and no soft cap: emit_ops.c checks all that and uses
 * the general body otherwise. The caches are read with mkc_ld16 and
 * mkc_ld_small (the sync header's predicated loads): they were written in
 * the same launch, before the wait that orders this read.
 */

#define MKC_ATTN_WARPS (MKC_THREADS / MKC_WARP)

/* The maximum of v over the warp, in every lane. */
static __device__ __forceinline__ float MKC_UNUSED
mkc_attn_warp_max(float v)
{
	for (int o = MKC_WARP / 2; o > 0; o >>= 1)
		v = fmaxf(v, mkc_shfl_xor(v, o));
	return v;
}

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
	static_assert(D % MKC_WARP == 0 && D <= MKC_ATTN_MAX_D, "head size: a multiple of MKC_WARP");
	constexpr int J = D / MKC_WARP;   /* output elements a lane owns */
	__shared__ float4 qsh[D / 4];
	__shared__ float wm[MKC_ATTN_WARPS], wsum[MKC_ATTN_WARPS], wacc[MKC_ATTN_WARPS][D];
	const int lane = threadIdx.x % MKC_WARP, warp = threadIdx.x / MKC_WARP;
	__syncthreads();   /* the last row's reads of qsh and wacc are done */
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		((float *)qsh)[i] = pq[i];
	__syncthreads();
	float mx = -INFINITY, sum = 0, acc[J];
#pragma unroll
	for (int j = 0; j < J; j++)
		acc[j] = 0;
	for (int64_t base = t0 + (int64_t)warp * MKC_WARP; base < t1;
	     base += MKC_WARP * MKC_ATTN_WARPS) {
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
		const float nm = fmaxf(mx, mkc_attn_warp_max(sc));   /* finite: position base is < t1 */
		const float r = expf(mx - nm), p = expf(sc - nm);
		sum = sum * r + mkc_rt_warp_sum(p);
#pragma unroll
		for (int j = 0; j < J; j++)
			acc[j] *= r;
		const int64_t n = t1 - base < MKC_WARP ? t1 - base : MKC_WARP;
		const float *vr = pv + base * vst + lane;
#pragma unroll 8
		for (int i = 0; i < n; i++) {
			const float w = mkc_shfl(p, i);
#pragma unroll
			for (int j = 0; j < J; j++)
				acc[j] += w * vr[i * vst + MKC_WARP * j];
		}
		mx = nm;
	}
	if (lane == 0) {
		wm[warp] = mx;
		wsum[warp] = sum;
	}
#pragma unroll
	for (int j = 0; j < J; j++)
		wacc[warp][lane + MKC_WARP * j] = acc[j];
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
 * How mkc_attn_group spreads a round over a warp, for head size D (a power
 * of 2: the emitter checks) and the cache's element type T (float, or
 * uint16_t for bf16). A key row is read by KL lanes, 16 elements each in
 * NK 16-byte loads (load i of lane l holds elements V * (l % KL + KL * i)
 * on), so a warp scores PW positions a round. The round's value rows are
 * PW * VC 16-byte pieces (VC a row), NV a lane: piece l + MKC_WARP * i of
 * the round is lane l's load i (row (l + MKC_WARP * i) / VC). A lane sums
 * weight * value for the AE elements of its pieces of the rows (one piece,
 * l % VC, where a row is at most a warp's pieces; else VC / MKC_WARP of
 * them); the VP lanes that hold the same piece fold their sums at the end
 * of the walk (mkc_attn_fold), after which lane l holds J elements of the
 * output (mkc_attn_dim).
 * (Measured, session 11: a bf16 cache read 32 key elements and two values
 * a lane, twice the positions a round in the same registers on paper,
 * made the 1B kernel spill and its step 70 us slower at every context.
 * Until session 42 a lane loaded element l, l + MKC_WARP, ... of every
 * row of the round, 2 or 4 bytes a load: 16 loads a round for D = 64,
 * where the pieces take NV = sizeof(T), 4 or 2.)
 */
template <int D, typename T>
struct mkc_attn_shape {
	static constexpr int V = 16 / (int)sizeof(T);
	static constexpr int NK = 16 / V;
	static constexpr int KL = D / 16;
	static constexpr int PW = MKC_WARP / KL;
	static constexpr int J = D / MKC_WARP;
	static constexpr int VC = D / V;
	static constexpr int NV = PW * VC / MKC_WARP;
	static constexpr int VP = VC < MKC_WARP ? MKC_WARP / VC : 1;
	static constexpr int AE = VC > MKC_WARP ? V * (VC / MKC_WARP) : V;
	static_assert((D & (D - 1)) == 0 && PW * KL == MKC_WARP && NV * MKC_WARP == PW * VC &&
			      AE == J * VP,
		      "the head size: a power of 2, a multiple of the warp's lanes");
};

/* Element e of the 16 bytes w of T elements (float, or bf16), as a float. */
static __device__ __forceinline__ uint32_t MKC_UNUSED
mkc_attn_word(uint4 w, int i)
{
	return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w;
}

static __device__ __forceinline__ float MKC_UNUSED
mkc_attn_elem(uint4 w, int e, float)
{
	return __uint_as_float(mkc_attn_word(w, e));
}

static __device__ __forceinline__ float MKC_UNUSED
mkc_attn_elem(uint4 w, int e, uint16_t)
{
	const uint32_t x = mkc_attn_word(w, e / 2);
	return __uint_as_float(e % 2 ? x & 0xffff0000u : x << 16);
}

/*
 * The output element of lane's sum j (0 .. J) after mkc_attn_fold: of its
 * piece lane % VC, the J elements of its share lane / VC, where VP lanes
 * hold a piece; else (a lane a piece, or more) element j of its pieces.
 */
template <int D, typename T, typename S = mkc_attn_shape<D, T>>
static __device__ __forceinline__ int MKC_UNUSED
mkc_attn_dim(int lane, int j)
{
	return S::VP > 1 ? lane % S::VC * S::V + lane / S::VC * S::J + j
			 : (lane + MKC_WARP * (j / S::V)) * S::V + j % S::V;
}

/*
 * The VP lanes that hold a piece (mkc_attn_shape) add up their sums of its
 * AE elements, halving them at each step: the lane whose bit o is set
 * keeps the upper half and adds its partner's, so lane l ends with the
 * share l / VC of J elements in acc[0 .. J) (mkc_attn_dim says which).
 */
template <int D, typename T, typename S = mkc_attn_shape<D, T>>
static __device__ __forceinline__ void
mkc_attn_fold(float (&acc)[S::AE])
{
	const int lane = threadIdx.x % MKC_WARP;
	int len = S::AE;
#pragma unroll
	for (int o = MKC_WARP / 2; o >= S::VC; o >>= 1) {
		len /= 2;
		const bool up = lane & o;
#pragma unroll
		for (int e = 0; e < S::AE / 2; e++)
			if (e < len) {
				const float keep = up ? acc[e + len] : acc[e];
				const float give = up ? acc[e] : acc[e + len];
				acc[e] = keep + mkc_shfl_xor(give, o);
			}
	}
}

/*
 * A warp's keys and values for one round of mkc_attn_group: positions
 * base .. base + PW (those below t1; zeros for the rest, so that a weight
 * of 0 meets a value of 0), laid out as mkc_attn_shape says. All the loads
 * are independent: one trip to memory for the round. With a page table
 * (tab, pages of page positions: caches in pages) position t is row
 * tab[t / page] * page + t % page; base is then a multiple of PW and page
 * of PW (the emitter checks), so the round's positions are one page's.
 */
template <int D, typename T, typename S = mkc_attn_shape<D, T>>
static __device__ __forceinline__ void
mkc_attn_fetch(const T *pk, int64_t kst, const T *pv, int64_t vst, int64_t base, int64_t t1,
	       const int32_t *tab, int64_t page, uint4 (&kv)[S::NK], uint4 (&vv)[S::NV])
{
	const int lane = threadIdx.x % MKC_WARP;
	const int64_t t = base + lane / S::KL;
	/* the round's first row (none past the sequence's positions: its table ends) */
	const int64_t row = !tab ? base : base < t1 ? (int64_t)tab[base / page] * page + base % page : 0;
	const T *kr = pk + (row + lane / S::KL) * kst + S::V * (lane % S::KL);
#pragma unroll
	for (int i = 0; i < S::NK; i++)
		kv[i] = mkc_ld16<false>(kr + S::V * S::KL * i, t < t1);
#pragma unroll
	for (int i = 0; i < S::NV; i++) {
		const int piece = lane + MKC_WARP * i, p = piece / S::VC;
		vv[i] = mkc_ld16<false>(pv + (row + p) * vst + S::V * (piece % S::VC), base + p < t1);
	}
}

/* dot + q[0..V) . the V elements of T in the 16 bytes k, in order. */
static __device__ __forceinline__ float MKC_UNUSED
mkc_attn_dot16(float dot, const float4 *q, uint4 k, float)
{
	return mkc_rt_fma4(dot, q[0], k);
}

static __device__ __forceinline__ float MKC_UNUSED
mkc_attn_dot16(float dot, const float4 *q, uint4 k, uint16_t)
{
	return mkc_rt_fma8_bf16(dot, q[0], q[1], k);
}

/*
 * One round of mkc_attn_group for G query rows (qsh): the warp's positions
 * base .. (keys kv, values vv, fetched by mkc_attn_fetch) folded into the
 * running maximum mx, sum and accumulator acc of each row.
 */
template <int D, int G, typename T, typename S = mkc_attn_shape<D, T>>
static __device__ __forceinline__ void
mkc_attn_round(const float4 (*qsh)[D / 4], const uint4 (&kv)[S::NK], const uint4 (&vv)[S::NV],
	       bool live, float scale, float *mx, float *sum, float (*acc)[S::AE])
{
	const int lane = threadIdx.x % MKC_WARP, sub = lane % S::KL;
#pragma unroll
	for (int g = 0; g < G; g++) {
		float dot = 0;
#pragma unroll
		for (int i = 0; i < S::NK; i++)
			dot = mkc_attn_dot16(dot, &qsh[g][S::V / 4 * (sub + S::KL * i)], kv[i], T());
#pragma unroll
		for (int o = S::KL / 2; o > 0; o >>= 1)
			dot += mkc_shfl_xor(dot, o);
		const float sc = live ? dot * scale : -INFINITY;
		/* finite: the round's first position is < t1 */
		const float nm = fmaxf(mx[g], mkc_attn_warp_max(sc));
		const float r = expf(mx[g] - nm), p = expf(sc - nm);
		/* a position's lanes hold the same p: its first lane's counts */
		sum[g] = sum[g] * r + mkc_rt_warp_sum(sub == 0 ? p : 0);
		mx[g] = nm;
#pragma unroll
		for (int e = 0; e < S::AE; e++)
			acc[g][e] *= r;
#pragma unroll
		for (int i = 0; i < S::NV; i++) {
			/* load i's row, and which of the lane's pieces it is */
			const int piece = lane + MKC_WARP * i, a = piece % S::VC / MKC_WARP;
			const float w = mkc_shfl(p, piece / S::VC * S::KL);
#pragma unroll
			for (int e = 0; e < S::V; e++)
				acc[g][S::V * a + e] += w * mkc_attn_elem(vv[i], e, T());
		}
	}
}

/*
 * The walk of one warp over positions start, start + step, ... below t1, PW
 * a round (ka, va: the first round's keys and values, already fetched),
 * folded into fresh running maxima mx, sums and accumulators acc of the G
 * rows in qsh: two register sets in turn (a, b), so that no copy waits for
 * the round behind; while one round is summed the next is in flight. At
 * the end acc[g][0 .. J) holds the lane's J output elements (mkc_attn_dim).
 */
template <int D, int G, typename T, typename S = mkc_attn_shape<D, T>>
static __device__ __forceinline__ void
mkc_attn_walk(const float4 (*qsh)[D / 4], const T *pk, int64_t kst, const T *pv, int64_t vst,
	      int64_t start, int64_t step, int64_t t1, const int32_t *tab, int64_t page,
	      float scale, uint4 (&ka)[S::NK], uint4 (&va)[S::NV], float *mx, float *sum,
	      float (*acc)[S::AE])
{
	const int lane = threadIdx.x % MKC_WARP;
	uint4 kb[S::NK], vb[S::NV];
#pragma unroll
	for (int g = 0; g < G; g++) {
		mx[g] = -INFINITY;
		sum[g] = 0;
#pragma unroll
		for (int e = 0; e < S::AE; e++)
			acc[g][e] = 0;
	}
	for (int64_t base = start; base < t1; base += 2 * step) {
		mkc_attn_fetch<D>(pk, kst, pv, vst, base + step, t1, tab, page, kb, vb);
		mkc_attn_round<D, G, T>(qsh, ka, va, base + lane / S::KL < t1, scale, mx, sum, acc);
		if (base + step >= t1)
			break;
		mkc_attn_fetch<D>(pk, kst, pv, vst, base + 2 * step, t1, tab, page, ka, va);
		mkc_attn_round<D, G, T>(qsh, kb, vb, base + step + lane / S::KL < t1, scale, mx, sum,
					acc);
	}
#pragma unroll
	for (int g = 0; g < G; g++)
		mkc_attn_fold<D, T>(acc[g]);
}

/*
 * G query rows that share their keys and values (the query heads of one
 * key head), against positions t0..t1 (through the page table tab, pages
 * of page positions, where not NULL: mkc_attn_fetch), for flash-decoding's
 * partial results: part + g * pst holds row g's D unnormalised sums, its
 * maximum score and its sum of exp(score - maximum).
 *
 * A round is PW positions a warp (mkc_attn_shape: 8 for D = 64 on 32-lane
 * warps) and every warp of the block: KL lanes share a key row, so a
 * round's keys and values are a few 16-byte loads each a lane, all issued
 * at once, and the next round's are issued before this one's scores are
 * computed. A position's score, for all G rows from the one load of its
 * key, is summed over its lanes; the warp folds the round into its running
 * maximum and sum (an online softmax); a lane adds weight * value for the
 * elements of its pieces of the value rows, and the lanes' sums of a piece
 * fold at the end of the walk. Then the warps' (maximum, sum, accumulator)
 * meet in shared memory.
 * (The body before gave a lane a whole position: at context 1024 two of
 * the eight warps had work, and the values came in eight dependent trips.
 * Measured alone, bench/attn.cu on an H200, a part of the Llama-3.2-1B
 * shape at context 1024 went from 12.6 to 4.7 us; the 1B step from 1.372
 * to 1.321 ms.)
 */
template <int D, int G, typename T>
static __device__ void
mkc_attn_group(const float *pq, int64_t qst, const T *pk, int64_t kst, const T *pv, int64_t vst,
	       int64_t t0, int64_t t1, const int32_t *tab, int64_t page, float scale, float *part,
	       int64_t pst)
{
	static_assert(D % MKC_WARP == 0 && D <= MKC_ATTN_MAX_D && G >= 1 && G <= MKC_ATTN_MAX_GROUP,
		      "head size, group");
	typedef mkc_attn_shape<D, T> S;
	constexpr int NW = MKC_ATTN_WARPS, R = NW * S::PW;
	__shared__ float4 qsh[G][D / 4];
	__shared__ float wm[NW][G], wsum[NW][G], wacc[NW][G][D];
	const int lane = threadIdx.x % MKC_WARP, warp = threadIdx.x / MKC_WARP;
	uint4 ka[S::NK], va[S::NV];
	mkc_attn_fetch<D>(pk, kst, pv, vst, t0 + (int64_t)warp * S::PW, t1, tab, page, ka, va);
	__syncthreads();   /* the last call's reads of qsh and wacc are done */
	for (int i = threadIdx.x; i < G * D; i += blockDim.x)
		((float *)qsh)[i] = pq[i / D * qst + i % D];
	__syncthreads();
	float mx[G], sum[G], acc[G][S::AE];
	mkc_attn_walk<D, G, T>(qsh, pk, kst, pv, vst, t0 + (int64_t)warp * S::PW, R, t1, tab, page,
			       scale, ka, va, mx, sum, acc);
#pragma unroll
	for (int g = 0; g < G; g++) {
		if (lane == 0) {
			wm[warp][g] = mx[g];
			wsum[warp][g] = sum[g];
		}
#pragma unroll
		for (int j = 0; j < S::J; j++)
			wacc[warp][g][mkc_attn_dim<D, T>(lane, j)] = acc[g][j];
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
 * The partial results of mkc_attn_group by one warp alone, its rounds of
 * PW positions one after another (the next in flight while one is
 * summed), no barrier of the block: the query rows in the warp's own slot
 * qsh of shared memory, the sums written by the warp. A step of several
 * sequences (caches in pages) gives a part tile one chunk of each of its
 * rows' sequences, a few rounds each, and the block's walk of one row at
 * a time (8 warps over a chunk, three barriers a row) cost 85 us a tile
 * of 64 rows at context 128 (the 1B shape, 64 sequences, H100, session
 * 32: 2.9 of the step's 6.8 ms). Every lane of the warp calls it.
 */
template <int D, int G, typename T>
static __device__ void
mkc_attn_group_warp(const float *pq, int64_t qst, const T *pk, int64_t kst, const T *pv,
		    int64_t vst, int64_t t0, int64_t t1, const int32_t *tab, int64_t page,
		    float scale, float *part, int64_t pst, float4 (*qsh)[D / 4])
{
	static_assert(D % MKC_WARP == 0 && D <= MKC_ATTN_MAX_D && G >= 1 && G <= MKC_ATTN_MAX_GROUP,
		      "head size, group");
	typedef mkc_attn_shape<D, T> S;
	const int lane = threadIdx.x % MKC_WARP;
	uint4 ka[S::NK], va[S::NV];
	mkc_attn_fetch<D>(pk, kst, pv, vst, t0, t1, tab, page, ka, va);
	/* a chunk without positions (most of a short context's) needs no query:
	 * its sums are written as they start (the maximum -inf weighs nothing) */
	if (t0 < t1) {
		mkc_warp_sync();   /* the warp's last row's reads of qsh are done */
		for (int i = lane; i < G * D; i += MKC_WARP)
			((float *)qsh)[i] = pq[i / D * qst + i % D];
		mkc_warp_sync();
	}
	float mx[G], sum[G], acc[G][S::AE];
	mkc_attn_walk<D, G, T>(qsh, pk, kst, pv, vst, t0, S::PW, t1, tab, page, scale, ka, va, mx,
			       sum, acc);
#pragma unroll
	for (int g = 0; g < G; g++) {
		float *pp = part + g * pst;
#pragma unroll
		for (int j = 0; j < S::J; j++)
			pp[mkc_attn_dim<D, T>(lane, j)] = acc[g][j];
		if (lane == 0) {
			pp[D] = mx[g];
			pp[D + 1] = sum[g];
		}
	}
}

/*
 * AttnPart (passes/split_attn.c): rows r0..r1 of part [B, Hk * C, G * Sq,
 * D + 2], row r being key head r / C over chunk r % C of the L positions,
 * for each of the G query heads of that key head and each query position.
 * The caches k and v are float32 (T float) or bf16 (T uint16_t). With
 * caches in pages (pg), query position s's are its sequence's 0 ..
 * pg->pos[s], and chunk c's are those of its chunk j =
 * mkc_rt_part_chunk(c, C, s), mkc_rt_part_lo(j) .. mkc_rt_part_lo(j + 1)
 * (multiples of 32, so a round never crosses a page).
 *
 * W (the emitter's choice: paged caches, steps of at least
 * MKC_ATTN_WARPS query positions, 32-lane warps): a step of that many
 * positions gives each warp (row, position) pairs of its own
 * (mkc_attn_group_warp), its query rows in its own slot of shared memory
 * (8 * G * D floats for the block, which only such files hold). HIP's
 * 64-lane groups run as two CUDA warps under the mapping header, where
 * mkc_warp_sync does not order them: the emitter keeps W off there.
 */
template <int D, int G, typename T, bool W = false>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_part(const float *q, const int64_t *qs, const T *k, const int64_t *ks, const T *v,
	      const int64_t *vs, float *part, const int64_t *ps, int64_t B,
	      int64_t Sq, int64_t L, int64_t C, int64_t r0, int64_t r1, float scale,
	      const mkc_rt_pages *pg)
{
	/* W's query rows, a slot a warp (C++14 for hipcc: no if constexpr;
	 * one slot, never used, where W is off) */
	__shared__ float4 qw[W ? MKC_ATTN_WARPS : 1][G][D / 4];
	if (W && pg && Sq >= MKC_ATTN_WARPS) {
		/* each block of MKC_ATTN_WARPS items gives every warp one, warp w
		 * item w ^ (block % MKC_ATTN_WARPS): by index alone (w, w + 8,
		 * ...) the rows whose chunk holds positions, which come every 4
		 * at a short context (129 positions in 16 chunks: 3, 7, 11, 15,
		 * turned by s), all went to two warps of a tile (the 1B shape, 64
		 * sequences at context 128, H100: 67 us a tile, session 34). The
		 * xor spreads rows every 2, 4 or 8 over all warps, every 16 over
		 * half, and takes no walk (s34-deal counted them in a walk of the
		 * tile's list by every warp: 7% slower at context 1024) */
		static_assert((MKC_ATTN_WARPS & (MKC_ATTN_WARPS - 1)) == 0, "warps: a power of 2");
		const int warp = threadIdx.x / MKC_WARP;
		const int64_t items = B * (r1 - r0) * Sq;
		for (int64_t blk = 0; blk * MKC_ATTN_WARPS < items; blk++) {
			const int64_t i = blk * MKC_ATTN_WARPS + (warp ^ (int)(blk % MKC_ATTN_WARPS));
			if (i >= items)
				continue;
			const int64_t b = i / ((r1 - r0) * Sq), r = r0 + i / Sq % (r1 - r0);
			const int64_t s = i % Sq, kh = r / C, n = pg->pos[s] + 1;
			const int64_t c = mkc_rt_part_chunk(r % C, C, s);
			mkc_attn_group_warp<D, G, T>(
				q + b * qs[0] + kh * G * qs[1] + s * qs[2], qs[1],
				k + b * ks[0] + kh * ks[1], ks[2], v + b * vs[0] + kh * vs[1], vs[2],
				mkc_rt_part_lo(c, C, n), mkc_rt_part_lo(c + 1, C, n),
				pg->table + pg->seq[s] * pg->per_seq, pg->page, scale,
				part + b * ps[0] + r * ps[1] + s * ps[2], Sq * ps[2], qw[W ? warp : 0]);
		}
		return;
	}
	for (int64_t b = 0; b < B; b++)
		for (int64_t r = r0; r < r1; r++) {
			const int64_t kh = r / C, c = r % C;
			for (int64_t s = 0; s < Sq; s++) {
				const int64_t n = pg ? pg->pos[s] + 1 : L;
				const int64_t j = pg ? mkc_rt_part_chunk(c, C, s) : c;
				mkc_attn_group<D, G, T>(q + b * qs[0] + kh * G * qs[1] + s * qs[2], qs[1],
						     k + b * ks[0] + kh * ks[1], ks[2],
						     v + b * vs[0] + kh * vs[1], vs[2],
						     pg ? mkc_rt_part_lo(j, C, n) : c * L / C,
						     pg ? mkc_rt_part_lo(j + 1, C, n) : (c + 1) * L / C,
						     pg ? pg->table + pg->seq[s] * pg->per_seq : NULL,
						     pg ? pg->page : 0, scale,
						     part + b * ps[0] + r * ps[1] + s * ps[2], Sq * ps[2]);
			}
		}
}

/*
 * AttnMerge (passes/split_attn.c): query heads h0..h1 at query positions
 * s0..s1 of y [B, Hq, Sq, D] from the C partial results of their key head
 * in part [B, Hk * C, G * Sq, D + 2], rescaled to their common maximum, as backends/c/attention.h's
 * mkc_attn_merge_c computes them (in another order of the sums). There a
 * lane walks the C chunks of one output element a load at a time: 4.2 us
 * a head for 44 chunks on an H200 (SmolLM2-135M: 30 of them on every
 * step's critical path, bench/RESULTS.md session 12). Here all of a row's
 * C * (D + 2) values are loaded at once, a few a thread (a chunk's maximum
 * and sum by the first C threads): one trip to memory a row. Then every
 * thread takes the common maximum from shared memory, the first C threads
 * a chunk's weight each, and every thread adds its chunks' weighted values
 * for one element; an element's MKC_THREADS / D sums, and warp 0's sum of
 * the weighted chunk sums, meet in shared memory. C is at most 64
 * (split_attn.c); every lane of the block calls it. The emitter takes it
 * for more chunks than a warp has lanes only (mkc_attn_merge_warps takes
 * fewer): with 16 (the Llama-3.2-1B shape) its synchronisations cost more
 * than the portable body's short walk did (2.8 against 2.2 us a head on an
 * H200, session 12).
 */
template <int D>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_merge(const float *part, const int64_t *ps, float *y, const int64_t *ys, int64_t B,
	       int64_t Sq, int64_t C, int64_t G, int64_t h0, int64_t h1, int64_t s0, int64_t s1)
{
	static_assert(D % MKC_WARP == 0 && D <= MKC_THREADS, "head size");
	constexpr int NG = MKC_THREADS / D;   /* threads an element: they share its chunks */
	constexpr int MAXC = MKC_ATTN_MAX_CHUNKS, NC = (MAXC + NG - 1) / NG;
	__shared__ float cm[MAXC], cs[MAXC], cw[MAXC], sum[NG][D], tot;
	const int t = threadIdx.x, d = t % D, grp = t / D, lane = t % MKC_WARP;
	const int64_t ns = s1 - s0;
	for (int64_t row = 0; row < B * (h1 - h0) * ns; row++) {
		const int64_t b = row / ((h1 - h0) * ns), h = h0 + row / ns % (h1 - h0);
		const int64_t s = s0 + row % ns;
		const float *pp = part + b * ps[0] + h / G * C * ps[1] + (h % G * Sq + s) * ps[2];
		float v[NC];
#pragma unroll
		for (int k = 0; k < NC; k++) {
			const int c = grp + NG * k;
			v[k] = c < C ? pp[c * ps[1] + d] : 0;
		}
		__syncthreads();   /* the last row's reads of cm, cs, cw, sum and tot are done */
		if (t < C) {
			cm[t] = pp[t * ps[1] + D];
			cs[t] = pp[t * ps[1] + D + 1];
		}
		__syncthreads();
		float m = -INFINITY;
		for (int c = 0; c < C; c++)
			m = fmaxf(m, cm[c]);
		if (t < C)   /* an empty chunk (maximum -inf) weighs 0 */
			cw[t] = cm[t] == -INFINITY ? 0 : expf(cm[t] - m);
		__syncthreads();
		float out = 0;
#pragma unroll
		for (int k = 0; k < NC; k++) {
			const int c = grp + NG * k;
			if (c < C)
				out += v[k] * cw[c];
		}
		sum[grp][d] = out;
		if (t < MKC_WARP) {
			float w = 0;
			for (int c = lane; c < C; c += MKC_WARP)
				w += cs[c] * cw[c];
			w = mkc_rt_warp_sum(w);
			if (lane == 0)
				tot = w;
		}
		__syncthreads();
		if (grp == 0) {
			for (int g = 1; g < NG; g++)
				out += sum[g][d];
			y[b * ys[0] + h * ys[1] + s * ys[2] + d] = tot > 0 ? out / tot : 0;
		}
	}
}

/*
 * AttnMerge over at most MKC_WARP chunks (the 1B shape has 16): a warp a
 * row (a query head at a position), the block's warps rows side by side,
 * no barrier. Lane c reads chunk c's maximum and sum, lane i the output
 * elements i, i + MKC_WARP, ... of every chunk, MC chunks' loads at once:
 * one trip to memory for 16 chunks of a head of 64, where the portable
 * body's lanes walked their element's chunks a load at a time and a
 * tile's rows one after another (a step of 8 sequences: the merge's 32
 * tiles of 8 rows took 7 us each, its other 96 none; H100, session 41).
 * The chunks are added in their order (the result does not depend on
 * timing). Every lane of the block calls it.
 */
template <int D>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_merge_warps(const float *part, const int64_t *ps, float *y, const int64_t *ys, int64_t B,
		     int64_t Sq, int64_t C, int64_t G, int64_t h0, int64_t h1, int64_t s0, int64_t s1)
{
	static_assert(D % MKC_WARP == 0, "head size");
	constexpr int J = D / MKC_WARP, MC = 32 / J > 4 ? 32 / J : 4;   /* elements a lane; chunks a batch */
	const int lane = threadIdx.x % MKC_WARP, warp = threadIdx.x / MKC_WARP;
	const int64_t nh = h1 - h0, ns = s1 - s0;
	for (int64_t row = warp; row < B * nh * ns; row += MKC_ATTN_WARPS) {
		const int64_t b = row / (nh * ns), h = h0 + row / ns % nh, s = s0 + row % ns;
		const float *pp = part + b * ps[0] + h / G * C * ps[1] + (h % G * Sq + s) * ps[2];
		const float cm = lane < C ? pp[lane * ps[1] + D] : -INFINITY;
		const float cs = lane < C ? pp[lane * ps[1] + D + 1] : 0;
		const float m = mkc_attn_warp_max(cm);
		const float w = cm == -INFINITY ? 0 : expf(cm - m);   /* an empty chunk weighs 0 */
		const float tot = mkc_rt_warp_sum(cs * w);
		float out[J] = {};
		for (int64_t c0 = 0; c0 < C; c0 += MC) {
			float v[MC][J];
#pragma unroll
			for (int c = 0; c < MC; c++)
#pragma unroll
				for (int j = 0; j < J; j++)
					v[c][j] = c0 + c < C ? pp[(c0 + c) * ps[1] + lane + MKC_WARP * j] : 0;
#pragma unroll
			for (int c = 0; c < MC; c++) {
				const float wc = mkc_shfl(w, (int)((c0 + c) % MKC_WARP));
#pragma unroll
				for (int j = 0; j < J; j++)
					out[j] += v[c][j] * wc;
			}
		}
		float *py = y + b * ys[0] + h * ys[1] + s * ys[2];
#pragma unroll
		for (int j = 0; j < J; j++)
			py[lane + MKC_WARP * j] = tot > 0 ? out[j] / tot : 0;
	}
}

/*
 * The tile functions' entry points, over views (runtime/common.h): each
 * takes the strides its body walks into small arrays of its own, so that
 * the body, which is not inlined, reads three numbers a tensor and not the
 * views (the tile function's views stay in registers).
 */

/* Attention rows: query heads h0 .. h1 of q [B, Hq, Sq, D] over all of k and v [B, Hk, L, D]. */
template <int D>
static __device__ __forceinline__ void MKC_UNUSED
mkc_attn_rows_tile(const mkc_view *q, const mkc_view *k, const mkc_view *v, const mkc_view *y,
		   int64_t h0, int64_t h1, float scale)
{
	const int64_t qs[3] = {q->s[0], q->s[1], q->s[2]}, ks[3] = {k->s[0], k->s[1], k->s[2]};
	const int64_t vs[3] = {v->s[0], v->s[1], v->s[2]}, ys[3] = {y->s[0], y->s[1], y->s[2]};
	mkc_attn_rows<D>((const float *)q->p, qs, (const float *)k->p, ks, (const float *)v->p, vs,
			 (float *)y->p, ys, q->d[0], q->d[2], k->d[2], q->d[1] / k->d[1], h0, h1,
			 scale);
}

/* AttnPart: rows r0 .. r1 of part, the caches' elements T (float, or
 * uint16_t for bf16); W: a warp a query row where a step has enough */
template <int D, int G, typename T, bool W>
static __device__ __forceinline__ void MKC_UNUSED
mkc_attn_part_tile(const mkc_view *q, const mkc_view *k, const mkc_view *v, const mkc_view *part,
		   int64_t C, int64_t r0, int64_t r1, float scale, const mkc_rt_pages *pg)
{
	const int64_t qs[3] = {q->s[0], q->s[1], q->s[2]}, ks[3] = {k->s[0], k->s[1], k->s[2]};
	const int64_t vs[3] = {v->s[0], v->s[1], v->s[2]};
	const int64_t ps[3] = {part->s[0], part->s[1], part->s[2]};
	mkc_attn_part<D, G, T, W>((const float *)q->p, qs, (const T *)k->p, ks, (const T *)v->p,
				  vs, (float *)part->p, ps, q->d[0], q->d[2], k->d[2], C, r0, r1,
				  scale, pg);
}

/* AttnMerge: query heads h0 .. h1 at positions s0 .. s1 of y from their
 * key head's C parts; WARPS: a warp a row (C at most MKC_WARP) */
template <int D, bool WARPS>
static __device__ __forceinline__ void MKC_UNUSED
mkc_attn_merge_tile(const mkc_view *part, const mkc_view *y, int64_t C, int64_t h0, int64_t h1,
		    int64_t s0, int64_t s1)
{
	const int64_t ps[3] = {part->s[0], part->s[1], part->s[2]};
	const int64_t ys[3] = {y->s[0], y->s[1], y->s[2]};
	if (WARPS)
		mkc_attn_merge_warps<D>((const float *)part->p, ps, (float *)y->p, ys, y->d[0],
					y->d[2], C, y->d[1] / (part->d[1] / C), h0, h1, s0, s1);
	else
		mkc_attn_merge<D>((const float *)part->p, ps, (float *)y->p, ys, y->d[0], y->d[2], C,
				  y->d[1] / (part->d[1] / C), h0, h1, s0, s1);
}

/*
 * Causal attention of a prompt chunk (issue 29): query head h (h0..h1) at
 * positions s0..s1 of y [1, Hq, Sq, D] from q over the cache's keys and
 * values k, v [1, Hk, L, D] (the past, then this step's Sq), kh = h / (Hq /
 * Hk). causal 2: position s sees keys up to L - Sq + s (the chunk's own
 * diagonal at the end); 0: all L. Rows go a warp each, MKC_THREADS /
 * MKC_WARP consecutive positions of one head at a time, and the block
 * walks their keys together in chunks of MKC_WARP positions staged in
 * shared memory, so each key and value row leaves L2 once for the group
 * (flash attention's tiles of queries by keys, on CUDA cores): lane i
 * scores position i of the chunk (the query, scaled, in shared memory; a
 * key row padded by one float, so the lanes' rows lie on distinct banks),
 * the warp folds the chunk into its running maximum and sum, and lane i
 * owns output elements i, i + MKC_WARP, ... Every lane of the block calls
 * it (it synchronises the block).
 */
template <int D>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_chunk(const float *q, const int64_t *qs, const float *k, const int64_t *ks,
	       const float *v, const int64_t *vs, float *y, const int64_t *ys, int64_t Hq,
	       int64_t Hk, int64_t Sq, int64_t L, int causal, int64_t h0, int64_t h1, int64_t s0,
	       int64_t s1, float scale)
{
	constexpr int W = MKC_WARP, J = D / W, NW = MKC_THREADS / W;
	static_assert(D % W == 0, "the head size is a multiple of the warp");
	__shared__ float kc[W][D + 1], vc[W][D], qc[NW][D], pc[NW][W];
	const int lane = threadIdx.x % W, warp = threadIdx.x / W;
	for (int64_t h = h0; h < h1; h++) {
		const int64_t kh = h / (Hq / Hk);
		const float *kb = k + kh * ks[1], *vb = v + kh * vs[1];
		for (int64_t g = s0; g < s1; g += NW) {
			const int64_t s = g + warp, last = (g + NW < s1 ? g + NW : s1) - 1;
			const bool live = s < s1;
			const int64_t end = !live ? 0 : causal == 2 ? L - Sq + s + 1 : L;
			const int64_t gend = causal == 2 ? L - Sq + last + 1 : L;   /* the group's */
			float m = -INFINITY, sum = 0, acc[J];
			for (int j = 0; j < J; j++) {
				acc[j] = 0;
				if (live)
					qc[warp][lane + j * W] = q[h * qs[1] + s * qs[2] + lane + j * W] * scale;
			}
			for (int64_t t0 = 0; t0 < gend; t0 += W) {
				__syncthreads();   /* the last chunk is used up; the queries are in */
				for (int i = threadIdx.x; i < W * D; i += MKC_THREADS) {
					const int r = i / D, c = i % D;
					const int64_t t = t0 + r;
					kc[r][c] = t < gend ? kb[t * ks[2] + c] : 0.f;
					vc[r][c] = t < gend ? vb[t * vs[2] + c] : 0.f;
				}
				__syncthreads();
				if (t0 >= end)
					continue;   /* the warp's row sees none of this chunk */
				float sc = -INFINITY;
				if (t0 + lane < end) {
					sc = 0;
					for (int c = 0; c < D; c++)
						sc += qc[warp][c] * kc[lane][c];
				}
				const float nm = fmaxf(m, mkc_attn_warp_max(sc));   /* finite: t0 < end */
				const float p = sc == -INFINITY ? 0.f : expf(sc - nm), r = expf(m - nm);
				sum = sum * r + mkc_rt_warp_sum(p);
				m = nm;
				pc[warp][lane] = p;
				mkc_warp_sync();
				for (int j = 0; j < J; j++) {
					float a = acc[j] * r;
					for (int i = 0; i < W; i++)
						a += pc[warp][i] * vc[i][lane + j * W];
					acc[j] = a;
				}
				mkc_warp_sync();
			}
			for (int j = 0; live && j < J; j++)
				y[h * ys[1] + s * ys[2] + lane + j * W] = sum > 0 ? acc[j] / sum : 0.f;
		}
	}
	__syncthreads();   /* the next task may use the chunk buffers */
}

/* A chunk's Attention tile: query heads h0..h1 at positions s0..s1 (empty: nothing). */
template <int D>
static __device__ __forceinline__ void MKC_UNUSED
mkc_attn_chunk_tile(const mkc_view *q, const mkc_view *k, const mkc_view *v, const mkc_view *y,
		    int causal, int64_t h0, int64_t h1, int64_t s0, int64_t s1, float scale)
{
	const int64_t qs[3] = {q->s[0], q->s[1], q->s[2]}, ks[3] = {k->s[0], k->s[1], k->s[2]};
	const int64_t vs[3] = {v->s[0], v->s[1], v->s[2]}, ys[3] = {y->s[0], y->s[1], y->s[2]};
	mkc_attn_chunk<D>((const float *)q->p, qs, (const float *)k->p, ks, (const float *)v->p, vs,
			  (float *)y->p, ys, q->d[1], k->d[1], q->d[2], k->d[2], causal, h0, h1, s0,
			  s1, scale);
}
