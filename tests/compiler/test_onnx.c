/*
 * test_onnx.c - the ONNX frontend on the hand-made models (facts from
 * tests/models/hand/README.md) and on the tiny Llama exports.
 *
 * Paths are relative to the repository root, where `make test` runs the
 * test binary.
 */
#include "frontend.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif

#include "../fixture.h"
#include "../graph_builder.h"

#define MODELS "tests/models/"
#define MODEL_PATH(p) MODELS p
#define HAND(f) MODEL_PATH("hand/" f)
#define LLAMA18 MODEL_PATH("tiny_llama_decode_op18")
#define LLAMA23 MODEL_PATH("tiny_llama_decode_op23")


static mkc_graph *
load(const char *path)
{
	mkc_graph *g = mkc_onnx_load(ctx, path);
	cr_assert_not_null(g, "%s does not load: %s", path, errs());
	cr_expect_eq(ctx->nerrors, 0, "%s", errs());
	return g;
}

static void
expect_shape(const mkc_tensor *t, int rank, const int64_t *dims)
{
	cr_assert_eq(t->rank, rank, "'%s': rank %d, want %d", t->name, t->rank, rank);
	for (int i = 0; i < rank; i++)
		cr_expect(mkc_dim_eq(t->shape[i], mkc_dim_const(dims[i])),
			  "'%s' dim %d: want %lld", t->name, i, (long long)dims[i]);
}

static void
expect_bytes(const mkc_tensor *t, const void *want, size_t n)
{
	cr_assert_eq(t->nbytes, n, "'%s': %zu bytes, want %zu", t->name, t->nbytes, n);
	cr_assert_not_null(t->data, "'%s' has no data", t->name);
	cr_expect_eq(memcmp(t->data, want, n), 0, "'%s': values differ", t->name);
}

static void
expect_shape_str(const mkc_graph *g, const mkc_tensor *t, const char *want)
{
	char buf[256];
	cr_expect_str_eq(mkc_shape_str(g, t, buf, sizeof buf), want, "'%s'", t->name);
}

static void
expect_node(const mkc_graph *g, int i, const char *name, mkc_op op)
{
	cr_assert_lt(i, g->nodes.n);
	mkc_node *n = MKC_NODE(g, i);
	cr_expect_str_eq(n->name, name, "node %d", i);
	cr_expect_eq(n->op, op, "node '%s': op %d, want %d", n->name, n->op, op);
	cr_expect_eq(n->id, i);
}

static int
count_kind(const mkc_graph *g, mkc_tensor_kind k)
{
	int n = 0;
	for (int i = 0; i < g->tensors.n; i++)
		n += MKC_TENSOR(g, i)->kind == k;
	return n;
}

static void
expect_contains(const char *hay, const char *needle)
{
	cr_expect(hay && strstr(hay, needle), "'%s' not in: %s", needle, hay ? hay : "(none)");
}

/* The metadata every hand-made model shares. */
static void
expect_hand_meta(const mkc_graph *g, const char *name)
{
	cr_expect_eq(g->ir_version, 10);
	cr_expect_str_eq(g->producer, "mkc-gen_models 1");
	cr_expect_str_eq(g->name, name);
	cr_expect_eq(mkc_graph_opset(g, ""), 18);
}

/* storage.onnx: every initializer storage form. */

TestSuite(storage, .init = setup, .fini = teardown);

typedef struct {
	const char *name;
	mkc_dtype dt;
	int rank;
	int64_t dims[2];
	const void *bytes;
	size_t nbytes;
} stored;

#define VALS(T, ...) (const T[]){__VA_ARGS__}, sizeof((const T[]){__VA_ARGS__})

static const stored storage[] = {
	{"w_f32_raw", MKC_DT_FLOAT, 2, {2, 3}, VALS(float, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f)},
	{"w_f32_typed", MKC_DT_FLOAT, 1, {3}, VALS(float, 1.5f, -2.25f, 3.0f)},
	{"w_f16_raw", MKC_DT_FLOAT16, 1, {4}, VALS(uint16_t, 0x3C00, 0xC000, 0x3800, 0x7BFF)},
	{"w_f16_typed", MKC_DT_FLOAT16, 1, {2}, VALS(uint16_t, 0x3C00, 0xB800)},
	{"w_bf16_raw", MKC_DT_BFLOAT16, 1, {3}, VALS(uint16_t, 0x3F80, 0xC000, 0x4060)},
	{"w_bf16_typed", MKC_DT_BFLOAT16, 1, {2}, VALS(uint16_t, 0x3F00, 0xBF80)},
	{"w_i64_raw", MKC_DT_INT64, 1, {3}, VALS(int64_t, 1, -2, 3000000000)},
	{"w_i64_typed", MKC_DT_INT64, 1, {2}, VALS(int64_t, -7, 9)},
	{"w_i32_raw", MKC_DT_INT32, 1, {2}, VALS(int32_t, -5, 7)},
	{"w_i32_typed", MKC_DT_INT32, 1, {2}, VALS(int32_t, 11, -12)},
	{"w_i8_raw", MKC_DT_INT8, 1, {3}, VALS(int8_t, -128, 0, 127)},
	{"w_i8_typed", MKC_DT_INT8, 1, {2}, VALS(int8_t, -3, 4)},
	{"w_bool_raw", MKC_DT_BOOL, 1, {3}, VALS(uint8_t, 1, 0, 1)},
	{"w_bool_typed", MKC_DT_BOOL, 1, {2}, VALS(uint8_t, 0, 1)},
	{"w_f64_typed", MKC_DT_DOUBLE, 1, {2}, VALS(double, 0.25, -8.0)},
	{"w_u8_raw", MKC_DT_UINT8, 1, {2}, VALS(uint8_t, 0, 255)},
	{"w_scalar", MKC_DT_FLOAT, 0, {0}, VALS(float, 42.0f)},
};

enum { NSTORED = sizeof storage / sizeof storage[0] };

Test(storage, meta_and_counts)
{
	mkc_graph *g = load(HAND("storage.onnx"));
	expect_hand_meta(g, "storage");
	cr_expect_eq(g->nopsets, 1);
	cr_expect_eq(g->inputs.n, 0);
	cr_expect_eq(g->outputs.n, NSTORED);
	cr_expect_eq(g->nodes.n, NSTORED);
	cr_expect_eq(count_kind(g, MKC_TK_WEIGHT), NSTORED);
	cr_expect_eq(g->syms.n, 0);
}

Test(storage, values_of_every_form)
{
	mkc_graph *g = load(HAND("storage.onnx"));
	for (int i = 0; i < NSTORED; i++) {
		const stored *s = &storage[i];
		mkc_tensor *t = gb_find(g, s->name);
		cr_expect_eq(t->id, i, "'%s' is not initializer %d", s->name, i);
		cr_expect_eq(t->kind, MKC_TK_WEIGHT, "'%s'", s->name);
		cr_expect_eq(t->dtype, s->dt, "'%s': dtype %d", s->name, t->dtype);
		cr_expect_null(t->producer);
		cr_expect_null(t->ext_file);
		cr_expect(mkc_tensor_is_const(t));
		expect_shape(t, s->rank, s->dims);
		expect_bytes(t, s->bytes, s->nbytes);
	}
}

Test(storage, scalar_has_one_element)
{
	mkc_graph *g = load(HAND("storage.onnx"));
	mkc_tensor *t = gb_find(g, "w_scalar");
	cr_expect_eq(t->rank, 0);
	cr_expect_eq(mkc_tensor_numel(t), 1);
	uint32_t bits;
	cr_assert_eq(t->nbytes, sizeof bits);
	memcpy(&bits, t->data, sizeof bits);
	cr_expect_eq(bits, 0x42280000u);
}

Test(storage, identity_nodes_to_outputs)
{
	mkc_graph *g = load(HAND("storage.onnx"));
	for (int i = 0; i < NSTORED; i++) {
		const stored *s = &storage[i];
		char name[64];
		snprintf(name, sizeof name, "id_%s", s->name);
		expect_node(g, i, name, MKC_OP_IDENTITY);
		mkc_node *n = MKC_NODE(g, i);
		cr_assert_eq(n->nin, 1);
		cr_assert_eq(n->nout, 1);
		cr_expect_eq(n->in[0], gb_find(g, s->name));
		mkc_tensor *out = MKC_OUTPUT(g, i);
		snprintf(name, sizeof name, "%s_out", s->name);
		cr_expect_str_eq(out->name, name);
		cr_expect_eq(n->out[0], out);
		cr_expect_eq(out->producer, n);
		cr_expect_eq(out->kind, MKC_TK_OUTPUT);
		cr_expect_eq(out->dtype, s->dt, "'%s'", name);
		expect_shape(out, s->rank, s->dims);
	}
}

/* external.onnx: weights in external.bin. */

TestSuite(external, .init = setup, .fini = teardown);

static void
expect_external(const mkc_graph *g, const char *name, uint64_t off,
		const float *vals, int n)
{
	mkc_tensor *t = gb_find(g, name);
	cr_expect_eq(t->kind, MKC_TK_WEIGHT);
	cr_expect_eq(t->dtype, MKC_DT_FLOAT);
	cr_assert_not_null(t->ext_file, "'%s' has no ext_file", name);
	cr_expect_str_eq(t->ext_file, HAND("external.bin"));
	cr_expect_eq(t->ext_offset, off, "'%s'", name);
	expect_bytes(t, vals, (size_t)n * sizeof *vals);
}

Test(external, values_offsets_files)
{
	mkc_graph *g = load(HAND("external.onnx"));
	expect_hand_meta(g, "external");
	cr_expect_eq(count_kind(g, MKC_TK_WEIGHT), 3);
	expect_external(g, "ext_a", 0, (const float[]){1, 2, 3, 4}, 4);
	expect_external(g, "ext_b", 16, (const float[]){5, 6, 7, 8}, 4);
	expect_external(g, "ext_c", 64, (const float[]){9, 10, 11}, 3);
	expect_shape(gb_find(g, "ext_a"), 1, (const int64_t[]){4});
	expect_shape(gb_find(g, "ext_b"), 2, (const int64_t[]){2, 2});
	expect_shape(gb_find(g, "ext_c"), 1, (const int64_t[]){3});
}

Test(external, nodes_and_outputs)
{
	mkc_graph *g = load(HAND("external.onnx"));
	static const char *const names[] = {"id_ext_a", "id_ext_b", "id_ext_c"};
	static const char *const outs[] = {"ext_a_out", "ext_b_out", "ext_c_out"};
	cr_assert_eq(g->nodes.n, 3);
	cr_assert_eq(g->outputs.n, 3);
	for (int i = 0; i < 3; i++) {
		expect_node(g, i, names[i], MKC_OP_IDENTITY);
		cr_expect_str_eq(MKC_OUTPUT(g, i)->name, outs[i]);
		cr_expect_eq(MKC_OUTPUT(g, i)->producer, MKC_NODE(g, i));
	}
	expect_shape(MKC_OUTPUT(g, 1), 2, (const int64_t[]){2, 2});
}

Test(external, absolute_model_path)
{
	char abs[PATH_MAX];
	cr_assert_not_null(realpath(HAND("external.onnx"), abs));
	mkc_graph *g = load(abs);
	mkc_tensor *t = gb_find(g, "ext_c");
	cr_assert_not_null(t->ext_file);
	cr_expect_eq(t->ext_file[0], '/', "%s", t->ext_file);
	const float *v = t->data;
	cr_expect_eq(v[0], 9.0f);
	cr_expect_eq(v[2], 11.0f);
}

/* attrs.onnx: every attribute type, custom domains. */

TestSuite(attrs, .init = setup, .fini = teardown);

static const mkc_attr *
attr(const mkc_node *n, int i, const char *name, mkc_attr_type type)
{
	cr_assert_lt(i, n->nattr);
	const mkc_attr *a = &n->attr[i];
	cr_expect_str_eq(a->name, name, "attribute %d", i);
	cr_assert_eq(a->type, type, "attribute '%s': type %d, want %d", name, a->type, type);
	cr_expect_eq(mkc_node_attr(n, name), a);
	return a;
}

static void
expect_subgraph(const mkc_subgraph *s, const char *name)
{
	cr_assert_not_null(s);
	cr_expect_str_eq(s->name, name);
	cr_expect_eq(s->nnodes, 1, "'%s'", name);
	cr_expect_eq(s->ninputs, 1, "'%s'", name);
	cr_expect_eq(s->noutputs, 1, "'%s'", name);
}

Test(attrs, opsets_and_io)
{
	mkc_graph *g = load(HAND("attrs.onnx"));
	expect_hand_meta(g, "attrs");
	cr_assert_eq(g->nopsets, 3);
	cr_expect_str_eq(g->opsets[0].domain, "");
	cr_expect_eq(g->opsets[0].version, 18);
	cr_expect_str_eq(g->opsets[1].domain, "test.attrs");
	cr_expect_eq(g->opsets[1].version, 1);
	cr_expect_str_eq(g->opsets[2].domain, "com.microsoft");
	cr_expect_eq(g->opsets[2].version, 1);
	cr_expect_eq(mkc_graph_opset(g, "ai.onnx"), 18);
	cr_expect_eq(mkc_graph_opset(g, "com.microsoft"), 1);
	cr_expect_eq(mkc_graph_opset(g, "ai.onnx.ml"), 0);
	cr_assert_eq(g->inputs.n, 1);
	cr_expect_str_eq(MKC_INPUT(g, 0)->name, "x");
	expect_shape(MKC_INPUT(g, 0), 1, (const int64_t[]){2});
	cr_assert_eq(g->outputs.n, 2);
	expect_shape(gb_find(g, "y"), 1, (const int64_t[]){2});
	mkc_tensor *fm = gb_find(g, "fm");
	cr_expect_eq(fm->dtype, MKC_DT_FLOAT);
	cr_expect_eq(fm->rank, -1, "an output with no shape field has unknown rank");
}

Test(attrs, scalar_and_list_attrs)
{
	mkc_graph *g = load(HAND("attrs.onnx"));
	expect_node(g, 0, "all_attrs", MKC_OP_UNKNOWN);
	mkc_node *n = MKC_NODE(g, 0);
	cr_expect_str_eq(n->domain, "test.attrs");
	cr_expect_str_eq(n->op_type, "AllAttrs");
	cr_assert_eq(n->nattr, 10);
	cr_expect_eq(attr(n, 0, "f", MKC_AT_FLOAT)->f, 1.5f);
	const mkc_attr *a = attr(n, 1, "floats", MKC_AT_FLOATS);
	cr_assert_eq(a->n, 2);
	cr_expect_eq(a->floats[0], 0.5f);
	cr_expect_eq(a->floats[1], -1.0f);
	cr_expect_eq(attr(n, 4, "i", MKC_AT_INT)->i, -7);
	a = attr(n, 5, "ints", MKC_AT_INTS);
	cr_assert_eq(a->n, 3);
	cr_expect_arr_eq(a->ints, ((const int64_t[]){1, 2, 3}), 3 * sizeof(int64_t));
	a = attr(n, 6, "s", MKC_AT_STRING);
	cr_expect_str_eq(a->s, "hello");
	cr_expect_eq(a->slen, 5);
	a = attr(n, 7, "strings", MKC_AT_STRINGS);
	cr_assert_eq(a->n, 2);
	cr_expect_str_eq(a->strings[0], "a");
	cr_expect_str_eq(a->strings[1], "bc");
	cr_expect_eq(mkc_node_attr_int(n, "i", 0), -7);
	cr_expect_eq(mkc_node_attr_float(n, "f", 0), 1.5f);
}

Test(attrs, graph_attrs_are_summarised)
{
	mkc_graph *g = load(HAND("attrs.onnx"));
	mkc_node *n = gb_find_node(g, "all_attrs");
	expect_subgraph(attr(n, 2, "g", MKC_AT_GRAPH)->g, "g_body");
	const mkc_attr *a = attr(n, 3, "graphs", MKC_AT_GRAPHS);
	cr_assert_eq(a->n, 1);
	expect_subgraph(a->graphs[0], "gs_body0");
	cr_expect_null(mkc_graph_find(g, "g_in"), "subgraph names leak into the graph");
	cr_expect_null(mkc_graph_find(g, "g_out"));
}

Test(attrs, tensor_attrs)
{
	mkc_graph *g = load(HAND("attrs.onnx"));
	mkc_node *n = gb_find_node(g, "all_attrs");
	mkc_tensor *t = attr(n, 8, "t", MKC_AT_TENSOR)->t;
	cr_assert_not_null(t);
	cr_expect_str_eq(t->name, "t_val");
	cr_expect_eq(t->dtype, MKC_DT_INT64);
	expect_shape(t, 1, (const int64_t[]){2});
	expect_bytes(t, (const int64_t[]){3, 4}, 2 * sizeof(int64_t));
	const mkc_attr *a = attr(n, 9, "tensors", MKC_AT_TENSORS);
	cr_assert_eq(a->n, 2);
	cr_expect_str_eq(a->tensors[0]->name, "ts0");
	cr_expect_eq(a->tensors[0]->dtype, MKC_DT_FLOAT);
	expect_bytes(a->tensors[0], (const float[]){0.25f, 0.75f}, 2 * sizeof(float));
	cr_expect_str_eq(a->tensors[1]->name, "ts1");
	cr_expect_eq(a->tensors[1]->dtype, MKC_DT_INT32);
	expect_shape(a->tensors[1], 1, (const int64_t[]){3});
	expect_bytes(a->tensors[1], (const int32_t[]){1, -1, 2}, 3 * sizeof(int32_t));
	cr_expect_null(mkc_graph_find(g, "t_val"), "attribute tensors are not graph tensors");
}

Test(attrs, custom_domain_node)
{
	mkc_graph *g = load(HAND("attrs.onnx"));
	expect_node(g, 1, "fused_matmul", MKC_OP_UNKNOWN);
	mkc_node *n = MKC_NODE(g, 1);
	cr_expect_str_eq(n->domain, "com.microsoft");
	cr_expect_str_eq(n->op_type, "FusedMatMul");
	cr_assert_eq(n->nin, 2);
	cr_expect_eq(n->in[0], gb_find(g, "x"));
	cr_expect_eq(n->in[1], n->in[0]);
	cr_expect_eq(n->out[0], gb_find(g, "fm"));
	cr_assert_eq(n->nattr, 2);
	cr_expect_eq(attr(n, 0, "alpha", MKC_AT_FLOAT)->f, 1.0f);
	cr_expect_eq(attr(n, 1, "transA", MKC_AT_INT)->i, 0);
	cr_expect_eq(mkc_node_attr_int(n, "transA", 5), 0);
}

/* constants.onnx: each Constant attribute form. */

TestSuite(constants, .init = setup, .fini = teardown);

Test(constants, nodes_and_attrs)
{
	mkc_graph *g = load(HAND("constants.onnx"));
	expect_hand_meta(g, "constants");
	cr_expect_eq(g->inputs.n, 0);
	cr_expect_eq(count_kind(g, MKC_TK_WEIGHT), 0);
	cr_assert_eq(g->nodes.n, 6);
	static const char *const names[] = {"const_value", "const_value_float",
		"const_value_floats", "const_value_int", "const_value_ints"};
	for (int i = 0; i < 5; i++)
		expect_node(g, i, names[i], MKC_OP_CONSTANT);
	expect_node(g, 5, "add_consts", MKC_OP_ADD);
	mkc_tensor *t = attr(MKC_NODE(g, 0), 0, "value", MKC_AT_TENSOR)->t;
	cr_assert_not_null(t);
	cr_expect_str_eq(t->name, "c_value_t");
	expect_bytes(t, (const float[]){1, 2}, 2 * sizeof(float));
	cr_expect_eq(attr(MKC_NODE(g, 1), 0, "value_float", MKC_AT_FLOAT)->f, 3.5f);
	const mkc_attr *a = attr(MKC_NODE(g, 2), 0, "value_floats", MKC_AT_FLOATS);
	cr_assert_eq(a->n, 3);
	cr_expect_eq(a->floats[2], 3.0f);
	cr_expect_eq(attr(MKC_NODE(g, 3), 0, "value_int", MKC_AT_INT)->i, 7);
	a = attr(MKC_NODE(g, 4), 0, "value_ints", MKC_AT_INTS);
	cr_assert_eq(a->n, 2);
	cr_expect_eq(a->ints[0], 4);
	cr_expect_eq(a->ints[1], 5);
}

Test(constants, outputs)
{
	mkc_graph *g = load(HAND("constants.onnx"));
	static const char *const outs[] = {"c_value", "c_value_float", "c_value_floats",
		"c_value_int", "c_value_ints", "c_sum"};
	static const mkc_dtype dts[] = {MKC_DT_FLOAT, MKC_DT_FLOAT, MKC_DT_FLOAT,
		MKC_DT_INT64, MKC_DT_INT64, MKC_DT_FLOAT};
	static const int ranks[] = {1, 0, 1, 0, 1, 1};
	cr_assert_eq(g->outputs.n, 6);
	for (int i = 0; i < 6; i++) {
		mkc_tensor *t = MKC_OUTPUT(g, i);
		cr_expect_str_eq(t->name, outs[i]);
		cr_expect_eq(t->dtype, dts[i], "'%s'", outs[i]);
		cr_expect_eq(t->rank, ranks[i], "'%s'", outs[i]);
		cr_expect_eq(t->producer, MKC_NODE(g, i));
	}
	mkc_node *add = MKC_NODE(g, 5);
	cr_expect_eq(add->in[0], gb_find(g, "c_value"));
	cr_expect_eq(add->in[1], gb_find(g, "c_value_float"));
}

/* symbolic.onnx: symbolic dimensions and shape arithmetic. */

TestSuite(symbolic, .init = setup, .fini = teardown);

Test(symbolic, inputs_and_symbols)
{
	mkc_graph *g = load(HAND("symbolic.onnx"));
	expect_hand_meta(g, "symbolic");
	cr_assert_eq(g->inputs.n, 2);
	cr_assert_eq(g->syms.n, 2, "output dim names are not new symbols");
	cr_expect_str_eq(MKC_SYM(g, 0), "batch");
	cr_expect_str_eq(MKC_SYM(g, 1), "past_len");
	expect_shape_str(g, gb_find(g, "x"), "[batch,4]");
	expect_shape_str(g, gb_find(g, "y"), "[batch,past_len,4]");
	cr_expect_eq(gb_find(g, "x")->kind, MKC_TK_INPUT);
}

Test(symbolic, output_dims)
{
	mkc_graph *g = load(HAND("symbolic.onnx"));
	cr_assert_eq(g->outputs.n, 2);
	cr_expect_str_eq(MKC_OUTPUT(g, 0)->name, "z");
	mkc_tensor *d = MKC_OUTPUT(g, 1);
	cr_expect_str_eq(d->name, "d");
	cr_assert_eq(d->rank, 3);
	cr_expect(mkc_dim_eq(d->shape[1], dim_plus(1, 1)), "past_len + 1");
	expect_shape_str(g, d, "[batch,past_len+1,4]");
	mkc_tensor *z = gb_find(g, "z");
	cr_assert_eq(z->rank, 3);
	cr_expect(mkc_dim_eq(z->shape[0], mkc_dim_sym(0)));
	cr_expect(mkc_dim_eq(z->shape[2], mkc_dim_const(4)));
}

Test(symbolic, unknown_output_dim)
{
	mkc_graph *g = load(HAND("symbolic.onnx"));
	/* z's middle dimension has neither dim_value nor dim_param */
	mkc_tensor *z = gb_find(g, "z");
	cr_assert_eq(z->rank, 3);
	cr_expect(mkc_dim_is_unknown(z->shape[1]));
	expect_shape_str(g, z, "[batch,?,4]");
}

Test(symbolic, initializers)
{
	mkc_graph *g = load(HAND("symbolic.onnx"));
	static const struct {
		const char *name;
		int rank;
		int64_t v;
	} w[] = {
		{"axes_1", 1, 1}, {"idx_1", 0, 1}, {"one", 0, 1},
		{"axes_0", 1, 0}, {"c_neg1", 1, -1}, {"c_4", 1, 4},
	};
	cr_expect_eq(count_kind(g, MKC_TK_WEIGHT), 6);
	for (int i = 0; i < 6; i++) {
		mkc_tensor *t = gb_find(g, w[i].name);
		cr_expect_eq(t->dtype, MKC_DT_INT64);
		expect_shape(t, w[i].rank, (const int64_t[]){1});
		expect_bytes(t, &w[i].v, sizeof w[i].v);
	}
}

Test(symbolic, nodes_in_order)
{
	mkc_graph *g = load(HAND("symbolic.onnx"));
	static const struct {
		const char *name;
		mkc_op op;
	} want[] = {
		{"unsq_x", MKC_OP_UNSQUEEZE}, {"concat_z", MKC_OP_CONCAT},
		{"shape_y", MKC_OP_SHAPE}, {"gather_past", MKC_OP_GATHER},
		{"add_one", MKC_OP_ADD}, {"unsq_len", MKC_OP_UNSQUEEZE},
		{"concat_shape_d", MKC_OP_CONCAT}, {"reshape_d", MKC_OP_RESHAPE},
	};
	cr_assert_eq(g->nodes.n, 8);
	for (int i = 0; i < 8; i++)
		expect_node(g, i, want[i].name, want[i].op);
	mkc_node *cd = gb_find_node(g, "concat_shape_d");
	cr_assert_eq(cd->nin, 3);
	cr_expect_str_eq(cd->in[1]->name, "past_p1_1d");
	cr_expect_eq(mkc_node_attr_int(cd, "axis", 99), 0);
	cr_expect_eq(mkc_node_attr_int(gb_find_node(g, "concat_z"), "axis", 99), 1);
}

/* symbolic_product.onnx: reading succeeds; inference rejects batch*past_len. */

Test(symbolic, product_reads)
{
	mkc_graph *g = load(HAND("symbolic_product.onnx"));
	cr_assert_eq(g->nodes.n, 1);
	expect_node(g, 0, "reshape_w", MKC_OP_RESHAPE);
	cr_assert_eq(g->syms.n, 2, "an output's dim name is not an input symbol");
	expect_shape_str(g, gb_find(g, "y"), "[batch,past_len,4]");
	mkc_tensor *w = gb_find(g, "w");
	cr_expect_eq(w->kind, MKC_TK_OUTPUT);
	cr_assert_eq(w->rank, 2);
	cr_expect(mkc_dim_eq(w->shape[1], mkc_dim_const(4)));
}

/* matmul_mismatch.onnx: reading succeeds; inference finds the error. */

TestSuite(onnx_read, .init = setup, .fini = teardown);

Test(onnx_read, matmul_mismatch_reads)
{
	mkc_graph *g = load(HAND("matmul_mismatch.onnx"));
	expect_node(g, 0, "bad_matmul", MKC_OP_MATMUL);
	mkc_tensor *b = gb_find(g, "b");
	expect_shape(b, 2, (const int64_t[]){512, 4});
	cr_expect_eq(b->nbytes, 512 * 4 * sizeof(float));
	expect_shape(gb_find(g, "c"), 2, (const int64_t[]){2, 4});
}

Test(onnx_read, unknown_ops_are_kept)
{
	mkc_graph *g = load(HAND("unknown_op.onnx"));
	cr_assert_eq(g->nodes.n, 3);
	expect_node(g, 0, "add_ok", MKC_OP_ADD);
	expect_node(g, 1, "frob_a", MKC_OP_UNKNOWN);
	expect_node(g, 2, "zork_1", MKC_OP_UNKNOWN);
	cr_expect_str_eq(MKC_NODE(g, 1)->op_type, "FrobnicateA");
	cr_expect_str_eq(MKC_NODE(g, 2)->op_type, "Zork");
	cr_expect_eq(MKC_NODE(g, 2)->out[0], gb_find(g, "y"));
}

/* small_mlp: the ONNX backend-test layout. */

TestSuite(onnx_mlp, .init = setup, .fini = teardown);

static uint32_t
bits_at(const mkc_tensor *t, size_t i)
{
	uint32_t b;
	cr_assert_leq((i + 1) * 4, t->nbytes);
	memcpy(&b, (const unsigned char *)t->data + 4 * i, 4);
	return b;
}

Test(onnx_mlp, folder_load)
{
	mkc_graph *g = mkc_load_model(ctx, HAND("small_mlp"));
	cr_assert_not_null(g, "%s", errs());
	cr_expect_str_eq(g->path, HAND("small_mlp/model.onnx"));
	cr_expect_str_eq(g->name, "small_mlp");
	cr_assert_eq(g->inputs.n, 1);
	expect_shape(MKC_INPUT(g, 0), 2, (const int64_t[]){1, 8});
	cr_assert_eq(g->outputs.n, 1);
	expect_shape(MKC_OUTPUT(g, 0), 2, (const int64_t[]){1, 4});
	static const char *const w[] = {"W1", "b1", "W2"};
	for (int i = 0; i < 3; i++)
		cr_expect_str_eq(MKC_TENSOR(g, i)->name, w[i]);
	expect_shape(gb_find(g, "W1"), 2, (const int64_t[]){8, 16});
	expect_shape(gb_find(g, "b1"), 1, (const int64_t[]){16});
	expect_shape(gb_find(g, "W2"), 2, (const int64_t[]){16, 4});
	cr_expect_eq(bits_at(gb_find(g, "W1"), 0), 0x3e801907u);
}

Test(onnx_mlp, nodes)
{
	mkc_graph *g = mkc_load_model(ctx, HAND("small_mlp/model.onnx"));
	cr_assert_not_null(g, "%s", errs());
	cr_assert_eq(g->nodes.n, 5);
	expect_node(g, 0, "mm1", MKC_OP_MATMUL);
	expect_node(g, 1, "add_b1", MKC_OP_ADD);
	expect_node(g, 2, "sigmoid", MKC_OP_SIGMOID);
	expect_node(g, 3, "mul_silu", MKC_OP_MUL);
	expect_node(g, 4, "mm2", MKC_OP_MATMUL);
	mkc_node *mul = MKC_NODE(g, 3);
	cr_expect_eq(mul->in[0], gb_find(g, "h"));
	cr_expect_eq(mul->in[1], gb_find(g, "s"));
	cr_expect_eq(gb_find(g, "h")->producer, MKC_NODE(g, 1));
}

Test(onnx_mlp, test_data)
{
	mkc_tensor in, out;
	cr_assert_eq(mkc_onnx_read_tensor(ctx, HAND("small_mlp/test_data_set_0/input_0.pb"), &in),
		     0, "%s", errs());
	cr_expect_str_eq(in.name, "x");
	cr_expect_eq(in.dtype, MKC_DT_FLOAT);
	expect_shape(&in, 2, (const int64_t[]){1, 8});
	expect_bytes(&in, (const float[]){0.708018124f, -0.89858073f, -0.322679847f,
		-0.363993615f, -0.774565995f, 0.253223628f, 0.594916344f, -0.372557044f},
		8 * sizeof(float));
	cr_assert_eq(mkc_onnx_read_tensor(ctx, HAND("small_mlp/test_data_set_0/output_0.pb"), &out),
		     0, "%s", errs());
	cr_expect_str_eq(out.name, "y");
	expect_shape(&out, 2, (const int64_t[]){1, 4});
	expect_bytes(&out, (const uint32_t[]){0x4044515e, 0xbff2187e, 0x401de4ff, 0x3fe8d2e3},
		     4 * sizeof(float));
}

/* The tiny Llama decode-step exports. */

TestSuite(onnx_llama, .init = setup, .fini = teardown);

static void
expect_llama_io(const mkc_graph *g)
{
	static const char *const in[] = {"input_ids", "position_ids",
		"past_key_values.0.key", "past_key_values.0.value",
		"past_key_values.1.key", "past_key_values.1.value"};
	static const char *const out[] = {"logits", "present.0.key",
		"present.0.value", "present.1.key", "present.1.value"};
	cr_assert_eq(g->inputs.n, 6);
	cr_assert_eq(g->outputs.n, 5);
	cr_assert_eq(g->syms.n, 1);
	cr_expect_str_eq(MKC_SYM(g, 0), "past_len");
	for (int i = 0; i < 6; i++) {
		mkc_tensor *t = MKC_INPUT(g, i);
		cr_expect_str_eq(t->name, in[i]);
		cr_expect_eq(t->dtype, i < 2 ? MKC_DT_INT64 : MKC_DT_FLOAT, "'%s'", in[i]);
		expect_shape_str(g, t, i < 2 ? "[1,1]" : "[1,2,past_len,32]");
	}
	for (int i = 0; i < 5; i++) {
		mkc_tensor *t = MKC_OUTPUT(g, i);
		cr_expect_str_eq(t->name, out[i]);
		cr_expect_eq(t->dtype, MKC_DT_FLOAT);
		cr_expect_not_null(t->producer, "'%s'", out[i]);
		expect_shape_str(g, t, i == 0 ? "[1,1,1024]" : "[1,2,past_len+1,32]");
	}
}

static void
expect_sorted(const mkc_graph *g)
{
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		cr_expect_eq(n->id, i);
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] && n->in[j]->producer)
				cr_expect_lt(n->in[j]->producer->id, i, "node '%s'", n->name);
	}
}

Test(onnx_llama, op18)
{
	mkc_graph *g = load(LLAMA18 "/model.onnx");
	cr_expect_eq(g->nodes.n, 180);
	cr_expect_eq(count_kind(g, MKC_TK_WEIGHT), 43);
	cr_expect_eq(mkc_graph_opset(g, ""), 18);
	cr_expect_eq(g->ir_version, 10);
	expect_llama_io(g);
	expect_sorted(g);
	cr_expect_eq(gb_count_op(g, MKC_OP_UNKNOWN), 0);
	cr_expect_eq(gb_count_op(g, MKC_OP_MATMUL), 20);
	cr_expect_eq(gb_count_op(g, MKC_OP_SOFTMAX), 2);
	expect_node(g, 0, "node_Shape_0", MKC_OP_SHAPE);
	cr_expect_eq(gb_find_node(g, "node_Softmax_144")->op, MKC_OP_SOFTMAX);
	expect_shape(gb_find(g, "m.model.layers.0.input_layernorm.weight"), 1,
		     (const int64_t[]){256});
}

Test(onnx_llama, op23)
{
	mkc_graph *g = load(LLAMA23 "/model.onnx");
	cr_expect_eq(g->nodes.n, 96);
	cr_expect_eq(count_kind(g, MKC_TK_WEIGHT), 34);
	cr_expect_eq(mkc_graph_opset(g, ""), 23);
	expect_llama_io(g);
	expect_sorted(g);
	cr_expect_eq(gb_count_op(g, MKC_OP_UNKNOWN), 0);
	cr_expect_eq(gb_count_op(g, MKC_OP_RMS_NORM), 5);
	cr_expect_eq(gb_count_op(g, MKC_OP_ROTARY), 4);
	cr_expect_eq(gb_count_op(g, MKC_OP_ATTENTION), 2);
	mkc_node *att = gb_find_node(g, "node_scaled_dot_product_attention");
	cr_expect_eq(att->op, MKC_OP_ATTENTION);
	cr_expect_eq(att->nin, 4);
}

Test(onnx_llama, folder_load)
{
	mkc_graph *g = mkc_load_model(ctx, LLAMA23);
	cr_assert_not_null(g, "%s", errs());
	cr_expect_str_eq(g->path, LLAMA23 "/model.onnx");
	cr_expect_eq(g->nodes.n, 96);
}

Test(onnx_llama, json_goes_to_the_json_reader)
{
	/* what it reads is tested in test_onnx_json.c */
	mkc_graph *g = mkc_load_model(ctx, LLAMA18 "/model.json");
	cr_assert_not_null(g, "%s", errs());
	cr_expect_str_eq(g->path, LLAMA18 "/model.json");
	cr_expect_eq(g->nodes.n, 180);
}

Test(onnx_llama, folder_without_model)
{
	cr_expect_null(mkc_load_model(ctx, HAND("small_mlp/test_data_set_0")));
	expect_contains(ctx->errors, HAND("small_mlp/test_data_set_0"));
	expect_contains(ctx->errors, "model.onnx");
}

/* Test data of the opset-18 model, matched to its inputs by position. */

static mkc_tensor
read_pb(const char *file)
{
	char path[256];
	snprintf(path, sizeof path, LLAMA18 "/test_data_set_0/%s", file);
	mkc_tensor t;
	cr_assert_eq(mkc_onnx_read_tensor(ctx, path, &t), 0, "%s: %s", path, errs());
	return t;
}

Test(onnx_llama, read_test_inputs)
{
	mkc_tensor t = read_pb("input_0.pb");
	cr_expect_str_eq(t.name, "input_ids");
	cr_expect_eq(t.dtype, MKC_DT_INT64);
	expect_shape(&t, 2, (const int64_t[]){1, 1});
	expect_bytes(&t, (const int64_t[]){17}, sizeof(int64_t));
	cr_expect_null(t.ext_file);
	t = read_pb("input_1.pb");
	cr_expect_str_eq(t.name, "position_ids");
	expect_bytes(&t, (const int64_t[]){7}, sizeof(int64_t));
	t = read_pb("input_2.pb");
	cr_expect_str_eq(t.name, "past_key_values.0.key");
	cr_expect_eq(t.dtype, MKC_DT_FLOAT);
	expect_shape(&t, 4, (const int64_t[]){1, 2, 7, 32});
	cr_assert_eq(t.nbytes, 2 * 7 * 32 * sizeof(float));
	cr_expect_eq(bits_at(&t, 0), 0xbf791f2du);
	cr_expect_eq(bits_at(&t, 1), 0xbfa677ffu);
	cr_expect_eq(bits_at(&t, 2 * 7 * 32 - 1), 0x3e9b5a23u);
}

Test(onnx_llama, test_data_names_match_graph)
{
	mkc_graph *g = load(LLAMA18 "/model.onnx");
	for (int i = 0; i < 6; i++) {
		char f[32];
		snprintf(f, sizeof f, "input_%d.pb", i);
		mkc_tensor t = read_pb(f);
		cr_expect_str_eq(t.name, MKC_INPUT(g, i)->name);
		cr_expect_eq(t.dtype, MKC_INPUT(g, i)->dtype);
	}
	mkc_tensor logits = read_pb("output_0.pb");
	cr_expect_str_eq(logits.name, "logits");
	expect_shape(&logits, 3, (const int64_t[]){1, 1, 1024});
	cr_expect_eq(bits_at(&logits, 0), 0x3dc2ad8au);
	cr_expect_eq(bits_at(&logits, 1), 0x3c38f8dbu);
}

Test(onnx_llama, read_tensor_missing_file)
{
	mkc_tensor t;
	cr_expect_eq(mkc_onnx_read_tensor(ctx, LLAMA18 "/test_data_set_0/input_9.pb", &t), -1);
	expect_contains(ctx->errors, "input_9.pb");
}

/* Bad inputs: NULL, and an error naming the file and the culprit. */

TestSuite(onnx_bad, .init = setup, .fini = teardown);

static void
expect_refused(const char *path, const char *const *needles, int n)
{
	mkc_graph *g = mkc_onnx_load(ctx, path);
	cr_expect_null(g, "%s loaded", path);
	cr_assert_geq(ctx->nerrors, 1, "%s: no error", path);
	expect_contains(ctx->errors, path);
	for (int i = 0; i < n; i++)
		expect_contains(ctx->errors, needles[i]);
}

#define REFUSED(file, ...)                                                     \
	expect_refused(HAND(file), (const char *const[]){__VA_ARGS__},         \
		       (int)(sizeof((const char *const[]){__VA_ARGS__}) /      \
			     sizeof(const char *)))

Test(onnx_bad, empty)
{
	REFUSED("empty.onnx", "empty");
}

Test(onnx_bad, truncated)
{
	REFUSED("truncated.onnx", HAND("truncated.onnx"));
}

Test(onnx_bad, random_bytes)
{
	REFUSED("random.onnx", HAND("random.onnx"));
}

Test(onnx_bad, dangling_input)
{
	REFUSED("dangling.onnx", "ghost", "uses_ghost");
}

Test(onnx_bad, cycle)
{
	REFUSED("cycle.onnx", "cyc_a", "cyc_b");
}

Test(onnx_bad, two_producers)
{
	REFUSED("dup_output.onnx", "'dup'", "w1", "w2");
}

Test(onnx_bad, external_missing)
{
	REFUSED("ext_missing.onnx", "nope.bin", "'w'");
}

Test(onnx_bad, external_short)
{
	REFUSED("ext_short.onnx", "ext_short.bin", "'w'");
}

Test(onnx_bad, external_escapes_folder)
{
	REFUSED("ext_escape.onnx", "../../etc/passwd", "'w'");
}

Test(onnx_bad, external_absolute)
{
	REFUSED("ext_abs.onnx", "/etc/passwd", "'w'");
}

Test(onnx_bad, nonexistent_path)
{
	REFUSED("no_such_model.onnx", "no_such_model.onnx");
	cr_expect_null(mkc_load_model(ctx, HAND("no_such_model.onnx")));
	cr_expect_eq(ctx->nerrors, 2);
}

Test(onnx_bad, folder_is_not_a_model)
{
	cr_expect_null(mkc_onnx_load(ctx, HAND("small_mlp")));
	expect_contains(ctx->errors, HAND("small_mlp"));
}

Test(onnx_bad, context_reused_after_clearing)
{
	static const char *const files[] = {
		HAND("empty.onnx"), HAND("truncated.onnx"), HAND("dangling.onnx"),
		HAND("cycle.onnx"), HAND("dup_output.onnx"), HAND("ext_short.onnx"),
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		mkc_ctx_clear_errors(ctx);
		cr_expect_null(mkc_onnx_load(ctx, files[i]));
		cr_expect_geq(ctx->nerrors, 1, "%s", files[i]);
		expect_contains(ctx->errors, files[i]);
		if (i)
			cr_expect_null(strstr(ctx->errors, files[i - 1]), "stale error");
	}
	mkc_ctx_clear_errors(ctx);
	cr_expect_not_null(mkc_onnx_load(ctx, HAND("storage.onnx")), "%s", errs());
}

/* Many compilations in one process. */

TestSuite(onnx_stress, .init = setup, .fini = teardown);

static int
mappings_of(const char *file)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, file) != NULL;
	fclose(f);
	return n;
}

static void
load_many(int times)
{
	for (int i = 0; i < times; i++) {
		mkc_ctx *c = mkc_ctx_create();
		mkc_graph *g = mkc_onnx_load(c, i % 2 ? HAND("external.onnx") : HAND("storage.onnx"));
		cr_assert_not_null(g, "round %d: %s", i, c->errors ? c->errors : "");
		cr_assert_null(mkc_onnx_load(c, HAND("ext_short.onnx")), "round %d", i);
		mkc_ctx_destroy(c);
	}
}

static size_t
heap_in_use(void)
{
#if defined(__GLIBC__) && !defined(HAVE_LSAN)
	return mallinfo2().uordblks;
#else
	return 0;
#endif
}

Test(onnx_stress, load_200_times)
{
	load_many(10);   /* let stdio and the allocator settle */
	size_t before = heap_in_use();
	load_many(200);
	size_t after = heap_in_use();
	cr_expect_leq(after, before + 64 * 1024, "heap grew by %zu bytes", after - before);
#ifdef HAVE_LSAN
	cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "leaks");
#endif
	cr_expect_eq(mappings_of("hand/external.bin"), 0);
	cr_expect_eq(mappings_of("hand/storage.onnx"), 0);
}

Test(onnx_stress, llama_200_times)
{
	for (int i = 0; i < 200; i++) {
		mkc_ctx *c = mkc_ctx_create();
		cr_assert_not_null(mkc_onnx_load(c, LLAMA23 "/model.onnx"), "round %d", i);
		mkc_ctx_destroy(c);
	}
	cr_expect_eq(mappings_of("tiny_llama_decode_op23/model.onnx"), 0);
}

Test(onnx_stress, files_unmapped_on_destroy)
{
	mkc_graph *g = load(HAND("external.onnx"));
	cr_assert_not_null(g);
	cr_expect_geq(mappings_of("hand/external.bin"), 1, "external.bin is not mapped");
	mkc_ctx_destroy(ctx);
	ctx = mkc_ctx_create();
	cr_expect_eq(mappings_of("hand/external.bin"), 0);
	cr_expect_eq(mappings_of("hand/external.onnx"), 0);
}
