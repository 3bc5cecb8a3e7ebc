/*
 * Helpers of test/ops950.c: device tensors of any emulated dtype filled from float32 host values, the
 * four ops' phase 1 + phase 2 in one call, and the dtype conversions (RNE) the expectations need.
 */
#ifndef ACLEMU_TEST_OPS950_H
#define ACLEMU_TEST_OPS950_H

#include "aclemu.h"
#include "cann_subset.h"
#include "check.h"
#include "fp16.h"
#include "phase2.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(expr, status) EXPECT_STATUS(expr, status)

static aclrtStream stream;

static size_t esize(int32_t dt) { return dt == ACL_FLOAT ? 4 : 2; }

/* A contiguous device tensor (format tag as given) filled from float32 host values. */
typedef struct {
    void *dev;
    size_t n;
    int32_t dtype;
    aclTensor *t;
} dten;

static dten make(const int64_t *dims, int nd, aclFormat fmt, int32_t dtype, const float *host)
{
    dten d = {.dtype = dtype};
    int64_t st[8], n = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = n;
        n *= dims[i];
    }
    d.n = (size_t)n;
    size_t bytes = (size_t)n * esize(dtype);
    EXPECT(aclrtMalloc(&d.dev, bytes > 0 ? bytes : 32, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    if (host != NULL && n > 0) {
        unsigned char *buf = malloc(bytes);
        for (size_t i = 0; buf != NULL && i < d.n; i++) {
            uint16_t h = dtype == ACL_FLOAT16 ? to_half(host[i]) : to_bf16(host[i]);
            memcpy(buf + i * esize(dtype), dtype == ACL_FLOAT ? (const void *)&host[i] : &h, esize(dtype));
        }
        CHECK(buf != NULL);
        EXPECT(aclrtMemcpy(d.dev, bytes, buf, bytes, ACL_MEMCPY_HOST_TO_DEVICE), 0);
        free(buf);
    }
    d.t = aclCreateTensor(dims, (uint64_t)nd, (aclDataType)dtype, st, 0, fmt, &n, 1, d.dev);
    return d;
}

static void drop(dten *d)
{
    EXPECT(aclDestroyTensor(d->t), 0);
    EXPECT(aclrtFree(d->dev), 0);
}

/* The result: float values in res (may be NULL) and raw bytes in raw (may be NULL). */
static void fetch(const dten *d, float *res, void *raw)
{
    size_t bytes = d->n * esize(d->dtype);
    unsigned char *tmp = malloc(bytes > 0 ? bytes : 1);
    if (tmp == NULL) {
        CHECK(!"out of host memory");
        return;
    }
    EXPECT(aclrtMemcpy(tmp, bytes, d->dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    if (raw != NULL) {
        memcpy(raw, tmp, bytes);
    }
    for (size_t i = 0; res != NULL && i < d->n; i++) {
        uint16_t h;
        memcpy(&h, tmp + i * 2, 2);
        if (d->dtype == ACL_FLOAT) {
            memcpy(&res[i], tmp + i * 4, 4);
        } else {
            res[i] = d->dtype == ACL_FLOAT16 ? from_half(h) : from_bf16(h);
        }
    }
    free(tmp);
}

static int run2(phase2_fn fn, uint64_t ws, aclOpExecutor *ex) { return run_phase2_on(stream, fn, ws, ex); }

/* One call of an op. Shapes: `in` and `out` are the spatial sizes (1d: W only). */
typedef struct {
    int op; /* 1: nearest 1d, 2: nearest 2d, 3: bilinear V1, 4: bilinear V2 */
    int64_t N, C, in[2], out[2];
    aclFormat fmt, out_fmt; /* out_fmt 0: the same as fmt */
    int32_t gdt, odt; /* odt used when odt_set (ACL_FLOAT is 0) */
    int odt_set;
    int align;
    double sh, sw;
    const float *g;
    float *res;  /* result values (may be NULL) */
    void *raw;   /* result bytes (may be NULL) */
    uint64_t ws; /* phase 1's workspace size */
    int phase1_only_rc;
    const float *out_init; /* out's contents before the call (NULL: left as allocated) */
} call;

static int op_call(call *c)
{
    const int nhwc = c->fmt == ACL_FORMAT_NHWC, one = c->op == 1;
    int64_t gd[4], od[4], is[4], os[2];
    int nd = one ? 3 : 4;
    if (one) {
        int64_t a[3] = {c->N, c->C, c->out[1]}, b[3] = {c->N, c->C, c->in[1]};
        memcpy(gd, a, sizeof a);
        memcpy(od, b, sizeof b);
        memcpy(is, b, sizeof b);
        os[0] = c->out[1];
    } else if (nhwc) {
        int64_t a[4] = {c->N, c->out[0], c->out[1], c->C}, b[4] = {c->N, c->in[0], c->in[1], c->C};
        memcpy(gd, a, sizeof a);
        memcpy(od, b, sizeof b);
        memcpy(is, b, sizeof b);
        os[0] = c->out[0], os[1] = c->out[1];
    } else {
        int64_t a[4] = {c->N, c->C, c->out[0], c->out[1]}, b[4] = {c->N, c->C, c->in[0], c->in[1]};
        memcpy(gd, a, sizeof a);
        memcpy(od, b, sizeof b);
        memcpy(is, b, sizeof b);
        os[0] = c->out[0], os[1] = c->out[1];
    }
    dten go = make(gd, nd, c->fmt, c->gdt, c->g);
    dten o = make(od, nd, c->out_fmt ? c->out_fmt : c->fmt, c->odt_set ? c->odt : c->gdt, c->out_init);
    aclIntArray *osa = aclCreateIntArray(os, one ? 1 : 2), *isa = aclCreateIntArray(is, (uint64_t)nd);
    aclOpExecutor *ex = NULL;
    int rc;
    phase2_fn p2;
    switch (c->op) {
    case 1:
        rc = aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(go.t, osa, isa, c->sw, o.t, &c->ws, &ex);
        p2 = aclnnUpsampleNearestExact1dBackward;
        break;
    case 2:
        rc = aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, osa, isa, c->sh, c->sw, o.t, &c->ws, &ex);
        p2 = aclnnUpsampleNearestExact2dBackward;
        break;
    case 3:
        rc = aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go.t, osa, isa, c->align, c->sh, c->sw, o.t, &c->ws,
                                                             &ex);
        p2 = aclnnUpsampleBilinear2dBackward;
        break;
    default:
        rc = aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, osa, isa, c->align, c->sh, c->sw, o.t,
                                                               &c->ws, &ex);
        p2 = aclnnUpsampleBilinear2dBackwardV2;
        break;
    }
    if (rc == 0 && c->phase1_only_rc) {
        EXPECT(aclDestroyAclOpExecutor(ex), 0);
    } else if (rc == 0) {
        rc = run2(p2, c->ws, ex);
        if (rc == 0) {
            fetch(&o, c->res, c->raw);
        }
    }
    drop(&go);
    drop(&o);
    aclDestroyIntArray(osa);
    aclDestroyIntArray(isa);
    return rc;
}

#endif
