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
