/* collective.c: collectives between cards (docs/multicard.md): the ring
 * algorithm's cost on the system's links, and the one-process link, where
 * every card is a thread and the last to arrive combines the data. */
#include "rt_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

double rt_coll_ns(const chip_system *sys, int ncards, rt_coll_kind k, uint64_t bytes)
{
    if (ncards <= 1)
        return 0;
    /* a ring of N cards: N-1 steps per pass, each card sending bytes/N on
     * its own link while receiving as much on it; allreduce is a
     * reduce-scatter pass then an allgather pass */
    double steps = ncards - 1, passes = k == RT_COLL_ALLREDUCE ? 2 : 1;
    double step_ns = (double)bytes / ncards / sys->link_bytes_per_s * 1e9 + sys->link_latency_ns;
    return passes * steps * step_ns;
}

void rt_set_link(rt_device *dev, const rt_link_ops *ops, void *ctx, int card)
{
    dev->link = ops;
    dev->link_ctx = ctx;
    dev->card = card;
}

/* ---- The one-process link ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chip_system sys;
    int n, arrived;
    unsigned gen;       /* collectives completed */
    rt_coll *posted[64];
    char left[64];      /* cards whose run ended */
    int failed;
    char msg[512];
} tlink;

void *rt_threads_link_new(const chip_system *sys, int ncards)
{
    if (ncards < 1 || ncards > 64)
        return NULL;
    tlink *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->sys = *sys;
    l->n = ncards;
    return l;
}

void rt_threads_link_free(void *link)
{
    tlink *l = link;
    if (!l)
        return;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

/* Every card posted the same collective on the same sizes?  Else the
 * cards' programs disagree: a message naming the first card that differs. */
static int same_everywhere(tlink *l)
{
    const rt_coll *a = l->posted[0];
    for (int c = 1; c < l->n; c++) {
        const rt_coll *b = l->posted[c];
        if (b->kind != a->kind || b->nin != a->nin || b->nout != a->nout || (!b->in) != (!a->in)) {
            snprintf(l->msg, sizeof l->msg, "card %d reached %s of %lld values where card 0 reached %s of %lld", c,
                     gr_coll_names[b->kind], (long long)b->nin, gr_coll_names[a->kind], (long long)a->nin);
            return 0;
        }
    }
    return 1;
}

void rt_coll_combine(rt_coll_kind kind, int ncards, const float *const *ins, int64_t nin, int card, float *out,
                     int64_t nout)
{
    for (int64_t i = 0; i < nout; i++) {
        if (kind == RT_COLL_ALLGATHER) {
            out[i] = ins[i / nin][i % nin];
            continue;
        }
        int64_t src = kind == RT_COLL_REDUCE_SCATTER ? (int64_t)card * nout + i : i;
        float s = 0;
        for (int k = 0; k < ncards; k++) /* in card order, whoever arrived first */
            s += ins[k][src];
        out[i] = s;
    }
}

/* The data of every card, when the run computes values. */
static void combine(tlink *l)
{
    const rt_coll *a = l->posted[0];
    if (!a->in)
        return;
    const float *ins[64];
    for (int c = 0; c < l->n; c++)
        ins[c] = l->posted[c]->in;
    for (int c = 0; c < l->n; c++)
        rt_coll_combine(a->kind, l->n, ins, a->nin, c, l->posted[c]->out, l->posted[c]->nout);
}

/* The last card to arrive: combine, time, release everyone. */
static void complete(tlink *l)
{
    if (!same_everywhere(l)) {
        l->failed = 1;
        return;
    }
    double last = 0;
    for (int c = 0; c < l->n; c++)
        if (l->posted[c]->at_ns > last)
            last = l->posted[c]->at_ns;
    const rt_coll *a = l->posted[0];
    double cost = rt_coll_ns(&l->sys, l->n, a->kind, a->bytes);
    combine(l);
    for (int c = 0; c < l->n; c++) {
        l->posted[c]->done_ns = last + cost;
        l->posted[c]->cost_ns = cost;
    }
    l->arrived = 0;
    memset(l->posted, 0, sizeof l->posted);
    l->gen++;
}

/* A card that has left can never arrive: fail whoever waits for it. */
static void check_left(tlink *l)
{
    for (int c = 0; c < l->n && l->arrived && !l->failed; c++)
        if (l->left[c] && !l->posted[c]) {
            snprintf(l->msg, sizeof l->msg, "card %d ended its run without reaching this collective", c);
            l->failed = 1;
        }
}

static int tlink_collective(void *ctx, rt_coll *c, char *err, size_t errlen)
{
    tlink *l = ctx;
    pthread_mutex_lock(&l->mu);
    unsigned gen = l->gen;
    if (!l->failed) {
        l->posted[c->card] = c;
        if (++l->arrived == l->n)
            complete(l);
        else
            check_left(l);
    }
    while (!l->failed && l->gen == gen)
        pthread_cond_wait(&l->cv, &l->mu);
    int rc = l->gen != gen ? 0 : isa_errf(err, errlen, "%s", l->msg);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

static void tlink_leave(void *ctx, int card, const char *msg)
{
    tlink *l = ctx;
    pthread_mutex_lock(&l->mu);
    l->left[card] = 1;
    if (msg && !l->failed) {
        snprintf(l->msg, sizeof l->msg, "card %d failed: %s", card, msg);
        l->failed = 1;
    }
    check_left(l);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

const rt_link_ops rt_threads_link_ops = {tlink_collective, tlink_leave};

/* ---- Every card at once ---- */

typedef struct {
    rt_program *prog;
    rt_run_result *res;
    int rc;
} card_run;

static void *card_thread(void *arg)
{
    card_run *r = arg;
    rt_device *dev = r->prog->dev;
    r->rc = rt_launch(r->prog, r->res);
    char line[600];
    if (r->rc)
        rt_run_format(r->res, line, sizeof line);
    if (dev->link)
        dev->link->leave(dev->link_ctx, dev->card, r->rc ? line : NULL);
    return NULL;
}

int rt_launch_cards(rt_program *const *progs, int ncards, rt_run_result *res)
{
    card_run *runs = calloc((size_t)ncards, sizeof *runs);
    pthread_t *th = calloc((size_t)ncards, sizeof *th);
    if (!runs || !th)
        abort();
    for (int c = 0; c < ncards; c++) {
        runs[c] = (card_run){progs[c], &res[c], 0};
        if (pthread_create(&th[c], NULL, card_thread, &runs[c]))
            abort();
    }
    int bad = 0;
    for (int c = 0; c < ncards; c++) {
        pthread_join(th[c], NULL);
        bad += runs[c].rc != 0;
    }
    free(runs);
    free(th);
    return bad;
}
