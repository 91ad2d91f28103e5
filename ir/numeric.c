/* numeric.c - element conversions. See numeric.h. */
#include "numeric.h"

#include <math.h>
#include <string.h>

#include "../runtime/bf16.h"

float
mkc_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);
	} else if (exp) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man) {
		/* subnormal: value man * 2^-24 */
		float f = ldexpf((float)man, -24);
		return sign ? -f : f;
	} else {
		bits = sign;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t
mkc_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u)   /* inf or nan */
		return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
	if (ax >= 0x477ff000u)   /* rounds past the largest half */
		return sign | 0x7c00;
	if (ax < 0x38800000u) {  /* below the smallest normal: subnormal */
		float v;
		memcpy(&v, &ax, 4);
		return sign | (uint16_t)lrintf(v * 16777216.0f);  /* * 2^24 */
	}
	uint32_t r = ax + 0xfffu + ((ax >> 13) & 1);   /* round to nearest even */
	return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

/* runtime/bf16.h's, so that mkc rounds as the emitted code does */
float
mkc_bf16_to_float(uint16_t b)
{
	return mkc_rt_bf16(b);
}

uint16_t
mkc_float_to_bf16(float f)
{
	return mkc_rt_to_bf16(f);
}

double
mkc_load_double(mkc_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case MKC_DT_FLOAT: return ((const float *)p)[i];
	case MKC_DT_DOUBLE: return ((const double *)p)[i];
	case MKC_DT_FLOAT16: return mkc_half_to_float(((const uint16_t *)p)[i]);
	case MKC_DT_BFLOAT16: return mkc_bf16_to_float(((const uint16_t *)p)[i]);
	case MKC_DT_UINT64: return (double)((const uint64_t *)p)[i];
	default: return (double)mkc_load_int(t, p, i);
	}
}

void
mkc_store_double(mkc_dtype t, void *p, int64_t i, double v)
{
	switch (t) {
	case MKC_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case MKC_DT_DOUBLE: ((double *)p)[i] = v; break;
	case MKC_DT_FLOAT16: ((uint16_t *)p)[i] = mkc_float_to_half((float)v); break;
	case MKC_DT_BFLOAT16: ((uint16_t *)p)[i] = mkc_float_to_bf16((float)v); break;
	case MKC_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: mkc_store_int(t, p, i, (int64_t)v); break;
	}
}

int64_t
mkc_load_int(mkc_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case MKC_DT_INT64: return ((const int64_t *)p)[i];
	case MKC_DT_INT32: return ((const int32_t *)p)[i];
	case MKC_DT_INT16: return ((const int16_t *)p)[i];
	case MKC_DT_INT8: return ((const int8_t *)p)[i];
	case MKC_DT_UINT8: return ((const uint8_t *)p)[i];
	case MKC_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	case MKC_DT_UINT16: return ((const uint16_t *)p)[i];
	case MKC_DT_UINT32: return ((const uint32_t *)p)[i];
	case MKC_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	default: return (int64_t)mkc_load_double(t, p, i);
	}
}

void
mkc_store_int(mkc_dtype t, void *p, int64_t i, int64_t v)
{
	switch (t) {
	case MKC_DT_INT64: ((int64_t *)p)[i] = v; break;
	case MKC_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case MKC_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case MKC_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case MKC_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case MKC_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case MKC_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case MKC_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case MKC_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	default: mkc_store_double(t, p, i, (double)v); break;
	}
}
