/* ktir compiler driver: the function and its grid, the per-core value
 * environment, scf.for, and the ktdp ops (tile id, memory views, access
 * tiles, load, store). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

void kt_fail(kt_ctx *c, int code, int line, int col, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        int n = snprintf(c->err, c->errlen, "%s:%d:%d: ", c->m->file, line, col);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < c->errlen) vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
        ml_one_line(c->err); /* the program's words quoted back may hold a newline */
    }
    c->code = code;
    longjmp(c->fail, 1);
}

void *kt_grow(void *p, int *cap, int need, size_t elem, int first)
{
    if (need <= *cap) return p;
    int n = *cap ? *cap : first;
    while (n < need) n *= 2;
    p = realloc(p, elem * (size_t)n);
    if (!p) abort();
    *cap = n;
    return p;
}

void kt_bind(kt_ctx *c, const char *name, const kv *v)
{
    c->env = kt_grow(c->env, &c->capenv, c->nenv + 1, sizeof *c->env, 256);
    c->env[c->nenv].name = name, c->env[c->nenv++].v = *v;
}

const kv *kt_lookup(kt_ctx *c, const ml_item *it)
{
    if (it->kind != ML_I_VALUE) kt_fail(c, KT_EXIT_REFUSED, it->line, it->col, "expected an SSA value");
    char name[256];
    if (it->idx >= 0) snprintf(name, sizeof name, "%s#%d", it->s, it->idx);
    else snprintf(name, sizeof name, "%s", it->s);
    for (int i = c->nenv - 1; i >= 0; i--)
        if (strcmp(c->env[i].name, name) == 0) return &c->env[i].v;
    kt_fail(c, KT_EXIT_REFUSED, it->line, it->col, "use of undefined value %%%s", name);
}

const kv *kt_operand(kt_ctx *c, const ml_op *op, int i)
{
    if (i >= op->n) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s: an operand is missing", op->name);
    return kt_lookup(c, &op->items[i]);
}

int64_t kt_int_of(kt_ctx *c, const ml_item *it)
{
    const kv *v = kt_lookup(c, it);
    if (v->kind == KV_PTR)
        kt_fail(c, KT_EXIT_REFUSED, it->line, it->col, "%%%s: an argument without a value (give --arg %s=N)", it->s, it->s);
    if (v->kind != KV_INT) kt_fail(c, KT_EXIT_REFUSED, it->line, it->col, "%%%s: expected an index value", it->s);
    return v->i;
}

int kt_tensor_for(kt_ctx *c, const ml_op *op, const char *key, int f32)
{
    for (int i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].key, key) == 0) {
            if (c->tensors[i].f32 != f32)
                kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: f16 and f32 views of the same memory (%s)", key);
            return i;
        }
    if (c->final) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "internal: tensor %s not measured", key);
    if (c->ntensors == 64) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "more than 64 HBM tensors");
    kt_tensor *kt = &c->tensors[c->ntensors];
    memset(kt, 0, sizeof *kt);
    snprintf(kt->key, sizeof kt->key, "%s", key);
    kt->f32 = f32, kt->lx_core = -1;
    return c->ntensors++;
}

/* The integers (constants or index values) of a `[a, %b, ...]` keyword list (n of them), or -1. */
static int int_list(kt_ctx *c, const ml_item *l, int64_t *out, int max)
{
    int n = 0;
    for (int i = 0; l && l->kind == ML_I_LIST && i < l->n; i++) {
        const ml_item *it = &l->items[i];
        if (it->kind == ML_I_PUNCT) continue;
        if (n == max) return -1;
        if (it->kind == ML_I_VALUE) out[n++] = kt_int_of(c, it);
        else if (it->kind == ML_I_ATTR && it->attr->kind == ML_A_INT) out[n++] = it->attr->i;
        else return -1;
    }
    return l ? n : -1;
}

/* Where a view's coordinate set starts (its lower bound d_k >= lo in each
 * dimension): the view's element (0, 0) is that global coordinate, as a
 * partition of a distributed view has it.  The set's symbols are the
 * view's run-time sizes, in order. */
static void set_origin(kt_ctx *c, const ml_op *op, kv *r, const int64_t *syms, int nsyms)
{
    const ml_attr *cs = ml_op_attr(c->m, op, "coordinate_set");
    if (!cs || cs->kind != ML_A_SET || cs->aff->ndims != r->rank || cs->aff->nsyms != nsyms) return;
    const ml_affine *a = cs->aff;
    int64_t zero[ML_MAX_RANK] = {0}, unit[ML_MAX_RANK];
    for (int k = 0; k < a->n; k++) {
        int64_t e0, coef[ML_MAX_RANK], dims = 0, dim = -1;
        if (ml_aexpr_eval(a->e[k], zero, syms, &e0)) return;
        for (int d = 0; d < r->rank; d++) {
            memset(unit, 0, sizeof unit), unit[d] = 1;
            if (ml_aexpr_eval(a->e[k], unit, syms, &coef[d])) return;
            coef[d] -= e0;
            if (coef[d]) dims++, dim = d;
        }
        if (dims == 1 && coef[dim] == 1) r->off[dim] = -e0; /* d - lo >= 0 */
    }
}

/* The view's sizes: its type's, a '?' taken from the `sizes:` operand. 1 when one was dynamic. */
static int view_sizes(kt_ctx *c, const ml_op *op, const ml_type *ty, int64_t *size)
{
    const ml_item *l = ml_op_keyword(op, "sizes");
    int k = 0, dynamic = 0;
    for (int d = 0; d < ty->rank; d++) {
        while (l && l->kind == ML_I_LIST && k < l->n && l->items[k].kind == ML_I_PUNCT) k++;
        const ml_item *it = l && l->kind == ML_I_LIST && k < l->n ? &l->items[k++] : NULL;
        size[d] = ty->shape[d];
        if (size[d] != ML_DYN) continue;
        dynamic = 1;
        if (!it) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "a dynamic memory view needs its `sizes:`");
        size[d] = it->kind == ML_I_VALUE ? kt_int_of(c, it) : it->kind == ML_I_ATTR && it->attr->kind == ML_A_INT ? it->attr->i : -1;
        if (size[d] < 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "dimension %d of the view has no positive size", d);
    }
    return dynamic;
}

/* The element type of a view: f16 (DL16 on the chip), f32, or an integer
 * type, kept as fp32 on the chip as the compiler keeps integer tensors
 * (exact up to 2^24); 1 for fp32, and *integer set for an integer type. */
static int view_elem(kt_ctx *c, const ml_op *op, const ml_type *e, int *integer)
{
    *integer = e && e->kind == ML_T_INT;
    if (*integer) return 1;
    if (!e || e->kind != ML_T_FLOAT || (strcmp(e->name, "f16") && strcmp(e->name, "f32")))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: HBM tensors of other element types than f16, f32 and integers");
    return !strcmp(e->name, "f32");
}

/* Rows nested and disjoint: the last dimension contiguous, each stride at
 * least the span of the dimensions inside it.  The span of the whole view, or -1. */
static int64_t view_span(int rank, const int64_t *size, const int64_t *st)
{
    if (st[rank - 1] != 1) return -1;
    int64_t span = size[rank - 1];
    for (int d = rank - 2; d >= 0; d--) {
        if (st[d] < span) return -1;
        span += (size[d] - 1) * st[d];
    }
    return span;
}

static void op_memory_view(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_type *ty = ml_op_last_type(op);
    if (!ty || ty->kind != ML_T_MEMREF || op->n < 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `: memref<...>`");
    int core = kt_lx_space(c, op); /* -1: HBM */
    int integer, f32 = view_elem(c, op, ty->elem, &integer);
    if (ty->rank < 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: memory views of rank 0");
    int64_t size[ML_MAX_RANK], st[ML_MAX_RANK];
    int dynamic = view_sizes(c, op, ty, size);
    int ns = int_list(c, ml_op_keyword(op, "strides"), st, ML_MAX_RANK);
    int64_t span = ns == ty->rank ? (core >= 0 ? 0 : view_span(ns, size, st)) : -1;
    if (span < 0) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a memory view whose rows are not contiguous and disjoint");
    const kv *base = kt_lookup(c, &op->items[0]);
    if (base->kind != KV_PTR && base->kind != KV_INT)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "the base of a memory view must be a pointer or an address");
    *r = (kv){.kind = KV_VIEW, .rank = ty->rank, .i = base->i, .stride = ns >= 2 ? st[ns - 2] : size[0], .dynamic = dynamic,
              .f32 = f32, .integer = integer};
    memcpy(r->vstr, st, sizeof st);
    int64_t syms[ML_MAX_RANK];
    int nsyms = 0;
    for (int d = 0; d < ty->rank; d++)
        if (ty->shape[d] == ML_DYN) syms[nsyms++] = size[d];
    set_origin(c, op, r, syms, nsyms);
    memcpy(r->shape, size, sizeof size);
    if (core >= 0) {
        kt_lx_view(c, op, core, r, size, st);
        return;
    }
    if (r->i < 0) kt_fail(c, KT_EXIT_CHIP, op->line, op->col, "a memory view at a negative address");
    /* Integers at an address of the shared f16 memory: the chip keeps
     * integers as fp32, so their elements cannot be the f16 memory's; each
     * such address is a tensor of its own, "hbm_int_ADDR", from its start. */
    char key[48];
    snprintf(key, sizeof key, "hbm_int_%lld", (long long)r->i);
    if (integer && base->kind != KV_PTR) r->i = 0;
    r->tensor = kt_tensor_for(c, op, base->kind == KV_PTR ? base->key : integer ? key : "hbm", f32);
    if (r->tensor >= 0 && r->i + span > c->tensors[r->tensor].extent) c->tensors[r->tensor].extent = r->i + span;
}

static void op_distributed_view(kt_ctx *c, const ml_op *op, kv *r)
{
    if (op->n < 1 || op->items[0].kind != ML_I_GROUP || c->ndviews == 64)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `ktdp.construct_distributed_memory_view(%%views : types)`");
    kt_dview *d = &c->dviews[c->ndviews];
    d->n = 0;
    for (int i = 0; i < op->items[0].n; i++) {
        const ml_item *it = &op->items[0].items[i];
        if (it->kind == ML_I_PUNCT && it->s[0] == ':') break;
        if (it->kind != ML_I_VALUE) continue;
        const kv *v = kt_lookup(c, it);
        if (v->kind != KV_VIEW || d->n == KT_MAX_PARTS)
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "a distributed view is made of at most %d memory views", KT_MAX_PARTS);
        d->parts[d->n++] = *v;
    }
    *r = (kv){.kind = KV_DVIEW, .i = c->ndviews++};
}

/* The order lays the tile's dimensions out as order(d): the type's
 * dimension k is the view's dimension order[k].  ext gets the extents in
 * the view's dimensions; 1 when the order is not the identity. */
static int tile_order(kt_ctx *c, const ml_op *op, const ml_type *ty, int64_t *ext)
{
    const ml_attr *order = ml_op_attr(c->m, op, "access_tile_order");
    int perm = 0, seen = 0;
    memcpy(ext, ty->shape, sizeof ty->shape);
    if (order && order->kind == ML_A_MAP && order->aff->n == ty->rank)
        for (int d = 0; d < order->aff->n; d++) {
            const ml_aexpr *e = order->aff->e[d];
            if (e->kind != ML_AE_DIM || e->v < 0 || e->v >= ty->rank || (seen >> e->v & 1))
                kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an access_tile_order that is not a permutation");
            ext[e->v] = ty->shape[d], perm |= e->v != d, seen |= 1 << e->v;
        }
    return perm;
}

/* off + ext (ext in [1, 2^40], checked) as text: past INT64_MAX for an
 * offset near it, where the signed sum overflowed (UBSan). */
static void tile_end(char *buf, int64_t off, int64_t ext)
{
    if (off < 0)
        snprintf(buf, 24, "%lld", (long long)(off + ext));
    else
        snprintf(buf, 24, "%llu", (unsigned long long)off + (unsigned long long)ext);
}

static void op_access_tile(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_type *ty = ml_op_last_type(op);
    if (op->n < 2 || op->items[1].kind != ML_I_LIST || !ty || ty->rank < 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `%%view[indices] {...} : memref -> !ktdp.access_tile<...>`");
    const kv *view = kt_lookup(c, &op->items[0]);
    if (view->kind != KV_VIEW && view->kind != KV_DVIEW)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "the base of an access tile must be a memory view");
    kt_check_shape(c, op, ty->shape, ty->rank); /* before its extents are compared: a dynamic one is INT64_MIN */
    int64_t ext[ML_MAX_RANK];
    int perm = tile_order(c, op, ty, ext);
    *r = (kv){.kind = KV_TILE, .rank = ty->rank}; /* offsets and extent first: they pick a partition */
    memcpy(r->shape, ty->shape, sizeof r->shape);
    int k = kt_index_list(c, &op->items[1], r->off, ML_MAX_RANK);
    if (view->kind == KV_DVIEW) {
        const kt_dview *d = &c->dviews[view->i];
        if (d->n < 1 || k != d->parts[0].rank || ty->rank != k)
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "an access tile needs one index and one extent per view dimension");
        r->dist = 1, r->i = view->i, r->f32 = d->parts[0].f32, r->perm = perm;
        return;
    }
    if (k != view->rank || ty->rank != view->rank)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "an access tile needs one index and one extent per view dimension");
    int64_t off[ML_MAX_RANK];
    memcpy(off, r->off, sizeof off);
    *r = (kv){.kind = KV_TILE, .tensor = view->tensor, .rank = r->rank, .vrank = view->rank, .i = view->i,
              .stride = view->stride, .f32 = view->f32, .integer = view->integer, .perm = perm, .dynamic = view->dynamic};
    memcpy(r->off, off, sizeof off);
    memcpy(r->shape, ty->shape, sizeof r->shape);
    memcpy(r->vshape, view->shape, sizeof r->vshape);
    memcpy(r->vstr, view->vstr, sizeof r->vstr);
    for (int d = 0; d < k; d++)
        if (r->off[d] < 0 || (!view->dynamic && (ext[d] > view->shape[d] || r->off[d] > view->shape[d] - ext[d]))) {
            char end[24];
            tile_end(end, r->off[d], ext[d]);
            kt_fail(c, KT_EXIT_CHIP, op->line, op->col,
                    "out-of-bounds access tile: core %d, dimension %d: [%lld, %s) outside the view's [0, %lld)", c->core,
                    d, (long long)r->off[d], end, (long long)view->shape[d]);
        }
}

/* ktdp.construct_indirect_access_tile: its type, view and element type,
 * and the coordinates (gather.c); the index tensors give some at run time. */
static void op_indirect_tile(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_type *ty = ml_op_last_type(op);
    const ml_item *view = NULL;
    for (int i = 0; i < op->n && !view; i++)
        if (op->items[i].kind == ML_I_VALUE) view = &op->items[i];
    if (!ty || ty->rank < 1 || !view)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `intermediate_variables(...) %%view[...] {...} : types -> !ktdp.access_tile<...>`");
    const kv *v = kt_lookup(c, view);
    if (v->kind != KV_VIEW) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "the base of an indirect access tile must be a memory view");
    if (c->tensors[v->tensor].lx_core >= 0)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an indirect access tile of a ct_local view");
    *r = (kv){.kind = KV_TILE, .tensor = v->tensor, .rank = ty->rank, .vrank = v->rank, .i = v->i, .stride = v->stride,
              .f32 = v->f32, .integer = v->integer, .indirect = 1, .dynamic = v->dynamic};
    memcpy(r->shape, ty->shape, sizeof r->shape);
    memcpy(r->vshape, v->shape, sizeof r->vshape);
    memcpy(r->vstr, v->vstr, sizeof r->vstr);
    kt_gather_parse(c, op, r);
}

static void op_load(kt_ctx *c, const ml_op *op, kv *r)
{
    const kv *tile = kt_operand(c, op, 0);
    if (tile->kind != KV_TILE) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "ktdp.load needs an access tile");
    *r = (kv){.kind = KV_TENSOR, .rank = tile->rank, .f32 = tile->f32};
    memcpy(r->shape, tile->shape, sizeof r->shape);
    r->lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(r) * c->cfg->stick_bytes);
    kt_dma_tile(c, op, tile, r->lx, 0);
    c->tensors[tile->tensor].loaded = 1;
}

static void op_store(kt_ctx *c, const ml_op *op)
{
    if (op->n < 3) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `ktdp.store %%tensor, %%tile`");
    kv v = *kt_lookup(c, &op->items[0]);
    const kv *tile = kt_lookup(c, &op->items[2]);
    if (tile->kind != KV_TILE || v.kind != KV_TENSOR)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "ktdp.store needs a tensor and an access tile");
    if (kt_sticks(&v) != kt_sticks(tile) || v.f32 != tile->f32) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "stored tensor and tile differ in shape");
    /* Tensors are values: an op whose result goes unused (RFC 0682's own
     * add-with-control-flow drops linalg.add's) leaves its outs as it was. */
    if (v.from_empty)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%%%s holds tensor.empty's undefined contents (is an op's result unused?)",
                op->items[0].s);
    kt_need_layout(c, op, &v);
    kt_materialize(c, op, &v);
    kt_dma_tile(c, op, tile, v.lx, 1);
    c->tensors[tile->tensor].stored = 1;
}

static void op_tile_id(kt_ctx *c, const ml_op *op)
{
    int64_t rest = c->core;
    /* The first grid dimension varies fastest along the tile index, as the
     * tile sets of ktir-cpu's examples assume (sdpa_pv_ksplit groups the
     * tiles i with i mod 2 == pid_0). */
    for (int d = 0; d < c->ngrid; d++) {
        kv v = {.kind = KV_INT, .i = rest % c->grid[d]};
        rest /= c->grid[d];
        if (d < op->nres) kt_bind(c, op->res[d], &v);
    }
    if (op->nres > c->ngrid) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "more tile ids than grid dimensions");
}

/* A copy of sticks from one LX buffer to another (dmai). */
static void lx_copy(kt_ctx *c, uint64_t to, uint64_t from, int64_t sticks)
{
    isa_insn in;
    isa_insn_init(&in, ISA_OP_DMA_LX);
    isa_set_off(&in.d, (int64_t)to), isa_set_off(&in.a, (int64_t)from), isa_set(&in, run, sticks);
    kt_emit(c, &in);
}

/* The iter_args of an scf.for: names and initial values (at most 16); a
 * tensor gets a buffer of its own that every iteration's yield writes. */
static int carry_init(kt_ctx *c, const ml_op *op, const char **names, kv *carried)
{
    const ml_item *ia = ml_op_keyword(op, "iter_args");
    int n = 0;
    for (int i = 0; ia && ia->kind == ML_I_GROUP && i + 2 < ia->n; i++) {
        if (ia->items[i].kind != ML_I_VALUE || ia->items[i + 1].kind != ML_I_PUNCT || ia->items[i + 1].s[0] != '=') continue;
        if (n == 16) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "more than 16 iter_args");
        names[n] = ia->items[i].s, carried[n] = *kt_lookup(c, &ia->items[i + 2]);
        if (carried[n].kind == KV_TENSOR) {
            kv init = carried[n];
            kt_materialize(c, op, &init);
            uint64_t lx = kt_lx_alloc(c, op, (uint64_t)kt_sticks(&init) * c->cfg->stick_bytes);
            lx_copy(c, lx, init.lx, kt_sticks(&init));
            carried[n] = init, carried[n].lx = lx, carried[n].w16 = 0; /* the buffer changes: no DL16 copy */
        }
        n++;
    }
    return n;
}

/* An iteration's scf.yield: tensors copied into their carried buffers, scalars carried as they are. */
static void carry_yield(kt_ctx *c, const ml_op *op, const ml_op *y, kv *carried, int n)
{
    int k = 0;
    for (int i = 0; y && i < y->n && k < n; i++) {
        if (y->items[i].kind != ML_I_VALUE) continue;
        kv v = *kt_lookup(c, &y->items[i]);
        if (carried[k].kind == KV_TENSOR) {
            kt_materialize(c, y, &v);
            if (v.lx != carried[k].lx) lx_copy(c, carried[k].lx, v.lx, kt_sticks(&v));
        } else {
            carried[k] = v;
        }
        k++;
    }
    if (k != n) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "scf.yield gives %d values for %d iter_args", k, n);
}

/* scf.for %iv = %lb to %ub step %s [iter_args(%a = %init, ...) -> (types)] { body }: unrolled. */
static void op_for(kt_ctx *c, const ml_op *op)
{
    if (op->n < 8 || op->items[0].kind != ML_I_VALUE)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `scf.for %%iv = %%lb to %%ub step %%s`");
    int64_t lb = kt_int_of(c, &op->items[2]), ub = kt_int_of(c, &op->items[4]), step = kt_int_of(c, &op->items[6]);
    if (step <= 0) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "scf.for with a step of %lld", (long long)step);
    int from = 0;
    const ml_region *body = ml_op_region(op, &from);
    if (!body || body->nblocks != 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "scf.for needs a body of one block");
    const char *names[16];
    kv carried[16];
    int n = carry_init(c, op, names, carried);
    for (int64_t iv = lb; iv < ub; iv += step) {
        int mark = c->nenv, dmark = c->ndviews, gmark = c->ngathers;
        uint64_t lx_mark = c->lx_top;
        kv ivv = {.kind = KV_INT, .i = iv};
        kt_bind(c, op->items[0].s, &ivv);
        for (int k = 0; k < n; k++) kt_bind(c, names[k], &carried[k]);
        const ml_op *y = NULL;
        kt_compile_block(c, &body->blocks[0], &y);
        carry_yield(c, op, y, carried, n);
        kt_push(c, ISA_OP_FENCE); /* the iteration's LX is about to be reused */
        c->nenv = mark, c->lx_top = lx_mark, c->ndviews = dmark, c->ngathers = gmark;
    }
    for (int k = 0; k < n && k < op->nres; k++) kt_bind(c, op->res[k], &carried[k]);
}

int kt_ktdp_op(kt_ctx *c, const ml_op *op, kv *r);
int kt_ktdp_op(kt_ctx *c, const ml_op *op, kv *r)
{
    const char *nm = op->name;
    if (!strcmp(nm, "ktdp.get_compute_tile_id")) op_tile_id(c, op);
    else if (!strcmp(nm, "ktdp.construct_memory_view")) op_memory_view(c, op, r);
    else if (!strcmp(nm, "ktdp.construct_access_tile")) op_access_tile(c, op, r);
    else if (!strcmp(nm, "ktdp.construct_indirect_access_tile")) op_indirect_tile(c, op, r);
    else if (!strcmp(nm, "ktdp.construct_distributed_memory_view")) op_distributed_view(c, op, r);
    else if (!strcmp(nm, "ktdp.load")) op_load(c, op, r);
    else if (!strcmp(nm, "ktdp.store")) op_store(c, op);
    else if (!strcmp(nm, "scf.for")) op_for(c, op);
    else return 0;
    return 1;
}

/* The block's sigmoid chains (fuse.c), found once per block: wait[i] = 1 +
 * the divf op i waits for, chain[divf] = 1 + the chain's negf. */
static const kt_plan *block_plan(kt_ctx *c, const ml_block *b)
{
    for (int k = 0; k < c->nplans; k++)
        if (c->plans[k].block == b) return &c->plans[k];
    c->plans = kt_grow(c->plans, &c->capplans, c->nplans + 1, sizeof *c->plans, 16);
    kt_plan *p = &c->plans[c->nplans++];
    p->block = b;
    p->wait = calloc((size_t)b->nops + 1, sizeof *p->wait);
    p->chain = calloc((size_t)b->nops + 1, sizeof *p->chain);
    p->mm_only = calloc((size_t)b->nops + 1, sizeof *p->mm_only);
    if (!p->wait || !p->chain || !p->mm_only) abort();
    for (int i = 0; i < b->nops; i++) p->mm_only[i] = kt_matmul_only(b, i);
    int at[4];
    for (int i = 0; i < b->nops; i++)
        if (!p->wait[i] && kt_sigmoid_chain(b, i, at)) {
            for (int k = 0; k < 3; k++) p->wait[at[k]] = at[3] + 1;
            p->chain[at[3]] = i + 1;
        }
    return p;
}

/* The block's ops in order; the ops of a sigmoid written out wait for its
 * divf, which is one sfp.sigm when its constants are 1; an extf only
 * matmuls read is kept as its DL16 source. */
void kt_compile_block(kt_ctx *c, const ml_block *b, const ml_op **yield_op)
{
    /* a copy: a nested block's plan may move c->plans (its arrays stay) */
    const kt_plan plan = *block_plan(c, b), *p = &plan;
    int at[4];
    for (int i = 0; i < b->nops; i++) {
        if (p->wait[i]) continue;
        if (p->chain[i]) {
            int from = p->chain[i] - 1;
            if (kt_sigmoid_chain(b, from, at) && kt_sigmoid(c, b, at)) continue;
            for (int k = from; k < i; k++)
                if (p->wait[k] == i + 1) kt_compile_op(c, &b->ops[k]); /* negf, exp, addf: no terminator */
        }
        c->mm_only = p->mm_only[i];
        if (kt_compile_op(c, &b->ops[i])) {
            *yield_op = &b->ops[i];
            return;
        }
    }
}
