/* ptworker.c: the PT units' arithmetic on worker host threads.  The
 * event loop hands each pt.mm (already checked, timed and race-checked)
 * to the worker in issue order and goes on; before anything else touches
 * LX bytes that a queued product reads or writes, it waits for that
 * product.  Results are the same as running inline: products stay in issue
 * order, and every other access to their bytes waits for them. */
#include "internal.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUEUE 256

typedef struct {
    int core;
    isa_insn in;
    sim_lx_set ops[4]; /* LX bytes read (a, b, p) and written (d) */
    uint64_t bgen;     /* version of the B operand's bytes (see b_version) */
} pt_job;

/* B of one core, already converted to row-major fp32, with its key: the
 * products of a core that share one B tile convert it once. */
typedef struct {
    float *b;
    size_t cap;
    int64_t off, stride, k, n;
    uint64_t gen;
} b_cache;

typedef struct {
    float *a, *c;
    size_t acap, ccap;
    b_cache *bc;  /* per core, B_CACHED entries */
    int *bnext;   /* per core: the entry to replace next */
} pt_bufs;

/* One worker thread and its queue; core c's products go to worker
 * c % nworkers, so each core's products stay in issue order. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, done;
    pt_job jobs[QUEUE];
    uint64_t submitted;         /* written by the event loop under mu */
    _Atomic uint64_t completed; /* written by the worker */
    int stop;
    int threaded; /* 0: no thread could be had, products run inline */
    pt_bufs bufs;
    sim *s;
} pt_worker;

#define MAX_WORKERS 8
#define B_VERSIONS 32 /* B operands whose version the event loop tracks, per core */
#define B_CACHED 16    /* converted B operands a worker keeps, per core */

/* A B operand's LX bytes and a version number that changes whenever
 * anything may write them; kept per core by the event loop. */
typedef struct {
    int64_t off, stride, k, n;
    sim_lx_set bytes; /* the sticks the operand reads */
    uint64_t gen;
} b_version;

struct sim_ptq {
    int n;
    pt_worker w[MAX_WORKERS];
    b_version *bv; /* cores x B_VERSIONS */
    int *bnext;    /* per core: the entry to reuse next */
    uint64_t gen;
};

static float *grow(float **buf, size_t *cap, size_t n)
{
    if (n > *cap) {
        free(*buf);
        *buf = malloc(n * sizeof **buf);
        if (!*buf) {
            fprintf(stderr, "spyre: out of host memory\n");
            abort();
        }
        *cap = n;
    }
    return *buf;
}

/* d := (acc ? p : 0) + a x b on one core's LX (layouts in isa.h). */
static void compute(pt_bufs *bf, uint8_t *lx, int core, uint64_t bgen, const isa_insn *in, int64_t sb)
{
    const int64_t l16 = sb / 2, l32 = sb / 4;
    const int64_t m = in->m, n = in->nn, k = in->k;
    const int acc = (in->flags & ISA_F_ACC) != 0, out32 = (in->flags & ISA_F_F32) != 0;
    const int64_t ga = (k + l16 - 1) / l16, gb = (n + l16 - 1) / l16, g32 = (n + l32 - 1) / l32;
    b_cache *row = &bf->bc[core * B_CACHED], *bc = NULL;
    for (int i = 0; i < B_CACHED && !bc; i++)
        if (bgen && row[i].gen == bgen && row[i].off == in->b.off && row[i].stride == in->bs[0] && row[i].k == k &&
            row[i].n == n)
            bc = &row[i];
    int same_b = bc != NULL;
    if (!bc) {
        bc = &row[bf->bnext[core]];
        bf->bnext[core] = (bf->bnext[core] + 1) % B_CACHED;
    }
    float *A = grow(&bf->a, &bf->acap, (size_t)(m * k));
    float *B = grow(&bc->b, &bc->cap, (size_t)(k * n));
    float *C = grow(&bf->c, &bf->ccap, (size_t)(m * n));
    for (int64_t g = 0; g < ga; g++) {
        int64_t w = k - g * l16 < l16 ? k - g * l16 : l16;
        const uint8_t *base = lx + in->a.off + g * in->as[0];
        for (int64_t r = 0; r < m; r++)
            isa_dl16_to_f32_n((const uint16_t *)(base + r * sb), A + r * k + g * l16, (size_t)w);
    }
    for (int64_t g = 0; g < gb && !same_b; g++) {
        int64_t w = n - g * l16 < l16 ? n - g * l16 : l16;
        const uint8_t *base = lx + in->b.off + g * in->bs[0];
        for (int64_t r = 0; r < k; r++)
            isa_dl16_to_f32_n((const uint16_t *)(base + r * sb), B + r * n + g * l16, (size_t)w);
    }
    bc->gen = bgen;
    bc->off = in->b.off;
    bc->stride = in->bs[0];
    bc->k = k;
    bc->n = n;
    if (acc)
        for (int64_t g = 0; g < g32; g++) {
            int64_t w = n - g * l32 < l32 ? n - g * l32 : l32;
            const uint8_t *base = lx + in->p.off + g * in->ps;
            for (int64_t r = 0; r < m; r++)
                memcpy(C + r * n + g * l32, base + r * sb, (size_t)w * 4);
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)k, B, (int)n,
                acc ? 1.0f : 0.0f, C, (int)n);
    if (out32) {
        for (int64_t g = 0; g < g32; g++) {
            int64_t w = n - g * l32 < l32 ? n - g * l32 : l32;
            uint8_t *base = lx + in->d.off + g * in->ds[0];
            for (int64_t r = 0; r < m; r++)
                memcpy(base + r * sb, C + r * n + g * l32, (size_t)w * 4);
        }
    } else {
        for (int64_t g = 0; g < gb; g++) {
            int64_t w = n - g * l16 < l16 ? n - g * l16 : l16;
            uint8_t *base = lx + in->d.off + g * in->ds[0];
            for (int64_t r = 0; r < m; r++)
                isa_dl16_from_f32_n(C + r * n + g * l16, (uint16_t *)(base + r * sb), (size_t)w);
        }
    }
}

static void *worker(void *arg)
{
    pt_worker *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        uint64_t next = atomic_load(&q->completed);
        while (!q->stop && q->submitted == next)
            pthread_cond_wait(&q->more, &q->mu);
        if (q->submitted == next && q->stop)
            break;
        pthread_mutex_unlock(&q->mu);
        const pt_job *j = &q->jobs[next % QUEUE];
        compute(&q->bufs, q->s->cores[j->core].lx, j->core, j->bgen, &j->in, q->s->cfg.stick_bytes);
        pthread_mutex_lock(&q->mu);
        atomic_store(&q->completed, next + 1);
        pthread_cond_broadcast(&q->done);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Host threads for products: one per host processor (at most
 * MAX_WORKERS); SPYRE_THREADS overrides. */
static int worker_count(void)
{
    const char *env = getenv("SPYRE_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_WORKERS ? MAX_WORKERS : (int)n;
}

static sim_ptq *start(sim *s)
{
    sim_ptq *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->n = worker_count();
    q->bv = calloc((size_t)s->cfg.cores * B_VERSIONS, sizeof *q->bv);
    q->bnext = calloc((size_t)s->cfg.cores, sizeof *q->bnext);
    if (!q->bv || !q->bnext) {
        free(q->bv);
        free(q->bnext);
        free(q);
        return NULL;
    }
    for (int i = 0; i < q->n; i++) {
        pt_worker *w = &q->w[i];
        w->s = s;
        w->bufs.bc = calloc((size_t)s->cfg.cores * B_CACHED, sizeof *w->bufs.bc);
        w->bufs.bnext = calloc((size_t)s->cfg.cores, sizeof *w->bufs.bnext);
        if (!w->bufs.bc || !w->bufs.bnext) {
            fprintf(stderr, "spyre: out of host memory\n");
            abort();
        }
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->more, NULL);
        pthread_cond_init(&w->done, NULL);
        w->threaded = pthread_create(&w->thread, NULL, worker, w) == 0;
    }
    return q;
}

/* Wait until the worker has finished its jobs before number `upto`. */
static void wait_until(pt_worker *w, uint64_t upto)
{
    if (atomic_load(&w->completed) >= upto)
        return;
    pthread_mutex_lock(&w->mu);
    while (atomic_load(&w->completed) < upto)
        pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

/* Does [lo, hi) overlap any of the set's ranges? */
static int hits(const sim_lx_set *x, uint64_t lo, uint64_t hi)
{
    for (int64_t g = 0; g < x->count; g++) {
        uint64_t a = (uint64_t)(x->base + g * x->stride);
        if (lo < a + (uint64_t)x->len && a < hi)
            return 1;
    }
    return 0;
}

/* Something may write core's LX bytes [lo, hi): B operands there get a
 * new version. */
static void b_touch(sim_ptq *q, int core, uint64_t lo, uint64_t hi)
{
    for (int i = 0; i < B_VERSIONS; i++) {
        b_version *v = &q->bv[core * B_VERSIONS + i];
        if (v->gen && hits(&v->bytes, lo, hi))
            v->gen = ++q->gen;
    }
}

/* The version of the B operand of `in` (bytes `set`) as of now. */
static uint64_t b_current(sim_ptq *q, int core, const isa_insn *in, const sim_lx_set *set)
{
    b_version *row = &q->bv[core * B_VERSIONS];
    for (int i = 0; i < B_VERSIONS; i++)
        if (row[i].gen && row[i].off == in->b.off && row[i].stride == in->bs[0] && row[i].k == in->k &&
            row[i].n == in->nn)
            return row[i].gen;
    b_version *v = &row[q->bnext[core]];
    q->bnext[core] = (q->bnext[core] + 1) % B_VERSIONS;
    v->off = in->b.off;
    v->stride = in->bs[0];
    v->k = in->k;
    v->n = in->nn;
    v->bytes = *set;
    v->gen = ++q->gen;
    return v->gen;
}

static void set_bounds(const sim_lx_set *x, uint64_t *lo, uint64_t *hi)
{
    *lo = (uint64_t)x->base;
    *hi = (uint64_t)(x->base + (x->count - 1) * x->stride + x->len);
}

void sim_pt_submit(sim *s, int core, const isa_insn *in, const sim_lx_set ops[4])
{
    if (!s->ptq && !(s->ptq = start(s))) {
        fprintf(stderr, "spyre: out of host memory\n");
        abort();
    }
    pt_worker *w = &s->ptq->w[core % s->ptq->n];
    if (!w->threaded) {
        compute(&w->bufs, s->cores[core].lx, core, 0, in, s->cfg.stick_bytes);
        return;
    }
    if (w->submitted - atomic_load(&w->completed) == QUEUE)
        wait_until(w, w->submitted - QUEUE + 1);
    pt_job *j = &w->jobs[w->submitted % QUEUE];
    j->core = core;
    j->in = *in;
    memcpy(j->ops, ops, sizeof j->ops);
    j->bgen = b_current(s->ptq, core, in, &ops[1]);
    uint64_t dlo, dhi;
    set_bounds(&ops[3], &dlo, &dhi);
    b_touch(s->ptq, core, dlo, dhi); /* later products see what this one writes */
    pthread_mutex_lock(&w->mu);
    w->submitted++;
    pthread_cond_signal(&w->more);
    pthread_mutex_unlock(&w->mu);
}

void sim_pt_fence(sim *s, int core, uint64_t lo, uint64_t hi, int is_write)
{
    if (!s->ptq || lo >= hi)
        return;
    if (is_write)
        b_touch(s->ptq, core, lo, hi);
    pt_worker *w = &s->ptq->w[core % s->ptq->n];
    uint64_t done = atomic_load(&w->completed), need = done;
    for (uint64_t i = done; i < w->submitted; i++) {
        const pt_job *j = &w->jobs[i % QUEUE];
        if (j->core != core)
            continue;
        int hit = hits(&j->ops[3], lo, hi);
        for (int r = 0; r < 3 && is_write && !hit; r++)
            hit = hits(&j->ops[r], lo, hi);
        if (hit)
            need = i + 1;
    }
    wait_until(w, need);
}

void sim_pt_drain(sim *s)
{
    if (s->ptq)
        for (int i = 0; i < s->ptq->n; i++)
            wait_until(&s->ptq->w[i], s->ptq->w[i].submitted);
}

void sim_pt_stop(sim *s)
{
    sim_ptq *q = s->ptq;
    if (!q)
        return;
    for (int i = 0; i < q->n; i++) {
        pt_worker *w = &q->w[i];
        if (w->threaded) {
            pthread_mutex_lock(&w->mu);
            w->stop = 1;
            pthread_cond_signal(&w->more);
            pthread_mutex_unlock(&w->mu);
            pthread_join(w->thread, NULL);
        }
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->more);
        pthread_cond_destroy(&w->done);
        free(w->bufs.a);
        free(w->bufs.c);
        for (int c = 0; c < s->cfg.cores * B_CACHED; c++)
            free(w->bufs.bc[c].b);
        free(w->bufs.bc);
        free(w->bufs.bnext);
    }
    free(q->bv);
    free(q->bnext);
    free(q);
    s->ptq = NULL;
}
