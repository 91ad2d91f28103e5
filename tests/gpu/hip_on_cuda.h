/*
 * hip_on_cuda.h - TEST ONLY. Maps the HIP calls an emitted .hip file makes
 * onto CUDA, so that the HIP output can run on the H200 through the golden
 * tests (tools/gpu_check.sh; the runs are in tests/gpu/RESULTS.md), and
 * the GPU bodies built 64 lanes wide can run against float64
 * (tests/gpu/bodies.cu -DMKC_BODIES_HIP). Debian's own HIP headers for the
 * NVIDIA platform (HIP 5.2) do not compile against CUDA 13, hence this
 * header.
 *
 * Use: the .hip includes <hip/hip_runtime.h>, so put a folder first on the
 * include path whose hip/hip_runtime.h includes this file:
 *
 *   d=$(mktemp -d) && mkdir $d/hip &&
 *   echo "#include \"$PWD/tests/gpu/hip_on_cuda.h\"" > $d/hip/hip_runtime.h &&
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -I$d -x cu -c llama.hip
 *
 * (tests/gpu/hipcc_on_cuda.sh does this as a stand-in for hipcc, so that
 * `HIPCC=$PWD/tests/gpu/hipcc_on_cuda.sh mkc test --target hip DIR` runs
 * the golden tests; tools/gpu_check.sh does that.)
 *
 * What it runs and what it does not:
 * - The file keeps its 64-lane groups (the emitter sized them by the HIP
 *   target's width): a group is a pair of CUDA warps, and the shuffles
 *   that cross them (offset 32, a lane of the other warp) go through
 *   shared memory with a 64-thread named barrier. So the wave64 logic of the tile functions
 *   runs, but not AMD's shuffle hardware; hipDeviceAttributeWarpSize
 *   reports 64 for that reason.
 * - The scoped atomics become libcu++ atomic_ref at device scope: the
 *   event protocol's logic runs, not AMD's memory model.
 * - __builtin_amdgcn_* sit under __HIP_DEVICE_COMPILE__, which nvcc does
 *   not define: the wait does not pause between polls, and the timeline's
 *   clock reads 0 (--profile gives no times here).
 */
#ifndef MKC_HIP_ON_CUDA_H
#define MKC_HIP_ON_CUDA_H

#include <cuda_runtime.h>
#include <cuda/atomic>

typedef cudaError_t hipError_t;
#define hipSuccess cudaSuccess
#define hipGetErrorString cudaGetErrorString
#define hipGetDevice cudaGetDevice
#define hipGetLastError cudaGetLastError
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemset cudaMemset
#define hipMemcpy2D cudaMemcpy2D
#define hipMemcpyToSymbol cudaMemcpyToSymbol
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDefault cudaMemcpyDefault
#define hipMemcpyKind cudaMemcpyKind
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipStream_t cudaStream_t
#define hipStreamSynchronize cudaStreamSynchronize
#define hipHostMalloc cudaHostAlloc
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipHostFree cudaFreeHost
#define hipStreamQuery cudaStreamQuery
#define hipErrorNotReady cudaErrorNotReady
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

enum {
	hipDeviceAttributeMultiprocessorCount,
	hipDeviceAttributeClockRate,
	hipDeviceAttributeWarpSize,
};

/* the three attributes exec.hip asks for; the warp is the emulated 64 */
static inline hipError_t
hipDeviceGetAttribute(int *v, int attr, int dev)
{
	switch (attr) {
	case hipDeviceAttributeMultiprocessorCount:
		return cudaDeviceGetAttribute(v, cudaDevAttrMultiProcessorCount, dev);
	case hipDeviceAttributeClockRate:
		return cudaDeviceGetAttribute(v, cudaDevAttrClockRate, dev);
	case hipDeviceAttributeWarpSize:
		*v = 64;
		return cudaSuccess;
	}
	return cudaErrorInvalidValue;
}

/* Clang's scoped atomics, as exec.hip uses them (agent scope only). */
#define __HIP_MEMORY_SCOPE_AGENT 3

static __device__ __forceinline__ cuda::memory_order
mkc_hoc_order(int order)
{
	return order == __ATOMIC_ACQUIRE ? cuda::memory_order_acquire
	     : order == __ATOMIC_RELEASE ? cuda::memory_order_release
	     : order == __ATOMIC_RELAXED ? cuda::memory_order_relaxed
					 : cuda::memory_order_seq_cst;
}

template <class T>
static __device__ __forceinline__ T
__hip_atomic_load(T *p, int order, int scope)
{
	(void)scope;
	return cuda::atomic_ref<T, cuda::thread_scope_device>(*p).load(mkc_hoc_order(order));
}

template <class T>
static __device__ __forceinline__ T
__hip_atomic_fetch_add(T *p, T v, int order, int scope)
{
	(void)scope;
	return cuda::atomic_ref<T, cuda::thread_scope_device>(*p).fetch_add(v, mkc_hoc_order(order));
}

static __device__ __forceinline__ unsigned
__smid(void)
{
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}

/*
 * HIP's __shfl_xor within width lanes. Offsets under 32 stay in one CUDA
 * warp; offset 32 swaps with the other warp of the 64-lane group through
 * shared memory, the two warps meeting at named barrier 1 + group (every
 * lane of the group calls it, as the emitted sums do). A block of 256
 * threads uses barriers 1 to 4 of 16.
 */
static __device__ __forceinline__ float
mkc_hoc_swap32(float v)
{
	__shared__ float x[1024];
	const unsigned bar = 1 + threadIdx.x / 64;
	x[threadIdx.x] = v;
	asm volatile("bar.sync %0, 64;" ::"r"(bar) : "memory");
	const float o = x[threadIdx.x ^ 32];
	asm volatile("bar.sync %0, 64;" ::"r"(bar) : "memory");
	return o;
}

static __device__ __forceinline__ float
mkc_hoc_shfl_xor(float v, int o, int width)
{
	if (o >= 32)
		return width == 64 ? mkc_hoc_swap32(v) : v;
	return __shfl_xor_sync(0xffffffffu, v, o, width < 32 ? width : 32);
}

/*
 * HIP's __shfl: lane src of the width-lane group. Within a CUDA warp a
 * shuffle; across the pair of warps of a 64-lane group through shared
 * memory, as above (every lane of the group calls it).
 */
static __device__ __forceinline__ float
mkc_hoc_shfl(float v, int src, int width)
{
	if (width <= 32)
		return __shfl_sync(0xffffffffu, v, src, width);
	__shared__ float x[1024];
	const unsigned bar = 1 + threadIdx.x / 64;
	x[threadIdx.x] = v;
	asm volatile("bar.sync %0, 64;" ::"r"(bar) : "memory");
	const float o = x[(threadIdx.x & ~63u) + (src & 63)];
	asm volatile("bar.sync %0, 64;" ::"r"(bar) : "memory");
	return o;
}

/*
 * v_mfma_f32_32x32x8bf16_1k, as backends/hip/mfma.h's mkc_mf_32x32x8 calls
 * it: d (32 x 32) += A (32 x 8) B (8 x 32) over a 64-lane group, from AMD's
 * register layout (the CDNA2 and CDNA3 ISA guides, ROCm's matrix
 * instruction calculator): lane l gives four bf16 of A's row l % 32 and
 * of B's column l % 32 at k 4 (l / 32)..; its register r of d is row
 * 8 (r / 4) + 4 (l / 32) + r % 4, column l % 32. The group's operands meet
 * in shared memory, as the shuffles above do; each lane then sums its 16
 * in float32, k in order (the hardware's order within the 8 is its own).
 */
static __device__ __forceinline__ float
mkc_hoc_bf16(uint32_t w, int hi)
{
	return __uint_as_float(hi ? w & 0xffff0000u : w << 16);
}

static __device__ __forceinline__ void
mkc_hoc_mfma_32x32x8(float (&d)[16], uint2 a, uint2 b)
{
	__shared__ uint2 sa[1024], sb[1024];
	const unsigned bar = 1 + threadIdx.x / 64, g = threadIdx.x & ~63u, l = threadIdx.x & 63;
	sa[threadIdx.x] = a;
	sb[threadIdx.x] = b;
	asm volatile("bar.sync %0, 64;" ::"r"(bar) : "memory");
	for (int r = 0; r < 16; r++) {
		const unsigned i = 8 * (r / 4) + 4 * (l / 32) + r % 4, j = l % 32;
		float s = d[r];
		for (int k = 0; k < 8; k++) {
			const uint2 ra = sa[g + 32 * (k / 4) + i], rb = sb[g + 32 * (k / 4) + j];
			const uint32_t wa = k % 4 < 2 ? ra.x : ra.y, wb = k % 4 < 2 ? rb.x : rb.y;
			s = fmaf(mkc_hoc_bf16(wa, k % 2), mkc_hoc_bf16(wb, k % 2), s);
		}
		d[r] = s;
	}
	asm volatile("bar.sync %0, 64;" ::"r"(bar) : "memory");
}
#define MKC_HOC_MFMA_32X32X8(d, a, b) mkc_hoc_mfma_32x32x8(d, a, b)

/* CUDA's headers define an old __shfl_xor and __shfl of their own: a macro wins */
#define __shfl_xor(v, o, w) mkc_hoc_shfl_xor(v, o, w)
#define __shfl(v, s, w) mkc_hoc_shfl(v, s, w)

/*
 * From here on the file is HIP: runtime/common.h must take its __HIPCC__
 * side, or its 32-lane CUDA helpers would clash with (and differ from) the
 * 64-lane ones of backends/hip/wave.h. The CUDA headers are all in by now.
 */
#undef __CUDACC__
#define __HIPCC__ 1

#endif
