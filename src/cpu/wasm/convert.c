/* float16/bfloat16 rows to float32 and back, and their exports (tests check them exhaustively). */

#include "simd.h"

int32_t kzero = 0;

static void widen(int dtype, const uint16_t *src, float *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    v128_t even, odd;
    split_pairs(dtype, wasm_v128_load(src + i), &even, &odd);
    wasm_v128_store(dst + i, wasm_i32x4_shuffle(even, odd, 0, 4, 1, 5));
    wasm_v128_store(dst + i + 4, wasm_i32x4_shuffle(even, odd, 2, 6, 3, 7));
  }
  SCALAR_TAIL
  for (; i < n; i++) dst[i] = loadf(dtype, src, i);
}

static void narrow(int dtype, const float *src, uint16_t *dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    wasm_v128_store(dst + i, narrow8(dtype, wasm_v128_load(src + i), wasm_v128_load(src + i + 4)));
  }
  SCALAR_TAIL
  for (; i < n; i++) storef(dtype, dst, i, src[i]);
}

/** Widens `n` float16 (dtype 1) or bfloat16 (dtype 2) values to float32. */
EXPORT(widen_to_f32) void widen_to_f32(int dtype, const uint16_t *src, float *dst, int n) {
  widen(dtype, src, dst, n);
}

/** Rounds `n` float32 values to float16 (dtype 1) or bfloat16 (dtype 2), nearest even. */
EXPORT(narrow_from_f32) void narrow_from_f32(int dtype, const float *src, uint16_t *dst, int n) {
  narrow(dtype, src, dst, n);
}
