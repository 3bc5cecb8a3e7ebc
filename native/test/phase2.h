/* Phase 2 of an op as the C tests run it (ops.c, ops950.h, hostrules.c, smoke.c). */
#ifndef ACLEMU_TEST_PHASE2_H
#define ACLEMU_TEST_PHASE2_H

#include "cann_subset.h"
#include "check.h"

typedef aclnnStatus (*phase2_fn)(void *, uint64_t, aclOpExecutor *, aclrtStream);

/* Phase 2 on `stream` with a workspace when one is asked for, then a synchronize: the first failure. */
static inline int run_phase2_on(aclrtStream stream, phase2_fn fn, uint64_t ws, aclOpExecutor *ex)
{
    void *w = NULL;
    if (ws > 0) {
        EXPECT_STATUS(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), 0);
    }
    int rc = fn(w, ws, ex, stream);
    if (rc == 0) {
        rc = aclrtSynchronizeStream(stream);
    }
    if (w != NULL) {
        EXPECT_STATUS(aclrtFree(w), 0);
    }
    return rc;
}

#endif
