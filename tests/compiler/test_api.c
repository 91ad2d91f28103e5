/*
 * test_api.c - the emitted API against a hostile caller (issue 33), on the
 * C target: every index the caller gives is checked where it is used
 * (positions, seqlens_k and total_sequence_length, Gather's indices, the
 * tokens given to generate), and a step that meets one out of range
 * returns -1 with a sentence naming the node, never reads past a table or
 * answers wrongly with status 0.
 *
 * Each test compiles a model with --name model, builds a small program
 * against it under AddressSanitizer and UBSan (or ThreadSanitizer), runs
 * it, and reads what it printed: one "what: rc sentence" line a call.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

static char out[1 << 16];

#define ASAN "-fsanitize=address,undefined -fno-sanitize-recover=all"

/*
 * Compiles the model in folder dir (its model.onnx; mkc flags args), builds
 * prog against it with cflags, runs it; its exit status, everything printed
 * in out. MODEL is the ONNX file's path in prog.
 */
static int
run_prog(const char *dir, const char *args, const char *cflags, const char *prog)
{
	static char cmd[1 << 15];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s %s -o $d/model.c --name model %s && "
		 "cat > $d/t.c <<'EOF'\n%sEOF\n"
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror %s -DMODEL=\\\"%s/model.onnx\\\" -pthread "
		 "-I$d -o $d/t $d/t.c $d/model.c -lm && timeout 120 $d/t; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), dir, args, prog, cflags, dir);
	return mkc_shell(cmd, out, sizeof out);
}

/* out holds needle, and no sanitizer report */
static void
says(const char *needle)
{
	cr_expect(strstr(out, needle), "no '%s' in:\n%s", needle, out);
}

static void
clean(void)
{
	cr_expect_null(strstr(out, "Sanitizer"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
}

/*
 * com.microsoft RotaryEmbedding (cos/sin caches of 16 rows): a position
 * past them, or negative, fails the step (it read past the table before:
 * AddressSanitizer's heap-buffer-overflow); positions in range still run.
 */
Test(api, rotary_positions_outside_the_caches_fail_the_step, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; static float q[96], y[96]; int64_t pos[3] = {5, 6, 16};\n"
		"  const void *in[2] = {q, pos}; void *o[1] = {y};\n"
		"  if (model_create(&m, NULL) || model_load_weights(m, MODEL)) {\n"
		"    printf(\"setup: %s\\n\", model_last_error(m)); return 9;\n  }\n"
		"  printf(\"past: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  pos[0] = -1, pos[2] = 15;\n"
		"  printf(\"negative: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  pos[0] = 13, pos[1] = 14;\n"
		"  printf(\"last rows: %d\\n\", model_step(m, in, o, NULL));\n"
		"  model_destroy(m); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/hand/contrib_rotary", "", ASAN, prog), 0, "%s", out);
	clean();
	says("past: -1 node 'rope' (RotaryEmbedding): position 16 (for element 2 of the positions) "
	     "is outside 0..15, the rows of the cos/sin caches\n");
	says("negative: -1 node 'rope' (RotaryEmbedding): position -1 (for element 0 of the "
	     "positions) is outside 0..15");
	says("last rows: 0\n");
}

/*
 * GroupQueryAttention over a past of 4 with 2 new tokens: seqlens_k must
 * be 5 and total_sequence_length 6. A right-padded past (seqlens_k 4: the
 * past holds 3 positions in use, which onnxruntime reads so) answered with
 * status 0 from all 4 before; now it and the others are refused.
 */
Test(api, gqa_lengths_that_do_not_fit_the_past_fail_the_step, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; static float q[128], k[64], v[64], pk[128], pv[128], y[128], yk[192], yv[192];\n"
		"  int32_t seq = 5, total = 6;\n"
		"  const void *in[7] = {q, k, v, pk, pv, &seq, &total}; void *o[3] = {y, yk, yv};\n"
		"  if (model_create(&m, NULL) || model_load_weights(m, MODEL)) {\n"
		"    printf(\"setup: %s\\n\", model_last_error(m)); return 9;\n  }\n"
		"  printf(\"fits: %d\\n\", model_step(m, in, o, NULL));\n"
		"  seq = 4;\n"
		"  printf(\"padded: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  seq = 6;\n"
		"  printf(\"more: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  seq = 5, total = 7;\n"
		"  printf(\"total: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  model_destroy(m); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/hand/contrib_gqa_two_tokens", "", ASAN, prog), 0, "%s",
		     out);
	clean();
	says("fits: 0\n");
	says("padded: -1 node 'gqa' (GroupQueryAttention): seqlens_k[0] is 4, not 5 (the past it "
	     "is given and the new positions, less one: mkc reads a past that holds exactly the "
	     "positions in use, not a padded or shared one)\n");
	says("more: -1 node 'gqa' (GroupQueryAttention): seqlens_k[0] is 6, not 5");
	says("total: -1 node 'gqa' (GroupQueryAttention): total_sequence_length is 7, not 6");
}

/*
 * The symbolic-past GroupQueryAttention (cos/sin caches of 64 rows): a past
 * of 70 puts the new token at position 70. The C target said so before
 * too; the check is now the same one, before anything is written.
 */
Test(api, gqa_new_positions_past_the_caches_fail_the_step, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; static float q[64], k[32], v[32], pk[2 * 70 * 16], pv[2 * 70 * 16];\n"
		"  static float y[64], yk[2 * 71 * 16], yv[2 * 71 * 16];\n"
		"  int32_t seq = 70, total = 71; int64_t past = 70;\n"
		"  const void *in[7] = {q, k, v, pk, pv, &seq, &total}; void *o[3] = {y, yk, yv};\n"
		"  if (model_create(&m, NULL) || model_load_weights(m, MODEL)) {\n"
		"    printf(\"setup: %s\\n\", model_last_error(m)); return 9;\n  }\n"
		"  printf(\"past: %d %s\\n\", model_step(m, in, o, &past), model_last_error(m));\n"
		"  past = 63, seq = 63, total = 64;\n"
		"  printf(\"last row: %d\\n\", model_step(m, in, o, &past));\n"
		"  model_destroy(m); return 0;\n}\n";
	/* --kv-io: the node whole, as this test means (kept in place, the caches are 64 positions) */
	cr_assert_eq(run_prog("tests/models/hand/contrib_gqa", "--kv-io", ASAN, prog), 0, "%s", out);
	clean();
	says("past: -1 node 'gqa' (GroupQueryAttention): position 70 (of a new token of batch "
	     "entry 0: seqlens_k + 1 - the new positions + its place) is outside 0..63, the rows "
	     "of the cos/sin caches\n");
	says("last row: 0\n");
}

/* The embedding's Gather: a token id past the table fails the step, naming the node. */
static const char gather_prog[] =
	"#include <stdio.h>\n#include \"model.h\"\n"
	"int main(void) {\n"
	"  model *m; int64_t ids = 1024, pos = 0; static float logits[1024];\n"
	"  const void *in[2] = {&ids, &pos}; void *o[1] = {logits};\n"
	"  model_options opt = {THREADS, SEED, 0};\n"
	"  if (model_create(&m, &opt) || model_load_weights(m, MODEL)) {\n"
		"    printf(\"setup: %s\\n\", model_last_error(m)); return 9;\n  }\n"
	"  printf(\"past: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
	"  ids = -1025;\n"
	"  printf(\"before: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
	"  ids = -1;   /* ONNX's Gather counts it from the end */\n"
	"  int rc = model_step(m, in, o, NULL);\n"
	"  printf(\"last: %d cache %lld\\n\", rc, (long long)model_cache_len(m));\n"
	"  model_destroy(m); return 0;\n}\n";

static void
gather_says(void)
{
	says("past: -1 node 'node_embedding' (Gather): index 1024 (element 0 of the indices) is "
	     "outside -1024..1023\n");
	says("before: -1 node 'node_embedding' (Gather): index -1025 (element 0 of the indices) is "
	     "outside -1024..1023\n");
	says("last: 0 cache 1\n");
}

Test(api, gather_indices_out_of_range_fail_the_step, .timeout = 180)
{
	cr_assert_eq(run_prog("tests/models/tiny_llama_decode_op18", "--workers 2",
			      ASAN " -DTHREADS=0 -DSEED=0", gather_prog), 0, "%s", out);
	clean();
	gather_says();
}

/*
 * The same under ThreadSanitizer, on the shuffled queue with 4 threads:
 * while the Gather's tile fails, the other threads run what they can and
 * stop; the failure is recorded once (the first kept, atomically), and
 * the next step starts afresh.
 */
Test(api, gather_failure_under_tsan_on_the_shuffled_queue, .timeout = 300)
{
	cr_assert_eq(run_prog("tests/models/tiny_llama_decode_op18", "--workers 4",
			      "-fsanitize=thread -DTHREADS=4 -DSEED=3", gather_prog), 0, "%s", out);
	cr_expect_null(strstr(out, "ThreadSanitizer"), "%s", out);
	gather_says();
}

/*
 * generate's prompt is token ids the model's own argmax could give: -1
 * wrapped to the last vocabulary entry before (status 0), 1024 failed in a
 * step; both are refused before any step, the cache untouched.
 */
Test(api, generate_refuses_tokens_outside_the_vocabulary, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; int64_t prompt[3] = {7, -1, 9}, toks[2];\n"
		"  if (model_create(&m, NULL) || model_load_weights(m, MODEL)) {\n"
		"    printf(\"setup: %s\\n\", model_last_error(m)); return 9;\n  }\n"
		"  printf(\"minus one: %d %s\\n\", model_generate(m, prompt, 3, 2, toks), model_last_error(m));\n"
		"  prompt[1] = 1024;\n"
		"  printf(\"vocab: %d %s\\n\", model_generate(m, prompt, 3, 2, toks), model_last_error(m));\n"
		"  printf(\"cache: %lld\\n\", (long long)model_cache_len(m));\n"
		"  prompt[1] = 1023;\n"
		"  int rc = model_generate(m, prompt, 3, 2, toks);\n"
		"  printf(\"last: %d cache %lld\\n\", rc, (long long)model_cache_len(m));\n"
		"  model_destroy(m); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/tiny_llama_decode_op18", "--workers 2", ASAN, prog), 0,
		     "%s", out);
	clean();
	says("minus one: -1 generate: token -1 (element 1 of the prompt) is outside 0..1023, the "
	     "vocabulary\n");
	says("vocab: -1 generate: token 1024 (element 1 of the prompt) is outside 0..1023");
	says("cache: 0\n");
	says("last: 0 cache 4\n");
}

/*
 * A caller's output that shares memory with an input or another output:
 * GroupQueryAttention's past and present in one buffer, as
 * onnxruntime-genai binds them, made the tile copy the past into the
 * present over positions other lanes had still to read (a race on global
 * memory on a GPU, a wrong answer with status 0 everywhere at 7959f0e).
 * Refused before the step runs, naming both; separate buffers still run.
 */
Test(api, outputs_sharing_memory_with_inputs_or_outputs_are_refused, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; static float q[128], k[64], v[64], pv[128], y[128], kv[2 * 192];\n"
		"  int32_t seq = 5, total = 6; float *yk = kv, *yv = kv + 192;\n"
		"  const void *in[7] = {q, k, v, yk, pv, &seq, &total}; void *o[3] = {y, yk, yv};\n"
		"  if (model_create(&m, NULL) || model_load_weights(m, MODEL)) {\n"
		"    printf(\"setup: %s\\n\", model_last_error(m)); return 9;\n  }\n"
		"  printf(\"shared past: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  static float pk[128]; in[3] = pk; o[2] = yk + 100;\n"
		"  printf(\"two outputs: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  o[2] = yk + 192;   /* just after: no byte shared */\n"
		"  printf(\"apart: %d\\n\", model_step(m, in, o, NULL));\n"
		"  model_destroy(m); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/hand/contrib_gqa_two_tokens", "", ASAN, prog), 0, "%s",
		     out);
	clean();
	says("shared past: -1 output 1 ('present_key') shares memory with input 3 ('past_key'): a "
	     "step reads its inputs while it writes its outputs, so each output needs a buffer of "
	     "its own\n");
	says("two outputs: -1 output 2 ('present_value') shares memory with output 1 "
	     "('present_key')");
	says("apart: 0\n");
}

/*
 * A model's load state: a step or generate before the weights are loaded,
 * or after a load that failed, ran on zeroed (or half-read) weights with
 * status 0 at 7959f0e; bind with a NULL pointer was accepted and the next
 * step read through it. Each is refused now with a sentence; a load that
 * succeeds, or a bind of the missing weight, makes the model ready.
 */
Test(api, a_model_steps_only_with_every_weight_loaded_or_bound, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include <stdlib.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; int64_t ids = 7, pos = 0, tok[2]; static float logits[1024];\n"
		"  const void *in[2] = {&ids, &pos}; void *o[1] = {logits};\n"
		"  if (model_create(&m, NULL)) return 9;\n"
		"  printf(\"unloaded: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  printf(\"unloaded generate: %d %s\\n\", model_generate(m, &ids, 1, 2, tok),\n"
		"         model_last_error(m));\n"
		"  printf(\"null bind: %d %s\\n\", model_bind(m, \"m.lm_head.weight\", NULL),\n"
		"         model_last_error(m));\n"
		"  printf(\"null name: %d %s\\n\", model_bind(m, NULL, logits), model_last_error(m));\n"
		"  printf(\"null path: %d %s\\n\", model_load_weights(m, NULL), model_last_error(m));\n"
		"  printf(\"load: %d\\n\", model_load_weights(m, MODEL));\n"
		"  printf(\"loaded: %d\\n\", model_step(m, in, o, NULL));\n"
		"  printf(\"failed load: %d\\n\", model_load_weights(m, \"/nonexistent/model.onnx\"));\n"
		"  printf(\"after failure: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  printf(\"after failure generate: %d\\n\", model_generate(m, &ids, 1, 2, tok));\n"
		"  printf(\"cache: %lld\\n\", (long long)model_cache_len(m));\n"
		"  printf(\"reload: %d\\n\", model_load_weights(m, MODEL));\n"
		"  printf(\"reloaded: %d\\n\", model_step(m, in, o, NULL));\n"
		"  model_destroy(m);\n"
		"  /* a weight bound after a failed load is ready; the rest still are not */\n"
		"  if (model_create(&m, NULL)) return 9;\n"
		"  float *w = aligned_alloc(16, 1024 * 256 * sizeof *w);\n"
		"  printf(\"bound: %d\\n\", w ? model_bind(m, \"m.lm_head.weight\", w) : -9);\n"
		"  printf(\"bound only: %d %s\\n\", model_step(m, in, o, NULL), model_last_error(m));\n"
		"  model_destroy(m); free(w); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/tiny_llama_decode_op18", "--workers 2", ASAN, prog), 0,
		     "%s", out);
	clean();
	says("unloaded: -1 weight 'm.lm_head.weight' holds no values: load the weights with "
	     "load_weights (a call that failed leaves them unloaded) or bind it, before a step\n");
	says("unloaded generate: -1 weight 'm.lm_head.weight' holds no values");
	says("null bind: -1 weight 'm.lm_head.weight': cannot bind a NULL pointer\n");
	says("null name: -1 bind needs a weight's name, not a NULL pointer\n");
	says("null path: -1 load_weights needs the model's path, not a NULL pointer\n");
	says("load: 0\nloaded: 0\nfailed load: -1\n");
	says("after failure: -1 weight 'm.lm_head.weight' holds no values");
	says("after failure generate: -1\ncache: 1\nreload: 0\nreloaded: 0\n");
	says("bound: 0\nbound only: -1 weight '");
	cr_expect_null(strstr(out, "bound only: -1 weight 'm.lm_head.weight'"), "%s", out);
}

/*
 * Options out of range are refused at create: 2000000 threads overflowed
 * the stack at the first step (thread arrays as VLAs) at 7959f0e, and a
 * timeout of 1e300 seconds (or NaN) made a GPU's watchdog limit a
 * conversion out of range. The thread arrays are the model's now; the
 * shuffled queue on 64 threads runs.
 */
Test(api, absurd_options_are_refused_at_create, .timeout = 180)
{
	static const char prog[] =
		"#include <math.h>\n#include <stdio.h>\n#include \"model.h\"\n"
		"static void try(const char *what, model_options o) {\n"
		"  model *m; int rc = model_create(&m, &o);\n"
		"  printf(\"%s: %d %s\\n\", what, rc, model_last_error(m));\n"
		"  if (!rc) {\n"
		"    static float q[96], y[96]; int64_t pos[3] = {0, 1, 2};\n"
		"    const void *in[2] = {q, pos}; void *out[1] = {y};\n"
		"    printf(\"%s step: %d\\n\", what, model_step(m, in, out, NULL));\n"
		"  }\n"
		"  model_destroy(m);\n"
		"}\n"
		"int main(void) {\n"
		"  try(\"many\", (model_options){2000000, 1, 0});\n"
		"  try(\"negative\", (model_options){-1, 1, 0});\n"
		"  try(\"forever\", (model_options){0, 0, 1e300});\n"
		"  try(\"nan\", (model_options){0, 0, NAN});\n"
		"  try(\"sixty-four\", (model_options){64, 5, 2});\n"
		"  return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/hand/contrib_rotary", "", ASAN, prog), 0, "%s", out);
	clean();
	says("many: -1 options.nthreads is 2000000; it takes 0 (a thread a worker) to 4096\n");
	says("negative: -1 options.nthreads is -1; it takes 0 (a thread a worker) to 4096\n");
	says("forever: -1 options.timeout_s is 1e+300; it takes 0 (10 s) to 86400 seconds\n");
	says("nan: -1 options.timeout_s is nan; it takes 0 (10 s) to 86400 seconds\n");
	says("sixty-four: 0 \nsixty-four step: 0\n");
}

/* profile_write(m, NULL) said "(null): cannot write: Bad address" at 7959f0e. */
Test(api, profile_write_refuses_a_null_path, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; static float q[96], y[96]; int64_t pos[3] = {0, 1, 2};\n"
		"  const void *in[2] = {q, pos}; void *o[1] = {y};\n"
		"  if (model_create(&m, NULL) || model_step(m, in, o, NULL)) return 9;\n"
		"  printf(\"null: %d %s\\n\", model_profile_write(m, NULL), model_last_error(m));\n"
		"  printf(\"file: %d\\n\", model_profile_write(m, \"/dev/null\"));\n"
		"  model_destroy(m); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/hand/contrib_rotary", "--profile", ASAN, prog), 0, "%s",
		     out);
	clean();
	says("null: -1 profile_write needs a file's path, not a NULL pointer\n");
	says("file: 0\n");
}

/* set_stream: the C target takes NULL (its calls go on) and refuses a stream. */
Test(api, the_c_target_takes_no_stream, .timeout = 180)
{
	static const char prog[] =
		"#include <stdio.h>\n#include \"model.h\"\n"
		"int main(void) {\n"
		"  model *m; static float q[96], y[96]; int64_t pos[3] = {0, 1, 2};\n"
		"  const void *in[2] = {q, pos}; void *o[1] = {y}; int s;\n"
		"  if (model_create(&m, NULL)) return 9;\n"
		"  printf(\"null: %d\\n\", model_set_stream(m, NULL));\n"
		"  printf(\"step: %d\\n\", model_step(m, in, o, NULL));\n"
		"  printf(\"stream: %d %s\\n\", model_set_stream(m, &s), model_last_error(m));\n"
		"  printf(\"step: %d\\n\", model_step(m, in, o, NULL));\n"
		"  model_destroy(m); return 0;\n}\n";
	cr_assert_eq(run_prog("tests/models/hand/contrib_rotary", "", ASAN, prog), 0, "%s", out);
	clean();
	says("null: 0\nstep: 0\n");
	says("stream: -1 set_stream: the C target runs on the caller's thread and takes no stream "
	     "(only NULL)\nstep: 0\n");
}
