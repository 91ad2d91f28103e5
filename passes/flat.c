/*
 * flat.c - a hidden state [1, S, X] as the rows [S, X] it is, in the form
 * the fusions take.
 *
 * requires: canon (the exporters' decomposed blocks already fused ops;
 *           products by weights stored [N, K] marked mkc_trans_b, by canon
 *           or layout); runs before fuse.
 * provides: every row-wise node over tensors [1, S, X] (axis 0 the constant
 *           1) that no graph output comes from works on [S, X]:
 *           - MatMul(x, W) by a weight stored [N, K] is Gemm(x, W, transB 1);
 *           - SimplifiedLayerNormalization over the last axis is
 *             RMSNormalization (the same arithmetic);
 *           - SkipSimplifiedLayerNormalization(a, b, gamma) without bias,
 *             its mean and deviation outputs unread, is s = Add(a, b) and
 *             RMSNormalization(s, gamma), s its sum output;
 *           - Add, Sub, Mul, Div of two such tensors and Sigmoid of one
 *             stay what they are.
 *           A tensor between two such nodes (read by nothing else, no graph
 *           output) is [S, X] itself; where one comes from or goes to any
 *           other node, a Reshape between the two shapes (a view, no task)
 *           joins them.
 *
 * Why. onnxruntime-genai's builder and torch.onnx keep the hidden state
 * [batch, S, hidden] (the builder with the contrib norms), where a Hugging
 * Face folder's graph (compiler/hf.c) keeps [S, hidden] rows,
 * RMSNormalization and Gemm. The passes after this one fuse the latter (residual adds into products, norms
 * and SwiGLU into them, a query's rotary and a key's append into its
 * product) and cut its products into blocks of a chunk's rows; on the
 * H200 the export ran 1.25x the folder's decode step without them
 * (bench/RESULTS.md, session 19).
 */
#include "passes.h"

#include <string.h>

/* t is [1, S, X], float, axis 0 the constant 1. */
static bool
rows3(const mkc_tensor *t)
{
	return t && t->rank == 3 && t->dtype == MKC_DT_FLOAT &&
	       mkc_dim_eq(t->shape[0], mkc_dim_const(1)) && mkc_dim_is_const(t->shape[2]);
}

/* Output i of n is read by nothing, or absent. */
static bool
unread(const mkc_node *n, int i)
{
	return i >= n->nout || !n->out[i] ||
	       (n->out[i]->nconsumers == 0 && n->out[i]->kind != MKC_TK_OUTPUT);
}

/* A norm over the last axis whose scale is one value a column. */
static bool
last_axis_norm(const mkc_node *n, int scale)
{
	int64_t axis = mkc_node_attr_int(n, "axis", -1);
	const mkc_tensor *s = n->in[scale];
	return (axis == -1 || axis == 2) && s && s->rank == 1 &&
	       mkc_dim_eq(s->shape[0], n->in[0]->shape[2]);
}

/*
 * Which inputs of n are rows [1, S, X] it reads as rows (a mask of them),
 * or -1 when n is no row-wise node this pass rewrites.
 */
static int
row_inputs(const mkc_node *n)
{
	if (n->dead || n->nout < 1 || !rows3(n->out[0]) || n->out[0]->kind == MKC_TK_OUTPUT)
		return -1;
	switch (n->op) {
	case MKC_OP_MATMUL:
		return rows3(n->in[0]) && mkc_node_attr_int(n, "mkc_trans_b", 0) &&
		       n->in[1]->kind == MKC_TK_WEIGHT && n->in[1]->rank == 2 ? 0x1 : -1;
	case MKC_OP_MS_SIMPLIFIED_LN:
		return n->nin == 2 && rows3(n->in[0]) && last_axis_norm(n, 1) && unread(n, 1) ? 0x1
											  : -1;
	case MKC_OP_MS_SKIP_SIMPLIFIED_LN:
		if (n->nin > 3 && n->in[3])
			return -1;   /* a bias */
		if (!rows3(n->in[0]) || !mkc_tensor_same_shape(n->in[0], n->in[1]) ||
		    !last_axis_norm(n, 2) || !unread(n, 1) || !unread(n, 2) ||
		    (n->nout > 3 && n->out[3] && n->out[3]->kind == MKC_TK_OUTPUT))
			return -1;
		return 0x3;
	case MKC_OP_ADD:
	case MKC_OP_SUB:
	case MKC_OP_MUL:
	case MKC_OP_DIV:
		return n->nout == 1 && rows3(n->in[0]) && mkc_tensor_same_shape(n->in[0], n->in[1]) &&
		       mkc_tensor_same_shape(n->in[0], n->out[0]) ? 0x3 : -1;
	case MKC_OP_SIGMOID:
		return rows3(n->in[0]) && mkc_tensor_same_shape(n->in[0], n->out[0]) ? 0x1 : -1;
	default:
		return -1;
	}
}

/* t, written and read by row-wise nodes alone: it becomes [S, X] itself. */
static bool
all_rows(const mkc_graph *g, const mkc_tensor *t, const bool *rowwise, const int *masks)
{
	if (!rows3(t) || t->kind != MKC_TK_INTERMEDIATE || !t->producer || !rowwise[t->producer->id])
		return false;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		for (int k = 0; !n->dead && k < n->nin; k++)
			if (n->in[k] == t && !(rowwise[i] && (masks[i] >> k & 1)))
				return false;
	}
	return true;
}

/* A Reshape of x to [s0, s1(, s2)] (-1: the rest) just before at; its output, a new tensor. */
static mkc_tensor *
reshape(mkc_graph *g, mkc_node *at, mkc_tensor *x, int rank, const int64_t *shape,
	mkc_tensor *out)
{
	mkc_arena *a = g->ctx->arena;
	mkc_dim v[3];
	for (int d = 0; d < rank; d++)
		v[d] = mkc_dim_const(shape[d]);
	mkc_tensor *s = mkc_graph_ints(g, mkc_graph_fresh_name(g, x->name, "rows_shape"), rank, v);
	mkc_node *r = mkc_graph_add_node(g, mkc_arena_printf(a, "%s/rows", x->name), "", "Reshape",
					 2, 1, 0);
	r->in[0] = x;
	r->in[1] = s;
	if (!out)
		out = mkc_graph_tensor(g, mkc_graph_fresh_name(g, x->name, "rows"));
	out->producer = r;
	r->out[0] = out;
	mkc_node_count_reads(r, 1);
	mkc_graph_move_before(g, r, at);
	if (mkc_infer_node(g, r) != 0)
		return NULL;
	return out;
}

/* t [1, S, X] as [S, X], in place. */
static void
drop_axis0(mkc_tensor *t)
{
	t->shape[0] = t->shape[1];
	t->shape[1] = t->shape[2];
	t->rank = 2;
}

/* n's op becomes op, named as ONNX has it. */
static void
become(mkc_node *n, mkc_op op)
{
	n->op = op;
	n->op_type = mkc_op_info_of(op)->name;
	n->domain = mkc_op_info_of(op)->domain;
}

/* MatMul(x, W) with mkc_trans_b: Gemm(x, W) with transB 1. */
static void
to_gemm(mkc_graph *g, mkc_node *n)
{
	mkc_attr *at = mkc_arena_alloc(g->ctx->arena, sizeof *at);
	at[0] = (mkc_attr){.name = "transB", .type = MKC_AT_INT, .i = 1};
	n->attr = at;
	n->nattr = 1;
	become(n, MKC_OP_GEMM);
}

/* SkipSimplifiedLayerNormalization n: its sum s = Add(a, b) before it, n then the norm of s. */
static int
split_skip(mkc_graph *g, mkc_node *n)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor *s = n->nout > 3 && n->out[3] ? n->out[3] : NULL;
	mkc_node *add = mkc_graph_add_node(g, mkc_arena_printf(a, "%s/residual", n->name), "",
					   "Add", 2, 1, 0);
	add->in[0] = n->in[0];
	add->in[1] = n->in[1];
	if (!s) {
		s = mkc_graph_tensor(g, mkc_graph_fresh_name(g, n->out[0]->name, "sum"));
		s->dtype = n->out[0]->dtype;
		s->rank = n->out[0]->rank;
		memcpy(s->shape, n->out[0]->shape, sizeof s->shape);
	}
	s->producer = add;
	add->out[0] = s;
	mkc_graph_move_before(g, add, n);
	mkc_tensor *gamma = n->in[2];
	n->in[0]->nconsumers--;
	n->in[1]->nconsumers--;
	n->in[0] = s;
	n->in[1] = gamma;
	n->nin = 2;
	s->nconsumers++;
	add->in[0]->nconsumers++;
	add->in[1]->nconsumers++;
	n->nout = 1;
	mkc_attr *at = mkc_arena_alloc(a, sizeof *at);
	at[0] = (mkc_attr){.name = "epsilon", .type = MKC_AT_FLOAT, .f = mkc_node_epsilon(n)};
	n->attr = at;
	n->nattr = 1;
	become(n, MKC_OP_RMS_NORM);
	return 0;
}

int
mkc_pass_flat(mkc_graph *g)
{
	mkc_graph_count_live_uses(g);
	int nn = g->nodes.n;
	bool *rowwise = mkc_arena_alloc(g->ctx->arena, (size_t)(nn + 1) * sizeof *rowwise);
	int *masks = mkc_arena_alloc(g->ctx->arena, (size_t)(nn + 1) * sizeof *masks);
	int taken = 0;
	for (int i = 0; i < nn; i++) {
		masks[i] = row_inputs(MKC_NODE(g, i));
		taken += rowwise[i] = masks[i] >= 0;
	}
	if (!taken)
		return 0;
	/* which tensors become [S, X], decided before any node changes */
	bool *flat = mkc_arena_alloc(g->ctx->arena, (size_t)(g->tensors.n + 1) * sizeof *flat);
	int ntensors = g->tensors.n;
	for (int i = 0; i < ntensors; i++)
		flat[i] = all_rows(g, MKC_TENSOR(g, i), rowwise, masks);
	/* one view of each tensor's rows, shared by its readers (a Silu and the
	 * product beside it must read the same tensor for fuse to see SwiGLU) */
	mkc_tensor **rows = mkc_arena_alloc(g->ctx->arena, (size_t)(ntensors + 1) * sizeof *rows);
	mkc_node **nodes = mkc_arena_alloc(g->ctx->arena, (size_t)(nn + 1) * sizeof *nodes);
	memcpy(nodes, g->nodes.v, (size_t)nn * sizeof *nodes);
	int joins = 0, skips = 0;
	for (int i = 0; i < nn; i++) {
		mkc_node *n = nodes[i];
		if (!rowwise[i])
			continue;
		int mask = masks[i];   /* shapes change as the walk goes */
		for (int k = 0; k < n->nin; k++) {
			mkc_tensor *x = n->in[k];
			if (!(mask >> k & 1) || flat[x->id] || x->rank == 2)
				continue;
			/* from a node of another kind: a view of its rows (made before
			 * its first reader, which comes first in the walk) */
			mkc_tensor *r = x->id < ntensors ? rows[x->id] : NULL;
			if (!r) {
				r = reshape(g, n, x, 2, (const int64_t[]){-1, x->shape[2].c}, NULL);
				if (!r)
					return -1;
				if (x->id < ntensors)
					rows[x->id] = r;
				joins++;
			}
			x->nconsumers--;
			n->in[k] = r;
			r->nconsumers++;
		}
		for (int o = 0; o < n->nout; o++) {
			mkc_tensor *y = n->out[o];
			if (!y || !rows3(y))
				continue;
			if (flat[y->id]) {
				drop_axis0(y);
				continue;
			}
			/* to a node of another kind: the rows, then a view of them as y */
			mkc_tensor *r = mkc_graph_tensor(g, mkc_graph_fresh_name(g, y->name, "rows"));
			r->dtype = y->dtype;
			r->rank = 3;
			memcpy(r->shape, y->shape, sizeof r->shape);
			drop_axis0(r);
			r->producer = n;
			n->out[o] = r;
			mkc_node *after = n->id + 1 < g->nodes.n ? MKC_NODE(g, n->id + 1) : NULL;
			if (!after)
				return mkc_node_error(g, n, "internal: no node after a row-wise node's output");
			if (!reshape(g, after, r, 3, (const int64_t[]){1, -1, y->shape[2].c}, y))
				return -1;
			joins++;
		}
		if (n->op == MKC_OP_MATMUL)
			to_gemm(g, n);
		else if (n->op == MKC_OP_MS_SIMPLIFIED_LN) {
			n->nout = 1;   /* its deviation output is unread */
			become(n, MKC_OP_RMS_NORM);
		}
		else if (n->op == MKC_OP_MS_SKIP_SIMPLIFIED_LN)
			skips += split_skip(g, n) == 0;
	}
	mkc_progress(g->ctx, "flat: %d row-wise nodes over [S, X] rows (%d skip norms into Add and "
		     "RMSNormalization), %d views joining them to other nodes", taken, skips, joins);
	return 0;
}
