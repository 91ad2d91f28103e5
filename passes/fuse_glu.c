/*
 * fuse_glu.c - a SwiGLU and the two products that feed it into one node.
 *
 * requires: fuse_norm (NormGemm nodes made).
 * provides: every SiluMul(g, u) whose g and u are NormGemm(x, scale, Wg)
 *           and NormGemm(x, scale, Wu) of the same row, scale and epsilon,
 *           with weights of one shape and storage and no C, each read only
 *           by that SiluMul, is NormGlu(x, scale, Wg, Wu) (mkc.internal):
 *           silu(x' Wg^T) * (x' Wu^T), x' the normalised row; and one
 *           whose g and u are Gemm(x, Wg) and Gemm(x, Wu) on those terms
 *           (rows x that no norm went into: a prompt chunk's, whose norm
 *           is a node of its own) is Glu(x, Wg, Wu).
 *
 * In a decode step the gate and up products are two stages and the SwiGLU
 * a third: a hand-off and a short task on every layer's critical path
 * (about 4 us each on an H200 in the Llama-3.2-1B step, bench/RESULTS.md).
 * A NormGlu tile computes its rows of both products and the SwiGLU of them
 * at once, reading the same bytes. In a prompt chunk the SwiGLU was a pass
 * over the two products' [S, 2 x 8192] float32 outputs of its own, 2.7 ms
 * of a 1024-token chunk's 14.9 on the 1B shape's critical path (H200,
 * session 20): a Glu tile on tensor cores takes its features' rows of
 * both weights and writes the SwiGLU of the sums (backends/cuda/mma.cuh).
 * The general bodies compute the float operations of the three nodes in
 * their order, so the C target's results keep their bits
 * (tests/passes/test_fuse.c compares them with --no-fuse).
 */
#include "passes.h"

#include <string.h>

/*
 * The NormGemm without C defining t, or the Gemm without C by a weight
 * read by rows, read only by one node; or NULL.
 */
static mkc_node *
product_of(const mkc_tensor *t)
{
	mkc_node *n = t->producer;
	if (!n || n->dead || n->nout != 1 || t->kind == MKC_TK_OUTPUT || t->nconsumers != 1)
		return NULL;
	if (n->op == MKC_OP_NORM_GEMM && n->nin == 3)
		return n;
	const mkc_tensor *w = n->op == MKC_OP_GEMM && n->nin == 2 ? n->in[1] : NULL;
	if (!w || w->kind != MKC_TK_WEIGHT || w->rank != 2 || n->in[0]->rank != 2 ||
	    mkc_node_attr_int(n, "transA", 0) || !mkc_node_attr_int(n, "transB", 0))
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
	const int w = a->op == MKC_OP_NORM_GEMM ? 2 : 1;   /* the weight's input */
	const mkc_tensor *wa = a->in[w], *wb = b->in[w];
	return a != b && a->op == b->op && a->in[0] == b->in[0] &&
	       (w == 1 || a->in[1] == b->in[1]) && wa->dtype == wb->dtype &&
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
	int fused = 0, plain = 0;
	mkc_graph_count_live_uses(g);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead || n->op != MKC_OP_SILU_MUL)
			continue;
		mkc_node *gate = product_of(n->in[0]), *up = product_of(n->in[1]);
		if (!gate || !up || !twins(gate, up))
			continue;
		/* the node keeps the gate's attributes (transB, alpha, epsilon) and
		 * inputs, then takes the up weight */
		const bool norm = gate->op == MKC_OP_NORM_GEMM;
		mkc_tensor **in = mkc_arena_alloc(g->ctx->arena, sizeof *in * 4);
		for (int k = 0; k < gate->nin; k++)
			in[k] = gate->in[k];
		in[gate->nin] = up->in[gate->nin - 1];
		n->in = in;
		n->nin = gate->nin + 1;
		n->attr = gate->attr;
		n->nattr = gate->nattr;
		n->op = norm ? MKC_OP_NORM_GLU : MKC_OP_GLU;
		n->op_type = norm ? "NormGlu" : "Glu";
		n->domain = "mkc.internal";
		gate->dead = up->dead = true;
		fused++;
		plain += !norm;
	}
	if (!fused)
		return 0;
	if (plain)
		mkc_progress(g->ctx, "fuse_glu: %d SwiGLU with the products that feed them (%d on rows "
			     "no norm went into: Glu)", fused, plain);
	else
		mkc_progress(g->ctx, "fuse_glu: %d SwiGLU with the products that feed them", fused);
	return mkc_pass_dce(g);
}
