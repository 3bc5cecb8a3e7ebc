/*
 * ResizeBilinearV2Grad5HD: the built-in TBE kernel ResizeBilinearV2Grad (NC1HWC0, float32) that
 * Atlas A2/A3 (the V2 fallback, V1), Atlas training (NpuArch 1001) and 310P (2002) run for bilinear
 * backward. Written from the public source, CANN 8.1.RC1 toolkit (GitHub leideng/CANN-8.1.RC1),
 * opp/built-in/op_impl/ai_core/tbe/impl/dynamic/resize_bilinear_v2_grad.py, class
 * ResizeBilinearV2Grad5HD, and its tiling ops/built-in/op_tiling/resize_bilinear_v2_grad.cc
 * (CalTilingMode, CalCoreInfo, CalRunningInfo; the 8.x tiling compares with the compile info's
 * tensor_c and l1_support where that copy still has 2048). The host (aclnn_upsample_bilinear_2d_backward
 * {,_v2}.cpp DoResizeBilinearV2Grad) transposes gradOut to NC1HWC0 and casts it to float32 first
 * (exact from float16), and casts the float32 result to out's dtype (RNE) after: emu_load / emu_store.
 * The 16 channel lanes of a C0 block never mix, so each (n, c) plane is computed on its own.
 *
 * Coordinates (get_scale, get_src_index, calculate_h / calculate_w, get_ratio, get_stride), float32
 * scalars: scale = align ? (out < 2 ? in / out : (in - 1) / (out - 1)) : in / out (out: gradient
 * size, in: image size); src = align ? scale * d : max(scale * (d + 0.5) - 0.5, 0); idx = floor(src);
 * stride = idx < in - 1; r = src - idx; l = 1 - r. The scalar multiply-add is OPEN (one fused op or
 * two roundings): the TBE FMA switch (aclemuSetTbeFma, default two roundings) decides, as it decides
 * vec_axpy's (acc = g * w + acc) rounding.
 *
 * Planted fault (aclemuSetTbeZeroWeightFault, not a device rule): an H weight r that is exactly 0 on
 * a gradient row with a lower neighbour (stride 1) becomes 2^-10, l unchanged (h_coord, every mode).
 */
#include "dtype.h"
#include "tbe5hd_flush.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODE_NAMES[7] = {
    "ResizeBilinearV2Grad5HD.MODE0", "ResizeBilinearV2Grad5HD.MODE1", "ResizeBilinearV2Grad5HD.MODE2",
    "ResizeBilinearV2Grad5HD.MODE3", "ResizeBilinearV2Grad5HD.MODE4", "ResizeBilinearV2Grad5HD.MODE5",
    "ResizeBilinearV2Grad5HD.MODE6",
};

/* resize_bilinear_v2_grad.cc CalTilingMode, with tensor_c and l1_support of the compile info. */
int emu_tbe5hd_mode(int64_t gh, int64_t gw, int64_t ih, int64_t iw, int64_t tensor_c, int l1_support)
{
    int img_one = ih == 1 && iw == 1, grad_one = gh == 1 && gw == 1;
    if (gh == ih && gw == iw) {
        return 0;
    }
    if (img_one && !grad_one) {
        return gh * gw > tensor_c ? 2 : 1;
    }
    if (grad_one && !img_one) {
        return 3;
    }
    if (ih * iw < tensor_c && gh * gw < tensor_c) {
        return 4;
    }
    if (l1_support && iw <= 640 && gw <= 4096 && gw > iw && gw / iw < 255) {
        return 5;
    }
    return 6;
}

void emu_tbe5hd_setup(emu_op_params *p, int64_t gh, int64_t gw, int64_t ih, int64_t iw)
{
    int l1;
    emu_tbe_compile_info(&p->tbe_cores, &p->tbe_tensor_c, &l1);
    p->kernel = EMU_KERNEL_RB5HD;
    p->tbe_mode = emu_tbe5hd_mode(gh, gw, ih, iw, p->tbe_tensor_c, l1);
    p->kname = MODE_NAMES[p->tbe_mode];
}

/* ---- coordinates ---- */

typedef struct {
    int64_t idx;
    int64_t stride;
    float l, r;
} coord;

static float tbe_scale(int64_t in, int64_t out, int align)
{
    float fi = (float)in, fo = (float)out;
    if (align) {
        return fo < 2.0f ? fi / fo : (fi - 1.0f) / (fo - 1.0f);
    }
    return fi / fo;
}

/* get_src_index + floor + get_stride + get_ratio on the scalar unit (fma: the OPEN contraction). */
static coord scalar_coord(int64_t d, float scale, int64_t in, int align, int fma)
{
    float src;
    if (!align) { /* half_pixel_centers = !alignCorners (both op_apis) */
        float x = (float)d + 0.5f;
        src = emu_madd(scale, x, -0.5f, fma);
        src = src < 0.0f ? 0.0f : src;
    } else {
        src = scale * (float)d;
    }
    coord c;
    c.idx = (int64_t)floorf(src);
    c.stride = c.idx < in - 1 ? 1 : 0;
    c.r = src - (float)c.idx;
    c.l = 1.0f - c.r;
    return c;
}

/* vec_axpy: dst = src * scalar + dst, one rounding when fused. */
static inline float axpy(float acc, float g, float w, int fma) { return emu_madd(g, w, acc, fma); }

/* ---- the run ---- */

typedef struct {
    const emu_op_params *p;
    int64_t gh, gw, ih, iw, tc;
    float sh, sw;
    int align, fma;
    int zw_fault;   /* the planted zero-weight fault (aclemuSetTbeZeroWeightFault) */
    const float *g; /* the plane's gradient, float32, gh x gw */
    float *o;       /* the plane's result (gm), float32, ih x iw, from +0 */
} plane_ctx;

/* The H coordinate of gradient row y. With the planted fault on, an r of exactly 0 on a row with a
 * lower neighbour becomes 2^-10 (l stays): that neighbour row then gets non-zero partials. */
static coord h_coord(const plane_ctx *c, int64_t y)
{
    coord h = scalar_coord(y, c->sh, c->ih, c->align, c->fma);
    if (c->zw_fault && h.stride == 1 && h.r == 0.0f) {
        h.r = 0x1p-10f;
    }
    return h;
}

/* data_sum (iter_num folds of halves, repeats with dst / src1 repeat stride 0 taken in order): slots of
 * 16 lanes (one lane here); for n = unit/2 .. 4 slots: S[j] = S[n + 4r + j] + S[j] (j < 4) for r in
 * 0..n/4-1; then S[0..1] += S[2..3]; then S[0] += S[1]. */
static float data_sum(float *S, int64_t unit)
{
    for (int64_t n = unit / 2; n >= 4; n /= 2) {
        for (int64_t r = 0; r < n / 4; r++) {
            for (int j = 0; j < 4; j++) {
                S[j] = S[n + 4 * r + j] + S[j];
            }
        }
    }
    S[0] = S[2] + S[0];
    S[1] = S[3] + S[1];
    S[0] = S[1] + S[0];
    return S[0];
}

/* Mode 1 (one2n_small_core) and 2 (one2n_big_core): the image is 1 x 1. data_merge adds cell q of the
 * gradient plane into slot q mod unit (mode 2: q counted inside each tensor_c chunk), data_sum folds. */
static void mode_one2n(const plane_ctx *c, float *S)
{
    const int big = c->p->tbe_mode == 2;
    const int64_t unit = big ? 1024 : 256, total = c->gh * c->gw;
    for (int64_t i = 0; i < unit; i++) {
        S[i] = 0.0f;
    }
    for (int64_t q = 0; q < total; q++) {
        int64_t local = big ? q % c->tc : q;
        S[local % unit] = S[local % unit] + c->g[q];
    }
    float v = data_sum(S, unit);
    c->o[0] = big ? c->o[0] + v : v; /* mode 2 adds atomically onto the zeroed gm */
}

/* Mode 3 (n2one, calculate_n2one_grads): the gradient is 1 x 1; four axpy into zeroed slots, then
 * written (no atomics) in the order 11, 10, 01, 00: where cells coincide (stride 0) the later wins. */
static void mode_n2one(const plane_ctx *c)
{
    coord h = h_coord(c, 0), w = scalar_coord(0, c->sw, c->iw, c->align, c->fma);
    float g = c->g[0];
    float v00 = axpy(0.0f, g, h.l * w.l, c->fma), v01 = axpy(0.0f, g, h.l * w.r, c->fma);
    float v10 = axpy(0.0f, g, h.r * w.l, c->fma), v11 = axpy(0.0f, g, h.r * w.r, c->fma);
    int64_t o00 = h.idx * c->iw + w.idx, o01 = o00 + w.stride, o10 = o00 + h.stride * c->iw;
    int64_t o11 = o10 + w.stride;
    c->o[o11] = v11;
    c->o[o10] = v10;
    c->o[o01] = v01;
    c->o[o00] = v00;
}

/* Mode 4 (small_in_out, small_in_loop): the plane's gradient row-major, each element's four axpy in
 * the order 00 (hl*wl), 01 (hl*wr), 10 (hr*wl), 11 (hr*wr) into a zeroed UB image, then written. */
static void mode_small(const plane_ctx *c)
{
    for (int64_t y = 0; y < c->gh; y++) {
        coord h = h_coord(c, y);
        for (int64_t x = 0; x < c->gw; x++) {
            coord w = scalar_coord(x, c->sw, c->iw, c->align, c->fma);
            float g = c->g[y * c->gw + x];
            int64_t o00 = h.idx * c->iw + w.idx, o01 = o00 + w.stride, o10 = o00 + h.stride * c->iw;
            int64_t o11 = o10 + w.stride;
            c->o[o00] = axpy(c->o[o00], g, h.l * w.l, c->fma);
            c->o[o01] = axpy(c->o[o01], g, h.l * w.r, c->fma);
            c->o[o10] = axpy(c->o[o10], g, h.r * w.l, c->fma);
            c->o[o11] = axpy(c->o[o11], g, h.r * w.r, c->fma);
        }
    }
}

/* Mode 5's W tables (l1_ratio, l1_count): vector ops (vec_adds 0.5, vec_muls scale, vec_adds -0.5,
 * vec_max 0; each rounded, never fused), floor to int32, r = v - idx, l = 1 - r; and count_num, the
 * number of gradient columns per image column, split where a 256-column chunk boundary falls inside
 * an image column's run (base_scalar). */
typedef struct {
    int64_t *idx;
    float *l, *r;
    int32_t *count;
    int64_t wloop;
} w_tables;

static int build_w_tables(const plane_ctx *c, w_tables *t)
{
    const int64_t gw = c->gw;
    t->wloop = (gw + 255) / 256;
    int64_t padded = t->wloop * 256;
    t->idx = calloc((size_t)padded, sizeof *t->idx);
    t->l = calloc((size_t)padded, sizeof *t->l);
    t->r = calloc((size_t)padded, sizeof *t->r);
    t->count = calloc((size_t)(c->iw + t->wloop + 640), sizeof *t->count);
    if (!t->idx || !t->l || !t->r || !t->count) {
        return -1;
    }
    for (int64_t x = 0; x < padded; x++) {
        float v = (float)x;
        if (!c->align) {
            v = v + 0.5f;
            v = v * c->sw;
            v = v + -0.5f;
            v = v > 0.0f ? v : 0.0f;
        } else {
            v = v * c->sw;
        }
        t->idx[x] = (int64_t)floorf(v);
        t->r[x] = v - (float)t->idx[x];
        t->l[x] = 1.0f - t->r[x];
    }
    int64_t loop = 1, base = 0, prev = 0;
    for (int64_t x = 0; x < gw; x++) {
        int64_t s = t->idx[x];
        if (x < loop * 256) {
            prev = s;
        } else {
            loop++;
            if (prev == s) {
                base++;
            }
        }
        t->count[s + base]++;
    }
    return 0;
}

static void free_w_tables(w_tables *t)
{
    free(t->idx);
    free(t->l);
    free(t->r);
    free(t->count);
}

/* Mode 5 (normal_small, small_in_each_core, small_in_mul, small_in_add), one gradient row y of one
 * plane: products t = fl(w * g) (vmul) with w = fl(l * hl) etc. (vec_muls), added (vec_add) into two
 * UB image rows, then flushed atomically: ub to row hidx, ub2 to row hidx + hstride. */
static int mode5_row(const plane_ctx *c, const w_tables *t, int64_t y, float *ub, float *ub2, float *m, core_list *cl)
{
    const int64_t iw = c->iw;
    coord h = h_coord(c, y); /* scalar: the OPEN contraction applies */
    memset(ub, 0, (size_t)iw * sizeof *ub);
    memset(ub2, 0, (size_t)iw * sizeof *ub2);
    float *m0l = m, *m0r = m + 256, *m1l = m + 512, *m1r = m + 768;
    int64_t src_w = 0;
    for (int64_t L = 0; L < t->wloop; L++) {
        int64_t ncols = L != t->wloop - 1 ? 256 : c->gw - L * 256;
        for (int64_t j = 0; j < ncols; j++) {
            int64_t x = L * 256 + j;
            float g = c->g[y * c->gw + x];
            m0l[j] = (t->l[x] * h.l) * g;
            m0r[j] = (t->r[x] * h.l) * g;
            m1l[j] = (t->l[x] * h.r) * g;
            m1r[j] = (t->r[x] * h.r) * g;
        }
        int64_t begin = t->idx[L * 256], end = L != t->wloop - 1 ? t->idx[L * 256 + 255] + 1 : iw;
        int64_t dst = 0;
        for (int64_t tc = begin; tc < end; tc++) {
            int64_t rep = t->count[src_w];
            if (dst + rep > ncols) { /* never with the tables above; keeps a bad table inside the chunk */
                rep = ncols - dst;
            }
            if (tc < iw - 1) { /* one 32-lane add per column: cell tc gets the l term, tc + 1 the r term */
                for (int64_t k = 0; k < rep; k++) {
                    ub[tc] = m0l[dst + k] + ub[tc];
                    ub[tc + 1] = m0r[dst + k] + ub[tc + 1];
                    ub2[tc] = m1l[dst + k] + ub2[tc];
                    ub2[tc + 1] = m1r[dst + k] + ub2[tc + 1];
                }
            } else { /* the last image column: all l terms of this chunk's columns, then all r terms */
                for (int64_t k = 0; k < rep; k++) {
                    ub[tc] = m0l[dst + k] + ub[tc];
                }
                for (int64_t k = 0; k < rep; k++) {
                    ub[tc] = m0r[dst + k] + ub[tc];
                }
                for (int64_t k = 0; k < rep; k++) {
                    ub2[tc] = m1l[dst + k] + ub2[tc];
                }
                for (int64_t k = 0; k < rep; k++) {
                    ub2[tc] = m1r[dst + k] + ub2[tc];
                }
            }
            src_w++;
            dst += rep;
        }
    }
    if (emu_tbe5hd_push_flush(cl, h.idx, 0, iw, ub, iw) != 0 || emu_tbe5hd_push_flush(cl, h.idx + h.stride, 0, iw, ub2, iw) != 0) {
        return -1;
    }
    return 0;
}

/* Mode 6 (normal_big, big_each_core, big_in_loop2 / big_in_loop), one gradient row y of one plane:
 * per column in ascending order, axpy hl*wl into ub[widx], hl*wr into ub[widx + wstride], hr*wl and
 * hr*wr into ub2. Images narrower than tensor_c / 2 (output_loop == 0) flush the whole row once at
 * the end. Wider ones keep a window of U + 1 cells (U = tensor_c / 2 - 1) starting at loop_init * U:
 * a column whose cell leaves the window (check_next_loop) first flushes it (U + 1 cells) and moves
 * it to widx / U (get_output_loop_idx: local cell widx % U, or U for the last image column on a
 * window edge); every tensor_c-column gradient chunk ends with a flush of the window up to
 * widx + 1 + wstride. Each flush is an atomic add of ub to row hidx and of ub2 to row hidx + hstride. */
static int mode6_row(const plane_ctx *c, int64_t y, float *ub, float *ub2, core_list *cl)
{
    const int64_t iw = c->iw, max_w = c->tc, U = c->tc / 2 - 1;
    const int64_t cap = (iw > U + 1 ? iw : U + 1) + 2;
    coord h = h_coord(c, y);
    memset(ub, 0, (size_t)cap * sizeof *ub);
    memset(ub2, 0, (size_t)cap * sizeof *ub2);
    const float *grow = c->g + y * c->gw;
    if (iw / (c->tc / 2) == 0) {
        for (int64_t x = 0; x < c->gw; x++) {
            coord w = scalar_coord(x, c->sw, iw, c->align, c->fma);
            float g = grow[x];
            ub[w.idx] = axpy(ub[w.idx], g, h.l * w.l, c->fma);
            ub[w.idx + w.stride] = axpy(ub[w.idx + w.stride], g, h.l * w.r, c->fma);
            ub2[w.idx] = axpy(ub2[w.idx], g, h.r * w.l, c->fma);
            ub2[w.idx + w.stride] = axpy(ub2[w.idx + w.stride], g, h.r * w.r, c->fma);
        }
        if (emu_tbe5hd_push_flush(cl, h.idx, 0, iw, ub, iw) != 0 || emu_tbe5hd_push_flush(cl, h.idx + h.stride, 0, iw, ub2, iw) != 0) {
            return -1;
        }
        return 0;
    }
    int64_t loop_init = 0;
    for (int64_t base = 0; base < c->gw; base += max_w) {
        int64_t n = c->gw - base < max_w ? c->gw - base : max_w;
        coord w = {0, 0, 0.0f, 0.0f};
        for (int64_t x = base; x < base + n; x++) {
            w = scalar_coord(x, c->sw, iw, c->align, c->fma);
            int next = (w.idx == (loop_init + 1) * U && w.stride == 1) || w.idx > U * (loop_init + 1);
            int64_t local = w.idx != 0 && w.idx % U == 0 && w.stride == 0 ? U : w.idx % U;
            if (next) {
                if (emu_tbe5hd_push_flush(cl, h.idx, loop_init * U, U + 1, ub, iw) != 0 ||
                    emu_tbe5hd_push_flush(cl, h.idx + h.stride, loop_init * U, U + 1, ub2, iw) != 0) {
                    return -1;
                }
                loop_init = w.idx / U;
                memset(ub, 0, (size_t)cap * sizeof *ub);
                memset(ub2, 0, (size_t)cap * sizeof *ub2);
            }
            float g = grow[x];
            ub[local] = axpy(ub[local], g, h.l * w.l, c->fma);
            ub[local + w.stride] = axpy(ub[local + w.stride], g, h.l * w.r, c->fma);
            ub2[local] = axpy(ub2[local], g, h.r * w.l, c->fma);
            ub2[local + w.stride] = axpy(ub2[local + w.stride], g, h.r * w.r, c->fma);
        }
        int64_t last = w.idx + 1 + w.stride - loop_init * U;
        if (last > U + 1) {
            last = U + 1;
        }
        if (emu_tbe5hd_push_flush(cl, h.idx, loop_init * U, last, ub, iw) != 0 ||
            emu_tbe5hd_push_flush(cl, h.idx + h.stride, loop_init * U, last, ub2, iw) != 0) {
            return -1;
        }
        memset(ub, 0, (size_t)cap * sizeof *ub);
        memset(ub2, 0, (size_t)cap * sizeof *ub2);
    }
    return 0;
}

int emu_tbe5hd_run(const emu_op_params *p, char *msg, size_t msglen)
{
    plane_ctx c = {.p = p, .gh = p->outH, .gw = p->outW, .ih = p->inH, .iw = p->inW, .tc = p->tbe_tensor_c,
                   .align = p->align_corners, .fma = p->tbe_fma, .zw_fault = p->tbe_zw_fault};
    c.sh = tbe_scale(c.ih, c.gh, c.align);
    c.sw = tbe_scale(c.iw, c.gw, c.align);
    const int mode = p->tbe_mode;
    /* CalCoreInfo: modes 0, 5, 6 split the gradient rows: h_per_core = ceil(gh / core_num) rows each. */
    int64_t cores = p->tbe_cores > 0 ? p->tbe_cores : 1;
    int64_t hpc = (c.gh + cores - 1) / cores, need = (c.gh + hpc - 1) / hpc;
    int64_t wcap = (c.iw > c.tc / 2 ? c.iw : c.tc / 2) + 4;
    float *g = malloc((size_t)(c.gh * c.gw) * sizeof *g);
    float *o = malloc((size_t)(c.ih * c.iw) * sizeof *o);
    float *scratch = malloc((size_t)(2 * wcap + 1024 + 1024) * sizeof *scratch);
    core_list *cl = calloc((size_t)need, sizeof *cl);
    w_tables wt = {0};
    int rc = 0;
    if (!g || !o || !scratch || !cl || (mode == 5 && build_w_tables(&c, &wt) != 0)) {
        rc = -1;
    }
    c.g = g;
    c.o = o;
    const emu_view *gv = &p->go, *ov = &p->out;
    for (int64_t n = 0; n < p->N && rc == 0; n++) {
        for (int64_t ch = 0; ch < p->C && rc == 0; ch++) {
            int64_t gb = gv->offset + n * gv->strides[0] + ch * gv->strides[1];
            for (int64_t y = 0; y < c.gh; y++) {
                for (int64_t x = 0; x < c.gw; x++) {
                    g[y * c.gw + x] = emu_load(gv->data, gv->dtype, gb + y * gv->strides[2] + x * gv->strides[3]);
                }
            }
            memset(o, 0, (size_t)(c.ih * c.iw) * sizeof *o); /* the atomic output is zeroed before the launch */
            switch (mode) {
            case 0: memcpy(o, g, (size_t)(c.gh * c.gw) * sizeof *o); break; /* n2n: gh == ih, gw == iw */
            case 1:
            case 2: mode_one2n(&c, scratch); break;
            case 3: mode_n2one(&c); break;
            case 4: mode_small(&c); break;
            default:
                for (int64_t k = 0; k < need; k++) {
                    cl[k].nev = cl[k].npool = 0;
                }
                for (int64_t k = 0; k < need && rc == 0; k++) {
                    for (int64_t y = k * hpc; y < c.gh && y < (k + 1) * hpc && rc == 0; y++) {
                        rc = mode == 5 ? mode5_row(&c, &wt, y, scratch, scratch + wcap, scratch + 2 * wcap, &cl[k])
                                       : mode6_row(&c, y, scratch, scratch + wcap, &cl[k]);
                    }
                }
                if (rc == 0) {
                    uint64_t plane = (uint64_t)(n * p->C + ch);
                    emu_tbe5hd_merge_flushes(cl, need, o, c.iw, p->seed ^ (plane * 0xd1b54a32d192ed03ull));
                }
                break;
            }
            int64_t ob = ov->offset + n * ov->strides[0] + ch * ov->strides[1];
            for (int64_t y = 0; y < c.ih && rc == 0; y++) {
                for (int64_t x = 0; x < c.iw; x++) {
                    emu_store(ov->data, ov->dtype, ob + y * ov->strides[2] + x * ov->strides[3], o[y * c.iw + x]);
                }
            }
        }
    }
    for (int64_t k = 0; cl != NULL && k < need; k++) {
        free(cl[k].ev);
        free(cl[k].pool);
    }
    free(cl);
    free_w_tables(&wt);
    free(g);
    free(o);
    free(scratch);
    if (rc != 0) {
        snprintf(msg, msglen, "out of host memory for the kernel's scratch buffers");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    return 0;
}
