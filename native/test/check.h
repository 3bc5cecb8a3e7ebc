/*
 * The check counters and CHECK macro shared by the C tests, and the op tests' status check
 * (EXPECT_STATUS; smoke.c and runtime.c add an EXPECT of their own, since they also check what a
 * failed status leaves behind).
 */
#ifndef ACLEMU_TEST_CHECK_H
#define ACLEMU_TEST_CHECK_H

#include <stdio.h>

static int checks, failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                    \
    } while (0)

/* `expr` must answer `status`; a mismatch prints the runtime's last message (aclGetRecentErrMsg must
 * be declared where it is used). */
#define EXPECT_STATUS(expr, status)                                                                 \
    do {                                                                                            \
        int rc_ = (int)(expr);                                                                      \
        checks++;                                                                                   \
        if (rc_ != (status)) {                                                                      \
            failures++;                                                                             \
            const char *m_ = aclGetRecentErrMsg();                                                  \
            fprintf(stderr, "FAIL %s:%d: %s -> %d, expected %d (%s)\n", __FILE__, __LINE__, #expr, \
                    rc_, (status), m_ ? m_ : "no message");                                         \
        }                                                                                           \
    } while (0)

/* Prints "<name>: N checks, N failed" and returns the process exit status. */
static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, checks, failures);
    return failures != 0;
}

#endif
