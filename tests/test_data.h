/*
 * test_data.h - what the body tests share (tests/backends/test_bodies.c on
 * the CPU, tests/gpu/bodies.cu and portable.cu on the GPU): random test data from a fixed
 * linear congruential sequence, so every run sees the same inputs; float32
 * rounded to bf16 as mkc stores bf16 weights; the views the bodies take
 * (runtime/common.h's mkc_view: this file comes after it); and the float64
 * references the bodies are checked against.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned test_rng = 12345;

/* The next value of the sequence, uniform in [-1, 1). */
static float
urand(void)
{
	test_rng = test_rng * 1103515245u + 12345u;
	return (float)((test_rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* f rounded to the nearest bf16, ties to even. */
static uint16_t
to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	x += 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/*
 * The view of the tensor at p as a tile function declares one: rank r,
 * extents d and strides s (in elements; 0 past the rank), element type t
 * (an MKC_T_ code), stored in that type. A KV cache with room for more
 * positions than it holds, or a table read in part, takes its own strides.
 */
static inline mkc_view
view_strided(const void *p, int t, int r, const int64_t *d, const int64_t *s)
{
	mkc_view v;
	memset(&v, 0, sizeof v);
	v.p = (void *)p;
	for (int i = 0; i < r; i++) {
		v.d[i] = d[i];
		v.s[i] = s[i];
	}
	v.rank = r;
	v.type = t;
	return v;
}

/* The view of a dense tensor at p: row-major strides over extents d. */
static inline mkc_view
view_dense(const void *p, int t, int r, const int64_t *d)
{
	int64_t s[MKC_RANK + 1];
	mkc_rt_strides(d, r, s);
	return view_strided(p, t, r, d, s);
}

/* v with its elements stored as bf16 (a weight, a scale or a KV cache kept so). */
static inline mkc_view
view_bf16(mkc_view v)
{
	v.bf16 = 1;
	return v;
}

/* The MKC_T_ code of es-byte elements moved as bits (data.h's moves read no values). */
static inline int
bits_type(int es)
{
	return es == 1 ? MKC_T_UINT8 : es == 2 ? MKC_T_UINT16 : es == 4 ? MKC_T_UINT32 : MKC_T_UINT64;
}

/*
 * RotaryEmbedding of one row px of D values into pw: the first R rotated
 * by c[i], s[i], as halves (i, i + R/2) or pairs (2i, 2i + 1) when inter.
 */
static void
ref_rope(double *pw, const float *px, int D, int R, int inter, const float *c, const float *s)
{
	for (int d = 0; d < D; d++)
		pw[d] = px[d];
	for (int i = 0; i < R / 2; i++) {
		const int i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + R / 2;
		pw[i1] = (double)px[i1] * c[i] - (double)px[i2] * s[i];
		pw[i2] = (double)px[i2] * c[i] + (double)px[i1] * s[i];
	}
}

/*
 * Decode attention of hq query rows q [hq, D] over the first L positions of
 * keys and values [hq / G, cap, D] (query head h reads key head h / G):
 * want [hq, D] = softmax(q . k * scale) v.
 */
static void
ref_attention(double *want, const float *q, const float *k, const float *v, int hq, int G, int D,
	      int64_t L, int64_t cap, float scale)
{
	double *sc = (double *)malloc(sizeof(double) * (size_t)(L > 0 ? L : 1));
	for (int h = 0; h < hq; h++) {
		const int kh = h / G;
		double mx = -INFINITY, sum = 0;
		for (int64_t t = 0; t < L; t++) {
			double dot = 0;
			for (int d = 0; d < D; d++)
				dot += (double)q[h * D + d] * k[((size_t)kh * cap + t) * D + d];
			sc[t] = dot * scale;
			mx = fmax(mx, sc[t]);
		}
		for (int64_t t = 0; t < L; t++)
			sum += exp(sc[t] - mx);
		for (int d = 0; d < D; d++) {
			double acc = 0;
			for (int64_t t = 0; t < L; t++)
				acc += exp(sc[t] - mx) * v[((size_t)kh * cap + t) * D + d];
			want[h * D + d] = acc / sum;
		}
	}
	free(sc);
}

/*
 * A cache [H, cap, D] after S positions were appended at pos: those rows
 * into got [H, S, D]; returns how many values elsewhere are not NaN (the
 * cache is poisoned before the append).
 */
static int
cache_unpack(const float *all, int H, int S, int D, int cap, int pos, float *got)
{
	int stray = 0;
	for (int h = 0; h < H; h++)
		for (int t = 0; t < cap; t++)
			for (int d = 0; d < D; d++) {
				const float v = all[((size_t)h * cap + t) * D + d];
				if (t >= pos && t < pos + S)
					got[(h * S + t - pos) * D + d] = v;
				else
					stray += !isnan(v);
			}
	return stray;
}
