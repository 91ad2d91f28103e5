/*
 * seqs_batch.c - several sequences in shared steps (mkc --max-seqs), built
 * by tests/compiler/test_seqs.c against a Hugging Face folder compiled as
 * batch.c (--max-seqs 4 --max-chunk 8, small pages) and run under the
 * sanitizers. Three prompts of different lengths are first run alone, a
 * sequence each in chunks of up to 4 tokens and then 4 greedy tokens; then
 * together, in steps that interleave their rows (prompt chunks of two or
 * three sequences in one step, then one decode token of each per step).
 * Every row's logits must be the alone run's at that position, the greedy
 * tokens the same, and each sequence's caches read back the same. Then a
 * fork shares a prefix and copies on write, closing gives pages back, and
 * bad steps are refused with a sentence, changing nothing, and a full pool
 * too. With an argument, the steps run the shuffled queue under that seed
 * (a missing dependency shows as other logits). A line per check; exit
 * status 0 when the program ran to the end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

/*
 * With -DSEQS_CUDA (a model compiled to batch.cu, linked by nvcc) every
 * buffer the calls take is managed memory: the GPU's, readable here after
 * each call (tools/gpu_check.sh runs it so).
 */
#ifdef SEQS_CUDA
#include <cuda_runtime.h>
static void *
alloc(size_t n)
{
	void *p = NULL;
	if (cudaMallocManaged(&p, n ? n : 1, cudaMemAttachGlobal) != cudaSuccess) {
		fprintf(stderr, "cudaMallocManaged failed\n");
		exit(10);
	}
	return p;
}
#define release cudaFree
#else
static void *
alloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		exit(10);
	return p;
}
#define release free
#endif

enum { NSEQ = 3, DECODE = 4, MAXT = 32, MAXROWS = 8 };

/* relative to the largest: the C target computes a row alike in any step;
 * on a GPU a step of several rows multiplies on tensor cores in bf16 where a
 * lone decode token does not, so gpu_check.sh gives wider ones */
#ifndef LOGIT_TOL
#define LOGIT_TOL 1e-5
#endif
#ifndef CACHE_TOL
#define CACHE_TOL 1e-6
#endif

static const int plen[NSEQ] = {5, 9, 3};
static int64_t vocab;
static float *ref_logits[NSEQ];      /* [MAXT][vocab]: after each token fed alone */
static int64_t ref_tok[NSEQ][MAXT];  /* the tokens fed alone: prompt, then greedy */
static float *ref_cache[NSEQ][16];

static int64_t
prompt_token(int q, int i)
{
	return (q * 37 + i * 11 + 3) % vocab;
}

static int64_t
argmax(const float *x)
{
	int64_t b = 0;
	for (int64_t i = 1; i < vocab; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* floats a cache of sequence q holds: [1, kv_heads 2, len, head 16] (the folder's) */
static size_t
cache_floats(const batch *m, int q)
{
	return (size_t)batch_seq_len(m, q) * 2 * 16;
}

/*
 * Cache c of sequence q into dst (cache_floats of them) as floats: a bf16
 * cache (mkc --kv bf16) is read as its bf16 values, then widened in place
 * from the last (float i lands past bf16 i, which is read first).
 */
static int
read_cache(batch *m, int q, int c, float *dst)
{
	if (batch_seq_cache_read(m, q, c, dst))
		return -1;
	if (batch_cache_dtype(c) == 16) {
		const uint16_t *h = (const uint16_t *)dst;
		for (size_t i = cache_floats(m, q); i-- > 0;) {
			uint32_t w = (uint32_t)h[i] << 16;
			memcpy(&dst[i], &w, sizeof w);
		}
	}
	return 0;
}

/* One step of rows tokens: toks[r] of sequence who[r]; logits [rows][vocab]. */
static int
step(batch *m, const int *who, const int64_t *toks, int rows, float *logits)
{
	static int64_t *tk, *pos;   /* the target's memory */
	int64_t seen[64] = {0};
	if (!tk) {
		tk = alloc((MAXROWS + 1) * sizeof *tk);
		pos = alloc((MAXROWS + 1) * sizeof *pos);
	}
	for (int r = 0; r < rows; r++) {   /* (a sequence that is not open: any position) */
		pos[r] = batch_seq_len(m, who[r]) + seen[who[r] & 63]++;
		tk[r] = toks[r];
	}
	const void *in[2] = {tk, pos};
	void *out[1] = {logits};
	return batch_step_seqs(m, who, rows, in, out);
}

static double
worst(const float *a, const float *b, size_t n)
{
	double w = 0, big = 1e-30;
	for (size_t i = 0; i < n; i++) {
		w = fmax(w, fabs((double)a[i] - b[i]));
		big = fmax(big, fabs((double)b[i]));
	}
	return w / big;
}

int
main(int argc, char **argv)
{
	batch *m;
	/* an argument: the shuffled queue under that seed, 4 threads (race testing) */
	batch_options opt = {4, argc > 1 ? (unsigned)atoi(argv[1]) : 0, 0};
	if (batch_create(&m, argc > 1 ? &opt : NULL) || batch_load_weights(m, DIR)) {
		printf("setup: %s\n", batch_last_error(m));
		return 9;
	}
	int64_t shape[4], dims[4] = {1, 1, 1, 1};
	batch_output_shape(0, dims, shape);
	vocab = shape[2];
	printf("max_seqs %d, page %lld, caches %d, vocab %lld\n", batch_max_seqs(),
	       (long long)batch_page_size(), batch_num_caches(), (long long)vocab);
	const int nc = batch_num_caches();
	float *lg = alloc((size_t)MAXROWS * (size_t)vocab * sizeof *lg);
	/* alone: sequence 0, restarted for each prompt */
	for (int q = 0; q < NSEQ; q++) {
		ref_logits[q] = malloc((size_t)MAXT * (size_t)vocab * sizeof(float));
		batch_cache_reset(m);
		int fed = 0, who[MAXROWS] = {0};
		int64_t toks[MAXROWS];
		while (fed < plen[q]) {
			int n = plen[q] - fed < 4 ? plen[q] - fed : 4;
			for (int r = 0; r < n; r++)
				toks[r] = ref_tok[q][fed + r] = prompt_token(q, fed + r);
			if (step(m, who, toks, n, lg)) {
				printf("alone: %s\n", batch_last_error(m));
				return 8;
			}
			memcpy(ref_logits[q] + (size_t)fed * vocab, lg, (size_t)n * vocab * sizeof(float));
			fed += n;
		}
		for (int d = 0; d < DECODE; d++) {
			toks[0] = ref_tok[q][fed] = argmax(ref_logits[q] + (size_t)(fed - 1) * vocab);
			if (step(m, who, toks, 1, lg))
				return 7;
			memcpy(ref_logits[q] + (size_t)fed * vocab, lg, (size_t)vocab * sizeof(float));
			fed++;
		}
		for (int c = 0; c < nc; c++) {
			ref_cache[q][c] = alloc(cache_floats(m, 0) * sizeof(float));
			if (read_cache(m, 0, c, ref_cache[q][c]))
				return 6;
		}
	}
	printf("alone: sequence 0 holds %lld positions\n", (long long)batch_seq_len(m, 0));
	batch_cache_reset(m);

	/* together: sequence q of the shared run is seq[q] */
	int seq[NSEQ], fed[NSEQ] = {0};
	seq[0] = 0;
	if (batch_seq_open(m, &seq[1]) || batch_seq_open(m, &seq[2]))
		return 5;
	/* the prompt steps: rows interleaved (-1 ends a step) */
	static const int plan[] = {1, 0, 1, 0, 1, 0, 1, -1,   /* B A B A B A B: 4 of B, 3 of A */
				   1, 2, 0, 1, 2, 0, 1, -1,   /* B C A B C A B: A done, C 2 */
				   2, 1, 1, -1};              /* C done, B done */
	double w = 0;
	int rows = 0, who[MAXROWS], whose[MAXROWS];
	int64_t toks[MAXROWS];
	for (size_t i = 0; i < sizeof plan / sizeof *plan; i++) {
		if (plan[i] >= 0) {
			int q = plan[i];
			whose[rows] = q;
			who[rows] = seq[q];
			toks[rows++] = ref_tok[q][fed[q]++];
			continue;
		}
		if (step(m, who, toks, rows, lg)) {
			printf("together: %s\n", batch_last_error(m));
			return 4;
		}
		int at[NSEQ];
		for (int q = 0; q < NSEQ; q++)
			at[q] = fed[q];
		for (int r = rows - 1; r >= 0; r--) {   /* row r is its sequence's token at[q] - 1 */
			int q = whose[r];
			at[q]--;
			w = fmax(w, worst(lg + (size_t)r * vocab, ref_logits[q] + (size_t)at[q] * vocab,
					  (size_t)vocab));
		}
		rows = 0;
	}
	int same = 1;
	for (int d = 0; d < DECODE; d++) {   /* one token of each, the last sequence first */
		for (int k = 0; k < NSEQ; k++) {
			int q = NSEQ - 1 - k;
			whose[k] = q;
			who[k] = seq[q];
			toks[k] = ref_tok[q][fed[q]];
		}
		if (step(m, who, toks, NSEQ, lg)) {
			printf("decode: %s\n", batch_last_error(m));
			return 3;
		}
		for (int k = 0; k < NSEQ; k++) {
			int q = whose[k];
			w = fmax(w, worst(lg + (size_t)k * vocab, ref_logits[q] + (size_t)fed[q] * vocab,
					  (size_t)vocab));
			/* the greedy token after it, as alone (the last one is nobody's) */
			if (fed[q] + 1 < plen[q] + DECODE)
				same &= argmax(lg + (size_t)k * vocab) == ref_tok[q][fed[q] + 1];
			fed[q]++;
		}
	}
	double wc = 0;
	for (int q = 0; q < NSEQ; q++)
		for (int c = 0; c < nc; c++) {
			size_t n = cache_floats(m, seq[q]);
			float *got = alloc(n * sizeof *got);
			if (read_cache(m, seq[q], c, got))
				return 2;
			wc = fmax(wc, worst(got, ref_cache[q][c], n));
			release(got);
		}
	printf("together: logits %s, greedy tokens %s, caches %s, lengths %lld %lld %lld\n",
	       w <= LOGIT_TOL ? "same" : "DIFFER", same ? "same" : "DIFFER",
	       wc <= CACHE_TOL ? "same" : "DIFFER",
	       (long long)batch_seq_len(m, seq[0]), (long long)batch_seq_len(m, seq[1]),
	       (long long)batch_seq_len(m, seq[2]));
	printf("worst: logits %g, caches %g (relative)\n", w, wc);

	/* a fork of A, then the same token for both, then the fork alone */
	int f;
	int64_t before = batch_free_pages(m);
	if (batch_seq_fork(m, seq[0], &f))
		return 1;
	printf("fork: %lld positions, %lld pages taken\n", (long long)batch_seq_len(m, f),
	       (long long)(before - batch_free_pages(m)));
	int two[2] = {f, seq[0]};
	int64_t t2[2] = {7, 7};
	float *l2 = alloc(2 * (size_t)vocab * sizeof *l2);
	if (step(m, two, t2, 2, l2))
		return 1;
	printf("fork: same token, logits %s\n",
	       worst(l2, l2 + vocab, (size_t)vocab) == 0 ? "same" : "DIFFER");
	size_t na = cache_floats(m, seq[0]);
	float *a0 = alloc(na * sizeof *a0), *a1 = alloc(na * sizeof *a1);
	read_cache(m, seq[0], 0, a0);
	int one[1] = {f};
	int64_t t1[1] = {9};
	for (int k = 0; k < 6; k++)   /* the fork grows; A's positions must not move */
		if (step(m, one, t1, 1, l2))
			return 1;
	read_cache(m, seq[0], 0, a1);
	printf("fork: the source's cache %s, lengths %lld and %lld\n",
	       memcmp(a0, a1, na * sizeof *a0) == 0 ? "kept" : "CHANGED",
	       (long long)batch_seq_len(m, seq[0]), (long long)batch_seq_len(m, f));

	/* bad steps: each refused, changing nothing */
	int64_t len0 = batch_seq_len(m, seq[1]);
	int bad[2] = {seq[1], 99};
	printf("unknown: %d %s\n", step(m, bad, t2, 2, l2), batch_last_error(m));
	if (batch_seq_close(m, seq[2]))
		return 1;
	int closed[1] = {seq[2]};
	printf("closed: %d %s\n", step(m, closed, t1, 1, l2), batch_last_error(m));
	printf("twice: %d %s\n", batch_seq_close(m, seq[2]), batch_last_error(m));
	int64_t *wrong = alloc(2 * sizeof *wrong), *ptoks = alloc(2 * sizeof *ptoks);
	wrong[0] = 3, wrong[1] = 4, ptoks[0] = ptoks[1] = 5;
	int row2[2] = {seq[1], seq[1]};
	const void *win[2] = {ptoks, wrong};
	void *wout[1] = {l2};
	printf("positions: %d %s\n", batch_step_seqs(m, row2, 2, win, wout), batch_last_error(m));
	printf("none: %d %s\n", batch_step_seqs(m, NULL, 1, win, wout), batch_last_error(m));
	static int many[MAXROWS + 1];
	printf("rows: %d %s\n", batch_step_seqs(m, many, MAXROWS + 1, win, wout), batch_last_error(m));
	printf("unchanged: %s\n", batch_seq_len(m, seq[1]) == len0 ? "yes" : "NO");

	/* the pool: a sequence's pages go back when it closes; a full pool is refused */
	before = batch_free_pages(m);
	int64_t held = (batch_seq_len(m, seq[1]) + batch_page_size() - 1) / batch_page_size();
	batch_seq_close(m, seq[1]);
	printf("close: %lld pages back (of %lld held)\n", (long long)(batch_free_pages(m) - before),
	       (long long)held);
	int g;
	if (batch_seq_open(m, &g))
		return 1;
	int grow[MAXROWS];
	int64_t gt[MAXROWS];
	for (int r = 0; r < MAXROWS; r++)
		grow[r] = g, gt[r] = r;
	int rc = 0;
	while (rc == 0)
		rc = step(m, grow, gt, MAXROWS, lg);
	printf("full: %s; sequence %d holds %lld\n", batch_last_error(m), g,
	       (long long)batch_seq_len(m, g));
	release(a0);
	release(a1);
	release(lg);
	release(l2);
	release(wrong);
	release(ptoks);
	for (int q = 0; q < NSEQ; q++) {
		free(ref_logits[q]);
		for (int c = 0; c < nc; c++)
			release(ref_cache[q][c]);
	}
	batch_destroy(m);
	return 0;
}
