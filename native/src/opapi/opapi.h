/* Shared by the op sources of libopapi: the op parameter block and the phase-1/phase-2 helpers. */
#ifndef ACLEMU_OPAPI_H
#define ACLEMU_OPAPI_H

#include "internal.h"

/* A tensor view as the kernels see it, always 4-D (N, C, H, W); 1-D ops get H = 1. */
typedef struct {
    unsigned char *data;
    int64_t offset;
    int64_t sizes[4];
    int64_t strides[4];
    int32_t dtype;
    const void *lo;  /* first byte the view reaches (NULL when empty) */
    uint64_t bytes;  /* bytes from lo to one past the last element */
} emu_view;

enum { EMU_OP_NEAREST_EXACT = 1, EMU_OP_BILINEAR = 2 };

typedef struct {
    int op;
    emu_view go, out;
    int64_t N, C, inH, inW, outH, outW;
    float sH, sW;       /* float32 scales: nearest index scale, or bilinear area_pixel scale */
    int align_corners;  /* bilinear only */
    uint64_t ws_size;   /* bytes of workspace the op needs and uses */
} emu_op_params;

/* What an op accepts, for the shared phase-1 validation. */
typedef struct {
    const char *api;     /* the GetWorkspaceSize function name, for messages */
    const char *op_name; /* the phase-2 name */
    int op;
    int spatial;         /* 1 or 2 */
    int allow_bf16;
    uint64_t formats;    /* bit mask of accepted aclFormat values (1ull << format) */
    int v2_scales;       /* bilinear V2: honour a scale when outputSize == floor(inputSize * scale) */
} emu_op_spec;

/* Phase 1 of every op: validates like aclnn, fills the parameters and creates the executor. */
aclnnStatus emu_prepare(const emu_op_spec *spec, const aclTensor *gradOutput, const aclIntArray *outputSize,
                        const aclIntArray *inputSize, const double *scales, int alignCorners, aclTensor *out,
                        uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2 of every op: validates, enqueues the executor's kernel, frees a one-shot executor. */
aclnnStatus emu_launch(const char *api, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                       aclrtStream stream);

/* Kernels (run on the stream worker). */
int emu_nearest_exact_run(const void *params, void *workspace, char *msg, size_t msglen);
int emu_bilinear_run(const void *params, void *workspace, char *msg, size_t msglen);
uint64_t emu_nearest_exact_workspace(int spatial, int64_t outH, int64_t outW);

#endif
