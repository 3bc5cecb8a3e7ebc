/* Transposes between four plane rows and one row of four-lane vectors (see groups.h). */

#include "groups.h"

/* dst[4 i + l] = rows[l][i]: four rows to one row of four-lane vectors. */
static void interleave4(const float *const rows[4], float *restrict dst, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    v128_t a = wasm_v128_load(rows[0] + i), b = wasm_v128_load(rows[1] + i);
    v128_t c = wasm_v128_load(rows[2] + i), d = wasm_v128_load(rows[3] + i);
    transpose4(&a, &b, &c, &d);
    wasm_v128_store(dst + 4 * i, a);
    wasm_v128_store(dst + 4 * i + 4, b);
    wasm_v128_store(dst + 4 * i + 8, c);
    wasm_v128_store(dst + 4 * i + 12, d);
  }
  SCALAR_TAIL
  for (; i < n; i++) {
    wasm_v128_store(dst + 4 * i, wasm_f32x4_make(rows[0][i], rows[1][i], rows[2][i], rows[3][i]));
  }
}

/* rows[l][i] = src[4 i + l]: the inverse of interleave4. */
static void deinterleave4(const float *restrict src, float *const rows[4], int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    v128_t a = wasm_v128_load(src + 4 * i), b = wasm_v128_load(src + 4 * i + 4);
    v128_t c = wasm_v128_load(src + 4 * i + 8), d = wasm_v128_load(src + 4 * i + 12);
    transpose4(&a, &b, &c, &d);
    wasm_v128_store(rows[0] + i, a);
    wasm_v128_store(rows[1] + i, b);
    wasm_v128_store(rows[2] + i, c);
    wasm_v128_store(rows[3] + i, d);
  }
  SCALAR_TAIL
  for (; i < n; i++) {
    for (int l = 0; l < 4; l++) rows[l][i] = src[4 * i + l];
  }
}

/* Eight elements (i .. i + 7) of the four planes as pairs e (even elements) and o (odd), one vector
 * per plane, stored interleaved: dst[4 j + l] is element j of plane l. */
static inline void store_interleaved8(float *dst, int i, v128_t e[4], v128_t o[4]) {
  transpose4(&e[0], &e[1], &e[2], &e[3]); /* elements i, i + 2, i + 4, i + 6 */
  transpose4(&o[0], &o[1], &o[2], &o[3]); /* elements i + 1, ..., i + 7 */
  for (int k = 0; k < 4; k++) {
    wasm_v128_store(dst + 4 * (i + 2 * k), e[k]);
    wasm_v128_store(dst + 4 * (i + 2 * k + 1), o[k]);
  }
}

static void load_group_row(int dtype, const group_t *g, size_t offset, int n, float *dst) {
  if (dtype == DT_F32) {
    const float *rows[4];
    for (int l = 0; l < 4; l++) rows[l] = (const float *)g->grad[l] + offset;
    interleave4(rows, dst, n);
    return;
  }
  const uint16_t *r[4];
  for (int l = 0; l < 4; l++) r[l] = (const uint16_t *)g->grad[l] + offset;
  int i = 0;
  if (dtype == DT_F16) {
    /* Infinities and NaNs (exponent 31: >= 0xf800 shifted left by one) are looked for once per
     * row; a row that has one is widened again by the exact general code. */
    v128_t special = wasm_i32x4_splat(0);
    for (; i + 8 <= n; i += 8) {
      v128_t e[4], o[4];
      for (int l = 0; l < 4; l++) {
        v128_t h = wasm_v128_load(r[l] + i);
        special = wasm_u16x8_max(special, wasm_i16x8_shl(h, 1));
        split_pairs_f16_finite(h, &e[l], &o[l]);
      }
      store_interleaved8(dst, i, e, o);
    }
    if (wasm_v128_any_true(wasm_u16x8_ge(special, K(0xf800f800)))) i = 0;
  }
  for (; i + 8 <= n; i += 8) {
    v128_t e[4], o[4];
    for (int l = 0; l < 4; l++) split_pairs(dtype, wasm_v128_load(r[l] + i), &e[l], &o[l]);
    store_interleaved8(dst, i, e, o);
  }
  SCALAR_TAIL
  for (; i < n; i++) {
    for (int l = 0; l < 4; l++) {
      dst[4 * i + l] = loadf(dtype, r[l], i);
    }
  }
}

/* Elements i .. i + 7 of the four planes from interleaved src (src[4 j + l]): lo[l] holds elements
 * i .. i + 3 of plane l, hi[l] elements i + 4 .. i + 7. */
static inline void load_deinterleaved8(const float *src, int i, v128_t lo[4], v128_t hi[4]) {
  for (int k = 0; k < 4; k++) {
    lo[k] = wasm_v128_load(src + 4 * (i + k));
    hi[k] = wasm_v128_load(src + 4 * (i + 4 + k));
  }
  transpose4(&lo[0], &lo[1], &lo[2], &lo[3]);
  transpose4(&hi[0], &hi[1], &hi[2], &hi[3]);
}

static void store_group_row(int dtype, const group_t *g, size_t offset, int n, const float *src) {
  if (dtype == DT_F32) {
    float *rows[4];
    for (int l = 0; l < 4; l++) rows[l] = (float *)g->out[l] + offset;
    deinterleave4(src, rows, n);
    return;
  }
  uint16_t *r[4];
  for (int l = 0; l < 4; l++) r[l] = (uint16_t *)g->out[l] + offset;
  int i = 0;
  if (dtype == DT_F16) {
    /* Sums outside the normal float16 range are looked for once per row; a row that has one is
     * rounded again by the exact general code. */
    v128_t bad = wasm_i32x4_splat(0);
    for (; i + 8 <= n; i += 8) {
      v128_t lo[4], hi[4];
      load_deinterleaved8(src, i, lo, hi);
      for (int l = 0; l < 4; l++) wasm_v128_store(r[l] + i, narrow8_f16_normal(lo[l], hi[l], &bad));
    }
    if (wasm_v128_any_true(wasm_u16x8_ge(bad, K(0x78007800)))) i = 0;
  }
  for (; i + 8 <= n; i += 8) {
    v128_t lo[4], hi[4];
    load_deinterleaved8(src, i, lo, hi);
    for (int l = 0; l < 4; l++) wasm_v128_store(r[l] + i, narrow8(dtype, lo[l], hi[l]));
  }
  SCALAR_TAIL
  for (; i < n; i++) {
    for (int l = 0; l < 4; l++) {
      storef(dtype, r[l], i, src[4 * i + l]);
    }
  }
}
