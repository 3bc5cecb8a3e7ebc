// The four Ascend families on the CPU device reference: every SoC of CANN's platform table gets its
// family or a clear refusal; what the Atlas training (910) and inference (310P) series refuse; the
// TBE ResizeBilinearV2Grad's tiling modes at each threshold; deterministic mode refusing (or warning
// about) order-dependent kernels on every generation, by device default, setDeterministic and per call.

import assert from "node:assert/strict";
import {
  Device,
  DeviceDefectError,
  type DType,
  NondeterministicKernelError,
  upsampleBilinear2dBackward,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { losesColumns5hd, tbe5hdSpec, tilingMode5hd } from "../../src/rules/ascend_5hd.ts";
import { linearTable } from "../../src/rules/tables.ts";
import { seededRandom } from "../../cli/verify/cases.ts";
import {
  ASCEND_GENERATIONS,
  FAMILY_NAMES,
  generationOfSoc,
  socInfo,
  socNames,
} from "../../src/rules/generation.ts";
import { ascendPlan, type AscendTarget } from "../../src/rules/numerics.ts";
import { SOC_ROWS } from "../../src/rules/soc_table_data.ts";
import type { UpsampleParams } from "../../src/rules/ops.ts";
import { compareWithDevice } from "../../src/rules/bound.ts";
import { deterministicRoute } from "../../src/rules/route.ts";
import { deterministicRouteOf } from "../../src/rules/support.ts";
import { resize5hdModel, SOC_5HD } from "../support/resize5hd_model.ts";

const SOCS = {
  a2: "Ascend910B3",
  "950": "Ascend950PR_9599",
  "910": "Ascend910A",
  "310p": "Ascend310P3",
};
const ARCHS: Record<number, string> = { 2201: "a2", 3510: "950", 1001: "910", 2002: "310p" };

Deno.test("SoC table: every name of CANN's platform table gets its family or a clear refusal", () => {
  assert.ok(SOC_ROWS.length >= 70, `${SOC_ROWS.length} rows`);
  assert.equal(new Set(socNames()).size, SOC_ROWS.length, "unique names");
  for (const [soc, arch, short] of SOC_ROWS) {
    const g = generationOfSoc(soc);
    const expected = ARCHS[arch];
    if (expected !== undefined) {
      assert.equal(g.generation, expected, soc);
      assert.equal(g.known, true, soc);
      assert.equal(g.unsupported, undefined, soc);
      assert.match(g.reason, new RegExp(`NpuArch ${arch}`));
      using device = Device.open({ backend: "cpu", numerics: "device", soc });
      assert.equal(device.generation, expected, soc);
      assert.equal(device.soc, soc);
    } else {
      assert.equal(g.known, false, soc);
      assert.ok(g.unsupported?.includes(`NpuArch ${arch}, ${short}`), `${soc}: ${g.unsupported}`);
      assert.throws(
        () => Device.open({ backend: "cpu", numerics: "device", soc }),
        (e: unknown) =>
          e instanceof RangeError && e.message.includes(soc) && /runs none of/.test(e.message),
      );
    }
  }
  // Names that a prefix rule gets wrong.
  assert.equal(generationOfSoc("Ascend910B").generation, "910"); // NpuArch 1001, not A2
  assert.equal(generationOfSoc("Ascend910B2C").generation, "a2");
  assert.equal(socInfo("Ascend910ProB")?.npuArch, 1001);
  assert.equal(generationOfSoc("Ascend310B4").unsupported?.includes("NpuArch 3002"), true);
  for (const generation of ASCEND_GENERATIONS) assert.ok(FAMILY_NAMES[generation].length > 0);
});

Deno.test("SoC table: the TBE kernel's tiling facts agree with every SoC of each family", () => {
  for (const [soc, arch, short, _cores, ub] of SOC_ROWS) {
    const generation = ARCHS[arch];
    if (generation === undefined || generation === "950") continue;
    const spec = tbe5hdSpec(generation as "a2" | "910" | "310p");
    assert.equal(spec.tensorC, ub / 4 / 2 / 16, soc);
    assert.equal(spec.l1Support, short === "Ascend910" || short === "Ascend310P", soc);
  }
});

function target(generation: keyof typeof SOCS, extra: Partial<AscendTarget> = {}): AscendTarget {
  return { generation, bilinearApi: "v2", fma: true, tbeFma: false, ...extra };
}

function bilinear(
  inHW: number[],
  outHW: number[],
  scales = [0, 0],
  deterministic = false,
): UpsampleParams & { deterministic: boolean } {
  return {
    op: "bilinear2d" as const,
    dtype: "float32" as DType,
    inputSize: [2, 3, ...inHW],
    outputSize: outHW,
    scales,
    alignCorners: false,
    deterministic,
  };
}

Deno.test("TBE ResizeBilinearV2Grad: the tiling mode at each threshold, per family", () => {
  for (const generation of ["910", "310p", "a2"] as const) {
    const spec = tbe5hdSpec(generation);
    const c = spec.tensorC;
    const l1 = spec.l1Support;
    const cases: Array<[number[], number[], number]> = [
      [[5, 7], [5, 7], 0],
      [[1, 1], [1, c], 1],
      [[1, 1], [1, c + 1], 2],
      [[1, 1], [3, 3], 1],
      [[4, 4], [1, 1], 3],
      [[1, c - 2], [1, c - 1], 4],
      [[1, c - 1], [1, c], 6], // gradient cells = tensor_c: not mode 4; iw > 640
      [[1, 300], [1, 300 + c], l1 ? 5 : 6], // gradient cells > tensor_c: not mode 4
      [[2, c / 2], [4, c / 2 + 1], 4 + 2], // image cells = tensor_c: not mode 4; iw > 640
      [[4, 640], [4, 1280], l1 ? 5 : 6],
      [[4, 641], [4, 1282], 6],
      [[4, 20], [4, 4096], l1 ? 5 : 6],
      [[4, 20], [4, 4097], 6],
      [[8, 16], [3, 16 * 254 + 15], l1 ? 5 : 6],
      [[8, 16], [3, 16 * 255], 6],
      [[64, 64], [32, 32], 6], // downsampling: gw < iw
    ];
    for (const [inHW, outHW, mode] of cases) {
      assert.equal(tilingMode5hd(inHW, outHW, spec), mode, `${generation} ${inHW} <- ${outHW}`);
    }
  }
});

Deno.test("ascendPlan: kernels and order dependence per family", () => {
  const up = bilinear([64, 64], [128, 128]);
  assert.equal(ascendPlan(up, target("a2")).kernel, "UpsampleBilinear2dGrad");
  const oneScale = bilinear([64, 64], [128, 128], [2, 0]);
  const fallback = ascendPlan(oneScale, target("a2"));
  assert.equal(fallback.kernel, "ResizeBilinearV2Grad5HD.MODE6"); // A2: no L1, no mode 5
  assert.equal(fallback.orderDependent, true);
  assert.equal(ascendPlan(up, target("910")).kernel, "ResizeBilinearV2Grad5HD.MODE5");
  assert.equal(ascendPlan(up, target("310p")).orderDependent, true);
  const small = bilinear([8, 8], [16, 16]);
  assert.equal(ascendPlan(small, target("910")).kernel, "ResizeBilinearV2Grad5HD.MODE4");
  assert.equal(ascendPlan(small, target("910")).orderDependent, false);
  const oneRow = bilinear([1, 2048], [1, 4096]);
  assert.equal(ascendPlan(oneRow, target("910")).kernel, "ResizeBilinearV2Grad5HD.MODE6");
  assert.equal(ascendPlan(oneRow, target("910")).orderDependent, false); // one row, one core
  const same = bilinear([9, 9], [9, 9]);
  assert.equal(ascendPlan(same, target("910")).kernel, "ViewCopy"); // V1: V2 launches nothing
  assert.equal(ascendPlan(same, target("a2")).kernel, "UpsampleBilinear2dGrad");
  assert.equal(ascendPlan(up, target("950")).orderDependent, false);
  // Contracted coordinates: both dimensions, or H only in mode 5 (W on the vector unit).
  assert.equal(ascendPlan(up, target("910", { tbeFma: true })).rule, "ascend-5hd-fma-h");
  assert.equal(ascendPlan(small, target("910", { tbeFma: true })).rule, "ascend-5hd-fma");
  assert.equal(ascendPlan(small, target("910")).rule, "pytorch");
  const nearest = { ...up, op: "nearestExact2d" as const };
  assert.equal(ascendPlan(nearest, target("a2")).kernel, "UpsampleNearestExact2dGrad");
  assert.equal(ascendPlan({ ...up, inputSize: [0, 3, 64, 64] }, target("910")).kernel, "");
});

Deno.test("910/310P: nearest-exact and bfloat16 bilinear are refused before anything is allocated", async (t) => {
  for (const generation of ["910", "310p"] as const) {
    await t.step(generation, () => {
      using device = Device.open({ backend: "cpu", numerics: "device", soc: SOCS[generation] });
      using g1 = device.zeros([1, 2, 8]);
      using g2 = device.zeros([1, 2, 8, 8]);
      const family = FAMILY_NAMES[generation].replace(/[()]/g, ".");
      assert.throws(
        () => upsampleNearestExact1dBackward(g1, { outputSize: [8], inputSize: [1, 2, 4] }),
        (e: unknown) =>
          e instanceof TypeError &&
          /upsampleNearestExact1dBackward is not supported/.test(e.message) &&
          new RegExp(family).test(e.message) && /CPU backend/.test(e.message),
      );
      assert.throws(
        () => upsampleNearestExact2dBackward(g2, { outputSize: [8, 8], inputSize: [1, 2, 4, 4] }),
        /upsampleNearestExact2dBackward is not supported on the Atlas/,
      );
      using b = device.zeros([1, 2, 8, 8], { dtype: "bfloat16" });
      assert.throws(
        () => upsampleBilinear2dBackward(b, { outputSize: [8, 8], inputSize: [1, 2, 4, 4] }),
        (e: unknown) =>
          e instanceof TypeError && /dtype bfloat16 is not supported/.test(e.message) &&
          /use float16 or float32/.test(e.message),
      );
      // Equal sizes are a copy, bfloat16 included.
      using copy = upsampleBilinear2dBackward(b, { outputSize: [8, 8], inputSize: [1, 2, 8, 8] });
      assert.equal(copy.dtype, "bfloat16");
    });
  }
});

Deno.test("deterministic mode runs the route where the kernel is order-dependent, per family", async (t) => {
  const grad = (device: Device): ReturnType<Device["zeros"]> => device.zeros([1, 2, 128, 128]);
  const opts = (scales: number[]) => ({
    outputSize: [128, 128],
    inputSize: [1, 2, 64, 64],
    scalesH: scales[0],
    scalesW: scales[1],
  });
  // The H pass of 2 -> 2047 rows with alignCorners on the 910 (window 1023, 2046 = 2 * 1023) would
  // drop the last row's gradient (tiling mode 6's column loss): no route covers it.
  const lossy = { outputSize: [2, 4], inputSize: [1, 2, 2047, 4], alignCorners: true };
  await t.step("A2/A3: one scale -> the route; both scales -> its own kernel", () => {
    using device = Device.open({ backend: "cpu", numerics: "device", deterministic: true });
    using g = grad(device);
    using _route = upsampleBilinear2dBackward(g, opts([2, 0]));
    using _ok = upsampleBilinear2dBackward(g, opts([2, 2]));
    using _off = upsampleBilinear2dBackward(g, { ...opts([2, 0]), deterministic: false });
  });
  for (const generation of ["910", "310p"] as const) {
    await t.step(
      `${generation}: mode 5 runs the route by default, setDeterministic, per call`,
      () => {
        using device = Device.open({ backend: "cpu", numerics: "device", soc: SOCS[generation] });
        using g = grad(device);
        using _free = upsampleBilinear2dBackward(g, opts([0, 0])); // off: the native launch
        using _call = upsampleBilinear2dBackward(g, { ...opts([0, 0]), deterministic: true });
        device.setDeterministic(true);
        using _device = upsampleBilinear2dBackward(g, opts([0, 0]));
      },
    );
  }
  await t.step("910: a route whose H pass would lose rows is refused", () => {
    using device = Device.open({ backend: "cpu", numerics: "device", soc: SOCS["910"] });
    using g = device.zeros([1, 2, 2, 4]);
    using _off = upsampleBilinear2dBackward(g, lossy);
    assert.throws(
      () => upsampleBilinear2dBackward(g, { ...lossy, deterministic: true }),
      (e: unknown) =>
        e instanceof NondeterministicKernelError &&
        e.kernel === "ResizeBilinearV2Grad5HD.MODE6" && e.generation === "910" &&
        /no deterministic route covers it: the route's H pass \(W first\) \(ResizeBilinearV2Grad5HD\.MODE6\) loses gradient column 1 along H, which jumps onto image column 2046;/
          .test(e.message) &&
        /deterministicWarnOnly/.test(e.message),
    );
  });
  await t.step("950: the flag switches its kernels, nothing refused", () => {
    using device = Device.open({
      backend: "cpu",
      numerics: "device",
      soc: SOCS["950"],
      deterministic: true,
    });
    using g = grad(device);
    using _r = upsampleBilinear2dBackward(g, opts([2, 0]));
  });
  await t.step("deterministicWarnOnly: one warning where no route exists, the call runs", () => {
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => warnings.push(message);
    try {
      using device = Device.open({
        backend: "cpu",
        numerics: "device",
        soc: SOCS["910"],
        deterministic: true,
        deterministicWarnOnly: true,
      });
      using g = device.zeros([1, 2, 2, 4]);
      for (let i = 0; i < 3; i++) {
        using _r = upsampleBilinear2dBackward(g, lossy);
      }
      using g2 = grad(device);
      using _route = upsampleBilinear2dBackward(g2, opts([0, 0])); // a route: no warning
    } finally {
      console.warn = warn;
    }
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0], /ResizeBilinearV2Grad5HD\.MODE6.*running it anyway/s);
  });
  await t.step("option errors", () => {
    assert.throws(
      () => Device.open({ backend: "cpu", deterministicWarnOnly: 1 as unknown as boolean }),
      /deterministicWarnOnly must be a boolean, got 1/,
    );
  });
});

Deno.test("the device reference agrees with the independent TBE model per family, both contraction settings", async () => {
  const random = seededRandom(0xface);
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  for (const soc of ["Ascend910A", "Ascend310P3", "Ascend910B3"] as const) {
    const model5hd = SOC_5HD[soc];
    for (const tbeFma of [false, true]) {
      using device = Device.open({ backend: "cpu", numerics: "device", soc, tbeFma, threads: 1 });
      const generation = device.generation!;
      for (let k = 0; k < 24; k++) {
        const [N, C] = [int(1, 2), int(1, 2)];
        const inHW = [int(1, 30), int(1, 30)];
        const outHW = k % 6 === 0 ? [int(60, 90), int(600, 900)] : [int(1, 60), int(1, 60)];
        const alignCorners = random() < 0.3;
        // A2/A3: a scale on H alone (matching the sizes) sends V2 to the TBE kernel.
        const scales = generation === "a2" ? [(outHW[0] + 0.25) / inHW[0], 0] : [0, 0];
        const problem = {
          op: "bilinear2d" as const,
          dtype: "float32" as DType,
          inputSize: [N, C, ...inHW],
          outputSize: outHW,
          scales,
          alignCorners,
        };
        const values = Float32Array.from(
          { length: N * C * outHW[0] * outHW[1] },
          () => (random() < 0.5 ? -1 : 1) * (0.5 + random() / 2),
        );
        using grad = device.tensor(values, [N, C, ...outHW]);
        using result = upsampleBilinear2dBackward(grad, {
          outputSize: outHW,
          inputSize: problem.inputSize,
          scalesH: scales[0],
          scalesW: scales[1],
          alignCorners,
        });
        const expected = await result.toFloat32Array();
        const call = {
          N,
          C,
          inH: inHW[0],
          inW: inHW[1],
          outH: outHW[0],
          outW: outHW[1],
          alignCorners,
        };
        const model = resize5hdModel(values, call, model5hd, { fma: tbeFma, seed: k });
        const what = `${soc} tbeFma ${tbeFma}: ${JSON.stringify(call)} mode ${model.mode}`;
        const check = compareWithDevice(problem, values, model.values, expected, {
          generation,
          tbeFma,
        });
        assert.ok(check.ok, `${what}: ${JSON.stringify(check.firstFailure)}`);
      }
    }
  }
});

Deno.test("TBE mode 6 drops the columns the independent model drops; the reference avoids them", async () => {
  let lost = 0;
  for (const [generation, soc] of [["a2", "Ascend910B3"], ["910", "Ascend910A"]] as const) {
    const spec = tbe5hdSpec(generation);
    const u = spec.tensorC / 2 - 1;
    for (const inW of [u, u + 1, 2 * u, 2 * u + 1, 3 * u + 1, spec.tensorC - 1]) {
      for (let outW = 1; outW <= 12; outW++) {
        for (const alignCorners of [false, true]) {
          if (tilingMode5hd([2, inW], [3, outW], spec) !== 6) continue;
          const call = { N: 1, C: 1, inH: 2, inW, outH: 3, outW, alignCorners };
          const model = resize5hdModel(new Float32Array(3 * outW).fill(1), call, SOC_5HD[soc], {
            fma: false,
          });
          const total = model.values.reduce((a, b) => a + b, 0);
          const modelLoses = Math.abs(total - 3 * outW) > 1e-3;
          const table = linearTable(inW, outW, alignCorners, 0, "pytorch");
          assert.equal(losesColumns5hd(table.i0, inW, spec), modelLoses, JSON.stringify(call));
          if (modelLoses) lost++;
        }
      }
    }
  }
  assert.ok(lost >= 4, `${lost} losing calls`);
  // The reference runs the call transposed (src/rules/arrangement.ts): every term arrives;
  // with deviceDefects "refuse" it refuses, as the NPU does.
  using device = Device.open({ backend: "cpu", numerics: "device", soc: "Ascend910B3" });
  using grad = device.tensor([1, 2, 3, 4], [1, 1, 2, 2]);
  const options = { outputSize: [2, 2], inputSize: [1, 1, 2, 1535], alignCorners: true };
  using avoided = upsampleBilinear2dBackward(grad, { ...options, scalesH: 1 });
  const values = await avoided.toFloat32Array();
  assert.deepEqual([values[0], values[1534], values[1535], values[3069]], [1, 2, 3, 4]);
  using refusing = Device.open({
    backend: "cpu",
    numerics: "device",
    soc: "Ascend910B3",
    deviceDefects: "refuse",
  });
  using grad2 = refusing.zeros([1, 1, 2, 2]);
  assert.throws(
    () => upsampleBilinear2dBackward(grad2, { ...options, scalesH: 1 }),
    (e: unknown) => e instanceof DeviceDefectError && /never writes/.test(e.message),
  );
  using kept = upsampleBilinear2dBackward(grad, {
    ...options,
    inputSize: [1, 1, 2, 1534],
    scalesH: 1,
  });
  assert.deepEqual(kept.shape, [1, 1, 2, 1534]);
});

Deno.test("deterministic mode: random order-dependent calls take a route of H-unchanged passes; only column loss refuses", () => {
  const random = seededRandom(0xde7);
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  for (
    const target of [
      { generation: "a2", bilinearApi: "v2", fma: true },
      { generation: "a2", bilinearApi: "v1", fma: true },
      { generation: "910", bilinearApi: "v1", fma: true },
      { generation: "310p", bilinearApi: "v1", fma: true, tbeFma: true },
    ] as const
  ) {
    let routed = 0;
    for (let k = 0; k < 400; k++) {
      const wide = random() < 0.2;
      const call = {
        op: "bilinear2d" as const,
        dtype: random() < 0.5 ? "float16" as const : "float32" as const,
        inputSize: [1, int(1, 4), int(1, 300), wide ? int(700, 2200) : int(1, 300)],
        outputSize: [int(1, 300), wide ? int(700, 2200) : int(1, 300)],
        scales: [random() < 0.5 ? 1.5 : 0, 0],
        alignCorners: random() < 0.3,
        deterministic: true,
      };
      const what = JSON.stringify({ ...call, target });
      const plan = ascendPlan(call, target);
      const choice = deterministicRoute(call, target.generation, target.tbeFma ?? false);
      let route;
      try {
        route = deterministicRouteOf(call, target, { warnOnly: false });
      } catch (error) {
        // The W-first route loses columns (and so does every other order-free arrangement), or
        // the single launch loses columns and nothing avoids it (DeviceDefectError).
        assert.ok(
          error instanceof NondeterministicKernelError || error instanceof DeviceDefectError,
          what,
        );
        assert.ok(choice.refusal !== null, what);
        continue;
      }
      assert.equal(route !== null, plan.orderDependent, what);
      if (route === null) continue;
      routed++;
      const [, , inH, inW] = call.inputSize;
      const [outH, outW] = call.outputSize;
      // W first unless that order loses columns (then H first, src/rules/arrangement.ts).
      assert.equal(route.order, choice.refusal === null ? "wh" : "hw", what);
      assert.equal(route.passes.at(-1)!.axis, route.order === "wh" ? "h" : "w", what);
      for (const pass of route.passes) {
        // Each pass keeps its rows (W first: the W pass Ho, the H pass Wi; H first: the H pass Wo,
        // the W pass Hi); its columns are the other sizes.
        const wFirst: boolean = route.order === "wh";
        const rows: number = pass.axis === "w" ? (wFirst ? outH : inH) : (wFirst ? inW : outW);
        const [inCols, outCols] = pass.axis === "w" ? [inW, outW] : [inH, outH];
        assert.deepEqual([pass.rows, pass.inCols, pass.outCols], [rows, inCols, outCols], what);
        assert.ok([4, 5, 6].includes(pass.mode), `${what}: mode ${pass.mode}`);
        assert.equal(
          pass.mode,
          tilingMode5hd([rows, inCols], [rows, outCols], tbe5hdSpec(target.generation)),
        );
      }
      assert.equal(route.kernels.length, route.passes.length + (call.dtype === "float32" ? 0 : 2));
    }
    assert.ok(routed >= 40, `${target.generation} ${target.bilinearApi}: ${routed} routed`);
  }
});

Deno.test("deterministic mode: a repeated call is planned once (the same route object)", () => {
  const call = {
    op: "bilinear2d" as const,
    dtype: "float32" as const,
    inputSize: [1, 2, 64, 64],
    outputSize: [128, 128],
    scales: [0, 0],
    alignCorners: false,
    deterministic: true,
  };
  const target = { generation: "910", bilinearApi: "v1", fma: true } as const;
  const options = { warnOnly: false };
  const first = deterministicRouteOf(call, target, options);
  assert.ok(first !== null);
  assert.equal(deterministicRouteOf(call, target, options), first); // remembered with the sizes
  // Other sizes (a new validated call) are planned anew.
  const other = deterministicRouteOf({ ...call, inputSize: [1, 2, 64, 64] }, target, options);
  assert.notEqual(other, first);
  assert.deepEqual(other, first);
});
