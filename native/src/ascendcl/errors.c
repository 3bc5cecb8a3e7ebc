/*
 * aclGetRecentErrMsg. Like CANN, reading "obtains and clears" the message: a later read returns NULL
 * until another call fails, and the returned pointer stays valid until the next read on the same
 * thread. The default is thread level (each thread sees only its own failures); aclInit's JSON
 * config {"err_msg_mode": "1"} switches to process level (any thread reads the latest failure),
 * which is what a caller needs when a blocking call such as aclrtSynchronizeStream ran on a pool
 * thread and the message is read on another one.
 */
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define EMU_MSG_MAX 1024

static _Thread_local char pending[EMU_MSG_MAX];
static _Thread_local int has_pending;
static _Thread_local char handed[EMU_MSG_MAX];

static _Atomic int process_level;
static pthread_mutex_t proc_mu = PTHREAD_MUTEX_INITIALIZER;
static char proc_pending[EMU_MSG_MAX];
static int proc_has_pending;

EMU_API void aclemu_set_error(const char *fmt, ...)
{
    char buf[EMU_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (atomic_load(&process_level)) {
        pthread_mutex_lock(&proc_mu);
        memcpy(proc_pending, buf, sizeof buf);
        proc_has_pending = 1;
        pthread_mutex_unlock(&proc_mu);
    } else {
        memcpy(pending, buf, sizeof buf);
        has_pending = 1;
    }
}

const char *aclGetRecentErrMsg(void)
{
    int found = 0;
    if (atomic_load(&process_level)) {
        pthread_mutex_lock(&proc_mu);
        if (proc_has_pending) {
            memcpy(handed, proc_pending, sizeof handed);
            proc_has_pending = 0;
            found = 1;
        }
        pthread_mutex_unlock(&proc_mu);
    } else if (has_pending) {
        memcpy(handed, pending, sizeof handed);
        has_pending = 0;
        found = 1;
    }
    return found ? handed : NULL;
}

/* Reads aclInit's config file (NULL or "" = none) for "err_msg_mode": "0" thread, "1" process. */
int emu_errors_configure(const char *configPath)
{
    int mode = 0;
    if (configPath != NULL && configPath[0] != '\0') {
        FILE *f = fopen(configPath, "rb");
        if (f == NULL) {
            aclemu_set_error("aclInit: cannot open configPath \"%s\"", configPath);
            return ACL_ERROR_INVALID_FILE;
        }
        char text[65536];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        const char *p = strstr(text, "\"err_msg_mode\"");
        if (p != NULL) {
            p += strlen("\"err_msg_mode\"");
            while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ':' || *p == '"') {
                p++;
            }
            mode = *p == '1';
        }
    }
    atomic_store(&process_level, mode);
    return 0;
}
