/* be_view.c: stick views: how an affine index walks a buffer's device
 * layout, the DMA descriptors that move its rows, element offsets, and
 * whole buffers staged in LX for a restickify (backend.h). */
#include "backend.h"

#include <inttypes.h>
#include <string.h>

/* Row-major coordinates of a flat offset (or of a coefficient: the
 * coordinates one step of the variable moves). */
void be_coords_of(const gr_ttype *t, int64_t flat, int64_t *co)
{
    for (int d = t->rank - 1; d > 0; d--) {
        co[d] = flat % t->shape[d];
        flat /= t->shape[d];
    }
    if (t->rank)
        co[0] = flat;
}

int64_t be_elem_off(const be_ctx *c, int buf, int64_t flat)
{
    const ir_buf *B = &c->p->bufs[buf];
    const be_layout *L = &c->lay[buf];
    const gr_ttype *t = &B->type;
    const int64_t lanes = L->f32 ? c->t.lanes32 : c->t.lanes16, esz = L->f32 ? 4 : 2;
    int64_t co[GR_MAX_RANK] = {0};
    be_coords_of(t, flat, co);
    int64_t row = 0;
    for (int d = 0; d < t->rank; d++)
        if (d != L->stick_dim)
            row = row * t->shape[d] + co[d];
    int64_t sc = t->rank ? co[L->stick_dim] : 0;
    return ((sc / lanes) * L->rows + row) * c->t.stick + (sc % lanes) * esz;
}

void be_walk_init(be_walk *w, const be_ctx *c, int buf)
{
    const gr_ttype *t = &c->p->bufs[buf].type;
    const be_layout *L = &c->lay[buf];
    memset(w, 0, sizeof *w);
    w->c = c;
    w->buf = buf;
    w->rank = t->rank;
    w->sd = L->stick_dim;
    w->lanes = L->f32 ? c->t.lanes32 : c->t.lanes16;
    w->esz = L->f32 ? 4 : 2;
    w->lrows = L->rows;
    w->stick = c->t.stick;
    w->lshift = w->lanes > 0 && !(w->lanes & (w->lanes - 1)) ? __builtin_ctzll((unsigned long long)w->lanes) : -1;
    int64_t rs = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        w->shape[d] = t->shape[d];
        if (d != w->sd) { /* be_elem_off's row: the other dims row-major */
            w->rs[d] = rs;
            rs *= t->shape[d];
        }
    }
}

/* Add coordinates dc (each |dc[d]| < shape[d] for d > 0) to the walk's,
 * carrying between them as be_walk_at's floor divisions place them. */
static inline void walk_add(be_walk *w, const int64_t *dc)
{
    int64_t carry = 0;
    for (int d = w->rank - 1; d > 0; d--) {
        int64_t v = w->co[d] + dc[d] + carry;
        carry = 0;
        if (v >= w->shape[d]) {
            v -= w->shape[d];
            carry = 1;
        } else if (v < 0) {
            v += w->shape[d];
            carry = -1;
        }
        w->co[d] = v;
    }
    if (w->rank)
        w->co[0] += dc[0] + carry;
}

/* A walk started again from where it is by the move of its last start
 * (rk_gather's rows, a run each, a row's stride apart) adds that move's
 * coordinates instead of dividing flat by every dimension (be_walk_at's
 * divisions were 2.6% of the Llama-8B decode step's compile). */
void be_walk_at(be_walk *w, int64_t flat, int64_t step)
{
    if (w->stepped && w->moved && flat - w->flat == w->dflat) {
        walk_add(w, w->dco);
        w->flat = flat;
    } else {
        int64_t was[GR_MAX_RANK];
        memcpy(was, w->co, sizeof was);
        const int64_t from = w->flat;
        w->flat = flat;
        for (int d = w->rank - 1; d > 0; d--) { /* floor division: coordinates stay in range for flat < 0 too */
            int64_t q = flat / w->shape[d], r = flat % w->shape[d];
            if (r < 0) {
                r += w->shape[d];
                q--;
            }
            w->co[d] = r;
            flat = q;
        }
        if (w->rank)
            w->co[0] = flat;
        if (w->stepped) { /* the move's coordinates, for the next start */
            w->moved = 1;
            w->dflat = w->flat - from;
            for (int d = 0; d < w->rank; d++)
                w->dco[d] = w->co[d] - was[d];
        }
    }
    w->row = 0;
    for (int d = 0; d < w->rank; d++)
        w->row += w->co[d] * w->rs[d];
    if (w->stepped && step == w->step)
        return; /* the step's coordinates as they were (a walk restarts with its step, run after run) */
    w->step = step;
    w->stepped = 1;
    memset(w->st, 0, sizeof w->st);
    be_coords_of(&w->c->p->bufs[w->buf].type, step, w->st); /* each |st[d]| < shape[d] for d > 0 */
    w->d1 = -1;
    for (int d = 0; d < w->rank; d++)
        if (w->st[d])
            w->d1 = w->d1 == -1 ? d : -2;
    w->drow = w->d1 >= 0 ? w->st[w->d1] * w->rs[w->d1] : 0;
}

int64_t be_walk_off(const be_walk *w)
{
    if (w->flat < 0 || !w->rank) /* be_elem_off's truncating division, as everywhere */
        return be_elem_off(w->c, w->buf, w->flat);
    int64_t g, r, byte;
    if (be_walk_stick(w, &g, &r, &byte))
        return (g * w->lrows + r) * w->stick + byte;
    const int64_t sc = w->co[w->sd]; /* past the buffer's end: be_elem_off's arithmetic */
    return ((sc / w->lanes) * w->lrows + w->row) * w->stick + (sc % w->lanes) * w->esz;
}

/* Groups g0..g1 joined to the ones the walk's run touched. */
static void walk_touch(be_walk *w, int64_t g0, int64_t g1)
{
    w->gmin = cc_min(w->gmin, g0);
    w->gmax = cc_max(w->gmax, g1);
}

void be_walk_span(be_walk *w, const be_layout *L, int64_t *lo, int64_t *hi)
{
    int64_t g, r, b;
    if (!be_walk_stick(w, &g, &r, &b)) {
        const int64_t s = be_walk_off(w) / w->stick;
        be_span_add(L, s, lo, hi);
        walk_touch(w, s / L->rows, s / L->rows);
        return;
    }
    lo[g] = cc_min(lo[g], r);
    hi[g] = cc_max(hi[g], r);
    walk_touch(w, g, g);
}

/* The spans of m elements from the current one on, which lies inside the
 * buffer, when the walk moves only coordinate d (by k per element) and
 * stays inside without a carry: one layout row per element along one group
 * (d not the stick dim), or one layout row across consecutive groups (d the
 * stick dim, |k| at most a stick, so no group is skipped).  0 when the walk
 * is not of that form. */
static int walk_segment(be_walk *w, int d, int64_t m, int64_t *lo, int64_t *hi)
{
    int64_t g = 0, r = 0, b = 0;
    be_walk_stick(w, &g, &r, &b);
    if (d < 0) { /* every element the same */
        lo[g] = cc_min(lo[g], r);
        hi[g] = cc_max(hi[g], r);
        walk_touch(w, g, g);
        return 1;
    }
    const int64_t k = w->st[d], last = w->co[d] + (m - 1) * k;
    if (d == w->sd && (k > w->lanes || -k > w->lanes))
        return 0;
    if (d != w->sd) {
        const int64_t rl = r + (m - 1) * k * w->rs[d];
        lo[g] = cc_min(lo[g], cc_min(r, rl));
        hi[g] = cc_max(hi[g], cc_max(r, rl));
        walk_touch(w, g, g);
        return 1;
    }
    for (int64_t q = cc_min(g, last / w->lanes); q <= cc_max(g, last / w->lanes); q++) {
        lo[q] = cc_min(lo[q], r);
        hi[q] = cc_max(hi[q], r);
    }
    walk_touch(w, cc_min(g, last / w->lanes), cc_max(g, last / w->lanes));
    return 1;
}

/* Elements from the current one on (at most n) before the one coordinate
 * the walk moves leaves its range: 0 when the current element lies outside
 * the buffer or the walk moves several coordinates; n when it moves none. */
static int64_t walk_carry_free(const be_walk *w, int64_t n)
{
    int64_t g, r, b;
    if (w->d1 == -2 || !be_walk_stick(w, &g, &r, &b))
        return 0;
    if (w->d1 == -1)
        return n;
    const int64_t k = w->st[w->d1], co = w->co[w->d1];
    const int64_t m = k > 0 ? (w->shape[w->d1] - 1 - co) / k + 1 : co / -k + 1;
    return cc_min(m, n);
}

/* Move the walk past m elements from the current one on, all of a run
 * where only coordinate d1 moves without a carry (walk_carry_free's m):
 * to the run's last by arithmetic, then one step, which carries as
 * be_walk_at's divisions would have placed it. */
static void walk_skip(be_walk *w, int64_t m)
{
    if (w->d1 < 0) { /* nothing moves */
        w->flat += m * w->step;
        return;
    }
    w->co[w->d1] += (m - 1) * w->st[w->d1];
    w->row += (m - 1) * w->drow;
    w->flat += (m - 1) * w->step;
    be_walk_next(w);
}

/* Element by element where a carry, several moving coordinates or an
 * element outside the buffer need it, and in closed form over each run
 * between carries (a row of a rope's rotated half crosses a row of its
 * buffer once: two runs instead of 128 elements). */
int be_walk_run(be_walk *w, const be_layout *L, int64_t flat, int64_t step, int64_t n, int64_t nel, int64_t *lo,
                int64_t *hi)
{
    w->gmin = INT64_MAX;
    w->gmax = -1;
    if (n < 1)
        return 0;
    be_walk_at(w, flat, step);
    for (int64_t i = 0; i < n;) {
        const int64_t m = walk_carry_free(w, n - i);
        if (m > 0 && walk_segment(w, w->d1, m, lo, hi)) {
            if (m == n)
                return 1;
            i += m;
            if (i < n)
                walk_skip(w, m);
            continue;
        }
        if (nel < 0 || (w->flat >= 0 && w->flat < nel))
            be_walk_span(w, L, lo, hi);
        be_walk_next(w);
        i++;
    }
    return 0;
}

/* Elements of a run along the lanes from lane coordinate sc, k a
 * lane each (k != 0), that stay in sc's stick group (at most m). */
static int64_t walk_in_group(int64_t sc, int64_t k, int64_t lanes, int64_t m)
{
    const int64_t g = sc / lanes; /* sc >= 0 inside the buffer */
    const int64_t c = k > 0 ? ((g + 1) * lanes - 1 - sc) / k + 1 : (sc - g * lanes) / -k + 1;
    return cc_min(c, m);
}

int be_walk_segs(be_walk *w, int64_t n, be_wseg *s)
{
    int ns = 0;
    for (int64_t i = 0; i < n;) {
        const int64_t m = walk_carry_free(w, n - i);
        if (m < 2) { /* outside the buffer, a carry next, or several coordinates moving */
            be_wseg *q = &s[ns++];
            *q = (be_wseg){-1, 0, 0, 1, 0, 0};
            if (!be_walk_stick(w, &q->g, &q->r, &q->byte))
                q->g = -1;
            be_walk_next(w);
            i++;
            continue;
        }
        /* only coordinate d1 moves: along a group, or across the lanes */
        int64_t g0 = 0, r0 = 0, b0 = 0;
        be_walk_stick(w, &g0, &r0, &b0);
        if (w->d1 != w->sd) {
            s[ns++] = (be_wseg){g0, r0, b0, m, w->drow, 0};
        } else {
            const int64_t k = w->st[w->sd];
            for (int64_t t = 0, sc = w->co[w->sd]; t < m;) {
                const int64_t c = walk_in_group(sc, k, w->lanes, m - t);
                s[ns++] = (be_wseg){sc / w->lanes, r0, sc % w->lanes * w->esz, c, 0, k * w->esz};
                t += c;
                sc += c * k;
            }
        }
        i += m;
        walk_skip(w, m);
    }
    return ns;
}

int be_walk_axis(const be_walk *w, int64_t move, int64_t *by)
{
    int64_t co[GR_MAX_RANK] = {0};
    be_coords_of(&w->c->p->bufs[w->buf].type, move, co);
    int d1 = -1;
    for (int d = 0; d < w->rank; d++)
        if (co[d])
            d1 = d1 == -1 ? d : -2;
    *by = d1 >= 0 ? co[d1] : 0;
    return d1;
}

int64_t be_walk_free(const be_walk *w, int64_t n)
{
    return walk_carry_free(w, n);
}

void be_walk_carry(be_walk *w)
{
    walk_add(w, w->st);
    w->row = 0;
    for (int d = 0; d < w->rank; d++)
        w->row += w->co[d] * w->rs[d];
}

int be_lane_fits(const be_ctx *c, int buf, const ir_index *idx, int64_t extent)
{
    const gr_ttype *t = &c->p->bufs[buf].type;
    const int s = c->lay[buf].stick_dim;
    int64_t co[GR_MAX_RANK] = {0};
    if (!t->rank)
        return extent <= 1;
    be_coords_of(t, idx->offset, co);
    return co[s] + extent <= t->shape[s];
}

int64_t be_index_at(const ir_index *idx, int nvars, const int64_t *val)
{
    int64_t f = idx->offset;
    for (int v = 0; v < nvars; v++)
        f += idx->coef[v] * val[v];
    return f;
}

/* Does a walk with loops stepping whole stick groups (gstep[x] groups a
 * step of x, over ext[x] steps) stay inside the buffer without a carry:
 * the stick dimension's coordinates (base's, the steps', the lane walk's
 * lanes) below its length, and the rows below the layout's? */
static int view_steps_fit(const be_ctx *c, int buf, const ir_index *idx, int nvars, int lane_var, const int64_t *ext,
                          const int64_t *gstep, const be_view *v)
{
    const be_layout *L = &c->lay[buf];
    const gr_ttype *t = &c->p->bufs[buf].type;
    int64_t off[GR_MAX_RANK] = {0}, col, row = L->rows - v->rows_left;
    be_coords_of(t, idx->offset, off);
    col = off[L->stick_dim] + (lane_var >= 0 ? ext[lane_var] : 1);
    for (int x = 0; x < nvars; x++) {
        if (x == lane_var || !idx->coef[x])
            continue;
        if (ext[x] < 1)
            return 0;
        col += (ext[x] - 1) * gstep[x] * c->t.lanes16;
        row += (ext[x] - 1) * (v->rs[x] - gstep[x] * L->rows);
    }
    return col <= t->shape[L->stick_dim] && row < L->rows;
}

int be_view_of(const be_ctx *c, int buf, const ir_index *idx, int nvars, int lane_var, const int64_t *ext,
               be_view *v, char *why, size_t whylen)
{
    const ir_buf *B = &c->p->bufs[buf];
    const be_layout *L = &c->lay[buf];
    const gr_ttype *t = &B->type;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16;
    memset(v, 0, sizeof *v);
    if (!L->dram) {
        be_fmt(why, whylen, "buffer %s is not in DRAM", B->name);
        return -1;
    }
    const int s = L->stick_dim, rank = t->rank;
    int64_t rstr[GR_MAX_RANK], acc = 1;
    for (int d = rank - 1; d >= 0; d--) {
        rstr[d] = acc;
        if (d != s)
            acc *= t->shape[d];
    }
    int64_t co[GR_MAX_RANK] = {0}, off[GR_MAX_RANK] = {0}, gstep[IR_MAX_VARS] = {0};
    int nstep = 0;
    if (idx->offset < 0) {
        be_fmt(why, whylen, "%s is read at a negative offset", B->name);
        return -1;
    }
    be_coords_of(t, idx->offset, off);
    for (int x = 0; x < nvars; x++) {
        int64_t coef = idx->coef[x];
        if (!coef)
            continue;
        if (coef < 0) {
            be_fmt(why, whylen, "%s is walked backwards (stride %" PRId64 ")", B->name, coef);
            return -1;
        }
        memset(co, 0, sizeof co);
        be_coords_of(t, coef, co);
        if (x == lane_var) {
            for (int d = 0; d < rank; d++)
                if (co[d] != (d == s)) {
                    be_fmt(why, whylen,
                             "%s is not walked along its stick dimension %d with unit stride (needs a restickify)",
                             B->name, s);
                    return -1;
                }
            continue;
        }
        if (rank && co[s] && (!ext || co[s] % lanes || L->f32)) {
            be_fmt(why, whylen, "%s: a loop strides inside its stick dimension %d (needs a restickify)", B->name, s);
            return -1;
        }
        /* a step of whole stick groups moves that many groups' rows */
        gstep[x] = rank ? co[s] / lanes : 0;
        nstep += gstep[x] != 0;
        v->rs[x] = gstep[x] * L->rows;
        for (int d = 0; d < rank; d++)
            if (d != s)
                v->rs[x] += co[d] * rstr[d];
    }
    int64_t os = rank ? off[s] : 0;
    if (lane_var >= 0 && os % lanes) {
        be_fmt(why, whylen, "%s is read from element %" PRId64 " of a stick on (needs a restickify)", B->name,
                 os % lanes);
        return -1;
    }
    int64_t base_row = 0;
    for (int d = 0; d < rank; d++)
        if (d != s)
            base_row += off[d] * rstr[d];
    v->lane = (int)(os % lanes);
    v->base = (int64_t)L->off + ((os / lanes) * L->rows + base_row) * sb;
    v->gstride = L->rows * sb;
    v->groups = L->groups - os / lanes;
    v->rows_left = L->rows - base_row;
    if (nstep) { /* the rows and lanes the steps reach are all in the buffer: nothing to cut */
        if (!view_steps_fit(c, buf, idx, nvars, lane_var, ext, gstep, v)) {
            be_fmt(why, whylen, "%s: a loop steps whole stick groups past its stick dimension (needs a restickify)",
                     B->name);
            return -1;
        }
        v->rows_left = INT64_MAX;
    }
    return 0;
}

int be_view_wrap(const be_ctx *c, int buf, const ir_index *idx, be_view *v)
{
    const be_layout *L = &c->lay[buf];
    const gr_ttype *t = &c->p->bufs[buf].type;
    const int s = L->stick_dim;
    const int64_t lanes = c->t.lanes16;
    if (L->f32 || s == 0 || t->shape[s] % lanes)
        return -1;
    /* one step of dimension s - 1 moves this many layout rows (the rows
     * are the other dimensions row-major, so a carry past it moves on
     * alike) */
    int64_t prow = 1, co[GR_MAX_RANK] = {0};
    for (int d = s + 1; d < t->rank; d++)
        prow *= t->shape[d];
    be_coords_of(t, idx->offset, co);
    v->gper = L->groups;
    v->gph = co[s] / lanes;
    v->pstride = prow * c->t.stick;
    v->groups = L->groups - v->gph + (v->rows_left - 1) / prow * L->groups;
    v->rows_left = INT64_MAX;
    return 0;
}

int64_t be_view_group(const be_view *v, int64_t g)
{
    if (!v->gper)
        return g * v->gstride;
    const int64_t q = v->gph + g;
    return (q % v->gper - v->gph) * v->gstride + q / v->gper * v->pstride;
}

/* One DMA of be_dma_rows: run sticks, nl loop levels (count ln, DRAM
 * stride ld, LX stride ll, innermost first) between DRAM at da and LX at
 * la; a load an LX-kept head holds (be_heads_load) is not emitted. */
static void dma_rows_piece(const be_ctx *c, cc_emit *e, int op, int64_t da, int64_t la, int64_t run, int nl,
                           const int64_t *ln, const int64_t *ld, const int64_t *ll)
{
    cc_dma_shape sh; /* the levels past nl are never read (cc_emit_dma, be_heads_load) */
    sh.run = run;
    sh.levels = nl;
    for (int l = 0; l < nl; l++) {
        sh.n[l] = ln[l];
        sh.ds[l] = op == ISA_OP_DMA_ST ? ld[l] : ll[l];
        sh.as[l] = op == ISA_OP_DMA_ST ? ll[l] : ld[l];
    }
    if (op == ISA_OP_DMA_ST)
        cc_emit_dma(e, op, cc_abs(da), cc_abs(la), &sh);
    else if (!(op == ISA_OP_DMA_LD && be_heads_load(c, e, la, da, &sh)))
        cc_emit_dma(e, op, cc_abs(la), cc_abs(da), &sh);
}

/* The DMA of be_dma_rows for gn groups (np periods of them) of len rows
 * with DRAM stride mstr0 sticks: its loop levels (count, DRAM stride, LX
 * stride), the smallest DRAM stride innermost so that DRAM is read in
 * address order. */
static void dma_rows_group(const be_ctx *c, cc_emit *e, int op, const be_view *v, int64_t da, int64_t la, int64_t lx_gs,
                           int64_t len, int64_t mstr0, int64_t gn, int64_t np)
{
    const int64_t sb = c->t.stick;
    int64_t ln[3], ld[3], ll[3], run = 1;
    int nl = 0;
    if (mstr0 == 1 || len == 1)
        run = len;
    else
        ln[nl] = len, ld[nl] = mstr0 * sb, ll[nl++] = sb;
    ln[nl] = gn, ld[nl] = v->gstride, ll[nl++] = lx_gs;
    if (np > 1)
        ln[nl] = np, ld[nl] = v->pstride, ll[nl++] = v->gper * lx_gs;
    for (int i = 1; i < nl; i++)
        for (int j = i; j > 0 && ld[j] < ld[j - 1]; j--) {
            int64_t t;
            t = ln[j], ln[j] = ln[j - 1], ln[j - 1] = t;
            t = ld[j], ld[j] = ld[j - 1], ld[j - 1] = t;
            t = ll[j], ll[j] = ll[j - 1], ll[j - 1] = t;
        }
    dma_rows_piece(c, e, op, da, la, run, nl, ln, ld, ll);
}

int64_t be_dma_rows(const be_ctx *c, cc_emit *e, int op, int64_t lx, int64_t lx_gs, const be_view *v, const be_rowspace *rsp,
                    int64_t r0, int64_t n, int64_t ng)
{
    const int64_t sb = c->t.stick;
    int64_t count = 0;
    /* Merge levels that are contiguous in DRAM, innermost first. */
    int64_t mext[IR_MAX_VARS + 1], mstr[IR_MAX_VARS + 1];
    int nm = 0;
    for (int i = rsp->nv - 1; i >= 0; i--)
        nm = be_level_join(nm, mext, mstr, rsp->ext[i], v->rs[rsp->var[i]]);
    if (!nm) {
        mext[0] = 1;
        mstr[0] = 0;
        nm = 1;
    }
    for (int64_t r = r0; r < r0 + n;) {
        int64_t rest = r, stick = 0, c0 = 0;
        for (int i = 0; i < nm; i++) {
            int64_t ci = rest % mext[i];
            rest /= mext[i];
            stick += ci * mstr[i];
            if (i == 0)
                c0 = ci;
        }
        int64_t len = cc_min(r0 + n - r, mext[0] - c0), step = len;
        /* a load's rows past its buffer are not read (their values are never used) */
        if (op != ISA_OP_DMA_ST && stick + (len - 1) * mstr[0] >= v->rows_left)
            len = stick >= v->rows_left ? 0 : mstr[0] ? cc_min(len, (v->rows_left - stick + mstr[0] - 1) / mstr[0]) : len;
        if (!len) {
            r += step;
            continue;
        }
        int64_t dram = v->base + stick * sb, lxa = lx + (r - r0) * sb;
        /* The groups: one piece, or for a wrapped view a piece per part of
         * a period, whole periods as one more loop level. */
        for (int64_t g = 0; g < ng;) {
            int64_t gn = ng - g, np = 1;
            if (v->gper) {
                const int64_t ph = (v->gph + g) % v->gper;
                gn = cc_min(gn, v->gper - ph);
                if (!ph && gn == v->gper)
                    np = (ng - g) / v->gper;
            }
            if (e) /* (a count alone, the row plans' prices, builds no shape) */
                dma_rows_group(c, e, op, v, dram + be_view_group(v, g), lxa + g * lx_gs, lx_gs, len, mstr[0], gn, np);
            count++;
            g += gn * np;
        }
        r += step;
    }
    return count;
}

/* Store the sticks of buf's staged copy (at stage) that this core wrote,
 * count[s] elements of stick s (dmao); each must be whole (its valid
 * lanes all written here), else another core would hold the rest. */
int be_store_staged(be_ctx *c, const ir_kernel *K, cc_emit *e, int buf, int64_t stage, const int64_t *count)
{
    const be_layout *L = &c->lay[buf];
    const ir_buf *B = &c->p->bufs[buf];
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, sticks = be_buf_bytes(c, buf) / sb;
    const int64_t dimlen = B->type.rank ? B->type.shape[L->stick_dim] : 1;
    for (int64_t st = 0; st < sticks;) {
        if (!count[st]) {
            st++;
            continue;
        }
        int64_t s1 = st;
        while (s1 < sticks && count[s1] && s1 - st < ISA_COUNT_MAX) {
            int64_t valid = cc_min(lanes, dimlen - (s1 / L->rows) * lanes);
            if (count[s1] != valid)
                return be_error(c, K,
                                "storing %s: core %d writes %" PRId64 " of the %" PRId64
                                " elements of a stick (the rest is another core's; not supported yet)",
                                B->name, e->core, count[s1], valid);
            s1++;
        }
        cc_dma_shape sh = cc_dma_groups(s1 - st, 1, 0, 0);
        cc_emit_dma(e, ISA_OP_DMA_ST, cc_abs((int64_t)L->off + st * sb), cc_abs(stage + st * sb), &sh);
        st = s1;
    }
    return 0;
}

int64_t be_buf_bytes(const be_ctx *c, int buf)
{
    const be_layout *L = &c->lay[buf];
    return L->groups * L->rows * c->t.stick;
}

/* dmai of `sticks` consecutive sticks from DRAM at dram to LX at lx, in
 * runs of at most 65,535 sticks (a DMA's largest run). */
static void load_sticks(be_ctx *c, cc_emit *e, int64_t lx, int64_t dram, int64_t sticks)
{
    const int64_t sb = c->t.stick;
    for (int64_t s0 = 0; s0 < sticks; s0 += ISA_COUNT_MAX) {
        int64_t run = cc_min(ISA_COUNT_MAX, sticks - s0);
        cc_dma_shape sh = cc_dma_groups(run, 1, 0, 0);
        if (!be_heads_load(c, e, lx + s0 * sb, dram + s0 * sb, &sh))
            cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(lx + s0 * sb), cc_abs(dram + s0 * sb), &sh);
    }
}

void be_stage_load(be_ctx *c, cc_emit *e, int buf, int64_t lx)
{
    load_sticks(c, e, lx, (int64_t)c->lay[buf].off, be_buf_bytes(c, buf) / c->t.stick);
}

int64_t be_stage_spans(be_ctx *c, cc_emit *e, int buf, const int64_t *lo, const int64_t *hi, int64_t lx, int64_t *go)
{
    const be_layout *L = &c->lay[buf];
    const int64_t sb = c->t.stick;
    int64_t at = 0;
    for (int64_t g = 0; g < L->groups; g++) {
        go[g] = at;
        int64_t run = hi[g] - lo[g] + 1;
        load_sticks(c, e, lx + at, (int64_t)L->off + (g * L->rows + lo[g]) * sb, run);
        at += run > 0 ? run * sb : 0;
    }
    return at;
}

void be_span_init(const be_layout *L, int64_t *lo, int64_t *hi)
{
    for (int64_t g = 0; g < L->groups; g++) {
        lo[g] = L->rows;
        hi[g] = -1;
    }
}

void be_span_add(const be_layout *L, int64_t stick, int64_t *lo, int64_t *hi)
{
    int64_t g = stick / L->rows, r = stick % L->rows;
    lo[g] = cc_min(lo[g], r);
    hi[g] = cc_max(hi[g], r);
}

int64_t be_span_count(const be_layout *L, const int64_t *lo, const int64_t *hi)
{
    int64_t sticks = 0;
    for (int64_t g = 0; g < L->groups; g++)
        sticks += hi[g] >= lo[g] ? hi[g] - lo[g] + 1 : 0;
    return sticks;
}

int64_t be_span_total(const be_layout *L, int64_t *lo, int64_t *hi)
{
    int64_t sticks = be_span_count(L, lo, hi);
    if (!sticks) {
        lo[0] = hi[0] = 0;
        sticks = 1;
    }
    return sticks;
}
