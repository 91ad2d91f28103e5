/*
 * fuse_glu.c - a SwiGLU and the two products that feed it into one node.
 *
 * requires: fuse_norm (NormGemm nodes made).
 * provides: every SiluMul(g, u) whose g and u are NormGemm(x, scale, Wg)
 *           and NormGemm(x, scale, Wu) of the same row, scale and epsilon,
 *           with weights of one shape and storage and no C, each read only
 *           by that SiluMul, is NormGlu(x, scale, Wg, Wu) (mkc.internal):
 *           silu(x' Wg^T) * (x' Wu^T), x' the normalised row.
 *
 * In a decode step the gate and up products are two stages and the SwiGLU
 * a third: a hand-off and a short task on every layer's critical path
 * (about 4 us each on an H200 in the Llama-3.2-1B step, bench/RESULTS.md).
 * A NormGlu tile computes its rows of both products and the SwiGLU of them
 * at once, reading the same bytes. Its general body computes the float
 * operations of the three nodes in their order, so the C target's results
 * keep their bits (tests/passes/test_fuse.c compares them with --no-fuse).
 */
#include "passes.h"

#include <string.h>

/* The NormGemm defining t, read only by one node, or NULL. */
static mkc_node *
product_of(const mkc_tensor *t)
{
	mkc_node *n = t->producer;
	if (!n || n->dead || n->op != MKC_OP_NORM_GEMM || n->nin != 3 || n->nout != 1 ||
	    t->kind == MKC_TK_OUTPUT || t->nconsumers != 1)
		return NULL;
	return n;
}

static float
attr_f(const mkc_node *n, const char *name, float dflt)
{
	return mkc_node_attr_float(n, name, dflt);
}

/* Whether the two products differ only in their weights. */
static bool
twins(const mkc_node *a, const mkc_node *b)
{
	const mkc_tensor *wa = a->in[2], *wb = b->in[2];
	return a != b && a->in[0] == b->in[0] && a->in[1] == b->in[1] && wa->dtype == wb->dtype &&
	       wa->storage == wb->storage && mkc_tensor_same_shape(wa, wb) &&
	       mkc_tensor_same_shape(a->out[0], b->out[0]) &&
	       attr_f(a, "epsilon", 1e-5f) == attr_f(b, "epsilon", 1e-5f) &&
	       attr_f(a, "alpha", 1) == attr_f(b, "alpha", 1) &&
	       mkc_node_attr_int(a, "transA", 0) == mkc_node_attr_int(b, "transA", 0) &&
	       mkc_node_attr_int(a, "transB", 0) == mkc_node_attr_int(b, "transB", 0);
}

int
mkc_pass_fuse_glu(mkc_graph *g)
{
	int fused = 0;
	mkc_graph_count_live_uses(g);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead || n->op != MKC_OP_SILU_MUL)
			continue;
		mkc_node *gate = product_of(n->in[0]), *up = product_of(n->in[1]);
		if (!gate || !up || !twins(gate, up))
			continue;
		/* the node keeps the gate's attributes (transB, alpha, epsilon) */
		mkc_tensor **in = mkc_arena_alloc(g->ctx->arena, sizeof *in * 4);
		in[0] = gate->in[0];
		in[1] = gate->in[1];
		in[2] = gate->in[2];
		in[3] = up->in[2];
		n->in = in;
		n->nin = 4;
		n->attr = gate->attr;
		n->nattr = gate->nattr;
		n->op = MKC_OP_NORM_GLU;
		n->op_type = "NormGlu";
		n->domain = "mkc.internal";
		gate->dead = up->dead = true;
		fused++;
	}
	if (!fused)
		return 0;
	mkc_progress(g->ctx, "fuse_glu: %d SwiGLU with the products that feed them", fused);
	return mkc_pass_dce(g);
}
