/* backend.h: the graph compiler's back half, internal to the compiler.
 * It turns the front half's scheduled kernels (ir.h) into an isa_program
 * for one chip (docs/compiler.md, "Back half"):
 *
 *   layout   a device layout per buffer that goes through DRAM (backend.c)
 *   workdiv  each kernel's output split across the cores (backend.c)
 *   lxplan   the tensors kept in LX across kernels, where, and the ring
 *            exchanges between kernels on other cores (be_lxplan.c)
 *   codegen  per-core streams: be_matmul.c (MATMUL kernels and their
 *            epilogues; be_ring.c, be_mmblock.c), be_rows.c (POINTWISE
 *            and REDUCTION row kernels), a `fence` between kernels, a
 *            `bar` where a dependency crosses cores (be_bound.c), the
 *            tensor table
 *   reroll   each kernel's stream rolled into counted loops (be_reroll.c)
 *
 * Shared pieces: stick views (be_view.c: how an affine index walks a
 * buffer's device layout, turned into DMA descriptors), the SFP
 * expression evaluator (be_sfp.c: one instruction per IR expression node
 * over a tile in LX), errors and the report's notes (be_diag.c). */
#ifndef CC_BACKEND_H
#define CC_BACKEND_H

#include "codegen.h"
#include <stdarg.h>
#include "ir.h"

/* The device layout of a buffer that goes through DRAM. */
typedef struct {
    int dram;          /* 1: it has a tensor in the program */
    int stick_dim;     /* host dimension cut into sticks */
    int64_t groups;    /* sticks along stick_dim */
    int64_t rows;      /* product of the other dims */
    uint64_t off;      /* DRAM offset of the tensor */
    int want_dim;      /* layout: stick dim asked for by matmul B uses (-1 none, -2 conflict) */
    int f32;           /* fp32 values on the device (integer inputs: gather indices), else DL16 */
    int free_stick;    /* no kernel reads or writes it: its stick pads least (layout, free_sticks) */
} be_layout;

/* How a kernel's work is split across cores. */
typedef struct {
    int cores;         /* cores with work */
    int64_t gm, gn;    /* MATMUL: core grid over M (rows) and N (sticks) */
    int64_t gk;        /* MATMUL: K parts (split-K, partial sums reduced over the ring); 1 none */
    int64_t gb;        /* MATMUL: batch parts, each a gm x gn grid of its own cores over a contiguous range of
                          batch indices (so that a batched product of few rows keeps every core busy); 0, 1 none */
    int64_t rows, cols;/* row kernels: rows split across cores, columns per row */
    int64_t batches;   /* MATMUL: batch indices of the product (1: none) */
    double est_cycles; /* MATMUL: the cost model's estimate of the largest tile */
    double stage_scale;/* MATMUL: restickified operands' staged sticks over their estimate (0: 1) */
    int stage_whole;   /* MATMUL: restickified operands staged whole once per core (bit 0 A, bit 1 B) */
    int64_t mb, nbs, kc; /* MATMUL: a tiling forced by work_div (block rows, block sticks, K chunk; 0: the
                            cost model's) */
    int64_t chunk;     /* row kernels: rows per chunk forced by work_div (0: as many as fit) */
    int bcast;         /* MATMUL: gm x 1 with B broadcast over the ring (be_matmul.c) */
    int nokeep;        /* work_div "+nokeep": no tensor it reads or writes is kept in LX across kernels */
    int aligned_to;    /* row kernels, batched matmuls: its cores were set to those of the kernel at this position + 1, which
                          writes a tensor it reads, so that the tensor can stay in LX (0: not) */
    int ahead;         /* row kernels: its cores were set to those the kernel at this position + 1, its first reader,
                          takes on its own (be_rows_ahead; 0: not) */
    int base;          /* codegen puts its core l on the chip's core (base + l) mod cores (be_place.c; 0: l) */
    int bar_before;    /* a bar before it though no dependency crosses cores: the next kernel moves (be_place.c) */
} be_work;

/* A ring exchange (lxplan, be_lxplan.c): before the kernel at pos, which
 * reads a kept tensor aligned but split over another number of cores,
 * each core that holds rows of it sends every reader core its rows, into
 * this region (the reader's part: row i, stick group g at
 * lx + (g * rows_cap + i) * stick, on every reader core); the reader then
 * takes the tensor from there as from a kept one.  Estimates: the
 * exchange, and the DRAM round trip it replaces (cycles). */
typedef struct {
    int pos, cores;
    int64_t lx, rows_cap, bytes;
    double est, dram_est;
} be_xreg;

/* Operand chunks an earlier kernel loaded ahead for kernel pos into LX,
 * at the same offset on every core it uses (n 0: none). */
typedef struct {
    int pos;
    int64_t at, n;
} be_pre;

/* A tensor kept in LX across kernels (the lxplan pass, be_lxplan.c): from its producer's position to the last consumer that
 * reads it there.  Every core holds its own rows of it, the rows the
 * producer and those consumers give that core alike, at the same LX
 * offset: row i of the core's part, stick group g, at
 * lx + (g * rows_cap + i) * stick. */
typedef struct {
    int on;            /* kept in LX for positions from..to */
    int from, to;
    int64_t lx, rows_cap, bytes;
    int dram;          /* the producer also stores it to DRAM: a graph output, a reader that
                          cannot take it from LX, or a spill */
    int spilled;       /* evicted before its last reader (LX was needed): later readers reload
                          it from DRAM */
    int loaded;        /* an input no kernel writes: its first reader at `from` loads its rows from
                          DRAM as it always does and copies them into the region (be_res_fill) */
    int *uses;         /* the positions that read it aligned on the producer's cores, ascending:
                          these and the ring exchanges (x) read it from LX */
    int nuses;
    int cores;         /* the producer's cores */
    int grid;          /* kept as the tiles of a grid over the ring with this many columns (each core the
                          rows of its grid row x its column block, rows_cap rows per stick group from
                          the block's first), for later products on the same grid; 0: rows */
    be_xreg *x;        /* ring exchanges: readers split over other cores, ascending by position */
    int nx;
    int heads;         /* kept by stick group on its readers' cores, not by rows (`on` stays 0): its
                          producer (a grid over the ring, be_access.sends) sends every finished piece
                          of stick group g to core hcore[g] (one of cores 0 .. hcores - 1, all of them
                          the producer's), where the readers (be_access.groups, on positions from + 1
                          .. to) read it; group g's rows at lx + (hslot[g] * rows_cap + i) * stick,
                          and a marker stick last (be_heads_close) */
    int *hcore, *hslot;
    int hcores;
} be_res;

/* How a kernel touches a DRAM buffer: aligned when it walks the buffer
 * as its own rows x all columns, so that the same split of rows over the
 * same cores gives every core the same rows of it (be_rows_access). */
typedef struct {
    int buf;
    int write;
    int aligned;
    int may_align;     /* a read some split of the kernel would make aligned (set wherever aligned is):
                          which reads can be aligned does not hang on the split, so it is known before
                          the kernel is planned (workdiv's kernel ahead) */
    int grid;          /* a grid over the ring of this many columns walks it as its cores' tiles (the
                          rows of a grid row x a column block): another product on the same grid
                          finds each tile on the core that wrote it (0: no) */
    int keeps;         /* an aligned read whose kind can copy the rows it loads into a kept region
                          (be_res_fill): the first such reader of an input keeps it for later ones */
    int sends;         /* a write whose kind can send each finished piece of a stick group to any
                          core over the ring (be_res.heads) */
    int groups;        /* a read of whole stick groups by each core (be_kind.groups says which) */
} be_access;

typedef struct be_ctx {
    ir_prog *p;
    const chip_config *cfg;
    cc_target t;
    be_layout *lay;    /* per buffer */
    be_work *work;     /* per kernel position */
    int restick;       /* layout conflicts that would need a restickify */
    int own_bytes;     /* every tensor reserves only its own DRAM bytes (table_tensors) */
    be_res *res;       /* per buffer: kept in LX across kernels (all off with no_lx_plan) */
    int64_t *lx_floor; /* per kernel position: LX below the tensors kept there */
    int64_t *lx_need;  /* lxplan: per kernel position, its working LX (0: no kept tensor lives through it) */
    const struct lx_cand *hope; /* workdiv's second round, lxplan while it tiles the kernels: what could stay
                                   in LX (be_res_may_read, be_res_may_keep) */
    int htok;          /* the token a hand-off by stick group (be_res.heads) signals on its readers'
                          cores, which no kernel allocates (-1: none) */
    int *hbufs, nhbufs; /* the buffers handed off so, ascending: every DMA load asks (be_heads_load), and a
                           walk of every buffer's res was some 500 host instructions a load */
    int waits;         /* the estimates price the DRAM's waits (cc_dram_wait): only for the report (kernel_boundary) */
    isa_program *prog;
    cc_emit *em;       /* one emitter per core */
    int pos;           /* codegen: the kernel position being emitted */
    double drain;      /* codegen: the cycles kernel drain_pos, a streamed grid, runs after its last DRAM load */
    int drain_pos;     /* (-1: none yet) */
    be_pre pre;        /* codegen: loaded ahead by the kernel before pos (be_kind.prefetch) */
    be_pre far;        /* codegen: loaded ahead by an earlier kernel, past the one before (be_kind.prefetch_far) */
    char *err;
    size_t errlen;
    int *fail_kernel;  /* where be_error records the kernel it names (NULL: p->fail_kernel; a codegen
                          worker's view: its own, be_par_cores) */
    struct cg_walk *cgw; /* codegen: the walk of its kernels' code (backend.c), NULL outside codegen */
    struct be_reroll *rr; /* the reroll pass's figures (be_reroll.c), after it ran */
    struct be_spancache *spans; /* staged loads' row spans, walked once for the compile (be_rows.c) */
    struct be_mmmemo *mmmemo; /* workdiv: the matmul plans made, by what they read (be_mmmemo.c) */
    struct be_rowsacc *racc;  /* be_rows_access's answers per kernel position (be_rows.c) */
    struct be_rstmemo *rst;   /* codegen: the restickify gathers' instructions (be_restick.c) */
    struct be_tmemo *tmemo;   /* the largest memo a tile gave back, for the next tile's (be_sfp.c) */
    int64_t **wspan;          /* per kernel position and operand (2 pos + w): a product's spans of an operand
                                 staged whole (be_matmul.c, mm_whole_spans), made once */
    struct mm_plan **mmshape; /* per kernel position: a product's plan as its structure makes it (be_matmul.c,
                                 mm_structure), made once */
} be_ctx;

/* ---- A kernel's cores on two host threads (backend.c, be_par.c) ---- */

/* fn(c, arg, core) for cores 0 .. n-1, each core's code as the serial
 * loop makes it, and the first error by core order: core 0 here, then,
 * when what it emitted says the rest are worth it (cc_compile_opts.par_min)
 * and codegen may use a worker, the rest half here and half on the worker
 * (each thread its side's cores in order, then what is left of the
 * other's), else all here.  The worker gets a view
 * of c (its own error buffer, be_error record and restickify memo) and
 * its own copy of arg (size bytes, copied as they are; view points the
 * copy at the view); their halves' DRAM accesses, figures, rolled code's
 * records are joined in core order (docs/compiler.md, "Two threads").
 * Whatever fn's cores share must be made before: they only read it. */
typedef int (*be_core_fn)(be_ctx *c, void *arg, int core);
/* side(arg, core): 1 for a core the worker takes first (NULL: the last
 * n / 2): cores alike in their code on one side, as far as balance
 * allows, so that each thread's reroll templates fit more of them. */
int be_par_cores(be_ctx *c, int n, be_core_fn fn, void *arg, size_t size, void (*view)(be_ctx *c, void *arg),
                 int (*side)(const void *arg, int core));
/* The threads codegen uses (cc_compile_opts.threads, else
 * SPYRE_THREADS): 1 or 2, or 0 when neither says (the host has two
 * processors or more): two while one is free (be_cpu_free). */
int be_threads(const ir_prog *p);
/* Whether a host processor is free now for a second thread: fewer tasks
 * runnable than processors (1 when the host does not say). */
int be_cpu_free(void);
/* The worker: one job at a time, run while the caller does its own
 * share; NULL when no thread can be had. */
typedef struct be_worker be_worker;
be_worker *be_worker_start(void);
void be_worker_run(be_worker *w, void (*fn)(void *), void *arg);
void be_worker_wait(be_worker *w);
void be_worker_stop(be_worker *w);

/* ---- State updates (be_update.c) ---- */

/* Is buffer b the positions of a state update (fp32 on the device, as a
 * gather's row numbers: dma.scatter reads them)? */
int be_update_index(const ir_prog *p, int b);
/* The layout pass's part: each updated state sticked off its update's dim. */
void be_update_layouts(ir_prog *p, be_ctx *c);
/* The codegen pass's part, after the last kernel: a bar, then one
 * dma.scatter per update (its positions and rows loaded into LX first). */
int be_update_emit(be_ctx *c);

/* ---- Stick views (be_view.c) ---- */

/* A buffer's device layout walked by an affine index: the stick holding
 * the element at row coordinates c_v (v over the index's variables other
 * than the lane variable) and group g is at
 *   base + be_view_group(v, g) + sum_v rs[v] * c_v * stick
 * (be_view_group: g * gstride, or for a wrapped view, see be_view_wrap,
 * group (gph + g) % gper of period (gph + g) / gper) and, for a view
 * without a lane variable, the element is at lane `lane`. */
typedef struct {
    int64_t base;      /* DRAM byte offset */
    int64_t gstride;   /* bytes between groups */
    int64_t rs[IR_MAX_VARS]; /* row strides in sticks */
    int lane;
    int64_t groups;    /* groups the buffer has from base on */
    int64_t rows_left; /* sticks of a group from base to the group's end: a load past them reads
                          another tensor (a where-guarded cat reads past its operand), so it is cut */
    int64_t gper;      /* wrapped: groups per period (the stick dimension's groups); 0 not wrapped */
    int64_t gph;       /* wrapped: base's group within its period */
    int64_t pstride;   /* wrapped: bytes between periods */
} be_view;

/* A row space: variables (outermost first) and extents; rows are
 * numbered row-major over them. */
typedef struct {
    int nv;
    int var[IR_MAX_VARS];
    int64_t ext[IR_MAX_VARS];
} be_rowspace;

/* Loop level (count n, stride s) added outside the k levels cn, cs
 * merged so far (innermost first); returns how many there are now: a
 * level of one step adds none, one whose stride is the whole of the
 * level inside it joins that level. */
static inline int be_level_join(int k, int64_t *cn, int64_t *cs, int64_t n, int64_t s)
{
    if (n == 1)
        return k;
    if (k && s == cn[k - 1] * cs[k - 1]) {
        cn[k - 1] *= n;
        return k;
    }
    cn[k] = n;
    cs[k] = s;
    return k + 1;
}

/* val (the row space's variables at a row below the last) moved to the
 * next row, the last variable fastest, without division; returns how far
 * index idx moves with them (it is affine in val). */
static inline int64_t be_row_next(const be_rowspace *rs, int64_t *val, const ir_index *idx)
{
    int64_t moved = 0;
    for (int v = rs->nv - 1; v >= 0; v--) {
        const int var = rs->var[v];
        const int64_t coef = idx->coef[var], was = val[var];
        if (was + 1 < rs->ext[v]) {
            val[var] = was + 1;
            return moved + coef;
        }
        val[var] = 0;
        moved -= coef * was;
    }
    return moved;
}

/* Error naming the kernel: "kernel K: message"; returns -1. */
int be_error(be_ctx *c, const ir_kernel *K, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The view of buffer `buf` through idx (over nvars variables) with lane
 * variable lane_var (-1: none; then the element's lane is reported).
 * With ext (each variable's extent; NULL: not known) a loop that steps
 * whole stick groups is a row stride of that many groups' rows, if the
 * whole walk stays inside the buffer (the heads of attention's output
 * stored into [t, h*d]).
 * -1 with the reason in why when the layout cannot be walked so. */
int be_view_of(const be_ctx *c, int buf, const ir_index *idx, int nvars, int lane_var, const int64_t *ext,
               be_view *v, char *why, size_t whylen);

/* Make v, be_view_of's view of idx with a lane variable, a wrapped view:
 * for a lane walk that runs past the end of the stick dimension
 * (be_lane_fits fails) into the next index of the dimension before it: the attention output [t, h, d] sticked on d read
 * as [t, h*d].  Each period of the walk is then the stick dimension's
 * groups at gstride, and the next period starts that dimension's row
 * stride further on.  -1 (v unchanged) when the walk cannot wrap so: the
 * stick dimension is the first, is not whole sticks, or the values are
 * fp32.  A wrapped view reads no rows past its buffer (rows_left unused):
 * only matmul operands, whose every element is in their buffer, wrap. */
int be_view_wrap(const be_ctx *c, int buf, const ir_index *idx, be_view *v);
/* Byte offset of v's group g from v's base. */
int64_t be_view_group(const be_view *v, int64_t g);

/* DMA between LX and the view: rows [r0, r0 + n) of the row space, groups
 * [0, ng) of the view; LX holds row i of group g at lx + i*stick + g*lx_gs.
 * op is ISA_OP_DMA_LD or ISA_OP_DMA_ST.  Returns the instructions it takes
 * (one per run of rows contiguous in DRAM and piece of a wrapped view);
 * with e NULL it emits nothing, for the cost models to count them. */
int64_t be_dma_rows(const be_ctx *c, cc_emit *e, int op, int64_t lx, int64_t lx_gs, const be_view *v, const be_rowspace *rsp,
                    int64_t r0, int64_t n, int64_t ng);
/* Row-major coordinates of a flat offset (or of a coefficient: the
 * coordinates one step of the variable moves). */
void be_coords_of(const gr_ttype *t, int64_t flat, int64_t *co);
/* Byte offset, inside buffer buf's device layout (from its tensor's
 * start), of the element at flat row-major index `flat`. */
int64_t be_elem_off(const be_ctx *c, int buf, int64_t flat);
/* Element offsets along an arithmetic walk of a buffer's flat index
 * (flat, flat + step, ...), each as be_elem_off gives it, without its
 * divisions per element: the walk keeps the element's coordinates and
 * carries between them.  Restickify and its spans visit every element of
 * a block this way. */
typedef struct {
    const be_ctx *c;
    int buf, rank, sd;
    int64_t lanes, esz, lrows, stick;
    int64_t shape[GR_MAX_RANK], rs[GR_MAX_RANK]; /* rs: layout row stride per dim (0: the stick dim) */
    int lshift;                                /* log2(lanes), or -1 */
    int64_t flat, step;
    int stepped;                               /* st, d1 and drow are step's (be_walk_at) */
    int64_t co[GR_MAX_RANK], st[GR_MAX_RANK]; /* coordinates of flat (floor) and of step */
    int64_t row;                               /* the layout row of co: sum of co[d] * rs[d] */
    int d1;                                    /* the one coordinate step moves (-1 none, -2 several) */
    int64_t drow;                              /* the row's step when d1 moves without a carry */
    int64_t gmin, gmax;                        /* the stick groups the last be_walk_run touched */
    int moved;                                 /* dflat, dco: the last be_walk_at's move from where the walk was */
    int64_t dflat, dco[GR_MAX_RANK];
} be_walk;
void be_walk_init(be_walk *w, const be_ctx *c, int buf);
/* Start at flat, stepping by step. */
void be_walk_at(be_walk *w, int64_t flat, int64_t step);
/* be_elem_off of the current element. */
int64_t be_walk_off(const be_walk *w);
/* be_walk_next's carry between coordinates (be_view.c). */
void be_walk_carry(be_walk *w);
/* The next element (inline: restickify takes every element this way). */
static inline void be_walk_next(be_walk *w)
{
    w->flat += w->step;
    if (w->d1 >= 0) { /* one coordinate moves: unless it carries, the row moves by drow */
        const int64_t v = w->co[w->d1] + w->st[w->d1];
        if (w->d1 == 0 || (v >= 0 && v < w->shape[w->d1])) {
            w->co[w->d1] = v;
            w->row += w->drow;
            return;
        }
    }
    be_walk_carry(w);
}
/* be_span_add the sticks of n elements from flat on by step, the ones
 * inside [0, nel) only unless nel < 0 (nel: the buffer's elements): in
 * closed form over each run of elements inside the buffer where the walk
 * moves one coordinate without carrying, else element by element.  1 when
 * the n elements were one such run (the walk then stays at flat). */
int be_walk_run(be_walk *w, const be_layout *L, int64_t flat, int64_t step, int64_t n, int64_t nel, int64_t *lo,
                int64_t *hi);
/* The current element's stick group g, layout row r and byte in its
 * stick (its be_elem_off is ((g * rows + r) * stick + byte)): 1, or 0 when
 * it lies outside the buffer (be_walk_off still gives its offset). */
static inline int be_walk_stick(const be_walk *w, int64_t *g, int64_t *r, int64_t *byte)
{
    if (w->flat < 0 || !w->rank || w->co[0] >= w->shape[0])
        return 0;
    const int64_t sc = w->co[w->sd]; /* >= 0 here */
    *g = w->lshift >= 0 ? sc >> w->lshift : sc / w->lanes;
    *r = w->row;
    *byte = (w->lshift >= 0 ? sc & (w->lanes - 1) : sc % w->lanes) * w->esz;
    return 1;
}
/* be_walk_stick of n elements from the current one on, the walk moved
 * past them, as segments (at most n): each n elements from group g, layout
 * row r and byte `byte`, the next one dr rows and db bytes on, in one
 * group (g -1: one element outside the buffer).  Arithmetic per segment
 * between carries. */
typedef struct {
    int64_t g, r, byte, n, dr, db;
} be_wseg;
/* Room for one stick's lanes (a gather's run, be_walk_segs' segments):
 * stick_bytes is fixed at 128 (chip.h), so far more than any lane count. */
#define BE_LANES_MAX 2048
int be_walk_segs(be_walk *w, int64_t n, be_wseg *s);
/* The one coordinate a move of `move` elements changes (by *by), -1
 * when it changes none, -2 several (be_wseg_move). */
int be_walk_axis(const be_walk *w, int64_t move, int64_t *by);
/* Rows since the one walked last, each a move along coordinate ax (-1:
 * none yet, -2: not one coordinate) by `by` in all; the last move between
 * rows, its coordinate and amount (be_walk_axis), kept since rows mostly
 * move alike. */
typedef struct {
    int64_t by, move, mby;
    int ax, move_ax;
} be_rowmove;
/* m after a row walked (its moves start afresh). */
static inline void be_rowmove_walked(be_rowmove *m)
{
    m->ax = -1;
    m->by = 0;
}
/* A move of `move` elements to the next row added to m (the moves along
 * one coordinate add up). */
static inline void be_rowmove_add(be_rowmove *m, const be_walk *w, int64_t move)
{
    if (move != m->move) { /* (rows move alike but where a row variable carries) */
        m->move = move;
        m->move_ax = be_walk_axis(w, move, &m->mby);
    }
    m->ax = m->ax == -1 || m->ax == m->move_ax ? m->move_ax : -2;
    m->by += m->mby;
}
/* Elements from the current one on (at most n) before the walk's one
 * moving coordinate carries: n elements are one run when it is n (0
 * outside the buffer or with several coordinates moving). */
int64_t be_walk_free(const be_walk *w, int64_t n);
/* The walk's elements from flat + `move` on as segments, from the ns
 * segments u be_walk_segs made of those from flat on when they were one
 * run (be_walk_free) inside the buffer, with the walk's step as then, and
 * move changing coordinate d alone (be_walk_axis; -1: none) by `by`:
 * when be_wseg_movable(w, u, ns, d) and the coordinate stays in its range
 * (co: the coordinates of flat, the walk's then), each element is its own
 * moved so and the runs are the same (be_wseg_move; 0: walk them).  The
 * walk's own coordinate is another (the run, carrying nowhere, leaves it
 * as it is), and a run along another coordinate than the stick dim is
 * one segment. */
static inline int be_wseg_movable(const be_walk *w, const be_wseg *u, int ns, int d)
{
    int in = 1;
    for (int q = 0; q < ns; q++)
        in &= u[q].g >= 0;
    return in && (d == -1 || (d >= 0 && d != w->d1 && (d != w->sd || ns == 1)));
}
static inline int be_wseg_move(const be_walk *w, const be_wseg *u, int ns, const int64_t *co, int d, int64_t by,
                               be_wseg *out)
{
    const int64_t v = d >= 0 ? co[d] + by : 0;
    if (v < 0 || (d >= 0 && v >= w->shape[d]))
        return 0;
    for (int q = 0; q < ns; q++) {
        out[q] = u[q];
        if (d == w->sd) {
            out[q].g = v / w->lanes;
            out[q].byte = v % w->lanes * w->esz;
        } else if (d >= 0) {
            out[q].r += by * w->rs[d];
        }
    }
    return 1;
}
/* be_span_add of the current element's stick (L: the buffer's layout). */
void be_walk_span(be_walk *w, const be_layout *L, int64_t *lo, int64_t *hi);
/* Does the lane variable, walking `extent` elements from idx's offset,
 * stay inside buf's stick dimension (a view from be_view_of is only
 * valid then)? */
int be_lane_fits(const be_ctx *c, int buf, const ir_index *idx, int64_t extent);
/* Flat index of idx at the variable values val[0..nvars). */
int64_t be_index_at(const ir_index *idx, int nvars, const int64_t *val);
/* The sticks of a buffer's device layout L that a staged restickify
 * reads, as a span per stick group g: layout rows lo[g]..hi[g] (lo > hi:
 * none).  Start empty, add each stick read (its stick number in the
 * layout), then count them: the total, and an empty span becomes the first
 * stick so that every chunk stages something. */
void be_span_init(const be_layout *L, int64_t *lo, int64_t *hi);
void be_span_add(const be_layout *L, int64_t stick, int64_t *lo, int64_t *hi);
int64_t be_span_total(const be_layout *L, int64_t *lo, int64_t *hi);
/* The sticks the spans hold so far (none: 0; the spans as they are). */
int64_t be_span_count(const be_layout *L, const int64_t *lo, const int64_t *hi);
/* Load a buffer's whole device layout from DRAM into LX at lx (dmai). */
void be_stage_load(be_ctx *c, cc_emit *e, int buf, int64_t lx);
/* Load the span of each stick group g of buf's layout, rows lo[g]..hi[g]
 * (lo > hi: none), one after another at lx (dmai); go[g] gets the
 * group's offset from lx.  Returns the bytes loaded. */
int64_t be_stage_spans(be_ctx *c, cc_emit *e, int buf, const int64_t *lo, const int64_t *hi, int64_t lx, int64_t *go);
/* Store the sticks of buf's staged copy in LX (at stage) this core wrote,
 * count[s] elements of stick s, with dmao; -1 with an error naming the
 * kernel when a stick is not whole (another core holds the rest). */
int be_store_staged(be_ctx *c, const ir_kernel *K, cc_emit *e, int buf, int64_t stage, const int64_t *count);
/* Device bytes of a buffer that goes through DRAM. */
int64_t be_buf_bytes(const be_ctx *c, int buf);

/* ---- Restickify in LX (be_restick.c) ---- */

/* sfp.rst emission: element copies given as pairs of LX byte addresses,
 * one destination stick's worth (a "row") at a time; runs of constant
 * strides become one instruction, rows of the same shape merge into its
 * i0 loop, and equal blocks of i0 rows into its i1 loop where that makes
 * fewer instructions (be_restick.c).  The copies of one gather or scatter
 * are independent (no run reads what another writes), so their order does
 * not matter.  The runs are kept until be_rst_flush emits them. */
typedef struct {
    int64_t dst, src, vl, sd, ss; /* vl elements from src (stride ss) to dst (stride sd) */
    int64_t rep, dstep, sstep;    /* the run rep times, dst and src moved by dstep, sstep each time */
} be_rst_run;
typedef struct {
    cc_emit *e;
    int corelet;
    be_rst_run *run; /* the runs since be_rst_begin, repeats counted in (be_rst_again) */
    int64_t nrun, cap;
    struct be_rstmemo **memo; /* be_rst_flush's answers of the gathers before, or NULL */
} be_rst;
/* memo: where be_rst_flush keeps its answers for the gathers after (the
 * compile's, be_ctx.rst), or NULL. */
void be_rst_begin(be_rst *r, cc_emit *e, int corelet, struct be_rstmemo **memo);
void be_rst_memo_free(struct be_rstmemo **memo);
void be_rst_row(be_rst *r, const int64_t *dst, const int64_t *src, int64_t n);
/* n elements from src, each d bytes on from the one before. */
typedef struct {
    int64_t src, d, n;
} be_rst_seg;
/* be_rst_row of the elements of segments s[0..ns) in turn, to dst, dst +
 * 2, ...: the same runs, found segment by segment, not element by element.
 * One segment with room for its run is that run, kept here, inline: the
 * call was a third of the Llama-8B decode step's 25,900 (its gathers'
 * rows are one segment each). */
void be_rst_segs_call(be_rst *r, int64_t dst, const be_rst_seg *s, int ns);
/* Does run p, repeated, take the run (dst, src, vl, sd, ss) as its next
 * time?  Counts it in if so.  The runs are kept so, greedily: a gather's
 * rows mostly repeat the row before moved (the Llama-8B decode step's KV
 * cache appends: 228 rows a gather, a few repeated runs), and
 * be_rst_flush's memo compares the repeated runs, not every row's. */
static inline int be_rst_again(be_rst_run *p, int64_t dst, int64_t src, int64_t vl, int64_t sd, int64_t ss)
{
    if (p->vl != vl || p->sd != sd || p->ss != ss)
        return 0;
    if (p->rep == 1) {
        p->dstep = dst - p->dst;
        p->sstep = src - p->src;
    } else if (dst != p->dst + p->rep * p->dstep || src != p->src + p->rep * p->sstep) {
        return 0;
    }
    p->rep++;
    return 1;
}
static inline void be_rst_segs(be_rst *r, int64_t dst, const be_rst_seg *s, int ns)
{
    if (ns == 1 && s[0].n >= 1 && r->nrun < r->cap) {
        const int64_t sd = s[0].n > 1 ? 2 : 0, ss = s[0].n > 1 ? s[0].d : 0;
        if (!r->nrun || !be_rst_again(&r->run[r->nrun - 1], dst, s[0].src, s[0].n, sd, ss))
            r->run[r->nrun++] = (be_rst_run){dst, s[0].src, s[0].n, sd, ss, 1, 0, 0};
        return;
    }
    be_rst_segs_call(r, dst, s, ns);
}
/* be_rst_segs of the segment the last be_rst_segs took alone (one
 * segment of at least one element), again `times` times, each to the dst
 * and src before moved by dmove and smove: be_rst_again's answers known
 * without comparing (the row before's sticks again, most rows of the KV
 * cache appends' gathers; a row moved by whole rows, mm_gather's). */
static inline void be_rst_segs_moved(be_rst *r, int64_t dmove, int64_t smove, int64_t times)
{
    if (times < 1)
        return;
    be_rst_run *p = &r->run[r->nrun - 1];
    if (p->rep > 1 && (p->dstep != dmove || p->sstep != smove)) { /* a new run, from the last one's last time */
        const be_rst_seg s = {p->src + (p->rep - 1) * p->sstep + smove, p->ss, p->vl};
        be_rst_segs(r, p->dst + (p->rep - 1) * p->dstep + dmove, &s, 1);
        p = &r->run[r->nrun - 1];
        times--;
    }
    if (p->rep == 1 && times) {
        p->dstep = dmove;
        p->sstep = smove;
    }
    p->rep += times;
}
void be_rst_flush(be_rst *r);

/* ---- SFP expression evaluation over a tile (be_sfp.c) ---- */

typedef enum { BE_V_NONE, BE_V_CONST, BE_V_ROW, BE_V_COL, BE_V_TILE } be_vclass;

/* A value in LX: CONST an immediate; ROW one stick per row (the value at
 * lane `lane`); COL `G` sticks shared by every row (stride 0 over rows);
 * TILE G groups of `R` row sticks (group stride gs). */
typedef struct {
    be_vclass cls;
    double imm;
    int64_t lx;
    int lane;
} be_val;

/* The tile being computed: rows R (this chunk's), groups G, group stride
 * gs (bytes), valid columns (for reductions), the SFP corelet, and an
 * allocator over this slot's scratch [top, end).
 *
 * Matmul epilogues (reads NULL) bump-allocate: every temp keeps its LX.
 * Row kernels reuse it: temps take tile-sized cells from top on, the
 * lowest free one first, and a cell is given back after the last read of
 * the values it holds.  reads[e] is how often a chunk's evaluation reads
 * expression e's value (counted by a dry run of the same evaluation,
 * be_rows.c); refs[i] is the reads still to come of cell i's values (-1:
 * free; a stored node value holds one more until the chunk's end). */
typedef struct {
    be_ctx *c;
    cc_emit *e;
    const ir_kernel *K;
    int corelet;
    int64_t R, G, gs, cols;
    int64_t rows_cap;     /* rows the slot is sized for */
    int64_t top, end;     /* scratch allocator */
    int carea;            /* per-column temps from their own area [ctop, cend), not with the
                             others: the parts of a matmul epilogue share tiles row-wise, not columns */
    int64_t ctop, cend;
    const be_rowspace *rsp; /* row kernels: the row space (NULL in matmul epilogues) */
    int colvar;           /* row kernels: the column variable */
    int64_t r0;           /* row kernels: this chunk's first row */
    int acc_expr;         /* matmul: the acc expression id, or -1 */
    be_val acc;           /* its value */
    /* resolved loads: expression id -> value (filled by the caller; a
     * sparse set, be_sfp.c: ids below capmemo, then their index) */
    int *memo_id;
    be_val *memo;
    int nmemo, capmemo;
    /* row kernels: temps reuse LX (above) */
    int *reads;           /* per arena expression; NULL: bump allocation */
    int counting;         /* the dry run that counts reads[] (nothing is given back) */
    int late_cond;        /* a where's operands before its condition: one cell live down a cat's chain
                             of wheres, not a condition per level (a narrow row kernel, be_rows.c) */
    int *refs;            /* per cell */
    int ncells, capcells; /* cells opened in this chunk, and room for them */
} be_tile;

/* T's memo given back (every owner of a tile ends it so): T->c keeps the
 * largest for the next tile, which then neither allocates nor clears one
 * (a sparse set needs neither); be_tmemo_free frees the kept one. */
void be_tile_memo_end(be_tile *T);
void be_tmemo_free(struct be_tmemo **m);

/* The value of expression e (loads must have been bound with be_bind);
 * emits SFP instructions.  -1 on an unsupported expression (error set). */
int be_eval(be_tile *T, int e, be_val *out);
void be_bind(be_tile *T, int e, const be_val *v);
/* Classify expression e over the kernel's row/column variables: the
 * class its value will have (loads only; see be_rows.c). */

/* be_dl16_imm(v) is v as an SFP immediate, by isa_dl16_standin: +-inf
 * replaced by the finite stand-in +-ISA_DL16_INF, a finite one DL16 cannot hold by
 * +-ISA_DL16_BIG. */
float be_dl16_imm(double v);

/* SFP helpers: a temp of class cls in the tile's scratch; one SFP
 * instruction writing class cls (a_col: a is a COL value broadcast over
 * rows); v widened to class cls (COL -> TILE). */
int be_temp(be_tile *T, be_vclass cls, be_val *v);
void be_sfp(be_tile *T, int op, be_vclass cls, int64_t d, int64_t a, int64_t a_col, const be_val *b);
int be_widen(be_tile *T, const be_val *v, be_vclass cls, be_val *out);

/* ---- Row structure shared by row kernels and matmul epilogues ---- */

/* A staged load's sticks per row of its kernel's row space, each row
 * walked once for the compile when first asked for (be_rows.c: the
 * chunk-size search asks for the same rows in many chunkings, and each
 * pass plans the kernel again): row r's spans are e[at[r]] ..
 * e[at[r] + len[r]), at[r] -1 until walked. */
typedef struct {
    int32_t g, lo, hi; /* stick group g, layout rows lo..hi (a layout's groups and rows fit: DRAM holds it) */
} be_gspan;
typedef struct {
    int64_t *at;
    int32_t *len;
    be_gspan *e;
    int64_t n, cap;
    int64_t *lo, *hi; /* a row's walk, per group, empty between rows */
    int64_t *bat;     /* per block of rows (be_rows.c's RK_SPAN_BLOCK), its rows' spans merged: where in be (-1: not yet) */
    int32_t *blen;
    int32_t *bend;    /* per block, where the run of rows taking its first row's spans ends, as far as looked (0: not looked) */
    be_gspan *be;
    int64_t bn, bcap;
    int64_t last, flat; /* the row walked last (-1: none) and its first element's flat index */
    int64_t walked;     /* rows walked so far */
    /* the row walked last when one run inside the buffer (be_walk_run; base
     * -1: none): its first element's flat index and coordinates, the walk's
     * moving coordinate; the moves since */
    int64_t base, bflat, bco[GR_MAX_RANK];
    int bd1;
    be_rowmove mv;
    isa_buf rows, eb, beb; /* the memory of at, len, lo, bat, blen and bend; of e; of be */
} be_rowspans;

/* A load the kernel reads from DRAM. */
typedef struct {
    int e;            /* the load expression */
    be_vclass cls;
    be_view v;
    int64_t lx;       /* COL: fixed; TILE / ROW: offset inside a slot */
    int staged;       /* TILE restickified by sfp.rst from a staged copy of its buffer (v unused) */
    int64_t stage;    /* LX of that copy (per core) */
    int gather;       /* TILE of weight rows picked by dma.gather (an ILOAD; v unused) */
    int scalar;       /* one element for every row and column: a COL value made once per core from the
                         element's stick (staged at stage) */
    int ids;          /* gather: the load expression of its row numbers (an fp32 input) */
    int res;          /* TILE read from its buffer's LX region (kept there by an earlier kernel) */
    int row_tile;     /* a per-row operand staged as a tile: right in nodes evaluated over rows and
                         lanes only, not in a reduction's per-row ops */
    int shared;       /* TILE whose sticks are the same on every core (a mask or table broadcast over
                         the rows the cores split): held whole in LX at lx, each core loading a share
                         of it and sending that to the others over the ring (be_rows.c) */
    be_rowspans *spans; /* staged: the sticks each row reads, as walked so far (NULL: none yet; the
                           compile's cache, be_ctx.spans, owns them) */
} rk_load;

typedef struct {
    int node;
    int expr;         /* value, in the kernel's positions */
    ir_index store;
    be_vclass cls;
    int dram;         /* stored */
    int staged;       /* stored through a staged copy in LX (sfp.rst), not a view */
    int res;          /* also copied to its buffer's LX region, kept there for later kernels */
    int heads;        /* sent by stick group to its readers' cores (be_res.heads) */
    int lxonly;       /* matmuls: kept in LX and not written to DRAM, as the plan has it or could have it
                         (be_res_may_keep): the estimates leave out its DRAM write */
    be_view sv;
    int ol0, nol;     /* its output's loads: rk_plan.outloads[ol0, ol0 + nol) */
} rk_node;

typedef struct {
    be_ctx *c;
    const ir_kernel *K;
    int pos;          /* the kernel's position */
    int nvars, colvar;
    int64_t cols, G, rows;
    be_rowspace rsp;
    rk_node *nodes;
    int nn;
    rk_load *loads;
    int nl;
    int64_t nexpr;    /* upper bound of SFP temps per chunk, none reused */
    cc_sfp_tally sfp; /* row kernels: the SFP instructions one row's evaluation emits (rk_measure; insns 0: not known) */
    int64_t ntemps;   /* row kernels: the temp cells a chunk uses (the most live at once) */
    int *reads;       /* row kernels: be_tile.reads for the kernel's evaluation (NULL: none reused) */
    int *outloads;    /* the loads of the nodes' outputs in the arena's first outloads_upto expressions, by
                         node (rk_node.ol0, nol), each node's in arena order (rk_eval_nodes binds them;
                         the arena only grows) */
    int noutloads, outloads_cap, outloads_upto;
    int scalars;      /* row kernels: a load of one element for every row becomes a COL value */
    double prev_est;  /* row kernels: the kernel before's estimate (0: not asked yet; rk_can_share) */
    int col_tree;     /* row kernels: the per-column values loaded by core 0 alone and passed down a binary
                         tree of cores over the ring (be_rows.c, rk_col_tree) */
    int narrow;       /* row kernels: each slot tile holds only the column groups its load supplies
                         (be_rows.c, rk_slot_place), taken when full-width tiles leave no row room */
} rk_plan;

typedef struct {
    rk_plan *k;
    char *produced;   /* per buffer: written by a node of this kernel */
    int failed;
} rk_walk;

/* ir_expr_walk callback (ctx an rk_walk): record the DRAM loads of k's
 * expressions, classified against k->colvar and k->rsp. */
void be_collect_load(void *ctx, const ir_expr *x);
void rk_free(rk_plan *k);
/* Evaluate row kernel k's nodes over the tile T (its loads bound), each
 * node's value into nv (be_sfp.c); -1 with an error. */
int rk_eval_nodes(rk_plan *k, be_tile *T, be_val *nv);
/* Does view v walk buffer buf as k's rows x all its columns: row r of
 * the row space at layout row r, every stick group, the lane variable
 * along the sticks?  Then kernels that split rows alike over the same
 * cores give each core the same rows of buf. */
int be_rows_aligned(const rk_plan *k, int buf, const be_view *v);
/* Temps expression e adds to those already counted in seen (per arena id). */
int64_t be_count_temps(ir_prog *p, int e, char *seen);


/* The share of LX a kernel is asked to tile into when tensors kept
 * across kernels need the rest: half, an even trade between a kernel's
 * double buffers and what stays on chip (docs/compiler.md). */
#define LX_KERNEL_SHARE 0.5

/* ---- The LX plan's decisions, as codegen reads them (be_lxres.c) ---- */

/* The LX kernel pos may allocate: all the compiler may plan, less the
 * tensors kept in LX across it (lxplan). */
int64_t be_lx_budget(const be_ctx *c, int pos);
/* Does kernel pos read buffer buf from its LX region (kept there, and
 * read aligned by this kernel)?  Does it store it there? */
int be_res_reads(const be_ctx *c, int buf, int pos);
int be_res_writes(const be_ctx *c, int buf, int pos);
/* ... as be_res_reads once the plan is made; while the plan tiles the
 * kernels (before it knows what stays), whether an earlier kernel could
 * keep buf in LX for kernel pos, so a cost model can price it as read
 * from there. */
int be_res_may_read(const be_ctx *c, int buf, int pos);
/* ... and kept as the tiles of a grid over the ring (be_res.grid) */
int be_res_may_tile(const be_ctx *c, int buf, int pos);
/* Does kernel pos's result buf stay in LX only, not also go to DRAM: as
 * the plan has it, or (while the work is divided again or the plan tiles
 * the kernels) as it could, every reader taking it from LX?  A cost model
 * then leaves out its DRAM write. */
int be_res_may_keep(const be_ctx *c, int buf, int pos);
/* The candidates to stay in LX under the work division made so far, as
 * c->hope (be_res_may_read, be_res_may_keep see them), and their end.
 * 1, or 0 when none could stay (every be_res_may_ says no, as it did
 * before), -1 with the error of a kernel whose access failed. */
int be_lx_hope_begin(be_ctx *c);
/* The candidates again under the second round's division, less the
 * readers by ring exchange whose exchange, the bar after them priced, no
 * longer pays (their positions marked in gone_at, p->norder long): 1 and
 * c->hope replaced when some went, else 0 (c->hope kept), -1 as
 * be_lx_hope_begin. */
int be_lx_hope_again(be_ctx *c, char *gone_at);
void be_lx_hope_end(be_ctx *c);
/* workdiv's memo of matmul plans (be_mmmemo.c; recall and keep in
 * be_matmul.h): made empty, and freed. */
void be_mmmemo_begin(be_ctx *c);
void be_mmmemo_end(be_ctx *c);
/* Where kernel pos, which reads buf from LX, finds a core's rows of it:
 * the region's LX offset and rows per core (a ring exchange's region
 * when pos splits it over other cores than its producer). */
void be_res_at(const be_ctx *c, int buf, int pos, int64_t *lx, int64_t *rows_cap);
/* The rows of a tensor of `rows` rows that core p holds under a split
 * over pc cores and core k reads under a split over qc cores: [*lo, *hi)
 * (empty when *lo >= *hi), and the first rows of the two parts, *p0 and
 * *q0. */
void be_xchg_share(int64_t rows, int64_t pc, int64_t p, int64_t qc, int64_t k, int64_t *p0, int64_t *q0, int64_t *lo,
                   int64_t *hi);
/* An emitter with no stream for core `core` of kernel pos: its LX
 * allocations and tokens count against the kernel's budget, so a
 * kernel's setup on it gives the LX it works in (be_kind.need). */
void be_lx_probe(const be_ctx *c, int pos, int core, cc_emit *e);
/* The ring exchange of kept tensor buf before the kernel at pos (NULL: none). */
const be_xreg *be_res_xreg(const be_ctx *c, int buf, int pos);
/* The ring exchanges before the kernel at pos (be_xreg), as a kernel of
 * their own, "NAME.xchg": every core holding rows of such a tensor sends
 * each reader core its share (a dma.lx to itself); a bar then orders
 * them before the kernel, which reads the region with no tokens. */
void be_xchg_emit(be_ctx *c, int pos);

/* be_place.c: each kernel's be_work.base, before codegen; and the
 * emitters turned to a kernel's cores while its code is emitted (in: 1)
 * and back (in: 0). */
void be_place(be_ctx *c);
void be_em_place(be_ctx *c, int pos, int in);
/* dma.lx (load) or dma.lxs (store) between rows [i0, i0 + n), stick
 * groups [g0, g0 + G) of a core's part of resident buf and a tile of G
 * groups at lx, group stride gs. */
void be_res_copy(be_ctx *c, cc_emit *e, int store, int buf, int64_t i0, int64_t n, int64_t g0, int64_t G, int64_t lx,
                 int64_t gs);
/* The loader of a kept input (be_res.loaded): rows [i0, i0 + n) of the
 * core's part, groups [g0, g0 + G), just loaded at lx (groups gs apart),
 * into the region, by a dma.lx on dmai behind the load's signal. */
void be_res_fill(be_ctx *c, cc_emit *e, int buf, int64_t i0, int64_t n, int64_t g0, int64_t G, int64_t lx, int64_t gs);
/* Does kernel pos send its result buf by stick group to the readers' cores (be_res.heads)? */
int be_heads_writes(const be_ctx *c, int buf, int pos);
/* Does kernel pos read buf from the slots a hand-off by stick group filled (be_res.heads)? */
int be_heads_reads(const be_ctx *c, int buf, int pos);
/* The tokens kernel pos may allocate: one fewer than the chip's in a producer of such a hand-off,
 * whose markers signal be_ctx.htok on other cores (0: the chip's). */
int be_heads_tok_cap(const be_ctx *c, int pos);
/* The producer's piece of buf: rows [row, row + n) of stick groups [g0, g0 + G), at lx (groups
 * gs apart), to the cores that read each group: ring.send (dmao's dma.lxs for the core's own);
 * own selects the core's own groups (on dmao) or the others' (on the ring). */
void be_heads_send(be_ctx *c, cc_emit *e, int own, int buf, int64_t row, int64_t n, int64_t g0, int64_t G, int64_t lx,
                   int64_t gs);
/* The end of the producer's code on a core: a marker to every reader core on token be_ctx.htok
 * (behind the core's pieces on its ring unit), and on a reader core the wait for every other
 * producer core's marker, so that its pieces have landed before its kernel ends. */
void be_heads_close(be_ctx *c, cc_emit *e, int pos);
/* A DMA load from DRAM at dram that kernel c->pos makes from a buffer kept by stick group: emitted
 * as a dma.lx from the region instead; 0 when dram is no such buffer's. */
int be_heads_load(const be_ctx *c, cc_emit *e, int64_t lx, int64_t dram, const cc_dma_shape *sh);

/* ---- The kernel-kind table (be_kind.c) ----
 *
 * What each kind of kernel supplies to the back half's passes; the
 * passes reach a kernel's code only through its row (be_kind_of), never
 * by testing its kind.  Each function returns -1 with an error naming
 * the kernel (estimate: -1, or DBL_MAX when no tiling fits). */
typedef struct {
    const char *name;
    /* workdiv: the kernel's split over the cores and its tiling (be_work, be_note) */
    int (*plan)(be_ctx *c, int pos);
    /* workdiv, optional: split it like the earlier kernel writer[b] that
     * writes a tensor b it reads, when that lets the tensor stay in LX
     * for less than the DRAM round trip costs */
    void (*align)(be_ctx *c, int pos, const int *writer);
    /* workdiv, optional: split it over `cores`, the split its first
     * reader (at position reader) takes on its own, when that lets the n
     * buffers bufs that reader reads aligned stay in LX for less than
     * their DRAM round trip (writer: as for align) */
    void (*ahead)(be_ctx *c, int pos, const int *writer, int reader, int cores, const int *bufs, int n);
    /* workdiv, lxplan: the DRAM buffers it reads and writes (*out, n of
     * them; the caller frees *out) */
    int (*access)(be_ctx *c, int pos, be_access **out, int *n);
    /* lxplan: the cost model's cycles as planned, tiled into be_lx_budget */
    double (*estimate)(be_ctx *c, int pos);
    /* lxplan: its working LX, the most a core's code allocates, tiled
     * into be_lx_budget: its LX taken as codegen takes it, without the
     * code (-1: it does not fit, or another error) */
    int64_t (*need)(be_ctx *c, int pos);
    /* codegen: its instructions on every core it runs on */
    int (*emit)(be_ctx *c, int pos);
    /* codegen, optional: called once the kernel before it is emitted,
     * whose LX use ends below `above` on every core: into that kernel's
     * streams, loads of the first chunks of operands no kernel writes into
     * LX between `above` and both kernels' floors, recorded in c->pre for
     * its emit (-1 with an error) */
    int (*prefetch)(be_ctx *c, int pos, int64_t above);
    /* codegen, optional (NULL: nothing is loaded ahead past it): called
     * once a streamed grid (c->drain_pos) at `from` is emitted, for each
     * later kernel past the next until one returns 1, whose LX use ends
     * below `above`: into from's streams, the first chunks of pos's
     * streamed operand (c->far); 1 when pos streams its operand (the
     * search ends there), 0 when loads ahead pass it, -1 with an error */
    int (*prefetch_far)(be_ctx *c, int pos, int from, int64_t above);
    /* workdiv: a work_div SPEC's split from *q on (advanced past it), into
     * w; the cores it uses, or -1 when it is none of `syntax` */
    int64_t (*split)(const char **q, be_work *w);
    const char *syntax;
    /* lxplan, optional: the stick groups of buf that core reads (held[g] set), for a read its
     * access marks `groups`; -1 when some group is read only in part */
    int (*groups)(be_ctx *c, int pos, int buf, int core, char *held);
    /* the workdiv dump's line for the kernel */
    void (*print_work)(const be_ctx *c, int pos, FILE *f);
    /* the report's line for its split over the cores (forced: by work_div) */
    void (*print_report)(const be_ctx *c, int pos, int forced, FILE *f);
    /* the cycles estimate leaves out (the kernel's fill and drain), which
     * the report's estimate adds (be_kind.c) */
    double fill_drain;
    /* lxplan: it reads each row of a tensor it walks aligned before it
     * writes that row of an aligned result, chunk by chunk, so the result
     * may take the LX region of a kept tensor whose last reader it is */
    int in_place;
} be_kind;

const be_kind *be_kind_of(const be_ctx *c, int pos);

int be_rows_access(be_ctx *c, int pos, be_access **out, int *n);
int be_rows_plan(be_ctx *c, int pos);
void be_rows_align(be_ctx *c, int pos, const int *writer);
void be_rows_ahead(be_ctx *c, int pos, const int *writer, int reader, int cores, const int *bufs, int n);
double be_rows_estimate(be_ctx *c, int pos);
/* Free be_rows_access's remembered answers. */
void be_rows_access_free(be_ctx *c);
/* be_ctx.wspan and be_ctx.mmshape freed (be_matmul.c). */
void be_matmul_memos_free(be_ctx *c);
/* Free the staged loads' row spans the row kernels' plans walked (let
 * go of them when cc_compile's attempts share them: ir_prog.spans). */
void be_rows_spans_free(be_ctx *c);
/* ---- Plans remembered by their inputs' bytes (be_planmemo.c) ----
 * A planner clears the memo's key, writes into it every input its plan
 * reads (position-free: nothing that differs between cc_compile's
 * attempts and that no price reads, such as DRAM offsets), looks for a
 * remembered plan under it, else plans and keeps its answer. */
typedef struct {
    unsigned char *b;
    size_t n, cap;
} be_key;
typedef struct {
    struct be_planent *e;
    int n, cap;
    be_key key; /* the plan under way's */
} be_planmemo;
void be_key_put(be_key *q, const void *v, size_t n);
void be_key_i64(be_key *q, int64_t v);
void be_key_f64(be_key *q, double v);
/* The next plan from entry *i on remembered under m->key (NULL: none);
 * *i moves past it. */
void *be_planmemo_next(const be_planmemo *m, int *i);
/* Remember plan's size bytes (a copy) under m->key. */
void be_planmemo_keep(be_planmemo *m, const void *plan, size_t size);
void be_planmemo_free(be_planmemo *m);
/* SPYRE_CHECK_PLANS=1: plan again every plan found, abort where they differ. */
int be_check_plans(void);

/* The compile's memo of matmul block tilings (be_mmmemo.c), kept with its
 * span cache: shared by cc_compile's attempts as that is. */
struct be_blockmemo **be_spancache_blocks(be_ctx *c);
/* The span cache's arena (NULL: none), where its tables grow (isa_buf),
 * and memory that lives no longer than the cache. */
isa_arena *be_spancache_arena(be_ctx *c);
/* The arena of the span cache c's compile shares (ir_prog.spans), or
 * NULL: none shared, or none made yet. */
isa_arena *be_spancache_shared_arena(const be_ctx *c);
void be_blockmemo_free(struct be_blockmemo *b);
int64_t be_rows_need(be_ctx *c, int pos);
int be_rows_emit(be_ctx *c, int pos);
int be_rows_prefetch(be_ctx *c, int pos, int64_t above);
int be_rows_prefetch_far(be_ctx *c, int pos, int from, int64_t above);
int be_matmul_access(be_ctx *c, int pos, be_access **out, int *n);
int be_matmul_plan(be_ctx *c, int pos);
int be_matmul_groups(be_ctx *c, int pos, int buf, int core, char *held);
void be_matmul_align(be_ctx *c, int pos, const int *writer);
double be_matmul_estimate(be_ctx *c, int pos);
int64_t be_matmul_need(be_ctx *c, int pos);
int be_matmul_emit(be_ctx *c, int pos);
int be_matmul_prefetch(be_ctx *c, int pos, int64_t above);
int be_matmul_prefetch_far(be_ctx *c, int pos, int from, int64_t above);
/* The host fallback's kernels (be_host.c). */
int be_host_plan(be_ctx *c, int pos);
/* Is N a collective between cards (gr_coll_of), which the host runs over
 * the cards' device copies? */
int be_host_coll(const ir_prog *p, const ir_node *N);
/* Is buffer b a host op's result (not a collective's)? */
int be_host_result(const ir_prog *p, int b);
/* Is buffer b a host op's result that only host ops read and no output
 * is (ISA_TF_HOSTONLY; backend.c)? */
int be_host_only(const ir_prog *p, int b);
int be_host_access(be_ctx *c, int pos, be_access **out, int *n);
double be_host_estimate(be_ctx *c, int pos);
int64_t be_host_need(be_ctx *c, int pos);
int be_host_emit(be_ctx *c, int pos);
int64_t be_host_split(const char **q, be_work *w);
void be_host_print_work(const be_ctx *c, int pos, FILE *f);
void be_host_print_report(const be_ctx *c, int pos, int forced, FILE *f);

/* A note for the report about the kernel at pos, from the *_plan
 * functions: BE_NOTE_TILES replaces the tile description (and starts the
 * restickified operands afresh), BE_NOTE_RESTICK appends a restickified
 * operand, BE_NOTE_LXREAD a
 * tensor read from where an earlier kernel kept it in LX. */
enum { BE_NOTE_TILES, BE_NOTE_RESTICK, BE_NOTE_LXREAD };
void be_note(be_ctx *c, int pos, int what, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* vsnprintf's text (its result not returned) without printf for the
 * notes' conversions (be_diag.c). */
void be_fmt(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void be_vfmt(char *dst, size_t cap, const char *fmt, va_list ap);

/* The reroll pass's figures, freed with the back half's state. */
void be_reroll_free(be_ctx *c);
/* Its scratch freed (the program handed over: nothing rolls again), the
 * figures kept for the report. */
void be_reroll_scratch_free(be_ctx *c);
/* The reroll pass's work on what codegen emitted since the last call:
 * each core's kernels there rolled in place (be_reroll_core: one core's).
 * Codegen rolls each core's code of a kernel as soon as it has walked it
 * (unless the streams are to be seen unrolled: --no-reroll,
 * --dump-after=codegen), so that only one kernel is ever held unrolled;
 * the pass then rolls what is left (the halt). */
void be_reroll_kernels(be_ctx *c);
/* l: a lane (be_reroll_lane) the rolling works with, or NULL for the
 * pass's own scratch, figures and the program's kernel records. */
struct be_rrlane;
void be_reroll_core(be_ctx *c, struct be_rrlane *l, int core);
/* Kernel `name`'s code on core, instructions s[0..n) (emitted aside),
 * rolled onto the end of the core's stream, after the rest of the
 * stream is rolled (be_reroll_core). */
void be_reroll_append(be_ctx *c, struct be_rrlane *l, int core, const char *name, const isa_insn *s, long n);
/* A lane for the cores one codegen thread rolls while another rolls
 * others (be_par_cores): scratch and templates of its own (own), or the
 * pass's for the thread that rolls the pass's kernels (the rolled
 * code is the same whichever template or none a kernel meets: a
 * template is used only where it rolls the kernel exactly as a fresh
 * roll would), figures and kernel records kept apart until
 * be_reroll_lanes_join adds two lanes' to the pass's and the program's,
 * the records in core order (a core's all in one lane). */
struct be_rrlane *be_reroll_lane(be_ctx *c, int own);
void be_reroll_lanes_join(be_ctx *c, struct be_rrlane *a, struct be_rrlane *b);
void be_reroll_lane_free(struct be_rrlane *l);
#endif
