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

/* what an emitted file holds before the bodies: the vendor's sync header,
 * runtime/limits.h (MKC_RANK; MKC_THREADS, the block), common.h (mkc_view)
 * and bf16.h */
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

static MKC_HD inline uint64_t
lanes_block_sum_u64(uint64_t v)
{
	return ON_GPU(mkc_rt_block_sum_u64(v), v);
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
#define mkc_rt_block_sum_u64 lanes_block_sum_u64
#define mkc_rt_warp_sum lanes_warp_sum
#define mkc_rt_dot8_bf16 lanes_dot8_bf16
#define mkc_rt_dot4 lanes_dot4

#include "../../backends/c/scalar.h"
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

/* The view of a tensor (test_data.h's view_*), kept where both sides read it. */
static const mkc_view *
keep(const mkc_view &v)
{
	mkc_view *p = (mkc_view *)grab(sizeof *p);
	*p = v;
	return p;
}

/* The view of a dense tensor of shape s and element type t at p. */
static const mkc_view *
view(const void *p, int t, const shape &s)
{
	return keep(view_dense(p, t, s.r, s.d));
}

/* The view of a dense float32 tensor stored as bf16 at p. */
static const mkc_view *
view_bf(const void *p, const shape &s)
{
	return keep(view_bf16(view_dense(p, MKC_T_FLOAT, s.r, s.d)));
}

/*
 * An output: the host copy's bytes (at[0]) and the GPU copy's (at[1]),
 * both poisoned, and the view of each (v[0], v[1]; NULL for an output the
 * case leaves out).
 */
typedef struct {
	void *at[2];
	size_t bytes;
	const mkc_view *v[2];
} output;

/* A dense output of shape s and element type t. */
static output
out(int t, const shape &s)
{
	output o;
	o.bytes = (size_t)(mkc_t_size(t) * s.n);
	for (int k = 0; k < 2; k++) {
		o.at[k] = grab(o.bytes);
		memset(o.at[k], 0xff, o.bytes);
		o.v[k] = view(o.at[k], t, s);
	}
	return o;
}

static output
out_f(const shape &s)
{
	return out(MKC_T_FLOAT, s);
}

/* An output the case does not want: the body gets NULL for it. */
static output
none(void)
{
	return output{{NULL, NULL}, 0, {NULL, NULL}};
}

/* The view of the copy of o this side writes (or reads, for a body that takes another's output). */
static MKC_HD inline const mkc_view *
mine(const output &o)
{
	return ON_GPU(o.v[1], o.v[0]);
}

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
	const mkc_view *x;
	int flat;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_copy(mine(y), x, flat, b.lo(t), b.hi(t));
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
			copy_call f = {out(bits_type(es), y), view(rand_bytes(y.n * es), bits_type(es), y),
				       flat, flat ? cut(y, 0, {10, 25, 37}) : cut(y, 1, {7, 29})};
			run(f, f.b.n);
			char what[64];
			snprintf(what, sizeof what, "mkc_copy [37, 29] es %d %s", es,
				 flat ? "flat, 3 runs" : "by box, 2 boxes");
			check(what, {f.y}, EXACT);
		}
}

struct transpose_call {
	output y;
	const mkc_view *x;
	const int *perm;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_transpose(mine(y), x, perm, b.lo(t), b.hi(t));
	}
};

static void
transpose_case(int es)
{
	begin();
	shape x = dense({5, 7, 9, 11}), y = dense({9, 5, 11, 7});
	transpose_call f = {out(bits_type(es), y), view(rand_bytes(x.n * es), bits_type(es), x),
			    put<int>({2, 0, 3, 1}), cut(y, 1, {2, 5})};
	run(f, f.b.n);
	char what[64];
	snprintf(what, sizeof what, "mkc_transpose [5, 7, 9, 11] perm 2 0 3 1, es %d", es);
	check(what, {f.y}, EXACT);
}

/* heads moved across positions, the last axis kept: on a GPU rows of 16-byte units (mkc_strided) */
static void
transpose_rows_case(int es)
{
	begin();
	shape x = dense({6, 40, 64}), y = dense({40, 6, 64});
	transpose_call f = {out(bits_type(es), y), view(rand_bytes(x.n * es), bits_type(es), x),
			    put<int>({1, 0, 2}), cut(y, 0, {17, 40})};
	run(f, f.b.n);
	char what[64];
	snprintf(what, sizeof what, "mkc_transpose [6, 40, 64] perm 1 0 2, es %d", es);
	check(what, {f.y}, EXACT);
}

struct concat_call {
	output y;
	int n;
	const mkc_view *const *x;
	int axis;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_concat(mine(y), n, x, axis, b.lo(t), b.hi(t));
	}
};

/* three inputs along axis 1, tiles cut across the inputs' seams */
static void
concat_case(int es)
{
	begin();
	shape a = dense({4, 3, 50}), b = dense({4, 17, 50}), c = dense({4, 1, 50}),
	      y = dense({4, 21, 50});
	const int t = bits_type(es);
	concat_call f = {out(t, y), 3,
			 put<const mkc_view *>({view(rand_bytes(a.n * es), t, a),
						view(rand_bytes(b.n * es), t, b),
						view(rand_bytes(c.n * es), t, c)}),
			 1, cut(y, 1, {2, 10, 21})};
	run(f, f.b.n);
	char what[64];
	snprintf(what, sizeof what, "mkc_concat 3 + 17 + 1 on axis 1, es %d", es);
	check(what, {f.y}, EXACT);
}

struct slice_call {
	output y;
	const mkc_view *x;
	const int64_t *start, *step;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_slice(mine(y), x, start, step, b.lo(t), b.hi(t));
	}
};

/* x [40, 60] sliced into y of dims yd */
static void
slice_case(std::initializer_list<int64_t> start, std::initializer_list<int64_t> step,
	   std::initializer_list<int64_t> yd, int es, const char *what)
{
	begin();
	shape x = dense({40, 60}), y = dense(yd);
	slice_call f = {out(bits_type(es), y), view(rand_bytes(x.n * es), bits_type(es), x),
			put(start), put(step), cut(y, 0, {5, y.d[0]})};
	run(f, f.b.n);
	check(what, {f.y}, EXACT);
}

struct gather_call {
	output y;
	const mkc_view *x, *ind;
	int axis;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_rt_bad bad;   /* the lane's own; every index here is in range */
		(void)mkc_gather(mine(y), x, ind, axis, b.lo(t), b.hi(t), &bad);
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
	gather_call f = {out_f(y), wide ? view_bf(rand_bf16(x.n), x) : view(rand_f(x.n), MKC_T_FLOAT, x),
			 view(indices(ind.n, 300, iw), iw == 4 ? MKC_T_INT32 : MKC_T_INT64, ind), 0,
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
	gather_call f = {out(bits_type(8), y), view(rand_bytes(8 * x.n), bits_type(8), x),
			 view(indices(ind.n, 100, 8), MKC_T_INT64, ind), 1, cut(y, 0, {3, 8})};
	run(f, f.b.n);
	check("mkc_gather [8, 100, 16] axis 1 by int64 [7], es 8", {f.y}, EXACT);
}

struct split_call {
	int n;
	const mkc_view *const *y;   /* the host copies' views, then the GPU copies' */
	const mkc_view *x;
	int axis;
	MKC_HD void operator()(int) const
	{
		mkc_split(n, y + ON_GPU(n, 0), x, axis);
	}
};

static void
split_case(void)
{
	begin();
	shape x = dense({6, 90, 5}), a = dense({6, 20, 5}), b = dense({6, 45, 5}),
	      c = dense({6, 25, 5});
	output ya = out_f(a), yb = out_f(b), yc = out_f(c);
	split_call f = {3, put<const mkc_view *>({ya.v[0], yb.v[0], yc.v[0], ya.v[1], yb.v[1], yc.v[1]}),
			view(rand_f(x.n), MKC_T_FLOAT, x), 1};
	run(f, 1);
	check("mkc_split [6, 90, 5] into 20 + 45 + 25 on axis 1", {ya, yb, yc}, EXACT);
}

struct range_call {
	output y;
	const mkc_view *start, *delta;
	int64_t mid, n;   /* tile 0 is 0 .. mid, tile 1 mid .. n */
	MKC_HD void operator()(int k) const
	{
		const int64_t lo = k ? mid : 0, hi = k ? n : mid;
		mkc_range(mine(y), start, delta, &lo, &hi);
	}
};

/* 1000 values; the float ones are exact (steps of 0.25), so they too match bit for bit */
template <class T>
static void
range_case(int t, T start, T delta, const char *what)
{
	begin();
	range_call f = {out(t, dense({1000})), keep(view_dense(put<T>({start}), t, 0, NULL)),
			keep(view_dense(put<T>({delta}), t, 0, NULL)), 700, 1000};
	run(f, 2);
	check(what, {f.y}, EXACT);
}

struct strided_call {
	output y;
	const mkc_view *x;
	int64_t base;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_strided(mine(y), x, base, x->s, b.lo(t), b.hi(t));
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
	strided_call f = {out_f(y), view(rand_f(x.n), MKC_T_FLOAT, x), -20 * x.s[1], b};
	run(f, b.n);
	check("mkc_strided: append 3 positions, cache axis 1", {f.y}, EXACT);
}

static void
data_cases(void)
{
	copy_cases();
	transpose_case(2);
	transpose_case(8);
	transpose_rows_case(4);
	transpose_rows_case(2);
	transpose_rows_case(1);
	transpose_rows_case(8);
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
	int nin;
	const mkc_view *const *x;
	int flat;
	boxes bx;
	MKC_HD void operator()(int k) const
	{
		mkc_elementwise(op, isf, mine(y), nin, x, flat, bx.lo(k), bx.hi(k));
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
	/* flat float: a GPU's 16-byte loads (mkc_ew_vec4), a tile at 0 with a tail and one not aligned */
	{"silu_mul", MKC_EW_SILU_MUL, 1, F, 2, {F, F}, false, ANY, TOL},
	{"add float", MKC_EW_ADD, 1, F, 2, {F, F}, false, ANY, EXACT},
	{"max float, 3 operands", MKC_EW_MAX, 1, F, 3, {F, F, F}, false, ANY, EXACT},
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
	const mkc_view **x = (const mkc_view **)grab(sizeof(mkc_view *) * c->nin);
	for (int k = 0; k < c->nin; k++) {
		const shape &s = c->bcast ? bd[k] : y;
		x[k] = view(operand(c->t[k], c->dom, s.n), c->t[k], s);
	}
	ew_call f = {c->op, c->isf, out(c->ty, y), c->nin, x, !c->bcast,
		     c->bcast ? cut(y, 1, {4, 9}) : cut(y, 0, {3, 8})};
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
	const mkc_view *x;
	const int *red;
	MKC_HD void operator()(int) const
	{
		mkc_reduce(op, mine(y), x, red, 0);
	}
};

/* x [6, 50, 7] over the axes red marks into y of the kept dims (1 where reduced): one whole tile */
static void
reduce_case(int op, std::initializer_list<int> red, std::initializer_list<int64_t> kept,
	    const char *what)
{
	begin();
	shape x = dense({6, 50, 7});
	reduce_call f = {op, out_f(dense(kept)), view(rand_f(x.n), MKC_T_FLOAT, x), put(red)};
	run(f, 1);
	check(what, {f.y}, TOL);
}

/* ---- matmul.h ---- */

/* Which body a product case calls (the GPU's choice; the host calls mkc_matmul for MM_ROWS). */
enum { MM_PLAIN, MM_SPLIT_K, MM_ROWS };

struct mm_call {
	int how;
	output y;
	boxes bx;
	const mkc_view *a, *b, *c;   /* c: Gemm's C, or NULL */
	mkc_mm_opt o;
	MKC_HD void operator()(int t) const
	{
		const mkc_view *py = mine(y);
#ifdef __CUDA_ARCH__
		__shared__ float part[MKC_THREADS];   /* emit_matmul's split-K */
		if (how == MM_ROWS) {
			mkc_dot_rows(py, a, b, NULL, c, &o, bx.lo(t), bx.hi(t));
			return;
		}
#else
		float part[1];   /* one lane */
#endif
		if (how == MM_SPLIT_K)
			mkc_matmul_split_k(py, a, b, &o, bx.lo(t), bx.hi(t), part);
		else
			mkc_matmul(py, a, b, c, &o, bx.lo(t), bx.hi(t));
	}
};

/*
 * a [.., M, K] by b [.., K, N] (stored [.., N, K] when tb), a float32 or
 * bf16 (bh) weight, as emit_matmul declares them: the body broadcasts the
 * leading axes and finds the strides of the K axis.
 */
static mm_call
mm_resolve(int how, const shape &a, const shape &b, bool tb, bool bh, const shape &y)
{
	mm_call f;
	f.how = how;
	f.y = out_f(y);
	f.a = view(rand_f(a.n), MKC_T_FLOAT, a);
	f.b = bh ? view_bf(rand_bf16(b.n), b) : view(rand_f(b.n), MKC_T_FLOAT, b);
	f.c = NULL;
	f.o = mkc_mm_opt{.trans_a = 0, .trans_b = tb, .gemm = 0,
			 .alpha = 1.0f, .beta = 0.0f, .eps = 0.0f, .pairs = 0};
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
	f.c = view(rand_f(c.n), MKC_T_FLOAT, c);
	f.o = mkc_mm_opt{.trans_a = 0, .trans_b = 1, .gemm = 1,
			 .alpha = 0.5f, .beta = 2.0f, .eps = 0.0f, .pairs = 0};
	mm_check(f, cut(y, 1, {64, 128, 200}),
		 "mkc_dot_rows (host: mkc_matmul) bf16 [200, 512]^T, C [200]");

	begin();
	a = dense({2, 260}), b = dense({70, 260}), y = dense({2, 70});
	f = mm_resolve(MM_ROWS, a, b, true, false, y);
	mm_check(f, cut(y, 0, {1, 2}), "mkc_dot_rows (host: mkc_matmul) [70, 260]^T");
}

/* Gemm with transA (a stored [K, M]), alpha, beta and C [M, N] or [N], as emit_gemm calls it. */
static void
gemm_case(bool full_c, bool tb)
{
	begin();
	const int64_t M = 20, K = 90, N = 70;
	shape a = dense({K, M}), b = tb ? dense({N, K}) : dense({K, N}), y = dense({M, N});
	shape c = full_c ? dense({M, N}) : dense({N});
	mm_call f;
	f.how = MM_PLAIN;
	f.y = out_f(y);
	f.a = view(rand_f(a.n), MKC_T_FLOAT, a);
	f.b = view(rand_f(b.n), MKC_T_FLOAT, b);
	f.c = view(rand_f(c.n), MKC_T_FLOAT, c);
	f.o = mkc_mm_opt{.trans_a = 1, .trans_b = tb, .gemm = 1,
			 .alpha = 0.5f, .beta = 2.0f, .eps = 0.0f, .pairs = 0};
	char what[96];
	snprintf(what, sizeof what, "mkc_matmul Gemm transA%s, 0.5 * AB + 2 * C [%s]",
		 tb ? " transB" : "", full_c ? "20, 70" : "70");
	mm_check(f, cut(y, 1, {32, 70}), what);
}

struct norm_gemm_call {
	output y;
	boxes bx;
	const mkc_view *x, *scale, *w, *u, *c;   /* u: NormGlu's second weight; c: C; or NULL */
	mkc_mm_opt o;
	MKC_HD void operator()(int t) const
	{
		mkc_norm_gemm(mine(y), x, scale, w, u, c, &o, bx.lo(t), bx.hi(t));
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
	shape y = dense({1, N}), x = dense({1, K}), k = dense({K}), w = dense({N, K}), c = dense({N});
	norm_gemm_call f;
	f.y = out_f(y);
	f.bx = cut(y, 1, {64, N});
	f.x = view(rand_f(K, -3, 3), MKC_T_FLOAT, x);
	f.scale = bf ? view_bf(rand_bf16(K), k) : view(rand_f(K, 0.5f, 1.5f), MKC_T_FLOAT, k);
	f.w = bf ? view_bf(rand_bf16(N * K), w) : view(rand_f(N * K), MKC_T_FLOAT, w);
	f.u = !glu ? NULL : bf ? view_bf(rand_bf16(N * K), w) : view(rand_f(N * K), MKC_T_FLOAT, w);
	f.c = glu ? NULL : view(rand_f(N), MKC_T_FLOAT, c);
	f.o = mkc_mm_opt{.trans_a = 0, .trans_b = 0, .gemm = 1,
			 .alpha = 1.0f, .beta = 1.0f, .eps = 1e-5f, .pairs = 0};
	run(f, f.bx.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_norm_gemm %s [1, 300] x %s[130, 300]", glu ? "NormGlu" : "NormGemm + C",
		 bf ? "bf16 " : "");
	check(what, {f.y}, TOL);
}

struct head_proj_call {
	output y;
	int64_t pos, per;
	const mkc_view *x, *scale, *w, *cos, *sin;
	mkc_mm_opt o;
	MKC_HD void operator()(int t) const
	{
		/* tile t: head t / per, its slice t % per of the head's units
		 * (passes/tile.c's tile_head_proj), as emit_head_proj calls it */
		const int64_t D = 64, h = t / per, j = t % per, units = o.pairs ? D / 2 : D;
		const int64_t step = o.pairs == 2 ? 2 : 1;
		const int64_t lo[4] = {0, h, pos, step * (units * j / per)};
		const int64_t hi[4] = {1, h + 1, pos + 1, step * (units * (j + 1) / per)};
		mkc_head_proj(mine(y), x, scale, w, cos, sin, &o, lo, hi, NULL);
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
	shape y = dense({1, H, cap, D}), x = dense({1, K}), k = dense({K}), w = dense({H * D, K});
	shape half = dense({D / 2});
	head_proj_call f = {out_f(y), 7, 3, view(rand_f(K, -3, 3), MKC_T_FLOAT, x),
			    view(rand_f(K, 0.5f, 1.5f), MKC_T_FLOAT, k), view_bf(rand_bf16(H * D * K), w),
			    view(rand_f(D / 2), MKC_T_FLOAT, half), view(rand_f(D / 2), MKC_T_FLOAT, half),
			    mkc_mm_opt{.trans_a = 0, .trans_b = 0, .gemm = 0, .alpha = 1.0f, .beta = 0.0f,
				       .eps = 1e-5f, .pairs = pairs}};
	run(f, (int)(H * f.per));
	static const char *const forms[3] = {"rows", "halves rotated", "pairs rotated"};
	char what[96];
	snprintf(what, sizeof what, "mkc_head_proj [1, 300] x bf16 [192, 300], %s", forms[pairs]);
	check(what, {f.y}, TOL);
}

/* ---- attention.h ---- */

/* q [B, Hq, Sq, D], and keys and values [B, Hk, cap, D] of which L are used: flash decoding's two bodies */
struct part_call {
	const mkc_view *q, *k, *v;
	output part;
	int64_t C;
	const int64_t *rows;   /* tile t is rows rows[t] .. rows[t + 1] */
	float scale;
	MKC_HD void operator()(int t) const
	{
		mkc_attn_part_c(q, k, v, mine(part), C, rows[t], rows[t + 1], scale, NULL);
	}
};

struct merge_call {
	output part;   /* read: each side merges its own parts */
	output y;
	int64_t C;
	const int64_t *heads;   /* tile t is query heads heads[t] .. heads[t + 1] */
	MKC_HD void operator()(int t) const
	{
		/* the query positions in two pieces, as a few-token plan's tiles have them */
		const int64_t sq = mine(y)->d[2];
		mkc_attn_merge_c(mine(part), mine(y), C, heads[t], heads[t + 1], 0, sq / 2);
		mkc_attn_merge_c(mine(part), mine(y), C, heads[t], heads[t + 1], sq / 2, sq);
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
	/* the caches' first L positions, laid out for cap */
	const int64_t used[4] = {B, Hk, L, D};
	const mkc_view *k = bf ? keep(view_bf16(view_strided(rand_bf16(kv.n), MKC_T_FLOAT, 4, used, kv.s)))
			       : keep(view_strided(rand_f(kv.n), MKC_T_FLOAT, 4, used, kv.s));
	const mkc_view *v = bf ? keep(view_bf16(view_strided(rand_bf16(kv.n), MKC_T_FLOAT, 4, used, kv.s)))
			       : keep(view_strided(rand_f(kv.n), MKC_T_FLOAT, 4, used, kv.s));
	part_call p = {view(rand_f(q.n), MKC_T_FLOAT, q), k, v, out_f(part), C,
		       put<int64_t>({0, 3, Hk * C - 3, Hk * C}), 1.0f / sqrtf((float)D)};
	run(p, 3);
	merge_call m = {p.part, out_f(q), C, put<int64_t>({0, 3, Hk * G})};
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
	const mkc_view *q, *k, *v, *mask, *pk, *pv;   /* mask, pk, pv: NULL when none */
	const int64_t *heads;
	float scale, softcap;
	output y1, y2;   /* none(): not wanted */
	MKC_HD void operator()(int t) const
	{
		const mkc_attn_opt o = {.scale = scale, .softcap = softcap, .causal = 0,
					.h0 = heads[t], .h1 = heads[t + 1], .s0 = 0, .s1 = 0, .pages = NULL};
		mkc_attention(mine(y), q, k, v, mask, pk, pv, mine(y1), mine(y2), &o);
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
	f.y = out_f(y);
	f.q = view(rand_f(q.n, -2, 2), MKC_T_FLOAT, q);
	f.k = view(rand_f(k.n, -2, 2), MKC_T_FLOAT, k);
	f.v = view(rand_f(v.n), MKC_T_FLOAT, v);
	f.pk = past ? view(rand_f(pk.n, -2, 2), MKC_T_FLOAT, pk) : NULL;
	f.pv = past ? view(rand_f(pv.n), MKC_T_FLOAT, pv) : NULL;
	if (past) {
		f.mask = view(rand_f(mask.n, -3, 0), MKC_T_FLOAT, mask);
	} else {
		uint8_t *mb = (uint8_t *)grab((size_t)mask.n);
		for (int64_t i = 0; i < mask.n; i++)
			mb[i] = i / L == 4 ? 0 : urand() > -0.4f;   /* batch 1, row 1: all masked */
		f.mask = view(mb, MKC_T_BOOL, mask);
	}
	f.heads = past ? put<int64_t>({0, Hq}) : put<int64_t>({0, 1, 4, Hq});
	f.scale = 0.25f;
	f.softcap = past ? 1.5f : 0.0f;
	f.y1 = past ? out_f(y1) : none();
	f.y2 = past ? out_f(y2) : none();
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
		m.y = mine(y);
		m.pk_out = mine(y1);
		m.pv_out = mine(y2);
		float qr[64];   /* the emitter's float qr[head size], the lane's own */
		mkc_rt_bad bad;
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
	shape past = dense({B, Hk, P, D}), pres = dense({B, Hk, L, D}), cs = dense({npos, R / 2});
	mkc_gqa_args a;
	memset(&a, 0, sizeof a);
	a.q = view(rand_f(q.n, -2, 2), MKC_T_FLOAT, q);
	a.k = view(rand_f(k.n, -2, 2), MKC_T_FLOAT, k);
	a.v = view(rand_f(k.n), MKC_T_FLOAT, k);
	a.pk = P ? view(rand_f(past.n, -2, 2), MKC_T_FLOAT, past) : NULL;
	a.pv = P ? view(rand_f(past.n), MKC_T_FLOAT, past) : NULL;
	int32_t *seqlens = (int32_t *)grab(sizeof(int32_t) * B);
	for (int64_t b = 0; b < B; b++)
		seqlens[b] = (int32_t)(L - 1);   /* the new tokens at P .. P + S - 1 */
	a.seqlens_k = view(seqlens, MKC_T_INT32, dense({B}));
	a.cos = R ? view(rand_f(npos * (R / 2)), MKC_T_FLOAT, cs) : NULL;
	a.sin = R ? view(rand_f(npos * (R / 2)), MKC_T_FLOAT, cs) : NULL;
	a.hq = Hq, a.hk = Hk, a.d = D;
	a.inter = inter;
	a.scale = 1.0f / sqrtf((float)D), a.softcap = softcap;
	gqa_call f = {a, out_f(y), out_f(pres), out_f(pres)};
	run(f, 1);
	char what[96];
	snprintf(what, sizeof what, "mkc_gqa past %lld, R %lld%s%s", (long long)P, (long long)R,
		 inter ? " pairs" : "", softcap > 0 ? ", soft cap" : "");
	check(what, {f.y, f.y1, f.y2}, TOL);
}

/* ---- cache.h ---- */

struct rotary_call {
	output y;
	const mkc_view *x, *cos, *sin, *pos;   /* pos: NULL when none */
	mkc_rotary_opt o;
	MKC_HD void operator()(int) const
	{
		mkc_rt_bad bad;
		(void)mkc_rotary(mine(y), x, cos, sin, pos, &o, &bad);
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
	const mkc_view *pos = NULL;
	if (how == 1) {
		int64_t *p = (int64_t *)grab(sizeof(int64_t) * B * S);
		for (int64_t i = 0; i < B * S; i++)
			p[i] = (i * 5 + 3) % npos;
		pos = view(p, MKC_T_INT64, dense({B, S}));
	} else if (how == 2) {
		pos = view(put<int64_t>({4}), MKC_T_INT64, dense({1}));
	}
	rotary_call f = {out_f(x), view(rand_f(x.n), MKC_T_FLOAT, x),
			 view(rand_f(cache.n), MKC_T_FLOAT, cache),
			 view(rand_f(cache.n), MKC_T_FLOAT, cache), pos,
			 mkc_rotary_opt{.heads = 0, .rot = R, .inter = inter, .lo = NULL, .hi = NULL}};
	run(f, 1);
	static const char *const hows[3] = {"no positions", "position_ids [2, 5]", "first position 4"};
	char what[96];
	snprintf(what, sizeof what, "mkc_rotary [2, 3, 5, 32] R %lld%s, %s", (long long)R,
		 inter ? " pairs" : "", hows[how]);
	check(what, {f.y}, TOL);
}

struct append_call {
	output y;
	const mkc_view *x, *cos, *sin;
	int64_t rot;
	int inter;
	int64_t pos;
	MKC_HD void operator()(int) const
	{
		mkc_cache_append(mine(y), x, cos, sin, rot, inter, pos);
	}
};

/* two batches (bodies.cu checks one against float64), rotated per batch and position */
static void
append_case(void)
{
	begin();
	const int64_t B = 2, H = 4, S = 3, D = 64, cap = 50, R = 64;
	shape x = dense({B, H, S, D}), cache = dense({B, H, cap, D}), cs = dense({B, S, R / 2});
	append_call f = {out_f(cache), view(rand_f(x.n), MKC_T_FLOAT, x),
			 view(rand_f(cs.n), MKC_T_FLOAT, cs), view(rand_f(cs.n), MKC_T_FLOAT, cs), R, 0,
			 17};
	run(f, 1);
	check("mkc_cache_append B 2, 3 positions at 17, R 64", {f.y}, TOL);
}

/* ---- rows.h ---- */

struct softmax_call {
	output y;
	const mkc_view *x;
	int axis, one_axis;
	boxes b;
	MKC_HD void operator()(int t) const
	{
		mkc_softmax(mine(y), x, axis, one_axis, b.lo(t), b.hi(t));
	}
};

static void
softmax_case(int axis, int one_axis)
{
	begin();
	shape x = dense({40, 7, 50});
	softmax_call f = {out_f(x), view(rand_f(x.n, -4, 4), MKC_T_FLOAT, x), axis, one_axis,
			  cut(x, 0, {15, 40})};
	run(f, f.b.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_softmax [40, 7, 50] %s %d", one_axis ? "axis" : "axes from",
		 axis);
	check(what, {f.y}, TOL);
}

struct norm_call {
	output y;
	const mkc_view *x, *scale, *bias;   /* bias: NULL when none */
	mkc_norm_opt o;
	boxes b;
	output y1, y2;
	MKC_HD void operator()(int t) const
	{
		mkc_norm(mine(y), x, scale, bias, mine(y1), mine(y2), &o, b.lo(t), b.hi(t));
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
	shape w = axis == 2 ? dense({700}) : dense({5, 700});
	norm_call f = {out_f(x), view(rand_f(x.n, -2, 3), MKC_T_FLOAT, x),
		       layer ? view_bf(rand_bf16(w.n), w) : view(rand_f(w.n, 0.5f, 1.5f), MKC_T_FLOAT, w),
		       layer ? view_bf(rand_bf16(w.n), w) : NULL,
		       mkc_norm_opt{.axis = axis, .eps = 1e-5f, .layer = layer},
		       cut(x, 0, {1, 3}), out_f(rows), out_f(rows)};
	run(f, f.b.n);
	char what[96];
	snprintf(what, sizeof what, "mkc_norm %s over axes from %d, per-row outputs",
		 layer ? "LayerNorm bf16 scale, bias" : "RMSNorm", axis);
	check(what, {f.y, f.y1, f.y2}, TOL);
}

struct skip_norm_call {
	output y;
	const mkc_view *a, *b, *gamma, *bias;
	float eps;
	boxes bx;
	output sum, y1, y2;   /* sum: none() when not kept */
	MKC_HD void operator()(int t) const
	{
		mkc_skip_norm(mine(y), a, b, gamma, bias, mine(y1), mine(y2), mine(sum), eps, bx.lo(t),
			      bx.hi(t));
	}
};

/* SkipSimplifiedLayerNormalization of [2, 6, 300]: bf16 gamma, float bias, the sum kept or not */
static void
skip_norm_case(bool keep_sum)
{
	begin();
	shape x = dense({2, 6, 300}), rows = dense({2, 6, 1}), w = dense({300});
	skip_norm_call f = {out_f(x), view(rand_f(x.n), MKC_T_FLOAT, x),
			    view(rand_f(x.n), MKC_T_FLOAT, x), view_bf(rand_bf16(300), w),
			    view(rand_f(300), MKC_T_FLOAT, w), 1e-6f, cut(x, 1, {4, 6}),
			    keep_sum ? out_f(x) : none(), out_f(rows), out_f(rows)};
	run(f, f.bx.n);
	if (keep_sum)
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
	reduce_case(MKC_REDUCE_SUM, {0, 1, 0}, {6, 1, 7}, "mkc_reduce sum over axis 1");
	reduce_case(MKC_REDUCE_MEAN, {1, 0, 1}, {1, 50, 1}, "mkc_reduce mean over axes 0, 2");
	reduce_case(MKC_REDUCE_MAX, {0, 0, 1}, {6, 50, 1}, "mkc_reduce max over axis 2");
	reduce_case(MKC_REDUCE_SUM, {1, 1, 1}, {1, 1, 1}, "mkc_reduce sum of everything");
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
