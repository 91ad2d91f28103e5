/*
 * test_cli.c - the mkc command as a user runs it: exit status, what goes to
 * stdout and stderr, and that a failed compile writes no file. The binary
 * comes from $MKC (make test sets it), else build/mkc (tests/mkc_run.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../mkc_run.h"
#include "graph.h"

#define MODEL(p) "tests/models/" p

Test(cli, help_and_version)
{
	mkc_result *r = mkc_run("--help", NULL);
	cr_assert_eq(r->status, 0);
	cr_assert(strstr(r->out, "usage: mkc MODEL"));
	cr_assert(strstr(r->out, "--dump-after=PASS"));
	r = mkc_run("--version", NULL);
	cr_assert_eq(r->status, 0);
	cr_assert_str_eq(r->out, "mkc " MKC_VERSION "\n");
}

/*
 * Without -o the target's emitter still sees every node (into a scratch
 * folder it removes): a node the target cannot compile fails the command,
 * as with -o, and the summary names the target that took the rest.
 */
Test(cli, no_output_still_checks_the_target)
{
	mkc_result *r = mkc_run(MODEL("hand/storage.onnx"), NULL);
	cr_assert_eq(r->status, 1, "%s", r->err);
	/* (its float16 outputs, constants, are written as the model has them) */
	cr_assert(strstr(r->err, "tensor 'w_bf16_raw_out' is bfloat16, which the c target does not "
				 "handle yet"), "%s", r->err);
	r = mkc_run(MODEL("hand/small_mlp/model.onnx"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->err, "schedule verified; the c target takes every node; no output "
				 "requested"), "%s", r->err);
	r = mkc_run(MODEL("hand/small_mlp/model.onnx"), "--target", "cuda", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->err, "the cuda target takes every node"), "%s", r->err);
}

Test(cli, bad_command_lines)
{
	cr_assert_eq(mkc_run(NULL)->status, 2);
	mkc_result *r = mkc_run("--frobnicate", MODEL("hand/storage.onnx"), NULL);
	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "unknown option '--frobnicate'"), "%s", r->err);
	r = mkc_run(MODEL("hand/storage.onnx"), "-o", "/tmp/x.weird", NULL);
	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "cannot tell the target"), "%s", r->err);
	r = mkc_run(MODEL("hand/storage.onnx"), "--dump-after=nopass", NULL);
	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "no pass is called 'nopass'"), "%s", r->err);
	r = mkc_run(MODEL("hand/storage.onnx"), "--target", "vulkan", NULL);
	cr_assert_eq(r->status, 2);
	/* --arch: the hip target's, one of its architectures, and nothing written otherwise */
	r = mkc_run(MODEL("hand/storage.onnx"), "-o", "/tmp/mkc_cli_arch.cu", "--arch", "gfx90a", NULL);
	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "--arch is for the hip target (gfx942 or gfx90a), not for 'cuda'"),
		  "%s", r->err);
	r = mkc_run(MODEL("hand/storage.onnx"), "-o", "/tmp/mkc_cli_arch.hip", "--arch", "gfx1100", NULL);
	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "--arch must be gfx942 or gfx90a, not 'gfx1100'"), "%s", r->err);
	r = mkc_run(MODEL("hand/storage.onnx"), "--arch", "gfx942", NULL);
	cr_assert_eq(r->status, 2);
	cr_assert(strstr(r->err, "--arch needs a hip output"), "%s", r->err);
	struct stat st;
	cr_assert_neq(stat("/tmp/mkc_cli_arch.hip", &st), 0, "a refused command wrote a file");
	/* --kv bf16 is the caches' type when the model keeps them: --kv-io keeps none */
	r = mkc_run(MODEL("tiny_llama_decode_op18/model.onnx"), "--kv-io", "--kv", "bf16", NULL);
	cr_assert_eq(r->status, 2, "%s", r->err);
	cr_assert(strstr(r->err, "--kv bf16 is the type of the caches the model keeps as state"),
		  "%s", r->err);
	r = mkc_run(MODEL("tiny_llama_decode_op18/model.onnx"), "--kv-io", "--kv", "bf16", "--kv",
		    "f32", NULL);
	cr_assert_eq(r->status, 0, "the last --kv counts: %s", r->err);
	r = mkc_run("test", "--kv-io", "--kv", "bf16", MODEL("tiny_llama_decode_op18"), NULL);
	cr_assert_eq(r->status, 2, "%s", r->err);
	cr_assert(strstr(r->err, "--kv-io keeps none"), "%s", r->err);
}

Test(cli, info_llama_op18)
{
	mkc_result *r = mkc_run("info", MODEL("tiny_llama_decode_op18/model.onnx"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "nodes      180\n"), "%s", r->out);
	cr_assert(strstr(r->out, "symbols    past_len\n"));
	cr_assert(strstr(r->out, "opsets     ai.onnx 18"));
	cr_assert(strstr(r->out, "float32  [1,2,past_len,32]"));
	cr_assert(strstr(r->out, "present.1.value                  float32  [1,2,past_len+1,32]"),
		  "%s", r->out);
	cr_assert(strstr(r->out, "logits                           float32  [1,1,1024]"));
	cr_assert(strstr(r->out, "Mul                                 26  supported"));
	cr_assert_null(strstr(r->out, "NOT SUPPORTED"));
}

Test(cli, info_llama_op23)
{
	mkc_result *r = mkc_run("info", MODEL("tiny_llama_decode_op23/model.onnx"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "nodes      96\n"));
	cr_assert(strstr(r->out, "opsets     ai.onnx 23"));
	cr_assert(strstr(r->out, "Attention                            2  supported"), "%s", r->out);
	cr_assert(strstr(r->out, "present.0.key                    float32  [1,2,past_len+1,32]"));
}

Test(cli, info_lists_unsupported_nodes)
{
	mkc_result *r = mkc_run("info", MODEL("hand/unknown_op.onnx"), NULL);
	cr_assert_eq(r->status, 1);
	cr_assert(strstr(r->out, "FrobnicateA                          1  NOT SUPPORTED"), "%s", r->out);
	cr_assert(strstr(r->out, "unsupported nodes\n  frob_a (FrobnicateA)\n  zork_1 (Zork)\n"),
		  "%s", r->out);
}

Test(cli, compile_runs_the_passes)
{
	mkc_result *r = mkc_run(MODEL("tiny_llama_decode_op18"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->err, "tasks,") && strstr(r->err, "schedule verified"), "%s", r->err);
	r = mkc_run(MODEL("tiny_llama_decode_op23/model.onnx"), "--dump-after=infer", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "input  past_key_values.0.key: float32[1,2,past_len,32]\n"));
	cr_assert(strstr(r->out, "-> add_16: int64[] = {past_len+1} (folded)\n"), "%s", r->out);
	cr_assert(strstr(r->out, "output logits: float32[1,1,1024]\n"));
}

Test(cli, dump_is_stable)
{
	static char first[65536];
	mkc_result *r = mkc_run(MODEL("tiny_llama_decode_op18/model.onnx"), "--dump-after=dce", NULL);
	cr_assert_eq(r->status, 0);
	strcpy(first, r->out);
	r = mkc_run(MODEL("tiny_llama_decode_op18/model.onnx"), "--dump-after=dce", NULL);
	cr_assert_str_eq(r->out, first);
	cr_assert_null(strstr(first, "(folded)"), "dce removes folded nodes");
}

/*
 * Bad input: one error line naming the file (and node), exit 1, and no
 * output file, not even an empty one.
 */
static void
expect_clean_failure(const char *model, const char *needle, int nlines)
{
	char out[] = "/tmp/mkc_cli_XXXXXX";
	cr_assert_not_null(mkdtemp(out));
	char path[64];
	snprintf(path, sizeof path, "%s/llama.cu", out);
	mkc_result *r = mkc_run(model, "-o", path, NULL);
	cr_assert_eq(r->status, 1, "%s: status %d, stderr %s", model, r->status, r->err);
	cr_assert(strstr(r->err, model), "%s: error does not name the file: %s", model, r->err);
	cr_assert(strstr(r->err, needle), "%s: error lacks '%s': %s", model, needle, r->err);
	cr_assert_eq(mkc_lines(r->err), nlines, "%s: %s", model, r->err);
	struct stat st;
	cr_assert_neq(stat(path, &st), 0, "%s: an output file was written", model);
	rmdir(out);
}

Test(cli, bad_inputs)
{
	expect_clean_failure(MODEL("hand/missing.onnx"), "No such file", 1);
	expect_clean_failure(MODEL("hand/empty.onnx"), "the file is empty", 1);
	expect_clean_failure(MODEL("hand/truncated.onnx"), "malformed or truncated", 1);
	expect_clean_failure(MODEL("hand/random.onnx"), "not an ONNX model", 1);
	expect_clean_failure(MODEL("hand/unknown_op.onnx"), "node 'frob_a' (FrobnicateA)", 2);
	expect_clean_failure(MODEL("hand/unknown_op.onnx"), "node 'zork_1' (Zork)", 2);
	expect_clean_failure(MODEL("hand/dangling.onnx"),
			     "node 'uses_ghost' (Add): input 'ghost' is not", 1);
	expect_clean_failure(MODEL("hand/cycle.onnx"), "cycle through 2 node(s): 'cyc_a', 'cyc_b'", 1);
	expect_clean_failure(MODEL("hand/dup_output.onnx"), "writes 'dup', which node 'w1' writes too", 1);
	expect_clean_failure(MODEL("hand/ext_missing.onnx"), "nope.bin", 1);
	expect_clean_failure(MODEL("hand/ext_short.onnx"), "holds 20 bytes, too short for 64", 1);
	expect_clean_failure(MODEL("hand/ext_escape.onnx"), "leaves the model's folder", 1);
	expect_clean_failure(MODEL("hand/ext_abs.onnx"), "is an absolute path", 1);
	expect_clean_failure(MODEL("hand/matmul_mismatch.onnx"),
			     "node 'bad_matmul' (MatMul): inner dimensions 256 and 512 differ", 1);
	expect_clean_failure(MODEL("hand/symbolic_product.onnx"), "node 'reshape_w' (Reshape)", 1);
}

Test(cli, hip_output_and_header_are_written)
{
	/* the HIP target is written (compiled in test_hip.c, never run: no AMD GPU) */
	char dir[] = "/tmp/mkc_cli_hip_XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[64], h[64];
	snprintf(path, sizeof path, "%s/llama.hip", dir);
	snprintf(h, sizeof h, "%s/llama.h", dir);
	mkc_result *r = mkc_run(MODEL("tiny_llama_decode_op18/model.onnx"), "-o", path, NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(stat(h, &st), 0);
	/* for gfx942 unless --arch says otherwise: the guard names it */
	char cmd[256], text[512];
	snprintf(cmd, sizeof cmd, "grep -c 'defined(__gfx942__)' %s", path);
	cr_assert_eq(mkc_shell(cmd, text, sizeof text), 0, "no gfx942 guard in %s", path);
	r = mkc_run(MODEL("tiny_llama_decode_op18/model.onnx"), "-o", path, "--arch", "gfx90a", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	snprintf(cmd, sizeof cmd, "grep -c 'defined(__gfx90a__)' %s && ! grep -q '__gfx942__' %s", path,
		 path);
	cr_assert_eq(mkc_shell(cmd, text, sizeof text), 0, "--arch gfx90a: %s", text);
	unlink(path);
	unlink(h);
	rmdir(dir);
}

Test(cli, output_and_header_are_written)
{
	char dir[] = "/tmp/mkc_cli_out_XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char c[64], h[64];
	snprintf(c, sizeof c, "%s/llama.c", dir);
	snprintf(h, sizeof h, "%s/llama.h", dir);
	mkc_result *r = mkc_run(MODEL("tiny_llama_decode_op23/model.onnx"), "-o", c, NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	struct stat st;
	cr_assert_eq(stat(c, &st), 0);
	mode_t mask = umask(0);
	umask(mask);
	cr_assert_eq(st.st_mode & 0777, 0666 & ~mask, "mode %o", st.st_mode & 0777);
	cr_assert_eq(stat(h, &st), 0);
	FILE *f = fopen(h, "r");
	char text[8192];
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	cr_assert(strstr(text, "int llama_step(llama *m,"), "%s", text);
	cr_assert(strstr(text, "#ifndef llama_H"), "%s", text);
	/* a bad place to write leaves nothing behind and says why */
	char bad[80];
	snprintf(bad, sizeof bad, "%s/missing/llama.c", dir);
	r = mkc_run(MODEL("tiny_llama_decode_op23/model.onnx"), "-o", bad, NULL);
	cr_assert_eq(r->status, 1);
	cr_assert(strstr(r->err, "cannot write"), "%s", r->err);
	unlink(c);
	unlink(h);
	cr_assert_eq(rmdir(dir), 0, "only the two files were written");
}

Test(cli, const_binds_a_shape_input)
{
	const char *dir = "/usr/share/libonnx-testdata/data/node/test_reshape_reordered_all_dims";
	char model[256], shape[256];
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	snprintf(shape, sizeof shape, "shape=%s/test_data_set_0/input_1.pb", dir);
	mkc_result *r = mkc_run(model, NULL);
	cr_assert_eq(r->status, 1, "without --const the shape is unknown");
	cr_assert(strstr(r->err, "must be an integer tensor known at compile time"), "%s", r->err);
	r = mkc_run(model, "--const", shape, NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	r = mkc_run(model, "--const", "nosuch=x.pb", NULL);
	cr_assert_eq(r->status, 1);
	cr_assert(strstr(r->err, "x.pb: cannot read"), "%s", r->err);
	snprintf(shape, sizeof shape, "data=%s/test_data_set_0/input_1.pb", dir);
	r = mkc_run(model, "--const", shape, NULL);
	cr_assert_eq(r->status, 1);
	cr_assert(strstr(r->err, "input 'data' is float32 of rank 3; the value given is int64 of rank 1"),
		  "%s", r->err);
	r = mkc_run(model, "--const", "shape", NULL);
	cr_assert_eq(r->status, 2);
}

Test(cli, plan_dumps_as_text_and_dot)
{
	mkc_result *r = mkc_run(MODEL("hand/small_mlp"), "--dump-after=verify", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	/* mm1's 16 columns are spread over workers, 8 a tile at least */
	cr_assert(strstr(r->out, "task 0 mm1 (MatMul) tile 0/2"), "%s", r->out);
	cr_assert(strstr(r->out, "event 0 threshold 2 consumers 1 producers 0,1"), "%s", r->out);
	r = mkc_run(MODEL("hand/small_mlp"), "--dump-after=deps", "--dump-format", "dot", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "digraph plan {"), "%s", r->out);
	cr_assert(strstr(r->out, "t0 -> t2;") && strstr(r->out, "t1 -> t2;"), "%s", r->out);
	r = mkc_run(MODEL("hand/small_mlp"), "--dump-format", "svg", NULL);
	cr_assert_eq(r->status, 2);
}

Test(cli, no_reuse_option)
{
	mkc_result *r = mkc_run(MODEL("tiny_llama_decode_op23"), "--no-reuse", "-v", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->err, "0 reuse space"), "%s", r->err);
	r = mkc_run(MODEL("tiny_llama_decode_op23"), "-v", NULL);
	cr_assert_null(strstr(r->err, " 0 reuse space"), "%s", r->err);
}
