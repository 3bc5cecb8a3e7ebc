/*
 * Streams: one worker thread per stream running a FIFO of tasks in order. aclrtSynchronizeStream
 * waits until the FIFO has drained (it needs no thread context: the stream knows its device, and
 * callers sync from pool threads). A task that fails, or whose memory was freed before it ran,
 * leaves a sticky error that the next synchronize reports, like an asynchronous device fault.
 * Handles are checked against a table of live streams; a reference count keeps a stream alive
 * while a synchronize is waiting on it during a concurrent destroy.
 *
 * Every task gets a sequence number in its stream. A task that has run stays on the stream's `done`
 * list (with its device ranges) until the host observes it complete: aclrtSynchronizeStream,
 * aclrtDestroyStream, or an event recorded after it being synchronized / queried COMPLETE. Until then
 * the host cannot know the device is done with its memory, so aclrtFree of a range it covers counts
 * as a referenced free (aclemuReferencedFrees) whether or not the task happened to run already: the
 * count does not depend on timing.
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct emu_node {
    struct emu_node *next;
    uint64_t seq;
    emu_task task;
} emu_node;

typedef struct emu_stream {
    struct emu_stream *next; /* live list */
    int32_t device;
    int refs; /* guarded by streams_mu */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    emu_node *head, *tail;  /* queued */
    emu_node *running;      /* the task the worker is running, or NULL */
    emu_node *done, *done_tail; /* run, not yet observed complete by the host */
    uint64_t next_seq;
    uint64_t observed_seq;  /* the host has seen every task up to here complete */
    int busy, stopping;
    int err;
    char errmsg[768];
} emu_stream;

static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static emu_stream *live;
static int64_t live_count;

int64_t emu_stream_live_count(void)
{
    pthread_mutex_lock(&streams_mu);
    int64_t n = live_count;
    pthread_mutex_unlock(&streams_mu);
    return n;
}

static emu_stream *acquire(aclrtStream handle)
{
    pthread_mutex_lock(&streams_mu);
    emu_stream *s = live;
    while (s != NULL && s != (emu_stream *)handle) {
        s = s->next;
    }
    if (s != NULL) {
        s->refs++;
    }
    pthread_mutex_unlock(&streams_mu);
    return s;
}

/* Frees the done tasks up to `seq` (all when UINT64_MAX). Caller holds s->mu. */
static void observe_locked(emu_stream *s, uint64_t seq)
{
    if (seq > s->observed_seq) {
        s->observed_seq = seq; /* a task still finishing (an event's own marker) is retired at once */
    }
    while (s->done != NULL && s->done->seq <= seq) {
        emu_node *n = s->done;
        s->done = n->next;
        free(n);
    }
    if (s->done == NULL) {
        s->done_tail = NULL;
    }
}

static void release(emu_stream *s)
{
    pthread_mutex_lock(&streams_mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&streams_mu);
    if (last) {
        observe_locked(s, UINT64_MAX);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->idle);
        free(s);
    }
}

static void run_task(emu_stream *s, emu_node *n)
{
    emu_task *t = &n->task;
    int64_t us = (t->flags & EMU_TASK_MARKER) ? 0 : emu_stream_delay_us();
    if (us > 0) {
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    char msg[512] = "";
    int status = 0;
    emu_mem_read_lock();
    for (int i = 0; i < t->nranges && status == 0; i++) {
        if (!emu_mem_range_ok_locked(t->ranges[i].ptr, t->ranges[i].len)) {
            snprintf(msg, sizeof msg, "%s range [%p, +%llu bytes) is no longer inside a live device allocation "
                     "when the task ran (freed before the stream reached it?)",
                     t->ranges[i].what, t->ranges[i].ptr, (unsigned long long)t->ranges[i].len);
            status = ACL_ERROR_RT_AICORE_EXCEPTION;
        }
    }
    if (status == 0) {
        status = t->fn(t->arg, msg, sizeof msg);
    }
    emu_mem_unlock();
    if (t->release != NULL) {
        t->release(t->arg);
    }
    if (status != 0) {
        pthread_mutex_lock(&s->mu);
        if (s->err == 0) { /* keep the first failure, like a device exception */
            s->err = status;
            snprintf(s->errmsg, sizeof s->errmsg, "task %s failed with %d: %s", t->name, status, msg);
        }
        pthread_mutex_unlock(&s->mu);
    }
}

static void *worker(void *arg)
{
    emu_stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->head == NULL && !s->stopping) {
            pthread_cond_wait(&s->wake, &s->mu);
        }
        if (s->head == NULL) {
            break; /* stopping and drained */
        }
        emu_node *n = s->head;
        s->head = n->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        s->busy = 1;
        s->running = n;
        pthread_mutex_unlock(&s->mu);
        run_task(s, n);
        pthread_mutex_lock(&s->mu);
        s->running = NULL;
        n->next = NULL;
        if (n->seq <= s->observed_seq) {
            free(n);
        } else {
            if (s->done_tail != NULL) {
                s->done_tail->next = n;
            } else {
                s->done = n;
            }
            s->done_tail = n;
        }
        s->busy = 0;
        if (s->head == NULL) {
            pthread_cond_broadcast(&s->idle);
        }
    }
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

aclError aclrtCreateStream(aclrtStream *stream)
{
    int rc = emu_require_init("aclrtCreateStream");
    if (rc != 0) {
        return rc;
    }
    if (stream == NULL) {
        aclemu_set_error("aclrtCreateStream: stream is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    int32_t device;
    int64_t det;
    if (aclemu_current_context(&device, &det) != 0) {
        aclemu_set_error("aclrtCreateStream: the calling thread has no current context "
                         "(call aclrtSetDevice first)");
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    emu_stream *s = calloc(1, sizeof *s);
    if (s == NULL) {
        aclemu_set_error("aclrtCreateStream: out of host memory");
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    s->device = device;
    s->refs = 1; /* the live table's reference */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->idle);
        free(s);
        aclemu_set_error("aclrtCreateStream: cannot start the stream worker thread");
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    pthread_mutex_lock(&streams_mu);
    s->next = live;
    live = s;
    live_count++;
    pthread_mutex_unlock(&streams_mu);
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    int rc = emu_require_init("aclrtDestroyStream");
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&streams_mu);
    emu_stream **pp = &live;
    while (*pp != NULL && *pp != (emu_stream *)stream) {
        pp = &(*pp)->next;
    }
    emu_stream *s = *pp;
    if (s != NULL) {
        *pp = s->next;
        live_count--;
    }
    pthread_mutex_unlock(&streams_mu);
    if (s == NULL) {
        aclemu_set_error("aclrtDestroyStream: stream %p is not a live stream (never created, or already "
                         "destroyed)",
                         stream);
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    pthread_mutex_lock(&s->mu);
    s->stopping = 1; /* later enqueues are refused; the worker drains what is queued, then exits */
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    release(s);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
    int rc = emu_require_init("aclrtSynchronizeStream");
    if (rc != 0) {
        return rc;
    }
    emu_stream *s = acquire(stream);
    if (s == NULL) {
        aclemu_set_error("aclrtSynchronizeStream: stream %p is not a live stream%s", stream,
                         stream == NULL ? " (the NULL default stream is not emulated)" : "");
        return ACL_ERROR_RT_INVALID_HANDLE;
    }
    char msg[sizeof s->errmsg];
    pthread_mutex_lock(&s->mu);
    while (s->head != NULL || s->busy) {
        pthread_cond_wait(&s->idle, &s->mu);
    }
    /* An injected fault wins and leaves any real task error for the next synchronize. */
    observe_locked(s, s->next_seq); /* drained: the host has seen every task so far complete */
    int32_t fault = emu_fault_take_sync();
    int err = fault != 0 ? 0 : s->err;
    if (err != 0) {
        s->err = 0;
        memcpy(msg, s->errmsg, sizeof msg);
    }
    pthread_mutex_unlock(&s->mu);
    release(s);

    if (fault != 0) {
        aclemu_set_error("aclrtSynchronizeStream: stream %p failed with %d (fault injected by "
                         "aclemuFailNextSync)",
                         stream, fault);
        return fault;
    }
    if (err != 0) {
        aclemu_set_error("aclrtSynchronizeStream: stream %p: %s", stream, msg);
        return err;
    }
    return ACL_SUCCESS;
}

EMU_API int32_t aclemu_stream_device(aclrtStream stream)
{
    emu_stream *s = acquire(stream);
    if (s == NULL) {
        return -1;
    }
    int32_t d = s->device;
    release(s);
    return d;
}

EMU_API int aclemu_stream_enqueue(aclrtStream stream, const emu_task *task)
{
    uint64_t seq;
    return emu_stream_enqueue_seq(stream, task, &seq);
}

int emu_stream_enqueue_seq(aclrtStream stream, const emu_task *task, uint64_t *seq)
{
    emu_stream *s = acquire(stream);
    emu_node *n = s != NULL ? malloc(sizeof *n) : NULL;
    int rc = 0;
    if (s == NULL) {
        aclemu_set_error("%s: stream %p is not a live stream", task->name, stream);
        rc = ACL_ERROR_RT_INVALID_HANDLE;
    } else if (n == NULL) {
        aclemu_set_error("%s: out of host memory for the stream task", task->name);
        rc = ACL_ERROR_RT_INTERNAL_ERROR;
    } else {
        n->next = NULL;
        n->task = *task;
        pthread_mutex_lock(&s->mu);
        if (s->stopping) {
            rc = ACL_ERROR_RT_INVALID_HANDLE;
        } else {
            n->seq = *seq = ++s->next_seq;
            if (s->tail != NULL) {
                s->tail->next = n;
            } else {
                s->head = n;
            }
            s->tail = n;
            pthread_cond_signal(&s->wake);
        }
        pthread_mutex_unlock(&s->mu);
        if (rc != 0) {
            aclemu_set_error("%s: stream %p is being destroyed", task->name, stream);
            free(n);
        }
    }
    if (s != NULL) {
        release(s);
    }
    if (rc != 0 && task->release != NULL) {
        task->release(task->arg);
    }
    return rc;
}

void emu_stream_observe(aclrtStream stream, uint64_t seq)
{
    emu_stream *s = acquire(stream);
    if (s != NULL) {
        pthread_mutex_lock(&s->mu);
        observe_locked(s, seq);
        pthread_mutex_unlock(&s->mu);
        release(s);
    }
}

/* The first range of `list` (and what follows) overlapping [base, base + size). */
static const emu_range *find_overlap(const emu_node *n, uintptr_t base, uint64_t size, const emu_node **task)
{
    for (; n != NULL; n = n->next) {
        for (int i = 0; i < n->task.nranges; i++) {
            uintptr_t lo = (uintptr_t)n->task.ranges[i].ptr;
            if (lo < base + size && base < lo + n->task.ranges[i].len) {
                *task = n;
                return &n->task.ranges[i];
            }
        }
    }
    return NULL;
}

int emu_stream_references(uintptr_t base, uint64_t size, char *what, size_t whatlen)
{
    int found = 0;
    pthread_mutex_lock(&streams_mu);
    for (emu_stream *s = live; s != NULL && !found; s = s->next) {
        pthread_mutex_lock(&s->mu);
        const emu_node *running = s->running != NULL && s->running->seq > s->observed_seq ? s->running : NULL;
        const emu_node *lists[3] = {running, s->head, s->done};
        static const char *const states[3] = {"running", "queued", "run but not synchronized"};
        for (int k = 0; k < 3 && !found; k++) {
            const emu_node *task = NULL;
            /* `running` is a single node: look at it alone (its next pointer belongs to the queue) */
            const emu_range *r = NULL;
            if (k == 0) {
                if (lists[0] != NULL) {
                    emu_node one = *lists[0];
                    one.next = NULL;
                    r = find_overlap(&one, base, size, &task);
                    task = lists[0];
                }
            } else {
                r = find_overlap(lists[k], base, size, &task);
            }
            if (r != NULL) {
                found = 1;
                snprintf(what, whatlen,
                         "aclrtFree(%p, %llu bytes) while task %s on stream %p is %s: its %s range [%p, +%llu bytes)",
                         (void *)base, (unsigned long long)size, task->task.name, (void *)s, states[k], r->what,
                         r->ptr, (unsigned long long)r->len);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&streams_mu);
    return found;
}

int64_t emu_stream_pending_tasks(void)
{
    int64_t n = 0;
    pthread_mutex_lock(&streams_mu);
    for (emu_stream *s = live; s != NULL; s = s->next) {
        pthread_mutex_lock(&s->mu);
        for (const emu_node *q = s->head; q != NULL; q = q->next) {
            n++;
        }
        for (const emu_node *q = s->done; q != NULL; q = q->next) {
            n++;
        }
        n += s->running != NULL && s->running->seq > s->observed_seq;
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&streams_mu);
    return n;
}
