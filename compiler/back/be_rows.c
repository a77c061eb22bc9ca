/* be_rows.c: POINTWISE and REDUCTION kernels as row kernels, evaluated
 * by the SFP expression evaluator they share with matmul epilogues
 * (be_sfp.c).
 *
 * A row kernel sees its iteration space as rows x columns: the columns
 * are the reduced loop (REDUCTION) or the innermost loop (POINTWISE), the
 * rows everything outside.  Rows are split across cores; each core walks
 * its rows in chunks that alternate between two LX slots:
 *
 *   dmai: wait empty[s]; load the chunk's tiles and per-row values; sig full[s]
 *   sfp0: wait full[s]; one SFP instruction per expression node; sig done[s]
 *   dmao: wait done[s]; store the results leaving the kernel; sig empty[s]
 *
 * Values (be_val): a TILE is G groups of R row sticks; a ROW value one
 * stick per row (reductions write it with f=lanes, one element per row;
 * it enters a tile op as bm=elem); a COL value G sticks shared by every
 * row (bias, layer-norm weight: loaded once per kernel, bs1 = 0); a
 * constant enters as bm=imm. */
#include "backend.h"
#include "be_diag.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- Row kernels ---- */

/* The row length to cut a pointwise kernel's column loop colvar into, or
 * 0 to keep it: the last dimension of the buffers the kernel stores to
 * DRAM, when every one has that last dimension, is sticked on it and
 * walked contiguously by the loop, which runs past it. */
static int64_t rk_split_cols(const be_ctx *c, const ir_kernel *K, int colvar)
{
    const ir_prog *p = c->p;
    int64_t cols = K->sig.outer[colvar], cut = 0;
    for (int j = 0; j < K->nnodes; j++) { /* every stored buffer must agree */
        int n = K->nodes[j];
        const ir_node *N = &p->nodes[n];
        const be_layout *L = &c->lay[N->out];
        if (!L->dram)
            continue;
        ir_index vars[IR_MAX_VARS];
        if (ir_node_vars(p, n, &K->sig, vars))
            return 0;
        ir_index st = ir_idx_compose(&N->store, N->nvars, vars);
        const gr_ttype *T = &p->bufs[N->out].type;
        int64_t last = T->rank ? T->shape[T->rank - 1] : 1;
        if (st.coef[colvar] != 1 || L->stick_dim != T->rank - 1 || last >= cols || cols % last ||
            (cut && last != cut))
            return 0;
        cut = last;
    }
    return cut;
}

static void rk_measure(rk_plan *k);
static void rk_measure_late(rk_plan *k);

/* Plan a row kernel's structure: rows, columns, node values and loads,
 * not yet how its evaluation uses temps (rk_build). */
static int rk_shape(be_ctx *c, int pos, rk_plan *k)
{
    ir_prog *p = c->p;
    const ir_kernel *K = &p->kernels[p->order[pos]];
    memset(k, 0, sizeof *k);
    k->c = c;
    k->K = K;
    k->pos = pos;
    k->scalars = 1;
    const ir_sig *s = &K->sig;
    k->nvars = s->nouter + s->nred;
    if (K->kind == IR_REDUCTION) {
        if (s->nred != 1)
            return be_error(c, K, "reduces over %d dimensions at once (the back half reduces one)", s->nred);
        k->colvar = s->nouter;
        k->cols = s->red[0];
        k->rsp.nv = s->nouter;
    } else if (s->nouter < 1) { /* one element: a column loop of one, which nothing walks */
        k->nvars = 1;
        k->colvar = 0;
        k->cols = 1;
        k->rsp.nv = 0;
    } else {
        k->colvar = s->nouter - 1;
        k->cols = s->outer[s->nouter - 1];
        k->rsp.nv = s->nouter - 1;
    }
    for (int i = 0; i < k->rsp.nv; i++)
        k->rsp.ext[i] = s->outer[i];
    /* A pointwise loop merged past its output's last dimension (a relu over
     * (1024, 1024) is one loop of 2^20) walks sticks only within a row of
     * that dimension: cut it back into rows x that dimension. */
    ir_index split[IR_MAX_VARS];
    int64_t inner = K->kind == IR_POINTWISE && s->nouter ? rk_split_cols(c, K, k->colvar) : 0;
    if (inner) {
        for (int v = 0; v < k->nvars; v++)
            split[v] = ir_idx_var(v + (v >= k->colvar));
        split[k->colvar].coef[k->colvar] = inner;
        split[k->colvar].coef[k->colvar + 1] = 1;
        k->rsp.ext[k->rsp.nv++] = k->cols / inner;
        k->cols = inner;
        k->colvar++;
        k->nvars++;
    }
    k->rows = 1;
    for (int i = 0; i < k->rsp.nv; i++) {
        k->rsp.var[i] = i;
        k->rows *= k->rsp.ext[i];
    }
    k->G = cc_ceil_div(k->cols, c->t.lanes16);
    k->nodes = ir_xalloc((size_t)K->nnodes * sizeof *k->nodes);
    rk_walk w = {k, ir_xalloc((size_t)p->nbufs), 0};
    size_t seen_n = (size_t)p->A.n + 1;
    char *seen = ir_xalloc(seen_n);
    for (int j = 0; j < K->nnodes && !w.failed; j++) {
        int n = K->nodes[j];
        const ir_node *N = &p->nodes[n];
        ir_index vars[IR_MAX_VARS];
        if (ir_node_vars(p, n, s, vars)) {
            free(w.produced);
            free(seen);
            return be_error(c, K, "internal: node %s does not fit the kernel's loops", p->bufs[N->out].name);
        }
        for (int v = 0; inner && v < N->nvars; v++)
            vars[v] = ir_idx_compose(&vars[v], k->nvars - 1, split);
        rk_node *rn = &k->nodes[k->nn++];
        rn->node = n;
        rn->expr = ir_subst(&p->A, N->body, N->nvars, vars, NULL);
        rn->store = ir_idx_compose(&N->store, N->nvars, vars);
        rn->cls = N->kind == IR_REDUCTION || rn->store.coef[k->colvar] == 0 ? BE_V_ROW : BE_V_TILE;
        ir_expr_walk(&p->A, rn->expr, be_collect_load, &w);
        if ((size_t)p->A.n + 1 > seen_n) { /* ir_subst grew the arena: grow seen with it */
            seen = realloc(seen, (size_t)p->A.n + 1);
            if (!seen)
                abort();
            memset(seen + seen_n, 0, (size_t)p->A.n + 1 - seen_n);
            seen_n = (size_t)p->A.n + 1;
        }
        k->nexpr += be_count_temps(p, rn->expr, seen) + 2;
        w.produced[N->out] = 1;
        rn->dram = c->lay[N->out].dram;
        if (rn->dram && !w.failed) {
            char why[256];
            /* a result its layout cannot take as the kernel walks it (a transposed
             * store, a per-row value inside a stick) goes through a staged copy
             * of its buffer in LX, restickified element by element (sfp.rst) */
            rn->staged = be_view_of(c, N->out, &rn->store, k->nvars, rn->cls == BE_V_TILE ? k->colvar : -1, NULL,
                                    &rn->sv, why, sizeof why) ||
                         (rn->cls == BE_V_TILE && !be_lane_fits(c, N->out, &rn->store, k->cols)) ||
                         (rn->cls == BE_V_ROW && rn->sv.lane);
            if (rn->staged && c->lay[N->out].f32) {
                free(w.produced);
                free(seen);
                return be_error(c, K, "storing %s: %s", p->bufs[N->out].name, why);
            }
        }
    }
    free(w.produced);
    free(seen);
    return w.failed ? -1 : 0;
}

/* A row kernel's accesses are its structure's (rk_shape: the program and
 * the layouts, fixed from the layout pass on), not its split's, and
 * workdiv asks them again and again (after every plan, in the kernel-
 * ahead search of each kernel before it, for the alignments' kept bytes;
 * lxplan once more): each answer is remembered per kernel position.  So
 * is the structure itself with how its evaluation uses temps (rk_build:
 * rk_shape, then rk_measure's dry runs of its nodes over its loads),
 * which every plan, estimate and codegen of the kernel built again
 * (BERT-base 180 times for its 11 row kernel positions). */
typedef struct {
    int done;
    rk_plan k;         /* as rk_build made it (k.reads over nreads expressions) */
    int nreads;
} rk_built;

struct be_rowsacc {
    be_access **a; /* per position: its accesses (NULL: not asked yet, or it failed) */
    int *n;
    rk_built *b;   /* per position: its structure, measured */
};

static struct be_rowsacc *rk_memo_of(be_ctx *c)
{
    if (!c->racc) {
        c->racc = ir_xalloc(sizeof *c->racc);
        c->racc->a = ir_xalloc((size_t)(c->p->norder + 1) * sizeof *c->racc->a);
        c->racc->n = ir_xalloc((size_t)(c->p->norder + 1) * sizeof *c->racc->n);
        c->racc->b = ir_xalloc((size_t)(c->p->norder + 1) * sizeof *c->racc->b);
    }
    return c->racc;
}

void be_rows_access_free(be_ctx *c)
{
    for (int i = 0; c->racc && i < c->p->norder; i++) {
        free(c->racc->a[i]);
        rk_free(&c->racc->b[i].k);
    }
    if (c->racc) {
        free(c->racc->a);
        free(c->racc->n);
        free(c->racc->b);
    }
    free(c->racc);
    c->racc = NULL;
}

/* A copy of a[0..n) in room for cap elements, the rest zero (each
 * zeroed whole first, by calloc, then written over). */
static void *rk_copy_of(const void *a, size_t n, size_t cap, size_t size)
{
    char *d = ir_xmalloc(cap * size);
    if (n)
        memcpy(d, a, n * size);
    memset(d + n * size, 0, (cap - n) * size);
    return d;
}

/* *d a copy of s, its own arrays; d->reads over nd expressions, of which
 * s->reads counts the first ns (the rest, added to the arena since by
 * other kernels' plans, the evaluation reads none of: 0, as a measure
 * now would find). */
static void rk_copy(rk_plan *d, const rk_plan *s, int ns, int nd)
{
    *d = *s;
    d->nodes = rk_copy_of(s->nodes, (size_t)s->nn, (size_t)s->K->nnodes + 1, sizeof *d->nodes);
    d->loads = rk_copy_of(s->loads, (size_t)s->nl, (size_t)s->nl + 1, sizeof *d->loads);
    d->reads = s->reads ? rk_copy_of(s->reads, (size_t)ns, (size_t)nd, sizeof *d->reads) : NULL;
    d->outloads = s->outloads ? rk_copy_of(s->outloads, (size_t)s->noutloads, (size_t)s->noutloads + 1,
                                           sizeof *d->outloads)
                              : NULL;
    d->outloads_cap = s->outloads ? s->noutloads + 1 : 0;
}

/* rk_shape, and how the evaluation uses temps (rk_measure): made once
 * per kernel position, then copied. */
static int rk_build(be_ctx *c, int pos, rk_plan *k)
{
    rk_built *x = &rk_memo_of(c)->b[pos];
    if (x->done) {
        rk_copy(k, &x->k, x->nreads, c->p->A.n);
        return 0;
    }
    if (rk_shape(c, pos, k))
        return -1;
    rk_measure(k);
    x->done = 1;
    x->nreads = c->p->A.n;
    rk_copy(&x->k, k, x->nreads, x->nreads);
    return 0;
}

/* A copy of the n accesses a (the caller's to free). */
static be_access *rk_access_copy(const be_access *a, int n)
{
    be_access *b = ir_xalloc((size_t)(n + 1) * sizeof *b);
    memcpy(b, a, (size_t)n * sizeof *b);
    return b;
}

static int rk_access(be_ctx *c, int pos, be_access **out, int *n);

int be_rows_access(be_ctx *c, int pos, be_access **out, int *n)
{
    struct be_rowsacc *m = rk_memo_of(c);
    if (m->a[pos]) {
        *out = rk_access_copy(m->a[pos], m->n[pos]);
        *n = m->n[pos];
        return 0;
    }
    const int rc = rk_access(c, pos, out, n);
    if (!rc) {
        m->a[pos] = rk_access_copy(*out, *n);
        m->n[pos] = *n;
    }
    return rc;
}

static int rk_access(be_ctx *c, int pos, be_access **out, int *n)
{
    rk_plan k;
    *out = NULL;
    *n = 0;
    if (rk_shape(c, pos, &k)) { /* what it reads and writes: no evaluation measured */
        rk_free(&k);
        return -1;
    }
    /* a gather's load is two accesses (the table and its row numbers) */
    be_access *a = ir_xalloc((size_t)(2 * k.nl + k.nn + 1) * sizeof *a);
    for (int i = 0; i < k.nl; i++) {
        const rk_load *L = &k.loads[i];
        const int buf = c->p->A.e[L->e].buf;
        const int aligned = L->cls == BE_V_TILE && !L->staged && !L->gather && be_rows_aligned(&k, buf, &L->v);
        a[(*n)++] = (be_access){.buf = buf, .aligned = aligned, .may_align = aligned};
        if (L->gather) /* and its row numbers */
            a[(*n)++] = (be_access){.buf = c->p->A.e[L->ids].buf};
    }
    for (int i = 0; i < k.nn; i++) {
        const rk_node *N = &k.nodes[i];
        if (!N->dram)
            continue;
        const int buf = c->p->nodes[N->node].out;
        a[(*n)++] = (be_access){
            .buf = buf, .write = 1, .aligned = N->cls == BE_V_TILE && !N->staged && be_rows_aligned(&k, buf, &N->sv)};
    }
    rk_free(&k);
    *out = a;
    return 0;
}

/* a / b rounded down (b > 0). */
static int64_t rk_floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The columns cond, a comparison of the column's index with a constant
 * (cat's where: lower.c, l_cat), holds at: [lo, m) when *below, else
 * [m, hi); 0 when it is no such comparison. */
static int rk_guard_cut(const rk_plan *k, const ir_expr *x, int64_t *m, int *below)
{
    const ir_arena *A = &k->c->p->A;
    if (x->kind != IR_E_OP || x->a < 0 || x->b < 0)
        return 0;
    const ir_expr *i = &A->e[x->a], *v = &A->e[x->b];
    if (i->kind != IR_E_INDEX || v->kind != IR_E_CONST || i->idx.coef[k->colvar] <= 0)
        return 0;
    for (int q = 0; q < k->nvars; q++)
        if (q != k->colvar && i->idx.coef[q])
            return 0;
    const int64_t cc = i->idx.coef[k->colvar], d = (int64_t)v->value - i->idx.offset;
    if ((double)(int64_t)v->value != v->value)
        return 0;
    /* off + cc col < v: col < ceil(d / cc); off + cc col <= v: col < floor(d / cc) + 1 */
    const int64_t lt = -rk_floor_div(-d, cc), le = rk_floor_div(d, cc) + 1;
    switch (x->op) {
    case IR_LT: *m = lt; *below = 1; return 1;
    case IR_LE: *m = le; *below = 1; return 1;
    case IR_GE: *m = lt; *below = 0; return 1;
    case IR_GT: *m = le; *below = 0; return 1;
    default: return 0;
    }
}

/* The columns [lo, hi) at which expression e is evaluated, where-guards
 * on the column's index cut, joined into [*glo, *ghi) at each use of
 * load target; *budget counts the expressions visited down (a shared
 * subexpression is visited per use): at 0 every column is taken. */
static void rk_guard_walk(const rk_plan *k, int e, int target, int64_t lo, int64_t hi, int64_t *glo, int64_t *ghi,
                          int64_t *budget)
{
    if (e < 0 || lo >= hi)
        return;
    if (--*budget < 0) {
        *glo = 0;
        *ghi = k->cols;
        return;
    }
    if (e == target) {
        *glo = cc_min(*glo, lo);
        *ghi = cc_max(*ghi, hi);
        return;
    }
    const ir_expr *x = &k->c->p->A.e[e];
    int64_t m = 0, tlo = lo, thi = hi, flo = lo, fhi = hi;
    int below = 0;
    if (x->kind == IR_E_WHERE && rk_guard_cut(k, &k->c->p->A.e[x->a], &m, &below)) {
        if (below) {
            thi = cc_min(hi, m);
            flo = cc_max(lo, m);
        } else {
            tlo = cc_max(lo, m);
            fhi = cc_min(hi, m);
        }
    }
    rk_guard_walk(k, x->a, target, lo, hi, glo, ghi, budget);
    rk_guard_walk(k, x->b, target, tlo, thi, glo, ghi, budget);
    rk_guard_walk(k, x->c, target, flo, fhi, glo, ghi, budget);
}

/* rk_load_groups of a narrow kernel's load whose guards tell its groups
 * (apart, so that the rest, asked of every load whenever rk_lx prices a
 * plan, is inlined). */
static __attribute__((noinline)) void rk_guard_groups(const rk_plan *k, const rk_load *L, int64_t *g0, int64_t *g1)
{
    const int64_t lanes = k->c->t.lanes16;
    int64_t lo = k->cols, hi = 0, budget = 1 << 16;
    for (int j = 0; j < k->nn; j++)
        rk_guard_walk(k, k->nodes[j].expr, L->e, 0, k->cols, &lo, &hi, &budget);
    if (lo >= hi) { /* read nowhere */
        *g1 = 0;
        return;
    }
    *g0 = L->staged ? lo / lanes : 0;
    *g1 = cc_ceil_div(hi, lanes);
}

/* The column groups [*g0, *g1) a narrow kernel's tile load L fills: those
 * of the columns its where-guards let it be read at (a cat piece's own);
 * else all G.  A staged load restickifies only those (rk_gather), a view
 * loads groups from 0 to its last (be_dma_rows); each column's value
 * elsewhere is never used. */
static void rk_load_groups(const rk_plan *k, const rk_load *L, int64_t *g0, int64_t *g1)
{
    *g0 = 0;
    *g1 = L->cls == BE_V_TILE ? k->G : 1;
    if (k->narrow && L->cls == BE_V_TILE && !L->gather && !L->res && (L->staged || !L->v.gper))
        rk_guard_groups(k, L, g0, g1);
}

/* Where each slot load's tile starts in its slot, in groups (first[i];
 * -1: not in a slot; first NULL: not asked), and the groups the loads
 * take.  A narrow kernel's tile holds only its groups [g0, g1), packed
 * after the tile before, its start moved back by g0 so that group g is
 * still at start + g: the evaluation reads all G groups of each, past its
 * own into its neighbours' (in the slot, and unused). */
static int64_t rk_slot_place(const rk_plan *k, int64_t *first)
{
    int64_t cursor = 0, end = 0;
    for (int i = 0; i < k->nl; i++) {
        const rk_load *L = &k->loads[i];
        if (first)
            first[i] = -1;
        if (L->cls == BE_V_COL || L->shared) /* a shared load's rows are held whole (rk_shared_bytes) */
            continue;
        int64_t g0, g1;
        rk_load_groups(k, L, &g0, &g1);
        const int64_t at = cc_max(0, cursor - g0);
        if (first)
            first[i] = at;
        cursor = at + g1;
        end = cc_max(end, at + (L->cls == BE_V_TILE ? k->G : 1));
    }
    return cc_max(cursor, end);
}

/* LX bytes per row of a slot, and fixed (outside the slots: per-column
 * loads, a gather's row numbers). */
static void rk_lx(const rk_plan *k, int64_t *per_row, int64_t *fixed)
{
    const int64_t sb = k->c->t.stick;
    *per_row = 0;
    *fixed = 0;
    for (int i = 0; i < k->nl; i++) {
        /* a staged load's sticks come per chunk (rk_stage_need) */
        if (k->loads[i].gather) /* its row numbers, staged whole */
            *fixed += be_buf_bytes(k->c, k->c->p->A.e[k->loads[i].ids].buf);
        if (k->loads[i].cls == BE_V_COL)
            *fixed += (k->G + (k->loads[i].scalar ? 1 : 0)) * sb; /* a scalar's own stick too */
    }
    *per_row += rk_slot_place(k, NULL) * sb;
    /* temps: a tile per cell (per-row and per-column temps take one too),
     * as many cells as a chunk's evaluation uses (rk_measure) */
    *per_row += k->ntemps * k->G * sb;
    if (!*per_row) /* nothing per row (a copy of one element): a row still counts a stick */
        *per_row = sb;
    for (int j = 0; j < k->nn; j++) /* staged results: a copy of the whole buffer */
        if (k->nodes[j].dram && k->nodes[j].staged)
            *fixed += be_buf_bytes(k->c, k->c->p->nodes[k->nodes[j].node].out);
}

static int64_t rk_chunk_rows(const rk_plan *k, int64_t r0, int64_t rt, int64_t per_row, int64_t fixed,
                             int64_t *stage);

/* ---- Operands every core reads alike, shared over the ring ----
 *
 * A tile load whose rows are the same sticks on every core (a causal mask
 * or a rotary table indexed by position, broadcast over the heads the
 * cores split) would be read from DRAM once per core.  Instead each core
 * holds it whole in LX (chunk j's rows at lx + j * G * R sticks, group
 * stride R sticks, as a slot holds them), loads a share of every chunk's
 * rows (cc_split of its rows over the cores) and sends that share to every
 * other core's copy over the ring (ring.send, same LX address: the cores
 * lay their LX out alike); sfp0 waits for its own share and every other
 * core's before the first chunk.  The ring writes another core's LX, so the
 * kernel has a bar before it (be_bound.c finds the ring traffic); none is
 * needed after it, every share being awaited inside the kernel. */

/* LX bytes the shared loads hold on a part of rt rows in chunks of R. */
static int64_t rk_shared_bytes(const rk_plan *k, int64_t rt, int64_t R)
{
    int64_t n = 0;
    for (int i = 0; i < k->nl; i++)
        n += k->loads[i].shared ? cc_round_up(rt, R) * k->G * k->c->t.stick : 0;
    return n;
}

/* A row of the row space as its variables' digits and its first stick
 * in a view (from the view's base): the sum of each digit times the
 * view's row stride of its variable. */
typedef struct {
    int64_t digit[IR_MAX_VARS], at;
} rk_rowpos;

static void rk_rowpos_at(const rk_plan *k, const be_view *v, int64_t r, rk_rowpos *q)
{
    q->at = 0;
    for (int i = k->rsp.nv - 1; i >= 0; i--) {
        q->digit[i] = r % k->rsp.ext[i];
        q->at += q->digit[i] * v->rs[k->rsp.var[i]];
        r /= k->rsp.ext[i];
    }
}

/* The next row (the last variable fastest): no division. */
static void rk_rowpos_next(const rk_plan *k, const be_view *v, rk_rowpos *q)
{
    for (int i = k->rsp.nv - 1; i >= 0; i--) {
        const int64_t step = v->rs[k->rsp.var[i]];
        q->at += step;
        if (++q->digit[i] < k->rsp.ext[i])
            return;
        q->at -= q->digit[i] * step;
        q->digit[i] = 0;
    }
}

/* Does every part of rt rows (of `cores`) start at the same sticks in
 * view v as the first, row by row?  Each part's rows counted up digit by
 * digit, not divided out row by row (the Llama-8B prefill layer's shared
 * loads asked for 86 M instructions of that), compared row by row and
 * part by part until the first that differs. */
static int *rk_repeat_memo(const rk_plan *k, const be_view *v, int64_t rt, int64_t cores);

static int rk_rows_repeat(const rk_plan *k, const be_view *v, int64_t rt, int64_t cores)
{
    int *known = rk_repeat_memo(k, v, rt, cores);
    if (*known >= 0)
        return *known;
    rk_rowpos *q = ir_xalloc((size_t)cores * sizeof *q);
    for (int64_t p = 0; p < cores; p++)
        rk_rowpos_at(k, v, p * rt, &q[p]);
    int same = 1;
    for (int64_t i = 0; i < rt && same; i++) {
        for (int64_t p = 1; p < cores && same; p++)
            same = q[p].at == q[0].at;
        for (int64_t p = 0; p < cores && same; p++)
            rk_rowpos_next(k, v, &q[p]);
    }
    free(q);
    return *known = same;
}

/* The bar a shared load puts before its kernel makes every core wait for
 * the last to finish the kernel before, whose cores can end far apart: a
 * 1x1b4 bmm of attention (256 tokens, 2 heads a core; estimate 20,888
 * cycles) ended between 75,517 and 89,644 cycles on spyre, a third of its
 * span of 45,697, and sharing its softmax's mask (7,200 cycles of DRAM
 * saved) left the graph 10,731 cycles slower.  Sharing must save more DRAM
 * time than this share of the kernel before's estimate: Llama-8B prefill's
 * mask saves 149k cycles against its bmm's 309k, its two rotary tables together 74k
 * against k_proj's 122k. */
#define RK_SHARE_BAR 0.4

/* The estimate of the kernel before k's; 1 when there is none, or when
 * it has no work division yet (workdiv's look one kernel ahead plans a
 * reader whose kernel before is not divided: no cores to price it on). */
static double rk_prev_est(rk_plan *k)
{
    if (k->prev_est == 0) {
        const int prev = k->pos - 1;
        const double e = prev >= 0 && k->c->work[prev].cores > 0 ? be_kind_of(k->c, prev)->estimate(k->c, prev) : 1;
        k->prev_est = e < 1 ? 1 : e; /* an error's -1 */
    }
    return k->prev_est;
}

/* The DRAM cycles sharing load L over `cores` cores saves, or 0 when it
 * cannot be shared: a tile read through its view (not staged, gathered or
 * kept in LX), equal parts, row i of every part at the same sticks, and
 * its reads saved worth more than twice the ring sends (each core's share
 * to every other: issue and bytes). */
static double rk_share_saves(const rk_plan *k, const rk_load *L, int64_t cores)
{
    const be_ctx *c = k->c;
    if (L->cls != BE_V_TILE || L->staged || L->gather || L->res || cores < 2 || k->rows % cores ||
        c->t.dram_bytes_per_cycle <= 0)
        return 0;
    const int64_t rt = k->rows / cores;
    const double part = (double)rt * k->G * c->t.stick, saved = (double)(cores - 1) * part / c->t.dram_bytes_per_cycle;
    const double sends = c->t.dma_insn_cycles + part / (double)cores / c->cfg->ring_bytes_per_cycle;
    if (saved <= 2 * (double)(cores - 1) * sends)
        return 0;
    return rk_rows_repeat(k, &L->v, rt, cores) ? saved : 0;
}

/* Which loads to share on `cores` cores (share[i]): those that can, when
 * together they save more than the bar before the kernel costs
 * (RK_SHARE_BAR); returns how many. */
static int rk_share_which(rk_plan *k, int64_t cores, char *share)
{
    double saved = 0;
    int n = 0;
    for (int i = 0; i < k->nl; i++) {
        const double s = rk_share_saves(k, &k->loads[i], cores);
        share[i] = s > 0;
        saved += s;
        n += share[i];
    }
    if (n && k->pos > 0 && saved <= RK_SHARE_BAR * rk_prev_est(k)) {
        memset(share, 0, (size_t)k->nl);
        n = 0;
    }
    return n;
}

/* Room for rk_share_which's flags: few, when k has fewer loads, else
 * allocated (to free when not few).  rows_cost_as prices every core
 * count: an allocation each was 0.4% of the Llama-8B decode step's
 * compile. */
enum { RK_FEW_LOADS = 32 };
static char *rk_share_room(const rk_plan *k, char *few)
{
    return k->nl < RK_FEW_LOADS ? few : ir_xalloc((size_t)k->nl + 1);
}

/* Mark the loads shared on `cores` cores; none when the cores would not
 * all take the same chunk rows (their LX must be laid out alike) or a
 * chunk no longer fits. */
static void rk_share(rk_plan *k, int64_t cores)
{
    char few[RK_FEW_LOADS], *share = rk_share_room(k, few);
    int any = rk_share_which(k, cores, share) > 0;
    for (int i = 0; i < k->nl; i++)
        k->loads[i].shared = share[i];
    if (share != few)
        free(share);
    if (!any)
        return;
    int64_t per_row, fixed, stage, R0 = 0;
    rk_lx(k, &per_row, &fixed);
    const int64_t rt = k->rows / cores;
    for (int64_t p = 0; p < cores && any; p++) {
        const int64_t R = rk_chunk_rows(k, p * rt, rt, per_row, fixed, &stage);
        if (R < 1 || (p && R != R0))
            any = 0;
        R0 = R;
    }
    for (int i = 0; i < k->nl && !any; i++)
        k->loads[i].shared = 0;
}

/* A DMA of `sticks` sticks on one unit: its issue, then the sticks at LX's rate. */
static double rk_dma(const be_ctx *c, double sticks)
{
    return c->t.dma_insn_cycles + sticks * (double)c->t.stick / c->cfg->lx_bytes_per_cycle;
}

/* One stick read from one DRAM channel (its bursts back to back), in
 * core cycles (a read's wait: cc_dram_wait). */
static double rk_dram_stick(const be_ctx *c)
{
    const chip_config *g = c->cfg;
    return g->dram_burst_bytes ? (double)c->t.stick / g->dram_burst_bytes * g->dram_burst_tck * g->dram_tck_ns * g->clock_ghz : 0;
}

/* Rows per chunk as rk_chunk_rows takes them for a part of rt rows,
 * without the staged sticks (an estimate: 1 when not even a row fits). */
static int64_t rk_chunk_guess(const rk_plan *k, int64_t rt)
{
    int64_t per_row, fixed;
    rk_lx(k, &per_row, &fixed);
    const int64_t least = cc_max(16, 3 * (int64_t)k->c->cfg->dram_row_bytes / k->c->t.stick);
    const int64_t forced = k->c->work[k->pos].chunk;
    int64_t R = forced ? forced : cc_min(cc_min(rt, cc_max(cc_ceil_div(rt, 4), cc_min(rt, least))), 4096);
    R = cc_min(R, (be_lx_budget(k->c, k->pos) - fixed) / (2 * per_row));
    return cc_max(1, cc_min(R, rt));
}

/* The share of the DRAM channels' peak a row kernel's stream of reads and
 * writes gets (row misses, turnarounds): softmax over (512, 1024) on 11
 * cores moves its 2 MB in 22,910 cycles, 0.84 of the peak's 19,293. */
#define RK_DRAM_EFFICIENCY 0.9

/* Estimated cycles of a row kernel on `cores` cores, as one core runs
 * its part in chunks of R rows, each loaded (dmai), evaluated (SFP) and
 * stored (dmao) while the next loads: the per-column loads, the first
 * chunk's loads (or every core's first reads streaming from the DRAM
 * together) and DRAM latency, then the slowest of the three per chunk,
 * then the last chunk's evaluation and store (or every core's last
 * stores streaming to the DRAM).  Every DMA costs
 * its issue (a transpose's chunk of eight two-stick loads took 528
 * cycles of issue for 16 sticks).  Against it the chip's DRAM: every
 * core's bytes at 0.9 of its peak, and the per-column operands every
 * core reads, served one core after another by the few channels their
 * sticks lie in (layer norm's three one-stick per-column loads cost about
 * 56 cycles per core on spyre: bert_handwritten_small's k7 on 8 cores
 * 981 cycles, on 32 2,370). */
/* The staged loads the need memo keys by their spans at most (rk_needkey). */
enum { RK_NEED_LOADS = 8 };
static int64_t rk_stage_need(const rk_plan *k, int64_t r0, int64_t rt, int64_t R);
static int rk_stage_group(const rk_plan *k, int i, be_rowspans **m, int *at);
static int64_t rk_stage_sticks(const rk_plan *k, int i, be_rowspans *const *m, int nm, int64_t r0, int64_t n);
static int rk_stage_leader(const rk_plan *k, int i);
static int64_t rk_stage_span(const rk_plan *k, int i, int64_t r0, int64_t n, int64_t *lo, int64_t *hi);
static double rk_stage_parts(const rk_plan *k, int i, int64_t cores, int64_t R, double *worst, double *first);

/* DRAM cycles of the staged loads every core reads alike: when the cores
 * together read more than the staged buffers hold (a transpose's chunks
 * span much of its input on every core), every core's staged sticks (the
 * most of any chunk, times its chunks), one core's after another on the
 * channels the buffers' sticks lie in (decoder_small's k3_div: four cores
 * the same 15 sticks, 8 channels); else none.  The channels are the
 * buffers', not one core's share: serve_tiny's prefill RoPE on 32 cores
 * reads 8 sticks a core of a 16 KB buffer over every channel, and counting
 * them on 4 channels priced 32 cores 1,200 cycles above 6 (simulated
 * 1,828 against 2,628). */
static double rk_stage_shared(const rk_plan *k, int64_t cores, int64_t rt, int64_t R)
{
    const be_ctx *c = k->c;
    double whole = 0;
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].staged && rk_stage_leader(k, i) == i) /* a buffer's loads are staged together */
            whole += (double)be_buf_bytes(c, c->p->A.e[k->loads[i].e].buf);
    if (whole == 0)
        return 0;
    const double core = (double)rk_stage_need(k, 0, rt, R) * (double)cc_ceil_div(rt, R);
    if (core * (double)cores <= whole)
        return 0;
    const int64_t chans =
        cc_max(1, cc_min(c->cfg->dram_channels, cc_ceil_div((int64_t)whole, c->cfg->dram_interleave_bytes)));
    return core / (double)c->t.stick * (double)cores * rk_dram_stick(c) / (double)chans;
}

/* Does load L read a tensor an earlier kernel keeps in LX (as the LX
 * plan has it, or while it tiles the kernels, could have it)?  Does
 * node i's result stay in LX only, not also go to DRAM (as the plan has
 * it, or in workdiv's second round could have it: be_res_may_keep)? */
static int rk_from_lx(const rk_plan *k, const rk_load *L)
{
    const int buf = k->c->p->A.e[L->e].buf;
    return L->cls == BE_V_TILE && !L->staged && !L->gather && be_res_may_read(k->c, buf, k->pos) &&
           be_rows_aligned(k, buf, &L->v);
}

static int rk_to_lx_only(const rk_plan *k, int i)
{
    const int buf = k->c->p->nodes[k->nodes[i].node].out;
    return !k->nodes[i].staged && be_res_may_keep(k->c, buf, k->pos);
}

/* The choices (c->waits 0) count one DMA per staged group, not the
 * staging's instructions as emitted.  A view's loads and stores are
 * counted as emitted in both (an instruction per run of rows): with one
 * counted, serve_tiny's prefill left its heads' transpose on 2 cores,
 * 128 rows of one stick each, 3,024 cycles in the report's estimate and
 * 2,942 simulated, against 547 on 31 (docs/compiler.md, "A transpose's
 * DMAs in the choices").  (Counting them in the choices before "One
 * kernel ahead" moved llama_tiny's k3_mul_neg_cat on spyre-4core from 4
 * cores to 3, 17,740 -> 18,472 cycles; it now takes QK^T's 8.)  (A
 * per-row result's store moves R sticks, not R x G, in both; that
 * changed no trace's program.) */

/* The DMAs of a chunk of R rows and ng groups through view v, as
 * be_dma_rows emits them (the first chunk of the first core's part).  A
 * view whose rows do not follow one another in DRAM takes an instruction
 * per run (transformer_small's transposes of 8 rows of 2 sticks: four
 * loads, 264 cycles of issue, where one was counted). */
static int64_t rk_dma_count(const be_ctx *c, const rk_plan *k, int op, const be_view *v, int64_t R, int64_t ng)
{
    return be_dma_rows(c, NULL, op, 0, R * c->t.stick, v, &k->rsp, 0, R, ng);
}

/* The cycles of n DMAs moving a chunk of R rows of ng groups: each its
 * issue, the sticks at LX's rate. */
static double rk_dma_cycles(const be_ctx *c, int64_t n, int64_t R, int64_t ng)
{
    return (double)n * c->t.dma_insn_cycles + (double)(R * ng) * c->t.stick / c->cfg->lx_bytes_per_cycle;
}

/* The cycles of a chunk's DMAs through view v. */
static double rk_dma_view(const be_ctx *c, const rk_plan *k, int op, const be_view *v, int64_t R, int64_t ng)
{
    return rk_dma_cycles(c, rk_dma_count(c, k, op, v, R, ng), R, ng);
}

/* rk_stage_span's lo and hi over layout B's groups: in `small` (2 x
 * RK_SPAN_STACK) when they fit, else allocated (the plans ask for them
 * some thousand times a compile: the Llama-8B decode step's 991 mallocs
 * and frees). */
enum { RK_SPAN_STACK = 128 };
static int64_t *rk_span_lohi(const be_layout *B, int64_t *small)
{
    return B->groups <= RK_SPAN_STACK ? small : ir_xmalloc((size_t)B->groups * 2 * sizeof *small);
}

static void rk_span_lohi_free(int64_t *lo, const int64_t *small)
{
    if (lo != small)
        free(lo);
}

/* The DMAs staging staged load i's buffer for a chunk of R rows (i a
 * leader): one per stick group its rows read, each a run of sticks
 * (be_stage_spans); *sticks gets the sticks staged. */
static double rk_stage_dma(const rk_plan *k, int i, int64_t R, double *sticks)
{
    const be_ctx *c = k->c;
    const be_layout *B = &c->lay[c->p->A.e[k->loads[i].e].buf];
    int64_t small[2 * RK_SPAN_STACK], *lo = rk_span_lohi(B, small), *hi = lo + B->groups, runs = 0;
    *sticks = (double)rk_stage_span(k, i, 0, R, lo, hi);
    for (int64_t g = 0; g < B->groups; g++)
        runs += hi[g] >= lo[g] ? cc_ceil_div(hi[g] - lo[g] + 1, ISA_COUNT_MAX) : 0;
    rk_span_lohi_free(lo, small);
    return (double)cc_max(1, runs) * c->t.dma_insn_cycles + *sticks * (double)c->t.stick / c->cfg->lx_bytes_per_cycle;
}

/* What a chunk's load i costs a core (*in: its DMAs) and moves (*bytes
 * over the part; *first in the first chunk, *first_all on every core
 * together: the staged sticks every core reads alike count once, and a
 * tensor an earlier kernel could keep in LX not at all); returns whether
 * the chunk is one DMA from DRAM (not staged, not a gather, not from LX,
 * its rows one run: the DMA count asked once, as the LX question).  A buffer's
 * staged loads are staged once, its bytes counted once (serve_tiny's
 * prefill RoPE reads its q three times through one staging: counted
 * three times, its 100 KB of DRAM traffic were priced as 200 KB). */
static int rk_load_cost(const be_ctx *c, const rk_plan *k, int i, int64_t cores, int64_t rt, int64_t R, int floor,
                        double *in, double *bytes, double *first, double *first_all)
{
    const rk_load *L = &k->loads[i];
    const double sb = (double)c->t.stick, nch = (double)cc_ceil_div(rt, R);
    const int tile = L->cls == BE_V_TILE || L->gather, from_lx = rk_from_lx(k, L);
    /* a tensor kept in LX by an earlier kernel comes from there (a dma.lx) */
    const int lx = c->waits && from_lx;
    const double b = lx ? 0 : (tile ? (double)rt * k->G : (double)rt) * sb;
    const int leader = !L->staged || rk_stage_leader(k, i) == i; /* a buffer's staged loads share its staging */
    *bytes += leader ? b : 0;
    if (!L->staged) {
        const int64_t ng = tile ? k->G : 1, n = L->gather ? 0 : rk_dma_count(c, k, ISA_OP_DMA_LD, &L->v, R, ng);
        *in += L->gather ? rk_dma(c, (double)(R * k->G)) : rk_dma_cycles(c, n, R, ng);
        *first += b / nch;
        *first_all += from_lx ? 0 : b / nch * (double)cores;
        return !L->gather && n == 1 && !from_lx;
    }
    /* what the cores' first chunks stage beyond what is priced below
     * (rk_stage_parts): the slowest core's extra sticks its DMAs move, and
     * every core's in the DRAM's bytes.  (Adding them to the first
     * chunk's DRAM wait too moved serve_tiny's decode RoPE, 8 rows, from
     * 4 cores to 8, whose consumer QK^T then took 1 core: 13% slower.) */
    double worst = 0, s0 = 0;
    const double all = leader && !floor ? rk_stage_parts(k, i, cores, R, &worst, &s0) : 0;
    const double base = cc_max(s0, b / nch / sb); /* what the lines below price a core's first chunk */
    const double extra = cc_max(0, worst - base), more = cc_max(0, all - (double)cores * base) * sb;
    *bytes += more * nch / (double)cores;
    *in += extra * sb / c->cfg->lx_bytes_per_cycle;
    if (!c->waits) { /* the choices: a run per group (above) */
        *in += (double)k->G * rk_dma(c, (double)R);
        *first += leader ? b / nch : 0;
        *first_all += leader ? b / nch * (double)cores : 0;
    } else if (leader) {
        double sticks;
        *in += rk_stage_dma(k, i, R, &sticks);
        const double whole = (double)be_buf_bytes(c, c->p->A.e[L->e].buf);
        *first += sticks * sb;
        *first_all += cc_min(sticks * sb * (double)cores, whole);
    }
    return 0;
}

static double rk_col_tree_cycles(const rk_plan *k, int64_t cores);

/* A chunk of R rows' SFP work as the simulator times the instructions
 * rk_measure saw one row's evaluation emit: each its issue, its sticks R
 * times one row's at its op's rate (exp and div cost twice an add on
 * spyre).  Counting nexpr simple instructions instead (an upper bound of
 * the temps) put BERT-base's softmax, 7 instructions, at 18: estimated
 * 6,110 cycles for 3,093 simulated.  Without a measure, that bound.
 * A staged load's sfp.rst is not in the evaluation: one a chunk each. */
static double rk_sfp_cycles(const be_ctx *c, const rk_plan *k, int64_t R)
{
    const chip_config *g = c->cfg;
    double rst = 0; /* a staged load's restickify (sfp.rst, simple): each of the tile's sticks once */
    for (int i = 0; c->waits && i < k->nl; i++)
        rst += k->loads[i].staged ? g->sfp_issue_cycles + (double)(R * k->G) * g->sfp_simple_cycles : 0;
    if (!c->waits || !k->sfp.insns)
        return rst + (double)k->nexpr * (g->sfp_issue_cycles + (double)(R * k->G) * g->sfp_simple_cycles);
    return rst + (double)k->sfp.insns * g->sfp_issue_cycles +
           (double)R * (k->sfp.simple_sticks * g->sfp_simple_cycles + k->sfp.complex_sticks * g->sfp_complex_cycles);
}

/* The estimate without the per-column tree, and *tree (when asked) with
 * it: the two differ only in the per-column terms, and pricing the
 * kernel twice over was a tenth of the Llama-8B decode step's compile. */
static double rows_cost_as(const be_ctx *c, rk_plan *k, int64_t cores, int floor, double *tree)
{
    const int64_t rt = cc_ceil_div(k->rows, cores), R = rk_chunk_guess(k, rt), nch = cc_ceil_div(rt, R);
    const double part = (double)rt * k->G, sb = (double)c->t.stick;
    double col = 0, in = 0, out = 0, col_sticks = 0, bytes = 0, first = 0, first_all = 0, stored = 0;
    double lag = 0; /* the first chunk's bytes of a core's last load */
    int plain = 1;  /* every load one DMA a chunk */
    char few[RK_FEW_LOADS], *share = rk_share_room(k, few);
    rk_share_which(k, cores, share);
    for (int i = 0; i < k->nl; i++) {
        const rk_load *L = &k->loads[i];
        if (L->gather) { /* its rows, and the whole row-number tensor on every core */
            const ir_buf *ids = &c->p->bufs[c->p->A.e[L->ids].buf];
            const double idb = (double)gr_ttype_numel(&ids->type) * 4; /* fp32 */
            col += rk_dma(c, idb / sb);
            bytes += idb;
        }
        if (L->cls == BE_V_COL) {
            col += rk_dma(c, (double)k->G);
            col_sticks += (double)k->G;
        } else if (share[i]) { /* a share loaded, then sent to every other core */
            col += rk_dma(c, part / (double)cores) +
                   (double)(cores - 1) * (c->t.dma_insn_cycles + part * sb / (double)cores / c->cfg->ring_bytes_per_cycle);
            bytes += part * sb / (double)cores;
        } else {
            const double before = first;
            plain &= rk_load_cost(c, k, i, cores, rt, R, floor, &in, &bytes, &first, &first_all);
            lag = first - before;
            continue;
        }
        plain = 0;
    }
    for (int i = 0; i < k->nn; i++)
        if (k->nodes[i].dram) {
            out += k->nodes[i].staged ? k->G * rk_dma(c, (double)R)
                                      : rk_dma_view(c, k, ISA_OP_DMA_ST, &k->nodes[i].sv, R, k->nodes[i].cls == BE_V_TILE ? k->G : 1);
            /* a result kept only in LX writes no DRAM, in the choices too,
             * as a product's (mm_plan.lxonly): priced as written, the
             * DRAM term held serve_tiny's prefill_c192 softmax, whose
             * probabilities go to PV by ring exchange, on 16 cores (4,184
             * against 4,094 on 32; not kept, 4,184 and 3,576, simulated
             * 5,019 and 4,177) */
            const double ob = rk_to_lx_only(k, i) ? 0 : part * sb;
            bytes += ob;
            stored += ob;
        }
    if (share != few)
        free(share);
    /* the first chunk's DRAM reads wait, on the channels every core's
     * reads span together (the per-column sticks, alike on every core,
     * once): the kernel ends with its slowest core (a copy of 8 rows on 4
     * cores: 416 to 790 cycles) */
    const double lead = first + col_sticks * sb;
    const double lat = c->waits ? cc_dram_wait(&c->t, first_all + col_sticks * sb, lead / c->t.dma_bytes_per_cycle)
                                : c->t.dram_latency_cycles;
    const double sfp = rk_sfp_cycles(c, k, R), sfp_last = c->waits ? rk_sfp_cycles(c, k, rt - (nch - 1) * R) : sfp;
    const double rate = c->t.dram_bytes_per_cycle > 0 ? RK_DRAM_EFFICIENCY * c->t.dram_bytes_per_cycle : 0;
    double step = in > sfp ? in : sfp;
    step = step > out ? step : out;
    /* a chunk's loads and stores of every core together stream from and to
     * the DRAM while the chunk before is evaluated: a step takes at least
     * their share of the DRAM term (serve_tiny's prefill_c192 cat of the
     * key cache, 512 rows: on 3 cores 4 chunks of 48 rows, priced 1,939
     * cycles for 3,198 simulated, and taken over 32 cores, 1,855) */
    const double chunk_dram = rate > 0 ? bytes * (double)cores / (double)nch / rate : 0;
    step = step > chunk_dram ? step : chunk_dram;
    /* the first chunk's loads wait for every core's first reads to stream
     * from the DRAM together, the last chunk's stores for every core's:
     * a kernel of one chunk a core overlaps neither with its SFP work
     * (serve_tiny's prefill RoPE, 100 KB: its SFP on 6 cores 510 cycles a
     * core, on 32 160; simulated 2,628 and 1,828, where the DRAM's bytes
     * alone priced both alike) */
    const double stream_in = rate > 0 ? first_all / rate : 0;
    /* ... unless each load of a chunk is one DMA: the DRAM serves a DMA
     * whole, the cores' in the order they issue them (one core's DMA
     * outruns the DRAM), so the cores' first chunks land a last load's
     * DMA apart, and a core's SFP work and stores go while the later
     * cores' reads stream: only what that stagger leaves of the stores
     * waits after the last core's SFP work.  (A softmax over 512x1024 on
     * 11 cores, one DMA of 188 KB a core: its chunks land 1,834 to 10,286
     * cycles in, the kernel takes 21,639, the DRAM's 2 MB; priced in
     * series 27,569 and the choice went to 32 cores, 23,499.  The RoPE's
     * staged q takes a DMA a stick group, every core's interleaved.) */
    const double stagger = rate > 0 && plain ? (double)(cores - 1) * lag / rate : 0;
    const double stream_out = rate > 0 ? stored / (double)nch * (double)cores / rate - stagger : 0;
    /* the per-column sticks lie in as many channels as their interleave spans */
    const int64_t chans = cc_max(1, cc_min(c->cfg->dram_channels, cc_ceil_div((int64_t)col_sticks * c->t.stick,
                                                                               c->cfg->dram_interleave_bytes)));
    const double all_bytes = rate > 0 ? bytes * (double)cores / rate : 0, shared = floor ? 0 : rk_stage_shared(k, cores, rt, R);
    double cost[2];
    for (int t = 0; t < 1 + (tree != NULL); t++) {
        const double cl = t ? col + rk_col_tree_cycles(k, cores) : col; /* core 0's loads, then down the tree */
        const double core = cl + (in > stream_in ? in : stream_in) + lat + (double)(nch - 1) * step + sfp_last +
                            (out > stream_out ? out : stream_out);
        const double dram = all_bytes + col_sticks * (double)(t ? 1 : cores) * rk_dram_stick(c) / (double)chans + shared + lat;
        cost[t] = core > dram ? core : dram;
    }
    if (tree)
        *tree = cost[1];
    return cost[0];
}

/* ---- Per-column values passed down a tree of cores ----
 *
 * Every core of a row kernel reads the same per-column values (a layer
 * norm's bias, weight and shift: 36 sticks on BERT-base), and the DRAM
 * serves the cores' copies one after another: BERT-base's layer norms on
 * 32 cores got their first chunk's operands 2,100 to 3,800 cycles into the
 * kernel for 147 KB of copies of 4.6 KB.  Instead core 0 loads them and
 * the cores pass them on over the ring, each to the roots of the halves of
 * its range (a binary tree, largest half first: log2(cores) sends deep).
 * The per-column LX is laid out alike on every core (the first
 * allocations of rk_core_setup), so one ring.send moves all of it. */

/* Can the per-column values go down a tree: some to send, every core
 * with rows (each is a node of the tree), a ring. */
static int rk_col_tree_can(const rk_plan *k, int64_t cores)
{
    const be_ctx *c = k->c;
    int cols = 0;
    for (int i = 0; i < k->nl; i++)
        cols += k->loads[i].cls == BE_V_COL;
    return cols && cores >= 2 && k->rows >= cores && c->cfg->ring_bytes_per_cycle > 0;
}

/* Cycles from core 0's per-column loads landing to the last core's copy
 * arriving: each level of the tree one send (issue, bytes at the ring's
 * rate), and every hop of the ring once down the tree. */
static double rk_col_tree_cycles(const rk_plan *k, int64_t cores)
{
    const be_ctx *c = k->c;
    double sticks = 0, depth = 0;
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].cls == BE_V_COL)
            sticks += k->loads[i].scalar ? 1.0 : (double)k->G; /* a scalar's stick (rk_core_setup) */
    for (int64_t n = 1; n < cores; n *= 2)
        depth++;
    return depth * (c->t.dma_insn_cycles + sticks * (double)c->t.stick / c->cfg->ring_bytes_per_cycle) +
           (double)cores * c->cfg->ring_hop_cycles;
}

/* Whether the tree beats every core reading the values, on `cores`
 * cores, and what the kernel costs the better way.  The ring puts a bar
 * before the kernel, which costs nothing more when the kernel before
 * passes data over the ring (it has one before it already, its cores end
 * together after their exchange: BERT-base's output projection and FFN
 * down product before their layer norms); otherwise the time saved must
 * pay for the bar as a shared load's does (RK_SHARE_BAR). */
/* Does the kernel before pos end in a bar a column tree after it would
 * need anyway: a product whose grid broadcasts or splits K? (The plan's
 * key reads it as rk_col_tree_pick does.) */
static int rk_bar_paid(const be_ctx *c, int pos)
{
    const be_work *prev = pos > 0 ? &c->work[pos - 1] : NULL;
    return prev && c->p->kernels[c->p->order[pos - 1]].kind == IR_MATMUL && (prev->bcast || prev->gk > 1);
}

static int rk_col_tree_pick(const be_ctx *c, rk_plan *k, int64_t cores, double *cost)
{
    double tree;
    const int can = rk_col_tree_can(k, cores);
    *cost = rows_cost_as(c, k, cores, 0, can ? &tree : NULL);
    if (!can)
        return 0;
    const int bar_paid = rk_bar_paid(c, k->pos);
    if (tree >= *cost || (!bar_paid && *cost - tree <= RK_SHARE_BAR * rk_prev_est(k)))
        return 0;
    *cost = tree;
    return 1;
}

/* A floor under rows_cost on `cores` cores: the estimate without the
 * staged loads' extra sticks (rk_stage_parts) and the DRAM term of their
 * sticks every core reads alike (rk_stage_shared), each of which only
 * adds to a term the estimate takes the sum or the most of. */
static double rows_cost_floor(const be_ctx *c, rk_plan *k, int64_t cores)
{
    double tree;
    const int can = rk_col_tree_can(k, cores);
    const double e = rows_cost_as(c, k, cores, 1, can ? &tree : NULL);
    return can && tree < e ? tree : e;
}

static double rows_cost(const be_ctx *c, rk_plan *k, int64_t cores)
{
    double cost;
    rk_col_tree_pick(c, k, cores, &cost);
    return cost;
}

static void rk_col_tree(rk_plan *k, int64_t cores)
{
    double cost;
    k->col_tree = rk_col_tree_pick(k->c, k, cores, &cost);
}

/* A core's part should be worth a DMA's fixed cost (descriptor and DRAM
 * latency, a few hundred cycles): at least this many sticks, unless the
 * kernel is too small to give every core that much.  The floor bounds the
 * choices' estimate, which prices a core's DRAM reads at a fixed latency;
 * past it only the estimate with the DRAM's waits priced (the report's:
 * the first chunk's reads of every core queued on the channels they span)
 * may take more cores (rows_past_floor). */
#define ROWS_MIN_PART_STICKS 8

/* Lower estimates than this fraction of the best so far take more cores. */
#define ROWS_MORE_CORES 0.97

/* Does estimate e take more cores over the best so far: below
 * ROWS_MORE_CORES of it, or with `ties`, at most it (a NaN takes none:
 * a floor that is NaN rules its core count out unpriced). */
static int rows_takes(double e, double best_cost, int ties)
{
    return e < ROWS_MORE_CORES * best_cost || (ties && e <= best_cost);
}

/* Does any of k's loads go through a staged copy? */
static int rk_any_staged(const rk_plan *k)
{
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].staged)
            return 1;
    return 0;
}

/* Whether `cores` cores cannot be taken over the best estimate so far
 * (rows_takes, with `ties`), by rows_cost_floor: asked of a kernel with
 * staged loads only (for others the floor prices all the estimate does).
 * The staged loads' walks of core counts so ruled out were 4% of the
 * Llama-8B decode step's compile (its KV cache appends). */
static int rows_cannot_take(const be_ctx *c, rk_plan *k, int64_t cores, double best_cost, int ties)
{
    return rk_any_staged(k) && !rows_takes(rows_cost_floor(c, k, cores), best_cost, ties);
}

static double rows_cost_waits(be_ctx *c, rk_plan *k, int64_t cores)
{
    c->waits = 1;
    const double e = rows_cost(c, k, cores);
    c->waits = 0;
    return e;
}

/* More cores than the floor allows (cap + 1 up to `most`), when the
 * choices' best is the floor's count, where the estimate with the DRAM's
 * waits priced is lower than on `best`: a kernel of few sticks of much
 * SFP work a row gains from a row or two a core (serve_tiny's
 * decode_b1_c128: its softmax over 129 columns of 4 rows, 12 sticks, on
 * 1 core 851 cycles, on 4 704, mean of 7 refresh phases).
 * Not a kernel with per-column values or a gather: every core's copies
 * of those queue on the few channels they lie in, which that estimate
 * undercounts too (bert_handwritten_small's layer norms on 4 cores 1,170
 * cycles, on 16 1,427, estimated 951 and 843; embed_small's gather and
 * layer norm on 4 cores 1,313, on 14 1,582, with its real row numbers). */
static int64_t rows_past_floor(be_ctx *c, rk_plan *k, int64_t best, int64_t cap, int64_t most)
{
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].cls == BE_V_COL || k->loads[i].gather)
            return best;
    double best_cost = rows_cost_waits(c, k, best);
    for (int64_t n = cap + 1; n <= most; n++) {
        const double e = rows_cost_waits(c, k, n);
        if (rows_takes(e, best_cost, 0)) {
            best = n;
            best_cost = e;
        }
    }
    return best;
}

/* The core count with the lowest estimate (ties: fewer cores; with a
 * staged load of more sticks than one core's LX holds, more: its chunks
 * read short runs of sticks spread over the buffer, which one core's DMA
 * does not stream at the chip's DRAM rate the estimate assumes.  Measured
 * on the partial sums of x.sum(dim=0) over (8192, 1024), an estimate equal
 * on 1..32 cores: 359,164 cycles on one core, 169,814 on 32.  Smaller
 * staged kernels keep fewer cores: taking more there too makes
 * encoder_small 4% and llama_tiny 9% faster, a change of the traces'
 * cycles left for its own commit). */
static int rows_cores(be_ctx *c, rk_plan *k)
{
    const int staged = rk_any_staged(k) && (double)k->rows * k->G * c->t.stick > (double)c->cfg->lx_usable_bytes;
    const int64_t all = cc_min(c->cfg->cores, k->rows);
    const int64_t most = cc_min(all, cc_max(1, k->rows * k->G / ROWS_MIN_PART_STICKS));
    int64_t best = 1;
    double best_cost = rows_cost(c, k, 1);
    for (int64_t n = 2; n <= most; n++) {
        if (rows_cannot_take(c, k, n, best_cost, staged))
            continue;
        double e = rows_cost(c, k, n);
        if (rows_takes(e, best_cost, staged)) {
            best = n;
            best_cost = e;
        }
    }
    /* the floor held the choice back only if the estimate still fell there */
    return (int)(best == most && most < all ? rows_past_floor(c, k, best, most, all) : best);
}

/* The flat index of buffer element read by staged load x at row `row`
 * of the row space and column col, or -1 past the buffer (a load guarded
 * by a where, like cat's, may index past its buffer where the other
 * operand is chosen; any value will do there). */
static int64_t rk_stage_flat(const rk_plan *k, const ir_expr *x, int64_t nel, int64_t row, int64_t col,
                             int64_t *val)
{
    for (int v = k->rsp.nv - 1; v >= 0; v--) {
        val[k->rsp.var[v]] = row % k->rsp.ext[v];
        row /= k->rsp.ext[v];
    }
    val[k->colvar] = col;
    int64_t flat = be_index_at(&x->idx, k->nvars, val);
    return flat < 0 || flat >= nel ? -1 : flat;
}

/* How many of the next rows (at most `most`) be_row_next would take to
 * without moving index idx (the innermost row variable counted up, of
 * coefficient 0): val moved past them. */
static int64_t rk_rows_same(const rk_plan *k, int64_t *val, const ir_index *idx, int64_t most)
{
    const int nv = k->rsp.nv, var = nv ? k->rsp.var[nv - 1] : 0;
    if (!nv || (var < k->nvars && idx->coef[var]))
        return 0;
    const int64_t q = cc_min(most, k->rsp.ext[nv - 1] - 1 - val[var]);
    val[var] += q;
    return q;
}

static int64_t rk_numel(const be_ctx *c, int buf)
{
    return gr_ttype_numel(&c->p->bufs[buf].type);
}

/* The first staged load that reads the buffer staged load i reads: a
 * chunk stages a buffer's sticks once for all its staged loads (rotary
 * embedding's x, x shifted a stick on and a stick back for rotate_half's
 * cat read three spans of four that overlap). */
static int rk_stage_leader(const rk_plan *k, int i)
{
    const int buf = k->c->p->A.e[k->loads[i].e].buf;
    for (int j = 0; j < i; j++)
        if (k->loads[j].staged && k->c->p->A.e[k->loads[j].e].buf == buf)
            return j;
    return i;
}

/* Rows in a block of a load's spans merged once (rk_merge_rows). */
#define RK_SPAN_BLOCK 16

/* The spans gathered in s->lo/hi over groups [gmin, gmax] appended to
 * the list *e (*n entries, room for *cap), and lo/hi reset. */
static void rk_spans_put(be_rowspans *s, const be_layout *B, int64_t gmin, int64_t gmax, be_gspan **e, int64_t *n,
                         int64_t *cap, isa_buf *mem)
{
    /* in locals: the entries' stores may alias *n, *e, lo and hi for all
     * the compiler knows, which it read again per group (131,072 rows of
     * the Llama-8B prefill layer's rotary embedding) */
    int64_t *lo = s->lo, *hi = s->hi, m = *n;
    const int64_t empty = B->rows;
    be_gspan *v = *e;
    for (int64_t g = gmin; g <= gmax; g++) {
        const int64_t l = lo[g], h = hi[g];
        if (l > h)
            continue;
        if (m == *cap) {
            *cap = *cap ? 2 * *cap : 256;
            v = *e = isa_buf_reserve(mem, (size_t)*cap * sizeof *v, (size_t)m * sizeof *v);
        }
        v[m++] = (be_gspan){(int32_t)g, (int32_t)l, (int32_t)h};
        lo[g] = empty;
        hi[g] = -1;
    }
    *n = m;
}

/* Row `row`'s spans gathered in s->lo/hi over groups [gmin, gmax] become
 * its entries of s, and lo/hi are reset for the next row. */
static void rk_spans_close(be_rowspans *s, const be_layout *B, int64_t row, int64_t gmin, int64_t gmax)
{
    s->at[row] = s->n;
    rk_spans_put(s, B, gmin, gmax, &s->e, &s->n, &s->cap, &s->eb);
    s->len[row] = (int32_t)(s->n - s->at[row]);
    s->walked++;
}

/* Row `row` of s (its first element at flat) as the row walked last (its
 * spans one run inside the buffer, s->base) moved, when its start is that
 * row's moved along one coordinate (the moves from row to row add up
 * along it) that is not the run's own and stays in its range: then every
 * element is its own moved so, and the run's sticks move by layout rows,
 * or, along the stick dim, the group of its one entry (be_wseg_move's
 * argument); 0 when not so (walk it).  The Llama-8B prefill layer's
 * rotary embedding reads a token a row: 98,304 rows walked. */
static int rk_span_moved(be_rowspans *s, const be_layout *B, be_walk *w, int64_t row, int64_t flat)
{
    if (s->base < 0)
        return 0;
    be_rowmove *m = &s->mv;
    if (s->last == row - 1) /* the move from the row before, added up */
        be_rowmove_add(m, w, flat - s->flat);
    else
        m->ax = be_walk_axis(w, flat - s->bflat, &m->by);
    const int d = m->ax, n = s->len[s->base];
    const int64_t by = m->by;
    const be_gspan *e = s->e + s->at[s->base];
    if (d < 0 || d == s->bd1 || s->bco[d] + by < 0 || s->bco[d] + by >= w->shape[d] || (d == w->sd && n != 1))
        return 0;
    int64_t gmin = B->groups, gmax = -1;
    for (int q = 0; q < n; q++) {
        const int64_t g = d == w->sd ? (s->bco[d] + by) / w->lanes : e[q].g, dr = d == w->sd ? 0 : by * w->rs[d];
        s->lo[g] = e[q].lo + dr;
        s->hi[g] = e[q].hi + dr;
        gmin = cc_min(gmin, g);
        gmax = cc_max(gmax, g);
    }
    rk_spans_close(s, B, row, gmin, gmax);
    return 1;
}

/* Row `row` of the row space walked for staged load L (its spans kept in
 * L->spans): every column's element inside the buffer, in closed form per
 * run without a carry (be_walk_run).  The walk hangs on the row only
 * through its first element's flat index (the columns' step, their count,
 * the buffer and its layout are the load's): a row starting where the row
 * before it did takes that row's spans, not walked again (the Llama-8B
 * decode step's KV cache appends read the new token's key and value for
 * each of a head's 513 rows alike: 8,208 rows walked, 16 different). */
static void rk_span_row(const rk_plan *k, const rk_load *L, be_rowspans *s, be_walk *w, int64_t row)
{
    const be_ctx *c = k->c;
    const ir_expr *x = &c->p->A.e[L->e];
    const be_layout *B = &c->lay[x->buf];
    const int nv = k->rsp.nv;
    /* the buffer's elements, asked only when walking (the Llama-8B prefill
     * layer's 98,304 rows, nearly all moved, asked it: 0.2% of its compile) */
    int64_t flat, nel = -1;
    if (row > 0 && s->last == row - 1 && nv > 0 && row % k->rsp.ext[nv - 1]) {
        flat = s->flat + x->idx.coef[k->rsp.var[nv - 1]]; /* the innermost row variable one on (no carry) */
    } else {
        int64_t val[IR_MAX_VARS] = {0};
        rk_stage_flat(k, x, nel = rk_numel(c, x->buf), row, 0, val);
        flat = be_index_at(&x->idx, k->nvars, val);
    }
    if (row > 0 && s->last == row - 1 && s->flat == flat) {
        s->at[row] = s->at[row - 1];
        s->len[row] = s->len[row - 1];
        s->walked++;
    } else if (!rk_span_moved(s, B, w, row, flat)) {
        nel = nel < 0 ? rk_numel(c, x->buf) : nel;
        const int run = be_walk_run(w, B, flat, x->idx.coef[k->colvar], k->cols, nel, s->lo, s->hi);
        rk_spans_close(s, B, row, w->gmin, w->gmax);
        s->base = run ? row : -1;
        s->bflat = flat;
        memcpy(s->bco, w->co, sizeof s->bco); /* (one run: the walk stays at flat) */
        s->bd1 = w->d1;
        be_rowmove_walked(&s->mv);
    }
    s->last = row;
    s->flat = flat;
}

/* The rows after `row` (walked last, for load L) up to `end` and not
 * walked yet that start where it does (the innermost row variable counted
 * up, of coefficient 0, without a carry): its spans, as rk_span_row would
 * take them, without a call each (the Llama-8B decode step's KV cache
 * appends: 8,208 rows, nearly all so).  Returns the last row taken. */
static int64_t rk_span_same(const rk_plan *k, const rk_load *L, be_rowspans *s, int64_t row, int64_t end)
{
    const int nv = k->rsp.nv;
    if (!nv || k->c->p->A.e[L->e].idx.coef[k->rsp.var[nv - 1]])
        return row;
    const int64_t ext = k->rsp.ext[nv - 1], at = s->at[row];
    const int32_t len = s->len[row];
    int64_t r = row + 1;
    for (; r < end && r % ext && s->at[r] < 0; r++) {
        s->at[r] = at;
        s->len[r] = len;
    }
    s->walked += r - 1 - row;
    s->last = r - 1;
    return r - 1;
}

/* Empty spans of `rows` rows (none walked) over B's groups, in arena's
 * memory.  (at, lo and bat first: 8-byte entries, then the 4-byte ones.) */
static void rk_rowspans_init(be_rowspans *s, int64_t rows, const be_layout *B, isa_arena *arena)
{
    const size_t blocks = (size_t)(rows / RK_SPAN_BLOCK), nr = (size_t)rows + 1, ng = 2 * (size_t)B->groups + 1;
    const size_t bytes = (nr + ng + blocks + 1) * sizeof(int64_t) + (nr + 2 * (blocks + 1)) * sizeof(int32_t);
    s->rows.arena = s->eb.arena = s->beb.arena = arena;
    int64_t *m = memset(isa_buf_reserve(&s->rows, bytes, 0), 0, bytes);
    s->at = m;
    s->lo = m + nr;
    s->hi = s->lo + B->groups;
    s->bat = s->lo + ng;
    s->len = (int32_t *)(s->bat + blocks + 1);
    s->blen = s->len + nr;
    s->bend = s->blen + blocks + 1;
    memset(s->at, -1, (size_t)rows * sizeof *s->at);
    be_span_init(B, s->lo, s->hi);
    memset(s->bat, -1, blocks * sizeof *s->bat);
    /* room for an entry a row, untouched till used: the Llama-8B prefill
     * layer's rotary embedding grew its four lists of 32,768 rows by
     * doubling from 256, copying each time */
    s->cap = cc_max(256, rows);
    s->e = isa_buf_reserve(&s->eb, (size_t)s->cap * sizeof *s->e, 0);
    s->last = -1;
    s->base = -1;
    s->walked = 0;
}

/* A staged load's row spans, kept for the whole compile: each pass
 * (workdiv, lxplan twice, codegen) makes a kernel's plan again with the
 * same loads, and a later plan takes the rows an earlier one walked.
 * Found by everything the walk depends on: the view and the row space,
 * the buffer's type and its layout but for where it lies in DRAM (the
 * spans are layout rows), not by the kernel's or the buffer's number, so
 * that cc_compile's attempts (products fused and apart: the same kernels
 * at other positions, their buffers at other numbers and offsets) share
 * them: the Llama-8B decode step's second attempt walked and merged its
 * KV cache appends' rows again, 1.7 of its 4.3 ms of workdiv. */
typedef struct {
    int colvar, nvars;
    int64_t cols, rows;
    ir_index idx;
    be_rowspace rsp;
    gr_ttype type;
    be_layout lay; /* off 0 */
    be_rowspans s;
} rk_spankey;

/* A chunk's staged sticks as rk_stage_need found them: the need of the
 * staged loads whose spans are `spans` (in the plan's order; lead: the
 * first of them reading the same buffer, whose staging they share: loads
 * alike of two buffers have the same spans), chunks of R rows of the
 * part [r0, r0 + rt). */
typedef struct {
    const be_rowspans *spans[RK_NEED_LOADS];
    signed char lead[RK_NEED_LOADS];
    int n;
    int64_t r0, rt, R, need;
    int64_t worst, first; /* rk_stage_parts's memo: rt parts, chunks of R (r0 0), need their sum */
} rk_needkey;

/* A memo of rk_needkeys: the keys in the order added (e, n of them), and
 * their slots, open addressing by rk_need_hash (1 + the key's index, 0
 * empty; cap a power of two, 0: none yet).  Growing sets and fills 4
 * bytes a slot, not a 112-byte key's (the Llama-8B decode step's 1,339
 * keys: 630,000 bytes set to empty). */
typedef struct {
    rk_needkey *e;  /* buf's memory */
    uint32_t *slot; /* slots' memory */
    size_t n, cap;
    isa_buf buf, slots;
} rk_needmemo;

/* The row spans of the staged loads that read one buffer, merged row by
 * row (each row's sticks per group, lowest to highest over the loads):
 * rotary embedding's x and its two shifted halves read three spans of a
 * row where one covers them, and a chunk's sticks merged the three per
 * row for every chunking asked.  Found by the loads' own spans. */
typedef struct {
    const be_rowspans *m[RK_NEED_LOADS];
    int n;
    be_rowspans s;
} rk_combo;

/* rk_rows_repeat's answer by what it reads: the row space's extents,
 * the view's row step of each of its variables, the part's rows and
 * the cores.  Each plan of a row kernel on n cores asks it of each
 * load for every core count it prices (the Llama-8B prefill layer
 * 1,361 times over rows counted up one by one: 3% of its compile). */
typedef struct {
    int nv, same; /* same: the answer, -1 not yet */
    int64_t rt, cores, ext[IR_MAX_VARS], step[IR_MAX_VARS];
} rk_repeatkey;

/* A row kernel's plan as be_rows_plan left it, by its inputs' key
 * (rk_plan_key): the work it set and its notes. */
struct rk_planned {
    int64_t rows, cols;
    int cores, cleared; /* cleared: a split taken from the producer was dropped (aligned_to 0) */
    double prev;        /* the kernel before's estimate (rk_prev_est), 0 when the plan did not ask it */
    int nrestick;
    char tiles[sizeof((be_kinfo *)0)->tiles], restick[sizeof((be_kinfo *)0)->restick];
};

struct be_spancache {
    rk_repeatkey *rep;
    int nrep, repcap;
    rk_spankey **v;
    int n, cap;
    rk_needmemo need, sticks, parts; /* rk_stage_need's, rk_stage_sticks's, rk_stage_parts's */
    rk_combo **combo;
    int ncombo, combocap;
    struct be_blockmemo *blocks; /* be_mmmemo.c's */
    be_planmemo plans;           /* be_rows_plan's rk_planned, by content (rk_plan_key) */
    /* where its large tables grow: on huge pages, not first touched 4 KB
     * by 4 KB (the Llama-8B prefill layer's, some 2,000 page faults) */
    isa_arena *arena;
};

static int rk_same_walk(const rk_spankey *a, const rk_spankey *b)
{
    if (a->colvar != b->colvar || a->nvars != b->nvars || a->cols != b->cols || a->rows != b->rows ||
        a->idx.offset != b->idx.offset || a->rsp.nv != b->rsp.nv || a->type.dtype != b->type.dtype ||
        a->type.rank != b->type.rank)
        return 0;
    for (int d = 0; d < a->type.rank; d++)
        if (a->type.shape[d] != b->type.shape[d])
            return 0;
    for (int v = 0; v < a->nvars; v++)
        if (a->idx.coef[v] != b->idx.coef[v])
            return 0;
    for (int v = 0; v < a->rsp.nv; v++)
        if (a->rsp.var[v] != b->rsp.var[v] || a->rsp.ext[v] != b->rsp.ext[v])
            return 0;
    return !memcmp(&a->lay, &b->lay, sizeof a->lay);
}

/* The compile's span cache: the one cc_compile's attempts share, if
 * they do (ir_prog.spans), else the be_ctx's own; made if new. */
static struct be_spancache *rk_cache(be_ctx *c)
{
    if (!c->spans && c->p->spans)
        c->spans = *c->p->spans;
    if (!c->spans) {
        c->spans = ir_xalloc(sizeof *c->spans);
        c->spans->arena = isa_arena_keep(c->prog->arena); /* as the rolling's (be_reroll.c rr_state) */
        c->spans->need.buf.arena = c->spans->sticks.buf.arena = c->spans->arena;
        c->spans->need.slots.arena = c->spans->sticks.slots.arena = c->spans->arena;
        c->spans->parts.buf.arena = c->spans->parts.slots.arena = c->spans->arena;
        if (c->p->spans)
            *c->p->spans = c->spans;
    }
    return c->spans;
}

/* Load L's row spans from the compile's cache, made (empty) if new. */
static be_rowspans *rk_spans_of(const rk_plan *k, rk_load *L)
{
    be_ctx *c = k->c;
    const ir_expr *x = &c->p->A.e[L->e];
    rk_spankey key = {k->colvar, k->nvars, k->cols, k->rows, x->idx, k->rsp, c->p->bufs[x->buf].type, c->lay[x->buf], {0}};
    key.lay.off = 0;
    struct be_spancache *sc = rk_cache(c);
    for (int i = 0; i < sc->n; i++)
        if (rk_same_walk(sc->v[i], &key))
            return &sc->v[i]->s;
    sc->v = ir_xgrow(sc->v, &sc->cap, sc->n + 1, sizeof *sc->v);
    rk_spankey *e = sc->v[sc->n++] = ir_xalloc(sizeof *e);
    *e = key;
    rk_rowspans_init(&e->s, k->rows, &e->lay, sc->arena);
    return &e->s;
}

static void rk_rowspans_free(be_rowspans *s)
{
    isa_buf_free(&s->rows);
    isa_buf_free(&s->eb);
    isa_buf_free(&s->beb);
}

void be_spancache_free(struct be_spancache *sc)
{
    for (int i = 0; sc && i < sc->n; i++) {
        rk_rowspans_free(&sc->v[i]->s);
        free(sc->v[i]);
    }
    for (int i = 0; sc && i < sc->ncombo; i++) {
        rk_rowspans_free(&sc->combo[i]->s);
        free(sc->combo[i]);
    }
    if (sc) {
        free(sc->rep);
        free(sc->v);
        isa_buf_free(&sc->need.buf);
        isa_buf_free(&sc->sticks.buf);
        isa_buf_free(&sc->need.slots);
        isa_buf_free(&sc->sticks.slots);
        isa_buf_free(&sc->parts.buf);
        isa_buf_free(&sc->parts.slots);
        free(sc->combo);
        be_planmemo_free(&sc->plans);
        be_blockmemo_free(sc->blocks);
        isa_arena_free(sc->arena);
    }
    free(sc);
}

struct be_blockmemo **be_spancache_blocks(be_ctx *c)
{
    return &rk_cache(c)->blocks;
}

isa_arena *be_spancache_arena(be_ctx *c)
{
    return rk_cache(c)->arena;
}

isa_arena *be_spancache_shared_arena(const be_ctx *c)
{
    return c->p->spans && *c->p->spans ? (*c->p->spans)->arena : NULL;
}

void be_rows_spans_free(be_ctx *c)
{
    if (!c->p->spans) /* a shared one is cc_compile's to free */
        be_spancache_free(c->spans);
    c->spans = NULL;
}

/* The memo's answer of rk_rows_repeat(k, v, rt, cores) (-1: not known
 * yet, set it), in the compile's span cache. */
static int *rk_repeat_memo(const rk_plan *k, const be_view *v, int64_t rt, int64_t cores)
{
    be_ctx *c = k->c;
    struct be_spancache *sc = rk_cache(c);
    rk_repeatkey q = {.nv = k->rsp.nv, .same = -1, .rt = rt, .cores = cores};
    for (int i = 0; i < k->rsp.nv; i++) {
        q.ext[i] = k->rsp.ext[i];
        q.step[i] = v->rs[k->rsp.var[i]];
    }
    for (int i = 0; i < sc->nrep; i++)
        if (sc->rep[i].nv == q.nv && sc->rep[i].rt == rt && sc->rep[i].cores == cores &&
            !memcmp(sc->rep[i].ext, q.ext, (size_t)q.nv * sizeof *q.ext) &&
            !memcmp(sc->rep[i].step, q.step, (size_t)q.nv * sizeof *q.step))
            return &sc->rep[i].same;
    sc->rep = ir_xgrow(sc->rep, &sc->repcap, sc->nrep + 1, sizeof *sc->rep);
    sc->rep[sc->nrep] = q;
    return &sc->rep[sc->nrep++].same;
}

/* The merged spans of the loads whose spans are m[0..n) (n >= 2), from
 * the compile's cache, made (no row merged yet) if new. */
static rk_combo *rk_combo_of(const rk_plan *k, const be_layout *B, const be_rowspans *const *m, int n)
{
    struct be_spancache *sc = k->c->spans;
    for (int i = 0; i < sc->ncombo; i++)
        if (sc->combo[i]->n == n && !memcmp(sc->combo[i]->m, m, (size_t)n * sizeof *m))
            return sc->combo[i];
    sc->combo = ir_xgrow(sc->combo, &sc->combocap, sc->ncombo + 1, sizeof *sc->combo);
    rk_combo *q = sc->combo[sc->ncombo++] = ir_xalloc(sizeof *q);
    memcpy(q->m, m, (size_t)n * sizeof *m);
    q->n = n;
    rk_rowspans_init(&q->s, k->rows, B, sc->arena);
    return q;
}

/* Merge row r of q's loads (each walked already) into q's spans. */
static void rk_combo_row(rk_combo *q, const be_layout *B, int64_t r)
{
    be_rowspans *s = &q->s;
    int64_t gmin = B->groups, gmax = -1;
    for (int i = 0; i < q->n; i++)
        for (const be_gspan *e = q->m[i]->e + q->m[i]->at[r], *end = e + q->m[i]->len[r]; e < end; e++) {
            s->lo[e->g] = cc_min(s->lo[e->g], e->lo);
            s->hi[e->g] = cc_max(s->hi[e->g], e->hi);
            gmin = cc_min(gmin, e->g);
            gmax = cc_max(gmax, e->g);
        }
    rk_spans_close(s, B, r, gmin, gmax);
}

/* Spans e[0..n) merged into lo, hi.  The spans are taken into locals
 * first: lo and hi may alias them for all the compiler knows, which
 * read them again per span. */
static void rk_merge_spans(const be_gspan *e, int32_t n, int64_t *lo, int64_t *hi)
{
    for (const be_gspan *end = e + n; e < end; e++) {
        const int32_t g = e->g, l = e->lo, h = e->hi;
        lo[g] = cc_min(lo[g], l);
        hi[g] = cc_max(hi[g], h);
    }
}

/* Does row r of s (walked) take the spans of the row before it, from
 * `from` on (rk_span_row)?  Merged again they would change nothing. */
static int rk_row_again(const be_rowspans *s, int64_t from, int64_t r)
{
    return r > from && s->at[r] == s->at[r - 1] && s->len[r] == s->len[r - 1];
}

/* Block b's rows (every one walked) merged into its entries of s's
 * blocks, through s->lo/hi as a row's walk goes. */
static void rk_block_spans(be_rowspans *s, const be_layout *B, int64_t b)
{
    int64_t gmin = B->groups, gmax = -1;
    for (int64_t r = b * RK_SPAN_BLOCK; r < (b + 1) * RK_SPAN_BLOCK; r++)
        for (const be_gspan *e = s->e + s->at[r], *end = rk_row_again(s, b * RK_SPAN_BLOCK, r) ? e : e + s->len[r];
             e < end; e++) {
            s->lo[e->g] = cc_min(s->lo[e->g], e->lo);
            s->hi[e->g] = cc_max(s->hi[e->g], e->hi);
            gmin = cc_min(gmin, e->g);
            gmax = cc_max(gmax, e->g);
        }
    s->bat[b] = s->bn;
    rk_spans_put(s, B, gmin, gmax, &s->be, &s->bn, &s->bcap, &s->beb);
    s->blen[b] = (int32_t)(s->bn - s->bat[b]);
}

/* Do rows x and y (y walked) take the same spans (rk_span_row)? */
static int rk_row_same(const be_rowspans *s, int64_t x, int64_t y)
{
    return s->at[x] == s->at[y] && s->len[x] == s->len[y];
}

/* Where the run of rows from row r (walked) that take its spans ends, as
 * far as rows are walked (rows: s's): up to the next block's first row
 * row by row, from there as that block's run (bend, looked for once and
 * grown as more rows are walked).  The Llama-8B decode step's KV cache
 * appends read a head's 513 rows (the cache's, then the new token's) in
 * runs of the same sticks, chunk after chunk of every chunking. */
static int64_t rk_run_end(be_rowspans *s, int64_t r, int64_t rows)
{
    int64_t e = r + 1;
    while (e < rows && e % RK_SPAN_BLOCK && rk_row_same(s, e, r))
        e++;
    if (e == rows || e % RK_SPAN_BLOCK || !rk_row_same(s, e, r))
        return e;
    const int64_t b = e / RK_SPAN_BLOCK;
    int64_t x = s->bend[b] > e ? s->bend[b] : e + 1;
    if (x < rows && rk_row_same(s, x, e)) {
        while (x < rows && rk_row_same(s, x, e))
            x++;
        for (int64_t c = b; c * RK_SPAN_BLOCK < x; c++)
            s->bend[c] = (int32_t)x;
    }
    return s->bend[b] = (int32_t)x;
}

/* Rows [r0, r0 + n) of s (walked; rows: s's) merged into lo, hi: the run
 * of rows from r0 taking its spans, when it reaches the end or a block's
 * length, as one row, and so the run after it; then each whole block of RK_SPAN_BLOCK rows inside
 * by its rows' spans merged once for the compile (rk_block_spans), the
 * rest row by row.  The chunkings the plans price merge the same rows
 * again and again (the Llama-8B decode step's KV cache appends: 1,365
 * merges, 5% of its compile, row by row), and a block's rows mostly read
 * the same groups: its merge is a row's size. */
static void rk_merge_rows(be_rowspans *s, const be_layout *B, int64_t rows, int64_t r0, int64_t n, int64_t *lo,
                          int64_t *hi)
{
    int64_t r = r0;
    for (int64_t e; r < r0 + n && ((e = rk_run_end(s, r, rows)) - r >= RK_SPAN_BLOCK || e >= r0 + n); r = e)
        rk_merge_spans(s->e + s->at[r], s->len[r], lo, hi);
    while (r < r0 + n) {
        const int64_t b = r / RK_SPAN_BLOCK;
        if (r % RK_SPAN_BLOCK || r + RK_SPAN_BLOCK > r0 + n) {
            if (!rk_row_again(s, r0, r))
                rk_merge_spans(s->e + s->at[r], s->len[r], lo, hi);
            r++;
            continue;
        }
        if (s->bat[b] < 0)
            rk_block_spans(s, B, b);
        if (s->blen[b]) /* (a block without spans may have none to point into: s->be NULL) */
            rk_merge_spans(s->be + s->bat[b], s->blen[b], lo, hi);
        r += RK_SPAN_BLOCK;
    }
}

/* The staged loads reading staged load i's buffer from load i on: their
 * spans into m and their loads into at (the first RK_NEED_LOADS of them);
 * returns how many there are. */
static int rk_stage_group(const rk_plan *k, int i, be_rowspans **m, int *at)
{
    const int buf = k->c->p->A.e[k->loads[i].e].buf;
    int nm = 0;
    for (int j = i; j < k->nl && nm <= RK_NEED_LOADS; j++) {
        rk_load *L = &k->loads[j];
        if (!L->staged || k->c->p->A.e[L->e].buf != buf)
            continue;
        if (nm < RK_NEED_LOADS) {
            m[nm] = L->spans ? L->spans : (L->spans = rk_spans_of(k, L));
            at[nm] = j;
        }
        nm++;
    }
    return nm;
}

/* The sticks of its buffer's device layout that the staged loads of the
 * buffer staged load i reads read for rows [r0, r0 + n): per stick group
 * g of the buffer, the layout rows lo[g]..hi[g] (lo > hi: none).  Returns
 * the sticks in all; a chunk that reads no element inside the buffer gets
 * the first stick. */
static int64_t rk_stage_span(const rk_plan *k, int i, int64_t r0, int64_t n, int64_t *lo, int64_t *hi)
{
    const int buf = k->c->p->A.e[k->loads[i].e].buf;
    const be_layout *B = &k->c->lay[buf];
    be_span_init(B, lo, hi);
    be_walk w;
    int walking = 0; /* w made: most chunks' rows were walked before (be_walk_init was 0.8% of a decode step's compile) */
    be_rowspans *m[RK_NEED_LOADS];
    int at[RK_NEED_LOADS];
    const int nm = rk_stage_group(k, i, m, at);
    if (nm > RK_NEED_LOADS) /* too many to merge: each load's spans in turn */
        for (int j = i; j < k->nl; j++) {
            rk_load *L = &k->loads[j];
            if (!L->staged || k->c->p->A.e[L->e].buf != buf)
                continue;
            be_rowspans *s = L->spans ? L->spans : (L->spans = rk_spans_of(k, L));
            for (int64_t r = r0; r < r0 + n && s->walked < k->rows; r++)
                if (s->at[r] < 0) {
                    if (!walking)
                        be_walk_init(&w, k->c, buf);
                    walking = 1;
                    rk_span_row(k, L, s, &w, r);
                }
            rk_merge_rows(s, B, k->rows, r0, n, lo, hi);
        }
    else {
        rk_combo *q = nm >= 2 ? rk_combo_of(k, B, (const be_rowspans *const *)m, nm) : NULL;
        be_rowspans *s = q ? &q->s : m[0];
        /* (every row walked, as soon as the chunkings priced have: none to look for) */
        for (int64_t r = r0; r < r0 + n && s->walked < k->rows; r++) {
            if (s->at[r] >= 0)
                continue;
            for (int j = 0; j < nm; j++)
                if (m[j]->at[r] < 0) {
                    if (!walking)
                        be_walk_init(&w, k->c, buf);
                    walking = 1;
                    rk_span_row(k, &k->loads[at[j]], m[j], &w, r);
                }
            if (q)
                rk_combo_row(q, B, r);
            else
                r = rk_span_same(k, &k->loads[at[0]], s, r, r0 + n);
        }
        rk_merge_rows(s, B, k->rows, r0, n, lo, hi);
    }
    return be_span_total(B, lo, hi);
}

static int64_t rk_stage_need(const rk_plan *k, int64_t r0, int64_t rt, int64_t R);

/* The most LX bytes the staged loads' sticks take in one chunk, over
 * the chunks of R rows of the part [r0, r0 + rt), walked.  A part of
 * several chunks asks each of its own (rk_stage_need, remembered): the
 * chunk-size search asks chunkings of one part that share most of their
 * chunks (the Llama-8B prefill layer's rotary embedding: 7,115 chunks
 * in its chunkings, 2,903 different). */
static int64_t rk_stage_walk(const rk_plan *k, int64_t r0, int64_t rt, int64_t R)
{
    if (rt < 1)
        return 0;
    if (R < rt) {
        int64_t most = 0;
        for (int64_t r = r0; r < r0 + rt; r += R)
            most = cc_max(most, rk_stage_need(k, r, cc_min(R, r0 + rt - r), cc_min(R, r0 + rt - r)));
        return most;
    }
    int64_t sum = 0;
    for (int i = 0; i < k->nl; i++) {
        if (!k->loads[i].staged || rk_stage_leader(k, i) != i)
            continue;
        const be_layout *B = &k->c->lay[k->c->p->A.e[k->loads[i].e].buf];
        int64_t small[2 * RK_SPAN_STACK], *lo = rk_span_lohi(B, small);
        sum += rk_stage_span(k, i, r0, rt, lo, lo + B->groups);
        rk_span_lohi_free(lo, small);
    }
    return sum * k->c->t.stick;
}

static size_t rk_need_hash(const rk_needkey *q)
{
    uint64_t h = (uint64_t)q->r0 * 0x9e3779b97f4a7c15u ^ (uint64_t)q->rt * 0xc2b2ae3d27d4eb4fu ^ (uint64_t)q->R;
    for (int i = 0; i < q->n; i++)
        h = (h ^ (uint64_t)(uintptr_t)q->spans[i]) * 0x100000001b3u;
    return (size_t)(h ^ h >> 29);
}

static int rk_need_same(const rk_needkey *a, const rk_needkey *b)
{
    return a->n == b->n && a->r0 == b->r0 && a->rt == b->rt && a->R == b->R &&
           !memcmp(a->spans, b->spans, (size_t)a->n * sizeof *a->spans) && !memcmp(a->lead, b->lead, (size_t)a->n);
}

/* The memo's slot for q: where its key is, or the empty one where it goes. */
static uint32_t *rk_need_slot(const rk_needmemo *t, const rk_needkey *q)
{
    for (size_t h = rk_need_hash(q);; h++) {
        uint32_t *s = &t->slot[h & (t->cap - 1)];
        if (!*s || rk_need_same(&t->e[*s - 1], q))
            return s;
    }
}

/* q's answer in memo t, or NULL. */
static const rk_needkey *rk_need_find(const rk_needmemo *t, const rk_needkey *q)
{
    const uint32_t *s = t->cap ? rk_need_slot(t, q) : NULL;
    return s && *s ? &t->e[*s - 1] : NULL;
}

/* q (answered) into memo t, its slots grown to stay at most half full. */
static void rk_need_add(rk_needmemo *t, const rk_needkey *q)
{
    if (2 * (t->n + 1) > t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->slot = memset(isa_buf_reserve(&t->slots, t->cap * sizeof *t->slot, 0), 0, t->cap * sizeof *t->slot);
        for (size_t i = 0; i < t->n; i++)
            *rk_need_slot(t, &t->e[i]) = (uint32_t)(i + 1);
    }
    /* (first room for 1,024 keys, untouched till used: growing copies) */
    t->e = isa_buf_reserve(&t->buf, (t->n < 1024 ? 1024 : t->n + 1) * sizeof *t->e, t->n * sizeof *t->e);
    *rk_need_slot(t, q) = (uint32_t)(t->n + 1);
    t->e[t->n++] = *q;
}

/* rk_stage_span's count of sticks alone (m, nm: rk_stage_group's of
 * load i, made once for every part priced), remembered for the compile
 * by the loads' spans and the rows: a row kernel's plan prices every core
 * count's parts (rk_stage_parts), and workdiv plans a kernel again and
 * again (both rounds, the kernel ahead's plans, the alignments): the
 * Llama-8B decode step's KV cache appends asked the same parts some
 * thirty times, a third of its workdiv. */
static int64_t rk_stage_sticks(const rk_plan *k, int i, be_rowspans *const *m, int nm, int64_t r0, int64_t n)
{
    const be_layout *B = &k->c->lay[k->c->p->A.e[k->loads[i].e].buf];
    rk_needkey q = {.n = nm, .r0 = r0, .rt = n};
    const rk_needkey *e = NULL;
    if (nm <= RK_NEED_LOADS) {
        memcpy(q.spans, m, (size_t)nm * sizeof *m);
        e = rk_need_find(&k->c->spans->sticks, &q);
    }
    if (e)
        return e->need;
    int64_t small[2 * RK_SPAN_STACK], *lo = rk_span_lohi(B, small);
    q.need = rk_stage_span(k, i, r0, n, lo, lo + B->groups);
    rk_span_lohi_free(lo, small);
    if (nm <= RK_NEED_LOADS)
        rk_need_add(&k->c->spans->sticks, &q);
    return q.need;
}

/* The staged sticks of load i (a leader) in the first chunk of R rows
 * of every core's part, summed; *worst the most of one core, *first
 * core 0's (all 0 when the parts are alike).  A part that starts inside
 * a run of the buffer's rows stages the hull of its rows' spans:
 * serve_tiny's prefill RoPE on 13 cores, parts of 20 rows of 4 heads of
 * 64 positions, the three parts that straddle two heads stage all 64
 * sticks of q where core 0 stages 20, 148 KB of DRAM traffic where 16
 * cores (parts at heads' quarters) move 132 KB: 2,440 cycles simulated
 * against 1,804.  Priced as core 0's, 13 cores were estimated below 16
 * and taken. */
static double rk_stage_parts(const rk_plan *k, int i, int64_t cores, int64_t R, double *worst, double *first)
{
    /* parts of whole runs of the innermost row variable, or runs of whole
     * parts, are alike: not walked (the walks cost the Llama-8B prefill
     * layer's compile 4%) */
    const int64_t inner = k->rsp.nv ? k->rsp.ext[k->rsp.nv - 1] : k->rows, rt = k->rows / cores;
    *worst = *first = 0;
    if (k->rows % cores == 0 && (rt % inner == 0 || inner % rt == 0))
        return 0;
    be_rowspans *m[RK_NEED_LOADS]; /* the loads staged with load i: the same for every part */
    int at[RK_NEED_LOADS];
    const int nm = rk_stage_group(k, i, m, at);
    /* remembered for the compile by the loads' spans (which know the rows
     * and the row space), the cores and R: each plan prices every core
     * count, each asking every part (the Llama-8B decode step's KV cache
     * appends: 4,418 parts asked of the sticks memo) */
    rk_needkey q = {.n = nm, .rt = cores, .R = R};
    const rk_needkey *e = NULL;
    if (nm <= RK_NEED_LOADS) {
        memcpy(q.spans, m, (size_t)nm * sizeof *m);
        e = rk_need_find(&k->c->spans->parts, &q);
    }
    if (!e) {
        for (int64_t p = 0; p < cores; p++) { /* (sticks are whole: their sum as doubles is exact) */
            int64_t r0, n;
            cc_split(k->rows, cores, p, &r0, &n);
            const int64_t s = n > 0 ? rk_stage_sticks(k, i, m, nm, r0, cc_min(R, n)) : 0;
            q.need += s;
            q.worst = cc_max(q.worst, s);
            q.first = p ? q.first : s;
        }
        if (nm <= RK_NEED_LOADS)
            rk_need_add(&k->c->spans->parts, &q);
        e = &q;
    }
    *worst = (double)e->worst;
    *first = (double)e->first;
    return (double)e->need;
}

/* rk_stage_walk, remembered for the compile: every pass plans a kernel
 * again and asks the same chunks (the Llama-8B prefill layer 1,928 times,
 * 729 of them different); the spans identify what the walk reads. */
static int64_t rk_stage_need(const rk_plan *k, int64_t r0, int64_t rt, int64_t R)
{
    rk_needkey q = {.r0 = r0, .rt = rt, .R = R};
    int buf[RK_NEED_LOADS];
    for (int i = 0; i < k->nl; i++) {
        rk_load *L = &k->loads[i];
        if (!L->staged)
            continue;
        if (q.n == RK_NEED_LOADS)
            return rk_stage_walk(k, r0, rt, R);
        buf[q.n] = k->c->p->A.e[L->e].buf;
        q.lead[q.n] = (signed char)q.n;
        for (int j = q.n - 1; j >= 0; j--)
            if (buf[j] == buf[q.n])
                q.lead[q.n] = (signed char)j;
        q.spans[q.n++] = L->spans ? L->spans : (L->spans = rk_spans_of(k, L));
    }
    struct be_spancache *sc = k->c->spans;
    if (!q.n || !sc)
        return rk_stage_walk(k, r0, rt, R);
    const rk_needkey *e = rk_need_find(&sc->need, &q);
    if (e)
        return e->need;
    /* walked before its slot is taken: a walk of several chunks
     * remembers each, which may move the table */
    q.need = rk_stage_walk(k, r0, rt, R);
    rk_need_add(&sc->need, &q);
    return q.need;
}

/* Whether chunks of R rows fit LX: fixed, the shared bytes and two slots
 * (each per_row bytes a row plus s staged bytes). */
static int rk_fits(const rk_plan *k, int64_t rt, int64_t per_row, int64_t fixed, int64_t R, int64_t s)
{
    return fixed + rk_shared_bytes(k, rt, R) + 2 * (per_row * R + s) <= be_lx_budget(k->c, k->pos);
}

/* A staged load's sticks per chunk need not grow with its rows: chunks
 * that straddle a row variable's wrap span more sticks, so a larger power
 * of two below `top` may fit where the bisection's rows did not
 * (mobilevit's fold on spyre-4core: 16 rows fit, 9 to 24 others not; the
 * bisection took 4, 46,825 cycles on one core, 16 rows 15,716).  The
 * largest that fits, else R. */
static int64_t rk_chunk_pow2(const rk_plan *k, int64_t r0, int64_t rt, int64_t per_row, int64_t fixed, int64_t R,
                             int64_t top, int64_t *stage)
{
    int64_t p = 1;
    while (p * 2 < top)
        p *= 2;
    for (; p > R; p /= 2) {
        const int64_t s = rk_stage_need(k, r0, rt, p);
        if (rk_fits(k, rt, per_row, fixed, p, s)) {
            *stage = s;
            return p;
        }
    }
    return R;
}

/* Rows per chunk for the part [r0, r0 + rt): as many as two slots (each
 * per_row bytes a row plus the chunk's staged sticks) and `fixed` allow,
 * at most a quarter of the part and 4096, but at least enough rows that a
 * chunk's run down each stick group spans three DRAM rows (16 rows at
 * least): shorter runs keep the DRAM switching rows.  Measured on softmax
 * 512 x 1024 over 6 cores: chunks of 22 rows 27,572 cycles, 48 rows
 * 22,638; 64 rows (21,729) also changed BERT-base's softmax and left its
 * later kernels 1% slower through the DRAM state they met.  0 when not
 * even one row fits; *stage is the staged bytes a slot needs. */
static int64_t rk_chunk_rows(const rk_plan *k, int64_t r0, int64_t rt, int64_t per_row, int64_t fixed,
                             int64_t *stage)
{
    const int64_t lx = be_lx_budget(k->c, k->pos), forced = k->c->work[k->pos].chunk;
    const int64_t least = cc_max(16, 3 * (int64_t)k->c->cfg->dram_row_bytes / k->c->t.stick);
    int64_t R = cc_min(cc_min(rt, cc_max(cc_ceil_div(rt, 4), cc_min(rt, least))), 4096);
    const int staged = rk_any_staged(k);
    *stage = 0;
    if (forced) { /* by work_div: that many rows, if they fit */
        R = cc_min(forced, rt);
        *stage = staged ? rk_stage_need(k, r0, rt, R) : 0;
        return rk_fits(k, rt, per_row, fixed, R, *stage) ? R : 0;
    }
    R = cc_min(R, (lx - fixed - rk_shared_bytes(k, rt, 1)) / (2 * per_row));
    const int64_t top = R + 1;
    int64_t bad = 0; /* the last row count that did not fit */
    while (R >= 1) {
        int64_t s = staged ? rk_stage_need(k, r0, rt, R) : 0;
        if (rk_fits(k, rt, per_row, fixed, R, s)) {
            *stage = s;
            /* the shrink below can overshoot: bisect up to `bad` a few times */
            for (int step = 0; step < 6 && bad > R + 1; step++) {
                int64_t mid = R + (bad - R) / 2, ms = rk_stage_need(k, r0, rt, mid);
                if (rk_fits(k, rt, per_row, fixed, mid, ms)) {
                    R = mid;
                    *stage = ms;
                } else {
                    bad = mid;
                }
            }
            return staged ? rk_chunk_pow2(k, r0, rt, per_row, fixed, R, top, stage) : R;
        }
        bad = R;
        /* shrink in proportion to the excess (at least by one row, and
         * not past one row: staged sticks shrink faster than the rows) */
        int64_t want = (int64_t)((double)R * (double)(lx - fixed - rk_shared_bytes(k, rt, R)) / (double)(2 * (per_row * R + s)));
        R = cc_min(R - 1, cc_max(want, 1));
    }
    if (staged) /* what one row needs, for the error */
        *stage = rk_stage_need(k, r0, rt, 1);
    return 0;
}

/* Does it store a result through a staged copy?  Its sticks run across
 * rows: every core's part must be a whole number of sticks' rows. */
static int rk_staged_out(const rk_plan *k)
{
    int staged = 0;
    for (int j = 0; j < k->nn; j++)
        staged |= k->nodes[j].dram && k->nodes[j].staged;
    return staged;
}

/* The rows a core's part must be a multiple of for its staged results'
 * sticks to be whole: a stick's lanes, or the whole run of the stick dim
 * when that is not a multiple of them (24 columns: a stick of 24). */
static int64_t rk_stage_rows(const be_ctx *c, const rk_plan *k)
{
    int64_t unit = 1;
    for (int j = 0; j < k->nn; j++) {
        if (!k->nodes[j].dram || !k->nodes[j].staged)
            continue;
        const int buf = c->p->nodes[k->nodes[j].node].out;
        const ir_buf *B = &c->p->bufs[buf];
        const int64_t len = B->type.rank ? B->type.shape[c->lay[buf].stick_dim] : 1;
        const int64_t g = len % c->t.lanes16 ? len : c->t.lanes16;
        unit = unit / ir_gcd(unit, g) * g;
    }
    return unit;
}

static int rk_split_ok(const be_ctx *c, const rk_plan *k, int cores)
{
    return !rk_staged_out(k) || cores <= 1 || k->rows % ((int64_t)cores * rk_stage_rows(c, k)) == 0;
}

/* The cost model's cycles for row kernel pos on `cores` cores (-1: error). */
static double rows_estimate(be_ctx *c, int pos, int cores)
{
    rk_plan k;
    double e = rk_build(c, pos, &k) ? -1 : rows_cost(c, &k, cores);
    rk_free(&k);
    return e;
}

double be_rows_estimate(be_ctx *c, int pos)
{
    return rows_estimate(c, pos, c->work[pos].cores);
}

/* Split row kernel pos like the earlier kernel that writes a tensor it
 * reads, so that the tensor can stay in LX between them, when its cost
 * model says the other core count costs less than the tensor's round
 * trip through DRAM (its bytes at the chip's DRAM rate, written and read).
 * writer[b]: the position that writes buffer b aligned, or -1. */
void be_rows_align(be_ctx *c, int pos, const int *writer)
{
    be_work *w = &c->work[pos];
    be_access *acc = NULL;
    int n = 0;
    if (be_rows_access(c, pos, &acc, &n))
        return;
    double now = rows_estimate(c, pos, w->cores), best = 0;
    int to = -1;
    for (int a = 0; a < n; a++) {
        int src = acc[a].write || !acc[a].aligned ? -1 : writer[acc[a].buf];
        if (src < 0 || c->work[src].cores == w->cores || c->work[src].cores > w->rows)
            continue;
        /* a core's part must fit the LX kept tensors can have */
        const be_layout *L = &c->lay[acc[a].buf];
        int64_t part = cc_ceil_div(L->rows, c->work[src].cores) * L->groups * c->t.stick;
        if ((double)part > (double)c->cfg->lx_usable_bytes * (1 - LX_KERNEL_SHARE))
            continue;
        double cost = rows_estimate(c, pos, c->work[src].cores) - now;
        double trip = c->t.dram_bytes_per_cycle > 0 ? 2.0 * (double)be_buf_bytes(c, acc[a].buf) / c->t.dram_bytes_per_cycle : 0;
        if (cost < trip && trip - cost > best) {
            best = trip - cost;
            to = src;
        }
    }
    free(acc);
    if (to >= 0) {
        w->cores = c->work[to].cores;
        w->aligned_to = to + 1;
    }
}

/* Bytes of the tensors row kernel pos reads aligned from an earlier
 * kernel on its own cores (writer[b]: the position writing b aligned, or
 * -1), which could stay in LX between them: what another split loses. */
static double rows_kept_in(be_ctx *c, int pos, const int *writer)
{
    be_access *acc = NULL;
    int n = 0;
    double bytes = 0;
    if (be_rows_access(c, pos, &acc, &n))
        return 0;
    for (int a = 0; a < n; a++) {
        const int src = acc[a].write || !acc[a].aligned ? -1 : writer[acc[a].buf];
        if (src >= 0 && c->work[src].cores == c->work[pos].cores)
            bytes += (double)be_buf_bytes(c, acc[a].buf);
    }
    free(acc);
    return bytes;
}

/* Buffer b's readers from `reader` on are a run of kernels, each of
 * them reading it, the last its last use: kept in LX for them, it is
 * kept across no other kernel. */
static int read_by_run(const be_ctx *c, int b, int reader)
{
    const ir_prog *p = c->p;
    int *io = ir_xalloc(2 * ((size_t)p->nbufs + 1) * sizeof *io), ok = 1;
    for (int k = reader + 1; ok && k <= p->bufs[b].last_use; k++) {
        int nr, nw;
        ir_kernel_io(p, p->order[k], io, &nr, io + p->nbufs + 1, &nw);
        ok = 0;
        for (int j = 0; j < nr && !ok; j++)
            ok = io[j] == b;
    }
    free(io);
    return ok && p->bufs[b].last_use >= reader;
}

/* Split row kernel pos over `cores` like its first reader splits on its
 * own, so that the n tensors bufs it writes and that reader reads aligned
 * can stay in LX between them, when its cost model prices that split
 * higher by less than their round trip through DRAM (their bytes at the
 * chip's DRAM rate, written and read, as be_rows_align prices it) less the
 * round trips of what it reads from an earlier kernel split as it is now.
 * Only tensors the reader and the kernels right after it are the last to
 * read (read_by_run): kept for later readers too, they take LX other
 * kernels need (Llama-8B's prefill layer: its
 * RMSNorm 6 -> 32 cores kept mul_1 from q's product to v's, across the
 * attention, whose softmax and PV then ran 2.4 and 1.8 times as long:
 * 0.8% slower).  To fewer cores too, since the estimate prices a chunk's
 * DRAM streams of every core (rows_cost_as): llama_tiny's RoPE on its own
 * 16 cores, 16,321 -> 17,145 cycles, back on QK^T's 8 16,276.  (Before,
 * taking fewer made serve_tiny's prefill_c128 4% slower: the RoPE 6 -> 2
 * cores, estimated 132 cycles more, simulated 1,219.) */
void be_rows_ahead(be_ctx *c, int pos, const int *writer, int reader, int cores, const int *bufs, int n)
{
    be_work *w = &c->work[pos];
    if (cores == w->cores || cores > w->rows || c->t.dram_bytes_per_cycle <= 0)
        return;
    rk_plan k;
    int ok = !rk_build(c, pos, &k) && rk_split_ok(c, &k, cores);
    const double cost = ok ? rows_cost(c, &k, cores) - rows_cost(c, &k, w->cores) : 0;
    rk_free(&k);
    double bytes = -rows_kept_in(c, pos, writer);
    for (int a = 0; ok && a < n; a++) { /* a core's part must fit the LX kept tensors can have */
        const be_layout *L = &c->lay[bufs[a]];
        const int64_t part = cc_ceil_div(L->rows, cores) * L->groups * c->t.stick;
        ok = (double)part <= (double)c->cfg->lx_usable_bytes * (1 - LX_KERNEL_SHARE) &&
             read_by_run(c, bufs[a], reader);
        bytes += (double)be_buf_bytes(c, bufs[a]);
    }
    if (ok && cost < 2.0 * bytes / c->t.dram_bytes_per_cycle) {
        w->cores = cores;
        w->ahead = reader + 1;
    }
}

/* ---- Row kernels' plans, for the compile ----
 * cc_compile plans the products fused and apart, and the row kernels
 * around them are the same kernels at other positions (BERT-base's nine
 * row kernel plans of the second attempt, 0.65 M instructions, each with
 * the inputs of one of the first's).  be_rows_plan's answer is
 * remembered (be_planmemo.c) by its inputs as it reads them, written out position-free
 * (rk_plan_key): the structure rk_build made (sizes, row space, SFP
 * measure), each load's and result's view, index and buffer (layout,
 * type, bytes, name, and which other load reads the same buffer), where
 * the LX plan or its hope keeps them (rk_from_lx, rk_to_lx_only), the
 * kernel's work as it enters, its LX budget and DRAM waits, and the
 * kernel before's ring bar (bar_paid) and, where the plan asked it, its
 * estimate (rk_prev_est; rk_planned_find).  A key found is the plan.
 * A field a row kernel's plan comes to read must be written into the key
 * too: SPYRE_CHECK_PLANS=1 plans every kernel found again and aborts
 * where the two differ. */

/* View v of buffer b: where in b it starts, not where b lies in DRAM,
 * which differs between the attempts (the products' weights and results
 * laid out fused or apart) and which no price reads: be_dma_rows counts
 * by the view's strides and rows_left, the spans are walked by layout
 * without the offset (rk_spans_of), be_rows_aligned compares base and
 * offset. */
static void rk_key_view(be_key *q, const rk_plan *k, const be_view *v, int b)
{
    const be_ctx *c = k->c;
    const int64_t f[] = {v->base - (int64_t)c->lay[b].off, v->gstride, v->lane, v->groups, v->rows_left, v->gper, v->gph, v->pstride};
    be_key_put(q, f, sizeof f);
    be_key_put(q, v->rs, (size_t)k->nvars * sizeof *v->rs);
}

/* (the row space's variables and the column's are the kernel's first
 * nvars: no view or index is read past them) */
static void rk_key_index(be_key *q, const rk_plan *k, const ir_index *x)
{
    be_key_i64(q, x->offset);
    be_key_put(q, x->coef, (size_t)k->nvars * sizeof *x->coef);
}

/* Buffer b as the plan reads it (not where it lies: rk_key_view), and the first of the kernel's buffers
 * bufs[0..n) that is b (n when none): which loads share a staging. */
static void rk_key_buf(be_key *q, const be_ctx *c, int b, const int *bufs, int n)
{
    const be_layout *L = &c->lay[b];
    const gr_ttype *t = &c->p->bufs[b].type;
    int same = 0;
    while (same < n && bufs[same] != b)
        same++;
    const int64_t f[] = {same, L->dram, L->stick_dim, L->groups, L->rows, L->want_dim, L->f32, t->dtype, t->rank,
                         be_buf_bytes(c, b)};
    be_key_put(q, f, sizeof f);
    be_key_put(q, t->shape, (size_t)t->rank * sizeof *t->shape);
    be_key_put(q, c->p->bufs[b].name, strlen(c->p->bufs[b].name) + 1);
}

static void rk_key_work(be_key *q, const be_work *w)
{
    const int64_t f[] = {w->cores,  w->gm,  w->gn,     w->gk,     w->gb,          w->rows,  w->cols,
                         w->batches, w->stage_whole, w->mb, w->nbs, w->kc, w->chunk, w->bcast,
                         w->nokeep, w->aligned_to != 0, w->ahead != 0, w->base, w->bar_before};
    be_key_put(q, f, sizeof f);
    be_key_f64(q, w->est_cycles);
    be_key_f64(q, w->stage_scale);
}

static void rk_key_loads(be_key *q, be_ctx *c, const rk_plan *k, int *bufs)
{
    for (int i = 0; i < k->nl; i++) {
        const rk_load *L = &k->loads[i];
        const ir_expr *x = &c->p->A.e[L->e];
        const int64_t f[] = {L->cls,   L->lx,       L->staged, L->stage,  L->gather, L->scalar,
                             L->res,   L->row_tile, L->shared, rk_from_lx(k, L)};
        be_key_put(q, f, sizeof f);
        rk_key_view(q, k, &L->v, x->buf);
        rk_key_index(q, k, &x->idx);
        rk_key_buf(q, c, x->buf, bufs, i);
        bufs[i] = x->buf;
        if (L->gather)
            rk_key_buf(q, c, c->p->A.e[L->ids].buf, bufs, 0);
    }
}

static void rk_key_nodes(be_key *q, const be_ctx *c, const rk_plan *k, const int *bufs)
{
    for (int j = 0; j < k->nn; j++) {
        const rk_node *rn = &k->nodes[j];
        const int64_t f[] = {rn->cls, rn->dram, rn->staged, rn->res, rn->heads, rn->lxonly, rk_to_lx_only(k, j)};
        be_key_put(q, f, sizeof f);
        rk_key_view(q, k, &rn->sv, c->p->nodes[rn->node].out);
        rk_key_index(q, k, &rn->store);
        rk_key_buf(q, c, c->p->nodes[rn->node].out, bufs, k->nl);
    }
}

/* Everything be_rows_plan reads of kernel pos, built as k (the header
 * comment above), into q. */
static void rk_plan_key(be_ctx *c, int pos, rk_plan *k, be_key *q)
{
    const int bar_paid = rk_bar_paid(c, pos);
    be_key_put(q, &c->cfg, sizeof c->cfg); /* the target (the cache is the compile's: one) */
    be_key_put(q, &c->t, sizeof c->t);
    const int64_t f[] = {pos > 0,  bar_paid, c->waits,  be_lx_budget(c, pos), k->nvars, k->colvar, k->cols,
                         k->G,     k->rows,  k->nn,     k->nl,                k->nexpr, k->ntemps, k->scalars,
                         k->rsp.nv, k->sfp.insns};
    be_key_put(q, f, sizeof f);
    be_key_f64(q, k->sfp.simple_sticks);
    be_key_f64(q, k->sfp.complex_sticks);
    be_key_put(q, k->rsp.var, (size_t)k->rsp.nv * sizeof *k->rsp.var);
    be_key_put(q, k->rsp.ext, (size_t)k->rsp.nv * sizeof *k->rsp.ext);
    rk_key_work(q, &c->work[pos]);
    int *bufs = ir_xalloc((size_t)(k->nl + 1) * sizeof *bufs);
    rk_key_loads(q, c, k, bufs);
    rk_key_nodes(q, c, k, bufs);
    free(bufs);
}

/* The plan remembered under the memo's key for k, if any.  The kernel
 * before's estimate is asked only of a plan that asked it (the same
 * question at the same point: its inputs are the key's), as be_rows_plan
 * would: its errors are kept as they were (be_error keeps the first). */
static const struct rk_planned *rk_planned_find(be_ctx *c, rk_plan *k)
{
    const struct rk_planned *x;
    for (int i = 0; (x = be_planmemo_next(&rk_cache(c)->plans, &i));)
        if (!x->prev || rk_prev_est(k) == x->prev)
            return x;
    return NULL;
}

/* The plan's answer as it left kernel pos (its work entered with
 * aligned_to: had). */
static struct rk_planned rk_planned_of(be_ctx *c, int pos, const rk_plan *k, int had)
{
    const be_work *w = &c->work[pos];
    const be_kinfo *ki = &state_of(c)->k[pos];
    struct rk_planned a = {.rows = w->rows, .cols = w->cols, .cores = w->cores, .cleared = had && !w->aligned_to,
                           .prev = k->prev_est, .nrestick = ki->nrestick};
    memcpy(a.tiles, ki->tiles, sizeof a.tiles);
    memcpy(a.restick, ki->restick, sizeof a.restick);
    return a;
}

static void rk_planned_put(be_ctx *c, int pos, const struct rk_planned *a)
{
    be_work *w = &c->work[pos];
    be_kinfo *ki = &state_of(c)->k[pos];
    w->rows = a->rows;
    w->cols = a->cols;
    w->cores = a->cores;
    if (a->cleared)
        w->aligned_to = 0;
    ki->nrestick = a->nrestick;
    memcpy(ki->tiles, a->tiles, sizeof ki->tiles);
    memcpy(ki->restick, a->restick, sizeof ki->restick);
}

static int rk_planned_same(const struct rk_planned *a, const struct rk_planned *b)
{
    return a->rows == b->rows && a->cols == b->cols && a->cores == b->cores && a->cleared == b->cleared &&
           a->prev == b->prev && a->nrestick == b->nrestick && !strcmp(a->tiles, b->tiles) && !strcmp(a->restick, b->restick);
}

static int rows_plan(be_ctx *c, int pos, rk_plan *k);

/* rk_chunk_rows for a part of rt rows from r0, its tiles full width, or
 * narrow (rk_load_groups) when then not one row fits: a cat of many
 * pieces (densenet121's, 19 on 4 cores) fills a tile per piece. */
static int64_t rk_fit(rk_plan *k, int64_t r0, int64_t rt, int64_t *per_row, int64_t *fixed, int64_t *stage)
{
    rk_lx(k, per_row, fixed);
    int64_t R = rk_chunk_rows(k, r0, rt, *per_row, *fixed, stage);
    if (R < 1 && !k->narrow) {
        k->narrow = 1;
        rk_measure_late(k);
        rk_lx(k, per_row, fixed);
        R = rk_chunk_rows(k, r0, rt, *per_row, *fixed, stage);
    }
    return R;
}

int be_rows_plan(be_ctx *c, int pos)
{
    rk_plan k;
    int rc = rk_build(c, pos, &k);
    if (rc) {
        rk_free(&k);
        return rc;
    }
    be_planmemo *memo = &rk_cache(c)->plans;
    memo->key.n = 0; /* (no plan is made while the key is read) */
    rk_plan_key(c, pos, &k, &memo->key);
    const struct rk_planned *x = rk_planned_find(c, &k);
    const int had = c->work[pos].aligned_to != 0;
    if (x && !be_check_plans()) {
        rk_planned_put(c, pos, x);
    } else if (!(rc = rows_plan(c, pos, &k))) {
        const struct rk_planned a = rk_planned_of(c, pos, &k, had);
        if (x && !rk_planned_same(x, &a)) {
            fprintf(stderr, "be_rows_plan: kernel %s: the remembered plan differs (rk_plan_key misses an input)\n",
                    k.K->name);
            abort();
        }
        if (!x)
            be_planmemo_keep(memo, &a, sizeof a);
    }
    rk_free(&k);
    return rc;
}

/* be_rows_plan's plan of k, built for kernel pos. */
static int rows_plan(be_ctx *c, int pos, rk_plan *k)
{
    be_work *w = &c->work[pos];
    int rc = 0;
    w->rows = k->rows;
    w->cols = k->cols;
    if (w->cores > k->rows) /* a work_div override (backend.c checked the core count) */
        rc = be_error(c, k->K, "work_div %d: the kernel has %" PRId64 " rows, fewer than %d cores", w->cores, k->rows,
                      w->cores);
    /* a staged result's sticks run across rows: every core's part a
     * whole number of sticks' rows, else one core; a split taken from
     * the producer (be_rows_align) that breaks this is dropped */
    const int staged = rk_staged_out(k), split_ok = rk_split_ok(c, k, w->cores);
    if (!rc && w->aligned_to && !split_ok) {
        w->cores = 0;
        w->aligned_to = 0;
    }
    if (!rc && !w->cores) {
        w->cores = rows_cores(c, k);
        while (staged && w->cores > 1 && !rk_split_ok(c, k, w->cores))
            w->cores--;
    }
    int64_t R = 0, rt = 0, stage = 0;
    if (!rc) { /* the first (largest) part's chunk, as be_rows_emit picks it */
        int64_t r0, per_row, fixed;
        cc_split(k->rows, w->cores, 0, &r0, &rt);
        rk_share(k, w->cores);
        rk_col_tree(k, w->cores);
        R = rk_fit(k, r0, rt, &per_row, &fixed, &stage);
        if (R < 1 && w->chunk)
            rc = be_error(c, k->K, "work_div chunks of %" PRId64 " rows do not fit %llu bytes of LX", w->chunk,
                          (unsigned long long)be_lx_budget(c, pos));
        else if (R < 1)
            rc = be_error(c, k->K, "one row of %" PRId64 " columns needs %" PRId64 " bytes of LX, more than %llu",
                          k->cols, fixed + 2 * (per_row + stage), (unsigned long long)be_lx_budget(c, pos));
    }
    if (!rc) {
        char shared[256] = "";
        for (int i = 0, n = 0; i < k->nl; i++)
            if (k->loads[i].shared && n < (int)sizeof shared - 80)
                n += snprintf(shared + n, sizeof shared - (size_t)n, "%s%s", n ? ", " : "; held whole and shared over the ring: ",
                              c->p->bufs[c->p->A.e[k->loads[i].e].buf].name);
        be_note(c, pos, BE_NOTE_TILES, "core part %" PRId64 " rows in chunks of %" PRId64 " rows x %" PRId64 " sticks (%" PRId64
                " columns), two slots%s%s", rt, R, k->G, k->cols, shared,
                k->col_tree ? "; per-column values loaded by core 0 and passed down a tree of cores over the ring" : "");
        for (int i = 0; i < k->nl; i++)
            if (k->loads[i].staged)
                be_note(c, pos, BE_NOTE_RESTICK, "%s (sfp.rst from the sticks each chunk reads, staged)",
                        c->p->bufs[c->p->A.e[k->loads[i].e].buf].name);
        for (int j = 0; j < k->nn; j++)
            if (k->nodes[j].dram && k->nodes[j].staged)
                be_note(c, pos, BE_NOTE_RESTICK, "result %s (stored through a staged copy)",
                        c->p->bufs[c->p->nodes[k->nodes[j].node].out].name);
    }
    return rc;
}

/* A chunk's evaluation (rk_eval_nodes) as an earlier chunk of the kernel,
 * on any core, made it: the same rows, slot, bindings and scratch emit the
 * same SFP instructions (the tile's values and cells start afresh each
 * chunk; BERT-base's layer norms, softmax and GELU on 32 cores, 1.6% of
 * its compile).  The key: the chunk's rows, the scratch's bounds, the
 * core's chunk size and each load's LX.  Not for a kernel that reads an
 * index value: its sfp.iota's hang on the chunk's first row (the Llama-8B
 * decode step's cats and rotary embeddings, whose chunks would not meet). */
#define RK_EVAL_LOADS 32
#define RK_EVAL_MEMO 8
enum { RK_EVAL_KEY = 4 + RK_EVAL_LOADS };
typedef struct {
    int64_t key[RK_EVAL_KEY];
    isa_insn *insns;
    size_t n;
    be_val nv[IR_KERNEL_NODES];
} rk_evalent;
typedef struct {
    int n, next;   /* entries, and the one to replace */
    rk_evalent e[RK_EVAL_MEMO];
} rk_evalmemo;

typedef struct {
    rk_plan *k;
    cc_emit *e;
    rk_evalmemo *evm;     /* be_rows_emit's, or NULL */
    int64_t R, slot[2], slot_bytes, colbase;
    int64_t part0;        /* the core's first row */
    int full[2], done[2], empty[2];
    int64_t chunk;
    int64_t *ostage;      /* per node: LX of the staged copy of its buffer (staged stores) */
    int64_t **ocount;     /* ... elements written per stick of it */
    int strd;             /* sfp0 -> dmao: the staged copies are complete */
    int nstaged;          /* results stored through a staged copy */
    int sh_in, sh_arr;    /* shared loads: this core's share loaded (dmai -> ring, sfp0); a share arrived */
    int me;               /* the core's index among the kernel's */
    int col_in, col_arr;  /* col_tree: the per-column values in this core's LX (dmai or ring -> ring, sfp0); they arrived */
    int64_t col_lo, col_hi; /* col_tree: the LX sent (the per-column values loaded, the scalars' sticks) */
    be_tile T;
} rk_core;

/* A staged result's elements for rows [r0, r0 + n) from the value at lx
 * (TILE: group stride gs; ROW: one element per row at lane `lane`) into
 * the staged copy of its buffer, counting the elements each stick gets. */
static void rk_scatter(rk_core *rc, int j, const be_val *v, int64_t gs, int64_t r0, int64_t n)
{
    rk_plan *k = rc->k;
    be_ctx *c = k->c;
    const rk_node *rn = &k->nodes[j];
    const int out = c->p->nodes[rn->node].out;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, ncols = rn->cls == BE_V_TILE ? k->cols : 1;
    int64_t val[IR_MAX_VARS] = {0}, dst[BE_LANES_MAX], src[BE_LANES_MAX];
    be_rst r;
    be_walk w;
    be_walk_init(&w, c, out);
    be_rst_begin(&r, rc->e, 0, &c->rst);
    for (int64_t g = 0; g * lanes < ncols; g++)
        for (int64_t i = 0; i < n; i++) {
            int64_t cnt = cc_min(lanes, ncols - g * lanes), rest = r0 + i;
            for (int vv = k->rsp.nv - 1; vv >= 0; vv--) {
                val[k->rsp.var[vv]] = rest % k->rsp.ext[vv];
                rest /= k->rsp.ext[vv];
            }
            val[k->colvar] = g * lanes;
            be_walk_at(&w, be_index_at(&rn->store, k->nvars, val), rn->store.coef[k->colvar]);
            for (int64_t l = 0; l < cnt; l++, be_walk_next(&w)) {
                int64_t off = be_walk_off(&w);
                rc->ocount[j][off / sb]++;
                dst[l] = rc->ostage[j] + off;
                src[l] = rn->cls == BE_V_TILE ? v->lx + g * gs + i * sb + l * 2
                                              : v->lx + (v->cls == BE_V_ROW ? i * sb : 0) + v->lane * 2;
            }
            be_rst_row(&r, dst, src, cnt);
        }
    be_rst_flush(&r);
}

/* A gather row's segments u as be_rst_segs takes them (seg), from the
 * sticks staged at st: group g's layout rows lo[g].. at st + go[g]. */
static void rk_gather_segs(const be_wseg *u, int ns, int64_t st, const int64_t *lo, const int64_t *go, int64_t sb,
                           int f32, be_rst_seg *seg)
{
    for (int q = 0; q < ns; q++) /* past the buffer: any staged value (the where discards it) */
        seg[q] = u[q].g < 0 ? (be_rst_seg){st, 0, 1}
                            : (be_rst_seg){st + ((go[u[q].g] + (u[q].r - lo[u[q].g]) * sb + u[q].byte) >> f32),
                                           (u[q].dr * sb + u[q].db) >> f32, u[q].n};
}

/* An fp32 buffer's `bytes` staged at st, rounded to DL16 in place: each
 * stick's 4-byte values become 2-byte ones at half its offset, so a
 * staged byte offset o reads at o / 2 (rk_gather_segs). */
static void rk_stage_dl16(cc_emit *e, int64_t st, int64_t bytes, int64_t sb)
{
    for (int64_t done = 0; done < bytes / sb;) {
        cc_sfp_args cv = {0};
        cv.op = ISA_OP_SFP_CVT;
        cv.t = ISA_T_F32;
        cv.n0 = cc_min(bytes / sb - done, 65535);
        cv.a = cc_abs(st + done * sb);
        cv.d = cc_abs(st + done * sb / 2);
        cv.as0 = sb;
        cv.ds0 = sb / 2;
        cv.n1 = 1;
        cc_emit_sfp(e, &cv);
        done += cv.n0;
    }
}

/* A restickified tile load: rows [r0, r0 + n) of the row space, every
 * column, into the slot at lx (sfp0), from the sticks of its buffer this
 * chunk reads, staged at st: group g's layout rows lo[g].. at st + go[g]. */
static void rk_gather(rk_core *rc, const rk_load *L, int64_t lx, int64_t r0, int64_t n, int64_t st,
                      const int64_t *lo, const int64_t *go)
{
    rk_plan *k = rc->k;
    be_ctx *c = k->c;
    const ir_expr *x = &c->p->A.e[L->e];
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, gs = rc->R * sb, nel = rk_numel(c, x->buf);
    const int f32 = c->lay[x->buf].f32; /* rounded to DL16 in place (rk_stage_dl16) */
    int64_t val[IR_MAX_VARS] = {0};
    be_wseg ws[BE_LANES_MAX], mv[BE_LANES_MAX];
    be_rst_seg seg[BE_LANES_MAX];
    be_rst r;
    be_walk w;
    be_walk_init(&w, c, x->buf);
    be_rst_begin(&r, rc->e, 0, &c->rst);
    int64_t last = 0;
    int ns = 0;
    int64_t g0, g1;
    rk_load_groups(k, L, &g0, &g1);
    for (int64_t g = g0; g < g1 && g * lanes < k->cols; g++) {
        /* the row walked last, when one run: its coordinates, and the
         * moves since (ax -2 before the first walk, or its row not one run) */
        int64_t co[GR_MAX_RANK];
        be_rowmove m = {.ax = -2, .move_ax = -1};
        for (int64_t i = 0; i < n; i++) {
            int64_t cnt = cc_min(lanes, k->cols - g * lanes);
            int64_t flat;
            if (i) {
                flat = last + be_row_next(&k->rsp, val, &x->idx);
            } else {
                rk_stage_flat(k, x, nel, r0, g * lanes, val);
                flat = be_index_at(&x->idx, k->nvars, val);
            }
            if (i && flat == last) { /* the row before's sticks (rk_span_row): its segments again */
                if (ns == 1 && seg[0].n >= 1) {
                    const int64_t more = rk_rows_same(k, val, &x->idx, n - 1 - i);
                    be_rst_segs_moved(&r, sb, 0, 1 + more);
                    i += more;
                } else {
                    be_rst_segs(&r, lx + g * gs + i * sb, seg, ns);
                }
                continue;
            }
            if (i)
                be_rowmove_add(&m, &w, flat - last);
            last = flat;
            if (m.ax != -2 && be_wseg_movable(&w, ws, ns, m.ax) && be_wseg_move(&w, ws, ns, co, m.ax, m.by, mv)) {
                /* the runs of the row walked last, moved (the Llama-8B
                 * prefill layer's rotary embedding: a token on a row) */
                rk_gather_segs(mv, ns, st, lo, go, sb, f32, seg);
                be_rst_segs(&r, lx + g * gs + i * sb, seg, ns);
                continue;
            }
            be_walk_at(&w, flat, x->idx.coef[k->colvar]);
            be_rowmove_walked(&m);
            if (be_walk_free(&w, cnt) < cnt) /* not one run: no move of it */
                m.ax = -2;
            memcpy(co, w.co, sizeof co);
            ns = be_walk_segs(&w, cnt, ws);
            rk_gather_segs(ws, ns, st, lo, go, sb, f32, seg);
            be_rst_segs(&r, lx + g * gs + i * sb, seg, ns);
        }
    }
    be_rst_flush(&r);
}

/* Stage the sticks the staged loads of staged load i's buffer read for
 * rows [r0, r0 + n) at st (dmai): one contiguous run per stick group of
 * the buffer.  Fills lo (layout row of each group's first staged stick)
 * and go (its offset from st); returns the bytes staged. */
static int64_t rk_stage_chunk(rk_core *rc, int i, int64_t st, int64_t r0, int64_t n, int64_t *lo, int64_t *go)
{
    rk_plan *k = rc->k;
    const int buf = k->c->p->A.e[k->loads[i].e].buf;
    int64_t *hi = ir_xalloc((size_t)k->c->lay[buf].groups * sizeof *hi);
    rk_stage_span(k, i, r0, n, lo, hi);
    int64_t at = be_stage_spans(k->c, rc->e, buf, lo, hi, st, go);
    free(hi);
    return at;
}

/* A gathered tile: rows [r0, r0 + n) of the row space, every group, into
 * the slot at lx, by dma.gather (dmai) from the row numbers staged in LX;
 * one instruction per run of rows whose row numbers lie at a constant
 * stride (they jump where the ids wrap to the next stick). */
static void rk_gather_rows(rk_core *rc, const rk_load *L, int64_t lx, int64_t r0, int64_t n)
{
    rk_plan *k = rc->k;
    be_ctx *c = k->c;
    const ir_expr *x = &c->p->A.e[L->e], *ix = &c->p->A.e[L->ids];
    const be_layout *W = &c->lay[x->buf];
    const int64_t sb = c->t.stick;
    int64_t val[IR_MAX_VARS] = {0}, *src = ir_xalloc((size_t)n * sizeof *src);
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = r0 + i;
        for (int v = k->rsp.nv - 1; v >= 0; v--) {
            val[k->rsp.var[v]] = rest % k->rsp.ext[v];
            rest /= k->rsp.ext[v];
        }
        src[i] = L->stage + be_elem_off(c, ix->buf, be_index_at(&ix->idx, k->nvars, val));
    }
    for (int64_t i = 0; i < n;) {
        int64_t len = 1, step = i + 1 < n ? src[i + 1] - src[i] : 4;
        while (i + len < n && src[i + len] - src[i + len - 1] == step)
            len++;
        isa_insn g;
        isa_insn_init(&g, ISA_OP_DMA_GATHER);
        g.d = cc_abs(lx + i * sb);
        g.a = cc_abs((int64_t)W->off);
        g.b = cc_abs(src[i]);
        isa_set(&g, vl, W->rows);
        isa_set(&g, n[0], len);
        isa_set(&g, ds[0], sb);
        isa_set(&g, as[0], sb);
        isa_set(&g, bs[0], step);
        isa_set(&g, n[1], k->G);
        isa_set(&g, ds[1], rc->R * sb);
        isa_set(&g, as[1], W->rows * sb);
        cc_push(rc->e, &g);
        i += len;
    }
    free(src);
}

/* How the kernel's evaluation uses temps, for rk_lx and the emitter: two
 * dry runs of rk_eval_nodes on an emitter that emits nothing, the first
 * counting how often each expression's value is read (k->reads), the
 * second giving each temp's cell back after its last read, which measures
 * the cells a chunk uses (k->ntemps).  If the evaluation fails (the
 * emitter reports why), temps are not reused and nexpr bounds them. */
static void rk_measure(rk_plan *k)
{
    be_ctx *c = k->c;
    cc_emit dry = {0};
    cc_emit_fail(&dry);
    be_tile T = {0};
    T.c = c;
    T.e = &dry;
    T.K = k->K;
    T.R = T.rows_cap = 1;
    T.G = k->G;
    T.gs = c->t.stick;
    T.cols = k->cols;
    T.rsp = &k->rsp;
    T.colvar = k->colvar;
    T.acc_expr = -1;
    T.end = INT64_MAX / 2;
    T.reads = ir_xalloc((size_t)c->p->A.n * sizeof *T.reads);
    char *err = c->err;
    c->err = NULL; /* no error reports from the dry runs */
    be_val nv[IR_KERNEL_NODES];
    int failed = 0;
    for (int pass = 0; pass < 2 && !failed; pass++) {
        T.counting = pass == 0;
        k->sfp = (cc_sfp_tally){0};
        dry.tally = &k->sfp;
        T.nmemo = 0;
        T.ncells = 0;
        for (int i = 0; i < k->nl; i++) {
            be_val v = {k->loads[i].cls, 0, -1, k->loads[i].v.lane}; /* not a cell */
            be_bind(&T, k->loads[i].e, &v);
        }
        failed = rk_eval_nodes(k, &T, nv) != 0;
    }
    c->err = err;
    be_tile_memo_end(&T);
    free(T.refs);
    if (failed) {
        free(T.reads);
        k->reads = NULL;
        k->ntemps = k->nexpr;
        k->sfp = (cc_sfp_tally){0};
        return;
    }
    k->reads = T.reads;
    k->ntemps = T.ncells;
}

/* k->ntemps for the narrow kernel's evaluation (be_tile.late_cond): one
 * more dry run over the reads rk_measure counted. */
static void rk_measure_late(rk_plan *k)
{
    if (!k->reads)
        return;
    be_ctx *c = k->c;
    cc_emit dry = {0};
    cc_emit_fail(&dry);
    cc_sfp_tally tally = {0};
    dry.tally = &tally;
    be_tile T = {.c = c, .e = &dry, .K = k->K, .R = 1, .rows_cap = 1, .G = k->G, .gs = c->t.stick, .cols = k->cols,
                 .rsp = &k->rsp, .colvar = k->colvar, .acc_expr = -1, .end = INT64_MAX / 2, .reads = k->reads,
                 .late_cond = 1};
    char *err = c->err;
    c->err = NULL;
    for (int i = 0; i < k->nl; i++) {
        be_val v = {k->loads[i].cls, 0, -1, k->loads[i].v.lane};
        be_bind(&T, k->loads[i].e, &v);
    }
    be_val nv[IR_KERNEL_NODES];
    if (!rk_eval_nodes(k, &T, nv))
        k->ntemps = T.ncells;
    c->err = err;
    be_tile_memo_end(&T);
    free(T.refs);
}

static void rk_eval_keep(rk_evalmemo *m, const int64_t *key, const isa_insn *in, size_t n, const be_val *nv, int nn)
{
    rk_evalent *x = &m->e[m->next];
    m->next = (m->next + 1) % RK_EVAL_MEMO;
    m->n = cc_max(m->n, m->next ? m->next : RK_EVAL_MEMO);
    memcpy(x->key, key, sizeof x->key);
    free(x->insns);
    x->insns = ir_xmalloc((n ? n : 1) * sizeof *in);
    memcpy(x->insns, in, n * sizeof *in);
    x->n = n;
    memcpy(x->nv, nv, (size_t)nn * sizeof *nv);
}

/* rk_eval_nodes of the chunk of n rows whose loads are at lx_of, or
 * its instructions again as remembered (rk_evalmemo). */
static int rk_eval_chunk(rk_core *rc, int64_t n, const int64_t *lx_of, be_val *nv)
{
    rk_plan *k = rc->k;
    cc_emit *e = rc->e;
    rk_evalmemo *m = rc->evm;
    const int on = m && !e->tally && !e->failed;
    int64_t key[RK_EVAL_KEY] = {n, rc->T.top, rc->T.end, rc->R};
    if (on) {
        memcpy(key + 4, lx_of, (size_t)k->nl * sizeof *lx_of);
        for (int i = 0; i < m->n; i++)
            if (!memcmp(m->e[i].key, key, sizeof key)) {
                for (size_t j = 0; j < m->e[i].n; j++)
                    cc_push(e, &m->e[i].insns[j]);
                memcpy(nv, m->e[i].nv, (size_t)k->nn * sizeof *nv);
                return 0;
            }
    }
    const size_t n0 = e->s->n;
    if (rk_eval_nodes(k, &rc->T, nv))
        return -1;
    if (on && !e->failed)
        rk_eval_keep(m, key, e->s->insns + n0, e->s->n - n0, nv, k->nn);
    return 0;
}

static void rk_chunk(rk_core *rc, int64_t r0, int64_t n)
{
    rk_plan *k = rc->k;
    be_ctx *c = k->c;
    cc_emit *e = rc->e;
    const int64_t sb = c->t.stick, gs = rc->R * sb;
    int s = (int)(rc->chunk++ % 2);
    int64_t base = rc->slot[s];

    /* loads */
    cc_emit_wait(e, ISA_U_DMAI, rc->empty[s]);
    int64_t first[IR_KERNEL_LOADS]; /* (rk_prepare checked k->nl) */
    int64_t at = base + rk_slot_place(k, first) * gs;
    int64_t lx_of[IR_KERNEL_LOADS], st_of[IR_KERNEL_LOADS], st_n[IR_KERNEL_LOADS];
    int64_t *st_lo[IR_KERNEL_LOADS], *st_go[IR_KERNEL_LOADS]; /* only the loads' entries are read: only theirs cleared */
    for (int i = 0; i < k->nl && i < IR_KERNEL_LOADS; i++) {
        rk_load *L = &k->loads[i];
        st_lo[i] = st_go[i] = NULL;
        if (L->cls == BE_V_COL) {
            lx_of[i] = L->lx;
            continue;
        }
        if (L->shared) { /* in LX already (rk_share_fill) */
            lx_of[i] = L->lx + (r0 - rc->part0) / rc->R * k->G * gs;
            continue;
        }
        lx_of[i] = base + first[i] * gs;
        int64_t g0, ng;
        rk_load_groups(k, L, &g0, &ng);
        if (L->gather)
            rk_gather_rows(rc, L, lx_of[i], r0, n);
        else if (L->res)
            be_res_copy(c, e, 0, c->p->A.e[L->e].buf, r0 - rc->part0, n, 0, ng, lx_of[i], gs);
        else if (!L->staged && ng)
            be_dma_rows(c, e, ISA_OP_DMA_LD, lx_of[i], gs, &L->v, &k->rsp, r0, n, ng);
    }
    /* the sticks each restickified load reads in this chunk, in the slot */
    for (int i = 0; i < k->nl && i < IR_KERNEL_LOADS; i++) {
        rk_load *L = &k->loads[i];
        if (!L->staged || rk_stage_leader(k, i) != i)
            continue;
        int64_t groups = c->lay[c->p->A.e[L->e].buf].groups;
        st_lo[i] = ir_xalloc((size_t)groups * sizeof *st_lo[i]);
        st_go[i] = ir_xalloc((size_t)groups * sizeof *st_go[i]);
        st_of[i] = at;
        st_n[i] = rk_stage_chunk(rc, i, at, r0, n, st_lo[i], st_go[i]);
        at += st_n[i];
    }
    cc_emit_sig(e, ISA_U_DMAI, rc->full[s]);

    /* compute */
    isa_unit u = ISA_U_SFP0;
    cc_emit_wait(e, u, rc->full[s]);
    for (int i = 0; i < k->nl && rc->chunk == 1; i++) { /* once: each scalar into every lane of its COL value */
        const rk_load *L = &k->loads[i];
        if (!L->scalar)
            continue;
        cc_sfp_args z = {0};
        z.op = ISA_OP_SFP_IOTA; /* zeros */
        z.t = ISA_T_DL16;
        z.d = cc_abs(L->lx);
        z.n0 = k->G;
        z.ds0 = sb;
        z.n1 = 1;
        cc_emit_sfp(e, &z);
        cc_sfp_args a = {0};
        a.op = ISA_OP_SFP_ADD;
        a.t = ISA_T_DL16;
        a.d = a.a = cc_abs(L->lx);
        a.n0 = k->G;
        a.ds0 = a.as0 = sb;
        a.n1 = 1;
        a.bm = ISA_BM_ELEM;
        a.b = cc_abs(L->stage + L->v.lane * 2);
        cc_emit_sfp(e, &a);
    }
    for (int i = 0; i < k->nl && i < IR_KERNEL_LOADS; i++)
        if (k->loads[i].staged && rk_stage_leader(k, i) == i && c->lay[c->p->A.e[k->loads[i].e].buf].f32)
            rk_stage_dl16(e, st_of[i], st_n[i], sb);
    for (int i = 0; i < k->nl && i < IR_KERNEL_LOADS; i++)
        if (k->loads[i].staged) {
            const int l = rk_stage_leader(k, i);
            rk_gather(rc, &k->loads[i], lx_of[i], r0, n, st_of[l], st_lo[l], st_go[l]);
        }
    for (int i = 0; i < k->nl && i < IR_KERNEL_LOADS; i++) {
        free(st_lo[i]);
        free(st_go[i]);
    }
    be_tile *T = &rc->T;
    T->nmemo = 0;
    T->ncells = 0;
    T->R = n;
    T->r0 = r0;
    T->top = at;
    T->end = base + rc->slot_bytes;
    for (int i = 0; i < k->nl && i < IR_KERNEL_LOADS; i++) {
        be_val v = {k->loads[i].cls, 0, lx_of[i], k->loads[i].v.lane};
        be_bind(T, k->loads[i].e, &v);
    }
    be_val nv[IR_KERNEL_NODES];
    int failed = rk_eval_chunk(rc, n, lx_of, nv) != 0;
    for (int j = 0; j < k->nn && !failed && j < IR_KERNEL_NODES; j++)
        if (k->nodes[j].dram && k->nodes[j].staged)
            rk_scatter(rc, j, &nv[j], gs, r0, n);
    cc_emit_sig(e, u, rc->done[s]);

    /* stores */
    cc_emit_wait(e, ISA_U_DMAO, rc->done[s]);
    for (int j = 0; j < k->nn && !failed && j < IR_KERNEL_NODES; j++) {
        rk_node *rn = &k->nodes[j];
        int64_t ng = rn->cls == BE_V_TILE ? k->G : 1;
        if (rn->dram && !rn->staged)
            be_dma_rows(c, e, ISA_OP_DMA_ST, nv[j].lx, gs, &rn->sv, &k->rsp, r0, n, ng);
    }
    for (int j = 0; j < k->nn && !failed && j < IR_KERNEL_NODES; j++) { /* after the DRAM stores, which take longer */
        rk_node *rn = &k->nodes[j];
        if (rn->res)
            be_res_copy(c, e, 1, c->p->nodes[rn->node].out, r0 - rc->part0, n, 0, k->G, nv[j].lx, gs);
    }
    cc_emit_sig(e, ISA_U_DMAO, rc->empty[s]);
    if (failed && !e->failed)
        cc_emit_fail(e);
}


/* Kernel pos's plan for codegen, with the lxplan's decisions: tensors
 * kept in LX read from / copied to their regions; a kept result goes to
 * DRAM only when it must; those read from LX noted for the report when
 * `note` (not for the kernel before's loads ahead).  -1 with an error. */
static int rk_prepare(be_ctx *c, int pos, rk_plan *k, int note)
{
    if (rk_build(c, pos, k))
        return -1;
    if (k->nn > IR_KERNEL_NODES)
        return be_error(c, k->K, "more than %d nodes in one kernel (not supported yet)", IR_KERNEL_NODES);
    if (k->nl > IR_KERNEL_LOADS)
        return be_error(c, k->K, "more than %d loads in one kernel (not supported yet)", IR_KERNEL_LOADS);
    for (int i = 0; i < k->nl; i++) {
        rk_load *L = &k->loads[i];
        const int buf = c->p->A.e[L->e].buf;
        L->res = L->cls == BE_V_TILE && !L->staged && !L->gather && be_res_reads(c, buf, pos) &&
                 be_rows_aligned(k, buf, &L->v);
        if (L->res && note)
            be_note(c, pos, BE_NOTE_LXREAD, "%s", c->p->bufs[buf].name);
    }
    for (int j = 0; j < k->nn; j++) {
        rk_node *rn = &k->nodes[j];
        const int buf = c->p->nodes[rn->node].out;
        rn->res = rn->dram && be_res_writes(c, buf, pos);
        rn->dram = rn->dram && (!rn->res || c->res[buf].dram);
    }
    rk_share(k, c->work[pos].cores);
    rk_col_tree(k, c->work[pos].cores);
    return 0;
}

/* A core's rows [r0, r0 + rt) on emitter e: its chunk, its LX (the
 * per-column values, a gather's row numbers, the staged results, two
 * slots) and its tokens.  All of a row kernel's LX is taken here, before
 * any instruction: its working LX is e->lx_top after it (be_rows_need). */
static int rk_core_setup(rk_core *rc, rk_plan *k, cc_emit *e, int64_t r0, int64_t rt)
{
    be_ctx *c = k->c;
    const int64_t sb = c->t.stick;
    e->lx_top = 0;
    e->ntokens = 0;
    memset(rc, 0, sizeof *rc);
    rc->k = k;
    rc->e = e;
    rc->part0 = r0;
    int64_t per_row, fixed, stage;
    const int64_t R = rk_fit(k, r0, rt, &per_row, &fixed, &stage);
    if (R < 1)
        return be_error(c, k->K, "no chunk of rows fits LX");
    rc->R = R;
    /* per-column loads once, then the slots */
    /* the first allocations, alike on every core: the values loaded, then
     * the sticks of the scalars, sent whole (rk_col_fill); then what sfp0
     * makes of the scalars, which the ring must not read as sfp0 writes it */
    rc->col_lo = (int64_t)e->lx_top;
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < k->nl; i++) {
            rk_load *L = &k->loads[i];
            if (L->cls != BE_V_COL || (pass == 0) == L->scalar)
                continue;
            if (pass == 1)
                L->stage = cc_lx_alloc(e, sb, "a scalar's stick");
            else
                L->lx = cc_lx_alloc(e, k->G * sb, "per-column values");
        }
        if (pass == 1)
            rc->col_hi = (int64_t)e->lx_top;
    }
    rc->col_in = rc->col_arr = -1;
    if (k->col_tree) {
        rc->col_in = cc_tok_alloc(e, "per-column values in LX");
        rc->col_arr = cc_tok_alloc(e, "per-column values arrived over the ring");
    }
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].gather)
            k->loads[i].stage = cc_lx_alloc(e, be_buf_bytes(c, c->p->A.e[k->loads[i].ids].buf), "gather: row numbers");
    rc->ostage = ir_xalloc((size_t)(k->nn + 1) * sizeof *rc->ostage);
    rc->ocount = ir_xalloc((size_t)(k->nn + 1) * sizeof *rc->ocount);
    for (int j = 0; j < k->nn; j++)
        if (k->nodes[j].dram && k->nodes[j].staged) {
            int64_t bytes = be_buf_bytes(c, c->p->nodes[k->nodes[j].node].out);
            rc->ostage[j] = cc_lx_alloc(e, bytes, "restickify: staged result");
            rc->ocount[j] = ir_xalloc((size_t)(bytes / sb + 1) * sizeof **rc->ocount);
            rc->nstaged++;
        }
    if (rc->nstaged)
        rc->strd = cc_tok_alloc(e, "staged results written");
    rc->sh_in = rc->sh_arr = -1;
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].shared) {
            k->loads[i].lx = cc_lx_alloc(e, cc_round_up(rt, R) * k->G * sb, "shared rows (alike on every core)");
            if (rc->sh_in < 0) {
                rc->sh_in = cc_tok_alloc(e, "shared rows: own share loaded");
                rc->sh_arr = cc_tok_alloc(e, "shared rows: another core's share arrived");
            }
        }
    rc->slot_bytes = per_row * R + stage; /* `fixed` is the per-column loads, row numbers, staged results */
    rc->slot[0] = cc_lx_alloc(e, rc->slot_bytes, "row chunk");
    rc->slot[1] = cc_lx_alloc(e, rc->slot_bytes, "row chunk");
    for (int s = 0; s < 2; s++) {
        rc->full[s] = cc_tok_alloc(e, "rows full");
        rc->done[s] = cc_tok_alloc(e, "rows done");
        rc->empty[s] = cc_tok_alloc(e, "rows empty");
    }
    return cc_emit_failed(e) ? -1 : 0;
}

static void rk_core_free(rk_core *rc)
{
    be_tile_memo_end(&rc->T);
    free(rc->T.refs);
    for (int j = 0; rc->ocount && j < rc->k->nn; j++)
        free(rc->ocount[j]);
    free(rc->ocount);
    free(rc->ostage);
}

/* The working LX of prepared plan k's kernel: the highest of its cores'
 * lx_top after their setup, or -1. */
static int64_t rk_need(rk_plan *k)
{
    be_ctx *c = k->c;
    const int pos = k->pos;
    int64_t need = 0;
    const be_work *w = &c->work[pos];
    const int staged = rk_any_staged(k);
    int64_t seen[2] = {-1, -1}; /* part sizes set up so far (cc_split makes at most two) */
    for (int core = 0; core < w->cores && need >= 0; core++) {
        int64_t r0, rt;
        cc_split(k->rows, w->cores, core, &r0, &rt);
        /* without staged loads a core's LX hangs on its part's size alone
         * (rk_chunk_rows reads r0 only for them): one such core set up */
        if (!rt || (!staged && (rt == seen[0] || rt == seen[1])))
            continue;
        seen[seen[0] >= 0] = rt;
        cc_emit e;
        be_lx_probe(c, pos, core, &e);
        rk_core rc;
        /* as rk_core_emit: the kernel fails when the run has an error,
         * an earlier kernel's too (lxplan: one that does not fit its
         * share; then this one keeps its larger tiling as well) */
        const int bad = rk_core_setup(&rc, k, &e, r0, rt) || (c->err && c->err[0]);
        need = bad ? -1 : cc_max(need, (int64_t)e.lx_top);
        rk_core_free(&rc);
    }
    return need;
}

int64_t be_rows_need(be_ctx *c, int pos)
{
    rk_plan k;
    const int64_t need = rk_prepare(c, pos, &k, 1) ? -1 : rk_need(&k);
    rk_free(&k);
    return need;
}

/* Core `me`'s share of chunk rows n (of R): [*p0, *p0 + return). */
static int64_t rk_share_of(int64_t n, int64_t cores, int64_t me, int64_t *p0)
{
    int64_t pn;
    cc_split(n, cores, me, p0, &pn);
    return pn;
}

/* One ring.send to core `to` (-1: dma.ld from DRAM instead) of core me's
 * share of the shared load L's chunks [j0, j0 + nj), each of n rows. */
static void rk_share_move(rk_core *rc, const rk_load *L, int64_t r0, int64_t j0, int64_t nj, int64_t n, int me, int to)
{
    rk_plan *k = rc->k;
    be_ctx *c = k->c;
    const int64_t sb = c->t.stick, gs = rc->R * sb, cores = c->work[k->pos].cores;
    int64_t p0, pn = rk_share_of(n, cores, me, &p0);
    if (!pn || !nj)
        return;
    const int64_t at = L->lx + j0 * k->G * gs + p0 * sb;
    if (to < 0) {
        for (int64_t j = j0; j < j0 + nj; j++)
            be_dma_rows(c, rc->e, ISA_OP_DMA_LD, at + (j - j0) * k->G * gs, gs, &L->v, &k->rsp, r0 + j * rc->R + p0, pn, k->G);
        return;
    }
    cc_dma_shape sh = cc_dma_groups(pn, k->G, gs, gs);
    sh.n[1] = nj;
    sh.ds[1] = sh.as[1] = k->G * gs;
    sh.levels = 2;
    cc_emit_ring(rc->e, ISA_OP_RING_SEND, to, rc->sh_arr, cc_abs(at), cc_abs(at), &sh);
}

/* The shared loads into LX (see rk_share): this core's share of every
 * chunk (dmai), sent to every other core (ring, nearest first); sfp0
 * waits for its own share and for every share sent to it. */
static void rk_share_fill(rk_core *rc, int64_t r0, int64_t rt)
{
    rk_plan *k = rc->k;
    cc_emit *e = rc->e;
    const int cores = k->c->work[k->pos].cores, me = (int)(r0 / rt);
    const int64_t R = rc->R, full = rt / R, last = rt % R;
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].shared) {
            rk_share_move(rc, &k->loads[i], r0, 0, full, R, me, -1);
            rk_share_move(rc, &k->loads[i], r0, full, 1, last, me, -1);
        }
    cc_emit_sig(e, ISA_U_DMAI, rc->sh_in); /* one for the ring, one for sfp0 */
    cc_emit_sig(e, ISA_U_DMAI, rc->sh_in);
    cc_emit_wait(e, ISA_U_RING, rc->sh_in);
    int64_t arrivals = 0;
    for (int d = 1; d < cores; d++) {
        const int to = (me + (d % 2 ? (d + 1) / 2 : cores - d / 2)) % cores; /* alternate sides, nearest first */
        const int from = (me + cores - (to - me + cores) % cores) % cores;    /* the core that sends to me as I to `to` */
        for (int i = 0; i < k->nl; i++)
            if (k->loads[i].shared) {
                rk_share_move(rc, &k->loads[i], r0, 0, full, R, me, to);
                rk_share_move(rc, &k->loads[i], r0, full, 1, last, me, to);
                int64_t p0;
                arrivals += (full && rk_share_of(R, cores, from, &p0)) + (last && rk_share_of(last, cores, from, &p0));
            }
    }
    cc_emit_wait(e, ISA_U_SFP0, rc->sh_in);
    for (int64_t a = 0; a < arrivals; a++)
        cc_emit_wait(e, ISA_U_SFP0, rc->sh_arr);
}

/* The per-column values loaded on dmai into LX from `at` on (the place
 * rk_core_setup gave them, moved by at - col_lo). */
static void rk_col_loads(rk_core *rc, int64_t at)
{
    rk_plan *k = rc->k;
    const int64_t sb = k->c->t.stick, by = at - rc->col_lo;
    be_rowspace one = k->rsp;
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].cls == BE_V_COL)
            be_dma_rows(k->c, rc->e, ISA_OP_DMA_LD, by + (k->loads[i].scalar ? k->loads[i].stage : k->loads[i].lx), sb,
                        &k->loads[i].v, &one, 0, 1, k->loads[i].scalar ? 1 : k->G);
}

/* ---- Per-column values loaded ahead (be_kind.prefetch) ----
 *
 * With the tree, core 0's loads of the per-column values start the
 * kernel: their DRAM latency (about 500 cycles on BERT-base's layer
 * norms) comes before the first send down the tree, and every core
 * waits for it.  When they are parameters (no kernel writes them), core
 * 0 loads them in the kernel before, behind that kernel's own loads,
 * into LX above both kernels' working LX and below both floors; the
 * kernel then sends them down the tree from there at once, and core 0
 * copies them to their place for its own rows (dmai, LX to LX). */
static int rk_col_ahead(const rk_plan *k)
{
    return k->col_tree && k->c->pre.n > 0 && k->c->pre.pos == k->pos;
}

static int rk_col_params(const rk_plan *k)
{
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].cls == BE_V_COL && k->c->p->bufs[k->c->p->A.e[k->loads[i].e].buf].kind != IR_BUF_PARAM)
            return 0;
    return 1;
}

/* A row kernel streams nothing: loads ahead for a later kernel pass it. */
int be_rows_prefetch_far(be_ctx *c, int pos, int from, int64_t above)
{
    (void)c, (void)pos, (void)from, (void)above;
    return 0;
}

int be_rows_prefetch(be_ctx *c, int pos, int64_t above)
{
    c->pre.n = 0;
    rk_plan k;
    const int64_t need = rk_prepare(c, pos, &k, 0) ? -1 : rk_need(&k);
    if (need < 0) {
        rk_free(&k);
        return -1;
    }
    int64_t r0, rt;
    cc_split(k.rows, c->work[pos].cores, 0, &r0, &rt);
    int rc_ = 0;
    if (pos > 0 && k.col_tree && rk_col_params(&k) && rt > 0) {
        cc_emit probe;
        be_lx_probe(c, pos, 0, &probe);
        rk_core rc;
        rc_ = rk_core_setup(&rc, &k, &probe, r0, rt);
        const int64_t at = cc_max(above, need);
        int64_t top = cc_min(c->lx_floor[pos - 1], c->lx_floor[pos]);
        if (c->far.n > 0 && c->far.pos > pos) /* a later kernel's loads ahead live there */
            top = cc_min(top, c->far.at);
        if (!rc_ && at + rc.col_hi - rc.col_lo <= top) {
            rc.e = &c->em[0];
            cc_kernel_begin(rc.e, c->p->kernels[c->p->order[pos - 1]].name);
            rk_col_loads(&rc, at);
            cc_kernel_end(rc.e);
            rc_ = cc_emit_failed(rc.e) ? -1 : 0;
            c->pre.pos = pos;
            c->pre.at = at;
            c->pre.n = 1;
        }
        rk_core_free(&rc);
    }
    rk_free(&k);
    return rc_;
}

/* The per-column values down the tree (see rk_col_tree): core 0's from
 * its loads (dmai), another's once they arrive (the ring waits for them
 * and tells sfp0); then to the root of each upper half of the cores range
 * this core heads, largest first. */
static void rk_col_fill(rk_core *rc)
{
    cc_emit *e = rc->e;
    const int cores = rc->k->c->work[rc->k->pos].cores;
    int64_t src = rc->col_lo;
    if (rc->me == 0 && rk_col_ahead(rc->k)) {
        src = rc->k->c->pre.at; /* in LX since the kernel before: sent from there at once */
    } else if (rc->me == 0) {
        cc_emit_sig(e, ISA_U_DMAI, rc->col_in);
        cc_emit_wait(e, ISA_U_RING, rc->col_in);
    } else {
        cc_emit_wait(e, ISA_U_RING, rc->col_arr);
        cc_emit_sig(e, ISA_U_RING, rc->col_in);
        cc_emit_wait(e, ISA_U_SFP0, rc->col_in);
    }
    const int64_t sticks = (rc->col_hi - rc->col_lo) / rc->k->c->t.stick;
    const cc_dma_shape sh = cc_dma_groups(sticks, 1, 0, 0);
    for (int lo = 0, n = cores; n > 1;) { /* the range [lo, lo + n) holding me */
        const int mid = lo + (n + 1) / 2;
        if (rc->me == lo)
            cc_emit_ring(e, ISA_OP_RING_SEND, mid, rc->col_arr, cc_abs(rc->col_lo), cc_abs(src), &sh);
        if (rc->me < mid) {
            n = mid - lo;
        } else {
            n -= mid - lo;
            lo = mid;
        }
    }
}

/* A core's code: the per-column values and row numbers once, its chunks,
 * the staged results stored. */
static int rk_core_emit(rk_core *rc, int64_t r0, int64_t rt)
{
    rk_plan *k = rc->k;
    be_ctx *c = k->c;
    cc_emit *e = rc->e;
    const int64_t sb = c->t.stick, R = rc->R;
    int rc_ = 0;
    rc->T.c = c;
    rc->T.e = e;
    rc->T.K = k->K;
    rc->T.corelet = 0;
    rc->T.G = k->G;
    rc->T.gs = R * sb;
    rc->T.rows_cap = R;
    rc->T.cols = k->cols;
    rc->T.acc_expr = -1;
    rc->T.rsp = &k->rsp;
    rc->T.colvar = k->colvar;
    rc->T.reads = k->reads;
    rc->T.late_cond = k->narrow;
    cc_kernel_begin(e, k->K->name);
    for (int s = 0; s < 2; s++)
        cc_emit_sig(e, ISA_U_DMAI, rc->empty[s]);
    if (rc->me == 0 && rk_col_ahead(k)) { /* loaded ahead: copied down for core 0's own rows */
        const cc_dma_shape sh = cc_dma_groups((rc->col_hi - rc->col_lo) / sb, 1, 0, 0);
        cc_emit_dma(e, ISA_OP_DMA_LX, cc_abs(rc->col_lo), cc_abs(c->pre.at), &sh);
    } else if (!k->col_tree || rc->me == 0) { /* col_tree: core 0's, passed on */
        rk_col_loads(rc, rc->col_lo);
    }
    /* a gather's row numbers, on dmai ahead of the gathers that read
     * them (one queue, in order: no token) */
    for (int i = 0; i < k->nl; i++)
        if (k->loads[i].gather)
            be_stage_load(c, e, c->p->A.e[k->loads[i].ids].buf, k->loads[i].stage);
    if (k->col_tree)
        rk_col_fill(rc);
    if (rc->sh_in >= 0)
        rk_share_fill(rc, r0, rt);
    for (int64_t r = r0; r < r0 + rt; r += R)
        rk_chunk(rc, r, cc_min(R, r0 + rt - r));
    if (rc->nstaged) { /* the staged copies, complete on sfp0, stored whole sticks at a time */
        cc_emit_sig(e, ISA_U_SFP0, rc->strd);
        cc_emit_wait(e, ISA_U_DMAO, rc->strd);
        for (int j = 0; j < k->nn && !rc_; j++)
            if (k->nodes[j].dram && k->nodes[j].staged)
                rc_ = be_store_staged(c, k->K, e, c->p->nodes[k->nodes[j].node].out, rc->ostage[j], rc->ocount[j]);
    }
    for (int s = 0; s < 2; s++)
        cc_emit_wait(e, ISA_U_DMAI, rc->empty[s]);
    cc_kernel_end(e);
    return rc_ || cc_emit_failed(e) || (c->err && c->err[0]) ? -1 : 0;
}

static void rk_find_index(void *ctx, const ir_expr *x)
{
    *(int *)ctx |= x->kind == IR_E_INDEX;
}

/* The chunks' evaluation memo for kernel k (rk_eval_chunk), or NULL
 * where it would not serve. */
static rk_evalmemo *rk_evalmemo_of(const rk_plan *k)
{
    int index = 0;
    for (int j = 0; j < k->nn; j++)
        ir_expr_walk(&k->c->p->A, k->nodes[j].expr, rk_find_index, &index);
    if (index || k->nl > RK_EVAL_LOADS || k->nn > IR_KERNEL_NODES)
        return NULL;
    rk_evalmemo *m = ir_xmalloc(sizeof *m); /* (its entries written as kept, not cleared first) */
    m->n = m->next = 0;
    for (int i = 0; i < RK_EVAL_MEMO; i++)
        m->e[i].insns = NULL;
    return m;
}

static void rk_evalmemo_free(rk_evalmemo *m)
{
    for (int i = 0; i < RK_EVAL_MEMO; i++)
        free(m->e[i].insns);
    free(m);
}

int be_rows_emit(be_ctx *c, int pos)
{
    rk_plan k;
    int rc_ = rk_prepare(c, pos, &k, 1);
    rk_evalmemo *evm = rc_ ? NULL : rk_evalmemo_of(&k);
    const be_work *w = &c->work[pos];
    for (int core = 0; core < w->cores && !rc_; core++) {
        int64_t r0, rt;
        cc_split(k.rows, w->cores, core, &r0, &rt);
        if (!rt)
            continue;
        rk_core rc;
        rc_ = rk_core_setup(&rc, &k, &c->em[core], r0, rt);
        rc.me = core;
        rc.evm = evm;
        if (!rc_)
            rc_ = rk_core_emit(&rc, r0, rt);
        rk_core_free(&rc);
    }
    if (evm)
        rk_evalmemo_free(evm);
    rk_free(&k);
    return rc_;
}
