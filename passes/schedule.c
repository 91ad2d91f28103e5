/*
 * schedule.c - tasks onto workers.
 *
 * requires: events (a task's predecessors are final).
 * provides: each task's worker and position; per-worker queues whose order
 *           is the task order, one global topological order, so no queue
 *           order can deadlock (verify proves it anyway).
 *
 * List scheduling with a cost model of bytes moved: in task order, each
 * task goes to the worker on which it would start earliest, given when its
 * predecessors finish and when the worker is free; ties go to the worker
 * with the least work so far.
 */
#include "passes.h"
#include "task.h"

int
mkc_pass_schedule(mkc_plan *p)
{
	mkc_arena *a = p->g->ctx->arena;
	int nw = p->tp.nworkers;
	int64_t *free_at = mkc_arena_alloc(a, (size_t)nw * sizeof *free_at);
	int64_t *load = mkc_arena_alloc(a, (size_t)nw * sizeof *load);
	int64_t *done = mkc_arena_alloc(a, (size_t)(p->tasks.n + 1) * sizeof *done);
	p->qlen = mkc_arena_alloc(a, (size_t)nw * sizeof *p->qlen);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		int64_t ready = 0;
		for (int k = 0; k < t->npreds; k++)
			if (done[t->preds[k]] > ready)
				ready = done[t->preds[k]];
		int best = 0;
		int64_t best_start = -1;
		for (int w = 0; w < nw; w++) {
			int64_t start = free_at[w] > ready ? free_at[w] : ready;
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
	}
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
