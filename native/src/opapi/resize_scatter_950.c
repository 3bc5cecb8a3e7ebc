/*
 * ResizeBilinearV2Grad's kernels that write into a zeroed y on Ascend 950: the two atomic scatters
 * (SIMT, C_PARALLEL) and POINT_COPY. Sources, ops-cv image/resize_bilinear_v2_grad/op_kernel/arch35/:
 *  - resize_bilinear_v2_grad_simt.h (Process, SimtCompute), SIMT_NCHW / SIMT_NHWC: y is set to 0
 *    (InitOutput), then one thread per gradient element (n, c, h, w), with off = 0.5 (half pixel)
 *    or 0:
 *      src  = max((w + off) * sW - off, 0)        (fused when contracted)
 *      left = min(floor(src), resultW - 1), dx = clamp(src - left, 0, 1), dx1 = 1 - dx,
 *      right = left + 1 unless left is the last cell; the same for H (top, bottom, dy, dy1)
 *      asc_atomic_add(y[top, left],  T((dx1 * dy1) * g)), then [top, right] (dx * dy1),
 *      [bottom, left] (dx1 * dy), [bottom, right] (dx * dy)
 *    g widened to float32; each product cast to y's dtype (RNE assumed) and added atomically in y's
 *    dtype: float16 / bfloat16 accumulate in 16 bits, every add rounded.
 *  - resize_bilinear_v2_grad_c_parallel.h (ComputeDeltaArgus, ComputeSrcIdx, Compute4SrcDotWithGrads,
 *    DataMoveUb2Gm), C_PARALLEL (NHWC): y zeroed (ClearOutputGm); per gradient position (h, w):
 *      src = align or !half pixel ? h * sH : (h + 0.5) * sH - 0.5 (fused when contracted)
 *      lerp = src - trunc(src) (Floor() is an int64 cast: negative src keeps a negative lerp)
 *      upper = src > 0 ? trunc(src) : 0, capped at resultH - 1; lower = lerp > 0 ? upper + 1 : upper,
 *      capped; the same for W
 *      LU = (1 - hl) * (1 - wl), RU = (1 - hl) * wl, LD = hl * (1 - wl), RD = hl * wl
 *    and per channel g * weight in float32 (Muls), cast to y's dtype with CAST_RINT, atomically added
 *    (SetAtomicAdd<T_OUT>) at LU, RU, LD, RD (the same cell may take two of them).
 *  - The order of atomic additions is not specified (cores and SIMT threads race). Emulated: the
 *    gradient elements are visited in a permutation drawn per launch (Fisher-Yates from the launch's
 *    seed, kernel_controls.c), each element's four adds in the order above. So the flag-off bits
 *    differ from launch to launch wherever the sums are order-sensitive, and ACLEMU_ATOMIC_SEED
 *    replays them.
 *  - resize_bilinear_v2_grad_point_copy.h (CalcTile, CopyOutY), POINT_COPY (NHWC, same dtypes,
 *    integer ratios): y zeroed, then gradient (n, h, w, c) copied bit for bit to result row
 *    h * kH + (kH - 1) / 2 (half pixel: ((2h + 1) * kH - 1) / 2) or h * kH, column likewise, with
 *    k = result / gradient (align: (result - 1) / (gradient - 1), 1 for a gradient size of 1).
 */
#include "fp950.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* y = +0 everywhere (all-zero bytes in every dtype). */
static void zero_out(const emu_op_params *p)
{
    const emu_view *o = &p->out;
    size_t es = emu_dtype_size(o->dtype);
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            for (int64_t h = 0; h < p->inH; h++) {
                for (int64_t w = 0; w < p->inW; w++) {
                    memset(o->data + emu_at(o, n, c, h, w) * (int64_t)es, 0, es);
                }
            }
        }
    }
}

static uint64_t next64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A permutation of [0, count) drawn from seed (NULL when out of memory). */
static uint32_t *permutation(int64_t count, uint64_t seed)
{
    uint32_t *perm = malloc((size_t)(count > 0 ? count : 1) * sizeof *perm);
    if (perm == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < count; i++) {
        perm[i] = (uint32_t)i;
    }
    uint64_t s = seed;
    for (int64_t i = count - 1; i > 0; i--) {
        int64_t j = (int64_t)(next64(&s) % (uint64_t)(i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return perm;
}

/* One dimension of a scatter: the two cells a gradient position feeds and their weights. */
typedef struct {
    int64_t lo, hi;
    float w_lo, w_hi; /* SIMT: dx1, dx; C_PARALLEL: 1 - lerp, lerp */
} taps;

/* SimtCompute's coordinate for one dimension. */
static taps simt_taps(int64_t o, float s, int64_t len, float off, int fma)
{
    float src = emu_madd((float)o + off, s, -off, fma);
    src = src < 0.0f ? 0.0f : src;
    float f = floorf(src);
    int64_t lo = f < (float)(len - 1) ? emu_f2i(f) : len - 1; /* NaN: the last cell */
    float d = fminf(fmaxf(src - (float)lo, 0.0f), 1.0f);
    return (taps){lo, lo < len - 1 ? lo + 1 : lo, 1.0f - d, d};
}

/* ComputeDeltaArgus for one dimension. */
static taps c_parallel_taps(int64_t o, float s, int64_t len, int half_pixel_only, int fma)
{
    float src = half_pixel_only ? emu_madd((float)o + 0.5f, s, -0.5f, fma) : (float)o * s;
    int64_t t = emu_f2i(src);
    float lerp = src - (float)t;
    int64_t lo = src > 0.0f ? t : 0;
    lo = lo >= len ? len - 1 : lo;
    int64_t hi = lerp > 0.0f ? lo + 1 : lo;
    hi = hi >= len ? len - 1 : hi;
    return (taps){lo, hi, 1.0f - lerp, lerp};
}

int emu_resize950_scatter_run(const emu_op_params *p, char *msg, size_t msglen)
{
    const int simt = p->kernel == EMU_KERNEL_RB950_SIMT;
    const int64_t plane = p->outH * p->outW, count = p->N * p->C * plane;
    if (count > (int64_t)UINT32_MAX) {
        snprintf(msg, msglen, "the emulated atomic kernel draws its order for at most 2^32 - 1 gradient elements");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    taps *ty = malloc((size_t)(p->outH + p->outW) * sizeof *ty);
    uint32_t *perm = permutation(count, p->seed);
    if (ty == NULL || perm == NULL) {
        free(ty);
        free(perm);
        snprintf(msg, msglen, "out of host memory for the kernel's tables");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    taps *tx = ty + p->outH;
    const float off = p->half_pixel ? 0.5f : 0.0f;
    const int hp_only = !p->align_corners && p->half_pixel;
    for (int64_t i = 0; i < p->outH; i++) {
        ty[i] = simt ? simt_taps(i, p->sH, p->inH, off, p->fma) : c_parallel_taps(i, p->sH, p->inH, hp_only, p->fma);
    }
    for (int64_t i = 0; i < p->outW; i++) {
        tx[i] = simt ? simt_taps(i, p->sW, p->inW, off, p->fma) : c_parallel_taps(i, p->sW, p->inW, hp_only, p->fma);
    }
    zero_out(p);
    const emu_view *g = &p->go, *o = &p->out;
    for (int64_t k = 0; k < count; k++) {
        int64_t e = perm[k], n = e / (p->C * plane), c = e / plane % p->C, h = e % plane / p->outW, w = e % p->outW;
        const taps y = ty[h], x = tx[w];
        float v = emu_load(g->data, g->dtype, emu_at(g, n, c, h, w));
        /* SIMT: (dx-weight * dy-weight) * g; C_PARALLEL: g * (dy-weight * dx-weight) */
        const int64_t rows[4] = {y.lo, y.lo, y.hi, y.hi}, cols[4] = {x.lo, x.hi, x.lo, x.hi};
        const float wy[4] = {y.w_lo, y.w_lo, y.w_hi, y.w_hi}, wx[4] = {x.w_lo, x.w_hi, x.w_lo, x.w_hi};
        for (int q = 0; q < 4; q++) {
            float prod = simt ? (wx[q] * wy[q]) * v : v * (wy[q] * wx[q]);
            emu_atomic_add(o->data, o->dtype, emu_at(o, n, c, rows[q], cols[q]), emu_round_to(o->dtype, prod));
        }
    }
    free(ty);
    free(perm);
    return 0;
}

int emu_resize950_point_copy_run(const emu_op_params *p)
{
    zero_out(p);
    int64_t kH, kW;
    if (p->align_corners) {
        kH = p->outH > 1 ? (p->inH - 1) / (p->outH - 1) : 1;
        kW = p->outW > 1 ? (p->inW - 1) / (p->outW - 1) : 1;
    } else {
        kH = p->inH / p->outH;
        kW = p->inW / p->outW;
    }
    const emu_view *g = &p->go, *o = &p->out;
    size_t es = emu_dtype_size(o->dtype);
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            for (int64_t h = 0; h < p->outH; h++) {
                int64_t yh = p->half_pixel ? ((2 * h + 1) * kH - 1) / 2 : h * kH;
                for (int64_t w = 0; w < p->outW; w++) {
                    int64_t yw = p->half_pixel ? ((2 * w + 1) * kW - 1) / 2 : w * kW;
                    memcpy(o->data + emu_at(o, n, c, yh, yw) * (int64_t)es,
                           g->data + emu_at(g, n, c, h, w) * (int64_t)es, es);
                }
            }
        }
    }
    return 0;
}
