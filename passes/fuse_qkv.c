/*
 * fuse_qkv.c - the query's rotary and the key and value appends into the
 * products that make them.
 *
 * requires: fuse_norm (NormGemm nodes), fuse_rope (a key's rotary inside
 *           its CacheAppend), state (the caches).
 * provides: every RotaryEmbedding(x, cos, sin) and every CacheAppend(x[,
 *           cos, sin]) whose x is a row NormGemm(r, scale, W) seen as
 *           heads [1, H, 1, D] through Reshape and its kin alone (each
 *           read by nothing else, no graph output) is one node (mkc.internal)
 *             HeadProj(r, scale, W[, cos, sin]) -> y
 *           that computes the product's rows, rotates them as the rotary
 *           did (every dimension rotated, halves or interleaved pairs) and
 *           writes them into y: the rotary's output, or the cache at the
 *           new position. It keeps the product's name and attributes
 *           (alpha, epsilon) and the rotary's (interleaved). Taken only
 *           where every NormGemm of that row is (whole_row).
 *
 * Between a decode layer's q/k/v products and its attention parts sat a
 * stage of three one-task nodes (the query's rotary and the two appends):
 * 3.0 us a layer on an H200, from the end of q/k/v to the start of the
 * parts (bench/RESULTS.md, session 12), 30 of them in a SmolLM2-135M step.
 * A HeadProj tile holds both rows of each pair it rotates (passes/tile.c
 * cuts it so), so the stage is gone and the parts wait for the products.
 * The float operations are the product's, then the rotary's, in their
 * order: the C target's results and caches do not change by a bit
 * (tests/passes/test_fuse.c compares them with --no-fuse).
 */
#include "passes.h"

/* Whether v only reshapes its input: the same elements in the same order. */
static bool
order_view(const mkc_node *v)
{
	mkc_op op = v->op;
	return (op == MKC_OP_RESHAPE || op == MKC_OP_FLATTEN || op == MKC_OP_SQUEEZE ||
		op == MKC_OP_UNSQUEEZE || op == MKC_OP_IDENTITY) &&
	       v->nout == 1 && v->in[0] && v->in[0]->dtype == v->out[0]->dtype;
}

/* A NormGemm of one row by W [N, K] kept by rows, no C, N = h * d. */
static bool
plain_product(const mkc_node *n, int64_t h, int64_t d)
{
	const mkc_tensor *w = n->in[2], *y = n->out[0];
	return (n->nin == 3 || !n->in[3]) && n->nout == 1 && !mkc_node_attr_int(n, "transA", 0) &&
	       mkc_node_attr_int(n, "transB", 0) && w->rank == 2 && mkc_dim_is_const(w->shape[0]) &&
	       w->shape[0].c == h * d && y->rank == 2 && mkc_dim_eq(y->shape[0], mkc_dim_const(1));
}

/*
 * The NormGemm whose row x shows as heads [1, H, 1, D] through views that
 * only reshape it, each read once and no graph output; or NULL.
 */
static mkc_node *
product_under(const mkc_tensor *x)
{
	if (x->rank != 4 || x->dtype != MKC_DT_FLOAT)
		return NULL;
	for (int d = 0; d < 4; d++)
		if (!mkc_dim_is_const(x->shape[d]) || (d % 2 == 0 && x->shape[d].c != 1))
			return NULL;
	const mkc_tensor *t = x;
	for (;;) {
		mkc_node *n = t->producer;
		if (!n || n->dead || t->nconsumers != 1 || t->kind == MKC_TK_OUTPUT)
			return NULL;
		if (n->op == MKC_OP_NORM_GEMM)
			return plain_product(n, x->shape[1].c, x->shape[3].c) ? n : NULL;
		if (!order_view(n))
			return NULL;
		t = n->in[0];
	}
}

/* cos and sin [1, 1, D / 2] for x [1, H, 1, D], rotating every dimension. */
static bool
rotates_all(const mkc_node *n, int first, const mkc_tensor *x)
{
	const mkc_tensor *c = n->in[first], *s = n->in[first + 1];
	int64_t d = x->shape[3].c, r = mkc_node_attr_int(n, "rotary_embedding_dim", 0);
	if (c->rank != 3 || s->rank != 3 || c->dtype != MKC_DT_FLOAT || s->dtype != MKC_DT_FLOAT ||
	    (r != 0 && r != d) || d % 2)
		return false;
	for (int i = 0; i < 3; i++)
		if (!mkc_dim_eq(c->shape[i], mkc_dim_const(i < 2 ? 1 : d / 2)) ||
		    !mkc_dim_eq(s->shape[i], c->shape[i]))
			return false;
	return true;
}

/* n (a rotary or an append) becomes HeadProj(r, scale, W[, cos, sin]) of product p. */
static void
fuse_into(mkc_graph *g, mkc_node *n, mkc_node *p, mkc_tensor *cos, mkc_tensor *sin)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor **in = mkc_arena_alloc(a, sizeof *in * 5);
	in[0] = p->in[0];
	in[1] = p->in[1];
	in[2] = p->in[2];
	in[3] = cos;
	in[4] = sin;
	int64_t inter = cos ? mkc_node_attr_int(n, "interleaved", 0) : 0;
	mkc_attr *at = mkc_arena_alloc(a, sizeof *at * 3);
	at[0] = (mkc_attr){.name = "alpha", .type = MKC_AT_FLOAT,
			   .f = mkc_node_attr_float(p, "alpha", 1)};
	at[1] = (mkc_attr){.name = "epsilon", .type = MKC_AT_FLOAT,
			   .f = mkc_node_attr_float(p, "epsilon", 1e-5f)};
	at[2] = (mkc_attr){.name = "interleaved", .type = MKC_AT_INT, .i = inter};
	n->in = in;
	n->nin = cos ? 5 : 3;
	n->attr = at;
	n->nattr = 3;
	n->op = MKC_OP_HEAD_PROJ;
	n->op_type = "HeadProj";
	n->domain = "mkc.internal";
	n->name = p->name;   /* errors and the timeline name the matvec it mostly is */
	p->dead = true;      /* dce takes the views after it */
}

/*
 * The rotary or append (n) this pass can fold into the product under it,
 * with that product in *p; NULL when it cannot.
 */
static mkc_node *
candidate(mkc_node *n, mkc_node **p)
{
	if (n->dead || n->nout != 1 || !n->out[0] || !n->in[0])
		return NULL;
	const mkc_tensor *y = n->out[0];
	if (n->op == MKC_OP_ROTARY && n->nin >= 3 && (n->nin == 3 || !n->in[3]) &&
	    y->kind != MKC_TK_OUTPUT) {
		*p = product_under(n->in[0]);
		return *p && rotates_all(n, 1, n->in[0]) ? n : NULL;
	}
	/* into caches in pages too (--max-seqs): a product of one row is a step of
	 * one sequence's token, written at the row its page holds (matmul.h's
	 * mkc_head_at) */
	if (n->op == MKC_OP_CACHE_APPEND && y->rank == 4 && y->cap_axis == 2 &&
	    y->dtype == MKC_DT_FLOAT) {
		*p = product_under(n->in[0]);
		return *p && (n->nin == 1 || rotates_all(n, 1, n->in[0])) ? n : NULL;
	}
	return NULL;
}

/*
 * Only where every NormGemm of the row x has its rotary or append taken
 * (a layer's q, k and v): the stage between the products and the parts
 * goes away only then, and a HeadProj cut at head boundaries can only make
 * its product's tiles larger. (Qwen3's q and k have per-head norms between
 * the product and the rotary: its values' appends alone stay out.)
 */
static bool
whole_row(const mkc_graph *g, const mkc_tensor *x, mkc_node *const *taken)
{
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *m = MKC_NODE(g, i);
		if (!m->dead && m->op == MKC_OP_NORM_GEMM && m->in[0] == x && !taken[i])
			return false;
	}
	return true;
}

int
mkc_pass_fuse_qkv(mkc_graph *g)
{
	int rot = 0, app = 0;
	mkc_graph_count_live_uses(g);
	/* taken[i]: the rotary or append that product i's HeadProj would be
	 * (the arena's memory comes zeroed) */
	mkc_node **taken = mkc_arena_alloc(g->ctx->arena, sizeof *taken * (size_t)g->nodes.n);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *p = NULL, *n = candidate(MKC_NODE(g, i), &p);
		if (n)
			taken[p->id] = n;
	}
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *p = MKC_NODE(g, i), *n = taken[i];
		if (!n || !whole_row(g, p->in[0], taken))
			continue;
		bool rotated = n->op == MKC_OP_ROTARY || n->nin == 3;
		if (n->op == MKC_OP_ROTARY)
			rot++;
		else
			app++;
		fuse_into(g, n, p, rotated ? n->in[1] : NULL, rotated ? n->in[2] : NULL);
	}
	if (!rot && !app)
		return 0;
	mkc_progress(g->ctx, "fuse_qkv: %d rotary embeddings and %d cache appends into the "
		     "products that make them", rot, app);
	return mkc_pass_dce(g);
}
