/*
 * infer.c - shape and type inference, with constant folding on the way.
 *
 * requires: nodes in topological order.
 * provides: dtype and shape of every tensor a live node writes; the values
 *           of tensors known at compile time (see fold.c); nodes whose
 *           outputs are all known are marked dead, unless one of their
 *           outputs is a graph output.
 *
 * Nodes are visited in order. Each op's rule (the infer column of ops.def)
 * computes its outputs' types and shapes from its inputs; then the constant
 * evaluator tries the node, so that a shape computed by Shape -> Gather ->
 * Concat is a value by the time the Reshape that reads it is reached. Shape
 * values may be symbolic (past_len + 1); a rule that needs a value that is
 * neither constant nor symbolic fails with an error naming the node.
 *
 * Dimension rules with symbols: equal affine forms are equal; in
 * broadcasting a 1 yields to the other side, and a symbol against a constant
 * other than 1 takes the constant (the run-time size must then be that
 * constant). Anything else that cannot be shown equal is an error.
 */
#include "passes.h"

#include <string.h>

typedef int infer_fn(mkc_graph *g, mkc_node *n);

static const char *
dstr(const mkc_graph *g, mkc_dim d, char *buf)
{
	return mkc_dim_str(g, d, buf, 64);
}

static void
set_out(mkc_node *n, int i, mkc_dtype dt, int rank, const mkc_dim *shape)
{
	mkc_tensor *t = n->out[i];
	if (!t)
		return;
	t->dtype = dt;
	t->rank = rank;
	for (int k = 0; k < rank; k++)
		t->shape[k] = shape[k];
}

static void
copy_out(mkc_node *n, int i, const mkc_tensor *from, mkc_dtype dt)
{
	set_out(n, i, dt, from->rank, from->shape);
}

static int
norm_axis(mkc_graph *g, mkc_node *n, int64_t axis, int rank, int64_t *out)
{
	*out = 0;
	if (axis < -rank || axis >= rank)
		return mkc_node_error(g, n, "axis %lld is out of range for rank %d",
				      (long long)axis, rank);
	*out = axis < 0 ? axis + rank : axis;
	return 0;
}

/* The optional axes: attribute before opset 13 (18 for reductions), input after. */
static int
axes_of(mkc_graph *g, mkc_node *n, int input, int64_t *axes, int *naxes)
{
	const mkc_attr *a = mkc_node_attr(n, "axes");
	if (a && a->type == MKC_AT_INTS) {
		if (a->n > MKC_MAX_RANK)
			return mkc_node_error(g, n, "too many axes");
		for (int i = 0; i < a->n; i++)
			axes[i] = a->ints[i];
		*naxes = a->n;
		return 0;
	}
	*naxes = 0;
	if (n->nin <= input || !n->in[input])
		return 0;
	mkc_dim v[MKC_MAX_RANK];
	int64_t cnt = mkc_const_dims(g, n, input, v, MKC_MAX_RANK, false);
	if (cnt < 0)
		return -1;
	for (int64_t i = 0; i < cnt; i++)
		axes[i] = v[i].c;
	*naxes = (int)cnt;
	return 0;
}

/* An op of mkc's own passes found in a model. */
static int
infer_internal(mkc_graph *g, mkc_node *n)
{
	return mkc_node_error(g, n, "%s is internal to mkc, not an op a model may use",
			      n->op_type);
}

/* Elementwise. */

static int
infer_softmax(mkc_graph *g, mkc_node *n)
{
	int64_t axis;
	if (norm_axis(g, n, mkc_softmax_axis_attr(g, n, NULL), n->in[0]->rank, &axis) != 0)
		return -1;
	copy_out(n, 0, n->in[0], n->in[0]->dtype);
	return 0;
}

/*
 * RotaryEmbedding, opset 23 (X, cos, sin, position_ids?) and com.microsoft
 * (X, position_ids, cos_cache, sin_cache): X is [B, H, S, D], or [B, S, H *
 * D] with num_heads; the rotated part (rotary_embedding_dim, 0: all of D)
 * is even and within D, and each cos and sin row holds half of it.
 */
static int
infer_rotary(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	bool ms = n->op == MKC_OP_MS_ROTARY;
	const mkc_tensor *cs[2] = {n->in[ms ? 2 : 1], n->in[ms ? 3 : 2]};
	int64_t heads = mkc_node_attr_int(n, "num_heads", 0);
	int64_t rot = mkc_node_attr_int(n, "rotary_embedding_dim", 0);
	if (x->rank != 3 && x->rank != 4)
		return mkc_node_error(g, n, "the input must be 3-D or 4-D, not of rank %d", x->rank);
	if (heads < 0 || rot < 0)
		return mkc_node_error(g, n, "num_heads %lld and rotary_embedding_dim %lld must not be "
				      "negative", (long long)heads, (long long)rot);
	mkc_dim last = x->shape[x->rank - 1];
	if (!mkc_dim_is_const(last))
		return mkc_node_error(g, n, "the last dimension must be a constant");
	int64_t d = last.c;
	const mkc_dim half = cs[0]->rank >= 1 ? cs[0]->shape[cs[0]->rank - 1] : mkc_dim_const(0);
	if (ms && x->rank == 3 && heads == 0 && rot == 0 && mkc_dim_is_const(half) && half.c > 0 &&
	    d % (2 * half.c) == 0) {
		/* onnxruntime's rule: the head size is twice the cos row, all of it rotated
		 * (onnxruntime-genai's fp16 CPU export leaves num_heads 0); lower reads it */
		heads = d / (2 * half.c);
		for (int i = 0; i < n->nattr; i++)
			if (strcmp(n->attr[i].name, "num_heads") == 0)
				n->attr[i].i = heads;
		if (!mkc_node_attr(n, "num_heads"))
			mkc_node_add_attr(g, n, (mkc_attr){.name = "num_heads", .type = MKC_AT_INT,
							   .i = heads});
	}
	if (x->rank == 3 && (heads == 0 || d % heads))
		return mkc_node_error(g, n, "a 3-D input needs num_heads, dividing its last dimension %lld",
				      (long long)d);
	if (x->rank == 3)
		d /= heads;
	int64_t r = rot ? rot : d;
	if (r > d || r % 2)
		return mkc_node_error(g, n, "the rotated size %lld must be even and at most the head "
				      "size %lld", (long long)r, (long long)d);
	for (int i = 0; i < 2; i++) {
		const mkc_tensor *c = cs[i];
		if (c->rank < 1 || !mkc_dim_is_const(c->shape[c->rank - 1]) ||
		    c->shape[c->rank - 1].c < r / 2)
			return mkc_node_error(g, n, "'%s' must hold %lld values per position", c->name,
					      (long long)(r / 2));
	}
	copy_out(n, 0, x, x->dtype);
	return 0;
}

static int
infer_same(mkc_graph *g, mkc_node *n)
{
	copy_out(n, 0, n->in[0], n->in[0]->dtype);
	return 0;
}

/* Trilu: x's shape and type, x at least a matrix, k one integer */
static int
infer_trilu(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *k = n->nin > 1 ? n->in[1] : NULL;
	if (x->rank < 2)
		return mkc_node_error(g, n, "input must have at least 2 axes, not %d", x->rank);
	if (k && (k->dtype != MKC_DT_INT64 || k->rank != 0))
		return mkc_node_error(g, n, "k must be an int64 scalar");
	copy_out(n, 0, x, x->dtype);
	return 0;
}

static int
infer_to_bool(mkc_graph *g, mkc_node *n)
{
	copy_out(n, 0, n->in[0], MKC_DT_BOOL);
	return 0;
}

static int
infer_cast(mkc_graph *g, mkc_node *n)
{
	int64_t to = mkc_node_attr_int(n, "to", 0);
	if (!mkc_dtype_valid((int)to) || to == MKC_DT_STRING)
		return mkc_node_error(g, n, "attribute 'to' names type %lld, which mkc does not support",
				      (long long)to);
	copy_out(n, 0, n->in[0], (mkc_dtype)to);
	return 0;
}

static int
infer_castlike(mkc_graph *g, mkc_node *n)
{
	copy_out(n, 0, n->in[0], n->in[1]->dtype);
	return 0;
}

/* Broadcasts b into the shape s of rank *rank (numpy rules). */
static int bind_sym(mkc_graph *g, const mkc_node *n, int s, mkc_dim by, mkc_dim *d);

/*
 * Broadcasting or concatenating a bare symbol against a length (neither 1)
 * that does not use it: the two are equal, and the symbol is the length
 * from here on (onnxruntime-genai's total_sequence_length, the attention
 * mask's length, against the past plus the step's tokens its causal mask
 * is built from; its kv_cache_dim against the head size). The symbol of x
 * or of y, with the length in *by; or -1.
 */
static int
unify_sym(mkc_dim x, mkc_dim y, mkc_dim *by)
{
	for (int k = 0; k < 2; k++) {
		mkc_dim a = k ? y : x, b = k ? x : y;
		int sym = mkc_dim_bare_sym(a);
		if (sym >= 0 && !mkc_dim_uses(b, sym, NULL) && !mkc_dim_is_unknown(b)) {
			*by = b;
			return sym;
		}
	}
	return -1;
}

/* The n dimensions v held by a rule as bind_sym's sym = by renumbers the graph's. */
static void
renumber(mkc_dim *v, int n, int sym, mkc_dim by)
{
	for (int i = 0; i < n; i++) {
		bool ok = mkc_dim_subst(&v[i], sym, by, false);
		MKC_ASSERT(ok);
	}
}

/*
 * s (rank entries) broadcast with b (brank) into s; bind: a free symbol
 * against a length is bound to it (unify_sym), for callers that hold no
 * other dimension than s and tensors' shapes (binding renumbers symbols).
 */
static int
broadcast_into(mkc_graph *g, mkc_node *n, mkc_dim *s, int *rank,
	       const mkc_dim *b, int brank, bool bind)
{
	int r = *rank > brank ? *rank : brank, sym;
	mkc_dim out[MKC_MAX_RANK] = {{0}}, len;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - *rank), ib = i - (r - brank);
		mkc_dim x = ia >= 0 ? s[ia] : mkc_dim_const(1);
		mkc_dim y = ib >= 0 ? b[ib] : mkc_dim_const(1);
		if (mkc_dim_eq(x, y) || mkc_dim_eq(y, mkc_dim_const(1))) {
			out[i] = x;
		} else if (mkc_dim_eq(x, mkc_dim_const(1))) {
			out[i] = y;
		} else if (mkc_dim_is_const(x) != mkc_dim_is_const(y)) {
			out[i] = mkc_dim_is_const(x) ? x : y;
		} else if (bind && (sym = unify_sym(x, y, &len)) >= 0) {
			/* the symbol goes, and those after it are renumbered */
			if (bind_sym(g, n, sym, len, NULL) != 0)
				return -1;
			out[i] = len;
			renumber(out, i + 1, sym, len);
			renumber(s, *rank, sym, len);
		} else {
			char bx[64], by[64];
			return mkc_node_error(g, n, "cannot broadcast dimension %s against %s",
					      dstr(g, x, bx), dstr(g, y, by));
		}
	}
	memcpy(s, out, sizeof(mkc_dim) * (size_t)r);
	*rank = r;
	return 0;
}

static int
check_same_types(mkc_graph *g, mkc_node *n, int from, int to)
{
	for (int i = from + 1; i < to; i++)
		if (n->in[i]->dtype != n->in[from]->dtype)
			return mkc_node_error(g, n, "input types %s and %s differ",
					      mkc_dtype_name(n->in[from]->dtype),
					      mkc_dtype_name(n->in[i]->dtype));
	return 0;
}

static int
broadcast_inputs(mkc_graph *g, mkc_node *n, int from, mkc_dim *s, int *rank)
{
	*rank = 0;
	for (int i = from; i < n->nin; i++)
		if (broadcast_into(g, n, s, rank, n->in[i]->shape, n->in[i]->rank, true) != 0)
			return -1;
	return 0;
}

static int
infer_broadcast(mkc_graph *g, mkc_node *n)
{
	if (check_same_types(g, n, 0, n->nin) != 0)
		return -1;
	mkc_dim s[MKC_MAX_RANK];
	int rank;
	if (broadcast_inputs(g, n, 0, s, &rank) != 0)
		return -1;
	set_out(n, 0, n->in[0]->dtype, rank, s);
	return 0;
}

/*
 * Pow: the base's type is the result's; the exponent may have a type of its
 * own from opset 12 (Pow-12: T1 any number type), before that the base's,
 * which must be a float (Pow-7). An integer base to a float power is an
 * integer (4^1.5 is 8): backends/c/scalar.h.
 */
static int
infer_pow(mkc_graph *g, mkc_node *n)
{
	mkc_dtype b = n->in[0]->dtype, e = n->in[1]->dtype;
	bool old = mkc_graph_opset(g, "") < 12;
	if (!(b == MKC_DT_INT32 || b == MKC_DT_INT64 || mkc_dtype_is_float(b)) ||
	    (old && !mkc_dtype_is_float(b)))
		return mkc_node_error(g, n, "the base is %s; Pow takes %s", mkc_dtype_name(b),
				      old ? "float16, float32 or float64 before opset 12"
					  : "int32, int64, float16, float32, float64 or bfloat16");
	if (old && e != b)
		return mkc_node_error(g, n, "the exponent is %s and the base %s; before opset 12 "
				      "they must have one type", mkc_dtype_name(e), mkc_dtype_name(b));
	if (e == MKC_DT_BOOL || mkc_dtype_size(e) == 0)
		return mkc_node_error(g, n, "the exponent is %s; Pow takes a number",
				      mkc_dtype_name(e));
	mkc_dim s[MKC_MAX_RANK];
	int rank;
	if (broadcast_inputs(g, n, 0, s, &rank) != 0)
		return -1;
	set_out(n, 0, b, rank, s);
	return 0;
}

static int
infer_compare(mkc_graph *g, mkc_node *n)
{
	if (check_same_types(g, n, 0, n->nin) != 0)
		return -1;
	mkc_dim s[MKC_MAX_RANK];
	int rank;
	if (broadcast_inputs(g, n, 0, s, &rank) != 0)
		return -1;
	set_out(n, 0, MKC_DT_BOOL, rank, s);
	return 0;
}

static int
infer_where(mkc_graph *g, mkc_node *n)
{
	if (n->in[0]->dtype != MKC_DT_BOOL)
		return mkc_node_error(g, n, "the condition is %s, not bool",
				      mkc_dtype_name(n->in[0]->dtype));
	if (check_same_types(g, n, 1, 3) != 0)
		return -1;
	mkc_dim s[MKC_MAX_RANK];
	int rank;
	if (broadcast_inputs(g, n, 0, s, &rank) != 0)
		return -1;
	set_out(n, 0, n->in[1]->dtype, rank, s);
	return 0;
}

/* Linear algebra and reductions. */

static int
check_inner(mkc_graph *g, mkc_node *n, mkc_dim k1, mkc_dim k2)
{
	if (mkc_dim_eq(k1, k2))
		return 0;
	char b1[64], b2[64];
	return mkc_node_error(g, n, "inner dimensions %s and %s differ",
			      dstr(g, k1, b1), dstr(g, k2, b2));
}

static int
infer_matmul(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *a = n->in[0], *b = n->in[1];
	if (check_same_types(g, n, 0, 2) != 0)
		return -1;
	if (a->rank < 1 || b->rank < 1)
		return mkc_node_error(g, n, "inputs must have rank 1 or more");
	/* a 1-D operand is promoted and its dimension removed afterwards */
	mkc_dim as[MKC_MAX_RANK + 1], bs[MKC_MAX_RANK + 1];
	int ar = a->rank, br = b->rank;
	memcpy(as, a->shape, sizeof(mkc_dim) * (size_t)ar);
	memcpy(bs, b->shape, sizeof(mkc_dim) * (size_t)br);
	if (ar == 1) {
		as[1] = as[0];
		as[0] = mkc_dim_const(1);
		ar = 2;
	}
	if (br == 1) {
		bs[1] = mkc_dim_const(1);
		br = 2;
	}
	if (check_inner(g, n, as[ar - 1], bs[br - 2]) != 0)
		return -1;
	mkc_dim s[MKC_MAX_RANK];
	int rank = ar - 2;
	memcpy(s, as, sizeof(mkc_dim) * (size_t)rank);
	if (broadcast_into(g, n, s, &rank, bs, br - 2, false) != 0)
		return -1;
	if (rank + 2 > MKC_MAX_RANK)
		return mkc_node_error(g, n, "result rank exceeds %d", MKC_MAX_RANK);
	if (a->rank != 1)
		s[rank++] = as[ar - 2];
	if (b->rank != 1)
		s[rank++] = bs[br - 1];
	set_out(n, 0, a->dtype, rank, s);
	return 0;
}

static int
infer_gemm(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *a = n->in[0], *b = n->in[1];
	if (a->rank != 2 || b->rank != 2)
		return mkc_node_error(g, n, "A and B must be matrices (ranks %d and %d)",
				      a->rank, b->rank);
	bool ta = mkc_node_attr_int(n, "transA", 0), tb = mkc_node_attr_int(n, "transB", 0);
	mkc_dim m = a->shape[ta], k1 = a->shape[!ta];
	mkc_dim k2 = b->shape[tb], nn = b->shape[!tb];
	if (check_inner(g, n, k1, k2) != 0)
		return -1;
	mkc_dim s[2] = {m, nn};
	if (n->nin > 2 && n->in[2]) {
		mkc_dim c[2] = {m, nn};
		int rank = 2;
		if (broadcast_into(g, n, c, &rank, n->in[2]->shape, n->in[2]->rank, false) != 0)
			return -1;
		if (rank != 2 || !mkc_dim_eq(c[0], m) || !mkc_dim_eq(c[1], nn))
			return mkc_node_error(g, n, "C does not broadcast to the result's shape");
	}
	set_out(n, 0, a->dtype, 2, s);
	return 0;
}

static int
infer_reduce(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axes[MKC_MAX_RANK];
	int naxes;
	if (axes_of(g, n, 1, axes, &naxes) != 0)
		return -1;
	bool keep = mkc_node_attr_int(n, "keepdims", 1) != 0;
	bool noop = mkc_node_attr_int(n, "noop_with_empty_axes", 0) != 0;
	bool reduced[MKC_MAX_RANK] = {false};
	for (int i = 0; i < naxes; i++) {
		int64_t ax;
		if (norm_axis(g, n, axes[i], x->rank, &ax) != 0)
			return -1;
		reduced[ax] = true;
	}
	if (naxes == 0 && !noop)
		for (int i = 0; i < x->rank; i++)
			reduced[i] = true;
	mkc_dim s[MKC_MAX_RANK];
	int rank = 0;
	for (int i = 0; i < x->rank; i++) {
		if (!reduced[i])
			s[rank++] = x->shape[i];
		else if (keep)
			s[rank++] = mkc_dim_const(1);
	}
	set_out(n, 0, x->dtype, rank, s);
	return 0;
}

/* Data movement and shape arithmetic. */

static int
infer_constant(mkc_graph *g, mkc_node *n)
{
	if (n->nattr != 1)
		return mkc_node_error(g, n, "needs exactly one value attribute, has %d", n->nattr);
	const mkc_attr *a = &n->attr[0];
	mkc_dim one = mkc_dim_const(a->n);
	if (strcmp(a->name, "value") == 0 && a->type == MKC_AT_TENSOR)
		copy_out(n, 0, a->t, a->t->dtype);
	else if (strcmp(a->name, "value_float") == 0)
		set_out(n, 0, MKC_DT_FLOAT, 0, NULL);
	else if (strcmp(a->name, "value_int") == 0)
		set_out(n, 0, MKC_DT_INT64, 0, NULL);
	else if (strcmp(a->name, "value_floats") == 0)
		set_out(n, 0, MKC_DT_FLOAT, 1, &one);
	else if (strcmp(a->name, "value_ints") == 0)
		set_out(n, 0, MKC_DT_INT64, 1, &one);
	else
		return mkc_node_error(g, n, "attribute '%s' is not a supported constant form", a->name);
	return 0;
}

static int
shape_range(const mkc_node *n, int rank, int64_t *start, int64_t *end)
{
	*start = mkc_node_attr_int(n, "start", 0);
	*end = mkc_node_attr_int(n, "end", rank);
	if (*start < 0)
		*start += rank;
	if (*end < 0)
		*end += rank;
	*start = *start < 0 ? 0 : *start > rank ? rank : *start;
	*end = *end < 0 ? 0 : *end > rank ? rank : *end;
	return *end > *start ? (int)(*end - *start) : 0;
}

static int
infer_shape(mkc_graph *g, mkc_node *n)
{
	int64_t s, e;
	mkc_dim len = mkc_dim_const(shape_range(n, n->in[0]->rank, &s, &e));
	set_out(n, 0, MKC_DT_INT64, 1, &len);
	return 0;
}

static int
infer_size(mkc_graph *g, mkc_node *n)
{
	set_out(n, 0, MKC_DT_INT64, 0, NULL);
	return 0;
}

static int
infer_constant_of_shape(mkc_graph *g, mkc_node *n)
{
	mkc_dim s[MKC_MAX_RANK];
	int64_t rank = mkc_const_dims(g, n, 0, s, MKC_MAX_RANK, true);
	if (rank < 0)
		return -1;
	const mkc_attr *v = mkc_node_attr(n, "value");
	set_out(n, 0, v && v->t ? v->t->dtype : MKC_DT_FLOAT, (int)rank, s);
	return 0;
}

static int
product(mkc_graph *g, mkc_node *n, const mkc_dim *s, int from, int to, mkc_dim *p)
{
	*p = mkc_dim_const(1);
	for (int i = from; i < to; i++)
		if (!mkc_dim_mul(*p, s[i], p))
			return mkc_node_error(g, n, "a product of two symbolic dimensions is not supported");
	return 0;
}

static int
infer_reshape(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	mkc_dim s[MKC_MAX_RANK];
	int64_t rank = mkc_const_dims(g, n, 1, s, MKC_MAX_RANK, true);
	if (rank < 0)
		return -1;
	bool allowzero = mkc_node_attr_int(n, "allowzero", 0) != 0;
	int hole = -1;
	for (int i = 0; i < rank; i++) {
		if (mkc_dim_eq(s[i], mkc_dim_const(-1))) {
			if (hole >= 0)
				return mkc_node_error(g, n, "the shape has more than one -1");
			hole = i;
		} else if (mkc_dim_eq(s[i], mkc_dim_const(0)) && !allowzero) {
			if (i >= x->rank)
				return mkc_node_error(g, n, "a 0 at position %d copies a dimension the input does not have", i);
			s[i] = x->shape[i];
		} else if (mkc_dim_is_const(s[i]) && s[i].c < 0) {
			return mkc_node_error(g, n, "the shape holds %lld", (long long)s[i].c);
		}
	}
	/*
	 * Dimensions that stand on both sides cancel before the element counts
	 * are multiplied out, so [batch, past_len, 4] -> [-1, past_len, 4] works
	 * although batch * past_len is not affine.
	 */
	mkc_dim left[MKC_MAX_RANK], right[MKC_MAX_RANK];
	int nl = x->rank, nr = 0;
	memcpy(left, x->shape, sizeof(mkc_dim) * (size_t)nl);
	for (int i = 0; i < rank; i++) {
		if (i == hole)
			continue;
		int k = 0;
		while (k < nl && !mkc_dim_eq(left[k], s[i]))
			k++;
		if (k < nl)
			left[k] = left[--nl];
		else
			right[nr++] = s[i];
	}
	mkc_dim total, known;
	if (product(g, n, left, 0, nl, &total) != 0 ||
	    product(g, n, right, 0, nr, &known) != 0)
		return -1;
	if (hole >= 0) {
		mkc_dim check;
		if (!mkc_dim_div(total, known, &s[hole]) ||
		    !mkc_dim_mul(s[hole], known, &check) || !mkc_dim_eq(check, total)) {
			char b1[64], b2[64];
			return mkc_node_error(g, n, "cannot infer -1: %s elements do not divide by %s",
					      dstr(g, total, b1), dstr(g, known, b2));
		}
	} else if (!mkc_dim_eq(total, known)) {
		char b1[64], b2[64];
		return mkc_node_error(g, n, "cannot reshape %s elements into %s",
				      dstr(g, total, b1), dstr(g, known, b2));
	}
	set_out(n, 0, x->dtype, (int)rank, s);
	return 0;
}

static int
infer_flatten(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axis = mkc_node_attr_int(n, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return mkc_node_error(g, n, "axis is out of range for rank %d", x->rank);
	mkc_dim s[2];
	if (product(g, n, x->shape, 0, (int)axis, &s[0]) ||
	    product(g, n, x->shape, (int)axis, x->rank, &s[1]))
		return -1;
	set_out(n, 0, x->dtype, 2, s);
	return 0;
}

static int
infer_unsqueeze(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axes[MKC_MAX_RANK];
	int naxes;
	if (axes_of(g, n, 1, axes, &naxes) != 0)
		return -1;
	int rank = x->rank + naxes;
	if (rank > MKC_MAX_RANK)
		return mkc_node_error(g, n, "result rank exceeds %d", MKC_MAX_RANK);
	bool added[MKC_MAX_RANK] = {false};
	for (int i = 0; i < naxes; i++) {
		int64_t ax;
		if (norm_axis(g, n, axes[i], rank, &ax) != 0)
			return -1;
		if (added[ax])
			return mkc_node_error(g, n, "axis %lld is repeated", (long long)axes[i]);
		added[ax] = true;
	}
	mkc_dim s[MKC_MAX_RANK];
	for (int i = 0, j = 0; i < rank; i++)
		s[i] = added[i] ? mkc_dim_const(1) : x->shape[j++];
	set_out(n, 0, x->dtype, rank, s);
	return 0;
}

static int
infer_squeeze(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axes[MKC_MAX_RANK];
	int naxes;
	if (axes_of(g, n, 1, axes, &naxes) != 0)
		return -1;
	bool drop[MKC_MAX_RANK] = {false};
	for (int i = 0; i < naxes; i++) {
		int64_t ax;
		if (norm_axis(g, n, axes[i], x->rank, &ax) != 0)
			return -1;
		if (!mkc_dim_eq(x->shape[ax], mkc_dim_const(1))) {
			char b[64];
			return mkc_node_error(g, n, "axis %lld has size %s, not 1",
					      (long long)axes[i], dstr(g, x->shape[ax], b));
		}
		drop[ax] = true;
	}
	if (naxes == 0)
		for (int i = 0; i < x->rank; i++)
			drop[i] = mkc_dim_eq(x->shape[i], mkc_dim_const(1));
	mkc_dim s[MKC_MAX_RANK];
	int rank = 0;
	for (int i = 0; i < x->rank; i++)
		if (!drop[i])
			s[rank++] = x->shape[i];
	set_out(n, 0, x->dtype, rank, s);
	return 0;
}

static int
infer_transpose(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	const mkc_attr *p = mkc_node_attr(n, "perm");
	if (p && p->n != x->rank)
		return mkc_node_error(g, n, "perm has %d entries for rank %d", p->n, x->rank);
	mkc_dim s[MKC_MAX_RANK];
	bool seen[MKC_MAX_RANK] = {false};
	for (int i = 0; i < x->rank; i++) {
		int64_t k = p ? p->ints[i] : x->rank - 1 - i;
		if (k < 0 || k >= x->rank || seen[k])
			return mkc_node_error(g, n, "perm is not a permutation of 0..%d", x->rank - 1);
		seen[k] = true;
		s[i] = x->shape[k];
	}
	set_out(n, 0, x->dtype, x->rank, s);
	return 0;
}

static int
infer_concat(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axis;
	if (!mkc_node_attr(n, "axis"))
		return mkc_node_error(g, n, "attribute 'axis' is required");
	if (norm_axis(g, n, mkc_node_attr_int(n, "axis", 0), x->rank, &axis) != 0)
		return -1;
	if (check_same_types(g, n, 0, n->nin) != 0)
		return -1;
	mkc_dim s[MKC_MAX_RANK];
	memcpy(s, x->shape, sizeof(mkc_dim) * (size_t)x->rank);
	for (int i = 1; i < n->nin; i++) {
		const mkc_tensor *y = n->in[i];
		if (y->rank != x->rank)
			return mkc_node_error(g, n, "input '%s' has rank %d, not %d",
					      y->name, y->rank, x->rank);
		for (int k = 0; k < x->rank; k++) {
			if (k == axis) {
				if (!mkc_dim_add(s[k], y->shape[k], &s[k]))
					return mkc_node_error(g, n, "concatenated length mixes more than two symbols");
			} else if (!mkc_dim_eq(s[k], y->shape[k])) {
				/* a symbol of its own against a length */
				mkc_dim by;
				int sym = unify_sym(s[k], y->shape[k], &by);
				if (sym >= 0) {
					if (bind_sym(g, n, sym, by, NULL) != 0)
						return -1;
					renumber(s, x->rank, sym, by);
					continue;
				}
				char b1[64], b2[64];
				return mkc_node_error(g, n, "dimension %d differs: %s and %s", k,
						      dstr(g, s[k], b1), dstr(g, y->shape[k], b2));
			}
		}
	}
	set_out(n, 0, x->dtype, x->rank, s);
	return 0;
}

static int
infer_split(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axis;
	if (norm_axis(g, n, mkc_node_attr_int(n, "axis", 0), x->rank, &axis) != 0)
		return -1;
	mkc_dim parts[64];
	int64_t np;
	const mkc_attr *sa = mkc_node_attr(n, "split");
	if (n->nout > 64)
		return mkc_node_error(g, n, "more than 64 outputs");
	if (n->nin > 1 && n->in[1]) {
		if ((np = mkc_const_dims(g, n, 1, parts, 64, true)) < 0)
			return -1;
	} else if (sa && sa->type == MKC_AT_INTS) {
		np = sa->n;
		for (int i = 0; i < sa->n && i < 64; i++)
			parts[i] = mkc_dim_const(sa->ints[i]);
	} else {
		mkc_dim d = x->shape[axis];
		if (!mkc_dim_is_const(d))
			return mkc_node_error(g, n, "cannot split a symbolic dimension evenly");
		np = n->nout;
		int64_t each = (d.c + np - 1) / np;   /* the last part may be smaller */
		for (int i = 0; i < np; i++)
			parts[i] = mkc_dim_const(i < np - 1 ? each : d.c - each * (np - 1));
	}
	if (np != n->nout)
		return mkc_node_error(g, n, "split has %lld parts for %d outputs", (long long)np, n->nout);
	for (int i = 0; i < np; i++)
		if (mkc_dim_negative(parts[i]))
			return mkc_node_error(g, n, "split size %d is negative", i);
	mkc_dim sum = mkc_dim_const(0);
	for (int i = 0; i < np; i++) {
		if (!mkc_dim_add(sum, parts[i], &sum))
			return mkc_node_error(g, n, "split sizes mix more than two symbols");
		mkc_dim s[MKC_MAX_RANK];
		memcpy(s, x->shape, sizeof(mkc_dim) * (size_t)x->rank);
		s[axis] = parts[i];
		set_out(n, i, x->dtype, x->rank, s);
	}
	if (!mkc_dim_eq(sum, x->shape[axis]))
		return mkc_node_error(g, n, "split sizes do not add up to the axis");
	return 0;
}

/* See passes.h. */
int64_t
mkc_slice_first(int64_t start, int64_t step, int64_t dim)
{
	if (start < 0)
		start += dim;
	if (step > 0)
		return start < 0 ? 0 : start > dim ? dim : start;
	/* a start before the axis is clamped to its first element, as ONNX and
	 * onnxruntime do (numpy's slices would take none) */
	return start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
}

/*
 * Slice length along one axis. Constant sizes follow ONNX exactly (clamping
 * included). With a symbolic size or bounds only step 1 is handled: negative
 * bounds count from the end, a bound past 2^31 means "to the end", and the
 * result is end - start, which must then be a single affine form.
 */
static int
slice_len(mkc_graph *g, mkc_node *n, mkc_dim dim, mkc_dim st, mkc_dim en,
	  int64_t step, mkc_dim *len)
{
	if (mkc_dim_is_const(dim) && mkc_dim_is_const(st) && mkc_dim_is_const(en)) {
		int64_t d = dim.c, s = mkc_slice_first(st.c, step, d), e = en.c;
		if (e < 0)
			e += d;
		if (step > 0) {
			e = e < 0 ? 0 : e > d ? d : e;
			/* ceil((e - s) / step), without e - s + step overflowing */
			*len = mkc_dim_const(e > s ? 1 + (e - s - 1) / step : 0);
		} else {
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			*len = mkc_dim_const(d > 0 && s > e ? 1 + (s - e - 1) / -step : 0);
		}
		return 0;
	}
	if (step != 1)
		return mkc_node_error(g, n, "a step other than 1 over a symbolic dimension is not supported");
	const int64_t big = (int64_t)1 << 31;
	if (mkc_dim_is_const(st) && st.c < 0 && !mkc_dim_add(dim, st, &st))
		return -1;
	if (mkc_dim_is_const(en) && en.c >= big)
		en = dim;
	else if (mkc_dim_is_const(en) && en.c < 0 && !mkc_dim_add(dim, en, &en))
		return mkc_node_error(g, n, "slice bounds mix two symbols");
	if (!mkc_dim_sub(en, st, len))
		return mkc_node_error(g, n, "slice bounds mix two symbols");
	if (mkc_dim_is_const(*len) && len->c < 0)
		*len = mkc_dim_const(0);
	return 0;
}

static int
infer_slice(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	mkc_dim st[MKC_MAX_RANK], en[MKC_MAX_RANK], ax[MKC_MAX_RANK], sp[MKC_MAX_RANK];
	int64_t k;
	if (mkc_graph_opset(g, "") < 10) {
		const mkc_attr *a = mkc_node_attr(n, "starts"), *b = mkc_node_attr(n, "ends");
		const mkc_attr *c = mkc_node_attr(n, "axes");
		if (!a || !b || a->n != b->n || a->n > MKC_MAX_RANK)
			return mkc_node_error(g, n, "starts and ends must be given with equal lengths");
		k = a->n;
		for (int i = 0; i < k; i++) {
			st[i] = mkc_dim_const(a->ints[i]);
			en[i] = mkc_dim_const(b->ints[i]);
			ax[i] = mkc_dim_const(c && i < c->n ? c->ints[i] : i);
			sp[i] = mkc_dim_const(1);
		}
	} else {
		if (n->nin < 3)
			return mkc_node_error(g, n, "starts and ends are required inputs");
		if ((k = mkc_const_dims(g, n, 1, st, MKC_MAX_RANK, true)) < 0 ||
		    mkc_const_dims(g, n, 2, en, MKC_MAX_RANK, true) != k)
			return k < 0 ? -1 : mkc_node_error(g, n, "starts and ends differ in length");
		for (int i = 0; i < k; i++) {
			ax[i] = mkc_dim_const(i);
			sp[i] = mkc_dim_const(1);
		}
		if (n->nin > 3 && n->in[3] &&
		    mkc_const_dims(g, n, 3, ax, MKC_MAX_RANK, false) != k)
			return mkc_node_error(g, n, "axes must match starts in length");
		if (n->nin > 4 && n->in[4] &&
		    mkc_const_dims(g, n, 4, sp, MKC_MAX_RANK, false) != k)
			return mkc_node_error(g, n, "steps must match starts in length");
	}
	mkc_dim s[MKC_MAX_RANK];
	memcpy(s, x->shape, sizeof(mkc_dim) * (size_t)x->rank);
	for (int i = 0; i < k; i++) {
		int64_t a;
		if (norm_axis(g, n, ax[i].c, x->rank, &a) != 0)
			return -1;
		if (sp[i].c == 0 || sp[i].c == INT64_MIN)
			return mkc_node_error(g, n, "a step of %lld", (long long)sp[i].c);
		if (slice_len(g, n, x->shape[a], st[i], en[i], sp[i].c, &s[a]) != 0)
			return -1;
	}
	set_out(n, 0, x->dtype, x->rank, s);
	return 0;
}

static int
infer_gather(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *idx = n->in[1];
	int64_t axis;
	if (norm_axis(g, n, mkc_node_attr_int(n, "axis", 0), x->rank, &axis) != 0)
		return -1;
	if (idx->dtype != MKC_DT_INT64 && idx->dtype != MKC_DT_INT32)
		return mkc_node_error(g, n, "indices are %s, not int32 or int64",
				      mkc_dtype_name(idx->dtype));
	int rank = x->rank - 1 + idx->rank;
	if (rank > MKC_MAX_RANK)
		return mkc_node_error(g, n, "result rank exceeds %d", MKC_MAX_RANK);
	mkc_dim s[MKC_MAX_RANK];
	int r = 0;
	for (int i = 0; i < axis; i++)
		s[r++] = x->shape[i];
	for (int i = 0; i < idx->rank; i++)
		s[r++] = idx->shape[i];
	for (int i = (int)axis + 1; i < x->rank; i++)
		s[r++] = x->shape[i];
	set_out(n, 0, x->dtype, rank, s);
	return 0;
}

static int
infer_expand(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	mkc_dim s[MKC_MAX_RANK];
	int64_t rank = mkc_const_dims(g, n, 1, s, MKC_MAX_RANK, true);
	if (rank < 0)
		return -1;
	int r = (int)rank;
	if (broadcast_into(g, n, s, &r, x->shape, x->rank, true) != 0)
		return -1;
	set_out(n, 0, x->dtype, r, s);
	return 0;
}

/* Tile: axis d of y is axis d of x repeats[d] times over. */
static int
infer_tile(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	mkc_dim r[MKC_MAX_RANK], s[MKC_MAX_RANK];
	int64_t rank = mkc_const_dims(g, n, 1, r, MKC_MAX_RANK, false);
	if (rank < 0)
		return -1;
	if (rank != x->rank)
		return mkc_node_error(g, n, "repeats has %lld values for an input of rank %d",
				      (long long)rank, x->rank);
	for (int d = 0; d < x->rank; d++) {
		if (r[d].c < 0)
			return mkc_node_error(g, n, "repeats[%d] is %lld: a count of 0 or more", d,
					      (long long)r[d].c);
		if (!mkc_dim_mul(x->shape[d], r[d], &s[d]))
			return mkc_node_error(g, n, "axis %d's length times its repeats is not affine", d);
	}
	set_out(n, 0, x->dtype, x->rank, s);
	return 0;
}

static int
infer_range(mkc_graph *g, mkc_node *n)
{
	for (int i = 0; i < 3; i++)
		if (n->in[i]->rank != 0)
			return mkc_node_error(g, n, "start, limit and delta must be scalars");
	if (check_same_types(g, n, 0, 3) != 0)
		return -1;
	mkc_dim len;
	if (mkc_dtype_is_float(n->in[0]->dtype)) {
		/* float ranges need their values; fold.c sizes them */
		if (!n->in[0]->data || !n->in[1]->data || !n->in[2]->data)
			return mkc_node_error(g, n, "a float range needs constant bounds");
		len = mkc_dim_const(-1);
	} else {
		mkc_dim v[3];
		for (int i = 0; i < 3; i++)
			if (mkc_const_dims(g, n, i, &v[i], 1, true) < 0)
				return -1;
		if (!mkc_dim_is_const(v[2]) || v[2].c == 0)
			return mkc_node_error(g, n, "delta must be a non-zero constant");
		mkc_dim span;
		if (!mkc_dim_sub(v[1], v[0], &span))
			return mkc_node_error(g, n, "limit - start mixes more than two symbols");
		int64_t d = v[2].c;
		mkc_dim negated;
		if (d == -1 && !mkc_dim_mul(span, mkc_dim_const(-1), &negated))
			return mkc_node_error(g, n, "the length of the range does not fit in int64");
		if (mkc_dim_is_const(span)) {
			int64_t q = span.c / d + (span.c % d != 0 && (span.c < 0) == (d < 0));
			len = mkc_dim_const(q > 0 ? q : 0);
		} else if (!mkc_dim_div(span, mkc_dim_const(d), &len)) {
			char b[64];
			return mkc_node_error(g, n, "the length %s / %lld is not exact",
					      dstr(g, span, b), (long long)d);
		}
	}
	set_out(n, 0, n->in[0]->dtype, 1, &len);
	return 0;
}

/*
 * A norm's scale or bias: unidirectionally broadcastable to X, as the spec
 * says (its axes are X's last ones, each of extent 1 or X's), so it may vary
 * per row ([3,1] for X [3,8]) as well as along the row. The body reads it at
 * X's coordinates (backends/c/rows.h), so an extent that only equals X's at
 * run time, if at all (a constant against a symbol), is refused here rather
 * than read out of bounds.
 */
static int
check_norm_param(mkc_graph *g, mkc_node *n, const mkc_tensor *x, const mkc_tensor *w)
{
	if (w->rank > x->rank)
		return mkc_node_error(g, n, "'%s' has rank %d, more than the input's %d", w->name,
				      w->rank, x->rank);
	for (int e = 0; e < w->rank; e++) {
		int d = e + x->rank - w->rank;
		if (mkc_dim_eq(w->shape[e], mkc_dim_const(1)) || mkc_dim_eq(w->shape[e], x->shape[d]))
			continue;
		char bw[64], bx[64];
		return mkc_node_error(g, n, "'%s' has extent %s on axis %d where the input has %s: "
				      "a scale or bias must broadcast to the input (each axis 1 or "
				      "the input's)", w->name, dstr(g, w->shape[e], bw), d,
				      dstr(g, x->shape[d], bx));
	}
	return 0;
}

static int
infer_norm(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t axis;
	if (norm_axis(g, n, mkc_node_attr_int(n, "axis", -1), x->rank, &axis) != 0)
		return -1;
	for (int i = 1; i < n->nin; i++)
		if (n->in[i] && check_norm_param(g, n, x, n->in[i]) != 0)
			return -1;
	copy_out(n, 0, x, x->dtype);
	mkc_dim s[MKC_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		s[i] = i < axis ? x->shape[i] : mkc_dim_const(1);
	mkc_dtype stash = (mkc_dtype)mkc_node_attr_int(n, "stash_type", MKC_DT_FLOAT);
	for (int i = 1; i < n->nout; i++)
		set_out(n, i, stash, x->rank, s);
	return 0;
}

/*
 * SkipSimplifiedLayerNormalization (com.microsoft): RMSNorm of input + skip
 * (+ bias) over the last axis. Outputs: the result, mean (unused by RMS
 * norm), inverse deviation, and the sum itself.
 */
static int
infer_skip_norm(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	if (x->rank < 1)
		return mkc_node_error(g, n, "input must have rank 1 or more");
	for (int i = 1; i < n->nin; i++) {
		const mkc_tensor *w = n->in[i];
		if (!w)
			continue;
		bool whole = i == 1;   /* skip has the input's shape; gamma and bias the last axis */
		if (whole ? w->rank != x->rank : w->rank != 1)
			return mkc_node_error(g, n, "'%s' must be %s", w->name,
					      whole ? "shaped like the input" : "1-D");
		if (!mkc_dim_eq(w->shape[w->rank - 1], x->shape[x->rank - 1]))
			return mkc_node_error(g, n, "'%s' does not match the hidden size", w->name);
	}
	copy_out(n, 0, x, x->dtype);
	mkc_dim s[MKC_MAX_RANK];
	memcpy(s, x->shape, sizeof(mkc_dim) * (size_t)x->rank);
	s[x->rank - 1] = mkc_dim_const(1);
	for (int i = 1; i < 3 && i < n->nout; i++)
		set_out(n, i, MKC_DT_FLOAT, x->rank, s);
	if (n->nout > 3)
		copy_out(n, 3, x, x->dtype);
	return 0;
}

/*
 * Attention (opset 23): Q, K, V as [B, heads, seq, head] or, with q_num_heads
 * and kv_num_heads, as [B, seq, heads * head]; optional mask, past key and
 * past value. Outputs Y, present key, present value, and QK^T.
 */
static int
attn_dims(mkc_graph *g, mkc_node *n, const mkc_tensor *t, const char *heads_attr,
	  mkc_dim out[4])
{
	if (t->rank == 4) {
		memcpy(out, t->shape, 4 * sizeof(mkc_dim));
		return 0;
	}
	int64_t h = mkc_node_attr_int(n, heads_attr, 0);
	if (t->rank != 3 || h <= 0)
		return mkc_node_error(g, n, "'%s' must be 4-D, or 3-D with %s set", t->name, heads_attr);
	mkc_dim hd;
	if (!mkc_dim_div(t->shape[2], mkc_dim_const(h), &hd) || !mkc_dim_is_const(hd) ||
	    hd.c * h != t->shape[2].c)
		return mkc_node_error(g, n, "'%s' hidden size does not divide by %s", t->name, heads_attr);
	out[0] = t->shape[0];
	out[1] = mkc_dim_const(h);
	out[2] = t->shape[1];
	out[3] = hd;
	return 0;
}

static int
infer_attention(mkc_graph *g, mkc_node *n)
{
	mkc_dim q[4], k[4], v[4];
	if (attn_dims(g, n, n->in[0], "q_num_heads", q) ||
	    attn_dims(g, n, n->in[1], "kv_num_heads", k) ||
	    attn_dims(g, n, n->in[2], "kv_num_heads", v))
		return -1;
	char b1[64], b2[64];
	if (!mkc_dim_is_const(q[1]) || !mkc_dim_is_const(k[1]) || k[1].c == 0 ||
	    q[1].c % k[1].c)
		return mkc_node_error(g, n, "query heads %s are not a multiple of key/value heads %s",
				      dstr(g, q[1], b1), dstr(g, k[1], b2));
	if (check_inner(g, n, q[3], k[3]) != 0)
		return -1;
	if (!mkc_dim_eq(k[2], v[2]) || !mkc_dim_eq(k[1], v[1]))
		return mkc_node_error(g, n, "K and V differ in heads or length");
	if (!mkc_dim_eq(q[0], k[0]) || !mkc_dim_eq(q[0], v[0]))
		return mkc_node_error(g, n, "Q, K and V differ in batch");
	mkc_dim total = k[2];
	const mkc_tensor *pk = n->nin > 4 ? n->in[4] : NULL, *pv = n->nin > 5 ? n->in[5] : NULL;
	if (pk || pv) {
		/* the present outputs are past then new: the same batch, heads and sizes */
		const mkc_dim *want[2] = {k, v};
		for (int i = 0; i < 2; i++) {
			const mkc_tensor *p = i ? pv : pk;
			if (!p || p->rank != 4 || !mkc_dim_eq(p->shape[0], want[i][0]) ||
			    !mkc_dim_eq(p->shape[1], want[i][1]) || !mkc_dim_eq(p->shape[3], want[i][3]) ||
			    !mkc_dim_eq(p->shape[2], pk ? pk->shape[2] : pv->shape[2]))
				return mkc_node_error(g, n, "past_key and past_value must both be [batch, "
						      "kv_heads, past, head_size] of key and value");
		}
		if (!mkc_dim_add(pk->shape[2], k[2], &total))
			return mkc_node_error(g, n, "past and new lengths mix two symbols");
	}
	const mkc_tensor *mask = n->nin > 3 ? n->in[3] : NULL;
	if (mask) {
		/* broadcast to [batch, heads, sequence, total]: each dimension that or 1 */
		mkc_dim full[4] = {q[0], q[1], q[2], total};
		bool ok = mask->rank <= 4;
		for (int i = 0; ok && i < mask->rank; i++) {
			mkc_dim d = mask->shape[mask->rank - 1 - i];
			ok = mkc_dim_eq(d, full[3 - i]) || mkc_dim_eq(d, mkc_dim_const(1));
		}
		if (!ok) {
			char ms[256], ds[4][64];
			return mkc_node_error(g, n, "the mask %s must broadcast to [batch, heads, "
					      "sequence, total length], [%s,%s,%s,%s]",
					      mkc_shape_str(g, mask, ms, sizeof ms), dstr(g, full[0], ds[0]),
					      dstr(g, full[1], ds[1]), dstr(g, full[2], ds[2]),
					      dstr(g, full[3], ds[3]));
		}
	}
	mkc_dtype dt = n->in[0]->dtype;
	if (n->in[0]->rank == 4) {
		mkc_dim y[4] = {q[0], q[1], q[2], v[3]};
		set_out(n, 0, dt, 4, y);
	} else {
		mkc_dim y[3], hv;
		mkc_dim_mul(q[1], v[3], &hv);
		y[0] = q[0];
		y[1] = q[2];
		y[2] = hv;
		set_out(n, 0, dt, 3, y);
	}
	mkc_dim pkey[4] = {k[0], k[1], total, k[3]};
	mkc_dim pval[4] = {v[0], v[1], total, v[3]};
	mkc_dim qk[4] = {q[0], q[1], q[2], total};
	if (n->nout > 1)
		set_out(n, 1, n->in[1]->dtype, 4, pkey);
	if (n->nout > 2)
		set_out(n, 2, n->in[2]->dtype, 4, pval);
	if (n->nout > 3)
		set_out(n, 3, dt, 4, qk);
	return 0;
}

/*
 * MultiHeadAttention (com.microsoft), as onnxruntime-genai's fp16 CPU export
 * writes it: query [B, S, N * H]; key and value [B, N, L, H] (or [B, L, N *
 * H]); attention_bias (input 5) added to the scaled scores, broadcast to
 * [B, N, S, L]; past_key and past_value (inputs 6, 7) [B, N, P, H] with the
 * present outputs. That is ONNX Attention (opset 23) with q_num_heads =
 * kv_num_heads = num_heads and MultiHeadAttention's scale (0 or none:
 * 1 / sqrt(H) in both): the node becomes that Attention here and is
 * inferred as one, so every later pass (canon's grouped heads, the
 * caches as state) takes it as it takes an exporter's Attention. Refused:
 * packed query/key/value (no key and value, or 5-D), the bias added to
 * q, k and v (input 3), key_padding_mask (input 4), inputs past 7 and the
 * fourth output, and unidirectional (its causal rule with a past is not
 * Attention's is_causal).
 */
static int
infer_mha(mkc_graph *g, mkc_node *n)
{
	int64_t heads = mkc_node_attr_int(n, "num_heads", 0);
	if (heads <= 0)
		return mkc_node_error(g, n, "num_heads must be positive");
	if (!n->in[1] || !n->in[2] || n->in[1]->rank == 5)
		return mkc_node_error(g, n, "packed query, key and value are not supported");
	if ((n->nin > 3 && n->in[3]) || (n->nin > 4 && n->in[4]))
		return mkc_node_error(g, n, "the bias of q, k and v (input 3) and key_padding_mask "
				      "(input 4) are not supported");
	for (int i = 8; i < n->nin; i++)
		if (n->in[i])
			return mkc_node_error(g, n, "input %d (past_sequence_length, cache_indirection) "
					      "is not supported", i);
	if ((n->nout > 3 && n->out[3]) || mkc_node_attr_int(n, "unidirectional", 0))
		return mkc_node_error(g, n, "unidirectional and the fourth output are not supported");
	mkc_tensor **in = mkc_arena_alloc(g->ctx->arena, sizeof *in * 6);
	for (int i = 0; i < 3; i++)
		in[i] = n->in[i];
	for (int i = 5; i < 8; i++)   /* attention_bias, past_key, past_value */
		in[i - 2] = i < n->nin ? n->in[i] : NULL;
	int nin = in[4] || in[5] ? 6 : in[3] ? 4 : 3;
	const mkc_attr *sc = mkc_node_attr(n, "scale");
	const float scale = sc ? sc->f : 0;
	n->in = in;
	n->nin = nin;
	n->nattr = 0;
	n->op = MKC_OP_ATTENTION;
	n->op_type = mkc_op_info_of(MKC_OP_ATTENTION)->name;
	n->domain = "";
	mkc_node_add_attr(g, n, (mkc_attr){.name = "q_num_heads", .type = MKC_AT_INT, .i = heads});
	mkc_node_add_attr(g, n, (mkc_attr){.name = "kv_num_heads", .type = MKC_AT_INT, .i = heads});
	if (scale != 0)
		mkc_node_add_attr(g, n, (mkc_attr){.name = "scale", .type = MKC_AT_FLOAT, .f = scale});
	return infer_attention(g, n);
}

/*
 * The output declarations infer_node holds for the node being inferred:
 * a rule that binds a symbol (bind_sym) binds it there too.
 */
static mkc_tensor *declared_now;
static int ndeclared_now;

/*
 * Symbol s of the model becomes by everywhere (an export that names a
 * dimension the graph fixes or computes: onnxruntime-genai's kv_cache_dim
 * is the head size, its total_sequence_length past + new). *d, a
 * dimension of the caller's, is rewritten too. Says so with -v.
 */
static int
bind_sym(mkc_graph *g, const mkc_node *n, int s, mkc_dim by, mkc_dim *d)
{
	char b1[64], b2[64];
	snprintf(b1, sizeof b1, "%s", MKC_SYM(g, s));
	dstr(g, by, b2);
	if (!mkc_graph_subst_sym(g, s, by, false))
		return mkc_node_error(g, n, "the symbol '%s' is %s here, which some dimension cannot "
				      "take (more than %d symbols in one dimension)", b1, b2,
				      MKC_DIM_TERMS);
	for (int i = 0; i < ndeclared_now; i++)
		for (int k = 0; k < declared_now[i].rank; k++) {
			bool ok = mkc_dim_subst(&declared_now[i].shape[k], s, by, false);
			MKC_ASSERT(ok);
		}
	if (d) {
		bool ok = mkc_dim_subst(d, s, by, false);
		MKC_ASSERT(ok);
	}
	mkc_progress(g->ctx, "%s: the symbol '%s' is %s (node '%s')", g->path, b1, b2, n->name);
	return 0;
}

/*
 * GroupQueryAttention (com.microsoft), as onnxruntime-genai exports use it:
 * query, key, value [B, S, heads * D], or the three packed in the query
 * [B, S, (heads + 2 kv_heads) * D] with no key and value (the builder's
 * default; canon splits it); past_key/value [B, kv_heads, P, D]; seqlens_k
 * [B] (int32, the last valid position); total_sequence_length (int32
 * scalar); cos_cache, sin_cache with do_rotary. Output [B, S, heads * D],
 * present_key/value [B, kv_heads, P + S, D]. A past whose head size is a
 * symbol of its own binds it to D; a present declared with a symbol of its
 * own for P + S binds it to P + S. What mkc reads is a cache that is not
 * padded and not shared with the past (present is past with the new
 * positions after it); the forms it does not compute are refused here.
 */
static int
infer_gqa(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *q = n->in[0], *k = n->nin > 1 ? n->in[1] : NULL;
	const mkc_tensor *v = n->nin > 2 ? n->in[2] : NULL;
	const mkc_tensor *pk = n->nin > 3 ? n->in[3] : NULL, *pv = n->nin > 4 ? n->in[4] : NULL;
	int64_t hq = mkc_node_attr_int(n, "num_heads", 0), hk = mkc_node_attr_int(n, "kv_num_heads", 0);
	if (hq <= 0 || hk <= 0 || hq % hk)
		return mkc_node_error(g, n, "num_heads %lld must be a positive multiple of kv_num_heads %lld",
				      (long long)hq, (long long)hk);
	if (!k != !v)
		return mkc_node_error(g, n, "key and value must both be given, or neither (packed QKV)");
	if (mkc_node_attr_int(n, "local_window_size", -1) != -1 ||
	    mkc_node_attr_int(n, "smooth_softmax", 0) || mkc_node_attr_int(n, "qk_output", 0) ||
	    (n->nout > 3 && n->out[3]))
		return mkc_node_error(g, n, "local_window_size, smooth_softmax and qk_output are not "
				      "supported");
	for (int i = 9; i < n->nin && i < 14; i++)
		if (n->in[i])
			return mkc_node_error(g, n, "input %d (position_ids, attention_bias, head_sink, "
					      "k_scale, v_scale) is not supported", i);
	/* the q/k norms' scales (inputs 14, 15), which passes/gqa.c takes out of the node */
	const mkc_tensor *qn = n->nin > 14 ? n->in[14] : NULL, *kn = n->nin > 15 ? n->in[15] : NULL;
	if (!qn != !kn || ((qn || kn) && !mkc_node_attr(n, "qk_norm_epsilon")))
		return mkc_node_error(g, n, "q_norm_weight and k_norm_weight (inputs 14 and 15) come "
				      "together, with the attribute qk_norm_epsilon");
	if (mkc_node_attr_int(n, "do_rotary", 0) && (n->nin < 9 || !n->in[7] || !n->in[8]))
		return mkc_node_error(g, n, "do_rotary = 1 needs cos_cache and sin_cache");
	int64_t width = hq + (k ? 0 : 2 * hk);   /* heads in the query's last axis */
	if (q->rank != 3 || !mkc_dim_is_const(q->shape[2]) || q->shape[2].c % width)
		return mkc_node_error(g, n, "the query must be [batch, sequence, %s * head_size]",
				      k ? "num_heads" : "(num_heads + 2 kv_num_heads)");
	mkc_dim d = mkc_dim_const(q->shape[2].c / width), total = q->shape[1];
	if (k && (k->rank != 3 || v->rank != 3 || !mkc_dim_eq(k->shape[2], mkc_dim_const(hk * d.c)) ||
		  !mkc_dim_eq(k->shape[2], v->shape[2]) || !mkc_dim_eq(q->shape[1], k->shape[1]) ||
		  !mkc_dim_eq(q->shape[1], v->shape[1])))
		return mkc_node_error(g, n, "key and value must be [batch, sequence, kv_num_heads * "
				      "head_size] with the query's head_size (%lld) and sequence",
				      (long long)d.c);
	for (int i = 0; qn && i < 2; i++) {
		const mkc_tensor *w = i ? kn : qn;
		if (w->rank != 1 || !mkc_dim_eq(w->shape[0], d))
			return mkc_node_error(g, n, "%s '%s' must be [head_size], [%lld]", i ?
					      "k_norm_weight" : "q_norm_weight", w->name, (long long)d.c);
	}
	if (pk || pv) {
		static const char *const axis[4] = {"batch", "kv_num_heads", "past", "head_size"};
		mkc_dim want[4] = {q->shape[0], mkc_dim_const(hk), pk ? pk->shape[2] : pv->shape[2], d};
		for (int i = 0; i < 2; i++) {
			const mkc_tensor *p = i ? pv : pk;
			if (!p || p->rank != 4)
				return mkc_node_error(g, n, "past_key and past_value must both be given, "
						      "[batch, kv_num_heads, past, head_size]");
			/* a symbol of its own: not the batch's, the past's or the step's */
			int s = mkc_dim_bare_sym(p->shape[3]);
			if (s >= 0 && !mkc_dim_uses(want[0], s, NULL) && !mkc_dim_uses(want[2], s, NULL) &&
			    !mkc_dim_uses(q->shape[1], s, NULL) && bind_sym(g, n, s, d, &want[2]) != 0)
				return -1;
			for (int a = 1; a < 4; a++)
				if (!mkc_dim_eq(p->shape[a], want[a])) {
					char b1[64], b2[64];
					return mkc_node_error(g, n, "%s '%s': axis %d (%s) is %s where %s", i ?
							      "past_value" : "past_key", p->name, a,
							      axis[a], dstr(g, p->shape[a], b1),
							      dstr(g, want[a], b2));
				}
		}
		if (!mkc_dim_add(want[2], q->shape[1], &total))
			return mkc_node_error(g, n, "past and new lengths cannot be added");
	}
	/* a present declared [..., T, ...] with T a symbol of its own: T = P + S */
	for (int i = 1; i < 3 && i < n->nout; i++) {
		const mkc_tensor *o = n->out[i];
		int s = o && o->kind == MKC_TK_OUTPUT && o->rank == 4 ? mkc_dim_bare_sym(o->shape[2]) : -1;
		if (s >= 0 && !mkc_dim_eq(o->shape[2], total) && !mkc_dim_uses(total, s, NULL) &&
		    bind_sym(g, n, s, total, &total) != 0)
			return -1;
	}
	set_out(n, 0, q->dtype, 3, (mkc_dim[]){q->shape[0], q->shape[1], mkc_dim_const(hq * d.c)});
	mkc_dim present[4] = {q->shape[0], mkc_dim_const(hk), total, d};
	for (int i = 1; i < 3 && i < n->nout; i++)
		set_out(n, i, q->dtype, 4, present);
	return 0;
}

static infer_fn *const rules[MKC_OP_COUNT] = {
#define OP(e, nm, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) [MKC_OP_##e] = inf,
#include "ops.def"
#undef OP
};

/* Declared output shapes must agree with inferred ones where both are known. */
static int
check_declared(mkc_graph *g, mkc_tensor *t, const mkc_tensor *decl)
{
	if (decl->rank < 0)
		return 0;
	char b1[256], b2[256];
	if (decl->rank != t->rank)
		goto bad;
	for (int i = 0; i < t->rank; i++)
		if (!mkc_dim_is_unknown(decl->shape[i]) && !mkc_dim_eq(decl->shape[i], t->shape[i]))
			goto bad;
	if (decl->dtype && decl->dtype != t->dtype)
		return mkc_error(g->ctx, "%s: output '%s' is declared %s but computed as %s",
				 g->path, t->name, mkc_dtype_name(decl->dtype),
				 mkc_dtype_name(t->dtype));
	return 0;
bad:
	return mkc_error(g->ctx, "%s: output '%s' is declared %s but computed as %s",
			 g->path, t->name, mkc_shape_str(g, decl, b1, sizeof b1),
			 mkc_shape_str(g, t, b2, sizeof b2));
}

/*
 * Every shape is a size: no dimension negative or shrinking as its symbol
 * grows, and the constant part of the element count within MKC_MAX_BYTES.
 * Checked for the graph inputs and after every op's rule, so that no
 * rule's arithmetic (or a model's numbers) reaches the planner as a
 * negative or wrapped size. n is NULL for a graph input.
 */
static int
check_shape(mkc_graph *g, const mkc_node *n, const mkc_tensor *t)
{
	int64_t bytes = (int64_t)(mkc_dtype_size(t->dtype) ? mkc_dtype_size(t->dtype) : 1);
	for (int d = 0; d < t->rank; d++) {
		mkc_dim x = t->shape[d];
		const char *why = NULL;
		if (mkc_dim_negative(x))
			why = "is negative";
		else if (!mkc_mul_ok(bytes, mkc_dim_is_const(x) ? x.c : 1, &bytes) ||
			 bytes > MKC_MAX_BYTES || x.k[0] > MKC_MAX_BYTES || x.k[1] > MKC_MAX_BYTES ||
			 x.c > MKC_MAX_BYTES)
			why = "makes it larger than 2^48 bytes";
		if (!why)
			continue;
		char b[64];
		if (!n)
			return mkc_error(g->ctx, "%s: input '%s': dimension %d (%s) %s", g->path, t->name,
					 d, dstr(g, x, b), why);
		return mkc_node_error(g, n, "output '%s': dimension %d (%s) %s", t->name, d,
				      dstr(g, x, b), why);
	}
	return 0;
}

int
mkc_infer_node(mkc_graph *g, mkc_node *n)
{
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && n->in[i]->rank < 0)
			return mkc_node_error(g, n, "input '%s' has no known shape", n->in[i]->name);
	mkc_tensor declared[4];
	int ndecl = 0;
	for (int i = 0; i < n->nout && ndecl < 4; i++)
		if (n->out[i] && n->out[i]->kind == MKC_TK_OUTPUT)
			declared[ndecl++] = *n->out[i];
	declared_now = declared;
	ndeclared_now = ndecl;
	int rc = rules[n->op](g, n);
	declared_now = NULL;
	ndeclared_now = 0;
	if (rc != 0)
		return -1;
	/* folding first: a float Range learns its length only there */
	int folded = mkc_fold_node(g, n);
	if (folded < 0)
		return -1;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] && check_shape(g, n, n->out[i]) != 0)
			return -1;
	for (int i = 0, d = 0; i < n->nout && d < ndecl; i++)
		if (n->out[i] && n->out[i]->kind == MKC_TK_OUTPUT)
			if (check_declared(g, n->out[i], &declared[d++]) != 0)
				return -1;
	if (folded) {
		n->dead = true;
		for (int i = 0; i < n->nout; i++)
			if (n->out[i] && n->out[i]->kind == MKC_TK_OUTPUT)
				n->dead = false;   /* a graph output must still be written */
	}
	return 0;
}

/* See passes.h. */
mkc_tensor *
mkc_infer_add(mkc_graph *g, mkc_node *at, const char *what, const char *op_type, int nin,
	      mkc_tensor *const *in, int nattr, const mkc_attr *attr, mkc_tensor *out)
{
	mkc_arena *a = g->ctx->arena;
	mkc_node *n = mkc_graph_add_node(g, mkc_arena_printf(a, "%s/%s", at->name, what), "",
					 op_type, nin, 1, nattr);
	memcpy(n->in, in, (size_t)nin * sizeof *in);
	if (nattr)
		memcpy(n->attr, attr, (size_t)nattr * sizeof *attr);
	if (!out)
		out = mkc_graph_tensor(g, mkc_graph_fresh_name(g, at->name, what));
	out->producer = n;
	n->out[0] = out;
	mkc_node_count_reads(n, 1);
	mkc_graph_move_before(g, n, at);
	return mkc_infer_node(g, n) == 0 ? out : NULL;
}

int
mkc_pass_infer(mkc_graph *g)
{
	int bad = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->op == MKC_OP_UNKNOWN) {
			mkc_node_error(g, n, "op %s%s%s is not supported",
				       *n->domain ? n->domain : "", *n->domain ? "." : "",
				       n->op_type);
			bad++;
		}
	}
	if (bad)
		return -1;
	for (int i = 0; i < g->inputs.n; i++)
		if (check_shape(g, NULL, MKC_INPUT(g, i)) != 0)
			return -1;
	for (int i = 0; i < g->nodes.n; i++)
		if (mkc_infer_node(g, MKC_NODE(g, i)) != 0)
			return -1;
	return 0;
}
