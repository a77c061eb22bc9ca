/* be_place.c: placement: which of the chip's cores a kernel's division
 * runs on.  A division numbers its cores 0 .. cores - 1; codegen puts
 * core l on the chip's core (base + l) mod ncores (be_work.base), a
 * rotation, so that neighbours on the ring stay neighbours.  A kernel
 * that depends on no kernel since the last bar and keeps nothing in LX is
 * placed on the cores the cost model expects to be free first: a graph's
 * independent branches (the heads and the embedding after a model's last
 * norm) then run beside each other instead of one after another on the
 * same cores (docs/compiler.md, "Placement"). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* The kernel at pos touches no buffer an earlier kernel (since the last
 * bar: touched) writes, writes none such a kernel reads, and keeps or
 * exchanges nothing in LX. */
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

typedef struct {
    char *touched;   /* per buffer, by the kernels since the last bar: read 1, written 2 */
    int *io, *wrote; /* ir_kernel_io's lists; per buffer its last writer's position + 1 */
    double *free_at; /* per chip core: when the estimates expect it free */
    int last_bar;
} place_walk;

/* Kernel i in the walk: the bar before it, if its dependencies cross
 * cores (then everything before is ordered: touched forgets it), and
 * whether it may move.  With estimates (est): it moves to the base whose
 * cores are free first and occupies them; else only says it could
 * move. */
static int place_step(be_ctx *c, place_walk *pw, int i, int est)
{
    const ir_prog *p = c->p;
    const int n = (int)c->cfg->cores;
    be_work *w = &c->work[i];
    const int cores = w->cores < 1 ? n : w->cores < n ? w->cores : n;
    if (needs_bar(c, i, pw->wrote, pw->last_bar, pw->io)) {
        const double t = busy_until(pw->free_at, n, 0, n);
        for (int q = 0; q < n; q++)
            pw->free_at[q] = t;
        pw->last_bar = i;
        memset(pw->touched, 0, (size_t)p->nbufs + 1);
    }
    const int movable = i > 0 && cores < n && unaligned(c, i) && independent(c, i, pw->touched, pw->io);
    if (est) {
        if (movable)
            w->base = best_base(pw->free_at, n, cores);
        const double end = busy_until(pw->free_at, n, w->base, cores) + be_kind_of(c, i)->estimate(c, i);
        for (int l = 0; l < cores; l++)
            pw->free_at[(w->base + l) % n] = end;
    }
    touch(c, i, pw->touched, pw->io);
    int nr, nw;
    ir_kernel_io(p, p->order[i], pw->io, &nr, pw->io + p->nbufs, &nw);
    for (int j = 0; j < nw; j++)
        pw->wrote[pw->io[p->nbufs + j]] = i + 1;
    return movable;
}

/* Walk the kernels in order (est: with the estimates, placing them);
 * whether any may move. */
static int place_walk_all(be_ctx *c, int est)
{
    const ir_prog *p = c->p;
    const size_t nb = (size_t)p->nbufs + 1;
    place_walk pw = {ir_xalloc(nb), ir_xalloc(2 * nb * sizeof *pw.io), ir_xalloc(nb * sizeof *pw.wrote),
                     ir_xalloc((size_t)c->cfg->cores * sizeof *pw.free_at), 0};
    int any = 0;
    for (int i = 0; i < p->norder && (est || !any); i++)
        any |= place_step(c, &pw, i, est);
    free(pw.touched);
    free(pw.io);
    free(pw.wrote);
    free(pw.free_at);
    return any;
}

void be_place(be_ctx *c)
{
    if (place_walk_all(c, 0)) /* the estimates only where a kernel may move */
        place_walk_all(c, 1);
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
