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

/*
 * Vector constants are built from K(c) = splat(c + kzero): V8 re-materialises every v128.const at
 * each use inside loops (several instructions), while clang hoists K(c) out of the loop into a
 * local, since it cannot fold kzero (an external global that nobody changes).
 */
int32_t kzero = 0;
#define K(c) wasm_i32x4_splat((int32_t)(c) + kzero)
#define KF(c) wasm_f32x4_splat((float)(c) + (float)kzero)

/*
 * An optimisation barrier: clang rewrites extends and saturating narrows whose range it can prove
 * into generic byte shuffles, which V8 lowers to several instructions each (a pshufb and its
 * constant); hiding the value keeps the single-instruction form.
 */
/* Tails of vector loops run fewer than 8 times: keep clang from vectorizing them again. */
#define SCALAR_TAIL _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")

static inline v128_t opaque(v128_t v) {
  __asm__("" : "+r"(v));
  return v;
}

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

/* float32 to float16 bits (in u32 lanes), nearest even, as f32_to_f16. Magnitudes are compared as
 * signed integers (they are below 2^31), which SSE does in one instruction. When all four values
 * are in the normal float16 range (the common case) only the rebias-and-round remains. */
static inline v128_t f32x4_to_f16(v128_t x) {
  v128_t sign = wasm_v128_and(wasm_u32x4_shr(x, 16), K(0x8000));
  v128_t a = wasm_v128_and(x, K(0x7fffffff));
  v128_t odd = wasm_v128_and(wasm_u32x4_shr(a, 13), K(1));
  v128_t normal = wasm_u32x4_shr(wasm_i32x4_add(wasm_i32x4_add(a, K(0xc8000fff)), odd), 13);
  v128_t inRange =
      wasm_v128_and(wasm_i32x4_ge(a, K(0x38800000)), wasm_i32x4_lt(a, K(0x477ff000)));
  if (wasm_i32x4_all_true(inRange)) return wasm_v128_or(normal, sign);
  v128_t sub = wasm_i32x4_sub(wasm_f32x4_add(a, KF(0.5f)), K(0x3f000000));
  v128_t r = wasm_v128_bitselect(sub, normal, wasm_i32x4_lt(a, K(0x38800000)));
  r = wasm_v128_bitselect(K(0x7c00), r, wasm_i32x4_ge(a, K(0x477ff000)));
  r = wasm_v128_or(r, sign);
  return wasm_v128_bitselect(K(0x7e00), r, wasm_i32x4_gt(a, K(0x7f800000)));
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
    *even = f16x4_to_f32(wasm_v128_and(pairs, K(0xffff)));
    *odd = f16x4_to_f32(wasm_u32x4_shr(pairs, 16));
  }
}

/* Eight float32 values (lo: 0..3, hi: 4..7) rounded to float16/bfloat16 bits, nearest even. */
static inline v128_t narrow8(int dtype, v128_t lo, v128_t hi) {
  v128_t a = dtype == DT_BF16 ? f32x4_to_bf16(lo) : f32x4_to_f16(lo);
  v128_t b = dtype == DT_BF16 ? f32x4_to_bf16(hi) : f32x4_to_f16(hi);
  /* Lanes hold values <= 0xffff, so the saturating narrow is exact. */
  return wasm_u16x8_narrow_i32x4(opaque(a), opaque(b));
}

static void widen(int dtype, const uint16_t *src, float *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t even, odd;
    split_pairs(dtype, wasm_v128_load(src + i), &even, &odd);
    wasm_v128_store(dst + i, wasm_i32x4_shuffle(even, odd, 0, 4, 1, 5));
    wasm_v128_store(dst + i + 4, wasm_i32x4_shuffle(even, odd, 2, 6, 3, 7));
  }
  SCALAR_TAIL
  for (; i < n; i++) dst[i] = dtype == DT_BF16 ? bf16_to_f32(src[i]) : f16_to_f32(src[i]);
}

static void narrow(int dtype, const float *src, uint16_t *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    wasm_v128_store(dst + i, narrow8(dtype, wasm_v128_load(src + i), wasm_v128_load(src + i + 4)));
  }
  SCALAR_TAIL
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

/* ---------------------------------------------------------------- plane groups */

/*
 * Most kernels run four planes at once, one plane per vector lane: every lane performs exactly the
 * scalar operation sequence of its own plane, so vectorizing changes no bit. A group with fewer
 * than four real planes repeats its last plane in the spare lanes (read only, never written).
 */
typedef struct {
  const char *grad[4];
  char *out[4];
  int lanes;
} group_t;

static group_t group_at(int dtype, const void *grad, void *out, int planes, int p0,
                        size_t gradPlane, size_t outPlane) {
  group_t g;
  size_t size = dtype == DT_F32 ? 4 : 2;
  g.lanes = planes - p0 < 4 ? planes - p0 : 4;
  for (int l = 0; l < 4; l++) {
    size_t p = (size_t)p0 + (size_t)(l < g.lanes ? l : g.lanes - 1);
    g.grad[l] = (const char *)grad + p * gradPlane * size;
    g.out[l] = (char *)out + p * outPlane * size;
  }
  return g;
}

/* Transposes four vectors in place: a[l] lane i <-> a[i] lane l. */
static inline void transpose4(v128_t *a, v128_t *b, v128_t *c, v128_t *d) {
  v128_t ab0 = wasm_i32x4_shuffle(*a, *b, 0, 4, 1, 5), ab1 = wasm_i32x4_shuffle(*a, *b, 2, 6, 3, 7);
  v128_t cd0 = wasm_i32x4_shuffle(*c, *d, 0, 4, 1, 5), cd1 = wasm_i32x4_shuffle(*c, *d, 2, 6, 3, 7);
  *a = wasm_i64x2_shuffle(ab0, cd0, 0, 2);
  *b = wasm_i64x2_shuffle(ab0, cd0, 1, 3);
  *c = wasm_i64x2_shuffle(ab1, cd1, 0, 2);
  *d = wasm_i64x2_shuffle(ab1, cd1, 1, 3);
}

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

/* The row at element `offset` (n elements) of the group's gradient planes as four-lane vectors in
 * dst (4 n floats), widened from float16/bfloat16 on the way. */
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
  for (; i + 8 <= n; i += 8) {
    v128_t e[4], o[4];
    for (int l = 0; l < 4; l++) split_pairs(dtype, wasm_v128_load(r[l] + i), &e[l], &o[l]);
    transpose4(&e[0], &e[1], &e[2], &e[3]); /* elements i, i + 2, i + 4, i + 6 */
    transpose4(&o[0], &o[1], &o[2], &o[3]); /* elements i + 1, ..., i + 7 */
    for (int k = 0; k < 4; k++) {
      wasm_v128_store(dst + 4 * (i + 2 * k), e[k]);
      wasm_v128_store(dst + 4 * (i + 2 * k + 1), o[k]);
    }
  }
  SCALAR_TAIL
  for (; i < n; i++) {
    for (int l = 0; l < 4; l++) {
      dst[4 * i + l] = dtype == DT_BF16 ? bf16_to_f32(r[l][i]) : f16_to_f32(r[l][i]);
    }
  }
}

/* The inverse: four-lane vectors in src (4 n floats) to the row at element `offset` of the
 * group's output planes, rounded once for float16/bfloat16. Spare lanes hold the very values of
 * the last real plane and point at it, so writing them changes nothing. */
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
  for (; i + 8 <= n; i += 8) {
    v128_t lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
      lo[k] = wasm_v128_load(src + 4 * (i + k));
      hi[k] = wasm_v128_load(src + 4 * (i + 4 + k));
    }
    transpose4(&lo[0], &lo[1], &lo[2], &lo[3]);
    transpose4(&hi[0], &hi[1], &hi[2], &hi[3]);
    for (int l = 0; l < 4; l++) wasm_v128_store(r[l] + i, narrow8(dtype, lo[l], hi[l]));
  }
  SCALAR_TAIL
  for (; i < n; i++) {
    for (int l = 0; l < 4; l++) {
      r[l][i] = dtype == DT_BF16 ? f32_to_bf16(src[4 * i + l]) : f32_to_f16(src[4 * i + l]);
    }
  }
}

/* ---------------------------------------------------------------- nearest-exact */

/* Output ranges up to this long are summed with masked loads instead of a loop. */
enum { MAX_SLOTS = 4 };

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
    const int32_t *hStarts, int wFactor, float *accRow) {
  const int outH = hStarts[inH];
  for (int p = 0; p < planes; p++) {
    const size_t gPlane = (size_t)p * outH * outW, oPlane = (size_t)p * inH * inW;
    for (int ih = 0; ih < inH; ih++) {
      const size_t outRow = oPlane + (size_t)ih * inW;
      int oh = hStarts[ih], end = hStarts[ih + 1];
      if (end - oh == 2 && wFactor == 2) {
        size_t row0 = gPlane + (size_t)oh * outW;
        sum_two_rows_factor2(dtype, out, outRow, grad, row0, row0 + outW, inW);
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
                           int outW, const int32_t *hStarts, int wFactor, float *accRow) {
  if (dtype == DT_F32) {
    nearest_factor_impl(DT_F32, out, grad, planes, inH, inW, outW, hStarts, wFactor, accRow);
  } else if (dtype == DT_BF16) {
    nearest_factor_impl(DT_BF16, out, grad, planes, inH, inW, outW, hStarts, wFactor, accRow);
  } else {
    nearest_factor_impl(DT_F16, out, grad, planes, inH, inW, outW, hStarts, wFactor, accRow);
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
                          float *work) {
  const int outH = hStarts[inH];
  float *gRow = work, *acc = gRow + 4 * ((size_t)outW + MAX_SLOTS);
  const v128_t zero = wasm_f32x4_splat(0.0f);
  for (int p0 = 0; p0 < planes; p0 += 4) {
    group_t g = group_at(dtype, grad, out, planes, p0, (size_t)outH * outW, (size_t)inH * inW);
    for (int ih = 0; ih < inH; ih++) {
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
 * `work` holds nearest_scratch_bytes(inW, outW) bytes.
 */
EXPORT(nearest_backward) void nearest_backward(int dtype, void *out, const void *grad, int planes,
                                               int inH, int inW, int outW,
                                               const int32_t *hStarts, const int32_t *wStarts,
                                               int wFactor, int maxRange, float *work) {
  if (wFactor == 1 || wFactor == 2) {
    nearest_factor(dtype, out, grad, planes, inH, inW, outW, hStarts, wFactor, work);
  } else {
    nearest_lanes(dtype, out, grad, planes, inH, inW, outW, hStarts, wStarts, maxRange, work);
  }
}

/* ---------------------------------------------------------------- bilinear */

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
 */
EXPORT(bilinear_backward) void bilinear_backward(int dtype, void *out, const void *grad, int planes,
                                                 int inH, int inW, int outH, int outW,
                                                 const int32_t *hI0, const int32_t *hI1,
                                                 const float *hL0, const float *hL1,
                                                 const int32_t *wI0, const int32_t *wI1,
                                                 const float *wL0, const float *wL1, float *work) {
  const size_t stride = 4 * ((size_t)inW + 1); /* floats per accumulator row, one padding cell */
  const int all = (size_t)outH * outW <= ALL_WEIGHTS_MAX;
  float *ring = work, *gRow = ring + RING * stride, *weights = gRow + 4 * (size_t)outW;
  int split = outW;
  while (split > 0 && wI1[split - 1] == wI0[split - 1]) split--;
  if (all) {
    for (int oh = 0; oh < outH; oh++) {
      corner_weights(weights + 4 * (size_t)outW * oh, hL0[oh], hL1[oh], wL0, wL1, outW);
    }
  }
  for (int p0 = 0; p0 < planes; p0 += 4) {
    group_t g = group_at(dtype, grad, out, planes, p0, (size_t)outH * outW, (size_t)inH * inW);
    /* Rows < next are written out; rows <= zeroed are in the ring (zeroed when first touched). */
    int next = 0, zeroed = -1;
    for (int oh = 0; oh <= outH; oh++) {
      const int h0 = oh < outH ? hI0[oh] : inH;
      for (; next < h0; next++) {
        float *row = ring + stride * (next % RING);
        if (next > zeroed) {
          __builtin_memset(row, 0, stride * 4); /* a row no output touches */
          zeroed = next;
        }
        store_group_row(dtype, &g, (size_t)next * inW, inW, row);
      }
      if (oh == outH) break;
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

/*
 * Bilinear backward for an exact 2x downscale (input 2 H x 2 W, and the tables say output pixel
 * (oh, ow) reads rows 2 oh, 2 oh + 1 and columns 2 ow, 2 ow + 1): every input cell receives exactly
 * one update, +0 + fl32(fl32(lh * lw) * g), so the plane is written once, row by row, with no
 * accumulator and no zero fill. Plane by plane, four output pixels (eight cells) per step.
 */
EXPORT(bilinear_down2) void bilinear_down2(int dtype, void *out, const void *grad, int planes,
                                           int outH, int outW, const float *hL0, const float *hL1,
                                           const float *wL0, const float *wL1) {
  const int inW = 2 * outW;
  const v128_t zero = wasm_f32x4_splat(0.0f);
  for (int p = 0; p < planes; p++) {
    for (int oh = 0; oh < outH; oh++) {
      const size_t gRow = ((size_t)p * outH + oh) * outW;
      const size_t row0 = ((size_t)p * 2 * outH + 2 * (size_t)oh) * inW, row1 = row0 + inW;
      const v128_t lh0 = wasm_f32x4_splat(hL0[oh]), lh1 = wasm_f32x4_splat(hL1[oh]);
      int ow = 0;
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
