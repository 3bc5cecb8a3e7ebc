/*
 * Which device the emulated operators behave as, and what phase 1 reads from the runtime.
 *  - Generation: the op_apis branch on IsRegBase() (ops-cv common/inc/op_api/aclnn_check.h: the
 *    current NpuArch is DAV_3510) and the tilings on IsRegbaseSocVersion (common/src/op_host/
 *    tiling_util.cpp, the same set), i.e. on the SoC the runtime reports. Here: a SoC name starting
 *    with "Ascend950" (Ascend950PR_*, Ascend950DT_*) is Ascend 950 (arch35, DAV_3510); every other
 *    name, NULL included, keeps the Atlas A2/A3 rules (an unknown SoC is not guessed at).
 *  - Deterministic flag: opbase src/nnopbase/composite_op/aclnn_engine/op_executor.cpp
 *    (InitL2Phase1Context, run by L2_DFX_PHASE_1 at the start of every GetWorkspaceSize) reads
 *    aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC), the process-wide value, into the thread's op config
 *    (isDeterministicOn_ = level >= 1); tilingctx_builder.cpp hands that to the tiling as
 *    GetDeterministic(), and the tiling runs in phase 1 (op_executor.cpp CreatAiCoreKernelLauncher ->
 *    GetWorkspace). So the kernel is chosen from the value in force at phase 1.
 */
#include "opapi.h"

#include <string.h>

int emu_soc_generation(void)
{
    const char *soc = aclemu_soc();
    return soc != NULL && strncmp(soc, "Ascend950", 9) == 0 ? EMU_GEN_950 : EMU_GEN_A2;
}

int emu_phase1_deterministic(void) { return aclemu_process_opt(ACL_OPT_DETERMINISTIC) >= 1; }

const char *emu_kernel_name(const emu_op_params *p)
{
    if (p->kname != NULL) {
        return p->kname;
    }
    switch (p->kernel) {
    case EMU_KERNEL_NEAREST_EXACT: return "UpsampleNearestExact2dGrad";
    case EMU_KERNEL_BILINEAR_GRAD: return "UpsampleBilinear2dGrad";
    case EMU_KERNEL_RESIZE_GRAD: return "ResizeBilinearV2Grad";
    case EMU_KERNEL_COPY: return "ViewCopy";
    default: return NULL;
    }
}

int emu_kernel_is_atomic(int kernel)
{
    return kernel == EMU_KERNEL_RB950_SIMT || kernel == EMU_KERNEL_RB950_C_PARALLEL;
}
