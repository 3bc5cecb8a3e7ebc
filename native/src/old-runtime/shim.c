/*
 * build/old-runtime/libascendcl.so: the runtime as an older CANN release presents it, without
 * aclrtCtxSetSysParamOpt/aclrtCtxGetSysParamOpt, aclrtGetSocName and aclGetRecentErrMsg, so that a
 * binding can prove those symbols optional. It holds no state of its own: every other entry point
 * forwards to the full emulated runtime, opened RTLD_LOCAL from libaclemu_core.so next to this file
 * (a symlink to ../libascendcl.so). So the core stays out of this library's dlsym scope (the omitted
 * symbols stay absent), while a process that also opened the main folder shares one runtime with it
 * (the loader identifies the core by inode). The internal aclemu_* entry points are forwarded too,
 * so libnnopbase/libopapi work whichever file they bind to as "libascendcl.so".
 */
#define _GNU_SOURCE /* dladdr */
#include "internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_API __attribute__((visibility("default")))

/* Every forwarded function: F(return type, name, (parameters), (arguments)); V() for void ones. */
#define SHIM_FUNCTIONS(F, V)                                                                                   \
    F(aclError, aclInit, (const char *configPath), (configPath))                                           \
    F(aclError, aclFinalize, (void), ())                                                                   \
    F(aclError, aclFinalizeReference, (uint64_t * refCount), (refCount))                                   \
    F(aclError, aclrtSetDevice, (int32_t deviceId), (deviceId))                                            \
    F(aclError, aclrtResetDevice, (int32_t deviceId), (deviceId))                                          \
    F(aclError, aclrtGetDeviceCount, (uint32_t * count), (count))                                          \
    F(aclError, aclrtGetCurrentContext, (aclrtContext * context), (context))                               \
    F(aclError, aclrtSetCurrentContext, (aclrtContext context), (context))                                 \
    F(aclError, aclrtCreateStream, (aclrtStream * stream), (stream))                                       \
    F(aclError, aclrtDestroyStream, (aclrtStream stream), (stream))                                        \
    F(aclError, aclrtSynchronizeStream, (aclrtStream stream), (stream))                                    \
    F(aclError, aclrtMalloc, (void **devPtr, size_t size, aclrtMemMallocPolicy policy), (devPtr, size, policy)) \
    F(aclError, aclrtFree, (void *devPtr), (devPtr))                                                       \
    F(aclError, aclrtMemcpy, (void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind), \
      (dst, destMax, src, count, kind))                                                                    \
    F(aclError, aclrtMemcpyAsync,                                                                          \
      (void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream), \
      (dst, destMax, src, count, kind, stream))                                                            \
    F(aclError, aclrtMemset, (void *devPtr, size_t maxCount, int32_t value, size_t count),                 \
      (devPtr, maxCount, value, count))                                                                    \
    F(aclError, aclrtGetMemInfo, (aclrtMemAttr attr, size_t * freeBytes, size_t * totalBytes),             \
      (attr, freeBytes, totalBytes))                                                                       \
    F(aclError, aclrtSetSysParamOpt, (aclSysParamOpt opt, int64_t value), (opt, value))                    \
    F(aclError, aclrtGetSysParamOpt, (aclSysParamOpt opt, int64_t * value), (opt, value))                  \
    F(aclError, aclrtGetVersion, (int32_t * major, int32_t * minor, int32_t * patch), (major, minor, patch)) \
    F(aclError, aclrtCreateEvent, (aclrtEvent * event), (event))                                           \
    F(aclError, aclrtCreateEventWithFlag, (aclrtEvent * event, uint32_t flag), (event, flag))              \
    F(aclError, aclrtDestroyEvent, (aclrtEvent event), (event))                                            \
    F(aclError, aclrtRecordEvent, (aclrtEvent event, aclrtStream stream), (event, stream))                 \
    F(aclError, aclrtQueryEventStatus, (aclrtEvent event, aclrtEventRecordedStatus * status), (event, status)) \
    F(aclError, aclrtSynchronizeEvent, (aclrtEvent event), (event))                                        \
    F(aclError, aclrtEventElapsedTime, (float *ms, aclrtEvent startEvent, aclrtEvent endEvent),            \
      (ms, startEvent, endEvent))                                                                          \
    F(int64_t, aclemuLiveAllocations, (void), ())                                                          \
    F(int64_t, aclemuLiveBytes, (void), ())                                                                \
    F(int64_t, aclemuLiveObjects, (void), ())                                                              \
    F(int64_t, aclemuLiveStreams, (void), ())                                                              \
    V(aclemuFailAllocation, (int64_t n), (n))                                                              \
    V(aclemuFailNextLaunch, (int32_t status), (status))                                                    \
    V(aclemuFailNextSync, (int32_t status), (status))                                                      \
    V(aclemuFailNextCopy, (int32_t status), (status))                                                      \
    V(aclemuSetStreamDelayUs, (int64_t us), (us))                                                          \
    V(aclemuSetDeviceMemory, (int64_t bytes), (bytes))                                                     \
    F(int64_t, aclemuDeviceMemory, (void), ())                                                             \
    F(int64_t, aclemuReferencedFrees, (void), ())                                                          \
    F(const char *, aclemuLastReferencedFree, (void), ())                                                  \
    F(int64_t, aclemuPendingTasks, (void), ())                                                             \
    F(int64_t, aclemuInitRefCount, (void), ())                                                             \
    F(int64_t, aclemuFinalizeCount, (void), ())                                                            \
    F(int64_t, aclemuLiveEvents, (void), ())                                                               \
    V(aclemuFailNextEvent, (int32_t status), (status))                                                     \
    F(int64_t, aclemuLaunchCount, (void), ())                                                              \
    F(int32_t, aclemuLastLaunchDeterministic, (void), ())                                                  \
    V(aclemuResetFaults, (void), ())                                                                       \
    F(const char *, aclemuLastKernel, (void), ())                                                          \
    F(int64_t, aclemuKernelLaunches, (const char *name), (name))                                           \
    V(aclemuSetAtomicSeed, (uint64_t seed), (seed))                                                        \
    F(uint64_t, aclemuAtomicSeed, (void), ())                                                              \
    V(aclemuSetFmaContraction, (int32_t on), (on))                                                         \
    F(int32_t, aclemuFmaContraction, (void), ())                                                           \
    V(aclemuSetTbeFma, (int32_t on), (on))                                                                 \
    F(int32_t, aclemuTbeFma, (void), ())                                                                   \
    V(aclemuSetTbeZeroWeightFault, (int32_t on), (on))                                                     \
    F(int32_t, aclemuTbeZeroWeightFault, (void), ())                                                       \
    V(aclemuSetForwardShiftFault, (int32_t on), (on))                                                      \
    F(int32_t, aclemuForwardShiftFault, (void), ())                                                        \
    V(aclemuSetUlpFault, (int32_t on), (on))                                                               \
    F(int32_t, aclemuUlpFault, (void), ())                                                                 \
    F(int32_t, aclemuNpuArch, (void), ())                                                                  \
    V(aclemu_objects_add, (int64_t delta), (delta))                                                        \
    F(int, aclemu_current_context, (int32_t * device, int64_t * deterministic), (device, deterministic))   \
    F(int, aclemu_mem_find, (const void *p, uintptr_t *base, uint64_t *size), (p, base, size))             \
    F(int32_t, aclemu_stream_device, (aclrtStream stream), (stream))                                       \
    F(int, aclemu_stream_enqueue, (aclrtStream stream, const emu_task *task), (stream, task))              \
    F(int32_t, aclemu_fault_take_launch, (void), ())                                                       \
    V(aclemu_note_launch, (int64_t deterministic), (deterministic))                                        \
    F(int64_t, aclemu_process_opt, (int32_t opt), (opt))                                                   \
    F(const char *, aclemu_soc, (void), ())                                                                \
    V(aclemu_note_kernel, (const char *name), (name))                                                      \
    F(uint64_t, aclemu_atomic_seed_take, (void), ())                                                       \
    F(int32_t, aclemu_fma_contraction, (void), ())                                                         \
    F(int32_t, aclemu_tbe_fma, (void), ())                                                                 \
    F(int32_t, aclemu_tbe_zero_weight_fault, (void), ())                                                   \
    F(int32_t, aclemu_forward_shift_fault, (void), ())                                                     \
    F(int32_t, aclemu_ulp_fault, (void), ())                                                               \
    F(const aclemu_soc_row *, aclemu_soc_facts, (void), ())

#define SLOT(ret, name, params, args) ret(*name) params;
#define VSLOT(name, params, args) void(*name) params;
static struct {
    SHIM_FUNCTIONS(SLOT, VSLOT)
    void (*aclemu_set_error)(const char *fmt, ...);
} core;

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The core's path: libaclemu_core.so in this library's own folder. */
static void load(void)
{
    Dl_info info;
    char path[4096];
    if (dladdr((void *)&load, &info) == 0 || info.dli_fname == NULL) {
        fprintf(stderr, "aclemu old-runtime: cannot locate its own file\n");
        abort();
    }
    const char *slash = strrchr(info.dli_fname, '/');
    int dir = slash != NULL ? (int)(slash - info.dli_fname) : 1;
    snprintf(path, sizeof path, "%.*s/libaclemu_core.so", dir, slash != NULL ? info.dli_fname : ".");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "aclemu old-runtime: cannot open the emulated runtime %s: %s\n", path, dlerror());
        abort();
    }
#define RESOLVE(ret, name, params, args) *(void **)&core.name = dlsym(h, #name);
#define VRESOLVE(name, params, args) *(void **)&core.name = dlsym(h, #name);
    SHIM_FUNCTIONS(RESOLVE, VRESOLVE)
    *(void **)&core.aclemu_set_error = dlsym(h, "aclemu_set_error");
}

/* Loaded with the library, so that the core is in place before libnnopbase/libopapi bind to it. */
__attribute__((constructor)) static void shim_init(void) { pthread_once(&once, load); }

#define FORWARD(ret, name, params, args) \
    SHIM_API ret name params { return core.name args; }
#define VFORWARD(name, params, args) \
    SHIM_API void name params { core.name args; }
SHIM_FUNCTIONS(FORWARD, VFORWARD)

SHIM_API void aclemu_set_error(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    core.aclemu_set_error("%s", buf);
}
