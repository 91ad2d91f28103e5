/*
 * memory.c - where intermediate tensors live.
 *
 * requires: tile (tasks in a topological order, with their regions).
 * provides: plan->mem_off / mem_size for every intermediate (a tensor that
 *           tasks write and read, not a graph input, output or weight): its
 *           place in one activation arena, sized for the symbols' maxima;
 *           plan->alias: for each, the other intermediates whose bytes it
 *           shares; plan->arena_bytes. Inputs, outputs (the KV cache among
 *           them), weights and symbolic values keep buffers of their own.
 *
 * A tensor is live from the first task that writes it to the last task
 * that reads it, in task order. Allocation is first fit over blocks freed
 * by tensors whose last reader comes at least one round of workers
 * (nworkers tasks) before the new tensor's first writer: memory that is
 * shared costs a dependency (the new writer waits for the old readers,
 * which the deps pass adds because the bytes overlap), and that gap keeps
 * such waits on work that is almost surely finished. Offsets are aligned
 * to 256 bytes.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

enum { ALIGN = 256 };

typedef struct {
	int id;
	int first, last;   /* task indices */
	int64_t size;
} life;

static int
by_first(const void *a, const void *b)
{
	const life *x = a, *y = b;
	return x->first != y->first ? x->first - y->first : x->id - y->id;
}

/* Bytes of t with every symbol at its maximum; -1 beyond MKC_MAX_BYTES. */
static int64_t
max_bytes(const mkc_tensor *t, const int64_t *sym_max)
{
	int64_t n = (int64_t)mkc_dtype_size(t->dtype);
	for (int i = 0; i < t->rank; i++) {
		int64_t len;
		if (!mkc_dim_max(t->shape[i], sym_max, &len))
			return -1;
		if (!mkc_mul_ok(n, len, &n) || n > MKC_MAX_BYTES)
			return -1;
	}
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

static bool
is_intermediate(const mkc_tensor *t)
{
	return t->kind == MKC_TK_INTERMEDIATE;
}

int
mkc_pass_memory(mkc_plan *p)
{
	mkc_graph *g = p->g;
	mkc_arena *a = g->ctx->arena;
	int nt = g->tensors.n;
	int64_t max_dim = p->tp.max_dim ? p->tp.max_dim : 4096;
	int64_t *sym_max = mkc_arena_alloc(a, (size_t)(g->syms.n + 1) * sizeof *sym_max);
	for (int s = 0; s < g->syms.n; s++)
		sym_max[s] = mkc_graph_sym_max(g, s, max_dim);
	p->mem_off = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *p->mem_off);
	p->mem_size = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *p->mem_size);
	p->alias = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *p->alias);
	p->nalias = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *p->nalias);
	life *lv = mkc_arena_alloc(a, (size_t)(nt + 1) * sizeof *lv);
	for (int i = 0; i < nt; i++) {
		p->mem_off[i] = -1;
		lv[i] = (life){i, -1, -1, 0};
	}
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->nreads + t->nwrites; k++) {
			const mkc_tensor *x = k < t->nreads ? t->reads[k].t : t->writes[k - t->nreads].t;
			life *l = &lv[x->id];
			if (l->first < 0)
				l->first = i;
			l->last = i;
		}
	}
	int n = 0;
	for (int i = 0; i < nt; i++) {
		const mkc_tensor *t = MKC_TENSOR(g, i);
		if (is_intermediate(t) && lv[i].first >= 0) {
			lv[i].size = max_bytes(t, sym_max);
			if (lv[i].size < 0)
				return mkc_error(g->ctx, "%s: tensor '%s' would need more than 2^48 bytes "
						 "with every symbol at %lld", g->path, t->name,
						 (long long)max_dim);
			p->mem_size[i] = lv[i].size;
			lv[n++] = lv[i];
		}
	}
	qsort(lv, (size_t)n, sizeof *lv, by_first);
	/* placed blocks, in placement order: the candidates for reuse */
	life *placed = mkc_arena_alloc(a, (size_t)(n + 1) * sizeof *placed);
	int np = 0, reused = 0;
	int64_t top = 0;
	for (int i = 0; i < n; i++) {
		life *l = &lv[i];
		int64_t at = -1;
		/* first fit: the lowest offset where no live or recent block overlaps */
		for (int64_t cand = 0; at < 0;) {
			int64_t next = -1;
			for (int j = 0; j < np; j++) {
				const life *b = &placed[j];
				int64_t bo = p->mem_off[b->id];
				bool busy = p->tp.no_reuse || b->last + p->tp.nworkers >= l->first;
				if (busy && bo < cand + l->size && cand < bo + b->size &&
				    (next < 0 || bo + b->size > next))
					next = bo + b->size;
			}
			if (next < 0)
				at = cand;
			else
				cand = next;
		}
		if (at > MKC_MAX_BYTES - l->size)
			return mkc_error(g->ctx, "%s: the intermediate tensors need more than 2^48 bytes",
					 g->path);
		p->mem_off[l->id] = at;
		reused += at < top;
		top = at + l->size > top ? at + l->size : top;
		placed[np++] = *l;
	}
	p->arena_bytes = top;
	/* who shares bytes with whom */
	for (int i = 0; i < np; i++) {
		int x = placed[i].id;
		for (int j = 0; j < np; j++) {
			int y = placed[j].id;
			if (x == y || p->mem_off[y] >= p->mem_off[x] + p->mem_size[x] ||
			    p->mem_off[x] >= p->mem_off[y] + p->mem_size[y])
				continue;
			int *v = mkc_arena_alloc(a, (size_t)(p->nalias[x] + 1) * sizeof *v);
			if (p->nalias[x])
				memcpy(v, p->alias[x], (size_t)p->nalias[x] * sizeof *v);
			v[p->nalias[x]++] = y;
			p->alias[x] = v;
		}
	}
	int64_t own = 0;
	for (int i = 0; i < np; i++)
		own += placed[i].size;
	mkc_progress(g->ctx, "memory: %d intermediates in %lld bytes (%lld without reuse), %d reuse space",
		     np, (long long)top, (long long)own, reused);
	return 0;
}
