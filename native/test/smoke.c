/*
 * Smoke test of the CANN host emulation, calling the ABI from C exactly as the Deno binding does.
 */
#include "aclemu.h"
#include "cann_subset.h"
#include "check.h"
#include "phase2.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Expects `status`, and a non-empty error message when it is not 0 (read once: it is cleared). */
#define EXPECT(expr, status)                                                                      \
    do {                                                                                          \
        int rc_ = (int)(expr);                                                                    \
        checks++;                                                                                 \
        if (rc_ != (status)) {                                                                    \
            failures++;                                                                           \
            fprintf(stderr, "FAIL %s:%d: %s -> %d, expected %d (%s)\n", __FILE__, __LINE__, #expr, \
                    rc_, (status), aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "no message");   \
        } else if ((status) != 0) {                                                               \
            const char *m_ = aclGetRecentErrMsg();                                                \
            CHECK(m_ != NULL && m_[0] != '\0');                                                   \
            if (verbose && m_) printf("  %d: %s\n", rc_, m_);                                     \
        }                                                                                         \
    } while (0)

static int verbose;
static aclrtStream stream;

/* A contiguous device tensor with `host` copied in (host may be NULL: left as allocated). */
typedef struct {
    void *dev;
    size_t bytes;
    aclTensor *t;
} dtensor;

static dtensor make_tensor(const int64_t *dims, int nd, aclDataType dt, const void *host)
{
    dtensor d = {0};
    int64_t strides[8], n = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = n;
        n *= dims[i];
    }
    d.bytes = (size_t)n * (dt == ACL_FLOAT ? 4 : 2);
    EXPECT(aclrtMalloc(&d.dev, d.bytes, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    if (host) {
        EXPECT(aclrtMemcpy(d.dev, d.bytes, host, d.bytes, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    }
    aclFormat fmt = nd == 3 ? ACL_FORMAT_NCL : nd == 4 ? ACL_FORMAT_NCHW : ACL_FORMAT_ND;
    d.t = aclCreateTensor(dims, (uint64_t)nd, dt, strides, 0, fmt, &n, 1, d.dev);
    CHECK(d.t != NULL);
    return d;
}

static void drop_tensor(dtensor *d)
{
    EXPECT(aclDestroyTensor(d->t), 0);
    EXPECT(aclrtFree(d->dev), 0);
}

static int run_phase2(phase2_fn fn, uint64_t ws, aclOpExecutor *ex) { return run_phase2_on(stream, fn, ws, ex); }

static void *thread_without_context(void *arg)
{
    void *p = NULL;
    EXPECT(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT(aclrtSynchronizeStream(stream), 0); /* needs no context: the stream knows its device */
    EXPECT(aclrtSetCurrentContext(arg), 0);
    EXPECT(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtFree(p), 0);
    return NULL;
}

static void test_runtime(void)
{
    EXPECT(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    CHECK(aclGetRecentErrMsg() == NULL); /* obtained and cleared by EXPECT */
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    EXPECT(aclFinalize(), 0);
    EXPECT(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    EXPECT(aclInit(NULL), 0);
    uint32_t n = 0;
    EXPECT(aclrtGetDeviceCount(&n), 0);
    CHECK(n == 2);
    EXPECT(aclrtSetDevice(2), ACL_ERROR_RT_INVALID_DEVICEID);
    void *p;
    EXPECT(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT(aclrtCreateStream(&stream), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT(aclrtSetDevice(0), 0);
    int32_t ma, mi, pa;
    EXPECT(aclrtGetVersion(&ma, &mi, &pa), 0);
    CHECK(ma == 8 && mi == 0 && pa == 0);
    CHECK(strcmp(aclrtGetSocName(), "Ascend910B3") == 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    CHECK(aclemuLiveStreams() == 1);
    EXPECT(aclrtSynchronizeStream((aclrtStream)&n), ACL_ERROR_RT_INVALID_HANDLE);

    int64_t v = -1;
    EXPECT(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET);
    CHECK(v == -1);
    EXPECT(aclrtCtxSetSysParamOpt((aclSysParamOpt)7, 1), ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), 0);
    EXPECT(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), 0);
    CHECK(v == 1);

    aclrtContext ctx = NULL;
    EXPECT(aclrtGetCurrentContext(&ctx), 0);
    pthread_t th;
    pthread_create(&th, NULL, thread_without_context, ctx);
    pthread_join(th, NULL);
}

static void test_memory(void)
{
    void *p[5];
    size_t sizes[5] = {1, 31, 32, 100, 4096};
    int64_t bytes0 = aclemuLiveBytes();
    for (int i = 0; i < 5; i++) {
        EXPECT(aclrtMalloc(&p[i], sizes[i], ACL_MEM_MALLOC_HUGE_FIRST), 0);
        CHECK((uintptr_t)p[i] % 32 == 0);
    }
    CHECK(aclemuLiveAllocations() == 5);
    CHECK(aclemuLiveBytes() - bytes0 == 1 + 31 + 32 + 100 + 4096);
    EXPECT(aclrtMalloc(&p[0], 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    char host[256] = {0};
    EXPECT(aclrtMemcpy(p[3], 100, host, 100, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    EXPECT(aclrtMemcpy(p[3], 101, host, 101, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(host, 256, (char *)p[3] + 50, 51, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(host, 256, host + 1, 8, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(p[3], 10, host, 11, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtMemcpy(p[4], 100, p[3], 100, ACL_MEMCPY_DEVICE_TO_DEVICE), 0);
    EXPECT(aclrtMemset(p[2], 32, 7, 32), 0);
    EXPECT(aclrtMemset(p[2], 33, 7, 33), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(host, 32, p[2], 32, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(host[0] == 7 && host[31] == 7);
    EXPECT(aclrtMemcpyAsync(host, 16, p[2], 16, ACL_MEMCPY_DEVICE_TO_HOST, stream), 0);
    EXPECT(aclrtMemcpyAsync(host, 16, p[2], 16, ACL_MEMCPY_DEVICE_TO_HOST, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclrtFree((char *)p[4] + 32), ACL_ERROR_RT_PARAM_INVALID);
    for (int i = 0; i < 5; i++) {
        EXPECT(aclrtFree(p[i]), 0);
    }
    EXPECT(aclrtFree(p[0]), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveBytes() == 0);
}

static void test_nearest2d(void)
{
    float ones[16], res[4];
    for (int i = 0; i < 16; i++) ones[i] = 1.0f;
    int64_t god[4] = {1, 1, 4, 4}, ind[4] = {1, 1, 2, 2}, osz[2] = {4, 4};
    dtensor go = make_tensor(god, 4, ACL_FLOAT, ones), out = make_tensor(ind, 4, ACL_FLOAT, NULL);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, out.t, &ws, &ex), 0);
    CHECK(ws == 32 && ex != NULL); /* (4 + 4) int32 index entries, rounded up to 32 bytes */
    CHECK(aclemuLiveObjects() == 5);
    EXPECT(aclnnUpsampleNearestExact2dBackward(NULL, 0, ex, stream), ACLNN_ERR_PARAM_NULLPTR); /* needed workspace */
    CHECK(aclemuLiveObjects() == 4); /* consumed even though it failed */
    EXPECT(aclnnUpsampleNearestExact2dBackward(NULL, 0, ex, stream), ACLNN_ERR_PARAM_INVALID); /* dead handle */
    EXPECT(aclnnUpsampleNearestExact2dBackward(NULL, 0, NULL, stream), ACLNN_ERR_INNER_NULLPTR);

    EXPECT(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), 0);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 2.0, 2.0, out.t, &ws, &ex), 0);
    int64_t launches = aclemuLaunchCount();
    EXPECT(run_phase2(aclnnUpsampleNearestExact2dBackward, ws, ex), 0);
    CHECK(aclemuLaunchCount() == launches + 1 && aclemuLastLaunchDeterministic() == 1);
    EXPECT(aclrtMemcpy(res, sizeof res, out.dev, sizeof res, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(res[0] == 4.0f && res[1] == 4.0f && res[2] == 4.0f && res[3] == 4.0f);
    EXPECT(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), 0);

    /* validation: NHWC, misaligned data, view past its allocation; a scale inconsistent with the sizes
     * is the device's business (it maps with it, test/ops.c) */
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 1.5, 0, out.t, &ws, &ex), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), 0);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, -1, 0, out.t, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, NULL, is, 0, 0, out.t, &ws, &ex),
           ACLNN_ERR_PARAM_NULLPTR);
    int64_t st[4] = {4, 4, 2, 1}, st2[4] = {4, 4, 1, 2}, one = 4;
    aclTensor *nhwc = aclCreateTensor(ind, 4, ACL_FLOAT, st, 0, ACL_FORMAT_NHWC, &one, 1, out.dev);
    aclTensor *mis = aclCreateTensor(ind, 4, ACL_FLOAT, st, 0, ACL_FORMAT_NCHW, &one, 1, (char *)go.dev + 16);
    aclTensor *past = aclCreateTensor(ind, 4, ACL_FLOAT, st, 13, ACL_FORMAT_NCHW, &one, 1, go.dev);
    aclTensor *tr = aclCreateTensor(ind, 4, ACL_FLOAT, st2, 0, ACL_FORMAT_NCHW, &one, 1, out.dev);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, nhwc, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, mis, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, past, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);

    /* strided (transposed) out, with the caller's descriptors destroyed right after phase 1 */
    float g2[16];
    for (int i = 0; i < 16; i++) g2[i] = (float)i; /* row-major 4x4 */
    EXPECT(aclrtMemcpy(go.dev, sizeof g2, g2, sizeof g2, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, tr, &ws, &ex), 0);
    EXPECT(aclDestroyTensor(tr), 0);
    EXPECT(run_phase2(aclnnUpsampleNearestExact2dBackward, ws, ex), 0);
    EXPECT(aclrtMemcpy(res, sizeof res, out.dev, sizeof res, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    /* logical gi = [[10, 18], [42, 50]] stored transposed */
    CHECK(res[0] == 10.0f && res[1] == 42.0f && res[2] == 18.0f && res[3] == 50.0f);

    EXPECT(aclDestroyTensor(nhwc), 0);
    EXPECT(aclDestroyTensor(mis), 0);
    EXPECT(aclDestroyTensor(past), 0);
    EXPECT(aclDestroyTensor(past), ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclDestroyIntArray(os), 0);
    EXPECT(aclDestroyIntArray(is), 0);
    EXPECT(aclDestroyIntArray(NULL), 0);
    drop_tensor(&go);
    drop_tensor(&out);
    CHECK(aclemuLiveObjects() == 0);
}

static void test_nearest1d_fp16(void)
{
    /* in = 2, out = 41: the device's cell 1 starts at ceil(fl32(41/2) - 0.5) = 20, so 20 + 21 */
    uint16_t g[41], r[2];
    for (int i = 0; i < 41; i++) g[i] = 0x3c00; /* 1.0 */
    int64_t god[3] = {1, 1, 41}, ind[3] = {1, 1, 2}, osz = 41;
    dtensor go = make_tensor(god, 3, ACL_FLOAT16, g), out = make_tensor(ind, 3, ACL_FLOAT16, NULL);
    aclIntArray *os = aclCreateIntArray(&osz, 1), *is = aclCreateIntArray(ind, 3);
    uint64_t ws = 1;
    aclOpExecutor *ex = NULL;
    EXPECT(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(go.t, os, is, 0, out.t, &ws, &ex), 0);
    CHECK(ws == 0);
    EXPECT(aclDestroyTensor(go.t), 0);
    EXPECT(run_phase2(aclnnUpsampleNearestExact1dBackward, ws, ex), 0);
    EXPECT(aclrtMemcpy(r, sizeof r, out.dev, sizeof r, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(r[0] == 0x4d00 && r[1] == 0x4d40); /* 20.0, 21.0 in float16 (PyTorch: 21, 20) */
    EXPECT(aclrtFree(go.dev), 0);
    drop_tensor(&out);
    EXPECT(aclDestroyIntArray(os), 0);
    EXPECT(aclDestroyIntArray(is), 0);
    CHECK(aclemuLiveObjects() == 0);
}

static void bilinear_case(int v2, int align, const int64_t *god, const int64_t *ind, const float *g, const float *want,
                          int nin)
{
    float res[16];
    int64_t osz[2] = {god[2], god[3]};
    dtensor go = make_tensor(god, 4, ACL_FLOAT, g), out = make_tensor(ind, 4, ACL_FLOAT, NULL);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws = 1;
    aclOpExecutor *ex = NULL;
    if (v2) {
        EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, os, is, align, 0, 0, out.t, &ws, &ex), 0);
        EXPECT(run_phase2(aclnnUpsampleBilinear2dBackwardV2, ws, ex), 0);
    } else {
        EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go.t, os, is, align, 0, 0, out.t, &ws, &ex), 0);
        EXPECT(run_phase2(aclnnUpsampleBilinear2dBackward, ws, ex), 0);
    }
    CHECK(ws == 0);
    EXPECT(aclrtMemcpy(res, (size_t)nin * 4, out.dev, (size_t)nin * 4, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    for (int i = 0; i < nin; i++) {
        CHECK(res[i] == want[i]);
    }
    drop_tensor(&go);
    drop_tensor(&out);
    EXPECT(aclDestroyIntArray(os), 0);
    EXPECT(aclDestroyIntArray(is), 0);
}

static void test_bilinear(void)
{
    /* 2x2 -> 4x4, align_corners = false: per dim weights to input 0 are [1, .75, .25, 0] */
    float g[16];
    for (int i = 0; i < 16; i++) g[i] = (float)i;
    int64_t god[4] = {1, 1, 4, 4}, ind[4] = {1, 1, 2, 2};
    float want[4] = {12.5f, 19.5f, 40.5f, 47.5f};
    bilinear_case(1, 0, god, ind, g, want, 4);
    /* 1x3 -> 1x5, align_corners = true: scale 0.5, weights [1 .5 0 0 0], [0 .5 1 .5 0], [0 0 0 .5 1] */
    float g2[5] = {1, 2, 3, 4, 5}, want2[3] = {2, 6, 7};
    int64_t god2[4] = {1, 1, 1, 5}, ind2[4] = {1, 1, 1, 3};
    bilinear_case(0, 1, god2, ind2, g2, want2, 3);

    /* V1 emulates an A2 chip: BF16 is rejected there, accepted by V2 */
    dtensor go = make_tensor(god, 4, ACL_BF16, NULL), out = make_tensor(ind, 4, ACL_BF16, NULL);
    int64_t osz[2] = {4, 4};
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws;
    aclOpExecutor *ex;
    EXPECT(aclnnUpsampleBilinear2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, 0, out.t, &ws, &ex),
           ACLNN_ERR_PARAM_INVALID);
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, os, is, 0, 0, 0, out.t, &ws, &ex), 0);
    /* repeatable executor: survives phase 2 until aclDestroyAclOpExecutor */
    EXPECT(aclSetAclOpExecutorRepeatable(ex), 0);
    EXPECT(run_phase2(aclnnUpsampleBilinear2dBackwardV2, ws, ex), 0);
    EXPECT(run_phase2(aclnnUpsampleBilinear2dBackwardV2, ws, ex), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), 0);
    EXPECT(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
    drop_tensor(&go);
    drop_tensor(&out);
    EXPECT(aclDestroyIntArray(os), 0);
    EXPECT(aclDestroyIntArray(is), 0);
}

static void test_faults(void)
{
    void *a, *b, *c;
    aclemuFailAllocation(2);
    EXPECT(aclrtMalloc(&a, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    EXPECT(aclrtMalloc(&c, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtFree(a), 0);
    EXPECT(aclrtFree(c), 0);

    float ones[16], res[4];
    for (int i = 0; i < 16; i++) ones[i] = 1.0f;
    int64_t god[4] = {1, 1, 4, 4}, ind[4] = {1, 1, 2, 2}, osz[2] = {4, 4};
    dtensor go = make_tensor(god, 4, ACL_FLOAT, ones), out = make_tensor(ind, 4, ACL_FLOAT, NULL);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws;
    aclOpExecutor *ex;
    int64_t objects = aclemuLiveObjects(), launches = aclemuLaunchCount();
    aclemuFailNextLaunch(ACL_ERROR_RT_AICORE_EXCEPTION);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, out.t, &ws, &ex), 0);
    EXPECT(run_phase2(aclnnUpsampleNearestExact2dBackward, ws, ex), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(aclemuLiveObjects() == objects && aclemuLaunchCount() == launches);

    aclemuFailNextSync(507046);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, out.t, &ws, &ex), 0);
    EXPECT(run_phase2(aclnnUpsampleNearestExact2dBackward, ws, ex), 507046);
    EXPECT(aclrtSynchronizeStream(stream), 0);

    /* a slow stream: a synchronous copy without a sync reads stale data (the NaN fill) */
    EXPECT(aclrtMemset(out.dev, out.bytes, 0xFF, out.bytes), 0);
    aclemuSetStreamDelayUs(100000);
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, out.t, &ws, &ex), 0);
    void *w;
    EXPECT(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclnnUpsampleNearestExact2dBackward(w, ws, ex, stream), 0);
    EXPECT(aclrtMemcpy(res, sizeof res, out.dev, sizeof res, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(isnan(res[0]));
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclrtMemcpy(res, sizeof res, out.dev, sizeof res, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(res[0] == 4.0f && res[3] == 4.0f);
    /* memory freed before the stream ran: reported by the next synchronize, nothing touched */
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go.t, os, is, 0, 0, out.t, &ws, &ex), 0);
    EXPECT(aclnnUpsampleNearestExact2dBackward(w, ws, ex, stream), 0);
    int64_t referenced = aclemuReferencedFrees();
    EXPECT(aclrtFree(w), 0);
    CHECK(aclemuReferencedFrees() == referenced + 1); /* the workspace of a queued kernel */
    EXPECT(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
    aclemuResetFaults();
    CHECK(aclemuLaunchCount() == 0 && aclemuLastLaunchDeterministic() == -1);

    drop_tensor(&go);
    drop_tensor(&out);
    EXPECT(aclDestroyIntArray(os), 0);
    EXPECT(aclDestroyIntArray(is), 0);
}

int main(void)
{
    verbose = getenv("SMOKE_VERBOSE") != NULL;
    test_runtime();
    test_memory();
    test_nearest2d();
    test_nearest1d_fp16();
    test_bilinear();
    test_faults();

    EXPECT(aclrtDestroyStream(stream), 0);
    EXPECT(aclrtDestroyStream(stream), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK(aclemuLiveStreams() == 0 && aclemuLiveAllocations() == 0 && aclemuLiveBytes() == 0 &&
          aclemuLiveObjects() == 0);
    /* every other free came after a sync */
    CHECK(aclemuReferencedFrees() == 1 && aclemuPendingTasks() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    return check_report("smoke");
}
