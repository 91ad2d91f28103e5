/*
 * test_hip.c - the HIP target's emitted text: the choices that make the
 * file HIP: 64-wide lane groups, scoped atomics for the events, no
 * CUDA-only text; the runtime and the GPU bodies are the CUDA target's, one
 * source in CUDA's names that backends/hip/names.h maps to HIP's; the C API
 * is the CUDA output's. Building the .hip (hipcc for gfx90a, clang-19 for
 * gfx942, nvcc through the mapping header) is tests/toolchains/test_hip.c's,
 * in the same suite, run by make test-toolchains.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mkc_run.h"
#include "../../backends/core/emit.h"

static char out[1 << 16];

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
		"m->dev, m->counter, m->epoch[MKC_DECODE_PLAN], m->bars, m->timeout_cycles, io);",
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
 * A chunk's products take the matrix-core tile (backends/hip/mfma.h's
 * mkc_mma_tile, by the name of CUDA's) in one K step of LDS; the tiles
 * that only CUDA has are not called: a few-token plan's (so no such plan
 * is made by default: a chunk plan and the decode plan) and the chunk's
 * attention on tensor cores. The CUDA file of the same model has them.
 */
Test(hip, a_chunk_takes_the_matrix_core_tile)
{
	const char *t = emit_text("hf_chunk/llama_tiny_bf16", "hip", "--max-chunk 256");
	const char *want[] = {
		"mkc_mma_tile<true, false, false>(y.p, y.s[0], x0.p, x0.s[0]",
		"mkc_mma_tile<true, true, true>(",
		"__builtin_amdgcn_mfma_f32_32x32x8bf16_1k(va, vb, c, 0, 0, 0)",
		"#define MKC_MM_STAGES 1\n",
		"#define MKC_DYN_SMEM MKC_MM_SMEM\n",
		"#define MKC_DECODE_PLAN 1\n",
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_expect(strstr(t, want[i]), "no \"%s\" in the chunked .hip", want[i]);
	cr_expect(strstr(t, mkc_runtime_text("backends/hip/mfma.h")), "mfma.h is not in the .hip whole");
	cr_expect(!strstr(t, "mkc_mm_few_tile<"), "the .hip calls the few-token tile");
	cr_expect(!strstr(t, mkc_runtime_text("backends/cuda/mma.cuh")), "the .hip holds mma.cuh");
	const char *c = emit_text("hf_chunk/llama_tiny_bf16", "cu", "--max-chunk 256");
	cr_expect(strstr(c, "mkc_mm_few_tile<true, false, false>("), "the .cu lacks the few-token tile");
	cr_expect(strstr(c, "#define MKC_DECODE_PLAN 3\n"), "the .cu lacks its few-token plans");
	cr_expect(!strstr(c, "__builtin_amdgcn_mfma"), "the .cu holds the HIP tile");
}

/*
 * A head of 64 in chunks: CUDA's attention would run on tensor cores and
 * write its output as bf16 for the o_proj tile (passes/narrow.c); HIP's
 * general attention body writes float32, so the output stays float32 and
 * the file is written (the driver's tc_attention is off for HIP).
 */
Test(hip, a_chunk_attention_output_stays_float32)
{
	const char *t = emit_text("hf_chunk/llama_tiny_d64", "hip", "--max-chunk 256");
	cr_expect(strstr(t, "mkc_mma_tile<"), "the products take no matrix-core tile");
	cr_expect(!strstr(t, "mkc_attn_chunk_mma_tile<"), "the .hip calls CUDA's attention tile");
	const char *c = emit_text("hf_chunk/llama_tiny_d64", "cu", "--max-chunk 256");
	cr_expect(strstr(c, "mkc_attn_chunk_mma_tile<64, float, true>("),
		  "the .cu's attention does not write bf16 on tensor cores");
}
