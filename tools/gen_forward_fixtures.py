#!/usr/bin/env python3
"""Generate the PyTorch reference fixtures of the FORWARD ops for @aclnn/upsample.

Writes ``tests/fixtures/forward/manifest.json`` and little-endian data files in each case's dtype
(float32 values, or float16/bfloat16 bit patterns) under ``tests/fixtures/forward/data/``. Needs PyTorch
(developed against Debian's python3-torch 1.13, ``/usr/bin/python3``) and NumPy; run by hand, never by CI;
the output is committed. Deterministic: rerunning it rewrites identical files.

    /usr/bin/python3 tools/gen_forward_fixtures.py            # regenerate
    /usr/bin/python3 tools/gen_forward_fixtures.py --check    # regenerate into a temp dir and compare

Expected outputs are computed by PyTorch CPU with the aten forward ops
(``torch.ops.aten._upsample_nearest_exact{1,2}d``, ``torch.ops.aten.upsample_bilinear2d``, explicit sizes and
scales, None when a case's scale is 0) on the input in the case's layout (contiguous, channelsLast = the
``channels_last`` memory format, transposed = storage with the last two dims swapped, offset = a view at
storage offset 7). A case is ``native`` when torch 1.13 computes its dtype itself (bfloat16 bilinear);
otherwise (float16 everywhere, bfloat16 nearest-exact: "not implemented for 'Half'/'BFloat16'", which the
script checks) the expected output is torch's float32 result for the widened input, same layout, rounded to
the dtype (nearest even).

Every case is cross-checked against independent NumPy models of what was measured (the models below), bit
for bit; the script fails otherwise. Findings (torch 1.13.0a0, Debian, AVX2 build):
  * nearest-exact: the input element at min(floor(fl32((o + 0.5) * s)), in - 1) per dimension, copied
    (the backward's index, docs/semantics.md), every layout.
  * bilinear, float32, an input that is not channels-last contiguous (generic TensorIterator kernel):
    tables with s = fl32(1/scale) | fl32(in)/fl32(out) | fl32(in-1)/fl32(out-1), the coordinate in double
    (d = s*(o+0.5)-0.5 clamped at 0, or s*o), i0 = trunc(d), l1 = fl32(clamp(d - i0, 0, 1)),
    l0 = fl32(1 - l1), equal sizes the identity; then W first, t = fma(a, lw0, fl32(b * lw1)) per input row,
    out = fma(t0, lh0, fl32(t1 * lh1)).
  * bilinear, float32, a channels-last contiguous input (also contiguous NCHW with C = 1 or H = W = 1): the
    same tables; weights w00 = fl32(lh0 * lw0), ...; channels c < C - C % 8 (AVX2 vector lanes):
    fma(i00, w00, fma(i01, w01, fma(i11, w11, fl32(i10 * w10)))); the other channels (scalar tail): the
    sum ((i00 w00 + i01 w01) + i10 w10) + i11 w11 in double, rounded once to float32.
  * bilinear, bfloat16 (native in 1.13): tables in bfloat16 arithmetic: s = bf(bf(in)/bf(out)) |
    bf(fl32(1/scale)) | bf(bf(in-1)/bf(out-1)), the coordinate in float32 (fl32(s*(o+0.5)-0.5) or
    fl32(s*o)), l1 = bf(clamp(d - i0, 0, 1)), l0 = bf(1 - l1). Generic kernel: every operation rounded to
    bfloat16, W first: t = bf(bf(a lw0) + bf(b lw1)), out = bf(bf(t0 lh0) + bf(t1 lh1)). Channels-last:
    w00 = bf(lh0 lw0), ...; c < C - C % 16: i00 w00 + (i01 w01 + (i11 w11 + i10 w10)) in float32, the tail
    ((i00 w00 + i01 w01) + i10 w10) + i11 w11 in float32 (products exact), rounded once to bfloat16.
  * float16: refused by every forward kernel of 1.13; bfloat16: refused by nearest-exact.
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
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import (  # noqa: E402  (shared generator, JSON layout and helpers)
    explicit,
    lcg_values,
    none_if_zero,
    render_manifest,
    tree_digest,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "forward")
# Inputs with more elements than this are generated ({"lcg": seed}); outputs larger than OUT_LIMIT hashed.
IN_LIMIT = 4096
OUT_LIMIT = 6000

torch.set_num_threads(1)
f32 = np.float32


# --------------------------------------------------------------------------------------------------
# dtype helpers


def bf16_bits(x: np.ndarray) -> np.ndarray:
    b = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) & np.uint64(0xFFFF)
    return np.where(np.isnan(x), np.uint64(0x7FC0), r).astype(np.uint16)


def bf(x) -> np.ndarray:
    """float32 value(s) rounded to bfloat16 (nearest even), as float32."""
    a = np.asarray(x, np.float32)
    out = (bf16_bits(np.atleast_1d(a)).astype(np.uint32) << np.uint32(16)).view(np.float32)
    return out.reshape(a.shape)


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float32":
        return x.astype(np.float32)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float32).astype(np.float16).astype(np.float32)
    return bf(x.astype(np.float32))


def dtype_bytes(x: np.ndarray, dtype: str) -> bytes:
    x = np.ascontiguousarray(x, np.float32)
    if dtype == "float32":
        return x.astype("<f4").tobytes()
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).view(np.uint16).astype("<u2").tobytes()
    return bf16_bits(x).astype("<u2").tobytes()


TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


# --------------------------------------------------------------------------------------------------
# exact float32 fused multiply-add (for the models)


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fl32(a * b + c), one rounding, elementwise (float32 arrays)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, f32), np.asarray(b, f32), np.asarray(c, f32))
    with np.errstate(all="ignore"):
        s = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
        r = s.astype(np.float32)
    # The double sum may round: settle every inexact case that could round twice exactly.
    out = r.copy().reshape(-1)
    fa, fb, fc, fs = a.reshape(-1), b.reshape(-1), c.reshape(-1), s.reshape(-1)
    for k in np.nonzero(np.isfinite(fs))[0]:
        exact = Fraction(float(fa[k])) * Fraction(float(fb[k])) + Fraction(float(fc[k]))
        if exact == Fraction(float(fs[k])):
            continue
        out[k] = nearest_f32(exact)
    return out.reshape(r.shape)


def nearest_f32(q: Fraction) -> np.float32:
    v = np.float32(float(q))
    best = v
    for cand in (np.nextafter(v, f32(np.inf)), np.nextafter(v, f32(-np.inf))):
        dc, db = abs(Fraction(float(cand)) - q), abs(Fraction(float(best)) - q)
        if dc < db or (dc == db and (cand.view(np.uint32) & 1) == 0):
            best = cand
    return best


# --------------------------------------------------------------------------------------------------
# Independent models of what PyTorch 1.13 computes (see the module doc)


def nearest_src(inp: int, out: int, scale: float) -> np.ndarray:
    s = f32(1.0 / scale) if scale > 0 else f32(f32(inp) / f32(out))
    r = (np.arange(out, dtype=np.float64) + 0.5) * np.float64(s)
    return np.minimum(np.floor(r.astype(np.float32)).astype(np.int64), inp - 1)


def nearest_model(c: "Case", x: np.ndarray) -> np.ndarray:
    if c.op == "nearestExact1d":
        return x[:, :, nearest_src(c.input_size[2], c.output_size[0], c.scales[0])]
    ih = nearest_src(c.input_size[2], c.output_size[0], c.scales[0])
    iw = nearest_src(c.input_size[3], c.output_size[1], c.scales[1])
    return x[:, :, ih][:, :, :, iw]


def linear_table(inp: int, out: int, ac: bool, scale: float, bf16: bool):
    if inp == out:
        o = np.arange(out)
        return o, o, np.ones(out, f32), np.zeros(out, f32)
    if bf16:
        b = lambda v: float(bf(f32(v)))  # noqa: E731
        if ac:
            s = b(f32(b(inp - 1)) / f32(b(out - 1))) if out > 1 else 0.0
        else:
            s = b(f32(1.0 / scale)) if scale > 0 else b(f32(b(inp)) / f32(b(out)))
    elif ac:
        s = float(f32(inp - 1) / f32(out - 1)) if out > 1 else 0.0
    else:
        s = float(f32(1.0 / scale)) if scale > 0 else float(f32(inp) / f32(out))
    i0s, i1s, l0s, l1s = [], [], [], []
    for o in range(out):
        d = s * o if ac else s * (o + 0.5) - 0.5
        if bf16:
            d = float(f32(d))
        d = max(d, 0.0)
        # 1.13 does not bound i0: past the input it reads whatever lies there (no answer to copy).
        assert int(d) <= inp - 1, ("a coordinate past the input", inp, out, ac, scale, bf16, o, d)
        i0 = min(int(d), inp - 1)
        lam = min(max(d - i0, 0.0), 1.0)
        if bf16:
            l1 = bf(f32(lam))
            l0 = bf(f32(1) - l1)
        else:
            l1 = f32(lam)
            l0 = f32(f32(1) - l1)
        i0s.append(i0)
        i1s.append(i0 + 1 if i0 < inp - 1 else i0)
        l0s.append(l0)
        l1s.append(l1)
    return np.array(i0s), np.array(i1s), np.array(l0s, f32), np.array(l1s, f32)


def channels_last(layout: str, shape: list[int], strides: list[int]) -> bool:
    """c10's compute_channels_last_contiguous_2d on the presented input."""
    expected = 1
    for d in (1, 3, 2, 0):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def bilinear_model(c: "Case", x: np.ndarray, cl: bool, bf16: bool) -> np.ndarray:
    n, ch, ih, iw = c.input_size
    oh, ow = c.output_size
    hi0, hi1, hl0, hl1 = linear_table(ih, oh, c.align_corners, c.scales[0], bf16)
    wi0, wi1, wl0, wl1 = linear_table(iw, ow, c.align_corners, c.scales[1], bf16)
    x = x.astype(np.float32)
    i00 = x[:, :, hi0][:, :, :, wi0]
    i01 = x[:, :, hi0][:, :, :, wi1]
    i10 = x[:, :, hi1][:, :, :, wi0]
    i11 = x[:, :, hi1][:, :, :, wi1]
    H0, H1 = hl0[:, None], hl1[:, None]
    W0, W1 = wl0[None, :], wl1[None, :]
    with np.errstate(all="ignore"):
        if not cl and not bf16:
            t0 = fma32(i00, W0, (i01 * W1).astype(f32))
            t1 = fma32(i10, W0, (i11 * W1).astype(f32))
            return fma32(t0, H0, (t1 * H1).astype(f32))
        if not cl:
            t0 = bf(bf(i00 * W0) + bf(i01 * W1))
            t1 = bf(bf(i10 * W0) + bf(i11 * W1))
            return bf(bf(t0 * H0) + bf(t1 * H1))
        rnd = bf if bf16 else (lambda v: np.asarray(v, f32))
        w00, w01 = rnd((H0 * W0).astype(f32)), rnd((H0 * W1).astype(f32))
        w10, w11 = rnd((H1 * W0).astype(f32)), rnd((H1 * W1).astype(f32))
        lanes = ch - ch % (16 if bf16 else 8)
        if bf16:
            p = [v.astype(np.float64) for v in (i00 * w00, i01 * w01, i10 * w10, i11 * w11)]  # exact
            vec = f32(p[0] + f32(p[1] + f32(p[3] + f32(p[2]))))
            tail = f32(f32(f32(p[0] + p[1]) + p[2]) + p[3])
            res = bf(np.where(np.arange(ch)[None, :, None, None] < lanes, vec, tail).astype(f32))
            return res
        vec = fma32(i00, w00, fma32(i01, w01, fma32(i11, w11, (i10 * w10).astype(f32))))
        d = [a.astype(np.float64) * b.astype(np.float64) for a, b in ((i00, w00), (i01, w01), (i10, w10), (i11, w11))]
        tail = (((d[0] + d[1]) + d[2]) + d[3]).astype(f32)
        return np.where(np.arange(ch)[None, :, None, None] < lanes, vec, tail).astype(f32)


# --------------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    op: str
    input_size: list[int]
    output_size: list[int]
    scales: list[float]
    align_corners: bool = False
    layout: str = "contiguous"
    dtype: str = "float32"
    values: str = "auto"  # auto | random | lcg | special | wide


SCALES = [1.7, 0.6, 1 / 3, 1.00001, 2.5, 0.3]


def build_cases() -> list[Case]:
    cases: list[Case] = []
    add = lambda *a, **k: cases.append(Case(*a, **k))  # noqa: E731

    # ---------------- nearest-exact 1d ----------------
    op = "nearestExact1d"
    for inp, out in ((1, 1), (1, 5), (5, 1), (1, 50), (2, 41), (20, 11), (10, 15), (96, 134), (64, 247)):
        add(f"nearest1d/{inp}-to-{out}", op, [2, 3, inp], [out], [0])
    add("nearest1d/c1", op, [3, 1, 13], [29], [0])
    add("nearest1d/n0", op, [0, 3, 4], [9], [0])
    add("nearest1d/in27-scale0.3", op, [1, 2, 27], [8], [0.3])
    add("nearest1d/tie-2-41-scale20.5", op, [1, 2, 2], [41], [20.5])
    for s in SCALES:
        add(f"nearest1d/in37-scale{s:.6g}", op, [2, 2, 37], [explicit(37, s)], [s])
    add("nearest1d/up50-scale50", op, [1, 2, 3], [150], [50.0])
    add("nearest1d/shrink50-scale0.02", op, [1, 2, 1000], [20], [0.02], values="lcg")
    add("nearest1d/disagree-10-15-scale1.3", op, [2, 2, 10], [15], [1.3])
    add("nearest1d/disagree-10-15-scale2", op, [2, 2, 10], [15], [2.0])
    add("nearest1d/special", op, [2, 3, 5], [12], [0], values="special")
    for lay in ("transposed", "offset"):
        add(f"nearest1d/{lay}", op, [2, 5, 7], [16], [2.3], layout=lay)
    for dt in ("float16", "bfloat16"):
        add(f"nearest1d/tie-2-41-{dt}", op, [1, 2, 2], [41], [0], dtype=dt)
        add(f"nearest1d/in37-scale1.7-{dt}", op, [2, 2, 37], [62], [1.7], dtype=dt)
        add(f"nearest1d/special-{dt}", op, [2, 3, 5], [12], [0], dtype=dt, values="special")
        add(f"nearest1d/transposed-{dt}", op, [2, 5, 7], [16], [2.3], dtype=dt, layout="transposed")

    # ---------------- nearest-exact 2d ----------------
    op = "nearestExact2d"
    for (ih, iw), (oh, ow) in (((1, 1), (1, 1)), ((1, 1), (5, 50)), ((7, 4), (1, 1)), ((2, 4), (41, 82)),
                                ((20, 10), (11, 15)), ((3, 3), (3, 3)), ((27, 30), (8, 9))):
        add(f"nearest2d/{ih}x{iw}-to-{oh}x{ow}", op, [1, 2, ih, iw], [oh, ow], [0, 0])
    add("nearest2d/1x1-to-128x128", op, [1, 2, 1, 1], [128, 128], [0, 0])
    add("nearest2d/n0", op, [0, 3, 4, 5], [8, 10], [0, 0])
    add("nearest2d/c1", op, [2, 1, 5, 6], [11, 13], [0, 0])
    add("nearest2d/in27x30-scale0.3", op, [2, 2, 27, 30], [8, 9], [0.3, 0.3])
    for sh, sw in ((1.7, 0.6), (1 / 3, 2.5), (1.00001, 1.7)):
        add(f"nearest2d/in19x37-scale{sh:.6g}-{sw:.6g}", op, [1, 2, 19, 37], [explicit(19, sh), explicit(37, sw)],
            [sh, sw])  # fmt: skip
    add("nearest2d/mixed-scale-h-only", op, [2, 2, 9, 11], [15, 7], [1.7, 0])
    add("nearest2d/up50", op, [1, 1, 2, 1], [100, 50], [50.0, 50.0])
    add("nearest2d/disagree-scale1.3-2", op, [1, 2, 10, 6], [15, 9], [1.3, 2.0])
    add("nearest2d/special", op, [2, 3, 3, 4], [7, 9], [0, 0], values="special")
    for lay in ("channelsLast", "transposed", "offset"):
        add(f"nearest2d/{lay}", op, [2, 5, 6, 7], [13, 9], [2.2, 1.3], layout=lay)
    for dt in ("float16", "bfloat16"):
        add(f"nearest2d/tie-2-41x4-82-{dt}", op, [1, 2, 2, 4], [41, 82], [0, 0], dtype=dt)
        add(f"nearest2d/special-{dt}", op, [2, 3, 3, 4], [7, 9], [0, 0], dtype=dt, values="special")
        add(f"nearest2d/channels-last-{dt}", op, [2, 5, 6, 7], [13, 9], [2.2, 1.3], dtype=dt, layout="channelsLast")
        add(f"nearest2d/offset-{dt}", op, [2, 3, 5, 4], [8, 9], [1.7, 2.3], dtype=dt, layout="offset")

    # ---------------- bilinear 2d ----------------
    op = "bilinear2d"
    for dt in ("float32", "bfloat16"):
        sfx = "" if dt == "float32" else f"-{dt}"
        for ac in (False, True):
            t = "ac" if ac else "hp"
            A = dict(align_corners=ac, dtype=dt)
            for (ih, iw), (oh, ow) in (((1, 1), (1, 1)), ((1, 1), (5, 5)), ((4, 7), (1, 1)), ((2, 4), (41, 9)),
                                        ((20, 10), (11, 15)), ((5, 7), (5, 7)), ((27, 30), (8, 9)), ((3, 5), (1, 9))):
                add(f"bilinear2d/{t}/{ih}x{iw}-to-{oh}x{ow}{sfx}", op, [1, 2, ih, iw], [oh, ow], [0, 0], **A)
            add(f"bilinear2d/{t}/1x1-to-128x128{sfx}", op, [1, 1, 1, 1], [128, 128], [0, 0], **A)
            add(f"bilinear2d/{t}/n0{sfx}", op, [0, 3, 4, 5], [8, 10], [0, 0], **A)
            add(f"bilinear2d/{t}/c1{sfx}", op, [2, 1, 5, 6], [11, 13], [0, 0], **A)
            # bfloat16 rounds 999 / 19 up: align_corners then reads past the input; 513 -> 9 stays inside.
            add(f"bilinear2d/{t}/shrink50{sfx}", op, [1, 1, 3, 1000 if not ac else 513], [2, 20 if not ac else 9],
                [0, 0], values="lcg", **A)  # fmt: skip
            add(f"bilinear2d/{t}/special{sfx}", op, [2, 3, 3, 4], [7, 9], [0, 0], values="special", **A)
            add(f"bilinear2d/{t}/wide-values{sfx}", op, [1, 4, 6, 5], [9, 11], [0, 0], values="wide", **A)
            # Layouts, with channel counts reaching the vector lanes and the tail of both dtypes.
            for C in (3, 8, 13, 17, 20):
                add(f"bilinear2d/{t}/channels-last-c{C}{sfx}", op, [2, C, 4, 5], [7, 3], [0, 0],
                    layout="channelsLast", values="wide", **A)  # fmt: skip
            add(f"bilinear2d/{t}/contiguous-c13-1x1{sfx}", op, [1, 13, 1, 1], [3, 4], [0, 0], **A)
            add(f"bilinear2d/{t}/transposed{sfx}", op, [2, 3, 6, 7], [13, 9], [0, 0], layout="transposed", **A)
            add(f"bilinear2d/{t}/transposed-c1{sfx}", op, [2, 1, 6, 7], [13, 9], [0, 0], layout="transposed", **A)
            add(f"bilinear2d/{t}/offset{sfx}", op, [2, 3, 5, 4], [8, 9], [0, 0], layout="offset", **A)
        # explicit scales (align_corners=False only: they are ignored with align_corners)
        for sh, sw in ((1.7, 0.6), (1 / 3, 2.5), (1.00001, 0.3), (2.5, 1.7)):
            add(f"bilinear2d/hp/in19x37-scale{sh:.6g}-{sw:.6g}{sfx}", op, [1, 2, 19, 37],
                [explicit(19, sh), explicit(37, sw)], [sh, sw], dtype=dt)  # fmt: skip
        add(f"bilinear2d/hp/in27x30-scale0.3{sfx}", op, [1, 2, 27, 30], [8, 9], [0.3, 0.3], dtype=dt)
        add(f"bilinear2d/hp/tie-2-41-scale20.5{sfx}", op, [1, 2, 2, 2], [41, 41], [20.5, 20.5], dtype=dt)
        add(f"bilinear2d/hp/up50{sfx}", op, [1, 1, 2, 3], [100, 150], [50.0, 50.0], dtype=dt)
        add(f"bilinear2d/hp/disagree-scale1.7-2.5{sfx}", op, [2, 2, 10, 6], [15, 9], [1.7, 2.5], dtype=dt)
        add(f"bilinear2d/hp/scale1.7-channels-last{sfx}", op, [1, 9, 5, 6], [8, 3], [1.7, 0.6], dtype=dt,
            layout="channelsLast")  # fmt: skip
    for lay in ("contiguous", "channelsLast", "transposed"):
        for ac in (False, True):
            t = "ac" if ac else "hp"
            add(f"bilinear2d/{t}/{lay}-float16", op, [2, 9, 5, 6], [7, 11], [0, 0], align_corners=ac,
                layout=lay, dtype="float16")  # fmt: skip
    add("bilinear2d/hp/special-float16", op, [2, 3, 3, 4], [7, 9], [0, 0], dtype="float16", values="special")
    add("bilinear2d/hp/c1-float16", op, [2, 1, 5, 6], [11, 13], [0, 0], dtype="float16")
    add("bilinear2d/hp/scale1.7-float16", op, [1, 2, 19, 37], [32, 22], [1.7, 0.6], dtype="float16")
    return cases


# --------------------------------------------------------------------------------------------------
# Inputs


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode("utf-8")) & 0xFFFFFFFF


def make_input(c: Case) -> tuple[np.ndarray, dict]:
    shape = c.input_size
    n = int(np.prod(shape))
    kind = c.values
    if kind == "auto":
        kind = "random" if n <= IN_LIMIT else "lcg"
    if kind == "lcg":
        seed = seed_of(c.name)
        return lcg_values(seed, n).reshape(shape), {"lcg": seed}
    rng = np.random.default_rng(seed_of(c.name))
    x = rng.standard_normal(n)
    if kind == "wide":
        # Magnitudes over 2^-12 .. 2^12: the sums' association shows in the last bits.
        x = x * 2.0 ** rng.integers(-12, 13, n)
    if kind == "special":
        x = x.reshape(shape[0] * shape[1], -1)
        plane = x.shape[1]
        x[0, 0] = np.inf
        x[0, plane - 1] = -np.inf
        x[0, 1::3] = -0.0
        x[min(1, x.shape[0] - 1), :] = -0.0  # a whole plane of -0: sums of -0 and +0 terms
        if x.shape[0] > 2:
            x[2, plane // 2] = np.nan
            x[2, 0] = 3e38  # overflow in float16 / products near the float32 limit
        x = x.reshape(-1)
    return round_to(x.astype(np.float32), c.dtype).reshape(shape), {}


# --------------------------------------------------------------------------------------------------
# torch


def present(x: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "contiguous":
        return x.contiguous()
    if layout == "channelsLast":
        return x.contiguous(memory_format=torch.channels_last)
    if layout == "transposed":
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "offset":
        n = x.numel()
        base = torch.full((n + 13,), float("nan"), dtype=x.dtype)
        view = base[7 : 7 + n].view(x.shape)
        view.copy_(x)
        return view
    raise ValueError(layout)


def aten_forward(c: Case, x: torch.Tensor) -> torch.Tensor:
    if c.op == "nearestExact1d":
        return torch.ops.aten._upsample_nearest_exact1d(x, c.output_size, none_if_zero(c.scales[0]))
    if c.op == "nearestExact2d":
        return torch.ops.aten._upsample_nearest_exact2d(
            x, c.output_size, none_if_zero(c.scales[0]), none_if_zero(c.scales[1])
        )
    return torch.ops.aten.upsample_bilinear2d(
        x, c.output_size, c.align_corners, none_if_zero(c.scales[0]), none_if_zero(c.scales[1])
    )


def native(c: Case) -> bool:
    return c.dtype == "float32" or (c.dtype == "bfloat16" and c.op == "bilinear2d")


def bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    if a.shape != b.shape:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    return np.array_equal(na, nb) and np.array_equal(a.view(np.uint32)[~na], b.view(np.uint32)[~nb])


# --------------------------------------------------------------------------------------------------
# Main


def file_name(case_name: str, suffix: str, dtype: str) -> str:
    ext = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[dtype]
    return f"data/{case_name.replace('/', '__')}.{suffix}.{ext}"


def generate(out_dir: str) -> dict:
    cases = build_cases()
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "duplicate case names"
    if os.path.isdir(os.path.join(out_dir, "data")):
        shutil.rmtree(os.path.join(out_dir, "data"))
    os.makedirs(os.path.join(out_dir, "data"), exist_ok=True)
    entries, refused = [], {}
    for c in cases:
        x_np, x_ref = make_input(c)
        xt = present(torch.from_numpy(np.ascontiguousarray(x_np)).to(TORCH_DTYPE[c.dtype]), c.layout)
        if native(c):
            y = aten_forward(c, xt).float().contiguous().numpy()
        else:
            try:
                aten_forward(c, xt)
                raise AssertionError(f"{c.name}: torch {torch.__version__} computes {c.dtype} after all")
            except RuntimeError as e:
                assert "not implemented for" in str(e), (c.name, str(e))
                refused[c.dtype + " " + c.op] = str(e).splitlines()[0]
            y32 = aten_forward(c, present(torch.from_numpy(np.ascontiguousarray(x_np)), c.layout))
            y = round_to(y32.contiguous().numpy(), c.dtype)
        assert list(y.shape) == c.input_size[:2] + c.output_size, c.name

        # The models of the module doc, bit for bit.
        if c.op == "bilinear2d":
            strides = list(xt.stride())
            cl = channels_last(c.layout, c.input_size, strides)
            model = bilinear_model(c, x_np.astype(np.float32), cl, c.dtype == "bfloat16")
            model = round_to(model, c.dtype)
        else:
            model = nearest_model(c, x_np)
        assert bitwise_equal(model, y), (c.name, "model differs from torch")

        e: dict = {
            "name": c.name,
            "op": c.op,
            "dtype": c.dtype,
            "inputSize": c.input_size,
            "outputSize": c.output_size,
            "scales": [float(s) if s != int(s) else int(s) for s in c.scales],
            "alignCorners": c.align_corners,
            "layout": c.layout,
            "native": native(c),
        }
        if x_ref:
            e["input"] = x_ref
        else:
            rel = file_name(c.name, "in", c.dtype)
            with open(os.path.join(out_dir, rel), "wb") as f:
                f.write(dtype_bytes(x_np, c.dtype))
            e["input"] = {"file": rel}
        data = dtype_bytes(y, c.dtype)
        if y.size <= OUT_LIMIT:
            rel = file_name(c.name, "out", c.dtype)
            with open(os.path.join(out_dir, rel), "wb") as f:
                f.write(data)
            e["expected"] = {"file": rel}
        else:
            e["expected"] = {"sha256": hashlib.sha256(data).hexdigest()}
        entries.append(e)
    meta = {
        "version": 1,
        "generator": "tools/gen_forward_fixtures.py",
        "torch": torch.__version__,
        "lcg": "x = seed >>> 0; per value: x = (x * 1664525 + 1013904223) mod 2^32; "
        + "v = ((x >>> 16) % 255 - 127) / 64",
    }
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        f.write(render_manifest(meta, entries))
    return {"cases": cases, "refused": refused}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("--out", default=FIXTURES, help="output directory (default tests/fixtures/forward)")
    args = ap.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(tmp)
            if tree_digest(tmp) != tree_digest(args.out):
                print("forward fixtures differ", file=sys.stderr)
                return 1
        print("forward fixtures are up to date")
        return 0
    stats = generate(args.out)
    counts: dict[tuple[str, str], int] = {}
    for c in stats["cases"]:
        counts[(c.op, c.dtype)] = counts.get((c.op, c.dtype), 0) + 1
    for k in sorted(counts):
        print(f"{k[0]:16s} {k[1]:9s} {counts[k]}")
    print("total cases:", len(stats["cases"]), "(every one bit-exact with the models)")
    for k, v in sorted(stats["refused"].items()):
        print(f"torch refuses {k}: {v}")
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(args.out) for f in fs)
    print("fixture bytes:", total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
