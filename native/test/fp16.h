/*
 * The C tests' float32 <-> float16 / bfloat16 conversions (round to nearest even), for normal,
 * finite test values (the tests stay inside that range), and float32 bit views.
 */
#ifndef ACLEMU_TEST_FP16_H
#define ACLEMU_TEST_FP16_H

#include <stdint.h>
#include <string.h>

static float bits_f(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t f_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* float16 <-> float for normal, finite test values (the tests stay inside that range). */
static uint16_t to_half(float f)
{
    uint32_t x = f_bits(f), ax = x & 0x7fffffffu;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (ax < 0x38800000u) {
        return sign; /* below the normal range: the tests never go there */
    }
    uint32_t r = ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

static float from_half(uint16_t h)
{
    uint32_t e = (h >> 10) & 0x1fu;
    if (e == 0) {
        return (h & 0x8000u) ? -0.0f : 0.0f;
    }
    return bits_f(((uint32_t)(h & 0x8000u) << 16) | ((e + 112u) << 23) | ((uint32_t)(h & 0x3ffu) << 13));
}

static uint16_t to_bf16(float f)
{
    uint32_t x = f_bits(f);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float from_bf16(uint16_t b) { return bits_f((uint32_t)b << 16); }

#endif
