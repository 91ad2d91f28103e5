/*
 * fuzz_pipeline.c - a libFuzzer target for everything a model file reaches:
 * the ONNX and ONNX-JSON readers, every graph and plan pass, and the
 * emitter. The first byte of the input picks the form (even: binary ONNX,
 * odd: ONNX-JSON); the rest is the file. Any signal, sanitizer report or
 * leak is a bug; an error from mkc is the expected answer to bad input.
 *
 *   make fuzz FUZZ_SECONDS=600    # builds build/fuzz/fuzz_pipeline, runs it
 *
 * Crashes it finds go into tests/fuzz/crashes/ (by hand, once fixed), which
 * tests/compiler/test_bad_input.c replays through mkc on every make test.
 */
#include "frontend.h"
#include "passes.h"
#include "driver.h"
#include "../backends/core/emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/mkc_fuzz_%d", (int)getpid());
		mkdir(dir, 0700);
	}
	if (size < 1)
		return 0;
	char model[96], out[96];
	snprintf(model, sizeof model, "%s/m.%s", dir, data[0] & 1 ? "json" : "onnx");
	snprintf(out, sizeof out, "%s/out.c", dir);
	FILE *f = fopen(model, "wb");
	if (!f)
		return 0;
	fwrite(data + 1, 1, size - 1, f);
	fclose(f);
	mkc_ctx *c = mkc_ctx_create();
	mkc_graph *g = mkc_load_model(c, model);
	mkc_plan *p = NULL;
	mkc_driver_options d = {.workers = 4, .max_dim = 64};
	if (g && mkc_run_passes(g, &d, &p) == 0) {
		mkc_emit_options eo = {.out_path = out, .max_dim = 64, .embed_limit = 4096};
		mkc_emit(&p, 1, mkc_target_find("c"), &eo);
	}
	mkc_ctx_destroy(c);
	unlink(model);
	return 0;
}
