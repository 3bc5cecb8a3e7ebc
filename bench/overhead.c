/*
 * Per-call overhead of the CANN host emulation driven from C: the call sequence of issue 4 (what the
 * Deno binding made per call before it cached its descriptors, src/ffi/descriptors.ts) for one tiny
 * op, with tensors already on the device and `out` preallocated:
 *   aclCreateTensor x2, aclCreateIntArray x2, phase 1, workspace (cached, grown when asked for),
 *   phase 2, aclrtSynchronizeStream, aclDestroyTensor x2, aclDestroyIntArray x2.
 *
 * Sync variants:
 *   blocking  aclrtSynchronizeStream on the calling thread (what C code normally does);
 *   worker    aclrtSynchronizeStream handed to a persistent helper thread and waited for with a
 *             mutex/condvar (the shape of Deno's `nonblocking: true` FFI call the library uses);
 *   enqueue   no sync per call, one aclrtSynchronizeStream after the timed loop (included).
 * Two more, not the sequence but what the library did once it cached descriptors, and what it
 * does since it also reuses executors:
 *   enqueue-cached  as enqueue, with the two aclTensors and two aclIntArrays created once before
 *             the runs and destroyed after them (each call: phase 1, workspace, phase 2);
 *   enqueue-reused  as enqueue-cached, with phase 1 run once too and its executor made repeatable
 *             (aclSetAclOpExecutorRepeatable; destroyed after the runs): each call is phase 2 only.
 *
 * usage: overhead [iterations [variant,...]]   prints one JSON line per (op, variant): median us per
 * call of 5 runs; the optional comma-separated list picks variants (default: all).
 * Build: make -s -C bench (links native/build with an rpath).
 */
#include "cann_subset.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        int rc_ = (int)(expr);                                                                     \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s -> %d (%s)\n", __FILE__, __LINE__, #expr, rc_,              \
                    aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum op { NEAREST_1D, NEAREST_2D, BILINEAR_2D };
static const char *const OP_NAMES[] = {"nearestExact1d", "nearestExact2d", "bilinear2d"};
enum variant { BLOCKING, WORKER, ENQUEUE, ENQUEUE_CACHED, ENQUEUE_REUSED };
static const char *const VARIANT_NAMES[] = {"blocking", "worker", "enqueue", "enqueue-cached", "enqueue-reused"};

static aclrtStream stream;
static void *grad_dev, *out_dev; /* 4 floats and 1 float (2 floats for 1d) */
static void *workspace;
static uint64_t workspace_bytes;

/* ---- a persistent sync thread (variant "worker") ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int requested, completed, sync_status;

static void *sync_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (requested == completed) {
            pthread_cond_wait(&cv, &mu);
        }
        if (requested < 0) {
            break;
        }
        pthread_mutex_unlock(&mu);
        int status = aclrtSynchronizeStream(stream);
        pthread_mutex_lock(&mu);
        sync_status = status;
        completed = requested;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int sync_on_worker(void)
{
    pthread_mutex_lock(&mu);
    int target = ++requested;
    pthread_cond_broadcast(&cv);
    while (completed != target) {
        pthread_cond_wait(&cv, &mu);
    }
    int status = sync_status;
    pthread_mutex_unlock(&mu);
    return status;
}

/* ---- one call, exactly the sequence ---- */
typedef struct {
    aclTensor *grad, *out;
    aclIntArray *output_size, *input_size;
} descriptors;

static descriptors create_descriptors(enum op op)
{
    int64_t dims[4], strides[4], storage[1], out_dims[4], out_strides[4], out_storage[1];
    int rank = op == NEAREST_1D ? 3 : 4;
    if (op == NEAREST_1D) {
        int64_t g[3] = {1, 1, 2}, gs[3] = {2, 2, 1}, o[3] = {1, 1, 1}, os[3] = {1, 1, 1};
        memcpy(dims, g, sizeof g);
        memcpy(strides, gs, sizeof gs);
        memcpy(out_dims, o, sizeof o);
        memcpy(out_strides, os, sizeof os);
        storage[0] = 2;
    } else {
        int64_t g[4] = {1, 1, 2, 2}, gs[4] = {4, 4, 2, 1}, o[4] = {1, 1, 1, 1}, os[4] = {1, 1, 1, 1};
        memcpy(dims, g, sizeof g);
        memcpy(strides, gs, sizeof gs);
        memcpy(out_dims, o, sizeof o);
        memcpy(out_strides, os, sizeof os);
        storage[0] = 4;
    }
    out_storage[0] = 1;
    aclFormat format = rank == 3 ? ACL_FORMAT_NCL : ACL_FORMAT_NCHW;
    descriptors d;
    d.grad = aclCreateTensor(dims, (uint64_t)rank, ACL_FLOAT, strides, 0, format, storage, 1, grad_dev);
    d.out = aclCreateTensor(out_dims, (uint64_t)rank, ACL_FLOAT, out_strides, 0, format, out_storage, 1,
                            out_dev);
    d.output_size = aclCreateIntArray(dims + 2, (uint64_t)(rank - 2));
    d.input_size = aclCreateIntArray(out_dims, (uint64_t)rank);
    if (d.grad == NULL || d.out == NULL || d.output_size == NULL || d.input_size == NULL) {
        fprintf(stderr, "aclCreateTensor/aclCreateIntArray failed\n");
        exit(1);
    }
    return d;
}

static void destroy_descriptors(const descriptors *d)
{
    CHECK(aclDestroyTensor(d->grad));
    CHECK(aclDestroyTensor(d->out));
    CHECK(aclDestroyIntArray(d->output_size));
    CHECK(aclDestroyIntArray(d->input_size));
}

/* Phase 1 (its workspace size in *ws) and the workspace, grown when asked for. */
static aclOpExecutor *phase1(enum op op, const descriptors *d, uint64_t *ws_out)
{
    aclTensor *grad = d->grad, *out = d->out;
    aclIntArray *output_size = d->output_size, *input_size = d->input_size;
    uint64_t ws = 0;
    aclOpExecutor *executor = NULL;
    if (op == NEAREST_1D) {
        CHECK(aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize(grad, output_size, input_size, 0.0, out,
                                                                  &ws, &executor));
    } else if (op == NEAREST_2D) {
        CHECK(aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize(grad, output_size, input_size, 0.0, 0.0,
                                                                  out, &ws, &executor));
    } else {
        CHECK(aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize(grad, output_size, input_size, false, 0.0,
                                                                0.0, out, &ws, &executor));
    }
    if (ws > workspace_bytes) { /* grow-only cache, as the binding does */
        if (workspace != NULL) {
            CHECK(aclrtSynchronizeStream(stream));
            CHECK(aclrtFree(workspace));
        }
        CHECK(aclrtMalloc(&workspace, ws, ACL_MEM_MALLOC_HUGE_FIRST));
        workspace_bytes = ws;
    }
    *ws_out = ws;
    return executor;
}

/* Phase 2 on the cached workspace, and the variant's sync. */
static void phase2(enum op op, enum variant variant, aclOpExecutor *executor, uint64_t ws)
{
    void *w = ws > 0 ? workspace : NULL;
    if (op == NEAREST_1D) {
        CHECK(aclnnUpsampleNearestExact1dBackward(w, ws, executor, stream));
    } else if (op == NEAREST_2D) {
        CHECK(aclnnUpsampleNearestExact2dBackward(w, ws, executor, stream));
    } else {
        CHECK(aclnnUpsampleBilinear2dBackwardV2(w, ws, executor, stream));
    }
    if (variant == BLOCKING) {
        CHECK(aclrtSynchronizeStream(stream));
    } else if (variant == WORKER) {
        CHECK(sync_on_worker());
    }
}

/* Phase 1, workspace, phase 2, and the variant's sync. */
static void launch(enum op op, enum variant variant, const descriptors *d)
{
    uint64_t ws = 0;
    aclOpExecutor *executor = phase1(op, d, &ws);
    phase2(op, variant, executor, ws);
}

/* A repeatable executor made once, with its workspace size. */
typedef struct {
    aclOpExecutor *executor;
    uint64_t ws;
} reused;

/* The sequence: create x4, launch, sync, destroy x4 (`cached`: the descriptors are given). */
static void one_call(enum op op, enum variant variant, const descriptors *cached, const reused *r)
{
    if (r != NULL) {
        phase2(op, variant, r->executor, r->ws);
        return;
    }
    if (cached != NULL) {
        launch(op, variant, cached);
        return;
    }
    descriptors d = create_descriptors(op);
    launch(op, variant, &d);
    destroy_descriptors(&d);
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over 5 runs of `iterations` calls, in microseconds per call. */
static double measure(enum op op, enum variant variant, int iterations)
{
    double runs[5];
    descriptors kept;
    const descriptors *cached = NULL;
    reused made;
    const reused *reuse = NULL;
    if (variant == ENQUEUE_CACHED || variant == ENQUEUE_REUSED) {
        kept = create_descriptors(op);
        cached = &kept;
    }
    if (variant == ENQUEUE_REUSED) {
        made.executor = phase1(op, cached, &made.ws);
        CHECK(aclSetAclOpExecutorRepeatable(made.executor));
        reuse = &made;
    }
    for (int i = 0; i < iterations / 4; i++) { /* warm-up */
        one_call(op, variant, cached, reuse);
    }
    CHECK(aclrtSynchronizeStream(stream));
    for (int r = 0; r < 5; r++) {
        double start = now_us();
        for (int i = 0; i < iterations; i++) {
            one_call(op, variant, cached, reuse);
        }
        if (variant >= ENQUEUE) {
            CHECK(aclrtSynchronizeStream(stream));
        }
        runs[r] = (now_us() - start) / iterations;
    }
    if (reuse != NULL) {
        CHECK(aclDestroyAclOpExecutor(reuse->executor)); /* the runs ended with a sync */
    }
    if (cached != NULL) {
        destroy_descriptors(cached);
    }
    qsort(runs, 5, sizeof runs[0], cmp_double);
    return runs[2];
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 20000;
    if (iterations <= 0) {
        fprintf(stderr, "usage: overhead [iterations > 0 [variant,...]]\n");
        return 2;
    }
    int selected[ENQUEUE_REUSED + 1];
    for (int v = BLOCKING; v <= ENQUEUE_REUSED; v++) {
        selected[v] = argc <= 2; /* no list: every variant */
    }
    if (argc > 2) {
        char list[256];
        snprintf(list, sizeof list, "%s", argv[2]);
        for (char *save = NULL, *name = strtok_r(list, ",", &save); name != NULL;
             name = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (int v = BLOCKING; v <= ENQUEUE_REUSED; v++) {
                if (strcmp(name, VARIANT_NAMES[v]) == 0) {
                    selected[v] = found = 1;
                }
            }
            if (!found) {
                fprintf(stderr, "overhead: unknown variant \"%s\"\n", name);
                return 2;
            }
        }
    }
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtCreateStream(&stream));
    float host[4] = {1, 2, 3, 4};
    CHECK(aclrtMalloc(&grad_dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&out_dev, 2 * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(grad_dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE));
    pthread_t worker;
    if (pthread_create(&worker, NULL, sync_worker, NULL) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    for (int op = NEAREST_1D; op <= BILINEAR_2D; op++) {
        for (int variant = BLOCKING; variant <= ENQUEUE_REUSED; variant++) {
            if (!selected[variant]) {
                continue;
            }
            double us = measure((enum op)op, (enum variant)variant, iterations);
            printf("{\"side\":\"c\",\"op\":\"%s\",\"variant\":\"%s\",\"us\":%.3f,\"iterations\":%d}\n",
                   OP_NAMES[op], VARIANT_NAMES[variant], us, iterations);
            fflush(stdout);
        }
    }
    pthread_mutex_lock(&mu);
    requested = -1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(worker, NULL);
    CHECK(aclrtSynchronizeStream(stream));
    if (workspace != NULL) {
        CHECK(aclrtFree(workspace));
    }
    CHECK(aclrtFree(grad_dev));
    CHECK(aclrtFree(out_dev));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}
