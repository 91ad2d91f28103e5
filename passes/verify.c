/*
 * verify.c - the proof that a plan is safe, run on every compile before
 * anything is emitted.
 *
 * requires: schedule (tasks with regions, events, worker queues).
 * provides: nothing new; it fails, naming tasks, nodes and regions, unless
 *   1. every event's threshold equals the number of tasks that signal it,
 *      each signalling once, and every id and queue slot is well formed;
 *   2. the queues cannot deadlock: executing them with the event rule
 *      (a task starts when each event it waits on has reached its
 *      threshold) runs every task;
 *   3. every pair of tasks whose regions of one tensor overlap, or that
 *      touch two intermediates placed on overlapping bytes, at least one
 *      of them writing, is ordered the way the graph orders them: the
 *      later task is reachable from the earlier one through "signals an
 *      event this task waits on" and "comes before it in the same queue".
 *
 *   4. step 3 holds with the events alone, without the queues' order, so
 *      that any topological hand-out of the tasks is safe as well;
 *   5. every element of a node's output is written by one of its tasks,
 *      with each symbol at its largest value (a step of the most tokens):
 *      the boxes of their writes to it, cut to its extent, add up to the
 *      whole.
 *      Step 3 already fails two tasks of a node writing the same element
 *      (nothing orders them), so the boxes are disjoint and the sum is the
 *      cover. A cut that leaves elements unwritten (a block of a norm's
 *      rows planned as one run of half of them, session 26) reads as
 *      stale memory on one target and not another; it fails here on all.
 *
 * The approach: the simulation of step 2 yields an execution order that is
 * topological for the happens-before relation of step 3, so one pass over
 * it builds, per task, the set of tasks that happen before it (a bitset
 * row). Step 3 then compares every conflicting pair against those sets.
 * The check is independent of how deps and events were computed: it starts
 * again from the regions, so a dependency that a pass dropped shows up here
 * as an unordered pair.
 *
 * Counting an event as "reached" needs each signaller to signal once per
 * step; thresholds equal to the signaller count (step 1) then mean a
 * waiting task starts only after all of them finished.
 */
#include "passes.h"
#include "task.h"

#include <stdlib.h>
#include <string.h>

static int
fail_task(mkc_plan *p, const mkc_task *t, const char *fmt, const char *what, int x)
{
	char msg[256];
	snprintf(msg, sizeof msg, fmt, what, x);
	return mkc_error(p->g->ctx, "%s: schedule check failed: task %d (node '%s' (%s), tile %d of %d): %s",
			 p->g->path, t->id, t->node->name, t->node->op_type, t->tile, t->ntiles, msg);
}

/* Step 1. */
static int
check_structure(mkc_plan *p, int *signallers)
{
	int nw = p->tp.nworkers, nev = p->events.n;
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		if (t->worker < 0 || t->worker >= nw || t->pos < 0 || t->pos >= p->qlen[t->worker] ||
		    p->queues[t->worker][t->pos] != t)
			return fail_task(p, t, "%s %d", "is not in its worker's queue at its position", t->worker);
		for (int k = 0; k < t->nwaits; k++)
			if (t->waits[k] < 0 || t->waits[k] >= nev)
				return fail_task(p, t, "%s %d", "waits on an unknown event", t->waits[k]);
		for (int k = 0; k < t->nsignals; k++) {
			int e = t->signals[k];
			if (e < 0 || e >= nev)
				return fail_task(p, t, "%s %d", "signals an unknown event", e);
			for (int j = 0; j < k; j++)
				if (t->signals[j] == e)
					return fail_task(p, t, "%s %d", "signals an event twice:", e);
			signallers[e]++;
		}
	}
	for (int e = 0; e < nev; e++) {
		const mkc_event *ev = MKC_EVENT(p, e);
		if (ev->threshold != signallers[e] || ev->threshold <= 0)
			return mkc_error(p->g->ctx, "%s: schedule check failed: event %d has threshold %d but %d task(s) signal it",
					 p->g->path, e, ev->threshold, signallers[e]);
	}
	return 0;
}

static bool
can_start(const mkc_plan *p, const mkc_task *t, const int *count)
{
	for (int k = 0; k < t->nwaits; k++)
		if (count[t->waits[k]] < MKC_EVENT(p, t->waits[k])->threshold)
			return false;
	return true;
}

/* Step 2: runs the queues; order[] receives the execution order. */
static int
simulate(mkc_plan *p, mkc_task **order)
{
	mkc_arena *a = p->g->ctx->arena;
	int nw = p->tp.nworkers, done = 0;
	int *count = mkc_arena_alloc(a, (size_t)(p->events.n + 1) * sizeof *count);
	int *next = mkc_arena_alloc(a, (size_t)nw * sizeof *next);
	for (bool moved = true; moved;) {
		moved = false;
		for (int w = 0; w < nw; w++) {
			while (next[w] < p->qlen[w] && can_start(p, p->queues[w][next[w]], count)) {
				mkc_task *t = p->queues[w][next[w]++];
				for (int k = 0; k < t->nsignals; k++)
					count[t->signals[k]]++;
				order[done++] = t;
				moved = true;
			}
		}
	}
	if (done == p->tasks.n)
		return 0;
	for (int w = 0; w < nw; w++) {
		if (next[w] == p->qlen[w])
			continue;
		const mkc_task *t = p->queues[w][next[w]];
		int e = -1;
		for (int k = 0; k < t->nwaits && e < 0; k++)
			if (count[t->waits[k]] < MKC_EVENT(p, t->waits[k])->threshold)
				e = t->waits[k];
		return fail_task(p, t, "%s %d, which can never fire: the queues deadlock",
				 "waits forever on event", e);
	}
	MKC_ASSERT(!"simulation stalled with every queue empty");
	return -1;
}

/*
 * A row's words below full are all ones and from hi on all zeros: a task
 * follows nearly every task of the layers before it and none far after, so
 * a join fills the prefix and ORs only the words between (the Qwen3-8B
 * shape's chunk plan of 112k tasks: rows of 1753 words).
 */
typedef struct {
	int full, hi;
} span_of_row;

typedef struct {
	int words;
	uint64_t *bits;      /* row i: the tasks that happen before task i */
	span_of_row *sp;     /* row i's */
	uint64_t *ev;        /* row e: event e's signallers and what happens before them */
	span_of_row *evsp;   /* those rows' (hi 0: not built yet) */
} reach;

static uint64_t *
row(reach *r, int i)
{
	return r->bits + (size_t)i * (size_t)r->words;
}

/* d |= s, d's span *ds and s's ss (d's full part is then at least s's) */
static void
or_row(uint64_t *d, span_of_row *ds, const uint64_t *s, span_of_row ss)
{
	for (; ds->full < ss.full; ds->full++)
		d[ds->full] = ~(uint64_t)0;
	for (int k = ds->full; k < ss.hi; k++)
		d[k] |= s[k];
	ds->hi = ss.hi > ds->hi ? ss.hi : ds->hi;
}

/* bit i in d, of span *ds */
static void
set_bit(uint64_t *d, span_of_row *ds, int i)
{
	d[i / 64] |= (uint64_t)1 << (i % 64);
	ds->hi = i / 64 + 1 > ds->hi ? i / 64 + 1 : ds->hi;
}

/* the words of d's span that became all ones */
static void
grow_full(const uint64_t *d, span_of_row *ds)
{
	while (ds->full < ds->hi && d[ds->full] == ~(uint64_t)0)
		ds->full++;
	ds->hi = ds->full > ds->hi ? ds->full : ds->hi;
}

static void
join(reach *r, int to, int from)
{
	or_row(row(r, to), &r->sp[to], row(r, from), r->sp[from]);
	set_bit(row(r, to), &r->sp[to], from);
}

static bool
before(reach *r, int a, int b)
{
	return (row(r, b)[a / 64] >> (a % 64)) & 1;
}

/*
 * Happens-before over the execution order; events' signallers come first.
 * An event of several signallers gets a row of its own, their rows and
 * themselves, built when its first waiter comes (all of them have run by
 * then) and joined by each waiter: S + W joins where each of W waiters
 * joining each of S signallers took S * W (the 1B chunk plan's 66k tasks:
 * verify 2.3 -> 0.7 s on the development machine, with
 * ir/task.c's overlap test on constants).
 */
static void
build_reach(mkc_plan *p, mkc_task **order, reach *r, int **by_event, const int *nsig,
	    bool queues)
{
	mkc_arena *a = p->g->ctx->arena;
	r->words = (p->tasks.n + 63) / 64;
	size_t bytes = (size_t)r->words * (size_t)p->tasks.n * 8 + 8;
	/* nt * nt / 8 bytes, 268 MB at 46k tasks, and a row an event of several
	 * signallers, of a pass's own (mkc_zalloc: the words past a row's last
	 * task, and the rows of events of one signaller, are never written); a
	 * second build takes fresh ones */
	free(r->bits);
	free(r->ev);
	r->bits = mkc_zalloc(bytes);
	r->ev = mkc_zalloc((size_t)r->words * (size_t)p->events.n * 8 + 8);
	if (r->sp) {
		memset(r->sp, 0, (size_t)p->tasks.n * sizeof *r->sp);
		memset(r->evsp, 0, (size_t)p->events.n * sizeof *r->evsp);
	} else {
		r->sp = mkc_arena_alloc(a, (size_t)(p->tasks.n + 1) * sizeof *r->sp);
		r->evsp = mkc_arena_alloc(a, (size_t)(p->events.n + 1) * sizeof *r->evsp);
	}
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = order[i];
		if (queues && t->pos > 0)
			join(r, t->id, p->queues[t->worker][t->pos - 1]->id);
		for (int k = 0; k < t->nwaits; k++) {
			int e = t->waits[k];
			if (nsig[e] == 1) {
				join(r, t->id, by_event[e][0]);
				continue;
			}
			uint64_t *er = r->ev + (size_t)e * (size_t)r->words;
			if (!r->evsp[e].hi) {
				for (int j = 0; j < nsig[e]; j++) {
					const int q = by_event[e][j];
					or_row(er, &r->evsp[e], row(r, q), r->sp[q]);
					set_bit(er, &r->evsp[e], q);
				}
				grow_full(er, &r->evsp[e]);
			}
			or_row(row(r, t->id), &r->sp[t->id], er, r->evsp[e]);
		}
		grow_full(row(r, t->id), &r->sp[t->id]);
	}
}

static int
unordered(mkc_plan *p, const mkc_task *x, const mkc_region *rx, bool wx,
	  const mkc_task *y, const mkc_region *ry, bool wy)
{
	char bx[256], by[256];
	const mkc_graph *g = p->g;
	mkc_tensor tmp = *rx->t;
	for (int i = 0; i < tmp.rank; i++)
		mkc_dim_sub(rx->box.hi[i], rx->box.lo[i], &tmp.shape[i]);
	mkc_shape_str(g, &tmp, bx, sizeof bx);
	tmp = *ry->t;
	for (int i = 0; i < tmp.rank; i++)
		mkc_dim_sub(ry->box.hi[i], ry->box.lo[i], &tmp.shape[i]);
	mkc_shape_str(g, &tmp, by, sizeof by);
	return mkc_error(g->ctx,
		"%s: schedule check failed: task %d (node '%s' (%s), tile %d) %s '%s' (a %s box) "
		"and task %d (node '%s' (%s), tile %d) %s it (a %s box), overlapping, but nothing orders task %d after task %d",
		g->path, x->id, x->node->name, x->node->op_type, x->tile, wx ? "writes" : "reads",
		rx->t->name, bx, y->id, y->node->name, y->node->op_type, y->tile,
		wy ? "writes" : "reads", by, y->id, x->id);
}

typedef struct {
	const mkc_task *t;
	const mkc_region *r;
	bool w;
} acc;

/* The later of two conflicting accesses must happen after the earlier. */
static bool
misordered(mkc_plan *p, reach *r, const acc *x, const acc *y)
{
	const acc *first = x->t->id < y->t->id ? x : y;
	const acc *second = first == x ? y : x;
	if (before(r, first->t->id, second->t->id))
		return false;
	unordered(p, first->t, first->r, first->w, second->t, second->r, second->w);
	return true;
}

/* Two intermediates whose places in the arena overlap (computed afresh here). */
static bool
shares_bytes(const mkc_plan *p, int a, int b)
{
	if (p->mem_off[a] < 0 || p->mem_off[b] < 0)
		return false;
	return p->mem_off[a] < p->mem_off[b] + p->mem_size[b] &&
	       p->mem_off[b] < p->mem_off[a] + p->mem_size[a];
}

/*
 * The tasks that touch a tensor, and those that write it, as bits over the
 * words lo..hi of task ids that they span.
 */
typedef struct {
	int lo, hi;
	uint64_t *all, *w;
} span;

static void
build_span(mkc_arena *a, const mkc_vec *v, span *s)
{
	s->lo = -1;
	if (!v->n)
		return;
	s->lo = s->hi = ((const acc *)v->v[0])->t->id / 64;
	for (int i = 0; i < v->n; i++) {
		int w = ((const acc *)v->v[i])->t->id / 64;
		s->lo = w < s->lo ? w : s->lo;
		s->hi = w > s->hi ? w : s->hi;
	}
	s->all = mkc_arena_alloc(a, (size_t)(s->hi - s->lo + 1) * 8);
	s->w = mkc_arena_alloc(a, (size_t)(s->hi - s->lo + 1) * 8);
	for (int i = 0; i < v->n; i++) {
		const acc *x = v->v[i];
		uint64_t bit = (uint64_t)1 << (x->t->id % 64);
		s->all[x->t->id / 64 - s->lo] |= bit;
		if (x->w)
			s->w[x->t->id / 64 - s->lo] |= bit;
	}
}

/*
 * Whether every access y of v happens after each earlier task of the other
 * tensor (spanned by o) that conflicts with it: any of them when y writes,
 * its writers when y reads. Called both ways round, this is the pairwise
 * test of two tensors sharing bytes below, pair for pair (a task never
 * conflicts with itself: only ids below y's count), but a word of 64
 * tasks at a time: those pairs numbered 1G for an 8B model.
 */
static bool
span_ordered(reach *r, const mkc_vec *v, const span *o)
{
	if (o->lo < 0)
		return true;
	for (int i = 0; i < v->n; i++) {
		const acc *y = v->v[i];
		int t = y->t->id, last = t / 64 < o->hi ? t / 64 : o->hi;
		const uint64_t *s = y->w ? o->all : o->w, *rw = row(r, t);
		/* t's row is all ones below its full words: nothing there is unordered */
		for (int k = o->lo > r->sp[t].full ? o->lo : r->sp[t].full; k <= last; k++) {
			uint64_t m = s[k - o->lo];
			if (k == t / 64)
				m &= ((uint64_t)1 << (t % 64)) - 1;
			if (m & ~rw[k])
				return false;
		}
	}
	return true;
}

/* Step 3: every conflicting pair is ordered as the task order says. */
static int
check_conflicts(mkc_plan *p, reach *r)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	mkc_vec *by_tensor = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *by_tensor);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			acc *x = mkc_arena_alloc(a, sizeof *x);
			x->t = t;
			x->w = k >= t->nreads;
			x->r = x->w ? &t->writes[k - t->nreads] : &t->reads[k];
			mkc_vec_push(a, &by_tensor[x->r->t->id], x);
		}
	}
	for (int ti = 0; ti < g->tensors.n; ti++) {
		mkc_vec *v = &by_tensor[ti];
		for (int i = 0; i < v->n; i++) {
			const acc *x = v->v[i];
			for (int j = i + 1; j < v->n; j++) {
				const acc *y = v->v[j];
				if ((!x->w && !y->w) || x->t == y->t)
					continue;
				if (!mkc_box_overlap(x->r->t->rank, &x->r->box, &y->r->box))
					continue;
				if (misordered(p, r, x, y))
					return -1;
			}
		}
	}
	/* tensors placed on overlapping bytes: every access pair with a write */
	if (!p->mem_off)
		return 0;
	span *sp = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *sp);
	for (int ti = 0; ti < g->tensors.n; ti++)
		build_span(a, &by_tensor[ti], &sp[ti]);
	for (int a1 = 0; a1 < g->tensors.n; a1++)
		for (int a2 = a1 + 1; a2 < g->tensors.n; a2++) {
			if (!shares_bytes(p, a1, a2))
				continue;
			const mkc_vec *v1 = &by_tensor[a1], *v2 = &by_tensor[a2];
			if (span_ordered(r, v2, &sp[a1]) && span_ordered(r, v1, &sp[a2]))
				continue;
			/* some pair is not ordered: find the first, to name it */
			for (int i = 0; i < v1->n; i++)
				for (int j = 0; j < v2->n; j++) {
					const acc *x = v1->v[i], *y = v2->v[j];
					if ((x->w || y->w) && x->t != y->t && misordered(p, r, x, y))
						return -1;
				}
			MKC_ASSERT(!"span_ordered found a pair that the pairwise test does not");
		}
	return 0;
}

/* The elements of box b of y with the symbols at val, cut to y's extent there. */
static int64_t
box_volume(const mkc_tensor *y, const mkc_box *b, const int64_t *val)
{
	int64_t v = 1;
	for (int d = 0; d < y->rank; d++) {
		int64_t lo, hi, n;
		if (!mkc_dim_value(b->lo[d], val, &lo) || !mkc_dim_value(b->hi[d], val, &hi) ||
		    !mkc_dim_value(y->shape[d], val, &n))
			return -1;
		lo = lo < 0 ? 0 : lo > n ? n : lo;
		hi = hi < lo ? lo : hi > n ? n : hi;
		if (hi > lo && v > MKC_MAX_BYTES / (hi - lo))
			return -1;
		v *= hi - lo;
	}
	return v;
}

/*
 * Step 5, for each node with one output and tasks, by the regions of it
 * that they write (a rotating HeadProj's box counts pairs; its regions,
 * elements). A cache kept as state is written only at the step's new
 * positions (CacheAppend, a HeadProj into it), so it is left out.
 */
static int
check_cover(mkc_plan *p)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	int64_t *val = mkc_arena_alloc(a, (size_t)(g->syms.n + 1) * sizeof *val);
	for (int s = 0; s < g->syms.n; s++)
		val[s] = mkc_graph_sym_max(g, s, p->tp.max_dim ? p->tp.max_dim : 4096);
	/* per node: the elements its tasks write (-1: not counted), and whether it has tasks */
	int64_t *sum = mkc_arena_alloc(a, (size_t)(g->nodes.n + 1) * sizeof *sum);
	bool *tasked = mkc_arena_alloc(a, (size_t)(g->nodes.n + 1) * sizeof *tasked);
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		const mkc_node *n = t->node;
		const mkc_tensor *y = n->nout == 1 ? n->out[0] : NULL;
		if (!y || y->cap || y->kind == MKC_TK_STATE || sum[n->id] < 0)
			continue;
		tasked[n->id] = true;
		/* an output that is a view (passes/views.c) is written as its base */
		const mkc_tensor *w = p->view_of && p->view_of[y->id] >= 0
					      ? MKC_TENSOR(g, p->view_of[y->id]) : y;
		for (int k = 0; k < t->nwrites && sum[n->id] >= 0; k++) {
			if (t->writes[k].t != w)
				continue;
			int64_t v = box_volume(w, &t->writes[k].box, val);
			sum[n->id] = v < 0 ? -1 : sum[n->id] + v;
		}
	}
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		mkc_box whole;
		if (!tasked[n->id] || sum[n->id] < 0)
			continue;
		whole = mkc_box_full(n->out[0]);
		int64_t all = box_volume(n->out[0], &whole, val);
		if (all >= 0 && sum[n->id] != all)
			return mkc_error(g->ctx, "%s: schedule check failed: the tasks of node '%s' (%s) "
					 "write %lld of its output's %lld elements (symbols at their "
					 "largest)", g->path, n->name, n->op_type, (long long)sum[n->id],
					 (long long)all);
	}
	return 0;
}

int
mkc_pass_verify(mkc_plan *p)
{
	mkc_arena *a = p->g->ctx->arena;
	int *nsig = mkc_arena_alloc(a, (size_t)(p->events.n + 1) * sizeof *nsig);
	if (check_structure(p, nsig) != 0 || check_cover(p) != 0)
		return -1;
	/* who signals each event */
	int **by_event = mkc_arena_alloc(a, (size_t)(p->events.n + 1) * sizeof *by_event);
	int *fill = mkc_arena_alloc(a, (size_t)(p->events.n + 1) * sizeof *fill);
	for (int e = 0; e < p->events.n; e++)
		by_event[e] = mkc_arena_alloc(a, (size_t)(nsig[e] + 1) * sizeof **by_event);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->nsignals; k++)
			by_event[t->signals[k]][fill[t->signals[k]]++] = t->id;
	}
	mkc_task **order = mkc_arena_alloc(a, (size_t)(p->tasks.n + 1) * sizeof *order);
	if (simulate(p, order) != 0)
		return -1;
	reach r = {0, NULL, NULL, NULL, NULL};
	build_reach(p, order, &r, by_event, nsig, true);
	if (check_conflicts(p, &r) != 0) {
		free(r.bits);
		free(r.ev);
		return -1;
	}
	/*
	 * Once more with the events alone: then any order of the tasks that
	 * respects them is safe too, such as one shared queue handed out in
	 * any topological order (the C target's shuffled test mode).
	 */
	build_reach(p, order, &r, by_event, nsig, false);
	int bad = check_conflicts(p, &r);
	free(r.bits);
	free(r.ev);
	if (bad != 0) {
		mkc_error(p->g->ctx, "%s: (that order holds only through a worker's queue; the "
			  "events alone must order every conflict)", p->g->path);
		return -1;
	}
	mkc_progress(p->g->ctx, "verify: %d tasks, %d events: safe", p->tasks.n, p->events.n);
	return 0;
}
