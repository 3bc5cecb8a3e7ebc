/*
 * Nearest-exact backward, 1d and 2d, as the Atlas A2/A3 (DAV_2201) device computes it (on Ascend 950,
 * prepare() hands over to nearest_exact_950.c after the shared op_api checks). Sources, in
 * ops-cv image/upsample_nearest_exact2d_grad/:
 *  - op_host/op_api/aclnn_upsample_nearest_exact2d_backward.cpp: argument checks and their order,
 *    empty tensors answered before any check, the kernel gets the caller's scale as float (0 when
 *    not given), float16/bfloat16 cast to float32 before the kernel and back after it;
 *  - op_host/op_api/aclnn_upsample_nearest_exact1d_backward.cpp: its checks run first (N or C = 0
 *    is an error), then it reshapes to (N, C, 1, L) and calls the same kernel with scale_h = 1;
 *  - op_host/upsample_nearest_exact2d_grad_tiling.{h,cpp} (compute_scale_value): the kernel scale is
 *    s = (float)scale when given, else (float)outputSize / (float)inputSize;
 *  - op_kernel/upsample_nearest_exact2d_grad_kernel.h (calculateIntermediateTensorX/Y): input cell i
 *    sums the gradient positions [lo(i), lo(i + 1)) with lo(i) = min(ceil(fl32(fl32(i * s) - 0.5)),
 *    outputSize), as a 0/1 matrix in the two-pass sum of kernels.c.
 * PyTorch instead sends output o to min(floor(fl32(fl32(o + 0.5) * fl32(1 / s))), in - 1); the two
 * differ where (o + 0.5) / s lands within float rounding of an integer (in = 2, out = 41: o = 20 is
 * input 1 here, input 0 in PyTorch). Built with -DACLEMU_TORCH_MAP (build/torch-map/), the tables map
 * like PyTorch instead, so tests can prove that a check against the device's rules notices.
 */
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const SCALE_NAMES_2D[2] = {"scalesH", "scalesW"};

/* Gradient position o -> input cell (-1: summed by no cell), in the build's mapping. */
static void build_taps(emu_tap *t, int64_t out, int64_t in, float s)
{
    for (int64_t o = 0; o < out; o++) {
        t[o] = (emu_tap){-1, -1, 1.0f, 0.0f};
    }
#ifdef ACLEMU_TORCH_MAP
    /* s is PyTorch's fl32(1 / scale) or fl32(in / out) here (see kernel_scale). */
    for (int64_t o = 0; o < out; o++) {
        int64_t src = (int64_t)floorf(((float)o + 0.5f) * s);
        t[o].i0 = (int32_t)(src < in - 1 ? src : in - 1);
    }
#else
    int64_t lo = 0; /* lo(0) = ceil(-0.5) = 0 */
    for (int64_t i = 0; i < in; i++) {
        float edge = ceilf((float)(i + 1) * s - 0.5f); /* -ffp-contract=off: two float32 roundings */
        int64_t hi = edge < (float)out ? (int64_t)edge : out;
        for (int64_t o = lo; o < hi; o++) {
            t[o].i0 = (int32_t)i;
        }
        lo = hi > lo ? hi : lo;
    }
#endif
}

/* The float32 scale the kernel works with along one dimension (see the header comment). */
static float kernel_scale(int64_t in, int64_t out, double scale)
{
#ifdef ACLEMU_TORCH_MAP
    return scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
#else
    return scale > 0 ? (float)scale : (float)out / (float)in;
#endif
}

static int skipped(float s)
{
#ifdef ACLEMU_TORCH_MAP
    (void)s;
    return 0;
#else
    return emu_float_equal(s, 1.0f);
#endif
}

int emu_nearest_exact_run(const emu_op_params *p, void *workspace, char *msg, size_t msglen)
{
    emu_tap *th = malloc((size_t)(p->outH + p->outW) * sizeof *th);
    if (th == NULL) {
        snprintf(msg, msglen, "out of host memory for the kernel's index tables");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    emu_tap *tw = th + p->outH;
    build_taps(th, p->outH, p->inH, p->sH);
    build_taps(tw, p->outW, p->inW, p->sW);
    int rc = emu_two_pass(p, th, tw, skipped(p->sH), skipped(p->sW), workspace, 1, msg, msglen);
    free(th);
    return rc;
}

/*
 * Ascend 950 only: sizes against the tensors. The A2 op_api has no such check (see prepare()); the
 * arch35 tiling (upsample_nearest_exact2d_grad_tiling_arch35.cpp) is not re-read for this, so the
 * 950 path keeps it.
 */
static aclnnStatus check_sizes(const emu_op_spec *sp, const emu_args *a, int spatial)
{
    uint64_t rank = (uint64_t)spatial + 2;
    char x[160], y[160];
    for (uint64_t i = 0; i < rank; i++) {
        int64_t want = i < 2 ? a->is->values[i] : a->os->values[i - 2];
        if (a->go->dims[i] != want) {
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                     "%s: Expected grad_output to have the same shape as output; output.size(%llu) = %lld but got "
                     "grad_output.size(%llu) = %lld",
                     sp->api, (unsigned long long)i, (long long)want, (unsigned long long)i,
                     (long long)a->go->dims[i]);
        }
        if (a->out->dims[i] != a->is->values[i]) {
            emu_shape_str(x, sizeof x, a->out->dims, a->out->ndim);
            emu_shape_str(y, sizeof y, a->is->values, a->is->size);
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out shape %s must equal inputSize %s", sp->api, x, y);
        }
    }
    return ACLNN_SUCCESS;
}

/* CheckShape of both op_apis: equal formats, ranks, inputSize / outputSize lengths. */
static aclnnStatus check_shape(const emu_op_spec *sp, const emu_args *a, int spatial)
{
    uint64_t rank = (uint64_t)spatial + 2;
    if (a->go->format != a->out->format) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Format of input and output should be equal, gradOutput [%s], out [%s]",
                 sp->api, emu_format_name(a->go->format), emu_format_name(a->out->format));
    }
    if (a->go->ndim != rank || a->out->ndim != rank) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s must be %lluD, got %lluD", sp->api,
                 a->go->ndim != rank ? "gradOutput" : "out", (unsigned long long)rank,
                 (unsigned long long)(a->go->ndim != rank ? a->go->ndim : a->out->ndim));
    }
    if (a->is->size != rank) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: It is expected input_size equals to %llu, but got size %llu", sp->api,
                 (unsigned long long)rank, (unsigned long long)a->is->size);
    }
    if (a->os->size != (uint64_t)spatial) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: It is expected output_size equals to %d, but got size %llu", sp->api,
                 spatial, (unsigned long long)a->os->size);
    }
    return ACLNN_SUCCESS;
}

/* CheckNCDimEqual (2d: NHWC is rejected), CheckScalesValid, CheckInputElement, in this order. */
static aclnnStatus check_rules(const emu_op_spec *sp, const emu_args *a, int spatial)
{
    if (spatial == 2 && a->go->format == ACL_FORMAT_NHWC) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Input and output format only support [NCHW, ND] format, got NHWC",
                 sp->api);
    }
    if (a->go->dims[0] != a->out->dims[0] || a->go->dims[1] != a->out->dims[1]) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: selfDimC[%lld]/outDimC[%lld] or selfDimN[%lld]/outDimN[%lld] not equal",
                 sp->api, (long long)a->go->dims[1], (long long)a->out->dims[1], (long long)a->go->dims[0],
                 (long long)a->out->dims[0]);
    }
    for (int d = 0; d < spatial; d++) {
        if (a->scales[d] < 0) { /* NaN passes: it then counts as "not given" (NaN > 0 is false) */
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s = %g is invalid: scales must be >= 0 (0 means not given)",
                     sp->api, spatial == 1 ? "scales" : SCALE_NAMES_2D[d], a->scales[d]);
        }
    }
    for (int d = 0; d < spatial; d++) {
        double s = a->scales[d];
        int64_t in = a->is->values[2 + d], o = a->go->dims[2 + d];
        double real = s > 0 ? 1.0 / s : o != 0 ? (double)in / (double)o : 0.0;
        if (real < 0.02) {
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                     "%s: %s too large: inputSize %lld -> outputSize %lld is over the 50x limit (%s = %g must be "
                     ">= 0.02)",
                     sp->api, spatial == 1 ? "scales" : SCALE_NAMES_2D[d], (long long)in, (long long)o,
                     s > 0 ? "1/scale" : "inputSize/outputSize", real);
        }
    }
    int64_t in_h = spatial == 2 ? a->is->values[2] : 1, out_h = spatial == 2 ? a->go->dims[2] : 1;
    if (!(a->go->dims[0] > 0 && a->go->dims[1] > 0 && in_h > 0 && a->is->values[spatial + 1] > 0 && out_h > 0 &&
          a->go->dims[spatial + 1] > 0)) {
        char x[160], y[160];
        emu_shape_str(x, sizeof x, a->go->dims, a->go->ndim);
        emu_shape_str(y, sizeof y, a->is->values, a->is->size);
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Input and output sizes should be greater than 0, but got gradOutput %s, inputSize %s", sp->api,
                 x, y);
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus prepare(const emu_op_spec *sp, const emu_args *a, int spatial, uint64_t *workspaceSize,
                           aclOpExecutor **executor)
{
    aclnnStatus rc = emu_check_handles(sp, a, workspaceSize, executor);
    if (rc != ACLNN_SUCCESS || (rc = emu_check_arch(sp)) != ACLNN_SUCCESS) {
        return rc;
    }
    /* 2d: "if (gradOutput->IsEmpty() || out->IsEmpty())" comes before CheckParams. */
    if (spatial == 2 && (emu_numel(a->go) == 0 || emu_numel(a->out) == 0)) {
        return emu_finish_empty(sp, workspaceSize, executor);
    }
    if ((rc = emu_check_dtypes(sp, a, 1)) != ACLNN_SUCCESS || (rc = check_shape(sp, a, spatial)) != ACLNN_SUCCESS ||
        (rc = check_rules(sp, a, spatial)) != ACLNN_SUCCESS) {
        return rc;
    }
    if (emu_soc_generation() == EMU_GEN_TBE) {
        /* op_host/config ships UpsampleNearestExact2dGrad binaries for ascend910b, ascend910_93 and
         * ascend950 only: on 1001 / 2002 the kernel lookup of phase 1 fails (opbase: 561003). */
        EMU_FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                 "%s: find npu kernel error: no UpsampleNearestExact2dGrad kernel binary ships for SoC %s (NpuArch %u; "
                 "ops-cv op_host/config has ascend910b, ascend910_93, ascend950 only)",
                 sp->api, aclemu_soc() ? aclemu_soc() : "?", emu_soc_arch());
    }
    if (emu_soc_generation() == EMU_GEN_950) { /* IsRegBase(): the arch35 kernel (nearest_exact_950.c) */
        if ((rc = check_sizes(sp, a, spatial)) != ACLNN_SUCCESS) {
            return rc;
        }
        return emu_nearest950_finish(sp, a, spatial, workspaceSize, executor);
    }
    emu_op_params p = {.kernel = EMU_KERNEL_NEAREST_EXACT};
    /*
     * Sizes (aclnn_upsample_nearest_exact{1,2}d_backward.cpp CheckParams; upsample_nearest_exact2d_grad.cpp
     * l0op::UpsampleNearestExact2dGrad; upsample_nearest_exact2d_grad_tiling.cpp getOutputShape /
     * setScale): nothing compares gradOutput with outputSize or out with inputSize. The kernel reads
     * gradOutput with its own shape (outputSize is never read), writes an (N, C, inputSize[H],
     * inputSize[W]) buffer (N, C of gradOutput; inputSize[0..1] never read), and l0op::ViewCopy hands it
     * to out. ViewCopy's precondition (opbase docs/zh/api/nnopbase/opdev/L0/ViewCopy.md: y's view shape
     * equal to x's) is not checked by the op_api; the emulation models a contiguous out of another
     * shape as the buffer written in out's row-major order (the L0 result sharing out's storage),
     * failing at phase 2 if the kernel writes past out's elements, and fails phase 2 for a
     * non-contiguous out of another shape (the AICPU ViewCopy with differing sizes is not public).
     */
    p.inH = spatial == 1 ? 1 : a->is->values[2];
    p.inW = a->is->values[spatial + 1];
    int same = 1;
    for (int d = 2; d < spatial + 2; d++) {
        same = same && a->out->dims[d] == a->is->values[d];
    }
    /* 1d: the op_api passes scale_h = 1 for the inserted H dimension (1 -> 1). */
    p.sH = spatial == 1 ? 1.0f : kernel_scale(a->is->values[2], a->go->dims[2], a->scales[0]);
    p.sW = kernel_scale(a->is->values[spatial + 1], a->go->dims[spatial + 1], a->scales[spatial - 1]);
    /* A scale within 1e-6 of 1 on a dimension whose sizes differ: no host check (the kernel skips that
     * pass, FloatEqual in Process); emu_two_pass models the addressing it then uses (kernels.c). */
    /* The float32 intermediate of the W pass lives in the workspace (the device's also holds its 0/1
     * matrices; the 1d op never needs one: with scale_h = 1 its W pass writes the result directly). */
    if (spatial == 2) {
        uint64_t bytes = (uint64_t)(a->go->dims[0] * a->go->dims[1] * a->go->dims[2] * a->is->values[3]) * 4u;
        p.ws_size = (bytes + EMU_ALIGN - 1) & ~(uint64_t)(EMU_ALIGN - 1);
    }
    if (!same && emu_tensor_contiguous(a->out)) {
        p.out_flat = 1;
    } else if (!same) {
        p.fault = "out has another shape than (N, C, inputSize) and is not contiguous: l0op::ViewCopy then runs the "
                  "AICPU ViewCopy with differing sizes, whose behaviour is not public (not emulated)";
    }
    return emu_finish(sp, a, &p, spatial, 0, 0, workspaceSize, executor);
}

#ifndef ACLEMU_NO_1D
static const emu_op_spec spec_1d = {
    .api = "aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize",
    .op_name = "aclnnUpsampleNearestExact1dBackward",
    .op = EMU_OP_NEAREST_1D,
};

aclnnStatus aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                                const aclIntArray *outputSize,
                                                                const aclIntArray *inputSize, double scales,
                                                                aclTensor *out, uint64_t *workspaceSize,
                                                                aclOpExecutor **executor)
{
    emu_args a = {gradOutput, outputSize, inputSize, &scales, 0, out};
    return prepare(&spec_1d, &a, 1, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleNearestExact1dBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                aclrtStream stream)
{
    return emu_launch("aclnnUpsampleNearestExact1dBackward", workspace, workspaceSize, executor, stream);
}
#endif

static const emu_op_spec spec_2d = {
    .api = "aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize",
    .op_name = "aclnnUpsampleNearestExact2dBackward",
    .op = EMU_OP_NEAREST_2D,
};

aclnnStatus aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                                const aclIntArray *outputSize,
                                                                const aclIntArray *inputSize, double scalesH,
                                                                double scalesW, aclTensor *out,
                                                                uint64_t *workspaceSize, aclOpExecutor **executor)
{
    double scales[2] = {scalesH, scalesW};
    emu_args a = {gradOutput, outputSize, inputSize, scales, 0, out};
    return prepare(&spec_2d, &a, 2, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleNearestExact2dBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                aclrtStream stream)
{
    return emu_launch("aclnnUpsampleNearestExact2dBackward", workspace, workspaceSize, executor, stream);
}
