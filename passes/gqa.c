/*
 * gqa.c - GroupQueryAttention (com.microsoft) taken apart into the nodes
 * of the Hugging Face path, so that its caches are kept in place and its
 * steps get the same fused tasks.
 *
 * requires: infer (shapes: infer_gqa bound a symbolic head size and total
 *           length).
 * provides: every GroupQueryAttention with packed QKV (query, key and
 *           value in its first input, no key and value inputs: the
 *           builder's default) reading them from a Split on the last axis;
 *           every one with q/k norms (inputs 14 and 15) reading its query
 *           and key through RMSNormalization nodes of their heads, the
 *           inputs gone;
 *           then, with g->kv_cap > 0 (caches kept as state), every one that
 *           has a past and gives both presents as graph outputs replaced by
 *
 *             q, k, v [B, S, H * D] -> Reshape [B, S, H, D] -> Transpose [B, H, S, D]
 *             q, k -> RotaryEmbedding (opset 23) by cos, sin [1, S, R / 2],
 *                     rows P .. P + S - 1 of its cos/sin caches (a Slice from
 *                     P, one for every node that reads those caches)
 *             present_key, present_value = Concat(past, new) along positions
 *             Attention(q, present_key, present_value), causal at the end
 *             -> Transpose [B, S, Hq, D] -> Reshape: its output [B, S, Hq * D]
 *
 *           and, once for every seqlens_k and total_sequence_length, a
 *           LengthCheck of them against P + S. Any other keeps the node
 *           (one whole tile: backends/c/gqa.h).
 *           And every Attention with 3-D inputs [B, S, H * D] (ONNX's
 *           3-D form; a MultiHeadAttention of onnxruntime-genai's fp16
 *           CPU export, which infer made one) reading each of them as
 *           heads, [B, S, H * D] -> Reshape -> Transpose [B, H, S, D], or
 *           the heads the input was made from when it is those heads put
 *           back into rows, and giving its output [B, S, H * D] from [B,
 *           H, S, D] by Transpose and Reshape, as above.
 *
 * Why. onnxruntime's node gives its caches back as outputs, a whole new
 * present every step; the Concat and Attention form is what the state pass
 * keeps in place and what the fusions take (the key's rotary and append in
 * its product, attention split over positions), so that the builder's file
 * runs as the folder it came from does. canon, which runs next, makes the
 * transposes of a one-token step reshapes.
 *
 * What is assumed, and checked. onnxruntime reads the present by seqlens_k:
 * positions past seqlens_k[b] are padding, and the new tokens sit from
 * seqlens_k[b] + 1 - S on. Taken apart, the node computes the case of one
 * unpadded sequence, seqlens_k[b] + 1 = P + S = total_sequence_length, and
 * the LengthCheck fails the step on any other, so a padded batch is refused,
 * never answered wrongly. The new tokens' rows of the cos/sin caches must
 * exist: P + S is at most the caches' kv_cap positions, so the tables need
 * that many rows: a default kv_cap (no --max-seq) is lowered to theirs, a
 * --max-seq past them refused.
 */
#include "passes.h"

#include <string.h>

static mkc_attr
int_attr(const char *name, int64_t v)
{
	return (mkc_attr){.name = name, .type = MKC_AT_INT, .i = v};
}

static mkc_attr
perm_attr(void)
{
	static int64_t swap12[4] = {0, 2, 1, 3};
	return (mkc_attr){.name = "perm", .type = MKC_AT_INTS, .ints = swap12, .n = 4};
}

/*
 * x [B, S, ...] as [B, S, last] (rank 3) or [B, S, last / d, d] (d > 0),
 * by a Reshape named at's name/what; into out (NULL: a new tensor). NULL
 * on an error.
 */
static mkc_tensor *
reshape(mkc_graph *g, mkc_node *at, const char *what, mkc_tensor *x, int64_t last, int64_t d,
	mkc_tensor *out)
{
	mkc_arena *a = g->ctx->arena;
	mkc_dim s[4] = {mkc_dim_const(0), mkc_dim_const(0), mkc_dim_const(d ? last / d : last),
			mkc_dim_const(d)};
	const char *sn = mkc_graph_fresh_name(g, at->name, mkc_arena_printf(a, "%s_shape", what));
	mkc_tensor *in[2] = {x, mkc_graph_ints(g, sn, d ? 4 : 3, s)};
	return mkc_infer_add(g, at, what, "Reshape", 2, in, 0, NULL, out);
}

/* x [B, S, h * d] as heads [B, h, S, d]; NULL on an error. */
static mkc_tensor *
to_heads(mkc_graph *g, mkc_node *at, const char *what, mkc_tensor *x, int64_t h, int64_t d)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor *split = reshape(g, at, mkc_arena_printf(a, "%s_split", what), x, h * d, d, NULL);
	mkc_attr perm = perm_attr();
	return split ? mkc_infer_add(g, at, mkc_arena_printf(a, "%s_heads", what), "Transpose", 1,
				     &split, 1, &perm, NULL)
		     : NULL;
}

/*
 * Rows p .. p + s - 1 of a cos or sin cache [positions, R / 2], as [1, s,
 * R / 2]: made once for every node that reads that cache (at: the first).
 */
static mkc_tensor *
rows(mkc_graph *g, mkc_node *at, mkc_tensor *cache, mkc_dim p, mkc_dim s)
{
	mkc_arena *a = g->ctx->arena;
	const char *name = mkc_arena_printf(a, "%s_new_rows", cache->name);
	mkc_tensor *t = mkc_graph_find(g, name);
	if (t)
		return t;
	mkc_dim end, zero = mkc_dim_const(0);
	if (!mkc_dim_add(p, s, &end))
		return NULL;   /* infer_gqa added them */
	mkc_tensor *in[4] = {cache, mkc_graph_ints(g, mkc_graph_fresh_name(g, cache->name, "starts"), 1, &p),
			     mkc_graph_ints(g, mkc_graph_fresh_name(g, cache->name, "ends"), 1, &end),
			     mkc_graph_ints(g, mkc_graph_fresh_name(g, cache->name, "axes"), 1, &zero)};
	mkc_tensor *sl = mkc_infer_add(g, at, mkc_arena_printf(a, "%s_slice", cache->name), "Slice",
				       4, in, 0, NULL, NULL);
	if (!sl)
		return NULL;
	mkc_dim shape[3] = {mkc_dim_const(1), mkc_dim_const(-1), cache->shape[1]};
	mkc_tensor *rin[2] = {sl, mkc_graph_ints(g, mkc_graph_fresh_name(g, cache->name, "rows_shape"), 3, shape)};
	return mkc_infer_add(g, at, mkc_arena_printf(a, "%s_rows", cache->name), "Reshape", 2, rin,
			     0, NULL, mkc_graph_tensor(g, name));
}

/* The LengthCheck of seqlens_k and total (NULL: none) against p + s, once. */
static int
check_lengths(mkc_graph *g, mkc_node *at, mkc_tensor *seqlens, mkc_tensor *total, mkc_dim l)
{
	mkc_arena *a = g->ctx->arena;
	const char *name = mkc_arena_printf(a, "%s_%s_checked", seqlens->name,
					    total ? total->name : "");
	if (mkc_graph_find(g, name))
		return 0;
	mkc_node *n = mkc_graph_add_node(g, mkc_arena_printf(a, "%s/lengths", at->name),
					 "mkc.internal", "LengthCheck", total ? 3 : 2, 1, 0);
	n->in[0] = seqlens;
	n->in[1] = mkc_graph_ints(g, mkc_graph_fresh_name(g, at->name, "lengths_want"), 1, &l);
	if (total)
		n->in[2] = total;
	mkc_tensor *ok = mkc_graph_tensor(g, name);
	ok->dtype = MKC_DT_INT32;
	ok->rank = 1;
	ok->shape[0] = mkc_dim_const(1);
	ok->producer = n;
	n->out[0] = ok;
	mkc_node_count_reads(n, 1);
	mkc_graph_move_before(g, n, at);
	return 0;
}

/* The node's past and presents, if it has them as state can take them, for one sequence. */
static bool
has_caches(const mkc_node *n)
{
	if (n->nin < 5 || n->nout < 3 || !n->in[1] || !n->in[2])
		return false;
	for (int i = 0; i < 2; i++) {
		const mkc_tensor *past = n->in[3 + i], *present = n->out[1 + i];
		/* a past of a symbol's length, which the cache counts (passes/state.c) */
		if (!past || past->kind != MKC_TK_INPUT || past->nconsumers != 1 || past->rank != 4 ||
		    mkc_dim_bare_sym(past->shape[2]) < 0 || !present || present->kind != MKC_TK_OUTPUT)
			return false;
	}
	/* one sequence: every batch entry would share the cos/sin rows of P */
	return mkc_dim_eq(n->in[0]->shape[0], mkc_dim_const(1));
}

/* GroupQueryAttention n into the Hugging Face path's nodes (the comment at the top). */
static int
take_apart(mkc_graph *g, mkc_node *n)
{
	mkc_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2], *pk = n->in[3], *pv = n->in[4];
	mkc_tensor *seqlens = n->in[5], *total = n->nin > 6 ? n->in[6] : NULL;
	int64_t hq = mkc_node_attr_int(n, "num_heads", 0), hk = mkc_node_attr_int(n, "kv_num_heads", 0);
	int64_t d = q->shape[2].c / hq;
	mkc_dim p = pk->shape[2], s = q->shape[1], l;
	if (!mkc_dim_add(p, s, &l))
		return mkc_node_error(g, n, "past and new lengths cannot be added");
	bool rotary = mkc_node_attr_int(n, "do_rotary", 0) != 0;
	mkc_tensor *cos = rotary ? n->in[7] : NULL, *sin = rotary ? n->in[8] : NULL;
	for (int i = 0; rotary && i < 2; i++) {
		const mkc_tensor *c = i ? sin : cos;
		if (c->rank != 2 || !mkc_dim_is_const(c->shape[0]) || !mkc_dim_is_const(c->shape[1]))
			return mkc_node_error(g, n, "'%s' must be [positions, rotated / 2], constants",
					      c->name);
		if (c->shape[0].c >= g->kv_cap)
			continue;
		if (!g->kv_cap_default)
			return mkc_node_error(g, n, "'%s' holds %lld positions, fewer than the %lld "
					      "of the KV caches (--max-seq %lld or less)", c->name,
					      (long long)c->shape[0].c, (long long)g->kv_cap,
					      (long long)c->shape[0].c);
		g->kv_cap = c->shape[0].c;
		mkc_progress(g->ctx, "%s: the KV caches hold %lld positions, the rows of '%s' "
			     "(--max-seq sets fewer)", g->path, (long long)g->kv_cap, c->name);
	}
	if (check_lengths(g, n, seqlens, total, l) != 0)
		return -1;
	mkc_tensor *qh = to_heads(g, n, "q", q, hq, d), *kh = to_heads(g, n, "k", k, hk, d);
	mkc_tensor *vh = to_heads(g, n, "v", v, hk, d);
	if (!qh || !kh || !vh)
		return -1;
	if (rotary) {
		mkc_tensor *cr = rows(g, n, cos, p, s), *sr = rows(g, n, sin, p, s);
		if (!cr || !sr)
			return -1;
		int64_t r = 2 * cos->shape[1].c;
		mkc_attr at[2] = {int_attr("interleaved", mkc_node_attr_int(n, "rotary_interleaved", 0)),
				  int_attr("rotary_embedding_dim", r < d ? r : 0)};
		mkc_tensor *qin[3] = {qh, cr, sr}, *kin[3] = {kh, cr, sr};
		qh = mkc_infer_add(g, n, "q_rope", "RotaryEmbedding", 3, qin, 2, at, NULL);
		kh = mkc_infer_add(g, n, "k_rope", "RotaryEmbedding", 3, kin, 2, at, NULL);
		if (!qh || !kh)
			return -1;
	}
	mkc_tensor *present[2] = {n->out[1], n->out[2]};
	mkc_tensor *kin[2] = {pk, kh}, *vin[2] = {pv, vh};
	mkc_attr axis = int_attr("axis", 2);
	/* the dead node no longer writes them: their producers are the new ones */
	mkc_node_count_reads(n, -1);
	n->dead = true;
	mkc_tensor *y = n->out[0];
	for (int i = 0; i < n->nout; i++)
		n->out[i] = NULL;
	if (!mkc_infer_add(g, n, "key_concat", "Concat", 2, kin, 1, &axis, present[0]) ||
	    !mkc_infer_add(g, n, "value_concat", "Concat", 2, vin, 1, &axis, present[1]))
		return -1;
	/* one query at the end sees every key; a chunk's the diagonal at the end */
	mkc_attr at[3];
	int na = 0;
	at[na++] = int_attr("is_causal", mkc_dim_eq(s, mkc_dim_const(1)) ? 0 : 2);
	float scale = mkc_node_attr_float(n, "scale", 0), cap = mkc_node_attr_float(n, "softcap", 0);
	if (scale != 0)
		at[na++] = (mkc_attr){.name = "scale", .type = MKC_AT_FLOAT, .f = scale};
	if (cap > 0)
		at[na++] = (mkc_attr){.name = "softcap", .type = MKC_AT_FLOAT, .f = cap};
	mkc_tensor *ain[3] = {qh, present[0], present[1]};
	mkc_tensor *att = mkc_infer_add(g, n, "attn", "Attention", 3, ain, na, at, NULL);
	mkc_attr perm = perm_attr();
	mkc_tensor *pos = att ? mkc_infer_add(g, n, "attn_positions", "Transpose", 1, &att, 1, &perm, NULL)
			      : NULL;
	if (!pos)
		return -1;
	return reshape(g, n, "attn_flat", pos, hq * d, 0, y) ? 0 : -1;
}

/*
 * The heads [B, H, S, D] that a 3-D input x [B, S, H * D] was put back into
 * rows from, by Transpose (0, 2, 1, 3) and a Reshape merging the last two
 * axes (the fp16 CPU export's repeat_kv after its copies for the query
 * heads), or NULL. Read as they are, they leave canon the repeat to drop
 * and the state pass the cache to keep in place.
 */
static mkc_tensor *
heads_of(const mkc_tensor *x, int64_t h)
{
	const mkc_node *r = x->producer;
	if (!r || r->dead || r->op != MKC_OP_RESHAPE)
		return NULL;
	const mkc_tensor *t = r->in[0];
	const mkc_node *tr = t->producer;
	const mkc_attr *p = tr && !tr->dead && tr->op == MKC_OP_TRANSPOSE ? mkc_node_attr(tr, "perm")
									  : NULL;
	mkc_dim hd;
	if (!p || p->n != 4 || p->ints[0] != 0 || p->ints[1] != 2 || p->ints[2] != 1 ||
	    p->ints[3] != 3 || t->rank != 4 || !mkc_dim_eq(t->shape[0], x->shape[0]) ||
	    !mkc_dim_eq(t->shape[1], x->shape[1]) || !mkc_dim_eq(t->shape[2], mkc_dim_const(h)) ||
	    !mkc_dim_mul(t->shape[3], mkc_dim_const(h), &hd) || !mkc_dim_eq(hd, x->shape[2]))
		return NULL;
	return tr->in[0];
}

/*
 * Attention n with 3-D inputs: each of them as heads before it, its output
 * as rows after it (the comment at the top). 1 when it did, 0 when n is
 * not that, -1 on an error.
 */
static int
inputs_as_heads(mkc_graph *g, mkc_node *n)
{
	mkc_tensor *y = n->out[0];
	if (n->op != MKC_OP_ATTENTION || n->nout != 1 || !y || y->rank != 3)
		return 0;
	static const char *const what[3] = {"q", "k", "v"};
	mkc_tensor *in[6];
	memcpy(in, n->in, (size_t)n->nin * sizeof *in);
	int64_t h = 0, dv = 0;
	for (int i = 0; i < 3; i++) {
		const int64_t heads = mkc_node_attr_int(n, i ? "kv_num_heads" : "q_num_heads", 0);
		mkc_tensor *x = in[i];
		const int64_t d = x->rank == 3 ? x->shape[2].c / heads : x->shape[3].c;
		if (i == 0)
			h = x->rank == 3 ? heads : x->shape[1].c;
		if (i == 2)
			dv = d;
		if (x->rank == 3 && !(in[i] = heads_of(x, heads)) &&
		    !(in[i] = to_heads(g, n, what[i], x, heads, d)))
			return -1;
	}
	/* the dead node no longer writes y: the new ones do */
	mkc_node_count_reads(n, -1);
	n->dead = true;
	n->out[0] = NULL;
	for (int i = 0; i < 3; i++)   /* heads put back into rows that nothing else reads */
		for (mkc_tensor *t = n->in[i]; t != in[i] && t->nconsumers == 0 &&
		     t->kind == MKC_TK_INTERMEDIATE && t->producer && !t->producer->dead;
		     t = t->producer->in[0]) {
			t->producer->dead = true;
			mkc_node_count_reads(t->producer, -1);
		}
	/* its inputs are heads now: the head counts of 3-D ones go (canon's grouped
	 * heads would have to change them with the keys) */
	mkc_attr *at = mkc_arena_alloc(g->ctx->arena, sizeof *at * (size_t)(n->nattr + 1));
	int nat = 0;
	for (int i = 0; i < n->nattr; i++)
		if (strcmp(n->attr[i].name, "q_num_heads") && strcmp(n->attr[i].name, "kv_num_heads"))
			at[nat++] = n->attr[i];
	mkc_attr perm = perm_attr();
	mkc_tensor *att = mkc_infer_add(g, n, "heads", "Attention", n->nin, in, nat, at, NULL);
	mkc_tensor *pos = att ? mkc_infer_add(g, n, "positions", "Transpose", 1, &att, 1, &perm, NULL)
			      : NULL;
	return pos && reshape(g, n, "flat", pos, h * dv, 0, y) ? 1 : -1;
}

/*
 * The q/k norms inside the node (inputs 14 and 15, q_norm_weight and
 * k_norm_weight: onnxruntime-genai's CUDA export of Qwen3 puts them there):
 * an RMS norm of each head of the query and the key, before the rotation,
 * taken out of the node as Reshape [B, S, H, D], RMSNormalization over D
 * by the scale with qk_norm_epsilon, Reshape [B, S, H * D], which both the
 * node taken apart and the whole node's body then read as their query and
 * key. 1 when it took them out.
 */
static int
take_qk_norms(mkc_graph *g, mkc_node *n)
{
	if (n->nin < 16 || !n->in[14])
		return 0;
	mkc_arena *a = g->ctx->arena;
	int64_t heads[2] = {mkc_node_attr_int(n, "num_heads", 0),
			    mkc_node_attr_int(n, "kv_num_heads", 0)};
	int64_t d = n->in[0]->shape[2].c / heads[0];   /* split already: the query's heads */
	mkc_attr eps = {.name = "epsilon", .type = MKC_AT_FLOAT,
			.f = mkc_node_attr_float(n, "qk_norm_epsilon", 0)};
	static const char *const what[2] = {"q_norm", "k_norm"};
	mkc_node_count_reads(n, -1);
	for (int i = 0; i < 2; i++) {
		const char *w = what[i];
		mkc_tensor *h = reshape(g, n, mkc_arena_printf(a, "%s_heads", w), n->in[i],
					heads[i] * d, d, NULL);
		mkc_tensor *nin[2] = {h, n->in[14 + i]};
		mkc_tensor *y = h ? mkc_infer_add(g, n, w, "RMSNormalization", 2, nin, 1, &eps, NULL) : NULL;
		mkc_tensor *r = y ? reshape(g, n, mkc_arena_printf(a, "%s_flat", w), y, heads[i] * d,
					    0, NULL) : NULL;
		if (!r)
			return -1;
		n->in[i] = r;
	}
	n->in[14] = n->in[15] = NULL;
	n->nin = 12;
	mkc_node_count_reads(n, 1);
	return 1;
}

/*
 * Packed QKV (the query input holds query, key and value, [B, S, (heads +
 * 2 kv_heads) * D], no key and value inputs): a Split on the last axis
 * before the node gives it the three, which the bodies and the passes read.
 */
static int
split_packed_qkv(mkc_graph *g, mkc_node *n)
{
	if (n->nin < 3 || n->in[1] || n->in[2])
		return 0;
	mkc_tensor *x = n->in[0];
	int64_t hq = mkc_node_attr_int(n, "num_heads", 0), hk = mkc_node_attr_int(n, "kv_num_heads", 0);
	int64_t d = x->shape[2].c / (hq + 2 * hk);   /* infer_gqa checked it */
	mkc_arena *a = g->ctx->arena;
	mkc_node *sp = mkc_graph_add_node(g, mkc_arena_printf(a, "%s_split_qkv", n->name), "",
					  "Split", 1, 3, 2);
	int64_t *parts = mkc_arena_alloc(a, 3 * sizeof *parts);
	parts[0] = hq * d;
	parts[1] = parts[2] = hk * d;
	sp->attr[0] = int_attr("axis", 2);
	sp->attr[1] = (mkc_attr){.name = "split", .type = MKC_AT_INTS, .ints = parts, .n = 3};
	sp->in[0] = x;
	static const char *const what[3] = {"q", "k", "v"};
	for (int i = 0; i < 3; i++) {
		mkc_tensor *t = mkc_graph_tensor(g, mkc_graph_fresh_name(g, n->name, what[i]));
		t->dtype = x->dtype;
		t->rank = 3;
		t->shape[0] = x->shape[0];
		t->shape[1] = x->shape[1];
		t->shape[2] = mkc_dim_const(parts[i]);
		t->producer = sp;
		sp->out[i] = t;
	}
	mkc_node_count_reads(sp, 1);
	mkc_graph_move_before(g, sp, n);
	mkc_node_count_reads(n, -1);
	n->in[0] = sp->out[0];
	n->in[1] = sp->out[1];
	n->in[2] = sp->out[2];
	mkc_node_count_reads(n, 1);
	return 1;
}

int
mkc_pass_gqa(mkc_graph *g)
{
	int packed = 0, apart = 0, kept = 0, norms = 0, heads = 0;
	mkc_graph_count_live_uses(g);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (!n->dead && n->op == MKC_OP_ATTENTION) {
			int r = inputs_as_heads(g, n);
			if (r < 0)
				return -1;
			heads += r;
		}
		if (n->dead || n->op != MKC_OP_MS_GQA)
			continue;
		packed += split_packed_qkv(g, n);
		int normed = take_qk_norms(g, n);
		if (normed < 0)
			return -1;
		norms += normed;
		if (g->kv_cap <= 0 || !has_caches(n)) {
			kept++;
			continue;
		}
		if (take_apart(g, n) != 0)
			return -1;
		apart++;
	}
	if (packed + apart + kept)
		mkc_progress(g->ctx, "gqa: %d GroupQueryAttention nodes with packed QKV split, %d "
			     "with q/k norms taken out; %d taken apart into the nodes of the Hugging "
			     "Face path, %d kept whole", packed, norms, apart, kept);
	if (heads)
		mkc_progress(g->ctx, "gqa: %d Attention nodes read 3-D inputs as heads", heads);
	return 0;
}
