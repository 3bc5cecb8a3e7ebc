/*
 * Phase 2 shared by every op (CANN's CommonOpExecutorRun): validate the executor, the calling
 * thread's context, the stream and the workspace, then enqueue the kernel on the stream and
 * return at once. A live one-shot executor is consumed by phase 2 whatever the outcome (success,
 * validation failure or injected fault), so callers never destroy it after calling phase 2.
 */
#include "opapi.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    emu_run_fn run;
    void *workspace;
    emu_op_params params; /* a private copy: the executor may be freed before the task runs */
} op_job;

static int run_job(void *arg, char *msg, size_t msglen)
{
    op_job *j = arg;
    return j->run(&j->params, j->workspace, msg, msglen);
}

static aclnnStatus check_workspace(const char *api, void *ws, uint64_t wsSize, uint64_t need)
{
    if (need == 0) {
        return ACLNN_SUCCESS; /* the op uses no workspace: whatever was passed is ignored */
    }
    uintptr_t base;
    uint64_t size;
    if (ws == NULL) { /* CommonOpExecutorRun: a NULL workspace that is needed is a NULL-pointer error */
        aclemu_set_error("%s: workspace is NULL but phase 1 asked for %llu bytes", api, (unsigned long long)need);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (wsSize < need) {
        aclemu_set_error("%s: workspaceSize %llu is smaller than the %llu bytes phase 1 asked for", api,
                         (unsigned long long)wsSize, (unsigned long long)need);
    } else if ((uintptr_t)ws % EMU_ALIGN != 0) {
        aclemu_set_error("%s: workspace %p is not %u-byte aligned", api, ws, EMU_ALIGN);
    } else if (!aclemu_mem_find(ws, &base, &size) || need > base + size - (uintptr_t)ws) {
        aclemu_set_error("%s: workspace [%p, +%llu bytes) is not inside one live device allocation", api, ws,
                         (unsigned long long)need);
    } else {
        return ACLNN_SUCCESS;
    }
    return ACLNN_ERR_PARAM_INVALID;
}

static aclnnStatus launch(const char *api, void *ws, uint64_t wsSize, aclOpExecutor *e, aclrtStream stream)
{
    int32_t device;
    int64_t deterministic;
    if (aclemu_current_context(&device, &deterministic) != 0) {
        aclemu_set_error("%s: the calling thread has no current context (call aclrtSetDevice or "
                         "aclrtSetCurrentContext on this thread)",
                         api);
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    int32_t sdev = aclemu_stream_device(stream);
    if (sdev < 0) {
        aclemu_set_error("%s: stream %p is not a live stream%s", api, stream,
                         stream == NULL ? " (the NULL default stream is not emulated)" : "");
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    if (sdev != device) {
        aclemu_set_error("%s: stream %p belongs to device %d but the calling thread's context is device %d", api,
                         stream, sdev, device);
        return ACL_ERROR_RT_STREAM_CONTEXT;
    }
    aclnnStatus rc = check_workspace(api, ws, wsSize, e->workspace_size);
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    const emu_op_params *ep = (const emu_op_params *)e->params;
    if (ep->kernel == EMU_KERNEL_NONE) {
        return ACLNN_SUCCESS; /* empty tensors: phase 1 queued no kernel, so nothing is launched */
    }
    if (ep->kernel == EMU_KERNEL_NO_BINARY) {
        /* opbase op_kernel.h OpKernel::Run: "Op %s does not has any binary" / "Cannot find binary for op
         * %s" -> ACLNN_ERR_INNER, returned by CommonOpExecutorRun; nothing reaches the stream. */
        aclemu_set_error("%s: %s", api, ep->fault != NULL ? ep->fault : "cannot find binary");
        return ACLNN_ERR_INNER;
    }
    int32_t fault = aclemu_fault_take_launch();
    if (fault != 0) {
        aclemu_set_error("%s: launch failed with %d (fault injected by aclemuFailNextLaunch)", api, fault);
        return fault;
    }
    op_job *j = malloc(sizeof *j);
    if (j == NULL) {
        aclemu_set_error("%s: out of host memory for the launch", api);
        return ACLNN_ERR_INNER;
    }
    j->run = e->run;
    j->workspace = e->workspace_size > 0 ? ws : NULL;
    memcpy(&j->params, e->params, sizeof j->params);
    /* The compiler switches, the planted TBE fault and the atomic kernels' order are fixed per launch. */
    j->params.fma = aclemu_fma_contraction();
    j->params.tbe_fma = aclemu_tbe_fma();
    j->params.tbe_zw_fault = aclemu_tbe_zero_weight_fault();
    j->params.fwd_shift_fault = aclemu_forward_shift_fault();
    j->params.ulp_fault = aclemu_ulp_fault();
    if (emu_kernel_is_atomic(&j->params)) {
        j->params.seed = aclemu_atomic_seed_take();
    }
    const emu_op_params *p = &j->params;
    const char *kname = emu_kernel_name(p); /* read now: the worker frees j after running it */
    emu_task t = {.name = e->op_name, .fn = run_job, .arg = j, .release = free};
    if (p->go.bytes > 0) { /* the input view: gradOutput, or Cast's self */
        const char *in = p->kernel == EMU_KERNEL_CAST ? "self" : "gradOutput";
        t.ranges[t.nranges++] = (emu_range){p->go.lo, p->go.bytes, in};
    }
    if (p->out.bytes > 0) {
        t.ranges[t.nranges++] = (emu_range){p->out.lo, p->out.bytes, "out"};
    }
    if (e->workspace_size > 0) {
        t.ranges[t.nranges++] = (emu_range){ws, e->workspace_size, "workspace"};
    }
    rc = aclemu_stream_enqueue(stream, &t);
    if (rc != 0) {
        return rc;
    }
    aclemu_note_launch(deterministic);
    aclemu_note_kernel(kname);
    return ACLNN_SUCCESS;
}

aclnnStatus emu_launch(const char *api, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                       aclrtStream stream)
{
    if (executor == NULL) { /* 561103 (opbase docs/en/api/nnopbase/aclnn/common_api_return_codes.md) */
        aclemu_set_error("%s: executor is NULL", api);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    if (!aclemu_executor_live(executor)) {
        aclemu_set_error("%s: executor %p is not a live aclOpExecutor (already consumed by a phase 2, or "
                         "destroyed)",
                         api, (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (executor->params_size != sizeof(emu_op_params)) {
        aclemu_set_error("%s: executor %p was not created by this libopapi", api, (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclnnStatus rc = launch(api, workspace, workspaceSize, executor, stream);
    if (!executor->repeatable) {
        aclemu_executor_free(executor);
    }
    return rc;
}
