/*
 * narrow.c - a prompt chunk's product inputs written as bf16 by their
 * producers.
 *
 * requires: lower (the Gemm nodes' kernel descriptions), weights (bf16
 *           storage decided), state.
 * provides: on a target whose chunk products run on tensor cores
 *           (g->tc_products: backends/cuda/mma.cuh) and in a chunked plan
 *           (g->max_chunk > 1), t->storage = MKC_DT_BFLOAT16 for each
 *           [S, K] float32 output t of an RMSNormalization, a SiluMul or
 *           a Glu or NormGlu the tile computes itself, whose every reader
 *           takes t as x of a product the tile computes (mkc_kernel_tc_gemm,
 *           ir/kernel.c); and for a tensor-core Attention's output, its
 *           Transpose's and that one's Reshape's, when the last is read
 *           only so (narrow_attention, below). Those producers then round
 *           to bf16 as they store (backends/c/rows.h, backends/c/
 *           elementwise.h, the tile's own epilogue) and the tile takes x
 *           by cp.async as it takes the weight.
 *
 * Why: the tile rounds x to bf16 on its way into shared memory anyway, so
 * the results are the same bits; but a float32 x is twice the bytes that
 * every feature tile re-reads from L2, and those bytes, not the tensor
 * cores, bound the tile. On an H200 (tests/gpu/mma.cu, bench/RESULTS.md
 * session 20) the products of a 1024-token chunk of the 1B shape ran at
 * 113-181 TFLOPS with a float32 x and 198-331 with a bf16 one. The norms
 * and the SiLU product feed the projections that hold about 93% of a
 * layer's multiply-adds; their stores halve besides.
 */
#include "passes.h"
#include "../ir/kernel.h"

/*
 * Input 0 (x) of a product the tensor-core tile computes, but a NormGemm's
 * or NormGlu's (the rows the tile normalises, summing their squares in
 * float32).
 */
static bool
tile_x(const mkc_node *n, int input)
{
	return input == 0 && mkc_kernel_tc_gemm(n) && !mkc_kernel_norm_product(n);
}

static bool
narrowable(const mkc_graph *g, const mkc_node *p)
{
	if (p->op != MKC_OP_RMS_NORM && p->op != MKC_OP_SILU_MUL &&
	    !((p->op == MKC_OP_GLU || p->op == MKC_OP_NORM_GLU) && mkc_kernel_tc_gemm(p)))
		return false;
	/* a NormGlu of one row is the decode step's matvec, which stores float32 */
	if (p->op == MKC_OP_NORM_GLU && mkc_dim_eq(p->in[0]->shape[0], mkc_dim_const(1)))
		return false;
	const mkc_tensor *t = p->out[0];
	if (t->kind != MKC_TK_INTERMEDIATE || mkc_tensor_is_const(t) || t->storage || t->cap ||
	    t->rank != 2 || t->dtype != MKC_DT_FLOAT)
		return false;
	return mkc_graph_read_only_by(g, t, tile_x);
}

static bool
plain(const mkc_tensor *t, int rank)
{
	return t && t->kind == MKC_TK_INTERMEDIATE && !mkc_tensor_is_const(t) && !t->storage &&
	       !t->cap && t->rank == rank && t->dtype == MKC_DT_FLOAT;
}

/*
 * A chunk's attention output a [1, H, S, D] reaches the output projection
 * as Reshape(Transpose(a)) [S, H * D]: passes/views.c makes the Transpose's
 * output o the buffer that the attention's tiles write (a a view of it),
 * and the Reshape's f a view of o. Where the attention runs on tensor
 * cores (its products' rounding to bf16 is the model's already) and f is
 * read only as a product's x, all three are stored as bf16: the attention
 * rounds as it stores, and the o_proj tile reads half the bytes (a layer
 * of a 128-token chunk of the 1B shape spent 58 us on its o_proj, with a
 * float32 x, against 28 for q/k/v with a bf16 one: H100, session 29).
 */
static bool
narrow_attention(const mkc_graph *g, mkc_node *p)
{
	mkc_tensor *a = p->out[0];
	if (!g->tc_attention || !mkc_kernel_tc_attention(p) || !plain(a, 4))
		return false;
	const mkc_node *t = mkc_graph_sole_reader(g, a);
	if (!t || t->op != MKC_OP_TRANSPOSE || t->nout != 1 || !t->kern ||
	    t->kern->perm[3] != 3 || !plain(t->out[0], 4))
		return false;
	mkc_tensor *o = t->out[0];
	const mkc_node *r = mkc_graph_sole_reader(g, o);
	if (!r || (r->op != MKC_OP_RESHAPE && r->op != MKC_OP_FLATTEN) || r->nout != 1 ||
	    !plain(r->out[0], 2) || !mkc_graph_read_only_by(g, r->out[0], tile_x))
		return false;
	a->storage = o->storage = r->out[0]->storage = MKC_DT_BFLOAT16;
	return true;
}

int
mkc_pass_narrow(mkc_graph *g)
{
	if (!g->tc_products || g->max_chunk <= 1)
		return 0;
	int n = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *p = MKC_NODE(g, i);
		if (!p->dead && narrowable(g, p)) {
			p->out[0]->storage = MKC_DT_BFLOAT16;
			n++;
		} else if (!p->dead && narrow_attention(g, p)) {
			n++;
		}
	}
	mkc_progress(g->ctx, "narrow: %d product inputs written as bf16", n);
	return 0;
}
