/*
 * Phase-1 validation shared by every op: handles, dtypes, view ranges. Each op's own rules (and their
 * order, which decides which error a caller sees) live in its source: nearest_exact.c, bilinear.c,
 * cast.c. The parameter block and the executor of the upsample ops: finish.c (kept apart, so that
 * these helpers link without the kernels: build/split's core libopapi.so holds only cast.c and them).
 */
#include "dtype.h"

#include <stdio.h>
#include <string.h>

const char *emu_dtype_name(int32_t d)
{
    switch (d) {
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_BF16: return "BF16";
    case ACL_DOUBLE: return "DOUBLE";
    case ACL_INT32: return "INT32";
    case ACL_INT64: return "INT64";
    case ACL_INT8: return "INT8";
    case ACL_UINT8: return "UINT8";
    case ACL_INT16: return "INT16";
    case ACL_UINT16: return "UINT16";
    case ACL_UINT32: return "UINT32";
    case ACL_UINT64: return "UINT64";
    case ACL_BOOL: return "BOOL";
    default: return "unsupported";
    }
}

const char *emu_format_name(int32_t f)
{
    switch (f) {
    case ACL_FORMAT_NCHW: return "NCHW";
    case ACL_FORMAT_NHWC: return "NHWC";
    case ACL_FORMAT_ND: return "ND";
    case ACL_FORMAT_NCL: return "NCL";
    case ACL_FORMAT_NCDHW: return "NCDHW";
    case ACL_FORMAT_NC1HWC0: return "NC1HWC0";
    default: return "unknown";
    }
}

void emu_shape_str(char *buf, size_t n, const int64_t *v, uint64_t k)
{
    size_t used = (size_t)snprintf(buf, n, "[");
    for (uint64_t i = 0; i < k && used < n; i++) {
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)v[i]);
    }
    if (used < n) {
        snprintf(buf + used, n - used, "]");
    }
}

int64_t emu_numel(const aclTensor *t)
{
    int64_t n = 1;
    for (uint64_t i = 0; i < t->ndim; i++) {
        n *= t->dims[i];
    }
    return n;
}

aclnnStatus emu_check_handles(const emu_op_spec *sp, const emu_args *a, uint64_t *workspaceSize,
                              aclOpExecutor **executor)
{
    const char *nul = a->go == NULL ? "gradOutput" : a->os == NULL ? "outputSize" : a->is == NULL ? "inputSize"
                      : a->out == NULL ? "out" : workspaceSize == NULL ? "workspaceSize"
                      : executor == NULL ? "executor" : NULL;
    if (nul != NULL) {
        EMU_FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", sp->api, nul);
    }
    const char *dead = !aclemu_tensor_live(a->go) ? "gradOutput is not a live aclTensor"
                       : !aclemu_intarray_live(a->os) ? "outputSize is not a live aclIntArray"
                       : !aclemu_intarray_live(a->is) ? "inputSize is not a live aclIntArray"
                       : !aclemu_tensor_live(a->out) ? "out is not a live aclTensor" : NULL;
    if (dead != NULL) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s (destroyed, or never created)", sp->api, dead);
    }
    return ACLNN_SUCCESS;
}

aclnnStatus emu_check_dtypes(const emu_op_spec *sp, const emu_args *a, int allow_bf16)
{
    const char *allowed = allow_bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16 (BF16 is not supported by this op on this SoC)";
    for (int i = 0; i < 2; i++) {
        int32_t d = i ? a->out->dtype : a->go->dtype;
        if (!(d == ACL_FLOAT || d == ACL_FLOAT16 || (d == ACL_BF16 && allow_bf16))) {
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s (%d) is not supported; expected %s", sp->api,
                     i ? "out" : "gradOutput", emu_dtype_name(d), d, allowed);
        }
    }
    if (a->go->dtype != a->out->dtype) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput dtype %s and out dtype %s must be the same", sp->api,
                 emu_dtype_name(a->go->dtype), emu_dtype_name(a->out->dtype));
    }
    return ACLNN_SUCCESS;
}

/*
 * The reachable element range of a view (offset + sum((dim - 1) * stride) over every dim, both signs)
 * must lie inside the live allocation containing the data pointer.
 */
aclnnStatus emu_check_view(const emu_op_spec *sp, const char *name, const aclTensor *t, int spatial,
                           int channels_last, emu_view *v)
{
    uintptr_t data = (uintptr_t)t->data;
    if (data % EMU_ALIGN != 0) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s data pointer %p is not %u-byte aligned", sp->api, name, t->data,
                 EMU_ALIGN);
    }
    int64_t lo = t->offset, hi = t->offset, numel = 1;
    for (uint64_t i = 0; i < t->ndim; i++) {
        int64_t ext;
        if (__builtin_mul_overflow(t->dims[i] > 0 ? t->dims[i] - 1 : 0, t->strides[i], &ext) ||
            __builtin_add_overflow(ext > 0 ? hi : lo, ext, ext > 0 ? &hi : &lo) ||
            __builtin_mul_overflow(numel, t->dims[i], &numel)) {
            EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s view (sizes, strides, offset) overflows int64", sp->api, name);
        }
    }
    /* (N, C, L) becomes (N, C, 1, L); (N, H, W, C) is read as (N, C, H, W) with permuted strides. */
    static const int nchw_of_nhwc[4] = {0, 3, 1, 2};
    const int rank_ok = t->ndim == (uint64_t)spatial + 2;
    for (int k = 0; k < 4; k++) {
        if (!rank_ok) { /* another rank: only the flat fields below describe it */
            v->sizes[k] = numel == 1 ? 1 : 0;
            v->strides[k] = 0;
        } else if (spatial == 1) {
            int src = k < 2 ? k : k == 2 ? -1 : 2;
            v->sizes[k] = src < 0 ? 1 : t->dims[src];
            v->strides[k] = src < 0 ? 0 : t->strides[src];
        } else {
            int src = channels_last ? nchw_of_nhwc[k] : k;
            v->sizes[k] = t->dims[src];
            v->strides[k] = t->strides[src];
        }
    }
    v->nd = (int)t->ndim;
    v->numel = numel;
    v->contiguous = emu_tensor_contiguous(t);
    for (int k = 0; k < (int)t->ndim; k++) {
        v->fdims[k] = t->dims[k];
        v->fstrides[k] = t->strides[k];
    }
    v->data = t->data;
    v->offset = t->offset;
    v->dtype = t->dtype;
    v->lo = NULL;
    v->bytes = 0;
    if (numel == 0) {
        return ACLNN_SUCCESS; /* nothing is read or written */
    }
    int64_t es = (int64_t)emu_dtype_size(t->dtype);
    uintptr_t base;
    uint64_t size;
    if (!aclemu_mem_find(t->data, &base, &size)) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s data pointer %p is not inside a live device allocation",
                 sp->api, name, t->data);
    }
    int64_t lo_b, hi_b;
    if (lo < 0 || __builtin_mul_overflow(lo, es, &lo_b) || __builtin_mul_overflow(hi + 1, es, &hi_b) ||
        (uint64_t)hi_b > base + size - data) {
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s view reaches elements [%lld, %lld] from its data pointer %p (offset %lld), outside its "
                 "device allocation [%p, +%llu bytes)",
                 sp->api, name, (long long)lo, (long long)hi, t->data, (long long)t->offset, (void *)base,
                 (unsigned long long)size);
    }
    v->lo = (const unsigned char *)t->data + lo_b;
    v->bytes = (uint64_t)(hi_b - lo_b);
    return ACLNN_SUCCESS;
}

int emu_tensor_contiguous(const aclTensor *t)
{
    int64_t want = 1;
    for (int k = (int)t->ndim - 1; k >= 0; k--) {
        if (t->dims[k] != 1 && t->strides[k] != want) {
            return 0;
        }
        want *= t->dims[k];
    }
    return 1;
}
