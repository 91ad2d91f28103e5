/* test_base.c - the arena, growable arrays, the string map, diagnostics. */
#include "base.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdint.h>
#include <string.h>

static bool
all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool
aligned16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

/* Arena. */

Test(arena, alloc_is_zeroed_and_aligned)
{
	mkc_arena *a = mkc_arena_create();
	static const size_t sizes[] = {1, 3, 15, 16, 17, 100, 4095, 7};
	unsigned char *prev = NULL;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char *p = mkc_arena_alloc(a, sizes[i]);
		cr_assert_not_null(p);
		cr_expect(aligned16(p), "size %zu: %p is not 16-aligned", sizes[i], (void *)p);
		cr_expect(all_zero(p, sizes[i]), "size %zu: not zeroed", sizes[i]);
		cr_expect_neq(p, prev);
		memset(p, 0xAB, sizes[i]);
		prev = p;
	}
	mkc_arena_destroy(a);
}

Test(arena, allocations_do_not_overlap)
{
	mkc_arena *a = mkc_arena_create();
	enum { N = 2000 };
	unsigned char *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = mkc_arena_alloc(a, (size_t)(i % 37) + 1);
		memset(p[i], i & 0xFF, (size_t)(i % 37) + 1);
	}
	for (int i = 0; i < N; i++)
		for (int j = 0; j <= i % 37; j++)
			cr_assert_eq(p[i][j], (unsigned char)(i & 0xFF), "block %d byte %d", i, j);
	mkc_arena_destroy(a);
}

Test(arena, zero_size_alloc_is_usable)
{
	mkc_arena *a = mkc_arena_create();
	unsigned char *p = mkc_arena_alloc(a, 0);
	unsigned char *q = mkc_arena_alloc(a, 1);
	cr_assert_not_null(p);
	cr_assert_not_null(q);
	cr_expect(aligned16(p));
	cr_expect(aligned16(q));
	cr_expect_eq(*q, 0);
	mkc_arena_destroy(a);
}

Test(arena, big_blocks_interleaved_with_small)
{
	mkc_arena *a = mkc_arena_create();
	size_t used0 = mkc_arena_used(a);
	unsigned char *s1 = mkc_arena_alloc(a, 32);
	memset(s1, 1, 32);
	size_t big = (size_t)3 << 20;
	unsigned char *b = mkc_arena_alloc(a, big);
	cr_assert_not_null(b);
	cr_expect(aligned16(b));
	cr_expect(all_zero(b, big), "a big block is not zeroed");
	memset(b, 2, big);
	unsigned char *s2 = mkc_arena_alloc(a, 32);
	cr_expect(aligned16(s2));
	cr_expect(all_zero(s2, 32));
	memset(s2, 3, 32);
	unsigned char *b2 = mkc_arena_alloc(a, big + 1);
	cr_expect(all_zero(b2, big + 1));
	memset(b2, 4, big + 1);
	cr_expect_eq(s1[31], 1);
	cr_expect_eq(b[0], 2);
	cr_expect_eq(b[big - 1], 2);
	cr_expect_eq(s2[0], 3);
	cr_expect_geq(mkc_arena_used(a) - used0, 2 * big + 1);
	mkc_arena_destroy(a);
}

Test(arena, used_grows)
{
	mkc_arena *a = mkc_arena_create();
	size_t u0 = mkc_arena_used(a);
	for (int i = 0; i < 100; i++)
		mkc_arena_alloc(a, 1000);
	cr_expect_geq(mkc_arena_used(a), u0 + 100 * 1000);
	mkc_arena_destroy(a);
}

Test(arena, strdup_strndup_printf)
{
	mkc_arena *a = mkc_arena_create();
	const char *src = "past_len";
	char *d = mkc_arena_strdup(a, src);
	cr_expect_str_eq(d, "past_len");
	cr_expect_neq((const char *)d, src);
	cr_expect_str_eq(mkc_arena_strdup(a, ""), "");
	cr_expect_str_eq(mkc_arena_strndup(a, "abcdef", 3), "abc");
	cr_expect_str_eq(mkc_arena_strndup(a, "ab\0cd", 4), "ab");
	cr_expect_str_eq(mkc_arena_printf(a, "%s_%d_%.1f", "node", 42, 1.5), "node_42_1.5");
	cr_expect_str_eq(mkc_arena_printf(a, "%s", ""), "");
	mkc_arena_destroy(a);
}

Test(arena, printf_long_output)
{
	mkc_arena *a = mkc_arena_create();
	char want[5001];
	memset(want, '0', 5000);
	want[5000] = 0;
	char *p = mkc_arena_printf(a, "%0*d", 5000, 0);
	cr_assert_eq(strlen(p), 5000);
	cr_expect_str_eq(p, want);
	mkc_arena_destroy(a);
}

static void
count_call(void *arg)
{
	(*(int *)arg)++;
}

Test(arena, on_destroy_callbacks_run)
{
	int calls[3] = {0, 0, 0};
	mkc_arena *a = mkc_arena_create();
	mkc_arena_on_destroy(a, count_call, &calls[0]);
	mkc_arena_on_destroy(a, count_call, &calls[1]);
	mkc_arena_on_destroy(a, count_call, &calls[1]);
	mkc_arena_alloc(a, (size_t)1 << 20);   /* callbacks survive new blocks */
	cr_expect_eq(calls[0] + calls[1] + calls[2], 0, "ran before destroy");
	mkc_arena_destroy(a);
	cr_expect_eq(calls[0], 1);
	cr_expect_eq(calls[1], 2);
	cr_expect_eq(calls[2], 0);
}

Test(arena, destroy_null_is_harmless)
{
	mkc_arena_destroy(NULL);
	mkc_ctx_destroy(NULL);
	cr_expect(true);
}

/* Growable arrays. */

Test(vec, push_many_keeps_order)
{
	mkc_arena *a = mkc_arena_create();
	mkc_vec v = {0};
	static int items[1000];
	for (int i = 0; i < 1000; i++)
		mkc_vec_push(a, &v, &items[i]);
	cr_assert_eq(v.n, 1000);
	cr_expect_geq(v.cap, v.n);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(v.v[i], &items[i], "element %d", i);
	mkc_arena_destroy(a);
}

Test(vec, holds_null)
{
	mkc_arena *a = mkc_arena_create();
	mkc_vec v = {0};
	mkc_vec_push(a, &v, NULL);
	mkc_vec_push(a, &v, a);
	cr_assert_eq(v.n, 2);
	cr_expect_null(v.v[0]);
	cr_expect_eq(v.v[1], (void *)a);
	mkc_arena_destroy(a);
}

/* String map. */

Test(map, empty_map_misses)
{
	mkc_map m = {0};
	cr_expect_null(mkc_map_get(&m, "anything"));
	cr_expect_null(mkc_map_get(&m, ""));
}

Test(map, many_keys)
{
	mkc_arena *a = mkc_arena_create();
	mkc_map m = {0};
	enum { N = 5000 };
	static int vals[N];
	for (int i = 0; i < N; i++)
		mkc_map_put(a, &m, mkc_arena_printf(a, "/model/layers.%d/MatMul", i), &vals[i]);
	cr_assert_eq(m.n, N);
	for (int i = 0; i < N; i++) {
		char key[64];
		snprintf(key, sizeof key, "/model/layers.%d/MatMul", i);
		cr_assert_eq(mkc_map_get(&m, key), &vals[i], "key %s", key);
	}
	cr_expect_null(mkc_map_get(&m, "/model/layers.5000/MatMul"));
	cr_expect_null(mkc_map_get(&m, "/model/layers.1/MatMu"));
	mkc_arena_destroy(a);
}

Test(map, overwrite_keeps_one_entry)
{
	mkc_arena *a = mkc_arena_create();
	mkc_map m = {0};
	int x = 1, y = 2, z = 3;
	mkc_map_put(a, &m, "k", &x);
	mkc_map_put(a, &m, "other", &z);
	char key2[] = "k";   /* equal text, another pointer */
	mkc_map_put(a, &m, key2, &y);
	cr_expect_eq(m.n, 2);
	cr_expect_eq(mkc_map_get(&m, "k"), &y);
	cr_expect_eq(mkc_map_get(&m, "other"), &z);
	mkc_arena_destroy(a);
}

Test(map, empty_string_key_and_missing)
{
	mkc_arena *a = mkc_arena_create();
	mkc_map m = {0};
	int x = 1;
	mkc_map_put(a, &m, "", &x);
	cr_expect_eq(mkc_map_get(&m, ""), &x);
	cr_expect_null(mkc_map_get(&m, "x"));
	mkc_arena_destroy(a);
}

/* Diagnostics. */

static int
verror_wrap(mkc_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = mkc_verror(c, fmt, ap);
	va_end(ap);
	return r;
}

Test(ctx, starts_clean)
{
	mkc_ctx *c = mkc_ctx_create();
	cr_assert_not_null(c);
	cr_expect_not_null(c->arena);
	cr_expect_eq(c->nerrors, 0);
	cr_expect(c->errors == NULL || c->errors[0] == 0);
	cr_expect_eq(c->verbose, 0);
	mkc_ctx_destroy(c);
}

Test(ctx, errors_accumulate)
{
	mkc_ctx *c = mkc_ctx_create();
	cr_expect_eq(mkc_error(c, "m.onnx: node '%s': bad", "n1"), -1);
	cr_expect_eq(c->nerrors, 1);
	cr_expect_str_eq(c->errors, "m.onnx: node 'n1': bad\n");
	cr_expect_eq(verror_wrap(c, "second %d", 2), -1);
	cr_expect_eq(c->nerrors, 2);
	cr_expect_str_eq(c->errors, "m.onnx: node 'n1': bad\nsecond 2\n");
	cr_expect_eq(c->errlen, strlen(c->errors));
	mkc_ctx_destroy(c);
}

Test(ctx, many_and_long_errors)
{
	mkc_ctx *c = mkc_ctx_create();
	char *big = mkc_arena_printf(c->arena, "%0*d", 3000, 7);
	for (int i = 0; i < 100; i++)
		mkc_error(c, "e%d %s", i, big);
	cr_expect_eq(c->nerrors, 100);
	cr_expect_eq(c->errlen, strlen(c->errors));
	cr_expect_eq(c->errlen, 100 * (strlen(big) + 1) + 10 * 3 + 90 * 4);
	cr_expect_not_null(strstr(c->errors, "\ne99 0000"));
	mkc_ctx_destroy(c);
}

Test(ctx, clear_errors)
{
	mkc_ctx *c = mkc_ctx_create();
	mkc_ctx_clear_errors(c);   /* nothing yet: harmless */
	cr_expect_eq(c->nerrors, 0);
	mkc_error(c, "one");
	mkc_error(c, "two");
	mkc_ctx_clear_errors(c);
	cr_expect_eq(c->nerrors, 0);
	cr_expect_eq(c->errlen, 0);
	cr_expect(c->errors == NULL || c->errors[0] == 0);
	mkc_error(c, "three");
	cr_expect_eq(c->nerrors, 1);
	cr_expect_str_eq(c->errors, "three\n");
	mkc_ctx_destroy(c);
}

Test(ctx, progress_quiet_by_default, .init = cr_redirect_stderr)
{
	mkc_ctx *c = mkc_ctx_create();
	mkc_progress(c, "read %d nodes", 3);
	mkc_ctx_destroy(c);
	fflush(stderr);
	cr_expect_stderr_eq_str("");
}

Test(ctx, progress_when_verbose, .init = cr_redirect_stderr)
{
	mkc_ctx *c = mkc_ctx_create();
	c->verbose = 1;
	mkc_progress(c, "read %d nodes", 3);
	mkc_ctx_destroy(c);
	fflush(stderr);
	cr_expect_stderr_eq_str("mkc: read 3 nodes\n");
}
