/*
 * rt_stub.cuh - the pieces of runtime/common.h the CUDA tile bodies use,
 * for the programs that run the bodies alone (tests/gpu/bodies.cu,
 * bench/gemv.cu, bench/attn.cu). MKC_THREADS may be set on the command line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MKC_THREADS
#define MKC_THREADS 256
#endif
#define MKC_UNUSED __attribute__((unused))
/* runtime/common.h's lanes, for the bodies every target shares (backends/c/) */
#define MKC_HD __host__ __device__
#define MKC_BODY __device__
#define MKC_LANE ((int64_t)threadIdx.x)
#define MKC_NLANES ((int64_t)blockDim.x)
#define MKC_RESTRICT __restrict__

/* the pieces of runtime/common.h the bodies use */
static __device__ inline float
mkc_rt_warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

static __device__ inline float
mkc_rt_block_sum(float v)
{
	__shared__ float part[32];
	v = mkc_rt_warp_sum(v);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x >> 5] = v;
	__syncthreads();
	float s = 0;
	for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++)
		s += part[w];
	return s;
}

static __host__ __device__ inline float
mkc_rt_bf16(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static __host__ __device__ inline uint16_t
mkc_rt_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

#include "check.cuh"
