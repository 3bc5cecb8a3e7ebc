/*
 * Shared by the three emulated libraries. The cross-library entry points below are exported
 * (visibility default) under the `aclemu_` prefix because libnnopbase and libopapi call into
 * libascendcl (and libopapi into libnnopbase) through the dynamic linker, exactly like the
 * real libraries share runtime state. Everything else is hidden (-fvisibility=hidden).
 */
#ifndef ACLEMU_INTERNAL_H
#define ACLEMU_INTERNAL_H

#include "cann_subset.h"
#include "aclemu.h"

#include <stddef.h>
#include <stdint.h>

#define EMU_API __attribute__((visibility("default")))
#define EMU_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define EMU_MAX_DIMS 8
#define EMU_DEVICE_COUNT 2
#define EMU_ALIGN 32u
#define EMU_SYS_OPT_COUNT 3

/* The meta objects. libopapi reads them directly, so the layout lives here. */
struct aclTensor {
    uint64_t ndim;
    int64_t dims[EMU_MAX_DIMS];
    int64_t strides[EMU_MAX_DIMS];
    int64_t offset; /* elements */
    int32_t dtype;
    int32_t format;
    uint64_t storage_ndim;
    int64_t storage_dims[EMU_MAX_DIMS];
    void *data;
};

struct aclIntArray {
    uint64_t size;
    int64_t values[]; /* a copy of the caller's values */
};

/* Runs one op on a stream worker. Returns 0 or a status; on failure writes a message into msg. */
typedef int (*emu_run_fn)(const void *params, void *workspace, char *msg, size_t msglen);

struct aclOpExecutor {
    int repeatable;
    uint64_t workspace_size;
    const char *op_name; /* static string in libopapi */
    emu_run_fn run;
    size_t params_size;
    _Alignas(16) unsigned char params[]; /* a private copy of every descriptor and parameter */
};

/* A device address range a stream task touches; re-checked under the memory lock when the task runs. */
typedef struct {
    const void *ptr;
    uint64_t len;
    const char *what;
} emu_range;

#define EMU_TASK_MAX_RANGES 4

/* emu_task.flags: a marker (event record) takes no device time, so aclemuSetStreamDelayUs skips it. */
#define EMU_TASK_MARKER 1u

/* A unit of stream work. `arg` is owned by the stream once enqueued: release(arg) runs after fn,
 * or immediately when the enqueue fails. The ranges stay recorded until the host has observed the
 * task complete (a synchronize of its stream, or of an event recorded after it): freeing memory
 * they cover before that is a referenced free (aclemuReferencedFrees). */
typedef struct {
    const char *name;
    int (*fn)(void *arg, char *msg, size_t msglen);
    void *arg;
    void (*release)(void *arg);
    unsigned flags;
    int nranges;
    emu_range ranges[EMU_TASK_MAX_RANGES];
} emu_task;

/* One SoC of hicann/runtime's platform_config (src/ascendcl/soc_table.c). */
typedef struct {
    const char *name;       /* SoC_version */
    uint32_t npu_arch;      /* NpuArch: 2201 Atlas A2/A3, 3510 Ascend 950, 1001 Atlas training, 2002 310P, ... */
    const char *short_name; /* Short_SoC_version */
    int32_t ai_core_cnt;
    int64_t ub_size;        /* bytes, the first ub_size line */
} aclemu_soc_row;

/* ---- exported by libascendcl for the other two libraries ---- */
EMU_API void aclemu_set_error(const char *fmt, ...) EMU_PRINTF(1, 2);
EMU_API void aclemu_objects_add(int64_t delta);
/* 0 and the calling thread's device and ACL_OPT_DETERMINISTIC, or 107002 when it has no context. */
EMU_API int aclemu_current_context(int32_t *device, int64_t *deterministic);
/* 1 when p lies inside a live allocation (its base and requested size are returned), else 0. */
EMU_API int aclemu_mem_find(const void *p, uintptr_t *base, uint64_t *size);
/* Device of a live stream, or -1. */
EMU_API int32_t aclemu_stream_device(aclrtStream stream);
/* 0, or 107017 (message set) when the stream is not live or is being destroyed. */
EMU_API int aclemu_stream_enqueue(aclrtStream stream, const emu_task *task);
/* Takes (and disarms) the armed launch fault: 0 when none. */
EMU_API int32_t aclemu_fault_take_launch(void);
EMU_API void aclemu_note_launch(int64_t deterministic);
/* Process-wide aclrtGetSysParamOpt value of `opt` without checks (0 before aclInit or when unknown). */
EMU_API int64_t aclemu_process_opt(int32_t opt);
/* aclrtGetSocName's answer (NULL when ACLEMU_SOC is set but empty). */
EMU_API const char *aclemu_soc(void);
/* A successful phase 2 enqueued the kernel `name` (aclemuLastKernel, aclemuKernelLaunches). */
EMU_API void aclemu_note_kernel(const char *name);
/* The seed of the next atomic-kernel launch: launch k of the sequence gets mix(base, k), k = 0, 1, ... */
EMU_API uint64_t aclemu_atomic_seed_take(void);
/* 1 when the emulated Ascend 950 compiler contracts a * b + c into one FMA (aclemuSetFmaContraction). */
EMU_API int32_t aclemu_fma_contraction(void);
/* 1 when the emulated TBE kernels fuse their OPEN multiply-adds (aclemuSetTbeFma, ACLEMU_TBE_FMA). */
EMU_API int32_t aclemu_tbe_fma(void);
/* 1 when the planted TBE zero-weight fault is on (aclemuSetTbeZeroWeightFault, ACLEMU_TBE_ZERO_WEIGHT_FAULT). */
EMU_API int32_t aclemu_tbe_zero_weight_fault(void);
/* 1 when the planted forward shift fault is on (aclemuSetForwardShiftFault, ACLEMU_FORWARD_SHIFT_FAULT). */
EMU_API int32_t aclemu_forward_shift_fault(void);
/* 1 when the planted one-ulp fault is on (aclemuSetUlpFault, ACLEMU_ULP_FAULT). */
EMU_API int32_t aclemu_ulp_fault(void);
/* The table row of the emulated SoC, NULL when its name is not in the table (soc_table.c). */
EMU_API const aclemu_soc_row *aclemu_soc_facts(void);

/* ---- exported by libnnopbase for libopapi ---- */
EMU_API int aclemu_tensor_live(const aclTensor *tensor);
EMU_API int aclemu_intarray_live(const aclIntArray *array);
EMU_API int aclemu_executor_live(const aclOpExecutor *executor);
EMU_API aclOpExecutor *aclemu_executor_create(const char *op_name, emu_run_fn run, const void *params,
                                              size_t params_size, uint64_t workspace_size);
EMU_API void aclemu_executor_free(aclOpExecutor *executor);

/* ---- hidden helpers inside libascendcl ---- */
int emu_require_init(const char *api);
int emu_errors_configure(const char *configPath);
/* Reads ACLEMU_DEVICE_MEMORY (aclInit): 0, or 100000 with the message set when it is malformed. */
int emu_mem_configure(void);
/* Like aclemu_stream_enqueue; on success *seq is the task's position in its stream's FIFO. */
int emu_stream_enqueue_seq(aclrtStream stream, const emu_task *task, uint64_t *seq);
/* The host has seen every task of `stream` up to `seq` complete (an event synchronize or query). */
void emu_stream_observe(aclrtStream stream, uint64_t seq);
/* 1 when a task not yet observed complete references [base, base + size); describes it in what. */
int emu_stream_references(uintptr_t base, uint64_t size, char *what, size_t whatlen);
int64_t emu_stream_pending_tasks(void);
void emu_note_referenced_free(const char *what);
int32_t emu_fault_take_event(void);
int64_t emu_event_live_count(void);
void emu_mem_read_lock(void);
void emu_mem_unlock(void);
int emu_mem_range_ok_locked(const void *p, uint64_t len);
int64_t emu_mem_live_allocations(void);
int64_t emu_mem_live_bytes(void);
int64_t emu_stream_live_count(void);
int emu_fault_take_alloc(void);
int32_t emu_fault_take_sync(void);
int32_t emu_fault_take_copy(void);
int64_t emu_stream_delay_us(void);
/* kernel_controls.c: aclemuResetFaults' part for the kernel counters, the seed and the switches (FMA,
 * TBE FMA, TBE zero-weight fault). */
void emu_kernel_controls_reset(void);

#endif /* ACLEMU_INTERNAL_H */
