/*
 * test_hip.c - the HIP target's output built, never run: no AMD GPU is at
 * hand (nor an NVIDIA one in CI). Every model below is emitted as .hip and
 * built, warnings as errors, by both compilers CI installs
 * (tools/setup.sh): Debian's hipcc (HIP 5.2 on clang 15) for gfx90a, to an
 * object; and clang-19 for gfx942 against Debian's HIP headers with no
 * device libraries (-nogpulib), so the device side is compiled to gfx942
 * assembly (--offload-device-only -S: linking would need the libraries)
 * and the host side to an object; and what the gfx942 assembly must hold
 * for the events. The text checks of the emitted .hip (64-wide lane groups,
 * scoped atomics, no CUDA-only text) are mkc's and stay in
 * tests/compiler/test_hip.c, in the same suite.
 *
 * A missing compiler fails the test with the way to install it, as a
 * missing nvcc fails test_cuda.c's builds.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

static char out[1 << 16];

/*
 * the Llama exports, the Qwen3 export, a Hugging Face folder in bf16 in
 * chunks (its products on matrix cores: backends/hip/mfma.h; its one-token
 * plan the decode bodies), and onnxruntime-genai's fp16 Qwen3 export in
 * chunks (float16 at the interface);
 * (the paged file of --max-seqs builds in test_cuda.c: its exec is the same
 * text, and each compile here is CI time)
 */
static const char *const models[] = {"tiny_llama_decode_op18", "tiny_llama_decode_op23",
				     "qwen3_tiny_onnx/model.onnx", "hf_chunk/llama_tiny_bf16 --max-chunk 256",
				     "genai/qwen3_tiny_fp16 --max-chunk 4"};

#define NMODELS (sizeof models / sizeof *models)

/* Parameters are indices into models: the test instances run in processes of their own. */
static int indices[NMODELS] = {0, 1, 2, 3, 4};

#define HIPCC "${HIPCC:-hipcc} --offload-arch=gfx90a -O2 -Wall -Wextra -Werror"
#define CLANG "${CLANG19:-clang-19} -x hip --offload-arch=gfx942 -nogpulib -O2 -Wall -Wextra -Werror"

static void
need(const char *tool)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "command -v %s", tool);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0,
		     "no %s here: tools/setup.sh installs it (Debian: hipcc, libamdhip64-dev, "
		     "clang-19, lld-19)", tool);
}

/*
 * Emits model as $d/m.hip for arch (mkc --arch), then runs build (which may
 * name $d); 0 when both worked.
 */
static int
emit_for(const char *model, const char *arch, const char *build)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s tests/models/%s -o $d/m.hip --arch %s && %s; "
		 "rc=$?; rm -rf $d; exit $rc", mkc_bin(), model, arch, build);
	return mkc_shell(cmd, out, sizeof out);
}

/* The same for gfx942, the default. */
static int
emit_and(const char *model, const char *build)
{
	return emit_for(model, "gfx942", build);
}

ParameterizedTestParameters(hip, emitted_hip_builds_for_gfx90a_with_hipcc)
{
	return cr_make_param_array(int, indices, NMODELS);
}

ParameterizedTest(int *i, hip, emitted_hip_builds_for_gfx90a_with_hipcc, .timeout = 600)
{
	need("${HIPCC:-hipcc}");
	cr_assert_eq(emit_for(models[*i], "gfx90a", HIPCC " -c $d/m.hip -o $d/m.o"), 0, "%s: %s",
		     models[*i], out);
}

/*
 * A file is for the architecture mkc --arch named: a device build for
 * another stops at the guard, with a sentence saying what to do.
 */
Test(hip, a_build_for_another_architecture_stops_at_the_guard, .timeout = 300)
{
	need("${HIPCC:-hipcc}");
	/* the compiler's first lines: the guard's error comes first */
	cr_assert_neq(emit_for("hand/small_mlp", "gfx942",
			       "{ " HIPCC " -c $d/m.hip -o $d/m.o > $d/log 2>&1; rc=$?; head -c 800 $d/log; "
			       "exit $rc; }"),
		      0, "a gfx942 file built for gfx90a");
	cr_assert(strstr(out, "generated for gfx942 (mkc --arch gfx942): build with "
			      "--offload-arch=gfx942"), "%s", out);
}

ParameterizedTestParameters(hip, emitted_hip_builds_for_gfx942_with_clang_19)
{
	return cr_make_param_array(int, indices, NMODELS);
}

/*
 * Each model's gfx942 build; in op23's, the event protocol in gfx942 code
 * (once a test of its own, gfx942_code_has_agent_scope_release_and_acquire,
 * which built the same assembly again): the release add writes back L2
 * (buffer_wbl2 sc1: agent scope, the other XCDs' L2 included) before the
 * 64-bit atomic add, and the acquire load invalidates (buffer_inv sc1)
 * after it; the wait pauses with s_sleep. Without the scoped builtins none
 * of the cache maintenance would be there. In the chunked bf16 folder's,
 * the products' matrix-core instruction (backends/hip/mfma.h).
 */
ParameterizedTest(int *i, hip, emitted_hip_builds_for_gfx942_with_clang_19, .timeout = 600)
{
	need("${CLANG19:-clang-19}");
	const char *scope = !strcmp(models[*i], "tiny_llama_decode_op23")
		? " && grep -c 'buffer_wbl2 sc1' $d/m.s && grep -c 'buffer_inv sc1' $d/m.s && "
		  "grep -c 'global_atomic_add_x2' $d/m.s && grep -c 's_sleep 1' $d/m.s"
		: strstr(models[*i], "--max-chunk") && strstr(models[*i], "bf16")
		? " && grep -c 'v_mfma_f32_32x32x8_bf16' $d/m.s" : "";
	char build[1024];
	snprintf(build, sizeof build, CLANG " --offload-device-only -S $d/m.hip -o $d/m.s && "
		 CLANG " --offload-host-only -c $d/m.hip -o $d/m.o%s", scope);
	cr_assert_eq(emit_and(models[*i], build), 0, "%s: %s", models[*i], out);
}

/*
 * The Llama-3.2-1B-shaped graph (tools/gen_llama.py: 16 layers, sparse
 * weights), emitted for 132 workers with bf16 weights for each
 * architecture and built by clang-19, warnings as errors: the device side
 * to gfx90a and to gfx942 assembly, the host side to an object. (Debian's
 * hipcc, on clang 15, took 24 minutes on this file for gfx90a on a 2-core
 * machine, three quarters of it in LLVM 15's register coalescing; clang-19
 * takes about 20 s an architecture.)
 */
Test(hip, llama_1b_graph_builds_for_gfx90a_and_gfx942_with_clang_19, .timeout = 900)
{
	need("${CLANG19:-clang-19}");
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && rc= && python3 tools/gen_llama.py $d/g > /dev/null && "
		 "for a in gfx90a gfx942; do "
		 "%s $d/g/model.onnx -o $d/$a.hip --arch $a --workers 132 --weights bf16 && "
		 "${CLANG19:-clang-19} -x hip --offload-arch=$a -nogpulib -O2 -Wall -Wextra -Werror "
		 "--offload-device-only -S $d/$a.hip -o $d/$a.s && grep -q 'amdgcn-amd-amdhsa--'$a $d/$a.s "
		 "|| { rc=1; break; }; done; "
		 "[ -z \"$rc\" ] && " CLANG " --offload-host-only -c $d/gfx942.hip -o $d/h.o; "
		 "rc=$?; rm -rf $d; exit $rc",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

/*
 * tests/gpu/hip_on_cuda.h, the test-only mapping that is to run the .hip on
 * the H200, keeps compiling with nvcc (CI has nvcc and no GPU): built, not
 * run.
 */
Test(hip, emitted_hip_builds_with_nvcc_through_the_mapping_header, .timeout = 300)
{
	/* the tests run in the repository root: $(pwd) is the tree */
	const char *build = "mkdir $d/hip && echo \"#include \\\"$(pwd)/tests/gpu/hip_on_cuda.h\\\"\" > "
			    "$d/hip/hip_runtime.h && nvcc -gencode=arch=compute_90a,code=sm_90a -O2 "
			    "-I$d -x cu -Xcompiler -Wall,-Wextra -Werror all-warnings -c $d/m.hip "
			    "-o $d/m.o";
	cr_assert_eq(emit_and("tiny_llama_decode_op23", build), 0, "%s", out);
}

/*
 * mkc test --target hip builds the model and its harness into a program
 * (Debian's hipcc knows gfx90a, not gfx942: hence MKC_HIP_ARCH); with no
 * AMD GPU the run fails, and must fail with a sentence, not a crash. This
 * is the only HIP code that runs here: the host side's error path.
 */
Test(hip, mkc_test_builds_and_fails_cleanly_without_a_gpu, .timeout = 300)
{
	need("${HIPCC:-hipcc}");
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "MKC_HIP_ARCH=gfx90a %s test --target hip tests/models/hand/small_mlp",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "the run failed: hip") && strstr(out, "hipGetDevice(&dev) failed (line "),
		  "%s", out);
}

/*
 * The stand-in hipcc that tools/gpu_check.sh gives mkc test to run the HIP
 * output on the H200 (tests/gpu/hipcc_on_cuda.sh: nvcc with the mapping
 * header) builds a golden model and its harness; here, with no GPU, the run
 * must fail with a sentence.
 */
Test(hip, the_cuda_stand_in_builds_mkc_tests_program, .timeout = 300)
{
	need("nvcc");
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "HIPCC=$(pwd)/tests/gpu/hipcc_on_cuda.sh %s test --target hip "
		 "tests/models/hand/small_mlp", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "the run failed: hip") && strstr(out, " failed (line "), "%s", out);
}
