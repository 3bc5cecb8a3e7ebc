// nearest_forward (src/cpu/wasm/forward_nearest.c) against a plain gather of the index tables:
// widths whose last vector overlaps the one before (outW % per != 0), rows narrower than a vector,
// runs of 1, 2 and 3 output rows on one input row, every dtype, and bands of rows cut anywhere
// (row0, row1).

import assert from "node:assert/strict";
import type { StorageView } from "../../src/backend.ts";
import { CpuBuffer } from "../../src/cpu/buffer.ts";
import { runPrepared } from "../../src/cpu/wasm/prepared.ts";
import { prepareWasmForward, type WasmForwardCall } from "../../src/cpu/wasm/launch_forward.ts";
import { WasmKernels } from "../../src/cpu/wasm/instance.ts";
import { nearestTables } from "../../src/rules/tables.ts";
import { type DType, DTYPES } from "../../src/tensor/dtype.ts";
import { contiguousStrides } from "../../src/tensor/layout.ts";

/** A contiguous heap tensor; every element's bits distinct (its index), or a sentinel. */
function tensor(
  kernels: WasmKernels,
  dtype: DType,
  shape: number[],
  fill: boolean,
): StorageView<CpuBuffer> {
  const n = shape.reduce((a, b) => a * b, 1);
  const handle = CpuBuffer.inHeap(kernels.heap, dtype, n)!;
  const bits = bitsOf(handle.view());
  for (let i = 0; i < n; i++) bits[i] = fill ? i + 1 : dtype === "float32" ? 0xdeadbeef : 0xdead;
  return {
    handle,
    dtype,
    storageLength: n,
    shape,
    strides: contiguousStrides(shape),
    offset: 0,
  };
}

function bitsOf(a: Float32Array | Uint16Array): Uint32Array | Uint16Array {
  return a instanceof Float32Array
    ? new Uint32Array(a.buffer, a.byteOffset, a.length)
    : new Uint16Array(a.buffer, a.byteOffset, a.length);
}

/** out (p, oh, ow) = in (p, hIdx[oh], wIdx[ow]), as element bits. */
function gather(
  input: Uint32Array | Uint16Array,
  planes: number,
  inH: number,
  inW: number,
  hIdx: Int32Array,
  wIdx: Int32Array,
): number[] {
  const out: number[] = [];
  for (let p = 0; p < planes; p++) {
    for (const h of hIdx) for (const w of wIdx) out.push(input[(p * inH + h) * inW + w]);
  }
  return out;
}

interface Shape {
  inH: number;
  inW: number;
  outH: number;
  outW: number;
  scales: [number, number];
}

/** Shapes: every outW % per for float32 and 16-bit rows, rows narrower than a vector, the column
 * patterns (copy, 2x up, 2x down) and the table's kinds (one load, two loads, element by element);
 * H maps with runs of 1 (0.5, 1), 1 and 2 (1.7), 2 (2), 3 (3). */
function shapes(): Shape[] {
  const list: Shape[] = [];
  const ws: [number, number][] = [];
  for (const inW of [1, 2, 3, 5, 7, 9, 13, 20, 33, 70]) {
    for (const s of [0.5, 0.6, 1, 1.7, 2, 2.5, 3]) {
      const outW = Math.floor(inW * s);
      if (outW >= 1) ws.push([inW, s]);
    }
  }
  const hs: [number, number][] = [[4, 0.5], [5, 1], [7, 1.7], [5, 2], [4, 3], [6, 0]];
  let k = 0;
  for (const [inW, sw] of ws) {
    const [inH, sh] = hs[k++ % hs.length];
    const outH = sh === 0 ? 9 : Math.floor(inH * sh);
    list.push({ inH, inW, outH, outW: Math.floor(inW * sw), scales: [sh, sw] });
  }
  return list;
}

function bandCuts(outH: number, seed: number): number[] {
  // Fixed cuts, some inside runs of rows sharing an input row.
  const cuts = new Set([0, outH]);
  for (let c = 1 + (seed % 2); c < outH; c += 2 + (seed % 3)) cuts.add(c);
  return [...cuts].sort((a, b) => a - b);
}

Deno.test("nearest_forward: overlapping last vectors, narrow rows, runs of rows and bands give a plain gather's bits", () => {
  const kernels = new WasmKernels();
  let checked = 0;
  for (const dtype of DTYPES) {
    let seed = 0;
    for (const s of shapes()) {
      seed++;
      const planes = 3;
      const oneD = s.inH === 6 && s.scales[0] === 0 && seed % 2 === 0;
      const inH = oneD ? 1 : s.inH, outH = oneD ? 1 : s.outH;
      const inputSize = oneD ? [1, planes, s.inW] : [1, planes, inH, s.inW];
      const outputSize = oneD ? [s.outW] : [outH, s.outW];
      const scales = oneD ? [s.scales[1]] : s.scales;
      const input = tensor(kernels, dtype, inputSize, true);
      const hIdx = oneD ? Int32Array.of(0) : nearestTables(inH, outH, scales[0], "pytorch").index;
      const wIdx = nearestTables(s.inW, s.outW, scales[scales.length - 1], "pytorch").index;
      const expected = gather(bitsOf(input.handle.view()), planes, inH, s.inW, hIdx, wIdx);
      // The whole call, then bands of rows.
      for (const cuts of [[0, outH], bandCuts(outH, seed)]) {
        const out = tensor(kernels, dtype, [1, planes, ...outputSize], false);
        const call: WasmForwardCall = {
          op: oneD ? "nearestExact1d" : "nearestExact2d",
          dtype,
          input,
          out,
          inputSize,
          outputSize,
          scales,
          alignCorners: false,
        };
        const ready = prepareWasmForward(kernels, call, 1)!;
        assert.equal(ready.kernel, "nearest_forward");
        const n = ready.args.length;
        for (let b = 0; b + 1 < cuts.length; b++) {
          ready.args[n - 2] = cuts[b];
          ready.args[n - 1] = cuts[b + 1];
          runPrepared(kernels, ready);
          // Nothing past the band is written (workers own those rows).
          const part = bitsOf(out.handle.view()), sentinel = part[part.length - 1];
          for (let p = 0; p < planes && cuts[b + 1] < outH; p++) {
            for (let i = cuts[b + 1] * s.outW; i < outH * s.outW; i++) {
              const at = p * outH * s.outW + i;
              if (part[at] !== sentinel) {
                assert.fail(`${dtype} band ${cuts}: element ${at} written`);
              }
            }
          }
        }
        const got = bitsOf(out.handle.view());
        for (let i = 0; i < expected.length; i++) {
          if (got[i] !== expected[i]) {
            assert.fail(
              `${dtype} ${JSON.stringify({ inputSize, outputSize, scales, cuts })}: element ${i} ` +
                `(row ${Math.floor(i / s.outW) % outH}, column ${i % s.outW}) is ${
                  got[i].toString(16)
                }, expected ${expected[i].toString(16)}`,
            );
          }
        }
        out.handle.release();
        checked++;
      }
      input.handle.release();
    }
  }
  assert.ok(checked > 300, `${checked} calls`);
});
