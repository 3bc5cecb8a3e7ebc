/*
 * Concurrency and multi-library test of the CANN host emulation. Usage: stress <build dir>.
 * Checks that the variant libDirs (no-v2, no-1d) lack their symbols and share the main runtime;
 * threads on both devices launching ops on their own streams while a churn thread creates and
 * destroys streams and allocations; a stream destroyed with delayed work queued (it must drain);
 * a launch on another device's stream (107003); thread-level versus process-level (aclInit config
 * "err_msg_mode") error messages.
 */
#include "aclemu.h"
#include "cann_subset.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int failures;
#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                                  \
            const char *m_ = aclGetRecentErrMsg();                                               \
            fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, m_ ? m_ : "-"); \
        }                                                                                        \
    } while (0)

enum { WORKERS = 4, ROUNDS = 40, BATCH = 5 };

/* [2, 3, 8, 8] of ones -> [2, 3, 4, 4]: every input cell receives 4. */
static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    CHECK(aclrtSetDevice(id % 2) == 0);
    aclrtStream s;
    CHECK(aclrtCreateStream(&s) == 0);
    int64_t god[4] = {2, 3, 8, 8}, ind[4] = {2, 3, 4, 4}, osz[2] = {8, 8};
    int64_t gst[4] = {192, 64, 8, 1}, ost[4] = {48, 16, 4, 1}, gn = 384, on = 96;
    float g[384], r[96];
    for (int i = 0; i < 384; i++) g[i] = 1.0f;
    void *gd, *od;
    CHECK(aclrtMalloc(&gd, sizeof g, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
    CHECK(aclrtMalloc(&od, sizeof r, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
    CHECK(aclrtMemcpyAsync(gd, sizeof g, g, sizeof g, ACL_MEMCPY_HOST_TO_DEVICE, s) == 0);
    for (int round = 0; round < ROUNDS; round++) {
        aclTensor *go = aclCreateTensor(god, 4, ACL_FLOAT, gst, 0, ACL_FORMAT_NCHW, &gn, 1, gd);
        aclTensor *out = aclCreateTensor(ind, 4, ACL_FLOAT, ost, 0, ACL_FORMAT_NCHW, &on, 1, od);
        aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        void *w = NULL;
        CHECK(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(go, os, is, 0, 0, out, &ws, &ex) == 0);
        CHECK(aclSetAclOpExecutorRepeatable(ex) == 0);
        CHECK(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_NORMAL_ONLY) == 0);
        for (int k = 0; k < BATCH; k++) {
            CHECK(aclnnUpsampleNearestExact2dBackward(w, ws, ex, s) == 0);
        }
        CHECK(aclrtSynchronizeStream(s) == 0);
        CHECK(aclDestroyAclOpExecutor(ex) == 0);
        CHECK(aclrtFree(w) == 0);
        CHECK(aclDestroyTensor(go) == 0 && aclDestroyTensor(out) == 0);
        CHECK(aclDestroyIntArray(os) == 0 && aclDestroyIntArray(is) == 0);
        CHECK(aclrtMemcpy(r, sizeof r, od, sizeof r, ACL_MEMCPY_DEVICE_TO_HOST) == 0);
        int ok = 1;
        for (int i = 0; i < 96; i++) ok &= r[i] == 4.0f;
        CHECK(ok);
    }
    CHECK(aclrtDestroyStream(s) == 0);
    CHECK(aclrtFree(gd) == 0 && aclrtFree(od) == 0);
    CHECK(aclrtResetDevice(id % 2) == 0);
    return NULL;
}

static void *churn(void *arg)
{
    (void)arg;
    CHECK(aclrtSetDevice(1) == 0);
    for (int i = 0; i < 200; i++) {
        aclrtStream s;
        void *p;
        CHECK(aclrtCreateStream(&s) == 0);
        CHECK(aclrtMalloc(&p, (size_t)(i + 1) * 64, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
        CHECK(aclrtMemset(p, (size_t)(i + 1) * 64, 0, 64) == 0);
        CHECK(aclrtSynchronizeStream(s) == 0);
        CHECK(aclrtDestroyStream(s) == 0);
        CHECK(aclrtFree(p) == 0);
    }
    CHECK(aclrtResetDevice(1) == 0);
    return NULL;
}

static void test_drain_and_cross_device(void)
{
    CHECK(aclrtSetDevice(1) == 0);
    aclrtStream s1;
    CHECK(aclrtCreateStream(&s1) == 0);
    CHECK(aclrtSetDevice(0) == 0); /* the current context is device 0 now */
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0};
    void *d;
    CHECK(aclrtMalloc(&d, sizeof x, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
    aclemuSetStreamDelayUs(20000);
    CHECK(aclrtMemcpyAsync(d, sizeof x, x, sizeof x, ACL_MEMCPY_HOST_TO_DEVICE, s1) == 0);
    CHECK(aclrtMemcpyAsync(y, sizeof y, d, sizeof y, ACL_MEMCPY_DEVICE_TO_HOST, s1) == 0);
    CHECK(aclrtDestroyStream(s1) == 0); /* drains both copies first */
    aclemuSetStreamDelayUs(0);
    CHECK(y[0] == 1.0f && y[7] == 8.0f);

    /* an op launched on a device-1 stream from a device-0 context */
    CHECK(aclrtSetDevice(1) == 0);
    CHECK(aclrtCreateStream(&s1) == 0);
    CHECK(aclrtSetDevice(0) == 0);
    int64_t dims[3] = {1, 1, 2}, st[3] = {2, 2, 1}, n = 2, L = 2;
    aclTensor *t = aclCreateTensor(dims, 3, ACL_FLOAT, st, 0, ACL_FORMAT_NCL, &n, 1, d);
    aclIntArray *os = aclCreateIntArray(&L, 1), *is = aclCreateIntArray(dims, 3);
    uint64_t ws;
    aclOpExecutor *ex;
    CHECK(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(t, os, is, 0, t, &ws, &ex) == 0);
    CHECK(aclnnUpsampleNearestExact1dBackward(NULL, 0, ex, s1) == ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclGetRecentErrMsg() != NULL);
    CHECK(aclDestroyTensor(t) == 0 && aclDestroyIntArray(os) == 0 && aclDestroyIntArray(is) == 0);
    CHECK(aclrtDestroyStream(s1) == 0);
    CHECK(aclrtFree(d) == 0);
    CHECK(aclrtResetDevice(0) == 0 && aclrtResetDevice(0) == 0);
    CHECK(aclrtResetDevice(1) == 0 && aclrtResetDevice(1) == 0);
}

static void *fail_on_other_thread(void *arg)
{
    (void)arg;
    void *p;
    CHECK(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_INVALID_PARAM);
    return NULL;
}

static void test_err_msg_mode(void)
{
    pthread_t t;
    pthread_create(&t, NULL, fail_on_other_thread, NULL);
    pthread_join(t, NULL);
    CHECK(aclGetRecentErrMsg() == NULL); /* thread level (default): not visible here */
    CHECK(aclFinalize() == 0);
    CHECK(aclInit("/nonexistent/acl.json") == ACL_ERROR_INVALID_FILE && aclGetRecentErrMsg() != NULL);
    char path[] = "/tmp/aclemu-cfg-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "{\"err_msg_mode\": \"1\"}", 22) == 22);
    close(fd);
    CHECK(aclInit(path) == 0);
    unlink(path);
    pthread_create(&t, NULL, fail_on_other_thread, NULL);
    pthread_join(t, NULL);
    const char *m = aclGetRecentErrMsg(); /* process level: the pool thread's failure is visible */
    CHECK(m != NULL && m[0] != '\0');
    CHECK(aclGetRecentErrMsg() == NULL); /* obtained and cleared */
}

static void test_variants(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/no-v2/libascendcl.so", dir);
    void *acl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(acl != NULL && dlsym(acl, "aclemuLiveObjects") == (void *)aclemuLiveObjects); /* one runtime */
    snprintf(path, sizeof path, "%s/no-v2/libopapi.so", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL && dlsym(h, "aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize") == NULL &&
          dlsym(h, "aclnnUpsampleBilinear2dBackwardV2") == NULL &&
          dlsym(h, "aclnnUpsampleBilinear2dBackwardGetWorkspaceSize") != NULL);
    snprintf(path, sizeof path, "%s/no-1d/libopapi.so", dir);
    void *h1 = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h1 != NULL && dlsym(h1, "aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize") == NULL &&
          dlsym(h1, "aclnnUpsampleNearestExact1dBackward") == NULL &&
          dlsym(h1, "aclnnUpsampleNearestExact2dBackward") != NULL);
}

int main(int argc, char **argv)
{
    test_variants(argc > 1 ? argv[1] : "build");
    CHECK(aclInit(NULL) == 0);
    pthread_t th[WORKERS + 1];
    for (int i = 0; i < WORKERS; i++) {
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    }
    pthread_create(&th[WORKERS], NULL, churn, NULL);
    for (int i = 0; i <= WORKERS; i++) {
        pthread_join(th[i], NULL);
    }
    test_drain_and_cross_device();
    CHECK(aclemuLiveStreams() == 0 && aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    CHECK(aclemuLaunchCount() == WORKERS * ROUNDS * BATCH);
    test_err_msg_mode();
    CHECK(aclFinalize() == 0);
    printf("stress: %d failed\n", failures);
    return failures != 0;
}
