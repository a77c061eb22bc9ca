/* emit.c: the code-generation layer shared by the kernel generators:
 * program setup, the target description for cost models, and the
 * per-core emitter (LX, tokens, registers, instructions). */
#include "codegen.h"

#include <assert.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Target ---- */

/* A configuration value, or a fallback when it is unset (a hand-built
 * chip_config); the fallbacks are the shipped spyre.cfg values. */
static double or_default(double v, double def) { return v > 0 ? v : def; }

void cc_target_init(cc_target *t, const chip_config *cfg)
{
    memset(t, 0, sizeof *t);
    t->cfg = cfg;
    t->stick = cfg->stick_bytes;
    t->lanes16 = cfg->stick_bytes / 2;
    t->lanes32 = cfg->stick_bytes / 4;
    t->f32_sticks = cc_ceil_div(t->lanes16, t->lanes32);
    t->corelets = cfg->corelets < 2 ? (cfg->corelets < 1 ? 1 : cfg->corelets) : 2;
    t->pt_rows = (int64_t)or_default(cfg->pt_rows, 8);
    /* A pass of the array: pt_rows rows of A against pt_cols x pt_lanes columns of B. */
    t->pt_cols_per_pass = (int64_t)(or_default(cfg->pt_cols, 8) * or_default(cfg->pt_lanes, 8));
    /* A core's DMA streams over its ring stop. */
    t->dma_bytes_per_cycle = or_default(cfg->ring_bytes_per_cycle, cfg->stick_bytes);
    t->pt_insn_cycles = or_default(cfg->pt_issue_cycles, 8) + or_default(cfg->pt_fill_cycles, 16);
    t->dma_insn_cycles = or_default(cfg->dma_issue_cycles, 32);
    t->sync_cycles = or_default(cfg->sync_cycles, 1);
    /* Every channel streaming bursts back to back. */
    if (cfg->dram_channels > 0 && cfg->dram_burst_bytes && cfg->dram_burst_tck > 0 && cfg->dram_tck_ns > 0 &&
        cfg->clock_ghz > 0)
        t->dram_bytes_per_cycle = cfg->dram_channels * (double)cfg->dram_burst_bytes /
                                  (cfg->dram_burst_tck * cfg->dram_tck_ns) / cfg->clock_ghz;
    const double cyc_per_ns = or_default(cfg->clock_ghz, 1);
    t->dram_latency_cycles = (double)(cfg->dram_rp + cfg->dram_rcd + cfg->dram_cl) * cfg->dram_tck_ns * cyc_per_ns;
    t->dram_refresh_cycles = cfg->dram_trfc_ns * cyc_per_ns;
    if (cfg->dram_channels > 0 && cfg->dram_trefi_ns > 0)
        t->dram_refresh_every = cfg->dram_trefi_ns / cfg->dram_channels * cyc_per_ns;
}

/* The channels refresh in turn, one starting every dram_refresh_every
 * cycles somewhere (sim/dram.c, docs/dram.md).  A read of `bytes` lies in
 * as many channels as its interleave granules span; arriving at a random
 * time it finds one of them refreshing with probability channels x tRFC
 * / tREFI (at most 1) and waits on average half a refresh for it, and
 * each further refresh falling due on them while its data streams blocks
 * its channel for a whole tRFC.  On spyre (tRFC 420 cycles, one due on
 * some channel every 366) a read over every channel waits 210 + 1.15
 * cycles per cycle streamed: bert_base's K chunks of 16 KB on
 * spyre-4core took 451 cycles each without refresh, 785 with it. */
double cc_dram_wait(const cc_target *t, double bytes, double stream)
{
    const chip_config *g = t->cfg;
    if (t->dram_refresh_every <= 0 || bytes <= 0)
        return bytes > 0 ? t->dram_latency_cycles : 0;
    double chans = g->dram_interleave_bytes > 0 ? bytes / g->dram_interleave_bytes : g->dram_channels;
    chans = chans < 1 ? 1 : chans > g->dram_channels ? g->dram_channels : chans;
    const double every = t->dram_refresh_every * g->dram_channels / chans; /* a refresh due on them */
    const double busy = t->dram_refresh_cycles / every, due = stream / every;
    return t->dram_latency_cycles + t->dram_refresh_cycles * ((busy < 1 ? busy : 1) / 2 + (due < 1 ? due : 1));
}

void cc_split(int64_t total, int64_t parts, int64_t i, int64_t *start, int64_t *len)
{
    int64_t q = total / parts, r = total % parts;
    *start = i * q + (i < r ? i : r);
    *len = q + (i < r ? 1 : 0);
}

/* ---- Options ---- */

int cc_resolve_opts(const chip_config *cfg, const cc_gen_opts *opts, cc_gen_opts *out, char *err, size_t errlen)
{
    *out = opts ? *opts : CC_GEN_OPTS_DEFAULT;
    if (out->cores < 0 || out->cores > cfg->cores) {
        snprintf(err, errlen, "option cores=%d out of range [0, %d] (0: every core of %s)", out->cores, cfg->cores,
                 cfg->name);
        return -1;
    }
    if (out->lx_plan != 0 && out->lx_plan != 1) {
        snprintf(err, errlen, "option lx_plan=%d is neither 0 (intermediates in DRAM) nor 1 (in LX)", out->lx_plan);
        return -1;
    }
    if (out->cores == 0)
        out->cores = cfg->cores;
    return 0;
}

/* ---- Programs ---- */

isa_program *cc_program_new(const chip_config *cfg, const char *graph, isa_arena *arena, char *err, size_t errlen)
{
    if (cfg->cores < 1 || cfg->stick_bytes < 4 || cfg->stick_bytes % 4) {
        snprintf(err, errlen, "configuration %s: unusable (cores %d, stick_bytes %u)", cfg->name, cfg->cores,
                 cfg->stick_bytes);
        return NULL;
    }
    isa_program *p = isa_program_new(cfg->cores);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (arena)
        isa_program_share_arena(p, arena);
    else
        isa_program_arena(p, (size_t)1 << 32); /* address space: the Llama-8B prefill layer's code is some 35 MB */
    snprintf(p->config, sizeof p->config, "%s", cfg->name);
    p->lx_bytes = cfg->lx_bytes;
    p->stick_bytes = cfg->stick_bytes;
    if (!graph)
        return p;
    p->graph = malloc(strlen(graph) + 1);
    if (!p->graph) {
        isa_program_free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    strcpy(p->graph, graph);
    return p;
}

/* ---- Emitter ---- */

void cc_emit_begin(cc_emit *e, const chip_config *cfg, isa_program *p, int core, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->prog = p;
    e->core = e->phys = core;
    e->s = &p->cores[core];
    e->err = err;
    e->errlen = errlen;
}

int cc_emit_failed(const cc_emit *e) { return e->failed; }

void cc_emit_fail(cc_emit *e)
{
    e->failed = 1;
    memset(e->tok_fit, 0, sizeof e->tok_fit); /* cc_emit_tok's fast way closed: it does not test failed */
}

int cc_emit_error(cc_emit *e, const char *fmt, ...)
{
    if (e->failed)
        return -1;
    cc_emit_fail(e);
    isa_errf(e->err, e->errlen, "core %d: ", e->phys);
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(e->err, e->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void cc_kernel_begin(cc_emit *e, const char *name)
{
    if (e->kname) {
        cc_emit_error(e, "kernel %s begins inside kernel %s", name, e->kname);
        return;
    }
    e->kname = name;
    if (e->hooks) {
        e->sbase = e->s->n;
        e->s = e->hooks->begin(e->hooks->ctx, e->phys);
    }
    e->kfirst = e->s->n;
}

void cc_kernel_end(cc_emit *e)
{
    if (!e->kname) {
        cc_emit_error(e, "kernel end without a kernel");
        return;
    }
    if (e->s->n == e->kfirst)
        cc_emit_error(e, "kernel %s has no instructions", e->kname);
    const char *name = e->kname;
    e->kname = NULL;
    if (e->hooks) {
        isa_stream *s = e->s;
        e->s = &e->prog->cores[e->phys];
        e->sbase = 0;
        if (e->failed)
            s->n = 0; /* the scratch back, empty */
        e->hooks->end(e->hooks->ctx, e->phys, e->failed ? NULL : name, s);
    } else if (!e->failed) {
        isa_program_add_kernel(e->prog, name, e->phys, (long)e->kfirst, (long)e->s->n - 1);
    }
}

int64_t cc_lx_alloc(cc_emit *e, int64_t bytes, const char *what)
{
    if (e->failed)
        return -1;
    uint64_t sb = e->cfg->stick_bytes;
    uint64_t size = ((uint64_t)bytes + sb - 1) / sb * sb;
    uint64_t limit = e->lx_limit ? e->lx_limit : e->cfg->lx_usable_bytes;
    if (bytes <= 0 || e->lx_top + size > limit)
        return cc_emit_error(e, "LX budget exceeded allocating %s (%" PRId64 " bytes; %llu of %llu usable bytes in use)",
                             what, bytes, (unsigned long long)e->lx_top, (unsigned long long)limit);
    int64_t off = (int64_t)e->lx_top;
    e->lx_top += size;
    return off;
}

int cc_tok_alloc_slow(cc_emit *e, const char *what)
{
    return cc_emit_error(e, "out of sync tokens allocating %s (the chip gives a program %d per core)", what, cc_tokens(e->cfg));
}

int cc_reg_alloc(cc_emit *e)
{
    if (e->failed)
        return -1;
    if (e->nregs + 1 >= ISA_NREGS)
        return cc_emit_error(e, "out of address registers (r1..r%d)", ISA_NREGS - 1);
    return ++e->nregs;
}

/* The emitters build each instruction in place, at the end of the stream
 * (cc_new), and count it in once it checks (cc_commit): an instruction
 * is two cache lines, and copying each one in cost a third of emitting
 * it when it was larger. */
static inline __attribute__((always_inline)) isa_insn *cc_new(cc_emit *e, int op)
{
    static _Thread_local isa_insn sink; /* a failed (or dry-run) emitter's: it has no stream to write */
    isa_insn *in = e->failed ? &sink : isa_stream_room(e->s);
    isa_insn_init(in, op);
    return in;
}

/* cc_commit of an instruction out of its fields: the message (apart, so
 * that cc_commit, inline at every emitter, keeps no buffer for it). */
static __attribute__((noinline, cold)) void cc_commit_failed(cc_emit *e, const isa_insn *in)
{
    char msg[256];
    isa_check(in, msg, sizeof msg);
    cc_emit_error(e, "instruction %zu: %s", e->sbase + e->s->n, msg);
}

/* A ring instruction's core, of the kernel's division, as the chip's. */
static inline void cc_place(const cc_emit *e, isa_insn *in)
{
    if (e->phys != e->core && isa_info(in->op)->cls == ISA_C_RING) {
        /* the kernel names cores of its division; a placed one's lie `phys - core` on around the ring */
        const int64_t n = (int64_t)e->cfg->cores;
        isa_set(in, core, ((in->core + e->phys - e->core) % n + n) % n); /* in [0, cores) */
    }
}

/* cc_commit with fits the check of the instruction's format (isa_fits_FMT,
 * inline, where the emitter knows it: a check of the fields it just
 * stored). */
static inline __attribute__((always_inline)) void cc_commit_as(cc_emit *e, int (*fits)(const isa_insn *))
{
    if (e->failed)
        return;
    isa_insn *in = &e->s->insns[e->s->n];
    cc_place(e, in);
    if (!fits(in)) {
        cc_commit_failed(e, in);
        return;
    }
    e->s->n++;
}

static inline __attribute__((always_inline)) void cc_commit(cc_emit *e) { cc_commit_as(e, isa_fits); }

void cc_push(cc_emit *e, const isa_insn *in)
{
    if (e->failed)
        return;
    isa_insn_copy(isa_stream_room(e->s), in);
    cc_commit(e);
}

static void emit_reg(cc_emit *e, int op, int reg, int64_t v)
{
    isa_insn *in = cc_new(e, op);
    isa_set(in, reg, reg);
    in->val = v;
    cc_commit(e);
}

void cc_emit_li(cc_emit *e, int reg, int64_t v) { emit_reg(e, ISA_OP_LI, reg, v); }
void cc_emit_addi(cc_emit *e, int reg, int64_t v)
{
    if (v)
        emit_reg(e, ISA_OP_ADDI, reg, v);
}

void cc_emit_loop(cc_emit *e, int64_t n)
{
    if (e->depth >= ISA_MAX_LOOPS) {
        cc_emit_error(e, "loops nested deeper than %d", ISA_MAX_LOOPS);
        return;
    }
    isa_insn *in = cc_new(e, ISA_OP_LOOP);
    in->val = n;
    cc_commit(e);
    e->depth++;
}

void cc_emit_endl(cc_emit *e)
{
    if (e->depth <= 0) {
        cc_emit_error(e, "endl without loop");
        return;
    }
    cc_new(e, ISA_OP_ENDL);
    cc_commit(e);
    e->depth--;
}

void cc_emit_repeat(cc_emit *e, int64_t count, int unroll, void (*body)(void *ctx), void *ctx)
{
    if (unroll < 1)
        unroll = 1;
    int64_t iters = count / unroll;
    if (iters >= 2) {
        cc_emit_loop(e, iters);
        for (int i = 0; i < unroll; i++)
            body(ctx);
        cc_emit_endl(e);
        count -= iters * unroll;
    }
    for (; count > 0 && !e->failed; count--)
        body(ctx);
}

void cc_emit_halt(cc_emit *e)
{
    if (e->depth)
        cc_emit_error(e, "halt inside %d open loop(s)", e->depth);
    if (e->kname)
        cc_emit_error(e, "halt inside kernel %s", e->kname);
    cc_new(e, ISA_OP_HALT);
    cc_commit(e);
}

void cc_emit_bar(cc_emit *e)
{
    if (e->depth)
        cc_emit_error(e, "bar inside %d open loop(s)", e->depth);
    cc_new(e, ISA_OP_BAR);
    cc_commit(e);
}

void cc_emit_fence(cc_emit *e)
{
    if (e->depth)
        cc_emit_error(e, "fence inside %d open loop(s)", e->depth);
    cc_new(e, ISA_OP_FENCE);
    cc_commit(e);
}

/* Does wait or sig (op) on unit u fit for every token below hi?  Its
 * instruction is the op's default with u and tok set, and isa_fits checks
 * each field against an interval: when tokens 0 and hi - 1 fit, all
 * between do.  The answer is kept per (op, u) in e: isa_fits was a third
 * of emitting a token instruction (51,364 on BERT-base). */
static __attribute__((noinline)) int16_t tok_fit_of(const cc_emit *e, int op, isa_unit u)
{
    const int hi = cc_tokens(e->cfg);
    isa_insn t;
    isa_insn_init(&t, op);
    isa_set(&t, u, u);
    t.tok = 0;
    const int lo_fits = isa_fits(&t);
    isa_set(&t, tok, hi - 1);
    return (int16_t)(hi > 0 && lo_fits && isa_fits(&t) ? hi : -1);
}

static inline int tok_fits(cc_emit *e, int op, isa_unit u, int tok)
{
    if ((unsigned)u > ISA_U_SEQ)
        return 0;
    int16_t *fit = &e->tok_fit[op == ISA_OP_SIG][u];
    if (!*fit)
        *fit = tok_fit_of(e, op, u);
    return tok >= 0 && tok < *fit; /* (a negative one takes cc_commit's check and message) */
}

int cc_toks_fit(cc_emit *e, int op, isa_unit u)
{
    return !e->failed && (e->ntokens == 0 || tok_fits(e, op, u, e->ntokens - 1));
}

void cc_emit_tok_slow(cc_emit *e, int op, isa_unit u, int tok)
{
    /* the tokens above tok_cap no kernel takes: they signal across kernels */
    if (tok < 0 || (tok >= e->ntokens && !(e->tok_cap && tok >= e->tok_cap && tok < cc_tokens(e->cfg)))) {
        cc_emit_error(e, "token %d was never allocated", tok);
        return;
    }
    isa_insn *in = cc_new(e, op);
    isa_set(in, u, u);
    isa_set(in, tok, tok);
    if (!e->failed && tok_fits(e, op, u, tok))
        e->s->n++; /* cc_commit's check passes, and a sync op is no ring op to move */
    else
        cc_commit(e);
}

/* A DMA's or ring copy's run and loops from sh (levels past sh->levels
 * keep their defaults). */
static void set_shape(isa_insn *in, const cc_dma_shape *sh)
{
    isa_set(in, run, sh->run);
    for (int l = 0; l < sh->levels && l < ISA_MAX_LOOPS; l++) {
        isa_set(in, n[l], sh->n[l]);
        isa_set(in, ds[l], sh->ds[l]);
        isa_set(in, as[l], sh->as[l]);
    }
}

void cc_emit_dma(cc_emit *e, int op, isa_addr d, isa_addr a, const cc_dma_shape *sh)
{
    assert(isa_info(op) && isa_info(op)->format == ISA_FMT_ID_DMA); /* dma.ld, .st, .lx, .lxs: isa_fits_DMA's format */
    isa_insn *in = cc_new(e, op);
    in->d = d;
    in->a = a;
    set_shape(in, sh);
    cc_commit_as(e, isa_fits_DMA);
}

void cc_emit_ring(cc_emit *e, int op, int core, int tok, isa_addr d, isa_addr a, const cc_dma_shape *sh)
{
    if (sh->levels > 2) {
        cc_emit_error(e, "a ring transfer has 2 loop levels, not %d", sh->levels);
        return;
    }
    assert(isa_op_class(op) == ISA_C_RING); /* ring.send or ring.red: isa_fits_RING's format */
    isa_insn *in = cc_new(e, op);
    isa_set(in, core, core);
    isa_set(in, tok, tok);
    in->d = d;
    in->a = a;
    set_shape(in, sh);
    cc_commit_as(e, isa_fits_RING);
}

/* cc_emit_ring_like without a like to copy: cc_emit_ring, and the index
 * of what it committed. */
long cc_emit_ring_slow(cc_emit *e, int op, int core, int tok, isa_addr d, isa_addr a, const cc_dma_shape *sh)
{
    cc_emit_ring(e, op, core, tok, d, a, sh);
    return e->failed ? -1 : (long)e->s->n - 1;
}

void cc_emit_pt(cc_emit *e, const cc_pt_args *pa)
{
    isa_insn *in = cc_new(e, ISA_OP_PT_MM);
    isa_set(in, c, pa->c);
    isa_set(in, flags, pa->flags);
    in->d = pa->d;
    in->p = pa->p;
    in->a = pa->a;
    in->b = pa->b;
    isa_set(in, m, pa->m);
    isa_set(in, nn, pa->n);
    isa_set(in, k, pa->k);
    isa_set(in, ds[0], pa->ds);
    isa_set(in, ps, pa->ps);
    isa_set(in, as[0], pa->as);
    isa_set(in, bs[0], pa->bs);
    cc_commit_as(e, isa_fits_PT);
}

long cc_emit_pt_slow(cc_emit *e, const cc_pt_args *pa)
{
    cc_emit_pt(e, pa);
    return e->failed ? -1 : (long)e->s->n - 1;
}

void cc_emit_sfp(cc_emit *e, const cc_sfp_args *sa)
{
    isa_insn *in = cc_new(e, sa->op);
    isa_set(in, c, sa->c);
    isa_set(in, t, sa->t);
    isa_set(in, bm, sa->bm);
    isa_set(in, flags, sa->flags);
    in->d = sa->d;
    in->a = sa->a;
    in->b = sa->b;
    isa_set(in, n[0], sa->n0);
    isa_set(in, n[1], sa->n1);
    isa_set(in, ds[0], sa->ds0);
    isa_set(in, as[0], sa->as0);
    isa_set(in, bs[0], sa->bs0);
    isa_set(in, ds[1], sa->ds1);
    isa_set(in, as[1], sa->as1);
    isa_set(in, bs[1], sa->bs1);
    in->imm = sa->imm;
    isa_set(in, vl, sa->vl);
    if (e->tally) {
        const double sticks = (double)sa->n0 * (double)sa->n1;
        e->tally->insns++;
        *(isa_info(sa->op)->cost == ISA_COST_COMPLEX ? &e->tally->complex_sticks : &e->tally->simple_sticks) += sticks;
    }
    /* (an sfp.* op's format is SFP: its straight check, not isa_fits' call and switch) */
    if (isa_info(sa->op) && isa_info(sa->op)->format == ISA_FMT_ID_SFP)
        cc_commit_as(e, isa_fits_SFP);
    else
        cc_commit(e);
}
