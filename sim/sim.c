/* sim.c: the chip (cores, LX, sparse DRAM) and the functional run loop:
 * each core's sequencer executes control instructions and dispatches the
 * rest to unit queues; units run their queues in order, ordered across
 * units by tokens and across cores by barriers. */
#include "internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_faultf(sim *s, int core, int unit, long index, const char *fmt, ...)
{
    if (!s->fault)
        return -1;
    s->fault->core = core;
    s->fault->unit = unit;
    s->fault->index = index;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->fault->msg, sizeof s->fault->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static void destroy_cores(sim *s)
{
    if (!s->cores)
        return;
    for (int i = 0; i < s->cfg.cores; i++) {
        free(s->cores[i].lx);
        free(s->cores[i].tokens);
        for (int u = 0; u < ISA_NUNITS; u++)
            free(s->cores[i].units[u].q);
    }
    free(s->cores);
}

sim *sim_create(const sim_config *cfg)
{
    sim *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->cores = calloc((size_t)cfg->cores, sizeof *s->cores);
    s->npages = (cfg->dram_bytes + cfg->dram_page_bytes - 1) / cfg->dram_page_bytes;
    s->pages = calloc(s->npages, sizeof *s->pages);
    while ((1ull << s->page_shift) < cfg->dram_page_bytes)
        s->page_shift++;
    if (!s->cores || !s->pages)
        goto fail;
    for (int i = 0; i < cfg->cores; i++) {
        sim_core *c = &s->cores[i];
        c->id = i;
        c->lx = calloc(1, cfg->lx_bytes);
        c->tokens = calloc((size_t)cfg->tokens, sizeof *c->tokens);
        if (!c->lx || !c->tokens)
            goto fail;
        for (int u = 0; u < ISA_NUNITS; u++)
            if (!(c->units[u].q = calloc((size_t)cfg->queue_depth, sizeof(sim_qent))))
                goto fail;
    }
    return s;
fail:
    sim_destroy(s);
    return NULL;
}

void sim_destroy(sim *s)
{
    if (!s)
        return;
    destroy_cores(s);
    if (s->pages)
        for (uint64_t i = 0; i < s->npages; i++)
            free(s->pages[i]);
    free(s->pages);
    free(s->pt_a);
    free(s->pt_b);
    free(s->pt_c);
    free(s);
}

const sim_config *sim_get_config(const sim *s) { return &s->cfg; }

uint8_t *sim_lx(sim *s, int core)
{
    return core >= 0 && core < s->cfg.cores ? s->cores[core].lx : NULL;
}

static uint8_t *page_for_write(sim *s, uint64_t page)
{
    if (!s->pages[page]) {
        s->pages[page] = calloc(1, s->cfg.dram_page_bytes);
        if (!s->pages[page]) {
            fprintf(stderr, "spyre: out of host memory for device DRAM\n");
            abort();
        }
    }
    return s->pages[page];
}

void sim_dram_copy_in(sim *s, uint64_t addr, const void *src, size_t len)
{
    const uint8_t *p = src;
    uint64_t mask = s->cfg.dram_page_bytes - 1;
    while (len) {
        uint64_t off = addr & mask;
        size_t n = (size_t)(s->cfg.dram_page_bytes - off);
        if (n > len)
            n = len;
        memcpy(page_for_write(s, addr >> s->page_shift) + off, p, n);
        addr += n;
        p += n;
        len -= n;
    }
}

void sim_dram_copy_out(sim *s, uint64_t addr, void *dst, size_t len)
{
    uint8_t *p = dst;
    uint64_t mask = s->cfg.dram_page_bytes - 1;
    while (len) {
        uint64_t off = addr & mask;
        size_t n = (size_t)(s->cfg.dram_page_bytes - off);
        if (n > len)
            n = len;
        const uint8_t *pg = s->pages[addr >> s->page_shift];
        if (pg)
            memcpy(p, pg + off, n);
        else
            memset(p, 0, n);
        addr += n;
        p += n;
        len -= n;
    }
}

int sim_dram_write(sim *s, uint64_t addr, const void *src, size_t len)
{
    if (addr > s->cfg.dram_bytes || len > s->cfg.dram_bytes - addr)
        return -1;
    sim_dram_copy_in(s, addr, src, len);
    return 0;
}

int sim_dram_read(sim *s, uint64_t addr, void *dst, size_t len)
{
    if (addr > s->cfg.dram_bytes || len > s->cfg.dram_bytes - addr)
        return -1;
    sim_dram_copy_out(s, addr, dst, len);
    return 0;
}

/* ---- run loop ---- */

static int queue_full(const sim_core *c, int u, int depth) { return c->units[u].count == depth; }

static void queue_push(sim_core *c, int u, int depth, const sim_qent *e)
{
    sim_queue *q = &c->units[u];
    q->q[(q->head + q->count) % depth] = *e;
    q->count++;
}

static int units_idle(const sim_core *c)
{
    for (int u = 0; u < ISA_NUNITS; u++)
        if (c->units[u].count)
            return 0;
    return 1;
}

static void resolve(const sim_core *c, isa_addr *a)
{
    a->off += c->regs[a->reg];
    a->reg = 0;
}

/* The sequencer: run control instructions and dispatch the others until
 * a queue is full, a barrier is reached, or the stream ends.  Returns 1 if
 * it made progress, 0 if not, -1 on a fault. */
static int seq_step(sim *s, sim_core *c, const isa_stream *str)
{
    int progress = 0;
    const int depth = s->cfg.queue_depth;
    while (!c->seq_done && !c->at_barrier) {
        if (c->pc >= (long)str->n) {
            if (c->nloops)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "stream ends inside a loop (missing endl)");
            c->seq_done = 1;
            return 1;
        }
        const isa_insn *in = &str->insns[c->pc];
        isa_unit u = isa_insn_unit(in);
        if (u != ISA_U_SEQ) {
            if ((int)u >= ISA_NUNITS)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "instruction names no unit");
            if (queue_full(c, u, depth))
                return progress;
            sim_qent e = {*in, c->pc};
            resolve(c, &e.in.d);
            resolve(c, &e.in.a);
            resolve(c, &e.in.b);
            resolve(c, &e.in.p);
            queue_push(c, u, depth, &e);
            c->pc++;
            progress = 1;
            continue;
        }
        progress = 1;
        switch (in->op) {
        case ISA_OP_NOP:
            c->pc++;
            break;
        case ISA_OP_HALT:
            if (c->nloops)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "halt inside a loop");
            c->seq_done = 1;
            break;
        case ISA_OP_BAR:
            c->at_barrier = 1;
            break;
        case ISA_OP_LI:
        case ISA_OP_ADDI:
            if (in->reg == 0)
                return sim_faultf(s, c->id, ISA_U_SEQ, c->pc, "r0 is read-only");
            c->regs[in->reg] = (in->op == ISA_OP_LI ? 0 : c->regs[in->reg]) + in->val;
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
    return progress;
}

/* Run a unit's queue until it is empty or blocked on a token. */
static int unit_step(sim *s, sim_core *c, int u)
{
    sim_queue *q = &c->units[u];
    const int depth = s->cfg.queue_depth;
    int progress = 0;
    while (q->count) {
        const sim_qent *e = &q->q[q->head];
        const isa_insn *in = &e->in;
        if (in->op == ISA_OP_WAIT || in->op == ISA_OP_SIG) {
            if (in->tok >= s->cfg.tokens)
                return sim_faultf(s, c->id, u, e->index, "token %" PRId64 " does not exist (the chip has %d)",
                                  in->tok, s->cfg.tokens);
            if (in->op == ISA_OP_WAIT) {
                if (c->tokens[in->tok] == 0)
                    return progress;
                c->tokens[in->tok]--;
            } else if (++c->tokens[in->tok] > s->cfg.token_max) {
                return sim_faultf(s, c->id, u, e->index, "token %" PRId64 " overflow (more than %" PRId64 ")",
                                  in->tok, s->cfg.token_max);
            }
        } else {
            if (sim_exec(s, c, e))
                return -1;
            s->st->insns++;
        }
        q->head = (q->head + 1) % depth;
        q->count--;
        progress = 1;
    }
    return progress;
}

static int all_done(const sim *s)
{
    for (int i = 0; i < s->cfg.cores; i++)
        if (!s->cores[i].seq_done || !units_idle(&s->cores[i]))
            return 0;
    return 1;
}

/* Release the barrier when every core still running sits at it with idle
 * units.  A core that halted never reaches it: that is a deadlock, which
 * the caller reports when nothing else can move. */
static int barrier_step(sim *s)
{
    int waiting = 0;
    for (int i = 0; i < s->cfg.cores; i++) {
        const sim_core *c = &s->cores[i];
        if (!c->at_barrier || !units_idle(c))
            return 0;
        waiting++;
    }
    if (!waiting)
        return 0;
    for (int i = 0; i < s->cfg.cores; i++) {
        s->cores[i].at_barrier = 0;
        s->cores[i].pc++;
    }
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
            const sim_qent *e = &c->units[u].q[c->units[u].head];
            n += (size_t)snprintf(buf + n, sizeof buf - n, " core %d %s #%ld waits on token %" PRId64 " (0, never signalled);",
                                  i, isa_unit_names[u], e->index, e->in.tok);
            if (first_core < 0) {
                first_core = i;
                first_unit = u;
                first_index = e->index;
            }
        }
        if (c->at_barrier && n < sizeof buf) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, " core %d sequencer #%ld waits at bar;", i, c->pc);
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
        c->nloops = 0;
        c->lx_peak = 0;
        for (int u = 0; u < ISA_NUNITS; u++)
            c->units[u].head = c->units[u].count = 0;
        memset(c->tokens, 0, (size_t)s->cfg.tokens * sizeof *c->tokens);
    }
}

int sim_run(sim *s, const isa_program *p, uint64_t dram_base, sim_stats *st, sim_fault *fault)
{
    sim_stats local;
    sim_fault lfault;
    if (!st)
        st = &local;
    if (!fault)
        fault = &lfault;
    memset(st, 0, sizeof *st);
    memset(fault, 0, sizeof *fault);
    fault->core = -1;
    fault->unit = ISA_U_SEQ;
    fault->index = -1;
    s->st = st;
    s->fault = fault;
    s->prog = p;
    s->dram_base = dram_base;
    s->seg_bytes = p->dram_bytes;
    if (p->ncores > s->cfg.cores)
        return sim_faultf(s, -1, ISA_U_SEQ, -1, "program has streams for %d cores, the chip has %d", p->ncores,
                          s->cfg.cores);
    if (dram_base + p->dram_bytes > s->cfg.dram_bytes)
        return sim_faultf(s, -1, ISA_U_SEQ, -1, "program DRAM segment does not fit device DRAM");
    reset_cores(s);
    static const isa_stream empty;
    for (;;) {
        int progress = 0;
        for (int i = 0; i < s->cfg.cores; i++) {
            sim_core *c = &s->cores[i];
            const isa_stream *str = i < p->ncores ? &p->cores[i] : &empty;
            int r = seq_step(s, c, str);
            if (r < 0)
                goto out_fault;
            progress |= r;
            for (int u = 0; u < ISA_NUNITS; u++) {
                r = unit_step(s, c, u);
                if (r < 0)
                    goto out_fault;
                progress |= r;
            }
        }
        progress |= barrier_step(s);
        if (all_done(s))
            break;
        if (!progress) {
            report_deadlock(s);
            goto out_fault;
        }
    }
    for (int i = 0; i < s->cfg.cores && i < 256; i++)
        st->lx_peak[i] = s->cores[i].lx_peak;
    return 0;
out_fault:
    return -1;
}
