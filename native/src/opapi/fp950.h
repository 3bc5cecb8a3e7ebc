/*
 * Float32 arithmetic of the emulated Ascend 950 kernels. The emulator itself is built with
 * -ffp-contract=off (Makefile), so every C expression rounds after each operation; the one place the
 * arch35 compiler may fuse, a * b + c, goes through emu_madd (dtype.h), which fuses exactly when the launch's
 * `fma` switch says so (aclemuSetFmaContraction / ACLEMU_FMA, default on).
 */
#ifndef ACLEMU_FP950_H
#define ACLEMU_FP950_H

#include "dtype.h"

#include <math.h>
#include <stdint.h>

/* x rounded to the storage dtype and widened back (RNE; float32 unchanged). */
static inline float emu_round_to(int32_t dtype, float x)
{
    if (dtype == ACL_FLOAT16) {
        return emu_half_to_float(emu_float_to_half(x));
    }
    if (dtype == ACL_BF16) {
        return emu_bf16_to_float(emu_float_to_bf16(x));
    }
    return x;
}

/* An atomic add in the element's own dtype: the exact sum of two values of that dtype rounded once
 * (float32's sum of two float16 / bfloat16 values rounded again to 16 bits is that same value: 24
 * bits >= 2p + 2 for p = 11 and 8, so the double rounding is innocuous). */
static inline void emu_atomic_add(unsigned char *data, int32_t dtype, int64_t i, float v)
{
    emu_store(data, dtype, i, emu_load(data, dtype, i) + v);
}

/* Element offset of (n, c, h, w) in a view (sizes and strides in NCHW order, channels-last included). */
static inline int64_t emu_at(const emu_view *v, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return v->offset + n * v->strides[0] + c * v->strides[1] + h * v->strides[2] + w * v->strides[3];
}

/* (int64)ceilf(x) / (int64)floorf(x) without undefined behaviour: NaN gives 0, out of range saturates. */
static inline int64_t emu_f2i(float x)
{
    if (!(x == x)) {
        return 0;
    }
    if (x >= 9.2e18f) {
        return INT64_MAX;
    }
    if (x <= -9.2e18f) {
        return INT64_MIN;
    }
    return (int64_t)x;
}

#endif
