/*
 * decode.c - greedy decoding with a model compiled by mkc, as a user's
 * serving code would drive it: one llama_step per token, the argmax of the
 * logits fed back as the next token. The model keeps its KV cache (mkc's
 * default): each step appends one position in place, so the only inputs are
 * the token and its position, and dims is NULL (the cache counts past_len).
 *
 * It works with any decode-step export that has the shared exports'
 * interface: inputs input_ids [1,1], position_ids [1,1],
 * past_key_values.{i}.key/value [.., past_len, ..]; outputs logits [1,1,V]
 * and present.{i}.key/value.
 *
 *   mkc model.onnx -o llama.c --name llama
 *   cc -O2 -pthread -o decode examples/decode.c llama.c -lm     (C target)
 *   ./decode model.onnx 16 1            (16 tokens after token 1)
 *   ./decode model.onnx 16 1 lg.f32     (and every step's logits, float32, to lg.f32)
 *
 * With -DDECODE_CUDA and a model compiled to llama.cu, the buffers live on
 * the GPU (cc -DDECODE_CUDA -c decode.c && nvcc -o decode decode.o llama.o).
 * examples/generate.c runs the whole loop inside one kernel launch instead.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

#ifdef DECODE_CUDA
#include <cuda_runtime.h>
static void *
dev_alloc(size_t n)
{
	void *p = NULL;
	if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) {
		fprintf(stderr, "decode: cudaMalloc of %zu bytes failed\n", n);
		exit(1);
	}
	cudaMemset(p, 0, n ? n : 1);
	return p;
}
#define TO_DEV(d, h, n) cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)
#define TO_HOST(h, d, n) cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost)
#define DEV_FREE(p) cudaFree(p)
#else
static void *
dev_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		fprintf(stderr, "decode: out of memory\n");
		exit(1);
	}
	return p;
}
#define TO_DEV(d, h, n) memcpy(d, h, n)
#define TO_HOST(h, d, n) memcpy(h, d, n)
#define DEV_FREE(p) free(p)
#endif

enum { MAXIO = 256 };

static size_t
elems(int rank, const int64_t *shape)
{
	size_t n = 1;
	for (int d = 0; d < rank; d++)
		n *= (size_t)shape[d];
	return n;
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int
fail(llama *m, const char *what)
{
	fprintf(stderr, "decode: %s: %s\n", what, llama_last_error(m));
	llama_destroy(m);
	return 1;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: decode MODEL.onnx STEPS [FIRST_TOKEN [LOGITS_FILE]]\n");
		return 2;
	}
	int steps = atoi(argv[2]);
	int64_t tok = argc > 3 ? atoll(argv[3]) : 1;
	int nin = llama_num_inputs(), nout = llama_num_outputs();
	if (nin > MAXIO || nout > MAXIO || steps < 1) {
		fprintf(stderr, "decode: STEPS must be at least 1\n");
		return 2;
	}
	if (llama_num_caches() == 0) {
		fprintf(stderr, "decode: the model keeps no KV cache (compiled with --kv-io?)\n");
		return 2;
	}
	llama *m;
	if (llama_create(&m, NULL))
		return fail(m, "create");
	if (llama_load_weights(m, argv[1]))
		return fail(m, "load_weights");
	void *in[MAXIO], *out[MAXIO];
	int ids = -1, pos = -1, logits = -1;
	size_t vocab = 0;
	int64_t shape[16];
	for (int i = 0; i < nin; i++) {
		const char *nm = llama_input_name(i);
		in[i] = dev_alloc(sizeof(int64_t));
		if (!strcmp(nm, "input_ids"))
			ids = i;
		else if (!strcmp(nm, "position_ids"))
			pos = i;
		else {
			fprintf(stderr, "decode: input '%s' is neither input_ids nor position_ids\n", nm);
			return 2;
		}
	}
	for (int o = 0; o < nout; o++) {
		int r = llama_output_shape(o, NULL, shape);
		out[o] = dev_alloc(elems(r, shape) * 4);
		if (!strcmp(llama_output_name(o), "logits")) {
			logits = o;
			vocab = (size_t)shape[r - 1];
		}
	}
	if (ids < 0 || logits < 0) {
		fprintf(stderr, "decode: the model lacks input_ids or logits\n");
		return 2;
	}
	float *host = malloc(vocab * sizeof *host);
	FILE *lf = argc > 4 ? fopen(argv[4], "wb") : NULL;
	if (argc > 4 && !lf) {
		fprintf(stderr, "decode: cannot write %s\n", argv[4]);
		return 2;
	}
	double total = 0, first = 0;
	printf("tokens: %lld", (long long)tok);
	for (int t = 0; t < steps; t++) {
		int64_t p = llama_cache_len(m);   /* the position of this token */
		TO_DEV(in[ids], &tok, sizeof tok);
		if (pos >= 0)
			TO_DEV(in[pos], &p, sizeof p);
		double t0 = now();
		if (llama_step(m, (const void *const *)in, out, NULL))
			return fail(m, "step");
		double dt = now() - t0;
		total += dt;
		if (t == 0)
			first = dt;
		TO_HOST(host, out[logits], vocab * sizeof *host);
		if (lf && fwrite(host, sizeof *host, vocab, lf) != vocab) {
			fprintf(stderr, "decode: cannot write %s\n", argv[4]);
			return 2;
		}
		size_t best = 0;
		for (size_t v = 1; v < vocab; v++)
			if (host[v] > host[best])
				best = v;
		tok = (int64_t)best;
		printf(" %lld", (long long)tok);
	}
	printf("\nsteps: %d, first %.3f ms, mean of the rest %.3f ms per step\n", steps,
	       first * 1e3, steps > 1 ? (total - first) / (steps - 1) * 1e3 : first * 1e3);
	free(host);
	for (int i = 0; i < nin; i++)
		DEV_FREE(in[i]);
	for (int o = 0; o < nout; o++)
		DEV_FREE(out[o]);
	if (lf)
		fclose(lf);
	llama_destroy(m);
	return 0;
}
