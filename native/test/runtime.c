/*
 * Runtime rules of the emulation (device memory capacity, init reference counting, system options,
 * SoC name, referenced frees, copy kinds, events, the old-runtime folder). Each block states the
 * rule it proves. Run by `make test` twice: with no ACLEMU_* variables, and with
 * ACLEMU_DEVICE_MEMORY / ACLEMU_SOC set (the expectations follow the environment). Usage:
 * runtime <build dir>.
 */
#include "aclemu.h"
#include "cann_subset.h"
#include "check.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Expects `status`; for a failure also a message, returned (cleared) into last_msg. */
static char last_msg[1024];
#define EXPECT(expr, status)                                                                          \
    do {                                                                                              \
        int rc_ = (int)(expr);                                                                        \
        const char *m_ = aclGetRecentErrMsg();                                                        \
        snprintf(last_msg, sizeof last_msg, "%s", m_ ? m_ : "");                                      \
        checks++;                                                                                     \
        if (rc_ != (status) || ((status) != 0 && last_msg[0] == '\0')) {                              \
            failures++;                                                                               \
            fprintf(stderr, "FAIL %s:%d: %s -> %d, expected %d (%s)\n", __FILE__, __LINE__, #expr, rc_, \
                    (status), last_msg[0] ? last_msg : "no message");                                 \
        }                                                                                             \
    } while (0)

static aclrtStream stream;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static uint64_t expected_capacity(void)
{
    const char *env = getenv("ACLEMU_DEVICE_MEMORY");
    return env != NULL ? strtoull(env, NULL, 10) : (UINT64_C(4) << 30);
}

/* aclInit is reference counted; aclFinalize ignores the count (acl.cpp). */
static void test_init_refcount(void)
{
    int64_t fin0 = aclemuFinalizeCount();
    /* a malformed capacity is refused by aclInit, naming the variable */
    const char *saved = getenv("ACLEMU_DEVICE_MEMORY");
    char keep[64] = "";
    if (saved != NULL) {
        snprintf(keep, sizeof keep, "%s", saved);
    }
    setenv("ACLEMU_DEVICE_MEMORY", "4GiB", 1);
    EXPECT(aclInit(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(strstr(last_msg, "ACLEMU_DEVICE_MEMORY") != NULL);
    CHECK(aclemuInitRefCount() == 0);
    if (saved != NULL) {
        setenv("ACLEMU_DEVICE_MEMORY", keep, 1);
    } else {
        unsetenv("ACLEMU_DEVICE_MEMORY");
    }

    EXPECT(aclInit(NULL), 0);
    CHECK(aclemuInitRefCount() == 1);
    EXPECT(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE); /* another in-process user */
    CHECK(aclemuInitRefCount() == 2);
    uint64_t refs = 99;
    EXPECT(aclFinalizeReference(&refs), 0); /* drops one: ACL stays up */
    CHECK(refs == 1 && aclemuInitRefCount() == 1);
    uint32_t n = 0;
    EXPECT(aclrtGetDeviceCount(&n), 0);
    EXPECT(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    /* aclFinalize by the caller whose aclInit answered 100002 tears ACL down for the owner too */
    EXPECT(aclFinalize(), 0);
    CHECK(aclemuFinalizeCount() == fin0 + 1);
    CHECK(aclemuInitRefCount() == 0);
    EXPECT(aclrtGetDeviceCount(&n), ACL_ERROR_UNINITIALIZE);
    EXPECT(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    EXPECT(aclFinalizeReference(&refs), ACL_ERROR_REPEAT_FINALIZE);
    CHECK(refs == 0);
    CHECK(aclemuFinalizeCount() == fin0 + 1); /* the refused one does not count */
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclFinalize(), 0);
    CHECK(aclemuFinalizeCount() == fin0 + 2);
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclFinalizeReference(NULL), 0); /* the last reference tears down */
    EXPECT(aclrtGetDeviceCount(&n), ACL_ERROR_UNINITIALIZE);
    EXPECT(aclInit(NULL), 0);
}

/* 107021 before any set in a context; a ctx set is also seen process-wide (api_c.cc). */
static void test_sys_params_and_soc(void)
{
    int64_t v = -5;
    EXPECT(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET);
    CHECK(v == -5);
    EXPECT(aclrtCtxGetSysParamOpt(ACL_OPT_STRONG_CONSISTENCY, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET);
    EXPECT(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), 0);
    EXPECT(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), 0);
    CHECK(v == 1);
    EXPECT(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), 0);
    CHECK(v == 1);
    EXPECT(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), 0);
    EXPECT(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), 0);
    CHECK(v == 0);
    /* the context dies with the last reset: a new one has nothing set */
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_ERROR_RT_SYSPARAMOPT_NOT_SET);

    const char *env = getenv("ACLEMU_SOC");
    const char *soc = aclrtGetSocName();
    if (env != NULL && env[0] == '\0') {
        CHECK(soc == NULL);
    } else {
        CHECK(soc != NULL && strcmp(soc, env != NULL ? env : "Ascend910B3") == 0);
    }
}

/* Capacity, aclrtGetMemInfo, 207001 with bytes requested and free, the host guard. */
static void test_capacity(void)
{
    uint64_t cap = expected_capacity();
    size_t freeb = 0, total = 0;
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, &freeb, &total), 0);
    CHECK(total == cap && aclemuDeviceMemory() == (int64_t)cap);
    CHECK(freeb == total); /* nothing allocated yet */
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &total), ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtGetMemInfo((aclrtMemAttr)99, &freeb, &total), ACL_ERROR_RT_PARAM_INVALID);

    void *a = NULL, *b = NULL;
    EXPECT(aclrtMalloc(&a, 1000, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    size_t free1 = 0;
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total), 0);
    CHECK(free1 == freeb - 1024); /* charged rounded up to 32 bytes */
    /* more than is free: 207001, message with the bytes requested and free */
    EXPECT(aclrtMalloc(&b, (size_t)free1 + 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    char want[128];
    snprintf(want, sizeof want, "requested %zu bytes, %zu bytes free", (size_t)free1 + 1, free1);
    CHECK(strstr(last_msg, want) != NULL);
    if (cap <= (UINT64_C(8) << 30)) {
        EXPECT(aclrtMalloc(&b, (size_t)8 << 30, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    }
    /* the control overrides the capacity at run time; <= 0 restores it */
    aclemuSetDeviceMemory(4096);
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, &freeb, &total), 0);
    CHECK(total == 4096 && freeb == 4096 - 1024);
    EXPECT(aclrtMalloc(&b, 3073, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    EXPECT(aclrtMalloc(&b, 3072, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtFree(b), 0);
    /* no capacity lets the emulation take host memory beyond half of RAM: 64 TiB fails, unallocated */
    aclemuSetDeviceMemory(INT64_C(1) << 50);
    EXPECT(aclrtMalloc(&b, (size_t)1 << 46, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(strstr(last_msg, "half of host memory") != NULL);
    aclemuSetDeviceMemory(0);
    CHECK(aclemuDeviceMemory() == (int64_t)cap);
    /* per device: device 1 is untouched */
    EXPECT(aclrtSetDevice(1), 0);
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, &freeb, &total), 0);
    CHECK(freeb == total && total == cap);
    EXPECT(aclrtResetDevice(1), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtFree(a), 0);
    EXPECT(aclrtGetMemInfo(ACL_HBM_MEM, &freeb, &total), 0);
    CHECK(freeb == total);
}

/* A kind that disagrees with where the pointers live is 107000 (api_error.cc). */
static void test_copy_kinds(void)
{
    void *d1 = NULL, *d2 = NULL;
    char h1[64] = {1}, h2[64] = {0};
    EXPECT(aclrtMalloc(&d1, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMalloc(&d2, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpy(d1, 64, h1, 64, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(strstr(last_msg, "dst") != NULL && strstr(last_msg, "device memory") != NULL);
    EXPECT(aclrtMemcpy(h2, 64, d1, 64, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(d2, 64, d1, 64, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(d2, 64, d1, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(d2, 64, d1, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(h2, 64, h1, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpy(d1, 64, h1, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpyAsync(d2, 64, d1, 64, ACL_MEMCPY_HOST_TO_HOST, stream), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtMemcpyAsync(h2, 64, d1, 64, ACL_MEMCPY_HOST_TO_HOST, stream), ACL_ERROR_RT_PARAM_INVALID);
    /* the kinds that agree */
    EXPECT(aclrtMemcpy(h2, 64, h1, 64, ACL_MEMCPY_HOST_TO_HOST), 0);
    CHECK(h2[0] == 1);
    EXPECT(aclrtMemcpy(d1, 64, h1, 64, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    EXPECT(aclrtMemcpy(d2, 64, d1, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), 0);
    h2[0] = 0;
    EXPECT(aclrtMemcpy(h2, 64, d2, 64, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    CHECK(h2[0] == 1);
    EXPECT(aclrtFree(d1), 0);
    EXPECT(aclrtFree(d2), 0);
}

/* An op launch with a workspace on `stream`; returns its executor's workspace size. */
static uint64_t launch_op(void *go, void *out, void **ws_out)
{
    int64_t god[4] = {1, 1, 4, 4}, ind[4] = {1, 1, 2, 2}, osz[2] = {4, 4};
    int64_t gos[4] = {16, 16, 4, 1}, ins[4] = {4, 4, 2, 1}, gon = 16, inn = 4;
    aclTensor *tg = aclCreateTensor(god, 4, ACL_FLOAT, gos, 0, ACL_FORMAT_NCHW, &gon, 1, go);
    aclTensor *to = aclCreateTensor(ind, 4, ACL_FLOAT, ins, 0, ACL_FORMAT_NCHW, &inn, 1, out);
    aclIntArray *os = aclCreateIntArray(osz, 2), *is = aclCreateIntArray(ind, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    EXPECT(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(tg, os, is, 0, 0, to, &ws, &ex), 0);
    *ws_out = NULL;
    if (ws > 0) {
        EXPECT(aclrtMalloc(ws_out, ws, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    }
    EXPECT(aclnnUpsampleNearestExact2dBackward(*ws_out, ws, ex, stream), 0);
    aclDestroyTensor(tg);
    aclDestroyTensor(to);
    aclDestroyIntArray(os);
    aclDestroyIntArray(is);
    return ws;
}

/* Frees of memory a task references before the host observed it complete are counted, timing aside. */
static void test_referenced_frees(void)
{
    int64_t r0 = aclemuReferencedFrees();
    char host[256] = {0};
    void *d = NULL;

    /* queued (the stream is slow): counted, and the task then faults at the next synchronize */
    aclemuSetStreamDelayUs(20000);
    EXPECT(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpyAsync(d, 256, host, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream), 0);
    CHECK(aclemuPendingTasks() == 1);
    EXPECT(aclrtFree(d), 0);
    CHECK(aclemuReferencedFrees() == r0 + 1);
    CHECK(strstr(aclemuLastReferencedFree(), "aclrtMemcpyAsync") != NULL);
    aclemuSetStreamDelayUs(0);
    EXPECT(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK(aclemuPendingTasks() == 0);

    /* already run but never synchronized: counted all the same (no timing involved) */
    EXPECT(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpyAsync(host, 256, d, 256, ACL_MEMCPY_DEVICE_TO_HOST, stream), 0);
    sleep_ms(30);
    CHECK(aclemuPendingTasks() == 1);
    EXPECT(aclrtFree(d), 0);
    CHECK(aclemuReferencedFrees() == r0 + 2);
    CHECK(strstr(aclemuLastReferencedFree(), "not synchronized") != NULL);
    EXPECT(aclrtSynchronizeStream(stream), 0);

    /* the correct orders: synchronize the stream, or an event recorded after the task */
    EXPECT(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpyAsync(host, 256, d, 256, ACL_MEMCPY_DEVICE_TO_HOST, stream), 0);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclrtFree(d), 0);
    aclrtEvent ev = NULL;
    EXPECT(aclrtCreateEvent(&ev), 0);
    EXPECT(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpyAsync(host, 256, d, 256, ACL_MEMCPY_DEVICE_TO_HOST, stream), 0);
    EXPECT(aclrtRecordEvent(ev, stream), 0);
    EXPECT(aclrtSynchronizeEvent(ev), 0);
    CHECK(aclemuPendingTasks() == 0);
    EXPECT(aclrtFree(d), 0);
    /* an event recorded BEFORE the task does not cover it */
    EXPECT(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtRecordEvent(ev, stream), 0);
    EXPECT(aclrtMemcpyAsync(host, 256, d, 256, ACL_MEMCPY_DEVICE_TO_HOST, stream), 0);
    EXPECT(aclrtSynchronizeEvent(ev), 0);
    EXPECT(aclrtFree(d), 0);
    CHECK(aclemuReferencedFrees() == r0 + 3);
    aclrtSynchronizeStream(stream); /* 0, or 507015 if the copy ran after the free: timing */
    (void)aclGetRecentErrMsg();
    EXPECT(aclrtDestroyEvent(ev), 0);

    /* a queued kernel's workspace (the growth bug: free the old workspace, allocate a bigger one) */
    void *go = NULL, *out = NULL, *ws = NULL;
    EXPECT(aclrtMalloc(&go, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMalloc(&out, 16, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemset(go, 64, 0, 64), 0);
    CHECK(launch_op(go, out, &ws) > 0);
    EXPECT(aclrtFree(ws), 0);
    CHECK(aclemuReferencedFrees() == r0 + 4);
    CHECK(strstr(aclemuLastReferencedFree(), "workspace") != NULL);
    aclrtSynchronizeStream(stream); /* 0, or 507015 if the kernel ran after the free: timing */
    (void)aclGetRecentErrMsg();
    /* and done right: synchronize first */
    launch_op(go, out, &ws);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    EXPECT(aclrtFree(ws), 0);
    /* freeing the op's output while it is pending is caught too */
    launch_op(go, out, &ws);
    EXPECT(aclrtFree(out), 0);
    CHECK(aclemuReferencedFrees() == r0 + 5 && strstr(aclemuLastReferencedFree(), "out") != NULL);
    aclrtSynchronizeStream(stream);
    (void)aclGetRecentErrMsg();
    EXPECT(aclrtFree(ws), 0);
    EXPECT(aclrtFree(go), 0);
    /* a stream destroy drains it: what it ran is observed */
    aclrtStream s2 = NULL;
    EXPECT(aclrtCreateStream(&s2), 0);
    EXPECT(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    EXPECT(aclrtMemcpyAsync(host, 256, d, 256, ACL_MEMCPY_DEVICE_TO_HOST, s2), 0);
    EXPECT(aclrtDestroyStream(s2), 0);
    EXPECT(aclrtFree(d), 0);
    CHECK(aclemuReferencedFrees() == r0 + 5);
}

/* Events on the stream FIFO, timed by the worker clock; errors as the runtime; faults; counting. */
static void test_events(void)
{
    int64_t live0 = aclemuLiveEvents();
    aclrtEvent a = NULL, b = NULL, c = NULL;
    EXPECT(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtCreateEvent(&a), 0);
    EXPECT(aclrtCreateEventWithFlag(&b, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC), 0);
    EXPECT(aclrtCreateEventWithFlag(&c, 0x4), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclemuLiveEvents() == live0 + 2);

    float ms = -1;
    EXPECT(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_INTERNAL_ERROR); /* never recorded */
    EXPECT(aclrtEventElapsedTime(NULL, a, b), ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtSynchronizeEvent(a), 0); /* never recorded: nothing to wait for */
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    EXPECT(aclrtQueryEventStatus(a, &st), 0);
    CHECK(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);

    /* a 30 ms task between the records: the elapsed time is the time it ran on the stream */
    void *d = NULL;
    char host[64] = {0};
    EXPECT(aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    aclemuSetStreamDelayUs(30000);
    EXPECT(aclrtRecordEvent(a, stream), 0);
    EXPECT(aclrtMemcpyAsync(d, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, stream), 0);
    EXPECT(aclrtRecordEvent(b, stream), 0);
    EXPECT(aclrtQueryEventStatus(b, &st), 0);
    CHECK(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    EXPECT(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID); /* not reached yet */
    sleep_ms(5); /* the host waits, the stream keeps working: host time is not stream time */
    EXPECT(aclrtSynchronizeEvent(b), 0);
    EXPECT(aclrtQueryEventStatus(b, &st), 0);
    CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    EXPECT(aclrtEventElapsedTime(&ms, a, b), 0);
    CHECK(ms >= 30.0f && ms < 1000.0f);
    aclemuSetStreamDelayUs(0);
    /* back to back records with nothing between: (almost) no stream time */
    EXPECT(aclrtRecordEvent(a, stream), 0);
    EXPECT(aclrtRecordEvent(b, stream), 0);
    EXPECT(aclrtSynchronizeEvent(b), 0);
    EXPECT(aclrtEventElapsedTime(&ms, a, b), 0);
    CHECK(ms >= 0.0f && ms < 5.0f);

    /* fault injection: the next event call fails with the armed status, without effect */
    aclemuFailNextEvent(ACL_ERROR_RT_INTERNAL_ERROR);
    EXPECT(aclrtCreateEvent(&c), ACL_ERROR_RT_INTERNAL_ERROR);
    CHECK(aclemuLiveEvents() == live0 + 2);
    aclemuFailNextEvent(507899);
    EXPECT(aclrtRecordEvent(a, stream), 507899);
    aclemuFailNextEvent(507899);
    EXPECT(aclrtSynchronizeEvent(a), 507899);
    aclemuFailNextEvent(507899);
    EXPECT(aclrtEventElapsedTime(&ms, a, b), 507899);
    aclemuFailNextEvent(507899);
    EXPECT(aclrtDestroyEvent(a), 0); /* destroy is never failed */
    EXPECT(aclrtQueryEventStatus(b, &st), 507899);
    aclemuResetFaults();

    /* handles */
    EXPECT(aclrtRecordEvent(a, stream), ACL_ERROR_RT_INVALID_HANDLE); /* destroyed */
    EXPECT(aclrtDestroyEvent(a), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT(aclrtDestroyEvent(NULL), ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtRecordEvent(b, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    /* destroyed while its record is pending: the stream still runs it safely */
    aclemuSetStreamDelayUs(10000);
    EXPECT(aclrtMemcpyAsync(d, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, stream), 0);
    EXPECT(aclrtRecordEvent(b, stream), 0);
    EXPECT(aclrtDestroyEvent(b), 0);
    CHECK(aclemuLiveEvents() == live0);
    EXPECT(aclrtSynchronizeStream(stream), 0);
    aclemuSetStreamDelayUs(0);
    EXPECT(aclrtFree(d), 0);
}

/* build/old-runtime: loads, lacks the four symbols, shares the one runtime of this process. */
static void test_old_runtime(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/old-runtime/libascendcl.so", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h == NULL) {
        fprintf(stderr, "  %s\n", dlerror());
        return;
    }
    CHECK(dlsym(h, "aclrtCtxSetSysParamOpt") == NULL && dlsym(h, "aclrtCtxGetSysParamOpt") == NULL);
    CHECK(dlsym(h, "aclrtGetSocName") == NULL && dlsym(h, "aclGetRecentErrMsg") == NULL);
    aclError (*init)(const char *) = (aclError(*)(const char *))dlsym(h, "aclInit");
    int64_t (*refs)(void) = (int64_t(*)(void))dlsym(h, "aclemuInitRefCount");
    aclError (*fin_ref)(uint64_t *) = (aclError(*)(uint64_t *))dlsym(h, "aclFinalizeReference");
    CHECK(init != NULL && refs != NULL && fin_ref != NULL && dlsym(h, "aclrtGetMemInfo") != NULL &&
          dlsym(h, "aclrtEventElapsedTime") != NULL);
    if (init != NULL && refs != NULL && fin_ref != NULL) {
        /* this process's ACL is initialized: the old folder sees the same runtime */
        CHECK(init(NULL) == ACL_ERROR_REPEAT_INITIALIZE);
        CHECK(refs() == 2 && aclemuInitRefCount() == 2);
        CHECK(fin_ref(NULL) == 0 && aclemuInitRefCount() == 1);
        (void)aclGetRecentErrMsg();
    }
    snprintf(path, sizeof path, "%s/old-runtime/libopapi.so", dir);
    void *ops = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(ops != NULL && dlsym(ops, "aclnnUpsampleNearestExact2dBackward") != NULL);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build";
    test_init_refcount();
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    test_sys_params_and_soc();
    test_capacity();
    test_copy_kinds();
    test_referenced_frees();
    test_events();
    test_old_runtime(dir);
    EXPECT(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveStreams() == 0 && aclemuLiveAllocations() == 0 && aclemuLiveEvents() == 0 &&
          aclemuPendingTasks() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    return check_report("runtime");
}
