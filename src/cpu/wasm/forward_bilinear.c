/* The bilinear forward kernel (interpolate's bilinear, 2d): the export bilinear_forward.
 *
 * It reproduces, per output element, the float32 operations of the TypeScript forward kernels
 * (src/cpu/pytorch/forward/), so both give PyTorch 1.13's CPU bits. Tensors are contiguous planes; a call
 * computes output rows [row0, row1) of each of its planes (bands of rows for worker threads: an
 * output row depends on nothing another row computes, so any cut gives the same bits). */

#include "groups.h"

/* ---------------------------------------------------------------- bilinear: arithmetic */

enum { MODE_F32 = 0, MODE_BF16 = 1, MODE_TAIL_F32 = 2, MODE_TAIL_BF16 = 3 };

/* The float32 neighbour of x towards +inf (up) or -inf. */
static float neighbour(float x, int up) {
  bits32 v = {.f = x};
  if (x == 0.0f) {
    v.u = up ? 1u : 0x80000001u;
    return v.f;
  }
  v.u += ((x > 0.0f) == (up != 0)) ? 1u : (uint32_t)-1;
  return v.f;
}

/* fl32(a * b + c) with one rounding (a fused multiply-add; WebAssembly has none): the product is
 * exact in double; the double sum's own rounding is recovered (TwoSum) to settle the one case where
 * rounding it again to float32 would round twice: a double sum exactly halfway between two floats.
 * As fmaF32 of src/rules/float32.ts. */
static float fma_exact(float a, float b, float c) {
  const double p = (double)a * b, s = p + c;
  const float r = (float)s;
  const double bb = s - p;
  const double err = (p - (s - bb)) + (c - bb);
  if (err == 0 || (double)r == s || s - s != 0) return r; /* exact, no rounding, or inf/NaN */
  const float other = neighbour(r, s > r);
  if (((double)r + (double)other) / 2 != s) return r;
  const float hi = r > other ? r : other, lo = r > other ? other : r;
  return err > 0 ? hi : lo;
}

#define HI_HALF(v) wasm_i32x4_shuffle(v, v, 2, 3, 2, 3)

/* The rounding error of the double sum s = p + q (TwoSum): 0 when s is exact. */
static inline v128_t sum_error(v128_t p, v128_t q, v128_t s) {
  const v128_t bb = wasm_f64x2_sub(s, p);
  return wasm_f64x2_add(wasm_f64x2_sub(p, wasm_f64x2_sub(s, bb)), wasm_f64x2_sub(q, bb));
}

/* Double lanes where rounding s = p + q to float32 rounds twice: s exactly halfway between two
 * floats while the double sum itself was rounded (a true tie rounds right, to even). */
static inline v128_t rounded_midpoint(v128_t p, v128_t q, v128_t s) {
  const v128_t low = wasm_i64x2_splat(0x1fffffff + (int64_t)kzero);
  const v128_t half = wasm_i64x2_splat(0x10000000 + (int64_t)kzero);
  const v128_t zero = wasm_f64x2_splat((double)kzero);
  return wasm_v128_and(wasm_i64x2_eq(wasm_v128_and(s, low), half),
                       wasm_f64x2_ne(sum_error(p, q, s), zero));
}

/* Redoes the four lanes with fma_exact (rare). */
__attribute__((noinline)) static v128_t fma4_exact(v128_t a, v128_t w, v128_t q) {
  float av[4], wv[4], qv[4], rv[4];
  wasm_v128_store(av, a);
  wasm_v128_store(wv, w);
  wasm_v128_store(qv, q);
  for (int l = 0; l < 4; l++) rv[l] = fma_exact(av[l], wv[l], qv[l]);
  return wasm_v128_load(rv);
}

/* The double products a w and sums a w + q of fma4 and fma4_long, low and high lanes, and r: the
 * four sums rounded to float32. */
typedef struct {
  v128_t plo, phi, qlo, qhi, slo, shi, r;
} double_sums_t;

static inline __attribute__((always_inline)) double_sums_t double_sums(v128_t a, v128_t w,
                                                                      v128_t q) {
  double_sums_t d;
  d.plo = wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a), wasm_f64x2_promote_low_f32x4(w));
  d.phi = wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(HI_HALF(a)),
                         wasm_f64x2_promote_low_f32x4(HI_HALF(w)));
  d.qlo = wasm_f64x2_promote_low_f32x4(q);
  d.qhi = wasm_f64x2_promote_low_f32x4(HI_HALF(q));
  d.slo = wasm_f64x2_add(d.plo, d.qlo);
  d.shi = wasm_f64x2_add(d.phi, d.qhi);
  d.r = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(d.slo), wasm_f32x4_demote_f64x2_zero(d.shi),
                           0, 1, 4, 5);
  return d;
}

/* fma_exact in four lanes: the products and sums in double, rounded once to float32. A lane whose
 * double sum rounded onto a float32 midpoint, or whose result is subnormal (other midpoints; a
 * zero result is exact), is redone by fma_exact: both are rare, and found without a branch. */
static inline __attribute__((always_inline)) v128_t fma4(v128_t a, v128_t w, v128_t q) {
  const double_sums_t d = double_sums(a, w, q);
  const v128_t magnitude = wasm_v128_and(d.r, K(0x7fffffff));
  const v128_t subnormal = wasm_v128_and(wasm_i32x4_lt(magnitude, K(0x00800000)),
                                         wasm_i32x4_ne(magnitude, K(0)));
  const v128_t risky = wasm_v128_or(subnormal, wasm_v128_or(rounded_midpoint(d.plo, d.qlo, d.slo),
                                                            rounded_midpoint(d.phi, d.qhi, d.shi)));
  if (__builtin_expect(wasm_v128_any_true(risky), 0)) return fma4_exact(a, w, q);
  return d.r;
}

/* fma4 for a weight w with many significant bits: the double sum then lands on a float32 midpoint
 * about once in 2^28 lanes, so the lanes are tested for it (or a subnormal result) first and the
 * exactness of the sum (TwoSum) only computed for them: fewer operations than fma4, on a branch
 * that short weights (whose exact sums are often ties) would make unpredictable. */
static inline __attribute__((always_inline)) v128_t fma4_long(v128_t a, v128_t w, v128_t q) {
  const double_sums_t d = double_sums(a, w, q);
  const v128_t low = wasm_i64x2_splat(0x1fffffff + (int64_t)kzero);
  const v128_t half = wasm_i64x2_splat(0x10000000 + (int64_t)kzero);
  const v128_t magnitude = wasm_v128_and(d.r, K(0x7fffffff));
  const v128_t flagged = wasm_v128_or(
      wasm_v128_or(wasm_i64x2_eq(wasm_v128_and(d.slo, low), half),
                   wasm_i64x2_eq(wasm_v128_and(d.shi, low), half)),
      wasm_u32x4_lt(wasm_i32x4_sub(magnitude, K(1)), K(0x007fffff)));
  if (__builtin_expect(wasm_v128_any_true(flagged), 0)) return fma4_exact(a, w, q);
  return d.r;
}

/* The weight classes of lerp groups and rows: which of fma4_pow2, fma4, fma4_long computes them. */
enum { W_SHORT = 0, W_POW2 = 1, W_LONG = 2 };

/* The class of one weight: a power of two or zero; at most 8 significant bits; more. */
static inline int weight_class(float w) {
  bits32 b = {.f = w};
  if ((b.u & 0x7f800000) == 0x7f800000) return W_SHORT;
  if ((b.u & 0x007fffff) == 0) return W_POW2;
  return (b.u & 0xffff) != 0 ? W_LONG : W_SHORT;
}

static inline __attribute__((always_inline)) v128_t fma4_pow2(v128_t a, v128_t w, v128_t q);

/*
 * fma(a, w, q) in four lanes. The fused module (KERNELS_FUSED, built with -mrelaxed-simd) has one
 * instruction for it, f32x4.relaxed_madd: the spec lets it round once or twice, so instance.ts runs
 * this module only where a probe (relaxed_madd_probe) saw it round once; elsewhere the exact module
 * emulates the fused result (fma4, fma4_long, fma4_pow2 by the weight's class).
 */
static inline __attribute__((always_inline)) v128_t fma4_class(int cls, v128_t a, v128_t w, v128_t q) {
#ifdef KERNELS_FUSED
  (void)cls;
  return wasm_f32x4_relaxed_madd(a, w, q);
#else
  return cls == W_POW2 ? fma4_pow2(a, w, q) : cls == W_LONG ? fma4_long(a, w, q) : fma4(a, w, q);
#endif
}

#ifdef KERNELS_FUSED
/** a * b + c by f32x4.relaxed_madd in each lane of `r` (four floats): instance.ts's probe. */
EXPORT(relaxed_madd_probe) void relaxed_madd_probe(float a, float b, float c, float *r) {
  wasm_v128_store(r, wasm_f32x4_relaxed_madd(wasm_f32x4_splat(a), wasm_f32x4_splat(b),
                                             wasm_f32x4_splat(c)));
}
#endif

/* float32 values rounded to bfloat16 (nearest even), kept as float32; NaN -> 0x7fc00000 (c10's
 * round_to_nearest_even). */
static inline float bf_round(float x) {
  bits32 v = {.f = x};
  if ((v.u & 0x7fffffff) > 0x7f800000) {
    v.u = 0x7fc00000;
  } else {
    v.u = (v.u + 0x7fff + ((v.u >> 16) & 1)) & 0xffff0000u;
  }
  return v.f;
}

static inline v128_t bf_round4(v128_t u) {
  const v128_t r = wasm_v128_and(
      wasm_i32x4_add(wasm_i32x4_add(u, K(0x7fff)), wasm_v128_and(wasm_u32x4_shr(u, 16), K(1))),
      K(0xffff0000));
  const v128_t nan = wasm_i32x4_gt(wasm_v128_and(u, K(0x7fffffff)), K(0x7f800000));
  return wasm_v128_bitselect(K(0x7fc00000), r, nan);
}

/* Four output columns whose inputs (wI0 and wI1) lie in the 16 bytes at column `start` of a float
 * row (kind 1: one load and two byte shuffles gather them) or in the 32 bytes there (kind 2: two
 * loads, four shuffles, two ors; kind 3 when wI0 and wI1 are the even and odd columns there, an exact
 * 2x downscale: two loads, two shuffles); kind 0: scalar loads. `weights`: the class of the four wL0
 * (weight_class; W_POW2 when all are powers of two or zero, W_LONG when all are long). Built by
 * src/cpu/wasm/launch_forward.ts. */
typedef struct {
  int32_t start;
  int32_t kind;
  int32_t weights; /* the class of the four wL0: W_SHORT, W_POW2 or W_LONG */
  int32_t pad;
  uint8_t mask[4][16];
} lerp_group_t;

/* Columns ow .. ow + 3 of a float row at wI0 (a) and wI1 (b). */
static inline void gather4(const float *row, const lerp_group_t *g, const int32_t *c0,
                           const int32_t *c1, v128_t *a, v128_t *b) {
  if (g->kind == 1) {
    const v128_t v = wasm_v128_load(row + g->start);
    *a = wasm_i8x16_swizzle(v, wasm_v128_load(g->mask[0]));
    *b = wasm_i8x16_swizzle(v, wasm_v128_load(g->mask[1]));
  } else if (g->kind == 3) {
    const v128_t v = wasm_v128_load(row + g->start), w = wasm_v128_load(row + g->start + 4);
    *a = wasm_i32x4_shuffle(v, w, 0, 2, 4, 6);
    *b = wasm_i32x4_shuffle(v, w, 1, 3, 5, 7);
  } else if (g->kind == 2) {
    const v128_t v = wasm_v128_load(row + g->start), w = wasm_v128_load(row + g->start + 4);
    *a = wasm_v128_or(wasm_i8x16_swizzle(v, wasm_v128_load(g->mask[0])),
                      wasm_i8x16_swizzle(w, wasm_v128_load(g->mask[2])));
    *b = wasm_v128_or(wasm_i8x16_swizzle(v, wasm_v128_load(g->mask[1])),
                      wasm_i8x16_swizzle(w, wasm_v128_load(g->mask[3])));
  } else {
    *a = wasm_f32x4_make(row[c0[0]], row[c0[1]], row[c0[2]], row[c0[3]]);
    *b = wasm_f32x4_make(row[c1[0]], row[c1[1]], row[c1[2]], row[c1[3]]);
  }
}

/* fma(a, w, q) for weights w that are powers of two or zero: a * w is exact in float32 unless it
 * underflows, and then the fused multiply-add is one float32 add. Lanes where the product is
 * subnormal, or zero with a and w not, take fma4. */
static inline __attribute__((always_inline)) v128_t fma4_pow2(v128_t a, v128_t w, v128_t q) {
  const v128_t p = wasm_f32x4_mul(a, w);
  const v128_t tiny = wasm_v128_and(
      wasm_i32x4_eq(wasm_v128_and(p, K(0x7f800000)), K(0)),
      wasm_v128_and(wasm_f32x4_ne(a, KF(0)), wasm_f32x4_ne(w, KF(0))));
  if (__builtin_expect(wasm_v128_any_true(tiny), 0)) return fma4_exact(a, w, q);
  return wasm_f32x4_add(p, q);
}

/* ---------------------------------------------------------------- bilinear: generic kernel */

/* One input row (float32 values) interpolated along W into t: float32 mode
 * t = fma(a, lw0, fl(b * lw1)); bfloat16 mode bf(bf(a lw0) + bf(b lw1)). */
static void lerp_row(int mode, float *restrict t, const float *row, int outW, const int32_t *wI0,
                     const int32_t *wI1, const float *wL0, const float *wL1,
                     const lerp_group_t *groups) {
  int ow = 0;
  for (; ow + 4 <= outW; ow += 4) {
    v128_t a, b;
    gather4(row, groups + ow / 4, wI0 + ow, wI1 + ow, &a, &b);
    const v128_t l0 = wasm_v128_load(wL0 + ow), l1 = wasm_v128_load(wL1 + ow);
    v128_t v;
    if (mode == MODE_BF16) {
      v = bf_round4(wasm_f32x4_add(bf_round4(wasm_f32x4_mul(a, l0)),
                                   bf_round4(wasm_f32x4_mul(b, l1))));
    } else {
      v = fma4_class(groups[ow / 4].weights, a, l0, wasm_f32x4_mul(b, l1));
    }
    wasm_v128_store(t + ow, v);
  }
  SCALAR_TAIL
  for (; ow < outW; ow++) {
    const float a = row[wI0[ow]], b = row[wI1[ow]];
    t[ow] = mode == MODE_BF16 ? bf_round(bf_round(a * wL0[ow]) + bf_round(b * wL1[ow]))
                              : fma_exact(a, wL0[ow], b * wL1[ow]);
  }
}

/* Input row `s` (dtype elements, widened into `wide` unless float32) interpolated along W. */
static void interpolate_row(int mode, int dtype, float *restrict t, const char *s, float *wide,
                            int inW, int outW, const int32_t *wI0, const int32_t *wI1,
                            const float *wL0, const float *wL1, const lerp_group_t *groups) {
  const float *f = (const float *)s;
  if (dtype != DT_F32) {
    widen(dtype, (const uint16_t *)s, wide, inW);
    f = wide;
  }
  lerp_row(mode, t, f, outW, wI0, wI1, wL0, wL1, groups);
}

/* An output row from the interpolated rows t0 (row h0) and t1 (row h1). */
static void combine_rows(int mode, float *restrict dst, const float *t0, const float *t1, float l0,
                         float l1, int outW) {
  const v128_t k0 = wasm_f32x4_splat(l0), k1 = wasm_f32x4_splat(l1);
  /* The class of l0 (1 on an identity dimension: a power of two). */
  const int cls = weight_class(l0);
  int ow = 0;
  for (; ow + 4 <= outW; ow += 4) {
    const v128_t a = wasm_v128_load(t0 + ow), b = wasm_v128_load(t1 + ow);
    v128_t v;
    if (mode == MODE_BF16) {
      v = bf_round4(wasm_f32x4_add(bf_round4(wasm_f32x4_mul(a, k0)),
                                   bf_round4(wasm_f32x4_mul(b, k1))));
    } else {
      v = fma4_class(cls, a, k0, wasm_f32x4_mul(b, k1));
    }
    wasm_v128_store(dst + ow, v);
  }
  SCALAR_TAIL
  for (; ow < outW; ow++) {
    dst[ow] = mode == MODE_BF16 ? bf_round(bf_round(t0[ow] * l0) + bf_round(t1[ow] * l1))
                                : fma_exact(t0[ow], l0, t1[ow] * l1);
  }
}

/* An output row straight from float32 input rows r0 (h0) and r1 (h1), for a row whose interpolated
 * rows no other row reuses (a downscale): the operations of interpolate_row on both rows and
 * combine_rows, in the same order, without storing and reloading the interpolated rows. */
/* direct_row where every group is an exact 2x downscale (kind 3 at column 8 g, one weight class):
 * the same operations, without reading the group table. */
static void direct_row_down2(float *restrict dst, const float *r0, const float *r1, float lh0,
                             float lh1, int outW, const float *wL0, const float *wL1, int wcls) {
  const v128_t k0 = wasm_f32x4_splat(lh0), k1 = wasm_f32x4_splat(lh1);
  const int cls = weight_class(lh0);
  for (int ow = 0; ow + 4 <= outW; ow += 4) {
    const v128_t u0 = wasm_v128_load(r0 + 2 * ow), v0 = wasm_v128_load(r0 + 2 * ow + 4);
    const v128_t u1 = wasm_v128_load(r1 + 2 * ow), v1 = wasm_v128_load(r1 + 2 * ow + 4);
    const v128_t l0 = wasm_v128_load(wL0 + ow), l1 = wasm_v128_load(wL1 + ow);
    const v128_t t0 = fma4_class(wcls, wasm_i32x4_shuffle(u0, v0, 0, 2, 4, 6), l0,
                                 wasm_f32x4_mul(wasm_i32x4_shuffle(u0, v0, 1, 3, 5, 7), l1));
    const v128_t t1 = fma4_class(wcls, wasm_i32x4_shuffle(u1, v1, 0, 2, 4, 6), l0,
                                 wasm_f32x4_mul(wasm_i32x4_shuffle(u1, v1, 1, 3, 5, 7), l1));
    wasm_v128_store(dst + ow, fma4_class(cls, t0, k0, wasm_f32x4_mul(t1, k1)));
  }
}

/* Whether every group of a row is kind 3 at column 8 g with one weight class (direct_row_down2),
 * and outW a multiple of 4; that class in *wcls. */
static int rows_down2(const lerp_group_t *groups, int outW, int *wcls) {
  if (outW % 4 != 0 || outW == 0) return 0;
  *wcls = groups[0].weights;
  for (int g = 0; g < outW / 4; g++) {
    if (groups[g].kind != 3 || groups[g].start != 8 * g || groups[g].weights != *wcls) return 0;
  }
  return 1;
}

static void direct_row(float *restrict dst, const float *r0, const float *r1, float lh0, float lh1,
                       int outW, const int32_t *wI0, const int32_t *wI1, const float *wL0,
                       const float *wL1, const lerp_group_t *groups) {
  const v128_t k0 = wasm_f32x4_splat(lh0), k1 = wasm_f32x4_splat(lh1);
  const int cls = weight_class(lh0);
  int ow = 0;
  for (; ow + 4 <= outW; ow += 4) {
    const lerp_group_t *g = groups + ow / 4;
    v128_t a0, b0, a1, b1;
    gather4(r0, g, wI0 + ow, wI1 + ow, &a0, &b0);
    gather4(r1, g, wI0 + ow, wI1 + ow, &a1, &b1);
    const v128_t l0 = wasm_v128_load(wL0 + ow), l1 = wasm_v128_load(wL1 + ow);
    const v128_t t0 = fma4_class(g->weights, a0, l0, wasm_f32x4_mul(b0, l1));
    const v128_t t1 = fma4_class(g->weights, a1, l0, wasm_f32x4_mul(b1, l1));
    wasm_v128_store(dst + ow, fma4_class(cls, t0, k0, wasm_f32x4_mul(t1, k1)));
  }
  SCALAR_TAIL
  for (; ow < outW; ow++) {
    const float t0 = fma_exact(r0[wI0[ow]], wL0[ow], r0[wI1[ow]] * wL1[ow]);
    const float t1 = fma_exact(r1[wI0[ow]], wL0[ow], r1[wI1[ow]] * wL1[ow]);
    dst[ow] = fma_exact(t0, lh0, t1 * lh1);
  }
}

/* ---------------------------------------------------------------- bilinear: channels-last tail */

/* One output row of PyTorch's channels-last kernel for C = 1 (every channel in its scalar tail):
 * weights fl(lh * lw) (bfloat16 mode: rounded to bfloat16), then ((i00 w00 + i01 w01) + i10 w10)
 * + i11 w11 in double, rounded once to float32 (bfloat16 mode: in float32, exact products). */
static void tail_row(int mode, float *restrict dst, const float *r0, const float *r1, float lh0,
                     float lh1, int outW, const int32_t *wI0, const int32_t *wI1,
                     const float *wL0, const float *wL1, const lerp_group_t *groups) {
  const v128_t h0 = wasm_f32x4_splat(lh0), h1 = wasm_f32x4_splat(lh1);
  int ow = 0;
  for (; ow + 4 <= outW; ow += 4) {
    v128_t i00, i01, i10, i11;
    gather4(r0, groups + ow / 4, wI0 + ow, wI1 + ow, &i00, &i01);
    gather4(r1, groups + ow / 4, wI0 + ow, wI1 + ow, &i10, &i11);
    const v128_t l0 = wasm_v128_load(wL0 + ow), l1 = wasm_v128_load(wL1 + ow);
    v128_t w00 = wasm_f32x4_mul(h0, l0), w01 = wasm_f32x4_mul(h0, l1);
    v128_t w10 = wasm_f32x4_mul(h1, l0), w11 = wasm_f32x4_mul(h1, l1);
    v128_t v;
    if (mode == MODE_TAIL_BF16) {
      w00 = bf_round4(w00);
      w01 = bf_round4(w01);
      w10 = bf_round4(w10);
      w11 = bf_round4(w11);
      v = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(i00, w00),
                                                       wasm_f32x4_mul(i01, w01)),
                                        wasm_f32x4_mul(i10, w10)),
                         wasm_f32x4_mul(i11, w11));
    } else {
#define PROD(x, w, lane) \
  wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(lane(x)), wasm_f64x2_promote_low_f32x4(lane(w)))
#define LO(v) (v)
      const v128_t slo = wasm_f64x2_add(
          wasm_f64x2_add(wasm_f64x2_add(PROD(i00, w00, LO), PROD(i01, w01, LO)), PROD(i10, w10, LO)),
          PROD(i11, w11, LO));
      const v128_t shi = wasm_f64x2_add(
          wasm_f64x2_add(wasm_f64x2_add(PROD(i00, w00, HI_HALF), PROD(i01, w01, HI_HALF)),
                         PROD(i10, w10, HI_HALF)),
          PROD(i11, w11, HI_HALF));
#undef PROD
#undef LO
      v = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(slo), wasm_f32x4_demote_f64x2_zero(shi),
                             0, 1, 4, 5);
    }
    wasm_v128_store(dst + ow, v);
  }
  SCALAR_TAIL
  for (; ow < outW; ow++) {
    const float i00 = r0[wI0[ow]], i01 = r0[wI1[ow]], i10 = r1[wI0[ow]], i11 = r1[wI1[ow]];
    float w00 = lh0 * wL0[ow], w01 = lh0 * wL1[ow], w10 = lh1 * wL0[ow], w11 = lh1 * wL1[ow];
    if (mode == MODE_TAIL_BF16) {
      w00 = bf_round(w00);
      w01 = bf_round(w01);
      w10 = bf_round(w10);
      w11 = bf_round(w11);
      dst[ow] = ((i00 * w00 + i01 * w01) + i10 * w10) + i11 * w11;
    } else {
      dst[ow] = (float)((((double)i00 * w00 + (double)i01 * w01) + (double)i10 * w10) +
                        (double)i11 * w11);
    }
  }
}

/* ---------------------------------------------------------------- bilinear: the export */

/** Work bytes bilinear_forward needs per thread. */
EXPORT(bilinear_forward_scratch_bytes) size_t bilinear_forward_scratch_bytes(int inW, int outW) {
  /* two widened input rows, two interpolated rows, one output row (each padded to 4 floats) */
  return 4 * (2 * ((size_t)inW + 4) + 3 * ((size_t)outW + 4));
}

/*
 * Bilinear forward over `planes` contiguous planes, output rows [row0, row1). Tables per output
 * index: hI0, hI1, wI0, wI1 (int32) and hL0, hL1, wL0, wL1 (float32); `groups` (outW / 4 entries)
 * the shuffles of gather4. `mode`: MODE_F32 (PyTorch's
 * generic kernel in float32: float32, and float16 rounded once at the end), MODE_BF16 (the generic
 * kernel in bfloat16 arithmetic), MODE_TAIL_F32 / MODE_TAIL_BF16 (the channels-last kernel of a
 * C = 1 input). `work` holds bilinear_forward_scratch_bytes(inW, outW) bytes.
 */
EXPORT(bilinear_forward) void bilinear_forward(int dtype, void *out, const void *in, int planes,
                                               int mode, int inH, int inW, int outH, int outW,
                                               const int32_t *hI0, const int32_t *hI1,
                                               const float *hL0, const float *hL1,
                                               const int32_t *wI0, const int32_t *wI1,
                                               const float *wL0, const float *wL1,
                                               const lerp_group_t *groups, float *work,
                                               int row0, int row1) {
  const size_t inRowF = (size_t)inW + 4, outRowF = (size_t)outW + 4;
  float *wide[2] = {work, work + inRowF};
  float *t[2] = {work + 2 * inRowF, work + 2 * inRowF + outRowF};
  float *result = work + 2 * inRowF + 2 * outRowF;
  const int size = dtype == DT_F32 ? 4 : 2;
  int wcls = 0;
  const int down2 = rows_down2(groups, outW, &wcls);
  for (int p = 0; p < planes; p++) {
    const char *src = (const char *)in + (size_t)p * inH * inW * size;
    char *dst = (char *)out + (size_t)p * outH * outW * size;
    int cached[2] = {-1, -1};
    for (int oh = row0; oh < row1; oh++) {
      const int h0 = hI0[oh], h1 = hI1[oh];
      float *row = dtype == DT_F32 ? (float *)dst + (size_t)oh * outW : result;
      if (mode == MODE_TAIL_F32 || mode == MODE_TAIL_BF16) {
        const float *r[2];
        const int hs[2] = {h0, h1};
        for (int k = 0; k < 2; k++) {
          const char *s = src + (size_t)hs[k] * inW * size;
          if (dtype == DT_F32) {
            r[k] = (const float *)s;
          } else {
            widen(dtype, (const uint16_t *)s, wide[k], inW);
            r[k] = wide[k];
          }
        }
        tail_row(mode, row, r[0], r[1], hL0[oh], hL1[oh], outW, wI0, wI1, wL0, wL1, groups);
      } else if (dtype == DT_F32 && mode == MODE_F32 && cached[0] != h0 && cached[1] != h0 &&
                 cached[0] != h1 && cached[1] != h1 && !(oh + 1 < row1 && hI0[oh + 1] <= h1)) {
        /* Neither interpolated row is cached nor needed by the next row: no cache. */
        const float *r0 = (const float *)(src + (size_t)h0 * inW * size);
        const float *r1 = (const float *)(src + (size_t)h1 * inW * size);
        if (down2) direct_row_down2(row, r0, r1, hL0[oh], hL1[oh], outW, wL0, wL1, wcls);
        else direct_row(row, r0, r1, hL0[oh], hL1[oh], outW, wI0, wI1, wL0, wL1, groups);
      } else {
        /* The interpolated rows h0 and h1, from a two-row cache. */
        int s0 = cached[0] == h0 ? 0 : cached[1] == h0 ? 1 : -1;
        if (s0 < 0) {
          s0 = cached[0] == h1 ? 1 : 0;
          interpolate_row(mode, dtype, t[s0], src + (size_t)h0 * inW * size, wide[0], inW, outW,
                          wI0, wI1, wL0, wL1, groups);
          cached[s0] = h0;
        }
        int s1 = cached[s0] == h1 ? s0 : cached[1 - s0] == h1 ? 1 - s0 : -1;
        if (s1 < 0) {
          s1 = 1 - s0;
          interpolate_row(mode, dtype, t[s1], src + (size_t)h1 * inW * size, wide[0], inW, outW,
                          wI0, wI1, wL0, wL1, groups);
          cached[s1] = h1;
        }
        float *rows[2] = {t[s0], t[s1]};
        combine_rows(mode, row, rows[0], rows[1], hL0[oh], hL1[oh], outW);
      }
      if (dtype != DT_F32) narrow(dtype, result, (uint16_t *)dst + (size_t)oh * outW, outW);
    }
  }
}
