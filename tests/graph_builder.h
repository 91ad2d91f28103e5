/*
 * graph_builder.h - small graphs built by hand for the unit tests, and
 * lookups that fail the test when a name is missing. Everything lives in
 * the graph's arena. Include it after criterion.h; the functions are static
 * inline, so a file uses what it needs.
 *
 *   mkc_graph *g = gb_graph(ctx, "hand.onnx", 18);      (one ai.onnx opset; 0: none)
 *   mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
 *   mkc_tensor *w = gb_weight(g, "w", MKC_DT_FLOAT, 2, (const int64_t[]){4, 8});
 *   mkc_node *mm = gb_node(g, "Gemm", "y", 2, (mkc_tensor *[]){x, w});
 *   gb_attr_int(mm, "transB", 1);
 *   gb_output(g, mm->out[0]);
 *
 * A node made by gb_node is named after its one output, "node_y", as the
 * exports of torch.onnx name theirs; gb_node_as names it. Inputs may be
 * NULL (left out). gb_op is gb_node for chains of one- and two-input ops:
 * it returns the output tensor.
 */
#ifndef MKC_TEST_GRAPH_BUILDER_H
#define MKC_TEST_GRAPH_BUILDER_H

#include <string.h>

#include "../ir/graph.h"

/* sym + c */
static inline mkc_dim
dim_plus(int sym, int64_t c)
{
	mkc_dim d = mkc_dim_sym(sym);
	d.c = c;
	return d;
}

static inline mkc_graph *
gb_graph(mkc_ctx *c, const char *path, int64_t opset)
{
	mkc_graph *g = mkc_graph_create(c, path);
	if (opset) {
		g->nopsets = 1;
		g->opsets = mkc_arena_alloc(c->arena, sizeof *g->opsets);
		g->opsets[0] = (mkc_opset){"", opset};
	}
	return g;
}

/*
 * A tensor of kind, dtype and constant shape. An input is added to the
 * graph's inputs; a weight gets zeroed data of its size.
 */
static inline mkc_tensor *
gb_tensor(mkc_graph *g, const char *name, mkc_tensor_kind kind, mkc_dtype dt, int rank,
	  const int64_t *dims)
{
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->kind = kind;
	t->dtype = dt;
	t->rank = rank;
	size_t numel = 1;
	for (int i = 0; i < rank; i++) {
		t->shape[i] = mkc_dim_const(dims[i]);
		numel *= (size_t)dims[i];
	}
	if (kind == MKC_TK_WEIGHT) {
		t->nbytes = numel * mkc_dtype_size(dt);
		t->data = mkc_arena_alloc(g->ctx->arena, t->nbytes + 8);
	}
	if (kind == MKC_TK_INPUT)
		mkc_vec_push(g->ctx->arena, &g->inputs, t);
	return t;
}

static inline mkc_tensor *
gb_input(mkc_graph *g, const char *name, mkc_dtype dt, int rank, const int64_t *dims)
{
	return gb_tensor(g, name, MKC_TK_INPUT, dt, rank, dims);
}

/* An input whose dims are written as in a model: "4", "past_len", "past_len+1". */
static inline mkc_tensor *
gb_input_dims(mkc_graph *g, const char *name, mkc_dtype dt, int rank, const char *const *dims)
{
	mkc_tensor *t = gb_input(g, name, dt, 0, NULL);
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		cr_assert(mkc_dim_parse(g, dims[i], true, &t->shape[i]), "dim '%s'", dims[i]);
	return t;
}

static inline mkc_tensor *
gb_weight(mkc_graph *g, const char *name, mkc_dtype dt, int rank, const int64_t *dims)
{
	return gb_tensor(g, name, MKC_TK_WEIGHT, dt, rank, dims);
}

/* A float32 weight holding v (its shape's count of values). Weights' data
 * is the arena's, written here before anything reads it. */
static inline mkc_tensor *
gb_floats(mkc_graph *g, const char *name, int rank, const int64_t *dims, const float *v)
{
	mkc_tensor *t = gb_weight(g, name, MKC_DT_FLOAT, rank, dims);
	memcpy((void *)t->data, v, t->nbytes);
	return t;
}

/* An int64 weight of n values, rank 1. */
static inline mkc_tensor *
gb_ints(mkc_graph *g, const char *name, int n, const int64_t *v)
{
	mkc_tensor *t = gb_weight(g, name, MKC_DT_INT64, 1, (const int64_t[]){n});
	memcpy((void *)t->data, v, t->nbytes);
	return t;
}

/* A rank-0 weight, float32 or int64. */
static inline mkc_tensor *
gb_scalar(mkc_graph *g, const char *name, mkc_dtype dt, double v)
{
	mkc_tensor *t = gb_weight(g, name, dt, 0, NULL);
	cr_assert(dt == MKC_DT_FLOAT || dt == MKC_DT_INT64);
	if (dt == MKC_DT_FLOAT)
		*(float *)t->data = (float)v;
	else
		*(int64_t *)t->data = (int64_t)v;
	return t;
}

/* A node named name of op_type, reading in[0 .. nin - 1], writing out. */
static inline mkc_node *
gb_node_as(mkc_graph *g, const char *name, const char *op_type, const char *out, int nin,
	   mkc_tensor *const *in)
{
	mkc_node *n = mkc_graph_add_node(g, name, "", op_type, nin, 1, 0);
	if (nin)
		memcpy(n->in, in, (size_t)nin * sizeof *in);
	n->out[0] = mkc_graph_tensor(g, out);
	n->out[0]->producer = n;
	return n;
}

static inline mkc_node *
gb_node(mkc_graph *g, const char *op_type, const char *out, int nin, mkc_tensor *const *in)
{
	const char *name = mkc_arena_printf(g->ctx->arena, "node_%s", out);
	return gb_node_as(g, name, op_type, out, nin, in);
}

/* gb_node with its inputs named (NULL: left out); each is made if it is new. */
static inline mkc_node *
gb_node_of(mkc_graph *g, const char *op_type, const char *out, int nin, const char *const *in)
{
	mkc_tensor *t[16] = {NULL};
	cr_assert_leq(nin, 16);
	for (int i = 0; i < nin; i++)
		t[i] = in[i] ? mkc_graph_tensor(g, in[i]) : NULL;
	return gb_node(g, op_type, out, nin, t);
}

/* One or two inputs (b NULL: one); the output tensor. */
static inline mkc_tensor *
gb_op(mkc_graph *g, const char *op_type, const char *out, mkc_tensor *a, mkc_tensor *b)
{
	return gb_node(g, op_type, out, b ? 2 : 1, (mkc_tensor *[]){a, b})->out[0];
}

/* t becomes one of the graph's outputs. */
static inline mkc_tensor *
gb_output(mkc_graph *g, mkc_tensor *t)
{
	t->kind = MKC_TK_OUTPUT;
	mkc_vec_push(g->ctx->arena, &g->outputs, t);
	return t;
}

static inline void
gb_attr(mkc_graph *g, mkc_node *n, mkc_attr at)
{
	mkc_attr *a = mkc_arena_alloc(g->ctx->arena, (size_t)(n->nattr + 1) * sizeof *a);
	if (n->nattr)
		memcpy(a, n->attr, (size_t)n->nattr * sizeof *a);
	a[n->nattr++] = at;
	n->attr = a;
}

static inline void
gb_attr_int(mkc_graph *g, mkc_node *n, const char *name, int64_t v)
{
	gb_attr(g, n, (mkc_attr){.name = name, .type = MKC_AT_INT, .i = v});
}

static inline void
gb_attr_float(mkc_graph *g, mkc_node *n, const char *name, float v)
{
	gb_attr(g, n, (mkc_attr){.name = name, .type = MKC_AT_FLOAT, .f = v});
}

static inline void
gb_attr_ints(mkc_graph *g, mkc_node *n, const char *name, int cnt, const int64_t *v)
{
	int64_t *c = mkc_arena_alloc(g->ctx->arena, (size_t)cnt * sizeof *c + 8);
	memcpy(c, v, (size_t)cnt * sizeof *c);
	gb_attr(g, n, (mkc_attr){.name = name, .type = MKC_AT_INTS, .n = cnt, .ints = c});
}

/* Lookups: the test fails when the name is missing. */
static inline mkc_tensor *
gb_find(const mkc_graph *g, const char *name)
{
	mkc_tensor *t = mkc_graph_find(g, name);
	cr_assert_not_null(t, "no tensor '%s'", name);
	return t;
}

static inline mkc_node *
gb_find_node(const mkc_graph *g, const char *name)
{
	mkc_node *n = mkc_graph_find_node(g, name);
	cr_assert_not_null(n, "no node '%s'", name);
	return n;
}

/* The nodes of op in g's list (dead ones too, until dce drops them). */
static inline int
gb_count_op(const mkc_graph *g, mkc_op op)
{
	int k = 0;
	for (int i = 0; i < g->nodes.n; i++)
		k += MKC_NODE(g, i)->op == op;
	return k;
}

#endif
