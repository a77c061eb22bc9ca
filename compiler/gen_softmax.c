/* gen_softmax.c: y (rows, cols) = softmax(x, dim=-1), DL16 throughout.
 *
 * Work division: rows split across the cores (uneven allowed; a core with
 * no rows only halts).  A core walks its rows in chunks of R rows that are
 * loaded into two alternating LX slots (G groups of R sticks, G = sticks
 * per row) and computed in place; corelet 0 takes rows [0, h0) of a chunk
 * and corelet 1 rows [h0, R).  Per half-chunk, on its SFP unit:
 *
 *   rmax (f=lanes, vl=cols) -> mx[i]     one DL16 element per row
 *   sub  x - mx[i]  (bm=elem)            in place
 *   exp                                  in place
 *   rsum (f=lanes, vl=cols) -> sm[i]
 *   div  x / sm[i]  (bm=elem)            in place
 *
 * each one instruction covering all the half's rows (i1 walks rows, i0 the
 * sticks of a row).  Padding lanes never enter the reductions (vl); note
 * that they are not zero in y (exp(0 - max) / sum), as sticks are stored
 * whole.
 *
 * Units and tokens (slot s, corelet c):
 *   dmai: wait empty[s][c]; load slot s; sig full[s][c]
 *   sfpc: wait full[s][c]; the five ops; sig done[s][c]
 *   dmao: wait done[s][c]; store half c; sig empty[s][c]
 * empty starts with one credit (prologue) and is drained at the end.  Full
 * chunks run in a counted loop unrolled by two (one per slot), with the
 * DRAM addresses in registers advanced by addi. */
#include "codegen.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    cc_emit e;
    const cc_target *t;
    int64_t rows, cols, G;     /* tensor shape, sticks per row */
    int64_t R, h0;             /* chunk rows, corelet 1's first row */
    int nc;                    /* corelets in use */
    int64_t X[2], mx[2], sm[2];
    int full[2][2], done[2][2], empty[2][2];
    int rX, rY;
    int64_t chunk;
} sm_core;

#define SM_MIN_CHUNK_ROWS 16

/* LX bytes for chunks of R rows: two slots and, per corelet, a DL16 max
 * and sum per row (sized for all R rows: an upper bound). */
static uint64_t sm_lx(const cc_target *t, int64_t G, int64_t R)
{
    int64_t scal = cc_round_up(R * 2, t->stick);
    return (uint64_t)(2 * G * R * t->stick + 4 * scal);
}

/* The five softmax steps on nrows rows of a chunk starting at LX x, on
 * corelet c's SFP unit, in place. */
static void emit_rows(sm_core *sc, int c, int64_t x, int64_t nrows)
{
    cc_emit *e = &sc->e;
    const int64_t sb = sc->t->stick, R = sc->R, G = sc->G;
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
    red.ds1 = 2;
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

    red.op = ISA_OP_SFP_RMAX;
    red.d = cc_abs(sc->mx[c]);
    cc_emit_sfp(e, &red);
    ew.op = ISA_OP_SFP_SUB;
    ew.bm = ISA_BM_ELEM;
    ew.b = cc_abs(sc->mx[c]);
    ew.bs1 = 2;
    cc_emit_sfp(e, &ew);
    ew.op = ISA_OP_SFP_EXP;
    ew.bm = ISA_BM_VEC;
    ew.b = cc_abs(0);
    ew.bs1 = 0;
    cc_emit_sfp(e, &ew);
    red.op = ISA_OP_SFP_RSUM;
    red.d = cc_abs(sc->sm[c]);
    cc_emit_sfp(e, &red);
    ew.op = ISA_OP_SFP_DIV;
    ew.bm = ISA_BM_ELEM;
    ew.b = cc_abs(sc->sm[c]);
    ew.bs1 = 2;
    cc_emit_sfp(e, &ew);
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
    for (int c = 0; c < sc->nc; c++)
        cc_emit_sig(e, ISA_U_DMAI, sc->full[s][c]);

    for (int c = 0; c < sc->nc; c++) {
        isa_unit u = c ? ISA_U_SFP1 : ISA_U_SFP0;
        cc_emit_wait(e, u, sc->full[s][c]);
        if (n[c] > 0)
            emit_rows(sc, c, sc->X[s] + off[c] * sb, n[c]);
        cc_emit_sig(e, u, sc->done[s][c]);
    }

    for (int c = 0; c < sc->nc; c++) {
        cc_emit_wait(e, ISA_U_DMAO, sc->done[s][c]);
        if (n[c] > 0) {
            cc_dma_shape st = cc_dma_groups(n[c], G, sc->rows * sb, R * sb);
            cc_emit_dma(e, ISA_OP_DMA_ST, cc_reg(sc->rY, off[c] * sb), cc_abs(sc->X[s] + off[c] * sb), &st);
        }
        cc_emit_sig(e, ISA_U_DMAO, sc->empty[s][c]);
    }
    cc_emit_addi(e, sc->rY, R * sb);
}

static void full_chunk(void *ctx)
{
    sm_core *sc = ctx;
    emit_chunk(sc, sc->R);
}

static int emit_core(const cc_target *t, isa_program *p, int core, int64_t rows, int64_t cols, uint64_t x_dram,
                     uint64_t y_dram, int64_t r0, int64_t rt, char *err, size_t errlen)
{
    sm_core sc;
    memset(&sc, 0, sizeof sc);
    cc_emit *e = &sc.e;
    cc_emit_begin(e, t->cfg, p, core, err, errlen);
    if (rt == 0) {
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
        if (sm_lx(t, sc.G, mid) <= t->cfg->lx_usable_bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (sm_lx(t, sc.G, lo) > t->cfg->lx_usable_bytes)
        return cc_emit_error(e, "softmax rows of %" PRId64 " columns do not fit %llu bytes of LX", cols,
                             (unsigned long long)t->cfg->lx_usable_bytes);
    int64_t R = cc_min(lo, cc_max(cc_ceil_div(rt, 4), cc_min(rt, SM_MIN_CHUNK_ROWS)));
    sc.R = R;
    sc.nc = R >= 2 && t->corelets >= 2 ? 2 : 1;
    sc.h0 = sc.nc == 2 ? cc_ceil_div(R, 2) : R;

    for (int s = 0; s < 2; s++)
        sc.X[s] = cc_lx_alloc(e, sc.G * R * t->stick, "softmax chunk");
    for (int c = 0; c < 2; c++) {
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
    if (cc_emit_failed(e))
        return -1;

    for (int s = 0; s < 2; s++)
        for (int c = 0; c < sc.nc; c++)
            cc_emit_sig(e, ISA_U_DMAI, sc.empty[s][c]);
    cc_emit_li(e, sc.rX, (int64_t)x_dram + r0 * t->stick);
    cc_emit_li(e, sc.rY, (int64_t)y_dram + r0 * t->stick);
    int64_t rest = rt % R;
    cc_emit_repeat(e, rt / R, 2, full_chunk, &sc);
    if (rest)
        emit_chunk(&sc, rest);
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < sc.nc; c++)
            cc_emit_wait(e, ISA_U_DMAI, sc.empty[s][c]);
    cc_emit_halt(e);
    return cc_emit_failed(e) ? -1 : 0;
}

isa_program *cc_gen_softmax(const sim_config *cfg, int64_t rows, int64_t cols, char *err, size_t errlen)
{
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
    double dram = 2.0 * (double)rows * (double)G * (double)t.stick;
    if (dram > (double)cfg->dram_bytes) {
        snprintf(err, errlen, "softmax %" PRId64 "x%" PRId64 ": tensors need %.0f bytes of DRAM, more than %s has", rows,
                 cols, dram, cfg->name);
        return NULL;
    }
    if (sm_lx(&t, G, 1) > cfg->lx_usable_bytes) {
        snprintf(err, errlen,
                 "softmax %" PRId64 "x%" PRId64 ": one row of %" PRId64 " columns does not fit %llu bytes of LX twice",
                 rows, cols, cols, (unsigned long long)cfg->lx_usable_bytes);
        return NULL;
    }
    isa_program *p = cc_program_new(cfg, "%y = aten._softmax(%x, -1, False)\n", err, errlen);
    if (!p)
        return NULL;
    uint64_t x = cc_program_add_2d(p, cfg, "x", ISA_ROLE_INPUT, rows, cols);
    uint64_t y = cc_program_add_2d(p, cfg, "y", ISA_ROLE_OUTPUT, rows, cols);
    int64_t used = cc_min(rows, cfg->cores);
    for (int core = 0; core < cfg->cores; core++) {
        int64_t r0 = 0, rt = 0;
        if (core < used)
            cc_split(rows, used, core, &r0, &rt);
        char why[256] = "";
        if (emit_core(&t, p, core, rows, cols, x, y, r0, rt, why, sizeof why)) {
            snprintf(err, errlen, "softmax %" PRId64 "x%" PRId64 ": %s", rows, cols, why);
            isa_program_free(p);
            return NULL;
        }
    }
    return p;
}
