/*
 * The SoC table of the emulation: every SoC_version of hicann/runtime
 * src/platform/platform_config/{cann,cann-dev,kirin,kirin-dev}/<SoC>.ini with its NpuArch,
 * Short_SoC_version, ai_core_cnt and ub_size (the first ub_size line of the file), extracted by a
 * script from that repository (HEAD of the mirror). The op library reads the emulated SoC's row
 * (aclemu_soc_facts) to pick the device generation (NpuArch) and the TBE kernels' compile info
 * (core count, UB size, Short_SoC_version); aclemuNpuArch reports the arch to tests.
 */
#include "internal.h"

#include <string.h>

static const aclemu_soc_row soc_table[] = {
    {"Ascend350_354f", 3510, "Ascend350", 14, 253952}, /* cann-dev/Ascend350_354f.ini */
    {"Ascend350_355e", 3510, "Ascend350", 16, 253952}, /* cann-dev/Ascend350_355e.ini */
    {"Ascend950DT_950x", 3510, "Ascend950", 8, 253952}, /* cann-dev/Ascend950DT_950x.ini */
    {"Ascend950DT_950y", 3510, "Ascend950", 8, 253952}, /* cann-dev/Ascend950DT_950y.ini */
    {"Ascend950DT_9571", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9571.ini */
    {"Ascend950DT_9572", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9572.ini */
    {"Ascend950DT_9573", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9573.ini */
    {"Ascend950DT_9574", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9574.ini */
    {"Ascend950DT_9575", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9575.ini */
    {"Ascend950DT_9576", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9576.ini */
    {"Ascend950DT_9577", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9577.ini */
    {"Ascend950DT_9578", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950DT_9578.ini */
    {"Ascend950DT_9581", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9581.ini */
    {"Ascend950DT_9581x", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9581x.ini */
    {"Ascend950DT_9582", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9582.ini */
    {"Ascend950DT_9582x", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9582x.ini */
    {"Ascend950DT_9583", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9583.ini */
    {"Ascend950DT_9584", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9584.ini */
    {"Ascend950DT_9585", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9585.ini */
    {"Ascend950DT_9586", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9586.ini */
    {"Ascend950DT_9587", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9587.ini */
    {"Ascend950DT_9588", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950DT_9588.ini */
    {"Ascend950DT_9591", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950DT_9591.ini */
    {"Ascend950DT_9592", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950DT_9592.ini */
    {"Ascend950DT_9595", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950DT_9595.ini */
    {"Ascend950DT_9596", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950DT_9596.ini */
    {"Ascend950DT_95A1", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950DT_95A1.ini */
    {"Ascend950DT_95A2", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950DT_95A2.ini */
    {"Ascend950PR_950z", 3510, "Ascend950", 4, 253952}, /* cann-dev/Ascend950PR_950z.ini */
    {"Ascend950PR_9579", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950PR_9579.ini */
    {"Ascend950PR_957b", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950PR_957b.ini */
    {"Ascend950PR_957bx", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950PR_957bx.ini */
    {"Ascend950PR_957c", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950PR_957c.ini */
    {"Ascend950PR_957d", 3510, "Ascend950", 28, 253952}, /* cann-dev/Ascend950PR_957d.ini */
    {"Ascend950PR_9589", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950PR_9589.ini */
    {"Ascend950PR_958b", 3510, "Ascend950", 32, 253952}, /* cann-dev/Ascend950PR_958b.ini */
    {"Ascend950PR_9599", 3510, "Ascend950", 36, 253952}, /* cann-dev/Ascend950PR_9599.ini */
    {"Ascend031", 3004, "Ascend031", 1, 30720}, /* cann/Ascend031.ini */
    {"Ascend035", 3505, "Ascend035", 1, 32768}, /* cann/Ascend035.ini */
    {"Ascend035A", 3505, "Ascend035", 1, 131072}, /* cann/Ascend035A.ini */
    {"Ascend035B", 3505, "Ascend035", 1, 262144}, /* cann/Ascend035B.ini */
    {"Ascend310B1", 3002, "Ascend310B", 1, 253952}, /* cann/Ascend310B1.ini */
    {"Ascend310B2", 3002, "Ascend310B", 1, 253952}, /* cann/Ascend310B2.ini */
    {"Ascend310B3", 3002, "Ascend310B", 1, 253952}, /* cann/Ascend310B3.ini */
    {"Ascend310B4", 3002, "Ascend310B", 1, 253952}, /* cann/Ascend310B4.ini */
    {"Ascend310P1", 2002, "Ascend310P", 10, 262144}, /* cann/Ascend310P1.ini */
    {"Ascend310P3", 2002, "Ascend310P", 8, 262144}, /* cann/Ascend310P3.ini */
    {"Ascend310P5", 2002, "Ascend310P", 8, 262144}, /* cann/Ascend310P5.ini */
    {"Ascend310P7", 2002, "Ascend310P", 8, 262144}, /* cann/Ascend310P7.ini */
    {"Ascend910A", 1001, "Ascend910", 32, 262144}, /* cann/Ascend910A.ini */
    {"Ascend910B", 1001, "Ascend910", 30, 262144}, /* cann/Ascend910B.ini */
    {"Ascend910B1", 2201, "Ascend910B", 24, 196608}, /* cann/Ascend910B1.ini */
    {"Ascend910B2", 2201, "Ascend910B", 24, 196608}, /* cann/Ascend910B2.ini */
    {"Ascend910B2C", 2201, "Ascend910B", 24, 196608}, /* cann/Ascend910B2C.ini */
    {"Ascend910B3", 2201, "Ascend910B", 20, 196608}, /* cann/Ascend910B3.ini */
    {"Ascend910B4-1", 2201, "Ascend910B", 20, 196608}, /* cann/Ascend910B4-1.ini */
    {"Ascend910B4", 2201, "Ascend910B", 20, 196608}, /* cann/Ascend910B4.ini */
    {"Ascend910PremiumA", 1001, "Ascend910", 32, 262144}, /* cann/Ascend910PremiumA.ini */
    {"Ascend910ProA", 1001, "Ascend910", 32, 262144}, /* cann/Ascend910ProA.ini */
    {"Ascend910ProB", 1001, "Ascend910", 30, 262144}, /* cann/Ascend910ProB.ini */
    {"Ascend910_9362", 2201, "Ascend910_93", 20, 196608}, /* cann/Ascend910_9362.ini */
    {"Ascend910_9363", 2201, "Ascend910_93", 20, 196608}, /* cann/Ascend910_9363.ini */
    {"Ascend910_9372", 2201, "Ascend910_93", 20, 196608}, /* cann/Ascend910_9372.ini */
    {"Ascend910_9381", 2201, "Ascend910_93", 24, 196608}, /* cann/Ascend910_9381.ini */
    {"Ascend910_9382", 2201, "Ascend910_93", 24, 196608}, /* cann/Ascend910_9382.ini */
    {"Ascend910_9391", 2201, "Ascend910_93", 24, 196608}, /* cann/Ascend910_9391.ini */
    {"Ascend910_9392", 2201, "Ascend910_93", 24, 196608}, /* cann/Ascend910_9392.ini */
    {"KirinDev0000", 5101, "KirinDev0000", 4, 131072}, /* kirin-dev/KirinDev0000.ini */
    {"KirinDev0001", 5161, "KirinDev0001", 5, 131072}, /* kirin-dev/KirinDev0001.ini */
    {"KirinDev0002", 5165, "KirinDev0002", 1, 131072}, /* kirin-dev/KirinDev0002.ini */
    {"KirinDev0003", 5163, "KirinDev0003", 5, 131072}, /* kirin-dev/KirinDev0003.ini */
    {"Kirin9030", 3113, "Kirin9030", 1, 131072}, /* kirin/Kirin9030.ini */
    {"KirinX90", 3003, "KirinX90", 1, 131072}, /* kirin/KirinX90.ini */
};

/* The row of the SoC aclrtGetSocName reports (ACLEMU_SOC, default Ascend910B3), or NULL when the name
 * is not in the table (or the SoC name is unset-but-empty). */
EMU_API const aclemu_soc_row *aclemu_soc_facts(void)
{
    const char *soc = aclemu_soc();
    if (soc == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof soc_table / sizeof soc_table[0]; i++) {
        if (strcmp(soc_table[i].name, soc) == 0) {
            return &soc_table[i];
        }
    }
    return NULL;
}

int32_t aclemuNpuArch(void)
{
    const aclemu_soc_row *r = aclemu_soc_facts();
    return r != NULL ? (int32_t)r->npu_arch : 2201;
}
