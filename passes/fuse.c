/*
 * fuse.c - fusions that take stages off a decode step's critical path
 * without changing a single bit of its results.
 *
 * requires: canon (fused transformer blocks in place; live use counts are
 *           recounted here), dtypes and shapes of every tensor, nodes in
 *           topological order.
 * provides: residual adds computed in the epilogue of the matvec that feeds
 *           them (Gemm with C), and SiLU / SwiGLU as one elementwise node
 *           (mkc.internal.Silu, mkc.internal.SiluMul); replaced nodes marked
 *           dead for dce; every tensor typed and shaped as before; nodes in
 *           topological order. `mkc --no-fuse` skips this pass.
 *
 * Why. Every task of the persistent kernel costs a few microseconds of
 * hand-off (wait, signal, the next worker's wait) whatever it computes, and
 * a decoder layer's critical path is a chain of small tasks. A residual Add
 * after o_proj and down_proj, and the Sigmoid, Mul, Mul of SwiGLU, are
 * stages of that chain that read back what the task before them just wrote.
 *
 * The rewrites, each exact in float32 (not merely close: the fused node
 * performs the same IEEE operations on the same operands, so every result
 * is the same bit pattern; `mkc test --no-fuse` and a test compare them):
 *
 *   Add(r, Gemm(a, W)) or Add(Gemm(a, W), r)  ->  Gemm(a, W, r), beta 1
 *     when the Gemm has no C, alpha 1, its output is read by that Add alone
 *     and is no graph output, and r and the Gemm's output both have exactly
 *     the Add's shape (no broadcasting), all float32. The Gemm stored
 *     1.0f * acc and the Add computed r + o; the fused Gemm computes
 *     1.0f * acc + 1.0f * r. Multiplying by 1 is exact and float addition
 *     commutes, so both give round(acc + r). (A contracted fma(1, acc, r)
 *     rounds once too.) MatMul + Add, as ONNX exports spell a residual, is
 *     left alone: MatMul has no C input, and a 3-D activation is no Gemm.
 *
 *   Mul(g, Sigmoid(g)) (either order)  ->  Silu(g) = g * (1 / (1 + exp(-g))),
 *     when the Sigmoid's output is read by that Mul alone and is no graph
 *     output. Then Mul(Silu(g), u) (either order) -> SiluMul(g, u) =
 *     (g * (1 / (1 + exp(-g)))) * u when Silu's output is read by that Mul
 *     alone, is no graph output, and has the Mul's shape (u may
 *     broadcast). Same operations in the same order: s = 1/(1+expf(-g)),
 *     t = g*s, y = t*u; only the stores of s and t in between are gone,
 *     and a float32 value stored and reloaded is the same value.
 *
 * Each rewrite turns the last node (the Add, the Mul) into the fused op in
 * place: every input of the fused node was read by a node at or before it,
 * so the order stays topological, and the output tensor (perhaps a graph
 * output) keeps its name and readers. The fused Gemm takes the Gemm's name,
 * since errors and the timeline then name the matvec it mostly is.
 */
#include "passes.h"

#include <string.h>

/* The live node of op `op` writing t, read only once and no graph output; or NULL. */
static mkc_node *
sole_def(const mkc_tensor *t, mkc_op op)
{
	mkc_node *p = t ? t->producer : NULL;
	if (!p || p->dead || p->op != op || p->nout != 1 || p->out[0] != t)
		return NULL;
	return t->kind != MKC_TK_OUTPUT && t->nconsumers == 1 ? p : NULL;
}

static bool
is_f32(const mkc_tensor *t)
{
	return t && t->dtype == MKC_DT_FLOAT;
}

/* Node n now computes op over in[0..nin) with attributes at[0..nattr); `gone` dies. */
static void
become(mkc_graph *g, mkc_node *n, mkc_node *gone, mkc_op op, int nin, mkc_tensor *const *in,
       int nattr, const mkc_attr *at)
{
	mkc_arena *a = g->ctx->arena;
	gone->dead = true;
	mkc_node_count_reads(gone, -1);
	mkc_node_count_reads(n, -1);
	n->op = op;
	n->op_type = mkc_op_info_of(op)->name;
	n->domain = mkc_op_info_of(op)->domain;
	n->nin = nin;
	n->in = mkc_arena_alloc(a, (size_t)(nin + 1) * sizeof *n->in);
	memcpy(n->in, in, (size_t)nin * sizeof *in);
	n->nattr = nattr;
	n->attr = mkc_arena_alloc(a, (size_t)(nattr + 1) * sizeof *n->attr);
	if (nattr)   /* at may be NULL then */
		memcpy(n->attr, at, (size_t)nattr * sizeof *at);
	mkc_node_count_reads(n, 1);
}

/* Residual adds. */

/* A Gemm without C and with alpha 1, whose output `o` only `add` reads. */
static mkc_node *
plain_gemm(const mkc_tensor *o)
{
	mkc_node *gm = sole_def(o, MKC_OP_GEMM);
	if (!gm || (gm->nin > 2 && gm->in[2]))
		return NULL;
	const mkc_attr *alpha = mkc_node_attr(gm, "alpha");
	return !alpha || (alpha->type == MKC_AT_FLOAT && alpha->f == 1.0f) ? gm : NULL;
}

static int
fuse_residual(mkc_graph *g, mkc_node *add)
{
	mkc_tensor *y = add->out[0];
	for (int k = 0; k < 2; k++) {
		mkc_tensor *o = add->in[k], *r = add->in[1 - k];
		mkc_node *gm = plain_gemm(o);
		if (!gm || !is_f32(o) || !is_f32(r) || !is_f32(y) || !mkc_tensor_same_shape(o, y) ||
		    !mkc_tensor_same_shape(r, y))
			continue;
		/* the Gemm's attributes, beta set to 1 */
		mkc_attr *at = mkc_arena_alloc(g->ctx->arena, (size_t)(gm->nattr + 1) * sizeof *at);
		int nat = 0;
		for (int i = 0; i < gm->nattr; i++)
			if (strcmp(gm->attr[i].name, "beta") != 0)
				at[nat++] = gm->attr[i];
		at[nat++] = (mkc_attr){.name = "beta", .type = MKC_AT_FLOAT, .f = 1.0f};
		mkc_tensor *in[3] = {gm->in[0], gm->in[1], r};
		const char *name = gm->name;
		become(g, add, gm, MKC_OP_GEMM, 3, in, nat, at);
		add->name = name;
		return 1;
	}
	return 0;
}

/* SiLU and SwiGLU. */

static int
fuse_silu(mkc_graph *g, mkc_node *mul)
{
	for (int k = 0; k < 2; k++) {
		mkc_tensor *x = mul->in[1 - k];
		mkc_node *sig = sole_def(mul->in[k], MKC_OP_SIGMOID);
		if (!sig || sig->in[0] != x || !is_f32(x) || !is_f32(mul->out[0]))
			continue;
		become(g, mul, sig, MKC_OP_SILU, 1, &x, 0, NULL);
		return 1;
	}
	return 0;
}

static int
fuse_silu_mul(mkc_graph *g, mkc_node *mul)
{
	for (int k = 0; k < 2; k++) {
		mkc_tensor *t = mul->in[k], *u = mul->in[1 - k];
		mkc_node *silu = sole_def(t, MKC_OP_SILU);
		if (!silu || !is_f32(u) || !is_f32(mul->out[0]) ||
		    !mkc_tensor_same_shape(t, mul->out[0]))
			continue;
		mkc_tensor *in[2] = {silu->in[0], u};
		become(g, mul, silu, MKC_OP_SILU_MUL, 2, in, 0, NULL);
		return 1;
	}
	return 0;
}

int
mkc_pass_fuse(mkc_graph *g)
{
	int residual = 0, silu = 0, swiglu = 0;
	mkc_graph_count_live_uses(g);
	/* one walk in order: a Silu is made before the Mul that reads it is reached */
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead || n->nin != 2)
			continue;
		if (n->op == MKC_OP_ADD)
			residual += fuse_residual(g, n);
		else if (n->op == MKC_OP_MUL && fuse_silu_mul(g, n))
			swiglu++;
		else if (n->op == MKC_OP_MUL)
			silu += fuse_silu(g, n);
	}
	/* a Silu that became part of a SiluMul is counted there */
	mkc_progress(g->ctx, "fuse: %d residual adds into Gemm, %d SwiGLU, %d SiLU alone", residual,
		     swiglu, silu - swiglu);
	return 0;
}
