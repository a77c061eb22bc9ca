/* be_matmul.h: the matmul template's shared state (internal to the back
 * half): the plan of a MATMUL kernel, its tilings and a core's emission,
 * used by be_matmul.c (the grid of cores), be_ring.c (the schemes over the
 * ring) and be_mmblock.c (the pieces of a block every scheme uses). */
#ifndef CC_BE_MATMUL_H
#define CC_BE_MATMUL_H

#include "backend.h"

/* A core's staged sticks of one operand (mm_stage_need_memo), kept for
 * the next core: its tiling's block, its part (rows of A or sticks of
 * B), and the LX bytes. */
typedef struct {
    int set;
    int64_t MB, NBS, KC, at, len, bytes;
} mm_stage_memo;

/* mm_block's most block rows that fit LX (mm_most_rows up to the
 * largest count pt.mm takes) for one plan (gen), per block sticks and K
 * chunk, with what else the LX bytes and the budget read that the plan's
 * search changes: the grid search asks the same of every grid of the
 * same tile rows (BERT-base 26,621 times, 890 of them different). */
typedef struct {
    uint32_t gen; /* 0: empty */
    int aw, bw;
    int64_t nbs, kc, budget, Kc, gk, rows;
    double sscale;
} mm_rows_memo;

/* How one core walks its tile: blocks of MB rows x NBS sticks, K in
 * chunks of KC rows (nch of them), and the split of each block between
 * the PT corelets: SPLIT_ROWS gives corelet 1 the rows from r0 on,
 * SPLIT_STICKS the sticks from s0 on (fixed points, so a corelet's part of
 * the A, P and C slots never moves between blocks). */
enum { SPLIT_NONE, SPLIT_ROWS, SPLIT_STICKS };

typedef struct {
    int64_t MB, NBS, KC, nch;
    int split;
    int64_t r0, s0;
    double cycles;     /* estimate for the kernel with this tiling on every core */
    double bytes;      /* DRAM bytes the whole grid moves */
    int64_t slots;     /* grid over the ring: B's K chunks in this many slots (0: its column block whole) */
    double wait;       /* schemes over the ring: the DRAM's wait on the way in that cycles counts */
    double waited;     /* a tiling chosen with the DRAM's waits priced (mm_block: a short product's),
                          its estimate so; -1 none */
} mm_tiling;

/* The grid search's estimates (mm_plan_search) of its grids with K and
 * the batch whole (gk 1, gb 1), per gm x gn, and the plan's state they
 * were priced in: the plain products' tie break (mm_plan_ties) prices
 * the same grids again. */
typedef struct {
    double *e;           /* [gm * (cores + 1) + gn]; < 0: not priced */
    double *waited;      /* the same, the tiling's estimate with the DRAM's waits (mm_tiling.waited), set
                            where e is */
    int32_t *set;        /* the indices priced since the memo was emptied (nset of them) */
    int nset;
    int aw, bw, whole_dram, ends, waits;
    double sscale;
} mm_grid_memo;

/* The plan of a MATMUL kernel: its product, operands and epilogue. */
typedef struct mm_plan {
    be_ctx *c;
    const ir_kernel *K;
    const ir_node *mm;
    int nb, vm, vn, vk;
    int64_t nbatch, M, N, Kd, GN, KG;
    be_rowspace arsp, brsp;
    be_view av, bv;
    rk_plan ep;          /* the epilogue as a row structure: columns n, rows (batch.., m) */
    int acc;             /* the acc expression */
    int ag, bg;          /* A / B restickified in LX (sfp.rst from the sticks each block reads) */
    int at, bt;          /* ... its lane variable walks across its buffer's sticks (a transpose) */
    double sscale;       /* staged sticks per slot: the estimate (mm_stage_est) times this */
    int64_t stage_bytes; /* LX of the staged copies of results stored through sfp.rst */
    int aw, bw;          /* A / B staged whole once per core (not per block) */
    int whole_dram;      /* estimates count an operand staged whole as every core's read of it */
    int ends;            /* estimates price the first block's epilogue loads and the last block's
                            epilogue and stores in series (mm_ends: the report, and a grid of one
                            block a core against the schemes over the ring) */
    int64_t whole_bytes; /* LX of the operands staged whole */
    int ares;            /* A read from its LX region (kept there by an earlier kernel) */
    int akeep;           /* A an input this kernel loads first and keeps for later ones: each core copies
                            the rows it loads into A's region (be_res_fill; grids over the ring only) */
    int atile;           /* A read as the tiles an earlier product on the same grid over the ring kept
                            (this many columns: core j of a grid row holds K's stick groups
                            cc_split(KG, atile, j) of the row's rows), sent over the ring to the row's
                            other cores; 0: no.  Counted as alx while the LX plan tiles the kernels */
    int alx;             /* the estimates price A as read from LX: it is, or (while the LX plan tiles
                            the kernels) an earlier kernel could keep it there (be_res_may_read) */
    int ahd, bhd;        /* A, B sent into this core's LX by stick group (be_heads_reads): no DRAM */
    uint64_t elx;        /* epilogue loads (bit i: ep.loads[i]) the estimates price as read from LX on
                            grids that leave each core contiguous rows, as alx (be_res_may_read) */
    int lxonly;          /* some result stays in LX only (rk_node.lxonly): its readers align with this
                            kernel's cores */
    int64_t gk, Kc, KGc; /* split-K: K parts, and a core's K rows / sticks (gk 1: Kd, KG) */
    int64_t gb;          /* batch parts (be_work.gb; 1 none) */
    mm_stage_memo smemo[2]; /* A's and B's staged sticks as the last core's emission measured them */
    /* an operand staged whole: the sticks batch index 0 reads of its first
     * n rows (A) or sticks (B), all of K, at [n] (mm_whole_spans) */
    int64_t *wspan[2];
    uint32_t gen;        /* the plan's number in workdiv's memo of most rows (be_mmmemo_gen; 0: none) */
    /* the grid over the ring's tiling, the same for every core of the
     * plan's emission or LX probe (rg_setup), searched once: the search
     * per core was 8% of BERT-base's compile */
    int rg_memo, rg_rc;
    mm_tiling rg_tl;
    /* ... and a grid's core tiles' tilings (mm_core_shape), by the tile's
     * rows and sticks: cc_split makes at most two sizes each way, and
     * each core's search was 3% of the Llama-8B decode step's compile */
    struct {
        int64_t mt, ns;
        int rc;
        mm_tiling tl;
    } tmemo[4];
    int ntmemo;
    mm_grid_memo gmemo;
} mm_plan;

/* Most columns of a grid over the ring (the cores a core shares its A rows with, plus one). */
#define RG_MAX_GN 8

/* Rows of a block as segments of the row space: segment s is rows
 * [row[s], row[s] + len[s]) at row off[s] of the block (a grid over the
 * ring computes several cores' parts; other blocks are one segment). */
typedef struct {
    int n;
    int64_t row[RG_MAX_GN], off[RG_MAX_GN], len[RG_MAX_GN];
} mm_rows;


/* Most B chunk slots of a grid over the ring whose column block does not
 * fit LX whole (chunk s + slots comes once s is used; a chunk's way from
 * DRAM down half a column takes about as long as a PT's chunk or two). */
#define RG_SLOTS 4

/* Estimates this close to the best count as equal: the one moving fewer
 * DRAM bytes wins, then the larger K chunk (fewer instructions). */
#define MM_SLACK 0.03

/* B chunks a core holds in the broadcast over the ring (be_ring.c). */
#define BC_SLOTS 3

/* Cycles from a DRAM read's issue to its first data, in the ring schemes'
 * estimates (seen in traces of the broadcast: about 700). */
#define BC_DRAM_LATENCY 700.0

/* A core's emission of the template: its tiling, LX slots, tokens and
 * tile, with the state of the schemes over the ring (be_ring.c). */
typedef struct {
    mm_plan *m;
    cc_emit *e;
    mm_tiling tl;
    int64_t MB, NBS, KC, nch;
    int nc; /* PT corelets in use */
    int nstaged;      /* grid: results stored through a staged copy */
    int64_t ab[2], cs[2], P, cslot_bytes;
    /* [slot][corelet] */
    int abfull[2][2], abempty[2][2], mmd[2][2], cempty[2][2];
    int efull[2], eempty[2], done[2];
    /* restickify in LX: the sticks of A's and B's buffers each chunk
     * reads, staged in its A/B slot at offsets ast and bst (dmai, with
     * the slot's tokens), copied into the slot's A and B parts by sfp0
     * (then abrst); staged results (one per epilogue node, -1 none) with
     * per-stick element counts, stored by dmao after strd */
    int64_t abslot_bytes, ast, bst, *alo, *ago, *blo, *bgo, *ostage;
    int64_t **ocount;
    int abrst[2][2], strd;
    /* grid: per corelet, its last product in the kernel's stream (-1
     * none; ints in padding: rg_core, which holds an mm_core, stays at
     * 2,040 bytes) */
    int ptlike[2];
    int64_t aws, bws; /* operands staged whole (m->aw / m->bw) at these */
    int64_t *ahi, *bhi; /* ... their layout rows alo[g]..ahi[g] (blo, bhi): the core's part */
    int wld;          /* ... loaded (dmai -> sfp0, once per kernel) */
    int wld_due;      /* wld is signalled after the first chunk's loads */
    int64_t nblk, nchunk;
    int64_t m0;       /* the core's first row */
    int64_t mt, g0, ns; /* grid: its tile, rows [m0, m0 + mt) x stick groups [g0, g0 + ns) */
    int64_t b0, bt;     /* grid: its batch indices [b0, b0 + bt) */
    /* split-K (be_work.gk > 1): this core's K rows [kb, kb + kt), its part
     * ik of gk; the partial sums go along the chain ik -> ik - 1 -> ... 0,
     * where core ik - 1 is the ring neighbour on the left */
    int64_t kb, kt, gk, ik;
    int64_t rdy_src, rdy_in;
    int pdone[2], rdy, red;
    /* B broadcast over the ring (be_work.bcast) */
    int bc, wrap;
    int64_t gm, nsteps;
    int64_t bslot[BC_SLOTS], cred_src, cred_in; /* credits come from the right neighbour */
    int slotfree, loaded, arr, cred, have[2], ptdone[2];
    be_tile T;
} mm_core;

/* Each corelet's part of a block of mb rows x nbs sticks under tiling
 * tl with nc corelets: rows [crow, crow + cnr), sticks [cst, cst + cns)
 * (an edge block can leave corelet 1 nothing), and last, the last stick
 * it needs (0 for none). */
typedef struct {
    int64_t crow[2], cnr[2], cst[2], cns[2], last[2];
} mm_parts;

/* ---- A block's pieces every scheme uses (be_mmblock.c) ---- */

/* LX of one C slot (result, epilogue operands and temps) for blocks of
 * MB rows x NBS sticks, of one A/B slot for K chunks of KC rows, and of
 * the fp32 partial sums when K takes several chunks (inline: the tiling
 * searches price them some 100,000 times a compile). */
static inline int64_t mm_cslot_bytes(const mm_plan *m, int64_t MB, int64_t NBS)
{
    int64_t b = NBS * MB;
    for (int i = 0; i < m->ep.nl; i++)
        b += m->ep.loads[i].cls == BE_V_TILE ? NBS * MB : m->ep.loads[i].cls == BE_V_COL ? NBS : MB;
    b += m->ep.nexpr * NBS * MB;
    return b * m->c->t.stick;
}

static inline int64_t mm_abslot_bytes(const mm_plan *m, int64_t MB, int64_t NBS, int64_t KC)
{
    return (cc_ceil_div(KC, m->c->t.lanes16) * MB + NBS * KC) * m->c->t.stick;
}

static inline int64_t mm_p_bytes(const mm_plan *m, int64_t MB, int64_t NBS, int64_t KC)
{
    return KC < m->Kc || m->gk > 1 ? cc_ceil_div(NBS * m->c->t.lanes16, m->c->t.lanes32) * MB * m->c->t.stick : 0;
}

/* The tiling searches split ns sticks into q blocks of ceil(ns / q)
 * sticks, for q from 1 up, each distinct block size once: the next q
 * whose block is smaller than q's (ns + 1 after the last), so a search
 * steps over the q that repeat a size (most of them: a size of many
 * sticks repeats for about ns / size^2 values of q) instead of skipping
 * each. */
static inline int64_t mm_next_split(int64_t ns, int64_t q)
{
    const int64_t nbs = cc_ceil_div(ns, q);
    return nbs > 1 ? cc_ceil_div(ns, nbs - 1) : ns + 1;
}

/* PT cycles of a product on one corelet, and a block's corelet split. */
double mm_pt_cycles(const cc_target *t, int64_t rows, int64_t sticks, int64_t k);
void mm_split_block(const mm_plan *m, mm_tiling *tl);
/* The most block rows whose LX fits a budget. */
int64_t mm_most_rows(const mm_plan *m, int64_t (*lx)(const mm_plan *, int64_t, int64_t, int64_t), int64_t hi,
                     int64_t nbs, int64_t kc, int64_t budget);
/* v moved on by `groups` stick groups. */
be_view mm_shifted(const be_view *v, int64_t groups);
/* The epilogue over a block: its operands loaded and bound (or bound
 * again at other rows), evaluated into one tile per node. */
int64_t mm_ep_load(mm_core *mc, const mm_rows *rs, int64_t i0, int64_t g0, int64_t nbs, int64_t at,
                   int64_t *base);
void mm_ep_rebind(mm_core *mc, const int64_t *base, int64_t off);
int mm_ep_eval(mm_core *mc, int64_t mb, int64_t nbs, int64_t top, int64_t C, int64_t end, be_val *vals);
void mm_corelet_parts(const mm_tiling *tl, int nc, int64_t mb, int64_t nbs, mm_parts *cp);
/* The tile state every emission of a core's blocks shares. */
void mm_tile_init(mm_core *mc, be_ctx *c, int64_t rows);

/* ---- workdiv's memo of plans (be_mmmemo.c) ---- */

/* Kernel pos planned before on m's inputs (built by mm_build, the work
 * and notes as they are now): that plan's work and notes put back, 0;
 * -1 none (or no memo), the work and notes noted as the plan finds them. */
int be_mmmemo_recall(be_ctx *c, int pos, const mm_plan *m);
/* A new plan's number for the memo of most rows (0: no memo, outside workdiv). */
uint32_t be_mmmemo_gen(be_ctx *c);
/* A grid memo's arrays, every entry unpriced, from the last plan that gave
 * them back (0: none, allocate them); and given back (or freed). */
int be_mmmemo_grid_take(be_ctx *c, mm_grid_memo *g);
void be_mmmemo_grid_give(be_ctx *c, mm_grid_memo *g);
/* The memo's slot of most rows for hash h (NULL: no memo). */
mm_rows_memo *be_mmmemo_rows(be_ctx *c, uint64_t h);
/* Remember the plan of kernel pos just made from m after a recall missed
 * (fresh: it wrote its notes anew, whatever it found). */
void be_mmmemo_keep(be_ctx *c, int pos, const mm_plan *m, int fresh);

/* The compile's memo of block tilings (mm_block's, by everything it
 * reads: key, n bytes, hashed h): 0 and *out the tiling found before, 1
 * key found to fit none (out untouched), -1 not known. */
int be_mmblock_find(be_ctx *c, const void *key, size_t n, uint64_t h, mm_tiling *out);
/* Remember tiling tl for key (NULL: none fits). */
void be_mmblock_keep(be_ctx *c, const void *key, size_t n, uint64_t h, const mm_tiling *tl);

/* A grid search's outcome (mm_plan_search): the grid, its estimate and
 * the grid memo's entries it priced (n of them: index into
 * mm_grid_memo.e, estimate, estimate with the waits). */
typedef struct {
    int64_t gm, gn, gk, gb;
    double best;
    int n;
    int32_t *at;
    double *e, *waited;
} mm_search_result;

/* The compile's memo of grid searches (by everything one reads: key, n
 * bytes, hashed h): the search found before, or NULL. */
const mm_search_result *be_mmsearch_find(be_ctx *c, const void *key, size_t n, uint64_t h);
/* Remember search r for key (its arrays copied). */
void be_mmsearch_keep(be_ctx *c, const void *key, size_t n, uint64_t h, const mm_search_result *r);

/* ---- The schemes over the ring (be_ring.c) ---- */

/* Tilings: B broadcast to every core (gm x 1r), a grid over the ring
 * (gm x gn r), and whichever of the two work w asks for. */
int mm_bc_tiling(const mm_plan *m, int64_t gm, mm_tiling *out);
/* (mm_rg_tiling is mm_rg_search's answer remembered for the compile, be_matmul.c) */
int mm_rg_tiling(const mm_plan *m, int64_t gm, int64_t gn, mm_tiling *out);
int mm_rg_search(const mm_plan *m, int64_t gm, int64_t gn, mm_tiling *out);
/* Can a grid over the ring of gn columns read A as kept tiles (mm_plan.atile)
 * in K chunks of KC rows: does every tile start on a chunk's first stick
 * group (KC 0: the least chunk a streamed tiling takes)? */
int mm_rg_tile_chunks(const mm_plan *m, int64_t gn, int64_t KC);
int mm_ring_tiling(const mm_plan *m, const be_work *w, mm_tiling *tl);
/* Emission: a core's B chunk of the broadcast and the freeing of its
 * slot; split-K's reduction of partial sums; a core's ring slots and
 * tokens; a core of the grid over the ring, whole. */
void bc_chunk(mm_core *mc, int64_t step, const be_view *bv, int64_t krow, int64_t kc, int64_t nbs,
              const int64_t *last);
void bc_release(mm_core *mc, int64_t step);
void mm_splitk_reduce(mm_core *mc);
void mm_core_ring(mm_core *mc);
int mm_rg_core(be_ctx *c, mm_plan *m, int core);
/* The grid over the ring's tiling, searched once for the plan (m->rg_tl;
 * its rc, 0 when one fits), and the cycles its last chunk's way down a
 * column and last epilogue take after its last DRAM load (c->drain). */
int mm_rg_plan_tiling(mm_plan *m);
double mm_rg_drain(const mm_plan *m, int64_t gm, const mm_tiling *tl);
/* Its setup alone on emitter e (be_matmul_need): -1 with an error. */
int mm_rg_need(be_ctx *c, mm_plan *m, int core, cc_emit *e);
/* Its first chunks of B loaded by kernel `from` (be_kind.prefetch,
 * prefetch_far) in the budget's cycles (a B held whole: in from's
 * estimate, when from leaves its loaders idle), recorded in *out: 1 when
 * B streams through slots, 0 when not, -1 with an error. */
int mm_rg_prefetch(be_ctx *c, mm_plan *m, int from, int64_t above, double budget, be_pre *out);

#endif
