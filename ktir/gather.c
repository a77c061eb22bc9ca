/* ktir indirect access tiles (ktdp.construct_indirect_access_tile) loaded
 * as row gathers.
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
 * view faults on the chip, naming it.  Element-wise indirection (several
 * indirect dimensions, indices that mix variables) and indirect stores are
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
    if (gt->idx.kind != KV_VIEW || !gt->idx.integer || gt->idx.tensor < 0) return "an index that is not an integer tensor of its own";
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

/* The coordinate list of the tile: per dimension an offset, or the gather. */
static const char *parse_dims(kt_ctx *c, const ml_item *list, const ml_item *vars, int nvars, kv *r, kt_gather *gt)
{
    int d = 0;
    gt->dim = -1;
    for (int a = 0, b; a < list->n; a = b + 1, d++) {
        for (b = a; b < list->n && !(list->items[b].kind == ML_I_PUNCT && list->items[b].s[0] == ','); b++)
            ;
        if (d == r->vrank || d >= nvars) return "more coordinates than view dimensions or variables";
        const ml_item *x = &list->items[a];
        if (b - a == 2 && x->kind == ML_I_WORD && !strcmp(x->s, "ind")) {
            if (gt->dim >= 0) return "more than one indirect dimension";
            gt->dim = d;
            const char *why = parse_ind(c, x + 1, vars, nvars, d, gt);
            if (why) return why;
            continue;
        }
        kt_lin e;
        if (b - a != 1 || x->kind != ML_I_GROUP || lin_eval(c, x->items, x->n, vars, nvars, &e) || !only_var(&e, nvars, d, 1))
            return "a direct coordinate other than (offset + its own variable)";
        r->off[d] = e.k;
    }
    return d == r->vrank && gt->dim >= 0 ? NULL : "no indirect dimension, or fewer coordinates than view dimensions";
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

/* The indices of the gather into LX (fp32): returns their address. */
static uint64_t load_indices(kt_ctx *c, const ml_op *op, const kt_gather *gt, int64_t n)
{
    const kv *v = &gt->idx;
    if (n > 1 && gt->var_pos != v->rank - 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: indices that do not step along their tensor's last dimension");
    kv t = {.kind = KV_TILE, .tensor = v->tensor, .rank = v->rank, .vrank = v->rank, .i = v->i, .stride = v->stride,
            .f32 = 1, .integer = 1, .dynamic = v->dynamic};
    memcpy(t.vshape, v->shape, sizeof t.vshape);
    memcpy(t.vstr, v->vstr, sizeof t.vstr);
    for (int j = 0; j < v->rank; j++) {
        t.off[j] = gt->pos[j], t.shape[j] = j == v->rank - 1 ? n : 1;
        if (t.off[j] < 0 || t.off[j] + t.shape[j] > v->shape[j])
            kt_fail(c, KT_EXIT_CHIP, op->line, op->col, "out-of-bounds index position: core %d, dimension %d of the index tensor",
                    c->core, j);
    }
    kv idx = {.kind = KV_TENSOR, .rank = 1, .shape = {n}, .f32 = 1};
    uint64_t lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(&idx) * c->cfg->stick_bytes);
    kt_dma_tile(c, op, &t, lx, 0);
    c->tensors[t.tensor].loaded = 1;
    return lx;
}

void kt_gather_load(kt_ctx *c, const ml_op *op, const kv *t, uint64_t lx)
{
    const kt_gather *gt = &c->gathers[t->i];
    if (gt->why) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an indirect access tile with %s", gt->why);
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
        in.d.off = (int64_t)lx + g * hf * sb, in.a.off = dram + (base + g * lanes) * eb, in.b.off = (int64_t)idx;
        in.run = 1, in.vl = t->vshape[k], in.bs[0] = 4;
        in.n[0] = t->shape[k], in.ds[0] = row_step(t, k) * sb, in.as[0] = t->vstr[k] * eb;
        if (o >= 0) in.n[1] = t->shape[o], in.ds[1] = row_step(t, o) * sb, in.as[1] = t->vstr[o] * eb;
        kt_emit(c, &in);
    }
    c->hbm_bytes += (double)(hf * w * eb);
    int64_t ext = c->tensors[t->tensor].extent; /* which rows is known at run time only */
    kt_stage_note_load(c, t->tensor, 0, ext > 0 ? (ext - 1) / lanes : 0);
}
