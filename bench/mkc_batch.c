/*
 * mkc_batch.c - several sequences a step (a model compiled by mkc with
 * --max-seqs): bench/run.py builds it next to llama.cu.
 *
 *   mkc_batch MODEL time CTX B,... STEPS REPEATS ROW [TRACE]
 *   mkc_batch MODEL parity B N_NEW [TOL]
 *   mkc_batch MODEL gen B,... PROMPT N_NEW REPEATS
 *   mkc_batch MODEL mixed N PROMPT N_NEW GAP [STRICT]
 *
 * time: for each batch size B, each repeat closes every sequence, opens B,
 * fills each one's caches with CTX positions of random values (ROW values a
 * position of a cache, float32), then times STEPS steps of B tokens, one of
 * each sequence (llama_step_seqs; the host clock around the calls, the
 * tokens and positions uploaded before each, as a server's loop does).
 * Prints each repeat and "median: batch B, context C, X ms per step, Y
 * tokens/s". With TRACE (a model compiled with --profile), the timeline of
 * the last step is written there (tools/profile_report.py reads it).
 *
 * parity: B sequences with prompts of 1 + 3q made-up tokens (sequence q),
 * each first alone (llama_generate, greedy, N_NEW tokens), then all
 * together: their prompts in shared steps of up to the compiled chunk,
 * then N_NEW - 1 steps of one token of each, fed the tokens the sequence
 * took alone (so that one flipped token does not change the rest). A step
 * of several rows may take other bodies than a step of one (on a GPU the
 * chunk's tensor-core products, their inputs rounded to bf16), so a row's
 * argmax may differ from the token alone where the two were nearly tied:
 * such a difference passes when the row's logit of the token alone is
 * within TOL (default 1e-2) of the row's largest logit, relative to the
 * row's largest magnitude. Prints "parity: B sequences, N_NEW tokens each:
 * same" or "... K near ties (the largest gap G)" and exits 0, or names the
 * first row beyond TOL and exits 1.
 *
 * gen: for each B, llama_generate_batch of B requests (prompts of PROMPT
 * made-up tokens, different for each, greedy, N_NEW tokens each) timed by
 * the host clock around the call, REPEATS times. Prints each run and
 * "gen median: batch B, prompt P, new N, X ms, Y tokens/s, first token
 * F ms, tokens H" (Y: generated tokens over the whole call; F: the median
 * of the requests' first tokens as the callback hears them; H: a hash of
 * every request's tokens, the same for the same tokens).
 *
 * mixed: N requests (prompts of PROMPT made-up tokens, different for each,
 * N_NEW greedy tokens each) arriving GAP ms apart, served by a server's loop
 * on the host, a llama_step_seqs a step (continuous batching: prompts
 * arriving while earlier requests decode). Each step takes one token of
 * every decoding request, then as much of the admitted prompts, in arrival
 * order, as the step's rows hold; a request is admitted once it has arrived
 * and a sequence and the cache pages of its whole life are free; the rows
 * that end a prompt or carry a decode token are drawn by llama_sample; a
 * request's sequence is closed when it has its tokens. Prints "mixed: N
 * requests, ... first token P50 / P90 ms (from arrival), X tokens/s, S
 * steps of R rows on average, same as alone: K of N" (alone: llama_generate
 * of each request by itself, run first, untimed) and exits 1 when K < N
 * with STRICT given (the C target's test: its steps of several rows take
 * the same bodies in the same order as a step of one). On a GPU a step's
 * products round with the rows beside them, and one flipped near tie
 * changes the rest of a free-running answer, so each request that parted
 * from its tokens alone is judged where it parted: its prompt and the
 * tokens both runs share are fed again alone, and the line adds "; the
 * other N - K parted at a near tie (the largest gap G)" when the token it
 * took there is within 1e-2 of that row's largest logit (parity's
 * measure), or names the first that is not.
 *
 * Built with -DBENCH_CUDA against a .cu file, the buffers a step takes are
 * device memory.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"
#include "bench.h"

#ifdef BENCH_CUDA
#include <cuda_runtime.h>
static void *
dev_alloc(size_t n)
{
	void *p = NULL;
	if (cudaMalloc(&p, n ? n : 1) != cudaSuccess)
		return NULL;
	return p;
}
#define to_dev(d, s, n) cudaMemcpy(d, s, n, cudaMemcpyHostToDevice)
#define to_host(d, s, n) cudaMemcpy(d, s, n, cudaMemcpyDeviceToHost)
#define dev_free cudaFree
#else
#define dev_alloc malloc
#define to_dev memcpy
#define to_host memcpy
#define dev_free free
#endif

static void
fail(llama *m, const char *what)
{
	fprintf(stderr, "mkc_batch: %s: %s\n", what, llama_last_error(m));
	exit(1);
}

/* Every sequence closed but 0, which is emptied; then b open: seq[0..b). */
static void
restart(llama *m, int *seq, int b)
{
	for (int q = 1; q < llama_max_seqs(); q++)
		if (llama_seq_len(m, q) >= 0)
			llama_seq_close(m, q);
	llama_cache_reset(m);
	seq[0] = 0;
	for (int q = 1; q < b; q++)
		if (llama_seq_open(m, &seq[q]))
			fail(m, "seq_open");
}

/* The buffers of a step of up to rows tokens, in the target's memory. */
typedef struct {
	int64_t *ids, *pos;
	float *logits;
	int64_t vocab;
} step_bufs;

static int
step(llama *m, step_bufs *sb, const int *seq, const int64_t *ids, const int64_t *pos, int n)
{
	to_dev(sb->ids, ids, (size_t)n * sizeof *ids);
	to_dev(sb->pos, pos, (size_t)n * sizeof *pos);
	const void *in[2] = {sb->ids, sb->pos};
	void *out[1] = {sb->logits};
	return llama_step_seqs(m, seq, n, in, out);
}

/* A near tie: a token within this of its row's largest logit, relative to the
 * row's largest magnitude (gap's measure; parity's default TOL, the mixed run's). */
#define NEAR_TIE 1e-2

/* Token i of sequence (or request) q's made-up prompt. */
static int64_t
prompt_token(int q, int64_t i, int64_t vocab)
{
	return (7 + 13 * i + 101 * q) % vocab;
}

static int64_t
argmax(const float *x, int64_t n)
{
	int64_t b = 0;
	for (int64_t i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* How far below the row's largest logit token t is, relative to the row's
 * largest magnitude (0: t is an argmax). */
static double
gap(const float *x, int64_t n, int64_t t)
{
	double top = x[0], mag = 0;
	for (int64_t i = 0; i < n; i++) {
		top = x[i] > top ? x[i] : top;
		mag = fabs(x[i]) > mag ? fabs(x[i]) : mag;
	}
	return mag > 0 ? (top - x[t]) / mag : 0;
}

static int
parity(llama *m, step_bufs *sb, int b, int n_new, double tol)
{
	int rows = (int)llama_max_dim(llama_step_dim()), *seq = malloc((size_t)b * sizeof *seq);
	int64_t *want = malloc((size_t)b * (size_t)n_new * sizeof *want);
	int64_t ids[4096], pos[4096];
	int who[4096], fed[4096] = {0};
	float *row = malloc((size_t)sb->vocab * sizeof *row);
	int ties = 0, bad_q = -1, bad_t = 0;
	double worst = 0, bad_gap = 0;
	for (int q = 0; q < b; q++) {   /* alone */
		int64_t prompt[1024];
		for (int i = 0; i < 1 + 3 * q; i++)
			prompt[i] = prompt_token(q, i, sb->vocab);
		restart(m, seq, 1);
		if (llama_generate(m, prompt, 1 + 3 * q, n_new, want + (size_t)q * n_new))
			fail(m, "generate");
	}
	/* row r of a step: sequence q's token t; compares its argmax with want */
#define CHECK(r, q, t)                                                                     \
	do {                                                                               \
		to_host(row, sb->logits + (size_t)(r) * sb->vocab, (size_t)sb->vocab * 4);  \
		const int64_t w = want[(size_t)(q) * n_new + (t)];                          \
		if (argmax(row, sb->vocab) != w) {                                           \
			const double g = gap(row, sb->vocab, w);                             \
			worst = g > worst ? g : worst;                                       \
			ties += g <= tol;                                                    \
			if (g > tol && bad_q < 0)                                            \
				bad_q = (q), bad_t = (t), bad_gap = g;                       \
		}                                                                          \
	} while (0)
	restart(m, seq, b);
	for (int done = 0; !done;) {   /* the prompts, rows of several sequences a step */
		int n = 0;
		done = 1;
		for (int q = 0; q < b; q++)
			while (fed[q] < 1 + 3 * q && n < rows) {
				who[n] = seq[q];
				ids[n] = prompt_token(q, fed[q], sb->vocab);
				pos[n++] = fed[q]++;
			}
		for (int q = 0; q < b; q++)
			done &= fed[q] == 1 + 3 * q;
		if (n && step(m, sb, who, ids, pos, n))
			fail(m, "a prompt step");
		/* a sequence whose prompt ended in this step: its first token */
		for (int r = 0; r < n; r++) {
			int q = 0;
			while (seq[q] != who[r])
				q++;
			if (pos[r] == 3 * q)
				CHECK(r, q, 0);
		}
	}
	for (int t = 1; t < n_new; t++) {   /* a token of each a step, alone's fed */
		for (int q = 0; q < b; q++) {
			who[q] = seq[q];
			ids[q] = want[(size_t)q * n_new + t - 1];
			pos[q] = 3 * q + t;
		}
		if (step(m, sb, who, ids, pos, b))
			fail(m, "a decode step");
		for (int q = 0; q < b; q++)
			CHECK(q, q, t);
	}
#undef CHECK
	if (bad_q >= 0)
		printf("parity: %d sequences, %d tokens each: sequence %d's token %d (alone %lld) is "
		       "%.3g below its row's largest logit (relative), beyond %g\n", b, n_new, bad_q,
		       bad_t, (long long)want[(size_t)bad_q * n_new + bad_t], bad_gap, tol);
	else if (ties)
		printf("parity: %d sequences, %d tokens each: same but %d near ties (the largest "
		       "gap %.3g, within %g)\n", b, n_new, ties, worst, tol);
	else
		printf("parity: %d sequences, %d tokens each: same\n", b, n_new);
	free(seq), free(want), free(row);
	return bad_q >= 0;
}

static void
timing(llama *m, step_bufs *sb, long long ctx, int b, int steps, int repeats, const void *past)
{
	int *seq = malloc((size_t)b * sizeof *seq);
	int64_t *ids = malloc((size_t)b * sizeof *ids), *pos = malloc((size_t)b * sizeof *pos);
	double *ms = malloc((size_t)repeats * sizeof *ms);
	for (int r = 0; r < repeats; r++) {
		restart(m, seq, b);
		for (int q = 0; q < b; q++)
			for (int c = 0; c < llama_num_caches() && ctx > 0; c++)
				if (llama_seq_cache_load(m, seq[q], c, past, ctx))
					fail(m, "seq_cache_load");
		double t0 = now();
		for (int j = 0; j < steps; j++) {
			for (int q = 0; q < b; q++)
				ids[q] = 7, pos[q] = ctx + j;
			if (step(m, sb, seq, ids, pos, b))
				fail(m, "step_seqs");
		}
		ms[r] = (now() - t0) * 1e3 / steps;
		printf("run %d: batch %d, context %lld, %d steps, %.4f ms per step\n", r + 1, b, ctx, steps,
		       ms[r]);
	}
	qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
	const double med = ms[repeats / 2];
	printf("median: batch %d, context %lld, %.4f ms per step, %.1f tokens/s\n", b, ctx, med,
	       b * 1e3 / med);
	fflush(stdout);
	free(seq), free(ids), free(pos), free(ms);
}

static double gen_t0, *gen_first;

static void
heard(void *user, int i, int64_t t)
{
	(void)user, (void)t;
	if (gen_first[i] < 0)
		gen_first[i] = (now() - gen_t0) * 1e3;
}

static void
gen_timing(llama *m, int b, int n_prompt, int n_new, int repeats, int64_t vocab)
{
	llama_request *rq = calloc((size_t)b, sizeof *rq);
	int64_t *prompts = malloc((size_t)b * (size_t)n_prompt * sizeof *prompts);
	int64_t *out = malloc((size_t)b * (size_t)n_new * sizeof *out);
	double *ms = malloc((size_t)repeats * sizeof *ms), *first = malloc((size_t)repeats * sizeof *first);
	gen_first = malloc((size_t)b * sizeof *gen_first);
	uint64_t h = 1469598103934665603ull;
	for (int q = 0; q < b; q++)
		for (int i = 0; i < n_prompt; i++)
			prompts[(size_t)q * n_prompt + i] = prompt_token(q, i, vocab);
	for (int r = 0; r < repeats; r++) {
		for (int q = 0; q < b; q++) {
			memset(&rq[q], 0, sizeof rq[q]);   /* greedy: temperature 0 */
			rq[q].prompt = prompts + (size_t)q * n_prompt, rq[q].n_prompt = n_prompt;
			rq[q].max_new = n_new, rq[q].out_tokens = out + (size_t)q * n_new;
			gen_first[q] = -1;
		}
		gen_t0 = now();
		if (llama_generate_batch(m, rq, b, heard, NULL))
			fail(m, "generate_batch");
		ms[r] = (now() - gen_t0) * 1e3;
		qsort(gen_first, (size_t)b, sizeof *gen_first, cmp_double);
		first[r] = gen_first[b / 2];
		printf("gen run %d: batch %d, %.3f ms, first token %.3f ms\n", r + 1, b, ms[r], first[r]);
	}
	for (size_t i = 0; i < (size_t)b * (size_t)n_new; i++)
		h = (h ^ (uint64_t)out[i]) * 1099511628211ull;
	qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
	qsort(first, (size_t)repeats, sizeof *first, cmp_double);
	printf("gen median: batch %d, prompt %d, new %d, %.3f ms, %.1f tokens/s, first token %.3f ms, "
	       "tokens %016llx\n", b, n_prompt, n_new, ms[repeats / 2],
	       (double)b * n_new * 1e3 / ms[repeats / 2], first[repeats / 2], (unsigned long long)h);
	fflush(stdout);
	free(rq), free(prompts), free(out), free(ms), free(first), free(gen_first);
}

/* A request of the mixed run. */
enum { WAITING, PROMPT, DECODING, DONE };
typedef struct {
	int state;        /* WAITING (not admitted), PROMPT (being fed), DECODING, DONE */
	int seq, fed, got;
	int64_t last;     /* its last token drawn */
	double first_ms;  /* arrival to first token */
} mixed_req;

/* Pages a sequence of n positions holds. */
static int64_t
pages_of(int64_t n)
{
	return (n + llama_page_size() - 1) / llama_page_size();
}

/*
 * How far below the top of the logits that follow tokens[0..len) alone
 * (fed again in steps of up to the compiled rows) token t is: gap's
 * measure. A mixed run's request that parted from its tokens alone at
 * token d took t where alone took another: a near tie there is rounding.
 */
static double
gap_alone(llama *m, step_bufs *sb, const int64_t *tokens, int64_t len, int64_t t, float *row)
{
	const int rows = (int)llama_max_dim(llama_step_dim());
	int seq;
	int64_t ids[4096], pos[4096];
	int who[4096] = {0};
	restart(m, &seq, 1);
	for (int64_t i = 0; i < len;) {
		int k = 0;
		for (; k < rows && k < 4096 && i < len; k++, i++)
			ids[k] = tokens[i], pos[k] = i;
		if (step(m, sb, who, ids, pos, k))
			fail(m, "a step alone");
		if (i == len)
			to_host(row, sb->logits + (size_t)(k - 1) * sb->vocab, (size_t)sb->vocab * 4);
	}
	return gap(row, sb->vocab, t);
}

static int
mixed_run(llama *m, step_bufs *sb, int n, int n_prompt, int n_new, double gap, int strict)
{
	const int rows = (int)llama_max_dim(llama_step_dim());
	mixed_req *rq = calloc((size_t)n, sizeof *rq);
	int64_t *prompts = malloc((size_t)n * (size_t)n_prompt * sizeof *prompts);
	int64_t *alone = malloc((size_t)n * (size_t)n_new * sizeof *alone);
	int64_t *out = malloc((size_t)n * (size_t)n_new * sizeof *out);
	int64_t *ids = malloc((size_t)rows * sizeof *ids), *pos = malloc((size_t)rows * sizeof *pos);
	int64_t *at = malloc((size_t)rows * sizeof *at), *drawn = malloc((size_t)rows * sizeof *drawn);
	int *who = malloc((size_t)rows * sizeof *who), *owner = malloc((size_t)rows * sizeof *owner);
	llama_sampling *greedy = calloc((size_t)rows, sizeof *greedy);
	double *first = malloc((size_t)n * sizeof *first);
	int seq0, same = 0, steps = 0, done = 0, next = 0;
	long long fed_rows = 0;
	const int64_t life = pages_of(n_prompt + n_new);
	for (int q = 0; q < n; q++)
		for (int i = 0; i < n_prompt; i++)
			prompts[(size_t)q * n_prompt + i] = prompt_token(q, i, sb->vocab);
	for (int q = 0; q < n; q++) {   /* each alone, untimed */
		restart(m, &seq0, 1);
		if (llama_generate(m, prompts + (size_t)q * n_prompt, n_prompt, n_new,
				   alone + (size_t)q * n_new))
			fail(m, "generate");
	}
	restart(m, &seq0, 1);
	int idle0 = 1;   /* sequence 0 is open and empty: the next admitted request's */
	const double t0 = now();
	while (done < n) {
		const double t = (now() - t0) * 1e3;
		/* admissions: arrived, a sequence free, and the pages of every
		 * admitted request's whole life */
		int64_t owed = 0, open = 0;
		for (int q = 0; q < next; q++)
			if (rq[q].state == PROMPT || rq[q].state == DECODING) {
				owed += life - pages_of(llama_seq_len(m, rq[q].seq));
				open++;
			}
		while (next < n && next * gap <= t && open < llama_max_seqs() &&
		       llama_free_pages(m) - owed >= life) {
			if (idle0)
				rq[next].seq = 0, idle0 = 0;
			else if (llama_seq_open(m, &rq[next].seq))
				fail(m, "seq_open");
			rq[next++].state = PROMPT;
			owed += life, open++;
		}
		int k = 0;   /* the step: a token of each decoding request, then prompts */
		for (int q = 0; q < next; q++)
			if (rq[q].state == DECODING) {
				who[k] = rq[q].seq, owner[k] = q, ids[k] = rq[q].last;
				pos[k++] = n_prompt + rq[q].got - 1;
			}
		for (int q = 0; q < next && k < rows; q++)
			while (rq[q].state == PROMPT && rq[q].fed < n_prompt && k < rows) {
				who[k] = rq[q].seq, owner[k] = q;
				ids[k] = prompts[(size_t)q * n_prompt + rq[q].fed];
				pos[k++] = rq[q].fed++;
			}
		if (k == 0)   /* nothing admitted yet: wait for the next arrival */
			continue;
		if (step(m, sb, who, ids, pos, k))
			fail(m, "step_seqs");
		for (int r = 0; r < k; r++)
			at[r] = pos[r] + 1;
		if (llama_sample(m, sb->logits, k, greedy, at, drawn))
			fail(m, "sample");
		steps++, fed_rows += k;
		for (int r = 0; r < k; r++) {
			mixed_req *x = &rq[owner[r]];
			if (x->state == PROMPT && pos[r] != n_prompt - 1)
				continue;   /* inside a prompt: no token */
			x->state = DECODING;
			x->last = out[(size_t)owner[r] * n_new + x->got++] = drawn[r];
			if (x->got == 1)
				x->first_ms = (now() - t0) * 1e3 - owner[r] * gap;
			if (x->got == n_new) {   /* its pages back; sequence 0 kept open */
				if (x->seq ? llama_seq_close(m, x->seq) : llama_cache_reset(m))
					fail(m, "seq_close");
				idle0 |= x->seq == 0;
				x->state = DONE;
				done++;
			}
		}
	}
	const double ms = (now() - t0) * 1e3;
	for (int q = 0; q < n; q++) {
		first[q] = rq[q].first_ms;
		same += !memcmp(out + (size_t)q * n_new, alone + (size_t)q * n_new,
				(size_t)n_new * sizeof *out);
	}
	qsort(first, (size_t)n, sizeof *first, cmp_double);
	printf("mixed: %d requests, prompt %d, new %d, %.3f ms apart: %.3f ms, first token %.3f / "
	       "%.3f ms (median / 90th percentile, from arrival), %.1f tokens/s, %d steps of %.1f "
	       "rows on average, same as alone: %d of %d", n, n_prompt, n_new, gap, ms,
	       first[n / 2], first[n * 9 / 10],
	       (double)n * n_new * 1e3 / ms, steps, steps ? (double)fed_rows / steps : 0.0, same, n);
	/* where the others parted: the shared tokens fed again alone */
	int64_t *seen = malloc((size_t)(n_prompt + n_new) * sizeof *seen);
	float *row = malloc((size_t)sb->vocab * sizeof *row);
	double worst = 0;
	int far_q = -1, far_d = 0;
	for (int q = 0; q < n && same < n; q++) {
		const int64_t *o = out + (size_t)q * n_new, *a = alone + (size_t)q * n_new;
		int d = 0;
		while (d < n_new && o[d] == a[d])
			d++;
		if (d == n_new)
			continue;
		memcpy(seen, prompts + (size_t)q * n_prompt, (size_t)n_prompt * sizeof *seen);
		memcpy(seen + n_prompt, a, (size_t)d * sizeof *seen);
		const double g = gap_alone(m, sb, seen, n_prompt + d, o[d], row);
		worst = g > worst ? g : worst;
		if (g > NEAR_TIE && far_q < 0)
			far_q = q, far_d = d;
	}
	if (same < n && far_q < 0)
		printf("; the other %d parted at a near tie (the largest gap %.3g)", n - same, worst);
	else if (same < n)
		printf("; request %d parted at its token %d, not at a near tie (the largest gap %.3g)",
		       far_q, far_d, worst);
	printf("\n");
	/* STRICT also checks the judge: request 0's prompt and first half fed
	 * again alone put the next of its tokens alone on top */
	int judge = 0;
	if (strict) {
		const int d = n_new / 2;
		memcpy(seen, prompts, (size_t)n_prompt * sizeof *seen);
		memcpy(seen + n_prompt, alone, (size_t)d * sizeof *seen);
		const double g = gap_alone(m, sb, seen, n_prompt + d, alone[d], row);
		if (g > 0) {
			printf("mixed: request 0 fed again alone puts its token %d %.3g below the top\n",
			       d, g);
			judge = 1;
		}
	}
	fflush(stdout);
	free(seen), free(row);
	free(rq), free(prompts), free(alone), free(out), free(ids), free(pos), free(at);
	free(drawn), free(who), free(owner), free(greedy), free(first);
	return strict ? same < n || judge : far_q >= 0;
}

int
main(int argc, char **argv)
{
	if (argc < 5 || ((strcmp(argv[2], "time") || argc < 8) && strcmp(argv[2], "parity") &&
			 (strcmp(argv[2], "gen") || argc < 7) &&
			 (strcmp(argv[2], "mixed") || argc < 7))) {
		fprintf(stderr, "usage: mkc_batch MODEL time CTX B,... STEPS REPEATS ROW [TRACE]\n"
			"       mkc_batch MODEL parity B N_NEW [TOL]\n"
			"       mkc_batch MODEL gen B,... PROMPT N_NEW REPEATS\n"
			"       mkc_batch MODEL mixed N PROMPT N_NEW GAP [STRICT]\n");
		return 2;
	}
	llama *m;
	if (llama_create(&m, NULL) || llama_load_weights(m, argv[1]))
		fail(m, "create");
	if (llama_max_seqs() < 1) {
		fprintf(stderr, "mkc_batch: the model was compiled without --max-seqs\n");
		return 2;
	}
	int64_t shape[4], dims[8];
	for (int i = 0; i < llama_num_dims(); i++)
		dims[i] = 1;
	llama_output_shape(0, dims, shape);
	step_bufs sb = {.vocab = shape[2]};
	const int rows = (int)llama_max_dim(llama_step_dim());
	sb.ids = dev_alloc((size_t)rows * 8);
	sb.pos = dev_alloc((size_t)rows * 8);
	sb.logits = dev_alloc((size_t)rows * (size_t)sb.vocab * 4);
	if (!sb.ids || !sb.pos || !sb.logits) {
		fprintf(stderr, "mkc_batch: out of memory\n");
		return 1;
	}
	int rc = 0;
	if (!strcmp(argv[2], "parity")) {
		rc = parity(m, &sb, atoi(argv[3]), atoi(argv[4]), argc > 5 ? atof(argv[5]) : NEAR_TIE);
	} else if (!strcmp(argv[2], "mixed")) {
		const int n = atoi(argv[3]), n_prompt = atoi(argv[4]), n_new = atoi(argv[5]);
		const double gap = atof(argv[6]);
		if (n < 1 || n_prompt < 1 || n_new < 1 || gap < 0 ||
		    n_prompt + n_new > llama_cache_capacity() ||
		    pages_of(n_prompt + n_new) > llama_free_pages(m)) {
			fprintf(stderr, "mkc_batch: N, PROMPT and N_NEW >= 1, GAP >= 0, and a request's "
				"PROMPT + N_NEW within a sequence's capacity (%lld) and the page pool\n",
				(long long)llama_cache_capacity());
			rc = 2;
		} else {
			rc = mixed_run(m, &sb, n, n_prompt, n_new, gap, argc > 7 && atoi(argv[7]));
		}
	} else if (!strcmp(argv[2], "gen")) {
		const int n_prompt = atoi(argv[4]), n_new = atoi(argv[5]), repeats = atoi(argv[6]);
		if (n_prompt < 1 || n_new < 1 || repeats < 1) {
			fprintf(stderr, "mkc_batch: PROMPT, N_NEW and REPEATS >= 1\n");
			return 2;
		}
		for (int i = 0; nth(argv[3], i) > 0; i++)
			gen_timing(m, (int)nth(argv[3], i), n_prompt, n_new, repeats, sb.vocab);
	} else {
		const long long ctx = atoll(argv[3]), row = atoll(argv[7]);
		const int steps = atoi(argv[5]), repeats = atoi(argv[6]);
		if (ctx < 0 || steps < 1 || repeats < 1 || row < 1) {
			fprintf(stderr, "mkc_batch: CTX >= 0, STEPS, REPEATS and ROW >= 1\n");
			return 2;
		}
		size_t n = (size_t)(ctx ? ctx : 1) * (size_t)row;
		float *past = malloc(n * sizeof *past);
		unsigned s = 12345u;
		for (size_t i = 0; past && i < n; i++) {
			s = s * 1103515245u + 12345u;
			past[i] = (float)((int)(s >> 9 & 0xffff) - 32768) / 32768.0f;
		}
		for (int i = 0; past && nth(argv[4], i) > 0; i++)
			timing(m, &sb, ctx, (int)nth(argv[4], i), steps, repeats, past);
		free(past);
		if (argc > 8 && llama_profile_write(m, argv[8]))
			fail(m, "profile_write");
	}
	dev_free(sb.ids), dev_free(sb.pos), dev_free(sb.logits);
	llama_destroy(m);
	return rc;
}
