// Friction a newcomer meets in the first hour: a tensor too large for its backend fails at once with
// the bytes (no allocation, no wait); a read left un-awaited at the end of a `using` block says to
// await it; memoryInfo() on the CPU under the README's flags says exactly what it needs; dtype
// aliases get a "did you mean".

import assert from "node:assert/strict";
import {
  Device,
  upsampleNearestExact1dBackward,
  upsampleNearestExact2dBackward,
} from "../../mod.ts";
import { runDeno } from "../support/cann_tree.ts";
import { EMU_DIR, EMULATED_LANE, emuLive } from "../support/helpers.ts";

Deno.test("friction: a shape too large for the CPU backend fails at once with the bytes", () => {
  for (const cpuKernels of ["auto", "typescript"] as const) {
    using device = Device.open({ backend: "cpu", cpuKernels, threads: 1 });
    using one = device.tensor([1], [1, 1, 1]);
    const cases: Array<[() => unknown, RegExp]> = [
      [
        () => device.zeros([100000, 100000]),
        /^zeros: shape \[100000, 100000\] of float32 needs 40000000000 bytes \(37\.25 GiB\), more than one tensor can take on this device: 4294967296 bytes \(4\.00 GiB\), the CPU backend's WebAssembly memory limit/,
      ],
      [
        () => device.zeros([3, 2 ** 30]),
        /^zeros: shape \[3, 1073741824\] of float32 needs 12884901888 bytes \(12\.00 GiB\)/,
      ],
      [
        () => device.zeros([3, 2 ** 30], { dtype: "bfloat16" }),
        /^zeros: shape \[3, 1073741824\] of bfloat16 needs 6442450944 bytes/,
      ],
      [() => device.tensor([], [2 ** 31, 2]), /^tensor: shape \[2147483648, 2\] of float32 needs/],
      // An op's result too: a one-element gradient downsampled from 2^31 cells (it once ran a minute
      // and took 8 GiB of host memory before answering).
      [
        () => upsampleNearestExact1dBackward(one, { outputSize: [1], inputSize: [1, 1, 2 ** 31] }),
        /^upsampleNearestExact1dBackward: the result: shape \[1, 1, 2147483648\] of float32 needs 8589934592 bytes/,
      ],
    ];
    for (const [call, message] of cases) {
      assert.throws(call, (error) => {
        assert.ok(error instanceof RangeError, String(error));
        assert.match(error.message, message);
        return true;
      });
    }
  }
});

EMULATED_LANE.test("friction: a shape larger than the NPU's memory fails before any allocation", () => {
  using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
  const { total } = npu.memoryInfo();
  const live = emuLive();
  const elements = Math.floor(total / 4) + 1;
  assert.throws(() => npu.zeros([elements]), (error) => {
    assert.ok(error instanceof RangeError, String(error));
    assert.match(
      error.message,
      new RegExp(
        `^zeros: shape \\[${elements}\\] of float32 needs ${elements * 4} bytes .* ${total} ` +
          `bytes .*, the memory of Ascend\\S+ #0 .*\\(aclrtGetMemInfo\\)`,
      ),
    );
    return true;
  });
  assert.deepEqual(emuLive(), live, "nothing was allocated");
  using fits = npu.zeros([1024]);
  assert.equal(fits.shape[0], 1024);
});

Deno.test("friction: a read not awaited before the end of a `using` block says to await it", async () => {
  let pending: Promise<Float32Array>;
  {
    using device = Device.open({ backend: "cpu", threads: 1 });
    using grad = device.tensor([1, 2, 3, 4], [1, 1, 2, 2]);
    pending = grad.toFloat32Array(); // the missing await
  }
  await assert.rejects(pending, (error) => {
    assert.ok(error instanceof TypeError, String(error));
    assert.match(
      error.message,
      /^toFloat32Array: the float32 tensor \[1, 1, 2, 2\] was disposed while the read was pending .*end of a `using` block.*await the read before the tensor or its device is disposed/,
    );
    return true;
  });
});

EMULATED_LANE.test("friction: on the NPU too, both ways a pending read meets a disposal mention await", async () => {
  const pending: Promise<Float32Array>[] = [];
  {
    using npu = Device.open({ backend: "npu", libDir: EMU_DIR });
    using grad = npu.tensor(new Array(16).fill(1), [1, 1, 4, 4]);
    // Queued work: the read waits for the stream, and meets the device's close.
    using result = upsampleNearestExact2dBackward(grad, {
      outputSize: [4, 4],
      inputSize: [1, 1, 2, 2],
    });
    pending.push(result.toFloat32Array());
    // No queued work on a tensor disposed at once.
    const view = grad.slice(3, 0, 2);
    pending.push(view.toFloat32Array());
    view.dispose();
  }
  for (const read of pending) {
    await assert.rejects(read, /was disposed while the read was pending .*await the read/);
  }
});

const MEMORY_CHILD = new URL("../support/child/memory_info.ts", import.meta.url).pathname;

Deno.test("friction: memoryInfo() on the CPU under the README's flags names the flag it needs", async () => {
  const readme = await runDeno(MEMORY_CHILD, {
    flags: ["--allow-ffi", "--allow-env", "--allow-read"],
  });
  const refused = JSON.parse(readme.stdout);
  assert.equal(refused.error, "NotCapable", readme.stdout + readme.stderr);
  assert.match(
    refused.message,
    /^memoryInfo\(\): on the CPU backend, tensors live in host memory, whose size Deno reads only with --allow-sys .*\nfix: run with --allow-sys=systemMemoryInfo \(or --allow-sys\)$/,
  );
  const sys = await runDeno(MEMORY_CHILD, {
    flags: ["--allow-ffi", "--allow-env", "--allow-read", "--allow-sys=systemMemoryInfo"],
  });
  const info = JSON.parse(sys.stdout);
  assert.ok(info.total > 0 && info.free > 0 && info.free <= info.total, sys.stdout + sys.stderr);
});

Deno.test('friction: dtype aliases get a "did you mean"', () => {
  using device = Device.open({ backend: "cpu", threads: 1 });
  const meant: Array<[string, string]> = [
    ["fp16", "float16"],
    ["half", "float16"],
    ["torch.float16", "float16"],
    ["bf16", "bfloat16"],
    ["BFloat16", "bfloat16"],
    ["fp32", "float32"],
    ["float", "float32"],
    ["Float32", "float32"],
  ];
  for (const [alias, dtype] of meant) {
    assert.throws(
      // deno-lint-ignore no-explicit-any
      () => device.zeros([1], { dtype: alias as any }),
      new TypeError(
        `dtype must be one of float32, float16, bfloat16, got "${alias}" (did you mean "${dtype}"?)`,
      ),
    );
  }
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => device.tensor([1], [1], { dtype: "int8" as any }),
    new TypeError(`dtype must be one of float32, float16, bfloat16, got "int8"`),
  );
});
