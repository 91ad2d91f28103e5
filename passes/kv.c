/*
 * kv.c - the KV caches' storage type.
 *
 * requires: state (the caches), split_attn (the readers a bf16 cache
 *           needs).
 * provides: with g->kv_dtype bf16 (mkc --kv bf16), t->storage =
 *           MKC_DT_BFLOAT16 for every cache: its writer must be a
 *           CacheAppend or a HeadProj (passes/fuse_qkv.c) into [B, H,
 *           positions, D] and every reader an
 *           AttnPart, the bodies that write and read bf16 caches
 *           (backends/c/cache.h, backends/c/attention.h,
 *           backends/cuda/attention.cuh); a cache that is not stops the
 *           compile with an error naming the node. Otherwise (the
 *           default) the caches stay float32.
 *
 * The cache is the one thing a decode step reads that grows with the
 * context: at context 4096 the Llama-3.2-1B shape's caches are 268 MB of
 * float32 a step, against 2.5 GB of bf16 weights. In bf16 they are half:
 * keys and values are rounded to nearest even as they are appended and
 * widened to float32 as the parts read them; every sum stays in float32.
 * Measured on an H200 (bench/RESULTS.md, session 11) it buys little, 4
 * to 34 us of the 1B step at context 4096 and nothing at 1024 (a part's
 * time is its trips to memory, not its bytes), and it costs exactness:
 * a key or value whose float32 value differs from the reference's in the
 * last bit (another summation order) can round to another bf16, and
 * greedy tokens then part from transformers' (Qwen3-0.6B's at token 40 of
 * 64, even against a reference that rounds its cache alike). Hence an
 * option, not the default.
 */
#include "passes.h"

static bool
reads_as_cache(const mkc_node *n, int input)
{
	return n->op == MKC_OP_ATTN_PART && (input == 1 || input == 2);
}

/* The node that keeps cache t (written by w) from bf16, or NULL when it can be bf16. */
static const mkc_node *
blocker(const mkc_graph *g, const mkc_tensor *t, const mkc_node *w)
{
	if ((w->op != MKC_OP_CACHE_APPEND && w->op != MKC_OP_HEAD_PROJ) || t->rank != 4 ||
	    t->cap_axis != 2 || t->dtype != MKC_DT_FLOAT)
		return w;
	/* mkc_graph_readers_all, but naming the reader, and past dead nodes */
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		for (int k = 0; !n->dead && k < n->nin; k++)
			if (n->in[k] == t && !reads_as_cache(n, k))
				return n;
	}
	return NULL;
}

int
mkc_pass_kv(mkc_graph *g)
{
	if (!g->states.n || g->kv_dtype != MKC_DT_BFLOAT16)
		return 0;
	int n = 0;
	for (int i = 0; i < g->states.n; i++) {
		mkc_tensor *t = MKC_STATE(g, i)->cache;
		if (!t->producer)
			continue;   /* never written: nothing to store */
		const mkc_node *b = blocker(g, t, t->producer);
		if (b)
			return mkc_node_error(g, b, "--kv bf16: KV cache '%s' is %s here, and only "
					      "AttnPart reads a bf16 cache (compile with --kv f32)",
					      t->name, b == t->producer ? "written" : "read");
		t->storage = MKC_DT_BFLOAT16;
		n++;
	}
	mkc_progress(g->ctx, "kv: %d of %d KV caches stored as bf16", n, g->states.n);
	return 0;
}
