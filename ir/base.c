/* base.c - arena, arrays, string map, diagnostics. See base.h. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

void
mkc_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "mkc: internal error: %s:%d: assertion '%s' failed\n",
		file, line, what);
	abort();
}

static void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "mkc: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

void *
mkc_zalloc(size_t n)
{
	void *p = calloc(n ? n : 1, 1);
	if (!p) {
		fprintf(stderr, "mkc: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

/* Arena: a list of blocks; big requests get a block of their own. */
enum { BLOCK = 1 << 16 };

typedef struct block {
	struct block *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
} block;

typedef struct cleanup {
	struct cleanup *next;
	void (*fn)(void *);
	void *arg;
} cleanup;

struct mkc_arena {
	block *head;
	size_t total;
	cleanup *cleanups;
};

mkc_arena *
mkc_arena_create(void)
{
	mkc_arena *a = xmalloc(sizeof *a);
	a->head = NULL;
	a->total = 0;
	a->cleanups = NULL;
	return a;
}

void
mkc_arena_destroy(mkc_arena *a)
{
	if (!a)
		return;
	for (cleanup *c = a->cleanups; c; c = c->next)
		c->fn(c->arg);
	for (block *b = a->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

void *
mkc_arena_alloc(mkc_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	block *b = a->head;
	if (!b || b->size - b->used < n) {
		size_t size = n > BLOCK / 4 ? n : BLOCK;
		b = xmalloc(sizeof *b + size);
		b->size = size;
		b->used = 0;
		if (size == n && a->head) {
			/* keep filling the current block after a big one */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
		a->total += size;
	}
	void *p = b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

char *
mkc_arena_strndup(mkc_arena *a, const char *s, size_t n)
{
	char *p = mkc_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *
mkc_arena_strdup(mkc_arena *a, const char *s)
{
	return mkc_arena_strndup(a, s, strlen(s));
}

char *
mkc_arena_printf(mkc_arena *a, const char *fmt, ...)
{
	va_list ap, aq;
	va_start(ap, fmt);
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = mkc_arena_alloc(a, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, aq);
	va_end(aq);
	return p;
}

void
mkc_arena_on_destroy(mkc_arena *a, void (*fn)(void *), void *arg)
{
	cleanup *c = mkc_arena_alloc(a, sizeof *c);
	c->fn = fn;
	c->arg = arg;
	c->next = a->cleanups;
	a->cleanups = c;
}

size_t
mkc_arena_used(const mkc_arena *a)
{
	return a->total;
}

void
mkc_vec_push(mkc_arena *a, mkc_vec *v, void *p)
{
	if (v->n == v->cap) {
		int cap = v->cap ? 2 * v->cap : 8;
		void **nv = mkc_arena_alloc(a, (size_t)cap * sizeof *nv);
		if (v->n)
			memcpy(nv, v->v, (size_t)v->n * sizeof *nv);
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = p;
}

void
mkc_vec_remove(mkc_vec *v, const void *p)
{
	int k = 0;
	for (int i = 0; i < v->n; i++)
		if (v->v[i] != p)
			v->v[k++] = v->v[i];
	v->n = k;
}

static uint64_t
hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int
slot(const mkc_map *m, const char *key)
{
	int mask = m->cap - 1;
	int i = (int)(hash(key) & (uint64_t)mask);
	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & mask;
	return i;
}

void *
mkc_map_get(const mkc_map *m, const char *key)
{
	if (!m->cap)
		return NULL;
	int i = slot(m, key);
	return m->keys[i] ? m->vals[i] : NULL;
}

void
mkc_map_put(mkc_arena *a, mkc_map *m, const char *key, void *val)
{
	if (2 * (m->n + 1) > m->cap) {
		mkc_map old = *m;
		m->cap = old.cap ? 2 * old.cap : 64;
		m->keys = mkc_arena_alloc(a, (size_t)m->cap * sizeof *m->keys);
		m->vals = mkc_arena_alloc(a, (size_t)m->cap * sizeof *m->vals);
		m->n = 0;
		for (int i = 0; i < old.cap; i++)
			if (old.keys[i])
				mkc_map_put(a, m, old.keys[i], old.vals[i]);
	}
	int i = slot(m, key);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
}

mkc_ctx *
mkc_ctx_create(void)
{
	mkc_ctx *c = xmalloc(sizeof *c);
	memset(c, 0, sizeof *c);
	c->arena = mkc_arena_create();
	return c;
}

void
mkc_ctx_destroy(mkc_ctx *c)
{
	if (!c)
		return;
	mkc_arena_destroy(c->arena);
	free(c->errors);
	free(c);
}

/*
 * An error is one line: control bytes that a model's names or a path bring
 * in (a newline, an escape sequence) are written as \n, \t or \xHH, so a
 * hostile name can neither split a message nor drive the terminal.
 */
int
mkc_verror(mkc_ctx *c, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	char *msg = xmalloc((size_t)n + 1);
	vsnprintf(msg, (size_t)n + 1, fmt, aq);
	va_end(aq);
	size_t need = c->errlen + 4 * (size_t)n + 2;
	if (need > c->errcap) {
		c->errcap = need * 2;
		char *e = realloc(c->errors, c->errcap);
		if (!e) {
			fprintf(stderr, "mkc: out of memory\n");
			abort();
		}
		c->errors = e;
	}
	char *o = c->errors + c->errlen;
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
		if (*p == '\n' || *p == '\t') {
			*o++ = '\\';
			*o++ = *p == '\n' ? 'n' : 't';
		} else if (*p < 0x20 || *p == 0x7f) {
			o += sprintf(o, "\\x%02x", *p);
		} else {
			*o++ = (char)*p;
		}
	}
	free(msg);
	c->errlen = (size_t)(o - c->errors);
	c->errors[c->errlen++] = '\n';
	c->errors[c->errlen] = 0;
	c->nerrors++;
	return -1;
}

int
mkc_error(mkc_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mkc_verror(c, fmt, ap);
	va_end(ap);
	return -1;
}

void
mkc_ctx_clear_errors(mkc_ctx *c)
{
	c->errlen = 0;
	c->nerrors = 0;
	if (c->errors)
		c->errors[0] = 0;
}

void
mkc_progress(mkc_ctx *c, const char *fmt, ...)
{
	if (!c->verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("mkc: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
