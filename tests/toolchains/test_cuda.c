/*
 * test_cuda.c - CI has nvcc but no GPU: the emitted CUDA must at least
 * build for sm_90a, warnings as errors: every golden model, the Hugging Face
 * families, onnxruntime-genai's fp16 exports, bf16 weights (converted, stored in the file, or kept from
 * safetensors) and the --profile timeline; and the GPU bodies' own tests
 * (run on the GPU by tools/gpu_check.sh) build here too.
 *
 * Each model is built once, in a test instance of its own (a parameterized
 * test), so that the builds share make test's jobs. The tests keep the
 * suite and name they had in test_golden.c and test_generate.c; the
 * Hugging Face llama folder in bf16, which test_hf.c also built
 * (hf_run::emitted_cuda_builds), is built once, in the bf16 list.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>

#include "../mkc_run.h"

static char out[1 << 16];

/*
 * Emits model (a path under tests/models, then mkc's options) as CUDA and
 * builds it with nvcc: the front end and the device compiler as a user's
 * build, ptxas unoptimised (-O0 still assembles for sm_90a and checks each
 * function's registers and shared memory; the megakernel's register
 * allocation at -O3 was most of a build's time: 27 -> 16 s for a tiny
 * model's paged file on the 2-core machine, session 32).
 */
static void
cuda_builds(const char *model)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s tests/models/%s -o $d/m.cu && "
		 "nvcc -gencode=arch=compute_90a,code=sm_90a -Xptxas -O0 -Xcompiler -Wall,-Wextra "
		 "-Werror all-warnings -c $d/m.cu -o $d/m.o; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), model);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s: %s", model, out);
}

/* Parameters are indices: the test instances run in processes of their own. */
static int indices[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

#define NELEMS(a) (sizeof a / sizeof *a)

static const char *const float_models[] = {
	"tiny_llama_decode_op18", "tiny_llama_decode_op23", "hand/small_mlp",
	"hand/contrib_skip_simplified_ln", "hand/contrib_rotary", "hand/contrib_gqa_two_tokens",
	"hf/qwen2_tiny", "hf/qwen3_tiny", "qwen3_tiny_onnx/model.onnx", "export/qwen3_tiny_op18",
	"hand/elementwise_tiles", "hf_chunk/qwen3_tiny --max-chunk 8" /* two plans */,
	/* float16 at the interface: its Casts and generate's argmax of float16 logits */
	"genai/llama_tiny_fp16", "genai/qwen3_tiny_fp16 --max-chunk 4",
	/* sequences, caches in pages (runtime/seqs.h): the parts' portable body (head
	 * size 16), then attention.cuh's through the page table, in bf16; the
	 * first in three plans, the chunk's tensor-core tiles (a chunk within the
	 * default --few-tokens is cut as the few-token plan) and the few-token
	 * plan's, the second in two, both few-token tiles */
	"hf_chunk/llama_tiny_bf16 --max-seqs 4 --max-chunk 16 --page-size 8 --few-tokens 4",
	"hf_chunk/llama_tiny_d64 --max-seqs 4 --max-chunk 16 --page-size 16 --kv bf16"};

ParameterizedTestParameters(golden, emitted_cuda_builds_for_sm_90a)
{
	_Static_assert(NELEMS(float_models) <= NELEMS(indices), "more models than indices");
	return cr_make_param_array(int, indices, NELEMS(float_models));
}

ParameterizedTest(int *i, golden, emitted_cuda_builds_for_sm_90a, .timeout = 600)
{
	cuda_builds(float_models[*i]);
}

static const char *const bf16_models[] = {
	"hf/llama_tiny_bf16", "hand/bf16_initializers", "tiny_llama_decode_op18 --weights bf16",
	"tiny_llama_decode_op23 --weights bf16", "hf/qwen2_tiny --weights bf16",
	"hf/qwen3_tiny --weights bf16", "genai/llama_tiny_fp16 --weights bf16"};

ParameterizedTestParameters(golden, emitted_cuda_builds_with_bf16_weights)
{
	_Static_assert(NELEMS(bf16_models) <= NELEMS(indices), "more models than indices");
	return cr_make_param_array(int, indices, NELEMS(bf16_models));
}

ParameterizedTest(int *i, golden, emitted_cuda_builds_with_bf16_weights, .timeout = 600)
{
	cuda_builds(bf16_models[*i]);
}

/* The CUDA timeline code of --profile builds too. */
Test(profile, emitted_cuda_builds_for_sm_90a, .timeout = 300)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s tests/models/tiny_llama_decode_op23 -o $d/m.cu --profile && "
		 "grep -q 'MKC_PROFILE 1' $d/m.cu && "
		 "nvcc -gencode=arch=compute_90a,code=sm_90a -Xcompiler -Wall,-Wextra "
		 "-Werror all-warnings -c $d/m.cu -o $d/m.o; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

/* The GPU bodies' own test (run on the GPU by tools/gpu_check.sh) builds here. */
Test(golden, cuda_body_test_builds, .timeout = 300)
{
	cr_assert_eq(mkc_shell("d=$(mktemp -d) && nvcc -gencode=arch=compute_90a,code=sm_90a "
			       "-Xcompiler -Wall,-Wextra -Werror all-warnings -O2 "
			       "-o $d/bodies tests/gpu/bodies.cu; rc=$?; rm -rf $d; exit $rc", out,
			       sizeof out),
		     0, "%s", out);
}

/*
 * The tensor-core bodies' test (tests/gpu/mma.cu, run by gpu_check.sh) builds
 * here, and ptxas keeps the product tile's 64 sums a lane, and the chunk
 * attention's fragments, in registers: no spill anywhere, and no stack frame
 * in an mkc_ function (an array indexed at run time would put local memory
 * in the inner loop of every prompt product; the test kernels' frames hold
 * the strides they pass).
 */
Test(golden, cuda_mma_test_builds_without_spills, .timeout = 300)
{
	cr_assert_eq(mkc_shell("d=$(mktemp -d) && nvcc -gencode=arch=compute_90a,code=sm_90a "
			       "-Xcompiler -Wall,-Wextra -Werror all-warnings -O2 -Xptxas -v "
			       "-o $d/mma tests/gpu/mma.cu >$d/log 2>&1; rc=$?; "
			       "grep -c ' bytes spill stores' $d/log >/dev/null || rc=3; "
			       "grep ' bytes spill stores' $d/log | grep -v ' 0 bytes spill stores, 0 bytes "
			       "spill loads' && rc=4; "
			       "awk '/Function properties for .*mkc_/ { b = 1; next } "
			       "b && !/^ *0 bytes stack frame/ { print; bad = 1 } { b = 0 } "
			       "END { exit bad }' $d/log || rc=5; cat $d/log | tail -3; "
			       "rm -rf $d; exit $rc",
			       out, sizeof out),
		     0, "%s", out);
}

/*
 * The portable bodies' GPU test (tests/gpu/portable.cu, run by gpu_check.sh)
 * compiles here: the host side as gpu_check.sh builds it, the device side
 * to PTX, unoptimised (the front end's errors and warnings; gpu_check.sh
 * builds it whole). The whole build took 88 of test_toolchains' 420 s on
 * two cores (session 42); this takes about 6. Its host copies of the
 * bodies see their `#pragma unroll`, meant for the device, which gcc's
 * -Wall calls unknown.
 */
Test(golden, cuda_portable_body_test_builds, .timeout = 300)
{
	cr_assert_eq(mkc_shell("d=$(mktemp -d) && nvcc -gencode=arch=compute_90a,code=compute_90a "
			       "-Xcicc -O0 -Xcompiler -Wall,-Wextra,-Wno-unknown-pragmas "
			       "-Werror all-warnings -O2 -c -o $d/portable.o tests/gpu/portable.cu; "
			       "rc=$?; rm -rf $d; exit $rc", out, sizeof out),
		     0, "%s", out);
}

/* The draw's GPU test (tests/gpu/sample.cu, run by gpu_check.sh) builds here
 * (32 lanes a warp; gpu_check.sh builds the 64-lane one too: each nvcc run
 * is half a minute of CI). */
Test(golden, cuda_sample_test_builds, .timeout = 300)
{
	cr_assert_eq(mkc_shell("d=$(mktemp -d) && nvcc -gencode=arch=compute_90a,code=sm_90a "
			       "-Xcompiler -Wall,-Wextra -Werror all-warnings -O2 -o $d/sample "
			       "tests/gpu/sample.cu; rc=$?; rm -rf $d; exit $rc", out, sizeof out),
		     0, "%s", out);
}

/* The same test as the HIP target builds the bodies, 64 lanes a warp, through the
 * mapping header (gpu_check.sh runs it so on the H200). */
Test(golden, cuda_body_test_builds_64_lanes_wide, .timeout = 300)
{
	cr_assert_eq(mkc_shell("d=$(mktemp -d) && nvcc -gencode=arch=compute_90a,code=sm_90a "
			       "-Xcompiler -Wall,-Wextra -Werror all-warnings -O2 -DMKC_BODIES_HIP "
			       "-o $d/bodies tests/gpu/bodies.cu; rc=$?; rm -rf $d; exit $rc", out,
			       sizeof out),
		     0, "%s", out);
}
