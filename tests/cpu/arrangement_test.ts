// The arrangements that avoid the TBE kernel's mode-6 column loss (src/rules/arrangement.ts) and
// the launch plan that picks one (src/rules/support.ts launchPlanOf), on the rules alone: the lost
// columns against an independent replay of the kernel's window flushes, every launch of a chosen
// arrangement loss-free by the kernel's own tiling, refusals only where every arrangement loses.

import assert from "node:assert/strict";
import { Device, type DeviceDefects } from "../../mod.ts";
import {
  arrangementCandidates,
  DEVICE_DEFECTS,
  launch5hd,
  lostColumns5hd,
  mayLoseColumns,
  type TbeGeneration,
} from "../../src/rules/arrangement.ts";
import {
  linear5hdTable,
  losesColumns5hd,
  tbe5hdSpec,
  tilingMode5hd,
} from "../../src/rules/ascend_5hd.ts";
import {
  DeviceDefectError,
  launchPlanOf,
  NondeterministicKernelError,
} from "../../src/rules/support.ts";
import type { AscendTarget } from "../../src/rules/numerics.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { seededRandom } from "../../cli/verify/cases.ts";

const GENERATIONS: readonly TbeGeneration[] = ["a2", "910", "310p"];

// The kernel's mode-6 row replayed with one marker per gradient column (resize_bilinear_v2_grad.py
// big_in_loop as the emulation's mode6_row runs it: a window of U + 1 cells from loop_init * U,
// flushed whole when a column leaves it, up to the last cell at the end of every tensor_c chunk):
// the columns whose marker never reaches the result.
function replayLost(lower: Int32Array, inW: number, tensorC: number): number[] {
  const u = tensorC / 2 - 1;
  const reached = new Set<number>();
  if (Math.floor(inW / (tensorC / 2)) === 0) return [];
  let ub = new Map<number, Set<number>>();
  let loopInit = 0;
  const flush = (cells: number): void => {
    for (const [slot, columns] of ub) {
      if (slot < cells && loopInit * u + slot < inW) columns.forEach((c) => reached.add(c));
    }
    ub = new Map();
  };
  const put = (slot: number, column: number): void => {
    if (!ub.has(slot)) ub.set(slot, new Set());
    ub.get(slot)!.add(column);
  };
  let idx = 0, stride = 0;
  for (let base = 0; base < lower.length; base += tensorC) {
    for (let x = base; x < Math.min(base + tensorC, lower.length); x++) {
      idx = lower[x];
      stride = idx < inW - 1 ? 1 : 0;
      if ((idx === (loopInit + 1) * u && stride === 1) || idx > u * (loopInit + 1)) {
        flush(u + 1);
        loopInit = Math.floor(idx / u);
      }
      const local = idx !== 0 && idx % u === 0 && stride === 0 ? u : idx % u;
      put(local, x);
      put(local + stride, x);
    }
    flush(Math.min(idx + 1 + stride - loopInit * u, u + 1));
  }
  return [...lower.keys()].filter((x) => !reached.has(x));
}

Deno.test("column loss: lostColumns5hd is the kernel's window replay, and losesColumns5hd's word", () => {
  const random = seededRandom(29);
  let lossy = 0;
  for (const generation of GENERATIONS) {
    const spec = tbe5hdSpec(generation);
    const u = spec.tensorC / 2 - 1;
    for (let k = 0; k < 300; k++) {
      // Widths near k * U + 1, few gradient columns: where jumps past a window happen.
      const inW = random() < 0.7
        ? (2 + Math.floor(random() * 3)) * u + 1 +
          (random() < 0.8 ? 0 : Math.floor(random() * 5) - 2)
        : 1 + Math.floor(random() * 4000);
      const outW = 1 + Math.floor(random() * (random() < 0.7 ? 6 : 3000));
      const alignCorners = random() < 0.5;
      const fma = random() < 0.3;
      const table = linear5hdTable(inW, outW, alignCorners, fma);
      const what = `${generation} ${outW} -> ${inW} alignCorners ${alignCorners} fma ${fma}`;
      const lost = lostColumns5hd(table.i0, inW, spec);
      assert.deepEqual(lost, replayLost(table.i0, inW, spec.tensorC), what);
      assert.equal(lost.length > 0, losesColumns5hd(table.i0, inW, spec), what);
      if (lost.length > 0) {
        lossy++;
        assert.ok(mayLoseColumns(inW, generation), what);
      }
    }
  }
  assert.ok(lossy >= 30, `${lossy} lossy tables drawn`);
});

// Random calls whose single launch loses columns on `generation`: the image width k * U + 1,
// a few gradient columns.
function lossyCalls(
  generation: TbeGeneration,
  count: number,
  seed: number,
): Array<UpsampleParams & { deterministic: boolean }> {
  const random = seededRandom(seed);
  const u = tbe5hdSpec(generation).tensorC / 2 - 1;
  const calls = [];
  while (calls.length < count) {
    const side = (): [number, number] =>
      random() < 0.3
        ? [(2 + Math.floor(random() * 2)) * u + 1, 2 + Math.floor(random() * 3)]
        : [1 + Math.floor(random() * 1200), 1 + Math.floor(random() * 1200)];
    const [inW, outW] = [(2 + Math.floor(random() * 2)) * u + 1, 2 + Math.floor(random() * 3)];
    const [inH, outH] = side();
    const call = {
      op: "bilinear2d" as const,
      dtype: "float32" as const,
      inputSize: [1, 1 + Math.floor(random() * 3), inH, inW],
      outputSize: [outH, outW],
      scales: [0, 0],
      alignCorners: random() < 0.6,
      deterministic: random() < 0.3,
    };
    const native = arrangementCandidates(call, generation, false)[0];
    if (native.launches[0].lost.length > 0) calls.push(call);
  }
  return calls;
}

Deno.test("column loss: the chosen arrangement's every launch is loss-free by the kernel's tiling", () => {
  for (const generation of GENERATIONS) {
    const spec = tbe5hdSpec(generation);
    const target: AscendTarget = { generation, bilinearApi: "v1", fma: true, tbeFma: false };
    const tally = { transposed: 0, route: 0, refused: 0, nondeterministic: 0 };
    for (const call of lossyCalls(generation, 150, 7 + generation.length)) {
      const what = `${generation} ${JSON.stringify(call)}`;
      const candidates = arrangementCandidates(call, generation, false);
      let plan;
      try {
        plan = launchPlanOf(call, target, { warnOnly: false });
      } catch (error) {
        if (error instanceof NondeterministicKernelError) {
          // Only the transposed launch avoids the loss, and it is not order-free.
          assert.ok(call.deterministic, what);
          const free = candidates.filter((a) => a.launches.every((l) => l.lost.length === 0));
          assert.ok(free.length > 0 && free.every((a) => !a.orderFree), what);
          tally.nondeterministic++;
          continue;
        }
        assert.ok(error instanceof DeviceDefectError, what);
        assert.deepEqual(error.lostColumns, candidates[0].launches[0].lost, what);
        assert.equal(error.imageColumn, call.inputSize[3] - 1);
        // Every arrangement has a launch that loses columns.
        for (const a of candidates) {
          assert.ok(a.launches.some((l) => l.lost.length > 0), `${what}: ${a.kind}`);
        }
        tally.refused++;
        continue;
      }
      assert.ok(plan !== null && plan.kind !== "lossy", what);
      const [, , inH, inW] = call.inputSize;
      const [outH, outW] = call.outputSize;
      // The launches of the plan, re-derived from its kind: [image, gradient, window axis].
      const launches: Array<[[number, number], [number, number], number, number]> = [];
      if (plan.kind === "transposed") {
        tally.transposed++;
        assert.ok(!call.deterministic, what);
        launches.push([[inW, inH], [outW, outH], inH, outH]);
      } else {
        tally.route++;
        for (const pass of plan.route.passes) {
          launches.push([
            [pass.rows, pass.inCols],
            [pass.rows, pass.outCols],
            pass.inCols,
            pass.outCols,
          ]);
        }
      }
      for (const [image, grad, inCols, outCols] of launches) {
        const mode = tilingMode5hd(image, grad, spec);
        const table = linear5hdTable(inCols, outCols, call.alignCorners, false);
        assert.ok(mode !== 6 || !losesColumns5hd(table.i0, inCols, spec), `${what}: mode ${mode}`);
      }
    }
    assert.ok(tally.transposed >= 40, `${generation}: ${JSON.stringify(tally)}`);
    assert.ok(tally.refused >= 5, `${generation}: ${JSON.stringify(tally)}`);
  }
});

const call2 = (inputSize: number[], outputSize: number[], deterministic = false) => ({
  op: "bilinear2d" as const,
  dtype: "float32" as const,
  inputSize,
  outputSize,
  scales: [0, 0],
  alignCorners: true,
  deterministic,
});

for (const generation of GENERATIONS) {
  const spec = tbe5hdSpec(generation);
  const wide = spec.tensorC - 1; // 2U + 1: A2/A3 1535, 910/310P 2047
  const target: AscendTarget = { generation, bilinearApi: "v1", fma: true, tbeFma: false };

  Deno.test(`column loss on ${generation}: avoid, refuse, allow`, () => {
    const call = call2([1, 2, 5, wide], [3, 2]);
    assert.deepEqual(launch5hd("x", "w", [5, wide], [3, 2], true, false, spec).lost, [1]);
    const avoid = launchPlanOf(call, target, { warnOnly: false });
    assert.equal(avoid?.kind, "transposed");
    const notices: string[] = [];
    const allow = launchPlanOf(call, target, {
      warnOnly: false,
      deviceDefects: "allow",
      warn: (notice) => notices.push(notice.kind),
    });
    assert.deepEqual(allow, {
      kind: "lossy",
      kernel: "ResizeBilinearV2Grad5HD.MODE6",
      lostColumns: [1],
    });
    assert.deepEqual(notices, ["DEVICE_DEFECT"]);
    assert.throws(
      () => launchPlanOf(call, target, { warnOnly: false, deviceDefects: "refuse" }),
      (e: unknown) =>
        e instanceof DeviceDefectError && e.kernel === "ResizeBilinearV2Grad5HD.MODE6" &&
        e.rule === "losesColumns5hd" && e.source === "resize_bilinear_v2_grad.py" &&
        e.message.includes(`gradient column 1 along W`) &&
        e.message.includes(`image column ${wide - 1}`) && e.message.includes('"refuse"'),
    );
    // Both axes lose: nothing avoids it; the error says why each arrangement does not.
    assert.throws(
      () => launchPlanOf(call2([1, 1, wide, wide], [2, 2]), target, { warnOnly: false }),
      (e: unknown) =>
        e instanceof DeviceDefectError && e.message.includes("No arrangement of launches") &&
        e.message.includes("the call transposed (ResizeBilinearV2Grad5HD.MODE6) loses") &&
        e.message.includes("along H"),
    );
    // A CANN without V1: the transposed launch is not there either.
    assert.throws(
      () => launchPlanOf(call, target, { warnOnly: false, missingApi: () => "aclnnX" }),
      (e: unknown) => e instanceof DeviceDefectError && e.message.includes("needs aclnnX"),
    );
    // A width that cannot lose: no plan, nothing computed.
    assert.equal(
      launchPlanOf(call2([1, 2, 5, wide + 1], [3, 2]), target, { warnOnly: false }),
      null,
    );
    for (const value of DEVICE_DEFECTS) assert.ok(["avoid", "refuse", "allow"].includes(value));
  });

  Deno.test(`column loss on ${generation}: deterministic mode takes the route H first`, () => {
    // W-first's W pass (rows Ho) is mode 6 and loses; H first leaves W a one-row mode-4 pass.
    const outH = spec.tensorC / 2 + 50;
    const call = call2([1, 1, 1, wide], [outH, 2], true);
    const plan = launchPlanOf(call, target, { warnOnly: false });
    assert.equal(plan?.kind, "route");
    if (plan?.kind !== "route") return;
    assert.equal(plan.route.order, "hw");
    assert.deepEqual(plan.route.passes.map((p) => [p.axis, p.rows, p.mode]), [["h", 2, 6], [
      "w",
      1,
      4,
    ]]);
    // Deterministic off: the transposed launch comes first.
    assert.equal(
      launchPlanOf({ ...call, deterministic: false }, target, { warnOnly: false })?.kind,
      "transposed",
    );
    // Deterministic on, where only the transposed launch avoids it: refused, or warned.
    const only = call2([1, 1, 4, wide], [3, 2], true);
    assert.throws(
      () => launchPlanOf(only, target, { warnOnly: false }),
      NondeterministicKernelError,
    );
    const kinds: string[] = [];
    const warned = launchPlanOf(only, target, { warnOnly: true, warn: (n) => kinds.push(n.kind) });
    assert.equal(warned?.kind, "transposed");
    assert.deepEqual(kinds, ["DETERMINISTIC_WARN_ONLY"]);
  });
}

Deno.test("column loss: bfloat16 (V1 takes none) runs a route, which casts, or is refused", () => {
  const target: AscendTarget = { generation: "a2", bilinearApi: "v2", fma: true, tbeFma: false };
  const bf16 = (inputSize: number[], outputSize: number[]): UpsampleParams & {
    deterministic: boolean;
  } => ({
    ...call2(inputSize, outputSize),
    dtype: "bfloat16" as const,
    scales: [1, 0],
  });
  const routed = launchPlanOf(bf16([1, 1, 1, 1535], [818, 2]), target, { warnOnly: false });
  assert.equal(routed?.kind, "route");
  if (routed?.kind === "route") assert.ok(routed.route.cast && routed.route.order === "hw");
  assert.throws(
    () => launchPlanOf(bf16([1, 2, 5, 1535], [3, 2]), target, { warnOnly: false }),
    (e: unknown) => e instanceof DeviceDefectError && /needs a bfloat16 V1/.test(e.message),
  );
});

Deno.test("column loss: Device.open checks deviceDefects", () => {
  for (const value of ["avoid", "refuse", "allow"] as const) {
    using device = Device.open({ backend: "cpu", numerics: "device", deviceDefects: value });
    assert.ok(device);
  }
  assert.throws(
    () => Device.open({ backend: "cpu", deviceDefects: "ignore" as DeviceDefects }),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message === 'Device.open deviceDefects must be "avoid", "refuse" or "allow", got ignore',
  );
});
