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
 *
 * In a few-token plan (a step of 2 to MKC_FEW_ROWS tokens, its products
 * cut as a decode step's; g->few_norms, where the target's products may
 * normalise its rows) a norm of the step's rows [S, K] is taken too: there
 * the norm was a stage of its own before q/k/v and before the Glu, about
 * 8 us a norm of every layer of a step of 8 sequences of the 1B shape
 * (H100, session 34), where the product tiles read every row anyway. The
 * few-token tile (backends/cuda/mma.cuh's mkc_mm_few_tile) sums each
 * row's squares from the x it loads and scales its sums. Only where every
 * reader has at most FEW_COLS_A_WORKER output columns a worker:
 * passes/tile.c cuts a wider product of such a plan (the output layer's)
 * as a chunk's (few_chunk_cut: more than two tiles a worker, of 128
 * columns, or 64 for a Glu's two weights), and the chunk's tensor-core
 * tile takes no norm; and on tensor cores, only products their tile
 * takes (a bf16 weight, K a multiple of 64).
 */
#include "passes.h"

#include <stdio.h>
#include <string.h>

enum { FEW_COLS_A_WORKER = 2 * 64 };

/*
 * Whether n reads t only as the activations of a product by rows of a
 * weight; with rows, one of a few-token plan's that passes/tile.c cuts as
 * a decode step's.
 */
static bool
fusable_reader(const mkc_graph *g, const mkc_node *n, const mkc_tensor *t, bool rows)
{
	if (n->op != MKC_OP_GEMM || n->in[0] != t || n->in[1] == t || (n->nin > 2 && n->in[2] == t))
		return false;
	const mkc_tensor *w = n->in[1];
	if (rows && (!mkc_dim_is_const(w->shape[0]) ||
		     w->shape[0].c > FEW_COLS_A_WORKER * (int64_t)g->nworkers))
		return false;
	/* on tensor cores only what their tile takes (ir/kernel.c's mkc_kernel_tc_gemm) */
	const mkc_dim k = t->shape[t->rank - 1];
	if (rows && g->tc_products &&
	    (w->storage != MKC_DT_BFLOAT16 || !mkc_dim_is_const(k) || k.c % 64))
		return false;
	return !mkc_node_attr_int(n, "transA", 0) && mkc_node_attr_int(n, "transB", 0) &&
	       w->kind == MKC_TK_WEIGHT && w->rank == 2 && mkc_dim_eq(w->shape[1], t->shape[t->rank - 1]);
}

/* Whether x is one row, or a few-token plan's [S, K] rows (S its step's tokens, or fewer). */
static bool
norm_rows(const mkc_graph *g, const mkc_tensor *x, bool *rows)
{
	*rows = false;
	bool one = true;
	for (int d = 0; d < x->rank - 1; d++)
		one = one && mkc_dim_eq(x->shape[d], mkc_dim_const(1));
	if (one)
		return true;
	mkc_dim s = x->shape[0];
	*rows = g->few_norms && x->rank == 2 &&
		((mkc_dim_is_const(s) && s.c <= g->max_chunk) ||
		 (g->chunk_sym >= 0 && mkc_dim_bare_sym(s) == g->chunk_sym));
	return *rows;
}

/* Whether norm n goes into its readers; rows: of a few-token step's rows (norm_rows). */
static bool
fusable_norm(const mkc_graph *g, const mkc_node *n, bool *rows)
{
	if (n->op != MKC_OP_RMS_NORM || n->dead || n->nout != 1 || n->nin != 2)
		return false;
	const mkc_tensor *x = n->in[0], *s = n->in[1], *y = n->out[0];
	int64_t axis = mkc_node_attr_int(n, "axis", -1);
	if (x->rank < 2 || x->dtype != MKC_DT_FLOAT || (axis != -1 && axis != x->rank - 1) ||
	    y->kind == MKC_TK_OUTPUT || s->rank != 1 || !mkc_dim_eq(s->shape[0], x->shape[x->rank - 1]) ||
	    !mkc_dim_is_const(s->shape[0]))
		return false;
	if (!norm_rows(g, x, rows))
		return false;
	int readers = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *m = MKC_NODE(g, i);
		for (int k = 0; k < m->nin; k++)
			if (m->in[k] == y) {
				if (!fusable_reader(g, m, y, *rows))
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
	int fused = 0, rows = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *norm = MKC_NODE(g, i);
		bool r;
		if (!fusable_norm(g, norm, &r))
			continue;
		rows += r;
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
	char part[48] = "";
	if (rows)
		snprintf(part, sizeof part, " (%d of a few-token step's rows)", rows);
	mkc_progress(g->ctx, "fuse_norm: %d RMS norms into the products that read them%s", fused,
		     part);
	return mkc_pass_dce(g);
}
