/*
 * scalar.h - what an op does to one value, where C's own operators or libm
 * would answer otherwise than ONNX and onnxruntime: the one definition,
 * embedded first among the bodies of every target (elementwise.h and
 * reduce.h call it) and included by the compiler's constant folding
 * (passes/fold.c), so that a folded value and a computed one cannot differ.
 *
 * In double: the bodies compute in float and pass floats (widened exactly;
 * a max or min is one of its operands, so narrowing it back is exact too),
 * folding computes in double.
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
