/*
 * test_plan.c - tile, deps, events, schedule and the schedule proof.
 *
 * The mutation tests are the point: a plan with a dependency taken out, a
 * threshold off by one, or two queue entries swapped must be refused by
 * verify, and a plan with a redundant dependency taken out must not be.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../fixture.h"
#include "../graph_builder.h"
#include "../../runtime/limits.h"
#include "driver.h"
#include "frontend.h"
#include "passes.h"

#define MODEL(p) "tests/models/" p

TestSuite(plan, .init = setup, .fini = teardown);

static mkc_graph *
graph_of(const char *path)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s", errs());
	cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_dce(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_lower(g), 0, "%s", errs());   /* tile reads the descriptions */
	return g;
}

static mkc_plan *
tiled(mkc_graph *g, int workers)
{
	mkc_target_params tp = {.nworkers = workers, .min_tile_elems = 4096, .matmul_tile_cols = 64};
	mkc_plan *p = mkc_plan_create(g, &tp);
	cr_assert_eq(mkc_pass_tile(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_memory(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_deps(p), 0, "%s", errs());
	return p;
}

static void
finish(mkc_plan *p)
{
	cr_assert_eq(mkc_pass_events(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_schedule(p), 0, "%s", errs());
}

static mkc_plan *
plan_of(const char *path, int workers)
{
	mkc_plan *p = tiled(graph_of(path), workers);
	finish(p);
	return p;
}

Test(plan, llama_plans_verify_for_any_worker_count)
{
	int counts[] = {1, 2, 8, 132};
	for (int i = 0; i < 4; i++) {
		mkc_plan *p = plan_of(MODEL("tiny_llama_decode_op18/model.onnx"), counts[i]);
		cr_assert_eq(mkc_pass_verify(p), 0, "%d workers: %s", counts[i], errs());
		p = plan_of(MODEL("tiny_llama_decode_op23/model.onnx"), counts[i]);
		cr_assert_eq(mkc_pass_verify(p), 0, "%d workers: %s", counts[i], errs());
		int total = 0;
		for (int w = 0; w < counts[i]; w++)
			total += p->qlen[w];
		cr_assert_eq(total, p->tasks.n, "every task is queued once");
	}
}

static int
tasks_of(mkc_plan *p, const char *node)
{
	int k = 0;
	for (int i = 0; i < p->tasks.n; i++)
		k += strcmp(MKC_TASK(p, i)->node->name, node) == 0;
	return k;
}

static mkc_task *
task_of(mkc_plan *p, const char *node, int tile)
{
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		if (strcmp(t->node->name, node) == 0 && t->tile == tile)
			return t;
	}
	cr_assert_fail("no task %s/%d", node, tile);
	return NULL;
}

Test(plan, weight_matmuls_are_cut_by_columns)
{
	mkc_plan *p = plan_of(MODEL("tiny_llama_decode_op23/model.onnx"), 8);
	/* q projection: 256 output columns in tiles of 64, each streaming its
	 * own 64 columns of the [256, 256] weight */
	cr_assert_eq(tasks_of(p, "node_linear"), 4);
	mkc_task *t = task_of(p, "node_linear", 2);
	char b[64];
	cr_assert_str_eq(mkc_dim_str(p->g, t->out.lo[2], b, sizeof b), "128");
	cr_assert_str_eq(mkc_dim_str(p->g, t->out.hi[2], b, sizeof b), "192");
	cr_assert_eq(t->nreads, 2);
	const mkc_region *w = &t->reads[1];
	cr_assert_str_eq(w->t->name, "val_30");
	cr_assert_eq(w->box.lo[0].c, 0);
	cr_assert_eq(w->box.hi[0].c, 256);
	cr_assert_eq(w->box.lo[1].c, 128);
	cr_assert_eq(w->box.hi[1].c, 192);
	/* the reshape after it waits for all four tiles through one event */
	mkc_task *v = task_of(p, "node_view", 0);
	cr_assert_eq(v->npreds, 4);
	cr_assert_eq(v->nwaits, 1);
	cr_assert_eq(MKC_EVENT(p, v->waits[0])->threshold, 4);
	/* the k and v projections read the same normed input as q: one event */
	cr_assert_eq(task_of(p, "node_linear_1", 0)->waits[0],
		     task_of(p, "node_linear_2", 0)->waits[0]);
}

/* the tiles of node, each on a worker of its own and none shared with seen[] */
static int
distinct_workers(mkc_plan *p, const char *node, bool *seen)
{
	int k = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		if (strcmp(t->node->name, node))
			continue;
		cr_expect_not(seen[t->worker], "%s tile %d: worker %d already has one", node, t->tile,
			      t->worker);
		seen[t->worker] = true;
		k++;
	}
	return k;
}

Test(plan, products_of_one_input_share_the_workers)
{
	mkc_target_params tp = {.nworkers = 24, .min_tile_elems = 4096, .matmul_tile_cols = 64,
				.matmul_min_cols = 8};
	mkc_plan *p = mkc_plan_create(graph_of(MODEL("tiny_llama_decode_op23/model.onnx")), &tp);
	cr_assert_eq(mkc_pass_tile(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_memory(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_deps(p), 0, "%s", errs());
	finish(p);
	/* q (256 columns), k and v (64 each) read the same normed row: 24
	 * workers split 16 / 4 / 4, and the schedule puts each tile on a
	 * worker of its own (taking tiles by when they are ready: the
	 * rotary after q does not take a worker that k or v needed) */
	bool seen[24] = {false};
	cr_assert_eq(distinct_workers(p, "node_linear", seen), 16);
	cr_assert_eq(distinct_workers(p, "node_linear_1", seen), 4);
	cr_assert_eq(distinct_workers(p, "node_linear_2", seen), 4);
	cr_assert_eq(mkc_pass_verify(p), 0, "%s", errs());
	/* the gate's 512 columns at 5 workers: 8 tiles of 64 would leave 3
	 * workers a second tile; 10 tiles give each of them two */
	tp.nworkers = 5;
	p = mkc_plan_create(graph_of(MODEL("tiny_llama_decode_op23/model.onnx")), &tp);
	cr_assert_eq(mkc_pass_tile(p), 0, "%s", errs());
	cr_assert_eq(tasks_of(p, "node_linear_4"), 10);
}

Test(plan, plan_dump_is_deterministic)
{
	char *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	FILE *fa = open_memstream(&a, &na);
	mkc_dump_plan(fa, plan_of(MODEL("tiny_llama_decode_op18/model.onnx"), 8));
	fclose(fa);
	FILE *fb = open_memstream(&b, &nb);
	mkc_dump_plan(fb, plan_of(MODEL("tiny_llama_decode_op18/model.onnx"), 8));
	fclose(fb);
	cr_assert_str_eq(a, b);
	cr_assert(strstr(a, "task 0 node_embedding (Gather)"), "%.200s", a);
	free(a);
	free(b);
}

/* Does a chain of preds lead from task `from` to task `to`? */
static bool
reaches(mkc_plan *p, int from, int to, char *seen)
{
	if (to == from)
		return true;
	if (to < from || seen[to])
		return false;
	seen[to] = 1;
	mkc_task *t = MKC_TASK(p, to);
	for (int k = 0; k < t->npreds; k++)
		if (reaches(p, from, t->preds[k], seen))
			return true;
	return false;
}

/* Undoes events and schedule so they can run again on changed preds. */
static void
reset(mkc_plan *p)
{
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		t->nwaits = t->nsignals = 0;
		t->waits = t->signals = NULL;
		t->worker = -1;
		t->pos = 0;
	}
	p->events = (mkc_vec){0};
	p->queues = NULL;
	p->qlen = NULL;
}

/*
 * The plan the driver makes (every pass: canon, state, weights included),
 * tiled finely for many workers, then given a worker per task so that no
 * queue order hides a missing edge.
 */
static mkc_plan *
driven(const char *path, bool bf16)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = g->nodes.n * 64, .bf16_weights = bf16};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	p->tp.nworkers = p->tasks.n;
	return p;
}

/*
 * Adds one edge that a chain already implies (b -> a -> t, so b -> t), as
 * deps never makes one: dropping it must still verify. Returns t.
 */
static int
add_redundant_edge(mkc_plan *p)
{
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int k = 0; k < t->npreds; k++) {
			mkc_task *a = MKC_TASK(p, t->preds[k]);
			for (int j = 0; j < a->npreds; j++) {
				int b = a->preds[j];
				bool has = false;
				for (int x = 0; x < t->npreds; x++)
					has |= t->preds[x] == b;
				if (has)
					continue;
				int *more = mkc_arena_alloc(ctx->arena, (size_t)(t->npreds + 1) * sizeof *more);
				memcpy(more, t->preds, (size_t)t->npreds * sizeof *more);
				more[t->npreds] = b;
				t->preds = more;
				t->npreds++;
				return i;
			}
		}
	}
	cr_assert_fail("no chain of two edges to shortcut");
	return -1;
}

/*
 * Takes out each dependency in turn. With a worker per task no queue order
 * hides anything, so verify must refuse the plan exactly when the edge was
 * not implied by a chain of the others. *cache counts the refused drops of
 * an edge into or out of a KV-cache append.
 */
static void
drop_each_edge(mkc_plan *p, int *refused, int *redundant, int *cache)
{
	char *seen = mkc_arena_alloc(ctx->arena, (size_t)p->tasks.n + 1);
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		int *saved = t->preds, n = t->npreds;
		for (int k = 0; k < n; k++) {
			int *fewer = mkc_arena_alloc(ctx->arena, (size_t)n * sizeof *fewer);
			memcpy(fewer, saved, (size_t)k * sizeof *fewer);
			memcpy(fewer + k, saved + k + 1, (size_t)(n - k - 1) * sizeof *fewer);
			t->preds = fewer;
			t->npreds = n - 1;
			memset(seen, 0, (size_t)p->tasks.n);
			bool other_path = false;
			for (int j = 0; j < n - 1 && !other_path; j++)
				other_path = reaches(p, saved[k], fewer[j], seen);
			reset(p);
			finish(p);
			mkc_ctx_clear_errors(ctx);
			int rc = mkc_pass_verify(p);
			if (other_path) {
				cr_assert_eq(rc, 0, "dropping implied edge %d->%d: %s", saved[k], i, errs());
				(*redundant)++;
			} else {
				cr_assert_eq(rc, -1, "verify missed dropped edge %d->%d", saved[k], i);
				cr_assert(strstr(errs(), "nothing orders"), "%s", errs());
				(*refused)++;
				*cache += t->node->op == MKC_OP_CACHE_APPEND ||
					  MKC_TASK(p, saved[k])->node->op == MKC_OP_CACHE_APPEND;
			}
		}
		t->preds = saved;
		t->npreds = n;
	}
	reset(p);
	finish(p);
	cr_assert_eq(mkc_pass_verify(p), 0, "the intact plan verifies: %s", errs());
}

Test(plan, verify_refuses_every_dropped_dependency, .timeout = 300)
{
	int refused = 0, redundant = 0, cache = 0;
	mkc_plan *p = driven(MODEL("tiny_llama_decode_op23/model.onnx"), false);
	add_redundant_edge(p);
	reset(p);
	finish(p);
	cr_assert_eq(mkc_pass_verify(p), 0, "a redundant edge changes nothing: %s", errs());
	drop_each_edge(p, &refused, &redundant, &cache);
	cr_assert_geq(redundant, 1, "the redundant edge was never dropped");
	drop_each_edge(driven(MODEL("tiny_llama_decode_op18/model.onnx"), true), &refused, &redundant,
		       &cache);
	drop_each_edge(driven(MODEL("hf/qwen2_tiny"), false), &refused, &redundant, &cache);
	drop_each_edge(driven(MODEL("hand/small_mlp/model.onnx"), false), &refused, &redundant, &cache);
	cr_assert_gt(refused, 100, "only %d mutations refused", refused);
	cr_assert_geq(cache, 8, "only %d cache-append edges dropped", cache);
}

Test(plan, verify_refuses_a_wrong_threshold)
{
	mkc_plan *p = plan_of(MODEL("tiny_llama_decode_op23/model.onnx"), 8);
	mkc_event *e = MKC_EVENT(p, p->events.n / 2);
	e->threshold++;
	cr_assert_eq(mkc_pass_verify(p), -1);
	cr_assert(strstr(errs(), "threshold"), "%s", errs());
	e->threshold -= 2;
	mkc_ctx_clear_errors(ctx);
	cr_assert_eq(mkc_pass_verify(p), -1, "a threshold too low is refused too");
}

Test(plan, verify_refuses_a_deadlocking_queue)
{
	mkc_plan *p = plan_of(MODEL("hand/small_mlp/model.onnx"), 1);
	cr_assert_eq(mkc_pass_verify(p), 0, "%s", errs());
	/* one worker: swap a task with the one it depends on */
	mkc_task **q = p->queues[0];
	mkc_task *a = q[0], *b = q[1];
	cr_assert_gt(b->npreds, 0);
	q[0] = b;
	q[1] = a;
	a->pos = 1;
	b->pos = 0;
	cr_assert_eq(mkc_pass_verify(p), -1);
	cr_assert(strstr(errs(), "the queues deadlock"), "%s", errs());
}

Test(plan, verify_refuses_a_task_missing_from_its_queue)
{
	mkc_plan *p = plan_of(MODEL("hand/small_mlp/model.onnx"), 2);
	MKC_TASK(p, 3)->pos = 7;
	cr_assert_eq(mkc_pass_verify(p), -1);
	cr_assert(strstr(errs(), "not in its worker's queue"), "%s", errs());
}

Test(plan, elementwise_tiles_read_their_own_slice)
{
	/* a [64, 1024] Add with a broadcast row: 8 tiles of 8 rows */
	mkc_graph *g = gb_graph(ctx, "tiles.onnx", 18);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){64, 1024});
	mkc_tensor *b = gb_input(g, "b", MKC_DT_FLOAT, 2, (const int64_t[]){1, 1024});
	gb_output(g, gb_node_as(g, "add", "Add", "y", 2, (mkc_tensor *[]){x, b})->out[0]);
	cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_lower(g), 0, "%s", errs());
	mkc_plan *p = tiled(g, 8);
	cr_assert_eq(p->tasks.n, 8);
	mkc_task *t = MKC_TASK(p, 5);
	cr_assert_eq(t->out.lo[0].c, 40);
	cr_assert_eq(t->out.hi[0].c, 48);
	cr_assert_eq(t->reads[0].box.lo[0].c, 40, "x is read in the tile's rows");
	cr_assert_eq(t->reads[1].box.lo[0].c, 0, "the broadcast row is read whole");
	cr_assert_eq(t->reads[1].box.hi[0].c, 1);
	cr_assert_eq(t->reads[1].box.hi[1].c, 1024);
}

Test(plan, boxes_overlap_only_when_not_provably_apart)
{
	mkc_graph *g = mkc_graph_create(ctx, "boxes");
	int p = mkc_graph_sym(g, "p");
	mkc_box a = {{mkc_dim_const(0)}, {mkc_dim_sym(p)}};
	mkc_box b = {{mkc_dim_sym(p)}, {dim_plus(p, 1)}};
	mkc_box c = {{mkc_dim_const(3)}, {mkc_dim_const(5)}};
	cr_assert_not(mkc_box_overlap(1, &a, &b), "[0,p) and [p,p+1) are apart");
	cr_assert(mkc_box_overlap(1, &a, &c), "[0,p) and [3,5) may meet");
	cr_assert(mkc_box_overlap(1, &b, &c), "[p,p+1) and [3,5) may meet");
	mkc_box e = {{mkc_dim_const(5)}, {mkc_dim_const(5)}};
	cr_assert_not(mkc_box_overlap(1, &e, &c), "an empty box meets nothing");
}

/* The memory pass reuses space, and verify sees through the sharing. */
Test(plan, memory_reuse_is_ordered_and_checked)
{
	mkc_plan *p = plan_of(MODEL("tiny_llama_decode_op23/model.onnx"), 8);
	cr_assert_eq(mkc_pass_verify(p), 0, "%s", errs());
	mkc_graph *g = p->g;
	int64_t own = 0;
	int shared = 0;
	for (int i = 0; i < g->tensors.n; i++) {
		own += p->mem_off[i] >= 0 ? p->mem_size[i] : 0;
		shared += p->nalias[i] > 0;
	}
	cr_assert_lt(p->arena_bytes, own, "the arena (%lld) is smaller than the sum (%lld)",
		     (long long)p->arena_bytes, (long long)own);
	cr_assert_gt(shared, 10);
	/* two intermediates live at once put on the same bytes: verify refuses */
	mkc_tensor *a = mkc_graph_find(g, "linear"), *b = mkc_graph_find(g, "linear_1");
	cr_assert(p->mem_off[a->id] >= 0 && p->mem_off[b->id] >= 0);
	cr_assert_neq(p->mem_off[a->id], p->mem_off[b->id]);
	p->mem_off[b->id] = p->mem_off[a->id];
	cr_assert_eq(mkc_pass_verify(p), -1, "verify missed overlapping live tensors");
	cr_assert(strstr(errs(), "nothing orders"), "%s", errs());
}

Test(plan, no_reuse_gives_every_intermediate_its_own_bytes)
{
	mkc_graph *g = graph_of(MODEL("tiny_llama_decode_op23/model.onnx"));
	mkc_target_params tp = {.nworkers = 8, .min_tile_elems = 4096, .matmul_tile_cols = 64,
				.no_reuse = true};
	mkc_plan *p = mkc_plan_create(g, &tp);
	cr_assert_eq(mkc_pass_tile(p), 0);
	cr_assert_eq(mkc_pass_memory(p), 0);
	for (int i = 0; i < g->tensors.n; i++)
		cr_assert_eq(p->nalias[i], 0, "%s shares bytes", MKC_TENSOR(g, i)->name);
}

/*
 * Step 5 of the schedule check, alone: a task cut short leaves elements of
 * its node's output unwritten, which no dependency shows.
 */
Test(plan, verify_refuses_a_task_that_leaves_elements_unwritten)
{
	mkc_plan *p = plan_of(MODEL("tiny_llama_decode_op23/model.onnx"), 8);
	cr_assert_eq(mkc_pass_verify(p), 0, "%s", errs());
	mkc_task *t = NULL;
	int d = 0;
	for (int i = 0; i < p->tasks.n && !t; i++) {
		mkc_task *u = MKC_TASK(p, i);
		const mkc_tensor *y = u->node->nout == 1 ? u->node->out[0] : NULL;
		d = y && !y->cap && y->kind != MKC_TK_STATE ? y->rank - 1 : -1;   /* not a cache */
		if (u->ntiles > 1 && d >= 0 && mkc_dim_is_const(u->out.hi[d]) &&
		    mkc_dim_is_const(u->out.lo[d]) && u->out.hi[d].c > u->out.lo[d].c + 1)
			t = u;
	}
	cr_assert_not_null(t);
	for (int k = 0; k < t->nwrites; k++)
		if (t->writes[k].t == t->node->out[0])
			t->writes[k].box.hi[d].c--;
	cr_assert_eq(mkc_pass_verify(p), -1);
	cr_assert(strstr(errs(), "elements (symbols at their largest)"), "%s", errs());
}

/*
 * A chunked plan cut as for a GPU (blocks of 128 rows or more, products
 * 128 columns wide, a Glu's past the first block as wide by TMA, the
 * first block's over the workers), made on the C
 * build by every pass: the schedule check counts every element of every
 * output. A block of a norm's rows cut into runs was planned as one run
 * of half of them (session 26: a batch's tokens wrong on an H200); the C
 * target's blocks of 4 rows never cut a norm's block into runs, so only
 * such a plan shows it. 8192 tokens make a block 512 rows of 64 values.
 */
Test(plan, chunked_plans_cut_for_a_gpu_write_every_row, .timeout = 120)
{
	static const struct {
		const char *path;
		int64_t chunk, seqs;
	} cases[] = {
		{MODEL("hf_chunk/llama_tiny_bf16"), 8192, 0},
		{MODEL("hf_chunk/qwen3_tiny"), 8192, 0},
		{MODEL("hf_chunk/llama_tiny_bf16"), 64, 64},
	};
	static const int workers[] = {8, 132};
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++) {
			const int w = workers[j];
			mkc_graph *g = mkc_load_model(ctx, cases[i].path);
			cr_assert_not_null(g, "%s", errs());
			mkc_driver_options d = {.workers = w, .wide_target = true, .tc_products = true,
						.few_tiles = true, .tc_attention = true,
						.tma_products = true, .max_chunk = cases[i].chunk,
						.max_seqs = cases[i].seqs,
						.max_seq = 8448, .max_dim = 8448};
			mkc_plan *p = NULL;
			cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s, chunk %lld, %d workers: %s",
				     cases[i].path, (long long)cases[i].chunk, w, errs());
		}
}

/*
 * A chunk's embedding Gather is cut by runs of the step's rows, every
 * column in each tile: cut by columns, as a decode step's is, each of 132
 * tiles took every token and checked their indices one after another,
 * 374 us at the start of the 1B shape's 1024-token chunk (H100, session
 * 27).
 */
Test(plan, a_chunk_gathers_its_embeddings_by_rows)
{
	mkc_graph *g = mkc_load_model(ctx, MODEL("hf_chunk/llama_tiny_bf16"));
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = 132, .wide_target = true, .tc_products = true,
				.few_tiles = true, .tc_attention = true,
				.max_chunk = 1024, .max_seq = 2048, .max_dim = 2048};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	int n = 0;
	int64_t rows = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		if (t->node->op != MKC_OP_GATHER || t->node->out[0]->rank != 3)
			continue;
		const mkc_tensor *y = t->node->out[0];
		cr_assert(mkc_dim_is_const(t->out.lo[1]) && mkc_dim_is_const(t->out.hi[1]) && t->clamp,
			  "tile %d: a run of rows, cut at run time", t->tile);
		cr_assert(t->out.hi[1].c - t->out.lo[1].c <= 128, "tile %d: %lld rows", t->tile,
			  (long long)(t->out.hi[1].c - t->out.lo[1].c));
		cr_assert(mkc_dim_eq(t->out.lo[2], mkc_dim_const(0)) &&
			  mkc_dim_eq(t->out.hi[2], y->shape[2]), "tile %d: every column", t->tile);
		rows += t->out.hi[1].c - t->out.lo[1].c;
		n++;
	}
	cr_assert_gt(n, 1, "the embedding is cut");
	cr_assert_eq(rows, 1024, "the tiles' runs cover the chunk once");
}

/*
 * A few-token plan cut for a GPU (mkc_run_twins with the default
 * --few-tokens, MKC_FEW_ROWS, out of 1024): one block of the step's rows,
 * and each product cut as the decode step's, into about a tile a worker of
 * at most MKC_GEMV_ROWS (the 128-column tiles of the chunk's plan kept 16
 * of 132 workers streaming a 2048-feature product); then a twin of steps
 * of at most 32 tokens, the one of the two whose norms go into its
 * products (driver.c's FEW_NORM_TOKENS); then the one-token plan. The
 * chunk's plan's are 128 columns wide. A chunk limit within F has its own
 * plan cut so, and no such twin (32 and below: no twin of 32 either).
 */
static mkc_graph *
load_tiny(void *user)
{
	return mkc_load_model(ctx, user);
}

Test(plan, a_few_token_plan_cuts_its_products_as_a_decode_step)
{
	char *path = MODEL("hf_chunk/llama_tiny_bf16");
	mkc_graph *g = load_tiny(path);
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = 132, .wide_target = true, .tc_products = true,
				.few_tiles = true, .tc_attention = true,
				.max_chunk = 1024, .max_seq = 2048, .max_dim = 2048, .few_tokens = -1};
	mkc_plan *p = NULL, *twins[3] = {NULL, NULL, NULL};
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	cr_assert_eq(mkc_run_twins(g, load_tiny, path, &d, twins), 3, "%s", errs());
	cr_assert_eq(twins[0]->g->max_chunk, MKC_FEW_ROWS, "the default on a GPU target");
	cr_assert_eq(twins[1]->g->max_chunk, 32, "then steps of at most 32 tokens");
	cr_assert(!twins[0]->g->few_norms && twins[1]->g->few_norms, "the norms inside at 32");
	cr_assert_eq(twins[2]->g->max_chunk, 0, "then the one-token plan");
	int gemm = 0;
	for (int i = 0; i < twins[0]->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(twins[0], i);
		if (t->node->op != MKC_OP_GEMM || t->tile)
			continue;
		/* the same node of the chunk's plan: one tile a 128 columns of each block */
		int chunk = 0;
		for (int j = 0; j < p->tasks.n; j++) {
			const mkc_task *u = MKC_TASK(p, j);
			chunk += !strcmp(u->node->name, t->node->name) && u->out.lo[0].c == 0;
		}
		const int64_t n = t->node->out[0]->shape[1].c;
		cr_assert(t->clamp && t->out.hi[0].c - t->out.lo[0].c == MKC_FEW_ROWS,
			  "%s: a block of the step's rows", t->node->name);
		cr_assert_eq(chunk, (n + 127) / 128, "%s: the chunk's cut", t->node->name);
		cr_assert_gt(t->ntiles, chunk, "%s: %d tiles, the chunk's %d", t->node->name,
			     t->ntiles, chunk);
		for (int j = 0; j < twins[0]->tasks.n; j++) {
			const mkc_task *u = MKC_TASK(twins[0], j);
			cr_assert(u->node != t->node || u->out.hi[1].c - u->out.lo[1].c <= 128,
				  "at most MKC_GEMV_ROWS a tile");
			cr_assert(!u->chunk_cut, "%s: a tile or two a worker, no chunk's cut",
				  u->node->name);
		}
		gemm++;
	}
	cr_assert_gt(gemm, 2, "the few-token plan has products");
	/* a chunk limit within F: the chunk's own plan is cut so, and has no such twin */
	mkc_graph *g2 = load_tiny(path);
	cr_assert_not_null(g2, "%s", errs());
	mkc_driver_options d2 = d;
	d2.max_chunk = 32;
	mkc_plan *p2 = NULL, *one[2] = {NULL, NULL};
	cr_assert_eq(mkc_run_passes(g2, &d2, &p2), 0, "%s", errs());
	cr_assert(p2->tp.few_products && p2->g->max_chunk == 32, "the chunk's plan cut as few");
	cr_assert_eq(mkc_run_twins(g2, load_tiny, path, &d2, one), 1, "%s", errs());
	cr_assert_eq(one[0]->g->max_chunk, 0, "the one-token plan alone");
}

/*
 * A few-token plan's product whose decode cut has more than two tiles a
 * worker (the output layer's) is cut as the chunk's, 128 columns a tile,
 * for the chunk's tile (its tasks' chunk_cut): the tiny Llama's head of
 * 1024 rows on 2 workers, 8 tiles, where every row's logits are wanted
 * (--all-logits, --max-seqs; a prompt's step takes its last row's alone).
 */
Test(plan, a_few_token_plans_long_product_is_cut_as_a_chunks)
{
	mkc_graph *g = mkc_load_model_logits(ctx, MODEL("tiny_llama_hf"), true);
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = 2, .wide_target = true, .tc_products = true,
				.few_tiles = true, .tc_attention = true,
				.max_chunk = 16, .max_seqs = 16, .max_seq = 256, .max_dim = 256,
				.few_tokens = -1};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	cr_assert(p->tp.few_products, "a chunk limit within F: the few-token plan");
	int head = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		if (strcmp(t->node->name, "lm_head"))
			continue;
		cr_assert(t->chunk_cut, "tile %d: the chunk's cut", t->tile);
		cr_assert_eq(t->out.hi[1].c - t->out.lo[1].c, 128, "tile %d: 128 columns", t->tile);
		head++;
	}
	cr_assert_eq(head, 1024 / 128, "the head's tiles");
}
