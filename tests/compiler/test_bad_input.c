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

/* ------------------------------------------------- models made here */

/* A value_info: name, ONNX element type, and dims as JSON objects. */
#define VI(name, type, dims)                                                             \
	"{\"name\":\"" name "\",\"type\":{\"tensor_type\":{\"elem_type\":" #type             \
	",\"shape\":{\"dim\":[" dims "]}}}}"
#define DV(v) "{\"dim_value\":\"" #v "\"}"
#define DP(s) "{\"dim_param\":\"" s "\"}"
#define OUT(name) "{\"name\":\"" name "\",\"type\":{\"tensor_type\":{\"elem_type\":1}}}"
#define OUT_I64(name) "{\"name\":\"" name "\",\"type\":{\"tensor_type\":{\"elem_type\":7}}}"
#define NODE(op, name, ins, outs, attrs)                                                   \
	"{\"op_type\":\"" op "\",\"name\":\"" name "\",\"input\":[" ins "],\"output\":[" outs \
	"],\"attribute\":[" attrs "]}"
#define A_INT(name, v) "{\"name\":\"" name "\",\"type\":\"INT\",\"i\":\"" #v "\"}"
#define A_INTS(name, ...) "{\"name\":\"" name "\",\"type\":\"INTS\",\"ints\":[" #__VA_ARGS__ "]}"
#define A_FLOAT(name, v) "{\"name\":\"" name "\",\"type\":\"FLOAT\",\"f\":" v "}"
#define A_FLOATS(name, ...) "{\"name\":\"" name "\",\"type\":\"FLOATS\",\"floats\":[" #__VA_ARGS__ "]}"
/* An int64 initializer of rank 1. */
#define I64(name, n, ...)                                                                  \
	"{\"name\":\"" name "\",\"data_type\":7,\"dims\":[\"" #n "\"],\"int64_data\":[" #__VA_ARGS__ "]}"
#define F32(name, dims, ...)                                                               \
	"{\"name\":\"" name "\",\"data_type\":1,\"dims\":[" dims "],\"float_data\":[" #__VA_ARGS__ "]}"

/* dir/m.json: an opset-18 model of these nodes, initializers, inputs and outputs. */
static const char *
model(const char *nodes, const char *inits, const char *inputs, const char *outputs)
{
	static char text[1 << 16];
	snprintf(text, sizeof text,
		 "{\"ir_version\":\"10\",\"graph\":{\"name\":\"g\",\"node\":[%s],\"initializer\":[%s],"
		 "\"input\":[%s],\"output\":[%s]},\"opset_import\":[{\"domain\":\"\",\"version\":\"18\"},"
		 "{\"domain\":\"com.microsoft\",\"version\":\"1\"}]}",
		 nodes, inits, inputs, outputs);
	write_file(at("m.json"), text);
	return at("m.json");
}

/* Compiling the model written last is refused with needle, and leaves no file. */
static void
model_refused(const char *needle)
{
	const char *before = listing();
	refused(mkc_run(at("m.json"), "-o", at("m.c"), NULL), 1, needle, before);
}

/* ------------------------------- 1: malformed graphs end in an error */

Test(bad_input, required_inputs_cannot_be_left_out)
{
	const char *x = VI("x", 1, DV(1) "," DV(2)), *w = F32("w", "\"2\",\"2\"", 1, 2, 3, 4);
	model(NODE("Gemm", "g", "\"\",\"w\"", "\"y\"", ""), w, x, OUT("y"));
	model_refused("node 'g' (Gemm): input 0 is left out");
	model(NODE("MatMul", "mm", "\"x\",\"\"", "\"y\"", ""), w, x, OUT("y"));
	model_refused("node 'mm' (MatMul): input 1 is left out");
	model(NODE("Concat", "c", "\"x\",\"\"", "\"y\"", A_INT("axis", 0)), "", x, OUT("y"));
	model_refused("node 'c' (Concat): input 1 is left out");
}

/* GroupQueryAttention may leave out key and value (packed), never seqlens_k */
Test(bad_input, gqa_seqlens_cannot_be_left_out)
{
#define X3 VI("x", 1, DV(1) "," DV(1) "," DV(2))
	model("{\"op_type\":\"GroupQueryAttention\",\"domain\":\"com.microsoft\",\"name\":\"gqa\","
	      "\"input\":[\"x\",\"x\",\"x\",\"\",\"\",\"\",\"t\"],\"output\":[\"y\"],\"attribute\":["
	      A_INT("num_heads", 1) "," A_INT("kv_num_heads", 1) "]}",
	      "", X3 "," VI("t", 6, ""), OUT("y"));
	model_refused("node 'gqa' (GroupQueryAttention): input 5 is left out");
#undef X3
}

Test(bad_input, attributes_of_the_wrong_type)
{
	const char *x = VI("x", 1, DV(1) "," DV(2));
	model(NODE("Transpose", "t", "\"x\"", "\"y\"", A_FLOATS("perm", 1.0, 0.0)), "", x, OUT("y"));
	model_refused("node 't' (Transpose): attribute 'perm' must be INTS, not FLOATS");
	model(NODE("Constant", "k", "", "\"c\"", A_FLOATS("value_float", 1.0, 2.0)) ","
	      NODE("Add", "a", "\"x\",\"c\"", "\"y\"", ""), "", x, OUT("y"));
	model_refused("node 'k' (Constant): attribute 'value_float' must be FLOAT, not FLOATS");
	model(NODE("Softmax", "s", "\"x\"", "\"y\"", A_FLOAT("axis", "1")), "", x, OUT("y"));
	model_refused("attribute 'axis' must be INT, not FLOAT");
}

Test(bad_input, folding_int64_min_by_minus_one)
{
	model(NODE("Div", "d", "\"a\",\"b\"", "\"y\"", ""),
	      I64("a", 1, "-9223372036854775808") "," I64("b", 1, "-1"), "", OUT_I64("y"));
	model_refused("node 'd' (Div): the integer result of element 0 does not fit in int64");
}

/*
 * The message held in the last n bytes of buf[0..cap) becomes field `field`
 * of a new message, the bytes pre first: pre, the field's key and length,
 * then the old bytes, where they are. Returns the new message's length.
 */
static size_t
wrap(unsigned char *buf, size_t n, size_t cap, unsigned field, const unsigned char *pre,
     size_t npre)
{
	unsigned char head[16];
	size_t h = 0;
	head[h++] = (unsigned char)(field << 3 | 2);
	for (size_t v = n; ; v >>= 7) {
		head[h++] = (unsigned char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
		if (!(v >> 7))
			break;
	}
	cr_assert(npre + h + n <= cap);
	if (npre)
		memcpy(buf + cap - n - h - npre, pre, npre);
	memcpy(buf + cap - n - h, head, h);
	return npre + h + n;
}

Test(bad_input, deeply_nested_subgraphs_are_refused, .timeout = 30)
{
	/*
	 * ModelProto.graph (7) > GraphProto.node (1) > NodeProto.attribute (5) >
	 * AttributeProto.g (6) > GraphProto ..., 20000 levels deep, built from the
	 * inside out at the end of one buffer.
	 */
	size_t cap = 8 << 20, n = 0;
	unsigned char *buf = malloc(cap);
	const unsigned char node_pre[] = {0x22, 0x02, 'I', 'f'};              /* op_type "If" */
	const unsigned char attr_pre[] = {0x0a, 0x01, 'g', 0xa0, 0x01, 0x05};  /* name, type GRAPH */
	for (int level = 0; level < 20000; level++) {
		n = wrap(buf, n, cap, 6, attr_pre, sizeof attr_pre);   /* AttributeProto.g */
		n = wrap(buf, n, cap, 5, node_pre, sizeof node_pre);   /* NodeProto.attribute */
		n = wrap(buf, n, cap, 1, NULL, 0);                     /* GraphProto.node */
	}
	const unsigned char model_pre[] = {0x08, 0x0a};   /* ir_version 10 */
	n = wrap(buf, n, cap, 7, model_pre, sizeof model_pre);
	FILE *f = fopen(at("deep.onnx"), "wb");
	cr_assert_not_null(f);
	fwrite(buf + cap - n, 1, n, f);
	fclose(f);
	free(buf);
	refused(mkc_run(at("deep.onnx"), NULL), 1, "messages nest more than 64 deep", NULL);
}

/* ------------------------------------ 2: dimension arithmetic is checked */

Test(bad_input, dimension_overflow)
{
	/* a dim_param whose number does not fit is a symbol, not a wrapped number */
	model(NODE("Relu", "r", "\"x\"", "\"y\"", ""), "", VI("x", 1, DP("9223372036854775807*3")),
	      OUT("y"));
	mkc_result *r = mkc_run("info", at("m.json"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "symbols    9223372036854775807*3\n"), "%s", r->out);
	model(NODE("Relu", "r", "\"x\"", "\"y\"", ""), "", VI("x", 1, DV(4611686018427387904)),
	      OUT("y"));
	model_refused("input 'x': dimension 0 (4611686018427387904) makes it larger than 2^48 bytes");
	model(NODE("Relu", "r", "\"x\"", "\"y\"", ""), "",
	      VI("x", 1, DV(16777216) "," DV(16777216) "," DV(16777216)), OUT("y"));
	model_refused("input 'x': dimension 1 (16777216) makes it larger than 2^48 bytes");
}

Test(bad_input, folded_arithmetic_overflow)
{
	model(NODE("Mul", "mul", "\"a\",\"b\"", "\"y\"", ""),
	      I64("a", 1, "9223372036854775807") "," I64("b", 1, "2"), "", OUT_I64("y"));
	model_refused("node 'mul' (Mul): the integer result of element 0 does not fit in int64");
	model(NODE("Add", "add", "\"a\",\"b\"", "\"y\"", ""),
	      I64("a", 1, "9223372036854775807") "," I64("b", 1, "1"), "", OUT_I64("y"));
	model_refused("node 'add' (Add): the integer result");
	const char *scalars = "{\"name\":\"s\",\"data_type\":7,\"int64_data\":[\"0\"]},"
			      "{\"name\":\"l\",\"data_type\":7,\"int64_data\":[\"9223372036854775807\"]},"
			      "{\"name\":\"d\",\"data_type\":7,\"int64_data\":[\"1\"]}";
	model(NODE("Range", "range", "\"s\",\"l\",\"d\"", "\"y\"", ""), scalars, "", OUT_I64("y"));
	model_refused("node 'range' (Range): output 'y': dimension 0 (9223372036854775807) makes it "
		      "larger than 2^48 bytes");
	model(NODE("ConstantOfShape", "cos", "\"s\"", "\"y\"", ""), I64("s", 2, "1099511627776", "1099511627776"),
	      "", OUT("y"));
	model_refused("node 'cos' (ConstantOfShape): output 'y': dimension 1 (1099511627776) makes it "
		      "larger than 2^48 bytes");
	model(NODE("Expand", "ex", "\"x\",\"s\"", "\"y\"", ""),
	      I64("s", 3, "1099511627776", "1099511627776", "1"), VI("x", 1, DV(1)), OUT("y"));
	model_refused("node 'ex' (Expand): output 'y'");
}

/* ----------------------- 3: attributes and dims checked against the spec */

Test(bad_input, attributes_and_dims_out_of_range)
{
	const char *x = VI("x", 1, DV(2) "," DV(4));
	model(NODE("Softmax", "sm", "\"x\"", "\"y\"", A_INT("axis", 100)), "", x, OUT("y"));
	model_refused("node 'sm' (Softmax): axis 100 is out of range for rank 2");
	model(NODE("Split", "sp", "\"x\",\"s\"", "\"a\",\"b\"", A_INT("axis", 1)),
	      I64("s", 2, "-4", "8"), x, OUT("a") "," OUT("b"));
	model_refused("node 'sp' (Split): split size 0 is negative");
	model(NODE("Split", "sp", "\"x\",\"s\"", "\"a\",\"b\"", A_INT("axis", 1)),
	      I64("s", 2, "1", "2"), x, OUT("a") "," OUT("b"));
	model_refused("node 'sp' (Split): split sizes do not add up to the axis");
	const char *q = VI("q", 1, DV(1) "," DV(2) "," DV(1) "," DV(8));
	const char *cs = F32("cos", "\"1\",\"1\",\"4\"", 1, 1, 1, 1) "," F32("sin", "\"1\",\"1\",\"4\"", 0, 0, 0, 0);
	model(NODE("RotaryEmbedding", "rope", "\"q\",\"cos\",\"sin\"", "\"y\"",
		   A_INT("rotary_embedding_dim", -4)), cs, q, OUT("y"));
	model_refused("node 'rope' (RotaryEmbedding): num_heads 0 and rotary_embedding_dim -4 must not "
		      "be negative");
	model(NODE("RotaryEmbedding", "rope", "\"q\",\"cos\",\"sin\"", "\"y\"",
		   A_INT("rotary_embedding_dim", 12)), cs, q, OUT("y"));
	model_refused("the rotated size 12 must be even and at most the head size 8");
	model(NODE("Relu", "r", "\"x\"", "\"y\"", ""), "", VI("x", 1, DV(1) "," DP("0-5")), OUT("y"));
	model_refused("input 'x': dimension 1 ('0-5') is negative");
	model(NODE("Relu", "r", "\"x\"", "\"y\"", ""), "", VI("x", 1, DP("4 - n")), OUT("y"));
	model_refused("input 'x': dimension 0 ('4 - n') is negative");
}

/* ------------------------------------- 4: what is accepted compiles */

Test(bad_input, non_finite_and_extreme_literals_compile, .timeout = 120)
{
	const char *x = VI("x", 1, DV(1) "," DV(2)), *w = F32("w", "\"2\",\"2\"", 1, 2, 3, 4);
	model(NODE("Gemm", "g1", "\"x\",\"w\"", "\"h\"", A_FLOAT("alpha", "\"Infinity\"")) ","
	      NODE("Gemm", "g2", "\"h\",\"w\"", "\"k\"", A_FLOAT("alpha", "\"-Infinity\"")) ","
	      NODE("Gemm", "g3", "\"k\",\"w\"", "\"y\"", A_FLOAT("alpha", "\"NaN\"")),
	      w, x, OUT("y"));
	mkc_result *r = mkc_run(at("m.json"), "-o", at("lit.c"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	compiles("lit", "lit_step");
	char text[1 << 16];
	mkc_slurp(at("lit.c"), text, sizeof text);
	cr_assert_null(strstr(text, "inff"));
	/* a start of INT64_MIN reaches the emitted slice code */
	model(NODE("Slice", "sl", "\"x\",\"st\",\"en\"", "\"y\"", ""),
	      I64("st", 1, "-9223372036854775808") "," I64("en", 1, "9223372036854775807"),
	      VI("x", 1, DV(4)), OUT("y"));
	r = mkc_run(at("m.json"), "-o", at("sl.c"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	compiles("sl", "sl_step");
}

Test(bad_input, graphs_without_outputs_are_refused)
{
	model("", "", "", "");
	model_refused("m.json: graph: has no outputs");
	model(NODE("Relu", "r", "\"x\"", "\"y\"", ""), "", VI("x", 1, DV(2)), "");
	model_refused("m.json: graph: has no outputs");
}

/* ------------------------------------------ the fuzzers' crashes, replayed */

/*
 * tests/fuzz/crashes/ holds every input `make fuzz` found that crashed mkc
 * before its fix, as the fuzz target reads it (first byte: 0 for ONNX, 1
 * for ONNX-JSON). Each must now end in an exit status and an error.
 */
Test(bad_input, fuzz_crashes_stay_fixed, .timeout = 120)
{
	DIR *d = opendir("tests/fuzz/crashes");
	cr_assert_not_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char src[512], cmd[1200], out[256];
		snprintf(src, sizeof src, "tests/fuzz/crashes/%s", e->d_name);
		FILE *f = fopen(src, "rb");
		cr_assert_not_null(f, "%s", src);
		int kind = fgetc(f);
		fclose(f);
		const char *model = at(kind & 1 ? "crash.json" : "crash.onnx");
		snprintf(cmd, sizeof cmd, "tail -c +2 '%s' > '%s'", src, model);
		cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
		mkc_result *r = mkc_run(model, "-o", at("crash.c"), NULL);
		cr_assert(r->status == 0 || r->status == 1, "%s: status %d: %s", src, r->status, r->err);
		cr_assert_null(strstr(r->err, "Sanitizer"), "%s: %s", src, r->err);
		cr_assert_null(strstr(r->err, "runtime error"), "%s: %s", src, r->err);
		unlink(model);
		n++;
	}
	closedir(d);
	cr_assert_gt(n, 0);
}

Test(bad_input, names_with_control_bytes_are_refused)
{
	const char *x = VI("x\\n\\u001b[31m", 1, DV(2));
	model(NODE("Relu", "r", "\"x\\n\\u001b[31m\"", "\"y\"", ""), "", x, OUT("y"));
	model_refused("m.json: graph: tensor name 'x\\n\\x1b[31m' holds a control byte");
	model(NODE("Relu", "r\\u0007", "\"x\"", "\"y\"", ""), "", VI("x", 1, DV(2)), OUT("y"));
	model_refused("node 'r\\x07' (Relu): a name, op type, domain or attribute name holds a control");
	mkc_result *r = mkc_run("info", at("m.json"), NULL);
	refused(r, 1, "holds a control byte", NULL);
}

/* Found by hand against the sanitizer build after the fixes above. */
Test(bad_input, extreme_steps_ranges_and_absolutes)
{
	model(NODE("Slice", "sl", "\"x\",\"s\",\"e\",\"a\",\"t\"", "\"y\"", ""),
	      I64("s", 1, "0") "," I64("e", 1, "1") "," I64("a", 1, "0") "," I64("t", 1, "-9223372036854775808"),
	      VI("x", 1, DV(2) "," DV(4)), OUT("y"));
	model_refused("node 'sl' (Slice): a step of -9223372036854775808");
	model(NODE("Range", "r", "\"s\",\"l\",\"d\"", "\"y\"", ""),
	      "{\"name\":\"s\",\"data_type\":1,\"float_data\":[0]},"
	      "{\"name\":\"l\",\"data_type\":1,\"float_data\":[1e30]},"
	      "{\"name\":\"d\",\"data_type\":1,\"float_data\":[1e-30]}", "", OUT("y"));
	model_refused("node 'r' (Range): a float range of 1e+60 elements is too long to fold");
	/* |INT64_MIN| is not folded (it does not fit); the run-time node compiles */
	model(NODE("Abs", "abs", "\"a\"", "\"y\"", ""), I64("a", 1, "-9223372036854775808"), "",
	      OUT_I64("y"));
	mkc_result *r = mkc_run(at("m.json"), "-o", at("abs.c"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert_null(strstr(r->err, "runtime error"), "%s", r->err);
}

/* An optional GroupQueryAttention past may be left out: the count is of slots. */
Test(bad_input, gqa_past_may_be_left_out)
{
#define Q VI("q", 1, DV(1) "," DV(1) "," DV(8))
	model("{\"op_type\":\"GroupQueryAttention\",\"domain\":\"com.microsoft\",\"name\":\"gqa\","
	      "\"input\":[\"q\",\"q\",\"q\",\"\",\"\",\"sl\",\"tl\"],\"output\":[\"y\"],\"attribute\":["
	      A_INT("num_heads", 0) "," A_INT("kv_num_heads", 0) "]}",
	      "", Q "," VI("sl", 6, DV(1)) "," VI("tl", 6, ""), OUT("y"));
	model_refused("node 'gqa' (GroupQueryAttention): num_heads 0 must be a positive multiple");
#undef Q
}

/* Attention's mask and past must fit what the kernel reads (found by hand). */
Test(bad_input, attention_mask_and_past_must_fit)
{
#define QKV VI("q", 1, DV(1) "," DV(2) "," DV(1) "," DV(8)) "," \
	VI("k", 1, DV(1) "," DV(2) "," DV(3) "," DV(8)) "," VI("v", 1, DV(1) "," DV(2) "," DV(3) "," DV(8))
	model("{\"op_type\":\"Attention\",\"name\":\"at\",\"input\":[\"q\",\"k\",\"v\",\"mask\"],"
	      "\"output\":[\"y\"]}", "", QKV "," VI("mask", 1, DV(1) "," DV(1) "," DV(1) "," DV(2)),
	      OUT("y"));
	model_refused("node 'at' (Attention): the mask [1,1,1,2] must broadcast to [batch, heads, "
		      "sequence, total length], [1,2,1,3]");
	model("{\"op_type\":\"Attention\",\"name\":\"at\",\"input\":[\"q\",\"k\",\"v\",\"\",\"pk\",\"pv\"],"
	      "\"output\":[\"y\",\"pko\",\"pvo\"]}", "",
	      QKV "," VI("pk", 1, DV(1) "," DV(2) "," DP("past") "," DV(8)) ","
		  VI("pv", 1, DV(1) "," DV(3) "," DP("past") "," DV(9)),
	      OUT("y") "," OUT("pko") "," OUT("pvo"));
	model_refused("node 'at' (Attention): past_key and past_value must both be");
#undef QKV
}

/* A step of INT64_MAX takes one element; the length arithmetic must not overflow. */
Test(bad_input, slice_steps_near_int64_max)
{
	const char *fmt[] = {"9223372036854775807", "-9223372036854775807"};
	for (int i = 0; i < 2; i++) {
		char inits[512];
		snprintf(inits, sizeof inits,
			 "{\"name\":\"s\",\"data_type\":7,\"dims\":[\"1\"],\"int64_data\":[\"%s\"]},"
			 "{\"name\":\"e\",\"data_type\":7,\"dims\":[\"1\"],\"int64_data\":[\"%s\"]},"
			 "{\"name\":\"a\",\"data_type\":7,\"dims\":[\"1\"],\"int64_data\":[\"0\"]},"
			 "{\"name\":\"t\",\"data_type\":7,\"dims\":[\"1\"],\"int64_data\":[\"%s\"]}",
			 i ? "-1" : "0", i ? "-9223372036854775807" : "9223372036854775807", fmt[i]);
		model(NODE("Slice", "sl", "\"x\",\"s\",\"e\",\"a\",\"t\"", "\"y\"", ""), inits,
		      VI("x", 1, DV(4)), "{\"name\":\"y\",\"type\":{\"tensor_type\":{\"elem_type\":1,"
		      "\"shape\":{\"dim\":[{\"dim_value\":\"1\"}]}}}}");
		mkc_result *r = mkc_run(at("m.json"), NULL);
		cr_assert_eq(r->status, 0, "step %s: %s", fmt[i], r->err);
		cr_assert_null(strstr(r->err, "runtime error"), "%s", r->err);
	}
}

/*
 * RotaryEmbedding's body reads position_ids as [batch, sequence] (or one
 * first position) and cos/sin caches as [positions, rotated / 2]; other
 * shapes compiled at 7959f0e, and a step then read past position_ids
 * (batch 1 of [1, 3]) or the caches. Refused at compile time now, naming
 * the node; the positions themselves are checked at run time.
 */
Test(bad_input, rotary_positions_and_caches_must_have_the_shapes_the_body_reads)
{
#define ROPE(pos, cs)                                                                      \
	"{\"op_type\":\"RotaryEmbedding\",\"domain\":\"com.microsoft\",\"name\":\"rope\","     \
	"\"input\":[\"x\",\"p\",\"c\",\"s\"],\"output\":[\"y\"],\"attribute\":["               \
	A_INT("num_heads", 4) "]}",                                                            \
		"", VI("x", 1, DV(2) "," DV(3) "," DV(32)) "," VI("p", 7, pos) ","             \
		VI("c", 1, cs) "," VI("s", 1, DV(16) "," DV(4)), OUT("y")
	model(ROPE(DV(1) "," DV(3), DV(16) "," DV(4)));
	model_refused("node 'rope' (RotaryEmbedding): the c target cannot compile this node yet: "
		      "position_ids that are neither [batch, sequence] nor one first position");
	model(ROPE(DV(2) "," DV(2), DV(16) "," DV(4)));
	model_refused("position_ids that are neither [batch, sequence] nor one first position");
	model(ROPE(DV(2) "," DV(3), DV(2) "," DV(16) "," DV(4)));
	model_refused("node 'rope' (RotaryEmbedding): the c target cannot compile this node yet: "
		      "cos and sin caches that are not [positions, rotated / 2]");
	model(ROPE(DV(2) "," DV(3), DV(16) "," DV(4)));
	mkc_result *r = mkc_run(at("m.json"), "-o", at("r.c"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	model(ROPE(DV(1), DV(16) "," DV(4)));
	r = mkc_run(at("m.json"), "-o", at("r.c"), NULL);
	cr_assert_eq(r->status, 0, "one first position: %s", r->err);
#undef ROPE
}

/*
 * GroupQueryAttention's body reads seqlens_k as [batch] and
 * total_sequence_length as one value: seqlens_k of [1] for a batch of 2
 * compiled at 7959f0e, and a step read past it. Refused at compile time;
 * the values are checked at run time.
 */
Test(bad_input, gqa_lengths_must_have_the_shapes_the_body_reads)
{
#define GQA(sl, tl)                                                                         \
	"{\"op_type\":\"GroupQueryAttention\",\"domain\":\"com.microsoft\",\"name\":\"gqa\","  \
	"\"input\":[\"q\",\"q\",\"q\",\"\",\"\",\"sl\",\"tl\"],"                                  \
	"\"output\":[\"y\",\"pk\",\"pv\"],\"attribute\":["                                      \
	A_INT("num_heads", 1) "," A_INT("kv_num_heads", 1) "]}",                               \
		"", VI("q", 1, DV(2) "," DV(1) "," DV(8)) "," VI("sl", 6, sl) "," VI("tl", 6, tl), \
		OUT("y") "," OUT("pk") "," OUT("pv")
	model(GQA(DV(1), ""));
	model_refused("node 'gqa' (GroupQueryAttention): the c target cannot compile this node "
		      "yet: seqlens_k that is not [batch]");
	model(GQA(DV(2), DV(2)));
	model_refused("total_sequence_length that is not one value");
	model(GQA(DV(2), ""));
	mkc_result *r = mkc_run(at("m.json"), "-o", at("g.c"), NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
#undef GQA
}
