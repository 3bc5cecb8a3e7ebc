/*
 * The memory floor of a kernel that reads `readBytes` and writes `writeBytes`: the same bytes moved
 * by the plainest WebAssembly SIMD loops (what the library's kernels compile to, with the same
 * bounds checks), for bench:compare to time in the same rounds as the cases. WebAssembly has no
 * non-temporal store, so a line a loop writes is read first, where memcpy and memset may stream
 * past the cache: this floor says what a kernel of this library can reach, where the copy is
 * what glibc can.
 *
 * Built by bench/Makefile with clang 19 (build/floor.wasm); bench/cores_probe.ts loads it.
 */
#include <stddef.h>
#include <wasm_simd128.h>

/* Copies min(read, write) bytes from src to dst, then stores zeros over the rest of `write` or
 * loads the rest of `read` (returned folded, so the loads stay). Byte counts are multiples of 64. */
__attribute__((export_name("floor_move"))) int floor_move(v128_t *dst, const v128_t *src,
                                                          size_t readBytes, size_t writeBytes) {
  const size_t both = (readBytes < writeBytes ? readBytes : writeBytes) / 16;
  for (size_t i = 0; i < both; i += 4) {
    const v128_t a = src[i], b = src[i + 1], c = src[i + 2], d = src[i + 3];
    dst[i] = a, dst[i + 1] = b, dst[i + 2] = c, dst[i + 3] = d;
  }
  const v128_t zero = wasm_i32x4_splat(0);
  for (size_t i = both; i < writeBytes / 16; i += 4) {
    dst[i] = zero, dst[i + 1] = zero, dst[i + 2] = zero, dst[i + 3] = zero;
  }
  v128_t acc = zero;
  for (size_t i = both; i < readBytes / 16; i += 4) {
    acc = wasm_v128_or(acc, wasm_v128_or(wasm_v128_or(src[i], src[i + 1]),
                                         wasm_v128_or(src[i + 2], src[i + 3])));
  }
  return wasm_i32x4_extract_lane(acc, 0);
}
