/*
 * gen_batch.c - generate_batch (runtime/batch.h) on a file compiled with
 * --max-seqs 4, built by tests/compiler/test_seqs.c as gb.c: six requests
 * (prompts of 1 to 26 tokens, greedy and drawn) through four sequences,
 * each request's tokens against generate_with of it alone; the callback
 * hears every token; a stop token ends its request early and the others
 * are unchanged; refusals; a request of 55 positions (which a pool of 12
 * pages cannot hold). A line per check.
 */
#include <stdio.h>
#include <string.h>
#include "gb.h"
static int heard;
static void on(void *u, int r, int64_t t) { (void)u; (void)r; (void)t; heard++; }
int main(void) {
	gb *m;
	if (gb_create(&m, NULL) || gb_load_weights(m, DIR)) { printf("%s\n", gb_last_error(m)); return 9; }
	enum { N = 6, NEW = 10 };
	int64_t prompts[N][40], alone[N][NEW], out[N][NEW];
	gb_request rq[N];
	for (int i = 0; i < N; i++) {
		int n = 1 + 5 * i;
		for (int k = 0; k < n; k++) prompts[i][k] = (7 + 13 * k + 31 * i) % 256;
		gb_sampling s = {i % 2 ? 1.1f : 0.0f, 0, i % 3 ? 0.9f : 0.0f, (uint64_t)i, NULL, 0};
		int got;
		gb_cache_reset(m);
		if (gb_generate_with(m, prompts[i], n, NEW, &s, alone[i], &got)) { printf("alone %s\n", gb_last_error(m)); return 8; }
		rq[i] = (gb_request){prompts[i], n, NEW, s, out[i], 0};
	}
	if (gb_generate_batch(m, rq, N, on, NULL)) { printf("batch: %s\n", gb_last_error(m)); return 7; }
	int same = 1;
	for (int i = 0; i < N; i++) same &= rq[i].n_out == NEW && !memcmp(alone[i], out[i], sizeof out[i]);
	printf("batch of %d: %s, %d tokens heard, sequence 0 open with %lld, free pages %lld\n", N, same ? "same as alone" : "DIFFERENT", heard, (long long)gb_seq_len(m, 0), (long long)gb_free_pages(m));
	/* a stop token ends one early */
	int64_t stop[1] = {alone[1][3]};
	rq[1].sampling.stop = stop; rq[1].sampling.n_stop = 1;
	if (gb_generate_batch(m, rq, N, NULL, NULL)) { printf("batch2: %s\n", gb_last_error(m)); return 6; }
	int k = 0; while (alone[1][k] != stop[0]) k++;
	printf("stopped: %d tokens (%d expected), others %s\n", rq[1].n_out, k + 1, !memcmp(out[0], alone[0], sizeof out[0]) && !memcmp(out[5], alone[5], sizeof out[5]) ? "same" : "DIFFERENT");
	printf("none: %d %s\n", gb_generate_batch(m, rq, 0, NULL, NULL), gb_last_error(m));
	rq[2].max_new = 0;
	printf("empty: %d %s\n", gb_generate_batch(m, rq, N, NULL, NULL), gb_last_error(m));
	rq[2].max_new = NEW;
	rq[3].sampling.top_k = -1;
	printf("bad: %d %s\n", gb_generate_batch(m, rq, N, NULL, NULL), gb_last_error(m));
	/* 26 + 30 tokens: 55 positions, 14 pages of 4, more than a pool of 12 */
	int64_t more[30];
	gb_request one = {prompts[5], 26, 30, rq[0].sampling, more, 0};
	int rc = gb_generate_batch(m, &one, 1, NULL, NULL);
	printf("long: %d %s\n", rc, rc ? gb_last_error(m) : "ok");
	gb_destroy(m);
	return 0;
}
