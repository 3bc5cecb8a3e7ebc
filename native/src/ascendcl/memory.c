/*
 * Emulated device memory: 32-byte aligned host blocks tracked in a table sorted by base address,
 * so every device-side address can be checked against a live allocation like the runtime does.
 * A read-write lock guards the table; stream tasks hold it for reading while they touch memory,
 * so aclrtFree (writer) can never pull a block from under a running kernel or copy.
 *
 * Each device has a capacity (ACLEMU_DEVICE_MEMORY bytes, default 4 GiB; aclemuSetDeviceMemory) that
 * aclrtMalloc enforces and aclrtGetMemInfo reports. Independently, the emulation never lets its live
 * blocks exceed half of the host's physical memory, so no capacity setting can exhaust the host.
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EMU_DEFAULT_DEVICE_MEMORY (UINT64_C(4) << 30)

typedef struct {
    uintptr_t base;
    uint64_t size; /* requested bytes: the valid range is [base, base + size) */
    int32_t device;
} emu_alloc;

static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;
static emu_alloc *table;
static size_t count, capacity;
static int64_t live_bytes;
/* Bytes charged per device (sizes rounded up to 32, as api_impl.cc ApiImpl::DevMalloc aligns them),
 * including reservations of allocations in progress. Guarded by mem_lock. */
static uint64_t used[EMU_DEVICE_COUNT];
static uint64_t host_used;
static _Atomic uint64_t env_capacity = EMU_DEFAULT_DEVICE_MEMORY;
static _Atomic uint64_t override_capacity; /* 0: none */

static uint64_t capacity_now(void)
{
    uint64_t o = atomic_load(&override_capacity);
    return o != 0 ? o : atomic_load(&env_capacity);
}

void aclemuSetDeviceMemory(int64_t bytes) { atomic_store(&override_capacity, bytes > 0 ? (uint64_t)bytes : 0); }
int64_t aclemuDeviceMemory(void) { return (int64_t)capacity_now(); }

int emu_mem_configure(void)
{
    const char *env = getenv("ACLEMU_DEVICE_MEMORY");
    if (env == NULL) {
        atomic_store(&env_capacity, EMU_DEFAULT_DEVICE_MEMORY);
        return 0;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (env[0] < '0' || env[0] > '9' || *end != '\0' || errno != 0 || v == 0) {
        aclemu_set_error("aclInit: ACLEMU_DEVICE_MEMORY=\"%s\" is not a positive whole number of bytes", env);
        return ACL_ERROR_INVALID_PARAM;
    }
    atomic_store(&env_capacity, (uint64_t)v);
    return 0;
}

/* Half of the host's physical memory: the most the emulation ever holds, whatever the capacity. */
static uint64_t host_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) {
        return EMU_DEFAULT_DEVICE_MEMORY;
    }
    return (uint64_t)pages / 2 * (uint64_t)page;
}

void emu_mem_read_lock(void) { pthread_rwlock_rdlock(&mem_lock); }
void emu_mem_unlock(void) { pthread_rwlock_unlock(&mem_lock); }

/* Index of the first entry whose base is > p (binary search). Caller holds the lock. */
static size_t upper_bound_locked(uintptr_t p)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table[mid].base <= p) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The allocation containing p, or NULL. Caller holds the lock. */
static const emu_alloc *find_locked(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    size_t i = upper_bound_locked(a);
    if (i == 0) {
        return NULL;
    }
    const emu_alloc *e = &table[i - 1];
    return a < e->base + e->size ? e : NULL;
}

int emu_mem_range_ok_locked(const void *p, uint64_t len)
{
    const emu_alloc *e = find_locked(p);
    return e != NULL && len <= e->base + e->size - (uintptr_t)p;
}

EMU_API int aclemu_mem_find(const void *p, uintptr_t *base, uint64_t *size)
{
    emu_mem_read_lock();
    const emu_alloc *e = find_locked(p);
    if (e != NULL) {
        *base = e->base;
        *size = e->size;
    }
    emu_mem_unlock();
    return e != NULL;
}

int64_t emu_mem_live_allocations(void)
{
    emu_mem_read_lock();
    int64_t n = (int64_t)count;
    emu_mem_unlock();
    return n;
}

int64_t emu_mem_live_bytes(void)
{
    emu_mem_read_lock();
    int64_t n = live_bytes;
    emu_mem_unlock();
    return n;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    int rc = emu_require_init("aclrtMalloc");
    if (rc != 0) {
        return rc;
    }
    if (devPtr == NULL) {
        aclemu_set_error("aclrtMalloc: devPtr is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (size == 0) {
        aclemu_set_error("aclrtMalloc: size is 0 (device allocations must be at least 1 byte)");
        return ACL_ERROR_INVALID_PARAM;
    }
    if ((int)policy < 0 || (int)policy > ACL_MEM_MALLOC_NORMAL_ONLY) {
        aclemu_set_error("aclrtMalloc: policy %d is not an aclrtMemMallocPolicy (0 HUGE_FIRST, 1 HUGE_ONLY, "
                         "2 NORMAL_ONLY)",
                         (int)policy);
        return ACL_ERROR_INVALID_PARAM;
    }
    int32_t device;
    int64_t det;
    if (aclemu_current_context(&device, &det) != 0) {
        aclemu_set_error("aclrtMalloc: the calling thread has no current context (call aclrtSetDevice first)");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    if (emu_fault_take_alloc()) {
        aclemu_set_error("aclrtMalloc: out of device memory allocating %zu bytes on device %d "
                         "(fault injected by aclemuFailAllocation)",
                         size, device);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    uint64_t rounded = ((uint64_t)size + EMU_ALIGN - 1) & ~(uint64_t)(EMU_ALIGN - 1);
    uint64_t cap = capacity_now(), limit = host_limit();
    pthread_rwlock_wrlock(&mem_lock);
    uint64_t dev_free = used[device] < cap ? cap - used[device] : 0;
    int over_device = rounded < size || rounded > dev_free;
    int over_host = !over_device && rounded > limit - (host_used < limit ? host_used : limit);
    if (!over_device && !over_host) {
        used[device] += rounded; /* reserved while the block is allocated outside the lock */
        host_used += rounded;
    }
    pthread_rwlock_unlock(&mem_lock);
    if (over_device) {
        /* 207001 = ACL_ERROR_RT_MEMORY_ALLOCATION (rt_error_codes.h: "only used by out of memory") */
        aclemu_set_error("aclrtMalloc: out of device memory on device %d: requested %zu bytes, %" PRIu64
                         " bytes free of %" PRIu64 " (capacity: ACLEMU_DEVICE_MEMORY)",
                         device, size, dev_free, cap);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    if (over_host) {
        aclemu_set_error("aclrtMalloc: requested %zu bytes on device %d, but the emulation holds %" PRIu64
                         " bytes and never takes more than half of host memory (%" PRIu64 " bytes)",
                         size, device, host_used, limit);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    void *p = aligned_alloc(EMU_ALIGN, (size_t)rounded);
    if (p == NULL) {
        pthread_rwlock_wrlock(&mem_lock);
        used[device] -= rounded;
        host_used -= rounded;
        pthread_rwlock_unlock(&mem_lock);
        aclemu_set_error("aclrtMalloc: out of host memory emulating %zu bytes on device %d", size, device);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    /* Fresh device memory is garbage on real hardware: all-ones bytes read as NaN in every float type. */
    memset(p, 0xFF, (size_t)rounded);

    pthread_rwlock_wrlock(&mem_lock);
    if (count == capacity) {
        size_t ncap = capacity ? capacity * 2 : 64;
        emu_alloc *nt = realloc(table, ncap * sizeof *nt);
        if (nt == NULL) {
            used[device] -= rounded;
            host_used -= rounded;
            pthread_rwlock_unlock(&mem_lock);
            free(p);
            aclemu_set_error("aclrtMalloc: cannot grow the allocation table");
            return ACL_ERROR_RT_MEMORY_ALLOCATION;
        }
        table = nt;
        capacity = ncap;
    }
    size_t i = upper_bound_locked((uintptr_t)p);
    memmove(&table[i + 1], &table[i], (count - i) * sizeof *table);
    table[i] = (emu_alloc){(uintptr_t)p, size, device};
    count++;
    live_bytes += (int64_t)size;
    pthread_rwlock_unlock(&mem_lock);
    *devPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr)
{
    int rc = emu_require_init("aclrtFree");
    if (rc != 0) {
        return rc;
    }
    if (devPtr == NULL) {
        aclemu_set_error("aclrtFree: devPtr is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    /* A block a stream task may still touch (the host has not observed the task complete) is a
     * binding bug even when the free happens to come after the task ran: counted, then freed. */
    uintptr_t base;
    uint64_t size;
    char what[400];
    if (aclemu_mem_find(devPtr, &base, &size) && base == (uintptr_t)devPtr &&
        emu_stream_references(base, size, what, sizeof what)) {
        emu_note_referenced_free(what);
    }
    pthread_rwlock_wrlock(&mem_lock);
    const emu_alloc *e = find_locked(devPtr);
    if (e == NULL || e->base != (uintptr_t)devPtr) {
        uintptr_t base = e ? e->base : 0;
        pthread_rwlock_unlock(&mem_lock);
        if (base != 0) {
            aclemu_set_error("aclrtFree: devPtr %p is inside the allocation at %p (offset %zu), not its base",
                             devPtr, (void *)base, (size_t)((uintptr_t)devPtr - base));
        } else {
            aclemu_set_error("aclrtFree: devPtr %p is not a live device allocation (never allocated, or "
                             "already freed)",
                             devPtr);
        }
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    size_t i = (size_t)(e - table);
    uint64_t rounded = (e->size + EMU_ALIGN - 1) & ~(uint64_t)(EMU_ALIGN - 1);
    used[e->device] -= rounded;
    host_used -= rounded;
    live_bytes -= (int64_t)e->size;
    memmove(&table[i], &table[i + 1], (count - i - 1) * sizeof *table);
    count--;
    pthread_rwlock_unlock(&mem_lock);
    free(devPtr);
    return ACL_SUCCESS;
}

static const char *kind_name(aclrtMemcpyKind kind)
{
    static const char *const names[] = {"ACL_MEMCPY_HOST_TO_HOST", "ACL_MEMCPY_HOST_TO_DEVICE",
                                        "ACL_MEMCPY_DEVICE_TO_HOST", "ACL_MEMCPY_DEVICE_TO_DEVICE"};
    return names[kind];
}

/* Checks the arguments shared by aclrtMemcpy and aclrtMemcpyAsync (not the device ranges). */
static int check_copy_args(const char *api, void *dst, size_t destMax, const void *src, size_t count,
                           aclrtMemcpyKind kind)
{
    if ((int)kind < 0 || (int)kind > ACL_MEMCPY_DEVICE_TO_DEVICE) {
        aclemu_set_error("%s: kind %d is not an aclrtMemcpyKind (0..3)", api, (int)kind);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (dst == NULL || src == NULL) {
        aclemu_set_error("%s: %s is NULL", api, dst == NULL ? "dst" : "src");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count > destMax) {
        aclemu_set_error("%s: count %zu exceeds destMax %zu", api, count, destMax);
        return ACL_ERROR_INVALID_PARAM;
    }
    return 0;
}

/* Collects the device-side ranges of a copy (per kind). Returns how many. */
static int copy_ranges(void *dst, const void *src, size_t count, aclrtMemcpyKind kind, emu_range *r)
{
    int n = 0;
    if (kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE) {
        r[n++] = (emu_range){src, count, "source (src)"};
    }
    if (kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE) {
        r[n++] = (emu_range){dst, count, "destination (dst)"};
    }
    return n;
}

/* The kind must agree with where the pointers live: a pointer the kind calls host memory must not lie
 * in a device allocation (the device side is checked by check_ranges_locked). CANN checks copy kinds
 * against the pointers' memory locations and answers RT_ERROR_INVALID_VALUE, i.e. 107000
 * ACL_ERROR_RT_PARAM_INVALID (hicann/runtime src/runtime/api/impl/api_error.cc MemcpyKindAutoCorrect,
 * src/runtime/core/src/common/errcode_manage.cc). Newer runtimes silently correct some kinds for
 * registered memory; the emulation rejects every mismatch so that a binding passing a wrong kind
 * fails on every runtime. Caller holds the lock. */
static int check_kind_locked(const char *api, aclrtMemcpyKind kind, const void *dst, const void *src)
{
    const void *host[2];
    const char *names[2];
    int n = 0;
    if (kind == ACL_MEMCPY_HOST_TO_HOST || kind == ACL_MEMCPY_HOST_TO_DEVICE) {
        host[n] = src;
        names[n++] = "src";
    }
    if (kind == ACL_MEMCPY_HOST_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_HOST) {
        host[n] = dst;
        names[n++] = "dst";
    }
    for (int i = 0; i < n; i++) {
        const emu_alloc *e = find_locked(host[i]);
        if (e != NULL) {
            aclemu_set_error("%s: kind %s says %s is host memory, but %s %p is device memory (inside the "
                             "allocation at %p of %llu bytes on device %d)",
                             api, kind_name(kind), names[i], names[i], host[i], (void *)e->base,
                             (unsigned long long)e->size, e->device);
            return ACL_ERROR_RT_PARAM_INVALID;
        }
    }
    return 0;
}

/* Checks the ranges under the held lock; sets the message and returns 107000 on the first bad one. */
static int check_ranges_locked(const char *api, const char *kind, const emu_range *r, int n)
{
    for (int i = 0; i < n; i++) {
        if (!emu_mem_range_ok_locked(r[i].ptr, r[i].len)) {
            const emu_alloc *e = find_locked(r[i].ptr);
            if (e != NULL) {
                aclemu_set_error("%s(%s): %s range [%p, +%llu bytes) runs past the end of its device allocation "
                                 "[%p, +%llu bytes)",
                                 api, kind, r[i].what, r[i].ptr, (unsigned long long)r[i].len, (void *)e->base,
                                 (unsigned long long)e->size);
            } else {
                aclemu_set_error("%s(%s): %s address %p is not inside any live device allocation", api, kind,
                                 r[i].what, r[i].ptr);
            }
            return ACL_ERROR_RT_PARAM_INVALID;
        }
    }
    return 0;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    int rc = emu_require_init("aclrtMemcpy");
    if (rc == 0) {
        rc = check_copy_args("aclrtMemcpy", dst, destMax, src, count, kind);
    }
    if (rc != 0 || count == 0) {
        return rc;
    }
    int32_t injected = emu_fault_take_copy();
    if (injected != 0) {
        aclemu_set_error("aclrtMemcpy: injected failure %d (aclemuFailNextCopy)", (int)injected);
        return injected;
    }
    emu_range r[2];
    int n = copy_ranges(dst, src, count, kind, r);
    /* Synchronous copies deliberately do not wait for streams: a missing sync reads stale data. */
    emu_mem_read_lock();
    rc = check_kind_locked("aclrtMemcpy", kind, dst, src);
    if (rc == 0) {
        rc = check_ranges_locked("aclrtMemcpy", kind_name(kind), r, n);
    }
    if (rc == 0) {
        memmove(dst, src, count);
    }
    emu_mem_unlock();
    return rc;
}

typedef struct {
    void *dst;
    const void *src;
    size_t count;
} copy_job;

static int run_copy(void *arg, char *msg, size_t msglen)
{
    (void)msg;
    (void)msglen;
    copy_job *j = arg;
    memmove(j->dst, j->src, j->count);
    return 0;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream)
{
    int rc = emu_require_init("aclrtMemcpyAsync");
    if (rc == 0) {
        rc = check_copy_args("aclrtMemcpyAsync", dst, destMax, src, count, kind);
    }
    if (rc != 0) {
        return rc;
    }
    emu_task t = {.name = "aclrtMemcpyAsync", .fn = run_copy, .release = free};
    t.nranges = copy_ranges(dst, src, count, kind, t.ranges);
    emu_mem_read_lock();
    rc = check_kind_locked("aclrtMemcpyAsync", kind, dst, src);
    if (rc == 0) {
        rc = check_ranges_locked("aclrtMemcpyAsync", kind_name(kind), t.ranges, t.nranges);
    }
    emu_mem_unlock();
    if (rc != 0) {
        return rc;
    }
    if (aclemu_stream_device(stream) < 0) {
        aclemu_set_error("aclrtMemcpyAsync: stream %p is not a live stream", stream);
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    if (count == 0) {
        return ACL_SUCCESS;
    }
    copy_job *j = malloc(sizeof *j);
    if (j == NULL) {
        aclemu_set_error("aclrtMemcpyAsync: out of host memory for the copy task");
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    *j = (copy_job){dst, src, count};
    t.arg = j;
    return aclemu_stream_enqueue(stream, &t);
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    int rc = emu_require_init("aclrtMemset");
    if (rc != 0) {
        return rc;
    }
    if (devPtr == NULL) {
        aclemu_set_error("aclrtMemset: devPtr is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count > maxCount) {
        aclemu_set_error("aclrtMemset: count %zu exceeds maxCount %zu", count, maxCount);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count == 0) {
        return ACL_SUCCESS;
    }
    emu_range r = {devPtr, count, "devPtr"};
    emu_mem_read_lock();
    rc = check_ranges_locked("aclrtMemset", "device", &r, 1);
    if (rc == 0) {
        memset(devPtr, (unsigned char)value, count);
    }
    emu_mem_unlock();
    return rc;
}

/* acl_rt.h aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total); the runtime answers for the
 * calling thread's device (src/acl/aclrt_impl/memory.cpp aclrtGetMemInfoImpl -> rtMemGetInfoEx). The
 * emulated device has one memory pool, so every attribute reports it. */
aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *freeBytes, size_t *totalBytes)
{
    int rc = emu_require_init("aclrtGetMemInfo");
    if (rc != 0) {
        return rc;
    }
    if (freeBytes == NULL || totalBytes == NULL) {
        aclemu_set_error("aclrtGetMemInfo: %s is NULL", freeBytes == NULL ? "free" : "total");
        return ACL_ERROR_INVALID_PARAM;
    }
    if ((int)attr < 0 || (int)attr > ACL_MEM_P2P_HUGE1G) {
        aclemu_set_error("aclrtGetMemInfo: attr %d is not an aclrtMemAttr (0..%d)", (int)attr, ACL_MEM_P2P_HUGE1G);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    int32_t device;
    int64_t det;
    if (aclemu_current_context(&device, &det) != 0) {
        aclemu_set_error("aclrtGetMemInfo: the calling thread has no current context (call aclrtSetDevice first)");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    uint64_t cap = capacity_now();
    emu_mem_read_lock();
    uint64_t in_use = used[device];
    emu_mem_unlock();
    *totalBytes = (size_t)cap;
    *freeBytes = (size_t)(in_use < cap ? cap - in_use : 0);
    return ACL_SUCCESS;
}
