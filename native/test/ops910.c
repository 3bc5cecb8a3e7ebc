/*
 * The TBE generation and the SoC table: ResizeBilinearV2Grad5HD (src/opapi/tbe5hd.c) on Atlas A2/A3,
 * Atlas training (NpuArch 1001) and 310P (2002): tiling mode thresholds per SoC, each mode's values
 * against a float64 reference, modes 1 and 2's fold order bit for bit, the atomic modes' per-launch
 * order, the TBE FMA switch; the 1001/2002 routing and refusals; a known SoC of another arch.
 * Usage: ops910 <expected NpuArch> (run once per ACLEMU_SOC by the Makefile).
 */
#include "ops950.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int tbe, a2;
static int64_t tc; /* tensor_c of the SoC */

static int kernel_is(const char *name)
{
    int ok = strcmp(aclemuLastKernel(), name) == 0;
    if (!ok) {
        fprintf(stderr, "  last kernel \"%s\", expected \"%s\"\n", aclemuLastKernel(), name);
    }
    return ok;
}

static const char *mode_name(int m)
{
    static char buf[8][40];
    snprintf(buf[m], sizeof buf[m], "ResizeBilinearV2Grad5HD.MODE%d", m);
    return buf[m];
}

static call bil(int op, int64_t ih, int64_t iw, int64_t gh, int64_t gw, const float *g, float *res)
{
    return (call){.op = op, .N = 1, .C = 1, .in = {ih, iw}, .out = {gh, gw}, .fmt = ACL_FORMAT_NCHW,
                  .gdt = ACL_FLOAT, .g = g, .res = res};
}

static float *gen(int64_t n, unsigned seed)
{
    float *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        g[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 6.0f * (float)(1 + (s & 7)); /* mixed magnitudes */
    }
    return g;
}

/* The kernel's bilinear backward in float64 (weights from float64 coordinates); abs: sum of |terms|. */
static void reference(const float *g, int64_t gh, int64_t gw, int64_t ih, int64_t iw, int align, double *out,
                      double *abs)
{
    memset(out, 0, (size_t)(ih * iw) * sizeof *out);
    memset(abs, 0, (size_t)(ih * iw) * sizeof *abs);
    int64_t in[2] = {ih, iw}, o[2] = {gh, gw};
    double sc[2];
    for (int d = 0; d < 2; d++) {
        sc[d] = align ? (o[d] < 2 ? (double)in[d] / (double)o[d] : (double)(in[d] - 1) / (double)(o[d] - 1))
                      : (double)in[d] / (double)o[d];
    }
    for (int64_t y = 0; y < gh; y++) {
        double sy = align ? sc[0] * (double)y : fmax(sc[0] * ((double)y + 0.5) - 0.5, 0.0);
        int64_t hy = (int64_t)floor(sy), hs = hy < ih - 1;
        double hr = sy - (double)hy, hl = 1.0 - hr;
        for (int64_t x = 0; x < gw; x++) {
            double sx = align ? sc[1] * (double)x : fmax(sc[1] * ((double)x + 0.5) - 0.5, 0.0);
            int64_t wx = (int64_t)floor(sx), ws = wx < iw - 1;
            double wr = sx - (double)wx, wl = 1.0 - wr, v = g[y * gw + x];
            int64_t c[4] = {hy * iw + wx, hy * iw + wx + ws, (hy + hs) * iw + wx, (hy + hs) * iw + wx + ws};
            double w[4] = {hl * wl, hl * wr, hr * wl, hr * wr};
            for (int k = 0; k < 4; k++) {
                out[c[k]] += w[k] * v;
                abs[c[k]] += fabs(w[k] * v);
            }
        }
    }
}

/* V1 (ResizeBilinearV2Grad5HD on every TBE-running SoC) against the reference; returns max error/bound. */
static void check_values(int64_t ih, int64_t iw, int64_t gh, int64_t gw, int align, int want_mode)
{
    float *g = gen(gh * gw, (unsigned)(ih * 31 + iw * 7 + gh * 3 + gw)), *r = malloc((size_t)(ih * iw) * 4);
    double *ref = malloc((size_t)(ih * iw) * 8), *ab = malloc((size_t)(ih * iw) * 8);
    call c = bil(3, ih, iw, gh, gw, g, r);
    c.align = align;
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is(mode_name(want_mode)));
    reference(g, gh, gw, ih, iw, align, ref, ab);
    double worst = 0;
    double tol_rel = 4e-7 * (double)((ih > iw ? ih : iw) + 16);
    for (int64_t i = 0; i < ih * iw; i++) {
        double e = fabs((double)r[i] - ref[i]) / (tol_rel * ab[i] + 1e-30);
        worst = e > worst ? e : worst;
    }
    if (worst > 1.0) {
        fprintf(stderr, "  mode %d %lldx%lld <- %lldx%lld align %d: error %.3g of the bound\n", want_mode,
                (long long)ih, (long long)iw, (long long)gh, (long long)gw, align, worst);
    }
    CHECK(worst <= 1.0);
    free(g);
    free(r);
    free(ref);
    free(ab);
}

/* Tiling mode per SoC at each threshold (V1: the TBE kernel whenever the sizes differ). */
static void test_modes(void)
{
    float *g = gen(16384, 1);
    struct {
        int64_t ih, iw, gh, gw;
        int tbe_mode, a2_mode;
    } t[] = {
        {1, 1, 1, tc, 1, 1},          {1, 1, 1, tc + 1, 2, 2},    {1, 1, 3, 5, 1, 1},
        {3, 4, 1, 1, 3, 3},           {1, tc - 1, 2, 4, 4, 4},    {1, tc, 2, 4, 6, 6},
        {5, 7, 1, tc - 1, 4, 4},      {5, 9, 1, tc, 5, 6},        {5, 7, 1, tc, 6, 6},        {2, 640, 4, 1280, 5, 6},
        {2, 641, 4, 1282, 6, 6},      {2, 100, 2, 4096, 5, 6},    {2, 100, 2, 4097, 6, 6},
        {2, 16, 2, 16 * 254, 5, 6},   {2, 16, 2, 16 * 255, 6, 6}, {2, 80, 32, 70, 6, 6},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        call c = bil(3, t[i].ih, t[i].iw, t[i].gh, t[i].gw, g, NULL);
        EXPECT(op_call(&c), 0);
        int want = tbe ? t[i].tbe_mode : t[i].a2_mode;
        if (!kernel_is(mode_name(want))) {
            fprintf(stderr, "  mode case %zu\n", i);
            CHECK(0);
        }
    }
    free(g);
}

static void test_values(void)
{
    for (int align = 0; align <= 1; align++) {
        check_values(1, 1, 3, 5, align, 1);
        check_values(1, 1, 2, tc / 2 + 3, align, 2);
        check_values(3, 4, 1, 1, align, 3);
        check_values(5, 7, 9, 11, align, 4);
        check_values(9, 11, 5, 7, align, 4);
        check_values(3, 40, 6, 400, align, tbe ? 5 : 6);
        check_values(5, 33, 7, 1000, align, tbe ? 5 : 6);
        check_values(2, 700, 3, 1400, align, 6);
        check_values(3, 80, 40, 70, align, 6);
        check_values(2, 1100, 3, 2300, align, 6); /* wide: segmented flushes, two gradient chunks */
        check_values(3, tc / 2, 2, tc + 40, align, 6);
    }
}

/* Modes 1 and 2: the fold order of data_merge / data_sum, bit for bit (hand-computed). */
static void test_fold_order(void)
{
    const float e = 0x1p-24f;
    float g[5000] = {0}, r[1];
    /* mode 1, slots S[q % 256]: [1, e, e]: S0 = S2 + S0 = 1 + e -> 1 (tie, even), S1 = e, S0 = 1 + e -> 1 */
    g[0] = 1.0f, g[1] = e, g[2] = e;
    call c = bil(3, 1, 1, 1, 5, g, r);
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is(mode_name(1)) && r[0] == 1.0f);
    /* [1, e, 0, e]: S1 = S3 + S1 = 2e first, then S0 = 2e + 1 = 1 + 2^-23 (a sequential sum gives 1) */
    g[2] = 0.0f, g[3] = e;
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 1.0f + 0x1p-23f);
    /* mode 1: slot 4 folds into S0 at the n = 4 step, before S2 / S1: [1, e, 0, 0, e] -> (1 + e) = 1, + e = 1 */
    memset(g, 0, sizeof g);
    g[0] = 1.0f, g[1] = e, g[4] = e;
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 1.0f);
    /* mode 2, 1 x (tc + 2): chunk 1's cells tc, tc + 1 go to slots 0, 1 (q counted per tensor_c chunk):
     * g[1] = g[tc + 1] = e -> S1 = 2e, result 1 + 2^-23; g[1024] = g[tc] = e (both slot 0, in turn
     * after 1) -> 1 */
    memset(g, 0, sizeof g);
    g[0] = 1.0f, g[1] = e, g[tc + 1] = e;
    c = bil(3, 1, 1, 1, tc + 2, g, r);
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is(mode_name(2)) && r[0] == 1.0f + 0x1p-23f);
    memset(g, 0, sizeof g);
    g[0] = 1.0f, g[1024] = e, g[tc] = e;
    EXPECT(op_call(&c), 0);
    CHECK(r[0] == 1.0f);
}

/* Distinct result bit patterns of `runs` launches, each with its own seed base. */
static int patterns(int64_t ih, int64_t iw, int64_t gh, int64_t gw, int runs, int want_mode)
{
    float *g = gen(gh * gw, 77);
    size_t n = (size_t)(ih * iw);
    float *res = calloc((size_t)runs * n, sizeof *res);
    int distinct = 0;
    for (int k = 0; k < runs; k++) {
        aclemuSetAtomicSeed(1000u + (uint64_t)k * 7919u);
        call c = bil(3, ih, iw, gh, gw, g, res + (size_t)k * n);
        EXPECT(op_call(&c), 0);
        CHECK(kernel_is(mode_name(want_mode)));
        int seen = 0;
        for (int j = 0; j < k && !seen; j++) {
            seen = memcmp(res + (size_t)j * n, res + (size_t)k * n, n * 4) == 0;
        }
        distinct += !seen;
    }
    /* the same seed replays the same bits */
    aclemuSetAtomicSeed(1000u);
    float *again = malloc(n * 4);
    call c = bil(3, ih, iw, gh, gw, g, again);
    EXPECT(op_call(&c), 0);
    CHECK(memcmp(again, res, n * 4) == 0);
    free(again);
    free(res);
    free(g);
    return distinct;
}

static void test_atomic_order(void)
{
    /* gradient rows 0..31 over the cores (910/310P: 30..32 or 8..10 cores, A2: 20 or 24): each image
     * row sums about 16 row partials from different cores */
    CHECK(patterns(2, 80, 32, 70, 8, 6) >= 2);
    if (tbe) {
        CHECK(patterns(2, 8, 32, 100, 8, 5) >= 2);
    }
    /* gh == 1: one core, its flushes in program order */
    CHECK(patterns(1, 40, 1, 2100, 6, tbe ? 5 : 6) == 1);
    CHECK(patterns(2, 1100, 1, 2300, 4, 6) == 1);
}

static void test_tbe_fma(void)
{
    const char *env = getenv("ACLEMU_TBE_FMA");
    int env_on = env != NULL && strcmp(env, "1") == 0;
    CHECK(aclemuTbeFma() == env_on);
    aclemuSetTbeFma(1);
    CHECK(aclemuTbeFma() == 1);
    aclemuResetFaults();
    CHECK(aclemuTbeFma() == env_on);
    /* mode 4 and mode 6: vec_axpy rounded once or twice changes the sums' bits */
    int64_t shapes[2][4] = {{5, 7, 9, 11}, {2, 700, 3, 1400}};
    for (int s = 0; s < 2; s++) {
        int64_t ih = shapes[s][0], iw = shapes[s][1], gh = shapes[s][2], gw = shapes[s][3];
        float *g = gen(gh * gw, 5), *r0 = calloc((size_t)(ih * iw), 4), *r1 = calloc((size_t)(ih * iw), 4);
        for (int on = 0; on <= 1; on++) {
            aclemuSetTbeFma(on);
            call c = bil(3, ih, iw, gh, gw, g, on ? r1 : r0);
            EXPECT(op_call(&c), 0);
        }
        CHECK(memcmp(r0, r1, (size_t)(ih * iw) * 4) != 0);
        free(g);
        free(r0);
        free(r1);
    }
    /* the scalar coordinate: image 1 x 3, gradient 1 x 19 of ones (mode 4), s = fl(3 / 19): column 9
     * has fl(fl(s * 9.5) - 0.5) = 1 (weight 1 to cell 1) but fmaf(s, 9.5, -0.5) = 1 - 2^-24 (floor 0:
     * cell 0 gets 2^-24, cell 1 the rest) */
    float ones[19], a[3], b[3];
    for (int i = 0; i < 19; i++) ones[i] = 1.0f;
    float s = 3.0f / 19.0f;
    float unf = s * 9.5f - 0.5f, fus = fmaf(s, 9.5f, -0.5f);
    CHECK(unf == 1.0f && fus == 1.0f - 0x1p-24f); /* the premise of this case */
    aclemuSetTbeFma(0);
    call c = bil(3, 1, 3, 1, 19, ones, a);
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is(mode_name(4)));
    aclemuSetTbeFma(1);
    c.res = b;
    EXPECT(op_call(&c), 0);
    CHECK(memcmp(a, b, sizeof a) != 0);
    aclemuSetTbeFma(-1);
    CHECK(aclemuTbeFma() == env_on);
}

/* 1001 / 2002 routing and refusals. */
static void test_tbe_routing(void)
{
    float g[64], init[64], r[64];
    for (int i = 0; i < 64; i++) g[i] = 0.25f * (float)i - 3.0f, init[i] = 42.0f;
    /* V2, sizes differ: the TBE kernel, scales ignored (scales 2, 2 give the same bits as none) */
    float r2[64];
    call c = bil(4, 4, 4, 2, 3, g, r);
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is(mode_name(4)));
    c.sh = 2.0, c.sw = 2.0, c.res = r2;
    EXPECT(op_call(&c), 0);
    CHECK(memcmp(r, r2, 16 * 4) == 0);
    /* V2 bf16 with sizes differing: 161002 naming the dtype; float16 runs */
    c = bil(4, 4, 4, 2, 3, g, NULL);
    c.gdt = ACL_BF16;
    EXPECT(op_call(&c), ACLNN_ERR_PARAM_INVALID);
    const char *m = aclGetRecentErrMsg();
    CHECK(m != NULL && strstr(m, "BF16") != NULL);
    c.gdt = ACL_FLOAT16;
    EXPECT(op_call(&c), 0);
    /* V1 bf16, sizes differ: 161002 too */
    c.op = 3;
    c.gdt = ACL_BF16;
    EXPECT(op_call(&c), ACLNN_ERR_PARAM_INVALID);
    /* V2, equal sizes: phase 1 succeeds with workspace 0, phase 2 launches nothing, out untouched (bf16
     * included: no dtype list for equal sizes) */
    for (int dt = 0; dt < 2; dt++) {
        aclemuResetFaults();
        c = bil(4, 4, 4, 4, 4, g, r);
        c.gdt = dt ? ACL_BF16 : ACL_FLOAT;
        c.out_init = init;
        c.sh = 2.0;
        int64_t launches = aclemuLaunchCount();
        EXPECT(op_call(&c), 0);
        CHECK(c.ws == 0);
        CHECK(strcmp(aclemuLastKernel(), "") == 0);
        CHECK(aclemuLaunchCount() == launches);
        for (int i = 0; i < 16; i++) {
            CHECK(r[i] == 42.0f);
        }
    }
    /* V1, equal sizes: ViewCopy */
    c = bil(3, 4, 4, 4, 4, g, r);
    c.out_init = init;
    EXPECT(op_call(&c), 0);
    CHECK(kernel_is("ViewCopy") && memcmp(r, g, 16 * 4) == 0);
    /* nearest-exact 1d/2d: 561003 after the op's own checks */
    call n2 = {.op = 2, .N = 1, .C = 1, .in = {2, 2}, .out = {4, 4}, .fmt = ACL_FORMAT_NCHW, .gdt = ACL_FLOAT, .g = g};
    EXPECT(op_call(&n2), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
    m = aclGetRecentErrMsg();
    CHECK(m != NULL && strstr(m, "UpsampleNearestExact2dGrad") != NULL);
    call n1 = {.op = 1, .N = 1, .C = 1, .in = {1, 3}, .out = {1, 6}, .fmt = ACL_FORMAT_NCL, .gdt = ACL_FLOAT, .g = g};
    EXPECT(op_call(&n1), ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
    n1.sw = -1.0; /* the op's own check comes first */
    EXPECT(op_call(&n1), ACLNN_ERR_PARAM_INVALID);
    n2.in[0] = 0; /* empty: the 2d op answers before any check or kernel lookup */
    n2.out[0] = 0;
    EXPECT(op_call(&n2), 0);
}

static void test_unsupported(int32_t arch)
{
    float g[16] = {0};
    char want[64];
    snprintf(want, sizeof want, "support for arch %d is not implemented", arch);
    for (int op = 1; op <= 4; op++) {
        call c = bil(op, 4, 4, 2, 2, g, NULL);
        if (op == 1) {
            c = (call){.op = 1, .N = 1, .C = 1, .in = {1, 3}, .out = {1, 6}, .fmt = ACL_FORMAT_NCL, .gdt = ACL_FLOAT,
                       .g = g};
        }
        EXPECT(op_call(&c), ACLNN_ERR_PARAM_INVALID);
        const char *m = aclGetRecentErrMsg();
        CHECK(m != NULL && strstr(m, want) != NULL);
    }
}

int main(int argc, char **argv)
{
    int32_t want = argc > 1 ? (int32_t)strtol(argv[1], NULL, 10) : 2201;
    int32_t arch = aclemuNpuArch();
    CHECK(arch == want);
    tbe = arch == 1001 || arch == 2002;
    a2 = arch == 2201;
    tc = tbe ? 2048 : 1536;
    EXPECT(aclInit(NULL), 0);
    EXPECT(aclrtSetDevice(0), 0);
    EXPECT(aclrtCreateStream(&stream), 0);
    if (tbe || a2) {
        test_modes();
        test_values();
        test_fold_order();
        test_atomic_order();
        test_tbe_fma();
        if (tbe) {
            test_tbe_routing();
        }
    } else if (arch != 3510) {
        test_unsupported(arch);
    }
    EXPECT(aclrtDestroyStream(stream), 0);
    CHECK(aclemuLiveAllocations() == 0 && aclemuLiveObjects() == 0);
    EXPECT(aclrtResetDevice(0), 0);
    EXPECT(aclFinalize(), 0);
    const char *soc = aclrtGetSocName();
    printf("ops910 (%s, arch %d): ", soc ? soc : "no SoC", arch);
    return check_report("TBE rules");
}
