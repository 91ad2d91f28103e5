/*
 * test_generate.c - the KV cache kept as state and in-call generation, on
 * the C target: examples/generate.c against the C output of Llama (opset 18
 * and 23 exports) and Qwen3 (a hand-made opset-23 graph and an opset-18
 * export) must give the same greedy tokens as onnxruntime running the same
 * file with explicit past/present tensors, from contexts of 1, 100 and 1000
 * tokens up to one position short of the compiled cache; and running past
 * the cache must be an error that says so, not memory corruption.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

static char out[1 << 16];

/* The "tokens:" line of the first and second half of out must agree. */
static void
same_tokens(const char *what)
{
	char *a = strstr(out, "tokens:"), *b = a ? strstr(a + 1, "tokens:") : NULL;
	cr_assert(a && b, "%s: %s", what, out);
	size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
	cr_assert(la == lb && !strncmp(a, b, la), "%s: mkc and onnxruntime differ: %s", what, out);
}

/*
 * Compiles model with a cache of max_seq positions, generates n_new
 * tokens after prompt with examples/generate.c (twice: the second run must
 * repeat the first after a cache reset), and compares with onnxruntime.
 */
static void
generate_matches(const char *model, const char *prompt, int n_new, int max_seq)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s %s -o $d/llama.c --workers 2 --max-seq %d && "
		 "cc -std=c11 -O2 -Wall -Wextra -Werror -pthread $MKC_TEST_CFLAGS -I$d -o $d/gen examples/generate.c "
		 "$d/llama.c -lm && $d/gen %s %d %s 2 && "
		 "python3 tools/ort_decode.py %s %d --prompt %s; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), model, max_seq, model, n_new, prompt, model, n_new, prompt);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	same_tokens(model);
}

Test(generate, llama_op18_context_1, .timeout = 300)
{
	generate_matches("tests/models/tiny_llama_decode_op18/model.onnx", "7", 32, 4096);
}

Test(generate, llama_op23_context_100, .timeout = 300)
{
	generate_matches("tests/models/tiny_llama_decode_op23/model.onnx", "seq:100", 16, 4096);
}

Test(generate, qwen3_op23_context_1000, .timeout = 300)
{
	generate_matches("tests/models/qwen3_tiny_onnx/model.onnx", "seq:1000", 8, 1024);
}

/* 1090 prompt and 10 new tokens: 1099 steps fill a cache of 1100 but one. */
Test(generate, qwen3_op18_export_near_the_maximum, .timeout = 300)
{
	generate_matches("tests/models/export/qwen3_tiny_op18/model.onnx", "seq:1090", 10, 1100);
	cr_assert(strstr(out, "cache now 1099 of 1100"), "%s", out);
}

/* Asking for more positions than the cache holds is refused before any step. */
Test(generate, past_the_cache_is_an_error, .timeout = 120)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "(d=$(mktemp -d) && %s tests/models/tiny_llama_decode_op23 -o $d/llama.c --max-seq 16 && "
		 "cc -std=c11 -O1 -pthread $MKC_TEST_CFLAGS -I$d -o $d/gen examples/generate.c $d/llama.c -lm && "
		 "cc -std=c11 -O1 -pthread $MKC_TEST_CFLAGS -I$d -o $d/dec examples/decode.c $d/llama.c -lm && "
		 "$d/gen tests/models/tiny_llama_decode_op23/model.onnx 10 seq:10; "
		 "$d/dec tests/models/tiny_llama_decode_op23/model.onnx 17 7; rm -rf $d)",
		 mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_assert(strstr(out, "generate: the KV cache holds 16 positions; 0 are in use, and 10 prompt "
			      "and 10 new tokens need 19 more"), "%s", out);
	/* 16 steps fill it; the 17th is refused with the count */
	cr_assert(strstr(out, "decode: step: the KV cache is full: 16 of 16 positions in use"),
		  "%s", out);
}

/* A cache must hold at least the new position. */
Test(generate, max_seq_too_small)
{
	mkc_result *r = mkc_run("tests/models/tiny_llama_decode_op23", "--max-seq", "0", NULL);
	cr_assert_eq(r->status, 2, "%s", r->err);
	cr_assert(strstr(r->err, "--max-seq needs a position count of at least 1"), "%s", r->err);
}

/*
 * One position holds a first step (past_len 0, one new position): --max-seq
 * 1 compiles, and its one step gives onnxruntime's token; a second is
 * refused. (7959f0e refused the flag: at least 2.)
 */
Test(generate, max_seq_1_holds_a_first_step, .timeout = 120)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "(d=$(mktemp -d) && m=tests/models/tiny_llama_decode_op23/model.onnx && "
		 "%s $m -o $d/llama.c --max-seq 1 --workers 2 && "
		 "cc -std=c11 -O1 -Wall -Wextra -Werror -pthread $MKC_TEST_CFLAGS -I$d -o $d/gen "
		 "examples/generate.c $d/llama.c -lm && $d/gen $m 1 7 && (! $d/gen $m 2 7) && "
		 "python3 tools/ort_decode.py $m 1 --prompt 7; rc=$?; rm -rf $d; exit $rc)", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "cache now 1 of 1"), "%s", out);
	cr_assert(strstr(out, "the KV cache holds 1 positions; 0 are in use, and 1 prompt and 2 new "
			      "tokens need 2 more"), "%s", out);
	same_tokens("--max-seq 1");
}

/* --kv-io keeps the export's interface: past in, present out. */
Test(generate, kv_io_keeps_past_and_present, .timeout = 300)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s test --kv-io tests/models/tiny_llama_decode_op23 "
		 "tests/models/tiny_llama_hf", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "2 passed, 0 failed"), "%s", out);
	cr_assert_null(strstr(out, "KV caches in place"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s test tests/models/tiny_llama_decode_op23", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "(KV caches in place)"), "%s", out);
}

/* The emitted header says which caches there are. */
Test(generate, header_lists_the_caches, .timeout = 120)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s tests/models/tiny_llama_decode_op18 -o $d/llama.c && "
		 "grep -c 'present.0.key\\|past_key_values.0.key' $d/llama.c && "
		 "grep -q 'llama_cache_load' $d/llama.h; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

/*
 * --profile: `mkc test --profile` and a generate call of 7 steps with a
 * timeline of 3 write traces that tools/profile_report.py finds sound
 * (every task once per step, a wait slice before each, no overlap on a
 * worker, all inside the step), the generate one holding the last 3 steps,
 * gzipped too; the tokens are those of onnxruntime still; and the report,
 * its spans of nodes and its picture come out of the trace.
 */
Test(profile, traces_are_sound, .timeout = 300)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && m=tests/models/tiny_llama_decode_op18/model.onnx && "
		 "n=$(%s tests/models/tiny_llama_decode_op23 --workers 8 2>&1 | "
		 "sed -n 's/.*, \\([0-9]*\\) tasks.*/\\1/p') && "
		 "%s test --steps 2 --profile $d/step.json tests/models/tiny_llama_decode_op23 && "
		 "python3 tools/profile_report.py --check --steps 1 --tasks $n $d/step.json && "
		 "%s $m -o $d/llama.c --workers 3 --profile-steps 3 && "
		 "cc -std=c11 -O2 -Wall -Wextra -Werror -pthread -I$d -o $d/gen examples/generate.c "
		 "$d/llama.c -lm && $d/gen $m 7 7 1 $d/gen.json && "
		 "python3 tools/profile_report.py --check --steps 3 $d/gen.json && "
		 "python3 -c \"import json; d = json.load(open('$d/gen.json'))['otherData']; "
		 "assert (d['first_step'], d['steps_in_call']) == (4, 7), d\" && "
		 "gzip -k $d/gen.json && python3 tools/profile_report.py --check --steps 3 $d/gen.json.gz && "
		 "python3 tools/profile_report.py $d/gen.json --png $d/gen.png --nodes node_linear && "
		 "test -s $d/gen.png && "
		 "python3 tools/ort_decode.py $m 7 --prompt 7; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), mkc_bin(), mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "step.json: sound: 1 steps x "), "%s", out);
	cr_assert(strstr(out, "gen.json: sound: 3 steps x "), "%s", out);
	cr_assert(strstr(out, "critical path: "), "%s", out);
	cr_assert(strstr(out, "gen.json.gz: sound: 3 steps x "), "%s", out);
	cr_assert(strstr(out, "nodes whose name holds 'node_linear'") && strstr(out, "\nnode_linear "),
		  "%s", out);
	same_tokens("generate with --profile");
}

/*
 * --profile on a model without a symbolic dimension: the timeline's copy of
 * the symbols was an empty array gcc -O1 -Werror took for uninitialised, so
 * the emitted file did not build for any static-shape model.
 */
Test(profile, static_shapes_build_and_trace, .timeout = 120)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s test --profile $d/t.json tests/models/hand/small_mlp && "
		 "python3 tools/profile_report.py --check --steps 1 $d/t.json; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	cr_assert(strstr(out, "t.json: sound: 1 steps x "), "%s", out);
}

/* A file compiled without --profile says so instead of writing a trace. */
Test(profile, absent_without_the_flag, .timeout = 120)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && m=tests/models/tiny_llama_decode_op18/model.onnx && "
		 "%s $m -o $d/llama.c --workers 2 && ! grep -q 'MKC_PROFILE 1' $d/llama.c && "
		 "cc -std=c11 -O1 -pthread -I$d -o $d/gen examples/generate.c $d/llama.c -lm && "
		 "$d/gen $m 2 7 1 $d/t.json 2>&1; rc=$?; test ! -e $d/t.json || rc=9; rm -rf $d; exit $rc",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "generate: this file was compiled without --profile"), "%s", out);
}

/*
 * prog (C, including "llama.h", MODEL the model's path) built against the
 * op18 Llama's C output under the address and undefined-behaviour
 * sanitizers and run; its output in out, and it must exit 0.
 */
static void
run_on_op18(const char *prog)
{
	static char cmd[1 << 14];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && m=tests/models/tiny_llama_decode_op18/model.onnx && "
		 "%s $m -o $d/llama.c --workers 2 && cat > $d/t.c <<'EOF'\n%sEOF\n"
		 "cc -std=c11 -O1 -Wall -Wextra -Werror -fsanitize=address,undefined -DMODEL=\\\"$m\\\" "
		 "-pthread -I$d -o $d/t $d/t.c $d/llama.c -lm && $d/t; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), prog);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

/*
 * The emitted API checks its arguments (issue 14's run-time class): NULL
 * buffers to step, cache_load and cache_read, and generate counts whose
 * steps overflow an int, are errors with a sentence, not crashes.
 */
Test(generate, api_arguments_are_checked, .timeout = 120)
{
	static const char prog[] =
		"#include <stdio.h>\n#include <limits.h>\n#include \"llama.h\"\n"
		"int main(void) {\n"
		"  llama *m; int64_t t = 7, out[4]; const void *in[2] = {&t, NULL}; void *o[8] = {0};\n"
		"  if (llama_create(&m, NULL) || llama_load_weights(m, MODEL)) return 9;\n"
		"  printf(\"step: %d %s\\n\", llama_step(m, NULL, o, NULL), llama_last_error(m));\n"
		"  printf(\"step: %d %s\\n\", llama_step(m, in, o, NULL), llama_last_error(m));\n"
		"  printf(\"load: %d %s\\n\", llama_cache_load(m, 0, NULL, 3), llama_last_error(m));\n"
		"  printf(\"load0: %d\\n\", llama_cache_load(m, 0, NULL, 0));\n"
		"  static float one[1 << 16];   /* one position of any cache here */\n"
		"  if (llama_cache_load(m, 0, one, 1)) return 8;\n"
		"  printf(\"read: %d %s\\n\", llama_cache_read(m, 0, NULL), llama_last_error(m));\n"
		"  llama_cache_reset(m);\n"
		"  printf(\"gen: %d %s\\n\", llama_generate(m, &t, INT_MAX, INT_MAX, out), llama_last_error(m));\n"
		"  llama_destroy(m); return 0;\n}\n";
	run_on_op18(prog);
	cr_assert(strstr(out, "step: -1 input 0 ('input_ids') is a NULL pointer"), "%s", out);
	cr_assert(strstr(out, "step: -1 input 1 ('position_ids') is a NULL pointer"), "%s", out);
	cr_assert(strstr(out, "load: -1 cannot load KV cache"), "%s", out);
	cr_assert(strstr(out, "load0: 0"), "%s", out);
	cr_assert(strstr(out, "read: -1 cannot read KV cache"), "%s", out);
	cr_assert(strstr(out, "gen: -1 2147483647 prompt and 2147483647 new tokens are more steps"),
		  "%s", out);
}

/*
 * generate_with (runtime/sample.h's draw): its sampling checked with a
 * sentence each; no sampling, or top-k 1, is the greedy answer; a seed
 * repeats its tokens and another seed gives others; a stop token ends the
 * answer at its first occurrence, with the cache one position short of it.
 * Under the address and undefined-behaviour sanitizers.
 */
Test(generate, sampling_is_checked_and_stops, .timeout = 120)
{
	static const char prog[] =
		"#include <math.h>\n#include <stdio.h>\n#include <string.h>\n#include \"llama.h\"\n"
		"#define ASK(what, ...) printf(\"%s: %d %s\\n\", what, \\\n"
		"  llama_generate_with(m, prompt, 3, 16, __VA_ARGS__), llama_last_error(m))\n"
		"int main(void) {\n"
		"  llama *m; int64_t prompt[3] = {7, 9, 11}, g[16], a[16], b[16], c[16], stop[2];\n"
		"  int n = -1, na, nb;\n"
		"  if (llama_create(&m, NULL) || llama_load_weights(m, MODEL)) return 9;\n"
		"  ASK(\"nan\", &(llama_sampling){NAN, 0, 0, 1, NULL, 0}, a, &n);\n"
		"  printf(\"n after an error: %d\\n\", n);\n"
		"  ASK(\"cold\", &(llama_sampling){-1, 0, 0, 1, NULL, 0}, a, &n);\n"
		"  ASK(\"k\", &(llama_sampling){1, -2, 0, 1, NULL, 0}, a, &n);\n"
		"  ASK(\"p\", &(llama_sampling){1, 0, 1.5f, 1, NULL, 0}, a, &n);\n"
		"  ASK(\"stops\", &(llama_sampling){1, 0, 0, 1, NULL, 3}, a, &n);\n"
		"  stop[0] = 5000;\n"
		"  ASK(\"vocab\", &(llama_sampling){1, 0, 0, 1, stop, 1}, a, &n);\n"
		"  if (llama_generate(m, prompt, 3, 16, g)) return 8;\n"
		"  llama_cache_reset(m);\n"
		"  if (llama_generate_with(m, prompt, 3, 16, NULL, a, &n)) return 7;\n"
		"  printf(\"null sampling: %s, %d\\n\", memcmp(a, g, sizeof g) ? \"differs\" : \"greedy\", n);\n"
		"  llama_cache_reset(m);\n"
		"  if (llama_generate_with(m, prompt, 3, 16, &(llama_sampling){2, 1, 0, 5, NULL, 0}, a, NULL))\n"
		"    return 6;\n"
		"  printf(\"top-k 1: %s\\n\", memcmp(a, g, sizeof g) ? \"differs\" : \"greedy\");\n"
		"  llama_sampling s = {1.5f, 0, 0.95f, 77, NULL, 0};\n"
		"  llama_cache_reset(m);\n"
		"  if (llama_generate_with(m, prompt, 3, 16, &s, a, &na)) return 5;\n"
		"  llama_cache_reset(m);\n"
		"  if (llama_generate_with(m, prompt, 3, 16, &s, b, &nb)) return 4;\n"
		"  s.seed = 78;\n"
		"  llama_cache_reset(m);\n"
		"  if (llama_generate_with(m, prompt, 3, 16, &s, c, NULL)) return 3;\n"
		"  printf(\"seed again: %s, %d %d; other seed: %s; greedy: %s\\n\",\n"
		"         memcmp(a, b, sizeof a) ? \"differs\" : \"same\", na, nb,\n"
		"         memcmp(a, c, sizeof a) ? \"differs\" : \"same\", memcmp(a, g, sizeof a) ? \"differs\" : \"same\");\n"
		"  s.seed = 77; s.stop = stop; s.n_stop = 2; stop[0] = a[5]; stop[1] = a[9];\n"
		"  int first = 0;\n"
		"  while (a[first] != a[5] && a[first] != a[9]) first++;\n"
		"  llama_cache_reset(m);\n"
		"  memset(b, 0xff, sizeof b);\n"
		"  if (llama_generate_with(m, prompt, 3, 16, &s, b, &nb)) return 2;\n"
		"  int untouched = 1;\n"
		"  for (int i = nb; i < 16; i++) untouched &= b[i] == -1;\n"
		"  printf(\"stopped: %s, %s, past it %s, cache %lld\\n\", nb == first + 1 ? \"at the first\" : \"elsewhere\",\n"
		"         memcmp(a, b, (size_t)nb * sizeof *a) ? \"differs\" : \"same tokens\",\n"
		"         untouched ? \"unwritten\" : \"written\", (long long)(llama_cache_len(m) - (3 + nb - 1)));\n"
		"  llama_destroy(m); return 0;\n}\n";
	run_on_op18(prog);
	cr_expect(strstr(out, "nan: -1 sampling.temperature is nan; it takes 0 (greedy) or a "
			 "positive number"), "%s", out);
	cr_expect(strstr(out, "n after an error: 0\n"), "%s", out);
	cr_expect(strstr(out, "cold: -1 sampling.temperature is -1;"), "%s", out);
	cr_expect(strstr(out, "k: -1 sampling.top_k is -2; it takes 0 (every token) or more"), "%s",
		  out);
	cr_expect(strstr(out, "p: -1 sampling.top_p is 1.5; it takes 0 to 1"), "%s", out);
	cr_expect(strstr(out, "stops: -1 sampling.n_stop is 3 and sampling.stop is NULL; it takes 0 "
			 "to 1024 stop tokens"), "%s", out);
	cr_expect(strstr(out, "vocab: -1 stop token 0 is 5000; the vocabulary is 0 to 1023"), "%s",
		  out);
	cr_expect(strstr(out, "null sampling: greedy, 16\n"), "%s", out);
	cr_expect(strstr(out, "top-k 1: greedy\n"), "%s", out);
	cr_expect(strstr(out, "seed again: same, 16 16; other seed: differs; greedy: differs\n"), "%s",
		  out);
	cr_expect(strstr(out, "stopped: at the first, same tokens, past it unwritten, cache 0\n"), "%s",
		  out);
}
