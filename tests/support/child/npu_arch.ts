// Child process of families_emulation_test.ts: the emulated SoC's NpuArch as the emulation's own
// table has it (ACLEMU_SOC is read once per process), and what Device.open makes of that SoC: one
// JSON line.

import { Device } from "../../../mod.ts";
import { EMU_DIR, emuNpuArch } from "../helpers.ts";

const arch = emuNpuArch();
try {
  using device = Device.open({ backend: "npu", libDir: EMU_DIR });
  console.log(JSON.stringify({ arch, generation: device.generation }));
} catch (error) {
  console.log(
    JSON.stringify({ arch, error: (error as Error).name, message: (error as Error).message }),
  );
}
