/* The nearest-exact forward kernel (interpolate's nearest-exact, 1d and 2d): the export
 * nearest_forward. Output (oh, ow) copies input (hIdx[oh], wIdx[ow]), bits and all, so any cut of
 * a call into bands of rows (worker threads) gives the same bits. */

#include "groups.h"
/* ---------------------------------------------------------------- nearest-exact */

/* Column maps nearest_forward copies without tables: ow -> ow, ow / 2, 2 ow + 1 (2x up, 2x down). */
enum { PATTERN_ANY = 0, PATTERN_COPY = 1, PATTERN_UP2 = 2, PATTERN_DOWN2 = 3 };

/* A group of output columns copied with byte shuffles: the 16 output bytes at byte `out` of the
 * row (4 float32 or 8 16-bit outputs), whose inputs lie within the 16 input bytes at byte `start`
 * (kind 1: one load, one shuffle) or within the 32 bytes there (kind 2: two loads, two shuffles, an
 * or); kind 0: element by element. Groups g < outW / per are at column g * per; when outW % per != 0
 * (and outW >= per) one more ends at outW, overlapping the one before (those columns are stored
 * twice, same bits), so that no row has a scalar tail. `ones`: how many groups from this one on are
 * kind 1 (they run without a test of the kind). Built by src/cpu/wasm/launch_forward.ts. */
typedef struct {
  int32_t start;
  int32_t out;
  int32_t kind;
  int32_t ones;
  uint8_t mask[2][16];
} gather_group_t;

/* The shuffle of a kind-1 group, whose mask bytes are all below 16, where relaxed SIMD's swizzle
 * gives the same bytes by the spec (it differs only for indices >= 16): V8 lowers it to one pshufb
 * (x64) or tbl (arm64), without the saturating add that makes wasm's swizzle give 0 for indices
 * >= 16. The fused module has relaxed SIMD; the exact one keeps the standard instruction. */
#ifdef KERNELS_FUSED
#define SWIZZLE_IN_RANGE wasm_i8x16_relaxed_swizzle
#else
#define SWIZZLE_IN_RANGE wasm_i8x16_swizzle
#endif

/* One group of kind 0 or 2. */
static inline v128_t odd_group(int size, const char *src, const int32_t *wIdx,
                               const gather_group_t *gr) {
  const char *at = src + gr->start;
  if (gr->kind == 2) {
    return wasm_v128_or(wasm_i8x16_swizzle(wasm_v128_load(at), wasm_v128_load(gr->mask[0])),
                        wasm_i8x16_swizzle(wasm_v128_load(at + 16), wasm_v128_load(gr->mask[1])));
  }
  uint16_t e[8];
  const int per = 16 / size, first = gr->out / size;
  SCALAR_TAIL
  for (int j = 0; j < per; j++) {
    const int c = wIdx[first + j];
    if (size == 4) __builtin_memcpy(e + 2 * j, src + 4 * (size_t)c, 4);
    else e[j] = ((const uint16_t *)src)[c];
  }
  return wasm_v128_load(e);
}

/* The table's groups [g, count) of a row; groups below `full` store at 16 g (no load of `out`). */
static inline __attribute__((always_inline)) void table_groups(int size, const char *src, char *dst,
                                                               int g, int full, int count,
                                                               const int32_t *wIdx,
                                                               const gather_group_t *groups) {
  while (g < count) {
    const int end = g + groups[g].ones, aligned = end < full ? end : full;
    for (; g < aligned; g++) {
      wasm_v128_store(dst + 16 * (size_t)g, SWIZZLE_IN_RANGE(wasm_v128_load(src + groups[g].start),
                                                             wasm_v128_load(groups[g].mask[0])));
    }
    for (; g < end; g++) {
      const gather_group_t *gr = groups + g;
      wasm_v128_store(dst + gr->out, SWIZZLE_IN_RANGE(wasm_v128_load(src + gr->start),
                                                      wasm_v128_load(gr->mask[0])));
    }
    if (g < count) {
      wasm_v128_store(dst + groups[g].out, odd_group(size, src, wIdx, groups + g));
      g++;
    }
  }
}

/* One output row: vectors first by the column pattern (COPY, UP2, DOWN2: no tables), the remaining
 * groups by the table; a row narrower than one vector element by element. */
static inline __attribute__((always_inline)) void gather_row(int size, const char *src, char *dst,
                                                             int outW, const int32_t *wIdx,
                                                             const gather_group_t *groups,
                                                             int pattern) {
  const int per = 16 / size, full = outW / per, count = full + (full > 0 && outW % per != 0);
  if (full == 0) {
    SCALAR_TAIL
    for (int ow = 0; ow < outW; ow++) {
      if (size == 4) ((uint32_t *)dst)[ow] = ((const uint32_t *)src)[wIdx[ow]];
      else ((uint16_t *)dst)[ow] = ((const uint16_t *)src)[wIdx[ow]];
    }
    return;
  }
  int g = 0;
  if (pattern == PATTERN_COPY) {
    for (; g < full; g++) {
      wasm_v128_store(dst + 16 * (size_t)g, wasm_v128_load(src + 16 * (size_t)g));
    }
  } else if (pattern == PATTERN_UP2) {
    for (; g + 2 <= full; g += 2) { /* 16 input bytes -> 32 output bytes */
      const v128_t v = wasm_v128_load(src + 8 * (size_t)g);
      const v128_t lo = size == 4 ? wasm_i32x4_shuffle(v, v, 0, 0, 1, 1)
                                  : wasm_i16x8_shuffle(v, v, 0, 0, 1, 1, 2, 2, 3, 3);
      const v128_t hi = size == 4 ? wasm_i32x4_shuffle(v, v, 2, 2, 3, 3)
                                  : wasm_i16x8_shuffle(v, v, 4, 4, 5, 5, 6, 6, 7, 7);
      wasm_v128_store(dst + 16 * (size_t)g, lo);
      wasm_v128_store(dst + 16 * (size_t)g + 16, hi);
    }
  } else if (pattern == PATTERN_DOWN2) {
    for (; g < full; g++) {
      const v128_t v = wasm_v128_load(src + 32 * (size_t)g);
      const v128_t w = wasm_v128_load(src + 32 * (size_t)g + 16);
      wasm_v128_store(dst + 16 * (size_t)g,
                      size == 4 ? wasm_i32x4_shuffle(v, w, 1, 3, 5, 7)
                                : wasm_i16x8_shuffle(v, w, 1, 3, 5, 7, 9, 11, 13, 15));
    }
  }
  table_groups(size, src, dst, g, full, count, wIdx, groups);
}

/* `bytes` bytes from `from` to `to` (no overlap) by vectors, the last ending at the end. */
static inline void copy_row(char *to, const char *from, size_t bytes) {
  if (bytes < 16) {
    __builtin_memcpy(to, from, bytes);
    return;
  }
  size_t i = 0;
  for (; i + 16 <= bytes; i += 16) wasm_v128_store(to + i, wasm_v128_load(from + i));
  if (i < bytes) wasm_v128_store(to + bytes - 16, wasm_v128_load(from + bytes - 16));
}

/* One input row into `rows` output rows: gathered into the first, which the others copy from L1
 * (storing each vector into every row of the run measured slower: 2x up 1.9 ms against 1.4 ms).
 * gather_row is inlined once per element size (no select between the two sizes' shuffles). */
__attribute__((noinline)) static void gather_run(int size, const char *src, char *dst,
                                                 size_t stride, int rows, int outW,
                                                 const int32_t *wIdx,
                                                 const gather_group_t *groups, int pattern) {
  if (size == 4) gather_row(4, src, dst, outW, wIdx, groups, pattern);
  else gather_row(2, src, dst, outW, wIdx, groups, pattern);
  for (int r = 1; r < rows; r++) copy_row(dst + r * stride, dst, (size_t)outW * size);
}

/*
 * nearest-exact forward over `planes` contiguous planes (1d: inH = outH = 1): output (oh, ow)
 * copies input (hIdx[oh], wIdx[ow]), bits and all. `groups` (see gather_group_t) describe the
 * shuffles of a row; `pattern` names a column map copied without them. The output rows of a run
 * with one input row (within [row0, row1)) are written together.
 */
EXPORT(nearest_forward) void nearest_forward(int dtype, void *out, const void *in, int planes,
                                             int inH, int inW, int outH, int outW,
                                             const int32_t *hIdx, const int32_t *wIdx,
                                             const gather_group_t *groups, int pattern,
                                             int row0, int row1) {
  const int size = dtype == DT_F32 ? 4 : 2;
  const size_t inPlane = (size_t)inH * inW * size, outPlane = (size_t)outH * outW * size;
  const size_t inRow = (size_t)inW * size, outRow = (size_t)outW * size;
  for (int p = 0; p < planes; p++) {
    const char *src = (const char *)in + p * inPlane;
    char *dst = (char *)out + p * outPlane;
    for (int oh = row0; oh < row1;) {
      int end = oh + 1;
      while (end < row1 && hIdx[end] == hIdx[oh]) end++;
      gather_run(size, src + hIdx[oh] * inRow, dst + oh * outRow, outRow, end - oh, outW, wIdx,
                 groups, pattern);
      oh = end;
    }
  }
}
