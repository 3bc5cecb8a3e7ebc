// Child process of emulator_env_test.ts: opens the emulated NPU under the ACLEMU_* environment the
// parent chose (the emulation reads it once per process) and prints one JSON line: the device's name
// and memory, or the error thrown.

import { Device } from "../../../mod.ts";
import { EMU_DIR } from "../helpers.ts";

try {
  using device = Device.open({ backend: "npu", libDir: EMU_DIR });
  console.log(JSON.stringify({ name: device.name, total: device.memoryInfo().total }));
} catch (error) {
  console.log(JSON.stringify({ error: (error as Error).name, message: (error as Error).message }));
}
