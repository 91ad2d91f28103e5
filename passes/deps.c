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


typedef struct {
	mkc_task *task;
	const mkc_region *r;
	bool write;
} access;

/*
 * Transitive reduction, done per task as soon as its candidates are known,
 * so that only the kept edges are ever stored. An edge q -> t is dropped
 * when another predecessor of t already comes after q. Ancestor sets are
 * bit rows, built in task order (topological). Taking t's candidates
 * latest first, with U the union of the ancestors of those kept so far, q
 * is implied exactly when q is in U: whatever implies q is later than q,
 * and was kept or is itself inside U. t's own row is then U. Fewer edges
 * mean smaller events and fewer signals; the ordering is the same, and
 * verify checks it from the regions, not from these lists.
 *
 * cand is a bit row of t's candidates (all below t), cleared on the way;
 * a bit row rather than a sorted list, since a task can have thousands.
 * The kept ones go to t->preds in ascending order.
 */
static void
reduce_task(mkc_plan *p, mkc_task *t, uint64_t *anc, int words, uint64_t *cand, int *buf)
{
	mkc_arena *a = p->g->ctx->arena;
	int i = t->id, n = 0;
	uint64_t *row = anc + (size_t)i * (size_t)words;
	for (int w = i / 64; w >= 0; w--) {
		while (cand[w]) {
			int b = 63 - __builtin_clzll(cand[w]), q = w * 64 + b;
			cand[w] &= ~((uint64_t)1 << b);
			if ((row[w] >> b) & 1)
				continue;
			/* q's row has bits below q only */
			const uint64_t *pr = anc + (size_t)q * (size_t)words;
			for (int k = 0; k <= w; k++)
				row[k] |= pr[k];
			row[w] |= (uint64_t)1 << b;
			buf[n++] = q;
		}
	}
	t->npreds = n;
	t->preds = mkc_arena_alloc(a, (size_t)(n + 1) * sizeof *t->preds);
	for (int k = 0; k < n; k++)
		t->preds[k] = buf[n - 1 - k];
}

int
mkc_pass_deps(mkc_plan *p)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	int nt = p->tasks.n, words = (nt + 63) / 64;
	mkc_vec *by_tensor = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *by_tensor);
	int *buf = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *buf);
	uint64_t *cand = mkc_arena_alloc(a, (size_t)words * 8 + 8);
	uint64_t *anc = mkc_arena_alloc(a, (size_t)nt * (size_t)words * 8 + 8);
	int64_t raw = 0;
	for (int i = 0; i < nt; i++) {
		mkc_task *t = MKC_TASK(p, i);
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
					int q = x->task->id;
					if (x->task == t || (!w && !x->write) || ((cand[q / 64] >> (q % 64)) & 1))
						continue;
					if (same && !mkc_box_overlap(r->t->rank, &r->box, &x->r->box))
						continue;
					cand[q / 64] |= (uint64_t)1 << (q % 64);
					raw++;
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
		reduce_task(p, t, anc, words, cand, buf);
		p->nedges += t->npreds;
	}
	mkc_progress(g->ctx, "deps: %lld edges between %d tasks", (long long)raw, nt);
	mkc_progress(g->ctx, "deps: %lld edges after dropping %lld implied ones",
		     (long long)p->nedges, (long long)(raw - p->nedges));
	return 0;
}
