// The two kernel modules (src/cpu/wasm/fma_path.ts): the probe's verdict and the path it picks, a
// module that does not validate (a runtime without relaxed SIMD) falling back to the exact path,
// the fused and the exact module giving the same bits on calls full of rounding ties, and every
// PyTorch fixture suite of the forward ops and the parity suites run on each path, forced by
// ACLNN_UPSAMPLE_WASM_FMA in a child process.

import assert from "node:assert/strict";
import type { StorageView } from "../../src/backend.ts";
import { CpuBuffer } from "../../src/cpu/buffer.ts";
import {
  FMA_PATH_ENV,
  fmaPath,
  kernelModuleBytes,
  probeFusedModule,
  probeModuleBytes,
} from "../../src/cpu/wasm/fma_path.ts";
import { WasmKernels } from "../../src/cpu/wasm/instance.ts";
import { launchWasmForward, type WasmForwardCall } from "../../src/cpu/wasm/launch_forward.ts";
import { contiguousStrides } from "../../src/tensor/layout.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { rng } from "../support/helpers.ts";

const fusedHere = probeFusedModule().fused;

Deno.test("fma path: the probe's verdict decides the default path, and says why", () => {
  const probe = probeFusedModule();
  const choice = fmaPath();
  const forced = Deno.env.get(FMA_PATH_ENV);
  if (forced === "exact" || forced === "fused") {
    assert.equal(choice.path, forced);
  } else {
    assert.equal(choice.path, probe.fused ? "fused" : "exact");
    assert.equal(choice.reason, probe.reason);
  }
  assert.equal(new WasmKernels(2 ** 24).fma, choice.path);
});

Deno.test("fma path: a module that does not validate (no relaxed SIMD) runs the exact path", () => {
  const bytes = kernelModuleBytes("fused");
  // Corrupt the code section's first function body: the module no longer validates, as a runtime
  // without relaxed SIMD sees the fused module's f32x4.relaxed_madd.
  const broken = bytes.slice();
  broken.fill(0xff, broken.length - 64, broken.length - 32);
  const probe = probeModuleBytes(broken);
  assert.equal(probe.fused, false);
  assert.match(probe.reason, /does not validate/);
  assert.equal(probe.module, null);
  // The exact module never needs relaxed SIMD, and loads.
  const exact = new WasmKernels(2 ** 24, false, "exact");
  assert.equal(exact.fma, "exact");
});

Deno.test({
  name: "fma path: the fused module's relaxed_madd rounds once on the probe's values",
  ignore: !fusedHere,
  fn(): void {
    const probe = probeModuleBytes(kernelModuleBytes("fused"));
    assert.equal(probe.fused, true);
    assert.equal(probe.reason, "relaxed_madd rounds once");
  },
});

function view(
  kernels: WasmKernels,
  dtype: DType,
  shape: number[],
  values?: Float32Array,
): StorageView<CpuBuffer> {
  const n = shape.reduce((a, b) => a * b, 1);
  const handle = CpuBuffer.inHeap(kernels.heap, dtype, n)!;
  if (values) (handle.view() as Float32Array).set(values);
  return { handle, dtype, storageLength: n, shape, strides: contiguousStrides(shape), offset: 0 };
}

// Values whose products and sums often tie: small integers times powers of two, with subnormals,
// huge values, infinities and NaN among them.
function trickyValues(r: () => number, n: number): Float32Array {
  const specials = [Infinity, -Infinity, NaN, -0, 3e38, -3e38, 1e-40, 1e-45, 2 ** -126];
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u = r();
    out[i] = u < 0.05
      ? specials[Math.floor(r() * specials.length)]
      : u < 0.5
      ? Math.round((r() - 0.5) * 64) * 2 ** (Math.floor(r() * 40) - 20)
      : (r() - 0.5) * 2 ** (Math.floor(r() * 60) - 30);
  }
  return out;
}

Deno.test({
  name: "fma path: the fused and the exact module give the same bits on bilinear calls",
  ignore: !fusedHere,
  fn(): void {
    const r = rng(30);
    const fused = new WasmKernels(2 ** 26, false, "fused");
    const exact = new WasmKernels(2 ** 26, false, "exact");
    assert.equal(fused.fma, "fused");
    assert.equal(exact.fma, "exact");
    let compared = 0;
    for (let trial = 0; trial < 40; trial++) {
      // C >= 2 and H, W >= 2: PyTorch's generic kernel (the fused one), not the channels-last one.
      const inH = 2 + Math.floor(r() * 12), inW = 2 + Math.floor(r() * 40);
      const outH = 1 + Math.floor(r() * 30), outW = 1 + Math.floor(r() * 70);
      const planes = 2 + Math.floor(r() * 3);
      const inputSize = [1, planes, inH, inW], outputSize = [outH, outW];
      const alignCorners = r() < 0.3;
      const values = trickyValues(r, planes * inH * inW);
      const results: Uint32Array[] = [];
      for (const kernels of [fused, exact]) {
        const input = view(kernels, "float32", inputSize, values);
        const out = view(kernels, "float32", [1, planes, outH, outW]);
        const call: WasmForwardCall = {
          op: "bilinear2d",
          dtype: "float32",
          input,
          out,
          inputSize,
          outputSize,
          scales: [0, 0],
          alignCorners,
        };
        assert.ok(launchWasmForward(kernels, call));
        results.push(new Uint32Array((out.handle.view() as Float32Array).slice().buffer));
        input.handle.release();
        out.handle.release();
      }
      const [a, b] = results;
      for (let i = 0; i < a.length; i++) {
        if (a[i] !== b[i]) {
          assert.fail(
            `trial ${trial} ${inputSize} -> ${outputSize} ac=${alignCorners}: element ${i} fused ` +
              `0x${a[i].toString(16)} exact 0x${b[i].toString(16)}`,
          );
        }
      }
      compared += a.length;
    }
    assert.ok(compared > 1000);
  },
});

/** The PyTorch fixture suites the forward kernels and the CPU backend answer to. */
const SUITES = [
  "tests/cpu/forward_fixtures_test.ts",
  "tests/cpu/forward_wasm_test.ts",
  "tests/cpu/parity_test.ts",
  "tests/cpu/fixtures_test.ts",
  "tests/api/forward_api_test.ts",
];

async function runSuitesOn(path: "exact" | "fused"): Promise<void> {
  const root = new URL("../../", import.meta.url);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      "--allow-run",
      "--allow-write",
      "--v8-flags=--expose-gc",
      ...SUITES,
    ],
    cwd: root,
    env: { [FMA_PATH_ENV]: path, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  assert.equal(
    code,
    0,
    `${FMA_PATH_ENV}=${path}: the fixture suites failed:\n${text.slice(-4000)}`,
  );
  assert.match(text, / passed .* 0 failed/);
}

Deno.test("fma path: every PyTorch fixture suite passes on the exact path (forced)", async () => {
  await runSuitesOn("exact");
});

Deno.test({
  name: "fma path: every PyTorch fixture suite passes on the fused path (forced)",
  ignore: !fusedHere,
  fn: async (): Promise<void> => {
    await runSuitesOn("fused");
  },
});
