/* be_ring.c: the matmul template's schemes over the ring (be_matmul.h):
 * B broadcast to every core, a grid over the ring (A along its rows, B
 * down its columns), and split-K's partial sums reduced along a chain of
 * cores; their tilings, estimates and emission. */
#include "be_matmul.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

/* ---- B broadcast over the ring ----
 *
 * On a grid of all the chip's cores x 1 (every core all of N for its
 * rows) every core walks the same sequence of B chunks (KC rows x NBS
 * sticks).  Each chunk is read from DRAM once, by one loader core (four
 * for the first chunk and two for the second: a shorter way in), whose
 * place rotates with the chunk, and passed rightward around the ring
 * from core to core up to the next loader, one stick group (a "piece") at
 * a time: a core sends a piece on as soon as it has it, and its PT
 * corelet starts once its own sticks are in.  Each core holds BC_SLOTS
 * chunks; it tells its left neighbour that a slot is free again (a
 * one-stick ring.send, a credit) once its PTs and its forwarding are
 * done with the chunk it held.  (A loader sending both ways would halve
 * its rate; announcing its pieces one by one would serialize its loads:
 * a sig waits for every load before it.)
 *
 *   dmai (loader): wait slotfree; dma.ld the chunk; sig loaded
 *   ring:  (loader: wait loaded) per piece: (else wait arr) sig have[u]
 *          once corelet u's last piece is in; ring.send it to the right
 *          neighbour unless that one is a loader (first waiting for its
 *          credit, cred); then wait ptdone[u] of the previous chunk and
 *          free that slot for the chunk BC_SLOTS - 1 later (slotfree when
 *          this core loads it, else a credit to the left neighbour)
 *   ptu:   wait abfull (the A chunk, dmai as before) and have[u]; pt.mm;
 *          sig abempty and ptdone[u] */
#define BC_TOKENS 8 /* slotfree, loaded, arr, cred, have[2], ptdone[2] */

/* The loaders of chunk `step` among cores [0, gm), ascending: one, its
 * place rotating with the chunk so the DRAM reads spread over the cores;
 * four for the first chunk and two for the second, each then feeding a
 * quarter or a half of the cores (a shorter way in).  Without the wrap
 * link (a grid smaller than the chip) core 0 is always one. */
static int bc_loaders(int64_t gm, int wrap, int64_t step, int64_t nsteps, int *L)
{
    int64_t n = step == 0 ? 4 : step == 1 ? 2 : 1;
    while (n > 1 && gm < 4 * n)
        n /= 2;
    int64_t first = wrap ? step * cc_max(1, gm / cc_max(1, cc_min(gm, nsteps))) % (gm / n) : 0;
    for (int64_t k = 0; k < n; k++)
        L[k] = (int)(first + k * (gm / n));
    return (int)n;
}

typedef struct {
    int loader;   /* this core reads the chunk from DRAM */
    int up;       /* else its left neighbour, which passes it on */
    int down;     /* the right neighbour it passes it on to (-1: none) */
} bc_route;

/* Neighbours on the ring among cores [0, gm): a line, closed into a ring
 * when the grid has every core of the chip. */
static int bc_left(int64_t gm, int wrap, int c) { return c > 0 ? c - 1 : wrap ? (int)gm - 1 : -1; }
static int bc_right(int64_t gm, int wrap, int c) { return c + 1 < gm ? c + 1 : wrap ? 0 : -1; }

/* How chunk `step` reaches core `core`: it travels rightward from each
 * loader up to the next one (one ring direction: a loader sending both
 * ways would halve its rate). */
static void bc_route_of(int64_t gm, int wrap, int64_t step, int64_t nsteps, int core, bc_route *r)
{
    int L[4], nl = bc_loaders(gm, wrap, step, nsteps, L), right = bc_right(gm, wrap, core);
    r->loader = 0;
    for (int k = 0; k < nl; k++)
        r->loader |= L[k] == core;
    r->up = r->loader ? -1 : bc_left(gm, wrap, core);
    r->down = right;
    for (int k = 0; k < nl; k++)
        if (L[k] == right)
            r->down = -1;
}

/* The ring's cost of passing on one piece of B (a stick group of a K
 * chunk), and of a block's epilogue and stores once its last product is done. */
static double rg_piece(const cc_target *t, const mm_tiling *tl)
{
    return t->dma_insn_cycles + (double)tl->KC * (double)t->stick / (double)t->cfg->ring_bytes_per_cycle;
}

static double rg_tail(const mm_plan *m, const mm_tiling *tl)
{
    const cc_target *t = &m->c->t;
    return (double)m->ep.nexpr * (double)(tl->NBS * tl->MB) * 0.5 +
           (double)(tl->MB * tl->NBS) * (double)t->stick / t->dma_bytes_per_cycle + t->dma_insn_cycles;
}

/* The cycles a streamed grid runs after its last load: the last chunk's
 * way down the column and the last block's epilogue, with the DRAM idle
 * (what the next kernel's loads ahead may fill: mm_rg_prefetch). */
double mm_rg_drain(const mm_plan *m, int64_t gm, const mm_tiling *tl)
{
    return (double)(gm - 1 + tl->NBS - 1) * rg_piece(&m->c->t, tl) + rg_tail(m, tl);
}

static int64_t mm_bc_lx(const mm_plan *m, int64_t MB, int64_t NBS, int64_t KC)
{
    const int64_t sb = m->c->t.stick;
    return 2 * mm_cslot_bytes(m, MB, NBS) + 2 * cc_ceil_div(KC, m->c->t.lanes16) * MB * sb +
           BC_SLOTS * KC * NBS * sb + mm_p_bytes(m, MB, NBS, KC) + 2 * sb;
}

/* Estimate of the broadcast scheme with tiling tl on gm cores: per chunk
 * the slowest of the busier PT, the ring forwarding a chunk's pieces, and
 * the DRAM bytes of the chunk and every core's A chunk; plus the way in
 * of the first pieces and the last block's epilogue and store. */
static void mm_bc_estimate(const mm_plan *m, int64_t gm, int64_t mt, mm_tiling *tl)
{
    const cc_target *t = &m->c->t;
    const double sb = (double)t->stick;
    mm_split_block(m, tl);
    const int64_t nbm = cc_ceil_div(mt, tl->MB), nbn = cc_ceil_div(m->GN, tl->NBS), steps = nbm * nbn * tl->nch;
    int64_t rows = tl->split == SPLIT_ROWS ? cc_max(tl->r0, tl->MB - tl->r0) : tl->MB;
    int64_t sticks = tl->split == SPLIT_STICKS ? cc_max(tl->s0, tl->NBS - tl->s0) : tl->NBS;
    double pt = (mm_pt_cycles(t, rows, sticks, tl->KC) - t->pt_insn_cycles) * t->cfg->pt_k_step_cycles +
                t->pt_insn_cycles + 2 * t->sync_cycles;
    double piece = t->dma_insn_cycles + (double)tl->KC * sb / (double)t->cfg->ring_bytes_per_cycle;
    double ring = (double)tl->NBS * piece;
    double chunk_b = (double)(tl->KC * tl->NBS) * sb, chunk_a = (double)(gm * tl->MB * cc_ceil_div(tl->KC, t->lanes16)) * sb;
    double dram = t->dram_bytes_per_cycle > 0 ? (chunk_b + chunk_a) / t->dram_bytes_per_cycle : 0;
    /* a chunk's way from its loader's DRAM read to the last core: the
     * slots ahead must cover it */
    double way = t->dma_insn_cycles + BC_DRAM_LATENCY + chunk_b / t->dma_bytes_per_cycle +
                 (double)(gm - 1 + tl->NBS) * piece;
    /* each core's A chunk has two slots, so a step also waits for one A
     * load's whole way from DRAM, and a loader's B read takes its dmai
     * every gm steps (without this the estimate was 355,631 against
     * 626,378 simulated on 1024^3 over 4 cores, and beat the grid) */
    double a_in = t->dma_insn_cycles + BC_DRAM_LATENCY + chunk_a / (double)gm / t->dma_bytes_per_cycle +
                  (t->dma_insn_cycles + chunk_b / t->dma_bytes_per_cycle) / (double)gm;
    double step = pt > ring ? pt : ring;
    step = step > dram ? step : dram;
    step = step > way / (BC_SLOTS - 1) ? step : way / (BC_SLOTS - 1);
    step = step > a_in ? step : a_in;
    double in = way;
    double tail = rg_tail(m, tl);
    tl->wait = BC_DRAM_LATENCY;
    tl->cycles = (double)steps * step + in + tail;
    tl->bytes = (double)(nbm * m->Kd * m->GN) * sb + (double)(nbn * m->M * m->KG) * sb + (double)(m->M * m->GN) * sb;
}

/* The tiling of the broadcast scheme on gm cores: every core the same
 * number of blocks (the sequence of chunks is the chip's), the cheapest
 * estimate that fits LX; -1 when the scheme does not apply. */
int mm_bc_tiling(const mm_plan *m, int64_t gm, mm_tiling *out)
{
    const be_ctx *c = m->c;
    const int64_t budget = be_lx_budget(c, m->ep.pos), lanes = c->t.lanes16;
    const int64_t mt = cc_ceil_div(m->M, gm), mtmin = m->M / gm;
    if (gm < 2 || m->nbatch != 1 || m->ag || m->bg || mtmin < 1 || m->stage_bytes ||
        2 * (4 * 2 + 3) + BC_TOKENS > cc_tokens(c->cfg)) /* mm_tokens without restickify */
        return -1;
    const be_work *w = &c->work[m->ep.pos];
    if (w->mb) { /* forced by work_div: that tiling (clipped to the tile), if it fits */
        mm_tiling tl = {0};
        tl.MB = cc_min(w->mb, mt);
        tl.NBS = cc_min(w->nbs, m->GN);
        tl.KC = cc_min(w->kc, m->Kd);
        tl.nch = cc_ceil_div(m->Kd, tl.KC);
        if (mm_bc_lx(m, tl.MB, tl.NBS, tl.KC) > budget || (tl.KC < m->Kd && tl.KC % lanes) ||
            cc_ceil_div(mt, tl.MB) != cc_ceil_div(mtmin, tl.MB))
            return -1;
        mm_bc_estimate(m, gm, mt, &tl);
        *out = tl;
        return 0;
    }
    int found = 0;
    for (int64_t ks = 8; ks >= 1; ks /= 2) {
        int64_t kc = cc_min(ks * lanes, m->Kd);
        if (ks > 1 && ks * lanes >= m->Kd + lanes)
            continue;
        for (int64_t q = 1; q <= m->GN; q = mm_next_split(m->GN, q)) {
            int64_t nbs = cc_ceil_div(m->GN, q);
            int64_t lo = mm_most_rows(m, mm_bc_lx, mt, nbs, kc, budget);
            if (lo < 1)
                continue;
            mm_tiling tl = {0};
            tl.MB = cc_ceil_div(mt, cc_ceil_div(mt, lo));
            if (cc_ceil_div(mt, tl.MB) != cc_ceil_div(mtmin, tl.MB))
                continue;
            tl.NBS = nbs;
            tl.KC = kc;
            tl.nch = cc_ceil_div(m->Kd, kc);
            mm_bc_estimate(m, gm, mt, &tl);
            if (!found || tl.cycles < out->cycles)
                *out = tl;
            found = 1;
        }
    }
    return found ? 0 : -1;
}

/* ---- A grid over the ring (be_work.bcast with gn > 1) ----
 *
 * The chip's cores as a gm x gn grid: core i * gn + j computes grid row
 * i (the parts of M, as a cores x 1 grid cuts it, of cores i * gn ..
 * i * gn + gn - 1, its neighbours on the ring) times column block j of
 * N, K whole in chunks:
 *   - A: each core loads (or takes from the LX region an earlier kernel
 *     kept it in) the rows of its own part, chunk by chunk, and sends
 *     them to the other gn - 1 cores of its grid row over the ring;
 *   - B: column block j is read from DRAM once, by the middle core of
 *     column j (cores j, j + gn, ...), and passed up and down the column
 *     piece by piece: the way is gm / 2 hops (the columns share the ring
 *     links they cross);
 *   - results: every core's product covers gn cores' parts of the rows;
 *     a result kept in LX goes to the core that keeps those rows (ring),
 *     so later kernels find it aligned as after a cores x 1 grid.
 * Each core holds its row group's A and its column block's B whole in
 * LX (the same offsets on every core, where the others write), so no
 * slot is reused and nothing needs a credit.  Against the broadcast to
 * all cores (gm x 1r) a core forwards 1/gn of B plus its own A rows
 * gn - 1 times, and a chunk is gm / 2 hops from DRAM instead of 31.
 *
 *   dmai: per chunk: (the middle core) dma.ld B's chunk, sig loaded;
 *         its A rows into the row's A, sig aload (and aload_r: the ring
 *         sends them)
 *   ring: per chunk: the A rows to each partner q (token aarr[j] there);
 *         per piece (a stick group of the chunk): wait arr (or loaded),
 *         sig have[u] once corelet u's last piece is in, send it on
 *         (the middle core: both ways);
 *         at the end: wait rdone, kept results to their rows' cores
 *   sfp1: per chunk: wait aarr[q] of every partner and aload; sig
 *         abfull[u]
 *   ptu:  per chunk: wait abfull[u], have[u]; pt.mm; sig mmd[u] at last
 *   sfp0: the epilogue (wait mmd, efull); sig done / rdone
 *   dmao: wait done; results to DRAM, the core's own rows of a kept one */
#define RG_TOKENS (5 + 5 * 2 + RG_MAX_GN)
/* ... and with B streamed: slotfree, cred[2], ptdone[2], stored, estored, sent */
#define RG_STREAM_TOKENS 8
/* Cycles from a streamed chunk's load issued in full to its last data in
 * LX (traces on spyre-4core: 490 to 530 for 16 KB chunks, 260 to 560 for
 * 32 KB ones, two columns' loaders sharing the DRAM). */
#define RG_LOAD_WAIT 450.0

/* Rows of part p: M cut in one part per core, as a cores x 1 grid (and
 * the row kernels sharing its tensors) cut it. */
static void rg_part(const mm_plan *m, int64_t p, int64_t *r0, int64_t *n)
{
    cc_split(m->M, (int64_t)m->c->cfg->cores, p, r0, n);
}

/* The rows of row i of the grid (cores i * gn .. i * gn + gn - 1, one
 * per column): those cores' parts, one segment each, in column order. */
static int64_t rg_rows(const mm_plan *m, int64_t gn, int64_t i, mm_rows *rs)
{
    int64_t at = 0;
    rs->n = (int)gn;
    for (int64_t j = 0; j < gn; j++) {
        rg_part(m, i * gn + j, &rs->row[j], &rs->len[j]);
        rs->off[j] = at;
        at += rs->len[j];
    }
    return at;
}

/* The K stick groups of A core j of a grid row keeps in LX as its tile
 * (m->atile), and how many of A's a core holds in AG (the grid row's A
 * whole, or with A in tiles the other cores' ones). */
static void rg_a_tile(const mm_plan *m, int64_t j, int64_t *t0, int64_t *tn) { cc_split(m->KG, m->atile, j, t0, tn); }
static int64_t rg_ag_groups(const mm_plan *m) { return m->atile ? m->KG - m->KG / m->atile : m->KG; }

/* Where stick group gi of A sits in an AG that leaves out the tile of
 * groups [t0, t0 + tn) (none: tn 0). */
static int64_t ag_index(int64_t gi, int64_t t0, int64_t tn)
{
    assert(gi < t0 || gi >= t0 + tn);
    return gi < t0 ? gi : gi - tn;
}

/* Where stick group gi of A sits in core j's AG (its own tile left out). */
static int64_t rg_ag_index(const mm_plan *m, int64_t j, int64_t gi)
{
    int64_t t0 = 0, tn = 0;
    if (m->atile)
        rg_a_tile(m, j, &t0, &tn);
    return ag_index(gi, t0, tn);
}

/* LX of a core: its row group's A whole, its column block's B whole (or
 * its K chunks in `slots` slots and the credits' sticks), the block's
 * result, epilogue operands and temps, the partial sums. */
static int64_t mm_rg_lx_fixed(const mm_plan *m, int64_t MT, int64_t NS, int64_t slots)
{
    const int64_t sb = m->c->t.stick, bw = slots ? 3 : NS * m->Kd;
    return (rg_ag_groups(m) * MT + bw + MT + RG_MAX_GN * m->ep.nexpr * NS) * sb + mm_cslot_bytes(m, MT, NS);
}

/* mm_rg_lx, its part that does not hang on the K chunk (mm_rg_lx_fixed)
 * given: rg_search tries every K chunk of a block. */
static int64_t mm_rg_lx_kc(const mm_plan *m, int64_t fixed, int64_t MT, int64_t NS, int64_t KC, int64_t slots)
{
    return fixed + slots * NS * KC * m->c->t.stick + mm_p_bytes(m, MT, NS, KC);
}

static int64_t mm_rg_lx(const mm_plan *m, int64_t MT, int64_t NS, int64_t KC, int64_t slots)
{
    return mm_rg_lx_kc(m, mm_rg_lx_fixed(m, MT, NS, slots), MT, NS, KC, slots);
}

/* Piece times from the middle core's first chunk to the last core of its
 * column.  A product of one chunk and one block (nothing behind it on the
 * links): a hop (two cores apart on a 2-column grid) is a piece's
 * forwarding, half a column each way (serve_tiny's prefill, 16x2r on 64 x
 * 160 x 64: the middle cores start their PTs 294 cycles in, each hop
 * takes 134 cycles, the last core starts at 1,364; gm - 1 priced it
 * 3,358, simulated 1,916 over 7 phases).  With 4 columns or more every
 * column sends over the same links and a hop takes about two (8x4r: the
 * last core starts its PTs about 2,800 cycles in), and with more chunks
 * the later ones share them too: gm - 1 (halved, 1024^3's 16x2r took the
 * slack's chain from 8x4r to 4x8r, 0.3% slower). */
static int64_t rg_hops(int64_t gm, int64_t gn, int alone)
{
    return alone ? cc_min(gm - 1, gm / 2 * cc_max(1, gn / 2)) : gm - 1;
}

/* Estimate as mm_bc_estimate: per chunk the slowest of the busier PT, the
 * ring (B's pieces forwarded, the own A rows sent to gn - 1 partners
 * while the first block's chunks go) and the DRAM (B once, A once); plus
 * the way of the first chunk and the epilogue's tail.  A tile of ns
 * sticks walked in blocks of NBS (B streamed) takes each later block at
 * the slower of its chunks and the previous block's epilogue and stores
 * (the block's last chunk waits for them).  The way counts rg_hops
 * piece times.  tl's corelet split is set (mm_split_block). */
static void mm_rg_estimate(const mm_plan *m, int64_t gm, int64_t gn, int64_t ns, mm_tiling *tl)
{
    const cc_target *t = &m->c->t;
    const double sb = (double)t->stick, rbpc = (double)t->cfg->ring_bytes_per_cycle;
    int64_t rows = tl->split == SPLIT_ROWS ? cc_max(tl->r0, tl->MB - tl->r0) : tl->MB;
    int64_t sticks = tl->split == SPLIT_STICKS ? cc_max(tl->s0, tl->NBS - tl->s0) : tl->NBS;
    double pt = (mm_pt_cycles(t, rows, sticks, tl->KC) - t->pt_insn_cycles) * t->cfg->pt_k_step_cycles +
                t->pt_insn_cycles + 2 * t->sync_cycles;
    const double mp = (double)cc_ceil_div(m->M, (int64_t)t->cfg->cores), kg = (double)cc_ceil_div(tl->KC, t->lanes16);
    const double nsb = (double)cc_ceil_div(ns, tl->NBS);
    double piece = rg_piece(t, tl);
    double ring = (double)tl->NBS * piece + (double)(gn - 1) * (t->dma_insn_cycles + kg * mp * sb / rbpc);
    /* the DRAM: B's chunk every step, A's (unless kept in LX) in the first block's */
    const double bpc = t->dram_bytes_per_cycle > 0 ? t->dram_bytes_per_cycle : 0;
    double bdram = bpc > 0 ? (double)(m->GN * m->Kd) * sb / bpc / ((double)tl->nch * nsb) : 0;
    double dram = bpc > 0 ? bdram + (double)(m->alx && tl->slots ? 0 : m->M * m->KG) * sb / bpc / (double)tl->nch : 0;
    double step = pt > ring ? pt : ring, later = pt > (double)tl->NBS * piece ? pt : (double)tl->NBS * piece;
    step = step > dram ? step : dram;
    later = later > bdram ? later : bdram;
    /* the first chunk's way in: each column's loader reads it, with the
     * DRAM's wait on the channels they span (724 cycles for BERT-base's
     * 96 KB chunks, 451 for a 16 KB one: the middle cores of 16x2r on
     * 64 x 160 x 64 start their PTs 294 cycles in at refresh phase 0) */
    const double chunk = (double)(tl->KC * tl->NBS) * sb;
    tl->wait = cc_dram_wait(t, chunk * (double)gn, chunk / t->dma_bytes_per_cycle);
    double in = t->dma_insn_cycles + tl->wait + chunk / t->dma_bytes_per_cycle +
                (double)(rg_hops(gm, gn, tl->nch == 1 && nsb == 1) + tl->NBS - 1) * piece;
    double tail = rg_tail(m, tl);
    if (tl->slots) { /* a slot's round: freed, loaded (DRAM shared by the columns' loaders), passed down, used */
        const double rate = t->dram_bytes_per_cycle > 0 && t->dram_bytes_per_cycle / (double)gn < t->dma_bytes_per_cycle
                                ? t->dram_bytes_per_cycle / (double)gn
                                : t->dma_bytes_per_cycle;
        const double way = t->dma_insn_cycles + BC_DRAM_LATENCY + (double)(tl->KC * tl->NBS) * sb / rate;
        double round = (way + (double)(gm - 1 + tl->NBS - 1) * piece + pt) / (double)tl->slots;
        /* the loader signals each chunk once it has landed, before it
         * issues the next: a load's issue, its own stream and the wait
         * for the last data per chunk, whatever the slots (ResNet-18's
         * 63 x 512 x 512 taps on spyre-4core: 7,815 estimated without it,
         * 14,675 simulated) */
        const double load = t->dma_insn_cycles + (double)(tl->KC * tl->NBS) * sb / t->dma_bytes_per_cycle + RG_LOAD_WAIT;
        round = round > load ? round : load;
        step = step > round ? step : round;
        later = later > round ? later : round;
    }
    double block = (double)tl->nch * later > tail ? (double)tl->nch * later : tail;
    tl->cycles = (double)tl->nch * step + (nsb - 1) * block + in + tail;
    tl->bytes = (double)(m->GN * m->Kd + m->M * m->KG + m->M * m->GN) * sb;
}

/* The least K chunk of a streamed tiling: a piece of B (a stick group
 * of the chunk) then takes 16 KB, twice the ring's cost of issuing it. */
#define RG_MIN_KC 128

int mm_rg_tile_chunks(const mm_plan *m, int64_t gn, int64_t KC)
{
    const int64_t kg = cc_ceil_div(KC ? KC : RG_MIN_KC, m->c->t.lanes16);
    for (int64_t j = 1; j < gn; j++) {
        int64_t t0, tn;
        cc_split(m->KG, gn, j, &t0, &tn);
        if (t0 % kg)
            return 0;
    }
    return 1;
}

/* Streamed tilings whose estimates are within MM_SLACK count as equal:
 * more slots win, then less LX (room for tensors kept between kernels):
 * on 2048^3 products the estimate ties blockings that simulate 0.60 to
 * 0.74 of peak, the faster ones with more slots and smaller blocks. */
static int rg_better(const mm_plan *m, const mm_tiling *a, const mm_tiling *b)
{
    if (a->cycles < b->cycles * (1 - MM_SLACK) || a->cycles > b->cycles * (1 + MM_SLACK))
        return a->cycles < b->cycles;
    if (a->slots != b->slots)
        return a->slots > b->slots;
    return mm_rg_lx(m, a->MB, a->NBS, a->KC, a->slots) < mm_rg_lx(m, b->MB, b->NBS, b->KC, b->slots);
}

/* The best K chunk for tiling tl (blocks MB x NBS, tl->slots) of the
 * grid over the ring, gm x gn, that fits LX (or the one a work_div
 * forces) into out, when cheaper than out's (found: out holds one). */
static int rg_search(const mm_plan *m, int64_t gm, int64_t gn, mm_tiling tl, int found, mm_tiling *out)
{
    const be_work *w = &m->c->work[m->ep.pos];
    const int64_t lanes = m->c->t.lanes16, budget = be_lx_budget(m->c, m->ep.pos);
    mm_split_block(m, &tl); /* of MB x NBS alone: the same for every K chunk */
    const int64_t fixed = mm_rg_lx_fixed(m, tl.MB, tl.NBS, tl.slots);
    for (int64_t ks = 1; ks < 2 * cc_ceil_div(m->Kd, lanes); ks *= 2) {
        tl.KC = w->mb ? cc_min(w->kc, m->Kd) : cc_min(ks * lanes, m->Kd);
        if (w->mb && ks > 1)
            break;
        tl.nch = cc_ceil_div(m->Kd, tl.KC);
        if (tl.slots && !w->mb && tl.KC < cc_min(m->Kd, RG_MIN_KC)) /* short pieces: the ring's issue cost */
            continue;
        if (mm_rg_lx_kc(m, fixed, tl.MB, tl.NBS, tl.KC, tl.slots) > budget || (m->atile && !mm_rg_tile_chunks(m, gn, tl.KC)))
            continue;
        mm_rg_estimate(m, gm, gn, cc_ceil_div(m->GN, gn), &tl);
        if (!found || (tl.slots ? rg_better(m, &tl, out) : tl.cycles < out->cycles))
            *out = tl;
        found = 1;
    }
    return found;
}

/* The tiling of the grid over the ring, gm x gn on every core of the
 * chip: B's column block whole with the K chunk of the cheapest estimate
 * that fits LX; else, with tokens to spare, the tile in blocks of fewer
 * sticks whose B streams in K chunks (2 to RG_SLOTS slots), the cheapest
 * blocking; or the one a work_div forces; -1 when the scheme does not
 * apply. */
int mm_rg_search(const mm_plan *m, int64_t gm, int64_t gn, mm_tiling *out)
{
    const be_ctx *c = m->c;
    const int64_t cores = c->cfg->cores, lanes = c->t.lanes16;
    if (gn < 2 || gm < 2 || gn > RG_MAX_GN || gm * gn != cores || m->nbatch != 1 || m->ag || m->bg ||
        m->stage_bytes || m->gk > 1 || m->M < cores || m->GN < gn || RG_TOKENS > cc_tokens(c->cfg))
        return -1;
    mm_tiling tl = {0};
    for (int64_t i = 0; i < gm; i++) {
        mm_rows rs;
        tl.MB = cc_max(tl.MB, rg_rows(m, gn, i, &rs));
    }
    const int64_t ns = cc_ceil_div(m->GN, gn);
    tl.NBS = ns;
    const be_work *w = &c->work[m->ep.pos];
    /* a forced tiling: its K chunk (a multiple of 64, or all of K); the
     * scheme takes whole rows of the tile, so blocks are clipped to the
     * tile and fewer rows refused; fewer sticks stream B */
    if (w->mb && (w->mb < tl.MB || (w->kc < m->Kd && w->kc % lanes)))
        return -1;
    int found = (!w->mb || w->nbs >= ns) && rg_search(m, gm, gn, tl, 0, out);
    if (found || RG_TOKENS + RG_STREAM_TOKENS > cc_tokens(c->cfg))
        return found ? 0 : -1;
    for (tl.slots = 2; tl.slots <= RG_SLOTS; tl.slots++)
        for (int64_t nb = 1; nb <= ns; nb++) {
            tl.NBS = w->mb ? cc_min(w->nbs, ns) : cc_ceil_div(ns, nb);
            if ((!w->mb || nb == 1) && (nb == 1 || tl.NBS < cc_ceil_div(ns, nb - 1)))
                found = rg_search(m, gm, gn, tl, found, out);
        }
    return found ? 0 : -1;
}

/* The tiling of a scheme over the ring: gm x 1r (B broadcast to every
 * core) or gm x gn r (a grid over the ring). */
int mm_ring_tiling(const mm_plan *m, const be_work *w, mm_tiling *tl)
{
    return w->gn > 1 ? mm_rg_tiling(m, w->gm, w->gn, tl) : mm_bc_tiling(m, w->gm, tl);
}

/* Free this core's slot of chunk `step` (its chunk BC_SLOTS earlier is
 * done): slotfree to its own dmai when it loads that chunk, else a credit
 * to the neighbour it comes from (ring). */
void bc_release(mm_core *mc, int64_t step)
{
    if (step >= mc->nsteps)
        return;
    cc_emit *e = mc->e;
    bc_route r;
    bc_route_of(mc->gm, mc->wrap, step, mc->nsteps, e->core, &r);
    if (r.loader) {
        cc_emit_sig(e, ISA_U_RING, mc->slotfree);
        return;
    }
    cc_dma_shape sh = cc_dma_groups(1, 1, 0, 0);
    cc_emit_ring(e, ISA_OP_RING_SEND, r.up, mc->cred, cc_abs(mc->cred_in), cc_abs(mc->cred_src), &sh);
}

/* Chunk `step` of B (rows [k0, k0 + kc), sticks [g0, g0 + nbs) of view
 * bv) into its slot: loaded from DRAM by a loader, passed on over the
 * ring piece by piece; have[u] once corelet u's last piece (last[u]) is
 * in; then the previous chunk's slot is freed. */
void bc_chunk(mm_core *mc, int64_t step, const be_view *bv, int64_t krow, int64_t kc, int64_t nbs,
              const int64_t *last)
{
    mm_plan *m = mc->m;
    be_ctx *c = m->c;
    cc_emit *e = mc->e;
    const int64_t sb = c->t.stick, slot = mc->bslot[step % BC_SLOTS];
    bc_route r;
    bc_route_of(mc->gm, mc->wrap, step, mc->nsteps, e->core, &r);
    if (r.loader) {
        /* one load for the chunk: a sig waits for every load before it,
         * so announcing pieces one by one would keep one load in flight */
        cc_emit_wait(e, ISA_U_DMAI, mc->slotfree);
        be_dma_rows(c, e, ISA_OP_DMA_LD, slot, mc->KC * sb, bv, &m->brsp, krow, kc, nbs);
        cc_emit_sig(e, ISA_U_DMAI, mc->loaded);
        cc_emit_wait(e, ISA_U_RING, mc->loaded);
    }
    for (int64_t p = 0; p < nbs; p++) {
        if (!r.loader)
            cc_emit_wait(e, ISA_U_RING, mc->arr);
        for (int u = 0; u < mc->nc; u++)
            if (last[u] == p)
                cc_emit_sig(e, ISA_U_RING, mc->have[u]);
        if (r.down < 0)
            continue;
        if (p == 0)
            cc_emit_wait(e, ISA_U_RING, mc->cred);
        cc_dma_shape sh = cc_dma_groups(kc, 1, 0, 0);
        cc_emit_ring(e, ISA_OP_RING_SEND, r.down, mc->arr, cc_abs(slot + p * mc->KC * sb), cc_abs(slot + p * mc->KC * sb),
                     &sh);
    }
    if (step > 0) {
        for (int u = 0; u < mc->nc; u++)
            cc_emit_wait(e, ISA_U_RING, mc->ptdone[u]);
        bc_release(mc, step - 1 + BC_SLOTS);
    }
}

/* Split-K, on the ring unit once this core's PTs are done with the block:
 * tell part ik + 1 that this core's sums are final (rdy), wait for its
 * ring.red into them (red; part 0's sfp0 waits for that one itself), then
 * add them into part ik - 1's once that one is ready. */
void mm_splitk_reduce(mm_core *mc)
{
    cc_emit *e = mc->e;
    const int64_t sb = mc->m->c->t.stick;
    for (int u = 0; u < mc->nc; u++)
        cc_emit_wait(e, ISA_U_RING, mc->pdone[u]);
    cc_dma_shape one = cc_dma_groups(1, 1, 0, 0);
    if (mc->ik + 1 < mc->gk)
        cc_emit_ring(e, ISA_OP_RING_SEND, e->core + 1, mc->rdy, cc_abs(mc->rdy_in), cc_abs(mc->rdy_src), &one);
    if (mc->ik == 0)
        return;
    if (mc->ik + 1 < mc->gk)
        cc_emit_wait(e, ISA_U_RING, mc->red);
    cc_emit_wait(e, ISA_U_RING, mc->rdy);
    int64_t sticks = mm_p_bytes(mc->m, mc->MB, mc->NBS, mc->KC) / sb;
    for (int64_t s0 = 0; s0 < sticks; s0 += ISA_COUNT_MAX) {
        cc_dma_shape sh = cc_dma_groups(cc_min(ISA_COUNT_MAX, sticks - s0), 1, 0, 0);
        isa_insn in;
        isa_insn_init(&in, ISA_OP_RING_RED);
        isa_set(&in, core, e->core - 1);
        isa_set(&in, tok, s0 + ISA_COUNT_MAX >= sticks ? mc->red : ISA_TOK_NONE);
        in.t = ISA_T_F32;
        in.d = cc_abs(mc->P + s0 * sb);
        in.a = cc_abs(mc->P + s0 * sb);
        isa_set(&in, run, sh.run);
        cc_push(e, &in);
    }
}

/* A core of the grid over the ring (see mm_rg_tiling): row i, column j of
 * gm x gn; its own rows [p0, p0 + pn) at own in the grid row's mt rows
 * (rs: the grid row's parts), its tile's sticks [tg0, tg0 + tns) walked
 * in nsb blocks, the current one sticks [g0, g0 + ns); the LX areas (AG
 * the grid row's A, BW the column block's B or bslot its K chunks'
 * slots, C the block, CT the epilogue's column temps, pre the first npre
 * K chunks the kernel before loaded ahead) and tokens; the corelets' parts
 * and the epilogue pipe. */
#define RG_DEFER_BLOCKS 8 /* at most: a C each */
typedef struct {
    mm_core mc;
    be_ctx *c;
    mm_plan *m;
    cc_emit *e;
    int core;
    /* (ints, in padding: rg_core stays below 2,048 bytes, from where
     * calloc's memset is a rep stosb, which callgrind counts byte by byte:
     * 0.45 M instructions more on BERT-base) */
    int krot;     /* rg_k0's rotation of the K chunks */
    int at0, atn; /* A kept in tiles: the core's own, stick groups [at0, at0 + atn) (else none) */
    int64_t gm, gn, i, j, mid, mt, p0, pn, own, g0, ns, cols, tg0, tns, nsb, nsteps, pre, npre;
    mm_rows rs;
    int64_t AG, BW, C, colt, CT, bslot[RG_SLOTS], cred_src, cred_in[2];
    int aarr[RG_MAX_GN], aload, aload_r, loaded, arr, efull;
    int abfull[2], have[2], mmd[2], done[2], rdone[2];
    /* B streamed: slot free (ring -> dmai, the middle core), credits from
     * the cores below, chunk used (pt -> ring), the previous block's
     * results stored (dmao -> pt; dmao -> dmai, a token of its own: dmai
     * can run a block ahead of the PTs) and sent (ring -> pt) */
    int slotfree, cred[2], ptdone[2], stored, estored, sent, nres;
    struct rg_pieces *pend; /* results of the previous block the ring still sends */
    mm_parts cp;
    int pipe, nseg[2], seg[2][RG_MAX_GN], down[2];
    signed char hs[2], nh; /* the ways down[h] there are, in the order rg_chunk_in sends (chars in padding, as krot) */
    signed char tokfit;    /* every token of the core fits a wait or sig on the ring (rg_pieces_fast) */
    int64_t ra_lx, ra_cap; /* A's kept rows: where they are (m->ares) */
    be_view bv0;
    int64_t ep_at, *ep_base, ep_b; /* the block ep_b's epilogue operands: loaded up to ep_at, each at ep_base */
    /* results stored after the last block (g->defer): each block's C at
     * C0, then Cx + (b - 1) * cbytes; the held blocks' pieces */
    int64_t C0, Cx, cbytes;
    int defer, nheld;
    struct rg_pieces *held[RG_DEFER_BLOCKS];
    /* rg_chunk_in: per neighbour, its last send in the kernel's stream
     * (-1 none), all of them of K chunk send_kc (their shape); rg_release:
     * its credit send, the same one every time in a kernel (ints: a K chunk
     * and a kernel's stream index are far below 2^31, and rg_core stays at
     * 2,040 bytes) */
    long like[2];
    int send_kc, credlike;
    long ptlike[2]; /* rg_chunk_pt: per corelet, its last product in the kernel's stream (-1 none) */
} rg_core;

/* A core's state, zeroed but for the instructions it remembers: none yet
 * (-1; 0 is the kernel stream's first instruction, which a zeroed field
 * would have rg_release or rg_chunk_in copy). */
static rg_core *rg_new(void)
{
    rg_core *g = ir_xalloc(sizeof *g);
    g->like[0] = g->like[1] = g->ptlike[0] = g->ptlike[1] = -1;
    g->credlike = -1;
    return g;
}

/* The core's tokens, in the same order on every core (a ring.send
 * signals the sender's number of a token on the receiver). */
static void rg_tokens(rg_core *g)
{
    cc_emit *e = g->e;
    for (int64_t q = 0; q < g->gn; q++)
        g->aarr[q] = cc_tok_alloc(e, "A rows in (from a core of the grid row)");
    g->aload = cc_tok_alloc(e, "own A rows in (dmai -> sfp1)");
    g->aload_r = cc_tok_alloc(e, "own A rows in (dmai -> ring)");
    g->loaded = cc_tok_alloc(e, "B chunk loaded (dmai -> ring)");
    g->arr = cc_tok_alloc(e, "B piece arrived (from the column)");
    g->efull = cc_tok_alloc(e, "matmul epilogue operands full");
    for (int u = 0; u < 2; u++) {
        g->done[u] = cc_tok_alloc(e, "matmul epilogue piece done (sfp -> dmao)");
        g->rdone[u] = cc_tok_alloc(e, "matmul epilogue piece done (sfp -> ring)");
        g->abfull[u] = cc_tok_alloc(e, "A chunk in (sfp1 -> pt)");
        g->have[u] = cc_tok_alloc(e, "B chunk in (ring -> pt)");
        g->mmd[u] = cc_tok_alloc(e, "matmul product done");
    }
    if (g->mc.tl.slots) {
        g->slotfree = cc_tok_alloc(e, "B slot free (ring -> dmai)");
        for (int h = 0; h < 2; h++) {
            g->cred[h] = cc_tok_alloc(e, "B slot credit (from a core below)");
            g->ptdone[h] = cc_tok_alloc(e, "B chunk used (pt -> ring)");
        }
        g->stored = cc_tok_alloc(e, "matmul block's results stored (dmao -> pt)");
        g->estored = cc_tok_alloc(e, "matmul block's results stored (dmao -> dmai)");
        g->sent = cc_tok_alloc(e, "matmul block's results sent (ring -> pt)");
    }
}

/* Does B stream up the column from its last row (even columns)? */
static int rg_reversed(const rg_core *g) { return g->mc.tl.slots && g->j % 2 == 0; }

/* The grid row of column j's loader (rg_setup), with tiling tl on gm rows. */
static int64_t rg_mid(const mm_tiling *tl, int64_t gm, int64_t j)
{
    return !tl->slots ? gm / 2 : j % 2 == 0 ? gm - 1 : 0;
}

/* Is core (of a gm x gn grid over the ring) its column's loader? */
static int rg_is_loader(const mm_tiling *tl, int64_t gm, int64_t gn, int core)
{
    return core / gn == rg_mid(tl, gm, core % gn);
}

/* Does the product store its results in DRAM?  Then, B streamed in
 * blocks and LX to spare, every block gets its own C and the results of
 * all but the last are stored after the last block's: stored at each
 * block's end they met the loaders' reads of B (BERT-base's fused q/k/v
 * product: 393,216 bytes of results whose stores cost its loads about
 * 8,000 cycles), after it the DRAM is idle while the last chunk goes
 * down its column. */
static void rg_defer_setup(rg_core *g)
{
    cc_emit *e = g->e;
    int dram = 0;
    for (int jj = 0; jj < g->m->ep.nn && jj < IR_KERNEL_NODES; jj++)
        dram |= g->m->ep.nodes[jj].dram;
    g->C0 = g->C;
    g->cbytes = g->mc.cslot_bytes + g->mc.MB * g->c->t.stick;
    const int64_t more = (g->nsb - 1) * g->cbytes;
    const int64_t limit = e->lx_limit ? (int64_t)e->lx_limit : (int64_t)g->c->cfg->lx_usable_bytes;
    g->defer = dram && g->mc.tl.slots && g->nsb > 1 && g->nsb <= RG_DEFER_BLOCKS &&
               limit - (int64_t)e->lx_top >= more;
    if (g->defer)
        g->Cx = cc_lx_alloc(e, more, "matmul blocks held for their stores");
}

int mm_rg_plan_tiling(mm_plan *m)
{
    if (!m->rg_memo) { /* w, and so gm x gn, are the plan's (be_matmul_emit, be_matmul_need) */
        const be_work *w = &m->c->work[m->ep.pos];
        m->rg_rc = mm_rg_tiling(m, w->gm, w->gn, &m->rg_tl);
        m->rg_memo = 1;
    }
    return m->rg_rc;
}

/* The core's place in the grid, its tiling, LX areas and tokens. */
static int rg_setup(rg_core *g, be_ctx *c, mm_plan *m, int core, cc_emit *e)
{
    const be_work *w = &c->work[m->ep.pos];
    const int64_t sb = c->t.stick;
    g->c = c;
    g->m = m;
    g->core = core;
    g->gm = w->gm;
    g->gn = w->gn;
    g->i = core / g->gn;
    g->j = core % g->gn;
    g->mt = rg_rows(m, g->gn, g->i, &g->rs);
    g->p0 = g->rs.row[g->j];
    g->pn = g->rs.len[g->j];
    g->own = g->rs.off[g->j];
    cc_split(m->GN, g->gn, g->j, &g->tg0, &g->tns);
    g->g0 = g->tg0;
    g->ns = g->tns;
    g->e = e;
    e->lx_top = 0;
    e->ntokens = 0;
    mm_core *mc = &g->mc;
    mc->m = m;
    mc->e = e;
    mc->m0 = g->p0;
    if (mm_rg_plan_tiling(m))
        return be_error(c, m->K, "no block of the product fits LX");
    mc->tl = m->rg_tl;
    /* the column's loader: its middle core, which sends both ways; with
     * B streamed an end core, which sends one way only (a ring unit
     * sending each piece twice would pace the chunks; first cores spread
     * over the ring measured slower on 512 x 4096 x 14336): the last of
     * even columns, sending back along the ring, the first of odd ones,
     * sending forward, so that neighbouring columns use the ring's two
     * directions instead of sharing the links of one (BERT-base's FFN
     * products 16x2r: 59,363 and 59,739 -> 54,724 and 51,594 cycles; even
     * columns reversed rather than odd ones: the loaders' DRAM data, half
     * from each controller's ring stop, then crosses the ring both ways) */
    g->mid = rg_mid(&mc->tl, g->gm, g->j);
    const int64_t MT = mc->MB = mc->tl.MB, NS = mc->NBS = mc->tl.NBS, KC = mc->KC = mc->tl.KC;
    mc->nch = mc->tl.nch;
    mc->nc = mc->tl.split == SPLIT_NONE ? 1 : 2;
    /* the core's own tile and rg_k0's rotation, set once: they were worked
     * out per chunk and per product */
    int64_t t0 = 0, tn = 0;
    if (m->atile)
        rg_a_tile(m, g->j, &t0, &tn);
    g->at0 = (int)t0;
    g->atn = (int)tn;
    g->krot = (int)(t0 * c->t.lanes16 / KC);
    mc->cslot_bytes = mm_cslot_bytes(m, MT, NS);
    /* allocated first and at their largest: the same offsets on every
     * core, where the row's and the column's other cores write */
    g->AG = cc_lx_alloc(e, rg_ag_groups(m) * MT * sb, "matmul A of the grid row (ring)");
    if (mc->tl.slots) {
        for (int s = 0; s < g->mc.tl.slots; s++)
            g->bslot[s] = cc_lx_alloc(e, NS * KC * sb, "matmul B chunk of the column block (ring)");
        g->cred_src = cc_lx_alloc(e, sb, "ring credit (source)");
        for (int h = 0; h < 2; h++)
            g->cred_in[h] = cc_lx_alloc(e, sb, "ring credit (from a core below)");
    } else {
        g->BW = cc_lx_alloc(e, NS * m->Kd * sb, "matmul B of the column block (ring)");
    }
    g->nsb = cc_ceil_div(g->tns, NS);
    g->nsteps = g->nsb * mc->nch;
    /* one row more: the epilogue of a piece puts its temps at its rows */
    g->C = cc_lx_alloc(e, mc->cslot_bytes + MT * sb, "matmul block");
    /* and its per-column temps in an area of its own */
    g->colt = m->ep.nexpr * NS * sb;
    g->CT = g->colt ? cc_lx_alloc(e, RG_MAX_GN * g->colt, "matmul epilogue column temps") : 0;
    if (mc->nch > 1)
        mc->P = cc_lx_alloc(e, mm_p_bytes(m, MT, NS, KC), "matmul partial sums");
    rg_defer_setup(g);
    rg_tokens(g);
    for (int jj = 0; jj < m->ep.nn && jj < IR_KERNEL_NODES; jj++) /* kept results the ring sends */
        g->nres += (m->ep.nodes[jj].res && !c->res[c->p->nodes[m->ep.nodes[jj].node].out].grid) ||
                   m->ep.nodes[jj].heads;
    return cc_emit_failed(e) ? -1 : 0;
}

/* Block b of the tile: its sticks, B's view and the corelets' parts
 * (corelet u: rows from crow, sticks from cst). */
static void rg_block(rg_core *g, int64_t b)
{
    if (g->defer)
        g->C = b == 0 ? g->C0 : g->Cx + (b - 1) * g->cbytes;
    g->g0 = g->tg0 + b * g->mc.NBS;
    g->ns = cc_min(g->mc.NBS, g->tns - b * g->mc.NBS);
    g->cols = cc_min(g->ns * g->c->t.lanes16, g->m->N - g->g0 * g->c->t.lanes16);
    g->bv0 = mm_shifted(&g->m->bv, g->g0);
    mm_corelet_parts(&g->mc.tl, g->mc.nc, g->mt, g->ns, &g->cp);
}

/* The pipe, B's way down the column and where A's kept rows are. */
static void rg_layout(rg_core *g)
{
    mm_core *mc = &g->mc;
    rg_block(g, 0);
    /* pipe: the last chunk's product part by part (seg[u]: corelet u's
     * parts), and each part's epilogue and results as soon as it is
     * done, on its corelet's SFP; when the corelets split rows at a part's
     * edge (or one corelet works) */
    g->pipe = mc->nch > 1 && (mc->nc == 1 || mc->tl.split == SPLIT_ROWS);
    for (int sg = 0; sg < g->rs.n && g->pipe; sg++) {
        const int u = mc->nc > 1 && g->rs.off[sg] >= g->cp.crow[1];
        g->pipe = u ? g->rs.off[sg] >= g->cp.crow[1] : g->rs.off[sg] + g->rs.len[sg] <= g->cp.cnr[0];
        g->seg[u][g->nseg[u]++] = sg;
    }
    /* B's way: from the middle core up and down the column */
    g->down[0] = g->down[1] = -1;
    if (g->mc.tl.slots) {
        if (rg_reversed(g) && g->i > 0)
            g->down[0] = g->core - (int)g->gn;
        else if (!rg_reversed(g) && g->i + 1 < g->gm)
            g->down[1] = g->core + (int)g->gn;
    } else if (g->i <= g->mid && g->i > 0)
        g->down[0] = g->core - (int)g->gn;
    if (!g->mc.tl.slots && g->i >= g->mid && g->i + 1 < g->gm)
        g->down[1] = g->core + (int)g->gn;
    for (int h0 = 0; h0 < 2; h0++) { /* odd columns send down first: the columns share links */
        const int h = (int)((h0 + g->j) & 1);
        if (g->down[h] >= 0)
            g->hs[g->nh++] = (signed char)h;
    }
    if (g->m->ares || g->m->atile)
        be_res_at(g->c, g->m->mm->a, g->m->ep.pos, &g->ra_lx, &g->ra_cap);
}

/* Where B's chunk of step `step` (K rows from k0) sits, and the distance
 * between its sticks. */
static int64_t rg_bchunk(const rg_core *g, int64_t step, int64_t k0, int64_t *stride)
{
    const int64_t sb = g->c->t.stick;
    *stride = g->mc.tl.slots || step < g->npre ? g->mc.KC * sb : g->m->Kd * sb;
    if (step < g->npre) /* loaded ahead: in a place of its own, no slot */
        return g->pre + step * g->mc.NBS * g->mc.KC * sb;
    return g->mc.tl.slots ? g->bslot[(step - g->npre) % g->mc.tl.slots] : g->BW + k0 * sb;
}

/* Free this core's slot of B's chunk of step `step` (its chunk `slots`
 * earlier is used): slotfree to its dmai on the loader, else a credit to
 * the core before it in the column, which sends B on here. */
static void rg_release(rg_core *g, int64_t step)
{
    if (step >= g->nsteps)
        return;
    if (g->i == g->mid) {
        cc_emit_sig(g->e, ISA_U_RING, g->slotfree);
        return;
    }
    /* streamed: B comes from the row above (below, in a reversed column);
     * the credit's send, its core, token and addresses the core's own, is
     * one instruction every time in a kernel: after the first, a copy */
    if (g->credlike >= 0) {
        g->credlike = (int)cc_emit_again(g->e, g->credlike);
        return;
    }
    const int h = rg_reversed(g) ? 0 : 1, up = g->core + (h ? -1 : 1) * (int)g->gn;
    cc_dma_shape sh = cc_dma_groups(1, 1, 0, 0);
    g->credlike = (int)cc_emit_ring_slow(g->e, ISA_OP_RING_SEND, up, g->cred[h], cc_abs(g->cred_in[h]),
                                         cc_abs(g->cred_src), &sh);
}

/* The own A rows of a chunk (stick groups [gi, gi + kg)) to aoff in the
 * grid row's A (dmai, or a copy from the kept region), and over the ring
 * to the grid row's other cores. */
static void rg_a_out(rg_core *g, int64_t gi, int64_t kg, int64_t aoff)
{
    be_ctx *c = g->c;
    mm_plan *m = g->m;
    cc_emit *e = g->e;
    const int64_t sb = c->t.stick, MT = g->mc.MB;
    if (m->ares) {
        be_res_copy(c, e, 0, m->mm->a, 0, g->pn, gi, kg, aoff, MT * sb);
    } else {
        be_view av = mm_shifted(&m->av, gi);
        be_dma_rows(c, e, ISA_OP_DMA_LD, aoff, MT * sb, &av, &m->arsp, g->p0, g->pn, kg);
        cc_emit_sig(e, ISA_U_DMAI, g->aload_r);
        if (m->akeep) /* behind the signal: the rows have landed */
            be_res_fill(c, e, m->mm->a, 0, g->pn, gi, kg, aoff, MT * sb);
    }
    cc_emit_sig(e, ISA_U_DMAI, g->aload);
    if (!m->ares)
        cc_emit_wait(e, ISA_U_RING, g->aload_r);
    for (int64_t d = 1; d < g->gn; d++) {
        const int64_t q = (g->j + d) % g->gn;
        cc_dma_shape sh = cc_dma_groups(g->pn, kg, MT * sb, m->ares ? g->ra_cap * sb : MT * sb);
        cc_emit_ring(e, ISA_OP_RING_SEND, (int)(g->i * g->gn + q), g->aarr[g->j], cc_abs(aoff),
                     cc_abs(m->ares ? g->ra_lx + gi * g->ra_cap * sb : aoff), &sh);
    }
}

/* The first K row of the core's jc-th chunk: with A in tiles each column
 * of the grid starts at its own tile's first chunk and wraps round, so
 * that in the first block every core of a row sends its tile's chunks at
 * once, each one a tile's length of chunks before the others need it
 * (from one core of the row, chunk after chunk, the 2048 chain's products
 * waited for A in the first chunks); B comes down the column in the same
 * order. */
static int64_t rg_k0(const rg_core *g, int64_t jc)
{
    return (jc + g->krot) % g->mc.nch * g->mc.KC;
}

/* Where the PTs find stick group gi of A, row r0 of the grid row, and
 * the distance between its groups: the core's own tile where A is kept
 * in tiles and gi is in it, else AG. */
static int64_t rg_a_at(const rg_core *g, int64_t gi, int64_t r0, int64_t *stride)
{
    const int64_t sb = g->c->t.stick, t0 = g->at0, tn = g->atn;
    if (gi >= t0 && gi < t0 + tn) {
        *stride = g->ra_cap * sb;
        return g->ra_lx + ((gi - t0) * g->ra_cap + r0) * sb;
    }
    *stride = g->mc.MB * sb;
    return g->AG + (ag_index(gi, t0, tn) * g->mc.MB + r0) * sb;
}

/* A kept in tiles: the grid row's A of a chunk (stick groups [gi, gi +
 * kg), within one tile) from the core whose tile holds it to the row's
 * other cores, each at its place in their AG; sfp1 of the others waits
 * for it.  The owner of the chunk, or -1 on the others. */
static void rg_a_tile_out(rg_core *g, int64_t gi, int64_t kg)
{
    const int64_t sb = g->c->t.stick, MT = g->mc.MB, t0 = g->at0, tn = g->atn;
    if (gi < t0 || gi >= t0 + tn)
        return;
    assert(gi + kg <= t0 + tn);
    for (int64_t d = 1; d < g->gn; d++) {
        const int64_t q = (g->j + d) % g->gn;
        cc_dma_shape sh = cc_dma_groups(g->mt, kg, MT * sb, g->ra_cap * sb);
        cc_emit_ring(g->e, ISA_OP_RING_SEND, (int)(g->i * g->gn + q), g->aarr[g->j],
                     cc_abs(g->AG + rg_ag_index(g->m, q, gi) * MT * sb), cc_abs(g->ra_lx + (gi - t0) * g->ra_cap * sb),
                     &sh);
    }
}

/* A's own rows (not in tiles) leave in groups of chunks: the first chunk
 * alone (its way in is the kernel's start), then as many chunks as make
 * RG_A_STICKS sticks a send, so that the ring does not pay a send's issue
 * GN - 1 times every chunk for a few rows (BERT-base's output projection,
 * 4x8r, K chunks of 64: seven sends of four sticks a chunk, 75 cycles
 * each, half of the ring's 1,650 cycles a chunk: 21,080 -> 18,822 cycles).
 * Only small sends are grouped: the 1024^3 chain's first product (32 rows
 * a part, 32-stick sends) grouped in twos ran 0.583 of peak, not 0.643.
 * The stick groups of A that go out at chunk jc, 0 if none. */
#define RG_A_STICKS 31
static int64_t rg_a_group(const rg_core *g, int64_t jc)
{
    const int64_t lanes = g->c->t.lanes16, KC = g->mc.KC;
    int64_t pn = 1;
    for (int q = 0; q < g->rs.n; q++) /* the row's largest part: every core of it groups alike */
        pn = cc_max(pn, g->rs.len[q]);
    int64_t per = cc_max(1, RG_A_STICKS / (pn * cc_ceil_div(KC, lanes)));
    if (g->m->ares) /* from LX: grouped in twos, the 1024^3 chain's middle product went 0.708 -> 0.696 */
        per = 1;
    if (jc > 0 && (jc - 1) % per)
        return 0;
    const int64_t end = cc_min(jc == 0 ? KC : (jc + per) * KC, g->m->Kd);
    return cc_ceil_div(end, lanes) - jc * KC / lanes;
}

/* sfp1, in the first block: the grid row's A of the chunk at stick group
 * gi is in (from each core of the row, or with A in tiles from the one
 * holding it; sent is 0 where the chunk's rows came with an earlier
 * chunk's); then both PTs may read it. */
static void rg_a_in(rg_core *g, int64_t gi, int sent)
{
    cc_emit *e = g->e;
    for (int64_t q = 0; q < g->gn && sent; q++) {
        int64_t t0, tn;
        if (g->m->atile)
            rg_a_tile(g->m, q, &t0, &tn);
        if (q != g->j && (!g->m->atile || (gi >= t0 && gi < t0 + tn)))
            cc_emit_wait(e, ISA_U_SFP1, g->aarr[q]);
    }
    if (!g->m->atile && sent)
        cc_emit_wait(e, ISA_U_SFP1, g->aload);
    for (int u = 0; u < g->mc.nc; u++)
        cc_emit_sig(e, ISA_U_SFP1, g->abfull[u]);
}

/* dmai: block b's epilogue operands, once the previous block's results
 * are stored (C's operand area is free again). */
static void rg_ep_in(rg_core *g, int64_t b)
{
    if (!g->ep_base)
        g->ep_base = ir_xalloc((size_t)(g->m->ep.nl + 1) * sizeof *g->ep_base);
    if (b > 0)
        cc_emit_wait(g->e, ISA_U_DMAI, g->estored);
    g->ep_at = mm_ep_load(&g->mc, &g->rs, 0, g->g0, g->ns, g->C + g->mc.NBS * g->mc.MB * g->c->t.stick, g->ep_base);
    g->ep_b = b;
}

/* Does the loader load block b's epilogue operands right behind its last
 * chunk of B, signalled with it?  After that chunk's signal (as on every
 * other core) a signal waited for them to land before the next block's
 * first chunk was issued: BERT-base's fused q/k/v product, 500 to 940
 * cycles a block on each loader with the DRAM idle behind them. */
static int rg_ep_early(const rg_core *g, int64_t jc) { return g->mc.tl.slots && g->i == g->mid && jc == g->mc.nch - 1; }

/* The pieces [*lo, *hi) of the step-th chunk whose arrival corelet u is
 * told (sig have[u]): in the first step its own pieces, then its last
 * piece, when it has any. */
static inline void rg_told(const rg_core *g, int u, int64_t step, int64_t *lo, int64_t *hi)
{
    *lo = step == 0 ? g->cp.cst[u] : g->cp.last[u];
    *hi = step == 0 ? g->cp.cst[u] + g->cp.cns[u] : g->cp.cns[u] > 0 ? *lo + 1 : *lo;
}

/* Is corelet u told of piece pc's arrival (rg_told)? */
static inline int rg_told_at(const rg_core *g, int u, int64_t step, int64_t pc)
{
    int64_t lo, hi;
    rg_told(g, u, step, &lo, &hi);
    return pc >= lo && pc < hi;
}

/* rg_pieces_fast's state: where the step's instructions go, each
 * neighbour's last send, the corelets' pieces whose arrival they are told */
typedef struct {
    isa_insn *w, *like[2];
    int64_t lo[2], hi[2]; /* corelet u's chunk is in at the pieces [lo, hi) (none: empty) */
} rg_fast;

/* One piece of B (piece pc at `at`) on down the column, the neighbours'
 * credits waited for first when cw. */
static inline __attribute__((always_inline)) void rg_piece_fast(const rg_core *g, rg_fast *f, int64_t pc, isa_addr at,
                                                                int cw)
{
    isa_insn *w = f->w;
    if (g->i != g->mid)
        isa_tok_insn(w++, ISA_OP_WAIT, ISA_U_RING, (uint8_t)g->arr);
    for (int u = 0; u < 2; u++) /* (both: an absent corelet's range is empty) */
        if (pc >= f->lo[u] && pc < f->hi[u])
            isa_tok_insn(w++, ISA_OP_SIG, ISA_U_RING, (uint8_t)g->have[u]);
    for (int q = 0; q < g->nh; q++) {
        const int h = g->hs[q];
        if (cw)
            isa_tok_insn(w++, ISA_OP_WAIT, ISA_U_RING, (uint8_t)g->cred[h]);
        isa_insn_copy(w, f->like[h]);
        w->d = at;
        w->a = at;
        f->like[h] = w++;
    }
    f->w = w;
}

/* rg_chunk_in's pieces of B on down the column, the emitter's tests
 * made once for the step instead of per instruction: the core's tokens
 * fit (g->tokfit), the emitter has not failed, each neighbour has a send
 * to copy and every piece's address fits; then the step's room is made
 * and its waits, sigs and sends written as cc_emit_tok and
 * cc_emit_ring_like write them, without their tests.  0: the step takes
 * those calls instead. */
static int rg_pieces_fast(rg_core *g, int64_t step, int credw, int64_t bat, int64_t bs)
{
    cc_emit *e = g->e;
    const int64_t ns = g->ns;
    const isa_addr first = cc_abs(bat), last = cc_abs(bat + (ns - 1) * bs);
    if (!g->tokfit || e->failed || bs < 0 || ns < 1 || !isa_addr_fits(&first) || !isa_addr_fits(&last))
        return 0;
    for (int q = 0; q < g->nh; q++)
        if (g->like[g->hs[q]] < 0)
            return 0;
    rg_fast f = {isa_stream_room_n(e->s, (size_t)(ns * (1 + g->mc.nc + 2 * g->nh))), {NULL, NULL}, {0, 0}, {0, 0}};
    for (int q = 0; q < g->nh; q++)
        f.like[g->hs[q]] = &e->s->insns[g->like[g->hs[q]]];
    for (int u = 0; u < g->mc.nc; u++)
        rg_told(g, u, step, &f.lo[u], &f.hi[u]);
    rg_piece_fast(g, &f, 0, first, credw); /* only the first piece waits for credits */
    for (int64_t pc = 1; pc < ns; pc++)
        rg_piece_fast(g, &f, pc, cc_abs(bat + pc * bs), 0);
    e->s->n = (size_t)(f.w - e->s->insns);
    for (int q = 0; q < g->nh; q++)
        g->like[g->hs[q]] = f.like[g->hs[q]] - e->s->insns;
    return 1;
}

/* Chunk jc of K of block b (the core's step-th) in: dmai loads B's chunk
 * (the middle core; streamed, once its slot is free) and, in the first
 * block, the own A rows; the ring sends the own A rows to the grid row's
 * other cores (from the kept region directly), then B's pieces on down
 * the column (streamed: once the core below has the slot free), then
 * frees the slot of the step before; sfp1 collects the grid row's A rows
 * of the chunk.  Its first K row is k0 (rg_k0), B's chunk at bat in LX,
 * bs between its stick groups (rg_bchunk; once for this and rg_chunk_pt). */
static void rg_chunk_in(rg_core *g, int64_t b, int64_t jc, int64_t step, int64_t k0, int64_t bat, int64_t bs)
{
    be_ctx *c = g->c;
    mm_plan *m = g->m;
    cc_emit *e = g->e;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, MT = g->mc.MB, KC = g->mc.KC;
    const int64_t kc = cc_min(KC, m->Kd - k0), gi = k0 / lanes, kg = cc_ceil_div(kc, lanes);
    const int64_t aoff = g->AG + (gi * MT + g->own) * sb;
    const int stream = g->mc.tl.slots > 0;
    if (g->i == g->mid) {
        if (stream && step - g->npre >= g->mc.tl.slots)
            cc_emit_wait(e, ISA_U_DMAI, g->slotfree);
        if (step >= g->npre)
            be_dma_rows(c, e, ISA_OP_DMA_LD, bat, bs, &g->bv0, &m->brsp, k0, kc, g->ns);
        if (rg_ep_early(g, jc))
            rg_ep_in(g, b);
        if (m->ares || b > 0)
            cc_emit_sig(e, ISA_U_DMAI, g->loaded);
    }
    /* in the first block the own A rows (from DRAM) are loaded right
     * behind B's chunk and both signalled after: a signal waits for dmai's
     * loads to land, so one after each paid DRAM's latency twice a chunk
     * (BERT-base's output projection, 4x8r: about 1,650 cycles a chunk,
     * the ring and PTs idle between) */
    const int64_t akg = b > 0 ? 0 : m->atile ? kg : rg_a_group(g, jc); /* (read in the first block alone) */
    if (b == 0 && m->atile)
        rg_a_tile_out(g, gi, kg);
    else if (b == 0 && akg > 0)
        rg_a_out(g, gi, akg, aoff);
    if (g->i == g->mid && !m->ares && b == 0)
        cc_emit_sig(e, ISA_U_DMAI, g->loaded);
    if (g->i == g->mid)
        cc_emit_wait(e, ISA_U_RING, g->loaded);
    const cc_dma_shape sh = cc_dma_groups(kc, 1, 0, 0); /* every stick group's sends' */
    if (kc != g->send_kc) { /* a neighbour's next send differs from its last only in its addresses, in one K chunk */
        g->like[0] = g->like[1] = -1;
        g->send_kc = (int)kc;
    }
    for (int q = 0; q < g->nh; q++) /* kept by every send of the step */
        assert(cc_ring_like_keeps(e, g->like[g->hs[q]], ISA_OP_RING_SEND, g->arr, &sh));
    const int credw = stream && step - g->npre >= g->mc.tl.slots; /* the first piece waits for credits */
    for (int64_t pc = rg_pieces_fast(g, step, credw, bat, bs) ? g->ns : 0; pc < g->ns; pc++) {
        if (g->i != g->mid)
            cc_emit_wait(e, ISA_U_RING, g->arr);
        for (int u = 0; u < g->mc.nc; u++)
            if (rg_told_at(g, u, step, pc))
                cc_emit_sig(e, ISA_U_RING, g->have[u]);
        const int64_t at = bat + pc * bs;
        for (int q = 0; q < g->nh; q++) {
            const int h = g->hs[q];
            if (credw && pc == 0)
                cc_emit_wait(e, ISA_U_RING, g->cred[h]);
            g->like[h] = cc_emit_ring_like(e, g->like[h], ISA_OP_RING_SEND, g->down[h], g->arr, cc_abs(at), cc_abs(at),
                                           &sh);
        }
    }
    if (stream && step > 0) {
        for (int u = 0; u < g->mc.nc; u++)
            cc_emit_wait(e, ISA_U_RING, g->ptdone[u]);
        if (step - 1 >= g->npre) /* a chunk loaded ahead held no slot */
            rg_release(g, step - 1 + g->mc.tl.slots);
    }
    if (b == 0)
        rg_a_in(g, gi, akg > 0);
}

/* pt u: its part of chunk jc of block b (the core's step-th); the first
 * step piece by piece, as its sticks come in (the corelets start a hop's
 * worth of pieces earlier), a block's last chunk part by part when
 * piped, once the previous block's results have left C (streamed); k0,
 * bat and bs as rg_chunk_in's. */
static void rg_chunk_pt(rg_core *g, int64_t b, int64_t jc, int64_t step, int64_t k0, int64_t bat, int64_t bs)
{
    be_ctx *c = g->c;
    mm_plan *m = g->m;
    cc_emit *e = g->e;
    const mm_core *mc = &g->mc;
    const int64_t sb = c->t.stick, lanes = c->t.lanes16, MT = mc->MB, KC = mc->KC;
    const int64_t kc = cc_min(KC, m->Kd - k0), gi = k0 / lanes;
    const int64_t *crow = g->cp.crow, *cnr = g->cp.cnr, *cst = g->cp.cst, *cns = g->cp.cns;
    const int first = jc == 0, lastc = jc == mc->nch - 1;
    for (int u = 0; u < mc->nc; u++) {
        const isa_unit pt = u ? ISA_U_PT1 : ISA_U_PT0;
        if (b == 0)
            cc_emit_wait(e, pt, g->abfull[u]);
        if (lastc && b > 0) {
            cc_emit_wait(e, pt, g->stored);
            if (g->nres)
                cc_emit_wait(e, pt, g->sent);
        }
        const int parts = lastc && g->pipe;
        for (int64_t s0 = cst[u], sn = step == 0 ? 1 : cns[u]; s0 < cst[u] + cns[u]; s0 += sn) {
            cc_emit_wait(e, pt, g->have[u]);
            const int64_t ncols = cc_min(sn * lanes, g->cols - s0 * lanes);
            for (int r = 0; r < (parts ? g->nseg[u] : 1); r++) {
                const int64_t r0 = parts ? g->rs.off[g->seg[u][r]] : crow[u];
                const int64_t rn = parts ? g->rs.len[g->seg[u][r]] : cnr[u];
                if (rn > 0 && ncols > 0) { /* an edge block can leave corelet 1 nothing */
                    const int64_t poff = (r0 + s0 * c->t.f32_sticks * MT) * sb;
                    int64_t as;
                    const isa_addr a = cc_abs(rg_a_at(g, gi, r0, &as));
                    /* every field given: no zeroing first (21 instructions a product) */
                    const cc_pt_args pa = {.c = u,
                                           .flags = (first ? 0 : ISA_F_ACC) | (lastc ? 0 : ISA_F_F32),
                                           .d = cc_abs(lastc ? g->C + (r0 + s0 * MT) * sb : mc->P + poff),
                                           .p = cc_abs(first ? 0 : mc->P + poff),
                                           .a = a,
                                           .b = cc_abs(bat + s0 * bs),
                                           .m = rn,
                                           .n = ncols,
                                           .k = kc,
                                           .ds = MT * sb,
                                           .ps = first ? 0 : MT * sb,
                                           .as = as,
                                           .bs = bs};
                    g->ptlike[u] = cc_emit_pt_like(e, g->ptlike[u], &pa);
                }
                if (parts)
                    cc_emit_sig(e, pt, g->mmd[u]);
            }
        }
        if (lastc && !g->pipe)
            cc_emit_sig(e, pt, g->mmd[u]);
        if (mc->tl.slots)
            cc_emit_sig(e, pt, g->ptdone[u]);
    }
}

/* The epilogue's pieces (rows from off: segments [s0, s1) of rs on
 * corelet u's SFP) in the order they complete, of block b (sticks
 * [g0, g0 + ns)). */
typedef struct rg_pieces {
    int n, u[RG_MAX_GN], s0[RG_MAX_GN], s1[RG_MAX_GN];
    int64_t b, g0, ns;
    be_val vals[RG_MAX_GN][IR_KERNEL_NODES];
} rg_pieces;

static void rg_pieces_of(const rg_core *g, int64_t b, rg_pieces *p)
{
    p->n = 0;
    p->b = b;
    p->g0 = g->g0;
    p->ns = g->ns;
    if (!g->pipe) {
        p->u[0] = 0;
        p->s0[0] = 0;
        p->s1[0] = g->rs.n;
        p->n = 1;
        return;
    }
    for (int r = 0; r < g->rs.n; r++)
        for (int u = 0; u < g->mc.nc; u++)
            if (r < g->nseg[u]) {
                p->u[p->n] = u;
                p->s0[p->n] = g->seg[u][r];
                p->s1[p->n++] = g->seg[u][r] + 1;
            }
}

/* sfp: each piece's values once its product is done (the operands loaded
 * at at); nres: results kept in LX, which the ring sends on. */
static int rg_ep_eval(rg_core *g, rg_pieces *p, const int64_t *base, int64_t at, int nres)
{
    mm_core *mc = &g->mc;
    cc_emit *e = g->e;
    const int64_t sb = g->c->t.stick, MT = mc->MB;
    int sfp_used[2] = {0, 0}, rc = 0;
    for (int q = 0; q < p->n && !rc; q++) {
        const int u = p->u[q];
        const isa_unit sfp = u ? ISA_U_SFP1 : ISA_U_SFP0;
        const int64_t off = g->rs.off[p->s0[q]], len = g->rs.off[p->s1[q] - 1] + g->rs.len[p->s1[q] - 1] - off;
        if (g->pipe) {
            cc_emit_wait(e, sfp, g->mmd[u]);
        } else {
            for (int v = 0; v < mc->nc; v++)
                cc_emit_wait(e, sfp, g->mmd[v]);
        }
        if (!sfp_used[u]++)
            cc_emit_wait(e, sfp, g->efull);
        mc->T.corelet = u;
        mc->T.carea = 1;
        mc->T.ctop = g->CT + q * g->colt;
        mc->T.cend = mc->T.ctop + g->colt;
        mm_ep_rebind(mc, base, off);
        rc = mm_ep_eval(mc, len, g->ns, at + off * sb, g->C + off * sb, g->C + mc->cslot_bytes + MT * sb, p->vals[q]);
        cc_emit_sig(e, sfp, g->done[u]);
        if (nres)
            cc_emit_sig(e, sfp, g->rdone[u]);
    }
    return rc;
}

/* dmao: each piece's results to DRAM, and the own rows of a kept one. */
static void rg_ep_dram(rg_core *g, const rg_pieces *p, int q)
{
    be_ctx *c = g->c;
    const rk_plan *k = &g->m->ep;
    const int64_t sb = c->t.stick, MT = g->mc.MB, off = g->rs.off[p->s0[q]];
    for (int jj = 0; jj < k->nn && jj < IR_KERNEL_NODES; jj++) {
        const rk_node *rn = &k->nodes[jj];
        be_view v = mm_shifted(&rn->sv, p->g0);
        for (int sg = p->s0[q]; rn->dram && sg < p->s1[q]; sg++)
            be_dma_rows(c, g->e, ISA_OP_DMA_ST, p->vals[q][jj].lx + (g->rs.off[sg] - off) * sb, MT * sb, &v, &k->rsp,
                        g->rs.row[sg], g->rs.len[sg], p->ns);
    }
}

/* Piece q's results of node jj by stick group to their readers' cores
 * (be_res.heads): the core's own groups (dmao) or the others' (ring). */
static void rg_heads(rg_core *g, const rg_pieces *p, int q, int jj, int own)
{
    be_ctx *c = g->c;
    const int buf = c->p->nodes[g->m->ep.nodes[jj].node].out;
    const int64_t sb = c->t.stick, MT = g->mc.MB, off = g->rs.off[p->s0[q]];
    for (int sg = p->s0[q]; sg < p->s1[q];) {
        int e = sg + 1; /* segments whose rows follow on in the piece and in the buffer: one send */
        while (e < p->s1[q] && g->rs.row[e] - g->rs.row[sg] == g->rs.off[e] - g->rs.off[sg])
            e++;
        const int64_t n = g->rs.off[e - 1] + g->rs.len[e - 1] - g->rs.off[sg];
        be_heads_send(c, g->e, own, buf, g->rs.row[sg], n, p->g0, p->ns, p->vals[q][jj].lx + (g->rs.off[sg] - off) * sb,
                      MT * sb);
        sg = e;
    }
}

static void rg_ep_store(rg_core *g, const rg_pieces *p)
{
    be_ctx *c = g->c;
    const rk_plan *k = &g->m->ep;
    const int64_t sb = c->t.stick, MT = g->mc.MB;
    const int hold = g->defer && p->b + 1 < g->nsb;
    if (hold) {
        g->held[g->nheld] = ir_xmalloc(sizeof *p); /* not zeroed: *p copied in */
        *g->held[g->nheld++] = *p;
    }
    for (int q = 0; q < p->n; q++) {
        const int64_t off = g->rs.off[p->s0[q]];
        cc_emit_wait(g->e, ISA_U_DMAO, g->done[p->u[q]]);
        if (!hold)
            rg_ep_dram(g, p, q);
        for (int jj = 0; jj < k->nn && jj < IR_KERNEL_NODES; jj++) {
            const rk_node *rn = &k->nodes[jj];
            const int buf = c->p->nodes[rn->node].out;
            if (rn->res && c->res[buf].grid) /* the piece into this core's tile */
                be_res_copy(c, g->e, 1, buf, off, g->rs.off[p->s1[q] - 1] + g->rs.len[p->s1[q] - 1] - off, g->g0,
                            g->ns, p->vals[q][jj].lx, MT * sb);
            else if (rn->res && g->j >= p->s0[q] && g->j < p->s1[q])
                be_res_copy(c, g->e, 1, buf, 0, g->pn, g->g0, g->ns, p->vals[q][jj].lx + (g->own - off) * sb, MT * sb);
            else if (rn->heads)
                rg_heads(g, p, q, jj, 1);
        }
    }
    for (int h = 0; !hold && h < g->nheld; h++) { /* the last block's: the held ones after it */
        for (int q = 0; q < g->held[h]->n; q++)
            rg_ep_dram(g, g->held[h], q);
        free(g->held[h]);
    }
    if (!hold)
        g->nheld = 0;
}

/* ring: each piece's kept results to the cores keeping the other rows. */
static void rg_ep_send(rg_core *g, const rg_pieces *p)
{
    be_ctx *c = g->c;
    const rk_plan *k = &g->m->ep;
    const int64_t sb = c->t.stick, MT = g->mc.MB;
    for (int q = 0; q < p->n; q++) {
        const int64_t off = g->rs.off[p->s0[q]];
        cc_emit_wait(g->e, ISA_U_RING, g->rdone[p->u[q]]);
        for (int jj = 0; jj < k->nn && jj < IR_KERNEL_NODES; jj++) {
            const rk_node *rn = &k->nodes[jj];
            const be_res *r = &c->res[c->p->nodes[rn->node].out];
            if (rn->heads)
                rg_heads(g, p, q, jj, 0);
            if (!rn->res || r->grid) /* a grid's tile stays on its core */
                continue;
            for (int sg = p->s0[q]; sg < p->s1[q]; sg++) {
                if (sg == g->j)
                    continue;
                cc_dma_shape sh = cc_dma_groups(g->rs.len[sg], p->ns, r->rows_cap * sb, MT * sb);
                cc_emit_ring(g->e, ISA_OP_RING_SEND, (int)(g->i * g->gn + sg), ISA_TOK_NONE,
                             cc_abs(r->lx + p->g0 * r->rows_cap * sb),
                             cc_abs(p->vals[q][jj].lx + (g->rs.off[sg] - off) * sb), &sh);
            }
        }
    }
}

/* ring: the kept results of the block whose epilogue g->pend holds, then
 * (streamed, a later block to come) C is free for that one's PTs. */
static void rg_send_pending(rg_core *g)
{
    rg_pieces *p = g->pend;
    if (!p)
        return;
    rg_ep_send(g, p);
    for (int u = 0; p->b + 1 < g->nsb && u < g->mc.nc; u++)
        cc_emit_sig(g->e, ISA_U_RING, g->sent);
    g->pend = NULL;
}

/* The epilogue of block b: operands (dmai, streamed once the previous
 * block's results are stored), values (sfp), results (dmao: DRAM and the
 * own rows of a kept one; then, with a later block, C is free for the
 * PTs and the operands' area for dmai), in pieces into p; kept results go
 * to the other rows' cores later (g->pend, rg_send_pending). */
static int rg_epilogue(rg_core *g, int64_t b, rg_pieces *p)
{
    mm_core *mc = &g->mc;
    assert(!g->pend); /* the previous block's went behind this block's first chunk: p is free */
    rg_pieces_of(g, b, p);
    if (!rg_ep_early(g, mc->nch - 1))
        rg_ep_in(g, b);
    assert(g->ep_b == b);
    const int64_t at = g->ep_at, *base = g->ep_base;
    for (int u = 0; u < (g->pipe ? mc->nc : 1); u++)
        if (!g->pipe || g->nseg[u] > 0) /* an SFP with no piece takes none */
            cc_emit_sig(g->e, ISA_U_DMAI, g->efull);
    int rc = rg_ep_eval(g, p, base, at, g->nres);
    if (!rc)
        rg_ep_store(g, p);
    for (int u = 0; !rc && b + 1 < g->nsb && u <= mc->nc; u++)
        cc_emit_sig(g->e, ISA_U_DMAO, u < mc->nc ? g->stored : g->estored);
    if (!rc && g->nres)
        g->pend = p;
    return rc;
}

/* The LX a core of the grid over the ring takes (its setup on emitter e,
 * which has no stream: be_lx_probe); -1 with an error.  It hangs on the
 * core's column's sticks alone: rg_setup allocates alike on every core
 * (the grid row's A, B's slots or column block, the block, the partial
 * sums: the plan's tiling, the same for each), then the blocks held for
 * their stores by their count (rg_defer_setup: the column's sticks), and
 * its tokens are as many on every core. */
int mm_rg_need(be_ctx *c, mm_plan *m, int core, cc_emit *e)
{
    rg_core g = {0}; /* (2 KB, on the stack: the LX plan asks this of every core of every product) */
    return rg_setup(&g, c, m, core, e);
}

/* B's first K chunks loaded ahead (be_kind.prefetch): after a streamed
 * grid's last load the DRAM idles while that chunk goes down its column
 * and the last epilogue runs (c->drain); in that time the columns'
 * loaders of this kernel load the first block's first chunks (as many
 * as the drain moves at the DRAM's rate, at most the slots' count) behind
 * the kernel's own loads, into LX above both kernels' working LX and
 * below both floors (the same place on every core: the pieces go down
 * the column there). Only a B no kernel writes (a parameter), and only
 * where B streams (BERT-base's FFN down-projection: 3 chunks a loader,
 * the layer 197,498 -> 193,104 cycles). Loaded further back
 * (be_kind.prefetch_far, from a streamed grid `from` before the kernel
 * before), the place is above every kernel's working LX from `from` on
 * and below all their floors, and the budget counts the kernels between.
 * A B held whole (no slots) is loaded ahead only by the kernel before,
 * when that kernel leaves every loader idle, in its estimate's time
 * (BERT-base's output projection, 2 chunks in PV's kernel: the layer
 * 175,723 -> 174,571 cycles). */
static int rg_pre_room(be_ctx *c, mm_plan *m, int from, int64_t above, int64_t *need, int64_t *room,
                       int *loader)
{
    const int pos = m->ep.pos;
    const int64_t gn = c->work[pos].gn;
    int64_t seen[2] = {-1, -1}; /* the column sticks set up so far (mm_rg_need: a core's LX hangs on them) */
    *need = above;
    *loader = INT_MAX;
    for (int core = 0; core < c->work[pos].cores; core++) {
        int64_t g0, ns;
        cc_split(m->GN, gn, core % gn, &g0, &ns);
        if (ns == seen[0] || ns == seen[1]) { /* as a core set up before, and so m->rg_tl is the tiling */
            if (rg_is_loader(&m->rg_tl, c->work[pos].gm, gn, core) && core < *loader)
                *loader = core;
            continue;
        }
        cc_emit e;
        be_lx_probe(c, pos, core, &e);
        rg_core *g = rg_new();
        const int rc = rg_setup(g, c, m, core, &e);
        if (!rc && g->i == g->mid && core < *loader)
            *loader = core;
        free(g);
        if (rc)
            return -1;
        *need = cc_max(*need, (int64_t)e.lx_top);
        seen[seen[0] >= 0] = ns;
    }
    int64_t floor = c->lx_floor[pos];
    for (int i = from; i < pos; i++)
        floor = cc_min(floor, c->lx_floor[i]);
    *room = floor - *need;
    return 0;
}

int mm_rg_prefetch(be_ctx *c, mm_plan *m, int from, int64_t above, double budget, be_pre *out)
{
    const int pos = m->ep.pos;
    const mm_tiling *tl = &m->rg_tl;
    int64_t at, room;
    int loader;
    out->n = 0;
    if (pos < 1)
        return 0;
    if (rg_pre_room(c, m, from, above, &at, &room, &loader))
        return -1;
    /* B whole: only from the kernel before, if it leaves every loader
     * idle (its cores are 0 up to its count), in that kernel's time */
    if (!tl->slots && (from != pos - 1 || loader < c->work[from].cores))
        return 0;
    if (!tl->slots)
        budget = be_kind_of(c, from)->estimate(c, from);
    if (c->p->bufs[m->mm->b].kind != IR_BUF_PARAM || budget <= 0)
        return tl->slots > 0;
    const int64_t sb = c->t.stick, chunk = tl->NBS * tl->KC * sb;
    /* as many chunks as the columns' loaders move in the budget (from's drain, the kernels between) */
    const int64_t fill = (int64_t)ceil(budget * c->t.dram_bytes_per_cycle / (double)(c->work[pos].gn * chunk));
    const int64_t n = cc_max(0, cc_min(cc_min(cc_min(tl->slots ? tl->slots : tl->nch, tl->nch), room / chunk), fill));
    const ir_kernel *prev = &c->p->kernels[c->p->order[from]];
    const int64_t gm = c->work[pos].gm, gn = c->work[pos].gn;
    for (int core = 0; core < c->work[pos].cores && n > 0; core++) {
        /* only the columns' loaders load; the others' setup, which
         * rg_pre_room's passed for their column sticks, is not needed */
        if (!rg_is_loader(tl, gm, gn, core))
            continue;
        rg_core *g = rg_new();
        cc_emit probe;
        be_lx_probe(c, pos, core, &probe);
        int rc = rg_setup(g, c, m, core, &probe);
        if (!rc) {
            cc_emit *e = &c->em[core];
            rg_block(g, 0);
            cc_kernel_begin(e, prev->name);
            for (int64_t s = 0; s < n; s++) {
                const int64_t k0 = rg_k0(g, s);
                be_dma_rows(c, e, ISA_OP_DMA_LD, at + s * chunk, tl->KC * sb, &g->bv0, &m->brsp, k0,
                            cc_min(tl->KC, m->Kd - k0), g->ns);
            }
            cc_kernel_end(e);
            rc = cc_emit_failed(e) ? -1 : 0;
        }
        free(g);
        if (rc)
            return -1;
    }
    *out = (be_pre){pos, at, n};
    return tl->slots > 0;
}

/* A core of the grid over the ring: setup, then K chunk by chunk (in,
 * products), then the epilogue. */
int mm_rg_core(be_ctx *c, mm_plan *m, int core)
{
    rg_core *g = rg_new();
    int rc = rg_setup(g, c, m, core, &c->em[core]);
    g->tokfit = (signed char)(cc_toks_fit(g->e, ISA_OP_WAIT, ISA_U_RING) && cc_toks_fit(g->e, ISA_OP_SIG, ISA_U_RING));
    const be_pre *pre = c->pre.n > 0 && c->pre.pos == m->ep.pos ? &c->pre : &c->far;
    if (pre->n > 0 && pre->pos == m->ep.pos) {
        g->pre = pre->at;
        g->npre = pre->n;
    }
    /* every block's epilogue pieces, one after another, on the stack (not
     * zeroed, 16 KB: rg_pieces_of and the epilogue's evaluation write what
     * is read; zeroing them per block was 3% of BERT-base's compile, a
     * malloc and free per block 0.2%: 416 blocks on 128 cores; a malloc
     * per core took 9 more page faults than per block) */
    rg_pieces pieces, *p = &pieces;
    if (!rc) {
        mm_tile_init(&g->mc, c, g->mc.MB);
        cc_kernel_begin(g->e, m->K->name);
        rg_layout(g);
        for (int64_t b = 0; b < g->nsb && !rc; b++) {
            rg_block(g, b);
            for (int64_t jc = 0; jc < g->mc.nch; jc++) {
                const int64_t step = b * g->mc.nch + jc;
                int64_t bs; /* B's chunk: at bat, bs between its stick groups */
                const int64_t k0 = rg_k0(g, jc), bat = rg_bchunk(g, step, k0, &bs);
                rg_chunk_in(g, b, jc, step, k0, bat, bs);
                rg_chunk_pt(g, b, jc, step, k0, bat, bs);
                if (jc == 0) /* the previous block's, behind this block's first chunk */
                    rg_send_pending(g);
            }
            rc = rg_epilogue(g, b, p);
        }
        for (int u = 0; g->mc.tl.slots && u < g->mc.nc; u++) /* the last chunk's, to end at zero */
            cc_emit_wait(g->e, ISA_U_RING, g->ptdone[u]);
        rg_send_pending(g);
        be_heads_close(c, g->e, m->ep.pos);
        cc_kernel_end(g->e);
        /* the chunks loaded ahead come in up to the end: what the next
         * kernel loads ahead goes above them (lx_top_of) */
        if (g->npre > 0)
            g->e->lx_top = cc_max(g->e->lx_top, g->pre + g->npre * g->mc.NBS * g->mc.KC * c->t.stick);
        be_tile_memo_end(&g->mc.T);
        free(g->ep_base);
        rc = rc || cc_emit_failed(g->e) ? -1 : 0;
    }
    free(g);
    return rc;
}

/* B's slots and credits over the ring, the partial sums, split-K's
 * flags to the neighbours. */
void mm_core_ring(mm_core *mc)
{
    mm_plan *m = mc->m;
    cc_emit *e = mc->e;
    const int64_t sb = m->c->t.stick;
    if (mc->bc) {
        for (int i = 0; i < BC_SLOTS; i++)
            mc->bslot[i] = cc_lx_alloc(e, mc->KC * mc->NBS * sb, "matmul B chunk (ring)");
        mc->cred_src = cc_lx_alloc(e, sb, "ring credit (source)");
        mc->cred_in = cc_lx_alloc(e, sb, "ring credit (from the right neighbour)");
        mc->slotfree = cc_tok_alloc(e, "B slot free (ring -> dmai)");
        mc->loaded = cc_tok_alloc(e, "B piece loaded (dmai -> ring)");
        mc->arr = cc_tok_alloc(e, "B piece arrived (from the left neighbour)");
        mc->cred = cc_tok_alloc(e, "B slot credit (from the right neighbour)");
        for (int u = 0; u < 2; u++) {
            mc->have[u] = cc_tok_alloc(e, "B chunk in (ring -> pt)");
            mc->ptdone[u] = cc_tok_alloc(e, "B chunk used (pt -> ring)");
        }
    }
    if (mc->nch > 1 || mc->gk > 1)
        mc->P = cc_lx_alloc(e, mm_p_bytes(m, mc->MB, mc->NBS, mc->KC), "matmul partial sums");
    if (mc->gk > 1) {
        mc->rdy_src = cc_lx_alloc(e, sb, "split-K ready (source)");
        mc->rdy_in = cc_lx_alloc(e, sb, "split-K ready (from the left neighbour)");
        for (int u = 0; u < 2; u++)
            mc->pdone[u] = cc_tok_alloc(e, "split-K partial sums done (pt -> ring)");
        mc->rdy = cc_tok_alloc(e, "split-K: the left neighbour's sums are ready");
        mc->red = cc_tok_alloc(e, "split-K: the right neighbour's sums are added");
    }
}
