/*
 * generate.c - text generation with a model compiled by mkc, the whole
 * decode loop in one call: llama_generate_with feeds the prompt one token
 * per step (or, compiled with --max-chunk, in chunks, the first new token
 * drawn from the last chunk's logits) and then each new token, the argmax
 * of the logits before it or a token drawn from them (--temperature ...); on a
 * GPU target every step runs inside ONE kernel launch (the choice of the
 * token and the feedback happen on the device). Prints the new tokens and
 * tokens/s.
 *
 *   mkc model.onnx -o llama.cu --workers 132 --max-seq 4096
 *   nvcc -O2 -c llama.cu && cc -c examples/generate.c -I. && nvcc -o generate generate.o llama.o
 *   ./generate model.onnx 64 7             (64 new tokens after the prompt "7")
 *   ./generate model.onnx 64 1,2,3          (a prompt of three tokens)
 *   ./generate model.onnx 64 seq:1000       (a prompt of 1000 made-up tokens,
 *                                             (7 + 13 i) mod 256)
 *   ./generate model.onnx 64 7 3            (then twice more, for timing)
 *   ./generate model.onnx 64 7 1 trace.json (a file compiled with mkc --profile:
 *                                             write the timeline of the last run)
 *   ./generate model.onnx 64 7 --temperature 0.8 --top-p 0.9 --seed 1 --stop 2,13
 *                                            (drawn tokens, not the argmax; the
 *                                             options go anywhere)
 *
 * The same source builds against a C-target llama.c (cc -pthread ... -lm);
 * there the loop runs on the host, one step per token.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "7", "1,2,3" or "seq:N"; returns the token count, or -1. */
static int
parse_prompt(const char *s, int64_t **out)
{
	int n = 1;
	if (!strncmp(s, "seq:", 4)) {
		n = atoi(s + 4);
		if (n < 1)
			return -1;
		*out = malloc((size_t)n * sizeof **out);
		for (int i = 0; *out && i < n; i++)
			(*out)[i] = (7 + 13 * (int64_t)i) % 256;
		return *out ? n : -1;
	}
	for (const char *p = s; *p; p++)
		n += *p == ',';
	*out = malloc((size_t)n * sizeof **out);
	char *end = (char *)s;
	for (int i = 0; *out && i < n; i++) {
		(*out)[i] = strtoll(end, &end, 10);
		if (*end != (i + 1 < n ? ',' : '\0') || (*out)[i] < 0)
			return -1;
		end++;
	}
	return *out ? n : -1;
}

/*
 * Takes the sampling options out of argv (argc updated); 0, or -1 on a bad
 * one. *stop gets the stop tokens (malloc'ed).
 */
static int
parse_sampling(int *argc, char **argv, llama_sampling *s, int64_t **stop)
{
	int n = 0;
	for (int i = 0; i < *argc; i++) {
		const char *a = argv[i], *v = i + 1 < *argc ? argv[i + 1] : NULL;
		if (strncmp(a, "--", 2)) {
			argv[n++] = argv[i];
			continue;
		}
		if (!v)
			return -1;
		char *end;
		if (!strcmp(a, "--temperature"))
			s->temperature = strtof(v, &end);
		else if (!strcmp(a, "--top-k"))
			s->top_k = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--top-p"))
			s->top_p = strtof(v, &end);
		else if (!strcmp(a, "--seed"))
			s->seed = strtoull(v, &end, 10);
		else if (!strcmp(a, "--stop")) {
			s->n_stop = parse_prompt(v, stop);
			s->stop = *stop;
			end = s->n_stop < 0 ? (char *)v : (char *)v + strlen(v);
		} else
			return -1;
		if (*end || end == v)
			return -1;
		i++;
	}
	*argc = n;
	return 0;
}

int
main(int argc, char **argv)
{
	llama_sampling samp = {0};
	int64_t *stop = NULL;
	if (parse_sampling(&argc, argv, &samp, &stop) || argc < 4) {
		fprintf(stderr, "usage: generate MODEL N_NEW PROMPT [REPEATS [TRACE.json]] [OPTIONS]\n"
			"  PROMPT: token ids separated by commas, or seq:N for N made-up tokens\n"
			"  TRACE.json: the last run's per-task timeline (needs mkc --profile)\n"
			"  OPTIONS: --temperature T (0: greedy, the default), --top-k K, --top-p P,\n"
			"           --seed S, --stop T1,T2,... (tokens that end the answer)\n");
		return 2;
	}
	int n_new = atoi(argv[2]), repeats = argc > 4 ? atoi(argv[4]) : 1;
	int64_t *prompt = NULL;
	int n_prompt = parse_prompt(argv[3], &prompt);
	if (n_new < 1 || n_prompt < 1 || repeats < 1) {
		fprintf(stderr, "generate: N_NEW, the prompt and REPEATS must not be empty\n");
		return 2;
	}
	int64_t *toks = malloc((size_t)n_new * sizeof *toks), *first = NULL;
	int n_first = 0;
	llama *m;
	if (!toks || llama_create(&m, NULL) || llama_load_weights(m, argv[1])) {
		fprintf(stderr, "generate: %s\n", toks ? llama_last_error(m) : "out of memory");
		return 1;
	}
	for (int r = 0; r < repeats; r++) {
		llama_cache_reset(m);
		double t0 = now();
		int got = 0;
		if (llama_generate_with(m, prompt, n_prompt, n_new, &samp, toks, &got)) {
			fprintf(stderr, "generate: %s\n", llama_last_error(m));
			llama_destroy(m);
			return 1;
		}
		double dt = now() - t0;
		if (r == 0) {
			first = malloc((size_t)n_new * sizeof *first);
			memcpy(first, toks, (size_t)got * sizeof *toks);
			n_first = got;
			printf("tokens:");
			for (int i = 0; i < got; i++)
				printf(" %lld", (long long)toks[i]);
			printf("\n");
		} else if (got != n_first || memcmp(first, toks, (size_t)got * sizeof *toks)) {
			fprintf(stderr, "generate: run %d gave other tokens than run 1\n", r + 1);
			return 1;
		}
		int steps = n_prompt + got - 1;
		printf("generate: %d prompt + %d new tokens (%d steps, cache now %lld of %lld) in "
		       "%.3f ms: %.3f ms per step, %.1f steps/s\n", n_prompt, got, steps,
		       (long long)llama_cache_len(m), (long long)llama_cache_capacity(), dt * 1e3,
		       dt * 1e3 / steps, steps / dt);
	}
	if (argc > 5 && llama_profile_write(m, argv[5])) {
		fprintf(stderr, "generate: %s\n", llama_last_error(m));
		llama_destroy(m);
		return 1;
	}
	free(first);
	free(toks);
	free(prompt);
	free(stop);
	llama_destroy(m);
	return 0;
}
