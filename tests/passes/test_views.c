/*
 * test_views.c - Reshape and its kin read in place (passes/views.c): the
 * plan the driver makes has no task for them and no region on their
 * outputs; their readers read the base tensor whole, so verify refuses the
 * plan when such a reader no longer waits for the base's writers; and a
 * Reshape whose output is a graph output stays a copy. The golden tests
 * run every model with views end to end.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../fixture.h"
#include "../graph_builder.h"
#include "driver.h"
#include "frontend.h"

TestSuite(views, .init = setup, .fini = teardown);

static mkc_plan *
driven(const char *path, int workers)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = workers};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	return p;
}

static bool
is_reshape_kin(mkc_op op)
{
	return op == MKC_OP_RESHAPE || op == MKC_OP_FLATTEN || op == MKC_OP_SQUEEZE ||
	       op == MKC_OP_UNSQUEEZE;
}

Test(views, reshapes_have_no_tasks_and_their_readers_read_the_base)
{
	const char *models[] = {"tests/models/tiny_llama_hf", "tests/models/tiny_llama_decode_op18"};
	for (int m = 0; m < 2; m++) {
		mkc_plan *p = driven(models[m], 8);
		mkc_graph *g = p->g;
		int views = 0;
		for (int i = 0; i < g->nodes.n; i++) {
			const mkc_node *n = MKC_NODE(g, i);
			if (!is_reshape_kin(n->op) || n->out[0]->kind == MKC_TK_OUTPUT)
				continue;   /* an output has a buffer of the caller's */
			int base = p->view_of[n->out[0]->id];
			cr_assert_geq(base, 0, "%s: '%s' is no view", models[m], n->name);
			cr_expect_lt(p->view_of[base], 0, "a base is never a view itself");
			views++;
		}
		/* tiny_llama_hf: the embedding row and each layer's attention
		 * output flattened (its q/k/v heads are HeadProj's own output,
		 * passes/fuse_qkv.c, not reshapes) */
		cr_expect_geq(views, 3, "%s: %d views", models[m], views);
		for (int i = 0; i < p->tasks.n; i++) {
			const mkc_task *t = MKC_TASK(p, i);
			cr_expect_eq(t->id, i);
			cr_expect(!is_reshape_kin(t->node->op) || t->node->out[0]->kind == MKC_TK_OUTPUT,
				  "task %d runs '%s'", i, t->node->name);
			for (int k = 0; k < t->nreads + t->nwrites; k++) {
				const mkc_region *r = k < t->nreads ? &t->reads[k] : &t->writes[k - t->nreads];
				cr_expect_lt(p->view_of[r->t->id], 0, "task %d touches view '%s'", i,
					     r->t->name);
			}
		}
	}
}

/* The view that task t's node reads whose base an intermediate is, or NULL. */
static const mkc_tensor *
view_read(const mkc_plan *p, const mkc_task *t)
{
	for (int k = 0; k < t->node->nin; k++) {
		const mkc_tensor *y = t->node->in[k];
		if (y && p->view_of[y->id] >= 0 &&
		    MKC_TENSOR(p->g, p->view_of[y->id])->kind == MKC_TK_INTERMEDIATE)
			return MKC_TENSOR(p->g, p->view_of[y->id]);
	}
	return NULL;
}

/* Takes out t's predecessors that write x; false if there are none. */
static bool
drop_writers(mkc_plan *p, mkc_task *t, const mkc_tensor *x)
{
	int kept = 0;
	for (int k = 0; k < t->npreds; k++) {
		const mkc_task *q = MKC_TASK(p, t->preds[k]);
		bool writes = false;
		for (int j = 0; j < q->nwrites; j++)
			writes |= q->writes[j].t == x;
		if (!writes)
			t->preds[kept++] = t->preds[k];
	}
	bool any = kept < t->npreds;
	t->npreds = kept;
	return any;
}

/*
 * A reader of a view, with its edges from the writers of the view's base
 * taken out (and nothing else), is refused: the proof sees the base, not a
 * view it was never told about.
 */
Test(views, a_reader_of_a_view_that_does_not_wait_is_refused)
{
	mkc_plan *p = driven("tests/models/tiny_llama_hf", 64);
	const mkc_tensor *base = NULL;
	for (int i = 0; i < p->tasks.n && !base; i++) {
		mkc_task *t = MKC_TASK(p, i);
		const mkc_tensor *x = view_read(p, t);
		if (x && drop_writers(p, t, x))
			base = x;
	}
	cr_assert_not_null(base, "no reader of a view waits on its base's writer directly");
	for (int k = 0; k < p->tasks.n; k++) {
		mkc_task *u = MKC_TASK(p, k);
		u->nwaits = u->nsignals = 0;
		u->worker = -1;
		u->pos = 0;
	}
	p->events = (mkc_vec){0};
	p->queues = NULL;
	p->qlen = NULL;
	p->tp.nworkers = p->tasks.n;   /* a worker a task: no queue order hides it */
	cr_assert_eq(mkc_pass_events(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_schedule(p), 0, "%s", errs());
	cr_assert_eq(mkc_pass_verify(p), -1, "verify missed a reader of '%s'", base->name);
	cr_expect(strstr(errs(), "nothing orders"), "%s", errs());
	cr_expect(strstr(errs(), base->name), "%s", errs());
}

/* x [2,8] -> Reshape [16]: a copy when its output is a graph output, a view when not. */
static mkc_plan *
reshape_plan(bool output)
{
	mkc_graph *g = gb_graph(ctx, "reshape.onnx", 18);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
	mkc_tensor *s = gb_ints(g, "shape", 1, (const int64_t[]){16});
	mkc_tensor *y = gb_node_as(g, "reshape", "Reshape", "r", 2, (mkc_tensor *[]){x, s})->out[0];
	if (!output)
		y = gb_node_as(g, "neg", "Neg", "y", 1, &y)->out[0];
	gb_output(g, y);
	mkc_driver_options d = {.workers = 2};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	return p;
}

Test(views, a_graph_output_stays_a_copy)
{
	mkc_plan *p = reshape_plan(true);
	cr_expect_eq(p->view_of[mkc_graph_find(p->g, "r")->id], -1);
	cr_expect_eq(p->tasks.n, 1);
	cr_expect_eq(MKC_TASK(p, 0)->node->op, MKC_OP_RESHAPE);
	p = reshape_plan(false);
	cr_expect_eq(p->view_of[mkc_graph_find(p->g, "r")->id], mkc_graph_find(p->g, "x")->id);
	cr_assert_eq(p->tasks.n, 1);
	const mkc_task *t = MKC_TASK(p, 0);
	cr_expect_eq(t->node->op, MKC_OP_NEG);
	cr_expect_str_eq(t->reads[0].t->name, "x");
}

/*
 * A prompt chunk's head transposes are views: [1, S, H, D] -> [1, H, S, D]
 * read by a rotary or a cache append, with their input's strides
 * permuted, and the attention's output written through into the [1, S,
 * H, D] layout its Transpose made; no Transpose has a task, and the
 * attention's tiles write the Transpose's output, each its own box (the
 * golden chunk tests run both; with either view's strides left dense five
 * of them fail).
 */
Test(views, a_chunks_head_transposes_are_read_and_written_in_place)
{
	mkc_graph *g = mkc_load_model(ctx, "tests/models/hf_chunk/llama_tiny_bf16");
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = 8, .max_chunk = 64};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	int reads = 0, writes = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		if (n->op != MKC_OP_TRANSPOSE || n->dead)
			continue;
		const mkc_tensor *x = n->in[0], *y = n->out[0];
		if (p->view_of[x->id] == y->id) {
			cr_assert_eq(x->producer->op, MKC_OP_ATTENTION, "'%s'", n->name);
			writes++;
			continue;
		}
		cr_assert_geq(p->view_of[y->id], 0, "'%s' is neither view", n->name);
		reads++;
		for (int j = 0; j < g->nodes.n; j++) {
			const mkc_node *r = MKC_NODE(g, j);
			for (int k = 0; k < r->nin; k++)
				cr_assert(r->in[k] != y || (k == 0 && (r->op == MKC_OP_ROTARY ||
								       r->op == MKC_OP_CACHE_APPEND)),
					  "'%s' reads the view '%s'", r->name, y->name);
		}
	}
	/* each layer: q (to its rotary), k and v (to their appends); the output */
	cr_expect_geq(reads, 6, "%d transposes read in place", reads);
	cr_expect_geq(writes, 2, "%d transposes written through", writes);
	int attn = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		cr_assert(t->node->op != MKC_OP_TRANSPOSE, "'%s' has a task", t->node->name);
		if (t->node->op != MKC_OP_ATTENTION)
			continue;
		attn++;
		const mkc_tensor *a = t->node->out[0];
		cr_assert_eq(t->nwrites, 1);
		cr_assert_eq(t->writes[0].t->id, p->view_of[a->id], "it writes the base");
		/* the box permuted: the base's axis 1 is the tile's positions, axis 2 its heads */
		cr_assert(mkc_dim_eq(t->writes[0].box.lo[2], t->out.lo[1]) &&
			  mkc_dim_eq(t->writes[0].box.hi[2], t->out.hi[1]) &&
			  mkc_dim_eq(t->writes[0].box.lo[1], t->out.lo[2]), "an exact box");
	}
	cr_assert_gt(attn, 1);
}

/*
 * A step of several sequences (caches in pages) splits its attention into
 * parts and a merge, and the merge's output [B, H, S, D] goes to o_proj
 * through a Transpose to [B, S, H, D]: the merge writes that layout itself
 * (every merge body takes its output's strides), so the Transpose has no
 * task (it was a stage of its own on a step's critical path: 11-15 us a
 * layer of the 1B shape at 8 and 64 sequences, H100, session 34).
 */
Test(views, a_paged_steps_merge_writes_through_its_transpose)
{
	mkc_graph *g = mkc_load_model(ctx, "tests/models/hf/qwen3_tiny");
	cr_assert_not_null(g, "%s", errs());
	mkc_driver_options d = {.workers = 8, .max_chunk = 8, .max_seqs = 4, .page_size = 4};
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &d, &p), 0, "%s", errs());
	int merges = 0;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		const mkc_tensor *x = t->node->nin ? t->node->in[0] : NULL;
		cr_assert(t->node->op != MKC_OP_TRANSPOSE || !x || !x->producer ||
			  x->producer->op != MKC_OP_ATTN_MERGE, "'%s' has a task", t->node->name);
		if (t->node->op != MKC_OP_ATTN_MERGE)
			continue;
		merges++;
		const mkc_tensor *a = t->node->out[0];
		cr_assert_geq(p->view_of[a->id], 0, "'%s' is no view", a->name);
		cr_assert_eq(t->writes[0].t->id, p->view_of[a->id], "it writes the base");
		/* the base's axis 1 is the tile's positions, axis 2 its heads */
		cr_assert(mkc_dim_eq(t->writes[0].box.lo[2], t->out.lo[1]) &&
			  mkc_dim_eq(t->writes[0].box.hi[2], t->out.hi[1]) &&
			  mkc_dim_eq(t->writes[0].box.lo[1], t->out.lo[2]), "an exact box");
	}
	cr_assert_gt(merges, 1);
}
