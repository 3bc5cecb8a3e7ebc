/*
 * Test-only controls of the CANN host emulation. Exported from libascendcl.so only (real CANN has none
 * of these: probe with `optional: true` / dlsym). Counters are process-wide and thread-safe.
 */
#ifndef ACLEMU_H
#define ACLEMU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACLEMU_VISIBILITY
#define ACLEMU_VISIBILITY __attribute__((visibility("default")))
#endif

/* Live device allocations made by aclrtMalloc and not yet aclrtFree'd, and their requested bytes. */
ACLEMU_VISIBILITY int64_t aclemuLiveAllocations(void);
ACLEMU_VISIBILITY int64_t aclemuLiveBytes(void);
/* Live aclTensor + aclIntArray + aclOpExecutor objects (libnnopbase counts them here). */
ACLEMU_VISIBILITY int64_t aclemuLiveObjects(void);
/* Streams created and not yet destroyed. */
ACLEMU_VISIBILITY int64_t aclemuLiveStreams(void);

/* The n-th aclrtMalloc from now (1 = the next) fails with 207001; 0 (or negative) disarms.
 * Only calls that pass argument and context validation count as allocation attempts. */
ACLEMU_VISIBILITY void aclemuFailAllocation(int64_t n);
/* The next op phase 2 that passes its own validation returns `status` instead of launching
 * (its executor is still freed and the error message set); 0 disarms. */
ACLEMU_VISIBILITY void aclemuFailNextLaunch(int32_t status);
/* The next aclrtSynchronizeStream on a live stream drains it and then returns `status`; 0 disarms. */
ACLEMU_VISIBILITY void aclemuFailNextSync(int32_t status);
/* The next synchronous aclrtMemcpy returns `status` without copying. */
ACLEMU_VISIBILITY void aclemuFailNextCopy(int32_t status);
/* Every stream task (op or async copy) sleeps this long before running; 0 = no delay. */
ACLEMU_VISIBILITY void aclemuSetStreamDelayUs(int64_t us);

/* Successful op phase-2 calls (enqueued launches) since load or the last aclemuResetFaults. */
ACLEMU_VISIBILITY int64_t aclemuLaunchCount(void);
/* ACL_OPT_DETERMINISTIC of the calling thread's context seen by the last launch; -1 if none. */
ACLEMU_VISIBILITY int32_t aclemuLastLaunchDeterministic(void);
/* Disarms every fault, sets the stream delay to 0, the launch count to 0 and the last deterministic
 * value to -1. Live counters (allocations, objects, streams) are not touched. */
ACLEMU_VISIBILITY void aclemuResetFaults(void);

#ifdef __cplusplus
}
#endif
#endif /* ACLEMU_H */
