/*
 * wave.h - the lane-group helpers the emitted tile functions call on HIP:
 * sums over a wavefront and over the block (the matvecs' 16-byte dot
 * products, which do not depend on the width, are runtime/common.h's).
 * runtime/common.h defines the CUDA sums (32 lanes, __shfl_xor_sync) under
 * __CUDACC__, which HIP does not define; these are
 * sized by MKC_WARP, the width the target description gives the emitter
 * (64 on gfx90a and gfx942), never by a literal.
 *
 * NEVER RUN on a GPU: compiled in the tests only.
 */

#if MKC_WARP & (MKC_WARP - 1)
#error "MKC_WARP must be a power of two"
#endif

/*
 * The sum of v over the MKC_WARP lanes of a wavefront, in every lane: a
 * butterfly from offset MKC_WARP / 2 down (32, 16, ... 1 on wave64); every
 * lane ends with the same sum, added in the same order. The emitted
 * matvecs call it with all lanes of the wavefront active.
 */
static __device__ inline float MKC_UNUSED
mkc_rt_warp_sum(float v)
{
	for (int o = MKC_WARP / 2; o > 0; o >>= 1)
		v += __shfl_xor(v, o, MKC_WARP);
	return v;
}

/*
 * The sum of every lane's v over the block, in every lane; every lane of
 * the block must call it (the partial sums are added in one order, so all
 * lanes get the same value). A block has at most 1024 lanes: 16
 * wavefronts of 64.
 */
static __device__ inline float MKC_UNUSED
mkc_rt_block_sum(float v)
{
	__shared__ float part[1024 / MKC_WARP];
	v = mkc_rt_warp_sum(v);
	__syncthreads();   /* the last call's partials have been read */
	if (threadIdx.x % MKC_WARP == 0)
		part[threadIdx.x / MKC_WARP] = v;
	__syncthreads();
	float s = 0;
	for (int w = 0; w < (int)(blockDim.x + MKC_WARP - 1) / MKC_WARP; w++)
		s += part[w];
	return s;
}
