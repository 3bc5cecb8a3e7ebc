/*
 * The Ascend 950 (arch35) rules of the emulated operators (the src/opapi/ files ending in _950.c name the ops-cv sources):
 * kernel routing, each kernel's arithmetic on hand-checked cases, 16-bit atomic accumulation, the
 * deterministic flag (read at phase 1) and the atomic kernels' per-launch order, the FMA switch, the
 * old API's mixed dtypes and the NHWC kernels. Run with ACLEMU_SOC=Ascend950*; with any other SoC it
 * checks that the same calls keep the Atlas A2 kernels and that the flag and the FMA switch change
 * nothing there. Usage: ops950 (ACLEMU_FMA / ACLEMU_ATOMIC_SEED, when set, are checked too).
 */
#include "ops950.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int is950;

static void set_flag(int64_t v) { EXPECT(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, v), 0); }

static int kernel_is(const char *name)
{
    int ok = strcmp(aclemuLastKernel(), name) == 0;
    if (!ok) {
        fprintf(stderr, "  last kernel \"%s\", expected \"%s\"\n", aclemuLastKernel(), name);
    }
    return ok;
}

/* A 1d nearest call: input length in, gradient length out. */
static call nearest1(int64_t in, int64_t out, double s, int32_t dt, const float *g, float *res)
{
    return (call){.op = 1, .N = 1, .C = 1, .in = {1, in}, .out = {1, out}, .fmt = ACL_FORMAT_NCL, .gdt = dt,
                  .sw = s, .g = g, .res = res};
}

/* A bilinear call on [1, C, ...] (NCHW unless fmt says otherwise). */
static call bil(int op, int64_t C, int64_t ih, int64_t iw, int64_t oh, int64_t ow, int32_t dt, const float *g,
                float *res)
{
    return (call){.op = op, .N = 1, .C = C, .in = {ih, iw}, .out = {oh, ow}, .fmt = ACL_FORMAT_NCHW, .gdt = dt,
                  .g = g, .res = res};
}

static void test_nearest(void)
{
    float g[41], r[64];
    /* FMA: in 6, out 1, s = fl32(1/6): unfused lo(3) = ceil(fl32(3s) - 0.5) = ceil(0) = 0 (input 3);
     * fused lo(3) = ceil(fma(3, s, -0.5)) = ceil(1.49e-8) = 1 (input 2). A2 never fuses. */
    g[0] = 5.0f;
    for (int on = 0; on <= 1; on++) {
        aclemuSetFmaContraction(on);
        call c = nearest1(6, 1, 0, ACL_FLOAT, g, r);
        EXPECT(op_call(&c), 0);
        int cell = is950 && on ? 2 : 3;
        for (int i = 0; i < 6; i++) {
            CHECK(r[i] == (i == cell ? 5.0f : 0.0f));
        }
        CHECK(kernel_is(is950 ? "UpsampleNearestExact2dGrad.SIMT" : "UpsampleNearestExact2dGrad"));
        CHECK(c.ws == (is950 ? 16u << 20 : 0u));
    }
    aclemuSetFmaContraction(-1);
    /* in 2, out 41: the same index rule as A2 (cell 1 starts at 20): 210 and 651 */
    for (int i = 0; i < 41; i++) g[i] = (float)(i + 1);
    call c = nearest1(2, 41, 0, ACL_FLOAT16, g, r);
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 210.0f && r[1] == 651.0f);
    /* float16 read natively and summed in float32: [2048, 1, 1] -> 2050 (16-bit adds would give 2048) */
    float h3[3] = {2048.0f, 1.0f, 1.0f};
    c = nearest1(1, 3, 0, ACL_FLOAT16, h3, r);
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 2050.0f);
    /* 2d, one cell from 2x2: rows then columns into one accumulator on 950:
     * ((1e8 + 1) - 1e8) + 1 = 1; A2's W pass then H pass: (1e8 + 1) + (-1e8 + 1) = 1e8 - 1e8 = 0 */
    float big[4] = {1e8f, 1.0f, -1e8f, 1.0f};
    c = (call){.op = 2, .N = 1, .C = 1, .in = {1, 1}, .out = {2, 2}, .fmt = ACL_FORMAT_NCHW, .gdt = ACL_FLOAT,
               .g = big, .res = r};
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == (is950 ? 1.0f : 0.0f));
    /* equal sizes: a byte copy on 950 (DATA_COPY), bfloat16 kept bit for bit */
    float e[4] = {1.5f, -3.0f, 0.25f, 7.0f};
    uint16_t raw[4];
    c = (call){.op = 2, .N = 1, .C = 1, .in = {2, 2}, .out = {2, 2}, .fmt = ACL_FORMAT_NCHW, .gdt = ACL_BF16,
               .g = e, .raw = raw};
    EXPECT(op_call(&c), 0);
    for (int i = 0; i < 4; i++) CHECK(raw[i] == to_bf16(e[i]));
    CHECK(kernel_is(is950 ? "UpsampleNearestExact2dGrad.DATA_COPY" : "UpsampleNearestExact2dGrad"));
    /* equal sizes with scale 2: SIMT, cell i reads [ceil(2i - 0.5), ...) capped: cell 0 = g0, cell 1 = g2 + g3? no:
     * lo = [0, 2, 2] (ceil(1.5) = 2, capped at 2): cell 0 = g0 + g1, cell 1 = nothing. */
    c = nearest1(2, 2, 2.0, ACL_FLOAT, e, r);
    EXPECT(op_call(&c), 0);
    if (is950) {
        CHECK(r[0] == -1.5f && r[1] == 0.0f);
        CHECK(kernel_is("UpsampleNearestExact2dGrad.SIMT"));
    }
    /* a scale within 1e-6 of 1 on unequal sizes: 950 gathers; A2 skips both passes and its H pass reads
     * gradOutput with row stride inW = 2: positions 0 and 1 reach cells 0 and 1, position 2 nothing */
    c = nearest1(2, 3, 1.0000001, ACL_FLOAT, h3, r);
    EXPECT(op_call(&c), 0);
    if (!is950) {
        CHECK(r[0] == h3[0] && r[1] == h3[1]);
    }
}

/* Bilinear routing: which kernel each call reaches (phase 1 + 2, results unchecked here). */
static void test_routing(void)
{
    float g[4096];
    for (int i = 0; i < 4096; i++) g[i] = (float)(i % 7) - 3.0f;
    struct {
        int op;
        int64_t C, ih, iw, oh, ow;
        aclFormat fmt;
        int32_t gdt, odt;
        int align, det;
        double sh, sw;
        const char *k950, *ka2;
    } t[] = {
        {4, 1, 4, 4, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 2, 2, "ResizeBilinearV2Grad.ALL_COPY", "UpsampleBilinear2dGrad"},
        {4, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 0, 0, "ResizeBilinearV2Grad.SIMT_NCHW", "UpsampleBilinear2dGrad"},
        {4, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 1, 0, 0, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE", "UpsampleBilinear2dGrad"},
        {4, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 1, 0, 0, 0, "ResizeBilinearV2Grad.SIMT_NCHW", "UpsampleBilinear2dGrad"},
        {4, 1, 2, 2, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 0, 0, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE", "UpsampleBilinear2dGrad"},
        {4, 1, 2, 2, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 0, 3, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES", "ResizeBilinearV2Grad5HD.MODE4"},
        {4, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 1, 0, 0.3, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES", "ResizeBilinearV2Grad5HD.MODE4"},
        {4, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 0, 0.3, "ResizeBilinearV2Grad.SIMT_NCHW", "ResizeBilinearV2Grad5HD.MODE4"},
        {4, 32, 4, 4, 2, 2, ACL_FORMAT_NHWC, ACL_FLOAT, 0, 0, 0, 0, 0, "ResizeBilinearV2Grad.C_PARALLEL", "UpsampleBilinear2dGrad"},
        {4, 32, 6, 6, 2, 2, ACL_FORMAT_NHWC, ACL_FLOAT, 0, 0, 0, 0, 0, "ResizeBilinearV2Grad.POINT_COPY", "UpsampleBilinear2dGrad"},
        {4, 64, 5, 5, 3, 3, ACL_FORMAT_NHWC, ACL_FLOAT16, 0, 1, 0, 0, 0, "ResizeBilinearV2Grad.POINT_COPY", "UpsampleBilinear2dGrad"},
        {4, 8, 4, 4, 2, 2, ACL_FORMAT_NHWC, ACL_FLOAT, 0, 0, 0, 0, 0, "ResizeBilinearV2Grad.SIMT_NHWC", "UpsampleBilinear2dGrad"},
        {4, 8, 4, 4, 2, 2, ACL_FORMAT_NHWC, ACL_FLOAT, 0, 0, 1, 0, 0, "ResizeBilinearV2Grad.SIMT_NHWC_DETERMINE", "UpsampleBilinear2dGrad"},
        {3, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 0, 0, "ResizeBilinearV2Grad.SIMT_NCHW", "ResizeBilinearV2Grad5HD.MODE4"},
        {3, 1, 4, 4, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, 0, 0, 0, 0, 0, "ViewCopy", "ViewCopy"},
        {3, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, ACL_FLOAT16, 0, 0, 0, 0, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE", NULL},
        {3, 1, 8, 8, 4, 4, ACL_FORMAT_NCHW, ACL_FLOAT, ACL_BF16, 0, 0, 0, 0.3, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        set_flag(t[i].det);
        call c = bil(t[i].op, t[i].C, t[i].ih, t[i].iw, t[i].oh, t[i].ow, t[i].gdt, g, NULL);
        c.fmt = t[i].fmt;
        c.odt = t[i].odt;
        c.odt_set = t[i].odt != 0;
        c.align = t[i].align;
        c.sh = t[i].sh;
        c.sw = t[i].sw;
        const char *want = is950 ? t[i].k950 : t[i].ka2;
        int64_t before = want ? aclemuKernelLaunches(want) : 0;
        EXPECT(op_call(&c), want ? 0 : ACLNN_ERR_PARAM_INVALID);
        if (want != NULL) {
            CHECK(kernel_is(want));
            CHECK(aclemuKernelLaunches(want) == before + 1);
            CHECK(!is950 || strcmp(want, "ViewCopy") == 0 || c.ws == 32);
        }
        if (want != NULL && !kernel_is(want)) {
            fprintf(stderr, "  routing case %zu\n", i);
        }
    }
    set_flag(0);
    /* V2 with gradOutput and out tagged differently: the 950 tiling fails (561103); V1 on 950 refuses it
     * in CheckFormat (161002) */
    call c = bil(4, 1, 4, 4, 2, 2, ACL_FLOAT, g, NULL);
    c.out_fmt = ACL_FORMAT_NHWC;
    c.C = 4; /* NCHW gradOutput (1, 4, 2, 2); out tagged NHWC with dims (1, 4, 4, 4) */
    c.in[0] = 4;
    c.in[1] = 4;
    if (is950) {
        EXPECT(op_call(&c), ACLNN_ERR_INNER_NULLPTR);
    }
    /* V1: a float16 gradOutput needs a float16 out, also on 950 */
    c = bil(3, 1, 8, 8, 4, 4, ACL_FLOAT16, g, NULL);
    c.odt = ACL_FLOAT;
    c.odt_set = 1;
    EXPECT(op_call(&c), ACLNN_ERR_PARAM_INVALID);
}

/* The gathers, the scatters and the copies on hand-checked cases. */
static void test_bilinear_math(void)
{
    float r[256], g4[4] = {1.0f, 2.0f, 4.0f, 8.0f};
    /* DETERMINE, W 2 <- 4 (half pixel, s = 0.5): y0 = g0 + 0.75 g1 + 0.25 g2 = 3.5, y1 = 0.25 g1 + 0.75 g2 +
     * g3 = 11.5 (float32 grads into a float16 out through the old API on 950: DETERMINE) */
    call c = bil(3, 1, 1, 2, 1, 4, ACL_FLOAT, g4, r);
    c.odt = is950 ? ACL_FLOAT16 : ACL_FLOAT;
    c.odt_set = 1;
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 3.5f && r[1] == 11.5f);
    if (is950) {
        CHECK(kernel_is("ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE"));
    }
    if (!is950) {
        return;
    }
    /* DETERMINE_SCALES, W 2 <- 4 with scale 3 (s = 1/3): forward sources -1/3, 0, 1/3, 2/3 so y0 = g0 + g1 +
     * (2/3) g2 + (1/3) g3, y1 = (1/3) g2 + (2/3) g3; fused, y1 also takes fl32(1.49e-8) g1 */
    uint32_t y1bits[2];
    for (int on = 0; on <= 1; on++) {
        aclemuSetFmaContraction(on);
        c = bil(4, 1, 1, 2, 1, 4, ACL_FLOAT, g4, r);
        c.sw = 3.0;
        EXPECT(op_call(&c), 0);
        y1bits[on] = f_bits(r[1]);
        CHECK(fabsf(r[0] - (3.0f + 8.0f / 3.0f + 8.0f / 3.0f)) < 1e-5f);
        CHECK(fabsf(r[1] - (4.0f / 3.0f + 16.0f / 3.0f)) < 1e-5f);
        CHECK(kernel_is("ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE_SCALES"));
    }
    CHECK(y1bits[0] != y1bits[1]); /* the fused start and steps move the sums by an ulp or two */
    aclemuSetFmaContraction(-1);
    /* SIMT scatter, W 4 -> 2 (s = 2): src = 2w + 0.5, so y = [g0/2, g0/2, g1/2, g1/2] */
    float g2[2] = {2.0f, 6.0f};
    c = bil(4, 1, 1, 4, 1, 2, ACL_FLOAT, g2, r);
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 1.0f && r[1] == 1.0f && r[2] == 3.0f && r[3] == 3.0f);
    CHECK(kernel_is("ResizeBilinearV2Grad.SIMT_NCHW"));
    /* 16-bit atomic accumulation: H and W 3 -> 2 (s = 1.5), cell (1, 1) takes 0.0625 of each of the four
     * gradients: {2048, 1, 1, 0} in float16. In float16 that is 2050 only when both 1s come before 2048
     * (1 + 2048 = 2049 rounds to 2048), so over 24 seeds both 2048 and 2050 appear; float32 gives 2050. */
    float g22[4] = {32768.0f, 16.0f, 16.0f, 0.0f};
    int seen2048 = 0, seen2050 = 0, other = 0;
    for (uint64_t seed = 0; seed < 24; seed++) {
        aclemuSetAtomicSeed(seed);
        c = bil(4, 1, 3, 3, 2, 2, ACL_FLOAT16, g22, r);
        EXPECT(op_call(&c), 0);
        seen2048 += r[4] == 2048.0f;
        seen2050 += r[4] == 2050.0f;
        other += r[4] != 2048.0f && r[4] != 2050.0f;
    }
    CHECK(seen2048 > 0 && seen2050 > 0 && other == 0);
    c = bil(4, 1, 3, 3, 2, 2, ACL_FLOAT, g22, r);
    EXPECT(op_call(&c), 0);
    CHECK(r[4] == 2050.0f);
    /* C_PARALLEL (NHWC, C = 32 float32), W 2 <- 4 upsampled with the flag off: w = 0 has src -0.25, a
     * negative lerp: weights 1.25 and -0.25 both into cell 0; totals 3.5 and 11.5 per channel */
    float gc[4 * 32], rc[2 * 32];
    for (int w = 0; w < 4; w++)
        for (int ch = 0; ch < 32; ch++) gc[w * 32 + ch] = g4[w] * (float)(ch + 1);
    c = bil(4, 32, 1, 2, 1, 4, ACL_FLOAT, gc, rc);
    c.fmt = ACL_FORMAT_NHWC;
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2Grad.C_PARALLEL"));
    for (int ch = 0; ch < 32; ch++) {
        CHECK(rc[ch] == 3.5f * (float)(ch + 1) && rc[32 + ch] == 11.5f * (float)(ch + 1));
    }
    /* POINT_COPY (NHWC, C = 32), 3x3 <- 1x1, half pixel, ratio 3: the gradient lands on (1, 1) only */
    float gp[32], rp[9 * 32];
    for (int ch = 0; ch < 32; ch++) gp[ch] = (float)ch - 7.5f;
    c = bil(4, 32, 3, 3, 1, 1, ACL_FLOAT, gp, rp);
    c.fmt = ACL_FORMAT_NHWC;
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is("ResizeBilinearV2Grad.POINT_COPY"));
    for (int i = 0; i < 9 * 32; i++) CHECK(rp[i] == (i / 32 == 4 ? gp[i % 32] : 0.0f));
    /* ALL_COPY: equal sizes with a scale are a copy on 950 (A2 runs its kernel and drops the last cell) */
    c = bil(4, 1, 2, 2, 2, 2, ACL_FLOAT, g4, r);
    c.sh = c.sw = 2.0;
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 1.0f && r[1] == 2.0f && r[2] == 4.0f && r[3] == 8.0f);
}

/* Bits of a downsampling call over `runs` launches: how many distinct results. */
static int distinct_runs(int32_t dt, aclFormat fmt, int64_t C, int runs, const char *kernel)
{
    enum { H = 24, W = 24, OH = 16, OW = 16 };
    static float g[64 * OH * OW];
    static unsigned char first[64 * H * W * 4], cur[64 * H * W * 4];
    uint64_t s = 12345;
    for (int i = 0; i < C * OH * OW; i++) { /* magnitudes over six decades, both signs */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        g[i] = (float)((int)(s >> 33) % 2001 - 1000) * powf(10.0f, (float)((s >> 20) % 7) - 3.0f);
    }
    int distinct = 0;
    for (int k = 0; k < runs; k++) {
        call c = bil(4, C, H, W, OH, OW, dt, g, NULL);
        c.fmt = fmt;
        c.raw = k == 0 ? first : cur;
        EXPECT(op_call(&c), 0);
        CHECK(kernel_is(kernel));
        distinct += k > 0 && memcmp(first, cur, (size_t)C * H * W * esize(dt)) != 0;
    }
    return distinct;
}

static void test_determinism(void)
{
    /* flag off: the SIMT scatter and C_PARALLEL draw their order per launch, the bits differ */
    set_flag(0);
    CHECK(distinct_runs(ACL_FLOAT, ACL_FORMAT_NCHW, 1, 6, "ResizeBilinearV2Grad.SIMT_NCHW") >= 3);
    CHECK(distinct_runs(ACL_FLOAT16, ACL_FORMAT_NCHW, 1, 6, "ResizeBilinearV2Grad.SIMT_NCHW") >= 3);
    CHECK(distinct_runs(ACL_FLOAT16, ACL_FORMAT_NHWC, 64, 4, "ResizeBilinearV2Grad.C_PARALLEL") >= 2);
    /* a fixed seed replays the same order */
    aclemuSetAtomicSeed(99);
    CHECK(aclemuAtomicSeed() == 99);
    CHECK(distinct_runs(ACL_FLOAT16, ACL_FORMAT_NCHW, 1, 1, "ResizeBilinearV2Grad.SIMT_NCHW") == 0);
    /* flag on (any level >= 1): the gather, identical bits every time */
    set_flag(1);
    CHECK(distinct_runs(ACL_FLOAT, ACL_FORMAT_NCHW, 1, 5, "ResizeBilinearV2Grad.SIMT_NCHW_DETERMINE") == 0);
    set_flag(2);
    CHECK(distinct_runs(ACL_FLOAT16, ACL_FORMAT_NHWC, 64, 3, "ResizeBilinearV2Grad.SIMT_NHWC_DETERMINE") == 0);
    /* the flag is read at phase 1: set after it, the launch still runs the scatter, and
     * aclemuLastLaunchDeterministic reports the value in effect at the launch */
    set_flag(0);
    float g[64] = {1.0f};
    call c = bil(4, 1, 8, 8, 4, 4, ACL_FLOAT, g, NULL);
    c.phase1_only_rc = 1;
    int64_t dims[4] = {1, 1, 4, 4}, in[4] = {1, 1, 8, 8}, os[2] = {4, 4};
    dten go = make(dims, 4, ACL_FORMAT_NCHW, ACL_FLOAT, g), o = make(in, 4, ACL_FORMAT_NCHW, ACL_FLOAT, NULL);
    aclIntArray *osa = aclCreateIntArray(os, 2), *isa = aclCreateIntArray(in, 4);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    EXPECT(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(go.t, osa, isa, false, 0, 0, o.t, &ws, &ex), 0);
    set_flag(1);
    EXPECT(run2(aclnnUpsampleBilinear2dBackwardV2, ws, ex), 0);
    CHECK(kernel_is("ResizeBilinearV2Grad.SIMT_NCHW"));
    CHECK(aclemuLastLaunchDeterministic() == 1);
    set_flag(0);
    drop(&go);
    drop(&o);
    aclDestroyIntArray(osa);
    aclDestroyIntArray(isa);
    (void)c;
}

/* A2 / unknown SoC: the flag changes nothing, the bits repeat. */
static void test_a2_flag(void)
{
    float g[16], r0[64], r1[64];
    for (int i = 0; i < 16; i++) g[i] = 0.1f * (float)i - 0.7f;
    for (int det = 0; det <= 1; det++) {
        set_flag(det);
        call c = bil(4, 1, 8, 8, 4, 4, ACL_FLOAT16, g, det ? r1 : r0);
        EXPECT(op_call(&c), 0);
        CHECK(kernel_is("UpsampleBilinear2dGrad"));
    }
    CHECK(memcmp(r0, r1, sizeof r0) == 0);
    set_flag(0);
}

static void test_controls(void)
{
    const char *fma = getenv("ACLEMU_FMA"), *seed = getenv("ACLEMU_ATOMIC_SEED");
    CHECK(aclemuFmaContraction() == (fma != NULL && strcmp(fma, "0") == 0 ? 0 : 1));
    aclemuSetFmaContraction(0);
    CHECK(aclemuFmaContraction() == 0);
    aclemuSetAtomicSeed(5);
    aclemuResetFaults(); /* drops both overrides, zeroes the kernel counters */
    CHECK(aclemuFmaContraction() == (fma != NULL && strcmp(fma, "0") == 0 ? 0 : 1));
    if (seed != NULL) {
        CHECK(aclemuAtomicSeed() == strtoull(seed, NULL, 0));
    }
    CHECK(strcmp(aclemuLastKernel(), "") == 0);
    CHECK(aclemuKernelLaunches("ResizeBilinearV2Grad.SIMT_NCHW") == 0);
    CHECK(aclemuKernelLaunches(NULL) == 0 && aclemuKernelLaunches("no such kernel") == 0);
}

int main(void)
{
    const char *soc = aclrtGetSocName();
    is950 = soc != NULL && strncmp(soc, "Ascend950", 9) == 0;
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    test_controls();
    test_nearest();
    test_routing();
    test_bilinear_math();
    if (is950) {
        test_determinism();
    } else {
        test_a2_flag();
    }
    EXPECT(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    printf("ops950 (%s): ", soc ? soc : "no SoC");
    return check_report(is950 ? "Ascend 950 rules" : "A2 rules kept");
}
