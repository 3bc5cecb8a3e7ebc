// Child process of discovery_test.ts: opens a device with the options in argv[0] (JSON) `argv[1]` times
// (default 1) under the permissions and environment the parent chose, and prints one JSON line per
// open: the backend, the fallback reason, or the error thrown.

import { Device } from "../../../mod.ts";

const options = JSON.parse(Deno.args[0] ?? "{}");
const times = Number(Deno.args[1] ?? 1);
for (let i = 0; i < times; i++) {
  try {
    using device = Device.open(options);
    console.log(JSON.stringify({ backend: device.backend, fallbackReason: device.fallbackReason }));
  } catch (error) {
    console.log(
      JSON.stringify({ error: (error as Error).name, message: (error as Error).message }),
    );
  }
}
