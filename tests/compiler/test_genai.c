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
	cr_assert_eq(mkc_test_run(GENAI "llama_tiny " GENAI "qwen3_tiny", out, sizeof out), 0, "%s",
		     out);
	cr_expect(strstr(out, "6 passed, 0 failed"), "%s", out);
	/* the same on the shuffled queue, and without the fusions */
	cr_assert_eq(mkc_test_run("--shuffle 7 --threads 3 --no-fuse " GENAI
				  "llama_tiny", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
}

/*
 * What mkc makes of the export, in its -v report and the lowered graph:
 * the batch is 1, the head size and the total length are bound, packed QKV
 * is split, the embedding reads lm_head's weight by columns (no Transpose
 * of the table), and the mask's int64 ReduceSum stays a node the C target
 * computes.
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
	cr_expect(strstr(out, "the symbol 'total_sequence_length' is "
			      "sequence_length+past_sequence_length"), "%s", out);
	cr_expect(strstr(out, "1 reading a transposed weight (products, embeddings)"), "%s", out);
	cr_expect(strstr(out, "2 packed QKV split"), "%s", out);
	cr_expect(strstr(out, "input  attention_mask: int64[1,sequence_length+past_sequence_length]"),
		  "%s", out);
	cr_expect(strstr(out, "Gather(lm_head.MatMul.weight, input_ids) -> "
			      "/model/embed_tokens/Gather/output_0_columns: float32[64,1,sequence_length]"),
		  "%s", out);
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
	/* 4096 sequences a step: the arena says what that costs */
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " GENAI "llama_tiny --dim batch_size=4096 "
		 "-o $d/m.c 2>&1; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "warning: the emitted code takes a 40 GiB arena, sized for every "
			      "symbolic dimension at 4096 (--max-dim; --dim NAME=N fixes one)"),
		  "%s", out);
}
