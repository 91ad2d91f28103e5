/*
 * fuzz_hf.c - a libFuzzer target for the Hugging Face reader: config.json
 * and the safetensors header, as the compiler reads them (compiler/hf.c,
 * compiler/safetensors.c) and as the emitted loader checks the header at
 * run time (runtime/files.h, included here as the emitted file includes it).
 *
 * The input is config.json, a NUL byte, the data section's length (4 bytes,
 * little endian, at most 1 MiB) and the safetensors header; the target
 * writes model.safetensors as that header followed by that many zero bytes,
 * so the fuzzer spends its time on the JSON, not on weights.
 *
 *   make fuzz FUZZ_SECONDS=600    # also builds and runs this target
 *
 * Crashes it finds go into tests/fuzz/crashes_hf/ (by hand, once fixed),
 * which tests/compiler/test_bad_input.c replays through mkc on make test.
 */
#include "frontend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the emitted file uses the ONNX reader of common.h; this target does not */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../../runtime/limits.h"
#include "../../runtime/common.h"
#include "../../runtime/files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
write_file(const char *path, const void *a, size_t na, const void *b, size_t nb, size_t zeros)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	if (na)
		fwrite(a, 1, na, f);
	if (nb)
		fwrite(b, 1, nb, f);
	static const char zero[4096];
	for (size_t k; zeros; zeros -= k)
		fwrite(zero, 1, k = zeros < sizeof zero ? zeros : sizeof zero, f);
	fclose(f);
	return 0;
}

/* The run-time check of one tensor against the file; its answer does not matter. */
static void
check_at_run_time(const char *path, const char *name, int dtype, int rank, const int64_t *shape,
		  int64_t offset)
{
	mkc_rt_tensor_info ti;
	memset(&ti, 0, sizeof ti);
	ti.name = name;
	ti.dtype = ti.fdtype = dtype;
	ti.esize = dtype == 16 ? 2 : 4;
	ti.rank = rank;
	for (int i = 0; i < rank && i < 8; i++)
		ti.dims[i] = (mkc_rt_dim){shape[i], {0, 0}, {-1, -1}};
	ti.file = "model.safetensors";
	ti.offset = offset;
	ti.safetensors = 1;
	char full[4200], err[512];
	int64_t fsize;
	const char *dir = path;
	FILE *f = mkc_rt_open_in(dir, ti.file, strlen(ti.file), name, full, sizeof full, &fsize, err,
				 sizeof err);
	if (f) {
		mkc_rt_st_check(f, full, fsize, &ti, NULL, err, sizeof err);
		fclose(f);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64], config[96], weights[96];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/mkc_fuzz_hf_%d", (int)getpid());
		mkdir(dir, 0700);
		snprintf(config, sizeof config, "%s/config.json", dir);
		snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
	}
	const uint8_t *nul = memchr(data, 0, size);
	if (!nul || (size_t)(data + size - nul) < 5)
		return 0;
	const uint8_t *header = nul + 5;
	uint32_t zeros = (uint32_t)nul[1] | (uint32_t)nul[2] << 8 | (uint32_t)nul[3] << 16 |
			 (uint32_t)nul[4] << 24;
	if (zeros > (1u << 20))
		return 0;
	uint64_t hl = (uint64_t)(data + size - header);
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)(hl >> (8 * i));
	if (write_file(config, data, (size_t)(nul - data), NULL, 0, 0) ||
	    write_file(weights, len8, 8, header, (size_t)hl, zeros))
		return 0;
	mkc_ctx *c = mkc_ctx_create();
	mkc_graph *g = mkc_hf_load(c, dir, false);
	for (int i = 0; g && i < g->tensors.n; i++) {
		const mkc_tensor *t = MKC_TENSOR(g, i);
		if (!t->ext_file)
			continue;
		int64_t shape[MKC_MAX_RANK];
		for (int d = 0; d < t->rank; d++)
			shape[d] = t->shape[d].c;
		check_at_run_time(dir, t->name, t->file_dtype ? (int)t->file_dtype : (int)t->dtype,
				  t->rank, shape, (int64_t)t->ext_offset);
	}
	mkc_ctx_destroy(c);
	/* whatever the compiler thought of it, the run time reads the header too */
	static const int64_t q[2] = {64, 64};
	check_at_run_time(dir, "model.layers.0.self_attn.q_proj.weight", 16, 2, q, 8 + (int64_t)hl);
	check_at_run_time(dir, "model.norm.weight", 1, 1, q, 8 + (int64_t)hl);
	unlink(config);
	unlink(weights);
	return 0;
}
