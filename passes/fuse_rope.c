/*
 * fuse_rope.c - a key's rotary embedding into the cache append after it.
 *
 * requires: state (CacheAppend nodes made).
 * provides: every CacheAppend(k) whose k is RotaryEmbedding(x, cos, sin)
 *           (opset 23, no position_ids, x 4-D [B, H, S, D], cos and sin
 *           3-D, k read by nothing else and no graph output), with the
 *           cache's positions on axis 2, is CacheAppend(x, cos, sin) with
 *           the rotary's attributes: it rotates the new positions as it
 *           writes them into the cache.
 *
 * In a decode step the key's rotary is one small task and its append a
 * second, both on every layer's critical path between k_proj and the
 * attention parts (1.7 and 4.1 us on an H200 in the Llama-3.2-1B step,
 * bench/RESULTS.md session 7). The fused body (backends/c/cache.h)
 * computes the rotary's float operations in its order, so the C target's
 * caches keep their bits (tests/passes/test_fuse.c compares them with
 * --no-fuse).
 */
#include "passes.h"

/* The rotary defining t, read only by one node, or NULL. */
static mkc_node *
rotary_of(const mkc_tensor *t)
{
	mkc_node *n = t->producer;
	if (!n || n->dead || n->op != MKC_OP_ROTARY || n->nout != 1 || t->nconsumers != 1 ||
	    t->kind == MKC_TK_OUTPUT || (n->nin > 3 && n->in[3]))
		return NULL;
	const mkc_tensor *x = n->in[0], *c = n->in[1], *s = n->in[2];
	if (x->rank != 4 || c->rank != 3 || s->rank != 3 || x->dtype != MKC_DT_FLOAT ||
	    c->dtype != MKC_DT_FLOAT || s->dtype != MKC_DT_FLOAT)
		return NULL;
	return n;
}

int
mkc_pass_fuse_rope(mkc_graph *g)
{
	int fused = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *c = MKC_NODE(g, i);
		if (c->dead || c->op != MKC_OP_CACHE_APPEND || c->nin != 1 || c->out[0]->cap_axis != 2)
			continue;
		mkc_node *r = rotary_of(c->in[0]);
		if (!r)
			continue;
		mkc_tensor **in = mkc_arena_alloc(g->ctx->arena, sizeof *in * 3);
		for (int k = 0; k < 3; k++)
			in[k] = r->in[k];
		c->in = in;
		c->nin = 3;
		c->attr = r->attr;   /* interleaved, rotary_embedding_dim, num_heads */
		c->nattr = r->nattr;
		r->dead = true;   /* dce counts the uses again */
		fused++;
	}
	if (!fused)
		return 0;
	mkc_progress(g->ctx, "fuse_rope: %d rotary embeddings into the cache appends after them",
		     fused);
	return mkc_pass_dce(g);
}
