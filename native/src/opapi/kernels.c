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

/* gradOutput as the kernel reads it: the op_api's contiguous (N, C, outH, outW) copy, flat index f. */
static float load_flat(const emu_op_params *p, int64_t f)
{
    const int64_t w = f % p->outW, h = f / p->outW % p->outH, c = f / (p->outW * p->outH) % p->C;
    return load_at(&p->go, f / (p->outW * p->outH * p->C), c, h, w);
}

/* Result element f of the kernel's contiguous (N, C, inH, inW) buffer, as it reaches out: at the same
 * (n, c, h, w), or (out_flat) the f-th element of out in row-major order of out's own dims. */
static void store_res(const emu_op_params *p, int64_t f, float x)
{
    if (p->out_flat) {
        emu_store(p->out.data, p->out.dtype, emu_view_flat_index(&p->out, f), x);
        return;
    }
    const int64_t w = f % p->inW, h = f / p->inW % p->inH, c = f / (p->inW * p->inH) % p->C;
    store_at(&p->out, f / (p->inW * p->inH * p->C), c, h, w, x);
}

/*
 * Skipped passes (upsample_nearest_exact2d_grad_kernel.h Process, calculateWidthExtension,
 * calculateHeightExtension; the tiling's input_shapes are gradOutput's (N, C, outH, outW), its
 * output_shapes (N, C, inH, inW) with inH / inW from inputSize). W pass skipped: the H pass reads
 * gradOutput as its B matrix with the intermediate's addressing, plane b row k at b*outH*inW + k*inW
 * (row stride inW, not outW). H pass skipped: the W pass writes gradOutput row r (r over all
 * N*C*outH rows) to result row r, at r*inW (row stride inW, N*C*outH rows, not N*C*inH). With equal
 * sizes both are the plain layout; with sizes that differ they shift rows and planes, and a read past
 * gradOutput or a write past the result fails here (ACL_ERROR_RT_AICORE_EXCEPTION: on the device an
 * out-of-bounds GM access). Result rows the W pass never reaches keep what the buffer held.
 */
int emu_two_pass(const emu_op_params *p, const emu_tap *th, const emu_tap *tw, int skipH, int skipW, float *inter,
                 int model_skip, char *msg, size_t msglen)
{
    const int runW = !skipW, runH = !skipH || skipW;
    const int64_t inH = p->inH, inW = p->inW, outH = p->outH, outW = p->outW, B = p->N * p->C;
    if (!model_skip && ((!runW && inW != outW) || (!runH && inH != outH))) {
        snprintf(msg, msglen, "a skipped pass needs equal sizes (in %lldx%lld, out %lldx%lld)", (long long)inH,
                 (long long)inW, (long long)outH, (long long)outW);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    /* Elements the kernel writes into its result buffer, and that buffer's size. */
    const int64_t writes = B * (runH ? inH : outH) * inW;
    const int64_t room = p->out_flat ? p->out.numel : B * inH * inW;
    if (writes > room) {
        snprintf(msg, msglen,
                 "the kernel writes %lld result elements (%s) but its result buffer has %lld: out-of-bounds write",
                 (long long)writes, runH ? "N*C*inH*inW" : "H pass skipped: N*C*outH*inW", (long long)room);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    if (!runW && B > 0) { /* the H pass reads gradOutput with row stride inW: its last row read */
        int64_t last = -1;
        for (int64_t oh = 0; oh < outH; oh++) {
            if (th[oh].i0 >= 0 || th[oh].i1 >= 0) {
                last = oh;
            }
        }
        if (last >= 0 && (B - 1) * outH * inW + (last + 1) * inW > B * outH * outW) {
            snprintf(msg, msglen,
                     "W pass skipped: the H pass reads gradOutput rows with stride inW %lld (outW %lld), up to "
                     "element %lld of %lld: out-of-bounds read",
                     (long long)inW, (long long)outW, (long long)((B - 1) * outH * inW + (last + 1) * inW - 1),
                     (long long)(B * outH * outW));
            return ACL_ERROR_RT_AICORE_EXCEPTION;
        }
    }
    float *scratch = NULL;
    if (runW && runH && inter == NULL) {
        inter = scratch = malloc((size_t)(B * outH * inW) * sizeof *inter);
    }
    float *acc = malloc((size_t)(runH ? inH * inW : inW) * sizeof *acc);
    if (acc == NULL || (runW && runH && inter == NULL)) {
        free(scratch);
        free(acc);
        snprintf(msg, msglen, "out of host memory for the kernel's scratch buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = b / p->C, c = b % p->C;
        float *plane = runW && runH ? inter + b * outH * inW : NULL;
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
                    store_res(p, (b * outH + oh) * inW + x, row[x]); /* H skipped: result row b*outH + oh */
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
            if (t.i0 < 0 && t.i1 < 0) {
                continue;
            }
            for (int64_t x = 0; x < inW; x++) {
                float v = plane ? plane[oh * inW + x] : load_flat(p, (b * outH + oh) * inW + x);
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
                store_res(p, (b * inH + y) * inW + x, acc[y * inW + x]);
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

/*
 * The planted one-ulp fault (aclemuSetUlpFault, ACLEMU_ULP_FAULT; not a device rule): after a backward
 * kernel whose order of additions is fixed (every backward launch emu_kernel_is_atomic leaves out), the
 * first nonzero finite element of its result, in the order the kernel's buffer reaches out, moves one
 * ulp of out's dtype away from zero (towards zero at the largest finite value). Such a result is
 * determined bit for bit, so an exact comparison sees the fault while any rounding bound hides it.
 */
static void ulp_fault_apply(const emu_op_params *p)
{
    const emu_view *o = &p->out;
    if (o->dtype != ACL_FLOAT && o->dtype != ACL_FLOAT16 && o->dtype != ACL_BF16) {
        return; /* the equal-size copies of float64 / int32 */
    }
    const int wide = o->dtype == ACL_FLOAT;
    const uint32_t magnitude = wide ? 0x7fffffffu : 0x7fffu;
    const uint32_t inf = wide ? 0x7f800000u : o->dtype == ACL_FLOAT16 ? 0x7c00u : 0x7f80u;
    const int64_t count = p->out_flat ? o->numel : o->sizes[0] * o->sizes[1] * o->sizes[2] * o->sizes[3];
    for (int64_t f = 0; f < count; f++) {
        int64_t i = o->offset;
        if (p->out_flat) {
            i = emu_view_flat_index(o, f);
        } else {
            int64_t rest = f;
            for (int d = 3; d >= 0; d--) {
                i += rest % o->sizes[d] * o->strides[d];
                rest /= o->sizes[d];
            }
        }
        unsigned char *at = o->data + i * (int64_t)emu_dtype_size(o->dtype);
        uint32_t bits = 0;
        uint16_t half = 0;
        if (wide) {
            memcpy(&bits, at, sizeof bits);
        } else {
            memcpy(&half, at, sizeof half);
            bits = half;
        }
        const uint32_t m = bits & magnitude;
        if (m == 0 || m >= inf) {
            continue; /* a zero of either sign, an infinity or a NaN */
        }
        bits = m + 1 == inf ? bits - 1 : bits + 1;
        if (wide) {
            memcpy(at, &bits, sizeof bits);
        } else {
            half = (uint16_t)bits;
            memcpy(at, &half, sizeof half);
        }
        return;
    }
}

static int kernel_run(const emu_op_params *p, void *workspace, char *msg, size_t msglen)
{
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
    case EMU_KERNEL_FWD: return emu_fwd_run(p, msg, msglen);
    default: return 0;
    }
}

int emu_kernel_run(const void *params, void *workspace, char *msg, size_t msglen)
{
    const emu_op_params *p = params;
    if (p->fault != NULL) {
        snprintf(msg, msglen, "%s", p->fault);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    int rc = kernel_run(p, workspace, msg, msglen);
    /* The backward kernels only: not the forward ops, nor an atomic launch's free order. */
    if (rc == 0 && p->ulp_fault && p->kernel != EMU_KERNEL_FWD && p->kernel != EMU_KERNEL_NONE &&
        !emu_kernel_is_atomic(p)) {
        ulp_fault_apply(p);
    }
    return rc;
}
