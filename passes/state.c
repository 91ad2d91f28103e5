/*
 * state.c - the KV cache as state the compiled model owns.
 *
 * requires: infer, canon and dce (shapes known, attention fused, use
 *           counts current); g->kv_cap > 0 (0: the pass does nothing).
 * provides: every past/present pair of a decode-step export turned into
 *           one cache tensor of kind MKC_TK_STATE that holds g->kv_cap
 *           positions (with g->max_seqs, g->cache_pages pages of
 *           g->page_size positions, which sequences share: the tile bodies
 *           find a position's page in a table the runtime keeps), written
 *           in place by a CacheAppend node; the past
 *           input and present output gone from the graph's interface;
 *           g->states listing the caches; an error where a float16 pair
 *           passes/half.c made float32 for it stays in the interface.
 *
 * A decode-step export takes the cache as inputs and gives it back one
 * position longer:
 *
 *   past_key_values.0.key [1, 2, past_len, 32] --+
 *                                                 Concat(axis 2) -> present.0.key
 *   new key               [1, 2, 1, 32]        --+   [1, 2, past_len + 1, 32]
 *
 * and the attention reads present. Copying the whole past in and the whole
 * present out every step costs as much memory traffic as the weights at long
 * contexts, so instead the model keeps present in a buffer laid out for
 * kv_cap positions, the Concat becomes an append of the new positions at
 * past_len, and past_len becomes the number of positions in the cache, which
 * the runtime counts. The tensor keeps its logical shape (past_len + 1 along
 * the axis); only its strides change, so a reader must index through the
 * strides: the pass converts a pair only when every reader of present is an
 * attention node reading it as keys or values, whose tile body does.
 *
 * An Attention that takes the past itself (inputs 4 and 5) and gives the
 * present (outputs 1 and 2), as the Hugging Face template and some exports
 * write it, is first split into the Concat form above.
 */
#include "passes.h"

#include <string.h>

/* An attention reading its keys or values: through the strides, as a cache needs. */
static bool
is_kv_input(const mkc_node *n, int input)
{
	return n->op == MKC_OP_ATTENTION && (input == 1 || input == 2);
}

/* The Concat that makes output q from a past input, or NULL. */
static mkc_node *
cache_concat(mkc_graph *g, mkc_tensor *q, int *axis, mkc_dim *nnew)
{
	mkc_node *c = q->producer;
	if (!c || c->op != MKC_OP_CONCAT || c->nin != 2 || !c->in[0] || !c->in[1])
		return NULL;
	mkc_tensor *past = c->in[0], *x = c->in[1];
	if (past->kind != MKC_TK_INPUT || past->nconsumers != 1 || !mkc_dtype_is_float(q->dtype) ||
	    past->rank != q->rank || x->rank != q->rank)
		return NULL;
	int64_t a = mkc_node_attr_int(c, "axis", 0);
	a = a < 0 ? a + q->rank : a;
	if (a < 0 || a >= q->rank)
		return NULL;
	mkc_dim pl = past->shape[a], n = x->shape[a], sum;
	/* past holds exactly sym positions, a step appends a constant count or
	 * another symbol's (a chunk of S); every other axis is fixed */
	bool chunk = n.sym[0] >= 0 && n.sym[0] != pl.sym[0] && mkc_dim_eq(n, mkc_dim_sym(n.sym[0]));
	if (pl.sym[0] < 0 || !mkc_dim_eq(pl, mkc_dim_sym(pl.sym[0])) ||
	    !(chunk || (mkc_dim_is_const(n) && n.c >= 1)) ||
	    !mkc_dim_add(pl, n, &sum) || !mkc_dim_eq(sum, q->shape[a]))
		return NULL;
	for (int d = 0; d < q->rank; d++)
		if (d != a && !mkc_dim_is_const(q->shape[d]))
			return NULL;
	/* read, and by attentions alone: a present no node reads is an output
	 * like any other (a random graph's Concat of an input, difftest) */
	if (!mkc_graph_read_only_by(g, q, is_kv_input))
		return NULL;
	*axis = (int)a;
	*nnew = n;
	return c;
}

/* Attention(q, k, v, mask, past_k, past_v) -> (y, present_k, present_v) into
 * present = Concat(past, new) along the sequence axis, and an Attention
 * that reads present. is_causal lets query s see the past and the new
 * positions up to s; once the past is part of the keys, that is the
 * diagonal aligned to the last position, which the node then says with
 * is_causal = 2 (mkc's own value: lower reads it). That holds only when
 * the new keys are as many as the queries; otherwise the node stays whole.
 * A single query (a decode step) sees every key: is_causal becomes 0. */
static void
split_attention(mkc_graph *g, mkc_node *n)
{
	if (n->nin < 6 || n->nout < 3 || n->in[0]->rank != 4)
		return;
	mkc_attr *causal = NULL;
	for (int i = 0; i < n->nattr; i++)
		if (!strcmp(n->attr[i].name, "is_causal") && n->attr[i].i)
			causal = &n->attr[i];
	if (causal && (n->in[1]->rank != 4 || !mkc_dim_eq(n->in[0]->shape[2], n->in[1]->shape[2])))
		return;
	for (int k = 0; k < 2; k++) {
		mkc_tensor *past = n->in[4 + k], *present = n->out[1 + k];
		if (!past || !present || past->kind != MKC_TK_INPUT || past->nconsumers != 1 ||
		    present->kind != MKC_TK_OUTPUT)
			return;
	}
	mkc_arena *a = g->ctx->arena;
	for (int k = 0; k < 2; k++) {
		mkc_node *c = mkc_graph_add_node(g, mkc_arena_printf(a, "%s/%s_concat", n->name,
								       k ? "value" : "key"),
						 "", "Concat", 2, 1, 1);
		c->in[0] = n->in[4 + k];
		c->in[1] = n->in[1 + k];
		c->out[0] = n->out[1 + k];
		c->out[0]->producer = c;
		c->attr[0] = (mkc_attr){.name = "axis", .type = MKC_AT_INT, .i = 2};
		n->in[1 + k] = c->out[0];
		n->in[4 + k] = NULL;
		n->out[1 + k] = NULL;
	}
	n->nin = n->in[3] ? 4 : 3;
	n->nout = n->nout > 3 && n->out[3] ? 4 : 1;
	/* one query at the end sees every key: no mask at all */
	if (causal)
		causal->i = mkc_dim_eq(n->in[0]->shape[2], mkc_dim_const(1)) ? 0 : 2;
}

/*
 * The float16 past and present tensors passes/half.c made float32 for this
 * pass to keep in place: one still an input or output would be a float32
 * interface where the model's is float16.
 */
static int
check_half_caches(mkc_graph *g)
{
	for (int i = 0; i < g->half_caches.n; i++) {
		const mkc_tensor *t = g->half_caches.v[i];
		if (t->kind == MKC_TK_INPUT || t->kind == MKC_TK_OUTPUT)
			return mkc_error(g->ctx, "%s: the float16 KV cache '%s' cannot be kept in place "
					 "(every reader of the present must be an attention); compile "
					 "with --kv-io, which keeps it as float16 inputs and outputs",
					 g->path, t->name);
	}
	return 0;
}

/* A node's tensor that may mention the count of cached positions with --max-seqs. */
static bool
reads_pages(const mkc_node *n, const mkc_tensor *t)
{
	return t->kind == MKC_TK_STATE &&
	       (n->op == MKC_OP_CACHE_APPEND || (n->op == MKC_OP_ATTENTION &&
						 (t == n->in[1] || t == n->in[2])));
}

/*
 * With --max-seqs a step's tokens belong to several sequences, each with
 * its own count of cached positions: only the appends and the attentions
 * reading the caches may depend on one (sym, counted as 0 there).
 */
static int
check_paged(mkc_graph *g, int sym)
{
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; !n->dead && j < n->nin + n->nout; j++) {
			const mkc_tensor *t = j < n->nin ? n->in[j] : n->out[j - n->nin];
			if (!t || reads_pages(n, t))
				continue;
			for (int d = 0; d < t->rank; d++)
				if (t->shape[d].sym[0] == sym || t->shape[d].sym[1] == sym)
					return mkc_error(g->ctx, "%s: node '%s' (%s): its %s '%s' depends "
							 "on %s, the count of cached positions, which a "
							 "step of several sequences (--max-seqs) does not "
							 "have: only the attention reads the caches there",
							 g->path, n->name, n->op_type,
							 j < n->nin ? "input" : "output", t->name,
							 MKC_SYM(g, sym));
		}
	}
	return 0;
}

int
mkc_pass_state(mkc_graph *g)
{
	if (g->kv_cap <= 0)
		return 0;
	mkc_arena *a = g->ctx->arena;
	int nn = g->nodes.n;
	for (int i = 0; i < nn; i++)
		if (MKC_NODE(g, i)->op == MKC_OP_ATTENTION)
			split_attention(g, MKC_NODE(g, i));
	if (g->nodes.n != nn) {
		if (mkc_graph_sort(g) != 0)
			return -1;
		mkc_graph_count_uses(g);
	}
	int sym = -1;
	for (int i = 0; i < g->outputs.n; i++) {
		mkc_tensor *q = MKC_OUTPUT(g, i);
		int axis;
		mkc_dim nnew;
		mkc_node *c = cache_concat(g, q, &axis, &nnew);
		if (!c)
			continue;
		mkc_tensor *past = c->in[0];
		int s = past->shape[axis].sym[0];
		if (sym >= 0 && s != sym)
			return mkc_error(g->ctx, "%s: KV caches '%s' and '%s' count positions in different "
					 "symbols (%s, %s); compile with --kv-io", g->path,
					 MKC_STATE(g, 0)->cache->name, q->name, MKC_SYM(g, sym),
					 MKC_SYM(g, s));
		/* a first step, past_len 0, needs room for its new ones */
		if (mkc_dim_is_const(nnew) && g->kv_cap < nnew.c)
			return mkc_error(g->ctx, "%s: --max-seq %lld leaves no room for the %lld new "
					 "position(s) of '%s'", g->path, (long long)g->kv_cap,
					 (long long)nnew.c, q->name);
		sym = s;
		mkc_state *st = mkc_arena_alloc(a, sizeof *st);
		*st = (mkc_state){q, past->name, axis, s, nnew};
		mkc_vec_push(a, &g->states, st);
		c->op = MKC_OP_CACHE_APPEND;
		c->op_type = "CacheAppend";
		c->domain = "mkc.internal";
		c->in[0] = c->in[1];
		c->nin = 1;
		past->nconsumers = 0;
		q->kind = MKC_TK_STATE;
		q->cap_axis = axis;
		/* in pages (--max-seqs): page k is positions k P .. (k + 1) P - 1 */
		q->cap = g->max_seqs ? g->cache_pages * g->page_size : g->kv_cap;
	}
	for (int i = 0; i < g->states.n; i++) {
		mkc_state *st = MKC_STATE(g, i);
		mkc_vec_remove(&g->outputs, st->cache);
		mkc_tensor *past = mkc_graph_find(g, st->past);
		mkc_vec_remove(&g->inputs, past);
		past->kind = MKC_TK_INTERMEDIATE;   /* read by nothing now */
	}
	if (g->states.n && g->max_seqs)
		mkc_progress(g->ctx, "state: %d KV caches in %lld pages of %lld positions, for up to "
			     "%lld sequences of %lld", g->states.n, (long long)g->cache_pages,
			     (long long)g->page_size, (long long)g->max_seqs, (long long)g->kv_cap);
	else if (g->states.n)
		mkc_progress(g->ctx, "state: %d KV caches of %lld positions kept in place; %s counts them",
			     g->states.n, (long long)g->kv_cap, MKC_SYM(g, sym));
	if (g->max_seqs && !g->states.n)
		return mkc_error(g->ctx, "%s: --max-seqs: no KV cache was found to keep in pages (a "
				 "present output made of a past input and the new positions, read by "
				 "attention)", g->path);
	if (g->max_seqs && check_paged(g, sym) != 0)
		return -1;
	return check_half_caches(g);
}
