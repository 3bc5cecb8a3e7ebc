/*
 * aclnnUpsampleBilinear2d (forward): the op_api of hicann/ops-cv
 * image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp (checks, routing) and the
 * Atlas A2/A3 route through the Cube kernel UpsampleBilinear2d (l0op UpsampleBilinear2dNcdhw,
 * op_host/op_api/upsample_bilinear2d.cpp; tiling op_host/upsample_bilinear2d_tiling.cpp; kernel
 * op_kernel/upsample_bilinear2d_kernel.h and upsample_bilinear2d_common.h). The other routes:
 * fwd_resize_tbe.c (ResizeBilinearV2 TBE), fwd_resize_950.c (ResizeBilinearV2With4d).
 *
 * Checks, in CheckParams' order: self or out NULL -> 561103 (CheckNotNull returns
 * ACLNN_ERR_INNER_NULLPTR here, not 161001); self dtype in FLOAT16, FLOAT, DOUBLE, BF16 (every family);
 * out's dtype equal; CheckFormat: storage formats equal, NCHW or NHWC, self and out 4-D, DOUBLE only
 * NHWC; CheckNCDimValid; CheckScalesValid (a negative scale; NaN passes); CheckOutputSize (outputSize
 * NULL -> 161002, 2 values, equal to out's H, W at the format's positions). Then an empty self or out
 * succeeds with nothing launched. workspaceSize / executor are never checked by the source (it writes
 * through them at the end): NULL here is 161001 (emulation).
 *
 * Routing (the same for every family except the first branch):
 *  1. NpuArch 2201, dtype FLOAT16 / FLOAT / BF16, CheckBilinear2dScales and CheckScalesAndShapeValid
 *     (both read dims 2 and 3 whatever the format): GoUpsampleBilinear2DAICORE (below);
 *  2. FLOAT16 / FLOAT / BF16: RegBase (950) -> ResizeBilinearV2With4d with the scales; else the TBE
 *     ResizeBilinearV2 in NC1HWC0 without scales (A2/A3 otherwise, 910, 310P);
 *  3. DOUBLE (NHWC): the AICPU ResizeBilinearV2 (TensorFlow's CPU kernel in CANN's AICPU package; its
 *     source is not public): refused here, 161002 "not emulated".
 *
 * GoUpsampleBilinear2DAICORE: equal H and W (dims 2, 3): the result is self itself (a ViewCopy, bit
 * for bit; kernel name "ViewCopy"). W == 1 and H != 1: the permuteHWNC transpose {0, 1, 3, 2} of self and
 * of out (reshaped to (N, C, outH, outW) of self's N, C first), the kernel with scalesW and scalesH
 * swapped, the transpose back ("UpsampleBilinear2dNcdhw.HWNC"); otherwise the kernel directly
 * ("UpsampleBilinear2dNcdhw"). 16-bit dtypes are cast to float32 before (self and out) and back (RNE).
 * UpsampleBilinear2dNcdhw's scales attribute: both scales > 0 and one differs from 1 by more than 1e-9:
 * {(float)(1 / scalesH), (float)(1 / scalesW)}; both within 1e-9 of 1 with sizes that differ: {0, 0}
 * (reached by BF16 only); else {1, 1}.
 *
 * The kernel (tiling compute_scale_value, kernel calculateRadioTensorW/H, calculateWidthExtension,
 * calculateHeightExtension), per dimension: s = 1 for equal sizes; align_corners: (float)(in - 1) /
 * (float)(out - 1) (0 for out == 1); else the attribute when > 0, else (float)in / (float)out. A scale
 * over 50 fails the tiling (561103). Output o's centre (getCenterValue): align_corners fl32(s * o), else
 * max(s * fl32(o + 0.5) - 0.5, 0), a scalar multiply-add the source leaves to the compiler: fused
 * (fmaf) when the FMA switch is on (ACLEMU_FMA / aclemuSetFmaContraction, as for the 950 kernels), else
 * rounded twice. i0 = min(trunc(centre), in - 1), i1 = min(i0 + 1, in - 1); i0 == i1: weight 1 on i0;
 * else l1 = min(max(centre - i0, 0), 1) and l0 = 1 - l1. Two Cube matmuls in float32: the W pass
 * (rows of self times the outW-column weight matrix) into an intermediate, then the H pass (the
 * outH-row weight matrix times each plane); a pass whose scale is within 1e-6 of 1 (FloatEqual) is
 * skipped: W skipped, the H pass reads self with the intermediate's addressing (plane stride inH*outW,
 * row stride outW); H skipped, the W pass writes its N*C*inH rows straight into the result at row
 * stride outW (rows past the result fail phase 2: an out-of-bounds write; cells never written keep
 * out's contents, which the op_api's Cast / Contiguous of out carried in). The order of the products
 * inside a matmul is not in the source (OPEN): emulated as each output summing its taps in ascending
 * input index from +0, each product rounded; the zero entries of the weight window are left out (on the
 * device an infinite or NaN input inside the window of a slide gives NaN where the weight is 0). No
 * atomics. The NHWC tag is not looked at: an NHWC tensor reaching this route is read as (N, C, H, W),
 * so H is its W and W its C, as the kernel's ND format and the tiling's dims make it.
 *
 * Forward vs backward on A2/A3 (the backward: bilinear.c), by construction:
 *  - a scale on one dimension only: neither direction uses it. The forward fails CheckBilinear2dScales
 *    (|0| < 1e-12) and runs the TBE kernel, both scales from the sizes; the backward V2 fails
 *    ComputeCheckScale (floor(in * 0) != out) and falls back to ResizeBilinearV2Grad, both from the sizes:
 *    upsample_bilinear2d(x of 2 x 3, size (4, 6), scales (None, 1.7)) uses in / out both ways.
 *  - equal sizes with scales: the forward copies (this route's "return self", or the TBE kernel's
 *    NO_BILINEAR when the scales are not 1) while the backward V2 runs its own kernel with 1 / scale, which
 *    is not an identity: in = out = 3 with scales (1.3, 1.3): forward(x) = x, backward sends gradient
 *    rows 0, 1, 2 to input rows 0, 0..1, 1..2: the backward is not the adjoint of the forward there.
 *  - no scales: the forward runs the TBE kernel (lerps / vbi), the backward V2 its own kernel (matmuls):
 *    the same coordinates (in / out), other arithmetic.
 *  - scales 2, 2 (not BF16): the forward runs the TBE kernel (in / out), the backward V2 its own kernel
 *    with 1 / 2: the same scale when out = 2 in.
 *  - the forward's Cube kernel puts weight 1 on the last input cell (i0 == i1) as the backward's matrix
 *    does; the forward's W pass comes first as the backward's does (W then H).
 */
#include "fwd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024u * 1024u)

/* ---- phase 2: the Cube kernel ---- */

typedef struct {
    int64_t i0, i1; /* i1 < 0: weight 1 on i0 only */
    float l0, l1;
} cube_tap;

/* getCenterValue + the weights of calculateRadioTensorW/H. */
static cube_tap cube_tap_of(int64_t o, float s, int64_t in, int align, int fma)
{
    float c;
    if (align) {
        c = s * (float)o;
    } else {
        c = emu_madd(s, (float)o + 0.5f, -0.5f, fma);
        c = c > 0.0f ? c : 0.0f;
    }
    int64_t i0 = (int64_t)c, max = in - 1;
    i0 = i0 < max ? i0 : max;
    int64_t i1 = i0 + 1 < max ? i0 + 1 : max;
    cube_tap t = {i0, -1, 1.0f, 0.0f};
    if (i1 != i0) {
        float l1 = fminf(fmaxf(c - (float)i0, 0.0f), 1.0f);
        t = (cube_tap){i0, i1, 1.0f - l1, l1};
    }
    return t;
}

static int feq(float a, float b) { return a > b ? a - b < 1e-6f : b - a < 1e-6f; }

/* The two matmul passes on x (xd: N, C, ih, iw; xnum elements) into y (ynum elements, addressed as
 * (N, C, oh, ow)). */
static int cube_two_pass(const float *x, int64_t xnum, const int64_t *xd, float *y, int64_t ynum, int64_t oh,
                         int64_t ow, float rh, float rw, int align, int fma, char *msg, size_t msglen)
{
    const int64_t B = xd[0] * xd[1], ih = xd[2], iw = xd[3];
    const int skipW = feq(rw, 1.0f), runH = !feq(rh, 1.0f) || skipW;
    cube_tap *th = malloc((size_t)(oh + ow) * sizeof *th);
    float *inter = !skipW && runH ? malloc((size_t)(B * ih * ow > 0 ? B * ih * ow : 1) * sizeof *inter) : NULL;
    if (th == NULL || (!skipW && runH && inter == NULL)) {
        free(th), free(inter);
        snprintf(msg, msglen, "out of host memory for the kernel's buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    cube_tap *tw = th + oh;
    int64_t hmax = 0;
    for (int64_t o = 0; o < oh; o++) {
        th[o] = cube_tap_of(o, rh, ih, align, fma);
        int64_t top = th[o].i1 > th[o].i0 ? th[o].i1 : th[o].i0;
        hmax = top > hmax ? top : hmax;
    }
    for (int64_t o = 0; o < ow; o++) {
        tw[o] = cube_tap_of(o, rw, iw, align, fma);
    }
    int rc = 0;
    if (!skipW && !runH && B * ih * ow > ynum) {
        snprintf(msg, msglen,
                 "H pass skipped (scale within 1e-6 of 1): the W pass writes N*C*inH*outW = %lld result elements into "
                 "a result of %lld: out-of-bounds write",
                 (long long)(B * ih * ow), (long long)ynum);
        rc = ACL_ERROR_RT_AICORE_EXCEPTION;
    } else if (runH && B * oh * ow > ynum) {
        snprintf(msg, msglen, "the H pass writes %lld result elements into a result of %lld: out-of-bounds write",
                 (long long)(B * oh * ow), (long long)ynum);
        rc = ACL_ERROR_RT_AICORE_EXCEPTION;
    } else if (skipW && B > 0 && (B - 1) * ih * ow + (hmax + 1) * ow > xnum) {
        snprintf(msg, msglen,
                 "W pass skipped (scale within 1e-6 of 1): the H pass reads self with row stride outW %lld (inW %lld) "
                 "up to element %lld of %lld: out-of-bounds read",
                 (long long)ow, (long long)iw, (long long)((B - 1) * ih * ow + (hmax + 1) * ow - 1), (long long)xnum);
        rc = ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    if (rc == 0 && !skipW) { /* W pass: self rows times the outW-column weights */
        float *dst = runH ? inter : y;
        for (int64_t r = 0; r < B * ih; r++) {
            const float *row = x + r * iw;
            for (int64_t o = 0; o < ow; o++) {
                float v = 0.0f + tw[o].l0 * row[tw[o].i0];
                if (tw[o].i1 >= 0) {
                    v = v + tw[o].l1 * row[tw[o].i1];
                }
                dst[r * ow + o] = v;
            }
        }
    }
    if (rc == 0 && runH) { /* H pass: the outH-row weights times each plane (inH x outW) */
        const float *src = skipW ? x : inter;
        for (int64_t b = 0; b < B; b++) {
            const float *plane = src + b * ih * ow;
            for (int64_t r = 0; r < oh; r++) {
                const cube_tap t = th[r];
                for (int64_t c = 0; c < ow; c++) {
                    float v = 0.0f + t.l0 * plane[t.i0 * ow + c];
                    if (t.i1 >= 0) {
                        v = v + t.l1 * plane[t.i1 * ow + c];
                    }
                    y[(b * oh + r) * ow + c] = v;
                }
            }
        }
    }
    free(th);
    free(inter);
    return rc;
}

/* Swaps dims 2 and 3 of a contiguous (a, b, h, w) buffer into (a, b, w, h). */
static float *swap_hw(const float *src, int64_t a, int64_t h, int64_t w)
{
    float *d = malloc((size_t)(a * h * w > 0 ? a * h * w : 1) * sizeof *d);
    for (int64_t p = 0; d != NULL && p < a; p++) {
        for (int64_t i = 0; i < h; i++) {
            for (int64_t j = 0; j < w; j++) {
                d[(p * w + j) * h + i] = src[(p * h + i) * w + j];
            }
        }
    }
    return d;
}

int fwd_cube_run(const emu_op_params *p, char *msg, size_t msglen)
{
    const emu_fwd *f = &p->fw;
    float *x = fwd_load_float(&p->go), *y = fwd_load_float(&p->out); /* Cast / Contiguous of self and out */
    float *xs = NULL, *ys = NULL, *res = NULL;
    int rc = 0;
    if (x == NULL || y == NULL) {
        rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
    } else if (f->hwnc) {
        /* self (a, b, h, 1) -> (a, b, 1, h); out reshaped to (a, b, oh, ow) -> (a, b, ow, oh) */
        const int64_t a = p->go.fdims[0] * p->go.fdims[1], h = p->go.fdims[2], w = p->go.fdims[3];
        const int64_t oh = f->rd[2], ow = f->rd[3];
        xs = swap_hw(x, a, h, w);
        ys = swap_hw(y, a, oh, ow);
        if (xs == NULL || ys == NULL) {
            rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
        } else {
            rc = cube_two_pass(xs, p->go.numel, f->xd, ys, a * oh * ow, f->yd[2], f->yd[3], f->sh, f->sw,
                               f->align, p->fma, msg, msglen);
            res = rc == 0 ? swap_hw(ys, a, ow, oh) : NULL;
            if (rc == 0 && res == NULL) {
                rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
            }
        }
    } else {
        rc = cube_two_pass(x, p->go.numel, f->xd, y, p->out.numel, f->yd[2], f->yd[3], f->sh, f->sw, f->align,
                           p->fma, msg, msglen);
    }
    if (rc == ACL_ERROR_RT_MEMORY_ALLOCATION) {
        snprintf(msg, msglen, "out of host memory for the kernel's buffers");
    } else if (rc == 0) {
        rc = fwd_store_float(p, f->hwnc ? res : y, msg, msglen);
    }
    free(x), free(y), free(xs), free(ys), free(res);
    return rc;
}

/* ---- phase 1 ---- */

/* GetBilinearScales (double, then stored as float by CheckBilinear2dScales). */
static double bilinear_scales(int64_t in, int64_t out, double scale, int align)
{
    if (out == in) {
        return 1.0;
    }
    if (align) {
        return out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0;
    }
    return scale > 0 ? 1.0 / scale : (double)in / (double)out;
}

/* CheckBilinear2dScales && CheckScalesAndShapeValid (dims 2 and 3 of self and out). */
static int cube_route(const fwd_args *a)
{
    const aclTensor *x = a->self, *y = a->out;
    const int64_t ih = x->dims[2], iw = x->dims[3], oh = y->dims[2], ow = y->dims[3];
    double sh = a->scales[0], sw = a->scales[1], sh1 = sh, sw1 = sw;
    const int bf16 = x->dtype == ACL_BF16;
    if (fabs(sw - 2.0) < 1e-9 && fabs(sh - 2.0) < 1e-9 && !bf16) {
        return 0;
    }
    if (fabs(sh) < 1e-12 || fabs(sw) < 1e-12) {
        return 0;
    }
    if (fabs(sh - 1.0) < 1e-9 && fabs(sw - 1.0) < 1e-9 && (oh != ih || ow != iw)) {
        if (!bf16) {
            return 0;
        }
        sh1 = sw1 = 0.0;
    }
    float fh = (float)bilinear_scales(ih, oh, sh1, a->align), fw = (float)bilinear_scales(iw, ow, sw1, a->align);
    if (!(fh <= 50.0f && fw <= 50.0f)) {
        return 0;
    }
    /* static_cast<int64_t>(input * scale) == output (a value outside int64 or NaN: never equal) */
    double vh = (double)ih * sh, vw = (double)iw * sw;
    return vh > -9.2e18 && vh < 9.2e18 && vw > -9.2e18 && vw < 9.2e18 && (int64_t)vh == oh && (int64_t)vw == ow;
}

/* upsample_bilinear2d_tiling.cpp compute_scale_value. */
static float tiling_scale(int64_t in, int64_t out, int align, float attr)
{
    if (out == in) {
        return 1.0f;
    }
    if (align) {
        return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    }
    return attr > 0.0f ? attr : (float)in / (float)out;
}

static aclnnStatus route_cube(const fwd_args *a, emu_op_params *p, uint64_t *ws, aclOpExecutor **ex)
{
    const int64_t *d = a->self->dims, *od = a->out->dims;
    if (d[2] == od[2] && d[3] == od[3]) { /* "if (input_h == output_h && input_w == output_w) return self" */
        p->kernel = EMU_KERNEL_FWD;
        p->fw.route = EMU_FWD_COPY;
        p->kname = "ViewCopy";
        fwd_set_result(p, 4, d);
        return fwd_finish(a, p, ws, ex);
    }
    const int hwnc = d[3] == 1 && d[2] != 1;
    if (hwnc && d[0] * d[1] * od[2] * od[3] != emu_numel(a->out)) {
        EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                 "%s: l0op::Reshape of out to (%lld, %lld, %lld, %lld) (self's N, C) changes its element count %lld",
                 a->api, (long long)d[0], (long long)d[1], (long long)od[2], (long long)od[3],
                 (long long)emu_numel(a->out));
    }
    /* UpsampleBilinear2dNcdhw's attribute, on the scales as passed (swapped for the HWNC call) */
    const double s0 = hwnc ? a->scales[1] : a->scales[0], s1 = hwnc ? a->scales[0] : a->scales[1];
    int64_t x[4] = {d[0], d[1], hwnc ? d[3] : d[2], hwnc ? d[2] : d[3]};
    int64_t y[4] = {d[0], d[1], hwnc ? od[3] : od[2], hwnc ? od[2] : od[3]};
    float attr0, attr1;
    if (s0 > 0 && s1 > 0 && (fabs(s0 - 1.0) > 1e-9 || fabs(s1 - 1.0) > 1e-9)) {
        attr0 = (float)(1 / s0);
        attr1 = (float)(1 / s1);
    } else if (fabs(s0 - 1.0) < 1e-9 && fabs(s1 - 1.0) < 1e-9 && (y[2] != x[2] || y[3] != x[3])) {
        attr0 = attr1 = 0.0f;
    } else {
        attr0 = attr1 = 1.0f;
    }
    p->kernel = EMU_KERNEL_FWD;
    p->fw.route = EMU_FWD_CUBE;
    p->fw.hwnc = hwnc;
    p->fw.align = a->align != 0;
    memcpy(p->fw.xd, x, sizeof x);
    memcpy(p->fw.yd, y, sizeof y);
    p->fw.sh = tiling_scale(x[2], y[2], p->fw.align, attr0);
    p->fw.sw = tiling_scale(x[3], y[3], p->fw.align, attr1);
    if (p->fw.sh > 50.0f || p->fw.sw > 50.0f) { /* tiling CheckScales: the launcher fails, the l0op nullptr */
        EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                 "%s: UpsampleBilinear2d tiling failed: Scales should not exceed 50, but got scale (scales_w: %f, "
                 "scales_h: %f)",
                 a->api, (double)p->fw.sw, (double)p->fw.sh);
    }
    p->kname = hwnc ? "UpsampleBilinear2dNcdhw.HWNC" : "UpsampleBilinear2dNcdhw";
    /* getWorkSpace: the float32 intermediate N*C*inH*outW (512-aligned) + WORK_SPACE_SIZE 32 MiB (the
     * per-core weight matrices, a few KiB, are not counted here) */
    uint64_t inter = (uint64_t)(x[0] * x[1] * x[2] * y[3]) * 4u;
    p->ws_size = (inter + 511u) / 512u * 512u + 32u * MIB;
    /* the result: out's Cast / Contiguous buffer itself (direct), or the transpose back of the reshaped
     * kernel output (HWNC), (N, C, outH, outW) of self's N, C */
    int64_t rd[4] = {d[0], d[1], od[2], od[3]};
    fwd_set_result(p, 4, hwnc ? rd : od);
    return fwd_finish(a, p, ws, ex);
}

static aclnnStatus prepare(const fwd_args *a, uint64_t *ws, aclOpExecutor **ex)
{
    const aclTensor *s = a->self, *o = a->out;
    if (s == NULL || o == NULL) { /* CHECK_RET(CheckNotNull(selfRef, out), ACLNN_ERR_INNER_NULLPTR) */
        EMU_FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s is NULL", a->api, s == NULL ? "self" : "out");
    }
    const emu_op_spec sp = {.api = a->api, .op_name = a->op_name, .op = 0};
    aclnnStatus rc = fwd_check_live(a);
    if (rc != ACLNN_SUCCESS || (rc = emu_check_arch(&sp)) != ACLNN_SUCCESS) {
        return rc;
    }
    const int32_t dt = s->dtype;
    if (!(dt == ACL_FLOAT16 || dt == ACL_FLOAT || dt == ACL_DOUBLE || dt == ACL_BF16)) { /* CheckDtypeValid */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s (%d) is not supported; expected FLOAT16, FLOAT, DOUBLE, BF16",
                 a->api, emu_dtype_name(dt), dt);
    }
    if (o->dtype != dt) { /* CheckDtypeEqual */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s and out dtype %s must be the same", a->api,
                 emu_dtype_name(dt), emu_dtype_name(o->dtype));
    }
    /* CheckFormat */
    if (s->format != o->format) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Format of input and output should be equal, self [%s], out [%s].",
                 a->api, emu_format_name(s->format), emu_format_name(o->format));
    }
    if (s->format != ACL_FORMAT_NCHW && s->format != ACL_FORMAT_NHWC) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Do not support this format(%s) of input and output.", a->api,
                 emu_format_name(s->format));
    }
    if (s->ndim != 4 || o->ndim != 4) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s must be 4D, got %lluD", a->api, s->ndim != 4 ? "self" : "out",
                 (unsigned long long)(s->ndim != 4 ? s->ndim : o->ndim));
    }
    if (s->format == ACL_FORMAT_NCHW && dt == ACL_DOUBLE) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: When dtype is DOUBLE, only support NHWC format", a->api);
    }
    const int nhwc = s->format == ACL_FORMAT_NHWC, cd = nhwc ? 3 : 1;
    if (s->dims[0] != o->dims[0] || s->dims[cd] != o->dims[cd]) { /* CheckNCDimValid */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: The selfDimN[%lld]/outDimN[%lld] or selfDimC[%lld]/outDimC[%lld] not equal .",
                 a->api, (long long)s->dims[0], (long long)o->dims[0], (long long)s->dims[cd], (long long)o->dims[cd]);
    }
    if (a->scales[1] < 0 || a->scales[0] < 0) { /* CheckScalesValid(scalesW, scalesH) */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: w scales and h scales cannot be negative , w_scales [%f], h_scales [%f].",
                 a->api, a->scales[1], a->scales[0]);
    }
    if (a->os == NULL) { /* CheckOutputSize */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputSize must not be null.", a->api);
    }
    if (a->os->size != 2) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputSize size must be 2, but got %llu.", a->api,
                 (unsigned long long)a->os->size);
    }
    const int64_t ohd = nhwc ? o->dims[1] : o->dims[2], owd = nhwc ? o->dims[2] : o->dims[3];
    if (a->os->values[0] != ohd || a->os->values[1] != owd) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Expected output size (H: %lld, W: %lld), but got output tensor size (H: %lld, W: %lld).", a->api,
                 (long long)a->os->values[0], (long long)a->os->values[1], (long long)ohd, (long long)owd);
    }
    if (ws == NULL || ex == NULL) { /* the source writes through both at the end; not a defined result */
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", a->api, ws == NULL ? "workspaceSize" : "executor");
    }
    if (emu_numel(s) == 0 || emu_numel(o) == 0) {
        return fwd_empty(a, ws, ex);
    }
    if (dt == ACL_DOUBLE) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: DOUBLE runs the AICPU ResizeBilinearV2 (TensorFlow's CPU kernel, not in the public sources): not "
                 "emulated",
                 a->api);
    }
    emu_op_params p = {.kernel = EMU_KERNEL_FWD};
    if ((rc = fwd_views(a, &p)) != ACLNN_SUCCESS) {
        return rc;
    }
    const int gen = emu_soc_generation();
    if (emu_soc_arch() == 2201u && cube_route(a)) {
        return route_cube(a, &p, ws, ex);
    }
    return gen == EMU_GEN_950 ? fwd_rb950_setup(a, ws, ex) : fwd_tbe_setup(a, ws, ex);
}

aclnnStatus aclnnUpsampleBilinear2dGetWorkspaceSize(const aclTensor *self, const aclIntArray *outputSize,
                                                    const bool alignCorners, const double scalesH,
                                                    const double scalesW, aclTensor *out, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor)
{
    fwd_args a = {.api = "aclnnUpsampleBilinear2dGetWorkspaceSize", .op_name = "aclnnUpsampleBilinear2d",
                  .spatial = 2, .bilinear = 1, .self = self, .os = outputSize, .scales = {scalesH, scalesW},
                  .align = alignCorners, .out = out};
    return prepare(&a, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleBilinear2d(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream)
{
    return emu_launch("aclnnUpsampleBilinear2d", workspace, workspaceSize, executor, stream);
}
