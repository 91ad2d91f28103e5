/*
 * test_lower.c - the lower pass: kernel descriptions of hand-built nodes
 * carry their attributes resolved by the ONNX rules (Softmax's axis by
 * opset, negative axes, spec defaults, noop_with_empty_axes), known nodes
 * included; tile cuts nodes by them; --dump-after=lower prints them.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fixture.h"
#include "kernel.h"
#include "passes.h"

TestSuite(lower, .init = setup, .fini = teardown);

static mkc_graph *
new_graph(int64_t opset)
{
	mkc_graph *g = mkc_graph_create(ctx, "hand.onnx");
	g->nopsets = 1;
	g->opsets = mkc_arena_alloc(ctx->arena, sizeof *g->opsets);
	g->opsets[0] = (mkc_opset){"", opset};
	return g;
}

static mkc_tensor *
input(mkc_graph *g, const char *name, int rank, const int64_t *dims)
{
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->kind = MKC_TK_INPUT;
	t->dtype = MKC_DT_FLOAT;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = mkc_dim_const(dims[i]);
	mkc_vec_push(ctx->arena, &g->inputs, t);
	return t;
}

static mkc_tensor *
ints(mkc_graph *g, const char *name, int n, const int64_t *v)
{
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->kind = MKC_TK_WEIGHT;
	t->dtype = MKC_DT_INT64;
	t->rank = 1;
	t->shape[0] = mkc_dim_const(n);
	int64_t *d = mkc_arena_alloc(ctx->arena, (size_t)n * 8 + 8);
	memcpy(d, v, (size_t)n * 8);
	t->data = d;
	t->nbytes = (size_t)n * 8;
	return t;
}

/* A node of one output, made a graph output so that dce keeps it. */
static mkc_node *
node(mkc_graph *g, const char *op, int nin, const char **in, const char *out)
{
	mkc_node *n = mkc_graph_add_node(g, out, "", op, nin, 1, 0);
	for (int i = 0; i < nin; i++)
		n->in[i] = in[i] ? mkc_graph_tensor(g, in[i]) : NULL;
	n->out[0] = mkc_graph_tensor(g, out);
	n->out[0]->producer = n;
	n->out[0]->kind = MKC_TK_OUTPUT;
	mkc_vec_push(ctx->arena, &g->outputs, n->out[0]);
	return n;
}

static void
attr(mkc_node *n, mkc_attr at)
{
	mkc_attr *a = mkc_arena_alloc(ctx->arena, (size_t)(n->nattr + 1) * sizeof *a);
	memcpy(a, n->attr, (size_t)n->nattr * sizeof *a);
	a[n->nattr++] = at;
	n->attr = a;
}

static void
int_attr(mkc_node *n, const char *name, int64_t v)
{
	attr(n, (mkc_attr){.name = name, .type = MKC_AT_INT, .i = v});
}

static void
float_attr(mkc_node *n, const char *name, float v)
{
	attr(n, (mkc_attr){.name = name, .type = MKC_AT_FLOAT, .f = v});
}

/* infer, then lower; the node's description. */
static const mkc_kernel *
lowered(mkc_graph *g, mkc_node *n)
{
	cr_assert_eq(mkc_graph_sort(g), 0);
	cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_lower(g), 0, "%s", errs());
	cr_assert_not_null(n->kern);
	return n->kern;
}

static const int64_t dims3[] = {2, 3, 4};

static const mkc_kernel *
softmax(int64_t opset, bool with_axis, int64_t axis)
{
	mkc_graph *g = new_graph(opset);
	input(g, "x", 3, dims3);
	mkc_node *n = node(g, "Softmax", 1, (const char *[]){"x"}, "y");
	if (with_axis)
		int_attr(n, "axis", axis);
	return lowered(g, n);
}

/* Before opset 13 the rows are every axis from 1 on; from 13, the last axis alone. */
Test(lower, softmax_axis_by_opset)
{
	const mkc_kernel *k = softmax(11, false, 0);
	cr_assert_eq(k->kind, MKC_KERN_ROWS);
	cr_assert_eq(k->axis, 1);
	cr_assert(!k->one_axis);
	k = softmax(13, false, 0);
	cr_assert_eq(k->axis, 2);
	cr_assert(k->one_axis);
}

Test(lower, negative_axis_made_non_negative)
{
	const mkc_kernel *k = softmax(13, true, -2);
	cr_assert_eq(k->axis, 1);
	cr_assert(k->one_axis);
	mkc_graph *g = new_graph(18);
	input(g, "x", 3, dims3);
	ints(g, "i", 2, (const int64_t[]){0, 1});
	mkc_node *n = node(g, "Gather", 2, (const char *[]){"x", "i"}, "y");
	int_attr(n, "axis", -1);
	k = lowered(g, n);
	cr_assert_eq(k->kind, MKC_KERN_GATHER);
	cr_assert_eq(k->axis, 2);
}

Test(lower, gemm_alpha_beta_trans)
{
	mkc_graph *g = new_graph(18);
	input(g, "a", 2, (const int64_t[]){2, 4});
	input(g, "b", 2, (const int64_t[]){3, 4});
	input(g, "c", 1, (const int64_t[]){3});
	mkc_node *n = node(g, "Gemm", 3, (const char *[]){"a", "b", "c"}, "y");
	int_attr(n, "transB", 1);
	float_attr(n, "alpha", 0.5f);
	float_attr(n, "beta", 2.0f);
	mkc_node *d = node(g, "Gemm", 2, (const char *[]){"a", "b"}, "z");
	int_attr(d, "transB", 1);
	const mkc_kernel *k = lowered(g, n);
	cr_assert_eq(k->kind, MKC_KERN_MATMUL);
	cr_assert(!k->trans_a);
	cr_assert(k->trans_b);
	cr_assert_float_eq(k->alpha, 0.5f, 0);
	cr_assert_float_eq(k->beta, 2.0f, 0);
	/* the spec's defaults where the model gives none */
	cr_assert_float_eq(d->kern->alpha, 1.0f, 0);
	cr_assert_float_eq(d->kern->beta, 1.0f, 0);
}

static const mkc_kernel *
attention(bool with_scale)
{
	mkc_graph *g = new_graph(23);
	input(g, "q", 4, (const int64_t[]){1, 4, 1, 16});
	input(g, "k", 4, (const int64_t[]){1, 2, 3, 16});
	input(g, "v", 4, (const int64_t[]){1, 2, 3, 16});
	mkc_node *n = node(g, "Attention", 3, (const char *[]){"q", "k", "v"}, "y");
	if (with_scale)
		float_attr(n, "scale", 0.125f);
	return lowered(g, n);
}

/* No scale attribute: 1 / sqrt(head size), and the description says it is the default. */
Test(lower, attention_default_scale)
{
	const mkc_kernel *k = attention(false);
	cr_assert_eq(k->kind, MKC_KERN_ATTENTION);
	cr_assert(!k->scale_given);
	cr_assert_float_eq(k->scale, 1.0f / sqrtf(16.0f), 0);
	cr_assert(!k->causal);
	cr_assert_float_eq(k->softcap, 0.0f, 0);
	k = attention(true);
	cr_assert(k->scale_given);
	cr_assert_float_eq(k->scale, 0.125f, 0);
}

static const mkc_kernel *
reduce_mean(int naxes, const int64_t *axes, bool noop)
{
	mkc_graph *g = new_graph(18);
	input(g, "x", 3, dims3);
	ints(g, "axes", naxes, axes);
	mkc_node *n = node(g, "ReduceMean", 2, (const char *[]){"x", "axes"}, "y");
	if (noop)
		int_attr(n, "noop_with_empty_axes", 1);
	return lowered(g, n);
}

Test(lower, reduce_axes_and_noop)
{
	const int64_t none[1] = {0};
	const mkc_kernel *k = reduce_mean(0, none, true);
	cr_assert_eq(k->kind, MKC_KERN_REDUCE);
	cr_assert_eq(k->naxes, 0, "noop_with_empty_axes: nothing reduced");
	k = reduce_mean(0, none, false);
	cr_assert_eq(k->naxes, 3, "no axes: every axis");
	k = reduce_mean(2, (const int64_t[]){-1, 0}, false);
	cr_assert_eq(k->naxes, 2);
	cr_assert_eq(k->axes[0], 0, "normalised and ascending");
	cr_assert_eq(k->axes[1], 2);
}

/* A node whose output is known keeps its kind and attributes: tile cuts it by them. */
Test(lower, known_node_keeps_its_description)
{
	mkc_graph *g = new_graph(18);
	mkc_tensor *d = ints(g, "d", 6, (const int64_t[]){1, 2, 3, 4, 5, 6});
	d->rank = 2;
	d->shape[0] = mkc_dim_const(2);
	d->shape[1] = mkc_dim_const(3);
	ints(g, "i", 1, (const int64_t[]){2});
	mkc_node *n = node(g, "Gather", 2, (const char *[]){"d", "i"}, "y");
	int_attr(n, "axis", -1);
	const mkc_kernel *k = lowered(g, n);
	cr_assert(k->known, "Gather of constants is folded");
	cr_assert_eq(k->kind, MKC_KERN_GATHER);
	cr_assert_eq(k->axis, 1);
}

/*
 * Tile reads the description: a Gather along axis -2 of a 2-D table is
 * one along axis 0, cut into tiles of the row like it (reading the
 * attribute, tile took -2 for another axis and made one tile).
 */
Test(lower, tile_cuts_by_the_description)
{
	for (int64_t axis = -2; axis <= 0; axis += 2) {
		mkc_graph *g = new_graph(18);
		input(g, "table", 2, (const int64_t[]){64, 16384});
		ints(g, "i", 1, (const int64_t[]){3});
		mkc_node *n = node(g, "Gather", 2, (const char *[]){"table", "i"}, "y");
		int_attr(n, "axis", axis);
		cr_assert_eq(lowered(g, n)->axis, 0);
		mkc_target_params tp = {.nworkers = 8, .min_tile_elems = 4096, .matmul_tile_cols = 64};
		mkc_plan *p = mkc_plan_create(g, &tp);
		cr_assert_eq(mkc_pass_tile(p), 0, "%s", errs());
		/* [1, 16384]: by its 16384 columns, 4096 elements a tile */
		cr_assert_eq(p->tasks.n, 4, "axis %lld: %d tiles", (long long)axis, p->tasks.n);
	}
}

/* The dump after lower has a kernel line under each node. */
Test(lower, dump_prints_descriptions)
{
	mkc_graph *g = new_graph(11);
	input(g, "x", 3, dims3);
	mkc_node *n = node(g, "Softmax", 1, (const char *[]){"x"}, "y");
	lowered(g, n);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	mkc_dump_graph(f, g);
	fclose(f);
	cr_assert(strstr(text, "node   y Softmax(x) -> y: float32[2,3,4]\n"
			       "       kernel rows axis=1 (axes from it on)\n"), "%s", text);
	free(text);
}
