/*
 * Emulated device memory: 32-byte aligned host blocks tracked in a table sorted by base address,
 * so every device-side address can be checked against a live allocation like the runtime does.
 * A read-write lock guards the table; stream tasks hold it for reading while they touch memory,
 * so aclrtFree (writer) can never pull a block from under a running kernel or copy.
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uintptr_t base;
    uint64_t size; /* requested bytes: the valid range is [base, base + size) */
    int32_t device;
} emu_alloc;

static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;
static emu_alloc *table;
static size_t count, capacity;
static int64_t live_bytes;

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
    size_t rounded = (size + EMU_ALIGN - 1) & ~(size_t)(EMU_ALIGN - 1);
    void *p = rounded >= size ? aligned_alloc(EMU_ALIGN, rounded) : NULL;
    if (p == NULL) {
        aclemu_set_error("aclrtMalloc: out of device memory allocating %zu bytes on device %d", size, device);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    /* Fresh device memory is garbage on real hardware: all-ones bytes read as NaN in every float type. */
    memset(p, 0xFF, rounded);

    pthread_rwlock_wrlock(&mem_lock);
    if (count == capacity) {
        size_t ncap = capacity ? capacity * 2 : 64;
        emu_alloc *nt = realloc(table, ncap * sizeof *nt);
        if (nt == NULL) {
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
    rc = check_ranges_locked("aclrtMemcpy", kind_name(kind), r, n);
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
    rc = check_ranges_locked("aclrtMemcpyAsync", kind_name(kind), t.ranges, t.nranges);
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
