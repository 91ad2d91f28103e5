/*
 * bf16.h - bfloat16 and float16 storage, the one definition of each: widen
 * on load; narrow, rounding to nearest even (a NaN stays a quiet NaN). Embedded after
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

/*
 * float16 (IEEE binary16): the graph inputs and outputs of a float16
 * model, converted at its boundary (passes/half.c), and its weights,
 * widened as they are loaded. Integer arithmetic only, so that the host,
 * CUDA and HIP convert bit for bit alike; every float16 is a float32
 * exactly.
 */
static inline MKC_HD float
mkc_rt_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f)
		bits = sign | 0x7f800000u | (man << 13);
	else if (exp)
		bits = sign | ((exp + 112) << 23) | (man << 13);
	else if (man) {   /* subnormal: man * 2^-24, normal as a float32 */
		int s = 0;
		while (!(man & 0x400)) {
			man <<= 1;
			s++;
		}
		bits = sign | ((uint32_t)(113 - s) << 23) | ((man & 0x3ff) << 13);
	} else
		bits = sign;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline MKC_HD uint16_t
mkc_rt_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u)   /* inf or nan */
		return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
	if (ax >= 0x477ff000u)   /* rounds past the largest half */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x38800000u) {  /* below the smallest normal: a subnormal's man * 2^-24 */
		uint32_t e = ax >> 23;
		if (e < 102)     /* below 2^-25: rounds to zero */
			return sign;
		uint32_t m = (ax & 0x7fffffu) | 0x800000u, sh = 126 - e;
		uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
		q += rem > half || (rem == half && (q & 1));
		return (uint16_t)(sign | q);
	}
	uint32_t r = ax + 0xfffu + ((ax >> 13) & 1);   /* round to nearest even */
	return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/*
 * Element i of generate's logits: float32, or a float16 model's float16
 * (half). Unused in a file that cannot generate.
 */
static inline MKC_HD __attribute__((unused)) float
mkc_rt_logit(const void *x, int64_t i, int half)
{
	return half ? mkc_rt_half(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

/*
 * Element j of a float32 row at p, or of one stored as bf16 (a product's
 * input written narrow for the tensor-core tile: passes/narrow.c).
 */
static inline MKC_HD void
mkc_rt_put(void *p, int64_t j, int bf16, float v)
{
	if (bf16)
		((uint16_t *)p)[j] = mkc_rt_to_bf16(v);
	else
		((float *)p)[j] = v;
}

#if defined(__CUDACC__) || defined(__HIPCC__)
/* ...and elements 4q..4q+3 in one store: 16 bytes, or 8 as bf16 */
static inline MKC_HD void
mkc_rt_put4(void *p, int64_t q, int bf16, float4 v)
{
	if (bf16) {
		uint2 h = {(uint32_t)mkc_rt_to_bf16(v.x) | (uint32_t)mkc_rt_to_bf16(v.y) << 16,
			   (uint32_t)mkc_rt_to_bf16(v.z) | (uint32_t)mkc_rt_to_bf16(v.w) << 16};
		((uint2 *)p)[q] = h;
	} else {
		((float4 *)p)[q] = v;
	}
}
#endif
