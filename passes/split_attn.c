/*
 * split_attn.c - attention over chunks of positions, then a merge.
 *
 * requires: state (a KV cache kept in place is read through its strides),
 *           weights.
 * provides: every Attention that reads a query [B, Hq, Sq, D] and keys and
 *           values [B, Hk, L, D] (no mask, no past inputs, no soft cap, one
 *           output) is two nodes (mkc.internal):
 *             AttnPart(q, k, v) -> part [B, Hk * C, G * Sq, D + 2]
 *             AttnMerge(part) -> the output [B, Hq, Sq, D]
 *           with G = Hq / Hk query heads a key head and C chunks. Row
 *           (b, kh * C + c, g * Sq + s) of part holds, for query head
 *           kh * G + g at position s, the softmax numerators of the
 *           positions of chunk c (c * L / C up to (c + 1) * L / C) summed
 *           against the values, then their maximum score and the sum of
 *           exp(score - maximum): flash-decoding's partial results, which
 *           AttnMerge rescales to a common maximum and adds.
 *
 * With --max-seqs (g->max_seqs) the keys and values are caches in pages
 * and each query row s (of Sq, the step's tokens) a sequence's: its
 * positions are its own sequence's 0 .. pos[s] (runtime/common.h's
 * mkc_rt_pages), and chunk c of them is their chunk j =
 * mkc_rt_part_chunk(c, C, s), mkc_rt_part_lo(j) .. mkc_rt_part_lo(j + 1)
 * of that count (turned by s: at a short context only a few chunks hold
 * positions, and unturned their tiles would hold every sequence's). The
 * attention is then causal by the positions whatever its is_causal says
 * (as the general body reads it), and Sq may be the step's symbol.
 *
 * A decode step's attention is one query row a head against L cached
 * positions: as one task a head, 32 tiles of the Llama-3.2-1B shape each
 * walked up to 4096 positions on one SM while the rest idled (1.4 ms of the
 * step at context 4096). The partial tiles are Hk * C, about one a worker,
 * and each reads its chunk of keys and values once for all G query heads
 * that share them. C is the workers over Hk (at least 1, at most
 * MKC_ATTN_MAX_CHUNKS, runtime/limits.h: the merge bodies' limit).
 */
#include "passes.h"
#include "../runtime/limits.h"

static bool
splittable(const mkc_graph *g, const mkc_node *n)
{
	if (n->op != MKC_OP_ATTENTION || n->nin != 3 || n->nout < 1)
		return false;
	for (int o = 1; o < n->nout; o++)
		if (n->out[o])
			return false;
	const mkc_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2];
	if (q->rank != 4 || k->rank != 4 || v->rank != 4 || q->dtype != MKC_DT_FLOAT ||
	    k->dtype != MKC_DT_FLOAT || v->dtype != MKC_DT_FLOAT)
		return false;
	/* caches in pages: the rows' positions are their sequences' */
	const bool paged = g->max_seqs && k->cap;
	if (mkc_node_attr_float(n, "softcap", 0) != 0 ||
	    (!paged && mkc_node_attr_int(n, "is_causal", 0)) ||
	    mkc_node_attr_int(n, "qk_matmul_output_mode", 0))
		return false;
	for (int d = 0; d < 4; d++)
		if (d != 2 && (!mkc_dim_is_const(q->shape[d]) || !mkc_dim_is_const(k->shape[d])))
			return false;
	if ((!paged && !mkc_dim_is_const(q->shape[2])) || !mkc_dim_eq(k->shape[2], v->shape[2]) ||
	    !mkc_dim_eq(k->shape[3], q->shape[3]) || !mkc_dim_eq(v->shape[3], q->shape[3]) ||
	    !mkc_dim_eq(k->shape[1], v->shape[1]) || !mkc_dim_eq(k->shape[0], q->shape[0]) ||
	    !mkc_dim_eq(v->shape[0], q->shape[0]))
		return false;
	int64_t hq = q->shape[1].c, hk = k->shape[1].c;
	return hk >= 1 && hq % hk == 0;
}

static int
split(mkc_graph *g, mkc_node *n)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor *q = n->in[0], *k = n->in[1];
	int64_t b = q->shape[0].c, hk = k->shape[1].c, grp = q->shape[1].c / hk;
	int64_t chunks = g->nworkers / (b * hk > 0 ? b * hk : 1);
	chunks = chunks < 1 ? 1 : chunks > MKC_ATTN_MAX_CHUNKS ? MKC_ATTN_MAX_CHUNKS : chunks;
	mkc_tensor *part = mkc_graph_tensor(g, mkc_arena_printf(a, "%s/part", n->name));
	part->dtype = MKC_DT_FLOAT;
	part->rank = 4;
	part->shape[0] = mkc_dim_const(b);
	part->shape[1] = mkc_dim_const(hk * chunks);
	if (!mkc_dim_mul(mkc_dim_const(grp), q->shape[2], &part->shape[2]))
		return mkc_node_error(g, n, "the query rows of its parts overflow");
	part->shape[3] = mkc_dim_const(q->shape[3].c + 2);
	part->kind = MKC_TK_INTERMEDIATE;
	const mkc_attr *sa = mkc_node_attr(n, "scale");
	mkc_node *p = mkc_graph_add_node(g, mkc_arena_printf(a, "%s/part", n->name), "mkc.internal",
					 "AttnPart", 3, 1, sa ? 2 : 1);
	for (int i = 0; i < 3; i++)
		p->in[i] = n->in[i];
	p->out[0] = part;
	part->producer = p;
	p->attr[0] = (mkc_attr){.name = "chunks", .type = MKC_AT_INT, .i = chunks};
	if (sa)
		p->attr[1] = *sa;
	mkc_tensor **in = mkc_arena_alloc(a, sizeof *in * 2);
	in[0] = part;
	n->in = in;
	n->nin = 1;
	n->nout = 1;
	n->attr = mkc_arena_alloc(a, sizeof *n->attr * 2);
	n->attr[0] = (mkc_attr){.name = "chunks", .type = MKC_AT_INT, .i = chunks};
	n->nattr = 1;
	n->op = MKC_OP_ATTN_MERGE;
	n->op_type = "AttnMerge";
	n->domain = "mkc.internal";
	return 0;
}

int
mkc_pass_split_attn(mkc_graph *g)
{
	int nn = g->nodes.n, done = 0;
	for (int i = 0; i < nn; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (splittable(g, n)) {
			if (split(g, n) != 0)
				return -1;
			done++;
		}
	}
	if (!done)
		return 0;
	mkc_progress(g->ctx, "split_attn: %d attention nodes over chunks of positions", done);
	if (mkc_graph_sort(g) != 0)
		return -1;
	mkc_graph_count_uses(g);
	return 0;
}
