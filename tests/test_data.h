/*
 * test_data.h - the random test data that the body tests share
 * (tests/backends/test_bodies.c on the CPU, tests/gpu/bodies.cu on the
 * GPU): a fixed linear congruential sequence, so every run sees the same
 * inputs, and float32 rounded to bf16 as mkc stores bf16 weights.
 */
#include <stdint.h>
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
