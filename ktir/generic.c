/* ktir linalg.generic and the casts between f16 and f32 tensors: a generic's
 * body runs once over whole tensors (each scalar op an SFP instruction over
 * the iteration domain), its linalg.index values compile-time integer
 * tensors; a select on them is known per element, so the elements it does
 * not take from its first operand are written by sfp.rst. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define KT_MAX_DOMAIN ((int64_t)1 << 20) /* elements of an iteration domain with index values */

static int64_t domain_elems(const kv *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->shape[d];
    return n;
}

int64_t *kt_idx_values(kt_ctx *c, const kv *t) { return c->ipool + t->i; }

/* A compile-time integer tensor of the generic's domain (uninitialised values). */
kv kt_idx_new(kt_ctx *c, const ml_op *op)
{
    kv r = {.kind = KV_IDX, .rank = c->dom.rank};
    memcpy(r.shape, c->dom.shape, sizeof r.shape);
    int64_t n = domain_elems(&r);
    if (!c->in_generic || n > KT_MAX_DOMAIN || c->nipool + n > 4 * KT_MAX_DOMAIN)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: index values of more than 2^20 elements, or outside a linalg.generic");
    c->ipool = kt_grow(c->ipool, &c->capipool, c->nipool + (int)n, sizeof *c->ipool, 1024);
    r.i = c->nipool;
    c->nipool += n;
    return r;
}

/* Value e of an index tensor, or the compile-time integer it broadcasts. */
int64_t kt_idx_at(kt_ctx *c, const kv *v, int64_t e) { return v->kind == KV_IDX ? c->ipool[v->i + e] : v->i; }

/* linalg.index DIM: the coordinate along dimension DIM of every element. */
static void op_index(kt_ctx *c, const ml_op *op, kv *r)
{
    int64_t dim = op->n && op->items[0].kind == ML_I_ATTR && op->items[0].attr->kind == ML_A_INT ? op->items[0].attr->i : -1;
    if (!c->in_generic || dim < 0 || dim >= c->dom.rank)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "linalg.index needs a dimension of its linalg.generic");
    *r = kt_idx_new(c, op);
    int64_t n = domain_elems(r), inner = 1, *v = kt_idx_values(c, r);
    for (int d = (int)dim + 1; d < r->rank; d++) inner *= r->shape[d];
    for (int64_t e = 0; e < n; e++) v[e] = e / inner % r->shape[dim];
}

/* The elements of row `row` and stick group g the mask leaves out (value 0), as lanes [lo, hi) runs. */
static int runs_of(kt_ctx *c, const kv *cond, int64_t row, int64_t g, int64_t lanes, int64_t *lo, int64_t *hi)
{
    int64_t cols = cond->rank ? cond->shape[cond->rank - 1] : 1, n = 0;
    for (int64_t l = 0; l < lanes && g * lanes + l < cols;) {
        if (kt_idx_at(c, cond, row * cols + g * lanes + l)) { l++; continue; }
        lo[n] = l;
        while (l < lanes && g * lanes + l < cols && !kt_idx_at(c, cond, row * cols + g * lanes + l)) l++;
        hi[n++] = l;
    }
    return n;
}

static int same_row(kt_ctx *c, const kv *cond, int64_t r1, int64_t r2, int64_t g, int64_t lanes)
{
    int64_t cols = cond->shape[cond->rank - 1];
    for (int64_t l = 0; l < lanes && g * lanes + l < cols; l++)
        if (!kt_idx_at(c, cond, r1 * cols + g * lanes + l) != !kt_idx_at(c, cond, r2 * cols + g * lanes + l)) return 0;
    return 1;
}

/* A float operand of a select as a tensor of the domain: a scalar is a splat. */
static kv select_operand(kt_ctx *c, const ml_op *op, const kv *v, const kv *like)
{
    int same = v->kind == KV_TENSOR && v->rank == like->rank && !v->moved;
    for (int d = 0; same && d < v->rank; d++) same = v->shape[d] == like->shape[d];
    if (same) return *v;
    if (v->kind == KV_TENSOR) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "arith.select of a tensor of another shape than its domain");
    if (v->kind != KV_FLOAT) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: arith.select of these values");
    kv t = *like;
    t.splat = 1, t.f = v->f, t.moved = 0, t.w16 = 0;
    return t;
}

/* b's elements into the select's result at lx wherever cond is 0: one
 * sfp.rst per run of lanes, over the consecutive rows that leave out the
 * same lanes; a constant b is one element read for every lane. */
static void mask_runs(kt_ctx *c, const ml_op *op, const kv *cond, const kv *b, uint64_t lx, int64_t rows, int64_t groups)
{
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(b), lanes = sb / eb, lo[64], hi[64];
    uint64_t src = b->lx;
    if (b->splat == 1) {
        src = kt_lx_alloc(c, op, (uint64_t)sb);
        kt_emit_fill(c, src, 1, b->f, kt_dtype(b));
    }
    for (int64_t g = 0; g < groups; g++)
        for (int64_t row = 0, k; row < rows; row += k) {
            for (k = 1; row + k < rows && same_row(c, cond, row, row + k, g, lanes); k++) {}
            int nr = runs_of(c, cond, row, g, lanes, lo, hi);
            for (int i = 0; i < nr; i++) {
                int64_t at = (g * rows + row) * sb + lo[i] * eb;
                isa_insn in;
                isa_insn_init(&in, ISA_OP_SFP_RST);
                isa_set(&in, t, kt_dtype(b)), isa_set(&in, vl, hi[i] - lo[i]), isa_set(&in, bs[1], eb), isa_set(&in, n[0], k),
                    isa_set(&in, ds[0], sb);
                isa_set_off(&in.d, (int64_t)lx + at), isa_set_off(&in.a, (int64_t)src + (b->splat ? 0 : at));
                if (!b->splat) isa_set(&in, as[0], sb), isa_set(&in, bs[0], eb);
                kt_emit(c, &in);
            }
        }
}

/* arith.select %cond, %a, %b where cond is known per element: a or b
 * itself when cond takes all of one, else a copy of a with b's elements
 * moved in where cond is 0 (mask_runs). */
void kt_select_mask(kt_ctx *c, const ml_op *op, const kv *cond, const kv *av, const kv *bv, kv *r)
{
    kv like = av->kind == KV_TENSOR ? *av : *bv;
    if (like.kind != KV_TENSOR) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: arith.select of these values");
    like.rank = cond->rank, memcpy(like.shape, cond->shape, sizeof like.shape);
    kv a = select_operand(c, op, av, &like), b = select_operand(c, op, bv, &like);
    int64_t n = domain_elems(cond), taken = 0;
    for (int64_t e = 0; e < n; e++) taken += kt_idx_at(c, cond, e) != 0;
    if (taken == n || taken == 0) {
        *r = taken ? a : b;
        return;
    }
    if ((!a.f32 && a.splat == 1 && isinf(a.f)) || (!b.f32 && b.splat == 1 && isinf(b.f)))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                "not supported: an infinite constant in an f16 select (DL16 has one pattern for infinity and NaN)");
    if (a.f32 != b.f32) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "arith.select of f16 and f32 values");
    kt_need_layout(c, op, &a);
    kt_need_layout(c, op, &b);
    int64_t sb = c->cfg->stick_bytes, rows = 1;
    for (int d = 0; d + 1 < cond->rank; d++) rows *= cond->shape[d];
    int64_t groups = kt_sticks(&like) / rows;
    *r = a, r->from_empty = 0, r->w16 = 0;
    if (a.splat) { /* written out: a buffer of its own to write b's elements into */
        kt_materialize(c, op, r);
    } else {
        isa_insn in;
        isa_insn_init(&in, ISA_OP_SFP_MOV);
        r->lx = kt_lx_alloc(c, op, (uint64_t)(kt_sticks(&a) * sb));
        isa_set(&in, t, kt_dtype(&a)), isa_set_off(&in.d, (int64_t)r->lx), isa_set_off(&in.a, (int64_t)a.lx), isa_set(&in, n[0], kt_sticks(&a)),
            isa_set(&in, ds[0], sb), isa_set(&in, as[0], sb);
        kt_emit(c, &in);
    }
    mask_runs(c, op, cond, &b, r->lx, rows, groups);
}

/* The map's results: -1 when it is not a projection of the domain's dims in order. */
static int map_dims(const ml_attr *m, int rank, int *dims)
{
    if (!m || m->kind != ML_A_MAP || m->aff->ndims != rank || m->aff->n > rank) return -1;
    for (int k = 0; k < m->aff->n; k++) {
        const ml_aexpr *e = m->aff->e[k];
        if (e->kind != ML_AE_DIM || (k && e->v <= dims[k - 1])) return -1;
        dims[k] = (int)e->v;
    }
    return m->aff->n;
}

/* The SSA values of an op's `key(...)` group (at most max). */
static int group_values(const ml_op *op, const char *key, const ml_item **out, int max)
{
    const ml_item *g = ml_op_keyword(op, key);
    int n = 0;
    for (int i = 0; g && g->kind == ML_I_GROUP && i < g->n; i++) {
        if (g->items[i].kind == ML_I_PUNCT && g->items[i].s[0] == ':') break;
        if (g->items[i].kind == ML_I_VALUE && n < max) out[n++] = &g->items[i];
    }
    return n;
}

/* An input of the generic as a tensor of the domain: itself, or a vector
 * broadcast along the domain's other dimension (map (d0) or (d1) of a matrix). */
static kv generic_input(kt_ctx *c, const ml_op *op, const kv *v, const int *dims, int nd)
{
    if (v->kind != KV_TENSOR) return *v; /* a scalar: ops take it as a splat */
    int full = nd == c->dom.rank && v->rank == nd;
    for (int d = 0; full && d < nd; d++) full = v->shape[d] == c->dom.shape[d];
    if (full) return *v;
    if (v->splat && v->rank == nd) { /* a splat has the same value everywhere */
        kv t = *v;
        t.rank = c->dom.rank, memcpy(t.shape, c->dom.shape, sizeof t.shape);
        return t;
    }
    if (c->dom.rank != 2 || nd != 1 || v->rank != 1 || v->shape[0] != c->dom.shape[dims[0]])
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a linalg.generic input other than the domain or a vector along one of a matrix's dimensions");
    kv r = {.kind = KV_TENSOR, .rank = 2, .shape = {c->dom.shape[0], c->dom.shape[1]}, .f32 = v->f32};
    kv x = *v;
    kt_broadcast_vector(c, op, &x, dims[0] == 0 ? 1 : 0, &r);
    return r;
}

/* linalg.generic {indexing_maps, iterator_types} ins(...) outs(%o) { body }:
 * parallel iterators only, the output's map the identity; the body's ops
 * run over whole tensors. */
static void op_generic(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_attr *maps = ml_resolve(c->m, ml_op_attr(c->m, op, "indexing_maps"));
    const ml_attr *its = ml_resolve(c->m, ml_op_attr(c->m, op, "iterator_types"));
    const ml_item *in[16], *out[2];
    int nin = group_values(op, "ins", in, 16), nout = group_values(op, "outs", out, 2), from = 0;
    const ml_region *body = ml_op_region(op, &from);
    if (!maps || maps->kind != ML_A_ARRAY || maps->n != nin + 1 || nout != 1 || !body || body->nblocks != 1 ||
        body->blocks[0].nargs != nin + 1 || c->in_generic)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: this linalg.generic (one output, a map per operand, a body of one block)");
    for (int i = 0; its && its->kind == ML_A_ARRAY && i < its->n; i++) {
        const ml_attr *t = ml_resolve(c->m, its->items[i]);
        if (!t || (t->kind == ML_A_STRING && strcmp(t->s, "parallel")) || (t->kind == ML_A_DIALECT && !strstr(t->body, "parallel")))
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a linalg.generic with iterators other than parallel");
    }
    kv o = *kt_lookup(c, out[0]);
    int dims[ML_MAX_RANK], nd = map_dims(ml_resolve(c->m, maps->items[nin]), o.rank, dims);
    if (o.kind != KV_TENSOR || nd != o.rank || o.rank < 1 || o.rank > 2)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a linalg.generic whose output is not a vector or matrix under the identity map");
    c->dom = o;
    int mark = c->nenv;
    int64_t ipool = c->nipool;
    for (int k = 0; k <= nin; k++) {
        const kv *v = k < nin ? kt_lookup(c, in[k]) : &o;
        int n = map_dims(ml_resolve(c->m, maps->items[k]), o.rank, dims);
        if (n < 0) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: indexing map %d of this linalg.generic", k);
        kv t = generic_input(c, op, v, dims, n);
        kt_bind(c, body->blocks[0].args[k].name, &t);
    }
    c->in_generic = 1;
    const ml_op *y = NULL;
    kt_compile_block(c, &body->blocks[0], &y);
    const kv *res = y && y->n && y->items[0].kind == ML_I_VALUE ? kt_lookup(c, &y->items[0]) : NULL;
    if (!res || (res->kind != KV_TENSOR && res->kind != KV_FLOAT))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a linalg.generic that yields no float value");
    *r = res->kind == KV_TENSOR ? *res : select_operand(c, op, res, &o);
    r->rank = o.rank, memcpy(r->shape, o.shape, sizeof r->shape), r->from_empty = 0;
    if (r->f32 != o.f32) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "linalg.generic yields another element type than its output's");
    c->in_generic = 0, c->nenv = mark, c->nipool = ipool;
}

/* DL16 copies of an f32 tensor (fp32 -> DL16): the even fp32 stick groups
 * fill lanes 0-31 of the DL16 groups, the odd ones lanes 32-63. */
static void narrow(kt_ctx *c, const kv *t, uint64_t to)
{
    int64_t sb = c->cfg->stick_bytes, rows = 1, cols = t->rank ? t->shape[t->rank - 1] : 1, g32 = (cols + 31) / 32;
    for (int d = 0; d + 1 < t->rank; d++) rows *= t->shape[d];
    for (int h = 0; h < 2 && h < g32; h++) {
        isa_insn in;
        isa_insn_init(&in, ISA_OP_SFP_CVT);
        in.t = ISA_T_F32, isa_set_off(&in.d, (int64_t)to + h * sb / 2), isa_set_off(&in.a, (int64_t)t->lx + h * rows * sb);
        isa_set(&in, n[0], rows), isa_set(&in, ds[0], sb), isa_set(&in, as[0], sb),
            isa_set(&in, n[1], (g32 - h + 1) / 2), isa_set(&in, ds[1], rows * sb), isa_set(&in, as[1], 2 * rows * sb);
        kt_emit(c, &in);
    }
}

/* fp32 copies of an f16 tensor: sfp.cvt writes each DL16 stick's 64 values
 * as two adjacent fp32 sticks; a dma.lx lays them out as groups of rows. */
static void widen(kt_ctx *c, const ml_op *op, const kv *t, uint64_t to)
{
    int64_t sb = c->cfg->stick_bytes, rows = 1, cols = t->rank ? t->shape[t->rank - 1] : 1, g16 = (cols + 63) / 64;
    for (int d = 0; d + 1 < t->rank; d++) rows *= t->shape[d];
    uint64_t mark = c->lx_top, tmp = rows == 1 ? to : kt_lx_alloc(c, op, (uint64_t)(rows * g16 * 2 * sb));
    isa_insn in;
    isa_insn_init(&in, ISA_OP_SFP_CVT);
    in.t = ISA_T_DL16, isa_set_off(&in.d, (int64_t)tmp), isa_set_off(&in.a, (int64_t)t->lx);
    isa_set(&in, n[0], rows), isa_set(&in, ds[0], 2 * sb), isa_set(&in, as[0], sb), isa_set(&in, n[1], g16),
        isa_set(&in, ds[1], 2 * rows * sb), isa_set(&in, as[1], rows * sb);
    kt_emit(c, &in);
    if (rows > 1) {
        isa_insn_init(&in, ISA_OP_DMA_LX);
        isa_set_off(&in.d, (int64_t)to), isa_set_off(&in.a, (int64_t)tmp), in.run = 1;
        isa_set(&in, n[0], 2), isa_set(&in, ds[0], rows * sb), isa_set(&in, as[0], sb);
        isa_set(&in, n[1], rows), isa_set(&in, ds[1], sb), isa_set(&in, as[1], 2 * sb);
        isa_set(&in, n[2], g16), isa_set(&in, ds[2], 2 * rows * sb), isa_set(&in, as[2], 2 * rows * sb);
        kt_emit(c, &in);
    }
    c->lx_top = mark; /* tmp is free again: a later writer on the SFP queues behind, one on another unit fences */
}

/* arith.extf / arith.truncf of a tensor between f16 (DL16) and f32. An
 * f32 tensor widened from f16 keeps its DL16 source (w16): a matmul reads
 * that instead of rounding the values back; one only matmuls read
 * (mm_only) is not widened at all. */
void kt_cast(kt_ctx *c, const ml_op *op, const kv *v, int to_f32, int mm_only, kv *r)
{
    kv a = *v;
    *r = a;
    if (a.f32 == to_f32) return;
    r->f32 = to_f32, r->w16 = 0;
    if (a.splat == 1) return;
    kt_need_layout(c, op, &a);
    kt_materialize(c, op, &a);
    int64_t sb = c->cfg->stick_bytes, rows = 1, cols = a.rank ? a.shape[a.rank - 1] : 1;
    for (int d = 0; d + 1 < a.rank; d++) rows *= a.shape[d];
    r->splat = 0, r->from_empty = 0, r->w16 = to_f32, r->lx16 = a.lx, r->lx = a.lx;
    if (to_f32 && mm_only) return; /* lx is never read: its only readers take lx16 */
    int64_t alloc = to_f32 ? rows * ((cols + 63) / 64) * 2 : kt_sticks(r); /* widen writes whole stick pairs */
    r->lx = kt_lx_alloc(c, op, (uint64_t)(alloc * sb));
    if (to_f32) widen(c, op, &a, r->lx);
    else narrow(c, &a, r->lx);
}

/* The DL16 copy of a matmul operand: an f16 tensor itself, an f32 one
 * widened from f16 its source, else its values rounded to DL16 here. */
uint64_t kt_dl16_operand(kt_ctx *c, const ml_op *op, kv *t)
{
    if (!t->f32) return t->lx;
    if (t->w16) return t->lx16;
    kv n = *t;
    n.f32 = 0;
    uint64_t lx = kt_lx_alloc(c, op, (uint64_t)(kt_sticks(&n) * c->cfg->stick_bytes));
    narrow(c, t, lx);
    return lx;
}

/* arith.bitcast of a compile-time integer to a float of the same width. */
static void op_bitcast(kt_ctx *c, const ml_op *op, kv *r)
{
    const kv *v = kt_operand(c, op, 0);
    const ml_type *to = ml_op_last_type(op);
    if (v->kind != KV_INT || !to || to->kind != ML_T_FLOAT || (to->bits != 32 && strcmp(to->name, "f16")))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: arith.bitcast other than of an integer constant to f32 or f16");
    if (to->bits == 32) {
        uint32_t bits = (uint32_t)v->i;
        float f;
        memcpy(&f, &bits, sizeof f);
        *r = (kv){.kind = KV_FLOAT, .f = f};
    } else {
        *r = (kv){.kind = KV_FLOAT, .f = isa_f16_to_f32((uint16_t)v->i)};
    }
}

int kt_generic_op(kt_ctx *c, const ml_op *op, kv *r)
{
    if (!strcmp(op->name, "linalg.generic")) op_generic(c, op, r);
    else if (!strcmp(op->name, "linalg.index")) op_index(c, op, r);
    else if (!strcmp(op->name, "arith.bitcast")) op_bitcast(c, op, r);
    else return 0;
    return 1;
}
