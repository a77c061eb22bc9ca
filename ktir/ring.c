/* ktir inter-tile ops on the ring (ktdp.inter_tile_produce / _reduce), and
 * the structural ops around them: scf.if, reshapes, scalar broadcast.
 *
 * A reduction over a group: after a `bar` (every core of the chip, so no
 * core sends before every receiver is done with its slots, and no token
 * arrives while a core fences), every producer sends its partial to a slot
 * of its own on every other consumer of the group (ring.send, which adds
 * one to the receiver's token 0), and every consumer waits for one token
 * per partial it receives and adds that slot to its own partial on its
 * SFP; no fence until the last wait.  The slots sit at the top of LX, at
 * the same address on every core.  Cores outside the grid run the same
 * bars. */
#include <stdio.h>
#include <string.h>
#include "internal.h"

#define KT_RING_TOKEN 0 /* counts the partials that arrived */

/* The index of the group tile i belongs to under set(i)[g], or -1. */
static int group_of(const ml_affine *set, int64_t i, int ncores)
{
    for (int64_t g = 0; g < ncores; g++) {
        int in = 1;
        for (int k = 0; k < set->n && in; k++) {
            int64_t v;
            if (ml_aexpr_eval(set->e[k], &i, &g, &v)) return -1;
            in = set->eq[k] ? v == 0 : v >= 0;
        }
        if (in) return (int)g;
    }
    return -1;
}

static const ml_affine *tile_set(kt_ctx *c, const ml_op *op, const char *key)
{
    const ml_attr *a = ml_op_attr(c->m, op, key);
    if (!a || a->kind != ML_A_SET || a->aff->ndims != 1 || a->aff->nsyms != 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s must be an affine_set<(i)[g] : ...>", key);
    return a->aff;
}

/* ktdp.inter_tile_produce: the future holds this tile's partial (the yield of its region). */
static void op_produce(kt_ctx *c, const ml_op *op, kv *r)
{
    int from = 0;
    const ml_region *rg = ml_op_region(op, &from);
    if (!rg || rg->nblocks != 1) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "inter_tile_produce needs a region");
    const ml_block *b = &rg->blocks[0];
    int g = group_of(tile_set(c, op, "producer_tiles_per_group"), c->core, c->ncores);
    kv gid = {.kind = KV_INT, .i = g};
    if (b->nargs > 0) kt_bind(c, b->args[0].name, &gid);
    const ml_op *y = NULL;
    kt_compile_block(c, b, &y);
    if (!y || strcmp(y->name, "ktdp.yield_partial") || y->n < 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "inter_tile_produce's region must end in ktdp.yield_partial");
    *r = *kt_lookup(c, &y->items[0]);
    if (r->kind != KV_TENSOR) kt_fail(c, KT_EXIT_REFUSED, y->line, y->col, "the partial must be a tensor");
    kt_materialize(c, op, r);
    r->from_empty = 0;
    r->i = g; /* the producer's group travels with the future */
}

/* The combining op of a reduce region: its first elementwise op. */
static int combiner(kt_ctx *c, const ml_op *op)
{
    int from = 0;
    const ml_region *rg = ml_op_region(op, &from);
    for (int i = 0; rg && rg->nblocks == 1 && i < rg->blocks[0].nops; i++) {
        const char *n = rg->blocks[0].ops[i].name;
        if (!strcmp(n, "linalg.add") || !strcmp(n, "arith.addf")) return ISA_OP_SFP_ADD;
        if (!strcmp(n, "arith.maximumf") || !strcmp(n, "arith.maxnumf") || !strcmp(n, "linalg.max")) return ISA_OP_SFP_MAX;
    }
    kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an inter_tile_reduce that is not a sum or a max");
}

static void send_partial(kt_ctx *c, const kv *part, int to, int src, int64_t bytes)
{
    isa_insn in;
    isa_insn_init(&in, ISA_OP_RING_SEND);
    c->ring_bytes += (double)bytes;
    isa_set(&in, core, to), in.tok = KT_RING_TOKEN, isa_set_off(&in.a, (int64_t)part->lx), isa_set(&in, run, bytes / c->cfg->stick_bytes);
    isa_set_off(&in.d, (int64_t)(c->cfg->lx_bytes - (uint64_t)((src + 1) * bytes)));
    isa_stream_push(&c->prog->cores[c->core], &in);
}

static void op_reduce(kt_ctx *c, const ml_op *op, kv *r)
{
    if (op->n < 1 || op->items[0].kind != ML_I_GROUP || op->items[0].n < 1)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `ktdp.inter_tile_reduce(%%future)`");
    kv part = *kt_lookup(c, &op->items[0].items[0]);
    const ml_affine *cons = tile_set(c, op, "consumer_tiles_per_group");
    int isa_op = combiner(c, op), g = (int)part.i;
    c->exchanges++;
    kt_push(c, ISA_OP_BAR);
    int64_t bytes = kt_sticks(&part) * c->cfg->stick_bytes;
    if (bytes > c->ring_slot) c->ring_slot = bytes; /* the measuring pass sizes the slots */
    bytes = c->final ? c->ring_slot : bytes;
    /* Every tile runs the produce op, so every tile of group g is a producer:
     * it sends to every consumer of g but itself. */
    int me_consumes = group_of(cons, c->core, c->ncores) == g;
    for (int t = 0; t < c->ncores; t++)
        if (t != c->core && group_of(cons, t, c->ncores) == g) send_partial(c, &part, t, c->core, bytes);
    if (!me_consumes) {
        kt_push(c, ISA_OP_FENCE);
        return;
    }
    *r = part, r->i = 0;
    int64_t n = kt_sticks(&part), sb = c->cfg->stick_bytes;
    r->lx = kt_lx_alloc(c, op, (uint64_t)(n * sb));
    isa_insn in;
    isa_insn_init(&in, ISA_OP_SFP_MOV);
    isa_set_off(&in.d, (int64_t)r->lx), isa_set_off(&in.a, (int64_t)part.lx), isa_set(&in, n[0], n), isa_set(&in, ds[0], sb),
        isa_set(&in, as[0], sb), isa_set(&in, t, kt_dtype(&part));
    isa_stream_push(&c->prog->cores[c->core], &in);
    /* Every partial has arrived before any slot is read: a token says that
     * some partial arrived, not which one. */
    for (int t = 0; t < c->ncores; t++) {
        if (t == c->core || group_of(cons, t, c->ncores) != g) continue;
        isa_insn w;
        isa_insn_init(&w, ISA_OP_WAIT);
        w.u = ISA_U_SFP0, w.tok = KT_RING_TOKEN;
        isa_stream_push(&c->prog->cores[c->core], &w);
    }
    for (int t = 0; t < c->ncores; t++) {
        if (t == c->core || group_of(cons, t, c->ncores) != g) continue; /* t produced into g: its slot */
        kv slot = part;
        slot.lx = c->cfg->lx_bytes - (uint64_t)((t + 1) * bytes);
        isa_insn s;
        isa_insn_init(&s, isa_op);
        isa_set_off(&s.d, (int64_t)r->lx), isa_set_off(&s.a, (int64_t)r->lx), isa_set_off(&s.b, (int64_t)slot.lx);
        isa_set(&s, n[0], n), isa_set(&s, ds[0], sb), isa_set(&s, as[0], sb), isa_set(&s, bs[0], sb),
            isa_set(&s, t, kt_dtype(&part));
        isa_stream_push(&c->prog->cores[c->core], &s);
    }
    kt_push(c, ISA_OP_FENCE); /* every wait took its token: none is left at it */
    const ml_type *ty = ml_op_last_type(op);
    if (ty && ty->kind == ML_T_TENSOR) {
        r->rank = ty->rank;
        memcpy(r->shape, ty->shape, sizeof r->shape);
    }
}

/* scf.if %c [-> (types)] { then } [else { else }]: the branch the condition picks at compile time. */
static void op_if(kt_ctx *c, const ml_op *op)
{
    const kv *cond = kt_operand(c, op, 0);
    if (cond->kind != KV_INT) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: scf.if on a value computed on the chip");
    int from = 0;
    const ml_region *then = ml_op_region(op, &from), *els = ml_op_region(op, &from);
    const ml_region *rg = cond->i ? then : els;
    if (!rg) {
        if (op->nres) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "scf.if with results needs an else region");
        return;
    }
    const ml_op *y = NULL;
    kt_compile_block(c, &rg->blocks[0], &y);
    kv res[16];
    int k = 0;
    for (int i = 0; y && i < y->n && k < 16; i++)
        if (y->items[i].kind == ML_I_VALUE) res[k++] = *kt_lookup(c, &y->items[i]);
    if (k < op->nres) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "scf.yield gives %d values for %d results", k, op->nres);
    for (int i = 0; i < op->nres; i++) kt_bind(c, op->res[i], &res[i]);
}

/* Do two shapes put their values in the same sticks (same last dimension and rows)? */
static int same_sticks(int ra, const int64_t *a, int rb, const int64_t *b)
{
    int64_t rows_a = 1, rows_b = 1;
    for (int d = 0; d + 1 < ra; d++) rows_a *= a[d];
    for (int d = 0; d + 1 < rb; d++) rows_b *= b[d];
    return rows_a == rows_b && (ra ? a[ra - 1] : 1) == (rb ? b[rb - 1] : 1);
}

/* tensor.expand_shape / collapse_shape: the same values under another shape. */
static void op_reshape(kt_ctx *c, const ml_op *op, kv *r)
{
    *r = *kt_operand(c, op, 0);
    const ml_type *ty = ml_op_last_type(op);
    if (r->kind != KV_TENSOR || !ty || ty->kind != ML_T_TENSOR)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected a reshape of a tensor into a tensor type");
    if (r->splat) { /* a splat has no layout yet */
        r->rank = ty->rank;
        memcpy(r->shape, ty->shape, sizeof r->shape);
        return;
    }
    if (!r->moved) r->prank = r->rank, memcpy(r->pshape, r->shape, sizeof r->pshape);
    r->rank = ty->rank;
    memcpy(r->shape, ty->shape, sizeof r->shape);
    /* Values stay where they are: the tensor keeps its sticks' shape until a
     * reshape gives it back (elementwise ops do not mind the difference). */
    r->moved = !same_sticks(r->prank, r->pshape, r->rank, r->shape);
}

/* linalg.broadcast of a vector [N] into [R, C] along dimension 1 (row r
 * is x[r]: each row's sticks filled with one element, bm=elem walking x) or
 * 0 (every row is x: its sticks copied into each row). */
void kt_broadcast_vector(kt_ctx *c, const ml_op *op, kv *x, int dim, kv *r)
{
    int64_t sb = c->cfg->stick_bytes, rows = r->shape[0], cols = r->shape[1];
    if (x->shape[0] != (dim == 1 ? rows : cols) || x->f32 != r->f32)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "linalg.broadcast: the input does not fit the output");
    kt_need_layout(c, op, x);
    kt_materialize(c, op, x);
    int64_t groups = kt_sticks(r) / rows;
    r->splat = 0, r->moved = 0;
    r->lx = kt_lx_alloc(c, op, (uint64_t)(kt_sticks(r) * sb));
    isa_insn in;
    if (dim == 1) {
        uint64_t zero = kt_lx_alloc(c, op, (uint64_t)sb);
        kt_emit_fill(c, zero, 1, 0.0, kt_dtype(r));
        isa_insn_init(&in, ISA_OP_SFP_ADD);
        in.bm = ISA_BM_ELEM, isa_set_off(&in.a, (int64_t)zero), isa_set_off(&in.b, (int64_t)x->lx), in.bs[0] = kt_ebytes(r);
    } else {
        isa_insn_init(&in, ISA_OP_SFP_MOV);
        isa_set_off(&in.a, (int64_t)x->lx), isa_set(&in, as[1], sb);
    }
    isa_set(&in, t, kt_dtype(r)), isa_set_off(&in.d, (int64_t)r->lx);
    isa_set(&in, n[0], rows), isa_set(&in, ds[0], sb), isa_set(&in, n[1], groups), isa_set(&in, ds[1], rows * sb);
    kt_emit(c, &in);
}

/* linalg.broadcast: of a scalar tensor (rank 0) a splat of its element; of a vector, above. */
static void op_broadcast(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_item *ins = ml_op_keyword(op, "ins"), *outs = ml_op_keyword(op, "outs"), *dims = ml_op_keyword(op, "dimensions");
    if (!ins || ins->kind != ML_I_GROUP || !ins->n || !outs || outs->kind != ML_I_GROUP || !outs->n)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `linalg.broadcast ins(%%x) outs(%%y)`");
    kv x = *kt_lookup(c, &ins->items[0]), y = *kt_lookup(c, &outs->items[0]);
    if (x.kind != KV_TENSOR || y.kind != KV_TENSOR)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "linalg.broadcast needs tensors");
    *r = y, r->from_empty = 0;
    if (x.rank == 0) {
        if (x.splat == 1) r->splat = 1, r->f = x.f;
        else r->splat = 2, r->lx = x.lx;
        return;
    }
    int dim = -1;
    for (int i = 0; dims && dims->kind == ML_I_LIST && i < dims->n; i++)
        if (dims->items[i].kind == ML_I_ATTR && dims->items[i].attr->kind == ML_A_INT) dim = (int)dims->items[i].attr->i;
    if (x.rank != 1 || y.rank != 2 || (dim != 0 && dim != 1))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: linalg.broadcast other than a scalar, or a vector into a matrix");
    kt_broadcast_vector(c, op, &x, dim, r);
}

/* linalg.transpose of a matrix (permutation [1, 0]): sfp.rst moves each
 * element, one instruction per pair of row and column stick groups. */
static void op_transpose(kt_ctx *c, const ml_op *op, kv *r)
{
    const ml_item *ins = ml_op_keyword(op, "ins"), *perm = ml_op_keyword(op, "permutation");
    if (!ins || ins->kind != ML_I_GROUP || !ins->n) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `linalg.transpose ins(%%x)`");
    kv x = *kt_lookup(c, &ins->items[0]);
    int64_t p[2] = {-1, -1};
    int k = 0;
    for (int i = 0; perm && perm->kind == ML_I_LIST && i < perm->n && k < 2; i++)
        if (perm->items[i].kind == ML_I_ATTR && perm->items[i].attr->kind == ML_A_INT) p[k++] = perm->items[i].attr->i;
    if (x.kind != KV_TENSOR || x.rank != 2 || p[0] != 1 || p[1] != 0)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a transpose other than [1, 0] of a matrix");
    kt_need_layout(c, op, &x);
    kt_materialize(c, op, &x);
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(&x), lanes = sb / eb, rows = x.shape[0], cols = x.shape[1];
    *r = x, r->shape[0] = cols, r->shape[1] = rows;
    r->lx = kt_lx_alloc(c, op, (uint64_t)(kt_sticks(r) * sb));
    for (int64_t rg = 0; rg * lanes < rows; rg++)
        for (int64_t cg = 0; cg * lanes < cols; cg++) {
            isa_insn in;
            isa_insn_init(&in, ISA_OP_SFP_RST);
            isa_set(&in, t, kt_dtype(&x));
            isa_set_off(&in.a, (int64_t)x.lx + (cg * rows + rg * lanes) * sb); /* element (rg*L, cg*L) */
            isa_set_off(&in.d, (int64_t)r->lx + (rg * cols + cg * lanes) * sb); /* element (cg*L, rg*L) */
            isa_set(&in, n[0], rows - rg * lanes < lanes ? rows - rg * lanes : lanes), isa_set(&in, as[0], sb),
                isa_set(&in, ds[0], eb);
            isa_set(&in, vl, cols - cg * lanes < lanes ? cols - cg * lanes : lanes), isa_set(&in, bs[0], eb),
                isa_set(&in, bs[1], sb);
            kt_emit(c, &in);
        }
}

int kt_ring_op(kt_ctx *c, const ml_op *op, kv *r)
{
    const char *n = op->name;
    if (!strcmp(n, "ktdp.inter_tile_produce")) op_produce(c, op, r);
    else if (!strcmp(n, "ktdp.inter_tile_reduce")) op_reduce(c, op, r);
    else if (!strcmp(n, "scf.if")) op_if(c, op);
    else if (!strcmp(n, "tensor.expand_shape") || !strcmp(n, "tensor.collapse_shape")) op_reshape(c, op, r);
    else if (!strcmp(n, "linalg.broadcast")) op_broadcast(c, op, r);
    else if (!strcmp(n, "linalg.transpose")) op_transpose(c, op, r);
    else return 0;
    return 1;
}
