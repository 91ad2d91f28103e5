/*
 * mkc_ttft.c - time to first token of a model compiled by mkc with
 * --max-chunk: bench/run.py builds it next to llama.cu.
 *
 *   mkc_ttft MODEL PROMPTS REPEATS [TRACE]
 *
 * PROMPTS is a text file of prompts, one a line: the token count, then the
 * tokens. For each prompt, each repeat empties the caches and times
 * llama_generate of one new token: the prompt in steps of up to the
 * compiled chunk, the first token drawn from the last chunk's logits (a
 * prompt of three tokens or more; one of two goes a token a step:
 * runtime/host.h's mkc_prefill). The host clock is read around the call,
 * which returns when the token is on the host. Prints, a prompt a line:
 * "prompt N: token T, ms R1 R2 ..., median M". With TRACE (a file compiled
 * with --profile), the last call's timeline is written there: the last
 * prompt's chunks, one step each.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"
#include "bench.h"

int
main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: mkc_ttft MODEL PROMPTS REPEATS [TRACE]\n");
		return 2;
	}
	int repeats = atoi(argv[3]);
	FILE *f = fopen(argv[2], "r");
	if (!f || repeats < 1 || repeats > 100) {
		fprintf(stderr, "mkc_ttft: cannot read %s, or REPEATS is not 1..100\n", argv[2]);
		return 2;
	}
	llama *m;
	if (llama_create(&m, NULL) || llama_load_weights(m, argv[1])) {
		fprintf(stderr, "mkc_ttft: %s\n", llama_last_error(m));
		return 1;
	}
	int n, rc = 0;
	while (rc == 0 && fscanf(f, "%d", &n) == 1) {
		int64_t *prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof *prompt), tok = -1;
		double ms[100];
		for (int i = 0; i < n; i++)
			if (!prompt || fscanf(f, "%lld", (long long *)&prompt[i]) != 1)
				rc = 2;
		for (int r = 0; r < repeats && rc == 0; r++) {
			llama_cache_reset(m);
			double t0 = now();
			if (llama_generate(m, prompt, n, 1, &tok)) {
				fprintf(stderr, "mkc_ttft: prompt of %d: %s\n", n, llama_last_error(m));
				rc = 1;
			}
			ms[r] = (now() - t0) * 1e3;
		}
		if (rc == 0) {
			printf("prompt %d: token %lld, ms", n, (long long)tok);
			for (int r = 0; r < repeats; r++)
				printf(" %.3f", ms[r]);
			qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
			printf(", median %.3f\n", ms[repeats / 2]);
			fflush(stdout);
		}
		free(prompt);
	}
	fclose(f);
	if (rc == 0 && argc == 5 && llama_profile_write(m, argv[4])) {
		fprintf(stderr, "mkc_ttft: %s\n", llama_last_error(m));
		rc = 1;
	}
	llama_destroy(m);
	return rc;
}
