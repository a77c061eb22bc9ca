/* exec.c: what each unit instruction does to LX and DRAM (the values).
 * Bounds and alignment are checked for a whole instruction before it
 * touches memory, so a faulting instruction changes nothing. */
#include "internal.h"

#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t lo, hi; /* byte range [lo, hi) */
} span;

/* Range touched by `unit` bytes at base + sum(i_l * stride_l), i_l < n_l. */
static span extent(int64_t base, int levels, const int32_t *n, const int32_t *stride, int64_t unit)
{
    span r = {base, base + unit};
    for (int l = 0; l < levels; l++) {
        int64_t step = ((int64_t)n[l] - 1) * stride[l]; /* (widened first: an unchecked program's count may be INT32_MIN) */
        if (step < 0)
            r.lo += step;
        else
            r.hi += step;
    }
    return r;
}

/* in's loop counts as extent and race_sticks take them (the fields are
 * 16-bit; the other counts they take are not). */
typedef struct {
    int32_t v[ISA_MAX_LOOPS];
} counts;
static counts counts_of(const isa_insn *in) { return (counts){{in->n[0], in->n[1], in->n[2], in->n[3]}}; }

static const char *unit_name(int u) { return u < ISA_NUNITS ? isa_unit_names[u] : "seq"; }

static int check_lx(sim *s, sim_core *c, const sim_slot *e, int u, const char *opnd, span r)
{
    if (r.lo < 0 || (uint64_t)r.hi > s->cfg.lx_bytes)
        return sim_faultf(s, c->id, u, e->index,
                          "%s: LX access [0x%" PRIx64 ", 0x%" PRIx64 ") of operand %s is outside LX (0x%" PRIx64 " bytes)",
                          isa_info(e->in->op)->mnemonic, (uint64_t)r.lo, (uint64_t)r.hi, opnd, s->cfg.lx_bytes);
    if ((uint64_t)r.hi > c->lx_peak)
        c->lx_peak = (uint64_t)r.hi;
    return 0;
}

static int check_dram(sim *s, sim_core *c, const sim_slot *e, int u, const char *opnd, span r)
{
    if (r.lo < 0 || (uint64_t)r.hi > s->seg_bytes)
        return sim_faultf(s, c->id, u, e->index,
                          "%s: DRAM access [0x%" PRIx64 ", 0x%" PRIx64 ") of operand %s is outside the program's segment (0x%" PRIx64 " bytes)",
                          isa_info(e->in->op)->mnemonic, (uint64_t)r.lo, (uint64_t)r.hi, opnd, s->seg_bytes);
    return 0;
}

/* Device address of segment offset off: the weights region holds
 * [0, weight_bytes), the activation region the rest. */
static uint64_t dram_addr(const sim *s, int64_t off)
{
    uint64_t o = (uint64_t)off;
    return o < s->weight_bytes ? s->weights_base + o : s->act_base + (o - s->weight_bytes);
}

/* The DRAM operand of a DMA whose pieces (`run` bytes at base + sum(i_l *
 * stride_l)) span r, already inside the segment: no piece may straddle the
 * end of the weights region, and a store may not write the weights. */
static int check_regions(sim *s, sim_core *c, const sim_slot *e, int u, const char *opnd, span r, int store,
                         int64_t base, const int32_t *stride, int64_t run)
{
    const int64_t wb = (int64_t)s->weight_bytes;
    const isa_insn *in = e->in;
    if (r.lo >= wb)
        return 0; /* all activations (and every program without weights) */
    if (r.hi <= wb && !store)
        return 0; /* all weights, read */
    for (int64_t i3 = 0; i3 < in->n[3]; i3++)
        for (int64_t i2 = 0; i2 < in->n[2]; i2++)
            for (int64_t i1 = 0; i1 < in->n[1]; i1++)
                for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                    int64_t lo = base + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3];
                    if (lo < wb && lo + run > wb)
                        return sim_faultf(s, c->id, u, e->index,
                                          "%s: DRAM piece [0x%" PRIx64 ", 0x%" PRIx64 ") of operand %s straddles the end of "
                                          "the weights region (0x%" PRIx64 " bytes); a piece lies in one region",
                                          isa_info(in->op)->mnemonic, (uint64_t)lo, (uint64_t)(lo + run), opnd,
                                          (uint64_t)wb);
                    if (lo < wb && store)
                        return sim_faultf(s, c->id, u, e->index,
                                          "%s: DRAM write [0x%" PRIx64 ", 0x%" PRIx64 ") of operand %s lies in the "
                                          "weights region [0, 0x%" PRIx64 "), which is read-only",
                                          isa_info(in->op)->mnemonic, (uint64_t)lo, (uint64_t)(lo + run), opnd,
                                          (uint64_t)wb);
                }
    return 0;
}

/* x % align != 0 (align > 0), by a mask when align is a power of two, as
 * every alignment the chip's configuration gives is: a 64-bit division
 * takes tens of cycles, and a DMA checked ten of them. */
static inline int misaligned(int64_t x, int64_t align)
{
    return (align & (align - 1)) == 0 ? (x & (align - 1)) != 0 : x % align != 0;
}

/* Every address and stride given must be a multiple of `align`. */
static int check_align(sim *s, sim_core *c, const sim_slot *e, int u, const char *opnd, int64_t base,
                       int levels, const int32_t *stride, int64_t align)
{
    int bad = misaligned(base, align);
    for (int l = 0; l < levels; l++)
        bad |= misaligned(stride[l], align);
    if (bad)
        return sim_faultf(s, c->id, u, e->index, "%s: operand %s is not aligned to %" PRId64 " bytes (address 0x%" PRIx64 ")",
                          isa_info(e->in->op)->mnemonic, opnd, align, (uint64_t)base);
    return 0;
}

/* ---- DMA and ring copies ---- */

/* Out of line: GCC lays out the rest of sim_exec (the ring copies and PT
 * products, most of a GEMM's executed instructions) in fewer instructions
 * without it (25 k fewer a timing-only launch of the 1024^3 GEMM). */
static __attribute__((noinline)) int exec_dma(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    const int64_t sb = s->cfg.stick_bytes, run = in->run * sb;
    span ds = extent(e->d, ISA_MAX_LOOPS, counts_of(in).v, in->ds, run);
    span as = extent(e->a, ISA_MAX_LOOPS, counts_of(in).v, in->as, run);
    if (check_align(s, c, e, u, "d", e->d, ISA_MAX_LOOPS, in->ds, sb) ||
        check_align(s, c, e, u, "a", e->a, ISA_MAX_LOOPS, in->as, sb))
        return -1;
    int d_dram = in->op == ISA_OP_DMA_ST, a_dram = in->op == ISA_OP_DMA_LD;
    if ((d_dram ? check_dram : check_lx)(s, c, e, u, "d", ds) ||
        (a_dram ? check_dram : check_lx)(s, c, e, u, "a", as))
        return -1;
    if ((d_dram && check_regions(s, c, e, u, "d", ds, 1, e->d, in->ds, run)) ||
        (a_dram && check_regions(s, c, e, u, "a", as, 0, e->a, in->as, run)))
        return -1;
    const int values = s->opt.values;
    /* a store of products' results may wait for them on their worker */
    sim_pt_store *later = d_dram && values ? sim_pt_store_begin(s, c->id, (uint64_t)as.lo, (uint64_t)as.hi) : NULL;
    if (!d_dram)
        sim_pt_fence(s, c->id, (uint64_t)ds.lo, (uint64_t)ds.hi, 1);
    if (!a_dram && !later)
        sim_pt_fence(s, c->id, (uint64_t)as.lo, (uint64_t)as.hi, 0);
    sim_dma_timer dt;
    sim_dma_begin(s, &dt, tm->start);
    uint64_t bytes = 0;
    for (int64_t i3 = 0; i3 < in->n[3]; i3++)
        for (int64_t i2 = 0; i2 < in->n[2]; i2++)
            for (int64_t i1 = 0; i1 < in->n[1]; i1++)
                for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                    int64_t d = e->d + i0 * in->ds[0] + i1 * in->ds[1] + i2 * in->ds[2] + i3 * in->ds[3];
                    int64_t a = e->a + i0 * in->as[0] + i1 * in->as[1] + i2 * in->as[2] + i3 * in->as[3];
                    uint64_t da = dram_addr(s, a_dram ? a : d);
                    if (a_dram || d_dram)
                        sim_dma_piece(s, &dt, da, (uint64_t)run, d_dram);
                    if (sim_race_active(s)) {
                        sim_race_access(s, c, u, e->index, a_dram ? -1 : c->id,
                                        a_dram ? da : (uint64_t)a, (a_dram ? da : (uint64_t)a) + (uint64_t)run, 0);
                        sim_race_access(s, c, u, e->index, d_dram ? -1 : c->id,
                                        d_dram ? da : (uint64_t)d, (d_dram ? da : (uint64_t)d) + (uint64_t)run, 1);
                    }
                    if (values) {
                        if (a_dram)
                            sim_dram_copy_out(s, da, c->lx + d, (size_t)run);
                        else if (later)
                            sim_pt_store_piece(s, later, da, (uint64_t)a, (size_t)run);
                        else if (d_dram)
                            sim_dram_copy_in(s, da, c->lx + a, (size_t)run);
                        else
                            memmove(c->lx + d, c->lx + a, (size_t)run);
                    }
                    bytes += (uint64_t)run;
                }
    if (later)
        sim_pt_store_end(s, later);
    if (a_dram)
        s->st->dram_bytes_read += bytes;
    if (d_dram)
        s->st->dram_bytes_written += bytes;
    if (a_dram || d_dram) {
        tm->dram_bytes = bytes;
        tm->end = sim_dma_end(s, c, &dt, tm->start, d_dram);
        tm->busy_end = dt.issue; /* the engine moves on once the last piece is issued */
    } else {
        tm->end = sim_time_lx_copy(s, tm->start, bytes);
    }
    return 0;
}

/* The first stand-in row in [0, rows) for the indices at LX byte b of
 * core `core` when values are off: a fixed hash (splitmix64's finaliser)
 * of both, so the same index slot reads the same row at every launch and
 * on every host. */
static int64_t stand_in_row(int core, uint64_t b, int64_t rows)
{
    uint64_t z = ((uint64_t)core << 48 ^ b) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (int64_t)((z ^ (z >> 31)) % (uint64_t)rows);
}

/* The fp32 row numbers of a dma.gather or dma.scatter, each checked to be
 * an integer in [0, rows) before anything moves; with values off
 * (--no-values) LX holds no indices: they are consecutive rows from a
 * stand-in start (stand_in_row), as the positions a cache update writes
 * are, and a prompt's token ids land anywhere in the table.  Were every
 * one row 0, every core's gather would queue on one DRAM channel
 * (embed_small ran 1,993 cycles timing only against 1,261 with its ids;
 * llama_gen/prefill 37,119 against 34,311, now 34,398; a hash per index
 * gave 34,718).  Kept below 2^24, which fp32 holds exactly.  NULL after a
 * fault. */
static int64_t *index_rows(sim *s, sim_core *c, const sim_slot *e, int u)
{
    const isa_insn *in = e->in;
    int64_t *row = malloc((size_t)in->n[0] * sizeof *row);
    if (!row)
        abort();
    const int64_t span = in->vl < (1 << 24) ? in->vl : 1 << 24;
    const int64_t start = !s->opt.values && span > 0 ? stand_in_row(c->id, (uint64_t)e->b, span) : 0;
    for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
        float x = 0.0f;
        if (s->opt.values)
            memcpy(&x, c->lx + e->b + i0 * in->bs[0], 4);
        else if (span > 0)
            x = (float)((start + i0) % span);
        /* fp32 holds every integer up to 2^24 exactly */
        if (!(x >= 0.0f && x < (float)in->vl && x <= 16777216.0f && x == floorf(x))) {
            free(row);
            sim_faultf(s, c->id, u, e->index, "%s: index %" PRId64 " (LX 0x%" PRIx64 ") is %g, not an integer row in [0, %" PRId64 ")",
                       isa_info(in->op)->mnemonic, i0, (uint64_t)(e->b + i0 * in->bs[0]), (double)x, (int64_t)in->vl);
            return NULL;
        }
        row[i0] = (int64_t)x;
    }
    if (sim_race_active(s)) {
        if (in->bs[0] == 4)
            sim_race_access(s, c, u, e->index, c->id, (uint64_t)e->b, (uint64_t)(e->b + 4 * in->n[0]), 0);
        else
            for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                uint64_t b = (uint64_t)(e->b + i0 * in->bs[0]);
                sim_race_access(s, c, u, e->index, c->id, b, b + 4, 0);
            }
    }
    return row;
}

/* dma.gather (row lookups: the table is a in DRAM, the rows go to d in LX)
 * and dma.scatter (its mirror: rows from a in LX to the table d in DRAM).
 * The race detector sees the rows the indices pick, not the whole table:
 * two scatters to one row unordered race, two to different rows do not. */
static int exec_indexed(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    const int scatter = in->op == ISA_OP_DMA_SCATTER;
    const int64_t sb = s->cfg.stick_bytes, run = in->run * sb, n0 = in->n[0], n1 = in->n[1];
    const int64_t tbase = scatter ? e->d : e->a, lbase = scatter ? e->a : e->d;
    const int32_t *tstr = scatter ? in->ds : in->as, *lstr = scatter ? in->as : in->ds;
    const int32_t tn[2] = {in->vl, (int32_t)n1}, tst[2] = {tstr[0], tstr[1]};
    const char *tname = scatter ? "d" : "a", *lname = scatter ? "a" : "d";
    span ls = extent(lbase, 2, counts_of(in).v, lstr, run);
    span ts = extent(tbase, 2, tn, tst, run); /* the whole table */
    span bs = extent(e->b, 1, counts_of(in).v, in->bs, 4);
    if (check_align(s, c, e, u, lname, lbase, 2, lstr, sb) || check_align(s, c, e, u, tname, tbase, 2, tstr, sb) ||
        check_align(s, c, e, u, "b", e->b, 1, in->bs, 4))
        return -1;
    if (check_lx(s, c, e, u, lname, ls) || check_dram(s, c, e, u, tname, ts) || check_lx(s, c, e, u, "b", bs))
        return -1;
    const int64_t wb = (int64_t)s->weight_bytes;
    if (ts.lo < wb && ts.hi > wb)
        return sim_faultf(s, c->id, u, e->index,
                          "%s: the table [0x%" PRIx64 ", 0x%" PRIx64 ") straddles the end of the weights "
                          "region (0x%" PRIx64 " bytes); a table lies in one region",
                          isa_info(in->op)->mnemonic, (uint64_t)ts.lo, (uint64_t)ts.hi, (uint64_t)wb);
    sim_pt_fence(s, c->id, (uint64_t)bs.lo, (uint64_t)bs.hi, 0);
    sim_pt_fence(s, c->id, (uint64_t)ls.lo, (uint64_t)ls.hi, !scatter);
    int64_t *row = index_rows(s, c, e, u);
    if (!row)
        return -1;
    sim_dma_timer dt;
    sim_dma_begin(s, &dt, tm->start);
    for (int64_t i1 = 0; i1 < n1; i1++)
        for (int64_t i0 = 0; i0 < n0; i0++) {
            int64_t l = lbase + i0 * lstr[0] + i1 * lstr[1];
            uint64_t da = dram_addr(s, tbase + row[i0] * tstr[0] + i1 * tstr[1]);
            sim_dma_piece(s, &dt, da, (uint64_t)run, scatter);
            if (sim_race_active(s)) {
                sim_race_access(s, c, u, e->index, scatter ? c->id : -1, scatter ? (uint64_t)l : da,
                                (scatter ? (uint64_t)l : da) + (uint64_t)run, 0);
                sim_race_access(s, c, u, e->index, scatter ? -1 : c->id, scatter ? da : (uint64_t)l,
                                (scatter ? da : (uint64_t)l) + (uint64_t)run, 1);
            }
            if (s->opt.values && scatter)
                sim_dram_copy_in(s, da, c->lx + l, (size_t)run);
            else if (s->opt.values)
                sim_dram_copy_out(s, da, c->lx + l, (size_t)run);
        }
    free(row);
    tm->dram_bytes = (uint64_t)(run * n0 * n1);
    *(scatter ? &s->st->dram_bytes_written : &s->st->dram_bytes_read) += tm->dram_bytes;
    tm->end = sim_dma_end(s, c, &dt, tm->start, scatter);
    tm->busy_end = dt.issue;
    return 0;
}

/* A ring instruction's runs of `run` bytes: the race check's accesses
 * and, with values, the copies or sums.  Apart, so that a timing-only
 * run without the check (which charges the whole transfer at once) sets
 * none of it up. */
static __attribute__((noinline)) void ring_runs(sim *s, sim_core *c, sim_core *dst, const sim_slot *e, int u, int64_t run)
{
    const isa_insn *in = e->in;
    const int values = s->opt.values;
    for (int64_t i1 = 0; i1 < in->n[1]; i1++)
        for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
            int64_t doff = e->d + i0 * in->ds[0] + i1 * in->ds[1];
            int64_t aoff = e->a + i0 * in->as[0] + i1 * in->as[1];
            if (sim_race_active(s)) {
                sim_race_access(s, c, u, e->index, c->id, (uint64_t)aoff, (uint64_t)(aoff + run), 0);
                if (in->op == ISA_OP_RING_RED)
                    sim_race_access(s, c, u, e->index, dst->id, (uint64_t)doff, (uint64_t)(doff + run), 0);
                sim_race_access(s, c, u, e->index, dst->id, (uint64_t)doff, (uint64_t)(doff + run), 1);
            }
            if (!values)
                continue;
            uint8_t *d = dst->lx + doff;
            const uint8_t *a = c->lx + aoff;
            if (in->op == ISA_OP_RING_SEND) {
                if (dst != c)
                    sim_copy_uncached(d, a, (size_t)run);
                else
                    memmove(d, a, (size_t)run);
                if (s->ptq && dst != c)
                    sim_pt_copied(s, c->id, (uint64_t)aoff, dst->id, (uint64_t)doff, (uint64_t)run);
            } else if (in->t == ISA_T_F32) {
                for (int64_t j = 0; j < run / 4; j++) {
                    float x, y;
                    memcpy(&x, d + 4 * j, 4);
                    memcpy(&y, a + 4 * j, 4);
                    x += y;
                    memcpy(d + 4 * j, &x, 4);
                }
            } else {
                for (int64_t j = 0; j < run / 2; j++) {
                    uint16_t x, y;
                    memcpy(&x, d + 2 * j, 2);
                    memcpy(&y, a + 2 * j, 2);
                    x = isa_dl16_from_f32(isa_dl16_to_f32(x) + isa_dl16_to_f32(y));
                    memcpy(d + 2 * j, &x, 2);
                }
            }
        }
}

static int exec_ring(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    if (in->core >= s->cfg.cores)
        return sim_faultf(s, c->id, u, e->index, "%s: core %" PRId64 " does not exist (the chip has %d)",
                          isa_info(in->op)->mnemonic, (int64_t)in->core, s->cfg.cores);
    if (in->tok != ISA_TOK_NONE && in->tok >= s->cfg.tokens)
        return sim_faultf(s, c->id, u, e->index, "%s: token %" PRId64 " does not exist", isa_info(in->op)->mnemonic, (int64_t)in->tok);
    sim_core *dst = &s->cores[in->core];
    const int64_t sb = s->cfg.stick_bytes, run = in->run * sb;
    span ds = extent(e->d, 2, counts_of(in).v, in->ds, run);
    span as = extent(e->a, 2, counts_of(in).v, in->as, run);
    if (check_align(s, c, e, u, "d", e->d, 2, in->ds, sb) || check_align(s, c, e, u, "a", e->a, 2, in->as, sb) ||
        check_lx(s, dst, e, u, "d", ds) || check_lx(s, c, e, u, "a", as))
        return -1;
    sim_pt_fence(s, c->id, (uint64_t)as.lo, (uint64_t)as.hi, 0);
    sim_pt_fence(s, dst->id, (uint64_t)ds.lo, (uint64_t)ds.hi, 1);
    if (s->opt.values || sim_race_active(s))
        ring_runs(s, c, dst, e, u, run);
    tm->end = sim_time_ring(s, c, dst->id, tm->start, (uint64_t)(run * in->n[0] * in->n[1]));
    if (in->tok != ISA_TOK_NONE) {
        tm->remote_core = dst->id;
        tm->remote_tok = in->tok;
    }
    return 0;
}

/* ---- PT: matrix multiply on DL16 tiles with fp32 sums ---- */

static int exec_pt(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    const int64_t sb = s->cfg.stick_bytes, l16 = sb / 2, l32 = sb / 4;
    const int64_t m = in->m, n = in->nn, k = in->k;
    const int acc = (in->flags & ISA_F_ACC) != 0, out32 = (in->flags & ISA_F_F32) != 0;
    int32_t ga = (k + l16 - 1) / l16, gb = (n + l16 - 1) / l16, g32 = (n + l32 - 1) / l32;
    int32_t gd = out32 ? g32 : gb;
    span as = extent(e->a, 1, &ga, &in->as[0], m * sb);
    span bs = extent(e->b, 1, &gb, &in->bs[0], k * sb);
    span ds = extent(e->d, 1, &gd, &in->ds[0], m * sb);
    span ps = extent(e->p, 1, &g32, &in->ps, m * sb);
    if (check_align(s, c, e, u, "a", e->a, 1, in->as, sb) || check_align(s, c, e, u, "b", e->b, 1, in->bs, sb) ||
        check_align(s, c, e, u, "d", e->d, 1, in->ds, sb) ||
        (acc && check_align(s, c, e, u, "p", e->p, 1, &in->ps, sb)))
        return -1;
    if (check_lx(s, c, e, u, "a", as) || check_lx(s, c, e, u, "b", bs) || check_lx(s, c, e, u, "d", ds) ||
        (acc && check_lx(s, c, e, u, "p", ps)))
        return -1;
    if (sim_race_active(s)) {
        for (int64_t g = 0; g < ga; g++)
            sim_race_access(s, c, u, e->index, c->id, (uint64_t)(e->a + g * in->as[0]),
                            (uint64_t)(e->a + g * in->as[0] + m * sb), 0);
        for (int64_t g = 0; g < gb; g++)
            sim_race_access(s, c, u, e->index, c->id, (uint64_t)(e->b + g * in->bs[0]),
                            (uint64_t)(e->b + g * in->bs[0] + k * sb), 0);
        for (int64_t g = 0; acc && g < g32; g++)
            sim_race_access(s, c, u, e->index, c->id, (uint64_t)(e->p + g * in->ps),
                            (uint64_t)(e->p + g * in->ps + m * sb), 0);
        for (int64_t g = 0; g < gd; g++)
            sim_race_access(s, c, u, e->index, c->id, (uint64_t)(e->d + g * in->ds[0]),
                            (uint64_t)(e->d + g * in->ds[0] + m * sb), 1);
    }
    tm->macs = (uint64_t)(m * n * k);
    s->st->macs += tm->macs;
    tm->end = sim_time_pt(s, tm->start, m, n, k);
    if (!s->opt.values)
        return 0;
    const sim_lx_set ops[4] = {{e->a, ga, in->as[0], m * sb},
                               {e->b, gb, in->bs[0], k * sb},
                               {e->p, acc ? g32 : 0, in->ps, m * sb},
                               {e->d, gd, in->ds[0], m * sb}};
    isa_insn r; /* the worker reads the operands' addresses from the instruction */
    sim_slot_insn(e, &r);
    sim_pt_submit(s, c->id, &r, ops);
    return 0;
}

/* ---- SFP: vector unit ---- */

static void load_stick(const uint8_t *p, int t, float *out, int lanes)
{
    if (t == ISA_T_F32)
        memcpy(out, p, (size_t)lanes * 4);
    else
        isa_dl16_to_f32_n((const uint16_t *)p, out, (size_t)lanes);
}

static void store_stick(uint8_t *p, int t, const float *in, int lanes)
{
    if (t == ISA_T_F32)
        memcpy(p, in, (size_t)lanes * 4);
    else
        isa_dl16_from_f32_n(in, (uint16_t *)p, (size_t)lanes);
}

static float load_elem(const uint8_t *p, int t)
{
    if (t == ISA_T_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return isa_dl16_to_f32(h);
}

static void store_elem(uint8_t *p, int t, float v)
{
    if (t == ISA_T_F32) {
        memcpy(p, &v, 4);
    } else {
        uint16_t h = isa_dl16_from_f32(v);
        memcpy(p, &h, 2);
    }
}

#define SQRT1_2 0.70710678118654752440f
#define SQRT_2_OVER_PI 0.79788456080286535588f

/* max and min as PyTorch's maximum, minimum, amax and max pooling: a NaN
 * (DL16's NINF) operand gives NaN, where fmaxf and fminf would drop it */
static float max_nan(float a, float b) { return a != a || a > b ? a : b; }
static float min_nan(float a, float b) { return a != a || a < b ? a : b; }

/* One op over a stick's lanes: the switch runs once per stick. */
static void sfp_lanes(int op, float *x, const float *y, int n)
{
    int i;
    switch (op) {
    case ISA_OP_SFP_MOV: break;
    case ISA_OP_SFP_NEG: for (i = 0; i < n; i++) x[i] = -x[i]; break;
    case ISA_OP_SFP_EXP: for (i = 0; i < n; i++) x[i] = expf(x[i]); break;
    case ISA_OP_SFP_LOG: for (i = 0; i < n; i++) x[i] = logf(x[i]); break;
    case ISA_OP_SFP_SQRT: for (i = 0; i < n; i++) x[i] = sqrtf(x[i]); break;
    case ISA_OP_SFP_RSQRT: for (i = 0; i < n; i++) x[i] = 1.0f / sqrtf(x[i]); break;
    case ISA_OP_SFP_RECIP: for (i = 0; i < n; i++) x[i] = 1.0f / x[i]; break;
    case ISA_OP_SFP_TANH: for (i = 0; i < n; i++) x[i] = tanhf(x[i]); break;
    case ISA_OP_SFP_SIGM: for (i = 0; i < n; i++) x[i] = 1.0f / (1.0f + expf(-x[i])); break;
    case ISA_OP_SFP_GELU: for (i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * SQRT1_2)); break;
    case ISA_OP_SFP_GELUT:
        for (i = 0; i < n; i++)
            x[i] = 0.5f * x[i] * (1.0f + tanhf(SQRT_2_OVER_PI * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
        break;
    case ISA_OP_SFP_SILU: for (i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i])); break;
    case ISA_OP_SFP_RELU: for (i = 0; i < n; i++) x[i] = max_nan(x[i], 0.0f); break;
    case ISA_OP_SFP_ERF: for (i = 0; i < n; i++) x[i] = erff(x[i]); break;
    case ISA_OP_SFP_ABS: for (i = 0; i < n; i++) x[i] = fabsf(x[i]); break;
    case ISA_OP_SFP_SIN: for (i = 0; i < n; i++) x[i] = sinf(x[i]); break;
    case ISA_OP_SFP_COS: for (i = 0; i < n; i++) x[i] = cosf(x[i]); break;
    case ISA_OP_SFP_ADD: for (i = 0; i < n; i++) x[i] += y[i]; break;
    case ISA_OP_SFP_SUB: for (i = 0; i < n; i++) x[i] -= y[i]; break;
    case ISA_OP_SFP_MUL: for (i = 0; i < n; i++) x[i] *= y[i]; break;
    case ISA_OP_SFP_DIV: for (i = 0; i < n; i++) x[i] /= y[i]; break;
    case ISA_OP_SFP_MAX: for (i = 0; i < n; i++) x[i] = max_nan(x[i], y[i]); break;
    case ISA_OP_SFP_MIN: for (i = 0; i < n; i++) x[i] = min_nan(x[i], y[i]); break;
    case ISA_OP_SFP_POW: for (i = 0; i < n; i++) x[i] = powf(x[i], y[i]); break;
    case ISA_OP_SFP_EQ: for (i = 0; i < n; i++) x[i] = x[i] == y[i] ? 1.0f : 0.0f; break;
    case ISA_OP_SFP_NE: for (i = 0; i < n; i++) x[i] = x[i] != y[i] ? 1.0f : 0.0f; break;
    case ISA_OP_SFP_LT: for (i = 0; i < n; i++) x[i] = x[i] < y[i] ? 1.0f : 0.0f; break;
    case ISA_OP_SFP_LE: for (i = 0; i < n; i++) x[i] = x[i] <= y[i] ? 1.0f : 0.0f; break;
    case ISA_OP_SFP_GT: for (i = 0; i < n; i++) x[i] = x[i] > y[i] ? 1.0f : 0.0f; break;
    case ISA_OP_SFP_GE: for (i = 0; i < n; i++) x[i] = x[i] >= y[i] ? 1.0f : 0.0f; break;
    }
}

/* The binary rows sit together in the table, sfp.add .. sfp.sel. */
static int is_binary(int op) { return op >= ISA_OP_SFP_ADD && op <= ISA_OP_SFP_SEL; }

#define MAX_LANES 256

/* sfp.rst: vl elements per (i0, i1), read at stride bs0 and written at
 * stride bs1, each address element-aligned; the bits are copied. */
static int exec_rst(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    const int64_t sb = s->cfg.stick_bytes;
    const int64_t esz = in->t == ISA_T_F32 ? 4 : 2;
    const int64_t vl = in->vl ? in->vl : sb / esz;
    const int32_t n3[3] = {in->n[0], in->n[1], (int32_t)vl};
    const int32_t dst[3] = {in->ds[0], in->ds[1], in->bs[1]}, ast[3] = {in->as[0], in->as[1], in->bs[0]};
    span dsp = extent(e->d, 3, n3, dst, esz), asp = extent(e->a, 3, n3, ast, esz);
    if (check_align(s, c, e, u, "d", e->d, 3, dst, esz) || check_align(s, c, e, u, "a", e->a, 3, ast, esz) ||
        check_lx(s, c, e, u, "d", dsp) || check_lx(s, c, e, u, "a", asp))
        return -1;
    sim_pt_fence(s, c->id, (uint64_t)asp.lo, (uint64_t)asp.hi, 0);
    sim_pt_fence(s, c->id, (uint64_t)dsp.lo, (uint64_t)dsp.hi, 1);
    if (sim_race_active(s))
        for (int64_t i1 = 0; i1 < in->n[1]; i1++)
            for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                int64_t a = e->a + i0 * in->as[0] + i1 * in->as[1];
                int64_t d = e->d + i0 * in->ds[0] + i1 * in->ds[1];
                /* a unit stride is one access; any other, one per element */
                int64_t na = in->bs[0] == esz ? 1 : vl, nd = in->bs[1] == esz ? 1 : vl;
                int64_t ua = in->bs[0] == esz ? vl * esz : esz, ud = in->bs[1] == esz ? vl * esz : esz;
                for (int64_t l = 0; l < na; l++)
                    sim_race_access(s, c, u, e->index, c->id, (uint64_t)(a + l * in->bs[0]),
                                    (uint64_t)(a + l * in->bs[0] + ua), 0);
                for (int64_t l = 0; l < nd; l++)
                    sim_race_access(s, c, u, e->index, c->id, (uint64_t)(d + l * in->bs[1]),
                                    (uint64_t)(d + l * in->bs[1] + ud), 1);
            }
    /* one stick-time per destination stick's worth of elements */
    tm->end = sim_time_sfp(s, tm->start, in->op, (int64_t)in->n[0] * in->n[1] * ((vl * esz + sb - 1) / sb));
    s->st->sfp_elems += (uint64_t)((int64_t)in->n[0] * in->n[1] * vl);
    if (!s->opt.values)
        return 0;
    uint8_t *lx = c->lx;
    for (int64_t i1 = 0; i1 < in->n[1]; i1++)
        for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
            int64_t a = e->a + i0 * in->as[0] + i1 * in->as[1];
            int64_t d = e->d + i0 * in->ds[0] + i1 * in->ds[1];
            for (int64_t l = 0; l < vl; l++)
                memmove(lx + d + l * in->bs[1], lx + a + l * in->bs[0], (size_t)esz);
        }
    return 0;
}

/* Tell the race checker of the unit-byte sticks at base + i0*st[0] + i1*st[1]
 * of this core's LX, for i0 < n[0], i1 < n[1]. */
static void race_sticks(sim *s, sim_core *c, int u, const sim_slot *e, int64_t base, const int32_t n[2],
                        const int32_t st[2], int64_t unit, int is_write)
{
    if (!sim_race_active(s))
        return;
    for (int64_t i1 = 0; i1 < n[1]; i1++)
        for (int64_t i0 = 0; i0 < n[0]; i0++) {
            uint64_t lo = (uint64_t)(base + i0 * st[0] + i1 * st[1]);
            sim_race_access(s, c, u, e->index, c->id, lo, lo + (uint64_t)unit, is_write);
        }
}

/* sfp.iota: stick (i0, i1) at d + i0*ds0 + i1*ds1 gets, in lane l, the
 * value imm + bs0*(i0*lanes + l) + bs1*i1 (computed in double, exact for
 * integers, then rounded to t); nothing is read. */
static int exec_iota(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    const int64_t sb = s->cfg.stick_bytes;
    const int t = (int)in->t, lanes = (int)(sb / (t == ISA_T_F32 ? 4 : 2));
    span dsp = extent(e->d, 2, counts_of(in).v, in->ds, sb);
    if (check_align(s, c, e, u, "d", e->d, 2, in->ds, sb) || check_lx(s, c, e, u, "d", dsp))
        return -1;
    sim_pt_fence(s, c->id, (uint64_t)dsp.lo, (uint64_t)dsp.hi, 1);
    race_sticks(s, c, u, e, e->d, counts_of(in).v, in->ds, sb, 1);
    tm->end = sim_time_sfp(s, tm->start, in->op, (int64_t)in->n[0] * in->n[1]);
    s->st->sfp_elems += (uint64_t)((int64_t)in->n[0] * in->n[1] * lanes);
    if (!s->opt.values)
        return 0;
    float x[MAX_LANES];
    for (int64_t i1 = 0; i1 < in->n[1]; i1++)
        for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
            for (int l = 0; l < lanes; l++)
                x[l] = (float)((double)in->imm + (double)in->bs[0] * (double)(i0 * lanes + l) +
                               (double)in->bs[1] * (double)i1);
            store_stick(c->lx + e->d + i0 * in->ds[0] + i1 * in->ds[1], t, x, lanes);
        }
    return 0;
}

static int exec_sfp(sim *s, sim_core *c, const sim_slot *e, int u, sim_timing *tm)
{
    const isa_insn *in = e->in;
    const int64_t sb = s->cfg.stick_bytes;
    /* the uint8_t fields read into locals: a character type may alias
     * anything, so a field's load would be repeated after every store */
    const int t = (int)in->t, esz = t == ISA_T_F32 ? 4 : 2, bm = in->bm;
    const int lanes = (int)(sb / esz);
    const int op = in->op;
    if (op == ISA_OP_SFP_RST)
        return exec_rst(s, c, e, u, tm);
    if (op == ISA_OP_SFP_IOTA)
        return exec_iota(s, c, e, u, tm);
    const int reduce = op == ISA_OP_SFP_RSUM || op == ISA_OP_SFP_RMAX;
    const int lane_reduce = reduce && (in->flags & ISA_F_LANES);
    /* Checks: a is always sticks; d sticks (or elements for a lane
     * reduction, or the other type for cvt); b per its mode. */
    const int has_b = is_binary(op) && bm != ISA_BM_IMM;
    /* cvt writes the same lanes in the other type: half or twice a stick */
    const int64_t dunit_w = reduce ? (lane_reduce ? esz : sb) : op != ISA_OP_SFP_CVT ? sb : t == ISA_T_F32 ? sb / 2 : sb * 2;
    const int64_t bunit = bm == ISA_BM_ELEM ? esz : sb;
    const counts n = counts_of(in);
    span as = extent(e->a, 2, n.v, in->as, sb);
    span dsp = reduce ? extent(e->d, 1, n.v + 1, &in->ds[1], dunit_w) : extent(e->d, 2, n.v, in->ds, dunit_w);
    span bsp = extent(e->b, 2, n.v, in->bs, bunit);
    if (check_align(s, c, e, u, "a", e->a, 2, in->as, sb) || check_lx(s, c, e, u, "a", as))
        return -1;
    if (reduce ? check_align(s, c, e, u, "d", e->d, 1, &in->ds[1], dunit_w)
               : check_align(s, c, e, u, "d", e->d, 2, in->ds, dunit_w < sb ? dunit_w : sb))
        return -1;
    if (check_lx(s, c, e, u, "d", dsp))
        return -1;
    if (has_b && (check_align(s, c, e, u, "b", e->b, 2, in->bs, bunit) || check_lx(s, c, e, u, "b", bsp)))
        return -1;
    sim_pt_fence(s, c->id, (uint64_t)as.lo, (uint64_t)as.hi, 0);
    if (has_b)
        sim_pt_fence(s, c->id, (uint64_t)bsp.lo, (uint64_t)bsp.hi, 0);
    sim_pt_fence(s, c->id, (uint64_t)dsp.lo, (uint64_t)dsp.hi, 1);
    if (sim_race_active(s))
        for (int64_t i1 = 0; i1 < in->n[1]; i1++)
            for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                uint64_t a = (uint64_t)(e->a + i0 * in->as[0] + i1 * in->as[1]);
                sim_race_access(s, c, u, e->index, c->id, a, a + (uint64_t)sb, 0);
                if (has_b) {
                    uint64_t b = (uint64_t)(e->b + i0 * in->bs[0] + i1 * in->bs[1]);
                    sim_race_access(s, c, u, e->index, c->id, b, b + (uint64_t)bunit, 0);
                }
                if (!reduce || i0 == 0) {
                    uint64_t d = (uint64_t)(e->d + (reduce ? 0 : i0 * in->ds[0]) + i1 * in->ds[1]);
                    sim_race_access(s, c, u, e->index, c->id, d, d + (uint64_t)dunit_w, 1);
                }
            }
    tm->end = sim_time_sfp(s, tm->start, op, (int64_t)in->n[0] * in->n[1]);
    s->st->sfp_elems += (uint64_t)((int64_t)in->n[0] * in->n[1] * lanes);
    if (!s->opt.values)
        return 0;
    float x[MAX_LANES], y[MAX_LANES];
    uint8_t *lx = c->lx;
    if (reduce) {
        const int is_max = op == ISA_OP_SFP_RMAX;
        const float ident = is_max ? -INFINITY : 0.0f;
        float acc[MAX_LANES];
        for (int64_t i1 = 0; i1 < in->n[1]; i1++) {
            for (int l = 0; l < lanes; l++)
                acc[l] = ident;
            for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                load_stick(lx + e->a + i0 * in->as[0] + i1 * in->as[1], t, x, lanes);
                int valid = lanes;
                if (in->vl > 0) {
                    int64_t left = in->vl - i0 * lanes;
                    valid = left <= 0 ? 0 : left < lanes ? (int)left : lanes;
                }
                if (is_max)
                    for (int l = 0; l < valid; l++)
                        acc[l] = max_nan(acc[l], x[l]);
                else
                    for (int l = 0; l < valid; l++)
                        acc[l] += x[l];
            }
            uint8_t *d = lx + e->d + i1 * in->ds[1];
            if (lane_reduce) {
                float r = ident;
                for (int l = 0; l < lanes; l++)
                    r = is_max ? max_nan(r, acc[l]) : r + acc[l];
                store_elem(d, t, r);
            } else {
                store_stick(d, t, acc, lanes);
            }
        }
        return 0;
    }
    for (int64_t i1 = 0; i1 < in->n[1]; i1++)
        for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
            load_stick(lx + e->a + i0 * in->as[0] + i1 * in->as[1], t, x, lanes);
            uint8_t *d = lx + e->d + i0 * in->ds[0] + i1 * in->ds[1];
            if (op == ISA_OP_SFP_CVT) {
                store_stick(d, t == ISA_T_F32 ? ISA_T_DL16 : ISA_T_F32, x, lanes);
                continue;
            }
            if (op == ISA_OP_SFP_SEL) { /* the condition is d's old value */
                float cond[MAX_LANES];
                load_stick(d, t, cond, lanes);
                const uint8_t *b = lx + e->b + i0 * in->bs[0] + i1 * in->bs[1];
                for (int l = 0; l < lanes; l++)
                    y[l] = bm == ISA_BM_VEC ? 0.0f : bm == ISA_BM_IMM ? in->imm : load_elem(b, t);
                if (bm == ISA_BM_VEC)
                    load_stick(b, t, y, lanes);
                for (int l = 0; l < lanes; l++)
                    x[l] = cond[l] != 0.0f ? x[l] : y[l];
                store_stick(d, t, x, lanes);
                continue;
            }
            if (is_binary(op)) {
                const uint8_t *b = lx + e->b + i0 * in->bs[0] + i1 * in->bs[1];
                if (bm == ISA_BM_VEC) {
                    load_stick(b, t, y, lanes);
                } else {
                    float v = bm == ISA_BM_IMM ? in->imm : load_elem(b, t);
                    for (int l = 0; l < lanes; l++)
                        y[l] = v;
                }
            }
            sfp_lanes(op, x, y, lanes);
            store_stick(d, t, x, lanes);
        }
    return 0;
}

/* Resolved addresses wrap with their registers (docs/isa.md), so they can
 * be anywhere in int64; one at or beyond 2^48 is outside every memory (LX
 * and DRAM are far smaller), and refusing it keeps the address sums of the
 * checks below (at most 2^50 with the ISA's strides and counts) exact. */
static int check_resolved(sim *s, const sim_core *c, int u, const sim_slot *e)
{
    /* all four in [0, 2^48) exactly when none has a bit set from bit 48 up
     * (a negative one has its sign bit): one test for every instruction,
     * the operands looked at one by one only to name the one outside */
    if ((uint64_t)(e->d | e->a | e->b | e->p) >> 48 == 0)
        return 0;
    const int64_t v[4] = {e->d, e->a, e->b, e->p}, lim = (int64_t)1 << 48;
    static const char *const names[4] = {"d", "a", "b", "p"};
    for (int i = 0; i < 4; i++)
        if (v[i] < 0 || v[i] >= lim)
            return sim_faultf(s, c->id, u, e->index, "%s: address 0x%" PRIx64 " of operand %s is outside every memory",
                              isa_info(e->in->op)->mnemonic, (uint64_t)v[i], names[i]);
    return 0;
}

int sim_exec(sim *s, sim_core *c, int u, const sim_slot *e, sim_timing *tm)
{
    if (check_resolved(s, c, u, e))
        return -1;
    /* the slot's copy of the opcode (the same for every opcode there is):
     * the dispatch does not wait for the instruction's first line, which
     * nothing has read since the sequencer's issue stopped reading it */
    switch (isa_info(e->op)->cls) {
    case ISA_C_DMAI:
    case ISA_C_DMAO:
        return e->op == ISA_OP_DMA_GATHER || e->op == ISA_OP_DMA_SCATTER ? exec_indexed(s, c, e, u, tm)
                                                                         : exec_dma(s, c, e, u, tm);
    case ISA_C_PT: return exec_pt(s, c, e, u, tm);
    case ISA_C_SFP: return exec_sfp(s, c, e, u, tm);
    case ISA_C_RING: return exec_ring(s, c, e, u, tm);
    default: return sim_faultf(s, c->id, u, e->index, "%s cannot run on %s", isa_info(e->in->op)->mnemonic, unit_name(u));
    }
}
