/* ktir indirect access tiles (ktdp.construct_indirect_access_tile) loaded
 * as row gathers, and element-indirect tiles loaded and stored.
 *
 * The subset the chip's dma.gather moves: one dimension of the view is
 * `ind(%idx[...])`, an integer index tensor read at run time, whose
 * position in %idx is fixed or steps with that dimension's own variable
 * along %idx's last dimension; every other dimension is `(c + %d_k)` with
 * its own variable.  Then each index picks whole rows of sticks: the
 * indices are loaded into LX (fp32, as integer tensors are kept) and one
 * dma.gather per stick group copies, for every index and every row of the
 * one other dimension of more than one element, a stick from
 * DRAM[base + index * stride + row * row stride].  An index outside the
 * view faults on the chip, naming it.  Both dimensions of a matrix
 * indirect, each index stepping with both variables, is an element gather
 * (gather_elems); a store through such a tile, an element scatter
 * (scatter_elems).  Other indirection (indices that mix variables, more
 * indirect dimensions) and stores through a tile of indirect rows are
 * refused. */
#include <stdio.h>
#include <string.h>
#include "internal.h"

/* const + sum coef[v] * var v over an expression of values, integers, + and -. */
typedef struct {
    int64_t k, coef[ML_MAX_RANK];
} kt_lin;

static int lin_eval(kt_ctx *c, const ml_item *it, int n, const ml_item *vars, int nvars, kt_lin *out)
{
    memset(out, 0, sizeof *out);
    int sign = 1, terms = 0;
    for (int i = 0; i < n; i++) {
        const ml_item *x = &it[i];
        if (x->kind == ML_I_PUNCT && (x->s[0] == '+' || x->s[0] == '-')) {
            sign = x->s[0] == '-' ? -1 : 1;
            continue;
        }
        int v = -1;
        for (int k = 0; x->kind == ML_I_VALUE && k < nvars; k++)
            if (!strcmp(vars[k].s, x->s)) v = k;
        if (v >= 0) out->coef[v] += sign;
        else if (x->kind == ML_I_ATTR && x->attr->kind == ML_A_INT) out->k += sign * x->attr->i;
        else if (x->kind == ML_I_VALUE && kt_lookup(c, x)->kind == KV_INT) out->k += sign * kt_lookup(c, x)->i;
        else return -1;
        sign = 1, terms++;
    }
    return terms ? 0 : -1;
}

/* Does l use only variable v, with coefficient 1 (want = 1) or not at all (want = 0)? */
static int only_var(const kt_lin *l, int nvars, int v, int want)
{
    for (int k = 0; k < nvars; k++)
        if (l->coef[k] != (k == v ? want : 0)) return 0;
    return 1;
}

/* One `ind(%idx[exprs])` of dimension k: the index view and positions. */
static const char *parse_ind(kt_ctx *c, const ml_item *g, const ml_item *vars, int nvars, int k, kt_gather *gt)
{
    if (g->kind != ML_I_GROUP || g->n != 2 || g->items[0].kind != ML_I_VALUE || g->items[1].kind != ML_I_LIST)
        return "an ind(...) other than ind(%idx[positions])";
    gt->idx = *kt_lookup(c, &g->items[0]);
    if (gt->idx.kind != KV_VIEW || !gt->idx.integer) return "an index that is not a view of integers";
    const ml_item *l = &g->items[1];
    int j = 0;
    gt->var_pos = -1;
    for (int a = 0, b; a < l->n; a = b + 1, j++) {
        for (b = a; b < l->n && !(l->items[b].kind == ML_I_PUNCT && l->items[b].s[0] == ','); b++)
            ;
        kt_lin e;
        if (j == gt->idx.rank || lin_eval(c, l->items + a, b - a, vars, nvars, &e)) return "an index position that is not a sum of values";
        if (!only_var(&e, nvars, k, 0)) {
            if (!only_var(&e, nvars, k, 1) || gt->var_pos >= 0) return "an index position that mixes variables";
            gt->var_pos = j;
        }
        gt->pos[j] = e.k;
    }
    return j == gt->idx.rank ? NULL : "an index with a position per dimension of its tensor";
}

/* One `ind(%idx[exprs])` of an element gather: the index tensor has a
 * position per variable, position j being (offset + variable j). */
static const char *parse_elem_ind(kt_ctx *c, const ml_item *g, const ml_item *vars, int nvars, kv *idx, int64_t *pos)
{
    if (g->kind != ML_I_GROUP || g->n != 2 || g->items[0].kind != ML_I_VALUE || g->items[1].kind != ML_I_LIST)
        return "an ind(...) other than ind(%idx[positions])";
    *idx = *kt_lookup(c, &g->items[0]);
    if (idx->kind != KV_VIEW || !idx->integer) return "an index that is not a view of integers";
    if (idx->rank != nvars) return "an element index without one position per variable";
    const ml_item *l = &g->items[1];
    int j = 0;
    for (int a = 0, b; a < l->n; a = b + 1, j++) {
        for (b = a; b < l->n && !(l->items[b].kind == ML_I_PUNCT && l->items[b].s[0] == ','); b++)
            ;
        kt_lin e;
        if (j == idx->rank || lin_eval(c, l->items + a, b - a, vars, nvars, &e) || !only_var(&e, nvars, j, 1))
            return "an element index whose positions are not (offset + the variable of their dimension)";
        pos[j] = e.k;
    }
    return j == idx->rank ? NULL : "an element index without one position per variable";
}

/* The indirect dimensions found: one is a row gather (parse_ind); both
 * dimensions of a matrix, an element gather. */
static const char *parse_inds(kt_ctx *c, const ml_item **inds, int nind, const ml_item *vars, int nvars, kv *r, kt_gather *gt)
{
    if (nind == 1) return parse_ind(c, inds[0], vars, nvars, gt->dim, gt);
    if (nind != 2 || r->vrank != 2) return "more than one indirect dimension, other than both of a matrix";
    gt->elem = 1, r->off[0] = r->off[1] = 0;
    const char *why = parse_elem_ind(c, inds[0], vars, nvars, &gt->idx, gt->pos);
    return why ? why : parse_elem_ind(c, inds[1], vars, nvars, &gt->col, gt->cpos);
}

/* The coordinate list of the tile: per dimension an offset, or an index. */
static const char *parse_dims(kt_ctx *c, const ml_item *list, const ml_item *vars, int nvars, kv *r, kt_gather *gt)
{
    int d = 0, nind = 0;
    const ml_item *inds[ML_MAX_RANK];
    gt->dim = -1;
    for (int a = 0, b; a < list->n; a = b + 1, d++) {
        for (b = a; b < list->n && !(list->items[b].kind == ML_I_PUNCT && list->items[b].s[0] == ','); b++)
            ;
        if (d == r->vrank || d >= nvars) return "more coordinates than view dimensions or variables";
        const ml_item *x = &list->items[a];
        if (b - a == 2 && x->kind == ML_I_WORD && !strcmp(x->s, "ind")) {
            gt->dim = d, inds[nind++] = x + 1;
            continue;
        }
        kt_lin e;
        if (b - a != 1 || x->kind != ML_I_GROUP || lin_eval(c, x->items, x->n, vars, nvars, &e) || !only_var(&e, nvars, d, 1))
            return "a direct coordinate other than (offset + its own variable)";
        r->off[d] = e.k;
    }
    if (d != r->vrank || !nind) return "no indirect dimension, or fewer coordinates than view dimensions";
    return parse_inds(c, inds, nind, vars, nvars, r, gt);
}

/* Fill r (an indirect tile; r->i its view's base on entry, the gather's
 * index on return) from the op's coordinate list; a pattern outside the
 * subset is kept as the reason, refused if it is loaded. */
void kt_gather_parse(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_item *vars = NULL, *list = NULL;
    int nvars = 0;
    for (int i = 0; i < op->n; i++) {
        const ml_item *x = &op->items[i];
        if (x->kind == ML_I_WORD && !strcmp(x->s, "intermediate_variables") && i + 1 < op->n && op->items[i + 1].kind == ML_I_GROUP)
            vars = op->items[i + 1].items, nvars = op->items[i + 1].n;
        if (x->kind == ML_I_LIST && !list) list = x;
    }
    if (c->ngathers == KT_MAX_GATHERS) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "more than %d indirect access tiles", KT_MAX_GATHERS);
    kt_gather *gt = &c->gathers[c->ngathers];
    memset(gt, 0, sizeof *gt);
    ml_item vv[ML_MAX_RANK]; /* the variables without their commas: variable k walks dimension k */
    int nv = 0;
    for (int i = 0; vars && i < nvars; i++)
        if (vars[i].kind == ML_I_VALUE && nv < ML_MAX_RANK) vv[nv++] = vars[i];
    gt->base = r->i;
    gt->why = !list || nv != r->rank || r->rank != r->vrank ? "a tile without one variable per view dimension"
                                                            : parse_dims(c, list, vv, nv, r, gt);
    r->i = c->ngathers++;
}

/* Rows before dimension d in the LX layout: the product of the leading extents after it. */
static int64_t row_step(const kv *t, int d)
{
    int64_t s = 1;
    for (int k = d + 1; k + 1 < t->rank; k++) s *= t->shape[k];
    return s;
}

/* The other leading dimension of more than one element (at most one), or -1. */
static int other_rows(kt_ctx *c, const ml_op *op, const kv *t, int skip)
{
    int o = -1;
    for (int d = 0; d + 1 < t->rank; d++)
        if (d != skip && t->shape[d] > 1) {
            if (o >= 0) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a gather with more than one dimension of rows");
            o = d;
        }
    return o;
}

/* The tile of shape `shape` at positions pos of the index view v into LX
 * (fp32, as integer tensors are kept): returns its address. */
static uint64_t load_index_tile(kt_ctx *c, const ml_op *op, const kv *v, const int64_t *pos, const int64_t *shape)
{
    kv t = {.kind = KV_TILE, .tensor = v->tensor, .rank = v->rank, .vrank = v->rank, .i = v->i, .stride = v->stride,
            .f32 = 1, .integer = 1, .dynamic = v->dynamic};
    memcpy(t.vshape, v->shape, sizeof t.vshape);
    memcpy(t.vstr, v->vstr, sizeof t.vstr);
    for (int j = 0; j < v->rank; j++) {
        t.off[j] = pos[j], t.shape[j] = shape[j];
        if (t.off[j] < 0 || t.off[j] + t.shape[j] > v->shape[j])
            kt_fail(c, KT_EXIT_CHIP, op->line, op->col, "out-of-bounds index position: core %d, dimension %d of the index tensor",
                    c->core, j);
    }
    kv idx = {.kind = KV_TENSOR, .rank = t.rank, .f32 = 1};
    memcpy(idx.shape, t.shape, sizeof idx.shape);
    uint64_t lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(&idx) * c->cfg->stick_bytes);
    kt_dma_tile(c, op, &t, lx, 0);
    c->tensors[t.tensor].loaded = 1;
    return lx;
}

/* The n indices of a row gather, along the index tensor's last dimension. */
static uint64_t load_indices(kt_ctx *c, const ml_op *op, const kt_gather *gt, int64_t n)
{
    const kv *v = &gt->idx;
    if (n > 1 && gt->var_pos != v->rank - 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: indices that do not step along their tensor's last dimension");
    int64_t shape[ML_MAX_RANK];
    for (int j = 0; j < v->rank; j++) shape[j] = j == v->rank - 1 ? n : 1;
    return load_index_tile(c, op, v, gt->pos, shape);
}

/* One SFP instruction over n0 x n1 sticks (strides in bytes). */
static void sfp(kt_ctx *c, int op, int t, uint64_t d, uint64_t a, int bm, uint64_t b, float imm, const int64_t n[2],
                const int64_t ds[2], const int64_t as[2], const int64_t bs[2])
{
    isa_insn in;
    isa_insn_init(&in, op);
    isa_set(&in, t, t), isa_set(&in, bm, bm), in.imm = imm;
    isa_set_off(&in.d, (int64_t)d), isa_set_off(&in.a, (int64_t)a), isa_set_off(&in.b, (int64_t)b);
    for (int k = 0; k < 2; k++) isa_set(&in, n[k], n[k]), isa_set(&in, ds[k], ds[k]), isa_set(&in, as[k], as[k]),
        isa_set(&in, bs[k], bs[k]);
    kt_emit(c, &in);
}

/* A column index outside [0, w) makes its row index fault in the gather:
 * rows += rows_n * ((cols < 0) + (cols >= w)), over nst fp32 sticks. */
static void poison_rows(kt_ctx *c, const ml_op *op, uint64_t rows, uint64_t cols, int64_t nst, int64_t rows_n, int64_t w)
{
    int64_t sb = c->cfg->stick_bytes, n[2] = {nst, 1}, st[2] = {sb, 0}, z[2] = {0, 0};
    uint64_t tmp = kt_lx_alloc(c, op, (uint64_t)(nst * sb));
    for (int side = 0; side < 2; side++) {
        sfp(c, side ? ISA_OP_SFP_GE : ISA_OP_SFP_LT, ISA_T_F32, tmp, cols, ISA_BM_IMM, 0, side ? (float)w : 0.0f, n, st, st, z);
        sfp(c, ISA_OP_SFP_MUL, ISA_T_F32, tmp, tmp, ISA_BM_IMM, 0, (float)rows_n, n, st, st, z);
        sfp(c, ISA_OP_SFP_ADD, ISA_T_F32, rows, rows, ISA_BM_VEC, tmp, 0, n, st, st, st);
    }
}

/* Where things are for one group of an element gather: the indices of
 * tile row r, columns [il q, il q + n), il = the fp32 lanes of a stick (one
 * stick of each index tile: LX keeps a tile's stick group g of row r at
 * g * rows + r). */
typedef struct {
    uint64_t rows, cols, g, mask, iota, out;
    int64_t m, k, rowb, ceb, lanes, il;
    int dt;
} kt_egather;

/* Group (r, q)'s gather: every element's row of X. */
static void elem_gather(kt_ctx *c, const kt_egather *e, int64_t r, int64_t q, int64_t dram, const kv *t, const kt_gather *gt)
{
    int64_t sb = c->cfg->stick_bytes, n = e->k - e->il * q < e->il ? e->k - e->il * q : e->il, eb = kt_ebytes(t);
    isa_insn in;
    isa_insn_init(&in, ISA_OP_DMA_GATHER);
    isa_set_off(&in.d, (int64_t)e->g + (r * e->k + e->il * q) * e->rowb), isa_set_off(&in.a, dram + gt->base * eb);
    isa_set_off(&in.b, (int64_t)e->rows + (q * e->m + r) * sb), isa_set(&in, run, 1), isa_set(&in, vl, t->vshape[0]),
        isa_set(&in, bs[0], 4);
    isa_set(&in, n[0], n), isa_set(&in, ds[0], e->rowb), isa_set(&in, as[0], t->vstr[0] * eb),
        isa_set(&in, n[1], e->rowb / sb), isa_set(&in, ds[1], sb), isa_set(&in, as[1], sb);
    kt_emit(c, &in);
}

/* Group (r, q)'s selection: each element's lane of its row, into the tile. */
static void elem_select(kt_ctx *c, const kt_egather *e, int64_t r, int64_t q, int eb)
{
    int64_t sb = c->cfg->stick_bytes, n = e->k - e->il * q < e->il ? e->k - e->il * q : e->il, ws = e->rowb / sb;
    uint64_t g = e->g + (uint64_t)((r * e->k + e->il * q) * e->rowb);
    int64_t nn[2] = {ws, n}, row[2] = {sb, e->rowb}, st[2] = {sb, 0}, z[2] = {0, 0}, bs[2] = {0, e->ceb};
    sfp(c, ISA_OP_SFP_EQ, e->dt, e->mask, e->iota, ISA_BM_ELEM, e->cols + (uint64_t)((q * e->m + r) * e->il * e->ceb), 0, nn,
        row, st, bs);
    sfp(c, ISA_OP_SFP_SEL, e->dt, e->mask, g, ISA_BM_IMM, 0, 0, nn, row, row, z);
    isa_insn in;
    isa_insn_init(&in, ISA_OP_SFP_RSUM);
    isa_set(&in, t, e->dt), in.flags = ISA_F_LANES, isa_set_off(&in.a, (int64_t)e->mask);
    isa_set_off(&in.d, (int64_t)e->out + (e->il * q / e->lanes * e->m + r) * sb + e->il * q % e->lanes * eb);
    isa_set(&in, n[0], ws), isa_set(&in, as[0], sb), isa_set(&in, n[1], n), isa_set(&in, as[1], e->rowb),
        isa_set(&in, ds[1], eb);
    kt_emit(c, &in);
}

/* The indices of an element gather or scatter over tile t into LX: the
 * row and column tiles (a column outside the view poisons its row index),
 * the column numbers in t's type, and a row of column numbers (iota). */
static void elem_setup(kt_ctx *c, const ml_op *op, const kv *t, kt_egather *e)
{
    const kt_gather *gt = &c->gathers[t->i];
    int64_t sb = c->cfg->stick_bytes, lanes = sb / kt_ebytes(t), m = t->shape[0], k = t->shape[1], w = t->vshape[1];
    if (t->rank != 2 || gt->base % lanes || w % lanes || t->vstr[0] % lanes || t->vstr[1] != 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an element gather or scatter whose view's rows do not start on sticks");
    if (!t->f32 && w > 1024) /* DL16 holds the column numbers exactly up to 2^10 */
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an element gather or scatter over more than 1024 f16 columns");
    int64_t il = sb / 4, shape[2] = {m, k}, nst = m * ((k + il - 1) / il);
    *e = (kt_egather){.m = m, .k = k, .rowb = w / lanes * sb, .ceb = 4, .lanes = lanes, .il = il, .dt = kt_dtype(t)};
    e->rows = load_index_tile(c, op, &gt->idx, gt->pos, shape), e->cols = load_index_tile(c, op, &gt->col, gt->cpos, shape);
    poison_rows(c, op, e->rows, e->cols, nst, t->vshape[0], w);
    if (!t->f32) { /* the column numbers in DL16, to compare with DL16 lanes */
        int64_t n[2] = {nst, 1}, ds[2] = {sb / 2, 0}, as[2] = {sb, 0}, z[2] = {0, 0};
        uint64_t f = e->cols;
        e->cols = kt_lx_alloc(c, op, (uint64_t)(nst * sb / 2)), e->ceb = 2;
        sfp(c, ISA_OP_SFP_CVT, ISA_T_F32, e->cols, f, ISA_BM_IMM, 0, 0, n, ds, as, z);
    }
    e->iota = kt_lx_alloc(c, op, (uint64_t)e->rowb);
    int64_t one[2] = {e->rowb / sb, 1}, st[2] = {sb, 0}, z[2] = {0, 0}, col[2] = {1, 0};
    sfp(c, ISA_OP_SFP_IOTA, e->dt, e->iota, 0, ISA_BM_VEC, 0, 0, one, st, z, col);
}

/* Y[m, k] = X[rows[m, k], cols[m, k]]: the chip moves sticks, not
 * elements, so a dma.gather copies, for every element, the whole row of X
 * its row index names; then the SFP keeps, in each element's copy, the
 * lane its column index names (sfp.eq against a row of column numbers,
 * sfp.sel against 0) and adds the row up into that one element (sfp.rsum
 * across lanes); in groups of a stick of indices of a tile row. */
static void gather_elems(kt_ctx *c, const ml_op *op, const kv *t, uint64_t lx)
{
    const kt_gather *gt = &c->gathers[t->i];
    kt_egather e;
    elem_setup(c, op, t, &e);
    int64_t sb = c->cfg->stick_bytes, m = e.m, k = e.k, il = e.il;
    e.out = lx, e.g = kt_lx_alloc(c, op, (uint64_t)(m * k * e.rowb)), e.mask = kt_lx_alloc(c, op, (uint64_t)(il * e.rowb));
    int64_t dram = c->final ? (int64_t)c->prog->tensors[c->tensors[t->tensor].index].dram_off : 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t q = 0; q * il < k; q++) elem_gather(c, &e, r, q, dram, t, gt);
    for (int64_t r = 0; r < m; r++)
        for (int64_t q = 0; q * il < k; q++) elem_select(c, &e, r, q, kt_ebytes(t));
    /* ktir-cpu charges the distinct sticks the indices touch, known at run
     * time; the roofline here takes the most there can be */
    int64_t touched = m * k, all = t->vshape[0] * (e.rowb / sb); /* one stick per element at most */
    c->hbm_bytes += (double)((touched < all ? touched : all) * sb);
    int64_t ext = c->tensors[t->tensor].extent; /* which rows is known at run time only */
    kt_stage_note_load(c, t->tensor, 0, ext > 0 ? (ext - 1) / e.lanes : 0);
}

/* One row of the view by an element's row index at LX ri: in from DRAM
 * (dma.gather into buf) or back out (dma.scatter from buf). */
static void elem_row(kt_ctx *c, const kt_egather *e, const kv *t, int64_t dram, uint64_t ri, uint64_t buf, int out)
{
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(t), table = dram + c->gathers[t->i].base * eb;
    isa_insn in;
    isa_insn_init(&in, out ? ISA_OP_DMA_SCATTER : ISA_OP_DMA_GATHER);
    isa_set_off(&in.d, out ? table : (int64_t)buf), isa_set_off(&in.a, out ? (int64_t)buf : table), isa_set_off(&in.b, (int64_t)ri);
    isa_set(&in, run, 1), isa_set(&in, vl, t->vshape[0]), isa_set(&in, bs[0], 4), isa_set(&in, n[1], e->rowb / sb),
        isa_set(&in, ds[1], sb), isa_set(&in, as[1], sb);
    if (out) isa_set(&in, ds[0], t->vstr[0] * eb);
    else isa_set(&in, as[0], t->vstr[0] * eb);
    kt_emit(c, &in);
}

/* Y[rows[m, k], cols[m, k]] = X[m, k]: a DMA writes whole sticks, so each
 * element is a read-modify-write of its row of Y: dma.gather the row,
 * replace the lane its column index names (sfp.ne against a row of column
 * numbers, sfp.sel of the row or the element) and dma.scatter the row
 * back.  One element after the other in index order, each unit waiting
 * for the last (kt_emit's fences): colliding indices leave the last
 * element's value, as sequential semantics do, at a DRAM round trip each. */
static void scatter_elems(kt_ctx *c, const ml_op *op, const kv *t, uint64_t lx)
{
    kt_egather e;
    int64_t ext = c->tensors[t->tensor].extent;
    if (kt_stage_any(c, t->tensor, 0, ext > 0 ? (ext - 1) / (c->cfg->stick_bytes / kt_ebytes(t)) : 0))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a scatter into a tensor several cores store parts of sticks of");
    double hbm = c->hbm_bytes;
    elem_setup(c, op, t, &e);
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(t), ws = e.rowb / sb;
    uint64_t buf = kt_lx_alloc(c, op, (uint64_t)e.rowb), mask = kt_lx_alloc(c, op, (uint64_t)e.rowb);
    int64_t dram = c->final ? (int64_t)c->prog->tensors[c->tensors[t->tensor].index].dram_off : 0;
    int64_t n[2] = {ws, 1}, st[2] = {sb, 0}, z[2] = {0, 0};
    for (int64_t r = 0; r < e.m; r++)
        for (int64_t j = 0; j < e.k; j++) {
            int64_t at = (j / e.il * e.m + r) * e.il + j % e.il; /* the element's position in the index tiles */
            uint64_t ri = e.rows + (uint64_t)(at * 4), ci = e.cols + (uint64_t)(at * e.ceb);
            uint64_t x = lx + (uint64_t)((j / e.lanes * e.m + r) * sb + j % e.lanes * eb);
            elem_row(c, &e, t, dram, ri, buf, 0);
            sfp(c, ISA_OP_SFP_NE, e.dt, mask, e.iota, ISA_BM_ELEM, ci, 0, n, st, st, z);
            sfp(c, ISA_OP_SFP_SEL, e.dt, mask, buf, ISA_BM_ELEM, x, 0, n, st, st, z);
            elem_row(c, &e, t, dram, ri, mask, 1);
        }
    /* ktir-cpu charges a store the bytes of the tile stored, not its indices;
     * the chip's cost (a row in and out per element) is in the cycles */
    c->hbm_bytes = hbm + (double)(e.m * e.k * eb);
    c->tensors[t->tensor].loaded = 1; /* the elements no index names keep their values: an input too */
    kt_stage_note_load(c, t->tensor, 0, ext > 0 ? (ext - 1) / e.lanes : 0);
}

void kt_gather_store(kt_ctx *c, const ml_op *op, const kv *t, uint64_t lx)
{
    const kt_gather *gt = &c->gathers[t->i];
    if (gt->why) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an indirect access tile with %s", gt->why);
    if (!gt->elem) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a store through an indirect tile of rows");
    scatter_elems(c, op, t, lx);
}

void kt_gather_load(kt_ctx *c, const ml_op *op, const kv *t, uint64_t lx)
{
    const kt_gather *gt = &c->gathers[t->i];
    if (gt->why) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an indirect access tile with %s", gt->why);
    if (gt->elem) {
        gather_elems(c, op, t, lx);
        return;
    }
    int k = gt->dim, n = t->rank, o = other_rows(c, op, t, k);
    if (k == n - 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an indirect last (stick) dimension");
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(t), lanes = sb / eb, w = t->shape[n - 1], base = gt->base;
    for (int d = 0; d < n; d++) {
        if (d == k) continue;
        if (t->off[d] < 0 || t->off[d] + t->shape[d] > t->vshape[d])
            kt_fail(c, KT_EXIT_CHIP, op->line, op->col, "out-of-bounds access tile: core %d, dimension %d", c->core, d);
        base += t->off[d] * t->vstr[d];
    }
    if (base % lanes || w % lanes || t->vstr[k] % lanes || (o >= 0 && t->vstr[o] % lanes) || t->shape[k] > 65535 ||
        (o >= 0 && t->shape[o] > 65535))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a gather whose rows do not start on sticks");
    uint64_t idx = load_indices(c, op, gt, t->shape[k]);
    int64_t hf = 1, groups = w / lanes;
    for (int d = 0; d + 1 < n; d++) hf *= t->shape[d];
    int64_t dram = c->final ? (int64_t)c->prog->tensors[c->tensors[t->tensor].index].dram_off : 0;
    for (int64_t g = 0; g < groups; g++) {
        isa_insn in;
        isa_insn_init(&in, ISA_OP_DMA_GATHER);
        isa_set_off(&in.d, (int64_t)lx + g * hf * sb), isa_set_off(&in.a, dram + (base + g * lanes) * eb), isa_set_off(&in.b, (int64_t)idx);
        isa_set(&in, run, 1), isa_set(&in, vl, t->vshape[k]), isa_set(&in, bs[0], 4);
        isa_set(&in, n[0], t->shape[k]), isa_set(&in, ds[0], row_step(t, k) * sb), isa_set(&in, as[0], t->vstr[k] * eb);
        if (o >= 0) isa_set(&in, n[1], t->shape[o]), isa_set(&in, ds[1], row_step(t, o) * sb),
            isa_set(&in, as[1], t->vstr[o] * eb);
        kt_emit(c, &in);
    }
    c->hbm_bytes += (double)(hf * w * eb);
    int64_t ext = c->tensors[t->tensor].extent; /* which rows is known at run time only */
    kt_stage_note_load(c, t->tensor, 0, ext > 0 ? (ext - 1) / lanes : 0);
}
