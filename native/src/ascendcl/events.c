/*
 * ACL events (prototypes: hicann/runtime include/external/acl/acl_rt.h). aclrtRecordEvent enqueues a
 * marker task on the stream FIFO; when the stream worker reaches it, every earlier task has finished,
 * and the worker stamps the event with its monotonic clock. aclrtEventElapsedTime is the difference of
 * two such stamps, so it measures the time the stream's tasks actually ran (aclemuSetStreamDelayUs
 * included; markers themselves take no time).
 *
 * Status codes follow the runtime: NULL arguments 100000 (src/acl/aclrt_impl/event.cpp,
 * ACL_REQUIRES_NOT_NULL); an event never recorded in aclrtEventElapsedTime 507000
 * (src/runtime/core/src/event/event.cc Event::ElapsedTime -> RT_ERROR_EVENT_RECORDER_NULL, mapped to
 * ACL_ERROR_RT_INTERNAL_ERROR in errcode_manage.cc); recorded but not yet reached 107006
 * (ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID); a handle that is not a live event 107017.
 * aclrtSynchronizeEvent on an event never recorded returns at once; aclrtQueryEventStatus answers
 * NOT_READY for it (event.cpp aclrtQueryEventStatusImpl: only RT_EVENT_RECORDED is COMPLETE).
 * Events are counted (aclemuLiveEvents) and take part in fault injection (aclemuFailNextEvent).
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct emu_event {
    struct emu_event *next; /* live list */
    int refs;               /* the live list's + one per pending record task */
    uint32_t flag;
    uint64_t gen;           /* bumped by each record: a stale marker leaves the event alone */
    int recorded, complete;
    uint64_t ns;            /* stream clock when the worker reached the latest record */
    aclrtStream stream;     /* the stream of the latest record */
    uint64_t seq;           /* its position there */
} emu_event;

static pthread_mutex_t events_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t events_cv = PTHREAD_COND_INITIALIZER;
static emu_event *live;
static int64_t live_count;

int64_t emu_event_live_count(void)
{
    pthread_mutex_lock(&events_mu);
    int64_t n = live_count;
    pthread_mutex_unlock(&events_mu);
    return n;
}

/* The live event behind a handle, or NULL. Caller holds events_mu. */
static emu_event *find_locked(aclrtEvent handle)
{
    emu_event *e = live;
    while (e != NULL && e != (emu_event *)handle) {
        e = e->next;
    }
    return e;
}

static void unref_locked(emu_event *e)
{
    if (--e->refs == 0) {
        free(e);
    }
}

/* NULL handle: 100000; dead handle: 107017. Sets the message. */
static int bad_handle(const char *api, const char *what, aclrtEvent handle)
{
    if (handle == NULL) {
        aclemu_set_error("%s: %s is NULL", api, what);
        return ACL_ERROR_INVALID_PARAM;
    }
    aclemu_set_error("%s: %s %p is not a live event (never created, or already destroyed)", api, what, handle);
    return ACL_ERROR_RT_INVALID_HANDLE;
}

static int take_fault(const char *api)
{
    int32_t fault = emu_fault_take_event();
    if (fault != 0) {
        aclemu_set_error("%s: failed with %d (fault injected by aclemuFailNextEvent)", api, (int)fault);
    }
    return fault;
}

static aclError create(const char *api, aclrtEvent *event, uint32_t flag)
{
    int rc = emu_require_init(api);
    if (rc != 0) {
        return rc;
    }
    if (event == NULL) {
        aclemu_set_error("%s: event is NULL", api);
        return ACL_ERROR_INVALID_PARAM;
    }
    const uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                           ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL | ACL_EVENT_IPC;
    if ((flag & ~known) != 0) {
        aclemu_set_error("%s: flag 0x%x has bits that are no ACL_EVENT_* flag", api, flag);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    if ((flag & (ACL_EVENT_EXTERNAL | ACL_EVENT_IPC)) != 0) {
        aclemu_set_error("%s: external and IPC events are not emulated (flag 0x%x)", api, flag);
        return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
    }
    int32_t device;
    int64_t det;
    if (aclemu_current_context(&device, &det) != 0) {
        aclemu_set_error("%s: the calling thread has no current context (call aclrtSetDevice first)", api);
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    rc = take_fault(api);
    if (rc != 0) {
        return rc;
    }
    emu_event *e = calloc(1, sizeof *e);
    if (e == NULL) {
        aclemu_set_error("%s: out of host memory", api);
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    e->refs = 1;
    e->flag = flag;
    pthread_mutex_lock(&events_mu);
    e->next = live;
    live = e;
    live_count++;
    pthread_mutex_unlock(&events_mu);
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event) { return create("aclrtCreateEvent", event, ACL_EVENT_SYNC); }

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    return create("aclrtCreateEventWithFlag", event, flag);
}

aclError aclrtDestroyEvent(aclrtEvent event)
{
    int rc = emu_require_init("aclrtDestroyEvent");
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&events_mu);
    emu_event **pp = &live;
    while (*pp != NULL && *pp != (emu_event *)event) {
        pp = &(*pp)->next;
    }
    emu_event *e = *pp;
    if (e != NULL) {
        *pp = e->next;
        live_count--;
        unref_locked(e); /* a pending record task keeps the memory until it has run */
    }
    pthread_cond_broadcast(&events_cv);
    pthread_mutex_unlock(&events_mu);
    return e != NULL ? ACL_SUCCESS : bad_handle("aclrtDestroyEvent", "event", event);
}

typedef struct {
    emu_event *event;
    uint64_t gen;
} record_job;

static int run_record(void *arg, char *msg, size_t msglen)
{
    (void)msg;
    (void)msglen;
    record_job *j = arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&events_mu);
    if (j->event->gen == j->gen) {
        j->event->ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        j->event->complete = 1;
        pthread_cond_broadcast(&events_cv);
    }
    pthread_mutex_unlock(&events_mu);
    return 0;
}

static void release_record(void *arg)
{
    record_job *j = arg;
    pthread_mutex_lock(&events_mu);
    unref_locked(j->event);
    pthread_mutex_unlock(&events_mu);
    free(j);
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    int rc = emu_require_init("aclrtRecordEvent");
    if (rc != 0) {
        return rc;
    }
    record_job *j = malloc(sizeof *j);
    if (j == NULL) {
        aclemu_set_error("aclrtRecordEvent: out of host memory");
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    pthread_mutex_lock(&events_mu);
    emu_event *e = find_locked(event);
    if (e != NULL) {
        e->refs += 2; /* the task's (dropped by release_record) and this call's */
    }
    pthread_mutex_unlock(&events_mu);
    if (e == NULL) {
        free(j);
        return bad_handle("aclrtRecordEvent", "event", event);
    }
    if (aclemu_stream_device(stream) < 0) {
        aclemu_set_error("aclrtRecordEvent: stream %p is not a live stream%s", stream,
                         stream == NULL ? " (the NULL default stream is not emulated)" : "");
        rc = ACL_ERROR_RT_INVALID_HANDLE;
    } else {
        rc = take_fault("aclrtRecordEvent");
    }
    if (rc != 0) {
        pthread_mutex_lock(&events_mu);
        e->refs -= 2;
        if (e->refs == 0) {
            free(e);
        }
        pthread_mutex_unlock(&events_mu);
        free(j);
        return rc;
    }
    /* The new record replaces the previous one as soon as it is issued, as on the device. */
    pthread_mutex_lock(&events_mu);
    uint64_t gen = ++e->gen;
    j->event = e;
    j->gen = gen;
    e->recorded = 1;
    e->complete = 0;
    e->stream = stream;
    e->seq = 0; /* set below once the stream has placed the marker */
    pthread_mutex_unlock(&events_mu);
    emu_task t = {.name = "aclrtRecordEvent", .fn = run_record, .arg = j, .release = release_record,
                  .flags = EMU_TASK_MARKER};
    uint64_t seq = 0;
    rc = emu_stream_enqueue_seq(stream, &t, &seq); /* releases j (and its reference) on failure */
    pthread_mutex_lock(&events_mu);
    if (e->gen == gen) {
        if (rc == 0) {
            e->seq = seq;
        } else {
            e->recorded = 0;
        }
    }
    unref_locked(e);
    pthread_cond_broadcast(&events_cv);
    pthread_mutex_unlock(&events_mu);
    return rc;
}

aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    int rc = emu_require_init("aclrtSynchronizeEvent");
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&events_mu);
    emu_event *e = find_locked(event);
    if (e == NULL) {
        pthread_mutex_unlock(&events_mu);
        return bad_handle("aclrtSynchronizeEvent", "event", event);
    }
    pthread_mutex_unlock(&events_mu);
    rc = take_fault("aclrtSynchronizeEvent");
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&events_mu);
    e = find_locked(event);
    aclrtStream stream = NULL;
    uint64_t seq = 0;
    if (e != NULL) {
        e->refs++;
        /* waits for the latest record; a destroy (refs drop, not live) or a newer record ends the wait too */
        uint64_t gen = e->gen;
        while (e->recorded && !e->complete && e->gen == gen && find_locked(event) == e) {
            pthread_cond_wait(&events_cv, &events_mu);
        }
        if (e->recorded && e->complete && e->seq != 0) {
            stream = e->stream;
            seq = e->seq;
        }
        unref_locked(e);
    }
    pthread_mutex_unlock(&events_mu);
    if (stream != NULL) {
        emu_stream_observe(stream, seq);
    }
    return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    int rc = emu_require_init("aclrtQueryEventStatus");
    if (rc != 0) {
        return rc;
    }
    if (status == NULL) {
        aclemu_set_error("aclrtQueryEventStatus: status is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&events_mu);
    emu_event *e = find_locked(event);
    pthread_mutex_unlock(&events_mu);
    if (e == NULL) {
        return bad_handle("aclrtQueryEventStatus", "event", event);
    }
    rc = take_fault("aclrtQueryEventStatus");
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&events_mu);
    e = find_locked(event);
    int complete = e != NULL && e->recorded && e->complete;
    aclrtStream stream = complete && e->seq != 0 ? e->stream : NULL;
    uint64_t seq = complete ? e->seq : 0;
    pthread_mutex_unlock(&events_mu);
    *status = complete ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    if (stream != NULL) {
        emu_stream_observe(stream, seq); /* a COMPLETE answer tells the host the earlier tasks are done */
    }
    return ACL_SUCCESS;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)
{
    const char *api = "aclrtEventElapsedTime";
    int rc = emu_require_init(api);
    if (rc != 0) {
        return rc;
    }
    if (ms == NULL || startEvent == NULL || endEvent == NULL) {
        aclemu_set_error("%s: %s is NULL", api, ms == NULL ? "ms" : startEvent == NULL ? "startEvent" : "endEvent");
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&events_mu);
    emu_event *a = find_locked(startEvent), *b = find_locked(endEvent);
    int recorded = a != NULL && b != NULL && a->recorded && b->recorded;
    int complete = recorded && a->complete && b->complete;
    uint64_t a_ns = complete ? a->ns : 0, b_ns = complete ? b->ns : 0;
    const char *which = a != NULL && (!a->recorded || (recorded && !a->complete)) ? "startEvent" : "endEvent";
    pthread_mutex_unlock(&events_mu);
    if (a == NULL || b == NULL) {
        return bad_handle(api, a == NULL ? "startEvent" : "endEvent", a == NULL ? startEvent : endEvent);
    }
    rc = take_fault(api);
    if (rc != 0) {
        return rc;
    }
    if (!recorded) {
        aclemu_set_error("%s: %s was never recorded (aclrtRecordEvent)", api, which);
        return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    if (!complete) {
        aclemu_set_error("%s: the stream has not reached the record of %s yet (synchronize the end event "
                         "first)",
                         api, which);
        return ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID;
    }
    *ms = (float)(((double)b_ns - (double)a_ns) / 1e6);
    return ACL_SUCCESS;
}
