/*
 * kv.c - the KV caches' storage type.
 *
 * requires: state (the caches), weights (their storage decided),
 *           split_attn (the readers a bf16 cache needs).
 * provides: t->storage = MKC_DT_BFLOAT16 for every cache stored as bf16:
 *           with g->kv_dtype bf16 (mkc --kv bf16), or 0 and the model's
 *           weights in bf16 (--weights bf16, or a bf16 Hugging Face
 *           folder). A cache is stored so only when its writer is a
 *           CacheAppend into [B, H, positions, D] and every reader is an
 *           AttnPart, the bodies that read and write bf16 caches
 *           (backends/c/cache.h, backends/c/attention.h,
 *           backends/cuda/attention.cuh); asked for explicitly, a cache
 *           that is not is an error naming the node, otherwise it stays
 *           float32.
 *
 * The cache is the one thing a decode step reads that grows with the
 * context: at context 4096 the Llama-3.2-1B shape's caches are 268 MB of
 * float32 a step, against 2.5 GB of bf16 weights, and the time per token
 * grew by 0.12 ms from context 1 to 4096 (bench/RESULTS.md, session 10).
 * In bf16 they are half. Keys and values are rounded to nearest even as
 * they are appended and widened to float32 as the parts read them; every
 * sum stays in float32. The accuracy this costs is in bench/RESULTS.md.
 */
#include "passes.h"

static bool
reads_as_cache(const mkc_node *n, int input)
{
	return n->op == MKC_OP_ATTN_PART && (input == 1 || input == 2);
}

/* The weights are bf16: some tensor the model reads is stored so. */
static bool
bf16_model(const mkc_graph *g)
{
	if (g->bf16_weights)
		return true;
	for (int i = 0; i < g->tensors.n; i++)
		if (MKC_TENSOR(g, i)->storage == MKC_DT_BFLOAT16 && MKC_TENSOR(g, i)->nconsumers)
			return true;
	return false;
}

/* The node that keeps cache t (written by w) from bf16, or NULL when it can be bf16. */
static const mkc_node *
blocker(const mkc_graph *g, const mkc_tensor *t, const mkc_node *w)
{
	if (w->op != MKC_OP_CACHE_APPEND || t->rank != 4 || t->cap_axis != 2 ||
	    t->dtype != MKC_DT_FLOAT)
		return w;
	if (mkc_graph_readers_all(g, t, reads_as_cache))
		return NULL;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		for (int k = 0; !n->dead && k < n->nin; k++)
			if (n->in[k] == t && !reads_as_cache(n, k))
				return n;
	}
	return w;
}

int
mkc_pass_kv(mkc_graph *g)
{
	if (!g->states.n || g->kv_dtype == MKC_DT_FLOAT)
		return 0;
	bool asked = g->kv_dtype == MKC_DT_BFLOAT16;
	if (!asked && !bf16_model(g))
		return 0;
	int n = 0;
	for (int i = 0; i < g->states.n; i++) {
		mkc_tensor *t = MKC_STATE(g, i)->cache;
		if (!t->producer)
			continue;   /* never written: nothing to store */
		const mkc_node *b = blocker(g, t, t->producer);
		if (b && asked)
			return mkc_node_error(g, b, "--kv bf16: KV cache '%s' is %s here, and only "
					      "AttnPart reads a bf16 cache (compile with --kv f32)",
					      t->name, b->op == MKC_OP_CACHE_APPEND ? "written" : "read");
		if (b) {
			mkc_progress(g->ctx, "kv: cache %s stays float32 (node %s)", t->name, b->name);
			continue;
		}
		t->storage = MKC_DT_BFLOAT16;
		n++;
	}
	mkc_progress(g->ctx, "kv: %d of %d KV caches stored as bf16", n, g->states.n);
	return 0;
}
