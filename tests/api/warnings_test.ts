// The one warnings channel (src/warnings.ts): every kind has its stable code, is said once per kind
// and key, and can be silenced, made an error (an UpsampleWarning, thrown before anything is
// allocated) or routed to a callback, per device (`Device.open({ warnings })`) or per process
// (`setDefaultWarnings`); the option is checked. On the emulated NPU: a backward run alone (or a
// forward alone) says nothing about the other direction's kernel; a pair on the same sizes does.

import assert from "node:assert/strict";
import {
  Device,
  setDefaultWarnings,
  type Tensor,
  upsampleBilinear2dBackward,
  upsampleNearestExact1d,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2d,
  upsampleNearestExact2dBackward,
  UpsampleWarning,
  WARNING_KINDS,
  type WarningsOption,
} from "../../mod.ts";
import { checkWarningsOption, forgetSaidWarnings, WarningChannel } from "../../src/warnings.ts";
import { adjointGap } from "../../src/rules/adjoint_gap.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { makeCases } from "../../cli/verify/cases.ts";
import { EMU_DIR, EMULATED_LANE, emulatedGeneration, emuLive } from "../support/helpers.ts";

// What `body` writes through console.warn (the channel's stderr line), restored afterwards.
async function stderrOf(body: () => void | Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  try {
    await body();
  } finally {
    console.warn = warn;
  }
  return lines;
}

// --- DETERMINISTIC_WARN_ONLY, on the CPU device reference of the 910 ---

// A call whose deterministic route would hit the TBE kernel's column loss (tests/cpu/families_test.ts).
const LOSSY = { outputSize: [2, 4], inputSize: [1, 2, 2047, 4], alignCorners: true };

function warnOnlyDevice(warnings?: WarningsOption): Device {
  return Device.open({
    backend: "cpu",
    numerics: "device",
    soc: "Ascend910A",
    deterministic: true,
    deterministicWarnOnly: true,
    ...(warnings === undefined ? {} : { warnings }),
  });
}

function runLossy(device: Device, times: number): void {
  using g = device.zeros([1, 2, 2, 4]);
  for (let i = 0; i < times; i++) {
    using _r = upsampleBilinear2dBackward(g, LOSSY);
  }
}

Deno.test("warnings: DETERMINISTIC_WARN_ONLY by default is one stderr line with its code and how to silence it", async () => {
  forgetSaidWarnings();
  const lines = await stderrOf(() => {
    using device = warnOnlyDevice();
    runLossy(device, 3);
    using other = warnOnlyDevice(); // said once per process, not per device
    runLossy(other, 1);
  });
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(
    lines[0],
    /^@aclnn\/upsample: \[ACLNN_UPSAMPLE_DETERMINISTIC_WARN_ONLY\] upsampleBilinear2dBackward: .*ResizeBilinearV2Grad5HD\.MODE6.*running it anyway\) \(said once per op, kernel and family; silence it with Device\.open\(\{ warnings: \{ DETERMINISTIC_WARN_ONLY: "ignore" \} \}\) or setDefaultWarnings\)$/,
  );
  assert.ok(!lines[0].includes("\n"), "one line");
});

Deno.test("warnings: DETERMINISTIC_WARN_ONLY silenced, routed to a callback, made an error", async () => {
  forgetSaidWarnings();
  const silent = await stderrOf(() => {
    for (const warnings of ["ignore", { DETERMINISTIC_WARN_ONLY: "ignore" }] as const) {
      using device = warnOnlyDevice(warnings);
      runLossy(device, 2);
    }
  });
  assert.deepEqual(silent, []);

  const heard: UpsampleWarning[] = [];
  const printed = await stderrOf(() => {
    using device = warnOnlyDevice({ DETERMINISTIC_WARN_ONLY: (w) => heard.push(w) });
    runLossy(device, 3);
  });
  assert.deepEqual(printed, []);
  assert.equal(heard.length, 1, "said once to the callback");
  assert.ok(heard[0] instanceof UpsampleWarning);
  assert.equal(heard[0].code, "ACLNN_UPSAMPLE_DETERMINISTIC_WARN_ONLY");
  assert.equal(heard[0].kind, "DETERMINISTIC_WARN_ONLY");
  assert.equal(heard[0].key, "upsampleBilinear2dBackward:ResizeBilinearV2Grad5HD.MODE6:910");

  using device = warnOnlyDevice({ DETERMINISTIC_WARN_ONLY: "error" });
  using g = device.zeros([1, 2, 2, 4]);
  for (let i = 0; i < 2; i++) { // an error every time, not once
    assert.throws(
      () => upsampleBilinear2dBackward(g, LOSSY),
      (e: unknown) =>
        e instanceof UpsampleWarning && e.code === "ACLNN_UPSAMPLE_DETERMINISTIC_WARN_ONLY" &&
        /running it anyway/.test(e.message),
    );
  }
});

// --- CPU_FALLBACK: "auto" asked for an NPU by libDir and found no CANN ---

const NO_CANN = "/nonexistent/aclnn-warnings-test/lib64";

Deno.test("warnings: CPU_FALLBACK said once, silenced, routed, made an error (CPU lane)", async () => {
  forgetSaidWarnings();
  const lines = await stderrOf(() => {
    for (let i = 0; i < 2; i++) {
      using device = Device.open({ libDir: NO_CANN });
      assert.equal(device.backend, "cpu");
    }
  });
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(
    lines[0],
    /^@aclnn\/upsample: \[ACLNN_UPSAMPLE_CPU_FALLBACK\] Device\.open\(\) uses the CPU backend although the libDir option asks for an NPU: .*CPU_FALLBACK: "ignore"/,
  );
  assert.ok(!lines[0].includes("\n"), "one line");

  forgetSaidWarnings();
  const silent = await stderrOf(() => {
    using device = Device.open({ libDir: NO_CANN, warnings: { CPU_FALLBACK: "ignore" } });
    assert.ok(device.fallbackReason !== undefined, "the reason is still on the device");
  });
  assert.deepEqual(silent, []);

  const heard: UpsampleWarning[] = [];
  const handler = (w: UpsampleWarning) => heard.push(w);
  const routed = await stderrOf(() => {
    for (let i = 0; i < 2; i++) {
      using _device = Device.open({ libDir: NO_CANN, warnings: handler });
    }
  });
  assert.deepEqual(routed, []);
  assert.deepEqual(heard.map((w) => w.code), ["ACLNN_UPSAMPLE_CPU_FALLBACK"]);

  assert.throws(
    () => Device.open({ libDir: NO_CANN, warnings: { CPU_FALLBACK: "error" } }),
    (e: unknown) => e instanceof UpsampleWarning && e.code === "ACLNN_UPSAMPLE_CPU_FALLBACK",
  );
  // No NPU asked for: no warning at all, whatever the rule.
  using quiet = Device.open({ backend: "cpu", warnings: "error" });
  assert.equal(quiet.backend, "cpu");
});

Deno.test("warnings: setDefaultWarnings rules devices without their own option; theirs wins", async () => {
  forgetSaidWarnings();
  const heard: string[] = [];
  const previous = setDefaultWarnings({ CPU_FALLBACK: (w) => heard.push(w.code) });
  try {
    const lines = await stderrOf(() => {
      using _a = Device.open({ libDir: NO_CANN });
      using _b = Device.open({ libDir: NO_CANN, warnings: { CPU_FALLBACK: "ignore" } });
    });
    assert.deepEqual(lines, []);
    assert.deepEqual(heard, ["ACLNN_UPSAMPLE_CPU_FALLBACK"]);
    setDefaultWarnings("error");
    assert.throws(() => Device.open({ libDir: NO_CANN }), UpsampleWarning);
    using own = Device.open({ libDir: NO_CANN, warnings: "ignore" });
    assert.equal(own.backend, "cpu");
  } finally {
    setDefaultWarnings(previous);
  }
  assert.equal(setDefaultWarnings(undefined), undefined, "restored");
});

Deno.test("warnings: the option is checked, with the option, the value and the rule", () => {
  const bad: Array<[unknown, RegExp]> = [
    [
      "loud",
      /^Device\.open warnings must be "warn", "ignore", "error", a function, or an object keyed by warning kind \(CPU_FALLBACK, ADJOINT_GAP, DETERMINISTIC_WARN_ONLY, DEVICE_DEFECT\), got "loud"$/,
    ],
    [1, /^Device\.open warnings must be .*, got 1$/],
    [null, /^Device\.open warnings must be .*, got null$/],
    [["ignore"], /^Device\.open warnings must be .*, got ignore$/],
    [
      { ADJOINT_GAPS: "ignore" },
      /^Device\.open warnings: unknown warning kind "ADJOINT_GAPS"; kinds: CPU_FALLBACK, /,
    ],
    [
      { ACLNN_UPSAMPLE_ADJOINT_GAP: "ignore" },
      /unknown warning kind "ACLNN_UPSAMPLE_ADJOINT_GAP" \(name the kind: the code without its ACLNN_UPSAMPLE_ prefix\)/,
    ],
    [
      { ADJOINT_GAP: "off" },
      /^Device\.open warnings\.ADJOINT_GAP must be "warn", "ignore", "error" or a function, got "off"$/,
    ],
    [{ ADJOINT_GAP: true }, /^Device\.open warnings\.ADJOINT_GAP must be .*, got true$/],
  ];
  for (const [warnings, message] of bad) {
    assert.throws(
      () => Device.open({ backend: "cpu", warnings: warnings as WarningsOption }),
      (e: unknown) => e instanceof TypeError && message.test(e.message),
      String(warnings),
    );
    assert.throws(() => setDefaultWarnings(warnings as WarningsOption), TypeError);
  }
  assert.equal(setDefaultWarnings(undefined), undefined, "a refused default changes nothing");
  // The device keeps a copy: changing the object afterwards changes nothing.
  const option: { ADJOINT_GAP?: "ignore" | "error" } = { ADJOINT_GAP: "ignore" };
  const channel = new WarningChannel(checkWarningsOption(option, "Device.open warnings"));
  option.ADJOINT_GAP = "error";
  assert.equal(channel.ruleOf("ADJOINT_GAP"), "ignore");
  assert.equal(channel.ruleOf("CPU_FALLBACK"), "warn", "kinds not named: the default");
  assert.deepEqual([...WARNING_KINDS], [
    "CPU_FALLBACK",
    "ADJOINT_GAP",
    "DETERMINISTIC_WARN_ONLY",
    "DEVICE_DEFECT",
  ]);
});

Deno.test("warnings: the channel says each kind once per key and destination, an error every time", () => {
  forgetSaidWarnings();
  for (const kind of WARNING_KINDS) {
    const heard: string[] = [];
    const channel = new WarningChannel({ [kind]: (w: UpsampleWarning) => heard.push(w.key) });
    assert.equal(channel.hears(kind, "a"), true);
    channel.emit({ kind, key: "a", message: "m" });
    assert.equal(channel.hears(kind, "a"), false, `${kind}: said`);
    channel.emit({ kind, key: "a", message: "m" });
    channel.emit({ kind, key: "b", message: "m" });
    assert.deepEqual(heard, ["a", "b"], kind);
    const silent = new WarningChannel({ [kind]: "ignore" });
    assert.equal(silent.hears(kind, "c"), false);
    silent.emit({ kind, key: "c", message: "m" });
    const strict = new WarningChannel({ [kind]: "error" });
    for (let i = 0; i < 2; i++) {
      assert.throws(
        () => strict.emit({ kind, key: "a", message: "m" }),
        (e: unknown) => e instanceof UpsampleWarning && e.code === `ACLNN_UPSAMPLE_${kind}`,
      );
    }
  }
});

// --- ADJOINT_GAP, on the emulated NPU (Atlas A2/A3 or the 950: the families with such gaps) ---

const GAP_FAMILY = ["a2", "950"].includes(emulatedGeneration() ?? "");

// The public backward op of `call`, on a zero gradient of the right shape.
function backward(device: Device, call: UpsampleParams): Tensor {
  const { op, inputSize, outputSize, scales, alignCorners } = call;
  using grad = device.zeros([...inputSize.slice(0, 2), ...outputSize], { dtype: call.dtype });
  if (op === "nearestExact1d") {
    return upsampleNearestExact1dBackward(grad, { outputSize, inputSize, scales: scales[0] });
  }
  const options = { outputSize, inputSize, scalesH: scales[0], scalesW: scales[1] };
  return op === "nearestExact2d"
    ? upsampleNearestExact2dBackward(grad, options)
    : upsampleBilinear2dBackward(grad, { ...options, alignCorners });
}

// A nearest-exact 1d call with a gap on both families (tests/cpu/adjoint_gap_test.ts).
const GAP_1D = { outputSize: [41], inputSize: [1, 1, 2], scales: 0 };

EMULATED_LANE.test({
  name: "warnings: a backward-only run says nothing about the forward kernel (emulated NPU)",
  ignore: !GAP_FAMILY,
}, async () => {
  forgetSaidWarnings();
  const target = { generation: emulatedGeneration()!, bilinearApi: "v2", fma: true } as const;
  const calls = makeCases(40, 29, ["float32"]);
  const gaps = calls.filter((call) => adjointGap(call, target) !== null).length;
  assert.ok(gaps >= 3, `only ${gaps} of the drawn calls meet a gap`);
  const lines = await stderrOf(async () => {
    using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
    for (const call of calls) {
      using result = backward(npu, call);
      await result.toFloat32Array();
    }
  });
  assert.deepEqual(lines, [], "a backward alone prints nothing");
  // Asked for (ADJOINT_GAP named): the same run is heard, once per op.
  const heard: UpsampleWarning[] = [];
  using npu = Device.open({
    backend: "npu",
    libDir: EMU_DIR,
    warnings: { ADJOINT_GAP: (w) => heard.push(w) },
  });
  for (const call of calls) {
    using _result = backward(npu, call);
  }
  assert.ok(heard.length >= 1 && heard.length <= 3, `${heard.length}`);
  for (const w of heard) assert.match(w.message, /^upsample\w+Backward: on the /);
  assert.equal(new Set(heard.map((w) => w.key)).size, heard.length, "once per op and family");
});

EMULATED_LANE.test({
  name:
    "warnings: ADJOINT_GAP is said once where a device runs both directions; silenced; an error",
  ignore: !GAP_FAMILY,
}, async () => {
  forgetSaidWarnings();
  const lines = await stderrOf(async () => {
    using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
    using x = npu.zeros([1, 1, 2]);
    using y = upsampleNearestExact1d(x, { outputSize: [41] }); // a forward alone: silent
    await y.toFloat32Array();
    for (let i = 0; i < 3; i++) {
      using g = upsampleNearestExact1dBackward(y, GAP_1D); // its pair: said once
      await g.toFloat32Array();
    }
    // A 2d forward on other sizes than any backward it ran: silent.
    using x2 = npu.zeros([1, 1, 2, 2]);
    using _y2 = upsampleNearestExact2d(x2, { outputSize: [41, 41] });
  });
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(
    lines[0],
    /^@aclnn\/upsample: \[ACLNN_UPSAMPLE_ADJOINT_GAP\] upsampleNearestExact1dBackward: this device also ran upsampleNearestExact1d on these sizes, .*\(said once per op and family; silence it with Device\.open\(\{ warnings: \{ ADJOINT_GAP: "ignore" \} \}\) or setDefaultWarnings\)$/,
  );

  forgetSaidWarnings();
  const silent = await stderrOf(async () => {
    using npu = Device.open({
      backend: "npu",
      libDir: EMU_DIR,
      warnings: { ADJOINT_GAP: "ignore" },
    });
    using x = npu.zeros([1, 1, 2]);
    using y = upsampleNearestExact1d(x, { outputSize: [41] });
    using g = upsampleNearestExact1dBackward(y, GAP_1D);
    await g.toFloat32Array();
  });
  assert.deepEqual(silent, []);

  using npu = Device.open({ backend: "npu", libDir: EMU_DIR, warnings: { ADJOINT_GAP: "error" } });
  using y = npu.zeros([1, 1, 41]);
  const before = emuLive();
  assert.throws( // named: the backward alone is an error, before anything is allocated
    () => upsampleNearestExact1dBackward(y, GAP_1D),
    (e: unknown) => e instanceof UpsampleWarning && e.code === "ACLNN_UPSAMPLE_ADJOINT_GAP",
  );
  assert.deepEqual(emuLive(), before, "nothing allocated");

  // One rule for every kind does not ask for unpaired gaps: a backward alone runs; its pair throws.
  using strict = Device.open({ backend: "npu", libDir: EMU_DIR, warnings: "error" });
  using g = strict.zeros([1, 1, 41]);
  using alone = upsampleNearestExact1dBackward(g, GAP_1D);
  await alone.toFloat32Array();
  using x = strict.zeros([1, 1, 2]);
  assert.throws(
    () => upsampleNearestExact1d(x, { outputSize: [41] }),
    (e: unknown) =>
      e instanceof UpsampleWarning && e.code === "ACLNN_UPSAMPLE_ADJOINT_GAP" &&
      /^upsampleNearestExact1d: this device also ran upsampleNearestExact1dBackward/.test(
        e.message,
      ),
  );
});
