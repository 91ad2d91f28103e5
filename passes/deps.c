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
 * dependency, whatever the boxes. Those tasks are taken through
 * alias_front, which leaves out the ones a later of them already implies.
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
 *
 * A task's ancestors are mostly every task of the layers before it: full[q]
 * counts the leading words of q's row that are all ones, and a union
 * fills those and ORs only the words from there to q, the last layer or
 * two, where it ORed all of them (the Qwen3-8B shape's chunk plan of 112k
 * tasks: its deps 17.5 -> 5.1 s on the development machine, under load).
 */
static void
reduce_task(mkc_plan *p, mkc_task *t, uint64_t *anc, int words, uint64_t *cand, int *buf,
	    int *full)
{
	mkc_arena *a = p->g->ctx->arena;
	int i = t->id, n = 0, f = 0;   /* row's words below f: all ones */
	uint64_t *row = anc + (size_t)i * (size_t)words;
	for (int w = i / 64; w >= 0; w--) {
		while (cand[w]) {
			int b = 63 - __builtin_clzll(cand[w]), q = w * 64 + b;
			cand[w] &= ~((uint64_t)1 << b);
			if ((row[w] >> b) & 1)
				continue;
			/* q's row has bits below q only, all of its words below full[q] */
			const uint64_t *pr = anc + (size_t)q * (size_t)words;
			for (; f < full[q]; f++)
				row[f] = ~(uint64_t)0;
			for (int k = f; k <= w; k++)
				row[k] |= pr[k];
			row[w] |= (uint64_t)1 << b;
			buf[n++] = q;
		}
	}
	while (f < words && row[f] == ~(uint64_t)0)
		f++;
	full[i] = f;
	t->npreds = n;
	t->preds = mkc_arena_alloc(a, (size_t)(n + 1) * sizeof *t->preds);
	for (int k = 0; k < n; k++)
		t->preds[k] = buf[n - 1 - k];
}

/*
 * The tasks before t that touch the bytes of tensor id through the other
 * intermediates placed there: every access of those (write) or their
 * writes only (!write). Memory reuse makes this the costly part: a buffer
 * at a popular offset aliases tensors of every layer, and each writer tile
 * of it used to walk all their accesses (593M visits for an 8B model).
 *
 * Only the maximal ones are returned: a task q of that set that is an
 * ancestor of a later task m of the set (found in m's ancestor row; rows
 * of tasks before t are final) gives an edge q -> t that m -> t and the
 * path q ~> m already imply, and m is itself maximal or the ancestor of a
 * later one, so following "later" ends at a returned task. The transitive
 * closure, and so its reduction (which is unique), is the same with or
 * without q; reduce_task would drop q anyway.
 *
 * The set is the same for every task until one of the lists grows, so it
 * is kept per tensor and mode, keyed by the lists' total length (they
 * only grow): all the writer tiles of a tensor share one.
 */
typedef struct {
	int64_t key;   /* total length of the lists it came from; -1: none yet */
	int n;
	int *q;
} front;

static const front *
alias_front(mkc_plan *p, int id, bool write, mkc_vec *lists, front *cache, uint64_t *set,
	    uint64_t *u, uint64_t *anc, int words)
{
	mkc_arena *a = p->g->ctx->arena;
	front *f = &cache[2 * id + write];
	int64_t key = 0;
	for (int al = 0; al < p->nalias[id]; al++)
		key += lists[p->alias[id][al]].n;
	if (f->key == key)
		return f;
	int top = -1;
	for (int al = 0; al < p->nalias[id]; al++) {
		const mkc_vec *v = &lists[p->alias[id][al]];
		for (int j = 0; j < v->n; j++) {
			int q = ((const access *)v->v[j])->task->id;
			set[q / 64] |= (uint64_t)1 << (q % 64);
			top = q > top ? q : top;
		}
	}
	/* latest first; u gathers the ancestors of those taken */
	int n = 0;
	int *buf = mkc_arena_alloc(a, (size_t)(top + 2) * sizeof *buf);
	for (int w = top / 64; w >= 0; w--) {
		while (set[w]) {
			int b = 63 - __builtin_clzll(set[w]), q = w * 64 + b;
			set[w] &= ~((uint64_t)1 << b);
			if ((u[w] >> b) & 1)
				continue;
			const uint64_t *pr = anc + (size_t)q * (size_t)words;
			for (int k = 0; k <= w; k++)
				u[k] |= pr[k];
			buf[n++] = q;
		}
	}
	if (top >= 0)
		memset(u, 0, (size_t)(top / 64 + 1) * sizeof *u);
	f->key = key;
	f->n = n;
	f->q = buf;
	return f;
}

int
mkc_pass_deps(mkc_plan *p)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	int nt = p->tasks.n, words = (nt + 63) / 64;
	/*
	 * Accesses of each tensor, and its writes alone: a read conflicts with
	 * writes only, and a tensor read by thousands of tiles would otherwise
	 * have each read walk past all the earlier reads.
	 */
	mkc_vec *by_tensor = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *by_tensor);
	mkc_vec *writes = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *writes);
	int *buf = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *buf);
	uint64_t *cand = mkc_arena_alloc(a, (size_t)words * 8 + 8);
	/* the ancestors' rows, freed at the end: tasks squared bits, 1.6 GB for
	 * the Qwen3-8B chunk plan's 112k tasks, the words past a row's last
	 * ancestor never written */
	uint64_t *anc = mkc_zalloc((size_t)nt * (size_t)words * 8 + 8);
	uint64_t *set = mkc_arena_alloc(a, (size_t)words * 8 + 8);
	uint64_t *u = mkc_arena_alloc(a, (size_t)words * 8 + 8);
	int *full = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *full);
	front *cache = mkc_arena_alloc(a, (size_t)(2 * g->tensors.n + 1) * sizeof *cache);
	for (int i = 0; i < 2 * g->tensors.n; i++)
		cache[i].key = -1;
	int64_t raw = 0;
	for (int i = 0; i < nt; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			bool w = k >= t->nreads;
			const mkc_region *r = w ? &t->writes[k - t->nreads] : &t->reads[k];
			MKC_ASSERT(r->t->id >= 0);
			int id = r->t->id;
			mkc_vec *v = w ? &by_tensor[id] : &writes[id];
			for (int j = 0; j < v->n; j++) {
				access *x = v->v[j];
				int q = x->task->id;
				if (x->task == t || ((cand[q / 64] >> (q % 64)) & 1))
					continue;
				if (!mkc_box_overlap(r->t->rank, &r->box, &x->r->box))
					continue;
				cand[q / 64] |= (uint64_t)1 << (q % 64);
				raw++;
			}
			if (!p->nalias || !p->nalias[id])
				continue;
			/* the tensors sharing its bytes; t's own accesses are not listed yet */
			const front *f = alias_front(p, id, w, w ? by_tensor : writes, cache, set, u,
						     anc, words);
			for (int j = 0; j < f->n; j++) {
				int q = f->q[j];
				if (!((cand[q / 64] >> (q % 64)) & 1)) {
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
			if (x->write)
				mkc_vec_push(a, &writes[x->r->t->id], x);
		}
		reduce_task(p, t, anc, words, cand, buf, full);
		p->nedges += t->npreds;
	}
	free(anc);
	mkc_progress(g->ctx, "deps: %lld edges between %d tasks, less those known to be implied", (long long)raw, nt);
	mkc_progress(g->ctx, "deps: %lld edges after dropping %lld implied ones",
		     (long long)p->nedges, (long long)(raw - p->nedges));
	return 0;
}
