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

struct be_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    void (*fn)(void *);  /* the job, NULL when there is none */
    void *arg;
    int busy, quit;
};

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The host's online processors, counted once (sysconf reads a file:
 * some 12 us).  (Atomic: compiles on several threads may ask.) */
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
 * host_cpus' sysconf, each a file opened and read, 20-35 us under load,
 * on the thread that splits: a small kernel's split gains less);
 * between, it answers as it last read. */
enum { FREE_NS = 1000000 };

int be_cpu_free(void)
{
    static _Atomic long read_at;
    static _Atomic int last;
    const long now = now_ns();
    if (read_at && now - read_at < FREE_NS)
        return last;
    /* /proc/loadavg's fourth field: runnable tasks (this thread among
     * them) / all tasks */
    FILE *f = fopen("/proc/loadavg", "r");
    int running = 0;
    const int got = f ? fscanf(f, "%*s %*s %*s %d/", &running) : 0;
    if (f)
        fclose(f);
    last = got != 1 || running < host_cpus();
    read_at = now;
    return last;
}

static void *worker_main(void *arg)
{
    be_worker *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->busy && !w->quit)
            pthread_cond_wait(&w->wake, &w->lock);
        if (!w->busy)
            break;
        pthread_mutex_unlock(&w->lock);
        w->fn(w->arg);
        pthread_mutex_lock(&w->lock);
        w->busy = 0;
        pthread_cond_signal(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
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

void be_worker_run(be_worker *w, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&w->lock);
    w->fn = fn;
    w->arg = arg;
    w->busy = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void be_worker_wait(be_worker *w)
{
    pthread_mutex_lock(&w->lock);
    while (w->busy)
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

void be_worker_stop(be_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
