/*
 * fuse_norm.c - RMS norms into the products that read them.
 *
 * requires: weights (storage types decided), state.
 * provides: every RMSNormalization whose only readers are products by a
 *           weight matrix kept [N, K] (Gemm with transB = 1, the way Linear
 *           layers are kept) is gone; each of those Gemm nodes becomes
 *           NormGemm(x, scale, W[, C]) (mkc.internal), with the norm's
 *           epsilon, which normalises its row x itself before the product.
 *
 * A decode step's norm is one row of the hidden size: as a task of its own
 * it is a stage of the critical path that moves 8 KB (about 6 us on an
 * H200, 33 of them in a Llama-3.2-1B step), where every tile of the
 * products after it loads that row anyway. A NormGemm tile reduces the row
 * itself (the GPU body in registers it has loaded, backends/cuda/matvec.cuh)
 * and scales it on the fly; the general body computes the same float
 * operations in the same order as the norm and the product did, so the C
 * target's results do not change by a bit.
 *
 * Taken only when the norm is over the last axis of one row (all other
 * axes 1), its scale is that row's length, it has one output, and that
 * output is no graph output.
 */
#include "passes.h"

#include <string.h>

/* Whether n reads t only as the activations of a product by rows of a weight. */
static bool
fusable_reader(const mkc_node *n, const mkc_tensor *t)
{
	if (n->op != MKC_OP_GEMM || n->in[0] != t || n->in[1] == t || (n->nin > 2 && n->in[2] == t))
		return false;
	const mkc_tensor *w = n->in[1];
	return !mkc_node_attr_int(n, "transA", 0) && mkc_node_attr_int(n, "transB", 0) &&
	       w->kind == MKC_TK_WEIGHT && w->rank == 2 && mkc_dim_eq(w->shape[1], t->shape[t->rank - 1]);
}

static bool
fusable_norm(const mkc_graph *g, const mkc_node *n)
{
	if (n->op != MKC_OP_RMS_NORM || n->dead || n->nout != 1 || n->nin != 2)
		return false;
	const mkc_tensor *x = n->in[0], *s = n->in[1], *y = n->out[0];
	int64_t axis = mkc_node_attr_int(n, "axis", -1);
	if (x->rank < 2 || x->dtype != MKC_DT_FLOAT || (axis != -1 && axis != x->rank - 1) ||
	    y->kind == MKC_TK_OUTPUT || s->rank != 1 || !mkc_dim_eq(s->shape[0], x->shape[x->rank - 1]) ||
	    !mkc_dim_is_const(s->shape[0]))
		return false;
	for (int d = 0; d < x->rank - 1; d++)
		if (!mkc_dim_eq(x->shape[d], mkc_dim_const(1)))
			return false;
	int readers = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *m = MKC_NODE(g, i);
		for (int k = 0; k < m->nin; k++)
			if (m->in[k] == y) {
				if (!fusable_reader(m, y))
					return false;
				readers++;
				break;
			}
	}
	return readers > 0;
}

/* Gemm(y, W[, C]) -> NormGemm(x, scale, W[, C]) with epsilon. */
static void
fuse_into(mkc_graph *g, const mkc_node *norm, mkc_node *n)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor **in = mkc_arena_alloc(a, sizeof *in * 4);
	in[0] = norm->in[0];
	in[1] = norm->in[1];
	in[2] = n->in[1];
	in[3] = n->nin > 2 ? n->in[2] : NULL;
	n->in = in;
	n->nin = in[3] ? 4 : 3;
	mkc_node_add_attr(g, n, (mkc_attr){.name = "epsilon", .type = MKC_AT_FLOAT,
					   .f = mkc_node_epsilon(norm)});
	n->op = MKC_OP_NORM_GEMM;
	n->op_type = "NormGemm";
	n->domain = "mkc.internal";
}

int
mkc_pass_fuse_norm(mkc_graph *g)
{
	int fused = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *norm = MKC_NODE(g, i);
		if (!fusable_norm(g, norm))
			continue;
		for (int j = 0; j < g->nodes.n; j++) {
			mkc_node *n = MKC_NODE(g, j);
			if (n != norm && n->nin > 0 && n->in[0] == norm->out[0] && n->op == MKC_OP_GEMM)
				fuse_into(g, norm, n);
		}
		norm->dead = true;
		fused++;
	}
	if (!fused)
		return 0;
	mkc_progress(g->ctx, "fuse_norm: %d RMS norms into the products that read them", fused);
	return mkc_pass_dce(g);
}
