/*
 * test_bodies.c - the tile bodies every target embeds (backends/c/), run
 * alone on the CPU (one lane, as the C target runs them) against a
 * float64 reference computed here from the same data. Outputs are poisoned
 * with NaN first, so an element a body leaves unwritten fails; where a
 * body writes part of a buffer (the cache append), the rest must stay NaN.
 * Tolerances: 1e-5 relative to the largest reference value (float32
 * arithmetic against float64). tests/gpu/bodies.cu runs the CUDA bodies
 * the same way on the GPU, and tests/gpu/portable.cu these bodies on the
 * GPU against their host copies.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* what an emitted file holds before the bodies: runtime/limits.h, then
 * runtime/common.h (whose ONNX reader the bodies do not use) */
#include "../../runtime/limits.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../../runtime/common.h"
#include "../../runtime/bf16.h"
#pragma GCC diagnostic pop
#include "../../backends/c/scalar.h"
#include "../../backends/c/cache.h"
#include "../../backends/c/attention.h"
#include "../../backends/c/rows.h"
#include "../../backends/c/elementwise.h"   /* before matmul.h: NormGlu's SiluMul */
#include "../../backends/c/matmul.h"
#include "../../backends/c/gqa.h"
#include "../test_data.h"


static void
poison(float *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = NAN;
}

/* largest |got - want| over the largest |want|, NaN counting as infinite */
static double
rel_err(const float *got, const double *want, size_t n)
{
	double big = 0, err = 0;
	for (size_t i = 0; i < n; i++)
		big = fmax(big, fabs(want[i]));
	for (size_t i = 0; i < n; i++)
		err = isnan(got[i]) ? INFINITY : fmax(err, fabs(got[i] - want[i]));
	return big > 0 ? err / big : err;
}

/* S new positions of H heads into a cache of cap at pos, rotated when R >
 * 0; in float32, or in bf16 (bf), each element then within bf16's rounding */
static void
cache_case(int H, int S, int D, int cap, int pos, int R, int inter, bool bf)
{
	enum { MAXN = 2 * 4 * 128, MAXC = 4 * 64, MAXY = 8 * 64 * 128 };
	float x[MAXN], cs[MAXC], sn[MAXC];
	static float y[MAXY];
	static uint16_t yh[MAXY];
	double want[MAXN];
	cr_assert(H * S * D <= MAXN && S * (R / 2) <= MAXC && H * cap * D <= MAXY);
	for (int i = 0; i < H * S * D; i++)
		x[i] = urand();
	for (int i = 0; i < S * (R / 2); i++) {
		cs[i] = cosf(0.3f * (float)(i + 1));
		sn[i] = sinf(0.3f * (float)(i + 1));
	}
	for (int h = 0; h < H; h++)
		for (int s = 0; s < S; s++)
			ref_rope(want + (h * S + s) * D, x + (h * S + s) * D, D, R, inter,
				 cs + s * (R / 2), sn + s * (R / 2));
	poison(y, (size_t)H * cap * D);
	for (int i = 0; i < H * cap * D; i++)
		yh[i] = 0x7fc0;   /* a bf16 NaN */
	/* as emit_cache_append declares them: the cache [1, H, pos + S, D] laid out for cap
	 * positions, the cos and sin rows [1, S, R/2] */
	const int64_t xd[4] = {1, H, S, D}, yd[4] = {1, H, pos + S, D}, cd[3] = {1, S, R / 2};
	const int64_t ys[4] = {(int64_t)H * cap * D, (int64_t)cap * D, D, 1};
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 4, xd);
	const mkc_view yv = bf ? view_bf16(view_strided(yh, MKC_T_FLOAT, 4, yd, ys))
			       : view_strided(y, MKC_T_FLOAT, 4, yd, ys);
	const mkc_view cv = view_dense(cs, MKC_T_FLOAT, 3, cd), sv = view_dense(sn, MKC_T_FLOAT, 3, cd);
	mkc_cache_append(&yv, &xv, R ? &cv : NULL, R ? &sv : NULL, R, inter, pos);
	if (bf)
		for (int i = 0; i < H * cap * D; i++)
			y[i] = mkc_rt_bf16(yh[i]);
	float got[MAXN];
	int stray = cache_unpack(y, H, S, D, cap, pos, got);
	int far = 0;
	for (int i = 0; bf && i < H * S * D; i++)
		far += !(fabs(got[i] - want[i]) <= fabs(want[i]) / 256 + 1e-6);
	double e = rel_err(got, want, (size_t)H * S * D);
	cr_expect(e <= (bf ? 4e-3 : 1e-5), "mkc_cache_append H %d S %d D %d R %d inter %d bf16 %d: "
		  "error %.2e", H, S, D, R, inter, bf, e);
	cr_expect_eq(far, 0, "mkc_cache_append in bf16: %d values off by more than bf16's rounding",
		     far);
	cr_expect_eq(stray, 0, "mkc_cache_append wrote %d values outside the new positions", stray);
}

Test(bodies, cache_append_rotates_and_writes_only_the_new_positions)
{
	for (int bf = 0; bf < 2; bf++) {
		cache_case(8, 1, 64, 40, 17, 64, 0, bf);
		cache_case(8, 1, 64, 40, 39, 64, 1, bf);
		cache_case(2, 3, 128, 16, 0, 32, 0, bf);
		cache_case(4, 2, 32, 8, 6, 0, 0, bf);
	}
}

/* RotaryEmbedding of x [B, H, S, D] with each way of finding the cos/sin row */
Test(bodies, rotary_by_batch_and_position_by_position_ids_and_by_a_first_position)
{
	enum { B = 2, H = 3, S = 2, D = 16, R = 12, MAXPOS = 10 };
	float x[B * H * S * D], y[B * H * S * D], cs[MAXPOS * R / 2], sn[MAXPOS * R / 2];
	double want[B * H * S * D];
	int64_t ids[B * S] = {3, 7, 0, 9}, first[1] = {4};
	const int64_t xd[4] = {B, H, S, D}, bd[3] = {B, S, R / 2}, pd[2] = {MAXPOS, R / 2};
	const int64_t idd[2] = {B, S}, fd[1] = {1};
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 4, xd), yv = view_dense(y, MKC_T_FLOAT, 4, xd);
	/* the cos and sin rows [B, S, R/2] (mode 0), or a table [positions, R/2] */
	const mkc_view cb = view_dense(cs, MKC_T_FLOAT, 3, bd), sb = view_dense(sn, MKC_T_FLOAT, 3, bd);
	const mkc_view cp = view_dense(cs, MKC_T_FLOAT, 2, pd), sp = view_dense(sn, MKC_T_FLOAT, 2, pd);
	const mkc_view iv = view_dense(ids, MKC_T_INT64, 2, idd), fv = view_dense(first, MKC_T_INT64, 1, fd);
	for (int i = 0; i < B * H * S * D; i++)
		x[i] = urand();
	for (int i = 0; i < MAXPOS * R / 2; i++) {
		cs[i] = cosf(0.1f * (float)i);
		sn[i] = sinf(0.1f * (float)i);
	}
	for (int mode = 0; mode < 3; mode++)
		for (int inter = 0; inter <= 1; inter++) {
			for (int b = 0; b < B; b++)
				for (int h = 0; h < H; h++)
					for (int s = 0; s < S; s++) {
						/* mode 0: cos rows [B, S] (the table read as such) */
						int row = mode == 0 ? b * S + s : mode == 1 ? (int)ids[b * S + s]
											   : (int)first[0] + s;
						int o = ((b * H + h) * S + s) * D;
						ref_rope(want + o, x + o, D, R, inter, cs + row * R / 2,
							 sn + row * R / 2);
					}
			poison(y, B * H * S * D);
			const mkc_rotary_opt o = {.heads = 0, .rot = R, .inter = inter};
			mkc_rt_bad bad = {0, 0, 0, 0, 0};
			int rc = mode == 0 ? mkc_rotary(&yv, &xv, &cb, &sb, NULL, &o, &bad)
					   : mkc_rotary(&yv, &xv, &cp, &sp, mode == 1 ? &iv : &fv, &o, &bad);
			cr_expect_eq(rc, 0, "mode %d: every position is a row of the caches", mode);
			cr_expect_eq(bad.what, 0, "mode %d: *bad written with every position in range", mode);
			double e = rel_err(y, want, B * H * S * D);
			cr_expect(e <= 1e-5, "mkc_rotary mode %d inter %d: error %.2e", mode, inter, e);
		}
}

/*
 * Positions from the caller past the cos/sin caches (or negative) are
 * refused before anything is written: by position_ids [B, S], and by a
 * first position whose later tokens run past the table. (Before, the row
 * was read out of bounds: garbage, or a fault.)
 */
Test(bodies, rotary_refuses_a_position_outside_the_caches)
{
	enum { B = 1, H = 2, S = 3, D = 8, MAXPOS = 6 };
	float x[B * H * S * D], y[B * H * S * D], cs[MAXPOS * D / 2], sn[MAXPOS * D / 2];
	const int64_t xd[4] = {B, H, S, D}, pd[2] = {MAXPOS, D / 2}, idd[2] = {B, S}, fd[1] = {1};
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 4, xd), yv = view_dense(y, MKC_T_FLOAT, 4, xd);
	const mkc_view cp = view_dense(cs, MKC_T_FLOAT, 2, pd), sp = view_dense(sn, MKC_T_FLOAT, 2, pd);
	for (int i = 0; i < B * H * S * D; i++)
		x[i] = urand();
	for (int i = 0; i < MAXPOS * D / 2; i++)
		cs[i] = sn[i] = 0.5f;
	const mkc_rotary_opt o = {.heads = 0, .rot = 0, .inter = 0};
	static const struct {
		int64_t ids[3];
		int rank;
		int64_t value, at;
	} cases[] = {
		{{0, 5, 6}, 2, 6, 2},    /* one past the last row */
		{{-1, 0, 1}, 2, -1, 0},  /* negative */
		{{4, 0, 0}, 1, 6, 0},    /* a first position: tokens at 4, 5, 6 */
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const mkc_view pv = cases[c].rank == 2 ? view_dense(cases[c].ids, MKC_T_INT64, 2, idd)
						       : view_dense(cases[c].ids, MKC_T_INT64, 1, fd);
		mkc_rt_bad bad = {0, 0, 0, 0, 0};
		poison(y, B * H * S * D);
		cr_expect_eq(mkc_rotary(&yv, &xv, &cp, &sp, &pv, &o, &bad), 1, "case %zu", c);
		cr_expect(bad.what == MKC_IX_POSITION && bad.value == cases[c].value &&
			  bad.at == cases[c].at && bad.lo == 0 && bad.hi == MAXPOS - 1,
			  "case %zu: found %d: %lld at %lld in %lld..%lld", c, bad.what,
			  (long long)bad.value, (long long)bad.at, (long long)bad.lo, (long long)bad.hi);
		int written = 0;
		for (int i = 0; i < B * H * S * D; i++)
			written += !isnan(y[i]);
		cr_expect_eq(written, 0, "case %zu: %d values written before the refusal", c, written);
		char s[300];
		mkc_rt_index_sentence(s, sizeof s, "node 'rope' (RotaryEmbedding)", &bad);
		cr_expect(strstr(s, "node 'rope' (RotaryEmbedding): position ") &&
			  strstr(s, "is outside 0..5, the rows of the cos/sin caches"), "%s", s);
	}
}

/*
 * flash-decoding's parts and merge against one softmax over all positions;
 * with bf (passes/kv.c) the parts read the keys and values from bf16
 * caches, and the reference takes the same rounded values.
 */
static void
attn_case(int Hk, int G, int D, int L, int C, bool bf)
{
	enum { MAXQ = 16 * 64, MAXK = 4 * 200 * 64, MAXP = 4 * 16 * 8 * 66 };
	const int Hq = Hk * G, cap = L + 3;
	static float q[MAXQ], k[MAXK], v[MAXK], part[MAXP], y[MAXQ];
	static uint16_t kh[MAXK], vh[MAXK];
	double want[MAXQ];
	cr_assert(Hq * D <= MAXQ && Hk * cap * D <= MAXK && Hk * C * G * (D + 2) <= MAXP);
	for (int i = 0; i < Hq * D; i++)
		q[i] = urand();
	for (int i = 0; i < Hk * cap * D; i++) {
		k[i] = urand();
		v[i] = urand();
		kh[i] = mkc_rt_to_bf16(k[i]);
		vh[i] = mkc_rt_to_bf16(v[i]);
		if (bf) {
			k[i] = mkc_rt_bf16(kh[i]);
			v[i] = mkc_rt_bf16(vh[i]);
		}
	}
	const float scale = 1.0f / sqrtf((float)D);
	ref_attention(want, q, k, v, Hq, G, D, L, cap, scale);
	/* q and y [1, Hq, 1, D]; the caches' first L positions of cap, [1, Hk, L, D] */
	const int64_t qd[4] = {1, Hq, 1, D}, kd[4] = {1, Hk, L, D};
	const int64_t ks[4] = {(int64_t)Hk * cap * D, (int64_t)cap * D, D, 1};
	const int64_t pd[4] = {1, Hk * C, G, D + 2};
	const mkc_view qv = view_dense(q, MKC_T_FLOAT, 4, qd), yv = view_dense(y, MKC_T_FLOAT, 4, qd);
	const mkc_view kv = bf ? view_bf16(view_strided(kh, MKC_T_FLOAT, 4, kd, ks))
			       : view_strided(k, MKC_T_FLOAT, 4, kd, ks);
	const mkc_view vv = bf ? view_bf16(view_strided(vh, MKC_T_FLOAT, 4, kd, ks))
			       : view_strided(v, MKC_T_FLOAT, 4, kd, ks);
	const mkc_view pv = view_dense(part, MKC_T_FLOAT, 4, pd);
	poison(part, (size_t)Hk * C * G * (D + 2));
	poison(y, (size_t)Hq * D);
	/* a few rows a tile, as tiles would have them */
	for (int r = 0; r < Hk * C; r += 3)
		mkc_attn_part_c(&qv, &kv, &vv, &pv, C, r, r + 3 < Hk * C ? r + 3 : Hk * C, scale, NULL);
	mkc_attn_merge_c(&pv, &yv, C, 0, Hq, 0, 1);
	double e = rel_err(y, want, (size_t)Hq * D);
	cr_expect(e <= 1e-5, "mkc_attn_part_c + merge, Hk %d G %d D %d L %d C %d bf16 %d: error %.2e",
		  Hk, G, D, L, C, bf, e);
}

Test(bodies, attention_parts_and_merge_match_one_softmax)
{
	for (int bf = 0; bf < 2; bf++) {
		attn_case(2, 4, 64, 1, 16, bf);   /* one position: every chunk but the last empty */
		attn_case(2, 4, 64, 200, 16, bf);
		attn_case(4, 2, 32, 77, 3, bf);
		attn_case(1, 1, 128, 5, 8, bf);
	}
}

/*
 * Attention's general form: past and new keys and values, a float mask
 * broadcast over batch and heads or a bool mask over heads (a row of it all
 * false: that output is 0), a soft cap, the present outputs; two tiles of
 * query heads. Value rows longer than key rows (Dv 5, D 4).
 */
static void
attn_general_case(int mask, float softcap, int past)
{
	enum { B = 2, Hk = 2, G = 2, Hq = Hk * G, Sq = 3, D = 4, Dv = 5, PM = 2, Sn = 3 };
	const int P = past ? PM : 0, L = P + Sn;
	float q[B * Hq * Sq * D], k[B * Hk * Sn * D], v[B * Hk * Sn * Dv];
	float pk[B * Hk * PM * D], pv[B * Hk * PM * Dv], mf[Sq * (PM + Sn)];
	uint8_t mb[B * Sq * (PM + Sn)];
	float y[B * Hq * Sq * Dv], y1[B * Hk * (PM + Sn) * D], y2[B * Hk * (PM + Sn) * Dv];
	double want[B * Hq * Sq * Dv], w1[B * Hk * (PM + Sn) * D], w2[B * Hk * (PM + Sn) * Dv];
	for (size_t i = 0; i < sizeof q / sizeof *q; i++)
		q[i] = urand();
	for (size_t i = 0; i < sizeof k / sizeof *k; i++)
		k[i] = urand();
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		v[i] = urand();
	for (size_t i = 0; i < sizeof pk / sizeof *pk; i++)
		pk[i] = urand();
	for (size_t i = 0; i < sizeof pv / sizeof *pv; i++)
		pv[i] = urand();
	for (int i = 0; i < Sq * L; i++)
		mf[i] = i % 4 == 1 ? -INFINITY : urand();
	for (int i = 0; i < B * Sq * L; i++)
		mb[i] = i / L == 4 ? 0 : urand() > -0.3f;   /* row (b 1, s 1) all false */
	const float scale = 0.7f;
	/* the present keys and values, [B, Hk, L, .] */
	for (int b = 0; b < B; b++)
		for (int h = 0; h < Hk; h++)
			for (int t = 0; t < L; t++) {
				for (int d = 0; d < D; d++)
					w1[((b * Hk + h) * L + t) * D + d] =
						t < P ? pk[((b * Hk + h) * PM + t) * D + d]
						      : k[((b * Hk + h) * Sn + t - P) * D + d];
				for (int d = 0; d < Dv; d++)
					w2[((b * Hk + h) * L + t) * Dv + d] =
						t < P ? pv[((b * Hk + h) * PM + t) * Dv + d]
						      : v[((b * Hk + h) * Sn + t - P) * Dv + d];
			}
	for (int b = 0; b < B; b++)
		for (int h = 0; h < Hq; h++)
			for (int s = 0; s < Sq; s++) {
				double sc[PM + Sn], mx = -INFINITY, sum = 0;
				for (int t = 0; t < L; t++) {
					double a = 0;
					for (int d = 0; d < D; d++)
						a += (double)q[((b * Hq + h) * Sq + s) * D + d] *
						     w1[((b * Hk + h / G) * L + t) * D + d];
					a *= scale;
					if (softcap > 0)
						a = softcap * tanh(a / softcap);
					if (mask == 1)
						a += mf[s * L + t];
					if (mask == 2 && !mb[(b * Sq + s) * L + t])
						a = -INFINITY;
					sc[t] = a;
					mx = fmax(mx, a);
				}
				for (int d = 0; d < Dv; d++) {
					double acc = 0;
					sum = 0;
					for (int t = 0; t < L; t++) {
						if (sc[t] == -INFINITY)
							continue;
						const double w = exp(sc[t] - mx);
						sum += w;
						acc += w * w2[((b * Hk + h / G) * L + t) * Dv + d];
					}
					want[((b * Hq + h) * Sq + s) * Dv + d] = sum > 0 ? acc / sum : 0;
				}
			}
	const int64_t qd[4] = {B, Hq, Sq, D}, kd[4] = {B, Hk, Sn, D}, vd[4] = {B, Hk, Sn, Dv};
	const int64_t pkd[4] = {B, Hk, PM, D}, pvd[4] = {B, Hk, PM, Dv}, yd[4] = {B, Hq, Sq, Dv};
	const int64_t y1d[4] = {B, Hk, L, D}, y2d[4] = {B, Hk, L, Dv};
	/* the float mask [Sq, L] broadcast over batch and heads, the bool one [B, 1, Sq, L] */
	const int64_t mfd[2] = {Sq, L}, mbd[4] = {B, 1, Sq, L};
	const mkc_view qv = view_dense(q, MKC_T_FLOAT, 4, qd), kv = view_dense(k, MKC_T_FLOAT, 4, kd);
	const mkc_view vv = view_dense(v, MKC_T_FLOAT, 4, vd), yv = view_dense(y, MKC_T_FLOAT, 4, yd);
	const mkc_view pkv = view_dense(pk, MKC_T_FLOAT, 4, pkd), pvv = view_dense(pv, MKC_T_FLOAT, 4, pvd);
	const mkc_view y1v = view_dense(y1, MKC_T_FLOAT, 4, y1d), y2v = view_dense(y2, MKC_T_FLOAT, 4, y2d);
	const mkc_view mfv = view_dense(mf, MKC_T_FLOAT, 2, mfd), mbv = view_dense(mb, MKC_T_BOOL, 4, mbd);
	poison(y, sizeof y / sizeof *y);
	poison(y1, sizeof y1 / sizeof *y1);
	poison(y2, sizeof y2 / sizeof *y2);
	const int cut[3] = {0, 1, Hq};
	for (int t = 0; t < 2; t++) {
		const mkc_attn_opt o = {.scale = scale, .softcap = softcap, .h0 = cut[t], .h1 = cut[t + 1]};
		mkc_attention(&yv, &qv, &kv, &vv, mask == 1 ? &mfv : mask == 2 ? &mbv : NULL,
			      past ? &pkv : NULL, past ? &pvv : NULL, &y1v, &y2v, &o);
	}
	double e = rel_err(y, want, sizeof y / sizeof *y);
	cr_expect(e <= 1e-5, "mkc_attention mask %d softcap %g past %d: error %.2e", mask,
		  (double)softcap, past, e);
	e = fmax(rel_err(y1, w1, (size_t)B * Hk * L * D), rel_err(y2, w2, (size_t)B * Hk * L * Dv));
	cr_expect(e == 0, "mkc_attention's present outputs, past %d: error %.2e", past, e);
}

Test(bodies, attention_general_with_masks_soft_cap_past_and_presents)
{
	for (int mask = 0; mask <= 2; mask++)
		for (int past = 0; past <= 1; past++) {
			attn_general_case(mask, 0, past);
			attn_general_case(mask, 5.0f, past);
		}
}

Test(bodies, softmax_over_the_last_axes_and_over_one_axis)
{
	enum { A = 3, Bd = 4, Cd = 5 };
	float x[A * Bd * Cd], y[A * Bd * Cd];
	double want[A * Bd * Cd];
	const int64_t d[3] = {A, Bd, Cd};
	const int64_t lo[3] = {0, 0, 0}, hi[3] = {A, Bd, Cd};
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 3, d), yv = view_dense(y, MKC_T_FLOAT, 3, d);
	for (int i = 0; i < A * Bd * Cd; i++)
		x[i] = 3 * urand();
	/* rows of axes 1..2 (20 elements), then rows of axis 1 alone (4, stride 5) */
	for (int one = 0; one <= 1; one++) {
		int len = one ? Bd : Bd * Cd, st = one ? Cd : 1, rows = one ? A * Cd : A;
		for (int rw = 0; rw < rows; rw++) {
			int base = one ? rw / Cd * Bd * Cd + rw % Cd : rw * Bd * Cd;
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j < len; j++)
				mx = fmax(mx, x[base + j * st]);
			for (int j = 0; j < len; j++)
				sum += exp(x[base + j * st] - mx);
			for (int j = 0; j < len; j++)
				want[base + j * st] = exp(x[base + j * st] - mx) / sum;
		}
		poison(y, A * Bd * Cd);
		mkc_softmax(&yv, &xv, 1, one, lo, hi);
		double e = rel_err(y, want, A * Bd * Cd);
		cr_expect(e <= 1e-5, "mkc_softmax one_axis %d: error %.2e", one, e);
	}
}

Test(bodies, rms_and_layer_norms_with_float_and_bf16_scales_and_their_row_outputs)
{
	enum { R = 3, N = 48 };
	float x[R * N], y[R * N], sf[N], bias[N], y1[R], y2[R];
	uint16_t sb[N];
	double want[R * N], w1[R], w2[R];
	const int64_t d[2] = {R, N}, d1[2] = {R, 1}, dn[1] = {N};
	const int64_t lo[2] = {0, 0}, hi[2] = {R, N};
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 2, d), yv = view_dense(y, MKC_T_FLOAT, 2, d);
	const mkc_view sfv = view_dense(sf, MKC_T_FLOAT, 1, dn);
	const mkc_view sbv = view_bf16(view_dense(sb, MKC_T_FLOAT, 1, dn));
	const mkc_view bv = view_dense(bias, MKC_T_FLOAT, 1, dn);
	/* the per-row outputs [R, 1] */
	const mkc_view y1v = view_dense(y1, MKC_T_FLOAT, 2, d1), y2v = view_dense(y2, MKC_T_FLOAT, 2, d1);
	for (int i = 0; i < R * N; i++)
		x[i] = urand() + 0.3f;
	for (int j = 0; j < N; j++) {
		sb[j] = to_bf16(1.0f + 0.5f * urand());
		sf[j] = mkc_rt_bf16(sb[j]);
		bias[j] = urand();
	}
	const float eps = 1e-5f;
	for (int layer = 0; layer <= 1; layer++)
		for (int bf = 0; bf <= 1; bf++) {
			for (int r = 0; r < R; r++) {
				double mean = 0, ss = 0;
				if (layer)
					for (int j = 0; j < N; j++)
						mean += x[r * N + j] / (double)N;
				for (int j = 0; j < N; j++)
					ss += (x[r * N + j] - mean) * (x[r * N + j] - mean);
				double inv = 1 / sqrt(ss / N + eps);
				for (int j = 0; j < N; j++)
					want[r * N + j] = (x[r * N + j] - mean) * inv * sf[j] +
							  (layer ? bias[j] : 0);
				w1[r] = layer ? mean : inv;
				w2[r] = inv;
			}
			poison(y, R * N);
			poison(y1, R);
			poison(y2, R);
			const mkc_norm_opt o = {.axis = 1, .eps = eps, .layer = layer};
			mkc_norm(&yv, &xv, bf ? &sbv : &sfv, layer ? &bv : NULL, &y1v, &y2v, &o, lo, hi);
			cr_expect(rel_err(y, want, R * N) <= 1e-5, "mkc_norm layer %d bf16 %d", layer, bf);
			cr_expect(rel_err(y1, w1, R) <= 1e-5, "mkc_norm's y1, layer %d", layer);
			cr_expect(rel_err(y2, w2, R) <= 1e-5, "mkc_norm's y2, layer %d", layer);
		}
}

Test(bodies, skip_norm_keeps_the_sum_and_normalises_it)
{
	enum { R = 2, N = 32 };
	float a[R * N], b[R * N], g[N], bias[N], y[R * N], sum[R * N], y2[R];
	double want[R * N], wsum[R * N], w2[R];
	const int64_t d[2] = {R, N}, d1[2] = {R, 1}, dn[1] = {N};
	const int64_t lo[2] = {0, 0}, hi[2] = {R, N};
	const mkc_view av = view_dense(a, MKC_T_FLOAT, 2, d), bv = view_dense(b, MKC_T_FLOAT, 2, d);
	const mkc_view yv = view_dense(y, MKC_T_FLOAT, 2, d), sv = view_dense(sum, MKC_T_FLOAT, 2, d);
	const mkc_view gv = view_dense(g, MKC_T_FLOAT, 1, dn), biv = view_dense(bias, MKC_T_FLOAT, 1, dn);
	const mkc_view y2v = view_dense(y2, MKC_T_FLOAT, 2, d1);
	for (int i = 0; i < R * N; i++) {
		a[i] = urand();
		b[i] = urand();
	}
	for (int j = 0; j < N; j++) {
		g[j] = 1 + 0.5f * urand();
		bias[j] = urand();
	}
	for (int r = 0; r < R; r++) {
		double ss = 0;
		for (int j = 0; j < N; j++) {
			wsum[r * N + j] = (double)a[r * N + j] + b[r * N + j] + bias[j];
			ss += wsum[r * N + j] * wsum[r * N + j];
		}
		w2[r] = 1 / sqrt(ss / N + 1e-6);
		for (int j = 0; j < N; j++)
			want[r * N + j] = wsum[r * N + j] * w2[r] * g[j];
	}
	poison(y, R * N);
	poison(sum, R * N);
	poison(y2, R);
	mkc_skip_norm(&yv, &av, &bv, &gv, &biv, NULL, &y2v, &sv, 1e-6f, lo, hi);
	cr_expect(rel_err(y, want, R * N) <= 1e-5, "mkc_skip_norm's output");
	cr_expect(rel_err(sum, wsum, R * N) <= 1e-6, "mkc_skip_norm's sum");
	cr_expect(rel_err(y2, w2, R) <= 1e-5, "mkc_skip_norm's 1 / deviation");
}

/*
 * The products (matmul.h): a [B, M, K] by b [K, N], y [B, M, N] (MM_B ..
 * MM_N). The warp-per-output form (mkc_dot_rows) runs here on one lane,
 * fewer than a warp: a lane an output, as a GPU tile of fewer lanes than
 * a warp runs it (7959f0e's looped forever there, and was device code
 * only); the CUDA and HIP compiles of emitted files check the warp's form.
 */
enum { MM_B = 2, MM_M = 3, MM_K = 8, MM_N = 5 };

enum { MM_GENERAL, MM_SPLIT_K, MM_DOT_ROWS };

/*
 * a [B, M, K] by b [K, N] (or, tb, b stored [N, K]) into y [B, M, N],
 * b in bf16 when bh; the output cut into two tiles along N, by the body
 * how names (mkc_dot_rows takes b stored [N, K] only).
 */
static void
matmul_case(int tb, int bh, int how)
{
	float a[MM_B * MM_M * MM_K], bf[MM_K * MM_N], y[MM_B * MM_M * MM_N], part[1];
	uint16_t b16[MM_K * MM_N];
	double want[MM_B * MM_M * MM_N];
	for (int i = 0; i < MM_B * MM_M * MM_K; i++)
		a[i] = urand();
	for (int i = 0; i < MM_K * MM_N; i++) {
		bf[i] = urand();
		b16[i] = to_bf16(bf[i]);
		if (bh)
			bf[i] = mkc_rt_bf16(b16[i]);   /* the reference reads what the body reads */
	}
	for (int b = 0; b < MM_B; b++)
		for (int m = 0; m < MM_M; m++)
			for (int n = 0; n < MM_N; n++) {
				double s = 0;
				for (int k = 0; k < MM_K; k++)
					s += (double)a[(b * MM_M + m) * MM_K + k] *
					     bf[tb ? n * MM_K + k : k * MM_N + n];
				want[(b * MM_M + m) * MM_N + n] = s;
			}
	/* the body broadcasts b [K, N] (or [N, K]) over a's batch */
	const int64_t ad[3] = {MM_B, MM_M, MM_K}, yd[3] = {MM_B, MM_M, MM_N};
	const int64_t bd[2] = {tb ? MM_N : MM_K, tb ? MM_K : MM_N};
	const mkc_view av = view_dense(a, MKC_T_FLOAT, 3, ad), yv = view_dense(y, MKC_T_FLOAT, 3, yd);
	const mkc_view bv = bh ? view_bf16(view_dense(b16, MKC_T_FLOAT, 2, bd))
			       : view_dense(bf, MKC_T_FLOAT, 2, bd);
	const mkc_mm_opt o = {.trans_b = tb, .alpha = 1.0f};
	poison(y, MM_B * MM_M * MM_N);
	const int64_t cut[3] = {0, 2, MM_N};
	for (int t = 0; t < 2; t++) {
		const int64_t lo[3] = {0, 0, cut[t]}, hi[3] = {MM_B, MM_M, cut[t + 1]};
		if (how == MM_SPLIT_K)
			mkc_matmul_split_k(&yv, &av, &bv, &o, lo, hi, part);
		else if (how == MM_DOT_ROWS)
			mkc_dot_rows(&yv, &av, &bv, NULL, NULL, &o, lo, hi);
		else
			mkc_matmul(&yv, &av, &bv, NULL, &o, lo, hi);
	}
	double err = rel_err(y, want, MM_B * MM_M * MM_N);
	cr_expect(err < 1e-5, "tb %d bf16 %d body %d: relative error %g", tb, bh, how, err);
}

Test(bodies, matmul_broadcast_transposed_and_bf16)
{
	for (int tb = 0; tb <= 1; tb++)
		for (int bh = 0; bh <= 1; bh++)
			matmul_case(tb, bh, MM_GENERAL);
}

Test(bodies, split_k_on_one_lane)
{
	for (int tb = 0; tb <= 1; tb++)
		for (int bh = 0; bh <= 1; bh++)
			matmul_case(tb, bh, MM_SPLIT_K);
}

Test(bodies, dot_rows_on_fewer_lanes_than_a_warp, .timeout = 10)
{
	for (int bh = 0; bh <= 1; bh++)
		matmul_case(1, bh, MM_DOT_ROWS);
}

/*
 * An empty tile: split-K shares its lanes by the tile's outputs, and there
 * are none. Without the body's guard the share divides by zero: make
 * sanitize's UBSan stops there (at -O2 the unused quotient may be dropped,
 * so the plain build passes either way).
 */
Test(bodies, split_k_of_an_empty_tile_writes_nothing)
{
	/* a [1, K] by b [4, K] read transposed into y [1, 4]; the tile is columns 2 .. 2 */
	float a[MM_K], b[4 * MM_K], y[4], part[1];
	for (int i = 0; i < MM_K; i++)
		a[i] = urand();
	for (int i = 0; i < 4 * MM_K; i++)
		b[i] = urand();
	poison(y, 4);
	const int64_t ad[2] = {1, MM_K}, bd[2] = {4, MM_K}, yd[2] = {1, 4};
	const mkc_view av = view_dense(a, MKC_T_FLOAT, 2, ad), bv = view_dense(b, MKC_T_FLOAT, 2, bd);
	const mkc_view yv = view_dense(y, MKC_T_FLOAT, 2, yd);
	const mkc_mm_opt o = {.trans_b = 1, .alpha = 1.0f};
	const int64_t lo[2] = {0, 2}, hi[2] = {1, 2};
	mkc_matmul_split_k(&yv, &av, &bv, &o, lo, hi, part);
	for (int i = 0; i < 4; i++)
		cr_expect(isnan(y[i]), "y[%d] written: %g", i, y[i]);
}

/* Gemm: alpha * a^T(ta) b^T(tb) + beta * C, C a row [N] broadcast over M, or none. */
Test(bodies, gemm_transposes_alpha_beta_and_c)
{
	for (int ta = 0; ta <= 1; ta++)
		for (int c = 0; c <= 1; c++) {
			const int tb = !ta;
			float a[MM_M * MM_K], b[MM_K * MM_N], cv[MM_N], y[MM_M * MM_N];
			double want[MM_M * MM_N];
			for (int i = 0; i < MM_M * MM_K; i++)
				a[i] = urand();
			for (int i = 0; i < MM_K * MM_N; i++)
				b[i] = urand();
			for (int i = 0; i < MM_N; i++)
				cv[i] = urand();
			const float alpha = 0.5f, beta = 2.0f;
			for (int m = 0; m < MM_M; m++)
				for (int n = 0; n < MM_N; n++) {
					double s = 0;
					for (int k = 0; k < MM_K; k++)
						s += (double)a[ta ? k * MM_M + m : m * MM_K + k] *
						     b[tb ? n * MM_K + k : k * MM_N + n];
					want[m * MM_N + n] = alpha * s + (c ? beta * (double)cv[n] : 0);
				}
			/* a [M, K] or [K, M], b [K, N] or [N, K], C [N] broadcast over M */
			const int64_t ad[2] = {ta ? MM_K : MM_M, ta ? MM_M : MM_K};
			const int64_t bd[2] = {tb ? MM_N : MM_K, tb ? MM_K : MM_N};
			const int64_t yd[2] = {MM_M, MM_N}, cd[1] = {MM_N};
			const mkc_view av = view_dense(a, MKC_T_FLOAT, 2, ad);
			const mkc_view bv = view_dense(b, MKC_T_FLOAT, 2, bd);
			const mkc_view yv = view_dense(y, MKC_T_FLOAT, 2, yd);
			const mkc_view cvv = view_dense(cv, MKC_T_FLOAT, 1, cd);
			const mkc_mm_opt o = {.trans_a = ta, .trans_b = tb, .gemm = 1, .alpha = alpha,
					      .beta = beta};
			poison(y, MM_M * MM_N);
			const int64_t lo0[2] = {0, 0}, hi0[2] = {1, MM_N};
			const int64_t lo1[2] = {1, 0}, hi1[2] = {MM_M, MM_N};
			mkc_matmul(&yv, &av, &bv, c ? &cvv : NULL, &o, lo0, hi0);
			mkc_matmul(&yv, &av, &bv, c ? &cvv : NULL, &o, lo1, hi1);
			double err = rel_err(y, want, MM_M * MM_N);
			cr_expect(err < 1e-5, "ta %d c %d: relative error %g", ta, c, err);
			if (ta)
				continue;
			/* b stored [N, K]: the rows' form takes it too, with the epilogue */
			poison(y, MM_M * MM_N);
			mkc_dot_rows(&yv, &av, &bv, NULL, c ? &cvv : NULL, &o, lo0, hi0);
			mkc_dot_rows(&yv, &av, &bv, NULL, c ? &cvv : NULL, &o, lo1, hi1);
			err = rel_err(y, want, MM_M * MM_N);
			cr_expect(err < 1e-5, "mkc_dot_rows c %d: relative error %g", c, err);
		}
}

/*
 * NormGemm of the row x [K] by W [N, K] (+ C), and NormGlu by W and U:
 * silu(alpha * x' . w) * (alpha * x' . u), x' = x / sqrt(mean(x^2) + eps)
 * * scale; scale and weights in float32 or bf16.
 */
static void
norm_gemm_case(int glu, int c, int bh)
{
	float x[MM_K], sc[MM_K], w[MM_N * MM_K], u[MM_N * MM_K], cv[MM_N], y[MM_N];
	uint16_t sc16[MM_K], w16[MM_N * MM_K], u16[MM_N * MM_K];
	double want[MM_N];
	for (int i = 0; i < MM_K; i++) {
		x[i] = urand();
		sc16[i] = to_bf16(urand() + 1.5f);
		sc[i] = mkc_rt_bf16(sc16[i]);
	}
	for (int i = 0; i < MM_N * MM_K; i++) {
		w16[i] = to_bf16(urand());
		w[i] = mkc_rt_bf16(w16[i]);
		u16[i] = to_bf16(urand());
		u[i] = mkc_rt_bf16(u16[i]);
	}
	for (int i = 0; i < MM_N; i++)
		cv[i] = urand();
	const float alpha = 1.5f, beta = 0.25f, eps = 1e-5f;
	double ss = 0;
	for (int k = 0; k < MM_K; k++)
		ss += (double)x[k] * x[k];
	const double inv = 1 / sqrt(ss / MM_K + eps);
	for (int n = 0; n < MM_N; n++) {
		double p = 0, q = 0;
		for (int k = 0; k < MM_K; k++) {
			p += x[k] * inv * sc[k] * w[n * MM_K + k];
			q += x[k] * inv * sc[k] * u[n * MM_K + k];
		}
		want[n] = glu ? alpha * p / (1 + exp(-alpha * p)) * (alpha * q)
			      : alpha * p + (c ? beta * (double)cv[n] : 0);
	}
	/* x and y rows [1, K] and [1, N], the scale [K], W and U [N, K], C [N] */
	const int64_t xd[2] = {1, MM_K}, yd[2] = {1, MM_N}, kd[1] = {MM_K}, wd[2] = {MM_N, MM_K};
	const int64_t cd[1] = {MM_N};
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 2, xd), yv = view_dense(y, MKC_T_FLOAT, 2, yd);
	const mkc_view sv = bh ? view_bf16(view_dense(sc16, MKC_T_FLOAT, 1, kd))
			       : view_dense(sc, MKC_T_FLOAT, 1, kd);
	const mkc_view wv = bh ? view_bf16(view_dense(w16, MKC_T_FLOAT, 2, wd))
			       : view_dense(w, MKC_T_FLOAT, 2, wd);
	const mkc_view uv = bh ? view_bf16(view_dense(u16, MKC_T_FLOAT, 2, wd))
			       : view_dense(u, MKC_T_FLOAT, 2, wd);
	const mkc_view cvv = view_dense(cv, MKC_T_FLOAT, 1, cd);
	const mkc_mm_opt o = {.gemm = 1, .alpha = alpha, .beta = beta, .eps = eps};
	poison(y, MM_N);
	const int64_t cut[3] = {0, 3, MM_N};
	for (int t = 0; t < 2; t++) {
		const int64_t lo[2] = {0, cut[t]}, hi[2] = {1, cut[t + 1]};
		mkc_norm_gemm(&yv, &xv, &sv, &wv, glu ? &uv : NULL, c ? &cvv : NULL, &o, lo, hi);
	}
	double err = rel_err(y, want, MM_N);
	cr_expect(err < 1e-5, "glu %d c %d bf16 %d: relative error %g", glu, c, bh, err);
}

Test(bodies, norm_gemm_and_norm_glu)
{
	for (int bh = 0; bh <= 1; bh++) {
		norm_gemm_case(0, 0, bh);
		norm_gemm_case(0, 1, bh);
		norm_gemm_case(1, 0, bh);
	}
}

/*
 * A GroupQueryAttention tile of a (P past, S new) must refuse, before it
 * writes anything: seqlens_k other than P + S - 1 in any batch entry (one
 * more, or a right-padded past, which onnxruntime reads as shorter and
 * this body would have read as all in use: a wrong answer with status 0
 * before), total_sequence_length other than P + S, and new positions past
 * the cos/sin caches. a is a tile that fits; its outputs are poisoned here.
 */
static void
gqa_refusals(mkc_gqa_args *a, float *qr, int P, int S, int R, const int64_t *cd,
	     const int64_t *cs_s)
{
	enum { B = 2 };
	const mkc_view *seqlens = a->seqlens_k, *total = a->total, *cos = a->cos, *sin = a->sin;
	const int64_t sd[1] = {B};
	const int32_t more[B] = {P + S - 1, P + S + 2}, padded[B] = {P + S - 2, P + S - 1};
	const int32_t longer = P + S + 1;
	const mkc_view mv = view_dense(more, MKC_T_INT32, 1, sd);
	const mkc_view pv = view_dense(padded, MKC_T_INT32, 1, sd);
	const mkc_view lv = view_dense(&longer, MKC_T_INT32, 0, sd);
	/* the caches one row short of the last new position */
	const int64_t shortd[2] = {P + S - 1, cd[1]};
	const mkc_view sc = cos ? view_strided(cos->p, MKC_T_FLOAT, 2, shortd, cs_s) : *seqlens;
	const mkc_view ss = sin ? view_strided(sin->p, MKC_T_FLOAT, 2, shortd, cs_s) : *seqlens;
	static const char *const what[] = {"seqlens_k one more", "a right-padded past",
					   "total_sequence_length one more", "past the caches"};
	for (int c = 0; c < (R ? 4 : 3); c++) {
		a->seqlens_k = c == 0 ? &mv : c == 1 ? &pv : seqlens;
		a->total = c == 2 ? &lv : total;
		a->cos = c == 3 ? &sc : cos;
		a->sin = c == 3 ? &ss : sin;
		const int64_t ny = mkc_rt_count(a->y->d, 3), np = mkc_rt_count(a->pk_out->d, 4);
		poison((float *)a->y->p, (size_t)ny);
		poison((float *)a->pk_out->p, (size_t)np);
		poison((float *)a->pv_out->p, (size_t)np);
		mkc_rt_bad bad = {0, 0, 0, 0, 0};
		cr_expect_eq(mkc_gqa(a, qr, &bad), 1, "P %d R %d: %s accepted", P, R, what[c]);
		const int want[] = {MKC_IX_SEQLEN, MKC_IX_SEQLEN, MKC_IX_TOTAL, MKC_IX_NEW_POSITION};
		const int64_t value[] = {P + S + 2, P + S - 2, P + S + 1, P + S - 1};
		const int64_t at[] = {1, 0, 0, 0};
		cr_expect(bad.what == want[c] && bad.value == value[c] && bad.at == at[c],
			  "P %d R %d, %s: found %d, %lld at %lld", P, R, what[c], bad.what,
			  (long long)bad.value, (long long)bad.at);
		int written = 0;
		for (int64_t i = 0; i < ny; i++)
			written += !isnan(((float *)a->y->p)[i]);
		for (int64_t i = 0; i < np; i++)
			written += !isnan(((float *)a->pk_out->p)[i]) + !isnan(((float *)a->pv_out->p)[i]);
		cr_expect_eq(written, 0, "P %d R %d, %s: %d values written", P, R, what[c], written);
	}
	a->seqlens_k = seqlens;
	a->total = total;
	a->cos = cos;
	a->sin = sin;
	mkc_rt_bad bad = {0, 0, 0, 0, 0};
	cr_expect_eq(mkc_gqa(a, qr, &bad), 0, "the tile that fits, again");
	char s[400];
	bad = (mkc_rt_bad){MKC_IX_SEQLEN, 1, 9, 4, 4};
	mkc_rt_index_sentence(s, sizeof s, "node 'gqa' (GroupQueryAttention)", &bad);
	cr_expect(strstr(s, "node 'gqa' (GroupQueryAttention): seqlens_k[1] is 9, not 4"), "%s", s);
}

/*
 * GroupQueryAttention: the present keys and values (past, then the new
 * ones, keys rotated at seqlens_k + 1 - S + s = P + s) and causal
 * attention of the rotated queries; rotation by halves or interleaved, or
 * none; a soft cap; past or none. Then what the caller gives that does not
 * fit the past it gives is refused before anything is written.
 */
static void
gqa_case(int R, int inter, int past, float softcap)
{
	enum { B = 2, S = 2, Hq = 4, Hk = 2, D = 8, PM = 3, NPOS = 9 };
	const int P = past ? PM : 0, L = P + S;
	float q[B * S * Hq * D], k[B * S * Hk * D], v[B * S * Hk * D];
	float pk[B * Hk * PM * D], pv[B * Hk * PM * D], cs[NPOS * D / 2], sn[NPOS * D / 2];
	float y[B * S * Hq * D], y1[B * Hk * (PM + S) * D], y2[B * Hk * (PM + S) * D], qr[D];
	double want[B * S * Hq * D], w1[B * Hk * (PM + S) * D], w2[B * Hk * (PM + S) * D];
	const int32_t seq[B] = {P + S - 1, P + S - 1}, total = P + S;
	for (size_t i = 0; i < sizeof q / sizeof *q; i++)
		q[i] = urand();
	for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
		k[i] = urand();
		v[i] = urand();
	}
	for (size_t i = 0; i < sizeof pk / sizeof *pk; i++) {
		pk[i] = urand();
		pv[i] = urand();
	}
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
		const float a = urand() * 3;
		cs[i] = cosf(a);
		sn[i] = sinf(a);
	}
	const float scale = 0.4f;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < Hk; h++)
			for (int t = 0; t < L; t++) {
				double *r1 = w1 + ((b * Hk + h) * L + t) * D, *r2 = w2 + ((b * Hk + h) * L + t) * D;
				if (t < P) {
					for (int d = 0; d < D; d++) {
						r1[d] = pk[((b * Hk + h) * PM + t) * D + d];
						r2[d] = pv[((b * Hk + h) * PM + t) * D + d];
					}
					continue;
				}
				const int pos = seq[b] + 1 - S + t - P;
				ref_rope(r1, k + ((b * S + t - P) * Hk + h) * D, D, R, inter, cs + pos * D / 2,
					 sn + pos * D / 2);
				for (int d = 0; d < D; d++)
					r2[d] = v[((b * S + t - P) * Hk + h) * D + d];
			}
	for (int b = 0; b < B; b++)
		for (int s = 0; s < S; s++)
			for (int h = 0; h < Hq; h++) {
				const int pos = seq[b] + 1 - S + s, kh = h / (Hq / Hk);
				double qd[D], sc[PM + S], mx = -INFINITY, sum = 0;
				ref_rope(qd, q + ((b * S + s) * Hq + h) * D, D, R, inter, cs + pos * D / 2,
					 sn + pos * D / 2);
				for (int t = 0; t <= P + s; t++) {
					double a = 0;
					for (int d = 0; d < D; d++)
						a += qd[d] * w1[((b * Hk + kh) * L + t) * D + d];
					a *= scale;
					sc[t] = softcap > 0 ? softcap * tanh(a / softcap) : a;
					mx = fmax(mx, sc[t]);
				}
				for (int t = 0; t <= P + s; t++)
					sum += exp(sc[t] - mx);
				for (int d = 0; d < D; d++) {
					double acc = 0;
					for (int t = 0; t <= P + s; t++)
						acc += exp(sc[t] - mx) * w2[((b * Hk + kh) * L + t) * D + d];
					want[((b * S + s) * Hq + h) * D + d] = acc / sum;
				}
			}
	const int64_t qd[3] = {B, S, Hq * D}, kd[3] = {B, S, Hk * D}, pd[4] = {B, Hk, PM, D};
	const int64_t y1d[4] = {B, Hk, L, D}, sd[1] = {B};
	/* cos and sin [NPOS, R/2]: the first R/2 of the D/2 values each row of the tables holds */
	const int64_t cd[2] = {NPOS, R / 2}, cs_s[2] = {D / 2, 1};
	const mkc_view qv = view_dense(q, MKC_T_FLOAT, 3, qd), yv = view_dense(y, MKC_T_FLOAT, 3, qd);
	const mkc_view kv = view_dense(k, MKC_T_FLOAT, 3, kd), vv = view_dense(v, MKC_T_FLOAT, 3, kd);
	const mkc_view pkv = view_dense(pk, MKC_T_FLOAT, 4, pd), pvv = view_dense(pv, MKC_T_FLOAT, 4, pd);
	const mkc_view y1v = view_dense(y1, MKC_T_FLOAT, 4, y1d), y2v = view_dense(y2, MKC_T_FLOAT, 4, y1d);
	const mkc_view sv = view_dense(seq, MKC_T_INT32, 1, sd);
	const mkc_view cv = view_strided(cs, MKC_T_FLOAT, 2, cd, cs_s);
	const mkc_view snv = view_strided(sn, MKC_T_FLOAT, 2, cd, cs_s);
	poison(y, sizeof y / sizeof *y);
	poison(y1, sizeof y1 / sizeof *y1);
	poison(y2, sizeof y2 / sizeof *y2);
	mkc_gqa_args a = {.y = &yv, .pk_out = &y1v, .pv_out = &y2v, .q = &qv, .k = &kv, .v = &vv,
			  .pk = past ? &pkv : NULL, .pv = past ? &pvv : NULL, .seqlens_k = &sv,
			  .cos = R ? &cv : NULL, .sin = R ? &snv : NULL, .hq = Hq, .hk = Hk, .d = D,
			  .inter = inter, .scale = scale, .softcap = softcap};
	const mkc_view tv = view_dense(&total, MKC_T_INT32, 0, sd);
	a.total = &tv;
	mkc_rt_bad bad = {0, 0, 0, 0, 0};
	cr_expect_eq(mkc_gqa(&a, qr, &bad), 0, "R %d: no position is outside the caches", R);
	cr_expect_eq(bad.what, 0, "*bad written with every length in range");
	double e = rel_err(y, want, sizeof y / sizeof *y);
	cr_expect(e <= 1e-5, "mkc_gqa R %d inter %d past %d softcap %g: error %.2e", R, inter, past,
		  (double)softcap, e);
	e = fmax(rel_err(y1, w1, (size_t)B * Hk * L * D), rel_err(y2, w2, (size_t)B * Hk * L * D));
	cr_expect(e <= 1e-6, "mkc_gqa's present keys and values, R %d past %d: error %.2e", R, past,
		  e);
	gqa_refusals(&a, qr, P, S, R, cd, cs_s);
}
Test(bodies, gqa_rotates_keeps_the_present_and_attends_causally)
{
	for (int past = 0; past <= 1; past++) {
		gqa_case(0, 0, past, 0);
		gqa_case(4, 0, past, 0);
		gqa_case(4, 1, past, 0);
		gqa_case(8, 0, past, 6.0f);
		gqa_case(8, 1, past, 0);
	}
}
