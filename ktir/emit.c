/* ktir chip code: LX allocation and the instructions one KTIR op becomes
 * (DMA of access tiles, SFP fills). Every unit instruction is followed by
 * a fence: the ops of a core run in program order, no overlap yet. */
#include <stdio.h>
#include "internal.h"


uint64_t kt_lx_alloc(kt_ctx *c, const ml_op *op, uint64_t bytes)
{
    uint64_t at = c->lx_top, sb = c->cfg->stick_bytes, ring = (uint64_t)c->ncores * (uint64_t)c->ring_slot;
    uint64_t lx = c->cfg->lx_bytes > ring ? c->cfg->lx_bytes - ring : 0; /* ring slots at the top */
    bytes = (bytes + sb - 1) / sb * sb;
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
}

void kt_emit(kt_ctx *c, isa_insn *in)
{
    isa_stream_push(&c->prog->cores[c->core], in);
    kt_push(c, ISA_OP_FENCE);
}

void kt_emit_fill(kt_ctx *c, uint64_t lx, int64_t sticks, double value, int dtype)
{
    isa_insn in;
    isa_insn_init(&in, ISA_OP_SFP_IOTA);
    in.t = dtype;
    in.d.off = (int64_t)lx, in.n[0] = sticks, in.ds[0] = c->cfg->stick_bytes;
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
        in.t = kt_dtype(t);
        in.bm = ISA_BM_ELEM;
        in.d.off = in.a.off = (int64_t)lx, in.b.off = (int64_t)t->lx;
        in.n[0] = n, in.ds[0] = in.as[0] = c->cfg->stick_bytes, in.bs[0] = 0;
        kt_emit(c, &in);
    }
    t->splat = 0, t->lx = lx;
}

/* ktdp.load (store = 0) or ktdp.store of an access tile to/from the LX
 * buffer at lx.  HBM is flat (element e of a pointer's tensor is at stick
 * e / lanes); the tile's row r, stick g goes to LX stick g * h + r. */
void kt_dma_tile(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx, int store)
{
    int64_t sb = c->cfg->stick_bytes, eb = kt_ebytes(tile), lanes = sb / eb, two = tile->vrank == 2;
    int64_t r0 = two ? tile->off[0] : 0, c0 = tile->off[tile->vrank - 1];
    int64_t hf = two ? tile->shape[0] : 1; /* rows of the LX layout */
    /* A tile of a dynamic view is clipped to it (ktir-cpu masks the rest);
     * a static view's tiles were checked to lie inside. */
    int64_t h = hf < tile->vshape[0] - r0 || !two ? hf : tile->vshape[0] - r0;
    int64_t w = tile->shape[tile->rank - 1], vc = tile->vshape[tile->vrank - 1];
    if (w > vc - c0) w = vc - c0;
    if (h <= 0 || w <= 0) return;
    int64_t groups = (w + lanes - 1) / lanes, first = tile->i + r0 * tile->stride + c0;
    const kt_tensor *kt = &c->tensors[tile->tensor];
    if (first % lanes != 0 || (h > 1 && tile->stride % lanes != 0))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                "not supported: an access tile whose rows do not start on a stick of %lld values (element %lld, row "
                "stride %lld)", (long long)lanes, (long long)first, (long long)tile->stride);
    if (store && w % lanes != 0 && c->final && !(h == 1 && first + w == kt->extent))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                "not supported: a store of %lld values per row: the chip writes whole sticks of %lld, which would "
                "overwrite the values after them", (long long)w, (long long)lanes);
    if (h > 65535 || groups > 65535)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an access tile of more than 65535 rows or sticks");
    c->hbm_bytes += (double)h * (double)w * (double)eb;
    int64_t dram = (c->final ? (int64_t)c->prog->tensors[kt->index].dram_off : 0) + first / lanes * sb;
    int64_t lx_g = hf * sb, lx_r = sb, dr_g = sb, dr_r = tile->stride * eb;
    isa_insn in;
    isa_insn_init(&in, store ? ISA_OP_DMA_ST : ISA_OP_DMA_LD);
    if (hf == 1) { /* one row: its sticks are contiguous on both sides */
        in.run = groups;
    } else {
        in.n[0] = groups, in.n[1] = h;
        in.ds[0] = store ? dr_g : lx_g, in.as[0] = store ? lx_g : dr_g;
        in.ds[1] = store ? dr_r : lx_r, in.as[1] = store ? lx_r : dr_r;
    }
    in.d.off = store ? dram : (int64_t)lx, in.a.off = store ? (int64_t)lx : dram;
    kt_emit(c, &in);
}
