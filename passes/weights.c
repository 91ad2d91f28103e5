/*
 * weights.c - the storage type of weights.
 *
 * requires: dce (the final consumers of every weight).
 * provides: t->storage = MKC_DT_BFLOAT16 for weights read as bf16 by
 *           readers that take bf16 weights: the matrix of a MatMul or Gemm
 *           (input 1), the table of a Gather (input 0), and the scale and
 *           bias of the norms. Those readers convert as they load and
 *           accumulate in float32. Two sources:
 *           - always: a bfloat16 initializer widened by a Cast to float32
 *             (how a float32 graph keeps bf16 weights in its file) becomes
 *             the float32 weight itself, stored and loaded as bf16; the Cast
 *             goes;
 *           - with --weights bf16 (g->bf16_weights): every float32
 *             initializer, which the loader narrows to bf16 (rounding to
 *             nearest even).
 *           Any other reader keeps the weight as it is.
 *
 * Halving the bytes of the big matrices is what matters for a memory-bound
 * decode step; activations stay float32.
 */
#include "passes.h"

static bool
takes_bf16(const mkc_node *n, int input)
{
	switch (n->op) {
	case MKC_OP_MATMUL:
	case MKC_OP_GEMM:
		return input == 1;
	case MKC_OP_GATHER:
		return input == 0;
	case MKC_OP_NORM_GEMM:
		return input == 1 || input == 2;
	case MKC_OP_NORM_GLU:
	case MKC_OP_GLU:
		return input >= 1;
	case MKC_OP_RMS_NORM:
	case MKC_OP_LAYER_NORM:
	case MKC_OP_MS_SIMPLIFIED_LN:
		return input >= 1;
	default:
		return false;
	}
}

/* Cast(bf16 initializer) -> float32, read as bf16: the initializer, widened by its readers. */
static int
drop_bf16_casts(mkc_graph *g)
{
	int k = 0, dropped = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *c = MKC_NODE(g, i);
		mkc_tensor *w = c->op == MKC_OP_CAST ? c->in[0] : NULL, *y = c->out[0];
		if (w && w->initializer && w->kind == MKC_TK_WEIGHT && w->dtype == MKC_DT_BFLOAT16 &&
		    w->nconsumers == 1 && y->dtype == MKC_DT_FLOAT && y->kind != MKC_TK_OUTPUT &&
		    mkc_graph_readers_all(g, y, takes_bf16)) {
			for (int a = 0; a < g->nodes.n; a++) {
				mkc_node *r = MKC_NODE(g, a);
				for (int j = 0; j < r->nin; j++)
					if (r->in[j] == y)
						r->in[j] = w;
			}
			w->dtype = MKC_DT_FLOAT;
			w->storage = w->file_dtype = MKC_DT_BFLOAT16;
			w->nconsumers = y->nconsumers;
			y->nconsumers = 0;
			dropped++;
			continue;   /* the Cast leaves the node list */
		}
		c->id = k;
		g->nodes.v[k++] = c;
	}
	g->nodes.n = k;
	return dropped;
}

int
mkc_pass_weights(mkc_graph *g)
{
	int dropped = drop_bf16_casts(g);
	if (dropped)
		mkc_progress(g->ctx, "weights: %d bfloat16 initializers read as bf16 without a Cast",
			     dropped);
	if (!g->bf16_weights)
		return 0;
	int n = 0;
	bool *ok = mkc_arena_alloc(g->ctx->arena, (size_t)(g->tensors.n + 1) * sizeof *ok);
	for (int i = 0; i < g->tensors.n; i++) {
		const mkc_tensor *t = MKC_TENSOR(g, i);
		ok[i] = t->initializer && t->dtype == MKC_DT_FLOAT && t->kind == MKC_TK_WEIGHT &&
			t->nconsumers > 0;
	}
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *nd = MKC_NODE(g, i);
		for (int j = 0; j < nd->nin; j++)
			if (nd->in[j] && !takes_bf16(nd, j))
				ok[nd->in[j]->id] = false;
	}
	for (int i = 0; i < g->outputs.n; i++)
		ok[MKC_OUTPUT(g, i)->id] = false;
	for (int i = 0; i < g->tensors.n; i++)
		if (ok[i]) {
			MKC_TENSOR(g, i)->storage = MKC_DT_BFLOAT16;
			n++;
		}
	mkc_progress(g->ctx, "weights: %d float32 weights stored as bf16", n);
	return 0;
}
