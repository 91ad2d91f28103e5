/*
 * fuzz_file.h - the body of a libFuzzer target that runs one of mkc's
 * readers alone on the input as a file: fuzz_onnx.c and fuzz_json.c. Any
 * signal, sanitizer report or leak is a bug; an error from mkc is the
 * expected answer to bad input.
 */
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes data to a file named NAME in a folder of this process, then reads it with load. */
static int
fuzz_file(const uint8_t *data, size_t size, const char *name,
	  mkc_graph *(*load)(mkc_ctx *c, const char *path))
{
	static char path[96];
	if (!path[0]) {
		char dir[64];
		snprintf(dir, sizeof dir, "/tmp/mkc_fuzz_%d_%s", (int)getpid(), name);
		mkdir(dir, 0700);
		snprintf(path, sizeof path, "%s/%s", dir, name);
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	mkc_ctx *c = mkc_ctx_create();
	load(c, path);
	mkc_ctx_destroy(c);
	unlink(path);
	return 0;
}
