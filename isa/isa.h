/* isa: the Spyre-like instruction set, defined by one table.
 *
 * Every instruction is 64 bytes (eight little-endian 64-bit words) and
 * its fields are packed LSB-first, in the order its format lists them:
 *
 *   bit 0        8                                                  511
 *       +--------+---------+---------+-- ... --+---------+-----------+
 *       | opcode | field 0 | field 1 |         | field N | zero pad  |
 *       +--------+---------+---------+-- ... --+---------+-----------+
 *
 * Field widths come from the format tables below (ISA_FMT_*).  An address
 * field is 44 bits: a 4-bit register number in its low bits, then a 40-bit
 * byte offset; the effective address is offset + r[reg], and r0 reads as 0.
 *
 * Units of a core: the sequencer (control instructions: loops, registers,
 * barrier, fence, halt) reads the core's stream in order and dispatches every
 * other instruction, with register operands resolved, to one unit's queue:
 *   dmai  DRAM->LX and LX->LX copies      pt0 pt1    matrix units (corelet 0/1)
 *   dmao  LX->DRAM copies                  sfp0 sfp1  vector units (corelet 0/1)
 *   ring  sends and reduce-sums to another core's LX
 * Each unit runs its own queue in order; units of one core run concurrently
 * and are ordered only by tokens (per-core counting semaphores: `sig`
 * increments, `wait` blocks while zero and then decrements), by `fence`
 * (this core's units) and by `bar` (every core's).
 *
 * Data: LX and DRAM hold sticks of 128 bytes (config stick_bytes): 64 DL16
 * or 32 fp32 values.  A 2-D tile of R rows whose stick dimension has G
 * sticks is stored as G groups of R sticks ("device layout": the group of
 * stick g holds column block g of every row); group strides are operands.
 */
#ifndef ISA_H
#define ISA_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ISA_INSN_BYTES 64
#define ISA_MAX_LOOPS 4   /* DMA loop levels; SFP and ring use the first 2 */
#define ISA_NREGS 16
#define ISA_MAX_RANK 6
#define ISA_NAME_MAX 64
/* The largest DRAM segment, LX, tensor or offset a program may declare: the
 * 48-bit addresses the simulator resolves (the assembler and the ELF reader
 * hold programs to it alike, so whatever one accepts the other does). */
#define ISA_BYTES_MAX (1ull << 48)
/* The largest stick a program may declare (assembler and ELF reader alike). */
#define ISA_STICK_MAX (1u << 16)
/* The largest count a 16-bit field holds (the format tables below): a DMA
 * or ring step's run of sticks, a loop level's n, pt.mm's m, n and k. */
#define ISA_COUNT_MAX 65535
/* ring.send's tok when the send bumps no token (the 8-bit field's top). */
#define ISA_TOK_NONE 255

/* Operand kinds. */
typedef enum {
    ISA_K_U,     /* unsigned integer */
    ISA_K_S,     /* signed integer (two's complement in `bits`) */
    ISA_K_ADDR,  /* register + byte offset */
    ISA_K_F32,   /* IEEE single, 32 bits */
    ISA_K_ENUM,  /* one name from a list */
    ISA_K_FLAGS, /* a set of names from a list, joined with | */
} isa_kind;

/* Concrete units of a core (the `u` operand of wait/sig names one). */
#define ISA_UNITS(X) X(DMAI, "dmai") X(DMAO, "dmao") X(PT0, "pt0") X(PT1, "pt1") \
    X(SFP0, "sfp0") X(SFP1, "sfp1") X(RING, "ring")
typedef enum {
#define X(id, s) ISA_U_##id,
    ISA_UNITS(X)
#undef X
    ISA_NUNITS,
    ISA_U_SEQ = ISA_NUNITS /* the sequencer itself: control instructions */
} isa_unit;

/* Unit class an opcode belongs to; PT and SFP add the corelet operand c. */
typedef enum { ISA_C_SEQ, ISA_C_SYNC, ISA_C_DMAI, ISA_C_DMAO, ISA_C_PT, ISA_C_SFP, ISA_C_RING } isa_class;

/* How an instruction's time is modelled (sim/timing.c): SFP ops cost
 * sfp_simple_cycles or sfp_complex_cycles per stick; the rest have their
 * own latency models. */
typedef enum { ISA_COST_FIXED, ISA_COST_SIMPLE, ISA_COST_COMPLEX } isa_cost;

/* Value types of SFP and ring operands (`t`). */
typedef enum { ISA_T_DL16, ISA_T_F32 } isa_dtype_dev;
/* DL16 has no infinity (its NINF reads back as NaN): +-2^30 stands in for
 * one, in the compiler's constants, the runtime's uploads and its checks
 * (docs/compiler.md, "Infinities"). */
#define ISA_DL16_INF 0x1p30f
/* DL16's largest finite value: biased exponent 63, fraction 510/512. */
#define ISA_DL16_MAX 0x1.ffp32f
/* A finite value DL16 cannot hold (isa_dl16_beyond: torch.finfo(f32).min
 * in a Hugging Face attention mask, -1e10), which would become NINF, is
 * +-2^29 on the device: still finite, below the stand-in, so twice it is
 * an infinity as in fp32, and softmax's x - max(x) stays inside DL16's
 * range.  isa_dl16_standin is the rule for constants and uploaded data:
 * infinities to the stand-in, these to 2^29, the rest unchanged. */
#define ISA_DL16_BIG 0x1p29f
/* The largest DL16 value below the stand-in ISA_DL16_INF: nan_to_num's
 * replacement for an infinity when the one asked for is beyond DL16
 * (PyTorch's default, float32's extremes), so that it ranks above every
 * finite value left, as those extremes do (2^29 would not). */
#define ISA_DL16_TOP 0x1.ff8p29f
int isa_dl16_beyond(double v);
float isa_dl16_standin(float v);
/* DL16's 10-bit significand holds every integer up to here exactly. */
#define ISA_DL16_EXACT_INT 1024

/* SFP operand-b modes (`bm`): a stick, one element broadcast to every lane,
 * or the immediate `imm` broadcast to every lane. */
typedef enum { ISA_BM_VEC, ISA_BM_ELEM, ISA_BM_IMM } isa_bmode;

/* PT flags: acc adds fp32 partial sums read at p; f32 writes d as fp32
 * partial sums instead of rounding to DL16.  SFP flags: lanes makes a
 * reduction also reduce across the lanes of the stick (one element out). */
#define ISA_F_ACC   1u
#define ISA_F_F32   2u
#define ISA_F_LANES 1u

/* Eight bytes, so that an instruction's four take 32 (at 16 they took 64
 * of its 192): the register in the low byte (a byte load), the offset in
 * the other 56 bits (a shift), both signed so that a value out of the
 * encoding's range (a register 16 or -1, a negative offset) stays out of
 * it for isa_check to refuse.  A computed offset is stored through
 * isa_set_off or isa_addr_at, never straight: 56 bits would wrap a wild
 * one (the reroll's addr_store is the one exception: it stores copies'
 * offsets straight and checks their bits together after).  Read back, the
 * field is a 56-bit type to gcc: `a.off * 4` with an int is worked out in
 * 56 bits (clang: 64), so arithmetic that could pass 2^55 first copies
 * the offset into an int64_t (legal offsets are below 2^40). */
typedef struct {
    int64_t reg : 8;  /* 0..15, r0 reads as zero */
    int64_t off : 56; /* byte offset */
} isa_addr;
/* The offset an unfit one is stored as: the field's least, so that code
 * reading .off back for arithmetic (offset + some delta, as the
 * restickify's runs and the KTIR emitters do) still gets a negative
 * offset, which isa_addr_fits refuses; -1 plus a delta had become a
 * small legal offset. */
#define ISA_OFF_UNFIT (-((int64_t)1 << 55))
/* a's offset := off, or ISA_OFF_UNFIT when the 56-bit field cannot hold
 * off (a wrapped offset could pass). */
static inline void isa_set_off(isa_addr *a, int64_t off)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion" /* the checked store itself */
    a->off = off;
#pragma GCC diagnostic pop
    if (a->off != off)
        a->off = ISA_OFF_UNFIT;
}
/* reg + off as an address operand, the register -1 and the offset
 * ISA_OFF_UNFIT when its field cannot hold its value (isa_addr_fits
 * refuses either). */
static inline isa_addr isa_addr_at(int reg, int64_t off)
{
    isa_addr a = {0, 0};
    a.reg = (int8_t)reg;
    if (a.reg != reg)
        a.reg = -1;
    isa_set_off(&a, off);
    return a;
}

/* A decoded instruction: one struct for every format; a format uses the
 * fields its table lists, the others keep their defaults.  Each number
 * operand's field is as narrow as its encoding allows (isa_operand.size
 * says which width): a few-bit one a uint8_t, a 16-bit count a
 * uint16_t, a stride or vl an int32_t, val an int64_t.  A compile holds
 * tens of thousands of instructions, and every byte of one is copies and
 * pages the kernel zeroes first: at 288 bytes (64-bit counts and strides)
 * a BERT-base compile took ~10% longer than at 192, and at 192 ~10%
 * longer than at 128 (5% more instructions, 9 huge pages faulted against
 * 7; docs/compiler-speed.md "A 128-byte instruction"); 128 bytes are also two
 * cache lines exactly for the simulator.  Every encoding fits, but a
 * value computed in 64 bits would wrap: a store of one goes through
 * isa_set (an address's offset through isa_set_off or isa_addr_at), so
 * that isa_check sees it out of range instead of wrapped (the assembler
 * and the ELF reader check a value before storing it). */
typedef struct isa_insn {
    int16_t op;        /* isa_op */
    uint16_t bad;      /* 1 + the byte offset of a field isa_set could not hold, else 0 */
    uint8_t tok;       /* token number */
    uint8_t c;         /* corelet (PT, SFP) */
    uint8_t u;         /* unit (wait, sig): isa_unit */
    uint8_t t;         /* value type: isa_dtype_dev */
    uint8_t core;      /* destination core (ring) */
    uint8_t reg;       /* register (li, addi) */
    uint8_t flags;     /* ISA_F_* */
    uint8_t bm;        /* isa_bmode */
    float imm;         /* SFP scalar operand */
    isa_addr d, a, b, p;
    int64_t val;       /* immediate (li, addi, loop count) */
    int32_t vl;        /* SFP reductions: valid elements along the reduced axis, 0 = all; dma.gather/scatter: rows */
    int32_t ps;        /* PT: group stride of p */
    uint16_t run;      /* contiguous sticks per innermost DMA/ring step */
    uint16_t n[ISA_MAX_LOOPS]; /* loop counts, innermost first */
    uint16_t m, nn, k; /* PT tile shape (nn is N) */
    int32_t ds[ISA_MAX_LOOPS]; /* byte strides of d per loop level */
    int32_t as[ISA_MAX_LOOPS]; /* byte strides of a */
    int32_t bs[2];     /* byte strides of b (no format has a third) */
    uint8_t spare[8];  /* zero: pads to two cache lines */
} isa_insn;

/* Store v in one of in's number fields narrower than 64 bits: every
 * store of a value computed wider (or signed into unsigned) goes through
 * isa_set, so that one the field cannot hold marks in bad instead of
 * wrapping, and isa_check refuses in naming the operand (a compile must
 * fail, never write a wrong program), as does the simulator at issue. */
static inline void isa_mark_bad(isa_insn *in, const void *field)
{
    if (!in->bad)
        in->bad = (uint16_t)((const char *)field - (const char *)in + 1);
}
static inline void isa_store32(isa_insn *in, int32_t *field, int64_t v)
{
    *field = (int32_t)v;
    if (*field != v)
        isa_mark_bad(in, field);
}
static inline void isa_store16(isa_insn *in, uint16_t *field, int64_t v)
{
    *field = (uint16_t)v;
    if (*field != v)
        isa_mark_bad(in, field);
}
static inline void isa_store8(isa_insn *in, uint8_t *field, int64_t v)
{
    *field = (uint8_t)v;
    if (*field != v)
        isa_mark_bad(in, field);
}
#define isa_set(in, fld, v) \
    _Generic(&(in)->fld, int32_t *: isa_store32, uint16_t *: isa_store16, uint8_t *: isa_store8)((in), &(in)->fld, (v))

/* Formats: the operand list of each, in encoding order.
 * O(name, kind, bits, field, default, min, names) */
#define ISA_O_ADDR(O, nm, f) O(nm, ISA_K_ADDR, 44, f, 0, 0, NULL)
#define ISA_FMT_NONE(O)
#define ISA_FMT_REG(O) O("r", ISA_K_U, 4, reg, 0, 1, NULL) O("v", ISA_K_S, 48, val, 0, INT64_MIN, NULL)
#define ISA_FMT_LOOP(O) O("n", ISA_K_U, 32, val, 1, 1, NULL)
#define ISA_FMT_HOST(O) O("node", ISA_K_U, 32, val, 0, 0, NULL)
#define ISA_FMT_TOK(O) O("u", ISA_K_ENUM, 3, u, 0, 0, isa_unit_names) O("t", ISA_K_U, 8, tok, 0, 0, NULL)
#define ISA_FMT_DMA(O) ISA_O_ADDR(O, "d", d) ISA_O_ADDR(O, "a", a) \
    O("run", ISA_K_U, 16, run, 1, 1, NULL) \
    O("n0", ISA_K_U, 16, n[0], 1, 1, NULL) O("ds0", ISA_K_S, 32, ds[0], 0, INT64_MIN, NULL) O("as0", ISA_K_S, 32, as[0], 0, INT64_MIN, NULL) \
    O("n1", ISA_K_U, 16, n[1], 1, 1, NULL) O("ds1", ISA_K_S, 32, ds[1], 0, INT64_MIN, NULL) O("as1", ISA_K_S, 32, as[1], 0, INT64_MIN, NULL) \
    O("n2", ISA_K_U, 16, n[2], 1, 1, NULL) O("ds2", ISA_K_S, 32, ds[2], 0, INT64_MIN, NULL) O("as2", ISA_K_S, 32, as[2], 0, INT64_MIN, NULL) \
    O("n3", ISA_K_U, 16, n[3], 1, 1, NULL) O("ds3", ISA_K_S, 32, ds[3], 0, INT64_MIN, NULL) O("as3", ISA_K_S, 32, as[3], 0, INT64_MIN, NULL)
#define ISA_FMT_PT(O) O("c", ISA_K_U, 1, c, 0, 0, NULL) O("f", ISA_K_FLAGS, 2, flags, 0, 0, isa_pt_flag_names) \
    ISA_O_ADDR(O, "d", d) ISA_O_ADDR(O, "p", p) ISA_O_ADDR(O, "a", a) ISA_O_ADDR(O, "b", b) \
    O("m", ISA_K_U, 16, m, 1, 1, NULL) O("n", ISA_K_U, 16, nn, 1, 1, NULL) O("k", ISA_K_U, 16, k, 1, 1, NULL) \
    O("ds", ISA_K_S, 32, ds[0], 0, INT64_MIN, NULL) O("ps", ISA_K_S, 32, ps, 0, INT64_MIN, NULL) \
    O("as", ISA_K_S, 32, as[0], 0, INT64_MIN, NULL) O("bs", ISA_K_S, 32, bs[0], 0, INT64_MIN, NULL)
#define ISA_FMT_SFP(O) O("c", ISA_K_U, 1, c, 0, 0, NULL) O("t", ISA_K_ENUM, 1, t, 0, 0, isa_dtype_names) \
    O("bm", ISA_K_ENUM, 2, bm, 0, 0, isa_bmode_names) O("f", ISA_K_FLAGS, 1, flags, 0, 0, isa_sfp_flag_names) \
    ISA_O_ADDR(O, "d", d) ISA_O_ADDR(O, "a", a) ISA_O_ADDR(O, "b", b) \
    O("n0", ISA_K_U, 16, n[0], 1, 1, NULL) O("ds0", ISA_K_S, 32, ds[0], 0, INT64_MIN, NULL) \
    O("as0", ISA_K_S, 32, as[0], 0, INT64_MIN, NULL) O("bs0", ISA_K_S, 32, bs[0], 0, INT64_MIN, NULL) \
    O("n1", ISA_K_U, 16, n[1], 1, 1, NULL) O("ds1", ISA_K_S, 32, ds[1], 0, INT64_MIN, NULL) \
    O("as1", ISA_K_S, 32, as[1], 0, INT64_MIN, NULL) O("bs1", ISA_K_S, 32, bs[1], 0, INT64_MIN, NULL) \
    O("imm", ISA_K_F32, 32, imm, 0, 0, NULL) O("vl", ISA_K_U, 24, vl, 0, 0, NULL)
#define ISA_FMT_RING(O) O("core", ISA_K_U, 8, core, 0, 0, NULL) O("tok", ISA_K_U, 8, tok, ISA_TOK_NONE, 0, NULL) \
    O("t", ISA_K_ENUM, 1, t, 0, 0, isa_dtype_names) ISA_O_ADDR(O, "d", d) ISA_O_ADDR(O, "a", a) \
    O("run", ISA_K_U, 16, run, 1, 1, NULL) \
    O("n0", ISA_K_U, 16, n[0], 1, 1, NULL) O("ds0", ISA_K_S, 32, ds[0], 0, INT64_MIN, NULL) O("as0", ISA_K_S, 32, as[0], 0, INT64_MIN, NULL) \
    O("n1", ISA_K_U, 16, n[1], 1, 1, NULL) O("ds1", ISA_K_S, 32, ds[1], 0, INT64_MIN, NULL) O("as1", ISA_K_S, 32, as[1], 0, INT64_MIN, NULL)
/* dma.gather and dma.scatter: b the fp32 indices in LX (stride bs0), rows
 * the table's row count (field vl); the table's row stride is as0 for a
 * gather (the table is its source a) and ds0 for a scatter (its
 * destination d). */
#define ISA_FMT_GATHER(O) ISA_O_ADDR(O, "d", d) ISA_O_ADDR(O, "a", a) ISA_O_ADDR(O, "b", b) \
    O("run", ISA_K_U, 16, run, 1, 1, NULL) O("rows", ISA_K_U, 24, vl, 1, 1, NULL) \
    O("n0", ISA_K_U, 16, n[0], 1, 1, NULL) O("ds0", ISA_K_S, 32, ds[0], 0, INT64_MIN, NULL) \
    O("as0", ISA_K_S, 32, as[0], 0, INT64_MIN, NULL) O("bs0", ISA_K_S, 32, bs[0], 4, INT64_MIN, NULL) \
    O("n1", ISA_K_U, 16, n[1], 1, 1, NULL) O("ds1", ISA_K_S, 32, ds[1], 0, INT64_MIN, NULL) O("as1", ISA_K_S, 32, as[1], 0, INT64_MIN, NULL)

#define ISA_FORMATS(F) F(NONE) F(REG) F(LOOP) F(HOST) F(TOK) F(DMA) F(PT) F(SFP) F(RING) F(GATHER)

/* The instruction table.
 * X(ID, mnemonic, opcode, format, class, cost, semantics); cost is the
 * SFP timing class (SIMPLE or COMPLEX per stick; FIXED for the others). 
 * DMA and ring loops: for i3<n3, i2<n2, i1<n1, i0<n0, copy run sticks
 * from a + sum(i_l * as_l) to d + sum(i_l * ds_l).
 * SFP elementwise: for i1<n1, i0<n0, for each lane e of the stick:
 * d[i0*ds0 + i1*ds1][e] = f(a[i0*as0 + i1*as1][e], b[...]) computed in fp32
 * and rounded to t; bm selects b as a stick, one element, or imm.
 * SFP reductions: for i1<n1, reduce the sticks a[i0*as0 + i1*as1], i0<n0,
 * lane by lane into one stick at d + i1*ds1; with f=lanes also across
 * lanes into one element at d + i1*ds1; only the first vl elements of the
 * reduced axis (i0*lanes + lane) count when vl > 0.
 * SFP restickify (sfp.rst): element-granular copy between stick layouts in
 * LX (transposes, lane shifts, partial-stick merges): for i1<n1, i0<n0,
 * l<vl, the element (t's size) at a + i0*as0 + i1*as1 + l*bs0 is copied to
 * d + i0*ds0 + i1*ds1 + l*bs1; addresses and strides are element-aligned.
 * SFP index values (sfp.iota): writes an affine function of the column
 * (i0*lanes + lane, lanes of type t per stick) and the row i1, with the
 * integer coefficients bs0 and bs1 and the offset imm: arange, triangular
 * masks and cat conditions without loading a constant tensor.
 * DMA gather (dma.gather): a row lookup (embedding): for i1<n1, i0<n0, the
 * fp32 value x at LX b + i0*bs0 must be an integer in [0, rows) (else a
 * fault); run sticks from DRAM a + x*as0 + i1*as1 go to LX d + i0*ds0 +
 * i1*ds1 (i1 walks the table's stick groups).
 * DMA scatter (dma.scatter): its mirror, a row store to data-dependent
 * addresses (a KV-cache update): for i1<n1, i0<n0, x as for dma.gather,
 * run sticks from LX a + i0*as0 + i1*as1 go to DRAM d + x*ds0 + i1*ds1.
 * Every index is checked before anything is written. */
#define ISA_TABLE(X) \
    X(NOP,   "nop",   0x00, NONE, ISA_C_SEQ, FIXED,  "nothing") \
    X(HALT,  "halt",  0x01, NONE, ISA_C_SEQ, FIXED,  "end of this core's stream; the core is done when its units drain") \
    X(BAR,   "bar",   0x02, NONE, ISA_C_SEQ, FIXED,  "wait until this core's units are idle and every core reached the barrier") \
    X(FENCE, "fence", 0x07, NONE, ISA_C_SEQ, FIXED,  "wait until this core's units are idle; no other core takes part") \
    X(HOST,  "host",  0x0a, HOST, ISA_C_SEQ, FIXED,  "a bar on every core, then the host runs node `node` of the program's graph (a host fallback op) on the tensors in DRAM before any core goes on") \
    X(LI,    "li",    0x03, REG, ISA_C_SEQ, FIXED,  "r[r] := v") \
    X(ADDI,  "addi",  0x04, REG, ISA_C_SEQ, FIXED,  "r[r] := r[r] + v, modulo 2^64 (wraps)") \
    X(LOOP,  "loop",  0x05, LOOP, ISA_C_SEQ, FIXED,  "run the instructions up to the matching endl n times (nesting depth 4)") \
    X(ENDL,  "endl",  0x06, NONE, ISA_C_SEQ, FIXED,  "end of the innermost loop body") \
    X(WAIT,  "wait",  0x08, TOK, ISA_C_SYNC, FIXED, "unit u blocks until token t > 0, then token t -= 1") \
    X(SIG,   "sig",   0x09, TOK, ISA_C_SYNC, FIXED, "unit u: token t += 1 once its earlier instructions are done") \
    X(DMA_LD, "dma.ld", 0x10, DMA, ISA_C_DMAI, FIXED, "LX[d..] := DRAM[a..], run sticks x 4 loop levels") \
    X(DMA_ST, "dma.st", 0x11, DMA, ISA_C_DMAO, FIXED, "DRAM[d..] := LX[a..], run sticks x 4 loop levels") \
    X(DMA_LX, "dma.lx", 0x12, DMA, ISA_C_DMAI, FIXED, "LX[d..] := LX[a..], run sticks x 4 loop levels") \
    X(DMA_LXS, "dma.lxs", 0x14, DMA, ISA_C_DMAO, FIXED, "LX[d..] := LX[a..] on the store engine (a result kept in LX past its kernel), run sticks x 4 loop levels") \
    X(DMA_GATHER, "dma.gather", 0x13, GATHER, ISA_C_DMAI, FIXED, "for i1<n1, i0<n0: LX[d + i0*ds0 + i1*ds1..] := DRAM[a + x*as0 + i1*as1..], run sticks, x = fp32 LX[b + i0*bs0], an integer in [0, rows)") \
    X(DMA_SCATTER, "dma.scatter", 0x15, GATHER, ISA_C_DMAO, FIXED, "for i1<n1, i0<n0: DRAM[d + x*ds0 + i1*ds1..] := LX[a + i0*as0 + i1*as1..], run sticks, x = fp32 LX[b + i0*bs0], an integer in [0, rows)") \
    X(PT_MM, "pt.mm", 0x20, PT, ISA_C_PT, FIXED,   "d[m x n] := (f&acc ? p : 0) + a[m x k] * b[k x n], fp32 sums, d in DL16 or fp32 (f&f32)") \
    X(SFP_MOV,   "sfp.mov",   0x30, SFP, ISA_C_SFP, SIMPLE, "d := a") \
    X(SFP_NEG,   "sfp.neg",   0x31, SFP, ISA_C_SFP, SIMPLE, "d := -a") \
    X(SFP_EXP,   "sfp.exp",   0x32, SFP, ISA_C_SFP, COMPLEX, "d := exp(a)") \
    X(SFP_LOG,   "sfp.log",   0x33, SFP, ISA_C_SFP, COMPLEX, "d := log(a)") \
    X(SFP_SQRT,  "sfp.sqrt",  0x34, SFP, ISA_C_SFP, COMPLEX, "d := sqrt(a)") \
    X(SFP_RSQRT, "sfp.rsqrt", 0x35, SFP, ISA_C_SFP, COMPLEX, "d := 1 / sqrt(a)") \
    X(SFP_RECIP, "sfp.recip", 0x36, SFP, ISA_C_SFP, COMPLEX, "d := 1 / a") \
    X(SFP_TANH,  "sfp.tanh",  0x37, SFP, ISA_C_SFP, COMPLEX, "d := tanh(a)") \
    X(SFP_SIGM,  "sfp.sigm",  0x38, SFP, ISA_C_SFP, COMPLEX, "d := 1 / (1 + exp(-a))") \
    X(SFP_GELU,  "sfp.gelu",  0x39, SFP, ISA_C_SFP, COMPLEX, "d := a * (1 + erf(a / sqrt 2)) / 2") \
    X(SFP_GELUT, "sfp.gelut", 0x3a, SFP, ISA_C_SFP, COMPLEX, "d := a * (1 + tanh(sqrt(2/pi) * (a + 0.044715 a^3))) / 2") \
    X(SFP_SILU,  "sfp.silu",  0x3b, SFP, ISA_C_SFP, COMPLEX, "d := a / (1 + exp(-a))") \
    X(SFP_RELU,  "sfp.relu",  0x3c, SFP, ISA_C_SFP, SIMPLE, "d := max(a, 0)") \
    X(SFP_ERF,   "sfp.erf",   0x3d, SFP, ISA_C_SFP, COMPLEX, "d := erf(a)") \
    X(SFP_ABS,   "sfp.abs",   0x3e, SFP, ISA_C_SFP, SIMPLE, "d := |a|") \
    X(SFP_SIN,   "sfp.sin",   0x3f, SFP, ISA_C_SFP, COMPLEX, "d := sin(a)") \
    X(SFP_COS,   "sfp.cos",   0x52, SFP, ISA_C_SFP, COMPLEX, "d := cos(a)") \
    X(SFP_ADD,   "sfp.add",   0x40, SFP, ISA_C_SFP, SIMPLE, "d := a + b") \
    X(SFP_SUB,   "sfp.sub",   0x41, SFP, ISA_C_SFP, SIMPLE, "d := a - b") \
    X(SFP_MUL,   "sfp.mul",   0x42, SFP, ISA_C_SFP, SIMPLE, "d := a * b") \
    X(SFP_DIV,   "sfp.div",   0x43, SFP, ISA_C_SFP, COMPLEX, "d := a / b") \
    X(SFP_MAX,   "sfp.max",   0x44, SFP, ISA_C_SFP, SIMPLE, "d := max(a, b), NaN if either is") \
    X(SFP_MIN,   "sfp.min",   0x45, SFP, ISA_C_SFP, SIMPLE, "d := min(a, b), NaN if either is") \
    X(SFP_POW,   "sfp.pow",   0x46, SFP, ISA_C_SFP, COMPLEX, "d := a ^ b") \
    X(SFP_EQ,    "sfp.eq",    0x47, SFP, ISA_C_SFP, SIMPLE, "d := a == b ? 1 : 0") \
    X(SFP_NE,    "sfp.ne",    0x48, SFP, ISA_C_SFP, SIMPLE, "d := a != b ? 1 : 0") \
    X(SFP_LT,    "sfp.lt",    0x49, SFP, ISA_C_SFP, SIMPLE, "d := a < b ? 1 : 0") \
    X(SFP_LE,    "sfp.le",    0x4a, SFP, ISA_C_SFP, SIMPLE, "d := a <= b ? 1 : 0") \
    X(SFP_GT,    "sfp.gt",    0x4b, SFP, ISA_C_SFP, SIMPLE, "d := a > b ? 1 : 0") \
    X(SFP_GE,    "sfp.ge",    0x4c, SFP, ISA_C_SFP, SIMPLE, "d := a >= b ? 1 : 0") \
    X(SFP_SEL,   "sfp.sel",   0x4d, SFP, ISA_C_SFP, SIMPLE, "d := d != 0 ? a : b (d is read first: the condition)") \
    X(SFP_RSUM,  "sfp.rsum",  0x50, SFP, ISA_C_SFP, SIMPLE, "d := sum of a over i0 (and lanes with f=lanes), fp32 accumulation") \
    X(SFP_RMAX,  "sfp.rmax",  0x51, SFP, ISA_C_SFP, SIMPLE, "d := max of a over i0 (and lanes with f=lanes), NaN if any is") \
    X(SFP_CVT,   "sfp.cvt",   0x58, SFP, ISA_C_SFP, SIMPLE, "d := a converted from type t to the other type (DL16 <-> fp32); strides are per operand") \
    X(SFP_RST,   "sfp.rst",   0x59, SFP, ISA_C_SFP, SIMPLE, "restickify: element d + i0*ds0 + i1*ds1 + l*bs1 := element a + i0*as0 + i1*as1 + l*bs0, l < vl (0: a stick's lanes); bits copied") \
    X(SFP_IOTA,  "sfp.iota",  0x5a, SFP, ISA_C_SFP, SIMPLE, "index values: lane e of stick d + i0*ds0 + i1*ds1 := imm + bs0*(i0*lanes + e) + bs1*i1, rounded to t; a, b unused") \
    X(RING_SEND, "ring.send", 0x60, RING, ISA_C_RING, FIXED, "core's LX[d..] := LX[a..]; then token tok of that core += 1 (tok 255: none)") \
    X(RING_RED,  "ring.red",  0x61, RING, ISA_C_RING, FIXED, "core's LX[d..] += LX[a..] as type t; then token tok of that core += 1")

typedef enum {
#define X(id, mn, opc, fmt, cls, cost, sem) ISA_OP_##id,
    ISA_TABLE(X)
#undef X
    ISA_NOPS
} isa_op;

typedef enum {
#define F(id) ISA_FMT_ID_##id,
    ISA_FORMATS(F)
#undef F
    ISA_NFMTS
} isa_format;

typedef struct {
    const char *name;
    isa_kind kind;
    int bits;
    size_t offset;        /* of the field in isa_insn */
    size_t size;          /* of the field: 1, 2, 4 or 8 bytes (1 and 2 unsigned; F32 4, ADDR isa_addr) */
    int64_t def;          /* value when the assembler text omits it */
    int64_t min;          /* smallest legal value (unsigned and signed kinds) */
    const char *const *names; /* ENUM and FLAGS: NULL-terminated */
} isa_operand;

typedef struct {
    const char *mnemonic;
    uint8_t opcode;
    isa_format format;
    isa_class cls;
    isa_cost cost;
    const char *semantics;
    const isa_operand *operands;
    int noperands;
} isa_opinfo;

/* (Sized, NULL included, so that isa_fits_FMT's ranges are constants; a
 * definition of another size does not compile.) */
extern const char *const isa_unit_names[ISA_NUNITS + 1];
extern const char *const isa_dtype_names[3];
extern const char *const isa_bmode_names[4];
extern const char *const isa_pt_flag_names[3];
extern const char *const isa_sfp_flag_names[2];
/* Of a NULL-terminated name table (these, isa_role_names, ...): how many
 * names it holds; the index of s in it, or -1. */
int isa_name_count(const char *const *names);
int isa_name_index(const char *const *names, const char *s);

/* The op table and each op's default instruction, NULL until the first
 * look-up makes them; isa_info and isa_insn_init read them inline (a call
 * each, with its check that the table is made, was 3% of a compile: a
 * compile asks for millions). */
extern const isa_opinfo *isa_ops_made;
extern const isa_insn *isa_insn_defaults;
/* isa_info's slow path: makes the table, then looks op up. */
const isa_opinfo *isa_info_first(int op);
/* op's entry of the table, or NULL when there is no such op. */
static inline const isa_opinfo *isa_info(int op)
{
    if (isa_ops_made && (unsigned)op < ISA_NOPS)
        return &isa_ops_made[op];
    return isa_info_first(op);
}
/* op's class, from the table as compiled (isa_info's is a load through
 * the table made at run time, and its check that it is made): codegen's
 * walk asks it of every instruction it measures.  ISA_C_SEQ when there
 * is no such op. */
static inline isa_class isa_op_class(int op)
{
    static const uint8_t cls[ISA_NOPS] = {
#define X(id, mn, opc, fmt, cl, cost, sem) cl,
        ISA_TABLE(X)
#undef X
    };
    return (unsigned)op < ISA_NOPS ? (isa_class)cls[op] : ISA_C_SEQ;
}
/* Opcode number -> op, or -1. */
int isa_op_from_opcode(unsigned opcode);
/* Mnemonic -> op, or -1. */
int isa_op_from_mnemonic(const char *s);

/* *dst = *src, in 16-byte moves: compilers copy a struct this big with
 * `rep movsq`, which (at 288 bytes) took twice as long (13-18 ns against
 * 6-9 ns, hot or not), and a compile copies one per instruction it
 * emits (isa_insn_init's default) and per instruction it rolls. */
static inline void isa_insn_copy(isa_insn *dst, const isa_insn *src)
{
    typedef int64_t chunk __attribute__((vector_size(16), aligned(8), may_alias));
    _Static_assert(sizeof(isa_insn) == 8 * sizeof(chunk), "isa_insn is 8 16-byte chunks");
    chunk *d = (chunk *)dst;
    const chunk *s = (const chunk *)src;
#pragma GCC unroll 8 /* sizeof(isa_insn) / 16 */
    for (size_t i = 0; i < sizeof *dst / sizeof *d; i++)
        d[i] = s[i];
}
/* An instruction with every field at its default. */
static inline void isa_insn_init(isa_insn *in, int op)
{
    if (!isa_insn_defaults)
        isa_info_first(op);
    isa_insn_copy(in, &isa_insn_defaults[op]);
}
/* A wait or sig (op) of unit u on token tok, every other field at its
 * default (insn_build's for the TOK format: zero, but the loop counts,
 * run and the PT shape, 1), stored as zeros and those fields instead of
 * a copy of the op's default: codegen emits one for two in three of the
 * instructions it makes, and the copy's eight loads were a quarter of
 * emitting one.  tests/test_isa.c checks it against isa_insn_init. */
static inline void isa_tok_insn(isa_insn *in, int op, uint8_t u, uint8_t tok)
{
    typedef int64_t chunk __attribute__((vector_size(16), aligned(8), may_alias));
    chunk *d = (chunk *)in;
    const chunk z = {0, 0};
#pragma GCC unroll 8 /* sizeof(isa_insn) / 16 */
    for (size_t i = 0; i < sizeof *in / sizeof *d; i++)
        d[i] = z;
    in->op = (int16_t)op;
    in->u = u;
    in->tok = tok;
    in->run = 1;
    for (int i = 0; i < ISA_MAX_LOOPS; i++)
        in->n[i] = 1;
    in->m = in->nn = in->k = 1;
}
/* Unit that executes instruction in of class cls (ISA_U_SEQ for
 * control): for a caller that knows the class already.  Inline: codegen's
 * walk asks it of every DMA and ring instruction it measures. */
static inline isa_unit isa_class_unit(isa_class cls, const isa_insn *in)
{
    switch (cls) {
    case ISA_C_SEQ: return ISA_U_SEQ;
    case ISA_C_SYNC: return (isa_unit)in->u;
    case ISA_C_DMAI: return ISA_U_DMAI;
    case ISA_C_DMAO: return ISA_U_DMAO;
    case ISA_C_PT: return in->c ? ISA_U_PT1 : ISA_U_PT0;
    case ISA_C_SFP: return in->c ? ISA_U_SFP1 : ISA_U_SFP0;
    case ISA_C_RING: return ISA_U_RING;
    }
    return ISA_U_SEQ;
}
/* Unit that executes an instruction (ISA_U_SEQ for control). */
static inline isa_unit isa_insn_unit(const isa_insn *in) { return isa_class_unit(isa_info(in->op)->cls, in); }

/* Encode into 64 bytes; fails (returns -1, message in err) when an operand
 * does not fit its field or is below its minimum. */
int isa_encode(const isa_insn *in, uint8_t out[ISA_INSN_BYTES], char *err, size_t errlen);
/* isa_encode's operand checks alone (every operand fits its field): 0, or
 * -1 with the same message. */
int isa_check(const isa_insn *in, char *err, size_t errlen);
/* isa_check without its message: 1 when every operand fits its field. */
int isa_fits(const isa_insn *in);
/* Bits of an address operand's offset: it is in [0, 2^ISA_ADDR_OFF_BITS). */
#define ISA_ADDR_OFF_BITS 40
/* Does address operand a fit its field (a register r0..r15, an offset in range)? */
static inline int isa_addr_fits(const isa_addr *a)
{
    return ((uint64_t)a->reg < ISA_NREGS) & ((uint64_t)a->off < (1ull << ISA_ADDR_OFF_BITS));
}
/* isa_fits of an instruction of format FMT (isa_fits_RING, ...): straight
 * code made from the format's operand rows, each range a constant of the
 * row's kind, bits, min and names, so that a check is a compare per
 * operand and no load from a table (a loop over per-op tables of offsets
 * and ranges was 149 instructions a pt.mm).  Inline: an emitter that
 * knows its format checks what it just stored (every emitted instruction
 * is checked).  v is in [lo, lo + span] exactly when (uint64)(v - lo) <=
 * span: no branch. */
#define ISA_FIT_SPAN(v, lo, span) ((uint64_t)(int64_t)(v) - (uint64_t)(lo) <= (uint64_t)(span))
#define ISA_FIT_ULO(mn) ((mn) > 0 ? (int64_t)(mn) : 0) /* stricter than min is safe: isa_check has the last word */
#define ISA_FIT_ISA_K_U(v, bt, mn, nms) \
    ISA_FIT_SPAN(v, ISA_FIT_ULO(mn), ((bt) < 63 ? (int64_t)((1ull << (bt)) - 1) : INT64_MAX) - ISA_FIT_ULO(mn))
#define ISA_FIT_ISA_K_S(v, bt, mn, nms) ISA_FIT_SPAN(v, -(1ll << ((bt) - 1)), (1ull << (bt)) - 1)
#define ISA_FIT_NAMES(nms) (sizeof nms / sizeof *nms - 1) /* a NULL-terminated table's names */
#define ISA_FIT_ISA_K_ENUM(v, bt, mn, nms) ISA_FIT_SPAN(v, 0, ISA_FIT_NAMES(nms) - 1)
#define ISA_FIT_ISA_K_FLAGS(v, bt, mn, nms) ISA_FIT_SPAN(v, 0, (1ull << ISA_FIT_NAMES(nms)) - 1)
#define ISA_FIT_ISA_K_F32(v, bt, mn, nms) 1
#define ISA_FIT_ISA_K_ADDR(v, bt, mn, nms) isa_addr_fits(&(v))
#define ISA_FIT(nm, kd, bt, fld, df, mn, nms) &ISA_FIT_##kd(in->fld, bt, mn, nms)
#define F(id) \
    static inline int isa_fits_##id(const isa_insn *in) { return (in->bad == 0) ISA_FMT_##id(ISA_FIT); }
ISA_FORMATS(F)
#undef F
/* isa_check of the address operands alone, for an instruction whose other
 * operands passed it before (a copy given other addresses). */
int isa_check_addrs(const isa_insn *in, char *err, size_t errlen);
/* Decode; fails on an unknown opcode, a non-zero pad, or an illegal operand. */
int isa_decode(const uint8_t in[ISA_INSN_BYTES], isa_insn *out, char *err, size_t errlen);
/* Canonical text: mnemonic, then every operand that differs from its default. */
void isa_format_insn(const isa_insn *in, char *buf, size_t len);
/* A decimal, hex (0x) or octal integer that fills the whole string; 0 or -1. */
int isa_parse_int(const char *s, int64_t *out);
/* Parse one line of assembler text (no comments, no directives). */
int isa_parse_insn(const char *text, isa_insn *out, char *err, size_t errlen);

/* DL16 (IBM DLFloat16): 1 sign, 6 exponent (bias 31), 9 fraction bits, no
 * subnormals, one NINF pattern (0x7fff / 0xffff) for NaN and infinity. */
#define ISA_DL16_NINF 0x7fffu
uint16_t isa_dl16_from_f32(float f);
float isa_dl16_to_f32(uint16_t h);
/* Bulk conversions for hot loops (vectorised; the scalar rule's bits). */
void isa_dl16_to_f32_n(const uint16_t *in, float *out, size_t n);
/* rows x n values, row r from in + r * in_pitch to out + r * out_pitch
 * (pitches in values): isa_dl16_to_f32_n on each row, without a call and
 * a path choice per row. */
void isa_dl16_to_f32_rows(const uint16_t *in, size_t in_pitch, float *out, size_t out_pitch, size_t rows, size_t n);
/* Whether the bulk conversions (isa_dl16_to_f32_n, _rows and
 * isa_dl16_from_f32_n) may take their AVX2 paths (by default when the
 * host has AVX2) or must take the SSE2/scalar baseline (allow 0): the
 * same bits either way, as tests check.  Returns 1 if AVX2 is now used. */
int isa_dl16_use_avx2(int allow);
void isa_dl16_from_f32_n(const float *in, uint16_t *out, size_t n);
/* Round an fp32 value through DL16 and back. */
float isa_dl16_round(float f);
/* IEEE half <-> fp32, for fp16 host tensors (to half: round to nearest even). */
float isa_f16_to_f32(uint16_t h);
uint16_t isa_f16_from_f32(float f);
/* bfloat16 <-> fp32, for bf16 host tensors (to bf16: round to nearest even,
 * as PyTorch's cast). */
float isa_bf16_to_f32(uint16_t h);
uint16_t isa_bf16_from_f32(float f);

/* ---- Programs: what the ELF container holds ---- */

typedef enum { ISA_ROLE_INPUT, ISA_ROLE_OUTPUT, ISA_ROLE_WEIGHT, ISA_ROLE_SCRATCH } isa_role;
/* The dtype of a tensor's host copy; the device holds DL16 (or fp32) either way. */
typedef enum { ISA_HT_F32, ISA_HT_F16, ISA_HT_BF16, ISA_HT_COUNT } isa_host_dtype;
extern const char *const isa_role_names[];
extern const char *const isa_host_dtype_names[];
/* An fp32 value as a host tensor of dtype hdt holds it (PyTorch's cast:
 * round to nearest even, overflow to infinity). */
float isa_host_round(isa_host_dtype hdt, float f);
/* A device value (a DL16 value, exact in fp32) read back into a host tensor
 * of dtype hdt by the device's rule: narrowed toward zero (docs/isa.md,
 * "Host dtypes"). */
float isa_host_from_device(isa_host_dtype hdt, float f);
/* One unit in the last place of dtype hdt at magnitude |f| (0 for f32: its
 * rounding is the device's DL16 one, in the error bounds already). */
double isa_host_ulp(isa_host_dtype hdt, double f);

/* A tensor in device DRAM.  Device layout: the host dimension stick_dim is
 * split into whole sticks; device shape is (sticks of stick_dim, the other
 * host dims in order, elements per stick), row-major, padding zero-filled.
 * dev_dtype is the element type on the device (DL16 or fp32). */
typedef struct {
    char name[ISA_NAME_MAX];
    isa_role role;
    isa_host_dtype host_dtype;
    isa_dtype_dev dev_dtype;
    int rank;
    int64_t shape[ISA_MAX_RANK];
    int stick_dim;
    /* Another order of the device dims (0: the one above): nibble p (p = 0
     * outermost, bits 4p..4p+3) holds 1 + the host dim at that place, the
     * stick dim standing for its sticks; lanes stay innermost.  SDSC
     * tensors take their layoutDimOrder_ this way (docs/isa.md). */
    uint32_t order;
    uint64_t dram_off;   /* relative to the program's DRAM base (ISA_TF_LX: byte address in core lx_core's LX) */
    uint64_t bytes;      /* device bytes */
    int64_t const_off;   /* offset of its initial data in consts, or -1 */
    uint32_t flags;      /* ISA_TF_* */
    int lx_core;         /* ISA_TF_LX: the core whose LX holds it */
    int nan_axis;        /* ISA_TF_NANROW: the host dim of its rows, or -1: each element a row */
    int64_t wrap_rows;   /* ISA_TF_WRAP: the rows of the table it indexes, 1..ISA_WRAP_ROWS_MAX */
} isa_tensor;

/* A scratch tensor that holds the graph value of its name whole, in
 * row-major order, once the run has written it: a stepwise check compares
 * it with the reference there and goes on from the device's value
 * (docs/validation.md, "Stepwise checks"). */
#define ISA_TF_VALUE 1u
/* An input resident in one core's LX when the program starts (a KTIR
 * ct_local memory view with its ct_id): the host writes its bytes into core
 * lx_core's LX from byte dram_off before the run, untimed; it takes no
 * DRAM.  Only an input can be one. */
#define ISA_TF_LX 2u
/* An input used only as an additive term of softmaxes (a user's -inf
 * attention mask): the host writes NaN, not the stand-in -2^30, into each
 * row along host dim nan_axis whose elements are all -inf (nan_axis -1:
 * into each -inf element, the mask broadcast along the softmax's axis), so
 * the row's softmax is NaN, as PyTorch's, with no guard on the device
 * (docs/runtime.md, "Masks"). */
#define ISA_TF_NANROW 4u
/* A weight that is only the row numbers of gathers from tables of
 * wrap_rows rows, by a PyTorch index that counts a negative one from the
 * end: the host writes each value x as x mod wrap_rows (in [0, wrap_rows)),
 * so dma.gather, which takes row numbers as they are, reads PyTorch's row.
 * No other op reads the device copy (the compiler sets it only then), and
 * the launch refuses an x outside [-rows, rows), as PyTorch.  Its rows
 * share record bits with nan_axis (never both). */
#define ISA_TF_WRAP 8u
#define ISA_WRAP_ROWS_MAX 65535
/* A host op's result that host ops read (the host fallback, docs/runtime.md):
 * they take the value the host computed, in fp32, not this tensor's copy.
 * With ISA_TF_HOSTONLY no device kernel reads it nor is it an output: the
 * runtime writes no device copy.  Only a scratch tensor or an output can
 * be a host op's result, only a scratch tensor ISA_TF_HOSTONLY. */
#define ISA_TF_HOST 16u
#define ISA_TF_HOSTONLY 32u
#define ISA_TF_ALL (ISA_TF_VALUE | ISA_TF_LX | ISA_TF_NANROW | ISA_TF_WRAP | ISA_TF_HOST | ISA_TF_HOSTONLY)

typedef struct isa_arena isa_arena;

typedef struct {
    isa_insn *insns;
    size_t n, cap;
    int mapped; /* 1: insns is a mapping of its own (isa_stream_room's growth), 2: a slot of arena's; either way
                 * free it with isa_stream_free */
    isa_arena *arena; /* set: the stream grows in this arena (isa_program_arena), which owns its memory */
} isa_stream;

/* A kernel: instructions [first, last] of one core's stream that belong to
 * one compiled kernel (for traces, reports and the disassembly). */
typedef struct {
    char name[ISA_NAME_MAX];
    int core;
    long first, last;
} isa_kernel;

typedef struct {
    char config[ISA_NAME_MAX]; /* name of the chip configuration it targets */
    int ncores;                /* cores it was built for (streams) */
    uint64_t lx_bytes;         /* LX size it assumes */
    uint32_t stick_bytes;
    isa_stream *cores;         /* ncores streams */
    isa_tensor *tensors;
    size_t ntensors;
    size_t tensor_cap;         /* entries allocated (at most; isa_program_add_tensor grows it) */
    uint64_t dram_bytes;       /* size of the program's DRAM segment */
    /* The segment is two regions (docs/runtime.md): weights at offsets
     * [0, weight_bytes), resident on the device across runs, and
     * activations at [weight_bytes, dram_bytes), allocated per run.  When
     * weight_bytes > 0 every weight tensor lies in the first and every
     * other tensor in the second; 0: no weights region (every tensor,
     * weights included, is per-run data). */
    uint64_t weight_bytes;
    uint8_t *consts;           /* constant data (weights baked in) */
    size_t nconsts;
    char *graph;               /* what the program computes, as graph text for the reference; may be NULL */
    isa_kernel *kernels;       /* may be empty */
    size_t nkernels;
    isa_arena *arena;          /* where its streams grow (isa_program_arena), or NULL */
} isa_program;

isa_program *isa_program_new(int ncores);
void isa_program_free(isa_program *p);
/* Let p's streams grow in one arena of transparent huge pages, `bytes` of
 * address space reserved (memory is taken as they grow): for a program
 * built instruction by instruction to megabytes (a compiler's), whose
 * streams would otherwise be first touched 4 KB page by page.  Does
 * nothing where the arena cannot be had (or under AddressSanitizer). */
void isa_program_arena(isa_program *p, size_t bytes);
/* Let p's streams grow in arena a, which p then holds as well
 * (isa_arena_keep): a compile's attempts share one.  p has no arena yet. */
void isa_program_share_arena(isa_program *p, isa_arena *a);
/* An arena of its own, `bytes` of address space, for memory that lives
 * apart from any program; NULL where none can be had (or under
 * AddressSanitizer).  Its holders count: isa_arena_keep adds one (a
 * compile's tables kept in its program's arena, where the memory they
 * give back is taken again by the program's streams), isa_arena_free
 * drops one, and the last gives it all back.  Both NULL-safe. */
isa_arena *isa_arena_new(size_t bytes);
isa_arena *isa_arena_keep(isa_arena *a);
void isa_arena_free(isa_arena *a);
/* The memory of a's free slots given back to the system (first touched
 * again when taken): what a compile's tables gave back to its program's
 * arena does not stay resident with the program.  Only whole huge pages
 * of it go: part of one stays resident (program.c trim_run).  NULL-safe. */
void isa_arena_trim(isa_arena *a);
/* A buffer of bytes that grows in an arena's slots (on huge pages, memory
 * given back and taken again not first touched anew), or on the heap
 * when it is small, has no arena, or the arena has no room. */
typedef struct {
    void *p;
    size_t cap;       /* bytes */
    isa_arena *arena; /* set by its owner; NULL: the heap */
    int slot;         /* p is a slot of arena's */
} isa_buf;
/* b with room for `bytes` (at least; at least twice what it had when it
 * grows), its first `keep` bytes kept; returns b->p (aborts when out of
 * memory). */
void *isa_buf_reserve(isa_buf *b, size_t bytes, size_t keep);
/* Give back b's memory; b stays with its arena, empty. */
void isa_buf_free(isa_buf *b);
/* Append an instruction to a core's stream (aborts on out of memory). */
void isa_stream_push(isa_stream *s, const isa_insn *in);
/* Give back a stream's memory (malloc'd, mapped, or its arena slot) and empty it (an arena stream stays in its arena). */
void isa_stream_free(isa_stream *s);
/* A stream's least room (instructions): an empty one grows to it, and
 * an arena's slots are it times a power of two. */
#define ISA_STREAM_LEAST 64
/* isa_stream_room's slow path: s full, grown (to twice its room). */
isa_insn *isa_stream_grow(isa_stream *s);
/* s with room for cap instructions in all, at least (and at least twice
 * what it had when it grows), moved or grown once: for a writer that
 * knows more is coming than a doubling would hold. */
void isa_stream_reserve(isa_stream *s, size_t cap);
/* Room for one more instruction at the end of s (aborts on out of
 * memory), not yet in it: a compiler builds the instruction there and
 * counts it (s->n++), instead of building it aside and copying it in.
 * Inline: a compile asks for every instruction it emits (a call each was
 * 2.5% of BERT-base's). */
static inline isa_insn *isa_stream_room(isa_stream *s)
{
    return s->n < s->cap ? &s->insns[s->n] : isa_stream_grow(s);
}
/* Room for k more instructions at the end of s (aborts on out of
 * memory): a compiler that writes a run of them asks once, then writes
 * them without a test each. */
static inline isa_insn *isa_stream_room_n(isa_stream *s, size_t k)
{
    if (s->cap - s->n < k)
        isa_stream_reserve(s, s->n + k);
    return &s->insns[s->n];
}
/* Add a tensor; computes bytes from shape and layout; returns its index. */
int isa_program_add_tensor(isa_program *p, const char *name, isa_role role,
                           isa_host_dtype hdt, isa_dtype_dev ddt, int rank,
                           const int64_t *shape, uint64_t dram_off);
int isa_program_find_tensor(const isa_program *p, const char *name);
/* Add an input resident in core's LX from byte lx_off (ISA_TF_LX); it takes no DRAM. */
int isa_program_add_lx_tensor(isa_program *p, const char *name, isa_host_dtype hdt, isa_dtype_dev ddt, int rank,
                              const int64_t *shape, int core, uint64_t lx_off);
/* An ISA_TF_LX tensor's placement: an input without constant data, on a
 * core of p, stick-aligned inside its LX; 0, or -1 with a message. */
int isa_tensor_check_lx(const isa_program *p, const isa_tensor *t, char *msg, size_t len);
/* The name of a tensor that p lists twice, or NULL (O(n log n)). */
const char *isa_program_duplicate_tensor(const isa_program *p);
/* name into dst, ISA_NAME_MAX bytes (a tensor's or kernel record's), cut
 * as snprintf("%s") would cut it: a compile names some 300 kernels and
 * tensors, and printf's copy was 0.3 M of BERT-base's 54 M instructions. */
void isa_name_copy(char *dst, const char *name);
/* Can name stand as one token of the assembly text (printable ASCII, no
 * blank, no comment character '#' or ';', shorter than ISA_NAME_MAX)? A
 * configuration name must (the ELF reader and the assembler hold it to
 * this); a kernel name that cannot is written as a comment by dis. */
int isa_name_printable(const char *name);
/* Can name stand as a configuration name: printable as above and without
 * '=', which .config would read as the first KEY=VALUE. */
int isa_config_name_valid(const char *name);
/* Name instructions [first, last] of a core's stream as a kernel. */
void isa_program_add_kernel(isa_program *p, const char *name, int core, long first, long last);
/* Pure layout conversions between a row-major fp32 host tensor and
 * t->bytes of device layout (fp32 values rounded to DL16 when dev_dtype is
 * DL16; padding written as zero). */
void isa_layout_pack(const isa_tensor *t, uint32_t stick_bytes, const float *host, void *dev);
void isa_layout_unpack(const isa_tensor *t, uint32_t stick_bytes, const void *dev, float *host);
/* Byte offset inside the tensor's device bytes of the host element at
 * index[0..rank-1]. */
uint64_t isa_layout_offset(const isa_tensor *t, uint32_t stick_bytes, const int64_t *index);
/* Is order (isa_tensor.order) 0 or a permutation of a rank-r tensor's dims? */
int isa_order_valid(uint32_t order, int rank);
/* order from dims[0..rank-1] (outermost first); 0 when they are the
 * default order of stick dim `stick`. */
uint32_t isa_order_make(const int *dims, int rank, int stick);
/* Device layout helpers for a tensor: elements per stick, number of sticks
 * along stick_dim, rows (product of the other dims), total device bytes. */
int64_t isa_tensor_lanes(const isa_tensor *t, uint32_t stick_bytes);
int64_t isa_tensor_groups(const isa_tensor *t, uint32_t stick_bytes);
int64_t isa_tensor_rows(const isa_tensor *t);
uint64_t isa_tensor_device_bytes(const isa_tensor *t, uint32_t stick_bytes);

/* Assembler: text (directives .config .core .tensor .dram .weights, instructions)
 * to a program.  Errors name file:line.  Returns NULL on error. */
isa_program *isa_assemble(const char *text, const char *filename, char *err, size_t errlen);
/* Disassembler: a program back to assembler text that isa_assemble accepts. */
char *isa_disassemble(const isa_program *p);

/* ELF container (libelf).  Writing returns 0 or -1; reading returns NULL
 * with a one-line message for a missing, truncated, corrupt or foreign file. */
int isa_elf_write(const isa_program *p, const char *path, char *err, size_t errlen);
isa_program *isa_elf_read(const char *path, char *err, size_t errlen);

/* Error messages (err.c): the one formatting routine behind every
 * module's one-line errors (modules wrap it to add their context: a
 * file:line, a core, a kernel).  isa_errf writes a printf-style message
 * into err[len], cut to fit; nothing when err is NULL or len is 0.
 * isa_verrf_cat appends to the message err already holds (its context,
 * written first).  Both return -1, so a failing function can
 * `return isa_errf(err, len, ...)`. */
int isa_errf(char *err, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int isa_verrf(char *err, size_t len, const char *fmt, va_list ap);
int isa_verrf_cat(char *err, size_t len, const char *fmt, va_list ap);

/* Files (file.c).  Every reader opens its input with isa_file_open or
 * isa_file_read: a FIFO, device, directory or socket is refused ("PATH: not
 * a regular file") and so is a file over the format's cap (max bytes),
 * before a byte is read.  Errors are one line naming the path. */
/* The open descriptor (size in *size), or -1. */
int isa_file_open(const char *path, uint64_t max, uint64_t *size, char *err, size_t errlen);
/* The whole file, NUL-terminated (not counted in *size); free() it. */
char *isa_file_read(const char *path, uint64_t max, size_t *size, char *err, size_t errlen);
/* A text file: as isa_file_read, and a NUL byte in it is "PATH:LINE: a NUL
 * byte in the text". */
char *isa_text_read(const char *path, uint64_t max, char *err, size_t errlen);
/* The next line of a text at *cur, its '\n' replaced by a NUL, and *cur
 * moved past it; NULL at the end.  Lines of any length. */
char *isa_text_line(char **cur);
/* Caps on input files, by what each format can need. */
#define ISA_CONFIG_MAX (1ull << 20)  /* a chip configuration: 1 MB */
#define ISA_TEXT_MAX (1ull << 30)    /* assembly, graph text, tuning, sweep CSV/JSON: 1 GB */
#define ISA_ELF_MAX (16ull << 30)    /* a program: 16 GB (constants included) */

/* "DIR/NAME" in a new string of any length (free() it); NAME alone when
 * it is absolute or DIR is NULL.  Aborts when out of memory, as
 * isa_stream_push does. */
char *isa_path_join(const char *dir, const char *name);

/* An output file.  isa_out_open starts a temporary file beside path; the
 * caller writes to f (or fileno(f), which may seek); isa_out_close(o, ok)
 * renames the temporary over path if ok and every write succeeded, and
 * otherwise removes the temporary, leaving path as it was.  An existing
 * device or FIFO is written in place, at close, from an anonymous
 * temporary.  Nothing we did not create is ever unlinked. */
typedef struct {
    FILE *f;
    char *path, *tmp; /* tmp: the file beside path, if any */
    int in_place;
} isa_outfile;
int isa_out_open(isa_outfile *o, const char *path, char *err, size_t errlen);
int isa_out_close(isa_outfile *o, int ok, char *err, size_t errlen);

#endif

