#!/usr/bin/env python3
"""Generate the PyTorch reference fixtures for @aclnn/upsample.

Writes ``tests/fixtures/manifest.json`` and little-endian float32 files under ``tests/fixtures/``.
Needs PyTorch (developed against Debian's python3-torch 1.13.1, ``/usr/bin/python3``) and NumPy; CI never
runs this script, the output is committed. Deterministic: rerunning it rewrites identical files.

    /usr/bin/python3 tools/gen_fixtures.py            # regenerate
    /usr/bin/python3 tools/gen_fixtures.py --check    # regenerate into a temp dir and compare

Expected gradients are computed by PyTorch CPU in float32 with the aten backward ops
(``torch.ops.aten._upsample_nearest_exact{1,2}d_backward``, ``torch.ops.aten.upsample_bilinear2d_backward``),
with explicit ``scales`` (None when the case's scale is 0). For float16/bfloat16 cases the gradOutput values
are already exact in that dtype; the float32 result is what torch returns for the upcast input, and the test
rounds it (round to nearest even) to the dtype. torch 1.13's own half/bf16 kernels are not used: they
accumulate in low precision.

Every case is cross-checked here:
  * aten backward op == autograd through ``F.interpolate`` forward (bitwise; when the scales can be expressed
    through interpolate, i.e. all given or none given);
  * the requested layout (channelsLast / transposed / offset) gives the same result as a contiguous grad
    (bitwise for nearest-exact; bilinear differences are reported);
  * nearest-exact: an independent NumPy model of docs/semantics.md (float32 scale, float32 source index,
    row-major scatter from +0.0) is bit-exact;
  * bilinear: a float64 NumPy model agrees within a tolerance, and a float32 model (coordinate in double,
    float32 lambdas and weights, FMA accumulation) is reported when it is bit-exact.

Findings (torch 1.13.1, Debian, AVX2):
  * nearest-exact matches docs/semantics.md bit for bit in every case, all layouts included.
  * bilinear float32 is reproduced bit for bit by: s = fl32(1/scale) | fl32(in/out) | fl32((in-1)/(out-1)),
    coordinate r = s*(o+0.5)-0.5 (or s*o) in double, lambda1 = fl32(clamp(r - i0, 0, 1)),
    lambda0 = fl32(1 - lambda1), weight fl32(lh*lw), acc = fma(weight, g, acc). PyTorch >= 2.0 rounds the
    coordinate to float32 instead, which moves results by up to ~4e-5 * max|expected| when coordinates are
    large (bilinear2d/ac/shrink50-scale0.02) and ~2e-6 * max|expected| for the 19x37 cases; compare bilinear
    with a tolerance that allows for that.
  * channelsLast / transposed / offset gradOutput never changes a result (bilinear included).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import zlib
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

# Gradients with more elements than this get a generated ({"lcg": seed}) input instead of a file.
FILE_LIMIT = 6000
MASK32 = 0xFFFFFFFF
LCG_A = 1664525
LCG_C = 1013904223

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))


# --------------------------------------------------------------------------------------------------
# Deterministic inputs


def lcg_values(seed: int, n: int) -> np.ndarray:
    """The generator shared with tests/support/fixtures.ts.

    x = seed >>> 0; for each k: x = (x * 1664525 + 1013904223) mod 2^32; v_k = ((x >>> 16) % 255 - 127) / 64.
    """
    if n == 0:
        return np.zeros(0, np.float32)
    block = min(n, 1 << 16)
    xs = np.empty(block, np.uint64)
    x = seed & MASK32
    a_b, c_b = 1, 0  # affine map of `block` steps: x -> a_b * x + c_b
    for i in range(block):
        x = (x * LCG_A + LCG_C) & MASK32
        xs[i] = x
        a_b, c_b = (a_b * LCG_A) & MASK32, (c_b * LCG_A + LCG_C) & MASK32
    out = np.empty(n, np.uint64)
    out[:block] = xs
    pos = block
    cur = xs
    a64, c64, m64 = np.uint64(a_b), np.uint64(c_b), np.uint64(MASK32)
    while pos < n:
        cur = (cur * a64 + c64) & m64  # products < 2^64: exact in uint64
        take = min(block, n - pos)
        out[pos : pos + take] = cur[:take]
        pos += take
    vals = ((out >> np.uint64(16)) % np.uint64(255)).astype(np.int64) - 127
    return (vals.astype(np.float64) / 64.0).astype(np.float32)


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode("utf-8")) & MASK32


def random_normal(name: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed_of(name))
    return rng.standard_normal(n).astype(np.float32)


# --------------------------------------------------------------------------------------------------
# dtype rounding (round to nearest even) and byte encodings


def bf16_bits(x: np.ndarray) -> np.ndarray:
    b = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) & np.uint64(
        0xFFFF
    )
    nan = np.isnan(x)
    quiet = ((b >> np.uint64(16)) | np.uint64(0x40)) & np.uint64(0xFFFF)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def f16_bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, np.float32).astype(np.float16).view(np.uint16)


def round_to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return x.astype(np.float32)
    if dtype == "float16":
        return x.astype(np.float32).astype(np.float16).astype(np.float32)
    bits = bf16_bits(x).astype(np.uint32) << np.uint32(16)
    return bits.view(np.float32)


def dtype_bytes(x: np.ndarray, dtype: str) -> bytes:
    if dtype == "float32":
        return np.ascontiguousarray(x, "<f4").tobytes()
    if dtype == "float16":
        return f16_bits(x).astype("<u2").tobytes()
    return bf16_bits(x).astype("<u2").tobytes()


# --------------------------------------------------------------------------------------------------
# Case description


@dataclass
class Case:
    name: str
    op: str  # nearestExact1d | nearestExact2d | bilinear2d
    input_size: list[int]
    output_size: list[int]
    scales: list[float]
    align_corners: bool = False
    layout: str = "contiguous"
    dtype: str = "float32"
    grad: str = "auto"  # auto | random | lcg | ones | special | const:<v>
    expected: str = "auto"  # auto | file | hash
    extra: dict = field(default_factory=dict)

    @property
    def go_shape(self) -> list[int]:
        return self.input_size[:2] + self.output_size


def floor_ok(inp: int, out: int, scale: float) -> bool:
    return scale == 0 or math.floor(inp * scale) == out


def validate(c: Case) -> None:
    """Only combinations the aclnn contract allows."""
    nd = 1 if c.op == "nearestExact1d" else 2
    assert len(c.input_size) == nd + 2 and len(c.output_size) == nd and len(c.scales) == nd, c.name
    assert all(s > 0 for s in c.input_size[2:]) and all(s > 0 for s in c.output_size), c.name
    assert c.input_size[1] > 0, c.name
    if c.op == "nearestExact1d":
        # aclnnUpsampleNearestExact1dBackward checks N > 0 before its empty-tensor shortcut.
        assert c.input_size[0] > 0, c.name
    for inp, out, s in zip(c.input_size[2:], c.output_size, c.scales):
        assert s >= 0, c.name
        assert floor_ok(inp, out, s), (c.name, inp, out, s)
        if c.op != "bilinear2d":
            # aclnn: realScale = (s > 0 ? 1/s : in/out) >= 0.02, i.e. at most 50x upscale.
            real = 1.0 / s if s > 0 else inp / out
            assert real >= 0.02, (c.name, "more than 50x upscale", inp, out, s)
    if c.op == "bilinear2d":
        # aclnnUpsampleBilinear2dBackwardV2 uses the scales only when both satisfy the floor rule; a
        # half-given pair would silently fall back to size-derived scales, so keep them all-or-none.
        assert (c.scales[0] == 0) == (c.scales[1] == 0), c.name
    assert c.layout in ("contiguous", "channelsLast", "transposed", "offset"), c.name
    assert not (c.layout == "channelsLast" and nd == 1), c.name
    assert c.dtype in ("float32", "float16", "bfloat16"), c.name


# --------------------------------------------------------------------------------------------------
# Torch evaluation


def present(go: torch.Tensor, layout: str) -> torch.Tensor:
    """Give the logical row-major tensor `go` the storage layout the test will use."""
    if layout == "contiguous":
        return go.contiguous()
    if layout == "channelsLast":
        return go.contiguous(memory_format=torch.channels_last)
    if layout == "transposed":
        t = go.transpose(-1, -2).contiguous().transpose(-1, -2)
        assert not t.is_contiguous() or go.shape[-1] <= 1 or go.shape[-2] <= 1
        return t
    if layout == "offset":
        n = go.numel()
        base = torch.full((n + 13,), float("nan"), dtype=go.dtype)
        view = base[7 : 7 + n].view(go.shape)
        view.copy_(go)
        assert view.storage_offset() == 7
        return view
    raise ValueError(layout)


def none_if_zero(s: float):
    return None if s == 0 else float(s)


def aten_backward(c: Case, go: torch.Tensor) -> torch.Tensor:
    if c.op == "nearestExact1d":
        return torch.ops.aten._upsample_nearest_exact1d_backward(
            go, c.output_size, c.input_size, none_if_zero(c.scales[0])
        )
    if c.op == "nearestExact2d":
        return torch.ops.aten._upsample_nearest_exact2d_backward(
            go, c.output_size, c.input_size, none_if_zero(c.scales[0]), none_if_zero(c.scales[1])
        )
    return torch.ops.aten.upsample_bilinear2d_backward(
        go,
        c.output_size,
        c.input_size,
        c.align_corners,
        none_if_zero(c.scales[0]),
        none_if_zero(c.scales[1]),
    )


def autograd_backward(c: Case, go: torch.Tensor):
    """The same gradient through interpolate's forward; None when interpolate cannot express the case."""
    given = [s != 0 for s in c.scales]
    if any(given) and not all(given):
        return None
    x = torch.zeros(c.input_size, dtype=torch.float32, requires_grad=True)
    mode = "bilinear" if c.op == "bilinear2d" else "nearest-exact"
    kw = {"align_corners": c.align_corners} if c.op == "bilinear2d" else {}
    if all(given):
        y = F.interpolate(x, scale_factor=list(c.scales), mode=mode, recompute_scale_factor=False, **kw)
    else:
        y = F.interpolate(x, size=list(c.output_size), mode=mode, **kw)
    assert list(y.shape) == c.go_shape, (c.name, list(y.shape), c.go_shape)
    y.backward(go)
    return x.grad


# --------------------------------------------------------------------------------------------------
# Independent NumPy models of docs/semantics.md


def nearest_src(inp: int, out: int, scale: float) -> np.ndarray:
    s = np.float32(1.0 / scale) if scale > 0 else np.float32(np.float32(inp) / np.float32(out))
    o = np.arange(out, dtype=np.float32)
    r = (o + np.float32(0.5)).astype(np.float32) * s
    return np.minimum(np.floor(r.astype(np.float32)).astype(np.int64), inp - 1)


def nearest_model(c: Case, go: np.ndarray) -> np.ndarray:
    n, ch = c.input_size[:2]
    planes = n * ch
    if c.op == "nearestExact1d":
        idx = nearest_src(c.input_size[2], c.output_size[0], c.scales[0])
        in_plane = c.input_size[2]
    else:
        ih = nearest_src(c.input_size[2], c.output_size[0], c.scales[0])
        iw = nearest_src(c.input_size[3], c.output_size[1], c.scales[1])
        idx = (ih[:, None] * c.input_size[3] + iw[None, :]).reshape(-1)
        in_plane = c.input_size[2] * c.input_size[3]
    gi = np.zeros((in_plane, planes), np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        np.add.at(gi, idx, go.reshape(planes, idx.size).T)  # ascending output order, from +0.0, in float32
    return np.ascontiguousarray(gi.T).reshape(c.input_size)


def bilinear_dim(inp: int, out: int, scale: float, ac: bool, exact: bool):
    """Per-dimension (i0, i1, lambda0, lambda1).

    The scale is float32 in both (as docs/semantics.md says). exact=True models torch 1.13 CPU float32 as
    observed: source coordinate in double, lambdas rounded to float32. exact=False keeps float64 lambdas.
    """
    if ac:
        s = (inp - 1) / (out - 1) if out > 1 else 0.0
    else:
        s = 1.0 / scale if scale > 0 else inp / out
    s = float(np.float32(s))
    if inp == out:
        i0 = np.arange(out)
        return i0, i0, np.ones(out), np.zeros(out)
    o = np.arange(out, dtype=np.float64)
    r = s * o if ac else np.maximum(s * (o + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(r).astype(np.int64), inp - 1)
    l1 = np.clip(r - i0, 0.0, 1.0)
    if exact:
        l1 = l1.astype(np.float32)
        return i0, i0 + (i0 < inp - 1), (np.float32(1) - l1).astype(np.float32), l1
    return i0, i0 + (i0 < inp - 1), 1.0 - l1, l1


def bilinear_model(c: Case, go: np.ndarray, exact: bool) -> np.ndarray:
    """Scatter in row-major output order, taps 00, 01, 10, 11.

    exact=True: acc = fl32(fl32(lh * lw) * g + acc) with an exact product (the FMA of an AVX2 build), in float32.
    exact=False: float64 weights and accumulation.
    """
    n, ch, ih, iw = c.input_size
    oh, ow = c.output_size
    hd = bilinear_dim(ih, oh, c.scales[0], c.align_corners, exact)
    wd = bilinear_dim(iw, ow, c.scales[1], c.align_corners, exact)
    g = go.astype(np.float64).reshape(n * ch, oh * ow)
    gi = np.zeros((ih * iw, n * ch), np.float32 if exact else np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if not exact:
            for hi, lh in ((hd[0], hd[2]), (hd[1], hd[3])):
                for wi, lw in ((wd[0], wd[2]), (wd[1], wd[3])):
                    idx = (hi[:, None] * iw + wi[None, :]).reshape(-1)
                    wgt = (lh[:, None] * lw[None, :]).reshape(-1)
                    np.add.at(gi, idx, g.T * wgt[:, None])
        else:
            for y in range(oh):
                taps_h = ((hd[0][y], hd[2][y]), (hd[1][y], hd[3][y]))
                for x in range(ow):
                    v = g[:, y * ow + x]
                    for hi, lh in taps_h:
                        for wi, lw in ((wd[0][x], wd[2][x]), (wd[1][x], wd[3][x])):
                            k = hi * iw + wi
                            w = np.float64(np.float32(np.float32(lh) * np.float32(lw)))
                            gi[k] = (w * v + gi[k].astype(np.float64)).astype(np.float32)
    return np.ascontiguousarray(gi.T).reshape(c.input_size)


# --------------------------------------------------------------------------------------------------
# Case list


def explicit(inp: int, scale: float) -> int:
    return math.floor(inp * scale)


def scale_for(inp: int, out: int) -> float:
    """A scale factor with floor(inp * s) == out (out / inp when that works)."""
    s = out / inp
    for _ in range(8):
        if math.floor(inp * s) == out:
            return s
        s = math.nextafter(s, math.inf)
    raise AssertionError((inp, out))


EDGE_SCALES = [1.7, 0.6, 0.3, 1.3, 2.5, 1 / 3, 1.00001, 0.99999]


def build_cases() -> list[Case]:
    cases: list[Case] = []

    def add(*args, **kw) -> Case:
        c = Case(*args, **kw)
        cases.append(c)
        return c

    # ---------------- nearest-exact 1d ----------------
    op = "nearestExact1d"
    for out in (1, 2, 5, 50):
        add(f"nearest1d/size1-to-{out}", op, [2, 3, 1], [out], [0])
    add("nearest1d/size1-to-50-ones", op, [1, 1, 1], [50], [0], grad="ones")
    for inp in (2, 4, 7):
        add(f"nearest1d/size{inp}-to-1", op, [2, 3, inp], [1], [0])
    add("nearest1d/c1", op, [3, 1, 13], [29], [0])
    add("nearest1d/identity-3", op, [2, 2, 3], [3], [0])
    add("nearest1d/identity-3-scale1.3", op, [2, 2, 3], [3], [1.3])
    add("nearest1d/identity-10-scale1.05", op, [1, 2, 10], [10], [1.05])
    for inp, out in ((2, 41), (4, 82), (96, 134), (64, 247)):
        add(f"nearest1d/tie-{inp}-{out}", op, [1, 2, inp], [out], [0])
    add("nearest1d/tie-2-41-scale20.5", op, [1, 2, 2], [41], [20.5])
    add("nearest1d/tie-64-247-scale3.86", op, [1, 2, 64], [explicit(64, 3.86)], [3.86])
    for inp in (27, 30, 100):
        add(f"nearest1d/in{inp}-scale0.3", op, [1, 2, inp], [explicit(inp, 0.3)], [0.3])
        add(f"nearest1d/in{inp}-size{explicit(inp, 0.3)}", op, [1, 2, inp], [explicit(inp, 0.3)], [0])
    add("nearest1d/20-to-11", op, [2, 2, 20], [11], [0])
    add("nearest1d/20-to-11-scale0.55", op, [2, 2, 20], [11], [0.55])
    add("nearest1d/10-to-15", op, [2, 2, 10], [15], [0])
    add("nearest1d/10-to-15-scale1.5", op, [2, 2, 10], [15], [1.5])
    for s in EDGE_SCALES:
        add(f"nearest1d/in37-scale{s:.6g}", op, [2, 2, 37], [explicit(37, s)], [s])
    add("nearest1d/shrink50-scale0.02", op, [1, 2, 1000], [20], [0.02])
    add("nearest1d/shrink50-size", op, [1, 2, 1000], [20], [0])
    add("nearest1d/special-inf-nan-negzero", op, [2, 3, 5], [12], [0], grad="special")
    add("nearest1d/special-shrink-negzero", op, [2, 2, 9], [4], [0], grad="special")
    add("nearest1d/overflow-f32", op, [1, 2, 3], [9], [0], grad="const:2e38")
    for dt in ("float16", "bfloat16"):
        add(f"nearest1d/tie-2-41-{dt}", op, [1, 2, 2], [41], [0], dtype=dt)
        add(f"nearest1d/in37-scale1.7-{dt}", op, [2, 2, 37], [62], [1.7], dtype=dt)
        add(f"nearest1d/shrink50-scale0.02-{dt}", op, [1, 2, 1000], [20], [0.02], dtype=dt, grad="lcg")
        add(f"nearest1d/size1-to-50-ones-{dt}", op, [1, 1, 1], [50], [0], dtype=dt, grad="ones")
        add(f"nearest1d/special-inf-negzero-{dt}", op, [2, 3, 5], [12], [0], dtype=dt, grad="special")
        add(f"nearest1d/transposed-{dt}", op, [2, 5, 7], [16], [2.3], dtype=dt, layout="transposed")
    add("nearest1d/overflow-float16", op, [1, 2, 4], [8], [0], dtype="float16", grad="const:60000")

    # op-plugin (Ascend/op-plugin test_upsample_nearest_exact1d_backward) shapes, sizes only
    plugin1d = [
        ((8, 2, 2), 100), ((4, 3, 1), 2), ((1, 4, 2), 8), ((8, 8, 8), 12), ((2, 3, 2), 3), ((4, 10, 16), 15),
        ((10, 4, 3), 2), ((4, 1, 20), 368), ((5, 2, 16), 512), ((6, 6, 30), 208), ((2, 2, 3441), 9234),
        ((7, 6, 14777), 12768), ((1, 5, 5663), 8779),
    ]  # fmt: skip
    for dt in ("float32", "float16", "bfloat16"):
        for shape, out in plugin1d:
            add(f"nearest1d/plugin-{'x'.join(map(str, shape))}-to-{out}-{dt}", op, list(shape), [out], [0],
                dtype=dt, grad="lcg")  # fmt: skip

    # ---------------- nearest-exact 2d ----------------
    op = "nearestExact2d"
    for out in (1, 2, 5, 50):
        add(f"nearest2d/size1-to-{out}", op, [2, 3, 1, 1], [out, out], [0, 0])
    add("nearest2d/size1-to-5x50", op, [1, 2, 1, 1], [5, 50], [0, 0])
    add("nearest2d/size1-to-50x50-ones", op, [1, 1, 1, 1], [50, 50], [0, 0], grad="ones")
    for ih, iw in ((2, 4), (7, 1), (4, 7)):
        add(f"nearest2d/size{ih}x{iw}-to-1", op, [2, 3, ih, iw], [1, 1], [0, 0])
    add("nearest2d/n0", op, [0, 3, 4, 5], [8, 10], [0, 0])
    add("nearest2d/n0-scale2", op, [0, 2, 4, 5], [8, 10], [2.0, 2.0])
    add("nearest2d/c1", op, [2, 1, 5, 6], [11, 13], [0, 0])
    add("nearest2d/identity-3x3", op, [2, 2, 3, 3], [3, 3], [0, 0])
    add("nearest2d/identity-3x3-scale1.3", op, [2, 2, 3, 3], [3, 3], [1.3, 1.3])
    add("nearest2d/identity-3x10-scale1.3-1.05", op, [1, 2, 3, 10], [3, 10], [1.3, 1.05])
    add("nearest2d/tie-2-41x4-82", op, [1, 2, 2, 4], [41, 82], [0, 0])
    add("nearest2d/tie-96-134x64-247", op, [1, 1, 96, 64], [134, 247], [0, 0], grad="lcg")
    add("nearest2d/tie-96-134x64-247-scale3.86", op, [1, 1, 96, 64], [134, explicit(64, 3.86)], [0, 3.86],
        grad="lcg")  # fmt: skip
    add("nearest2d/tie-64-247x2-41-scale3.86-20.5", op, [1, 2, 64, 2], [explicit(64, 3.86), 41], [3.86, 20.5])
    add("nearest2d/in27x30-scale0.3", op, [2, 2, 27, 30], [explicit(27, 0.3), explicit(30, 0.3)], [0.3, 0.3])
    add("nearest2d/in100x27-scale0.3", op, [1, 2, 100, 27], [explicit(100, 0.3), explicit(27, 0.3)],
        [0.3, 0.3])  # fmt: skip
    add("nearest2d/in30x100-size", op, [1, 2, 30, 100], [explicit(30, 0.3), explicit(100, 0.3)], [0, 0])
    add("nearest2d/20-to-11x10-to-15", op, [2, 2, 20, 10], [11, 15], [0, 0])
    add("nearest2d/20-to-11x10-to-15-scale", op, [2, 2, 20, 10], [11, 15], [0.55, 1.5])
    pairs = [(1.7, 0.6), (0.3, 1.3), (2.5, 1 / 3), (1.00001, 0.99999), (0.6, 1.7), (1 / 3, 2.5)]
    for sh, sw in pairs:
        add(f"nearest2d/in19x37-scale{sh:.6g}-{sw:.6g}", op, [1, 2, 19, 37], [explicit(19, sh), explicit(37, sw)],
            [sh, sw])  # fmt: skip
    add("nearest2d/mixed-scale-h-only", op, [2, 2, 9, 11], [15, 7], [1.7, 0])
    add("nearest2d/mixed-scale-w-only", op, [2, 2, 9, 11], [7, 18], [0, 1.7])
    add("nearest2d/shrink50-scale0.02", op, [1, 1, 1000, 60], [20, 3], [0.02, 0.05], grad="lcg")
    add("nearest2d/shrink50-size", op, [1, 2, 100, 1000], [2, 20], [0, 0], grad="lcg")
    add("nearest2d/special-inf-nan-negzero", op, [2, 3, 3, 4], [7, 9], [0, 0], grad="special")
    add("nearest2d/special-channels-last", op, [2, 3, 3, 4], [7, 9], [0, 0], grad="special",
        layout="channelsLast")  # fmt: skip
    for dt in ("float16", "bfloat16"):
        add(f"nearest2d/tie-2-41x4-82-{dt}", op, [1, 2, 2, 4], [41, 82], [0, 0], dtype=dt)
        add(f"nearest2d/in19x37-scale1.7-0.6-{dt}", op, [1, 2, 19, 37], [32, 22], [1.7, 0.6], dtype=dt)
        add(f"nearest2d/size1-to-50x50-ones-{dt}", op, [1, 1, 1, 1], [50, 50], [0, 0], dtype=dt, grad="ones")
        add(f"nearest2d/shrink50-scale0.02-{dt}", op, [1, 1, 1000, 60], [20, 3], [0.02, 0.05], dtype=dt,
            grad="lcg")  # fmt: skip
        add(f"nearest2d/special-inf-negzero-{dt}", op, [2, 3, 3, 4], [7, 9], [0, 0], dtype=dt, grad="special")
        add(f"nearest2d/channels-last-{dt}", op, [2, 5, 6, 7], [13, 9], [2.2, 1.3], dtype=dt,
            layout="channelsLast")  # fmt: skip
        add(f"nearest2d/transposed-{dt}", op, [2, 3, 6, 7], [13, 9], [0, 0], dtype=dt, layout="transposed")
        add(f"nearest2d/offset-{dt}", op, [2, 3, 5, 4], [8, 9], [1.7, 2.3], dtype=dt, layout="offset")

    plugin2d = [
        ((8, 2, 2, 2), (100, 100)), ((4, 3, 1, 5), (2, 2)), ((1, 4, 2, 2), (8, 8)), ((8, 8, 8, 8), (12, 14)),
        ((2, 3, 2, 1), (3, 3)), ((4, 10, 16, 14), (15, 15)), ((10, 4, 3, 2), (2, 4)),
        ((4, 1, 20, 30), (368, 779)), ((5, 2, 16, 14), (512, 512)), ((6, 6, 30, 20), (208, 432)),
        ((2, 2, 26, 3441), (38, 9234)), ((7, 6, 16, 14777), (45, 12768)), ((1, 5, 5663, 2), (8779, 6)),
    ]  # fmt: skip
    for dt in ("float32", "float16", "bfloat16"):
        for shape, out in plugin2d:
            nm = f"nearest2d/plugin-{'x'.join(map(str, shape))}-to-{out[0]}x{out[1]}-{dt}"
            add(nm, op, list(shape), list(out), [0, 0], dtype=dt, grad="lcg")

    # ---------------- bilinear 2d ----------------
    op = "bilinear2d"
    for ac in (False, True):
        t = "ac" if ac else "hp"
        for out in (1, 2, 5, 64):
            add(f"bilinear2d/{t}/size1-to-{out}", op, [2, 3, 1, 1], [out, out], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/size1-to-128x128-ones", op, [1, 1, 1, 1], [128, 128], [0, 0], align_corners=ac,
            grad="ones")  # fmt: skip
        for ih, iw in ((2, 4), (7, 1), (4, 7)):
            add(f"bilinear2d/{t}/size{ih}x{iw}-to-1", op, [2, 3, ih, iw], [1, 1], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/out1x5", op, [2, 2, 6, 7], [1, 5], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/n0", op, [0, 3, 4, 5], [8, 10], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/c1", op, [2, 1, 5, 6], [11, 13], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/identity-3x3", op, [2, 2, 3, 3], [3, 3], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/identity-3x3-scale1.3", op, [2, 2, 3, 3], [3, 3], [1.3, 1.3], align_corners=ac)
        add(f"bilinear2d/{t}/identity-h-3x7-scale1.3-2.5", op, [1, 2, 3, 7], [3, 17], [1.3, 2.5],
            align_corners=ac)  # fmt: skip
        add(f"bilinear2d/{t}/tie-2-41x4-82", op, [1, 2, 2, 4], [41, 82], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/in27x30-scale0.3", op, [1, 2, 27, 30], [8, 9], [0.3, 0.3], align_corners=ac)
        add(f"bilinear2d/{t}/20-to-11x10-to-15", op, [2, 2, 20, 10], [11, 15], [0, 0], align_corners=ac)
        add(f"bilinear2d/{t}/20-to-11x10-to-15-scale", op, [2, 2, 20, 10], [11, 15], [0.55, 1.5],
            align_corners=ac)  # fmt: skip
        for sh, sw in pairs:
            add(f"bilinear2d/{t}/in19x37-scale{sh:.6g}-{sw:.6g}", op, [1, 2, 19, 37],
                [explicit(19, sh), explicit(37, sw)], [sh, sw], align_corners=ac)  # fmt: skip
        add(f"bilinear2d/{t}/shrink50-scale0.02", op, [1, 1, 1000, 6], [20, 3], [0.02, 0.5], align_corners=ac,
            grad="lcg")  # fmt: skip
        # Sizes whose scale is a power of two ((in-1)/(out-1) = 1/2 with align_corners, in/out = 1/2
        # without): every coordinate and lambda is exact in float32 and in double, so where inf meets a
        # zero weight (NaN) does not depend on the precision of the coordinate math (1.13 vs 2.x).
        special_out = [5, 7] if ac else [6, 8]
        add(f"bilinear2d/{t}/special-inf-nan-negzero", op, [2, 3, 3, 4], special_out, [0, 0],
            align_corners=ac, grad="special")  # fmt: skip
        add(f"bilinear2d/{t}/special-corner-inf", op, [1, 2, 3, 3], [7, 7], [0, 0], align_corners=ac,
            grad="corner-inf")  # fmt: skip
        add(f"bilinear2d/{t}/size1-to-128x128-ones-bfloat16", op, [1, 1, 1, 1], [128, 128], [0, 0],
            align_corners=ac, dtype="bfloat16", grad="ones")  # fmt: skip
        for dt in ("float16", "bfloat16"):
            add(f"bilinear2d/{t}/in19x37-scale1.7-0.6-{dt}", op, [1, 2, 19, 37], [32, 22], [1.7, 0.6],
                align_corners=ac, dtype=dt)  # fmt: skip
            add(f"bilinear2d/{t}/channels-last-{dt}", op, [2, 5, 6, 7], [13, 9], [2.2, 1.3], align_corners=ac,
                dtype=dt, layout="channelsLast")  # fmt: skip

    # op-plugin (test_upsample_bilinear2d_backward) shapes: both align_corners, sizes and explicit scales
    plugin_bl = [
        ("float32", (4, 3, 1, 5), (2, 2)), ("float32", (2, 3, 2, 1), (3, 3)), ("float32", (1, 4, 2, 2), (4, 4)),
        ("float16", (4, 10, 16, 14), (5, 5)), ("float16", (8, 8, 8, 8), (1, 2)), ("float16", (10, 4, 3, 2), (2, 4)),
    ]  # fmt: skip
    for dt0, shape, out in plugin_bl:
        for dt in ((dt0,) if dt0 == "float32" else ("float16", "bfloat16")):
            base = f"{'x'.join(map(str, shape))}-to-{out[0]}x{out[1]}-{dt}"
            for ac in (False, True):
                t = "ac" if ac else "hp"
                add(f"bilinear2d/{t}/plugin-{base}", op, list(shape), list(out), [0, 0], align_corners=ac,
                    dtype=dt)  # fmt: skip
            sc = [scale_for(shape[2], out[0]), scale_for(shape[3], out[1])]
            add(f"bilinear2d/hp/plugin-{base}-scale", op, list(shape), list(out), sc, dtype=dt)

    # ---------------- random cases: explicit scales, layouts ----------------
    rng = np.random.default_rng(20240611)
    layouts2 = ["contiguous", "channelsLast", "transposed", "offset"]
    layouts1 = ["contiguous", "transposed", "offset"]
    pool = [0.25, 0.3, 0.45, 0.5, 0.6, 0.75, 0.99999, 1.0, 1.00001, 1.25, 1.3, 1.5, 1.7, 2.0, 2.3, 2.5, 3.0,
            1 / 3, 2 / 3, 3.86, 4.0]  # fmt: skip

    def rand_dim(op_name: str) -> tuple[int, int, float]:
        while True:
            inp = int(rng.integers(1, 24))
            kind = rng.random()
            if kind < 0.55:
                s = float(pool[int(rng.integers(len(pool)))])
            elif kind < 0.8:
                s = float(round(rng.uniform(0.2, 4.0), 3))
            else:
                s = 0.0
            if s == 0:
                out = int(rng.integers(1, 40))
            else:
                out = explicit(inp, s)
            if out < 1 or out > 50 * inp:
                continue
            return inp, out, s

    for i in range(24):
        inp, out, s = rand_dim("1d")
        n, ch = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        add(f"nearest1d/random-{i:02d}", "nearestExact1d", [n, ch, inp], [out], [s], layout=layouts1[i % 3])
    for i in range(32):
        (ih, oh, sh), (iw, ow, sw) = rand_dim("2d"), rand_dim("2d")
        n, ch = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        add(f"nearest2d/random-{i:02d}", "nearestExact2d", [n, ch, ih, iw], [oh, ow], [sh, sw],
            layout=layouts2[i % 4])  # fmt: skip
    for i in range(32):
        while True:
            (ih, oh, sh), (iw, ow, sw) = rand_dim("2d"), rand_dim("2d")
            if (sh == 0) == (sw == 0):
                break
        n, ch = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        add(f"bilinear2d/random-{i:02d}", "bilinear2d", [n, ch, ih, iw], [oh, ow], [sh, sw],
            align_corners=bool(i % 2), layout=layouts2[(i // 2) % 4])  # fmt: skip
    return cases


# --------------------------------------------------------------------------------------------------
# Gradient values


def make_grad(c: Case) -> tuple[np.ndarray, dict]:
    shape = c.go_shape
    n = int(np.prod(shape))
    kind = c.grad
    if kind == "auto":
        kind = "random" if n <= FILE_LIMIT else "lcg"
    if kind == "lcg":
        seed = seed_of(c.name)
        return lcg_values(seed, n).reshape(shape), {"lcg": seed}
    if kind == "ones":
        g = np.ones(n, np.float32)
    elif kind.startswith("const:"):
        g = np.full(n, float(kind[6:]), np.float32)
    elif kind == "random":
        g = random_normal(c.name, n)
    elif kind == "corner-inf":
        # +inf at output (0, 0) of every plane: the zero-weight taps (lambda1 == 0) turn into NaN (0 * inf)
        g = random_normal(c.name, n).reshape(shape[0] * shape[1], -1)
        g[:, 0] = np.inf
        g = g.reshape(-1)
    elif kind == "special":
        g = random_normal(c.name, n).reshape(shape[0] * shape[1], -1)
        plane = g.shape[1]
        if g.shape[0] == 1:
            g[0, 1::4] = -0.0
            g[0, 0] = np.inf  # the first output row/column has lambda1 == 0 in bilinear: 0 * inf = NaN
            g[0, plane - 1] = -np.inf
            g[0, plane // 2] = np.nan
        else:
            g[0, :] = -0.0  # a whole plane of -0.0: every input cell must come out +0.0 (sum starts at +0.0)
        if g.shape[0] > 1:
            g[1, 0] = np.inf
            g[1, plane - 1] = -np.inf
            g[1, plane // 2] = -0.0
        if g.shape[0] > 2:
            g[2, 1] = np.nan
            g[2, 0] = np.inf
            g[2, plane - 2] = -np.inf  # inf and -inf into one cell -> NaN (where they meet)
            g[2, plane - 1] = -np.inf
        if g.shape[0] > 3:
            g[3, ::3] = -0.0
        if c.dtype != "float32":
            g[np.isnan(g)] = 0.5  # NaN only in the float32 cases; inf and -0.0 are exact in every dtype
        g = g.reshape(-1)
    else:
        raise ValueError(kind)
    return round_to_dtype(g, c.dtype).reshape(shape), {}


# --------------------------------------------------------------------------------------------------
# Main


def bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    if a.shape != b.shape:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return False
    return np.array_equal(a.view(np.uint32)[~na], b.view(np.uint32)[~nb])


def file_name(case_name: str, suffix: str) -> str:
    safe = case_name.replace("/", "__")
    return f"data/{safe}.{suffix}.f32"


def write_bytes(out_dir: str, rel: str, data: bytes) -> None:
    path = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def render_manifest(meta: dict, entries: list[dict]) -> str:
    """JSON in the layout `deno fmt` keeps: one property per line, values on one line."""

    def val(v) -> str:
        if isinstance(v, dict):
            inner = ", ".join(f"{json.dumps(k)}: {val(x)}" for k, x in v.items())
            return "{ " + inner + " }" if inner else "{}"
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return json.dumps(v, allow_nan=False)

    def prop(key: str, v, indent: int, last: bool) -> list[str]:
        pad = " " * indent
        comma = "" if last else ","
        one = f"{pad}{json.dumps(key)}: {val(v)}{comma}"
        if len(one) <= 100 or not isinstance(v, dict):
            return [one]
        out = [f"{pad}{json.dumps(key)}: {{"]
        items = list(v.items())
        for j, (k, x) in enumerate(items):
            out += prop(k, x, indent + 2, j + 1 == len(items))
        return out + [f"{pad}}}{comma}"]

    lines = ["{"]
    for k, v in meta.items():
        lines += prop(k, v, 2, False)
    lines.append('  "cases": [')
    for i, e in enumerate(entries):
        lines.append("    {")
        items = list(e.items())
        for j, (k, v) in enumerate(items):
            lines += prop(k, v, 6, j + 1 == len(items))
        lines.append("    }" + ("," if i + 1 < len(entries) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def generate(out_dir: str, verbose: bool) -> dict:
    cases = build_cases()
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "duplicate case names"
    stats = {
        "route_checked": 0,
        "route_skipped": 0,
        "layout_diff": [],
        "bilinear_model_maxrel": 0.0,
        "bilinear_exact": 0,
        "bilinear_inexact": [],
    }
    if os.path.isdir(os.path.join(out_dir, "data")):
        shutil.rmtree(os.path.join(out_dir, "data"))
    entries = []
    for c in cases:
        validate(c)
        go_np, go_ref = make_grad(c)
        go_t = torch.from_numpy(np.ascontiguousarray(go_np))
        res = aten_backward(c, present(go_t, c.layout))
        assert res.dtype == torch.float32 and list(res.shape) == c.input_size, c.name
        gi = res.contiguous().numpy()

        # cross-checks
        if c.layout != "contiguous":
            ref = aten_backward(c, go_t.contiguous()).contiguous().numpy()
            if not bitwise_equal(ref, gi):
                assert c.op == "bilinear2d", (c.name, "layout changes a nearest-exact result")
                with np.errstate(invalid="ignore"):
                    d = float(np.nanmax(np.abs(ref - gi))) if gi.size else 0.0
                stats["layout_diff"].append((c.name, d))
        if go_np.size <= 3_000_000:
            ag = autograd_backward(c, go_t)
            if ag is None:
                stats["route_skipped"] += 1
            else:
                assert bitwise_equal(ag.numpy(), gi), (c.name, "aten op and autograd disagree")
                stats["route_checked"] += 1
            if c.op == "bilinear2d":
                model = bilinear_model(c, go_np, exact=False)
                bound = bilinear_model(c, np.abs(go_np), exact=False)  # sum of |terms| bounds rounding
                fin = np.isfinite(model) & np.isfinite(gi)
                assert np.array_equal(np.isnan(model), np.isnan(gi)), (c.name, "NaN pattern")
                assert np.array_equal(model[~fin], gi[~fin], equal_nan=True), (c.name, "inf pattern")
                if fin.any():
                    err = np.abs(model[fin] - gi[fin]) / np.maximum(bound[fin], 1e-30)
                    worst = float(err.max())
                    assert worst < 1e-5, (c.name, worst)
                    stats["bilinear_model_maxrel"] = max(stats["bilinear_model_maxrel"], worst)
                if bitwise_equal(bilinear_model(c, go_np, exact=True), gi):
                    stats["bilinear_exact"] += 1
                else:
                    stats["bilinear_inexact"].append(c.name)
        if c.op != "bilinear2d":
            assert bitwise_equal(nearest_model(c, go_np), gi), (c.name, "semantics.md model differs")

        e: dict = {
            "name": c.name,
            "op": c.op,
            "dtype": c.dtype,
            "inputSize": c.input_size,
            "outputSize": c.output_size,
            "scales": [float(s) if s != int(s) else int(s) for s in c.scales],
            "alignCorners": c.align_corners,
            "layout": c.layout,
        }
        if go_ref:
            e["gradOutput"] = go_ref
        else:
            rel = file_name(c.name, "go")
            write_bytes(out_dir, rel, np.ascontiguousarray(go_np, "<f4").tobytes())
            e["gradOutput"] = {"file": rel}
        mode = c.expected
        if mode == "auto":
            mode = "file" if c.op == "bilinear2d" or not go_ref else "hash"
        if c.op == "bilinear2d" or not np.isfinite(gi).all():
            mode = "file"
        if mode == "file":
            rel = file_name(c.name, "gi")
            write_bytes(out_dir, rel, np.ascontiguousarray(gi, "<f4").tobytes())
            e["expected"] = {"file": rel}
        else:
            digest = hashlib.sha256(dtype_bytes(gi, c.dtype)).hexdigest()
            e["expected"] = {"sha256": digest, "sum": float(np.sum(gi, dtype=np.float64))}
        entries.append(e)
        if verbose:
            print(f"{c.name}: go={'x'.join(map(str, c.go_shape))} expected={mode}", file=sys.stderr)

    meta = {
        "version": 1,
        "generator": "tools/gen_fixtures.py",
        "torch": torch.__version__,
        "lcg": "x = seed >>> 0; per value: x = (x * 1664525 + 1013904223) mod 2^32; "
        + "v = ((x >>> 16) % 255 - 127) / 64",
    }
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        f.write(render_manifest(meta, entries))
    stats["cases"] = cases
    return stats


def tree_digest(d: str) -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(d):
        for fn in files:
            p = os.path.join(root, fn)
            with open(p, "rb") as f:
                out[os.path.relpath(p, d)] = hashlib.sha256(f.read()).hexdigest()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("--out", default=FIXTURES, help="output directory (default tests/fixtures)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    # The lcg values hard-coded in tests/cpu/fixtures_test.ts.
    print("lcg(12345)[:6] =", lcg_values(12345, 6).tolist())
    print("lcg(0)[:3] =", lcg_values(0, 3).tolist(), " lcg(4294967295)[:3] =", lcg_values(MASK32, 3).tolist())
    print("lcg(7)[70000] =", float(lcg_values(7, 70001)[70000]))
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(tmp, args.verbose)
            a, b = tree_digest(tmp), tree_digest(args.out)
            b = {k: v for k, v in b.items() if k == "manifest.json" or k.startswith("data" + os.sep)}
            if a != b:
                diff = sorted(set(a.items()) ^ set(b.items()))
                print("fixtures differ:", diff[:10], file=sys.stderr)
                return 1
        print("fixtures are up to date")
        return 0

    stats = generate(args.out, args.verbose)
    cases = stats["cases"]
    counts: dict[tuple[str, str], int] = {}
    for c in cases:
        counts[(c.op, c.dtype)] = counts.get((c.op, c.dtype), 0) + 1
    for k in sorted(counts):
        print(f"{k[0]:16s} {k[1]:9s} {counts[k]}")
    print("total cases:", len(cases))
    print("aten vs autograd bitwise-checked:", stats["route_checked"], "skipped (mixed scales):",
          stats["route_skipped"])  # fmt: skip
    print("bilinear layout vs contiguous differences:", stats["layout_diff"] or "none")
    print("bilinear float64 model max error / sum|terms|:", stats["bilinear_model_maxrel"])
    print("bilinear float32+FMA model bit-exact:", stats["bilinear_exact"], "not:", stats["bilinear_inexact"])
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(args.out) for f in fs)
    print("fixture bytes:", total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
