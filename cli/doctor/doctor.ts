/**
 * `deno task doctor`: what a user needs to know about this host, as a list of checks — the folders
 * searched and the libraries found, the CANN runtime (version, SoC, devices, memory), `ASCEND_OPP_PATH`,
 * the optional features, the backend `Device.open()` picks and why, and a short run of each op checked
 * against a reference. Every warning and failure carries its fix.
 *
 * @module
 */

import { fallbackReasonOf } from "../../src/backend_choice.ts";
import { Device, deviceInternals } from "../../src/device.ts";
import {
  allowEnvFlag,
  type CannDiscovery,
  type CannLibraries,
  discoverCann,
  searchPlan,
  SYSTEM_LOADER,
} from "../../src/ffi/loader.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { type Check, checkFromError, splitFix } from "./report.ts";
import { generationChecks } from "./generation.ts";
import { smokeChecks } from "./smoke.ts";
import { adjointChecks } from "./adjoint.ts";

/** What the doctor checks: the same options as `Device.open`'s. */
export interface DoctorOptions {
  /** A CANN folder (then searched alone, as `Device.open({ libDir })` does). */
  readonly libDir?: string;
  /** The NPU to check (default 0). */
  readonly deviceId?: number;
  /**
   * Whether an NPU is required: then its absence fails. Also implied by `libDir`, `deviceId`,
   * `$ACLNN_LIB_DIR` and `$ASCEND_HOME_PATH`; otherwise a host without one is information (the CPU
   * backend serves).
   */
  readonly npu?: boolean;
}

const VERSION_SYMBOLS = {
  /** aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch) (deprecated, still present) */
  aclrtGetVersion: {
    parameters: ["buffer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * Runs every check. Needs `--allow-ffi --allow-env --allow-read`; without them the checks say so.
 *
 * @example
 * ```ts ignore
 * import { formatReport } from "./report.ts";
 * import { runDoctor } from "./doctor.ts";
 * console.log(formatReport(await runDoctor()));
 * ```
 */
export async function runDoctor(options: DoctorOptions = {}): Promise<Check[]> {
  const checks: Check[] = [];
  const asked = npuAsked(options);
  // Without an NPU asked for, its absence is information: the CPU backend serves.
  const absent = asked ? "fail" : "info";
  let discovery: CannDiscovery | undefined;
  try {
    discovery = discoverCann(options.libDir);
  } catch (error) {
    checks.push(
      checkFromError(asked ? "fail" : "warn", "CANN search", error, "run with --allow-ffi"),
    );
  }
  if (discovery) checks.push(...searchChecks(discovery, absent));
  const opp = oppPathCheck();
  // Without any CANN the operator path is beside the point, unless it was set.
  if (discovery?.libs || opp.status === "ok" || opp.title.includes("=")) checks.push(opp);

  let npu: Device | undefined;
  let openError: unknown;
  if (discovery?.libs) {
    try {
      npu = Device.open({
        backend: "npu",
        libDir: options.libDir,
        deviceId: options.deviceId ?? 0,
        // The smoke and adjoint runs meet the gaps on purpose, and the report names them.
        warnings: { ADJOINT_GAP: "ignore" },
      });
    } catch (error) {
      openError = error;
    }
  }
  try {
    if (npu) {
      checks.push(...runtimeChecks(npu, discovery!.libs!));
      checks.push(...await generationChecks(npu));
      checks.push({ status: "ok", title: `Device.open() picks the NPU: ${npu.name}` });
      checks.push(...await smokeChecks(npu));
      checks.push(...await adjointChecks(npu));
    } else {
      checks.push(cpuChoice(discovery, openError, absent));
      using cpu = Device.open({ backend: "cpu" });
      checks.push({
        status: "info",
        title: `CPU backend: ${cpu.name}, PyTorch's results (numerics "${cpu.numerics}")`,
      });
      using reference = Device.open({ backend: "cpu", cpuKernels: "typescript" });
      checks.push(...await smokeChecks(cpu, reference));
      checks.push(...await adjointChecks(cpu));
    }
  } finally {
    npu?.close();
  }
  return checks;
}

// What asks for an NPU: the options, or a CANN named by the environment.
function npuAsked(options: DoctorOptions): boolean {
  if (options.npu || options.libDir !== undefined || options.deviceId !== undefined) return true;
  return searchPlan().requestedBy !== undefined;
}

function searchChecks(discovery: CannDiscovery, absent: "fail" | "info"): Check[] {
  const { plan, attempts, libs, error } = discovery;
  const searched = plan.candidates.map((candidate) =>
    candidate.dir === SYSTEM_LOADER
      ? "the system loader (LD_LIBRARY_PATH, ld.so.cache)"
      : `${candidate.dir} (${candidate.source})`
  );
  const only = plan.exclusive ? ` (${plan.exclusive} given: no other place is searched)` : "";
  const checks: Check[] = [{
    status: "info",
    title: `searched, in order${only}:`,
    detail: searched,
  }];
  if (plan.unreadableEnv.length > 0) {
    checks.push({
      status: "warn",
      title: `not readable without --allow-env: ${plan.unreadableEnv.join(", ")}`,
      fix: `run with ${allowEnvFlag(plan.unreadableEnv)} (or --allow-env)`,
    });
  }
  if (libs) {
    const failed = attempts.length > 0
      ? ["passed over:", ...attempts.map((line) => `  ${line}`)]
      : [];
    checks.push({
      status: "ok",
      title: `CANN found in ${libs.dir} (${libs.source})`,
      detail: [
        ...[libs.aclPath, libs.nnopbasePath, libs.opapiPath].map(describeLibrary),
        ...failed,
      ],
    });
  } else {
    const { lines, fix } = splitFix(error!.message);
    const detail = absent === "fail"
      ? lines.slice(1)
      : [...lines.slice(1), `to use an NPU: ${fix}`];
    checks.push({ status: absent, title: "no CANN found", detail, fix });
  }
  return checks;
}

// "path -> real path" for a file, or where the system loader found a bare name (/proc/self/maps).
function describeLibrary(path: string): string {
  try {
    if (path.startsWith("/")) {
      const real = Deno.realPathSync(path);
      return real === path ? path : `${path} -> ${real}`;
    }
    const maps = Deno.readTextFileSync("/proc/self/maps");
    const line = maps.split("\n").find((entry) => entry.endsWith(`/${path}`));
    return line ? `${path} -> ${line.slice(line.indexOf("/"))}` : path;
  } catch {
    return path; // no --allow-read
  }
}

function oppPathCheck(): Check {
  const fix = "source your CANN's set_env.sh, which sets it to the CANN's opp folder (aclnn " +
    "operators fail with 561107 ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND without it on a real CANN)";
  let value: string | undefined;
  try {
    value = Deno.env.get("ASCEND_OPP_PATH") || undefined;
  } catch {
    return { status: "warn", title: "ASCEND_OPP_PATH: not readable without --allow-env", fix };
  }
  if (value === undefined) return { status: "warn", title: "ASCEND_OPP_PATH is not set", fix };
  try {
    if (Deno.statSync(value).isDirectory) {
      return { status: "ok", title: `ASCEND_OPP_PATH=${value} (exists)` };
    }
  } catch {
    // reported below
  }
  return { status: "warn", title: `ASCEND_OPP_PATH=${value} is not a folder`, fix };
}

function runtimeChecks(npu: Device, libs: CannLibraries): Check[] {
  const backend = deviceInternals(npu).backend() as NpuBackend;
  const checks: Check[] = [];
  const version = Deno.dlopen(libs.aclPath, VERSION_SYMBOLS).symbols.aclrtGetVersion;
  const parts = new Int32Array(3);
  const versionText = version === null
    ? "unknown (no aclrtGetVersion)"
    : version(parts.subarray(0, 1), parts.subarray(1, 2), parts.subarray(2, 3)) === 0
    ? parts.join(".")
    : "unknown (aclrtGetVersion failed)";
  const socPointer = libs.acl.aclrtGetSocName?.() ?? null;
  const soc = socPointer === null
    ? "unknown (no aclrtGetSocName)"
    : Deno.UnsafePointerView.getCString(socPointer);
  const count = new Uint32Array(1);
  const devices = libs.acl.aclrtGetDeviceCount(count) === 0 ? String(count[0]) : "unknown";
  checks.push({
    status: "ok",
    title: `runtime: ACL ${versionText} (aclrtGetVersion), SoC ${soc}, ${devices} device(s)`,
  });
  if (libs.emulated) {
    checks.push({
      status: "info",
      title: "this CANN is the host emulation (native/), not Ascend hardware: it computes what " +
        `the ${soc} kernels compute, on the CPU`,
    });
  }
  try {
    const { free, total } = npu.memoryInfo();
    const gib = (bytes: number): string => (bytes / 2 ** 30).toFixed(2);
    checks.push({
      status: "ok",
      title: `device ${backend.deviceId} memory: ${gib(free)} GiB free of ${gib(total)} GiB`,
    });
  } catch (error) {
    checks.push(checkFromError("warn", "device memory", error, "upgrade CANN"));
  }
  const ops = libs.opapi as unknown as Record<string, unknown>;
  const v2 = ops.aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize !== null &&
    ops.aclnnUpsampleBilinear2dBackwardV2 !== null;
  checks.push(
    v2 ? { status: "ok", title: "bilinear: aclnnUpsampleBilinear2dBackwardV2 available" } : {
      status: "warn",
      title: "bilinear: only V1 (no aclnnUpsampleBilinear2dBackwardV2): bfloat16 and explicit " +
        "scales are rejected",
      fix: "install a CANN whose operator library has aclnnUpsampleBilinear2dBackwardV2",
    },
  );
  try {
    npu.setDeterministic(true);
    npu.setDeterministic(false);
    checks.push({ status: "ok", title: "deterministic option (ACL_OPT_DETERMINISTIC) available" });
  } catch (error) {
    checks.push(
      checkFromError("warn", "deterministic option", error, "upgrade CANN, or leave it off"),
    );
  }
  return checks;
}

function cpuChoice(
  discovery: CannDiscovery | undefined,
  openError: unknown,
  absent: "fail" | "info",
): Check {
  if (openError === undefined) {
    // The search failed, or was not permitted: its check above has the details and the fix.
    const fix = discovery?.error?.fix ?? "run with --allow-ffi";
    const why = discovery ? "no CANN found" : "the NPU path is not permitted";
    const serves = absent === "info" ? "; the CPU backend serves (no NPU was asked for)" : "";
    return {
      status: absent,
      title: `Device.open() picks the CPU backend: ${why} (above)${serves}`,
      fix,
    };
  }
  const reason = fallbackReasonOf(openError) ??
    (openError instanceof RangeError ? openError.message : undefined);
  if (reason === undefined) {
    return checkFromError("fail", "Device.open() throws", openError, "see the error above");
  }
  const { lines, fix } = splitFix(reason.replace(/^Device\.open: /, ""));
  return {
    status: absent,
    title: "Device.open() picks the CPU backend: no usable NPU",
    detail: lines,
    fix: fix ?? "see the reason above",
  };
}
