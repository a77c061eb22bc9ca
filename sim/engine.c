/* engine.c: the event-driven run loop.  Agents (each core's sequencer and
 * its units) wake at event times; a unit runs the instruction at the head
 * of its queue when it is free, applies its effect on LX and DRAM (values,
 * unless timing only) and becomes free again after the instruction's
 * latency.  Tokens order units; fences order a core's units; barriers
 * order cores.  Time is in core
 * cycles; the DRAM model works in ns and is converted at the boundary. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dram.h"
#include "events.h"

#define AGENT_SEQ ISA_NUNITS
_Static_assert(ISA_U_SEQ >= ISA_NUNITS, "the issue loop tells the sequencer's instructions by unit >= ISA_NUNITS");
#define UNIT_UNKNOWN 0xff

/* What the sequencer copies into a slot, per stream position: the
 * opcode, token and address operands, read from the instruction once
 * (its two cache lines are often out of cache by the time a loop comes
 * round to it again), and the kernel, from a map of its own.  A wait's or
 * signal's operands are r0 + 0, so every slot's addresses are resolved
 * alike (to 0 for those): which one it is was the issue's most
 * mispredicted branch. */
typedef struct {
    int64_t off[4]; /* in->d.off, a, b, p; 0 for wait and sig (their format names no address) */
    int16_t op;     /* as sim_slot.op */
    int16_t kslot;  /* as sim_slot.kslot: found when the run begins (kernels_begin) */
    int16_t tok;    /* in->tok (an 8-bit field) */
    uint8_t unit;   /* isa_insn_unit, UNIT_UNKNOWN for one beyond a byte */
    uint8_t reg[4]; /* in->d.reg, ...: in [0, ISA_NREGS) (an ELF's 4-bit field and isa_check keep them there; a
                     * program built in memory unchecked has a wild one masked, not read out of bounds) */
} issue_rec;

/* What a run derives from its program's instructions alone and from the
 * chip's configuration (sim_time_min), the same at every run of them: a
 * run builds it, or takes the one a caller kept (sim_set_decode). */
struct sim_decode {
    const sim *s;
    const isa_program *p; /* only compared: a caller may free it before the decode */
    int ncores;           /* rows of dec */
    issue_rec **dec; /* [core][instruction index] */
    /* the largest least duration (sim_time_min) of the unit instructions
     * (-inf: none): an instruction starting at t cannot pass the cycle
     * limit by its own when t + this does not */
    double tmin_max;
};

typedef struct {
    sim *s;
    const isa_program *p;
    sim_evq q;
    double now;
    sim_decode *d;  /* the run's decode; dec is its */
    int fresh;      /* d was built for this run: its kernel entries are still to be found */
    issue_rec **dec;
    double *kspan; /* [entry][core][2]: that core's first start and last end (start < 0: none) */
    sim_kernel_stats *kernels; /* st->kernels, and the program's cores: kept here for */
    size_t ncores;             /* kernel_charge, which every unit instruction calls */
    uint64_t issued;    /* instructions the sequencers issued so far */
    uint64_t max_insns; /* the limits of sim_options, defaults applied */
    double max_cycles;
} engine;

/* The run's limits: checked once per instruction issued or completed, so
 * a runaway program stops without any per-element work. */
static void limits_begin(engine *g)
{
    const sim_options *o = &g->s->opt;
    g->issued = 0;
    g->max_insns = o->max_insns ? o->max_insns : SIM_DEFAULT_MAX_INSNS;
    uint64_t mc = o->max_cycles ? o->max_cycles : SIM_DEFAULT_MAX_CYCLES;
    g->max_cycles = mc == SIM_NO_LIMIT ? INFINITY : (double)mc;
}

static int past_cycles(engine *g, int core, int u, long index, double t)
{
    if (t <= g->max_cycles)
        return 0;
    return sim_faultf(g->s, core, u, index,
                      "simulated time passes the cycle limit (%.0f cycles; spyre run --max-cycles N raises it, 0 "
                      "removes it)",
                      g->max_cycles);
}

/* Count the instruction `pc` core's sequencer issues at t (to unit u). */
static int issue_limits(engine *g, int core, int u, long pc, double t)
{
    if (++g->issued > g->max_insns)
        return sim_faultf(g->s, core, u, pc,
                          "the cores issued more than the instruction limit (%" PRIu64
                          "; spyre run --max-insns N raises it, 0 removes it)",
                          g->max_insns);
    return past_cycles(g, core, u, pc, t);
}

/* Name the kernels of the run in st->kernels (one entry per name, in
 * program order) and map every instruction index of every stream to its
 * entry (after decode_begin).  Returns 0, or -1 when out of host memory. */
static int kernels_begin(engine *g)
{
    const isa_program *p = g->p;
    sim_stats *st = g->s->st;
    st->nkernels = 0;
    g->kernels = st->kernels;
    g->ncores = (size_t)p->ncores;
    if (!p->nkernels)
        return 0;
    for (size_t k = 0; k < p->nkernels; k++) {
        const isa_kernel *kn = &p->kernels[k];
        if (kn->core < 0 || kn->core >= p->ncores)
            continue;
        int slot = -1;
        for (int j = 0; j < st->nkernels && slot < 0; j++)
            if (!strcmp(st->kernels[j].name, kn->name))
                slot = j;
        if (slot < 0) {
            if (st->nkernels < SIM_MAX_KERNELS) {
                slot = st->nkernels++;
                st->kernels[slot].core_span = 0;
                snprintf(st->kernels[slot].name, sizeof st->kernels[slot].name, "%s",
                         st->nkernels == SIM_MAX_KERNELS ? "(other kernels)" : kn->name);
            } else
                slot = SIM_MAX_KERNELS - 1;
        }
        long n = g->fresh ? (long)p->cores[kn->core].n : 0; /* a kept decode has them */
        for (long i = kn->first < 0 ? 0 : kn->first; i <= kn->last && i < n; i++)
            if (g->dec[kn->core][i].kslot < 0) /* the first kernel naming an instruction owns it, as in traces */
                g->dec[kn->core][i].kslot = (int16_t)slot;
    }
    /* the spans of the entries named (a 1024^3 GEMM: one), not of
     * SIM_MAX_KERNELS: a launch wrote 128 KB it never read again */
    const size_t nspan = (size_t)st->nkernels * (size_t)p->ncores * 2;
    if (!(g->kspan = malloc((nspan ? nspan : 1) * sizeof *g->kspan)))
        return -1;
    for (size_t i = 0; i < nspan; i += 2) { /* no start yet: any start is earlier */
        g->kspan[i] = INFINITY;
        g->kspan[i + 1] = -1;
    }
    return 0;
}

/* The issue record of instruction `in`, and the largest least duration
 * with its own. */
static issue_rec decode_insn(sim_decode *d, const isa_insn *in)
{
    issue_rec r = {.kslot = -1, .unit = UNIT_UNKNOWN};
    isa_unit v = isa_insn_unit(in);
    r.op = (unsigned)in->op <= INT16_MAX ? (int16_t)in->op : -1;
    r.tok = in->tok; /* 8 bits: a token number */
    const int sync = r.op == ISA_OP_WAIT || r.op == ISA_OP_SIG; /* (their format names no address) */
    if ((unsigned)v < ISA_NUNITS && !sync) {
        double m = sim_time_min(d->s, in); /* NaN (never past the limit) leaves the bound */
        if (m > d->tmin_max)
            d->tmin_max = m;
    }
    /* else an unchecked program's wild unit, or a value isa_set could not
     * store (isa_insn.bad): faults at issue */
    if ((unsigned)v < UNIT_UNKNOWN && !in->bad)
        r.unit = (uint8_t)v;
    if (!sync) {
        const isa_addr *ops[4] = {&in->d, &in->a, &in->b, &in->p};
        for (int k = 0; k < 4; k++) {
            r.off[k] = ops[k]->off;
            r.reg[k] = (uint8_t)(ops[k]->reg & (ISA_NREGS - 1));
        }
    }
    return r;
}

/* The issue record of each instruction, its kernel entry found when the
 * run begins (kernels_begin): a loop's body issues its instructions many
 * times, and the unit costs a table lookup and a switch, the duration a
 * few more.  NULL when out of host memory. */
static sim_decode *decode_new(const sim *s, const isa_program *p)
{
    sim_decode *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->s = s;
    d->p = p;
    d->ncores = p->ncores;
    d->tmin_max = -INFINITY;
    if (!(d->dec = calloc((size_t)p->ncores, sizeof *d->dec))) {
        sim_decode_free(d);
        return NULL;
    }
    for (int c = 0; c < p->ncores; c++) {
        size_t n = p->cores[c].n;
        if (!(d->dec[c] = malloc((n ? n : 1) * sizeof **d->dec))) {
            sim_decode_free(d);
            return NULL;
        }
        for (size_t i = 0; i < n; i++)
            d->dec[c][i] = decode_insn(d, &p->cores[c].insns[i]);
    }
    return d;
}

void sim_decode_free(sim_decode *d)
{
    if (!d)
        return;
    for (int c = 0; d->dec && c < d->ncores; c++)
        free(d->dec[c]);
    free(d->dec);
    free(d);
}

/* The run's decode: the kept one when it was built for this program on
 * this sim (a launch of the 1024^3 GEMM read every instruction's first
 * line, 1.2 k instructions' counts, and filled 4 k records anew), else a
 * new one.  0, or -1 when out of host memory. */
static int decode_begin(engine *g)
{
    sim_decode **kept = g->s->decode;
    if (kept && *kept && (*kept)->s == g->s && (*kept)->p == g->p)
        g->d = *kept;
    else if ((g->d = decode_new(g->s, g->p)))
        g->fresh = 1;
    else
        return -1;
    g->dec = g->d->dec;
    return 0;
}

/* The decode goes to the caller's place for it, if any (whatever the
 * run's outcome: it holds only what the instructions say), else is freed. */
static void decode_end(engine *g)
{
    sim_decode **kept = g->s->decode;
    if (kept && *kept != g->d) {
        sim_decode_free(*kept);
        *kept = g->d;
    } else if (!kept)
        sim_decode_free(g->d);
    g->d = NULL;
    g->dec = NULL;
}

/* Does a unit instruction `in` starting at t pass the cycle limit by its
 * least duration?  Looked up only when the largest one would: t + m <=
 * t + tmin_max, rounding being monotonic. */
static int past_cycles_min(engine *g, int core, int u, long index, const isa_insn *in, double t)
{
    if (t + g->d->tmin_max <= g->max_cycles)
        return 0;
    return past_cycles(g, core, u, index, t + sim_time_min(g->s, in));
}

/* Each entry's span (the earliest start and the latest end of its cores)
 * and longest span of one core, into st->kernels. */
static void kernels_fold(engine *g)
{
    sim_stats *st = g->s->st;
    for (int k = 0; g->kspan && k < st->nkernels; k++) {
        sim_kernel_stats *ks = &st->kernels[k];
        int any = 0;
        for (int c = 0; c < g->p->ncores; c++) {
            const double *sp = &g->kspan[2 * ((size_t)k * (size_t)g->p->ncores + (size_t)c)];
            if (sp[0] == INFINITY)
                continue;
            if (!any || sp[0] < ks->start)
                ks->start = sp[0];
            if (!any || sp[1] > ks->end)
                ks->end = sp[1];
            any = 1;
            if (sp[1] - sp[0] > ks->core_span)
                ks->core_span = sp[1] - sp[0];
        }
    }
}

static void kernels_end(engine *g)
{
    free(g->kspan);
    g->kspan = NULL;
}

/* Charge an instruction of entry `slot` that ran over [start, done) to
 * it; the entry's own start and end are its cores' (kernels_fold). */
static void kernel_charge(engine *g, int slot, int core, double start, double done, double busy, uint64_t macs,
                          uint64_t dram_bytes)
{
    sim_kernel_stats *k = &g->kernels[slot];
    double *sp = &g->kspan[2 * ((size_t)slot * g->ncores + (size_t)core)];
    /* stored either way: as conditional stores these were branches that
     * mispredicted often (GCC may not invent the store) */
    sp[0] = start < sp[0] ? start : sp[0];
    sp[1] = done > sp[1] ? done : sp[1];
    k->insns++;
    k->busy += busy;
    k->macs += macs;
    k->dram_bytes += dram_bytes;
}

static void schedule(engine *g, double t, int core, int agent)
{
    sim_evq_agent(&g->q, core * (ISA_NUNITS + 1) + agent, t);
}

/* Wake a unit at time t unless it already has an event pending. */
static void wake_unit(engine *g, sim_core *c, int u, double t)
{
    sim_unit_state *us = &c->ustate[u];
    if (us->scheduled)
        return;
    us->scheduled = 1;
    schedule(g, t > us->free_at ? t : us->free_at, c->id, u);
    /* the wake reads its head slot first, often a line the sequencer wrote
     * long before and out of cache by then: other events run meanwhile */
    __builtin_prefetch(&c->units[u].q[c->units[u].head]);
}

static void wake_seq(engine *g, sim_core *c, double t)
{
    if (c->seq_scheduled)
        return;
    c->seq_scheduled = 1;
    schedule(g, t > c->seq_time ? t : c->seq_time, c->id, AGENT_SEQ);
}

static int units_idle(const sim_core *c)
{
    for (int u = 0; u < ISA_NUNITS; u++)
        if (c->units[u].count || c->ustate[u].scheduled)
            return 0;
    return 1;
}

/* Register arithmetic wraps modulo 2^64 (docs/isa.md): the sum is taken
 * unsigned, where overflow is defined, and read back as two's complement. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* Record the slot's instruction, its registers resolved, in the trace. */
static void trace_slot(sim *s, int core, int u, const sim_slot *e, double start, double end, double done)
{
    if (s->opt.trace == SIM_TRACE_OFF)
        return;
    sim_qent r = {.index = e->index, .ready = e->ready};
    sim_slot_insn(e, &r.in);
    sim_trace_insn(s, core, u, &r, start, end, done);
}

/* With the race checker on: a token left above zero at a barrier or
 * fence is a signal no wait took, which a later kernel's wait on the same
 * token would take for its own (compiled kernels number their tokens
 * from 0 and leave every one at 0). */
static int check_tokens(sim *s, const sim_core *c, const char *at)
{
    for (int t = 0; sim_race_active(s) && t < s->cfg.tokens; t++)
        if (c->tokens[t])
            return sim_faultf(s, c->id, ISA_U_SEQ, c->pc,
                              "token %d is %" PRId64 " at a %s: a signal no wait took, which a later wait on it "
                              "would take for its own",
                              t, c->tokens[t], at);
    return 0;
}

/* Release the barrier when every core sits at it with idle units. */
/* At a barrier every core reached: when the cores wait at `host`
 * instructions (all of them, for one graph node), the host runs that op
 * now, with the chip idle, and *t moves past it. */
static int host_op(engine *g, double *t)
{
    sim *s = g->s;
    const isa_insn *in0 = &g->p->cores[0].insns[s->cores[0].pc];
    for (int i = 0; i < s->cfg.cores; i++) {
        const isa_insn *in = &g->p->cores[i].insns[s->cores[i].pc];
        if ((in->op == ISA_OP_HOST) != (in0->op == ISA_OP_HOST) || (in->op == ISA_OP_HOST && in->val != in0->val))
            return sim_faultf(s, i, ISA_U_SEQ, s->cores[i].pc,
                              "the cores meet at different barriers (a host op on some, not the same on all)");
    }
    if (in0->op != ISA_OP_HOST)
        return 0;
    if (!s->host_fn)
        return sim_faultf(s, 0, ISA_U_SEQ, s->cores[0].pc,
                          "host op (graph node %" PRId64 ") needs a runtime that runs host ops", in0->val);
    double cycles = 0;
    char msg[sizeof s->fault->msg - 64];
    msg[0] = 0;
    if (s->host_fn(s->host_ctx, s, g->p, in0->val, *t, &cycles, msg, sizeof msg))
        return sim_faultf(s, 0, ISA_U_SEQ, s->cores[0].pc, "host op: %s", msg);
    sim_trace_host(s, s->cores[0].pc, in0->val, *t, *t + cycles);
    s->st->host_ops++;
    s->st->host_cycles += cycles;
    *t += cycles;
    return 0;
}

static int try_barrier(engine *g)
{
    sim *s = g->s;
    double t = 0;
    for (int i = 0; i < s->cfg.cores; i++) {
        const sim_core *c = &s->cores[i];
        if (!c->at_barrier || !units_idle(c))
            return 0;
        if (c->seq_time > t)
            t = c->seq_time;
        for (int u = 0; u < ISA_NUNITS; u++)
            if (c->ustate[u].done_at > t)
                t = c->ustate[u].done_at;
    }
    t += s->cfg.barrier_cycles;
    for (int i = 0; i < s->cfg.cores; i++)
        if (check_tokens(s, &s->cores[i], "bar"))
            return -1;
    sim_race_barrier(s);
    if (host_op(g, &t))
        return -1;
    for (int i = 0; i < s->cfg.cores; i++) {
        sim_core *c = &s->cores[i];
        c->at_barrier = 0;
        c->pc++;
        c->seq_time = t;
        wake_seq(g, c, t);
    }
    return 0;
}

/* Release core c's fence when its units are idle: the sequencer goes on
 * sync_cycles after the last of them completes, the same local hand-off
 * as a token (no other core takes part, so no barrier_cycles). */
static int try_fence(engine *g, sim_core *c)
{
    sim *s = g->s;
    if (!units_idle(c))
        return 0;
    if (check_tokens(s, c, "fence"))
        return -1;
    double t = c->seq_time;
    for (int u = 0; u < ISA_NUNITS; u++)
        if (c->ustate[u].done_at > t)
            t = c->ustate[u].done_at;
    sim_race_fence(s, c);
    c->at_fence = 0;
    c->pc++;
    c->seq_time = t + s->cfg.sync_cycles;
    wake_seq(g, c, c->seq_time);
    return 0;
}

/* The fault of a unit instruction decode_insn gave no unit: a wild one,
 * or isa_check's message of a value isa_set could not store. */
static __attribute__((noinline, cold)) int no_unit_fault(sim *s, int core, long pc, const isa_insn *in)
{
    char msg[256] = "instruction names no unit";
    if (in->bad)
        isa_check(in, msg, sizeof msg);
    return sim_faultf(s, core, ISA_U_SEQ, pc, "%s", msg);
}

/* Out of the issue loop's way: a ring grows a few times in a sim's life. */
__attribute__((noinline, cold)) int sim_queue_grow(sim_queue *q, int depth)
{
    const int cap = q->cap + SIM_QUEUE_STEP < depth ? q->cap + SIM_QUEUE_STEP : depth;
    sim_slot *n = aligned_alloc(SIM_SLOT_ALIGN, (size_t)cap * sizeof *n);
    if (!n)
        return -1;
    for (int i = 0; i < q->count; i++) {
        int at = q->head + i;
        n[i] = q->q[at >= q->cap ? at - q->cap : at];
    }
    free(q->q);
    q->q = n;
    q->cap = cap;
    q->head = 0;
    return 0;
}

/* Issue core c's unit instructions from its pc on, until a sequencer
 * instruction, a full queue (*full set) or the stream's end: the
 * sequencer's hot path (the GEMM issues 16 k a launch), with its pc and
 * clock in registers (wake_unit writes the queue's memory, so a pointer's
 * fields were stored and loaded again for every instruction).  0, or -1
 * on a fault. */
static inline __attribute__((always_inline)) int issue_units(engine *g, sim_core *c, const isa_stream *str, int *full)
{
    sim *s = g->s;
    const int depth = s->cfg.queue_depth;
    const double step = s->cfg.seq_issue_cycles;
    const long n = (long)str->n;
    issue_rec *const dec = g->dec[c->id]; /* wake_unit's stores would have it loaded again */
    /* the limits in registers too: the slot stores below would have them
     * loaded again for every instruction */
    const uint64_t max_insns = g->max_insns;
    const double max_cycles = g->max_cycles;
    long pc = c->pc;
    double t = c->seq_time;
    int rc = 0;
    for (; pc < n; pc++, t += step) {
        const issue_rec *r = &dec[pc];
        const isa_unit u = (isa_unit)r->unit;
        if ((int)u >= ISA_NUNITS) { /* the sequencer's own (ISA_U_SEQ is the first past the units), or none */
            if (u != ISA_U_SEQ)
                rc = no_unit_fault(s, c->id, pc, &str->insns[pc]);
            break;
        }
        sim_queue *q = &c->units[u];
        if (q->count == q->cap && (q->cap == depth || sim_queue_grow(q, depth))) {
            if (q->cap != depth) {
                rc = sim_faultf(s, c->id, u, pc, "out of host memory (unit queue)");
                break;
            }
            c->seq_blocked_on = u;
            *full = 1;
            break;
        }
        if (g->issued + 1 > max_insns || t > max_cycles) { /* issue_limits says which, as for any issue */
            rc = issue_limits(g, c->id, u, pc, t);
            break;
        }
        g->issued++;
        int at = q->head + q->count; /* a wrap, not a division by cap */
        sim_slot *e = &q->q[at >= q->cap ? at - q->cap : at];
        e->in = &str->insns[pc];
        e->op = r->op;
        e->kslot = r->kslot;
        e->tok = r->tok;
        e->d = wrap_add(r->off[0], c->regs[r->reg[0]]);
        e->a = wrap_add(r->off[1], c->regs[r->reg[1]]);
        e->b = wrap_add(r->off[2], c->regs[r->reg[2]]);
        e->p = wrap_add(r->off[3], c->regs[r->reg[3]]);
        e->index = pc;
        e->ready = t;
        q->count++;
        wake_unit(g, c, u, t);
    }
    c->pc = pc;
    c->seq_time = t;
    return rc;
}

/* The sequencer: control instructions and dispatch, until a queue is
 * full, a barrier or fence is reached or the stream ends. */
static int run_seq(engine *g, sim_core *c, double t)
{
    sim *s = g->s;
    const isa_stream *str = c->id < g->p->ncores ? &g->p->cores[c->id] : NULL;
    c->seq_scheduled = 0;
    c->seq_time = t > c->seq_time ? t : c->seq_time; /* no branch, as kernel_charge's */
    while (!c->seq_done && !c->at_barrier && !c->at_fence) {
        int full = 0;
        if (str && (issue_units(g, c, str, &full) || full))
            return full ? 0 : -1;
        if (!str || c->pc >= (long)str->n) {
            if (c->nloops)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "stream ends inside a loop (missing endl)");
            c->seq_done = 1;
            break;
        }
        const isa_insn *in = &str->insns[c->pc];
        if (issue_limits(g, c->id, ISA_U_SEQ, c->pc, c->seq_time))
            return -1;
        c->seq_time += s->cfg.seq_issue_cycles;
        switch (in->op) {
        case ISA_OP_NOP:
            c->pc++;
            break;
        case ISA_OP_HALT:
            if (c->nloops)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "halt inside a loop");
            c->seq_done = 1;
            break;
        case ISA_OP_HOST:
            if (c->nloops)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "host inside a loop");
            /* a host op is a barrier first */
            /* fall through */
        case ISA_OP_BAR:
            c->at_barrier = 1;
            return try_barrier(g);
        case ISA_OP_FENCE:
            c->at_fence = 1;
            return try_fence(g, c);
        case ISA_OP_LI:
        case ISA_OP_ADDI:
            if (in->reg == 0)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "r0 is read-only");
            c->regs[in->reg] = wrap_add(in->op == ISA_OP_LI ? 0 : c->regs[in->reg], in->val);
            c->pc++;
            break;
        case ISA_OP_LOOP:
            if (c->nloops == SIM_MAX_LOOP_DEPTH)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "loops nested deeper than %d", SIM_MAX_LOOP_DEPTH);
            c->loops[c->nloops].start = c->pc + 1;
            c->loops[c->nloops].remaining = in->val - 1;
            c->nloops++;
            c->pc++;
            break;
        case ISA_OP_ENDL:
            if (!c->nloops)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "endl without loop");
            if (c->loops[c->nloops - 1].remaining > 0) {
                c->loops[c->nloops - 1].remaining--;
                c->pc = c->loops[c->nloops - 1].start;
            } else {
                c->nloops--;
                c->pc++;
            }
            break;
        default:
            return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "opcode %s is not a control instruction",
                              isa_info(in->op)->mnemonic);
        }
    }
    return 0;
}

static inline __attribute__((always_inline)) void token_inc(engine *g, sim_core *c, int64_t tok, double t)
{
    c->tokens[tok]++;
    for (int u = 0; u < ISA_NUNITS; u++)
        if (c->waiting_tok[u] == tok) {
            c->waiting_tok[u] = -1;
            wake_unit(g, c, u, t);
        }
}

/* What run_unit asks of its caller: the same unit again at its free_at,
 * or the core's sequencer at t, each the event the queue would pop next
 * (a schedule and a pop cost as much as a wait or a sig). */
enum { RUN_UNIT_AGAIN = 1, RUN_SEQ_NOW = 2 };

/* Wake core c's sequencer, blocked on unit u's full queue, after u took a
 * slot out at t: RUN_SEQ_NOW when that wake (at t or at the sequencer's
 * clock, if later) would be the next event popped (the GEMM: 1.5 k of its
 * 4.9 k sequencer runs a launch), u's own wake then queued first as it
 * would be, else 0, the sequencer queued. */
static int unblock_seq(engine *g, sim_core *c, int u, double t)
{
    sim_unit_state *us = &c->ustate[u];
    c->seq_blocked_on = -1;
    const double ts = t > c->seq_time ? t : c->seq_time; /* when wake_seq would queue it; run_seq(t) runs it then */
    if (!c->seq_scheduled && us->free_at >= ts && sim_evq_first(&g->q, ts)) {
        wake_unit(g, c, u, us->free_at);
        return RUN_SEQ_NOW;
    }
    wake_seq(g, c, t);
    return 0;
}

/* A unit instruction at t whose transfer signals a remote token at
 * tm->end: when the unit's own next wake is at that time too, queued
 * after the token event with nothing at that time queued between them
 * (the sequencer's wake, when u unblocks it, is at t < tm->end or at its
 * own clock), the wake carries the token: run_unit increments it first,
 * u still marked scheduled, as the token event popped just before would
 * have (the GEMM: every one of its 3.3 k token events a launch).  free_at: the unit's, once run_unit sets
 * it.  1 when carried, or 0. */
static int carry_token(sim_core *c, int u, double t, double free_at, const sim_timing *tm)
{
    sim_unit_state *us = &c->ustate[u];
    if (free_at != tm->end || !(tm->end > t) || us->scheduled || (c->seq_blocked_on == u && c->seq_time == tm->end))
        return 0;
    us->rtok_core = tm->remote_core;
    us->rtok = (int32_t)tm->remote_tok;
    return 1;
}

/* A unit at time t: run the head of its queue if it can.  -1 on a fault,
 * RUN_UNIT_AGAIN when its next wake (at free_at) would be the next event
 * popped (a fifth of the GEMM's unit runs), RUN_SEQ_NOW (unblock_seq),
 * or 0. */
static int run_unit(engine *g, sim_core *c, int u, double t)
{
    sim *s = g->s;
    sim_unit_state *us = &c->ustate[u];
    sim_queue *q = &c->units[u];
    if (us->rtok_core >= 0) { /* the token event carried (carry_token) */
        token_inc(g, &s->cores[us->rtok_core], us->rtok, t);
        us->rtok_core = -1;
    }
    us->scheduled = 0;
    if (!q->count) {
        if (c->at_barrier && try_barrier(g))
            return -1;
        if (c->at_fence && try_fence(g, c))
            return -1;
        return 0;
    }
    sim_slot *e = &q->q[q->head];
    if (e->ready > t) {
        wake_unit(g, c, u, e->ready);
        return 0;
    }
    /* t is not held to the cycle limit: every event's time is one already
     * held to it (an issue's clock, a completion) or a unit's free_at, and
     * an instruction that starts past the limit ends past it, which the
     * test of done below catches with the same fault */
    double dur, done;
    uint64_t macs = 0, dram_bytes = 0; /* what it did, for its kernel */
    if (e->op == ISA_OP_WAIT || e->op == ISA_OP_SIG) {
        const int32_t tok = e->tok;
        if (tok >= s->cfg.tokens)
            return sim_faultf(s, c->id, u, e->index, "token %" PRId64 " does not exist (the chip has %d)", (int64_t)e->in->tok,
                              s->cfg.tokens);
        if (e->op == ISA_OP_WAIT) {
            if (c->tokens[tok] == 0) {
                if (c->waiting_tok[u] < 0)
                    us->wait_since = t;
                c->waiting_tok[u] = tok;
                return 0;
            }
            if (us->wait_since >= 0) {
                us->stall += t - us->wait_since;
                us->wait_since = -1;
            }
            c->tokens[tok]--;
            if (sim_race_active(s)) /* a call per wait or signal, for nothing when timing only */
                sim_race_wait(s, c, u, tok);
        } else {
            if (us->done_at > t) { /* signal once the unit's transfers in flight are complete */
                us->scheduled = 1;
                schedule(g, us->done_at, c->id, u);
                return 0;
            }
            if (c->tokens[tok] + 1 > s->cfg.token_max)
                return sim_faultf(s, c->id, u, e->index, "token %d overflow (more than %" PRId64 ")", tok,
                                  s->cfg.token_max);
            if (sim_race_active(s))
                sim_race_signal(s, c, u, c, tok);
            token_inc(g, c, tok, t);
        }
        dur = s->cfg.sync_cycles;
        done = t + dur;
    } else {
        sim_timing tm = {.start = t, .end = t, .busy_end = -1, .remote_core = -1, .remote_tok = -1};
        if (past_cycles_min(g, c->id, u, e->index, e->in, t) || sim_exec(s, c, u, e, &tm))
            return -1;
        macs = tm.macs;
        dram_bytes = tm.dram_bytes;
        done = tm.end;
        dur = (tm.busy_end >= 0 ? tm.busy_end : tm.end) - t;
        s->st->insns++;
        if (tm.remote_core >= 0) {
            sim_core *dst = &s->cores[tm.remote_core];
            if (dst->tokens[tm.remote_tok] + 1 > s->cfg.token_max)
                return sim_faultf(s, c->id, u, e->index, "token %" PRId64 " of core %d overflows", tm.remote_tok,
                                  tm.remote_core);
            if (sim_race_active(s))
                sim_race_signal(s, c, u, dst, tm.remote_tok);
            if (!carry_token(c, u, t, t + dur, &tm))
                sim_evq_token(&g->q, tm.end, tm.remote_core, tm.remote_tok);
        }
    }
    if (past_cycles(g, c->id, u, e->index, done))
        return -1;
    trace_slot(s, c->id, u, e, t, t + dur, done);
    /* busy: the union of the instructions' [start, completion) spans, so a
     * DMA engine with transfers in flight counts as busy while they move */
    double covered = us->done_at > t ? us->done_at : t;
    if (done > covered)
        us->busy += done - covered;
    const int slot = e->kslot;
    if (slot >= 0)
        kernel_charge(g, slot, c->id, t, done, done > covered ? done - covered : 0, macs, dram_bytes);
    us->free_at = t + dur;
    us->done_at = done > us->done_at ? done : us->done_at;
    q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
    q->count--;
    if (c->seq_blocked_on == u && unblock_seq(g, c, u, t))
        return RUN_SEQ_NOW;
    if (!us->scheduled && us->rtok_core < 0 && sim_evq_first(&g->q, us->free_at))
        return RUN_UNIT_AGAIN;
    wake_unit(g, c, u, us->free_at);
    return 0;
}

static int all_done(const sim *s)
{
    for (int i = 0; i < s->cfg.cores; i++)
        if (!s->cores[i].seq_done || !units_idle(&s->cores[i]))
            return 0;
    return 1;
}

static void report_deadlock(sim *s)
{
    char buf[sizeof s->fault->msg];
    size_t n = (size_t)snprintf(buf, sizeof buf, "deadlock: nothing can proceed;");
    int first_core = -1, first_unit = ISA_U_SEQ;
    long first_index = -1;
    for (int i = 0; i < s->cfg.cores && n < sizeof buf; i++) {
        sim_core *c = &s->cores[i];
        for (int u = 0; u < ISA_NUNITS && n < sizeof buf; u++) {
            if (!c->units[u].count)
                continue;
            const sim_slot *e = &c->units[u].q[c->units[u].head];
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  " core %d %s #%ld waits on token %" PRId64 " (0, never signalled);", i,
                                  isa_unit_names[u], e->index, (int64_t)e->in->tok);
            if (first_core < 0) {
                first_core = i;
                first_unit = u;
                first_index = e->index;
            }
        }
        if ((c->at_barrier || c->at_fence) && n < sizeof buf) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, " core %d sequencer #%ld waits at %s;", i, c->pc,
                                  c->at_barrier ? "bar" : "fence");
            if (first_core < 0) {
                first_core = i;
                first_index = c->pc;
            }
        }
    }
    sim_faultf(s, first_core, first_unit, first_index, "%s", buf);
}

static void reset_cores(sim *s)
{
    for (int i = 0; i < s->cfg.cores; i++) {
        sim_core *c = &s->cores[i];
        memset(c->regs, 0, sizeof c->regs);
        c->pc = 0;
        c->seq_done = 0;
        c->at_barrier = 0;
        c->at_fence = 0;
        c->nloops = 0;
        c->lx_peak = 0;
        c->seq_time = 0;
        c->seq_scheduled = 0;
        c->seq_blocked_on = -1;
        for (int u = 0; u < ISA_NUNITS; u++) {
            c->units[u].head = c->units[u].count = 0;
            memset(&c->ustate[u], 0, sizeof c->ustate[u]);
            c->waiting_tok[u] = -1;
            c->ustate[u].wait_since = -1;
            c->ustate[u].rtok_core = -1;
        }
        memset(c->tokens, 0, (size_t)s->cfg.tokens * sizeof *c->tokens);
    }
}

/* The run ends when posted writes have reached DRAM too (after a fault,
 * rc, as well): the drain after the units' end is a slice of its own in
 * the trace, and held to the cycle limit as every instruction is. */
static int write_drain(engine *g, int rc)
{
    sim *s = g->s;
    const double units_end = s->st->cycles, drain = sim_dram_drain_time(s->dram) * s->cfg.clock_ghz;
    sim_trace_drain(s, units_end);
    if (drain <= units_end)
        return rc;
    s->st->cycles = drain;
    if (rc || drain <= g->max_cycles)
        return rc;
    return sim_faultf(s, -1, ISA_U_SEQ, -1,
                      "posted writes drain to DRAM until %.1f cycles, past the cycle limit (%.0f cycles; spyre run "
                      "--max-cycles N raises it, 0 removes it)",
                      drain, g->max_cycles);
}

int sim_engine_run(sim *s, const isa_program *p)
{
    engine g = {.s = s, .p = p};
    const double phase = s->opt.refresh_phase_ns;
    if (!(phase >= 0 && phase < s->cfg.dram_trefi_ns))
        return sim_faultf(s, -1, ISA_U_SEQ, -1, "refresh phase %g ns is outside [0, dram_trefi_ns = %g)", phase,
                          s->cfg.dram_trefi_ns);
    if (decode_begin(&g) || kernels_begin(&g)) {
        kernels_end(&g);
        decode_end(&g);
        return sim_faultf(s, -1, ISA_U_SEQ, -1, "out of host memory (kernel map)");
    }
    limits_begin(&g);
    reset_cores(s);
    sim_timing_reset(s);
    sim_race_reset(s);
    sim_trace_reset(s);
    sim_evq_init(&g.q, s->cfg.cores * (ISA_NUNITS + 1));
    for (int i = 0; i < s->cfg.cores; i++)
        wake_seq(&g, &s->cores[i], 0);
    int rc = 0;
    sim_event e;
    /* only the race checker finds races, and it runs only when on: the
     * flag, looked up once, spares every event a load */
    const int races = sim_race_active(s) != NULL;
    while (sim_evq_pop(&g.q, &e)) {
        if (e.agent < 0)
            token_inc(&g, &s->cores[e.core], e.tok, e.t);
        else {
            const unsigned a = (unsigned)e.agent; /* unsigned: a shift and a mask, no sign fix-up */
            sim_core *c = &s->cores[a / (ISA_NUNITS + 1)];
            const int u = (int)(a % (ISA_NUNITS + 1));
            if (u != AGENT_SEQ)
                while ((rc = run_unit(&g, c, u, e.t)) == RUN_UNIT_AGAIN && !(races && s->race_found))
                    e.t = c->ustate[u].free_at + 0.0; /* as the queue would give it: -0.0 pops as +0.0 */
            /* one call of run_seq, which the compiler keeps inline */
            if (u == AGENT_SEQ || (rc == RUN_SEQ_NOW && !(races && s->race_found)))
                rc = run_seq(&g, c, e.t);
            rc = rc < 0 ? rc : 0;
        }
        if (rc || (races && s->race_found)) {
            rc = -1;
            break;
        }
    }
    sim_pt_drain(s);
    if (!rc && !all_done(s)) {
        report_deadlock(s);
        rc = -1;
    }
    for (int i = 0; i < s->cfg.cores; i++) {
        sim_core *c = &s->cores[i];
        if (c->seq_time > s->st->cycles)
            s->st->cycles = c->seq_time;
        /* the run's end: the latest completion, found here rather than at
         * each (nothing reads it during the run; a maximum of times, which
         * are never NaN, in any order) */
        for (int u = 0; u < ISA_NUNITS; u++)
            if (c->ustate[u].done_at > s->st->cycles)
                s->st->cycles = c->ustate[u].done_at;
        if (i < SIM_MAX_CORES) {
            s->st->lx_peak[i] = c->lx_peak;
            for (int u = 0; u < ISA_NUNITS; u++) {
                s->st->unit_busy[i][u] = c->ustate[u].busy;
                s->st->unit_stall[i][u] = c->ustate[u].stall;
            }
        }
    }
    rc = write_drain(&g, rc);
    sim_evq_free(&g.q);
    kernels_fold(&g);
    kernels_end(&g);
    decode_end(&g);
    return rc;
}
