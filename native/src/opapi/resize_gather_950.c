/*
 * ResizeBilinearV2Grad's deterministic SIMT gathers on Ascend 950: one thread per result cell
 * (n, c, H, W) sums the gradient positions whose forward sample lands within one cell of it, into a
 * float32 accumulator starting at 0, gradient rows (inY) outer and columns (inX) inner, both
 * ascending, and stores it cast once to y's dtype (RNE assumed). Gradient elements are read in their
 * own dtype and widened (grads may be FLOAT with a FLOAT16 / BF16 y). Sources, ops-cv
 * image/resize_bilinear_v2_grad/op_kernel/arch35/:
 *  - resize_bilinear_v2_grad_simt_determine.h (SimtCompute), DETERMINE. With off = 0.5 (half pixel)
 *    or 0, s / inv the tiling's scale and inverse scale (resize_grad_950.c):
 *      inYStart  = max(0, (int64)ceil(((H - 1) + off) * invH - off))
 *      outYStart = (inYStart + off) * sH - off
 *      while outY < H + 1 and inY < gradH:   (the same for X inside)
 *        yLerp = 1 - |clamp(outY, 0, resultH - 1) - H|, xLerp likewise
 *        acc += g * yLerp * xLerp           ((g * yLerp) * xLerp, then the add)
 *        outX += sW; inX++                  (a running float32 sum)
 *      outY += sH; inY++
 *  - resize_bilinear_v2_grad_simt_determine_scales.h (SimtScalesCompute, CalcSourceIndex,
 *    CalcInternalPoint, CalcHBoundaryPoint, CalcWBoundaryPoint, CalcCornerPoint), DETERMINE_SCALES:
 *    the same start, but each step recomputes the coordinate, outY = sH * (inY + 0.5) - 0.5 (half
 *    pixel; else sH * inY); inner cells (H and W both off the edges) are summed as above; on an edge
 *    row (H = 0 or resultH - 1) the row loop runs to the gradient's end without the outY bound, on an
 *    edge column the column loop likewise, and a term counts only when its floor index is the cell:
 *      YT = min(floor(clamp(outY)), resultH - 1), lepy = {yLerp, clamp(outY) - YT}
 *      edge column: acc += (g * lepx[j]) * yLerp for XT + j == W
 *      edge row:    acc += (g * lepy[i]) * xLerp for YT + i == H
 *      corner:      acc += (g * lepx[j]) * lepy[i] for YT + i == H and XT + j == W
 *  - Contraction (the emulation's switch, fp950.h): the start expressions `(t) * inv - off` and
 *    `(t) * s - off`, CalcSourceIndex's `s * (i + 0.5) - 0.5` and `acc += a * b * c` (fmaf(a * b, c,
 *    acc)) fuse when contracted.
 */
#include "fp950.h"

typedef struct {
    const emu_op_params *p;
    int64_t n, c, H, W;
} cell;

static float grad_at(const cell *k, int64_t y, int64_t x)
{
    const emu_view *g = &k->p->go;
    return emu_load(g->data, g->dtype, emu_at(g, k->n, k->c, y, x));
}

/* inStart and outStart of one dimension (both kernels' SimtCompute preamble). */
static int64_t start_index(float idx, float inv, float off, int fma)
{
    float x = ceilf(emu_madd((idx - 1.0f) + off, inv, -off, fma));
    int64_t i = emu_f2i(x);
    return i > 0 ? i : 0;
}

/* CalcSourceIndex */
static float source_index(float s, int64_t i, int half_pixel, int fma)
{
    return half_pixel ? emu_madd(s, (float)i + 0.5f, -0.5f, fma) : s * (float)i;
}

static float clamp_coord(float v, int64_t len) { return fmaxf(0.0f, fminf(v, (float)len - 1.0f)); }

/* DETERMINE: running coordinate sums. */
static float determine(const cell *k, int64_t y0, float oy0, int64_t x0, float ox0)
{
    const emu_op_params *p = k->p;
    const float H = (float)k->H, W = (float)k->W;
    float acc = 0.0f, outY = oy0;
    for (int64_t inY = y0; outY < H + 1.0f && inY < p->outH; inY++) {
        float outX = ox0;
        for (int64_t inX = x0; outX < W + 1.0f && inX < p->outW; inX++) {
            float yl = 1.0f - fabsf(clamp_coord(outY, p->inH) - H);
            float xl = 1.0f - fabsf(clamp_coord(outX, p->inW) - W);
            acc = emu_madd(grad_at(k, inY, inX) * yl, xl, acc, p->fma);
            outX += p->sW;
        }
        outY += p->sH;
    }
    return acc;
}

/* DETERMINE_SCALES: the four cell classes of SimtScalesCompute in one loop nest. edgeY / edgeX drop
 * that dimension's coordinate bound and select terms by floor index instead of by distance. */
static float determine_scales(const cell *k, int64_t y0, float oy0, int64_t x0, float ox0)
{
    const emu_op_params *p = k->p;
    const float H = (float)k->H, W = (float)k->W;
    const int edgeY = k->H == 0 || k->H == p->inH - 1, edgeX = k->W == 0 || k->W == p->inW - 1;
    float acc = 0.0f, outY = oy0;
    for (int64_t inY = y0; (edgeY || outY < H + 1.0f) && inY < p->outH;) {
        float outX = ox0;
        for (int64_t inX = x0; (edgeX || outX < W + 1.0f) && inX < p->outW;) {
            float g = grad_at(k, inY, inX);
            float cy = clamp_coord(outY, p->inH), cx = clamp_coord(outX, p->inW);
            float yl = 1.0f - fabsf(cy - H), xl = 1.0f - fabsf(cx - W);
            float yt = fminf(floorf(cy), (float)(p->inH - 1)), xt = fminf(floorf(cx), (float)(p->inW - 1));
            float lepy[2] = {yl, cy - yt}, lepx[2] = {xl, cx - xt};
            if (!edgeY && !edgeX) { /* CalcInternalPoint */
                acc = emu_madd(g * yl, xl, acc, p->fma);
            } else if (!edgeY) { /* CalcWBoundaryPoint */
                for (int j = 0; j < 2; j++) {
                    if (xt + (float)j == W) {
                        acc = emu_madd(g * lepx[j], yl, acc, p->fma);
                    }
                }
            } else if (!edgeX) { /* CalcHBoundaryPoint */
                for (int i = 0; i < 2; i++) {
                    if (yt + (float)i == H) {
                        acc = emu_madd(g * lepy[i], xl, acc, p->fma);
                    }
                }
            } else { /* CalcCornerPoint */
                for (int i = 0; i < 2; i++) {
                    for (int j = 0; j < 2; j++) {
                        if (yt + (float)i == H && xt + (float)j == W) {
                            acc = emu_madd(g * lepx[j], lepy[i], acc, p->fma);
                        }
                    }
                }
            }
            inX++;
            outX = source_index(p->sW, inX, p->half_pixel, p->fma);
        }
        inY++;
        outY = source_index(p->sH, inY, p->half_pixel, p->fma);
    }
    return acc;
}

int emu_resize950_gather_run(const emu_op_params *p)
{
    const emu_view *o = &p->out;
    const float off = p->half_pixel ? 0.5f : 0.0f;
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t c = 0; c < p->C; c++) {
            for (int64_t h = 0; h < p->inH; h++) {
                for (int64_t w = 0; w < p->inW; w++) {
                    cell k = {p, n, c, h, w};
                    int64_t y0 = start_index((float)h, p->invH, off, p->fma);
                    int64_t x0 = start_index((float)w, p->invW, off, p->fma);
                    float oy0 = emu_madd((float)y0 + off, p->sH, -off, p->fma);
                    float ox0 = emu_madd((float)x0 + off, p->sW, -off, p->fma);
                    float acc = p->kernel == EMU_KERNEL_RB950_DETERMINE ? determine(&k, y0, oy0, x0, ox0)
                                                                        : determine_scales(&k, y0, oy0, x0, ox0);
                    emu_store(o->data, o->dtype, emu_at(o, n, c, h, w), acc);
                }
            }
        }
    }
    return 0;
}
