/*
 * attention.cuh - the CUDA tile body of decode attention, as device code.
 *
 * The emitter calls mkc_attn_rows<D>() from an Attention tile with the
 * tensors' pointers and strides; it computes the query heads h0..h1 of
 * every (batch, query position) row:
 *
 *   y[b, h, s, :] = softmax(q[b, h, s, :] . k[b, kh, t, :] * scale) over t < L
 *                   times v[b, kh, t, :],        kh = h / (Hq / Hk)
 *
 * Decode has one query row a head and L cached positions, so the work is
 * spread over positions, not output elements: warp w takes positions in
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

template <int D>
static __device__ __noinline__ void MKC_UNUSED
mkc_attn_rows(const float *q, const int64_t *qs, const float *k, const int64_t *ks,
	      const float *v, const int64_t *vs, float *y, const int64_t *ys, int64_t B,
	      int64_t Sq, int64_t L, int64_t group, int64_t h0, int64_t h1, float scale)
{
	static_assert(D % 32 == 0 && D <= 256, "head size: a multiple of 32, at most 256");
	constexpr int J = D / 32;   /* output elements a lane owns */
	__shared__ float4 qsh[D / 4];
	__shared__ float wm[MKC_ATTN_WARPS], wsum[MKC_ATTN_WARPS], wacc[MKC_ATTN_WARPS][D];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (int64_t row = 0; row < B * (h1 - h0) * Sq; row++) {
		const int64_t b = row / ((h1 - h0) * Sq), h = h0 + row / Sq % (h1 - h0), s = row % Sq;
		const int64_t kh = h / group;
		const float *pq = q + b * qs[0] + h * qs[1] + s * qs[2];
		const float *pk = k + b * ks[0] + kh * ks[1];
		const float *pv = v + b * vs[0] + kh * vs[1];
		__syncthreads();   /* the last row's reads of qsh and wacc are done */
		for (int i = threadIdx.x; i < D; i += blockDim.x)
			((float *)qsh)[i] = pq[i];
		__syncthreads();
		float mx = -INFINITY, sum = 0, acc[J];
		for (int j = 0; j < J; j++)
			acc[j] = 0;
		for (int64_t base = (int64_t)warp * 32; base < L; base += 32 * MKC_ATTN_WARPS) {
			const int64_t t = base + lane;
			float sc = -INFINITY;
			if (t < L) {
				const float4 *kr = (const float4 *)(pk + t * ks[2]);
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
			const float nm = fmaxf(mx, cm);   /* finite: position base is < L */
			const float r = expf(mx - nm), p = expf(sc - nm);
			float ps = p;
			for (int o = 16; o > 0; o >>= 1)
				ps += __shfl_xor_sync(0xffffffffu, ps, o);
			sum = sum * r + ps;
			for (int j = 0; j < J; j++)
				acc[j] *= r;
			const int64_t n = L - base < 32 ? L - base : 32;
			const float *vr = pv + base * vs[2] + lane;
#pragma unroll 8
			for (int i = 0; i < n; i++) {
				const float w = __shfl_sync(0xffffffffu, p, i);
				for (int j = 0; j < J; j++)
					acc[j] += w * vr[i * vs[2] + 32 * j];
			}
			mx = nm;
		}
		if (lane == 0) {
			wm[warp] = mx;
			wsum[warp] = sum;
		}
		for (int j = 0; j < J; j++)
			wacc[warp][lane + 32 * j] = acc[j];
		__syncthreads();
		for (int d = threadIdx.x; d < D; d += blockDim.x) {
			float m = -INFINITY, tot = 0, out = 0;
			for (int w = 0; w < MKC_ATTN_WARPS; w++)
				m = fmaxf(m, wm[w]);
			for (int w = 0; w < MKC_ATTN_WARPS; w++) {
				if (wm[w] == -INFINITY)
					continue;   /* a warp that got no positions */
				const float f = expf(wm[w] - m);
				tot += wsum[w] * f;
				out += wacc[w][d] * f;
			}
			y[b * ys[0] + h * ys[1] + s * ys[2] + d] = tot > 0 ? out / tot : 0;
		}
	}
}
