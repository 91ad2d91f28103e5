/*
 * test_golden.c - `mkc test` on the golden models, end to end on the C
 * target: plain, with a shuffled shared queue on many threads, and under
 * ThreadSanitizer; and the mutation that shows those modes have teeth (a
 * wait removed after the schedule proof must make them fail).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../mkc_run.h"

#define GOLDEN "tests/models/tiny_llama_decode_op18 tests/models/tiny_llama_decode_op23 " \
	       "tests/models/hand/small_mlp tests/models/hand/small_mlp_ext"

static char out[1 << 16];

/* `mkc test ARGS`, its output in out; returns its exit status. */
static int
mkc_test(const char *args)
{
	return mkc_test_run(args, out, sizeof out);
}

Test(golden, all_pass_on_the_c_target, .timeout = 300)
{
	cr_assert_eq(mkc_test(GOLDEN), 0, "%s", out);
	cr_assert(strstr(out, "4 passed, 0 failed\n"), "%s", out);
	/* every initializer read at run time: from the ONNX file, or from
	 * external data at its recorded offset (small_mlp_ext) */
	cr_assert_eq(mkc_test("--embed-limit 0 " GOLDEN), 0, "%s", out);
	cr_assert(strstr(out, "4 passed, 0 failed\n"), "%s", out);
	cr_assert(strstr(out, "PASS tests/models/tiny_llama_decode_op18/test_data_set_0: 5 outputs"),
		  "%s", out);
}

/* Every intermediate in bytes of its own: the plan without memory reuse runs too. */
Test(golden, no_reuse, .timeout = 300)
{
	cr_assert_eq(mkc_test("--no-reuse " GOLDEN), 0, "%s", out);
	cr_assert(strstr(out, "4 passed, 0 failed\n"), "%s", out);
}

/*
 * test_identity's model with made-up data: infinities must be met exactly
 * (inf - inf is NaN, and NaN > tol is false: this once passed with error 0).
 */
static int
identity_case(const char *x, const char *y)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && cp /usr/share/libonnx-testdata/data/node/test_identity/model.onnx $d/ && "
		 "mkdir $d/test_data_set_0 && python3 -c \"import numpy as np, onnx.numpy_helper as h, sys\n"
		 "for k, (n, v) in enumerate([('x', %s), ('y', %s)]):\n"
		 "    a = np.array(v, np.float32).reshape(1, 1, 2, 2)\n"
		 "    f = sys.argv[1] + ('/input_0.pb', '/output_0.pb')[k]\n"
		 "    open(f, 'wb').write(h.from_array(a, n).SerializeToString())\" $d/test_data_set_0 && "
		 "%s test $d; rc=$?; rm -rf $d; exit $rc", x, y, mkc_bin());
	return mkc_shell(cmd, out, sizeof out);
}

Test(golden, infinities_compare_exactly, .timeout = 120)
{
	cr_assert_eq(identity_case("[np.inf, 1, 2, 3]", "[np.inf, 1, 2, 3]"), 0, "%s", out);
	cr_assert_eq(identity_case("[np.inf, 1, 2, 3]", "[np.inf, 100, 200, 300]"), 1, "%s", out);
	cr_assert(strstr(out, "relative error"), "%s", out);
	cr_assert_eq(identity_case("[np.inf, 1, 2, 3]", "[-np.inf, 1, 2, 3]"), 1, "%s", out);
	cr_assert(strstr(out, "'y'[0] is inf, the reference -inf"), "%s", out);
	cr_assert_eq(identity_case("[1, 1, 2, 3]", "[np.inf, 1, 2, 3]"), 1, "%s", out);
	cr_assert_eq(identity_case("[np.nan, 1, 2, 3]", "[1, 1, 2, 3]"), 1, "%s", out);
}

Test(golden, shuffled_queue_many_threads, .timeout = 300)
{
	cr_assert_eq(mkc_test("--shuffle 11 --threads 16 --steps 4 " GOLDEN), 0, "%s", out);
	cr_assert(strstr(out, "4 passed, 0 failed\n"), "%s", out);
}

Test(golden, thread_sanitizer, .timeout = 300)
{
	cr_assert_eq(mkc_test("--tsan --threads 8 --steps 2 tests/models/tiny_llama_decode_op18 "
			      "tests/models/tiny_llama_decode_op23"), 0, "%s", out);
	cr_assert_eq(mkc_test("--tsan --shuffle 3 --threads 8 --steps 2 "
			      "tests/models/tiny_llama_decode_op23"), 0, "%s", out);
}

/* The first attention task of the op23 plan (8 workers: a part, over some
 * of the cached positions), from the plan dump. */
static int
first_attention_task(void)
{
	int task = mkc_plan_task("tests/models/tiny_llama_decode_op23", "(AttnPart)",
				 out, sizeof out);
	cr_assert_geq(task, 0, "no attention part in the plan: %.300s", out);
	return task;
}

Test(golden, a_dropped_wait_is_caught, .timeout = 300)
{
	int t = first_attention_task();
	char args[256], want[128];
	snprintf(args, sizeof args, "--drop-wait %d --shuffle 5 --threads 8 "
		 "tests/models/tiny_llama_decode_op23", t);
	cr_assert_eq(mkc_test(args), 1, "%s", out);
	snprintf(want, sizeof want, "dropped the wait of task %d (node_scaled_dot_product_attention/part)",
		 t);
	cr_assert(strstr(out, want), "%s", out);
	cr_assert(strstr(out, "0 passed, 1 failed"), "%s", out);
	snprintf(args, sizeof args, "--drop-wait %d --tsan --threads 8 --steps 2 "
		 "tests/models/tiny_llama_decode_op23", t);
	cr_assert_eq(mkc_test(args), 1, "%s", out);
	cr_assert(strstr(out, "ThreadSanitizer") || strstr(out, "relative error"), "%s", out);
}

/* A model that does not compile leaves no scratch folder behind. */
Test(golden, a_failed_compile_leaves_no_scratch_folder)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && TMPDIR=$d %s test tests/models/hand; "
		 "n=$(ls -A $d | wc -l); rm -rf $d; echo \"left $n\"", mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_assert(strstr(out, "FAIL tests/models/hand:"), "%s", out);
	cr_assert(strstr(out, "left 0\n"), "%s", out);
}

Test(golden, bad_options_and_folders)
{
	cr_assert_eq(mkc_test("--steps 0 tests/models/hand/small_mlp"), 2, "%s", out);
	cr_assert_eq(mkc_test("--target hip --shuffle 3 tests/models/hand/small_mlp"), 2, "%s", out);
	cr_assert_eq(mkc_test("--target cuda --tsan tests/models/hand/small_mlp"), 2, "%s", out);
	cr_assert_eq(mkc_test("tests/models/hand"), 1, "%s", out);
	cr_assert(strstr(out, "FAIL tests/models/hand:"), "%s", out);
	cr_assert(strstr(out, "0 passed, 1 failed"), "%s", out);
}

/*
 * Elementwise bodies walk flat indices where every tile is a run of
 * consecutive elements and no operand broadcasts, and coordinates
 * elsewhere: both kinds match onnxruntime, alone and on a shuffled queue,
 * and each node of hand/elementwise_tiles gets the walk its tiles allow
 * (sub_st's tiles [S,1,64] are not runs; mul_sc broadcasts c). The walk is
 * the mkc_elementwise call's broadcast maps: NULL for a flat walk
 * (backends/c/elementwise.h), in_b for coordinates.
 */
Test(golden, elementwise_bodies_walk_flat_where_tiles_are_runs, .timeout = 120)
{
	const char *model = "tests/models/hand/elementwise_tiles";
	char args[512];
	snprintf(args, sizeof args, "%s", model);
	cr_assert_eq(mkc_test(args), 0, "%s", out);
	snprintf(args, sizeof args, "--shuffle 3 --threads 8 %s", model);
	cr_assert_eq(mkc_test(args), 0, "%s", out);
	char cmd[1024];
	/* one line a node: its name, then FLAT or COORDS */
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s %s -o $d/m.c && awk "
		 "'/^\\/\\* ONNX node/ { if (n) print n, w; n = $4; w = \"-\" } "
		 "/mkc_elementwise.*, in, 1, lo, hi/ { w = \"FLAT\" } "
		 "/mkc_elementwise.*, in, 0, lo, hi/ { w = \"COORDS\" } "
		 "END { print n, w }' $d/m.c; rc=$?; rm -rf $d; exit $rc", mkc_bin(), model);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	const char *want[] = {"'add_ab' FLAT", "'swiglu' FLAT", "'less_ab' FLAT", "'where_ab' FLAT",
			      "'add_uv' FLAT", "'sub_st' COORDS", "'mul_sc' COORDS"};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_expect(strstr(out, want[i]), "no %s in\n%s", want[i], out);
}

/*
 * examples/decode.c, built against the C output of each Llama export, must
 * produce the same greedy tokens as onnxruntime running the same file
 * (tools/ort_decode.py), and say so twice in a row.
 */
static void
decode_matches_onnxruntime(const char *model)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s %s -o $d/llama.c --workers 4 && "
		 "cc -std=c11 -O1 -Wall -Wextra -Werror -pthread $MKC_TEST_CFLAGS -I$d -o $d/decode examples/decode.c "
		 "$d/llama.c -lm && $d/decode %s 24 7 && $d/decode %s 24 7 && "
		 "python3 tools/ort_decode.py %s 24 7; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), model, model, model, model);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	/* three "tokens:" lines: mkc twice, then onnxruntime */
	char *a = strstr(out, "tokens:"), *b = a ? strstr(a + 1, "tokens:") : NULL;
	char *c = b ? strstr(b + 1, "tokens:") : NULL;
	cr_assert(a && b && c, "%s", out);
	size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n"), lc = strcspn(c, "\n");
	cr_assert(la == lb && !strncmp(a, b, la), "two runs differ: %s", out);
	cr_assert(la == lc && !strncmp(a, c, la), "mkc and onnxruntime differ: %s", out);
}

Test(golden, decode_example_matches_onnxruntime_op18, .timeout = 300)
{
	decode_matches_onnxruntime("tests/models/tiny_llama_decode_op18/model.onnx");
}

Test(golden, decode_example_matches_onnxruntime_op23, .timeout = 300)
{
	decode_matches_onnxruntime("tests/models/tiny_llama_decode_op23/model.onnx");
}

/*
 * bf16 weights: at 1e-5 of onnxruntime over the same weights rounded to bf16
 * (tests/models/gen_bf16_refs.py), so that a conversion that truncates or
 * keeps float16 fails; within 1e-2 of the float32 reference, and visibly
 * not float32.
 */
Test(golden, bf16_weights, .timeout = 300)
{
	cr_assert_eq(mkc_test("--weights bf16 tests/models/bf16_ref/tiny_llama_decode_op18 "
			      "tests/models/bf16_ref/tiny_llama_decode_op23"), 0, "%s", out);
	cr_assert(strstr(out, "2 passed, 0 failed"), "%s", out);
	cr_assert_eq(mkc_test("--weights bf16 --tolerance 1e-2 tests/models/tiny_llama_decode_op18 "
			      "tests/models/tiny_llama_decode_op23"), 0, "%s", out);
	cr_assert(strstr(out, "2 passed, 0 failed"), "%s", out);
	cr_assert_eq(mkc_test("--weights bf16 tests/models/tiny_llama_decode_op23"), 1,
		     "bf16 weights cannot meet float32's 1e-5: %s", out);
	cr_assert_eq(mkc_test("--weights fp8 tests/models/tiny_llama_decode_op23"), 2, "%s", out);
}

/* A stalled event must end the step with an error naming a waiting task, not hang. */
Test(golden, watchdog_names_the_stuck_task, .timeout = 120)
{
	cr_assert_eq(mkc_test("--stall-event 10 --timeout 1 --steps 1 "
			      "tests/models/tiny_llama_decode_op23"), 1, "%s", out);
	cr_assert(strstr(out, "raised the threshold of event 10"), "%s", out);
	cr_assert(strstr(out, "watchdog: task "), "%s", out);
	cr_assert(strstr(out, "waited 1.0 s on event"), "%s", out);
}

/* The folder's model may be ONNX-JSON, or named by its path. */
Test(golden, json_model_through_mkc_test, .timeout = 300)
{
	cr_assert_eq(mkc_test("tests/models/tiny_llama_decode_op18/model.json"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}

/* Model names that C would misread unless escaped: quotes, backslashes, '%', comment ends. */
Test(golden, hostile_names_are_escaped, .timeout = 120)
{
	cr_assert_eq(mkc_test("--embed-limit 0 tests/models/hand/escape_names"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}

/* One Qwen3 model through all three frontends: the same outputs, the same reference. */
Test(golden, three_frontends_agree_on_qwen3, .timeout = 300)
{
	cr_assert_eq(mkc_test("tests/models/hf/qwen3_tiny tests/models/qwen3_tiny_onnx/model.onnx "
			      "tests/models/qwen3_tiny_onnx/model.json"), 0, "%s", out);
	cr_assert(strstr(out, "3 passed, 0 failed"), "%s", out);
}

/* onnxruntime's contrib ops (onnxruntime-genai exports) against onnxruntime's own outputs. */
Test(golden, contrib_ops_match_onnxruntime, .timeout = 300)
{
	cr_assert_eq(mkc_test("--shuffle 2 --threads 4 tests/models/hand/contrib_simplified_ln "
			      "tests/models/hand/contrib_skip_simplified_ln tests/models/hand/contrib_rotary "
			      "tests/models/hand/contrib_rotary_interleaved tests/models/hand/contrib_gqa "
			      "tests/models/hand/contrib_gqa_two_tokens "
			      "tests/models/hand/contrib_gqa_interleaved"), 0, "%s", out);
	cr_assert(strstr(out, "7 passed, 0 failed"), "%s", out);
}

/*
 * Attention with is_causal against onnxruntime: without a past (the
 * diagonal at the top left, also for fewer queries than keys) and over a
 * past (query s sees the past and the chunk up to s: passes/state.c
 * splits the past off and says so with is_causal = 2), with the past as
 * inputs too (--kv-io keeps the node whole). Refused before session 15.
 * And an additive mask built by Trilu, as transformers' _update_causal_mask
 * builds it (a fill of float32's lowest kept above diagonal past_len + 1, k
 * from the past's shape), over a past, and a Trilu alone over symbolic axes
 * with k a run-time input: passes/decompose.c takes Trilu apart into a
 * Where of position comparisons (refused before session 35).
 */
Test(golden, causal_attention_matches_onnxruntime, .timeout = 120)
{
	const char *m = "tests/models/hand/attention_causal tests/models/hand/attention_causal_wide "
			"tests/models/hand/attention_causal_past tests/models/hand/attention_trilu_mask "
			"tests/models/hand/trilu_symbolic";
	char args[512];
	snprintf(args, sizeof args, "--shuffle 2 --threads 4 %s", m);
	cr_assert_eq(mkc_test(args), 0, "%s", out);
	cr_assert(strstr(out, "5 passed, 0 failed"), "%s", out);
	snprintf(args, sizeof args, "--kv-io %s", m);
	cr_assert_eq(mkc_test(args), 0, "%s", out);
	cr_assert(strstr(out, "5 passed, 0 failed"), "%s", out);
}

/*
 * MatMul of a vector against onnxruntime: a vector by a weight, rows of a
 * symbolic batch by a vector, and two vectors (a scalar output); refused
 * on every target before session 36 ("MatMul of a vector"), now a product
 * of a row or a column with the added axis squeezed (passes/decompose.c).
 */
Test(golden, matmul_of_a_vector_matches_onnxruntime, .timeout = 60)
{
	cr_assert_eq(mkc_test("-v tests/models/hand/matmul_vector"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	cr_assert(strstr(out, "decompose: 3 MatMul of a vector as a product of a row or a column"),
		  "%s", out);
}

/*
 * More queues than requested threads: every static queue still gets a
 * thread of its own (one thread running two queues in turn can wait in the
 * first on a task of the second: this failed before).
 */
Test(golden, more_workers_than_threads, .timeout = 120)
{
	cr_assert_eq(mkc_test("--workers 64 --threads 2 --timeout 5 --steps 2 "
			      "tests/models/tiny_llama_decode_op23"), 0, "%s", out);
}

/*
 * bfloat16 initializers widened by Cast (export_hf.py --bf16-initializers):
 * read as bf16 weights, loaded from the file as they are, the Cast gone;
 * the result matches onnxruntime.
 */
Test(golden, bf16_initializers_without_casts, .timeout = 120)
{
	cr_assert_eq(mkc_test("-v --embed-limit 0 tests/models/hand/bf16_initializers"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	cr_assert(strstr(out, "weights: 1 bfloat16 initializers read as bf16 without a Cast"), "%s",
		  out);
}

/*
 * The Hugging Face folders' own test data comes from tools/hf_reference.py,
 * the project's numpy re-implementation; these references come from
 * transformers itself (tests/models/gen_transformers_refs.py), so that a
 * misreading shared by both (qwen2's biases, qwen3's q/k norms, llama3
 * rope scaling) cannot pass unseen.
 */
Test(golden, hf_folders_match_transformers, .timeout = 300)
{
	cr_assert_eq(mkc_test("tests/models/hf_transformers/qwen2_tiny "
			      "tests/models/hf_transformers/qwen3_tiny "
			      "tests/models/hf_transformers/llama_tiny_llama3_rope"), 0, "%s", out);
	cr_assert(strstr(out, "3 passed, 0 failed"), "%s", out);
}
