/*
 * target_cuda.c - the CUDA target: one persistent kernel, a block a
 * worker (exec.cuh), with the decode bodies written as device code
 * (attention.cuh, matvec.cuh). The runtime and those bodies are the HIP
 * target's too; sync.cuh holds what is CUDA's own. The public API is the
 * C target's text: only the runtime under it differs.
 */
#include "../core/emit.h"

const mkc_target mkc_target_cuda = {
	.name = "cuda",
	.ext = "cu",
	.headers = "#include <cuda_runtime.h>\n" MKC_STD_HEADERS,
	.prelude = (const char *const[]){"backends/cuda/sync.cuh", "backends/cuda/tma.h", NULL},
	.exec = (const char *const[]){"backends/cuda/exec.cuh", NULL},
	.bodies = (const char *const[]){MKC_GPU_BODIES, "backends/cuda/mma.cuh", NULL},
	.api = "runtime/api.h",
	.fn_qual = "static __device__",
	.node_qual = " __noinline__",
	.upload_tables = true,
	.half_types = false,
	.warp = 32,
	.mma = true,
	.few_tiles = true,
	.chunk_attn = true,
	.tma = true,
	/* sm_90a: the H200 the GPU tests run on; NVCC names another nvcc */
	.test_build = "${NVCC:-nvcc} -gencode=arch=compute_90a,code=sm_90a -O2 "
		      "-Xcompiler -Wall,-Wextra -Werror all-warnings -o $W/run $W/model.cu $W/main.cu",
	.test_buffers =
		"#include <cuda_runtime.h>\n"
		"static void *\ndev_alloc(size_t n)\n{\n\tvoid *p = NULL;\n"
		"\tif (cudaMalloc(&p, n ? n : 1) != cudaSuccess) {\n"
		"\t\tfprintf(stderr, \"cudaMalloc failed\\n\");\n\t\texit(3);\n\t}\n\treturn p;\n}\n"
		"#define DEV_ALLOC(n) dev_alloc(n)\n"
		"#define TO_DEV(d, h, n) cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)\n"
		"#define TO_HOST(h, d, n) cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost)\n"
		"#define POISON(d, n) cudaMemset(d, 0xff, n)\n"
		"#define DEV_FREE(d) cudaFree(d)\n",
	.host_workers = false,
};
