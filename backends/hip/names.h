/*
 * names.h - the CUDA runtime's names that backends/cuda/exec.cuh calls,
 * as HIP's: the HIP target embeds the CUDA target's runtime and bodies
 * (one source for both vendors, written in CUDA's names) after this file
 * and backends/hip/sync.h. A name the runtime starts to use and this list
 * lacks does not compile for HIP (tests/compiler/test_hip.c builds the
 * output with hipcc and clang-19), so the two cannot drift apart.
 *
 * hipFree is [[nodiscard]] in HIP; the runtime frees through mkc_gpu_free,
 * which drops the status on both vendors.
 */

/* what the runtime's messages call them: "hipMalloc(...) failed" */
#define MKC_GPU_API "hip"

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGetDevice hipGetDevice
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDevAttrClockRate hipDeviceAttributeClockRate
#define cudaDevAttrWarpSize hipDeviceAttributeWarpSize
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemset hipMemset
#define cudaMemcpy hipMemcpy
#define cudaMemcpy2D hipMemcpy2D
#define cudaMemcpyToSymbol hipMemcpyToSymbol
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDefault hipMemcpyDefault
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpy2DAsync hipMemcpy2DAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaStream_t hipStream_t
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaHostAlloc hipHostMalloc   /* flags 0: mapped into every GPU, as CUDA's */
#define cudaHostGetDevicePointer hipHostGetDevicePointer
#define cudaFreeHost hipHostFree
#define cudaStreamQuery hipStreamQuery
#define cudaErrorNotReady hipErrorNotReady
