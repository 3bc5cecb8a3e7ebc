/*
 * Test controls of the emulated kernels: which kernel each launch ran (by name), the seed sequence
 * of the atomic kernels' order of additions, the FMA contraction switches (Ascend 950 compiler, TBE
 * ResizeBilinearV2Grad5HD) and the planted TBE zero-weight fault. The state lives here (libascendcl)
 * so that every libopapi variant of a process shares it.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- kernel counters: names interned once, so aclemuLastKernel's pointer stays valid ---- */

#define KERNEL_SLOTS 128
#define KERNEL_NAME_MAX 64

static pthread_mutex_t kernel_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[KERNEL_NAME_MAX];
    int64_t launches;
} slots[KERNEL_SLOTS];
static int nslots;
static const char *last_kernel = "";

/* The slot of `name`, created when new; -1 when the table is full. Called under kernel_mu. */
static int slot_of(const char *name, int create)
{
    for (int i = 0; i < nslots; i++) {
        if (strcmp(slots[i].name, name) == 0) {
            return i;
        }
    }
    if (!create || nslots == KERNEL_SLOTS) {
        return -1;
    }
    strncpy(slots[nslots].name, name, KERNEL_NAME_MAX - 1);
    return nslots++;
}

EMU_API void aclemu_note_kernel(const char *name)
{
    if (name == NULL) {
        return;
    }
    pthread_mutex_lock(&kernel_mu);
    int i = slot_of(name, 1);
    if (i >= 0) {
        slots[i].launches++;
        last_kernel = slots[i].name;
    }
    pthread_mutex_unlock(&kernel_mu);
}

const char *aclemuLastKernel(void)
{
    pthread_mutex_lock(&kernel_mu);
    const char *k = last_kernel;
    pthread_mutex_unlock(&kernel_mu);
    return k;
}

int64_t aclemuKernelLaunches(const char *name)
{
    if (name == NULL) {
        return 0;
    }
    pthread_mutex_lock(&kernel_mu);
    int i = slot_of(name, 0);
    int64_t n = i >= 0 ? slots[i].launches : 0;
    pthread_mutex_unlock(&kernel_mu);
    return n;
}

/* ---- the atomic kernels' seed sequence ---- */

static pthread_mutex_t seed_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;
static uint64_t env_seed, process_seed; /* ACLEMU_ATOMIC_SEED, or one drawn at load */
static int env_seed_set;
static uint64_t base_seed, seed_index;  /* the sequence in force: launch k gets mix(base_seed, k) */

/* splitmix64's finaliser: a bijective mixer, so distinct (base, k) pairs give well-spread seeds. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void seed_read(void)
{
    const char *env = getenv("ACLEMU_ATOMIC_SEED");
    if (env != NULL && env[0] != '\0') {
        char *end = NULL;
        unsigned long long v = strtoull(env, &end, 0);
        if (end != NULL && *end == '\0' && env[0] != '-') { /* a malformed value is ignored */
            env_seed = (uint64_t)v;
            env_seed_set = 1;
        }
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    process_seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ ((uint64_t)getpid() << 16) ^
                         (uint64_t)(uintptr_t)&seed_once);
    base_seed = env_seed_set ? env_seed : process_seed;
}

void aclemuSetAtomicSeed(uint64_t seed)
{
    pthread_once(&seed_once, seed_read);
    pthread_mutex_lock(&seed_mu);
    base_seed = seed;
    seed_index = 0;
    pthread_mutex_unlock(&seed_mu);
}

uint64_t aclemuAtomicSeed(void)
{
    pthread_once(&seed_once, seed_read);
    pthread_mutex_lock(&seed_mu);
    uint64_t s = base_seed;
    pthread_mutex_unlock(&seed_mu);
    return s;
}

EMU_API uint64_t aclemu_atomic_seed_take(void)
{
    pthread_once(&seed_once, seed_read);
    pthread_mutex_lock(&seed_mu);
    uint64_t s = mix64(base_seed ^ mix64(seed_index + 0x9e3779b97f4a7c15ull));
    seed_index++;
    pthread_mutex_unlock(&seed_mu);
    return s;
}

/* ---- the switches: an override (-1 none), else the environment variable, else the default. The
 * 950's compiler contraction (ACLEMU_FMA, default 1), the TBE ResizeBilinearV2Grad5HD's OPEN rounding
 * (ACLEMU_TBE_FMA, default 0: each step rounded) and its planted zero-weight fault
 * (ACLEMU_TBE_ZERO_WEIGHT_FAULT, default 0: off), the planted forward shift (ACLEMU_FORWARD_SHIFT_FAULT)
 * and the planted one-ulp fault of the order-free backward kernels (ACLEMU_ULP_FAULT). ---- */

typedef struct {
    const char *var;
    int32_t dflt;
    _Atomic int32_t env;      /* -1: not read yet (every reader computes the same value) */
    _Atomic int32_t override; /* -1: none */
} emu_switch;

static emu_switch fma_switch = {"ACLEMU_FMA", 1, -1, -1};
static emu_switch tbe_fma_switch = {"ACLEMU_TBE_FMA", 0, -1, -1};
static emu_switch tbe_zw_switch = {"ACLEMU_TBE_ZERO_WEIGHT_FAULT", 0, -1, -1};
static emu_switch fwd_shift_switch = {"ACLEMU_FORWARD_SHIFT_FAULT", 0, -1, -1};
static emu_switch ulp_switch = {"ACLEMU_ULP_FAULT", 0, -1, -1};

static int32_t switch_value(emu_switch *s)
{
    int32_t o = atomic_load(&s->override);
    if (o >= 0) {
        return o;
    }
    int32_t e = atomic_load(&s->env);
    if (e < 0) {
        /* Only the value opposite to the default changes it: "0" turns a default 1 off, "1" a 0 on. */
        const char *v = getenv(s->var);
        e = v != NULL && strcmp(v, s->dflt ? "0" : "1") == 0 ? !s->dflt : s->dflt;
        atomic_store(&s->env, e);
    }
    return e;
}

static void switch_set(emu_switch *s, int32_t on) { atomic_store(&s->override, on < 0 ? -1 : on != 0); }

void aclemuSetFmaContraction(int32_t on) { switch_set(&fma_switch, on); }

int32_t aclemuFmaContraction(void) { return aclemu_fma_contraction(); }

EMU_API int32_t aclemu_fma_contraction(void) { return switch_value(&fma_switch); }

void aclemuSetTbeFma(int32_t on) { switch_set(&tbe_fma_switch, on); }

int32_t aclemuTbeFma(void) { return aclemu_tbe_fma(); }

EMU_API int32_t aclemu_tbe_fma(void) { return switch_value(&tbe_fma_switch); }

void aclemuSetTbeZeroWeightFault(int32_t on) { switch_set(&tbe_zw_switch, on); }

int32_t aclemuTbeZeroWeightFault(void) { return aclemu_tbe_zero_weight_fault(); }

EMU_API int32_t aclemu_tbe_zero_weight_fault(void) { return switch_value(&tbe_zw_switch); }

void aclemuSetForwardShiftFault(int32_t on) { switch_set(&fwd_shift_switch, on); }

int32_t aclemuForwardShiftFault(void) { return aclemu_forward_shift_fault(); }

EMU_API int32_t aclemu_forward_shift_fault(void) { return switch_value(&fwd_shift_switch); }

void aclemuSetUlpFault(int32_t on) { switch_set(&ulp_switch, on); }

int32_t aclemuUlpFault(void) { return aclemu_ulp_fault(); }

EMU_API int32_t aclemu_ulp_fault(void) { return switch_value(&ulp_switch); }

void emu_kernel_controls_reset(void)
{
    pthread_mutex_lock(&kernel_mu);
    for (int i = 0; i < nslots; i++) {
        slots[i].launches = 0;
    }
    last_kernel = "";
    pthread_mutex_unlock(&kernel_mu);
    pthread_once(&seed_once, seed_read);
    pthread_mutex_lock(&seed_mu);
    base_seed = env_seed_set ? env_seed : process_seed;
    seed_index = 0;
    pthread_mutex_unlock(&seed_mu);
    switch_set(&fma_switch, -1);
    switch_set(&tbe_fma_switch, -1);
    switch_set(&tbe_zw_switch, -1);
    switch_set(&fwd_shift_switch, -1);
    switch_set(&ulp_switch, -1);
}
