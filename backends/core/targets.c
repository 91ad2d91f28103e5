/*
 * targets.c - the registry: every target, a line each. A target describes
 * itself in its folder (backends/<name>/target_<name>.c); the CLI picks one
 * here by --target or by OUT's extension, and `mkc test` builds with it.
 */
#include "emit.h"

#include <string.h>

/* each defined in backends/<name>/target_<name>.c */
extern const mkc_target mkc_target_c, mkc_target_cuda, mkc_target_hip;

const mkc_target *const mkc_targets[] = {
	&mkc_target_c,
	&mkc_target_cuda,
	&mkc_target_hip,
	NULL,
};

const char *const mkc_shared_runtime[] = {"runtime/files.h", "runtime/seqs.h", "runtime/host.h",
					   "runtime/batch.h", "runtime/profile.h", NULL};

static void
push(const char **names, int *n, const char *const *list)
{
	for (; *list; list++) {
		MKC_ASSERT(*n < MKC_MAX_TEXTS - 1);
		names[(*n)++] = *list;
	}
}

int
mkc_target_runtime(const mkc_target *t, const char **names)
{
	static const char *const exec_api[] = {"runtime/exec_api.h", NULL};
	int n = 0;
	push(names, &n, t->exec);
	push(names, &n, exec_api);
	push(names, &n, t->bodies);
	push(names, &n, mkc_shared_runtime);
	names[n] = NULL;
	return n;
}

const mkc_target *
mkc_target_find(const char *name)
{
	for (const mkc_target *const *t = mkc_targets; *t; t++)
		if (strcmp((*t)->name, name) == 0)
			return *t;
	return NULL;
}

bool
mkc_target_has_arch(const mkc_target *t, const char *a)
{
	for (const char *const *x = t->archs; x && *x; x++)
		if (!a || strcmp(*x, a) == 0)
			return true;
	return false;
}

const mkc_target *
mkc_target_of_path(const char *out)
{
	const char *dot = strrchr(out, '.');
	if (!dot)
		return NULL;
	for (const mkc_target *const *t = mkc_targets; *t; t++)
		if (strcmp((*t)->ext, dot + 1) == 0)
			return *t;
	return NULL;
}

const char *
mkc_runtime_text(const char *name)
{
	const mkc_runtime_file *r = mkc_runtime_files;
	while (r->name && strcmp(r->name, name) != 0)
		r++;
	MKC_ASSERT(r->name);   /* a text the targets name is missing from the Makefile's RUNTIME */
	return r->text;
}
