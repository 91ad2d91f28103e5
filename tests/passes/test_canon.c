/*
 * test_canon.c - canonicalisation: the opset-18 Llama export comes out as
 * the same fused graph as the opset-23 one, still computes the same values,
 * and each pattern is left alone when any check it relies on fails (a
 * second reader, a different epsilon position, Slice bounds that are not
 * half, a Softmax over another axis, a mask without the NaN guard).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../mkc_run.h"
#include "../fixture.h"
#include "../graph_builder.h"
#include "frontend.h"
#include "passes.h"

#define LLAMA18 "tests/models/tiny_llama_decode_op18"
#define LLAMA23 "tests/models/tiny_llama_decode_op23"

TestSuite(canon, .init = setup, .fini = teardown);

static mkc_graph *
loaded(const char *dir)
{
	mkc_graph *g = mkc_load_model(ctx, mkc_arena_printf(ctx->arena, "%s/model.onnx", dir));
	cr_assert_not_null(g, "%s", errs());
	return g;
}

static void
infer(mkc_graph *g)
{
	cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
}

/* canon and dce, with the IR checker after each, as the driver runs them */
static mkc_graph *
canonical(mkc_graph *g)
{
	cr_assert_eq(mkc_pass_canon(g), 0, "%s", errs());
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", errs());
	cr_assert_eq(mkc_pass_dce(g), 0, "%s", errs());
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", errs());
	return g;
}

static mkc_graph *
canonical_model(const char *dir)
{
	mkc_graph *g = loaded(dir);
	infer(g);
	return canonical(g);
}

/* The fused blocks of the two Llama exports, counted in one graph. */
static void
expect_fused(const mkc_graph *g, int rms, int rope, int attn)
{
	cr_expect_eq(gb_count_op(g, MKC_OP_RMS_NORM), rms);
	cr_expect_eq(gb_count_op(g, MKC_OP_ROTARY), rope);
	cr_expect_eq(gb_count_op(g, MKC_OP_ATTENTION), attn);
}

Test(canon, both_llama_exports_give_the_same_graph)
{
	mkc_graph *a = canonical_model(LLAMA18), *b = canonical_model(LLAMA23);
	/* op by op the same: the masks were the causal one (see below) */
	for (int op = 0; op < MKC_OP_COUNT; op++) {
		int want = gb_count_op(b, (mkc_op)op);
		cr_expect_eq(gb_count_op(a, (mkc_op)op), want, "%s: %d in op18's graph, %d in op23's",
			     mkc_op_info_of((mkc_op)op)->name, gb_count_op(a, (mkc_op)op),
			     gb_count_op(b, (mkc_op)op));
	}
	/* (one Transpose fewer each since the tied output layer reads the table by rows) */
	cr_expect_eq(a->nodes.n, 63, "%d", a->nodes.n);
	cr_expect_eq(b->nodes.n, 63, "%d", b->nodes.n);
	expect_fused(a, 5, 4, 2);
	cr_expect_eq(gb_count_op(a, MKC_OP_MATMUL), 16);
	/* one Cos and one Sin of the frequencies, shared by every RoPE */
	cr_expect_eq(gb_count_op(a, MKC_OP_COS), 1);
	cr_expect_eq(gb_count_op(b, MKC_OP_SIN), 1);
	/* no Expand left: no copies of key/value heads, no mask */
	cr_expect_eq(gb_count_op(a, MKC_OP_EXPAND), 0);
	cr_expect_eq(gb_count_op(b, MKC_OP_EXPAND), 0);
	for (int i = 0; i < 2; i++) {
		mkc_graph *g = i ? b : a;
		mkc_node *n = gb_find_node(g, "node_scaled_dot_product_attention");
		cr_assert_eq(n->op, MKC_OP_ATTENTION);
		cr_expect_str_eq(n->in[1]->name, "present.0.key");
		cr_expect_str_eq(n->in[2]->name, "present.0.value");
		cr_expect_float_eq(mkc_node_attr_float(n, "scale", 0), 1 / sqrtf(32), 1e-7);
		/* the exporter's causal mask (op18: Where(mask, 0, -3.4e38) of it):
		 * one query sees every key, so neither mask nor is_causal */
		cr_expect_eq(n->nin, 3, "%d inputs", n->nin);
		cr_expect_eq(mkc_node_attr_int(n, "is_causal", -1), 0);
	}
	/* fused nodes keep the names of the nodes they end in */
	cr_expect_eq(gb_find_node(a, "node_mul_32")->op, MKC_OP_RMS_NORM);
	cr_expect_float_eq(mkc_node_attr_float(gb_find_node(a, "node_mul_32"), "epsilon", 0), 1e-5f,
			   1e-12);
	mkc_node *rope = gb_find_node(a, "node_add_34");
	cr_expect_eq(rope->op, MKC_OP_ROTARY);
	cr_expect_str_eq(rope->in[0]->name, "transpose_1");
	cr_expect_str_eq(rope->in[1]->producer->op_type, "Cos");
	cr_expect_str_eq(rope->in[1]->producer->in[0]->name, "transpose");
	char b1[64];
	cr_expect_str_eq(mkc_shape_str(a, rope->in[1], b1, sizeof b1), "[1,1,16]");
}

/*
 * A mask canon cannot read as causal stays as the export gives it: op18's
 * Where(mask, 0, -3.4e38) with -1 for the fill is no longer "masked" (its
 * weight is not 0), and the node keeps the float mask. (A fill of -inf is
 * read as the causal mask, as -3.4e38 is: a causal row always sees its
 * first key, so no row is masked entirely, where the two would differ.)
 */
Test(canon, a_mask_that_is_not_the_causal_one_stays)
{
	for (int k = 0; k < 2; k++) {
		mkc_graph *a = loaded(LLAMA18);
		infer(a);
		mkc_tensor *fill = gb_find_node(a, "node_Where_141")->in[2];
		float *v = mkc_arena_alloc(ctx->arena, sizeof *v);
		*v = k ? -INFINITY : -1.0f;
		fill->data = v;
		canonical(a);
		mkc_node *at = gb_find_node(a, "node_scaled_dot_product_attention");
		if (k) {
			cr_expect_eq(at->nin, 3, "a fill of -inf is the causal mask too");
			continue;
		}
		cr_assert_eq(at->nin, 4);
		cr_expect_eq(at->in[3]->dtype, MKC_DT_FLOAT);
		cr_expect_eq(at->in[3]->producer->op, MKC_OP_WHERE);
	}
}

/* `mkc test` compiles through the driver, canon included */
Test(canon, fused_models_still_match_their_reference, .timeout = 300)
{
	mkc_result *r = mkc_run("test", LLAMA18, LLAMA23, NULL);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
	cr_assert(strstr(r->out, "2 passed, 0 failed\n"), "%s", r->out);
	r = mkc_run("test", "--shuffle", "5", "--threads", "8", LLAMA18, NULL);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
	cr_assert(strstr(r->out, "1 passed, 0 failed\n"), "%s", r->out);
}

/* Patterns left alone. */

Test(canon, an_interior_tensor_read_elsewhere_stops_the_rewrite)
{
	mkc_graph *g = loaded(LLAMA18);
	/* a graph output inside the first RMSNorm; a node reading the first
	 * RoPE's rotate_half; another reading the first Softmax */
	gb_output(g, gb_find(g, "rsqrt"));
	for (int i = 0; i < 2; i++) {
		const char *in = i ? "val_144" : "cat_5", *out = i ? "probs" : "rotated";
		mkc_node *n = gb_node_as(g, out, "Identity", out, 1, (mkc_tensor *[]){gb_find(g, in)});
		gb_output(g, n->out[0]);
	}
	infer(g);
	canonical(g);
	expect_fused(g, 4, 3, 1);
	cr_expect_eq(gb_find_node(g, "node_mul_32")->op, MKC_OP_MUL);
	cr_expect_eq(gb_find_node(g, "node_add_34")->op, MKC_OP_ADD);
	cr_expect_eq(gb_find_node(g, "node_scaled_dot_product_attention")->op, MKC_OP_MATMUL);
	cr_expect_eq(gb_find_node(g, "node_scaled_dot_product_attention_1")->op, MKC_OP_ATTENTION);
}

Test(canon, slices_that_are_not_halves_are_not_rope)
{
	mkc_graph *g = loaded(LLAMA18);
	/* q[..., :15] and q[..., 15:]: shapes still fit (17 + 15 = 32) */
	mkc_tensor *t = gb_ints(g, "fifteen", 1, (const int64_t[]){15});
	gb_find_node(g, "node_slice_1")->in[2] = t;
	gb_find_node(g, "node_slice_2")->in[1] = t;
	infer(g);
	canonical(g);
	expect_fused(g, 5, 3, 2);
	cr_expect_eq(gb_find_node(g, "node_add_34")->op, MKC_OP_ADD);
}

Test(canon, softmax_over_another_axis_is_not_attention)
{
	mkc_graph *g = loaded(LLAMA18);
	mkc_attr *axis = (mkc_attr *)mkc_node_attr(gb_find_node(g, "node_Softmax_144"), "axis");
	cr_assert_not_null(axis);
	axis->i = 2;
	infer(g);
	canonical(g);
	expect_fused(g, 5, 4, 1);
	cr_expect_eq(gb_count_op(g, MKC_OP_SOFTMAX), 1);
	/* the first layer's key/value head copies stay for its MatMuls */
	cr_expect_eq(gb_count_op(g, MKC_OP_EXPAND), 3);
}

Test(canon, a_mask_without_the_nan_guard_is_not_attention)
{
	mkc_graph *g = loaded(LLAMA18);
	mkc_node *pv = gb_find_node(g, "node_scaled_dot_product_attention");
	pv->in[0] = mkc_graph_find(g, "val_144");   /* skip Where(IsNaN(p), 0, p) */
	infer(g);
	/* the guard's IsNaN still reads p until dce: that alone would stop the match */
	cr_assert_eq(mkc_pass_dce(g), 0, "%s", errs());
	cr_assert_eq(gb_count_op(g, MKC_OP_ISNAN), 1);
	canonical(g);
	expect_fused(g, 5, 4, 1);
	cr_expect_eq(pv->op, MKC_OP_MATMUL);
}

/*
 * RMSNorm built by hand over x [2, 8] with weight w [8]: the forms that are
 * one, and the ones that are not.
 */
typedef enum {
	RMS_RECIPROCAL, RMS_DIV, RMS_SQUARE_BY_MUL,
	RMS_EPS_AFTER_SQRT, RMS_MEAN_OVER_ROWS, RMS_CUBED, RMS_NO_WEIGHT,
} rms_form;

static mkc_graph *
rms_graph(rms_form form)
{
	mkc_graph *g = gb_graph(ctx, "rms.onnx", 18);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
	mkc_tensor *w = gb_weight(g, "w", MKC_DT_FLOAT, 1, (const int64_t[]){8});
	mkc_tensor *axes = gb_ints(g, "axes", 1, (const int64_t[]){form == RMS_MEAN_OVER_ROWS ? 0 : -1});
	mkc_tensor *eps = gb_scalar(g, "eps", MKC_DT_FLOAT, 1e-6);
	mkc_tensor *power = gb_scalar(g, "p", MKC_DT_FLOAT, form == RMS_CUBED ? 3 : 2);
	mkc_tensor *sq = form == RMS_SQUARE_BY_MUL ? gb_op(g, "Mul", "sq", x, x)
						   : gb_op(g, "Pow", "sq", x, power);
	mkc_tensor *mean = gb_op(g, "ReduceMean", "mean", sq, axes);
	mkc_tensor *rms = form == RMS_EPS_AFTER_SQRT
				  ? gb_op(g, "Add", "rms", gb_op(g, "Sqrt", "root", mean, NULL), eps)
				  : gb_op(g, "Sqrt", "rms", gb_op(g, "Add", "shifted", eps, mean), NULL);
	mkc_tensor *y = form == RMS_DIV
				? gb_op(g, "Div", "normed", x, rms)
				: gb_op(g, "Mul", "normed", gb_op(g, "Reciprocal", "inv", rms, NULL), x);
	if (form != RMS_NO_WEIGHT)
		y = gb_op(g, "Mul", "y", y, w);
	gb_output(g, y);
	infer(g);
	return g;
}

Test(canon, rmsnorm_forms)
{
	const struct {
		rms_form form;
		int fused;
	} cases[] = {
		{RMS_RECIPROCAL, 1}, {RMS_DIV, 1}, {RMS_SQUARE_BY_MUL, 1}, {RMS_EPS_AFTER_SQRT, 0},
		{RMS_MEAN_OVER_ROWS, 0}, {RMS_CUBED, 0}, {RMS_NO_WEIGHT, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mkc_graph *g = canonical(rms_graph(cases[i].form));
		int form = (int)cases[i].form;
		cr_expect_eq(gb_count_op(g, MKC_OP_RMS_NORM), cases[i].fused, "form %d", form);
		if (!cases[i].fused)
			continue;
		cr_expect_eq(g->nodes.n, 1, "form %d", form);
		mkc_node *n = MKC_NODE(g, 0);
		cr_expect_str_eq(n->name, "node_y");
		cr_expect_str_eq(n->in[0]->name, "x");
		cr_expect_str_eq(n->in[1]->name, "w");
		cr_expect_float_eq(mkc_node_attr_float(n, "epsilon", 0), 1e-6f, 1e-13);
	}
}

/*
 * The tied output layer: MatMul(h, Transpose(embedding)) reads the table as
 * stored (mkc_trans_b), the Transpose is gone, and the Gather of the same
 * table still reads it.
 */
Test(canon, a_transposed_weight_is_read_by_rows)
{
	mkc_graph *g = canonical_model(LLAMA18);
	mkc_node *lm = NULL;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->op == MKC_OP_MATMUL && mkc_node_attr_int(n, "mkc_trans_b", 0))
			lm = n;
		cr_expect(!(n->op == MKC_OP_TRANSPOSE && n->in[0]->kind == MKC_TK_WEIGHT),
			  "a weight is still transposed by '%s'", n->name);
	}
	cr_assert_not_null(lm, "no MatMul reads a weight by rows");
	cr_expect_eq(lm->in[1]->kind, MKC_TK_WEIGHT);
	cr_expect_eq(lm->in[1]->rank, 2);
	cr_expect_eq(lm->in[1]->shape[0].c, 1024, "the table is [vocab, hidden]");
}

/*
 * A Transpose that moves only axes of length 1, and a Slice that keeps
 * every element, become Reshapes (views); a Transpose that reorders real
 * axes, or a Slice that walks an axis backwards, stays.
 */
Test(canon, moves_of_length_one_axes_become_reshapes)
{
	mkc_graph *g = gb_graph(ctx, "moves", 23);
	static const int64_t one[4] = {1, 1, 4, 8}, two[4] = {1, 2, 4, 8}, perm[4] = {0, 2, 1, 3};
	static const int64_t start = 0, end = 8, axis = 3, back = -1;
	mkc_tensor *a = gb_input(g, "a", MKC_DT_FLOAT, 4, one);
	mkc_tensor *b = gb_input(g, "b", MKC_DT_FLOAT, 4, two);
	mkc_node *ta = gb_node(g, "Transpose", "ta", 1, (mkc_tensor *[]){a});
	mkc_node *tb = gb_node(g, "Transpose", "tb", 1, (mkc_tensor *[]){b});
	gb_attr_ints(g, ta, "perm", 4, perm);
	gb_attr_ints(g, tb, "perm", 4, perm);
	mkc_tensor *s = gb_ints(g, "s", 1, &start), *e = gb_ints(g, "e", 1, &end);
	mkc_tensor *x = gb_ints(g, "x", 1, &axis), *st = gb_ints(g, "st", 1, &back);
	mkc_tensor *ends = gb_ints(g, "ends", 1, (const int64_t[]){INT64_MIN});
	mkc_node *whole = gb_node(g, "Slice", "whole", 4, (mkc_tensor *[]){a, s, e, x});
	mkc_node *rev = gb_node(g, "Slice", "rev", 5, (mkc_tensor *[]){a, e, ends, x, st});
	gb_output(g, ta->out[0]);
	gb_output(g, tb->out[0]);
	gb_output(g, whole->out[0]);
	gb_output(g, rev->out[0]);
	infer(g);
	canonical(g);
	cr_expect_eq(ta->op, MKC_OP_RESHAPE, "[1,1,4,8] -> [1,4,1,8] moves a 1 only");
	cr_expect_eq(tb->op, MKC_OP_TRANSPOSE, "[1,2,4,8] -> [1,4,2,8] reorders");
	cr_expect_eq(whole->op, MKC_OP_RESHAPE, "a Slice of every element");
	cr_expect_eq(rev->op, MKC_OP_SLICE, "a Slice backwards keeps the shape, not the order");
	char buf[64];
	cr_expect_str_eq(mkc_shape_str(g, ta->out[0], buf, sizeof buf), "[1,4,1,8]");
}
