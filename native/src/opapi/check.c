/*
 * Phase 1 shared by every op: the aclnn argument validation (161001 / 161002 with a message that
 * names the API, the argument, the value and the rule), then the parameter block and executor.
 */
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FAIL(status, ...)                  \
    do {                                   \
        aclemu_set_error(__VA_ARGS__);     \
        return (status);                   \
    } while (0)

static const char *dtype_name(int32_t d)
{
    switch (d) {
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_BF16: return "BF16";
    case ACL_DOUBLE: return "DOUBLE";
    case ACL_INT32: return "INT32";
    case ACL_INT64: return "INT64";
    default: return "unsupported";
    }
}

static const char *format_name(int32_t f)
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

static void shape_str(char *buf, size_t n, const int64_t *v, uint64_t k)
{
    size_t used = (size_t)snprintf(buf, n, "[");
    for (uint64_t i = 0; i < k && used < n; i++) {
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)v[i]);
    }
    if (used < n) {
        snprintf(buf + used, n - used, "]");
    }
}

static int dtype_ok(const emu_op_spec *sp, int32_t d)
{
    return d == ACL_FLOAT || d == ACL_FLOAT16 || (d == ACL_BF16 && sp->allow_bf16);
}

/*
 * The reachable element range of a view (offset + sum((dim - 1) * stride) over every dim, both signs)
 * must lie inside the live allocation containing the data pointer. Fills v (as a 4-D view).
 */
static aclnnStatus check_view(const emu_op_spec *sp, const char *name, const aclTensor *t, emu_view *v)
{
    uintptr_t data = (uintptr_t)t->data;
    if (data % EMU_ALIGN != 0) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s data pointer %p is not %u-byte aligned", sp->api, name, t->data,
             EMU_ALIGN);
    }
    int64_t lo = t->offset, hi = t->offset, numel = 1;
    for (uint64_t i = 0; i < t->ndim; i++) {
        int64_t ext;
        if (__builtin_mul_overflow(t->dims[i] > 0 ? t->dims[i] - 1 : 0, t->strides[i], &ext) ||
            __builtin_add_overflow(ext > 0 ? hi : lo, ext, ext > 0 ? &hi : &lo) ||
            __builtin_mul_overflow(numel, t->dims[i], &numel)) {
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s view (sizes, strides, offset) overflows int64", sp->api, name);
        }
    }
    /* Always 4-D for the kernels: a 1-D op's (N, C, L) becomes (N, C, 1, L). */
    int k = 0;
    for (uint64_t i = 0; i < t->ndim; i++) {
        if (sp->spatial == 1 && i == 2) {
            v->sizes[k] = 1;
            v->strides[k++] = 0;
        }
        v->sizes[k] = t->dims[i];
        v->strides[k++] = t->strides[i];
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
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s data pointer %p is not inside a live device allocation", sp->api,
             name, t->data);
    }
    int64_t lo_b, hi_b;
    if (lo < 0 || __builtin_mul_overflow(lo, es, &lo_b) || __builtin_mul_overflow(hi + 1, es, &hi_b) ||
        (uint64_t)hi_b > base + size - data) {
        FAIL(ACLNN_ERR_PARAM_INVALID,
             "%s: %s view reaches elements [%lld, %lld] from its data pointer %p (offset %lld), outside its "
             "device allocation [%p, +%llu bytes)",
             sp->api, name, (long long)lo, (long long)hi, t->data, (long long)t->offset, (void *)base,
             (unsigned long long)size);
    }
    v->lo = (const unsigned char *)t->data + lo_b;
    v->bytes = (uint64_t)(hi_b - lo_b);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_sizes(const emu_op_spec *sp, const aclTensor *go, const aclIntArray *os,
                               const aclIntArray *is, const aclTensor *out)
{
    uint64_t rank = (uint64_t)sp->spatial + 2;
    char a[160], b[160];
    if (go->ndim != rank) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput must be %lluD, got %lluD", sp->api,
             (unsigned long long)rank, (unsigned long long)go->ndim);
    }
    if (out->ndim != rank) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out must be %lluD, got %lluD", sp->api, (unsigned long long)rank,
             (unsigned long long)out->ndim);
    }
    if (os->size != (uint64_t)sp->spatial) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: It is expected output_size equals to %d, but got size %llu", sp->api,
             sp->spatial, (unsigned long long)os->size);
    }
    if (is->size != rank) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: It is expected input_size equals to %llu, but got size %llu", sp->api,
             (unsigned long long)rank, (unsigned long long)is->size);
    }
    for (uint64_t i = 0; i < rank; i++) {
        int spatial = i >= 2;
        if (is->values[i] < (spatial ? 1 : 0) || (spatial && os->values[i - 2] < 1)) {
            shape_str(a, sizeof a, is->values, is->size);
            shape_str(b, sizeof b, os->values, os->size);
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Input and output sizes should be greater than 0 (N and C at least 0), but got inputSize %s "
                 "outputSize %s",
                 sp->api, a, b);
        }
    }
    for (uint64_t i = 0; i < rank; i++) {
        int64_t want = i < 2 ? is->values[i] : os->values[i - 2];
        if (go->dims[i] != want) {
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: Expected grad_output to have the same shape as output; output.size(%llu) = %lld but got "
                 "grad_output.size(%llu) = %lld",
                 sp->api, (unsigned long long)i, (long long)want, (unsigned long long)i, (long long)go->dims[i]);
        }
        if (out->dims[i] != is->values[i]) {
            shape_str(a, sizeof a, out->dims, out->ndim);
            shape_str(b, sizeof b, is->values, is->size);
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out shape %s must equal inputSize %s", sp->api, a, b);
        }
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus check_scales(const emu_op_spec *sp, const aclIntArray *os, const aclIntArray *is,
                                const double *scales)
{
    static const char *const names2[] = {"scalesH", "scalesW"};
    for (int d = 0; d < sp->spatial; d++) {
        const char *nm = sp->spatial == 1 ? "scales" : names2[d];
        double s = scales[d];
        int64_t in = is->values[2 + d], o = os->values[d];
        if (!(s >= 0)) {
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s = %g is invalid: scales must be >= 0 (0 means not given)",
                 sp->api, nm, s);
        }
        if (sp->op != EMU_OP_NEAREST_EXACT) {
            continue; /* bilinear derives the scale from the sizes when they disagree */
        }
        /* CANN's real scale is 1/scale (or in/out); below 0.02 the op refuses (over 50x per dim). */
        double real = s > 0 ? 1.0 / s : (double)in / (double)o;
        if (real < 0.02) {
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s too large: inputSize %lld -> outputSize %lld is over the 50x limit (%s = %g must be "
                 ">= 0.02)",
                 sp->api, nm, (long long)in, (long long)o, s > 0 ? "1/scale" : "inputSize/outputSize", real);
        }
        if (s > 0 && floor((double)in * s) != (double)o) {
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s = %.17g given, so outputSize must be floor(inputSize * %s) = floor(%lld * %.17g) = %.17g, "
                 "got %lld",
                 sp->api, nm, s, nm, (long long)in, s, floor((double)in * s), (long long)o);
        }
    }
    return ACLNN_SUCCESS;
}

/* The float32 scale each kernel uses along one dimension (see semantics.md). */
static float kernel_scale(const emu_op_spec *sp, int align, int64_t in, int64_t o, double s)
{
    if (sp->op == EMU_OP_BILINEAR) {
        if (align) {
            return o > 1 ? (float)(in - 1) / (float)(o - 1) : 0.0f;
        }
        int use = sp->v2_scales && s > 0 && floor((double)in * s) == (double)o;
        return use ? (float)(1.0 / s) : (float)in / (float)o;
    }
    return s > 0 ? (float)(1.0 / s) : (float)in / (float)o;
}

aclnnStatus emu_prepare(const emu_op_spec *sp, const aclTensor *go, const aclIntArray *os, const aclIntArray *is,
                        const double *scales, int align, aclTensor *out, uint64_t *workspaceSize,
                        aclOpExecutor **executor)
{
    const char *nul = go == NULL ? "gradOutput" : os == NULL ? "outputSize" : is == NULL ? "inputSize"
                      : out == NULL ? "out" : workspaceSize == NULL ? "workspaceSize"
                      : executor == NULL ? "executor" : NULL;
    if (nul != NULL) {
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", sp->api, nul);
    }
    const char *dead = !aclemu_tensor_live(go) ? "gradOutput is not a live aclTensor"
                       : !aclemu_intarray_live(os) ? "outputSize is not a live aclIntArray"
                       : !aclemu_intarray_live(is) ? "inputSize is not a live aclIntArray"
                       : !aclemu_tensor_live(out) ? "out is not a live aclTensor" : NULL;
    if (dead != NULL) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s (destroyed, or never created)", sp->api, dead);
    }
    const char *allowed = sp->allow_bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16 (BF16 needs Ascend 950)";
    if (!dtype_ok(sp, go->dtype)) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput dtype %s (%d) is not supported; expected %s", sp->api,
             dtype_name(go->dtype), go->dtype, allowed);
    }
    if (!dtype_ok(sp, out->dtype)) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out dtype %s (%d) is not supported; expected %s", sp->api,
             dtype_name(out->dtype), out->dtype, allowed);
    }
    if (go->dtype != out->dtype) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput dtype %s and out dtype %s must be the same", sp->api,
             dtype_name(go->dtype), dtype_name(out->dtype));
    }
    aclnnStatus rc = check_sizes(sp, go, os, is, out);
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    for (int i = 0; i < 2; i++) {
        const aclTensor *t = i ? out : go;
        if (t->format < 0 || t->format >= 64 || !(sp->formats & (1ull << t->format))) {
            char acc[64] = "";
            static const int32_t known[] = {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_ND, ACL_FORMAT_NCL};
            for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
                if (sp->formats & (1ull << known[k])) {
                    snprintf(acc + strlen(acc), sizeof acc - strlen(acc), "%s%s", acc[0] ? ", " : "",
                             format_name(known[k]));
                }
            }
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s format %s (%d) is not supported; expected %s", sp->api,
                 i ? "out" : "gradOutput", format_name(t->format), t->format, acc);
        }
    }
    if (sp->op == EMU_OP_NEAREST_EXACT && go->format != out->format) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: Format of input and output should be equal, gradOutput [%s], out [%s]",
             sp->api, format_name(go->format), format_name(out->format));
    }
    rc = check_scales(sp, os, is, scales);
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    emu_op_params p = {.op = sp->op, .align_corners = align};
    rc = check_view(sp, "gradOutput", go, &p.go);
    if (rc == ACLNN_SUCCESS) {
        rc = check_view(sp, "out", out, &p.out);
    }
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    p.N = p.out.sizes[0];
    p.C = p.out.sizes[1];
    p.inH = p.out.sizes[2];
    p.inW = p.out.sizes[3];
    p.outH = p.go.sizes[2];
    p.outW = p.go.sizes[3];
    /* 1-D: the inserted H dimension maps 1 -> 1 with scale 1 (src(0) = 0). */
    p.sH = sp->spatial == 1 ? 1.0f : kernel_scale(sp, align, p.inH, p.outH, scales[0]);
    p.sW = kernel_scale(sp, align, p.inW, p.outW, scales[sp->spatial - 1]);
    p.ws_size = sp->op == EMU_OP_NEAREST_EXACT ? emu_nearest_exact_workspace(sp->spatial, p.outH, p.outW) : 0;
    emu_run_fn run = sp->op == EMU_OP_NEAREST_EXACT ? emu_nearest_exact_run : emu_bilinear_run;
    aclOpExecutor *e = aclemu_executor_create(sp->op_name, run, &p, sizeof p, p.ws_size);
    if (e == NULL) {
        FAIL(ACLNN_ERR_INNER, "%s: out of host memory creating the executor", sp->api);
    }
    *workspaceSize = p.ws_size;
    *executor = e;
    return ACLNN_SUCCESS;
}
