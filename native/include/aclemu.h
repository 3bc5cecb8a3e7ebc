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
/* Device memory capacity of each emulated device in bytes (what aclrtGetMemInfo reports as total and
 * aclrtMalloc enforces). `bytes` > 0 overrides ACLEMU_DEVICE_MEMORY (default 4 GiB); <= 0 restores it.
 * Allocations already made stay. */
ACLEMU_VISIBILITY void aclemuSetDeviceMemory(int64_t bytes);
/* The capacity now in force (bytes). */
ACLEMU_VISIBILITY int64_t aclemuDeviceMemory(void);

/* aclrtFree calls that freed memory a stream task still references: one queued, running, or finished
 * but not yet observed complete by the host (aclrtSynchronizeStream on its stream, aclrtDestroyStream,
 * or aclrtSynchronizeEvent / an aclrtQueryEventStatus answering COMPLETE on an event recorded after
 * it). Deterministic: it does not depend on how fast the stream ran. Tests assert it stays 0. */
ACLEMU_VISIBILITY int64_t aclemuReferencedFrees(void);
/* What the last referenced free hit ("" when none): the task, the range and the freed block. The
 * text stays valid until the next referenced free. */
ACLEMU_VISIBILITY const char *aclemuLastReferencedFree(void);
/* Stream tasks (ops, async copies, event records) the host has not yet observed complete. */
ACLEMU_VISIBILITY int64_t aclemuPendingTasks(void);

/* ACL's init reference count: 1 after the first aclInit, +1 for each repeated aclInit (answered
 * 100002), 0 after aclFinalize (which ignores the count, as CANN's does) or the last
 * aclFinalizeReference. */
ACLEMU_VISIBILITY int64_t aclemuInitRefCount(void);
/* aclFinalize calls that tore ACL down (answered 0) since load. A binding whose aclInit answered
 * 100002 (another in-process user owns ACL) must never add to it: its aclFinalize would end that
 * user's runtime, as aclemuInitRefCount() dropping to 0 also shows. */
ACLEMU_VISIBILITY int64_t aclemuFinalizeCount(void);

/* Events created and not yet destroyed. */
ACLEMU_VISIBILITY int64_t aclemuLiveEvents(void);
/* The next event call that passes its own argument checks (aclrtCreateEvent, aclrtCreateEventWithFlag,
 * aclrtRecordEvent, aclrtSynchronizeEvent, aclrtEventElapsedTime, aclrtQueryEventStatus) returns
 * `status` without effect; aclrtDestroyEvent is never failed. 0 disarms. */
ACLEMU_VISIBILITY void aclemuFailNextEvent(int32_t status);

/* The kernel the last successful op phase 2 enqueued ("" when none since load or the last
 * aclemuResetFaults; an op with empty tensors enqueues none). Names, per emulated device:
 *  Atlas A2/A3 (ACLEMU_SOC Ascend910B*, Ascend910_93*, unset or unknown):
 *    "UpsampleNearestExact2dGrad", "UpsampleBilinear2dGrad", "ResizeBilinearV2Grad", "ViewCopy";
 *  Ascend 950 (ACLEMU_SOC Ascend950*), from the arch35 tiling keys of ops-cv:
 *    "UpsampleNearestExact2dGrad.DATA_COPY", "UpsampleNearestExact2dGrad.SIMT",
 *    "ResizeBilinearV2Grad.ALL_COPY", ".POINT_COPY", ".C_PARALLEL",
 *    ".SIMT_NCHW", ".SIMT_NHWC" (atomic scatter), ".SIMT_NCHW_DETERMINE", ".SIMT_NHWC_DETERMINE",
 *    ".SIMT_NCHW_DETERMINE_SCALES", ".SIMT_NHWC_DETERMINE_SCALES" (gathers; each SIMT name gains
 *    "_IDX64" when a size exceeds the 32-bit index range), and "ViewCopy" (bilinear V1, equal sizes);
 *  the built-in TBE kernel ResizeBilinearV2Grad (NC1HWC0, float32), run by A2/A3 (the V2 fallback and
 *  V1), Atlas training (NpuArch 1001) and Atlas inference 310P (NpuArch 2002) SoCs, named by the
 *  tiling mode its tiling picks: "ResizeBilinearV2Grad5HD.MODE0" (copy) ... ".MODE6"; MODE5 and MODE6
 *  add their row partial sums atomically (order drawn per launch, see aclemuSetAtomicSeed);
 *  every SoC: "Cast" (aclnnCast, the math operator of ops-math, exported by libopapi.so; in build/split
 *  by the core libopapi.so, not libopapi_cv.so).
 *  The forward ops (native/README.md, "Forward operators"): A2/A3 "UpsampleNearestExact2d.COMMON",
 *  ".SMALL_CW", ".SMALL_C", "UpsampleBilinear2dNcdhw", "UpsampleBilinear2dNcdhw.HWNC", "ViewCopy";
 *  310P "UpsampleNearestExact2d.310P"; A2/A3, 1001, 2002 "ResizeBilinearV2_5HD." + "NO_BILINEAR", "NC",
 *  "L1", "VBI_FP32", "VBI_FP16"; Ascend 950 "ResizeNearestNeighborV2." + "SIMT_COMMON",
 *  "SIMT_INPUT_EQ_OUTPUT", "SIMT_INPUT_EQ_ONE" (each + "_IDX64"), "DATA_COPY_SMALL_C", "DATA_COPY_BIG_C",
 *  "DATA_COPY_JH_C", "GATHER_ALL_HW", "GATHER_CUT_H"; "UpsampleNearestExact3dNcdhw.SIMD";
 *  "ResizeBilinearV2With4d." + "ALL_COPY", "POINT_COPY", "NCHW_BROADCAST", "NHWC_BROADCAST", "C_PARALLEL",
 *  "C_PARALLEL_NC", "SIMT_NCHW", "SIMT_NHWC", "SIMT_HW" (the SIMT ones + "_IDX64"). A forward call whose
 *  kernel ships no binary for the SoC (nearest-exact on 1001, or BF16 / UINT8 on 2002) launches nothing.
 * The pointer stays valid for the life of the process. */
ACLEMU_VISIBILITY const char *aclemuLastKernel(void);
/* Successful phase-2 launches of the kernel `name` since load or the last aclemuResetFaults. */
ACLEMU_VISIBILITY int64_t aclemuKernelLaunches(const char *name);
/* The atomic kernels (ResizeBilinearV2Grad .SIMT_* scatter and .C_PARALLEL on Ascend 950,
 * ResizeBilinearV2Grad5HD.MODE5 / .MODE6: the cores' lists of row flushes interleaved) add their
 * terms in an order drawn per launch: launch k of the sequence uses a permutation seeded from
 * (base, k). The base is ACLEMU_ATOMIC_SEED (a u64, decimal or 0x hex) or else drawn at load.
 * aclemuSetAtomicSeed sets the base and restarts the sequence at k = 0; aclemuAtomicSeed returns the
 * base in force (log it to reproduce a failure). aclemuResetFaults restores the environment's base
 * (or the one drawn at load) and restarts the sequence. */
ACLEMU_VISIBILITY void aclemuSetAtomicSeed(uint64_t seed);
ACLEMU_VISIBILITY uint64_t aclemuAtomicSeed(void);
/* Whether the emulated Ascend 950 kernels contract a * b + c into one fmaf (the compiler's default):
 * 1 contracts, 0 rounds the product and the sum separately, < 0 restores ACLEMU_FMA ("0" or "1",
 * default 1). Taken by each launch at phase 2; aclemuResetFaults restores the environment's value.
 * It also decides the one contractible expression of an A2/A3 kernel, the forward Cube kernel
 * UpsampleBilinear2d's centre s * (o + 0.5) - 0.5 (scalar AscendC code); the A2/A3 backward kernels have
 * none. aclemuFmaContraction: the value in force. */
ACLEMU_VISIBILITY void aclemuSetFmaContraction(int32_t on);
ACLEMU_VISIBILITY int32_t aclemuFmaContraction(void);

/* Whether the emulated TBE kernel ResizeBilinearV2Grad5HD fuses the two multiply-adds the public source
 * leaves open: the scalar source coordinate scale * (d + 0.5) - 0.5 as one fmaf, and vec_axpy
 * (acc = g * w + acc) rounded once. 1 fuses, 0 rounds every step, < 0 restores ACLEMU_TBE_FMA ("0" or
 * "1", default 0). Taken by each launch at phase 2; aclemuResetFaults restores the environment's
 * value. aclemuTbeFma: the value in force. (Mode 5's vector W coordinates are never fused.) The same
 * switch decides the forward TBE kernel ResizeBilinearV2's vbi accumulation (VBI_FP32, VBI_FP16: each
 * acc += value * weight rounded once when 1); its lerp modes and coordinates are vector instructions,
 * never fused. */
ACLEMU_VISIBILITY void aclemuSetTbeFma(int32_t on);
ACLEMU_VISIBILITY int32_t aclemuTbeFma(void);
/* A planted fault, for the tests of a "deterministic route": it breaks on purpose what makes an
 * H-unchanged call of ResizeBilinearV2Grad5HD (image height == gradient height) independent of the
 * atomic order. There every H weight pair is l = 1, r = 0 exactly, so the neighbour row below gets exact
 * zeros and the cores' interleaved flushes (MODE5 / MODE6) cannot change the result. When on, an H
 * weight r that is exactly 0 for a gradient row with a lower neighbour (stride 1) is replaced by 2^-10
 * (l stays as computed), in every mode (3 to 6; modes 0 to 2 have no H weights), on every SoC that runs
 * the kernel. Effect on the order: a result cell changes with the order only when it takes 3 or more
 * non-zero partials from 2 or more cores. An H-unchanged cell takes one partial from its own gradient
 * row and, faulted, one 2^-10 partial from the row above: 2 partials, and two additions onto the
 * zeroed cell commute. So MODE5 (one flush per UB row) and MODE6 with an image narrower than
 * tensor_c / 2 (910/310P 1024, A2 768) change their values but stay order-independent. MODE6 with a
 * wider image flushes windows that overlap in one cell every tensor_c / 2 - 1 columns; such a cell
 * takes 2 partials per gradient row, so 4 on a row where one core's rows end, and depends on the
 * order: reliably with one gradient row per core (gh <= cores), rarely with many (the next core's
 * first flushes then nearly always precede the previous core's last ones in the drawn interleaving).
 * 1 on, 0 off, < 0 restores ACLEMU_TBE_ZERO_WEIGHT_FAULT ("0" or "1", default 0). Taken by each launch
 * at phase 2; aclemuResetFaults restores the environment's value. aclemuTbeZeroWeightFault: the value
 * in force. */
ACLEMU_VISIBILITY void aclemuSetTbeZeroWeightFault(int32_t on);
ACLEMU_VISIBILITY int32_t aclemuTbeZeroWeightFault(void);
/* A planted fault for the adjoint check (not a device rule): the forward nearest-exact kernels read
 * the input column one to the right of the rule's (clamped to the last), so the device's forward no
 * longer transposes its backward. 1 on, 0 off, < 0 restores ACLEMU_FORWARD_SHIFT_FAULT ("0"/"1",
 * default 0). Taken by each launch at phase 2; aclemuResetFaults restores the environment's value. */
ACLEMU_VISIBILITY void aclemuSetForwardShiftFault(int32_t on);
ACLEMU_VISIBILITY int32_t aclemuForwardShiftFault(void);
/* A planted fault for verify's exact comparison (not a device rule): after every backward kernel
 * launch whose order of additions is fixed (the Cube kernels UpsampleNearestExact2dGrad and
 * UpsampleBilinear2dGrad, the view copies, the 950's gathers and copies, ResizeBilinearV2Grad5HD in
 * tiling modes 0-4; not the atomic launches that take an aclemuSetAtomicSeed order), the first nonzero
 * finite element of its result, in the order its buffer reaches out, moves one ulp of out's dtype away
 * from zero. Every such result stays within any rounding bound. 1 on, 0 off, < 0 restores
 * ACLEMU_ULP_FAULT ("0"/"1", default 0). Taken by each launch at phase 2; aclemuResetFaults restores
 * the environment's value. */
ACLEMU_VISIBILITY void aclemuSetUlpFault(int32_t on);
ACLEMU_VISIBILITY int32_t aclemuUlpFault(void);
/* NpuArch of the emulated SoC from the platform table (hicann/runtime platform_config *.ini): 2201
 * (Atlas A2/A3), 3510 (Ascend 950), 1001 (Atlas training: Ascend910A, Ascend910B (first
 * generation), Ascend910ProA/ProB/PremiumA), 2002 (Ascend310P*), or another arch the operators do
 * not support (their phase 1 then answers 161002). 2201 when ACLEMU_SOC names no SoC of the table
 * (or is set but empty); unset, the emulation reports Ascend910B3 (2201). */
ACLEMU_VISIBILITY int32_t aclemuNpuArch(void);

/* Disarms every fault (aclemuFailNextEvent included), sets the stream delay to 0, the launch count to
 * 0 and the last deterministic value to -1, drops an aclemuSetDeviceMemory override, zeroes the kernel
 * counters (aclemuLastKernel ""), restarts the atomic seed sequence from the environment's base and
 * drops the aclemuSetFmaContraction, aclemuSetTbeFma, aclemuSetTbeZeroWeightFault,
 * aclemuSetForwardShiftFault and aclemuSetUlpFault overrides. Live
 * counters (allocations, objects, streams, events) and the referenced-free and finalize counters
 * are not touched (compare them before and after). */
ACLEMU_VISIBILITY void aclemuResetFaults(void);

#ifdef __cplusplus
}
#endif
#endif /* ACLEMU_H */
