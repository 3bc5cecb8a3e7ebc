/*
 * Which device the emulated operators behave as, and what phase 1 reads from the runtime.
 *  - Generation: the op_apis branch on the NpuArch of the current platform (ops-cv
 *    common/inc/op_api/aclnn_check.h IsRegBase(): DAV_3510; aclnn_upsample_bilinear_2d_backward_v2.cpp
 *    CheckDtypeValid and its routing: DAV_2201, DAV_1001, DAV_2002, anything else "not implemented").
 *    The arch comes from the SoC table (src/ascendcl/soc_table.c, hicann/runtime platform_config
 *    *.ini NpuArch) for the name the runtime reports: 2201 -> Atlas A2/A3 rules, 3510 -> Ascend 950,
 *    1001 (Atlas training: Ascend910A, Ascend910B, Ascend910ProA/ProB/PremiumA) and 2002 (Ascend310P*)
 *    -> the TBE generation (ResizeBilinearV2Grad5HD only, tbe5hd.c). A name that is not in the table
 *    keeps the A2/A3 rules (an unknown SoC is not guessed at); a table SoC of any other arch
 *    (Ascend310B* 3002, Ascend035* 3505, Kirin*, ...) is refused at phase 1 (emu_check_arch).
 *  - Deterministic flag: opbase src/nnopbase/composite_op/aclnn_engine/op_executor.cpp
 *    (InitL2Phase1Context, run by L2_DFX_PHASE_1 at the start of every GetWorkspaceSize) reads
 *    aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC), the process-wide value, into the thread's op config
 *    (isDeterministicOn_ = level >= 1); tilingctx_builder.cpp hands that to the tiling as
 *    GetDeterministic(), and the tiling runs in phase 1 (op_executor.cpp CreatAiCoreKernelLauncher ->
 *    GetWorkspace). So the kernel is chosen from the value in force at phase 1.
 */
#include "opapi.h"

#include <string.h>

/* A2 defaults for a name outside the table: Ascend910B3's row (the runtime's default SoC). */
#define A2_DEFAULT_CORES 20
#define A2_DEFAULT_UB 196608

uint32_t emu_soc_arch(void) { return (uint32_t)aclemuNpuArch(); }

int emu_soc_generation(void)
{
    switch (emu_soc_arch()) {
    case 2201u: return EMU_GEN_A2;
    case 3510u: return EMU_GEN_950;
    case 1001u:
    case 2002u: return EMU_GEN_TBE;
    default: return EMU_GEN_UNSUPPORTED;
    }
}

aclnnStatus emu_check_arch(const emu_op_spec *sp)
{
    if (emu_soc_generation() == EMU_GEN_UNSUPPORTED) {
        /* aclnn_upsample_bilinear_2d_backward_v2.cpp CheckDtypeValid: "support for %u is not implemented" */
        EMU_FAIL(ACLNN_ERR_PARAM_INVALID, "%s: support for arch %u is not implemented (SoC %s)", sp->api,
                 emu_soc_arch(), aclemu_soc() ? aclemu_soc() : "?");
    }
    return ACLNN_SUCCESS;
}

/*
 * The compile info ResizeBilinearV2Grad5HD records (resize_bilinear_v2_grad.py __init__, l1_support,
 * compute): tensor_size = ub_size / sizeof(float32) / 2, tensor_c = tensor_size / 16; l1_support = 1
 * iff Short_SoC_version is Ascend910 or Ascend310P (ASCEND_610 / BS9SX1A are not in the table);
 * core_num = ai_core_cnt.
 */
void emu_tbe_compile_info(int64_t *cores, int64_t *tensor_c, int *l1_support)
{
    const aclemu_soc_row *r = aclemu_soc_facts();
    int64_t ub = r != NULL ? r->ub_size : A2_DEFAULT_UB;
    *cores = r != NULL && r->ai_core_cnt > 0 ? r->ai_core_cnt : A2_DEFAULT_CORES;
    *tensor_c = ub / 4 / 2 / 16;
    *l1_support = r != NULL && (strcmp(r->short_name, "Ascend910") == 0 || strcmp(r->short_name, "Ascend310P") == 0);
}

/*
 * The arch35 tilings' platform reads (ResizeNearestNeighborV2, ResizeBilinearV2 TilingPrepare:
 * GetCoreNumAiv, GetCoreMemSize(UB)): vector_core_cnt and ub_size. Every NpuArch 3510 ini of
 * hicann/runtime platform_config/cann-dev has vector_core_cnt = 2 x ai_core_cnt (cube_vector_combine
 * = split: Ascend950PR_9599 36 / 72, Ascend950PR_950z 4 / 8), so the table's ai_core_cnt gives it.
 */
void emu_soc_vector_info(int64_t *aiv_cores, int64_t *ub_size)
{
    const aclemu_soc_row *r = aclemu_soc_facts();
    int64_t ai = r != NULL && r->ai_core_cnt > 0 ? r->ai_core_cnt : A2_DEFAULT_CORES;
    *aiv_cores = 2 * ai;
    *ub_size = r != NULL ? r->ub_size : A2_DEFAULT_UB;
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
    case EMU_KERNEL_COPY: return "ViewCopy";
    default: return NULL;
    }
}

int emu_kernel_is_atomic(const emu_op_params *p)
{
    return p->kernel == EMU_KERNEL_RB950_SIMT || p->kernel == EMU_KERNEL_RB950_C_PARALLEL ||
           (p->kernel == EMU_KERNEL_RB5HD && (p->tbe_mode == 5 || p->tbe_mode == 6));
}
