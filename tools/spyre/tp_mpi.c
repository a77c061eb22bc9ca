/* tp_mpi.c: the MPI link (docs/multicard.md): under `mpirun -np N spyre run
 * GRAPH --tp N` each rank simulates one card, and the cards meet at a
 * collective through MPI.  Every collective is one round: an allreduce of
 * a header (each rank's state, arrival time and sizes), then the cards'
 * inputs gathered on every rank and combined there in card order
 * (rt_coll_combine), so the bits and the cycles are the one-process link's.
 * A rank whose run has ended keeps taking part in rounds until every rank
 * has, so a failure stops every rank with the failing card's message. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "tp.h"

enum { AT_COLL = 0, ENDED = 1, FAILED = 2 };
enum { H_STATE, H_KIND, H_NIN, H_VALUES, H_NKIND, H_NNIN, H_NSTATE, H_AT, H_BYTES, NH };

typedef struct {
    chip_system sys;
    int rank, size;
    char msg[512]; /* this rank's failure */
} mlink;

int tp_mpi_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int tp_mpi_begin(int *rank, int *size)
{
    int argc = 0;
    char **argv = NULL;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

void tp_mpi_end(void)
{
    MPI_Finalize();
}

void *tp_mpi_link_new(const chip_system *sys, int rank, int size)
{
    mlink *l = calloc(1, sizeof *l);
    if (!l)
        abort();
    l->sys = *sys;
    l->rank = rank;
    l->size = size;
    return l;
}

void tp_mpi_link_free(void *link)
{
    free(link);
}

/* One header round; out gets the maxima (the negated fields: minima). */
static void round_header(const mlink *l, int state, const rt_coll *c, double *out)
{
    double h[NH] = {0};
    h[H_STATE] = state;
    h[H_NSTATE] = -state;
    if (c) {
        h[H_KIND] = c->kind;
        h[H_NKIND] = -(double)c->kind;
        h[H_NIN] = (double)c->nin;
        h[H_NNIN] = -(double)c->nin;
        h[H_VALUES] = c->in != NULL;
        h[H_AT] = c->at_ns;
        h[H_BYTES] = (double)c->bytes;
    }
    MPI_Allreduce(h, out, NH, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    (void)l;
}

/* Some rank has left: the lowest one in the worst state says why, to all. */
static void why_left(const mlink *l, int state, const double *h, char *msg, size_t len)
{
    int mine = state == (int)h[H_STATE] ? l->rank : INT_MAX, who;
    MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char buf[512];
    if (l->rank == who) {
        if (state == FAILED)
            snprintf(buf, sizeof buf, "card %d failed: %.480s", who, l->msg);
        else
            snprintf(buf, sizeof buf, "card %d ended its run without reaching this collective", who);
    }
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, who, MPI_COMM_WORLD);
    snprintf(msg, len, "%s", buf);
}

static int mlink_collective(void *ctx, rt_coll *c, char *err, size_t errlen)
{
    mlink *l = ctx;
    double h[NH];
    round_header(l, AT_COLL, c, h);
    if (h[H_STATE] > AT_COLL) {
        why_left(l, AT_COLL, h, err, errlen);
        return -1;
    }
    if (h[H_KIND] != -h[H_NKIND] || h[H_NIN] != -h[H_NNIN])
        return isa_errf(err, errlen, "the cards reached different collectives (kinds or sizes differ)");
    if (c->in) {
        float *all = malloc((size_t)(c->nin ? c->nin : 1) * (size_t)l->size * sizeof *all);
        const float **ins = malloc((size_t)l->size * sizeof *ins);
        if (!all || !ins)
            abort();
        MPI_Allgather(c->in, (int)c->nin, MPI_FLOAT, all, (int)c->nin, MPI_FLOAT, MPI_COMM_WORLD);
        for (int k = 0; k < l->size; k++)
            ins[k] = all + (size_t)k * (size_t)c->nin;
        rt_coll_combine(c->kind, l->size, ins, c->nin, l->rank, c->out, c->nout);
        free(ins);
        free(all);
    }
    c->cost_ns = rt_coll_ns(&l->sys, l->size, c->kind, c->bytes);
    c->done_ns = h[H_AT] + c->cost_ns;
    return 0;
}

static void mlink_leave(void *ctx, int card, const char *msg)
{
    mlink *l = ctx;
    (void)card;
    int state = msg ? FAILED : ENDED;
    if (msg)
        snprintf(l->msg, sizeof l->msg, "%s", msg);
    for (;;) {
        double h[NH];
        round_header(l, state, NULL, h);
        if (-h[H_NSTATE] >= ENDED)
            return; /* every rank has left */
        char why[512];
        why_left(l, state, h, why, sizeof why);
    }
}

const rt_link_ops tp_mpi_link_ops = {mlink_collective, mlink_leave};

void tp_mpi_gather(const void *mine, size_t bytes, void *all)
{
    MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void tp_mpi_gather_text(char **texts, size_t *lens, int rank, int size)
{
    long long mine = (long long)lens[rank], *all = calloc((size_t)size, sizeof *all);
    int *counts = calloc((size_t)size, sizeof *counts), *at = calloc((size_t)size, sizeof *at);
    if (!all || !counts || !at)
        abort();
    MPI_Gather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    long long total = 0;
    for (int r = 0; r < size; r++) {
        if (all[r] > INT_MAX - total) { /* MPI counts are ints: a trace past 2 GB on rank 0 */
            fprintf(stderr, "spyre run: the cards' trace passes 2 GB (try --trace-level kernel)\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        counts[r] = (int)all[r];
        at[r] = (int)total;
        total += all[r];
    }
    char *buf = rank == 0 ? malloc((size_t)total + 1) : NULL;
    if (rank == 0 && !buf)
        abort();
    MPI_Gatherv(texts[rank], (int)mine, MPI_CHAR, buf, counts, at, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++) {
        free(texts[r]);
        texts[r] = malloc((size_t)counts[r] + 1);
        if (!texts[r])
            abort();
        memcpy(texts[r], buf + at[r], (size_t)counts[r]);
        lens[r] = (size_t)counts[r];
    }
    free(buf);
    free(at);
    free(counts);
    free(all);
}

int tp_mpi_agree(int status)
{
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
}

int tp_mpi_any(int bad)
{
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}
