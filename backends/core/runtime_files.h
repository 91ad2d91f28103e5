/*
 * runtime_files.h - the texts that emitted files embed (runtime/ and each
 * target's folder), found by their path in the tree:
 *
 *   fputs(mkc_runtime_text("backends/cuda/exec.cuh"), f);
 *
 * The table is generated at build time by tools/embed.sh from the
 * Makefile's RUNTIME list (build/gen/runtime_text.c); a file the targets
 * name must be on that list, which mkc_runtime_text asserts.
 */
#ifndef MKC_RUNTIME_FILES_H
#define MKC_RUNTIME_FILES_H

#include <stddef.h>

typedef struct {
	const char *name;   /* "runtime/host.h": the path from the top of the tree */
	const char *text;
} mkc_runtime_file;

extern const mkc_runtime_file mkc_runtime_files[];   /* ends with {NULL, NULL} */

const char *mkc_runtime_text(const char *name);

#endif
