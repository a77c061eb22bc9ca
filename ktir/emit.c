/* ktir chip code: LX allocation and the instructions one KTIR op becomes
 * (DMA of access tiles, SFP fills). Every unit instruction is followed by
 * a fence: the ops of a core run in program order, no overlap yet. */
#include <stdio.h>
#include "internal.h"

#define KT_DL16_BYTES 2

uint64_t kt_lx_alloc(kt_ctx *c, const ml_op *op, uint64_t bytes)
{
    uint64_t at = c->lx_top, sb = c->cfg->stick_bytes;
    bytes = (bytes + sb - 1) / sb * sb;
    if (bytes > c->cfg->lx_bytes || at > c->cfg->lx_bytes - bytes)
        kt_fail(c, KT_EXIT_CHIP, op->line, op->col,
                "LX scratchpad overflow: core %d needs %llu bytes of LX at this op, the chip has %llu", c->core,
                (unsigned long long)(at + bytes), (unsigned long long)c->cfg->lx_bytes);
    c->lx_top = at + bytes;
    if (c->lx_top > c->lx_peak) c->lx_peak = c->lx_top;
    return at;
}

/* Sticks of a tensor in LX: the last dim in sticks of 64 DL16 values, times the other dims. */
int64_t kt_sticks(const kv *t)
{
    int64_t cols = t->rank ? t->shape[t->rank - 1] : 1, rows = 1;
    for (int i = 0; i + 1 < t->rank; i++) rows *= t->shape[i];
    return (cols + 63) / 64 * rows;
}

void kt_emit(kt_ctx *c, isa_insn *in)
{
    isa_stream *s = &c->prog->cores[c->core];
    isa_stream_push(s, in);
    isa_insn f;
    isa_insn_init(&f, ISA_OP_FENCE);
    isa_stream_push(s, &f);
}

void kt_emit_fill(kt_ctx *c, uint64_t lx, int64_t sticks, double value)
{
    isa_insn in;
    isa_insn_init(&in, ISA_OP_SFP_IOTA);
    in.d.off = (int64_t)lx, in.n[0] = sticks, in.ds[0] = c->cfg->stick_bytes;
    in.bs[0] = 0, in.bs[1] = 0, in.imm = (float)value;
    kt_emit(c, &in);
}

/* A splat tensor written out as a buffer in LX. */
void kt_materialize(kt_ctx *c, const ml_op *op, kv *t)
{
    if (t->kind != KV_TENSOR || t->splat == 0) return;
    int64_t n = kt_sticks(t);
    uint64_t lx = kt_lx_alloc(c, op, (uint64_t)n * c->cfg->stick_bytes);
    kt_emit_fill(c, lx, n, t->splat == 1 ? t->f : 0.0);
    if (t->splat == 2) {
        isa_insn in;
        isa_insn_init(&in, ISA_OP_SFP_ADD);
        in.bm = ISA_BM_ELEM;
        in.d.off = in.a.off = (int64_t)lx, in.b.off = (int64_t)t->lx;
        in.n[0] = n, in.ds[0] = in.as[0] = c->cfg->stick_bytes, in.bs[0] = 0;
        kt_emit(c, &in);
    }
    t->splat = 0, t->lx = lx;
}

/* The tile as rows x cols of its view (rank 1 is one row). */
static void tile_2d(const kv *tile, int64_t *vr, int64_t *vc, int64_t *r0, int64_t *c0, int64_t *h, int64_t *w)
{
    int r = tile->vrank;
    *vc = tile->vshape[r - 1], *c0 = tile->off[r - 1], *w = tile->shape[tile->rank - 1];
    *vr = r > 1 ? tile->vshape[0] : 1, *r0 = r > 1 ? tile->off[0] : 0, *h = r > 1 ? tile->shape[0] : 1;
}

/* ktdp.load (store = 0) or ktdp.store of an access tile to/from the LX buffer at lx. */
void kt_dma_tile(kt_ctx *c, const ml_op *op, const kv *tile, uint64_t lx, int store)
{
    int64_t vr, vc, r0, c0, h, w, sb = c->cfg->stick_bytes, lanes = sb / KT_DL16_BYTES;
    tile_2d(tile, &vr, &vc, &r0, &c0, &h, &w);
    if (c0 % lanes != 0 || (w % lanes != 0 && c0 + w != vc))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                "not supported: an access tile whose columns [%lld, %lld) do not start on a stick of %lld values "
                "or end on one or at the row's end",
                (long long)c0, (long long)(c0 + w), (long long)lanes);
    if (h > 65535 || (w + lanes - 1) / lanes > 65535)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: an access tile of more than 65535 rows or sticks");
    const isa_tensor *t = &c->prog->tensors[c->tensors[tile->tensor].index];
    c->hbm_bytes += (double)h * (double)w * KT_DL16_BYTES;
    int64_t dram = (int64_t)t->dram_off + ((c0 / lanes) * vr + r0) * sb;
    isa_insn in;
    isa_insn_init(&in, store ? ISA_OP_DMA_ST : ISA_OP_DMA_LD);
    in.run = h, in.n[0] = (w + lanes - 1) / lanes;
    if (store) {
        in.d.off = dram, in.a.off = (int64_t)lx, in.ds[0] = vr * sb, in.as[0] = h * sb;
    } else {
        in.d.off = (int64_t)lx, in.a.off = dram, in.ds[0] = h * sb, in.as[0] = vr * sb;
    }
    kt_emit(c, &in);
}
