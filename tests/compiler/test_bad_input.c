/*
 * test_bad_input.c - hostile input, as issue 14 found it: every bad model,
 * file or flag ends in an exit status and one escaped line per error, never
 * in a signal, a sanitizer report, a hang, uncompilable output, or a file
 * left anywhere but the output named by -o. Each test works in a scratch
 * folder of its own and checks that a refused run left it as it was.
 *
 * Models are written here as ONNX-JSON (the reader decodes both forms into
 * the same protobuf structs, so one set of checks serves both) or copied
 * from tests/models and then damaged.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../mkc_run.h"

static char dir[64];

static void
setup(void)
{
	strcpy(dir, "/tmp/mkc_bad_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128], out[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	mkc_shell(cmd, out, sizeof out);
}

TestSuite(bad_input, .init = setup, .fini = teardown, .timeout = 60);

/* dir/name */
static const char *
at(const char *name)
{
	static char paths[8][256];
	static int k;
	char *p = paths[k++ % 8];
	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* The names in dir, sorted, joined by spaces. */
static const char *
listing(void)
{
	static char buf[1024];
	char cmd[128];
	snprintf(cmd, sizeof cmd, "ls -A '%s' | tr '\\n' ' '", dir);
	mkc_shell(cmd, buf, sizeof buf);
	return buf;
}

/*
 * The last mkc run failed cleanly: the status given, an error holding
 * needle on one line, no sanitizer report, and dir holding what it held
 * before (before: listing() then).
 */
static void
refused(const mkc_result *r, int status, const char *needle, const char *before)
{
	cr_assert_eq(r->status, status, "status %d, stderr: %s", r->status, r->err);
	cr_assert(strstr(r->err, needle), "error lacks '%s': %s", needle, r->err);
	cr_assert_null(strstr(r->err, "Sanitizer"), "%s", r->err);
	cr_assert_null(strstr(r->err, "runtime error"), "%s", r->err);
	cr_assert_eq(mkc_lines(r->err), 1, "one line: %s", r->err);
	if (before)
		cr_assert_str_eq(listing(), before, "a refused run changed %s", dir);
}

/* ------------------------------------------------ 5: no file is waited on */

Test(bad_input, fifo_model_is_refused_not_waited_on, .timeout = 20)
{
	cr_assert_eq(mkfifo(at("m.onnx"), 0600), 0);
	cr_assert_eq(mkfifo(at("m.json"), 0600), 0);
	const char *before = listing();
	refused(mkc_run(at("m.onnx"), "-o", at("m.c"), NULL), 1, "is a FIFO", before);
	refused(mkc_run(at("m.json"), "-o", at("m.c"), NULL), 1, "is a FIFO", before);
	refused(mkc_run("info", at("m.onnx"), NULL), 1, "is a FIFO", before);
}

Test(bad_input, fifo_const_and_external_data, .timeout = 20)
{
	cr_assert_eq(mkfifo(at("shape.pb"), 0600), 0);
	refused(mkc_run("tests/models/hand/small_mlp", "--const", "x=" "/dev/null", NULL), 1,
		"not a regular file", NULL);
	char arg[300];
	snprintf(arg, sizeof arg, "x=%s", at("shape.pb"));
	refused(mkc_run("tests/models/hand/small_mlp", "--const", arg, NULL), 1, "is a FIFO", NULL);
	/* a model whose external data file is a FIFO */
	char cmd[512], out[512];
	snprintf(cmd, sizeof cmd, "cp tests/models/hand/small_mlp_ext/model.onnx '%s/'", dir);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert_eq(mkfifo(at("weights.bin"), 0600), 0);
	refused(mkc_run(at("model.onnx"), NULL), 1, "is a FIFO", NULL);
}

/* A copy of a Hugging Face test model in dir/hf, config.json through sed_expr. */
static const char *
hf_copy(const char *model, const char *sed_expr)
{
	char cmd[1024], out[512];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/hf' && cp tests/models/hf/%s/model.safetensors '%s/hf/' && "
		 "sed '%s' tests/models/hf/%s/config.json > '%s/hf/config.json'", dir, model, dir,
		 sed_expr, model, dir);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	return at("hf");
}

Test(bad_input, fifo_in_a_hugging_face_folder, .timeout = 20)
{
	const char *hf = hf_copy("llama_tiny_bf16", "s/x/x/");
	cr_assert_eq(mkc_run(hf, NULL)->status, 0, "the copy compiles: %s", mkc_run(hf, NULL)->err);
	unlink(at("hf/model.safetensors"));
	cr_assert_eq(mkfifo(at("hf/model.safetensors"), 0600), 0);
	refused(mkc_run(hf, NULL), 1, "is a FIFO", NULL);
	unlink(at("hf/config.json"));
	cr_assert_eq(mkfifo(at("hf/config.json"), 0600), 0);
	refused(mkc_run(hf, NULL), 1, "is a FIFO", NULL);
}

Test(bad_input, config_sizes_are_bounded_by_the_weights, .timeout = 20)
{
	const char *hf = hf_copy("llama_tiny_bf16",
				 "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": 1000000000/");
	refused(mkc_run(hf, NULL), 1, "field 'num_hidden_layers' is 1000000000, but the weights hold", NULL);
	hf = hf_copy("llama_tiny_bf16", "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": 3/");
	refused(mkc_run(hf, NULL), 1, "model.layers.2.self_attn.q_proj.weight", NULL);
	hf = hf_copy("llama_tiny_bf16", "s/\"vocab_size\": 256/\"vocab_size\": 2000000000/");
	refused(mkc_run(hf, NULL), 1, "tensor 'model.embed_tokens.weight' has shape [256,64], but "
		"config.json implies [2000000000,64]", NULL);
}

/* -------------------------------------- 6: output files, and only those */

Test(bad_input, header_never_overwrites_the_source)
{
	write_file(at("m.h"), "keep\n");
	const char *before = listing();
	refused(mkc_run("tests/models/hand/small_mlp", "-o", at("m.h"), "--target", "c", NULL), 1,
		"would be the same file", before);
	char text[16];
	mkc_slurp(at("m.h"), text, sizeof text);
	cr_assert_str_eq(text, "keep\n");
	/* the same file by two names */
	cr_assert_eq(link(at("m.h"), at("n.c")), 0);
	cr_assert_eq(link(at("m.h"), at("n.h")), 0);
	before = listing();
	char n[300];
	snprintf(n, sizeof n, "%s/n.c", dir);
	refused(mkc_run("tests/models/hand/small_mlp", "-o", n, NULL), 1, "would be the same file",
		before);
}

Test(bad_input, nothing_is_left_when_the_header_cannot_be_written)
{
	cr_assert_eq(mkdir(at("x.h"), 0700), 0);
	const char *before = listing();
	refused(mkc_run("tests/models/hand/small_mlp", "-o", at("x.c"), NULL), 1,
		"is not a regular file", before);
}

Test(bad_input, only_regular_files_are_replaced)
{
	cr_assert_eq(symlink("/dev/null", at("null.c")), 0);
	cr_assert_eq(mkfifo(at("fifo.c"), 0600), 0);
	const char *before = listing();
	refused(mkc_run("tests/models/hand/small_mlp", "-o", at("null.c"), NULL), 1,
		"not a regular file", before);
	refused(mkc_run("tests/models/hand/small_mlp", "-o", at("fifo.c"), NULL), 1,
		"not a regular file", before);
	struct stat st;
	cr_assert_eq(lstat(at("null.c"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
	/* a failure after the passes leaves no temporary file either */
	refused(mkc_run("tests/models/hand/matmul_mismatch.onnx", "-o", at("u.c"), NULL), 1,
		"inner dimensions", before);
}

/* ------------------------------------------ 7: exit status and messages */

Test(bad_input, usage_errors_are_one_line)
{
	const char *m = "tests/models/hand/small_mlp";
	refused(mkc_run(NULL), 2, "no model given", NULL);
	refused(mkc_run(m, "--frobnicate", NULL), 2, "unknown option", NULL);
	refused(mkc_run(m, "--workers", NULL), 2, "--workers needs", NULL);
	refused(mkc_run(m, "-o", NULL), 2, "-o needs a value", NULL);
	refused(mkc_run(m, "--bad\n\033[31m", NULL), 2, "'--bad\\x0a\\x1b[31m'", NULL);
}

Test(bad_input, numeric_flags_are_parsed_strictly)
{
	const char *m = "tests/models/hand/small_mlp";
	const char *bad[] = {" 8", "8 ", "+8", "-8", "8x", "0x10", "", "99999999999999999999",
			     "9223372036854775807", "1e3"};
	const char *flags[] = {"--workers", "--max-dim", "--max-seq", "--embed-limit"};
	for (size_t f = 0; f < sizeof flags / sizeof *flags; f++)
		for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
			refused(mkc_run(m, flags[f], bad[i], NULL), 2, flags[f], NULL);
	cr_assert_eq(mkc_run(m, "--workers", "4", "--max-dim", "64", "--embed-limit", "0", NULL)->status,
		     0);
}

Test(bad_input, config_errors_fail_the_run)
{
	const char *hf = hf_copy("llama_tiny_bf16",
				 "s/\"transformers_version\": \"5.17.0\"/\"transformers_version\": 5/");
	refused(mkc_run(hf, "-o", at("m.c"), NULL), 1, "field 'transformers_version' must be a string",
		NULL);
	struct stat st;
	cr_assert_neq(stat(at("m.c"), &st), 0);
}

Test(bad_input, control_bytes_in_paths_are_escaped)
{
	refused(mkc_run("no\nsuch\033.onnx", NULL), 1, "no\\nsuch\\x1b.onnx: cannot read", NULL);
}

/* --------------------------------------- 4: names in the emitted code */

Test(bad_input, names_must_be_free_identifiers)
{
	const char *m = "tests/models/hand/small_mlp";
	const char *bad[] = {"float", "int", "class", "out", "opts", "m", "stat", "mkc_x", "_x",
			     "1x", "a-b", "a b", "size_t", "x\n", "pthread_create", ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		refused(mkc_run(m, "-o", at("m.c"), "--name", bad[i], NULL), 2, "--name '", NULL);
	cr_assert_str_eq(listing(), "");
}

/* Compiles dir/stem.c with warnings as errors; the header must declare want. */
static void
compiles(const char *stem, const char *want)
{
	char cmd[1024], out[8192];
	snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Wextra -Werror -c -o '%s/%s.o' '%s/%s.c' && "
		 "grep -c '%s' '%s/%s.h'", dir, stem, dir, stem, want, dir, stem);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s.c: %s", stem, out);
}

Test(bad_input, colliding_stems_are_made_safe, .timeout = 120)
{
	const char *m = "tests/models/hand/small_mlp";
	const char *stems[][2] = {{"out", "out_model_step"}, {"float", "float_model_step"},
				  {"opts", "opts_model_step"}, {"mkc_x", "m_mkc_x_model_step"}};
	for (size_t i = 0; i < sizeof stems / sizeof *stems; i++) {
		char path[300];
		snprintf(path, sizeof path, "%s/%s.c", dir, stems[i][0]);
		mkc_result *r = mkc_run(m, "-o", path, NULL);
		cr_assert_eq(r->status, 0, "%s: %s", path, r->err);
		compiles(stems[i][0], stems[i][1]);
	}
}

Test(bad_input, model_paths_cannot_break_the_comments, .timeout = 60)
{
	char cmd[512], out[512];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/a*/b' && cp tests/models/hand/small_mlp/model.onnx "
		 "'%s/a*/b/m.onnx'", dir, dir);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	mkc_result *r = mkc_run(at("a*/b/m.onnx"), "-o", at("mlp.c"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	compiles("mlp", "mlp_step");
}
