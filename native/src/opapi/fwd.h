/*
 * Shared by the forward ops' sources (fwd_common.c, fwd_nearest.c, fwd_bilinear.c, fwd_resize_tbe.c,
 * fwd_resize_950.c): aclnnUpsampleNearestExact1d / 2d and aclnnUpsampleBilinear2d, modelled per family
 * from hicann/ops-cv (and, for the TBE kernel, the CANN 8.1.RC1 toolkit's resize_bilinear_v2.py).
 *
 * How a call runs here: phase 1 checks the arguments in the op_api's order, picks the route and
 * kernel of the emulated family and stores the kernel's view of the data in emu_op_params.fw. Phase 2
 * reads self in row-major order of its own dims (l0op::Contiguous), runs the kernel on contiguous
 * host buffers with the dims the device kernel uses, and stores the result with the op_api's closing
 * l0op::ViewCopy(result, out) (fwd_common.c, fwd_store_*).
 */
#ifndef ACLEMU_FWD_H
#define ACLEMU_FWD_H

#include "fp950.h"

/* The arguments of a forward phase 1. */
typedef struct {
    const char *api;     /* the GetWorkspaceSize function, for messages */
    const char *op_name; /* the phase-2 function */
    int spatial;         /* 1 (nearest-exact 1d) or 2 */
    int bilinear;
    const aclTensor *self;
    const aclIntArray *os;
    double scales[2]; /* 1d: scales[0] */
    int align;
    aclTensor *out;
} fwd_args;

/* Nearest-exact index rules (emu_op_params.fw.sub for the nearest routes, per dimension). */
enum {
    FWD_IDX_EXACT = 0, /* min(floor(fl32(fl32(o + 0.5) * s)), in - 1) */
    FWD_IDX_LEGACY,    /* min(floor(fl32(o * s)), in - 1): ResizeNearestNeighborV2's NHWC data-copy templates */
    FWD_IDX_COPY,      /* o (equal sizes: SIMT_INPUT_EQ_OUTPUT) */
    FWD_IDX_ONE,       /* 0 (input 1 x 1: SIMT_INPUT_EQ_ONE) */
};

/* ResizeBilinearV2 (TBE) modes and ResizeBilinearV2With4d (arch35) templates: emu_op_params.fw.sub. */
enum { FWD_TBE_NO_BILINEAR = 0, FWD_TBE_NC, FWD_TBE_L1, FWD_TBE_VBI_FP32, FWD_TBE_VBI_FP16 };
enum {
    FWD_RB950_ALL_COPY = 0,
    FWD_RB950_POINT_COPY,
    FWD_RB950_BROADCAST,  /* NCHW_BROADCAST, NHWC_BROADCAST */
    FWD_RB950_C_PARALLEL, /* ResizeBilinearV2CParallel */
    FWD_RB950_NC,         /* ResizeBilinearV2Nc (the C_PARALLEL key with cFactor < C) */
    FWD_RB950_SIMT,       /* SIMT_NCHW / SIMT_NHWC */
    FWD_RB950_SIMT_HW,    /* SIMT_HW */
};

/* ---- fwd_common.c ---- */
/* Both views (self, out) inside their allocations; fills p->go and p->out. */
aclnnStatus fwd_views(const fwd_args *a, emu_op_params *p);
/* Executor creation at the end of phase 1 (workspace p->ws_size). */
aclnnStatus fwd_finish(const fwd_args *a, emu_op_params *p, uint64_t *workspaceSize, aclOpExecutor **executor);
/* Success with nothing launched (empty tensors). */
aclnnStatus fwd_empty(const fwd_args *a, uint64_t *workspaceSize, aclOpExecutor **executor);
/* Phase 1 succeeds, phase 2 answers 561000: no kernel binary for this SoC (and dtype). */
aclnnStatus fwd_no_binary(const fwd_args *a, const char *why, uint64_t *workspaceSize, aclOpExecutor **executor);
/* Dead handles among self, out and outputSize (outputSize may be NULL here): 161002. */
aclnnStatus fwd_check_live(const fwd_args *a);
/* The result's dims (rank nd) into p->fw.rd. */
void fwd_set_result(emu_op_params *p, int nd, const int64_t *dims);

/* Self in row-major order of its own dims (l0op::Contiguous): floats, or element bytes. */
float *fwd_load_float(const emu_view *v);
unsigned char *fwd_load_bytes(const emu_view *v);
/* l0op::ViewCopy(result, out): the result (p->fw.rd, row-major) into out. An out of the same dims gets
 * element for element; an out of other dims: when contiguous with at least as many elements, the
 * result in its row-major order (the backward ops' rule), else phase 2 fails (507015). Floats are
 * rounded to out's dtype (RNE); bytes are copied. */
int fwd_store_float(const emu_op_params *p, const float *y, char *msg, size_t msglen);
int fwd_store_bytes(const emu_op_params *p, const unsigned char *y, char *msg, size_t msglen);
int64_t fwd_numel(const int64_t *dims, int nd);

/* ---- the kernels (phase 2) ---- */
int fwd_nearest_run(const emu_op_params *p, char *msg, size_t msglen);
int fwd_cube_run(const emu_op_params *p, char *msg, size_t msglen);
int fwd_tbe_run(const emu_op_params *p, char *msg, size_t msglen);
int fwd_rb950_run(const emu_op_params *p, char *msg, size_t msglen);

/* ---- bilinear phase 1 per family (after the op_api's checks) ---- */
/* GoResizeBilinearV2AICORE: the TBE kernel in NC1HWC0 (A2/A3 fallback, 910, 310P). */
aclnnStatus fwd_tbe_setup(const fwd_args *a, uint64_t *workspaceSize, aclOpExecutor **executor);
/* GoResizeBilinearV2AiCoreWith4d: arch35 ResizeBilinearV2 and its tiling. */
aclnnStatus fwd_rb950_setup(const fwd_args *a, uint64_t *workspaceSize, aclOpExecutor **executor);

#endif
