/*
 * events.c - dependencies into events.
 *
 * requires: deps.
 * provides: events (counter + threshold) and each task's waits and signals.
 *           A task with predecessors waits on the one event whose producers
 *           are exactly those predecessors; tasks with the same set share
 *           it. Every producer signals each event it belongs to once per
 *           step, so an event's threshold is its number of producers.
 */
#include "passes.h"
#include "task.h"

#include <stdio.h>
#include <string.h>

/* Events are found by their producer list, spelt as text. */
static const char *
key_of(mkc_arena *a, const mkc_task *t)
{
	size_t cap = (size_t)t->npreds * 11 + 1, len = 0;
	char *k = mkc_arena_alloc(a, cap);
	for (int i = 0; i < t->npreds; i++)
		len += (size_t)snprintf(k + len, cap - len, "%d,", t->preds[i]);
	return k;
}

static void
add_signal(mkc_arena *a, mkc_task *t, int ev)
{
	int *s = mkc_arena_alloc(a, (size_t)(t->nsignals + 1) * sizeof *s);
	if (t->nsignals)
		memcpy(s, t->signals, (size_t)t->nsignals * sizeof *s);
	s[t->nsignals++] = ev;
	t->signals = s;
}

int
mkc_pass_events(mkc_plan *p)
{
	mkc_arena *a = p->g->ctx->arena;
	mkc_map by_key = {0};
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		if (!t->npreds)
			continue;
		const char *key = key_of(a, t);
		mkc_event *e = mkc_map_get(&by_key, key);
		if (!e) {
			e = mkc_arena_alloc(a, sizeof *e);
			e->id = p->events.n;
			e->threshold = t->npreds;
			e->nproducers = t->npreds;
			e->producers = t->preds;
			mkc_vec_push(a, &p->events, e);
			mkc_map_put(a, &by_key, key, e);
			for (int k = 0; k < t->npreds; k++)
				add_signal(a, MKC_TASK(p, t->preds[k]), e->id);
		}
		e->nconsumers++;
		t->waits = mkc_arena_alloc(a, sizeof *t->waits);
		t->waits[0] = e->id;
		t->nwaits = 1;
	}
	mkc_progress(p->g->ctx, "events: %d events for %lld edges", p->events.n,
		     (long long)p->nedges);
	return 0;
}
