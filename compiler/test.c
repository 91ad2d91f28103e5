/*
 * test.c - `mkc test DIR...`: golden tests in ONNX backend-test layout.
 *
 * For each DIR (model.onnx plus test_data_set_N/input_K.pb, output_K.pb):
 * compile the model for the target (C, or CUDA on a GPU machine) into a
 * scratch folder, write a small
 * harness that feeds the inputs (raw files written here), poisons the
 * outputs with NaN bytes so that unwritten elements show, runs several
 * steps and writes the outputs of each; build it with cc (-Wall -Wextra
 * -Werror, optionally ThreadSanitizer, plus $MKC_TEST_CFLAGS); run it; then
 * compare every output with the reference: relative L2 error
 * ||out - ref|| / ||ref|| within the tolerance for floats (an infinity or
 * a NaN must be matched exactly, and a non-finite error fails), exact for
 * integers, and every step bit-identical to the first (the reference is the
 * same every step, so a race shows up as a moving result). One line per
 * case, then "N passed, N failed"; the exit status is 0 only if all passed.
 *
 * A model that keeps KV caches gets them poisoned too: before every step
 * every position of every cache is filled with NaN bytes through the public
 * cache_load (so nothing in the emitted code changes for testing), then the
 * test data's past is loaded over the first past_len positions. A step that
 * misses its cache append leaves NaN where the present reference has
 * numbers. Between compared steps runs a decoy step on a different past
 * (every element's sign flipped), so that no buffer of the model holds the
 * right values from the step before: a write that is skipped on a later
 * step fails that step.
 *
 * Symbolic dimensions get their values from the input files' shapes.
 */
#include "driver.h"
#include "frontend.h"
#include "numeric.h"
#include "../backends/core/emit.h"
#include "../runtime/limits.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
	const char *target;
	int threads, workers, steps;
	unsigned shuffle;
	double tol;
	bool tsan, keep, verbose;
	int drop_wait;   /* testing mkc itself: a task whose wait is removed */
	bool bind_consts;
	bool bf16;
	long long embed_limit;
	int stall_event;   /* testing mkc itself: an event whose threshold is raised */
	double timeout;    /* the watchdog, seconds */
	bool no_reuse;
	bool no_fuse;      /* mkc --no-fuse */
	bool kv_io;        /* past/present as inputs and outputs, not a cache */
	int kv_dtype;      /* mkc --kv: MKC_DT_BFLOAT16, or float32 (MKC_DT_FLOAT or 0) */
	int64_t max_seq;
	int64_t max_dim;
	const char *dims[64];
	int ndims;
	int64_t max_chunk; /* mkc --max-chunk */
	int64_t few_tokens; /* mkc --few-tokens (-1: the target's default) */
	int64_t max_seqs, page_size;   /* mkc --max-seqs, --page-size: the steps are sequence 0's */
	const char *profile;   /* --profile FILE: the last step's timeline */
	const char *edit;      /* testing the tests: a command that breaks the emitted file */
} test_options;

static int
run_command(const char *cmd, const char *log)
{
	char *full = malloc(strlen(cmd) + strlen(log) + 16);
	if (!full)
		return -1;
	sprintf(full, "%s >%s 2>&1", cmd, log);
	int st = system(full);
	free(full);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int
write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = n ? fwrite(data, 1, n, f) : 0;
	return fclose(f) == 0 && w == n ? 0 : -1;
}

static void *
read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
		free(p);
		p = NULL;
	}
	if (p)
		((char *)p)[len] = 0;   /* text files are read as strings */
	fclose(f);
	*n = (size_t)len;
	return p;
}

/*
 * Symbol values from the inputs' real shapes (sym[] holds -1 or the caches'
 * counts). A dimension of two symbols (past_len + seq_len) gives the second
 * once another input gave the first, so the inputs are read until no new
 * value comes. one_token: compiled without --max-chunk (a step's tokens
 * fixed at 1), which a case of several tokens is told.
 */
static int
bind_syms(mkc_graph *g, mkc_tensor *in, int nin, int64_t *sym, bool one_token, char *why,
	  size_t wn)
{
	for (int i = 0; i < nin; i++)
		if (in[i].rank != MKC_INPUT(g, i)->rank) {
			snprintf(why, wn, "input %d ('%s') has rank %d, the model says %d", i,
				 MKC_INPUT(g, i)->name, in[i].rank, MKC_INPUT(g, i)->rank);
			return -1;
		}
	for (bool more = true; more;) {
		more = false;
		for (int i = 0; i < nin; i++) {
			const mkc_tensor *decl = MKC_INPUT(g, i);
			for (int d = 0; d < decl->rank; d++) {
				mkc_dim x = decl->shape[d];
				int64_t rest = in[i].shape[d].c - x.c;
				int open = -1, nopen = 0;
				for (int k = 0; k < MKC_DIM_TERMS && x.k[k]; k++)
					if (sym[x.sym[k]] < 0)
						open = k, nopen++;
					else
						rest -= x.k[k] * sym[x.sym[k]];
				if (nopen > 1)
					continue;
				if (nopen == 0 && rest == 0)
					continue;
				char b[96];
				if (nopen == 0 || rest % x.k[open] || rest / x.k[open] < 0) {
					const bool chunk = one_token && nopen == 0 && x.c == 1 &&
							   in[i].shape[d].c > 1;
					snprintf(why, wn, "input '%s' dim %d is %lld, the model says %s%s",
						 decl->name, d, (long long)in[i].shape[d].c,
						 mkc_dim_str(g, x, b, sizeof b),
						 chunk ? " (compiled for steps of one token: --max-chunk N "
							 "takes steps of up to N)"
						       : "");
					return -1;
				}
				sym[x.sym[open]] = rest / x.k[open];
				more = true;
			}
		}
	}
	for (int s = 0; s < g->syms.n; s++)
		if (sym[s] < 0) {
			snprintf(why, wn, "no input gives a value for %s", MKC_SYM(g, s));
			return -1;
		}
	return 0;
}

static int64_t
numel_at(const mkc_tensor *t, const int64_t *sym)
{
	int64_t n = 1, len;
	for (int d = 0; d < t->rank; d++)
		n *= mkc_dim_value(t->shape[d], sym, &len) ? len : 0;
	return n;
}

/* Bytes of t as the model keeps it (a bf16 cache's 2 an element). */
static size_t
bytes_at(const mkc_tensor *t, const int64_t *sym)
{
	return (size_t)numel_at(t, sym) * mkc_dtype_size(t->storage ? t->storage : t->dtype);
}

/* The state that replaced graph input or output t, or -1. */
static int
state_of(const mkc_graph *g, const mkc_tensor *t)
{
	for (int i = 0; i < g->states.n; i++)
		if (MKC_STATE(g, i)->cache == t || !strcmp(MKC_STATE(g, i)->past, t->name))
			return i;
	return -1;
}

/* Bytes of one position of cache c (everything but the cache axis). */
static size_t
cache_position_bytes(const mkc_graph *g, int c, const int64_t *sym)
{
	const mkc_state *st = MKC_STATE(g, c);
	int64_t nnew;
	bool ok = mkc_dim_value(st->nnew, sym, &nnew);
	MKC_ASSERT(ok);
	return bytes_at(st->cache, sym) / (size_t)(sym[st->sym] + nnew);
}

/* Bytes of cache c's positions in use, dense. */
static size_t
cache_bytes(const mkc_graph *g, int c, const int64_t *sym)
{
	return cache_position_bytes(g, c, sym) * (size_t)sym[MKC_STATE(g, c)->sym];
}

/*
 * The harness: before every step it poisons each KV cache (every position
 * NaN, through cache_load) and loads the test data's past over it (the
 * model appends in place, so a repeated step must start from the same
 * past); before every step but the first it runs a decoy step on the
 * decoy past, whose results nobody reads. It writes every output and every
 * cache (read back with its new positions) of each compared step to files.
 */
static int
write_harness(const char *dir, mkc_graph *g, const int64_t *sym, const test_options *o,
	      const char *model_path, const mkc_target *t)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/main.%s", dir, t->ext);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int nc = g->states.n;
	fprintf(f, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"model.h\"\n%s\n"
		"static __attribute__((unused)) void *\nload(const char *p, size_t n)\n{\n\tvoid *b = malloc(n ? n : 1);\n"
		"\tFILE *f = fopen(p, \"rb\");\n\tif (!b || !f || fread(b, 1, n, f) != n) {\n"
		"\t\tfprintf(stderr, \"cannot read %%s\\n\", p);\n\t\texit(3);\n\t}\n\tfclose(f);\n"
		"\tvoid *d = DEV_ALLOC(n);\n\tTO_DEV(d, b, n);\n\tfree(b);\n\treturn d;\n}\n\n"
		"static __attribute__((unused)) int\nsave(const char *dir, const char *what, int i, int s, const void *d, size_t n)\n{\n"
		"\tchar p[4200];\n\tvoid *h = malloc(n + 1);\n\tsnprintf(p, sizeof p, \"%%s/%%s%%d.%%d.bin\", dir, what, i, s);\n"
		"\tTO_HOST(h, d, n);\n\tFILE *f = fopen(p, \"wb\");\n\tint bad = !h || !f || fwrite(h, 1, n, f) != n;\n"
		"\tif (f)\n\t\tfclose(f);\n\tfree(h);\n\treturn bad;\n}\n\n"
		"/* Every position of cache c NaN, then len positions of past. */\n"
		"static __attribute__((unused)) int\nfill(model *m, int c, const void *poison, const void *past, int64_t len)\n{\n"
		"\tif (!model_cache_load(m, c, poison, model_cache_capacity()) &&\n"
		"\t    !model_cache_load(m, c, past, len))\n\t\treturn 0;\n"
		"\tfprintf(stderr, \"cache %%d: %%s\\n\", c, model_last_error(m));\n\treturn 1;\n}\n\n"
		"int\nmain(void)\n{\n\tmodel *m;\n\tmodel_options opt = {%d, %uu, %g};\n"
		"\tif (model_create(&m, &opt) || model_load_weights(m, \"%s\")) {\n"
		"\t\tfprintf(stderr, \"%%s\\n\", model_last_error(m));\n\t\treturn 2;\n\t}\n",
		t->test_buffers, o->threads, o->shuffle, o->timeout, model_path);
	fprintf(f, "\tconst int64_t dims[%d] = {", g->syms.n + 1);
	for (int s = 0; s < g->syms.n; s++)
		fprintf(f, "%lld, ", (long long)sym[s]);
	fprintf(f, "0};\n\tconst void *in[%d];\n\tvoid *out[%d], *cache[%d], *past[%d], *decoy[%d], *poison[%d];\n"
		"\t(void)cache, (void)past, (void)decoy, (void)poison;\n",
		g->inputs.n + 1, g->outputs.n + 1, nc + 1, nc + 1, nc + 1, nc + 1);
	for (int i = 0; i < g->inputs.n; i++)
		fprintf(f, "\tin[%d] = load(\"%s/in%d.bin\", %zu);\n", i, dir, i,
			bytes_at(MKC_INPUT(g, i), sym));
	for (int i = 0; i < g->outputs.n; i++)
		fprintf(f, "\tout[%d] = DEV_ALLOC(%zu);\n", i, bytes_at(MKC_OUTPUT(g, i), sym) + 1);
	for (int c = 0; c < nc; c++) {
		size_t pos = cache_position_bytes(g, c, sym);
		fprintf(f, "\tpast[%d] = load(\"%s/past%d.bin\", %zu);\n"
			"\tdecoy[%d] = load(\"%s/decoy%d.bin\", %zu);\n"
			"\tpoison[%d] = DEV_ALLOC(%zu * (size_t)model_cache_capacity());\n"
			"\tPOISON(poison[%d], %zu * (size_t)model_cache_capacity());\n"
			"\tcache[%d] = DEV_ALLOC(%zu);\n",
			c, dir, c, cache_bytes(g, c, sym), c, dir, c, cache_bytes(g, c, sym), c, pos, c,
			pos, c, bytes_at(MKC_STATE(g, c)->cache, sym) + 1);
	}
	fprintf(f, "\tfor (int s = 0; s < %d; s++) {\n", o->steps);
	if (nc) {
		/* the decoy: its results are overwritten or never read */
		fputs("\t\tif (s > 0) {\n", f);
		for (int c = 0; c < nc; c++)
			fprintf(f, "\t\t\tif (fill(m, %d, poison[%d], decoy[%d], %lld))\n\t\t\t\treturn 2;\n", c, c,
				c, (long long)sym[MKC_STATE(g, c)->sym]);
		fputs("\t\t\tif (model_step(m, in, out, dims)) {\n"
		      "\t\t\t\tfprintf(stderr, \"decoy step %d: %s\\n\", s, model_last_error(m));\n"
		      "\t\t\t\treturn 2;\n\t\t\t}\n\t\t}\n", f);
	}
	for (int c = 0; c < nc; c++)
		fprintf(f, "\t\tif (fill(m, %d, poison[%d], past[%d], %lld))\n\t\t\treturn 2;\n"
			"\t\tPOISON(cache[%d], %zu);\n", c, c, c, (long long)sym[MKC_STATE(g, c)->sym], c,
			bytes_at(MKC_STATE(g, c)->cache, sym));
	for (int i = 0; i < g->outputs.n; i++)
		if (bytes_at(MKC_OUTPUT(g, i), sym))
			fprintf(f, "\t\tPOISON(out[%d], %zu);   /* NaN where unwritten */\n", i,
				bytes_at(MKC_OUTPUT(g, i), sym));
	fputs("\t\tif (model_step(m, in, out, dims)) {\n\t\t\tfprintf(stderr, \"step %d: %s\\n\", s, model_last_error(m));\n"
	      "\t\t\treturn 2;\n\t\t}\n", f);
	for (int i = 0; i < g->outputs.n; i++)
		fprintf(f, "\t\tif (save(\"%s\", \"out\", %d, s, out[%d], %zu))\n\t\t\treturn 3;\n", dir, i, i,
			bytes_at(MKC_OUTPUT(g, i), sym));
	for (int c = 0; c < nc; c++)
		fprintf(f, "\t\tif (model_cache_read(m, %d, cache[%d]) || save(\"%s\", \"cache\", %d, s, cache[%d], %zu))\n"
			"\t\t\treturn 3;\n", c, c, dir, c, c, bytes_at(MKC_STATE(g, c)->cache, sym));
	fputs("\t}\n", f);
	if (o->profile)
		fprintf(f, "\tif (model_profile_write(m, \"%s\")) {\n\t\tfprintf(stderr, \"%%s\\n\", "
			"model_last_error(m));\n\t\treturn 2;\n\t}\n", mkc_cstr(g->ctx->arena, o->profile, false));
	/* everything freed, so that LeakSanitizer (MKC_TEST_CFLAGS) reports only the model's leaks */
	fputs("\tmodel_destroy(m);\n", f);
	fprintf(f, "\tfor (int i = 0; i < %d; i++)\n\t\tDEV_FREE((void *)in[i]);\n"
		"\tfor (int i = 0; i < %d; i++)\n\t\tDEV_FREE(out[i]);\n"
		"\tfor (int c = 0; c < %d; c++) {\n\t\tDEV_FREE(past[c]);\n\t\tDEV_FREE(decoy[c]);\n"
		"\t\tDEV_FREE(poison[c]);\n\t\tDEV_FREE(cache[c]);\n\t}\n\treturn 0;\n}\n",
		g->inputs.n, g->outputs.n, nc);
	return fclose(f);
}

/*
 * Compares one output, of type gt, with its reference; fills *err with the
 * relative error. gt is the reference's type but for a cache kept in
 * another (a float16 model's float32 cache: passes/half.c).
 */
static int
compare(const mkc_tensor *ref, const void *got, mkc_dtype gt, size_t nbytes, double tol,
	double *err, char *why, size_t wn)
{
	int64_t n = (int64_t)(ref->nbytes / (mkc_dtype_size(ref->dtype) ? mkc_dtype_size(ref->dtype) : 1));
	if (nbytes != (size_t)n * mkc_dtype_size(gt)) {
		snprintf(why, wn, "'%s' has %zu bytes, the reference %zu", ref->name, nbytes,
			 (size_t)n * mkc_dtype_size(gt));
		return -1;
	}
	if (!mkc_dtype_is_float(ref->dtype)) {
		*err = nbytes && memcmp(got, ref->data, nbytes) ? 1 : 0;
		if (*err)
			snprintf(why, wn, "'%s' differs from the reference", ref->name);
		return *err ? -1 : 0;
	}
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		double a = mkc_load_double(gt, got, i), b = mkc_load_double(ref->dtype, ref->data, i);
		if (isnan(a) != isnan(b)) {
			snprintf(why, wn, "'%s'[%lld] is %g, the reference %g (unwritten?)", ref->name,
				 (long long)i, a, b);
			return -1;
		}
		if ((isinf(a) || isinf(b)) && a != b) {
			/* inf - inf and x / inf are NaN, and NaN > tol is false: compare exactly */
			snprintf(why, wn, "'%s'[%lld] is %g, the reference %g", ref->name, (long long)i, a,
				 b);
			return -1;
		}
		if (isfinite(a)) {
			num += (a - b) * (a - b);
			den += b * b;
		}
	}
	*err = den > 0 ? sqrt(num / den) : sqrt(num);
	if (!(*err <= tol)) {   /* a NaN or infinite error fails too */
		snprintf(why, wn, "'%s': relative error %.3g exceeds %.3g", ref->name, *err, tol);
		return -1;
	}
	return 0;
}

/*
 * A past as a cache kept in another type holds it (bf16: rounded to
 * nearest even): v's data replaced by a copy in arena a.
 */
static void
as_stored(mkc_arena *a, mkc_tensor *v, mkc_dtype storage)
{
	int64_t n = (int64_t)(v->nbytes / mkc_dtype_size(v->dtype));
	void *d = mkc_arena_alloc(a, (size_t)n * mkc_dtype_size(storage) + 1);
	for (int64_t i = 0; i < n; i++)
		mkc_store_double(storage, d, i, mkc_load_double(v->dtype, v->data, i));
	v->data = d;
	v->dtype = storage;
	v->nbytes = (size_t)n * mkc_dtype_size(storage);
}

/* A cache read back in bf16 as float32, for comparing with the reference. */
static void *
widened(void *got, size_t *n)
{
	size_t k = *n / 2;
	float *w = malloc(k * sizeof *w + 1);
	if (w)
		for (size_t i = 0; i < k; i++)
			w[i] = mkc_bf16_to_float(((const uint16_t *)got)[i]);
	free(got);
	*n = k * sizeof *w;
	return w;
}

/*
 * The decoy past of cache c: the past with every element's sign flipped
 * (the top bit of each little-endian element), different wherever the past
 * is not zero, and as finite as the past.
 */
static int
write_decoy(const char *work, int c, const mkc_tensor *past)
{
	size_t es = mkc_dtype_size(past->dtype);
	unsigned char *d = malloc(past->nbytes + 1);
	if (!d || !es)
		return free(d), -1;
	if (past->nbytes)   /* a first step's past is empty, and its data NULL */
		memcpy(d, past->data, past->nbytes);
	for (size_t i = es - 1; i < past->nbytes; i += es)
		d[i] ^= 0x80;
	char path[4096];
	snprintf(path, sizeof path, "%s/decoy%d.bin", work, c);
	int rc = write_file(path, d, past->nbytes);
	free(d);
	return rc;
}

/*
 * Whether constant folding computed every output, so that the emitted code
 * only writes literals: such a pass tests the folder, not the tile bodies.
 */
static bool
all_folded(const mkc_graph *g, mkc_tensor **outputs, int noutputs)
{
	for (int i = 0; i < noutputs; i++)
		if (state_of(g, outputs[i]) >= 0 || (!outputs[i]->data && !outputs[i]->symval))
			return false;
	return noutputs > 0;
}

/*
 * Flags for cc beyond the warnings: ThreadSanitizer for --tsan, else
 * $MKC_TEST_CFLAGS (make sanitize puts AddressSanitizer and UBSan there, so
 * the emitted code runs under them too; they cannot join ThreadSanitizer).
 */
static const char *
extra_cflags(const test_options *o)
{
	if (o->tsan)
		return "-fsanitize=thread";
	return getenv("MKC_TEST_CFLAGS") ? getenv("MKC_TEST_CFLAGS") : "";
}

/*
 * The target's build command with $W the scratch folder and $F the extra
 * flags; the shell expands the rest (${CC:-cc}). -1 if it does not fit.
 */
static int
build_command(const char *tmpl, const char *work, const char *flags, char *cmd, size_t n)
{
	size_t k = 0;
	for (const char *s = tmpl; *s; s++) {
		const char *v = s[0] == '$' && s[1] == 'W' ? work : s[0] == '$' && s[1] == 'F' ? flags : NULL;
		size_t len = v ? strlen(v) : 1;
		if (k + len >= n)
			return -1;
		memcpy(cmd + k, v ? v : s, len);
		k += len;
		s += v != NULL;
	}
	cmd[k] = 0;
	return 0;
}

/* One test_data_set folder; prints its line. 0 pass, -1 fail. */
static int
run_case(mkc_ctx *c, mkc_graph *g, mkc_tensor **inputs, int ninputs, mkc_tensor **outputs,
	 int noutputs, const char *model, const char *casedir, const char *work,
	 const test_options *o)
{
	char why[1024] = "", path[4096];
	int nin = g->inputs.n;
	mkc_tensor *in = mkc_arena_alloc(c->arena, (size_t)(nin + 1) * sizeof *in);
	mkc_tensor *ref = mkc_arena_alloc(c->arena, (size_t)(noutputs + 1) * sizeof *ref);
	int64_t *sym = mkc_arena_alloc(c->arena, (size_t)(g->syms.n + 1) * sizeof *sym);
	double worst = 0;
	int rc = -1;
	for (int s = 0; s < g->syms.n; s++)
		sym[s] = -1;
	for (int k = 0, i = 0; k < ninputs; k++) {
		mkc_tensor v;
		snprintf(path, sizeof path, "%s/input_%d.pb", casedir, k);
		if (mkc_onnx_read_tensor(c, path, &v) != 0) {
			snprintf(why, sizeof why, "%s", c->errors ? c->errors : "cannot read an input");
			goto done;
		}
		if (inputs[k]->kind == MKC_TK_WEIGHT) {
			/* bound at compile time: this case must hold the same value */
			if (v.nbytes != inputs[k]->nbytes ||
			    (v.nbytes && memcmp(v.data, inputs[k]->data, v.nbytes))) {
				snprintf(why, sizeof why, "input '%s' differs from the value bound at compile time",
					 inputs[k]->name);
				goto done;
			}
			continue;
		}
		int st = state_of(g, inputs[k]);
		if (st >= 0) {
			/* a past the model now keeps as a cache: loaded by the harness */
			const mkc_state *ms = MKC_STATE(g, st);
			if (v.rank != ms->cache->rank) {
				snprintf(why, sizeof why, "input '%s' has rank %d, the model says %d",
					 inputs[k]->name, v.rank, ms->cache->rank);
				goto done;
			}
			sym[ms->sym] = v.shape[ms->axis].c;
			snprintf(path, sizeof path, "%s/past%d.bin", work, st);
			/* in the type the cache holds: bf16 (--kv bf16), or float32 where the
			 * model's past is float16 (passes/half.c) */
			mkc_dtype held = ms->cache->storage ? ms->cache->storage : ms->cache->dtype;
			if (v.dtype != held)
				as_stored(c->arena, &v, held);
			if (write_file(path, v.data, v.nbytes) != 0 ||
			    write_decoy(work, st, &v) != 0) {
				snprintf(why, sizeof why, "cannot write %s", path);
				goto done;
			}
			continue;
		}
		in[i] = v;
		snprintf(path, sizeof path, "%s/in%d.bin", work, i);
		if (write_file(path, in[i].data, in[i].nbytes) != 0) {
			snprintf(why, sizeof why, "cannot write %s", path);
			goto done;
		}
		i++;
	}
	for (int i = 0; i < noutputs; i++) {
		snprintf(path, sizeof path, "%s/output_%d.pb", casedir, i);
		if (mkc_onnx_read_tensor(c, path, &ref[i]) != 0) {
			snprintf(why, sizeof why, "%s", c->errors ? c->errors : "cannot read an output");
			goto done;
		}
	}
	if (bind_syms(g, in, nin, sym, o->max_chunk <= 1, why, sizeof why) != 0)
		goto done;
	const mkc_target *t = mkc_target_find(o->target);
	if (write_harness(work, g, sym, o, model, t) != 0) {
		snprintf(why, sizeof why, "cannot write the harness");
		goto done;
	}
	char cmd[8192], log[4200];
	snprintf(log, sizeof log, "%s/build.log", work);
	if (build_command(t->test_build, work, extra_cflags(o), cmd, sizeof cmd) != 0 ||
	    run_command(cmd, log) != 0) {
		snprintf(why, sizeof why, "the emitted code does not build: see %s", log);
		goto done;
	}
	snprintf(log, sizeof log, "%s/run.log", work);
	snprintf(cmd, sizeof cmd, "TSAN_OPTIONS=halt_on_error=1 %s/run", work);
	if (run_command(cmd, log) != 0) {
		size_t n;
		char *text = read_all(log, &n);
		size_t len = text ? strlen(text) : 0;
		while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
			text[--len] = 0;
		snprintf(why, sizeof why, "the run failed: %.600s", text ? text : "(no log)");
		free(text);
		goto done;
	}
	for (int i = 0; i < noutputs; i++) {
		int st = state_of(g, outputs[i]), k = 0;
		while (st < 0 && k < g->outputs.n && MKC_OUTPUT(g, k) != outputs[i])
			k++;
		void *first = NULL;
		size_t nfirst = 0;
		for (int s = 0; s < o->steps; s++) {
			size_t n;
			if (st >= 0)
				snprintf(path, sizeof path, "%s/cache%d.%d.bin", work, st, s);
			else
				snprintf(path, sizeof path, "%s/out%d.%d.bin", work, k, s);
			void *got = read_all(path, &n);
			if (got && st >= 0 && MKC_STATE(g, st)->cache->storage)
				got = widened(got, &n);
			mkc_dtype gt = st >= 0 ? MKC_STATE(g, st)->cache->dtype : ref[i].dtype;
			double err = 0;
			int bad = !got || compare(&ref[i], got, gt, n, o->tol, &err, why, sizeof why);
			if (!bad && s > 0 && (n != nfirst || memcmp(got, first, n))) {
				/* the same inputs and past every step: only a race can move it */
				snprintf(why, sizeof why, "'%s' differs from step 0 (a race?)", ref[i].name);
				bad = 1;
			}
			if (s == 0) {
				first = got;
				nfirst = n;
			} else {
				free(got);
			}
			if (bad) {
				char said[sizeof why];
				snprintf(said, sizeof said, "%s", *why ? why : "no output");
				snprintf(why, sizeof why, "step %d: %s", s, said);
				free(first);
				goto done;
			}
			worst = err > worst ? err : worst;
		}
		free(first);
	}
	rc = 0;
done:
	if (rc == 0)
		printf("PASS %s: %d outputs x %d steps, relative error <= %.2g%s%s\n", casedir, noutputs,
		       o->steps, worst, g->states.n ? " (KV caches in place)" : "",
		       all_folded(g, outputs, noutputs) ? " (folded: every output is a constant "
							  "computed at compile time)" : "");
	else
		printf("FAIL %s: %s\n", casedir, why);
	fflush(stdout);
	mkc_ctx_clear_errors(c);
	return rc;
}

/*
 * Binds every graph input that an op needs at compile time (a Reshape's
 * shape, a Slice's starts) to its value in test_data_set_0, and says so.
 */
static int
bind_consts(mkc_ctx *c, mkc_graph *g, const char *dir, mkc_tensor **inputs, int ninputs)
{
	for (int k = 0; k < ninputs; k++) {
		if (!mkc_graph_needs_const(g, inputs[k]))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
		mkc_tensor *v = mkc_arena_alloc(c->arena, sizeof *v);
		if (mkc_onnx_read_tensor(c, path, v) != 0 ||
		    mkc_graph_bind_input(g, inputs[k]->name, v) != 0)
			return -1;
		printf("note %s: input '%s' bound at compile time to its value in test_data_set_0\n",
		       dir, inputs[k]->name);
	}
	return 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The model in a test folder: model.onnx, else model.json, else the folder
 * itself (a Hugging Face folder). A path to a model file names the model,
 * and its folder holds the cases.
 */
static const char *
model_of(mkc_ctx *c, const char **dir)
{
	struct stat st;
	if (stat(*dir, &st) == 0 && S_ISREG(st.st_mode)) {
		const char *model = *dir, *slash = strrchr(model, '/');
		*dir = slash ? mkc_arena_strndup(c->arena, model, (size_t)(slash - model)) : ".";
		return model;
	}
	const char *names[] = {"model.onnx", "model.json"};
	for (int i = 0; i < 2; i++) {
		char *p = mkc_arena_printf(c->arena, "%s/%s", *dir, names[i]);
		if (stat(p, &st) == 0)
			return p;
	}
	return *dir;
}

/* Removes a scratch folder, or says where it was kept. */
static void
remove_scratch(const char *work, bool keep)
{
	if (keep) {
		fprintf(stderr, "mkc: kept %s\n", work);
		return;
	}
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", work);
	if (system(cmd) != 0)
		fprintf(stderr, "mkc: could not remove %s\n", work);
}

/*
 * Testing the tests: runs `CMD FILE` on the emitted file. The edit must
 * succeed and change the file, or a test that expects the broken code to
 * fail would pass for the wrong reason (an edit that no longer matches).
 */
static int
edit_emitted(const char *cmd, const char *file, const char *dir)
{
	size_t n0, n1;
	char *before = read_all(file, &n0), *full = malloc(strlen(cmd) + strlen(file) + 8);
	int rc = -1;
	if (before && full) {
		sprintf(full, "%s '%s'", cmd, file);
		rc = system(full);
	}
	char *after = rc == 0 ? read_all(file, &n1) : NULL;
	bool same = after && n0 == n1 && !memcmp(before, after, n0);
	if (rc != 0 || !after)
		printf("FAIL %s: --edit: '%s' failed\n", dir, cmd);
	else if (same)
		printf("FAIL %s: --edit: '%s' left the emitted file as it was\n", dir, cmd);
	else
		fprintf(stderr, "mkc test: edited the emitted file with '%s'\n", cmd);
	free(before);
	free(after);
	free(full);
	return rc != 0 || !after || same ? -1 : 0;
}

/* the model loaded again for a twin plan (mkc_run_twins), bound as the first */
typedef struct {
	mkc_ctx *c;
	const char *model, *dir;
	const test_options *o;
} reload;

static mkc_graph *
load_again(void *user)
{
	const reload *r = user;
	mkc_graph *g = mkc_load_model(r->c, r->model);
	if (g && r->o->bind_consts) {
		mkc_tensor **in = mkc_arena_alloc(r->c->arena, (size_t)(g->inputs.n + 1) * sizeof *in);
		for (int i = 0; i < g->inputs.n; i++)
			in[i] = MKC_INPUT(g, i);
		if (bind_consts(r->c, g, r->dir, in, g->inputs.n) != 0)
			return NULL;
	}
	return g && mkc_fix_dims(g, r->o->dims, r->o->ndims) == 0 ? g : NULL;
}

/* Compiles DIR and runs each of its cases; adds to the counts. */
static void
test_dir(const char *dir, const test_options *o, int *passed, int *failed)
{
	mkc_ctx *c = mkc_ctx_create();
	c->verbose = o->verbose;
	char work[4096];
	snprintf(work, sizeof work, "%s/mkc_test_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	const char *model = model_of(c, &dir);
	mkc_graph *g = NULL;
	mkc_plan *p = NULL;
	if (!mkdtemp(work)) {
		printf("FAIL %s: cannot make a scratch folder\n", dir);
		(*failed)++;
		mkc_ctx_destroy(c);
		return;
	}
	const mkc_target *t = mkc_target_find(o->target);
	/* the file is generated for the architecture the build command names */
	const char *arch = t->archs ? getenv("MKC_HIP_ARCH") : NULL;
	if (arch && *arch && !mkc_target_has_arch(t, arch)) {
		printf("FAIL %s: MKC_HIP_ARCH=%s: the %s target is generated for gfx942 or gfx90a\n",
		       dir, arch, t->name);
		(*failed)++;
		rmdir(work);
		mkc_ctx_destroy(c);
		return;
	}
	mkc_driver_options d = {.workers = o->workers, .bf16_weights = o->bf16,
				.no_reuse = o->no_reuse, .max_seq = o->max_seq, .kv_io = o->kv_io,
				.max_dim = o->max_dim,
				.no_fuse = o->no_fuse, .wide_target = t->warp > 0,
				.tc_products = t->mma, .few_tiles = t->few_tiles,
				.tc_attention = t->mma && t->chunk_attn, .tma_products = t->tma,
				.kv_dtype = (mkc_dtype)o->kv_dtype, .max_chunk = o->max_chunk,
				.max_seqs = o->max_seqs, .page_size = o->page_size,
				.few_tokens = o->few_tokens};
	mkc_emit_options eo = {mkc_arena_printf(c->arena, "%s/model.%s", work, t->ext),
			       "model", "mkc test", o->max_dim ? o->max_dim : 4096, o->embed_limit, o->profile ? 1 : 0,
			       arch && *arch ? arch : NULL};
	bool ok = (g = mkc_load_model(c, model)) != NULL;
	mkc_tensor **inputs = NULL, **outputs = NULL;
	int ninputs = 0, noutputs = 0;
	if (ok) {
		/* remember the inputs and outputs as the test data numbers them */
		ninputs = g->inputs.n;
		noutputs = g->outputs.n;
		inputs = mkc_arena_alloc(c->arena, (size_t)(ninputs + 1) * sizeof *inputs);
		outputs = mkc_arena_alloc(c->arena, (size_t)(noutputs + 1) * sizeof *outputs);
		for (int i = 0; i < ninputs; i++)
			inputs[i] = MKC_INPUT(g, i);
		for (int i = 0; i < noutputs; i++)
			outputs[i] = MKC_OUTPUT(g, i);
		if (o->bind_consts)
			ok = bind_consts(c, g, dir, inputs, ninputs) == 0;
		ok = ok && mkc_fix_dims(g, o->dims, o->ndims) == 0;
	}
	ok = ok && mkc_run_passes(g, &d, &p) == 0;
	/* a chunked file's steps of few tokens and of one: the model compiled again */
	mkc_plan *plans[MKC_MAX_PLANS] = {p};
	int nplans = 1;
	if (ok) {
		reload r = {c, model, dir, o};
		int n = mkc_run_twins(g, load_again, &r, &d, plans + 1);
		ok = n >= 0;
		nplans += ok ? n : 0;
	}
	if (ok && o->stall_event >= 0 && o->stall_event < p->events.n) {
		/* after verify, on purpose: the event can never fire */
		MKC_EVENT(p, o->stall_event)->threshold++;
		fprintf(stderr, "mkc test: raised the threshold of event %d\n", o->stall_event);
	}
	if (ok && o->drop_wait >= 0 && o->drop_wait < p->tasks.n) {
		/* after verify, on purpose: the emitted code is now unsafe */
		MKC_TASK(p, o->drop_wait)->nwaits = 0;
		fprintf(stderr, "mkc test: dropped the wait of task %d (%s)\n", o->drop_wait,
			MKC_TASK(p, o->drop_wait)->node->name);
	}
	if (!ok || mkc_emit(plans, nplans, t, &eo) != 0) {
		printf("FAIL %s: %s", dir, c->errors ? c->errors : "does not compile\n");
		(*failed)++;
		remove_scratch(work, false);
		mkc_ctx_destroy(c);
		return;
	}
	if (o->edit && edit_emitted(o->edit, eo.out_path, dir) != 0) {
		(*failed)++;
		remove_scratch(work, o->keep);
		mkc_ctx_destroy(c);
		return;
	}
	DIR *dd = opendir(dir);
	char *cases[256];
	int n = 0;
	for (struct dirent *de; dd && (de = readdir(dd)) && n < 256;)
		if (!strncmp(de->d_name, "test_data_set_", 14))
			cases[n++] = mkc_arena_printf(c->arena, "%s/%s", dir, de->d_name);
	if (dd)
		closedir(dd);
	qsort(cases, (size_t)n, sizeof *cases, cmp_str);
	if (!n) {
		printf("FAIL %s: no test_data_set_* folder\n", dir);
		(*failed)++;
	}
	for (int i = 0; i < n; i++)
		*(run_case(c, g, inputs, ninputs, outputs, noutputs, model, cases[i], work, o) == 0
			  ? passed : failed) += 1;
	remove_scratch(work, o->keep);
	mkc_ctx_destroy(c);
}

static const char test_usage[] =
	"usage: mkc test [options] DIR...\n"
	"  Compiles each DIR/model.onnx with the C target, runs it on every\n"
	"  DIR/test_data_set_*, and compares the outputs with the references.\n"
	"  --threads N     threads for --shuffle (static queues get one thread each)\n"
	"  --workers N     persistent workers to schedule for (default 8)\n"
	"  --shuffle SEED  one shared queue in a random topological order\n"
	"  --steps N       steps per case, each compared (default 3)\n"
	"  --tolerance T   largest relative L2 error (default 1e-5)\n"
	"  --tsan          build the emitted code with ThreadSanitizer\n"
	"  --keep          keep the scratch folders (their paths go to stderr)\n"
	"  --weights T     f32 (default) or bf16 weights, as mkc --weights\n"
	"  --kv T          f32 (default) or bf16 KV caches, as mkc --kv; a bf16\n"
	"                  cache gets the past rounded to bf16 and is compared\n"
	"                  widened to float32\n"
	"  --embed-limit N initializers up to N bytes go into the file (default 4096)\n"
	"  --no-reuse      give every intermediate a buffer of its own\n"
	"  --no-fuse       compile without the fuse pass, as mkc --no-fuse\n"
	"  --kv-io         keep past/present as inputs and outputs (by default the\n"
	"                  model keeps its KV caches; the harness loads the test\n"
	"                  data's past into them and reads them back after a step)\n"
	"  --dim NAME=N    fix the symbolic dimension NAME at N, as mkc --dim\n"
	"  --max-dim N     largest value of every symbolic dimension, as mkc\n"
	"                  --max-dim (default 4096)\n"
	"  --max-seq N     positions each KV cache holds (default 4096)\n"
	"  --max-chunk N   compile for steps of up to N new tokens, as mkc\n"
	"                  --max-chunk (default 1)\n"
	"  --few-tokens F  steps of 2 to F tokens run a plan of their own, as mkc\n"
	"                  --few-tokens (default 64 on cuda, 0 on c and hip)\n"
	"  --max-seqs N    compile as mkc --max-seqs N (caches in pages; the tests\n"
	"                  step sequence 0), with --page-size P positions a page\n"
	"  --profile FILE  compile with mkc --profile and write the last step's\n"
	"                  per-task timeline to FILE (a Chrome trace)\n"
	"  --bind-consts   bind inputs that must be known at compile time (shapes,\n"
	"                  axes) to their values in test_data_set_0, and say so\n"
	"  --timeout S     the watchdog: seconds a wait may take (default 20)\n"
	"  --drop-wait T   testing mkc itself: remove task T's wait after the\n"
	"                  schedule proof, so that the race tests must fail\n"
	"  --stall-event E testing mkc itself: raise event E's threshold after the\n"
	"                  proof, so that the watchdog must name the stuck task\n"
	"  --edit CMD      testing the tests: run `CMD FILE` on the emitted file\n"
	"                  before building it; CMD must succeed and change it\n"
	"  --target T      c (the default; builds with cc), cuda (builds with\n"
	"                  nvcc for sm_90a and needs an NVIDIA GPU to run) or hip\n"
	"                  (builds with hipcc for $MKC_HIP_ARCH, default gfx942, and\n"
	"                  needs an AMD GPU to run; never run so far)\n";

int
mkc_test_main(int argc, char **argv)
{
	test_options o = {.target = "c", .steps = 3, .tol = 1e-5, .drop_wait = -1,
			  .embed_limit = 4096, .stall_event = -1, .timeout = 20, .few_tokens = -1};
	const char **dirs = calloc((size_t)argc, sizeof *dirs);
	int ndirs = 0;
	if (!dirs)
		return 2;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char *end = "";
		bool has = i + 1 < argc;
		if (!strcmp(a, "--threads") && has)
			o.threads = (int)strtol(argv[++i], &end, 10);
		else if (!strcmp(a, "--workers") && has)
			o.workers = (int)strtol(argv[++i], &end, 10);
		else if (!strcmp(a, "--shuffle") && has)
			o.shuffle = (unsigned)strtoul(argv[++i], &end, 10);
		else if (!strcmp(a, "--steps") && has)
			o.steps = (int)strtol(argv[++i], &end, 10);
		else if (!strcmp(a, "--tolerance") && has)
			o.tol = strtod(argv[++i], &end);
		else if (!strcmp(a, "--drop-wait") && has)
			o.drop_wait = (int)strtol(argv[++i], &end, 10);
		else if (!strcmp(a, "--target") && has)
			o.target = argv[++i];
		else if (!strcmp(a, "--weights") && has) {
			o.bf16 = !strcmp(argv[++i], "bf16");
			if (!o.bf16 && strcmp(argv[i], "f32"))
				end = "x";
		} else if (!strcmp(a, "--kv") && has) {
			o.kv_dtype = !strcmp(argv[++i], "bf16") ? MKC_DT_BFLOAT16 : MKC_DT_FLOAT;
			if (o.kv_dtype == MKC_DT_FLOAT && strcmp(argv[i], "f32"))
				end = "x";
		} else if (!strcmp(a, "--embed-limit") && has)
			o.embed_limit = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--stall-event") && has)
			o.stall_event = (int)strtol(argv[++i], &end, 10);
		else if (!strcmp(a, "--timeout") && has)
			o.timeout = strtod(argv[++i], &end);
		else if (!strcmp(a, "--edit") && has)
			o.edit = argv[++i];
		else if (!strcmp(a, "--max-seq") && has)
			o.max_seq = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--dim") && has && o.ndims < 64)
			o.dims[o.ndims++] = argv[++i];
		else if (!strcmp(a, "--max-dim") && has)
			o.max_dim = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--max-chunk") && has)
			o.max_chunk = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--few-tokens") && has)
			o.few_tokens = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--max-seqs") && has)
			o.max_seqs = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--page-size") && has)
			o.page_size = strtoll(argv[++i], &end, 10);
		else if (!strcmp(a, "--profile") && has)
			o.profile = argv[++i];
		else if (!strcmp(a, "--no-reuse"))
			o.no_reuse = true;
		else if (!strcmp(a, "--no-fuse"))
			o.no_fuse = true;
		else if (!strcmp(a, "--kv-io"))
			o.kv_io = true;
		else if (!strcmp(a, "--bind-consts"))
			o.bind_consts = true;
		else if (!strcmp(a, "--tsan"))
			o.tsan = true;
		else if (!strcmp(a, "--keep"))
			o.keep = true;
		else if (!strcmp(a, "-v"))
			o.verbose = true;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(test_usage, stdout);
			return 0;
		} else if (a[0] == '-') {
			fprintf(stderr, "mkc test: unknown option '%s'\n%s", a, test_usage);
			free(dirs);
			return 2;
		} else {
			dirs[ndirs++] = a;
			continue;
		}
		if (*end || o.steps < 1 || o.threads < 0 || o.workers < 0 || o.tol <= 0 ||
		    o.embed_limit < 0 || o.timeout <= 0 || o.max_seq < 0 || o.max_dim < 0 ||
		    o.max_chunk < 0 || o.few_tokens < -1 || o.few_tokens > MKC_FEW_ROWS ||
		    o.max_seqs < 0 || o.max_seqs > 65536 || o.page_size < 0) {
			fprintf(stderr, "mkc test: bad value for %s\n", a);
			free(dirs);
			return 2;
		}
	}
	if (o.kv_io && o.kv_dtype == MKC_DT_BFLOAT16) {
		fputs("mkc test: --kv bf16 is the type of the caches the model keeps as state, and "
		      "--kv-io keeps none\n", stderr);
		free(dirs);
		return 2;
	}
	const mkc_target *t = mkc_target_find(o.target);
	if (!t || t->unwritten || !ndirs || (!t->host_workers && (o.tsan || o.shuffle))) {
		if (!ndirs)
			fputs(test_usage, stderr);
		else if (t && t->unwritten)
			fprintf(stderr, "mkc test: %s\n", t->unwritten);
		else
			fputs("mkc test: --target is c, cuda or hip; --tsan and --shuffle are for c\n", stderr);
		free(dirs);
		return 2;
	}
	int passed = 0, failed = 0;
	for (int i = 0; i < ndirs; i++)
		test_dir(dirs[i], &o, &passed, &failed);
	free(dirs);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
