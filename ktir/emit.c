/* ktir chip code: LX allocation and the instructions one KTIR op becomes
 * (DMA of access tiles, SFP fills).  A core's instructions are ordered by
 * fences: one before every instruction whose unit differs from the last
 * one's, since it may read what that unit wrote; a unit runs its own queue
 * in order, so a run of instructions on one unit needs none.  Within a loop
 * iteration every buffer is fresh (nothing is overwritten while another
 * unit reads it); the iteration ends with a fence before its LX is reused. */
#include <stdio.h>
#include <string.h>
#include "internal.h"


uint64_t kt_lx_alloc(kt_ctx *c, const ml_op *op, uint64_t bytes)
{
    uint64_t sb = c->cfg->stick_bytes, top = (uint64_t)c->ncores * (uint64_t)c->ring_slot + c->stage_bytes + c->land_bytes;
    uint64_t lx = c->cfg->lx_bytes > top ? c->cfg->lx_bytes - top : 0; /* ring slots, staged sticks, landing at the top */
    bytes = (bytes + sb - 1) / sb * sb;
    uint64_t at = kt_lx_skip(c, c->lx_top, bytes); /* not over a ct_local view's data */
    if (bytes > lx || at > lx - bytes)
        kt_fail(c, KT_EXIT_CHIP, op->line, op->col,
                "LX scratchpad overflow: core %d needs %llu bytes of LX at this op, the chip has %llu", c->core,
                (unsigned long long)(at + bytes), (unsigned long long)c->cfg->lx_bytes);
    c->lx_top = at + bytes;
    if (c->lx_top > c->lx_peak) c->lx_peak = c->lx_top;
    return at;
}

int kt_ebytes(const kv *t) { return t->f32 ? 4 : 2; }

int kt_dtype(const kv *t) { return t->f32 ? ISA_T_F32 : ISA_T_DL16; }

/* Sticks of a tensor in LX: the last dim in sticks of 64 DL16 (32 fp32) values, times the other dims. */
int64_t kt_sticks(const kv *t)
{
    int64_t cols = t->rank ? t->shape[t->rank - 1] : 1, rows = 1, lanes = 128 / kt_ebytes(t);
    for (int i = 0; i + 1 < t->rank; i++) rows *= t->shape[i];
    return (cols + lanes - 1) / lanes * rows;
}

void kt_push(kt_ctx *c, int op)
{
    isa_insn in;
    isa_insn_init(&in, op);
    isa_stream_push(&c->prog->cores[c->core], &in);
    if (op == ISA_OP_FENCE || op == ISA_OP_BAR) c->last_unit = -1; /* every unit idle past it */
}

void kt_emit(kt_ctx *c, isa_insn *in)
{
    int u = (int)isa_insn_unit(in);
    if (c->last_unit >= 0 && c->last_unit != u) kt_push(c, ISA_OP_FENCE);
    isa_stream_push(&c->prog->cores[c->core], in);
    c->last_unit = u;
}

void kt_emit_fill(kt_ctx *c, uint64_t lx, int64_t sticks, double value, int dtype)
{
    isa_insn in;
    isa_insn_init(&in, ISA_OP_SFP_IOTA);
    isa_set(&in, t, dtype);
    isa_set_off(&in.d, (int64_t)lx), isa_set(&in, n[0], sticks), isa_set(&in, ds[0], c->cfg->stick_bytes);
    in.bs[0] = 0, in.bs[1] = 0, in.imm = (float)value;
    kt_emit(c, &in);
}

void kt_need_layout(kt_ctx *c, const ml_op *op, const kv *t)
{
    if (t->kind == KV_TENSOR && t->moved)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                "not supported: %s of a tensor reshaped across sticks (only elementwise ops and ring reductions "
                "take one)", op->name);
}

/* A splat tensor written out as a buffer in LX. */
void kt_materialize(kt_ctx *c, const ml_op *op, kv *t)
{
    if (t->kind != KV_TENSOR || t->splat == 0) return;
    int64_t n = kt_sticks(t);
    uint64_t lx = kt_lx_alloc(c, op, (uint64_t)n * c->cfg->stick_bytes);
    kt_emit_fill(c, lx, n, t->splat == 1 ? t->f : 0.0, kt_dtype(t));
    if (t->splat == 2) {
        isa_insn in;
        isa_insn_init(&in, ISA_OP_SFP_ADD);
        isa_set(&in, t, kt_dtype(t));
        in.bm = ISA_BM_ELEM;
        isa_set_off(&in.d, (int64_t)lx), isa_set_off(&in.a, (int64_t)lx), isa_set_off(&in.b, (int64_t)t->lx);
        isa_set(&in, n[0], n), isa_set(&in, ds[0], c->cfg->stick_bytes), isa_set(&in, as[0], c->cfg->stick_bytes),
            isa_set(&in, bs[0], 0);
        kt_emit(c, &in);
    }
    t->splat = 0, t->lx = lx;
}

/* Element moves between a tile's layout at lx (row r, stick group g at
 * (g * hf + r) sticks) and its h x w values laid flat from element `flat`
 * of the buffer at `at` with `pitch` elements a row; to_tile says which way. */
static void restick(kt_ctx *c, uint64_t lx, int64_t hf, int64_t lane0, uint64_t at, int64_t flat, int64_t pitch, int64_t h,
                    int64_t w, int eb, int dtype, int to_tile)
{
    int64_t sb = c->cfg->stick_bytes, lanes = sb / eb, full = w / lanes;
    for (int part = 0; part < 2; part++) {
        int64_t groups = part ? (w % lanes != 0) : full, g0 = part ? full : 0;
        if (!groups) continue;
        isa_insn in;
        isa_insn_init(&in, ISA_OP_SFP_RST);
        isa_set(&in, t, dtype), isa_set(&in, vl, part ? w % lanes : lanes), isa_set(&in, bs[0], eb), isa_set(&in, bs[1], eb);
        int64_t t_off = (int64_t)lx + g0 * hf * sb + lane0 * eb, f_off = (int64_t)at + (flat + g0 * lanes) * eb;
        int64_t t_r = sb, t_g = hf * sb, f_r = pitch * eb, f_g = lanes * eb;
        isa_set(&in, n[0], h), isa_set(&in, n[1], groups);
        isa_set_off(&in.a, to_tile ? f_off : t_off), isa_set_off(&in.d, to_tile ? t_off : f_off);
        isa_set(&in, as[0], to_tile ? f_r : t_r), isa_set(&in, ds[0], to_tile ? t_r : f_r);
        isa_set(&in, as[1], to_tile ? f_g : t_g), isa_set(&in, ds[1], to_tile ? t_g : f_g);
        kt_emit(c, &in);
    }
}

/* The span's sticks that are staged (stage.c) copied between the flat
 * buffer and their local copies: before the tile goes in (to_flat, so this
 * core's earlier elements stay) and after. */
static int copy_staged(kt_ctx *c, int tensor, int64_t stick0, int64_t nst, uint64_t flat, int to_flat)
{
    int64_t sb = c->cfg->stick_bytes;
    int any = 0;
    for (int64_t j = 0; c->final && c->nstaged && j < nst; j++) {
        int i = kt_stage_index(c, tensor, stick0 + j);
        if (i < 0) continue;
        uint64_t local = kt_stage_base(c) + (uint64_t)i * (uint64_t)sb, at = flat + (uint64_t)(j * sb);
        isa_insn in;
        isa_insn_init(&in, ISA_OP_DMA_LX);
        in.run = 1, isa_set_off(&in.d, (int64_t)(to_flat ? at : local)), isa_set_off(&in.a, (int64_t)(to_flat ? local : at));
        kt_emit(c, &in);
        any = 1;
    }
    return any;
}

/* The span's sticks from the flat buffer to DRAM, in runs that leave out the staged ones. */
static void store_unstaged(kt_ctx *c, int tensor, int64_t stick0, int64_t nst, uint64_t flat, int64_t dram, int staged)
{
    int64_t sb = c->cfg->stick_bytes;
    for (int64_t j = 0; j < nst;) {
        if (staged && kt_stage_index(c, tensor, stick0 + j) >= 0) { j++; continue; }
        int64_t e = j + 1;
        while (e < nst && !(staged && kt_stage_index(c, tensor, stick0 + e) >= 0)) e++;
        isa_insn in;
        isa_insn_init(&in, ISA_OP_DMA_ST);
        isa_set(&in, run, e - j), isa_set_off(&in.d, dram + j * sb), isa_set_off(&in.a, (int64_t)flat + j * sb);
        kt_emit(c, &in);
        j = e;
    }
}

/* A tile whose rows do not start on sticks: its whole span of sticks in
 * HBM moves as one contiguous DMA through a flat LX buffer, and sfp.rst
 * moves the elements.  The chip writes whole sticks, so a store whose span
 * holds other data reads the span first and writes it back with the tile
 * in it: right on one core; the sticks several cores store parts of are
 * staged instead (stage.c). */
static void dma_span(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx, int store, int64_t first, int64_t hf,
                     int64_t h, int64_t w, int64_t extent, int64_t lane0)
{
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(tile), lanes = sb / eb, s = first % lanes;
    int64_t last = first + (h - 1) * tile->stride + w - 1, nst = last / lanes - first / lanes + 1;
    int merge = store && !(s == 0 && (h == 1 || w == tile->stride) && ((last + 1) % lanes == 0 || last + 1 == extent));
    if (nst > 65535) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an access tile spanning more than 65535 sticks");
    uint64_t mark = c->lx_top, flat = kt_lx_alloc(c, op, (uint64_t)(nst * sb));
    int64_t dram = (c->final ? (int64_t)c->prog->tensors[c->tensors[tile->tensor].index].dram_off : 0) + first / lanes * sb;
    isa_insn in;
    if (merge) { /* read the sticks the store shares with other data */
        isa_insn_init(&in, ISA_OP_DMA_LD);
        isa_set(&in, run, nst), isa_set_off(&in.d, (int64_t)flat), isa_set_off(&in.a, dram);
        kt_emit(c, &in);
    }
    int staged = store && copy_staged(c, tile->tensor, first / lanes, nst, flat, 1);
    if (store) restick(c, lx, hf, lane0, flat, s, tile->stride, h, w, (int)eb, kt_dtype(tile), 0);
    if (staged) copy_staged(c, tile->tensor, first / lanes, nst, flat, 0);
    if (store) {
        store_unstaged(c, tile->tensor, first / lanes, nst, flat, dram, staged);
    } else {
        isa_insn_init(&in, ISA_OP_DMA_LD);
        isa_set(&in, run, nst), isa_set_off(&in.d, (int64_t)flat), isa_set_off(&in.a, dram);
        kt_emit(c, &in);
        restick(c, lx, hf, lane0, flat, s, tile->stride, h, w, (int)eb, kt_dtype(tile), 1);
    }
    c->lx_top = mark; /* free again: a later writer on another unit fences first, one on the same unit queues behind */
}

/* One access tile (or a distributed tile's piece in one partition) between
 * HBM and the tile's LX layout at lx (hf rows), its values placed from
 * layout row ro and column co.  HBM is flat (element e of a pointer's
 * tensor is at stick e / lanes); the tile's row r, stick g goes to LX stick
 * g * hf + r. */
static void dma_piece(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx, int64_t hf, int64_t ro, int64_t co,
                      int store)
{
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(tile), lanes = sb / eb, two = tile->vrank == 2;
    int64_t r0 = two ? tile->off[0] : 0, c0 = tile->off[tile->vrank - 1];
    /* A tile of a dynamic view is clipped to it (ktir-cpu masks the rest);
     * a static view's tiles were checked to lie inside. */
    int64_t h = two ? tile->shape[0] : 1;
    if (two && h > tile->vshape[0] - r0) h = tile->vshape[0] - r0;
    int64_t w = tile->shape[tile->rank - 1], vc = tile->vshape[tile->vrank - 1];
    if (w > vc - c0) w = vc - c0;
    if (h <= 0 || w <= 0) return;
    int64_t groups = (w + lanes - 1) / lanes, first = tile->i + r0 * tile->stride + c0;
    const kt_tensor *kt = &c->tensors[tile->tensor];
    uint64_t at = lx + (uint64_t)(((co / lanes) * hf + ro) * sb);
    int64_t last = (first + (h - 1) * tile->stride + w - 1) / lanes;
    if (!store) kt_stage_note_load(c, tile->tensor, first / lanes, last);
    if (store) kt_stage_note_store(c, tile->tensor, first, tile->stride, h, w, lanes);
    c->hbm_bytes += (double)h * (double)w * (double)eb;
    int later = store ? kt_stage_dead_store(c, tile->tensor, first, tile->stride, h, w, lanes) : -1;
    if (later >= 0) { /* overwritten whole by a later core (stage.c) */
        if (!c->note[0])
            snprintf(c->note, sizeof c->note, "%s:%d:%d: note: ktdp.store of core %d dropped: core %d stores the same "
                     "sticks after it in core order (as ktir-cpu runs the cores) and no core loads them", c->m->file,
                     op->line, op->col, c->core, later);
        return;
    }
    /* A store touching a staged stick goes through the flat buffer, which keeps this core's copy of it. */
    if (co % lanes != 0 || first % lanes != 0 || (h > 1 && tile->stride % lanes != 0) ||
        (store && w % lanes != 0 && !(h == 1 && first + w == kt->extent)) ||
        (store && kt_stage_any(c, tile->tensor, first / lanes, last))) {
        if (co % lanes != 0 && co % lanes + w > lanes)
            kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a piece of a distributed tile that crosses a stick of the tile");
        dma_span(c, op, tile, at, store, first, hf, h, w, c->final ? kt->extent : first + (h - 1) * tile->stride + w,
                 co % lanes);
        return;
    }
    if (h > 65535 || groups > 65535)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an access tile of more than 65535 rows or sticks");
    int64_t dram = (c->final ? (int64_t)c->prog->tensors[kt->index].dram_off : 0) + first / lanes * sb;
    int64_t lx_g = hf * sb, lx_r = sb, dr_g = sb, dr_r = tile->stride * eb;
    isa_insn in;
    isa_insn_init(&in, store ? ISA_OP_DMA_ST : ISA_OP_DMA_LD);
    if (hf == 1) { /* one row: its sticks are contiguous on both sides */
        isa_set(&in, run, groups);
    } else {
        isa_set(&in, n[0], groups), isa_set(&in, n[1], h);
        isa_set(&in, ds[0], store ? dr_g : lx_g), isa_set(&in, as[0], store ? lx_g : dr_g);
        isa_set(&in, ds[1], store ? dr_r : lx_r), isa_set(&in, as[1], store ? lx_r : dr_r);
    }
    isa_set_off(&in.d, store ? dram : (int64_t)at), isa_set_off(&in.a, store ? (int64_t)at : dram);
    kt_emit(c, &in);
}

/* A tile of a view of rank 3 or more as the 2-D tiles it is in memory:
 * its leading dimensions of more than one element are rows; the innermost
 * of them that are evenly spaced (each taking whole rows of the next) are
 * one dimension of rows, and each combination of the outer ones is a piece
 * of its own (a query tile of 2 tokens x 4 heads: two pieces of 4 rows),
 * its rows placed after the earlier pieces' (the LX layout is row-major). */
static void dma_rows(kt_ctx *c, const ml_op *op, const kv *t, uint64_t lx, int64_t hf, int store)
{
    int n = t->vrank, dims[ML_MAX_RANK], nd = 0, split;
    kv m = *t;
    m.vrank = m.rank = 2, m.off[0] = 0, m.off[1] = t->off[n - 1];
    m.shape[0] = 1, m.shape[1] = t->shape[n - 1], m.vshape[1] = t->vshape[n - 1], m.stride = 1;
    for (int d = 0; d + 1 < n; d++) {
        m.i += t->off[d] * t->vstr[d];
        if (t->shape[d] > 1) dims[nd++] = d;
    }
    for (split = nd; split > 0; split--) { /* dims[split-1 ..] evenly spaced */
        int d = dims[split - 1];
        if (split < nd && t->vstr[d] != t->shape[dims[split]] * t->vstr[dims[split]]) break;
        m.shape[0] *= t->shape[d];
    }
    if (nd) m.stride = t->vstr[dims[nd - 1]]; /* the innermost row dimension's */
    m.vshape[0] = m.shape[0];
    int64_t pieces = 1, at[ML_MAX_RANK] = {0};
    for (int k = 0; k < split; k++) pieces *= t->shape[dims[k]];
    if (pieces > 4096) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a tile of more than 4096 row pieces");
    for (int64_t p = 0; p < pieces; p++) {
        kv q = m;
        for (int k = 0; k < split; k++) q.i += at[dims[k]] * t->vstr[dims[k]];
        dma_piece(c, op, &q, lx, hf, p * m.shape[0], 0, store);
        for (int k = split - 1; k >= 0 && ++at[dims[k]] == t->shape[dims[k]]; k--) at[dims[k]] = 0;
    }
}

/* A piece of a tile between its memory and LX: HBM by DMA, a ct_local view's LX (loads only) by lxview.c. */
static void move_piece(kt_ctx *c, const ml_op *op, const kv *p, uint64_t lx, int64_t hf, int64_t ro, int64_t co, int store)
{
    if (c->tensors[p->tensor].lx_core < 0) {
        dma_piece(c, op, p, lx, hf, ro, co, store);
        return;
    }
    if (store) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a store to a ct_local memory view");
    kt_lx_load(c, op, p, lx, hf, ro, co);
}

/* ktdp.load (store = 0) or ktdp.store of an access tile to/from the LX
 * buffer at lx; a tile of a distributed view moves piece by piece, each
 * from the partition that holds it. */
void kt_dma_tile(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx, int store)
{
    if (tile->perm) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an access_tile_order other than the identity");
    if (tile->indirect) {
        (store ? kt_gather_store : kt_gather_load)(c, op, tile, lx);
        return;
    }
    int64_t hf = 1;
    for (int d = 0; d + 1 < tile->rank; d++) hf *= tile->shape[d];
    if (!tile->dist && tile->vrank > 2) {
        if (tile->dynamic) kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a dynamic view of rank %d", tile->vrank);
        dma_rows(c, op, tile, lx, hf, store);
        return;
    }
    if (!tile->dist) {
        move_piece(c, op, tile, lx, hf, 0, 0, store);
        return;
    }
    const kt_dview *d = &c->dviews[tile->i];
    for (int p = 0; p < d->n; p++) {
        const kv *v = &d->parts[p];
        kv piece = {.kind = KV_TILE, .tensor = v->tensor, .rank = v->rank, .vrank = v->rank, .i = v->i,
                    .stride = v->stride, .f32 = v->f32};
        memcpy(piece.vstr, v->vstr, sizeof piece.vstr);
        int64_t at[2] = {0, 0};
        int empty = v->rank != tile->rank;
        for (int k = 0; !empty && k < v->rank; k++) {
            int64_t lo = tile->off[k] > v->off[k] ? tile->off[k] : v->off[k];
            int64_t hi_t = tile->off[k] + tile->shape[k], hi_v = v->off[k] + v->shape[k];
            int64_t hi = hi_t < hi_v ? hi_t : hi_v;
            empty = hi <= lo;
            piece.off[k] = lo - v->off[k], piece.shape[k] = hi - lo, piece.vshape[k] = v->shape[k];
            at[k] = lo - tile->off[k];
        }
        if (!empty) move_piece(c, op, &piece, lx, hf, v->rank == 2 ? at[0] : 0, at[v->rank - 1], store);
    }
}
