/* be_lxres.c: the LX plan's decisions as codegen reads them (the LX a
 * kernel may use, the tensors kept in LX it reads or writes, where) and
 * the code that moves kept tensors: region copies, ring exchanges. */
#include "backend.h"

#include <assert.h>
#include <string.h>

int64_t be_lx_budget(const be_ctx *c, int pos)
{
    return c->lx_floor ? c->lx_floor[pos] : (int64_t)c->cfg->lx_usable_bytes;
}

void be_lx_probe(const be_ctx *c, int pos, int core, cc_emit *e)
{
    memset(e, 0, sizeof *e);
    e->cfg = c->cfg;
    e->core = core;
    e->err = c->err;
    e->errlen = c->errlen;
    e->lx_limit = (uint64_t)be_lx_budget(c, pos);
}

const be_xreg *be_res_xreg(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    for (int i = 0; r && i < r->nx; i++)
        if (r->x[i].pos == pos)
            return &r->x[i];
    return NULL;
}

void be_xchg_share(int64_t rows, int64_t pc, int64_t p, int64_t qc, int64_t k, int64_t *p0, int64_t *q0,
                       int64_t *lo, int64_t *hi)
{
    int64_t pn, qn;
    cc_split(rows, pc, p, p0, &pn);
    cc_split(rows, qc, k, q0, &qn);
    *lo = cc_max(*p0, *q0);
    *hi = cc_min(*p0 + pn, *q0 + qn);
}

void be_xchg_emit(be_ctx *c, int pos)
{
    const ir_prog *p = c->p;
    const int ncores = c->cfg->cores;
    const int64_t sb = c->t.stick;
    char name[ISA_NAME_MAX];
    be_fmt(name, sizeof name, "%s.xchg", p->kernels[p->order[pos]].name);
    int any = 0;
    for (int b = 0; b < p->nbufs; b++) {
        const be_res *r = &c->res[b];
        const be_xreg *x = be_res_xreg(c, b, pos);
        if (!x)
            continue;
        any = 1;
        const int64_t rows = c->lay[b].rows, G = c->lay[b].groups;
        for (int core = 0; core < r->cores; core++) {
            cc_emit *e = &c->em[core];
            for (int k = 0; k < x->cores; k++) {
                int64_t p0, q0, lo, hi;
                for (be_xchg_share(rows, r->cores, core, x->cores, k, &p0, &q0, &lo, &hi); lo < hi; lo += ISA_COUNT_MAX) {
                    const int64_t n = cc_min(ISA_COUNT_MAX, hi - lo);
                    const isa_addr d = cc_abs(x->lx + (lo - q0) * sb), a = cc_abs(r->lx + (lo - p0) * sb);
                    cc_dma_shape sh = cc_dma_groups(n, G, x->rows_cap * sb, r->rows_cap * sb);
                    if (!e->kname)
                        cc_kernel_begin(e, name);
                    if (k == core)
                        cc_emit_dma(e, ISA_OP_DMA_LX, d, a, &sh);
                    else
                        cc_emit_ring(e, ISA_OP_RING_SEND, k, ISA_TOK_NONE, d, a, &sh);
                }
            }
        }
    }
    for (int core = 0; core < ncores && any; core++) {
        if (c->em[core].kname)
            cc_kernel_end(&c->em[core]);
        cc_emit_bar(&c->em[core]);
    }
}

int be_res_reads(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    if (be_res_xreg(c, buf, pos))
        return 1;
    if (!r || !r->on || pos <= r->from || pos > r->to)
        return 0;
    for (int i = 0; i < r->nuses; i++)
        if (r->uses[i] == pos)
            return 1;
    return 0; /* it reads the tensor some other way, or on other cores: from DRAM */
}

void be_res_at(const be_ctx *c, int buf, int pos, int64_t *lx, int64_t *rows_cap)
{
    const be_xreg *x = be_res_xreg(c, buf, pos);
    *lx = x ? x->lx : c->res[buf].lx;
    *rows_cap = x ? x->rows_cap : c->res[buf].rows_cap;
}

int be_res_writes(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    return r && r->on && r->from == pos;
}

/* Rows [i0, i0 + n) of the core's part of kept buf, groups [g0, g0 + G),
 * between the region and lx (groups gs apart): into the region when
 * `into`, by op (dma.lx on dmai, dma.lxs on dmao). */
static void res_move(be_ctx *c, cc_emit *e, int op, int into, int buf, int64_t i0, int64_t n, int64_t g0, int64_t G,
                     int64_t lx, int64_t gs)
{
    int64_t at, cap;
    be_res_at(c, buf, into ? -1 : c->pos, &at, &cap);
    const be_res *r = &c->res[buf];
    if (r->grid) { /* the core's tile: groups from its column block's first */
        int64_t t0, tn;
        cc_split(c->lay[buf].groups, r->grid, e->core % r->grid, &t0, &tn);
        assert(g0 >= t0 && g0 + G <= t0 + tn);
        g0 -= t0;
    }
    const int64_t sb = c->t.stick, part = at + (g0 * cap + i0) * sb;
    assert((c->res[buf].on || be_res_xreg(c, buf, c->pos)) && i0 >= 0 && i0 + n <= cap);
    cc_dma_shape sh = cc_dma_groups(n, G, into ? cap * sb : gs, into ? gs : cap * sb);
    cc_emit_dma(e, op, cc_abs(into ? part : lx), cc_abs(into ? lx : part), &sh);
}

void be_res_copy(be_ctx *c, cc_emit *e, int store, int buf, int64_t i0, int64_t n, int64_t g0, int64_t G, int64_t lx,
                 int64_t gs)
{
    res_move(c, e, store ? ISA_OP_DMA_LXS : ISA_OP_DMA_LX, store, buf, i0, n, g0, G, lx, gs);
}

void be_res_fill(be_ctx *c, cc_emit *e, int buf, int64_t i0, int64_t n, int64_t g0, int64_t G, int64_t lx, int64_t gs)
{
    assert(c->res[buf].loaded && c->res[buf].from == c->pos);
    res_move(c, e, ISA_OP_DMA_LX, 1, buf, i0, n, g0, G, lx, gs);
}

/* ---- Hand-offs by stick group (be_res.heads) ---- */

int be_heads_writes(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    return r && r->heads && r->from == pos;
}

int be_heads_reads(const be_ctx *c, int buf, int pos)
{
    const be_res *r = c->res ? &c->res[buf] : NULL;
    return r && r->heads && pos > r->from && pos <= r->to;
}

int be_heads_tok_cap(const be_ctx *c, int pos)
{
    for (int i = 0; i < c->nhbufs; i++)
        if (be_heads_writes(c, c->hbufs[i], pos))
            return c->htok;
    return 0;
}

void be_heads_send(be_ctx *c, cc_emit *e, int own, int buf, int64_t row, int64_t n, int64_t g0, int64_t G, int64_t lx,
                   int64_t gs)
{
    const be_res *r = &c->res[buf];
    const int64_t sb = c->t.stick;
    for (int64_t g = g0; g < g0 + G; g++) {
        const int k = r->hcore[g];
        if (k < 0 || (k == e->core) != own)
            continue; /* no reader takes it from LX, or another unit sends it */
        const isa_addr d = cc_abs(r->lx + ((int64_t)r->hslot[g] * r->rows_cap + row) * sb), a = cc_abs(lx + (g - g0) * gs);
        cc_dma_shape sh = cc_dma_groups(n, 1, 0, 0);
        if (own)
            cc_emit_dma(e, ISA_OP_DMA_LXS, d, a, &sh);
        else
            cc_emit_ring(e, ISA_OP_RING_SEND, k, ISA_TOK_NONE, d, a, &sh);
    }
}

void be_heads_close(be_ctx *c, cc_emit *e, int pos)
{
    const int64_t sb = c->t.stick;
    for (int i = 0; i < c->nhbufs; i++) { /* (every buffer handed off so, ascending) */
        const be_res *r = &c->res[c->hbufs[i]];
        if (!r->heads || r->from != pos)
            continue;
        /* a marker stick per sending core past the groups: each core's ring sends land in
         * order, so its marker lands after its pieces */
        const int64_t mark = r->lx + r->bytes - (c->work[pos].cores - e->core) * sb;
        cc_dma_shape sh = cc_dma_groups(1, 1, 0, 0);
        for (int k = 0; k < r->hcores; k++)
            if (k != e->core)
                cc_emit_ring(e, ISA_OP_RING_SEND, k, c->htok, cc_abs(mark), cc_abs(mark), &sh);
        for (int k = 0; e->core < r->hcores && k < c->work[pos].cores - 1; k++)
            cc_emit_wait(e, ISA_U_RING, c->htok);
    }
}

/* The region's address of DRAM byte at of kept-by-group buf, on core
 * `core`: -1 when another core holds that group. */
static int64_t heads_at(const be_ctx *c, int buf, int64_t at, int core)
{
    const be_layout *L = &c->lay[buf];
    const be_res *r = &c->res[buf];
    const int64_t sb = c->t.stick, st = (at - (int64_t)L->off) / sb, g = st / L->rows;
    if (r->hcore[g] != core)
        return -1;
    return r->lx + ((int64_t)r->hslot[g] * r->rows_cap + st % L->rows) * sb + (at - (int64_t)L->off) % sb;
}

int be_heads_load(const be_ctx *c, cc_emit *e, int64_t lx, int64_t dram, const cc_dma_shape *sh)
{
    const int64_t sb = c->t.stick;
    /* every DMA load asks: of the buffers handed off (none: htok -1) */
    for (int i = 0; i < c->nhbufs; i++) {
        const int b = c->hbufs[i];
        const be_res *r = &c->res[b];
        const be_layout *L = &c->lay[b];
        if (!r->heads || c->pos <= r->from || c->pos > r->to || dram < (int64_t)L->off ||
            dram >= (int64_t)L->off + L->groups * L->rows * sb)
            continue;
        /* every level steps along a group's rows or from group to group,
         * each run within one group */
        cc_dma_shape t = *sh;
        const int64_t a0 = heads_at(c, b, dram, e->core), gb = L->rows * sb;
        assert(a0 >= 0 && ((dram - (int64_t)L->off) / sb) % L->rows + sh->run <= L->rows);
        for (int l = 0; l < sh->levels; l++) {
            if (sh->n[l] <= 1)
                continue;
            const int64_t a1 = heads_at(c, b, dram + sh->as[l], e->core);
            assert(a1 >= 0 && (sh->as[l] % gb == 0 || sh->as[l] < gb));
            t.as[l] = a1 - a0;
        }
        cc_emit_dma(e, ISA_OP_DMA_LX, cc_abs(lx), cc_abs(a0), &t);
        return 1;
    }
    return 0;
}

/* The next position >= pos that reads candidate x aligned (INT_MAX: none). */
