/* be_derive.c: a core's kernel written from an earlier core's instead of
 * emitted (docs/compiler-speed.md, "Cores derived from earlier cores'
 * code").
 *
 * The kind gives each core of a kernel a signature (be_kind.core_sig):
 * cores with the same one emit the same ops and fields, their addresses,
 * ring targets and li values moving by the same amounts from core to core
 * spaced alike.  A class of four cores or more (one signature) keeps its
 * first emitted core's code (the base); the second's differences from it
 * are the moves (deltas) per `step` cores, and a third core whose
 * differences are the moves times its distance in steps confirms them.
 * From then on a core a whole number m of steps from the first is the
 * base with m times the moves, each moved operand checked as the
 * emitter checks it, and the emitter left as the emitted cores left it.
 * A class whose cores differ otherwise derives none; a moved operand out
 * of its field refuses the core (emitted: the emitter's error is its). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* The fields a delta moves: the four addresses' offsets, a ring op's core, li's value. */
enum { DV_D, DV_A, DV_B, DV_P, DV_CORE, DV_VAL, DV_NF };

typedef struct {
    uint32_t idx, f; /* (no padding: deltas compare with memcmp) */
    int64_t by;
} dv_delta;

/* The emitter's state a kernel's code leaves (cc_emit's fields emission changes). */
typedef struct {
    uint64_t lx_top;
    int ntokens, nregs;
    int16_t tok_fit[2][ISA_U_SEQ + 1];
} dv_post;

enum { DV_DEAD = -1, DV_NONE, DV_BASE, DV_MOVES, DV_SURE };

/* A class keeps a core's code of at most this many instructions (256 KB):
 * a copy of a larger one comes back from memory, not from cache, and
 * took longer than emitting it (the prefill layer's products of up to
 * some 14,000 instructions a core: 14-21% more wall on one thread, 8 MB
 * more touched, for 6% fewer instructions; in the program's arena the
 * bases moved other streams' growth, +0.14 M on the decode step). */
enum { DV_MAX_N = 2048 };

typedef struct {
    uint64_t sig;
    int count; /* the kernel's cores of this signature */
    int state; /* DV_*: dead, nothing yet, the base, the moves, the moves confirmed */
    int first, step;
    const char *name;
    isa_insn *base; /* its code, n instructions (at most DV_MAX_N) */
    long n;
    size_t cap;
    dv_delta *dl;
    long ndl;
    size_t dlcap;
    dv_post post;
} dv_class;

struct be_derive {
    dv_class *cls;
    int ncls, clscap;
    int *of; /* per core of the kernel: its class, -1 none */
    int ncores, ofcap;
    int check; /* emit anyway and compare */
    /* the last kernel's code cg_end saw (be_derive_capture), read by
     * be_derive_emitted before another kernel begins: NULL none */
    const isa_insn *cap;
    long ncap;
    const char *capname;
    isa_insn *chk; /* the check's derived code (nchk instructions, -1 refused) */
    long nchk;
    size_t chkcap;
    dv_delta *tmp;
    long ntmp;
    size_t tmpcap;
    long derived, checked, mismatched;
};

be_derive *be_derive_new(int check)
{
    be_derive *d = ir_xalloc(sizeof *d);
    d->check = check;
    return d;
}

void be_derive_free(be_derive *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->clscap; i++) {
        free(d->cls[i].base);
        free(d->cls[i].dl);
    }
    free(d->cls);
    free(d->of);
    free(d->chk);
    free(d->tmp);
    free(d);
}

void be_derive_counts(const be_derive *d, long *derived, long *checked, long *mismatched)
{
    *derived = d ? d->derived : 0;
    *checked = d ? d->checked : 0;
    *mismatched = d ? d->mismatched : 0;
}

void be_derive_begin(be_derive *d, int ncores)
{
    d->ncls = 0;
    d->cap = NULL;
    d->nchk = -1;
    d->of = ir_xgrow(d->of, &d->ofcap, ncores, sizeof *d->of);
    d->ncores = ncores;
    for (int k = 0; k < ncores; k++)
        d->of[k] = -1;
}

void be_derive_sig(be_derive *d, int core, uint64_t sig)
{
    int i = 0;
    while (i < d->ncls && d->cls[i].sig != sig)
        i++;
    if (i == d->ncls) {
        d->cls = ir_xgrow(d->cls, &d->clscap, d->ncls + 1, sizeof *d->cls); /* (zeroed; a class keeps its buffers) */
        dv_class *k = &d->cls[d->ncls++];
        k->sig = sig;
        k->count = 0;
        k->state = DV_NONE;
    }
    d->cls[i].count++;
    d->of[core] = i;
}

/* *p with room for n elements of size bytes, not zeroed (written before read). */
static void *room(void *p, size_t *cap, long n, size_t size)
{
    if ((size_t)n <= *cap)
        return p;
    *cap = (size_t)n > 2 * *cap ? (size_t)n : 2 * *cap;
    void *q = realloc(p, *cap * size);
    if (!q)
        abort();
    return q;
}

/* n instructions from src to dst: isa_insn_copy's moves (a block copy is
 * `rep movsb`, which valgrind counts byte by byte) */
static void copy_code(isa_insn *dst, const isa_insn *src, long n)
{
    for (long i = 0; i < n; i++)
        isa_insn_copy(&dst[i], &src[i]);
}

static int64_t get(const isa_insn *in, int f)
{
    switch (f) {
    case DV_D: return in->d.off;
    case DV_A: return in->a.off;
    case DV_B: return in->b.off;
    case DV_P: return in->p.off;
    case DV_CORE: return in->core;
    default: return in->val;
    }
}

static void put(isa_insn *in, int f, int64_t v)
{
    switch (f) {
    case DV_D: isa_set_off(&in->d, v); break;
    case DV_A: isa_set_off(&in->a, v); break;
    case DV_B: isa_set_off(&in->b, v); break;
    case DV_P: isa_set_off(&in->p, v); break;
    case DV_CORE: in->core = (uint8_t)v; break;
    default: in->val = v;
    }
}

/* Does field f of in hold v as the emitter's check takes it (an
 * address's offset in its field, a ring op's core one of the chip's, li's
 * value as its format's check says)? */
static int holds(const isa_insn *in, int f, int64_t v, int ncores)
{
    if (f == DV_CORE)
        return v >= 0 && v < ncores;
    if (f == DV_VAL) {
        isa_insn x;
        isa_insn_copy(&x, in);
        x.val = v;
        return isa_fits(&x);
    }
    return (uint64_t)v < (1ull << ISA_ADDR_OFF_BITS);
}

/* The moves from a to b into d->tmp: 0 when they differ in anything
 * else (an op, a field no delta moves, a non-li's value). */
static int diff(be_derive *d, const isa_insn *a, const isa_insn *b, long n)
{
    d->ntmp = 0;
    for (long i = 0; i < n; i++) {
        if (!memcmp(&a[i], &b[i], sizeof *a))
            continue;
        isa_insn x;
        isa_insn_copy(&x, &b[i]);
        const int nf = a[i].op == ISA_OP_LI ? DV_NF : DV_VAL;
        for (int f = 0; f < nf; f++) {
            const int64_t by = get(&b[i], f) - get(&a[i], f);
            if (!by)
                continue;
            put(&x, f, get(&a[i], f));
            d->tmp = room(d->tmp, &d->tmpcap, d->ntmp + 1, sizeof *d->tmp);
            d->tmp[d->ntmp++] = (dv_delta){(uint32_t)i, (uint32_t)f, by};
        }
        if (memcmp(&a[i], &x, sizeof x))
            return 0;
    }
    return 1;
}

/* Are d->tmp's moves m times k's? */
static int moves_times(const dv_class *k, const be_derive *d, int64_t m)
{
    if (k->ndl != d->ntmp)
        return 0;
    for (long j = 0; j < k->ndl; j++)
        if (k->dl[j].idx != d->tmp[j].idx || k->dl[j].f != d->tmp[j].f || k->dl[j].by * m != d->tmp[j].by)
            return 0;
    return 1;
}

static dv_post post_of(const cc_emit *e)
{
    dv_post p = {e->lx_top, e->ntokens, e->nregs, {{0}}};
    memcpy(p.tok_fit, e->tok_fit, sizeof p.tok_fit);
    return p;
}

static int same_post(const dv_post *a, const dv_post *b)
{
    return a->lx_top == b->lx_top && a->ntokens == b->ntokens && a->nregs == b->nregs &&
           !memcmp(a->tok_fit, b->tok_fit, sizeof a->tok_fit);
}

/* Core's class, and its distance from the first in steps (*m): NULL
 * when the core has none or is no whole number of steps on. */
static dv_class *class_of(be_derive *d, int core, int64_t *m)
{
    *m = 0;
    if (core >= d->ncores || d->of[core] < 0)
        return NULL;
    dv_class *k = &d->cls[d->of[core]];
    *m = k->state >= DV_MOVES && (core - k->first) % k->step == 0 ? (core - k->first) / k->step : 0;
    return k;
}

/* Do the base's moved operands, m times the moves on, hold their values? */
static int moves_hold(const dv_class *k, int64_t m, int ncores)
{
    for (long j = 0; j < k->ndl; j++) {
        const dv_delta *x = &k->dl[j];
        if (!holds(&k->base[x->idx], (int)x->f, get(&k->base[x->idx], (int)x->f) + m * x->by, ncores))
            return 0;
    }
    return 1;
}

/* The base moved by m times the moves into out. */
static void moved(const dv_class *k, int64_t m, isa_insn *out)
{
    copy_code(out, k->base, k->n);
    for (long j = 0; j < k->ndl; j++) {
        const dv_delta *x = &k->dl[j];
        put(&out[x->idx], (int)x->f, get(&out[x->idx], (int)x->f) + m * x->by);
    }
}

int be_derive_core(be_derive *d, cc_emit *e, int core)
{
    int64_t m;
    dv_class *k = class_of(d, core, &m);
    d->nchk = -1;
    d->cap = NULL;
    if (!k || k->state != DV_SURE || m <= 0)
        return 0;
    if (!moves_hold(k, m, (int)e->cfg->cores))
        return 0;
    if (d->check) {
        d->chk = room(d->chk, &d->chkcap, k->n, sizeof *d->chk);
        moved(k, m, d->chk);
        d->nchk = k->n;
        return 0;
    }
    cc_kernel_begin(e, k->name);
    moved(k, m, isa_stream_room_n(e->s, (size_t)k->n));
    e->s->n += (size_t)k->n;
    e->lx_top = k->post.lx_top;
    e->ntokens = k->post.ntokens;
    e->nregs = k->post.nregs;
    memcpy(e->tok_fit, k->post.tok_fit, sizeof e->tok_fit);
    cc_kernel_end(e);
    d->cap = NULL;
    d->derived++;
    return 1;
}

void be_derive_capture(be_derive *d, const char *name, const isa_insn *in, long n)
{
    if (!d)
        return;
    d->cap = in;
    d->ncap = n;
    d->capname = name;
}

/* Does core's code (d->cap, of k, m steps from its first) keep k's
 * moves?  The base taken from it when k has none yet. */
static int keeps(be_derive *d, dv_class *k, int64_t m)
{
    const long n = d->ncap;
    if (k->state == DV_NONE) {
        if (n > DV_MAX_N)
            return 0;
        k->base = room(k->base, &k->cap, n, sizeof *k->base);
        copy_code(k->base, d->cap, n);
        k->n = n;
        return 1;
    }
    return n == k->n && !strcmp(d->capname, k->name) && diff(d, k->base, d->cap, n) &&
           (k->state == DV_BASE || moves_times(k, d, m));
}

/* The check: the derived code and state against what emission gave. */
static void check(be_derive *d, const dv_class *k, const dv_post *p)
{
    d->checked++;
    if (d->nchk != d->ncap || memcmp(d->chk, d->cap, (size_t)d->ncap * sizeof *d->chk) || !same_post(&k->post, p) ||
        strcmp(k->name, d->capname))
        d->mismatched++;
}

void be_derive_emitted(be_derive *d, const cc_emit *e, int core)
{
    int64_t m;
    dv_class *k = class_of(d, core, &m);
    if (!d->cap || !k || k->count < 4 || k->state == DV_DEAD || (k->state >= DV_MOVES && m <= 0)) {
        d->cap = NULL;
        return;
    }
    const dv_post p = post_of(e);
    if (d->nchk >= 0)
        check(d, k, &p);
    d->nchk = -1;
    const int kept = keeps(d, k, m);
    d->cap = NULL;
    if (!kept || (k->state != DV_NONE && !same_post(&k->post, &p))) {
        k->state = DV_DEAD;
        return;
    }
    switch (k->state) {
    case DV_NONE:
        k->name = d->capname;
        k->post = p;
        k->first = core;
        k->state = DV_BASE;
        break;
    case DV_BASE: {
        dv_delta *t = k->dl;
        k->dl = d->tmp;
        d->tmp = t;
        const size_t c = k->dlcap;
        k->dlcap = d->tmpcap;
        d->tmpcap = c;
        k->ndl = d->ntmp;
        k->step = core - k->first;
        k->state = DV_MOVES;
        break;
    }
    default:
        k->state = DV_SURE;
    }
}
