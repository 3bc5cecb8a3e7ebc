/*
 * The kernel dispatcher, the separable two-pass sum of the Cube kernels and the view copy.
 *
 * Two-pass structure, as in ops-cv image/upsample_nearest_exact2d_grad/op_kernel/
 * upsample_nearest_exact2d_grad_kernel.h (Process, wDirectionExpansion, hDirectionExpansion) and
 * image/upsample_bilinear2d_grad/op_kernel/upsample_bilinear2d_grad_kernel.h (Process): the W pass is
 * a matmul of gradOutput rows (N*C*outH of them) with an outW x inW weight matrix into a float32
 * intermediate in the workspace; the H pass multiplies an inH x outH weight matrix with each
 * (outH x inW) plane of it into the result. A pass whose scale is within 1e-6 of 1 is skipped
 * (FloatEqual); when only the H pass is skipped the W pass writes the result directly, and when the W
 * pass is skipped the H pass reads gradOutput. Float16/bfloat16 reach the kernel cast to float32 by
 * the op_api (aclnn_upsample_nearest_exact2d_backward.cpp, aclnn_upsample_bilinear_2d_backward_v2.cpp)
 * and are rounded once at the end.
 * The device's summation order inside a matmul is not specified; here each output adds its terms in
 * ascending gradient index from +0.0, and only each gradient position's own taps contribute (a zero
 * weight included; a matmul multiplies every weight of its block, so on the device an infinite
 * gradient can turn more of the neighbouring sums into NaN than here).
 */
#include "dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int emu_float_equal(float a, float b)
{
    return a > b ? a - b < 1e-6f : b - a < 1e-6f;
}

static float load_at(const emu_view *v, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return emu_load(v->data, v->dtype,
                    v->offset + n * v->strides[0] + c * v->strides[1] + h * v->strides[2] + w * v->strides[3]);
}

static void store_at(const emu_view *v, int64_t n, int64_t c, int64_t h, int64_t w, float x)
{
    emu_store(v->data, v->dtype,
              v->offset + n * v->strides[0] + c * v->strides[1] + h * v->strides[2] + w * v->strides[3], x);
}

static void add_tap(float *acc, int32_t i, float w, float v)
{
    if (i >= 0) {
        acc[i] += w * v;
    }
}

int emu_two_pass(const emu_op_params *p, const emu_tap *th, const emu_tap *tw, int skipH, int skipW, float *inter,
                 char *msg, size_t msglen)
{
    const int runW = !skipW, runH = !skipH || skipW;
    const int64_t inH = p->inH, inW = p->inW, outH = p->outH, outW = p->outW;
    if ((!runW && inW != outW) || (!runH && inH != outH)) {
        snprintf(msg, msglen, "a skipped pass needs equal sizes (in %lldx%lld, out %lldx%lld)", (long long)inH,
                 (long long)inW, (long long)outH, (long long)outW);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    float *scratch = NULL;
    if (runW && runH && inter == NULL) {
        inter = scratch = malloc((size_t)(p->N * p->C * outH * inW) * sizeof *inter);
    }
    float *acc = malloc((size_t)(runH ? inH * inW : inW) * sizeof *acc);
    if (acc == NULL || (runW && runH && inter == NULL)) {
        free(scratch);
        free(acc);
        snprintf(msg, msglen, "out of host memory for the kernel's scratch buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            float *plane = runW && runH ? inter + (n * p->C + c) * outH * inW : NULL;
            if (runW) { /* W pass: each gradOutput row times the outW x inW matrix */
                for (int64_t oh = 0; oh < outH; oh++) {
                    float *row = plane ? plane + oh * inW : acc;
                    memset(row, 0, (size_t)inW * sizeof *row); /* all-zero bits = +0.0f */
                    for (int64_t ow = 0; ow < outW; ow++) {
                        float v = load_at(&p->go, n, c, oh, ow);
                        add_tap(row, tw[ow].i0, tw[ow].w0, v);
                        add_tap(row, tw[ow].i1, tw[ow].w1, v);
                    }
                    for (int64_t x = 0; x < inW && !plane; x++) {
                        store_at(&p->out, n, c, oh, x, row[x]); /* H skipped: inH == outH */
                    }
                }
            }
            if (!runH) {
                continue;
            }
            /* H pass: the inH x outH matrix times the plane (intermediate, or gradOutput when W skipped) */
            memset(acc, 0, (size_t)(inH * inW) * sizeof *acc);
            for (int64_t oh = 0; oh < outH; oh++) {
                const emu_tap t = th[oh];
                for (int64_t x = 0; x < inW; x++) {
                    float v = plane ? plane[oh * inW + x] : load_at(&p->go, n, c, oh, x);
                    if (t.i0 >= 0) {
                        acc[t.i0 * inW + x] += t.w0 * v;
                    }
                    if (t.i1 >= 0) {
                        acc[t.i1 * inW + x] += t.w1 * v;
                    }
                }
            }
            for (int64_t y = 0; y < inH; y++) {
                for (int64_t x = 0; x < inW; x++) {
                    store_at(&p->out, n, c, y, x, acc[y * inW + x]);
                }
            }
        }
    }
    free(scratch);
    free(acc);
    return 0;
}

/* Bilinear V1 with equal sizes: the op_api's ViewCopy of gradOutput into out, bit for bit. */
int emu_copy_run(const emu_op_params *p)
{
    const emu_view *g = &p->go, *o = &p->out;
    size_t es = emu_dtype_size(g->dtype);
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            for (int64_t h = 0; h < p->inH; h++) {
                for (int64_t w = 0; w < p->inW; w++) {
                    int64_t gi = g->offset + n * g->strides[0] + c * g->strides[1] + h * g->strides[2] +
                                 w * g->strides[3];
                    int64_t oi = o->offset + n * o->strides[0] + c * o->strides[1] + h * o->strides[2] +
                                 w * o->strides[3];
                    memcpy(o->data + oi * (int64_t)es, g->data + gi * (int64_t)es, es);
                }
            }
        }
    }
    return 0;
}

int emu_kernel_run(const void *params, void *workspace, char *msg, size_t msglen)
{
    const emu_op_params *p = params;
    switch (p->kernel) {
    case EMU_KERNEL_NEAREST_EXACT: return emu_nearest_exact_run(p, workspace, msg, msglen);
    case EMU_KERNEL_BILINEAR_GRAD: return emu_bilinear_grad_run(p, msg, msglen);
    case EMU_KERNEL_RB5HD: return emu_tbe5hd_run(p, msg, msglen);
    case EMU_KERNEL_COPY: return emu_copy_run(p);
    case EMU_KERNEL_NE950_COPY: return emu_copy_run(p);
    case EMU_KERNEL_NE950_SIMT: return emu_nearest950_run(p, msg, msglen);
    case EMU_KERNEL_RB950_ALL_COPY: return emu_copy_run(p);
    case EMU_KERNEL_RB950_POINT_COPY: return emu_resize950_point_copy_run(p);
    case EMU_KERNEL_RB950_DETERMINE:
    case EMU_KERNEL_RB950_DETERMINE_SCALES: return emu_resize950_gather_run(p);
    case EMU_KERNEL_RB950_C_PARALLEL:
    case EMU_KERNEL_RB950_SIMT: return emu_resize950_scatter_run(p, msg, msglen);
    default: return 0;
    }
}
