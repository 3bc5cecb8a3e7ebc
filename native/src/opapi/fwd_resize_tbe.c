/*
 * ResizeBilinearV2 forward as the built-in TBE kernel computes it (NC1HWC0): GoResizeBilinearV2AICORE of
 * hicann/ops-cv image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp (A2/A3 when
 * the Cube route does not apply, Atlas training 1001 and 310P 2002 always): BF16 cast to float32 before
 * and back (RNE) after, FLOAT16 and FLOAT passed as they are, TransDataSpecial to NC1HWC0 (the 16 lanes of
 * a C0 block never mix: each (n, c) plane on its own), size = outputSize, align_corners,
 * half_pixel_centers = !align_corners (image/resize_bilinear_v2/op_api/resize_bilinear_v2.cpp), no scales:
 * both directions from the sizes. Sources of the kernel, CANN 8.1.RC1 toolkit (GitHub
 * leideng/CANN-8.1.RC1), opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2.py, and its
 * tiling op_tiling resize_bilinear_v2.cc (GetResizeBilinearV2Tiling):
 *  - tiling key 999999 (_tiling_compute_with_no_bilinear) when the sizes are equal or the input is 1 x 1:
 *    a copy / broadcast ("ResizeBilinearV2_5HD.NO_BILINEAR");
 *  - 100110 (_function_reisze_with_nc_process) when input and output H and W are all < 64 and
 *    N * C1 >= 32 (C1 = ceil(C / 16)) ("ResizeBilinearV2_5HD.NC");
 *  - 100000 (_tiling_compute_default): tik.vcopy and tik.vbi float32 supported (the A2/A3 platform
 *    ini: Intrinsic_vcopy, Intrinsic_vbi float16,float32) -> _function_default_vbi_fp32 (".VBI_FP32");
 *    tik.vbi float16 only and float16 images (310P: Intrinsic_vbi float16) -> _function_default_vbi_fp16
 *    (".VBI_FP16"); else (910: no vbi; 310P float32 images) -> _function_resize_with_l1_default (".L1").
 *  - calculate_scale: vdiv in float32 (every family has Intrinsic_vdiv float32, so no vrec): in / out,
 *    or (in - 1) / (out - 1) when align_corners and out > 1 (vadds -1 on both first). The divide is
 *    taken as correctly rounded (the vector divide's rounding is not public).
 *  - coordinates (calcu_out_in_idx, calcu_out_in_idx_vbi), vector float32 instructions, each rounded:
 *    half pixel: src = max(((o + 0.5) * s) - 0.5, 0) (vadds, vmuls, vadds, vmax); align: src = o * s;
 *    index = floor(src) (vconv floor). No multiply-add to contract here.
 * The modes' sums (float32 unless said; every vector instruction rounds):
 *  - L1: per output row, the two input rows top = floor(srcH) and bottom = min(top + 1, inH - 1) are
 *    blended first, bottom' = (bottom - top) * yl + top with yl = srcH - top (vsub, vmuls, vadd), then
 *    out = (right' - left') * xl + left' with xl = min(srcW, inW - 1) - left (vsub, vmul, vadd):
 *    TensorFlow's lerp form, not a weighted sum. For left = inW - 1 the device reads the next element
 *    of its buffer at weight xl = 0: emulated as the left element itself (finite data: the same value).
 *  - NC: the same lerps (yl from min(srcH, inH - 1)), right = min(left + 1, inW - 1); when right == left
 *    the W step is out = bottom' * 1.0.
 *  - VBI_FP32: weights w00 = (1 - xl)(1 - yl), w10 = xl(1 - yl), w01 = (1 - xl)yl, w11 = xl yl (vmuls,
 *    yl = min(srcH, inH - 1) - top, xl = min(srcW, inW - 1) - left, left = min(floor(srcW), inW - 1),
 *    right = min(left' + 1, inW - 1)); then the vbi instruction: acc = TL w00, acc += TR w10,
 *    acc += BL w01, acc += BR w11 (its horizontal iterations accumulate into dst, TIK/AscendC
 *    BilinearInterpolation documentation). Whether vbi rounds each product before adding is not public
 *    (OPEN): fused (one rounding per step) when the TBE FMA switch is on (ACLEMU_TBE_FMA /
 *    aclemuSetTbeFma), else product and sum each rounded (default). float16 images are widened to
 *    float32 first (vconv), the result rounded once (vconv, RNE).
 *  - VBI_FP16 (310P, float16): the same weights computed in float32, rounded to float16 (vconv), and
 *    the vbi products and accumulation in float16: every product and every addition rounded to float16
 *    (or each fused step rounded once, with the switch): 16-bit accumulation.
 * No atomics (each core writes its own output rows). Forward vs backward by construction: the backward
 * ResizeBilinearV2Grad5HD (tbe5hd.c) scatters with weights 1 - r, r from a scalar coordinate whose
 * multiply-add is OPEN, the forward gathers with vector coordinates (never fused) and TF's lerp or vbi;
 * both take their scales from the sizes. On 910 / 310P the backward V2 with equal sizes launches nothing
 * (out keeps its contents) while the forward copies (NO_BILINEAR): upsample_bilinear2d(x, size = x's)
 * is the identity, its V2 backward leaves gradInput untouched.
 */
#include "fwd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const TBE_NAMES[5] = {"ResizeBilinearV2_5HD.NO_BILINEAR", "ResizeBilinearV2_5HD.NC",
                                         "ResizeBilinearV2_5HD.L1", "ResizeBilinearV2_5HD.VBI_FP32",
                                         "ResizeBilinearV2_5HD.VBI_FP16"};

aclnnStatus fwd_tbe_setup(const fwd_args *a, uint64_t *ws, aclOpExecutor **ex)
{
    emu_op_params p = {.kernel = EMU_KERNEL_FWD};
    aclnnStatus rc = fwd_views(a, &p);
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    const aclTensor *s = a->self;
    const int cl = s->format == ACL_FORMAT_NHWC;
    const int64_t N = s->dims[0], C = cl ? s->dims[3] : s->dims[1], IH = cl ? s->dims[1] : s->dims[2],
                  IW = cl ? s->dims[2] : s->dims[3];
    const int64_t OH = a->os->values[0], OW = a->os->values[1], C1 = (C + 15) / 16;
    p.fw.route = EMU_FWD_TBE;
    p.fw.cl = cl;
    p.fw.align = a->align != 0;
    p.fw.half = !p.fw.align;
    int64_t x[4] = {N, C, IH, IW}, y[4] = {N, C, OH, OW};
    memcpy(p.fw.xd, x, sizeof x);
    memcpy(p.fw.yd, y, sizeof y);
    /* calculate_scale (vdiv): (in - 1) / (out - 1) with align_corners and out > 1, else in / out */
    p.fw.sh = p.fw.align && OH > 1 ? (float)(IH - 1) / (float)(OH - 1) : (float)IH / (float)OH;
    p.fw.sw = p.fw.align && OW > 1 ? (float)(IW - 1) / (float)(OW - 1) : (float)IW / (float)OW;
    int mode;
    if ((IH == OH && IW == OW) || (IH == 1 && IW == 1)) {
        mode = FWD_TBE_NO_BILINEAR;
    } else if (IH < 64 && OH < 64 && IW < 64 && OW < 64 && N * C1 >= 32) {
        mode = FWD_TBE_NC;
    } else if (emu_soc_arch() == 2201u) {
        mode = FWD_TBE_VBI_FP32;
    } else if (emu_soc_arch() == 2002u && s->dtype == ACL_FLOAT16) {
        mode = FWD_TBE_VBI_FP16;
    } else {
        mode = FWD_TBE_L1;
    }
    p.fw.sub = mode;
    p.kname = TBE_NAMES[mode];
    p.ws_size = 0; /* ResizeCommonTiling: no workspace */
    fwd_set_result(&p, 4, a->out->dims);
    return fwd_finish(a, &p, ws, ex);
}

/* ---- phase 2 ---- */

/* float16 rounding of a float32 value (RNE). Products of two float16 values are exact in float32 and
 * sums of two are correctly rounded to float16 through float32 (24 >= 2 * 11 + 2), so r16 of the float32
 * operation is the float16 operation. */
static float r16(float v) { return emu_half_to_float(emu_float_to_half(v)); }

/* a * b + c rounded once to float16 (a, b, c float16 values): the exact product (22 bits) and sum error
 * from double arithmetic, then round-to-nearest-even at the float16 ulp with the error as sticky bit. */
static float fma16(float a, float b, float c)
{
    double p = (double)a * (double)b, s = p + (double)c, bb = s - p, err = (p - (s - bb)) + ((double)c - bb);
    if (s == 0.0) {
        return (float)(err == 0.0 ? s : err); /* the exact sum is err, far below float16: r16 handles it */
    }
    int e;
    frexp(s, &e);                        /* |s| in [2^(e-1), 2^e) */
    int ue = e - 11 > -24 ? e - 11 : -24; /* float16 ulp exponent (subnormals: 2^-24) */
    double q = ldexp(s, -ue), fl = floor(q), frac = q - fl;
    double r = fl;
    if (frac > 0.5 || (frac == 0.5 && (err > 0 || (err == 0 && fmod(fl, 2.0) != 0.0)))) {
        r = fl + 1.0;
    } else if (frac == 0.5 && err < 0) {
        r = fl;
    }
    double v = ldexp(r, ue);
    return fabs(v) >= 65520.0 ? (v > 0 ? INFINITY : -INFINITY) : (float)v;
}

typedef struct {
    int64_t top, bot, left, right;
    float yl, xl;
} tbe_coord;

/* calcu_out_in_idx: the source coordinate of output o. */
static float src_coord(int64_t o, float s, int half)
{
    if (!half) {
        return (float)o * s;
    }
    float v = (float)o + 0.5f;
    v = v * s;
    v = v - 0.5f;
    return v > 0.0f ? v : 0.0f;
}

int fwd_tbe_run(const emu_op_params *p, char *msg, size_t msglen)
{
    const emu_fwd *f = &p->fw;
    const int64_t N = f->xd[0], C = f->xd[1], IH = f->xd[2], IW = f->xd[3], OH = f->yd[2], OW = f->yd[3];
    const int mode = f->sub, fma = p->tbe_fma;
    float *x = fwd_load_float(&p->go);
    float *y = malloc((size_t)(N * C * OH * OW > 0 ? N * C * OH * OW : 1) * sizeof *y);
    float *hs = malloc((size_t)(OH + OW) * sizeof *hs);
    if (x == NULL || y == NULL || hs == NULL) {
        free(x), free(y), free(hs);
        snprintf(msg, msglen, "out of host memory for the kernel's buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    float *wsrc = hs + OH;
    for (int64_t o = 0; o < OH; o++) {
        hs[o] = src_coord(o, f->sh, f->half);
    }
    for (int64_t o = 0; o < OW; o++) {
        wsrc[o] = src_coord(o, f->sw, f->half);
    }
    const int f16 = p->go.dtype == ACL_FLOAT16;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
#define XV(h, w) x[f->cl ? ((n * IH + (h)) * IW + (w)) * C + c : ((n * C + c) * IH + (h)) * IW + (w)]
#define YI(h, w) (f->cl ? ((n * OH + (h)) * OW + (w)) * C + c : ((n * C + c) * OH + (h)) * OW + (w))
            for (int64_t oh = 0; oh < OH; oh++) {
                for (int64_t ow = 0; ow < OW; ow++) {
                    float out;
                    if (mode == FWD_TBE_NO_BILINEAR) { /* copy (equal sizes) or broadcast (input 1 x 1) */
                        out = IH == 1 && IW == 1 ? XV(0, 0) : XV(oh, ow);
                        y[YI(oh, ow)] = out;
                        continue;
                    }
                    const float sh = hs[oh], sw = wsrc[ow];
                    const int64_t top = (int64_t)floorf(sh), bot = top + 1 < IH - 1 ? top + 1 : IH - 1;
                    const int64_t fw0 = (int64_t)floorf(sw);
                    const float swc = fminf(sw, (float)(IW - 1));
                    if (mode == FWD_TBE_L1 || mode == FWD_TBE_NC) {
                        const int64_t left = fw0, right = left + 1 < IW - 1 ? left + 1 : IW - 1;
                        const float yl = mode == FWD_TBE_NC ? fminf(sh, (float)(IH - 1)) - (float)top : sh - (float)top;
                        const float xl = swc - (float)left;
                        float tl = XV(top, left), tr = XV(top, right), bl = XV(bot, left), br = XV(bot, right);
                        float l = (bl - tl) * yl + tl; /* vsub, vmuls, vadd: bottom' = (b - t) * yl + t */
                        float r = (br - tr) * yl + tr;
                        if (mode == FWD_TBE_NC && right == left) {
                            out = l * 1.0f;
                        } else {
                            out = (r - l) * xl + l;
                        }
                    } else {
                        const int64_t left = fw0 < IW - 1 ? fw0 : IW - 1, right = fw0 + 1 < IW - 1 ? fw0 + 1 : IW - 1;
                        const float yl = fminf(sh, (float)(IH - 1)) - (float)top, yl1 = 1.0f - yl;
                        const float xl = swc - (float)left, xl1 = 1.0f - xl;
                        float w[4] = {xl1 * yl1, xl * yl1, xl1 * yl, xl * yl};
                        float v[4] = {XV(top, left), XV(top, right), XV(bot, left), XV(bot, right)};
                        if (mode == FWD_TBE_VBI_FP16 && f16) {
                            for (int k = 0; k < 4; k++) {
                                w[k] = r16(w[k]);
                            }
                            float acc = r16(v[0] * w[0]);
                            for (int k = 1; k < 4; k++) {
                                acc = fma ? fma16(v[k], w[k], acc) : r16(acc + r16(v[k] * w[k]));
                            }
                            out = acc;
                        } else {
                            float acc = v[0] * w[0];
                            for (int k = 1; k < 4; k++) {
                                acc = emu_madd(v[k], w[k], acc, fma);
                            }
                            out = acc;
                        }
                    }
                    y[YI(oh, ow)] = out;
                }
            }
#undef XV
#undef YI
        }
    }
    int rc = fwd_store_float(p, y, msg, msglen);
    free(x), free(y), free(hs);
    return rc;
}
