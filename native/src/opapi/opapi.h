/* Shared by the op sources of libopapi: the op parameter block and the phase-1/phase-2 helpers. */
#ifndef ACLEMU_OPAPI_H
#define ACLEMU_OPAPI_H

#include "internal.h"

/*
 * A tensor view as the kernels see it, always 4-D in (N, C, H, W) order: 1-D ops get H = 1, and a
 * channels-last view (dims given as N, H, W, C) has its sizes and strides permuted into that order.
 */
typedef struct {
    unsigned char *data;
    int64_t offset;
    int64_t sizes[4];
    int64_t strides[4];
    int32_t dtype;
    const void *lo;  /* first byte the view reaches (NULL when empty) */
    uint64_t bytes;  /* bytes from lo to one past the last element */
    /* The tensor's own dims and strides (any rank), for the row-major ("flat") element order a kernel
     * that writes a contiguous buffer of another shape uses (emu_view_flat_index). */
    int nd;
    int64_t numel;
    int contiguous; /* strides are the row-major strides of the dims (size-1 dims ignored) */
    int64_t fdims[EMU_MAX_DIMS], fstrides[EMU_MAX_DIMS];
} emu_view;

/* Element index (offset included) of the f-th element in row-major order of the view's own dims. */
static inline int64_t emu_view_flat_index(const emu_view *v, int64_t f)
{
    int64_t idx = v->offset;
    for (int k = v->nd - 1; k >= 0; k--) {
        int64_t d = v->fdims[k] > 0 ? v->fdims[k] : 1;
        idx += (f % d) * v->fstrides[k];
        f /= d;
    }
    return idx;
}

/* What a launch runs on the stream (chosen in phase 1, as the real op_api chooses its kernels). */
enum {
    EMU_KERNEL_NONE = 0,      /* empty tensors: phase 2 launches nothing */
    EMU_KERNEL_NEAREST_EXACT, /* UpsampleNearestExact2dGrad: 0/1 matrices, W pass then H pass */
    EMU_KERNEL_BILINEAR_GRAD, /* UpsampleBilinear2dGrad: weight matrices, W pass then H pass */
    EMU_KERNEL_COPY,          /* a view copy (bilinear V1 with equal sizes) */
    /* Ascend 950 (arch35) kernels: nearest_exact_950.c, resize_gather_950.c, resize_scatter_950.c */
    EMU_KERNEL_NE950_COPY,     /* UpsampleNearestExact2dGrad schId 0: byte copy */
    EMU_KERNEL_NE950_SIMT,     /* UpsampleNearestExact2dGrad schId 1..3: SIMT gather per result cell */
    EMU_KERNEL_RB950_ALL_COPY, /* ResizeBilinearV2Grad ALL_COPY */
    EMU_KERNEL_RB950_POINT_COPY,
    EMU_KERNEL_RB950_DETERMINE,        /* SIMT gather, running-sum source coordinate */
    EMU_KERNEL_RB950_DETERMINE_SCALES, /* SIMT gather, per-step source coordinate, edge cases */
    EMU_KERNEL_RB950_C_PARALLEL,       /* NHWC, atomic adds of channel vectors */
    EMU_KERNEL_RB950_SIMT,             /* SIMT scatter, atomic adds in the output dtype */
    /* The built-in TBE kernel ResizeBilinearV2Grad5HD (A2/A3, Atlas training 1001, 310P 2002): tbe5hd.c */
    EMU_KERNEL_RB5HD,
    /* aclnnCast (ops-math math/cast): Contiguous, Cast, ViewCopy as one launch "Cast" (cast.c, which
     * runs it with its own run function: the split core library links no other kernel) */
    EMU_KERNEL_CAST,
    /* The forward ops (fwd_*.c): every route runs through emu_fwd_run, which the route in `fw` steers. */
    EMU_KERNEL_FWD,
    /* A forward call whose kernel ships no binary for the SoC: phase 1 succeeded (the l0op ignores
     * ADD_TO_LAUNCHER_LIST_AICORE's status), phase 2 answers 561000 without launching (launch.c). */
    EMU_KERNEL_NO_BINARY,
};

/* The forward ops' routes (fwd.h documents each; the kernel name is in kname). */
enum {
    EMU_FWD_COPY = 1,     /* A2 bilinear with equal sizes: ViewCopy of self (bit copy) */
    EMU_FWD_NEAREST_A2,   /* UpsampleNearestExact2d (A2/A3 UpsampleNearest kernel): element copies */
    EMU_FWD_NEAREST_310P, /* the same op on 310P (UpsampleNearestND310p): 0 + x */
    EMU_FWD_NEAREST_950,  /* ResizeNearestNeighborV2 (arch35): element copies, index rule per template */
    EMU_FWD_NEAREST_3D,   /* UpsampleNearestExact3dNcdhw (arch35, one special case of 2d) */
    EMU_FWD_CUBE,         /* UpsampleBilinear2dNcdhw (A2/A3 Cube kernel), direct or through the HWNC transpose */
    EMU_FWD_TBE,          /* ResizeBilinearV2 (TBE, NC1HWC0): A2/A3 fallback, 910, 310P */
    EMU_FWD_RB950,        /* ResizeBilinearV2With4d (arch35) */
};

/* What phase 1 of a forward op decided for its kernel (fwd_*.c). Dims are literal: the kernel's
 * reading of the contiguous self (`go`'s own dims, row-major) and the dims of the result the op_api
 * hands to l0op::ViewCopy (`rd`), which fwd_common.c stores into `out`. */
typedef struct {
    int route;         /* EMU_FWD_* */
    int sub;           /* route-specific template / mode (fwd.h) */
    int cl;            /* the kernel reads self channels-last: (N, H, W, C), 1d (N, L, C) */
    int align, half;   /* bilinear: align_corners, half_pixel_centers */
    int hwnc;          /* Cube: the permuteHWNC transpose around the kernel */
    float sh, sw;      /* the kernel's float32 scales (per route: fwd.h) */
    int64_t xd[4];     /* the kernel's input dims in its own order (N, C, H, W) or (N, H, W, C) */
    int64_t yd[4];     /* the kernel's output dims, same order */
    int rnd;           /* rank of the result handed to ViewCopy */
    int64_t rd[EMU_MAX_DIMS];
} emu_fwd;

/* The emulated device generation, from the SoC table's NpuArch (soc.c): A2/A3 (2201, also unknown
 * names), Ascend 950 (3510), the TBE-only generations Atlas training (1001) and 310P (2002), and a
 * known SoC of any other arch (the ops refuse it at phase 1). */
enum { EMU_GEN_A2 = 0, EMU_GEN_950 = 1, EMU_GEN_TBE = 2, EMU_GEN_UNSUPPORTED = 3 };

typedef struct {
    int kernel;
    emu_view go, out;
    int64_t N, C, inH, inW, outH, outW;
    float sH, sW;      /* float32 kernel scales, in each kernel's own convention (see its source) */
    int align_corners; /* bilinear only */
    uint64_t ws_size;  /* bytes of workspace the op needs and uses */
    const char *kname; /* the kernel's stable name (aclemuLastKernel); NULL: derived from `kernel` */
    /* Ascend 950 only */
    float invH, invW;  /* ResizeBilinearV2Grad's inverseScale (DETERMINE*) */
    int half_pixel;    /* ResizeBilinearV2Grad's half_pixel_centers attribute */
    int fma;           /* taken at phase 2: the compiler contracts a * b + c (aclemuSetFmaContraction) */
    uint64_t seed;     /* taken at phase 2 by the atomic kernels: their order of additions */
    /* ResizeBilinearV2Grad5HD only (tbe5hd.c): the tiling mode and the compile info of the SoC */
    int tbe_mode;         /* 0..6 (CalTilingMode) */
    int64_t tbe_tensor_c; /* ub_size / 4 / 2 / 16 */
    int64_t tbe_cores;    /* ai_core_cnt */
    int tbe_fma;          /* taken at phase 2 (aclemuSetTbeFma) */
    int tbe_zw_fault;     /* taken at phase 2 (aclemuSetTbeZeroWeightFault): the planted H-weight fault */
    int fwd_shift_fault;  /* taken at phase 2 (aclemuSetForwardShiftFault): the planted forward shift */
    int ulp_fault;        /* taken at phase 2 (aclemuSetUlpFault): the planted one-ulp fault */
    /* The Cube kernels' result buffer (N, C, inH, inW) reaches out in row-major order of out's own
     * dims (out has another shape than the result: nearest_exact.c, bilinear.c); phase 2 fails if the
     * kernel would write past out's elements. */
    int out_flat;
    const char *fault; /* non-NULL: phase 2's kernel fails with ACL_ERROR_RT_AICORE_EXCEPTION and this */
    emu_fwd fw;        /* the forward ops only */
} emu_op_params;

/* The four public ops. */
enum { EMU_OP_NEAREST_1D = 1, EMU_OP_NEAREST_2D, EMU_OP_BILINEAR_V1, EMU_OP_BILINEAR_V2 };

typedef struct {
    const char *api;     /* the GetWorkspaceSize function name, for messages */
    const char *op_name; /* the phase-2 name */
    int op;
} emu_op_spec;

/* Arguments of phase 1 as every op receives them (scales: 1 or 2 values, 0 = not given). */
typedef struct {
    const aclTensor *go;
    const aclIntArray *os, *is;
    const double *scales;
    int align;
    aclTensor *out;
} emu_args;

#define EMU_FAIL(status, ...)              \
    do {                                   \
        aclemu_set_error(__VA_ARGS__);     \
        return (status);                   \
    } while (0)

/* ---- check.c: validation shared by the ops ---- */
const char *emu_dtype_name(int32_t dtype);
const char *emu_format_name(int32_t format);
void emu_shape_str(char *buf, size_t n, const int64_t *v, uint64_t k);
int64_t emu_numel(const aclTensor *t);
/* NULL pointers (161001) and dead handles (161002) among the arguments and the two out-pointers. */
aclnnStatus emu_check_handles(const emu_op_spec *sp, const emu_args *a, uint64_t *workspaceSize,
                              aclOpExecutor **executor);
/* dtype in {FLOAT, FLOAT16, BF16 when allow_bf16} and equal for both tensors. */
aclnnStatus emu_check_dtypes(const emu_op_spec *sp, const emu_args *a, int allow_bf16);
/* Fills v from t (channels_last: dims are N, H, W, C) after checking it stays inside its allocation.
 * A tensor whose rank is not spatial + 2 gets 4-D sizes (1, 1, 1, 1) with stride 0 when it has one
 * element, else all-zero 4-D sizes (only its flat fields are then meaningful). */
aclnnStatus emu_check_view(const emu_op_spec *sp, const char *name, const aclTensor *t, int spatial,
                           int channels_last, emu_view *v);
/* Row-major strides for its dims (size-1 dims ignored; the offset may be anything). */
int emu_tensor_contiguous(const aclTensor *t);

/* ---- finish.c: the end of the upsample ops' phase 1 (executor run: emu_kernel_run) ---- */
/* Both views, then the parameter block's sizes from them; creates the executor and returns it. */
aclnnStatus emu_finish(const emu_op_spec *sp, const emu_args *a, emu_op_params *p, int spatial, int go_cl,
                       int out_cl, uint64_t *workspaceSize, aclOpExecutor **executor);
/* Success with nothing to launch (empty tensors): workspace 0 and an executor without a kernel. */
aclnnStatus emu_finish_empty(const emu_op_spec *sp, uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2 of every op: validates, enqueues the executor's kernel, frees a one-shot executor. */
aclnnStatus emu_launch(const char *api, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                       aclrtStream stream);

/* ---- soc.c: the emulated generation and the phase-1 deterministic flag ---- */
int emu_soc_generation(void);
/* The NpuArch of the emulated SoC (2201 when the name is not in the table). */
uint32_t emu_soc_arch(void);
/* Phase 1 on a known SoC of an arch the op library does not implement: 161002 with the V2 host
 * code's message; ACLNN_SUCCESS otherwise. */
aclnnStatus emu_check_arch(const emu_op_spec *sp);
/* The TBE compile info of the emulated SoC: core count, tensor_c, l1_support. */
void emu_tbe_compile_info(int64_t *cores, int64_t *tensor_c, int *l1_support);
/* opbase InitL2Phase1Context: the process-wide ACL_OPT_DETERMINISTIC level >= 1, read at phase 1. */
int emu_phase1_deterministic(void);
/* The name launch.c records for a parameter block (kname, else the A2 kernel's name). */
const char *emu_kernel_name(const emu_op_params *p);
/* 1 for the launches whose order of additions is drawn per launch (they take a seed at phase 2). */
int emu_kernel_is_atomic(const emu_op_params *p);

/* ---- Ascend 950 phase 1 (nearest_exact_950.c, resize_grad_950.c) ---- */
aclnnStatus emu_nearest950_finish(const emu_op_spec *sp, const emu_args *a, int spatial, uint64_t *workspaceSize,
                                  aclOpExecutor **executor);
/* V1's RegBase CheckDtypeValid and CheckFormat (aclnn_upsample_bilinear_2d_backward.cpp). */
aclnnStatus emu_resize950_check_dtypes(const emu_op_spec *sp, const emu_args *a, int sizes_same);
aclnnStatus emu_resize950_check_format(const emu_op_spec *sp, const emu_args *a);
/* Both ops' ResizeBilinearV2Grad call and its arch35 tiling (kernel choice, scales). */
aclnnStatus emu_resize950_finish(const emu_op_spec *sp, const emu_args *a, int cl, uint64_t *workspaceSize,
                                 aclOpExecutor **executor);

/* ---- the forward ops (fwd_common.c, fwd_nearest.c, fwd_bilinear.c, fwd_resize_tbe.c, fwd_resize_950.c) ---- */
int emu_fwd_run(const emu_op_params *p, char *msg, size_t msglen);
/* AIV (vector) cores and UB bytes of the emulated SoC, as the arch35 tilings read them (soc.c). */
void emu_soc_vector_info(int64_t *aiv_cores, int64_t *ub_size);

/* ---- kernels (run on the stream worker) ---- */
int emu_kernel_run(const void *params, void *workspace, char *msg, size_t msglen);
int emu_nearest_exact_run(const emu_op_params *p, void *workspace, char *msg, size_t msglen);
int emu_bilinear_grad_run(const emu_op_params *p, char *msg, size_t msglen);
int emu_copy_run(const emu_op_params *p);
int emu_nearest950_run(const emu_op_params *p, char *msg, size_t msglen);
int emu_resize950_gather_run(const emu_op_params *p);
int emu_resize950_scatter_run(const emu_op_params *p, char *msg, size_t msglen);
int emu_resize950_point_copy_run(const emu_op_params *p);
/* ResizeBilinearV2Grad5HD (tbe5hd.c): the tiling mode for the sizes and the SoC, and the kernel. */
int emu_tbe5hd_mode(int64_t gh, int64_t gw, int64_t ih, int64_t iw, int64_t tensor_c, int l1_support);
/* Fills kernel, tbe_* and kname for gradient gh x gw into image ih x iw on the emulated SoC. */
void emu_tbe5hd_setup(emu_op_params *p, int64_t gh, int64_t gw, int64_t ih, int64_t iw);
int emu_tbe5hd_run(const emu_op_params *p, char *msg, size_t msglen);

/*
 * The separable two-pass sum both Cube kernels use. Per dimension, gradient position o sends w0 to
 * cell i0 and w1 to cell i1 (-1: nothing). skip: the kernel skips the pass of a dimension whose scale
 * is within 1e-6 of 1 (then that dimension is the identity); the H pass runs unless only it is
 * skippable. inter: a float32 [N*C][outH][inW] buffer (NULL: allocated here).
 */
typedef struct {
    int32_t i0, i1;
    float w0, w1;
} emu_tap;

/* model_skip: a skipped pass on a dimension whose sizes differ runs with the nearest-exact kernel's
 * addressing (kernels.c); 0: it fails (ACL_ERROR_RT_AICORE_EXCEPTION, addressing not modelled). */
int emu_two_pass(const emu_op_params *p, const emu_tap *th, const emu_tap *tw, int skipH, int skipW, float *inter,
                 int model_skip, char *msg, size_t msglen);
/* |a - b| < 1e-6 in float32, the kernels' FloatEqual. */
int emu_float_equal(float a, float b);

#endif
