/*
 * aclOpExecutor: what phase 1 produces and phase 2 consumes. It owns a private copy of every
 * descriptor and parameter of the op, so the caller may destroy its tensors and int arrays right
 * after phase 1. Phase 2 frees it unless aclSetAclOpExecutorRepeatable was called; repeatable
 * executors are freed by aclDestroyAclOpExecutor (which also frees an unused one-shot executor).
 */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

EMU_API aclOpExecutor *aclemu_executor_create(const char *op_name, emu_run_fn run, const void *params,
                                              size_t params_size, uint64_t workspace_size)
{
    aclOpExecutor *e = malloc(sizeof *e + params_size);
    if (e == NULL) {
        return NULL;
    }
    e->repeatable = 0;
    e->workspace_size = workspace_size;
    e->op_name = op_name;
    e->run = run;
    e->params_size = params_size;
    memcpy(e->params, params, params_size);
    if (!emu_reg_add(e, EMU_KIND_EXECUTOR)) {
        free(e);
        return NULL;
    }
    return e;
}

EMU_API int aclemu_executor_live(const aclOpExecutor *executor)
{
    return emu_reg_has(executor, EMU_KIND_EXECUTOR);
}

EMU_API void aclemu_executor_free(aclOpExecutor *executor)
{
    if (emu_reg_remove(executor, EMU_KIND_EXECUTOR)) {
        free(executor);
    }
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor)
{
    if (executor == NULL) {
        aclemu_set_error("aclSetAclOpExecutorRepeatable: executor is NULL");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (!aclemu_executor_live(executor)) {
        aclemu_set_error("aclSetAclOpExecutorRepeatable: %p is not a live aclOpExecutor (already run by "
                         "phase 2, or destroyed)",
                         (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    executor->repeatable = 1;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor)
{
    if (executor == NULL) {
        return ACLNN_SUCCESS;
    }
    if (!aclemu_executor_live(executor)) {
        aclemu_set_error("aclDestroyAclOpExecutor: %p is not a live aclOpExecutor (a one-shot executor is "
                         "freed by phase 2; or it was already destroyed)",
                         (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclemu_executor_free(executor);
    return ACLNN_SUCCESS;
}
