/*
 * target_hip.c - the HIP target (AMD GPUs, gfx90a and gfx942): the CUDA
 * target's runtime and bodies (backends/cuda/exec.cuh, matvec.cuh,
 * attention.cuh: one source for both vendors), in HIP's names (names.h),
 * with the event protocol in Clang's scoped atomics and every lane group
 * 64 wide (sync.h), and a chunk's products on matrix cores (mfma.h). The
 * public API is the C target's text.
 *
 * What this target emits has been compiled (hipcc for gfx90a, clang-19 for
 * gfx942, in the tests) and run 32 wide on an NVIDIA GPU through a test
 * header (tests/gpu/hip_on_cuda.h), never on AMD hardware: no AMD GPU was
 * at hand, and its wave64 paths have not run.
 */
#include "../core/emit.h"

/* gfx9 data-centre parts (MI200, MI300) run 64-wide wavefronts only */
#define HIP_WARP 64

const mkc_target mkc_target_hip = {
	.name = "hip",
	.ext = "hip",
	/* The tile functions' "#pragma unroll N" is a hint: where the optimizer cannot
	 * honour it (a loop of run-time stride) clang 19 says so as a warning
	 * (-Wpass-failed), a missed optimisation, not an error in the code,
	 * that -Werror would make fatal. (Only clang knows the pragma:
	 * tests/gpu/hip_on_cuda.h builds the file with nvcc and gcc.) */
	.headers = "#include <hip/hip_runtime.h>\n" MKC_STD_HEADERS
		   "#ifdef __clang__\n#pragma clang diagnostic ignored \"-Wpass-failed\"\n#endif\n",
	.prelude = (const char *const[]){"backends/hip/names.h", "backends/hip/sync.h", NULL},
	.exec = (const char *const[]){"backends/cuda/exec.cuh", NULL},
	.bodies = (const char *const[]){MKC_GPU_BODIES, "backends/hip/mfma.h", NULL},
	.api = "runtime/api.h",
	.fn_qual = "static __device__",
	.node_qual = " __noinline__",
	.upload_tables = true,
	.half_types = false,
	.warp = HIP_WARP,
	/* a chunk's products on matrix cores (mfma.h); a few-token plan's
	 * and a chunk's attention take the general bodies */
	.mma = true,
	/* --arch (mkc test: $MKC_HIP_ARCH), gfx942 (MI300) by default, gfx90a
	 * for MI200; HIPCC names another hipcc. Never run here: no AMD GPU. */
	.test_build = "${HIPCC:-hipcc} --offload-arch=${MKC_HIP_ARCH:-gfx942} -O2 "
		      "-Wall -Wextra -Werror -o $W/run $W/model.hip $W/main.hip",
	.test_buffers =
		"#include <hip/hip_runtime.h>\n"
		"static void *\ndev_alloc(size_t n)\n{\n\tvoid *p = NULL;\n"
		"\tif (hipMalloc(&p, n ? n : 1) != hipSuccess) {\n"
		"\t\tfprintf(stderr, \"hipMalloc failed\\n\");\n\t\texit(3);\n\t}\n\treturn p;\n}\n"
		"#define DEV_ALLOC(n) dev_alloc(n)\n"
		"#define TO_DEV(d, h, n) (void)hipMemcpy(d, h, n, hipMemcpyHostToDevice)\n"
		"#define TO_HOST(h, d, n) (void)hipMemcpy(h, d, n, hipMemcpyDeviceToHost)\n"
		"#define POISON(d, n) (void)hipMemset(d, 0xff, n)\n"
		"#define DEV_FREE(d) (void)hipFree(d)\n",
	.host_workers = false,
	/* gfx942 (MI300) first: the default. The device code is the same for
	 * both (wave64, the same scoped atomics; clang lowers them per
	 * architecture), so the guard's first job is to stop a build for a
	 * 32-wide RDNA part or another gfx9 the plan was not made for. */
	.archs = (const char *const[]){"gfx942", "gfx90a", NULL},
	.arch_guard =
		"/* for $A (mkc --arch $A): hipcc --offload-arch=$A -O2 -c this file */\n"
		"#if defined(__HIP_DEVICE_COMPILE__) && !defined(__$A__) && !defined(MKC_ANY_ARCH)\n"
		"#error \"generated for $A (mkc --arch $A): build with --offload-arch=$A, generate the "
		"file again for your GPU, or define MKC_ANY_ARCH\"\n#endif\n"
		"#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != MKC_WARP\n"
		"#error \"the kernel's lane groups are MKC_WARP lanes: this device compile's wavefronts "
		"are not\"\n#endif\n",
};
