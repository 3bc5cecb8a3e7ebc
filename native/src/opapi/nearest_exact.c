/*
 * Nearest-exact backward, 1d and 2d: PyTorch CPU semantics. The forward index rule
 * src(o) = min(floor(fl32(fl32(o + 0.5) * s)), in - 1) with a float32 scale; the backward is the
 * row-major scatter gi[src] += go into a float32 plane buffer (so contributions to each input cell
 * add in ascending (oh, ow) order from +0.0), rounded once to the element type when written.
 * The 2d op keeps its index tables in the device workspace (int32, outH + outW entries), which is
 * why it asks phase 1 for a non-zero workspace; the 1d op asks for none and uses host scratch.
 */
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t emu_nearest_exact_workspace(int spatial, int64_t outH, int64_t outW)
{
    if (spatial == 1) {
        return 0;
    }
    uint64_t bytes = (uint64_t)(outH + outW) * sizeof(int32_t);
    return (bytes + EMU_ALIGN - 1) & ~(uint64_t)(EMU_ALIGN - 1);
}

static void build_index(int32_t *idx, int64_t out, int64_t in, float s)
{
    for (int64_t o = 0; o < out; o++) {
        float pos = ((float)o + 0.5f) * s;
        int64_t src = (int64_t)floorf(pos);
        idx[o] = (int32_t)(src < in - 1 ? src : in - 1);
    }
}

int emu_nearest_exact_run(const void *params, void *workspace, char *msg, size_t msglen)
{
    const emu_op_params *p = params;
    if (p->N == 0 || p->C == 0) {
        return 0;
    }
    int32_t *scratch = NULL;
    int32_t *idx = workspace;
    if (idx == NULL) {
        idx = scratch = malloc((size_t)(p->outH + p->outW) * sizeof *idx);
    }
    float *acc = malloc((size_t)(p->inH * p->inW) * sizeof *acc);
    if (idx == NULL || acc == NULL) {
        free(scratch);
        free(acc);
        snprintf(msg, msglen, "out of host memory for the kernel's scratch buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    int32_t *ih = idx, *iw = idx + p->outH;
    build_index(ih, p->outH, p->inH, p->sH);
    build_index(iw, p->outW, p->inW, p->sW);

    const emu_view *g = &p->go, *o = &p->out;
    size_t plane = (size_t)(p->inH * p->inW);
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            memset(acc, 0, plane * sizeof *acc); /* all-zero bits = +0.0f */
            int64_t gb = g->offset + n * g->strides[0] + c * g->strides[1];
            for (int64_t oh = 0; oh < p->outH; oh++) {
                float *row = acc + (int64_t)ih[oh] * p->inW;
                int64_t gr = gb + oh * g->strides[2];
                for (int64_t ow = 0; ow < p->outW; ow++) {
                    row[iw[ow]] += emu_load(g->data, g->dtype, gr + ow * g->strides[3]);
                }
            }
            int64_t ob = o->offset + n * o->strides[0] + c * o->strides[1];
            for (int64_t h = 0; h < p->inH; h++) {
                for (int64_t w = 0; w < p->inW; w++) {
                    emu_store(o->data, o->dtype, ob + h * o->strides[2] + w * o->strides[3], acc[h * p->inW + w]);
                }
            }
        }
    }
    free(scratch);
    free(acc);
    return 0;
}

#define NEAREST_FORMATS_1D ((1ull << ACL_FORMAT_NCL) | (1ull << ACL_FORMAT_ND))
#define NEAREST_FORMATS_2D ((1ull << ACL_FORMAT_NCHW) | (1ull << ACL_FORMAT_ND))

#ifndef ACLEMU_NO_1D
static const emu_op_spec spec_1d = {
    .api = "aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize",
    .op_name = "aclnnUpsampleNearestExact1dBackward",
    .op = EMU_OP_NEAREST_EXACT,
    .spatial = 1,
    .allow_bf16 = 1,
    .formats = NEAREST_FORMATS_1D,
};

aclnnStatus aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                                const aclIntArray *outputSize,
                                                                const aclIntArray *inputSize, double scales,
                                                                aclTensor *out, uint64_t *workspaceSize,
                                                                aclOpExecutor **executor)
{
    return emu_prepare(&spec_1d, gradOutput, outputSize, inputSize, &scales, 0, out, workspaceSize, executor);
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
    .op = EMU_OP_NEAREST_EXACT,
    .spatial = 2,
    .allow_bf16 = 1,
    .formats = NEAREST_FORMATS_2D,
};

aclnnStatus aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                                const aclIntArray *outputSize,
                                                                const aclIntArray *inputSize, double scalesH,
                                                                double scalesW, aclTensor *out,
                                                                uint64_t *workspaceSize, aclOpExecutor **executor)
{
    double scales[2] = {scalesH, scalesW};
    return emu_prepare(&spec_2d, gradOutput, outputSize, inputSize, scales, 0, out, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleNearestExact2dBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                aclrtStream stream)
{
    return emu_launch("aclnnUpsampleNearestExact2dBackward", workspace, workspaceSize, executor, stream);
}
