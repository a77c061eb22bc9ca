/* be_place.c: placement: which of the chip's cores a kernel's division
 * runs on.  A division numbers its cores 0 .. cores - 1; codegen puts
 * core l on the chip's core (base + l) mod ncores (be_work.base), a
 * rotation, so that neighbours on the ring stay neighbours.  With
 * --placement independent a kernel that depends on no earlier kernel (free:
 * on none since the last bar) and keeps nothing in LX is placed on the
 * cores the cost model expects to be free first: a graph's independent
 * branches (the heads and the embedding after a model's last norm) then
 * run beside each other instead of one after another on the same cores
 * (docs/compiler.md, "Placement"). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* Kept tensor b is rows on its producer's cores (not a grid's tiles, no
 * exchange or hand-off by stick group) that pos did not write or load
 * into LX, and it has DRAM (its producer can write it there too). */
static int kept_rows(const be_ctx *c, int b, int pos)
{
    const be_res *r = c->res ? &c->res[b] : NULL;
    return r && r->on && !r->heads && !r->grid && !r->nx && r->from != pos && c->lay[b].dram;
}

/* A read of kept tensor b from LX (be_res.uses) that the kernel at pos
 * could take from DRAM instead (release). */
static int releasable(const be_ctx *c, int b, int pos)
{
    return kept_rows(c, b, pos) && be_res_reads(c, b, pos);
}

/* Does a kernel's read (writes 0) or write (1) of buffer b depend on the
 * kernels marked in touched (touch: read 1, written 2)? */
static int conflicts(const char *touched, int b, int writes)
{
    return (touched[b] & 2) || (writes && touched[b]);
}

/* The kernel at pos touches no buffer an earlier kernel (since the last
 * bar: touched) writes, writes none such a kernel reads, and keeps or
 * exchanges nothing in LX but reads it could take from DRAM. */
static int independent(const be_ctx *c, int pos, const char *touched, int *io)
{
    const ir_prog *p = c->p;
    int nr, nw;
    ir_kernel_io(p, p->order[pos], io, &nr, io + p->nbufs, &nw);
    for (int j = 0; j < nr + nw; j++) {
        const int b = j < nr ? io[j] : io[p->nbufs + j - nr];
        const be_res *r = c->res ? &c->res[b] : NULL;
        if (conflicts(touched, b, j >= nr) || (r && (r->heads || r->nx)))
            return 0;
        if (r && r->on && (j >= nr || (be_res_reads(c, b, pos) && !releasable(c, b, pos))))
            return 0;
    }
    return 1;
}

/* The kernel at pos takes its releasable reads from DRAM (on: 1), their
 * producers writing them there (dram_was: each one's be_res.dram
 * before), or from LX again (on: 0); the number of such reads. */
static int release(be_ctx *c, int pos, int on, char *dram_was, int *io)
{
    const ir_prog *p = c->p;
    int nr, nw, n = 0;
    ir_kernel_io(p, p->order[pos], io, &nr, io + p->nbufs, &nw);
    for (int j = 0; j < nr; j++) {
        if (!kept_rows(c, io[j], pos))
            continue;
        be_res *r = &c->res[io[j]];
        int at = 0;
        while (at < r->nuses && r->uses[at] < pos)
            at++;
        const int has = at < r->nuses && r->uses[at] == pos;
        if (on && has) {
            memmove(&r->uses[at], &r->uses[at + 1], (size_t)(r->nuses - at - 1) * sizeof *r->uses);
            r->nuses--;
            dram_was[io[j]] = (char)r->dram;
            r->dram = r->dram || !r->loaded; /* an input loaded into LX is in DRAM already */
            n++;
        } else if (!on && !has && dram_was[io[j]] >= 0) { /* uses had room for it */
            memmove(&r->uses[at + 1], &r->uses[at], (size_t)(r->nuses - at) * sizeof *r->uses);
            r->uses[at] = pos;
            r->nuses++;
            r->dram = dram_was[io[j]];
            dram_was[io[j]] = -1;
            n++;
        }
    }
    return n;
}

/* Mark what the kernel at pos reads (1) and writes (2) in touched, and
 * itself (pos + 1) as the last writer of what it writes in wrote (unless
 * NULL). */
static void touch(const be_ctx *c, int pos, char *touched, int *wrote, int *io)
{
    const ir_prog *p = c->p;
    int nr, nw;
    ir_kernel_io(p, p->order[pos], io, &nr, io + p->nbufs, &nw);
    for (int j = 0; j < nr; j++)
        touched[io[j]] |= 1;
    for (int j = 0; j < nw; j++) {
        touched[io[p->nbufs + j]] |= 2;
        if (wrote)
            wrote[io[p->nbufs + j]] = pos + 1;
    }
}

/* The chip's cores the kernel at pos runs on, as many as it has work for
 * (all of them when that is not a count: a host op's). */
static int span_of(const be_ctx *c, int pos)
{
    const int n = (int)c->cfg->cores, cores = c->work[pos].cores;
    return cores < 1 || cores > n ? n : cores;
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

/* Do [b, b + cores) and [lo, lo + len) mod n share a core? */
static int overlaps(int n, int b, int cores, int lo, int len)
{
    for (int l = 0; l < cores; l++)
        if (((b + l) % n - lo + n) % n < len)
            return 1;
    return 0;
}

/* The base with the earliest start for a kernel of `cores` cores: of
 * equals the lowest whose cores miss [lo, lo + len) mod n (len 0: none
 * to miss), else the lowest (0 unless another is earlier). */
static int best_base(const double *free_at, int n, int cores, int lo, int len)
{
    int best = 0, missed = !overlaps(n, 0, cores, lo, len);
    double t0 = busy_until(free_at, n, 0, cores);
    for (int b = 1; b < n && cores < n; b++) {
        const double t = busy_until(free_at, n, b, cores);
        const int misses = !overlaps(n, b, cores, lo, len);
        if (t < t0 || (t == t0 && misses && !missed)) {
            t0 = t;
            best = b;
            missed = misses;
        }
    }
    return best;
}

/* The kernel after pos, when it cannot move (its division set to another
 * kernel's cores for LX, or another's to its) and does not depend on pos
 * (conflicts): its cores, [*lo, *lo + len), which pos placed
 * elsewhere from as early does not hold up.  A decode step's QK^T over
 * the KV pool (one core, after a bar) went to core 0, and QK^T of the
 * new keys, on the RoPE's 8 cores for LX, ran its core 0 part after it.
 * Returns len, 0: none. */
static int next_pinned(const be_ctx *c, int pos, int *lo, int *io)
{
    const ir_prog *p = c->p;
    const int j = pos + 1;
    if (j >= p->norder || unaligned(c, j))
        return 0;
    char *t = ir_xalloc((size_t)p->nbufs + 1);
    touch(c, pos, t, NULL, io);
    int nr, nw, dep = 0;
    ir_kernel_io(p, p->order[j], io, &nr, io + p->nbufs, &nw);
    for (int k = 0; k < nr + nw && !dep; k++)
        dep = conflicts(t, k < nr ? io[k] : io[p->nbufs + k - nr], k >= nr);
    free(t);
    *lo = c->work[j].base;
    return dep ? 0 : span_of(c, j);
}

typedef struct {
    char *touched;   /* per buffer, by the kernels since the last bar: read 1, written 2 */
    char *dram_was;  /* per buffer: be_res.dram before a reader was released (-1: none is) */
    int *io, *wrote; /* ir_kernel_io's lists; per buffer its last writer's position + 1 */
    double *free_at; /* per chip core: when the estimates expect it free */
    int last_bar;
} place_walk;

/* The base for the movable kernel at pos: the one whose cores are free
 * first, unless the reads it would then take from DRAM instead of LX make
 * it end no earlier than on its own cores. */
static int place_base(be_ctx *c, place_walk *pw, int pos, int cores)
{
    int lo = 0;
    const int len = next_pinned(c, pos, &lo, pw->io);
    const int n = (int)c->cfg->cores, base = best_base(pw->free_at, n, cores, lo, len);
    if (base == 0)
        return 0;
    const double stay = busy_until(pw->free_at, n, 0, cores) + be_kind_of(c, pos)->estimate(c, pos);
    if (!release(c, pos, 1, pw->dram_was, pw->io))
        return base;
    const double move = busy_until(pw->free_at, n, base, cores) + be_kind_of(c, pos)->estimate(c, pos);
    if (move < stay)
        return base;
    release(c, pos, 0, pw->dram_was, pw->io);
    return 0;
}

/* Would a bar before kernel i, which needs none, let the kernel after it
 * move (est: to cores free earlier)?  With est only a bar that delays
 * nothing: every core is free by when i starts.  A bar before i orders
 * everything before it, so the next kernel then depends only on i. */
static int bar_lets_next_move(be_ctx *c, const place_walk *pw, int i, int est)
{
    const ir_prog *p = c->p;
    const int n = (int)c->cfg->cores, j = i + 1;
    if (i == 0 || j >= p->norder || span_of(c, j) >= n || !unaligned(c, j))
        return 0;
    const int ci = span_of(c, i);
    const double start = busy_until(pw->free_at, n, c->work[i].base, ci);
    if (est && busy_until(pw->free_at, n, 0, n) > start)
        return 0;
    char *t = ir_xalloc((size_t)p->nbufs + 1);
    memcpy(t, pw->touched, (size_t)p->nbufs + 1);
    touch(c, i, t, NULL, pw->io);
    const int already = independent(c, j, t, pw->io); /* it moves without the bar */
    memset(t, 0, (size_t)p->nbufs + 1);
    touch(c, i, t, NULL, pw->io);
    int ok = !already && independent(c, j, t, pw->io);
    free(t);
    if (ok && est) {
        double *f = ir_xalloc((size_t)n * sizeof *f);
        const double end = start + be_kind_of(c, i)->estimate(c, i);
        for (int q = 0; q < n; q++)
            f[q] = start;
        for (int l = 0; l < ci; l++)
            f[(c->work[i].base + l) % n] = end;
        ok = best_base(f, n, span_of(c, j), 0, 0) != 0;
        free(f);
    }
    return ok;
}

/* Everything before kernel i ordered for every core (a bar before it). */
static void walk_bar(const be_ctx *c, place_walk *pw, int i)
{
    const int n = (int)c->cfg->cores;
    const double t = busy_until(pw->free_at, n, 0, n);
    for (int q = 0; q < n; q++)
        pw->free_at[q] = t;
    pw->last_bar = i;
    if (c->p->opts.placement == CC_PLACE_FREE) /* else a kernel moves only if it depends on no earlier one */
        memset(pw->touched, 0, (size_t)c->p->nbufs + 1);
}

/* Kernel i in the walk: the bar before it, if its dependencies cross
 * cores or it lets the next kernel move (then everything before is
 * ordered: touched forgets it), and whether it may move.  With estimates
 * (est): it moves to the base whose cores are free first and occupies
 * them; else only says it could move. */
static int place_step(be_ctx *c, place_walk *pw, int i, int est)
{
    const int n = (int)c->cfg->cores, cores = span_of(c, i);
    be_work *w = &c->work[i];
    if (needs_bar(c, i, pw->wrote, pw->last_bar, pw->io))
        walk_bar(c, pw, i);
    int movable = i > 0 && cores < n && unaligned(c, i) && independent(c, i, pw->touched, pw->io);
    if (!movable && pw->last_bar != i && c->p->opts.placement == CC_PLACE_FREE && bar_lets_next_move(c, pw, i, est)) {
        w->bar_before = est;
        movable = !est; /* without the estimates: something may move */
        walk_bar(c, pw, i);
    }
    if (est && movable)
        w->base = place_base(c, pw, i, cores);
    if (est) {
        const double end = busy_until(pw->free_at, n, w->base, cores) + be_kind_of(c, i)->estimate(c, i);
        for (int l = 0; l < cores; l++)
            pw->free_at[(w->base + l) % n] = end;
    }
    touch(c, i, pw->touched, pw->wrote, pw->io);
    return movable;
}

/* Walk the kernels in order (est: with the estimates, placing them);
 * whether any may move. */
static int place_walk_all(be_ctx *c, int est)
{
    const ir_prog *p = c->p;
    const size_t nb = (size_t)p->nbufs + 1;
    place_walk pw = {ir_xalloc(nb), ir_xalloc(nb), ir_xalloc(2 * nb * sizeof *pw.io), ir_xalloc(nb * sizeof *pw.wrote),
                     ir_xalloc((size_t)c->cfg->cores * sizeof *pw.free_at), 0};
    memset(pw.dram_was, -1, nb);
    int any = 0;
    for (int i = 0; i < p->norder && (est || !any); i++)
        any |= place_step(c, &pw, i, est);
    free(pw.touched);
    free(pw.dram_was);
    free(pw.io);
    free(pw.wrote);
    free(pw.free_at);
    return any;
}

void be_place(be_ctx *c)
{
    if (c->p->opts.placement != CC_PLACE_NONE && place_walk_all(c, 0)) /* the estimates only where a kernel may move */
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
