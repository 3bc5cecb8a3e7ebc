/**
 * Test and benchmark lanes: the backends the NPU suites run on, decided once per process.
 *
 * - `npu`: the CANN that the library's own search finds (`Device.open({ backend: "npu" })` without
 *   `libDir`: `ACLNN_LIB_DIR`, `ASCEND_HOME_PATH`, the standard install folders, the system loader), as
 *   a user's script on an Atlas host gets it. Ignored, with the reason, when nothing opens.
 * - `npu-emulated`: the host emulation build (`EMU_DIR` of `helpers.ts`), always by explicit
 *   `libDir`. The only lane where the emulator's test controls (`aclemu*`: counters, fault injection)
 *   apply.
 *
 * One CANN runtime per process. The dynamic loader identifies a library by its file (device + inode),
 * so when the discovered CANN *is* the emulation (a toolkit tree whose `lib64` links to the build, as
 * `tools/install_emulated_toolkit.sh` makes it), both lanes share one runtime and both run. When the
 * discovered `libascendcl.so` is another file (a real CANN, or a copied emulation), the two cannot live
 * in one process: `libnnopbase.so` and `libopapi.so` name `libascendcl.so` in `DT_NEEDED`, and the loader
 * binds that name (their SONAME) to whichever copy was loaded first, so the second CANN's operators would
 * run against the first one's runtime. Then the `npu` lane runs (the user meant the real CANN) and
 * everything that needs the emulation is ignored with the command that runs it on its own:
 * `ACLNN_TEST_LANES=cpu,cpu-typescript,npu-emulated deno task test`.
 *
 * `ACLNN_TEST_LANES` (comma-separated labels, default all) picks lanes; an unlisted `npu` lane is never
 * probed, so it loads nothing.
 *
 * @module
 */

import { Device } from "../../mod.ts";
import { deviceInternals } from "../../src/device.ts";
import type { NpuBackend } from "../../src/ffi/npu_backend.ts";
import { emulationDir } from "../../tools/emu_dir.ts";

/** Labels of the lanes. */
export type LaneLabel = "cpu" | "cpu-typescript" | "npu-emulated" | "npu";

/** Every lane label, in run order. */
export const LANE_LABELS: readonly LaneLabel[] = ["cpu", "cpu-typescript", "npu-emulated", "npu"];

/** A backend the public-API suites run on. */
export interface BackendCase {
  /** Label for test and bench names. */
  readonly label: LaneLabel;
  /** Which backend the lane's devices run on. */
  readonly kind: "cpu" | "npu";
  /** Whether the device is the emulated NPU, where the emulator's counters and controls apply. */
  readonly emulated: boolean;
  /** Why the lane cannot run in this process; `undefined` when it runs. */
  readonly ignore: string | undefined;
  /** Where the lane's CANN was found (NPU lanes that run), for messages. */
  readonly source: string | undefined;
  /** Opens a fresh device (throws when the lane is ignored). */
  open(): Device;
  /**
   * `Deno.test` for this lane (same overloads): registered as ignored, the lane named in the test
   * name, when the lane cannot run here.
   */
  test(nameOrOptions: string | LaneTestOptions, fn?: LaneTestFn): void;
}

/** The body of a test. */
export type LaneTestFn = (t: Deno.TestContext) => void | Promise<void>;
/** `Deno.test` options; `fn` may instead be the second argument. */
export type LaneTestOptions = Omit<Deno.TestDefinition, "fn"> & { fn?: LaneTestFn };

type LaneFields = Omit<BackendCase, "test">;

function makeLane(fields: LaneFields): BackendCase {
  return {
    ...fields,
    test(nameOrOptions, fn): void {
      const definition = typeof nameOrOptions === "string"
        ? { name: nameOrOptions, fn: fn! }
        : { ...nameOrOptions, fn: fn ?? nameOrOptions.fn! };
      const ignored = fields.ignore !== undefined;
      Deno.test({
        ...definition,
        name: ignored ? `${definition.name} [lane ${fields.label} ignored]` : definition.name,
        ignore: ignored || definition.ignore,
      });
    },
  };
}

/** What {@link decideLanes} needs to know about the process; injectable for tests. */
export interface LaneProbe {
  /** The `ACLNN_TEST_LANES` value, or undefined. */
  readonly selection: string | undefined;
  /** Opens the NPU the library's search finds (throws when none). */
  openDiscovered(): Device;
  /** The folder the discovered device's CANN was loaded from. */
  folderOf(device: Device): string;
  /** File identity (`dev:ino`) of a path, or undefined when missing. */
  identity(path: string): string | undefined;
  /** Paths and identities of every `libascendcl.so`/`libacl_rt.so` mapped into the process. */
  mappedRuntimes(): Array<{ path: string; identity: string }>;
}

const EMULATED_ONLY =
  "ACLNN_TEST_LANES=cpu,cpu-typescript,npu-emulated deno task test runs the emulated lane on its own";

/** What was decided for one lane: runs (`ignore` undefined) or not, and why. */
export interface LaneDecision {
  /** The lane. */
  readonly label: LaneLabel;
  /** Why it cannot run; undefined when it runs. */
  readonly ignore: string | undefined;
  /** Where its CANN was found (NPU lanes that run). */
  readonly source: string | undefined;
}

/**
 * The lane for a decision: its backend, and a device opener that never searches elsewhere (the
 * emulated lane always by explicit `libDir`, the `npu` lane always through the library's search).
 *
 * @example
 * ```ts ignore
 * laneOf({ label: "npu", ignore: undefined, source: "Ascend910B3 #0 from /opt/lib64" }, "native/build/");
 * ```
 */
export function laneOf(decision: LaneDecision, emuDir: string): BackendCase {
  const { label, ignore } = decision;
  const open = ignore !== undefined
    ? (): Device => {
      throw new Error(`lane ${label} is ignored in this process: ${ignore}`);
    }
    : label === "cpu"
    ? (): Device => Device.open({ backend: "cpu" })
    : label === "cpu-typescript"
    ? (): Device => Device.open({ backend: "cpu", cpuKernels: "typescript" })
    : label === "npu-emulated"
    ? (): Device => Device.open({ backend: "npu", libDir: emuDir })
    : (): Device => Device.open({ backend: "npu" });
  return makeLane({
    ...decision,
    kind: label === "cpu" || label === "cpu-typescript" ? "cpu" : "npu",
    emulated: label === "npu-emulated",
    open,
  });
}

/**
 * Decides which lanes run in this process, probing the `npu` lane through the library's normal search.
 *
 * @example
 * ```ts ignore
 * const lanes = decideLanes(processProbe(), "native/build/");
 * lanes.find((lane) => lane.label === "npu")?.ignore; // e.g. "no NPU through the library's search (...)"
 * ```
 */
export function decideLanes(probe: LaneProbe, emuDir: string): BackendCase[] {
  const wanted = parseSelection(probe.selection);
  const notSelected = `not in ACLNN_TEST_LANES=${probe.selection}`;
  const decide = (label: LaneLabel, ignore?: string, source?: string): LaneDecision => ({
    label,
    ignore: wanted.has(label) ? ignore : notSelected,
    source: wanted.has(label) && ignore === undefined ? source : undefined,
  });

  // The real lane first: whether it loads another runtime decides whether the emulation may load.
  let real = decide("npu");
  let foreignRuntime: string | undefined;
  if (wanted.has("npu")) {
    try {
      using device = probe.openDiscovered();
      real = decide("npu", undefined, `${device.name} from ${probe.folderOf(device)}`);
    } catch (error) {
      const first = (error as Error).message.split("\n").map((line) => line.trim())
        .filter((line) => line !== "").slice(0, 2).join(" ");
      real = decide(
        "npu",
        `no NPU through the library's search (${first}); on an Ascend host source ` +
          `<CANN>/ascend-toolkit/set_env.sh or set ACLNN_LIB_DIR`,
      );
    }
    // Even a failed probe may leave a runtime mapped (CANN's libraries are not unloadable).
    const emulation = probe.identity(`${emuDir}libascendcl.so`);
    foreignRuntime = probe.mappedRuntimes().find((lib) => lib.identity !== emulation)?.path;
  }

  const emulated = foreignRuntime !== undefined
    ? decide(
      "npu-emulated",
      `the npu lane loaded another CANN runtime (${foreignRuntime}) and the emulation's libraries ` +
        `would bind to it by SONAME; ${EMULATED_ONLY}`,
    )
    : probe.identity(`${emuDir}libascendcl.so`) === undefined
    ? decide(
      "npu-emulated",
      `the emulation is not built in ${emuDir} (run deno task build:native)`,
    )
    : decide("npu-emulated", undefined, `host emulation from ${emuDir}`);
  return [decide("cpu"), decide("cpu-typescript"), emulated, real].map((d) => laneOf(d, emuDir));
}

function parseSelection(selection: string | undefined): Set<LaneLabel> {
  if (selection === undefined || selection.trim() === "") return new Set(LANE_LABELS);
  const wanted = new Set<LaneLabel>();
  for (const item of selection.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    if (!(LANE_LABELS as readonly string[]).includes(item)) {
      throw new Error(
        `ACLNN_TEST_LANES: unknown lane "${item}" (lanes: ${LANE_LABELS.join(", ")})`,
      );
    }
    wanted.add(item as LaneLabel);
  }
  return wanted;
}

/**
 * The real process: `ACLNN_TEST_LANES`, the library's own `Device.open`, `stat`, `/proc/self/maps`.
 *
 * @example
 * ```ts ignore
 * const lanes = decideLanes(processProbe(), "native/build/");
 * ```
 */
export function processProbe(): LaneProbe {
  return {
    selection: Deno.env.get("ACLNN_TEST_LANES"),
    openDiscovered: () => Device.open({ backend: "npu" }),
    folderOf: (device) =>
      (deviceInternals(device).backend() as unknown as NpuBackend).runtime.libs.dir,
    identity: (path) => {
      try {
        const info = Deno.statSync(path);
        return `${info.dev}:${info.ino}`;
      } catch {
        return undefined;
      }
    },
    mappedRuntimes: () => {
      const maps = readProcSelfMaps();
      return maps === null ? [] : mappedRuntimes(maps);
    },
  };
}

const LIBC = {
  open: { parameters: ["buffer", "i32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

// Deno wants --allow-all for /proc/self/maps; the tests already hold --allow-ffi, which can read it
// through libc. Null where neither works (not Linux, where CANN does not run either).
function readProcSelfMaps(): string | null {
  try {
    return Deno.readTextFileSync("/proc/self/maps");
  } catch {
    // fall through to libc
  }
  let libc: Deno.DynamicLibrary<typeof LIBC>;
  try {
    libc = Deno.dlopen("libc.so.6", LIBC);
  } catch {
    return null;
  }
  try {
    const fd = libc.symbols.open(new TextEncoder().encode("/proc/self/maps\0"), 0 /* O_RDONLY */);
    if (fd < 0) return null;
    const chunks: Uint8Array[] = [];
    for (;;) {
      const chunk = new Uint8Array(1 << 16);
      const n = Number(libc.symbols.read(fd, chunk, BigInt(chunk.length)));
      if (n <= 0) break;
      chunks.push(chunk.subarray(0, n));
    }
    libc.symbols.close(fd);
    const decoder = new TextDecoder();
    return chunks.map((chunk) => decoder.decode(chunk, { stream: true })).join("") +
      decoder.decode();
  } finally {
    libc.close();
  }
}

/**
 * Every `libascendcl.so`/`libacl_rt.so` in a `/proc/<pid>/maps` text, with its identity (`dev:ino`
 * as `stat` reports them: the maps file gives the device as hex `major:minor`).
 *
 * @example
 * ```ts
 * import { mappedRuntimes } from "./lanes.ts";
 * mappedRuntimes("7f00-7f01 r-xp 00000000 08:01 42 /opt/lib64/libascendcl.so");
 * // [{ path: "/opt/lib64/libascendcl.so", identity: "2049:42" }]
 * ```
 */
export function mappedRuntimes(maps: string): Array<{ path: string; identity: string }> {
  const found = new Map<string, string>();
  for (const line of maps.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 6) continue;
    const path = fields.slice(5).join(" ");
    if (!/\/(libascendcl|libacl_rt)\.so$/.test(path)) continue;
    const [major, minor] = fields[3].split(":").map((hex) => parseInt(hex, 16));
    // Linux's new_encode_dev, the st_dev value stat returns.
    const dev = (minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12);
    found.set(path, `${dev}:${fields[4]}`);
  }
  return [...found].map(([path, identity]) => ({ path, identity }));
}

/**
 * The lanes of this process, decided once per process (and each lane's state printed once), on the
 * first call. Test files run in separate module graphs of one process; the decision is kept in the
 * process environment under a name with the pid (child processes decide for themselves), because a
 * later probe would find what an earlier one loaded: a bare `dlopen("libascendcl.so")` matches a
 * library already loaded under that SONAME, the emulation included.
 *
 * @example
 * ```ts ignore
 * for (const lane of processLanes("native/build/")) console.log(lane.label, lane.ignore ?? "runs");
 * ```
 */
export function processLanes(emuDir: string): readonly BackendCase[] {
  const key = `ACLNN_TEST_LANES_DECIDED_${Deno.pid}`;
  const saved = Deno.env.get(key);
  if (saved !== undefined) {
    const decisions = JSON.parse(saved) as LaneDecision[];
    return Object.freeze(decisions.map((decision) => laneOf(decision, emuDir)));
  }
  const lanes = Object.freeze(decideLanes(processProbe(), emuDir));
  Deno.env.set(
    key,
    JSON.stringify(lanes.map(({ label, ignore, source }) => ({ label, ignore, source }))),
  );
  for (const lane of lanes) {
    if (lane.ignore !== undefined) console.log(`lane ${lane.label} ignored: ${lane.ignore}`);
    else if (lane.source !== undefined) console.log(`lane ${lane.label}: ${lane.source}`);
  }
  return lanes;
}

// `deno run --allow-ffi --allow-env --allow-read tests/support/lanes.ts [--json] [<emulation dir>]`: which lanes
// run in a process started like this one (the same environment), and why the others do not.
if (import.meta.main) {
  const json = Deno.args.includes("--json");
  const emuDir = Deno.args.find((arg) => arg !== "--json") ?? emulationDir();
  const lanes = decideLanes(processProbe(), emuDir);
  if (json) {
    console.log(
      JSON.stringify(lanes.map(({ label, ignore, source }) => ({ label, ignore, source }))),
    );
  } else {
    for (const lane of lanes) {
      console.log(`${lane.label}: ${lane.ignore ?? `runs (${lane.source ?? "cpu"})`}`);
    }
  }
}
