/*
 * views.c - Reshape and its kin as views: no task, the bytes of the input;
 * and a prompt chunk's head transposes, read or written in place.
 *
 * requires: tile (tasks in node order, with their regions); no memory,
 *           deps or later pass has run yet.
 * provides: plan->view_of[y] = x for every output y of a Reshape, Flatten,
 *           Squeeze or Unsqueeze that is a view of tensor x: the emitter
 *           gives y the buffer of x, and y keeps its own shape (dense
 *           strides from its dims). The view node has no task; every region
 *           of another task on y is a region on x, the whole of x. x is
 *           never a view itself (chains resolve to their first tensor).
 *           Likewise for a Transpose's output (below: its strides
 *           permuted), and plan->view_of[a] = o for an attention's output
 *           a that its one reader, a Transpose, turns into o (below: the
 *           attention's tiles write o, each region its box permuted).
 *
 * Why. These ops only rename the dims of bytes already in place, yet each
 * was a task that copied its input: a stage of the decode step's critical
 * path (one after k_proj, one after attention, every layer) with its own
 * hand-off cost, and a buffer.
 *
 * Soundness. deps, memory and verify all work from regions: reading y's box
 * B reads some bytes of x, and the region x whole covers them, so every
 * writer of x is ordered before that reader (RAW), and x stays alive, and
 * its bytes unshared, until that reader is done (the memory pass's lifetime
 * of x ends at its last reader; WAR with whatever reuses x's bytes then
 * follows from deps and is checked by verify). Whole rather than exact
 * because a box of y is in general no box of x; the cost is a wait on all of
 * x's producer tiles, which the copy task made every reader wait for
 * anyway.
 *
 * A node is a view when its output is an intermediate (a graph output has
 * a buffer of the caller's) whose value is not known at compile time, and
 * its data input x has the same element type, dense layout (no KV-cache
 * capacity) and the same storage type (a weight's bf16 is not an
 * intermediate's float32; passes/narrow.c stores a chunk attention's
 * output, its Transpose's and its Reshape's as bf16 alike), and is an
 * intermediate, a graph input or a weight.
 *
 * A Transpose is a view too where its last axis stays last and every
 * reader of y walks it through its view's strides: a 4-D RotaryEmbedding
 * (backends/c/cache.h's mkc_rotary) or a CacheAppend (mkc_cache_append_box,
 * or data.h's mkc_strided), each at its input 0. Such a y keeps its own
 * dims, but its strides are x's dense strides permuted (the emitter's
 * decl), so it is no base for a Reshape's view, nor for another
 * Transpose's. A prompt chunk's heads, [S, H * D] -> [1, S, H, D] -> [1,
 * H, S, D], are so read where the products left them: the 1B shape's
 * 1024-token chunk spent 1.1 ms of its critical path and 2.4 ms of the
 * workers' time copying them (H100, session 27). A decode step's were
 * Reshapes already (canon).
 */
#include "passes.h"
#include "../ir/kernel.h"

#include <string.h>

static bool
is_view_op(mkc_op op)
{
	return op == MKC_OP_RESHAPE || op == MKC_OP_FLATTEN || op == MKC_OP_SQUEEZE ||
	       op == MKC_OP_UNSQUEEZE || op == MKC_OP_TRANSPOSE;
}

/* A reader that takes input 0 by its view's strides. */
static bool
strided_reader(const mkc_node *n, int input)
{
	if (input != 0 || !n->kern)
		return false;
	return (n->kern->kind == MKC_KERN_ROTARY && n->in[0]->rank == 4) ||
	       n->kern->kind == MKC_KERN_CACHE_APPEND;
}

/* x is a Transpose's view: its bytes are not in its dims' dense order. */
static bool
transposed(const mkc_plan *p, const mkc_tensor *x)
{
	return p->view_of[x->id] >= 0 && x->producer && x->producer->op == MKC_OP_TRANSPOSE;
}

static bool
can_view(const mkc_plan *p, const mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *y = n->out[0];
	if (!is_view_op(n->op) || n->nout != 1 || !x || !y)
		return false;
	if (y->kind != MKC_TK_INTERMEDIATE || mkc_tensor_is_const(y) || y->cap)
		return false;
	if (x->kind != MKC_TK_INTERMEDIATE && x->kind != MKC_TK_INPUT && x->kind != MKC_TK_WEIGHT)
		return false;
	if (x->dtype != y->dtype || x->cap || x->storage != y->storage || transposed(p, x) ||
	    mkc_tensor_numel(x) != mkc_tensor_numel(y))
		return false;
	if (n->op != MKC_OP_TRANSPOSE)
		return true;
	return n->kern && x->rank == y->rank && y->rank > 0 && n->kern->perm[y->rank - 1] == y->rank - 1 &&
	       mkc_graph_read_only_by(p->g, y, strided_reader);
}

/*
 * The other way round: an Attention's output a whose one reader is a
 * Transpose n (last axis kept) into a plain intermediate o is a view of o,
 * a's strides o's permuted back, so the attention writes the transposed
 * layout itself (every attention body takes its output's strides) and n
 * has no task. a's writers then write o, each its box permuted (exact:
 * the tiles write disjoint boxes of o, as they did of a).
 */
static bool
can_write_through(const mkc_plan *p, const mkc_node *n)
{
	const mkc_graph *g = p->g;
	if (n->op != MKC_OP_TRANSPOSE || n->nout != 1 || !n->kern || !n->in[0] || !n->out[0])
		return false;
	const mkc_tensor *a = n->in[0], *o = n->out[0];
	const mkc_node *w = a->producer;
	if (!w || (w->op != MKC_OP_ATTENTION && w->op != MKC_OP_ATTN_MERGE) || w->nout != 1 ||
	    w->out[0] != a)
		return false;
	if (a->kind != MKC_TK_INTERMEDIATE || mkc_tensor_is_const(a) || a->cap ||
	    o->kind != MKC_TK_INTERMEDIATE || mkc_tensor_is_const(o) || o->cap ||
	    a->dtype != o->dtype || a->storage != o->storage || a->rank != o->rank || o->rank == 0 ||
	    n->kern->perm[o->rank - 1] != o->rank - 1 || p->view_of[a->id] >= 0 ||
	    p->view_of[o->id] >= 0)
		return false;
	return mkc_graph_sole_reader(g, a) == n;
}

/* Box b of a, whose base o is Transpose(a): o's axis d is a's axis perm[d]. */
static mkc_box
box_through(const mkc_node *n, const mkc_box *b)
{
	mkc_box o = *b;
	for (int d = 0; d < n->out[0]->rank; d++) {
		o.lo[d] = b->lo[n->kern->perm[d]];
		o.hi[d] = b->hi[n->kern->perm[d]];
	}
	return o;
}

/* Drops the tasks of view nodes (gone); the others keep their order and get new ids. */
static int
drop_tasks(mkc_plan *p, const bool *gone)
{
	int k = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		if (gone[t->node->id])
			continue;
		t->id = k;
		p->tasks.v[k++] = t;
	}
	int dropped = p->tasks.n - k;
	p->tasks.n = k;
	return dropped;
}

int
mkc_pass_views(mkc_plan *p)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	p->view_of = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *p->view_of);
	for (int i = 0; i < g->tensors.n; i++)
		p->view_of[i] = -1;
	int views = 0;
	bool *gone = mkc_arena_alloc(a, (size_t)(g->nodes.n + 1) * sizeof *gone);
	/* per tensor, the Transpose its writers write through (a view of its output) */
	const mkc_node **through = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *through);
	/* nodes in order: x's own view, if any, is known when y's is decided */
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		if (can_view(p, n)) {
			int x = n->in[0]->id;
			p->view_of[n->out[0]->id] = p->view_of[x] >= 0 ? p->view_of[x] : x;
		} else if (can_write_through(p, n)) {
			p->view_of[n->in[0]->id] = n->out[0]->id;
			through[n->in[0]->id] = n;
		} else {
			continue;
		}
		gone[n->id] = true;
		views++;
	}
	int dropped = drop_tasks(p, gone);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			mkc_region *r = k < t->nreads ? &t->reads[k] : &t->writes[k - t->nreads];
			int base = p->view_of[r->t->id];
			if (base < 0)
				continue;
			const mkc_node *n = through[r->t->id];
			/* a view's writer was its own node, but for a write-through's */
			MKC_ASSERT(k < t->nreads || n);
			r->box = n ? box_through(n, &r->box) : mkc_box_full(MKC_TENSOR(g, base));
			r->t = MKC_TENSOR(g, base);
		}
	}
	mkc_progress(g->ctx, "views: %d reshapes and transposes read in place, %d tasks fewer", views,
		     dropped);
	return 0;
}
