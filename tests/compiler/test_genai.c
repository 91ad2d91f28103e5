/*
 * test_genai.c - onnxruntime-genai's exports as its model builder writes
 * them (issue 34; tests/models/genai, made by gen_genai.py): compiled
 * unmodified on the C target and compared with onnxruntime over steps of
 * 1, 4 and 3 new tokens; the symbols the export leaves free bound from the
 * graph; the tied embedding gathered from the weight without copying it;
 * --dim and its errors.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

#define GENAI "tests/models/genai/"

static char out[1 << 16];

Test(genai, builder_exports_match_onnxruntime, .timeout = 300)
{
	/* steps of 4 and 3 tokens: a chunked file */
	cr_assert_eq(mkc_test_run("--max-chunk 4 " GENAI "llama_tiny " GENAI "qwen3_tiny", out,
				  sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "6 passed, 0 failed"), "%s", out);
	/* the node whole, the caches given and returned */
	cr_assert_eq(mkc_test_run("--kv-io --max-chunk 4 " GENAI "qwen3_tiny", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
	/* the same on the shuffled queue, and without the fusions */
	cr_assert_eq(mkc_test_run("--max-chunk 4 --shuffle 7 --threads 3 --no-fuse " GENAI
				  "llama_tiny", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
}

/*
 * The fp16 CUDA exports (-p fp16 -e cuda; Qwen3's q/k norms inside
 * GroupQueryAttention), computed in float32, against onnxruntime's float16
 * (tests/models/README.md: Qwen3's reference is the same weights' export
 * with the norms outside the node, which onnxruntime's CPU runs). The
 * tolerance, a relative L2 error of 2e-3, is four units of float16's
 * rounding (2^-11): onnxruntime rounds every intermediate to float16, mkc
 * none (measured: 5e-4 to 8e-4); a wrong rotation, norm or cache is off by
 * far more. Steps of 1, 4 and 3 tokens, the caches in place and as float16
 * inputs and outputs (--kv-io: the whole node, the norms outside it), and
 * the weights rounded to bf16 as they load (their own rounding, 2^-9: 2e-2).
 */
Test(genai, fp16_exports_match_onnxruntime, .timeout = 300)
{
	cr_assert_eq(mkc_test_run("--tolerance 2e-3 --max-chunk 4 " GENAI "llama_tiny_fp16 " GENAI
				  "qwen3_tiny_fp16", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "6 passed, 0 failed"), "%s", out);
	cr_assert_eq(mkc_test_run("--tolerance 2e-3 --kv-io --max-chunk 4 " GENAI "qwen3_tiny_fp16",
				  out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
	cr_assert_eq(mkc_test_run("--tolerance 2e-2 --weights bf16 --max-chunk 4 --shuffle 5 "
				  "--threads 3 " GENAI "llama_tiny_fp16", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
}

/*
 * The fp16 CPU exports (-p fp16 -e cpu): MultiHeadAttention, which infer
 * makes ONNX Attention and gqa.c gives heads (reading the repeat_kv copies'
 * heads as they are, which canon then drops: the caches stay in place);
 * its mask a Tile of attention_mask's over the heads; total_sequence_length
 * and kv_cache_dim bound where the mask and the caches meet the step's
 * lengths. Its causal mask's Expand holds only for one new token: one
 * token after a past of 5 and after none, against onnxruntime within 2e-3
 * (as above), the caches in place and as inputs and outputs; --max-chunk
 * is refused, naming the Expand.
 */
Test(genai, fp16_cpu_exports_match_onnxruntime, .timeout = 300)
{
	cr_assert_eq(mkc_test_run("--tolerance 2e-3 " GENAI "llama_tiny_fp16_cpu " GENAI
				  "qwen3_tiny_fp16_cpu", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "4 passed, 0 failed"), "%s", out);
	cr_expect(strstr(out, "(KV caches in place)"), "%s", out);
	cr_assert_eq(mkc_test_run("--tolerance 2e-3 --kv-io " GENAI "llama_tiny_fp16_cpu", out,
				  sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "2 passed, 0 failed"), "%s", out);
	cr_assert_neq(mkc_test_run("--max-chunk 4 " GENAI "llama_tiny_fp16_cpu", out, sizeof out),
		      0, "%s", out);
	cr_expect(strstr(out, "node '/model/attn_mask_reformat/input_ids_subgraph/Expand' "
			      "(Expand): cannot broadcast dimension"), "%s", out);
}

/*
 * What mkc makes of an fp16 export: float16 only at the interface, the
 * logits' Cast, the caches float32 state, the weights widened as they
 * load; Qwen3's q/k norms as RMSNormalization nodes of the heads.
 */
Test(genai, fp16_export_is_float32_inside, .timeout = 120)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s " GENAI "qwen3_tiny_fp16 -v --dump-after=lower 2>&1",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "half: float16 computed as float32: 23 initializers widened as they "
			      "load, 0 inputs and 1 outputs cast at the boundary, 8 KV cache tensors "
			      "float32 state"), "%s", out);
	cr_expect(strstr(out, "gqa: 0 GroupQueryAttention nodes with packed QKV split, 2 with q/k "
			      "norms taken out; 2 taken apart into the nodes of the Hugging Face path, "
			      "0 kept whole"), "%s", out);
	cr_expect(strstr(out, "output logits: float16[1,1,256]"), "%s", out);
	cr_expect(strstr(out, "Cast(logits_f32) -> logits: float16[1,1,256]"), "%s", out);
	cr_expect(strstr(out, "state: 4 KV caches of 256 positions kept in place"), "%s", out);
	cr_expect(strstr(out, "/q_norm RMSNormalization(/model/layers.0/attn/"
			      "GroupQueryAttention_q_norm_heads, model.layers.0.attn.q_norm.layernorm."
			      "weight) -> /model/layers.0/attn/GroupQueryAttention_q_norm: "
			      "float32[1,1,4,32]"), "%s", out);
	/* no float16 anywhere else: the half line, the Cast (its name and output), the output */
	int n = 0;
	for (const char *p = out; (p = strstr(p, "float16")); p++)
		n++;
	cr_expect_eq(n, 4, "float16 where it should not be: %s", out);
}

/*
 * What mkc makes of the export, in its -v report and the lowered graph:
 * the batch is 1, the head size and the total length are bound, packed QKV
 * is split into three products, each reading its rows of the weight stored
 * transposed, the embedding and the output layer read lm_head's weight
 * stored transposed (no Transpose of the table), and the mask's int64
 * ReduceSum stays a node the C target computes.
 */
Test(genai, free_symbols_bound_and_packed_qkv_split, .timeout = 120)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s " GENAI "llama_tiny -v --dump-after=lower 2>&1", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "the batch 'batch_size' is 1 (mkc steps one sequence; --dim "
			      "batch_size=N fixes another)"), "%s", out);
	cr_expect(strstr(out, "the symbol 'kv_cache_dim' is 16 (node "
			      "'/model/layers.0/attn/GroupQueryAttention')"), "%s", out);
	/* a step of one token (no --max-chunk): total is the past and one */
	cr_expect(strstr(out, "the symbol 'total_sequence_length' is past_sequence_length+1"), "%s",
		  out);
	/* every MatMul weight [K, N] and the tied embedding's Transpose stored transposed */
	cr_expect(strstr(out, "layout: weights stored transposed, read by rows: 1 embeddings (their "
			      "Transpose gone), 2 split products, 9 other products"), "%s", out);
	cr_expect(strstr(out, "gqa: 2 GroupQueryAttention nodes with packed QKV split, 0 with q/k "
			      "norms taken out; 2 taken apart into the nodes of the Hugging Face path, "
			      "0 kept whole"), "%s", out);
	cr_expect(strstr(out, "the KV caches hold 256 positions, the rows of 'cos_cache'"), "%s",
		  out);
	cr_expect(strstr(out, "state: 4 KV caches of 256 positions kept in place; "
			      "past_sequence_length counts them"), "%s", out);
	cr_expect(strstr(out, "input  attention_mask: int64[1,past_sequence_length+1]"), "%s", out);
	cr_expect(strstr(out, "Gather(lm_head.MatMul.weight_T, input_ids) -> "
			      "/model/embed_tokens/Gather/output_0: float32[1,1,64]"), "%s", out);
	cr_expect(strstr(out, "MatMul(/model/layers.2/final_norm_layernorm/output_0, "
			      "lm_head.MatMul.weight_T) -> logits: float32[1,1,1040]\n"
			      "       kernel matmul trans_a=0 trans_b=1"), "%s", out);
	/* as a folder's graph: the key's norm, product, rotary and append one node
	 * (passes/flat.c makes the builder's [1, S, hidden] rows and norms the
	 * fusions take), the norm and SwiGLU with theirs, residuals in Gemm */
	cr_expect(strstr(out, "flat: 25 row-wise nodes over [S, X] rows (4 skip norms into Add "
			      "and RMSNormalization), 10 views joining them to other nodes"), "%s",
		  out);
	cr_expect(strstr(out, "HeadProj(/model/embed_tokens/Gather/output_0_rows, "
			      "model.layers.0.input_layernorm.weight, "
			      "model.layers.0.attn.qkv_proj.MatMul.weight_T_64_96, cos_cache_new_rows, "
			      "sin_cache_new_rows) -> present.0.key"), "%s", out);
	cr_expect(strstr(out, "NormGlu(/model/layers.0/post_attention_layernorm/output_3, "
			      "model.layers.0.post_attention_layernorm.weight, "
			      "model.layers.0.mlp.gate_proj.MatMul.weight_T, "
			      "model.layers.0.mlp.up_proj.MatMul.weight_T)"), "%s", out);
	cr_expect(strstr(out, "fuse: 4 residual adds into Gemm, 2 SwiGLU"), "%s", out);
	cr_expect_null(strstr(out, "Transpose(lm_head"), "the table is not copied: %s", out);
	cr_expect(strstr(out, "ReduceSum(attention_mask"), "%s", out);
}

Test(genai, dim_errors_name_the_symbols, .timeout = 60)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s " GENAI "llama_tiny --dim batch=1 2>&1", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_expect(strstr(out, "--dim batch=1: the model has no symbolic dimension of that name (it "
			      "has: batch_size, sequence_length, total_sequence_length, "
			      "past_sequence_length, kv_cache_dim)"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s " GENAI "llama_tiny --dim batch_size=0 2>&1", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_expect(strstr(out, "--dim batch_size=0: NAME=N with N from 1 to 2^40"), "%s", out);
	/* 4096 sequences of up to 4096 tokens a step: the arena says what that costs */
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " GENAI "llama_tiny --dim batch_size=4096 "
		 "--dim sequence_length=4096 -o $d/m.c 2>&1; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "warning: the emitted code takes a 40 GiB arena, sized for every "
			      "symbolic dimension at 4096 (--max-dim; --dim NAME=N fixes one)"),
		  "%s", out);
}

/*
 * The caches kept in place: a step of 3 tokens, then one whose
 * attention_mask has a hole (seqlens_k from it is one short) is refused by
 * the LengthCheck with a sentence naming the node, the cache left at 3;
 * the same token with a full mask steps; generate after a reset runs
 * (--max-chunk 4: its prompt in chunks) and gives onnxruntime's tokens
 * (test generate's check, through tools/ort_decode.py, for this file).
 */
Test(genai, caches_in_place_and_a_padded_mask_refused, .timeout = 300)
{
	static const char prog[] =
		"#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"genai.h\"\n"
		"static float logits[4 * 1040];\n"
		"static int step(genai *x, const int64_t *ids, const int64_t *mask, int n) {\n"
		"  int64_t dims[8];\n"
		"  for (int i = 0; i < genai_num_dims(); i++)\n"
		"    dims[i] = strcmp(genai_dim_name(i), \"sequence_length\") ? -1 : n;\n"
		"  const void *in[2] = {ids, mask}; void *o[1] = {logits};\n"
		"  return genai_step(x, in, o, dims);\n"
		"}\n"
		"int main(void) {\n"
		"  genai *x;\n"
		"  if (genai_create(&x, NULL) || genai_load_weights(x, DIR)) return 9;\n"
		"  printf(\"inputs %d: %s %s, caches %d\\n\", genai_num_inputs(), genai_input_name(0),\n"
		"         genai_input_name(1), genai_num_caches());\n"
		"  static const int64_t ids[4] = {5, 9, 13, 17}, ones[4] = {1, 1, 1, 1};\n"
		"  static const int64_t holed[4] = {1, 1, 0, 1};\n"
		"  int rc = step(x, ids, ones, 3);\n"
		"  printf(\"three: %d, len %lld\\n\", rc, (long long)genai_cache_len(x));\n"
		"  rc = step(x, ids + 3, holed, 1);\n"
		"  printf(\"holed: %d %s, len %lld\\n\", rc, genai_last_error(x),\n"
		"         (long long)genai_cache_len(x));\n"
		"  rc = step(x, ids + 3, ones, 1);\n"
		"  printf(\"one: %d, len %lld\\n\", rc, (long long)genai_cache_len(x));\n"
		"  int64_t prompt[40], toks[16];\n"
		"  for (int i = 0; i < 40; i++) prompt[i] = (7 + 13 * i) % 256;\n"
		"  genai_cache_reset(x);\n"
		"  if (genai_generate(x, prompt, 40, 16, toks)) return 8;\n"
		"  printf(\"tokens:\");\n"
		"  for (int i = 0; i < 16; i++) printf(\" %lld\", (long long)toks[i]);\n"
		"  printf(\"\\n\");\n"
		"  genai_destroy(x);\n"
		"  return 0;\n"
		"}\n";
	static char cmd[1 << 14];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s " GENAI "llama_tiny --max-chunk 4 -o $d/genai.c && "
		 "cat > $d/t.c <<'EOF'\n%sEOF\n"
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined "
		 "-fno-sanitize-recover=all -DDIR=\\\"" GENAI "llama_tiny\\\" -pthread -I$d -o $d/t "
		 "$d/t.c $d/genai.c -lm && timeout 120 $d/t && python3 tools/ort_decode.py "
		 GENAI "llama_tiny/model.onnx 16 --prompt seq:40; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), prog);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "inputs 2: input_ids attention_mask, caches 4\n"), "%s", out);
	cr_expect(strstr(out, "three: 0, len 3\n"), "%s", out);
	cr_expect(strstr(out, "holed: -1 node '/model/layers.0/attn/GroupQueryAttention/lengths' "
			      "(LengthCheck): seqlens_k[0] is 2, not 3"), "%s", out);
	cr_expect(strstr(out, ", len 3\none: 0, len 4\n"), "%s", out);
	char *a = strstr(out, "tokens:"), *b = a ? strstr(a + 1, "tokens:") : NULL;
	cr_assert(a && b, "%s", out);
	size_t la = strcspn(a, "\n");
	cr_expect(la == strcspn(b, "\n") && !strncmp(a, b, la), "mkc and onnxruntime differ: %s",
		  out);
}

/*
 * onnxruntime-genai's own generator (greedy, gen_genai.py: greedy.txt, 32
 * tokens after the prompt seq:39) against examples/generate.c on the C
 * output: Llama's decode file, Qwen3's chunked file (the prompt in chunks
 * of 8); and the same for the fp16 exports, whose generate takes the argmax
 * of the float16 logits (the generator's, on the fp16 file; Qwen3's on the
 * same weights' export with the q/k norms outside the node); and the fp16
 * CPU exports, a token at a time with their caches in place, against the
 * same weights' fp16 CUDA export's tokens (the generator fails on the CPU
 * file itself).
 */
Test(genai, greedy_tokens_are_the_generators, .timeout = 300)
{
	/* the model, its flags, the folder whose greedy.txt it must give: the fp16
	 * CPU exports, on which the generator fails, the same weights' CUDA export's */
	static const char *const runs[][3] = {
		{"llama_tiny", "", "llama_tiny"}, {"qwen3_tiny", "--max-chunk 8", "qwen3_tiny"},
		{"llama_tiny_fp16", "", "llama_tiny_fp16"},
		{"qwen3_tiny_fp16", "--max-chunk 8", "qwen3_tiny_fp16"},
		{"llama_tiny_fp16_cpu", "", "llama_tiny_fp16"},
		{"qwen3_tiny_fp16_cpu", "", "qwen3_tiny_fp16"}};
	for (int i = 0; i < 6; i++) {
		char cmd[2048];
		snprintf(cmd, sizeof cmd,
			 "d=$(mktemp -d) && %s " GENAI "%s %s -o $d/llama.c --workers 2 && "
			 "cc -std=c11 -O2 -Wall -Wextra -Werror -pthread $MKC_TEST_CFLAGS -I$d -o $d/gen "
			 "examples/generate.c $d/llama.c -lm && $d/gen " GENAI "%s/model.onnx 32 seq:39 "
			 "&& grep '^tokens:' " GENAI "%s/greedy.txt; rc=$?; rm -rf $d; exit $rc",
			 mkc_bin(), runs[i][0], runs[i][1], runs[i][0], runs[i][2]);
		cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
		char *a = strstr(out, "tokens:"), *b = a ? strstr(a + 1, "tokens:") : NULL;
		cr_assert(a && b, "%s", out);
		size_t la = strcspn(a, "\n");
		cr_expect(la == strcspn(b, "\n") && !strncmp(a, b, la),
			  "%s: mkc and onnxruntime-genai's generator differ: %s", runs[i][0], out);
	}
}
