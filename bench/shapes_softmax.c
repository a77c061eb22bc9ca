/* shapes_softmax.c: the hand-shaped softmax the calibration measures:
 * y (rows, cols) = softmax(x, dim=-1), DL16 throughout.
 *
 * Work division: rows split across the cores in use (uneven allowed; a core
 * with no rows only halts, or with two kernels only joins the barrier).  A
 * core walks its rows in chunks of R rows that are loaded into two
 * alternating LX slots (G groups of R sticks, G = sticks per row) and
 * computed in place; corelet 0 takes rows [0, h0) of a chunk and corelet 1
 * rows [h0, R).  Each SFP instruction covers all of a half's rows (i1
 * walks rows, i0 the sticks of a row); padding lanes never enter the
 * reductions (vl), but they are not zero in y (exp(0 - max) / sum), as
 * sticks are stored whole.
 *
 * lx_plan=1: one fused kernel "softmax"; per half-chunk, on its SFP unit:
 *
 *   rmax (f=lanes, vl=cols) -> mx[i]     one DL16 element per row
 *   sub  x - mx[i]  (bm=elem)            in place
 *   exp                                  in place
 *   rsum (f=lanes, vl=cols) -> sm[i]
 *   div  x / sm[i]  (bm=elem)            in place
 *
 * lx_plan=0: the structure TorchInductor gives softmax when no tensor stays
 * on chip between kernels: a reduction kernel and a pointwise kernel with
 * the same chunks, slots and tokens, and a barrier between them; x is read
 * by both, e = exp(x - max) is never stored, and only the two per-row
 * statistics go through DRAM, in the scratch tensors "rmax" and "rsum"
 * (rows, 1): one stick per row, the value in its element 0 (the other
 * lanes are whatever LX held), so any chunk of rows is whole sticks of
 * DRAM and no two cores or chunks share a stick (packing 64 rows to a
 * stick would need chunk and core boundaries at multiples of 64 rows).
 *
 *   softmax_reduce:    load x; rmax -> M[slot], sub, exp (in place: the
 *                      slot is scratch), rsum -> S[slot]; store M, S to
 *                      rmax, rsum
 *   bar
 *   softmax_normalize: load x again, rmax -> M[slot], rsum -> S[slot];
 *                      sub, exp, div (bm=elem, b one stick per row), in
 *                      place; store y
 *
 * Units and tokens (slot s, corelet c), the same in every kernel:
 *   dmai: wait empty[s][c]; load slot s; sig full[s][c]
 *   sfpc: wait full[s][c]; the SFP ops; sig done[s][c]
 *   dmao: wait done[s][c]; store half c; sig empty[s][c]
 * empty starts with one credit (a kernel's prologue) and is drained at the
 * kernel's end.  Full chunks run in a counted loop unrolled by two (one
 * per slot), with the DRAM addresses in registers advanced by addi. */
#include "shapes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { SM_FUSED, SM_REDUCE, SM_NORMALIZE };

/* DRAM offsets of the tensors (rmax and rsum only without LX planning). */
typedef struct {
    uint64_t x, y, rmax, rsum;
} sm_dram;

typedef struct {
    cc_emit e;
    const cc_target *t;
    int64_t rows, cols, G;     /* tensor shape, sticks per row */
    int64_t R, h0;             /* chunk rows, corelet 1's first row */
    int nc;                    /* corelets in use */
    int phase;                 /* kernel being emitted, SM_* */
    int64_t X[2];              /* slots: chunk rows */
    int64_t M[2], S[2];        /* slots: a max and a sum stick per row (lx_plan=0) */
    int64_t mx[2], sm[2];      /* per corelet: row maxima, row sums (fused) */
    int full[2][2], done[2][2], empty[2][2];
    int rX, rY, rM, rS;        /* DRAM addresses: x, y, rmax, rsum */
    int64_t chunk;
} sm_core;

#define SM_MIN_CHUNK_ROWS 16

/* LX bytes for chunks of R rows.  Fused: two slots and, per corelet, a
 * DL16 max and sum per row (sized for all R rows: an upper bound).  Two
 * kernels: two slots with a max and a sum stick per row. */
static uint64_t sm_lx(const cc_target *t, int64_t G, int64_t R, int lx_plan)
{
    int64_t scal = cc_round_up(R * 2, t->stick);
    if (lx_plan)
        return (uint64_t)(2 * G * R * t->stick + 4 * scal);
    return (uint64_t)(2 * (G + 2) * R * t->stick);
}

/* The SFP steps of the current kernel on nrows rows of a chunk starting at
 * LX x, on corelet c's SFP unit, in place; row i's max and sum are the
 * DL16 elements at mx + i * stride and sum + i * stride. */
static void emit_rows(sm_core *sc, int c, int64_t x, int64_t nrows, int64_t mx, int64_t sum, int64_t stride)
{
    cc_emit *e = &sc->e;
    const int64_t sb = sc->t->stick, R = sc->R, G = sc->G;
    const int reduce = sc->phase != SM_NORMALIZE, normalize = sc->phase != SM_REDUCE;
    /* Row reductions: i0 walks a row's sticks, i1 the rows. */
    cc_sfp_args red = {0};
    red.c = c;
    red.t = ISA_T_DL16;
    red.bm = ISA_BM_VEC;
    red.flags = ISA_F_LANES;
    red.a = cc_abs(x);
    red.n0 = G;
    red.as0 = R * sb;
    red.n1 = nrows;
    red.as1 = sb;
    red.ds1 = stride;
    red.vl = sc->cols;
    /* Elementwise in place over the same sticks. */
    cc_sfp_args ew = {0};
    ew.c = c;
    ew.t = ISA_T_DL16;
    ew.d = ew.a = cc_abs(x);
    ew.n0 = G;
    ew.ds0 = ew.as0 = R * sb;
    ew.n1 = nrows;
    ew.ds1 = ew.as1 = sb;

    if (reduce) {
        red.op = ISA_OP_SFP_RMAX;
        red.d = cc_abs(mx);
        cc_emit_sfp(e, &red);
    }
    ew.op = ISA_OP_SFP_SUB;
    ew.bm = ISA_BM_ELEM;
    ew.b = cc_abs(mx);
    ew.bs1 = stride;
    cc_emit_sfp(e, &ew);
    ew.op = ISA_OP_SFP_EXP;
    ew.bm = ISA_BM_VEC;
    ew.b = cc_abs(0);
    ew.bs1 = 0;
    cc_emit_sfp(e, &ew);
    if (reduce) {
        red.op = ISA_OP_SFP_RSUM;
        red.d = cc_abs(sum);
        cc_emit_sfp(e, &red);
    }
    if (normalize) {
        ew.op = ISA_OP_SFP_DIV;
        ew.bm = ISA_BM_ELEM;
        ew.b = cc_abs(sum);
        ew.bs1 = stride;
        cc_emit_sfp(e, &ew);
    }
}

static void emit_chunk(sm_core *sc, int64_t r)
{
    cc_emit *e = &sc->e;
    const int64_t sb = sc->t->stick, R = sc->R, G = sc->G;
    int s = (int)(sc->chunk++ % 2);
    int64_t off[2] = {0, sc->h0}, n[2] = {cc_min(sc->h0, r), cc_max(r - sc->h0, 0)};

    /* Both corelets in use take part in every hand-off, even with no rows
     * in this chunk, so a slot is only reloaded after every reader. */
    for (int c = 0; c < sc->nc; c++)
        cc_emit_wait(e, ISA_U_DMAI, sc->empty[s][c]);
    cc_dma_shape ld = cc_dma_groups(r, G, R * sb, sc->rows * sb);
    cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(sc->X[s]), cc_reg(sc->rX, 0), &ld);
    cc_emit_addi(e, sc->rX, R * sb);
    if (sc->phase == SM_NORMALIZE) { /* the chunk's maxima and sums: one stick per row */
        cc_dma_shape stats = cc_dma_groups(r, 1, 0, 0);
        cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(sc->M[s]), cc_reg(sc->rM, 0), &stats);
        cc_emit_dma(e, ISA_OP_DMA_LD, cc_abs(sc->S[s]), cc_reg(sc->rS, 0), &stats);
    }
    for (int c = 0; c < sc->nc; c++)
        cc_emit_sig(e, ISA_U_DMAI, sc->full[s][c]);

    for (int c = 0; c < sc->nc; c++) {
        isa_unit u = c ? ISA_U_SFP1 : ISA_U_SFP0;
        cc_emit_wait(e, u, sc->full[s][c]);
        if (n[c] > 0) {
            int64_t x = sc->X[s] + off[c] * sb;
            if (sc->phase == SM_FUSED)
                emit_rows(sc, c, x, n[c], sc->mx[c], sc->sm[c], 2);
            else
                emit_rows(sc, c, x, n[c], sc->M[s] + off[c] * sb, sc->S[s] + off[c] * sb, sb);
        }
        cc_emit_sig(e, u, sc->done[s][c]);
    }

    for (int c = 0; c < sc->nc; c++) {
        cc_emit_wait(e, ISA_U_DMAO, sc->done[s][c]);
        if (n[c] > 0 && sc->phase == SM_REDUCE) { /* the half's maxima and sums */
            cc_dma_shape half = cc_dma_groups(n[c], 1, 0, 0);
            cc_emit_dma(e, ISA_OP_DMA_ST, cc_reg(sc->rM, off[c] * sb), cc_abs(sc->M[s] + off[c] * sb), &half);
            cc_emit_dma(e, ISA_OP_DMA_ST, cc_reg(sc->rS, off[c] * sb), cc_abs(sc->S[s] + off[c] * sb), &half);
        } else if (n[c] > 0) {
            cc_dma_shape st = cc_dma_groups(n[c], G, sc->rows * sb, R * sb);
            cc_emit_dma(e, ISA_OP_DMA_ST, cc_reg(sc->rY, off[c] * sb), cc_abs(sc->X[s] + off[c] * sb), &st);
        }
        cc_emit_sig(e, ISA_U_DMAO, sc->empty[s][c]);
    }
    if (sc->phase != SM_FUSED) {
        cc_emit_addi(e, sc->rM, R * sb);
        cc_emit_addi(e, sc->rS, R * sb);
    }
    if (sc->phase != SM_REDUCE)
        cc_emit_addi(e, sc->rY, R * sb);
}

static void full_chunk(void *ctx)
{
    sm_core *sc = ctx;
    emit_chunk(sc, sc->R);
}

/* One kernel over the core's rows [r0, r0 + rt), with the tensors it uses
 * at their DRAM offsets. */
static void emit_kernel(sm_core *sc, const char *name, int phase, const sm_dram *dram, int64_t r0, int64_t rt)
{
    cc_emit *e = &sc->e;
    const int64_t sb = sc->t->stick;
    sc->phase = phase;
    sc->chunk = 0;
    cc_kernel_begin(e, name);
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < sc->nc; c++)
            cc_emit_sig(e, ISA_U_DMAI, sc->empty[s][c]);
    cc_emit_li(e, sc->rX, (int64_t)dram->x + r0 * sb);
    if (phase != SM_REDUCE)
        cc_emit_li(e, sc->rY, (int64_t)dram->y + r0 * sb);
    if (phase != SM_FUSED) {
        cc_emit_li(e, sc->rM, (int64_t)dram->rmax + r0 * sb);
        cc_emit_li(e, sc->rS, (int64_t)dram->rsum + r0 * sb);
    }
    int64_t rest = rt % sc->R;
    cc_emit_repeat(e, rt / sc->R, 2, full_chunk, sc);
    if (rest)
        emit_chunk(sc, rest);
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < sc->nc; c++)
            cc_emit_wait(e, ISA_U_DMAI, sc->empty[s][c]);
    /* The next kernel reads what every core of this one wrote. */
    if (phase == SM_REDUCE)
        cc_emit_bar(e);
    cc_kernel_end(e);
}

static int emit_core(const cc_target *t, isa_program *p, int core, int lx_plan, int64_t rows, int64_t cols,
                     const sm_dram *dram, int64_t r0, int64_t rt, char *err, size_t errlen)
{
    sm_core sc;
    memset(&sc, 0, sizeof sc);
    cc_emit *e = &sc.e;
    cc_emit_begin(e, t->cfg, p, core, err, errlen);
    if (rt == 0) {
        if (!lx_plan) /* every core takes part in the barrier between the kernels */
            cc_emit_bar(e);
        cc_emit_halt(e);
        return cc_emit_failed(e) ? -1 : 0;
    }
    sc.t = t;
    sc.rows = rows;
    sc.cols = cols;
    sc.G = cc_ceil_div(cols, t->lanes16);
    /* Chunk rows: the most that fit, but no more than a quarter of the
     * core's rows (so loads, compute and stores overlap) unless that is
     * below SM_MIN_CHUNK_ROWS, where a chunk is not worth its hand-offs. */
    int64_t lo = 1, hi = cc_min(rt, 65535);
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (sm_lx(t, sc.G, mid, lx_plan) <= t->cfg->lx_usable_bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (sm_lx(t, sc.G, lo, lx_plan) > t->cfg->lx_usable_bytes)
        return cc_emit_error(e, "softmax rows of %" PRId64 " columns do not fit %llu bytes of LX", cols,
                             (unsigned long long)t->cfg->lx_usable_bytes);
    int64_t R = cc_min(lo, cc_max(cc_ceil_div(rt, 4), cc_min(rt, SM_MIN_CHUNK_ROWS)));
    sc.R = R;
    sc.nc = R >= 2 && t->corelets >= 2 ? 2 : 1;
    sc.h0 = sc.nc == 2 ? cc_ceil_div(R, 2) : R;

    for (int s = 0; s < 2; s++) {
        sc.X[s] = cc_lx_alloc(e, sc.G * R * t->stick, "softmax chunk");
        if (!lx_plan) {
            sc.M[s] = cc_lx_alloc(e, R * t->stick, "softmax row maxima");
            sc.S[s] = cc_lx_alloc(e, R * t->stick, "softmax row sums");
        }
    }
    for (int c = 0; lx_plan && c < 2; c++) {
        sc.mx[c] = cc_lx_alloc(e, sc.h0 * 2, "softmax row max");
        sc.sm[c] = cc_lx_alloc(e, sc.h0 * 2, "softmax row sum");
    }
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < sc.nc; c++) {
            sc.full[s][c] = cc_tok_alloc(e, "softmax full");
            sc.done[s][c] = cc_tok_alloc(e, "softmax done");
            sc.empty[s][c] = cc_tok_alloc(e, "softmax empty");
        }
    sc.rX = cc_reg_alloc(e);
    sc.rY = cc_reg_alloc(e);
    if (!lx_plan) {
        sc.rM = cc_reg_alloc(e);
        sc.rS = cc_reg_alloc(e);
    }
    if (cc_emit_failed(e))
        return -1;

    if (lx_plan) {
        emit_kernel(&sc, "softmax", SM_FUSED, dram, r0, rt);
    } else {
        emit_kernel(&sc, "softmax_reduce", SM_REDUCE, dram, r0, rt);
        emit_kernel(&sc, "softmax_normalize", SM_NORMALIZE, dram, r0, rt);
    }
    cc_emit_halt(e);
    return cc_emit_failed(e) ? -1 : 0;
}

isa_program *shapes_softmax(const chip_config *cfg, int64_t rows, int64_t cols, const cc_gen_opts *opts,
                                 char *err, size_t errlen)
{
    cc_gen_opts o;
    char why[256] = "";
    if (cc_resolve_opts(cfg, opts, &o, why, sizeof why)) {
        snprintf(err, errlen, "softmax %" PRId64 "x%" PRId64 ": %s", rows, cols, why);
        return NULL;
    }
    if (rows <= 0 || cols <= 0) {
        snprintf(err, errlen, "softmax %" PRId64 "x%" PRId64 ": both dimensions must be positive", rows, cols);
        return NULL;
    }
    cc_target t;
    cc_target_init(&t, cfg);
    int64_t G = cc_ceil_div(cols, t.lanes16);
    /* DRAM group strides are 32-bit, sticks per row a 16-bit loop count,
     * the valid length of a reduction 24 bits. */
    const int64_t max_rows = INT32_MAX / t.stick, max_cols = cc_min(65535 * t.lanes16, (1 << 24) - 1);
    if (rows > max_rows || cols > max_cols) {
        snprintf(err, errlen,
                 "softmax %" PRId64 "x%" PRId64 ": too large (at most %" PRId64 " rows of %" PRId64 " columns)", rows,
                 cols, max_rows, max_cols);
        return NULL;
    }
    /* x and y; without LX planning also the row maxima and sums. */
    double dram = 2.0 * (double)rows * (double)G * (double)t.stick +
                  (o.lx_plan ? 0.0 : 2.0 * (double)rows * (double)t.stick);
    if (dram > (double)cfg->dram_bytes) {
        snprintf(err, errlen, "softmax %" PRId64 "x%" PRId64 ": tensors need %.0f bytes of DRAM, more than %s has", rows,
                 cols, dram, cfg->name);
        return NULL;
    }
    if (sm_lx(&t, G, 1, o.lx_plan) > cfg->lx_usable_bytes) {
        snprintf(err, errlen,
                 "softmax %" PRId64 "x%" PRId64 ": one row of %" PRId64 " columns does not fit %llu bytes of LX twice",
                 rows, cols, cols, (unsigned long long)cfg->lx_usable_bytes);
        return NULL;
    }
    isa_program *p = cc_program_new(cfg, "%y = aten._softmax(%x, -1, False)\n", NULL, err, errlen);
    if (!p)
        return NULL;
    sm_dram dram_at = {0};
    dram_at.x = shapes_add_2d(p, cfg, "x", ISA_ROLE_INPUT, rows, cols);
    dram_at.y = shapes_add_2d(p, cfg, "y", ISA_ROLE_OUTPUT, rows, cols);
    if (!o.lx_plan) {
        dram_at.rmax = shapes_add_2d(p, cfg, "rmax", ISA_ROLE_SCRATCH, rows, 1);
        dram_at.rsum = shapes_add_2d(p, cfg, "rsum", ISA_ROLE_SCRATCH, rows, 1);
    }
    int64_t used = cc_min(rows, o.cores);
    for (int core = 0; core < cfg->cores; core++) {
        int64_t r0 = 0, rt = 0;
        if (core < used)
            cc_split(rows, used, core, &r0, &rt);
        if (emit_core(&t, p, core, o.lx_plan, rows, cols, &dram_at, r0, rt, why, sizeof why)) {
            snprintf(err, errlen, "softmax %" PRId64 "x%" PRId64 ": %s", rows, cols, why);
            isa_program_free(p);
            return NULL;
        }
    }
    return p;
}
