/*
 * canon.c - canonicalisation: the decomposed transformer blocks of real
 * exports become the single ops of opset 23.
 *
 * requires: infer (dtypes, shapes and compile-time values; folded nodes
 *           marked dead), nodes in topological order.
 * provides: RMSNormalization, RotaryEmbedding and Attention nodes in place
 *           of the subgraphs that compute them; Attention reading grouped
 *           key/value heads as they are stored rather than copied out per
 *           query head; an exporter's causal mask as is_causal (no mask
 *           input); a MatMul by Transpose(2-D weight) reading the weight
 *           by rows (attribute mkc_trans_b); no two live attribute-free nodes that apply the same
 *           op to the same inputs; every new tensor typed and shaped; nodes
 *           in topological order. What the rewrites replace is marked dead,
 *           for dce to remove.
 *
 * How it works. A torch.onnx (dynamo, opset 18) export spells RMSNorm as
 * Pow -> ReduceMean -> Add(eps) -> Sqrt -> Reciprocal -> Mul -> Mul(weight),
 * RoPE as q * cos + rotate_half(q) * sin, and attention as two MatMuls
 * around a Softmax. Each pattern has one matcher, which starts at the
 * pattern's last node (its root) and walks backwards through producers. A
 * node the walk steps onto is taken into the match: it will be replaced. A
 * tensor the walk stops at (x, the weight, q, the frequencies, K, V, the
 * mask) is an input of the fused op and may have any number of readers;
 * nodes read on the way but shared by every layer (the cos and sin tables,
 * the mask's Where) are looked at but not taken. Commutative operands are
 * tried both ways round.
 *
 * A match is rewritten only when it is closed: every tensor a taken node
 * other than the root writes is read by taken nodes alone and is not a
 * graph output. Otherwise the interior would have to stay alive and the
 * block would be computed twice. Every shape, axis, slice bound and
 * constant the identity relies on is checked against the inferred shapes
 * and known values; anything unexpected leaves the subgraph as it is.
 * Each matcher states its identity in its comment.
 *
 * The root is turned into the fused op in place: it keeps its ONNX name (so
 * errors and emitted comments still point into the model), its output
 * tensor and its place in the order, which is valid because every input of
 * the fused op was read by a taken node before the root. The other taken
 * nodes are marked dead. The only new nodes are RoPE's Cos and Sin of the
 * frequencies, placed just before the RotaryEmbedding. Use counts are kept
 * for live nodes only (a folded node still lists its inputs) and are
 * updated as nodes die or change inputs.
 *
 * Clean-ups follow, for both forms of export. A MatMul by Transpose(weight)
 * (a tied output layer) reads the weight as it is stored. Attention with grouped
 * key/value heads needs no copies: Reshape(Expand(Unsqueeze(kv))) that
 * repeats each head for its query heads is dropped, Attention reading kv
 * itself (head h of the copy is head h / n of kv, exactly how Attention
 * pairs query and key heads). And attribute-free nodes that apply the same
 * op to the same inputs are merged: the opset-23 export computes Cos and
 * Sin of the same frequencies once per RotaryEmbedding.
 *
 * Values: the rewrites are identities in real arithmetic; the results move
 * only by float rounding (the fused ops sum in another order, Attention
 * scales q.k once by s1 * s2 instead of q by s1 and k by s2). Special
 * values keep their meaning: the export guards Softmax with Where(IsNaN(p),
 * 0, p), which Attention matches by giving 0 for a row with every key
 * masked out; without that guard a masked pattern is left alone. A mask
 * made as Where(cond, 0, -inf) becomes the bool mask cond; any other
 * additive mask (the export fills with the lowest float, -3.4e38, not
 * -inf) is passed to Attention as it is, since a row masked entirely by
 * -3.4e38 averages V in both forms while a bool mask would give 0.
 */
#include "passes.h"
#include "numeric.h"

#include <math.h>
#include <string.h>

enum { MATCH_MAX = 24 };

/* The nodes a rewrite replaces; node[0] is the root. */
typedef struct {
	mkc_node *node[MATCH_MAX];
	int n;
} match;

static void
kill(mkc_node *n)
{
	n->dead = true;
	mkc_node_count_reads(n, -1);
}

/* Walking the graph. */

/* The live node of op `op` that writes t as its only output, or NULL. */
static mkc_node *
def(const mkc_tensor *t, mkc_op op)
{
	mkc_node *p = t ? t->producer : NULL;
	return p && !p->dead && p->op == op && p->nout == 1 && p->out[0] == t ? p : NULL;
}

/* def, and the node joins the match. */
static mkc_node *
take(match *m, const mkc_tensor *t, mkc_op op)
{
	mkc_node *p = def(t, op);
	if (!p)
		return NULL;
	for (int i = 0; i < m->n; i++)
		if (m->node[i] == p)
			return p;
	if (m->n == MATCH_MAX)
		return NULL;
	m->node[m->n++] = p;
	return p;
}

static void
start(match *m, mkc_node *root)
{
	m->node[0] = root;
	m->n = 1;
}

static int
reads_in(const match *m, const mkc_tensor *t)
{
	int k = 0;
	for (int i = 0; i < m->n; i++)
		for (int j = 0; j < m->node[i]->nin; j++)
			k += m->node[i]->in[j] == t;
	return k;
}

/* Every tensor written inside the match, but for the root's, is read only inside it. */
static bool
closed(const match *m)
{
	for (int i = 1; i < m->n; i++) {
		const mkc_tensor *t = m->node[i]->out[0];
		if (t->kind == MKC_TK_OUTPUT || t->nconsumers != reads_in(m, t))
			return false;
	}
	return true;
}

/* Constants, axes and shapes. */

/* The value of a compile-time tensor of one element (of any rank). */
static bool
const_scalar(const mkc_tensor *t, double *v)
{
	if (!t || !t->data || mkc_tensor_numel(t) != 1 || !mkc_dtype_size(t->dtype))
		return false;
	*v = mkc_load_double(t->dtype, t->data, 0);
	return true;
}

static bool
is_scalar(const mkc_tensor *t, double v)
{
	double x;
	return const_scalar(t, &x) && x == v;
}

/* A compile-time integer tensor of at most max values: the count, or -1. */
static int
const_ints(const mkc_tensor *t, int64_t *v, int max)
{
	if (!t || !t->data || (t->dtype != MKC_DT_INT64 && t->dtype != MKC_DT_INT32))
		return -1;
	int64_t n = mkc_tensor_numel(t);
	if (n < 0 || n > max)
		return -1;
	for (int64_t i = 0; i < n; i++)
		v[i] = mkc_load_int(t->dtype, t->data, i);
	return (int)n;
}

/* axis counted from 0 for a tensor of that rank; -1 when out of range */
static int
norm_axis(int64_t axis, int rank)
{
	if (axis < -rank || axis >= rank)
		return -1;
	return (int)(axis < 0 ? axis + rank : axis);
}

/*
 * The axis of an Unsqueeze or ReduceMean (an attribute in older opsets,
 * else input 1), for rank; -1 unless there is exactly one.
 */
static int
single_axis(const mkc_node *n, int rank)
{
	int64_t ax[MKC_MAX_RANK];
	const mkc_attr *a = mkc_node_attr(n, "axes");
	if (a && a->type == MKC_AT_INTS)
		return a->n == 1 ? norm_axis(a->ints[0], rank) : -1;
	if (const_ints(n->nin > 1 ? n->in[1] : NULL, ax, MKC_MAX_RANK) != 1)
		return -1;
	return norm_axis(ax[0], rank);
}

/* The axis attribute (Concat), for rank. */
static int
axis_attr(const mkc_node *n, int64_t dflt, int rank)
{
	return norm_axis(mkc_node_attr_int(n, "axis", dflt), rank);
}

static bool
is_perm(const mkc_node *n, int rank, const int *want)
{
	const mkc_attr *p = mkc_node_attr(n, "perm");
	if (p && (p->type != MKC_AT_INTS || p->n != rank))
		return false;
	for (int i = 0; i < rank; i++)
		if ((p ? p->ints[i] : rank - 1 - i) != want[i])
			return false;
	return true;
}

static bool
has_shape(const mkc_tensor *t, int rank, const mkc_dim *d)
{
	if (t->rank != rank)
		return false;
	for (int i = 0; i < rank; i++)
		if (!mkc_dim_eq(t->shape[i], d[i]))
			return false;
	return true;
}

/* mkc's fused ops compute in float32; other types would round differently. */
static bool
is_f32(const mkc_tensor *t)
{
	return t && t->dtype == MKC_DT_FLOAT;
}

/* Rewriting. */

/*
 * The root of m becomes `op` reading in[0..nin) with attributes at[0..nattr);
 * the other matched nodes die.
 */
static void
replace(mkc_graph *g, match *m, mkc_op op, int nin, mkc_tensor *const *in, int nattr,
	const mkc_attr *at)
{
	mkc_arena *a = g->ctx->arena;
	mkc_node *r = m->node[0];
	for (int i = 1; i < m->n; i++)
		kill(m->node[i]);
	mkc_node_count_reads(r, -1);
	r->op = op;
	r->op_type = mkc_op_info_of(op)->name;
	r->domain = mkc_op_info_of(op)->domain;
	r->nin = nin;
	r->in = mkc_arena_alloc(a, (size_t)(nin + 1) * sizeof *r->in);
	memcpy(r->in, in, (size_t)nin * sizeof *in);
	r->nattr = nattr;
	r->attr = mkc_arena_alloc(a, (size_t)(nattr + 1) * sizeof *r->attr);
	if (nattr)   /* at may be NULL then: memcpy's pointers must not be */
		memcpy(r->attr, at, (size_t)nattr * sizeof *at);
	mkc_node_count_reads(r, 1);
}

/*
 * A new tensor named base_suffix (base_suffix_1, _2, ... where that is
 * taken) that output i of node p is; its type and shape are the caller's.
 */
static mkc_tensor *
new_output(mkc_graph *g, mkc_node *p, int i, const char *base, const char *suffix)
{
	mkc_tensor *t = mkc_graph_tensor(g, mkc_graph_fresh_name(g, base, suffix));
	t->producer = p;
	p->out[i] = t;
	return t;
}

/*
 * A new node op(x) just before `root`, named after it, whose output has x's
 * type and shape.
 */
static mkc_tensor *
new_unary(mkc_graph *g, mkc_op op, mkc_tensor *x, const mkc_node *root, const char *suffix)
{
	mkc_arena *a = g->ctx->arena;
	mkc_node *n = mkc_graph_add_node(g, mkc_arena_printf(a, "%s_%s", root->name, suffix), "",
					 mkc_op_info_of(op)->name, 1, 1, 0);
	mkc_tensor *t = new_output(g, n, 0, root->out[0]->name, suffix);
	t->dtype = x->dtype;
	t->rank = x->rank;
	memcpy(t->shape, x->shape, sizeof t->shape);
	n->in[0] = x;
	mkc_node_count_reads(n, 1);
	mkc_graph_move_before(g, n, root);
	return t;
}

/* RMSNorm. */

/*
 * t = Sqrt(ReduceMean(Pow(x, 2), axes=[-1], keepdims=1) + eps) with eps a
 * constant scalar on either side of the Add; x * x stands for Pow(x, 2).
 * Returns x and eps, or NULL.
 */
static mkc_tensor *
rms_of(match *m, const mkc_tensor *t, double *eps)
{
	mkc_node *root = take(m, t, MKC_OP_SQRT);
	mkc_node *add = root ? take(m, root->in[0], MKC_OP_ADD) : NULL;
	if (!add)
		return NULL;
	int k = def(add->in[0], MKC_OP_REDUCE_MEAN) ? 0 : 1;
	mkc_node *mean = take(m, add->in[k], MKC_OP_REDUCE_MEAN);
	if (!mean || !const_scalar(add->in[1 - k], eps))
		return NULL;
	const mkc_tensor *p = mean->in[0];
	if (mkc_node_attr_int(mean, "keepdims", 1) != 1 || p->rank < 1 ||
	    single_axis(mean, p->rank) != p->rank - 1)
		return NULL;
	mkc_node *pw = take(m, p, MKC_OP_POW), *mul = pw ? NULL : take(m, p, MKC_OP_MUL);
	mkc_tensor *x = NULL;
	if (pw && is_scalar(pw->in[1], 2))
		x = pw->in[0];
	else if (mul && mul->in[0] == mul->in[1])
		x = mul->in[0];
	return x && mkc_tensor_same_shape(p, x) ? x : NULL;
}

/* t = x / rms(x), as x * Reciprocal(rms), x * Div(1, rms) or Div(x, rms). Returns x. */
static mkc_tensor *
rms_normalised(match *m, const mkc_tensor *t, double *eps)
{
	mkc_node *n = take(m, t, MKC_OP_DIV);
	if (n)
		return rms_of(m, n->in[1], eps) == n->in[0] ? n->in[0] : NULL;
	if (!(n = take(m, t, MKC_OP_MUL)))
		return NULL;
	for (int k = 0; k < 2; k++) {
		const mkc_tensor *inv = n->in[1 - k];
		mkc_node *r = take(m, inv, MKC_OP_RECIPROCAL);
		mkc_tensor *x = NULL;
		if (r)
			x = rms_of(m, r->in[0], eps);
		else if ((r = take(m, inv, MKC_OP_DIV)) && is_scalar(r->in[0], 1))
			x = rms_of(m, r->in[1], eps);
		if (r)
			return x == n->in[k] ? x : NULL;
	}
	return NULL;
}

/*
 * Mul(weight, x / sqrt(mean(x^2, last axis) + eps)), either operand order
 * ==> RMSNormalization(x, weight, axis=-1, epsilon=eps). A norm without the
 * weight Mul is left alone. The weight must hold one value or one per
 * element of the last axis, as RMSNormalization's scale does.
 */
static bool
match_rmsnorm(mkc_graph *g, mkc_node *root)
{
	match m;
	for (int k = 0; k < 2; k++) {
		start(&m, root);
		mkc_tensor *w = root->in[k];
		double eps;
		mkc_tensor *x = rms_normalised(&m, root->in[1 - k], &eps);
		if (!x || !is_f32(x) || !is_f32(w) || !mkc_tensor_same_shape(root->out[0], x) ||
		    w->rank > 1)
			continue;
		mkc_dim last = x->shape[x->rank - 1];
		if (w->rank == 1 && !mkc_dim_eq(w->shape[0], last) &&
		    !mkc_dim_eq(w->shape[0], mkc_dim_const(1)))
			continue;
		if (!closed(&m))
			continue;
		const mkc_attr at[] = {
			{.name = "axis", .type = MKC_AT_INT, .i = -1},
			{.name = "epsilon", .type = MKC_AT_FLOAT, .f = (float)eps},
		};
		replace(g, &m, MKC_OP_RMS_NORM, 2, (mkc_tensor *[]){x, w}, 2, at);
		return true;
	}
	return false;
}

/* RoPE. */

/*
 * t = Unsqueeze(trig(Concat(f, f, axis=-1)), axes=[1]): the cos or sin
 * table of rotate_half RoPE, the frequencies f [B, S, D/2] written twice
 * and given a head axis. Every layer reads these, so they are not taken.
 * Returns f or NULL.
 */
static mkc_tensor *
trig_table(const mkc_tensor *t, mkc_op trig)
{
	mkc_node *u = def(t, MKC_OP_UNSQUEEZE);
	mkc_node *fn = u ? def(u->in[0], trig) : NULL;
	mkc_node *cat = fn ? def(fn->in[0], MKC_OP_CONCAT) : NULL;
	if (!cat || t->rank != 4 || single_axis(u, 4) != 1 || cat->nin != 2 ||
	    cat->in[0] != cat->in[1] || cat->in[0]->rank != 3 || axis_attr(cat, 3, 3) != 2)
		return NULL;
	return cat->in[0];
}

/* Slice n takes exactly [start, end) of x's axis `axis`, with step 1. */
static bool
slices(const mkc_node *n, int axis, int64_t start, int64_t end)
{
	const mkc_tensor *x = n->in[0];
	int64_t st, en, ax = 0, step = 1;
	/* opset 10 on: bounds are inputs (before, attributes: left alone) */
	if (n->nin < 3 || const_ints(n->in[1], &st, 1) != 1 || const_ints(n->in[2], &en, 1) != 1)
		return false;
	if (n->nin > 3 && n->in[3] && const_ints(n->in[3], &ax, 1) != 1)
		return false;
	if (n->nin > 4 && n->in[4] && const_ints(n->in[4], &step, 1) != 1)
		return false;
	if (norm_axis(ax, x->rank) != axis || step != 1 || !mkc_dim_is_const(x->shape[axis]))
		return false;
	/* ONNX: negative bounds count from the end; then both clamp to [0, d] */
	int64_t d = x->shape[axis].c;
	st = st < 0 ? st + d : st;
	en = en < 0 ? en + d : en;
	st = st < 0 ? 0 : st > d ? d : st;
	en = en < 0 ? 0 : en > d ? d : en;
	return st == start && en == end;
}

/*
 * t = Concat(Neg(x[..., h:]), x[..., :h], axis=-1) with h half of x's last
 * dimension: rotate_half(x). Returns x or NULL.
 */
static mkc_tensor *
rotate_half(match *m, const mkc_tensor *t)
{
	mkc_node *cat = take(m, t, MKC_OP_CONCAT);
	if (!cat || cat->nin != 2)
		return NULL;
	mkc_node *neg = take(m, cat->in[0], MKC_OP_NEG);
	mkc_node *hi = neg ? take(m, neg->in[0], MKC_OP_SLICE) : NULL;
	mkc_node *lo = take(m, cat->in[1], MKC_OP_SLICE);
	if (!hi || !lo || hi->in[0] != lo->in[0])
		return NULL;
	mkc_tensor *x = lo->in[0];
	int r = x->rank;
	if (r < 1 || !mkc_dim_is_const(x->shape[r - 1]) || x->shape[r - 1].c % 2 ||
	    axis_attr(cat, r, r) != r - 1)
		return NULL;
	int64_t d = x->shape[r - 1].c;
	return slices(lo, r - 1, 0, d / 2) && slices(hi, r - 1, d / 2, d) ? x : NULL;
}

/*
 * Add(Mul(q, cos4), Mul(rotate_half(q), sin4)), any operand order, with
 * cos4 and sin4 the tables of the same frequencies f, q [B, H, S, D] and
 * f [B, S, D/2] ==> RotaryEmbedding(q, Cos(f), Sin(f)), interleaved = 0:
 * for i < D/2, y[i] = q[i] cos f[i] - q[i + D/2] sin f[i] and
 * y[i + D/2] = q[i + D/2] cos f[i] + q[i] sin f[i], which is what the
 * decomposed form computes with the tables' two equal halves.
 */
static bool
match_rope(mkc_graph *g, mkc_node *root)
{
	match m;
	for (int k = 0; k < 2; k++) {
		start(&m, root);
		mkc_node *mc = take(&m, root->in[k], MKC_OP_MUL);
		mkc_node *ms = take(&m, root->in[1 - k], MKC_OP_MUL);
		if (!mc || !ms || mc == ms)
			continue;
		int i = trig_table(mc->in[1], MKC_OP_COS) ? 0 : 1;   /* q's side */
		int j = trig_table(ms->in[1], MKC_OP_SIN) ? 0 : 1;   /* rotate_half's side */
		mkc_tensor *q = mc->in[i], *f = trig_table(mc->in[1 - i], MKC_OP_COS);
		if (!f || trig_table(ms->in[1 - j], MKC_OP_SIN) != f ||
		    rotate_half(&m, ms->in[j]) != q)
			continue;
		if (q->rank != 4 || !is_f32(q) || !is_f32(f) ||
		    !mkc_tensor_same_shape(root->out[0], q))
			continue;
		const mkc_dim *s = q->shape, half = mkc_dim_const(s[3].c / 2);
		if (!has_shape(f, 3, (mkc_dim[]){s[0], s[2], half}) || !closed(&m))
			continue;
		mkc_tensor *in[] = {q, new_unary(g, MKC_OP_COS, f, root, "cos"),
				    new_unary(g, MKC_OP_SIN, f, root, "sin")};
		const mkc_attr at[] = {{.name = "interleaved", .type = MKC_AT_INT, .i = 0}};
		replace(g, &m, MKC_OP_ROTARY, 3, in, 1, at);
		return true;
	}
	return false;
}

/* Attention. */

/*
 * t = x * s, s * x or x / s with s a constant scalar that changes no shape:
 * returns x and s. Otherwise t itself, with s = 1.
 */
static mkc_tensor *
unscaled(match *m, mkc_tensor *t, double *s)
{
	int at = m->n;
	mkc_node *n = take(m, t, MKC_OP_MUL);
	for (int k = 0; n && k < 2; k++)
		if (const_scalar(n->in[1 - k], s) && mkc_tensor_same_shape(n->in[k], t))
			return n->in[k];
	m->n = at;
	double d;
	n = take(m, t, MKC_OP_DIV);
	if (n && const_scalar(n->in[1], &d) && d != 0 && mkc_tensor_same_shape(n->in[0], t)) {
		*s = 1 / d;
		return n->in[0];
	}
	m->n = at;
	*s = 1;
	return t;
}

/*
 * t = K transposed over its last two axes, K [B, H, L, D]: either
 * Transpose(K, perm=[0,1,3,2]) or the export's
 * Reshape(Transpose(Reshape(K, [B*H, L, D]), perm=[0,2,1]), [B, H, D, L])
 * (row-major reshapes that merge and split the leading axes again).
 * Returns K or NULL.
 */
static mkc_tensor *
transposed_key(match *m, const mkc_tensor *t)
{
	mkc_node *tr = take(m, t, MKC_OP_TRANSPOSE), *r1 = NULL;
	if (!tr) {
		mkc_node *r2 = take(m, t, MKC_OP_RESHAPE);
		tr = r2 ? take(m, r2->in[0], MKC_OP_TRANSPOSE) : NULL;
		r1 = tr ? take(m, tr->in[0], MKC_OP_RESHAPE) : NULL;
		if (!r1)
			return NULL;
	}
	mkc_tensor *k = r1 ? r1->in[0] : tr->in[0];
	if (k->rank != 4)
		return NULL;
	mkc_dim b = k->shape[0], h = k->shape[1], l = k->shape[2], d = k->shape[3], bh;
	if (!has_shape(t, 4, (mkc_dim[]){b, h, d, l}))
		return NULL;
	if (!r1)
		return is_perm(tr, 4, (int[]){0, 1, 3, 2}) ? k : NULL;
	if (!mkc_dim_mul(b, h, &bh) || !has_shape(r1->out[0], 3, (mkc_dim[]){bh, l, d}))
		return NULL;
	return is_perm(tr, 3, (int[]){0, 2, 1}) ? k : NULL;
}

/*
 * The additive mask as Attention takes it: cond for Where(cond, 0, -inf)
 * (bool: false masks out), else the float mask itself. The Where is shared
 * by every layer; dce removes it once no layer reads it.
 */
static mkc_tensor *
attention_mask(mkc_tensor *mask)
{
	mkc_node *w = def(mask, MKC_OP_WHERE);
	if (w && is_scalar(w->in[1], 0) && is_scalar(w->in[2], -INFINITY) &&
	    mkc_tensor_same_shape(w->in[0], mask))
		return w->in[0];
	return mask;
}

/*
 * MatMul(Softmax(MatMul(q * s1, K^T * s2) + mask, axis=-1), V), with the
 * Softmax guarded as Where(IsNaN(p), 0, p), q [B, H, S, D], K [B, H, L, D],
 * V [B, H, L, Dv] ==> Attention(q, K, V, mask, scale = s1 * s2). The mask
 * and the guard may both be absent; a mask without the guard is left alone
 * (a fully masked row gives NaN there and 0 in Attention).
 */
static bool
match_attention(mkc_graph *g, mkc_node *root)
{
	match m;
	start(&m, root);
	mkc_tensor *p = root->in[0], *v = root->in[1], *mask = NULL;
	mkc_node *guard = take(&m, p, MKC_OP_WHERE);
	if (guard) {
		mkc_node *nan = take(&m, guard->in[0], MKC_OP_ISNAN);
		if (!nan || nan->in[0] != guard->in[2] || !is_scalar(guard->in[1], 0) ||
		    !mkc_tensor_same_shape(p, guard->in[2]))
			return false;
		p = guard->in[2];
	}
	mkc_node *sm = take(&m, p, MKC_OP_SOFTMAX);
	if (!sm || p->rank != 4)
		return false;
	/* before opset 13, axis 3 flattens to the same rows */
	if (norm_axis(mkc_softmax_axis_attr(g, sm, NULL), 4) != 3)
		return false;
	mkc_node *qk = take(&m, sm->in[0], MKC_OP_MATMUL);
	if (!qk) {
		mkc_node *add = take(&m, sm->in[0], MKC_OP_ADD);
		int k = add && def(add->in[0], MKC_OP_MATMUL) ? 0 : 1;
		qk = add ? take(&m, add->in[k], MKC_OP_MATMUL) : NULL;
		if (!qk || !mkc_tensor_same_shape(add->out[0], qk->out[0]) || !guard)
			return false;
		mask = add->in[1 - k];
		if (mask->dtype != MKC_DT_FLOAT || mask->rank > 4)
			return false;
	}
	double s1, s2;
	mkc_tensor *q = unscaled(&m, qk->in[0], &s1);
	mkc_tensor *k = transposed_key(&m, unscaled(&m, qk->in[1], &s2));
	if (!k || q->rank != 4 || v->rank != 4 || !is_f32(q) || !is_f32(k) || !is_f32(v))
		return false;
	const mkc_dim *qs = q->shape, *ks = k->shape;
	if (!has_shape(k, 4, (mkc_dim[]){qs[0], qs[1], ks[2], qs[3]}) ||
	    !has_shape(v, 4, (mkc_dim[]){qs[0], qs[1], ks[2], v->shape[3]}) || !closed(&m))
		return false;
	const mkc_attr at[] = {{.name = "scale", .type = MKC_AT_FLOAT, .f = (float)(s1 * s2)}};
	mkc_tensor *in[] = {q, k, v, mask ? attention_mask(mask) : NULL};
	replace(g, &m, MKC_OP_ATTENTION, mask ? 4 : 3, in, 1, at);
	return true;
}

/*
 * t = Reshape(Expand(Unsqueeze(kv, axes=[2]), [B, Hk, n, L, D]),
 * [B, Hk * n, L, D]): each key/value head of kv [B, Hk, L, D] repeated n
 * times in a row, so head h of t is head h / n of kv. Returns kv or NULL.
 */
static mkc_tensor *
repeated_heads(match *m, const mkc_tensor *t)
{
	mkc_node *r = take(m, t, MKC_OP_RESHAPE);
	mkc_node *e = r ? take(m, r->in[0], MKC_OP_EXPAND) : NULL;
	mkc_node *u = e ? take(m, e->in[0], MKC_OP_UNSQUEEZE) : NULL;
	if (!u)
		return NULL;
	mkc_tensor *kv = u->in[0], *big = e->out[0];
	if (kv->rank != 4 || big->rank != 5 || single_axis(u, 5) != 2)
		return NULL;
	const mkc_dim *s = kv->shape;
	mkc_dim heads;
	if (!has_shape(big, 5, (mkc_dim[]){s[0], s[1], big->shape[2], s[2], s[3]}) ||
	    !mkc_dim_mul(s[1], big->shape[2], &heads) ||
	    !has_shape(t, 4, (mkc_dim[]){s[0], heads, s[2], s[3]}))
		return NULL;
	return kv;
}

/*
 * Attention(q, repeated(K), repeated(V), ...) ==> Attention(q, K, V, ...).
 * Attention pairs query head h with key/value head h / (Hq / Hk). With the
 * copies that is head h / (Hq / (Hk n)) of the copy, which is head
 * h / (Hq / (Hk n)) / n = h / (Hq / Hk) of K (floor divisions compose, and
 * Hq is a multiple of Hk n): the same head. Only without past inputs and
 * present outputs, which would change from the copies to the stored heads.
 */
static bool
match_grouped_heads(mkc_graph *g, mkc_node *root)
{
	for (int i = 1; i < root->nout; i++)
		if (root->out[i])
			return false;
	for (int i = 4; i < root->nin; i++)
		if (root->in[i])
			return false;
	if (mkc_node_attr(root, "kv_num_heads"))   /* would have to change with K and V */
		return false;
	match m;
	start(&m, root);
	mkc_tensor *q = root->in[0];
	mkc_tensor *k = repeated_heads(&m, root->in[1]);
	mkc_tensor *v = k ? repeated_heads(&m, root->in[2]) : NULL;
	if (!v || q->rank != 4 || !mkc_dim_eq(k->shape[1], v->shape[1]) ||
	    !mkc_dim_is_const(q->shape[1]) || !mkc_dim_is_const(k->shape[1]) ||
	    k->shape[1].c <= 0 || q->shape[1].c % k->shape[1].c || !closed(&m))
		return false;
	mkc_tensor *in[] = {q, k, v, root->nin > 3 ? root->in[3] : NULL};
	int nin = root->nin < 4 ? root->nin : 4;
	replace(g, &m, MKC_OP_ATTENTION, nin, in, root->nattr, root->attr);
	return true;
}

/*
 * Live attribute-free nodes with one output that apply the same op to the
 * same inputs compute the same value: the later one goes and its readers
 * read the earlier one's output. One walk in order, so chains of
 * duplicates merge too. Graph outputs stay as they are. Returns the count.
 */
static int
merge_duplicates(mkc_graph *g)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor **same = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *same);
	mkc_map seen = {0};
	int merged = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead)
			continue;
		for (int j = 0; j < n->nin; j++) {
			mkc_tensor *t = n->in[j];
			if (t && same[t->id]) {
				t->nconsumers--;
				n->in[j] = same[t->id];
				n->in[j]->nconsumers++;
			}
		}
		if (n->nattr || n->nout != 1 || !n->out[0] || n->out[0]->kind == MKC_TK_OUTPUT)
			continue;
		char *key = mkc_arena_printf(a, "%d", (int)n->op);
		for (int j = 0; j < n->nin; j++)
			key = mkc_arena_printf(a, "%s,%d", key, n->in[j] ? n->in[j]->id : -1);
		mkc_node *first = mkc_map_get(&seen, key);
		if (!first) {
			mkc_map_put(a, &seen, key, n);
			continue;
		}
		same[n->out[0]->id] = first->out[0];
		kill(n);
		merged++;
	}
	return merged;
}

/* t through any Unsqueezes (they place values, never change them). */
static const mkc_tensor *
through_unsqueeze(const mkc_tensor *t)
{
	const mkc_node *u;
	while ((u = def(t, MKC_OP_UNSQUEEZE)))
		t = u->in[0];
	return t;
}

/* A one-element integer known at compile time, a symbolic one included. */
static bool
scalar_dim(const mkc_tensor *t, mkc_dim *d)
{
	double v;
	if (t && t->nsymval == 1 && t->symval) {
		*d = t->symval[0];
		return true;
	}
	if (!const_scalar(t, &v) || v != (double)(int64_t)v)
		return false;
	*d = mkc_dim_const((int64_t)v);
	return true;
}

/* Range(0, n, 1) of length len (its values 0 .. len - 1). */
static bool
is_iota(const mkc_tensor *t, mkc_dim len)
{
	const mkc_node *r = def(t, MKC_OP_RANGE);
	return r && t->rank == 1 && mkc_dim_eq(t->shape[0], len) && is_scalar(r->in[0], 0) &&
	       is_scalar(r->in[2], 1);
}

/*
 * t's values are P + s for s < S: Add(Range(0, S, 1), P), or those values
 * folded already (S a constant: a decode step's one query at P).
 */
static bool
is_shifted_iota(const mkc_tensor *t, mkc_dim S, mkc_dim P)
{
	mkc_dim p;
	if (t->nsymval && t->symval) {
		if (!mkc_dim_is_const(S) || t->nsymval != S.c)
			return false;
		for (int64_t i = 0; i < S.c; i++)
			if (!mkc_dim_add(P, mkc_dim_const(i), &p) || !mkc_dim_eq(t->symval[i], p))
				return false;
		return true;
	}
	const mkc_node *add = def(t, MKC_OP_ADD);
	if (!add || t->rank != 1)
		return false;
	int k = is_iota(add->in[0], S) ? 1 : is_iota(add->in[1], S) ? 0 : -1;
	return k >= 0 && scalar_dim(add->in[k], &p) && mkc_dim_eq(p, P);
}

/* Only axis `at` of t's rank-4 shape may differ from 1, and it is len there. */
static bool
lies_along(const mkc_tensor *t, int at, mkc_dim len)
{
	if (t->rank != 4)
		return false;
	for (int d = 0; d < 4; d++)
		if (!mkc_dim_eq(t->shape[d], d == at ? len : mkc_dim_const(1)))
			return false;
	return true;
}

/*
 * Attention(q, k, v, mask) whose mask is the causal one a torch.onnx export
 * builds from the step's positions (transformers' sdpa path, S new tokens
 * after P cached, L = P + S keys):
 *
 *   mask[.., s, t] = LessOrEqual(t, s + P): t from Range(0, L, 1) placed
 *                    along the last axis, s + P from Add(Range(0, S, 1), P)
 *                    (folded, for a fixed S) along the third; maybe
 *                    Expanded (values unchanged);
 *
 * at opset 18 as an additive mask Where(that, 0, x) with x at most -1e30
 * (finfo.min: its softmax weight is exactly 0, as a masked one's). Query s
 * sees keys t <= P + s: is_causal aligned at the end, mkc's is_causal 2
 * (passes/state.c), and every key when S is 1. The mask goes, so the node
 * takes the chunk attention bodies; the mask's subgraph dies once unread.
 */
static int
match_causal_mask(mkc_graph *g, mkc_node *n)
{
	if (n->nin != 4 || !n->in[3] || n->nout != 1 || n->in[0]->rank != 4 ||
	    n->in[1]->rank != 4 || mkc_node_attr_int(n, "is_causal", 0) ||
	    mkc_node_attr_float(n, "softcap", 0) != 0 ||
	    mkc_node_attr_int(n, "qk_matmul_output_mode", 0))
		return 0;
	const mkc_tensor *m = n->in[3];
	const mkc_node *w = def(m, MKC_OP_WHERE);
	double lo;
	if (w && !(is_scalar(w->in[1], 0) && const_scalar(w->in[2], &lo) && lo <= -1e30))
		return 0;
	m = w ? w->in[0] : m;
	const mkc_node *e = def(m, MKC_OP_EXPAND), *le = def(e ? e->in[0] : m, MKC_OP_LESS_EQUAL);
	mkc_dim S = n->in[0]->shape[2], L = n->in[1]->shape[2], P;
	if (!le || !mkc_dim_sub(L, S, &P) || !lies_along(le->in[0], 3, L) ||
	    !lies_along(le->in[1], 2, S) || !is_iota(through_unsqueeze(le->in[0]), L) ||
	    !is_shifted_iota(through_unsqueeze(le->in[1]), S, P))
		return 0;
	n->in[3]->nconsumers--;
	n->in[3] = NULL;
	n->nin = 3;
	int64_t causal = mkc_dim_eq(S, mkc_dim_const(1)) ? 0 : 2;
	for (int i = 0; i < n->nattr; i++)
		if (!strcmp(n->attr[i].name, "is_causal")) {
			n->attr[i].i = causal;
			return 1;
		}
	mkc_node_add_attr(g, n, (mkc_attr){.name = "is_causal", .type = MKC_AT_INT, .i = causal});
	return 1;
}

/*
 * MatMul(a, Transpose(w)) with w a 2-D weight (or a Cast of one), as exports spell an output
 * layer that shares the embedding table [vocab, hidden]: the MatMul reads w
 * itself, marked by the internal attribute mkc_trans_b (tile and emit then
 * walk w's rows), and the Transpose, which would copy the whole table every
 * step, goes once nothing else reads it.
 */
static int
match_transposed_weight(mkc_graph *g, mkc_node *n)
{
	mkc_node *t = def(n->in[1], MKC_OP_TRANSPOSE);
	static const int swap[2] = {1, 0};
	if (!t || t->in[0]->rank != 2 || !is_perm(t, 2, swap) || mkc_node_attr(n, "mkc_trans_b") ||
	    n->in[0]->rank < 2)
		return 0;
	/* the weight, or the weight widened from bf16 (passes/weights.c drops that Cast) */
	mkc_node *c = def(t->in[0], MKC_OP_CAST);
	if (t->in[0]->kind != MKC_TK_WEIGHT && !(c && c->in[0]->kind == MKC_TK_WEIGHT))
		return 0;
	mkc_node_add_attr(g, n, (mkc_attr){.name = "mkc_trans_b", .type = MKC_AT_INT, .i = 1});
	n->in[1]->nconsumers--;
	n->in[1] = t->in[0];
	n->in[1]->nconsumers++;
	if (t->out[0]->nconsumers == 0)
		kill(t);
	return 1;
}

/* t, a weight [a, b] or the weight widened from bf16: the node reading it transposed may read it. */
static bool
is_weight_2d(const mkc_tensor *t)
{
	const mkc_node *c = def(t, MKC_OP_CAST);
	return t->rank == 2 && (t->kind == MKC_TK_WEIGHT || (c && c->in[0]->kind == MKC_TK_WEIGHT));
}

/*
 * Gather(Transpose(w), ids) on axis 0, w a weight [hidden, vocab]: the
 * embedding of an export that ties it to the output layer's weight
 * (onnxruntime-genai's builder writes this). The Transpose would copy the
 * whole table every step; Gather(w, ids) on axis 1 reads the hidden values
 * of each token (a column of w), and a Transpose of that [hidden, ids...]
 * puts hidden last: only the rows asked for move.
 */
static int
match_gather_transposed(mkc_graph *g, mkc_node *n)
{
	mkc_node *t = def(n->in[0], MKC_OP_TRANSPOSE);
	static const int swap[2] = {1, 0};
	mkc_tensor *ids = n->in[1];
	int64_t axis = mkc_node_attr_int(n, "axis", 0);
	if (!t || !is_perm(t, 2, swap) || !is_weight_2d(t->in[0]) || (axis != 0 && axis != -2) ||
	    ids->rank < 0 || ids->rank + 1 > MKC_MAX_RANK)
		return 0;
	mkc_arena *a = g->ctx->arena;
	mkc_tensor *w = t->in[0];
	mkc_node *cols = mkc_graph_add_node(g, mkc_arena_printf(a, "%s_columns", n->name), "",
					    "Gather", 2, 1, 1);
	cols->attr[0] = (mkc_attr){.name = "axis", .type = MKC_AT_INT, .i = 1};
	cols->in[0] = w;
	cols->in[1] = ids;
	mkc_tensor *y = new_output(g, cols, 0, n->out[0]->name, "columns");
	y->dtype = w->dtype;
	y->rank = ids->rank + 1;
	y->shape[0] = w->shape[0];
	for (int d = 0; d < ids->rank; d++)
		y->shape[d + 1] = ids->shape[d];
	mkc_node_count_reads(cols, 1);
	mkc_graph_move_before(g, cols, n);
	int64_t *perm = mkc_arena_alloc(a, (size_t)y->rank * sizeof *perm);
	for (int d = 0; d < ids->rank; d++)
		perm[d] = d + 1;
	perm[ids->rank] = 0;
	mkc_attr at = {.name = "perm", .type = MKC_AT_INTS, .ints = perm, .n = y->rank};
	match m;
	start(&m, n);
	replace(g, &m, MKC_OP_TRANSPOSE, 1, &y, 1, &at);
	if (t->out[0]->nconsumers == 0)
		kill(t);
	return 1;
}

/*
 * A Transpose that moves only axes of length 1 (the other axes keep their
 * order), or a Slice that keeps every element in order, only renames the
 * dims of its input's bytes: it becomes a Reshape to its output's shape,
 * which views.c makes a view and the fusions see through. A step of one
 * token (--max-chunk 1) turns the [1, S, heads, D] <-> [1, heads, S, D]
 * transposes of a chunked graph into such moves.
 */
static int
match_same_order(mkc_graph *g, mkc_node *n)
{
	mkc_tensor *x = n->in[0], *y = n->out[0];
	if (n->nout != 1 || !x || x->rank < 0 || y->rank < 0 || mkc_tensor_is_const(x))
		return 0;
	if (n->op == MKC_OP_TRANSPOSE) {
		const mkc_attr *p = mkc_node_attr(n, "perm");
		if (!p || p->type != MKC_AT_INTS || p->n != x->rank)
			return 0;
		int64_t last = -1;
		for (int d = 0; d < x->rank; d++) {
			if (mkc_dim_eq(x->shape[p->ints[d]], mkc_dim_const(1)))
				continue;
			if (p->ints[d] < last)
				return 0;
			last = p->ints[d];
		}
	} else {
		/* Slice: the same shape, and no axis walked backwards */
		int64_t steps[MKC_MAX_RANK];
		int ns = n->nin > 4 && n->in[4] ? const_ints(n->in[4], steps, MKC_MAX_RANK) : 0;
		if (ns < 0 || !mkc_tensor_same_shape(x, y))
			return 0;
		for (int i = 0; i < ns; i++)
			if (steps[i] != 1)
				return 0;
	}
	int64_t *v = mkc_arena_alloc(g->ctx->arena, (size_t)(y->rank + 1) * sizeof *v);
	for (int d = 0; d < y->rank; d++) {
		/* Reshape reads 0 as "keep the input's dim" */
		if (!mkc_dim_is_const(y->shape[d]) || y->shape[d].c < 1)
			return 0;
		v[d] = y->shape[d].c;
	}
	mkc_tensor *s = mkc_graph_tensor(g, mkc_arena_printf(g->ctx->arena, "%s/shape", n->name));
	s->kind = MKC_TK_WEIGHT;
	s->dtype = MKC_DT_INT64;
	s->rank = 1;
	s->shape[0] = mkc_dim_const(y->rank);
	s->data = v;
	s->nbytes = (size_t)y->rank * sizeof *v;
	match m;
	start(&m, n);
	mkc_tensor *in[2] = {x, s};
	replace(g, &m, MKC_OP_RESHAPE, 2, in, 0, NULL);
	return 1;
}

int
mkc_pass_canon(mkc_graph *g)
{
	int rms = 0, rope = 0, attn = 0, grouped = 0;
	mkc_graph_count_live_uses(g);
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead)
			continue;
		switch (n->op) {
		case MKC_OP_MUL: rms += match_rmsnorm(g, n); break;
		case MKC_OP_ADD: rope += match_rope(g, n); break;
		case MKC_OP_MATMUL: attn += match_attention(g, n); break;
		default: break;
		}
	}
	int causal = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (!n->dead && n->op == MKC_OP_ATTENTION)
			grouped += match_grouped_heads(g, n);
		if (!n->dead && n->op == MKC_OP_ATTENTION)
			causal += match_causal_mask(g, n);
	}
	int transposed = 0, reshaped = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (!n->dead && n->op == MKC_OP_MATMUL)
			transposed += match_transposed_weight(g, n);
		if (!n->dead && n->op == MKC_OP_GATHER)
			transposed += match_gather_transposed(g, n);
		if (!n->dead && (n->op == MKC_OP_TRANSPOSE || n->op == MKC_OP_SLICE))
			reshaped += match_same_order(g, n);
	}
	int merged = merge_duplicates(g);
	mkc_progress(g->ctx, "canon: %d RMSNorm, %d RoPE, %d attention, %d reading grouped heads, "
		     "%d causal masks, %d reading a transposed weight (products, embeddings), %d transposes or slices as "
		     "reshapes, %d duplicate nodes merged", rms, rope, attn, grouped,
		     causal, transposed, reshaped, merged);
	return 0;
}
