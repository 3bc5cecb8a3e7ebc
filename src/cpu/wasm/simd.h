/*
 * Shared by the WebAssembly SIMD kernels of the CPU backend (built by tools/build_wasm.ts into
 * kernels_wasm.ts): dtype codes, vector constants, float16/bfloat16 conversions (scalar and four
 * lanes at a time) and element access in any dtype.
 *
 * Every kernel reproduces, per output element, the exact float32 operation sequence of the
 * TypeScript kernels (src/cpu/pytorch/backward/nearest_exact.ts, src/cpu/pytorch/backward/bilinear.ts), so results are the same bits:
 * vector lanes never mix elements, adds are never reassociated (-ffp-contract=off, no fast-math).
 * Tensors are contiguous planes ([N * C] planes of H x W); float16/bfloat16 rows are widened to
 * float32 exactly, accumulated in float32 and rounded once to nearest even (NaN -> the quiet NaN).
 */

#ifndef KERNELS_SIMD_H
#define KERNELS_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <wasm_simd128.h>

#define EXPORT(name) __attribute__((export_name(#name)))

enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2 };

/*
 * Vector constants are built from K(c) = splat(c + kzero): V8 re-materialises every v128.const at
 * each use inside loops (several instructions), while clang hoists K(c) out of the loop into a
 * local, since it cannot fold kzero (an external global that nobody changes; convert.c).
 */
extern int32_t kzero;
#define K(c) wasm_i32x4_splat((int32_t)(c) + kzero)
#define KF(c) wasm_f32x4_splat((float)(c) + (float)kzero)

/* Tails of vector loops run fewer than 8 times: keep clang from vectorizing them again. */
#define SCALAR_TAIL _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")

/*
 * Marks an extend or saturating narrow that must stay one instruction. clang-16 rewrote those whose
 * range it could prove into generic byte shuffles (several instructions each in V8), and an empty
 * inline asm on the value kept them; clang-19, the pinned toolchain (tools/build_wasm.ts), keeps the
 * single instruction (the built module has every narrow and extend) and its wasm backend cannot
 * split a v128 inline-asm operand ("Do not know how to split this operator's operand!"), so the
 * barrier is now the identity.
 */
static inline v128_t opaque(v128_t v) { return v; }

typedef union {
  float f;
  uint32_t u;
} bits32;

/* ---------------------------------------------------------------- conversions */

static inline float f16_to_f32(uint16_t h) {
  bits32 v;
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t em = h & 0x7fff;
  if (em >= 0x7c00) {
    v.u = sign | 0x7f800000 | ((em & 0x3ff) << 13);
    return v.f;
  }
  /* Exact for normals and subnormals: scale the shifted bits by 2^112. */
  v.u = em << 13;
  v.f *= 0x1p112f;
  v.u |= sign;
  return v.f;
}

static inline uint16_t f32_to_f16(float x) {
  bits32 v = {.f = x};
  uint32_t sign = (v.u >> 16) & 0x8000;
  uint32_t a = v.u & 0x7fffffff;
  if (a > 0x7f800000) return 0x7e00;
  if (a >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (a < 0x38800000) {
    /* Subnormal (or zero) half: adding 0.5 aligns the mantissa so the FPU rounds to nearest even. */
    bits32 t = {.u = a};
    t.f += 0.5f;
    return (uint16_t)(sign | (t.u - 0x3f000000));
  }
  uint32_t odd = (a >> 13) & 1;
  a += 0xc8000fff + odd; /* rebias the exponent by -112 and round to nearest even */
  return (uint16_t)(sign | (a >> 13));
}

static inline float bf16_to_f32(uint16_t h) {
  bits32 v = {.u = (uint32_t)h << 16};
  return v.f;
}

static inline uint16_t f32_to_bf16(float x) {
  bits32 v = {.f = x};
  uint32_t u = v.u;
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* float16 bits (low halves of four u32 lanes) to float32, exactly, as f16_to_f32: sign and
 * exponent-mantissa moved into float32 position (h << 16, arithmetic >> 3, mask), then scaled by
 * 2^112 (exact for normals and subnormals, sign kept); infinities and NaNs, rare, get exponent 255. */
static inline v128_t f16x4_to_f32(v128_t h) {
  v128_t t = wasm_v128_and(wasm_i32x4_shr(wasm_i32x4_shl(h, 16), 3), K(0x8fffe000));
  v128_t f = wasm_f32x4_mul(t, KF(0x1p112f));
  v128_t special = wasm_i32x4_gt(wasm_v128_and(t, K(0x7fffffff)), K(0x0f7fffff));
  if (wasm_v128_any_true(special)) {
    f = wasm_v128_bitselect(wasm_v128_or(t, K(0x7f800000)), f, special);
  }
  return f;
}

/* float32 to float16 bits (in u32 lanes) for values whose rounded magnitude is a normal float16
 * (in [2^-14, 65520)): rebias the exponent and round to nearest even. `ok` gets, per lane, whether
 * the value is in that range: a + 0x47800000 wraps [0x38800000, 0x477ff000) onto the lowest signed
 * integers, so one signed compare tests both ends. */
static inline v128_t f32x4_to_f16_normal(v128_t x, v128_t *ok) {
  v128_t sign = wasm_v128_and(wasm_u32x4_shr(x, 16), K(0x8000));
  v128_t a = wasm_v128_and(x, K(0x7fffffff));
  v128_t odd = wasm_v128_and(wasm_u32x4_shr(a, 13), K(1));
  v128_t normal = wasm_u32x4_shr(wasm_i32x4_add(wasm_i32x4_add(a, K(0xc8000fff)), odd), 13);
  *ok = wasm_i32x4_lt(wasm_i32x4_add(a, K(0x47800000)), K(0x8efff000));
  return wasm_v128_or(normal, sign);
}

/* float32 to float16 bits (in u32 lanes), nearest even, as f32_to_f16, for any value. */
static inline v128_t f32x4_to_f16_any(v128_t x) {
  v128_t sign = wasm_v128_and(wasm_u32x4_shr(x, 16), K(0x8000));
  v128_t a = wasm_v128_and(x, K(0x7fffffff));
  v128_t odd = wasm_v128_and(wasm_u32x4_shr(a, 13), K(1));
  v128_t normal = wasm_u32x4_shr(wasm_i32x4_add(wasm_i32x4_add(a, K(0xc8000fff)), odd), 13);
  v128_t sub = wasm_i32x4_sub(wasm_f32x4_add(a, KF(0.5f)), K(0x3f000000));
  v128_t r = wasm_v128_bitselect(sub, normal, wasm_i32x4_lt(a, K(0x38800000)));
  r = wasm_v128_bitselect(K(0x7c00), r, wasm_i32x4_ge(a, K(0x477ff000)));
  r = wasm_v128_or(r, sign);
  return wasm_v128_bitselect(K(0x7e00), r, wasm_i32x4_gt(a, K(0x7f800000)));
}

/* float32 to float16 bits (in u32 lanes), nearest even, as f32_to_f16. Magnitudes are compared as
 * signed integers (they are below 2^31), which SSE does in one instruction. When all four values
 * are in the normal float16 range (the common case) only the rebias-and-round remains. */
static inline v128_t f32x4_to_f16(v128_t x) {
  v128_t ok, r = f32x4_to_f16_normal(x, &ok);
  return wasm_i32x4_all_true(ok) ? r : f32x4_to_f16_any(x);
}

/* float32 to bfloat16 bits (in u32 lanes), nearest even, as f32_to_bf16. */
static inline v128_t f32x4_to_bf16(v128_t u) {
  v128_t odd = wasm_v128_and(wasm_u32x4_shr(u, 16), K(1));
  v128_t r = wasm_u32x4_shr(wasm_i32x4_add(wasm_i32x4_add(u, K(0x7fff)), odd), 16);
  v128_t nan = wasm_i32x4_gt(wasm_v128_and(u, K(0x7fffffff)),
                             K(0x7f800000));
  return wasm_v128_bitselect(K(0x7fc0), r, nan);
}

/* A vector of eight 16-bit values as float32: elements 0, 2, 4, 6 (even) and 1, 3, 5, 7 (odd).
 * A 16-bit pair is one 32-bit lane (even value low, odd value high): a mask and a shift split it. */
static inline void split_pairs(int dtype, v128_t pairs, v128_t *even, v128_t *odd) {
  if (dtype == DT_BF16) {
    *even = wasm_i32x4_shl(pairs, 16);
    *odd = wasm_v128_and(pairs, K(0xffff0000));
  } else {
    /* As f16x4_to_f32, both halves at once: the high half is already in place for the shift. */
    v128_t te = wasm_v128_and(wasm_i32x4_shr(wasm_i32x4_shl(pairs, 16), 3), K(0x8fffe000));
    v128_t to = wasm_v128_and(wasm_i32x4_shr(pairs, 3), K(0x8fffe000));
    *even = wasm_f32x4_mul(te, KF(0x1p112f));
    *odd = wasm_f32x4_mul(to, KF(0x1p112f));
    /* One test for the eight halves: any exponent of 31 (infinity or NaN)? */
    v128_t exps = wasm_v128_and(pairs, K(0x7c007c00));
    if (wasm_v128_any_true(wasm_i16x8_eq(exps, K(0x7c007c00)))) {
      *even = f16x4_to_f32(wasm_v128_and(pairs, K(0xffff)));
      *odd = f16x4_to_f32(wasm_u32x4_shr(pairs, 16));
    }
  }
}

/* Eight float32 values (lo: 0..3, hi: 4..7) rounded to float16/bfloat16 bits, nearest even.
 * float16: one range test for the eight values. */
static inline v128_t narrow8(int dtype, v128_t lo, v128_t hi) {
  v128_t a, b;
  if (dtype == DT_BF16) {
    a = f32x4_to_bf16(lo);
    b = f32x4_to_bf16(hi);
  } else {
    v128_t okA, okB;
    a = f32x4_to_f16_normal(lo, &okA);
    b = f32x4_to_f16_normal(hi, &okB);
    if (!wasm_i32x4_all_true(wasm_v128_and(okA, okB))) {
      a = f32x4_to_f16_any(lo);
      b = f32x4_to_f16_any(hi);
    }
  }
  /* Lanes hold values <= 0xffff, so the saturating narrow is exact. */
  return wasm_u16x8_narrow_i32x4(opaque(a), opaque(b));
}

/* Whether any of the eight float16 values of a vector is an infinity or a NaN (exponent 31), as a
 * mask to OR with others before one test. */
static inline v128_t f16x8_special(v128_t h) {
  return wasm_i16x8_eq(wasm_v128_and(h, K(0x7c007c00)), K(0x7c007c00));
}

/* split_pairs for float16 with no infinity or NaN among the eight (see f16x8_special). */
static inline void split_pairs_f16_finite(v128_t pairs, v128_t *even, v128_t *odd) {
  v128_t te = wasm_v128_and(wasm_i32x4_shr(wasm_i32x4_shl(pairs, 16), 3), K(0x8fffe000));
  v128_t to = wasm_v128_and(wasm_i32x4_shr(pairs, 3), K(0x8fffe000));
  *even = wasm_f32x4_mul(te, KF(0x1p112f));
  *odd = wasm_f32x4_mul(to, KF(0x1p112f));
}

/* Eight float32 sums (lo: 0..3, hi: 4..7) to float16 bits, rebiased and rounded to nearest even as
 * if every value were a normal float16; `bad` (u16 lanes) is raised to >= 0x7800 where one is not
 * (zero, subnormal, overflow or NaN: the magnitude bits then fall outside [0x400, 0x7bff]). */
static inline v128_t narrow8_f16_normal(v128_t lo, v128_t hi, v128_t *bad) {
  v128_t a = wasm_v128_and(lo, K(0x7fffffff)), b = wasm_v128_and(hi, K(0x7fffffff));
  v128_t ra = wasm_i32x4_add(wasm_i32x4_add(a, K(0xc8000fff)),
                             wasm_v128_and(wasm_u32x4_shr(a, 13), K(1)));
  v128_t rb = wasm_i32x4_add(wasm_i32x4_add(b, K(0xc8000fff)),
                             wasm_v128_and(wasm_u32x4_shr(b, 13), K(1)));
  /* Saturating: magnitudes above 0xffff (wrapped tiny values, NaNs) become 0xffff, also bad. */
  v128_t m = wasm_u16x8_narrow_i32x4(opaque(wasm_u32x4_shr(ra, 13)), opaque(wasm_u32x4_shr(rb, 13)));
  *bad = wasm_u16x8_max(*bad, wasm_i16x8_sub(m, K(0x04000400)));
  v128_t sign = wasm_i16x8_narrow_i32x4(opaque(wasm_i32x4_shr(lo, 16)), opaque(wasm_i32x4_shr(hi, 16)));
  return wasm_v128_or(m, wasm_v128_and(sign, K(0x80008000)));
}

/* Rows of n values: float16/bfloat16 bits to float32 and back (convert.c). The kernels are one
 * translation unit (kernels.c includes every part), so these stay static and inlinable. */
static void widen(int dtype, const uint16_t *src, float *dst, int n);
static void narrow(int dtype, const float *src, uint16_t *dst, int n);

/* Four float16/bfloat16 values as float32, exactly. */
static inline v128_t load4_wide(int dtype, const uint16_t *p) {
  v128_t h = opaque(wasm_u32x4_extend_low_u16x8(wasm_v128_load64_zero(p)));
  return dtype == DT_BF16 ? wasm_i32x4_shl(h, 16) : f16x4_to_f32(h);
}

/* Four float32 values rounded to float16/bfloat16, nearest even. */
static inline void store4_narrow(int dtype, uint16_t *p, v128_t x) {
  v128_t bits = opaque(dtype == DT_BF16 ? f32x4_to_bf16(x) : f32x4_to_f16(x));
  wasm_v128_store64_lane(p, wasm_u16x8_narrow_i32x4(bits, bits), 0);
}

/* Element i of a float32/float16/bfloat16 array as float32. */
static inline float loadf(int dtype, const void *p, size_t i) {
  if (dtype == DT_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  return dtype == DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

/* Stores x as element i, rounded once to float16/bfloat16. */
static inline void storef(int dtype, void *p, size_t i, float x) {
  if (dtype == DT_F32) {
    ((float *)p)[i] = x;
  } else {
    ((uint16_t *)p)[i] = dtype == DT_BF16 ? f32_to_bf16(x) : f32_to_f16(x);
  }
}

/* Elements i, i + 2, i + 4, i + 6 (even) and i + 1, ..., i + 7 (odd) as float32 vectors. */
static inline void load8_even_odd(int dtype, const void *p, size_t i, v128_t *even, v128_t *odd) {
  if (dtype == DT_F32) {
    v128_t lo = wasm_v128_load((const float *)p + i), hi = wasm_v128_load((const float *)p + i + 4);
    *even = wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6);
    *odd = wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7);
    return;
  }
  split_pairs(dtype, wasm_v128_load((const uint16_t *)p + i), even, odd);
}

static inline v128_t load4v(int dtype, const void *p, size_t i) {
  return dtype == DT_F32 ? wasm_v128_load((const float *)p + i)
                         : load4_wide(dtype, (const uint16_t *)p + i);
}

/* Eight values (lo: i .. i + 3, hi: i + 4 .. i + 7), rounded once for float16/bfloat16. */
static inline void store8v(int dtype, void *p, size_t i, v128_t lo, v128_t hi) {
  if (dtype == DT_F32) {
    wasm_v128_store((float *)p + i, lo);
    wasm_v128_store((float *)p + i + 4, hi);
  } else {
    wasm_v128_store((uint16_t *)p + i, narrow8(dtype, lo, hi));
  }
}

static inline void store4v(int dtype, void *p, size_t i, v128_t x) {
  if (dtype == DT_F32) {
    wasm_v128_store((float *)p + i, x);
  } else {
    store4_narrow(dtype, (uint16_t *)p + i, x);
  }
}

#endif
