/*
 * scalar.h - what an op does to one value, where C's own operators or libm
 * would answer otherwise than ONNX and onnxruntime: the one definition,
 * embedded first among the bodies of every target (elementwise.h and
 * reduce.h call it) and included by the compiler's constant folding
 * (passes/fold.c), so that a folded value and a computed one cannot differ.
 *
 * Max and Min take doubles: the bodies pass floats (widened exactly; the
 * result is one of them, so narrowing it back is exact, and gcc and nvcc
 * compile it to float compares), folding passes its doubles.
 */
#ifndef MKC_HD
#define MKC_HD   /* outside an emitted file: host code */
#endif

/*
 * Max and Min as onnxruntime computes them: NaN when either operand is NaN
 * (C's fmaxf and fminf return the other one, and a plain comparison the
 * second or the first by position), else std::max's and std::min's choice,
 * the first of two equal values (Max(-0, +0) is -0). Relu is Max(x, 0), and
 * ReduceMax folds Max over the row, so one NaN anywhere makes the result
 * NaN, as in ONNX's reference (numpy); onnxruntime's CPU ReduceMax gives NaN
 * only when the NaN comes first in the row.
 */
static inline MKC_HD double
mkc_rt_fmax(double a, double b)
{
	return a < b || b != b ? b : a;
}

static inline MKC_HD double
mkc_rt_fmin(double a, double b)
{
	return b < a || b != b ? b : a;
}

/*
 * An integer to an integer power, by squaring (wrapping as uint64_t does
 * where the result does not fit). Through double it was wrong on GPUs:
 * CUDA's pow(3.0, 1.0) is 2.9999999999999996, which truncates to 2, and
 * beyond 2^53 double cannot hold the result. A negative power is 1 / a^-b
 * truncated: 1 and -1 keep their magnitude, every other base gives 0 (0
 * too, which has no power below 0).
 */
static inline MKC_HD int64_t
mkc_rt_ipow(int64_t a, int64_t b)
{
	if (b < 0)
		return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
	uint64_t r = 1, x = (uint64_t)a;
	for (; b; b >>= 1, x *= x)
		if (b & 1)
			r *= x;
	return (int64_t)r;
}

/*
 * An integer to a float power (Pow's base and exponent types differ from
 * opset 12): as onnxruntime, the power in double, truncated toward zero
 * (4^1.5 is 8, 2^0.5 is 1). A result no int64 holds (NaN, an infinity,
 * 2^63 or more) has no value in ONNX, and onnxruntime's is an undefined
 * conversion; here it is INT64_MIN (0 once narrowed to int32).
 */
static inline MKC_HD int64_t
mkc_rt_ipowf(int64_t a, double b)
{
	const double p = pow((double)a, b);
	return p > -9223372036854775808.0 && p < 9223372036854775808.0 ? (int64_t)p : INT64_MIN;
}
