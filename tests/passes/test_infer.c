/*
 * test_infer.c - shape inference, constant folding and dead node removal,
 * on the shared Llama exports, on hand-made ONNX models, and on small graphs
 * built here node by node.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../fixture.h"
#include "frontend.h"
#include "passes.h"

#define MODEL(p) "tests/models/" p

TestSuite(infer, .init = setup, .fini = teardown);

static mkc_graph *
load_and_run(const char *path)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s: %s", path, ctx->errors ? ctx->errors : "");
	int rc = mkc_pass_infer(g);
	cr_assert_eq(rc, 0, "infer: %s", ctx->errors ? ctx->errors : "");
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", ctx->errors ? ctx->errors : "");
	cr_assert_eq(mkc_pass_dce(g), 0);
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", ctx->errors ? ctx->errors : "");
	return g;
}

static void
expect_shape(mkc_graph *g, const char *name, const char *want)
{
	mkc_tensor *t = mkc_graph_find(g, name);
	cr_assert_not_null(t, "no tensor %s", name);
	char b[256];
	cr_assert_str_eq(mkc_shape_str(g, t, b, sizeof b), want, "%s", name);
}

static void
expect_error(const char *path, const char *needle)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s should load: %s", path, ctx->errors ? ctx->errors : "");
	cr_assert_eq(mkc_pass_infer(g), -1, "%s: inference should fail", path);
	cr_assert_not_null(ctx->errors);
	cr_assert(strstr(ctx->errors, path), "error names the file: %s", ctx->errors);
	cr_assert(strstr(ctx->errors, needle), "error should mention '%s': %s", needle,
		  ctx->errors);
}

static int
live_nodes_of(mkc_graph *g, mkc_op op)
{
	int k = 0;
	for (int i = 0; i < g->nodes.n; i++)
		k += MKC_NODE(g, i)->op == op;
	return k;
}

Test(infer, llama_op18)
{
	mkc_graph *g = load_and_run(MODEL("tiny_llama_decode_op18/model.onnx"));
	expect_shape(g, "logits", "[1,1,1024]");
	for (int l = 0; l < 2; l++) {
		char k[64], v[64];
		snprintf(k, sizeof k, "present.%d.key", l);
		snprintf(v, sizeof v, "present.%d.value", l);
		expect_shape(g, k, "[1,2,past_len+1,32]");
		expect_shape(g, v, "[1,2,past_len+1,32]");
	}
	expect_shape(g, "_unsafe_view", "[1,8,past_len+1,32]");
	expect_shape(g, "val_138", "[1,8,32,past_len+1]");
	expect_shape(g, "embedding", "[1,1,256]");
	/* Shape -> Squeeze -> Add folded into the value past_len + 1 */
	mkc_tensor *t = mkc_graph_find(g, "add_16");
	cr_assert_not_null(t->symval);
	cr_assert_eq(t->symval[0].k, 1);
	cr_assert_eq(t->symval[0].c, 1);
	cr_assert_str_eq(MKC_SYM(g, t->symval[0].sym), "past_len");
	cr_assert_null(t->producer, "a folded tensor has no producer after dce");
	/* all shape arithmetic is gone; the real work stays */
	cr_assert_eq(live_nodes_of(g, MKC_OP_SHAPE), 0);
	cr_assert_eq(live_nodes_of(g, MKC_OP_MATMUL), 20);
	cr_assert_eq(live_nodes_of(g, MKC_OP_SOFTMAX), 2);
	cr_assert_lt(g->nodes.n, 180);
}

Test(infer, llama_op23)
{
	mkc_graph *g = load_and_run(MODEL("tiny_llama_decode_op23/model.onnx"));
	expect_shape(g, "logits", "[1,1,1024]");
	expect_shape(g, "present.1.value", "[1,2,past_len+1,32]");
	expect_shape(g, "scaled_dot_product_attention", "[1,8,1,32]");
	expect_shape(g, "mul_32", "[1,1,256]");
	cr_assert_eq(live_nodes_of(g, MKC_OP_ATTENTION), 2);
	cr_assert_eq(live_nodes_of(g, MKC_OP_RMS_NORM), 5);
	cr_assert_eq(live_nodes_of(g, MKC_OP_ROTARY), 4);
	cr_assert_eq(g->nodes.n, 87);
}

Test(infer, symbolic_reshape_cancels_common_dims)
{
	mkc_graph *g = load_and_run(MODEL("hand/symbolic.onnx"));
	expect_shape(g, "z", "[batch,past_len+1,4]");
	expect_shape(g, "d", "[batch,past_len+1,4]");
	cr_assert_eq(g->nodes.n, 3, "the shape arithmetic folds away");
}

Test(infer, symbolic_product_is_refused)
{
	expect_error(MODEL("hand/symbolic_product.onnx"), "reshape_w");
	cr_assert(strstr(ctx->errors, "product of two symbolic dimensions"));
}

Test(infer, matmul_mismatch)
{
	expect_error(MODEL("hand/matmul_mismatch.onnx"),
		     "node 'bad_matmul' (MatMul): inner dimensions 256 and 512 differ");
}

Test(infer, unknown_ops_are_all_listed)
{
	expect_error(MODEL("hand/unknown_op.onnx"), "'frob_a' (FrobnicateA)");
	cr_assert(strstr(ctx->errors, "'zork_1' (Zork)"));
	cr_assert_null(strstr(ctx->errors, "add_ok"));
	cr_assert_eq(ctx->nerrors, 2);
}

Test(infer, constants_fold)
{
	mkc_graph *g = load_and_run(MODEL("hand/constants.onnx"));
	mkc_tensor *sum = mkc_graph_find(g, "c_sum");
	cr_assert_not_null(sum->data);
	const float *f = sum->data;
	cr_assert_float_eq(f[0], 4.5f, 0);
	cr_assert_float_eq(f[1], 5.5f, 0);
	expect_shape(g, "c_value_float", "[]");
	expect_shape(g, "c_value_ints", "[2]");
	mkc_tensor *ints = mkc_graph_find(g, "c_value_ints");
	cr_assert_eq(ints->dtype, MKC_DT_INT64);
	cr_assert_eq(((const int64_t *)ints->data)[1], 5);
	/* the outputs still need their nodes: constants are written at run time */
	cr_assert_eq(g->nodes.n, 6);
}

Test(infer, small_mlp)
{
	mkc_graph *g = load_and_run(MODEL("hand/small_mlp/model.onnx"));
	expect_shape(g, "h", "[1,16]");
	expect_shape(g, "y", "[1,4]");
	cr_assert_eq(g->nodes.n, 5);
}

/* Graphs built by hand. */

static mkc_graph *
new_graph(void)
{
	mkc_graph *g = mkc_graph_create(ctx, "hand.onnx");
	g->nopsets = 1;
	g->opsets = mkc_arena_alloc(ctx->arena, sizeof *g->opsets);
	g->opsets[0] = (mkc_opset){"", 18};
	return g;
}

static mkc_tensor *
input(mkc_graph *g, const char *name, mkc_dtype dt, int rank, const char **dims)
{
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->kind = MKC_TK_INPUT;
	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		cr_assert(mkc_dim_parse(g, dims[i], true, &t->shape[i]));
	mkc_vec_push(ctx->arena, &g->inputs, t);
	return t;
}

static mkc_tensor *
ints(mkc_graph *g, const char *name, int n, const int64_t *v, bool scalar)
{
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->kind = MKC_TK_WEIGHT;
	t->dtype = MKC_DT_INT64;
	t->rank = scalar ? 0 : 1;
	t->shape[0] = mkc_dim_const(n);
	int64_t *d = mkc_arena_alloc(ctx->arena, (size_t)n * 8 + 8);
	memcpy(d, v, (size_t)n * 8);
	t->data = d;
	t->nbytes = (size_t)n * 8;
	return t;
}

static mkc_node *
node(mkc_graph *g, const char *op, int nin, const char **in, const char *out)
{
	mkc_node *n = mkc_graph_add_node(g, out, "", op, nin, 1, 0);
	for (int i = 0; i < nin; i++)
		n->in[i] = in[i] ? mkc_graph_tensor(g, in[i]) : NULL;
	n->out[0] = mkc_graph_tensor(g, out);
	n->out[0]->producer = n;
	return n;
}

static void
int_attr(mkc_node *n, const char *name, int64_t v)
{
	mkc_attr *a = mkc_arena_alloc(ctx->arena, (size_t)(n->nattr + 1) * sizeof *a);
	memcpy(a, n->attr, (size_t)n->nattr * sizeof *a);
	a[n->nattr] = (mkc_attr){.name = name, .type = MKC_AT_INT, .i = v};
	n->attr = a;
	n->nattr++;
}

static void
ints_attr(mkc_node *n, const char *name, int cnt, int64_t *v)
{
	mkc_attr *a = mkc_arena_alloc(ctx->arena, (size_t)(n->nattr + 1) * sizeof *a);
	memcpy(a, n->attr, (size_t)n->nattr * sizeof *a);
	a[n->nattr] = (mkc_attr){.name = name, .type = MKC_AT_INTS, .n = cnt, .ints = v};
	n->attr = a;
	n->nattr++;
}

static int
run(mkc_graph *g)
{
	cr_assert_eq(mkc_graph_sort(g), 0);
	return mkc_pass_infer(g);
}

Test(infer, broadcast_rules)
{
	mkc_graph *g = new_graph();
	input(g, "a", MKC_DT_FLOAT, 3, (const char *[]){"p", "1", "4"});
	input(g, "b", MKC_DT_FLOAT, 2, (const char *[]){"5", "1"});
	node(g, "Add", 2, (const char *[]){"a", "b"}, "c");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "c", "[p,5,4]");
}

Test(infer, broadcast_mismatch_names_dims)
{
	mkc_graph *g = new_graph();
	input(g, "a", MKC_DT_FLOAT, 2, (const char *[]){"3", "4"});
	input(g, "b", MKC_DT_FLOAT, 1, (const char *[]){"5"});
	node(g, "Mul", 2, (const char *[]){"a", "b"}, "bad_mul");
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "node 'bad_mul' (Mul): cannot broadcast dimension 4 against 5"),
		  "%s", ctx->errors);
}

Test(infer, type_mismatch)
{
	mkc_graph *g = new_graph();
	input(g, "a", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	input(g, "b", MKC_DT_INT64, 1, (const char *[]){"4"});
	node(g, "Add", 2, (const char *[]){"a", "b"}, "mixed");
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "input types float32 and int64 differ"), "%s", ctx->errors);
}

Test(infer, concat_symbolic_and_mismatch)
{
	mkc_graph *g = new_graph();
	input(g, "k", MKC_DT_FLOAT, 3, (const char *[]){"2", "past_len", "8"});
	input(g, "n", MKC_DT_FLOAT, 3, (const char *[]){"2", "1", "8"});
	mkc_node *c = node(g, "Concat", 2, (const char *[]){"k", "n"}, "kv");
	int_attr(c, "axis", -2);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "kv", "[2,past_len+1,8]");

	mkc_graph *h = new_graph();
	input(h, "k", MKC_DT_FLOAT, 2, (const char *[]){"2", "8"});
	input(h, "n", MKC_DT_FLOAT, 2, (const char *[]){"3", "8"});
	c = node(h, "Concat", 2, (const char *[]){"k", "n"}, "bad_cat");
	int_attr(c, "axis", 1);
	cr_assert_eq(run(h), -1);
	cr_assert(strstr(ctx->errors, "dimension 0 differs: 2 and 3"), "%s", ctx->errors);
}

Test(infer, reshape_with_zero_and_hole)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "past_len", "32"});
	ints(g, "s", 3, (int64_t[]){0, -1, 32}, false);
	node(g, "Reshape", 2, (const char *[]){"x", "s"}, "y");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[1,8*past_len,32]");
}

Test(infer, reshape_count_mismatch)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"4", "6"});
	ints(g, "s", 2, (int64_t[]){5, 5}, false);
	node(g, "Reshape", 2, (const char *[]){"x", "s"}, "bad_reshape");
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "cannot reshape 24 elements into 25"), "%s", ctx->errors);
}

Test(infer, reshape_needs_constant_shape)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	input(g, "s", MKC_DT_INT64, 1, (const char *[]){"2"});
	node(g, "Reshape", 2, (const char *[]){"x", "s"}, "dyn_reshape");
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "must be an integer tensor known at compile time"),
		  "%s", ctx->errors);
}

Test(infer, slice_symbolic_and_constant)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"past_len", "10"});
	ints(g, "st", 2, (int64_t[]){1, -4}, false);
	ints(g, "en", 2, (int64_t[]){INT64_MAX, 100}, false);
	node(g, "Slice", 3, (const char *[]){"x", "st", "en"}, "y");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[past_len-1,4]");
}

Test(infer, slice_with_steps_folds_values)
{
	mkc_graph *g = new_graph();
	ints(g, "v", 6, (int64_t[]){10, 11, 12, 13, 14, 15}, false);
	ints(g, "st", 1, (int64_t[]){-1}, false);
	ints(g, "en", 1, (int64_t[]){INT64_MIN}, false);
	ints(g, "ax", 1, (int64_t[]){0}, false);
	ints(g, "sp", 1, (int64_t[]){-2}, false);
	input(g, "x", MKC_DT_INT64, 1, (const char *[]){"3"});
	node(g, "Slice", 5, (const char *[]){"v", "st", "en", "ax", "sp"}, "rev");
	node(g, "Add", 2, (const char *[]){"x", "rev"}, "out");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	mkc_tensor *r = mkc_graph_find(g, "rev");
	cr_assert_not_null(r->data);
	const int64_t *v = r->data;
	cr_assert_eq(v[0], 15);
	cr_assert_eq(v[1], 13);
	cr_assert_eq(v[2], 11);
}

Test(infer, gather_shape_and_fold)
{
	mkc_graph *g = new_graph();
	input(g, "emb", MKC_DT_FLOAT, 2, (const char *[]){"1024", "256"});
	input(g, "ids", MKC_DT_INT64, 2, (const char *[]){"1", "1"});
	node(g, "Gather", 2, (const char *[]){"emb", "ids"}, "e");
	input(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"2", "past_len", "7"});
	node(g, "Shape", 1, (const char *[]){"x"}, "sx");
	ints(g, "i", 1, (int64_t[]){-2}, true);
	node(g, "Gather", 2, (const char *[]){"sx", "i"}, "len");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "e", "[1,1,256]");
	mkc_tensor *len = mkc_graph_find(g, "len");
	cr_assert_not_null(len->symval);
	char b[64];
	cr_assert_str_eq(mkc_dim_str(g, len->symval[0], b, sizeof b), "past_len");
	cr_assert_null(len->data, "a symbolic value has no bytes");
}

Test(infer, range_symbolic_length)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"past_len"});
	node(g, "Shape", 1, (const char *[]){"x"}, "sx");
	ints(g, "zero", 1, (int64_t[]){0}, true);
	ints(g, "one", 1, (int64_t[]){1}, true);
	node(g, "Gather", 2, (const char *[]){"sx", "zero"}, "p");
	node(g, "Add", 2, (const char *[]){"p", "one"}, "p1");
	node(g, "Range", 3, (const char *[]){"zero", "p1", "one"}, "all");
	node(g, "Range", 3, (const char *[]){"p", "p1", "one"}, "last");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "all", "[past_len+1]");
	expect_shape(g, "last", "[1]");
	mkc_tensor *last = mkc_graph_find(g, "last");
	cr_assert_not_null(last->symval, "Range(p, p+1) is the value {past_len}");
	cr_assert_eq(last->symval[0].k, 1);
	cr_assert_eq(last->symval[0].c, 0);
	cr_assert_null(mkc_graph_find(g, "all")->symval, "Range(0, p+1) runs at run time");
}

Test(infer, transpose_and_bad_perm)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"2", "3", "4"});
	mkc_node *t = node(g, "Transpose", 1, (const char *[]){"x"}, "y");
	ints_attr(t, "perm", 3, (int64_t[]){2, 0, 1});
	node(g, "Transpose", 1, (const char *[]){"x"}, "rev");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[4,2,3]");
	expect_shape(g, "rev", "[4,3,2]");

	mkc_graph *h = new_graph();
	input(h, "x", MKC_DT_FLOAT, 2, (const char *[]){"2", "3"});
	t = node(h, "Transpose", 1, (const char *[]){"x"}, "bad_t");
	ints_attr(t, "perm", 2, (int64_t[]){1, 1});
	cr_assert_eq(run(h), -1);
	cr_assert(strstr(ctx->errors, "perm is not a permutation"), "%s", ctx->errors);
}

Test(infer, squeeze_unsqueeze_reduce)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"1", "past_len", "8"});
	ints(g, "a0", 1, (int64_t[]){0}, false);
	ints(g, "am1", 1, (int64_t[]){-1}, false);
	node(g, "Squeeze", 2, (const char *[]){"x", "a0"}, "sq");
	node(g, "Unsqueeze", 2, (const char *[]){"sq", "am1"}, "un");
	node(g, "ReduceMean", 2, (const char *[]){"x", "am1"}, "mean");
	mkc_node *r = node(g, "ReduceSum", 2, (const char *[]){"x", "am1"}, "sum");
	int_attr(r, "keepdims", 0);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "sq", "[past_len,8]");
	expect_shape(g, "un", "[past_len,8,1]");
	expect_shape(g, "mean", "[1,past_len,1]");
	expect_shape(g, "sum", "[1,past_len]");
}

Test(infer, squeeze_of_non_one_axis)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"3", "1"});
	ints(g, "a0", 1, (int64_t[]){0}, false);
	node(g, "Squeeze", 2, (const char *[]){"x", "a0"}, "bad_sq");
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "axis 0 has size 3, not 1"), "%s", ctx->errors);
}

Test(infer, matmul_batched_and_vector)
{
	mkc_graph *g = new_graph();
	input(g, "a", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "1", "32"});
	input(g, "b", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "32", "past_len"});
	input(g, "v", MKC_DT_FLOAT, 1, (const char *[]){"32"});
	node(g, "MatMul", 2, (const char *[]){"a", "b"}, "s");
	node(g, "MatMul", 2, (const char *[]){"a", "v"}, "av");
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "s", "[1,8,1,past_len]");
	expect_shape(g, "av", "[1,8,1]");
}

Test(infer, gemm_transposed)
{
	mkc_graph *g = new_graph();
	input(g, "a", MKC_DT_FLOAT, 2, (const char *[]){"3", "5"});
	input(g, "b", MKC_DT_FLOAT, 2, (const char *[]){"7", "5"});
	input(g, "c", MKC_DT_FLOAT, 1, (const char *[]){"7"});
	mkc_node *n = node(g, "Gemm", 3, (const char *[]){"a", "b", "c"}, "y");
	int_attr(n, "transB", 1);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[3,7]");
}

Test(infer, attention_gqa_with_past)
{
	mkc_graph *g = new_graph();
	g->opsets[0].version = 23;
	input(g, "q", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "1", "32"});
	input(g, "k", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "1", "32"});
	input(g, "v", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "1", "32"});
	input(g, "pk", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "past_len", "32"});
	input(g, "pv", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "past_len", "32"});
	mkc_node *n = mkc_graph_add_node(g, "attn", "", "Attention", 6, 3, 0);
	const char *in[] = {"q", "k", "v", NULL, "pk", "pv"};
	for (int i = 0; i < 6; i++)
		n->in[i] = in[i] ? mkc_graph_find(g, in[i]) : NULL;
	const char *out[] = {"y", "present_k", "present_v"};
	for (int i = 0; i < 3; i++) {
		n->out[i] = mkc_graph_tensor(g, out[i]);
		n->out[i]->producer = n;
	}
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[1,8,1,32]");
	expect_shape(g, "present_k", "[1,2,past_len+1,32]");
	expect_shape(g, "present_v", "[1,2,past_len+1,32]");
}

Test(infer, where_needs_bool)
{
	mkc_graph *g = new_graph();
	input(g, "c", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	input(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	node(g, "Where", 3, (const char *[]){"c", "x", "x"}, "bad_where");
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "the condition is float32, not bool"), "%s", ctx->errors);
}

Test(infer, declared_output_shape_is_checked)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"2", "3"});
	node(g, "Neg", 1, (const char *[]){"x"}, "y");
	mkc_tensor *y = mkc_graph_find(g, "y");
	y->kind = MKC_TK_OUTPUT;
	y->dtype = MKC_DT_FLOAT;
	y->rank = 2;
	y->shape[0] = mkc_dim_const(3);
	y->shape[1] = mkc_dim_const(2);
	mkc_vec_push(ctx->arena, &g->outputs, y);
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "output 'y' is declared [3,2] but computed as [2,3]"),
		  "%s", ctx->errors);
}

Test(infer, dce_removes_unused_chains)
{
	mkc_graph *g = new_graph();
	input(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	node(g, "Neg", 1, (const char *[]){"x"}, "a");
	node(g, "Exp", 1, (const char *[]){"a"}, "b");    /* nobody reads b */
	node(g, "Sqrt", 1, (const char *[]){"x"}, "y");
	mkc_tensor *y = mkc_graph_find(g, "y");
	y->kind = MKC_TK_OUTPUT;
	mkc_vec_push(ctx->arena, &g->outputs, y);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	cr_assert_eq(mkc_pass_dce(g), 0);
	cr_assert_eq(g->nodes.n, 1);
	cr_assert_str_eq(MKC_NODE(g, 0)->name, "y");
	cr_assert_eq(mkc_verify_graph(g, true), 0);
}
