/* shapes_gemm.c: the hand-shaped GEMM the calibration measures: C (M, N) =
 * A (M, K) @ B (K, N) on the cores of the chip (at most cc_gen_opts.cores
 * of them), as one kernel "gemm" per working core.
 *
 * Two schemes.  When every core's whole A row panel and B column panel fit
 * its LX, the panels are shared over the ring (see "Shared panels" below:
 * DRAM reads A and B once); otherwise each core loads its own panels, as
 * described here.  The cheaper estimate wins, both bounded by the chip's
 * DRAM bandwidth from the configuration.
 *
 * Work division: the output is cut into a gm x gn grid of core tiles, M in
 * rows and N in whole sticks (uneven edges allowed); a cost model picks
 * the grid and each core's blocking (plan_cost: the busier corelet's PT
 * cycles against the DRAM bytes the core loads at its DMA rate; the DRAM
 * bandwidth the cores share is not modelled yet).  Each core walks its
 * tile in blocks of MB rows x NBS sticks that fit its LX, and each
 * block's K in chunks of KC rows:
 *
 *   LX:  A[2]  MB rows x KC   (KC/64 groups of MB sticks)   double buffered
 *        B[2]  KC x NBS sticks (NBS groups of KC sticks)    double buffered
 *        P     fp32 partial sums of the block (2*NBS groups of MB sticks)
 *        C[2]  DL16 result of a block (NBS groups of MB sticks)
 *
 * K chunks: 1, 2, 4 or 8 sticks (64 to 512 rows), and all of K in one
 * chunk when it is at most 8 sticks.  Among the blockings the cost model
 * counts as equal (plan_tile) the largest chunk wins: fewer pt.mm and DMA
 * instructions, each with a fixed cost on the chip and in the simulator.
 * (Sizes in between, such as 192 or 448 rows for a long K, let the model
 * pick plans that look a little faster and move far more DRAM bytes, a
 * cost it does not see while the DRAM the cores share is not modelled:
 * 2048^3 on four cores moved 50% more bytes in 30% more cycles.)
 *
 * Units and tokens (per slot s of A/B, slot q of C, corelet c):
 *   dmai: wait empty[s][c]; load A, B chunk into slot s; sig full[s][c]
 *   ptc:  wait full[s][c]; (last chunk: wait cempty[q][c]) pt.mm;
 *         sig empty[s][c]; (last chunk: sig cfull[q][c])
 *   dmao: wait cfull[q][c]; store C[q]; sig cempty[q][c]
 * The "empty" tokens start with one credit each (signalled in the
 * prologue) and are drained in the epilogue, so every token ends at zero.
 * The block's first chunk writes fp32 partials, middle chunks accumulate
 * (acc|f32, p = d = P), the last chunk accumulates and writes DL16 to C[q].
 * DRAM addresses live in registers advanced by addi, so the middle chunks
 * of a block, the full blocks of a row and the full rows of a tile run as
 * counted loops (unrolled by two where the slot alternation needs it).
 *
 * Columns: every pt.mm covers the true columns of its part of the tile,
 * so the tile's last stick, when N is not a multiple of 64, is partial
 * (the last block of each row is emitted outside the block loop for it);
 * the layout stays in whole sticks.  pt.mm writes only those columns, and
 * C is stored in whole sticks, so the padding lanes of that stick in
 * C[0] and C[1] are zeroed once, before any pt.mm writes C: sfp0 writes
 * an iota of step 0 over them (+0 whatever LX held, NaN included) and
 * gives the first cempty credits in place of dmao.
 *
 * The two PT corelets split each block by rows (at a fixed row r0) or by
 * sticks (at a fixed stick s0); every buffer uses the plan's fixed strides
 * (MB, KC), so a corelet's region of P and C never moves between blocks. */
#include "shapes.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { SPLIT_NONE, SPLIT_ROWS, SPLIT_STICKS };

/* How one core computes its tile. */
typedef struct {
    int64_t mt, ns;         /* tile: rows, sticks of N */
    int64_t MB, NBS, KC;    /* block rows, block sticks, K chunk */
    int64_t nch;            /* chunks per block */
    int split;              /* corelet split, SPLIT_* */
    int64_t r0, s0;         /* corelet 1's first row / stick in a block */
    double cycles;          /* estimated */
    double bytes;           /* DRAM bytes the core moves */
} tile_plan;

typedef struct {
    const cc_target *t;
    int64_t M, N, K;
    int64_t GN;             /* sticks along N */
    uint64_t budget;        /* LX bytes per core */
    int64_t cores;          /* cores it may use */
    uint64_t a_dram, b_dram, c_dram;
} gemm_ctx;

/* Cycles of one pt.mm of m x n x k on a corelet. */
static double pt_cycles(const cc_target *t, int64_t m, int64_t n, int64_t k)
{
    return (double)cc_ceil_div(m, t->pt_rows) * (double)cc_ceil_div(n, t->pt_cols_per_pass) * (double)k +
           t->pt_insn_cycles;
}

/* The corelet split of a block of MB rows x NBS sticks: the one whose
 * busier corelet has the fewest PT passes (rows first on a tie). */
static void choose_split(const cc_target *t, tile_plan *pl)
{
    int64_t lanes = t->lanes16;
    double best = pt_cycles(t, pl->MB, pl->NBS * lanes, 1);
    pl->split = SPLIT_NONE;
    pl->r0 = pl->MB;
    pl->s0 = pl->NBS;
    if (t->corelets < 2)
        return;
    if (pl->MB >= 2) {
        int64_t r0 = cc_ceil_div(pl->MB, 2);
        if (cc_round_up(r0, t->pt_rows) < pl->MB)
            r0 = cc_round_up(r0, t->pt_rows);
        double c = pt_cycles(t, cc_max(r0, pl->MB - r0), pl->NBS * lanes, 1);
        if (c < best) {
            best = c;
            pl->split = SPLIT_ROWS;
            pl->r0 = r0;
            pl->s0 = pl->NBS;
        }
    }
    if (pl->NBS >= 2) {
        int64_t s0 = cc_ceil_div(pl->NBS, 2);
        double c = pt_cycles(t, pl->MB, s0 * lanes, 1);
        if (c < best) {
            pl->split = SPLIT_STICKS;
            pl->r0 = pl->MB;
            pl->s0 = s0;
        }
    }
}

/* LX bytes of a plan (every buffer is a whole number of sticks). */
static uint64_t plan_lx(const cc_target *t, int64_t MB, int64_t NBS, int64_t KC, int64_t nch)
{
    int64_t sb = t->stick, a = (KC / t->lanes16) * MB * sb, b = NBS * KC * sb, c = NBS * MB * sb;
    int64_t p = nch > 1 ? cc_ceil_div(NBS * t->lanes16, t->lanes32) * MB * sb : 0;
    return (uint64_t)(2 * a + 2 * b + p + 2 * c);
}

/* Estimated cycles of a core computing an mt x ns tile with the given
 * blocking: the first chunk's load, then the longer of PT work and DMA
 * traffic (they overlap through double buffering), then the last store. */
static void plan_cost(const gemm_ctx *g, tile_plan *pl)
{
    const cc_target *t = g->t;
    int64_t sb = t->stick, K = g->K, kg = cc_ceil_div(K, t->lanes16);
    int64_t nbm = cc_ceil_div(pl->mt, pl->MB), nbn = cc_ceil_div(pl->ns, pl->NBS);
    int64_t blocks = nbm * nbn, chunks = blocks * pl->nch;
    choose_split(t, pl);
    int64_t busy_rows = pl->split == SPLIT_ROWS ? cc_max(pl->r0, pl->MB - pl->r0) : pl->MB;
    int64_t busy_sticks = pl->split == SPLIT_STICKS ? cc_max(pl->s0, pl->NBS - pl->s0) : pl->NBS;
    double compute = (double)blocks * (pt_cycles(t, busy_rows, busy_sticks * t->lanes16, K) - t->pt_insn_cycles) +
                     (double)chunks * (t->pt_insn_cycles + 2 * t->sync_cycles);
    double in_bytes = (double)nbn * (double)(pl->mt * kg * sb) + (double)nbm * (double)(pl->ns * K * sb);
    double out_bytes = (double)(pl->mt * pl->ns * sb);
    double dma = (in_bytes + out_bytes) / t->dma_bytes_per_cycle + (double)(2 * chunks + blocks) * t->dma_insn_cycles;
    double fill = (double)((pl->KC / t->lanes16) * pl->MB * sb + pl->NBS * pl->KC * sb) / t->dma_bytes_per_cycle;
    double tail = (double)(pl->MB * pl->NBS * sb) / t->dma_bytes_per_cycle;
    pl->cycles = fill + (compute > dma ? compute : dma) + tail;
    pl->bytes = in_bytes + out_bytes;
}

/* Estimates this close to the best count as equal: among them the plan
 * moving the fewest DRAM bytes wins, since the cost model does not see
 * the DRAM bandwidth the cores share. */
#define COST_SLACK 0.03

/* Is a (cycles, bytes) better than b, given the best cycles seen? */
static int better(double best_cycles, double ac, double ab, double bc, double bb)
{
    double limit = best_cycles * (1 + COST_SLACK);
    int a_ok = ac <= limit, b_ok = bc <= limit;
    if (a_ok != b_ok)
        return a_ok;
    if (a_ok && ab != bb)
        return ab < bb;
    return ac < bc;
}

/* The largest K chunk, in sticks (512 rows). */
#define KC_MAX_STICKS 8

/* Candidate blockings of an mt x ns tile that fit the LX budget: K chunks
 * of 1, 2, 4 ... KC_MAX_STICKS sticks, the last candidate all of K when
 * that is fewer sticks; every distinct split of the sticks into blocks;
 * and for each the most rows that fit, balanced over the row blocks.
 * Calls visit(ctx, plan) for each; returns how many. */
static int each_blocking(const gemm_ctx *g, int64_t mt, int64_t ns, void (*visit)(void *, const tile_plan *), void *ctx)
{
    const cc_target *t = g->t;
    int64_t lanes = t->lanes16, kg = cc_ceil_div(g->K, lanes);
    int64_t max_sticks = 65535 / lanes; /* pt.mm n field */
    int n = 0;
    for (int64_t ks = 1;; ks *= 2) {
        int64_t KC = cc_min(ks, kg) * lanes, nch = cc_ceil_div(g->K, KC);
        int64_t prev = -1;
        for (int64_t q = 1; q <= ns; q++) {
            int64_t NBS = cc_ceil_div(ns, q);
            if (NBS == prev || NBS > max_sticks)
                continue;
            prev = NBS;
            uint64_t fixed = plan_lx(t, 0, NBS, KC, nch), per_row = plan_lx(t, 1, NBS, KC, nch) - fixed;
            if (fixed >= g->budget)
                continue;
            int64_t mbmax = cc_min((int64_t)((g->budget - fixed) / per_row), 65535);
            if (mbmax < 1)
                continue;
            tile_plan pl = {0};
            pl.mt = mt;
            pl.ns = ns;
            pl.KC = KC;
            pl.nch = nch;
            pl.NBS = NBS;
            pl.MB = cc_ceil_div(mt, cc_ceil_div(mt, mbmax));
            plan_cost(g, &pl);
            visit(ctx, &pl);
            n++;
        }
        if (ks >= kg || 2 * ks > KC_MAX_STICKS)
            return n;
    }
}

/* The search for a tile's blocking, in three passes over the candidates:
 * the fewest cycles; the fewest DRAM bytes among the blockings within
 * COST_SLACK of those cycles; the pick among the blockings within
 * COST_SLACK of both. */
typedef struct {
    int pass;
    double best_cycles, best_bytes;
    tile_plan pick;
    int have;
} plan_search;

static void note_plan(void *ctx, const tile_plan *pl)
{
    plan_search *ps = ctx;
    int fast = pl->cycles <= ps->best_cycles * (1 + COST_SLACK);
    if (ps->pass == 0) {
        if (pl->cycles < ps->best_cycles)
            ps->best_cycles = pl->cycles;
    } else if (ps->pass == 1) {
        if (fast && pl->bytes < ps->best_bytes)
            ps->best_bytes = pl->bytes;
    } else if (fast && pl->bytes <= ps->best_bytes * (1 + COST_SLACK)) {
        const tile_plan *q = &ps->pick;
        if (!ps->have || pl->KC > q->KC ||
            (pl->KC == q->KC && better(ps->best_cycles, pl->cycles, pl->bytes, q->cycles, q->bytes))) {
            ps->pick = *pl;
            ps->have = 1;
        }
    }
}

/* The blocking of an mt x ns tile to use; 0, or -1 when nothing fits.
 * Among the blockings the estimates count as equal, the largest K chunk,
 * then the fewest bytes, then the fewest cycles. */
static int plan_tile(const gemm_ctx *g, int64_t mt, int64_t ns, tile_plan *out)
{
    plan_search ps = {0, DBL_MAX, DBL_MAX, {0}, 0};
    if (!each_blocking(g, mt, ns, note_plan, &ps))
        return -1;
    for (ps.pass = 1; ps.pass <= 2; ps.pass++)
        each_blocking(g, mt, ns, note_plan, &ps);
    *out = ps.pick;
    return 0;
}

/* Pick the core grid by the estimate of its largest tile; near-ties go
 * to fewer DRAM bytes over the chip, then to fewer cores. */
static int choose_grid(const gemm_ctx *g, int64_t *gm_out, int64_t *gn_out)
{
    int64_t cores = g->cores;
    double best_cycles = DBL_MAX, pick_cycles = 0, pick_bytes = 0;
    int64_t pick_cores = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t gm = 1; gm <= cc_min(cores, g->M); gm++)
            for (int64_t gn = 1; gn <= cc_min(cores / gm, g->GN); gn++) {
                tile_plan pl;
                if (plan_tile(g, cc_ceil_div(g->M, gm), cc_ceil_div(g->GN, gn), &pl))
                    continue;
                double bytes = pl.bytes * (double)(gm * gn);
                if (pass == 0) {
                    if (pl.cycles < best_cycles)
                        best_cycles = pl.cycles;
                } else if (!pick_cores || better(best_cycles, pl.cycles, bytes, pick_cycles, pick_bytes) ||
                           (pl.cycles == pick_cycles && bytes == pick_bytes && gm * gn < pick_cores)) {
                    pick_cycles = pl.cycles;
                    pick_bytes = bytes;
                    pick_cores = gm * gn;
                    *gm_out = gm;
                    *gn_out = gn;
                }
            }
    return pick_cores ? 0 : -1;
}

/* ---- Emission ---- */

typedef struct {
    cc_emit e;
    const gemm_ctx *g;
    const tile_plan *pl;
    int nc;                    /* corelets in use */
    int64_t A[2], B[2], P, C[2];
    int full[2][2], empty[2][2], cfull[2][2], cempty[2][2];
    int rA, rB, rC;            /* DRAM addresses: A chunk, B chunk, C block */
    int64_t chunk, nblk;       /* chunks and blocks emitted: their parity picks the slots */
    int64_t tail;              /* columns in the tile's last stick (lanes16 when it is whole) */
    /* current block: rows, sticks, true columns, C slot */
    int64_t mb, nbs, cols, q;
    int active[2];
    int64_t crow[2], cnrows[2], cstick[2], cnsticks[2];
} gemm_core;

enum { CH_FIRST, CH_MID, CH_LAST, CH_ONLY };

/* The pt.mm of corelet c for one chunk in slot s. */
static void emit_mm(gemm_core *gc, int c, int kind, int s, int64_t kc)
{
    const gemm_ctx *g = gc->g;
    const tile_plan *pl = gc->pl;
    const int64_t sb = g->t->stick, lanes = g->t->lanes16, KC = pl->KC, rs = pl->MB * sb;
    int64_t r = gc->crow[c], st = gc->cstick[c];
    isa_addr p_at = cc_abs(gc->P + r * sb + st * (lanes / g->t->lanes32) * rs);
    isa_addr c_at = cc_abs(gc->C[gc->q] + r * sb + st * rs);
    cc_pt_args pa = {0};
    pa.c = c;
    pa.a = cc_abs(gc->A[s] + r * sb);
    pa.as = rs;
    pa.b = cc_abs(gc->B[s] + st * KC * sb);
    pa.bs = KC * sb;
    pa.m = gc->cnrows[c];
    pa.n = cc_min(gc->cnsticks[c] * lanes, gc->cols - st * lanes); /* true columns; padding zeroed once */
    pa.k = kc;
    pa.ds = rs;
    switch (kind) {
    case CH_FIRST: pa.flags = ISA_F_F32; pa.d = p_at; break;
    case CH_MID: pa.flags = ISA_F_ACC | ISA_F_F32; pa.d = p_at; pa.p = p_at; pa.ps = rs; break;
    case CH_LAST: pa.flags = ISA_F_ACC; pa.d = c_at; pa.p = p_at; pa.ps = rs; break;
    default: pa.flags = 0; pa.d = c_at; break;
    }
    cc_emit_pt(&gc->e, &pa);
}

static void emit_chunk(gemm_core *gc, int kind, int64_t kc)
{
    cc_emit *e = &gc->e;
    const gemm_ctx *g = gc->g;
    const tile_plan *pl = gc->pl;
    const int64_t sb = g->t->stick, lanes = g->t->lanes16, KC = pl->KC;
    int s = (int)(gc->chunk++ % 2);
    int last = kind == CH_LAST || kind == CH_ONLY;

    for (int c = 0; c < gc->nc; c++)
        cc_emit_wait(e, ISA_U_DMAI, gc->empty[s][c]);
    cc_dma_shape a = cc_dma_groups(gc->mb, cc_ceil_div(kc, lanes), pl->MB * sb, g->M * sb);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(gc->A[s]), cc_reg(gc->rA, 0), &a);
    cc_dma_shape b = cc_dma_groups(kc, gc->nbs, KC * sb, g->K * sb);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(gc->B[s]), cc_reg(gc->rB, 0), &b);
    if (!last) {
        cc_emit_addi(e, gc->rA, (KC / lanes) * g->M * sb);
        cc_emit_addi(e, gc->rB, KC * sb);
    }
    for (int c = 0; c < gc->nc; c++)
        cc_emit_sig(e, ISA_U_DMAI, gc->full[s][c]);

    for (int c = 0; c < gc->nc; c++) {
        isa_unit pt = c ? ISA_U_PT1 : ISA_U_PT0;
        cc_emit_wait(e, pt, gc->full[s][c]);
        if (last)
            cc_emit_wait(e, pt, gc->cempty[gc->q][c]);
        if (gc->active[c])
            emit_mm(gc, c, kind, s, kc);
        cc_emit_sig(e, pt, gc->empty[s][c]);
        if (last)
            cc_emit_sig(e, pt, gc->cfull[gc->q][c]);
    }
}

static void mid_chunk(void *ctx)
{
    gemm_core *gc = ctx;
    emit_chunk(gc, CH_MID, gc->pl->KC);
}

/* One block of mb rows x nbs sticks (cols true columns): its K chunks,
 * then its store. */
static void emit_block(gemm_core *gc)
{
    cc_emit *e = &gc->e;
    const gemm_ctx *g = gc->g;
    const tile_plan *pl = gc->pl;
    const int64_t sb = g->t->stick, K = g->K, nch = pl->nch;
    gc->q = gc->nblk++ % 2;

    /* Corelet shares of this block, at the plan's fixed split point. */
    memset(gc->active, 0, sizeof gc->active);
    for (int c = 0; c < 2; c++) {
        gc->crow[c] = 0;
        gc->cnrows[c] = gc->mb;
        gc->cstick[c] = 0;
        gc->cnsticks[c] = gc->nbs;
    }
    gc->active[0] = 1;
    if (pl->split == SPLIT_ROWS) {
        gc->cnrows[0] = cc_min(pl->r0, gc->mb);
        gc->crow[1] = pl->r0;
        gc->cnrows[1] = gc->mb - pl->r0;
        gc->active[1] = gc->cnrows[1] > 0;
    } else if (pl->split == SPLIT_STICKS) {
        gc->cnsticks[0] = cc_min(pl->s0, gc->nbs);
        gc->cstick[1] = pl->s0;
        gc->cnsticks[1] = gc->nbs - pl->s0;
        gc->active[1] = gc->cnsticks[1] > 0;
    }

    int64_t last_kc = K - (nch - 1) * pl->KC;
    if (nch == 1) {
        emit_chunk(gc, CH_ONLY, last_kc);
    } else {
        emit_chunk(gc, CH_FIRST, pl->KC);
        cc_emit_repeat(e, nch - 2, 2, mid_chunk, gc);
        emit_chunk(gc, CH_LAST, last_kc);
    }

    /* Store the block once both corelets are past it. */
    for (int c = 0; c < gc->nc; c++)
        cc_emit_wait(e, ISA_U_DMAO, gc->cfull[gc->q][c]);
    cc_dma_shape st = cc_dma_groups(gc->mb, gc->nbs, g->M * sb, pl->MB * sb);
    cc_emit_dma(e, ISA_OP_DMA_ST, cc_reg(gc->rC, 0), cc_abs(gc->C[gc->q]), &st);
    for (int c = 0; c < gc->nc; c++)
        cc_emit_sig(e, ISA_U_DMAO, gc->cempty[gc->q][c]);

    /* Registers to the next block along N. */
    cc_emit_addi(e, gc->rA, -(nch - 1) * (pl->KC / g->t->lanes16) * g->M * sb);
    cc_emit_addi(e, gc->rB, pl->NBS * K * sb - (nch - 1) * pl->KC * sb);
    cc_emit_addi(e, gc->rC, pl->NBS * g->M * sb);
}

static void full_block(void *ctx)
{
    gemm_core *gc = ctx;
    gc->nbs = gc->pl->NBS;
    gc->cols = gc->nbs * gc->g->t->lanes16;
    emit_block(gc);
}

/* One row of blocks: mb rows across the tile's sticks, full blocks in a
 * loop (two per iteration, for the C slots), then the last block when it
 * is an edge block or ends in a partial stick. */
static void emit_row(gemm_core *gc)
{
    const tile_plan *pl = gc->pl;
    const int64_t sb = gc->g->t->stick, lanes = gc->g->t->lanes16, nbn = cc_ceil_div(pl->ns, pl->NBS);
    const int64_t last_nbs = pl->ns % pl->NBS ? pl->ns % pl->NBS : pl->NBS;
    const int64_t looped = pl->ns / pl->NBS - (last_nbs == pl->NBS && gc->tail < lanes);
    cc_emit_repeat(&gc->e, looped, 2, full_block, gc);
    if (looped < nbn) {
        gc->nbs = last_nbs;
        gc->cols = (last_nbs - 1) * lanes + gc->tail;
        emit_block(gc);
    }
    /* Registers to the first block of the next row. */
    cc_emit_addi(&gc->e, gc->rA, pl->MB * sb);
    cc_emit_addi(&gc->e, gc->rB, -nbn * pl->NBS * gc->g->K * sb);
    cc_emit_addi(&gc->e, gc->rC, pl->MB * sb - nbn * pl->NBS * gc->g->M * sb);
}

static void full_row(void *ctx)
{
    gemm_core *gc = ctx;
    gc->mb = gc->pl->MB;
    emit_row(gc);
}

/* Zero the padding lanes of the tile's partial last stick in both C
 * slots (rows 0..MB-1 of its group in the last block of a row) on sfp0:
 * an iota of step 0 writes +0 without reading what LX held (NaN
 * included; relu keeps a NaN, as PyTorch's does). */
static void emit_zero_padding(gemm_core *gc)
{
    const tile_plan *pl = gc->pl;
    const int64_t sb = gc->g->t->stick, last_nbs = pl->ns % pl->NBS ? pl->ns % pl->NBS : pl->NBS;
    cc_sfp_args z = {0};
    z.op = ISA_OP_SFP_IOTA;
    z.t = ISA_T_DL16;
    z.d = cc_abs(gc->C[0] + (last_nbs - 1) * pl->MB * sb);
    z.n0 = pl->MB;
    z.ds0 = sb;
    z.n1 = 2;
    z.ds1 = gc->C[1] - gc->C[0];
    cc_emit_sfp(&gc->e, &z);
}

static int emit_core(const gemm_ctx *g, isa_program *p, int core, int64_t m0, int64_t mt, int64_t g0, int64_t ns,
                     char *err, size_t errlen)
{
    gemm_core gc;
    memset(&gc, 0, sizeof gc);
    cc_emit_begin(&gc.e, g->t->cfg, p, core, err, errlen);
    cc_emit *e = &gc.e;
    if (mt == 0 || ns == 0) {
        cc_emit_halt(e);
        return cc_emit_failed(e) ? -1 : 0;
    }
    tile_plan pl;
    if (plan_tile(g, mt, ns, &pl))
        return cc_emit_error(e, "gemm tile %" PRId64 "x%" PRId64 " sticks does not fit %llu bytes of LX", mt, ns,
                             (unsigned long long)g->budget);
    gc.g = g;
    gc.pl = &pl;
    gc.nc = pl.split == SPLIT_NONE ? 1 : 2;
    const int64_t sb = g->t->stick, lanes = g->t->lanes16;
    gc.tail = cc_min(ns * lanes, g->N - g0 * lanes) - (ns - 1) * lanes;
    for (int s = 0; s < 2; s++) {
        gc.A[s] = cc_lx_alloc(e, (pl.KC / g->t->lanes16) * pl.MB * sb, "gemm A chunk");
        gc.B[s] = cc_lx_alloc(e, pl.NBS * pl.KC * sb, "gemm B chunk");
    }
    gc.P = pl.nch > 1 ? cc_lx_alloc(e, cc_ceil_div(pl.NBS * g->t->lanes16, g->t->lanes32) * pl.MB * sb, "gemm partial sums")
                      : 0;
    for (int q = 0; q < 2; q++)
        gc.C[q] = cc_lx_alloc(e, pl.NBS * pl.MB * sb, "gemm C block");
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < gc.nc; c++) {
            gc.full[s][c] = cc_tok_alloc(e, "gemm A/B full");
            gc.empty[s][c] = cc_tok_alloc(e, "gemm A/B empty");
            gc.cfull[s][c] = cc_tok_alloc(e, "gemm C full");
            gc.cempty[s][c] = cc_tok_alloc(e, "gemm C empty");
        }
    gc.rA = cc_reg_alloc(e);
    gc.rB = cc_reg_alloc(e);
    gc.rC = cc_reg_alloc(e);
    if (cc_emit_failed(e))
        return -1;

    cc_kernel_begin(e, "gemm");
    /* Prologue: every buffer starts empty; with a partial last stick sfp0
     * zeroes C's padding lanes and gives the first C credits. */
    int zero = gc.tail < lanes;
    if (zero)
        emit_zero_padding(&gc);
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < gc.nc; c++) {
            cc_emit_sig(e, ISA_U_DMAI, gc.empty[s][c]);
            cc_emit_sig(e, zero ? ISA_U_SFP0 : ISA_U_DMAO, gc.cempty[s][c]);
        }
    /* Blocks row by row; every block leaves the registers at the next
     * one, so identical blocks and rows can run as counted loops.  A loop
     * body is unrolled until it uses an even number of A/B slots and C
     * slots, so the slots (and their tokens) repeat every iteration. */
    cc_emit_li(e, gc.rA, (int64_t)g->a_dram + m0 * sb);
    cc_emit_li(e, gc.rB, (int64_t)g->b_dram + g0 * g->K * sb);
    cc_emit_li(e, gc.rC, (int64_t)g->c_dram + (g0 * g->M + m0) * sb);
    int64_t nbn = cc_ceil_div(ns, pl.NBS);
    int row_unroll = nbn % 2 == 0 && (nbn * pl.nch) % 2 == 0 ? 1 : 2;
    cc_emit_repeat(e, mt / pl.MB, row_unroll, full_row, &gc);
    if (mt % pl.MB) {
        gc.mb = mt % pl.MB;
        emit_row(&gc);
    }
    /* Epilogue: take back the credits so every token ends at zero. */
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < gc.nc; c++) {
            cc_emit_wait(e, ISA_U_DMAI, gc.empty[s][c]);
            cc_emit_wait(e, c ? ISA_U_PT1 : ISA_U_PT0, gc.cempty[s][c]);
        }
    cc_kernel_end(e);
    cc_emit_halt(e);
    return cc_emit_failed(e) ? -1 : 0;
}

/* ---- Shared panels: operands loaded from DRAM once, passed on the ring ----
 *
 * Cores of the gm x gn grid are numbered row by row, so the cores of a grid
 * row sit next to each other on the ring.  Every core keeps its whole A row
 * panel (mt rows x K) and B column panel (K x ns sticks) resident in LX,
 * at the same LX offsets on every core.  The panels arrive in items: an A
 * item is one row block (MB rows) x one K chunk (KC rows of B), a B item
 * one K chunk of the column panel.  Each item is loaded from DRAM by one
 * core of its grid row (A) or column (B), the items of a row or column
 * taking turns over its first la (lb) cores, and that core ring.send's it
 * to the others of the row (column) at the same LX offset.  DRAM so reads
 * A and B once, and writes C once.
 *
 * Tokens (the same numbers on every core):
 *   arrA[o], arrB[o]  an item from loader slot o has landed (remote: the
 *                     ring.send's token; the loader itself: sig on dmai).
 *                     One token per loader, since items from two loaders
 *                     may land out of order while one loader's land in order.
 *   loaded            dmai -> ring on a loader: an item is in LX to send on.
 *   rdy[c]            sfp1 -> ptc: the chunk's items are here (sfp1 waits for
 *                     the arrival tokens in chunk order and passes them on to
 *                     both corelets; with one corelet pt0 waits directly).
 *   cfull, cempty     ptc <-> dmao, the double-buffered C block as before.
 * Nothing waits for a remote core's consumer (panels are never overwritten,
 * so no credits go back): the only cross-core edges are data arrivals, and
 * they depend only on the sender's own loads, so there is no cycle.  With
 * the units' queues bounded, the core whose sequencer is furthest behind
 * still finds every item it waits for dispatched by its loader, so the
 * finite queues do not create one either.
 *
 * Each block of MB rows x ns sticks accumulates its K chunks in fp32 (P)
 * and writes DL16 to C[q] on the last chunk; dmao stores it while the next
 * block computes, so C streams out during the run instead of at its end. */

typedef struct {
    int64_t gm, gn;          /* grid */
    int64_t mt, ns;          /* the largest tile */
    int64_t MB, KC, nch;     /* row block, K chunk, chunks */
    int64_t la, lb;          /* loaders per grid row (A) and column (B) */
    double cycles;           /* estimate */
} share_plan;

/* The loaders per row or column that fit the tokens: arrival tokens for
 * la + lb loaders plus loaded, 2 rdy and 8 C tokens. */
#define SHARE_FIXED_TOKENS 11
#define SHARE_MAX_LOADERS 64
/* A core's rows go to at most this many row blocks: long products keep the
 * PT pipeline full (torch-spyre aims for 8 passes of 8 rows per product:
 * 2 blocks of a 256-row tile give each of the 2 PTs 64 rows) and cost the
 * simulator less host time per MAC. */
#define SHARE_MAX_ROW_BLOCKS 2
/* Items of at least this many sticks of K: one-stick items leave the PT
 * waiting on per-item DMA, ring and token overheads (1024^3: 0.40 of peak
 * with 64-row chunks, 0.44 with 128), when K has enough sticks for 4
 * such items. */
#define SHARE_MIN_KC_STICKS 2
/* At most this many chunk steps per core: the streams are straight code. */
#define SHARE_MAX_STEPS 256

/* DRAM bytes per core cycle the chip's channels can move (0: unknown). */
static double dram_bytes_per_cycle(const chip_config *cfg)
{
    if (cfg->dram_channels <= 0 || cfg->dram_burst_bytes == 0 || cfg->dram_burst_tck <= 0 || cfg->dram_tck_ns <= 0 ||
        cfg->clock_ghz <= 0)
        return 0;
    double gbs = cfg->dram_channels * (double)cfg->dram_burst_bytes / (cfg->dram_burst_tck * cfg->dram_tck_ns);
    return gbs / cfg->clock_ghz;
}

static uint64_t share_lx(const cc_target *t, int64_t K, int64_t mt, int64_t ns, int64_t MB, int64_t nch)
{
    int64_t sb = t->stick, kg = cc_ceil_div(K, t->lanes16);
    int64_t a = kg * mt * sb, b = ns * K * sb, c = ns * MB * sb;
    int64_t p = nch > 1 ? cc_ceil_div(ns * t->lanes16, t->lanes32) * MB * sb : 0;
    return (uint64_t)(a + b + p + 2 * c);
}

/* Estimated cycles of the shared scheme: the first items' way in, then the
 * slowest of the PT work, the chip's DRAM traffic, a loader's DMA and a
 * loader's ring sends, then the last block's store, which all cores make
 * at once through the shared DRAM. */
static double share_cost(const gemm_ctx *g, share_plan *sp)
{
    const cc_target *t = g->t;
    const chip_config *cfg = t->cfg;
    int64_t sb = t->stick, kg = cc_ceil_div(g->K, t->lanes16), cores = sp->gm * sp->gn;
    int64_t nbm = cc_ceil_div(sp->mt, sp->MB), steps = nbm * sp->nch;
    tile_plan blk = {0};
    blk.MB = sp->MB;
    blk.NBS = sp->ns;
    choose_split(t, &blk);
    int64_t rows = blk.split == SPLIT_ROWS ? cc_max(blk.r0, sp->MB - blk.r0) : sp->MB;
    int64_t sticks = blk.split == SPLIT_STICKS ? cc_max(blk.s0, sp->ns - blk.s0) : sp->ns;
    /* Each step also waits, on its critical path, for one item's issue on
     * a loader (its DMA or ring descriptor). */
    double pt = (double)nbm * (pt_cycles(t, rows, sticks * t->lanes16, g->K) - t->pt_insn_cycles) +
                (double)steps * (t->pt_insn_cycles + 4 * t->sync_cycles + t->dma_insn_cycles);
    double dbpc = dram_bytes_per_cycle(cfg);
    double chip_bytes = (double)(g->M * kg + g->K * g->GN + g->M * g->GN) * (double)sb;
    double dram = dbpc > 0 ? chip_bytes / dbpc : 0;
    double a_panel = (double)(sp->mt * kg * sb), b_panel = (double)(g->K * sp->ns * sb);
    double a_items = (double)steps / (double)sp->la, b_items = (double)sp->nch / (double)sp->lb;
    double dma = (a_panel / (double)sp->la + b_panel / (double)sp->lb) / t->dma_bytes_per_cycle +
                 (a_items + b_items) * t->dma_insn_cycles;
    double ring_bpc = cfg->ring_bytes_per_cycle > 0 ? cfg->ring_bytes_per_cycle : (double)sb;
    double ring = (a_panel / (double)sp->la * (double)(sp->gn - 1) + b_panel / (double)sp->lb * (double)(sp->gm - 1)) /
                      ring_bpc +
                  (a_items * (double)(sp->gn - 1) + b_items * (double)(sp->gm - 1)) * t->dma_insn_cycles;
    /* The first chunk waits for the first items of every loader, which
     * the chip's DRAM serves together, then for the loader's sends. */
    double a_item = (double)(cc_min(sp->MB, sp->mt) * (sp->KC / t->lanes16) * sb), b_item = (double)(sp->KC * sp->ns * sb);
    double first = (double)cores * (a_item + b_item) / (double)(sp->la + sp->lb);
    double fill = (dbpc > 0 ? first / dbpc : 0) + 2 * t->dma_insn_cycles +
                  (double)(sp->gn - 1) * (t->dma_insn_cycles + a_item / ring_bpc) +
                  (double)(sp->gm - 1) * (t->dma_insn_cycles + b_item / ring_bpc);
    /* The first block needs all of B and its rows of A: the later blocks'
     * PT work cannot start before the chip has read that. */
    if (dbpc > 0) {
        double block0 = (double)(g->K * g->GN + sp->gm * cc_min(sp->MB, sp->mt) * kg) * (double)sb / dbpc;
        double later = (double)(nbm - 1) * (pt / (double)nbm);
        if (block0 + later > pt)
            pt = block0 + later;
    }
    double last_c = (double)(cores * sp->MB * sp->ns * sb);
    double tail = (dbpc > 0 ? last_c / dbpc : 0) + pt_cycles(t, rows, sticks * t->lanes16, sp->KC);
    double body = pt;
    if (dram > body)
        body = dram;
    if (dma > body)
        body = dma;
    if (ring > body)
        body = ring;
    sp->cycles = fill + body + tail;
    return sp->cycles;
}

/* The best shared plan for up to g->cores cores; 0, or -1 when none fits
 * (LX, tokens, stream length). */
static int choose_share(const gemm_ctx *g, share_plan *out)
{
    const cc_target *t = g->t;
    int64_t lanes = t->lanes16, kg = cc_ceil_div(g->K, lanes);
    int64_t lmax = (t->cfg->tokens - SHARE_FIXED_TOKENS) / 2;
    lmax = cc_min(lmax, SHARE_MAX_LOADERS);
    if (lmax < 1)
        return -1;
    int have = 0;
    for (int64_t gm = 1; gm <= cc_min(g->cores, g->M); gm++)
        for (int64_t gn = 1; gn <= cc_min(g->cores / gm, g->GN); gn++) {
            share_plan sp = {0};
            sp.gm = gm;
            sp.gn = gn;
            sp.mt = cc_ceil_div(g->M, gm);
            sp.ns = cc_ceil_div(g->GN, gn);
            sp.la = cc_min(gn, lmax);
            sp.lb = cc_min(gm, lmax);
            if (sp.ns * lanes > 65535)
                continue;
            for (int64_t ks = kg >= 4 * SHARE_MIN_KC_STICKS ? SHARE_MIN_KC_STICKS : 1;; ks *= 2) {
                sp.KC = cc_min(ks, kg) * lanes;
                sp.nch = cc_ceil_div(g->K, sp.KC);
                for (int64_t parts = 1; parts <= SHARE_MAX_ROW_BLOCKS; parts *= 2) {
                    sp.MB = cc_round_up(cc_ceil_div(sp.mt, parts), t->pt_rows);
                    if (sp.MB > sp.mt)
                        sp.MB = sp.mt;
                    if (parts > 1 && sp.MB == cc_round_up(cc_ceil_div(sp.mt, parts / 2), t->pt_rows))
                        continue;
                    if (cc_ceil_div(sp.mt, sp.MB) * sp.nch > SHARE_MAX_STEPS ||
                        share_lx(t, g->K, sp.mt, sp.ns, sp.MB, sp.nch) > g->budget)
                        continue;
                    share_cost(g, &sp);
                    if (!have || sp.cycles < out->cycles) {
                        *out = sp;
                        have = 1;
                    }
                }
                if (ks >= kg || 2 * ks > KC_MAX_STICKS)
                    break;
            }
        }
    return have ? 0 : -1;
}

/* The estimate of the per-core scheme with grid gm x gn, with the chip's
 * DRAM bandwidth as a bound (its own plan_cost leaves that out). */
static double private_cost(const gemm_ctx *g, int64_t gm, int64_t gn)
{
    tile_plan pl;
    if (plan_tile(g, cc_ceil_div(g->M, gm), cc_ceil_div(g->GN, gn), &pl))
        return DBL_MAX;
    double dbpc = dram_bytes_per_cycle(g->t->cfg);
    double dram = dbpc > 0 ? pl.bytes * (double)(gm * gn) / dbpc : 0;
    return pl.cycles > dram ? pl.cycles : dram;
}

typedef struct {
    cc_emit e;
    const gemm_ctx *g;
    const share_plan *sp;
    int64_t row, col;          /* grid position */
    int64_t m0, mt, g0, ns;    /* tile */
    int64_t tail;              /* columns in the tile's last stick */
    int64_t A, B, P, C[2];     /* LX */
    int nc;
    tile_plan blk;             /* corelet split of a full block */
    int arrA[SHARE_MAX_LOADERS], arrB[SHARE_MAX_LOADERS], loaded, rdy[2], cfull[2][2], cempty[2][2];
} share_core;

static int64_t grid_core(const share_core *sc, int64_t row, int64_t col) { return row * sc->sp->gn + col; }

/* One item (A: row block rb, chunk j; B: chunk j): the loader's dmai and
 * ring instructions (nothing on other cores). */
static void share_item(share_core *sc, int is_a, int64_t rb, int64_t j, int64_t mb, int64_t kc)
{
    cc_emit *e = &sc->e;
    const gemm_ctx *g = sc->g;
    const share_plan *sp = sc->sp;
    const int64_t sb = g->t->stick, lanes = g->t->lanes16;
    int64_t idx = is_a ? rb * sp->nch + j : j;
    int64_t slot = idx % (is_a ? sp->la : sp->lb);
    int64_t loader = is_a ? grid_core(sc, sc->row, slot) : grid_core(sc, slot, sc->col);
    if (loader != e->core)
        return;
    int tok = is_a ? sc->arrA[slot] : sc->arrB[slot];
    int64_t lx, dram;
    cc_dma_shape sh;
    if (is_a) {
        int64_t gk = j * (sp->KC / lanes), groups = cc_ceil_div(kc, lanes);
        lx = sc->A + (gk * sc->mt + rb * sp->MB) * sb;
        dram = (int64_t)g->a_dram + (gk * g->M + sc->m0 + rb * sp->MB) * sb;
        sh = cc_dma_groups(mb, groups, sc->mt * sb, g->M * sb);
    } else {
        lx = sc->B + j * sp->KC * sb;
        dram = (int64_t)g->b_dram + (sc->g0 * g->K + j * sp->KC) * sb;
        sh = cc_dma_groups(kc, sc->ns, g->K * sb, g->K * sb);
    }
    int64_t peers = (is_a ? sp->gn : sp->gm) - 1;
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(lx), cc_abs(dram), &sh);
    cc_emit_sig(e, ISA_U_DMAI, tok);
    if (!peers)
        return;
    cc_emit_sig(e, ISA_U_DMAI, sc->loaded);
    cc_emit_wait(e, ISA_U_RING, sc->loaded);
    /* Nearest peers first: the earliest arrivals are the shortest paths. */
    int64_t self = is_a ? sc->col : sc->row;
    for (int64_t d = 1; d <= peers; d++)
        for (int side = 0; side < 2; side++) {
            int64_t p = side ? self - d : self + d;
            if (p < 0 || p > peers)
                continue;
            int dst = (int)(is_a ? grid_core(sc, sc->row, p) : grid_core(sc, p, sc->col));
            cc_dma_shape same = cc_dma_groups(sh.run, sh.n[0], sh.ds[0], sh.ds[0]);
            cc_emit_ring(e, ISA_OP_RING_SEND, dst, tok, cc_abs(lx), cc_abs(lx), &same);
        }
}

static void share_mm(share_core *sc, int c, int64_t rb, int64_t j, int64_t mb, int64_t kc, int q)
{
    const gemm_ctx *g = sc->g;
    const share_plan *sp = sc->sp;
    const int64_t sb = g->t->stick, lanes = g->t->lanes16, rs = sp->MB * sb;
    int by_rows = sc->blk.split == SPLIT_ROWS, by_sticks = sc->blk.split == SPLIT_STICKS;
    int64_t r = c && by_rows ? sc->blk.r0 : 0, rows = !by_rows ? mb : c ? mb - sc->blk.r0 : cc_min(mb, sc->blk.r0);
    int64_t st = c && by_sticks ? sc->blk.s0 : 0;
    int64_t nst = !by_sticks ? sc->ns : c ? sc->ns - sc->blk.s0 : cc_min(sc->ns, sc->blk.s0);
    if (rows <= 0 || nst <= 0)
        return;
    int64_t cols = cc_min(nst * lanes, g->N - (sc->g0 + st) * lanes);
    int first = j == 0, last = j == sp->nch - 1;
    isa_addr p_at = cc_abs(sc->P + r * sb + st * (lanes / g->t->lanes32) * rs);
    isa_addr c_at = cc_abs(sc->C[q] + r * sb + st * rs);
    cc_pt_args pa = {0};
    pa.c = c;
    pa.a = cc_abs(sc->A + (j * (sp->KC / lanes) * sc->mt + rb * sp->MB + r) * sb);
    pa.as = sc->mt * sb;
    pa.b = cc_abs(sc->B + (st * g->K + j * sp->KC) * sb);
    pa.bs = g->K * sb;
    pa.m = rows;
    pa.n = cols;
    pa.k = kc;
    pa.ds = rs;
    pa.flags = (first ? 0 : ISA_F_ACC) | (last ? 0 : ISA_F_F32);
    pa.d = last ? c_at : p_at;
    if (!first) {
        pa.p = p_at;
        pa.ps = rs;
    }
    cc_emit_pt(&sc->e, &pa);
}

static int emit_share_core(const gemm_ctx *g, const share_plan *sp, isa_program *p, int core, char *err, size_t errlen)
{
    share_core sc;
    memset(&sc, 0, sizeof sc);
    cc_emit_begin(&sc.e, g->t->cfg, p, core, err, errlen);
    cc_emit *e = &sc.e;
    if (core >= sp->gm * sp->gn) {
        cc_emit_halt(e);
        return cc_emit_failed(e) ? -1 : 0;
    }
    const cc_target *t = g->t;
    const int64_t sb = t->stick, lanes = t->lanes16, kg = cc_ceil_div(g->K, lanes);
    sc.g = g;
    sc.sp = sp;
    sc.row = core / sp->gn;
    sc.col = core % sp->gn;
    cc_split(g->M, sp->gm, sc.row, &sc.m0, &sc.mt);
    cc_split(g->GN, sp->gn, sc.col, &sc.g0, &sc.ns);
    sc.tail = cc_min(sc.ns * lanes, g->N - sc.g0 * lanes) - (sc.ns - 1) * lanes;
    sc.blk.MB = sp->MB;
    sc.blk.NBS = sc.ns;
    choose_split(t, &sc.blk);
    sc.nc = sc.blk.split == SPLIT_NONE ? 1 : 2;
    /* The same layout on every core, sized for the largest tile. */
    sc.A = cc_lx_alloc(e, kg * sp->mt * sb, "gemm A panel");
    sc.B = cc_lx_alloc(e, sp->ns * g->K * sb, "gemm B panel");
    sc.P = sp->nch > 1 ? cc_lx_alloc(e, cc_ceil_div(sp->ns * lanes, t->lanes32) * sp->MB * sb, "gemm partial sums") : 0;
    for (int q = 0; q < 2; q++)
        sc.C[q] = cc_lx_alloc(e, sp->ns * sp->MB * sb, "gemm C block");
    for (int64_t o = 0; o < sp->la; o++)
        sc.arrA[o] = cc_tok_alloc(e, "gemm A arrival");
    for (int64_t o = 0; o < sp->lb; o++)
        sc.arrB[o] = cc_tok_alloc(e, "gemm B arrival");
    sc.loaded = cc_tok_alloc(e, "gemm item loaded");
    for (int c = 0; c < 2; c++)
        sc.rdy[c] = cc_tok_alloc(e, "gemm chunk ready");
    for (int q = 0; q < 2; q++)
        for (int c = 0; c < 2; c++) {
            sc.cfull[q][c] = cc_tok_alloc(e, "gemm C full");
            sc.cempty[q][c] = cc_tok_alloc(e, "gemm C empty");
        }
    if (cc_emit_failed(e))
        return -1;

    cc_kernel_begin(e, "gemm");
    int zero = sc.tail < lanes;
    if (zero) {
        /* The padding lanes of the tile's partial last stick in both C
         * slots: an iota of step 0 writes +0 whatever LX held. */
        cc_sfp_args z = {0};
        z.op = ISA_OP_SFP_IOTA;
        z.t = ISA_T_DL16;
        z.d = cc_abs(sc.C[0] + (sc.ns - 1) * sp->MB * sb);
        z.n0 = sp->MB;
        z.ds0 = sb;
        z.n1 = 2;
        z.ds1 = sc.C[1] - sc.C[0];
        cc_emit_sfp(e, &z);
    }
    for (int q = 0; q < 2; q++)
        for (int c = 0; c < sc.nc; c++)
            cc_emit_sig(e, zero ? ISA_U_SFP0 : ISA_U_DMAO, sc.cempty[q][c]);

    int64_t nbm = cc_ceil_div(sc.mt, sp->MB);
    for (int64_t rb = 0; rb < nbm; rb++) {
        int64_t mb = cc_min(sp->MB, sc.mt - rb * sp->MB);
        int q = (int)(rb % 2);
        for (int64_t j = 0; j < sp->nch; j++) {
            int64_t kc = cc_min(sp->KC, g->K - j * sp->KC);
            share_item(&sc, 1, rb, j, mb, kc);
            if (rb == 0)
                share_item(&sc, 0, rb, j, mb, kc);
            int ta = sc.arrA[(rb * sp->nch + j) % sp->la], tb = sc.arrB[j % sp->lb];
            int last = j == sp->nch - 1;
            if (sc.nc == 2) {
                cc_emit_wait(e, ISA_U_SFP1, ta);
                if (rb == 0)
                    cc_emit_wait(e, ISA_U_SFP1, tb);
                cc_emit_sig(e, ISA_U_SFP1, sc.rdy[0]);
                cc_emit_sig(e, ISA_U_SFP1, sc.rdy[1]);
            }
            for (int c = 0; c < sc.nc; c++) {
                isa_unit pt = c ? ISA_U_PT1 : ISA_U_PT0;
                if (sc.nc == 2) {
                    cc_emit_wait(e, pt, sc.rdy[c]);
                } else {
                    cc_emit_wait(e, pt, ta);
                    if (rb == 0)
                        cc_emit_wait(e, pt, tb);
                }
                if (last)
                    cc_emit_wait(e, pt, sc.cempty[q][c]);
                share_mm(&sc, c, rb, j, mb, kc, q);
                if (last)
                    cc_emit_sig(e, pt, sc.cfull[q][c]);
            }
        }
        for (int c = 0; c < sc.nc; c++)
            cc_emit_wait(e, ISA_U_DMAO, sc.cfull[q][c]);
        cc_dma_shape st = cc_dma_groups(mb, sc.ns, g->M * sb, sp->MB * sb);
        cc_emit_dma(e, ISA_OP_DMA_ST, cc_abs((int64_t)g->c_dram + (sc.g0 * g->M + sc.m0 + rb * sp->MB) * sb),
                    cc_abs(sc.C[q]), &st);
        for (int c = 0; c < sc.nc; c++)
            cc_emit_sig(e, ISA_U_DMAO, sc.cempty[q][c]);
    }
    for (int q = 0; q < 2; q++)
        for (int c = 0; c < sc.nc; c++)
            cc_emit_wait(e, c ? ISA_U_PT1 : ISA_U_PT0, sc.cempty[q][c]);
    cc_kernel_end(e);
    cc_emit_halt(e);
    return cc_emit_failed(e) ? -1 : 0;
}

isa_program *shapes_gemm(const chip_config *cfg, int64_t M, int64_t N, int64_t K, const cc_gen_opts *opts,
                              char *err, size_t errlen)
{
    cc_gen_opts o;
    char why[200];
    if (cc_resolve_opts(cfg, opts, &o, why, sizeof why)) {
        snprintf(err, errlen, "gemm %" PRId64 "x%" PRId64 "x%" PRId64 ": %s", M, N, K, why);
        return NULL;
    }
    if (M <= 0 || N <= 0 || K <= 0) {
        snprintf(err, errlen, "gemm %" PRId64 "x%" PRId64 "x%" PRId64 ": every dimension must be positive", M, N, K);
        return NULL;
    }
    cc_target t;
    cc_target_init(&t, cfg);
    const int64_t sb = t.stick, max_rows = INT32_MAX / sb;
    if (M > max_rows || K > max_rows) {
        snprintf(err, errlen,
                 "gemm %" PRId64 "x%" PRId64 "x%" PRId64 ": M and K must be at most %" PRId64
                 " (DRAM group strides are 32-bit)",
                 M, N, K, max_rows);
        return NULL;
    }
    gemm_ctx g = {0};
    g.t = &t;
    g.M = M;
    g.N = N;
    g.K = K;
    g.GN = cc_ceil_div(N, t.lanes16);
    g.budget = cfg->lx_usable_bytes;
    g.cores = o.cores;
    double dram = ((double)M * (double)cc_ceil_div(K, t.lanes16) + (double)K * (double)g.GN + (double)M * (double)g.GN) *
                  (double)sb;
    if (dram > (double)cfg->dram_bytes || dram >= (double)(1ull << 40)) {
        snprintf(err, errlen, "gemm %" PRId64 "x%" PRId64 "x%" PRId64 ": tensors need %.0f bytes of DRAM, more than %s has",
                 M, N, K, dram, cfg->name);
        return NULL;
    }
    int64_t gm = 0, gn = 0;
    share_plan sp;
    int shared = choose_share(&g, &sp) == 0;
    if (choose_grid(&g, &gm, &gn)) {
        if (!shared) {
            snprintf(err, errlen, "gemm %" PRId64 "x%" PRId64 "x%" PRId64 ": no tiling fits %llu bytes of LX per core",
                     M, N, K, (unsigned long long)g.budget);
            return NULL;
        }
    } else if (shared && sp.cycles >= private_cost(&g, gm, gn)) {
        shared = 0;
    }
    isa_program *p = cc_program_new(cfg, "%C = aten.mm(%A, %B)\n", NULL, err, errlen);
    if (!p)
        return NULL;
    g.a_dram = shapes_add_2d(p, cfg, "A", ISA_ROLE_INPUT, M, K);
    g.b_dram = shapes_add_2d(p, cfg, "B", ISA_ROLE_INPUT, K, N);
    g.c_dram = shapes_add_2d(p, cfg, "C", ISA_ROLE_OUTPUT, M, N);
    for (int core = 0; core < cfg->cores; core++) {
        int64_t m0 = 0, mt = 0, g0 = 0, ns = 0;
        if (core < gm * gn) {
            cc_split(M, gm, core / gn, &m0, &mt);
            cc_split(g.GN, gn, core % gn, &g0, &ns);
        }
        char why[256] = "";
        if (shared ? emit_share_core(&g, &sp, p, core, why, sizeof why)
                   : emit_core(&g, p, core, m0, mt, g0, ns, why, sizeof why)) {
            snprintf(err, errlen, "gemm %" PRId64 "x%" PRId64 "x%" PRId64 ": %s", M, N, K, why);
            isa_program_free(p);
            return NULL;
        }
    }
    return p;
}
