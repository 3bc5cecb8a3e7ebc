/*
 * The set of live meta objects (tensors, int arrays, executors), keyed by address. It lets every
 * entry point reject a destroyed or foreign handle with 161002 instead of reading freed memory,
 * and it is where objects are counted (through libascendcl, where the test counters live).
 */
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>

#define BUCKETS 4096u

typedef struct node {
    struct node *next;
    const void *ptr;
    int kind;
} node;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static node *buckets[BUCKETS];

static unsigned bucket_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    a ^= a >> 17;
    a *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(a >> 40) % BUCKETS;
}

int emu_reg_add(const void *p, int kind)
{
    node *n = malloc(sizeof *n);
    if (n == NULL) {
        return 0;
    }
    n->ptr = p;
    n->kind = kind;
    unsigned b = bucket_of(p);
    pthread_mutex_lock(&reg_mu);
    n->next = buckets[b];
    buckets[b] = n;
    pthread_mutex_unlock(&reg_mu);
    aclemu_objects_add(1);
    return 1;
}

int emu_reg_has(const void *p, int kind)
{
    unsigned b = bucket_of(p);
    pthread_mutex_lock(&reg_mu);
    node *n = buckets[b];
    while (n != NULL && !(n->ptr == p && n->kind == kind)) {
        n = n->next;
    }
    pthread_mutex_unlock(&reg_mu);
    return n != NULL;
}

int emu_reg_remove(const void *p, int kind)
{
    unsigned b = bucket_of(p);
    pthread_mutex_lock(&reg_mu);
    node **pp = &buckets[b];
    while (*pp != NULL && !((*pp)->ptr == p && (*pp)->kind == kind)) {
        pp = &(*pp)->next;
    }
    node *n = *pp;
    if (n != NULL) {
        *pp = n->next;
    }
    pthread_mutex_unlock(&reg_mu);
    if (n == NULL) {
        return 0;
    }
    free(n);
    aclemu_objects_add(-1);
    return 1;
}
