/*
 * fold.c - the constant evaluator that shape inference calls on every node
 * (mkc_fold_node), one function per row of ops.def's fold column.
 *
 * Values are held in one of two forms while folding:
 *   - integers and bools as mkc_dim, so that shape arithmetic can carry
 *     symbols: Shape(past_key)[2] + 1 is the value past_len + 1;
 *   - floats as double, rounded to the tensor's dtype when stored.
 * A folded integer tensor keeps its values in symval; when none of them is
 * symbolic it also gets plain bytes. A symbolic integer tensor that a live
 * node still reads is computed from the symbols at run time by the backend.
 *
 * Only tensors of at most MKC_FOLD_MAX elements with constant shapes are
 * folded; anything else stays a run-time node. Integer arithmetic that would
 * need a product of two symbols is left to run time too (0, not an error).
 */
#include "passes.h"
#include "numeric.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* what Max, Min, Relu and the integer powers do to a value, as the emitted code does */
#include "../backends/c/scalar.h"

typedef struct {
	bool isint;
	int64_t n;
	mkc_dim *iv;
	double *fv;
} vals;

static bool
is_int_type(mkc_dtype t)
{
	return !mkc_dtype_is_float(t);
}

/* Reads a constant tensor; false when it is not known or too big. */
static bool
load(mkc_graph *g, const mkc_tensor *t, vals *v)
{
	if (!t || !mkc_tensor_is_const(t))
		return false;
	int64_t n = mkc_tensor_numel(t);
	if (n < 0 || n > MKC_FOLD_MAX)
		return false;
	mkc_arena *a = g->ctx->arena;
	v->n = n;
	v->isint = is_int_type(t->dtype);
	if (t->symval) {
		v->iv = t->symval;
		return true;
	}
	if (n && !t->data)
		return false;
	if (v->isint) {
		v->iv = mkc_arena_alloc(a, (size_t)(n + 1) * sizeof *v->iv);
		for (int64_t i = 0; i < n; i++)
			v->iv[i] = mkc_dim_const(mkc_load_int(t->dtype, t->data, i));
	} else {
		v->fv = mkc_arena_alloc(a, (size_t)(n + 1) * sizeof *v->fv);
		for (int64_t i = 0; i < n; i++)
			v->fv[i] = mkc_load_double(t->dtype, t->data, i);
	}
	return true;
}

/* Integer values as doubles: only when none is symbolic. */
static bool
as_doubles(mkc_graph *g, vals *v)
{
	if (!v->isint)
		return true;
	v->fv = mkc_arena_alloc(g->ctx->arena, (size_t)(v->n + 1) * sizeof *v->fv);
	for (int64_t i = 0; i < v->n; i++) {
		if (!mkc_dim_is_const(v->iv[i]))
			return false;
		v->fv[i] = (double)v->iv[i].c;
	}
	v->isint = false;
	return true;
}

static bool
as_ints(mkc_graph *g, vals *v)
{
	if (v->isint)
		return true;
	v->iv = mkc_arena_alloc(g->ctx->arena, (size_t)(v->n + 1) * sizeof *v->iv);
	for (int64_t i = 0; i < v->n; i++) {
		/* truncates, as Cast does; a value int64 cannot hold (NaN, 1e30)
		 * has no defined conversion: left to run time */
		if (!(v->fv[i] > -9223372036854775808.0 && v->fv[i] < 9223372036854775808.0))
			return false;
		v->iv[i] = mkc_dim_const((int64_t)v->fv[i]);
	}
	v->isint = true;
	return true;
}

static vals
out_vals(mkc_graph *g, int64_t n, bool isint)
{
	vals v = {isint, n, NULL, NULL};
	if (isint)
		v.iv = mkc_arena_alloc(g->ctx->arena, (size_t)(n + 1) * sizeof *v.iv);
	else
		v.fv = mkc_arena_alloc(g->ctx->arena, (size_t)(n + 1) * sizeof *v.fv);
	return v;
}

/* The element count of output i, or -1 when it is not small and constant. */
static int64_t
out_numel(const mkc_node *n, int i)
{
	const mkc_tensor *t = n->out[i];
	int64_t c = t ? mkc_tensor_numel(t) : -1;
	return c <= MKC_FOLD_MAX ? c : -1;
}

/* Stores v as the value of output i (converted to its dtype). */
static int
store(mkc_graph *g, mkc_node *n, int i, vals *v)
{
	mkc_tensor *t = n->out[i];
	if (!t)
		return 1;
	mkc_arena *a = g->ctx->arena;
	MKC_ASSERT(v->n == mkc_tensor_numel(t));
	if (is_int_type(t->dtype)) {
		/* a float is true when it is not zero (NaN too), not once truncated */
		if (t->dtype == MKC_DT_BOOL && !v->isint)
			for (int64_t k = 0; k < v->n; k++)
				v->fv[k] = v->fv[k] != 0;
		if (!as_ints(g, v))
			return 0;
		bool plain = true;
		for (int64_t k = 0; k < v->n; k++) {
			if (t->dtype == MKC_DT_BOOL && mkc_dim_is_const(v->iv[k]))
				v->iv[k].c = v->iv[k].c != 0;
			plain &= mkc_dim_is_const(v->iv[k]);
		}
		t->symval = v->iv;
		t->nsymval = v->n;
		if (plain) {
			void *d = mkc_arena_alloc(a, (size_t)v->n * mkc_dtype_size(t->dtype) + 1);
			for (int64_t k = 0; k < v->n; k++)
				mkc_store_int(t->dtype, d, k, v->iv[k].c);
			t->data = d;
		}
	} else {
		if (!as_doubles(g, v))
			return 0;
		void *d = mkc_arena_alloc(a, (size_t)v->n * mkc_dtype_size(t->dtype) + 1);
		for (int64_t k = 0; k < v->n; k++)
			mkc_store_double(t->dtype, d, k, v->fv[k]);
		t->data = d;
	}
	t->nbytes = (size_t)v->n * mkc_dtype_size(t->dtype);
	if (t->kind != MKC_TK_OUTPUT)
		t->kind = MKC_TK_WEIGHT;
	return 1;
}

/* Index into a broadcast input for a flat index of the output. */
static int64_t
bcast_index(const mkc_tensor *out, const mkc_tensor *in, int64_t flat)
{
	int64_t idx = 0, stride = 1;
	for (int d = out->rank - 1, e = in->rank - 1; d >= 0; d--, e--) {
		int64_t od = out->shape[d].c, c = flat % od;
		flat /= od;
		if (e >= 0) {
			int64_t id = in->shape[e].c;
			if (id != 1)
				idx += c * stride;
			stride *= id;
		}
	}
	return idx;
}

/* Elementwise, one input. */

static bool
unary_int(mkc_op op, mkc_dim x, mkc_dim *r)
{
	switch (op) {
	case MKC_OP_IDENTITY:
	case MKC_OP_CAST:
	case MKC_OP_CASTLIKE:
		*r = x;
		return true;
	case MKC_OP_NEG:
		return mkc_dim_mul(x, mkc_dim_const(-1), r);
	default:
		break;
	}
	if (!mkc_dim_is_const(x))
		return false;
	int64_t v = x.c;
	switch (op) {
	case MKC_OP_ABS:
		if (v == INT64_MIN)
			return false;   /* |INT64_MIN| does not fit */
		*r = mkc_dim_const(v < 0 ? -v : v);
		return true;
	case MKC_OP_NOT: *r = mkc_dim_const(!v); return true;
	case MKC_OP_RELU: *r = mkc_dim_const(v < 0 ? 0 : v); return true;
	default: return false;
	}
}

static double
unary_float(mkc_op op, double x)
{
	switch (op) {
	case MKC_OP_NEG: return -x;
	case MKC_OP_ABS: return fabs(x);
	case MKC_OP_SQRT: return sqrt(x);
	case MKC_OP_RECIPROCAL: return 1.0 / x;
	case MKC_OP_EXP: return exp(x);
	case MKC_OP_LOG: return log(x);
	case MKC_OP_SIN: return sin(x);
	case MKC_OP_COS: return cos(x);
	case MKC_OP_TANH: return tanh(x);
	case MKC_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case MKC_OP_RELU: return mkc_rt_fmax(x, 0);
	case MKC_OP_ERF: return erf(x);
	case MKC_OP_FLOOR: return floor(x);
	case MKC_OP_CEIL: return ceil(x);
	case MKC_OP_ISNAN: return isnan(x);
	case MKC_OP_NOT: return x == 0;
	default: return x;   /* Identity, Cast, CastLike */
	}
}

static int
fold_unary(mkc_graph *g, mkc_node *n)
{
	vals x;
	int64_t cnt = out_numel(n, 0);
	if (cnt < 0 || !load(g, n->in[0], &x))
		return 0;
	bool int_out = is_int_type(n->out[0]->dtype) && n->op != MKC_OP_ISNAN;
	if (x.isint && int_out) {
		vals r = out_vals(g, cnt, true);
		for (int64_t i = 0; i < cnt; i++)
			if (!unary_int(n->op, x.iv[i], &r.iv[i]))
				return 0;
		return store(g, n, 0, &r);
	}
	if (!as_doubles(g, &x))
		return 0;
	vals r = out_vals(g, cnt, false);
	for (int64_t i = 0; i < cnt; i++)
		r.fv[i] = unary_float(n->op, x.fv[i]);
	return store(g, n, 0, &r);
}

/* Elementwise, two inputs. */

/*
 * Whether a^b fits in int64, so that mkc_rt_ipow does not wrap: a base of
 * magnitude 2 or more overflows within 63 factors, so the loop is short.
 */
static bool
pow_fits(int64_t a, int64_t b)
{
	if (b < 0 || a == 0 || a == 1 || a == -1)
		return true;
	int64_t p = 1;
	for (int64_t k = 0; k < b; k++)
		if (!mkc_mul_ok(p, a, &p))
			return false;
	return true;
}

/*
 * The sign of d where its form alone decides it, else 0: a symbol is a
 * length (0 or more), so c plus symbols by factors all 0 or more is at
 * least c, and with factors all 0 or less at most c. An export's "a -1 in
 * this shape means 1" (Where(Equal(shape, -1), 1, shape), onnxruntime-genai's
 * mask) compares a length with -1.
 */
static int
dim_sign(mkc_dim d)
{
	bool up = true, down = true;
	for (int i = 0; i < MKC_DIM_TERMS; i++) {
		if (d.sym[i] == MKC_DIM_UNKNOWN)
			return 0;
		up = up && d.k[i] >= 0;
		down = down && d.k[i] <= 0;
	}
	return up && d.c > 0 ? 1 : down && d.c < 0 ? -1 : 0;
}

/*
 * One integer result: 1, 0 when it is not known at compile time (a product
 * of two symbols), -1 when it does not fit in int64 (an error: the same
 * arithmetic at run time would be undefined).
 */
static int
binary_int(mkc_op op, mkc_dim a, mkc_dim b, mkc_dim *r)
{
	mkc_dim d;
	bool sub = mkc_dim_sub(a, b, &d), known = sub && mkc_dim_is_const(d);
	bool consts = mkc_dim_is_const(a) && mkc_dim_is_const(b);
	if (!known && sub && dim_sign(d) != 0) {
		/* a - b's sign, not its value: comparisons only */
		known = op == MKC_OP_EQUAL || op == MKC_OP_LESS || op == MKC_OP_LESS_EQUAL ||
			op == MKC_OP_GREATER || op == MKC_OP_GREATER_EQUAL;
		if (known)
			d = mkc_dim_const(dim_sign(d));
	}
	int64_t x;
	switch (op) {
	case MKC_OP_ADD:
	case MKC_OP_SUB:
	case MKC_OP_MUL:
		if (consts) {
			bool ok = op == MKC_OP_ADD ? mkc_add_ok(a.c, b.c, &x)
				: op == MKC_OP_SUB ? mkc_sub_ok(a.c, b.c, &x)
						   : mkc_mul_ok(a.c, b.c, &x);
			*r = mkc_dim_const(x);
			return ok ? 1 : -1;
		}
		return op == MKC_OP_ADD ? mkc_dim_add(a, b, r)
		       : op == MKC_OP_SUB ? mkc_dim_sub(a, b, r) : mkc_dim_mul(a, b, r);
	case MKC_OP_DIV:
		if (consts) {
			if (b.c == 0)
				return 0;
			if (a.c == INT64_MIN && b.c == -1)
				return -1;
			*r = mkc_dim_const(a.c / b.c);   /* C truncation, as onnxruntime */
			return 1;
		}
		return mkc_dim_div(a, b, r) && mkc_dim_mul(*r, b, &d) && mkc_dim_eq(d, a);
	case MKC_OP_MAX: *r = known && d.c < 0 ? b : a; return known;
	case MKC_OP_MIN: *r = known && d.c > 0 ? b : a; return known;
	case MKC_OP_EQUAL: *r = mkc_dim_const(known && d.c == 0); return known;
	case MKC_OP_LESS: *r = mkc_dim_const(known && d.c < 0); return known;
	case MKC_OP_LESS_EQUAL: *r = mkc_dim_const(known && d.c <= 0); return known;
	case MKC_OP_GREATER: *r = mkc_dim_const(known && d.c > 0); return known;
	case MKC_OP_GREATER_EQUAL: *r = mkc_dim_const(known && d.c >= 0); return known;
	default: break;
	}
	if (!consts)
		return 0;
	switch (op) {
	case MKC_OP_AND: *r = mkc_dim_const(a.c && b.c); return 1;
	case MKC_OP_OR: *r = mkc_dim_const(a.c || b.c); return 1;
	case MKC_OP_POW:
		if (!pow_fits(a.c, b.c))
			return -1;
		*r = mkc_dim_const(mkc_rt_ipow(a.c, b.c));
		return 1;
	default: return 0;
	}
}

static double
binary_float(mkc_op op, double a, double b)
{
	switch (op) {
	case MKC_OP_ADD: return a + b;
	case MKC_OP_SUB: return a - b;
	case MKC_OP_MUL: return a * b;
	case MKC_OP_DIV: return a / b;
	case MKC_OP_POW: return pow(a, b);
	case MKC_OP_MAX: return mkc_rt_fmax(a, b);
	case MKC_OP_MIN: return mkc_rt_fmin(a, b);
	case MKC_OP_EQUAL: return a == b;
	case MKC_OP_LESS: return a < b;
	case MKC_OP_LESS_EQUAL: return a <= b;
	case MKC_OP_GREATER: return a > b;
	case MKC_OP_GREATER_EQUAL: return a >= b;
	case MKC_OP_AND: return a != 0 && b != 0;
	case MKC_OP_OR: return a != 0 || b != 0;
	default: MKC_ASSERT(!"not a binary op"); return 0;
	}
}

/* Folds inputs pairwise, left to right (Max and Min take any number). */
static int
fold_binary(mkc_graph *g, mkc_node *n)
{
	int64_t cnt = out_numel(n, 0);
	if (cnt < 0)
		return 0;
	vals acc;
	if (!load(g, n->in[0], &acc))
		return 0;
	const mkc_tensor *acc_t = n->in[0];
	mkc_tensor shape = *n->out[0];   /* the broadcast result shape */
	for (int k = 1; k < n->nin; k++) {
		vals b;
		if (!load(g, n->in[k], &b))
			return 0;
		bool ints = acc.isint && b.isint;
		/* Pow of an integer base to a float power: an integer, the base's type */
		bool ipowf = n->op == MKC_OP_POW && acc.isint && !b.isint;
		if (!ints && (!as_doubles(g, &acc) || !as_doubles(g, &b)))
			return 0;
		vals r = out_vals(g, cnt, ints || ipowf);
		for (int64_t i = 0; i < cnt; i++) {
			int64_t ia = bcast_index(&shape, acc_t, i);
			int64_t ib = bcast_index(&shape, n->in[k], i);
			if (ints) {
				int ok = binary_int(n->op, acc.iv[ia], b.iv[ib], &r.iv[i]);
				if (ok < 0)
					return mkc_node_error(g, n, "the integer result of element %lld "
							      "does not fit in int64", (long long)i);
				if (!ok)
					return 0;
			} else if (ipowf) {
				/* as_doubles kept the base's integers, and found them constant */
				r.iv[i] = mkc_dim_const(mkc_rt_ipowf(acc.iv[ia].c, b.fv[ib]));
			} else {
				r.fv[i] = binary_float(n->op, acc.fv[ia], b.fv[ib]);
			}
		}
		acc = r;
		acc_t = &shape;
	}
	return store(g, n, 0, &acc);
}

static int
fold_where(mkc_graph *g, mkc_node *n)
{
	int64_t cnt = out_numel(n, 0);
	vals c, x, y;
	if (cnt < 0 || !load(g, n->in[0], &c) || !load(g, n->in[1], &x) ||
	    !load(g, n->in[2], &y) || !as_doubles(g, &c))
		return 0;
	bool ints = x.isint && y.isint;
	vals r = out_vals(g, cnt, ints);
	for (int64_t i = 0; i < cnt; i++) {
		bool pick = c.fv[bcast_index(n->out[0], n->in[0], i)] != 0;
		const vals *s = pick ? &x : &y;
		int64_t j = bcast_index(n->out[0], n->in[pick ? 1 : 2], i);
		if (ints)
			r.iv[i] = s->iv[j];
		else
			r.fv[i] = s->fv[j];
	}
	return store(g, n, 0, &r);
}

/* Data movement and shape arithmetic. */

static int
fold_constant(mkc_graph *g, mkc_node *n)
{
	const mkc_attr *a = &n->attr[0];
	mkc_tensor *t = n->out[0];
	if (a->type == MKC_AT_TENSOR) {
		t->data = a->t->data;
		t->nbytes = a->t->nbytes;
		if (t->kind != MKC_TK_OUTPUT)
			t->kind = MKC_TK_WEIGHT;
		return 1;
	}
	int64_t cnt = a->type == MKC_AT_FLOATS || a->type == MKC_AT_INTS ? a->n : 1;
	bool isint = a->type == MKC_AT_INT || a->type == MKC_AT_INTS;
	vals r = out_vals(g, cnt, isint);
	for (int64_t i = 0; i < cnt; i++) {
		switch (a->type) {
		case MKC_AT_FLOAT: r.fv[i] = a->f; break;
		case MKC_AT_FLOATS: r.fv[i] = a->floats[i]; break;
		case MKC_AT_INT: r.iv[i] = mkc_dim_const(a->i); break;
		default: r.iv[i] = mkc_dim_const(a->ints[i]); break;
		}
	}
	return store(g, n, 0, &r);
}

static int
fold_shape(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	int64_t cnt = out_numel(n, 0);
	int64_t start = mkc_node_attr_int(n, "start", 0);
	if (start < 0)
		start += x->rank;
	if (start < 0)
		start = 0;
	vals r = out_vals(g, cnt, true);
	for (int64_t i = 0; i < cnt; i++)
		r.iv[i] = x->shape[start + i];
	return store(g, n, 0, &r);
}

static int
fold_size(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	vals r = out_vals(g, 1, true);
	r.iv[0] = mkc_dim_const(1);
	for (int i = 0; i < x->rank; i++)
		if (!mkc_dim_mul(r.iv[0], x->shape[i], &r.iv[0]))
			return 0;
	return store(g, n, 0, &r);
}

static int
fold_constant_of_shape(mkc_graph *g, mkc_node *n)
{
	int64_t cnt = out_numel(n, 0);
	if (cnt < 0)
		return 0;
	const mkc_attr *a = mkc_node_attr(n, "value");
	vals v = {false, 1, NULL, NULL};
	if (a && a->t) {
		if (!load(g, a->t, &v) || v.n != 1)
			return mkc_node_error(g, n, "'value' must hold one element");
	} else {
		v = out_vals(g, 1, false);
	}
	vals r = out_vals(g, cnt, v.isint);
	for (int64_t i = 0; i < cnt; i++) {
		if (v.isint)
			r.iv[i] = v.iv[0];
		else
			r.fv[i] = v.fv[0];
	}
	return store(g, n, 0, &r);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the same values in a new shape. */
static int
fold_copy(mkc_graph *g, mkc_node *n)
{
	vals x;
	if (out_numel(n, 0) < 0 || !load(g, n->in[0], &x))
		return 0;
	return store(g, n, 0, &x);
}

/* Row-major strides of a tensor with constant dims. */
static void
strides(const mkc_tensor *t, int64_t *s)
{
	int64_t k = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		s[i] = k;
		k *= t->shape[i].c;
	}
}

static void
unflatten(const mkc_tensor *t, int64_t flat, int64_t *idx)
{
	for (int i = t->rank - 1; i >= 0; i--) {
		idx[i] = flat % t->shape[i].c;
		flat /= t->shape[i].c;
	}
}

static void
copy_elem(vals *dst, int64_t i, const vals *src, int64_t j)
{
	if (dst->isint)
		dst->iv[i] = src->iv[j];
	else
		dst->fv[i] = src->fv[j];
}

/* Output 0 of n, cnt elements: element idx is v's element base + idx . ps (Transpose, Slice). */
static int
store_strided(mkc_graph *g, mkc_node *n, int64_t cnt, const vals *v, int64_t base,
	      const int64_t *ps)
{
	const mkc_tensor *y = n->out[0];
	int64_t idx[MKC_MAX_RANK];
	vals r = out_vals(g, cnt, v->isint);
	for (int64_t i = 0; i < cnt; i++) {
		unflatten(y, i, idx);
		int64_t j = base;
		for (int d = 0; d < y->rank; d++)
			j += idx[d] * ps[d];
		copy_elem(&r, i, v, j);
	}
	return store(g, n, 0, &r);
}

static int
fold_transpose(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *y = n->out[0];
	int64_t cnt = out_numel(n, 0);
	vals v;
	if (cnt < 0 || !load(g, x, &v))
		return 0;
	const mkc_attr *p = mkc_node_attr(n, "perm");
	int64_t xs[MKC_MAX_RANK], ps[MKC_MAX_RANK];
	strides(x, xs);
	for (int d = 0; d < y->rank; d++)
		ps[d] = xs[p ? p->ints[d] : y->rank - 1 - d];
	return store_strided(g, n, cnt, &v, 0, ps);
}

static int
fold_concat(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *y = n->out[0];
	int64_t cnt = out_numel(n, 0);
	if (cnt < 0)
		return 0;
	int64_t axis = mkc_node_attr_int(n, "axis", 0);
	if (axis < 0)
		axis += y->rank;
	vals in[64];
	if (n->nin > 64)
		return 0;
	bool isint = true;
	for (int k = 0; k < n->nin; k++) {
		if (!load(g, n->in[k], &in[k]))
			return 0;
		isint &= in[k].isint;
	}
	for (int k = 0; k < n->nin && !isint; k++)
		if (!as_doubles(g, &in[k]))
			return 0;
	vals r = out_vals(g, cnt, isint);
	int64_t idx[MKC_MAX_RANK];
	for (int64_t i = 0; i < cnt; i++) {
		unflatten(y, i, idx);
		int k = 0;
		int64_t pos = idx[axis];
		while (pos >= n->in[k]->shape[axis].c)
			pos -= n->in[k++]->shape[axis].c;
		int64_t xs[MKC_MAX_RANK], j = 0;
		strides(n->in[k], xs);
		for (int d = 0; d < y->rank; d++)
			j += (d == axis ? pos : idx[d]) * xs[d];
		copy_elem(&r, i, &in[k], j);
	}
	return store(g, n, 0, &r);
}

static int
fold_slice(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *y = n->out[0];
	int64_t cnt = out_numel(n, 0);
	vals v;
	if (cnt < 0 || mkc_graph_opset(g, "") < 10 || !load(g, x, &v))
		return 0;
	mkc_dim st[MKC_MAX_RANK], ax[MKC_MAX_RANK], sp[MKC_MAX_RANK];
	int64_t k = mkc_const_dims(g, n, 1, st, MKC_MAX_RANK, true);
	for (int i = 0; i < k; i++) {
		ax[i] = mkc_dim_const(i);
		sp[i] = mkc_dim_const(1);
	}
	if (n->nin > 3 && n->in[3])
		mkc_const_dims(g, n, 3, ax, MKC_MAX_RANK, false);
	if (n->nin > 4 && n->in[4])
		mkc_const_dims(g, n, 4, sp, MKC_MAX_RANK, false);
	int64_t start[MKC_MAX_RANK] = {0}, step[MKC_MAX_RANK];
	for (int d = 0; d < x->rank; d++)
		step[d] = 1;
	for (int i = 0; i < k; i++) {
		if (!mkc_dim_is_const(st[i]))
			return 0;
		int64_t a = ax[i].c < 0 ? ax[i].c + x->rank : ax[i].c;
		start[a] = mkc_slice_first(st[i].c, sp[i].c, x->shape[a].c);
		step[a] = sp[i].c;
	}
	int64_t xs[MKC_MAX_RANK], ps[MKC_MAX_RANK], base = 0;
	strides(x, xs);
	for (int d = 0; d < y->rank; d++) {
		base += start[d] * xs[d];
		ps[d] = step[d] * xs[d];
	}
	return store_strided(g, n, cnt, &v, base, ps);
}

static int
fold_gather(mkc_graph *g, mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *ind = n->in[1], *y = n->out[0];
	int64_t cnt = out_numel(n, 0);
	vals v, iv;
	if (cnt < 0 || !load(g, x, &v) || !load(g, ind, &iv))
		return 0;
	int64_t axis = mkc_node_attr_int(n, "axis", 0);
	if (axis < 0)
		axis += x->rank;
	int64_t dim = x->shape[axis].c;
	int64_t xs[MKC_MAX_RANK], idx[MKC_MAX_RANK];
	strides(x, xs);
	vals r = out_vals(g, cnt, v.isint);
	for (int64_t i = 0; i < cnt; i++) {
		unflatten(y, i, idx);
		/* idx = outer dims, then the index tensor's dims, then inner dims */
		int64_t flat = 0;
		for (int d = 0; d < ind->rank; d++)
			flat = flat * ind->shape[d].c + idx[axis + d];
		if (!mkc_dim_is_const(iv.iv[flat]))
			return 0;
		int64_t at = iv.iv[flat].c;
		if (at < -dim || at >= dim)
			return mkc_node_error(g, n, "index %lld is out of range for size %lld",
					      (long long)at, (long long)dim);
		if (at < 0)
			at += dim;
		int64_t j = at * xs[axis];
		for (int d = 0; d < axis; d++)
			j += idx[d] * xs[d];
		for (int d = (int)axis + 1; d < x->rank; d++)
			j += idx[d - 1 + ind->rank] * xs[d];
		copy_elem(&r, i, &v, j);
	}
	return store(g, n, 0, &r);
}

static int
fold_expand(mkc_graph *g, mkc_node *n)
{
	int64_t cnt = out_numel(n, 0);
	vals v;
	if (cnt < 0 || !load(g, n->in[0], &v))
		return 0;
	vals r = out_vals(g, cnt, v.isint);
	for (int64_t i = 0; i < cnt; i++)
		copy_elem(&r, i, &v, bcast_index(n->out[0], n->in[0], i));
	return store(g, n, 0, &r);
}

/* Tile: element idx of y is x's at idx mod x's shape. */
static int
fold_tile(mkc_graph *g, mkc_node *n)
{
	int64_t cnt = out_numel(n, 0);
	const mkc_tensor *x = n->in[0], *y = n->out[0];
	vals v;
	if (cnt < 0 || mkc_tensor_numel(x) < 0 || !load(g, x, &v))
		return 0;
	vals r = out_vals(g, cnt, v.isint);
	for (int64_t i = 0; i < cnt; i++) {
		int64_t flat = i, at = 0, stride = 1;
		for (int d = y->rank - 1; d >= 0; d--) {
			at += flat % y->shape[d].c % x->shape[d].c * stride;
			flat /= y->shape[d].c;
			stride *= x->shape[d].c;
		}
		copy_elem(&r, i, &v, at);
	}
	return store(g, n, 0, &r);
}

static int
fold_range(mkc_graph *g, mkc_node *n)
{
	vals s, l, d;
	if (!load(g, n->in[0], &s) || !load(g, n->in[1], &l) || !load(g, n->in[2], &d))
		return 0;
	mkc_tensor *y = n->out[0];
	if (!s.isint) {
		/* float range: its length is known only now */
		if (!as_doubles(g, &l) || !as_doubles(g, &d) || d.fv[0] == 0)
			return mkc_node_error(g, n, "delta must not be 0");
		double len = ceil((l.fv[0] - s.fv[0]) / d.fv[0]);
		if (len > MKC_FOLD_MAX)   /* before the conversion, which is undefined past int64 */
			return mkc_node_error(g, n, "a float range of %g elements is too long to fold", len);
		int64_t cnt = len > 0 ? (int64_t)len : 0;
		y->shape[0] = mkc_dim_const(cnt);
		vals r = out_vals(g, cnt, false);
		for (int64_t i = 0; i < cnt; i++)
			r.fv[i] = s.fv[0] + (double)i * d.fv[0];
		return store(g, n, 0, &r);
	}
	int64_t cnt = out_numel(n, 0);
	if (cnt < 0)
		return 0;
	vals r = out_vals(g, cnt, true);
	for (int64_t i = 0; i < cnt; i++) {
		int64_t step;
		if (!mkc_mul_ok(i, d.iv[0].c, &step) ||
		    !mkc_dim_add(s.iv[0], mkc_dim_const(step), &r.iv[i]))
			return mkc_node_error(g, n, "element %lld of the range does not fit in int64",
					      (long long)i);
	}
	return store(g, n, 0, &r);
}

typedef int fold_fn(mkc_graph *g, mkc_node *n);

static fold_fn *const folders[MKC_OP_COUNT] = {
#define OP(e, nm, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) [MKC_OP_##e] = fld,
#include "ops.def"
#undef OP
};

int
mkc_fold_node(mkc_graph *g, mkc_node *n)
{
	fold_fn *f = folders[n->op];
	if (!f)
		return 0;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] && out_numel(n, i) < 0 && n->op != MKC_OP_RANGE)
			return 0;
	return f(g, n);
}
