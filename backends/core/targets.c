/*
 * targets.c - the registry: every target, a line each. A target describes
 * itself in its folder (backends/<name>/target_<name>.c); the CLI picks one
 * here by --target or by OUT's extension, and `mkc test` builds with it.
 */
#include "emit.h"

#include <string.h>

const mkc_target *const mkc_targets[] = {
	&mkc_target_c,
	&mkc_target_cuda,
	&mkc_target_hip,
	NULL,
};

const mkc_target *
mkc_target_find(const char *name)
{
	for (const mkc_target *const *t = mkc_targets; *t; t++)
		if (strcmp((*t)->name, name) == 0)
			return *t;
	return NULL;
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
