/*
 * layout.c - weights stored as their readers walk them: products by rows.
 *
 * requires: infer (shapes, dead folded nodes), gqa (its Split of packed
 *           QKV); runs before canon.
 * provides: for every 2-D float weight W [K, N] that the model file holds
 *           in external data (ONNX's exporters and onnxruntime-genai's
 *           builder keep MatMul weights so):
 *           - Gather(Transpose(W), ids) on axis 0 (a tied embedding that is
 *             the output layer's weight): the Transpose's output is W^T
 *             [N, K], a weight stored transposed (tensor xk, xn, xc0: the
 *             loader makes it from W's bytes), and the Transpose goes;
 *           - Split(MatMul(x, W)) on the last axis, the product read by the
 *             Split alone (packed QKV): a MatMul for each part, reading the
 *             rows of W^T that make it, with mkc_trans_b;
 *           - MatMul(x, W) with every reader of W a MatMul's weight:
 *             MatMul(x, W^T) with mkc_trans_b (W^T shared with the
 *             embedding's where both read W).
 *
 * Why. A product reads its weight by rows of K: a GPU tile streams each
 * output's row with 16-byte loads (backends/cuda/matvec.cuh), as a Hugging
 * Face folder's Linear weights [N, K] are kept. [K, N] is the other way
 * round, read by a slower body that splits K over the lanes. Transposing
 * once at load time costs nothing a step; the Transpose of a tied
 * embedding, which copied the whole table every step, goes with it.
 *
 * Values: the products sum the same terms; only where a body sums in
 * another order do results move, by float rounding. A weight bound with
 * NAME_bind takes the stored layout: the name it has in the emitted table
 * (W's name with _T, or _T_c0_c1 for rows c0 .. c1 - 1) says so.
 */
#include "passes.h"

#include <string.h>

/* W, a weight that may be stored transposed. */
static bool
transposable(const mkc_tensor *w)
{
	return w->kind == MKC_TK_WEIGHT && w->initializer && w->ext_file && !w->symval &&
	       !w->xk && w->rank == 2 && mkc_dim_is_const(w->shape[0]) &&
	       mkc_dim_is_const(w->shape[1]) &&
	       (w->dtype == MKC_DT_FLOAT || w->dtype == MKC_DT_BFLOAT16);
}

/* Rows c0 .. c0 + rows - 1 of W^T, the weight the loader makes (one for each such range). */
static mkc_tensor *
stored_t(mkc_graph *g, const mkc_tensor *w, int64_t c0, int64_t rows)
{
	mkc_arena *a = g->ctx->arena;
	int64_t k = w->shape[0].c, n = w->shape[1].c;
	const char *name = c0 == 0 && rows == n ? mkc_arena_printf(a, "%s_T", w->name)
			   : mkc_arena_printf(a, "%s_T_%lld_%lld", w->name, (long long)c0,
					      (long long)(c0 + rows));
	mkc_tensor *t = mkc_graph_find(g, name);
	if (t)
		return t;
	t = mkc_graph_tensor(g, name);
	t->kind = MKC_TK_WEIGHT;
	t->dtype = w->dtype;
	t->file_dtype = w->file_dtype;
	t->rank = 2;
	t->shape[0] = mkc_dim_const(rows);
	t->shape[1] = mkc_dim_const(k);
	t->initializer = true;
	t->ext_file = w->ext_file;
	t->ext_offset = w->ext_offset;
	t->nbytes = (size_t)(rows * k) * mkc_dtype_size(w->dtype);
	t->xk = k;
	t->xn = n;
	t->xc0 = c0;
	return t;
}

static bool
is_swap(const mkc_node *t)
{
	const mkc_attr *p = mkc_node_attr(t, "perm");
	return p && p->type == MKC_AT_INTS && p->n == 2 && p->ints[0] == 1 && p->ints[1] == 0;
}

/* n gathers rows of its input 0 (axis 0). */
static bool
row_gather(const mkc_node *n, int input)
{
	int64_t axis = mkc_node_attr_int(n, "axis", 0);
	return n->op == MKC_OP_GATHER && input == 0 && (axis == 0 || axis == -2);
}

/* n reads input 1 as a product's weight. */
static bool
product_weight(const mkc_node *n, int input)
{
	return n->op == MKC_OP_MATMUL && input == 1;
}

/* Transpose(W) read by Gathers of rows: its output is W^T as stored. */
static int
embedding(mkc_graph *g, mkc_node *n)
{
	mkc_tensor *w = n->in[0], *y = n->out[0];
	if (!transposable(w) || !is_swap(n) || y->kind == MKC_TK_OUTPUT || !y->nconsumers ||
	    !mkc_graph_readers_all(g, y, row_gather))
		return 0;
	mkc_tensor *t = stored_t(g, w, 0, w->shape[1].c);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *r = MKC_NODE(g, i);
		for (int k = 0; !r->dead && k < r->nin; k++)
			if (r->in[k] == y) {
				r->in[k] = t;
				t->nconsumers++;
			}
	}
	y->nconsumers = 0;
	mkc_node_count_reads(n, -1);
	n->dead = true;
	return 1;
}

/* n with attribute mkc_trans_b (its weight read by rows) and weight t. */
static void
by_rows(mkc_graph *g, mkc_node *n, mkc_tensor *t)
{
	mkc_node_add_attr(g, n, (mkc_attr){.name = "mkc_trans_b", .type = MKC_AT_INT, .i = 1});
	n->in[1]->nconsumers--;
	n->in[1] = t;
	t->nconsumers++;
}

/* MatMul(x, W), W transposable and read as a product's weight alone. */
static bool
product_by(const mkc_graph *g, const mkc_node *n)
{
	if (n->op != MKC_OP_MATMUL || n->dead || n->in[0]->rank < 2 || !transposable(n->in[1]) ||
	    mkc_node_attr(n, "mkc_trans_b"))
		return false;
	return mkc_graph_readers_all(g, n->in[1], product_weight);
}

/* The split sizes of Split s along its last axis, into part[] (its outputs'); false if not that. */
static bool
last_axis_parts(const mkc_node *s, int64_t *part)
{
	const mkc_tensor *x = s->in[0];
	int64_t axis = mkc_node_attr_int(s, "axis", 0);
	if (axis != -1 && axis != x->rank - 1)
		return false;
	for (int i = 0; i < s->nout; i++) {
		const mkc_tensor *y = s->out[i];
		if (!y || y->rank != x->rank || !mkc_dim_is_const(y->shape[x->rank - 1]))
			return false;
		part[i] = y->shape[x->rank - 1].c;
	}
	return true;
}

/* Split(MatMul(x, W)) on the last axis: a product for each part. */
static int
split_product(mkc_graph *g, mkc_node *s)
{
	mkc_node *n = s->in[0]->producer;
	int64_t part[16], c0 = 0;
	if (s->nout > 16 || !n || !product_by(g, n) || s->in[0]->nconsumers != 1 ||
	    s->in[0]->kind == MKC_TK_OUTPUT || !last_axis_parts(s, part))
		return 0;
	mkc_arena *a = g->ctx->arena;
	mkc_tensor *w = n->in[1];
	for (int i = 0; i < s->nout; i++) {
		mkc_node *p = mkc_graph_add_node(g, mkc_arena_printf(a, "%s_%d", n->name, i), "",
						 "MatMul", 2, 1, 0);
		p->in[0] = n->in[0];
		p->in[1] = w;
		p->out[0] = s->out[i];
		s->out[i]->producer = p;
		mkc_node_count_reads(p, 1);
		by_rows(g, p, stored_t(g, w, c0, part[i]));
		mkc_graph_move_before(g, p, s);
		c0 += part[i];
	}
	mkc_node_count_reads(s, -1);
	mkc_node_count_reads(n, -1);
	s->dead = n->dead = true;
	for (int i = 0; i < s->nout; i++)
		s->out[i] = NULL;
	return 1;
}

int
mkc_pass_layout(mkc_graph *g)
{
	int emb = 0, split = 0, rows = 0;
	mkc_graph_count_live_uses(g);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (!n->dead && n->op == MKC_OP_TRANSPOSE)
			emb += embedding(g, n);
	}
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (!n->dead && n->op == MKC_OP_SPLIT && n->in[0])
			split += split_product(g, n);
	}
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (product_by(g, n)) {
			by_rows(g, n, stored_t(g, n->in[1], 0, n->in[1]->shape[1].c));
			rows++;
		}
	}
	if (emb + split + rows)
		mkc_progress(g->ctx, "layout: weights stored transposed, read by rows: %d embeddings "
			     "(their Transpose gone), %d split products, %d other products", emb,
			     split, rows);
	return 0;
}
