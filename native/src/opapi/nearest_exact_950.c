/*
 * Nearest-exact backward (1d and 2d) as Ascend 950 (arch35, RegBase) computes it. Sources in ops-cv
 * image/upsample_nearest_exact2d_grad/:
 *  - op_host/op_api/aclnn_upsample_nearest_exact{1,2}d_backward.cpp: the same checks as on A2 (in
 *    nearest_exact.c); the kernel gets scale = scales > 0 ? (float)scales : 0 (1d: scale_h = 1.0f);
 *    the cast of float16/bfloat16 to float32 and back runs only when !IsRegBase(), so on 950 the
 *    kernel reads the gradient in its own dtype.
 *  - op_host/upsample_nearest_exact2d_grad_tiling_arch35.cpp: "in" there is the kernel's input (the
 *    gradient), "out" its output (the result). ComputeScales: s = (float)gradSize / (float)resultSize,
 *    replaced by the attribute when it is > 0. CalTilingData: equal sizes on both dimensions with
 *    |s - 1| <= 1e-8 on both is schId 0 (data copy); anything else is SIMT (schId 1, 2 or 3, which
 *    only split the work differently). DoTiling: workspace 16 MiB (WORKSPACE_SIZE).
 *  - op_kernel/arch35/upsample_nearest_exact2d_grad_data_copy.h: schId 0 copies the bytes.
 *  - op_kernel/arch35/upsample_nearest_exact2d_grad_simt_base.h (ComputeOrig, ComputeForSplit*,
 *    SimtCompute): one thread per result cell (h, w): lo(i) = min(ceil(i * s - 0.5f), gradSize) per
 *    dimension, the cell sums gradient rows lo(h) .. lo(h + 1) - 1, each row's columns lo(w) ..
 *    lo(w + 1) - 1 in ascending order into a float32 accumulator starting at 0, each term widened from
 *    the gradient's dtype, and stores it cast once to the result dtype (RNE assumed: the source names
 *    no rounding mode for static_cast<T1>(float)). No atomics: the deterministic flag is not read.
 *  - Contraction: `static_cast<float>(idx) * scale - 0.5f` is one FMA when the arch35 compiler
 *    contracts (the emulation's switch, see fp950.h); 1d in 6, out 1: s = fl32(1/6), 3 * s rounds to
 *    0.5, so unfused lo(3) = ceil(0) = 0 and the gradient goes to input 3, fused lo(3) = ceil(1.5e-8)
 *    = 1 and it goes to input 2.
 */
#include "fp950.h"

#include <stdio.h>
#include <stdlib.h>

/* ComputeOrig (isExact): the first gradient position of result cell `idx`, capped at `limit`. */
static int64_t orig_index(int64_t idx, float scale, int64_t limit, int fma)
{
    float x = ceilf(emu_madd((float)idx, scale, -0.5f, fma));
    int64_t o = x > 0.0f ? emu_f2i(x) : 0; /* ceil of (-1, 0] is -0: index 0 */
    return o < limit ? o : limit;
}

int emu_nearest950_run(const emu_op_params *p, char *msg, size_t msglen)
{
    /* result cell i of a dimension reads gradient positions [lo[i], lo[i + 1]) */
    int64_t *loH = malloc((size_t)(p->inH + 1 + p->inW + 1) * sizeof *loH);
    if (loH == NULL) {
        snprintf(msg, msglen, "out of host memory for the kernel's index tables");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    int64_t *loW = loH + p->inH + 1;
    for (int64_t i = 0; i <= p->inH; i++) {
        loH[i] = orig_index(i, p->sH, p->outH, p->fma);
    }
    for (int64_t i = 0; i <= p->inW; i++) {
        loW[i] = orig_index(i, p->sW, p->outW, p->fma);
    }
    const emu_view *g = &p->go, *o = &p->out;
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            for (int64_t h = 0; h < p->inH; h++) {
                for (int64_t w = 0; w < p->inW; w++) {
                    float acc = 0.0f;
                    for (int64_t y = loH[h]; y < loH[h + 1]; y++) {
                        for (int64_t x = loW[w]; x < loW[w + 1]; x++) {
                            acc += emu_load(g->data, g->dtype, emu_at(g, n, c, y, x));
                        }
                    }
                    emu_store(o->data, o->dtype, emu_at(o, n, c, h, w), acc);
                }
            }
        }
    }
    free(loH);
    return 0;
}

/* Phase 1 after the op_api's checks (nearest_exact.c): scales, kernel choice, workspace. */
aclnnStatus emu_nearest950_finish(const emu_op_spec *sp, const emu_args *a, int spatial, uint64_t *workspaceSize,
                                  aclOpExecutor **executor)
{
    emu_op_params p = {.kernel = EMU_KERNEL_NE950_SIMT};
    const int64_t *is = a->is->values;
    int64_t inH = spatial == 2 ? is[2] : 1, inW = is[spatial + 1];
    int64_t outH = spatial == 2 ? a->go->dims[2] : 1, outW = a->go->dims[spatial + 1];
    /* op_api: scales > 0 ? (float)scales : 0, and 1.0f for the 1d op's inserted H */
    float attrH = spatial == 1 ? 1.0f : a->scales[0] > 0 ? (float)a->scales[0] : 0.0f;
    float attrW = a->scales[spatial - 1] > 0 ? (float)a->scales[spatial - 1] : 0.0f;
    /* tiling ComputeScales: gradient size / result size unless the attribute is > 0 */
    p.sH = attrH > 0.0f ? attrH : (float)outH / (float)inH;
    p.sW = attrW > 0.0f ? attrW : (float)outW / (float)inW;
    /* tiling CalTilingData: isDataCopy */
    if (outH == inH && outW == inW && fabsf(p.sH - 1.0f) <= 1e-8f && fabsf(p.sW - 1.0f) <= 1e-8f) {
        p.kernel = EMU_KERNEL_NE950_COPY;
        p.kname = "UpsampleNearestExact2dGrad.DATA_COPY";
    } else {
        p.kname = "UpsampleNearestExact2dGrad.SIMT";
    }
    p.ws_size = (uint64_t)16 * 1024 * 1024; /* tiling DoTiling: workspaces[0] = WORKSPACE_SIZE */
    return emu_finish(sp, a, &p, spatial, 0, 0, workspaceSize, executor);
}
