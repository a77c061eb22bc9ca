/* be_reroll.c: the reroll pass of the back half.  Code generation spells
 * out every chunk of every kernel; this pass rolls each core's stream,
 * kernel by kernel, back into counted loops (docs/compiler.md, "The
 * reroll pass").
 *
 * A run of a body of L instructions repeated n >= 2 times, identical in
 * every field but address offsets that advance by a constant stride per
 * repetition (each operand its own stride), becomes
 *
 *     li r, 0 ...         (once per outermost loop, its registers)
 *     loop n
 *       body              (an operand with a stride: rK + its first address)
 *       addi r, stride ...
 *     endl
 *
 * Rolling works on a list of entries: instructions, which keep the
 * addresses of their first iteration and a stride per enclosing loop, and
 * loop/endl markers.  A list is scanned left to right; at each item (an
 * instruction or a whole loop) the candidate periods are the distances to
 * the next items of the same shape (a hash with address offsets left out),
 * each is checked repetition by repetition, and the one that saves the
 * most instructions wins.  Its first repetition becomes the body, which is
 * rolled in turn (inner loops), and the list is scanned again until a scan
 * makes no loop (outer loops over bodies that now hold loops).  Only at
 * the end are registers assigned, per outermost loop (at most 15, shared
 * by operands whose strides agree in the loops they share); a nest that
 * needs more has its innermost loops unrolled until it fits.  The result
 * is checked against the stream it replaces, instruction by instruction
 * with addresses resolved, so a bug here aborts instead of changing what
 * the program computes.  A kernel that fits an earlier one's template
 * (the same shapes in order, every address moved by one constant per
 * shape and operand) is written from that one's checked code instead,
 * its addresses moved by those constants (emit_as_code says why that
 * code issues the kernel exactly). */
#include "backend.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Address operands an instruction format has at most (pt.mm: d, p, a, b). */
#define RR_NADDR 4
/* Candidate periods tried at an item: its next items of the same shape.
 * More is not better: the Llama-8B prefill layer rolls to 403,008
 * instructions with 8 (6 to 12 alike), 416,907 with 16, 459,789 with 32,
 * as a longer period that saves more at its start can roll worse inside. */
#define RR_CANDIDATES 8
/* Templates kept (rr_tmpl), one per kernel code's sequence of ops: the
 * cores of a grid row differ (BERT-base's k4_addmm, 4x8: each core's
 * kept result's ring sends skip its own column), so the core of the next
 * row rolls as the one a row before did, eight kernels back.  With 16,
 * BERT-base rolled 11 kernel copies afresh whose ops a template evicted
 * since had had; 64 keep no more that fit, and more templates of one
 * length make tmpl_for key the kernel's ops more often. */
#define RR_TEMPLATES 32
/* The shortest prefix roll_prefixed takes from a template: below it, its
 * search and a second roll cost more than they spare. */
#define RR_PREFIX_MIN 32
/* Registers a loop nest may take: r1..r15 (r0 reads as zero). */
#define RR_REGS (ISA_NREGS - 1)

enum { RR_INSN, RR_LOOP, RR_ENDL };

typedef struct {
    int kind;
    int idx;            /* RR_INSN: the instruction's index in its kernel (a template's entries: rr_tmpl) */
    const isa_insn *in; /* RR_INSN: the instruction as generated, for every field but its addresses */
    int64_t off[RR_NADDR]; /* RR_INSN: address operand k's offset in its first iteration (register 0);
                            * k < its op's naddr: the rest is never set, never read */
    uint64_t key;  /* RR_INSN: insn_key; RR_LOOP: the hash of the item it starts (loop_hash) */
    uint64_t h;    /* ent_hash of it, kept with its strides (make_entries, emit_loop; unroll_one's, only emitted, not) */
    int shape;     /* RR_INSN: equal for instructions equal but for their addresses (shape_of) */
    int fixed;     /* RR_INSN: a sequencer instruction that never repeats in a loop (ent_same) */
    int depth;     /* RR_INSN: loops around it; st[k][0..depth) */
    int op;        /* RR_INSN: in->op, read without in: a template's in is a stream since reused */
    int64_t st[RR_NADDR][ISA_MAX_LOOPS]; /* stride of address operand k (k < its op's naddr: the rest is never set) per loop, innermost first */
    int64_t n;     /* RR_LOOP: iterations */
    long len;      /* RR_LOOP: entries up to its RR_ENDL inclusive; otherwise 1 */
} rr_ent;

typedef struct {
    rr_ent *v;   /* mem's */
    long n, cap;
    isa_buf mem;
} rr_vec;

/* Arrays the rolling of a kernel works in, kept with their memory from
 * kernel to kernel (last given, first taken): each fresh one (a scan's
 * arrays some 100 KB each) was mapped and touched anew, page fault by
 * page fault. */
#define RR_POOL 64
typedef struct {
    void *p;
    size_t cap; /* bytes */
} rr_buf;
typedef struct {
    rr_buf b[RR_POOL];
    int nb;
} rr_pool;

/* Per kernel position: the figures the dump and the report print. */
typedef struct {
    long before, after; /* instructions, all cores */
    long loops;         /* loop instructions emitted */
    int depth;          /* deepest nesting */
    long unrolled;      /* loops unrolled again for want of registers */
} rr_kstat;

/* Shape ids: equal exactly when insn_same without addresses says so; a
 * hash table of one instruction per shape, so that comparing entries
 * compares ids.  The table holds keys and ids, and each shape's first
 * instruction is copied into rep: the lookup stays in a few cache lines
 * instead of reaching back into the kernel's stream. */
typedef struct {
    uint64_t key;
    int shape;
    unsigned gen; /* the use of the table that filled it: empty in any other (slots_gen) */
} rr_slot;

typedef struct {
    rr_slot *tab;
    long cap;  /* slots allocated */
    long mask; /* slots this kernel uses, less one: a power of 2 less one (clearing the
                * table as grown for the largest kernel was 0.5 MB per small kernel) */
    int next;
    unsigned gen;  /* this kernel's use of tab (slots_gen) */
    isa_insn *rep; /* per shape: its first instruction */
    uint64_t *rkey; /* per shape: its key (insn_key) */
    int *succ;     /* per shape: the shape of the instruction after its last one so far, -1 none */
    long rcap;
    int clash;     /* two of this kernel's shapes have one key (shape_of) */
} rr_shapes;

/* The last kernel rolled from scratch, as a template for the next: a
 * kernel's code on one core is most often another core's with other
 * addresses (its share of the same tensors).  Rolling looks at addresses
 * only through strides, differences between instructions of one shape at
 * the same operand, so a kernel whose instructions have the template's
 * shapes in order, and whose every address differs from the template's by
 * one constant per shape and operand, rolls into the template's loops
 * exactly: only the addresses (and registers' first values) differ, and
 * the emission (emit_as_code) takes those from the kernel itself. */
typedef struct {
    long n;             /* instructions; 0: no template */
    uint64_t ops;       /* ops_key of its instructions: a kernel fits only with the same ops in order */
    int nsh;            /* its shapes */
    int *shop;          /* per shape: its op */
    int *shape;         /* per instruction: its shape (rr_scratch.shapes, as the template left it) */
    uint32_t *pos;      /* the instructions by shape, each shape's in order, as byte offsets in the kernel
                         * (tmpl_index; shape_scan adds one without an index's multiply: a kernel
                         * past 4 GB of instructions leaves no template) */
    int64_t (*off)[RR_NADDR]; /* per pos: its instruction's address operands' offsets */
    long *at;           /* per shape and one more: where its instructions start in pos */
    int64_t (*delta)[RR_NADDR]; /* tmpl_fits, per shape: the kernel's offsets less the template's */
    rr_slot *keys;      /* tmpl_fits: a table of the kernel's shapes' keys (keys_enter) */
    long kcap;          /* its slots, a power of 2 */
    long kmask;         /* the slots this kernel uses, less one */
    unsigned kgen;      /* this kernel's use of keys (slots_gen) */
    unsigned kuse;      /* the kernel (rr_scratch.kuse) whose shapes tmpl_shapes has checked */
    int kfit;           /* how many of them, from the first: their deltas and keys made */
    struct rr_code *code; /* the code emitted for it, as check_same passed it (code_keep) */
    long ncode;
    long unrolled;      /* loops its emission unrolled again for want of registers */
    struct rr_low *low; /* code_lows: code's operands with a register, as emit_as_code takes them */
    long nlow;          /* -1: not made yet */
    int nli;            /* li's in code */
    int64_t *li;        /* emit_as_code, per li of code in order: its value for the kernel */
    struct rr_cut *cut; /* where a prefix of its code serves another kernel's prefix (tmpl_cuts) */
    int ncut;           /* -1: not made yet (ops_cut makes them for a kernel with enough of its ops) */
    uint64_t *opsh;     /* per place p of it: ops_run's hash of its ops before */
    /* the memory of shop, shape, pos, off, at, delta, keys, code, low and li (scratch_array), and
     * of cut and opsh (heap_array) */
    isa_buf shopm, shapem, posm, offm, atm, deltam, keysm, codem, lowm, lim, cutm, opshm;
} rr_tmpl;

/* A cut of a template's kernel: a position p where no shape of the
 * instructions before it has one after it.  Rolling never looks across
 * it (a candidate period pairs items of one shape, and a run of equal
 * hashes ends at it), so the kernel's code is the code of [0, p) rolled
 * alone, code[0, code), then that of the rest: a kernel whose first p
 * instructions fit the template's (tmpl_shapes, the first nsh shapes)
 * and whose p is a cut as well takes that code, its nli li's' values its
 * own, and rolls only the rest (roll_prefixed). */
typedef struct rr_cut {
    long p, code;
    int nsh, nli;
    uint64_t ops; /* ops_run's hash of the ops of [0, p) */
} rr_cut;

/* An instruction of a template's emitted code, what emit_as_code writes
 * for a kernel that fits: its op, register and value (li, addi, loop),
 * its address operands, the template shape of the instructions it issues
 * (-1: li, addi, loop, endl) and the kernel's instruction its emission
 * copied (idx; -1: li, addi, loop, endl). */
typedef struct rr_code {
    uint16_t op, na; /* na: its op's address operands (0: li, addi, loop, endl); 16 bits, the size of an int for both */
    int reg, shape, idx;
    int64_t val;
    int areg[RR_NADDR];
    int64_t aoff[RR_NADDR];
} rr_code;

/* An operand with a register in a template's code, or several of one li,
 * shape and operand index in a row: the li (its place among code's li's),
 * the shape and operand (shape * RR_NADDR + q, an index of rr_tmpl.delta's
 * words) and the least of their offsets plus the li's value. */
typedef struct rr_low {
    int li, sq;
    int64_t base;
} rr_low;

/* Buffers reused from kernel to kernel: a kernel's entries, its shape
 * table and its rolled instructions; fresh ones per kernel were memory
 * touched anew, page fault by page fault (a kernel is up to some 14,000
 * instructions per core, 128 bytes each (288 then)). */
typedef struct {
    rr_vec e;           /* the kernel's entries */
    rr_pool pool;       /* roll_once's arrays */
    rr_shapes shapes;   /* shape table (cap: its slots) and representatives */
    isa_stream rolled;  /* roll_tail: a core's tail rolled, before it replaces the tail */
    rr_tmpl t[RR_TEMPLATES]; /* the last kernels rolled from scratch, of distinct ops_key */
    int tnext;          /* the one a kernel of a new ops_key replaces */
    int tused;          /* templates taken since tmpl_drop: t[0, tused) (tnext from 0, up to RR_TEMPLATES) */
    int tpos;           /* the kernel position whose kernels made and fit the templates (tmpl_pos) */
    unsigned kuse;      /* the kernel being rolled, counted (rr_tmpl.kuse) */
    int *seen;          /* check_same, per rolled instruction: an original of its shape (from, as a rule) */
    /* per instruction of the kernel: its address operands' offsets, as
     * make_entries reads them (having checked that no register is used),
     * for check_same: reading them back from the instructions, out of
     * cache by then, was 5% of a prefill compile.  A kernel that fits a
     * template does not fill them (no check_same: emit_as_code; writing
     * them was 60 MB of the prefill layer's compile). */
    int64_t (*soff)[RR_NADDR];
    int *from;          /* rr_out.from's memory */
    int *tshape;        /* roll_prefixed: per instruction of the rest, its shape (check_same's) */
    uint64_t *opsh;     /* roll_prefixed: per place p of the kernel, ops_run's hash of the ops before */
    isa_buf seenm, soffm, fromm, tabm, tshapem, opshm; /* seen's, soff's, from's, shapes.tab's, tshape's and opsh's memory */
    /* where these grow: on huge pages, not first touched 4 KB by 4 KB
     * (BERT-base's rolling touched some 1.4 MB on the heap); NULL: the heap */
    isa_arena *arena;
} rr_scratch;

struct be_reroll {
    int off;            /* the pass did not run (no_reroll) */
    rr_scratch sc;
    rr_kstat *k;        /* per kernel position */
    long *core_before, *core_after;
    size_t *done;       /* per core: its stream is rolled up to here */
    size_t *looked;     /* per core: the program's kernel records roll_tail has looked through (each of
                         * the core's among them starts before done: a look at every record per tail was
                         * 0.5% of BERT-base's compile) */
    int ncores;
    char cfgname[ISA_NAME_MAX];
};

/* Room for n more entries. */
static void vec_reserve(rr_vec *v, long n)
{
    if (v->n + n > v->cap) {
        v->cap = v->cap ? 2 * v->cap : 256;
        if (v->cap < v->n + n)
            v->cap = v->n + n;
        v->v = isa_buf_reserve(&v->mem, (size_t)v->cap * sizeof *v->v, (size_t)v->n * sizeof *v->v);
    }
}

static void vec_free(rr_vec *v)
{
    isa_buf_free(&v->mem);
    *v = (rr_vec){.mem = v->mem};
}

static void vec_append(rr_vec *v, const rr_ent *e, long n)
{
    if (!n)
        return;
    vec_reserve(v, n);
    memcpy(v->v + v->n, e, (size_t)n * sizeof *e);
    v->n += n;
}

static void vec_push(rr_vec *v, const rr_ent *e)
{
    vec_append(v, e, 1);
}

/* An array of at least `bytes`, its contents undefined. */
static rr_buf buf_take(rr_pool *pl, size_t bytes)
{
    rr_buf b = pl->nb ? pl->b[--pl->nb] : (rr_buf){0};
    if (b.cap < bytes) {
        free(b.p);
        b.cap = 2 * bytes;
        b.p = malloc(b.cap);
        if (!b.p)
            abort();
    }
    return b;
}

static void buf_give(rr_pool *pl, rr_buf b)
{
    if (pl->nb < RR_POOL)
        pl->b[pl->nb++] = b;
    else
        free(b.p);
}

/* ---- instruction fields, from the ISA's operand table ---- */

/* Per op, looked up in the ISA table once per process (the pass asks for
 * every instruction, several times): its address operands in format order
 * (k indexes st), and its other fields as the 8-byte words of isa_insn
 * that hold them, each with a mask of the fields' bytes: two 4-byte
 * fields in one word compare (and hash) as one, and a compare is a loop
 * of loads without a branch per field kind (per field, insn_same was 5%
 * of BERT-base's compile).  A float compares by its bits. */
#define RR_NWORDS (sizeof(isa_insn) / sizeof(uint64_t))
/* insn_same compares 16 bytes at a time, two words per load and mask: a
 * template's kernel is compared instruction by instruction (per word, it
 * was 8% of the Llama-8B prefill layer's compile). */
typedef uint64_t rr_pair __attribute__((vector_size(16), aligned(8), may_alias));
#define RR_NPAIRS RR_NWORDS /* at most (a pair per word with a field) */
/* Pairs every op has (padded with pairs that compare nothing): insn_same
 * compares them without a loop.  Wait and sig are two in three of the
 * prefill layer's instructions (a loop over their pairs was half of
 * comparing one); at 128 bytes they have one pair (tok and u share a
 * word), but one unrolled and the loop for the rest was slower than two
 * (callgrind, prefill's compile 763.7 M against 754.5 M). */
#define RR_PAIRS_FIRST 2
typedef struct {
    int naddr;
    uint16_t fixed;               /* a sequencer instruction that never repeats in a loop (ent_same) */
    uint16_t pass;                /* li, addi, loop or endl: the pass's own (make_entries) */
    const isa_operand *addr[RR_NADDR];
    uint16_t aoff[RR_NADDR];      /* their offsets in isa_insn */
    int nw;                       /* words holding other fields */
    uint16_t word[RR_NWORDS];     /* their offsets in isa_insn */
    uint64_t mask[RR_NWORDS];     /* their fields' bytes */
    int np;                       /* the same as 16-byte pairs of words */
    uint8_t npc;                  /* of them, those that compare something (the rest pad to RR_PAIRS_FIRST) */
    uint8_t op_paired;            /* the first pair holds the op's bytes too (fields_words) */
    uint16_t scan;                /* shape_fits' case for these (RR_SCANS), RR_SCAN_ANY none; these three
                                   * in one int, so that the struct stays 512 bytes (op_fields by a shift) */
    uint16_t pair[RR_NPAIRS];
    rr_pair pmask[RR_NPAIRS];
} rr_opfields;

/* The layouts shape_fits has a case of its own for, as (npc, np, naddr,
 * op_paired): every op of the 128-byte isa_insn (wait and sig: one pair,
 * a padding one and the op in the first, two in three of the prefill
 * layer's instructions; dma; ring.send; sfp; pt.mm); another layout's ops
 * take the loops as they are (the cases of the 288-byte one left
 * BERT-base's ring sends and pt.mm there: 0.8 M of its compile). */
#define RR_SCANS(X) X(1, 2, 0, 1) X(3, 3, 2, 0) X(4, 4, 2, 1) X(5, 5, 3, 1) X(5, 5, 4, 1)
#define RR_SCAN_ID(npc, np, naddr, paired) RR_SCAN_##npc##np##naddr##paired,
enum { RR_SCAN_ANY, RR_SCANS(RR_SCAN_ID) };
#undef RR_SCAN_ID
_Static_assert((sizeof(rr_opfields) & (sizeof(rr_opfields) - 1)) == 0, "op_fields[op] by a shift");

static rr_opfields op_fields[ISA_NOPS];
static int op_fields_made;

/* op's fields other than addresses as words and masks (rr_opfields). */
static void fields_words(rr_opfields *f, const isa_opinfo *oi)
{
    _Static_assert(sizeof(isa_insn) % sizeof(uint64_t) == 0, "isa_insn is whole words");
    unsigned char bytes[sizeof(isa_insn)] = {0};
    for (int o = 0; oi && o < oi->noperands; o++) {
        const isa_operand *x = &oi->operands[o];
        if (x->kind != ISA_K_ADDR) {
            assert(x->offset + x->size <= sizeof bytes);
            memset(bytes + x->offset, 0xff, x->size);
        }
    }
    for (size_t w = 0; w < RR_NWORDS; w++) {
        uint64_t m;
        memcpy(&m, bytes + w * sizeof m, sizeof m);
        if (m) {
            f->word[f->nw] = (uint16_t)(w * sizeof m);
            f->mask[f->nw++] = m;
        }
    }
    /* pairs from each word with a field on, at any word (the fields sit
     * at odd words as often as even: whole pairs took nearly a load per word) */
    for (size_t w = 0; w < RR_NWORDS; w++) {
        uint64_t m;
        memcpy(&m, bytes + w * sizeof m, sizeof m);
        if (!m)
            continue;
        const size_t at = w + 1 < RR_NWORDS ? w : w - 1;
        rr_pair pm;
        memcpy(&pm, bytes + at * sizeof m, sizeof pm);
        f->pair[f->np] = (uint16_t)(at * sizeof m);
        f->pmask[f->np++] = pm;
        w = at + 1;
    }
    /* at least RR_PAIRS_FIRST, the rest comparing nothing (a mask of 0) */
    for (; f->np < RR_PAIRS_FIRST; f->np++) {
        f->pair[f->np] = 0;
        f->pmask[f->np] = (rr_pair){0, 0};
    }
    /* a first pair at the op's word (a field there, as a wait's token, or
     * padding) compares the op as well: shape_scan's compare of each
     * instruction's op comes free (insn_same compares the ops first: equal
     * ops add nothing to it) */
    if (f->pair[0] == 0) {
        unsigned char op[sizeof(rr_pair)] = {0};
        memset(op + offsetof(isa_insn, op), 0xff, sizeof((isa_insn *)0)->op);
        rr_pair om;
        memcpy(&om, op, sizeof om);
        f->pmask[0] |= om;
        f->op_paired = 1;
    }
    for (f->npc = (uint8_t)f->np; f->npc > 0 && !(f->pmask[f->npc - 1][0] | f->pmask[f->npc - 1][1]); f->npc--)
        ;
    static const int scans[][4] = {
#define RR_SCAN_ROW(npc, np, naddr, paired) {npc, np, naddr, paired},
        RR_SCANS(RR_SCAN_ROW)
#undef RR_SCAN_ROW
    };
    f->scan = RR_SCAN_ANY;
    for (size_t i = 0; i < sizeof scans / sizeof scans[0]; i++)
        if (scans[i][0] == f->npc && scans[i][1] == f->np && scans[i][2] == f->naddr && scans[i][3] == f->op_paired)
            f->scan = (uint16_t)(RR_SCAN_ANY + 1 + i);
}

/* The 8 bytes of an address operand of register 0 and offset off, as
 * memory holds them (fields_init checks the layout): an operand's word
 * is this exactly when its register is 0 and its offset off (offsets
 * below 2^40, as emitted: no two differ by a multiple of 2^56). */
static inline uint64_t addr_word(int64_t off)
{
    return (uint64_t)off << 8;
}

/* Fill op_fields for every op (before the pass looks at an instruction). */
static void fields_init(void)
{
    if (op_fields_made)
        return;
    for (int op = 0; op < ISA_NOPS; op++) {
        rr_opfields *f = &op_fields[op];
        const isa_opinfo *oi = isa_info(op);
        f->fixed = oi && oi->cls == ISA_C_SEQ && op != ISA_OP_FENCE;
        f->pass = op == ISA_OP_LOOP || op == ISA_OP_ENDL || op == ISA_OP_LI || op == ISA_OP_ADDI;
        for (int o = 0; oi && o < oi->noperands; o++) {
            const isa_operand *x = &oi->operands[o];
            if (x->kind == ISA_K_ADDR) {
                assert(f->naddr < RR_NADDR);
                f->aoff[f->naddr] = (uint16_t)x->offset;
                f->addr[f->naddr++] = x;
            }
        }
        fields_words(f, oi);
    }
    const isa_addr probe = {.reg = 0, .off = 0x123456789a};
    uint64_t w;
    memcpy(&w, &probe, sizeof w);
    assert(sizeof probe == sizeof w && w == addr_word(0x123456789a)); /* (addr_word) */
    (void)w;
    /* (commit_as's checks of the pass's own li, addi, loop and endl) */
    assert(isa_info(ISA_OP_LI)->format == ISA_FMT_ID_REG && isa_info(ISA_OP_ADDI)->format == ISA_FMT_ID_REG);
    assert(isa_info(ISA_OP_LOOP)->format == ISA_FMT_ID_LOOP && isa_info(ISA_OP_ENDL)->format == ISA_FMT_ID_NONE);
    op_fields_made = 1;
}

static inline const rr_opfields *fields_of(int op)
{
    return &op_fields[op];
}

static inline int op_addrs(int op, const isa_operand *const **out)
{
    const rr_opfields *f = fields_of(op);
    *out = f->addr;
    return f->naddr;
}

/* Address operand q of instruction in, of f's op (its offset in f: an
 * operand's own in the ISA table was a load more per address). */
static inline isa_addr *addr_at(isa_insn *in, const rr_opfields *f, int q)
{
    return (isa_addr *)((char *)in + f->aoff[q]);
}

static inline const isa_addr *caddr_at(const isa_insn *in, const rr_opfields *f, int q)
{
    return (const isa_addr *)((const char *)in + f->aoff[q]);
}

/* Word i of an instruction's fields (rr_opfields), its other bytes 0. */
static inline uint64_t word_at(const isa_insn *in, const rr_opfields *f, int i)
{
    uint64_t u;
    memcpy(&u, (const char *)in + f->word[i], sizeof u);
    return u & f->mask[i];
}

/* Do two instructions agree in every encoded field but their addresses? */
static inline int insn_same(const isa_insn *x, const isa_insn *y)
{
    if (x->op != y->op)
        return 0;
    const rr_opfields *f = fields_of(x->op);
    const char *p = (const char *)x, *q = (const char *)y;
    _Static_assert(RR_PAIRS_FIRST == 2, "insn_same compares the first two pairs unrolled");
    rr_pair diff = ((*(const rr_pair *)(p + f->pair[0]) ^ *(const rr_pair *)(q + f->pair[0])) & f->pmask[0]) |
                   ((*(const rr_pair *)(p + f->pair[1]) ^ *(const rr_pair *)(q + f->pair[1])) & f->pmask[1]);
    for (int i = RR_PAIRS_FIRST; i < f->np; i++)
        diff |= (*(const rr_pair *)(p + f->pair[i]) ^ *(const rr_pair *)(q + f->pair[i])) & f->pmask[i];
    return !(diff[0] | diff[1]);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Hash of an instruction's every field but its addresses: a multiply per
 * word and the high bits folded down once at the end (mm_block_hash's
 * way; mix per word was a serial chain three times as long).  The fold
 * matters: the low bits, which index the hash tables, see nothing of the
 * words' high bits before it (without a fold, the shape table probed 2.7
 * times as long). */
static uint64_t insn_key(const isa_insn *in)
{
    const rr_opfields *f = fields_of(in->op);
    uint64_t h = ((uint64_t)in->op + 0x5eed) * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < f->nw; i++)
        h = (h ^ word_at(in, f, i)) * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 32)) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* The next use of a table of cap slots, gen its last (0 none): its slots,
 * all of another use, are empty without a pass to clear them (clearing a
 * table per kernel was 0.45% of BERT-base's compile).  All are cleared
 * when the table has grown (grown: new memory) or the count wraps. */
static unsigned slots_gen(rr_slot *tab, long cap, int grown, unsigned gen)
{
    if (grown || gen == UINT_MAX) {
        for (long q = 0; q < cap; q++)
            tab[q].gen = 0;
        gen = 0;
    }
    return gen + 1;
}

static int shape_of(rr_shapes *t, const isa_insn *in, uint64_t key)
{
    long slot = (long)(key & (uint64_t)t->mask);
    while (t->tab[slot].gen == t->gen) {
        const rr_slot *q = &t->tab[slot];
        if (q->key == key) {
            if (insn_same(&t->rep[q->shape], in))
                return q->shape;
            t->clash = 1;
        }
        slot = (slot + 1) & t->mask;
    }
    if (t->next == t->rcap) {
        t->rcap = t->rcap ? 2 * t->rcap : 64;
        t->rep = realloc(t->rep, (size_t)t->rcap * sizeof *t->rep);
        t->rkey = realloc(t->rkey, (size_t)t->rcap * sizeof *t->rkey);
        t->succ = realloc(t->succ, (size_t)t->rcap * sizeof *t->succ);
        if (!t->rep || !t->rkey || !t->succ)
            abort();
    }
    isa_insn_copy(&t->rep[t->next], in);
    t->rkey[t->next] = key;
    t->succ[t->next] = -1;
    t->tab[slot] = (rr_slot){key, t->next, t->gen};
    return t->next++;
}

/* Shape hash of an entry: every field but address offsets, with strides. */
static uint64_t ent_hash(const rr_ent *e)
{
    if (e->kind != RR_INSN)
        return mix((uint64_t)e->kind, (uint64_t)e->n);
    const isa_operand *const *ao;
    const int na = op_addrs(e->op, &ao);
    uint64_t h = e->key;
    for (int k = 0; k < na; k++)
        for (int l = 0; l < e->depth; l++)
            h = mix(h, (uint64_t)e->st[k][l]);
    return h;
}

/* The hash of loop lp's item (lp->len entries, their h set) into its key. */
static void loop_hash(rr_ent *lp)
{
    uint64_t h = 0x1234;
    for (long q = 0; q < lp->len; q++)
        h = mix(h, lp[q].h);
    lp->key = h;
}

/* The hash of the item entry e starts (an instruction, or a loop up to its
 * endl): its entries' ent_hash's mixed, kept in the entries (hashing every
 * entry again at every scan was 1.6% of BERT-base's compile). */
static uint64_t item_hash(const rr_ent *e)
{
    return e->kind == RR_LOOP ? e->key : mix(0x1234, e->h);
}

/* Do entries x and y have the same shape: instructions equal but for
 * address offsets, with equal strides; loops of equal counts?  Control
 * instructions (bar, halt, host) never repeat inside a loop; a fence may
 * (this core's units drain each iteration, as unrolled). */
static int ent_same(const rr_ent *x, const rr_ent *y)
{
    if (x->kind != y->kind)
        return 0;
    if (x->kind != RR_INSN)
        return x->n == y->n;
    if (x->shape != y->shape || x->depth != y->depth || x->fixed)
        return 0;
    if (!x->depth) /* no strides yet: the first scan's every instruction */
        return 1;
    const int na = fields_of(x->op)->naddr; /* the same op's: strides past its addresses are 0 */
    for (int k = 0; k < na; k++)
        for (int l = 0; l < x->depth; l++)
            if (x->st[k][l] != y->st[k][l])
                return 0;
    return 1;
}

/* ---- rolling a list ---- */

typedef struct {
    /* (the item and entry numbers, below 2^31 as rr_ent.idx, as int: the
     * scan's arrays and table were half its memory touched) */
    int *start;     /* per item: its first entry (nitems + 1 of them) */
    uint64_t *h;    /* per item: shape hash */
    int *next;      /* per item: the next item of the same hash, -1 none */
    int64_t *stride;/* scratch: per entry of a body and address operand (a body is at
                     * most half the list: it repeats) */
    int *end;       /* per period L: hash_end's last answer (-1 none) */
    int byshape;    /* the items are a kernel's instructions as make_entries made them, each
                     * its shape as its hash (scan_items' nsh) */
} rr_scan;

/* A candidate: items [i, i + L) repeated reps times. */
typedef struct {
    long L, reps, save;
} rr_cand;

/* Entries of items [i, i + L) of list e. */
static long span(const rr_scan *s, long i, long L)
{
    return s->start[i + L] - s->start[i];
}

/* The first item u >= i whose hash differs from item u + L's (or with no
 * item u + L): items [i, i + r L) repeat by hash for every r with
 * i + r L <= that; every u in [i, from) is known not to be it.
 * Remembered per L (s->end) while the scan's i only grows: the answer
 * from an earlier i holds for every i up to it (per repetition, the
 * hashes of items compared again at each i and candidate were a fifth of
 * try_period). */
static inline long hash_end(rr_scan *s, long nitems, long i, long L, long from)
{
    if (s->end[L] >= i)
        return s->end[L];
    long u = from;
    while (u + L < nitems && s->h[u + L] == s->h[u])
        u++;
    s->end[L] = (int)u;
    return u;
}

/* Period L at item i, which try_period found repeating: its strides (rep
 * 1's differences) in s->stride, as try_period left them (checking every
 * repetition again for them was 0.5% of BERT-base's compile). */
static void strides_of(rr_scan *s, const rr_ent *e, long i, long L)
{
    const long b0 = s->start[i], b1 = s->start[i + L], len = span(s, i, L);
    for (long j = 0; j < len; j++)
        if (e[b0 + j].kind == RR_INSN)
            for (int k = 0; k < fields_of(e[b0 + j].op)->naddr; k++)
                s->stride[j * RR_NADDR + k] = e[b1 + j].off[k] - e[b0 + j].off[k];
}

/* Check period L at item i: how many times items [i, i + L) repeat with
 * constant strides (rep 1's differences are the strides, in s->stride),
 * and the instructions that saves. */
static rr_cand try_period(rr_scan *s, const rr_ent *e, long nitems, long i, long L)
{
    rr_cand c = {L, 1, 0};
    const long b0 = s->start[i], len = span(s, i, L);
    const long end = hash_end(s, nitems, i, L, i);
    for (long r = 1; i + r * L <= end; r++) {
        const long br = s->start[i + r * L], bp = s->start[i + (r - 1) * L];
        if (span(s, i + r * L, L) != len)
            break;
        int ok = 1;
        for (long j = 0; j < len && ok; j++) {
            const rr_ent *x = &e[b0 + j], *y = &e[br + j];
            /* (by shape: items equal by hash up to end (hash_end) are instructions of
             * one shape and no strides, which ent_same would find but for fixed) */
            if (s->byshape ? x->fixed : !ent_same(x, y)) {
                ok = 0;
                break;
            }
            if (x->kind != RR_INSN)
                continue;
            const isa_operand *const *ao;
            int na = op_addrs(x->op, &ao);
            for (int k = 0; k < na && ok; k++) {
                int64_t d = y->off[k] - e[bp + j].off[k];
                if (r == 1)
                    s->stride[j * RR_NADDR + k] = d;
                else
                    ok = s->stride[j * RR_NADDR + k] == d;
            }
        }
        if (!ok)
            break;
        c.reps = r + 1;
    }
    for (long j = 0; j < len && c.reps > 1 && !s->byshape; j++) /* (byshape: no loops yet) */
        if (e[b0 + j].kind == RR_INSN && e[b0 + j].depth >= ISA_MAX_LOOPS)
            c.reps = 1; /* no room for another level */
    if (c.reps < 2)
        return c;
    /* cost: loop, endl, and per distinct stride a register's li and addi */
    int64_t seen[RR_REGS + 1];
    int nseen = 0;
    for (long j = 0; j < len && nseen <= RR_REGS; j++) {
        if (e[b0 + j].kind != RR_INSN)
            continue;
        const isa_operand *const *ao;
        int na = op_addrs(e[b0 + j].op, &ao);
        for (int k = 0; k < na && nseen <= RR_REGS; k++) {
            int64_t d = s->stride[j * RR_NADDR + k], f = 0;
            for (int q = 0; q < nseen; q++)
                f |= seen[q] == d;
            if (d && !f)
                seen[nseen++] = d;
        }
    }
    c.save = (c.reps - 1) * len - (2 + 2 * nseen);
    return c;
}

/* The most period L at item i can save, its items repeating by hash up
 * to item end (hash_end): try_period counts a repetition r only while
 * i + r L <= end, and a loop costs at least its loop and endl.  A
 * candidate whose bound is no more than the best's save so far cannot be
 * taken (only a strictly larger save replaces the best), so skipping it
 * leaves the choice as it was: the multiples of a period that rolls (2L,
 * 3L, ...: double buffering makes several) each checked every repetition
 * to the end of the list, for a save smaller by the difference in body
 * length. */
static long save_bound(const rr_scan *s, long i, long L, long end)
{
    const long reps = (end - i) / L + 1;
    return (reps - 1) * span(s, i, L) - 2;
}

static void roll_in_place(rr_pool *pl, rr_vec *v, long at, int nsh);

/* Append to out the loop of candidate c at item i of list e, which is
 * out's own from where out ends on (roll_once: the loop's entries come
 * from at or after where they go): its first repetition with the strides
 * s->stride as a new loop level, rolled in turn where it went.  A loop
 * saves entries ((reps - 1) len > 2), so it ends before its repetitions
 * did. */
static void emit_loop(rr_pool *pl, rr_scan *s, const rr_ent *e, long i, const rr_cand *c, rr_vec *out)
{
    const long b0 = s->start[i], len = span(s, i, c->L);
    rr_ent lp = {.kind = RR_LOOP, .n = c->reps}, el = {.kind = RR_ENDL, .len = 1};
    lp.h = ent_hash(&lp);
    el.h = ent_hash(&el);
    const long at = out->n;
    rr_ent *body = out->v + at + 1;
    const rr_ent *from = e + b0;
    assert(body + len < from + c->reps * len); /* (room for the endl) */
    if (body > from) { /* nothing saved before it: the entries one up, from the last */
        for (long j = len - 1; j >= 0; j--)
            body[j] = from[j];
        from = body;
    }
    out->v[at] = lp;
    out->n = at + 1;
    int rel = 0; /* loops around the entry inside the item: the new level's index */
    for (long j = 0; j < len; j++) {
        rr_ent *x = &body[j];
        if (from != body)
            *x = from[j]; /* (forward: it writes where it read already) */
        if (x->kind == RR_ENDL)
            rel--;
        if (x->kind == RR_INSN) {
            const isa_operand *const *ao;
            int na = op_addrs(x->op, &ao);
            for (int k = 0; k < na; k++) {
                memmove(&x->st[k][rel + 1], &x->st[k][rel], (size_t)(x->depth - rel) * sizeof x->st[k][0]);
                x->st[k][rel] = s->stride[j * RR_NADDR + k];
            }
            x->depth++;
            x->h = ent_hash(x);
        }
        if (x->kind == RR_LOOP)
            rel++;
    }
    for (long j = 0; j < len; j++) /* their entries' strides have grown */
        if (body[j].kind == RR_LOOP)
            loop_hash(&body[j]);
    out->n += len;
    roll_in_place(pl, out, at + 1, 0);
    vec_push(out, &el);
    out->v[at].len = out->n - at;
    loop_hash(&out->v[at]);
}

/* The scan's items of list e (n entries): s->start, s->h and s->next;
 * returns their number.  nsh > 0: e is a kernel's entries as make_entries
 * made them (each an item, its shape below nsh) and no two of its shapes
 * have one key, so equal shapes are equal hashes (item_hash is one-to-one
 * in the key) and an item's hash can be its shape: the next of each found
 * through a table by shape instead of the open-addressed one. */
static long scan_items(rr_pool *pl, rr_scan *s, rr_buf *tabm, const rr_ent *e, long n, int nsh)
{
    long it = 0;
    s->byshape = nsh > 0;
    if (nsh) {
        *tabm = buf_take(pl, (size_t)nsh * sizeof(int));
        int *last = tabm->p;
        memset(last, 0xff, (size_t)nsh * sizeof(int)); /* -1 */
        for (it = 0; it < n; it++)
            s->start[it] = (int)it;
        for (long q = n - 1; q >= 0; q--) {
            s->h[q] = (uint64_t)e[q].shape;
            s->next[q] = last[e[q].shape];
            last[e[q].shape] = (int)q;
        }
        s->start[n] = (int)n;
        return n;
    }
    for (long j = 0; j < n; it++) {
        s->start[it] = (int)j;
        s->h[it] = item_hash(&e[j]);
        j += e[j].kind == RR_LOOP ? e[j].len : 1;
    }
    const long nitems = it;
    s->start[nitems] = (int)n;
    /* next item of the same hash: an open-addressed table of the last seen */
    long cap = 16;
    while (cap < 2 * nitems)
        cap *= 2;
    *tabm = buf_take(pl, (size_t)cap * sizeof(int));
    int *tab = tabm->p;
    for (long q = 0; q < cap; q++)
        tab[q] = -1;
    for (long q = nitems - 1; q >= 0; q--) {
        long slot = (long)(s->h[q] & (uint64_t)(cap - 1));
        while (tab[slot] >= 0 && s->h[tab[slot]] != s->h[q])
            slot = (slot + 1) & (cap - 1);
        s->next[q] = tab[slot];
        tab[slot] = (int)q;
    }
    return nitems;
}

/* The n entries at e, which lie in v from its end on, appended to v
 * where they are, or moved down to its end (the rewrite never overtakes
 * its reading). */
static void vec_move(rr_vec *v, const rr_ent *e, long n)
{
    rr_ent *to = v->v + v->n;
    if (to != e)
        for (long j = 0; j < n; j++) /* (forward: to is below e) */
            to[j] = e[j];
    v->n += n;
}

/* Candidate period L at item i of list e (hash_end from `from`) into
 * *best when it saves more; returns hash_end's. */
static inline long cand_at(rr_scan *s, const rr_ent *e, long nitems, long i, long L, long from, rr_cand *best)
{
    const long end = hash_end(s, nitems, i, L, from);
    if (end < i + L)
        return end; /* not twice by hash: saves nothing (most candidates) */
    if (save_bound(s, i, L, end) <= best->save)
        return end; /* cannot beat the best: a multiple of its period, as a rule */
    const rr_cand c = try_period(s, e, nitems, i, L);
    if (c.save > best->save)
        *best = c;
    return end;
}

/* One left-to-right scan of list v[from..) (nsh: scan_items'); when it
 * finds loops, the list rewritten with them where it is (each loop is
 * shorter than its repetitions: roll_in_place).  Returns the number of
 * loops (0: the list as it was: most scans find none). */
static long roll_once(rr_pool *pl, rr_vec *v, long from, int nsh)
{
    rr_ent *e = v->v + from;
    const long n = v->n - from;
    rr_scan s = {0};
    /* per item, sized per entry (at most as many): a pass less to count
     * them; the strides of a body, at most half the entries, and the
     * loops picked, at most one per two items, from the pool as well
     * (grown by realloc per scan, they were 0.2% of BERT-base's compile) */
    rr_buf mem[7] = {buf_take(pl, (size_t)(n + 1) * sizeof *s.start),
                     buf_take(pl, (size_t)(n + 1) * sizeof *s.h),
                     buf_take(pl, (size_t)(n + 1) * sizeof *s.next)};
    s.start = mem[0].p;
    s.h = mem[1].p;
    s.next = mem[2].p;
    mem[5] = buf_take(pl, (size_t)(n / 2 + 1) * RR_NADDR * sizeof *s.stride);
    s.stride = mem[5].p;
    const long nitems = scan_items(pl, &s, &mem[3], e, n, nsh);
    /* choose: the loop starting at each item that saves the most */
    mem[4] = buf_take(pl, (size_t)(nitems + 1) * sizeof *s.end);
    s.end = mem[4].p;
    for (long q = 0; q <= nitems; q++)
        s.end[q] = -1;
    mem[6] = buf_take(pl, (size_t)(nitems / 2 + 1) * (sizeof(rr_cand) + sizeof(long)));
    rr_cand *const pick = mem[6].p;
    long loops = 0, *const at = (long *)(pick + nitems / 2 + 1);
    for (long i = 0; i < nitems;) {
        rr_cand best = {0, 1, 0};
        long j = s.next[i];
        if (j >= 0 && i + 2 * (j - i) <= nitems) {
            /* the first candidate's period L1 and end e1: items [i, e1 + L1)
             * repeat by L1, so by every multiple (t + 1) L1 up to e1 - t L1,
             * where hash_end starts (the candidates of a long run of period
             * L1 are its multiples, each compared to the run's end: a
             * quarter of the choosing on the prefill layer) */
            const long L1 = j - i, e1 = cand_at(&s, e, nitems, i, L1, i, &best);
            j = s.next[j];
            for (int t = 1; t < RR_CANDIDATES && j >= 0 && i + 2 * (j - i) <= nitems; t++, j = s.next[j])
                cand_at(&s, e, nitems, i, j - i, e1 > j - L1 && j - i == (t + 1) * L1 ? e1 - t * L1 : i, &best);
        }
        if (best.save <= 0) {
            i++;
            continue;
        }
        at[loops] = i;
        pick[loops++] = best;
        i += best.L * best.reps;
    }
    /* rewrite (at items out of the scan's order: s.end no longer holds; nothing
     * reads it: only the choosing calls hash_end) */
    if (loops)
        v->n = from;
    long i = 0;
    for (long q = 0; q < loops; q++) {
        vec_move(v, &e[s.start[i]], s.start[at[q]] - s.start[i]);
        strides_of(&s, e, at[q], pick[q].L);
        emit_loop(pl, &s, e, at[q], &pick[q], v);
        i = at[q] + pick[q].L * pick[q].reps;
    }
    if (loops)
        vec_move(v, &e[s.start[i]], n - s.start[i]);
    for (int q = 6; q >= 0; q--)
        buf_give(pl, mem[q]);
    return loops;
}

/* Roll the list v[at..) where it is: scans until one makes no loop (outer
 * loops appear once bodies hold loops), a few at most.  Each rewrites the
 * list in place (two lists written by turns, a body's rolled one copied
 * back by memcpy, cost BERT-base's compile 1.0 M instructions more,
 * callgrind). */
static void roll_in_place(rr_pool *pl, rr_vec *v, long at, int nsh)
{
    for (int pass = 0; pass < ISA_MAX_LOOPS; pass++)
        if (!roll_once(pl, v, at, pass ? 0 : nsh))
            break;
}

/* ---- registers and emission ----
 *
 * A register of a loop nest holds, at every point of the code, a sum over
 * the loops open there of (that loop's index) x (the register's
 * coefficient for the loop), plus a constant K the compiler knows.  An
 * operand whose address steps by stride s_L in each loop L around it can
 * use a register whose coefficient for each such L is s_L; its offset is
 * then its first address less K.  Coefficients for loops the operand is
 * not in are free, so operands of sibling loops share registers.  The end
 * of a loop body adds the loop's coefficient, and undoes whatever the
 * body changed K by (inner loops leave their count x coefficient behind),
 * with one addi; after the loop, K holds what it added.  The li that
 * starts a register gives K a value low enough that no offset is negative
 * (offsets are unsigned). */

typedef struct {
    int nregs;       /* RR_REGS + 1: out of registers */
    long nloops;
    int64_t *coef;   /* [register][loop id], read where def is set */
    char *def;       /* coefficient set */
    int *assign;     /* per entry and address operand: register, 0 none */
    rr_buf mem;      /* the three's, from the pool (three allocations per nest,
                      * zeroed, and their frees were 0.3% of BERT-base's compile) */
} rr_regs;

static void regs_free(rr_pool *pl, rr_regs *R)
{
    buf_give(pl, R->mem);
}

/* Registers for nest e[0..n) (one loop), in memory from pool pl
 * (regs_free): 0, or -1 when it needs more than RR_REGS. */
static int assign_regs(rr_pool *pl, const rr_ent *e, long n, rr_regs *R)
{
    R->nregs = 0;
    R->nloops = 0;
    for (long j = 0; j < n; j++)
        R->nloops += e[j].kind == RR_LOOP;
    const size_t ncoef = (size_t)(RR_REGS * R->nloops), nassign = (size_t)n * RR_NADDR;
    const size_t zeroed = nassign * sizeof *R->assign + ncoef; /* assign, then def */
    R->mem = buf_take(pl, ncoef * sizeof *R->coef + zeroed);
    R->coef = R->mem.p;
    R->assign = (int *)(R->coef + ncoef);
    R->def = (char *)(R->assign + nassign);
    memset(R->assign, 0, zeroed);
    long path[ISA_MAX_LOOPS], ids = 0;
    int d = 0;
    for (long j = 0; j < n; j++) {
        if (e[j].kind == RR_LOOP) {
            path[d++] = ids++;
            continue;
        }
        if (e[j].kind == RR_ENDL) {
            d--;
            continue;
        }
        const isa_operand *const *ao;
        int na = op_addrs(e[j].op, &ao);
        assert(e[j].depth == d);
        for (int k = 0; k < na; k++) {
            const int64_t *st = e[j].st[k];
            int any = 0;
            for (int l = 0; l < d; l++)
                any |= st[l] != 0;
            if (!any)
                continue;
            /* the compatible register with the most coefficients already set */
            int best = -1, bestset = -1;
            for (int r = 0; r < R->nregs; r++) {
                int ok = 1, set = 0;
                for (int l = 0; l < d && ok; l++) {
                    long id = r * R->nloops + path[d - 1 - l];
                    ok = !R->def[id] || R->coef[id] == st[l];
                    set += R->def[id];
                }
                if (ok && set > bestset) {
                    best = r;
                    bestset = set;
                }
            }
            if (best < 0) {
                if (R->nregs == RR_REGS) {
                    R->nregs = RR_REGS + 1;
                    return -1;
                }
                best = R->nregs++;
            }
            for (int l = 0; l < d; l++) {
                long id = best * R->nloops + path[d - 1 - l];
                R->def[id] = 1;
                R->coef[id] = st[l];
            }
            R->assign[j * RR_NADDR + k] = best + 1;
        }
    }
    return 0;
}

/* Unroll, into out, the innermost loop of nest e[0..n) that holds an
 * operand with a stride and costs the fewest instructions to unroll (one
 * with none when there is no such loop). */
static void unroll_one(const rr_ent *e, long n, rr_vec *out)
{
    long pick = -1, cost = 0;
    int pick_strided = 0;
    for (long j = 0; j < n; j++) {
        if (e[j].kind != RR_LOOP)
            continue;
        int inner = 0, strided = 0;
        for (long q = j + 1; q < j + e[j].len - 1; q++) {
            inner |= e[q].kind == RR_LOOP;
            for (int k = 0; e[q].kind == RR_INSN && k < fields_of(e[q].op)->naddr; k++)
                strided |= e[q].st[k][0] != 0;
        }
        long c = (long)(e[j].n - 1) * (e[j].len - 2);
        if (!inner && (pick < 0 || strided > pick_strided || (strided == pick_strided && c < cost))) {
            pick = j;
            cost = c;
            pick_strided = strided;
        }
    }
    assert(pick >= 0);
    vec_append(out, e, pick);
    for (int64_t it = 0; it < e[pick].n; it++)
        for (long q = pick + 1; q < pick + e[pick].len - 1; q++) {
            rr_ent x = e[q];
            const isa_operand *const *ao;
            int na = op_addrs(x.op, &ao);
            for (int k = 0; k < na; k++) {
                x.off[k] += it * x.st[k][0];
                memmove(&x.st[k][0], &x.st[k][1], (size_t)(x.depth - 1) * sizeof x.st[k][0]);
            }
            x.depth--;
            vec_push(out, &x);
        }
    vec_append(out, e + pick + e[pick].len, n - pick - e[pick].len);
    /* the loops around it grew */
    long open[ISA_MAX_LOOPS];
    int d = 0;
    for (long j = 0; j < out->n; j++) {
        if (out->v[j].kind == RR_LOOP)
            open[d++] = j;
        else if (out->v[j].kind == RR_ENDL) {
            d--;
            out->v[open[d]].len = j - open[d] + 1;
        }
    }
}

/* Where emission writes, and (from set) where it notes which of the
 * kernel's instructions each it writes copies: from[pc], pc = s->n - first
 * < nfrom, set for copies only (code_keep keeps them for emit_as_code). */
typedef struct {
    isa_stream *s;    /* the new stream */
    rr_kstat *ks;
    rr_scratch *sc;
    int *from;
    long first, nfrom;
} rr_out;

/* The next instruction of the new stream: entry x's copied, its addresses
 * to be set (noted in o->from). */
static isa_insn *copy_in(rr_out *o, const rr_ent *x)
{
    isa_insn *in = isa_stream_room(o->s);
    isa_insn_copy(in, x->in);
    const long pc = (long)o->s->n - o->first;
    if (o->from && pc < o->nfrom)
        o->from[pc] = x->idx;
    return in;
}

/* The next instruction of the new stream, built in place (an
 * instruction is 128 bytes, 288 when this was written: no copy made aside), then counted in by
 * commit_as: an operand out of its field (an offset or a register value the
 * pass got wrong) is an internal error. */
static isa_insn *room(rr_out *o, int op)
{
    isa_insn *in = isa_stream_room(o->s);
    isa_insn_init(in, op);
    return in;
}

/* commit_as's internal error: apart, with its message's buffer (a frame
 * with it for every instruction rolled cost BERT-base's compile 0.5%). */
static __attribute__((noinline, cold)) void commit_failed(const rr_out *o)
{
    char msg[256];
    isa_check(&o->s->insns[o->s->n], msg, sizeof msg);
    fprintf(stderr, "be_reroll: internal error: instruction %zu: %s\n", o->s->n, msg);
    abort();
}

/* Count in the next instruction, its every operand checked by fits: its
 * format's isa_fits_FMT where the op is known (li, addi, loop, endl:
 * isa_check's look-up of the format, a switch, was dearer than the check),
 * else isa_fits. */
static inline __attribute__((always_inline)) void commit_as(rr_out *o, int (*fits)(const isa_insn *))
{
    if (!fits(&o->s->insns[o->s->n]))
        commit_failed(o);
    o->s->n++;
}

/* Instruction in's address operand q (of its op's, f) := register reg
 * (0..15: the pass's own) and offset off, stored straight: the offset's
 * bits returned for the caller's check, or'ed over the instruction's
 * operands, as addrs_failed takes them (isa_addr_at's checked stores and
 * a call of isa_check_addrs per instruction were 1% of BERT-base's
 * compile). */
static inline uint64_t addr_store(isa_insn *in, const rr_opfields *f, int q, int reg, int64_t off)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion" /* checked: the caller, by the bits returned */
    *addr_at(in, f, q) = (isa_addr){.reg = reg, .off = off};
#pragma GCC diagnostic pop
    return (uint64_t)off;
}

/* The next instruction, a copy of one of the stream rolled (checked when
 * it was emitted: only its addresses can be out of field), with an offset
 * addr_store stored out of [0, 2^ISA_ADDR_OFF_BITS) (the offsets or'ed
 * set a bit from there up; so does its bad, shifted there, as
 * isa_check_addrs refused it): its offsets off[] stored again through
 * isa_addr_at, for commit_failed's message. */
static __attribute__((noinline, cold)) void addrs_failed(const rr_out *o, const rr_opfields *f, const int *reg,
                                                         const int64_t *off)
{
    for (int q = 0; q < f->naddr; q++)
        *addr_at(&o->s->insns[o->s->n], f, q) = isa_addr_at(reg[q], off[q]);
    commit_failed(o);
}

/* Count in in, the next instruction, a copy of one of the stream rolled
 * with its address operands (its op's, f) set to reg[q] + off[q]: only
 * they can be out of field (checked when it was emitted), checked
 * together, and its bad as isa_check_addrs refused it. */
static inline void commit_copy(rr_out *o, isa_insn *in, const rr_opfields *f, const int *reg, const int64_t *off)
{
    uint64_t wide = (uint64_t)in->bad << ISA_ADDR_OFF_BITS;
    for (int q = 0; q < f->naddr; q++)
        wide |= addr_store(in, f, q, reg[q], off[q]);
    if (wide >> ISA_ADDR_OFF_BITS)
        addrs_failed(o, f, reg, off);
    o->s->n++;
}

static void push(rr_out *o, const isa_insn *in)
{
    isa_insn_copy(isa_stream_room(o->s), in);
    commit_as(o, isa_fits);
}

static void push_reg(rr_out *o, int op, int reg, int64_t v)
{
    isa_insn *in = room(o, op);
    isa_set(in, reg, reg);
    in->val = v;
    commit_as(o, isa_fits_REG); /* (li and addi) */
}

static void emit_list(rr_out *o, const rr_ent *e, long n);

/* Walk nest e[0..n) with registers R starting at init[]: emit it into o,
 * or (low set) find, per register, the lowest first address less K of an
 * operand using it (an offset is never negative: init is set below it). */
static void walk_nest(rr_out *o, const rr_ent *e, long n, const rr_regs *R, const int64_t *init, int64_t *low)
{
    const int emit = !low;
    int64_t K[RR_REGS], entry[ISA_MAX_LOOPS][RR_REGS], cnt[ISA_MAX_LOOPS];
    long path[ISA_MAX_LOOPS], ids = 0;
    int d = 0;
    memcpy(K, init, sizeof K);
    for (int r = 0; r < R->nregs && emit; r++)
        push_reg(o, ISA_OP_LI, r + 1, init[r]);
    for (long j = 0; j < n; j++) {
        const rr_ent *x = &e[j];
        if (x->kind == RR_LOOP) {
            memcpy(entry[d], K, sizeof K);
            cnt[d] = x->n;
            path[d++] = ids++;
            if (!emit)
                continue;
            room(o, ISA_OP_LOOP)->val = x->n;
            commit_as(o, isa_fits_LOOP);
            o->ks->loops++;
            if (d > o->ks->depth)
                o->ks->depth = d;
        } else if (x->kind == RR_ENDL) {
            d--;
            const long L = path[d];
            for (int r = 0; r < R->nregs; r++) {
                const int64_t c = R->def[r * R->nloops + L] ? R->coef[r * R->nloops + L] : 0;
                if (emit && c + entry[d][r] - K[r])
                    push_reg(o, ISA_OP_ADDI, r + 1, c + entry[d][r] - K[r]);
                K[r] = entry[d][r] + cnt[d] * c;
            }
            if (!emit)
                continue;
            room(o, ISA_OP_ENDL);
            commit_as(o, isa_fits_NONE);
        } else if (!emit) {
            const int na = fields_of(x->op)->naddr;
            for (int k = 0; k < na; k++) {
                const int r = R->assign[j * RR_NADDR + k];
                const int64_t off = x->off[k];
                if (r && off - K[r - 1] < low[r - 1])
                    low[r - 1] = off - K[r - 1];
            }
        } else {
            isa_insn *in = copy_in(o, x);
            const rr_opfields *f = fields_of(x->op);
            const int *reg = &R->assign[j * RR_NADDR];
            int64_t off[RR_NADDR];
            for (int k = 0; k < f->naddr; k++)
                off[k] = x->off[k] - (reg[k] ? K[reg[k] - 1] : 0);
            commit_copy(o, in, f, reg, off);
        }
    }
}

/* Emit nest e[0..n) (one loop) with its registers. */
static void emit_nest(rr_out *o, const rr_ent *e, long n)
{
    rr_regs R = {0};
    if (assign_regs(&o->sc->pool, e, n, &R) < 0) {
        rr_vec u = {0};
        regs_free(&o->sc->pool, &R);
        unroll_one(e, n, &u);
        o->ks->unrolled++;
        emit_list(o, u.v, u.n);
        vec_free(&u);
        return;
    }
    int64_t init[RR_REGS] = {0}, low[RR_REGS] = {0};
    if (R.nregs) /* (a nest of no register, as of waits and sigs, has no lows to find) */
        walk_nest(o, e, n, &R, init, low);
    for (int r = 0; r < R.nregs; r++)
        init[r] = low[r]; /* K moves with init: every offset becomes >= 0 */
    walk_nest(o, e, n, &R, init, NULL);
    regs_free(&o->sc->pool, &R);
}

static void emit_list(rr_out *o, const rr_ent *e, long n)
{
    for (long j = 0; j < n;) {
        if (e[j].kind == RR_LOOP) {
            emit_nest(o, &e[j], e[j].len);
            j += e[j].len;
        } else {
            static const int none[RR_NADDR]; /* (make_entries: no register) */
            isa_insn *in = copy_in(o, &e[j]); /* its first iteration's addresses: unroll_one moves them */
            commit_copy(o, in, fields_of(e[j].op), none, e[j].off);
            j++;
        }
    }
}

/* Does rolled instruction t (registers reg) issue original s[k]?  Its
 * fields compared once per rolled instruction (seen[pc]: an original of
 * its shape, the one it copies (check_same) or the one it was first
 * compared with, or -1), after that the shapes (shape: per original,
 * equal exactly when insn_same is: the originals' every field read
 * again per iteration was a tenth of a prefill compile), and the
 * addresses resolved every time (against soff[k], s[k]'s offsets). */
static int issues(const isa_insn *in, const int64_t *reg, const isa_insn *s, long k, const int *shape,
                  const int64_t *soff, int *seen)
{
    if (*seen < 0 ? !insn_same(in, &s[k]) : shape[*seen] != shape[k])
        return 0;
    if (*seen < 0)
        *seen = (int)k;
    const rr_opfields *f = fields_of(in->op);
    for (int q = 0; q < f->naddr; q++) {
        const isa_addr *a = caddr_at(in, f, q);
        if (a->off + reg[a->reg] != soff[q])
            return 0;
    }
    return 1;
}

/* Scratch array b (its contents not kept) with room for n elements of
 * `size` bytes: made again, in sc's arena, when b is short. */
static void *scratch_array(const rr_scratch *sc, isa_buf *b, long n, size_t size)
{
    if ((size_t)n * size <= b->cap)
        return b->p;
    b->arena = sc->arena;
    return isa_buf_reserve(b, (size_t)n * size, 0);
}

/* Array b (its contents not kept) with room for n elements of `size`
 * bytes, on the heap: roll_prefixed's, small, whose memory taken from
 * the arena moved the program's streams' slots there (their growths
 * copied 0.2 M instructions more of the decode compile). */
static void *heap_array(isa_buf *b, long n, size_t size)
{
    return isa_buf_reserve(b, (size_t)n * size, 0);
}

/* Run stream t[0..n) as the sequencer would, addresses resolved, and
 * check it issues exactly the instructions of s[0..m) (shape: s's, as
 * issues takes them).  from[pc], pc < nfrom: the original that t's
 * instruction pc (not li, addi, loop or endl) is a copy of, addresses
 * aside (copy_in): its shape is the copy's, so the copy's fields are
 * compared with an original's by shape from the first (comparing them
 * field by field was 0.7% of BERT-base's compile). */
static void check_same(rr_scratch *sc, const isa_insn *t, long n, const isa_insn *s, long m, const int *shape,
                       int *from, long nfrom)
{
    int64_t reg[ISA_NREGS] = {0};
    long start[ISA_MAX_LOOPS];
    int64_t left[ISA_MAX_LOOPS];
    int d = 0;
    long k = 0;
    if (n <= nfrom) { /* (as a rule: from is seen, written to by no issues) */
        sc->seen = from;
    } else {
        sc->seen = scratch_array(sc, &sc->seenm, n, sizeof *sc->seen);
        for (long pc = 0; pc < n; pc++) /* (pc's of li, addi, loop and endl: never read) */
            sc->seen[pc] = pc < nfrom ? from[pc] : -1;
    }
    for (long pc = 0; pc < n; pc++) {
        const isa_insn *in = &t[pc];
        if (in->op == ISA_OP_LI || in->op == ISA_OP_ADDI) {
            reg[in->reg] = (in->op == ISA_OP_LI ? 0 : reg[in->reg]) + in->val;
        } else if (in->op == ISA_OP_LOOP) {
            start[d] = pc;
            left[d++] = in->val - 1;
        } else if (in->op == ISA_OP_ENDL) {
            if (left[d - 1]-- > 0)
                pc = start[d - 1];
            else
                d--;
        } else {
            if (k >= m || !issues(in, reg, s, k, shape, sc->soff[k], &sc->seen[pc])) {
                fprintf(stderr, "be_reroll: internal error: rolled instruction %ld differs from the original %ld\n",
                        pc, k);
                abort();
            }
            k++;
        }
    }
    if (k != m) {
        fprintf(stderr, "be_reroll: internal error: %ld instructions rolled, %ld original\n", k, m);
        abort();
    }
}

/* Template t's code's operands with a register as rr_low's (code_keep
 * passed: each register an operand uses is its nest's li's). */
static void code_lows(rr_scratch *sc, rr_tmpl *t)
{
    long most = 0;
    for (long pc = 0; pc < t->ncode; pc++)
        most += t->code[pc].na;
    t->low = scratch_array(sc, &t->lowm, most, sizeof *t->low);
    int ord[ISA_NREGS] = {0}, nli = 0;
    int64_t val[ISA_NREGS] = {0};
    long nlow = 0;
    for (long pc = 0; pc < t->ncode; pc++) {
        const rr_code *k = &t->code[pc];
        if (k->op == ISA_OP_LI) {
            ord[k->reg] = nli++;
            val[k->reg] = k->val;
        }
        for (int q = 0; q < k->na; q++) {
            const int r = k->areg[q];
            if (!r)
                continue;
            const rr_low g = {ord[r], k->shape * RR_NADDR + q, k->aoff[q] + val[r]};
            rr_low *last = nlow ? &t->low[nlow - 1] : NULL;
            if (last && last->li == g.li && last->sq == g.sq)
                last->base = g.base < last->base ? g.base : last->base;
            else
                t->low[nlow++] = g;
        }
    }
    t->nlow = nlow;
    t->nli = nli;
}

/* Keep code c[0..n), just emitted for template t and checked against its
 * kernel (check_same: sc->seen; from[pc], pc < nfrom: the instruction
 * each copied), for emit_as_code; a code it cannot copy leaves no
 * template (its kernels roll from scratch, alike).  It can copy a code
 * whose every instruction is copied from one of the template's shape and
 * whose every register an operand uses is set by a li of its nest (a
 * nest's li's lead it): checked as the code is kept (a pass of its own
 * over the code was 0.5% of BERT-base's compile). */
static void code_keep(rr_scratch *sc, rr_tmpl *t, const isa_insn *c, long n, const int *from, long nfrom)
{
    t->code = scratch_array(sc, &t->codem, n, sizeof *t->code);
    int nest[ISA_NREGS] = {0}, at = 0, direct = 1;
    for (long pc = 0; pc < n; pc++) {
        rr_code *k = &t->code[pc];
        const rr_opfields *f = fields_of(c[pc].op);
        /* (field by field: areg and aoff past na are never read) */
        k->op = c[pc].op;
        k->na = 0;
        k->reg = c[pc].reg;
        k->val = c[pc].val;
        k->shape = -1;
        k->idx = -1;
        const int copied = !f->pass;
        if (copied) {
            k->shape = sc->seen[pc] >= 0 ? t->shape[sc->seen[pc]] : -2; /* -2: never issued, never alike */
            k->idx = pc < nfrom ? from[pc] : -1;
            k->na = (uint16_t)f->naddr;
            direct &= k->shape >= 0 && k->idx >= 0 && t->shape[k->idx] == k->shape;
        } else if (k->op == ISA_OP_LI && k->reg > 0 && k->reg < ISA_NREGS) {
            at += !pc || c[pc - 1].op != ISA_OP_LI;
            nest[k->reg] = at;
        } else if (k->op == ISA_OP_LI) {
            direct = 0;
        }
        for (int q = 0; q < f->naddr; q++) {
            const int r = k->areg[q] = caddr_at(&c[pc], f, q)->reg;
            k->aoff[q] = caddr_at(&c[pc], f, q)->off;
            if (copied && r)
                direct &= r > 0 && r < ISA_NREGS && nest[r] == at;
        }
    }
    t->ncode = n;
    t->nlow = -1; /* (code_lows: made when a kernel fits, as most templates serve none) */
    if (!direct)
        t->n = 0;
}

/* Emit kernel s, which fits template t (tmpl_fits: t->delta), as the
 * template's code (cut set: its code up to the cut, for s's instructions
 * before it, which fit the template's there: roll_prefixed): what
 * rolling s from scratch would write, without rolling or walking.  The
 * loops, steps and registers are the template's
 * (they come from the rolled list's strides alone); each instruction is
 * s's copy of the one the template's copied, of the shape the template's
 * issued (so its fields are that shape's: tmpl_fits found the shapes one
 * to one), each address the template's plus its shape's delta less what
 * its register's li moved by.  A register then holds, at every step, what
 * it held for the template plus its li's move, and every address it
 * resolves is the template's kernel's plus the delta, which is s's: the
 * code issues s exactly, as the template's (which check_same passed)
 * issues its kernel.  A li starts its register at what walk_nest's lowest
 * would be for s, the least of 0 and each of its operands' offsets less
 * the register's steps so far (the template's address there plus its
 * li's value, plus the delta), so the code is the one a fresh roll
 * writes.  Checking a kernel this way costs the size of the rolled code,
 * not of the kernel (check_same ran the loops: a tenth of the prefill
 * layer's rolling; comparing each copy's fields again, 1.5% of BERT-base's
 * compile). */
static void emit_as_code(rr_out *o, rr_tmpl *t, const isa_insn *s, const rr_cut *cut)
{
    const long n = cut ? cut->code : t->ncode;
    isa_stream_room_n(o->s, (size_t)n);
    if (t->nlow < 0)
        code_lows(o->sc, t);
    const int nli = cut ? cut->nli : t->nli; /* (code_lows counts them) */
    t->li = scratch_array(o->sc, &t->lim, t->nli + 1, sizeof *t->li);
    for (int m = 0; m < t->nli; m++)
        t->li[m] = 0;
    const int64_t *delta = t->delta[0]; /* (rr_low.sq indexes its words) */
    for (long i = 0; i < t->nlow && t->low[i].li < nli; i++) { /* (code[0, n)'s: they come first) */
        const rr_low *g = &t->low[i];
        const int64_t v = g->base + delta[g->sq];
        if (v < t->li[g->li])
            t->li[g->li] = v;
    }
    int64_t moved[ISA_NREGS] = {0};
    int d = 0, m = 0;
    /* the copies written at a cursor of its own, the stream's count set
     * before anything else writes (o->s->n read back after every copy,
     * which may alias it for all the compiler knows, cost 0.2 M of
     * BERT-base's compile) */
    isa_stream *const os = o->s;
    isa_insn *in = os->insns + os->n; /* (room made: isa_stream_room_n) */
    const rr_code *const code = t->code;
    const int64_t(*const tdelta)[RR_NADDR] = t->delta;
    for (long pc = 0; pc < n; pc++) {
        const rr_code *k = &code[pc];
        if (k->shape >= 0) { /* an instruction copied (code_keep: li, addi, loop and endl have none) */
            isa_insn_copy(in, &s[k->idx]);
            const rr_opfields *f = fields_of(k->op);
            const int64_t *delta = tdelta[k->shape];
            /* (commit_copy's check, on its addresses only: the copy's other fields are
             * the kernel's, as emitted; commit_copy itself, with the offsets in an
             * array first, was 0.66 M more of BERT-base's 48.5 M, callgrind) */
            uint64_t wide = 0;
            for (int q = 0; q < k->na; q++)
                wide |= addr_store(in, f, q, k->areg[q], k->aoff[q] + delta[q] - moved[k->areg[q]]);
            if (wide >> ISA_ADDR_OFF_BITS) { /* (the offsets again, for the message) */
                int64_t off[RR_NADDR];
                for (int q = 0; q < k->na; q++)
                    off[q] = k->aoff[q] + delta[q] - moved[k->areg[q]];
                os->n = (size_t)(in - os->insns);
                addrs_failed(o, f, k->areg, off);
            }
            in++;
            continue;
        }
        os->n = (size_t)(in - os->insns);
        if (k->op == ISA_OP_LI) {
            moved[k->reg] = t->li[m] - k->val;
            push_reg(o, ISA_OP_LI, k->reg, t->li[m++]);
        } else if (k->op == ISA_OP_ADDI) {
            push_reg(o, ISA_OP_ADDI, k->reg, k->val);
        } else if (k->op == ISA_OP_LOOP) {
            room(o, ISA_OP_LOOP)->val = k->val;
            commit_as(o, isa_fits_LOOP);
            o->ks->loops++;
            if (++d > o->ks->depth)
                o->ks->depth = d;
        } else {
            room(o, ISA_OP_ENDL);
            commit_as(o, isa_fits_NONE);
            d--;
        }
        in = os->insns + os->n;
    }
    os->n = (size_t)(in - os->insns);
    o->ks->unrolled += t->unrolled; /* (0 for a template with cuts) */
}

/* Entry x's key and shape, its instruction x->in's, given the shape of the
 * instruction before it (-1 none).  Kernels repeat: most often the shape
 * that followed that shape last time (succ) follows again, and when that
 * shape's first instruction has x's fields it is x's shape, the one
 * shape_of would find (one shape per class of insn_same, whose equal
 * fields make equal keys), with its key: no hash of x's fields and no
 * probe (they were two thirds of make_entries on the prefill layer). */
static void shape_guess(rr_shapes *sh, rr_ent *x, int before)
{
    const int g = before >= 0 ? sh->succ[before] : -1;
    if (g >= 0 && insn_same(&sh->rep[g], x->in)) {
        x->shape = g;
        x->key = sh->rkey[g];
    } else {
        x->key = insn_key(x->in);
        x->shape = shape_of(sh, x->in, x->key);
    }
    if (before >= 0)
        sh->succ[before] = x->shape;
}

/* The kernel's entries, one per instruction, its shapes in sc->shapes:
 * 0 when the kernel already uses loops or registers (not code this back
 * half makes). */
static int make_entries(rr_scratch *sc, const isa_insn *s, long n)
{
    rr_vec *ev = &sc->e;
    rr_shapes *sh = &sc->shapes;
    long cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    const int grown = cap > sh->cap;
    if (grown) {
        sc->tabm.arena = sc->arena;
        sh->tab = isa_buf_reserve(&sc->tabm, (size_t)cap * sizeof *sh->tab, 0);
        sh->cap = cap;
    }
    sh->gen = slots_gen(sh->tab, sh->cap, grown, sh->gen);
    sh->next = 0;
    sh->clash = 0;
    if (n + 1 > ev->cap) {
        ev->mem.arena = sc->arena;
        ev->v = isa_buf_reserve(&ev->mem, (size_t)(n + 1) * sizeof *ev->v, 0);
        ev->cap = (long)(ev->mem.cap / sizeof *ev->v);
    }
    sh->mask = cap - 1;
    /* (in locals: the entries' stores may alias the structs for all the compiler knows) */
    rr_ent *const ents = ev->v;
    int64_t(*const soff)[RR_NADDR] = sc->soff;
    int before = -1; /* the shape before */
    /* one pass over the kernel's instructions (they are large: each is read once) */
    for (long j = 0; j < n; j++) {
        const rr_opfields *f = fields_of(s[j].op);
        int plain = !f->pass;
        rr_ent *x = &ents[j];
        for (int k = 0; k < f->naddr; k++) {
            const isa_addr *a = caddr_at(&s[j], f, k);
            plain &= a->reg == 0;
            x->off[k] = soff[j][k] = a->off;
        }
        if (!plain)
            return 0;
        x->kind = RR_INSN;
        x->idx = (int)j;
        x->in = &s[j];
        x->op = s[j].op;
        shape_guess(sh, x, before);
        before = x->shape;
        x->fixed = f->fixed;
        x->depth = 0;
        x->h = x->key; /* (ent_hash without strides) */
        x->n = 0;
        x->len = 1;
    }
    ev->n = n;
    return 1;
}

/* The template's instructions grouped by shape (rr_tmpl: shape, pos, off,
 * at), from the kernel's entries e[0..n): a counting sort. */
static void tmpl_index(const rr_scratch *sc, rr_tmpl *t, const rr_ent *e, long n)
{
    t->shape = scratch_array(sc, &t->shapem, n, sizeof *t->shape);
    t->pos = scratch_array(sc, &t->posm, n, sizeof *t->pos);
    t->off = scratch_array(sc, &t->offm, n, sizeof *t->off);
    t->delta = scratch_array(sc, &t->deltam, t->nsh + 1, sizeof *t->delta);
    t->at = scratch_array(sc, &t->atm, t->nsh + 1, sizeof *t->at);
    /* (in locals: the stores may alias t's fields for all the compiler knows) */
    long *const at = t->at;
    int *const shape = t->shape;
    uint32_t *const pos = t->pos;
    int64_t(*const off)[RR_NADDR] = t->off;
    memset(at, 0, (size_t)(t->nsh + 1) * sizeof *at);
    for (long j = 0; j < n; j++) {
        shape[j] = e[j].shape;
        at[shape[j] + 1]++;
    }
    for (int q = 0; q < t->nsh; q++)
        at[q + 1] += at[q];
    for (long j = 0; j < n; j++) { /* at[q] moves to the end of shape q's */
        const long i = at[shape[j]]++;
        pos[i] = (uint32_t)((size_t)j * sizeof(isa_insn));
        memcpy(off[i], e[j].off, sizeof off[i]);
    }
    for (int q = t->nsh; q > 0; q--) /* back to the starts */
        at[q] = at[q - 1];
    at[0] = 0;
}

/* Roll kernel s[0..n) from scratch, in the entries' list (sc->e), and
 * make it the template: 0 when it is not code this back half makes. */
static int roll_fresh(rr_scratch *sc, rr_tmpl *t, const isa_insn *s, long n)
{
    t->n = 0;
    if (!make_entries(sc, s, n))
        return 0;
    t->nsh = sc->shapes.next;
    t->shop = scratch_array(sc, &t->shopm, t->nsh, sizeof *t->shop);
    for (int q = 0; q < t->nsh; q++)
        t->shop[q] = sc->shapes.rep[q].op;
    tmpl_index(sc, t, sc->e.v, n);
    /* rolled where the entries are (the entries' list, grown to the
     * largest kernel, stays for the next), and emitted from there: the
     * template keeps the code (code_keep), not the list (copying each
     * fresh roll's list, up to 100 KB of entries, was a sixth of
     * BERT-base's page faults) */
    roll_in_place(&sc->pool, &sc->e, 0, sc->shapes.clash ? 0 : t->nsh);
    t->n = (size_t)n * sizeof(isa_insn) <= UINT32_MAX ? n : 0; /* (pos) */
    return 1;
}

/* Room in t->keys for the kernel's nsh shapes' keys, empty for this use
 * (keys_enter). */
static void keys_clear(const rr_scratch *sc, rr_tmpl *t, long nsh)
{
    long cap = 16;
    while (cap < 2 * nsh)
        cap *= 2;
    const int grown = cap > t->kcap;
    if (grown) {
        t->kcap = cap;
        t->keys = scratch_array(sc, &t->keysm, cap, sizeof *t->keys);
    }
    t->kgen = slots_gen(t->keys, t->kcap, grown, t->kgen);
    t->kmask = cap - 1;
}

/* Enter shape q's key in t->keys: 0 when a shape entered before has it.
 * A table (sorting the keys was 1% of BERT-base's compile). */
static int keys_enter(rr_tmpl *t, uint64_t key, int q)
{
    long slot = (long)(key & (uint64_t)t->kmask);
    for (; t->keys[slot].gen == t->kgen; slot = (slot + 1) & t->kmask)
        if (t->keys[slot].key == key)
            return 0;
    t->keys[slot] = (rr_slot){key, q, t->kgen};
    return 1;
}

/* A key of an instruction of op whose fields are the pairs hv[0..np)
 * (masked): equal for equal instructions, as insn_key's, but from the
 * words shape_scan has loaded (insn_key of each shape's first, read
 * again, was a tenth of BERT-base's template check). */
static inline __attribute__((always_inline)) uint64_t pairs_key(int op, const rr_pair *hv, int np)
{
    uint64_t h = ((uint64_t)op + 0x5eed) * 0x9e3779b97f4a7c15ull;
#pragma GCC unroll 8
    for (int i = 0; i < np; i++)
        h = ((h ^ hv[i][0]) * 0x9e3779b97f4a7c15ull ^ hv[i][1]) * 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 32)) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* pairs_key of instruction in: the key tmpl_shapes gives a shape whose
 * first instruction it is (keys_has compares with those; insn_key's
 * words make other keys). */
static uint64_t fields_key(const isa_insn *in)
{
    const rr_opfields *f = fields_of(in->op);
    rr_pair hv[RR_NPAIRS];
    for (int q = 0; q < f->np; q++)
        hv[q] = *(const rr_pair *)((const char *)in + f->pair[q]) & f->pmask[q];
    return pairs_key(in->op, hv, f->np);
}

/* shape_fits for an op of np pairs of words (rr_opfields), naddr
 * addresses and its op in its first pair or not (op_paired): inline with
 * them constants, so that the pairs' offsets, masks and words stay in
 * registers and the loops over them unroll, the first instruction's (and
 * its key's: a shape in seven is one instruction) as the rest's. */
static inline __attribute__((always_inline)) int shape_scan(rr_tmpl *t, const isa_insn *s, int sh, uint64_t *key,
                                                            int npc, int np, int naddr, int op_paired)
{
    const long a = t->at[sh], b = t->at[sh + 1];
    const int op = t->shop[sh];
    const rr_opfields *f = fields_of(op);
    const char *h = (const char *)s + t->pos[a];
    rr_pair hv[RR_NPAIRS];
    int64_t *delta = t->delta[sh];
#pragma GCC unroll 8
    for (int q = 0; q < np; q++)
        hv[q] = q < npc ? *(const rr_pair *)(h + f->pair[q]) & f->pmask[q] : (rr_pair){0, 0} & f->pmask[q];
    int64_t bad = ((const isa_insn *)h)->op ^ op;
#pragma GCC unroll 4
    for (int k = 0; k < naddr; k++) {
        const isa_addr *ad = (const isa_addr *)(h + f->aoff[k]);
        bad |= ad->reg;
        delta[k] = ad->off - t->off[a][k];
    }
    if (bad)
        return 0;
    *key = pairs_key(op, hv, np);
    /* the first, its own fields and offsets less its delta, is checked:
     * the scan starts past it */
    rr_pair diff = {0, 0};
    for (long i = a + 1; i < b; i++) {
        const char *x = (const char *)s + t->pos[i];
        if (!op_paired)
            bad |= ((const isa_insn *)x)->op ^ op;
#pragma GCC unroll 8
        for (int q = 0; q < npc; q++)
            diff |= (*(const rr_pair *)(x + f->pair[q]) & f->pmask[q]) ^ hv[q];
        /* an address as its word (addr_word): no register and the offset
         * the template's plus delta, or a bit set (the two fields taken
         * apart were three operations more per address) */
#pragma GCC unroll 4
        for (int k = 0; k < naddr; k++) {
            uint64_t w;
            memcpy(&w, x + f->aoff[k], sizeof w);
            bad |= (int64_t)(w ^ addr_word(t->off[i][k] + delta[k]));
        }
    }
    return !(bad | (int64_t)diff[0] | (int64_t)diff[1]);
}

/* Are the kernel's instructions of template shape sh all its first one's
 * op and fields, with the first one's addresses moved by one constant
 * per operand (its delta, set here; its key in *key)?  Per shape, so that the op's pairs
 * of words and masks, the first one's words and the deltas are looked up
 * once, not per instruction (per instruction, against the last one of
 * its shape, was 12% of the Llama-8B prefill layer's compile). */
static inline __attribute__((always_inline)) int shape_fits(rr_tmpl *t, const isa_insn *s, int sh, uint64_t *key)
{
    const rr_opfields *f = fields_of(t->shop[sh]);
    switch (f->scan) { /* (a case number made once per op: the key of four fields made per shape cost 60 K) */
#define RR_SCAN_CASE(npc, np, naddr, paired) \
    case RR_SCAN_##npc##np##naddr##paired: return shape_scan(t, s, sh, key, npc, np, naddr, paired);
        RR_SCANS(RR_SCAN_CASE)
#undef RR_SCAN_CASE
    default: return shape_scan(t, s, sh, key, f->npc, f->np, f->naddr, f->op_paired);
    }
}

/* How many of template t's first nsh shapes kernel s has as tmpl_fits
 * asks, in order (their deltas set, their keys in t->keys): s holds
 * every instruction of theirs. */
static int tmpl_shapes(const rr_scratch *sc, rr_tmpl *t, const isa_insn *s, int nsh)
{
    /* one to one: no two of the kernel's shapes alike (keys differ) */
    if (t->kuse != sc->kuse) {
        keys_clear(sc, t, t->nsh);
        t->kuse = sc->kuse;
        t->kfit = 0;
    }
    /* for the same kernel, on from the shapes checked already (tmpl_for's
     * whole fit, need_fits, cut_fits; checking them again was 0.7 M of the
     * Llama-8B prefill layer's compile): the first kfit fit, and a shape
     * that failed fails again */
    int sh = t->kfit;
    if (sh >= nsh)
        return nsh;
    for (uint64_t key; sh < nsh && shape_fits(t, s, sh, &key) && keys_enter(t, key, sh); sh++)
        ;
    t->kfit = sh;
    return sh;
}

/* A hash of a kernel's ops up to one, from h, that of those before it
 * (0 none): equal prefixes' ops, equal hashes. */
static inline uint64_t ops_run(uint64_t h, int op)
{
    return (h ^ (uint64_t)(op + 1)) * 0x9e3779b97f4a7c15ull;
}

/* Does kernel s[0..n) roll as the template did (rr_tmpl)?  So it does
 * when its instructions' shapes are the template's renamed one to one
 * (a ring send to the next core is another core's send to its next), in
 * the same ops, and its addresses are the template's plus one constant
 * per template shape and operand (rolling compares shapes only for
 * equality, and addresses only through their differences). */
static int tmpl_fits(const rr_scratch *sc, rr_tmpl *t, const isa_insn *s, long n)
{
    return t->n && t->n == n && tmpl_shapes(sc, t, s, t->nsh) == t->nsh;
}

/* Template t's cuts (rr_cut) that start an item of its code at the top
 * level (a cut is such a start: no loop holds the same shape on both
 * sides of it), in order. */
static void tmpl_cuts(rr_tmpl *t)
{
    t->ncut = 0;
    const uint64_t *const opsh = t->opsh;
    t->cut = heap_array(&t->cutm, t->ncode, sizeof *t->cut);
    /* shapes are numbered in the order they first come: those before p
     * are [0, sh) for the sh whose first place is p or later */
    long reach = -1, start = -1; /* the last place of a shape among [0, sh); the open item's code */
    int d = 0, nli = 0, nli0 = 0, sh = 0;
    for (long pc = 0; pc < t->ncode; pc++) {
        const rr_code *k = &t->code[pc];
        if (!d && start < 0) {
            start = pc;
            nli0 = nli;
        }
        nli += k->op == ISA_OP_LI;
        d += (k->op == ISA_OP_LOOP) - (k->op == ISA_OP_ENDL);
        if (k->shape >= 0 && start >= 0) { /* the item's first instruction: it issues [0, idx) before */
            for (; sh < t->nsh && t->pos[t->at[sh]] < (size_t)k->idx * sizeof(isa_insn); sh++) {
                const long last = t->pos[t->at[sh + 1] - 1] / sizeof(isa_insn);
                reach = last > reach ? last : reach;
            }
            if (k->idx && reach < k->idx)
                t->cut[t->ncut++] = (rr_cut){k->idx, start, sh, nli0, opsh[k->idx]};
            start = -1;
        }
        if (!d && (k->shape >= 0 || k->op == ISA_OP_ENDL))
            start = -1;
    }
}

/* The shortest prefix of a kernel of n instructions worth taking from a
 * template (roll_prefixed): half of it, so that rolling the rest is the
 * lesser part, and at least RR_PREFIX_MIN. */
static long prefix_need(long n)
{
    return n / 2 > RR_PREFIX_MIN ? n / 2 : RR_PREFIX_MIN;
}

/* Does kernel s have template t's shapes that first come before place
 * need (tmpl_shapes)?  A cut at need or later has them all among its
 * nsh, and cut_fits takes a cut only when s has its nsh shapes: when
 * not, no cut of t serves s (roll_prefixed takes none below need). */
static int need_fits(const rr_scratch *sc, rr_tmpl *t, const isa_insn *s, long need)
{
    int sh = 0; /* (shapes are numbered in the order they first come) */
    while (sh < t->nsh && t->pos[t->at[sh]] < (size_t)need * sizeof(isa_insn))
        sh++;
    return tmpl_shapes(sc, t, s, sh) == sh;
}

/* Template t's last cut at most n whose ops kernel s[0..n) has before it
 * (sc->opsh), or -1: its cuts made (tmpl_cuts) only for a kernel with
 * the ops of its prefix_need (making every template's cost decode's
 * compile 0.16 M) and its shapes before it (need_fits: decode's kernels
 * of a template's ops but other shapes made 25 templates' cuts, 0.1 M,
 * for no prefix). */
static int ops_cut(const rr_scratch *sc, rr_tmpl *t, const isa_insn *s, long n)
{
    const long need = prefix_need(n);
    if (!t->n || t->n < need || n < need || t->opsh[need] != sc->opsh[need])
        return -1;
    if (t->ncut < 0 && !need_fits(sc, t, s, need))
        return -1;
    if (t->ncut < 0)
        tmpl_cuts(t);
    int c = t->ncut - 1;
    while (c >= 0 && (t->cut[c].p > n || t->cut[c].ops != sc->opsh[t->cut[c].p]))
        c--;
    return c;
}

/* The longest prefix of kernel s that template t's code issues, from t's
 * cut c (ops_cut) down: the last cut whose shapes s has (tmpl_shapes),
 * or NULL. */
static const rr_cut *cut_fits(const rr_scratch *sc, rr_tmpl *t, const isa_insn *s, int c)
{
    const int sh = tmpl_shapes(sc, t, s, t->cut[c].nsh);
    while (c >= 0 && t->cut[c].nsh > sh)
        c--;
    return c >= 0 ? &t->cut[c] : NULL;
}

/* Is key (fields_key) a key of one of template t's first nsh shapes as
 * the kernel has them (t->keys, tmpl_shapes)? */
static int keys_has(const rr_tmpl *t, uint64_t key, int nsh)
{
    for (long slot = (long)(key & (uint64_t)t->kmask); t->keys[slot].gen == t->kgen; slot = (slot + 1) & t->kmask)
        if (t->keys[slot].key == key && t->keys[slot].shape < nsh)
            return 1;
    return 0;
}

/* A hash of kernel s[0..n)'s ops in order: four 16-bit ops to a mix, a
 * serial chain a quarter as long (a mix per op, each waiting on the last,
 * was 2% of the prefill compile). */
static uint64_t ops_key(const isa_insn *s, long n)
{
    _Static_assert(ISA_NOPS <= 0x10000, "an op is 16 bits");
    uint64_t h = mix(0x0b5, (uint64_t)n), w = 0;
    long j = 0;
    for (; j + 4 <= n; j += 4) /* (four at a time: no test per op for the mix) */
        h = mix(h, (uint64_t)(uint16_t)s[j].op << 48 | (uint64_t)(uint16_t)s[j + 1].op << 32 |
                       (uint64_t)(uint16_t)s[j + 2].op << 16 | (uint16_t)s[j + 3].op);
    for (; j < n; j++)
        w = w << 16 | (uint16_t)s[j].op;
    return mix(h, w);
}

/* The template kernel s[0..n) rolls as (*fits set; tmpl_fits has filled
 * its delta), else the one to roll it from scratch into: the
 * template of its ops (ops_key), or the next to replace.  A template that
 * fits has the kernel's ops (tmpl_fits compares them), and there is one
 * per length and ops_key: when several templates have the kernel's
 * length, the key (a pass over the kernel's ops) picks the one to try
 * (trying each failed 97 times on BERT-base, most of them on an op near
 * the kernel's end, after comparing all the rest); with one, it is tried
 * without (the key of every kernel that fits was 2% of the prefill
 * layer's compile). */
static rr_tmpl *tmpl_for(rr_scratch *sc, const isa_insn *s, long n, uint64_t *ops)
{
    int same = 0;
    for (int q = 0; q < RR_TEMPLATES; q++)
        same += sc->t[q].n == n;
    const int keyed = same > 1;
    *ops = keyed ? ops_key(s, n) : 0;
    for (int q = 0; q < RR_TEMPLATES; q++)
        if (sc->t[q].n == n && (!keyed || sc->t[q].ops == *ops) && tmpl_fits(sc, &sc->t[q], s, n))
            return &sc->t[q];
    if (!keyed)
        *ops = ops_key(s, n);
    return NULL;
}

/* The template to roll kernel s[0..n) of ops key ops from scratch into
 * (tmpl_for). */
static rr_tmpl *tmpl_slot(rr_scratch *sc, long n, uint64_t ops)
{
    rr_tmpl *t = NULL;
    for (int q = 0; q < RR_TEMPLATES && !t; q++)
        if (sc->t[q].n == n && sc->t[q].ops == ops)
            t = &sc->t[q];
    if (!t) {
        t = &sc->t[sc->tnext];
        sc->tnext = (sc->tnext + 1) % RR_TEMPLATES;
        sc->tused += sc->tused < RR_TEMPLATES;
    }
    t->ops = ops;
    return t;
}

/* Roll kernel s[0..n) into o as a template's code up to a cut (rr_cut)
 * and the rest from scratch: 0 when no template has a prefix of it worth
 * it, or the rest has an instruction of a shape before the cut (not a
 * cut of s's) or is not code this back half makes.  Its code is the
 * one rolling s from scratch writes (rr_cut says why). */
static int roll_prefixed(rr_out *o, const isa_insn *s, long n)
{
    rr_scratch *sc = o->sc;
    rr_tmpl *u = NULL;
    const rr_cut *cut = NULL;
    sc->opsh = heap_array(&sc->opshm, n + 1, sizeof *sc->opsh);
    sc->opsh[0] = 0;
    for (long j = 0; j < n; j++)
        sc->opsh[j + 1] = ops_run(sc->opsh[j], s[j].op);
    int top[RR_TEMPLATES];
    for (int q = 0; q < RR_TEMPLATES; q++)
        top[q] = ops_cut(sc, &sc->t[q], s, n);
    /* the templates by their longest cut of the kernel's ops, longest
     * first, while one can beat the best prefix found (a cut of its whose
     * shapes the kernel has: checking them is the cost) */
    for (;;) {
        int q = -1;
        for (int r = 0; r < RR_TEMPLATES; r++)
            if (top[r] >= 0 && sc->t[r].cut[top[r]].p >= (cut ? cut->p + 1 : prefix_need(n)) &&
                (q < 0 || sc->t[r].cut[top[r]].p > sc->t[q].cut[top[q]].p))
                q = r;
        if (q < 0)
            break;
        const rr_cut *c = cut_fits(sc, &sc->t[q], s, top[q]);
        if (c && c->p >= (cut ? cut->p + 1 : prefix_need(n))) {
            u = &sc->t[q];
            cut = c;
        }
        top[q] = -1;
    }
    /* (u's deltas and keys are still cut_fits': they are u's own, and no
     * template is checked twice) */
    if (!cut)
        return 0;
    const long p = cut->p, m = n - p;
    sc->soff = scratch_array(sc, &sc->soffm, m, sizeof *sc->soff);
    if (!make_entries(sc, s + p, m))
        return 0;
    for (int q = 0; q < sc->shapes.next; q++)
        if (keys_has(u, fields_key(&sc->shapes.rep[q]), cut->nsh))
            return 0;
    emit_as_code(o, u, s, cut);
    sc->tshape = heap_array(&sc->tshapem, m, sizeof *sc->tshape);
    for (long j = 0; j < m; j++)
        sc->tshape[j] = sc->e.v[j].shape;
    roll_in_place(&sc->pool, &sc->e, 0, sc->shapes.clash ? 0 : sc->shapes.next);
    const long first = (long)o->s->n;
    isa_stream_room_n(o->s, (size_t)sc->e.n);
    emit_list(o, sc->e.v, sc->e.n);
    check_same(sc, o->s->insns + first, (long)o->s->n - first, s + p, m, sc->tshape, NULL, 0);
    return 1;
}

/* Roll instructions s[0..n) of one kernel into o (as the template rolled
 * when it fits, else from scratch); left as they are when they already
 * use loops or registers (not code this back half makes). */
static void roll_kernel(rr_out *o, const isa_insn *s, long n)
{
    fields_init();
    rr_scratch *sc = o->sc;
    sc->kuse++;
    uint64_t ops;
    rr_tmpl *t = tmpl_for(sc, s, n, &ops);
    if (t) {
        emit_as_code(o, t, s, NULL);
        return;
    }
    if (roll_prefixed(o, s, n))
        return;
    t = tmpl_slot(sc, n, ops);
    sc->soff = scratch_array(sc, &sc->soffm, n, sizeof *sc->soff);
    if (!roll_fresh(sc, t, s, n)) {
        isa_stream_room_n(o->s, (size_t)n);
        for (long j = 0; j < n; j++)
            push(o, &s[j]);
        return;
    }
    /* emitted from the entries' list, where it rolled, noting what each
     * instruction copies (a rolled kernel is rarely longer than 2n + 64:
     * a longer one leaves no template; from is not filled with -1 first:
     * copy_in sets it for every instruction copied, and code_keep reads
     * no other) */
    rr_out to = *o;
    to.nfrom = 2 * n + 64;
    sc->from = scratch_array(sc, &sc->fromm, to.nfrom, sizeof *sc->from);
    to.from = sc->from;
    to.first = (long)o->s->n;
    const long unrolled = o->ks->unrolled;
    isa_stream_room_n(o->s, (size_t)sc->e.n); /* at least an instruction per entry */
    emit_list(&to, sc->e.v, sc->e.n);
    const isa_insn *c = o->s->insns + to.first;
    const long nc = (long)o->s->n - to.first;
    check_same(sc, c, nc, s, n, t->shape, to.from, to.nfrom);
    code_keep(sc, t, c, nc, to.from, to.nfrom);
    t->unrolled = o->ks->unrolled - unrolled;
    /* its cuts made when a kernel asks (ops_cut), from its ops' hashes,
     * roll_prefixed's of this kernel, given to it; none when its shapes
     * had a key in common (rolling then pairs items by key, across a cut)
     * or its code unrolled a loop for registers (its count is the whole
     * code's) */
    t->ncut = sc->shapes.clash || t->unrolled ? 0 : -1;
    const isa_buf b = t->opshm;
    t->opshm = sc->opshm;
    t->opsh = sc->opsh;
    sc->opshm = b;
}

/* ---- the pass ---- */

/* sc's templates and their memory given back: none left. */
static void tmpl_drop(rr_scratch *sc)
{
    for (int q = 0; q < sc->tused; q++) {
        rr_tmpl *t = &sc->t[q];
        isa_buf *m[] = {&t->shopm, &t->shapem, &t->posm, &t->offm, &t->atm,
                        &t->deltam, &t->keysm, &t->codem, &t->lowm, &t->lim, &t->cutm, &t->opshm};
        for (size_t i = 0; i < sizeof m / sizeof *m; i++)
            isa_buf_free(m[i]);
        *t = (rr_tmpl){0};
    }
    sc->tnext = sc->tused = 0;
}

/* sc about to roll a kernel of position pos, as codegen emits them (a
 * position's kernels on every core, then the next position's): the
 * templates of another position dropped.  A template serves the other
 * cores' kernels of its position (no kernel of the bench graphs fits a
 * template of another: each is other ops), and kept to the end the
 * templates' arrays (1.5 MB on BERT-base) would share the arena's peak
 * with the code streams: a sixth huge page.  The reroll pass
 * (roll_tail, core by core) keeps them: there the next core's kernels
 * of a position come after every other position's. */
static void tmpl_pos(rr_scratch *sc, int pos)
{
    if (pos != sc->tpos)
        tmpl_drop(sc);
    sc->tpos = pos;
}

static void scratch_free(rr_scratch *sc)
{
    vec_free(&sc->e);
    while (sc->pool.nb)
        free(sc->pool.b[--sc->pool.nb].p);
    free(sc->shapes.rep);
    free(sc->shapes.rkey);
    free(sc->shapes.succ);
    isa_stream_free(&sc->rolled);
    tmpl_drop(sc);
    isa_buf_free(&sc->tabm);
    isa_buf_free(&sc->seenm);
    isa_buf_free(&sc->soffm);
    isa_buf_free(&sc->fromm);
    isa_buf_free(&sc->tshapem);
    isa_buf_free(&sc->opshm);
    isa_arena_free(sc->arena);
}

static int by_first(const void *a, const void *b)
{
    const isa_kernel *x = *(isa_kernel *const *)a, *y = *(isa_kernel *const *)b;
    return (x->first > y->first) - (x->first < y->first);
}

/* A codegen thread's rolling while a kernel's cores are split between
 * two (be_reroll_lane): its scratch and templates, figures per kernel
 * position added into the pass's at the join, and the kernel records it
 * made, kept until then (the program's list is read by roll_tail on the
 * other thread). */
struct be_rrlane {
    rr_scratch *sc;     /* own, or the pass's (a lane of the thread that rolls the pass's kernels) */
    rr_scratch own;
    rr_kstat *k;
    isa_kernel *rec;
    int nrec, cap;
};

/* The pass's figures, made by whichever rolls first: codegen (each
 * kernel as soon as it is emitted, be_reroll_kernels) or the pass. */
static struct be_reroll *rr_state(be_ctx *c)
{
    if (c->rr)
        return c->rr;
    const ir_prog *p = c->p;
    struct be_reroll *rr = ir_xalloc(sizeof *rr);
    c->rr = rr;
    rr->off = p->opts.no_reroll;
    rr->ncores = c->prog->ncores;
    /* the scratch in the program's arena: the memory it gives back is
     * taken again by the program's streams as they grow, and the two
     * share the huge pages a compile touches (an arena each for the
     * rolling, the second lane and the span cache touched one or two
     * more on BERT-base and decode) */
    rr->sc.arena = isa_arena_keep(c->prog->arena);
    snprintf(rr->cfgname, sizeof rr->cfgname, "%s", c->cfg->name);
    rr->k = ir_xalloc((size_t)(p->norder + 1) * sizeof *rr->k);
    rr->core_before = ir_xalloc((size_t)rr->ncores * sizeof *rr->core_before);
    rr->core_after = ir_xalloc((size_t)rr->ncores * sizeof *rr->core_after);
    rr->done = ir_xalloc((size_t)rr->ncores * sizeof *rr->done);
    rr->looked = ir_xalloc((size_t)rr->ncores * sizeof *rr->looked);
    return rr;
}

/* The kernel position of a program kernel: codegen names each kernel of
 * the program as its kernel, and a ring exchange before one as that
 * kernel with ".xchg" (counted with it). */
static int kernel_pos(const ir_prog *p, const char *name)
{
    int pos = 0;
    const size_t kl = strcspn(name, ".");
    while (pos < p->norder &&
           (strlen(p->kernels[p->order[pos]].name) != kl || strncmp(p->kernels[p->order[pos]].name, name, kl)))
        pos++;
    assert(pos < p->norder);
    return pos;
}

/* Roll core's stream from where rolling stopped (rr->done) to its end:
 * its kernels there rolled (copied under no_reroll), the instructions
 * between them (bar, fence, halt) as they are. */
static void roll_tail(be_ctx *c, struct be_reroll *rr, struct be_rrlane *l, int core)
{
    const ir_prog *p = c->p;
    isa_program *prog = c->prog;
    rr_scratch *sc = l ? l->sc : &rr->sc;
    isa_stream *old = &prog->cores[core], *neu = &sc->rolled;
    const long from = (long)rr->done[core];
    if ((size_t)from == old->n)
        return; /* nothing since (as a rule while codegen rolls each kernel: a look at every kernel was 0.5% of BERT-base's compile) */
    if (neu->cap < old->n - (size_t)from + 1) { /* rolling makes no more, as a rule */
        isa_stream_free(neu);
        neu->cap = old->n - (size_t)from + 1;
        neu->insns = malloc(neu->cap * sizeof *neu->insns);
        if (!neu->insns)
            abort();
    }
    neu->n = 0;
    /* records are only appended, and one starts where it is rolled to
     * (below done, which only grows): the core's looked through stay before from */
    isa_kernel **ks = ir_xmalloc((prog->nkernels - rr->looked[core] + 1) * sizeof *ks);
    int nk = 0;
    for (size_t q = rr->looked[core]; q < prog->nkernels; q++)
        if (prog->kernels[q].core == core && prog->kernels[q].first >= from)
            ks[nk++] = &prog->kernels[q];
    rr->looked[core] = prog->nkernels;
    qsort(ks, (size_t)nk, sizeof *ks, by_first);
    rr->core_before[core] += (long)old->n - from;
    long at = from;
    for (int q = 0; q <= nk; q++) {
        long first = q < nk ? ks[q]->first : (long)old->n;
        for (; at < first; at++) /* bars between kernels, the halt */
            isa_stream_push(neu, &old->insns[at]);
        if (q == nk)
            break;
        const int pos = kernel_pos(p, ks[q]->name);
        rr_kstat *st = &(l ? l->k : rr->k)[pos];
        rr_out o = {.s = neu, .ks = st, .sc = sc};
        long n = ks[q]->last - ks[q]->first + 1;
        st->before += n;
        ks[q]->first = from + (long)neu->n;
        if (rr->off)
            for (long j = 0; j < n; j++)
                isa_stream_push(neu, &old->insns[at + j]);
        else
            roll_kernel(&o, old->insns + at, n);
        ks[q]->last = from + (long)neu->n - 1;
        st->after += from + (long)neu->n - ks[q]->first;
        at += n;
    }
    free(ks);
    rr->core_after[core] += (long)neu->n;
    /* the rolled tail replaces the tail in place: the stream keeps the
     * memory it grew to for the next kernel */
    old->n = (size_t)from;
    if (neu->n && old->n + neu->n <= old->cap) {
        memcpy(old->insns + from, neu->insns, neu->n * sizeof *neu->insns);
        old->n += neu->n;
    } else {
        for (size_t j = 0; j < neu->n; j++)
            isa_stream_push(old, &neu->insns[j]);
    }
    rr->done[core] = old->n;
}

void be_reroll_core(be_ctx *c, struct be_rrlane *l, int core)
{
    roll_tail(c, rr_state(c), l, core);
}

/* Core stream home, about to take a kernel of n instructions (as
 * emitted) at kernel position pos of npos, grown ahead of need when the
 * positions predict that doubling would copy it again and again (each
 * growth copies the stream).  At the first kernel, the kernel as emitted
 * stands for the code so far: one past the least slot that the positions
 * say outgrows four times its room starts at twice that room (BERT-base's
 * streams, 570-600 instructions emitted first, start at 2,048 and end at
 * some 1,700-1,900; a first kernel within the least slot costs little to
 * copy).  Later, a stream about to outgrow its room whose code so far,
 * per position, projects past twice that room grows once to four times
 * it.  Growing past a doubling only on that prediction keeps a program
 * whose first kernels are its largest in slots its code needs. */
static void home_ahead(isa_stream *home, long n, int pos, int npos)
{
    if (!pos) {
        size_t room = ISA_STREAM_LEAST;
        while (room < (size_t)n)
            room *= 2;
        if (room > ISA_STREAM_LEAST && home->cap < 2 * room && (size_t)n * (size_t)npos > 4 * room)
            isa_stream_reserve(home, 2 * room);
        return;
    }
    if (home->n + (size_t)n <= home->cap)
        return;
    const size_t want = home->n * (size_t)npos / (size_t)pos;
    if (want > 2 * home->cap)
        isa_stream_reserve(home, 4 * home->cap);
}

void be_reroll_append(be_ctx *c, struct be_rrlane *l, int core, const char *name, const isa_insn *s, long n)
{
    struct be_reroll *rr = rr_state(c);
    roll_tail(c, rr, l, core);
    isa_stream *home = &c->prog->cores[core];
    const int pos = kernel_pos(c->p, name);
    home_ahead(home, n, pos, c->p->norder);
    rr_kstat *st = &(l ? l->k : rr->k)[pos];
    rr_out o = {.s = home, .ks = st, .sc = l ? l->sc : &rr->sc};
    tmpl_pos(o.sc, pos);
    const long first = (long)home->n;
    roll_kernel(&o, s, n);
    if (l) {
        l->rec = ir_xgrow(l->rec, &l->cap, l->nrec + 1, sizeof *l->rec);
        isa_kernel *k = &l->rec[l->nrec++];
        *k = (isa_kernel){.core = core, .first = first, .last = (long)home->n - 1};
        isa_name_copy(k->name, name);
    } else {
        isa_program_add_kernel(c->prog, name, core, first, (long)home->n - 1);
    }
    st->before += n;
    st->after += (long)home->n - first;
    rr->core_before[core] += n;
    rr->core_after[core] += (long)home->n - first;
    rr->done[core] = home->n;
}

struct be_rrlane *be_reroll_lane(be_ctx *c, int own)
{
    struct be_reroll *rr = rr_state(c);
    fields_init(); /* (op_fields: filled once, before a second thread reads them) */
    struct be_rrlane *l = ir_xalloc(sizeof *l);
    l->sc = own ? &l->own : &rr->sc;
    if (own) /* in the program's arena, as the pass's (rr_state) */
        l->own.arena = isa_arena_keep(c->prog->arena);
    l->k = ir_xalloc((size_t)(c->p->norder + 1) * sizeof *l->k);
    return l;
}

/* Lane l's figures added into the pass's, and zeroed. */
static void lane_figures(struct be_reroll *rr, int npos, struct be_rrlane *l)
{
    for (int i = 0; i < npos; i++) { /* counts (exact), and the deepest nesting */
        rr->k[i].before += l->k[i].before;
        rr->k[i].after += l->k[i].after;
        rr->k[i].loops += l->k[i].loops;
        rr->k[i].unrolled += l->k[i].unrolled;
        rr->k[i].depth = l->k[i].depth > rr->k[i].depth ? l->k[i].depth : rr->k[i].depth;
        l->k[i] = (rr_kstat){0};
    }
}

void be_reroll_lanes_join(be_ctx *c, struct be_rrlane *a, struct be_rrlane *b)
{
    struct be_reroll *rr = rr_state(c);
    const struct be_rrlane *l[2] = {a, b};
    for (int core = 0; core < c->prog->ncores; core++) /* a core's all in one lane, in the order made */
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < l[q]->nrec; i++)
                if (l[q]->rec[i].core == core)
                    isa_program_add_kernel(c->prog, l[q]->rec[i].name, core, l[q]->rec[i].first, l[q]->rec[i].last);
    a->nrec = b->nrec = 0;
    lane_figures(rr, c->p->norder, a);
    lane_figures(rr, c->p->norder, b);
}

void be_reroll_lane_free(struct be_rrlane *l)
{
    if (!l)
        return;
    scratch_free(&l->own);
    free(l->k);
    free(l->rec);
    free(l);
}

void be_reroll_kernels(be_ctx *c)
{
    struct be_reroll *rr = rr_state(c);
    for (int core = 0; core < rr->ncores; core++)
        roll_tail(c, rr, NULL, core);
}

int be_reroll_pass(ir_prog *p)
{
    be_reroll_kernels(p->be);
    return 0;
}

void cc_roll_streams(isa_program *prog)
{
    for (int core = 0; core < prog->ncores; core++) {
        isa_stream *old = &prog->cores[core], neu = {0};
        rr_kstat st = {0};
        rr_scratch sc = {0};
        rr_out o = {.s = &neu, .ks = &st, .sc = &sc};
        roll_kernel(&o, old->insns, (long)old->n);
        isa_stream_free(old);
        *old = neu;
        scratch_free(&sc);
    }
}

void be_reroll_scratch_free(be_ctx *c)
{
    if (c->rr) {
        scratch_free(&c->rr->sc);
        c->rr->sc = (rr_scratch){0};
    }
}

void be_reroll_free(be_ctx *c)
{
    if (!c->rr)
        return;
    scratch_free(&c->rr->sc);
    free(c->rr->k);
    free(c->rr->core_before);
    free(c->rr->core_after);
    free(c->rr->done);
    free(c->rr->looked);
    free(c->rr);
    c->rr = NULL;
}

/* "N -> M instructions (L loops, depth D)" */
static void print_counts(FILE *f, long before, long after, long loops, int depth, long unrolled)
{
    fprintf(f, "%ld -> %ld instructions", before, after);
    if (after)
        fprintf(f, " (%.1fx fewer)", (double)before / (double)after);
    fprintf(f, ", %ld loop%s", loops, loops == 1 ? "" : "s");
    if (loops)
        fprintf(f, ", depth %d", depth);
    if (unrolled)
        fprintf(f, ", %ld unrolled for registers", unrolled);
}

void be_reroll_print(const ir_prog *p, const char *what, FILE *f)
{
    const be_ctx *c = p->be;
    const struct be_reroll *rr = c ? c->rr : NULL;
    if (!rr)
        return;
    const int report = !strcmp(what, "report");
    long before = 0, after = 0, loops = 0, unrolled = 0;
    int depth = 0;
    if (report)
        fprintf(f, "reroll%s: instructions per kernel on all cores, as generated -> in counted loops\n",
                rr->off ? " (off: --no-reroll)" : "");
    else
        fprintf(f, "# %s after reroll (target %s, %d cores)%s\n", p->gname, rr->cfgname, rr->ncores,
                rr->off ? ": off (no_reroll)" : "");
    for (int i = 0; i < p->norder; i++) {
        const rr_kstat *k = &rr->k[i];
        fprintf(f, report ? "  %s: " : "kernel %s: ", p->kernels[p->order[i]].name);
        print_counts(f, k->before, k->after, k->loops, k->depth, k->unrolled);
        fputc('\n', f);
        before += k->before;
        after += k->after;
        loops += k->loops;
        unrolled += k->unrolled;
        depth = k->depth > depth ? k->depth : depth;
    }
    if (!report)
        for (int core = 0; core < rr->ncores; core++)
            fprintf(f, "core %d: %ld -> %ld instructions\n", core, rr->core_before[core], rr->core_after[core]);
    fputs(report ? "  total: " : "total: ", f);
    print_counts(f, before, after, loops, depth, unrolled);
    fputc('\n', f);
}
