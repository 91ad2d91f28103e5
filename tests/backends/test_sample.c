/*
 * test_sample.c - runtime/sample.h, the draw of the next token, run as the
 * C target runs it (one lane): its draws against the probabilities they
 * are drawn from (a chi-square test over many draws on a small vocabulary,
 * with the kept tokens worked out here in float64 by sorting, as
 * transformers' top-k and top-p warpers do), its exp and log against libm,
 * its seed, and the logits it must never draw. tests/gpu/sample.cu runs
 * the same body on a GPU block against this copy, token for token.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/limits.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../../runtime/common.h"
#include "../../runtime/bf16.h"
#include "../../runtime/sample.h"
#pragma GCC diagnostic pop

static int64_t
draw(const float *x, int64_t n, mkc_rt_sampling s, uint64_t ctr)
{
	mkc_rt_sample_scratch sh;
	static mkc_rt_draw_acc acc;
	return mkc_rt_sample(x, n, 0, &s, ctr, &sh, &acc);
}

static int
by_logit_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x < y) - (x > y);
}

/*
 * The probability of each of n tokens under s, in float64: softmax of
 * x / T over the tokens whose logit is at least the k-th largest, then the
 * fewest likeliest of those whose probability reaches top_p (ties kept).
 */
static void
expected(const float *x, int n, mkc_rt_sampling s, double *p)
{
	double sorted[64], lo = -INFINITY;
	cr_assert(n <= 64);
	for (int i = 0; i < n; i++)
		sorted[i] = x[i];
	qsort(sorted, (size_t)n, sizeof *sorted, by_logit_desc);
	if (s.top_k > 0 && s.top_k < n)
		lo = sorted[s.top_k - 1];
	double z = 0;
	for (int i = 0; i < n; i++)
		z += x[i] >= lo ? exp((x[i] - sorted[0]) / s.temperature) : 0;
	if (s.top_p > 0 && s.top_p < 1) {
		double acc = 0;
		for (int i = 0; i < n && sorted[i] >= lo; i++) {
			acc += exp((sorted[i] - sorted[0]) / s.temperature) / z;
			if (acc >= s.top_p) {
				lo = sorted[i];
				break;
			}
		}
		z = 0;
		for (int i = 0; i < n; i++)
			z += x[i] >= lo ? exp((x[i] - sorted[0]) / s.temperature) : 0;
	}
	for (int i = 0; i < n; i++)
		p[i] = x[i] >= lo ? exp((x[i] - sorted[0]) / s.temperature) / z : 0;
}

/*
 * draws draws under s (a counter each) against expected(): no token of
 * probability 0 drawn, and Pearson's statistic under the chi-square's
 * quantile of 1 - 1e-5 (Wilson and Hilferty's approximation), so a right
 * sampler fails one run in 100,000.
 */
static void
follows(const float *x, int n, mkc_rt_sampling s, int draws)
{
	double p[64];
	int count[64] = {0};
	expected(x, n, s, p);
	for (int d = 0; d < draws; d++) {
		int64_t t = draw(x, n, s, (uint64_t)d);
		cr_assert(t >= 0 && t < n, "token %lld", (long long)t);
		count[t]++;
	}
	double chi = 0;
	int df = -1;
	for (int i = 0; i < n; i++) {
		if (p[i] == 0) {
			cr_assert_eq(count[i], 0, "token %d (probability 0 under T %g, k %d, p %g) drawn "
				     "%d times", i, s.temperature, s.top_k, s.top_p, count[i]);
			continue;
		}
		double e = p[i] * draws;
		chi += (count[i] - e) * (count[i] - e) / e;
		df++;
	}
	cr_assert(df >= 1);
	double h = 2.0 / (9 * df), crit = df * pow(1 - h + 4.265 * sqrt(h), 3);
	cr_assert(chi < crit, "chi-square %.2f over %d degrees of freedom (limit %.2f) under T %g, "
		  "k %d, p %g", chi, df, crit, s.temperature, s.top_k, s.top_p);
}

static const float small[10] = {1.3f, -0.4f, 2.1f, 0.2f, 2.0f, -1.7f, 0.9f, 1.1f, -3.0f, 0.5f};

Test(sample, draws_follow_softmax)
{
	follows(small, 10, (mkc_rt_sampling){1.0f, 0, 0, 7}, 60000);
	follows(small, 10, (mkc_rt_sampling){0.5f, 0, 0, 8}, 60000);
	follows(small, 10, (mkc_rt_sampling){2.5f, 0, 1, 9}, 60000);
}

Test(sample, top_k_and_top_p_cut_the_tail)
{
	follows(small, 10, (mkc_rt_sampling){1.5f, 4, 0, 11}, 60000);
	follows(small, 10, (mkc_rt_sampling){1.0f, 0, 0.7f, 12}, 60000);
	follows(small, 10, (mkc_rt_sampling){0.8f, 6, 0.9f, 13}, 60000);
	follows(small, 10, (mkc_rt_sampling){1.0f, 10, 0.999f, 14}, 60000);
}

Test(sample, ties_at_the_cut_are_kept)
{
	const float x[6] = {1.0f, 3.0f, 2.0f, 2.0f, 0.5f, 3.0f};
	follows(x, 6, (mkc_rt_sampling){1.0f, 3, 0, 21}, 40000);   /* both 2.0s stay */
	follows(x, 6, (mkc_rt_sampling){1.0f, 1, 0, 22}, 40000);   /* both 3.0s */
	follows(x, 6, (mkc_rt_sampling){1.0f, 0, 0.5f, 23}, 40000);
}

Test(sample, a_seed_repeats_its_draws)
{
	int same = 0;
	for (uint64_t c = 0; c < 200; c++) {
		int64_t a = draw(small, 10, (mkc_rt_sampling){1.0f, 0, 0, 5}, c);
		cr_assert_eq(a, draw(small, 10, (mkc_rt_sampling){1.0f, 0, 0, 5}, c));
		same += a == draw(small, 10, (mkc_rt_sampling){1.0f, 0, 0, 6}, c);
	}
	/* two seeds agree where two independent draws would: about 0.2 of the time */
	cr_assert(same < 80, "seeds 5 and 6 agree on %d draws of 200", same);
}

Test(sample, never_draws_what_cannot_be_drawn)
{
	const float x[5] = {-INFINITY, NAN, 0.0f, -INFINITY, 0.0f};
	for (uint64_t c = 0; c < 500; c++) {
		int64_t t = draw(x, 5, (mkc_rt_sampling){100.0f, 0, 0, 3}, c);
		cr_assert(t == 2 || t == 4, "drew %lld", (long long)t);
	}
	const float inf[4] = {0.0f, INFINITY, 1.0f, INFINITY};
	cr_assert_eq(draw(inf, 4, (mkc_rt_sampling){1.0f, 0, 0, 3}, 0), 1);
	const float none[3] = {-INFINITY, NAN, -INFINITY};
	cr_assert_eq(draw(none, 3, (mkc_rt_sampling){1.0f, 0, 0, 3}, 0), 0);
	/* greedy (temperature 0): the first of equals; NaN lowest */
	cr_assert_eq(draw(x, 5, (mkc_rt_sampling){0, 0, 0, 3}, 0), 2);
	cr_assert_eq(draw(inf, 4, (mkc_rt_sampling){0, 0, 0, 3}, 0), 1);
}

/* float16 logits (a float16 model's): the same draws as their float32 values */
Test(sample, half_logits_draw_as_float)
{
	uint16_t h[10];
	float w[10];
	for (int i = 0; i < 10; i++) {
		h[i] = mkc_rt_to_half(small[i]);
		w[i] = mkc_rt_half(h[i]);
	}
	mkc_rt_sampling s = {0.9f, 5, 0.8f, 4};
	mkc_rt_sample_scratch sh;
	static mkc_rt_draw_acc acc;
	for (uint64_t c = 0; c < 300; c++)
		cr_assert_eq(mkc_rt_sample(h, 10, 1, &s, c, &sh, &acc), draw(w, 10, s, c));
}

/*
 * A vocabulary of Llama 3's size: every draw from the kept set that a sort
 * gives (top-k 50, then top-p 0.9), and more than one token drawn.
 */
Test(sample, large_vocabulary_stays_in_the_kept_set)
{
	enum { N = 128256 };
	float *x = malloc(N * sizeof *x);
	double *sorted = malloc(N * sizeof *sorted);
	cr_assert(x && sorted);
	uint64_t r = 1;
	for (int i = 0; i < N; i++) {
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (float)((double)(r >> 11) * 0x1p-53 * 12.0 - 6.0);
		sorted[i] = x[i];
	}
	qsort(sorted, N, sizeof *sorted, by_logit_desc);
	const mkc_rt_sampling s = {1.0f, 50, 0.9f, 99};
	double z = 0, acc = 0, lo = sorted[49];
	for (int i = 0; i < 50; i++)
		z += exp(sorted[i] - sorted[0]);
	for (int i = 0; i < 50; i++)
		if ((acc += exp(sorted[i] - sorted[0]) / z) >= 0.9) {
			lo = sorted[i];
			break;
		}
	int64_t seen = -1;
	int distinct = 0;
	for (uint64_t c = 0; c < 300; c++) {
		int64_t t = draw(x, N, s, c);
		cr_assert(t >= 0 && t < N && x[t] >= lo, "drew %lld (logit %g, cut at %g)",
			  (long long)t, (double)x[t], lo);
		distinct += t != seen;
		seen = t;
	}
	cr_assert(distinct > 10);
	free(x);
	free(sorted);
}

/* exp and log written out with fmaf, against libm in float64 */
Test(sample, exp_and_log_are_within_two_ulp)
{
	for (float x = -29.9f; x <= 0; x += 0.0137f) {
		double want = exp((double)x), got = mkc_rt_exp_neg(x);
		cr_assert(fabs(got - want) <= 2.5e-7 * want, "exp(%.9g): %.9g, not %.9g", (double)x,
			  got, want);
	}
	cr_assert_eq(mkc_rt_exp_neg(0.0f), 1.0f);
	cr_assert_eq(mkc_rt_exp_neg(-31.0f), 0.0f);
	for (float x = 0x1p-25f; x < 40; x *= 1.0093f) {
		double want = log((double)x), got = mkc_rt_log_pos(x);
		cr_assert(fabs(got - want) <= 2.5e-7 * fmax(fabs(want), 1e-30) + 1e-12,
			  "log(%.9g): %.9g, not %.9g", (double)x, got, want);
	}
	for (float x = 0.99f; x < 1.01f; x += 1e-4f) {   /* near 1, where log is small */
		double want = log((double)x), got = mkc_rt_log_pos(x);
		cr_assert(fabs(got - want) <= 2.5e-7 * fabs(want) + 1e-12, "log(%.9g)", (double)x);
	}
}

/*
 * The draw as a grid of g blocks takes it (backends/cuda/exec.cuh's
 * generate and sample kernels): each phase begins in every block (block 0
 * leading), then every block passes over its share of the logits, in
 * either order (all blocks begin before any works, or each works as soon
 * as it began). The sums start poisoned, so that what the clear misses shows.
 */
static int64_t
draw_grid(const void *x, int64_t n, int half, mkc_rt_sampling s, uint64_t ctr, int g, int order)
{
	static mkc_rt_draw_acc acc;
	mkc_rt_sample_scratch sh[200];
	int kinds[MKC_DRAW_MAX_PHASES];
	const int np = mkc_rt_draw_plan(&s, n, kinds);
	cr_assert(g <= 200);
	memset(&acc, 0x5a, sizeof acc);
	mkc_rt_draw_clear(&acc, kinds, np);
	for (int p = 0; p < np; p++)
		for (int b = 0; b < g; b++) {
			mkc_rt_draw_begin(p, kinds, x, half, &s, &acc, &sh[b], b == 0);
			for (int w = order ? b : 0; w <= b && (order || b == g - 1); w++)
				mkc_rt_draw_work(kinds[p], x, n * w / g, n * (w + 1) / g, half, &s, ctr,
						 &acc, &sh[w]);
		}
	return mkc_rt_draw_token(np, &acc);
}

Test(sample, a_grid_draws_as_one_block)
{
	static float x[128256];
	uint64_t z = 99;
	for (int64_t i = 0; i < 128256; i++) {
		z = z * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (float)((double)(z >> 11) * 0x1p-53 * 16.0 - 8.0);
		if (i % 97 == 5)
			x[i] = x[i / 2];
	}
	x[1] = -INFINITY;
	x[2] = NAN;
	const mkc_rt_sampling cases[] = {
		{0, 0, 0, 0}, {1.0f, 0, 0, 1}, {1.3f, 40, 0, 3}, {0.8f, 0, 0.9f, 4},
		{1.0f, 50, 0.95f, 5}, {2.0f, 0, 0.5f, 6}, {0.7f, 1, 0, 7}, {1.0f, 3, 0.01f, 8},
	};
	const int64_t sizes[] = {10, 1000, 128256};
	const int grids[] = {1, 3, 7, 132};
	int changes = 0;
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
		for (int k = 0; k < 3; k++)
			for (uint64_t ctr = 0; ctr < (sizes[k] > 1000 ? 3u : 20u); ctr++) {
				const int64_t want = draw(x, sizes[k], cases[c], ctr);
				changes += want != draw(x, sizes[k], cases[c], ctr + 1);
				for (int gi = 0; gi < 4; gi++)
					for (int order = 0; order < 2; order++)
						cr_assert_eq(draw_grid(x, sizes[k], 0, cases[c], ctr, grids[gi],
								       order), want,
							     "case %zu, n %lld, draw %llu, %d blocks", c,
							     (long long)sizes[k], (unsigned long long)ctr,
							     grids[gi]);
			}
	cr_assert_gt(changes, 50, "the draws hardly move (%d): the test would not see a wrong one", changes);
	/* a +infinity, and no finite logit: decided after the argmax, the phases still run */
	const float inf[4] = {0.0f, INFINITY, 1.0f, INFINITY}, none[3] = {-INFINITY, NAN, -INFINITY};
	const mkc_rt_sampling s = {1.0f, 2, 0.5f, 3};
	cr_assert_eq(draw_grid(inf, 4, 0, s, 0, 3, 0), 1);
	cr_assert_eq(draw_grid(none, 3, 0, s, 0, 2, 1), 0);
}
