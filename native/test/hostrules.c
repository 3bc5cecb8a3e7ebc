/*
 * Phase-1 rules that follow the vendor host code (hicann/ops-cv) where an earlier emulation was
 * stricter, on A2 (run with ACLEMU_SOC unset): (a) nearest-exact never compares gradOutput with
 * outputSize or out with inputSize, (b) a nearest scale within 1e-6 of 1 on unequal sizes runs the
 * kernel with a skipped pass, (c) V2's NCHW kernel route takes an out of any shape / rank, (d) equal
 * sizes accept float64 / int32 for bilinear, (e) empty calls return before any check of out's rank.
 * The sources behind each are cited in src/opapi/{nearest_exact,bilinear,kernels}.c.
 */
#include "aclemu.h"
#include "cann_subset.h"
#include "check.h"
#include "phase2.h"

#include <stdio.h>
#include <string.h>

#define EXPECT(expr, status) EXPECT_STATUS(expr, status)

static aclrtStream stream;

typedef struct {
    void *dev;
    size_t bytes;
    aclTensor *t;
} dt;

/* A tensor of `nd` dims (strides NULL: contiguous) over a fresh allocation of `elems` elements of
 * `es` bytes, filled from host (NULL: left 0xFF). */
static dt mk(const int64_t *dims, int nd, const int64_t *strides, aclDataType dtype, size_t es, int64_t elems,
             aclFormat fmt, const void *host)
{
    dt d = {0};
    int64_t st[8], n = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = strides ? strides[i] : n;
        n *= dims[i];
    }
    d.bytes = (size_t)(elems > 0 ? elems : 1) * es;
    EXPECT(aclrtMalloc(&d.dev, d.bytes, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    if (host) {
        EXPECT(aclrtMemcpy(d.dev, d.bytes, host, d.bytes, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    }
    d.t = aclCreateTensor(dims, (uint64_t)nd, dtype, st, 0, fmt, &elems, 1, d.dev);
    return d;
}

static dt mkf(const int64_t *dims, int nd, int64_t elems, const float *host)
{
    return mk(dims, nd, NULL, ACL_FLOAT, 4, elems, ACL_FORMAT_NCHW, host);
}

static void drop(dt *d)
{
    EXPECT(aclDestroyTensor(d->t), 0);
    EXPECT(aclrtFree(d->dev), 0);
}

static void get(const dt *d, void *host)
{
    EXPECT(aclrtMemcpy(host, d->bytes, d->dev, d->bytes, ACL_MEMCPY_DEVICE_TO_HOST), 0);
}

static int run(phase2_fn p2, uint64_t ws, aclOpExecutor *ex) { return run_phase2_on(stream, p2, ws, ex); }

/* Nearest 2d of go into out with the given size arrays and scales: phase 1 status, or phase 2's. */
static int ne2d(dt *go, const int64_t *osz, const int64_t *isz, double sh, double sw, dt *out, int *phase)
{
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(isz, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int rc = aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go->t, os, is, sh, sw, out->t, &ws, &ex);
    *phase = 1;
    if (rc == 0) {
        *phase = 2;
        rc = run(aclnnUpsampleNearestExact2dBackward, ws, ex);
    }
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return rc;
}

static int v2(dt *go, const int64_t *osz, const int64_t *isz, double sh, double sw, dt *out, int *phase)
{
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(isz, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int rc = aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go->t, os, is, false, sh, sw, out->t, &ws, &ex);
    *phase = 1;
    if (rc == 0) {
        *phase = 2;
        rc = run(aclnnUpsampleBilinear2dBackwardV2, ws, ex);
    }
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return rc;
}

static int v1(dt *go, const int64_t *osz, const int64_t *isz, dt *out, int *phase)
{
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(isz, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int rc = aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go->t, os, is, false, 0, 0, out->t, &ws, &ex);
    *phase = 1;
    if (rc == 0) {
        *phase = 2;
        rc = run(aclnnUpsampleBilinear2dBackward, ws, ex);
    }
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return rc;
}

static float g16[16];

/* (a) nearest-exact: outputSize and inputSize[0..1] are never read; out of another shape. */
static void test_nearest_sizes(void)
{
    int ph;
    float r[8];
    int64_t god[4] = {1, 1, 4, 4}, isz[4] = {1, 1, 2, 2}, bad_os[2] = {9, 9}, bad_is[4] = {7, 3, 2, 2};
    dt go = mkf(god, 4, 16, g16);
    /* 4x4 -> 2x2, cells sum 2x2 blocks of g = 0..15: 10, 18, 42, 50 */
    int64_t od[4] = {1, 1, 2, 2};
    dt out = mkf(od, 4, 4, NULL);
    EXPECT(ne2d(&go, bad_os, bad_is, 0, 0, &out, &ph), 0);
    get(&out, r);
    CHECK(r[0] == 10.0f && r[1] == 18.0f && r[2] == 42.0f && r[3] == 50.0f);
    drop(&out);
    /* out (1, 1, 1, 4), contiguous: the 2x2 result in out's row-major order */
    int64_t flat[4] = {1, 1, 1, 4};
    out = mkf(flat, 4, 4, NULL);
    EXPECT(ne2d(&go, bad_os, isz, 0, 0, &out, &ph), 0);
    get(&out, r);
    CHECK(r[0] == 10.0f && r[1] == 18.0f && r[2] == 42.0f && r[3] == 50.0f);
    drop(&out);
    /* out (1, 1, 1, 2): phase 1 accepts, the kernel would write 4 elements into 2: phase 2 fails */
    int64_t small[4] = {1, 1, 1, 2};
    out = mkf(small, 4, 2, NULL);
    EXPECT(ne2d(&go, bad_os, isz, 0, 0, &out, &ph), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(ph == 2);
    drop(&out);
    /* out (1, 1, 1, 4) with stride 2 on W: another shape, not contiguous: phase 2 fails (not modelled) */
    int64_t strided[4] = {8, 8, 8, 2};
    out = mk(flat, 4, strided, ACL_FLOAT, 4, 8, ACL_FORMAT_NCHW, NULL);
    EXPECT(ne2d(&go, bad_os, isz, 0, 0, &out, &ph), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(ph == 2);
    drop(&out);
    drop(&go);
    /* 1d: out (1, 1, 3) for inputSize (5, 5, 2) and outputSize 7 with gradOutput (1, 1, 4): cells of 2 */
    int64_t god1[3] = {1, 1, 4}, od1[3] = {1, 1, 3}, is1[3] = {5, 5, 2}, os1 = 7;
    dt go1 = mk(god1, 3, NULL, ACL_FLOAT, 4, 4, ACL_FORMAT_NCL, g16);
    float keep[3] = {-1.0f, -1.0f, -1.0f};
    dt out1 = mk(od1, 3, NULL, ACL_FLOAT, 4, 3, ACL_FORMAT_NCL, keep);
    aclIntArray *os = aclCreateIntArray(&os1, 1), *is = aclCreateIntArray(is1, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    EXPECT(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(go1.t, os, is, 0, out1.t, &ws, &ex), 0);
    EXPECT(run(aclnnUpsampleNearestExact1dBackward, ws, ex), 0);
    get(&out1, r);
    CHECK(r[0] == 1.0f && r[1] == 5.0f && r[2] == -1.0f); /* the third element is not written */
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    drop(&go1);
    drop(&out1);
}

/* (b) a scale within 1e-6 of 1 on unequal sizes: the kernel skips that pass (Process, FloatEqual). */
static void test_nearest_skips(void)
{
    int ph;
    float r[16];
    const float m1[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    /* H skipped, outH 2 < inH 4: the W pass writes gradOutput rows 0, 1 to result rows 0, 1 (W 4 -> 2:
     * pairs summed); rows 2, 3 are not written */
    int64_t god[4] = {1, 1, 2, 4}, od[4] = {1, 1, 4, 2}, osz[2] = {2, 4};
    dt go = mkf(god, 4, 8, g16), out = mkf(od, 4, 8, m1);
    EXPECT(ne2d(&go, osz, od, 1.0000001, 0, &out, &ph), 0);
    get(&out, r);
    CHECK(r[0] == 1.0f && r[1] == 5.0f && r[2] == 9.0f && r[3] == 13.0f && r[4] == -1.0f && r[7] == -1.0f);
    drop(&go);
    drop(&out);
    /* H skipped, outH 4 > inH 2: 4 rows into a 2-row result: out-of-bounds write, phase 2 fails */
    int64_t god2[4] = {1, 1, 4, 4}, od2[4] = {1, 1, 2, 2}, osz2[2] = {4, 4};
    go = mkf(god2, 4, 16, g16);
    out = mkf(od2, 4, 4, NULL);
    EXPECT(ne2d(&go, osz2, od2, 1.0000001, 0, &out, &ph), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(ph == 2);
    drop(&go);
    drop(&out);
    /* W skipped (and H: 2 / 2), inW 2 < outW 4: the H pass reads gradOutput rows with stride 2:
     * cell row y reads elements 2y, 2y + 1 -> 0, 1, 2, 3 */
    int64_t god3[4] = {1, 1, 2, 4}, od3[4] = {1, 1, 2, 2}, osz3[2] = {2, 4};
    go = mkf(god3, 4, 8, g16);
    out = mkf(od3, 4, 4, NULL);
    EXPECT(ne2d(&go, osz3, od3, 0, 1.0000001, &out, &ph), 0);
    get(&out, r);
    CHECK(r[0] == 0.0f && r[1] == 1.0f && r[2] == 2.0f && r[3] == 3.0f);
    drop(&go);
    drop(&out);
    /* W skipped, inW 4 > outW 2: the H pass would read 8 elements of a 4-element gradOutput */
    int64_t god4[4] = {1, 1, 2, 2}, od4[4] = {1, 1, 2, 4}, osz4[2] = {2, 2};
    go = mkf(god4, 4, 4, g16);
    out = mkf(od4, 4, 8, NULL);
    EXPECT(ne2d(&go, osz4, od4, 0, 1.0000001, &out, &ph), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(ph == 2);
    drop(&go);
    drop(&out);
}

/* (c) V2 on A2: the NCHW kernel route takes out of any shape; the other routes CheckReduceOutShape. */
static void test_v2_out_shape(void)
{
    int ph;
    float ref[4], r[9];
    int64_t god[4] = {1, 1, 4, 4}, isz[4] = {1, 1, 2, 2}, osz[2] = {4, 4};
    dt go = mkf(god, 4, 16, g16);
    dt out = mkf(isz, 4, 4, NULL);
    EXPECT(v2(&go, osz, isz, 0, 0, &out, &ph), 0);
    get(&out, ref);
    CHECK(aclemuLastKernel() && strcmp(aclemuLastKernel(), "UpsampleBilinear2dGrad") == 0);
    drop(&out);
    /* rank 3 (1, 1, 4): the same four values in row-major order */
    int64_t od3[3] = {1, 1, 4};
    out = mkf(od3, 3, 4, NULL);
    EXPECT(v2(&go, osz, isz, 0, 0, &out, &ph), 0);
    get(&out, r);
    CHECK(memcmp(r, ref, sizeof ref) == 0);
    drop(&out);
    /* rank 5 (1, 1, 2, 2, 1) */
    int64_t od5[5] = {1, 1, 2, 2, 1};
    out = mkf(od5, 5, 4, NULL);
    EXPECT(v2(&go, osz, isz, 0, 0, &out, &ph), 0);
    get(&out, r);
    CHECK(memcmp(r, ref, sizeof ref) == 0);
    drop(&out);
    /* (1, 1, 3, 3): the first four elements, the rest untouched */
    int64_t od9[4] = {1, 1, 3, 3};
    const float m9[9] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
    out = mkf(od9, 4, 9, m9);
    EXPECT(v2(&go, osz, isz, 0, 0, &out, &ph), 0);
    get(&out, r);
    CHECK(memcmp(r, ref, sizeof ref) == 0 && r[4] == -1.0f && r[8] == -1.0f);
    drop(&out);
    /* (1, 1, 1, 2): the kernel would write 4 elements into 2 */
    int64_t od2[4] = {1, 1, 1, 2};
    out = mkf(od2, 4, 2, NULL);
    EXPECT(v2(&go, osz, isz, 0, 0, &out, &ph), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(ph == 2);
    drop(&out);
    /* the fallback (scales out != floor(in * scale)): CheckReduceOutShape refuses another shape ... */
    out = mkf(od3, 3, 4, NULL);
    EXPECT(v2(&go, osz, isz, 3.0, 3.0, &out, &ph), ACLNN_ERR_PARAM_INVALID);
    CHECK(ph == 1);
    drop(&out);
    /* ... but takes two one-element shapes: inputSize (1, 1, 1, 1), out (1, 1) */
    int64_t is1[4] = {1, 1, 1, 1}, od1[2] = {1, 1};
    out = mkf(od1, 2, 1, NULL);
    EXPECT(v2(&go, osz, is1, 3.0, 3.0, &out, &ph), 0);
    get(&out, r);
    CHECK(r[0] == 120.0f); /* every gradient element reaches the single cell: 0 + ... + 15 */
    CHECK(aclemuLastKernel() && strncmp(aclemuLastKernel(), "ResizeBilinearV2Grad5HD", 23) == 0);
    drop(&out);
    drop(&go);
}

/* (d) float64 / int32 with equal sizes. */
static void test_dtypes(void)
{
    int ph;
    int64_t d4[4] = {1, 1, 2, 2}, osz[2] = {2, 2};
    const double gd[4] = {0.1, -2.0, 3.25, 1e30};
    double rd[4];
    dt go = mk(d4, 4, NULL, ACL_DOUBLE, 8, 4, ACL_FORMAT_NCHW, gd);
    dt out = mk(d4, 4, NULL, ACL_DOUBLE, 8, 4, ACL_FORMAT_NCHW, NULL);
    /* V2: Cast to float32, the kernel (both passes of scale 1: a copy), Cast back */
    EXPECT(v2(&go, osz, d4, 0, 0, &out, &ph), 0);
    get(&out, rd);
    CHECK(rd[0] == (double)0.1f && rd[1] == -2.0 && rd[2] == 3.25 && rd[3] == (double)(float)1e30);
    /* V1: ViewCopy, bit for bit */
    EXPECT(v1(&go, osz, d4, &out, &ph), 0);
    get(&out, rd);
    CHECK(memcmp(rd, gd, sizeof gd) == 0);
    CHECK(aclemuLastKernel() && strcmp(aclemuLastKernel(), "ViewCopy") == 0);
    /* nearest-exact: FLOAT, FLOAT16, BF16 only */
    EXPECT(ne2d(&go, osz, d4, 0, 0, &out, &ph), ACLNN_ERR_PARAM_INVALID);
    /* sizes that differ: the dtype list applies */
    int64_t i1[4] = {1, 1, 1, 1};
    dt o1 = mk(i1, 4, NULL, ACL_DOUBLE, 8, 1, ACL_FORMAT_NCHW, NULL);
    EXPECT(v2(&go, osz, i1, 0, 0, &o1, &ph), ACLNN_ERR_PARAM_INVALID);
    drop(&o1);
    drop(&go);
    drop(&out);
    const int32_t gi[4] = {7, -3, 16777217, 5};
    int32_t ri[4];
    go = mk(d4, 4, NULL, ACL_INT32, 4, 4, ACL_FORMAT_NCHW, gi);
    out = mk(d4, 4, NULL, ACL_INT32, 4, 4, ACL_FORMAT_NCHW, NULL);
    EXPECT(v2(&go, osz, d4, 0, 0, &out, &ph), 0);
    get(&out, ri);
    CHECK(ri[0] == 7 && ri[1] == -3 && ri[2] == 16777216 && ri[3] == 5); /* 2^24 + 1 -> float32 2^24 */
    EXPECT(v1(&go, osz, d4, &out, &ph), 0);
    get(&out, ri);
    CHECK(memcmp(ri, gi, sizeof gi) == 0);
    drop(&go);
    drop(&out);
    /* INT64 passes the host checks too, but is not emulated */
    const int64_t gl[4] = {1, 2, 3, 4};
    go = mk(d4, 4, NULL, ACL_INT64, 8, 4, ACL_FORMAT_NCHW, gl);
    out = mk(d4, 4, NULL, ACL_INT64, 8, 4, ACL_FORMAT_NCHW, NULL);
    EXPECT(v2(&go, osz, d4, 0, 0, &out, &ph), ACLNN_ERR_PARAM_INVALID);
    drop(&go);
    drop(&out);
}

/* (e) empty calls: success before any rank check of out. */
static void test_empty_rank(void)
{
    int ph;
    int64_t god[4] = {0, 2, 4, 4}, isz[4] = {0, 2, 2, 2}, osz[2] = {4, 4}, od5[5] = {0, 2, 2, 2, 1};
    dt go = mkf(god, 4, 0, NULL), out = mkf(od5, 5, 0, NULL);
    int64_t launches = aclemuLaunchCount();
    EXPECT(v2(&go, osz, isz, 0, 0, &out, &ph), 0);
    EXPECT(v1(&go, osz, isz, &out, &ph), 0); /* V1's CheckShape compares out's first four dims only */
    EXPECT(ne2d(&go, osz, isz, 0, 0, &out, &ph), 0);
    CHECK(aclemuLaunchCount() == launches);
    drop(&go);
    drop(&out);
}

int main(void)
{
    for (int i = 0; i < 16; i++) g16[i] = (float)i;
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    test_nearest_sizes();
    test_nearest_skips();
    test_v2_out_shape();
    test_dtypes();
    test_empty_rank();
    EXPECT(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    return check_report("hostrules");
}
