/*
 * aclnnCast, the math operator of hicann/ops-math (math/cast/op_host/op_api/aclnn_cast.{h,cpp}):
 * Contiguous(self), the Cast kernel to `dtype`, ViewCopy into out, emulated as one launch counted as the
 * kernel "Cast". Exported by libopapi.so (ops-math's library), so in build/split by the core
 * libopapi.so and not by libopapi_cv.so: this file links with check.c, launch.c and soc.c only (its
 * executor runs cast_run, not the upsample kernels' dispatcher).
 *
 * Phase 1, in aclnn_cast.cpp's order (CheckParams): self and out NULL (161001; workspaceSize and
 * executor too), dead handles (161002), dtypes (CheckDtypeValid: self's, then the dtype argument; out's
 * here as well), shapes (CheckShape, OP_CHECK_SHAPE_NOT_EQUAL: out's view shape equal to self's), then
 * `dtype` equal to out's dtype (the cast result's dtype must be out's for the ViewCopy; the emulation
 * requires it at phase 1, 161002). An empty self then succeeds with workspace 0 and nothing launched
 * (self->IsEmpty(), before any view is read); otherwise both views (any strides, offset in elements)
 * must stay inside their allocations. Workspace 0 (the emulation's Contiguous and ViewCopy need none).
 * Dtypes: FLOAT, FLOAT16, BF16 for self and out (the source's lists are longer; on SoCs other than
 * 910B / 910_93 / 950 its list has no BF16: not modelled, every SoC accepts BF16 here); another dtype
 * is refused as not emulated (161002, naming it). The op runs on every SoC (no arch check).
 *
 * The kernel: element f of self (row-major over its view dims) goes to element f of out. 16-bit to
 * float32 is exact; float32 (and a 16-bit type to the other one, through an exact float32) to
 * float16 / bfloat16 rounds to nearest even (dtype.h emu_store, the rounding the upsample kernels use
 * when they cast their float32 result back; NaN canonical); the same dtype is a bit copy. Every
 * element is read before any is written, so an out aliasing self gets the values self had.
 */
#include "dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const emu_op_spec spec_cast = {
    .api = "aclnnCastGetWorkspaceSize",
    .op_name = "aclnnCast",
    .op = 0,
};

static int cast_dtype_ok(int32_t d) { return d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16; }

/* The launch on the stream worker: all of self converted into a staging buffer, then stored into out. */
static int cast_run(const void *params, void *workspace, char *msg, size_t msglen)
{
    (void)workspace;
    const emu_op_params *p = params;
    if (p->fault != NULL) {
        snprintf(msg, msglen, "%s", p->fault);
        return ACL_ERROR_RT_AICORE_EXCEPTION;
    }
    const emu_view *s = &p->go, *o = &p->out;
    const size_t ei = emu_dtype_size(s->dtype), eo = emu_dtype_size(o->dtype);
    const int64_t n = s->numel;
    unsigned char *tmp = malloc((size_t)(n > 0 ? n : 1) * eo);
    if (tmp == NULL) {
        snprintf(msg, msglen, "out of host memory for the Cast kernel's staging buffer");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    for (int64_t f = 0; f < n; f++) {
        int64_t si = emu_view_flat_index(s, f);
        if (s->dtype == o->dtype) { /* the same dtype: the bits as they are */
            memcpy(tmp + (size_t)f * eo, s->data + si * (int64_t)ei, ei);
        } else {
            emu_store(tmp, o->dtype, f, emu_load(s->data, s->dtype, si));
        }
    }
    for (int64_t f = 0; f < n; f++) {
        memcpy(o->data + emu_view_flat_index(o, f) * (int64_t)eo, tmp + (size_t)f * eo, eo);
    }
    free(tmp);
    return 0;
}

static aclnnStatus cast_executor(const emu_op_params *p, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    aclOpExecutor *e = aclemu_executor_create(spec_cast.op_name, cast_run, p, sizeof *p, 0);
    if (e == NULL) {
        EMU_FAIL(ACLNN_ERR_INNER, "%s: out of host memory creating the executor", spec_cast.api);
    }
    *workspaceSize = 0;
    *executor = e;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const emu_op_spec *sp = &spec_cast;
    const char *nul = self == NULL ? "self" : out == NULL ? "out" : workspaceSize == NULL ? "workspaceSize"
                      : executor == NULL ? "executor" : NULL;
    if (nul != NULL) {
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", sp->api, nul);
    }
    const char *dead = !aclemu_tensor_live(self) ? "self" : !aclemu_tensor_live(out) ? "out" : NULL;
    if (dead != NULL) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s is not a live aclTensor (destroyed, or never created)", sp->api,
                 dead);
    }
    const int32_t dt = (int32_t)dtype;
    const char *bad = !cast_dtype_ok(self->dtype) ? "self dtype" : !cast_dtype_ok(dt) ? "the param dtype"
                      : !cast_dtype_ok(out->dtype) ? "out dtype" : NULL;
    if (bad != NULL) {
        int32_t d = !cast_dtype_ok(self->dtype) ? self->dtype : !cast_dtype_ok(dt) ? dt : out->dtype;
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s %s (%d) is not supported; the emulation implements FLOAT, FLOAT16, "
                 "BF16", sp->api, bad, emu_dtype_name(d), d);
    }
    int same = self->ndim == out->ndim;
    for (uint64_t i = 0; same && i < self->ndim; i++) {
        same = self->dims[i] == out->dims[i];
    }
    if (!same) {
        char x[200], y[200];
        emu_shape_str(x, sizeof x, out->dims, out->ndim);
        emu_shape_str(y, sizeof y, self->dims, self->ndim);
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Shape of out and self should be equal, but the shape of out is %s, the "
                 "shape of self is %s", sp->api, x, y);
    }
    if (dt != out->dtype) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the param dtype %s must equal out's dtype %s", sp->api,
                 emu_dtype_name(dt), emu_dtype_name(out->dtype));
    }
    emu_op_params p = {.kernel = EMU_KERNEL_CAST, .kname = "Cast"};
    if (emu_numel(self) == 0) { /* self->IsEmpty(): an empty result, nothing launched, no view read */
        p.kernel = EMU_KERNEL_NONE;
        return cast_executor(&p, workspaceSize, executor);
    }
    aclnnStatus rc = emu_check_view(sp, "self", self, 2, 0, &p.go);
    if (rc != ACLNN_SUCCESS || (rc = emu_check_view(sp, "out", out, 2, 0, &p.out)) != ACLNN_SUCCESS) {
        return rc;
    }
    return cast_executor(&p, workspaceSize, executor);
}

aclnnStatus aclnnCast(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return emu_launch("aclnnCast", workspace, workspaceSize, executor, stream);
}
