/*
 * Bilinear 2d backward: PyTorch >= 2.0 CPU semantics in float32 (opmath). Per dimension the
 * source index and weights come from area_pixel_compute_source_index with the float32 scale chosen
 * in phase 1; in == out is the identity. Per output pixel, row-major, four updates in the order
 * 00, 01, 10, 11: acc += (lh * lw) * g, into a float32 plane buffer, rounded once when written.
 * Compiled with -ffp-contract=off, so no update turns into an FMA.
 * V1 emulates an A2 chip: no BF16 and scales ignored (derived from sizes); V2 accepts BF16 and
 * honours a scale when outputSize == floor(inputSize * scale).
 */
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t i0, i1;
    float l0, l1;
} emu_lin;

static void build_weights(emu_lin *t, int64_t out, int64_t in, float s, int align)
{
    for (int64_t o = 0; o < out; o++) {
        if (in == out) {
            t[o] = (emu_lin){o, o, 1.0f, 0.0f};
            continue;
        }
        float r;
        if (align) {
            r = s * (float)o;
        } else {
            r = s * ((float)o + 0.5f) - 0.5f;
            r = r < 0.0f ? 0.0f : r;
        }
        int64_t i0 = (int64_t)floorf(r);
        i0 = i0 < in - 1 ? i0 : in - 1;
        float l1 = r - (float)i0;
        l1 = l1 > 0.0f ? l1 : 0.0f; /* std::min(std::max(x, 0), 1) */
        l1 = l1 < 1.0f ? l1 : 1.0f;
        t[o] = (emu_lin){i0, i0 + (i0 < in - 1 ? 1 : 0), 1.0f - l1, l1};
    }
}

int emu_bilinear_run(const void *params, void *workspace, char *msg, size_t msglen)
{
    (void)workspace;
    const emu_op_params *p = params;
    if (p->N == 0 || p->C == 0) {
        return 0;
    }
    emu_lin *th = malloc((size_t)(p->outH + p->outW) * sizeof *th);
    float *acc = malloc((size_t)(p->inH * p->inW) * sizeof *acc);
    if (th == NULL || acc == NULL) {
        free(th);
        free(acc);
        snprintf(msg, msglen, "out of host memory for the kernel's scratch buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    emu_lin *tw = th + p->outH;
    build_weights(th, p->outH, p->inH, p->sH, p->align_corners);
    build_weights(tw, p->outW, p->inW, p->sW, p->align_corners);

    const emu_view *g = &p->go, *o = &p->out;
    size_t plane = (size_t)(p->inH * p->inW);
    int64_t W = p->inW;
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            memset(acc, 0, plane * sizeof *acc);
            int64_t gb = g->offset + n * g->strides[0] + c * g->strides[1];
            for (int64_t oh = 0; oh < p->outH; oh++) {
                const emu_lin h = th[oh];
                int64_t gr = gb + oh * g->strides[2];
                for (int64_t ow = 0; ow < p->outW; ow++) {
                    const emu_lin w = tw[ow];
                    float v = emu_load(g->data, g->dtype, gr + ow * g->strides[3]);
                    acc[h.i0 * W + w.i0] += (h.l0 * w.l0) * v;
                    acc[h.i0 * W + w.i1] += (h.l0 * w.l1) * v;
                    acc[h.i1 * W + w.i0] += (h.l1 * w.l0) * v;
                    acc[h.i1 * W + w.i1] += (h.l1 * w.l1) * v;
                }
            }
            int64_t ob = o->offset + n * o->strides[0] + c * o->strides[1];
            for (int64_t y = 0; y < p->inH; y++) {
                for (int64_t x = 0; x < W; x++) {
                    emu_store(o->data, o->dtype, ob + y * o->strides[2] + x * o->strides[3], acc[y * W + x]);
                }
            }
        }
    }
    free(th);
    free(acc);
    return 0;
}

#define BILINEAR_FORMATS ((1ull << ACL_FORMAT_NCHW) | (1ull << ACL_FORMAT_NHWC) | (1ull << ACL_FORMAT_ND))

static const emu_op_spec spec_v1 = {
    .api = "aclnnUpsampleBilinear2dBackwardGetWorkspaceSize",
    .op_name = "aclnnUpsampleBilinear2dBackward",
    .op = EMU_OP_BILINEAR,
    .spatial = 2,
    .allow_bf16 = 0,
    .formats = BILINEAR_FORMATS,
    .v2_scales = 0,
};

aclnnStatus aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(const aclTensor *gradOut, const aclIntArray *outputSize,
                                                            const aclIntArray *inputSize, bool alignCorners,
                                                            double scalesH, double scalesW, aclTensor *out,
                                                            uint64_t *workspaceSize, aclOpExecutor **executor)
{
    double scales[2] = {scalesH, scalesW};
    return emu_prepare(&spec_v1, gradOut, outputSize, inputSize, scales, alignCorners, out, workspaceSize,
                       executor);
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
    .op = EMU_OP_BILINEAR,
    .spatial = 2,
    .allow_bf16 = 1,
    .formats = BILINEAR_FORMATS,
    .v2_scales = 1,
};

aclnnStatus aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(const aclTensor *gradOut,
                                                              const aclIntArray *outputSize,
                                                              const aclIntArray *inputSize, bool alignCorners,
                                                              double scalesH, double scalesW, aclTensor *out,
                                                              uint64_t *workspaceSize, aclOpExecutor **executor)
{
    double scales[2] = {scalesH, scalesW};
    return emu_prepare(&spec_v2, gradOut, outputSize, inputSize, scales, alignCorners, out, workspaceSize,
                       executor);
}

aclnnStatus aclnnUpsampleBilinear2dBackwardV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                              aclrtStream stream)
{
    return emu_launch("aclnnUpsampleBilinear2dBackwardV2", workspace, workspaceSize, executor, stream);
}
#endif
