/*
 * elementwise.h - the elementwise ops as one tile body in plain C over the
 * lanes of a tile (runtime/common.h: MKC_LANE of MKC_NLANES), embedded by
 * every target after scalar.h (Max, Min, Relu and the integer powers, as
 * constant folding computes them) and data.h (the element types' MKC_T_
 * codes).
 *
 * mkc_elementwise computes op on nin operands of any types, in float (the
 * float form: a float operand's op, as onnxruntime computes float32) or
 * in int64 (the integer form), and stores the result as y's type. The op,
 * the form and every type are constants at each call: once the body is
 * inlined, the switches below fold to the one case the node needs.
 */

/* The unary ops first, then the binary ones (from MKC_EW_ADD), then Where. */
enum {
	/* Identity, and Cast, CastLike, Expand: the conversion is the load's and the store's */
	MKC_EW_IDENTITY,
	MKC_EW_NEG, MKC_EW_ABS, MKC_EW_SQRT, MKC_EW_RECIPROCAL, MKC_EW_EXP, MKC_EW_LOG,
	MKC_EW_SIN, MKC_EW_COS, MKC_EW_TANH, MKC_EW_SIGMOID, MKC_EW_RELU, MKC_EW_ERF,
	MKC_EW_FLOOR, MKC_EW_CEIL, MKC_EW_NOT, MKC_EW_ISNAN,
	MKC_EW_NONZERO,   /* a Cast to bool */
	MKC_EW_SILU,      /* passes/fuse.c: x * Sigmoid(x) */
	MKC_EW_ADD, MKC_EW_SUB, MKC_EW_MUL, MKC_EW_DIV, MKC_EW_POW, MKC_EW_MAX, MKC_EW_MIN,
	MKC_EW_EQUAL, MKC_EW_LESS, MKC_EW_LESS_EQUAL, MKC_EW_GREATER, MKC_EW_GREATER_EQUAL,
	MKC_EW_AND, MKC_EW_OR,
	MKC_EW_SILU_MUL,  /* passes/fuse.c: SiLU(a) * b, the Mul it replaced */
	MKC_EW_WHERE,
};

/*
 * On a GPU four rounds' loads of a flat walk go out together (y is
 * restrict: no store can change them).
 */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_EW_UNROLL _Pragma("unroll 4")
#else
#define MKC_EW_UNROLL
#endif

static inline MKC_BODY float MKC_UNUSED
mkc_ew_sigmoid(float a)
{
	return 1.0f / (1.0f + expf(-a));
}

/* The float form of op on a (and b); the comparisons give 0 or 1. */
static inline MKC_BODY float MKC_UNUSED
mkc_ew_f(int op, float a, float b)
{
	switch (op) {
	case MKC_EW_NEG: return -a;
	case MKC_EW_ABS: return fabsf(a);
	case MKC_EW_SQRT: return sqrtf(a);
	case MKC_EW_RECIPROCAL: return 1.0f / a;
	case MKC_EW_EXP: return expf(a);
	case MKC_EW_LOG: return logf(a);
	case MKC_EW_SIN: return sinf(a);
	case MKC_EW_COS: return cosf(a);
	case MKC_EW_TANH: return tanhf(a);
	case MKC_EW_SIGMOID: return mkc_ew_sigmoid(a);
	case MKC_EW_RELU: return (float)mkc_rt_fmax(a, 0);
	case MKC_EW_ERF: return erff(a);
	case MKC_EW_FLOOR: return floorf(a);
	case MKC_EW_CEIL: return ceilf(a);
	case MKC_EW_ISNAN: return isnan(a);
	case MKC_EW_NONZERO: return a != 0;
	case MKC_EW_SILU: return a * mkc_ew_sigmoid(a);
	case MKC_EW_ADD: return a + b;
	case MKC_EW_SUB: return a - b;
	case MKC_EW_MUL: return a * b;
	case MKC_EW_DIV: return a / b;
	case MKC_EW_POW: return powf(a, b);
	case MKC_EW_MAX: return (float)mkc_rt_fmax(a, b);
	case MKC_EW_MIN: return (float)mkc_rt_fmin(a, b);
	case MKC_EW_EQUAL: return a == b;
	case MKC_EW_LESS: return a < b;
	case MKC_EW_LESS_EQUAL: return a <= b;
	case MKC_EW_GREATER: return a > b;
	case MKC_EW_GREATER_EQUAL: return a >= b;
	case MKC_EW_SILU_MUL: return a * mkc_ew_sigmoid(a) * b;
	default: return a;   /* MKC_EW_IDENTITY */
	}
}

/*
 * The integer form. Division by zero gives 0 (ONNX leaves it open; a trap
 * would stop the whole step).
 */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_ew_i(int op, int64_t a, int64_t b)
{
	switch (op) {
	case MKC_EW_NEG: return -a;
	case MKC_EW_ABS: return a < 0 ? -a : a;
	case MKC_EW_RELU: return a > 0 ? a : 0;
	case MKC_EW_NOT: return !a;
	case MKC_EW_ISNAN: return 0;
	case MKC_EW_NONZERO: return a != 0;
	case MKC_EW_ADD: return a + b;
	case MKC_EW_SUB: return a - b;
	case MKC_EW_MUL: return a * b;
	case MKC_EW_DIV: return b ? a / b : 0;
	case MKC_EW_POW: return mkc_rt_ipow(a, b);
	case MKC_EW_MAX: return mkc_rt_imax(a, b);
	case MKC_EW_MIN: return mkc_rt_imin(a, b);
	case MKC_EW_EQUAL: return a == b;
	case MKC_EW_LESS: return a < b;
	case MKC_EW_LESS_EQUAL: return a <= b;
	case MKC_EW_GREATER: return a > b;
	case MKC_EW_GREATER_EQUAL: return a >= b;
	case MKC_EW_AND: return a && b;
	case MKC_EW_OR: return a || b;
	default: return a;   /* MKC_EW_IDENTITY */
	}
}

/*
 * Loads as float or int64 and stores from them, for every type (data.h's
 * MKC_T_EACH); the float form also converts float16, which only a Cast at
 * a float16 model's boundary reads or writes (passes/half.c).
 */
#define MKC_EW_LOADF(code, T) case code: return (float)((const T *)x)[i];
#define MKC_EW_LOADI(code, T) case code: return (int64_t)((const T *)x)[i];
#define MKC_EW_STORE(code, T) case code: ((T *)y)[i] = (T)v; break;

static inline MKC_BODY float MKC_UNUSED
mkc_ew_loadf(const void *x, int64_t i, int t)
{
	switch (t) {
	MKC_T_EACH(MKC_EW_LOADF)
	case MKC_T_FLOAT16: return mkc_rt_half(((const uint16_t *)x)[i]);   /* a Cast's */
	default: return 0;
	}
}

static inline MKC_BODY int64_t MKC_UNUSED
mkc_ew_loadi(const void *x, int64_t i, int t)
{
	switch (t) {
	MKC_T_EACH(MKC_EW_LOADI)
	default: return 0;
	}
}

static inline MKC_BODY void MKC_UNUSED
mkc_ew_storef(void *y, int64_t i, int t, float v)
{
	switch (t) {
	MKC_T_EACH(MKC_EW_STORE)
	case MKC_T_FLOAT16: ((uint16_t *)y)[i] = mkc_rt_to_half(v); break;   /* a Cast's */
	default: break;
	}
}

static inline MKC_BODY void MKC_UNUSED
mkc_ew_storei(void *y, int64_t i, int t, int64_t v)
{
	switch (t) {
	MKC_T_EACH(MKC_EW_STORE)
	default: break;
	}
}

/*
 * Where one element's operands are: x[k] at flat index i on a flat walk,
 * else at idx (y's rank r), x[k] broadcast into y by numpy's rule (its
 * axes are y's last ones; an axis of extent 1 repeats).
 */
typedef struct {
	const mkc_view *const *x;
	const int64_t *idx;
	int64_t i;
	int r, flat;
} mkc_ew_at;

static inline MKC_BODY int64_t MKC_UNUSED
mkc_ew_off(const mkc_ew_at *a, int k)
{
	if (a->flat)
		return a->i;
	const mkc_view *x = a->x[k];
	int64_t o = 0;
	for (int d = 0; d < x->rank; d++)
		if (x->d[d] != 1)
			o += a->idx[a->r - x->rank + d] * x->s[d];
	return o;
}

/* Operand k of the element as float, or as int64. */
static inline MKC_BODY float MKC_UNUSED
mkc_ew_argf(const mkc_ew_at *a, int k)
{
	return mkc_ew_loadf(a->x[k]->p, mkc_ew_off(a, k), a->x[k]->type);
}

static inline MKC_BODY int64_t MKC_UNUSED
mkc_ew_argi(const mkc_ew_at *a, int k)
{
	return mkc_ew_loadi(a->x[k]->p, mkc_ew_off(a, k), a->x[k]->type);
}

/*
 * One element in each form: op on operand 0 alone (nin 1), on 0 and 1,
 * or folded left to right over all nin (Max, Min: op(op(x0, x1), x2) ...);
 * Where picks operand 1 or 2 by operand 0. (Max and Min of one operand
 * come as Identity.) The integer form of Pow takes a float exponent as
 * float: the result is the integer base's type (4^1.5 is 8, not 4^1).
 */
static inline MKC_BODY float MKC_UNUSED
mkc_ew_elemf(int op, int nin, const mkc_ew_at *a)
{
	if (op == MKC_EW_WHERE)
		return mkc_ew_argi(a, 0) ? mkc_ew_argf(a, 1) : mkc_ew_argf(a, 2);
	float v = mkc_ew_argf(a, 0);
	if (nin == 1)
		return mkc_ew_f(op, v, 0);
	for (int k = 1; k < nin; k++)
		v = mkc_ew_f(op, v, mkc_ew_argf(a, k));
	return v;
}

static inline MKC_BODY int64_t MKC_UNUSED
mkc_ew_elemi(int op, int nin, const mkc_ew_at *a)
{
	if (op == MKC_EW_WHERE)
		return mkc_ew_argi(a, 0) ? mkc_ew_argi(a, 1) : mkc_ew_argi(a, 2);
	int64_t v = mkc_ew_argi(a, 0);
	/* Pow's exponent has a type of its own: a float one is read as float */
	if (op == MKC_EW_POW && (a->x[1]->type == MKC_T_FLOAT || a->x[1]->type == MKC_T_DOUBLE))
		return mkc_rt_ipowf(v, mkc_ew_argf(a, 1));
	if (nin == 1)
		return mkc_ew_i(op, v, 0);
	for (int k = 1; k < nin; k++)
		v = mkc_ew_i(op, v, mkc_ew_argi(a, k));
	return v;
}

/* Element oy of y: the float form when isf (rounded to bf16 where y is
 * stored so: passes/narrow.c), else the integer form. */
static inline MKC_BODY void MKC_UNUSED
mkc_ew_put(int op, int isf, int nin, const mkc_ew_at *a, const mkc_view *y, int64_t oy)
{
	if (isf && y->bf16)
		mkc_rt_put(y->p, oy, 1, mkc_ew_elemf(op, nin, a));
	else if (isf)
		mkc_ew_storef(y->p, oy, y->type, mkc_ew_elemf(op, nin, a));
	else
		mkc_ew_storei(y->p, oy, y->type, mkc_ew_elemi(op, nin, a));
}

#if defined(__CUDACC__) || defined(__HIPCC__)
/*
 * The flat walk of elements cnt from i0 in float32 on a GPU, four elements
 * a load: a block's lanes then keep 16 bytes an operand in flight each, not
 * 4 (a worker's 256 lanes and 4-byte loads moved 3.8 GB/s, a 64K-value
 * tile of a prompt chunk's SiLU product 200 us on an H200). False, and
 * nothing done, unless every operand and y is float32 and 16-byte aligned
 * at i0 (types are constants at each call: the test folds).
 */
static inline MKC_BODY int MKC_UNUSED
mkc_ew_vec4(int op, const mkc_view *y, int nin, const mkc_view *const *x, int64_t i0,
	    int64_t cnt)
{
	if (y->type != MKC_T_FLOAT || op == MKC_EW_WHERE || nin > 3 ||
	    (uintptr_t)((char *)y->p + i0 * mkc_view_es(y)) % (y->bf16 ? 8 : 16))
		return 0;
	uintptr_t al = 0;
	for (int k = 0; k < nin; k++) {
		if (x[k]->type != MKC_T_FLOAT || x[k]->bf16)
			return 0;
		al |= (uintptr_t)((const float *)x[k]->p + i0);
	}
	if (al % 16)
		return 0;
	const float4 *MKC_RESTRICT a = (const float4 *)((const float *)x[0]->p + i0);
	const float4 *MKC_RESTRICT b = (const float4 *)((const float *)x[nin > 1]->p + i0);
	const float4 *MKC_RESTRICT c = (const float4 *)((const float *)x[nin - 1]->p + i0);
	void *MKC_RESTRICT py = (char *)y->p + i0 * mkc_view_es(y);
	const int64_t n4 = cnt / 4;
	MKC_EW_UNROLL
	for (int64_t q = MKC_LANE; q < n4; q += MKC_NLANES) {
		float4 v = a[q];
		if (nin == 1) {
			v = make_float4(mkc_ew_f(op, v.x, 0), mkc_ew_f(op, v.y, 0), mkc_ew_f(op, v.z, 0),
					mkc_ew_f(op, v.w, 0));
		} else {
			const float4 w = b[q];
			v = make_float4(mkc_ew_f(op, v.x, w.x), mkc_ew_f(op, v.y, w.y),
					mkc_ew_f(op, v.z, w.z), mkc_ew_f(op, v.w, w.w));
		}
		if (nin == 3) {   /* a third operand (Max, Min): op(op(x0, x1), x2) */
			const float4 w = c[q];
			v = make_float4(mkc_ew_f(op, v.x, w.x), mkc_ew_f(op, v.y, w.y),
					mkc_ew_f(op, v.z, w.z), mkc_ew_f(op, v.w, w.w));
		}
		mkc_rt_put4(py, q, y->bf16, v);
	}
	mkc_ew_at at = {x, NULL, 0, y->rank, 1};
	for (int64_t i = i0 + 4 * n4 + MKC_LANE; i < i0 + cnt; i += MKC_NLANES) {
		at.i = i;
		mkc_ew_put(op, 1, nin, &at, y, i);
	}
	return 1;
}
#endif

/*
 * The box lo..hi of y: op on the nin operands x[k]. With flat, every
 * operand has y's dims and dense strides and every tile is a run, so the
 * lanes walk flat indices (no lane splits an index into coordinates: two
 * 64-bit divisions an axis); else each operand broadcasts into y.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_elementwise(int op, int isf, const mkc_view *y, int nin, const mkc_view *const *x, int flat,
		const int64_t *lo, const int64_t *hi)
{
	const int r = y->rank;
	int64_t ext[MKC_RANK + 1], idx[MKC_RANK + 1];
	const int64_t cnt = mkc_rt_extents(lo, hi, r, ext);
	mkc_ew_at a = {x, idx, 0, r, flat};
	if (flat) {
		const int64_t i0 = mkc_rt_dot(lo, y->s, r);
#if defined(__CUDACC__) || defined(__HIPCC__)
		if (isf && mkc_ew_vec4(op, y, nin, x, i0, cnt))
			return;
#endif
		MKC_EW_UNROLL
		for (int64_t i = i0 + MKC_LANE; i < i0 + cnt; i += MKC_NLANES) {
			a.i = i;
			mkc_ew_put(op, isf, nin, &a, y, i);
		}
		return;
	}
	for (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {
		mkc_rt_unflat(f, lo, ext, r, idx);
		mkc_ew_put(op, isf, nin, &a, y, mkc_rt_dot(idx, y->s, r));
	}
}
