/*
 * aclnnUpsampleNearestExact1d / 2d (forward) per family. Sources, hicann/ops-cv:
 *  - image/upsample_nearest/op_host/op_api/aclnn_upsample_nearest_exact2d.cpp (2d) and
 *    aclnn_upsample_nearest_exact1d.cpp (1d): checks and their order, empty tensors, scales, routing;
 *  - image/upsample_nearest/op_host/op_api/upsample_nearest_exact2d.cpp (l0op::UpsampleNearestExact2d,
 *    op type UpsampleNearest), op_host/upsample_nearest_def.cpp and op_host/config/ (configs:
 *    ascend910b, ascend910_93; ascend310p FLOAT16 / FLOAT only; Kirin kirinx90, kirin9030; none for
 *    ascend910), op_host/upsample_nearest_tiling.cpp,
 *    op_kernel/upsample_nearest.h (A2/A3) and op_kernel/upsample_nearest_310p.h (310P);
 *  - image/resize_nearest_neighbor_v2/op_api/resize_nearest_neighbor_v2.cpp, op_host/arch35/
 *    resize_nearest_neighbor_v2_tiling_base.cpp and op_kernel/arch35/ (Ascend 950);
 *  - image/upsample_nearest_exact3d/op_host/op_api/upsample_nearest_exact3d.cpp, image/upsample_nearest3d/
 *    op_host/upsample_nearest3d_tiling_arch35.cpp, op_kernel/arch35/upsample_nearest3d_simd.h (950's
 *    special case).
 * Forward nearest only copies elements (no arithmetic but one add): the A2/A3 kernel moves them with
 * DataCopy / Gather (uint8 through a float16 bridge: exact), the 950 kernels with SIMT loads, DataCopyPad
 * or Gather; only the 310P kernel adds them onto a zeroed buffer (Duplicate 0, Add): -0 becomes +0.
 * Its CopyOut writes a run of C that is not whole 32-byte blocks with SetAtomicAdd over the padded
 * block, onto an output it cleared itself (ClearGM): zeros onto neighbours, order-free, so the emulation
 * stores the values plainly.
 *
 * The index rule is PyTorch's floor((o + 0.5) * s) on A2/A3, 310P and most 950 templates, in float32
 * steps (o + 0.5 rounded, times s rounded, floor, then min(in - 1)), but the scale s differs:
 *   A2/A3, 310P: s = 1 when the sizes are equal (2d only: ComputeScaleValue's dim == 4 shortcut), else
 *     the op_api's (float)(1.0 / scale) when a scale > 0 is given, else (float)in / (float)out;
 *   950: s = 1.0f / (float)scale (a float32 division) when given, else (float)in / (float)out, and equal
 *     sizes copy (SIMT_INPUT_EQ_OUTPUT) whatever the scale;
 *   950 NHWC with C * sizeof(dtype) >= 128 bytes: the DATA_COPY templates, which the tiling forces to
 *     half_pixel_centers = 0: floor(o * s) (the legacy nearest rule, not nearest-exact).
 * The backward (nearest_exact.c) maps with ceil(i * s' - 0.5), s' = out / in: the two disagree where
 * float32 rounding crosses an integer (A2, in 2 -> out 41: the forward reads input 0 for output 20,
 * the backward sends output 20's gradient to input 1).
 */
#include "fwd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024u * 1024u)

/* ---- phase 2 ---- */

/* Source index of output o along one dimension (rules: fwd.h FWD_IDX_*). */
static int64_t src_index(int rule, int64_t o, int64_t in, float s)
{
    float v;
    switch (rule) {
    case FWD_IDX_COPY: return o;
    case FWD_IDX_ONE: return 0;
    case FWD_IDX_LEGACY: v = floorf((float)o * s); break; /* data_copy_*.h: Floor((ho + 0) * hScale) */
    default: v = floorf(((float)o + 0.5f) * s); break;      /* Adds 0.5, Muls s, Floor (two roundings) */
    }
    /* Mins(idx, in - 1) in float (upsample_nearest.h) or min() after the cast (SIMT): the same index */
    return v >= (float)(in - 1) ? in - 1 : (int64_t)v;
}

int fwd_nearest_run(const emu_op_params *p, char *msg, size_t msglen)
{
    const emu_fwd *f = &p->fw;
    const int64_t N = f->xd[0], C = f->xd[1], IH = f->xd[2], IW = f->xd[3], OH = f->yd[2], OW = f->yd[3];
    const size_t es = emu_dtype_size(p->go.dtype);
    const int rh = f->sub & 0xff, rw = (f->sub >> 8) & 0xff;
    unsigned char *x = fwd_load_bytes(&p->go);
    unsigned char *y = malloc((size_t)(N * C * OH * OW > 0 ? N * C * OH * OW : 1) * es);
    int64_t *ih = malloc((size_t)(OH + OW) * sizeof *ih);
    if (x == NULL || y == NULL || ih == NULL) {
        free(x), free(y), free(ih);
        snprintf(msg, msglen, "out of host memory for the kernel's buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    int64_t *iw = ih + OH;
    for (int64_t o = 0; o < OH; o++) {
        ih[o] = src_index(rh, o, IH, f->sh);
    }
    for (int64_t o = 0; o < OW; o++) {
        iw[o] = src_index(rw, o, IW, f->sw);
        /* The planted fault (aclemuSetForwardShiftFault): one column to the right, not a device rule. */
        if (p->fwd_shift_fault && iw[o] < IW - 1) {
            iw[o]++;
        }
    }
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            for (int64_t h = 0; h < OH; h++) {
                for (int64_t w = 0; w < OW; w++) {
                    int64_t xi = f->cl ? ((n * IH + ih[h]) * IW + iw[w]) * C + c : ((n * C + c) * IH + ih[h]) * IW + iw[w];
                    int64_t yi = f->cl ? ((n * OH + h) * OW + w) * C + c : ((n * C + c) * OH + h) * OW + w;
                    if (f->route == EMU_FWD_NEAREST_310P) {
                        /* upsample_nearest_310p.h CalcTensorsC: Duplicate(dst, 0), Add(dst, dst, src) in T */
                        float v = emu_load(x, p->go.dtype, xi);
                        emu_store(y, p->go.dtype, yi, 0.0f + v);
                    } else {
                        memcpy(y + (size_t)yi * es, x + (size_t)xi * es, es);
                    }
                }
            }
        }
    }
    int rc = fwd_store_bytes(p, y, msg, msglen);
    free(x), free(y), free(ih);
    return rc;
}

/* ---- phase 1 ---- */

static const char *const A2_KEYS[3] = {"UpsampleNearestExact2d.COMMON", "UpsampleNearestExact2d.SMALL_CW",
                                        "UpsampleNearestExact2d.SMALL_C"};

/* upsample_nearest_tiling.cpp ComputeScaleValue on the op_api's attribute (float)(1.0 / scale). */
static float a2_scale(int64_t in, int64_t out, double scale, int dim4)
{
    if (dim4 && in == out) {
        return 1.0f;
    }
    float attr = scale > 0 ? (float)(1.0 / scale) : 0.0f;
    return attr > 0.0f ? attr : (float)in / (float)out;
}

/* The arch35 tilings' SetScales / ComputeScales on the op_api's attribute (float)scale. */
static float scale950(int64_t in, int64_t out, double scale)
{
    float attr = scale > 0 ? (float)scale : 0.0f;
    return attr > 0.0f ? 1.0f / attr : (float)in / (float)out;
}

/* UpsampleNearest on A2/A3 or 310P, NHWC inside (the op_api transposes NCHW / ND / NCL to it):
 * dims (N, C, H, W) with H = 1 for 1d; cl: self is channels-last. */
static aclnnStatus route_upsample_nearest(const fwd_args *a, emu_op_params *p, int cl, const int64_t *xd,
                                          int64_t oh, int64_t ow, uint64_t *ws, aclOpExecutor **ex)
{
    const int is310p = emu_soc_arch() == 2002;
    const int dim4 = a->spatial == 2;
    p->kernel = EMU_KERNEL_FWD;
    p->fw.route = is310p ? EMU_FWD_NEAREST_310P : EMU_FWD_NEAREST_A2;
    p->fw.cl = cl;
    memcpy(p->fw.xd, xd, sizeof p->fw.xd);
    int64_t yd[4] = {xd[0], xd[1], oh, ow};
    memcpy(p->fw.yd, yd, sizeof p->fw.yd);
    /* 1d: realScaleH = 1 and the tiling reads the attribute scales_h as the L scale */
    p->fw.sh = dim4 ? a2_scale(xd[2], oh, a->scales[0], 1) : 1.0f;
    p->fw.sw = a2_scale(xd[3], ow, a->scales[a->spatial - 1], dim4);
    p->fw.sub = FWD_IDX_EXACT | (FWD_IDX_EXACT << 8);
    /* GetTilingKey (NHWC): C * outW < 8192 && C * inW < 8192 && inH > 1 -> 1001; C < 8192 && inW < 8192 &&
     * realScaleW < 2 -> 1002; else 1000 (the 310P kernel is one class for every key) */
    const int64_t C = xd[1], IH = xd[2], IW = xd[3];
    int key = C * ow < 8192 && C * IW < 8192 && IH > 1 ? 1 : C < 8192 && IW < 8192 && p->fw.sw < 2.0f ? 2 : 0;
    p->kname = is310p ? "UpsampleNearestExact2d.310P" : A2_KEYS[key];
    p->ws_size = 32u * MIB; /* GetWorkSpace: WORK_SPACE_SIZE */
    int64_t rd[4];
    if (a->spatial == 2) {
        int64_t r[4] = {xd[0], cl ? oh : xd[1], cl ? ow : oh, cl ? xd[1] : ow};
        memcpy(rd, r, sizeof r);
        fwd_set_result(p, 4, rd);
    } else {
        int64_t r[3] = {xd[0], cl ? ow : xd[1], cl ? xd[1] : ow};
        fwd_set_result(p, 3, r);
    }
    return fwd_finish(a, p, ws, ex);
}

/* 310P's UpsampleNearest binary takes FLOAT16 and FLOAT only; 910 (1001) ships none. (Constant texts:
 * the executor keeps the pointer until its phase 2, possibly on another thread.) */
static const char *missing_binary(const fwd_args *a)
{
    int32_t d = a->self->dtype;
    if (emu_soc_arch() == 1001) {
        return "Op UpsampleNearest does not has any binary: op_host/config ships none for ascend910 (NpuArch "
               "1001)";
    }
    if (emu_soc_arch() == 2002 && d != ACL_FLOAT && d != ACL_FLOAT16) {
        return d == ACL_BF16 ? "Cannot find binary for op UpsampleNearest: its ascend310p config takes FLOAT16 and "
                               "FLOAT only, got BF16"
                             : "Cannot find binary for op UpsampleNearest: its ascend310p config takes FLOAT16 and "
                               "FLOAT only, got UINT8";
    }
    return NULL;
}

/* IsCaseNearestExact3d (aclnn_upsample_nearest_exact2d.cpp): NCHW or NHWC tags, dims 0 * 1 == 17, dims
 * 2 / 3 in [740, 750] with (float)outputSize / dim in [7.5, 8] and [6.5, 7]. */
static int is_case_3d(const fwd_args *a)
{
    const aclTensor *t = a->self;
    if (t->format != ACL_FORMAT_NCHW && t->format != ACL_FORMAT_NHWC) {
        return 0;
    }
    int64_t h = t->dims[2], w = t->dims[3];
    float sh = h > 0 ? (float)a->os->values[0] / (float)h : 0.0f, sw = w > 0 ? (float)a->os->values[1] / (float)w : 0.0f;
    return t->dims[0] * t->dims[1] == 17 && h >= 740 && h <= 750 && sh >= 7.5f && sh <= 8.0f && w >= 740 &&
           w <= 750 && sw >= 6.5f && sw <= 7.0f;
}

static const char *const RNN_NAMES[] = {
    "ResizeNearestNeighborV2.DATA_COPY_SMALL_C", "ResizeNearestNeighborV2.DATA_COPY_BIG_C",
    "ResizeNearestNeighborV2.DATA_COPY_JH_C",    "ResizeNearestNeighborV2.SIMT_COMMON",
    "ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT", "ResizeNearestNeighborV2.SIMT_INPUT_EQ_ONE",
    "ResizeNearestNeighborV2.GATHER_ALL_HW",     "ResizeNearestNeighborV2.GATHER_CUT_H",
    "ResizeNearestNeighborV2.SIMT_COMMON_IDX64", "ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT_IDX64",
    "ResizeNearestNeighborV2.SIMT_INPUT_EQ_ONE_IDX64",
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/*
 * ResizeNearestNeighborV2 (arch35) as both op_apis call it: x = contiguous self (its format), size =
 * outputSize, y = contiguous out (ITS shape), align_corners false, half_pixel_centers true, scales =
 * {attrH, attrW}. Tiling (resize_nearest_neighbor_v2_tiling_base.cpp): Init (4-D x and y, N / C equal,
 * H / W > 0, size == y's H / W: else GRAPH_FAILED, which the op_api returns as 561103), SetScales,
 * MatchTilingStrategyAndSetTilingKey; workspace 16 MiB (WORKSPACE_SIZE).
 */
static aclnnStatus route_rnn950(const fwd_args *a, emu_op_params *p, int fmt, const aclTensor *x4, const int64_t *yd4,
                                const int64_t *rd, int rnd, const int64_t *size, double attrh, double attrw,
                                uint64_t *ws, aclOpExecutor **ex)
{
    const int cl = fmt == ACL_FORMAT_NHWC;
    const int64_t *xd = x4->dims;
    int64_t N = xd[0], C = cl ? xd[3] : xd[1], SH = cl ? xd[1] : xd[2], SW = cl ? xd[2] : xd[3];
    int64_t NO = yd4[0], CO = cl ? yd4[3] : yd4[1], DH = cl ? yd4[1] : yd4[2], DW = cl ? yd4[2] : yd4[3];
    if (DH <= 0 || DW <= 0 || SH <= 0 || SW <= 0 || C <= 0 || N <= 0 || CO != C || NO != N) {
        EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                 "%s: ResizeNearestNeighborV2 tiling failed: x and y must have N, C equal and H, W > 0 (x N %lld C "
                 "%lld, y N %lld C %lld)",
                 a->api, (long long)N, (long long)C, (long long)NO, (long long)CO);
    }
    if (size[0] != DH || size[1] != DW) {
        EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                 "%s: ResizeNearestNeighborV2 tiling failed: the value of input size (%lld, %lld) must be y's (H, W) "
                 "(%lld, %lld)",
                 a->api, (long long)size[0], (long long)size[1], (long long)DH, (long long)DW);
    }
    float attr_h = attrh > 0 ? (float)attrh : 0.0f, attr_w = attrw > 0 ? (float)attrw : 0.0f;
    p->kernel = EMU_KERNEL_FWD;
    p->fw.route = EMU_FWD_NEAREST_950;
    p->fw.cl = cl;
    int64_t x[4] = {N, C, SH, SW}, y[4] = {N, C, DH, DW};
    memcpy(p->fw.xd, x, sizeof x);
    memcpy(p->fw.yd, y, sizeof y);
    p->fw.sh = scale950(SH, DH, attrh);
    p->fw.sw = scale950(SW, DW, attrw);
    int64_t cores, ub;
    emu_soc_vector_info(&cores, &ub);
    const int64_t ds = (int64_t)emu_dtype_size(x4->dtype), blk = 32 / ds;
    const int64_t xsz = N * C * SH * SW, ysz = N * C * DH * DW;
    int name = 3;
    if (cl && C * ds >= 128) {
        /* IsMatchTiling_NHWC (UB2UB needs half_pixel_centers 0): DATA_COPY templates, halfPixelCenters
         * forced to 0, bias 0: data_copy_{small_c,big_c,jh}.h index floor(ho * hScale) */
        int64_t max_ub = ((ub / 2) / 32 * 32) / ds, calign = ceil_div(C * ds, 32) * 32 / ds;
        int aligned = (C * ds) % 32 == 0;
        name = aligned && (N * calign < max_ub || C * ds < 256) ? 2 : calign <= max_ub ? 0 : 1;
        p->fw.sub = FWD_IDX_LEGACY | (FWD_IDX_LEGACY << 8);
    } else {
        int gather = 0;
        if (fmt == ACL_FORMAT_NCHW && DW > SW && DH >= SH && attr_h == 0.0f && attr_w == 0.0f && p->fw.sh >= 0.25f &&
            p->fw.sw >= 0.25f && xsz < (int64_t)UINT32_MAX && ysz < (int64_t)UINT32_MAX) {
            /* IsMatchTiling_NCHW_Gather: cores used >= 0.67 of the AIV cores, one W row pair fits */
            int64_t nc = N * C, factor = ceil_div(nc, cores), need = ceil_div(nc, factor);
            int64_t dwa = ceil_div(DW, blk) * blk, swa = ceil_div(SW, blk) * blk;
            int64_t least = dwa * ds * 2 + dwa * ds * 2 + swa * ds * 2 + 32 * 2;
            gather = (float)need / (float)cores >= 0.67f && least <= ub;
            if (gather) {
                /* DoTilingGatherNchw: the whole H x W fits, else the H cut */
                int64_t dha = ceil_div(DH, blk) * blk;
                int64_t all = SH * swa * ds * 2 + DH * dwa * ds * 2 + DH * dwa * ds + dha * ds + dwa * ds;
                name = all <= ub ? 6 : 7;
            }
        }
        if (!gather) {
            int idx32 = xsz < (int64_t)UINT32_MAX && ysz < (int64_t)UINT32_MAX && SH <= INT32_MAX && SW <= INT32_MAX &&
                        DH <= INT32_MAX && DW <= INT32_MAX;
            int mode = SH == DH && SW == DW ? 1 : SH == 1 && SW == 1 ? 2 : 0;
            name = idx32 ? 3 + mode : 8 + mode;
            int rule = mode == 1 ? FWD_IDX_COPY : mode == 2 ? FWD_IDX_ONE : FWD_IDX_EXACT;
            p->fw.sub = rule | (rule << 8);
        } else {
            /* nchw_gather.h ComputeHOrWids: Adds bias 0.5 (tilingData.halfPixelCenters stays 1), Muls, Cast
             * FLOOR, Mins: the exact rule */
            p->fw.sub = FWD_IDX_EXACT | (FWD_IDX_EXACT << 8);
        }
    }
    p->kname = RNN_NAMES[name];
    p->ws_size = 16u * MIB;
    fwd_set_result(p, rnd, rd);
    return fwd_finish(a, p, ws, ex);
}

/* UpsampleNearestExact3dNcdhw on (d0, d1, 1, d2, d3) -> (d0, d1, 1, oh, ow), scales {1, attrH, attrW}:
 * upsample_nearest3d_tiling_arch35.cpp ComputeScales (1 / attr or in / out), GetIsSimd (outW > 85 and
 * out D*H*W >= 5000000 -> the SIMD template, always so in this case), simd.h CalculateSrcIndexTensor
 * (Adds 0.5, Muls, Cast FLOOR, Mins): the exact rule. Dims are literal: an NHWC self is read as if NCHW. */
static aclnnStatus route_3d(const fwd_args *a, emu_op_params *p, uint64_t *ws, aclOpExecutor **ex)
{
    const int64_t *d = a->self->dims, oh = a->os->values[0], ow = a->os->values[1];
    p->kernel = EMU_KERNEL_FWD;
    p->fw.route = EMU_FWD_NEAREST_3D;
    p->fw.cl = 0;
    int64_t x[4] = {d[0], d[1], d[2], d[3]}, y[4] = {d[0], d[1], oh, ow};
    memcpy(p->fw.xd, x, sizeof x);
    memcpy(p->fw.yd, y, sizeof y);
    p->fw.sh = scale950(d[2], oh, a->scales[0]);
    p->fw.sw = scale950(d[3], ow, a->scales[1]);
    p->fw.sub = FWD_IDX_EXACT | (FWD_IDX_EXACT << 8);
    p->kname = "UpsampleNearestExact3dNcdhw.SIMD";
    p->ws_size = 16u * MIB; /* upsample_nearest3d_tiling_arch35.cpp WORKSPACE_SIZE */
    fwd_set_result(p, 4, y);
    return fwd_finish(a, p, ws, ex);
}

static const char *list_name(int regbase)
{
    return regbase ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16, BF16, UINT8";
}

/* CheckDtypeValid: self in the family's list (RegBase: no UINT8), out's dtype equal. */
static aclnnStatus check_dtype(const fwd_args *a)
{
    const int regbase = emu_soc_generation() == EMU_GEN_950;
    int32_t d = a->self->dtype;
    if (!(d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16 || (d == ACL_UINT8 && !regbase))) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s (%d) is not supported; expected %s", a->api,
                 emu_dtype_name(d), d, list_name(regbase));
    }
    if (a->out->dtype != d) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s and out dtype %s must be the same", a->api,
                 emu_dtype_name(d), emu_dtype_name(a->out->dtype));
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus prepare_2d(const fwd_args *a, uint64_t *ws, aclOpExecutor **ex)
{
    const aclTensor *s = a->self, *o = a->out;
    if (ws == NULL || ex == NULL) { /* OP_CHECK_COMM_INPUT */
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: The workspaceSize or executor is nullptr.", a->api);
    }
    const char *nul = s == NULL ? "self" : a->os == NULL ? "outputSize" : o == NULL ? "out" : NULL;
    if (nul != NULL) { /* CheckNotNull(self, outputSize, out) */
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", a->api, nul);
    }
    const emu_op_spec sp = {.api = a->api, .op_name = a->op_name, .op = 0};
    aclnnStatus rc = fwd_check_live(a);
    if (rc != ACLNN_SUCCESS || (rc = emu_check_arch(&sp)) != ACLNN_SUCCESS) {
        return rc;
    }
    if (emu_numel(s) == 0 || emu_numel(o) == 0) { /* "空tensor支持", before CheckParams */
        return fwd_empty(a, ws, ex);
    }
    if ((rc = check_dtype(a)) != ACLNN_SUCCESS) {
        return rc;
    }
    if (s->ndim != 4) { /* CheckShape */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self must be 4D, got %lluD", a->api, (unsigned long long)s->ndim);
    }
    if (a->os->size != 2) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: It is expected output_size equals to 2, but got size %llu", a->api,
                 (unsigned long long)a->os->size);
    }
    /* CheckInputElement: H / W of self by its storage format, outputSize > 0, N and C of out */
    const int nhwc = s->format == ACL_FORMAT_NHWC;
    const int64_t ih = nhwc ? s->dims[1] : s->dims[2], iw = nhwc ? s->dims[2] : s->dims[3];
    const int64_t oh = a->os->values[0], ow = a->os->values[1];
    if (!(ih > 0 && iw > 0 && oh > 0 && ow > 0)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Input and output sizes should greater than 0, but got input (H: %lld, W: %lld) output (H: "
                 "%lld, W: %lld)",
                 a->api, (long long)ih, (long long)iw, (long long)oh, (long long)ow);
    }
    const int cdim = nhwc ? 3 : 1;
    if (o->ndim <= (uint64_t)cdim) { /* GetDim past out's rank: not a defined result of the host code */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out has %llu dims but CheckInputElement reads its dim %d", a->api,
                 (unsigned long long)o->ndim, cdim);
    }
    if (s->dims[0] != o->dims[0] || s->dims[cdim] != o->dims[cdim]) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: inputN[%lld]/outputN[%lld] or inputC[%lld]/outputC[%lld] not equal .",
                 a->api, (long long)s->dims[0], (long long)o->dims[0], (long long)s->dims[cdim],
                 (long long)o->dims[cdim]);
    }
    /* CheckFormat: self NCHW / NHWC / ND, out's format equal */
    if (s->format != ACL_FORMAT_NCHW && s->format != ACL_FORMAT_NHWC && s->format != ACL_FORMAT_ND) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Format of self only supports [NCHW, NHWC, ND], but format is [%s]",
                 a->api, emu_format_name(s->format));
    }
    if (o->format != s->format) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Format of self and out should be equal, self [%s], out [%s].", a->api,
                 emu_format_name(s->format), emu_format_name(o->format));
    }
    emu_op_params p = {.kernel = EMU_KERNEL_FWD};
    if ((rc = fwd_views(a, &p)) != ACLNN_SUCCESS) {
        return rc;
    }
    const int gen = emu_soc_generation();
    if (gen == EMU_GEN_950) {
        if (is_case_3d(a)) {
            return route_3d(a, &p, ws, ex);
        }
        if (o->ndim != 4) {
            EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                     "%s: ResizeNearestNeighborV2 tiling failed: x and y must be 4D when NCHW, NHWC or ND, got %lluD "
                     "and %lluD",
                     a->api, (unsigned long long)s->ndim, (unsigned long long)o->ndim);
        }
        return route_rnn950(a, &p, s->format, s, o->dims, o->dims, 4, a->os->values, a->scales[0], a->scales[1], ws,
                            ex);
    }
    const char *why = missing_binary(a);
    if (why != NULL) {
        return fwd_no_binary(a, why, ws, ex);
    }
    int64_t xd[4] = {s->dims[0], nhwc ? s->dims[3] : s->dims[1], ih, iw};
    return route_upsample_nearest(a, &p, nhwc, xd, oh, ow, ws, ex);
}

static aclnnStatus prepare_1d(const fwd_args *a, uint64_t *ws, aclOpExecutor **ex)
{
    const aclTensor *s = a->self, *o = a->out;
    if (ws == NULL || ex == NULL) { /* OP_CHECK_COMM_INPUT */
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: The workspaceSize or executor is nullptr.", a->api);
    }
    const char *nul = s == NULL ? "self" : o == NULL ? "out" : a->os == NULL ? "outputSize" : NULL;
    if (nul != NULL) { /* CheckParams 1: CheckNotNull(self, out, outputSize) */
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", a->api, nul);
    }
    const emu_op_spec sp = {.api = a->api, .op_name = a->op_name, .op = 0};
    aclnnStatus rc = fwd_check_live(a);
    if (rc != ACLNN_SUCCESS || (rc = emu_check_arch(&sp)) != ACLNN_SUCCESS || (rc = check_dtype(a)) != ACLNN_SUCCESS) {
        return rc;
    }
    /* CheckInputElement comes before CheckShape: it reads self's dims 0..2 and outputSize[0] */
    if (s->ndim < 3 || a->os->size < 1) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: self has %llu dims and outputSize %llu values, but CheckInputElement reads self's dims 0..2 and "
                 "outputSize[0] before CheckShape (not a defined result of the host code)",
                 a->api, (unsigned long long)s->ndim, (unsigned long long)a->os->size);
    }
    const int64_t outl = a->os->values[0];
    if (!(s->dims[0] > 0 && s->dims[1] > 0 && s->dims[2] > 0 && outl > 0)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Input and output sizes should greater than 0, bug got input (N: %lld, C: %lld, L: %lld) output "
                 "(N: %lld, C: %lld, L: %lld)",
                 a->api, (long long)s->dims[0], (long long)s->dims[1], (long long)s->dims[2], (long long)s->dims[0],
                 (long long)s->dims[1], (long long)outl);
    }
    if (s->ndim != 3) { /* CheckShape */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self must be 3D, got %lluD", a->api, (unsigned long long)s->ndim);
    }
    if (a->os->size != 1) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: It is expected output_size equals to 1, but got size %llu", a->api,
                 (unsigned long long)a->os->size);
    }
    /* self->IsEmpty(): unreachable (N, C, L > 0). out is never checked (rank, N, C, format). */
    emu_op_params p = {.kernel = EMU_KERNEL_FWD};
    if ((rc = fwd_views(a, &p)) != ACLNN_SUCCESS) {
        return rc;
    }
    const int ncl = s->format == ACL_FORMAT_NCL || s->format == ACL_FORMAT_ND;
    if (emu_soc_generation() == EMU_GEN_950) {
        /* upsampleNearestExact1dCompute (RegBase): NCL and ND only, else nullptr (561103); View3dAs4d of self
         * and out (unsqueeze(2), NCHW): ResizeNearestNeighborV2 with size (1, outL), scales {1, (float)scales} */
        if (!ncl) {
            EMU_FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: self format %s: only NCL and ND are supported on this SoC", a->api,
                     emu_format_name(s->format));
        }
        if (o->ndim != 3) {
            EMU_FAIL(ACLNN_ERR_INNER_NULLPTR,
                     "%s: ResizeNearestNeighborV2 tiling failed: y (out unsqueezed at dim 2) must be 4D, out is %lluD",
                     a->api, (unsigned long long)o->ndim);
        }
        aclTensor x4 = *s;
        x4.ndim = 4;
        x4.dims[3] = s->dims[2];
        x4.dims[2] = 1;
        int64_t y4[4] = {o->dims[0], o->dims[1], 1, o->dims[2]}, size[2] = {1, outl};
        /* the result comes back through View4dAs3d: out's own 3-D dims */
        return route_rnn950(a, &p, ACL_FORMAT_NCHW, &x4, y4, o->dims, 3, size, 1.0, a->scales[0], ws, ex);
    }
    const char *why = missing_binary(a);
    if (why != NULL) {
        return fwd_no_binary(a, why, ws, ex);
    }
    /* NCL / ND: transposed to NLC; any other tag is taken as NLC already (N, L, C) */
    int64_t xd[4] = {s->dims[0], ncl ? s->dims[1] : s->dims[2], 1, ncl ? s->dims[2] : s->dims[1]};
    return route_upsample_nearest(a, &p, !ncl, xd, 1, outl, ws, ex);
}

aclnnStatus aclnnUpsampleNearestExact1dGetWorkspaceSize(const aclTensor *self, const aclIntArray *outputSize,
                                                        double scales, aclTensor *out, uint64_t *workspaceSize,
                                                        aclOpExecutor **executor)
{
    fwd_args a = {.api = "aclnnUpsampleNearestExact1dGetWorkspaceSize", .op_name = "aclnnUpsampleNearestExact1d",
                  .spatial = 1, .self = self, .os = outputSize, .scales = {scales, 0}, .out = out};
    return prepare_1d(&a, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleNearestExact1d(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream)
{
    return emu_launch("aclnnUpsampleNearestExact1d", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnUpsampleNearestExact2dGetWorkspaceSize(const aclTensor *self, const aclIntArray *outputSize,
                                                        double scalesH, double scalesW, aclTensor *out,
                                                        uint64_t *workspaceSize, aclOpExecutor **executor)
{
    fwd_args a = {.api = "aclnnUpsampleNearestExact2dGetWorkspaceSize", .op_name = "aclnnUpsampleNearestExact2d",
                  .spatial = 2, .self = self, .os = outputSize, .scales = {scalesH, scalesW}, .out = out};
    return prepare_2d(&a, workspaceSize, executor);
}

aclnnStatus aclnnUpsampleNearestExact2d(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream)
{
    return emu_launch("aclnnUpsampleNearestExact2d", workspace, workspaceSize, executor, stream);
}
