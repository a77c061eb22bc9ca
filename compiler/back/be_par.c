/* be_par.c: codegen's second host thread: how many threads codegen
 * uses, and a worker that runs one job at a time for it (be_par_cores,
 * backend.c, hands it the last cores of a kernel). */
#include "backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* A job is handed over and its end seen through busy, which the waiting
 * side spins on first (up to SPIN_NS when the job's caller said a
 * processor was free: a split's wake-up through the condition variable
 * had cost 50-200 us a kernel on a 2-processor host; the worker spins
 * that long after each job, for the next kernel's split; with no
 * processor free a spinning thread would take turns with the one it
 * waits for) and only then sleeps; sleeping (the worker) and waiting (the
 * caller) say who must be signalled.  Each side stores its flag and then
 * reads the other's, sequentially consistent, so that at least one sees
 * the other's store: no wake-up is lost. */
struct be_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    void (*fn)(void *); /* the job */
    void *arg;
    int spin;           /* the job's caller's: spin while waiting */
    _Atomic int busy, quit, sleeping, waiting;
    _Atomic int spinning; /* waiting for a job, runnable (be_cpu_free leaves it out) */
};

enum { SPIN_NS = 1000000 };

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Whether *flag became want, or *or (NULL: none) 1, within SPIN_NS
 * (spin: else at once). */
static int spin_until(_Atomic int *flag, int want, _Atomic int *or, int spin)
{
    const long end = spin ? now_ns() + SPIN_NS : 0;
    for (int i = 1;; i++) {
        if (atomic_load_explicit(flag, memory_order_acquire) == want || (or && atomic_load(or)))
            return 1;
        if (!spin || (!(i & 63) && now_ns() > end))
            return 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* The host's online processors, counted once (sysconf reads a file:
 * some 12 us, 0.3% of BERT-base's compile).  (Atomic: compiles on
 * several threads may ask.) */
static long host_cpus(void)
{
    static _Atomic long n;
    if (!n)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n;
}

int be_threads(const ir_prog *p)
{
    long n = p->opts.threads;
    const char *env = getenv("SPYRE_THREADS"); /* the simulator's override, for both */
    if (n < 1 && env && *env)
        n = strtol(env, NULL, 10);
    if (n < 1)
        return host_cpus() >= 2 ? 0 : 1;
    return n >= 2 ? 2 : 1;
}

/* be_cpu_free reads /proc/loadavg at most every FREE_NS (with
 * host_cpus' sysconf, each a file opened and read, 20-35 us under load:
 * a small kernel's split gains less); between, it answers from the
 * tasks it last read. */
enum { FREE_NS = 1000000 };

int be_cpu_free(const be_worker *w)
{
    static _Atomic long read_at;
    static _Atomic int others = -1; /* runnable tasks besides a spinning worker; -1: unknown */
    const long now = now_ns();
    if (!read_at || now - read_at >= FREE_NS) {
        /* /proc/loadavg's fourth field: runnable tasks (this thread
         * among them) / all tasks */
        FILE *f = fopen("/proc/loadavg", "r");
        int running = 0;
        const int got = f ? fscanf(f, "%*s %*s %*s %d/", &running) : 0;
        if (f)
            fclose(f);
        others = got == 1 ? running - (w && atomic_load(&w->spinning)) : -1;
        read_at = now;
    }
    return others < host_cpus();
}

/* The worker sleeps until busy or quit is set (sleeping: it may). */
static void worker_sleep(be_worker *w)
{
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->sleeping, 1);
    while (!atomic_load(&w->busy) && !atomic_load(&w->quit))
        pthread_cond_wait(&w->wake, &w->lock);
    atomic_store(&w->sleeping, 0);
    pthread_mutex_unlock(&w->lock);
}

static void *worker_main(void *arg)
{
    be_worker *w = arg;
    for (int spin = 0;;) {
        atomic_store(&w->spinning, spin);
        const int got = spin_until(&w->busy, 1, &w->quit, spin);
        atomic_store(&w->spinning, 0);
        if (!got)
            worker_sleep(w);
        if (!atomic_load(&w->busy))
            break; /* (quit) */
        spin = w->spin;
        w->fn(w->arg);
        atomic_store(&w->busy, 0);
        if (atomic_load(&w->waiting)) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_signal(&w->done);
            pthread_mutex_unlock(&w->lock);
        }
    }
    return NULL;
}

be_worker *be_worker_start(void)
{
    be_worker *w = ir_xalloc(sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->done, NULL);
    if (pthread_create(&w->thread, NULL, worker_main, w)) { /* no thread: codegen runs serially */
        pthread_cond_destroy(&w->done);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

static void worker_wake(be_worker *w)
{
    if (!atomic_load(&w->sleeping))
        return;
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void be_worker_run(be_worker *w, void (*fn)(void *), void *arg, int spin)
{
    w->fn = fn;
    w->arg = arg;
    w->spin = spin;
    atomic_store(&w->busy, 1); /* (releases fn and arg) */
    worker_wake(w);
}

void be_worker_wait(be_worker *w)
{
    if (spin_until(&w->busy, 0, NULL, w->spin))
        return;
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->waiting, 1);
    while (atomic_load(&w->busy))
        pthread_cond_wait(&w->done, &w->lock);
    atomic_store(&w->waiting, 0);
    pthread_mutex_unlock(&w->lock);
}

void be_worker_stop(be_worker *w)
{
    if (!w)
        return;
    atomic_store(&w->quit, 1);
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
