/*
 * Element access for float32 / float16 / bfloat16 views (and float64 / int32, which only bilinear
 * calls with equal sizes accept: V1 copies them, V2 casts them to float32 and back). Half and bf16 are widened exactly to float;
 * results are rounded once to nearest-even, NaN stays NaN (canonical 0x7E00 with sign for half and
 * 0x7FC0 for bf16, as c10::Half / c10::BFloat16 do).
 */
#ifndef ACLEMU_DTYPE_H
#define ACLEMU_DTYPE_H

#include "opapi.h"

#include <math.h>
#include <string.h>

static inline float emu_bits_to_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint32_t emu_float_to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline float emu_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        float mag = (float)man * 0x1p-24f; /* subnormal (or zero): exact */
        return emu_bits_to_float(emu_float_to_bits(mag) | sign);
    }
    if (exp == 31) {
        return emu_bits_to_float(sign | 0x7f800000u | (man << 13));
    }
    return emu_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t emu_float_to_half(float f)
{
    uint32_t x = emu_float_to_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return (uint16_t)(sign | 0x7e00u);
    }
    if (ax >= 0x477ff000u) { /* >= 65520 rounds to infinity (and infinity itself) */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (ax >= 0x38800000u) { /* normal half: rebias, round the 13 dropped bits to nearest even */
        uint32_t r = ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1u);
        return (uint16_t)(sign | (r >> 13));
    }
    /* subnormal half: value / 2^-24 rounded to an integer, nearest even (exact scaling first) */
    float a = emu_bits_to_float(ax) * 0x1p24f;
    const float big = 8388608.0f; /* 2^23: adding it rounds to an integer, ties to even */
    float r = (a + big) - big;
    return (uint16_t)(sign | (uint16_t)r);
}

static inline float emu_bf16_to_float(uint16_t b) { return emu_bits_to_float((uint32_t)b << 16); }

static inline uint16_t emu_float_to_bf16(float f)
{
    uint32_t x = emu_float_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return 0x7fc0u;
    }
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline size_t emu_dtype_size(int32_t dtype)
{
    return dtype == ACL_DOUBLE ? 8u : dtype == ACL_FLOAT || dtype == ACL_INT32 ? 4u : dtype == ACL_UINT8 ? 1u : 2u;
}

/*
 * float32 -> int32 as the op_api's Cast back to an int32 out does it: toward zero, saturating, NaN 0.
 * OPEN: the Cast kernel's rounding for float32 -> int32 is not in the public ops-cv source (the
 * torch / TBE convention, truncation, is assumed); only non-integral results depend on it.
 */
static inline int32_t emu_float_to_int32(float v)
{
    if (v != v) {
        return 0;
    }
    if (v >= 2147483648.0f) {
        return INT32_MAX;
    }
    if (v <= -2147483648.0f) {
        return INT32_MIN;
    }
    return (int32_t)v;
}

/* Element at element index `i` (relative to data, offset included by the caller). */
static inline float emu_load(const unsigned char *data, int32_t dtype, int64_t i)
{
    if (dtype == ACL_FLOAT) {
        float f;
        memcpy(&f, data + i * 4, 4);
        return f;
    }
    if (dtype == ACL_DOUBLE) { /* the op_api's Cast to float32: RNE */
        double d;
        memcpy(&d, data + i * 8, 8);
        return (float)d;
    }
    if (dtype == ACL_INT32) { /* Cast to float32: RNE past 2^24 */
        int32_t k;
        memcpy(&k, data + i * 4, 4);
        return (float)k;
    }
    uint16_t h;
    memcpy(&h, data + i * 2, 2);
    return dtype == ACL_FLOAT16 ? emu_half_to_float(h) : emu_bf16_to_float(h);
}

static inline void emu_store(unsigned char *data, int32_t dtype, int64_t i, float v)
{
    if (dtype == ACL_FLOAT) {
        memcpy(data + i * 4, &v, 4);
        return;
    }
    if (dtype == ACL_DOUBLE) { /* Cast float32 -> float64: exact */
        double d = (double)v;
        memcpy(data + i * 8, &d, 8);
        return;
    }
    if (dtype == ACL_INT32) {
        int32_t k = emu_float_to_int32(v);
        memcpy(data + i * 4, &k, 4);
        return;
    }
    uint16_t h = dtype == ACL_FLOAT16 ? emu_float_to_half(v) : emu_float_to_bf16(v);
    memcpy(data + i * 2, &h, 2);
}

/* a * b + c: one rounding (fmaf) when the launch's contraction switch fuses it, else two (the
 * emulator is built with -ffp-contract=off). */
static inline float emu_madd(float a, float b, float c, int fma)
{
    return fma ? fmaf(a, b, c) : a * b + c;
}

#endif
