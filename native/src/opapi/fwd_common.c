/*
 * The forward ops' shared phase-1 tail and phase-2 frame: views, executors, the contiguous copy of
 * self (l0op::Contiguous) and the closing l0op::ViewCopy(result, out) of every op_api
 * (hicann/ops-cv image/upsample_nearest/op_host/op_api/aclnn_upsample_nearest_exact{1,2}d.cpp,
 * image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp: "将计算结果拷贝到输出out上，
 * out可能是非连续的tensor"). Non-contiguous self and out views are accepted: Contiguous reads self
 * through its strides, ViewCopy writes out through its strides.
 */
#include "fwd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t fwd_numel(const int64_t *dims, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) {
        n *= dims[i];
    }
    return n;
}

aclnnStatus fwd_check_live(const fwd_args *a)
{
    const char *dead = !aclemu_tensor_live(a->self) ? "self is not a live aclTensor"
                       : !aclemu_tensor_live(a->out) ? "out is not a live aclTensor"
                       : a->os != NULL && !aclemu_intarray_live(a->os) ? "outputSize is not a live aclIntArray"
                       : NULL;
    if (dead != NULL) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s (destroyed, or never created)", a->api, dead);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus fwd_views(const fwd_args *a, emu_op_params *p)
{
    const emu_op_spec sp = {.api = a->api, .op_name = a->op_name, .op = 0};
    /* only the flat fields (own dims, strides, row-major order) are used by the forward kernels */
    int sx = a->self->ndim == 3 ? 1 : 2, so = a->out->ndim == 3 ? 1 : 2;
    aclnnStatus rc = emu_check_view(&sp, "self", a->self, sx, 0, &p->go);
    if (rc == ACLNN_SUCCESS) {
        rc = emu_check_view(&sp, "out", a->out, so, 0, &p->out);
    }
    return rc;
}

void fwd_set_result(emu_op_params *p, int nd, const int64_t *dims)
{
    p->fw.rnd = nd;
    for (int i = 0; i < nd; i++) {
        p->fw.rd[i] = dims[i];
    }
}

aclnnStatus fwd_finish(const fwd_args *a, emu_op_params *p, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    aclOpExecutor *e = aclemu_executor_create(a->op_name, emu_kernel_run, p, sizeof *p, p->ws_size);
    if (e == NULL) {
        EMU_FAIL(ACLNN_ERR_INNER, "%s: out of host memory creating the executor", a->api);
    }
    *workspaceSize = p->ws_size;
    *executor = e;
    return ACLNN_SUCCESS;
}

aclnnStatus fwd_empty(const fwd_args *a, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    emu_op_params p = {.kernel = EMU_KERNEL_NONE};
    return fwd_finish(a, &p, workspaceSize, executor);
}

aclnnStatus fwd_no_binary(const fwd_args *a, const char *why, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    emu_op_params p = {.kernel = EMU_KERNEL_NO_BINARY, .fault = why};
    return fwd_finish(a, &p, workspaceSize, executor);
}

float *fwd_load_float(const emu_view *v)
{
    float *x = malloc((size_t)(v->numel > 0 ? v->numel : 1) * sizeof *x);
    for (int64_t f = 0; x != NULL && f < v->numel; f++) {
        x[f] = emu_load(v->data, v->dtype, emu_view_flat_index(v, f));
    }
    return x;
}

unsigned char *fwd_load_bytes(const emu_view *v)
{
    const size_t es = emu_dtype_size(v->dtype);
    unsigned char *x = malloc((size_t)(v->numel > 0 ? v->numel : 1) * es);
    for (int64_t f = 0; x != NULL && f < v->numel; f++) {
        memcpy(x + (size_t)f * es, v->data + emu_view_flat_index(v, f) * (int64_t)es, es);
    }
    return x;
}

/* ViewCopy's reach: 0, or a fault when the result cannot reach out (see fwd.h). */
static int view_copy_ok(const emu_op_params *p, char *msg, size_t msglen)
{
    const emu_view *o = &p->out;
    int same = o->nd == p->fw.rnd;
    for (int i = 0; same && i < o->nd; i++) {
        same = o->fdims[i] == p->fw.rd[i];
    }
    const int64_t n = fwd_numel(p->fw.rd, p->fw.rnd);
    if (same) {
        return 0;
    }
    if (!o->contiguous) {
        snprintf(msg, msglen,
                 "the result has other dims than out and out is not contiguous: l0op::ViewCopy then runs with "
                 "differing shapes, whose behaviour is not public (not emulated)");
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    if (o->numel < n) {
        snprintf(msg, msglen, "the result has %lld elements but out only %lld: l0op::ViewCopy writes past out",
                 (long long)n, (long long)o->numel);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    return 0;
}

int fwd_store_float(const emu_op_params *p, const float *y, char *msg, size_t msglen)
{
    int rc = view_copy_ok(p, msg, msglen);
    const emu_view *o = &p->out;
    const int64_t n = fwd_numel(p->fw.rd, p->fw.rnd);
    for (int64_t f = 0; rc == 0 && f < n; f++) {
        emu_store(o->data, o->dtype, emu_view_flat_index(o, f), y[f]);
    }
    return rc;
}

int fwd_store_bytes(const emu_op_params *p, const unsigned char *y, char *msg, size_t msglen)
{
    int rc = view_copy_ok(p, msg, msglen);
    const emu_view *o = &p->out;
    const size_t es = emu_dtype_size(o->dtype);
    const int64_t n = fwd_numel(p->fw.rd, p->fw.rnd);
    for (int64_t f = 0; rc == 0 && f < n; f++) {
        memcpy(o->data + emu_view_flat_index(o, f) * (int64_t)es, y + (size_t)f * es, es);
    }
    return rc;
}

int emu_fwd_run(const emu_op_params *p, char *msg, size_t msglen)
{
    switch (p->fw.route) {
    case EMU_FWD_COPY: {
        unsigned char *x = fwd_load_bytes(&p->go);
        if (x == NULL) {
            snprintf(msg, msglen, "out of host memory");
            return ACL_ERROR_RT_MEMORY_ALLOCATION;
        }
        int rc = fwd_store_bytes(p, x, msg, msglen);
        free(x);
        return rc;
    }
    case EMU_FWD_NEAREST_A2:
    case EMU_FWD_NEAREST_310P:
    case EMU_FWD_NEAREST_950:
    case EMU_FWD_NEAREST_3D: return fwd_nearest_run(p, msg, msglen);
    case EMU_FWD_CUBE: return fwd_cube_run(p, msg, msglen);
    case EMU_FWD_TBE: return fwd_tbe_run(p, msg, msglen);
    case EMU_FWD_RB950: return fwd_rb950_run(p, msg, msglen);
    default: snprintf(msg, msglen, "unknown forward route %d", p->fw.route); return ACL_ERROR_RT_INTERNAL_ERROR;
    }
}
