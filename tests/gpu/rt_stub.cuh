/*
 * rt_stub.cuh - what an emitted file puts before the GPU tile bodies, for
 * the programs that run the bodies alone (tests/gpu/bodies.cu,
 * bench/gemv.cu, bench/attn.cu): the warp width, the vendor's sync header,
 * runtime/limits.h, common.h and bf16.h, the same texts an emitted file
 * embeds. With -DMKC_BODIES_HIP the bodies are built as the HIP target
 * builds them, 64 lanes a warp, and run on the NVIDIA GPU through
 * tests/gpu/hip_on_cuda.h (a 64-lane group is a pair of warps there).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MKC_BODIES_HIP
#include "hip_on_cuda.h"
#define MKC_WARP 64
#include "../../backends/hip/sync.h"
#else
#define MKC_WARP 32
#include "../../backends/cuda/sync.cuh"
#endif

#include "../../runtime/limits.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* its ONNX reader */
#include "../../runtime/common.h"
#pragma GCC diagnostic pop
#include "../../runtime/bf16.h"

#include "check.cuh"
