/*
 * test_op_bodies.c - the tile bodies of the data ops (backends/c/data.h),
 * the elementwise ops (elementwise.h) and the reductions (reduce.h), run alone on the CPU (one lane,
 * as the C target runs them) against references written out here index by
 * index. Outputs are poisoned first (every byte 0xff: NaN as float, -1 as
 * an integer), so an element a body leaves unwritten fails. The bodies run
 * tile by tile, over boxes cut as passes/tile.c would cut them, so that
 * lo..hi are honoured. Moves, conversions and integer results are compared
 * bit for bit; float results with 1e-6 of float64 references.
 * tests/gpu/portable.cu runs the same bodies on the GPU, many lanes to a
 * tile, against these host copies.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what an emitted file holds before the bodies (as test_bodies.c) */
#include "../../runtime/limits.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../../runtime/common.h"
#include "../../runtime/bf16.h"
#include "../test_data.h"
#pragma GCC diagnostic pop
#include "../../backends/c/scalar.h"
#include "../../backends/c/data.h"
#include "../../backends/c/elementwise.h"
#include "../../backends/c/reduce.h"

/* Coordinates idx of flat index f of dense dims d. */
static void
coords(int64_t f, const int64_t *d, int r, int64_t *idx)
{
	for (int i = r - 1; i >= 0; i--) {
		idx[i] = f % d[i];
		f /= d[i];
	}
}

/*
 * The tiles of dims d cut along axis at the given cuts (ascending, ending
 * with d[axis]): tile t is box lo[t]..hi[t]. Returns how many.
 */
static int
tiles(const int64_t *d, int r, int axis, const int64_t *cuts, int ncut, int64_t lo[][MKC_RANK],
      int64_t hi[][MKC_RANK])
{
	for (int t = 0; t < ncut; t++) {
		for (int i = 0; i < r; i++) {
			lo[t][i] = 0;
			hi[t][i] = d[i];
		}
		lo[t][axis] = t ? cuts[t - 1] : 0;
		hi[t][axis] = cuts[t];
	}
	return ncut;
}

/* Every element of y moves whole, in whatever order: copy of each element size. */
Test(op_bodies, copy_moves_every_element_size_flat_and_by_box)
{
	enum { N = 2 * 3 * 4 };
	const int64_t yd[3] = {6, 4, 0};
	int64_t lo[4][MKC_RANK], hi[4][MKC_RANK];
	uint8_t x[N * 8], y[N * 8];
	for (int i = 0; i < N * 8; i++)
		x[i] = (uint8_t)(urand() * 100 + 101);
	const int es[4] = {1, 2, 4, 8};
	for (int k = 0; k < 4; k++)
		for (int flat = 0; flat <= 1; flat++) {
			/* a flat walk's tiles are runs (rows of y); a box walk's are not */
			const int64_t rows[3] = {2, 5, 6}, cols[2] = {1, 4};
			int nt = flat ? tiles(yd, 2, 0, rows, 3, lo, hi) : tiles(yd, 2, 1, cols, 2, lo, hi);
			/* x [2, 3, 4] into y [6, 4], elements of es[k] bytes */
			const int64_t xd[3] = {2, 3, 4};
			const mkc_view yv = view_dense(y, bits_type(es[k]), 2, yd);
			const mkc_view xv = view_dense(x, bits_type(es[k]), 3, xd);
			memset(y, 0xff, sizeof y);
			for (int t = 0; t < nt; t++)
				mkc_copy(&yv, &xv, flat, lo[t], hi[t]);
			cr_expect(!memcmp(y, x, (size_t)(N * es[k])), "mkc_copy es %d flat %d", es[k],
				  flat);
			cr_expect(es[k] == 8 || y[N * es[k]] == 0xff, "mkc_copy es %d wrote past y",
				  es[k]);
		}
}

Test(op_bodies, transpose_reads_axis_perm_d_for_output_axis_d)
{
	const int64_t xd[4] = {2, 3, 4, 0}, yd[4] = {4, 2, 3, 0};
	const int perm[3] = {2, 0, 1};
	int64_t x[24], y[24], want[24], lo[3][MKC_RANK], hi[3][MKC_RANK];
	const mkc_view xv = view_dense(x, MKC_T_INT64, 3, xd), yv = view_dense(y, MKC_T_INT64, 3, yd);
	for (int i = 0; i < 24; i++)
		x[i] = 1000 + i;
	for (int f = 0; f < 24; f++) {
		int64_t yi[3], xi[3];
		coords(f, yd, 3, yi);
		for (int d = 0; d < 3; d++)
			xi[perm[d]] = yi[d];
		want[f] = x[(xi[0] * 3 + xi[1]) * 4 + xi[2]];
	}
	const int64_t cuts[2] = {1, 2};
	int nt = tiles(yd, 3, 1, cuts, 2, lo, hi);
	memset(y, 0xff, sizeof y);
	for (int t = 0; t < nt; t++)
		mkc_transpose(&yv, &xv, perm, lo[t], hi[t]);
	cr_expect(!memcmp(y, want, sizeof want), "mkc_transpose");
}

/* x [5, 6] sliced by starts and steps (clamped as ONNX does) into y of dims yd */
static void
slice_case(const int64_t *start, const int64_t *step, const int64_t *yd, const int64_t *first)
{
	const int64_t xd[3] = {5, 6, 0};
	int64_t lo[2][MKC_RANK], hi[2][MKC_RANK];
	float x[30], y[30], want[30];
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 2, xd), yv = view_dense(y, MKC_T_FLOAT, 2, yd);
	for (int i = 0; i < 30; i++)
		x[i] = urand();
	const int64_t n = mkc_rt_count(yd, 2);
	for (int64_t f = 0; f < n; f++) {
		int64_t yi[2];
		coords(f, yd, 2, yi);
		want[f] = x[(first[0] + yi[0] * step[0]) * 6 + first[1] + yi[1] * step[1]];
	}
	const int64_t cuts[2] = {1, yd[0]};
	int nt = tiles(yd, 2, 0, cuts, 2, lo, hi);
	memset(y, 0xff, sizeof y);
	for (int t = 0; t < nt; t++)
		mkc_slice(&yv, &xv, start, step, lo[t], hi[t]);
	cr_expect(!memcmp(y, want, (size_t)n * sizeof *y),
		  "mkc_slice start {%lld, %lld} step {%lld, %lld}", (long long)start[0],
		  (long long)start[1], (long long)step[0], (long long)step[1]);
}

Test(op_bodies, slice_counts_negative_starts_from_the_end_and_clamps)
{
	/* rows 1, 3; columns 5, 3, 1 */
	slice_case((const int64_t[]){1, -1}, (const int64_t[]){2, -2}, (const int64_t[]){2, 3, 0},
		   (const int64_t[]){1, 5});
	/* start -100 clamps to 0; 10 stepping back clamps to the last, 5 */
	slice_case((const int64_t[]){-100, 10}, (const int64_t[]){1, -3},
		   (const int64_t[]){5, 2, 0}, (const int64_t[]){0, 5});
}

/* Concat along axis 1 of [2, 1, 3], [2, 2, 3], [2, 3, 3]; Split of the result back. */
Test(op_bodies, concat_and_split_along_the_middle_axis)
{
	const int64_t d[3][4] = {{2, 1, 3, 0}, {2, 2, 3, 0}, {2, 3, 3, 0}}, yd[4] = {2, 6, 3, 0};
	int64_t lo[3][MKC_RANK], hi[3][MKC_RANK];
	int32_t a[6], b[12], c[18], y[36], want[36];
	int32_t *in[3] = {a, b, c};
	mkc_view xv[3];
	for (int k = 0; k < 3; k++) {
		xv[k] = view_dense(in[k], MKC_T_INT32, 3, d[k]);
		for (int i = 0; i < mkc_rt_count(d[k], 3); i++)
			in[k][i] = 100 * (k + 1) + i;
	}
	const mkc_view yv = view_dense(y, MKC_T_INT32, 3, yd);
	for (int f = 0; f < 36; f++) {
		int64_t yi[3];
		coords(f, yd, 3, yi);
		int k = yi[1] < 1 ? 0 : yi[1] < 3 ? 1 : 2, off = k == 0 ? 0 : k == 1 ? 1 : 3;
		want[f] = in[k][(yi[0] * d[k][1] + yi[1] - off) * 3 + yi[2]];
	}
	/* tiles that cross the inputs' borders */
	const int64_t cuts[3] = {2, 5, 6};
	int nt = tiles(yd, 3, 1, cuts, 3, lo, hi);
	const mkc_view *const x[3] = {&xv[0], &xv[1], &xv[2]};
	memset(y, 0xff, sizeof y);
	for (int t = 0; t < nt; t++)
		mkc_concat(&yv, 3, x, 1, lo[t], hi[t]);
	cr_expect(!memcmp(y, want, sizeof want), "mkc_concat");

	/* split: y into [2, 2, 3] and [2, 4, 3] */
	const int64_t od[2][4] = {{2, 2, 3, 0}, {2, 4, 3, 0}};
	int32_t p[12], q[24];
	memset(p, 0xff, sizeof p);
	memset(q, 0xff, sizeof q);
	const mkc_view pv = view_dense(p, MKC_T_INT32, 3, od[0]), qv = view_dense(q, MKC_T_INT32, 3, od[1]);
	const mkc_view wv = view_dense(want, MKC_T_INT32, 3, yd);
	const mkc_view *const out[2] = {&pv, &qv};
	mkc_split(2, out, &wv, 1);
	for (int f = 0; f < 36; f++) {
		int64_t yi[3];
		coords(f, yd, 3, yi);
		int32_t got = yi[1] < 2 ? p[(yi[0] * 2 + yi[1]) * 3 + yi[2]]
					: q[(yi[0] * 4 + yi[1] - 2) * 3 + yi[2]];
		cr_expect_eq(got, want[f], "mkc_split: element %d is %d, not %d", f, got, want[f]);
	}
}

/*
 * A CacheAppend into a cache that keeps its positions on axis 1 of [B, cap,
 * H, D] (emit_cache_append's other layouts): the box is positions pos ..
 * pos + S, element idx of it x's idx - pos along axis 1, so mkc_strided
 * takes base -pos * xs[1]. Positions outside the box keep their poison.
 */
Test(op_bodies, strided_appends_new_positions_to_a_cache_on_axis_1)
{
	enum { B = 2, CAP = 6, H = 3, D = 2, S = 2, POS = 3 };
	const int64_t xd[5] = {B, S, H, D, 0}, cl[5] = {B, CAP, H, D, 0};
	float x[B * S * H * D];
	uint32_t y[B * CAP * H * D], want[B * CAP * H * D];
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 4, xd), yv = view_dense(y, MKC_T_FLOAT, 4, cl);
	for (int i = 0; i < B * S * H * D; i++)
		x[i] = urand();
	memset(want, 0xff, sizeof want);
	for (int b = 0; b < B; b++)
		for (int s = 0; s < S; s++)
			memcpy(&want[((b * CAP + POS + s) * H) * D], &x[((b * S + s) * H) * D],
			       H * D * sizeof(float));
	memset(y, 0xff, sizeof y);
	/* one tile a batch, as tile.c might cut it */
	for (int b = 0; b < B; b++) {
		const int64_t lo[4] = {b, POS, 0, 0}, hi[4] = {b + 1, POS + S, H, D};
		mkc_strided(&yv, &xv, -lo[1] * xv.s[1], xv.s, lo, hi);
	}
	cr_expect(!memcmp(y, want, sizeof want), "the new positions, and nothing else, moved");
}

/* Gather of a [5, 4] table by int64 indices [2, 3], axis 0; negative ones count from the end. */
Test(op_bodies, gather_along_axis_0_by_int64_indices)
{
	const int64_t xd[3] = {5, 4, 0}, id[3] = {2, 3, 0}, yd[4] = {2, 3, 4, 0};
	const int64_t ind[6] = {4, 0, -1, 2, -5, 3};
	int64_t lo[2][MKC_RANK], hi[2][MKC_RANK];
	mkc_rt_bad bad = {0, 7, 0, 0, 0};
	float x[20], y[24], want[24];
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 2, xd), iv = view_dense(ind, MKC_T_INT64, 2, id);
	const mkc_view yv = view_dense(y, MKC_T_FLOAT, 3, yd);
	for (int i = 0; i < 20; i++)
		x[i] = urand();
	for (int f = 0; f < 24; f++) {
		int64_t j = ind[f / 4];
		want[f] = x[(j < 0 ? j + 5 : j) * 4 + f % 4];
	}
	const int64_t cuts[2] = {1, 3};
	int nt = tiles(yd, 3, 1, cuts, 2, lo, hi);
	memset(y, 0xff, sizeof y);
	for (int t = 0; t < nt; t++)
		cr_expect_eq(mkc_gather(&yv, &xv, &iv, 0, lo[t], hi[t], &bad), 0);
	cr_expect(!memcmp(y, want, sizeof want), "mkc_gather axis 0");
	cr_expect(bad.what == 0 && bad.at == 7, "mkc_gather set *bad with every index in range");
}

/* Along axis 1 of [3, 5, 2] by int32 indices [4]; and a bf16 table read as float32. */
Test(op_bodies, gather_along_axis_1_by_int32_indices_and_from_a_bf16_table)
{
	const int64_t xd[4] = {3, 5, 2, 0}, id[2] = {4, 0}, yd[4] = {3, 4, 2, 0};
	const int32_t ind[4] = {3, -1, 0, 3};
	mkc_rt_bad bad;
	const int64_t lo[3] = {0, 0, 0};
	float x[30], y[24], want[24];
	uint16_t xb[30];
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 3, xd);
	const mkc_view xbv = view_bf16(view_dense(xb, MKC_T_FLOAT, 3, xd));
	const mkc_view iv = view_dense(ind, MKC_T_INT32, 1, id), yv = view_dense(y, MKC_T_FLOAT, 3, yd);
	for (int i = 0; i < 30; i++) {
		xb[i] = to_bf16(urand());
		x[i] = urand();
	}
	for (int wide = 0; wide <= 1; wide++) {
		for (int f = 0; f < 24; f++) {
			int64_t yi[3];
			coords(f, yd, 3, yi);
			int64_t j = ind[yi[1]] < 0 ? ind[yi[1]] + 5 : ind[yi[1]];
			int64_t o = (yi[0] * 5 + j) * 2 + yi[2];
			want[f] = wide ? mkc_rt_bf16(xb[o]) : x[o];
		}
		memset(y, 0xff, sizeof y);
		int rc = mkc_gather(&yv, wide ? &xbv : &xv, &iv, 1, lo, yd, &bad);
		cr_expect_eq(rc, 0);
		cr_expect(!memcmp(y, want, sizeof want), "mkc_gather axis 1, wide %d", wide);
	}
}

/*
 * An index out of -5..4 along an axis of 5 is refused before the tile
 * moves anything, with the index as the caller gave it and its place among
 * the indices; a tile whose own indices are in range runs (the checks are
 * of the indices each tile reads: a row of the table each).
 */
Test(op_bodies, gather_refuses_an_index_out_of_range_before_moving_anything)
{
	const int64_t xd[3] = {5, 2, 0}, id[3] = {2, 2, 0}, yd[4] = {2, 2, 2, 0};
	float x[10], y[8];
	for (int i = 0; i < 10; i++)
		x[i] = (float)i;
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 2, xd), yv = view_dense(y, MKC_T_FLOAT, 3, yd);
	static const struct {
		int64_t ind[4], value, at;
	} cases[] = {
		{{1, 0, 5, 9}, 5, 2},    /* one past the end: the first of two, element 2 */
		{{0, 2, -6, 4}, -6, 2},  /* one before the start, counted from the end */
		{{4, -5, 3, 7}, 7, 3},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const mkc_view iv = view_dense(cases[c].ind, MKC_T_INT64, 2, id);
		/* two tiles, a row of indices each: the first's indices are in range */
		const int64_t lo0[3] = {0, 0, 0}, hi0[3] = {1, 2, 2}, lo1[3] = {1, 0, 0};
		mkc_rt_bad bad = {0, 0, 0, 0, 0};
		memset(y, 0xff, sizeof y);
		cr_expect_eq(mkc_gather(&yv, &xv, &iv, 0, lo0, hi0, &bad), 0, "case %zu, tile 0", c);
		cr_expect_eq(bad.what, 0, "case %zu: tile 0 set *bad", c);
		cr_expect_eq(mkc_gather(&yv, &xv, &iv, 0, lo1, yd, &bad), -1, "case %zu, tile 1", c);
		cr_expect(bad.what == MKC_IX_INDEX && bad.value == cases[c].value &&
			  bad.at == cases[c].at && bad.lo == -5 && bad.hi == 4,
			  "case %zu: found %lld at %lld in %lld..%lld", c, (long long)bad.value,
			  (long long)bad.at, (long long)bad.lo, (long long)bad.hi);
		for (int i = 4; i < 8; i++)
			cr_expect(isnan(y[i]), "case %zu: y[%d] written by the refused tile", c, i);
		char sn[300];
		mkc_rt_index_sentence(sn, sizeof sn, "node 'emb' (Gather)", &bad);
		char want[128];
		snprintf(want, sizeof want, "node 'emb' (Gather): index %lld (element %lld of the "
			 "indices) is outside -5..4", (long long)cases[c].value, (long long)cases[c].at);
		cr_expect_str_eq(sn, want);
	}
}

Test(op_bodies, range_in_each_type_s_arithmetic)
{
	enum { N = 7 };
	const float fs = 0.5f, fd = -0.375f;
	const double ds = 1e10, dd = 0.1;
	const int32_t is = -3, id = 4;
	const int64_t ls = INT64_C(1) << 40, ld = -3;
	const int16_t hs = 30000, hd = 1;
	float fy[N];
	double dy[N];
	int32_t iy[N];
	int64_t ly[N];
	int16_t hy[N];
	memset(fy, 0xff, sizeof fy);
	memset(dy, 0xff, sizeof dy);
	memset(iy, 0xff, sizeof iy);
	memset(ly, 0xff, sizeof ly);
	memset(hy, 0xff, sizeof hy);
	/* y [N] in each type; start and delta scalars (rank 0) of that type */
	const int64_t n[1] = {N};
	const mkc_view y[5] = {view_dense(fy, MKC_T_FLOAT, 1, n), view_dense(dy, MKC_T_DOUBLE, 1, n),
			       view_dense(iy, MKC_T_INT32, 1, n), view_dense(ly, MKC_T_INT64, 1, n),
			       view_dense(hy, MKC_T_INT16, 1, n)};
	const mkc_view st[5] = {view_dense(&fs, MKC_T_FLOAT, 0, n), view_dense(&ds, MKC_T_DOUBLE, 0, n),
				view_dense(&is, MKC_T_INT32, 0, n), view_dense(&ls, MKC_T_INT64, 0, n),
				view_dense(&hs, MKC_T_INT16, 0, n)};
	const mkc_view de[5] = {view_dense(&fd, MKC_T_FLOAT, 0, n), view_dense(&dd, MKC_T_DOUBLE, 0, n),
				view_dense(&id, MKC_T_INT32, 0, n), view_dense(&ld, MKC_T_INT64, 0, n),
				view_dense(&hd, MKC_T_INT16, 0, n)};
	for (int64_t lo = 0; lo < N; lo += 4) {   /* tiles [0, 4) and [4, 7) */
		int64_t hi = lo + 4 < N ? lo + 4 : N;
		for (int k = 0; k < 5; k++)
			mkc_range(&y[k], &st[k], &de[k], &lo, &hi);
	}
	for (int i = 0; i < N; i++) {
		cr_expect_eq(fy[i], 0.5f - 0.375f * (float)i, "float %d: %g", i, (double)fy[i]);
		cr_expect_eq(dy[i], 1e10 + 0.1 * i, "double %d: %.17g", i, dy[i]);
		cr_expect_eq(iy[i], -3 + 4 * i, "int32 %d: %d", i, iy[i]);
		cr_expect_eq(ly[i], (INT64_C(1) << 40) - 3 * i, "int64 %d", i);
		cr_expect_eq(hy[i], 30000 + i, "int16 %d: %d", i, hy[i]);
	}
}

/* elementwise.h */

enum { EN = 37 };   /* elements of the flat tests: tiles [0, 16) and [16, 37) */

/* op on nin operands x[k] of types t[k], EN elements, flat, into y of type ty */
static void
ew_flat(int op, int isf, void *y, int ty, int nin, const void *const *x, const int *t)
{
	const int64_t n[1] = {EN}, lo[2][1] = {{0}, {16}}, hi[2][1] = {{16}, {EN}};
	mkc_view xv[8];
	const mkc_view *xp[8];
	cr_assert(nin <= 8);
	for (int k = 0; k < nin; k++) {
		xv[k] = view_dense(x[k], t[k], 1, n);
		xp[k] = &xv[k];
	}
	const mkc_view yv = view_dense(y, ty, 1, n);
	for (int k = 0; k < 2; k++)
		mkc_elementwise(op, isf, &yv, nin, xp, 1, lo[k], hi[k]);
}

/* The float form against float64: within 1e-6 of the reference, relative (absolute near 0). */
static double
ref_f(int op, double a, double b)
{
	switch (op) {
	case MKC_EW_NEG: return -a;
	case MKC_EW_ABS: return fabs(a);
	case MKC_EW_SQRT: return sqrt(a);
	case MKC_EW_RECIPROCAL: return 1 / a;
	case MKC_EW_EXP: return exp(a);
	case MKC_EW_LOG: return log(a);
	case MKC_EW_SIN: return sin(a);
	case MKC_EW_COS: return cos(a);
	case MKC_EW_TANH: return tanh(a);
	case MKC_EW_SIGMOID: return 1 / (1 + exp(-a));
	case MKC_EW_RELU: return a > 0 ? a : 0;
	case MKC_EW_ERF: return erf(a);
	case MKC_EW_FLOOR: return floor(a);
	case MKC_EW_CEIL: return ceil(a);
	case MKC_EW_SILU: return a / (1 + exp(-a));
	case MKC_EW_ADD: return a + b;
	case MKC_EW_SUB: return a - b;
	case MKC_EW_MUL: return a * b;
	case MKC_EW_DIV: return a / b;
	case MKC_EW_POW: return pow(a, b);
	case MKC_EW_MAX: return fmax(a, b);
	case MKC_EW_MIN: return fmin(a, b);
	case MKC_EW_SILU_MUL: return a / (1 + exp(-a)) * b;
	default: return a;
	}
}

Test(op_bodies, elementwise_float_ops_match_float64)
{
	static const int ops[] = {
		MKC_EW_IDENTITY, MKC_EW_NEG, MKC_EW_ABS, MKC_EW_SQRT, MKC_EW_RECIPROCAL, MKC_EW_EXP,
		MKC_EW_LOG, MKC_EW_SIN, MKC_EW_COS, MKC_EW_TANH, MKC_EW_SIGMOID, MKC_EW_RELU,
		MKC_EW_ERF, MKC_EW_FLOOR, MKC_EW_CEIL, MKC_EW_SILU, MKC_EW_ADD, MKC_EW_SUB,
		MKC_EW_MUL, MKC_EW_DIV, MKC_EW_POW, MKC_EW_MAX, MKC_EW_MIN, MKC_EW_SILU_MUL,
	};
	float a[EN], b[EN], y[EN];
	for (int i = 0; i < EN; i++) {
		a[i] = 0.1f + 3 * fabsf(urand());   /* positive: Sqrt, Log and Pow stay real */
		b[i] = 3 * urand();
	}
	a[5] = 2.5f;   /* a whole half: Floor and Ceil round it apart */
	const void *const x[2] = {a, b};
	const int t[2] = {MKC_T_FLOAT, MKC_T_FLOAT};
	for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
		const int op = ops[o], nin = op >= MKC_EW_ADD ? 2 : 1;
		for (int neg = 0; neg <= 1; neg++) {   /* a, then -a where the op takes it */
			if (neg && (op == MKC_EW_SQRT || op == MKC_EW_LOG || op == MKC_EW_POW))
				continue;
			float an[EN];
			for (int i = 0; i < EN; i++)
				an[i] = neg ? -a[i] : a[i];
			const void *const xn[2] = {an, b};
			memset(y, 0xff, sizeof y);
			ew_flat(op, 1, y, MKC_T_FLOAT, nin, neg ? xn : x, t);
			for (int i = 0; i < EN; i++) {
				double want = ref_f(op, an[i], b[i]);
				cr_expect(fabs(y[i] - want) <= 1e-6 * fmax(fabs(want), 1),
					  "op %d of (%g, %g): %.9g, not %.9g", op, (double)an[i],
					  (double)b[i], (double)y[i], want);
			}
		}
	}
}

/* Comparisons, IsNaN and a Cast to bool: 0 or 1 into a bool, from both forms. */
Test(op_bodies, elementwise_comparisons_give_bools)
{
	static const int ops[] = {MKC_EW_EQUAL, MKC_EW_LESS, MKC_EW_LESS_EQUAL, MKC_EW_GREATER,
				  MKC_EW_GREATER_EQUAL, MKC_EW_ISNAN, MKC_EW_NONZERO};
	float a[EN], b[EN];
	int64_t ia[EN], ib[EN];
	uint8_t y[EN];
	for (int i = 0; i < EN; i++) {
		ia[i] = i % 5 - 2;
		ib[i] = i % 3 - 1;
		a[i] = (float)ia[i];
		b[i] = (float)ib[i];
	}
	a[7] = NAN;
	const void *const xf[2] = {a, b}, *const xi[2] = {ia, ib};
	const int tf[2] = {MKC_T_FLOAT, MKC_T_FLOAT}, ti[2] = {MKC_T_INT64, MKC_T_INT64};
	for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
		for (int isf = 0; isf <= 1; isf++) {
			const int op = ops[o], nin = op <= MKC_EW_NONZERO ? 1 : 2;
			memset(y, 0xff, sizeof y);
			ew_flat(op, isf, y, MKC_T_BOOL, nin, isf ? xf : xi, isf ? tf : ti);
			for (int i = 0; i < EN; i++) {
				double p = isf ? a[i] : (double)ia[i], q = isf ? b[i] : (double)ib[i];
				int want = op == MKC_EW_EQUAL ? p == q : op == MKC_EW_LESS ? p < q
					 : op == MKC_EW_LESS_EQUAL ? p <= q : op == MKC_EW_GREATER ? p > q
					 : op == MKC_EW_GREATER_EQUAL ? p >= q : op == MKC_EW_ISNAN ? isnan(p)
					 : p != 0;
				cr_expect_eq(y[i], want, "op %d form %s of (%g, %g): %d", op,
					     isf ? "float" : "int", p, q, y[i]);
			}
		}
}

/* Pow of integers by squaring: large powers exact, negative ones truncated. */
Test(op_bodies, integer_pow_is_exact_beyond_double_and_truncates_negative_powers)
{
	static const struct {
		int64_t a, b, want;
	} cases[] = {
		{3, 1, 3}, {-2, 3, -8}, {2, 62, INT64_C(1) << 62}, {3, 39, INT64_C(4052555153018976267)},
		{7, 0, 1}, {0, 0, 1}, {0, 5, 0}, {2, -1, 0}, {1, -7, 1}, {-1, -3, -1}, {-1, -4, 1},
		{0, -2, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		cr_expect_eq(mkc_rt_ipow(cases[i].a, cases[i].b), cases[i].want,
			     "%lld ** %lld: %lld, not %lld", (long long)cases[i].a,
			     (long long)cases[i].b, (long long)mkc_rt_ipow(cases[i].a, cases[i].b),
			     (long long)cases[i].want);
}

/* The integer form, exactly: division by zero gives 0. */
Test(op_bodies, elementwise_integer_ops_are_exact)
{
	static const int ops[] = {MKC_EW_IDENTITY, MKC_EW_NEG, MKC_EW_ABS, MKC_EW_RELU, MKC_EW_NOT,
				  MKC_EW_ADD, MKC_EW_SUB, MKC_EW_MUL, MKC_EW_DIV, MKC_EW_POW,
				  MKC_EW_MAX, MKC_EW_MIN, MKC_EW_AND, MKC_EW_OR};
	int32_t a[EN], b[EN], y[EN];
	for (int i = 0; i < EN; i++) {
		a[i] = i * 7 % 23 - 11;
		b[i] = i % 4;   /* 0 every fourth: Div's guard; small: Pow's exponent */
	}
	const void *const x[2] = {a, b};
	const int t[2] = {MKC_T_INT32, MKC_T_INT32};
	for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
		const int op = ops[o], nin = op >= MKC_EW_ADD ? 2 : 1;
		memset(y, 0xff, sizeof y);
		ew_flat(op, 0, y, MKC_T_INT32, nin, x, t);
		for (int i = 0; i < EN; i++) {
			int64_t p = a[i], q = b[i], want;
			switch (op) {
			case MKC_EW_NEG: want = -p; break;
			case MKC_EW_ABS: want = p < 0 ? -p : p; break;
			case MKC_EW_RELU: want = p > 0 ? p : 0; break;
			case MKC_EW_NOT: want = p == 0; break;
			case MKC_EW_ADD: want = p + q; break;
			case MKC_EW_SUB: want = p - q; break;
			case MKC_EW_MUL: want = p * q; break;
			case MKC_EW_DIV: want = q ? p / q : 0; break;
			case MKC_EW_POW: want = q == 0 ? 1 : q == 1 ? p : q == 2 ? p * p : p * p * p; break;
			case MKC_EW_MAX: want = p > q ? p : q; break;
			case MKC_EW_MIN: want = p < q ? p : q; break;
			case MKC_EW_AND: want = p && q; break;
			case MKC_EW_OR: want = p || q; break;
			default: want = p; break;
			}
			cr_expect_eq(y[i], want, "op %d of (%lld, %lld): %d, not %lld", op, (long long)p,
				     (long long)q, y[i], (long long)want);
		}
	}
}

/* Cast through the loads and stores: C's conversions, between every pair of a few types. */
Test(op_bodies, elementwise_casts_convert_as_c_does)
{
	double d[EN];
	float f[EN];
	int64_t l[EN];
	uint8_t u[EN];
	for (int i = 0; i < EN; i++) {
		d[i] = 100 * urand();
		f[i] = (float)d[i];
		l[i] = (int64_t)(1000 * urand());
		u[i] = (uint8_t)(i % 3 == 0);
	}
	const void *const from[4] = {d, f, l, u};
	const int ft[4] = {MKC_T_DOUBLE, MKC_T_FLOAT, MKC_T_INT64, MKC_T_BOOL};
	for (int k = 0; k < 4; k++) {
		/* the form: the operand's (a float operand's float, else int64) */
		int isf = k < 2;
		double yd[EN];
		float yf[EN];
		int32_t yi[EN];
		memset(yd, 0xff, sizeof yd);
		memset(yf, 0xff, sizeof yf);
		memset(yi, 0xff, sizeof yi);
		ew_flat(MKC_EW_IDENTITY, isf, yd, MKC_T_DOUBLE, 1, &from[k], &ft[k]);
		ew_flat(MKC_EW_IDENTITY, isf, yf, MKC_T_FLOAT, 1, &from[k], &ft[k]);
		ew_flat(MKC_EW_IDENTITY, isf, yi, MKC_T_INT32, 1, &from[k], &ft[k]);
		for (int i = 0; i < EN; i++) {
			/* the float form computes in float: a double is narrowed first */
			double v = k == 0 ? (float)d[i] : k == 1 ? f[i] : k == 2 ? (double)l[i] : u[i];
			cr_expect_eq(yd[i], isf ? v : (double)(k == 2 ? l[i] : u[i]), "to double, from %d", k);
			cr_expect_eq(yf[i], (float)v, "to float, from %d", k);
			cr_expect_eq(yi[i], isf ? (int32_t)(float)v : (int32_t)(k == 2 ? l[i] : u[i]),
				     "to int32, from %d: %d", k, yi[i]);
		}
	}
}

/*
 * A box walk: Add of a [2, 3, 4] and b [3, 1] broadcast, and Where(c [4],
 * a, s []) by a bool mask, in tiles across axis 1; and the same Add as a
 * flat walk where it can be one (b [2, 3, 4]).
 */
Test(op_bodies, elementwise_broadcasts_by_box_and_walks_flat)
{
	const int64_t yd[4] = {2, 3, 4, 0}, bd[3] = {3, 1, 0}, cd[2] = {4, 0};
	int64_t lo[2][MKC_RANK], hi[2][MKC_RANK];
	float a[24], b[3], s[1] = {-7.5f}, y[24], full[24], yf[24];
	uint8_t c[4] = {1, 0, 0, 1};
	/* each operand's own dims: the body broadcasts them into y's */
	const mkc_view av = view_dense(a, MKC_T_FLOAT, 3, yd), bv = view_dense(b, MKC_T_FLOAT, 2, bd);
	const mkc_view cv = view_dense(c, MKC_T_BOOL, 1, cd), sv = view_dense(s, MKC_T_FLOAT, 0, cd);
	const mkc_view fv = view_dense(full, MKC_T_FLOAT, 3, yd);
	const mkc_view yv = view_dense(y, MKC_T_FLOAT, 3, yd), yfv = view_dense(yf, MKC_T_FLOAT, 3, yd);
	for (int i = 0; i < 24; i++)
		a[i] = urand();
	for (int i = 0; i < 3; i++)
		b[i] = urand();
	const int64_t cuts[2] = {1, 3};
	int nt = tiles(yd, 3, 1, cuts, 2, lo, hi);
	{
		const mkc_view *const x[2] = {&av, &bv};
		memset(y, 0xff, sizeof y);
		for (int k = 0; k < nt; k++)
			mkc_elementwise(MKC_EW_ADD, 1, &yv, 2, x, 0, lo[k], hi[k]);
		for (int i = 0; i < 24; i++) {
			full[i] = b[i / 4 % 3];
			cr_expect_eq(y[i], a[i] + b[i / 4 % 3], "broadcast Add, element %d", i);
		}
	}
	{
		const mkc_view *const x[2] = {&av, &fv};
		const int64_t rows[2] = {1, 2};
		int nr = tiles(yd, 3, 0, rows, 2, lo, hi);   /* runs: flat tiles */
		memset(yf, 0xff, sizeof yf);
		for (int k = 0; k < nr; k++)
			mkc_elementwise(MKC_EW_ADD, 1, &yfv, 2, x, 1, lo[k], hi[k]);
		cr_expect(!memcmp(y, yf, sizeof y), "the flat Add differs from the broadcast one");
	}
	{
		const mkc_view *const x[3] = {&cv, &av, &sv};
		nt = tiles(yd, 3, 1, cuts, 2, lo, hi);
		memset(y, 0xff, sizeof y);
		for (int k = 0; k < nt; k++)
			mkc_elementwise(MKC_EW_WHERE, 1, &yv, 3, x, 0, lo[k], hi[k]);
		for (int i = 0; i < 24; i++)
			cr_expect_eq(y[i], c[i % 4] ? a[i] : s[0], "Where, element %d", i);
	}
}

/* Max and Min of more than two operands fold left to right (a NaN anywhere makes NaN). */
Test(op_bodies, elementwise_max_and_min_fold_any_number_of_operands)
{
	float v[5][EN], y[EN];
	int64_t w[4][EN], yi[EN];
	for (int k = 0; k < 5; k++)
		for (int i = 0; i < EN; i++)
			v[k][i] = urand();
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < EN; i++)
			w[k][i] = (int64_t)(1000 * urand());
	v[2][3] = NAN;
	const void *const x[5] = {v[0], v[1], v[2], v[3], v[4]}, *const xi[4] = {w[0], w[1], w[2], w[3]};
	const int t[5] = {MKC_T_FLOAT, MKC_T_FLOAT, MKC_T_FLOAT, MKC_T_FLOAT, MKC_T_FLOAT};
	const int ti[4] = {MKC_T_INT64, MKC_T_INT64, MKC_T_INT64, MKC_T_INT64};
	for (int mx = 0; mx <= 1; mx++) {
		const int op = mx ? MKC_EW_MAX : MKC_EW_MIN;
		memset(y, 0xff, sizeof y);
		memset(yi, 0xff, sizeof yi);
		ew_flat(op, 1, y, MKC_T_FLOAT, 5, x, t);
		ew_flat(op, 0, yi, MKC_T_INT64, 4, xi, ti);
		for (int i = 0; i < EN; i++) {
			double want = v[0][i];
			int64_t wi = w[0][i];
			for (int k = 1; k < 5; k++)
				want = isnan(want) || isnan(v[k][i]) ? NAN
				     : mx ? fmax(want, v[k][i]) : fmin(want, v[k][i]);
			for (int k = 1; k < 4; k++)
				wi = mx ? (w[k][i] > wi ? w[k][i] : wi) : (w[k][i] < wi ? w[k][i] : wi);
			cr_expect(isnan(want) ? isnan(y[i]) : y[i] == want, "%s of 5 floats, element %d: %g",
				  mx ? "Max" : "Min", i, (double)y[i]);
			cr_expect_eq(yi[i], wi, "%s of 4 int64s, element %d", mx ? "Max" : "Min", i);
		}
	}
}

/*
 * NaN and signed zeros in Max, Min and Relu, as onnxruntime: NaN in either
 * operand, in either place, gives NaN (fmaxf gave the other operand, and
 * Relu's compare 0); of two equal values the first (Max(-0, +0) is -0, and
 * Relu(-0) is -0).
 */
Test(op_bodies, max_min_and_relu_propagate_nan_and_keep_the_first_zero)
{
	float a[EN], b[EN], y[EN];
	for (int i = 0; i < EN; i++) {
		a[i] = i % 4 == 0 ? NAN : i % 4 == 1 ? 1.0f : i % 4 == 2 ? -0.0f : 0.0f;
		b[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? -2.0f : 0.0f;
	}
	const void *const x[2] = {a, b};
	const int t[2] = {MKC_T_FLOAT, MKC_T_FLOAT};
	for (int op = MKC_EW_RELU; op <= MKC_EW_MIN; op++) {
		if (op != MKC_EW_RELU && op != MKC_EW_MAX && op != MKC_EW_MIN)
			continue;
		memset(y, 0xff, sizeof y);
		ew_flat(op, 1, y, MKC_T_FLOAT, op == MKC_EW_RELU ? 1 : 2, x, t);
		for (int i = 0; i < EN; i++) {
			const float p = a[i], q = op == MKC_EW_RELU ? 0.0f : b[i];
			const bool nan = isnan(p) || isnan(q);
			/* std::max and std::min: the second only where it is strictly beyond */
			const float want = op == MKC_EW_MIN ? (q < p ? q : p) : (p < q ? q : p);
			cr_expect(nan ? isnan(y[i]) : y[i] == want && signbit(y[i]) == signbit(want),
				  "op %d of (%g, %g): %g, not %g", op, (double)p, (double)q,
				  (double)y[i], nan ? NAN : (double)want);
		}
	}
}

/*
 * The integer form of Pow with a float exponent: the power in double,
 * truncated, in the base's type (4^1.5 is 8; it was 4^1 = 4, the exponent
 * read as an integer); a result no int64 holds is INT64_MIN.
 */
Test(op_bodies, integer_pow_takes_a_float_exponent)
{
	const int32_t base[8] = {4, 2, 9, -8, 0, 7, 3, -2};
	const float ex[8] = {1.5f, 0.5f, 0.5f, 3.0f, 0.5f, -1.0f, 2.0f, 0.5f};
	const int32_t want[8] = {8, 1, 3, -512, 0, 0, 9, 0};
	int32_t y[8];
	const int64_t n[1] = {8}, lo[1] = {0}, hi[1] = {8};
	const mkc_view bv = view_dense(base, MKC_T_INT32, 1, n), ev = view_dense(ex, MKC_T_FLOAT, 1, n);
	const mkc_view yv = view_dense(y, MKC_T_INT32, 1, n);
	const mkc_view *x[2] = {&bv, &ev};
	memset(y, 0xff, sizeof y);
	mkc_elementwise(MKC_EW_POW, 0, &yv, 2, x, 1, lo, hi);
	for (int i = 0; i < 7; i++)   /* (-2)^0.5 is NaN: below */
		cr_expect_eq(y[i], want[i], "%d ** %g: %d, not %d", base[i], (double)ex[i], y[i], want[i]);
	cr_expect_eq(mkc_rt_ipowf(-2, 0.5), INT64_MIN);
	cr_expect_eq(mkc_rt_ipowf(0, -1.0), INT64_MIN);   /* infinity */
	cr_expect_eq(mkc_rt_ipowf(3, 39.0), INT64_C(4052555153018976256));   /* pow's double */
}

/* reduce.h */

/* ReduceMax: one NaN anywhere in the reduced elements gives NaN (fmaxf dropped it). */
Test(op_bodies, reduce_max_propagates_nan_from_any_position)
{
	const int64_t xd[2] = {4, 3}, yd[2] = {4, 1};
	const float x[12] = {NAN, 1, 2, 1, NAN, 2, 1, 2, NAN, 1, 2, 3};
	float y[4];
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 2, xd), yv = view_dense(y, MKC_T_FLOAT, 2, yd);
	const int red[2] = {0, 1};
	memset(y, 0, sizeof y);
	mkc_reduce(MKC_REDUCE_MAX, &yv, &xv, red, 0);
	for (int r = 0; r < 3; r++)
		cr_expect(isnan(y[r]), "row %d holds a NaN: %g", r, (double)y[r]);
	cr_expect_eq(y[3], 3.0f);
}

/*
 * Integer ReduceSum and ReduceMax: int64 rows summed in 64 bits and
 * wrapping (INT64_MAX + 1 is INT64_MIN, no trap under UBSan), int32 rows
 * summed in 64 bits then cut, and the max of negative values.
 */
Test(op_bodies, reduce_of_integers)
{
	const int64_t d2[2] = {2, 3}, d1[2] = {2, 1};
	const int64_t x[6] = {INT64_MAX, 1, 0, -5, -7, 2};
	int64_t y[2];
	const mkc_view xv = view_dense(x, MKC_T_INT64, 2, d2), yv = view_dense(y, MKC_T_INT64, 2, d1);
	const int red[2] = {0, 1};
	mkc_reduce(MKC_REDUCE_SUM, &yv, &xv, red, 8);
	cr_expect_eq(y[0], INT64_MIN);
	cr_expect_eq(y[1], -10);
	mkc_reduce(MKC_REDUCE_MAX, &yv, &xv, red, 8);
	cr_expect_eq(y[0], INT64_MAX);
	cr_expect_eq(y[1], 2);
	const int32_t x32[6] = {INT32_MAX, 1, 0, -5, -7, -2};
	int32_t y32[2];
	const mkc_view xv32 = view_dense(x32, MKC_T_INT32, 2, d2),
		       yv32 = view_dense(y32, MKC_T_INT32, 2, d1);
	mkc_reduce(MKC_REDUCE_SUM, &yv32, &xv32, red, 4);
	cr_expect_eq(y32[0], INT32_MIN);
	cr_expect_eq(y32[1], -14);
	mkc_reduce(MKC_REDUCE_MAX, &yv32, &xv32, red, 4);
	cr_expect_eq(y32[1], -2);
}

/* Sum, Mean and Max of x [3, 4, 5] over each set of axes, against float64 (Max exactly). */
Test(op_bodies, reduce_sum_mean_and_max_over_any_axes)
{
	const int64_t xd[4] = {3, 4, 5, 0};
	float x[60], y[60];
	const mkc_view xv = view_dense(x, MKC_T_FLOAT, 3, xd);
	for (int i = 0; i < 60; i++)
		x[i] = urand();
	for (int mask = 0; mask < 8; mask++)   /* bit d: axis d reduced (0: none, a copy) */
		for (int op = MKC_REDUCE_SUM; op <= MKC_REDUCE_MAX; op++) {
			const int red[3] = {mask & 1, (mask >> 1) & 1, (mask >> 2) & 1};
			int64_t kd[3], on = 1;
			for (int d = 0; d < 3; d++)
				on *= kd[d] = red[d] ? 1 : xd[d];
			/* y of the kept dims, 1 where reduced */
			const mkc_view yv = view_dense(y, MKC_T_FLOAT, 3, kd);
			memset(y, 0xff, sizeof y);
			mkc_reduce(op, &yv, &xv, red, 0);
			for (int64_t o = 0; o < on; o++) {
				int64_t ko[3];
				coords(o, kd, 3, ko);
				double sum = 0, mx = -INFINITY, cnt = 0;
				for (int i = 0; i < 60; i++) {
					int64_t xi[3];
					coords(i, xd, 3, xi);
					if ((red[0] || xi[0] == ko[0]) && (red[1] || xi[1] == ko[1]) &&
					    (red[2] || xi[2] == ko[2])) {
						sum += x[i];
						mx = fmax(mx, x[i]);
						cnt++;
					}
				}
				double want = op == MKC_REDUCE_MAX ? mx : op == MKC_REDUCE_MEAN ? sum / cnt : sum;
				cr_expect(fabs(y[o] - want) <= (op == MKC_REDUCE_MAX ? 0 : 1e-6 * cnt),
					  "op %d axes mask %d, element %lld: %.9g, not %.9g", op, mask,
					  (long long)o, (double)y[o], want);
			}
			if (on < 60)
				cr_expect(isnan(y[on]), "op %d axes mask %d wrote past its %lld outputs", op,
					  mask, (long long)on);
		}
}
