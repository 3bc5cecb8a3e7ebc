/* Nearest-exact backward (1d as 2d with one row): the exports nearest_backward and
 * nearest_scratch_bytes. */

#include "groups.h"

/* Output ranges up to this long are summed with masked loads instead of a loop. */
enum { MAX_SLOTS = 4 };

/*
 * acc[iw] (+)= the k = 1 or 2 outputs of input iw in row `row` of grad, ascending, in float32.
 * `first`: the sums start from +0 (PyTorch's zeroed gradInput), not from acc.
 */
static inline void accumulate_row_factor(float *restrict acc, int dtype, const void *grad,
                                         size_t row, int first, int inW, int factor) {
  int iw = 0;
  const v128_t zero = wasm_f32x4_splat(0.0f);
  if (factor == 1) {
    for (; iw + 4 <= inW; iw += 4) {
      v128_t a = first ? zero : wasm_v128_load(acc + iw);
      wasm_v128_store(acc + iw, wasm_f32x4_add(a, load4v(dtype, grad, row + iw)));
    }
    SCALAR_TAIL
    for (; iw < inW; iw++) acc[iw] = (first ? 0.0f : acc[iw]) + loadf(dtype, grad, row + iw);
    return;
  }
  for (; iw + 4 <= inW; iw += 4) {
    v128_t even, odd;
    load8_even_odd(dtype, grad, row + 2 * (size_t)iw, &even, &odd);
    v128_t a = first ? zero : wasm_v128_load(acc + iw);
    wasm_v128_store(acc + iw, wasm_f32x4_add(wasm_f32x4_add(a, even), odd));
  }
  SCALAR_TAIL
  for (; iw < inW; iw++) {
    float a = (first ? 0.0f : acc[iw]) + loadf(dtype, grad, row + 2 * (size_t)iw);
    acc[iw] = a + loadf(dtype, grad, row + 2 * (size_t)iw + 1);
  }
}

/* Outputs iw .. iw + 7 of a factor-2 row at element `at` (= 2 iw): elements at, at + 2, ... as
 * even and at + 1, ... as odd float32 vectors. float16 leaves its test for infinities and NaNs to
 * the caller: the lanes of `special` are set where an element has exponent 31 (then the caller
 * redoes these outputs in scalar code, and the vectors are unused). */
static inline __attribute__((always_inline)) void load16_pairs(const int dtype, const void *grad, size_t at, v128_t *e0,
                                v128_t *o0, v128_t *e1, v128_t *o1, v128_t *special) {
  if (dtype == DT_F16) {
    v128_t p = wasm_v128_load((const uint16_t *)grad + at);
    v128_t q = wasm_v128_load((const uint16_t *)grad + at + 8);
    *special = wasm_v128_or(*special, wasm_v128_or(f16x8_special(p), f16x8_special(q)));
    split_pairs_f16_finite(p, e0, o0);
    split_pairs_f16_finite(q, e1, o1);
  } else {
    load8_even_odd(dtype, grad, at, e0, o0);
    load8_even_odd(dtype, grad, at + 8, e1, o1);
  }
}

/* Cell iw of a factor-2 row summed from `rows` (1 or 2) gradient rows in scalar code:
 * ((+0 + a0) + a1) (+ b0) + b1. */
static inline void sum_cell_factor2(int dtype, void *out, size_t outRow, const void *grad,
                                    size_t row0, size_t row1, int rows, int iw) {
  size_t w = 2 * (size_t)iw;
  float a = ((0.0f + loadf(dtype, grad, row0 + w)) + loadf(dtype, grad, row0 + w + 1));
  if (rows == 2) a = (a + loadf(dtype, grad, row1 + w)) + loadf(dtype, grad, row1 + w + 1);
  storef(dtype, out, outRow + iw, a);
}

/* Rows of one gradient row (rows = 1, the 1d x2 case; row1 unused) or two straight into the
 * output row: ((+0 + a0) + a1) (+ b0) + b1 per cell, eight cells per step (float16/bfloat16: one
 * rounding step and one full store for the eight; float16 tests for infinities and NaNs once per
 * step). Measured (CPU time, alternating processes): 1d x2 float16 and bfloat16 ~2x faster than
 * through the accumulator row; for two rows the four-cell loop below stayed ~10 % faster. */
static inline __attribute__((always_inline)) void sum_rows_factor2(const int dtype, void *out, size_t outRow, const void *grad,
                                    size_t row0, size_t row1, const int rows, int inW) {
  const v128_t zero = wasm_f32x4_splat(0.0f);
  int iw = 0;
  for (; iw + 8 <= inW; iw += 8) {
    v128_t e0, o0, e1, o1, f0 = zero, p0 = zero, f1 = zero, p1 = zero;
    v128_t special = wasm_i32x4_splat(0);
    load16_pairs(dtype, grad, row0 + 2 * (size_t)iw, &e0, &o0, &e1, &o1, &special);
    if (rows == 2) load16_pairs(dtype, grad, row1 + 2 * (size_t)iw, &f0, &p0, &f1, &p1, &special);
    if (dtype == DT_F16 && wasm_v128_any_true(special)) {
      for (int k = 0; k < 8; k++) sum_cell_factor2(dtype, out, outRow, grad, row0, row1, rows, iw + k);
      continue;
    }
    v128_t a = wasm_f32x4_add(wasm_f32x4_add(zero, e0), o0);
    v128_t b = wasm_f32x4_add(wasm_f32x4_add(zero, e1), o1);
    if (rows == 2) {
      a = wasm_f32x4_add(wasm_f32x4_add(a, f0), p0);
      b = wasm_f32x4_add(wasm_f32x4_add(b, f1), p1);
    }
    store8v(dtype, out, outRow + iw, a, b);
  }
  SCALAR_TAIL
  for (; iw < inW; iw++) sum_cell_factor2(dtype, out, outRow, grad, row0, row1, rows, iw);
}

/* Cells per chunk of the float16 fast path (sum_rows_f16). */
enum { F16_CHUNK = 32 };

/* sum_rows_factor2 for float16, F16_CHUNK cells per step: the tests for infinities and NaNs among
 * the inputs and for sums outside the normal float16 range are accumulated over the chunk and
 * checked once; a chunk that fails either is redone by the exact general code. */
static inline __attribute__((always_inline)) void sum_rows_f16(void *out, size_t outRow,
                                                               const void *grad, size_t row0,
                                                               size_t row1, const int rows,
                                                               int inW) {
  const v128_t zero = wasm_f32x4_splat(0.0f);
  const uint16_t *g = (const uint16_t *)grad;
  uint16_t *o = (uint16_t *)out + outRow;
  int iw = 0;
  for (; iw + F16_CHUNK <= inW; iw += F16_CHUNK) {
    v128_t special = wasm_i32x4_splat(0), bad = wasm_i32x4_splat(0);
    for (int k = iw; k < iw + F16_CHUNK; k += 8) {
      const size_t w = 2 * (size_t)k;
      v128_t p = wasm_v128_load(g + row0 + w), q = wasm_v128_load(g + row0 + w + 8);
      special = wasm_u16x8_max(special, wasm_u16x8_max(wasm_i16x8_shl(p, 1), wasm_i16x8_shl(q, 1)));
      v128_t e0, o0, e1, o1;
      split_pairs_f16_finite(p, &e0, &o0);
      split_pairs_f16_finite(q, &e1, &o1);
      v128_t a = wasm_f32x4_add(wasm_f32x4_add(zero, e0), o0);
      v128_t b = wasm_f32x4_add(wasm_f32x4_add(zero, e1), o1);
      if (rows == 2) {
        v128_t r = wasm_v128_load(g + row1 + w), s = wasm_v128_load(g + row1 + w + 8);
        special = wasm_u16x8_max(special, wasm_u16x8_max(wasm_i16x8_shl(r, 1), wasm_i16x8_shl(s, 1)));
        split_pairs_f16_finite(r, &e0, &o0);
        split_pairs_f16_finite(s, &e1, &o1);
        a = wasm_f32x4_add(wasm_f32x4_add(a, e0), o0);
        b = wasm_f32x4_add(wasm_f32x4_add(b, e1), o1);
      }
      wasm_v128_store(o + k, narrow8_f16_normal(a, b, &bad));
    }
    /* Exponent 31 (shifted left by one: >= 0xf800) or a sum outside the normal range (>= 0x7800)? */
    v128_t fail = wasm_v128_or(wasm_u16x8_ge(special, K(0xf800f800)), wasm_u16x8_ge(bad, K(0x78007800)));
    if (wasm_v128_any_true(fail)) {
      sum_rows_factor2(DT_F16, out, outRow + iw, grad, row0 + 2 * (size_t)iw, row1 + 2 * (size_t)iw,
                       rows, F16_CHUNK);
    }
  }
  if (iw < inW) {
    sum_rows_factor2(DT_F16, out, outRow + iw, grad, row0 + 2 * (size_t)iw, row1 + 2 * (size_t)iw,
                     rows, inW - iw);
  }
}

/* The common 2x2 case straight into the output row: ((((+0 + a0) + a1) + b0) + b1) per cell. */
static inline void sum_two_rows_factor2(int dtype, void *out, size_t outRow, const void *grad,
                                        size_t row0, size_t row1, int inW) {
  const v128_t zero = wasm_f32x4_splat(0.0f);
  int iw = 0;
  for (; iw + 4 <= inW; iw += 4) {
    v128_t even, odd;
    load8_even_odd(dtype, grad, row0 + 2 * (size_t)iw, &even, &odd);
    v128_t a = wasm_f32x4_add(wasm_f32x4_add(zero, even), odd);
    load8_even_odd(dtype, grad, row1 + 2 * (size_t)iw, &even, &odd);
    store4v(dtype, out, outRow + iw, wasm_f32x4_add(wasm_f32x4_add(a, even), odd));
  }
  SCALAR_TAIL
  for (; iw < inW; iw++) {
    size_t w = 2 * (size_t)iw;
    float a = ((0.0f + loadf(dtype, grad, row0 + w)) + loadf(dtype, grad, row0 + w + 1));
    a = (a + loadf(dtype, grad, row1 + w)) + loadf(dtype, grad, row1 + w + 1);
    storef(dtype, out, outRow + iw, a);
  }
}

/* Integer factor 1 or 2 along w: plane by plane, row by row, vectorized along the row; float16
 * and bfloat16 rows are widened in registers. `accRow` (inW floats) accumulates rows that take
 * several gradient rows, for float16/bfloat16. */
static inline __attribute__((always_inline)) void nearest_factor_impl(
    const int dtype, void *out, const void *grad, int planes, int inH, int inW, int outW,
    const int32_t *hStarts, int wFactor, float *accRow, int row0, int row1) {
  const int outH = hStarts[inH];
  for (int p = 0; p < planes; p++) {
    const size_t gPlane = (size_t)p * outH * outW, oPlane = (size_t)p * inH * inW;
    for (int ih = row0; ih < row1; ih++) {
      const size_t outRow = oPlane + (size_t)ih * inW;
      int oh = hStarts[ih], end = hStarts[ih + 1];
      if (end - oh == 2 && wFactor == 2) {
        size_t row0 = gPlane + (size_t)oh * outW;
        if (dtype == DT_F16) {
          sum_rows_f16(out, outRow, grad, row0, row0 + outW, 2, inW);
          continue;
        }
        sum_two_rows_factor2(dtype, out, outRow, grad, row0, row0 + outW, inW);
        continue;
      }
      if (end - oh == 1 && wFactor == 2) {
        const size_t row = gPlane + (size_t)oh * outW;
        if (dtype == DT_F16) sum_rows_f16(out, outRow, grad, row, 0, 1, inW);
        else sum_rows_factor2(dtype, out, outRow, grad, row, 0, 1, inW);
        continue;
      }
      float *acc = dtype == DT_F32 ? (float *)out + outRow : accRow;
      if (oh == end) {
        for (int iw = 0; iw < inW; iw++) acc[iw] = 0.0f;
      }
      for (int first = 1; oh < end; oh++, first = 0) {
        accumulate_row_factor(acc, dtype, grad, gPlane + (size_t)oh * outW, first, inW, wFactor);
      }
      if (dtype != DT_F32) narrow(dtype, acc, (uint16_t *)out + outRow, inW);
    }
  }
}

/* One specialised copy per dtype. */
static void nearest_factor(int dtype, void *out, const void *grad, int planes, int inH, int inW,
                           int outW, const int32_t *hStarts, int wFactor, float *accRow, int row0,
                           int row1) {
  if (dtype == DT_F32) {
    nearest_factor_impl(DT_F32, out, grad, planes, inH, inW, outW, hStarts, wFactor, accRow, row0,
                        row1);
  } else if (dtype == DT_BF16) {
    nearest_factor_impl(DT_BF16, out, grad, planes, inH, inW, outW, hStarts, wFactor, accRow, row0,
                        row1);
  } else {
    nearest_factor_impl(DT_F16, out, grad, planes, inH, inW, outW, hStarts, wFactor, accRow, row0,
                        row1);
  }
}

/* acc[iw] (+)= the vectors gRow[wStarts[iw] .. wStarts[iw + 1]) for every cell; `slots` is a
 * constant 1..MAX_SLOTS (masked loads, unrolled) or 0 (a loop). */
static inline void sum_ranges(float *restrict acc, const float *restrict gRow,
                              const int32_t *wStarts, int inW, int first, const int slots) {
  const v128_t zero = wasm_f32x4_splat(0.0f);
  int start = wStarts[0];
  for (int iw = 0; iw < inW; iw++) {
    const int stop = wStarts[iw + 1];
    v128_t a = first ? zero : wasm_v128_load(acc + 4 * iw);
    if (slots > 0) {
      const v128_t len = wasm_i32x4_splat(stop - start);
      for (int j = 0; j < slots; j++) {
        v128_t x = wasm_v128_load(gRow + 4 * (start + j));
        a = wasm_f32x4_add(a, wasm_v128_and(x, wasm_i32x4_gt(len, K(j))));
      }
    } else {
      for (int ow = start; ow < stop; ow++) a = wasm_f32x4_add(a, wasm_v128_load(gRow + 4 * ow));
    }
    wasm_v128_store(acc + 4 * iw, a);
    start = stop;
  }
}

static void nearest_lanes(int dtype, void *out, const void *grad, int planes, int inH, int inW,
                          int outW, const int32_t *hStarts, const int32_t *wStarts, int maxRange,
                          float *work, int row0, int row1) {
  const int outH = hStarts[inH];
  float *gRow = work, *acc = gRow + 4 * ((size_t)outW + MAX_SLOTS);
  const v128_t zero = wasm_f32x4_splat(0.0f);
  for (int p0 = 0; p0 < planes; p0 += 4) {
    group_t g = group_at(dtype, grad, out, planes, p0, (size_t)outH * outW, (size_t)inH * inW);
    for (int ih = row0; ih < row1; ih++) {
      int oh = hStarts[ih], end = hStarts[ih + 1];
      if (oh == end) {
        for (int iw = 0; iw < inW; iw++) wasm_v128_store(acc + 4 * iw, zero);
      }
      for (int first = 1; oh < end; oh++, first = 0) {
        load_group_row(dtype, &g, (size_t)oh * outW, outW, gRow);
        switch (maxRange) {
          case 1: sum_ranges(acc, gRow, wStarts, inW, first, 1); break;
          case 2: sum_ranges(acc, gRow, wStarts, inW, first, 2); break;
          case 3: sum_ranges(acc, gRow, wStarts, inW, first, 3); break;
          case 4: sum_ranges(acc, gRow, wStarts, inW, first, 4); break;
          default: sum_ranges(acc, gRow, wStarts, inW, first, 0); break;
        }
      }
      store_group_row(dtype, &g, (size_t)ih * inW, inW, acc);
    }
  }
}

/** Scratch bytes nearest_backward needs for these widths. */
EXPORT(nearest_scratch_bytes) size_t nearest_scratch_bytes(int inW, int outW) {
  /* nearest_lanes: a row of vectors (padded) and the accumulator row; nearest_factor needs less. */
  return 4 * (4 * ((size_t)outW + MAX_SLOTS) + 4 * (size_t)inW);
}

/*
 * Nearest-exact backward over `planes` contiguous planes (1d: inH = outH = 1). `hStarts`
 * (inH + 1) and `wStarts` (inW + 1) give the output range of each input index; `wFactor` is k
 * when input w owns exactly outputs [k w, k w + k) (else 0); `maxRange` bounds the w ranges.
 * `work` holds nearest_scratch_bytes(inW, outW) bytes. Only input rows [row0, row1) of each plane
 * are computed (a band: each reads its own gradient rows, so bands never share an element).
 */
EXPORT(nearest_backward) void nearest_backward(int dtype, void *out, const void *grad, int planes,
                                               int inH, int inW, int outW,
                                               const int32_t *hStarts, const int32_t *wStarts,
                                               int wFactor, int maxRange, float *work,
                                               int row0, int row1) {
  if (wFactor == 1 || wFactor == 2) {
    nearest_factor(dtype, out, grad, planes, inH, inW, outW, hStarts, wFactor, work, row0, row1);
  } else {
    nearest_lanes(dtype, out, grad, planes, inH, inW, outW, hStarts, wStarts, maxRange, work, row0,
                  row1);
  }
}
