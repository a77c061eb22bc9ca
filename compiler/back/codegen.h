/* codegen.h: the compiler's code-generation layer, used by the back half
 * (backend.c, be_*.c) and by the hand-shaped kernels of the benchmarks
 * (bench/shapes_*.c); not part of the public interface (cc.h).
 *
 * An emitter (cc_emit) writes one core's stream.  It owns that core's
 * resources: an LX bump allocator checked against the chip's usable LX,
 * sync tokens, address registers, and the loop nesting depth.  Every
 * instruction is encoded as it is pushed, so an operand that does not fit
 * its field is reported where it was generated instead of much later.
 * The first error sticks: later calls do nothing, and the generator checks
 * cc_emit_failed() once at the end.
 *
 * The target (cc_target) holds the numbers the cost models use, taken
 * from the chip configuration (cc_target_init). */
#ifndef CC_CODEGEN_H
#define CC_CODEGEN_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "cc.h"
#include "isa.h"
#include "chip.h"

/* ---- Target description for the cost models ---- */

typedef struct {
    const chip_config *cfg;
    int64_t stick;            /* bytes per stick */
    int64_t lanes16;          /* DL16 elements per stick */
    int64_t lanes32;          /* fp32 elements per stick */
    int64_t f32_sticks;       /* fp32 sticks a DL16 stick's elements take (a matmul's partial sums) */
    int corelets;             /* PT/SFP pairs per core the ISA can address (<= 2) */
    int64_t pt_rows;          /* rows of A one PT pass consumes */
    int64_t pt_cols_per_pass; /* output columns one PT pass produces */
    double dma_bytes_per_cycle; /* one core's DMA stream (its ring stop) */
    double pt_insn_cycles;    /* fixed cost of one pt.mm: issue, fill and drain */
    double dma_insn_cycles;   /* fixed cost of one DMA: descriptor setup */
    double sync_cycles;       /* a token hand-off between units */
    double dram_bytes_per_cycle; /* the chip's DRAM channels together, per core cycle (0: unknown) */
    double dram_latency_cycles;  /* a read that opens a row: precharge, activate, column access */
    double dram_refresh_cycles;  /* one channel's all-bank refresh (tRFC) */
    double dram_refresh_every;   /* cycles between two channels' refreshes (tREFI / channels) */
} cc_target;

void cc_target_init(cc_target *t, const chip_config *cfg);
/* The wait of a read of `bytes` whose data streams for `stream` cycles,
 * besides the streaming: a row's latency and the expected refresh wait
 * (docs/compiler.md, "DRAM waits"); 0 for no bytes. */
double cc_dram_wait(const cc_target *t, double bytes, double stream);

/* Split `total` items into `parts` nearly equal parts (the first
 * total % parts get one more); part i starts at *start and has *len. */
void cc_split(int64_t total, int64_t parts, int64_t i, int64_t *start, int64_t *len);
static inline int64_t cc_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t cc_round_up(int64_t a, int64_t b) { return cc_ceil_div(a, b) * b; }
static inline int64_t cc_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t cc_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- Options ---- */

/* Check the generator options against cfg and resolve them: out->cores is
 * the number of cores to use (1..cfg->cores), out->lx_plan 0 or 1.  NULL
 * opts are CC_GEN_OPTS_DEFAULT.  Returns 0, or -1 with a message in err. */
int cc_resolve_opts(const chip_config *cfg, const cc_gen_opts *opts, cc_gen_opts *out, char *err, size_t errlen);

/* ---- Programs ---- */

/* A program for every core of cfg, with its config fields set and a copy
 * of `graph` as its graph text (NULL: none), its streams growing in
 * `arena` (NULL: an arena of its own).  NULL (message in err) on
 * failure. */
isa_program *cc_program_new(const chip_config *cfg, const char *graph, isa_arena *arena, char *err, size_t errlen);

/* ---- Emitter ---- */

/* A dry run's SFP instructions, as the simulator times them (issue each,
 * then per stick at the op's class's rate): the row kernels' cost model. */
typedef struct {
    int64_t insns;
    double simple_sticks, complex_sticks;
} cc_sfp_tally;

typedef struct {
    const chip_config *cfg;
    isa_program *prog;
    int core;           /* the core of the open kernel's division (0 its first) */
    int phys;           /* the chip's core whose stream this is (core, unless the kernel is placed: be_work.base) */
    isa_stream *s;
    uint64_t lx_top;    /* next free LX byte */
    uint64_t lx_limit;  /* LX a kernel may allocate below (0: cfg->lx_usable_bytes); tensors kept in LX across kernels lie above */
    int ntokens;        /* tokens handed out */
    int tok_cap;        /* tokens a kernel may take (0: the chip's); the rest signal across kernels */
    int nregs;          /* registers handed out (r1..) */
    int depth;          /* open loops */
    const char *kname;  /* open kernel (cc_kernel_begin), or NULL */
    size_t kfirst;      /* its first instruction */
    int failed;
    char *err;
    size_t errlen;
    /* Or NULL: where a kernel's code goes while it is open, and who takes
     * it when it is complete, instead of the core's stream (codegen:
     * walked and rolled from a scratch stream while in cache, so that no
     * core's stream holds a kernel unrolled) */
    const struct cc_khooks *hooks;
    size_t sbase; /* the core's stream's length when the kernel began: instruction numbers in messages */
    cc_sfp_tally *tally; /* or NULL: where cc_emit_sfp counts what it emits (a dry run's, which emits nothing) */
    int16_t tok_fit[2][ISA_U_SEQ + 1]; /* of wait, sig on unit u: the tokens below it fit (cc_emit_tok; 0 not known or
                                          the emitter failed, -1 none) */
} cc_emit;

typedef struct cc_khooks {
    isa_stream *(*begin)(void *ctx, int core); /* the stream for the kernel's code */
    /* its code, complete: instructions [0, s->n) of the stream begin gave */
    void (*end)(void *ctx, int core, const char *name, isa_stream *s);
    void *ctx;
} cc_khooks;

void cc_emit_begin(cc_emit *e, const chip_config *cfg, isa_program *p, int core, char *err, size_t errlen);
int cc_emit_failed(const cc_emit *e);
/* Fail the emitter without a message (one is recorded already): later
 * calls do nothing. */
void cc_emit_fail(cc_emit *e);
/* Record an error (printf style) unless one is already recorded; returns -1. */
int cc_emit_error(cc_emit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Kernels: the instructions emitted from cc_kernel_begin to cc_kernel_end
 * form the kernel `name` (a string that lives until cc_kernel_end) of this
 * core, recorded in the program by cc_kernel_end.  Kernels do not nest
 * and hold at least one instruction; halt belongs to none. */
void cc_kernel_begin(cc_emit *e, const char *name);
void cc_kernel_end(cc_emit *e);

/* LX bytes, stick-aligned, within cfg->lx_usable_bytes; returns the LX
 * offset or -1 (error recorded) when the budget is exceeded. */
int64_t cc_lx_alloc(cc_emit *e, int64_t bytes, const char *what);
/* The tokens a program may use: the chip's, but below ISA_TOK_NONE, which
 * on ring.send means no token (a chip of 256 has token 255 for sig and
 * wait only, and a ring transfer meant to signal it would signal none). */
static inline int cc_tokens(const chip_config *cfg)
{
    return cfg->tokens < ISA_TOK_NONE ? (int)cfg->tokens : ISA_TOK_NONE;
}
/* cc_tok_alloc's way out of tokens or on a failed emitter: -1, the error recorded. */
int cc_tok_alloc_slow(cc_emit *e, const char *what);
/* A fresh sync token (0..cc_tokens(cfg)-1) or -1 (error recorded).
 * Inline: a ring product's core takes some 24 (6,420 calls on BERT-base). */
static inline int cc_tok_alloc(cc_emit *e, const char *what)
{
    if (!e->failed && e->ntokens < (e->tok_cap ? e->tok_cap : cc_tokens(e->cfg)))
        return e->ntokens++;
    return cc_tok_alloc_slow(e, what);
}
/* A fresh address register (1..15) or -1 (error recorded). */
int cc_reg_alloc(cc_emit *e);

/* Operand addresses. */
static inline isa_addr cc_abs(int64_t off) { return isa_addr_at(0, off); }
static inline isa_addr cc_reg(int reg, int64_t off) { return isa_addr_at(reg, off); }

/* Push a fully formed instruction (validated by encoding it). */
void cc_push(cc_emit *e, const isa_insn *in);

/* Control. */
void cc_emit_li(cc_emit *e, int reg, int64_t v);
/* r += v; nothing for v == 0. */
void cc_emit_addi(cc_emit *e, int reg, int64_t v);
void cc_emit_loop(cc_emit *e, int64_t n);
void cc_emit_endl(cc_emit *e);
/* Emit body(ctx) `count` times: as a counted loop whose body holds
 * `unroll` copies when it runs at least twice, the remainder straight.
 * The body is emitted (and so its generator-side bookkeeping runs) fewer
 * times than it executes: pick `unroll` so that one iteration leaves any
 * state the generator tracks (such as which of two buffers is next)
 * where it found it.  Each copy must leave the registers ready for the
 * next. */
void cc_emit_repeat(cc_emit *e, int64_t count, int unroll, void (*body)(void *ctx), void *ctx);
void cc_emit_halt(cc_emit *e);
/* bar: this core's units drain and every core reaches a bar. */
void cc_emit_bar(cc_emit *e);
/* fence: this core's units drain; no other core takes part. */
void cc_emit_fence(cc_emit *e);
/* wait or sig (op) the way cc_emit_tok's fast one is not open: a token
 * not allocated (the message), a failed emitter, a unit or token whose
 * fit is not known or fails, a full stream. */
void cc_emit_tok_slow(cc_emit *e, int op, isa_unit u, int tok);
/* A wait or sig: an allocated token that fits (tok_fit, known: the
 * defaults are made), in room the stream has, is the op's default with u
 * and tok set (isa_tok_insn), counted in without cc_commit.  Inline, so that a constant
 * unit's test folds away and no call saves registers: two in three of
 * BERT-base's instructions are waits and sigs, and the call was a sixth
 * of emitting one (docs/compiler-speed.md, "A round on branch ccwait"). */
static inline void cc_emit_tok(cc_emit *e, int op, isa_unit u, int tok)
{
    isa_stream *s = e->s;
    /* unsigned: a negative token fails too (ntokens >= 0) */
    /* (a failed emitter's tok_fit is 0: cc_emit_fail) */
    if ((unsigned)tok < (unsigned)e->ntokens && (unsigned)u <= ISA_U_SEQ && tok < e->tok_fit[op == ISA_OP_SIG][u] &&
        s->n < s->cap) {
        /* u <= ISA_U_SEQ, tok < tok_fit: both fit */
        isa_tok_insn(&s->insns[s->n++], op, (uint8_t)u, (uint8_t)tok);
        return;
    }
    cc_emit_tok_slow(e, op, u, tok);
}
/* Does a wait or sig (op) on unit u fit for every token handed out so
 * far (e not failed)?  Then a caller whose tokens are all handed out may
 * write its waits and sigs as isa_tok_insn, in room it has made. */
int cc_toks_fit(cc_emit *e, int op, isa_unit u);
static inline void cc_emit_wait(cc_emit *e, isa_unit u, int tok) { cc_emit_tok(e, ISA_OP_WAIT, u, tok); }
static inline void cc_emit_sig(cc_emit *e, isa_unit u, int tok) { cc_emit_tok(e, ISA_OP_SIG, u, tok); }

/* DMA: `levels` nested loops, innermost first; run sticks per step. */
typedef struct {
    int64_t run;
    int levels;
    int64_t n[ISA_MAX_LOOPS], ds[ISA_MAX_LOOPS], as[ISA_MAX_LOOPS];
} cc_dma_shape;
/* The common case: `groups` steps of `run` sticks, strides ds/as. */
static inline cc_dma_shape cc_dma_groups(int64_t run, int64_t groups, int64_t ds, int64_t as)
{
    cc_dma_shape sh = {run, 1, {groups, 1, 1, 1}, {ds, 0, 0, 0}, {as, 0, 0, 0}};
    return sh;
}
void cc_emit_dma(cc_emit *e, int op, isa_addr d, isa_addr a, const cc_dma_shape *sh);

/* ring.send / ring.red (op) of this core's LX at a to core `core`'s LX at
 * d, then token tok of that core += 1 (ISA_TOK_NONE: none); two loop levels of sh. */
void cc_emit_ring(cc_emit *e, int op, int core, int tok, isa_addr d, isa_addr a, const cc_dma_shape *sh);
/* cc_emit_ring, where like (>= 0) is the stream index of an instruction
 * cc_emit_ring committed earlier in this kernel with the same op, core,
 * tok and sh: the same instruction, emitted as a copy of that one with d
 * and a set.  Returns the index of the instruction committed (the next
 * call's like), -1 when none was (a failed emitter). */
long cc_emit_ring_slow(cc_emit *e, int op, int core, int tok, isa_addr d, isa_addr a, const cc_dma_shape *sh);
/* The copy's other fields are like's, which passed isa_fits_RING and
 * cc_place (its core is placed already): only the addresses are checked
 * (the format's twelve operands checked and the fields stored again were
 * most of emitting a send).  Without a like, with a failed emitter or an
 * address out of its field, cc_emit_ring's way (cc_emit_ring_slow),
 * message and all.  Inline: a call's saved registers were a third of
 * the copy's way.  The caller asserts its promise (cc_ring_like_keeps)
 * before each run of calls whose op, core, tok and sh stay the same:
 * each call's copy keeps it for the next (asserted per send, it was a
 * sixth of emitting one). */
static inline long cc_emit_ring_like(cc_emit *e, long like, int op, int core, int tok, isa_addr d, isa_addr a,
                                     const cc_dma_shape *sh)
{
    if (like >= 0 && !e->failed && isa_addr_fits(&d) && isa_addr_fits(&a)) {
        isa_insn *in = isa_stream_room(e->s);
        isa_insn_copy(in, &e->s->insns[like]);
        in->d = d;
        in->a = a;
        return (long)e->s->n++;
    }
    return cc_emit_ring_slow(e, op, core, tok, d, a, sh);
}

/* Instruction like (>= 0, committed earlier in this kernel) once more:
 * its copy, committed as like was (a ring send whose core, token,
 * addresses and shape are the same every time).  Returns its index (the
 * next call's like), -1 on a failed emitter, which emits nothing. */
static inline long cc_emit_again(cc_emit *e, long like)
{
    if (e->failed)
        return -1;
    isa_insn *in = isa_stream_room(e->s);
    isa_insn_copy(in, &e->s->insns[like]);
    return (long)e->s->n++;
}

/* cc_emit_ring_like's promise of like (< 0: none): a ring op of this
 * kernel with op, tok and sh's shape (its core: placed since). */
static inline int cc_ring_like_keeps(const cc_emit *e, long like, int op, int tok, const cc_dma_shape *sh)
{
    const isa_insn *l = like >= 0 ? &e->s->insns[like] : NULL;
    return !l || (l->op == op && l->tok == tok && l->run == sh->run && l->n[0] == sh->n[0] && l->as[0] == sh->as[0] &&
                  l->ds[0] == sh->ds[0]);
}

/* PT matrix multiply on corelet c (see the pt.mm operand description). */
typedef struct {
    int c;
    unsigned flags;      /* ISA_F_ACC | ISA_F_F32 */
    isa_addr d, p, a, b;
    int64_t m, n, k;
    int64_t ds, ps, as, bs;
} cc_pt_args;
void cc_emit_pt(cc_emit *e, const cc_pt_args *pa);
/* cc_emit_pt, returning the index of the instruction committed (-1:
 * none, a failed emitter): cc_emit_pt_like's way without a like. */
long cc_emit_pt_slow(cc_emit *e, const cc_pt_args *pa);
/* cc_emit_pt, where like (>= 0) is the stream index of a pt.mm committed
 * earlier in this kernel: when pa's corelet, flags, shape and strides are
 * like's (a corelet's products of one K chunk: only their addresses
 * differ), the same instruction, emitted as a copy of that one with its
 * addresses set and only they checked (the defaults' copy, seven checked
 * stores and the format's check were most of emitting a product).
 * Returns the index committed (the next call's like), -1 when none was. */
static inline long cc_emit_pt_like(cc_emit *e, long like, const cc_pt_args *pa)
{
    if (like >= 0 && !e->failed && isa_addr_fits(&pa->d) && isa_addr_fits(&pa->p) && isa_addr_fits(&pa->a) &&
        isa_addr_fits(&pa->b)) {
        const isa_insn *l = &e->s->insns[like];
        if (l->op == ISA_OP_PT_MM && l->c == pa->c && l->flags == (int32_t)pa->flags && l->m == pa->m && l->nn == pa->n && l->k == pa->k &&
            l->ds[0] == pa->ds && l->ps == pa->ps && l->as[0] == pa->as && l->bs[0] == pa->bs) {
            isa_insn *in = isa_stream_room(e->s);
            isa_insn_copy(in, &e->s->insns[like]); /* (l again: room may have moved the stream) */
            in->d = pa->d;
            in->p = pa->p;
            in->a = pa->a;
            in->b = pa->b;
            return (long)e->s->n++;
        }
    }
    return cc_emit_pt_slow(e, pa);
}

/* SFP instruction on corelet c: two loop levels (i0 inner, i1 outer). */
typedef struct {
    int op;
    int c;
    isa_dtype_dev t;
    isa_bmode bm;
    unsigned flags;      /* ISA_F_LANES for reductions */
    isa_addr d, a, b;
    int64_t n0, n1;
    int64_t ds0, as0, bs0, ds1, as1, bs1;
    float imm;
    int64_t vl;
} cc_sfp_args;
void cc_emit_sfp(cc_emit *e, const cc_sfp_args *sa);

#endif
