/*
 * WebAssembly SIMD kernels of the CPU backend (built by tools/build_wasm.ts into kernels_wasm.ts).
 *
 * Every kernel reproduces, per output element, the exact float32 operation sequence of the
 * TypeScript kernels (src/cpu/nearest_exact.ts, src/cpu/bilinear.ts), so results are the same bits:
 * vector lanes never mix elements, adds are never reassociated (-ffp-contract=off, no fast-math).
 *
 * Tensors are contiguous planes ([N * C] planes of H x W); float16/bfloat16 rows are widened to
 * float32 exactly, accumulated in float32 and rounded once to nearest even (NaN -> the quiet NaN).
 */

#include <stddef.h>
#include <stdint.h>
#include <wasm_simd128.h>

#define EXPORT(name) __attribute__((export_name(#name)))

enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2 };

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

/* float16 bits (low halves of four u32 lanes) to float32, exactly, as f16_to_f32. */
static inline v128_t f16x4_to_f32(v128_t h) {
  v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
  v128_t em = wasm_v128_and(h, wasm_i32x4_splat(0x7fff));
  v128_t shifted = wasm_i32x4_shl(em, 13);
  v128_t scaled = wasm_f32x4_mul(shifted, wasm_f32x4_splat(0x1p112f));
  v128_t special = wasm_v128_or(shifted, wasm_i32x4_splat(0x7f800000));
  v128_t isSpecial = wasm_i32x4_ge(em, wasm_i32x4_splat(0x7c00));
  return wasm_v128_or(sign, wasm_v128_bitselect(special, scaled, isSpecial));
}

/* float32 to float16 bits (in u32 lanes), nearest even, as f32_to_f16. */
static inline v128_t f32x4_to_f16(v128_t x) {
  v128_t sign = wasm_v128_and(wasm_u32x4_shr(x, 16), wasm_i32x4_splat(0x8000));
  v128_t a = wasm_v128_and(x, wasm_i32x4_splat(0x7fffffff));
  v128_t odd = wasm_v128_and(wasm_u32x4_shr(a, 13), wasm_i32x4_splat(1));
  v128_t normal = wasm_u32x4_shr(
      wasm_i32x4_add(wasm_i32x4_add(a, wasm_i32x4_splat((int32_t)0xc8000fff)), odd), 13);
  v128_t sub = wasm_i32x4_sub(wasm_f32x4_add(a, wasm_f32x4_splat(0.5f)),
                              wasm_i32x4_splat(0x3f000000));
  v128_t r = wasm_v128_bitselect(sub, normal, wasm_u32x4_lt(a, wasm_i32x4_splat(0x38800000)));
  r = wasm_v128_bitselect(wasm_i32x4_splat(0x7c00), r,
                          wasm_u32x4_ge(a, wasm_i32x4_splat(0x477ff000)));
  r = wasm_v128_or(r, sign);
  return wasm_v128_bitselect(wasm_i32x4_splat(0x7e00), r,
                             wasm_u32x4_gt(a, wasm_i32x4_splat(0x7f800000)));
}

/* float32 to bfloat16 bits (in u32 lanes), nearest even, as f32_to_bf16. */
static inline v128_t f32x4_to_bf16(v128_t u) {
  v128_t odd = wasm_v128_and(wasm_u32x4_shr(u, 16), wasm_i32x4_splat(1));
  v128_t r = wasm_u32x4_shr(wasm_i32x4_add(wasm_i32x4_add(u, wasm_i32x4_splat(0x7fff)), odd), 16);
  v128_t nan = wasm_u32x4_gt(wasm_v128_and(u, wasm_i32x4_splat(0x7fffffff)),
                             wasm_i32x4_splat(0x7f800000));
  return wasm_v128_bitselect(wasm_i32x4_splat(0x7fc0), r, nan);
}

static void widen(int dtype, const uint16_t *src, float *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t h = wasm_v128_load(src + i);
    v128_t lo = wasm_u32x4_extend_low_u16x8(h), hi = wasm_u32x4_extend_high_u16x8(h);
    if (dtype == DT_BF16) {
      lo = wasm_i32x4_shl(lo, 16);
      hi = wasm_i32x4_shl(hi, 16);
    } else {
      lo = f16x4_to_f32(lo);
      hi = f16x4_to_f32(hi);
    }
    wasm_v128_store(dst + i, lo);
    wasm_v128_store(dst + i + 4, hi);
  }
  for (; i < n; i++) dst[i] = dtype == DT_BF16 ? bf16_to_f32(src[i]) : f16_to_f32(src[i]);
}

static void narrow(int dtype, const float *src, uint16_t *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t lo = wasm_v128_load(src + i), hi = wasm_v128_load(src + i + 4);
    if (dtype == DT_BF16) {
      lo = f32x4_to_bf16(lo);
      hi = f32x4_to_bf16(hi);
    } else {
      lo = f32x4_to_f16(lo);
      hi = f32x4_to_f16(hi);
    }
    /* Lanes hold values <= 0xffff, so the saturating narrow is exact. */
    wasm_v128_store(dst + i, wasm_u16x8_narrow_i32x4(lo, hi));
  }
  for (; i < n; i++) dst[i] = dtype == DT_BF16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
}

/** Widens `n` float16 (dtype 1) or bfloat16 (dtype 2) values to float32. */
EXPORT(widen_to_f32) void widen_to_f32(int dtype, const uint16_t *src, float *dst, int n) {
  widen(dtype, src, dst, n);
}

/** Rounds `n` float32 values to float16 (dtype 1) or bfloat16 (dtype 2), nearest even. */
EXPORT(narrow_from_f32) void narrow_from_f32(int dtype, const float *src, uint16_t *dst, int n) {
  narrow(dtype, src, dst, n);
}

/* ---------------------------------------------------------------- nearest-exact */

/*
 * acc[iw] (+)= src[ow] over the outputs ow of input iw, in ascending ow, in float32. `first`: the
 * sums start from +0 (as PyTorch's zeroed gradInput) rather than from acc. An accumulator that
 * starts at +0 can never become -0 under round-to-nearest, so adding a padding +0 changes nothing.
 */
static void accumulate_row(float *restrict acc, const float *restrict src, int first, int inW,
                           int factor, const int32_t *restrict starts, int maxRange) {
  int iw = 0;
  const v128_t zero = wasm_f32x4_splat(0.0f);
  if (factor == 1) {
    for (; iw + 4 <= inW; iw += 4) {
      v128_t a = first ? zero : wasm_v128_load(acc + iw);
      wasm_v128_store(acc + iw, wasm_f32x4_add(a, wasm_v128_load(src + iw)));
    }
    for (; iw < inW; iw++) acc[iw] = (first ? 0.0f : acc[iw]) + src[iw];
    return;
  }
  if (factor == 2) {
    for (; iw + 4 <= inW; iw += 4) {
      v128_t lo = wasm_v128_load(src + 2 * iw), hi = wasm_v128_load(src + 2 * iw + 4);
      v128_t even = wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6);
      v128_t odd = wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7);
      v128_t a = first ? zero : wasm_v128_load(acc + iw);
      wasm_v128_store(acc + iw, wasm_f32x4_add(wasm_f32x4_add(a, even), odd));
    }
    for (; iw < inW; iw++) acc[iw] = ((first ? 0.0f : acc[iw]) + src[2 * iw]) + src[2 * iw + 1];
    return;
  }
  if (maxRange <= 2) {
    /* Ranges of 0, 1 or 2 outputs: two masked loads per cell, no data-dependent branch. */
    for (; iw < inW; iw++) {
      int s = starts[iw], len = starts[iw + 1] - s;
      int i0 = len > 0 ? s : 0, i1 = len > 1 ? s + 1 : 0;
      float a = (first ? 0.0f : acc[iw]) + (len > 0 ? src[i0] : 0.0f);
      acc[iw] = a + (len > 1 ? src[i1] : 0.0f);
    }
    return;
  }
  for (; iw < inW; iw++) {
    float a = first ? 0.0f : acc[iw];
    for (int ow = starts[iw], end = starts[iw + 1]; ow < end; ow++) a += src[ow];
    acc[iw] = a;
  }
}

/* The common 2x2 case in one pass: ((((+0 + a0) + a1) + b0) + b1) per cell. */
static void sum_two_rows_factor2(float *restrict acc, const float *restrict r0,
                                 const float *restrict r1, int inW) {
  const v128_t zero = wasm_f32x4_splat(0.0f);
  int iw = 0;
  for (; iw + 4 <= inW; iw += 4) {
    v128_t lo = wasm_v128_load(r0 + 2 * iw), hi = wasm_v128_load(r0 + 2 * iw + 4);
    v128_t a = wasm_f32x4_add(zero, wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6));
    a = wasm_f32x4_add(a, wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7));
    lo = wasm_v128_load(r1 + 2 * iw);
    hi = wasm_v128_load(r1 + 2 * iw + 4);
    a = wasm_f32x4_add(a, wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6));
    wasm_v128_store(acc + iw, wasm_f32x4_add(a, wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7)));
  }
  for (; iw < inW; iw++) {
    acc[iw] = (((0.0f + r0[2 * iw]) + r0[2 * iw + 1]) + r1[2 * iw]) + r1[2 * iw + 1];
  }
}

/*
 * Nearest-exact backward over `planes` contiguous planes (1d: inH = outH = 1). `hStarts`
 * (inH + 1) and `wStarts` (inW + 1) give the output range of each input index; `wFactor` is k
 * when input w owns exactly outputs [k w, k w + k) (else 0); `maxRange` bounds the w ranges.
 * `scratch` holds 3 * (outW + inW) + 8 floats for float16/bfloat16 rows.
 */
EXPORT(nearest_backward) void nearest_backward(int dtype, void *out, const void *grad, int planes,
                                               int inH, int inW, int outH, int outW,
                                               const int32_t *hStarts, const int32_t *wStarts,
                                               int wFactor, int maxRange, float *scratch) {
  const int wide = dtype == DT_F32;
  float *row0 = scratch, *row1 = scratch + outW + 4, *accRow = scratch + 2 * (outW + 4);
  for (int p = 0; p < planes; p++) {
    const size_t gPlane = (size_t)p * outH * outW, oPlane = (size_t)p * inH * inW;
    for (int ih = 0; ih < inH; ih++) {
      float *acc = wide ? (float *)out + oPlane + (size_t)ih * inW : accRow;
      int oh = hStarts[ih], end = hStarts[ih + 1];
      if (oh == end) {
        for (int iw = 0; iw < inW; iw++) acc[iw] = 0.0f;
      } else if (end - oh == 2 && wFactor == 2) {
        const float *a, *b;
        if (wide) {
          a = (const float *)grad + gPlane + (size_t)oh * outW;
          b = a + outW;
        } else {
          const uint16_t *g = (const uint16_t *)grad + gPlane + (size_t)oh * outW;
          widen(dtype, g, row0, outW);
          widen(dtype, g + outW, row1, outW);
          a = row0;
          b = row1;
        }
        sum_two_rows_factor2(acc, a, b, inW);
      } else {
        for (int first = 1; oh < end; oh++, first = 0) {
          const float *src;
          if (wide) {
            src = (const float *)grad + gPlane + (size_t)oh * outW;
          } else {
            widen(dtype, (const uint16_t *)grad + gPlane + (size_t)oh * outW, row0, outW);
            src = row0;
          }
          accumulate_row(acc, src, first, inW, wFactor, wStarts, maxRange);
        }
      }
      if (!wide) narrow(dtype, acc, (uint16_t *)out + oPlane + (size_t)ih * inW, inW);
    }
  }
}

/* ---------------------------------------------------------------- bilinear */

/*
 * Loads element `i` of four rows (any dtype) as one float32 vector, lane k = row k.
 */
static inline v128_t load4(int dtype, const void *const rows[4], int i) {
  if (dtype == DT_F32) {
    return wasm_f32x4_make(((const float *)rows[0])[i], ((const float *)rows[1])[i],
                           ((const float *)rows[2])[i], ((const float *)rows[3])[i]);
  }
  if (dtype == DT_BF16) {
    return wasm_f32x4_make(bf16_to_f32(((const uint16_t *)rows[0])[i]),
                           bf16_to_f32(((const uint16_t *)rows[1])[i]),
                           bf16_to_f32(((const uint16_t *)rows[2])[i]),
                           bf16_to_f32(((const uint16_t *)rows[3])[i]));
  }
  return wasm_f32x4_make(f16_to_f32(((const uint16_t *)rows[0])[i]),
                         f16_to_f32(((const uint16_t *)rows[1])[i]),
                         f16_to_f32(((const uint16_t *)rows[2])[i]),
                         f16_to_f32(((const uint16_t *)rows[3])[i]));
}

/*
 * Four float32 rows of 4 x n values, transposed so that out[4 i + k] = rows[k][i].
 */
static void gather4_f32(const float *const rows[4], float *restrict out, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    v128_t a = wasm_v128_load(rows[0] + i), b = wasm_v128_load(rows[1] + i);
    v128_t c = wasm_v128_load(rows[2] + i), d = wasm_v128_load(rows[3] + i);
    v128_t ab0 = wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), ab1 = wasm_i32x4_shuffle(a, b, 2, 6, 3, 7);
    v128_t cd0 = wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), cd1 = wasm_i32x4_shuffle(c, d, 2, 6, 3, 7);
    wasm_v128_store(out + 4 * i, wasm_i64x2_shuffle(ab0, cd0, 0, 2));
    wasm_v128_store(out + 4 * i + 4, wasm_i64x2_shuffle(ab0, cd0, 1, 3));
    wasm_v128_store(out + 4 * i + 8, wasm_i64x2_shuffle(ab1, cd1, 0, 2));
    wasm_v128_store(out + 4 * i + 12, wasm_i64x2_shuffle(ab1, cd1, 1, 3));
  }
  for (; i < n; i++) {
    wasm_v128_store(out + 4 * i, wasm_f32x4_make(rows[0][i], rows[1][i], rows[2][i], rows[3][i]));
  }
}

/*
 * Bilinear 2d backward over `planes` contiguous planes, four planes per pass with one plane per
 * vector lane: each lane runs PyTorch's scatter (output pixels in row-major order, updates 00, 01,
 * 10, 11, acc += fl32(fl32(lh * lw) * g)) on its own plane, so every plane gets the scalar bits.
 * Tables per output index: hI0, hI1, wI0, wI1 (int32) and hL0, hL1, wL0, wL1 (float32).
 * `work` holds 4 * inH * inW floats (the interleaved accumulators) + 4 * outW floats (one
 * transposed gradient row) + 4 * outW * 4 floats (corner weights of a row).
 */
EXPORT(bilinear_backward) void bilinear_backward(int dtype, void *out, const void *grad, int planes,
                                                 int inH, int inW, int outH, int outW,
                                                 const int32_t *hI0, const int32_t *hI1,
                                                 const float *hL0, const float *hL1,
                                                 const int32_t *wI0, const int32_t *wI1,
                                                 const float *wL0, const float *wL1, float *work) {
  const size_t inPlane = (size_t)inH * inW, outPlane = (size_t)outH * outW;
  const int size = dtype == DT_F32 ? 4 : 2;
  float *acc = work;
  float *gRow = acc + 4 * inPlane;
  float *k = gRow + 4 * (size_t)outW;
  const v128_t zero = wasm_f32x4_splat(0.0f);
  for (int p0 = 0; p0 < planes; p0 += 4) {
    /* A last partial group repeats its last plane in the spare lanes and writes only real ones. */
    int lanes = planes - p0 < 4 ? planes - p0 : 4;
    const char *gPlanes[4];
    for (int l = 0; l < 4; l++) {
      int p = p0 + (l < lanes ? l : lanes - 1);
      gPlanes[l] = (const char *)grad + (size_t)p * outPlane * size;
    }
    for (size_t i = 0; i < inPlane; i++) wasm_v128_store(acc + 4 * i, zero);
    for (int oh = 0; oh < outH; oh++) {
      const void *rows[4];
      for (int l = 0; l < 4; l++) rows[l] = gPlanes[l] + (size_t)oh * outW * size;
      if (dtype == DT_F32) {
        gather4_f32((const float *const *)rows, gRow, outW);
      } else {
        for (int ow = 0; ow < outW; ow++) wasm_v128_store(gRow + 4 * ow, load4(dtype, rows, ow));
      }
      const float lh0 = hL0[oh], lh1 = hL1[oh];
      /* Corner weights of this row, fl32(lh * lw), as the scalar kernel computes them. */
      for (int ow = 0; ow < outW; ow++) {
        k[4 * ow] = lh0 * wL0[ow];
        k[4 * ow + 1] = lh0 * wL1[ow];
        k[4 * ow + 2] = lh1 * wL0[ow];
        k[4 * ow + 3] = lh1 * wL1[ow];
      }
      float *r0 = acc + 4 * (size_t)hI0[oh] * inW, *r1 = acc + 4 * (size_t)hI1[oh] * inW;
      for (int ow = 0; ow < outW; ow++) {
        const v128_t g = wasm_v128_load(gRow + 4 * ow);
        float *a = r0 + 4 * wI0[ow], *b = r0 + 4 * wI1[ow];
        float *c = r1 + 4 * wI0[ow], *d = r1 + 4 * wI1[ow];
        /* Each update is stored before the next is loaded: corners may alias at the borders. */
        wasm_v128_store(a, wasm_f32x4_add(wasm_v128_load(a),
                                          wasm_f32x4_mul(wasm_v128_load32_splat(k + 4 * ow), g)));
        wasm_v128_store(b, wasm_f32x4_add(wasm_v128_load(b),
                                          wasm_f32x4_mul(wasm_v128_load32_splat(k + 4 * ow + 1), g)));
        wasm_v128_store(c, wasm_f32x4_add(wasm_v128_load(c),
                                          wasm_f32x4_mul(wasm_v128_load32_splat(k + 4 * ow + 2), g)));
        wasm_v128_store(d, wasm_f32x4_add(wasm_v128_load(d),
                                          wasm_f32x4_mul(wasm_v128_load32_splat(k + 4 * ow + 3), g)));
      }
    }
    /* De-interleave lane l into plane p0 + l. */
    for (int l = 0; l < lanes; l++) {
      char *o = (char *)out + (size_t)(p0 + l) * inPlane * size;
      if (dtype == DT_F32) {
        float *of = (float *)o;
        for (size_t i = 0; i < inPlane; i++) of[i] = acc[4 * i + l];
      } else {
        uint16_t *oh16 = (uint16_t *)o;
        if (dtype == DT_BF16) {
          for (size_t i = 0; i < inPlane; i++) oh16[i] = f32_to_bf16(acc[4 * i + l]);
        } else {
          for (size_t i = 0; i < inPlane; i++) oh16[i] = f32_to_f16(acc[4 * i + l]);
        }
      }
    }
  }
}
