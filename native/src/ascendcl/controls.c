/*
 * Test-only controls (aclemu*) and the fault-injection state they arm. Atomics, because faults are
 * armed from the JS thread and consumed on whichever thread makes the next call.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic int64_t live_objects;
static _Atomic int64_t fail_alloc_countdown;
static _Atomic int32_t fail_launch_status;
static _Atomic int32_t fail_sync_status;
static _Atomic int32_t fail_copy_status;
static _Atomic int64_t stream_delay_us;
static _Atomic int64_t launch_count;
static _Atomic int32_t last_deterministic = -1;
static _Atomic int32_t fail_event_status;
static _Atomic int64_t referenced_frees;
static pthread_mutex_t referenced_mu = PTHREAD_MUTEX_INITIALIZER;
static char referenced_what[400];

int64_t aclemuLiveAllocations(void) { return emu_mem_live_allocations(); }
int64_t aclemuLiveBytes(void) { return emu_mem_live_bytes(); }
int64_t aclemuLiveObjects(void) { return atomic_load(&live_objects); }
int64_t aclemuLiveStreams(void) { return emu_stream_live_count(); }

void aclemuFailAllocation(int64_t n) { atomic_store(&fail_alloc_countdown, n > 0 ? n : 0); }
void aclemuFailNextLaunch(int32_t status) { atomic_store(&fail_launch_status, status); }
void aclemuFailNextSync(int32_t status) { atomic_store(&fail_sync_status, status); }
void aclemuFailNextCopy(int32_t status) { atomic_store(&fail_copy_status, status); }
void aclemuSetStreamDelayUs(int64_t us) { atomic_store(&stream_delay_us, us > 0 ? us : 0); }
int64_t aclemuLaunchCount(void) { return atomic_load(&launch_count); }
int32_t aclemuLastLaunchDeterministic(void) { return atomic_load(&last_deterministic); }

int64_t aclemuReferencedFrees(void) { return atomic_load(&referenced_frees); }
int64_t aclemuPendingTasks(void) { return emu_stream_pending_tasks(); }
int64_t aclemuLiveEvents(void) { return emu_event_live_count(); }
void aclemuFailNextEvent(int32_t status) { atomic_store(&fail_event_status, status); }

const char *aclemuLastReferencedFree(void)
{
    /* a stable pointer; the text is replaced whole under the lock by the next referenced free */
    return referenced_what;
}

void emu_note_referenced_free(const char *what)
{
    pthread_mutex_lock(&referenced_mu);
    strncpy(referenced_what, what, sizeof referenced_what - 1);
    pthread_mutex_unlock(&referenced_mu);
    atomic_fetch_add(&referenced_frees, 1);
}

int32_t emu_fault_take_event(void) { return atomic_exchange(&fail_event_status, 0); }

void aclemuResetFaults(void)
{
    atomic_store(&fail_event_status, 0);
    aclemuSetDeviceMemory(0);
    atomic_store(&fail_alloc_countdown, 0);
    atomic_store(&fail_launch_status, 0);
    atomic_store(&fail_sync_status, 0);
    atomic_store(&fail_copy_status, 0);
    atomic_store(&stream_delay_us, 0);
    atomic_store(&launch_count, 0);
    atomic_store(&last_deterministic, -1);
    emu_kernel_controls_reset();
}

EMU_API void aclemu_objects_add(int64_t delta) { atomic_fetch_add(&live_objects, delta); }

/* 1 when this allocation attempt is the armed one (the countdown reaches zero now). */
int emu_fault_take_alloc(void)
{
    int64_t v = atomic_load(&fail_alloc_countdown);
    while (v > 0) {
        if (atomic_compare_exchange_weak(&fail_alloc_countdown, &v, v - 1)) {
            return v == 1;
        }
    }
    return 0;
}

EMU_API int32_t aclemu_fault_take_launch(void) { return atomic_exchange(&fail_launch_status, 0); }
int32_t emu_fault_take_sync(void) { return atomic_exchange(&fail_sync_status, 0); }
int32_t emu_fault_take_copy(void) { return atomic_exchange(&fail_copy_status, 0); }
int64_t emu_stream_delay_us(void) { return atomic_load(&stream_delay_us); }

EMU_API void aclemu_note_launch(int64_t deterministic)
{
    atomic_fetch_add(&launch_count, 1);
    atomic_store(&last_deterministic, (int32_t)deterministic);
}
