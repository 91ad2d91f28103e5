/*
 * bf16.h - bfloat16 storage, the one definition: widen on load; narrow,
 * rounding to nearest even (a NaN stays a quiet NaN). Embedded after
 * runtime/common.h in every emitted file, and included by the compiler
 * (ir/numeric.c, for constant folding and the weights it converts) and the
 * tests, so that mkc, the emitted code and the references round alike.
 */
#ifndef MKC_HD
#define MKC_HD   /* outside an emitted file: host code */
#endif

static inline MKC_HD float
mkc_rt_bf16(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static inline MKC_HD uint16_t
mkc_rt_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}
