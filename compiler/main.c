/*
 * main.c - the mkc command line.
 *
 *   mkc MODEL [-o OUT] [--target cuda|hip|c] [--name NAME] [--dump-after=PASS] [-v]
 *   mkc info MODEL
 *
 * The compile path is a flat list of passes with the IR checker between
 * them; --dump-after=PASS prints the graph after that pass.
 */
#include "frontend.h"
#include "passes.h"
#include "../backends/core/emit.h"
#include "driver.h"
#include "../runtime/limits.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: mkc MODEL [-o OUT] [options]   compile a model\n"
	"       mkc info MODEL                  summarise a model\n"
	"       mkc test [options] DIR...       run golden tests (mkc test --help)\n"
	"\n"
	"MODEL is an .onnx file, an ONNX-JSON .json file, or a folder holding\n"
	"model.onnx or a Hugging Face model (config.json and safetensors).\n"
	"\n"
	"options:\n"
	"  -o OUT             output file; its extension picks the target\n"
	"                     (.cu: cuda, .hip: hip, .c: c); without it, every\n"
	"                     pass runs and the target (default c) is checked to\n"
	"                     take every node, and nothing is written\n"
	"  --target T         cuda, hip or c, whatever OUT is called\n"
	"  --arch A           hip: the AMD architecture the file is for, gfx942\n"
	"                     (MI300, the default) or gfx90a (MI200); a device\n"
	"                     build for another one stops with an #error\n"
	"  --name NAME        prefix of the emitted API, a C identifier that is no\n"
	"                     keyword and no name the emitted code uses (default:\n"
	"                     OUT's stem, with _model after it where it would be)\n"
	"  --dump-after=PASS  print the IR after PASS: the graph after load, infer,\n"
	"                     half, decompose, gqa, layout, canon, flat, fuse, dce,\n"
	"                     state, weights, fuse_norm, fuse_glu, fuse_rope, fuse_qkv,\n"
	"                     split_attn or kv; the graph with each node's kernel\n"
	"                     description after lower or narrow; the task plan\n"
	"                     after tile, views, memory, deps, events, schedule\n"
	"                     or verify\n"
	"  --dim NAME=N       the model's symbolic dimension NAME is N, fixed at\n"
	"                     compile time (a symbolic batch of input_ids is 1\n"
	"                     unless this says otherwise)\n"
	"  --const NAME=FILE  make graph input NAME a constant: the serialised\n"
	"                     TensorProto in FILE (shapes and axes that arrive as\n"
	"                     inputs must be known at compile time)\n"
	"  --weights T        f32 (default) or bf16: store the matrices, embedding\n"
	"                     tables and norm scales as bf16 (float32 arithmetic)\n"
	"  --embed-limit N    initializers up to N bytes go into OUT itself; larger\n"
	"                     ones are read from the model's files (default 4096)\n"
	"  --dump-format F    text (default), or dot: a task plan as a Graphviz\n"
	"                     graph of tasks and dependencies\n"
	"  --workers N        persistent workers to schedule for (default 8)\n"
	"  --no-reuse         give every intermediate tensor memory of its own\n"
	"  --no-fuse          keep residual adds, SwiGLU, RMS norms, the rotary\n"
	"                     and the cache appends out of the matvecs, cache\n"
	"                     appends and one another (the fusions are exact:\n"
	"                     the C target's results are the same bits)\n"
	"  --max-dim N        largest value of every symbolic dimension (past_len)\n"
	"                     the emitted code accepts (default 4096)\n"
	"  --max-seq N        positions each KV cache holds (default: --max-dim);\n"
	"                     past_len may then reach N minus the new positions\n"
	"  --max-chunk N      a step takes 1 to N new tokens of one sequence (a\n"
	"                     prompt in chunks; the token count is a run-time\n"
	"                     dimension); default 1: the decode step, one token\n"
	"  --few-tokens F     with --max-chunk past F, steps of 2 to F tokens run a\n"
	"                     plan of their own whose products stream each weight\n"
	"                     once, as the decode step's do (F from 0 to 64;\n"
	"                     default 64 on cuda, 0 on c and hip; 0 or 1: none);\n"
	"                     a --max-chunk of at most F has its plan cut so; where\n"
	"                     that plan takes more than 32, steps of 2 to 32 run\n"
	"                     another, whose norms go into its products\n"
	"  --max-seqs N       a step's tokens belong to up to N sequences, each with\n"
	"                     caches of --max-seq positions in pages of a shared pool\n"
	"                     (NAME_seq_open, NAME_step_seqs); a step takes up to N\n"
	"                     tokens, or --max-chunk's; implies --all-logits\n"
	"  --page-size N      positions a cache page holds (default 16)\n"
	"  --cache-pages N    pages in the pool (default: what N sequences at\n"
	"                     --max-seq positions take)\n"
	"  --all-logits       a Hugging Face folder's step gives every new token's\n"
	"                     logits [1, S, vocab], not the last one's [1, 1, vocab]\n"
	"                     (an ONNX model gives what its graph gives)\n"
	"  --kv T             f32 (default) or bf16: the type the KV caches are\n"
	"                     kept in; bf16 rounds keys and values as they are\n"
	"                     appended (all arithmetic stays float32); not with\n"
	"                     --kv-io, whose caches stay float32\n"
	"  --kv-io            keep the KV cache as inputs and outputs (past_* in,\n"
	"                     present_* out) instead of state the model owns\n"
	"  --profile          record a per-task timeline in the emitted code;\n"
	"                     NAME_profile_write(m, path) writes the last call's\n"
	"                     steps as a Chrome trace (Perfetto, chrome://tracing)\n"
	"  --profile-steps N  steps of one generate call the timeline keeps (the\n"
	"                     last N; default 8); implies --profile\n"
	"  -v, --verbose      report progress on stderr\n"
	"  -h, --help         this text\n"
	"  --version          mkc's version\n"
	"\n"
	"Without -o, mkc reads the model, runs every pass (the schedule proof\n"
	"included) and reports the result. With -o, it also writes OUT and its\n"
	"header (OUT with .h); on any error it writes neither. The c and cuda\n"
	"targets have been run; hip (AMD gfx90a, gfx942) is compiled in the\n"
	"tests and has run only on an NVIDIA GPU, through a test header, never\n"
	"on an AMD one.\n";

typedef struct {
	const char *model, *out, *target, *name, *dump_after, *arch;
	int verbose;
	int workers;
	int64_t max_dim, max_seq, max_chunk, max_seqs, page_size, cache_pages;
	int64_t few_tokens;       /* --few-tokens (-1: the target's default) */
	const char *command_line;
	const char *consts[64];   /* NAME=FILE.pb */
	bool bf16, dump_dot, no_reuse, kv_io, no_fuse, all_logits;
	int kv_dtype;             /* --kv: MKC_DT_FLOAT or MKC_DT_BFLOAT16 (0: float32) */
	long long embed_limit;
	int profile_steps;        /* --profile: steps the timeline keeps (0: none) */
	int nconsts;
	const char *dims[64];
	int ndims;
} options;


/* A usage error: one line on stderr, control bytes of arg escaped; exit status 2. */
static int
bad_usage(const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof msg, fmt, arg);
	fputs("mkc: ", stderr);
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			fprintf(stderr, "\\x%02x", *p);
		else
			fputc(*p, stderr);
	fputs(" (mkc --help lists the options)\n", stderr);
	return 2;
}

/* A decimal count from lo to hi: digits only, no sign, spaces or overflow. */
static bool
parse_count(const char *s, long long lo, long long hi, long long *v)
{
	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
		return false;
	*v = strtoll(s, NULL, 10);
	return *v >= lo && *v <= hi;
}

static int
parse_args(int argc, char **argv, int from, options *o)
{
	for (int i = from; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		long long x;
		if (strcmp(a, "--embed-limit") == 0) {
			if (!parse_count(v, 0, 1LL << 50, &x))
				return bad_usage("%s needs a byte count", a);
			o->embed_limit = x;
			i++;
		} else if (strcmp(a, "--max-chunk") == 0) {
			if (!parse_count(v, 1, 1LL << 20, &x))
				return bad_usage("%s needs a token count of at least 1", a);
			o->max_chunk = x;
			i++;
		} else if (strcmp(a, "--few-tokens") == 0) {
			_Static_assert(MKC_FEW_ROWS == 64, "the help and this sentence say 64");
			if (!parse_count(v, 0, MKC_FEW_ROWS, &x))
				return bad_usage("%s needs a token count from 0 to 64", a);
			o->few_tokens = x;
			i++;
		} else if (strcmp(a, "--max-seqs") == 0 || strcmp(a, "--page-size") == 0 ||
			   strcmp(a, "--cache-pages") == 0) {
			if (!parse_count(v, 1, a[2] == 'm' ? 1 << 16 : (1LL << 31) - 1, &x))
				return bad_usage(a[2] == 'm' ? "%s needs a sequence count from 1 to 65536"
					       : a[2] == 'p' ? "%s needs a position count of at least 1"
							     : "%s needs a page count of at least 1", a);
			*(a[2] == 'm' ? &o->max_seqs : a[2] == 'p' ? &o->page_size : &o->cache_pages) = x;
			i++;
		} else if (strcmp(a, "--max-seq") == 0) {
			if (!parse_count(v, 1, 1LL << 40, &x))
				return bad_usage("%s needs a position count of at least 1", a);
			o->max_seq = x;
			i++;
		} else if (strcmp(a, "--kv-io") == 0) {
			o->kv_io = true;
		} else if (strcmp(a, "--all-logits") == 0) {
			o->all_logits = true;
		} else if (strcmp(a, "--profile") == 0) {
			o->profile_steps = o->profile_steps ? o->profile_steps : 8;
		} else if (strcmp(a, "--profile-steps") == 0) {
			if (!parse_count(v, 1, 4096, &x))
				return bad_usage("%s needs a step count from 1 to 4096", a);
			o->profile_steps = (int)x;
			i++;
		} else if (strcmp(a, "--workers") == 0 || strcmp(a, "--max-dim") == 0) {
			bool w = a[2] == 'w';
			if (!parse_count(v, 1, w ? 4096 : 1LL << 40, &x))
				return bad_usage(w ? "%s needs a worker count from 1 to 4096"
						   : "%s needs a positive size", a);
			if (w)
				o->workers = (int)x;
			else
				o->max_dim = x;
			i++;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--target") == 0 ||
			   strcmp(a, "--name") == 0 || strcmp(a, "--arch") == 0) {
			if (!v)
				return bad_usage("%s needs a value", a);
			i++;
			if (a[1] == 'o')
				o->out = v;
			else if (a[2] == 't')
				o->target = v;
			else if (a[2] == 'a')
				o->arch = v;
			else
				o->name = v;
		} else if (strcmp(a, "--weights") == 0) {
			if (i + 1 >= argc || (strcmp(argv[i + 1], "bf16") && strcmp(argv[i + 1], "f32")))
				return bad_usage("%s takes f32 or bf16", a);
			o->bf16 = !strcmp(argv[++i], "bf16");
		} else if (strcmp(a, "--kv") == 0) {
			if (i + 1 >= argc || (strcmp(argv[i + 1], "bf16") && strcmp(argv[i + 1], "f32")))
				return bad_usage("%s takes f32 or bf16", a);
			o->kv_dtype = !strcmp(argv[++i], "bf16") ? MKC_DT_BFLOAT16 : MKC_DT_FLOAT;
		} else if (strcmp(a, "--const") == 0) {
			if (i + 1 >= argc || !strchr(argv[i + 1], '=') || o->nconsts == 64)
				return bad_usage("%s needs NAME=FILE.pb", a);
			o->consts[o->nconsts++] = argv[++i];
		} else if (strcmp(a, "--dim") == 0) {
			if (i + 1 >= argc || !strchr(argv[i + 1], '=') || o->ndims == 64)
				return bad_usage("%s needs NAME=N", a);
			o->dims[o->ndims++] = argv[++i];
		} else if (strcmp(a, "--dump-format") == 0) {
			if (i + 1 >= argc || (strcmp(argv[i + 1], "text") && strcmp(argv[i + 1], "dot")))
				return bad_usage("%s takes text or dot", a);
			o->dump_dot = !strcmp(argv[++i], "dot");
		} else if (strncmp(a, "--dump-after=", 13) == 0) {
			o->dump_after = a + 13;
			if (!mkc_pass_known(o->dump_after))
				return bad_usage("--dump-after: no pass is called '%s' (see --help)",
						 o->dump_after);
		} else if (strcmp(a, "--no-reuse") == 0) {
			o->no_reuse = true;
		} else if (strcmp(a, "--no-fuse") == 0) {
			o->no_fuse = true;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			o->verbose = 1;
		} else if (a[0] == '-' && a[1]) {
			return bad_usage("unknown option '%s'", a);
		} else if (o->model) {
			return bad_usage("one model at a time ('%s' is a second)", a);
		} else {
			o->model = a;
		}
	}
	if (!o->model)
		return bad_usage("%s", "no model given");
	if (o->target && !mkc_target_find(o->target))
		return bad_usage("--target must be cuda, hip or c, not '%s'", o->target);
	const char *why = o->name ? mkc_emit_name_problem(o->name) : NULL;
	if (why) {
		char fmt[256];
		snprintf(fmt, sizeof fmt, "--name '%%s' %s", why);
		return bad_usage(fmt, o->name);
	}
	if (o->kv_io && o->kv_dtype == MKC_DT_BFLOAT16)
		return bad_usage("%s", "--kv bf16 is the type of the caches the model keeps as state, "
				 "and --kv-io keeps none (past and present stay float32 inputs and "
				 "outputs)");
	if ((o->page_size || o->cache_pages) && !o->max_seqs)
		return bad_usage("%s", "--page-size and --cache-pages size the pages of --max-seqs's "
				 "caches; without --max-seqs the caches are not paged");
	if (o->out && !o->target) {
		const mkc_target *t = mkc_target_of_path(o->out);
		if (!t)
			return bad_usage("cannot tell the target from '%s'; name it with --target", o->out);
		o->target = t->name;
	}
	if (o->arch) {
		const mkc_target *t = o->target ? mkc_target_find(o->target) : NULL;
		if (!t)
			return bad_usage("%s needs a hip output (-o FILE.hip)", "--arch");
		if (!mkc_target_has_arch(t, NULL))
			return bad_usage("--arch is for the hip target (gfx942 or gfx90a), not for '%s'",
					 t->name);
		if (!mkc_target_has_arch(t, o->arch))
			return bad_usage("--arch must be gfx942 or gfx90a, not '%s'", o->arch);
	}
	return 0;
}

static void
report(mkc_ctx *c)
{
	if (c->errors)
		fputs(c->errors, stderr);
}

/* --const NAME=FILE.pb: graph inputs that become constants; --dim NAME=N. */
static int
bind_consts(mkc_graph *g, const options *o)
{
	for (int i = 0; i < o->nconsts; i++) {
		const char *eq = strchr(o->consts[i], '=');
		char *name = mkc_arena_strndup(g->ctx->arena, o->consts[i], (size_t)(eq - o->consts[i]));
		mkc_tensor *v = mkc_arena_alloc(g->ctx->arena, sizeof *v);
		if (mkc_onnx_read_tensor(g->ctx, eq + 1, v) != 0 ||
		    mkc_graph_bind_input(g, name, v) != 0)
			return -1;
	}
	return mkc_fix_dims(g, o->dims, o->ndims);
}

/* the model loaded again for a twin plan (mkc_run_twins) */
typedef struct {
	mkc_ctx *c;
	const options *o;
	bool all_logits;
} reload;

static mkc_graph *
load_again(void *user)
{
	const reload *r = user;
	mkc_graph *g = mkc_load_model_logits(r->c, r->o->model, r->all_logits);
	return g && bind_consts(g, r->o) == 0 ? g : NULL;
}

static int
compile(const options *o)
{
	mkc_ctx *c = mkc_ctx_create();
	c->verbose = o->verbose;
	int rc = 1;
	/* a step of several sequences: every token's logits */
	const bool all_logits = o->all_logits || o->max_seqs > 0;
	mkc_graph *g = mkc_load_model_logits(c, o->model, all_logits);
	if (g && bind_consts(g, o) != 0)
		goto out;
	mkc_plan *p = NULL;
	/* without -o or --target, the plan and the check are the c target's */
	const mkc_target *tt = mkc_target_find(o->target ? o->target : "c");
	mkc_driver_options d = {
		.workers = o->workers,
		.dump_after = o->dump_after,
		.dump_dot = o->dump_dot,
		.bf16_weights = o->bf16,
		.max_dim = o->max_dim,
		.no_reuse = o->no_reuse,
		.max_seq = o->max_seq,
		.kv_io = o->kv_io,
		.no_fuse = o->no_fuse,
		.wide_target = tt->warp > 0,
		.tc_products = tt->mma,
		.few_tiles = tt->few_tiles,
		.tc_attention = tt->mma && tt->chunk_attn,
		.tma_products = tt->tma,
		.kv_dtype = (mkc_dtype)o->kv_dtype,
		.max_chunk = o->max_chunk,
		.max_seqs = o->max_seqs,
		.page_size = o->page_size,
		.cache_pages = o->cache_pages,
		.few_tokens = o->few_tokens,
	};
	if (!g || mkc_run_passes(g, &d, &p) != 0)
		goto out;
	/* a chunked file's steps of few tokens and of one: the model compiled again */
	mkc_plan *plans[MKC_MAX_PLANS] = {p};
	int nplans = 1;
	if (o->out) {
		reload r = {c, o, all_logits};
		int n = mkc_run_twins(g, load_again, &r, &d, plans + 1);
		if (n < 0)
			goto out;
		nplans += n;
	}
	if (o->out) {
		const mkc_target *t = mkc_target_find(o->target);
		if (t->unwritten) {
			mkc_error(c, "%s: %s; the passes succeeded; nothing was written to %s", o->model,
				  t->unwritten, o->out);
			goto out;
		}
		mkc_emit_options eo = {
			.out_path = o->out,
			.prefix = o->name,
			.command_line = o->command_line,
			.max_dim = o->max_dim ? o->max_dim : 4096,
			.embed_limit = o->embed_limit,
			.profile_steps = o->profile_steps,
			.arch = o->arch,
		};
		if (p->arena_bytes > (1LL << 33))
			fprintf(stderr, "mkc: %s: warning: the emitted code takes a %.0f GiB arena, sized for "
				"every symbolic dimension at %lld (--max-dim; --dim NAME=N fixes one)\n",
				mkc_cstr(c->arena, o->model, false), (double)p->arena_bytes / (1 << 30),
				(long long)eo.max_dim);
		if (mkc_emit(plans, nplans, t, &eo) != 0)
			goto out;
		mkc_progress(c, "wrote %s", o->out);
		rc = 0;
		goto out;
	}
	/* no output: the target's emitter still sees every node, into a scratch folder */
	const mkc_target *t = tt;
	if (!t->unwritten) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/mkc_check_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir)) {
			mkc_error(c, "%s: cannot make a scratch folder in %s", o->model, dir);
			goto out;
		}
		char *file = mkc_arena_printf(c->arena, "%s/check.%s", dir, t->ext);
		mkc_emit_options eo = {.out_path = file, .prefix = "checked_model", .max_dim = 4096,
				       .embed_limit = o->embed_limit};
		int erc = mkc_emit(&p, 1, t, &eo);
		unlink(file);
		unlink(mkc_arena_printf(c->arena, "%s/check.h", dir));
		rmdir(dir);
		if (erc != 0)
			goto out;
	}
	fprintf(stderr, "mkc: %s: %d nodes, %d tasks, %d events, %lld edges on %d workers; "
		"schedule verified; the %s target takes every node; no output requested\n",
		mkc_cstr(c->arena, o->model, false), g->nodes.n, p->tasks.n, p->events.n,
		(long long)p->nedges, p->tp.nworkers, t->name);
	rc = 0;
out:
	report(c);
	mkc_ctx_destroy(c);
	return rc;
}

/* mkc info. */

static void
print_tensors(const mkc_graph *g, const char *title, const mkc_vec *v)
{
	printf("%s (%d)\n", title, v->n);
	for (int i = 0; i < v->n; i++) {
		const mkc_tensor *t = v->v[i];
		char b[512];
		printf("  %-32s %-8s %s\n", t->name, mkc_dtype_name(t->dtype),
		       mkc_shape_str(g, t, b, sizeof b));
	}
}

static int
cmp_count(const void *a, const void *b)
{
	const int *x = a, *y = b;
	return y[1] != x[1] ? y[1] - x[1] : x[0] - y[0];
}

static void
print_ops(const mkc_graph *g)
{
	/* histogram keyed by the first node of each op_type */
	int (*hist)[2] = mkc_arena_alloc(g->ctx->arena, (size_t)(g->nodes.n + 1) * sizeof *hist);
	int nh = 0, unsupported = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		int k = 0;
		while (k < nh && (strcmp(MKC_NODE(g, hist[k][0])->op_type, n->op_type) ||
				  strcmp(MKC_NODE(g, hist[k][0])->domain, n->domain)))
			k++;
		if (k == nh) {
			hist[nh][0] = i;
			hist[nh++][1] = 0;
		}
		hist[k][1]++;
	}
	qsort(hist, (size_t)nh, sizeof *hist, cmp_count);
	printf("ops (%d kinds)\n", nh);
	for (int k = 0; k < nh; k++) {
		const mkc_node *n = MKC_NODE(g, hist[k][0]);
		bool ok = n->op != MKC_OP_UNKNOWN;
		unsupported += !ok;
		char name[160];
		snprintf(name, sizeof name, "%s%s%s", n->domain, *n->domain ? "." : "", n->op_type);
		printf("  %-32s %5d  %s\n", name, hist[k][1], ok ? "supported" : "NOT SUPPORTED");
	}
	if (unsupported) {
		printf("unsupported nodes\n");
		for (int i = 0; i < g->nodes.n; i++)
			if (MKC_NODE(g, i)->op == MKC_OP_UNKNOWN)
				printf("  %s (%s)\n", MKC_NODE(g, i)->name, MKC_NODE(g, i)->op_type);
	}
}

static void
print_summary(const mkc_graph *g)
{
	printf("model      %s\n", g->path);
	printf("ir_version %lld, producer %s\n", (long long)g->ir_version, g->producer);
	printf("opsets    ");
	for (int i = 0; i < g->nopsets; i++)
		printf(" %s %lld", *g->opsets[i].domain ? g->opsets[i].domain : "ai.onnx",
		       (long long)g->opsets[i].version);
	size_t inline_bytes = 0, ext_bytes = 0;
	int nweights = 0;
	for (int i = 0; i < g->tensors.n; i++) {
		const mkc_tensor *t = MKC_TENSOR(g, i);
		if (t->kind != MKC_TK_WEIGHT || t->producer)
			continue;
		nweights++;
		*(t->ext_file ? &ext_bytes : &inline_bytes) += t->nbytes;
	}
	printf("\nnodes      %d\n", g->nodes.n);
	printf("weights    %d (%zu bytes inline, %zu bytes external)\n", nweights,
	       inline_bytes, ext_bytes);
	printf("symbols   ");
	for (int i = 0; i < g->syms.n; i++)
		printf(" %s", MKC_SYM(g, i));
	printf(g->syms.n ? "\n" : " (none)\n");
}

static int
info(int argc, char **argv)
{
	options o = {0};
	int rc = parse_args(argc, argv, 2, &o);
	if (rc)
		return rc;
	mkc_ctx *c = mkc_ctx_create();
	c->verbose = o.verbose;
	mkc_graph *g = mkc_load_model(c, o.model);
	if (!g) {
		report(c);
		mkc_ctx_destroy(c);
		return 1;
	}
	print_summary(g);
	print_tensors(g, "inputs", &g->inputs);
	/* output shapes come from inference; a failure is reported, not fatal */
	int inferred = mkc_pass_infer(g);
	print_tensors(g, inferred == 0 ? "outputs" : "outputs (inference failed)", &g->outputs);
	print_ops(g);
	fflush(stdout);
	report(c);
	mkc_ctx_destroy(c);
	return inferred == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return bad_usage("%s", "no model given");
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("mkc %s\n", MKC_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "info") == 0)
		return info(argc, argv);
	if (strcmp(argv[1], "test") == 0)
		return mkc_test_main(argc, argv);
	options o = {0};
	o.embed_limit = 4096;
	o.few_tokens = -1;
	int rc = parse_args(argc, argv, 1, &o);
	if (rc)
		return rc;
	/* the command line goes into the emitted file's provenance header */
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *cmd = calloc(1, len);
	for (int i = 0; cmd && i < argc; i++) {
		strcat(cmd, argv[i]);
		if (i + 1 < argc)
			strcat(cmd, " ");
	}
	o.command_line = cmd;
	rc = compile(&o);
	free(cmd);
	return rc;
}
