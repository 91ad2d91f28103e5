/*
 * mkc_bench.c - times a model compiled by mkc, per generated token, at a
 * given context length; bench/run.py builds it next to llama.cu.
 *
 *   mkc_bench MODEL CTX,... N_NEW,... REPEATS ROW [TRACE.json]
 *
 * For each context CTX (with its own N_NEW), each repeat resets the caches, fills every KV cache with CTX positions
 * of random values (llama_cache_load: the prompt is not decoded, so a
 * long context costs no setup time), then times llama_generate of N_NEW
 * tokens after one prompt token: N_NEW steps, all in one launch on CUDA,
 * from context CTX to CTX + N_NEW - 1. The host clock is read around the
 * call, which returns when the tokens are back on the host. ROW is the
 * values one position of one cache holds (kv_heads x head_dim), in the
 * type the caches are kept in (llama_cache_dtype: float32, or bf16 with
 * mkc --kv bf16). Prints every repeat and the median in
 * milliseconds per token. With TRACE.json (a file compiled with mkc
 * --profile), the last repeat's timeline is written there. One process
 * serves every context, so the weights are loaded once.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"
#include "bench.h"

/* Times n_new tokens from context ctx, repeats times; the median. */
static int
bench(llama *m, const void *past, long long ctx, int n_new, int repeats, double *ms)
{
	int64_t toks[4096], prompt = 7;
	for (int r = 0; r < repeats; r++) {
		llama_cache_reset(m);
		for (int c = 0; c < llama_num_caches() && ctx > 0; c++)
			if (llama_cache_load(m, c, past, ctx)) {
				fprintf(stderr, "mkc_bench: cache %d: %s\n", c, llama_last_error(m));
				return -1;
			}
		double t0 = now();
		if (llama_generate(m, &prompt, 1, n_new, toks)) {
			fprintf(stderr, "mkc_bench: %s\n", llama_last_error(m));
			return -1;
		}
		ms[r] = (now() - t0) * 1e3 / n_new;
		printf("run %d: context %lld..%lld, %d tokens, %.4f ms per token (last token %lld)\n",
		       r + 1, ctx, ctx + n_new - 1, n_new, ms[r], (long long)toks[n_new - 1]);
	}
	qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
	printf("median: context %lld, %.4f ms per token over %d runs\n", ctx, ms[repeats / 2],
	       repeats);
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: mkc_bench MODEL CTX,... N_NEW,... REPEATS ROW [TRACE.json]\n");
		return 2;
	}
	const long long row = atoll(argv[5]);
	const int repeats = atoi(argv[4]);
	long long most = 1;
	for (int i = 0; nth(argv[2], i) >= 0; i++)
		most = nth(argv[2], i) > most ? nth(argv[2], i) : most;
	for (int i = 0; nth(argv[2], i) >= 0 || i == 0; i++)
		if (nth(argv[2], i) < 0 || nth(argv[3], i) < 1 || nth(argv[3], i) > 4096) {
			fprintf(stderr, "mkc_bench: each CTX >= 0 with an N_NEW of 1..4096\n");
			return 2;
		}
	if (repeats < 1 || repeats > 100 || row < 1) {
		fprintf(stderr, "mkc_bench: REPEATS 1..100, ROW >= 1\n");
		return 2;
	}
	size_t n = (size_t)most * (size_t)row;
	const int bf16 = llama_num_caches() && llama_cache_dtype(0) == 16;
	float *past = malloc(n * sizeof *past);
	uint16_t *half = (uint16_t *)past;   /* the same values as bf16, in place */
	double *ms = malloc((size_t)repeats * sizeof *ms);
	if (!past || !ms) {
		fprintf(stderr, "mkc_bench: out of memory\n");
		return 1;
	}
	/* values of the size real keys and values have, never zeros; for bf16
	 * caches their top 16 bits, packed in place (half[i] overwrites bytes
	 * of past[i / 2], already read) */
	unsigned s = 12345u;
	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		past[i] = (float)((int)(s >> 9 & 0xffff) - 32768) / 32768.0f;
	}
	for (size_t i = 0; bf16 && i < n; i++) {
		uint32_t b;
		memcpy(&b, &past[i], 4);
		half[i] = (uint16_t)(b >> 16);
	}
	llama *m;
	if (llama_create(&m, NULL) || llama_load_weights(m, argv[1])) {
		fprintf(stderr, "mkc_bench: %s\n", llama_last_error(m));
		return 1;
	}
	for (int i = 0; nth(argv[2], i) >= 0; i++)
		if (bench(m, past, nth(argv[2], i), (int)nth(argv[3], i), repeats, ms))
			return 1;
	if (argc > 6 && llama_profile_write(m, argv[6])) {
		fprintf(stderr, "mkc_bench: %s\n", llama_last_error(m));
		return 1;
	}
	llama_destroy(m);
	free(past);
	free(ms);
	return 0;
}
