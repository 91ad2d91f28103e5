/*
 * test_chunks.c - steps of several tokens (mkc --max-chunk, issue 29) on
 * the C target: the golden chunks of tests/models/hf_chunk against the
 * float64 reference, and through the emitted API a prompt fed in chunks
 * against the same prompt fed a token at a time (logits and caches), and
 * generate on a chunked file against generate on the decode file.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

#define CHUNK "tests/models/hf_chunk/"

static char out[1 << 16];

Test(chunks, golden_steps_of_several_tokens, .timeout = 300)
{
	/* past 5 + 7 new, past 6 + 1 new, an empty cache + 4 new (gen_hf.py):
	 * the chunk's plan, the one-token plan and (--few-tokens 4) the
	 * few-token plan; then the same with the chunk's plan cut as the
	 * few-token one */
	cr_assert_eq(mkc_test_run("--max-chunk 8 --few-tokens 4 " CHUNK "qwen3_tiny " CHUNK
				  "llama_tiny_bf16 " CHUNK
				  "llama_tiny_d64", out,
				  sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "9 passed, 0 failed"), "%s", out);
	/* the largest F: the chunk's plan of 8 cut as the few-token plan */
	cr_assert_eq(mkc_test_run("--max-chunk 8 --few-tokens 64 " CHUNK "qwen3_tiny", out,
				  sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "3 passed, 0 failed"), "%s", out);
}

Test(chunks, a_chunk_longer_than_compiled_is_refused, .timeout = 300)
{
	cr_assert_neq(mkc_test_run("--max-chunk 4 " CHUNK "qwen3_tiny", out, sizeof out), 0,
		      "%s", out);
	cr_expect(strstr(out, "seq_len = 7 is outside 0..4 (the compiled maximum)"), "%s", out);
	cr_expect(strstr(out, "2 passed, 1 failed"), "%s", out);
	/* without --max-chunk a step is one token: the cases of several say so */
	cr_assert_neq(mkc_test_run(CHUNK "qwen3_tiny", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "dim 1 is 7, the model says 1 (compiled for steps of one token: "
			      "--max-chunk N takes steps of up to N)"), "%s", out);
	cr_expect(strstr(out, "1 passed, 2 failed"), "%s", out);
}

/*
 * qwen3_tiny compiled twice, as NAME.c with flags and as one.c (the decode
 * step), both with caches of max_seq positions, and prog built against both
 * (ASan and UBSan) and run; its output in out, and it must exit 0.
 */
static void
run_beside_decode_seq(const char *name, const char *flags, const char *prog, int max_seq)
{
	static char cmd[1 << 15];
	const char *dir = CHUNK "qwen3_tiny";
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && %s %s %s --max-seq %d -o $d/%s.c && "
		 "%s %s --max-seq %d -o $d/one.c && cat > $d/t.c <<'EOF'\n%sEOF\n"
		 "cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined "
		 "-fno-sanitize-recover=all -DDIR=\\\"%s\\\" -pthread -I$d -o $d/t $d/t.c $d/%s.c "
		 "$d/one.c -lm && timeout 120 $d/t; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), dir, flags, max_seq, name, mkc_bin(), dir, max_seq, prog, dir, name);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

static void
run_beside_decode(const char *name, const char *flags, const char *prog)
{
	run_beside_decode_seq(name, flags, prog, 32);
}

/*
 * One program, two files of the same folder: chunk.c (--max-chunk 4) and
 * one.c (the decode step). A 9-token prompt in chunks of 4, 4 and 1 gives
 * the logits and caches of the same prompt a token at a time (to float
 * rounding: the products sum rows in another grouping); generate on both
 * files gives the same tokens, greedy or drawn from one seed (the draw
 * hashes the position, not the step), and so does a first token alone
 * (the chunked file draws it from its last chunk's logits) or a stop token
 * first; a step of 5 and one of 0 are refused.
 */
Test(chunks, a_prompt_in_chunks_is_the_prompt_a_token_at_a_time, .timeout = 300)
{
	static const char prog[] =
		"#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
		"#include \"chunk.h\"\n#include \"one.h\"\n"
		"static const int64_t prompt[9] = {3, 17, 250, 99, 4, 31, 200, 7, 64};\n"
		"static float logits[2][256];\n"
		"static int feed(chunk *m, int at, int n, int which) {\n"
		"  int64_t pos[8], dims[2];\n"
		"  for (int k = 0; k < n; k++) pos[k] = at + k;\n"
		"  for (int i = 0; i < chunk_num_dims(); i++)\n"
		"    dims[i] = strcmp(chunk_dim_name(i), \"seq_len\") ? -1 : n;\n"
		"  const void *in[2] = {prompt + at, pos}; void *o[1] = {logits[which]};\n"
		"  return chunk_step(m, in, o, dims);\n"
		"}\n"
		"int main(void) {\n"
		"  chunk *m; one *d;\n"
		"  if (chunk_create(&m, NULL) || chunk_load_weights(m, DIR) || one_create(&d, NULL) ||\n"
		"      one_load_weights(d, DIR)) { printf(\"setup failed\\n\"); return 9; }\n"
		"  printf(\"dims %d: %s %s, max %lld\\n\", chunk_num_dims(), chunk_dim_name(0),\n"
		"         chunk_dim_name(1), (long long)chunk_max_dim(0));\n"
		"  int at = 0;\n"
		"  for (int n = 4; at < 9; at += n, n = 9 - at < 4 ? 9 - at : 4)\n"
		"    if (feed(m, at, n, 0)) { printf(\"chunk: %s\\n\", chunk_last_error(m)); return 1; }\n"
		"  printf(\"len %lld\\n\", (long long)chunk_cache_len(m));\n"
		"  enum { N = 9 * 2 * 32 };\n"
		"  static float a[8][N], b[8][N];\n"
		"  int nc = chunk_num_caches();\n"
		"  for (int c = 0; c < nc; c++) if (chunk_cache_read(m, c, a[c])) return 2;\n"
		"  chunk_cache_reset(m);\n"
		"  for (int t = 0; t < 9; t++) if (feed(m, t, 1, 1)) return 3;\n"
		"  double worst = 0;\n"
		"  for (int c = 0; c < nc; c++) {\n"
		"    if (chunk_cache_read(m, c, b[c])) return 4;\n"
		"    for (int i = 0; i < N; i++) {\n"
		"      double e = fabs((double)a[c][i] - b[c][i]);\n"
		"      if (e > worst) worst = e;\n"
		"    }\n"
		"  }\n"
		"  double lw = 0;\n"
		"  for (int i = 0; i < 256; i++) {\n"
		"    double e = fabs((double)logits[0][i] - logits[1][i]);\n"
		"    if (e > lw) lw = e;\n"
		"  }\n"
		"  printf(\"caches %s, logits %s\\n\", worst < 1e-4 ? \"same\" : \"differ\",\n"
		"         lw < 1e-4 ? \"same\" : \"differ\");\n"
		"  if (worst >= 1e-4 || lw >= 1e-4) printf(\"worst %g %g\\n\", worst, lw);\n"
		"  int64_t t1[6], t2[6];\n"
		"  chunk_cache_reset(m);\n"
		"  if (chunk_generate(m, prompt, 9, 6, t1) || one_generate(d, prompt, 9, 6, t2)) {\n"
		"    printf(\"generate: %s / %s\\n\", chunk_last_error(m), one_last_error(d)); return 6;\n"
		"  }\n"
		"  printf(\"generate %s, len %lld\\n\", memcmp(t1, t2, sizeof t1) ? \"differs\" : \"same\",\n"
		"         (long long)chunk_cache_len(m));\n"
		"  chunk_sampling cs = {1.0f, 0, 0.9f, 31, NULL, 0};\n"
		"  one_sampling os = {1.0f, 0, 0.9f, 31, NULL, 0};\n"
		"  chunk_cache_reset(m); one_cache_reset(d);\n"
		"  if (chunk_generate_with(m, prompt, 9, 6, &cs, t1, NULL) ||\n"
		"      one_generate_with(d, prompt, 9, 6, &os, t2, NULL)) return 7;\n"
		"  int64_t t3[6];\n"
		"  os.seed = 32; one_cache_reset(d);\n"
		"  if (one_generate_with(d, prompt, 9, 6, &os, t3, NULL)) return 8;\n"
		"  printf(\"drawn %s, another seed %s\\n\", memcmp(t1, t2, sizeof t1) ? \"differs\" : \"same\",\n"
		"         memcmp(t3, t2, sizeof t1) ? \"differs\" : \"same\");\n"
		"  int64_t f1[1], f2[1]; int n1 = -1;\n"
		"  chunk_cache_reset(m); one_cache_reset(d);\n"
		"  if (chunk_generate(m, prompt, 9, 1, f1) || one_generate(d, prompt, 9, 1, f2)) return 10;\n"
		"  printf(\"one new %s, len %lld\\n\", f1[0] == f2[0] ? \"same\" : \"differs\",\n"
		"         (long long)chunk_cache_len(m));\n"
		"  chunk_sampling st = {0.0f, 0, 0.0f, 0, f2, 1};\n"
		"  chunk_cache_reset(m);\n"
		"  if (chunk_generate_with(m, prompt, 9, 6, &st, t1, &n1)) return 11;\n"
		"  printf(\"stopped after %d, len %lld\\n\", n1, (long long)chunk_cache_len(m));\n"
		"  chunk_cache_reset(m); one_cache_reset(d);\n"
		"  if (chunk_generate(m, prompt, 2, 6, t1) || one_generate(d, prompt, 2, 6, t2)) return 12;\n"
		"  printf(\"a prompt of two %s\\n\", memcmp(t1, t2, sizeof t1) ? \"differs\" : \"same\");\n"
		"  chunk_cache_reset(m);\n"
		"  printf(\"five: %d %s\\n\", feed(m, 0, 5, 0), chunk_last_error(m));\n"
		"  printf(\"zero: %d %s\\n\", feed(m, 0, 0, 0), chunk_last_error(m));\n"
		"  chunk_destroy(m); one_destroy(d); return 0;\n"
		"}\n";
	run_beside_decode("chunk", "--max-chunk 4", prog);
	cr_expect(strstr(out, "dims 2: seq_len past_len, max 4\n"), "%s", out);
	cr_expect(strstr(out, "len 9\n"), "%s", out);
	cr_expect(strstr(out, "caches same, logits same\n"), "%s", out);
	cr_expect(strstr(out, "generate same, len 14\n"), "%s", out);
	cr_expect(strstr(out, "drawn same, another seed differs\n"), "%s", out);
	/* the first token alone, and a stop token first: the prompt's chunks only */
	cr_expect(strstr(out, "one new same, len 9\n"), "%s", out);
	cr_expect(strstr(out, "stopped after 1, len 9\n"), "%s", out);
	cr_expect(strstr(out, "a prompt of two same\n"), "%s", out);
	cr_expect(strstr(out, "five: -1 seq_len = 5 is outside 0..4 (the compiled maximum)"), "%s",
		  out);
	cr_expect(strstr(out, "zero: -1 a step must append at least one position"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
}

/*
 * A chunked file holds the one-token step compiled apart (S fixed at 1, the
 * decode file's plan): a prompt fed a token at a time through chunk.c gives
 * one.c's logits and caches to the bit, and its header names the two plans.
 */
Test(chunks, a_step_of_one_token_runs_the_decode_plan, .timeout = 300)
{
	static const char prog[] =
		"#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
		"#include \"chunk.h\"\n#include \"one.h\"\n"
		"static const int64_t prompt[9] = {3, 17, 250, 99, 4, 31, 200, 7, 64};\n"
		"static float a[256], b[256];\n"
		"int main(void) {\n"
		"  chunk *m; one *d;\n"
		"  if (chunk_create(&m, NULL) || chunk_load_weights(m, DIR) || one_create(&d, NULL) ||\n"
		"      one_load_weights(d, DIR)) { printf(\"setup failed\\n\"); return 9; }\n"
		"  int same = 1;\n"
		"  for (int t = 0; t < 9; t++) {\n"
		"    int64_t pos = t, dims[2];\n"
		"    for (int i = 0; i < chunk_num_dims(); i++)\n"
		"      dims[i] = strcmp(chunk_dim_name(i), \"seq_len\") ? -1 : 1;\n"
		"    const void *in[2] = {prompt + t, &pos}; void *oa[1] = {a}, *ob[1] = {b};\n"
		"    memset(a, 0xff, sizeof a);\n"
		"    if (chunk_step(m, in, oa, dims) || one_step(d, in, ob, NULL)) return 1;\n"
		"    same &= !memcmp(a, b, sizeof a);\n"
		"  }\n"
		"  enum { N = 9 * 2 * 32 };\n"
		"  static float ca[N], cb[N];\n"
		"  for (int c = 0; c < chunk_num_caches(); c++) {\n"
		"    if (chunk_cache_read(m, c, ca) || one_cache_read(d, c, cb)) return 2;\n"
		"    same &= !memcmp(ca, cb, sizeof ca);\n"
		"  }\n"
		"  printf(\"one token at a time: %s\\n\", same ? \"the same bits\" : \"differs\");\n"
		"  chunk_destroy(m); one_destroy(d); return 0;\n"
		"}\n";
	run_beside_decode("chunk", "--max-chunk 4", prog);
	cr_expect(strstr(out, "one token at a time: the same bits\n"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " CHUNK "qwen3_tiny --max-chunk 4 -o $d/m.c "
		 "2>/dev/null && grep -c -e '^ \\* a step of one token: its own plan' -e "
		 "'^#define MKC_NPLANS 2$' $d/m.c; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect_str_eq(out, "2\n", "the header names both plans");
}

/*
 * A prompt of N_PROMPT tokens ((i * 37 + 11) % 256) fed as SIZES tokens a
 * step through few.c, and a token at a time through one.c (the decode
 * file): prints whether the last step's logits and the caches are the same
 * (within 1e-4). Built with N_PROMPT and SIZES defined in front.
 */
static const char prompt_prog[] =
	"#include <math.h>\n#include <stdio.h>\n#include <string.h>\n"
	"#include \"few.h\"\n#include \"one.h\"\n"
	"static float a[256], b[256];\n"
	"int main(void) {\n"
	"  few *m; one *d; int64_t prompt[N_PROMPT];\n"
	"  for (int i = 0; i < N_PROMPT; i++) prompt[i] = (i * 37 + 11) % 256;\n"
	"  if (few_create(&m, NULL) || few_load_weights(m, DIR) || one_create(&d, NULL) ||\n"
	"      one_load_weights(d, DIR)) { printf(\"setup failed\\n\"); return 9; }\n"
	"  static const int sizes[] = {SIZES};\n"
	"  for (int c = 0, at = 0; c < (int)(sizeof sizes / sizeof sizes[0]); at += sizes[c++]) {\n"
	"    int64_t pos[128], dims[2];\n"
	"    for (int k = 0; k < sizes[c]; k++) pos[k] = at + k;\n"
	"    for (int i = 0; i < few_num_dims(); i++)\n"
	"      dims[i] = strcmp(few_dim_name(i), \"seq_len\") ? -1 : sizes[c];\n"
	"    const void *in[2] = {prompt + at, pos}; void *o[1] = {a};\n"
	"    memset(a, 0xff, sizeof a);\n"
	"    if (few_step(m, in, o, dims)) { printf(\"step: %s\\n\", few_last_error(m)); return 1; }\n"
	"  }\n"
	"  for (int t = 0; t < N_PROMPT; t++) {\n"
	"    int64_t pos = t; const void *in[2] = {prompt + t, &pos}; void *o[1] = {b};\n"
	"    if (one_step(d, in, o, NULL)) return 2;\n"
	"  }\n"
	"  double lw = 0, cw = 0;\n"
	"  for (int i = 0; i < 256; i++) lw = fmax(lw, fabs((double)a[i] - b[i]));\n"
	"  enum { N = N_PROMPT * 2 * 32 };\n"
	"  static float ca[N], cb[N];\n"
	"  for (int c = 0; c < few_num_caches(); c++) {\n"
	"    if (few_cache_read(m, c, ca) || one_cache_read(d, c, cb)) return 3;\n"
	"    for (int i = 0; i < N; i++) cw = fmax(cw, fabs((double)ca[i] - cb[i]));\n"
	"  }\n"
	"  printf(\"logits %s, caches %s\\n\", lw < 1e-4 ? \"same\" : \"differ\",\n"
	"         cw < 1e-4 ? \"same\" : \"differ\");\n"
	"  few_destroy(m); one_destroy(d); return 0;\n"
	"}\n";

/*
 * --few-tokens F: steps of 2 to F tokens run a plan of their own (on a GPU
 * its products stream each weight once, as the decode step's do; on the C
 * target the same bodies as the chunk's, so only the plan differs). The
 * goldens go through all three plans (golden_steps_of_several_tokens:
 * 7 new tokens the chunk's, 4 the few-token plan's, 1 the one-token
 * plan's); here a 9-token prompt fed as 4, 2, 2 and 1 tokens (plans 0,
 * 1, 1, 2) gives the logits and caches of the same prompt a token at a
 * time through the decode file, and so does a file whose chunk limit is F
 * (no third plan: the chunk's is cut as the few-token plan's); the header
 * names the three plans and the step picks by S.
 */
Test(chunks, steps_of_few_tokens_run_a_plan_of_their_own, .timeout = 300)
{
	static char prog[sizeof prompt_prog + 64];
	snprintf(prog, sizeof prog, "#define N_PROMPT 9\n#define SIZES 4, 2, 2, 1\n%s", prompt_prog);
	run_beside_decode("few", "--max-chunk 4 --few-tokens 2", prog);
	cr_expect(strstr(out, "logits same, caches same\n"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
	/* a chunk limit within F: the chunk's own plan cut as the few-token plan */
	run_beside_decode("few", "--max-chunk 4 --few-tokens 4", prog);
	cr_expect(strstr(out, "logits same, caches same\n"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " CHUNK "qwen3_tiny --max-chunk 8 --few-tokens 4 "
		 "-o $d/m.c 2>/dev/null && grep -c -e '^ \\* a step of 2 to 4 tokens: its own plan' -e "
		 "'^#define MKC_NPLANS 3$' -e '^#define MKC_STEP_PLAN(sym) ((sym)\\[0\\] == 1 ? 2 : "
		 "(sym)\\[0\\] <= 4 ? 1 : 0)$' $d/m.c; rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect_str_eq(out, "3\n", "the header names the three plans");
	/* a limit the chunk's already is: no third plan; a bad count: refused */
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " CHUNK "qwen3_tiny --max-chunk 4 --few-tokens 4 "
		 "-o $d/m.c 2>/dev/null && grep -c '^#define MKC_NPLANS 2$' $d/m.c; %s " CHUNK
		 "qwen3_tiny --few-tokens 65 2>&1; rm -rf $d", mkc_bin(), mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_expect(strstr(out, "1\n"), "%s", out);
	cr_expect(strstr(out, "--few-tokens needs a token count from 0 to 64"), "%s", out);
}

/*
 * A few-token plan takes its norms into its products only for steps of at
 * most 32 tokens (driver.c's FEW_NORM_TOKENS: on a GPU the tile then reads
 * float32 rows, which costs at 64 tokens); a plan of more tokens keeps
 * them, and a twin of at most 32 takes the smaller steps. A 120-token
 * prompt fed in chunks through every plan of a --max-chunk 128 file (the
 * chunk's plan, then 2 to 64, 2 to 32 and one token) gives the logits and
 * caches of the same prompt a token at a time; a --max-chunk 64 file (a
 * --max-seqs 64 file's plans) has its chunk's plan cut as the few-token
 * one, then the twin of 32 and the one-token plan.
 */
Test(chunks, few_token_norms_inside_only_to_32_tokens, .timeout = 300)
{
	static char prog[sizeof prompt_prog + 64], cmd[1024];
	/* plans 0 (the chunk's), 1 (33 to 64: its norms its own), 2 (2 to 32: in
	 * the products), 3 */
	snprintf(prog, sizeof prog, "#define N_PROMPT 120\n#define SIZES 70, 40, 8, 1, 1\n%s",
		 prompt_prog);
	run_beside_decode_seq("few", "--max-chunk 128 --few-tokens 64", prog, 128);
	cr_expect(strstr(out, "logits same, caches same\n"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
	/* the plans, the step's pick, and which plans took the norms */
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && for c in 128 64; do %s -v " CHUNK "qwen3_tiny "
		 "--max-chunk $c --few-tokens 64 -o $d/m.c 2>&1 | grep -e 'of 2 to' -e 'fuse_norm: ' && "
		 "grep -e '^ \\* a step of 2 to' -e '^#define MKC_NPLANS' -e '^#define MKC_STEP_PLAN' "
		 "$d/m.c || { rm -rf $d; exit 1; }; done; rm -rf $d", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "mkc: the own plan of steps of 2 to 64 tokens\n"
			      "mkc: fuse_norm: 1 RMS norms into the products that read them\n"
			      "mkc: the own plan of steps of 2 to 32 tokens\n"
			      "mkc: fuse_norm: 5 RMS norms into the products that read them (4 of a "
			      "few-token step's rows)\n"), "%s", out);
	cr_expect(strstr(out, " * a step of 2 to 64 tokens: its own plan"), "%s", out);
	cr_expect(strstr(out, " * a step of 2 to 32 tokens: its own plan"), "%s", out);
	cr_expect(strstr(out, "#define MKC_NPLANS 4\n"), "%s", out);
	cr_expect(strstr(out, "#define MKC_NPLANS 3\n"), "%s", out);
	cr_expect(strstr(out, "#define MKC_STEP_PLAN(sym) ((sym)[0] == 1 ? 2 : (sym)[0] <= 32 ? 1 : "
			      "0)\n"), "%s", out);
	cr_expect(strstr(out, "#define MKC_STEP_PLAN(sym) ((sym)[0] == 1 ? 3 : (sym)[0] <= 32 ? 2 : "
			      "(sym)[0] <= 64 ? 1 : 0)\n"), "%s", out);
}

/*
 * mkc --all-logits: every.c gives each new token's logits [1, S, vocab]. A
 * 9-token prompt in chunks of 4, 4 and 1 gives, row by row, the logits of
 * the same prompt a token at a time through the decode file (to float
 * rounding, as above); generate on it gives the decode file's tokens.
 */
Test(chunks, all_logits_give_every_token_its_row, .timeout = 300)
{
	static const char prog[] =
		"#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
		"#include \"every.h\"\n#include \"one.h\"\n"
		"static const int64_t prompt[9] = {3, 17, 250, 99, 4, 31, 200, 7, 64};\n"
		"static float got[9][256], ref[256];\n"
		"int main(void) {\n"
		"  every *m; one *d;\n"
		"  if (every_create(&m, NULL) || every_load_weights(m, DIR) || one_create(&d, NULL) ||\n"
		"      one_load_weights(d, DIR)) { printf(\"setup failed\\n\"); return 9; }\n"
		"  int64_t dims[2], shape[3];\n"
		"  for (int i = 0; i < every_num_dims(); i++)\n"
		"    dims[i] = strcmp(every_dim_name(i), \"seq_len\") ? -1 : 4;\n"
		"  if (every_output_shape(0, dims, shape) != 3) return 8;\n"
		"  printf(\"logits %lld %lld %lld\\n\", (long long)shape[0], (long long)shape[1],\n"
		"         (long long)shape[2]);\n"
		"  int64_t pos[9];\n"
		"  for (int k = 0; k < 9; k++) pos[k] = k;\n"
		"  for (int at = 0, n = 4; at < 9; at += n, n = 9 - at < 4 ? 9 - at : 4) {\n"
		"    for (int i = 0; i < every_num_dims(); i++)\n"
		"      dims[i] = strcmp(every_dim_name(i), \"seq_len\") ? -1 : n;\n"
		"    const void *in[2] = {prompt + at, pos + at}; void *o[1] = {got[at]};\n"
		"    if (every_step(m, in, o, dims)) { printf(\"every: %s\\n\", every_last_error(m)); return 1; }\n"
		"  }\n"
		"  double worst = 0, big = 0;\n"
		"  for (int t = 0; t < 9; t++) {\n"
		"    const void *in[2] = {prompt + t, pos + t}; void *o[1] = {ref};\n"
		"    if (one_step(d, in, o, NULL)) { printf(\"one: %s\\n\", one_last_error(d)); return 2; }\n"
		"    for (int i = 0; i < 256; i++) {\n"
		"      double e = fabs((double)got[t][i] - ref[i]);\n"
		"      if (e > worst) worst = e;\n"
		"      if (fabs(ref[i]) > big) big = fabs(ref[i]);\n"
		"    }\n"
		"  }\n"
		"  printf(\"rows %s\\n\", worst < 1e-4 * big ? \"same\" : \"differ\");\n"
		"  if (worst >= 1e-4 * big) printf(\"worst %g of %g\\n\", worst, big);\n"
		"  int64_t t1[6], t2[6];\n"
		"  every_cache_reset(m); one_cache_reset(d);\n"
		"  if (every_generate(m, prompt, 9, 6, t1) || one_generate(d, prompt, 9, 6, t2)) {\n"
		"    printf(\"generate: %s / %s\\n\", every_last_error(m), one_last_error(d)); return 6;\n"
		"  }\n"
		"  printf(\"generate %s\\n\", memcmp(t1, t2, sizeof t1) ? \"differs\" : \"same\");\n"
		"  every_destroy(m); one_destroy(d); return 0;\n"
		"}\n";
	run_beside_decode("every", "--max-chunk 4 --all-logits", prog);
	cr_expect(strstr(out, "logits 1 4 256\n"), "%s", out);
	cr_expect(strstr(out, "rows same\n"), "%s", out);
	cr_expect(strstr(out, "generate same\n"), "%s", out);
	cr_expect_null(strstr(out, "runtime error"), "%s", out);
}

/*
 * Real exports with a symbolic step (tools/export_hf.py --chunks: torch.onnx
 * at opsets 18 and 23, the causal mask built by the exporter from Range,
 * LessOrEqual and Expand, at opset 18 an additive Where): 5 tokens after 7,
 * 1 after 6, 9 after 3 (three of the C target's blocks of rows) and 4 into
 * an empty cache match PyTorch's outputs; canon recognises every layer's
 * mask as is_causal, so no Attention reads a mask; the decode file of the
 * opset-23 export splits its attention over positions, which a mask
 * prevented, and passes the one-token set.
 */
#define EXPORTS "tests/models/export_chunk/"

Test(chunks, real_exports_with_a_symbolic_step, .timeout = 300)
{
	cr_assert_eq(mkc_test_run("--max-chunk 16 " EXPORTS "llama_tiny_op18 " EXPORTS
				  "llama_tiny_op23", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "8 passed, 0 failed"), "%s", out);
	static const char *const opsets[] = {"18", "23"};
	for (int i = 0; i < 2; i++) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, "%s " EXPORTS "llama_tiny_op%s --max-chunk 16 "
			 "--dump-after=lower 2>/dev/null | grep -A1 ' Attention(' | grep -c 'causal=2'",
			 mkc_bin(), opsets[i]);
		cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
		cr_expect_str_eq(out, "2\n", "opset %s: the two layers' masks are causal", opsets[i]);
	}
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s " EXPORTS "llama_tiny_op23 --dump-after=lower 2>/dev/null "
		 "| grep -c 'mkc.internal.AttnPart('", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_expect_str_eq(out, "2\n", "the decode step's attention is split over positions");
	cr_assert_neq(mkc_test_run(EXPORTS "llama_tiny_op23", out, sizeof out), 0, "%s", out);
	cr_expect(strstr(out, "test_data_set_1: 5 outputs x 3 steps"), "%s", out);
	cr_expect(strstr(out, "input 'input_ids' dim 1 is 5, the model says 1"), "%s", out);
}

/* The task of the chunked qwen3_tiny plan (--max-chunk 8) whose dump line holds what. */
static int
task_of(const char *what)
{
	int task = mkc_plan_task(CHUNK "qwen3_tiny --max-chunk 8", what, out, sizeof out);
	cr_assert_geq(task, 0, "no '%s' in the plan: %.300s", what, out);
	return task;
}

/*
 * The mutation test on a chunked plan: without its wait, a layer's first
 * attention tile, or the second block of rows of its first product (rows
 * 4..8, which only the 7-token step fills), reads too early on the
 * shuffled queue, and the step's answer is wrong.
 */
Test(chunks, a_dropped_wait_in_a_chunked_plan_is_caught, .timeout = 300)
{
	static const char *const which[] = {"(Attention) tile 0/8", "q_proj (Gemm) tile 2/4"};
	for (int i = 0; i < 2; i++) {
		int t = task_of(which[i]);
		char args[256];
		snprintf(args, sizeof args, "--max-chunk 8 --drop-wait %d --shuffle 5 --threads 8 "
			 CHUNK "qwen3_tiny", t);
		cr_assert_neq(mkc_test_run(args, out, sizeof out), 0, "%s: %s", which[i], out);
		cr_expect(strstr(out, "FAIL " CHUNK "qwen3_tiny/test_data_set_0"), "%s: %s", which[i],
			  out);
	}
}

/* --max-chunk on a model whose step takes a fixed number of tokens is an error, and writes nothing. */
Test(chunks, max_chunk_on_a_fixed_step_is_refused, .timeout = 60)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s tests/models/tiny_llama_decode_op18 "
		 "--max-chunk 8 -o $d/m.c 2>&1; rc=$?; ls $d | wc -l; rm -rf $d; exit $rc", mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_expect(strstr(out, "model.onnx: --max-chunk 8: the model's step takes a fixed number of "
			      "tokens"), "%s", out);
	cr_expect(strstr(out, "\n0\n"), "nothing written: %s", out);
}

/*
 * passes/narrow.c: on the CUDA target a chunk's norms and SwiGLU products,
 * read only by tensor-core products, are stored bf16 and those products
 * take a bf16 x (mkc_mma_tile<true, ...>); a SwiGLU is one Glu tile with
 * its gate and up products (passes/fuse_glu.c), storing bf16 itself
 * (mkc_mma_tile<true, true, true>). The attention on tensor cores stores
 * its rows as bf16 too (mkc_attn_chunk_mma_tile<64, float, true>), and with
 * them its Transpose's and Reshape's views that o_proj reads. The C
 * target's graph keeps float32 (its results are tested bit for bit
 * elsewhere), and so does the decode plan of the same file. (--few-tokens
 * 0: a chunk of 16 is within the default F, whose plan has no such tiles.)
 */
Test(chunks, product_inputs_are_bf16_where_tensor_cores_read_them, .timeout = 120)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " CHUNK "llama_tiny_d64 --max-chunk 16 "
		 "--few-tokens 0 --dump-after=narrow -o $d/m.cu > $d/dump && "
		 "grep -c 'stored bfloat16' $d/dump; for t in "
		 "'<true, false, false>' '<true, true, true>' '<false, false, false>' '<false, true'; do "
		 "grep -c \"mkc_mma_tile$t\" $d/m.cu; done; grep -c 'SiluMul(' $d/dump; "
		 "grep -c 'mkc_attn_chunk_mma_tile<64, float, true>(&' $d/m.cu; rm -rf $d",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	/* two layers: each layer's two norms, its Glu, its attention's rows and
	 * their two views; tile bodies (one a shape) for the products they feed
	 * (q, k and v: two shapes; o_proj; down) and the Glu; no SwiGLU apart;
	 * one attention body */
	cr_expect_str_eq(out, "12\n4\n1\n0\n0\n0\n1\n", "%s", out);
	snprintf(cmd, sizeof cmd, "%s " CHUNK "llama_tiny_d64 --max-chunk 16 --few-tokens 0 "
		 "--dump-after=narrow 2>/dev/null | grep -c 'stored bfloat16'", mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_expect_str_eq(out, "0\n", "the c target: %s", out);
}

/*
 * The CUDA target's tensor-core tiles with a bf16 x read x and their
 * weights by TMA (backends/cuda/mma.cuh's mkc_tma_tile), through the maps
 * the runtime makes for each tensor (exec.cuh's mkc_tmaps): every such
 * call passes x's and the weight's (and a Glu's up weight's); o_proj,
 * whose bf16 x is a view of the attention's rows (a tensor of four axes:
 * no map of its own), passes none; the HIP target, which has no TMA, none.
 */
Test(chunks, bf16_products_read_their_operands_through_tensor_maps, .timeout = 120)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " CHUNK "llama_tiny_d64 --max-chunk 16 "
		 "--few-tokens 0 -o $d/m.cu && grep -c 'mkc_mma_tile<true.*MKC_TMAP(m, bi\\[0\\]), MKC_TMAP(m, "
		 "bi\\[1\\]), ' $d/m.cu; grep -c 'mkc_mma_tile<true, true.*MKC_TMAP(m, "
		 "bi\\[2\\]));' $d/m.cu; grep -c 'mkc_mma_tile<false.*MKC_TMAP' $d/m.cu; "
		 "%s " CHUNK "llama_tiny_d64 --max-chunk 16 --few-tokens 0 --target hip -o $d/m.hip && "
		 "grep -c 'MKC_TMAP(m, bi' $d/m.hip; rm -rf $d",
		 mkc_bin(), mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	/* the q/k/v and down bodies and the Glu; the Glu's up weight; no float32 x; hip none */
	cr_expect_str_eq(out, "4\n1\n0\n0\n", "%s", out);
}

/*
 * On the CUDA target a Glu's tiles past a chunk's first block take twice
 * the weight rows (passes/tile.c's wide_glu: one TMA tile of 256 rows,
 * mma.cuh's mkc_mma_tile), and the file gives each worker the shared
 * memory they need (MKC_MM_WIDE_SMEM); the first block keeps its narrower
 * tiles (all a short prompt runs). The HIP target, without TMA, keeps
 * every block's. Printed: tiles, first row, features a tile.
 */
Test(chunks, a_glu_past_the_first_block_takes_wide_tiles_by_tma, .timeout = 120)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && for t in cuda hip; do %s " CHUNK "llama_tiny_d64 "
		 "--max-chunk 300 --workers 16 --target $t --dump-after=tile -o $d/m.$t 2>/dev/null | "
		 "grep 'layers\\.0\\.mlp\\.gated (Glu)' | sed 's/.*\\[\\([0-9]*\\):[0-9]*,\\([0-9]*\\):"
		 "\\([0-9]*\\)\\]/\\1 \\3 \\2/' | awk '{print $1, $2 - $3}' | uniq -c | "
		 "awk '{print $1, $2, $3}'; done; grep -c 'define MKC_DYN_SMEM MKC_MM_WIDE_SMEM' "
		 "$d/m.cuda; rm -rf $d", mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_expect_str_eq(out, "4 0 64\n2 128 128\n2 256 128\n4 0 64\n4 128 64\n4 256 64\n1\n", "%s",
			 out);
}

/*
 * A launch that runs one plan asks for that plan's own dynamic shared
 * memory (emit.c's MKC_PLAN_SMEM): a chunked file's one-token plan (the
 * last) none, so its step keeps the SM's memory as L1 (bench/RESULTS.md
 * session 39: the 1B chunked file's decode step 3.5% over the plain
 * file's -> 1.8%); a step and generate's loop launch with it. Printed: the
 * first plan's and the one-token plan's, and the launches that use it.
 */
Test(chunks, a_launch_asks_for_its_plans_own_shared_memory, .timeout = 120)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s " CHUNK "llama_tiny_d64 --max-chunk 300 "
		 "--workers 16 --target cuda -o $d/m.cu >/dev/null 2>&1; p=$(sed -n "
		 "'s/^#define MKC_DECODE_PLAN //p' $d/m.cu); grep '^#define MKC_PLAN_SMEM' $d/m.cu | "
		 "sed -E 's/.*[(]plan[)] == 0 [?] ([A-Z_0-9]+) .*[(]plan[)] == '$p' [?] ([A-Z_0-9]+) .*/\\1 \\2/'; "
		 "grep -c 'mkc_kernel<<<MKC_NWORKERS, MKC_THREADS, MKC_PLAN_SMEM(' $d/m.cu; rm -rf $d",
		 mkc_bin());
	mkc_shell(cmd, out, sizeof out);
	cr_expect_str_eq(out, "MKC_MM_WIDE_SMEM 0\n2\n", "%s", out);
}
