/*
 * The atomic modes of ResizeBilinearV2Grad5HD (normal_small, normal_big of resize_bilinear_v2_grad.py:
 * set_atomic_add(1) around each row's data_move to gm): per core the flushes of partial rows in program
 * order, and their merge into the result in an order the source does not fix.
 */
#include "tbe5hd_flush.h"

#include <stdlib.h>
#include <string.h>


int emu_tbe5hd_push_flush(core_list *cl, int64_t row, int64_t col, int64_t n, const float *data, int64_t iw)
{
    /* Cells of a flush window past the row's end only ever hold +0 (the UB is zeroed after every
     * flush), and +0 added to a gm cell changes nothing: clip to the row. */
    if (col < 0) {
        data -= col;
        n += col;
        col = 0;
    }
    if (col + n > iw) {
        n = iw - col;
    }
    if (n <= 0) {
        return 0;
    }
    if (cl->nev == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 64;
        flush_ev *e = realloc(cl->ev, cap * sizeof *e);
        if (e == NULL) {
            return -1;
        }
        cl->ev = e;
        cl->cap = cap;
    }
    if (cl->npool + (size_t)n > cl->cappool) {
        size_t cap = cl->cappool ? cl->cappool * 2 : 4096;
        while (cap < cl->npool + (size_t)n) {
            cap *= 2;
        }
        float *pool = realloc(cl->pool, cap * sizeof *pool);
        if (pool == NULL) {
            return -1;
        }
        cl->pool = pool;
        cl->cappool = cap;
    }
    memcpy(cl->pool + cl->npool, data, (size_t)n * sizeof *data);
    cl->ev[cl->nev++] = (flush_ev){row, col, n, cl->npool};
    cl->npool += (size_t)n;
    return 0;
}

static uint64_t next64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/*
 * The cores run concurrently and the source fixes no order between their atomic adds: the cores'
 * lists are interleaved in a uniformly drawn merge (each step takes the next flush of a core chosen
 * with probability proportional to its remaining flushes), drawn from the launch's seed and the
 * plane. Each core's own flushes stay in program order; with one core the order is the program's.
 * gm (float32, zeroed before the launch) += each flushed partial.
 */
void emu_tbe5hd_merge_flushes(core_list *cl, int64_t ncores, float *o, int64_t iw, uint64_t seed)
{
    size_t remaining = 0;
    for (int64_t k = 0; k < ncores; k++) {
        cl[k].next = 0;
        remaining += cl[k].nev;
    }
    uint64_t rs = seed;
    while (remaining > 0) {
        uint64_t pick = next64(&rs) % remaining;
        int64_t k = 0;
        for (; k < ncores; k++) {
            size_t left = cl[k].nev - cl[k].next;
            if (pick < left) {
                break;
            }
            pick -= left;
        }
        const flush_ev *e = &cl[k].ev[cl[k].next++];
        float *dst = o + e->row * iw + e->col;
        const float *src = cl[k].pool + e->off;
        for (int64_t i = 0; i < e->n; i++) {
            dst[i] = dst[i] + src[i];
        }
        remaining--;
    }
}

void emu_tbe5hd_free_lists(core_list *cl, int64_t ncores)
{
    for (int64_t k = 0; k < ncores; k++) {
        free(cl[k].ev);
        free(cl[k].pool);
    }
    free(cl);
}
