/*
 * reserved_check.h - checks backends/core/reserved_names.h against the
 * headers of one target on this machine, with its compiler, as
 * backends/core/gen_reserved.py made it:
 *
 *   - complete: every identifier in the target's headers preprocessed, every
 *     macro they define, and the stem X of every X_s among them where $P_s
 *     is a name the runtime texts make, that mkc takes as --name, compiles
 *     when declared as the prefix is declared (a type, its struct, a
 *     function for each $P_s), all of them after the headers in one file;
 *   - true: every name listed for the target that is an identifier of the
 *     headers here, and no object-like macro nor makes one, fails to
 *     compile so declared (the macros are plainly taken).
 *
 * Used by tests/compiler/test_names.c (the C target) and
 * tests/toolchains/test_names.c (CUDA, HIP). Functions are static.
 */
#ifndef MKC_RESERVED_CHECK_H
#define MKC_RESERVED_CHECK_H

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/core/emit.h"
#include "mkc_run.h"

static const struct {
	const char *name;
	int targets;
} rc_listed[] = {
#include "../backends/core/reserved_names.h"
};

/* A set of names: a sorted, de-duplicated array once rc_sort has run. */
typedef struct {
	char **v;
	size_t n, cap;
} rc_names;

static void
rc_add(rc_names *s, const char *b, size_t len)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		cr_assert_not_null(s->v);
	}
	s->v[s->n] = strndup(b, len);
	cr_assert_not_null(s->v[s->n]);
	s->n++;
}

static int
rc_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
rc_sort(rc_names *s)
{
	qsort(s->v, s->n, sizeof *s->v, rc_cmp);
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (k && strcmp(s->v[k - 1], s->v[i]) == 0) {
			free(s->v[i]);
			continue;
		}
		s->v[k++] = s->v[i];
	}
	s->n = k;
}

static bool
rc_has(const rc_names *s, const char *name)
{
	return bsearch(&name, s->v, s->n, sizeof *s->v, rc_cmp) != NULL;
}

static void
rc_free(rc_names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

/* Every identifier in text (string and character literals too: more candidates, no harm). */
static void
rc_identifiers(rc_names *s, const char *text)
{
	for (const char *p = text; *p;) {
		if (isalpha((unsigned char)*p) || *p == '_') {
			const char *b = p;
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			if (b == text || !isalnum((unsigned char)b[-1]))
				rc_add(s, b, (size_t)(p - b));
		} else {
			p++;
		}
	}
}

/* The suffixes s of every $P_s the runtime texts hold ("" for $P itself). */
static void
rc_suffixes(rc_names *s)
{
	rc_add(s, "", 0);
	for (const mkc_runtime_file *f = mkc_runtime_files; f->name; f++)
		for (const char *p = strstr(f->text, "$P_"); p; p = strstr(p + 1, "$P_")) {
			size_t n = 1;
			while (isalnum((unsigned char)p[2 + n]) || p[2 + n] == '_')
				n++;
			rc_add(s, p + 2, n);
		}
	rc_sort(s);
}

/* cmd (a printf format of the file) on path; its output, with its exit status in *status. */
static char *
rc_run(const char *cmd, const char *path, int *status)
{
	char inner[1024], full[1040], *out = malloc(1 << 25);
	cr_assert_not_null(out);
	snprintf(inner, sizeof inner, cmd, path);
	snprintf(full, sizeof full, "( %s )", inner);   /* mkc_shell's 2>&1 for all of it */
	*status = mkc_shell(full, out, 1 << 25);
	return out;
}

/* Writes the declarations the prefix name gets, under #line "cand/NAME". */
static void
rc_block(FILE *f, const char *name, const rc_names *sfx)
{
	fprintf(f, "#line 1 \"cand/%s\"\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
		"typedef struct %s %s;\nstruct %s { int mkc_x; };\n", name, name, name, name);
	for (size_t i = 0; i < sfx->n; i++)
		if (*sfx->v[i])
			fprintf(f, "int %s%s(void);\n", name, sfx->v[i]);
	fputs("#ifdef __cplusplus\n}\n#endif\n", f);
}

/* Whether name is an object-like macro of macros (cc -dM), or makes one with a suffix. */
static bool
rc_by_macro(const rc_names *objects, const char *name, const rc_names *sfx)
{
	char b[256];
	for (size_t i = 0; i < sfx->n; i++) {
		snprintf(b, sizeof b, "%s%s", name, sfx->v[i]);
		if (rc_has(objects, b))
			return true;
	}
	return false;
}

/*
 * A target and its tools: each command a printf format of the file (%s):
 * the preprocessor's output without line markers and its macros, and a
 * compile that shows every error.
 */
typedef struct {
	const char *target, *ext;
	int bit;   /* in reserved_names.h */
	const char *pre, *macros, *cc;
} rc_tools;

/* Reads the candidates of the target's headers at hpath into ids, the object-like macros into objects. */
static void
rc_candidates(const rc_tools *tt, const char *hpath, const rc_names *sfx, rc_names *ids,
	      rc_names *objects)
{
	int st;
	char *text = rc_run(tt->pre, hpath, &st);
	cr_assert_eq(st, 0, "%s", text);
	rc_identifiers(ids, text);
	free(text);
	text = rc_run(tt->macros, hpath, &st);
	cr_assert_eq(st, 0, "%s", text);
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "#define ", 8) != 0)
			continue;
		char *b = line + 8, *e = b;
		while (isalnum((unsigned char)*e) || *e == '_')
			e++;
		rc_add(ids, b, (size_t)(e - b));
		if (*e != '(')
			rc_add(objects, b, (size_t)(e - b));
	}
	free(text);
	rc_sort(objects);
	size_t n = ids->n;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sfx->n; k++) {
			size_t ln = strlen(ids->v[i]), ls = strlen(sfx->v[k]);
			if (ls && ln > ls && strcmp(ids->v[i] + ln - ls, sfx->v[k]) == 0)
				rc_add(ids, ids->v[i], ln - ls);
		}
	rc_sort(ids);
}

/* The check for one target, in the scratch folder dir. */
static void
rc_check_target(const rc_tools *tt, const char *dir)
{
	const mkc_target *t = mkc_target_find(tt->target);
	cr_assert_not_null(t);
	const char *target = tt->target, *ext = tt->ext, *cc = tt->cc;
	const int bit = tt->bit;
	char hpath[512], tpath[512];
	snprintf(hpath, sizeof hpath, "%s/headers.%s", dir, ext);
	FILE *f = fopen(hpath, "w");
	cr_assert_not_null(f);
	fputs(t->headers, f);
	fclose(f);
	int st;
	char *text;
	rc_names ids = {0}, objects = {0}, sfx = {0};
	rc_suffixes(&sfx);
	rc_candidates(tt, hpath, &sfx, &ids, &objects);

	/* complete: what mkc takes compiles */
	snprintf(tpath, sizeof tpath, "%s/taken.%s", dir, ext);
	f = fopen(tpath, "w");
	cr_assert_not_null(f);
	fputs(t->headers, f);
	int taken = 0;
	for (size_t i = 0; i < ids.n; i++)
		if (!mkc_emit_name_problem(ids.v[i])) {
			rc_block(f, ids.v[i], &sfx);
			taken++;
		}
	fclose(f);
	text = rc_run(cc, tpath, &st);
	cr_expect_eq(st, 0, "%s: names mkc takes as --name collide with the headers (run "
		     "backends/core/gen_reserved.py): %.4000s", target, text);
	free(text);

	/* true: each listed name that is no macro's fails */
	snprintf(tpath, sizeof tpath, "%s/listed.%s", dir, ext);
	f = fopen(tpath, "w");
	cr_assert_not_null(f);
	fputs(t->headers, f);
	int listed = 0;
	for (size_t i = 0; i < sizeof rc_listed / sizeof *rc_listed; i++) {
		const char *name = rc_listed[i].name;
		if ((rc_listed[i].targets & bit) && rc_has(&ids, name) &&
		    !rc_by_macro(&objects, name, &sfx)) {
			rc_block(f, name, &sfx);
			listed++;
		}
	}
	fclose(f);
	text = rc_run(cc, tpath, &st);
	for (size_t i = 0; i < sizeof rc_listed / sizeof *rc_listed; i++) {
		const char *name = rc_listed[i].name;
		if (!(rc_listed[i].targets & bit) || !rc_has(&ids, name) ||
		    rc_by_macro(&objects, name, &sfx))
			continue;
		char want[256];
		snprintf(want, sizeof want, "cand/%s:", name);
		bool found = strstr(text, want) != NULL;
		snprintf(want, sizeof want, "cand/%s(", name);
		cr_expect(found || strstr(text, want), "%s: '%s' is listed but compiles as a prefix",
			  target, name);
	}
	free(text);
	cr_log_info("%s: %zu candidates, %d taken by mkc and compiled, %d listed and failed",
		    target, ids.n, taken, listed);
	cr_expect_gt(listed, 100, "%s: too few listed names compiled: %d", target, listed);
	rc_free(&ids);
	rc_free(&objects);
	rc_free(&sfx);
}

/* rc_check_target in a scratch folder of its own, removed after. */
static void
rc_check_in_scratch(const rc_tools *tt)
{
	char dir[] = "/tmp/mkc_names_XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	rc_check_target(tt, dir);
	char cmd[600], out[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	mkc_shell(cmd, out, sizeof out);
}

#endif
