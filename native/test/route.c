/*
 * What the library's deterministic bilinear route needs from the emulation: aclnnCast (src/opapi/cast.c)
 * and the planted TBE zero-weight fault (aclemuSetTbeZeroWeightFault, src/opapi/tbe5hd.c).
 *  - Cast: float16 -> float32 -> float16 and bfloat16 round trips bit for bit, float32 -> float16 /
 *    bfloat16 rounding to nearest even on hand-picked ties, same-dtype bit copies, strided views (a
 *    transposed self, an offset strided out), phase-1 refusals (NULL 161001, shapes and dtypes 161002
 *    naming them), empty tensors, the kernel counter "Cast", the phase-2 machinery (injected launch
 *    fault, repeatable executor, referenced free naming "self") and the libDirs that export it.
 *  - The fault: the control and its environment variable; its weights (row y + 1 gets exactly 2^-10
 *    of row y's partial, l unchanged); on H-unchanged calls over 8 atomic seeds, one bit pattern with
 *    the fault off in modes 5 and 6, and with it on: several where a cell takes 3+ partials from 2+
 *    cores (mode 6, image at least tensor_c / 2 wide: overlapping flush windows), still one where each
 *    cell takes 2 (mode 5, narrow mode 6: two additions onto a zeroed cell commute), bits changed.
 * Usage: route [<expected NpuArch> [<build dir>]] (the Makefile sets ACLEMU_SOC: Ascend910A for 1001,
 * so that modes 5 and 6 both run, and unset for 2201; the fault's part runs on 1001, 2002 and 2201).
 */
#include "ops950.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef aclnnStatus (*cast_p1)(const aclTensor *, const aclDataType, aclTensor *, uint64_t *, aclOpExecutor **);

/* ---- device buffers and views of any dtype ---- */

typedef struct {
    void *dev;
    size_t bytes;
} buf;

static buf alloc_buf(size_t bytes, const void *host)
{
    buf b = {NULL, bytes};
    EXPECT(aclrtMalloc(&b.dev, bytes > 0 ? bytes : 32, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    if (host != NULL && bytes > 0) {
        EXPECT(aclrtMemcpy(b.dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    }
    return b;
}

static void read_buf(const buf *b, void *host)
{
    EXPECT(aclrtMemcpy(host, b->bytes, b->dev, b->bytes, ACL_MEMCPY_DEVICE_TO_HOST), 0);
}

static void free_buf(buf *b) { EXPECT(aclrtFree(b->dev), 0); }

/* A view: dims, strides (NULL: row-major), offset in elements. */
static aclTensor *view(const buf *b, int32_t dt, const int64_t *dims, int nd, const int64_t *strides, int64_t offset)
{
    int64_t st[8], n = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = strides != NULL ? strides[i] : n;
        n *= dims[i];
    }
    int64_t storage = (int64_t)(b->bytes / esize(dt));
    return aclCreateTensor(dims, (uint64_t)nd, (aclDataType)dt, st, offset, ACL_FORMAT_ND, &storage, 1, b->dev);
}

/* Phase 1 + phase 2 of Cast (p1 / p2: the main library's unless given); the phase-1 workspace in *ws. */
static int cast_with(cast_p1 p1, phase2_fn p2, aclTensor *self, int32_t dtype, aclTensor *out, uint64_t *ws)
{
    uint64_t w = 99;
    aclOpExecutor *ex = NULL;
    int rc = p1(self, (aclDataType)dtype, out, &w, &ex);
    if (ws != NULL) {
        *ws = w;
    }
    if (rc == 0) {
        rc = run2(p2, w, ex);
    }
    return rc;
}

static int cast(aclTensor *self, int32_t dtype, aclTensor *out, uint64_t *ws)
{
    return cast_with(aclnnCastGetWorkspaceSize, aclnnCast, self, dtype, out, ws);
}

/* Contiguous 1-D cast of n elements from host bits `in` (dtype a) to host bits `out` (dtype b). */
static int cast_1d(const void *in, int32_t a, void *out, int32_t b, int64_t n)
{
    buf bi = alloc_buf((size_t)n * esize(a), in), bo = alloc_buf((size_t)n * esize(b), NULL);
    aclTensor *ti = view(&bi, a, &n, 1, NULL, 0), *to = view(&bo, b, &n, 1, NULL, 0);
    uint64_t ws = 99;
    int rc = cast(ti, b, to, &ws);
    CHECK(rc != 0 || ws == 0);
    if (rc == 0) {
        read_buf(&bo, out);
    }
    EXPECT(aclDestroyTensor(ti), 0);
    EXPECT(aclDestroyTensor(to), 0);
    free_buf(&bi);
    free_buf(&bo);
    return rc;
}

/* float16 -> float32, exact, subnormals included (the test's own reference). */
static float half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float mag = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000u) ? -mag : mag;
}

static int is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
static int is_bf16_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

static void test_cast_round_trips(void)
{
    enum { N = 65536 };
    uint16_t *h = malloc(N * 2), *back = malloc(N * 2);
    float *f = malloc(N * 4);
    for (int i = 0; i < N; i++) h[i] = (uint16_t)i;
    /* float16 -> float32: exact (NaN stays NaN); -> float16: the same bits, NaN canonical 0x7E00 | sign */
    EXPECT(cast_1d(h, ACL_FLOAT16, f, ACL_FLOAT, N), 0);
    EXPECT(cast_1d(f, ACL_FLOAT, back, ACL_FLOAT16, N), 0);
    int exact = 1, trip = 1;
    for (int i = 0; i < N; i++) {
        if (is_half_nan(h[i])) {
            exact &= isnan(f[i]);
            trip &= back[i] == (uint16_t)((h[i] & 0x8000u) | 0x7e00u);
        } else {
            exact &= f_bits(f[i]) == f_bits(half_value(h[i]));
            trip &= back[i] == h[i];
        }
    }
    CHECK(exact);
    CHECK(trip);
    /* bfloat16 -> float32 (the bits shifted up) -> bfloat16: the same bits, NaN 0x7FC0 */
    EXPECT(cast_1d(h, ACL_BF16, f, ACL_FLOAT, N), 0);
    EXPECT(cast_1d(f, ACL_FLOAT, back, ACL_BF16, N), 0);
    exact = trip = 1;
    for (int i = 0; i < N; i++) {
        exact &= f_bits(f[i]) == (uint32_t)h[i] << 16;
        trip &= is_bf16_nan(h[i]) ? back[i] == 0x7fc0u : back[i] == h[i];
    }
    CHECK(exact);
    CHECK(trip);
    /* same dtype: a bit copy, NaN payloads and signs kept */
    EXPECT(cast_1d(h, ACL_FLOAT16, back, ACL_FLOAT16, N), 0);
    CHECK(memcmp(h, back, N * 2) == 0);
    EXPECT(cast_1d(h, ACL_BF16, back, ACL_BF16, N), 0);
    CHECK(memcmp(h, back, N * 2) == 0);
    uint32_t fb[4] = {0x7fa00001u, 0xffc00123u, 0x80000000u, 0x00000001u}, fo[4];
    EXPECT(cast_1d(fb, ACL_FLOAT, fo, ACL_FLOAT, 4), 0);
    CHECK(memcmp(fb, fo, sizeof fb) == 0);
    free(h);
    free(back);
    free(f);
}

static void test_cast_rounding(void)
{
    /* float32 -> float16, RNE: 1 + 2^-11 is the tie between 1 and 1 + 2^-10 (even: 1); 1 + 3 * 2^-11
     * the tie between 1 + 2^-10 and 1 + 2^-9 (even: 1 + 2^-9); just above a tie rounds up; 65519.996
     * (below the 65520 tie) -> 65504, 65520 -> inf; subnormals: 2^-25 (tie with 0) -> 0, 3 * 2^-25
     * -> 2 * 2^-24, 2^-24 -> 0x0001 */
    const float in[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f, -(1.0f + 0x1p-11f),
                        65519.996f,      65520.0f,           0x1p-25f,                   3 * 0x1p-25f,
                        0x1p-24f,        -0.0f,              INFINITY,                   2.5f + 0x1p-10f};
    const uint16_t want_h[] = {0x3c00, 0x3c02, 0x3c01, 0xbc00, 0x7bff, 0x7c00, 0x0000, 0x0002, 0x0001, 0x8000, 0x7c00,
                               0x4100};
    enum { K = sizeof in / sizeof in[0] };
    uint16_t got[K];
    EXPECT(cast_1d(in, ACL_FLOAT, got, ACL_FLOAT16, K), 0);
    for (int i = 0; i < K; i++) {
        if (got[i] != want_h[i]) {
            fprintf(stderr, "  float16 case %d: %a -> 0x%04x, expected 0x%04x\n", i, (double)in[i], got[i], want_h[i]);
            CHECK(0);
        }
    }
    /* float32 -> bfloat16, RNE: 1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6, just above the tie -> up,
     * the largest float32 -> inf, 2^-133 (a float32 subnormal, exactly representable) kept */
    const float bin[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -(1.0f + 3 * 0x1p-8f),
                         0x1.fffffep127f, 0x1p-133f};
    const uint16_t want_b[] = {0x3f80, 0x3f82, 0x3f81, 0xbf82, 0x7f80, 0x0001};
    enum { KB = sizeof bin / sizeof bin[0] };
    uint16_t gb[KB];
    EXPECT(cast_1d(bin, ACL_FLOAT, gb, ACL_BF16, KB), 0);
    for (int i = 0; i < KB; i++) {
        if (gb[i] != want_b[i]) {
            fprintf(stderr, "  bf16 case %d: %a -> 0x%04x, expected 0x%04x\n", i, (double)bin[i], gb[i], want_b[i]);
            CHECK(0);
        }
    }
    /* float16 -> bfloat16 through an exact float32, one rounding: 1 + 2^-8 (0x3C04) -> 1, 1 + 3 * 2^-8
     * (0x3C0C) -> 1 + 2^-6; bfloat16 -> float16: 1e10 -> inf, 2^-30 -> 0, 1 + 2^-7 exact */
    const uint16_t hin[] = {0x3c04, 0x3c0c}, bin2[] = {0x5015, 0x3080, 0x3f81};
    uint16_t hb[2], bh[3];
    EXPECT(cast_1d(hin, ACL_FLOAT16, hb, ACL_BF16, 2), 0);
    CHECK(hb[0] == 0x3f80 && hb[1] == 0x3f82);
    EXPECT(cast_1d(bin2, ACL_BF16, bh, ACL_FLOAT16, 3), 0);
    CHECK(bh[0] == 0x7c00 && bh[1] == 0x0000 && bh[2] == 0x3c08);
}

/* self: a transposed (3, 5) view of a (5, 3) float16 buffer; out: an offset, strided (3, 5) float32
 * view whose gaps keep their contents. */
static void test_cast_views(void)
{
    uint16_t src[15];
    for (int i = 0; i < 15; i++) src[i] = to_half((float)i * 0.5f - 3.0f);
    float init[40];
    for (int i = 0; i < 40; i++) init[i] = -777.0f;
    buf bs = alloc_buf(sizeof src, src), bo = alloc_buf(sizeof init, init);
    int64_t dims[2] = {3, 5}, sst[2] = {1, 3}, ost[2] = {12, 2};
    aclTensor *self = view(&bs, ACL_FLOAT16, dims, 2, sst, 0), *out = view(&bo, ACL_FLOAT, dims, 2, ost, 3);
    uint64_t ws = 99;
    EXPECT(cast(self, ACL_FLOAT, out, &ws), 0);
    CHECK(ws == 0);
    float got[40];
    read_buf(&bo, got);
    int ok = 1;
    for (int i = 0; i < 40; i++) {
        int at = i >= 3 && (i - 3) % 2 == 0 && (i - 3) % 12 < 10 && (i - 3) / 12 < 3;
        if (at) {
            int r = (i - 3) / 12, c = (i - 3) % 12 / 2;
            ok &= got[i] == half_value(src[c * 3 + r]);
        } else {
            ok &= got[i] == -777.0f;
        }
    }
    CHECK(ok);
    /* a float32 self with an offset and negative strides (reversed rows) into a contiguous bfloat16 out */
    float fsrc[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    buf bf = alloc_buf(sizeof fsrc, fsrc), bb = alloc_buf(8 * 2, NULL);
    int64_t d2[2] = {2, 3}, nst[2] = {-4, 1};
    aclTensor *s2 = view(&bf, ACL_FLOAT, d2, 2, nst, 5), *o2 = view(&bb, ACL_BF16, d2, 2, NULL, 0);
    EXPECT(cast(s2, ACL_BF16, o2, NULL), 0);
    uint16_t gb[8];
    read_buf(&bb, gb);
    CHECK(from_bf16(gb[0]) == 5.0f && from_bf16(gb[1]) == 6.0f && from_bf16(gb[2]) == 7.0f &&
          from_bf16(gb[3]) == 1.0f && from_bf16(gb[4]) == 2.0f && from_bf16(gb[5]) == 3.0f);
    /* a view reaching past its allocation: 161002 at phase 1 */
    int64_t far[2] = {1, 100};
    aclTensor *s3 = view(&bf, ACL_FLOAT, d2, 2, far, 0);
    EXPECT(cast(s3, ACL_BF16, o2, NULL), ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclDestroyTensor(s3), 0);
    EXPECT(aclDestroyTensor(s2), 0);
    EXPECT(aclDestroyTensor(o2), 0);
    EXPECT(aclDestroyTensor(self), 0);
    EXPECT(aclDestroyTensor(out), 0);
    free_buf(&bs);
    free_buf(&bo);
    free_buf(&bf);
    free_buf(&bb);
}

static int msg_has(const char *a, const char *b)
{
    const char *m = aclGetRecentErrMsg();
    int ok = m != NULL && strstr(m, a) != NULL && (b == NULL || strstr(m, b) != NULL);
    if (!ok) {
        fprintf(stderr, "  message \"%s\" lacks \"%s\"%s%s\n", m ? m : "(none)", a, b ? " / " : "", b ? b : "");
    }
    return ok;
}

static void test_cast_refusals(void)
{
    buf b = alloc_buf(64, NULL);
    int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d6 = 6;
    aclTensor *f23 = view(&b, ACL_FLOAT, d23, 2, NULL, 0), *h23 = view(&b, ACL_FLOAT16, d23, 2, NULL, 0);
    aclTensor *h32 = view(&b, ACL_FLOAT16, d32, 2, NULL, 0), *h6 = view(&b, ACL_FLOAT16, &d6, 1, NULL, 0);
    aclTensor *i23 = view(&b, ACL_INT32, d23, 2, NULL, 0), *q23 = view(&b, ACL_INT8, d23, 2, NULL, 0);
    uint64_t ws;
    aclOpExecutor *ex;
    int64_t live = aclemuLiveObjects();
    /* NULL handles: 161001 */
    EXPECT(aclnnCastGetWorkspaceSize(NULL, ACL_FLOAT16, h23, &ws, &ex), ACLNN_ERR_PARAM_NULLPTR);
    CHECK(msg_has("self", NULL));
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, NULL, &ws, &ex), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, h23, NULL, &ex), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, h23, &ws, NULL), ACLNN_ERR_PARAM_NULLPTR);
    /* shapes: (2, 3) into (3, 2) or (6): 161002 naming both */
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, h32, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("[3, 2]", "[2, 3]"));
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, h6, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("[6]", "[2, 3]"));
    /* the dtype argument must be out's dtype */
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT, h23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("FLOAT", "FLOAT16"));
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_BF16, h23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    /* dtypes outside FLOAT, FLOAT16, BF16: self, the argument, out; each named */
    EXPECT(aclnnCastGetWorkspaceSize(i23, ACL_FLOAT16, h23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("INT32", "self"));
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_DOUBLE, h23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("DOUBLE", NULL));
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_INT8, q23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("INT8", NULL));
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, i23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(msg_has("INT32", "out"));
    /* a dead handle: 161002 */
    aclTensor *dead = view(&b, ACL_FLOAT, d23, 2, NULL, 0);
    EXPECT(aclDestroyTensor(dead), 0);
    EXPECT(aclnnCastGetWorkspaceSize(dead, ACL_FLOAT16, h23, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
    CHECK(aclemuLiveObjects() == live); /* no executor left behind by a refusal */
    /* phase 2: a NULL executor 561103, a consumed one 161002 */
    EXPECT(aclnnCast(NULL, 0, NULL, stream), ACLNN_ERR_INNER_NULLPTR);
    EXPECT(aclnnCastGetWorkspaceSize(f23, ACL_FLOAT16, h23, &ws, &ex), 0);
    EXPECT(aclnnCast(NULL, 0, ex, stream), 0);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclnnCast(NULL, 0, ex, stream), ACLNN_ERR_PARAM_INVALID);
    aclTensor *all[] = {f23, h23, h32, h6, i23, q23};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        EXPECT(aclDestroyTensor(all[i]), 0);
    }
    free_buf(&b);
}

static void test_cast_launches(void)
{
    aclemuResetFaults();
    int64_t zero = 0, d0[2] = {0, 4}, d4[2] = {2, 2};
    /* empty: success, workspace 0, nothing launched (no view is read: NULL data is fine) */
    aclTensor *e1 = aclCreateTensor(d0, 2, ACL_FLOAT16, d4, 0, ACL_FORMAT_ND, &zero, 1, NULL);
    aclTensor *e2 = aclCreateTensor(d0, 2, ACL_FLOAT, d4, 0, ACL_FORMAT_ND, &zero, 1, NULL);
    uint64_t ws = 99;
    EXPECT(cast(e1, ACL_FLOAT, e2, &ws), 0);
    CHECK(ws == 0 && aclemuLaunchCount() == 0 && strcmp(aclemuLastKernel(), "") == 0);
    EXPECT(aclDestroyTensor(e1), 0);
    EXPECT(aclDestroyTensor(e2), 0);
    /* the kernel counter */
    float v[4] = {1, 2, 3, 4};
    buf bi = alloc_buf(16, v), bo = alloc_buf(8, NULL);
    aclTensor *ti = view(&bi, ACL_FLOAT, d4, 2, NULL, 0), *to = view(&bo, ACL_FLOAT16, d4, 2, NULL, 0);
    EXPECT(cast(ti, ACL_FLOAT16, to, NULL), 0);
    CHECK(strcmp(aclemuLastKernel(), "Cast") == 0 && aclemuKernelLaunches("Cast") == 1 && aclemuLaunchCount() == 1);
    /* an injected launch fault: returned by phase 2, the executor consumed, nothing counted */
    int64_t live = aclemuLiveObjects();
    aclOpExecutor *ex = NULL;
    EXPECT(aclnnCastGetWorkspaceSize(ti, ACL_FLOAT16, to, &ws, &ex), 0);
    aclemuFailNextLaunch(ACL_ERROR_RT_AICORE_EXCEPTION);
    EXPECT(aclnnCast(NULL, 0, ex, stream), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(aclemuLiveObjects() == live && aclemuKernelLaunches("Cast") == 1);
    /* a repeatable executor runs twice, then is destroyed */
    EXPECT(aclnnCastGetWorkspaceSize(ti, ACL_FLOAT16, to, &ws, &ex), 0);
    EXPECT(aclSetAclOpExecutorRepeatable(ex), 0);
    EXPECT(aclnnCast(NULL, 0, ex, stream), 0);
    EXPECT(aclnnCast(NULL, 0, ex, stream), 0);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), 0);
    CHECK(aclemuKernelLaunches("Cast") == 3 && aclemuLiveObjects() == live);
    uint16_t h[4];
    read_buf(&bo, h);
    CHECK(h[0] == 0x3c00 && h[1] == 0x4000 && h[2] == 0x4200 && h[3] == 0x4400);
    /* the task's ranges name self: freeing it under a queued launch is a referenced free */
    int64_t refs = aclemuReferencedFrees();
    aclemuSetStreamDelayUs(20000);
    EXPECT(aclnnCastGetWorkspaceSize(ti, ACL_FLOAT16, to, &ws, &ex), 0);
    EXPECT(aclnnCast(NULL, 0, ex, stream), 0);
    free_buf(&bi);
    CHECK(aclemuReferencedFrees() == refs + 1 && strstr(aclemuLastReferencedFree(), "self") != NULL);
    int rc = aclrtSynchronizeStream(stream); /* 507015: the task found self freed (0 if it ran first) */
    CHECK(rc == ACL_ERROR_RT_AICORE_EXCEPTION || rc == 0);
    (void)aclGetRecentErrMsg();
    aclemuSetStreamDelayUs(0);
    EXPECT(aclDestroyTensor(ti), 0);
    EXPECT(aclDestroyTensor(to), 0);
    free_buf(&bo);
    aclemuResetFaults();
}

/* Every libDir's libopapi.so exports aclnnCast; build/split's core library does, its libopapi_cv.so not. */
static void test_cast_libdirs(const char *build)
{
    static const char *const dirs[] = {"", "/no-v2", "/no-1d", "/torch-map", "/split", "/old-runtime"};
    char path[4096];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s%s/libopapi.so", build, dirs[i]);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        cast_p1 p1 = h ? (cast_p1)dlsym(h, "aclnnCastGetWorkspaceSize") : NULL;
        phase2_fn p2 = h ? (phase2_fn)dlsym(h, "aclnnCast") : NULL;
        if (p1 == NULL || p2 == NULL) {
            fprintf(stderr, "  %s: no aclnnCast\n", path);
            CHECK(0);
            continue;
        }
        float v[2] = {1.0f + 0x1p-11f, -2.5f};
        int64_t n = 2;
        buf bi = alloc_buf(8, v), bo = alloc_buf(4, NULL);
        aclTensor *ti = view(&bi, ACL_FLOAT, &n, 1, NULL, 0), *to = view(&bo, ACL_FLOAT16, &n, 1, NULL, 0);
        EXPECT(cast_with(p1, p2, ti, ACL_FLOAT16, to, NULL), 0);
        uint16_t h2[2];
        read_buf(&bo, h2);
        CHECK(h2[0] == 0x3c00 && h2[1] == 0xc100 && strcmp(aclemuLastKernel(), "Cast") == 0);
        EXPECT(aclDestroyTensor(ti), 0);
        EXPECT(aclDestroyTensor(to), 0);
        free_buf(&bi);
        free_buf(&bo);
    }
    snprintf(path, sizeof path, "%s/split/libopapi_cv.so", build);
    void *cv = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(cv != NULL && dlsym(cv, "aclnnCast") == NULL && dlsym(cv, "aclnnCastGetWorkspaceSize") == NULL);
}

/* ---- the planted TBE zero-weight fault ---- */

static int arch, tbe;

static const char *mode_name(int m)
{
    static char names[7][40];
    snprintf(names[m], sizeof names[m], "ResizeBilinearV2Grad5HD.MODE%d", m);
    return names[m];
}

static float *gen(int64_t n, unsigned seed)
{
    float *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        g[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 6.0f * (float)(1 + (s & 7));
    }
    return g;
}

/* V1 (the TBE kernel whenever the sizes differ), N = C = 1, float32; 0 or the status. */
static int bil(int64_t ih, int64_t iw, int64_t gh, int64_t gw, const float *g, float *res, int want_mode)
{
    call c = {.op = 3, .N = 1, .C = 1, .in = {ih, iw}, .out = {gh, gw}, .fmt = ACL_FORMAT_NCHW, .gdt = ACL_FLOAT,
              .g = g, .res = res};
    int rc = op_call(&c);
    if (rc == 0 && strcmp(aclemuLastKernel(), mode_name(want_mode)) != 0) {
        fprintf(stderr, "  %lldx%lld <- %lldx%lld: kernel %s, expected %s\n", (long long)ih, (long long)iw,
                (long long)gh, (long long)gw, aclemuLastKernel(), mode_name(want_mode));
        CHECK(0);
    }
    return rc;
}

/* Distinct result bit patterns of an H-unchanged call (image h x iw, gradient h x gw) over 8 atomic
 * seeds; `first` (may be NULL) gets the first launch's result. */
static int patterns(int64_t h, int64_t iw, int64_t gw, int fault, int want_mode, float *first)
{
    enum { RUNS = 8 };
    float *g = gen(h * gw, 91);
    size_t n = (size_t)(h * iw);
    float *res = calloc(RUNS * n, sizeof *res);
    int distinct = 0;
    aclemuSetTbeZeroWeightFault(fault);
    for (int k = 0; k < RUNS; k++) {
        aclemuSetAtomicSeed(0x5eed0000u + (uint64_t)k * 104729u);
        EXPECT(bil(h, iw, h, gw, g, res + (size_t)k * n, want_mode), 0);
        int seen = 0;
        for (int j = 0; j < k && !seen; j++) {
            seen = memcmp(res + (size_t)j * n, res + (size_t)k * n, n * 4) == 0;
        }
        distinct += !seen;
    }
    if (first != NULL) {
        memcpy(first, res, n * 4);
    }
    aclemuSetTbeZeroWeightFault(-1);
    free(res);
    free(g);
    return distinct;
}

/* Fault off: one pattern; on: `want_on` patterns (0: two or more) and bits that differ from off. */
static void check_route(int64_t h, int64_t iw, int64_t gw, int mode, int want_on)
{
    size_t n = (size_t)(h * iw);
    float *off = malloc(n * 4), *on = malloc(n * 4);
    int d0 = patterns(h, iw, gw, 0, mode, off), d1 = patterns(h, iw, gw, 1, mode, on);
    int ok = d0 == 1 && (want_on ? d1 == want_on : d1 >= 2) && memcmp(off, on, n * 4) != 0;
    if (!ok) {
        fprintf(stderr, "  mode %d, %lldx%lld <- %lldx%lld: %d pattern(s) fault off, %d on (expected 1 and %s)\n",
                mode, (long long)h, (long long)iw, (long long)h, (long long)gw, d0, d1, want_on ? "1" : ">= 2");
    }
    CHECK(ok);
    free(off);
    free(on);
}

static void test_fault_control(void)
{
    const char *env = getenv("ACLEMU_TBE_ZERO_WEIGHT_FAULT");
    int env_on = env != NULL && strcmp(env, "1") == 0;
    CHECK(aclemuTbeZeroWeightFault() == env_on);
    aclemuSetTbeZeroWeightFault(!env_on);
    CHECK(aclemuTbeZeroWeightFault() == !env_on);
    aclemuSetTbeZeroWeightFault(-1);
    CHECK(aclemuTbeZeroWeightFault() == env_on);
    aclemuSetTbeZeroWeightFault(7); /* any non-zero value is on */
    CHECK(aclemuTbeZeroWeightFault() == 1);
    aclemuResetFaults();
    CHECK(aclemuTbeZeroWeightFault() == env_on);
}

/* The weights: a gradient whose only non-zero row is y0 (H unchanged, so r = 0 and l = 1 exactly):
 * fault off, only image row y0 is non-zero; on, image row y0 is unchanged (l stays) and row y0 + 1 is
 * exactly 2^-10 times it (products and sums scale exactly by a power of two), other rows zero; the
 * last row (no lower neighbour, stride 0) leaks nothing. Per mode: 4 (no atomics), 5, 6. */
static void check_weights(int64_t h, int64_t iw, int64_t gw, int mode)
{
    size_t n = (size_t)(h * iw);
    float *g = gen(h * gw, 17), *r0 = malloc(n * 4), *r1 = malloc(n * 4);
    for (int pass = 0; pass < 2; pass++) {
        int64_t y0 = pass == 0 ? 1 : h - 1;
        float *gz = calloc((size_t)(h * gw), sizeof *gz);
        memcpy(gz + y0 * gw, g + y0 * gw, (size_t)gw * 4);
        aclemuSetTbeZeroWeightFault(0);
        EXPECT(bil(h, iw, h, gw, gz, r0, mode), 0);
        aclemuSetTbeZeroWeightFault(1);
        EXPECT(bil(h, iw, h, gw, gz, r1, mode), 0);
        aclemuSetTbeZeroWeightFault(-1);
        int ok = 1, nonzero = 0;
        for (int64_t y = 0; y < h; y++) {
            for (int64_t x = 0; x < iw; x++) {
                float a = r0[y * iw + x], b = r1[y * iw + x];
                if (y == y0) {
                    ok &= f_bits(a) == f_bits(b);
                    nonzero += a != 0.0f;
                } else if (y == y0 + 1) {
                    ok &= a == 0.0f && b == r0[y0 * iw + x] * 0x1p-10f;
                } else {
                    ok &= a == 0.0f && b == 0.0f;
                }
            }
        }
        if (!ok || nonzero == 0) {
            fprintf(stderr, "  weights, mode %d, row %lld: not as expected\n", mode, (long long)y0);
        }
        CHECK(ok && nonzero > 0);
        free(gz);
    }
    free(g);
    free(r0);
    free(r1);
}

static void test_fault(void)
{
    test_fault_control();
    const int64_t wide = tbe ? 1100 : 900; /* >= tensor_c / 2: 1024 on 910 / 310P, 768 on A2 */
    check_weights(5, 7, 11, 4);
    check_weights(64, 150, 100, 6);
    check_weights(64, wide, wide + 200, 6);
    /* Mode 6 with an image narrower than tensor_c / 2 (one flush per row and UB row): each cell takes its
     * own row's partial and, faulted, the 2^-10 one of the row above: two additions onto +0 commute,
     * so one pattern with the fault on too (bits changed). Wider: the flush windows overlap in one cell
     * per tensor_c / 2 - 1 columns, which then takes 4 partials, 2 from each of 2 cores on the rows where
     * one core's rows end: several patterns. 8 rows: one row per core on every SoC (with many rows per
     * core the next core's first flushes nearly always come before the previous core's last ones in the
     * drawn interleaving, and the patterns get rare: 64 rows on A2 or 910ProB show one). */
    check_route(64, 150, 100, 6, 1);
    check_route(8, wide, wide + 200, 6, 0);
    check_route(8, wide, 2 * wide + 100, 6, 0); /* two tensor_c-column chunks per gradient row too */
    if (tbe) {
        /* Mode 5 (910 / 310P: iw <= 640, gw > iw): one flush per UB row, so two partials per cell:
         * one pattern either way. 64 x 200 -> 64 x 150 is mode 5 on these SoCs (not mode 6). */
        check_weights(64, 50, 100, 5);
        check_route(64, 50, 100, 5, 1);
        check_route(64, 150, 200, 5, 1);
    }
    aclemuResetFaults();
}

int main(int argc, char **argv)
{
    arch = aclemuNpuArch();
    int32_t want = argc > 1 ? (int32_t)strtol(argv[1], NULL, 10) : arch; /* no argument: any SoC */
    const char *build = argc > 2 ? argv[2] : "build";
    CHECK(arch == want);
    tbe = arch == 1001 || arch == 2002;
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    test_cast_round_trips();
    test_cast_rounding();
    test_cast_views();
    test_cast_refusals();
    test_cast_launches();
    test_cast_libdirs(build);
    if (tbe || arch == 2201) {
        test_fault();
    }
    EXPECT(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    const char *soc = aclrtGetSocName();
    printf("route (%s, arch %d): ", soc ? soc : "no SoC", arch);
    return check_report("Cast and the TBE zero-weight fault");
}
