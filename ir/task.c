/* task.c - building and printing the task IR. See task.h. */
#include "task.h"

#include <string.h>

mkc_plan *
mkc_plan_create(mkc_graph *g, const mkc_target_params *tp)
{
	mkc_plan *p = mkc_arena_alloc(g->ctx->arena, sizeof *p);
	p->g = g;
	p->tp = *tp;
	MKC_ASSERT(tp->nworkers > 0);
	return p;
}

mkc_task *
mkc_plan_add_task(mkc_plan *p, mkc_node *n, int tile, int ntiles)
{
	mkc_task *t = mkc_arena_alloc(p->g->ctx->arena, sizeof *t);
	t->id = p->tasks.n;
	t->node = n;
	t->tile = tile;
	t->ntiles = ntiles;
	t->worker = -1;
	mkc_vec_push(p->g->ctx->arena, &p->tasks, t);
	return t;
}

void
mkc_task_add_region(mkc_plan *p, mkc_task *t, bool write, mkc_tensor *x,
		    const mkc_box *b)
{
	mkc_region **list = write ? &t->writes : &t->reads;
	int *n = write ? &t->nwrites : &t->nreads;
	mkc_region *r = mkc_arena_alloc(p->g->ctx->arena, (size_t)(*n + 1) * sizeof *r);
	if (*n)
		memcpy(r, *list, (size_t)*n * sizeof *r);
	r[*n].t = x;
	r[*n].box = *b;
	*list = r;
	(*n)++;
}

mkc_box
mkc_box_full(const mkc_tensor *t)
{
	mkc_box b;
	memset(&b, 0, sizeof b);   /* axes past the rank too */
	for (int i = 0; i < t->rank; i++) {
		b.lo[i] = mkc_dim_const(0);
		b.hi[i] = t->shape[i];
	}
	return b;
}

/*
 * a <= b provably (b - a is a constant >= 0). The deps and verify passes ask
 * this of every pair of regions of a tensor (74% of mkc's time on the 1B
 * shape's chunked plan went to it through mkc_dim_sub): two dimensions with
 * the same symbolic terms (canonical, ir/graph.h) differ by their constants
 * alone; any other pair takes mkc_dim_sub.
 */
static bool
provably_le(mkc_dim a, mkc_dim b)
{
	bool same = a.sym[0] != MKC_DIM_UNKNOWN && b.sym[0] != MKC_DIM_UNKNOWN;   /* known */
	for (int i = 0; same && i < MKC_DIM_TERMS; i++)
		same = a.k[i] == b.k[i] && (!a.k[i] || a.sym[i] == b.sym[i]);
	int64_t d;
	if (same)
		return !__builtin_sub_overflow(b.c, a.c, &d) && d >= 0;
	mkc_dim r;
	return mkc_dim_sub(b, a, &r) && mkc_dim_is_const(r) && r.c >= 0;
}

/* provably_le of two constants */
static bool
le_const(int64_t a, int64_t b)
{
	int64_t d;
	return !__builtin_sub_overflow(b, a, &d) && d >= 0;
}

/* graph.c's mkc_dim_is_const, inline here: called out of line from the
 * overlap test below it took the 1B chunked file's mkc 2.3 -> 2.9 s */
static bool
is_const(const mkc_dim *d)
{
	return d->k[0] == 0 && d->sym[0] != MKC_DIM_UNKNOWN;   /* canonical: no term in use */
}

/*
 * The schedule's passes ask this of every pair of accesses to a tensor
 * (58M times for the 1B shape's chunk plan, 87% of them on boxes of
 * constants): a dimension whose four ends are constants is compared as
 * integers, the same test as provably_le's.
 */
bool
mkc_box_overlap(int rank, const mkc_box *a, const mkc_box *b)
{
	for (int i = 0; i < rank; i++) {
		const mkc_dim *al = &a->lo[i], *ah = &a->hi[i], *bl = &b->lo[i], *bh = &b->hi[i];
		if (is_const(al) && is_const(ah) && is_const(bl) && is_const(bh)) {
			if (le_const(ah->c, al->c) || le_const(bh->c, bl->c) ||
			    le_const(ah->c, bl->c) || le_const(bh->c, al->c))
				return false;
			continue;
		}
		if (provably_le(*ah, *al) || provably_le(*bh, *bl))
			return false;   /* an empty box touches nothing */
		if (provably_le(*ah, *bl) || provably_le(*bh, *al))
			return false;
	}
	return true;
}

static void
dump_box(FILE *f, const mkc_graph *g, int rank, const mkc_box *b)
{
	fputc('[', f);
	for (int i = 0; i < rank; i++) {
		char lo[64], hi[64];
		fprintf(f, "%s%s:%s", i ? "," : "", mkc_dim_str(g, b->lo[i], lo, sizeof lo),
			mkc_dim_str(g, b->hi[i], hi, sizeof hi));
	}
	fputc(']', f);
}

static void
dump_ids(FILE *f, const char *what, const int *v, int n)
{
	if (!n)
		return;
	fprintf(f, " %s ", what);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? "," : "", v[i]);
}

void
mkc_dump_plan(FILE *f, const mkc_plan *p)
{
	const mkc_graph *g = p->g;
	fprintf(f, "plan %s: %d tasks, %d events, %lld edges, %d workers\n", g->path,
		p->tasks.n, p->events.n, (long long)p->nedges, p->tp.nworkers);
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		fprintf(f, "task %d %s (%s) tile %d/%d", t->id, t->node->name,
			t->node->op_type, t->tile, t->ntiles);
		if (t->node->out[0]) {
			fputs(" out ", f);
			dump_box(f, g, t->node->out[0]->rank, &t->out);
		}
		dump_ids(f, "waits", t->waits, t->nwaits);
		dump_ids(f, "signals", t->signals, t->nsignals);
		if (t->worker >= 0)
			fprintf(f, " worker %d.%d", t->worker, t->pos);
		fputc('\n', f);
	}
	for (int i = 0; i < p->events.n; i++) {
		const mkc_event *e = MKC_EVENT(p, i);
		fprintf(f, "event %d threshold %d consumers %d", e->id, e->threshold,
			e->nconsumers);
		dump_ids(f, "producers", e->producers, e->nproducers);
		fputc('\n', f);
	}
}

/* The plan as a Graphviz digraph: a box per task, an edge per dependency. */
void
mkc_dump_plan_dot(FILE *f, const mkc_plan *p)
{
	fprintf(f, "digraph plan {\n\tnode [shape=box, fontsize=10];\n");
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		fprintf(f, "\tt%d [label=\"%d: %s\\n%s %d/%d", i, i, t->node->name, t->node->op_type,
			t->tile, t->ntiles);
		if (t->worker >= 0)
			fprintf(f, "\\nworker %d", t->worker);
		fputs("\"];\n", f);
	}
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->npreds; k++)
			fprintf(f, "\tt%d -> t%d;\n", t->preds[k], i);
	}
	fputs("}\n", f);
}
