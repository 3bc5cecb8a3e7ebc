/*
 * The forward ops of the emulation (src/opapi/fwd_*.c): aclnnUpsampleNearestExact1d / 2d and
 * aclnnUpsampleBilinear2d per family: routing (kernel names), the op_apis' checks and statuses,
 * refusals, hand-computed values (ties, align_corners, the index and scale rules that differ between
 * families), 16-bit dtypes, strided views, empty tensors, the rules of each bilinear kernel's float32
 * (or float16) sums on generated data, the FMA switches. Usage: fwd <expected NpuArch> (run once per
 * ACLEMU_SOC by the Makefile: A2 unset, A3, 910A, 310P3, 950, 310B).
 */
#include "aclemu.h"
#include "cann_subset.h"
#include "check.h"
#include "fp16.h"
#include "phase2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static aclrtStream stream;
static int32_t arch;
static int a2, is950, is910, is310p;

#define MIB (1024u * 1024u)

/* ---- 16-bit values (RNE; the test values stay in the normal range) ---- */

static float r16(float v) { return from_half(to_half(v)); }
static float rb16(float v) { return from_bf16(to_bf16(v)); }

static size_t esz(int32_t dt)
{
    return dt == ACL_DOUBLE ? 8 : dt == ACL_FLOAT || dt == ACL_INT32 ? 4 : dt == ACL_UINT8 ? 1 : 2;
}

static void enc(int32_t dt, float v, unsigned char *p)
{
    if (dt == ACL_FLOAT) {
        memcpy(p, &v, 4);
    } else if (dt == ACL_FLOAT16 || dt == ACL_BF16) {
        uint16_t h = dt == ACL_FLOAT16 ? to_half(v) : to_bf16(v);
        memcpy(p, &h, 2);
    } else if (dt == ACL_UINT8) {
        *p = (unsigned char)v;
    } else if (dt == ACL_DOUBLE) {
        double d = v;
        memcpy(p, &d, 8);
    } else {
        int32_t k = (int32_t)v;
        memcpy(p, &k, 4);
    }
}

static float dec(int32_t dt, const unsigned char *p)
{
    if (dt == ACL_FLOAT) {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    if (dt == ACL_FLOAT16 || dt == ACL_BF16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return dt == ACL_FLOAT16 ? from_half(h) : from_bf16(h);
    }
    if (dt == ACL_UINT8) {
        return (float)*p;
    }
    return 0.0f;
}

/* ---- device tensors: a view (dims, strides, offset) into a storage of cap elements ---- */

typedef struct {
    void *dev;
    int64_t cap;
    int32_t dt;
    int nd;
    int64_t dims[8], st[8], off;
    aclTensor *t;
} ten;

static int64_t numel(int nd, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) {
        n *= d[i];
    }
    return n;
}

/* Element index of logical (row-major) element f. */
static int64_t at(const ten *t, int64_t f)
{
    int64_t idx = t->off;
    for (int k = t->nd - 1; k >= 0; k--) {
        int64_t d = t->dims[k] > 0 ? t->dims[k] : 1;
        idx += (f % d) * t->st[k];
        f /= d;
    }
    return idx;
}

/* A tensor: storage filled with `fill`, then vals (row-major over dims, may be NULL) through the view.
 * st NULL: contiguous (cap from the dims when 0). */
static ten mk(int nd, const int64_t *dims, const int64_t *st, int64_t off, int64_t cap, aclFormat fmt, int32_t dt,
              const float *vals, float fill)
{
    ten t = {.dt = dt, .nd = nd, .off = off};
    int64_t n = numel(nd, dims), acc = 1;
    for (int i = nd - 1; i >= 0; i--) {
        t.dims[i] = dims[i];
        t.st[i] = st ? st[i] : acc;
        acc *= dims[i];
    }
    t.cap = cap > 0 ? cap : n + off;
    size_t bytes = (size_t)(t.cap > 0 ? t.cap : 1) * esz(dt);
    EXPECT_STATUS(aclrtMalloc(&t.dev, bytes < 32 ? 32 : bytes, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    unsigned char *buf = malloc(bytes);
    for (int64_t i = 0; i < t.cap; i++) {
        enc(dt, fill, buf + (size_t)i * esz(dt));
    }
    for (int64_t f = 0; vals != NULL && f < n; f++) {
        enc(dt, vals[f], buf + (size_t)at(&t, f) * esz(dt));
    }
    EXPECT_STATUS(aclrtMemcpy(t.dev, bytes, buf, bytes, ACL_MEMCPY_HOST_TO_DEVICE), 0);
    free(buf);
    int64_t sd = t.cap;
    t.t = aclCreateTensor(dims, (uint64_t)nd, (aclDataType)dt, t.st, off, fmt, &sd, 1, t.dev);
    return t;
}

static ten mkc(int nd, const int64_t *dims, aclFormat fmt, int32_t dt, const float *vals, float fill)
{
    return mk(nd, dims, NULL, 0, 0, fmt, dt, vals, fill);
}

/* The whole storage as floats (s, cap elements) and raw bytes (raw, may be NULL). */
static void rdall(const ten *t, float *s, unsigned char *raw)
{
    size_t bytes = (size_t)t->cap * esz(t->dt);
    unsigned char *buf = malloc(bytes > 0 ? bytes : 1);
    EXPECT_STATUS(aclrtMemcpy(buf, bytes, t->dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), 0);
    for (int64_t i = 0; s != NULL && i < t->cap; i++) {
        s[i] = dec(t->dt, buf + (size_t)i * esz(t->dt));
    }
    if (raw != NULL) {
        memcpy(raw, buf, bytes);
    }
    free(buf);
}

/* The view's values, row-major. */
static void rd(const ten *t, float *v)
{
    float *s = malloc((size_t)(t->cap > 0 ? t->cap : 1) * sizeof *s);
    rdall(t, s, NULL);
    for (int64_t f = 0; f < numel(t->nd, t->dims); f++) {
        v[f] = s[at(t, f)];
    }
    free(s);
}

static void rm(ten *t)
{
    EXPECT_STATUS(aclDestroyTensor(t->t), 0);
    EXPECT_STATUS(aclrtFree(t->dev), 0);
}

/* ---- one call ---- */

enum { NE1 = 1, NE2, BIL };

typedef struct {
    int op;
    const ten *x, *y;
    int nos; /* 0: outputSize NULL */
    int64_t os[2];
    double s0, s1;
    int align;
    uint64_t ws;
    int p1only; /* phase 1 only (the executor is destroyed) */
    int nullws; /* workspaceSize NULL */
} fc;

static int run(fc *c)
{
    aclIntArray *osa = c->nos > 0 ? aclCreateIntArray(c->os, (uint64_t)c->nos) : NULL;
    aclOpExecutor *ex = NULL;
    uint64_t *wsp = c->nullws ? NULL : &c->ws;
    aclTensor *x = c->x ? c->x->t : NULL, *y = c->y ? c->y->t : NULL;
    int rc;
    phase2_fn p2;
    if (c->op == NE1) {
        rc = aclnnUpsampleNearestExact1dGetWorkspaceSize(x, osa, c->s0, y, wsp, &ex);
        p2 = aclnnUpsampleNearestExact1d;
    } else if (c->op == NE2) {
        rc = aclnnUpsampleNearestExact2dGetWorkspaceSize(x, osa, c->s0, c->s1, y, wsp, &ex);
        p2 = aclnnUpsampleNearestExact2d;
    } else {
        rc = aclnnUpsampleBilinear2dGetWorkspaceSize(x, osa, c->align != 0, c->s0, c->s1, y, wsp, &ex);
        p2 = aclnnUpsampleBilinear2d;
    }
    if (rc == 0 && c->p1only) {
        EXPECT_STATUS(aclDestroyAclOpExecutor(ex), 0);
    } else if (rc == 0) {
        rc = run_phase2_on(stream, p2, c->ws, ex);
    }
    if (osa != NULL) {
        aclDestroyIntArray(osa);
    }
    return rc;
}

static int kernel_is(const char *name)
{
    int ok = strcmp(aclemuLastKernel(), name) == 0;
    if (!ok) {
        fprintf(stderr, "  last kernel \"%s\", expected \"%s\"\n", aclemuLastKernel(), name);
    }
    return ok;
}

static int msg_has(const char *s)
{
    const char *m = aclGetRecentErrMsg();
    int ok = m != NULL && strstr(m, s) != NULL;
    if (!ok) {
        fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", m ? m : "(null)", s);
    }
    return ok;
}

/* Pseudo-random values in [-8, 8) with 10 significant bits (exact in float16 and bfloat16's range tests
 * use their own). */
static void gen(float *v, int64_t n, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 7u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((int32_t)(s >> 20) - 2048) / 256.0f;
    }
}

/* ---- reference rules written from the sources (see src/opapi/fwd_*.c) ---- */

static int64_t idx_exact(int64_t o, float s, int64_t in)
{
    float v = floorf(((float)o + 0.5f) * s);
    return v >= (float)(in - 1) ? in - 1 : (int64_t)v;
}

/* the TBE kernel's coordinate (vadds, vmuls, vadds, vmax) */
static float tbe_src(int64_t o, float s, int half)
{
    if (!half) {
        return (float)o * s;
    }
    float v = ((float)o + 0.5f) * s - 0.5f;
    return v > 0.0f ? v : 0.0f;
}

/* One TBE output (mode 0 lerp L1 / NC, 1 vbi float32, 2 vbi float16) from plane x (ih x iw). */
static float tbe_ref(const float *x, int64_t ih, int64_t iw, int64_t oh, int64_t ow, int64_t h, int64_t w, int mode,
                     int half, int fma)
{
    float sh = half || oh < 2 ? (float)ih / (float)oh : (float)(ih - 1) / (float)(oh - 1);
    float sw = half || ow < 2 ? (float)iw / (float)ow : (float)(iw - 1) / (float)(ow - 1);
    float ch = tbe_src(h, sh, half), cw = tbe_src(w, sw, half);
    int64_t top = (int64_t)floorf(ch), bot = top + 1 < ih - 1 ? top + 1 : ih - 1;
    int64_t f0 = (int64_t)floorf(cw);
    if (mode == 0) {
        int64_t left = f0, right = left + 1 < iw - 1 ? left + 1 : iw - 1;
        float yl = ch - (float)top, xl = fminf(cw, (float)(iw - 1)) - (float)left;
        float l = (x[bot * iw + left] - x[top * iw + left]) * yl + x[top * iw + left];
        float r = (x[bot * iw + right] - x[top * iw + right]) * yl + x[top * iw + right];
        return (r - l) * xl + l;
    }
    int64_t left = f0 < iw - 1 ? f0 : iw - 1, right = f0 + 1 < iw - 1 ? f0 + 1 : iw - 1;
    float yl = fminf(ch, (float)(ih - 1)) - (float)top, xl = fminf(cw, (float)(iw - 1)) - (float)left;
    float w4[4] = {(1.0f - xl) * (1.0f - yl), xl * (1.0f - yl), (1.0f - xl) * yl, xl * yl};
    float v4[4] = {x[top * iw + left], x[top * iw + right], x[bot * iw + left], x[bot * iw + right]};
    if (mode == 2) {
        float acc = r16(v4[0] * r16(w4[0]));
        for (int k = 1; k < 4; k++) {
            acc = r16(acc + r16(v4[k] * r16(w4[k]))); /* unfused float16 steps */
        }
        return acc;
    }
    float acc = v4[0] * w4[0];
    for (int k = 1; k < 4; k++) {
        acc = fma ? fmaf(v4[k], w4[k], acc) : acc + v4[k] * w4[k];
    }
    return acc;
}

/* ===================== nearest-exact ===================== */

static const char *nearest_name_small_cw(void)
{
    return is950 ? "ResizeNearestNeighborV2.SIMT_COMMON"
           : is310p ? "UpsampleNearestExact2d.310P"
                    : "UpsampleNearestExact2d.SMALL_CW";
}

/* (1, 1, 2, 3) -> (4, 5), no scales: H s = 0.5 (0, 0, 1, 1), W s = fl32(3/5) (0, 0, 1, 2, 2). */
static void test_nearest_hand(void)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, r[20];
    const float want[20] = {1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 4, 4, 5, 6, 6};
    int64_t xd[4] = {1, 1, 2, 3}, yd[4] = {1, 1, 4, 5};
    const int32_t dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    for (int k = 0; k < 3; k++) {
        if (is310p && dts[k] == ACL_BF16) {
            continue;
        }
        ten tx = mkc(4, xd, ACL_FORMAT_NCHW, dts[k], x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, dts[k], NULL, 99);
        fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {4, 5}};
        EXPECT_STATUS(run(&c), 0);
        CHECK(kernel_is(nearest_name_small_cw()));
        CHECK(c.ws == (is950 ? 16u * MIB : 32u * MIB));
        rd(&ty, r);
        CHECK(memcmp(r, want, sizeof want) == 0);
        rm(&tx), rm(&ty);
    }
    /* 1d in 2 -> out 41 (the tie of the backward's README): fl32(20.5 * fl32(2 / 41)) = 0.99999994, so the
     * forward reads input 0 for output 20 on every family (PyTorch too); the backward sends output 20's
     * gradient to input 1 (nearest_exact.c): forward and backward disagree at that position. */
    float x2[2] = {10, 20}, r2[41];
    int64_t ad[3] = {1, 1, 2}, bd[3] = {1, 1, 41};
    ten tx = mkc(3, ad, ACL_FORMAT_NCL, ACL_FLOAT, x2, 0), ty = mkc(3, bd, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 99);
    fc c = {.op = NE1, .x = &tx, .y = &ty, .nos = 1, .os = {41}};
    EXPECT_STATUS(run(&c), 0);
    rd(&ty, r2);
    for (int o = 0; o < 41; o++) {
        CHECK(r2[o] == (o <= 20 ? 10.0f : 20.0f));
    }
    CHECK(kernel_is(is950 ? "ResizeNearestNeighborV2.SIMT_COMMON"
                    : is310p ? "UpsampleNearestExact2d.310P"
                             : "UpsampleNearestExact2d.SMALL_C"));
    rm(&tx), rm(&ty);
}

/* The scale of a given scale: in 6, scale 1.7, out 10. A2/A3 and 310P: s = fl32(1.0 / 1.7) = 0.5882353,
 * output 8 -> floor(8.5 s) = 5 (PyTorch too); 950: s = 1.0f / fl32(1.7) = 0.58823526 -> 4. */
static void test_nearest_scale_rounding(void)
{
    float x[6] = {0, 1, 2, 3, 4, 5}, r[10];
    int64_t ad[3] = {1, 1, 6}, bd[3] = {1, 1, 10};
    ten tx = mkc(3, ad, ACL_FORMAT_NCL, ACL_FLOAT, x, 0), ty = mkc(3, bd, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 99);
    fc c = {.op = NE1, .x = &tx, .y = &ty, .nos = 1, .os = {10}, .s0 = 1.7};
    EXPECT_STATUS(run(&c), 0);
    rd(&ty, r);
    const float a2w[10] = {0, 0, 1, 2, 2, 3, 3, 4, 5, 5}, w950[10] = {0, 0, 1, 2, 2, 3, 3, 4, 4, 5};
    CHECK(memcmp(r, is950 ? w950 : a2w, sizeof r) == 0);
    rm(&tx), rm(&ty);
    /* equal sizes with a scale: 2d ignores the scale on A2/A3 (ComputeScaleValue: dim 4 and in == out ->
     * 1) and on 950 (SIMT_INPUT_EQ_OUTPUT copies); 1d on A2/A3 uses it (no dim-3 shortcut: s = 0.5,
     * outputs 0, 0, 1, 1), 950 copies */
    float x4[4] = {1, 2, 3, 4}, r4[4];
    int64_t d2[4] = {1, 1, 1, 4};
    ten a = mkc(4, d2, ACL_FORMAT_NCHW, ACL_FLOAT, x4, 0), b = mkc(4, d2, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 99);
    c = (fc){.op = NE2, .x = &a, .y = &b, .nos = 2, .os = {1, 4}, .s0 = 2.0, .s1 = 2.0};
    EXPECT_STATUS(run(&c), 0);
    rd(&b, r4);
    CHECK(memcmp(r4, x4, sizeof r4) == 0);
    if (is950) {
        CHECK(kernel_is("ResizeNearestNeighborV2.SIMT_INPUT_EQ_OUTPUT"));
    }
    rm(&a), rm(&b);
    int64_t d1[3] = {1, 1, 4};
    a = mkc(3, d1, ACL_FORMAT_NCL, ACL_FLOAT, x4, 0), b = mkc(3, d1, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 99);
    c = (fc){.op = NE1, .x = &a, .y = &b, .nos = 1, .os = {4}, .s0 = 2.0};
    EXPECT_STATUS(run(&c), 0);
    rd(&b, r4);
    const float half[4] = {1, 1, 2, 2};
    CHECK(memcmp(r4, is950 ? x4 : half, sizeof r4) == 0);
    rm(&a), rm(&b);
}

/* 950's NHWC data-copy templates (C * sizeof >= 128 bytes) use floor(o * s): W 3 -> 2 reads columns 0, 1
 * where the exact rule (A2, and 950 with a small C) reads 0, 2. */
static void test_nearest_nhwc(void)
{
    for (int wide = 0; wide <= 1; wide++) {
        const int64_t C = wide ? 32 : 4;
        int64_t xd[4] = {1, 1, 3, C}, yd[4] = {1, 1, 2, C};
        float x[3 * 32], r[2 * 32];
        for (int64_t w = 0; w < 3; w++) {
            for (int64_t c = 0; c < C; c++) {
                x[w * C + c] = (float)(100 * w + c);
            }
        }
        ten tx = mkc(4, xd, ACL_FORMAT_NHWC, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NHWC, ACL_FLOAT, NULL, 99);
        fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {1, 2}};
        EXPECT_STATUS(run(&c), 0);
        rd(&ty, r);
        int64_t second = is950 && wide ? 1 : 2;
        for (int64_t k = 0; k < C; k++) {
            CHECK(r[k] == (float)k && r[C + k] == (float)(100 * second + k));
        }
        if (is950) {
            CHECK(kernel_is(wide ? "ResizeNearestNeighborV2.DATA_COPY_JH_C" : "ResizeNearestNeighborV2.SIMT_COMMON"));
        } else if (a2) {
            /* NHWC key: C * outW < 8192, C * inW < 8192 but inH = 1: not SMALL_CW; C < 8192, inW < 8192 and
             * realScaleW = 1.5 < 2: SMALL_C */
            CHECK(kernel_is("UpsampleNearestExact2d.SMALL_C"));
        }
        rm(&tx), rm(&ty);
    }
}

/* Element copies: float16 / bfloat16 / uint8 bit for bit, -0 kept (A2, 950), -0 -> +0 on 310P (0 + x). */
static void test_nearest_bits(void)
{
    int64_t xd[4] = {1, 1, 1, 2}, yd[4] = {1, 1, 1, 4};
    float x[2] = {-0.0f, 1.5f}, r[4];
    unsigned char raw[16];
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 99);
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {1, 4}};
    EXPECT_STATUS(run(&c), 0);
    rdall(&ty, r, raw);
    uint32_t b0;
    memcpy(&b0, raw, 4);
    CHECK(b0 == (is310p ? 0x00000000u : 0x80000000u));
    CHECK(r[2] == 1.5f && r[3] == 1.5f);
    rm(&tx), rm(&ty);
    /* bfloat16: bit copies, except on 310P, whose binary lacks it (phase 2: 561000) */
    const float bx[2] = {1.0078125f, -3.5f};
    tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_BF16, bx, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_BF16, NULL, 3);
    c = (fc){.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {1, 4}};
    int brc = run(&c);
    if (is310p) {
        CHECK(brc == ACLNN_ERR_INNER && msg_has("got BF16"));
    } else {
        CHECK(brc == 0);
        rdall(&ty, r, NULL);
        CHECK(r[0] == bx[0] && r[1] == bx[0] && r[2] == bx[1] && r[3] == bx[1]);
    }
    rm(&tx), rm(&ty);
    /* uint8: A2/A3 only (the RegBase list has no UINT8; 310P's binary takes FLOAT16 / FLOAT) */
    float u[2] = {7, 255};
    tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_UINT8, u, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_UINT8, NULL, 3);
    c = (fc){.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {1, 4}};
    int rc = run(&c);
    if (is950) {
        CHECK(rc == ACLNN_ERR_PARAM_INVALID && msg_has("UINT8"));
    } else if (is310p) {
        CHECK(rc == ACLNN_ERR_INNER && msg_has("FLOAT16 and FLOAT only"));
    } else {
        CHECK(rc == 0);
        rdall(&ty, r, raw);
        CHECK(raw[0] == 7 && raw[1] == 7 && raw[2] == 255 && raw[3] == 255);
    }
    rm(&tx), rm(&ty);
}

/* Strided views: self read through its strides (a transposed view), out written through its strides;
 * the gaps of out keep their contents. */
static void test_nearest_views(void)
{
    /* self: logical (1, 1, 2, 2) = [[1, 2], [3, 4]] stored transposed (strides w 2, h 1) */
    int64_t xd[4] = {1, 1, 2, 2}, xs[4] = {4, 4, 1, 2};
    float x[4] = {1, 2, 3, 4};
    ten tx = mk(4, xd, xs, 0, 4, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0);
    /* out: (1, 1, 4, 4) with row stride 6 and offset 3 in a storage of 27 */
    int64_t yd[4] = {1, 1, 4, 4}, ys[4] = {27, 27, 6, 1};
    ten ty = mk(4, yd, ys, 3, 27, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, -7);
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {4, 4}};
    EXPECT_STATUS(run(&c), 0);
    float all[27];
    rdall(&ty, all, NULL);
    const float want[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    for (int64_t f = 0; f < 27; f++) {
        int64_t rel = f - 3, row = rel / 6, col = rel % 6;
        int inside = rel >= 0 && row < 4 && col < 4;
        CHECK(all[f] == (inside ? want[row * 4 + col] : -7.0f));
    }
    rm(&tx), rm(&ty);
}

/* The result (N, C, outputSize) reaches out through ViewCopy: A2 / 310P never compare out's H, W with
 * outputSize (a contiguous out of another shape gets the result row-major, fewer elements fail phase 2);
 * 950's ResizeNearestNeighborV2 writes into out itself and its tiling requires size == out's H, W
 * (else 561103 at phase 1). */
static void test_nearest_out_shapes(void)
{
    float x[2] = {1, 2}, r[8];
    int64_t xd[4] = {1, 1, 1, 2}, flat[4] = {1, 1, 2, 2}, small[4] = {1, 1, 1, 3};
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0);
    ten ty = mkc(4, flat, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {1, 4}};
    int rc = run(&c);
    if (is950) {
        CHECK(rc == ACLNN_ERR_INNER_NULLPTR && msg_has("size"));
    } else {
        CHECK(rc == 0);
        rd(&ty, r);
        CHECK(r[0] == 1 && r[1] == 1 && r[2] == 2 && r[3] == 2);
    }
    rm(&ty);
    ty = mkc(4, small, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    rc = run(&c);
    CHECK(rc == (is950 ? ACLNN_ERR_INNER_NULLPTR : ACL_ERROR_RT_AICORE_EXCEPTION));
    rm(&ty), rm(&tx);
    /* 1d, a self tagged neither NCL nor ND: A2 / 310P read it as NLC (N, L, C); 950 refuses (561103) */
    int64_t nlc[3] = {1, 3, 2}, onlc[3] = {1, 6, 2};
    float v[6] = {1, 10, 2, 20, 3, 30}, w[12];
    tx = mkc(3, nlc, ACL_FORMAT_NCHW, ACL_FLOAT, v, 0), ty = mkc(3, onlc, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    c = (fc){.op = NE1, .x = &tx, .y = &ty, .nos = 1, .os = {6}};
    rc = run(&c);
    if (is950) {
        CHECK(rc == ACLNN_ERR_INNER_NULLPTR && msg_has("NCL and ND"));
    } else {
        CHECK(rc == 0);
        rd(&ty, w);
        const float want[12] = {1, 10, 1, 10, 2, 20, 2, 20, 3, 30, 3, 30};
        CHECK(memcmp(w, want, sizeof want) == 0);
    }
    rm(&tx), rm(&ty);
}

/* 950: N * C >= 49 of 72 AIV cores, NCHW, 2x upsample, no scales -> GATHER_ALL_HW, the exact rule. */
static void test_nearest_gather(void)
{
    const int64_t C = 64;
    int64_t xd[4] = {1, C, 2, 3}, yd[4] = {1, C, 4, 5};
    float *x = malloc(C * 6 * sizeof *x), *r = malloc(C * 20 * sizeof *r);
    gen(x, C * 6, 3);
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {4, 5}};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("ResizeNearestNeighborV2.GATHER_ALL_HW"));
    rd(&ty, r);
    int bad = 0;
    for (int64_t k = 0; k < C; k++) {
        for (int64_t h = 0; h < 4; h++) {
            for (int64_t w = 0; w < 5; w++) {
                bad += r[(k * 4 + h) * 5 + w] != x[(k * 2 + idx_exact(h, 0.5f, 2)) * 3 + idx_exact(w, 3.0f / 5.0f, 3)];
            }
        }
    }
    CHECK(bad == 0);
    rm(&tx), rm(&ty);
    free(x), free(r);
}

/* 950's special case UpsampleNearestExact3dNcdhw (N * C == 17, H, W in [740, 750], out/in in [7.5, 8]
 * and [6.5, 7]): observed at phase 1 with an out whose H, W differ from outputSize (zero-stride views
 * keep the buffers small): the 3d route takes the result's own shape (success), ResizeNearestNeighborV2
 * (N * C = 16) refuses it (561103). */
static void test_nearest_3d_case(void)
{
    int64_t zs[4] = {0, 0, 0, 0};
    for (int nc = 16; nc <= 17; nc++) {
        int64_t xd[4] = {1, nc, 740, 740}, yd[4] = {1, nc, 1, 1};
        ten tx = mk(4, xd, zs, 0, 1, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 1), ty = mk(4, yd, zs, 0, 1, ACL_FORMAT_NCHW,
                                                                                   ACL_FLOAT, NULL, 0);
        fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {5550, 4810}, .p1only = 1};
        int rc = run(&c);
        CHECK(rc == (nc == 17 ? 0 : ACLNN_ERR_INNER_NULLPTR));
        if (nc == 17) {
            CHECK(c.ws == 16u * MIB);
        }
        rm(&tx), rm(&ty);
    }
}

static void test_nearest_checks(void)
{
    float x[4] = {1, 2, 3, 4};
    int64_t xd[4] = {1, 1, 2, 2}, yd[4] = {1, 1, 4, 4};
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 5);
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {4, 4}, .p1only = 1};
    /* OP_CHECK_COMM_INPUT first, then CheckNotNull(self, outputSize, out): 161001 */
    c.nullws = 1;
    CHECK(run(&c) == ACLNN_ERR_PARAM_NULLPTR);
    c.nullws = 0;
    c.x = NULL;
    CHECK(run(&c) == ACLNN_ERR_PARAM_NULLPTR);
    c.x = &tx;
    c.nos = 0;
    CHECK(run(&c) == ACLNN_ERR_PARAM_NULLPTR);
    c.nos = 2;
    /* outputSize of 3 values, outputSize 0, a 3-D self: 161002 */
    c.nos = 1;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID);
    c.nos = 2;
    c.os[0] = 0;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("greater than 0"));
    c.os[0] = 4;
    /* negative scales are not checked by the forward op_api: taken as "not given" */
    c.s0 = -3.0;
    EXPECT_STATUS(run(&c), 0);
    c.s0 = 0;
    /* N / C of out, formats */
    int64_t yc[4] = {1, 2, 4, 4};
    ten tc = mkc(4, yc, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0);
    c.y = &tc;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("not equal"));
    rm(&tc);
    ten tf = mkc(4, yd, ACL_FORMAT_ND, ACL_FLOAT, NULL, 0);
    c.y = &tf;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("should be equal"));
    rm(&tf);
    c.y = &ty;
    /* dtypes: INT32 is not in any list; out's dtype must equal */
    ten ti = mkc(4, xd, ACL_FORMAT_NCHW, ACL_INT32, NULL, 0);
    c.x = &ti;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("INT32"));
    rm(&ti);
    ten th = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT16, x, 0);
    c.x = &th;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("must be the same"));
    rm(&th);
    c.x = &tx;
    /* empty self (N = 0): success before any check (even an INT32 out), nothing launched */
    int64_t ez[4] = {0, 1, 2, 2}, eo[4] = {0, 1, 4, 4};
    ten e1 = mkc(4, ez, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0), e2 = mkc(4, eo, ACL_FORMAT_NCHW, ACL_INT32, NULL, 0);
    aclemuResetFaults();
    fc ce = {.op = NE2, .x = &e1, .y = &e2, .nos = 2, .os = {4, 4}};
    EXPECT_STATUS(run(&ce), 0);
    CHECK(ce.ws == 0 && aclemuLaunchCount() == 0 && strcmp(aclemuLastKernel(), "") == 0);
    rm(&e1), rm(&e2);
    /* 1d: its checks come first and N = 0 is one of them (161002); out is never checked */
    int64_t z1[3] = {1, 0, 3}, o1[3] = {1, 0, 6};
    e1 = mkc(3, z1, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 0), e2 = mkc(3, o1, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 0);
    ce = (fc){.op = NE1, .x = &e1, .y = &e2, .nos = 1, .os = {6}};
    CHECK(run(&ce) == ACLNN_ERR_PARAM_INVALID && msg_has("greater than 0"));
    rm(&e1), rm(&e2);
    rm(&tx), rm(&ty);
}

/* Atlas training (1001): UpsampleNearest ships no ascend910 binary. The op_api's checks still answer;
 * phase 1 succeeds (the l0op ignores ADD_TO_LAUNCHER_LIST_AICORE's status), phase 2 answers 561000
 * (ACLNN_ERR_INNER: OpKernel::Run, "does not has any binary") and launches nothing. */
static void test_nearest_no_binary(void)
{
    float x[4] = {1, 2, 3, 4}, r[16];
    int64_t xd[4] = {1, 1, 2, 2}, yd[4] = {1, 1, 4, 4};
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 5);
    aclemuResetFaults();
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {4, 4}};
    CHECK(run(&c) == ACLNN_ERR_INNER && msg_has("binary"));
    CHECK(c.ws == 0 && aclemuLaunchCount() == 0 && strcmp(aclemuLastKernel(), "") == 0);
    rd(&ty, r);
    for (int i = 0; i < 16; i++) {
        CHECK(r[i] == 5.0f);
    }
    int64_t ad[3] = {1, 1, 2}, bd[3] = {1, 1, 4};
    ten a = mkc(3, ad, ACL_FORMAT_NCL, ACL_FLOAT, x, 0), b = mkc(3, bd, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 5);
    c = (fc){.op = NE1, .x = &a, .y = &b, .nos = 1, .os = {4}};
    CHECK(run(&c) == ACLNN_ERR_INNER);
    c.os[0] = 0; /* the op's own checks first */
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID);
    rm(&a), rm(&b), rm(&tx), rm(&ty);
    /* an empty 2d call still succeeds before anything else (no kernel needed) */
    int64_t ez[4] = {0, 1, 2, 2}, eo[4] = {0, 1, 4, 4};
    ten e1 = mkc(4, ez, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0), e2 = mkc(4, eo, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0);
    c = (fc){.op = NE2, .x = &e1, .y = &e2, .nos = 2, .os = {4, 4}};
    EXPECT_STATUS(run(&c), 0);
    rm(&e1), rm(&e2);
}

/* ===================== bilinear ===================== */

static void test_bilinear_checks(void)
{
    float x[4] = {1, 2, 3, 4};
    int64_t xd[4] = {1, 1, 2, 2}, yd[4] = {1, 1, 4, 4};
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 5);
    fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {4, 4}, .p1only = 1};
    EXPECT_STATUS(run(&c), 0);
    /* CheckNotNull(self, out) -> ACLNN_ERR_INNER_NULLPTR (561103) */
    c.x = NULL;
    CHECK(run(&c) == ACLNN_ERR_INNER_NULLPTR);
    c.x = &tx;
    /* outputSize NULL: CheckOutputSize, 161002; 1 value; not out's H, W */
    c.nos = 0;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("outputSize must not be null"));
    c.nos = 1;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID);
    c.nos = 2;
    c.os[1] = 5;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("Expected output size"));
    c.os[1] = 4;
    /* CheckScalesValid: negative 161002 */
    c.s1 = -1.0;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("negative"));
    c.s1 = 0;
    /* formats: ND is refused; DOUBLE only with NHWC; NHWC DOUBLE runs the AICPU kernel: not emulated */
    ten tn = mkc(4, xd, ACL_FORMAT_ND, ACL_FLOAT, x, 0), to = mkc(4, yd, ACL_FORMAT_ND, ACL_FLOAT, NULL, 0);
    c.x = &tn, c.y = &to;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("format"));
    rm(&tn), rm(&to);
    ten dn = mkc(4, xd, ACL_FORMAT_NCHW, ACL_DOUBLE, NULL, 0), dno = mkc(4, yd, ACL_FORMAT_NCHW, ACL_DOUBLE, NULL, 0);
    c.x = &dn, c.y = &dno;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("only support NHWC"));
    rm(&dn), rm(&dno);
    int64_t hx[4] = {1, 2, 2, 1}, hy[4] = {1, 4, 4, 1};
    dn = mkc(4, hx, ACL_FORMAT_NHWC, ACL_DOUBLE, NULL, 0), dno = mkc(4, hy, ACL_FORMAT_NHWC, ACL_DOUBLE, NULL, 0);
    c.x = &dn, c.y = &dno;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has("not emulated"));
    rm(&dn), rm(&dno);
    c.x = &tx, c.y = &ty;
    /* empty tensors: the checks come first (an INT32 empty self is refused), then success, no launch */
    int64_t ez[4] = {0, 1, 2, 2}, eo[4] = {0, 1, 4, 4};
    ten e1 = mkc(4, ez, ACL_FORMAT_NCHW, ACL_INT32, NULL, 0), e2 = mkc(4, eo, ACL_FORMAT_NCHW, ACL_INT32, NULL, 0);
    fc ce = {.op = BIL, .x = &e1, .y = &e2, .nos = 2, .os = {4, 4}};
    CHECK(run(&ce) == ACLNN_ERR_PARAM_INVALID);
    rm(&e1), rm(&e2);
    e1 = mkc(4, ez, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0), e2 = mkc(4, eo, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0);
    aclemuResetFaults();
    EXPECT_STATUS(run(&ce), 0);
    CHECK(ce.ws == 0 && aclemuLaunchCount() == 0);
    rm(&e1), rm(&e2);
    rm(&tx), rm(&ty);
}

/* A hand case every family computes exactly: [4, 8] (1 x 2) -> 1 x 4 = [4, 5, 7, 8]; with scales
 * (1.5, 2) A2/A3 take the Cube kernel (H skipped: equal sizes), the others their kernels. And
 * align_corners: [0, 4, 8] -> 5 = [0, 2, 4, 6, 8] (scales 1.5, 1.7 keep A2 on the Cube kernel). */
static void test_bilinear_hand(void)
{
    const int32_t dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    for (int k = 0; k < 3; k++) {
        float x[2] = {4, 8}, r[4];
        int64_t xd[4] = {1, 1, 1, 2}, yd[4] = {1, 1, 1, 4};
        ten tx = mkc(4, xd, ACL_FORMAT_NCHW, dts[k], x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, dts[k], NULL, 9);
        fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {1, 4}, .s0 = 1.5, .s1 = 2.0};
        EXPECT_STATUS(run(&c), 0);
        rd(&ty, r);
        CHECK(r[0] == 4 && r[1] == 5 && r[2] == 7 && r[3] == 8);
        const char *want = a2 ? "UpsampleBilinear2dNcdhw"
                           : is950 ? "ResizeBilinearV2With4d.SIMT_NCHW"
                           : is310p && dts[k] == ACL_FLOAT16 ? "ResizeBilinearV2_5HD.VBI_FP16"
                                                              : "ResizeBilinearV2_5HD.L1";
        CHECK(kernel_is(want));
        rm(&tx), rm(&ty);
        float xa[3] = {0, 4, 8}, ra[5];
        int64_t ad[4] = {1, 1, 1, 3}, bd[4] = {1, 1, 1, 5};
        tx = mkc(4, ad, ACL_FORMAT_NCHW, dts[k], xa, 0), ty = mkc(4, bd, ACL_FORMAT_NCHW, dts[k], NULL, 9);
        c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {1, 5}, .s0 = 1.5, .s1 = 1.7, .align = 1};
        EXPECT_STATUS(run(&c), 0);
        rd(&ty, ra);
        for (int i = 0; i < 5; i++) {
            CHECK(ra[i] == 2.0f * (float)i);
        }
        rm(&tx), rm(&ty);
    }
}

/* A2/A3's routing between the Cube kernel and the TBE fallback. */
static void test_bilinear_a2_routes(void)
{
    float x[4] = {1, 2, 3, 4}, r[12];
    int64_t xd[4] = {1, 1, 2, 2};
    struct {
        int64_t oh, ow;
        double s0, s1;
        int32_t dt;
        const char *kernel;
    } t[] = {
        {6, 6, 3.0, 3.0, ACL_FLOAT, "UpsampleBilinear2dNcdhw"},
        {6, 6, 0.0, 0.0, ACL_FLOAT, "ResizeBilinearV2_5HD.VBI_FP32"},        /* no scales */
        {4, 4, 2.0, 2.0, ACL_FLOAT, "ResizeBilinearV2_5HD.VBI_FP32"},        /* 2, 2: refused for non-BF16 */
        {4, 4, 2.0, 2.0, ACL_BF16, "UpsampleBilinear2dNcdhw"},
        {6, 6, 0.0, 3.0, ACL_FLOAT, "ResizeBilinearV2_5HD.VBI_FP32"},        /* a lone scale */
        {6, 6, 3.4, 3.0, ACL_FLOAT, "UpsampleBilinear2dNcdhw"},              /* (int64)(2 * 3.4) == 6 */
        {7, 6, 3.4, 3.0, ACL_FLOAT, "ResizeBilinearV2_5HD.VBI_FP32"},        /* (int64)(2 * 3.4) != 7 */
        {2, 2, 1.0, 1.0, ACL_FLOAT, "ViewCopy"},                             /* equal sizes, scales 1 */
        {2, 2, 1.3, 1.3, ACL_FLOAT, "ViewCopy"},                             /* (int64)(2 * 1.3) == 2 */
        {2, 2, 2.5, 2.5, ACL_FLOAT, "ResizeBilinearV2_5HD.NO_BILINEAR"},     /* (int64)(2 * 2.5) != 2 */
        {2, 2, 0.0, 0.0, ACL_FLOAT, "ResizeBilinearV2_5HD.NO_BILINEAR"},     /* equal sizes, no scales */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t od[4] = {1, 1, t[i].oh, t[i].ow};
        ten tx = mkc(4, xd, ACL_FORMAT_NCHW, t[i].dt, x, 0), ty = mkc(4, od, ACL_FORMAT_NCHW, t[i].dt, NULL, 9);
        fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {t[i].oh, t[i].ow}, .s0 = t[i].s0, .s1 = t[i].s1};
        EXPECT_STATUS(run(&c), 0);
        if (!kernel_is(t[i].kernel)) {
            fprintf(stderr, "  route case %zu\n", i);
            CHECK(0);
        }
        if (t[i].oh == 2) { /* equal sizes: the forward copies whatever the scales (the backward V2 does not) */
            rd(&ty, r);
            CHECK(memcmp(r, x, sizeof x) == 0);
        }
        if (strcmp(t[i].kernel, "UpsampleBilinear2dNcdhw") == 0) {
            /* intermediate 1 * 1 * 2 * outW * 4 bytes, 512-aligned, + 32 MiB */
            CHECK(c.ws == 512u + 32u * MIB);
        }
        rm(&tx), rm(&ty);
    }
    /* HWNC: W = 1 and H != 1: self (1, 1, 3, 1) -> (6, 2) with scales (2.1, 2.5) */
    float xh[3] = {0, 3, 9};
    int64_t hd[4] = {1, 1, 3, 1}, ho[4] = {1, 1, 6, 2};
    ten tx = mkc(4, hd, ACL_FORMAT_NCHW, ACL_FLOAT, xh, 0), ty = mkc(4, ho, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {6, 2}, .s0 = 2.1, .s1 = 2.5};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("UpsampleBilinear2dNcdhw.HWNC"));
    rd(&ty, r);
    /* H: s = fl32(1 / 2.1); each output row's two columns equal (W: weight 1 on the only column) */
    const float s = (float)(1.0 / 2.1);
    int bad = 0;
    for (int64_t h = 0; h < 6; h++) {
        float cc = aclemuFmaContraction() ? fmaf(s, (float)h + 0.5f, -0.5f) : s * ((float)h + 0.5f) - 0.5f;
        cc = fmaxf(cc, 0.0f);
        int64_t i0 = (int64_t)cc < 2 ? (int64_t)cc : 2, i1 = i0 + 1 < 2 ? i0 + 1 : 2;
        float want = xh[i0];
        if (i1 != i0) {
            float l1 = fminf(fmaxf(cc - (float)i0, 0.0f), 1.0f);
            want = 0.0f + (1.0f - l1) * xh[i0];
            want = want + l1 * xh[i1];
        }
        bad += r[h * 2] != want || r[h * 2 + 1] != want;
    }
    CHECK(bad == 0);
    rm(&tx), rm(&ty);
}

/* A2 Cube kernel: the centre's multiply-add follows ACLEMU_FMA: 2 -> 6 with scale 3, output 1:
 * fl32(1.5 * fl32(1/3)) - 0.5 = 0 (weight 1 on input 0) but fmaf = 1.49e-8 (input 1 gets 1.49e-8):
 * [1, 1e8] gives 1 unfused, 2.49 fused. And the passes' skip quirk: a scale within 1e-6 of 1 on a
 * dimension whose sizes differ (in 10, scalesH 0.9999999 -> out 9) skips the H pass, whose W pass then
 * writes N*C*10 rows into a 9-row result: phase 2 fails (507015). */
static void test_cube_quirks(void)
{
    float x[2] = {1, 1e8f}, r[6];
    int64_t xd[4] = {1, 1, 1, 2}, yd[4] = {1, 1, 1, 6};
    for (int on = 0; on <= 1; on++) {
        aclemuSetFmaContraction(on);
        ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
        fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {1, 6}, .s0 = 1.5, .s1 = 3.0};
        EXPECT_STATUS(run(&c), 0);
        CHECK(kernel_is("UpsampleBilinear2dNcdhw"));
        rd(&ty, r);
        const float s = (float)(1.0 / 3.0), l1 = fmaf(s, 1.5f, -0.5f);
        CHECK(r[0] == 1.0f);
        CHECK(r[1] == (on ? 0.0f + (1.0f - l1) * 1.0f + l1 * 1e8f : 1.0f));
        CHECK(on ? r[1] > 2.0f : 1);
        rm(&tx), rm(&ty);
    }
    aclemuSetFmaContraction(-1);
    float *g = malloc(20 * sizeof *g);
    gen(g, 20, 9);
    int64_t hd[4] = {1, 1, 10, 2}, hy[4] = {1, 1, 9, 5};
    ten tx = mkc(4, hd, ACL_FORMAT_NCHW, ACL_FLOAT, g, 0), ty = mkc(4, hy, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {9, 5}, .s0 = 0.9999999, .s1 = 2.5};
    CHECK(run(&c) == ACL_ERROR_RT_AICORE_EXCEPTION);
    rm(&tx), rm(&ty);
    /* NHWC through the Cube route: dims read as (N, C, H, W) = (N, H, W, C): self (1, 2, 2, 2) NHWC ->
     * (1, 4, 4, 2) with scales (2, 1.2): the kernel interpolates the W dim 2 -> 4 over planes of H and
     * writes 16 of out's 32 elements; the others keep out's contents (the Cast / Contiguous of out) */
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o[32];
    int64_t nd[4] = {1, 2, 2, 2}, no[4] = {1, 4, 4, 2};
    tx = mkc(4, nd, ACL_FORMAT_NHWC, ACL_FLOAT, v, 0), ty = mkc(4, no, ACL_FORMAT_NHWC, ACL_FLOAT, NULL, 9);
    c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {4, 4}, .s0 = 2.0, .s1 = 1.2};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("UpsampleBilinear2dNcdhw"));
    rd(&ty, o);
    /* rows r of plane b: taps of s = 0.5 over 2 rows: 0 -> row 0; 1 -> 0.75 r0 + 0.25 r1; 2 -> 0.25 r0 +
     * 0.75 r1; 3 -> row 1 */
    const float want[16] = {1, 2, 1.5f, 2.5f, 2.5f, 3.5f, 3, 4, 5, 6, 5.5f, 6.5f, 6.5f, 7.5f, 7, 8};
    CHECK(memcmp(o, want, sizeof want) == 0);
    for (int i = 16; i < 32; i++) {
        CHECK(o[i] == 9.0f);
    }
    rm(&tx), rm(&ty);
    free(g);
}

/* The TBE kernel's modes against their rules on generated data (per plane): the lerp modes (L1 / NC),
 * VBI_FP32 (A2/A3 fallback) and VBI_FP16 (310P float16), which give other bits for the same call; the
 * TBE FMA switch on vbi; bfloat16 through float32. */
static void test_tbe(void)
{
    const int64_t ih = 5, iw = 7, oh = 9, ow = 11, n = ih * iw, m = oh * ow;
    float *x = malloc((size_t)n * 2 * sizeof *x), *r = malloc((size_t)m * 2 * sizeof *r);
    gen(x, n * 2, 11);
    int64_t xd[4] = {1, 2, ih, iw}, yd[4] = {1, 2, oh, ow};
    const int32_t dts[3] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    int lerp_vs_sum = 0;
    for (int k = 0; k < 3; k++) {
        for (int align = 0; align <= 1; align++) {
            const int32_t dt = dts[k];
            ten tx = mkc(4, xd, ACL_FORMAT_NCHW, dt, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, dt, NULL, 9);
            fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {oh, ow}, .align = align};
            EXPECT_STATUS(run(&c), 0);
            const int mode = a2 ? 1 : is310p && dt == ACL_FLOAT16 ? 2 : 0;
            CHECK(kernel_is(mode == 1 ? "ResizeBilinearV2_5HD.VBI_FP32" : mode == 2 ? "ResizeBilinearV2_5HD.VBI_FP16"
                                                                                    : "ResizeBilinearV2_5HD.L1"));
            CHECK(c.ws == 0);
            rd(&ty, r);
            int bad = 0;
            for (int64_t p = 0; p < 2; p++) {
                float plane[35];
                for (int64_t i = 0; i < n; i++) {
                    plane[i] = dt == ACL_FLOAT16 ? r16(x[p * n + i]) : dt == ACL_BF16 ? rb16(x[p * n + i]) : x[p * n + i];
                }
                for (int64_t h = 0; h < oh; h++) {
                    for (int64_t w = 0; w < ow; w++) {
                        float v = tbe_ref(plane, ih, iw, oh, ow, h, w, mode, !align, aclemuTbeFma());
                        float want = dt == ACL_FLOAT16 ? r16(v) : dt == ACL_BF16 ? rb16(v) : v;
                        bad += r[p * m + h * ow + w] != want;
                        if (dt == ACL_FLOAT) {
                            lerp_vs_sum += tbe_ref(plane, ih, iw, oh, ow, h, w, 0, !align, 0) !=
                                           tbe_ref(plane, ih, iw, oh, ow, h, w, 1, !align, 0);
                        }
                    }
                }
            }
            if (bad) {
                fprintf(stderr, "  TBE mode %d dtype %d align %d: %d cells differ\n", mode, dt, align, bad);
            }
            CHECK(bad == 0);
            rm(&tx), rm(&ty);
        }
    }
    CHECK(lerp_vs_sum > 0); /* the families' forms really differ on this data */
    /* the TBE FMA switch changes vbi's bits (A2/A3 fallback, 310P float16), never L1's */
    float *r0 = malloc((size_t)m * 2 * sizeof *r0);
    const int32_t dt = is310p ? ACL_FLOAT16 : ACL_FLOAT;
    for (int on = 0; on <= 1; on++) {
        aclemuSetTbeFma(on);
        ten tx = mkc(4, xd, ACL_FORMAT_NCHW, dt, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, dt, NULL, 9);
        fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {oh, ow}};
        EXPECT_STATUS(run(&c), 0);
        rd(&ty, on ? r : r0);
        rm(&tx), rm(&ty);
    }
    aclemuSetTbeFma(-1);
    CHECK((memcmp(r, r0, (size_t)m * 2 * sizeof *r) != 0) == (a2 || is310p));
    free(r0);
    /* NC (100110): H, W < 64 and N * C1 >= 32: lerps, the same bits as L1's rule */
    int64_t nd[4] = {32, 1, 3, 4}, no[4] = {32, 1, 5, 6};
    float *xx = malloc(32 * 12 * sizeof *xx), *rr = malloc(32 * 30 * sizeof *rr);
    gen(xx, 32 * 12, 5);
    ten tx = mkc(4, nd, ACL_FORMAT_NCHW, ACL_FLOAT, xx, 0), ty = mkc(4, no, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {5, 6}};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2_5HD.NC"));
    rd(&ty, rr);
    int bad = 0;
    for (int64_t b = 0; b < 32; b++) {
        for (int64_t h = 0; h < 5; h++) {
            for (int64_t w = 0; w < 6; w++) {
                bad += rr[b * 30 + h * 6 + w] != tbe_ref(xx + b * 12, 3, 4, 5, 6, h, w, 0, 1, 0);
            }
        }
    }
    CHECK(bad == 0);
    rm(&tx), rm(&ty);
    /* NO_BILINEAR: an input of 1 x 1 is broadcast */
    int64_t od[4] = {1, 1, 1, 1}, ob[4] = {1, 1, 3, 2};
    float one = 2.5f, six[6];
    tx = mkc(4, od, ACL_FORMAT_NCHW, ACL_FLOAT, &one, 0), ty = mkc(4, ob, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {3, 2}};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2_5HD.NO_BILINEAR"));
    rd(&ty, six);
    for (int i = 0; i < 6; i++) {
        CHECK(six[i] == 2.5f);
    }
    rm(&tx), rm(&ty);
    free(x), free(r), free(xx), free(rr);
}

/* TBE on NHWC with strided views: the channels are independent planes. */
static void test_tbe_nhwc_views(void)
{
    const int64_t ih = 3, iw = 4, C = 3, oh = 5, ow = 6;
    float x[36], r[90];
    gen(x, 36, 21);
    int64_t xd[4] = {1, ih, iw, C}, yd[4] = {1, oh, ow, C};
    /* self stored with a padded channel stride (4), out with row padding */
    int64_t xs[4] = {64, 16, 4, 1}, ys[4] = {200, 30, 4, 1};
    ten tx = mk(4, xd, xs, 0, 64, ACL_FORMAT_NHWC, ACL_FLOAT, x, 0);
    ten ty = mk(4, yd, ys, 1, 200, ACL_FORMAT_NHWC, ACL_FLOAT, NULL, -3);
    fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {oh, ow}};
    EXPECT_STATUS(run(&c), 0);
    rd(&ty, r);
    int bad = 0;
    for (int64_t k = 0; k < C; k++) {
        float plane[12];
        for (int64_t i = 0; i < 12; i++) {
            plane[i] = x[i * C + k];
        }
        for (int64_t h = 0; h < oh; h++) {
            for (int64_t w = 0; w < ow; w++) {
                bad += r[(h * ow + w) * C + k] != tbe_ref(plane, ih, iw, oh, ow, h, w, a2 ? 1 : 0, 1, aclemuTbeFma());
            }
        }
    }
    CHECK(bad == 0);
    float all[200];
    rdall(&ty, all, NULL);
    CHECK(all[0] == -3.0f && all[4] == -3.0f); /* offset 1: element 0 untouched; channel padding at 1 + 3 */
    rm(&tx), rm(&ty);
}

/* 950: ResizeBilinearV2With4d templates and their arithmetic. */
static float simt_ref(const float *x, int64_t ih, int64_t iw, float sh, float sw, int64_t h, int64_t w, int half,
                      int clamp, int fma)
{
    float ch = half ? (fma ? fmaf((float)h + 0.5f, sh, -0.5f) : ((float)h + 0.5f) * sh - 0.5f) : (float)h * sh;
    float cw = half ? (fma ? fmaf((float)w + 0.5f, sw, -0.5f) : ((float)w + 0.5f) * sw - 0.5f) : (float)w * sw;
    if (clamp) {
        ch = fmaxf(ch, 0.0f);
        cw = fmaxf(cw, 0.0f);
    }
    int64_t t = ch > 0 ? (int64_t)floorf(ch) : 0, b = ch > 0 ? (int64_t)ceilf(ch) : 0;
    int64_t l = cw > 0 ? (int64_t)floorf(cw) : 0, rr = cw > 0 ? (int64_t)ceilf(cw) : 0;
    t = t < ih - 1 ? t : ih - 1, b = b < ih - 1 ? b : ih - 1, l = l < iw - 1 ? l : iw - 1, rr = rr < iw - 1 ? rr : iw - 1;
    float dy = ch - floorf(ch), dx = cw - floorf(cw);
    float lt = x[t * iw + l], rt = x[t * iw + rr], lb = x[b * iw + l], rb = x[b * iw + rr];
    if (fma) {
        float top = fmaf(1.0f - dx, lt, dx * rt), bot = fmaf(1.0f - dx, lb, dx * rb);
        return fmaf(1.0f - dy, top, dy * bot);
    }
    float top = (1.0f - dx) * lt + dx * rt, bot = (1.0f - dx) * lb + dx * rb;
    return (1.0f - dy) * top + dy * bot;
}

static void test_950_bilinear(void)
{
    /* SIMT_NCHW against its rule, FMA on and off (they differ on this data), float16 rounded once */
    const int64_t ih = 5, iw = 7, oh = 9, ow = 11, n = ih * iw, m = oh * ow;
    float *x = malloc(n * sizeof *x), *r = malloc(m * sizeof *r), *r1 = malloc(m * sizeof *r1);
    gen(x, n, 31);
    int64_t xd[4] = {1, 1, ih, iw}, yd[4] = {1, 1, oh, ow};
    for (int on = 0; on <= 1; on++) {
        aclemuSetFmaContraction(on);
        for (int k = 0; k < 2; k++) {
            const int32_t dt = k ? ACL_FLOAT16 : ACL_FLOAT;
            ten tx = mkc(4, xd, ACL_FORMAT_NCHW, dt, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, dt, NULL, 9);
            fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {oh, ow}};
            EXPECT_STATUS(run(&c), 0);
            CHECK(kernel_is("ResizeBilinearV2With4d.SIMT_NCHW"));
            CHECK(c.ws == 32);
            rd(&ty, on ? r1 : r);
            float plane[35];
            for (int64_t i = 0; i < n; i++) {
                plane[i] = k ? r16(x[i]) : x[i];
            }
            int bad = 0;
            for (int64_t h = 0; h < oh; h++) {
                for (int64_t w = 0; w < ow; w++) {
                    float v = simt_ref(plane, ih, iw, (float)ih / (float)oh, (float)iw / (float)ow, h, w, 1, 1, on);
                    bad += (on ? r1 : r)[h * ow + w] != (k ? r16(v) : v);
                }
            }
            CHECK(bad == 0);
            rm(&tx), rm(&ty);
        }
    }
    aclemuSetFmaContraction(-1);
    /* scales: 1.0f / (float)scale (in 5, scale 1.9 -> out 9) */
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    fc c = {.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {oh, ow}, .s0 = 1.9, .s1 = 1.7};
    EXPECT_STATUS(run(&c), 0);
    rd(&ty, r);
    int bad = 0;
    for (int64_t h = 0; h < oh; h++) {
        for (int64_t w = 0; w < ow; w++) {
            bad += r[h * ow + w] !=
                   simt_ref(x, ih, iw, 1.0f / (float)1.9, 1.0f / (float)1.7, h, w, 1, 1, aclemuFmaContraction());
        }
    }
    CHECK(bad == 0);
    rm(&ty);
    /* equal sizes with scales: ALL_COPY (the scales ignored) */
    ty = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {ih, iw}, .s0 = 3.0, .s1 = 3.0};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2With4d.ALL_COPY"));
    rd(&ty, r);
    CHECK(memcmp(r, x, n * sizeof *r) == 0);
    rm(&ty), rm(&tx);
    /* SIMT_HW (out H * W >= 72 AIV cores * 1024): the coordinate is not clamped at 0; the border cells
     * blend one input cell with itself with d = src - floor(src) instead of d = 0 (for finite data the
     * two weights sum to 1 exactly and the value rarely moves: every cell is compared to the rule) */
    const int64_t big = 272;
    float x4[4] = {1e8f + 8.0f, 3.0f, 7.0f, -5.0f};
    float *rb = malloc(big * big * sizeof *rb);
    int64_t sd[4] = {1, 1, 2, 2}, bd[4] = {1, 1, big, big};
    tx = mkc(4, sd, ACL_FORMAT_NCHW, ACL_FLOAT, x4, 0), ty = mkc(4, bd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {big, big}};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2With4d.SIMT_HW"));
    rd(&ty, rb);
    const float s = 2.0f / (float)big;
    bad = 0;
    for (int64_t h = 0; h < big; h++) {
        for (int64_t w = 0; w < big; w++) {
            bad += rb[h * big + w] != simt_ref(x4, 2, 2, s, s, h, w, 1, 0, aclemuFmaContraction());
        }
    }
    CHECK(bad == 0);
    CHECK(rb[0] == simt_ref(x4, 2, 2, s, s, 0, 0, 1, 0, aclemuFmaContraction()));
    CHECK(simt_ref(x4, 2, 2, s, s, 0, 0, 1, 1, aclemuFmaContraction()) == x4[0]); /* SIMT_NCHW's clamp */
    rm(&tx), rm(&ty);
    free(rb);
    /* NHWC templates: C = 32 floats (128 bytes) */
    const int64_t C = 32;
    float *xc = malloc(18 * 18 * C * sizeof *xc), *rc = malloc(18 * 18 * C * sizeof *rc);
    gen(xc, 18 * 18 * C, 41);
    struct {
        int64_t ih, iw, oh, ow;
        const char *kernel;
    } t[] = {
        {18, 18, 9, 9, "ResizeBilinearV2With4d.C_PARALLEL"},   /* scale 2, 81 pixels > 72 cores */
        {4, 4, 2, 2, "ResizeBilinearV2With4d.C_PARALLEL_NC"}, /* 4 pixels: cFactor = ceil(32 / 18) = 2 */
        {6, 6, 2, 2, "ResizeBilinearV2With4d.POINT_COPY"},    /* scale 3, odd */
        {3, 3, 5, 5, "ResizeBilinearV2With4d.SIMT_NHWC"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t a[4] = {1, t[i].ih, t[i].iw, C}, b[4] = {1, t[i].oh, t[i].ow, C};
        tx = mkc(4, a, ACL_FORMAT_NHWC, ACL_FLOAT, xc, 0), ty = mkc(4, b, ACL_FORMAT_NHWC, ACL_FLOAT, NULL, 9);
        c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {t[i].oh, t[i].ow}};
        EXPECT_STATUS(run(&c), 0);
        CHECK(kernel_is(t[i].kernel));
        rd(&ty, rc);
        bad = 0;
        const float sh = (float)t[i].ih / (float)t[i].oh, sw = (float)t[i].iw / (float)t[i].ow;
        for (int64_t k = 0; k < C; k += 7) {
            float plane[18 * 18];
            for (int64_t q = 0; q < t[i].ih * t[i].iw; q++) {
                plane[q] = xc[q * C + k];
            }
            for (int64_t h = 0; h < t[i].oh; h++) {
                for (int64_t w = 0; w < t[i].ow; w++) {
                    float got = rc[(h * t[i].ow + w) * C + k], want;
                    if (i == 2) { /* ((2h + 1) * 3 - 1) / 2 = 3h + 1 */
                        want = plane[(3 * h + 1) * t[i].iw + 3 * w + 1];
                    } else if (i == 3) {
                        want = simt_ref(plane, t[i].ih, t[i].iw, sh, sw, h, w, 1, 1, aclemuFmaContraction());
                    } else { /* src = 2o + 0.5: lerp 0.5 both ways; (nw + ne) + (sw + se) */
                        float q = 0.25f;
                        const float *p0 = plane + (2 * h) * t[i].iw + 2 * w;
                        want = (p0[0] * q + p0[1] * q) + (p0[t[i].iw] * q + p0[t[i].iw + 1] * q);
                    }
                    bad += got != want;
                }
            }
        }
        if (bad) {
            fprintf(stderr, "  950 NHWC case %zu: %d cells differ\n", i, bad);
        }
        CHECK(bad == 0);
        rm(&tx), rm(&ty);
    }
    /* NCHW_BROADCAST: 1 x 1 -> 8 x 8 (256 bytes) */
    float one = -2.25f, o64[64];
    int64_t od[4] = {1, 1, 1, 1}, ob[4] = {1, 1, 8, 8};
    tx = mkc(4, od, ACL_FORMAT_NCHW, ACL_FLOAT, &one, 0), ty = mkc(4, ob, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 9);
    c = (fc){.op = BIL, .x = &tx, .y = &ty, .nos = 2, .os = {8, 8}};
    EXPECT_STATUS(run(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2With4d.NCHW_BROADCAST"));
    rd(&ty, o64);
    for (int i = 0; i < 64; i++) {
        CHECK(o64[i] == -2.25f);
    }
    rm(&tx), rm(&ty);
    free(x), free(r), free(r1), free(xc), free(rc);
}

static void test_unsupported(void)
{
    float x[4] = {1, 2, 3, 4};
    int64_t xd[4] = {1, 1, 2, 2}, yd[4] = {1, 1, 4, 4}, ad[3] = {1, 1, 2}, bd[3] = {1, 1, 4};
    ten tx = mkc(4, xd, ACL_FORMAT_NCHW, ACL_FLOAT, x, 0), ty = mkc(4, yd, ACL_FORMAT_NCHW, ACL_FLOAT, NULL, 0);
    ten a = mkc(3, ad, ACL_FORMAT_NCL, ACL_FLOAT, x, 0), b = mkc(3, bd, ACL_FORMAT_NCL, ACL_FLOAT, NULL, 0);
    char want[64];
    snprintf(want, sizeof want, "support for arch %d is not implemented", arch);
    fc c = {.op = NE2, .x = &tx, .y = &ty, .nos = 2, .os = {4, 4}};
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has(want));
    c.op = BIL;
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has(want));
    c = (fc){.op = NE1, .x = &a, .y = &b, .nos = 1, .os = {4}};
    CHECK(run(&c) == ACLNN_ERR_PARAM_INVALID && msg_has(want));
    rm(&tx), rm(&ty), rm(&a), rm(&b);
}

int main(int argc, char **argv)
{
    int32_t want = argc > 1 ? (int32_t)strtol(argv[1], NULL, 10) : 2201;
    arch = aclemuNpuArch();
    CHECK(arch == want);
    a2 = arch == 2201, is950 = arch == 3510, is910 = arch == 1001, is310p = arch == 2002;
    EXPECT_STATUS(aclInit(NULL), 0);
    EXPECT_STATUS(aclrtSetDevice(0), 0);
    EXPECT_STATUS(aclrtCreateStream(&stream), 0);
    if (a2 || is950 || is310p) {
        test_nearest_hand();
        test_nearest_scale_rounding();
        test_nearest_nhwc();
        test_nearest_bits();
        test_nearest_views();
        test_nearest_out_shapes();
        test_nearest_checks();
    }
    if (is950) {
        test_nearest_gather();
        test_nearest_3d_case();
    }
    if (is910) {
        test_nearest_no_binary();
    }
    if (a2 || is950 || is310p || is910) {
        test_bilinear_checks();
        test_bilinear_hand();
    }
    if (a2) {
        test_bilinear_a2_routes();
        test_cube_quirks();
    }
    if (a2 || is310p || is910) {
        test_tbe();
        test_tbe_nhwc_views();
    }
    if (is950) {
        test_950_bilinear();
    }
    if (!(a2 || is950 || is310p || is910)) {
        test_unsupported();
    }
    EXPECT_STATUS(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    EXPECT_STATUS(aclrtResetDevice(0), 0);
    EXPECT_STATUS(aclFinalize(), 0);
    const char *soc = aclrtGetSocName();
    printf("fwd (%s, arch %d): ", soc ? soc : "no SoC", arch);
    return check_report("forward ops");
}
