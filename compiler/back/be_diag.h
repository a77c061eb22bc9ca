/* be_diag.h: the back half's state beyond be_ctx (what the report shows),
 * kept by be_diag.c's notes and read by the passes and the report (backend.c). */
#ifndef CC_BE_DIAG_H
#define CC_BE_DIAG_H

#include "backend.h"

/* ---- The back half's state, and what the report shows ----
 *
 * p->be points at the be_ctx that opens a be_state; the rest is what the
 * report prints beyond be_work: notes from the *_plan functions (tiles,
 * restickified operands), whether a work_div override chose the split,
 * and what the codegen pass measured in each kernel's instructions.  It
 * stays with the result after cc_codegen (freed by cc_result_free). */
typedef struct {
    char tiles[384];     /* be_note(..., BE_NOTE_TILES, ...) */
    char restick[256];   /* be_note(..., BE_NOTE_RESTICK, ...), ", "-separated */
    int nrestick;
    char lxread[256];    /* be_note(..., BE_NOTE_LXREAD, ...), ", "-separated */
    int nlxread;
    int forced;          /* the split came from a work_div override */
    int64_t dram_rd, dram_wr; /* bytes of dma.ld / dma.st, all cores */
    int64_t lx_max;      /* most LX one core allocates */
    int loops;           /* the code has counted loops: bytes counted once per loop body */
    int bar;             /* a bar before it, not a fence (kernels after the first) */
    char boundary[160];  /* why that bar */
    double est;          /* the cost model's cycles for it as emitted (its kind's estimate) */
    double dma_busy;     /* the busiest DMA unit of any core, its instructions' issue and transfer time */
    double xchg_est;     /* its ring exchanges' estimate, the kernel NAME.xchg (0: none) */
} be_kinfo;

typedef struct {
    be_ctx c;            /* first: p->be is &state->c */
    be_kinfo *k;         /* per kernel position */
    char cfgname[ISA_NAME_MAX];
    int ncores;
} be_state;

static inline be_state *state_of(be_ctx *c)
{
    return (be_state *)c;
}

#endif
