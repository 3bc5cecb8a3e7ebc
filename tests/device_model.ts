/**
 * An independent model of the Ascend A2/A3 backward kernels, written in plain loops from the
 * public operator source (hicann/ops-cv; paths relative to it) and sharing no code with `src/`:
 * tests check the CPU backend's `numerics: "device"` against it. Row-major float32 values in and
 * out; float16/bfloat16 results are the float32 result rounded once.
 *
 * @module
 */

/** One call of the model. */
export interface ModelCall {
  op: "nearestExact1d" | "nearestExact2d" | "bilinear2d";
  dtype: "float32" | "float16" | "bfloat16";
  inputSize: number[];
  outputSize: number[];
  scales: number[];
  alignCorners: boolean;
}

const f = Math.fround;

// FloatEqual(x, 1.0) of the kernels: |x - 1| < 1e-6 in float32 skips the pass.
function skips(scale: number): boolean {
  return Math.abs(f(scale - 1)) < f(1e-6);
}

/**
 * The device's owner of every output of one nearest-exact dimension (-1: no owner), from
 * image/upsample_nearest_exact2d_grad/op_kernel/upsample_nearest_exact2d_grad_kernel.h: input `i`
 * covers `[ceil(fl32(fl32(i*s) - 0.5)), ceil(fl32(fl32((i+1)*s) - 0.5)))`, each end capped at the
 * output size; `s` from op_host/upsample_nearest_exact2d_grad_tiling.h `compute_scale_value`.
 */
export function modelNearestOwners(inSize: number, outSize: number, scale: number): number[] {
  const s = scale > 0 ? f(scale) : f(f(outSize) / f(inSize));
  const owners = new Array<number>(outSize).fill(-1);
  if (skips(s)) {
    if (inSize !== outSize) throw new RangeError("skipped pass with different sizes");
    return owners.map((_, o) => o);
  }
  const end = (i: number): number => Math.min(Math.ceil(f(f(i * s) - 0.5)), outSize);
  for (let i = 0; i < inSize; i++) {
    for (let o = end(i); o < end(i + 1); o++) owners[o] = i;
  }
  return owners;
}

/** PyTorch's owner of every output (`min(floor(fl32((o + 0.5) * fl32(1 / s))), in - 1)`). */
export function modelPytorchOwners(inSize: number, outSize: number, scale: number): number[] {
  const s = scale > 0 ? f(1 / scale) : f(f(inSize) / f(outSize));
  return Array.from(
    { length: outSize },
    (_, o) => Math.min(Math.floor(f(f(o + 0.5) * s)), inSize - 1),
  );
}

/** Per output index: the inputs and float32 weights one pass of a bilinear kernel adds it to. */
type Taps = Array<Array<[index: number, weight: number]>>;

// The V2 kernel's taps (image/upsample_bilinear2d_grad/op_kernel/upsample_bilinear2d_grad_kernel.h
// calculateIntermediateTensorX/Y, setRadioValueW/H; scale from op_host/upsample_bilinear2d_grad_tiling.cpp).
function kernelTaps(inSize: number, outSize: number, align: boolean, scale: number): Taps | null {
  let s: number;
  if (align) s = outSize > 1 ? f(f(inSize - 1) / f(outSize - 1)) : 0;
  else s = scale > 0 ? f(1 / scale) : f(f(inSize) / f(outSize));
  if (skips(s)) {
    if (inSize !== outSize) throw new RangeError("skipped pass with different sizes");
    return null;
  }
  const taps: Taps = [];
  for (let o = 0; o < outSize; o++) {
    let c = align ? f(o * s) : f(f(f(o + 0.5) * s) - 0.5);
    if (!align && c < 0) c = 0;
    const lo = Math.floor(c);
    const lambda = f(c - lo);
    taps.push(lo >= inSize - 1 ? [[inSize - 1, 1]] : [[lo, f(1 - lambda)], [lo + 1, lambda]]);
  }
  return taps;
}

// ResizeBilinearV2Grad (the built-in operator V2 falls back to, and V1 runs), modelled as
// TensorFlow's ResizeBilinearGrad: scales from the sizes, top = max(floor(c), 0),
// bottom = min(ceil(c), in - 1), lerp = c - floor(c).
function resizeTaps(inSize: number, outSize: number, align: boolean): Taps | null {
  if (inSize === outSize) return null;
  const s = align && outSize > 1 ? f(f(inSize - 1) / f(outSize - 1)) : f(f(inSize) / f(outSize));
  const taps: Taps = [];
  for (let o = 0; o < outSize; o++) {
    const c = align ? f(o * s) : f(f(f(o + 0.5) * s) - 0.5);
    const fl = Math.floor(c);
    const lerp = f(c - fl);
    taps.push([[Math.max(fl, 0), f(1 - lerp)], [Math.min(Math.ceil(c), inSize - 1), lerp]]);
  }
  return taps;
}

// The routing of image/upsample_bilinear2d_grad/op_host/op_api/aclnn_upsample_bilinear_2d_backward_v2.cpp
// on DAV_2201: the V2 kernel when sizes are equal, or when the scales check (any scale given
// makes both dimensions need out == floor(in * scale)) and the minimum-scale check (1/scale or
// in/out >= 0.01) pass; ResizeBilinearV2Grad otherwise.
function bilinearUsesKernel(call: ModelCall): boolean {
  const [, , inH, inW] = call.inputSize;
  const [outH, outW] = call.outputSize;
  const [sH, sW] = call.scales;
  if (inH === outH && inW === outW) return true;
  let checkScale = true;
  if (Math.abs(sH) > 1e-9 || Math.abs(sW) > 1e-9) {
    checkScale = outH === Math.floor(inH * sH) && outW === Math.floor(inW * sW);
  }
  const ratio = (s: number, i: number, o: number): number => s > 0 ? 1 / s : i / o;
  const minScale = ratio(sH, inH, outH) >= 0.01 && ratio(sW, inW, outW) >= 0.01;
  return checkScale && minScale;
}

/** `values` rounded to `dtype` (to nearest even), as float32 values. */
export function roundTo(dtype: ModelCall["dtype"], values: Float32Array): Float32Array {
  if (dtype === "float32") return values;
  if (dtype === "float16") return values.map((v) => Math.f16round(v));
  const bits = new Uint32Array(values.buffer.slice(0));
  const out = new Float32Array(values.length);
  const outBits = new Uint32Array(out.buffer);
  for (let k = 0; k < bits.length; k++) {
    const b = bits[k];
    const isNaN = (b & 0x7fffffff) > 0x7f800000;
    outBits[k] = isNaN ? b : ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) << 16;
  }
  return out;
}

/**
 * The device's result for `grad` (row-major `[N, C, ...outputSize]`): a W pass then an H pass
 * through a float32 intermediate (a skipped pass passes its input through), rounded once.
 *
 * @throws {RangeError} where the device rejects the call (1d with N or C = 0) or its result is
 * undefined (a skipped pass with different sizes)
 */
export function modelDevice(call: ModelCall, grad: Float32Array): Float32Array {
  const twoD = call.op !== "nearestExact1d";
  const [n, c] = call.inputSize;
  if (!twoD && n * c === 0) throw new RangeError("161002: 1d with N or C = 0");
  const inH = twoD ? call.inputSize[2] : 1, inW = call.inputSize[twoD ? 3 : 2];
  const outH = twoD ? call.outputSize[0] : 1, outW = call.outputSize[twoD ? 1 : 0];
  let tapsH: Taps | null, tapsW: Taps | null;
  if (call.op === "bilinear2d") {
    const [sH, sW] = call.scales;
    if (bilinearUsesKernel(call)) {
      tapsH = kernelTaps(inH, outH, call.alignCorners, sH);
      tapsW = kernelTaps(inW, outW, call.alignCorners, sW);
    } else {
      tapsH = resizeTaps(inH, outH, call.alignCorners);
      tapsW = resizeTaps(inW, outW, call.alignCorners);
    }
  } else {
    const ownerTaps = (i: number, o: number, s: number): Taps | null => {
      const owners = modelNearestOwners(i, o, s);
      return owners.every((v, k) => v === k) && i === o ? null : owners.map((v) => [[v, 1]]);
    };
    tapsH = twoD ? ownerTaps(inH, outH, call.scales[0]) : null; // 1d: H = 1, scale_h = 1
    tapsW = ownerTaps(inW, outW, call.scales[twoD ? 1 : 0]);
  }
  const planes = n * c;
  const result = new Float32Array(planes * inH * inW);
  for (let p = 0; p < planes; p++) {
    // W pass: [outH, outW] -> [outH, inW].
    const mid = new Float32Array(outH * inW);
    for (let oh = 0; oh < outH; oh++) {
      for (let ow = 0; ow < outW; ow++) {
        const g = grad[(p * outH + oh) * outW + ow];
        if (tapsW === null) mid[oh * inW + ow] = g;
        else {
          for (const [i, w] of tapsW[ow]) {
            if (i >= 0) mid[oh * inW + i] = f(mid[oh * inW + i] + f(w * g));
          }
        }
      }
    }
    // H pass: [outH, inW] -> [inH, inW].
    for (let oh = 0; oh < outH; oh++) {
      for (let iw = 0; iw < inW; iw++) {
        const t = mid[oh * inW + iw];
        const base = p * inH * inW;
        if (tapsH === null) result[base + oh * inW + iw] = t;
        else {
          for (const [i, w] of tapsH[oh]) {
            if (i >= 0) result[base + i * inW + iw] = f(result[base + i * inW + iw] + f(w * t));
          }
        }
      }
    }
  }
  return roundTo(call.dtype, result);
}
