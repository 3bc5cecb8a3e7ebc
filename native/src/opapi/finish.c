/*
 * The end of phase 1 of the upsample ops: the parameter block from both views and the executor whose
 * run is the kernel dispatcher (kernels.c). Apart from check.c so that the validation helpers link
 * without the kernels (build/split's core libopapi.so: cast.c, check.c, launch.c, soc.c).
 */
#include "opapi.h"

aclnnStatus emu_finish(const emu_op_spec *sp, const emu_args *a, emu_op_params *p, int spatial, int go_cl,
                       int out_cl, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    aclnnStatus rc = emu_check_view(sp, "gradOutput", a->go, spatial, go_cl, &p->go);
    if (rc == ACLNN_SUCCESS) {
        rc = emu_check_view(sp, "out", a->out, spatial, out_cl, &p->out);
    }
    if (rc != ACLNN_SUCCESS) {
        return rc;
    }
    /* N and C from gradOutput (equal to out's where out has them); the result's H and W from out's view
     * unless the op set them (the Cube kernels take them from inputSize, not from out). */
    p->N = p->go.sizes[0];
    p->C = p->go.sizes[1];
    if (p->inH <= 0 || p->inW <= 0) {
        p->inH = p->out.sizes[2];
        p->inW = p->out.sizes[3];
    }
    p->outH = p->go.sizes[2];
    p->outW = p->go.sizes[3];
    p->align_corners = a->align;
    aclOpExecutor *e = aclemu_executor_create(sp->op_name, emu_kernel_run, p, sizeof *p, p->ws_size);
    if (e == NULL) {
        EMU_FAIL(ACLNN_ERR_INNER, "%s: out of host memory creating the executor", sp->api);
    }
    *workspaceSize = p->ws_size;
    *executor = e;
    return ACLNN_SUCCESS;
}

aclnnStatus emu_finish_empty(const emu_op_spec *sp, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    emu_op_params p = {.kernel = EMU_KERNEL_NONE};
    aclOpExecutor *e = aclemu_executor_create(sp->op_name, emu_kernel_run, &p, sizeof p, 0);
    if (e == NULL) {
        EMU_FAIL(ACLNN_ERR_INNER, "%s: out of host memory creating the executor", sp->api);
    }
    *workspaceSize = 0;
    *executor = e;
    return ACLNN_SUCCESS;
}
