/* be_place.c: placement: which of the chip's cores a kernel's division
 * runs on.  A division numbers its cores 0 .. cores - 1; codegen puts
 * core l on the chip's core (base + l) mod ncores (be_work.base), a
 * rotation, so that neighbours on the ring stay neighbours.  A kernel
 * that depends on no earlier kernel and keeps nothing in LX is placed on
 * the cores the cost model expects to be free first: a graph's
 * independent branch (the embedding beside a model's last norm and
 * heads) then runs beside the kernels before it instead of after them on
 * their cores (docs/compiler.md, "Placement"). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* The kernel at pos touches no buffer an earlier kernel writes, writes
 * none an earlier one reads, and keeps or exchanges nothing in LX. */
static int independent(const be_ctx *c, int pos, const char *touched, int *io)
{
    const ir_prog *p = c->p;
    int nr, nw;
    ir_kernel_io(p, p->order[pos], io, &nr, io + p->nbufs, &nw);
    for (int j = 0; j < nr + nw; j++) {
        const int b = j < nr ? io[j] : io[p->nbufs + j - nr];
        const be_res *r = c->res ? &c->res[b] : NULL;
        if ((touched[b] & 2) || (j >= nr && touched[b]) || (r && (r->on || r->heads || r->nx)))
            return 0;
    }
    return 1;
}

/* Mark what the kernel at pos reads (1) and writes (2) in touched. */
static void touch(const be_ctx *c, int pos, char *touched, int *io)
{
    const ir_prog *p = c->p;
    int nr, nw;
    ir_kernel_io(p, p->order[pos], io, &nr, io + p->nbufs, &nw);
    for (int j = 0; j < nr; j++)
        touched[io[j]] |= 1;
    for (int j = 0; j < nw; j++)
        touched[io[p->nbufs + j]] |= 2;
}

/* The latest a core of [base, base + cores) mod n is free. */
static double busy_until(const double *free_at, int n, int base, int cores)
{
    double t = 0;
    for (int l = 0; l < cores; l++)
        t = cc_max(t, free_at[(base + l) % n]);
    return t;
}

/* Did an earlier kernel on other cores write what pos reads or
 * writes, since the last bar (wrote[b]: the writer's position + 1)?
 * Then codegen puts a bar before it (be_bound.c), every core waits. */
static int needs_bar(const be_ctx *c, int pos, const int *wrote, int last_bar, int *io)
{
    const ir_prog *p = c->p;
    int nr, nw;
    ir_kernel_io(p, p->order[pos], io, &nr, io + p->nbufs, &nw);
    for (int j = 0; j < nr + nw; j++) {
        const int b = j < nr ? io[j] : io[p->nbufs + j - nr];
        const int k = wrote[b] - 1;
        if (k >= last_bar && (c->work[k].base != c->work[pos].base || c->work[k].cores != c->work[pos].cores))
            return 1;
    }
    return 0;
}

/* No kernel's division was set to this one's cores to keep a tensor in
 * LX (be_work.aligned_to, ahead), and it was set to none's. */
static int unaligned(const be_ctx *c, int pos)
{
    if (c->work[pos].aligned_to || c->work[pos].ahead)
        return 0;
    for (int k = 0; k < c->p->norder; k++)
        if (c->work[k].aligned_to == pos + 1 || c->work[k].ahead == pos + 1)
            return 0;
    return 1;
}

/* The base with the earliest start for a kernel of `cores` cores (the
 * lowest of equals: 0 unless another is earlier). */
static int best_base(const double *free_at, int n, int cores)
{
    int best = 0;
    double t0 = busy_until(free_at, n, 0, cores);
    for (int b = 1; b < n && cores < n; b++) {
        const double t = busy_until(free_at, n, b, cores);
        if (t < t0) {
            t0 = t;
            best = b;
        }
    }
    return best;
}

void be_place(be_ctx *c)
{
    const ir_prog *p = c->p;
    const int n = (int)c->cfg->cores;
    char *touched = ir_xalloc((size_t)p->nbufs + 1);
    int *io = ir_xalloc(2 * ((size_t)p->nbufs + 1) * sizeof *io), *wrote = ir_xalloc(((size_t)p->nbufs + 1) * sizeof *wrote);
    double *free_at = ir_xalloc((size_t)n * sizeof *free_at);
    memset(touched, 0, (size_t)p->nbufs + 1);
    memset(wrote, 0, ((size_t)p->nbufs + 1) * sizeof *wrote);
    memset(free_at, 0, (size_t)n * sizeof *free_at);
    int last_bar = 0, any = 0;
    for (int i = 0; i < p->norder && !any; i++) { /* the estimates below only where a kernel may move */
        any = i > 0 && c->work[i].cores < n && unaligned(c, i) && independent(c, i, touched, io);
        touch(c, i, touched, io);
    }
    memset(touched, 0, (size_t)p->nbufs + 1);
    for (int i = 0; i < p->norder && any; i++) {
        be_work *w = &c->work[i];
        const int cores = w->cores < 1 ? n : w->cores < n ? w->cores : n;
        if (i > 0 && cores < n && unaligned(c, i) && independent(c, i, touched, io))
            w->base = best_base(free_at, n, cores);
        if (needs_bar(c, i, wrote, last_bar, io)) {
            const double t = busy_until(free_at, n, 0, n);
            for (int q = 0; q < n; q++)
                free_at[q] = t;
            last_bar = i;
        }
        const double end = busy_until(free_at, n, w->base, cores) + be_kind_of(c, i)->estimate(c, i);
        for (int l = 0; l < cores; l++)
            free_at[(w->base + l) % n] = end;
        touch(c, i, touched, io);
        int nr, nw;
        ir_kernel_io(p, p->order[i], io, &nr, io + p->nbufs, &nw);
        for (int j = 0; j < nw; j++)
            wrote[io[p->nbufs + j]] = i + 1;
    }
    free(touched);
    free(io);
    free(wrote);
    free(free_at);
}

/* Codegen emits kernel pos's core l through c->em[l]: the emitters of
 * the chip's cores turned by its base, each told its core in the
 * division (in: 1), and back (in: 0). */
void be_em_place(be_ctx *c, int pos, int in)
{
    const int n = (int)c->cfg->cores, base = c->work[pos].base;
    if (base == 0)
        return;
    cc_emit *tmp = ir_xalloc((size_t)n * sizeof *tmp);
    memcpy(tmp, c->em, (size_t)n * sizeof *tmp);
    for (int l = 0; l < n; l++) {
        cc_emit *e = in ? &c->em[l] : &c->em[(base + l) % n];
        *e = in ? tmp[(base + l) % n] : tmp[l];
        e->core = in ? l : e->phys;
    }
    free(tmp);
}
