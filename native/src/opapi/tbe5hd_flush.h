/* The atomic modes (5, 6) of ResizeBilinearV2Grad5HD: each core's flushes of partial rows, kept in
 * program order, and their merge into the result in an order drawn per launch (tbe5hd_flush.c). */
#ifndef ACLEMU_TBE5HD_FLUSH_H
#define ACLEMU_TBE5HD_FLUSH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t row, col, n;
    size_t off;
} flush_ev;

/* One core's flushes: row, first column and length of each, their values in a shared pool. */
typedef struct {
    flush_ev *ev;
    size_t nev, cap;
    float *pool;
    size_t npool, cappool;
    size_t next; /* merge cursor */
} core_list;

/* Appends a flush of n cells of data at (row, col), clipped to the row's iw cells; -1: no memory. */
int emu_tbe5hd_push_flush(core_list *cl, int64_t row, int64_t col, int64_t n, const float *data, int64_t iw);
/* Adds every core's flushes into o (rows of iw cells) in one interleaving drawn from seed. */
void emu_tbe5hd_merge_flushes(core_list *cl, int64_t ncores, float *o, int64_t iw, uint64_t seed);
/* Frees the lists of ncores cores and the array. */
void emu_tbe5hd_free_lists(core_list *cl, int64_t ncores);

#endif
