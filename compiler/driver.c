/* driver.c - the pass pipeline. See driver.h. */
#include "driver.h"
#include "../runtime/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Graph passes run on the graph, plan passes on the task plan made after
 * them; lower, the last graph pass, describes the nodes for tile and the
 * backends, so that no plan pass reads ONNX.
 */
typedef struct {
	const char *name;
	int (*graph)(mkc_graph *g);
	int (*plan)(mkc_plan *p);
} pass;

static const pass passes[] = {
	{"infer", mkc_pass_infer, NULL},
	{"half", mkc_pass_half, NULL},
	{"decompose", mkc_pass_decompose, NULL},
	{"gqa", mkc_pass_gqa, NULL},
	{"layout", mkc_pass_layout, NULL},
	{"canon", mkc_pass_canon, NULL},
	{"flat", mkc_pass_flat, NULL},
	{"fuse", mkc_pass_fuse, NULL},
	{"dce", mkc_pass_dce, NULL},
	{"state", mkc_pass_state, NULL},
	{"weights", mkc_pass_weights, NULL},
	{"fuse_norm", mkc_pass_fuse_norm, NULL},
	{"fuse_glu", mkc_pass_fuse_glu, NULL},
	{"fuse_rope", mkc_pass_fuse_rope, NULL},
	{"fuse_qkv", mkc_pass_fuse_qkv, NULL},
	{"split_attn", mkc_pass_split_attn, NULL},
	{"kv", mkc_pass_kv, NULL},
	{"lower", mkc_pass_lower, NULL},
	{"narrow", mkc_pass_narrow, NULL},
	{"tile", NULL, mkc_pass_tile},
	{"views", NULL, mkc_pass_views},
	{"memory", NULL, mkc_pass_memory},
	{"deps", NULL, mkc_pass_deps},
	{"events", NULL, mkc_pass_events},
	{"schedule", NULL, mkc_pass_schedule},
	{"verify", NULL, mkc_pass_verify},
};

enum { NPASSES = sizeof passes / sizeof passes[0] };

bool
mkc_pass_known(const char *name)
{
	if (strcmp(name, "load") == 0)
		return true;
	for (int i = 0; i < NPASSES; i++)
		if (strcmp(passes[i].name, name) == 0)
			return true;
	return false;
}

/*
 * --max-seqs: the caches in pages (passes/state.c), as many as max_seqs
 * sequences of kv_cap positions need unless --cache-pages says; a step
 * takes as many tokens as there are sequences, or --max-chunk's. The
 * model's step must take a symbolic count of tokens, and keep its caches.
 */
static int
set_pages(mkc_graph *g, const mkc_driver_options *o, int chunk, int64_t *max_chunk)
{
	if (o->kv_io)
		return mkc_error(g->ctx, "%s: --max-seqs keeps the caches in pages the model owns; "
				 "--kv-io keeps them as inputs and outputs: give one of them", g->path);
	if (chunk < 0)
		return mkc_error(g->ctx, "%s: --max-seqs %lld: the model's step takes a fixed number "
				 "of tokens (no output of past_len + S positions beside a past input of "
				 "past_len), so a step cannot carry tokens of several sequences",
				 g->path, (long long)o->max_seqs);
	int64_t page = o->page_size ? o->page_size : 16;
	g->max_seqs = o->max_seqs;
	g->page_size = page;
	g->cache_pages = o->cache_pages ? o->cache_pages
					: o->max_seqs * ((g->kv_cap + page - 1) / page);
	if (*max_chunk < o->max_seqs && !o->one_token_twin && !o->few_twin)
		*max_chunk = o->max_seqs;
	return 0;
}

/*
 * A few-token plan's norms go into the products after them (fuse_norm)
 * where the products normalise rows well: on the C target, or on a
 * few-token plan's tensor-core tiles (a GPU's product by rows without them
 * is a warp an output, where a NormGemm's general body is a lane one) ...
 */
static bool
few_norms(const mkc_driver_options *o)
{
	return o->few_tiles || !o->wide_target;
}

/*
 * ... in steps of at most FEW_NORM_TOKENS tokens. The GPU tile then reads
 * the float32 rows before the norm where it read the norm's bf16 ones: the
 * 1B shape's step of 8 sequences 2.24 -> 1.88 ms with the norms inside, of
 * 64 sequences 4.19 -> 4.20 at context 128 and 5.29 -> 5.62 at 1024 (H100,
 * session 37, with session 35's span and xor; the norms alone cost 12-15% at
 * 64, session 36). A plan of more tokens keeps its norms, and a twin of at
 * most FEW_NORM_TOKENS takes the smaller steps (mkc_run_twins).
 */
enum { FEW_NORM_TOKENS = 32 };

int
mkc_run_passes(mkc_graph *g, const mkc_driver_options *o, mkc_plan **plan)
{
	mkc_target_params tp = {
		.nworkers = o->workers ? o->workers : 8,
		/* a GPU block's 256 lanes take 4 elements each of a 1024-element
		 * tile in one round of loads; at 4096 the lanes walked 16 in turn,
		 * and the 1B step's SwiGLU cost 8.6 us a tile on its critical path */
		.min_tile_elems = o->wide_target ? 1024 : 4096,
		/* the GPU matvec body holds up to 128 rows a tile (MKC_GEMV_ROWS):
		 * the output layer's 2112 tiles of 61 rows streamed at 2.96 TB/s
		 * in the 1B step, each paying the first loads' latency */
		.matmul_tile_cols = o->wide_target ? 128 : 64,
		.matmul_min_cols = 8,
		/* a GPU block of a step's tokens is a tensor-core tile's rows; the C
		 * target's few rows let tests with short chunks cross blocks */
		.chunk_rows = o->wide_target ? 128 : 4,
		/* a Glu tile by TMA of 256 weight rows: 366 -> 498 TFLOPS at the 1B
		 * shape's 1024-token chunk (H100, session 28, tests/gpu/mma.cu) */
		.wide_glu = o->tma_products,
		.max_dim = o->max_dim,
		.no_reuse = o->no_reuse,
	};
	mkc_plan *p = NULL;
	const char *dump = o->dump_after;
	if (dump && strcmp(dump, "load") == 0)
		mkc_dump_graph(stdout, g);
	if (mkc_verify_graph(g, false) != 0)
		return -1;
	g->bf16_weights = o->bf16_weights;
	g->tc_products = o->tc_products;
	g->tc_attention = o->tc_attention;
	g->kv_dtype = o->kv_dtype;
	g->nworkers = tp.nworkers;
	g->kv_cap = o->kv_io ? 0 : o->max_seq ? o->max_seq : o->max_dim ? o->max_dim : 4096;
	g->kv_cap_default = !o->kv_io && !o->max_seq && !o->max_dim;
	/* a step of one token unless chunks are asked for: the decode step's graph */
	int chunk = mkc_graph_chunk_sym(g);
	int64_t max_chunk = o->max_chunk;
	if (o->max_seqs > 0 && set_pages(g, o, chunk, &max_chunk) != 0)
		return -1;
	if (chunk >= 0 && max_chunk > 1) {
		g->chunk_sym = chunk;
		g->max_chunk = max_chunk;
		mkc_progress(g->ctx, "steps of 1 to %lld new positions (%s)", (long long)max_chunk,
			     MKC_SYM(g, chunk));
		/* a plan of at most F rows (the few-token twin, whose max_chunk is
		 * F, or a chunk's plan within F, which then has no such twin:
		 * mkc_run_twins): one block of all its rows, products cut as a
		 * decode step's */
		const int64_t few = mkc_few_tokens(o);
		if (few >= 2 && max_chunk <= few) {
			tp.chunk_rows = max_chunk;
			tp.few_products = true;
			g->few_norms = few_norms(o) && max_chunk <= FEW_NORM_TOKENS;
		}
	} else if (chunk >= 0) {
		mkc_graph_fix_sym(g, chunk, 1, o->one_token_twin);
	} else if (o->max_chunk > 1) {
		return mkc_error(g->ctx, "%s: --max-chunk %lld: the model's step takes a fixed number "
				 "of tokens (no output of past_len + S positions beside a past input of "
				 "past_len)", g->path, (long long)o->max_chunk);
	}
	for (int i = 0; i < NPASSES; i++) {
		const pass *ps = &passes[i];
		mkc_progress(g->ctx, "pass %s", ps->name);
		if (ps->plan && !p) {
			/* buffers that grow with the cache must hold all of it */
			if (g->states.n && g->kv_cap > (tp.max_dim ? tp.max_dim : 4096))
				tp.max_dim = g->kv_cap;
			p = mkc_plan_create(g, &tp);
		}
		/* --no-fuse: the graph as canon left it, for comparing */
		bool skip = o->no_fuse && (ps->graph == mkc_pass_fuse || ps->graph == mkc_pass_fuse_norm ||
				     ps->graph == mkc_pass_fuse_glu || ps->graph == mkc_pass_fuse_rope ||
				     ps->graph == mkc_pass_fuse_qkv);
		if (!skip && (ps->graph ? ps->graph(g) != 0 : ps->plan(p) != 0))
			return -1;
		bool here = dump && strcmp(dump, ps->name) == 0;
		if (ps->graph && here)
			mkc_dump_graph(stdout, g);
		if (ps->plan && here)
			(o->dump_dot ? mkc_dump_plan_dot : mkc_dump_plan)(stdout, p);
		if (ps->graph && mkc_verify_graph(g, true) != 0)
			return -1;
	}
	*plan = p;
	return 0;
}

int64_t
mkc_few_tokens(const mkc_driver_options *o)
{
	if (o->few_tokens >= 0)
		return o->few_tokens;
	return o->wide_target && o->few_tiles ? MKC_FEW_ROWS : 0;
}

int
mkc_run_twins(const mkc_graph *g, mkc_graph *(*load)(void *user), void *user,
	      const mkc_driver_options *o, mkc_plan **twins)
{
	if (g->chunk_sym < 0)
		return 0;
	/* each twin's most tokens, fewer than the plan before it's */
	int64_t most[3], top = g->max_chunk;
	int nt = 0;
	const int64_t few = mkc_few_tokens(o);
	if (few >= 2 && few < top)
		most[nt++] = top = few;
	if (few >= 2 && top > FEW_NORM_TOKENS && few_norms(o))
		most[nt++] = FEW_NORM_TOKENS;
	most[nt++] = 1;
	for (int n = 0; n < nt; n++) {
		if (most[n] == 1)
			mkc_progress(g->ctx, "the one-token step's own plan");
		else
			mkc_progress(g->ctx, "the own plan of steps of 2 to %lld tokens",
				     (long long)most[n]);
		mkc_driver_options d = *o;
		d.max_chunk = most[n];
		d.one_token_twin = most[n] == 1;
		d.few_twin = most[n] > 1;
		d.dump_after = NULL;
		mkc_graph *gk = load(user);
		if (!gk || mkc_run_passes(gk, &d, &twins[n]) != 0)
			return -1;
	}
	return nt;
}

/*
 * A batch that is a symbol (onnxruntime-genai's exports: input_ids
 * [batch_size, sequence_length]) is 1: the compiled step takes one
 * sequence. Only a symbol that is axis 0 of input_ids and appears in the
 * graph's inputs and outputs as nothing but a whole axis 0; --dim fixes
 * another value first.
 */
static void
fix_batch(mkc_graph *g)
{
	const mkc_tensor *ids = mkc_graph_find(g, "input_ids");
	if (!ids || ids->kind != MKC_TK_INPUT || ids->rank != 2)
		return;
	mkc_dim b = ids->shape[0];
	int s = mkc_dim_bare_sym(b);
	if (s < 0)
		return;
	for (int io = 0; io < 2; io++) {
		const mkc_vec *v = io ? &g->outputs : &g->inputs;
		for (int i = 0; i < v->n; i++) {
			const mkc_tensor *t = v->v[i];
			for (int d = 0; d < t->rank; d++)
				if (mkc_dim_uses(t->shape[d], s, NULL) && (d || !mkc_dim_eq(t->shape[d], b)))
					return;
		}
	}
	mkc_progress(g->ctx, "%s: the batch '%s' is 1 (mkc steps one sequence; --dim %s=N "
		     "fixes another)", g->path, MKC_SYM(g, s), MKC_SYM(g, s));
	mkc_graph_fix_sym(g, s, 1, false);
}

int
mkc_fix_dims(mkc_graph *g, const char *const *dims, int n)
{
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(dims[i], '=');
		char *end = NULL;
		long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || eq == dims[i] || !end || *end || end == eq + 1 || v < 1 || v > 1LL << 40)
			return mkc_error(g->ctx, "%s: --dim %s: NAME=N with N from 1 to 2^40", g->path,
					 dims[i]);
		int s = mkc_graph_find_sym(g, dims[i], (size_t)(eq - dims[i]));
		if (s < 0) {
			char names[512] = "";
			for (int k = 0; k < g->syms.n; k++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
					 k ? ", " : "", MKC_SYM(g, k));
			return mkc_error(g->ctx, "%s: --dim %s: the model has no symbolic dimension of "
					 "that name (it has: %s)", g->path, dims[i],
					 g->syms.n ? names : "none");
		}
		mkc_graph_fix_sym(g, s, v, false);
	}
	fix_batch(g);
	return 0;
}
