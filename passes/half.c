/*
 * half.c - a float16 model computed in float32.
 *
 * requires: infer (every tensor's type; values folded).
 * provides: no float16 tensor but graph inputs and outputs, each read or
 *           written by one Cast of this pass's; every other float16
 *           tensor made float32:
 *           - weights and folded values widened (exactly: every float16 is
 *             a float32), an initializer's file_dtype float16, so that the
 *             loader widens its bytes as it reads them (runtime/host.h) and
 *             --weights bf16 rounds them as it rounds a float32 file's;
 *           - intermediates float32, a Cast to float16 inside the graph a
 *             Cast to float32;
 *           - a float16 graph input x: a Cast x -> x_f32 that the readers
 *             of x read instead; a float16 output y: its producer writes
 *             y_f32, and a Cast y_f32 -> y;
 *           - with the caches kept in place (g->kv_cap > 0), a past input
 *             and present output (float16, the present made by a node that
 *             reads the past, the same shape but for the past's symbolic
 *             positions) made float32 with no Cast: the state pass
 *             turns them into caches the model owns, float32 (or bf16 with
 *             --kv bf16), and fails the compile if it does not (listed in
 *             g->half_caches: a float32 interface would not be the model's).
 *
 * Why. onnxruntime-genai's builder writes its fp16 exports (-p fp16) with
 * every float tensor float16: weights, caches, logits. mkc's bodies compute
 * float32; a file of float16 weights read as float32 is exact, and the
 * arithmetic is then more precise than the model's own float16 (results
 * differ from onnxruntime's by its float16 rounding, not by mkc's). The
 * interface keeps the model's types: a caller passes and gets float16.
 * (A float64 value cast to a float16 output is rounded twice, to float32,
 * then to float16, as the Cast body always did: the two differ from one
 * rounding only for a value within float32's rounding of a float16 tie.)
 * Storing the weights as 16-bit float16 in the bodies (half the bytes of a
 * float32 file, as --weights bf16 does) is not done yet.
 */
#include "passes.h"
#include "numeric.h"

#include <string.h>

/* A float16 value's bytes widened to float32, in the arena. */
static const void *
widen(mkc_graph *g, const void *data, size_t nbytes, size_t *out)
{
	size_t n = nbytes / 2;
	float *f = mkc_arena_alloc(g->ctx->arena, n * sizeof *f + 1);
	for (size_t i = 0; i < n; i++)
		f[i] = (float)mkc_load_double(MKC_DT_FLOAT16, data, (int64_t)i);
	*out = n * sizeof *f;
	return f;
}

/*
 * A past input p and present output q: q made by a node that reads p (a
 * Concat, GroupQueryAttention, Attention), the same shape but one axis,
 * p's a bare symbol there.
 */
static bool
cache_pair(const mkc_tensor *p, const mkc_tensor *q)
{
	bool reads = false;
	for (int i = 0; q->producer && i < q->producer->nin; i++)
		reads |= q->producer->in[i] == p;
	if (!reads || p->rank < 1 || p->rank != q->rank)
		return false;
	int differ = 0;
	for (int d = 0; d < p->rank; d++)
		if (!mkc_dim_eq(p->shape[d], q->shape[d])) {
			if (mkc_dim_bare_sym(p->shape[d]) < 0)
				return false;
			differ++;
		}
	return differ == 1;
}

static bool
in_vec(const mkc_vec *v, const mkc_tensor *t)
{
	for (int i = 0; i < v->n; i++)
		if (v->v[i] == t)
			return true;
	return false;
}

/* Whether float16 graph input or output t is one of a cache pair, kept in place. */
static bool
is_cache(const mkc_graph *g, const mkc_tensor *t)
{
	if (g->kv_cap <= 0)
		return false;
	const mkc_vec *other = t->kind == MKC_TK_INPUT ? &g->outputs : &g->inputs;
	for (int i = 0; i < other->n; i++) {
		const mkc_tensor *u = other->v[i];
		if ((u->dtype == MKC_DT_FLOAT16 || in_vec(&g->half_caches, u)) &&
		    (t->kind == MKC_TK_INPUT ? cache_pair(t, u) : cache_pair(u, t)))
			return true;
	}
	return false;
}

/* t, if a float16 past or present kept in place: float32, listed for the state pass's check. */
static bool
as_cache(mkc_graph *g, mkc_tensor *t)
{
	if (!is_cache(g, t))
		return false;
	t->dtype = MKC_DT_FLOAT;
	mkc_vec_push(g->ctx->arena, &g->half_caches, t);
	return true;
}

/* A Cast x -> y (to y's type) named after the boundary tensor it converts. */
static mkc_node *
add_cast(mkc_graph *g, const char *name, mkc_tensor *x, mkc_tensor *y)
{
	mkc_node *c = mkc_graph_add_node(g, name, "", "Cast", 1, 1, 1);
	c->in[0] = x;
	c->out[0] = y;
	y->producer = c;
	c->attr[0] = (mkc_attr){.name = "to", .type = MKC_AT_INT, .i = y->dtype};
	return c;
}

/* A float32 tensor shaped as t, named t_f32. */
static mkc_tensor *
twin(mkc_graph *g, const mkc_tensor *t)
{
	mkc_tensor *w = mkc_graph_tensor(g, mkc_graph_fresh_name(g, t->name, "f32"));
	w->dtype = MKC_DT_FLOAT;
	w->rank = t->rank;
	memcpy(w->shape, t->shape, sizeof w->shape);
	return w;
}

/*
 * Whether t is a graph input fed at run time or a graph output: its type is
 * the model's interface (an input bound to a constant, --const, is a weight).
 */
static bool
in_interface(const mkc_graph *g, const mkc_tensor *t)
{
	return t->kind == MKC_TK_INPUT || in_vec(&g->outputs, t);
}

/* Every reader of from reads to instead. */
static void
redirect(mkc_graph *g, const mkc_tensor *from, mkc_tensor *to)
{
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] == from)
				n->in[j] = to;
	}
}

/* Float16 attributes: Cast's to, a tensor's value (ConstantOfShape). */
static void
widen_attrs(mkc_graph *g, mkc_node *n)
{
	for (int i = 0; i < n->nattr; i++) {
		mkc_attr *a = &n->attr[i];
		if (n->op == MKC_OP_CAST && a->type == MKC_AT_INT && !strcmp(a->name, "to") &&
		    a->i == MKC_DT_FLOAT16)
			a->i = MKC_DT_FLOAT;
		if (a->type == MKC_AT_TENSOR && a->t && a->t->dtype == MKC_DT_FLOAT16) {
			mkc_tensor *t = mkc_arena_alloc(g->ctx->arena, sizeof *t);
			*t = *a->t;
			t->data = widen(g, a->t->data, a->t->nbytes, &t->nbytes);
			t->dtype = MKC_DT_FLOAT;
			a->t = t;
		}
	}
}

int
mkc_pass_half(mkc_graph *g)
{
	bool any = false;
	for (int i = 0; i < g->tensors.n && !any; i++)
		any = MKC_TENSOR(g, i)->dtype == MKC_DT_FLOAT16;
	if (!any)
		return 0;
	int nnodes = g->nodes.n, in = 0, out = 0, caches = 0, weights = 0;
	for (int i = 0; i < nnodes; i++)
		widen_attrs(g, MKC_NODE(g, i));
	/* the interface first: its casts and twins are what the rest is retyped around */
	mkc_node *first = nnodes ? MKC_NODE(g, 0) : NULL;
	for (int i = 0; i < g->inputs.n; i++) {
		mkc_tensor *x = MKC_INPUT(g, i);
		if (x->dtype != MKC_DT_FLOAT16 || x->kind != MKC_TK_INPUT)
			continue;
		if (as_cache(g, x)) {
			caches++;
			continue;
		}
		mkc_tensor *w = twin(g, x);
		redirect(g, x, w);
		mkc_node *c = add_cast(g, mkc_arena_printf(g->ctx->arena, "%s/to_float32", x->name), x,
				       w);
		if (first)
			mkc_graph_move_before(g, c, first);
		first = c;
		in++;
	}
	for (int i = 0; i < g->outputs.n; i++) {
		mkc_tensor *y = MKC_OUTPUT(g, i);
		/* a folded output keeps its float16 bytes, written as they are */
		if (y->dtype != MKC_DT_FLOAT16 || !y->producer || y->data || y->kind != MKC_TK_OUTPUT)
			continue;
		if (as_cache(g, y)) {
			caches++;
			continue;
		}
		mkc_tensor *w = twin(g, y);
		mkc_node *p = y->producer;
		for (int j = 0; j < p->nout; j++)
			if (p->out[j] == y)
				p->out[j] = w;
		w->producer = p;
		redirect(g, y, w);
		add_cast(g, mkc_arena_printf(g->ctx->arena, "%s/to_float16", y->name), w, y);
		out++;
	}
	for (int i = 0; i < g->tensors.n; i++) {
		mkc_tensor *t = MKC_TENSOR(g, i);
		if (t->dtype != MKC_DT_FLOAT16 || in_interface(g, t))
			continue;
		if (t->data) {
			t->data = widen(g, t->data, t->nbytes, &t->nbytes);
			if (t->initializer) {
				t->file_dtype = MKC_DT_FLOAT16;
				weights++;
			}
		}
		t->dtype = MKC_DT_FLOAT;
	}
	mkc_graph_count_live_uses(g);
	mkc_progress(g->ctx, "half: float16 computed as float32: %d initializers widened as they "
		     "load, %d inputs and %d outputs cast at the boundary, %d KV cache tensors "
		     "float32 state", weights, in, out, caches);
	return 0;
}
