/*
 * deps.c - exact dependencies between tasks.
 *
 * requires: tile (tasks in a topological order, with their regions).
 * provides: for every task, the sorted list of earlier tasks it must wait
 *           for: each earlier task that writes a region this one reads
 *           (RAW) or writes (WAW), or reads a region this one writes (WAR),
 *           where the regions overlap (mkc_box_overlap), less the edges a
 *           chain of others already implies. Reads after reads give no
 *           edge, and neither do disjoint tiles of one tensor.
 *
 * Accesses are bucketed by tensor, so only accesses of the same tensor are
 * compared, box by box. Intermediates that the memory pass placed on the
 * same bytes (plan->alias) are compared too, whole tensor against whole
 * tensor: a write of the new one after a read or write of the old one is a
 * dependency, whatever the boxes.
 *
 * requires also: memory (when it ran; without it nothing aliases).
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

/*
 * Transitive reduction: an edge q -> t is dropped when another predecessor
 * of t already comes after q. Ancestor sets are bit rows, built in task
 * order (topological). Taking t's predecessors latest first, with U the
 * union of the ancestors of those kept so far, q is implied exactly when
 * q is in U: whatever implies q is later than q, and was kept or is itself
 * inside U. t's own row is then U. Fewer edges mean smaller events and
 * fewer signals; the ordering is the same, and verify checks it from the
 * regions, not from these lists.
 */
static void
reduce(mkc_plan *p)
{
	mkc_arena *a = p->g->ctx->arena;
	int nt = p->tasks.n, words = (nt + 63) / 64;
	uint64_t *anc = mkc_arena_alloc(a, (size_t)nt * (size_t)words * 8 + 8);
	int64_t kept = 0;
	char *keep = mkc_arena_alloc(a, (size_t)nt + 1);
	for (int i = 0; i < nt; i++) {
		mkc_task *t = MKC_TASK(p, i);
		uint64_t *row = anc + (size_t)i * (size_t)words;
		for (int k = t->npreds - 1; k >= 0; k--) {   /* preds are sorted */
			int q = t->preds[k];
			keep[k] = !((row[q / 64] >> (q % 64)) & 1);
			if (!keep[k])
				continue;
			const uint64_t *pr = anc + (size_t)q * (size_t)words;
			for (int w = 0; w < words; w++)
				row[w] |= pr[w];
			row[q / 64] |= (uint64_t)1 << (q % 64);
		}
		int n = 0;
		for (int k = 0; k < t->npreds; k++)
			if (keep[k])
				t->preds[n++] = t->preds[k];
		t->npreds = n;
		kept += n;
	}
	mkc_progress(p->g->ctx, "deps: %lld edges after dropping %lld implied ones",
		     (long long)kept, (long long)(p->nedges - kept));
	p->nedges = kept;
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
			int id = r->t->id, na = p->nalias ? p->nalias[id] : 0;
			for (int al = -1; al < na; al++) {
				/* the tensor itself, then the ones sharing its bytes */
				bool same = al < 0;
				mkc_vec *v = &by_tensor[same ? id : p->alias[id][al]];
				for (int j = 0; j < v->n; j++) {
					access *x = v->v[j];
					if (x->task == t || (!w && !x->write) || seen[x->task->id] == i)
						continue;
					if (same && !mkc_box_overlap(r->t->rank, &r->box, &x->r->box))
						continue;
					seen[x->task->id] = i;
					buf[n++] = x->task->id;
				}
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
	reduce(p);
	return 0;
}
