/*
 * decompose.c - ops that mkc computes as graphs of the ops it has.
 *
 * requires: infer (dtypes, shapes and compile-time values), half (no
 *           float16 left to type a constant by).
 * provides: no Trilu: each is the Where below, writing its output tensor;
 *           no MatMul of a vector (below); every new tensor typed and
 *           shaped; nodes in topological order.
 *
 * Trilu(x, k) keeps element [.., i, j] of x where j - i >= k (upper = 1,
 * the default) or j - i <= k (upper = 0), and writes 0 elsewhere:
 *
 *   Where(Sub(Range(0, N, 1), Unsqueeze(Range(0, M, 1), [1])) >= k, x, 0)
 *
 * (<= for upper = 0) over x's last two axes [M, N], broadcast across the
 * axes before them. M, N and k may be symbolic (a causal mask over past_len
 * + S keys sized by the step's S, k = past_len + 1): integer Ranges and
 * comparisons take them, and the Where is an ordinary elementwise tile. A
 * Trilu whose inputs are all known folds as its nodes do.
 *
 * MatMul of a vector (numpy's matmul, as ONNX defines it): a [K] is the
 * row [1, K] and b [K] the column [K, 1], and the axis each added is
 * squeezed from the product:
 *
 *   Squeeze(MatMul(Unsqueeze(a, [0]), Unsqueeze(b, [1])), [-2, -1])
 *
 * (only the axes of the operands that were vectors), so that the products'
 * bodies, which take [.., M, K] by [.., K, N], need no third form.
 */
#include "passes.h"

#include <string.h>

/* A scalar int64 tensor holding d, named after at. */
static mkc_tensor *
int_scalar(mkc_graph *g, const mkc_node *at, const char *what, mkc_dim d)
{
	mkc_tensor *t = mkc_graph_ints(g, mkc_graph_fresh_name(g, at->name, what), 1, &d);
	t->rank = 0;
	return t;
}

/* A scalar 0 of type dt (a weight), named after at. */
static mkc_tensor *
zero_of(mkc_graph *g, const mkc_node *at, mkc_dtype dt)
{
	mkc_tensor *t = mkc_graph_tensor(g, mkc_graph_fresh_name(g, at->name, "zero"));
	t->kind = MKC_TK_WEIGHT;
	t->dtype = dt;
	t->rank = 0;
	t->nbytes = mkc_dtype_size(dt);
	void *zeros = mkc_arena_alloc(g->ctx->arena, t->nbytes);
	memset(zeros, 0, t->nbytes);
	t->data = zeros;
	return t;
}

/* x with an axis of 1 inserted at `axis` (a constant), named after at. */
static mkc_tensor *
unsqueeze(mkc_graph *g, mkc_node *at, const char *what, mkc_tensor *x, int64_t axis)
{
	mkc_dim d = mkc_dim_const(axis);
	mkc_tensor *in[2] = {x, mkc_graph_ints(g, mkc_graph_fresh_name(g, at->name, "axes"), 1, &d)};
	return mkc_infer_add(g, at, what, "Unsqueeze", 2, in, 0, NULL, NULL);
}

/*
 * n gone, its output written by a new node op_type(in) instead (the last
 * of those n is taken apart into); -1 on an error (reported).
 */
static int
write_output(mkc_graph *g, mkc_node *n, const char *what, const char *op_type, int nin,
	     mkc_tensor *const *in)
{
	mkc_tensor *y = n->out[0];
	mkc_node_count_reads(n, -1);
	n->dead = true;
	y->producer = NULL;
	return mkc_infer_add(g, n, what, op_type, nin, in, 0, NULL, y) ? 0 : -1;
}

/* Trilu n as the Where above; -1 on an error (reported). */
static int
trilu(mkc_graph *g, mkc_node *n)
{
	mkc_tensor *x = n->in[0];
	const int r = x->rank;
	bool upper = mkc_node_attr_int(n, "upper", 1) != 0;
	mkc_tensor *zero = int_scalar(g, n, "zero_int", mkc_dim_const(0)),
		   *one = int_scalar(g, n, "delta", mkc_dim_const(1));
	mkc_tensor *k = n->nin > 1 && n->in[1] ? n->in[1] : zero;   /* k's default is 0 */
	mkc_tensor *rin[3] = {zero, int_scalar(g, n, "rows_limit", x->shape[r - 2]), one};
	mkc_tensor *cin[3] = {zero, int_scalar(g, n, "cols_limit", x->shape[r - 1]), one};
	mkc_tensor *rows = mkc_infer_add(g, n, "rows", "Range", 3, rin, 0, NULL, NULL);
	mkc_tensor *cols = mkc_infer_add(g, n, "cols", "Range", 3, cin, 0, NULL, NULL);
	if (!rows || !cols)
		return -1;
	mkc_tensor *col = unsqueeze(g, n, "rows_column", rows, 1);
	if (!col)
		return -1;
	mkc_tensor *din[2] = {cols, col};
	mkc_tensor *diff = mkc_infer_add(g, n, "offset", "Sub", 2, din, 0, NULL, NULL);
	if (!diff)
		return -1;
	mkc_tensor *kin[2] = {diff, k};
	mkc_tensor *keep = mkc_infer_add(g, n, "keep", upper ? "GreaterOrEqual" : "LessOrEqual", 2,
					 kin, 0, NULL, NULL);
	if (!keep)
		return -1;
	mkc_tensor *win[3] = {keep, x, zero_of(g, n, x->dtype)};
	return write_output(g, n, "where", "Where", 3, win);
}

/* MatMul n of a vector as the Squeeze above; -1 on an error (reported). */
static int
vector_matmul(mkc_graph *g, mkc_node *n)
{
	mkc_tensor *a = n->in[0], *b = n->in[1];
	mkc_dim axes[2];
	int nax = 0;
	if (a->rank == 1) {
		if (!(a = unsqueeze(g, n, "row", a, 0)))
			return -1;
		axes[nax++] = mkc_dim_const(-2);
	}
	if (b->rank == 1) {
		if (!(b = unsqueeze(g, n, "column", b, 1)))
			return -1;
		axes[nax++] = mkc_dim_const(-1);
	}
	mkc_tensor *pin[2] = {a, b};
	mkc_tensor *p = mkc_infer_add(g, n, "product", "MatMul", 2, pin, 0, NULL, NULL);
	if (!p)
		return -1;
	mkc_tensor *sin[2] = {p, mkc_graph_ints(g, mkc_graph_fresh_name(g, n->name, "squeezed"),
						  nax, axes)};
	return write_output(g, n, "squeeze", "Squeeze", 2, sin);
}

int
mkc_pass_decompose(mkc_graph *g)
{
	int tri = 0, vec = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead)
			continue;
		if (n->op == MKC_OP_TRILU) {
			if (trilu(g, n) != 0)
				return -1;
			tri++;
		} else if (n->op == MKC_OP_MATMUL && n->nin == 2 &&
			   (n->in[0]->rank == 1 || n->in[1]->rank == 1)) {
			if (vector_matmul(g, n) != 0)
				return -1;
			vec++;
		}
	}
	if (tri)
		mkc_progress(g->ctx, "decompose: %d Trilu as Where of position comparisons", tri);
	if (vec)
		mkc_progress(g->ctx, "decompose: %d MatMul of a vector as a product of a row or a "
			     "column", vec);
	return 0;
}
