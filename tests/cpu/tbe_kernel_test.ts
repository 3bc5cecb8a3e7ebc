// The device reference's TBE ResizeBilinearV2Grad launch (src/cpu/ascend/backward/tbe_kernel.ts)
// against the independent model of tests/support/resize5hd_model.ts, per family (A2/A3, 910,
// 310P) and contraction setting: bit for bit on every call `referenceExactness` calls exact, and
// the same bits under every atomic seed there; within the bound where the cores' order matters
// (and there the seed does change bits). Each tiling mode at its thresholds. The route's
// H-unchanged passes (tbe_pass.ts) against the whole launch, a non-finite gradient row included:
// its zero-weight terms (inf * 0 = NaN) must reach the neighbour row.

import assert from "node:assert/strict";
import { tbeKernel, type TbeLaunch } from "../../src/cpu/ascend/backward/tbe_kernel.ts";
import { tbePass } from "../../src/cpu/ascend/backward/tbe_pass.ts";
import { launchSeed, mergeFlushes } from "../../src/cpu/ascend/backward/tbe_flush.ts";
import { kernelName5hd, tbe5hdSpec, tilingMode5hd } from "../../src/rules/ascend_5hd.ts";
import { compareWithDevice } from "../../src/rules/bound.ts";
import { referenceExactness } from "../../src/rules/exactness.ts";
import type { AscendGeneration } from "../../src/rules/generation.ts";
import { seededRandom } from "../../cli/verify/cases.ts";
import { resize5hdModel, SOC_5HD } from "../support/resize5hd_model.ts";

type TbeFamily = Exclude<AscendGeneration, "950">;

const FAMILIES: readonly (readonly [TbeFamily, keyof typeof SOC_5HD])[] = [
  ["a2", "Ascend910B3"],
  ["910", "Ascend910A"],
  ["310p", "Ascend310P3"],
];

interface Case {
  readonly inHW: readonly [number, number];
  readonly outHW: readonly [number, number];
  readonly alignCorners?: boolean;
  readonly planes?: number;
}

function cases(family: TbeFamily): Case[] {
  const tc = tbe5hdSpec(family).tensorC;
  const fixed: Case[] = [
    { inHW: [1, 1], outHW: [4, 9] }, // mode 1
    { inHW: [1, 1], outHW: [2, tc / 2] }, // mode 1 at the threshold
    { inHW: [1, 1], outHW: [2, tc / 2 + 1] }, // mode 2
    { inHW: [1, 1], outHW: [3, tc + 7] }, // mode 2, two tensor_c chunks
    { inHW: [4, 4], outHW: [1, 1] }, // mode 3
    { inHW: [1, 3], outHW: [1, 1], alignCorners: true }, // mode 3, coinciding cells
    { inHW: [5, 7], outHW: [11, 13], alignCorners: true }, // mode 4
    { inHW: [1, tc - 2], outHW: [1, tc - 1] }, // mode 4 at the threshold
    { inHW: [30, 5], outHW: [29, 84], planes: 4 }, // issue 29's order-free example
    { inHW: [3, 40], outHW: [45, 100] }, // 5 (910/310P) or 6, many rows a core
    { inHW: [3, 600], outHW: [4, 601] }, // mode 5 at its width threshold
    { inHW: [3, 16], outHW: [4, 16 * 254 + 15] }, // mode 5, many 256-column chunks
    { inHW: [16, 40], outHW: [8, 100] }, // rows halved: one partial a row
    { inHW: [4, 40], outHW: [4, 100] }, // H unchanged
    { inHW: [3, tc / 2 + 5], outHW: [4, tc / 2 + 40] }, // mode 6 through windows
    { inHW: [2, 100], outHW: [9, tc + 40], alignCorners: true }, // mode 6, wide gradient rows
  ];
  const random = seededRandom(0x7be);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  for (let k = 0; k < 20; k++) {
    const inHW = [int(1, 20), int(1, 30)] as const;
    const outHW = [int(1, 50), k % 5 === 0 ? int(600, 900) : int(1, 60)] as const;
    fixed.push({ inHW, outHW, alignCorners: random() < 0.3, planes: int(1, 2) });
  }
  return fixed;
}

function values(count: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: count }, () => random() * 2 - 1);
}

function bits(a: Float32Array): string {
  return new Uint32Array(a.buffer, a.byteOffset, a.length).join(",");
}

function firstDifference(a: Float32Array, b: Float32Array): number {
  return a.findIndex((v, i) => !(Object.is(v, b[i]) || (Number.isNaN(v) && Number.isNaN(b[i]))));
}

for (const [family, soc] of FAMILIES) {
  for (const fma of [false, true]) {
    Deno.test(`TBE kernel (${family}, tbeFma ${fma}): the independent model's bits where exact, any seed`, () => {
      const model = SOC_5HD[soc];
      const target = {
        generation: family,
        bilinearApi: "v1",
        fma: true,
        tbeFma: fma,
        soc,
      } as const;
      const modes = new Set<number>();
      let exact = 0, bounded = 0, reordered = 0;
      for (const [k, c] of cases(family).entries()) {
        const planes = c.planes ?? 1;
        const [inH, inW] = c.inHW, [outH, outW] = c.outHW;
        const alignCorners = c.alignCorners ?? false;
        const launch: TbeLaunch = {
          inH,
          inW,
          outH,
          outW,
          alignCorners,
          spec: tbe5hdSpec(family),
          cores: model.coreNum,
          fma,
        };
        const call = {
          op: "bilinear2d",
          dtype: "float32",
          inputSize: [1, planes, inH, inW],
          outputSize: [outH, outW],
          scales: [0, 0],
          alignCorners,
          deterministic: false,
        } as const;
        const verdict = referenceExactness(call, target);
        const mode = tilingMode5hd(c.inHW, c.outHW, launch.spec);
        modes.add(mode);
        assert.equal(verdict.kernel, kernelName5hd(mode));
        const grad = values(planes * outH * outW, 50 + k);
        const ours = tbeKernel(grad, planes, launch);
        const theirs =
          resize5hdModel(grad, { N: 1, C: planes, inH, inW, outH, outW, alignCorners }, model, {
            fma,
          }).values;
        const what = `${family} tbeFma ${fma}: ${verdict.kernel} (${verdict.exactness}) ` +
          `[${inH}, ${inW}] <- [${outH}, ${outW}] x${planes} align ${alignCorners}`;
        const seeds = [1n, 2n, launchSeed(5n, 3)].map((seed) =>
          bits(tbeKernel(grad, planes, { ...launch, seed }))
        );
        if (verdict.exactness === "exact") {
          const at = firstDifference(ours, theirs);
          assert.equal(at, -1, `${what}: element ${at}: ${ours[at]} != ${theirs[at]}`);
          for (const other of seeds) assert.equal(other, bits(ours), `${what}: another seed`);
          exact++;
        } else {
          const options = { generation: family, bilinearApi: "v1", tbeFma: fma } as const;
          assert.ok(compareWithDevice(call, grad, ours, theirs, options).ok, `${what}: bound`);
          if (seeds.some((other) => other !== bits(ours))) reordered++;
          bounded++;
        }
      }
      const expected = family === "a2" ? [1, 2, 3, 4, 6] : [1, 2, 3, 4, 5, 6];
      for (const mode of expected) assert.ok(modes.has(mode), `mode ${mode} drawn: ${[...modes]}`);
      assert.ok(
        exact >= 15 && bounded >= 3 && reordered >= 1,
        `${exact} exact, ${bounded} bounded, ${reordered} reordered`,
      );
    });
  }
}

Deno.test("TBE kernel: mode 0 is a bit copy; one core's flushes keep program order", () => {
  const spec = tbe5hdSpec("910");
  const grad = Float32Array.of(-0, 1.5, NaN, 3);
  const launch = {
    inH: 2,
    inW: 2,
    outH: 2,
    outW: 2,
    alignCorners: false,
    spec,
    cores: 32,
    fma: false,
  };
  assert.equal(bits(tbeKernel(grad, 1, launch)), bits(grad));
  const out = new Float32Array(1);
  // 1 + 2^-24 + 2^-24 in program order rounds each add back to 1; the other order gives 1 + 2^-23.
  const tiny = 2 ** -24;
  const list = [1, tiny, tiny].map((v) => ({ row: 0, col: 0, values: Float32Array.of(v) }));
  mergeFlushes([list], out, 1, 12345n, 0);
  assert.equal(out[0], 1);
});

// The route's passes: H unchanged (H weights exactly 1 and 0), every mode a pass can take.
for (const [family, soc] of FAMILIES) {
  Deno.test(`route pass (${family}): equals the whole launch, a non-finite row's zero-weight terms included`, () => {
    const spec = tbe5hdSpec(family);
    const cores = SOC_5HD[soc].coreNum;
    const passes = [
      [6, 5, 13], // mode 4
      [8, 40, 300], // mode 5 (910/310P) or 6
      [3, spec.tensorC / 2 + 3, spec.tensorC / 2 + 30], // mode 6 through windows
    ] as const;
    const seen = new Set<number>();
    for (const [rows, inCols, outCols] of passes) {
      for (const fma of [false, true]) {
        const mode = tilingMode5hd([rows, inCols], [rows, outCols], spec);
        const grad = values(rows * outCols, rows + inCols);
        grad[1 * outCols + 2] = Infinity; // row 1: its zero-weight terms are NaN, into row 2
        grad[(rows - 1) * outCols] = -Infinity; // the last row adds to itself
        const pass = {
          axis: "w",
          rows,
          inCols,
          outCols,
          mode,
          kernel: kernelName5hd(mode),
        } as const;
        const ours = tbePass(grad, 1, pass, false, spec, fma);
        const launch = {
          inH: rows,
          inW: inCols,
          outH: rows,
          outW: outCols,
          alignCorners: false,
          spec,
          cores,
          fma,
        };
        const whole = tbeKernel(grad, 1, launch);
        const what = `${family} ${
          kernelName5hd(mode)
        } tbeFma ${fma} rows ${rows} ${outCols} -> ${inCols}`;
        assert.ok(Number.isNaN(whole[2 * inCols]), `${what}: inf * 0 reaches row 2 in the launch`);
        seen.add(mode);
        const at = firstDifference(ours, whole);
        assert.equal(at, -1, `${what}: element ${at}: pass ${ours[at]}, launch ${whole[at]}`);
      }
    }
    assert.deepEqual([...seen].sort(), family === "a2" ? [4, 6] : [4, 5, 6]);
  });
}
