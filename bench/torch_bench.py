#!/usr/bin/env python3
"""PyTorch side of `deno task bench:compare` (driven by bench/compare.ts over stdin/stdout).

Usage: torch_bench.py [THREADS] (default 1). compare.ts runs it at 1 and at one thread per core,
upstream PyTorch's default (Debian's build starts at 1: its OpenMP reports one thread).

One JSON object per line in each direction. The first line written is a hello:
  {"ok": true, "torch": "1.13.1", "threads": 1, "cpu": "<model name>"}
  or {"ok": false, "reason": "...", "cpu": "<model name>"} (then exit 0).
Requests:
  {"cmd": "setup", "case": {...}, "dtype": "float32"}  -> {"ok": true} | {"ok": false, "reason": ...}
  {"cmd": "run", "calls": k}                            -> {"ok": true, "ms": [per-call ms, ...]}
  {"cmd": "run", "calls": k, "batch": true}             -> {"ok": true, "ms": [mean ms over k calls]}
  {"cmd": "run", "calls": k, "out": true}               -> the same, writing into a preallocated result
  {"cmd": "quit"}
Only the aten op is timed (explicit output_size, input_size and scales). Allocating (the default):
the functional op, which allocates its result; the result is dropped inside the timed region, as
the Deno side disposes its result. Compute ("out": true): the op's out= overload
(`torch.ops.aten.<op>.out(..., out=y)`, the backwards' `.grad_input(..., grad_input=g)`) into one
result allocated at setup, as the Deno side's `out`. A case with "forward": true times the
forward op instead (`_upsample_nearest_exact{1,2}d`, `upsample_bilinear2d`: what
`torch.nn.functional.interpolate(x, size=..., mode=...)` dispatches to, called directly) on an input
of shape inputSize.
"""

import json
import sys
import time


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def cpu_model():
    """The first `model name` of /proc/cpuinfo (Deno cannot read /proc without --allow-all)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def aten_op(name):
    """The aten overload packet `name` (or its underscore-less / underscored twin)."""
    import torch

    for candidate in (name, name.lstrip("_"), "_" + name.lstrip("_")):
        if hasattr(torch.ops.aten, candidate):
            return getattr(torch.ops.aten, candidate)
    raise RuntimeError("torch.ops.aten has no " + name)


def make_forward_call(case, dtype):
    """(allocating call, out= call) of a forward case."""
    import torch

    out_size = list(case["outputSize"])
    gen = torch.Generator().manual_seed(12345)
    kind = getattr(torch, dtype)
    x = (torch.rand(list(case["inputSize"]), generator=gen) * 2 - 1).to(kind)
    y = torch.empty(list(case["inputSize"][:2]) + out_size, dtype=kind)
    scales = [s if s > 0 else None for s in case["scales"]]
    op = case["op"]
    if op == "nearestExact1d":
        f = aten_op("_upsample_nearest_exact1d")
        return (lambda: f(x, out_size, scales[0]), lambda: f.out(x, out_size, scales[0], out=y))
    if op == "nearestExact2d":
        f = aten_op("_upsample_nearest_exact2d")
        return (
            lambda: f(x, out_size, scales[0], scales[1]),
            lambda: f.out(x, out_size, scales[0], scales[1], out=y),
        )
    f = aten_op("upsample_bilinear2d")
    align = bool(case["alignCorners"])
    return (
        lambda: f(x, out_size, align, scales[0], scales[1]),
        lambda: f.out(x, out_size, align, scales[0], scales[1], out=y),
    )


def make_call(case, dtype):
    """(allocating call, out= call) of a case."""
    import torch

    if case.get("forward"):
        return make_forward_call(case, dtype)
    n, c = case["inputSize"][0], case["inputSize"][1]
    out_size = list(case["outputSize"])
    in_size = list(case["inputSize"])
    gen = torch.Generator().manual_seed(12345)
    kind = getattr(torch, dtype)
    grad = (torch.rand([n, c] + out_size, generator=gen) * 2 - 1).to(kind)
    g = torch.empty(in_size, dtype=kind)
    scales = [s if s > 0 else None for s in case["scales"]]
    op = case["op"]
    if op == "nearestExact1d":
        f = aten_op("_upsample_nearest_exact1d_backward")
        return (
            lambda: f(grad, out_size, in_size, scales[0]),
            lambda: f.grad_input(grad, out_size, in_size, scales[0], grad_input=g),
        )
    if op == "nearestExact2d":
        f = aten_op("_upsample_nearest_exact2d_backward")
        return (
            lambda: f(grad, out_size, in_size, scales[0], scales[1]),
            lambda: f.grad_input(grad, out_size, in_size, scales[0], scales[1], grad_input=g),
        )
    f = aten_op("upsample_bilinear2d_backward")
    align = bool(case["alignCorners"])
    return (
        lambda: f(grad, out_size, in_size, align, scales[0], scales[1]),
        lambda: f.grad_input(grad, out_size, in_size, align, scales[0], scales[1], grad_input=g),
    )


def main():
    try:
        import torch
    except Exception as error:  # noqa: BLE001 - any import failure means "no PyTorch"
        reply({"ok": False, "reason": "cannot import torch: %s" % error, "cpu": cpu_model()})
        return
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        pass
    reply(
        {
            "ok": True,
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu": cpu_model(),
        }
    )
    call = None
    for line in sys.stdin:
        request = json.loads(line)
        cmd = request["cmd"]
        if cmd == "quit":
            return
        if cmd == "setup":
            call = None
            try:
                candidate = make_call(request["case"], request["dtype"])
                candidate[0]()  # also checks that the dtype is implemented
                candidate[1]()
                call = candidate
                reply({"ok": True})
            except Exception as error:  # noqa: BLE001 - reported to the driver
                reply({"ok": False, "reason": str(error).split("\n")[0]})
        elif cmd == "run":
            if call is None:
                reply({"ok": False, "reason": "no case set up"})
                continue
            calls = int(request["calls"])
            run = call[1] if request.get("out") else call[0]
            if request.get("batch"):
                start = time.perf_counter()
                for _ in range(calls):
                    run()
                reply({"ok": True, "ms": [(time.perf_counter() - start) * 1e3 / calls]})
            else:
                times = []
                for _ in range(calls):
                    start = time.perf_counter()
                    run()
                    times.append((time.perf_counter() - start) * 1e3)
                reply({"ok": True, "ms": times})
        else:
            reply({"ok": False, "reason": "unknown command " + cmd})


if __name__ == "__main__":
    main()
