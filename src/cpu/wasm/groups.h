/* Four planes per vector: plane groups and the transposes between rows and lanes (groups.c). */

#ifndef KERNELS_GROUPS_H
#define KERNELS_GROUPS_H

#include "simd.h"

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

static inline group_t group_at(int dtype, const void *grad, void *out, int planes, int p0,
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

/* The row at element `offset` (n elements) of the group's gradient planes as four-lane vectors in
 * dst (4 n floats), widened from float16/bfloat16 on the way. */
static void load_group_row(int dtype, const group_t *g, size_t offset, int n, float *dst);

/* The inverse: four-lane vectors in src (4 n floats) to the row at element `offset` of the
 * group's output planes, rounded once for float16/bfloat16. Spare lanes hold the very values of
 * the last real plane and point at it, so writing them changes nothing. */
static void store_group_row(int dtype, const group_t *g, size_t offset, int n, const float *src);

#endif
