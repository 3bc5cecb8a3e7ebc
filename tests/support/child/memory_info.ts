// Child process of tests/api/friction_test.ts: the CPU backend's memoryInfo() under the permissions
// the parent chose; prints its result or the error as one JSON line.

import { Device } from "../../../mod.ts";

using device = Device.open({ backend: "cpu" });
try {
  console.log(JSON.stringify(device.memoryInfo()));
} catch (error) {
  console.log(JSON.stringify({ error: (error as Error).name, message: (error as Error).message }));
}
