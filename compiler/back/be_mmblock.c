/* be_mmblock.c: the pieces of a matmul block every scheme of the template
 * uses (be_matmul.h): the LX of its slots, PT cycles and the corelets'
 * split of a block, and its epilogue (operands loaded and bound, nodes
 * evaluated over the product). */
#include "be_matmul.h"

#include <assert.h>

/* Tokens a core needs: per slot, A/B full and empty and product done and
 * result empty per corelet, epilogue operands full, block empty and
 * epilogue done; restickify: slot written per corelet, staged results
 * written. */
static int mm_tokens(const mm_plan *m, int nc)
{
    return 2 * (4 * nc + 3) + (m->ag || m->bg ? 2 * nc : 0) + 1 + (m->aw || m->bw);
}

/* PT cycles of an m x (sticks) x k product on one corelet, issue included. */
double mm_pt_cycles(const cc_target *t, int64_t rows, int64_t sticks, int64_t k)
{
    return (double)cc_ceil_div(rows, t->pt_rows) * (double)cc_ceil_div(sticks * t->lanes16, t->pt_cols_per_pass) *
               (double)k +
           t->pt_insn_cycles;
}

/* The corelet split of a full block whose busier corelet has the fewest
 * PT passes (rows on a tie; none with one corelet or too few tokens). */
void mm_split_block(const mm_plan *m, mm_tiling *tl)
{
    const cc_target *t = &m->c->t;
    double best = mm_pt_cycles(t, tl->MB, tl->NBS, 1);
    tl->split = SPLIT_NONE;
    tl->r0 = tl->MB;
    tl->s0 = tl->NBS;
    if (t->corelets < 2 || mm_tokens(m, 2) > cc_tokens(m->c->cfg))
        return;
    if (tl->MB >= 2) {
        int64_t r0 = cc_ceil_div(tl->MB, 2);
        if (cc_round_up(r0, t->pt_rows) < tl->MB)
            r0 = cc_round_up(r0, t->pt_rows);
        double e = mm_pt_cycles(t, cc_max(r0, tl->MB - r0), tl->NBS, 1);
        if (e < best) {
            best = e;
            tl->split = SPLIT_ROWS;
            tl->r0 = r0;
        }
    }
    if (tl->NBS >= 2) {
        int64_t s0 = cc_ceil_div(tl->NBS, 2);
        if (mm_pt_cycles(t, tl->MB, s0, 1) < best) {
            tl->split = SPLIT_STICKS;
            tl->r0 = tl->MB;
            tl->s0 = s0;
        }
    }
}

/* The most block rows, up to hi, whose LX (lx: the scheme's LX bytes of
 * a block of MB rows x NBS sticks with K chunks of KC) fits budget; 0 none.
 * lx never falls as MB grows, so that is the one MB that fits with MB + 1
 * not (or hi): guessed from lx's slope between 1 and hi row (it is nearly
 * in proportion to MB: only restickify's staging adds steps), confirmed
 * or narrowed a few rows either way, then bisected. A bisection alone
 * priced lx 12 times per call: 16% of BERT-base's compile (callgrind). */
int64_t mm_most_rows(const mm_plan *m, int64_t (*lx)(const mm_plan *, int64_t, int64_t, int64_t), int64_t hi,
                     int64_t nbs, int64_t kc, int64_t budget)
{
    if (hi < 1)
        return 0;
    const int64_t l1 = lx(m, 1, nbs, kc);
    if (l1 > budget || hi == 1)
        return l1 > budget ? 0 : 1;
    const int64_t lh = lx(m, hi, nbs, kc);
    if (lh <= budget)
        return hi;
    /* now lx(lo) fits and lx(hi) does not */
    int64_t lo = 1;
    int64_t g = hi - 1 > 1 ? 1 + (int64_t)((double)(budget - l1) * (double)(hi - 1) / (double)(lh - l1)) : 1;
    g = cc_max(lo, cc_min(g, hi - 1));
    for (int step = 0; step < 4 && lo + 1 < hi; step++) {
        if (lx(m, g, nbs, kc) <= budget) {
            lo = g;
            g = cc_min(g + 1, hi - 1);
        } else {
            hi = g;
            g = cc_max(g - 1, lo);
        }
    }
    while (lo + 1 < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (lx(m, mid, nbs, kc) <= budget)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

be_view mm_shifted(const be_view *v, int64_t groups)
{
    be_view s = *v;
    s.base += be_view_group(v, groups);
    s.groups -= groups;
    if (v->gper)
        s.gph = (v->gph + groups) % v->gper;
    return s;
}

/* Load the epilogue's operands of the block (rows rs, i0 the first
 * within the core's part of a kept tensor, sticks from g0) into LX from
 * at (dmai) and bind them (base: where each went, if wanted); returns
 * the LX after them. */
int64_t mm_ep_load(mm_core *mc, const mm_rows *rs, int64_t i0, int64_t g0, int64_t nbs, int64_t at,
                   int64_t *base)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    const int64_t sb = c->t.stick, MB = mc->MB;
    rk_plan *k = &m->ep;
    be_tile *T = &mc->T;
    T->nmemo = 0;
    for (int i = 0; i < k->nl; i++) {
        rk_load *L = &k->loads[i];
        be_view v = L->cls == BE_V_ROW ? L->v : mm_shifted(&L->v, g0);
        be_val val = {L->cls, 0, at, L->v.lane};
        if (base)
            base[i] = at;
        if (L->res) { /* kept by rows (one part), or as this core's tile of a grid (every part) */
            const int buf = c->p->A.e[L->e].buf, grid = c->res[buf].grid;
            assert(rs->n == 1 || grid);
            be_res_copy(c, e, 0, buf, i0, grid ? rs->off[rs->n - 1] + rs->len[rs->n - 1] : rs->len[0], g0, nbs, at,
                        MB * sb);
            at += mc->NBS * MB * sb;
        } else if (L->cls == BE_V_COL) {
            be_dma_rows(c, e, ISA_OP_DMA_LD, at, sb, &v, &k->rsp, rs->row[0], 1, nbs);
            at += mc->NBS * sb;
        } else {
            for (int s = 0; s < rs->n; s++)
                be_dma_rows(c, e, ISA_OP_DMA_LD, at + rs->off[s] * sb, MB * sb, &v, &k->rsp, rs->row[s], rs->len[s],
                            L->cls == BE_V_TILE ? nbs : 1);
            at += (L->cls == BE_V_TILE ? mc->NBS : 1) * MB * sb;
        }
        be_bind(T, L->e, &val);
    }
    return at;
}

/* Bind the epilogue's operands loaded at base (mm_ep_load) for the rows
 * from row off of the block. */
void mm_ep_rebind(mm_core *mc, const int64_t *base, int64_t off)
{
    const rk_plan *k = &mc->m->ep;
    mc->T.nmemo = 0;
    for (int i = 0; i < k->nl; i++) {
        const rk_load *L = &k->loads[i];
        be_val v = {L->cls, 0, base[i] + (L->cls == BE_V_COL ? 0 : off * mc->m->c->t.stick), L->v.lane};
        be_bind(&mc->T, L->e, &v);
    }
}

/* The epilogue over the block's product (DL16 at C, mb rows x nbs
 * sticks; temps from top up to end): each node's value, a tile, into
 * vals (the SFP of T's corelet). */
int mm_ep_eval(mm_core *mc, int64_t mb, int64_t nbs, int64_t top, int64_t C, int64_t end, be_val *vals)
{
    rk_plan *k = &mc->m->ep;
    be_tile *T = &mc->T;
    T->R = mb;
    T->G = nbs;
    T->top = top;
    T->end = end;
    T->acc.cls = BE_V_TILE;
    T->acc.lx = C;
    T->acc.lane = 0;
    for (int j = 0; j < k->nn && j < IR_KERNEL_NODES; j++) {
        be_val v;
        if (be_eval(T, k->nodes[j].expr, &v))
            return -1;
        if (v.cls != BE_V_TILE) {
            be_val w;
            if (be_widen(T, &v, BE_V_TILE, &w))
                return -1;
            v = w;
        }
        vals[j] = v;
    }
    return 0;
}

void mm_corelet_parts(const mm_tiling *tl, int nc, int64_t mb, int64_t nbs, mm_parts *cp)
{
    *cp = (mm_parts){{0, 0}, {mb, 0}, {0, 0}, {nbs, 0}, {0, 0}};
    if (tl->split == SPLIT_ROWS) {
        cp->cnr[0] = cc_min(tl->r0, mb);
        cp->crow[1] = tl->r0;
        cp->cnr[1] = mb - tl->r0;
        cp->cns[1] = nbs;
    } else if (tl->split == SPLIT_STICKS) {
        cp->cns[0] = cc_min(tl->s0, nbs);
        cp->cst[1] = tl->s0;
        cp->cns[1] = nbs - tl->s0;
        cp->cnr[1] = mb;
    }
    for (int u = 0; u < 2; u++)
        cp->last[u] = u >= nc || cp->cns[u] < 1 || cp->cst[u] >= nbs ? 0 : cc_min(nbs, cp->cst[u] + cp->cns[u]) - 1;
}

/* The tile state every emission of a core's blocks shares. */
void mm_tile_init(mm_core *mc, be_ctx *c, int64_t rows)
{
    mc->T.c = c;
    mc->T.e = mc->e;
    mc->T.K = mc->m->K;
    mc->T.gs = rows * c->t.stick;
    mc->T.rows_cap = rows;
    mc->T.cols = mc->m->N;
    mc->T.acc_expr = mc->m->acc;
}
