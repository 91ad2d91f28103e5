/*
 * tile.c - nodes into tasks.
 *
 * requires: infer and dce (shapes known, no dead nodes), nodes in
 *           topological order, lower (n->kern of every node: the kind and
 *           the resolved attributes it is cut by; no ONNX attribute or
 *           opset is read here).
 * provides: a plan whose tasks are tiles of the nodes, in node order, each
 *           with the box of the output it computes and the regions it reads
 *           and writes.
 *
 * A node is cut along one axis of its output into tiles of whole slices.
 * Which axis, and how the output box maps back to the boxes each input is
 * read in, depends on the op:
 *   - elementwise ops (with broadcasting): the outermost constant axis of
 *     size > 1; an input is read in the output box aligned from the right,
 *     with its broadcast axes (size 1) read whole;
 *   - MatMul or Gemm by a weight matrix (NormGemm, NormGlu, Glu): the
 *     output columns, matmul_tile_cols at a time (NormGlu's and Glu's
 *     tiles half as many, reading those rows of both their weights), so
 *     each tile streams its
 *     own slice; the
 *     products that read the same activations share the workers by their
 *     columns (a tile a worker while a tile keeps matmul_min_cols
 *     columns); more tiles than workers are rounded up to a multiple of
 *     them; batched MatMul: the outermost batch axis;
 *   - Softmax, the norms and Gather: the axes they do not reduce over;
 *   - Attention with one output and 4-D inputs: the query heads, one or
 *     more a tile, each tile reading the key and value heads its query
 *     heads share (head / (query heads / key heads)), whole otherwise;
 *   - Reshape and its kin (those that views.c does not make views, such
 *     as the copy of the logits into a graph output), Transpose and a 4-D
 *     RotaryEmbedding: like elementwise ops, each tile reading its inputs
 *     whole, but a Transpose's input in the output box permuted back, and
 *     a rotary's x in the output box and its cos and sin (without
 *     position_ids) in the box's positions;
 *   - AttnPart (passes/split_attn.c): a tile a (key head, chunk) row of
 *     its output; AttnMerge: by query heads, reading their key heads' rows;
 *   - HeadProj (passes/fuse_qkv.c): as a product's columns, but each tile
 *     within one head and holding both rows of every pair it rotates
 *     (tile_head_proj);
 *   - anything else, and any node with several outputs: one tile that reads
 *     every input whole (a CacheAppend writes only the new positions).
 * Tiles split no other symbolic axis than a step's tokens (the chunk
 * symbol S, mkc --max-chunk): ops that compute rows apart (elementwise ops,
 * Gemm, 2-D MatMul, the norms, copies, an embedding's Gather) are also cut
 * there into blocks of
 * rows up to the compiled maximum of S, at least chunk_rows a block and at
 * most 16 blocks; a block's box is constant ([r * B, (r + 1) * B)) and may
 * pass S at run time: the task is marked clamp, and the runtime cuts its
 * box to the output's extent (a block past S computes nothing). A block of
 * an elementwise op, a norm, a softmax or a Gather is cut into runs of
 * whole rows instead of as the whole would be (a Gather cut by columns, as
 * a decode step's is, gave each tile every token: its body checks a tile's
 * indices one after another, and the 1B shape's 1024-token chunk began
 * with 374 us of that on every worker, H100, session 27). Elsewhere
 * bounds stay constants and cover the whole run-time length.
 */
#include "passes.h"
#include "task.h"
#include "kernel.h"

#include <string.h>

typedef enum {
	MAP_WHOLE, MAP_ELEMENTWISE, MAP_MATMUL, MAP_GEMM, MAP_ROWS, MAP_GATHER, MAP_HEADS,
	MAP_PARTS, MAP_MERGE, MAP_COPY, MAP_HEAD_PROJ
} mapping;

/* Query heads over key heads, if Attention can be cut by heads; else 0. */
static int64_t
attention_group(const mkc_node *n)
{
	const mkc_tensor *q = n->in[0], *k = n->nin > 1 ? n->in[1] : NULL;
	if (!k || q->rank != 4 || k->rank != 4 || !mkc_dim_is_const(q->shape[1]) ||
	    !mkc_dim_is_const(k->shape[1]) || k->shape[1].c < 1 || q->shape[1].c % k->shape[1].c)
		return 0;
	return q->shape[1].c / k->shape[1].c;
}

/* By the node's kernel kind, then within a kind by the op. */
static mapping
mapping_of(const mkc_node *n)
{
	const mkc_kernel *k = n->kern;
	MKC_ASSERT(k);
	if (n->nout != 1)
		return MAP_WHOLE;
	switch (k->kind) {
	case MKC_KERN_ELEMENTWISE:
		/* CastLike's type and Expand's shape are no operand to cut: one tile */
		return k->operands < n->nin ? MAP_WHOLE : MAP_ELEMENTWISE;
	case MKC_KERN_COPY:
	case MKC_KERN_TRANSPOSE:   /* its body walks the output box through the permutation */
		return MAP_COPY;
	case MKC_KERN_MATMUL:
		if (n->op == MKC_OP_MATMUL)
			return n->in[0]->rank >= 2 && n->in[1]->rank >= 2 ? MAP_MATMUL : MAP_WHOLE;
		if (n->op == MKC_OP_GEMM)
			return n->in[1]->kind == MKC_TK_WEIGHT ? MAP_GEMM : MAP_WHOLE;
		return MAP_GEMM;   /* NormGemm, NormGlu, Glu: made only for products by weights */
	case MKC_KERN_HEAD_PROJ:
		return MAP_HEAD_PROJ;
	case MKC_KERN_ROTARY:   /* a 4-D x by heads and positions; a 3-D one whole */
		return n->in[0]->rank == 4 ? MAP_COPY : MAP_WHOLE;
	case MKC_KERN_ROWS:
		/* the rule was never extended to these two: one tile */
		return n->op == MKC_OP_LAYER_NORM || n->op == MKC_OP_MS_SKIP_SIMPLIFIED_LN
			       ? MAP_WHOLE : MAP_ROWS;
	case MKC_KERN_GATHER:
		return k->axis == 0 && n->in[0]->rank == 2 ? MAP_GATHER : MAP_WHOLE;
	case MKC_KERN_ATTENTION:
		if (n->op == MKC_OP_ATTENTION)
			return attention_group(n) ? MAP_HEADS : MAP_WHOLE;
		return n->op == MKC_OP_ATTN_PART    ? MAP_PARTS
		       : n->op == MKC_OP_ATTN_MERGE ? MAP_MERGE : MAP_WHOLE;
	default:
		return MAP_WHOLE;
	}
}

/* A product whose output column takes a row of two weights (NormGlu, Glu). */
static bool
two_weights(const mkc_node *n)
{
	return n->op == MKC_OP_NORM_GLU || n->op == MKC_OP_GLU;
}

/* A product tile's output columns: matmul_tile_cols weight rows, of one weight or two. */
static int64_t
tile_cols(const mkc_plan *p, const mkc_node *n)
{
	return p->tp.matmul_tile_cols / (two_weights(n) ? 2 : 1);
}

/* A product cut by its output columns, each tile streaming its slice of a weight. */
static bool
by_columns(const mkc_node *n, mapping m)
{
	return m == MAP_GEMM ||
	       (m == MAP_MATMUL && n->in[1]->kind == MKC_TK_WEIGHT && n->in[1]->rank == 2);
}

/* A product by a weight kept whole, its output's columns (0: not one). */
static int64_t
weight_cols(const mkc_node *n)
{
	const mkc_tensor *y = n->out[0];
	if (n->dead || n->nout != 1 || y->rank < 1 || !mkc_dim_is_const(y->shape[y->rank - 1]))
		return 0;
	mapping m = mapping_of(n);
	if (m == MAP_HEAD_PROJ)   /* its rows are heads times head size */
		return n->in[2]->shape[0].c;
	return by_columns(n, m) ? y->shape[y->rank - 1].c : 0;
}

/* The columns of every product by a weight that reads n's activations (n's included). */
static int64_t
sibling_cols(const mkc_graph *g, const mkc_node *n)
{
	int64_t sum = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *m = MKC_NODE(g, i);
		if (m->nin > 0 && m->in[0] == n->in[0])
			sum += weight_cols(m);
	}
	return sum;
}

/* Tiles of a product by a weight with cols output columns (weight rows). */
static int64_t
product_tiles(const mkc_plan *p, const mkc_node *n, int64_t cols)
{
	int64_t tc = tile_cols(p, n), t = (cols + tc - 1) / tc, w = p->tp.nworkers;
	/* a weight too small for a tile a worker at matmul_tile_cols is
	 * still spread over the workers (down to matmul_min_cols a tile):
	 * the products that read the same activations (a layer's q, k
	 * and v) are all a decode step streams at that moment, and a
	 * worker left out is bandwidth left unused. They share the
	 * workers by their columns, so each worker gets one tile of them. */
	int64_t group = sibling_cols(p->g, n);
	int64_t spread = p->tp.matmul_min_cols > 0 ? cols / p->tp.matmul_min_cols : 0;
	int64_t share = group > 0 ? (w * cols + group / 2) / group : w;
	if (spread > share)
		spread = share;
	if (t < spread)
		t = spread;
	/* more tiles than workers: a whole number of them a worker, so
	 * that no worker is left with one more tile at the end */
	if (t > w && t % w && (t + w - 1) / w * w <= cols)
		t = (t + w - 1) / w * w;
	return t < 1 ? 1 : t;
}

/* Picks the split axis and tile count; axis -1 means one tile. */
static void
choose_split(const mkc_plan *p, const mkc_node *n, mapping m, int *axis, int *ntiles)
{
	const mkc_tensor *y = n->out[0];
	*axis = -1;
	*ntiles = 1;
	int limit = y->rank;
	if (m == MAP_WHOLE || y->rank == 0)
		return;
	if (m == MAP_ROWS)   /* Softmax, RMSNormalization: rows stay whole */
		limit = n->kern->axis;
	if (by_columns(n, m)) {
		if (!mkc_dim_is_const(y->shape[y->rank - 1]))
			return;
		*axis = y->rank - 1;
		*ntiles = (int)product_tiles(p, n, y->shape[y->rank - 1].c);
		return;
	}
	if (m == MAP_PARTS) {
		/* a tile a (key head, chunk) pair: split_attn made about one a worker */
		*axis = 1;
		*ntiles = (int)y->shape[1].c;
		return;
	}
	if (m == MAP_MERGE) {
		int64_t h = y->shape[1].c, want = h < p->tp.nworkers ? h : p->tp.nworkers;
		if (want >= 2) {
			*axis = 1;
			*ntiles = (int)want;
		}
		return;
	}
	if (m == MAP_HEADS) {
		/* a tile a head while there are workers for them: heads are few
		 * and each walks the whole cache */
		int64_t h = y->shape[1].c, want = h < p->tp.nworkers ? h : p->tp.nworkers;
		if (want >= 2) {
			*axis = 1;
			*ntiles = (int)want;
		}
		return;
	}
	if (m == MAP_MATMUL)
		limit = y->rank - 2;   /* batched: split a batch axis */
	if (m == MAP_GATHER)
		limit = y->rank;       /* any axis, the embedding row included */
	int64_t numel = mkc_tensor_numel(y);
	for (int a = 0; a < limit; a++) {
		if (!mkc_dim_is_const(y->shape[a]) || y->shape[a].c < 2)
			continue;
		int64_t want = p->tp.nworkers;
		if (numel > 0) {
			int64_t by_size = numel / p->tp.min_tile_elems;
			want = by_size < want ? by_size : want;
		}
		if (want > y->shape[a].c)
			want = y->shape[a].c;
		if (want >= 2) {
			*axis = a;
			*ntiles = (int)want;
		}
		return;
	}
}

/* Output box of tile i of k along axis. */
static mkc_box
tile_box(const mkc_tensor *y, int axis, int i, int k)
{
	mkc_box b = mkc_box_full(y);
	if (axis >= 0) {
		int64_t d = y->shape[axis].c;
		b.lo[axis] = mkc_dim_const(d * i / k);
		b.hi[axis] = mkc_dim_const(d * (i + 1) / k);
	}
	return b;
}

/* An input broadcast into the output: right-aligned, size-1 axes whole. */
static mkc_box
broadcast_box(const mkc_tensor *x, const mkc_tensor *y, const mkc_box *ob)
{
	mkc_box b = mkc_box_full(x);
	for (int i = 0; i < x->rank; i++) {
		int j = i + y->rank - x->rank;
		if (j >= 0 && !mkc_dim_eq(x->shape[i], mkc_dim_const(1))) {
			b.lo[i] = ob->lo[j];
			b.hi[i] = ob->hi[j];
		}
	}
	return b;
}

static void
matmul_reads(mkc_plan *p, mkc_task *t, const mkc_box *ob)
{
	mkc_node *n = t->node;
	const mkc_tensor *y = n->out[0];
	for (int k = 0; k < 2; k++) {
		mkc_tensor *x = n->in[k];
		mkc_box b = mkc_box_full(x);
		/* batch axes map like broadcasting; of the last two, A keeps the
		 * output rows and B the output columns */
		for (int i = 0; i < x->rank - 2; i++) {
			int j = i + y->rank - x->rank;
			if (j >= 0 && !mkc_dim_eq(x->shape[i], mkc_dim_const(1))) {
				b.lo[i] = ob->lo[j];
				b.hi[i] = ob->hi[j];
			}
		}
		/* a weight read transposed (canon's mkc_trans_b) keeps its rows */
		bool tb = k == 1 && n->kern->trans_b;
		int keep = k == 0 || tb ? x->rank - 2 : x->rank - 1;
		int from = k == 0 ? y->rank - 2 : y->rank - 1;
		b.lo[keep] = ob->lo[from];
		b.hi[keep] = ob->hi[from];
		mkc_task_add_region(p, t, false, x, &b);
	}
}

/*
 * Gemm: A by output rows, B by output columns (its rows when transB), C
 * broadcast. NormGemm (x, scale, W, C) reads the scale whole and its rows
 * x as Gemm reads A (each whole: a row is normalised by all of it), then
 * W and C as Gemm reads B and C; NormGlu (x, scale, Wg, Wu) reads Wu as
 * it reads Wg, and so does Glu (x, Wg, Wu), x as Gemm's A.
 */
static void
gemm_reads(mkc_plan *p, mkc_task *t, const mkc_box *ob)
{
	mkc_node *n = t->node;
	bool ta = n->kern->trans_a, tb = n->kern->trans_b;
	int w = 1;
	if (mkc_kernel_norm_product(n)) {
		mkc_box s = mkc_box_full(n->in[1]);
		mkc_task_add_region(p, t, false, n->in[1], &s);
		w = 2;
	}
	mkc_box a = mkc_box_full(n->in[0]), b = mkc_box_full(n->in[w]);
	a.lo[ta] = ob->lo[0];
	a.hi[ta] = ob->hi[0];
	b.lo[!tb] = ob->lo[1];
	b.hi[!tb] = ob->hi[1];
	mkc_task_add_region(p, t, false, n->in[0], &a);
	mkc_task_add_region(p, t, false, n->in[w], &b);
	if (two_weights(n)) {   /* the up weight, read as the gate's */
		mkc_task_add_region(p, t, false, n->in[w + 1], &b);
		return;
	}
	if (n->nin > w + 1 && n->in[w + 1]) {
		mkc_box c = broadcast_box(n->in[w + 1], n->out[0], ob);
		mkc_task_add_region(p, t, false, n->in[w + 1], &c);
	}
}

/*
 * Attention by query heads lo..hi: the query in those heads; keys and values
 * (in[1], in[2], and the past ones in[4], in[5]) in the key heads they
 * share; a mask with a head axis in those heads; the rest whole.
 */
static void
attention_reads(mkc_plan *p, mkc_task *t, const mkc_box *ob)
{
	mkc_node *n = t->node;
	const int64_t g = attention_group(n), lo = ob->lo[1].c, hi = ob->hi[1].c;
	for (int k = 0; k < n->nin; k++) {
		mkc_tensor *x = n->in[k];
		if (!x)
			continue;
		mkc_box b = mkc_box_full(x);
		if (x->rank == 4 && (k == 0 || (k == 3 && mkc_dim_eq(x->shape[1], n->in[0]->shape[1])))) {
			b.lo[1] = ob->lo[1];
			b.hi[1] = ob->hi[1];
		} else if (x->rank == 4 && k != 3) {
			b.lo[1] = mkc_dim_const(lo / g);
			b.hi[1] = mkc_dim_const((hi + g - 1) / g);
		}
		mkc_task_add_region(p, t, false, x, &b);
	}
}

/*
 * AttnPart by rows i0..i1 of part (key head i / C, chunk i % C): the query
 * heads of those key heads, and those key heads' keys and values at every
 * position. AttnMerge by query heads h0..h1: the rows of part of their key
 * heads, every chunk.
 */
static void
split_attn_reads(mkc_plan *p, mkc_task *t, mapping m, const mkc_box *ob)
{
	mkc_node *n = t->node;
	const int64_t c = n->kern->chunks;
	if (m == MAP_PARTS) {
		const mkc_tensor *q = n->in[0], *k = n->in[1];
		const int64_t grp = q->shape[1].c / k->shape[1].c;
		const int64_t kh0 = ob->lo[1].c / c, kh1 = (ob->hi[1].c - 1) / c + 1;
		for (int i = 0; i < 3; i++) {
			mkc_box b = mkc_box_full(n->in[i]);
			b.lo[1] = mkc_dim_const(i ? kh0 : kh0 * grp);
			b.hi[1] = mkc_dim_const(i ? kh1 : kh1 * grp);
			mkc_task_add_region(p, t, false, n->in[i], &b);
		}
		return;
	}
	const mkc_tensor *part = n->in[0], *y = n->out[0];
	const int64_t grp = y->shape[1].c / (part->shape[1].c / c);
	mkc_box b = mkc_box_full(part);
	b.lo[1] = mkc_dim_const(ob->lo[1].c / grp * c);
	b.hi[1] = mkc_dim_const(((ob->hi[1].c - 1) / grp + 1) * c);
	mkc_task_add_region(p, t, false, n->in[0], &b);
}

static void
add_reads(mkc_plan *p, mkc_task *t, mapping m, const mkc_box *ob)
{
	if (m == MAP_PARTS || m == MAP_MERGE) {
		split_attn_reads(p, t, m, ob);
		return;
	}
	mkc_node *n = t->node;
	const mkc_tensor *y = n->out[0];
	if (m == MAP_MATMUL) {
		matmul_reads(p, t, ob);
		return;
	}
	if (m == MAP_GEMM) {
		gemm_reads(p, t, ob);
		return;
	}
	if (m == MAP_HEADS) {
		attention_reads(p, t, ob);
		return;
	}
	for (int k = 0; k < n->nin; k++) {
		mkc_tensor *x = n->in[k];
		if (!x)
			continue;
		mkc_box b = mkc_box_full(x);
		if (m == MAP_ELEMENTWISE || (m == MAP_ROWS && k == 0))
			b = broadcast_box(x, y, ob);
		else if (m == MAP_COPY && k == 0 && n->kern->kind == MKC_KERN_TRANSPOSE)
			for (int d = 0; d < y->rank; d++) {   /* output axis d is input axis perm[d] */
				b.lo[n->kern->perm[d]] = ob->lo[d];
				b.hi[n->kern->perm[d]] = ob->hi[d];
			}
		else if (m == MAP_COPY && n->kern->kind == MKC_KERN_ROTARY && k == 0)
			b = *ob;   /* x is shaped as y */
		else if (m == MAP_COPY && n->kern->kind == MKC_KERN_ROTARY && x->rank == 3 &&
			 mkc_dim_eq(x->shape[1], y->shape[2])) {
			b.lo[1] = ob->lo[2];   /* cos and sin [B, S, R/2]: the tile's positions */
			b.hi[1] = ob->hi[2];
		}
		else if (m == MAP_GATHER && k == 0) {
			/* embedding rows are picked at run time: all rows, our columns */
			b.lo[1] = ob->lo[y->rank - 1];
			b.hi[1] = ob->hi[y->rank - 1];
		}
		mkc_task_add_region(p, t, false, x, &b);
	}
}

static int64_t
box_bytes(const mkc_tensor *t, const mkc_box *b)
{
	int64_t n = (int64_t)mkc_dtype_size(t->dtype);
	for (int i = 0; i < t->rank; i++) {
		mkc_dim d;
		if (!mkc_dim_sub(b->hi[i], b->lo[i], &d))
			return n;
		n *= mkc_dim_is_const(d) ? d.c : 1;   /* a symbolic length counts once */
	}
	return n;
}

static void
add_cost(mkc_task *t)
{
	for (int j = 0; j < t->nreads; j++)
		t->cost += box_bytes(t->reads[j].t, &t->reads[j].box);
	for (int j = 0; j < t->nwrites; j++)
		t->cost += box_bytes(t->writes[j].t, &t->writes[j].box);
}

/*
 * HeadProj (passes/fuse_qkv.c) into y [1, H, 1, D] or a cache [1, H,
 * positions, D] (at the new one): as many tiles as a product of its rows
 * would have, rounded down to a whole number a head; a tile a slice of one
 * head's units, a unit a row, or a pair of rows when it rotates them:
 * (d, d + D/2), or (2d, 2d + 1) when interleaved. Its output box holds
 * the first rows of its pairs (d0 .. d1 along D), and a tile with halves
 * writes and reads the rows D/2 on as a second region.
 */
static void
tile_head_proj(mkc_plan *p, mkc_node *n)
{
	mkc_tensor *y = n->out[0], *w = n->in[2];
	const int64_t h = y->shape[1].c, d = y->shape[3].c;
	const bool rot = n->kern->rotary, halves = rot && !n->kern->interleaved;
	const int64_t units = rot ? d / 2 : d;
	/* rounded down: rounded to nearest, the Llama-3.2-1B shape's q/k/v had 144
	 * tiles for 132 workers, and the step was 50 to 95 us slower on an
	 * H200 (bench/RESULTS.md, session 13) */
	int64_t per = product_tiles(p, n, h * d) / h;
	per = per < 1 ? 1 : per > units ? units : per;
	for (int64_t i = 0; i < h * per; i++) {
		mkc_task *t = mkc_plan_add_task(p, n, (int)i, (int)(h * per));
		const int64_t hd = i / per, j = i % per;
		int64_t d0 = units * j / per, d1 = units * (j + 1) / per;
		if (rot && !halves) {
			d0 *= 2;
			d1 *= 2;
		}
		mkc_box b = mkc_box_full(y);
		b.lo[1] = mkc_dim_const(hd);
		b.hi[1] = mkc_dim_const(hd + 1);
		if (y->kind == MKC_TK_STATE) {   /* the new position only */
			bool ok = mkc_dim_sub(y->shape[2], mkc_dim_const(1), &b.lo[2]);
			MKC_ASSERT(ok);
		}
		b.lo[3] = mkc_dim_const(d0);
		b.hi[3] = mkc_dim_const(d1);
		t->out = b;
		for (int k = 0; k < n->nin; k++)
			if (k != 2) {
				mkc_box all = mkc_box_full(n->in[k]);
				mkc_task_add_region(p, t, false, n->in[k], &all);
			}
		for (int half = 0; half < (halves ? 2 : 1); half++) {
			const int64_t off = half * d / 2;
			mkc_box r = mkc_box_full(w), o = b;
			r.lo[0] = mkc_dim_const(hd * d + d0 + off);
			r.hi[0] = mkc_dim_const(hd * d + d1 + off);
			o.lo[3] = mkc_dim_const(d0 + off);
			o.hi[3] = mkc_dim_const(d1 + off);
			mkc_task_add_region(p, t, false, w, &r);
			mkc_task_add_region(p, t, true, y, &o);
		}
		add_cost(t);
	}
}

/*
 * The axis of n's output that is a step's tokens (the chunk symbol alone)
 * and that tiles of mapping m may cut into blocks of rows, or -1.
 */
static int
chunk_axis(const mkc_plan *p, const mkc_node *n, mapping m, int axis)
{
	const mkc_graph *g = p->g;
	const mkc_tensor *y = n->out[0];
	bool rows_apart = m == MAP_ELEMENTWISE || m == MAP_ROWS || m == MAP_COPY ||
			  (m == MAP_GEMM && (n->op == MKC_OP_GEMM || n->op == MKC_OP_GLU ||
					     mkc_kernel_norm_product(n))) ||
			  (m == MAP_MATMUL && y->rank == 2) ||
			  ((m == MAP_HEADS || m == MAP_MERGE) && y->rank == 4) || m == MAP_GATHER;
	if (g->chunk_sym < 0 || !y || !rows_apart)
		return -1;
	int limit = m == MAP_ROWS ? n->kern->axis : m == MAP_ELEMENTWISE || m == MAP_COPY ? y->rank
										    : y->rank - 1;
	if (m == MAP_HEADS || m == MAP_MERGE)
		limit = 3;   /* the query positions, axis 2 */
	for (int a = 0; a < limit; a++)
		if (a != axis && mkc_dim_eq(y->shape[a], mkc_dim_sym(g->chunk_sym)))
			return a;
	return -1;
}

/* The rows of a block of a step's tokens, and the blocks, for the chunk's maximum. */
static int64_t
chunk_blocks(const mkc_plan *p, int64_t *rows)
{
	int64_t most = mkc_graph_sym_max(p->g, p->g->chunk_sym, p->tp.max_dim ? p->tp.max_dim : 4096);
	*rows = p->tp.chunk_rows > 0 ? p->tp.chunk_rows : 128;
	if (*rows < (most + 15) / 16)
		*rows = (most + 15) / 16;
	return (most + *rows - 1) / *rows;
}

/*
 * Tiles across a block of rows of a step's tokens. A product's columns go
 * matmul_tile_cols at a time (a tensor-core tile's width on a GPU); with
 * the decode step's narrower cut, the 1B shape's plan for 1024 tokens had
 * 77,000 tasks and 29 million edges, and mkc took 144 s. Attention keeps
 * the decode cut, a head a tile: 8 heads a tile made the 1B shape's
 * prompts 2.2x (1024 tokens) to 2.9x (4000) slower on an H200
 * (tests/gpu/RESULTS.md, session 16). Anything else is cut along axis into
 * tiles of about CHUNK_TILE_ELEMS elements (the decode cut, a tile a
 * worker, made 105,000 tasks and mkc 150 s). k is the decode cut's count,
 * which a few-token plan's products keep (tp.few_products: its one block
 * of at most MKC_FEW_ROWS rows streams each weight once, as a decode step
 * does).
 */
enum { CHUNK_TILE_ELEMS = 64 * 1024 };

/*
 * Whether a few-token plan's product whose decode cut is k tiles is cut as
 * a chunk's instead (matmul_tile_cols a tile, the chunk's tensor-core tile
 * on a GPU: mkc_task's chunk_cut): a cut of several tiles a worker, the
 * output layer's. The few-token tile re-reads the step's tokens for every
 * 32 weight rows, where the chunk's tile stages them once for 128: the
 * 1B shape's head (128256 rows, 8 tiles a worker) took 229 / 301 / 435 us
 * at 8 / 32 / 64 tokens by the few-token tile against 214 / 219 / 235 by
 * the chunk's (H100, tests/gpu/mma.cu, session 32); the products of a
 * layer, a tile or two a worker, are faster by the few-token tile.
 */
static bool
few_chunk_cut(const mkc_plan *p, const mkc_node *n, mapping m, int64_t k)
{
	return by_columns(n, m) && p->tp.few_products && k > 2 * (int64_t)p->tp.nworkers;
}

static int
chunk_tiles(const mkc_plan *p, const mkc_node *n, mapping m, int axis, int64_t rows, int k,
	    bool chunk_cut)
{
	const mkc_tensor *y = n->out[0];
	if (axis < 0 || m == MAP_HEADS || m == MAP_MERGE)
		return k;
	int64_t len = y->shape[axis].c, elems = rows;
	if (by_columns(n, m) && p->tp.few_products && !chunk_cut)
		return k;   /* a step of few tokens streams its weights as a decode step does */
	if (by_columns(n, m)) {
		int64_t tc = tile_cols(p, n), t = (len + tc - 1) / tc;
		return (int)(t < 1 ? 1 : t);
	}
	for (int d = 0; d < y->rank; d++)
		if (mkc_dim_is_const(y->shape[d]))
			elems *= y->shape[d].c;
	int64_t t = elems / CHUNK_TILE_ELEMS;
	if (m == MAP_COPY) {
		/* a copy's tiles (the head transposes, the rotary) move a few GB/s a
		 * worker: a block's 64K-element tiles kept 32 of 132 workers busy,
		 * 80 us a tile on the 1B shape's critical path (H200, session 20) */
		int64_t r, nblocks = chunk_blocks(p, &r), spread = (p->tp.nworkers + nblocks - 1) / nblocks;
		t = t > spread ? t : spread;
	}
	return (int)(t < 1 ? 1 : t > len ? len : t);
}

/*
 * How many tiles a block of rows of a norm or softmax is cut into, each
 * whole rows of about CHUNK_ROWS_ELEMS elements (a block of 128 rows of the
 * 1B shape's 2048 was one tile, 8 busy workers a norm, 240 us a block on
 * an H200).
 */
enum { CHUNK_ROWS_ELEMS = 16 * 1024 };

static int
rows_tiles(const mkc_node *n, int64_t rows)
{
	const mkc_tensor *y = n->out[0];
	int64_t elems = rows;
	for (int d = 0; d < y->rank; d++)
		if (mkc_dim_is_const(y->shape[d]))
			elems *= y->shape[d].c;
	int64_t t = elems / CHUNK_ROWS_ELEMS;
	return (int)(t < 1 ? 1 : t > rows ? rows : t);
}

/*
 * A CacheAppend of a step's tokens into a cache [B, H, positions, D]: a
 * tile a head by blocks of the step's rows, each writing its head's
 * positions past_len + r * rows .. past_len + (r + 1) * rows, cut to the
 * output's extent at run time (one tile for all, on one worker, was 0.5 ms
 * of a 1024-token chunk, 32 times over). Each reads its inputs whole, as
 * the one tile did. False: not such a node (one tile, as in a decode step).
 */
enum { FEW_APPEND_ELEMS = 512 };

static bool
tile_cache_append(mkc_plan *p, mkc_node *n)
{
	const mkc_graph *g = p->g;
	const mkc_tensor *y = n->out[0], *x = n->in[0];
	mkc_dim past;
	if (g->chunk_sym < 0 || n->nout != 1 || y->rank != 4 || y->cap_axis != 2 || x->rank != 4 ||
	    !mkc_dim_eq(x->shape[2], mkc_dim_sym(g->chunk_sym)) || !mkc_dim_is_const(y->shape[1]) ||
	    !mkc_dim_sub(y->shape[2], x->shape[2], &past))
		return false;
	int64_t rows, nblocks = chunk_blocks(p, &rows), heads = y->shape[1].c;
	/* a few-token plan's one block in pieces of about FEW_APPEND_ELEMS a
	 * head: a head's 64 rows a tile (8 tiles of a 64-token step) took 11.6
	 * us a tile on the critical path of every layer (H100, session 41) */
	if (p->tp.few_products && mkc_dim_is_const(y->shape[3])) {
		int64_t most = FEW_APPEND_ELEMS / y->shape[3].c;
		while (rows > most && rows % 2 == 0) {
			rows /= 2;
			nblocks *= 2;
		}
	}
	for (int64_t i = 0; i < heads * nblocks; i++) {
		mkc_task *t = mkc_plan_add_task(p, n, (int)i, (int)(heads * nblocks));
		t->out = mkc_box_full(y);
		t->out.lo[1] = mkc_dim_const(i % heads);
		t->out.hi[1] = mkc_dim_const(i % heads + 1);
		bool ok = mkc_dim_add(past, mkc_dim_const(i / heads * rows), &t->out.lo[2]) &&
			  mkc_dim_add(past, mkc_dim_const((i / heads + 1) * rows), &t->out.hi[2]);
		MKC_ASSERT(ok);
		t->clamp = true;
		add_reads(p, t, MAP_WHOLE, &t->out);
		mkc_task_add_region(p, t, true, n->out[0], &t->out);
		add_cost(t);
	}
	return true;
}

static void
tile_node(mkc_plan *p, mkc_node *n)
{
	mapping m = mapping_of(n);
	int axis, k;
	if (m == MAP_HEAD_PROJ) {
		tile_head_proj(p, n);
		return;
	}
	if (n->kern->kind == MKC_KERN_CACHE_APPEND && tile_cache_append(p, n))
		return;
	choose_split(p, n, m, &axis, &k);
	/* blocks of a step's tokens, each cut as the whole would be; an
	 * elementwise op's block into whole rows instead (runs of memory, which
	 * its body walks flat: a block's columns cut took 250 us a tile) */
	int raxis = chunk_axis(p, n, m, axis);
	int64_t rows = 0, nblocks = 1, sub = 0;
	int kw = 0;   /* the tiles of each block past the first (0: k) */
	bool chunk_cut = false;
	if (raxis >= 0) {
		nblocks = chunk_blocks(p, &rows);
		chunk_cut = few_chunk_cut(p, n, m, k);
		k = chunk_tiles(p, n, m, axis, rows, k, chunk_cut);
		/* an AttnMerge's blocks in pieces of rows while there are workers
		 * for them, all its heads' tiles a piece: a few-token plan's one
		 * block of 64 rows by the 1B shape's 32 heads kept 32 of 132
		 * workers busy, 32 us a layer of a step of 64 sequences (H100,
		 * session 32) */
		if (m == MAP_MERGE) {
			int64_t pieces = p->tp.nworkers / (k * nblocks);
			while (pieces > 1 && rows % pieces)
				pieces--;
			if (pieces > 1) {
				rows /= pieces;
				nblocks *= pieces;
			}
		}
		/* a Glu's blocks past the first in tiles twice as wide (a TMA
		 * tile of 256 weight rows re-reads a third less from L2); the
		 * first, all a short prompt runs, keeps more tiles than workers
		 * would get of the wide ones */
		if (p->tp.wide_glu && two_weights(n) && by_columns(n, m) && nblocks > 1)
			kw = (k + 1) / 2;
		/* a few-token plan's norms and embedding rows a row a tile: 2 tiles
		 * of 8 rows each walking its rows one after another took 11-12 us
		 * a norm of a 16-token step on its critical path (H200, session 31) */
		if ((m == MAP_ROWS && axis < 0) || m == MAP_GATHER)
			k = p->tp.few_products ? (int)rows : rows_tiles(n, rows);
		if ((m == MAP_ELEMENTWISE || m == MAP_ROWS || m == MAP_GATHER) && k > 1) {
			while (rows % k)
				k--;
			sub = rows / k;
		}
	}
	int total = kw ? k + (int)(nblocks - 1) * kw : k * (int)nblocks;
	for (int i = 0; i < total; i++) {
		/* tile c of kb in block blk */
		int blk = i / k, c = i % k, kb = k;
		if (kw && i >= k)
			blk = 1 + (i - k) / kw, c = (i - k) % kw, kb = kw;
		mkc_task *t = mkc_plan_add_task(p, n, i, total);
		t->chunk_cut = chunk_cut;
		if (n->out[0])
			t->out = sub ? mkc_box_full(n->out[0]) : tile_box(n->out[0], axis, c, kb);
		if (raxis >= 0) {
			int64_t at = blk * rows + (sub ? c * sub : 0);
			t->out.lo[raxis] = mkc_dim_const(at);
			t->out.hi[raxis] = mkc_dim_const(at + (sub ? sub : rows));
			t->clamp = true;
		}
		if (n->kern->kind == MKC_KERN_CACHE_APPEND) {
			/* it writes only the new positions, past_len .. past_len + n */
			const mkc_tensor *y = n->out[0];
			bool ok = mkc_dim_sub(y->shape[y->cap_axis], n->in[0]->shape[y->cap_axis],
					      &t->out.lo[y->cap_axis]);
			MKC_ASSERT(ok);
		}
		add_reads(p, t, m, &t->out);
		for (int j = 0; j < n->nout; j++) {
			if (!n->out[j])
				continue;
			mkc_box b = j == 0 ? t->out : mkc_box_full(n->out[j]);
			mkc_task_add_region(p, t, true, n->out[j], &b);
		}
		add_cost(t);
	}
}

int
mkc_pass_tile(mkc_plan *p)
{
	mkc_graph *g = p->g;
	for (int i = 0; i < g->nodes.n; i++)
		tile_node(p, MKC_NODE(g, i));
	mkc_progress(g->ctx, "tile: %d nodes into %d tasks", g->nodes.n, p->tasks.n);
	return 0;
}
