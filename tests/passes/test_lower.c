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
#include "../graph_builder.h"
#include "kernel.h"
#include "passes.h"

TestSuite(lower, .init = setup, .fini = teardown);

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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", opset);
	gb_input(g, "x", MKC_DT_FLOAT, 3, dims3);
	mkc_node *n = gb_node_of(g, "Softmax", "y", 1, (const char *[]){"x"});
	gb_output(g, n->out[0]);
	if (with_axis)
		gb_attr_int(g, n, "axis", axis);
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input(g, "x", MKC_DT_FLOAT, 3, dims3);
	gb_ints(g, "i", 2, (const int64_t[]){0, 1});
	mkc_node *n = gb_node_of(g, "Gather", "y", 2, (const char *[]){"x", "i"});
	gb_output(g, n->out[0]);
	gb_attr_int(g, n, "axis", -1);
	k = lowered(g, n);
	cr_assert_eq(k->kind, MKC_KERN_GATHER);
	cr_assert_eq(k->axis, 2);
}

Test(lower, gemm_alpha_beta_trans)
{
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input(g, "a", MKC_DT_FLOAT, 2, (const int64_t[]){2, 4});
	gb_input(g, "b", MKC_DT_FLOAT, 2, (const int64_t[]){3, 4});
	gb_input(g, "c", MKC_DT_FLOAT, 1, (const int64_t[]){3});
	mkc_node *n = gb_node_of(g, "Gemm", "y", 3, (const char *[]){"a", "b", "c"});
	gb_output(g, n->out[0]);
	gb_attr_int(g, n, "transB", 1);
	gb_attr_float(g, n, "alpha", 0.5f);
	gb_attr_float(g, n, "beta", 2.0f);
	mkc_node *d = gb_node_of(g, "Gemm", "z", 2, (const char *[]){"a", "b"});
	gb_output(g, d->out[0]);
	gb_attr_int(g, d, "transB", 1);
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 23);
	gb_input(g, "q", MKC_DT_FLOAT, 4, (const int64_t[]){1, 4, 1, 16});
	gb_input(g, "k", MKC_DT_FLOAT, 4, (const int64_t[]){1, 2, 3, 16});
	gb_input(g, "v", MKC_DT_FLOAT, 4, (const int64_t[]){1, 2, 3, 16});
	mkc_node *n = gb_node_of(g, "Attention", "y", 3, (const char *[]){"q", "k", "v"});
	gb_output(g, n->out[0]);
	if (with_scale)
		gb_attr_float(g, n, "scale", 0.125f);
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_input(g, "x", MKC_DT_FLOAT, 3, dims3);
	gb_ints(g, "axes", naxes, axes);
	mkc_node *n = gb_node_of(g, "ReduceMean", "y", 2, (const char *[]){"x", "axes"});
	gb_output(g, n->out[0]);
	if (noop)
		gb_attr_int(g, n, "noop_with_empty_axes", 1);
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
	gb_floats(g, "d", 2, (const int64_t[]){2, 3}, (const float[]){1, 2, 3, 4, 5, 6});
	gb_ints(g, "i", 1, (const int64_t[]){2});
	mkc_node *n = gb_node_of(g, "Gather", "y", 2, (const char *[]){"d", "i"});
	gb_output(g, n->out[0]);
	gb_attr_int(g, n, "axis", -1);
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
		mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);
		gb_input(g, "table", MKC_DT_FLOAT, 2, (const int64_t[]){64, 16384});
		gb_ints(g, "i", 1, (const int64_t[]){3});
		mkc_node *n = gb_node_of(g, "Gather", "y", 2, (const char *[]){"table", "i"});
		gb_output(g, n->out[0]);
		gb_attr_int(g, n, "axis", axis);
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
	mkc_graph *g = gb_graph(ctx, "hand.onnx", 11);
	gb_input(g, "x", MKC_DT_FLOAT, 3, dims3);
	mkc_node *n = gb_node_of(g, "Softmax", "y", 1, (const char *[]){"x"});
	gb_output(g, n->out[0]);
	lowered(g, n);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	mkc_dump_graph(f, g);
	fclose(f);
	cr_assert(strstr(text, "node   node_y Softmax(x) -> y: float32[2,3,4]\n"
			       "       kernel rows axis=1 (axes from it on)\n"), "%s", text);
	free(text);
}
