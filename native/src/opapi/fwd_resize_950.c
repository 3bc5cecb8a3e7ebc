/*
 * ResizeBilinearV2With4d (forward bilinear on Ascend 950, arch35): GoResizeBilinearV2AiCoreWith4d of
 * hicann/ops-cv image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp calls
 * image/resize_bilinear_v2/op_api/resize_bilinear_v2.cpp ResizeBilinearV2AicoreWith4d with x = the
 * contiguous self, y = the contiguous out (its own shape), align_corners, half_pixel_centers =
 * !align_corners, y's dtype and the scales {(float)scalesH, (float)scalesW}; the result is cast to
 * self's dtype (a no-op) and view-copied into out.
 *
 * Tiling (image/resize_bilinear_v2/op_host/arch35/resize_bilinear_v2_tiling_arch35.cpp): core_num = the
 * AIV cores (soc.c: 2 x ai_core_cnt), ub = ub_size. SetDimsByFormat: sizes from x (source) and y
 * (destination); scales: align_corners: (float)(src - 1) / (float)(des - 1) when des > 1, else
 * (float)src / (float)des; otherwise 1.0f / attr when the attribute > 0 (float32 division of the float
 * attribute; A2/A3's Cube route takes (float)(1.0 / scale)), else (float)src / (float)des. Tiling key,
 * first match (MatchTilingStrategyAndSetTilingKey): ALL_COPY (equal sizes, equal dtypes: the scales
 * are ignored); POINT_COPY (NHWC, C * sizeof >= 128 bytes, both scales >= 1 and within 1e-6 of an
 * integer k; align_corners, or odd k with half pixel); NCHW_BROADCAST (NCHW, outH * outW * sizeof >= 128,
 * input 1 x 1); NHWC_BROADCAST (NHWC, C * sizeof >= 128, input 1 x 1); C_PARALLEL (NHWC, C * sizeof >=
 * 128, both scales >= 2; the kernel is ResizeBilinearV2Nc when the tiling's cFactor < C, else
 * ResizeBilinearV2CParallel); NCHW: SIMT_HW when the sizes differ, the input has more than one element
 * and outH * outW >= cores * 1024 (idx64: * 512), else SIMT_NCHW; NHWC: SIMT_NHWC; the SIMT keys gain
 * _IDX64 past the 32-bit index range. Workspace 32 bytes.
 *
 * Kernels (op_kernel/arch35/), all gathers (no atomics), float32 inside, the result cast to y's dtype
 * once (RNE; C_PARALLEL / NC name CAST_RINT):
 *  - SIMT_NCHW / SIMT_NHWC (resize_bilinear_v2_simt_{nchw,nhwc}.h SimtCompute): src = fl32(o + 0.5) *
 *    s - 0.5 (half pixel; a multiply-add the compiler may contract: ACLEMU_FMA) or fl32(o * s),
 *    clamped at 0; left = min(floor(src), in - 1), right = min(ceil(src), in - 1), d = src - floor(src)
 *    (not re-clamped: past the last cell left = right and d may be > 0); out = (1 - dY) * ((1 - dX) * LT +
 *    dX * RT) + dY * ((1 - dX) * LB + dX * RB). Contracted as clang's fmuladd does for a * b + c * d (the
 *    left product fused, the right one rounded): fmaf(1 - dX, LT, dX * RT), likewise the bottom row,
 *    then fmaf(1 - dY, top, dY * bottom). Without half pixel (align_corners) and equal sizes / input
 *    1 x 1 / output 1 x 1 the kernel copies (SIMT_SCENE_ALL_COPY / INPUT_ONE / OUTPUT_ONE).
 *  - SIMT_HW (resize_bilinear_v2_simt_hw.h): the same formula but the coordinate is NOT clamped at 0 and
 *    the indices are static_cast<unsigned>(floorf(src)) / ceilf(src) then min(in - 1), max 0: a float
 *    -1 converted to an unsigned index is undefined in C++ (OPEN); emulated as the conversion
 *    saturating to 0 (the usual hardware conversion), so near the top / left border left = right = 0
 *    with d = src - floor(src) (0.75 for src -0.25) instead of SIMT_NCHW's d = 0: the same cell's two
 *    weights, rounded differently.
 *  - C_PARALLEL / NC (resize_bilinear_v2_c_parallel.h, _nc.h): per output position on the scalar unit
 *    src = (o + 0.5) * s - 0.5 (contractible: ACLEMU_FMA) or o * s, lerp = src - trunc(src), top =
 *    src > 0 ? trunc(src) : 0 capped at in - 1, bottom = lerp > 0 ? top + 1 : top (NC: trunc(src) + 1
 *    whatever the lerp), capped; weights NW = (1 - hl)(1 - wl), NE = (1 - hl) wl, SW = hl (1 - wl),
 *    SE = hl wl; per channel (x_nw * NW + x_ne * NE) + (x_sw * SW + x_se * SE) with every Muls and Add
 *    a rounded vector instruction.
 *  - POINT_COPY (_point_copy.h): out (h, w) is in (((2h + 1) k - 1) / 2) (half pixel) or (h k), capped,
 *    copied bit for bit; ALL_COPY, NCHW / NHWC_BROADCAST: copies of x / of x[n, c, 0, 0].
 * Forward vs backward on 950 (resize_grad_950.c): the backward's DETERMINE gathers and SIMT scatter use
 * the same half-pixel coordinate but clamp it and weight 1 - |c - h| per cell; the forward's SIMT_HW
 * alone skips the clamp at 0.
 */
#include "fwd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const RB_NAMES[] = {
    "ResizeBilinearV2With4d.ALL_COPY",       "ResizeBilinearV2With4d.POINT_COPY",
    "ResizeBilinearV2With4d.NCHW_BROADCAST", "ResizeBilinearV2With4d.NHWC_BROADCAST",
    "ResizeBilinearV2With4d.C_PARALLEL",     "ResizeBilinearV2With4d.C_PARALLEL_NC",
    "ResizeBilinearV2With4d.SIMT_NCHW",      "ResizeBilinearV2With4d.SIMT_NHWC",
    "ResizeBilinearV2With4d.SIMT_HW",        "ResizeBilinearV2With4d.SIMT_NCHW_IDX64",
    "ResizeBilinearV2With4d.SIMT_NHWC_IDX64", "ResizeBilinearV2With4d.SIMT_HW_IDX64",
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

aclnnStatus fwd_rb950_setup(const fwd_args *a, uint64_t *ws, aclOpExecutor **ex)
{
    emu_op_params p = {.kernel = EMU_KERNEL_FWD};
    aclnnStatus rc = fwd_views(a, &p);
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    const aclTensor *s = a->self, *o = a->out;
    const int cl = s->format == ACL_FORMAT_NHWC;
    const int64_t N = s->dims[0], C = cl ? s->dims[3] : s->dims[1];
    const int64_t SH = cl ? s->dims[1] : s->dims[2], SW = cl ? s->dims[2] : s->dims[3];
    const int64_t DH = cl ? o->dims[1] : o->dims[2], DW = cl ? o->dims[2] : o->dims[3];
    const int align = a->align != 0, half = !align;
    float sh, sw;
    if (!align) { /* ComputeScale on (float)scales */
        float ah = a->scales[0] > 0 ? (float)a->scales[0] : 0.0f, aw = a->scales[1] > 0 ? (float)a->scales[1] : 0.0f;
        sh = ah > 0.0f ? 1.0f / ah : (float)SH / (float)DH;
        sw = aw > 0.0f ? 1.0f / aw : (float)SW / (float)DW;
    } else {
        sh = DH > 1 ? (float)(SH - 1) / (float)(DH - 1) : (float)SH / (float)DH;
        sw = DW > 1 ? (float)(SW - 1) / (float)(DW - 1) : (float)SW / (float)DW;
    }
    int64_t cores, ub;
    emu_soc_vector_info(&cores, &ub);
    const int64_t ds = (int64_t)emu_dtype_size(s->dtype);
    const int64_t xsz = N * C * SH * SW, ysz = N * C * DH * DW;
    const int idx32 = ysz < (int64_t)UINT32_MAX && xsz < (int64_t)UINT32_MAX && SH <= INT32_MAX && SW <= INT32_MAX &&
                      DH <= INT32_MAX && DW <= INT32_MAX;
    int name, tmpl, simt_mode = 0;
    if (SH == DH && SW == DW) {
        name = 0, tmpl = FWD_RB950_ALL_COPY;
    } else if (cl && C * ds >= 128 && sh >= 1.0f && sw >= 1.0f &&
               fabsf(sh - (float)(int64_t)(sh + 1e-6f)) < 1e-6f && fabsf(sw - (float)(int64_t)(sw + 1e-6f)) < 1e-6f &&
               (align || !half || ((int64_t)(sh + 1e-6f) % 2 == 1 && (int64_t)(sw + 1e-6f) % 2 == 1))) {
        name = 1, tmpl = FWD_RB950_POINT_COPY;
    } else if (!cl && DH * DW * ds >= 128 && SH == 1 && SW == 1) {
        name = 2, tmpl = FWD_RB950_BROADCAST;
    } else if (cl && C * ds >= 128 && SH == 1 && SW == 1) {
        name = 3, tmpl = FWD_RB950_BROADCAST;
    } else if (cl && C * ds >= 128 && sw >= 2.0f && sh >= 2.0f) {
        /* DoTilingCParallel: cFactor = ceil(C / (cores / (outH * outW * N))) when all pixels of all
         * batches fit on the cores, else C; the apt kernel runs ResizeBilinearV2Nc for cFactor < C */
        int64_t total = DH * DW, cfactor = C;
        if (total * N <= cores) {
            cfactor = ceil_div(C, cores / (total * N));
        }
        name = cfactor < C ? 5 : 4, tmpl = cfactor < C ? FWD_RB950_NC : FWD_RB950_C_PARALLEL;
    } else if (!cl) {
        int64_t threshold = idx32 ? cores * 1024 : cores * 512;
        int hw = xsz != 1 && DH * DW >= threshold; /* (sizes differ: ALL_COPY came first) */
        name = hw ? (idx32 ? 8 : 11) : (idx32 ? 6 : 9);
        tmpl = hw ? FWD_RB950_SIMT_HW : FWD_RB950_SIMT;
    } else {
        name = idx32 ? 7 : 10, tmpl = FWD_RB950_SIMT;
    }
    if (tmpl == FWD_RB950_SIMT && !half) { /* resize_bilinear_v2_apt.cpp: the copy scenes without half pixel */
        simt_mode = SH == DH && SW == DW ? 1 : SH == 1 && SW == 1 ? 2 : DH == 1 && DW == 1 ? 3 : 0;
    }
    p.fw.route = EMU_FWD_RB950;
    p.fw.sub = tmpl | (simt_mode << 8);
    p.fw.cl = cl;
    p.fw.align = align;
    p.fw.half = half;
    p.fw.sh = sh;
    p.fw.sw = sw;
    int64_t x[4] = {N, C, SH, SW}, y[4] = {N, C, DH, DW};
    memcpy(p.fw.xd, x, sizeof x);
    memcpy(p.fw.yd, y, sizeof y);
    p.kname = RB_NAMES[name];
    p.ws_size = 32; /* DoTiling: WORKSPACE_SIZE */
    fwd_set_result(&p, 4, o->dims);
    return fwd_finish(a, &p, ws, ex);
}

/* ---- phase 2 ---- */

typedef struct {
    int64_t lo, hi;
    float d;
} rb_axis;

/* SIMT coordinate of output o (SimtCompute, and SimtHW's unclamped form). */
static rb_axis simt_axis(int64_t o, float s, int64_t in, int half, int clamp0, int fma)
{
    float c = half ? emu_madd((float)o + 0.5f, s, -0.5f, fma) : (float)o * s;
    rb_axis r;
    if (clamp0) {
        c = c < 0.0f ? 0.0f : c;
        int64_t lo = c > 0.0f ? (int64_t)floorf(c) : 0, hi = c > 0.0f ? (int64_t)ceilf(c) : 0;
        r.lo = lo < in - 1 ? lo : in - 1;
        r.hi = hi < in - 1 ? hi : in - 1;
    } else {
        /* static_cast<T_IDX>(floorf(c)) of a negative c: saturated to 0 (see the header) */
        float fl = floorf(c), ce = ceilf(c);
        int64_t lo = fl > 0.0f ? emu_f2i(fl) : 0, hi = ce > 0.0f ? emu_f2i(ce) : 0;
        r.lo = lo < in - 1 ? lo : in - 1;
        r.hi = hi < in - 1 ? hi : in - 1;
    }
    r.d = c - floorf(c);
    return r;
}

/* C_PARALLEL / NC coordinate (CalcInputPos / ComputeSrcIdx, ComputeDeltaArgus). */
static rb_axis cpar_axis(int64_t o, float s, int64_t in, int half, int nc, int fma)
{
    float c = half ? emu_madd((float)o + 0.5f, s, -0.5f, fma) : (float)o * s;
    int64_t t = emu_f2i(c); /* Floor() is a cast to int64: truncation */
    rb_axis r;
    r.d = c - (float)t;
    int64_t lo = c > 0.0f ? t : 0;
    r.lo = lo < in - 1 ? lo : in - 1;
    int64_t hi = nc ? (c > 0.0f ? t + 1 : 0) : (r.d > 0.0f ? r.lo + 1 : r.lo);
    r.hi = hi < in - 1 ? hi : in - 1;
    return r;
}

int fwd_rb950_run(const emu_op_params *p, char *msg, size_t msglen)
{
    const emu_fwd *f = &p->fw;
    const int64_t N = f->xd[0], C = f->xd[1], SH = f->xd[2], SW = f->xd[3], DH = f->yd[2], DW = f->yd[3];
    const int tmpl = f->sub & 0xff, mode = f->sub >> 8, fma = p->fma;
    const size_t es = emu_dtype_size(p->go.dtype);
    const int copy = tmpl == FWD_RB950_ALL_COPY || tmpl == FWD_RB950_POINT_COPY || tmpl == FWD_RB950_BROADCAST ||
                     (tmpl == FWD_RB950_SIMT && mode != 0);
    unsigned char *xb = copy ? fwd_load_bytes(&p->go) : NULL;
    float *x = copy ? NULL : fwd_load_float(&p->go);
    const int64_t yn = N * C * DH * DW;
    unsigned char *yb = copy ? malloc((size_t)(yn > 0 ? yn : 1) * es) : NULL;
    float *y = copy ? NULL : malloc((size_t)(yn > 0 ? yn : 1) * sizeof *y);
    rb_axis *ah = malloc((size_t)(DH + DW) * sizeof *ah);
    if ((copy && (xb == NULL || yb == NULL)) || (!copy && (x == NULL || y == NULL)) || ah == NULL) {
        free(xb), free(x), free(yb), free(y), free(ah);
        snprintf(msg, msglen, "out of host memory for the kernel's buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    rb_axis *aw = ah + DH;
    const int cpar = tmpl == FWD_RB950_C_PARALLEL || tmpl == FWD_RB950_NC;
    for (int64_t o = 0; o < DH; o++) {
        ah[o] = cpar ? cpar_axis(o, f->sh, SH, f->half, tmpl == FWD_RB950_NC, fma)
                     : simt_axis(o, f->sh, SH, f->half, tmpl != FWD_RB950_SIMT_HW, fma);
    }
    for (int64_t o = 0; o < DW; o++) {
        aw[o] = cpar ? cpar_axis(o, f->sw, SW, f->half, tmpl == FWD_RB950_NC, fma)
                     : simt_axis(o, f->sw, SW, f->half, tmpl != FWD_RB950_SIMT_HW, fma);
    }
    const int64_t kh = (int64_t)(f->sh + 1e-6f), kw = (int64_t)(f->sw + 1e-6f);
#define XI(h, w) (f->cl ? ((n * SH + (h)) * SW + (w)) * C + c : ((n * C + c) * SH + (h)) * SW + (w))
#define YI(h, w) (f->cl ? ((n * DH + (h)) * DW + (w)) * C + c : ((n * C + c) * DH + (h)) * DW + (w))
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            for (int64_t h = 0; h < DH; h++) {
                for (int64_t w = 0; w < DW; w++) {
                    if (copy) {
                        int64_t sh = h, sw = w; /* ALL_COPY, SIMT_SCENE_ALL_COPY */
                        if (tmpl == FWD_RB950_BROADCAST || mode == 2) {
                            sh = sw = 0;
                        } else if (mode == 3) {
                            sh = sw = 0;
                        } else if (tmpl == FWD_RB950_POINT_COPY) {
                            sh = f->half ? ((2 * h + 1) * kh - 1) / 2 : h * kh;
                            sw = f->half ? ((2 * w + 1) * kw - 1) / 2 : w * kw;
                            sh = sh < SH - 1 ? sh : SH - 1;
                            sw = sw < SW - 1 ? sw : SW - 1;
                        }
                        memcpy(yb + (size_t)YI(h, w) * es, xb + (size_t)XI(sh, sw) * es, es);
                        continue;
                    }
                    const rb_axis th = ah[h], tw = aw[w];
                    const float lt = x[XI(th.lo, tw.lo)], rt = x[XI(th.lo, tw.hi)];
                    const float lb = x[XI(th.hi, tw.lo)], rb = x[XI(th.hi, tw.hi)];
                    float v;
                    if (cpar) {
                        /* ComputeDeltaArgus weights, then Muls, Add(NW, NE), Add(SW, SE), Add */
                        const float hl = th.d, wl = tw.d;
                        const float nw = (1.0f - hl) * (1.0f - wl), ne = (1.0f - hl) * wl;
                        const float sw_ = hl * (1.0f - wl), se = hl * wl;
                        v = (lt * nw + rt * ne) + (lb * sw_ + rb * se);
                    } else {
                        const float dx1 = 1.0f - tw.d, dy1 = 1.0f - th.d;
                        const float top = emu_madd(dx1, lt, tw.d * rt, fma), bot = emu_madd(dx1, lb, tw.d * rb, fma);
                        v = emu_madd(dy1, top, th.d * bot, fma);
                    }
                    y[YI(h, w)] = v;
                }
            }
        }
    }
#undef XI
#undef YI
    int rc = copy ? fwd_store_bytes(p, yb, msg, msglen) : fwd_store_float(p, y, msg, msglen);
    free(xb), free(x), free(yb), free(y), free(ah);
    return rc;
}
