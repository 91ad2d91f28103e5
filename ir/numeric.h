/*
 * numeric.h - element access for every dtype mkc reads: half and bfloat16
 * conversions, and loading or storing one element as a double (constant
 * folding, reference checks). Rounding to half and bfloat16 is to nearest
 * even, as the hardware does. The arrays need not be aligned (external data
 * lies at whatever offset its file gives).
 */
#ifndef MKC_NUMERIC_H
#define MKC_NUMERIC_H

#include "graph.h"

float mkc_half_to_float(uint16_t h);
uint16_t mkc_float_to_half(float f);
float mkc_bf16_to_float(uint16_t b);
uint16_t mkc_float_to_bf16(float f);

double mkc_load_double(mkc_dtype t, const void *data, int64_t i);
void mkc_store_double(mkc_dtype t, void *data, int64_t i, double v);
int64_t mkc_load_int(mkc_dtype t, const void *data, int64_t i);
void mkc_store_int(mkc_dtype t, void *data, int64_t i, int64_t v);

#endif
