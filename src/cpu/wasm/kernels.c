/*
 * The WebAssembly SIMD kernels of the CPU backend, compiled as one translation unit (built by
 * tools/build_wasm.ts into kernels_wasm.ts): clang then sees every function, and V8 gets the code
 * that measured fastest (separate objects made some kernels up to 1.7x slower).
 *
 *   simd.h      dtype codes, vector constants, float16/bfloat16 conversions, element access
 *   convert.c   row conversions and their exports
 *   groups.h/c  four planes per vector: the transposes between rows and lanes
 *   nearest.c   nearest-exact backward (1d and 2d)
 *   bilinear.c  bilinear 2d backward
 *   forward_nearest.c   nearest-exact forward (1d and 2d)
 *   forward_bilinear.c  bilinear 2d forward
 */

#include "convert.c"
#include "groups.c"
#include "nearest.c"
#include "bilinear.c"
#include "forward_nearest.c"
#include "forward_bilinear.c"
