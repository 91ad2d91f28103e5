/*
 * weights.c - the storage type of weights (mkc --weights bf16).
 *
 * requires: dce (the final consumers of every weight).
 * provides: t->storage = MKC_DT_BFLOAT16 for each float32 initializer whose
 *           every reader takes bf16 weights: the matrix of a MatMul or Gemm
 *           (input 1), the table of a Gather (input 0), and the scale and
 *           bias of the norms. Those readers convert as they load and
 *           accumulate in float32; the loader converts the file's float32
 *           to bf16 (rounding to nearest even). Any other reader keeps the
 *           weight in float32.
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
	case MKC_OP_RMS_NORM:
	case MKC_OP_LAYER_NORM:
	case MKC_OP_MS_SIMPLIFIED_LN:
		return input >= 1;
	default:
		return false;
	}
}

int
mkc_pass_weights_bf16(mkc_graph *g)
{
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
