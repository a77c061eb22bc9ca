/* internal.h: state shared by the simulator's files; not part of the
 * public interface (sim.h). */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include "sim.h"

#define SIM_MAX_LOOP_DEPTH 4

/* An instruction waiting in a unit queue: the program's decoded
 * instruction (not copied: the program does not change during a run) and
 * what dispatch resolved, the byte offsets of its address operands (base
 * register + offset, at the time the sequencer issued it).  Its opcode and
 * token are copied too: most unit wakes meet a `wait` or `sig`, which need
 * nothing else, so such a wake reads this slot's one cache line and not
 * the instruction it names (a second dependent load). */
typedef struct {
    const isa_insn *in;
    int64_t d, a, b, p; /* resolved in->d.off + regs[in->d.reg], ... */
    long index;         /* position in the core's stream */
    double ready;       /* cycle it was dispatched */
    int16_t op;         /* in->op, or -1 outside [0, INT16_MAX] (only wait and sig are told apart by it) */
    int16_t kslot;      /* its entry of st->kernels, -1 for none (found at issue, see engine.c) */
    int32_t tok;        /* in->tok */
} sim_slot;

/* sim.c allocates the queues aligned to this, so a slot is one cache line */
#define SIM_SLOT_ALIGN 64
_Static_assert(sizeof(sim_slot) == SIM_SLOT_ALIGN, "a unit queue slot fills one cache line");
_Static_assert(SIM_MAX_KERNELS <= INT16_MAX, "a kernel entry fits sim_slot.kslot");

/* An instruction as it ran, registers resolved (reg 0, off the resolved
 * offset): what a trace record keeps (sim_trace_insn). */
typedef struct {
    isa_insn in;
    long index;   /* position in the core's stream */
    double ready; /* cycle it was dispatched */
} sim_qent;

/* The instruction of a slot with its resolved addresses filled in (one
 * past the 56-bit field, from a wild register, reads as ISA_OFF_UNFIT). */
static inline void sim_slot_insn(const sim_slot *e, isa_insn *out)
{
    *out = *e->in;
    out->d = isa_addr_at(0, e->d);
    out->a = isa_addr_at(0, e->a);
    out->b = isa_addr_at(0, e->b);
    out->p = isa_addr_at(0, e->p);
}

/* A unit's queue: a ring of `cap` slots holding `count` from `head`.  The
 * model's depth (queue_depth) bounds count; the ring grows towards it only
 * as a program fills it (sim_queue_grow), so a launch walks the slots its
 * units hold in flight, not queue_depth of each (a 1024^3 GEMM's DMA and
 * PT queues hold at most 24 of 64). */
typedef struct {
    sim_slot *q;
    int head, count, cap;
} sim_queue;

/* Give q SIM_QUEUE_STEP more slots, at most depth in all (a new queue,
 * cap 0, its first ones), its count from head kept in order.  0, or -1
 * when out of host memory (q unchanged). */
#define SIM_QUEUE_STEP 8
int sim_queue_grow(sim_queue *q, int depth);

typedef struct {
    long start;        /* index of the first instruction of the body */
    int64_t remaining; /* iterations still to run after this one */
} sim_loop;

/* One cache line each (sim.c allocates the cores aligned): a unit's run
 * reads and writes most of it, and 56 bytes packed made most of them
 * straddle two lines. */
typedef struct {
    _Alignas(64) double free_at; /* cycle the unit can start its next instruction */
    double done_at;     /* cycle every instruction it started has completed */
    double busy, stall; /* accumulated cycles */
    double wait_since;  /* cycle a blocked wait started, or -1 */
    int scheduled;      /* an event for this unit is pending */
    /* a remote token (its core, or -1 for none) that the unit's pending
     * event increments first: the token event the queue would have popped
     * just before it (engine.c, carry_token) */
    int32_t rtok_core, rtok;
} sim_unit_state;

typedef struct {
    int id;
    uint8_t *lx;
    int64_t regs[ISA_NREGS];
    long pc;
    int seq_done;     /* halt reached (or stream ended) */
    int at_barrier;
    int at_fence;     /* the sequencer waits at a fence for this core's units */
    double seq_time;  /* the sequencer's clock */
    int seq_scheduled;
    int seq_blocked_on; /* unit whose full queue stalls the sequencer, or -1 */
    sim_loop loops[SIM_MAX_LOOP_DEPTH];
    int nloops;
    sim_queue units[ISA_NUNITS];
    sim_unit_state ustate[ISA_NUNITS];
    /* token each unit's blocked wait needs, or -1: every signal looks at
     * all of them, so they share a cache line rather than sit in ustate */
    int64_t waiting_tok[ISA_NUNITS];
    int64_t *tokens;
    uint64_t lx_peak;
} sim_core;

typedef struct {
    double start, end; /* the unit's occupation: free again at end */
    double done;       /* its transfers land (kernels[].end_cycles): past end for a DMA in flight */
    int core, unit;
    long index;
    uint64_t lx_high;
    isa_insn in;
} sim_trace_rec;

typedef struct {
    double start, end;
    uint64_t bytes;
    int is_write;
} sim_bw_rec;

typedef struct {
    double start, end;
    long index; /* of the `host` instruction in core 0's stream */
    int64_t node;
} sim_host_rec;

typedef struct sim_dram sim_dram;
typedef struct sim_race sim_race;
typedef struct sim_ptq sim_ptq;

struct sim {
    chip_config cfg;
    sim_options opt;
    sim_core *cores;
    uint8_t **pages;   /* sparse DRAM */
    uint64_t *page_serial; /* per page, the number of the last write to it (sim_dram_serial) */
    uint64_t dram_serial;
    uint64_t npages;
    int page_shift;
    sim_dram *dram;    /* LPDDR5 timing model */
    double *link_free; /* ring links: [direction][stop] cycle each is free */
    sim_race *race;
    int race_found;
    sim_ptq *ptq;      /* PT arithmetic on a worker thread */
    /* trace of the last run */
    sim_trace_rec *trace;
    size_t ntrace, trace_cap;
    sim_bw_rec *bw;
    size_t nbw, bw_cap;
    sim_host_rec *hostrec;
    size_t nhost, host_cap;
    double drain_start; /* the units' end: posted writes drain to DRAM from there to run_cycles (none: equal) */
    sim_host_fn host_fn; /* sim_set_host */
    void *host_ctx;
    sim_decode **decode; /* sim_set_decode */
    /* the run in progress */
    const isa_program *prog;
    uint64_t weights_base, act_base; /* device addresses of the two DRAM regions */
    uint64_t weight_bytes, seg_bytes; /* segment offsets [0, weight_bytes) are weights */
    sim_stats *st;
    sim_fault *fault;
    double run_cycles; /* the last run's length, for the trace written after it */
};

/* fault.c: record a fault at (core, unit, index); always returns -1.
 * Cold: the event loop's every check calls it on its failing branch, and
 * GCC then lays those branches and their arguments out of the hot path. */
int sim_faultf(sim *s, int core, int unit, long index, const char *fmt, ...)
    __attribute__((format(printf, 5, 6), cold));

/* trace.c: a host op's span in the trace. */
void sim_trace_host(sim *s, long index, int64_t node, double start, double end);
/* The run's units end at start (the drain to DRAM, if any, after it ends the run). */
void sim_trace_drain(sim *s, double start);

/* engine.c: run a program to completion (event-driven). */
int sim_engine_run(sim *s, const isa_program *p);

/* exec.c: execute one unit instruction (queued on `unit`) starting at
 * cycle `start`: check it, apply its effect (unless timing only) and
 * return when it ends in end and when its unit is free again in busy_end.  A ring instruction that signals another core's token sets
 * *remote_core / *remote_tok (else -1).  0, or -1 with the fault set. */
typedef struct {
    double start, end; /* end: the instruction's effect is complete */
    double busy_end;   /* the unit may start its next instruction (<= end; a
                          DMA engine keeps transfers in flight) */
    int remote_core;
    int64_t remote_tok;
    uint64_t macs, dram_bytes; /* what it added to st->macs and st's DRAM bytes (its kernel's share) */
} sim_timing;
int sim_exec(sim *s, sim_core *c, int unit, const sim_slot *e, sim_timing *tm);

/* timing.c: latency models. */
typedef struct {
    double issue, done;
    uint64_t bytes;
} sim_dma_timer;
void sim_timing_reset(sim *s);
void sim_dma_begin(sim *s, sim_dma_timer *tm, double t);
void sim_dma_piece(sim *s, sim_dma_timer *tm, uint64_t addr, uint64_t bytes, int is_write);
double sim_dma_end(sim *s, sim_core *c, sim_dma_timer *tm, double t, int is_write);
double sim_time_lx_copy(const sim *s, double t, uint64_t bytes);
double sim_time_ring(sim *s, sim_core *c, int dst, double t, uint64_t bytes);
double sim_time_pt(const sim *s, double t, int64_t m, int64_t n, int64_t k);
double sim_time_sfp(const sim *s, double t, int op, int64_t sticks);
/* A lower bound of an instruction's duration from its counts alone, for
 * the cycle limit before any of its work: one DMA can name 65535^4 pieces. */
double sim_time_min(const sim *s, const isa_insn *in);

/* race.c: hazard detection (no-ops unless opt.detect_races). */
static inline sim_race *sim_race_active(sim *s) { return s->opt.detect_races ? s->race : NULL; }
void sim_race_reset(sim *s);
void sim_race_free(sim *s);
void sim_race_access(sim *s, sim_core *c, int u, long index, int space, uint64_t lo, uint64_t hi, int is_write);
void sim_race_signal(sim *s, sim_core *src, int u, sim_core *dst, int64_t tok);
void sim_race_wait(sim *s, sim_core *c, int u, int64_t tok);
void sim_race_barrier(sim *s);
void sim_race_fence(sim *s, sim_core *c);

/* ptworker.c: PT products run on a worker thread in issue order; any
 * other access to LX bytes a queued product uses waits for it first. */
typedef struct {
    int64_t base, count, stride, len; /* count ranges [base + i * stride, + len) */
} sim_lx_set;
void sim_pt_submit(sim *s, int core, const isa_insn *in, const sim_lx_set ops[4]);
void sim_pt_fence_queued(sim *s, int core, uint64_t lo, uint64_t hi, int is_write);
/* Before the event loop touches core's LX bytes [lo, hi) (ptworker.c says
 * how); inline because every DMA and ring transfer asks.  Timing only,
 * the loop neither moves LX bytes nor queues products, so there is
 * nothing to wait for, even on a device whose workers a run with values
 * started (they stay: fencing for them made its later timing-only runs a
 * fifth slower). */
static inline void sim_pt_fence(sim *s, int core, uint64_t lo, uint64_t hi, int is_write)
{
    if (s->ptq && s->opt.values && lo < hi)
        sim_pt_fence_queued(s, core, lo, hi, is_write);
}
/* A ring.send has copied core src's LX bytes [a, a + len) to core dst's
 * [d, d + len): dst's bytes take src's content tag (a new one for both
 * when src has none), so products of both find each other's conversions
 * without comparing bytes. */
void sim_pt_copied(sim *s, int src, uint64_t a, int dst, uint64_t d, uint64_t len);
/* A dma.st of core's LX bytes [lo, hi) that would wait for products
 * still queued (a GEMM's results, stored as its last products come in)
 * becomes a job after them on their worker instead: NULL when it cannot
 * (then the caller fences and copies as ever).  Each piece's DRAM pages
 * are written now in the DRAM's order (their write numbers), the bytes by
 * the worker; sim_pt_fence_dram holds back every later DRAM access that
 * meets them until they are there. */
typedef struct pt_job sim_pt_store;
sim_pt_store *sim_pt_store_begin(sim *s, int core, uint64_t lo, uint64_t hi);
void sim_pt_store_piece(sim *s, sim_pt_store *j, uint64_t addr, uint64_t lx, size_t len);
void sim_pt_store_end(sim *s, sim_pt_store *j);
/* Before DRAM bytes [addr, addr + len) are read or written (pages.c). */
void sim_pt_fence_dram(sim *s, uint64_t addr, size_t len);
void sim_pt_drain(sim *s);
void sim_pt_stop(sim *s);

/* ptconv.c: DL16 tiles converted to fp32, shared by a worker's cores: a
 * tile whose bytes equal an entry's takes its values.  A tile: rows x
 * cols lanes in groups of stick_bytes / 2 lanes, group g at at + g * pitch,
 * rows sb bytes apart. */
typedef struct sim_conv_pool sim_conv_pool;
typedef struct {
    const uint8_t *at;
    int64_t pitch, sb, rows, cols;
} sim_tile_src;
/* A tile's bytes named by content, without reading them: each group's
 * run of LX (rows x stick bytes) as consecutive pieces, piece i being bytes
 * [off, off + len) of the content numbered id (ptworker.c's tags).  Equal
 * pieces mean equal bytes; n 0: not known, the bytes are compared. */
#define SIM_TILE_PIECES 8
typedef struct {
    int n;
    struct {
        uint64_t id, off, len;
    } p[SIM_TILE_PIECES];
} sim_tile_tags;
sim_conv_pool *sim_conv_new(int entries);
void sim_conv_free(sim_conv_pool *p);
/* buf, or a new one in its place (its contents not kept), of at least
 * `bytes` (*cap: what it holds), on a 64-byte boundary: the fp32 tiles
 * are sgemm's operands, which OpenBLAS packs with 64-byte loads. */
void *sim_buf_room(void *buf, size_t *cap, size_t bytes);
/* The tile as row-major fp32, found or converted now; *slot and *serial
 * name the entry for sim_conv_at.  Valid until the pool's next miss
 * refills that entry. */
const float *sim_conv_get(sim_conv_pool *p, const sim_tile_src *t, const sim_tile_tags *tags, int *slot,
                          uint64_t *serial);
/* The values of entry slot if it still holds what serial named, else NULL. */
const float *sim_conv_at(const sim_conv_pool *p, int slot, uint64_t serial);
/* Entry slot's values (just found) packed as a product's A, or its B when
 * as_b, for sim_pt_product_packed; packed on first use, and kept until
 * the entry is refilled: a GEMM's tile feeds several products. */
const float *sim_conv_packed(sim_conv_pool *p, int slot, int as_b);
/* A product takes entry slot: nonzero from its second since it was filled
 * on, or once it is packed. */
int sim_conv_use(sim_conv_pool *p, int slot);
/* The pool emptied, its next misses filling its entries from the first:
 * a run then fills them as the last one did, in buffers grown and
 * faulted in already (a GEMM's tiles of one run are not the next's). */
void sim_conv_rewind(sim_conv_pool *p);

/* trace.c: timeline recording. */
void sim_trace_reset(sim *s);
void sim_trace_insn(sim *s, int core, int unit, const sim_qent *e, double start, double end, double done);
void sim_trace_dram(sim *s, double start, double end, uint64_t bytes, int is_write);

/* pages.c: DRAM copies in the program's segment, with bounds checks by
 * the caller. */
void sim_dram_copy_in(sim *s, uint64_t addr, const void *src, size_t len);
void sim_dram_copy_out(sim *s, uint64_t addr, void *dst, size_t len);
/* memcpy, with stores that bypass the cache where the host allows: for
 * bytes copied to another core's LX, which the event loop seldom reads
 * soon (its products' worker reads them, or finds their conversion by
 * content): a GEMM's ring transfers then cost no reads of the old bytes. */
void sim_copy_uncached(void *d, const void *a, size_t n);
/* Where DRAM byte addr is, to be written now (its page's write number
 * taken): *n bytes from there lie in its page, at most len. */
uint8_t *sim_dram_for_write(sim *s, uint64_t addr, size_t len, size_t *n);

#endif
