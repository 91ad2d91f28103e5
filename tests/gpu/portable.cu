/*
 * portable.cu - the portable tile bodies of backends/c/ run on the GPU,
 * against the same bodies run on the host on the same data.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o portable tests/gpu/portable.cu && ./portable
 *
 * (tools/gpu_check.sh does this.) The bodies are plain C that every target
 * embeds; here MKC_BODY is __host__ __device__, so each is built twice
 * from one source. The host copy sees one lane and runs tile after tile,
 * as the C target does; the GPU copy runs as the CUDA target runs a task
 * (backends/cuda/exec.cuh): a block of MKC_THREADS lanes a tile, MKC_LANE
 * threadIdx.x of blockDim.x, every tile at once as the workers would.
 * The inputs live in managed memory, so both sides read the same bytes
 * through the same pointers; each side writes its own copy of every
 * output, poisoned first (every byte 0xff), so an element one side leaves
 * unwritten, or writes outside its box, differs from the other's.
 *
 * Compared bit for bit: moves, integer results, conversions, and float
 * results of one correctly rounded operation (+ - * /, sqrt, max, floor,
 * comparisons, Where: IEEE on both sides at nvcc's default precision).
 * Other float results within 1e-5 of the largest host value: the device's
 * expf, tanhf, erff, powf are not glibc's (a few ulp apart), nvcc
 * contracts a * b + c into one fma where gcc rounds twice, and some bodies
 * add in another order on the GPU (split-K's slices, the norms' block
 * sums). A bug that breaks both copies alike passes here: the host copies
 * are checked against references by tests/backends/test_bodies.c and
 * test_op_bodies.c. A line per case; exit 1 if any fails.
 */
#include <initializer_list>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what an emitted file defines before the bodies: the plan's largest
 * rank, then the runtime (MKC_THREADS, the block, from limits.h) */
#include "rt_stub.cuh"

/*
 * The bodies built for both sides. The device copy sees common.h's lanes
 * and helpers, as in an emitted .cu; the host copy sees what common.h
 * gives the C target: one lane, no barrier, a block sum of one value.
 * common.h's device helpers are reached through wrappers, since a
 * __host__ __device__ body may not call a __device__ function even on a
 * path the host never takes. ON_GPU(call, host): call on the device, host
 * on the host.
 */
#undef MKC_BODY
#define MKC_BODY MKC_HD
#ifdef __CUDA_ARCH__
#define ON_GPU(call, host) (call)
#else
#undef MKC_LANE
#undef MKC_NLANES
#undef MKC_LANES_SYNC
#define MKC_LANE 0
#define MKC_NLANES 1
#define MKC_LANES_SYNC() ((void)0)
#define ON_GPU(call, host) (host)
#endif

static MKC_HD inline float
lanes_block_sum(float v)
{
	return ON_GPU(mkc_rt_block_sum(v), v);
}

static MKC_HD inline float
lanes_warp_sum(float v)
{
	return ON_GPU(mkc_rt_warp_sum(v), v);
}

/* mkc_dot_rows's: it needs a warp, so no host copy of it runs */
static MKC_HD inline float
lanes_dot8_bf16(const float *x, const uint16_t *w)
{
	return ON_GPU(mkc_rt_dot8_bf16(x, w), ((void)x, (void)w, abort(), 0.0f));
}

static MKC_HD inline float
lanes_dot4(const float *x, const float *w)
{
	return ON_GPU(mkc_rt_dot4(x, w), ((void)x, (void)w, abort(), 0.0f));
}

#define mkc_rt_block_sum lanes_block_sum
#define mkc_rt_warp_sum lanes_warp_sum
#define mkc_rt_dot8_bf16 lanes_dot8_bf16
#define mkc_rt_dot4 lanes_dot4

#include "../../backends/c/data.h"
#include "../../backends/c/elementwise.h"
#include "../../backends/c/reduce.h"
#include "../../backends/c/cache.h"   /* before matmul.h, as the targets have them */
#include "../../backends/c/matmul.h"
#include "../../backends/c/attention.h"
#include "../../backends/c/gqa.h"
#include "../../backends/c/rows.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the float64 references are bodies.cu's */
#include "../test_data.h"
#pragma GCC diagnostic pop

#define TOL 1e-5
#define EXACT 0.0

/* ---- memory both sides see ---- */

enum { POOL_BYTES = 64 << 20 };
static char *pool;
static size_t pool_at;

/* n bytes of managed memory: one pointer for the host and the GPU; a case frees all with begin */
static void *
grab(size_t n)
{
	n = (n + 255) & ~(size_t)255;   /* 16-byte loads (mkc_dot_rows) want aligned rows */
	if (pool_at + n > POOL_BYTES) {
		fprintf(stderr, "portable: a case needs more than %d bytes\n", POOL_BYTES);
		exit(2);
	}
	void *p = pool + pool_at;
	pool_at += n;
	return p;
}

static void
begin(void)
{
	CHECK(cudaDeviceSynchronize());
	pool_at = 0;
}

template <class T>
static T *
put(std::initializer_list<T> v)
{
	T *p = (T *)grab(sizeof(T) * v.size());
	memcpy(p, v.begin(), sizeof(T) * v.size());
	return p;
}

/* n floats uniform in [lo, hi) */
static float *
rand_f(size_t n, float lo = -1, float hi = 1)
{
	float *p = (float *)grab(sizeof(float) * n);
	for (size_t i = 0; i < n; i++)
		p[i] = lo + (hi - lo) * 0.5f * (urand() + 1.0f);
	return p;
}

static uint16_t *
rand_bf16(size_t n)
{
	uint16_t *p = (uint16_t *)grab(2 * n);
	for (size_t i = 0; i < n; i++)
		p[i] = to_bf16(urand());
	return p;
}

static uint8_t *
rand_bytes(size_t n)
{
	uint8_t *p = (uint8_t *)grab(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(urand() * 127.0f + 128.0f);
	return p;
}

/* A dense tensor's dims and strides (r + 1 entries each, as the emitter declares them). */
typedef struct {
	int r;
	int64_t *d, *s, n;
} shape;

static shape
dense(std::initializer_list<int64_t> dims)
{
	shape t;
	t.r = (int)dims.size();
	t.d = (int64_t *)grab(sizeof(int64_t) * (t.r + 1));
	t.s = (int64_t *)grab(sizeof(int64_t) * (t.r + 1));
	memcpy(t.d, dims.begin(), sizeof(int64_t) * t.r);
	t.d[t.r] = 0;
	mkc_rt_strides(t.d, t.r, t.s);
	t.n = 1;
	for (int i = 0; i < t.r; i++)
		t.n *= t.d[i];
	return t;
}

/*
 * The tiles of y cut along axis at cuts (ascending, the last y.d[axis]),
 * as passes/tile.c cuts them: tile t is the box lo(t)..hi(t).
 */
typedef struct {
	int n;
	int64_t *l, *h;
	MKC_HD const int64_t *lo(int t) const { return l + t * MKC_RANK; }
	MKC_HD const int64_t *hi(int t) const { return h + t * MKC_RANK; }
} boxes;

static boxes
cut(const shape &y, int axis, std::initializer_list<int64_t> cuts)
{
	boxes b;
	b.n = (int)cuts.size();
	b.l = (int64_t *)grab(sizeof(int64_t) * MKC_RANK * b.n);
	b.h = (int64_t *)grab(sizeof(int64_t) * MKC_RANK * b.n);
	int t = 0;
	for (int64_t c : cuts) {
		for (int i = 0; i < y.r; i++) {
			b.l[t * MKC_RANK + i] = 0;
			b.h[t * MKC_RANK + i] = y.d[i];
		}
		b.l[t * MKC_RANK + axis] = t ? b.h[(t - 1) * MKC_RANK + axis] : 0;
		b.h[t * MKC_RANK + axis] = c;
		t++;
	}
	return b;
}

/* An output: the host copy's bytes (at[0]) and the GPU copy's (at[1]), both poisoned. */
typedef struct {
	void *at[2];
	size_t bytes;
} output;

static output
out(size_t bytes)
{
	output o;
	for (int k = 0; k < 2; k++) {
		o.at[k] = grab(bytes);
		memset(o.at[k], 0xff, bytes);
	}
	o.bytes = bytes;
	return o;
}

static output
out_f(size_t n)
{
	return out(sizeof(float) * n);
}

/* The copy of o this side writes (or reads, for a body that takes another's output). */
static MKC_HD inline void *
mine(const output &o)
{
	return ON_GPU(o.at[1], o.at[0]);
}

#define MINE_F(o) ((float *)mine(o))

/* ---- running and comparing ---- */

template <class F>
static __global__ void
tile_kernel(F f)
{
	f((int)blockIdx.x);
}

/*
 * A case's call of its body, f(t) for tile t: on the host tile after
 * tile; on the GPU a block of MKC_THREADS lanes a tile.
 */
template <class F>
static void
run(const F &f, int ntiles)
{
	for (int t = 0; t < ntiles; t++)
		f(t);
	tile_kernel<<<ntiles, MKC_THREADS>>>(f);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
}

static int failures;

static bool
poisoned(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xff)
			return false;
	return true;
}

/*
 * The largest |gpu - host| over n floats, NaN on one side counting as
 * infinite; *big the largest finite |host| (an empty chunk's maximum is
 * -inf: as the scale it would hide every error).
 */
static double
float_err(const float *host, const float *gpu, size_t n, double *big)
{
	double err = 0;
	for (size_t i = 0; i < n; i++) {
		if (!memcmp(host + i, gpu + i, 4))
			continue;
		err = isnan(host[i]) || isnan(gpu[i]) ? INFINITY : fmax(err, fabs(gpu[i] - host[i]));
	}
	for (size_t i = 0; i < n; i++)
		if (isfinite(host[i]))
			*big = fmax(*big, fabs(host[i]));
	return err;
}

/*
 * The case's outputs: tol EXACT, every byte the same; else float32 within
 * tol of the largest host value. A host copy left all poison fails too:
 * the case would compare nothing.
 */
static void
check(const char *what, std::initializer_list<output> ys, double tol)
{
	double err = 0, big = 0;
	size_t differ = 0;
	bool empty = false;
	for (const output &y : ys) {
		const uint8_t *h = (const uint8_t *)y.at[0], *g = (const uint8_t *)y.at[1];
		empty |= poisoned(h, y.bytes);
		if (tol == EXACT) {
			for (size_t i = 0; i < y.bytes; i++)
				differ += h[i] != g[i];
		} else {
			err = fmax(err, float_err((const float *)h, (const float *)g, y.bytes / 4, &big));
		}
	}
	const double rel = big > 0 ? err / big : err;
	const bool ok = !empty && (tol == EXACT ? differ == 0 : rel <= tol);
	if (empty)
		printf("%-60s FAIL  the host body wrote nothing\n", what);
	else if (tol == EXACT && differ)
		printf("%-60s FAIL  %zu bytes differ\n", what, differ);
	else if (tol == EXACT)
		printf("%-60s ok    bit for bit\n", what);
	else
		printf("%-60s %s  largest error %.2e of %.2e\n", what, ok ? "ok  " : "FAIL", rel, big);
	failures += !ok;
}

/* ---- data.h ---- */

struct copy_call {
	output y;
	const int64_t *ys;
	const void *x;
	int r, es, flat;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_copy(mine(y), ys, x, r, es, flat, b.lo(t), b.hi(t));
	}
};

/* every element size, tiles that are runs (a flat walk) and tiles that are not */
static void
copy_cases(void)
{
	for (int es = 1; es <= 8; es *= 2)
		for (int flat = 0; flat <= 1; flat++) {
			begin();
			shape y = dense({37, 29});
			copy_call f = {out(y.n * es), y.s, rand_bytes(y.n * es), 2, es, flat,
				       flat ? cut(y, 0, {10, 25, 37}) : cut(y, 1, {7, 29})};
			run(f, f.b.n);
			char what[64];
			snprintf(what, sizeof what, "mkc_copy [37, 29] es %d %s", es,
				 flat ? "flat, 3 runs" : "by box, 2 boxes");
			check(what, {f.y}, EXACT);
		}
}

struct transpose_call {
	output y;
	const int64_t *ys;
	const void *x;
	const int64_t *xs;
	const int *perm;
	int r, es;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_transpose(mine(y), ys, x, xs, perm, r, es, b.lo(t), b.hi(t));
	}
};

static void
transpose_case(int es)
{
	begin();
	shape x = dense({5, 7, 9, 11}), y = dense({9, 5, 11, 7});
	transpose_call f = {out(y.n * es), y.s, rand_bytes(x.n * es), x.s, put<int>({2, 0, 3, 1}),
			    4, es, cut(y, 1, {2, 5})};
	run(f, f.b.n);
	char what[64];
	snprintf(what, sizeof what, "mkc_transpose [5, 7, 9, 11] perm 2 0 3 1, es %d", es);
	check(what, {f.y}, EXACT);
}

struct concat_call {
	output y;
	const int64_t *ys;
	int n;
	const void *const *x;
	const int64_t *const *xd, *const *xs;
	int axis, r, es;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_concat(mine(y), ys, n, x, xd, xs, axis, r, es, b.lo(t), b.hi(t));
	}
};

/* three inputs along axis 1, tiles cut across the inputs' seams */
static void
concat_case(int es)
{
	begin();
	shape a = dense({4, 3, 50}), b = dense({4, 17, 50}), c = dense({4, 1, 50}),
	      y = dense({4, 21, 50});
	concat_call f = {out(y.n * es), y.s, 3,
			 put<const void *>({rand_bytes(a.n * es), rand_bytes(b.n * es),
					    rand_bytes(c.n * es)}),
			 put<const int64_t *>({a.d, b.d, c.d}), put<const int64_t *>({a.s, b.s, c.s}),
			 1, 3, es, cut(y, 1, {2, 10, 21})};
	run(f, f.b.n);
	char what[64];
	snprintf(what, sizeof what, "mkc_concat 3 + 17 + 1 on axis 1, es %d", es);
	check(what, {f.y}, EXACT);
}

struct slice_call {
	output y;
	const int64_t *ys;
	const void *x;
	const int64_t *xd, *xs, *start, *step;
	int r, es;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_slice(mine(y), ys, x, xd, xs, start, step, r, es, b.lo(t), b.hi(t));
	}
};

/* x [40, 60] sliced into y of dims yd */
static void
slice_case(std::initializer_list<int64_t> start, std::initializer_list<int64_t> step,
	   std::initializer_list<int64_t> yd, int es, const char *what)
{
	begin();
	shape x = dense({40, 60}), y = dense(yd);
	slice_call f = {out(y.n * es), y.s, rand_bytes(x.n * es), x.d, x.s, put(start), put(step),
			2, es, cut(y, 0, {5, y.d[0]})};
	run(f, f.b.n);
	check(what, {f.y}, EXACT);
}

struct gather_call {
	output y;
	const int64_t *ys;
	int r;
	const void *x;
	const int64_t *xd, *xs;
	int xr, es, wide;
	const void *ind;
	const int64_t *is;
	int ir, iw, axis;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		int64_t bad;
		(void)mkc_gather(mine(y), ys, r, x, xd, xs, xr, es, wide, ind, is, ir, iw, axis,
				 b.lo(t), b.hi(t), &bad);
	}
};

/* n indices into an axis of length len, negative ones among them, int64 or int32 (iw) */
static void *
indices(size_t n, int64_t len, int iw)
{
	void *p = grab(8 * n);
	for (size_t i = 0; i < n; i++) {
		const int64_t j = (int64_t)((urand() + 1.0f) * (float)len) - len;   /* -len .. len - 1 */
		if (iw == 4)
			((int32_t *)p)[i] = (int32_t)j;
		else
			((int64_t *)p)[i] = j;
	}
	return p;
}

/* an embedding: table [300, 64] (bf16 when wide, read as float32) by indices [3, 50] */
static void
gather_rows_case(int iw, int wide)
{
	begin();
	shape x = dense({300, 64}), ind = dense({3, 50}), y = dense({3, 50, 64});
	const int es = wide ? 2 : 4;
	gather_call f = {out_f(y.n), y.s, 3, wide ? (void *)rand_bf16(x.n) : (void *)rand_f(x.n),
			 x.d, x.s, 2, es, wide, indices(ind.n, 300, iw), ind.s, 2, iw, 0,
			 cut(y, 1, {20, 50})};
	run(f, f.b.n);
	char what[64];
	snprintf(what, sizeof what, "mkc_gather [300, 64]%s by int%d [3, 50]", wide ? " bf16" : "",
		 iw * 8);
	check(what, {f.y}, EXACT);
}

static void
gather_axis_case(void)
{
	begin();
	shape x = dense({8, 100, 16}), ind = dense({7}), y = dense({8, 7, 16});
	gather_call f = {out(8 * y.n), y.s, 3, rand_bytes(8 * x.n), x.d, x.s, 3, 8, 0,
			 indices(ind.n, 100, 8), ind.s, 1, 8, 1, cut(y, 0, {3, 8})};
	run(f, f.b.n);
	check("mkc_gather [8, 100, 16] axis 1 by int64 [7], es 8", {f.y}, EXACT);
}

struct split_call {
	int n;
	void *const *y;   /* the host copies' pointers, then the GPU copies' */
	const int64_t *const *yd, *const *ys;
	const void *x;
	const int64_t *xs;
	int axis, r, es;
	MKC_HD void operator()(int) const
	{
		mkc_split(n, y + ON_GPU(n, 0), yd, ys, x, xs, axis, r, es);
	}
};

static void
split_case(void)
{
	begin();
	shape x = dense({6, 90, 5}), a = dense({6, 20, 5}), b = dense({6, 45, 5}),
	      c = dense({6, 25, 5});
	output ya = out_f(a.n), yb = out_f(b.n), yc = out_f(c.n);
	split_call f = {3, put<void *>({ya.at[0], yb.at[0], yc.at[0], ya.at[1], yb.at[1], yc.at[1]}),
			put<const int64_t *>({a.d, b.d, c.d}), put<const int64_t *>({a.s, b.s, c.s}),
			rand_f(x.n), x.s, 1, 3, 4};
	run(f, 1);
	check("mkc_split [6, 90, 5] into 20 + 45 + 25 on axis 1", {ya, yb, yc}, EXACT);
}

struct range_call {
	output y;
	int t;
	const void *start, *delta;
	int64_t mid, n;   /* tile 0 is 0 .. mid, tile 1 mid .. n */
	MKC_HD void operator()(int k) const
	{
		mkc_range(mine(y), t, start, delta, k ? mid : 0, k ? n : mid);
	}
};

/* 1000 values; the float ones are exact (steps of 0.25), so they too match bit for bit */
template <class T>
static void
range_case(int t, T start, T delta, const char *what)
{
	begin();
	range_call f = {out(sizeof(T) * 1000), t, put<T>({start}), put<T>({delta}), 700, 1000};
	run(f, 2);
	check(what, {f.y}, EXACT);
}

struct strided_call {
	output y;
	const int64_t *ys;
	const void *x;
	int64_t base;
	const int64_t *xs;
	int r, es;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_strided(mine(y), ys, x, base, xs, r, es, b.lo(t), b.hi(t));
	}
};

/*
 * CacheAppend into a cache whose positions are axis 1 (not cache.h's
 * layout): 3 new positions of x [2, 3, 4, 32] at 20 of a cache [2, 48, 4,
 * 32], as emit_cache_append calls it; the rest of the cache stays poison.
 */
static void
strided_case(void)
{
	begin();
	shape x = dense({2, 3, 4, 32}), y = dense({2, 48, 4, 32});
	boxes b = cut(y, 2, {1, 4});
	for (int t = 0; t < b.n; t++) {
		b.l[t * MKC_RANK + 1] = 20;
		b.h[t * MKC_RANK + 1] = 23;
	}
	strided_call f = {out_f(y.n), y.s, rand_f(x.n), -20 * x.s[1], x.s, 4, 4, b};
	run(f, b.n);
	check("mkc_strided: append 3 positions, cache axis 1", {f.y}, EXACT);
}

static void
data_cases(void)
{
	copy_cases();
	transpose_case(2);
	transpose_case(8);
	concat_case(4);
	concat_case(8);
	slice_case({-30, 55}, {2, -3}, {15, 19}, 4, "mkc_slice [40, 60] from -30, 55 by 2, -3");
	slice_case({3, -100}, {1, 1}, {37, 60}, 8, "mkc_slice [40, 60] from 3, -100 (clamped), es 8");
	gather_rows_case(8, 0);
	gather_rows_case(4, 0);
	gather_rows_case(8, 1);
	gather_axis_case();
	split_case();
	range_case<int64_t>(MKC_T_INT64, 5, -3, "mkc_range int64 from 5 by -3");
	range_case<int32_t>(MKC_T_INT32, -400, 7, "mkc_range int32 from -400 by 7");
	range_case<float>(MKC_T_FLOAT, 0.5f, 0.25f, "mkc_range float from 0.5 by 0.25");
	range_case<double>(MKC_T_DOUBLE, -3.0, 0.125, "mkc_range double from -3 by 0.125");
	strided_case();
}

/* ---- elementwise.h ---- */

static int
tsize(int t)
{
	switch (t) {
	case MKC_T_UINT8: case MKC_T_INT8: case MKC_T_BOOL: return 1;
	case MKC_T_UINT16: case MKC_T_INT16: return 2;
	case MKC_T_FLOAT: case MKC_T_INT32: case MKC_T_UINT32: return 4;
	default: return 8;
	}
}

/* The operands' values: any (a float on a grid of 1/64, so that some are equal), positive, small integers, some NaN. */
enum { ANY, POS, SMALL, NANS };

static double
value(int t, int dom, size_t i)
{
	const float u = urand();
	if (t == MKC_T_BOOL)
		return u > 0;
	if (dom == SMALL)
		return (double)(int)(2.5f * u + 2.5f);   /* 0 .. 4 */
	if (t == MKC_T_FLOAT || t == MKC_T_DOUBLE) {
		if (dom == NANS && i % 7 == 3)
			return NAN;
		return dom == POS ? 1.25 + u : floor(128.0 * u) / 64.0;
	}
	const bool uns = t == MKC_T_UINT8 || t == MKC_T_UINT16 || t == MKC_T_UINT32 ||
			 t == MKC_T_UINT64;
	return (double)(int)(uns || dom == POS ? 50.0f * u + 50.0f : 50.0f * u);
}

#define EW_FILL(code, T) case code: ((T *)p)[i] = (T)v; break;

static void *
operand(int t, int dom, int64_t n)
{
	void *p = grab((size_t)(tsize(t) * n));
	for (int64_t i = 0; i < n; i++) {
		const double v = value(t, dom, (size_t)i);
		switch (t) {
		MKC_T_EACH(EW_FILL)
		default: break;
		}
	}
	return p;
}

struct ew_call {
	int op, isf;
	output y;
	int ty;
	const int64_t *ys;
	int r, nin;
	const void *const *x;
	const int *t;
	const int64_t *const *b;
	boxes bx;
	MKC_HD void operator()(int k) const
	{
		mkc_elementwise(op, isf, mine(y), ty, ys, r, nin, x, t, b, bx.lo(k), bx.hi(k));
	}
};

/*
 * A case: op on nin operands of types t (the form: isf), into type ty.
 * Flat: every operand [8, 125], tiles of rows (a flat walk); broadcast:
 * y [7, 9, 33] and operand k of dims bdims[k] (through mkc_rt_bmap's
 * strides), tiles cut along axis 1.
 */
typedef struct {
	const char *name;
	int op, isf, ty, nin, t[4];
	bool bcast;
	int dom;
	double tol;
} ew_case;

#define F MKC_T_FLOAT
#define D MKC_T_DOUBLE
#define I64 MKC_T_INT64
#define I32 MKC_T_INT32
#define I8 MKC_T_INT8
#define U8 MKC_T_UINT8
#define B MKC_T_BOOL
static const ew_case ew_cases[] = {
	{"neg", MKC_EW_NEG, 1, F, 1, {F}, false, ANY, EXACT},
	{"abs", MKC_EW_ABS, 1, F, 1, {F}, false, ANY, EXACT},
	{"sqrt", MKC_EW_SQRT, 1, F, 1, {F}, false, POS, EXACT},
	{"reciprocal", MKC_EW_RECIPROCAL, 1, F, 1, {F}, false, POS, EXACT},
	{"exp", MKC_EW_EXP, 1, F, 1, {F}, false, ANY, TOL},
	{"log", MKC_EW_LOG, 1, F, 1, {F}, false, POS, TOL},
	{"sin", MKC_EW_SIN, 1, F, 1, {F}, false, ANY, TOL},
	{"cos", MKC_EW_COS, 1, F, 1, {F}, false, ANY, TOL},
	{"tanh", MKC_EW_TANH, 1, F, 1, {F}, false, ANY, TOL},
	{"sigmoid", MKC_EW_SIGMOID, 1, F, 1, {F}, false, ANY, TOL},
	{"relu", MKC_EW_RELU, 1, F, 1, {F}, false, ANY, EXACT},
	{"erf", MKC_EW_ERF, 1, F, 1, {F}, false, ANY, TOL},
	{"floor", MKC_EW_FLOOR, 1, F, 1, {F}, false, ANY, EXACT},
	{"ceil", MKC_EW_CEIL, 1, F, 1, {F}, false, ANY, EXACT},
	{"silu", MKC_EW_SILU, 1, F, 1, {F}, false, ANY, TOL},
	{"isnan float -> bool", MKC_EW_ISNAN, 1, B, 1, {F}, false, NANS, EXACT},
	{"expand float [7, 1, 33]", MKC_EW_IDENTITY, 1, F, 1, {F}, true, ANY, EXACT},
	{"add float", MKC_EW_ADD, 1, F, 2, {F, F}, true, ANY, EXACT},
	{"sub float", MKC_EW_SUB, 1, F, 2, {F, F}, true, ANY, EXACT},
	{"mul float", MKC_EW_MUL, 1, F, 2, {F, F}, true, ANY, EXACT},
	{"div float", MKC_EW_DIV, 1, F, 2, {F, F}, true, POS, EXACT},
	{"pow float", MKC_EW_POW, 1, F, 2, {F, F}, true, POS, TOL},
	{"max float, 3 operands", MKC_EW_MAX, 1, F, 3, {F, F, F}, true, ANY, EXACT},
	{"min float, 4 operands", MKC_EW_MIN, 1, F, 4, {F, F, F, F}, false, ANY, EXACT},
	{"silu_mul", MKC_EW_SILU_MUL, 1, F, 2, {F, F}, true, ANY, TOL},
	{"equal float -> bool", MKC_EW_EQUAL, 1, B, 2, {F, F}, true, ANY, EXACT},
	{"less float -> bool", MKC_EW_LESS, 1, B, 2, {F, F}, true, ANY, EXACT},
	{"less_equal float -> bool", MKC_EW_LESS_EQUAL, 1, B, 2, {F, F}, false, ANY, EXACT},
	{"greater float -> bool", MKC_EW_GREATER, 1, B, 2, {F, F}, false, ANY, EXACT},
	{"greater_equal float -> bool", MKC_EW_GREATER_EQUAL, 1, B, 2, {F, F}, true, ANY, EXACT},
	{"where bool ? float : float", MKC_EW_WHERE, 1, F, 3, {B, F, F}, true, ANY, EXACT},
	{"add int64", MKC_EW_ADD, 0, I64, 2, {I64, I64}, true, ANY, EXACT},
	{"sub int32", MKC_EW_SUB, 0, I32, 2, {I32, I32}, false, ANY, EXACT},
	{"mul int64", MKC_EW_MUL, 0, I64, 2, {I64, I64}, true, ANY, EXACT},
	{"div int64 (zeros among the divisors)", MKC_EW_DIV, 0, I64, 2, {I64, I64}, true, ANY, EXACT},
	/* CUDA's pow(3.0, 1.0) is 2.9999999999999996, which mkc_ew_i truncates to 2 (H200, nvcc 13) */
	{"pow int64 (through double)", MKC_EW_POW, 0, I64, 2, {I64, I64}, false, SMALL, EXACT},
	{"max int32, 3 operands", MKC_EW_MAX, 0, I32, 3, {I32, I32, I32}, true, ANY, EXACT},
	{"min int64, 4 operands", MKC_EW_MIN, 0, I64, 4, {I64, I64, I64, I64}, true, ANY, EXACT},
	{"neg int8", MKC_EW_NEG, 0, I8, 1, {I8}, false, ANY, EXACT},
	{"abs int32", MKC_EW_ABS, 0, I32, 1, {I32}, false, ANY, EXACT},
	{"relu int64", MKC_EW_RELU, 0, I64, 1, {I64}, false, ANY, EXACT},
	{"isnan int64 -> bool", MKC_EW_ISNAN, 0, B, 1, {I64}, false, ANY, EXACT},
	{"equal int64 -> bool", MKC_EW_EQUAL, 0, B, 2, {I64, I64}, true, SMALL, EXACT},
	{"less int32 -> bool", MKC_EW_LESS, 0, B, 2, {I32, I32}, false, ANY, EXACT},
	{"and bool", MKC_EW_AND, 0, B, 2, {B, B}, true, ANY, EXACT},
	{"or bool", MKC_EW_OR, 0, B, 2, {B, B}, false, ANY, EXACT},
	{"not bool", MKC_EW_NOT, 0, B, 1, {B}, false, ANY, EXACT},
	{"where bool ? int64 : int64", MKC_EW_WHERE, 0, I64, 3, {B, I64, I64}, true, ANY, EXACT},
	{"cast float -> int32", MKC_EW_IDENTITY, 1, I32, 1, {F}, false, ANY, EXACT},
	{"cast float -> uint8", MKC_EW_IDENTITY, 1, U8, 1, {F}, false, POS, EXACT},
	{"cast float -> bool", MKC_EW_NONZERO, 1, B, 1, {F}, false, ANY, EXACT},
	{"cast float -> double", MKC_EW_IDENTITY, 1, D, 1, {F}, false, ANY, EXACT},
	{"cast double -> float", MKC_EW_IDENTITY, 1, F, 1, {D}, false, ANY, EXACT},
	{"cast int64 -> float", MKC_EW_IDENTITY, 0, F, 1, {I64}, false, ANY, EXACT},
	{"cast int32 -> double", MKC_EW_IDENTITY, 0, D, 1, {I32}, false, ANY, EXACT},
	{"cast bool -> float", MKC_EW_IDENTITY, 0, F, 1, {B}, false, ANY, EXACT},
	{"cast int64 -> int8", MKC_EW_IDENTITY, 0, I8, 1, {I64}, false, ANY, EXACT},
	{"cast uint8 -> int64", MKC_EW_IDENTITY, 0, I64, 1, {U8}, true, ANY, EXACT},
	{"cast int32 -> bool", MKC_EW_NONZERO, 0, B, 1, {I32}, false, ANY, EXACT},
};
#undef F
#undef D
#undef I64
#undef I32
#undef I8
#undef U8
#undef B

static void
ew_run(const ew_case *c)
{
	begin();
	shape y = c->bcast ? dense({7, 9, 33}) : dense({8, 125});
	shape bd[4] = {dense({7, 1, 33}), dense({9, 1}), dense({7, 9, 33}), dense({33})};
	const void **x = (const void **)grab(sizeof(void *) * c->nin);
	const int64_t **b = (const int64_t **)grab(sizeof(int64_t *) * c->nin);
	for (int k = 0; k < c->nin; k++) {
		const shape &s = c->bcast ? bd[k] : y;
		x[k] = operand(c->t[k], c->dom, s.n);
		b[k] = (int64_t *)grab(sizeof(int64_t) * (y.r + 1));
		mkc_rt_bmap(s.d, s.s, s.r, y.r, (int64_t *)b[k]);
	}
	int *t = (int *)grab(sizeof(int) * c->nin);
	memcpy(t, c->t, sizeof(int) * c->nin);
	ew_call f = {c->op, c->isf, out((size_t)(tsize(c->ty) * y.n)), c->ty, y.s, y.r, c->nin, x, t,
		     c->bcast ? b : NULL, c->bcast ? cut(y, 1, {4, 9}) : cut(y, 0, {3, 8})};
	run(f, f.bx.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_elementwise %s, %s", c->name,
		 c->bcast ? "broadcast [7, 9, 33]" : "flat [8, 125]");
	check(what, {f.y}, c->tol);
}

/* ---- reduce.h ---- */

struct reduce_call {
	int op;
	output y;
	const float *x;
	const int64_t *xd, *xs;
	int r;
	const int *red;
	MKC_HD void operator()(int) const
	{
		mkc_reduce(op, MINE_F(y), x, xd, xs, r, red);
	}
};

/* x [6, 50, 7] over the axes red marks: one whole tile */
static void
reduce_case(int op, std::initializer_list<int> red, int64_t outputs, const char *what)
{
	begin();
	shape x = dense({6, 50, 7});
	reduce_call f = {op, out_f(outputs), rand_f(x.n), x.d, x.s, 3, put(red)};
	run(f, 1);
	check(what, {f.y}, TOL);
}

/* ---- matmul.h ---- */

/* Which body a product case calls (the GPU's choice; the host calls mkc_matmul for MM_ROWS). */
enum { MM_PLAIN, MM_SPLIT_K, MM_ROWS };

struct mm_call {
	int how;
	output y;
	const int64_t *ys;
	int r;
	boxes bx;
	const float *a;
	const int64_t *as;
	int64_t ak;
	const float *bf;
	const uint16_t *bh;
	const int64_t *bs;
	int64_t bk, K, bs0;
	mkc_mm_epi ep;
	MKC_HD void operator()(int t) const
	{
		float *py = MINE_F(y);
#ifdef __CUDA_ARCH__
		__shared__ float part[MKC_THREADS];   /* emit_matmul_split_k's */
		if (how == MM_ROWS) {
			mkc_dot_rows(py, ys, r, bx.lo(t), bx.hi(t), a, as, bf, bh, bs0, K, 32, &ep);
			return;
		}
#else
		float part[1];   /* one lane */
#endif
		if (how == MM_SPLIT_K)
			mkc_matmul_split_k(py, ys, r, bx.lo(t), bx.hi(t), a, as, ak, bf, bh, bs, bk, K,
					   part);
		else
			mkc_matmul(py, ys, r, bx.lo(t), bx.hi(t), a, as, ak, bf, bh, bs, bk, K, &ep);
	}
};

/*
 * a [.., M, K] by b [.., K, N] (stored [.., N, K] when tb), a float32 or
 * bf16 (bh) weight, resolved as emit_matmul resolves them: broadcast
 * strides over y's coordinates and the strides of the K axis.
 */
static mm_call
mm_resolve(int how, const shape &a, const shape &b, bool tb, bool bh, const shape &y)
{
	mm_call f;
	const int r = y.r;
	int64_t *as = (int64_t *)grab(sizeof(int64_t) * (r + 1)),
		*bs = (int64_t *)grab(sizeof(int64_t) * (r + 1));
	mkc_rt_bmap(a.d, a.s, a.r - 2, r - 2, as);
	mkc_rt_bmap(b.d, b.s, b.r - 2, r - 2, bs);
	as[r - 2] = a.s[a.r - 2];
	as[r - 1] = 0;
	bs[r - 2] = 0;
	bs[r - 1] = b.s[tb ? b.r - 2 : b.r - 1];
	f.how = how;
	f.y = out_f(y.n);
	f.ys = y.s;
	f.r = r;
	f.a = rand_f(a.n);
	f.as = as;
	f.ak = a.s[a.r - 1];
	f.bf = bh ? NULL : rand_f(b.n);
	f.bh = bh ? rand_bf16(b.n) : NULL;
	f.bs = bs;
	f.bk = b.s[tb ? b.r - 1 : b.r - 2];
	f.K = a.d[a.r - 1];
	f.bs0 = b.s[0];
	f.ep = {0, 1.0f, 0.0f, NULL, NULL};
	return f;
}

static void
mm_check(mm_call &f, const boxes &bx, const char *what)
{
	f.bx = bx;
	run(f, bx.n);
	check(what, {f.y}, TOL);
}

static void
matmul_cases(void)
{
	begin();
	shape a = dense({2, 1, 33, 70}), b = dense({3, 70, 45}), y = dense({2, 3, 33, 45});
	mm_call f = mm_resolve(MM_PLAIN, a, b, false, false, y);
	mm_check(f, cut(y, 2, {10, 33}), "mkc_matmul [2, 1, 33, 70] x [3, 70, 45]");

	begin();
	a = dense({5, 256}), b = dense({300, 256}), y = dense({5, 300});
	f = mm_resolve(MM_PLAIN, a, b, true, true, y);
	mm_check(f, cut(y, 1, {128, 300}), "mkc_matmul [5, 256] x bf16 [300, 256]^T");

	/* split-K: 256 outputs a tile (one slice), then 44 (5 slices) */
	begin();
	a = dense({1, 1000}), b = dense({1000, 300}), y = dense({1, 300});
	f = mm_resolve(MM_SPLIT_K, a, b, false, false, y);
	mm_check(f, cut(y, 1, {256, 300}), "mkc_matmul_split_k [1, 1000] x [1000, 300]");

	/* 3 outputs a tile: 85 slices of 11 or 12; the last tile 1 output, 256 slices */
	begin();
	a = dense({1, 1000}), b = dense({1000, 10}), y = dense({1, 10});
	f = mm_resolve(MM_SPLIT_K, a, b, false, true, y);
	mm_check(f, cut(y, 1, {3, 6, 9, 10}), "mkc_matmul_split_k [1, 1000] x bf16 [1000, 10]");

	/* 4 rows of 32 outputs a tile: 2 slices */
	begin();
	a = dense({4, 500}), b = dense({500, 96}), y = dense({4, 96});
	f = mm_resolve(MM_SPLIT_K, a, b, false, false, y);
	mm_check(f, cut(y, 1, {32, 64, 96}), "mkc_matmul_split_k [4, 500] x [500, 96]");

	/* Gemm transB on the CUDA target: a warp an output; the host's is the C target's mkc_matmul */
	begin();
	a = dense({3, 512}), b = dense({200, 512}), y = dense({3, 200});
	f = mm_resolve(MM_ROWS, a, b, true, true, y);
	shape c = dense({200});
	int64_t *cs = (int64_t *)grab(sizeof(int64_t) * 3);
	mkc_rt_bmap(c.d, c.s, 1, 2, cs);
	f.ep = {1, 0.5f, 2.0f, rand_f(c.n), cs};
	mm_check(f, cut(y, 1, {64, 128, 200}),
		 "mkc_dot_rows (host: mkc_matmul) bf16 [200, 512]^T, C [200]");

	begin();
	a = dense({2, 260}), b = dense({70, 260}), y = dense({2, 70});
	f = mm_resolve(MM_ROWS, a, b, true, false, y);
	mm_check(f, cut(y, 0, {1, 2}), "mkc_dot_rows (host: mkc_matmul) [70, 260]^T");
}

/* Gemm with transA (a stored [K, M]), alpha, beta and C [M, N] or [N], as emit_gemm resolves it. */
static void
gemm_case(bool full_c, bool tb)
{
	begin();
	const int64_t M = 20, K = 90, N = 70;
	shape a = dense({K, M}), b = tb ? dense({N, K}) : dense({K, N}), y = dense({M, N});
	shape c = full_c ? dense({M, N}) : dense({N});
	int64_t *cs = (int64_t *)grab(sizeof(int64_t) * 3);
	mkc_rt_bmap(c.d, c.s, c.r, 2, cs);
	mm_call f;
	f.how = MM_PLAIN;
	f.y = out_f(y.n);
	f.ys = y.s;
	f.r = 2;
	f.a = rand_f(a.n);
	f.as = put<int64_t>({a.s[1], 0, 0});
	f.ak = a.s[0];
	f.bf = rand_f(b.n);
	f.bh = NULL;
	f.bs = put<int64_t>({0, b.s[tb ? 0 : 1], 0});
	f.bk = b.s[tb ? 1 : 0];
	f.K = K;
	f.bs0 = 0;
	f.ep = {1, 0.5f, 2.0f, rand_f(c.n), cs};
	char what[96];
	snprintf(what, sizeof what, "mkc_matmul Gemm transA%s, 0.5 * AB + 2 * C [%s]",
		 tb ? " transB" : "", full_c ? "20, 70" : "70");
	mm_check(f, cut(y, 1, {32, 70}), what);
}

struct norm_gemm_call {
	output y;
	const int64_t *ys;
	boxes bx;
	const float *x;
	int64_t K;
	float eps;
	const float *sf;
	const uint16_t *sh;
	const float *wf;
	const uint16_t *wh;
	int64_t ws;
	const float *uf;
	const uint16_t *uh;
	int64_t us;
	mkc_mm_epi ep;
	MKC_HD void operator()(int t) const
	{
		mkc_norm_gemm(MINE_F(y), ys, bx.lo(t), bx.hi(t), x, K, eps, sf, sh, wf, wh, ws, uf, uh,
			      us, &ep);
	}
};

/*
 * NormGemm of x [1, 300] by W [N, 300] (+ C [N]), or NormGlu with U too;
 * scale and weights bf16 when bf, as emit_norm_gemm calls it when the
 * matvec body does not fit.
 */
static void
norm_gemm_case(bool glu, bool bf)
{
	begin();
	const int64_t K = 300, N = 130;
	shape y = dense({1, N});
	norm_gemm_call f;
	f.y = out_f(y.n);
	f.ys = y.s;
	f.bx = cut(y, 1, {64, N});
	f.x = rand_f(K, -3, 3);
	f.K = K;
	f.eps = 1e-5f;
	f.sf = bf ? NULL : rand_f(K, 0.5f, 1.5f);
	f.sh = bf ? rand_bf16(K) : NULL;
	f.wf = bf ? NULL : rand_f(N * K);
	f.wh = bf ? rand_bf16(N * K) : NULL;
	f.ws = K;
	f.uf = glu && !bf ? rand_f(N * K) : NULL;
	f.uh = glu && bf ? rand_bf16(N * K) : NULL;
	f.us = glu ? K : 0;
	int64_t *cs = put<int64_t>({0, 1, 0});
	f.ep = glu ? mkc_mm_epi{1, 1.0f, 1.0f, NULL, NULL} : mkc_mm_epi{1, 1.0f, 1.0f, rand_f(N), cs};
	run(f, f.bx.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_norm_gemm %s [1, 300] x %s[130, 300]", glu ? "NormGlu" : "NormGemm + C",
		 bf ? "bf16 " : "");
	check(what, {f.y}, TOL);
}

struct head_proj_call {
	output y;
	int64_t cap, pos, per;
	int pairs;
	const float *x;
	int64_t K;
	const float *sf;
	const uint16_t *wh;
	const float *cos, *sin;
	MKC_HD void operator()(int t) const
	{
		/* tile t: head t / per, its slice t % per of the head's units
		 * (passes/tile.c's tile_head_proj), as emit_head_proj calls it */
		const int64_t D = 64, h = t / per, j = t % per, units = pairs ? D / 2 : D;
		const int64_t u0 = units * j / per, n = units * (j + 1) / per - u0;
		const int64_t d0 = pairs == 2 ? 2 * u0 : u0, step = pairs == 2 ? 2 : 1;
		mkc_head_proj(MINE_F(y), NULL, (h * cap + pos) * D + d0, n, pairs, D, x, K, 1e-5f, 1.0f,
			      sf, NULL, NULL, wh, K, h * D + d0, cos + d0 / step, sin + d0 / step);
	}
};

/*
 * HeadProj of x [1, 300] by bf16 W [3 * 64, 300] into a cache [1, 3, 20,
 * 64] at position 7, three tiles a head: rows as they are (pairs 0),
 * rotated halves (1) or interleaved pairs (2).
 */
static void
head_proj_case(int pairs)
{
	begin();
	const int64_t H = 3, D = 64, K = 300, cap = 20;
	head_proj_call f = {out_f(H * cap * D), cap, 7, 3, pairs, rand_f(K, -3, 3), K,
			    rand_f(K, 0.5f, 1.5f), rand_bf16(H * D * K), rand_f(D / 2), rand_f(D / 2)};
	run(f, (int)(H * f.per));
	static const char *const forms[3] = {"rows", "halves rotated", "pairs rotated"};
	char what[96];
	snprintf(what, sizeof what, "mkc_head_proj [1, 300] x bf16 [192, 300], %s", forms[pairs]);
	check(what, {f.y}, TOL);
}

/* ---- attention.h ---- */

/* q [B, Hq, Sq, D], and keys and values [B, Hk, cap, D] of which L are used: flash decoding's two bodies */
struct part_call {
	const float *q;
	const int64_t *qs;
	const float *k;
	const uint16_t *kh;
	const int64_t *ks;
	const float *v;
	const uint16_t *vh;
	output part;
	const int64_t *ps;
	int64_t B, Sq, D, L, C, G;
	const int64_t *rows;   /* tile t is rows rows[t] .. rows[t + 1] */
	float scale;
	MKC_HD void operator()(int t) const
	{
		mkc_attn_part_c(q, qs, k, kh, ks, v, vh, ks, MINE_F(part), ps, B, Sq, D, L, C, G,
				rows[t], rows[t + 1], scale);
	}
};

struct merge_call {
	output part;   /* read: each side merges its own parts */
	const int64_t *ps;
	output y;
	const int64_t *ys;
	int64_t B, Sq, D, C, G;
	const int64_t *heads;   /* tile t is query heads heads[t] .. heads[t + 1] */
	MKC_HD void operator()(int t) const
	{
		mkc_attn_merge_c(MINE_F(part), ps, MINE_F(y), ys, B, Sq, D, C, G, heads[t],
				 heads[t + 1]);
	}
};

/* bf: the keys and values in bf16 (passes/kv.c) */
static void
part_merge_case(int64_t L, int64_t C, bool bf = false)
{
	begin();
	const int64_t B = 2, Hk = 2, G = 4, Sq = 3, D = 24, cap = 40;
	shape q = dense({B, Hk * G, Sq, D}), kv = dense({B, Hk, cap, D});
	shape part = dense({B, Hk * C, G * Sq, D + 2});
	part_call p = {rand_f(q.n), q.s, bf ? NULL : rand_f(kv.n), bf ? rand_bf16(kv.n) : NULL, kv.s,
		       bf ? NULL : rand_f(kv.n), bf ? rand_bf16(kv.n) : NULL,
		       out_f(part.n), part.s, B, Sq, D, L, C, G,
		       put<int64_t>({0, 3, Hk * C - 3, Hk * C}), 1.0f / sqrtf((float)D)};
	run(p, 3);
	merge_call m = {p.part, part.s, out_f(q.n), q.s, B, Sq, D, C, G,
			put<int64_t>({0, 3, Hk * G})};
	run(m, 2);
	char what[96];
	snprintf(what, sizeof what, "mkc_attn_part_c, L %lld in %lld chunks%s", (long long)L,
		 (long long)C, bf ? ", bf16 caches" : "");
	check(what, {p.part}, TOL);
	snprintf(what, sizeof what, "mkc_attn_merge_c of those");
	check(what, {m.y}, TOL);
}

struct attention_call {
	output y;
	const int64_t *ys;
	const float *q;
	const int64_t *qs;
	const float *k;
	const int64_t *ks;
	const float *v;
	const int64_t *vs;
	const float *pk;
	const int64_t *pks;
	const float *pv;
	const int64_t *pvs;
	const float *mf;
	const uint8_t *mb;
	const int64_t *ms;
	int64_t B, Hq, Sq, D, Hk, P, Sn, Dv;
	const int64_t *heads;
	float scale, softcap;
	output y1, y2;   /* bytes 0: not wanted */
	const int64_t *y1s, *y2s;
	int64_t y1n, y2n;
	MKC_HD void operator()(int t) const
	{
		mkc_attention(MINE_F(y), ys, q, qs, k, ks, v, vs, pk, pks, pv, pvs, mf, mb, ms, B, Hq,
			      Sq, D, Hk, P, Sn, Dv, heads[t], heads[t + 1], scale, softcap,
			      y1.bytes ? MINE_F(y1) : NULL, y1s, y1n, y2.bytes ? MINE_F(y2) : NULL,
			      y2s, y2n);
	}
};

/*
 * Attention's general form: q [2, 6, 3, 16] over P past and 3 new
 * positions of 2 key heads, values of 20; with past, a float mask [3, L]
 * (broadcast), a soft cap and the present outputs, one tile (tile.c does
 * not cut a node with presents); without, a bool mask [2, 1, 3, L] that
 * leaves one query row nothing (its output 0), tiles by heads.
 */
static void
attention_case(bool past)
{
	begin();
	const int64_t B = 2, Hq = 6, Sq = 3, D = 16, Hk = 2, Sn = 3, Dv = 20, P = past ? 9 : 0;
	const int64_t L = P + Sn;
	shape q = dense({B, Hq, Sq, D}), k = dense({B, Hk, Sn, D}), v = dense({B, Hk, Sn, Dv});
	shape pk = dense({B, Hk, P, D}), pv = dense({B, Hk, P, Dv}), y = dense({B, Hq, Sq, Dv});
	shape y1 = dense({B, Hk, L, D}), y2 = dense({B, Hk, L, Dv});
	shape mask = past ? dense({Sq, L}) : dense({B, 1, Sq, L});
	attention_call f;
	f.y = out_f(y.n);
	f.ys = y.s;
	f.q = rand_f(q.n, -2, 2);
	f.qs = q.s;
	f.k = rand_f(k.n, -2, 2);
	f.ks = k.s;
	f.v = rand_f(v.n);
	f.vs = v.s;
	f.pk = past ? rand_f(pk.n, -2, 2) : NULL;
	f.pks = pk.s;
	f.pv = past ? rand_f(pv.n) : NULL;
	f.pvs = pv.s;
	f.mf = past ? rand_f(mask.n, -3, 0) : NULL;
	uint8_t *mb = NULL;
	if (!past) {
		mb = (uint8_t *)grab((size_t)mask.n);
		for (int64_t i = 0; i < mask.n; i++)
			mb[i] = i / L == 4 ? 0 : urand() > -0.4f;   /* batch 1, row 1: all masked */
	}
	f.mb = mb;
	int64_t *ms = (int64_t *)grab(sizeof(int64_t) * 5);
	mkc_rt_bmap(mask.d, mask.s, mask.r, 4, ms);
	f.ms = ms;
	f.B = B, f.Hq = Hq, f.Sq = Sq, f.D = D, f.Hk = Hk, f.P = P, f.Sn = Sn, f.Dv = Dv;
	f.heads = past ? put<int64_t>({0, Hq}) : put<int64_t>({0, 1, 4, Hq});
	f.scale = 0.25f;
	f.softcap = past ? 1.5f : 0.0f;
	f.y1 = past ? out_f(y1.n) : output{{NULL, NULL}, 0};
	f.y2 = past ? out_f(y2.n) : output{{NULL, NULL}, 0};
	f.y1s = y1.s, f.y2s = y2.s, f.y1n = D, f.y2n = Dv;
	run(f, past ? 1 : 3);
	if (past) {
		check("mkc_attention, past 9 + 3, float mask, soft cap", {f.y}, TOL);
		check("mkc_attention's present keys and values", {f.y1, f.y2}, EXACT);
	} else {
		check("mkc_attention, bool mask (a row all masked), 3 tiles", {f.y}, TOL);
	}
}

/* ---- gqa.h ---- */

struct gqa_call {
	mkc_gqa_args a;
	output y, y1, y2;
	MKC_HD void operator()(int) const
	{
		mkc_gqa_args m = a;
		m.y = MINE_F(y);
		m.pk_out = MINE_F(y1);
		m.pv_out = MINE_F(y2);
		float qr[64];   /* the emitter's float qr[head size], the lane's own */
		int64_t bad;
		(void)mkc_gqa(&m, qr, &bad);
	}
};

/*
 * GroupQueryAttention: 3 new tokens of 8 query and 2 key heads of 32 after
 * P past positions, rotated (halves or pairs, R 32 or the first 16) or
 * not, soft-capped; one whole tile, as the emitter makes it.
 */
static void
gqa_case(int64_t P, int64_t R, int inter, float softcap)
{
	begin();
	const int64_t B = 2, S = 3, Hq = 8, Hk = 2, D = 32, L = P + S, npos = 16;
	shape q = dense({B, S, Hq * D}), k = dense({B, S, Hk * D}), y = dense({B, S, Hq * D});
	shape past = dense({B, Hk, P, D}), pres = dense({B, Hk, L, D});
	mkc_gqa_args a;
	a.ys = y.s;
	a.pks_out = a.pvs_out = pres.s;
	a.q = rand_f(q.n, -2, 2), a.qs = q.s;
	a.k = rand_f(k.n, -2, 2), a.ks = k.s;
	a.v = rand_f(k.n), a.vs = k.s;
	a.pk = P ? rand_f(past.n, -2, 2) : NULL, a.pks = past.s;
	a.pv = P ? rand_f(past.n) : NULL, a.pvs = past.s;
	int32_t *seqlens = (int32_t *)grab(sizeof(int32_t) * B);
	for (int64_t b = 0; b < B; b++)
		seqlens[b] = (int32_t)(L - 1);   /* the new tokens at P .. P + S - 1 */
	a.seqlens_k = seqlens;
	a.cos = R ? rand_f(npos * (R / 2)) : NULL, a.cs = R / 2;
	a.sin = R ? rand_f(npos * (R / 2)) : NULL, a.ss = R / 2;
	a.npos = R ? npos : 0;
	a.B = B, a.S = S, a.Hq = Hq, a.Hk = Hk, a.D = D, a.P = P, a.R = R;
	a.inter = inter;
	a.scale = 1.0f / sqrtf((float)D), a.softcap = softcap;
	gqa_call f = {a, out_f(y.n), out_f(pres.n), out_f(pres.n)};
	run(f, 1);
	char what[96];
	snprintf(what, sizeof what, "mkc_gqa past %lld, R %lld%s%s", (long long)P, (long long)R,
		 inter ? " pairs" : "", softcap > 0 ? ", soft cap" : "");
	check(what, {f.y, f.y1, f.y2}, TOL);
}

/* ---- cache.h ---- */

struct rotary_call {
	output y;
	const float *x;
	int64_t B, H, S, D, sb, sh, ss;
	const float *cos, *sin;
	int64_t cb, cs;
	const int64_t *pos;
	int64_t pb, ps, padd, R;
	int inter;
	MKC_HD void operator()(int) const
	{
		mkc_rotary(MINE_F(y), x, B, H, S, D, sb, sh, ss, cos, sin, cb, cs, pos, pb, ps, padd, R,
			   inter);
	}
};

/*
 * RotaryEmbedding of x [2, 3, 5, 32], the first R dimensions, as
 * emit_rotary calls it: position_ids [B, S] (how 1), one first position
 * (how 2), or none (how 0: the cos/sin rows are the positions).
 */
static void
rotary_case(int64_t R, int inter, int how)
{
	begin();
	const int64_t B = 2, H = 3, S = 5, D = 32, npos = 12, half = R / 2;
	shape x = dense({B, H, S, D}), cache = how ? dense({npos, half}) : dense({B, S, half});
	int64_t *pos = NULL;
	if (how == 1) {
		pos = (int64_t *)grab(sizeof(int64_t) * B * S);
		for (int64_t i = 0; i < B * S; i++)
			pos[i] = (i * 5 + 3) % npos;
	} else if (how == 2) {
		pos = put<int64_t>({4});
	}
	rotary_call f = {out_f(x.n), rand_f(x.n), B, H, S, D, x.s[0], x.s[1], x.s[2],
			 rand_f(cache.n), rand_f(cache.n), cache.s[0], how ? 0 : cache.s[1], pos,
			 how == 1 ? S : 0, how == 1 ? 1 : 0, how == 2, R, inter};
	run(f, 1);
	static const char *const hows[3] = {"no positions", "position_ids [2, 5]", "first position 4"};
	char what[96];
	snprintf(what, sizeof what, "mkc_rotary [2, 3, 5, 32] R %lld%s, %s", (long long)R,
		 inter ? " pairs" : "", hows[how]);
	check(what, {f.y}, TOL);
}

struct append_call {
	output y;
	const float *x;
	int64_t B, H, S, D, cap, pos;
	const float *cos, *sin;
	int64_t cs_b, cs_s, R;
	int inter;
	MKC_HD void operator()(int) const
	{
		mkc_cache_append(MINE_F(y), NULL, x, B, H, S, D, cap, pos, cos, sin, cs_b, cs_s, R,
				 inter);
	}
};

/* two batches (bodies.cu checks one against float64), rotated per batch and position */
static void
append_case(void)
{
	begin();
	const int64_t B = 2, H = 4, S = 3, D = 64, cap = 50, R = 64;
	shape x = dense({B, H, S, D});
	append_call f = {out_f(B * H * cap * D), rand_f(x.n), B, H, S, D, cap, 17,
			 rand_f(B * S * R / 2), rand_f(B * S * R / 2), S * R / 2, R / 2, R, 0};
	run(f, 1);
	check("mkc_cache_append B 2, 3 positions at 17, R 64", {f.y}, TOL);
}

/* ---- rows.h ---- */

struct softmax_call {
	output y;
	const float *x;
	const int64_t *d, *s;
	int r, axis, one_axis;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_softmax(MINE_F(y), x, d, s, r, axis, one_axis, b.lo(t), b.hi(t));
	}
};

static void
softmax_case(int axis, int one_axis)
{
	begin();
	shape x = dense({40, 7, 50});
	softmax_call f = {out_f(x.n), rand_f(x.n, -4, 4), x.d, x.s, 3, axis, one_axis,
			  cut(x, 0, {15, 40})};
	run(f, f.b.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_softmax [40, 7, 50] %s %d", one_axis ? "axis" : "axes from",
		 axis);
	check(what, {f.y}, TOL);
}

struct norm_call {
	output y;
	const float *x;
	const int64_t *d, *s;
	int r, axis;
	boxes b;
	const float *wf;
	const uint16_t *wb;
	const float *bf;
	const uint16_t *bb;
	int64_t wn;
	float eps;
	int layer;
	output y1, y2;
	const int64_t *s1, *s2;
	MKC_HD void operator()(int t) const
	{
		mkc_norm(MINE_F(y), x, d, s, r, axis, b.lo(t), b.hi(t), wf, wb, bf, bb, wn, eps, layer,
			 MINE_F(y1), s1, MINE_F(y2), s2);
	}
};

/*
 * RMSNormalization (layer 0, float32 scale) or LayerNormalization (bf16
 * scale and bias) of x [3, 5, 700] over the axes from axis, with the
 * per-row outputs; rows of 700 or 3500, every lane on every row.
 */
static void
norm_case(int layer, int axis)
{
	begin();
	shape x = dense({3, 5, 700});
	shape rows = axis == 2 ? dense({3, 5, 1}) : dense({3, 1, 1});
	const int64_t wn = axis == 2 ? 700 : 3500;
	norm_call f = {out_f(x.n), rand_f(x.n, -2, 3), x.d, x.s, 3, axis, cut(x, 0, {1, 3}),
		       layer ? NULL : rand_f(wn, 0.5f, 1.5f), layer ? rand_bf16(wn) : NULL, NULL,
		       layer ? rand_bf16(wn) : NULL, wn, 1e-5f, layer, out_f(rows.n), out_f(rows.n),
		       rows.s, rows.s};
	run(f, f.b.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_norm %s over axes from %d, per-row outputs",
		 layer ? "LayerNorm bf16 scale, bias" : "RMSNorm", axis);
	check(what, {f.y, f.y1, f.y2}, TOL);
}

struct skip_norm_call {
	output y;
	const float *a, *b;
	const int64_t *d, *s;
	int r, axis;
	boxes bx;
	const float *gf;
	const uint16_t *gb;
	const float *bf;
	const uint16_t *bb;
	float eps;
	output sum, y1, y2;
	const int64_t *s1, *s2;
	MKC_HD void operator()(int t) const
	{
		mkc_skip_norm(MINE_F(y), a, b, d, s, r, axis, bx.lo(t), bx.hi(t), gf, gb, bf, bb, eps,
			      sum.bytes ? MINE_F(sum) : NULL, MINE_F(y1), s1, MINE_F(y2), s2);
	}
};

/* SkipSimplifiedLayerNormalization of [2, 6, 300]: bf16 gamma, float bias, the sum kept or not */
static void
skip_norm_case(bool keep)
{
	begin();
	shape x = dense({2, 6, 300}), rows = dense({2, 6, 1});
	skip_norm_call f = {out_f(x.n), rand_f(x.n), rand_f(x.n), x.d, x.s, 3, 2,
			    cut(x, 1, {4, 6}), NULL, rand_bf16(300), rand_f(300), NULL, 1e-6f,
			    keep ? out_f(x.n) : output{{NULL, NULL}, 0}, out_f(rows.n),
			    out_f(rows.n), rows.s, rows.s};
	run(f, f.bx.n);
	if (keep)
		check("mkc_skip_norm [2, 6, 300], sum kept", {f.y, f.sum, f.y1, f.y2}, TOL);
	else
		check("mkc_skip_norm [2, 6, 300]", {f.y, f.y1, f.y2}, TOL);
}

int
main(void)
{
	CHECK(cudaMallocManaged(&pool, POOL_BYTES));
	data_cases();
	for (size_t i = 0; i < sizeof ew_cases / sizeof *ew_cases; i++)
		ew_run(&ew_cases[i]);
	reduce_case(MKC_REDUCE_SUM, {0, 1, 0}, 6 * 7, "mkc_reduce sum over axis 1");
	reduce_case(MKC_REDUCE_MEAN, {1, 0, 1}, 50, "mkc_reduce mean over axes 0, 2");
	reduce_case(MKC_REDUCE_MAX, {0, 0, 1}, 6 * 50, "mkc_reduce max over axis 2");
	reduce_case(MKC_REDUCE_SUM, {1, 1, 1}, 1, "mkc_reduce sum of everything");
	matmul_cases();
	gemm_case(true, false);
	gemm_case(false, true);
	norm_gemm_case(false, false);
	norm_gemm_case(false, true);
	norm_gemm_case(true, true);
	for (int pairs = 0; pairs < 3; pairs++)
		head_proj_case(pairs);
	part_merge_case(37, 5);
	part_merge_case(3, 5);   /* two chunks empty */
	part_merge_case(37, 5, true);
	attention_case(true);
	attention_case(false);
	gqa_case(5, 32, 0, 0);
	gqa_case(5, 16, 1, 20.0f);
	gqa_case(0, 0, 0, 0);
	rotary_case(32, 0, 0);
	rotary_case(16, 1, 1);
	rotary_case(32, 0, 2);
	append_case();
	softmax_case(2, 0);
	softmax_case(1, 1);
	norm_case(0, 2);
	norm_case(1, 1);
	skip_norm_case(true);
	skip_norm_case(false);
	printf("%s\n", failures ? "portable: FAILED" : "portable: the GPU bodies match the host's");
	return failures != 0;
}
