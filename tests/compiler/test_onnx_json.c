/*
 * test_onnx_json.c - the ONNX-JSON frontend. Every JSON twin written by
 * tests/models/gen_models.py (and the Llama export's model.json) loads to the
 * same graph IR as its binary model, field by field and byte by byte; the
 * other spellings protobuf's JSON parser takes read the same; bad files fail
 * with one error naming the file and the field; no malformed input crashes
 * the reader; and `mkc info` says the same for both forms.
 *
 * Paths are relative to the repository root, where `make test` runs the
 * test binary.
 */
#include "frontend.h"
#include "passes.h"

#include "../mkc_run.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define HAND(f) "tests/models/hand/" f
#define TWIN(f) HAND("json/" f)
#define BAD(f) HAND("json_bad/" f)
#define LLAMA18 "tests/models/tiny_llama_decode_op18/"

static mkc_ctx *ctx;
static char tmp_path[64];   /* a scratch .json file, removed after each test */

static void
setup(void)
{
	ctx = mkc_ctx_create();
	strcpy(tmp_path, "/tmp/mkc_json_XXXXXX.json");
	int fd = mkstemps(tmp_path, 5);
	cr_assert(fd >= 0);
	close(fd);
}

static void
teardown(void)
{
	unlink(tmp_path);
	mkc_ctx_destroy(ctx);
}

static const char *
errors(void)
{
	return ctx->errors ? ctx->errors : "(no errors)";
}

/* ------------------------------------------------ the same graph IR */

static const char *
name_of(const mkc_tensor *t)
{
	return t ? t->name : "";
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void
same_dim(const char *what, int i, mkc_dim a, mkc_dim b)
{
	cr_expect(mkc_dim_eq(a, b), "%s: dim %d differs: %lld+%lld*s%d+%lld*s%d vs "
		  "%lld+%lld*s%d+%lld*s%d", what, i, (long long)a.c, (long long)a.k[0], a.sym[0],
		  (long long)a.k[1], a.sym[1], (long long)b.c, (long long)b.k[0], b.sym[0],
		  (long long)b.k[1], b.sym[1]);
}

static void
same_tensor(const mkc_tensor *a, const mkc_tensor *b)
{
	const char *w = a->name;
	cr_assert_str_eq(a->name, b->name);
	cr_expect_eq(a->kind, b->kind, "'%s': kind", w);
	cr_expect_eq(a->dtype, b->dtype, "'%s': dtype", w);
	cr_expect_eq(a->id, b->id, "'%s': id", w);
	cr_expect_eq(a->nconsumers, b->nconsumers, "'%s': consumers", w);
	cr_expect_str_eq(a->producer ? a->producer->name : "", b->producer ? b->producer->name : "",
			 "'%s': producer", w);
	cr_assert_eq(a->rank, b->rank, "'%s': rank", w);
	for (int i = 0; i < a->rank; i++)
		same_dim(w, i, a->shape[i], b->shape[i]);
	cr_assert_eq(a->nbytes, b->nbytes, "'%s': %zu bytes vs %zu", w, a->nbytes, b->nbytes);
	cr_assert_eq(!a->data, !b->data, "'%s': bytes in one form only", w);
	cr_expect(!a->data || memcmp(a->data, b->data, a->nbytes) == 0, "'%s': bytes differ", w);
	cr_assert_eq(!a->ext_file, !b->ext_file, "'%s': external in one form only", w);
	if (a->ext_file)
		cr_expect_str_eq(base_name(a->ext_file), base_name(b->ext_file), "'%s'", w);
	cr_expect_eq(a->ext_offset, b->ext_offset, "'%s': external offset", w);
	cr_assert_eq(a->nsymval, b->nsymval, "'%s': folded values", w);
	for (int64_t i = 0; i < a->nsymval; i++)
		same_dim(w, (int)i, a->symval[i], b->symval[i]);
}

static void
same_subgraph(const mkc_subgraph *a, const mkc_subgraph *b)
{
	cr_assert_eq(!a, !b);
	if (a) {
		cr_expect_str_eq(a->name, b->name);
		cr_expect(a->nnodes == b->nnodes && a->ninputs == b->ninputs &&
			  a->noutputs == b->noutputs, "subgraph '%s' differs", a->name);
	}
}

static void
same_list(const char *what, const void *a, const void *b, size_t n)
{
	cr_assert_eq(!a, !b, "%s: a list in one form only", what);
	cr_expect(!a || memcmp(a, b, n) == 0, "%s: values differ", what);
}

static void
same_attr(const mkc_node *n, const mkc_attr *a, const mkc_attr *b)
{
	char w[256];
	snprintf(w, sizeof w, "node '%s' attribute '%s'", n->name, a->name);
	cr_assert_str_eq(a->name, b->name, "node '%s'", n->name);
	cr_assert_eq(a->type, b->type, "%s: type", w);
	cr_assert_eq(a->n, b->n, "%s: count", w);
	cr_expect_eq(memcmp(&a->f, &b->f, sizeof a->f), 0, "%s: f", w);
	cr_expect_eq(a->i, b->i, "%s: i", w);
	cr_assert_eq(a->slen, b->slen, "%s: s", w);
	same_list(w, a->s, b->s, a->slen);
	same_list(w, a->floats, b->floats, (size_t)a->n * sizeof(float));
	same_list(w, a->ints, b->ints, (size_t)a->n * sizeof(int64_t));
	cr_assert_eq(!a->t, !b->t, "%s: t", w);
	if (a->t)
		same_tensor(a->t, b->t);
	same_subgraph(a->g, b->g);
	for (int i = 0; a->strings && i < a->n; i++)
		cr_expect_str_eq(a->strings[i], b->strings[i], "%s", w);
	for (int i = 0; a->tensors && i < a->n; i++)
		same_tensor(a->tensors[i], b->tensors[i]);
	for (int i = 0; a->graphs && i < a->n; i++)
		same_subgraph(a->graphs[i], b->graphs[i]);
}

static void
same_node(const mkc_node *a, const mkc_node *b)
{
	cr_assert_str_eq(a->name, b->name, "node %d", a->id);
	cr_expect_str_eq(a->op_type, b->op_type, "node '%s'", a->name);
	cr_expect_str_eq(a->domain, b->domain, "node '%s'", a->name);
	cr_expect(a->op == b->op && a->id == b->id && a->dead == b->dead, "node '%s'", a->name);
	cr_assert(a->nin == b->nin && a->nout == b->nout && a->nattr == b->nattr,
		  "node '%s': arity", a->name);
	for (int i = 0; i < a->nin; i++)
		cr_expect_str_eq(name_of(a->in[i]), name_of(b->in[i]), "node '%s' input %d", a->name, i);
	for (int i = 0; i < a->nout; i++)
		cr_expect_str_eq(name_of(a->out[i]), name_of(b->out[i]), "node '%s' output %d", a->name, i);
	for (int i = 0; i < a->nattr; i++)
		same_attr(a, &a->attr[i], &b->attr[i]);
}

static void
same_names(const char *what, const mkc_vec *a, const mkc_vec *b)
{
	cr_assert_eq(a->n, b->n, "%s: %d vs %d", what, a->n, b->n);
	for (int i = 0; i < a->n; i++)
		cr_expect_str_eq(((mkc_tensor *)a->v[i])->name, ((mkc_tensor *)b->v[i])->name,
				 "%s %d", what, i);
}

static void
same_graph(const mkc_graph *a, const mkc_graph *b)
{
	cr_expect_str_eq(a->name, b->name);
	cr_expect_eq(a->ir_version, b->ir_version);
	cr_expect_str_eq(a->producer, b->producer);
	cr_assert_eq(a->nopsets, b->nopsets);
	for (int i = 0; i < a->nopsets; i++) {
		cr_expect_str_eq(a->opsets[i].domain, b->opsets[i].domain);
		cr_expect_eq(a->opsets[i].version, b->opsets[i].version);
	}
	cr_assert_eq(a->syms.n, b->syms.n, "symbols");
	for (int i = 0; i < a->syms.n; i++)
		cr_expect_str_eq(MKC_SYM(a, i), MKC_SYM(b, i));
	cr_assert_eq(a->tensors.n, b->tensors.n, "tensors: %d vs %d", a->tensors.n, b->tensors.n);
	for (int i = 0; i < a->tensors.n; i++)
		same_tensor(MKC_TENSOR(a, i), MKC_TENSOR(b, i));
	same_names("input", &a->inputs, &b->inputs);
	same_names("output", &a->outputs, &b->outputs);
	cr_assert_eq(a->nodes.n, b->nodes.n, "nodes: %d vs %d", a->nodes.n, b->nodes.n);
	for (int i = 0; i < a->nodes.n; i++)
		same_node(MKC_NODE(a, i), MKC_NODE(b, i));
}

static mkc_graph *
load_json(const char *path)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s does not load: %s", path, errors());
	cr_expect_str_eq(g->path, path);
	return g;
}

static void
expect_twins(const char *json, const char *onnx)
{
	mkc_graph *b = mkc_onnx_load(ctx, onnx);
	cr_assert_not_null(b, "%s: %s", onnx, errors());
	same_graph(load_json(json), b);
	cr_expect_eq(ctx->nerrors, 0, "%s", errors());
}

TestSuite(json_twins, .init = setup, .fini = teardown);

Test(json_twins, llama_op18)
{
	mkc_graph *a = load_json(LLAMA18 "model.json");
	mkc_graph *b = mkc_onnx_load(ctx, LLAMA18 "model.onnx");
	cr_assert_not_null(b, "%s", errors());
	cr_expect_eq(a->nodes.n, 180);
	same_graph(a, b);
	/* and after inference and folding, which read every weight's bytes */
	cr_assert_eq(mkc_pass_infer(a), 0, "%s", errors());
	cr_assert_eq(mkc_pass_infer(b), 0, "%s", errors());
	same_graph(a, b);
}

Test(json_twins, external_data_next_to_the_json)
{
	mkc_tensor *t = mkc_graph_find(load_json(TWIN("external.json")), "ext_b");
	cr_assert_not_null(t);
	cr_expect_str_eq(t->ext_file, TWIN("external.bin"));
	cr_expect_eq(t->ext_offset, 16);
}

/* the hand-made twins, in every spelling gen_models.py writes */
static const struct {
	const char *json, *onnx;
} twins[] = {
	{TWIN("storage.json"), HAND("storage.onnx")},
	{TWIN("storage_camel.json"), HAND("storage.onnx")},
	{TWIN("external.json"), HAND("external.onnx")},
	{TWIN("external_numbers.json"), HAND("external.onnx")},
	{TWIN("attrs.json"), HAND("attrs.onnx")},
	{TWIN("attrs_numbers.json"), HAND("attrs.onnx")},
	{TWIN("constants.json"), HAND("constants.onnx")},
	{TWIN("symbolic.json"), HAND("symbolic.onnx")},
	{TWIN("small_mlp.json"), HAND("small_mlp/model.onnx")},
};

/* indices, not pointers: Criterion copies parameters into each test's process */
ParameterizedTestParameters(json_twins, hand)
{
	static int index[sizeof twins / sizeof *twins];
	for (size_t i = 0; i < sizeof index / sizeof *index; i++)
		index[i] = (int)i;
	return cr_make_param_array(int, index, sizeof index / sizeof *index);
}

ParameterizedTest(int *i, json_twins, hand)
{
	expect_twins(twins[*i].json, twins[*i].onnx);
}

/* -------------------------------------------------------- bad files */

/* One error, naming the file and holding every needle. */
static void
expect_one_error(const char *path, const char *const *needles, int n)
{
	mkc_ctx_clear_errors(ctx);
	cr_expect_null(mkc_load_model(ctx, path), "%s loaded", path);
	cr_expect_eq(ctx->nerrors, 1, "%s: %s", path, errors());
	cr_expect(strncmp(errors(), path, strlen(path)) == 0, "no file name: %s", errors());
	for (int i = 0; i < n; i++)
		cr_expect(strstr(errors(), needles[i]), "'%s' not in: %s", needles[i], errors());
}

#define ONE_ERROR(path, ...)                                                   \
	expect_one_error(path, (const char *const[]){__VA_ARGS__},             \
			 (int)(sizeof((const char *const[]){__VA_ARGS__}) /    \
			       sizeof(const char *)))

TestSuite(json_bad, .init = setup, .fini = teardown);

Test(json_bad, not_json)
{
	ONE_ERROR(BAD("malformed.json"), "not valid JSON near line 3");
	ONE_ERROR(BAD("truncated.json"), "not valid JSON near line");
	ONE_ERROR(BAD("nul_byte.json"), "holds a NUL byte");
	ONE_ERROR(BAD("empty.json"), "the file is empty");
	ONE_ERROR(BAD("no_such.json"), "cannot read");
}

Test(json_bad, not_a_model)
{
	ONE_ERROR(BAD("not_object.json"), "the JSON is an array, not an object");
	ONE_ERROR(BAD("no_graph.json"), "holds no graph");
}

Test(json_bad, wrong_types)
{
	ONE_ERROR(BAD("graph_string.json"), ": field 'graph' must be an object (it is a string)");
	ONE_ERROR(BAD("dims_not_array.json"),
		  "initializer 'w': field 'dims' must be an array of integers (it is a string)");
	ONE_ERROR(BAD("input_name_number.json"),
		  "input #0: field 'name' must be a string (it is a number)");
	ONE_ERROR(BAD("node_input_string.json"),
		  "node 'n1' (Add): field 'input' must be an array of strings (it is a string)");
}

Test(json_bad, bad_values)
{
	ONE_ERROR(BAD("bad_base64.json"), "initializer 'w': field 'rawData' is not valid base64");
	ONE_ERROR(BAD("bad_padding.json"), "initializer 'w': field 'rawData' is not valid base64");
	ONE_ERROR(BAD("bad_enum.json"),
		  "node 'n1' (Add): attribute 'axis': field 'type' is 'INTEGER', not one of the names of AttributeType");
	ONE_ERROR(BAD("inexact_number.json"),
		  "initializer 'w': field 'dims[0]' is too large to be exact as a JSON number");
	ONE_ERROR(BAD("both_spellings.json"), "field 'raw_data' is given twice (also as 'rawData')");
	ONE_ERROR(BAD("dim_oneof.json"),
		  "input 'x': field 'type.tensorType.shape.dim[0].dimParam' is given together with 'dimValue'");
}

/* keys onnx.proto lacks, at each level, named with where they are and the nearest field */
Test(json_bad, unknown_keys)
{
	ONE_ERROR(BAD("misspelled_attributes.json"),
		  "node 'n1' (Add): field 'attributes' is not a field of onnx.NodeProto in onnx.proto "
		  "(IR version 8); did you mean 'attribute'?");
	ONE_ERROR(BAD("unknown_dim_key.json"),
		  "input 'x': field 'type.tensorType.shape.dim[0].dim_valu' is not a field of "
		  "onnx.TensorShapeProto.Dimension in onnx.proto (IR version 8); did you mean 'dim_value'?");
	ONE_ERROR(BAD("unknown_model_key.json"),
		  ": field 'producerNme' is not a field of onnx.ModelProto in onnx.proto (IR version 8); "
		  "did you mean 'producerName'?");
	ONE_ERROR(BAD("unknown_far_key.json"),
		  "initializer 'w': field 'frobnicate' is not a field of onnx.TensorProto in onnx.proto "
		  "(IR version 8)");
}

/* the checks the binary reader makes, with its messages */
Test(json_bad, graph_checks)
{
	ONE_ERROR(BAD("ext_escape.json"),
		  "initializer 'w': external data location '../external.bin' leaves the model's folder");
	ONE_ERROR(BAD("dangling.json"),
		  "node 'n1' (Add): input 'ghost' is not a graph input, an initializer or any node's output");
	ONE_ERROR(BAD("unknown_dtype.json"), "initializer 'w': element type 99 is not one mkc reads");
}

/* ------------------------------------------- value forms, one by one */

/*
 * x + w -> y, with the attributes of n1 and the fields of initializer w
 * (float32) given. Written to the scratch file and loaded: NULL on error.
 */
static mkc_graph *
load_tiny(const char *attrs, const char *w_fields)
{
	FILE *f = fopen(tmp_path, "w");
	cr_assert_not_null(f);
	fprintf(f, "{\"irVersion\": \"10\", \"opsetImport\": [{\"version\": \"18\"}],\n"
		   " \"graph\": {\"name\": \"tiny\",\n"
		   "  \"node\": [{\"name\": \"n1\", \"opType\": \"Add\", \"input\": [\"x\", \"w\"],\n"
		   "            \"output\": [\"y\"], \"attribute\": [%s]}],\n"
		   "  \"initializer\": [{\"name\": \"w\", \"dataType\": 1, %s}],\n"
		   "  \"input\": [{\"name\": \"x\", \"type\": {\"tensorType\": {\"elemType\": 1,\n"
		   "             \"shape\": {\"dim\": [{\"dimValue\": \"2\"}]}}}}],\n"
		   "  \"output\": [{\"name\": \"y\", \"type\": {\"tensorType\": {\"elemType\": 1}}}]}}\n",
		attrs, w_fields);
	fclose(f);
	mkc_ctx_clear_errors(ctx);
	return mkc_load_model(ctx, tmp_path);
}

/* initializer w as [1, 2] */
#define W_ONE_TWO "\"dims\": [\"2\"], \"rawData\": \"AACAPwAAAEA=\""

static const mkc_attr *
tiny_attr(const char *attr)
{
	mkc_graph *g = load_tiny(attr, W_ONE_TWO);
	cr_assert_not_null(g, "%s: %s", attr, errors());
	cr_assert_eq(MKC_NODE(g, 0)->nattr, 1);
	return &MKC_NODE(g, 0)->attr[0];
}

/* A tiny model that must fail, the error naming the file and holding needle. */
static void
expect_tiny_error(const char *attrs, const char *w_fields, const char *needle)
{
	cr_expect_null(load_tiny(attrs, w_fields), "loaded: [%s] {%s}", attrs, w_fields);
	cr_expect_eq(ctx->nerrors, 1, "%s", errors());
	cr_expect(strstr(errors(), tmp_path) && strstr(errors(), needle),
		  "[%s] {%s}: '%s' not in: %s", attrs, w_fields, needle, errors());
}

static void
expect_w(const char *w_fields, const void *bytes)
{
	mkc_graph *g = load_tiny("", w_fields);
	cr_assert_not_null(g, "%s: %s", w_fields, errors());
	mkc_tensor *w = mkc_graph_find(g, "w");
	cr_assert_eq(w->nbytes, 8, "%s", w_fields);
	cr_expect_eq(memcmp(w->data, bytes, 8), 0, "%s: bytes differ", w_fields);
}

TestSuite(json_values, .init = setup, .fini = teardown);

Test(json_values, base64_alphabets_and_padding)
{
	static const uint8_t one_two[8] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
	static const uint8_t plus[8] = {0xfb, 0xef, 0xbe, 0xfb, 0xef, 0xbe, 0, 0};
	static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0};
	expect_w("\"dims\": [\"2\"], \"rawData\": \"AACAPwAAAEA=\"", one_two);
	expect_w("\"dims\": [\"2\"], \"rawData\": \"AACAPwAAAEA\"", one_two);
	expect_w("\"dims\": [\"2\"], \"raw_data\": \"++++++++AAA=\"", plus);
	expect_w("\"dims\": [\"2\"], \"raw_data\": \"--------AAA\"", plus);
	expect_w("\"dims\": [\"2\"], \"raw_data\": \"////____AAA=\"", ones);
}

Test(json_values, base64_refused)
{
	static const char *const bad[] = {
		"AACAPwAAAEA==", "AACAPwAAAE=A", "AACAP wAAAEA=", "AACAPwAAAEA===",
		"AACAPwAAAEA=AAAA", "AACAPwAAAEA\\u00e9", "A", "AACAP=", "=",
	};
	char fields[128];
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(fields, sizeof fields, "\"dims\": [\"2\"], \"rawData\": \"%s\"", bad[i]);
		expect_tiny_error("", fields, "initializer 'w': field 'rawData' is not valid base64");
	}
	/* empty is valid base64; the shared size check refuses it */
	expect_tiny_error("", "\"dims\": [\"2\"], \"rawData\": \"\"",
			  "raw_data holds 0 bytes but its shape and type need 8");
}

Test(json_values, integers)
{
	static const uint8_t one_two[8] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
	const char *raw = "\"rawData\": \"AACAPwAAAEA=\"";
	char fields[128];
	static const char *const good[] = {"[\"2\"]", "[2]", "[2.0]", "[\"0002\"]"};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		snprintf(fields, sizeof fields, "\"dims\": %s, %s", good[i], raw);
		expect_w(fields, one_two);
	}
	static const char *const bad[][2] = {
		{"[\" 2\"]", "field 'dims[0]' is ' 2', not a decimal integer"},
		{"[\"+2\"]", "field 'dims[0]' is '+2', not a decimal integer"},
		{"[\"2.0\"]", "field 'dims[0]' is '2.0', not a decimal integer"},
		{"[2.5]", "field 'dims[0]' must be a whole number"},
		{"[true]", "field 'dims[0]' must be an integer (it is a boolean)"},
		{"[\"99999999999999999999\"]", "out of range for any 64-bit integer"},
		{"[\"9223372036854775808\"]", "is 9223372036854775808, out of range for a signed 64-bit integer"},
		{"[\"-1\"]", "initializer 'w': dimension 0 is negative (-1)"},
		{"{}", "field 'dims' must be an array of integers (it is an object)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(fields, sizeof fields, "\"dims\": %s, %s", bad[i][0], raw);
		expect_tiny_error("", fields, bad[i][1]);
	}
	expect_tiny_error("{\"name\": \"a\", \"type\": 4294967297}", W_ONE_TWO,
			  "field 'type' is 4294967297, out of range for a signed 32-bit integer");
}

Test(json_values, int64_attribute_limits)
{
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"INT\", \"i\": \"-9223372036854775808\"}")->i,
		     INT64_MIN);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"INT\", \"i\": \"9223372036854775807\"}")->i,
		     INT64_MAX);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": 2, \"i\": -5}")->i, -5);
	const mkc_attr *a = tiny_attr("{\"name\": \"a\", \"type\": \"INTS\", \"ints\": [1, \"-2\", 3]}");
	cr_assert_eq(a->n, 3);
	cr_expect(a->ints[0] == 1 && a->ints[1] == -2 && a->ints[2] == 3);
	expect_tiny_error("{\"name\": \"a\", \"type\": \"INT\", \"i\": \"-9223372036854775809\"}", W_ONE_TWO,
			  "attribute 'a': field 'i' is -9223372036854775809, out of range");
}

Test(json_values, floats)
{
	cr_expect(isnan(tiny_attr("{\"name\": \"a\", \"type\": \"FLOAT\", \"f\": \"NaN\"}")->f));
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"FLOAT\", \"f\": \"Infinity\"}")->f, INFINITY);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"FLOAT\", \"f\": \"-Infinity\"}")->f, -INFINITY);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"FLOAT\", \"f\": \"1.5\"}")->f, 1.5f);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": 1, \"f\": 0.1}")->f, 0.1f);
	const mkc_attr *a = tiny_attr("{\"name\": \"a\", \"type\": \"FLOATS\", \"floats\": [1, \"NaN\", -2.5]}");
	cr_assert_eq(a->n, 3);
	cr_expect(a->floats[0] == 1.0f && isnan(a->floats[1]) && a->floats[2] == -2.5f);
	expect_tiny_error("{\"name\": \"a\", \"type\": \"FLOAT\", \"f\": 1e39}", W_ONE_TWO,
			  "node 'n1' (Add): attribute 'a': field 'f' is 1e+39, out of range for a float");
	expect_tiny_error("{\"name\": \"a\", \"type\": \"FLOAT\", \"f\": \"one\"}", W_ONE_TWO,
			  "field 'f' is 'one', not a number");
	expect_tiny_error("{\"name\": \"a\", \"type\": \"FLOATS\", \"floats\": [1, [2]]}", W_ONE_TWO,
			  "field 'floats[1]' must be a number (it is an array)");
}

Test(json_values, strings_and_enums)
{
	const mkc_attr *a = tiny_attr("{\"name\": \"a\", \"type\": \"STRING\", \"s\": \"aGVsbG8=\"}");
	cr_expect(a->type == MKC_AT_STRING && a->slen == 5 && strcmp(a->s, "hello") == 0);
	a = tiny_attr("{\"name\": \"a\", \"type\": \"8\", \"strings\": [\"YQ==\", \"YmM\"]}");
	cr_assert_eq(a->type, MKC_AT_STRINGS);
	cr_expect(a->n == 2 && strcmp(a->strings[0], "a") == 0 && strcmp(a->strings[1], "bc") == 0);
	/* a type without its value: empty, as protobuf reads it */
	a = tiny_attr("{\"name\": \"a\", \"type\": \"STRING\"}");
	cr_expect(a->type == MKC_AT_STRING && a->slen == 0 && strcmp(a->s, "") == 0);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"FLOATS\", \"floats\": null}")->n, 0);
	cr_expect_eq(tiny_attr("{\"name\": \"a\", \"type\": \"INTS\", \"ints\": []}")->n, 0);
	/* numbers outside the enum go on to the shared reader, as in binary */
	expect_tiny_error("{\"name\": \"a\", \"type\": 99}", W_ONE_TWO,
			  "node 'n1' (Add): attribute 'a' has an unknown type 99");
	expect_tiny_error("{\"name\": \"a\", \"type\": [\"INT\"]}", W_ONE_TWO,
			  "field 'type' must be an enum name or number (it is an array)");
	expect_tiny_error("{\"name\": 7, \"type\": \"INT\"}", W_ONE_TWO,
			  "node 'n1' (Add): attribute #0: field 'name' must be a string (it is a number)");
}

Test(json_values, null_fields)
{
	/* null is an absent field */
	mkc_graph *g = load_tiny("", "\"dims\": [\"2\"], \"docString\": null,"
				 " \"floatData\": [1, 2], \"dataLocation\": \"DEFAULT\", \"rawData\": null");
	cr_assert_not_null(g, "%s", errors());
	static const float one_two[2] = {1, 2};
	cr_expect_eq(memcmp(mkc_graph_find(g, "w")->data, one_two, 8), 0);
	expect_tiny_error("", "\"dims\": [\"2\"], \"rawData\": null",
			  "initializer 'w': holds 0 values but its shape needs 2");
	expect_tiny_error("", "\"dims\": [\"2\"], \"floatData\": [1, null]",
			  "field 'floatData[1]' must be a number (it is null)");
	expect_tiny_error("", "\"dims\": [\"2\"], \"dataLocation\": \"NOWHERE\"",
			  "field 'dataLocation' is 'NOWHERE', not one of the names of DataLocation");
}

/*
 * A key onnx.proto does not know fails the load, as it fails protobuf's own
 * parser (and onnx.load): skipped, a misspelled key lost what it held
 * without a word. Both spellings of the known fields stay good.
 */
Test(json_values, unknown_keys_are_refused)
{
	expect_tiny_error("", W_ONE_TWO ", \"frobnicate\": {\"x\": [1]}",
			  "initializer 'w': field 'frobnicate' is not a field of onnx.TensorProto");
	expect_tiny_error("", W_ONE_TWO ", \"doc_strin\": \"d\"",
			  "initializer 'w': field 'doc_strin' is not a field of onnx.TensorProto in "
			  "onnx.proto (IR version 8); did you mean 'doc_string'?");
	expect_tiny_error("{\"name\": \"a\", \"typ\": \"INT\", \"i\": \"1\"}", W_ONE_TWO,
			  "node 'n1' (Add): attribute 'a': field 'typ' is not a field of "
			  "onnx.AttributeProto in onnx.proto (IR version 8); did you mean 'type'?");
	cr_assert_not_null(load_tiny("{\"name\": \"a\", \"type\": \"INT\", \"i\": \"1\"}",
				     "\"dims\": [\"2\"], \"raw_data\": \"AACAPwAAAEA=\", \"doc_string\": \"d\""),
			   "%s", errors());
}

/* ---------------------------------------------- no input crashes it */

static void
write_text(const char *text, size_t n)
{
	FILE *f = fopen(tmp_path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, n, f), n);
	fclose(f);
}

/* Either a graph, or errors that each name the file. */
static void
expect_clean_outcome(const char *what)
{
	mkc_ctx_destroy(ctx);
	ctx = mkc_ctx_create();
	mkc_graph *g = mkc_load_model(ctx, tmp_path);
	if (g)
		return;
	cr_assert_geq(ctx->nerrors, 1, "%s: failed without an error", what);
	for (const char *line = ctx->errors; *line; line = strchr(line, '\n') + 1)
		cr_assert(strncmp(line, tmp_path, strlen(tmp_path)) == 0,
			  "%s: an error without the file: %s", what, line);
}

static cJSON *
parse_file(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	static char text[1 << 16];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	cr_assert_lt(n, sizeof text - 1, "%s is too big for this test", path);
	text[n] = 0;
	cJSON *root = cJSON_Parse(text);
	cr_assert_not_null(root, "%s", path);
	return root;
}

/* The k-th value of the tree in document order (0 is the root), and its parent. */
static cJSON *
nth_value(cJSON *v, int *k, cJSON **parent)
{
	for (cJSON *c = v->child; c; c = c->next) {
		if ((*k)-- == 1) {
			*parent = v;
			return c;
		}
		cJSON *found = nth_value(c, k, parent);
		if (found)
			return found;
	}
	return NULL;
}

/* Puts each kind of wrong value, in turn, in the place of every value in path. */
static void
replace_every_value(const char *path)
{
	static const char *const kinds[] = {"1.5", "-7", "1e300", "\"x\"", "\"NaN\"",
					    "{}", "[]", "[{}]", "[1, \"a\"]", "null", "true"};
	cJSON *orig = parse_file(path);
	for (int i = 1;; i++) {
		for (size_t j = 0; j < sizeof kinds / sizeof *kinds; j++) {
			cJSON *copy = cJSON_Duplicate(orig, true), *parent = NULL;
			int k = i;
			cJSON *at = nth_value(copy, &k, &parent);
			if (!at) {
				cJSON_Delete(copy);
				cJSON_Delete(orig);
				return;
			}
			if (cJSON_IsObject(parent))
				cJSON_ReplaceItemInObjectCaseSensitive(parent, at->string,
								       cJSON_Parse(kinds[j]));
			else
				cJSON_ReplaceItemViaPointer(parent, at, cJSON_Parse(kinds[j]));
			char *text = cJSON_PrintUnformatted(copy);
			write_text(text, strlen(text));
			free(text);
			cJSON_Delete(copy);
			char what[128];
			snprintf(what, sizeof what, "%s value %d as %s", path, i, kinds[j]);
			expect_clean_outcome(what);
		}
	}
}

TestSuite(json_fuzz, .init = setup, .fini = teardown);

Test(json_fuzz, every_value_replaced, .timeout = 120)
{
	replace_every_value(TWIN("attrs.json"));
	replace_every_value(TWIN("external.json"));
	replace_every_value(TWIN("symbolic.json"));
}

Test(json_fuzz, every_prefix, .timeout = 120)
{
	FILE *f = fopen(TWIN("constants.json"), "r");
	cr_assert_not_null(f);
	static char text[1 << 16];
	size_t n = fread(text, 1, sizeof text, f);
	fclose(f);
	for (size_t len = 0; len < n; len++) {
		write_text(text, len);
		char what[64];
		snprintf(what, sizeof what, "the first %zu bytes", len);
		expect_clean_outcome(what);
		cr_assert_not_null(ctx->errors, "%s loaded", what);
		cr_expect(strstr(ctx->errors, len ? "not valid JSON" : "the file is empty"), "%s",
			  ctx->errors);
	}
	write_text(text, n);
	cr_expect_not_null(mkc_load_model(ctx, tmp_path), "%s", errors());
}

/* ----------------------------------------------------- the command */

/* Output after its first line, which names the model file. */
static const char *
after_first_line(const char *s)
{
	const char *nl = strchr(s, '\n');
	return nl ? nl + 1 : s;
}

/* mkc info MODEL, or mkc MODEL option */
static mkc_result *
run_on(const char *model, const char *option)
{
	return option ? mkc_run(model, option, NULL) : mkc_run("info", model, NULL);
}

static void
expect_same_output(const char *json, const char *onnx, const char *option)
{
	static char want[65536];
	mkc_result *r = run_on(onnx, option);
	cr_assert_eq(r->status, 0, "%s", r->err);
	strcpy(want, after_first_line(r->out));
	r = run_on(json, option);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_expect(strstr(r->out, json), "the output does not name %s", json);
	cr_expect_str_eq(after_first_line(r->out), want);
}

Test(json_cli, info_as_for_the_binary_model)
{
	expect_same_output(LLAMA18 "model.json", LLAMA18 "model.onnx", NULL);
	cr_expect(strncmp(mkc_run("info", LLAMA18 "model.json", NULL)->out,
			  "model      " LLAMA18 "model.json\n", 11 + strlen(LLAMA18 "model.json\n")) == 0);
}

Test(json_cli, dump_as_for_the_binary_model)
{
	expect_same_output(LLAMA18 "model.json", LLAMA18 "model.onnx", "--dump-after=dce");
}

/* A misspelled "attributes" stops the compile (it was read as a node without attributes). */
Test(json_cli, misspelled_key_fails_the_run)
{
	mkc_result *r = mkc_run(BAD("misspelled_attributes.json"), NULL);
	cr_expect_eq(r->status, 1, "%s", r->err);
	cr_expect_str_eq(r->err, BAD("misspelled_attributes.json") ": node 'n1' (Add): field "
			 "'attributes' is not a field of onnx.NodeProto in onnx.proto (IR version 8); "
			 "did you mean 'attribute'?\n");
}

Test(json_cli, bad_file)
{
	mkc_result *r = mkc_run(BAD("bad_base64.json"), NULL);
	cr_expect_eq(r->status, 1);
	cr_expect_str_eq(r->err, BAD("bad_base64.json") ": initializer 'w': field 'rawData' is not valid base64\n");
}
