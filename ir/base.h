/*
 * base.h - the few things every mkc module uses: the arena, growable
 * arrays, a string map, and diagnostics.
 *
 * Memory: one arena per compilation (mkc_arena). Everything the IR points at
 * lives in it and is freed at once by mkc_arena_destroy; nothing else frees.
 *
 * Failure has two tiers (STYLE.md):
 *  - what the user's model or input can cause: a sentence in the context's
 *    diagnostics (mkc_error) and a status returned up the call chain;
 *  - broken internal invariants: MKC_ASSERT, never compiled out, which names
 *    file and line and aborts.
 */
#ifndef MKC_BASE_H
#define MKC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MKC_VERSION "0.1.0"

#define MKC_ASSERT(c)                                                          \
	((c) ? (void)0 : mkc_assert_fail(#c, __FILE__, __LINE__))

_Noreturn void mkc_assert_fail(const char *what, const char *file, int line);

/*
 * Checked integer arithmetic, for every place where sizes, dimensions or
 * folded values from a model are combined: false (and *r unspecified) when
 * the exact result does not fit in int64_t. A model's numbers are input,
 * and a wrapped product is a buffer too small for what is written into it.
 */
static inline bool
mkc_add_ok(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}

static inline bool
mkc_sub_ok(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_sub_overflow(a, b, r);
}

static inline bool
mkc_mul_ok(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

/* Arena. */
typedef struct mkc_arena mkc_arena;

mkc_arena *mkc_arena_create(void);
void mkc_arena_destroy(mkc_arena *a);
void *mkc_arena_alloc(mkc_arena *a, size_t n);   /* zeroed, 16-aligned */
/* n zeroed bytes of a pass's own, outside any arena, for free(): a page
 * never written takes no memory (the schedule passes' rows of tasks by
 * tasks, half of them never touched); out of memory aborts, as the arena does */
void *mkc_zalloc(size_t n);
char *mkc_arena_strdup(mkc_arena *a, const char *s);
char *mkc_arena_strndup(mkc_arena *a, const char *s, size_t n);
char *mkc_arena_printf(mkc_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
size_t mkc_arena_used(const mkc_arena *a);
/* Runs fn(arg) when the arena is destroyed (unmapping files, say). */
void mkc_arena_on_destroy(mkc_arena *a, void (*fn)(void *), void *arg);

/*
 * Growable array of pointers in an arena: grows by doubling, the old block
 * stays in the arena until the arena goes.
 */
typedef struct {
	void **v;
	int n, cap;
} mkc_vec;

void mkc_vec_push(mkc_arena *a, mkc_vec *v, void *p);
void mkc_vec_remove(mkc_vec *v, const void *p);   /* every entry equal to p; order kept */

/* String -> pointer map (open addressing); keys are not copied. */
typedef struct {
	const char **keys;
	void **vals;
	int n, cap;
} mkc_map;

void *mkc_map_get(const mkc_map *m, const char *key);
void mkc_map_put(mkc_arena *a, mkc_map *m, const char *key, void *val);

/*
 * Diagnostics. A context carries the arena and the error text of one
 * compilation; every user-facing error goes through mkc_error so that the
 * driver prints them in one place.
 */
typedef struct mkc_ctx {
	mkc_arena *arena;
	char *errors;      /* newline-separated sentences, NULL when none */
	size_t errlen, errcap;
	int nerrors;
	int verbose;
} mkc_ctx;

mkc_ctx *mkc_ctx_create(void);
void mkc_ctx_destroy(mkc_ctx *c);
int mkc_error(mkc_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));  /* always returns -1 */
int mkc_verror(mkc_ctx *c, const char *fmt, va_list ap);
void mkc_ctx_clear_errors(mkc_ctx *c);
void mkc_progress(mkc_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));  /* stderr when verbose */

#endif
