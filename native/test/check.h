/*
 * The check counters and CHECK macro shared by the C tests (each test adds an EXPECT of its own,
 * since what a failed status should leave behind differs per test).
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

/* Prints "<name>: N checks, N failed" and returns the process exit status. */
static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, checks, failures);
    return failures != 0;
}

#endif
