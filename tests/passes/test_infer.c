/*
 * test_infer.c - shape inference, constant folding and dead node removal,
 * on the shared Llama exports, on hand-made ONNX models, and on small graphs
 * built here node by node.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../fixture.h"
#include "../graph_builder.h"
#include "frontend.h"
#include "numeric.h"
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
	cr_assert_eq(t->symval[0].k[0], 1);
	cr_assert_eq(t->symval[0].c, 1);
	cr_assert_str_eq(MKC_SYM(g, t->symval[0].sym[0]), "past_len");
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

static int
run(mkc_graph *g)
{
	cr_assert_eq(mkc_graph_sort(g), 0);
	return mkc_pass_infer(g);
}

Test(infer, broadcast_rules)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "a", MKC_DT_FLOAT, 3, (const char *[]){"p", "1", "4"});
	gb_input_dims(g, "b", MKC_DT_FLOAT, 2, (const char *[]){"5", "1"});
	gb_node_of(g, "Add", "c", 2, (const char *[]){"a", "b"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "c", "[p,5,4]");
}

Test(infer, broadcast_mismatch_names_dims)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "a", MKC_DT_FLOAT, 2, (const char *[]){"3", "4"});
	gb_input_dims(g, "b", MKC_DT_FLOAT, 1, (const char *[]){"5"});
	gb_node_of(g, "Mul", "bad_mul", 2, (const char *[]){"a", "b"});
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "node 'node_bad_mul' (Mul): cannot broadcast dimension 4 against 5"),
		  "%s", ctx->errors);
}

Test(infer, type_mismatch)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "a", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	gb_input_dims(g, "b", MKC_DT_INT64, 1, (const char *[]){"4"});
	gb_node_of(g, "Add", "mixed", 2, (const char *[]){"a", "b"});
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "input types float32 and int64 differ"), "%s", ctx->errors);
}

Test(infer, concat_symbolic_and_mismatch)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "k", MKC_DT_FLOAT, 3, (const char *[]){"2", "past_len", "8"});
	gb_input_dims(g, "n", MKC_DT_FLOAT, 3, (const char *[]){"2", "1", "8"});
	mkc_node *c = gb_node_of(g, "Concat", "kv", 2, (const char *[]){"k", "n"});
	gb_attr_int(g, c, "axis", -2);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "kv", "[2,past_len+1,8]");

	mkc_graph *h = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(h, "k", MKC_DT_FLOAT, 2, (const char *[]){"2", "8"});
	gb_input_dims(h, "n", MKC_DT_FLOAT, 2, (const char *[]){"3", "8"});
	c = gb_node_of(h, "Concat", "bad_cat", 2, (const char *[]){"k", "n"});
	gb_attr_int(h, c, "axis", 1);
	cr_assert_eq(run(h), -1);
	cr_assert(strstr(ctx->errors, "dimension 0 differs: 2 and 3"), "%s", ctx->errors);
}

Test(infer, reshape_with_zero_and_hole)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "past_len", "32"});
	gb_ints(g, "s", 3, (const int64_t[]){0, -1, 32});
	gb_node_of(g, "Reshape", "y", 2, (const char *[]){"x", "s"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[1,8*past_len,32]");
}

Test(infer, reshape_count_mismatch)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"4", "6"});
	gb_ints(g, "s", 2, (const int64_t[]){5, 5});
	gb_node_of(g, "Reshape", "bad_reshape", 2, (const char *[]){"x", "s"});
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "cannot reshape 24 elements into 25"), "%s", ctx->errors);
}

Test(infer, reshape_needs_constant_shape)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	gb_input_dims(g, "s", MKC_DT_INT64, 1, (const char *[]){"2"});
	gb_node_of(g, "Reshape", "dyn_reshape", 2, (const char *[]){"x", "s"});
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "must be an integer tensor known at compile time"),
		  "%s", ctx->errors);
}

Test(infer, slice_symbolic_and_constant)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"past_len", "10"});
	gb_ints(g, "st", 2, (const int64_t[]){1, -4});
	gb_ints(g, "en", 2, (const int64_t[]){INT64_MAX, 100});
	gb_node_of(g, "Slice", "y", 3, (const char *[]){"x", "st", "en"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[past_len-1,4]");
}

Test(infer, slice_with_steps_folds_values)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_ints(g, "v", 6, (const int64_t[]){10, 11, 12, 13, 14, 15});
	gb_ints(g, "st", 1, (const int64_t[]){-1});
	gb_ints(g, "en", 1, (const int64_t[]){INT64_MIN});
	gb_ints(g, "ax", 1, (const int64_t[]){0});
	gb_ints(g, "sp", 1, (const int64_t[]){-2});
	gb_input_dims(g, "x", MKC_DT_INT64, 1, (const char *[]){"3"});
	gb_node_of(g, "Slice", "rev", 5, (const char *[]){"v", "st", "en", "ax", "sp"});
	gb_node_of(g, "Add", "out", 2, (const char *[]){"x", "rev"});
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "emb", MKC_DT_FLOAT, 2, (const char *[]){"1024", "256"});
	gb_input_dims(g, "ids", MKC_DT_INT64, 2, (const char *[]){"1", "1"});
	gb_node_of(g, "Gather", "e", 2, (const char *[]){"emb", "ids"});
	gb_input_dims(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"2", "past_len", "7"});
	gb_node_of(g, "Shape", "sx", 1, (const char *[]){"x"});
	gb_scalar(g, "i", MKC_DT_INT64, -2);
	gb_node_of(g, "Gather", "len", 2, (const char *[]){"sx", "i"});
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"past_len"});
	gb_node_of(g, "Shape", "sx", 1, (const char *[]){"x"});
	gb_scalar(g, "zero", MKC_DT_INT64, 0);
	gb_scalar(g, "one", MKC_DT_INT64, 1);
	gb_node_of(g, "Gather", "p", 2, (const char *[]){"sx", "zero"});
	gb_node_of(g, "Add", "p1", 2, (const char *[]){"p", "one"});
	gb_node_of(g, "Range", "all", 3, (const char *[]){"zero", "p1", "one"});
	gb_node_of(g, "Range", "last", 3, (const char *[]){"p", "p1", "one"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "all", "[past_len+1]");
	expect_shape(g, "last", "[1]");
	mkc_tensor *last = mkc_graph_find(g, "last");
	cr_assert_not_null(last->symval, "Range(p, p+1) is the value {past_len}");
	cr_assert_eq(last->symval[0].k[0], 1);
	cr_assert_eq(last->symval[0].c, 0);
	cr_assert_null(mkc_graph_find(g, "all")->symval, "Range(0, p+1) runs at run time");
}

Test(infer, transpose_and_bad_perm)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"2", "3", "4"});
	mkc_node *t = gb_node_of(g, "Transpose", "y", 1, (const char *[]){"x"});
	gb_attr_ints(g, t, "perm", 3, (int64_t[]){2, 0, 1});
	gb_node_of(g, "Transpose", "rev", 1, (const char *[]){"x"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[4,2,3]");
	expect_shape(g, "rev", "[4,3,2]");

	mkc_graph *h = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(h, "x", MKC_DT_FLOAT, 2, (const char *[]){"2", "3"});
	t = gb_node_of(h, "Transpose", "bad_t", 1, (const char *[]){"x"});
	gb_attr_ints(h, t, "perm", 2, (int64_t[]){1, 1});
	cr_assert_eq(run(h), -1);
	cr_assert(strstr(ctx->errors, "perm is not a permutation"), "%s", ctx->errors);
}

Test(infer, squeeze_unsqueeze_reduce)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"1", "past_len", "8"});
	gb_ints(g, "a0", 1, (const int64_t[]){0});
	gb_ints(g, "am1", 1, (const int64_t[]){-1});
	gb_node_of(g, "Squeeze", "sq", 2, (const char *[]){"x", "a0"});
	gb_node_of(g, "Unsqueeze", "un", 2, (const char *[]){"sq", "am1"});
	gb_node_of(g, "ReduceMean", "mean", 2, (const char *[]){"x", "am1"});
	mkc_node *r = gb_node_of(g, "ReduceSum", "sum", 2, (const char *[]){"x", "am1"});
	gb_attr_int(g, r, "keepdims", 0);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "sq", "[past_len,8]");
	expect_shape(g, "un", "[past_len,8,1]");
	expect_shape(g, "mean", "[1,past_len,1]");
	expect_shape(g, "sum", "[1,past_len]");
}

Test(infer, squeeze_of_non_one_axis)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"3", "1"});
	gb_ints(g, "a0", 1, (const int64_t[]){0});
	gb_node_of(g, "Squeeze", "bad_sq", 2, (const char *[]){"x", "a0"});
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "axis 0 has size 3, not 1"), "%s", ctx->errors);
}

Test(infer, matmul_batched_and_vector)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "a", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "1", "32"});
	gb_input_dims(g, "b", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "32", "past_len"});
	gb_input_dims(g, "v", MKC_DT_FLOAT, 1, (const char *[]){"32"});
	gb_node_of(g, "MatMul", "s", 2, (const char *[]){"a", "b"});
	gb_node_of(g, "MatMul", "av", 2, (const char *[]){"a", "v"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "s", "[1,8,1,past_len]");
	expect_shape(g, "av", "[1,8,1]");
}

Test(infer, gemm_transposed)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "a", MKC_DT_FLOAT, 2, (const char *[]){"3", "5"});
	gb_input_dims(g, "b", MKC_DT_FLOAT, 2, (const char *[]){"7", "5"});
	gb_input_dims(g, "c", MKC_DT_FLOAT, 1, (const char *[]){"7"});
	mkc_node *n = gb_node_of(g, "Gemm", "y", 3, (const char *[]){"a", "b", "c"});
	gb_attr_int(g, n, "transB", 1);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[3,7]");
}

Test(infer, attention_gqa_with_past)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	g->opsets[0].version = 23;
	gb_input_dims(g, "q", MKC_DT_FLOAT, 4, (const char *[]){"1", "8", "1", "32"});
	gb_input_dims(g, "k", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "1", "32"});
	gb_input_dims(g, "v", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "1", "32"});
	gb_input_dims(g, "pk", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "past_len", "32"});
	gb_input_dims(g, "pv", MKC_DT_FLOAT, 4, (const char *[]){"1", "2", "past_len", "32"});
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

/* Tile: shapes times repeats; folded for a constant input; repeats must match the rank. */
Test(infer, tile_shapes_and_fold)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 3, (const char *[]){"1", "seq", "4"});
	gb_ints(g, "r", 3, (const int64_t[]){1, 2, 3});
	gb_node_of(g, "Tile", "y", 2, (const char *[]){"x", "r"});
	gb_ints(g, "c", 2, (const int64_t[]){5, 7});
	gb_ints(g, "r2", 1, (const int64_t[]){3});
	gb_node_of(g, "Tile", "z", 2, (const char *[]){"c", "r2"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	expect_shape(g, "y", "[1,2*seq,12]");
	mkc_tensor *z = mkc_graph_find(g, "z");
	cr_assert_eq(z->nsymval, 6);
	const int64_t want[6] = {5, 7, 5, 7, 5, 7};
	for (int i = 0; i < 6; i++)
		cr_expect_eq(z->symval[i].c, want[i], "element %d", i);
	mkc_graph *h = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(h, "x", MKC_DT_FLOAT, 2, (const char *[]){"2", "4"});
	gb_ints(h, "r", 1, (const int64_t[]){2});
	gb_node_of(h, "Tile", "y", 2, (const char *[]){"x", "r"});
	cr_assert_eq(run(h), -1);
	cr_assert(strstr(ctx->errors, "repeats has 1 values for an input of rank 2"), "%s",
		  ctx->errors);
}

/*
 * MultiHeadAttention (com.microsoft) becomes ONNX Attention with its
 * heads; a mask's free length symbol (total) is bound to the keys' where
 * they broadcast; the forms it does not take are refused by name.
 */
Test(infer, multi_head_attention_is_attention)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "q", MKC_DT_FLOAT, 3, (const char *[]){"1", "1", "64"});
	gb_input_dims(g, "k", MKC_DT_FLOAT, 3, (const char *[]){"1", "past+1", "64"});
	gb_input_dims(g, "v", MKC_DT_FLOAT, 3, (const char *[]){"1", "past+1", "64"});
	gb_input_dims(g, "m", MKC_DT_FLOAT, 4, (const char *[]){"1", "1", "1", "total"});
	gb_input_dims(g, "c", MKC_DT_FLOAT, 4, (const char *[]){"1", "1", "1", "past+1"});
	gb_node_of(g, "Add", "bias", 2, (const char *[]){"m", "c"});
	mkc_node *n = mkc_graph_add_node(g, "mha", "com.microsoft", "MultiHeadAttention", 6, 1, 0);
	const char *in[] = {"q", "k", "v", NULL, NULL, "bias"};
	for (int i = 0; i < 6; i++)
		n->in[i] = in[i] ? mkc_graph_find(g, in[i]) : NULL;
	n->out[0] = mkc_graph_tensor(g, "y");
	n->out[0]->producer = n;
	gb_attr_int(g, n, "num_heads", 4);
	gb_attr_float(g, n, "scale", 0.25f);
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	cr_expect_eq(n->op, MKC_OP_ATTENTION);
	cr_expect_eq(n->nin, 4);
	cr_expect_eq(n->in[3], mkc_graph_find(g, "bias"));
	cr_expect_eq(mkc_node_attr_int(n, "q_num_heads", 0), 4);
	cr_expect_float_eq(mkc_node_attr_float(n, "scale", 0), 0.25f, 1e-9);
	expect_shape(g, "y", "[1,1,64]");
	expect_shape(g, "m", "[1,1,1,past+1]");
	mkc_graph *h = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(h, "q", MKC_DT_FLOAT, 3, (const char *[]){"1", "1", "64"});
	gb_input_dims(h, "kpm", MKC_DT_INT32, 1, (const char *[]){"1"});
	n = mkc_graph_add_node(h, "mha", "com.microsoft", "MultiHeadAttention", 5, 1, 0);
	const char *in2[] = {"q", "q", "q", NULL, "kpm"};
	for (int i = 0; i < 5; i++)
		n->in[i] = in2[i] ? mkc_graph_find(h, in2[i]) : NULL;
	n->out[0] = mkc_graph_tensor(h, "y");
	n->out[0]->producer = n;
	gb_attr_int(h, n, "num_heads", 4);
	cr_assert_eq(run(h), -1);
	cr_assert(strstr(ctx->errors, "key_padding_mask (input 4) are not supported"), "%s",
		  ctx->errors);
}

/* A length compared with a negative number folds (symbols are 0 or more): "-1 means 1". */
Test(infer, a_length_is_never_negative)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"1", "seq"});
	gb_node_of(g, "Shape", "s", 1, (const char *[]){"x"});
	gb_ints(g, "neg", 2, (const int64_t[]){-1, -1});
	gb_node_of(g, "Equal", "e", 2, (const char *[]){"s", "neg"});
	gb_ints(g, "one", 2, (const int64_t[]){1, 1});
	gb_node_of(g, "Where", "w", 3, (const char *[]){"e", "one", "s"});
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	mkc_tensor *w = mkc_graph_find(g, "w");
	cr_assert_eq(w->nsymval, 2);
	char b[64];
	cr_expect_str_eq(mkc_dim_str(g, w->symval[1], b, sizeof b), "seq");
}

Test(infer, where_needs_bool)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "c", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	gb_input_dims(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	gb_node_of(g, "Where", "bad_where", 3, (const char *[]){"c", "x", "x"});
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "the condition is float32, not bool"), "%s", ctx->errors);
}

Test(infer, declared_output_shape_is_checked)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 2, (const char *[]){"2", "3"});
	gb_node_of(g, "Neg", "y", 1, (const char *[]){"x"});
	mkc_tensor *y = gb_output(g, gb_find(g, "y"));
	y->dtype = MKC_DT_FLOAT;
	y->rank = 2;
	y->shape[0] = mkc_dim_const(3);
	y->shape[1] = mkc_dim_const(2);
	cr_assert_eq(run(g), -1);
	cr_assert(strstr(ctx->errors, "output 'y' is declared [3,2] but computed as [2,3]"),
		  "%s", ctx->errors);
}

Test(infer, dce_removes_unused_chains)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, 1, (const char *[]){"4"});
	gb_node_of(g, "Neg", "a", 1, (const char *[]){"x"});
	gb_node_of(g, "Exp", "b", 1, (const char *[]){"a"});    /* nobody reads b */
	gb_node_of(g, "Sqrt", "y", 1, (const char *[]){"x"});
	gb_output(g, gb_find(g, "y"));
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	cr_assert_eq(mkc_pass_dce(g), 0);
	cr_assert_eq(g->nodes.n, 1);
	cr_assert_str_eq(MKC_NODE(g, 0)->name, "node_y");
	cr_assert_eq(mkc_verify_graph(g, true), 0);
}

/* Element i of a folded tensor, as a double. */
static double
folded(mkc_graph *g, const char *name, int64_t i)
{
	mkc_tensor *t = mkc_graph_find(g, name);
	cr_assert(t && t->data, "%s was not folded", name);
	return mkc_load_double(t->dtype, t->data, i);
}

/*
 * Folding computes what the emitted code computes (backends/c/scalar.h):
 * Max, Min and Relu give NaN for a NaN operand in either place (folding
 * took the other operand where the NaN came first) and keep the first of
 * two zeros.
 */
Test(infer, folding_propagates_nan_as_the_bodies_do)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	const int64_t d3[1] = {3};
	mkc_tensor *x = gb_floats(g, "x", 1, d3, (const float[]){NAN, 1, -0.0f});
	mkc_tensor *y = gb_floats(g, "y", 1, d3, (const float[]){1, NAN, 0});
	gb_output(g, gb_op(g, "Max", "mx", x, y));
	gb_output(g, gb_op(g, "Min", "mn", x, y));
	gb_output(g, gb_op(g, "Relu", "rl", x, NULL));
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	for (int i = 0; i < 2; i++) {
		cr_expect(isnan(folded(g, "mx", i)), "Max element %d: %g", i, folded(g, "mx", i));
		cr_expect(isnan(folded(g, "mn", i)), "Min element %d: %g", i, folded(g, "mn", i));
	}
	cr_expect(folded(g, "mx", 2) == 0 && signbit(folded(g, "mx", 2)), "Max(-0, +0) is -0");
	cr_expect(folded(g, "mn", 2) == 0 && signbit(folded(g, "mn", 2)), "Min(-0, +0) is -0");
	cr_expect(isnan(folded(g, "rl", 0)), "Relu(NaN): %g", folded(g, "rl", 0));
	cr_expect(folded(g, "rl", 2) == 0 && signbit(folded(g, "rl", 2)), "Relu(-0) is -0");
}

/* Pow(base, exponent) in the given types at opset; 0 or -1 from inference. */
static int
pow_of(mkc_dtype base, mkc_dtype exponent, int64_t opset)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", opset);
	gb_input_dims(g, "b", base, 1, (const char *[]){"4"});
	gb_input_dims(g, "e", exponent, 1, (const char *[]){"4"});
	gb_node_of(g, "Pow", "p", 2, (const char *[]){"b", "e"});
	mkc_ctx_clear_errors(ctx);
	int rc = run(g);
	if (rc == 0)
		cr_expect_eq(mkc_graph_find(g, "p")->dtype, base, "the result has the base's type");
	return rc;
}

/*
 * Pow's types as the spec has them: the result is the base's type (an
 * integer to a float power is an integer), the base int32, int64 or a
 * float; from opset 12 the exponent any number, before it the base's
 * float type.
 */
Test(infer, pow_types)
{
	cr_expect_eq(pow_of(MKC_DT_INT32, MKC_DT_FLOAT, 18), 0, "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_INT64, MKC_DT_DOUBLE, 15), 0, "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_FLOAT, MKC_DT_INT64, 12), 0, "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_FLOAT, MKC_DT_UINT8, 18), 0, "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_FLOAT, MKC_DT_FLOAT, 7), 0, "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_BOOL, MKC_DT_FLOAT, 18), -1);
	cr_expect(strstr(ctx->errors, "(Pow): the base is bool; Pow takes int32, int64"),
		  "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_INT8, MKC_DT_INT8, 18), -1);
	cr_expect(strstr(ctx->errors, "the base is int8"), "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_FLOAT, MKC_DT_BOOL, 18), -1);
	cr_expect(strstr(ctx->errors, "the exponent is bool; Pow takes a number"), "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_FLOAT, MKC_DT_INT64, 11), -1);
	cr_expect(strstr(ctx->errors, "the exponent is int64 and the base float32; before opset 12"),
		  "%s", ctx->errors);
	cr_expect_eq(pow_of(MKC_DT_INT32, MKC_DT_INT32, 11), -1);
	cr_expect(strstr(ctx->errors, "Pow takes float16, float32 or float64 before opset 12"), "%s",
		  ctx->errors);
}

/*
 * Integer powers fold to what the emitted code computes (backends/c/scalar.h):
 * an integer to a float power is an integer (4^1.5 is 8), and an integer
 * power is exact beyond 2^53 (through double, 3^39 lost its last digits);
 * one that does not fit in int64 is an error.
 */
Test(infer, folding_integer_powers_as_the_bodies_do)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	mkc_tensor *k = gb_ints(g, "k", 3, (const int64_t[]){4, 2, 9});
	mkc_tensor *e = gb_floats(g, "e", 1, (const int64_t[]){3}, (const float[]){1.5f, 0.5f, 0.5f});
	gb_output(g, gb_op(g, "Pow", "pk", k, e));
	mkc_tensor *three = gb_ints(g, "three", 1, (const int64_t[]){3});
	mkc_tensor *n39 = gb_ints(g, "n39", 1, (const int64_t[]){39});
	gb_output(g, gb_op(g, "Pow", "p39", three, n39));
	cr_assert_eq(run(g), 0, "%s", ctx->errors);
	const int64_t pk[3] = {8, 1, 3};
	cr_expect_eq(mkc_graph_find(g, "pk")->dtype, MKC_DT_INT64);
	for (int i = 0; i < 3; i++)
		cr_expect_eq((int64_t)folded(g, "pk", i), pk[i], "4, 2, 9 ** 1.5, 0.5, 0.5: element %d", i);
	cr_expect_eq(mkc_load_int(MKC_DT_INT64, mkc_graph_find(g, "p39")->data, 0),
		     INT64_C(4052555153018976267));

	mkc_graph *h = gb_graph(ctx, "hand.onnx", 18);
	mkc_tensor *two = gb_ints(h, "two", 1, (const int64_t[]){2});
	mkc_tensor *n63 = gb_ints(h, "n63", 1, (const int64_t[]){63});
	gb_output(h, gb_op(h, "Pow", "p63", two, n63));
	cr_assert_eq(run(h), -1);
	cr_expect(strstr(ctx->errors, "(Pow): the integer result of element 0 does not fit in int64"),
		  "%s", ctx->errors);
}

/* LayerNormalization(x, scale) with x [dims of x] and scale [dims of s]; 0 or -1. */
static int
norm_of(int xr, const char *const *xd, int sr, const int64_t *sd)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input_dims(g, "x", MKC_DT_FLOAT, xr, xd);
	gb_weight(g, "s", MKC_DT_FLOAT, sr, sd);
	gb_node_of(g, "LayerNormalization", "y", 2, (const char *[]){"x", "s"});
	mkc_ctx_clear_errors(ctx);
	return run(g);
}

/*
 * A norm's scale (or bias) broadcasts to X one way, as the spec has it: per
 * row ([3,1]), across rows ([1,8]), one value, all of X. An extent that is
 * neither 1 nor X's, or a constant against X's symbol (which the body
 * would read past at run time), is refused naming the node and the axis.
 */
Test(infer, norm_scales_broadcast_to_the_input)
{
	const char *const x38[2] = {"3", "8"}, *const xb8[2] = {"batch", "8"};
	cr_expect_eq(norm_of(2, x38, 2, (const int64_t[]){3, 1}), 0, "%s", ctx->errors);
	cr_expect_eq(norm_of(2, x38, 2, (const int64_t[]){1, 8}), 0, "%s", ctx->errors);
	cr_expect_eq(norm_of(2, x38, 1, (const int64_t[]){1}), 0, "%s", ctx->errors);
	cr_expect_eq(norm_of(2, x38, 2, (const int64_t[]){3, 8}), 0, "%s", ctx->errors);
	cr_expect_eq(norm_of(2, xb8, 1, (const int64_t[]){8}), 0, "%s", ctx->errors);
	cr_expect_eq(norm_of(2, x38, 1, (const int64_t[]){4}), -1);
	cr_expect(strstr(ctx->errors, "(LayerNormalization): 's' has extent 4 on axis 1 where the "
				      "input has 8: a scale or bias must broadcast to the input"),
		  "%s", ctx->errors);
	cr_expect_eq(norm_of(2, xb8, 2, (const int64_t[]){3, 1}), -1);
	cr_expect(strstr(ctx->errors, "'s' has extent 3 on axis 0 where the input has batch"), "%s",
		  ctx->errors);
	cr_expect_eq(norm_of(2, x38, 3, (const int64_t[]){1, 3, 8}), -1);
	cr_expect(strstr(ctx->errors, "'s' has rank 3, more than the input's 2"), "%s", ctx->errors);
}
