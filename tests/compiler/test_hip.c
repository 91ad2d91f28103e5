/*
 * test_hip.c - the HIP target, compiled, never run: no AMD GPU is at hand
 * (nor an NVIDIA one in CI). Every model below is emitted as .hip and
 * built, warnings as errors, by both compilers CI installs
 * (tools/setup.sh): Debian's hipcc (HIP 5.2 on clang 15) for gfx90a, to an
 * object; and clang-19 for gfx942 against Debian's HIP headers with no
 * device libraries (-nogpulib), so the device side is compiled to gfx942
 * assembly (--offload-device-only -S: linking would need the libraries)
 * and the host side to an object. The rest checks the choices that make
 * the file HIP: 64-wide lane groups, scoped atomics for the events (and
 * what they become in gfx942 code), no CUDA-only text; the runtime and the
 * GPU bodies are the CUDA target's, one source in CUDA's names that
 * backends/hip/names.h maps to HIP's.
 *
 * A missing compiler fails the test with the way to install it, as a
 * missing nvcc fails test_golden.c's CUDA builds.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mkc_run.h"
#include "../../backends/core/emit.h"

static char out[1 << 16];

/* the Llama exports, the Qwen3 export and a Hugging Face folder in bf16 */
static const char *const models[] = {"tiny_llama_decode_op18", "tiny_llama_decode_op23",
				     "qwen3_tiny_onnx/model.onnx", "hf/llama_tiny_bf16"};

#define NMODELS (sizeof models / sizeof *models)

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

Test(hip, emitted_hip_builds_for_gfx90a_with_hipcc, .timeout = 600)
{
	need("${HIPCC:-hipcc}");
	for (size_t i = 0; i < NMODELS; i++)
		cr_assert_eq(emit_for(models[i], "gfx90a", HIPCC " -c $d/m.hip -o $d/m.o"), 0, "%s: %s",
			     models[i], out);
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

Test(hip, emitted_hip_builds_for_gfx942_with_clang_19, .timeout = 600)
{
	need("${CLANG19:-clang-19}");
	for (size_t i = 0; i < NMODELS; i++)
		cr_assert_eq(emit_and(models[i], CLANG " --offload-device-only -S $d/m.hip -o $d/m.s && "
				      CLANG " --offload-host-only -c $d/m.hip -o $d/m.o"),
			     0, "%s: %s", models[i], out);
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
 * The event protocol in gfx942 code: the release add writes back L2
 * (buffer_wbl2 sc1: agent scope, the other XCDs' L2 included) before the
 * 64-bit atomic add, and the acquire load invalidates (buffer_inv sc1)
 * after it; the wait pauses with s_sleep. Without the scoped builtins none
 * of the cache maintenance would be there.
 */
Test(hip, gfx942_code_has_agent_scope_release_and_acquire, .timeout = 300)
{
	need("${CLANG19:-clang-19}");
	cr_assert_eq(emit_and("tiny_llama_decode_op23", CLANG " --offload-device-only -S $d/m.hip "
			      "-o $d/m.s && grep -c 'buffer_wbl2 sc1' $d/m.s && "
			      "grep -c 'buffer_inv sc1' $d/m.s && grep -c 'global_atomic_add_x2' "
			      "$d/m.s && grep -c 's_sleep 1' $d/m.s"),
		     0, "%s", out);
}

/* The emitted text of a model, in text (a static buffer). */
static const char *
emit_text(const char *model, const char *ext, const char *args)
{
	static char text[1 << 22];
	char dir[] = "/tmp/mkc_hip_XXXXXX", path[64], hpath[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/llama.%s", dir, ext);
	snprintf(hpath, sizeof hpath, "%s/llama.h", dir);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s tests/models/%s -o %s %s", mkc_bin(), model, path, args);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	cr_assert(feof(f), "%s is larger than the test's buffer", path);
	text[n] = 0;
	fclose(f);
	unlink(path);
	unlink(hpath);
	rmdir(dir);
	return text;
}

Test(hip, emitted_text_is_wave64_with_scoped_atomics)
{
	const char *t = emit_text("tiny_llama_decode_op23", "hip", "");
	const char *want[] = {
		"#include <hip/hip_runtime.h>\n",
		" * target: hip;",
		"#define MKC_WARP 64\n",
		/* the butterfly starts at offset 32 and shuffles within 64 lanes */
		"for (int o = MKC_WARP / 2; o > 0; o >>= 1)\n\t\tv += mkc_shfl_xor(v, o);",
		"return __shfl_xor(v, o, MKC_WARP);",
		/* the matvec body, the CUDA target's, on 64-lane warps */
		"mkc_gemv_tile<256, MKC_W_F32, MKC_NORM_NONE, MKC_EPI_MM>(",
		"__hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT)",
		"__hip_atomic_fetch_add(p, 1ULL, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT)",
		"#define cudaOccupancyMaxActiveBlocksPerMultiprocessor "
		"hipOccupancyMaxActiveBlocksPerMultiprocessor\n",
		"#define cudaDevAttrWarpSize hipDeviceAttributeWarpSize\n",
		"mkc_generate_kernel<<<",
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_expect(strstr(t, want[i]), "no \"%s\" in the emitted .hip", want[i]);
	/*
	 * Nothing CUDA-only in the code (comments may name what was left
	 * out): no 32-lane shuffles, PTX or cp.async, and every CUDA runtime
	 * name the shared runtime calls is one that backends/hip/names.h maps
	 * to HIP's (it comes first in the file, so it is read past here).
	 */
	const char *names = mkc_runtime_text("backends/hip/names.h");
	const char *c = strstr(t, names);
	cr_assert_not_null(c, "backends/hip/names.h is not in the emitted .hip whole");
	static char rest[1 << 22];
	size_t k = 0;
	for (const char *s = t; *s;) {
		if (s == c) {
			s += strlen(names);
		} else if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");
			cr_assert_not_null(e, "an unclosed comment in the emitted .hip");
			s = e + 2;
		} else {
			rest[k++] = *s++;
		}
	}
	rest[k] = 0;
	const char *never[] = {"__shfl_xor_sync", "__shfl_sync", "__shfl_down_sync", "asm volatile",
			       "asm(", "cp.async", "cuda_runtime", "__CUDA_ARCH__",
			       "__nanosleep", "globaltimer", "% 32", "/ 32", "& 31", ">> 5"};
	for (size_t i = 0; i < sizeof never / sizeof *never; i++)
		cr_expect(!strstr(rest, never[i]), "\"%s\" in the emitted .hip", never[i]);
	for (const char *s = strstr(rest, "cuda"); s; s = strstr(s + 4, "cuda")) {
		if (s[4] < 'A' || s[4] > 'Z')
			continue;   /* not a runtime name (cudaMalloc, cudaError_t) */
		size_t n = 0;
		while (s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
		       (s[n] >= '0' && s[n] <= '9'))
			n++;
		char def[128];
		snprintf(def, sizeof def, "#define %.*s hip", (int)n, s);
		cr_expect(n >= sizeof def - 16 || strstr(names, def),
			  "the .hip calls %.*s, which backends/hip/names.h does not map", (int)n, s);
	}
}

/* The CUDA and the HIP output run one source: the same runtime and GPU
 * bodies, each after its own vendor's sync header. */
Test(hip, cuda_and_hip_share_the_runtime_and_bodies)
{
	const char *shared[] = {"backends/cuda/exec.cuh", "backends/cuda/matvec.cuh",
				"backends/cuda/attention.cuh"};
	for (int k = 0; k < 2; k++) {
		const char *t = emit_text("hf/llama_tiny_bf16", k ? "hip" : "cu", "");
		for (size_t i = 0; i < sizeof shared / sizeof *shared; i++)
			cr_expect(strstr(t, mkc_runtime_text(shared[i])), "%s is not in the .%s whole",
				  shared[i], k ? "hip" : "cu");
		cr_expect(strstr(t, "mkc_gemv_tile<64, MKC_W_BF16, MKC_NORM_BF16, MKC_EPI_GLU>("),
			  "the .%s does not call the matvec body",
			  k ? "hip" : "cu");
		const char *sync = k ? "backends/hip/sync.h" : "backends/cuda/sync.cuh";
		const char *other = k ? "backends/cuda/sync.cuh" : "backends/hip/sync.h";
		cr_expect(strstr(t, mkc_runtime_text(sync)), "the .%s lacks %s", k ? "hip" : "cu", sync);
		cr_expect(!strstr(t, mkc_runtime_text(other)), "the .%s holds %s", k ? "hip" : "cu",
			  other);
	}
}

/* The same C API as the CUDA output: the headers differ in their first line only. */
Test(hip, header_is_the_cuda_header)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && mkdir $d/a $d/b && "
		 "%s tests/models/tiny_llama_decode_op18 -o $d/a/llama.cu && "
		 "%s tests/models/tiny_llama_decode_op18 -o $d/b/llama.hip && "
		 "tail -n +2 $d/a/llama.h > $d/a.h && tail -n +2 $d/b/llama.h > $d/b.h && "
		 "cmp $d/a.h $d/b.h && grep -c 'llama_generate' $d/b.h; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

/* --target hip names the target whatever OUT is called. */
Test(hip, target_option_picks_hip)
{
	const char *t = emit_text("tiny_llama_decode_op18", "cpp", "--target hip");
	cr_expect(strstr(t, " * target: hip;"), "--target hip did not write HIP");
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
