/*
 * deps.c - exact dependencies between tasks.
 *
 * requires: tile (tasks in a topological order, with their regions).
 * provides: for every task, the sorted list of earlier tasks it must wait
 *           for: each earlier task that writes a region this one reads
 *           (RAW) or writes (WAW), or reads a region this one writes (WAR),
 *           where the regions overlap (mkc_box_overlap). Reads after reads
 *           give no edge, and neither do disjoint tiles of one tensor.
 *
 * Accesses are bucketed by tensor, so only accesses of the same tensor are
 * compared. Tensors never alias yet (views are copies), so a region names
 * its memory exactly; a memory planner that lets buffers share space must
 * compare regions by their place in that space instead.
 */
#include "passes.h"
#include "task.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	mkc_task *task;
	const mkc_region *r;
	bool write;
} access;

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int
mkc_pass_deps(mkc_plan *p)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	mkc_vec *by_tensor = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *by_tensor);
	int *seen = mkc_arena_alloc(a, (size_t)(p->tasks.n + 1) * sizeof *seen);
	int *buf = mkc_arena_alloc(a, (size_t)(p->tasks.n + 1) * sizeof *buf);
	for (int i = 0; i < p->tasks.n; i++)
		seen[i] = -1;
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		int n = 0;
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			bool w = k >= t->nreads;
			const mkc_region *r = w ? &t->writes[k - t->nreads] : &t->reads[k];
			MKC_ASSERT(r->t->id >= 0);
			mkc_vec *v = &by_tensor[r->t->id];
			for (int j = 0; j < v->n; j++) {
				access *x = v->v[j];
				if (x->task == t || (!w && !x->write) || seen[x->task->id] == i)
					continue;
				if (!mkc_box_overlap(r->t->rank, &r->box, &x->r->box))
					continue;
				seen[x->task->id] = i;
				buf[n++] = x->task->id;
			}
		}
		/* record this task's accesses after the search: no self edges */
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			access *x = mkc_arena_alloc(a, sizeof *x);
			x->task = t;
			x->write = k >= t->nreads;
			x->r = x->write ? &t->writes[k - t->nreads] : &t->reads[k];
			mkc_vec_push(a, &by_tensor[x->r->t->id], x);
		}
		qsort(buf, (size_t)n, sizeof *buf, cmp_int);
		t->npreds = n;
		t->preds = mkc_arena_alloc(a, (size_t)(n + 1) * sizeof *t->preds);
		memcpy(t->preds, buf, (size_t)n * sizeof *buf);
		p->nedges += n;
	}
	mkc_progress(g->ctx, "deps: %lld edges between %d tasks", (long long)p->nedges,
		     p->tasks.n);
	return 0;
}
