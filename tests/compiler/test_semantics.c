/*
 * test_semantics.c - `mkc test` on the hand models (tests/models/hand,
 * made by gen_models.py) whose answers hang on a rule that is easy to get
 * wrong, each against a reference computed outside mkc: weights at odd
 * offsets in external data, a decode step's first token (an empty past).
 * Under `make sanitize` mkc and the emitted code run under AddressSanitizer
 * and UBSan, so undefined behaviour on the way fails the test too.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

static char out[1 << 16];

/* `mkc test ARGS`, its output in out; returns its exit status. */
static int
mkc_test(const char *args)
{
	return mkc_test_run(args, out, sizeof out);
}

/*
 * hand/ext_odd: W at byte 1 and c at byte 49 of odd.bin. Folding Mul(c, 2)
 * read c, and --weights bf16 converted W, as float arrays in place: a
 * misaligned load, which UBSan reports.
 */
Test(semantics, external_data_at_odd_offsets, .timeout = 120)
{
	cr_assert_eq(mkc_test("tests/models/hand/ext_odd"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	cr_assert_eq(mkc_test("--weights bf16 --tolerance 1e-2 tests/models/hand/ext_odd"), 0, "%s",
		     out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}

/*
 * hand/first_step: a decode step at past_len 0, the first token of a
 * sequence. Its past is empty (no data), which mkc test's decoy past copied
 * with memcpy from NULL, undefined even for 0 bytes (UBSan's nonnull check).
 */
Test(semantics, first_decode_step_has_an_empty_past, .timeout = 120)
{
	cr_assert_eq(mkc_test("tests/models/hand/first_step"), 0, "%s", out);
	cr_assert(strstr(out, "(KV caches in place)"), "the past must become a cache: %s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}

/*
 * hand/nan_propagation: Max, Min (2 and 3 operands), Relu and ReduceMax
 * over NaNs in every position, at run time and folded, against ONNX's
 * reference: a NaN operand gives NaN. fmaxf and fminf gave the other
 * operand, Relu's compare 0, folding the second operand of a compare.
 */
Test(semantics, nan_propagates_through_max_min_relu_and_reduce_max, .timeout = 120)
{
	cr_assert_eq(mkc_test("tests/models/hand/nan_propagation"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}

/*
 * hand/pow_types: an int32 or int64 base to a float power (4^1.5 is 8: the
 * exponent was read as an integer, 4^1 = 4), a float base to an int64
 * power, and an int32 base to a float power folded; onnxruntime's outputs.
 */
Test(semantics, pow_of_an_integer_base_to_a_float_power, .timeout = 120)
{
	cr_assert_eq(mkc_test("tests/models/hand/pow_types"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}

/*
 * hand/norm_broadcast: LayerNormalization and RMSNormalization whose scale
 * and bias broadcast to X as the spec allows (per row, across rows, one
 * value, all of X, a scale and a bias of different sizes, axis 0, a scale
 * repeating inside the normalised part), against onnxruntime; with the
 * scales stored as bf16 too, and on a shuffled queue. Rows read entry
 * j % (the scale's count), the bias by the scale's count too (out of
 * bounds for a one-value bias), and [3,1] or [1,8] were refused.
 */
Test(semantics, norm_scales_and_biases_broadcast, .timeout = 120)
{
	const char *m = "tests/models/hand/norm_broadcast";
	char args[256];
	cr_assert_eq(mkc_test(m), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	/* the one that compiled before, alone: its bias was read past its one value */
	cr_assert_eq(mkc_test("tests/models/hand/norm_one_bias"), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	snprintf(args, sizeof args, "--weights bf16 --tolerance 1e-2 --shuffle 3 --threads 4 %s", m);
	cr_assert_eq(mkc_test(args), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
}
