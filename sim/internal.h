/* internal.h: state shared by the simulator's files; not part of the
 * public interface (sim.h). */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include "sim.h"

#define SIM_MAX_LOOP_DEPTH 4

/* An instruction waiting in a unit queue, registers already resolved. */
typedef struct {
    isa_insn in;
    long index; /* position in the core's stream */
} sim_qent;

typedef struct {
    sim_qent *q;
    int head, count;
} sim_queue;

typedef struct {
    long start;        /* index of the first instruction of the body */
    int64_t remaining; /* iterations still to run after this one */
} sim_loop;

typedef struct {
    int id;
    uint8_t *lx;
    int64_t regs[ISA_NREGS];
    long pc;
    int seq_done;     /* halt reached (or stream ended) */
    int at_barrier;
    sim_loop loops[SIM_MAX_LOOP_DEPTH];
    int nloops;
    sim_queue units[ISA_NUNITS];
    int64_t *tokens;
    uint64_t lx_peak;
} sim_core;

struct sim {
    sim_config cfg;
    sim_core *cores;
    uint8_t **pages;   /* sparse DRAM */
    uint64_t npages;
    int page_shift;
    /* scratch for the PT unit's fp32 operands */
    float *pt_a, *pt_b, *pt_c;
    size_t pt_a_cap, pt_b_cap, pt_c_cap;
    /* the run in progress */
    const isa_program *prog;
    uint64_t dram_base, seg_bytes;
    sim_stats *st;
    sim_fault *fault;
};

/* Record a fault at (core, unit, index); always returns -1. */
int sim_faultf(sim *s, int core, int unit, long index, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Execute one unit instruction (DMA, PT, SFP, ring).  0 or -1 (fault set). */
int sim_exec(sim *s, sim_core *c, const sim_qent *e);

/* DRAM copies in the program's segment, with bounds checks by the caller. */
void sim_dram_copy_in(sim *s, uint64_t addr, const void *src, size_t len);
void sim_dram_copy_out(sim *s, uint64_t addr, void *dst, size_t len);

#endif
