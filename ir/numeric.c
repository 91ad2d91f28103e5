/* numeric.c - element conversions. See numeric.h. */
#include "numeric.h"

#include <math.h>
#include <string.h>

#include "../runtime/bf16.h"

/* runtime/bf16.h's, so that mkc rounds as the emitted code does */
float
mkc_half_to_float(uint16_t h)
{
	return mkc_rt_half(h);
}

uint16_t
mkc_float_to_half(float f)
{
	return mkc_rt_to_half(f);
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

/*
 * Element i of an array of T at p, read and written through memcpy: the
 * array may be unaligned (ONNX external data is mapped at the offset the
 * file gives, which need not be a multiple of the element's size, and
 * reading a float through a misaligned pointer is undefined).
 */
#define ELEMENT_ACCESS(name, T)                                                      \
	static T load_##name(const void *p, int64_t i)                               \
	{                                                                            \
		T v;                                                                 \
		memcpy(&v, (const unsigned char *)p + (size_t)i * sizeof v, sizeof v); \
		return v;                                                            \
	}                                                                            \
	static void store_##name(void *p, int64_t i, T v)                            \
	{                                                                            \
		memcpy((unsigned char *)p + (size_t)i * sizeof v, &v, sizeof v);     \
	}
ELEMENT_ACCESS(f32, float)
ELEMENT_ACCESS(f64, double)
ELEMENT_ACCESS(i64, int64_t)
ELEMENT_ACCESS(i32, int32_t)
ELEMENT_ACCESS(i16, int16_t)
ELEMENT_ACCESS(i8, int8_t)
ELEMENT_ACCESS(u64, uint64_t)
ELEMENT_ACCESS(u32, uint32_t)
ELEMENT_ACCESS(u16, uint16_t)
ELEMENT_ACCESS(u8, uint8_t)
#undef ELEMENT_ACCESS

double
mkc_load_double(mkc_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case MKC_DT_FLOAT: return load_f32(p, i);
	case MKC_DT_DOUBLE: return load_f64(p, i);
	case MKC_DT_FLOAT16: return mkc_half_to_float(load_u16(p, i));
	case MKC_DT_BFLOAT16: return mkc_bf16_to_float(load_u16(p, i));
	case MKC_DT_UINT64: return (double)load_u64(p, i);
	default: return (double)mkc_load_int(t, p, i);
	}
}

void
mkc_store_double(mkc_dtype t, void *p, int64_t i, double v)
{
	switch (t) {
	case MKC_DT_FLOAT: store_f32(p, i, (float)v); break;
	case MKC_DT_DOUBLE: store_f64(p, i, v); break;
	case MKC_DT_FLOAT16: store_u16(p, i, mkc_float_to_half((float)v)); break;
	case MKC_DT_BFLOAT16: store_u16(p, i, mkc_float_to_bf16((float)v)); break;
	case MKC_DT_BOOL: store_u8(p, i, v != 0); break;
	default: mkc_store_int(t, p, i, (int64_t)v); break;
	}
}

int64_t
mkc_load_int(mkc_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case MKC_DT_INT64: return load_i64(p, i);
	case MKC_DT_INT32: return load_i32(p, i);
	case MKC_DT_INT16: return load_i16(p, i);
	case MKC_DT_INT8: return load_i8(p, i);
	case MKC_DT_UINT8: return load_u8(p, i);
	case MKC_DT_BOOL: return load_u8(p, i) != 0;
	case MKC_DT_UINT16: return load_u16(p, i);
	case MKC_DT_UINT32: return load_u32(p, i);
	case MKC_DT_UINT64: return (int64_t)load_u64(p, i);
	default: return (int64_t)mkc_load_double(t, p, i);
	}
}

void
mkc_store_int(mkc_dtype t, void *p, int64_t i, int64_t v)
{
	switch (t) {
	case MKC_DT_INT64: store_i64(p, i, v); break;
	case MKC_DT_INT32: store_i32(p, i, (int32_t)v); break;
	case MKC_DT_INT16: store_i16(p, i, (int16_t)v); break;
	case MKC_DT_INT8: store_i8(p, i, (int8_t)v); break;
	case MKC_DT_UINT8: store_u8(p, i, (uint8_t)v); break;
	case MKC_DT_BOOL: store_u8(p, i, v != 0); break;
	case MKC_DT_UINT16: store_u16(p, i, (uint16_t)v); break;
	case MKC_DT_UINT32: store_u32(p, i, (uint32_t)v); break;
	case MKC_DT_UINT64: store_u64(p, i, (uint64_t)v); break;
	default: mkc_store_double(t, p, i, (double)v); break;
	}
}
