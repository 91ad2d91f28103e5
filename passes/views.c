/*
 * views.c - Reshape and its kin as views: no task, the bytes of the input.
 *
 * requires: tile (tasks in node order, with their regions); no memory,
 *           deps or later pass has run yet.
 * provides: plan->view_of[y] = x for every output y of a Reshape, Flatten,
 *           Squeeze or Unsqueeze that is a view of tensor x: the emitter
 *           gives y the buffer of x, and y keeps its own shape (dense
 *           strides from its dims). The view node has no task; every region
 *           of another task on y is a region on x, the whole of x. x is
 *           never a view itself (chains resolve to their first tensor).
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
 * capacity) and no other storage type (bf16 weights), and is an
 * intermediate, a graph input or a weight.
 */
#include "passes.h"

#include <string.h>

static bool
is_view_op(mkc_op op)
{
	return op == MKC_OP_RESHAPE || op == MKC_OP_FLATTEN || op == MKC_OP_SQUEEZE ||
	       op == MKC_OP_UNSQUEEZE;
}

static bool
can_view(const mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *y = n->out[0];
	if (!is_view_op(n->op) || n->nout != 1 || !x || !y)
		return false;
	if (y->kind != MKC_TK_INTERMEDIATE || mkc_tensor_is_const(y) || y->cap || y->storage)
		return false;
	if (x->kind != MKC_TK_INTERMEDIATE && x->kind != MKC_TK_INPUT && x->kind != MKC_TK_WEIGHT)
		return false;
	return x->dtype == y->dtype && !x->cap && !x->storage &&
	       mkc_tensor_numel(x) == mkc_tensor_numel(y);
}

/* Drops the tasks of view nodes; the others keep their order and get new ids. */
static int
drop_tasks(mkc_plan *p)
{
	int k = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		const mkc_tensor *y = t->node->nout ? t->node->out[0] : NULL;
		if (y && is_view_op(t->node->op) && p->view_of[y->id] >= 0)
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
	/* nodes in order: x's own view, if any, is known when y's is decided */
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		if (!can_view(n))
			continue;
		int x = n->in[0]->id;
		p->view_of[n->out[0]->id] = p->view_of[x] >= 0 ? p->view_of[x] : x;
		views++;
	}
	int dropped = drop_tasks(p);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			mkc_region *r = k < t->nreads ? &t->reads[k] : &t->writes[k - t->nreads];
			int base = p->view_of[r->t->id];
			if (base < 0)
				continue;
			/* only readers are left: a view's writer was its own node */
			MKC_ASSERT(k < t->nreads);
			r->t = MKC_TENSOR(g, base);
			r->box = mkc_box_full(r->t);
		}
	}
	mkc_progress(g->ctx, "views: %d reshapes read in place, %d tasks fewer", views, dropped);
	return 0;
}
