/* be_lxplan.c: the lxplan pass: which tensors stay in LX from one kernel
 * to later ones, where, and the ring exchanges between kernels split over
 * different cores, and the pass's dump.  Codegen reads the decisions
 * through be_lxres.c. */
#include "backend.h"

#include <assert.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- lxplan: tensors kept in LX across kernels ----
 *
 * A result stays in LX from its producer to a later kernel when both
 * walk it aligned (be_access) and split its rows over the same number of
 * cores: each core then keeps exactly the rows it wrote and later reads.
 * The plan walks the kernels in order.  A new result gets the highest LX
 * range that is free and lies above the working LX (its kind's need)
 * of every kernel it lives through; when none is free,
 * of it and the tensors already kept the one read again furthest in the
 * future leaves LX (Belady): a kept tensor "spills" (its producer also
 * writes it to DRAM, and its later readers reload it from there), the new
 * one simply goes to DRAM.
 *
 * A later kernel that walks the tensor aligned but splits its rows over
 * another number of cores gets it by a ring exchange (be_xreg) when that
 * is estimated cheaper than the DRAM round trip and its region fits LX
 * above the kernel's working LX; otherwise it reads DRAM. */

typedef struct lx_cand {
    int *uses;    /* positions that read it aligned, ascending */
    int nuses;
    int *xuses;   /* positions that read it aligned on another number of cores (a ring exchange) */
    int nxuses;
    int producer; /* position that writes it aligned (-1: none) */
    int cores;    /* the producer's cores */
    int grid;     /* the producer's grid over the ring (be_access.grid), 0: none */
    int *guses;   /* positions on that grid that read it as their tiles, ascending */
    int nguses;
    int other;    /* read or written some other way: DRAM needed */
    int loaded;   /* an input its producer (the first reader that keeps it) loads: be_res.loaded */
    int hprod;    /* by stick group (be_res.heads): the producer that can send its groups (-1: none) */
    int *hreads;  /* ... the positions after it that read whole stick groups, ascending */
    int nhreads;
    int hother;   /* ... read or written some other way */
} lx_cand;

static int next_use(const lx_cand *x, int pos)
{
    int n = INT_MAX;
    for (int i = 0; i < x->nuses; i++)
        if (x->uses[i] >= pos && x->uses[i] < n)
            n = x->uses[i];
    for (int i = 0; i < x->nxuses; i++)
        if (x->xuses[i] >= pos && x->xuses[i] < n)
            n = x->xuses[i];
    for (int i = 0; i < x->nguses; i++)
        if (x->guses[i] >= pos && x->guses[i] < n)
            n = x->guses[i];
    return n;
}

/* The last position that reads candidate x from LX (-1: none). */
static int last_use(const lx_cand *x)
{
    return cc_max(cc_max(x->nuses ? x->uses[x->nuses - 1] : -1, x->nxuses ? x->xuses[x->nxuses - 1] : -1),
                  x->nguses ? x->guses[x->nguses - 1] : -1);
}

/* The highest stick-aligned range of `bytes` in [floor, top) that no
 * region of the tensors in LX at pos overlaps; -1 when none. */
static int64_t lx_fit(const be_ctx *c, int pos, int64_t floor, int64_t top, int64_t bytes)
{
    const ir_prog *p = c->p;
    int64_t hi = top;
    for (;;) {
        int64_t lo = hi - bytes;
        if (lo < floor)
            return -1;
        int64_t clash = -1; /* the lowest start of a region overlapping [lo, hi) */
        for (int b = 0; b < p->nbufs; b++) {
            const be_res *r = &c->res[b];
            if ((r->on || r->heads) && r->from <= pos && pos <= r->to && r->lx < hi && lo < r->lx + r->bytes)
                clash = clash < 0 || r->lx < clash ? r->lx : clash;
            const be_xreg *x = be_res_xreg(c, b, pos);
            if (x && x->lx < hi && lo < x->lx + x->bytes)
                clash = clash < 0 || x->lx < clash ? x->lx : clash;
        }
        if (clash < 0)
            return lo;
        hi = clash;
    }
}

static void lx_free(const be_ctx *c, lx_cand *x);

/* Kernel i's accesses to buf b (write or read) for a hand-off by stick
 * group: a producer that sends them, then readers of whole groups. */
static void heads_tally(const be_ctx *c, lx_cand *x, int i, int b, int write, const be_access *acc, int na)
{
    int sends = 0, groups = 0, found = 0;
    for (int a = 0; a < na; a++)
        if (acc[a].buf == b && acc[a].write == write) {
            found = 1;
            sends |= acc[a].sends;
            groups |= acc[a].groups;
            if (write ? !acc[a].sends : !acc[a].groups)
                x->hother = 1;
        }
    if (!found || c->work[i].nokeep)
        x->hother = 1;
    else if (write && x->hprod < 0 && sends)
        x->hprod = i;
    else if (!write && x->hprod >= 0 && groups) {
        x->hreads = ir_xgrow(x->hreads, &(int){x->nhreads}, x->nhreads + 1, sizeof *x->hreads);
        x->hreads[x->nhreads++] = i;
    } else
        x->hother = 1;
}

/* Per buffer: who writes it aligned and which later kernels read it
 * aligned on the same cores (the tensors that could stay in LX); NULL
 * with an error. */
static lx_cand *lx_candidates(be_ctx *c)
{
    ir_prog *p = c->p;
    lx_cand *x = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *x);
    int *reads = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *reads), *writes = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *writes);
    int rc = 0;
    int *written = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *written);
    for (int b = 0; b < p->nbufs; b++) {
        x[b].producer = -1;
        x[b].hprod = -1;
        x[b].hother = p->bufs[b].output || p->bufs[b].kind != IR_BUF_COMPUTED;
        x[b].other = p->bufs[b].output || p->bufs[b].kind != IR_BUF_COMPUTED;
    }
    for (int i = 0; i < p->norder; i++) {
        int nr, nw;
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        for (int j = 0; j < nw; j++)
            written[writes[j]] = 1;
    }
    for (int i = 0; i < p->norder && !rc; i++) {
        int nr, nw, na = 0;
        be_access *acc = NULL;
        ir_kernel_io(p, p->order[i], reads, &nr, writes, &nw);
        if (be_kind_of(c, i)->access(c, i, &acc, &na)) {
            rc = -1;
            break;
        }
        for (int j = 0; j < nr + nw; j++) {
            const int b = j < nr ? reads[j] : writes[j - nr], write = j >= nr;
            if (!c->lay[b].dram)
                continue;
            int aligned = na > 0, grid = -1, keeps = na > 0;
            for (int a = 0; a < na; a++)
                if (acc[a].buf == b && acc[a].write == write) {
                    aligned &= acc[a].aligned;
                    keeps &= acc[a].keeps;
                    grid = grid < 0 || grid == acc[a].grid ? acc[a].grid : 0;
                }
            int found = 0;
            for (int a = 0; a < na; a++)
                found |= acc[a].buf == b && acc[a].write == write;
            heads_tally(c, &x[b], i, b, write, acc, na);
            /* a product on the producer's grid over the ring reads the
             * tiles where they are, even where it could read rows aligned
             * (its A: no copy of the own rows, no sending of the results) */
            if (found && !write && grid > 0 && x[b].producer >= 0 && x[b].grid == grid && !c->work[i].nokeep) {
                x[b].guses = ir_xgrow(x[b].guses, &(int){x[b].nguses}, x[b].nguses + 1, sizeof *x[b].guses);
                x[b].guses[x[b].nguses++] = i;
            } else if (!found || !aligned || c->work[i].nokeep) {
                x[b].other = 1;
            } else if (!write && x[b].producer < 0 && keeps && p->bufs[b].kind == IR_BUF_INPUT && !written[b]) {
                /* an input read aligned again later: its first reader
                 * that can copy the rows it loads keeps them */
                x[b].producer = i;
                x[b].cores = c->work[i].cores;
                x[b].loaded = 1;
            } else if (write) {
                x[b].producer = i;
                x[b].cores = c->work[i].cores;
                x[b].grid = grid > 0 ? grid : 0;
            } else if (x[b].producer >= 0 && c->work[i].cores == x[b].cores) {
                x[b].uses = ir_xgrow(x[b].uses, &(int){x[b].nuses}, x[b].nuses + 1, sizeof *x[b].uses);
                x[b].uses[x[b].nuses++] = i;
            } else if (x[b].producer >= 0) {
                x[b].xuses = ir_xgrow(x[b].xuses, &(int){x[b].nxuses}, x[b].nxuses + 1, sizeof *x[b].xuses);
                x[b].xuses[x[b].nxuses++] = i;
            } else {
                x[b].other = 1;
            }
        }
        free(acc);
    }
    free(reads);
    free(writes);
    free(written);
    if (rc)
        lx_free(c, x);
    return rc ? NULL : x;
}

static void lx_free(const be_ctx *c, lx_cand *x)
{
    for (int b = 0; b < c->p->nbufs; b++) {
        free(x[b].uses);
        free(x[b].xuses);
        free(x[b].guses);
        free(x[b].hreads);
    }
    free(x);
}

/* One sender's transfer of an exchange: a ring.send of `bytes` to core k
 * after the sender's earlier ones, as the simulator times it: its issue,
 * then it waits until every link of its path (the shorter way round) is
 * free and holds them all while its bytes pass; the sender's ring unit is
 * done when the last byte arrives.  *t: the sender's ring unit. */
static void xchg_send(const be_ctx *c, double *link, int core, int k, double bytes, double *t)
{
    const int n = c->cfg->cores;
    const int cw = ((k - core) % n + n) % n, dir = cw <= n - cw ? 0 : 1, hops = dir ? n - cw : cw;
    const double occupy = bytes / c->cfg->ring_bytes_per_cycle;
    double start = *t + c->cfg->dma_issue_cycles;
    for (int h = 0, stop = core; h < hops; h++, stop = ((dir ? stop - 1 : stop + 1) % n + n) % n)
        start = start > link[dir * n + stop] ? start : link[dir * n + stop];
    for (int h = 0, stop = core; h < hops; h++, stop = ((dir ? stop - 1 : stop + 1) % n + n) % n)
        link[dir * n + stop] = start + occupy;
    *t = start + occupy + hops * c->cfg->ring_hop_cycles;
}

/* Estimated cycles of the ring exchange of kept tensor b from its
 * producer's pc cores to the kernel at pos: its transfers timed as the
 * simulator times them (xchg_send), each sender's in the order
 * be_xchg_emit sends them, the sender whose
 * ring unit is free first going next; a sender's rows that stay on it are
 * a dma.lx on its own unit; then the bar.  (Adding up the busiest link's
 * bytes instead estimated 7,712 cycles for 32 -> 16 cores that ran
 * 14,942: transfers that cross wait for each other's whole path.) */
static double xchg_cost(const be_ctx *c, int b, int pc, int pos)
{
    const int n = c->cfg->cores;
    const int64_t rows = c->lay[b].rows, bytes_row = c->lay[b].groups * c->t.stick, qc = c->work[pos].cores;
    double *link = ir_xalloc((size_t)(2 * n + 2 * pc) * sizeof *link), *t = link + 2 * n, *local = t + pc, worst = 0;
    int *next = ir_xalloc((size_t)pc * sizeof *next);
    for (;;) {
        int s = -1;
        for (int core = 0; core < pc; core++)
            if (next[core] < qc && (s < 0 || t[core] < t[s]))
                s = core;
        if (s < 0)
            break;
        int64_t p0, q0, lo, hi;
        const int k = next[s]++;
        be_xchg_share(rows, pc, s, qc, k, &p0, &q0, &lo, &hi);
        const double bytes = lo < hi ? (double)((hi - lo) * bytes_row) : 0;
        if (k == s && bytes > 0)
            local[s] += c->cfg->dma_issue_cycles + bytes / c->cfg->lx_bytes_per_cycle;
        else if (bytes > 0)
            xchg_send(c, link, s, k, bytes, &t[s]);
    }
    for (int core = 0; core < pc; core++)
        worst = cc_max(worst, cc_max(t[core], local[core]));
    free(link);
    free(next);
    return worst + c->cfg->barrier_cycles;
}

/* Does the kernel at pos move data over the ring whatever the exchange
 * of `but` decides: a scheme over the ring, split-K's reduction, or a
 * reader by exchange of another candidate (a bar on both sides then)? */
static int ring_kernel(const be_ctx *c, const lx_cand *x, int pos, int but)
{
    if (c->work[pos].bcast || c->work[pos].gk > 1)
        return 1;
    for (int b = 0; b < c->p->nbufs; b++)
        for (int k = 0; b != but && x[b].producer >= 0 && k < x[b].nxuses; k++)
            if (x[b].xuses[k] == pos)
                return 1;
    return 0;
}

/* The cycles an exchange of b into the kernel at pos costs the kernel after
 * it: the exchange's transfers are ring traffic the reader's cores do not
 * all wait for, so a bar follows the reader (be_bound.h), and a next
 * kernel that reads nothing the reader writes loses its overlap with it,
 * at most the shorter of the two.  None when the reader or the next
 * kernel moves data over the ring anyway (ring_kernel: a bar follows or
 * goes before it whatever this exchange does; on spyre-4core the q, k and
 * v projections each take the normed input by exchange).
 * (serve_tiny's prefill of 128 tokens: the scores exchanged 2 -> 16 cores,
 * 1,132 cycles against 1,800 through DRAM, ran 1,101; the V cache's cat
 * after the softmax, 1,436 cycles, then ran after it rather than beside
 * it, and the layer took 35,417 cycles against 34,313 without the
 * exchange.) */
static double xchg_bar_after(be_ctx *c, const lx_cand *x, int b, int pos)
{
    const ir_prog *p = c->p;
    if (pos + 1 >= p->norder || ring_kernel(c, x, pos, b) || ring_kernel(c, x, pos + 1, -1))
        return 0;
    int *io = ir_xalloc((size_t)(4 * p->nbufs + 4) * sizeof *io), nr, nw, nr2, nw2;
    int *reads = io, *writes = io + p->nbufs + 1, *next = io + 2 * (p->nbufs + 1), *nwrites = next + p->nbufs + 1;
    ir_kernel_io(p, p->order[pos], reads, &nr, writes, &nw);
    ir_kernel_io(p, p->order[pos + 1], next, &nr2, nwrites, &nw2);
    int dep = 0;
    for (int i = 0; i < nr2 && !dep; i++)
        for (int j = 0; j < nw && !dep; j++)
            dep = next[i] == writes[j];
    free(io);
    if (dep)
        return 0;
    const double mine = be_kind_of(c, pos)->estimate(c, pos), after = be_kind_of(c, pos + 1)->estimate(c, pos + 1);
    return mine < after ? mine : after;
}

/* The DRAM round trip an exchange of b replaces (the write only when
 * nothing else needs b in DRAM: dram). */
static double xchg_dram(const be_ctx *c, int b, int dram)
{
    const double bytes = (double)(c->lay[b].rows * c->lay[b].groups * c->t.stick);
    return c->t.dram_bytes_per_cycle > 0 ? bytes * (dram ? 1 : 2) / c->t.dram_bytes_per_cycle : 0;
}

/* A ring exchange of kept tensor b to the kernel at pos, which reads it
 * split over another number of cores: planned when it is estimated
 * cheaper than the DRAM round trip (the write only if nothing else needs
 * the tensor in DRAM), the overlap the bar after the reader costs
 * counted (xchg_bar_after), and its region fits above the kernel's
 * working LX (floor); otherwise the kernel reads DRAM, so the producer
 * writes it. */
static void xchg_plan(be_ctx *c, const lx_cand *x, int b, int pos, int64_t floor, int64_t top)
{
    be_res *r = &c->res[b];
    if (!r->on || pos <= r->from || pos > r->to)
        return; /* not kept (or spilled) by now: DRAM already */
    const int64_t qc = c->work[pos].cores, rows = c->lay[b].rows, sb = c->t.stick;
    be_xreg xr = {pos, (int)qc, 0, cc_ceil_div(rows, qc), cc_ceil_div(rows, qc) * c->lay[b].groups * sb, 0, 0};
    xr.est = xchg_cost(c, b, r->cores, pos);
    xr.dram_est = xchg_dram(c, b, r->dram);
    xr.lx = xr.est + xchg_bar_after(c, x, b, pos) < xr.dram_est ? lx_fit(c, pos, floor, top, xr.bytes) : -1;
    if (xr.lx < 0) {
        r->dram = 1;
        return;
    }
    r->x = ir_xgrow(r->x, &(int){r->nx}, r->nx + 1, sizeof *r->x);
    r->x[r->nx++] = xr;
}

/* Each kernel's working LX (need) and, where the plan kept the larger
 * tiling because the smaller one's estimate grew (LX_SHRINK_COST), that
 * smaller one (small, -1: none) and the cycles it adds (grow). */
typedef struct {
    int64_t *need, *small;
    double *grow;
} lx_needs_t;

/* The floor of candidate b's region over kernels from..to, with the
 * smaller tilings where `shrink`. */
static int64_t lx_floor_of(const be_ctx *c, const lx_needs_t *n, int from, int to, int shrink)
{
    int64_t floor = 0;
    for (int k = from; k <= to; k++)
        floor = cc_max(floor, cc_round_up(shrink && n->small[k] >= 0 ? n->small[k] : n->need[k], c->t.stick));
    return floor;
}

/* The region of a kept tensor whose last reader is the kernel at i,
 * b's producer, which b may share (its kind writes a row only after
 * reading it: be_kind.in_place) when it is laid out as b will be and
 * lies at floor or above; -1 when none (the softmax's probabilities take
 * its scores' region). */
static int64_t lx_in_place(const be_ctx *c, int b, int i, int64_t floor)
{
    const be_res *r = &c->res[b];
    /* the tiles of a grid over the ring: a block's epilogue reads its
     * operands' piece before its results go to the same piece */
    if (!be_kind_of(c, i)->in_place && !r->grid)
        return -1;
    for (int v = 0; v < c->p->nbufs; v++) {
        const be_res *q = &c->res[v];
        if (v != b && q->on && q->to == i && q->from < i && q->cores == r->cores && q->grid == r->grid &&
            q->rows_cap == r->rows_cap &&
            q->bytes == r->bytes && c->lay[v].groups == c->lay[b].groups && q->lx >= floor)
            return q->lx;
    }
    return -1;
}

/* No room for candidate b above the kernels' working LX: the kernels it
 * lives through that keep their larger tiling take the smaller one when
 * the cycles that adds are fewer than the DRAM traffic keeping b saves
 * (its aligned reads, and its write when nothing else needs it in DRAM):
 * the attention scores of Llama-8B prefill, 512 KB a core, fit beside
 * the QK^T product only in smaller blocks, which re-read K^T and are
 * estimated 14% slower, while keeping them saves a 16.8 MB round trip.
 * The region's offset (shared with a tensor b's producer reads last when
 * it can, lx_in_place), or -1. */
static int64_t lx_shrink_for(be_ctx *c, const lx_cand *x, int b, lx_needs_t *n, int64_t top, int64_t bytes)
{
    const be_res *r = &c->res[b];
    const int64_t floor = lx_floor_of(c, n, r->from, r->to, 1), shared = lx_in_place(c, b, r->from, floor);
    const int64_t at = shared >= 0 ? shared : lx_fit(c, r->from, floor, top, bytes);
    if (at < 0 || c->t.dram_bytes_per_cycle <= 0)
        return -1;
    double grow = 0;
    for (int k = r->from; k <= r->to; k++)
        if (cc_round_up(n->need[k], c->t.stick) > at)
            grow += n->grow[k];
    const double saved = (double)c->lay[b].rows * c->lay[b].groups * c->t.stick * (x[b].nuses + x[b].nguses + !r->dram) /
                         c->t.dram_bytes_per_cycle;
    if (!(grow < saved))
        return -1;
    for (int k = r->from; k <= r->to; k++)
        if (cc_round_up(n->need[k], c->t.stick) > at) {
            n->need[k] = n->small[k];
            n->grow[k] = 0;
        }
    return at;
}

/* Still no room for candidate b, kept as tiles of a grid over the ring:
 * the highest range the other kept tensors leave free, with the kernels
 * it lives through that reach into it tiled below it instead, when each
 * still fits and the cycles that adds are fewer than the DRAM traffic
 * keeping b saves (as lx_shrink_for).  The Llama-8B prefill layer's SiLU
 * product, 1,055,104 bytes of working LX beside the normed input
 * (131,072) and the gate product's tiles (458,752), was 19,600 bytes
 * short.  Only for tiles: for every candidate it shrank the layer's
 * attention kernels for tensors placed earlier, and the softmax's
 * probabilities no longer fitted (6,719,038 -> 6,919,441 cycles).  The
 * region's offset, or -1. */
static int64_t lx_tile_below_at(be_ctx *c, const lx_cand *x, int b, lx_needs_t *n, int64_t at);

static int64_t lx_tile_below(be_ctx *c, const lx_cand *x, int b, lx_needs_t *n, int64_t top, int64_t bytes)
{
    return lx_tile_below_at(c, x, b, n, c->res[b].grid ? lx_fit(c, c->res[b].from, 0, top, bytes) : -1);
}

/* ... at a region at the caller found (-1: none): also the region of the
 * tiles its producer's epilogue reads last (lx_in_place), with the kernels
 * after tiled below it: Llama-8B's SiLU product writes its result over
 * the gate product's tiles, and the down product, which reads it as its
 * A, is tiled below them. */
static int64_t lx_tile_below_at(be_ctx *c, const lx_cand *x, int b, lx_needs_t *n, int64_t at)
{
    const be_res *r = &c->res[b];
    const int64_t sb = c->t.stick;
    if (at < 0 || c->t.dram_bytes_per_cycle <= 0)
        return -1;
    const int nk = r->to - r->from + 1;
    int64_t *need = ir_xalloc((size_t)nk * sizeof *need);
    double grow = 0;
    for (int k = r->from; k <= r->to && grow < DBL_MAX; k++) {
        need[k - r->from] = n->need[k];
        if (cc_round_up(n->need[k], sb) <= at)
            continue;
        const int on = c->res[b].on; /* priced against b in DRAM: `saved` counts its bytes */
        c->res[b].on = 0;
        const double est = be_kind_of(c, k)->estimate(c, k);
        c->res[b].on = on;
        c->lx_floor[k] = at;
        need[k - r->from] = be_kind_of(c, k)->need(c, k);
        if (need[k - r->from] < 0 || cc_round_up(need[k - r->from], sb) > at)
            grow = DBL_MAX;
        else
            grow += be_kind_of(c, k)->estimate(c, k) - est;
        c->lx_floor[k] = (int64_t)c->cfg->lx_usable_bytes;
        c->p->err[0] = 0; /* a kernel that did not fit */
    }
    const double saved = (double)c->lay[b].rows * c->lay[b].groups * sb * (x[b].nuses + x[b].nguses + !r->dram) /
                         c->t.dram_bytes_per_cycle;
    const int ok = grow < saved;
    for (int k = r->from; ok && k <= r->to; k++)
        if (need[k - r->from] != n->need[k]) {
            n->need[k] = need[k - r->from];
            n->small[k] = -1;
            n->grow[k] = 0;
        }
    free(need);
    return ok ? at : -1;
}

/* Keep candidate x, a region of LX (r), at offset at. */
static void lx_keep(be_res *r, const lx_cand *x, int64_t at)
{
    const int tile = r->grid > 0;
    r->on = at >= 0;
    r->lx = at;
    r->nuses = tile ? x->nguses : x->nuses;
    r->uses = ir_xalloc((size_t)(r->nuses + 1) * sizeof *r->uses);
    if (r->nuses) /* none: read only by ring exchanges */
        memcpy(r->uses, tile ? x->guses : x->uses, (size_t)r->nuses * sizeof *r->uses);
}

/* Tiles b of a grid over the ring in the region of the tiles its
 * producer (at i) reads last, with the kernels after tiled below it
 * (lx_tile_below_at); b counts as kept while they are priced, so that a
 * product reading it as its A is priced and sized so.  The offset, or -1. */
static int64_t lx_tiles_in_place(be_ctx *c, const lx_cand *x, int b, int i, lx_needs_t *n)
{
    be_res *r = &c->res[b];
    lx_keep(r, &x[b], lx_in_place(c, b, i, 0));
    const int64_t at = lx_tile_below_at(c, x, b, n, r->lx);
    r->on = 0;
    free(r->uses);
    r->uses = NULL;
    r->nuses = 0;
    return at;
}

/* Candidate b, written by the kernel at i: the highest free range above
 * the working LX of every kernel it lives through (with smaller tilings
 * where that pays, lx_shrink_for), making room by evicting (Belady: of
 * the tensors in LX and this one, the one read again furthest away
 * leaves), or DRAM. */
static void lx_place(be_ctx *c, const lx_cand *x, int b, int i, lx_needs_t *n, int64_t top)
{
    const ir_prog *p = c->p;
    const int64_t sb = c->t.stick;
    be_res *r = &c->res[b];
    const be_layout *L = &c->lay[b];
    /* read only by products on the producer's grid over the ring: each
     * core keeps its own tile; readers of its rows keep it by rows, and
     * those products read DRAM */
    const int tile = !x[b].nuses && !x[b].nxuses && x[b].nguses > 0;
    r->from = i;
    r->to = last_use(&x[b]);
    r->cores = x[b].cores;
    r->grid = tile ? x[b].grid : 0;
    r->rows_cap = cc_ceil_div(L->rows, x[b].cores) * (tile ? r->grid : 1);
    r->bytes = r->rows_cap * (tile ? cc_ceil_div(L->groups, r->grid) : L->groups) * sb;
    r->dram = x[b].other || (!tile && x[b].nguses > 0);
    const int64_t floor = lx_floor_of(c, n, r->from, r->to, 0);
    for (int first = 1;; first = 0) {
        int64_t at = lx_fit(c, i, floor, top, r->bytes);
        if (at < 0 && first)
            at = lx_in_place(c, b, i, floor);
        if (at < 0 && first)
            at = lx_shrink_for(c, x, b, n, top, r->bytes);
        if (at < 0 && first)
            at = lx_tile_below(c, x, b, n, top, r->bytes);
        if (at < 0 && first && r->grid)
            at = lx_tiles_in_place(c, x, b, i, n);
        if (at >= 0) {
            lx_keep(r, &x[b], at);
            return;
        }
        int victim = b, far = next_use(&x[b], i + 1);
        for (int v = 0; v < p->nbufs; v++) {
            const be_res *q = &c->res[v];
            if (v != b && q->on && q->from < i && i <= q->to && next_use(&x[v], i) > far) {
                far = next_use(&x[v], i);
                victim = v;
            }
        }
        if (victim == b) {
            r->dram = 1;
            r->grid = 0;
            return;
        }
        be_res *q = &c->res[victim];
        q->to = i - 1;
        q->spilled = 1;
        q->dram = 1;
        q->on = q->to > q->from; /* no reader left in LX: it simply goes to DRAM */
    }
}

/* The highest stick-aligned range of `bytes` in [floor, top) free at
 * every position from..to; -1 when none. */
static int64_t lx_fit_span(const be_ctx *c, int from, int to, int64_t floor, int64_t top, int64_t bytes)
{
    for (int64_t hi = top;;) { /* hi only falls: each round lowers it or ends */
        int moved = 0;
        for (int k = from; k <= to; k++) {
            const int64_t at = lx_fit(c, k, floor, hi, bytes);
            if (at < 0)
                return -1;
            moved |= at + bytes < hi;
            hi = at + bytes;
        }
        if (!moved)
            return hi - bytes;
    }
}

/* An input its first reader loads (lx_cand.loaded), placed after every
 * other tensor in LX space none of them takes, above the working LX of
 * the kernels it lives through: never at the cost of a kernel's tiling
 * or of another tensor (kept first, x's 128 KB a core beside Llama's MLP
 * pushed the SiLU product's tiles down and its down product fell from
 * 0.708 to 0.654 of peak); or not kept, its readers reading DRAM. */
static void lx_place_loaded(be_ctx *c, const lx_cand *x, int b, const lx_needs_t *n, int64_t top)
{
    be_res *r = &c->res[b];
    const be_layout *L = &c->lay[b];
    const int64_t sb = c->t.stick;
    r->from = x[b].producer;
    r->to = last_use(&x[b]);
    r->cores = x[b].cores;
    r->grid = 0;
    r->rows_cap = cc_ceil_div(L->rows, x[b].cores);
    r->bytes = r->rows_cap * L->groups * sb;
    r->dram = 1;
    r->loaded = 1;
    const int64_t floor = lx_floor_of(c, n, r->from, r->to, 0);
    const int64_t at = lx_fit_span(c, r->from, r->to, floor, top, r->bytes);
    if (at >= 0)
        lx_keep(r, &x[b], at);
}

/* Can candidate x go by stick group to its readers (lx_cand.hprod)? */
static int heads_ok(const lx_cand *x)
{
    return x->hprod >= 0 && x->nhreads > 0 && !x->hother;
}

/* The readers' cores of b's stick groups (be_kind.groups): each group
 * read by one core only, slots in group order per core.  The most groups
 * a core holds, or -1. */
static int64_t heads_map(be_ctx *c, const lx_cand *x, int b, be_res *r)
{
    const int64_t G = c->lay[b].groups;
    const int ncores = c->cfg->cores;
    char *held = ir_xalloc((size_t)G);
    int64_t *nslot = ir_xalloc((size_t)ncores * sizeof *nslot), most = 0;
    r->hcore = ir_xalloc((size_t)G * sizeof *r->hcore);
    r->hslot = ir_xalloc((size_t)G * sizeof *r->hslot);
    for (int64_t g = 0; g < G; g++)
        r->hcore[g] = -1;
    for (int k = 0; k < x->nhreads && most >= 0; k++) {
        const int pos = x->hreads[k];
        for (int core = 0; core < c->work[pos].cores && most >= 0; core++) {
            memset(held, 0, (size_t)G);
            if (be_kind_of(c, pos)->groups(c, pos, b, core, held)) {
                most = -1;
                break;
            }
            for (int64_t g = 0; g < G; g++) {
                if (!held[g] || r->hcore[g] == core)
                    continue;
                if (r->hcore[g] >= 0) { /* two cores read it: not kept */
                    most = -1;
                    break;
                }
                r->hcore[g] = core;
                r->hslot[g] = (int)nslot[core]++;
                most = cc_max(most, nslot[core]);
            }
        }
    }
    free(held);
    free(nslot);
    return most;
}

/* A result its producer sends by stick group to its readers' cores
 * (lx_cand.hprod, be_res.heads), placed after every other tensor as an
 * input its first reader loads is: never at the cost of a kernel's
 * tiling; or not kept, going through DRAM as before. */
static void lx_place_heads(be_ctx *c, const lx_cand *x, int b, const lx_needs_t *n, int64_t top)
{
    be_res *r = &c->res[b];
    const int64_t sb = c->t.stick, most = heads_map(c, x, b, r);
    r->from = x->hprod;
    r->to = x->hreads[x->nhreads - 1];
    r->rows_cap = c->lay[b].rows;
    r->bytes = (most * r->rows_cap + c->work[x->hprod].cores) * sb; /* and the markers */
    const int64_t floor = lx_floor_of(c, n, r->from, r->to, 0);
    /* the producer's cores wait for the pieces (be_heads_close): every reader core one of them */
    int ok = most > 0;
    for (int64_t g = 0; g < c->lay[b].groups; g++)
        r->hcores = cc_max(r->hcores, r->hcore[g] + 1);
    ok = ok && r->hcores <= c->work[x->hprod].cores;
    const int64_t at = ok ? lx_fit_span(c, r->from, r->to, floor, top, r->bytes) : -1;
    r->heads = at >= 0;
    r->lx = at;
    r->dram = c->p->opts.write_values && c->p->bufs[b].whole_value;
    if (r->heads) {
        c->htok = cc_tokens(c->cfg) - 1;
        c->hbufs[c->nhbufs++] = b;
    }
}

/* Place the candidates x in LX, kernel by kernel (need: each kernel's
 * working LX), then the inputs their first readers load. */
static void lx_plan(be_ctx *c, lx_cand *x, lx_needs_t *n)
{
    const int64_t *need = n->need;
    ir_prog *p = c->p;
    const int64_t sb = c->t.stick, top = (int64_t)c->cfg->lx_usable_bytes / sb * sb;
    for (int i = 0; i < p->norder; i++) {
        for (int b = 0; b < p->nbufs; b++)
            for (int k = 0; k < x[b].nxuses; k++)
                if (x[b].xuses[k] == i)
                    xchg_plan(c, x, b, i, cc_round_up(need[i], sb), top);
        for (int b = 0; b < p->nbufs; b++)
            if (x[b].producer == i && last_use(&x[b]) >= 0 && !x[b].loaded)
                lx_place(c, x, b, i, n, top);
    }
    for (int b = 0; b < p->nbufs; b++)
        if (x[b].loaded && last_use(&x[b]) >= 0)
            lx_place_loaded(c, x, b, n, top);
    for (int b = 0; b < p->nbufs; b++)
        if (heads_ok(&x[b]) && !c->res[b].on)
            lx_place_heads(c, &x[b], b, n, top);
    /* a region ends at its last reader from LX: exchanges that fell to
     * DRAM leave it shorter, or with none, not kept at all */
    for (int b = 0; b < p->nbufs; b++) {
        be_res *r = &c->res[b];
        int last = -1;
        for (int k = 0; r->on && k < r->nuses; k++)
            if (r->uses[k] <= r->to)
                last = cc_max(last, r->uses[k]);
        for (int k = 0; r->on && k < r->nx; k++)
            last = cc_max(last, r->x[k].pos);
        if (r->on && last < 0)
            r->on = 0;
        else if (r->on)
            r->to = last;
    }
}

int be_res_may_read(const be_ctx *c, int buf, int pos)
{
    if (!c->hope)
        return be_res_reads(c, buf, pos);
    const lx_cand *x = &c->hope[buf];
    int n = 0;
    for (int i = 0; x->producer >= 0 && i < x->nuses; i++)
        n |= x->uses[i] == pos;
    for (int i = 0; x->producer >= 0 && i < x->nxuses; i++)
        n |= x->xuses[i] == pos;
    for (int i = 0; x->producer >= 0 && i < x->nguses; i++)
        n |= x->guses[i] == pos;
    return n;
}

int be_res_may_tile(const be_ctx *c, int buf, int pos)
{
    if (!c->hope)
        return be_res_reads(c, buf, pos) && c->res[buf].grid;
    const lx_cand *x = &c->hope[buf];
    int n = 0;
    for (int i = 0; x->producer >= 0 && !x->nuses && !x->nxuses && i < x->nguses; i++)
        n |= x->guses[i] == pos;
    return n;
}

/* Could candidate x's region be its only copy: readers that take it from
 * LX on its producer's cores or by a ring exchange (or as tiles of its
 * grid), nothing reading or writing it another way?  What lx_place leaves
 * out of DRAM when the tensor finds room (and xchg_plan when an exchange
 * beats the DRAM round trip). */
static int lx_only(const lx_cand *x)
{
    const int tile = !x->nuses && !x->nxuses && x->nguses > 0;
    return x->producer >= 0 && !x->other && (tile || (x->nuses + x->nxuses > 0 && !x->nguses));
}

int be_res_may_keep(const be_ctx *c, int buf, int pos)
{
    if (c->hope)
        return c->hope[buf].producer == pos && lx_only(&c->hope[buf]);
    return be_res_writes(c, buf, pos) && !c->res[buf].dram;
}

int be_lx_hope_begin(be_ctx *c)
{
    c->hope = lx_candidates(c);
    if (!c->hope)
        return -1;
    int some = 0; /* a candidate with a reader, or its producer's only copy: a may_ above says yes */
    for (int b = 0; b < c->p->nbufs && !some; b++) {
        const lx_cand *x = &c->hope[b];
        some = x->producer >= 0 && (x->nuses + x->nxuses + x->nguses > 0 || lx_only(x));
    }
    return some;
}

/* Drop from x the readers by ring exchange that xchg_plan, the bar after
 * them priced (xchg_bar_after), would send through DRAM under the
 * division as it stands (the write counted, as for a tensor kept only in
 * LX; a reader dear without the bar stays, as the second round hoped);
 * they read DRAM.  Marks their positions in gone_at; returns how many
 * went. */
static int hope_prune(be_ctx *c, lx_cand *x, char *gone_at)
{
    int gone = 0;
    for (int b = 0; b < c->p->nbufs; b++) {
        int n = 0;
        for (int k = 0; x[b].producer >= 0 && k < x[b].nxuses; k++) {
            const int pos = x[b].xuses[k];
            const double bar = xchg_bar_after(c, x, b, pos);
            if (bar <= 0 || xchg_cost(c, b, x[b].cores, pos) + bar < xchg_dram(c, b, 0)) {
                x[b].xuses[n++] = pos;
                continue;
            }
            x[b].other = 1;
            gone_at[pos] = 1;
            gone++;
        }
        x[b].nxuses = n;
    }
    return gone;
}

int be_lx_hope_again(be_ctx *c, char *gone_at)
{
    lx_cand *x = lx_candidates(c);
    if (!x)
        return -1;
    if (!hope_prune(c, x, gone_at)) {
        lx_free(c, x);
        return 0;
    }
    be_lx_hope_end(c);
    c->hope = x;
    return 1;
}

void be_lx_hope_end(be_ctx *c)
{
    if (c->hope)
        lx_free(c, (lx_cand *)c->hope);
    c->hope = NULL;
}

/* ... when its estimate grows by at most this (row kernels: chunks
 * smaller than a quarter of a core's part only add DMA instructions) */
#define LX_SHRINK_COST 0.02

/* need[i]: the working LX of each kernel marked live, its kind's need
 * (every one, as codegen would meet them: an error is the first one's,
 * or the last LX overflow's).  -1 when one failed. */
static int lx_needs(be_ctx *c, const char *live, int64_t *need)
{
    int rc = 0;
    for (int i = 0; i < c->p->norder; i++)
        if (live[i] && (need[i] = be_kind_of(c, i)->need(c, i)) < 0)
            rc = -1;
    return rc;
}

/* Each kernel's working LX, for the kernels a candidate would live
 * through (live), tiled into all of LX and into LX_KERNEL_SHARE of it:
 * the plan keeps the smaller free (the larger where only it fits).  -1
 * with the kernel's error. */
static int lx_need(be_ctx *c, const char *live, lx_needs_t *n)
{
    ir_prog *p = c->p;
    int64_t *need = n->need, *small = n->small;
    double *est = ir_xalloc((size_t)(p->norder + 1) * sizeof *est);
    int rc = lx_needs(c, live, need);
    for (int i = 0; i < p->norder && !rc; i++) {
        if (live[i])
            est[i] = be_kind_of(c, i)->estimate(c, i);
        c->lx_floor[i] = (int64_t)(c->cfg->lx_usable_bytes * LX_KERNEL_SHARE) / c->t.stick * c->t.stick;
    }
    if (!rc) {
        p->err[0] = 0;
        lx_needs(c, live, small); /* -1 where a kernel does not fit the share */
    }
    /* the smaller tiling only where the cost model sees it cost nothing:
     * a matmul's smaller blocks can re-read operands (a row kernel's
     * estimate does not depend on its chunks) */
    for (int i = 0; i < p->norder && !rc; i++) {
        const double e = live[i] && small[i] >= 0 ? be_kind_of(c, i)->estimate(c, i) : 0;
        if (live[i] && small[i] >= 0 && !c->work[i].bcast && e <= est[i] * (1 + LX_SHRINK_COST))
            need[i] = small[i];
        else if (live[i] && small[i] >= 0 && !c->work[i].bcast)
            n->grow[i] = e - est[i]; /* lx_shrink_for may still take it */
        else
            small[i] = -1;
        c->lx_floor[i] = (int64_t)c->cfg->lx_usable_bytes;
    }
    if (!rc)
        p->err[0] = 0; /* a kernel that did not fit in the smaller share */
    free(est);
    return rc;
}

/* Each kernel is tiled into the LX the kept tensors leave it, so a kernel
 * with none keeps all. */
static void lx_floors(be_ctx *c)
{
    const ir_prog *p = c->p;
    for (int b = 0; b < p->nbufs; b++) {
        const be_res *r = &c->res[b];
        for (int i = r->from; (r->on || r->heads) && i <= r->to; i++)
            c->lx_floor[i] = cc_min(c->lx_floor[i], r->lx);
        for (int k = 0; k < r->nx; k++)
            c->lx_floor[r->x[k].pos] = cc_min(c->lx_floor[r->x[k].pos], r->x[k].lx);
    }
}

int be_lxplan_pass(ir_prog *p)
{
    be_ctx *c = p->be;
    c->res = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *c->res);
    c->hbufs = ir_xmalloc((size_t)(p->nbufs + 1) * sizeof *c->hbufs); /* (lx_place_heads' list) */
    c->lx_floor = ir_xalloc((size_t)(p->norder + 1) * sizeof *c->lx_floor);
    c->lx_need = ir_xalloc((size_t)(p->norder + 1) * sizeof *c->lx_need);
    c->htok = -1;
    c->nhbufs = 0;
    for (int i = 0; i < p->norder; i++)
        c->lx_floor[i] = (int64_t)c->cfg->lx_usable_bytes;
    if (p->opts.no_lx_plan || p->opts.no_lx_keep)
        return 0;
    lx_cand *x = lx_candidates(c);
    if (!x)
        return -1;
    /* the kernels a candidate would live through: only their working LX matters */
    char *live = ir_xalloc((size_t)(p->norder + 1));
    int any = 0, rc = 0;
    for (int b = 0; b < p->nbufs; b++)
        for (int i = x[b].producer; i >= 0 && i <= last_use(&x[b]); i++)
            any = live[i] = 1;
    for (int b = 0; b < p->nbufs; b++)
        for (int i = x[b].hprod; heads_ok(&x[b]) && i <= x[b].hreads[x[b].nhreads - 1]; i++)
            any = live[i] = 1;
    lx_needs_t n = {c->lx_need, ir_xalloc((size_t)(p->norder + 1) * sizeof *n.small),
                    ir_xalloc((size_t)(p->norder + 1) * sizeof *n.grow)};
    c->hope = x; /* the kernels are tiled as if what could stay did */
    rc = any ? lx_need(c, live, &n) : 0;
    c->hope = NULL;
    if (any && !rc) {
        lx_plan(c, x, &n);
        lx_floors(c);
    }
    free(n.small);
    free(n.grow);
    for (int b = 0; b < p->nbufs && p->opts.write_values; b++) /* after the plan: it stays the same */
        c->res[b].dram |= c->res[b].on && p->bufs[b].whole_value;
    free(live);
    lx_free(c, x);
    return rc;
}

/* ---- the dump ---- */

static const char *kname(const ir_prog *p, int pos)
{
    return p->kernels[p->order[pos]].name;
}

/* One line per kernel: its working LX and the LX it is tiled into. */
static void print_kernels(const be_ctx *c, FILE *f)
{
    const ir_prog *p = c->p;
    for (int i = 0; i < p->norder; i++) {
        fprintf(f, "kernel %s: ", kname(p, i));
        if (c->lx_need[i])
            fprintf(f, "working lx %" PRId64 " bytes per core, ", c->lx_need[i]);
        fprintf(f, "tiled into lx below %" PRId64 "\n", c->lx_floor[i]);
    }
}

/* A tensor the plan looked at: kept (where, for which kernels, read by
 * which, exchanged to which), or through DRAM. */
static void print_res(const be_ctx *c, int b, FILE *f)
{
    const ir_prog *p = c->p;
    const be_res *r = &c->res[b];
    if (!r->on) {
        fprintf(f, "dram %s: written by %s on %d core%s, not kept (%s)\n", p->bufs[b].name, kname(p, r->from), r->cores,
                r->cores == 1 ? "" : "s", r->spilled ? "spilled before a reader" : "no room, or no reader from lx");
        return;
    }
    fprintf(f, "kept %s: %s..%s at lx %" PRId64 ", %" PRId64 " bytes per core (%" PRId64 " rows on %d core%s%s)",
            p->bufs[b].name, kname(p, r->from), kname(p, r->to), r->lx, r->bytes, r->rows_cap, r->cores,
            r->cores == 1 ? "" : "s", r->grid ? ", each its tile of a grid over the ring" : "");
    for (int k = 0; k < r->nuses; k++)
        if (r->uses[k] <= r->to)
            fprintf(f, "%s%s", k ? ", " : "; read by ", kname(p, r->uses[k]));
    fprintf(f, "%s\n", r->loaded && r->spilled ? "; an input its first reader loads; spilled: later readers reload it"
                       : r->loaded  ? "; an input its first reader loads"
                       : r->spilled ? "; spilled: also written to dram, later readers reload it"
                       : r->dram    ? "; also written to dram"
                                    : "");
    for (int k = 0; k < r->nx; k++) {
        const be_xreg *x = &r->x[k];
        fprintf(f,
                "  ring exchange before %s: %d -> %d cores, at lx %" PRId64 ", %" PRId64
                " bytes per core, estimate %.0f cycles against %.0f through dram\n",
                kname(p, x->pos), r->cores, x->cores, x->lx, x->bytes, x->est, x->dram_est);
    }
}

void be_lxplan_print(const ir_prog *p, const char *pass, FILE *f)
{
    const be_ctx *c = p->be;
    fprintf(f, "# %s after %s (target %s, %d cores)\n", p->gname, pass, c->cfg->name, c->cfg->cores);
    if (p->opts.no_lx_plan || p->opts.no_lx_keep) {
        fprintf(f, "nothing kept in lx across kernels (%s)\n", p->opts.no_lx_plan ? "--no-lx-plan" : "--no-lx-keep");
        return;
    }
    print_kernels(c, f);
    int kept = 0, spills = 0, xchgs = 0;
    for (int b = 0; b < p->nbufs; b++) {
        const be_res *r = &c->res[b];
        if (!r->cores)
            continue; /* never a candidate */
        print_res(c, b, f);
        kept += r->on;
        spills += r->spilled;
        xchgs += r->nx;
    }
    fprintf(f, "total: %d tensor%s kept, %d spill%s, %d ring exchange%s\n", kept, kept == 1 ? "" : "s", spills,
            spills == 1 ? "" : "s", xchgs, xchgs == 1 ? "" : "s");
}
