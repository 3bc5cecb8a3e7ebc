/*
 * aclInit/aclFinalize, devices and their default contexts, the per-thread current context, system
 * parameters, version and SoC name. One default context per device, refcounted by
 * aclrtSetDevice/aclrtResetDevice. A thread's current context is a (context, generation) pair:
 * destroying a context bumps its generation, so every thread that still points at it sees "none".
 *
 * aclInit is reference counted as in CANN (hicann/runtime src/acl/aclrt_impl/acl.cpp, aclInitImpl /
 * aclFinalizeImpl / aclFinalizeReferenceImpl): a repeated aclInit adds a reference and answers 100002;
 * aclFinalize ignores the count and tears ACL down for every user (then 100037 until the next aclInit);
 * aclFinalizeReference drops one reference and tears down only with the last.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t device;
    int refs;
    uint64_t gen;
    int64_t opts[EMU_SYS_OPT_COUNT];
    int opt_set[EMU_SYS_OPT_COUNT]; /* never-set options answer 107021 */
} emu_ctx;

static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int initialized;
static uint64_t init_refs;   /* guarded by rt_mu */
static int finalized;        /* aclFinalizeFlag: set by a teardown, cleared by the next aclInit */
static _Atomic int64_t finalize_count;
static emu_ctx ctxs[EMU_DEVICE_COUNT] = {{.device = 0}, {.device = 1}};
static int64_t process_opts[EMU_SYS_OPT_COUNT];

static _Thread_local emu_ctx *tl_ctx;
static _Thread_local uint64_t tl_gen;

static const char *const opt_names[EMU_SYS_OPT_COUNT] = {
    "ACL_OPT_DETERMINISTIC", "ACL_OPT_ENABLE_DEBUG_KERNEL", "ACL_OPT_STRONG_CONSISTENCY"};

int emu_require_init(const char *api)
{
    if (atomic_load(&initialized)) {
        return 0;
    }
    aclemu_set_error("%s: ACL is not initialized (call aclInit first)", api);
    return ACL_ERROR_UNINITIALIZE;
}

/* The calling thread's live context, or NULL. Caller holds rt_mu. */
static emu_ctx *current_locked(void)
{
    if (tl_ctx != NULL && tl_ctx->refs > 0 && tl_ctx->gen == tl_gen) {
        return tl_ctx;
    }
    return NULL;
}

static void reset_context_locked(emu_ctx *c)
{
    c->refs = 0;
    c->gen++;
    for (int i = 0; i < EMU_SYS_OPT_COUNT; i++) {
        c->opts[i] = 0;
        c->opt_set[i] = 0;
    }
}

int64_t aclemuInitRefCount(void)
{
    pthread_mutex_lock(&rt_mu);
    int64_t n = (int64_t)init_refs;
    pthread_mutex_unlock(&rt_mu);
    return n;
}

int64_t aclemuFinalizeCount(void) { return atomic_load(&finalize_count); }

/* The teardown shared by aclFinalize and the last aclFinalizeReference. Caller holds rt_mu. Resets
 * every device; allocations, streams and events stay so that leaks remain visible. */
static void teardown_locked(void)
{
    atomic_store(&initialized, 0);
    init_refs = 0;
    finalized = 1;
    for (int i = 0; i < EMU_DEVICE_COUNT; i++) {
        reset_context_locked(&ctxs[i]);
    }
}

aclError aclInit(const char *configPath)
{
    pthread_mutex_lock(&rt_mu);
    if (init_refs > 0) {
        init_refs++; /* acl.cpp aclInitImpl: a repeated init counts a reference and answers 100002 */
        pthread_mutex_unlock(&rt_mu);
        aclemu_set_error("aclInit: ACL is already initialized in this process (repeated aclInit; this "
                         "caller does not own the runtime and must not call aclFinalize)");
        return ACL_ERROR_REPEAT_INITIALIZE;
    }
    /* the settings the emulation honours: err_msg_mode (errors.c), ACLEMU_DEVICE_MEMORY (memory.c) */
    int rc = emu_errors_configure(configPath);
    if (rc == 0) {
        rc = emu_mem_configure();
    }
    if (rc == 0) {
        init_refs = 1;
        finalized = 0;
        atomic_store(&initialized, 1);
    }
    pthread_mutex_unlock(&rt_mu);
    return rc;
}

aclError aclFinalize(void)
{
    pthread_mutex_lock(&rt_mu);
    /* acl.cpp aclFinalizeImpl: only a finalize after a finalize is refused; the reference count is
     * ignored, so other aclInit callers lose the runtime too (counted: aclemuFinalizeCount). */
    int was_finalized = finalized;
    if (!was_finalized) {
        atomic_fetch_add(&finalize_count, 1);
        teardown_locked();
    }
    pthread_mutex_unlock(&rt_mu);
    if (was_finalized) {
        aclemu_set_error("aclFinalize: ACL is already finalized (repeated aclFinalize)");
        return ACL_ERROR_REPEAT_FINALIZE;
    }
    return ACL_SUCCESS;
}

aclError aclFinalizeReference(uint64_t *refCount)
{
    pthread_mutex_lock(&rt_mu);
    /* acl.cpp aclFinalizeReferenceImpl: drop one reference; the last one tears down; none is 100037 */
    uint64_t before = init_refs;
    if (before > 1) {
        init_refs--;
    } else if (before == 1) {
        teardown_locked();
    }
    uint64_t after = init_refs;
    pthread_mutex_unlock(&rt_mu);
    if (refCount != NULL) {
        *refCount = after;
    }
    if (before == 0) {
        aclemu_set_error("aclFinalizeReference: ACL holds no aclInit reference (called repeatedly, or "
                         "without aclInit)");
        return ACL_ERROR_REPEAT_FINALIZE;
    }
    return ACL_SUCCESS;
}

static int check_device_id(const char *api, int32_t deviceId)
{
    if (deviceId < 0 || deviceId >= EMU_DEVICE_COUNT) {
        aclemu_set_error("%s: deviceId %d is invalid: the emulation has %d devices (0..%d)", api, deviceId,
                         EMU_DEVICE_COUNT, EMU_DEVICE_COUNT - 1);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    return 0;
}

aclError aclrtSetDevice(int32_t deviceId)
{
    int rc = emu_require_init("aclrtSetDevice");
    if (rc == 0) {
        rc = check_device_id("aclrtSetDevice", deviceId);
    }
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&rt_mu);
    emu_ctx *c = &ctxs[deviceId];
    c->refs++;
    tl_ctx = c;
    tl_gen = c->gen;
    pthread_mutex_unlock(&rt_mu);
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    int rc = emu_require_init("aclrtResetDevice");
    if (rc == 0) {
        rc = check_device_id("aclrtResetDevice", deviceId);
    }
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&rt_mu);
    emu_ctx *c = &ctxs[deviceId];
    if (c->refs > 1) {
        c->refs--;
    } else if (c->refs == 1) {
        reset_context_locked(c); /* last reference: the default context is destroyed */
    }
    pthread_mutex_unlock(&rt_mu);
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count)
{
    int rc = emu_require_init("aclrtGetDeviceCount");
    if (rc != 0) {
        return rc;
    }
    if (count == NULL) {
        aclemu_set_error("aclrtGetDeviceCount: count is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    *count = EMU_DEVICE_COUNT;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context)
{
    int rc = emu_require_init("aclrtGetCurrentContext");
    if (rc != 0) {
        return rc;
    }
    if (context == NULL) {
        aclemu_set_error("aclrtGetCurrentContext: context is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&rt_mu);
    emu_ctx *c = current_locked();
    pthread_mutex_unlock(&rt_mu);
    if (c == NULL) {
        aclemu_set_error("aclrtGetCurrentContext: the calling thread has no current context "
                         "(call aclrtSetDevice or aclrtSetCurrentContext on this thread)");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    *context = c;
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context)
{
    int rc = emu_require_init("aclrtSetCurrentContext");
    if (rc != 0) {
        return rc;
    }
    if (context == NULL) {
        aclemu_set_error("aclrtSetCurrentContext: context is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&rt_mu);
    emu_ctx *c = NULL;
    for (int i = 0; i < EMU_DEVICE_COUNT; i++) {
        if (context == (aclrtContext)&ctxs[i] && ctxs[i].refs > 0) {
            c = &ctxs[i];
        }
    }
    if (c != NULL) {
        tl_ctx = c;
        tl_gen = c->gen;
    }
    pthread_mutex_unlock(&rt_mu);
    if (c == NULL) {
        aclemu_set_error("aclrtSetCurrentContext: context %p is not a live context "
                         "(its device was reset, or it was never returned by aclrtGetCurrentContext)",
                         context);
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    return ACL_SUCCESS;
}

EMU_API int aclemu_current_context(int32_t *device, int64_t *deterministic)
{
    pthread_mutex_lock(&rt_mu);
    emu_ctx *c = atomic_load(&initialized) ? current_locked() : NULL;
    if (c != NULL) {
        *device = c->device;
        *deterministic = c->opts[ACL_OPT_DETERMINISTIC];
    }
    pthread_mutex_unlock(&rt_mu);
    return c != NULL ? 0 : ACL_ERROR_RT_CONTEXT_NULL;
}

static int check_opt(const char *api, aclSysParamOpt opt)
{
    if ((int)opt < 0 || (int)opt >= EMU_SYS_OPT_COUNT) {
        aclemu_set_error("%s: opt %d is not a known aclSysParamOpt (0 DETERMINISTIC, 1 ENABLE_DEBUG_KERNEL, "
                         "2 STRONG_CONSISTENCY)",
                         api, (int)opt);
        return ACL_ERROR_INVALID_PARAM;
    }
    return 0;
}

/* The checks shared by the four option calls: ACL initialised, a value slot, a known option. */
static aclError opt_args(const char *api, aclSysParamOpt opt, const int64_t *value)
{
    int rc = emu_require_init(api);
    if (rc == 0 && value == NULL) {
        aclemu_set_error("%s: value is NULL", api);
        rc = ACL_ERROR_INVALID_PARAM;
    }
    return rc == 0 ? check_opt(api, opt) : rc;
}

/* Context-scope options: `value` is read (get) or written (set) under the runtime lock. */
static aclError ctx_opt(const char *api, aclSysParamOpt opt, int64_t *value, int set)
{
    int rc = opt_args(api, opt, value);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&rt_mu);
    emu_ctx *c = current_locked();
    int unset = 0;
    if (c != NULL) {
        if (set) {
            /* api_c.cc rtCtxSetSysParamOpt also stores the value process-wide (aclrtGetSysParamOpt) */
            c->opts[opt] = *value;
            c->opt_set[opt] = 1;
            process_opts[opt] = *value;
        } else if (c->opt_set[opt]) {
            *value = c->opts[opt];
        } else {
            unset = 1;
        }
    }
    pthread_mutex_unlock(&rt_mu);
    if (c == NULL) {
        aclemu_set_error("%s(%s): the calling thread has no current context (call aclrtSetDevice first)", api,
                         opt_names[opt]);
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    if (unset) {
        /* context.cc Context::CtxGetSysParamOpt + api_c.cc rtCtxGetSysParamOpt: an option never set in
         * this context answers ACL_ERROR_RT_SYSPARAMOPT_NOT_SET (rt_error_codes.h), value untouched */
        aclemu_set_error("%s(%s): the option was never set in this context", api, opt_names[opt]);
        return ACL_ERROR_RT_SYSPARAMOPT_NOT_SET;
    }
    return ACL_SUCCESS;
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value)
{
    return ctx_opt("aclrtCtxSetSysParamOpt", opt, &value, 1);
}

aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value)
{
    return ctx_opt("aclrtCtxGetSysParamOpt", opt, value, 0);
}

/* What aclrtGetSysParamOpt would answer, without its checks or an error message: the process-wide
 * value, or 0 before aclInit (opbase's GetDeterministicLevelFromRt treats a failed read as 0). */
EMU_API int64_t aclemu_process_opt(int32_t opt)
{
    if (opt < 0 || opt >= EMU_SYS_OPT_COUNT) {
        return 0;
    }
    pthread_mutex_lock(&rt_mu);
    int64_t v = atomic_load(&initialized) ? process_opts[opt] : 0;
    pthread_mutex_unlock(&rt_mu);
    return v;
}

static aclError process_opt(const char *api, aclSysParamOpt opt, int64_t *value, int set)
{
    int rc = opt_args(api, opt, value);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&rt_mu);
    if (set) {
        process_opts[opt] = *value;
    } else {
        *value = process_opts[opt];
    }
    pthread_mutex_unlock(&rt_mu);
    return ACL_SUCCESS;
}

aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value)
{
    return process_opt("aclrtSetSysParamOpt", opt, &value, 1);
}

aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value)
{
    return process_opt("aclrtGetSysParamOpt", opt, value, 0);
}

/* Version and SoC name need no aclInit: they describe the installed libraries, not a session. */
aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch)
{
    if (major == NULL || minor == NULL || patch == NULL) {
        aclemu_set_error("aclrtGetVersion: major, minor and patch must all be non-NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    *major = 8;
    *minor = 0;
    *patch = 0;
    return ACL_SUCCESS;
}

/* The SoC the emulation reports: ACLEMU_SOC, read once, default "Ascend910B3" (an Atlas A2). Set but
 * empty, it answers NULL as CANN's aclrtGetSocNameImpl does when it cannot read the SoC version
 * (src/acl/aclrt_impl/acl_rt_impl_base.cpp). */
static char soc_name[64];
static const char *soc_answer;
static pthread_once_t soc_once = PTHREAD_ONCE_INIT;

static void soc_read(void)
{
    const char *env = getenv("ACLEMU_SOC");
    if (env == NULL) {
        env = "Ascend910B3";
    }
    if (env[0] != '\0') {
        strncpy(soc_name, env, sizeof soc_name - 1);
        soc_answer = soc_name;
    }
}

const char *aclrtGetSocName(void)
{
    pthread_once(&soc_once, soc_read);
    return soc_answer;
}

/* The same answer for libopapi, which picks the emulated device generation from it (src/opapi/soc.c).
 * The old-runtime shim forwards this one although it omits aclrtGetSocName. */
EMU_API const char *aclemu_soc(void) { return aclrtGetSocName(); }
