/* Bilinear 2d backward: the exports bilinear_backward, bilinear_scratch_bytes and
 * bilinear_down2. */

#include "groups.h"

/* acc += splat(k) * g, the scalar update fl32(acc + fl32(k * g)) in each lane. */
static inline v128_t update(v128_t acc, v128_t k, v128_t g) {
  return wasm_f32x4_add(acc, wasm_f32x4_mul(k, g));
}

#define SPLAT(v, lane) wasm_i32x4_shuffle(v, v, lane, lane, lane, lane)

/*
 * One output row into two different accumulator rows r0 != r1 (cells of four lanes, padded by
 * one cell): the cells of the current w0 and w0 + 1 stay in registers while w0 is unchanged.
 * Per cell the updates keep PyTorch's order: ascending ow, then 00, 01 (row r0), 10, 11 (r1).
 * From `split` on, w1 == w0 (the last column, or every column of a same-size dimension): both
 * updates of a row land on one cell, in order. Memory accesses are few and wide on purpose: each
 * one costs a bounds check.
 */
__attribute__((noinline)) static void scatter_row_carry(float *r0, float *r1, const float *gRow,
                                                        const float *k, const int32_t *wI0,
                                                        int split, int outW) {
  int cur = wI0[0];
  v128_t a0 = wasm_v128_load(r0 + 4 * cur), b0 = wasm_v128_load(r0 + 4 * cur + 4);
  v128_t a1 = wasm_v128_load(r1 + 4 * cur), b1 = wasm_v128_load(r1 + 4 * cur + 4);
  for (int ow = 0; ow < outW; ow++) {
    const int w0 = wI0[ow];
    if (w0 != cur) {
      wasm_v128_store(r0 + 4 * cur, a0);
      wasm_v128_store(r1 + 4 * cur, a1);
      if (w0 == cur + 1) {
        a0 = b0;
        a1 = b1;
      } else {
        wasm_v128_store(r0 + 4 * cur + 4, b0);
        wasm_v128_store(r1 + 4 * cur + 4, b1);
        a0 = wasm_v128_load(r0 + 4 * w0);
        a1 = wasm_v128_load(r1 + 4 * w0);
      }
      cur = w0;
      b0 = wasm_v128_load(r0 + 4 * cur + 4);
      b1 = wasm_v128_load(r1 + 4 * cur + 4);
    }
    const v128_t g = wasm_v128_load(gRow + 4 * ow);
    const v128_t kk = wasm_v128_load(k + 4 * ow);
    a0 = update(a0, SPLAT(kk, 0), g);
    if (ow < split) {
      b0 = update(b0, SPLAT(kk, 1), g);
      a1 = update(a1, SPLAT(kk, 2), g);
      b1 = update(b1, SPLAT(kk, 3), g);
    } else {
      a0 = update(a0, SPLAT(kk, 1), g);
      a1 = update(a1, SPLAT(kk, 2), g);
      a1 = update(a1, SPLAT(kk, 3), g);
    }
  }
  wasm_v128_store(r0 + 4 * cur, a0);
  wasm_v128_store(r0 + 4 * cur + 4, b0);
  wasm_v128_store(r1 + 4 * cur, a1);
  wasm_v128_store(r1 + 4 * cur + 4, b1);
}

/* One output row whose two source rows coincide (the last input row): updates in memory, in
 * order, since all four may land on one cell. */
static void scatter_row_direct(float *r, const float *gRow, const float *k, const int32_t *wI0,
                               const int32_t *wI1, int outW) {
  for (int ow = 0; ow < outW; ow++) {
    const v128_t g = wasm_v128_load(gRow + 4 * ow);
    const v128_t kk = wasm_v128_load(k + 4 * ow);
    float *a = r + 4 * wI0[ow], *b = r + 4 * wI1[ow];
    wasm_v128_store(a, update(wasm_v128_load(a), SPLAT(kk, 0), g));
    wasm_v128_store(b, update(wasm_v128_load(b), SPLAT(kk, 1), g));
    wasm_v128_store(a, update(wasm_v128_load(a), SPLAT(kk, 2), g));
    wasm_v128_store(b, update(wasm_v128_load(b), SPLAT(kk, 3), g));
  }
}

/* Corner weights of output row oh, fl32(lh * lw) as the scalar kernel computes them. */
static void corner_weights(float *k, float lh0, float lh1, const float *wL0, const float *wL1,
                           int outW) {
  for (int ow = 0; ow < outW; ow++) {
    k[4 * ow] = lh0 * wL0[ow];
    k[4 * ow + 1] = lh0 * wL1[ow];
    k[4 * ow + 2] = lh1 * wL0[ow];
    k[4 * ow + 3] = lh1 * wL1[ow];
  }
}

/* Corner weights of all rows are precomputed once per call up to this many output pixels. */
enum { ALL_WEIGHTS_MAX = 1 << 18 };

/* Accumulator rows live in a ring: an output row touches input rows h0 and h0 + 1 only, and h0
 * never decreases, so a row is final (and written out) once h0 has passed it. Few rows stay in
 * L1 instead of a whole plane group in L2. */
enum { RING = 4 };

/** Scratch bytes bilinear_backward needs for these sizes. */
EXPORT(bilinear_scratch_bytes) size_t bilinear_scratch_bytes(int inH, int inW, int outH,
                                                             int outW) {
  (void)inH;
  size_t pixels = (size_t)outH * outW;
  size_t weights = pixels <= ALL_WEIGHTS_MAX ? 4 * pixels : 4 * (size_t)outW;
  return 4 * (4 * RING * ((size_t)inW + 1) + 4 * (size_t)outW + weights);
}

/*
 * Bilinear 2d backward over `planes` contiguous planes, four planes per pass (one per lane), each
 * lane running PyTorch's scatter on its own plane: output pixels in row-major order, updates 00,
 * 01, 10, 11, acc = fl32(acc + fl32(fl32(lh * lw) * g)).
 * Tables per output index: hI0, hI1, wI0, wI1 (int32) and hL0, hL1, wL0, wL1 (float32).
 * `work` holds bilinear_scratch_bytes(inH, inW, outH, outW) bytes.
 * Only input rows [row0, row1) are written (a band): the output rows whose updates reach them run,
 * in ascending order as for the whole plane, and rows outside the band are never stored. Bands
 * need hI0 non-decreasing and hI1 - hI0 in {0, 1} (the caller checks; the whole plane does not).
 */
EXPORT(bilinear_backward) void bilinear_backward(int dtype, void *out, const void *grad, int planes,
                                                 int inH, int inW, int outH, int outW,
                                                 const int32_t *hI0, const int32_t *hI1,
                                                 const float *hL0, const float *hL1,
                                                 const int32_t *wI0, const int32_t *wI1,
                                                 const float *wL0, const float *wL1, float *work,
                                                 int row0, int row1) {
  const size_t stride = 4 * ((size_t)inW + 1); /* floats per accumulator row, one padding cell */
  const int all = (size_t)outH * outW <= ALL_WEIGHTS_MAX;
  float *ring = work, *gRow = ring + RING * stride, *weights = gRow + 4 * (size_t)outW;
  int split = outW;
  while (split > 0 && wI1[split - 1] == wI0[split - 1]) split--;
  /* The output rows updating the band: from the first whose h1 reaches row0 to the last whose h0
   * is below row1 (the whole plane: every row). */
  int ohStart = 0, ohEnd = outH;
  if (row0 > 0) {
    while (ohStart < outH && hI1[ohStart] < row0) ohStart++;
  }
  if (row1 < inH) {
    ohEnd = ohStart;
    while (ohEnd < outH && hI0[ohEnd] < row1) ohEnd++;
  }
  if (all) {
    for (int oh = ohStart; oh < ohEnd; oh++) {
      corner_weights(weights + 4 * (size_t)outW * oh, hL0[oh], hL1[oh], wL0, wL1, outW);
    }
  }
  /* The first ring row touched: row0, or the row above the band that its first output row also
   * updates (accumulated, never stored). */
  const int first = ohStart < ohEnd && hI0[ohStart] < row0 ? hI0[ohStart] : row0;
  for (int p0 = 0; p0 < planes; p0 += 4) {
    group_t g = group_at(dtype, grad, out, planes, p0, (size_t)outH * outW, (size_t)inH * inW);
    /* Rows < next are written out; rows <= zeroed are in the ring (zeroed when first touched). */
    int next = row0, zeroed = first - 1;
    for (int oh = ohStart; oh <= ohEnd; oh++) {
      const int h0 = oh < ohEnd ? hI0[oh] : row1;
      for (; next < h0; next++) {
        float *row = ring + stride * (next % RING);
        if (next > zeroed) {
          __builtin_memset(row, 0, stride * 4); /* a row no output touches */
          zeroed = next;
        }
        store_group_row(dtype, &g, (size_t)next * inW, inW, row);
      }
      if (oh == ohEnd) break;
      const int h1 = hI1[oh];
      for (; zeroed < h1; zeroed++) __builtin_memset(ring + stride * ((zeroed + 1) % RING), 0, stride * 4);
      load_group_row(dtype, &g, (size_t)oh * outW, outW, gRow);
      float *k = weights;
      if (all) {
        k += 4 * (size_t)outW * oh;
      } else {
        corner_weights(k, hL0[oh], hL1[oh], wL0, wL1, outW);
      }
      float *r0 = ring + stride * (h0 % RING), *r1 = ring + stride * (h1 % RING);
      if (r0 != r1) {
        scatter_row_carry(r0, r1, gRow, k, wI0, split, outW);
      } else {
        scatter_row_direct(r0, gRow, k, wI0, wI1, outW);
      }
    }
  }
}

/* Whether two weights are the same float, bit for bit. */
static inline int same_bits(float x, float y) {
  return __builtin_bit_cast(uint32_t, x) == __builtin_bit_cast(uint32_t, y);
}

/*
 * Bilinear backward for an exact 2x downscale (input 2 H x 2 W, and the tables say output pixel
 * (oh, ow) reads rows 2 oh, 2 oh + 1 and columns 2 ow, 2 ow + 1): every input cell receives exactly
 * one update, +0 + fl32(fl32(lh * lw) * g), so the plane is written once, row by row, with no
 * accumulator and no zero fill. Plane by plane, four output pixels (eight cells) per step; only
 * output rows [oh0, oh1) (input rows [2 oh0, 2 oh1)).
 */
static inline __attribute__((always_inline)) void down2_impl(
    const int dtype, void *out, const void *grad, int planes, int outH, int outW, const float *hL0,
    const float *hL1, const float *wL0, const float *wL1, int oh0, int oh1) {
  const int inW = 2 * outW;
  const v128_t zero = wasm_f32x4_splat(0.0f);
  int wEven = 1;
  for (int ow = 0; ow < outW; ow++) wEven &= same_bits(wL0[ow], wL1[ow]);
  for (int p = 0; p < planes; p++) {
    for (int oh = oh0; oh < oh1; oh++) {
      const size_t gRow = ((size_t)p * outH + oh) * outW;
      const size_t row0 = ((size_t)p * 2 * outH + 2 * (size_t)oh) * inW, row1 = row0 + inW;
      const v128_t lh0 = wasm_f32x4_splat(hL0[oh]), lh1 = wasm_f32x4_splat(hL1[oh]);
      int ow = 0;
      if (wEven && same_bits(hL0[oh], hL1[oh])) {
        /* lh0 = lh1 and lw0 = lw1: the four cells of a pixel take the same update, computed once
         * (the 2x downscale without alignCorners: every weight 0.5). */
        for (; ow + 4 <= outW; ow += 4) {
          const v128_t g = load4v(dtype, grad, gRow + ow);
          const v128_t a = wasm_f32x4_add(
              zero, wasm_f32x4_mul(wasm_f32x4_mul(lh0, wasm_v128_load(wL0 + ow)), g));
          const v128_t lo = wasm_i32x4_shuffle(a, a, 0, 0, 1, 1);
          const v128_t hi = wasm_i32x4_shuffle(a, a, 2, 2, 3, 3);
          store8v(dtype, out, row0 + 2 * (size_t)ow, lo, hi);
          store8v(dtype, out, row1 + 2 * (size_t)ow, lo, hi);
        }
      }
      for (; ow + 4 <= outW; ow += 4) {
        const v128_t g = load4v(dtype, grad, gRow + ow);
        const v128_t lw0 = wasm_v128_load(wL0 + ow), lw1 = wasm_v128_load(wL1 + ow);
        v128_t a = wasm_f32x4_add(zero, wasm_f32x4_mul(wasm_f32x4_mul(lh0, lw0), g));
        v128_t b = wasm_f32x4_add(zero, wasm_f32x4_mul(wasm_f32x4_mul(lh0, lw1), g));
        v128_t c = wasm_f32x4_add(zero, wasm_f32x4_mul(wasm_f32x4_mul(lh1, lw0), g));
        v128_t d = wasm_f32x4_add(zero, wasm_f32x4_mul(wasm_f32x4_mul(lh1, lw1), g));
        const size_t at = 2 * (size_t)ow;
        store8v(dtype, out, row0 + at, wasm_i32x4_shuffle(a, b, 0, 4, 1, 5),
                wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
        store8v(dtype, out, row1 + at, wasm_i32x4_shuffle(c, d, 0, 4, 1, 5),
                wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
      }
      SCALAR_TAIL
      for (; ow < outW; ow++) {
        const float g = loadf(dtype, grad, gRow + ow);
        const size_t at = 2 * (size_t)ow;
        storef(dtype, out, row0 + at, 0.0f + (hL0[oh] * wL0[ow]) * g);
        storef(dtype, out, row0 + at + 1, 0.0f + (hL0[oh] * wL1[ow]) * g);
        storef(dtype, out, row1 + at, 0.0f + (hL1[oh] * wL0[ow]) * g);
        storef(dtype, out, row1 + at + 1, 0.0f + (hL1[oh] * wL1[ow]) * g);
      }
    }
  }
}

/* One specialised copy per dtype: the loops keep no dtype test. */
EXPORT(bilinear_down2) void bilinear_down2(int dtype, void *out, const void *grad, int planes,
                                           int outH, int outW, const float *hL0, const float *hL1,
                                           const float *wL0, const float *wL1, int oh0,
                                           int oh1) {
  if (dtype == DT_F32) {
    down2_impl(DT_F32, out, grad, planes, outH, outW, hL0, hL1, wL0, wL1, oh0, oh1);
  } else if (dtype == DT_BF16) {
    down2_impl(DT_BF16, out, grad, planes, outH, outW, hL0, hL1, wL0, wL1, oh0, oh1);
  } else {
    down2_impl(DT_F16, out, grad, planes, outH, outW, hL0, hL1, wL0, wL1, oh0, oh1);
  }
}
