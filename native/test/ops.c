/*
 * The device rules of the emulated operators (see the sources in src/opapi/ for the ops-cv sources of each):
 * nearest-exact tie mapping, the skipped passes, bilinear V1/V2 routing and equal sizes, empty
 * tensors, format rules and channels-last compute, and the torch-map and split variant libDirs.
 * Usage: ops <build dir>. Expected values are worked out by hand in the comments.
 */
#include "aclemu.h"
#include "cann_subset.h"
#include "check.h"
#include "phase2.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define EXPECT(expr, status) EXPECT_STATUS(expr, status)

static aclrtStream stream;

typedef aclnnStatus (*phase1_1d)(const aclTensor *, const aclIntArray *, const aclIntArray *, double, aclTensor *,
                                 uint64_t *, aclOpExecutor **);
typedef aclnnStatus (*phase1_2d)(const aclTensor *, const aclIntArray *, const aclIntArray *, double, double,
                                 aclTensor *, uint64_t *, aclOpExecutor **);
typedef aclnnStatus (*phase1_bl)(const aclTensor *, const aclIntArray *, const aclIntArray *, bool, double, double,
                                 aclTensor *, uint64_t *, aclOpExecutor **);

/* A contiguous float32 device tensor with dims as given (format tag as given), filled from host. */
typedef struct {
    void *dev;
    size_t n;
    aclTensor *t;
} dt;

static dt make(const int64_t *dims, int nd, aclFormat fmt, const float *host)
{
    dt d = {0};
    int64_t st[8], n = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = n;
        n *= dims[i];
    }
    d.n = (size_t)n;
    EXPECT(aclrtMalloc(&d.dev, n > 0 ? (size_t)n * 4 : 32, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    if (host && n > 0) {
        EXPECT(aclrtMemcpy(d.dev, (size_t)n * 4, host, (size_t)n * 4, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    }
    d.t = aclCreateTensor(dims, (uint64_t)nd, ACL_FLOAT, st, 0, fmt, &n, 1, d.dev);
    return d;
}

static void drop(dt *d)
{
    EXPECT(aclDestroyTensor(d->t), 0);
    EXPECT(aclrtFree(d->dev), 0);
}

/* Runs phase 2 (workspace allocated when asked for), synchronizes, reads out into res. */
static int run(phase2_fn fn, uint64_t ws, aclOpExecutor *ex, dt *out, float *res)
{
    int rc = run_phase2_on(stream, fn, ws, ex);
    if (rc == 0 && res) {
        EXPECT(aclrtMemcpy(res, out->n * 4, out->dev, out->n * 4, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    }
    return rc;
}

/* Nearest-exact 1d of g (length out) into in cells with the given library's functions. */
static int nearest1d(phase1_1d p1, phase2_fn p2, int64_t in, int64_t out, double scale, const float *g, float *res)
{
    int64_t god[3] = {1, 1, out}, ind[3] = {1, 1, in};
    dt go = make(god, 3, ACL_FORMAT_NCL, g), o = make(ind, 3, ACL_FORMAT_NCL, NULL);
    aclIntArray *os = aclCreateIntArray(&out, 1), *is = aclCreateIntArray(ind, 3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int rc = p1(go.t, os, is, scale, o.t, &ws, &ex);
    if (rc == 0) {
        rc = run(p2, ws, ex, &o, res);
    }
    drop(&go);
    drop(&o);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return rc;
}

static void test_nearest_ties(void)
{
    /* in = 2, out = 41, g[o] = o + 1: the device's cell 1 starts at ceil(fl32(20.5) - 0.5) = 20, so
     * cell 0 = 1 + ... + 20 = 210 and cell 1 = 21 + ... + 41 = 651 (PyTorch: 231 and 630). */
    float g[41], r[27];
    for (int i = 0; i < 41; i++) g[i] = (float)(i + 1);
    EXPECT(nearest1d(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize, aclnnUpsampleNearestExact1dBackward, 2,
                     41, 0, g, r),
           0);
    CHECK(r[0] == 210.0f && r[1] == 651.0f);
    /* in = 27, scale 0.3 -> out 8, g[o] = 2^o: the device sends outputs 0..7 to cells
     * 1, 5, 8, 11, 15, 18, 21, 24 (PyTorch sends output 7 to cell 25). */
    for (int i = 0; i < 8; i++) g[i] = (float)(1 << i);
    EXPECT(nearest1d(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize, aclnnUpsampleNearestExact1dBackward, 27,
                     8, 0.3, g, r),
           0);
    static const int cell[8] = {1, 5, 8, 11, 15, 18, 21, 24};
    float want[27] = {0};
    for (int i = 0; i < 8; i++) want[cell[i]] += g[i];
    CHECK(memcmp(r, want, sizeof want) == 0);
    /* A scale the sizes do not agree with is the kernel's business: in 2, out 4, scale 1.5 gives
     * cell 0 = [0, 1), cell 1 = [1, ceil(3 - 0.5)) = [1, 3): output 3 is summed by no cell. */
    for (int i = 0; i < 4; i++) g[i] = (float)(1 << i);
    EXPECT(nearest1d(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize, aclnnUpsampleNearestExact1dBackward, 2,
                     4, 1.5, g, r),
           0);
    CHECK(r[0] == 1.0f && r[1] == 6.0f);
}

/* Nearest-exact 2d of a [1, 1, oh, ow] gradient g into [1, 1, ih, iw]. */
static int nearest2d(int64_t ih, int64_t iw, int64_t oh, int64_t ow, double sh, double sw, const float *g,
                     float *res, uint64_t *ws_out)
{
    int64_t god[4] = {1, 1, oh, ow}, ind[4] = {1, 1, ih, iw}, osz[2] = {oh, ow};
    dt go = make(god, 4, ACL_FORMAT_NCHW, g), o = make(ind, 4, ACL_FORMAT_NCHW, NULL);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int rc = aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, sh, sw, o.t, &ws, &ex);
    if (rc == 0) {
        *ws_out = ws;
        rc = run(aclnnUpsampleNearestExact2dBackward, ws, ex, &o, res);
    }
    drop(&go);
    drop(&o);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return rc;
}

static void test_nearest_passes(void)
{
    float g[64], r[16];
    uint64_t ws = 0;
    for (int i = 0; i < 64; i++) g[i] = (float)i;
    /* 4x4 -> 2x4 (W scale 1: the W pass is skipped, H pass reads gradOutput): rows 0+1 and 2+3. */
    EXPECT(nearest2d(2, 4, 4, 4, 0, 0, g, r, &ws), 0);
    CHECK(r[0] == 4.0f && r[3] == 10.0f && r[4] == 20.0f && r[7] == 26.0f);
    CHECK(ws == 4 * 4 * 4); /* the float32 intermediate [outH][inW] */
    /* 4x4 -> 4x2 (H scale 1: the W pass writes the result): columns 0+1 and 2+3. */
    EXPECT(nearest2d(4, 2, 4, 4, 0, 0, g, r, &ws), 0);
    CHECK(r[0] == 1.0f && r[1] == 5.0f && r[6] == 25.0f && r[7] == 29.0f);
    /* equal sizes: both scales 1, the H pass copies */
    EXPECT(nearest2d(4, 4, 4, 4, 0, 0, g, r, &ws), 0);
    CHECK(memcmp(r, g, 16 * sizeof *r) == 0);
    /* a scale within 1e-6 of 1 with unequal sizes: no host check; both passes are skipped (W: 4/4), the
     * H pass maps row i to cell ceil(i * s - 0.5) = i and gradient row 4 reaches no cell */
    EXPECT(nearest2d(4, 4, 4, 4, 1.0000001, 0, g, r, &ws), 0);
    EXPECT(nearest2d(4, 4, 5, 4, 1.0000001, 0, g, r, &ws), 0);
    CHECK(memcmp(r, g, 16 * sizeof *r) == 0);
}

/* Bilinear of a [1, 1, oh, ow] gradient of ones into [1, 1, ih, iw] (v2 or v1). */
static int bilinear(int v2, int64_t ih, int64_t iw, int64_t oh, int64_t ow, double sh, double sw, float *res)
{
    float g[256];
    for (int i = 0; i < 256; i++) g[i] = 1.0f + (float)(i % 7) * 0.125f;
    int64_t god[4] = {1, 1, oh, ow}, ind[4] = {1, 1, ih, iw}, osz[2] = {oh, ow};
    dt go = make(god, 4, ACL_FORMAT_NCHW, g), o = make(ind, 4, ACL_FORMAT_NCHW, NULL);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    phase1_bl p1 = v2 ? aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize : aclnnUpsampleBilinear2dBackwardGetWorkspaceSize;
    int rc = p1(go.t, os, is, false, sh, sw, o.t, &ws, &ex);
    if (rc == 0) {
        rc = run(v2 ? aclnnUpsampleBilinear2dBackwardV2 : aclnnUpsampleBilinear2dBackward, ws, ex, &o, res);
    }
    drop(&go);
    drop(&o);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return rc;
}

static float max_diff(const float *a, const float *b, int n)
{
    float m = 0;
    for (int i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}

static void test_bilinear_routing(void)
{
    /* 3x3 -> 7x7 with scale 2.4 (floor(3 * 2.4) = 7): the kernel path weighs with 1/2.4, sizes give
     * 3/7; the two differ by about 0.01 of the weights. */
    float both[9], none[9], one[9], v1[9];
    EXPECT(bilinear(1, 3, 3, 7, 7, 2.4, 2.4, both), 0);
    EXPECT(bilinear(1, 3, 3, 7, 7, 0, 0, none), 0);
    EXPECT(bilinear(1, 3, 3, 7, 7, 2.4, 0, one), 0); /* one scale: fallback, both dims from sizes */
    EXPECT(bilinear(0, 3, 3, 7, 7, 2.4, 2.4, v1), 0); /* V1 never uses scales on A2 */
    CHECK(max_diff(both, none, 9) > 0.05f);
    CHECK(max_diff(one, none, 9) < 1e-4f);
    CHECK(max_diff(v1, none, 9) < 1e-4f);
    /* the sum of the gradient is kept whatever the scale (every weight pair sums to 1) */
    float sb = 0, sn = 0;
    for (int i = 0; i < 9; i++) sb += both[i], sn += none[i];
    CHECK(fabsf(sb - sn) < 1e-3f);
    /* equal sizes with a scale (V2): the kernel runs with s = 1/2 per dim, taps per output row
     * 0: (0, 1), 1: (0, .75) (1, .25), 2: (0, .25) (1, .75), 3: (1, .75) (2, .25), so cell 3 gets 0 */
    float eq[16], id[16], g[16];
    EXPECT(bilinear(1, 4, 4, 4, 4, 2, 2, eq), 0);
    EXPECT(bilinear(1, 4, 4, 4, 4, 0, 0, id), 0);
    for (int i = 0; i < 16; i++) g[i] = 1.0f + (float)(i % 7) * 0.125f;
    CHECK(memcmp(id, g, sizeof g) == 0); /* without a scale: the identity */
    CHECK(eq[15] == 0.0f && eq[3] == 0.0f && eq[12] == 0.0f && eq[0] > g[0]);
    EXPECT(bilinear(0, 4, 4, 4, 4, 2, 2, eq), 0); /* V1: a copy */
    CHECK(memcmp(eq, g, sizeof g) == 0);

    /* V1 on A2: BF16 only where the op_api copies (equal sizes), bit for bit (a NaN payload too) */
    uint16_t bits[4] = {0x3f80, 0x7fa1, 0xc2f7, 0x0001}, got[4] = {0};
    int64_t d4[4] = {1, 1, 2, 2}, d2[4] = {1, 1, 1, 2}, st[4] = {4, 4, 2, 1}, osz[2] = {2, 2}, n = 4;
    void *gd, *od;
    EXPECT(aclrtMalloc(&gd, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMalloc(&od, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpy(gd, sizeof bits, bits, sizeof bits, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    aclTensor *gb = aclCreateTensor(d4, 4, ACL_BF16, st, 0, ACL_FORMAT_NCHW, &n, 1, gd);
    aclTensor *ob = aclCreateTensor(d4, 4, ACL_BF16, st, 0, ACL_FORMAT_NCHW, &n, 1, od);
    aclTensor *small = aclCreateTensor(d2, 4, ACL_BF16, st, 0, ACL_FORMAT_NCHW, &n, 1, od);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(d4, 4), *is2 = aclCreateIntArray(d2, 4);
    uint64_t ws;
    aclOpExecutor *ex;
    EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(gb, os, is, false, 0, 0, ob, &ws, &ex), 0);
    EXPECT(aclnnUpsampleBilinear2dBackward(NULL, 0, ex, stream), 0);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclrtMemcpy(got, sizeof got, od, sizeof got, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(memcmp(got, bits, sizeof bits) == 0);
    EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(gb, os, is2, false, 0, 0, small, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(gb, os, is2, false, 0, 0, small, &ws, &ex), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), 0);
    EXPECT(aclDestroyTensor(gb), 0);
    EXPECT(aclDestroyTensor(ob), 0);
    EXPECT(aclDestroyTensor(small), 0);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    aclDestroyIntArray(is2);
    EXPECT(aclrtFree(gd), 0);
    EXPECT(aclrtFree(od), 0);
}

static void test_empty(void)
{
    int64_t god[4] = {0, 2, 4, 4}, ind[4] = {0, 2, 2, 2}, osz[2] = {4, 4};
    int64_t god1[3] = {0, 2, 4}, ind1[3] = {0, 2, 2}, osz1 = 4;
    dt go = make(god, 4, ACL_FORMAT_NCHW, NULL), o = make(ind, 4, ACL_FORMAT_NCHW, NULL);
    dt bad = make(ind, 4, ACL_FORMAT_NHWC, NULL); /* NHWC would be rejected by the 2d checks */
    dt go1 = make(god1, 3, ACL_FORMAT_NCL, NULL), o1 = make(ind1, 3, ACL_FORMAT_NCL, NULL);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    aclIntArray *os1 = aclCreateIntArray(&osz1, 1), *is1 = aclCreateIntArray(ind1, 3);
    uint64_t ws = 7;
    aclOpExecutor *ex = NULL;
    int64_t launches = aclemuLaunchCount();
    /* 2d: success before any check (here a format mismatch and a negative scale), nothing launched */
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, -1, 0, bad.t, &ws, &ex), 0);
    CHECK(ws == 0 && ex != NULL);
    EXPECT(aclnnUpsampleNearestExact2dBackward(NULL, 0, ex, stream), 0);
    CHECK(aclemuLaunchCount() == launches);
    /* 1d: its checks run first and N = 0 is one of them */
    EXPECT(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(go1.t, os1, is1, 0, o1.t, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    /* bilinear: checks first (V2 rejects an ND out), then success with nothing launched */
    aclTensor *nd = aclCreateTensor(ind, 4, ACL_FLOAT, (int64_t[]){8, 4, 2, 1}, 0, ACL_FORMAT_ND, (int64_t[]){1}, 1,
                                    o.dev);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, os, is, false, 0, 0, nd, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, os, is, false, 0, 0, o.t, &ws, &ex), 0);
    CHECK(ws == 0);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2(NULL, 0, ex, stream), 0);
    EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go.t, os, is, false, 0, 0, o.t, &ws, &ex), 0);
    EXPECT(aclnnUpsampleBilinear2dBackward(NULL, 0, ex, stream), 0);
    CHECK(aclemuLaunchCount() == launches);
    EXPECT(aclDestroyTensor(nd), 0);
    drop(&go);
    drop(&o);
    drop(&bad);
    drop(&go1);
    drop(&o1);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    aclDestroyIntArray(os1);
    aclDestroyIntArray(is1);
}

static void test_formats(void)
{
    int64_t god[4] = {1, 2, 4, 4}, ind[4] = {1, 2, 2, 2}, osz[2] = {4, 4};
    dt go = make(god, 4, ACL_FORMAT_NCHW, NULL), o = make(ind, 4, ACL_FORMAT_NCHW, NULL);
    int64_t gst[4] = {32, 16, 4, 1}, ost[4] = {8, 4, 2, 1}, one = 1;
    aclTensor *go_nhwc = aclCreateTensor(god, 4, ACL_FLOAT, gst, 0, ACL_FORMAT_NHWC, &one, 1, go.dev);
    aclTensor *o_nhwc = aclCreateTensor(ind, 4, ACL_FLOAT, ost, 0, ACL_FORMAT_NHWC, &one, 1, o.dev);
    aclTensor *go_nd = aclCreateTensor(god, 4, ACL_FLOAT, gst, 0, ACL_FORMAT_ND, &one, 1, go.dev);
    aclTensor *o_nd = aclCreateTensor(ind, 4, ACL_FLOAT, ost, 0, ACL_FORMAT_ND, &one, 1, o.dev);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws;
    aclOpExecutor *ex = NULL;
    /* nearest 1d: any format as long as both tensors have the same one */
    int64_t g3[3] = {1, 2, 8}, i3[3] = {1, 2, 4}, o1 = 8, s3g[3] = {16, 8, 1}, s3o[3] = {8, 4, 1};
    aclTensor *g_nd = aclCreateTensor(g3, 3, ACL_FLOAT, s3g, 0, ACL_FORMAT_ND, &one, 1, go.dev);
    aclTensor *o_nd3 = aclCreateTensor(i3, 3, ACL_FLOAT, s3o, 0, ACL_FORMAT_ND, &one, 1, o.dev);
    aclTensor *o_ncl = aclCreateTensor(i3, 3, ACL_FLOAT, s3o, 0, ACL_FORMAT_NCL, &one, 1, o.dev);
    aclIntArray *os1 = aclCreateIntArray(&o1, 1), *is1 = aclCreateIntArray(i3, 3);
    EXPECT(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(g_nd, os1, is1, 0, o_nd3, &ws, &ex), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), 0);
    EXPECT(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(g_nd, os1, is1, 0, o_ncl, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclDestroyTensor(g_nd), 0);
    EXPECT(aclDestroyTensor(o_nd3), 0);
    EXPECT(aclDestroyTensor(o_ncl), 0);
    aclDestroyIntArray(os1);
    aclDestroyIntArray(is1);
    /* nearest 2d: NHWC rejected even when both tensors say so; ND accepted */
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go_nhwc, os, is, 0, 0, o_nhwc, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go_nd, os, is, 0, 0, o_nd, &ws, &ex), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), 0);
    /* bilinear: ND gradOutput rejected by both ops, ND out by V2; with NHWC tags the NCHW-shaped
     * dims no longer fit inputSize read as (N, H, W, C) */
    EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go_nd, os, is, false, 0, 0, o.t, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go_nd, os, is, false, 0, 0, o.t, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, os, is, false, 0, 0, o_nd, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go_nhwc, os, is, false, 0, 0, o_nhwc, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go_nhwc, os, is, false, 0, 0, o_nhwc, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclDestroyTensor(go_nhwc), 0);
    EXPECT(aclDestroyTensor(o_nhwc), 0);
    EXPECT(aclDestroyTensor(go_nd), 0);
    EXPECT(aclDestroyTensor(o_nd), 0);
    drop(&go);
    drop(&o);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
}

/* NHWC-tagged tensors (dims N, H, W, C) are computed channels-last: the same numbers stored
 * channels-last give the channels-last image of the NCHW result, for V1 and V2. */
static void test_nhwc_compute(void)
{
    enum { C = 3, OH = 5, OW = 4, IH = 2, IW = 3 };
    float g[C * OH * OW], gl[OH * OW * C], r[C * IH * IW], rl[IH * IW * C];
    for (int i = 0; i < C * OH * OW; i++) g[i] = (float)((i * 37) % 23) - 11.0f;
    for (int c = 0; c < C; c++)
        for (int y = 0; y < OH; y++)
            for (int x = 0; x < OW; x++) gl[(y * OW + x) * C + c] = g[(c * OH + y) * OW + x];
    for (int v2 = 0; v2 < 2; v2++) {
        phase1_bl p1 = v2 ? aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize
                          : aclnnUpsampleBilinear2dBackwardGetWorkspaceSize;
        phase2_fn p2 = v2 ? aclnnUpsampleBilinear2dBackwardV2 : aclnnUpsampleBilinear2dBackward;
        int64_t god[4] = {1, C, OH, OW}, ind[4] = {1, C, IH, IW}, osz[2] = {OH, OW};
        int64_t godl[4] = {1, OH, OW, C}, indl[4] = {1, IH, IW, C};
        dt go = make(god, 4, ACL_FORMAT_NCHW, g), o = make(ind, 4, ACL_FORMAT_NCHW, NULL);
        dt gol = make(godl, 4, ACL_FORMAT_NHWC, gl), ol = make(indl, 4, ACL_FORMAT_NHWC, NULL);
        aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4), *isl = aclCreateIntArray(indl, 4);
        uint64_t ws;
        aclOpExecutor *ex;
        EXPECT(p1(go.t, os, is, false, 0, 0, o.t, &ws, &ex), 0);
        EXPECT(run(p2, ws, ex, &o, r), 0);
        EXPECT(p1(gol.t, os, isl, false, 0, 0, ol.t, &ws, &ex), 0);
        EXPECT(run(p2, ws, ex, &ol, rl), 0);
        int same = 1;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < IH; y++)
                for (int x = 0; x < IW; x++) same &= rl[(y * IW + x) * C + c] == r[(c * IH + y) * IW + x];
        CHECK(same);
        drop(&go);
        drop(&o);
        drop(&gol);
        drop(&ol);
        aclDestroyIntArray(os);
        aclDestroyIntArray(is);
        aclDestroyIntArray(isl);
    }
}

static void test_variants(const char *build)
{
    char path[4096];
    /* torch-map: in = 2, out = 41 maps output 20 to cell 0 like PyTorch: 231 and 630 */
    snprintf(path, sizeof path, "%s/torch-map/libopapi.so", build);
    void *tm = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(tm != NULL);
    if (tm) {
        phase1_1d p1 = (phase1_1d)dlsym(tm, "aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize");
        phase2_fn p2 = (phase2_fn)dlsym(tm, "aclnnUpsampleNearestExact1dBackward");
        float g[41], r[2];
        for (int i = 0; i < 41; i++) g[i] = (float)(i + 1);
        CHECK(p1 && p2);
        if (p1 && p2) {
            EXPECT(nearest1d(p1, p2, 2, 41, 0, g, r), 0);
            CHECK(r[0] == 231.0f && r[1] == 630.0f);
        }
    }
    /* split: libopapi.so loads without any upsample symbol, libopapi_cv.so has all four pairs */
    snprintf(path, sizeof path, "%s/split/libopapi.so", build);
    void *core = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    snprintf(path, sizeof path, "%s/split/libopapi_cv.so", build);
    void *cv = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(core != NULL && cv != NULL);
    static const char *const names[] = {"aclnnUpsampleNearestExact1dBackward", "aclnnUpsampleNearestExact2dBackward",
                                        "aclnnUpsampleBilinear2dBackward", "aclnnUpsampleBilinear2dBackwardV2"};
    for (size_t i = 0; core && cv && i < sizeof names / sizeof names[0]; i++) {
        char p1[128];
        snprintf(p1, sizeof p1, "%sGetWorkspaceSize", names[i]);
        CHECK(dlsym(core, names[i]) == NULL && dlsym(core, p1) == NULL);
        CHECK(dlsym(cv, names[i]) != NULL && dlsym(cv, p1) != NULL);
    }
}

int main(int argc, char **argv)
{
    const char *build = argc > 1 ? argv[1] : "build";
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    test_nearest_ties();
    test_nearest_passes();
    test_bilinear_routing();
    test_empty();
    test_formats();
    test_nhwc_compute();
    test_variants(build);
    EXPECT(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    return check_report("ops");
}
