/*
 * Bilinear backward on Ascend 950 (arch35, RegBase): the op_api side and ResizeBilinearV2Grad's
 * tiling, i.e. which kernel runs with which scales. The kernels: resize_gather_950.c (DETERMINE,
 * DETERMINE_SCALES), resize_scatter_950.c (SIMT, C_PARALLEL, POINT_COPY), kernels.c (ALL_COPY).
 *
 * op_api (ops-cv):
 *  - image/upsample_bilinear2d_grad/op_host/op_api/aclnn_upsample_bilinear_2d_backward_v2.cpp (V2,
 *    aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize, IsRegBase() branch): no scale checks at all
 *    (ComputeCheckScale / CheckMinScale only steer the A2 branches), CheckUplimit skipped; every
 *    non-empty call is ResizeBilinearV2Grad(gradOut, originalImage = inputSize with out's dtype and
 *    out's format, alignCorners, halfPixelCenters = !alignCorners, scales = {(float)scalesH,
 *    (float)scalesW}).
 *  - image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp (V1): equal sizes
 *    are a ViewCopy as on A2; otherwise the same ResizeBilinearV2Grad call, the scales included (A2's
 *    V1 passes none). CheckDtypeValid (RegBase): gradOut FLOAT, FLOAT16 or BF16; a FLOAT gradOut may
 *    have a FLOAT, FLOAT16 or BF16 out, any other needs out's dtype equal. CheckFormat (RegBase, after
 *    CheckNCDimValid): gradOut and out formats equal, NCHW or NHWC.
 *
 * Tiling (image/resize_bilinear_v2_grad/op_host/arch35/resize_bilinear_v2_grad_tiling_arch35.cpp;
 * there "Src" is y, the result, and "Des" is grads, the gradient):
 *  - CheckFormatValid: grads, original_image and y formats equal (else the tiling fails, phase 1
 *    answers 561103: V2 with gradOut and out tagged differently); CheckDtypeValid as V1's above.
 *  - GetPlatformInfo: isDetermine = GetDeterministic() == 1 (soc.c: read at phase 1).
 *  - IsMatchSimtDetermine = isDetermine || (!align && !halfPixel) || grads dtype != y dtype.
 *  - SetScales(det): align: det ? (src > 1 && des > 1 ? (src-1)/(des-1) : src/des)
 *                              : (des > 1 ? (src-1)/(des-1) : 0);
 *    not align: the attribute > 0 ? 1.0f / attribute : src/des (all float32); det: inverse = 1 / s.
 *  - SetTilingKey, in order: ALL_COPY (equal H and W, equal dtypes; the scales are ignored);
 *    POINT_COPY (IsMatchPointCopy); the gather SetSimtTilingKey(true) when IsMatchSimtDetermine;
 *    C_PARALLEL (IsMatchCParallel: y NHWC and C * dtype size >= 128 bytes for grads and y); the
 *    gather when a scale is in (0, 1) (that dimension was upsampled), its scales then recomputed by
 *    SetScales(true); otherwise the SIMT scatter. SetSimtTilingKey(true): DETERMINE when align, or
 *    when |src/des - s| < 1e-6 on both dimensions; else DETERMINE_SCALES. _NHWC when y is NHWC,
 *    _IDX64 when a size leaves the 32-bit index range.
 *  - DoTiling: workspace 32 bytes (WORKSPACE_SIZE).
 */
#include "opapi.h"

#include <math.h>
#include <stdint.h>

static int supported(int32_t d) { return d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16; }

aclnnStatus emu_resize950_check_dtypes(const emu_op_spec *sp, const emu_args *a, int sizes_same)
{
    int32_t g = a->go->dtype, o = a->out->dtype;
    if (sizes_same) { /* V1's ViewCopy: only the equality check (the emulation stores three dtypes) */
        return emu_check_dtypes(sp, a, 1);
    }
    if (!supported(g)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput dtype %s (%d) is not supported; expected FLOAT, FLOAT16, BF16",
                 sp->api, emu_dtype_name(g), g);
    }
    if (g != ACL_FLOAT && o != g) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: out dtype %s must equal gradOutput dtype %s (only a FLOAT gradOutput may have a FLOAT16 or "
                 "BF16 out)",
                 sp->api, emu_dtype_name(o), emu_dtype_name(g));
    }
    if (g == ACL_FLOAT && !supported(o)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out dtype %s (%d) is not supported; expected FLOAT, FLOAT16, BF16",
                 sp->api, emu_dtype_name(o), o);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus emu_resize950_check_format(const emu_op_spec *sp, const emu_args *a)
{
    if (a->go->format != a->out->format) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: The gradOut and out must have same format, got %s and %s", sp->api,
                 emu_format_name(a->go->format), emu_format_name(a->out->format));
    }
    if (a->out->format != ACL_FORMAT_NCHW && a->out->format != ACL_FORMAT_NHWC) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: The format must be NCHW or NHWC, got %s", sp->api,
                 emu_format_name(a->out->format));
    }
    return ACLNN_SUCCESS;
}

/* The tiling's inputs. */
typedef struct {
    int64_t src[2], des[2]; /* y (result) and grads (gradient) sizes, H then W */
    int64_t N, C;
    int align, half_pixel, det, nhwc;
    int32_t gdt, ydt;
    float attr[2]; /* the scales attribute: (float)scalesH, (float)scalesW */
} tiling_in;

static int dtype_size(int32_t d) { return d == ACL_FLOAT ? 4 : 2; }

/* SetScales for one dimension. */
static float set_scale(const tiling_in *t, int d, int det)
{
    int64_t src = t->src[d], des = t->des[d];
    if (t->align) {
        if (det) {
            return src > 1 && des > 1 ? (float)(src - 1) / (float)(des - 1) : (float)src / (float)des;
        }
        return des > 1 ? (float)(src - 1) / (float)(des - 1) : 0.0f;
    }
    return t->attr[d] > 0.0f ? 1.0f / t->attr[d] : (float)src / (float)des;
}

static void set_scales(const tiling_in *t, emu_op_params *p, int det)
{
    p->sH = set_scale(t, 0, det);
    p->sW = set_scale(t, 1, det);
    if (det) {
        p->invH = 1.0f / p->sH;
        p->invW = 1.0f / p->sW;
    }
}

/* IsMatchCParallel (its C * size conditions are also POINT_COPY's). */
static int c_parallel(const tiling_in *t)
{
    return t->nhwc && t->C * dtype_size(t->gdt) >= 128 && t->C * dtype_size(t->ydt) >= 128;
}

/* IsMatchPointCopy */
static int point_copy(const tiling_in *t)
{
    if (t->gdt != t->ydt || !c_parallel(t)) {
        return 0;
    }
    const int64_t *s = t->src, *d = t->des;
    if (t->align) {
        return (d[0] == 1 && d[1] == 1) ||
               (d[0] > 1 && d[1] > 1 && (s[0] - 1) % (d[0] - 1) == 0 && (s[1] - 1) % (d[1] - 1) == 0);
    }
    if (t->attr[0] > 0.0f || t->attr[1] > 0.0f) {
        return 0;
    }
    if (s[0] % d[0] != 0 || s[1] % d[1] != 0) {
        return 0;
    }
    return !t->half_pixel || ((s[0] / d[0]) % 2 == 1 && (s[1] / d[1]) % 2 == 1);
}

static const char *const GATHER_NAMES[2][2][2] = {
    /* [scales][nhwc][idx64] */
    {{"ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE", "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_IDX64"},
     {"ResizeBilinearV2Grad.SIMT_NHWC_DETERMINE", "ResizeBilinearV2Grad.SIMT_NHWC_DETERMINE_IDX64"}},
    {{"ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES", "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES_IDX64"},
     {"ResizeBilinearV2Grad.SIMT_NHWC_DETERMINE_SCALES", "ResizeBilinearV2Grad.SIMT_NHWC_DETERMINE_SCALES_IDX64"}},
};
static const char *const SCATTER_NAMES[2][2] = {
    {"ResizeBilinearV2Grad.SIMT_NCHW", "ResizeBilinearV2Grad.SIMT_NCHW_IDX64"},
    {"ResizeBilinearV2Grad.SIMT_NHWC", "ResizeBilinearV2Grad.SIMT_NHWC_IDX64"},
};

/* SetSimtTilingKey(isDetermine = true), with the scales in force when it is called. */
static void gather_key(const tiling_in *t, emu_op_params *p, int idx64)
{
    const float eps = 1e-6f; /* FLT_EPSILON in the tiling */
    int plain = t->align || (fabsf((float)t->src[0] / (float)t->des[0] - p->sH) < eps &&
                             fabsf((float)t->src[1] / (float)t->des[1] - p->sW) < eps);
    p->kernel = plain ? EMU_KERNEL_RB950_DETERMINE : EMU_KERNEL_RB950_DETERMINE_SCALES;
    p->kname = GATHER_NAMES[!plain][t->nhwc][idx64];
}

/* SetTilingKey (after Init's SetScales(IsMatchSimtDetermine())). */
static void choose(const tiling_in *t, emu_op_params *p)
{
    int64_t ysz = t->N * t->C * t->des[0] * t->des[1], xsz = t->N * t->C * t->src[0] * t->src[1];
    int idx64 = !(ysz < (int64_t)UINT32_MAX && xsz < (int64_t)UINT32_MAX && t->src[0] <= INT32_MAX &&
                  t->src[1] <= INT32_MAX && t->des[0] <= INT32_MAX && t->des[1] <= INT32_MAX);
    int simt_det = t->det || (!t->align && !t->half_pixel) || t->gdt != t->ydt;
    set_scales(t, p, simt_det);
    if (t->src[0] == t->des[0] && t->src[1] == t->des[1] && t->gdt == t->ydt) {
        p->kernel = EMU_KERNEL_RB950_ALL_COPY;
        p->kname = "ResizeBilinearV2Grad.ALL_COPY";
    } else if (point_copy(t)) {
        p->kernel = EMU_KERNEL_RB950_POINT_COPY;
        p->kname = "ResizeBilinearV2Grad.POINT_COPY";
    } else if (simt_det) {
        gather_key(t, p, idx64);
    } else if (c_parallel(t)) {
        p->kernel = EMU_KERNEL_RB950_C_PARALLEL;
        p->kname = "ResizeBilinearV2Grad.C_PARALLEL";
    } else if ((p->sH > 0.0f && p->sH < 1.0f) || (p->sW > 0.0f && p->sW < 1.0f)) {
        gather_key(t, p, idx64); /* keyed with the scales of SetScales(false), then recomputed */
        set_scales(t, p, 1);
    } else {
        p->kernel = EMU_KERNEL_RB950_SIMT;
        p->kname = SCATTER_NAMES[t->nhwc][idx64];
    }
}

aclnnStatus emu_resize950_finish(const emu_op_spec *sp, const emu_args *a, int cl, uint64_t *workspaceSize,
                                 aclOpExecutor **executor)
{
    if (a->go->format != a->out->format) { /* tiling CheckFormatValid fails: the op_api answers 561103 */
        EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                 "%s: ResizeBilinearV2Grad tiling failed: the formats of grads (%s), original_image and y (%s) "
                 "must be the same",
                 sp->api, emu_format_name(a->go->format), emu_format_name(a->out->format));
    }
    const int64_t *is = a->is->values, *os = a->os->values;
    tiling_in t = {
        .src = {cl ? is[1] : is[2], cl ? is[2] : is[3]},
        .des = {os[0], os[1]},
        .N = is[0],
        .C = cl ? is[3] : is[1],
        .align = a->align != 0,
        .half_pixel = a->align == 0,
        .det = emu_phase1_deterministic(),
        .nhwc = cl,
        .gdt = a->go->dtype,
        .ydt = a->out->dtype,
        .attr = {(float)a->scales[0], (float)a->scales[1]},
    };
    emu_op_params p = {.kernel = EMU_KERNEL_RB950_SIMT};
    choose(&t, &p);
    p.half_pixel = t.half_pixel;
    p.ws_size = 32; /* DoTiling: workspaces[0] = WORKSPACE_SIZE */
    return emu_finish(sp, a, &p, 2, cl, cl, workspaceSize, executor);
}
