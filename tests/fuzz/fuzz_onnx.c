/*
 * fuzz_onnx.c - a libFuzzer target for the ONNX (protobuf) reader alone
 * (compiler/onnx.c, with the protobuf-c code generated from onnx.proto): the
 * input is the file. Any signal, sanitizer report or leak is a bug; an
 * error from mkc is the expected answer to bad input. Faster per input
 * than fuzz_pipeline.c, which runs every pass after the reader.
 *
 *   make fuzz FUZZ_SECONDS=600    # also builds and runs this target
 *
 * Crashes it finds go into tests/fuzz/crashes_onnx/ (by hand, once fixed),
 * which make fuzz-replay (part of make test) replays.
 */
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[96];
	if (!path[0]) {
		char dir[64];
		snprintf(dir, sizeof dir, "/tmp/mkc_fuzz_onnx_%d", (int)getpid());
		mkdir(dir, 0700);
		snprintf(path, sizeof path, "%s/m.onnx", dir);
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	mkc_ctx *c = mkc_ctx_create();
	mkc_onnx_load(c, path);
	mkc_ctx_destroy(c);
	unlink(path);
	return 0;
}
