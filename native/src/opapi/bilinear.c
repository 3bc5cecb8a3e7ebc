/*
 * Bilinear 2d backward, V1 and V2, as an Atlas A2/A3 (DAV_2201) device runs them (on Ascend 950 the
 * RegBase checks differ as marked in prepare() and the kernel is resize_grad_950.c's). Sources in ops-cv:
 *  - image/upsample_bilinear2d_grad/op_host/op_api/aclnn_upsample_bilinear_2d_backward_v2.cpp (V2):
 *    check order; out must be NCHW or NHWC; an NHWC gradOutput has dims (N, H, W, C) and inputSize
 *    (N, H, W, C) and is computed channels-last (DoBilinearGradNHWC). Routing: equal sizes, or a scale
 *    check that passes (no scale given, or BOTH dims satisfy out == floor(in * scale)) together with
 *    CheckMinScale (1/scale or in/out >= 0.01 on both dims) run the UpsampleBilinear2dGrad kernel with
 *    the scales 1/scale (0 = derive from sizes); anything else falls back to ResizeBilinearV2Grad,
 *    which derives both scales from the sizes (a scale on one dimension only is ignored for both).
 *  - image/resize_bilinear_v2_grad/op_api/aclnn_upsample_bilinear_2d_backward.cpp (V1): no scales on
 *    A2; equal sizes are a plain view copy (any dtype, so BF16 too); otherwise FLOAT/FLOAT16 only and
 *    ResizeBilinearV2Grad. CheckShape reads out's dims channels-last unless out is NCHW;
 *    ChecksInputElement reads gradOutput's dims channels-last when it is NHWC.
 *  - common/stub/op_api/aclnn_kernels/common/op_error_check.h (CheckNCDimValid): gradOutput must be
 *    NCHW or NHWC in both ops, with N and C equal to out's.
 *  - image/upsample_bilinear2d_grad/op_host/upsample_bilinear2d_grad_tiling.cpp (compute_scale_value)
 *    and op_kernel/upsample_bilinear2d_grad_kernel.h (calculateIntermediateTensorX/Y, setRadioValueW/H):
 *    kernel scale s = align ? (in - 1) / (out - 1) (0 when out <= 1) : the given 1/scale, else in/out;
 *    src = align ? o * s : max((o + 0.5) * s - 0.5, 0) in float32; cell floor(src) gets 1 - lambda and
 *    the next cell lambda = src - floor(src); the last cell gets weight 1.0 (its matrix column next
 *    to it holds a 0, kept here as a zero-weight term); cells past the end get nothing. Summed by
 *    the two-pass structure of kernels.c.
 *  - Where the source is ambiguous: a V1 out tagged neither NCHW nor NHWC is read channels-last (as
 *    CheckShape does); V2 with gradOutput and out tagged differently computes in gradOutput's layout
 *    (its NHWC path transposes gradOutput and the result; the fallback's TransData is not modelled).
 *  - ResizeBilinearV2Grad on A2/A3 (and on 1001 / 2002) is the built-in TBE kernel
 *    ResizeBilinearV2Grad5HD (DoResizeBilinearV2Grad: TransData to NC1HWC0, cast to float32, the
 *    kernel, cast back): tbe5hd.c. It derives both scales from the sizes (scales ignored).
 *  - Atlas training (NpuArch 1001) and 310P (2002), from aclnn_upsample_bilinear_2d_backward_v2.cpp:
 *    CheckDtypeValid allows FLOAT and FLOAT16 only (DTYPE_SUPPORT_LIST_310P) when the sizes differ;
 *    the routing (l.408: sizes differ and arch != DAV_2201 -> DoResizeBilinearV2Grad; l.415: arch ==
 *    DAV_2201 -> UpsampleBilinear2dGrad) runs NEITHER branch for equal sizes there: nothing is
 *    launched, workspace 0, out keeps its contents. V1 (aclnn_upsample_bilinear_2d_backward.cpp, not
 *    RegBase) is the A2 V1: ViewCopy for equal sizes, otherwise the TBE kernel.
 */
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* UpsampleBilinear2dGrad's taps for one dimension (see the header comment). */
static void bilinear_grad_taps(emu_tap *t, int64_t out, int64_t in, float s, int align)
{
    for (int64_t o = 0; o < out; o++) {
        float src = align ? (float)o * s : ((float)o + 0.5f) * s - 0.5f;
        src = src > 0.0f ? src : 0.0f;
        float f = floorf(src);
        float lambda = src - f;
        int64_t i0 = (int64_t)f;
        if (i0 > in - 1) {
            t[o] = (emu_tap){-1, -1, 0.0f, 0.0f};
        } else if (i0 == in - 1) { /* the matrix still holds the 0 of the next column: 0 * inf = NaN */
            t[o] = (emu_tap){(int32_t)i0, (int32_t)i0, 1.0f, 0.0f};
        } else {
            t[o] = (emu_tap){(int32_t)i0, (int32_t)(i0 + 1), 1.0f - lambda, lambda};
        }
    }
}

int emu_bilinear_grad_run(const emu_op_params *p, char *msg, size_t msglen)
{
    emu_tap *th = malloc((size_t)(p->outH + p->outW) * sizeof *th);
    if (th == NULL) {
        snprintf(msg, msglen, "out of host memory for the kernel's weight tables");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    emu_tap *tw = th + p->outH;
    bilinear_grad_taps(th, p->outH, p->inH, p->sH, p->align_corners);
    bilinear_grad_taps(tw, p->outW, p->inW, p->sW, p->align_corners);
    int rc = emu_two_pass(p, th, tw, emu_float_equal(p->sH, 1.0f), emu_float_equal(p->sW, 1.0f), NULL, 0, msg,
                          msglen);
    free(th);
    return rc;
}

/* ---- phase 1 ---- */

static int sizes_same(const emu_args *a)
{
    for (int i = 0; i < 4; i++) {
        if (a->go->dims[i] != a->is->values[i]) {
            return 0;
        }
    }
    return 1;
}

/* gradOutput's dims against inputSize and outputSize read in one layout (channels-last or not). */
static aclnnStatus check_grad_dims(const emu_op_spec *sp, const emu_args *a, int cl, const char *rule)
{
    const int64_t *is = a->is->values, *os = a->os->values;
    int64_t inH = cl ? is[1] : is[2], inW = cl ? is[2] : is[3], C = cl ? is[3] : is[1];
    int64_t full[4] = {is[0], C, os[0], os[1]};
    if (cl) {
        full[1] = os[0];
        full[2] = os[1];
        full[3] = C;
    }
    if (!(inH > 0 && inW > 0 && os[0] > 0 && os[1] > 0)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Input and output sizes should be greater than 0, but got input (H: %lld, W: %lld) output (H: "
                 "%lld, W: %lld)",
                 sp->api, (long long)inH, (long long)inW, (long long)os[0], (long long)os[1]);
    }
    for (int i = 0; i < 4; i++) {
        if (a->go->dims[i] != full[i]) {
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                     "%s: Expected gradOutput to have the same shape as output (%s); output.size(%d) = %lld but got "
                     "gradOutput.size(%d) = %lld",
                     sp->api, rule, i, (long long)full[i], i, (long long)a->go->dims[i]);
        }
    }
    return ACLNN_SUCCESS;
}

/* CheckShape: gradOutput 4-D (both ops). out: V1's CheckShape reads its dims 0..3 (a lower rank is
 * refused here: the host would read past the shape); V2 never checks out's rank (its CheckShape has no
 * out; CheckNCDimValid, check_nc, reads dims 0 and 1 or 3 only). */
static aclnnStatus check_ranks(const emu_op_spec *sp, const emu_args *a)
{
    const int v1 = sp->op == EMU_OP_BILINEAR_V1;
    if (a->go->ndim != 4 || (v1 && a->out->ndim < 4)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s must be 4D, got %lluD", sp->api,
                 a->go->ndim != 4 ? "gradOutput" : "out",
                 (unsigned long long)(a->go->ndim != 4 ? a->go->ndim : a->out->ndim));
    }
    if (a->is->size != 4 || a->os->size != 2) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: It is expected input_size equals to 4 and output_size equals to 2, but got sizes %llu and %llu",
                 sp->api, (unsigned long long)a->is->size, (unsigned long long)a->os->size);
    }
    return ACLNN_SUCCESS;
}

/* CheckNCDimValid: gradOutput NCHW or NHWC, N and C (at that format's positions) equal to out's. */
static aclnnStatus check_nc(const emu_op_spec *sp, const emu_args *a)
{
    int32_t f = a->go->format;
    if (f != ACL_FORMAT_NCHW && f != ACL_FORMAT_NHWC) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Input and output format only support [NCHW, NHWC] format, got %s (%d)",
                 sp->api, emu_format_name(f), f);
    }
    int c = f == ACL_FORMAT_NHWC ? 3 : 1;
    if (a->out->ndim <= (uint64_t)c) { /* GetDim past out's rank: not a defined result in the host code */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out has %llu dims but CheckNCDimValid reads its dim %d", sp->api,
                 (unsigned long long)a->out->ndim, c);
    }
    if (a->go->dims[0] != a->out->dims[0] || a->go->dims[c] != a->out->dims[c]) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: The selfDimN[%lld]/outDimN[%lld] or selfDimC[%lld]/outDimC[%lld] not "
                 "equal", sp->api, (long long)a->go->dims[0], (long long)a->out->dims[0], (long long)a->go->dims[c],
                 (long long)a->out->dims[c]);
    }
    return ACLNN_SUCCESS;
}

/* out's dims are inputSize in both layouts (CheckShape in V1, CheckReduceOutShape in V2). */
static aclnnStatus check_out_dims(const emu_op_spec *sp, const emu_args *a)
{
    for (int i = 0; i < 4; i++) {
        if (a->out->dims[i] != a->is->values[i]) {
            char x[160], y[160];
            emu_shape_str(x, sizeof x, a->out->dims, 4);
            emu_shape_str(y, sizeof y, a->is->values, 4);
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out shape %s must equal inputSize %s", sp->api, x, y);
        }
    }
    return ACLNN_SUCCESS;
}

/*
 * CheckDtypeValid (both ops): with sizes that differ a dtype list; with equal sizes only out's dtype
 * == gradOutput's (any dtype). V1 then copies (ViewCopy), V2 on A2 casts to float32, runs its kernel
 * and casts back (l0op::Cast), V2 on 1001 / 2002 launches nothing. The emulation stores FLOAT,
 * FLOAT16, BF16, DOUBLE and INT32; another dtype the host accepts here is refused as not emulated.
 * Ascend 950 keeps the list for every call (resize_grad_950.c, not re-derived).
 */
static aclnnStatus check_dtypes(const emu_op_spec *sp, const emu_args *a, int allow_bf16, int a950)
{
    if (!sizes_same(a) || a950) {
        return emu_check_dtypes(sp, a, allow_bf16 || sizes_same(a));
    }
    int32_t d = a->go->dtype;
    if (a->out->dtype != d) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput dtype %s and out dtype %s must be the same", sp->api,
                 emu_dtype_name(d), emu_dtype_name(a->out->dtype));
    }
    if (!(d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16 || d == ACL_DOUBLE || d == ACL_INT32)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: dtype %s (%d) with equal sizes passes the op_api's checks but is not emulated (FLOAT, FLOAT16, "
                 "BF16, DOUBLE, INT32 are)",
                 sp->api, emu_dtype_name(d), d);
    }
    return ACLNN_SUCCESS;
}

/* CheckReduceOutShape(result, out) (common/stub/op_api/aclnn_kernels/common/op_error_check.h): out's
 * view shape equals the result's (N, C, H, W of inputSize, as laid out), or both have one element. */
static aclnnStatus check_reduce_out(const emu_op_spec *sp, const emu_args *a)
{
    int same = a->out->ndim == 4;
    int64_t want = 1;
    for (int i = 0; i < 4; i++) {
        same = same && a->out->dims[i] == a->is->values[i];
        want *= a->is->values[i];
    }
    if (!same && !(want == 1 && emu_numel(a->out) == 1)) {
        char x[160], y[160];
        emu_shape_str(x, sizeof x, a->out->dims, a->out->ndim);
        emu_shape_str(y, sizeof y, a->is->values, 4);
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: The out tensor's shape%s is not equal with inferOut shape%s", sp->api, x,
                 y);
    }
    return ACLNN_SUCCESS;
}

/* UpsampleBilinear2dGrad's scale (upsample_bilinear2d_grad_tiling.cpp compute_scale_value): the given
 * 1/scale, else from the sizes ((in - 1) / (out - 1), 0 for out <= 1, with align_corners). */
static float kernel_scale(int64_t in, int64_t out, int align, double scale)
{
    float given = scale > 0 ? (float)(1.0 / scale) : 0.0f;
    if (!align && given > 0) {
        return given;
    }
    if (align) {
        return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    }
    return (float)in / (float)out;
}

/* V2's choice of the UpsampleBilinear2dGrad kernel over the ResizeBilinearV2Grad fallback. */
static int v2_uses_kernel(const emu_args *a, int cl)
{
    if (sizes_same(a)) {
        return 1;
    }
    const int64_t *is = a->is->values, *os = a->os->values;
    int64_t in[2] = {cl ? is[1] : is[2], cl ? is[2] : is[3]};
    if (fabs(a->scales[0]) > 1e-9 || fabs(a->scales[1]) > 1e-9) { /* ComputeCheckScale */
        for (int d = 0; d < 2; d++) {
            if ((double)os[d] != floor((double)in[d] * a->scales[d])) { /* NaN: never equal */
                return 0;
            }
        }
    }
    /* CheckMinScale reads inputSize[2..3] and gradOutput dims 2..3 whatever the format, so for NHWC
     * its "H" is W and its "W" is C (C / C = 1): a quirk of the source, followed here. */
    for (int d = 0; d < 2; d++) {
        double real = a->scales[d] > 0 ? 1.0 / a->scales[d] : (double)is[2 + d] / (double)a->go->dims[2 + d];
        if (real < 0.01) {
            return 0;
        }
    }
    return 1;
}

static aclnnStatus prepare(const emu_op_spec *sp, const emu_args *a, uint64_t *workspaceSize,
                           aclOpExecutor **executor)
{
    const int v2 = sp->op == EMU_OP_BILINEAR_V2;
    aclnnStatus rc = emu_check_handles(sp, a, workspaceSize, executor);
    if (rc != ACLNN_SUCCESS || (rc = emu_check_arch(sp)) != ACLNN_SUCCESS || (rc = check_ranks(sp, a)) != ACLNN_SUCCESS) {
        return rc;
    }
    const int go_cl = a->go->format == ACL_FORMAT_NHWC;
    const int a950 = emu_soc_generation() == EMU_GEN_950; /* IsRegBase(): resize_grad_950.c */
    const int tbe = emu_soc_generation() == EMU_GEN_TBE;  /* NpuArch 1001 / 2002 */
    int out_cl;
    if (v2) {
        if (a->out->format != ACL_FORMAT_NCHW && a->out->format != ACL_FORMAT_NHWC) { /* CheckFormat */
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out format %s (%d) is not supported; expected NCHW or NHWC",
                     sp->api, emu_format_name(a->out->format), a->out->format);
        }
        if ((rc = check_grad_dims(sp, a, go_cl, "gradOutput's format")) != ACLNN_SUCCESS ||
            (rc = check_nc(sp, a)) != ACLNN_SUCCESS || (rc = check_dtypes(sp, a, !tbe, a950)) != ACLNN_SUCCESS) {
            return rc;
        }
        for (int i = 0; i < 4 && !a950; i++) { /* CheckUplimit (returns true at once on RegBase) */
            if (a->go->dims[i] > INT32_MAX) {
                EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: GradOut sizes should not be greater than %d, got %lld",
                         sp->api, INT32_MAX, (long long)a->go->dims[i]);
            }
        }
        out_cl = go_cl; /* the NHWC path transposes gradOutput and transposes the result back */
    } else {
        out_cl = a->out->format != ACL_FORMAT_NCHW;
        if ((rc = check_grad_dims(sp, a, out_cl, "out's format")) != ACLNN_SUCCESS ||
            (rc = check_out_dims(sp, a)) != ACLNN_SUCCESS ||
            (rc = a950 ? emu_resize950_check_dtypes(sp, a, sizes_same(a)) : check_dtypes(sp, a, 0, 0)) != ACLNN_SUCCESS ||
            (rc = check_grad_dims(sp, a, go_cl, "gradOutput's format")) != ACLNN_SUCCESS ||
            (rc = check_nc(sp, a)) != ACLNN_SUCCESS ||
            (a950 && (rc = emu_resize950_check_format(sp, a)) != ACLNN_SUCCESS)) {
            return rc;
        }
    }
    if (emu_numel(a->go) == 0 || (v2 && emu_numel(a->out) == 0)) {
        return emu_finish_empty(sp, workspaceSize, executor);
    }
    if (v2 && tbe && sizes_same(a)) { /* 1001 / 2002: neither routing branch runs (see the header) */
        return emu_finish_empty(sp, workspaceSize, executor);
    }
    if (a950) { /* the arch35 route keeps out == inputSize, 4-D (not re-derived for this) */
        if (a->out->ndim != 4) {
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out must be 4D, got %lluD", sp->api,
                     (unsigned long long)a->out->ndim);
        }
        if ((rc = check_out_dims(sp, a)) != ACLNN_SUCCESS) {
            return rc;
        }
    }
    emu_op_params p = {.kernel = EMU_KERNEL_NONE};
    const int64_t *is = a->is->values, *os = a->os->values;
    int64_t inH = go_cl ? is[1] : is[2], inW = go_cl ? is[2] : is[3];
    if (!v2 && sizes_same(a)) {
        p.kernel = EMU_KERNEL_COPY;
    } else if (a950) {
        return emu_resize950_finish(sp, a, go_cl, workspaceSize, executor);
    } else if (v2 && !tbe && v2_uses_kernel(a, go_cl)) {
        p.kernel = EMU_KERNEL_BILINEAR_GRAD;
        p.sH = kernel_scale(inH, os[0], a->align, a->scales[0]);
        p.sW = kernel_scale(inW, os[1], a->align, a->scales[1]);
    } else { /* ResizeBilinearV2Grad5HD: the scales come from the sizes inside the kernel */
        emu_tbe5hd_setup(&p, os[0], os[1], inH, inW);
    }
    if (p.kernel == EMU_KERNEL_BILINEAR_GRAD && !go_cl) {
        /*
         * V2, NCHW kernel route (aclnn_upsample_bilinear_2d_backward_v2.cpp, last branch;
         * upsample_bilinear2d_grad.cpp l0op::UpsampleBilinear2dGrad allocates its result with OUT's view
         * shape, so CheckReduceOutShape(upsampleOut, out) always holds): out may have any shape and rank
         * with N and C equal. The tiling (upsample_bilinear2d_grad_tiling.cpp getOutputShape) sizes the
         * result from gradOutput's N, C and inputSize's H, W; the kernel writes that many elements into
         * the out-shaped buffer, which Cast and ViewCopy take to out element by element in row-major
         * order. More elements than out has: an out-of-bounds write, phase 2 fails (kernels.c).
         */
        p.inH = inH;
        p.inW = inW;
        p.out_flat = !(a->out->ndim == 4 && a->out->dims[2] == inH && a->out->dims[3] == inW);
    } else if ((rc = check_reduce_out(sp, a)) != ACLNN_SUCCESS) {
        /* the other routes' result has inputSize's shape (V1 and V2 ResizeBilinearV2Grad5HD: TransData to
         * out's format; V2 NHWC: the transpose back; V1 equal sizes: gradOutput itself) */
        return rc;
    }
    return emu_finish(sp, a, &p, 2, go_cl, out_cl, workspaceSize, executor);
}

static const emu_op_spec spec_v1 = {
    .api = "aclnnUpsampleBilinear2dBackwardGetWorkspaceSize",
    .op_name = "aclnnUpsampleBilinear2dBackward",
    .op = EMU_OP_BILINEAR_V1,
};

aclnnStatus aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(const aclTensor *gradOut, const aclIntArray *outputSize,
                                                            const aclIntArray *inputSize, bool alignCorners,
                                                            double scalesH, double scalesW, aclTensor *out,
                                                            uint64_t *workspaceSize, aclOpExecutor **executor)
{
    double scales[2] = {scalesH, scalesW};
    emu_args a = {gradOut, outputSize, inputSize, scales, alignCorners, out};
    return prepare(&spec_v1, &a, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleBilinear2dBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            aclrtStream stream)
{
    return emu_launch("aclnnUpsampleBilinear2dBackward", workspace, workspaceSize, executor, stream);
}

#ifndef ACLEMU_NO_V2
static const emu_op_spec spec_v2 = {
    .api = "aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize",
    .op_name = "aclnnUpsampleBilinear2dBackwardV2",
    .op = EMU_OP_BILINEAR_V2,
};

aclnnStatus aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(const aclTensor *gradOut,
                                                              const aclIntArray *outputSize,
                                                              const aclIntArray *inputSize, bool alignCorners,
                                                              double scalesH, double scalesW, aclTensor *out,
                                                              uint64_t *workspaceSize, aclOpExecutor **executor)
{
    double scales[2] = {scalesH, scalesW};
    emu_args a = {gradOut, outputSize, inputSize, scales, alignCorners, out};
    return prepare(&spec_v2, &a, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleBilinear2dBackwardV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                              aclrtStream stream)
{
    return emu_launch("aclnnUpsampleBilinear2dBackwardV2", workspace, workspaceSize, executor, stream);
}
#endif
