/* be_bound.h: kernel boundaries: whether a bar or only a fence goes
 * before each kernel (be_bound.c), from the instructions emitted. */
#ifndef CC_BE_BOUND_H
#define CC_BE_BOUND_H

#include "backend.h"

/* A bar only where a dependency crosses cores.
 *
 * Before every kernel after the first, each core either fences (its
 * units drain: its later instructions follow all its earlier ones) or
 * bars (every core's units drain and every core waits for the others).
 * A core always needs the fence: each kernel numbers its tokens from 0
 * and reuses the core's LX.  It needs the bar when the next kernel and
 * the kernels since the last bar have a dependency that crosses cores:
 *   - the next kernel reads DRAM another core wrote (RAW), or writes DRAM
 *     another core read or wrote (WAR, WAW: buffers are reused);
 *   - either moves data over the ring: ring.send / ring.red write another
 *     core's LX (a tensor kept there, too) and signal its tokens, which
 *     that core's kernel before or after uses as well.  A kernel whose ring
 *     transfers all signal their destination (or are followed, from the
 *     same core to the same destination, by one that does: a core's ring
 *     unit lands its transfers in order) and whose every core's waits
 *     consume exactly its signals and arrivals per token has each transfer
 *     landed before its destination leaves the kernel (the sender's fence
 *     drains its ring unit): it needs the bar before it only.
 * Without the ring a core's LX is its own, so a tensor kept in LX is read
 * where it was written.  The accesses come from the emitted instructions
 * (each core's stream interpreted: registers, loops, every DMA piece), so
 * the decision is exact whatever the kernel's plan; per DRAM stick it
 * remembers the core that wrote it and the core that read it since the
 * last bar, as runs of sticks alike (a decode step's layer reads 3.4 M
 * sticks of weights in 26 K pieces: marks per stick were a fifth of its
 * compile, half of that the page faults of their 27 MB). */

/* No core, or more than one: a core is held as its number plus one. */
enum { BD_NONE = 0, BD_MANY = -1 };

/* A run of DRAM sticks [lo, hi) alike since the last bar: the core that
 * wrote them and the core that read them (its number plus one). */
typedef struct {
    int64_t lo, hi;
    int16_t w, r;
} bd_run;

typedef struct {
    int64_t lo, hi; /* DRAM sticks [lo, hi) */
    int core, write;
} bd_piece;

/* A piece's start or end, for the sweep that turns pieces into runs. */
typedef struct { /* (16 bytes: the sort moves each twice) */
    int64_t at;
    int32_t core;
    int16_t write, delta;
} bd_edge;

/* n pieces of len sticks, step apart from lo on: pieces first.. of the
 * next kernel's, as bd_add_strided added them (its slots in pieces left
 * unwritten, but the last, till bd_record, bd_order or bd_lanes_join
 * writes them out). */
typedef struct {
    size_t first;
    int64_t n, lo, step, len;
    int core, write;
} bd_group;

typedef struct {
    int64_t stick;
    int shift;                   /* log2 of stick, -1 when it is no power of two */
    bd_run *runs;                /* the marks since the last bar: sorted, disjoint, unmarked sticks left out */
    size_t nruns;
    bd_run *out;                 /* scratch for the next runs */
    size_t ocap;
    bd_edge *edges;              /* scratch: the next kernel's pieces' edges (and as many for their sort) */
    bd_run *prev;                /* scratch: bd_merge_runs' copy of the next runs */
    int32_t *live;               /* scratch: per write flag and core, its pieces over the sweep's stick */
    int64_t (*regs)[ISA_NREGS]; /* per core: its registers where its stream stands */
    int ring;                    /* ring traffic since the last bar */
    bd_piece *pieces;            /* the next kernel's DRAM accesses */
    size_t npieces, cap;
    bd_group *groups;            /* the pieces' groups (bd_needs_bar checks one at once), by first piece */
    size_t ngroups, gcap;
    int unordered;               /* some piece's core is below the one's before it (bd_add's: bd_order's test
                                    of every piece was 0.7% of the Llama-8B decode step's compile) */
    bd_piece *sorted;            /* scratch: bd_order's, which then swaps it with pieces */
    uint32_t *ends;              /* scratch: bd_join's table of pieces by their end (nends entries) */
    size_t nends;
    uint32_t endbase;            /* bd_join's entries at most this are empty */
    int kring;                   /* the next kernel's ring traffic */
    char *unmarked;              /* ... per core and destination: its last ring transfer there had no token, so
                                    no wait of the destination's awaits it; a later one with a token covers it
                                    (a core's ring unit lands its transfers in order) */
    int urow;                    /* unmarked's bytes per core: ncores, rounded up to a cache line (two codegen
                                    threads write the rows of their own cores) */
    int ncores, ntok;            /* cores, tokens per core */
    int32_t *tokbal;             /* per core and token: the next kernel's signals (sig, ring arrivals) less its waits */
    /* the memory of runs, out, edges, prev, pieces, sorted and ends, in an
     * arena (bd_begin's; on huge pages, not first touched 4 KB by 4 KB) */
    isa_buf runsm, outm, edgesm, prevm, piecesm, sortedm, endsm;
    /* groups', a few KB, on the heap: in the arena their slot made a core's
     * stream grow by one more copy (230 k instructions of the decode step's
     * compile) */
    isa_buf groupsm;
} bd_state;

/* Start (the DRAM stick size, a register file per core; the scratch in
 * arena, NULL: the heap) and free. */
void bd_begin(bd_state *b, const be_ctx *c, isa_arena *arena);
void bd_free(bd_state *b);
/* A collector of the next kernel's accesses for the cores one codegen
 * thread emits while another emits others (be_par_cores): its own
 * pieces, ring flag and token balances, b's registers and unmarked
 * destinations (each core's row is written by the one thread that emits
 * it).  bd_lanes_join adds two lanes' to b: their pieces in core order
 * (a core's all in one lane) as bd_collect would have added them core
 * after core, their ring flags and balances (integers: exact in any
 * order). */
void bd_lane_begin(bd_state *lane, const bd_state *b);
void bd_lanes_join(bd_state *b, bd_state *x, bd_state *y);
void bd_lane_free(bd_state *lane);
/* Add core `core`'s instructions of the next kernel, from `first` on. */
void bd_collect(bd_state *b, const isa_stream *s, size_t first, int core);
/* The DRAM sticks of a dma.ld or dma.st (bd_dma), of a dma.gather or
 * dma.scatter (bd_table): bd_insn's. */
void bd_dma(bd_state *b, const isa_insn *in, int core);
void bd_table(bd_state *b, const isa_insn *in, int core);
/* A ring op's marks: its destination `to` in the sending core's row of
 * unmarked (row), and its token tok's arrival there (tokbal, ntok per
 * core).  Operands by value: read before the byte store, which may alias
 * the instruction. */
static inline void bd_ring_mark(char *row, int32_t *tokbal, int ntok, int to, int tok)
{
    row[to] = tok >= ntok;
    if (tok < ntok)
        tokbal[to * ntok + tok]++;
}

/* Add one, in its turn: 0, or -1 (nothing added) for a sequencer control
 * (li, addi, loop, endl), which only bd_collect runs.  The DRAM sticks it
 * touches, its ring use, its tokens.  Inline: codegen's walk asks it of
 * every instruction emitted (the call was a fifth of its time). */
static inline int bd_insn(bd_state *b, const isa_insn *in, int core)
{
    switch (in->op) {
    case ISA_OP_LI:
    case ISA_OP_ADDI:
    case ISA_OP_LOOP:
    case ISA_OP_ENDL:
        return -1;
    case ISA_OP_DMA_LD:
    case ISA_OP_DMA_ST:
        bd_dma(b, in, core);
        break;
    case ISA_OP_DMA_GATHER:
    case ISA_OP_DMA_SCATTER:
        bd_table(b, in, core);
        break;
    case ISA_OP_RING_SEND:
    case ISA_OP_RING_RED:
        b->kring = 1;
        bd_ring_mark(b->unmarked + core * b->urow, b->tokbal, b->ntok, in->core, in->tok);
        break;
    case ISA_OP_SIG:
    case ISA_OP_WAIT:
        if (in->tok < b->ntok)
            b->tokbal[core * b->ntok + in->tok] += in->op == ISA_OP_SIG ? 1 : -1;
        break;
    }
    return 0;
}

/* The next kernel's pieces core by core, each core's in the order
 * collected: codegen collects a core's code as each of its kernels ends,
 * and a ring exchange ends on every core before the kernel after it
 * starts, but bd_needs_bar names the first clash in core order. */
void bd_order(bd_state *b);
/* Does the next kernel need a bar before it (the reason to why)? */
int bd_needs_bar(const bd_state *b, char *why, size_t len);
/* The next kernel was placed after a bar (bar) or a fence. */
void bd_record(bd_state *b, int bar);

#endif
