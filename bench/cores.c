/*
 * What this machine's cores give when used together: the speed-up of N threads over one on the
 * same total work, for three kinds of loop, so that `bench:compare` can say how much of a
 * kernel's scaling the machine allows.
 *
 *   simd     a 128-bit SIMD multiply-add loop on data in L1 (throughput-bound, like the wasm SIMD
 *            kernels); where two logical CPUs share one physical core, this scales ~1x
 *   latency  a dependent scalar chain (latency-bound; scales ~Nx on SMT siblings too)
 *   copy     a 128 MiB copy split into N parts (memory bandwidth)
 *
 * and how long a thread blocked on a condition variable takes to run once signalled, after the
 * machine idled 0.1 ms and 20 ms: on a VM whose idle vCPUs the host deschedules, the second is
 * much longer, and it is paid by every call whose worker threads were idle.
 *
 * Usage: build/cores [threads] [rounds]. Prints one line per kind: "<kind> <median speed-up>",
 * the median over rounds of (one-thread ms / N-thread ms), one thread and N alternating; then
 * "wake_idle_0.1ms <median us>" and "wake_idle_20ms <median us>".
 *
 * build/cores serve [threads]: a peer for bench:compare's rounds. Its threads - 1 workers block on
 * a condition variable between requests, as the library's do; each stdin line "<n> <ms>" runs a
 * SIMD burst of the work one thread does in about <ms> ms, shared by n threads, and answers the
 * wall time in ms. Timed in the same rounds as the cases, it says what plain C threads gained there
 * (on this VM, after the process idled ~10 ms, two threads gained 1.0-1.4x on a 6 ms burst, and
 * 1.9x when it had not).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { L1_FLOATS = 2048, MAX_THREADS = 256 };
#define COPY_BYTES ((size_t)128 << 20)

typedef struct {
  int kind;    /* 0 simd, 1 latency, 2 copy */
  long units;  /* this thread's share of the work */
  size_t part; /* copy: which part */
  size_t parts;
  volatile float sink;
} job_t;

static float *copy_src, *copy_dst;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *run(void *arg) {
  job_t *job = arg;
  if (job->kind == 0) {
    /* Four independent lanes of four floats: the compiler keeps them in 128-bit registers. */
    float a[L1_FLOATS], b[L1_FLOATS];
    for (int i = 0; i < L1_FLOATS; i++) a[i] = (float)i * 1e-3f, b[i] = 0.0f;
    for (long r = 0; r < job->units; r++) {
      for (int i = 0; i < L1_FLOATS; i++) b[i] = b[i] * 0.999f + a[i] * 0.5f;
    }
    job->sink = b[7];
  } else if (job->kind == 1) {
    volatile float step = 1e-4f; /* read once: the chain stays a chain of float operations */
    float s = 1.0f, c = step;
    for (long r = 0; r < job->units * 1024; r++) s = s * 0.9999f + c;
    job->sink = s;
  } else {
    size_t n = COPY_BYTES / sizeof(float) / job->parts, at = job->part * n;
    for (long r = 0; r < job->units; r++) memcpy(copy_dst + at, copy_src + at, n * sizeof(float));
    job->sink = copy_dst[at];
  }
  return NULL;
}

/* Runs `units` of work of `kind` on `threads` threads (the calling thread is one), in ms. */
static double timed(int kind, long units, int threads) {
  static job_t jobs[MAX_THREADS];
  pthread_t ids[MAX_THREADS];
  double start = now_ms();
  for (int t = 0; t < threads; t++) {
    jobs[t] = (job_t){.kind = kind, .part = (size_t)t, .parts = (size_t)threads};
    /* Copy: each thread copies its 1/threads of the buffer `units` times; the others split
     * the units. Either way the total work does not depend on the thread count. */
    jobs[t].units = kind == 2 ? units : units / threads;
    if (t > 0 && pthread_create(&ids[t], NULL, run, &jobs[t]) != 0) {
      fprintf(stderr, "cores: pthread_create failed\n");
      exit(1);
    }
  }
  run(&jobs[0]);
  for (int t = 1; t < threads; t++) pthread_join(ids[t], NULL);
  return now_ms() - start;
}

/* --- wake-up latency: a waiter blocked on a condition variable, signalled after an idle time --- */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static int wake_round = 0, woken_round = 0;
static double wake_sent, wake_seen;

static void *waiter(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wake_lock);
  for (;;) {
    while (wake_round == woken_round) pthread_cond_wait(&wake_cond, &wake_lock);
    wake_seen = now_ms();
    woken_round = wake_round;
    if (wake_round < 0) break;
    pthread_cond_broadcast(&wake_cond);
  }
  pthread_mutex_unlock(&wake_lock);
  return NULL;
}

/* Microseconds from signal to the waiter running, after `idle_ms` of sleep, per round. */
static void wake_samples(double idle_ms, int rounds, double *samples) {
  for (int r = 0; r < rounds; r++) {
    struct timespec idle = {0, (long)(idle_ms * 1e6)};
    nanosleep(&idle, NULL);
    pthread_mutex_lock(&wake_lock);
    wake_sent = now_ms();
    wake_round++;
    pthread_cond_broadcast(&wake_cond);
    while (woken_round != wake_round) pthread_cond_wait(&wake_cond, &wake_lock);
    samples[r] = (wake_seen - wake_sent) * 1e3;
    pthread_mutex_unlock(&wake_lock);
  }
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int n) {
  qsort(values, (size_t)n, sizeof(double), by_value);
  return values[n / 2];
}

/* --- serve: bursts on persistent workers --- */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_go = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static int pool_job = 0, pool_left = 0, pool_used = 0;
static job_t pool_jobs[MAX_THREADS];

static void *pool_worker(void *arg) {
  int index = (int)(size_t)arg, seen = 0;
  for (;;) {
    pthread_mutex_lock(&pool_lock);
    while (pool_job == seen || index >= pool_used) {
      seen = pool_job;
      pthread_cond_wait(&pool_go, &pool_lock);
    }
    seen = pool_job;
    pthread_mutex_unlock(&pool_lock);
    run(&pool_jobs[index]);
    pthread_mutex_lock(&pool_lock);
    if (--pool_left == 0) pthread_cond_signal(&pool_done);
    pthread_mutex_unlock(&pool_lock);
  }
  return NULL;
}

static int serve(int threads) {
  pthread_t id;
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&id, NULL, pool_worker, (void *)(size_t)t) != 0) return 1;
  }
  double start = now_ms();
  timed(0, 20000, 1);
  const double units_per_ms = 20000 / (now_ms() - start);
  char line[64];
  int n;
  double ms;
  while (fgets(line, sizeof line, stdin) != NULL && sscanf(line, "%d %lf", &n, &ms) == 2) {
    if (n < 1) n = 1;
    if (n > threads) n = threads;
    const long units = (long)(ms * units_per_ms) + 1;
    start = now_ms();
    pthread_mutex_lock(&pool_lock);
    for (int t = 0; t < n; t++) pool_jobs[t] = (job_t){.kind = 0, .units = units / n};
    pool_used = n;
    pool_left = n - 1;
    pool_job++;
    pthread_cond_broadcast(&pool_go);
    pthread_mutex_unlock(&pool_lock);
    run(&pool_jobs[0]);
    pthread_mutex_lock(&pool_lock);
    while (pool_left > 0) pthread_cond_wait(&pool_done, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    printf("%.4f\n", now_ms() - start);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "serve") == 0) {
    const int threads = argc > 2 ? atoi(argv[2]) : 2;
    return threads < 1 || threads > MAX_THREADS ? 2 : serve(threads);
  }
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  int rounds = argc > 2 ? atoi(argv[2]) : 11;
  if (threads < 1 || threads > MAX_THREADS || rounds < 1 || rounds > 1000) {
    fprintf(stderr, "usage: cores [threads 1..%d] [rounds 1..1000]\n", MAX_THREADS);
    return 2;
  }
  copy_src = malloc(COPY_BYTES);
  copy_dst = malloc(COPY_BYTES);
  if (copy_src == NULL || copy_dst == NULL) return 1;
  memset(copy_src, 1, COPY_BYTES);
  memset(copy_dst, 2, COPY_BYTES);
  static const char *names[] = {"simd", "latency", "copy"};
  /* ~20-40 ms of work per measurement on one thread of this kind of machine. */
  static const long units[] = {100000, 10000, 2};
  double ratios[1000];
  for (int kind = 0; kind < 3; kind++) {
    timed(kind, units[kind], threads); /* warm-up: pages, frequency */
    for (int r = 0; r < rounds; r++) {
      double one = 0, all = 0;
      if (r % 2 == 0) {
        one = timed(kind, units[kind], 1), all = timed(kind, units[kind], threads);
      } else {
        all = timed(kind, units[kind], threads), one = timed(kind, units[kind], 1);
      }
      ratios[r] = one / all;
    }
    printf("%s %.2f\n", names[kind], median(ratios, rounds));
  }
  free(copy_src);
  free(copy_dst);

  pthread_t id;
  if (pthread_create(&id, NULL, waiter, NULL) != 0) return 1;
  static const double idles[] = {0.1, 20.0};
  static const char *wake_names[] = {"wake_idle_0.1ms", "wake_idle_20ms"};
  for (int i = 0; i < 2; i++) {
    wake_samples(idles[i], rounds, ratios);
    printf("%s %.0f\n", wake_names[i], median(ratios, rounds));
  }
  pthread_mutex_lock(&wake_lock);
  wake_round = -1;
  pthread_cond_broadcast(&wake_cond);
  pthread_mutex_unlock(&wake_lock);
  pthread_join(id, NULL);
  return 0;
}
