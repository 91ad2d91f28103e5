/*
 * emit.c - the file structure of emitted code. See emit.h; the tile
 * functions themselves come from emit_ops.c.
 *
 * Layout of the emitted .c/.cu:
 *   provenance comment; target headers; runtime/common.h;
 *   the public declarations (the same text as the header);
 *   sizes (#defines), symbol names and maxima, embedded data, the tensor
 *   table, the task table (node, output box, wait event, signal list), the
 *   event table (threshold, producers) and the per-worker queues;
 *   the target runtime (model object, executor), runtime/exec_api.h (the
 *   hooks it provides, checked), its bodies, the shared host code (weight
 *   loading, binding, KV caches, the timeline);
 *   the tile functions, mkc_run_task, mkc_fill_symvals; the public API.
 *
 * A chunked file (--max-chunk N > 1) holds two or three plans: plan 0, its
 * steps of any S; where N passes --few-tokens F, a plan for steps of 2 to F
 * tokens (the model compiled with S at most F, its products cut as a
 * decode step's); last, the same model compiled with S fixed at 1 (the
 * decode file's plan). The tables hold plan 0's tasks, events, queues and
 * nodes, then the next plan's (mkc_plan_task0 and the queue lists say
 * where each starts); the plans share the graph's inputs, outputs, caches
 * and every weight that is the same in all, and one arena, the largest;
 * nodes of one form share one body across plans. MKC_STEP_PLAN(sym) picks
 * a step's plan from S.
 */
#include "emit.h"
#include "../../ir/numeric.h"
#include "../../runtime/limits.h"

_Static_assert(MKC_RANK == MKC_MAX_RANK, "runtime/limits.h's rank is the IR's");

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *
mkc_cstr(mkc_arena *a, const char *s, bool format)
{
	char *out = mkc_arena_alloc(a, strlen(s) * 4 + 1), *o = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\' || *p == '"') {
			*o++ = '\\';
			*o++ = (char)*p;
		} else if (*p == '%' && format) {
			*o++ = '%';
			*o++ = '%';
		} else if (*p < 0x20 || *p == 0x7f || *p == '?') {
			/* octal, which also keeps "??" trigraphs out */
			o += sprintf(o, "\\%03o", *p);
		} else {
			*o++ = (char)*p;
		}
	}
	*o = 0;
	return out;
}

const char *
mkc_ccomment(mkc_arena *a, const char *s)
{
	char *out = mkc_arena_alloc(a, strlen(s) * 2 + 1), *o = out;
	for (const char *p = s; *p; p++) {
		*o++ = *p;
		if ((p[0] == '*' && p[1] == '/') || (p[0] == '/' && p[1] == '*'))
			*o++ = ' ';
	}
	*o = 0;
	return out;
}

/* Writes text with every "$" key (a letter: "$P") replaced by value. */
static void
put_subst(FILE *f, const char *text, char key, const char *value)
{
	for (const char *s = text; *s; s++) {
		if (s[0] == '$' && s[1] == key) {
			fputs(value, f);
			s++;
		} else {
			fputc(*s, f);
		}
	}
}

/* Writes text with every "$P" replaced by the prefix. */
static void
put_template(FILE *f, const char *text, const char *prefix)
{
	put_subst(f, text, 'P', prefix);
}

/*
 * API prefixes. The prefix names a type ($P) and functions ($P_step), so it
 * must be a C identifier that nothing else in the emitted file or its
 * headers declares: not a keyword of C or of C++ (a .cu file is C++), not
 * main (the program's own, which includes the header), not in the
 * emitter's name space (mkc_, MKC_) or the implementation's (a leading
 * underscore, POSIX's _t types), not a name that the headers the emitted
 * file includes declare or define (reserved_names.h, generated from them by
 * gen_reserved.py: powf, tm, SIZE_MAX, and timer for timer_create), and not
 * a name the runtime texts use (out, opts, stat).
 */
static const char *const reserved_names[] = {
	/* C11, C23 */
	"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
	"enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
	"restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
	"union", "unsigned", "void", "volatile", "while", "alignas", "alignof", "bool",
	"constexpr", "false", "nullptr", "static_assert", "thread_local", "true", "typeof",
	"typeof_unqual", "complex", "imaginary", "noreturn",
	/* C++ */
	"and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t",
	"class", "co_await", "co_return", "co_yield", "compl", "concept", "const_cast",
	"consteval", "constinit", "decltype", "delete", "dynamic_cast", "explicit", "export",
	"friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "operator", "or",
	"or_eq", "private", "protected", "public", "reinterpret_cast", "requires", "static_cast",
	"template", "this", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t",
	"xor", "xor_eq", "std",
};

/* The headers' names, with the targets they collide in (1 c, 2 cuda, 4 hip), sorted. */
static const struct {
	const char *name;
	int targets;
} header_names[] = {
#include "reserved_names.h"
};

static int
by_name(const void *key, const void *entry)
{
	return strcmp(key, *(const char *const *)entry);
}

/* Whether a header an emitted file includes declares or defines name (any target's). */
static bool
header_declares(const char *name)
{
	return bsearch(name, header_names, sizeof header_names / sizeof *header_names,
		       sizeof *header_names, by_name) != NULL;
}

/* Names the library and the runtime use as prefixes of their own. */
static const char *const reserved_prefixes[] = {"mkc_", "MKC_", "_", "pthread_", "sched_",
						"atomic_", "memory_order", "cuda", "hip", "__", "O_",
						"F_", "AT_", "S_IF", "POSIX_FADV_"};

/* Whether name is an identifier of the code in text (outside comments and strings). */
static bool
text_uses(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = text; *s;) {
		if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");
			s = e ? e + 2 : s + strlen(s);
		} else if (s[0] == '/' && s[1] == '/') {
			s += strcspn(s, "\n");
		} else if (*s == '"' || *s == '\'') {
			char q = *s++;
			while (*s && *s != q)
				s += s[0] == '\\' && s[1] ? 2 : 1;
			s += *s != 0;
		} else if (*s == '$' && s[1] == 'P') {
			for (s += 2; isalnum((unsigned char)*s) || *s == '_'; s++)
				;
		} else if (isalpha((unsigned char)*s) || *s == '_') {
			const char *b = s;
			while (isalnum((unsigned char)*s) || *s == '_')
				s++;
			if ((size_t)(s - b) == n && memcmp(b, name, n) == 0)
				return true;
		} else {
			s++;
		}
	}
	return false;
}

/*
 * Whether the host-side code of any written target uses name: its headers,
 * exec and API, and the shared texts. (The bodies' names are their own:
 * mkc_rt_ functions and the locals in them.)
 */
static bool
host_code_uses(const char *name)
{
	const char *const shared[] = {"runtime/common.h", "runtime/bf16.h", "runtime/sample.h",
				      "runtime/sched.h", "runtime/limits.h", "runtime/api_h.h",
				      "runtime/exec_api.h"};
	for (size_t i = 0; i < sizeof shared / sizeof *shared; i++)
		if (text_uses(mkc_runtime_text(shared[i]), name))
			return true;
	for (const char *const *r = mkc_shared_runtime; *r; r++)
		if (text_uses(mkc_runtime_text(*r), name))
			return true;
	for (const mkc_target *const *t = mkc_targets; *t; t++) {
		if ((*t)->unwritten)
			continue;
		if (text_uses((*t)->headers, name) || text_uses(mkc_runtime_text((*t)->api), name))
			return true;
		for (const char *const *r = (*t)->exec; *r; r++)
			if (text_uses(mkc_runtime_text(*r), name))
				return true;
		for (const char *const *r = (*t)->prelude; r && *r; r++)
			if (text_uses(mkc_runtime_text(*r), name))
				return true;
	}
	return false;
}

const char *
mkc_emit_name_problem(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64)
		return "must be 1 to 64 characters long";
	if (isdigit((unsigned char)name[0]))
		return "is not a C identifier (it starts with a digit)";
	for (const char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return "is not a C identifier (letters, digits and '_' only)";
	for (size_t i = 0; i < sizeof reserved_prefixes / sizeof *reserved_prefixes; i++)
		if (strncmp(name, reserved_prefixes[i], strlen(reserved_prefixes[i])) == 0)
			return "is reserved (names starting with mkc_, MKC_, '_', pthread_, sched_, "
			       "atomic_, memory_order, cuda, O_, F_, AT_, S_IF or POSIX_FADV_ belong to "
			       "mkc or the libraries)";
	if (strcmp(name, "mkc") == 0 || strcmp(name, "MKC") == 0 ||
	    (n > 2 && strcmp(name + n - 2, "_t") == 0))
		return "is reserved (mkc's own name, or a POSIX type name ending in _t)";
	if (strcmp(name, "main") == 0)
		return "is the program's entry point (the header would declare a type of that name "
		       "beside the program's own main)";
	for (size_t i = 0; i < sizeof reserved_names / sizeof *reserved_names; i++)
		if (strcmp(name, reserved_names[i]) == 0)
			return "is a C or C++ keyword";
	if (header_declares(name))
		return "is taken by the headers the emitted file includes, the C library's, CUDA's "
		       "or HIP's (or a name it makes is: timer makes timer_create)";
	if (host_code_uses(name))
		return "is a name the emitted code already uses";
	return NULL;
}

/*
 * The prefix from the output file's stem, made an identifier; a stem that
 * would collide (out.c, float.c, opts.c) gets "_model" after it, and one that
 * still cannot serve (mkc_x.c) "m_" before that.
 */
static char *
prefix_of(mkc_arena *a, const char *out)
{
	const char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	const char *dot = strchr(base, '.');
	size_t n = dot ? (size_t)(dot - base) : strlen(base);
	if (n > 48)
		n = 48;
	char *p = mkc_arena_alloc(a, n + 2);
	size_t k = 0;
	if (n == 0 || (base[0] >= '0' && base[0] <= '9'))
		p[k++] = 'm';
	for (size_t i = 0; i < n; i++) {
		char c = base[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_';
		p[k++] = ok ? c : '_';
	}
	if (!mkc_emit_name_problem(p))
		return p;
	char *q = mkc_arena_printf(a, "%s_model", p);
	if (!mkc_emit_name_problem(q))
		return q;
	q = mkc_arena_printf(a, "m_%s_model", p);
	MKC_ASSERT(!mkc_emit_name_problem(q));
	return q;
}

static const char *
header_path(mkc_arena *a, const char *out)
{
	const char *dot = strrchr(out, '.');
	const char *slash = strrchr(out, '/');
	size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - out) : strlen(out);
	return mkc_arena_printf(a, "%.*s.h", (int)n, out);
}

/* The FNV-1a hash of the model file, for the provenance header (0: not a regular file). */
static uint64_t
hash_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	uint64_t h = 1469598103934665603ull;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	unsigned char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
	close(fd);
	return h;
}

static void
put_dim(FILE *f, mkc_dim d)
{
	fprintf(f, "{%lld, {%lld, %lld}, {%d, %d}}", (long long)d.c, (long long)d.k[0],
		(long long)d.k[1], d.k[0] ? d.sym[0] : -1, d.k[1] ? d.sym[1] : -1);
}

static bool
needs_table(const mkc_tensor *t)
{
	return t->kind == MKC_TK_INPUT || t->kind == MKC_TK_OUTPUT;
}

static bool rt_same_weight(const mkc_tensor *a, const mkc_tensor *b);
static int rt_kind(const mkc_tensor *t);

/* What plan k of e is, in a sentence: "chunk", "few-token", "one-token". */
static const char *
plan_name(const mkc_emitter *e, int k)
{
	return k == 0 ? "chunk" : k == e->nplans - 1 ? "one-token" : "few-token";
}

/*
 * Plan 0's table index of the tensor t of a later plan is (the same graph
 * input or output, the same cache, the same weight), or -1: t is its own.
 */
static int
twin(const mkc_emitter *e, const mkc_tensor *t)
{
	const mkc_tensor *u = mkc_graph_find(e->plans[0]->g, t->name);
	if (!u || e->indexes[0][u->id] < 0 || u->kind != t->kind)
		return -1;
	if (t->kind == MKC_TK_INPUT || t->kind == MKC_TK_OUTPUT || t->kind == MKC_TK_STATE ||
	    (rt_kind(t) == 3 && rt_kind(u) == 3 && rt_same_weight(u, t)))
		return e->indexes[0][u->id];
	return -1;
}

/*
 * Numbers every tensor plan k's tasks touch, and its graph inputs and
 * outputs, from n on (a later plan's twins take plan 0's numbers); returns
 * the next number, or -1 with an error (a later plan's graph input, output
 * or cache that plan 0 lacks).
 */
static int
number_tensors(mkc_emitter *e, int k, int n)
{
	mkc_plan *p = e->plans[k];
	mkc_graph *g = p->g;
	int *ix = mkc_arena_alloc(g->ctx->arena, (size_t)(g->tensors.n + 1) * sizeof *ix);
	e->indexes[k] = ix;
	for (int i = 0; i < g->tensors.n; i++)
		ix[i] = -1;
	bool *need = mkc_arena_alloc(g->ctx->arena, (size_t)(g->tensors.n + 1) * sizeof *need);
	int *order = mkc_arena_alloc(g->ctx->arena, (size_t)(g->tensors.n + 1) * sizeof *order);
	int m = 0;
	for (int i = 0; i < g->tensors.n; i++)
		if (needs_table(MKC_TENSOR(g, i)) && !need[i])
			need[i] = true, order[m++] = i;
	for (int i = 0; i < p->tasks.n; i++) {
		mkc_task *t = MKC_TASK(p, i);
		for (int r = 0; r < t->nreads + t->nwrites; r++) {
			mkc_tensor *x = r < t->nreads ? t->reads[r].t : t->writes[r - t->nreads].t;
			if (!need[x->id])
				need[x->id] = true, order[m++] = x->id;
		}
	}
	/* a view (passes/views.c) is the bytes of its base, under its own dims */
	for (int i = 0; p->view_of && i < g->tensors.n; i++) {
		int base = p->view_of[i];
		if (base >= 0 && !need[base])
			need[base] = true, order[m++] = base;
	}
	for (int j = 0; j < m; j++) {
		const mkc_tensor *t = MKC_TENSOR(g, order[j]);
		if (p->view_of && p->view_of[t->id] >= 0)
			continue;
		ix[t->id] = k ? twin(e, t) : -1;
		if (ix[t->id] < 0 && k && (needs_table(t) || t->kind == MKC_TK_STATE))
			return mkc_error(g->ctx, "%s: the %s plan has %s '%s', which the "
					 "chunk's plan lacks", g->path, plan_name(e, k), t->kind == MKC_TK_STATE ?
					 "the cache" : "the graph input or output", t->name);
		if (ix[t->id] < 0)
			ix[t->id] = n++;
	}
	for (int i = 0; p->view_of && i < g->tensors.n; i++)
		if (p->view_of[i] >= 0)
			ix[i] = ix[p->view_of[i]];
	return n;
}

static bool
is_view(const mkc_plan *p, int tensor)
{
	return p->view_of && p->view_of[tensor] >= 0;
}

/*
 * A node that makes a view runs no task and needs no function: its output
 * the bytes of its input, or (a Transpose an attention writes through,
 * passes/views.c) its input the bytes of its output.
 */
static bool
is_view_node(const mkc_plan *p, const mkc_node *n)
{
	if (n->nout != 1 || !n->out[0] || n->nin < 1 || !n->in[0] || !p->view_of)
		return false;
	int x = n->in[0]->id, y = n->out[0]->id;
	return (is_view(p, y) && (p->view_of[y] == x || p->view_of[y] == p->view_of[x])) ||
	       p->view_of[x] == y;
}

static int
rt_kind(const mkc_tensor *t)
{
	if (t->kind == MKC_TK_INPUT)
		return 1;
	if (t->kind == MKC_TK_OUTPUT)
		return 2;
	if (t->kind == MKC_TK_WEIGHT && (t->data || t->xk))
		return 3;   /* bytes, or a transpose the loader makes (passes/layout.c) */
	if (t->kind == MKC_TK_WEIGHT && t->symval)
		return 4;
	if (t->kind == MKC_TK_WEIGHT && t->nbytes == 0)
		return 3;   /* an empty weight */
	if (t->kind == MKC_TK_STATE)
		return 5;
	return 0;
}

/*
 * Whether weights a and b of two plans of one model are one: the same
 * name, types and shape, and bytes from the same place of the same file,
 * or the same bytes in memory.
 */
static bool
rt_same_weight(const mkc_tensor *a, const mkc_tensor *b)
{
	if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->storage != b->storage ||
	    a->file_dtype != b->file_dtype || a->nbytes != b->nbytes || a->rank != b->rank)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (!mkc_dim_eq(a->shape[d], b->shape[d]))
			return false;
	if (a->xk != b->xk || a->xn != b->xn || a->xc0 != b->xc0)
		return false;
	if (a->ext_file || b->ext_file)
		return a->ext_file && b->ext_file && strcmp(a->ext_file, b->ext_file) == 0 &&
		       a->ext_offset == b->ext_offset;
	return a->nbytes == 0 || (a->data && b->data && memcmp(a->data, b->data, a->nbytes) == 0);
}

/*
 * Folded values and small initializers go into the file itself; so do all
 * inline initializers of a model the run-time loader cannot read them back
 * from (it reads ONNX protobuf and files of their own, not JSON).
 */
static bool
embedded(const mkc_graph *g, const mkc_tensor *t, const mkc_emit_options *o)
{
	/* one stored transposed (passes/layout.c) is made by the loader, always */
	return rt_kind(t) == 3 && !t->xk &&
	       (!t->initializer || (int64_t)t->nbytes <= o->embed_limit ||
		(!t->ext_file && !g->protobuf_weights));
}

static void
put_bytes(FILE *f, const char *name, const void *data, size_t n)
{
	/* 16-byte aligned, so any element type can be read from it */
	fprintf(f, "static const unsigned char %s[%zu] __attribute__((aligned(16))) = {", name,
		n ? n : 1);
	const unsigned char *b = data;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%u,", i % 24 ? "" : "\n\t", b[i]);
	fputs(n ? "\n};\n" : "0};\n", f);
}

/* A weight file's name relative to the model's folder (where the loader looks). */
static const char *
relative(const mkc_graph *g, const char *path)
{
	size_t n = strlen(g->dir);
	if (strncmp(path, g->dir, n) == 0 && path[n] == '/')
		return path + n + 1;
	return path;
}

static int
emit_tensors(mkc_emitter *e, int ntensors, const mkc_emit_options *o)
{
	FILE *f = e->f;
	mkc_graph *g = e->p->g;
	mkc_arena *a = g->ctx->arena;
	mkc_tensor **by_index = mkc_arena_alloc(g->ctx->arena, (size_t)(ntensors + 1) * sizeof *by_index);
	int *owner = mkc_arena_alloc(g->ctx->arena, (size_t)(ntensors + 1) * sizeof *owner);
	for (int k = e->nplans - 1; k >= 0; k--) {   /* a twin is plan 0's tensor */
		const mkc_plan *pk = e->plans[k];
		for (int i = 0; i < pk->g->tensors.n; i++)
			if (e->indexes[k][i] >= 0 && !is_view(pk, i)) {
				by_index[e->indexes[k][i]] = MKC_TENSOR(pk->g, i);
				owner[e->indexes[k][i]] = k;
			}
	}
	for (int i = 0; i < ntensors; i++) {
		const mkc_tensor *t = by_index[i];
		if (!mkc_ctype(e, t->dtype))
			return mkc_error(g->ctx, "%s: tensor '%s' is %s, which the %s target does not handle yet",
					 g->path, t->name, mkc_dtype_name(t->dtype), e->t->name);
		if (embedded(g, t, o)) {
			char nm[32];
			snprintf(nm, sizeof nm, "mkc_data_%d", i);
			if (t->storage == MKC_DT_BFLOAT16 && t->file_dtype != MKC_DT_BFLOAT16) {
				int64_t n = (int64_t)(t->nbytes / 4);
				uint16_t *b = mkc_arena_alloc(g->ctx->arena, (size_t)n * 2 + 2);
				for (int64_t k = 0; k < n; k++)
					b[k] = mkc_float_to_bf16((float)mkc_load_double(MKC_DT_FLOAT, t->data, k));
				put_bytes(f, nm, b, (size_t)n * 2);
			} else {
				put_bytes(f, nm, t->data, t->nbytes);
			}
		}
	}
	fprintf(f, "\nstatic const mkc_rt_tensor_info mkc_tensors[MKC_NTENSORS] = {\n");
	for (int i = 0; i < ntensors; i++) {
		const mkc_tensor *t = by_index[i];
		int kind = rt_kind(t);
		mkc_dtype st = t->storage ? t->storage : t->dtype;
		fprintf(f, "\t{\"%s\", %d, %zu, %d, %d, {", mkc_cstr(a, t->name, false), (int)st,
			mkc_dtype_size(st),
			t->rank, kind);
		for (int d = 0; d < t->rank; d++) {
			fputs(d ? ", " : "", f);
			put_dim(f, t->shape[d]);
		}
		int fdt = (int)(t->file_dtype ? t->file_dtype : t->dtype);
		const mkc_plan *pt = e->plans[owner[i]];
		long long at = pt->mem_off ? (long long)pt->mem_off[t->id] : -1;
		/* an initializer compiled in is compared with the model's file at load (the
		 * loader reads ONNX protobuf and files of their own, not JSON) */
		bool emb = embedded(g, t, o);
		bool check = emb && t->initializer && (t->ext_file || g->protobuf_weights);
		bool file = t->ext_file && rt_kind(t) == 3 && (!emb || check);
		if (emb)
			fprintf(f, "}, mkc_data_%d, %d, ", i, fdt);
		else
			fprintf(f, "}, NULL, %d, ", fdt);
		if (file)
			fprintf(f, "\"%s\", %llu, -1", mkc_cstr(a, relative(g, t->ext_file), false),
				(unsigned long long)t->ext_offset);
		else
			fprintf(f, "NULL, 0, %lld", emb ? -1 : at);
		/* a Hugging Face weight: its safetensors header is checked at load */
		bool sft = file && !g->protobuf_weights;
		fprintf(f, ", %d, %lld, %d, %d, %lld, %lld, %lld},\n", t->cap ? t->cap_axis : -1,
			(long long)t->cap, sft, check, (long long)t->xk, (long long)t->xn,
			(long long)t->xc0);
	}
	fputs("};\n", f);
	fprintf(f, "\nstatic const mkc_rt_cache mkc_caches[MKC_NCACHES + 1] MKC_UNUSED = {\n");
	for (int i = 0; i < g->states.n; i++) {
		const mkc_state *st = MKC_STATE(g, i);
		fprintf(f, "\t{%d, \"%s\", %d, ", e->index[st->cache->id],
			mkc_cstr(a, st->past, false), st->sym);
		put_dim(f, st->nnew);
		fputs("},\n", f);
	}
	fputs("\t{-1, NULL, -1, {0, {0, 0}, {-1, -1}}}\n};\n", f);
	return 0;
}

static void
emit_io(mkc_emitter *e)
{
	FILE *f = e->f;
	mkc_graph *g = e->p->g;
	fprintf(f, "\nstatic const int mkc_inputs[MKC_NINPUTS + 1] = {");
	for (int i = 0; i < g->inputs.n; i++)
		fprintf(f, "%d, ", e->index[MKC_INPUT(g, i)->id]);
	fprintf(f, "-1};\nstatic const int mkc_outputs[MKC_NOUTPUTS + 1] = {");
	for (int i = 0; i < g->outputs.n; i++)
		fprintf(f, "%d, ", e->index[MKC_OUTPUT(g, i)->id]);
	fprintf(f, "-1};\n");
}

/*
 * The graph input or output called name with the given type and shape
 * [1,..,1,x], or -1: x is 1, or any constant (last_free); the chunk symbol
 * (chunk >= 0: a step's tokens) may stand for a 1 at axis rank - at (the
 * tokens' axis: 1 for input_ids, 2 for logits [1, S, vocab]).
 */
static int
find_io(const mkc_vec *v, const char *name, mkc_dtype dt, bool last_free, int chunk, int at)
{
	for (int i = 0; i < v->n; i++) {
		const mkc_tensor *t = v->v[i];
		if (strcmp(t->name, name) || t->dtype != dt || t->rank < 1)
			continue;
		for (int d = 0; d < t->rank; d++) {
			bool last = d == t->rank - 1;
			if (d == t->rank - at && chunk >= 0 && mkc_dim_eq(t->shape[d], mkc_dim_sym(chunk)))
				continue;
			if (!mkc_dim_is_const(t->shape[d]) || (t->shape[d].c != 1 && !(last_free && last)))
				return -1;
		}
		return i;
	}
	return -1;
}

/*
 * An input attention_mask [1, past + new] (int64) beside KV caches kept in
 * place, which generate fills with ones (every position attended, as
 * onnxruntime-genai gives a single sequence), or -1.
 */
static int
find_mask(const mkc_graph *g)
{
	if (!g->states.n)
		return -1;
	const mkc_state *st = MKC_STATE(g, 0);
	mkc_dim all;
	if (!mkc_dim_add(mkc_dim_sym(st->sym), st->nnew, &all))
		return -1;
	for (int i = 0; i < g->inputs.n; i++) {
		const mkc_tensor *t = MKC_INPUT(g, i);
		if (!strcmp(t->name, "attention_mask") && t->dtype == MKC_DT_INT64 && t->rank == 2 &&
		    mkc_dim_eq(t->shape[0], mkc_dim_const(1)) && mkc_dim_eq(t->shape[1], all))
			return i;
	}
	return -1;
}

/*
 * What $P_generate needs: which input takes the token, which the position
 * and which the mask, and which output holds the logits (-1: none, and
 * generate says so at run time).
 */
static void
emit_generate_io(mkc_emitter *e)
{
	mkc_graph *g = e->p->g;
	int chunk = g->chunk_sym;
	int ids = find_io(&g->inputs, "input_ids", MKC_DT_INT64, false, chunk, 1);
	int pos = find_io(&g->inputs, "position_ids", MKC_DT_INT64, false, chunk, 1);
	/* every token's logits (mkc --all-logits): generate's one-token steps give one row */
	int lg = find_io(&g->outputs, "logits", MKC_DT_FLOAT, true, chunk, 2);
	/* a float16 model's logits (passes/half.c): generate's argmax widens them */
	int half = lg < 0 && (lg = find_io(&g->outputs, "logits", MKC_DT_FLOAT16, true, chunk, 2)) >= 0;
	int64_t vocab = lg >= 0 ? MKC_OUTPUT(g, lg)->shape[MKC_OUTPUT(g, lg)->rank - 1].c : 0;
	fprintf(e->f, "\n#define MKC_GEN_IDS %d\n#define MKC_GEN_POS %d\n#define MKC_GEN_MASK %d\n"
		"#define MKC_GEN_LOGITS %d\n#define MKC_GEN_LOGITS_F16 %d\n#define MKC_GEN_VOCAB %lldLL\n"
		"#define MKC_CAN_GENERATE %d\n", ids, pos, find_mask(g), lg, half, (long long)vocab,
		ids >= 0 && lg >= 0);
	/* the symbol of a step's token count: generate feeds the prompt in chunks */
	fprintf(e->f, "#define MKC_GEN_CHUNK_SYM %d\n", chunk);
}

static void
emit_syms(mkc_emitter *e, const mkc_emit_options *o)
{
	FILE *f = e->f;
	mkc_graph *g = e->p->g;
	fprintf(f, "\nstatic const char *const mkc_sym_names[MKC_NSYMS + 1] = {");
	for (int i = 0; i < g->syms.n; i++)
		fprintf(f, "\"%s\", ", mkc_cstr(g->ctx->arena, MKC_SYM(g, i), false));
	fprintf(f, "NULL};\nstatic const int64_t mkc_sym_max[MKC_NSYMS + 1] = {");
	for (int i = 0; i < g->syms.n; i++) {
		int64_t mx = mkc_graph_sym_max(g, i, e->p->tp.max_dim ? e->p->tp.max_dim : o->max_dim);
		fprintf(f, "%lld, ", (long long)mx);
	}
	fprintf(f, "0};\n");
}

/*
 * Tasks, events and queues as flat arrays, every plan's one after another:
 * plan k's task i is task0[k] + i of the file, its event j event0[k] + j,
 * its node n node0[k] + n; plan k's queue of worker w is queue
 * k * MKC_NWORKERS + w.
 */

/* The plan whose start in starts (task0, event0 or node0) is at or before c, the last such. */
static int
plan_of(const mkc_emitter *e, const int *starts, int c)
{
	int k = 0;
	while (k + 1 < e->nplans && c >= starts[k + 1])
		k++;
	return k;
}

/* Task c of the file; *k: its plan. */
static const mkc_task *
file_task(const mkc_emitter *e, int c, int *k)
{
	*k = plan_of(e, e->task0, c);
	return MKC_TASK(e->plans[*k], c - e->task0[*k]);
}

/* Node c of the file. */
static const mkc_node *
file_node(const mkc_emitter *e, int c)
{
	int k = plan_of(e, e->node0, c);
	return MKC_NODE(e->plans[k]->g, c - e->node0[k]);
}

/* The emitter writes plan k's nodes from now on (their tensor numbers). */
static void
use_plan(mkc_emitter *e, int k)
{
	e->p = e->plans[k];
	e->index = e->indexes[k];
}

/*
 * MKC_PLAN_SMEM(plan): the dynamic shared memory plan k's own tiles use, at
 * most MKC_DYN_SMEM. A launch that runs one plan (a step, generate's
 * decode loop) asks for that much alone, and what the SM does not give
 * shared memory it keeps as L1: a chunked file's one-token step otherwise
 * runs with the chunk's tiles' 100-150 KB taken from its L1.
 */
static void
emit_plan_smem(mkc_emitter *e)
{
	fprintf(e->f, "#define MKC_PLAN_SMEM(plan) (");
	for (int k = 0; k < e->nplans; k++) {
		use_plan(e, k);
		bool wide = false, mm = false, few = false;
		for (int c = e->node0[k]; c < e->node0[k + 1]; c++) {
			const mkc_node *n = file_node(e, c);
			wide = wide || mkc_emit_mma_wide(e, n);
			mm = mm || mkc_emit_mma(e, n) || mkc_emit_attn_mma(e, n);
			few = few || mkc_emit_few(e, n);
		}
		fprintf(e->f, "(plan) == %d ? %s : ", k,
			wide ? "MKC_MM_WIDE_SMEM" : mm ? "MKC_MM_SMEM" : few ? "MKC_FEW_SMEM" : "0");
	}
	fprintf(e->f, "MKC_DYN_SMEM)\n");
	use_plan(e, 0);
}

/* List i of plan k's lists of ints (a task's signals, ...): its length, and item j. */
typedef int (*plan_list)(const mkc_emitter *e, int k, int i, int j, int *len);

static int
task_signals(const mkc_emitter *e, int k, int i, int j, int *len)
{
	const mkc_task *t = MKC_TASK(e->plans[k], i);
	*len = t->nsignals;
	return j < *len ? e->event0[k] + t->signals[j] : 0;
}

static int
event_producers(const mkc_emitter *e, int k, int i, int j, int *len)
{
	const mkc_event *ev = MKC_EVENT(e->plans[k], i);
	*len = ev->nproducers;
	return j < *len ? e->task0[k] + ev->producers[j] : 0;
}

static int
queue_tasks(const mkc_emitter *e, int k, int w, int j, int *len)
{
	const mkc_plan *p = e->plans[k];
	*len = p->qlen[w];
	return j < *len ? e->task0[k] + p->queues[w][j]->id : 0;
}

/* How many tasks, events or queues plan k has (what a plan_list goes over). */
typedef int (*plan_count)(const mkc_plan *p);

static int
count_tasks(const mkc_plan *p)
{
	return p->tasks.n;
}

static int
count_events(const mkc_plan *p)
{
	return p->events.n;
}

static int
count_queues(const mkc_plan *p)
{
	return p->tp.nworkers;
}

/*
 * A table the workers read (dev) or one the host reads. Where the target
 * uploads its tables (upload_tables), a worker's table is written as host
 * data, NAME_h, and declared as a device array NAME that the model's
 * creation fills from it (MKC_DEVICE_TABLES, exec.cuh): nvcc writes an
 * initialised device array into its PTX a byte at a time and ptxas parses
 * it back, a quarter of the compile of a 1B-sized file.
 */
static void
table_open(const mkc_emitter *e, bool dev, const char *type, const char *name, const char *size)
{
	const bool up = dev && e->t->upload_tables;
	fprintf(e->f, "static const %s %s%s[%s] MKC_UNUSED = {", type, name, up ? "_h" : "", size);
}

/* Ends what table_open began with tail (the closing brace's line included). */
static void
table_close(mkc_emitter *e, bool dev, const char *type, const char *name, const char *size,
	    const char *tail)
{
	fputs(tail, e->f);
	if (!dev || !e->t->upload_tables)
		return;
	fprintf(e->f, "static __device__ %s %s[%s];\n", type, name, size);
	MKC_ASSERT(e->nuploads < MKC_MAX_UPLOADS);
	e->uploads[e->nuploads++] = name;
}

/*
 * Every plan's lists as two tables (dev: the workers'): START[N + 1],
 * where list i begins in LIST and, last, where they all end; and LIST, the
 * lists' items one after another, then -1.
 */
static void
put_lists(mkc_emitter *e, bool dev, const char *start, const char *N, const char *list,
	  plan_count count, plan_list get)
{
	FILE *f = e->f;
	mkc_arena *a = e->plans[0]->g->ctx->arena;
	int total = 0, len, c = 0;
	const char *n1 = mkc_arena_printf(a, "%s + 1", N);
	table_open(e, dev, "int", start, n1);
	for (int k = 0; k < e->nplans; k++)
		for (int i = 0; i < count(e->plans[k]); i++, c++) {
			fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", total);
			get(e, k, i, 0, &len);
			total += len;
		}
	table_close(e, dev, "int", start, n1, mkc_arena_printf(a, " %d\n};\n", total));
	const char *size = mkc_arena_printf(a, "%d", total + 1);
	table_open(e, dev, "int", list, size);
	c = 0;
	for (int k = 0; k < e->nplans; k++)
		for (int i = 0; i < count(e->plans[k]); i++) {
			get(e, k, i, 0, &len);
			for (int j = 0; j < len; j++, c++)
				fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", get(e, k, i, j, &len));
		}
	table_close(e, dev, "int", list, size, " -1\n};\n");
}

static void
emit_schedule(mkc_emitter *e)
{
	FILE *f = e->f;
	/* the workers' tables live where the workers run (table_open); the
	 * event producer lists serve the C target's shuffled queue, on the host */
	mkc_arena *a = e->plans[0]->g->ctx->arena;
	const int ntasks = e->task0[e->nplans], nnodes = e->node0[e->nplans];
	fprintf(f, "\nstatic const char *const mkc_task_name[MKC_NTASKS] MKC_UNUSED = {\n");
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		fprintf(f, "\t\"%s (%s) tile %d/%d%s%s%s\",\n", mkc_cstr(a, t->node->name, false),
			mkc_cstr(a, t->node->op_type, false), t->tile, t->ntiles, k ? ", " : "",
			k ? plan_name(e, k) : "", k ? " plan" : "");
	}
	/* what a step that fails in a node names (MKC_FAIL_INDEX), on the host */
	fprintf(f, "};\nstatic const char *const mkc_node_desc[%d] MKC_UNUSED = {\n", nnodes + 1);
	for (int c = 0; c < nnodes; c++) {
		const mkc_node *n = file_node(e, c);
		fprintf(f, "\t\"node '%s' (%s)\",\n", mkc_cstr(a, n->name, false),
			mkc_cstr(a, n->op_type, false));
	}
	fputs("\tNULL\n};\n", f);
	table_open(e, true, "int", "mkc_task_wait", "MKC_NTASKS");
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		MKC_ASSERT(t->nwaits <= 1);
		fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", t->nwaits ? e->event0[k] + t->waits[0] : -1);
	}
	table_close(e, true, "int", "mkc_task_wait", "MKC_NTASKS", "\n};\n");
	put_lists(e, true, "mkc_task_sig_start", "MKC_NTASKS", "mkc_task_sig", count_tasks,
		  task_signals);
	table_open(e, true, "int", "mkc_event_threshold", "MKC_NEVENTS + 1");
	for (int k = 0, c = 0; k < e->nplans; k++)
		for (int i = 0; i < e->plans[k]->events.n; i++, c++)
			fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", MKC_EVENT(e->plans[k], i)->threshold);
	table_close(e, true, "int", "mkc_event_threshold", "MKC_NEVENTS + 1", " 0\n};\n");
	put_lists(e, false, "mkc_event_prod_start", "MKC_NEVENTS", "mkc_event_prod", count_events,
		  event_producers);
	put_lists(e, true, "mkc_queue_start", "MKC_NPLANS * MKC_NWORKERS", "mkc_queue", count_queues,
		  queue_tasks);
	/* where each plan's tasks begin (the C target's shuffled queue takes a plan's) */
	fprintf(f, "static const int mkc_plan_task0[MKC_NPLANS + 1] MKC_UNUSED = {");
	for (int k = 0; k <= e->nplans; k++)
		fprintf(f, "%d%s", e->task0[k], k < e->nplans ? ", " : "};\n");
}

/*
 * --profile: the host tables runtime/profile.h names tasks with (each
 * node's name and op; each task's node, tile, event, and the boxes it reads
 * and writes, for the bytes it moves). Without it nothing is written, and
 * the runtime's timeline code is compiled out.
 */
static void
emit_profile(mkc_emitter *e, const mkc_emit_options *o)
{
	FILE *f = e->f;
	mkc_arena *a = e->plans[0]->g->ctx->arena;
	if (o->profile_steps <= 0)
		return;
	const int ntasks = e->task0[e->nplans], nnodes = e->node0[e->nplans];
	fprintf(f, "\n#define MKC_PROFILE 1\n#define MKC_PROFILE_STEPS %d\n"
		"static const char *const mkc_prof_node_name[%d] = {", o->profile_steps, nnodes + 1);
	for (int c = 0; c < nnodes; c++)
		fprintf(f, "\n\t\"%s\",", mkc_cstr(a, file_node(e, c)->name, false));
	fprintf(f, " NULL\n};\nstatic const char *const mkc_prof_node_op[%d] = {", nnodes + 1);
	for (int c = 0; c < nnodes; c++) {
		const mkc_node *n = file_node(e, c);
		fprintf(f, "%s\"%s%s%s\",", c % 8 ? " " : "\n\t", mkc_cstr(a, n->domain, false),
			*n->domain ? "." : "", mkc_cstr(a, n->op_type, false));
	}
	fputs(" NULL\n};\nstatic const mkc_rt_prof_task mkc_prof_task[MKC_NTASKS + 1] = {", f);
	int nr = 0, nd = 0;
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		fprintf(f, "%s{%d, %d, %d, %d, %d},", c % 4 ? " " : "\n\t", e->node0[k] + t->node->id,
			t->tile, t->ntiles, t->nwaits ? e->event0[k] + t->waits[0] : -1, nr);
		nr += t->nreads + t->nwrites;
	}
	fprintf(f, "\n\t{-1, 0, 0, -1, %d}\n};\nstatic const mkc_rt_prof_region mkc_prof_region[%d] = {",
		nr, nr + 1);
	for (int c = 0, k, x = 0; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		for (int j = 0; j < t->nreads + t->nwrites; j++, x++) {
			const mkc_region *r = j < t->nreads ? &t->reads[j] : &t->writes[j - t->nreads];
			fprintf(f, "%s{%d, %d, %d},", x % 6 ? " " : "\n\t", e->indexes[k][r->t->id],
				j >= t->nreads, nd);
			nd += 2 * r->t->rank;
		}
	}
	fprintf(f, "\n\t{-1, 0, %d}\n};\nstatic const mkc_rt_dim mkc_prof_dim[%d] = {", nd, nd + 1);
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		for (int j = 0; j < t->nreads + t->nwrites; j++) {
			const mkc_region *r = j < t->nreads ? &t->reads[j] : &t->writes[j - t->nreads];
			fputs("\n\t", f);
			for (int d = 0; d < r->t->rank; d++) {
				put_dim(f, r->box.lo[d]);
				fputs(", ", f);
				put_dim(f, r->box.hi[d]);
				fputs(", ", f);
			}
		}
	}
	fputs("\n\t{0, {0, 0}, {-1, -1}}\n};\n", f);
}

/*
 * The distinct dimensions of a file's task boxes, in the order first met,
 * and a hash of them (open addressing; slot -1 empty) for dim_index.
 */
typedef struct {
	mkc_dim *dims;
	int n, cap;    /* dims held, room for */
	int *slot;     /* 2 * cap slots */
} dim_set;

/* d's terms as put_dim writes them: an unused term's symbol -1 */
static mkc_dim
dim_written(mkc_dim d)
{
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (!d.k[i])
			d.sym[i] = -1;
	return d;
}

static unsigned
dim_hash(mkc_dim d)
{
	uint64_t h = 1469598103934665603ull;
	const int64_t v[5] = {d.c, d.k[0], d.k[1], d.sym[0], d.sym[1]};
	for (int i = 0; i < 5; i++)
		h = (h ^ (uint64_t)v[i]) * 1099511628211ull;
	return (unsigned)(h ^ h >> 32);
}

/* The slot of d in s: the one that holds it, or the empty one where it goes. */
static unsigned
dim_slot(const dim_set *s, mkc_dim d)
{
	const unsigned mask = (unsigned)(2 * s->cap - 1);
	unsigned h = dim_hash(d) & mask;
	while (s->slot[h] >= 0 && !mkc_dim_eq(s->dims[s->slot[h]], d))
		h = (h + 1) & mask;
	return h;
}

/* Where d is in s, added if it is not yet. */
static int
dim_index(mkc_arena *a, dim_set *s, mkc_dim d)
{
	d = dim_written(d);
	if (s->n == s->cap) {   /* grow: the dims copied, the slots made again */
		const mkc_dim *old = s->dims;
		s->cap = s->cap ? 2 * s->cap : 256;
		s->dims = mkc_arena_alloc(a, (size_t)s->cap * sizeof *s->dims);
		s->slot = mkc_arena_alloc(a, (size_t)2 * s->cap * sizeof *s->slot);
		for (int i = 0; i < 2 * s->cap; i++)
			s->slot[i] = -1;
		for (int i = 0; i < s->n; i++) {
			s->dims[i] = old[i];
			s->slot[dim_slot(s, old[i])] = i;
		}
	}
	const unsigned h = dim_slot(s, d);
	if (s->slot[h] < 0) {
		s->dims[s->n] = d;
		s->slot[h] = s->n++;
	}
	return s->slot[h];
}

/*
 * Table NAME of n dimensions as NAME_ix, indexes into mkc_dim_set: on a GPU
 * the host fills the device array NAME from them as it copies the tables
 * (exec.cuh's MKC_DEVICE_DIMS); the C target reads mkc_dim_set through
 * them. Written as the dimensions themselves, the 1B shape's chunked
 * file's 299,802 (1,326 distinct) took nvcc's front ends about 17 s (2
 * cores), as indexes under a second; the file's nvcc 65-76 s -> 50-65
 * (bench/RESULTS.md session 42).
 */
static void
put_dim_indexes(mkc_emitter *e, const char *name, const int *ix, int n)
{
	FILE *f = e->f;
	fprintf(f, "static const int %s_ix[%d] MKC_UNUSED = {", name, n);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d,", i % 16 ? " " : "\n\t", ix[i]);
	fputs("\n};\n", f);
	if (e->t->upload_tables)
		fprintf(f, "static __device__ mkc_rt_dim %s[%d];\n", name, n);
}

/*
 * Each task's node and output box, before the runtime (a GPU worker reads
 * them ahead of the task's wait).
 */
static void
emit_boxes(mkc_emitter *e)
{
	FILE *f = e->f;
	/*
	 * Each task's output box is data (c + k * sym per bound), and the switch
	 * is over nodes, not tasks: a 1B-sized plan has 8000 tasks but 400
	 * nodes, and a switch of 8000 inlined calls takes nvcc longer than
	 * anyone should wait.
	 */
	mkc_arena *a = e->plans[0]->g->ctx->arena;
	const int ntasks = e->task0[e->nplans];
	fputs("\n", f);
	table_open(e, true, "int", "mkc_task_node", "MKC_NTASKS");
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", e->node0[k] + t->node->id);
	}
	table_close(e, true, "int", "mkc_task_node", "MKC_NTASKS", "\n};\n");
	table_open(e, true, "int", "mkc_task_box_start", "MKC_NTASKS + 1");
	int nb = 0;
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", nb);
		nb += 2 * (t->node->out[0] ? t->node->out[0]->rank : 0);
	}
	table_close(e, true, "int", "mkc_task_box_start", "MKC_NTASKS + 1",
		    mkc_arena_printf(a, " %d\n};\n", nb));
	/* the boxes and extents as indexes into the distinct dimensions (a dim set) */
	dim_set ds = {0};
	int *box = mkc_arena_alloc(a, (size_t)(nb + 1) * sizeof *box);
	for (int c = 0, k, x = 0; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		int rank = t->node->out[0] ? t->node->out[0]->rank : 0;
		for (int d = 0; d < rank; d++) {
			box[x++] = dim_index(a, &ds, t->out.lo[d]);
			box[x++] = dim_index(a, &ds, t->out.hi[d]);
		}
	}
	/* both tables end in a dimension of 0 */
	const int zero = dim_index(a, &ds, (mkc_dim){.c = 0, .sym = {-1, -1}});
	box[nb] = zero;
	/* a clamped task's output extent (task.h's clamp): where in mkc_task_ext, or -1 */
	table_open(e, true, "int", "mkc_task_clamp", "MKC_NTASKS");
	int ne = 0;
	for (int c = 0, k; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		fprintf(f, "%s%d,", c % 16 ? " " : "\n\t", t->clamp ? ne : -1);
		ne += t->clamp ? t->node->out[0]->rank : 0;
	}
	table_close(e, true, "int", "mkc_task_clamp", "MKC_NTASKS", "\n};\n");
	int *ext = mkc_arena_alloc(a, (size_t)(ne + 1) * sizeof *ext);
	for (int c = 0, k, x = 0; c < ntasks; c++) {
		const mkc_task *t = file_task(e, c, &k);
		for (int d = 0; t->clamp && d < t->node->out[0]->rank; d++)
			ext[x++] = dim_index(a, &ds, t->node->out[0]->shape[d]);
	}
	ext[ne] = zero;
	fprintf(f, "static const mkc_rt_dim mkc_dim_set[%d] MKC_UNUSED = {", ds.n);
	for (int i = 0; i < ds.n; i++) {
		fputs(i % 4 ? " " : "\n\t", f);
		put_dim(f, ds.dims[i]);
		fputs(",", f);
	}
	fputs("\n};\n", f);
	put_dim_indexes(e, "mkc_task_box", box, nb + 1);
	put_dim_indexes(e, "mkc_task_ext", ext, ne + 1);
	fputs(e->t->upload_tables ? "#define MKC_TASK_DIM(t, i) (&(t)[i])\n"
				  : "#define MKC_TASK_DIM(t, i) (&mkc_dim_set[t##_ix[i]])\n", f);
	/* what the model's creation copies to the device (exec.cuh) */
	if (e->t->upload_tables) {
		fputs("#define MKC_DEVICE_TABLES(X)", f);
		for (int i = 0; i < e->nuploads; i++)
			fprintf(f, " X(%s)", e->uploads[i]);
		fputs("\n#define MKC_DEVICE_DIMS(X) X(mkc_task_box) X(mkc_task_ext)\n", f);
	}
}

/*
 * Tile functions, one per form of node: a body names its tensors through
 * slots (m->buf[bi[k]]), so the nodes of one form (the q projections of
 * every layer) have the same text and share one function, called with
 * their own slot values. A GPU runs whatever function a task needs; with a
 * function per node, every task started on code that SM had never run
 * (instruction fetches from L2, about 3.5 us a task on an H200); with one
 * per form the bodies stay in the instruction caches, and the file is
 * smaller and compiles faster.
 */
typedef struct {
	char *text;
	size_t len;
	const mkc_node *first;      /* the first node of this form */
	int count;                  /* how many */
} body;

static int
emit_nodes(mkc_emitter *e)
{
	FILE *f = e->f;
	mkc_arena *a = e->plans[0]->g->ctx->arena;
	const int total = e->node0[e->nplans];   /* every plan's nodes, one after another */
	body *bodies = mkc_arena_alloc(a, sizeof *bodies * (size_t)(total + 1));
	int *form = mkc_arena_alloc(a, sizeof *form * (size_t)(total + 1));
	int **slots = mkc_arena_alloc(a, sizeof *slots * (size_t)(total + 1));
	int *nslots = mkc_arena_alloc(a, sizeof *nslots * (size_t)(total + 1));
	int nbody = 0;
	for (int i = 0; i < total; i++) {
		use_plan(e, plan_of(e, e->node0, i));
		const mkc_node *n = file_node(e, i);
		char *text = NULL;
		size_t len = 0;
		form[i] = -1;
		if (is_view_node(e->p, n))
			continue;   /* no task: its readers read the base's buffer */
		FILE *m = open_memstream(&text, &len);
		if (!m)
			return mkc_error(e->p->g->ctx, "cannot write a tile function: out of memory");
		e->f = m;
		e->slot = mkc_arena_alloc(a, sizeof *e->slot * (size_t)(n->nin + n->nout + 1));
		e->nslot = 0;
		int rc = mkc_emit_node(e, n);
		fclose(m);
		e->f = f;
		if (rc != 0) {
			free(text);
			return -1;
		}
		slots[i] = e->slot;
		nslots[i] = e->nslot;
		int b = 0;
		while (b < nbody && (bodies[b].len != len || memcmp(bodies[b].text, text, len) != 0))
			b++;
		if (b == nbody)
			bodies[nbody++] = (body){text, len, n, 0};
		else
			free(text);
		bodies[b].count++;
		form[i] = b;
	}
	use_plan(e, 0);
	for (int k = 0; k < nbody; k++) {
		const mkc_node *n = bodies[k].first;
		fprintf(f, "\n/* ONNX node '%s' (%s%s%s) */\n", mkc_ccomment(a, n->name),
			mkc_ccomment(a, n->domain), *n->domain ? "." : "", mkc_ccomment(a, n->op_type));
		if (bodies[k].count > 1)
			fprintf(f, "/* and %d more node%s of this form */\n", bodies[k].count - 1,
				bodies[k].count > 2 ? "s" : "");
		fprintf(f, "%s%s void\nmkc_body_%d(struct mkc_model *m, int node, const int64_t *lo, "
			"const int64_t *hi, const int *bi)\n{\n\t(void)node;\n\t(void)bi;\n",
			e->t->fn_qual, e->t->node_qual, k);
		fwrite(bodies[k].text, 1, bodies[k].len, f);
		fputs("}\n", f);
		free(bodies[k].text);
	}
	/*
	 * A task is its box (mkc_task_bounds) and its node's function
	 * (mkc_run_node): a GPU worker evaluates the box before it waits for
	 * the task's event, so that no table load is left between the event
	 * and the body's first load of data.
	 */
	fprintf(f, "\n%s void\n"
		"mkc_task_bounds(const struct mkc_model *m, int task, int64_t *lo, int64_t *hi)\n{\n"
		"\tconst int b = MKC_RO(&mkc_task_box_start[task]), c = MKC_RO(&mkc_task_clamp[task]);\n"
		"\tfor (int d = 0; d < (MKC_RO(&mkc_task_box_start[task + 1]) - b) / 2; d++) {\n"
		"\t\tlo[d] = mkc_rt_dimv_ro(MKC_TASK_DIM(mkc_task_box, b + 2 * d), m->sym);\n"
		"\t\thi[d] = mkc_rt_dimv_ro(MKC_TASK_DIM(mkc_task_box, b + 2 * d + 1), m->sym);\n"
		"\t\tif (c >= 0) {   /* a block of rows may pass the output's end */\n"
		"\t\t\tconst int64_t e = mkc_rt_dimv_ro(MKC_TASK_DIM(mkc_task_ext, c + d), m->sym);\n"
		"\t\t\tlo[d] = lo[d] < e ? lo[d] : e;\n"
		"\t\t\thi[d] = hi[d] < e ? hi[d] : e;\n\t\t}\n\t}\n}\n\n"
		"%s void\nmkc_run_node(struct mkc_model *m, int node, const int64_t *lo, const int64_t *hi)\n"
		"{\n\tswitch (node) {\n", e->t->fn_qual, e->t->fn_qual);
	for (int i = 0; i < total; i++) {
		if (form[i] < 0)
			continue;
		fprintf(f, "\tcase %d: {\n\t\tconst int bi[%d] = {", i, nslots[i] + 1);
		for (int k = 0; k < nslots[i]; k++)
			fprintf(f, "%d, ", slots[i][k]);
		fprintf(f, "-1};\n\t\tmkc_body_%d(m, node, lo, hi, bi);\n\t\tbreak;\n\t}\n", form[i]);
	}
	fputs("\t}\n}\n", f);
	fprintf(f, "\n%s void MKC_UNUSED\nmkc_run_task(struct mkc_model *m, int task)\n{\n"
		"\tint64_t lo[MKC_RANK], hi[MKC_RANK];\n\tmkc_task_bounds(m, task, lo, hi);\n"
		"\tmkc_run_node(m, mkc_task_node[task], lo, hi);\n}\n", e->t->fn_qual);
	return 0;
}

/* Tensors whose values are symbolic (past_len + 1) are written each step. */
static void
emit_symvals(mkc_emitter *e)
{
	FILE *f = e->f;
	fprintf(f, "\n%s void\nmkc_fill_symvals(struct mkc_model *m)\n{\n", e->t->fn_qual);
	for (int p = 0; p < e->nplans; p++) {   /* every plan's: cheap, and a step needs its own */
		const mkc_graph *g = e->plans[p]->g;
		for (int i = 0; i < g->tensors.n; i++) {
			const mkc_tensor *t = MKC_TENSOR(g, i);
			if (e->indexes[p][i] < 0 || rt_kind(t) != 4)
				continue;
			const char *ct = mkc_ctype(e, t->dtype);
			for (int64_t k = 0; k < t->nsymval; k++) {
				char b[96];
				fprintf(f, "\t((%s *)m->buf[%d])[%lld] = (%s)%s;\n", ct, e->indexes[p][i],
					(long long)k, ct, mkc_dimx(g, t->symval[k], b, sizeof b));
			}
		}
	}
	fprintf(f, "\t(void)m;\n}\n");
}

void
mkc_emit_head(FILE *f, const mkc_target *t, const char *arch, const char *prefix)
{
	fputs(t->headers, f);
	if (t->warp)
		fprintf(f, "#define MKC_WARP %d\n", t->warp);
	if (t->archs)   /* "$A": the architecture the device code is for */
		put_subst(f, t->arch_guard, 'A', arch ? arch : t->archs[0]);
	fprintf(f, "#define MKC_PROF_TARGET \"%s\"\n", t->name);
	for (const char *const *r = t->prelude; r && *r; r++)
		fputs(mkc_runtime_text(*r), f);
	fputs(mkc_runtime_text("runtime/limits.h"), f);
	fputs(mkc_runtime_text("runtime/common.h"), f);
	fputs(mkc_runtime_text("runtime/bf16.h"), f);
	fputs(mkc_runtime_text("runtime/sample.h"), f);
	fputs(mkc_runtime_text("runtime/sched.h"), f);
	put_template(f, mkc_runtime_text("runtime/api_h.h"), prefix);
}

/*
 * The plans' tasks, events and nodes numbered one after another; their
 * tensors numbered; the syms of a later plan checked to be plan 0's (one
 * m->sym[] serves both). Returns the tensor count, or -1.
 */
static int
number_plans(mkc_emitter *e)
{
	int n = 0;
	for (int k = 0; k < e->nplans; k++) {
		const mkc_plan *p = e->plans[k];
		e->task0[k + 1] = e->task0[k] + p->tasks.n;
		e->event0[k + 1] = e->event0[k] + p->events.n;
		e->node0[k + 1] = e->node0[k] + p->g->nodes.n;
		const mkc_graph *g0 = e->plans[0]->g;
		bool same = p->g->syms.n == g0->syms.n && p->tp.nworkers == e->plans[0]->tp.nworkers;
		for (int s = 0; same && s < g0->syms.n; s++)
			same = strcmp(MKC_SYM(p->g, s), MKC_SYM(g0, s)) == 0;
		if (!same)
			return mkc_error(p->g->ctx, "%s: the %s plan has other symbols or "
					 "workers than the chunk's", p->g->path, plan_name(e, k));
		if ((n = number_tensors(e, k, n)) < 0)
			return -1;
	}
	use_plan(e, 0);
	return n;
}

static int
emit_source(mkc_emitter *e, const mkc_emit_options *o, const char *prefix, const char *hname)
{
	FILE *f = e->f;
	mkc_plan *p = e->p;
	mkc_graph *g = p->g;
	int ntensors = number_plans(e);
	if (ntensors < 0)
		return -1;
	int64_t arena = 0;
	for (int k = 0; k < e->nplans; k++)   /* the plans run one at a time: one arena */
		arena = e->plans[k]->arena_bytes > arena ? e->plans[k]->arena_bytes : arena;
	fprintf(f, "/*\n * %s - generated by mkc %s; do not edit.\n * command: %s\n"
		" * model: %s (FNV-1a %016llx)\n * target: %s; %d workers, %d tasks, %d events",
		mkc_ccomment(g->ctx->arena, o->out_path), MKC_VERSION,
		mkc_ccomment(g->ctx->arena, o->command_line ? o->command_line : "(library call)"),
		mkc_ccomment(g->ctx->arena, g->path),
		(unsigned long long)hash_file(g->path), e->t->name, p->tp.nworkers, p->tasks.n,
		p->events.n);
	for (int k = 1; k + 1 < e->nplans; k++)
		fprintf(f, ";\n * a step of 2 to %lld tokens: its own plan, %d tasks, %d events",
			(long long)e->plans[k]->g->max_chunk, e->plans[k]->tasks.n,
			e->plans[k]->events.n);
	if (e->nplans > 1)
		fprintf(f, ";\n * a step of one token: its own plan, %d tasks, %d events",
			e->plans[e->nplans - 1]->tasks.n, e->plans[e->nplans - 1]->events.n);
	fprintf(f, "\n * API: see %s\n */\n", hname);
	mkc_emit_head(f, e->t, o->arch, prefix);
	fprintf(f, "\n#define MKC_NSYMS %d\n#define MKC_NTENSORS %d\n#define MKC_NTASKS %d\n"
		"#define MKC_NEVENTS %d\n#define MKC_NWORKERS %d\n#define MKC_NINPUTS %d\n"
		"#define MKC_NOUTPUTS %d\n#define MKC_ARENA_BYTES %lldLL\n#define MKC_NCACHES %d\n"
		"#define MKC_NPLANS %d\n",
		g->syms.n, ntensors, e->task0[e->nplans], e->event0[e->nplans], p->tp.nworkers,
		g->inputs.n, g->outputs.n, (long long)arena, g->states.n, e->nplans);
	/* --max-seqs: sequences, and the caches' pages (runtime/host.h keeps the table) */
	int64_t page = g->max_seqs ? g->page_size : 0;
	fprintf(f, "#define MKC_MAX_SEQS %lld\n#define MKC_PAGE %lldLL\n#define MKC_SEQ_PAGES %lldLL\n"
		"#define MKC_NPAGES %lldLL\n", (long long)g->max_seqs, (long long)page,
		(long long)(page ? (g->kv_cap + page - 1) / page : 0),
		(long long)(page ? g->cache_pages : 0));
	emit_syms(e, o);
	if (emit_tensors(e, ntensors, o) != 0)
		return -1;
	emit_io(e);
	emit_generate_io(e);
	/* which plan a step runs: a chunked file's one-token plan for a step of
	 * one token, else the last few-token plan that holds its tokens (the
	 * twins hold fewer and fewer, driver.c's mkc_run_twins) */
	fprintf(f, "#define MKC_STEP_PLAN(sym) (");
	if (e->nplans > 1)
		fprintf(f, "(sym)[%d] == 1 ? %d : ", g->chunk_sym, e->nplans - 1);
	for (int k = e->nplans - 2; k >= 1; k--)
		fprintf(f, "(sym)[%d] <= %lld ? %d : ", g->chunk_sym,
			(long long)e->plans[k]->g->max_chunk, k);
	fprintf(f, "0)\n");
	fprintf(f, "#define MKC_DECODE_PLAN %d\n", e->nplans - 1);
	const int nnodes = e->node0[e->nplans];
	for (int c = 0; c < nnodes && !e->mma; c++) {
		use_plan(e, plan_of(e, e->node0, c));
		e->mma = mkc_emit_mma(e, file_node(e, c)) || mkc_emit_few(e, file_node(e, c));
	}
	bool dyn = e->mma;
	for (int c = 0; c < nnodes && !dyn; c++) {
		use_plan(e, plan_of(e, e->node0, c));
		dyn = mkc_emit_attn_mma(e, file_node(e, c));
	}
	bool wide = false;
	for (int c = 0; c < nnodes && e->mma && !wide; c++) {
		use_plan(e, plan_of(e, e->node0, c));
		wide = mkc_emit_mma_wide(e, file_node(e, c));
	}
	use_plan(e, 0);
	/* a few-token tile's MKC_FEW_SMEM is less than MKC_MM_SMEM (emit_ops.c) */
	fprintf(f, "#define MKC_DYN_SMEM %s\n",
		wide ? "MKC_MM_WIDE_SMEM" : dyn ? "MKC_MM_SMEM" : "0");
	emit_plan_smem(e);
	emit_schedule(e);
	emit_boxes(e);
	emit_profile(e, o);
	fprintf(f, "\nstruct mkc_model;\n%s void mkc_run_task(struct mkc_model *m, int task);\n"
		"%s void mkc_task_bounds(const struct mkc_model *m, int task, int64_t *lo, int64_t *hi);\n"
		"%s void mkc_run_node(struct mkc_model *m, int node, const int64_t *lo, const int64_t *hi);\n"
		"%s void mkc_fill_symvals(struct mkc_model *m);\n", e->t->fn_qual, e->t->fn_qual,
		e->t->fn_qual, e->t->fn_qual);
	const char *texts[MKC_MAX_TEXTS];
	mkc_target_runtime(e->t, texts);
	for (const char **r = texts; *r; r++)
		put_template(f, mkc_runtime_text(*r), prefix);
	if (emit_nodes(e) != 0)
		return -1;
	emit_symvals(e);
	put_template(f, mkc_runtime_text(e->t->api), prefix);
	return 0;
}

static FILE *
open_temp(mkc_ctx *c, const char *path, char **tmp)
{
	*tmp = mkc_arena_printf(c->arena, "%s.tmpXXXXXX", path);
	int fd = mkstemp(*tmp);
	if (fd < 0) {
		mkc_error(c, "%s: cannot write: %s", path, strerror(errno));
		*tmp = NULL;
		return NULL;
	}
	mode_t mask = umask(0);   /* mkstemp makes 0600; give the usual 0666 & ~umask */
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		mkc_error(c, "%s: cannot write: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

/*
 * The two destinations, checked before anything is written: each is absent
 * or a regular file (never a device, FIFO or folder to be replaced), and
 * they are two files (-o m.h would make the header overwrite the source).
 */
static int
check_destinations(mkc_ctx *c, const char *out, const char *hpath)
{
	struct stat so, sh;
	bool has_o = stat(out, &so) == 0, has_h = stat(hpath, &sh) == 0;
	if (strcmp(out, hpath) == 0 || (has_o && has_h && so.st_dev == sh.st_dev &&
					so.st_ino == sh.st_ino))
		return mkc_error(c, "%s: the output and its header %s would be the same file; "
				 "name the output .c or .cu", out, hpath);
	if (has_o && !S_ISREG(so.st_mode))
		return mkc_error(c, "%s: cannot write: it exists and is not a regular file", out);
	if (has_h && !S_ISREG(sh.st_mode))
		return mkc_error(c, "%s: cannot write the header: it exists and is not a regular file",
				 hpath);
	return 0;
}

int
mkc_emit(mkc_plan *const *plans, int nplans, const mkc_target *t, const mkc_emit_options *o)
{
	mkc_plan *p = plans[0];
	MKC_ASSERT(nplans >= 1 && nplans <= MKC_MAX_PLANS);
	mkc_ctx *c = p->g->ctx;
	if (t->unwritten)
		return mkc_error(c, "%s: %s; nothing was written to %s", p->g->path, t->unwritten,
				 o->out_path);
	const char *prefix = o->prefix ? o->prefix : prefix_of(c->arena, o->out_path);
	const char *bad = mkc_emit_name_problem(prefix);
	if (bad)
		return mkc_error(c, "--name '%s' %s", mkc_cstr(c->arena, prefix, false), bad);
	const char *hpath = header_path(c->arena, o->out_path);
	const char *hname = strrchr(hpath, '/') ? strrchr(hpath, '/') + 1 : hpath;
	if (check_destinations(c, o->out_path, hpath) != 0)
		return -1;
	char *ctmp = NULL, *htmp = NULL;
	FILE *cf = open_temp(c, o->out_path, &ctmp);
	FILE *hf = cf ? open_temp(c, hpath, &htmp) : NULL;
	int rc = -1;
	if (cf && hf) {
		mkc_emitter e = {.f = cf, .p = p, .t = t, .nplans = nplans};
		for (int k = 0; k < nplans; k++)
			e.plans[k] = plans[k];
		fprintf(hf, "/* %s - generated by mkc %s from %s; do not edit. */\n"
			"#ifndef %s_H\n#define %s_H\n", mkc_ccomment(c->arena, hname), MKC_VERSION,
			mkc_ccomment(c->arena, p->g->path), prefix, prefix);
		put_template(hf, mkc_runtime_text("runtime/api_h.h"), prefix);
		fprintf(hf, "#endif\n");
		rc = emit_source(&e, o, prefix, hname);
	}
	bool io_ok = !(cf && ferror(cf)) && !(hf && ferror(hf));
	io_ok &= !cf || fclose(cf) == 0;
	io_ok &= !hf || fclose(hf) == 0;
	if (rc == 0 && !io_ok)
		rc = mkc_error(c, "%s: write failed: %s", o->out_path, strerror(errno));
	if (rc == 0 && rename(ctmp, o->out_path) != 0)
		rc = mkc_error(c, "%s: cannot rename into place: %s", o->out_path, strerror(errno));
	else if (rc == 0 && rename(htmp, hpath) != 0) {
		/* a source without its header is no output: take it back */
		rc = mkc_error(c, "%s: cannot rename into place: %s", hpath, strerror(errno));
		unlink(o->out_path);
	}
	if (rc != 0) {
		if (ctmp)
			unlink(ctmp);
		if (htmp)
			unlink(htmp);
	}
	return rc;
}
