/*
 * schedule.c - tasks onto workers.
 *
 * requires: events (a task's predecessors are final).
 * provides: each task's worker and position; per-worker queues whose order
 *           is one global topological order (the order tasks are placed
 *           in), so no queue order can deadlock (verify proves it anyway).
 *
 * List scheduling with a cost model of bytes moved: the task whose
 * predecessors finish first (ties: task order) goes next, to the worker on
 * which it would start earliest, given when its predecessors finish and
 * when the worker is free; ties go to the worker with the least work so
 * far. Taking tasks by when they are ready rather than in task order keeps
 * a small successor (a rotary tile after q_proj) from taking a worker that
 * its ready siblings (k_proj's and v_proj's tiles) needed: measured on the
 * Llama-3.2-1B step, one worker then ran two of a layer's q/k/v tiles while
 * another ran none, 5 us on every layer's critical path.
 */
#include "passes.h"
#include "task.h"

/* A binary heap of task ids by (ready time, id). */
typedef struct {
	int *v;
	int n;
	const int64_t *key;
} heap;

static bool
before(const heap *h, int a, int b)
{
	return h->key[a] != h->key[b] ? h->key[a] < h->key[b] : a < b;
}

static void
push(heap *h, int t)
{
	int i = h->n++;
	for (; i > 0 && before(h, t, h->v[(i - 1) / 2]); i = (i - 1) / 2)
		h->v[i] = h->v[(i - 1) / 2];
	h->v[i] = t;
}

static int
pop(heap *h)
{
	int top = h->v[0], last = h->v[--h->n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(h, h->v[c + 1], h->v[c]))
			c++;
		if (!before(h, h->v[c], last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	h->v[i] = last;
	return top;
}

int
mkc_pass_schedule(mkc_plan *p)
{
	mkc_arena *a = p->g->ctx->arena;
	int nw = p->tp.nworkers, nt = p->tasks.n;
	int64_t *free_at = mkc_arena_alloc(a, (size_t)nw * sizeof *free_at);
	int64_t *load = mkc_arena_alloc(a, (size_t)nw * sizeof *load);
	int64_t *done = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *done);
	int64_t *ready = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *ready);
	int *waiting = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *waiting);
	/* successors, as offsets into one array */
	int *sstart = mkc_arena_alloc(a, (size_t)(nt + 2) * sizeof *sstart);
	for (int i = 0; i < nt; i++) {
		mkc_task *t = MKC_TASK(p, i);
		waiting[i] = t->npreds;
		for (int k = 0; k < t->npreds; k++)
			sstart[t->preds[k] + 2]++;
	}
	for (int i = 0; i < nt; i++)
		sstart[i + 2] += sstart[i + 1];
	int *succ = mkc_arena_alloc(a, (size_t)(sstart[nt + 1] + 1) * sizeof *succ);
	for (int i = 0; i < nt; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->npreds; k++)
			succ[sstart[t->preds[k] + 1]++] = i;
	}
	/* now succ[sstart[i] .. sstart[i + 1]) are task i's successors */
	heap h = {mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof(int)), 0, ready};
	for (int i = 0; i < nt; i++)
		if (!waiting[i])
			push(&h, i);
	p->qlen = mkc_arena_alloc(a, (size_t)nw * sizeof *p->qlen);
	int placed = 0;
	while (h.n) {
		int i = pop(&h);
		mkc_task *t = MKC_TASK(p, i);
		int best = 0;
		int64_t best_start = -1;
		for (int w = 0; w < nw; w++) {
			int64_t start = free_at[w] > ready[i] ? free_at[w] : ready[i];
			if (best_start < 0 || start < best_start ||
			    (start == best_start && load[w] < load[best])) {
				best = w;
				best_start = start;
			}
		}
		int64_t cost = t->cost > 0 ? t->cost : 1;
		t->worker = best;
		t->pos = p->qlen[best]++;
		free_at[best] = done[i] = best_start + cost;
		load[best] += cost;
		placed++;
		for (int k = sstart[i]; k < sstart[i + 1]; k++) {
			int s = succ[k];
			if (done[i] > ready[s])
				ready[s] = done[i];
			if (--waiting[s] == 0)
				push(&h, s);
		}
	}
	MKC_ASSERT(placed == nt);   /* deps made a DAG: every task became ready */
	p->queues = mkc_arena_alloc(a, (size_t)nw * sizeof *p->queues);
	for (int w = 0; w < nw; w++)
		p->queues[w] = mkc_arena_alloc(a, (size_t)(p->qlen[w] + 1) * sizeof **p->queues);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		p->queues[t->worker][t->pos] = t;
	}
	int64_t span = 0;
	for (int w = 0; w < nw; w++)
		span = free_at[w] > span ? free_at[w] : span;
	mkc_progress(p->g->ctx, "schedule: %d tasks on %d workers, modelled span %lld bytes",
		     p->tasks.n, nw, (long long)span);
	return 0;
}
