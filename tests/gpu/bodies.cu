/*
 * bodies.cu - the CUDA tile bodies of backends/cuda/ run alone, against a
 * float64 reference computed on the host from the same data.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o bodies tests/gpu/bodies.cu && ./bodies
 *
 * and again with -DMKC_BODIES_HIP: the bodies as the HIP target builds
 * them, 64 lanes a warp, run through tests/gpu/hip_on_cuda.h.
 *
 * (tools/gpu_check.sh does this.) For each case: random inputs, the body
 * on one block of MKC_THREADS threads, outputs poisoned with NaN first, and
 * the largest error relative to the largest reference value; a line per
 * case and exit 1 if any exceeds its tolerance (float32 arithmetic against
 * float64: 1e-5 for the products, 1e-5 for attention).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_stub.cuh"

/* the portable bodies matvec.cuh's tile functions end in, in the targets' order */
#include "../../backends/c/scalar.h"
#include "../../backends/c/cache.h"
#include "../../backends/c/elementwise.h"
#include "../../backends/c/matmul.h"
#include "../../backends/cuda/attention.cuh"
#include "../../backends/cuda/matvec.cuh"
#ifdef MKC_BODIES_HIP
#include "../../backends/hip/mfma.h"
#endif
#include "../test_data.h"

static void *
dev_copy(const void *p, size_t n)
{
	void *d;
	CHECK(cudaMalloc(&d, n));
	CHECK(cudaMemcpy(d, p, n, cudaMemcpyHostToDevice));
	return d;
}

static int failures;

static void
report(const char *what, const float *got, const double *want, int n, double tol)
{
	double big = 0, err = 0;
	for (int i = 0; i < n; i++)
		big = fmax(big, fabs(want[i]));
	for (int i = 0; i < n; i++)
		err = isnan(got[i]) ? INFINITY : fmax(err, fabs(got[i] - want[i]));
	double rel = big > 0 ? err / big : err;
	printf("%-44s %s  largest error %.2e of %.2e\n", what, rel <= tol ? "ok  " : "FAIL", rel, big);
	failures += rel > tol;
}

template <int K, bool BF16, int NORM>
static __global__ void
gemv_kernel(const float *x, const void *w, int64_t n, float *out, const void *scale, float eps,
	    const void *w2)
{
	__shared__ float dots[MKC_GEMV_ROWS];
	mkc_gemv<K, BF16, NORM>(x, w, K, w2 ? n / 2 : n, dots, scale, eps, w2);
	for (int64_t r = threadIdx.x; r < n; r += blockDim.x)
		out[r] = dots[r];
}

/*
 * n rows of a [n, K] weight (bf16 or float32) by x, RMS-normalised first
 * with NORM; with two, the rows from n / 2 on as a second weight (NormGlu's)
 */
template <int K, bool BF16, int NORM>
static void
gemv_case(int n, bool two = false)
{
	float *x = (float *)malloc(sizeof(float) * K), *wf = (float *)malloc(sizeof(float) * K * n);
	uint16_t *wb = (uint16_t *)malloc(2 * (size_t)K * n), sb[K];
	float sf[K];
	for (int i = 0; i < K; i++) {
		x[i] = urand();
		sb[i] = to_bf16(1.0f + 0.5f * urand());
		sf[i] = NORM == 2 ? mkc_rt_bf16(sb[i]) : 1.0f + 0.5f * urand();
	}
	for (int i = 0; i < K * n; i++) {
		wb[i] = to_bf16(urand());
		wf[i] = BF16 ? mkc_rt_bf16(wb[i]) : urand();
	}
	const float eps = 1e-5f;
	double ss = 0, *want = (double *)malloc(sizeof(double) * n);
	for (int i = 0; i < K; i++)
		ss += (double)x[i] * x[i];
	double inv = NORM ? 1.0 / sqrt(ss / K + eps) : 1.0;
	for (int r = 0; r < n; r++) {
		double acc = 0;
		for (int k = 0; k < K; k++)
			acc += (double)x[k] * inv * (NORM ? sf[k] : 1.0) * wf[(size_t)r * K + k];
		want[r] = acc;
	}
	float *dx = (float *)dev_copy(x, sizeof(float) * K), *dout, *got = (float *)malloc(sizeof(float) * n);
	void *dw = BF16 ? dev_copy(wb, 2 * (size_t)K * n) : dev_copy(wf, sizeof(float) * K * n);
	void *ds = NORM == 2 ? dev_copy(sb, sizeof sb) : dev_copy(sf, sizeof sf);
	CHECK(cudaMalloc(&dout, sizeof(float) * n));
	CHECK(cudaMemset(dout, 0xff, sizeof(float) * n));   /* NaN until written */
	const void *dw2 = two ? (const char *)dw + (size_t)(n / 2) * K * (BF16 ? 2 : 4) : NULL;
	gemv_kernel<K, BF16, NORM><<<1, MKC_THREADS>>>(dx, dw, n, dout, ds, eps, dw2);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(got, dout, sizeof(float) * n, cudaMemcpyDeviceToHost));
	char what[96];
	snprintf(what, sizeof what, "mkc_gemv<%d, %s, %d>, %d rows%s", K, BF16 ? "bf16" : "f32", NORM,
		 n, two ? ", 2 weights" : "");
	report(what, got, want, n, 1e-5);
	cudaFree(dx);
	cudaFree(dw);
	cudaFree(ds);
	cudaFree(dout);
	free(x);
	free(wf);
	free(wb);
	free(want);
	free(got);
}

template <int D, int G, typename T>
static __global__ void
part_kernel(const float *q, const int64_t *qs, const T *k, const int64_t *ks, const T *v,
	    float *part, const int64_t *ps, int64_t L, int64_t C, int64_t r0, int64_t r1, float scale)
{
	mkc_attn_part<D, G>(q, qs, k, ks, v, ks, part, ps, 1, 1, L, C, r0, r1, scale, NULL);
}

template <int D, bool WARPS>
static __global__ void
merge_kernel(const float *part, const int64_t *ps, float *y, const int64_t *ys, int64_t C,
	     int64_t G, int64_t h0, int64_t h1)
{
	if (WARPS)
		mkc_attn_merge_warps<D>(part, ps, y, ys, 1, 1, C, G, h0, h1, 0, 1);
	else
		mkc_attn_merge<D>(part, ps, y, ys, 1, 1, C, G, h0, h1, 0, 1);
}

template <int D>
static __global__ void
rows_kernel(const float *q, const int64_t *qs, const float *k, const int64_t *ks, const float *v,
	    float *y, int64_t L, int64_t group, int64_t h0, int64_t h1, float scale)
{
	mkc_attn_rows<D>(q, qs, k, ks, v, ks, y, qs, 1, 1, L, group, h0, h1, scale);
}

/*
 * Attention of Hk * G query heads (one position) over L positions of keys
 * and values laid out for cap positions: mkc_attn_rows for all heads, and
 * mkc_attn_part over C chunks for every (key head, chunk) merged on the
 * host as AttnMerge does; with bf, the parts again over the keys and values
 * in bf16 (passes/kv.c), against the reference over the same rounded values.
 */
template <int D, int G>
static void
attn_case(int hk, int64_t L, int64_t cap, int64_t C, bool bf = false)
{
	const int hq = hk * G;
	const float scale = 1.0f / sqrtf((float)D);
	size_t nq = (size_t)hq * D, nk = (size_t)hk * cap * D;
	float *q = (float *)malloc(sizeof(float) * nq), *k = (float *)malloc(sizeof(float) * nk),
	      *v = (float *)malloc(sizeof(float) * nk);
	for (size_t i = 0; i < nq; i++)
		q[i] = urand();
	uint16_t *kh = (uint16_t *)malloc(2 * nk), *vh = (uint16_t *)malloc(2 * nk);
	for (size_t i = 0; i < nk; i++) {
		k[i] = urand();
		v[i] = urand();
		kh[i] = mkc_rt_to_bf16(k[i]);
		vh[i] = mkc_rt_to_bf16(v[i]);
		if (bf) {
			k[i] = mkc_rt_bf16(kh[i]);
			v[i] = mkc_rt_bf16(vh[i]);
		}
	}
	double *want = (double *)malloc(sizeof(double) * nq);
	ref_attention(want, q, k, v, hq, G, D, L, cap, scale);
	const int64_t qs[4] = {(int64_t)nq, D, D, 1}, ks[4] = {(int64_t)nk, cap * D, D, 1};
	const int64_t ps[4] = {hk * C * G * (D + 2), G * (D + 2), D + 2, 1};
	float *dq = (float *)dev_copy(q, sizeof(float) * nq), *dk = (float *)dev_copy(k, sizeof(float) * nk);
	float *dv = (float *)dev_copy(v, sizeof(float) * nk), *dy, *dpart;
	uint16_t *dkh = (uint16_t *)dev_copy(kh, 2 * nk), *dvh = (uint16_t *)dev_copy(vh, 2 * nk);
	int64_t *dqs = (int64_t *)dev_copy(qs, sizeof qs), *dks = (int64_t *)dev_copy(ks, sizeof ks);
	int64_t *dps = (int64_t *)dev_copy(ps, sizeof ps);
	size_t npart = (size_t)hk * C * G * (D + 2);
	CHECK(cudaMalloc(&dy, sizeof(float) * nq));
	CHECK(cudaMalloc(&dpart, sizeof(float) * npart));
	CHECK(cudaMemset(dy, 0xff, sizeof(float) * nq));
	CHECK(cudaMemset(dpart, 0xff, sizeof(float) * npart));
	rows_kernel<D><<<1, MKC_THREADS>>>(dq, dqs, dk, dks, dv, dy, L, G, 0, hq, scale);
	/* a block a few (key head, chunk) rows, as tiles would have them */
	for (int64_t r = 0; r < hk * C; r += 3)
		if (bf)
			part_kernel<D, G, uint16_t><<<1, MKC_THREADS>>>(dq, dqs, dkh, dks, dvh, dpart, dps, L, C,
								r, r + 3 < hk * C ? r + 3 : hk * C, scale);
		else
			part_kernel<D, G, float><<<1, MKC_THREADS>>>(dq, dqs, dk, dks, dv, dpart, dps, L, C, r,
								     r + 3 < hk * C ? r + 3 : hk * C, scale);
	CHECK(cudaGetLastError());
	float *got = (float *)malloc(sizeof(float) * nq), *part = (float *)malloc(sizeof(float) * npart);
	CHECK(cudaMemcpy(got, dy, sizeof(float) * nq, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(part, dpart, sizeof(float) * npart, cudaMemcpyDeviceToHost));
	char what[96];
	snprintf(what, sizeof what, "mkc_attn_rows<%d>, %d heads, L %lld", D, hq, (long long)L);
	report(what, got, want, (int)nq, 1e-5);
	for (int h = 0; h < hq; h++) {   /* AttnMerge on the host */
		const int kh = h / G, g = h % G;
		float m = -INFINITY;
		for (int64_t c = 0; c < C; c++)
			m = fmaxf(m, part[((kh * C + c) * G + g) * (D + 2) + D]);
		for (int d = 0; d < D; d++) {
			float sum = 0, acc = 0;
			for (int64_t c = 0; c < C; c++) {
				const float *pc = part + ((kh * C + c) * G + g) * (D + 2);
				if (pc[D] == -INFINITY)
					continue;
				sum += pc[D + 1] * expf(pc[D] - m);
				acc += pc[d] * expf(pc[D] - m);
			}
			got[h * D + d] = sum > 0 ? acc / sum : 0;
		}
	}
	snprintf(what, sizeof what, "mkc_attn_part<%d, %d%s>, %lld chunks, L %lld", D, G,
		 bf ? ", bf16" : "", (long long)C, (long long)L);
	report(what, got, want, (int)nq, 1e-5);
	/* the same parts merged on the device, a few heads a block as tiles would have them */
	CHECK(cudaMemset(dy, 0xff, sizeof(float) * nq));
	for (int h = 0; h < hq; h += 3)
		merge_kernel<D, false><<<1, MKC_THREADS>>>(dpart, dps, dy, dqs, C, G, h,
							  h + 3 < hq ? h + 3 : hq);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(got, dy, sizeof(float) * nq, cudaMemcpyDeviceToHost));
	snprintf(what, sizeof what, "mkc_attn_merge<%d>, %lld chunks, L %lld%s", D, (long long)C,
		 (long long)L, bf ? ", bf16" : "");
	report(what, got, want, (int)nq, 1e-5);
	/* and a warp a head, where a warp's lanes hold the chunks: 3 heads a
	 * block, then every head in one (16 heads: more rows than warps) */
	if (C <= MKC_WARP)
		for (int per : {3, hq}) {
			CHECK(cudaMemset(dy, 0xff, sizeof(float) * nq));
			for (int h = 0; h < hq; h += per)
				merge_kernel<D, true><<<1, MKC_THREADS>>>(dpart, dps, dy, dqs, C, G, h,
									 h + per < hq ? h + per : hq);
			CHECK(cudaGetLastError());
			CHECK(cudaMemcpy(got, dy, sizeof(float) * nq, cudaMemcpyDeviceToHost));
			snprintf(what, sizeof what, "mkc_attn_merge_warps<%d>, %lld chunks, L %lld%s, %d heads a block",
				 D, (long long)C, (long long)L, bf ? ", bf16" : "", per);
			report(what, got, want, (int)nq, 1e-5);
		}
	cudaFree(dq);
	cudaFree(dk);
	cudaFree(dv);
	cudaFree(dkh);
	cudaFree(dvh);
	cudaFree(dy);
	cudaFree(dpart);
	cudaFree(dqs);
	cudaFree(dks);
	cudaFree(dps);
	free(q);
	free(k);
	free(v);
	free(kh);
	free(vh);
	free(want);
	free(got);
	free(part);
}

/* the views by value; rot: cos and sin given */
static __global__ void
cache_kernel(mkc_view y, mkc_view x, mkc_view cos, mkc_view sin, bool rot, int64_t R, int inter,
	     int64_t pos)
{
	mkc_cache_append(&y, &x, rot ? &cos : NULL, rot ? &sin : NULL, R, inter, pos);
}

/*
 * mkc_cache_append (backends/c/cache.h): S new positions of H heads into a
 * cache of cap positions at pos, rotated when R > 0 (R dimensions of D,
 * halves or interleaved pairs), against the rotation in float64; the cache
 * is poisoned first and every position but the new ones must stay so. With
 * bf the cache is bf16 (passes/kv.c), and the bound bf16's rounding.
 */
static void
cache_case(int H, int S, int D, int cap, int pos, int R, int inter, bool bf = false)
{
	const int n = H * S * D, half = R / 2;
	float *x = (float *)malloc(sizeof(float) * n), cs[64], sn[64];
	for (int i = 0; i < n; i++)
		x[i] = urand();
	for (int i = 0; i < S * half; i++) {
		cs[i] = cosf(0.37f * (float)(i + 1));
		sn[i] = sinf(0.37f * (float)(i + 1));
	}
	double *want = (double *)malloc(sizeof(double) * n);
	for (int h = 0; h < H; h++)
		for (int s = 0; s < S; s++)
			ref_rope(want + (h * S + s) * D, x + (h * S + s) * D, D, R, inter, cs + s * half,
				 sn + s * half);
	const size_t ny = (size_t)H * cap * D;
	float *dx = (float *)dev_copy(x, sizeof(float) * n), *dc = (float *)dev_copy(cs, sizeof cs);
	float *ds = (float *)dev_copy(sn, sizeof sn), *dy;
	CHECK(cudaMalloc(&dy, sizeof(float) * ny));
	CHECK(cudaMemset(dy, 0xff, sizeof(float) * ny));   /* NaN until written, in either type */
	/* as emit_cache_append declares them: x [1, H, S, D]; the cache [1, H, pos + S, D] laid
	 * out for cap positions, float32 or bf16; the cos and sin rows [1, S, R/2] */
	const int64_t xd[4] = {1, H, S, D}, yd[4] = {1, H, pos + S, D}, cd[3] = {1, S, half};
	const int64_t ys[4] = {(int64_t)ny, (int64_t)cap * D, D, 1};
	const mkc_view yv = view_strided(dy, MKC_T_FLOAT, 4, yd, ys);
	cache_kernel<<<1, MKC_THREADS>>>(bf ? view_bf16(yv) : yv, view_dense(dx, MKC_T_FLOAT, 4, xd),
					 view_dense(dc, MKC_T_FLOAT, 3, cd),
					 view_dense(ds, MKC_T_FLOAT, 3, cd), R != 0, R, inter, pos);
	CHECK(cudaGetLastError());
	float *all = (float *)malloc(sizeof(float) * ny), *got = (float *)malloc(sizeof(float) * n);
	CHECK(cudaMemcpy(all, dy, sizeof(float) * ny, cudaMemcpyDeviceToHost));
	for (size_t i = ny; bf && i-- > 0;)   /* widened in place, from the end */
		all[i] = mkc_rt_bf16(((const uint16_t *)all)[i]);
	const int stray = cache_unpack(all, H, S, D, cap, pos, got);
	char what[96];
	snprintf(what, sizeof what, "mkc_cache_append H %d S %d D %d R %d%s%s", H, S, D, R,
		 inter ? " pairs" : "", bf ? " bf16" : "");
	report(what, got, want, n, bf ? 4e-3 : 1e-6);
	if (stray) {
		printf("%-44s FAIL  %d values written outside the new positions\n", what, stray);
		failures++;
	}
	cudaFree(dx);
	cudaFree(dc);
	cudaFree(ds);
	cudaFree(dy);
	free(x);
	free(want);
	free(all);
	free(got);
}

#ifdef MKC_BODIES_HIP
template <bool XH, bool GLU, bool YH>
static __global__ void
mfma_kernel(void *y, const void *x, const uint16_t *w, const uint16_t *u, const float *c,
	    int64_t ldc, int64_t m, int64_t n, int64_t k, int64_t span)
{
	extern __shared__ __align__(16) unsigned char mfma_smem[];
	const int64_t n0 = blockIdx.x * span;
	mkc_mma_tile<XH, GLU, YH>(y, n, x, k, w, u, k, c, ldc, m, n0 + span < n ? n0 + span : n, k,
				  blockIdx.y * MKC_MM_TM, n0, mfma_smem);
}

/*
 * The HIP target's matrix-core tile (backends/hip/mfma.h, AMD's
 * instruction stood in for by tests/gpu/hip_on_cuda.h) over every tile of
 * y [m, n] = x [m, k] w [n, k]^T: x float32 (rounded to bf16 by the tile,
 * and so in the reference) or bf16 (XH); GLU silu(x w^T) * (x u^T); y
 * float32 or bf16 (YH); c 0 none, 1 a residual [m, n], 2 a bias [n]; y
 * poisoned first. A block a tile, or with whole a block all the features
 * of its tokens (the tile's pieces in turn).
 */
template <bool XH, bool GLU, bool YH>
static void
mfma_case(int64_t m, int64_t n, int64_t k, int c, bool whole = false)
{
	const int64_t nw = GLU ? 2 * n : n;
	uint16_t *xb = (uint16_t *)malloc(2 * m * k), *wb = (uint16_t *)malloc(2 * nw * k);
	float *xf = (float *)malloc(sizeof(float) * m * k), *cf = (float *)malloc(sizeof(float) * m * n);
	for (int64_t i = 0; i < m * k; i++) {
		xf[i] = urand();
		xb[i] = to_bf16(xf[i]);
	}
	for (int64_t i = 0; i < nw * k; i++)
		wb[i] = to_bf16(urand());
	for (int64_t i = 0; i < m * n; i++)
		cf[i] = urand();
	double *want = (double *)malloc(sizeof(double) * m * n);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double a = 0, b = 0;
			for (int64_t q = 0; q < k; q++) {
				const double xv = mkc_rt_bf16(xb[i * k + q]);
				a += xv * mkc_rt_bf16(wb[j * k + q]);
				if (GLU)
					b += xv * mkc_rt_bf16(wb[(n + j) * k + q]);
			}
			want[i * n + j] = GLU ? a / (1 + exp(-a)) * b
				       : a + (c == 1 ? cf[i * n + j] : c == 2 ? cf[j] : 0);
		}
	const size_t ysz = (YH ? 2 : 4) * (size_t)(m * n);
	void *dx = XH ? dev_copy(xb, 2 * m * k) : dev_copy(xf, sizeof(float) * m * k), *dy;
	uint16_t *dw = (uint16_t *)dev_copy(wb, 2 * nw * k);
	float *dc = (float *)dev_copy(cf, sizeof(float) * m * n);
	CHECK(cudaMalloc(&dy, ysz));
	CHECK(cudaMemset(dy, 0xff, ysz));   /* NaN until written */
	CHECK(cudaFuncSetAttribute(mfma_kernel<XH, GLU, YH>,
				   cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_MM_SMEM));
	const int64_t span = whole ? n : GLU ? MKC_MM_TN / 2 : MKC_MM_TN;
	const dim3 grid((unsigned)((n + span - 1) / span), (unsigned)((m + MKC_MM_TM - 1) / MKC_MM_TM));
	mfma_kernel<XH, GLU, YH><<<grid, MKC_THREADS, MKC_MM_SMEM>>>(
		dy, dx, dw, GLU ? dw + n * k : NULL, c ? dc : NULL, c == 1 ? n : 0, m, n, k, span);
	CHECK(cudaGetLastError());
	float *got = (float *)malloc(sizeof(float) * m * n);
	uint16_t *yb = (uint16_t *)malloc(2 * m * n);
	CHECK(cudaMemcpy(YH ? (void *)yb : (void *)got, dy, ysz, cudaMemcpyDeviceToHost));
	for (int64_t i = 0; YH && i < m * n; i++)
		got[i] = mkc_rt_bf16(yb[i]);
	char what[96];
	snprintf(what, sizeof what, "mkc_mma_tile (mfma) %s%s%s m %lld n %lld k %lld%s%s",
		 XH ? "bf16 x" : "f32 x", GLU ? " glu" : "", YH ? " bf16 y" : "", (long long)m,
		 (long long)n, (long long)k, c == 1 ? " +res" : c == 2 ? " +bias" : "",
		 whole ? " whole" : "");
	report(what, got, want, (int)(m * n), YH ? 4e-3 : 1e-5);
	cudaFree(dx);
	cudaFree(dy);
	cudaFree(dw);
	cudaFree(dc);
	free(xb);
	free(wb);
	free(xf);
	free(cf);
	free(want);
	free(got);
	free(yb);
}
#endif

int
main(void)
{
	gemv_case<2048, true, 0>(15);
	gemv_case<2048, true, 2>(64);
	gemv_case<8192, true, 0>(16);
	gemv_case<576, true, 0>(9);      /* fewer 16-byte chunks than threads */
	gemv_case<1024, false, 1>(33);
	gemv_case<256, false, 0>(1);
	gemv_case<128, true, 0>(40);     /* 16 chunks a row: most threads idle */
	gemv_case<4096, false, 0>(20);
	gemv_case<8192, false, 0>(5);
	gemv_case<2048, true, 2>(62, true);   /* NormGlu: 31 rows of each weight */
	gemv_case<2048, true, 2>(124, true);  /* 62 of each: MKC_GEMV_ROWS */
	gemv_case<8192, true, 0>(6, true);
	gemv_case<1024, false, 1>(2, true);
	attn_case<64, 4>(2, 1, 64, 16);       /* one position: 15 chunks empty */
	attn_case<64, 4>(2, 1000, 1024, 16);
	attn_case<64, 4>(4, 500, 512, 16);    /* 16 heads: two rows a warp in one block's merge */
	attn_case<128, 2>(2, 4097, 4100, 8);
#if MKC_WARP == 32   /* a head of 32 fills no 64-lane warp: the HIP target takes the portable body */
	attn_case<32, 4>(1, 77, 80, 3);
#endif
	cache_case(8, 1, 64, 80, 33, 64, 0);   /* a Llama key: every dimension rotated */
	cache_case(8, 1, 64, 80, 79, 64, 1);   /* interleaved pairs, the last position */
	cache_case(2, 3, 128, 40, 0, 32, 0);   /* three positions, 32 of 128 rotated */
	cache_case(8, 1, 64, 80, 5, 0, 0);     /* a value: copied */
	attn_case<64, 4>(2, 1000, 1024, 16, true);   /* bf16 caches (passes/kv.c) */
	attn_case<128, 2>(2, 4097, 4100, 8, true);
#if MKC_WARP == 32
	attn_case<32, 4>(1, 77, 80, 3, true);
#endif
	attn_case<64, 3>(3, 1000, 1024, 44);   /* SmolLM2-135M's: 44 chunks, 3 heads a key head */
	attn_case<64, 3>(3, 1, 64, 43);
	attn_case<128, 2>(1, 300, 320, 64);    /* the most chunks split_attn makes */
	/* a value row of more 16-byte pieces than a warp has lanes (float32 on
	 * 32 lanes: a lane holds two of a row's pieces), and of as many (bf16) */
	attn_case<256, 1>(2, 301, 320, 4);
	attn_case<256, 1>(2, 301, 320, 4, true);
	cache_case(8, 1, 64, 80, 33, 64, 0, true);
	cache_case(8, 1, 64, 80, 5, 0, 0, true);
#ifdef MKC_BODIES_HIP
	/* tokens and features past a tile's edge, a K of one step and of several */
	mfma_case<false, false, false>(77, 200, 192, 0);
	mfma_case<true, false, false>(128, 128, 64, 1);
	mfma_case<true, false, true>(300, 136, 128, 2);
	mfma_case<true, true, true>(130, 100, 128, 0);
	mfma_case<false, true, false>(5, 64, 256, 0);
	mfma_case<true, true, false>(40, 150, 64, 0, true);    /* three Glu pieces a block */
	mfma_case<false, false, false>(9, 300, 128, 1, true);
#endif
	printf("%s (%d-lane warps)\n", failures ? "bodies: FAILED" : "bodies: all match the float64 reference",
	       MKC_WARP);
	return failures != 0;
}
