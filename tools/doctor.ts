/**
 * `deno task doctor [--lib-dir <folder>] [--device-id <n>]`: what this host offers the library (see
 * src/doctor/doctor.ts); exits 1 when the NPU is unusable or a check failed, 2 on bad arguments.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { runDoctor } from "../src/doctor/doctor.ts";
import { exitCodeOf, formatReport } from "../src/doctor/report.ts";

function options(): { libDir?: string; deviceId?: number } {
  const { values } = parseArgs({
    args: Deno.args,
    options: { "lib-dir": { type: "string" }, "device-id": { type: "string" } },
    strict: true,
    allowPositionals: false,
  });
  const id = values["device-id"];
  if (id !== undefined && !/^\d+$/.test(id)) {
    throw new TypeError(`--device-id must be an integer >= 0, got "${id}"`);
  }
  return { libDir: values["lib-dir"], deviceId: id === undefined ? undefined : Number(id) };
}

let parsed;
try {
  parsed = options();
} catch (error) {
  console.error(`doctor: ${(error as Error).message}`);
  console.error("usage: deno task doctor [--lib-dir <folder>] [--device-id <n>]");
  Deno.exit(2);
}
const checks = await runDoctor(parsed);
console.log(formatReport(checks));
Deno.exit(exitCodeOf(checks));
