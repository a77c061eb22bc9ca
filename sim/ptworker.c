/* ptworker.c: the PT units' arithmetic on worker host threads.  The
 * event loop hands each pt.mm (already checked, timed and race-checked)
 * to the worker in issue order and goes on; before anything else touches
 * LX bytes that a queued product reads or writes, it waits for that
 * product.  Results are the same as running inline: products stay in issue
 * order, and every other access to their bytes waits for them.  A dma.st
 * of a core with products queued is a job too, after them: later DRAM
 * accesses to its bytes wait for it instead. */
#include "internal.h"
#include "ptprod.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUEUE 256

/* The operands whose row-major fp32 copy a worker keeps: A (m x k) and B
 * (k x n), each a DL16 tile in sticks of LX, and P (m x n), fp32 partial
 * sums in sticks: a product that accumulates onto what the last one wrote
 * finds that product's sums still in its buffer. */
enum { OP_A, OP_B, OP_P, OP_KINDS };

/* A piece of a dma.st job: LX bytes [lx, lx + len) to DRAM byte addr, at
 * dst in its page. */
typedef struct {
    uint8_t *dst;
    uint64_t addr;
    int64_t lx;
    size_t len;
} store_piece;

/* DRAM bytes [lo, hi). */
typedef struct {
    uint64_t lo, hi;
} dram_span;

struct pt_job {
    int core;
    int store; /* a dma.st's copies (pieces), not a product: ops[0] spans the LX bytes they read */
    store_piece *pieces;
    size_t npieces, pieces_cap;
    uint64_t dlo, dhi; /* the DRAM bytes the pieces write lie in [dlo, dhi) */
    dram_span *spans;  /* those bytes exactly: ascending, apart (a block of rows
                        * of a wider tensor leaves gaps that other cores' blocks fill) */
    size_t nspans, spans_cap; /* spans_cap in bytes */
    isa_insn in;
    sim_lx_set ops[4];         /* LX bytes read (a, b, p) and written (d) */
    uint64_t lo[4], hi[4];     /* their bounds (empty for no bytes): most fences miss them */
    uint64_t gen[OP_KINDS];    /* version of the A, B and P operands' bytes (see op_version) */
    uint64_t gen_d;            /* version of d's bytes once written (fp32 d only, else 0) */
    sim_tile_tags tags[2];     /* the A and B operands' content, when the event loop knows it */
    /* A copy of operand r's bytes (range g at g * ops[r].len), taken when
     * the event loop was about to overwrite them before the worker took the
     * job; snapped[r] says the job reads it instead of LX.  The buffers
     * stay with the queue entry. */
    uint8_t *snap[OP_KINDS];
    size_t snap_cap[OP_KINDS];
    int snapped[OP_KINDS];
    /* JOB_QUEUED until the worker takes it (JOB_TAKEN); the event loop
     * holds it JOB_COPYING while it copies operands into it, and only
     * while the worker has not taken it. */
    _Atomic int state;
};
typedef struct pt_job pt_job;

enum { JOB_QUEUED, JOB_TAKEN, JOB_COPYING };

/* An operand's place: its LX offset, group stride and rows x cols. */
typedef struct {
    int64_t off, stride, rows, cols;
} op_key;

/* An operand of one core, already converted to row-major fp32, with its
 * key and version: the products of a core that share an A or B tile
 * find it without comparing bytes.  An A or B entry names its values in
 * the worker's pool of conversions (slot, serial), which the worker's
 * cores share; a P entry holds its own (v).  A P entry may be dirty: sums
 * an fp32 product wrote to d (its key) that are not yet in LX.  They are
 * copied there only when something else reads or writes those bytes, or
 * the entry is reused: a GEMM's K steps accumulate in the buffer and only
 * the last one's sums are read from LX. */
typedef struct {
    float *v;
    size_t cap; /* bytes */
    op_key key;
    uint64_t gen;
    int dirty;
    int slot;
    uint64_t serial;
} op_cache;

/* Entries per core, per kind: a core's products walk a few A tiles and
 * more B tiles (one per output column block), and accumulate into one
 * block of sums per PT unit; a GEMM's first K step writes that block as
 * four per unit, which the next step gathers (gather_sums) while they are
 * still here. */
static const int cached[OP_KINDS] = {4, 16, 8};

/* Conversions a worker keeps for all its cores, per kind (A, B): a GEMM's
 * cores take a tile's K step at about the same time, so a few steps'
 * tiles are enough. */
static const int pooled[2] = {16, 32};

typedef struct {
    op_cache *oc[OP_KINDS]; /* per core, cached[kind] entries */
    sim_conv_pool *pool[2]; /* A and B */
    int *next[OP_KINDS];    /* per core: the entry to replace next */
    int64_t sb;             /* stick bytes */
} pt_bufs;

/* One worker thread and its queue; core c's products go to worker
 * c % nworkers, so each core's products stay in issue order. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, done;
    pt_job jobs[QUEUE];
    /* Jobs are handed over without the mutex: the event loop publishes
     * `submitted`, the worker `completed`.  mu and the conditions are for
     * sleeping: the worker sleeps on `more` when it has no job (idle), the
     * event loop on `done` when it waits for job `wait_for` - 1 (0: it does
     * not wait); each side stores its counter before it reads the other's
     * flag, and the flag is set before the sleeper's last look at the
     * counter, so no wake is lost.  A wake is a system call and a switch of
     * threads, so each side wakes the other once: the event loop clears
     * `idle` as it wakes the worker (a worker that has not run yet stays
     * woken, and the products submitted meanwhile need no wake of their
     * own), and the worker wakes the event loop when the job it waits for
     * is done, not after every job (a GEMM launch woke it 414 times for 30
     * waits, and woke the workers 745 times). */
    _Atomic uint64_t submitted; /* written by the event loop */
    _Atomic uint64_t completed; /* written by the worker */
    _Atomic uint64_t wait_for;
    _Atomic int idle;
    size_t snap_bytes;          /* held by its jobs' operand copies (the event loop's count) */
    int stop;                   /* under mu */
    int threaded; /* 0: no thread could be had, products run inline */
    pt_bufs bufs;
    sim *s;
} pt_worker;

#define MAX_WORKERS 8

/* Operands whose version the event loop tracks, per core and kind (every
 * write to LX scans a core's entries: few for A, which products share less). */
static const int versions[OP_KINDS] = {8, 32, 4};
#define VERSIONS_PER_CORE 44 /* versions[OP_A] + versions[OP_B] + versions[OP_P] */

/* A content tag: a core's LX bytes [lo, lo + len) are bytes [off, off +
 * len) of content number id.  A number is given once, to the bytes of a
 * ring.send's source when they have none, and passes to every copy of
 * them; every write to a core's LX (the event loop fences each one first,
 * and a product's d is dropped at its submit) drops the tags it meets.
 * So two ranges with equal tags hold equal bytes. */
#define TAGS_PER_CORE 32
typedef struct {
    int32_t lo[TAGS_PER_CORE], hi[TAGS_PER_CORE]; /* a free tag: lo INT32_MAX, hi 0 */
    uint64_t id[TAGS_PER_CORE], off[TAGS_PER_CORE];
    int32_t blo, bhi; /* bounds of them all: most writes miss every one */
    int next;         /* the tag to replace next (round robin) */
} core_tags;

/* dma.st jobs queued at once, at most (a GEMM stores one block per core;
 * past it a store waits for its products, as it did before store jobs) */
#define PENDING_STORES 64

/* An operand's LX bytes and a version number that changes whenever
 * anything may write them; kept per core by the event loop. */
typedef struct {
    op_key key;
    sim_lx_set bytes; /* the sticks the operand reads */
    uint64_t lo, hi;  /* their bounds: most writes miss them */
    uint64_t gen;
} op_version;

struct sim_ptq {
    int n;
    pt_worker w[MAX_WORKERS];
    op_version *ov; /* cores x VERSIONS_PER_CORE: A's entries, then B's */
    int *vnext;     /* per core and kind: the entry to reuse next */
    uint64_t *dirty; /* per core: bounds [lo, hi) of the fp32 d's submitted since its last flush */
    uint64_t gen;
    /* Per core, the numbers of its jobs in its worker's queue, oldest
     * first (a ring of QUEUE from pend_head, pend_n of them; completed
     * ones are dropped when next looked at): the event loop's fences and
     * copies walk a core's own queued products, not its worker's whole
     * queue, which holds the products of cores / workers cores. */
    uint64_t *pend;
    uint32_t *pend_head, *pend_n;
    /* Per core, LX ranges whose bytes are known by content; NULL when LX
     * offsets do not fit the tags' 31 bits. */
    core_tags *tags;
    uint64_t content; /* the last content number given */
    /* DRAM bytes [lo, hi) that queued dma.st jobs write, with their
     * worker and job number (done ones dropped when next looked at) */
    struct {
        uint64_t lo, hi, job; /* lo, hi: the job's dlo, dhi */
        int worker;
        const pt_job *j;
    } stores[PENDING_STORES];
    int nstores;
};

/* A buffer of at least n floats (sums a product accumulates in, sgemm's
 * C; *cap in bytes). */
static float *grow(float **buf, size_t *cap, size_t n)
{
    return *buf = sim_buf_room(*buf, cap, n * sizeof **buf);
}

static int same_key(const op_key *a, const op_key *b)
{
    return a->off == b->off && a->stride == b->stride && a->rows == b->rows && a->cols == b->cols;
}

static op_key key_of(const isa_insn *in, int kind)
{
    switch (kind) {
    case OP_A: return (op_key){in->a.off, in->as[0], in->m, in->k};
    case OP_B: return (op_key){in->b.off, in->bs[0], in->k, in->nn};
    default: return (op_key){in->p.off, in->ps, in->m, in->nn};
    }
}

/* The key d has as a P operand of a later product (fp32 d). */
static op_key key_of_d(const isa_insn *in) { return (op_key){in->d.off, in->ds[0], in->m, in->nn}; }

/* The cached entry of `kind` for core with key k at version gen, or NULL
 * (gen 0: never cached). */
static op_cache *cache_find(pt_bufs *bf, int core, int kind, uint64_t gen, op_key k)
{
    op_cache *row = &bf->oc[kind][core * cached[kind]];
    for (int i = 0; i < cached[kind]; i++)
        if (gen && row[i].gen == gen && same_key(&row[i].key, &k))
            return &row[i];
    return NULL;
}

/* Does [lo, hi) overlap any of the set's ranges?  Ranges apart and in
 * order (every operand's groups) need no walk: only the first that ends
 * after lo can meet it.  The event loop's fences ask this of every queued
 * product of a core, and a product's sums interleave with the other PT
 * unit's, so the bounds check rarely settles it. */
static int hits(const sim_lx_set *x, uint64_t lo, uint64_t hi)
{
    if (x->count > 1 && x->len > 0 && x->stride >= x->len) {
        const uint64_t base = (uint64_t)x->base, len = (uint64_t)x->len, stride = (uint64_t)x->stride;
        const uint64_t g = lo < base + len ? 0 : (lo - base - len) / stride + 1;
        return g < (uint64_t)x->count && base + g * stride < hi;
    }
    for (int64_t g = 0; g < x->count; g++) {
        uint64_t a = (uint64_t)(x->base + g * x->stride);
        if (lo < a + (uint64_t)x->len && a < hi)
            return 1;
    }
    return 0;
}

static void set_bounds(const sim_lx_set *x, uint64_t *lo, uint64_t *hi)
{
    *lo = (uint64_t)x->base;
    *hi = (uint64_t)(x->base + (x->count - 1) * x->stride + x->len);
}

/* Do two sets of ranges overlap? */
static int meets(const sim_lx_set *x, const sim_lx_set *y)
{
    for (int64_t g = 0; g < x->count; g++) {
        uint64_t a = (uint64_t)(x->base + g * x->stride);
        if (hits(y, a, a + (uint64_t)x->len))
            return 1;
    }
    return 0;
}

/* The sticks of LX that a P entry's key covers. */
static sim_lx_set key_set(const op_key *k, int64_t sb)
{
    return (sim_lx_set){k->off, (k->cols + sb / 4 - 1) / (sb / 4), k->stride, k->rows * sb};
}

/* rows rows of len bytes from src to dst, each pitch bytes after the
 * last.  A whole 128-byte stick (the shipped stick size) is copied with a
 * constant size, which the compiler inlines: a product copies hundreds of
 * sticks of partial sums in and out, and a library call per stick cost as
 * much as a third of the product's own arithmetic. */
static void copy_rows(void *dst, int64_t dpitch, const void *src, int64_t spitch, int64_t rows, int64_t len)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (len == 128)
        for (int64_t r = 0; r < rows; r++)
            memcpy(d + r * dpitch, s + r * spitch, 128);
    else
        for (int64_t r = 0; r < rows; r++)
            memcpy(d + r * dpitch, s + r * spitch, (size_t)len);
}

/* A dirty P entry's sums to their sticks in LX. */
static void flush(op_cache *oc, uint8_t *lx, int64_t sb)
{
    const int64_t l32 = sb / 4, n = oc->key.cols, g32 = (n + l32 - 1) / l32;
    for (int64_t g = 0; g < g32; g++) {
        int64_t w = n - g * l32 < l32 ? n - g * l32 : l32;
        copy_rows(lx + oc->key.off + g * oc->key.stride, sb, oc->v + g * l32, n * 4, oc->key.rows, w * 4);
    }
    oc->dirty = 0;
}

/* The entry of `kind` for core to fill next (round robin), its sums
 * flushed to LX if they were not yet. */
static op_cache *cache_next(pt_bufs *bf, uint8_t *lx, int core, int kind)
{
    op_cache *oc = &bf->oc[kind][core * cached[kind] + bf->next[kind][core]];
    bf->next[kind][core] = (bf->next[kind][core] + 1) % cached[kind];
    if (oc->dirty)
        flush(oc, lx, bf->sb);
    oc->gen = 0;
    return oc;
}

/* Where a job reads operand `kind`: its first group's bytes and the pitch
 * between groups, in LX or in the job's copy. */
typedef struct {
    const uint8_t *at;
    int64_t pitch;
} op_src;

static op_src source(const pt_job *j, const uint8_t *lx, int kind)
{
    const sim_lx_set *x = &j->ops[kind];
    return j->snapped[kind] ? (op_src){j->snap[kind], x->len} : (op_src){lx + x->base, x->stride};
}

/* Operand `kind` (A or B) of a product of `core` as row-major fp32, and
 * its pool entry in *slot: the core's cached conversion when the version
 * matches (gen 0: never cached) and the pool still holds it, else the
 * pool's conversion of its DL16 sticks at src (cols in groups of sb / 2
 * lanes, each group src.pitch bytes on, rows sb bytes apart). */
static const float *operand(pt_bufs *bf, uint8_t *lx, op_src src, const sim_tile_tags *tags, int core, int kind,
                            uint64_t gen, op_key k, int64_t sb, int *slot)
{
    op_cache *oc = cache_find(bf, core, kind, gen, k);
    const float *v = oc ? sim_conv_at(bf->pool[kind], oc->slot, oc->serial) : NULL;
    if (!v) {
        if (!oc)
            oc = cache_next(bf, lx, core, kind);
        const sim_tile_src t = {src.at, src.pitch, sb, k.rows, k.cols};
        v = sim_conv_get(bf->pool[kind], &t, tags, &oc->slot, &oc->serial);
        oc->key = k;
        oc->gen = gen;
    }
    *slot = oc->slot;
    return v;
}

/* A product's A and B into *A and *B, row-major, or packed for
 * OpenBLAS's kernel (then 1).  Packed once a tile comes again: a tile
 * packed into a buffer of its own for one product cost more than OpenBLAS
 * packing it into its warm one (BERT-base's warm launch 4% slower). */
static int operands(pt_bufs *bf, uint8_t *lx, const pt_job *j, int core, const uint64_t *gen, int64_t sb,
                    const float **A, const float **B)
{
    const isa_insn *in = &j->in;
    int sa, sl;
    *A = operand(bf, lx, source(j, lx, OP_A), &j->tags[OP_A], core, OP_A, gen[OP_A], key_of(in, OP_A), sb, &sa);
    *B = operand(bf, lx, source(j, lx, OP_B), &j->tags[OP_B], core, OP_B, gen[OP_B], key_of(in, OP_B), sb, &sl);
    /* | and not ||: each entry counts this use */
    if (!(sim_conv_use(bf->pool[OP_A], sa) | sim_conv_use(bf->pool[OP_B], sl)) || !sim_pt_packs(in->m, in->nn, in->k))
        return 0;
    *A = sim_conv_packed(bf->pool[OP_A], sa, 0);
    *B = sim_conv_packed(bf->pool[OP_B], sl, 1);
    return 1;
}

/* Before a product reads ops[0..2] and writes ops[3]: core's dirty P
 * entries that meet them go to LX first, so that LX holds their sums when
 * read and a later flush does not overwrite newer bytes.  The entry the
 * product accumulates in place (pc, d = p) stays in the buffer. */
static void flush_meeting(pt_bufs *bf, uint8_t *lx, int core, const sim_lx_set ops[4], const op_cache *keep)
{
    op_cache *row = &bf->oc[OP_P][core * cached[OP_P]];
    for (int i = 0; i < cached[OP_P]; i++) {
        if (!row[i].dirty)
            continue;
        sim_lx_set x = key_set(&row[i].key, bf->sb);
        if (meets(&x, &ops[0]) || meets(&x, &ops[1]) ||
            (&row[i] != keep && (meets(&x, &ops[2]) || meets(&x, &ops[3]))))
            flush(&row[i], lx, bf->sb);
    }
}

/* Every dirty P entry of core to LX. */
static void flush_core(pt_bufs *bf, uint8_t *lx, int core)
{
    op_cache *row = &bf->oc[OP_P][core * cached[OP_P]];
    for (int i = 0; i < cached[OP_P]; i++)
        if (row[i].dirty)
            flush(&row[i], lx, bf->sb);
}

/* Before a fresh accumulating product copies its p in from LX, where d is
 * p (fp32): p's groups of columns that another dirty entry of the core
 * holds whole (same rows and group pitch) come from that entry instead,
 * which retires clean: the product's entry holds those sums from now on,
 * and its LX bytes are written when that entry is flushed.  A GEMM's first
 * K step writes its sums in blocks that the next steps accumulate as one;
 * the blocks went out to LX and straight back.  Returns the groups got
 * (bit g: columns [g * l32, (g + 1) * l32)); at most 64 groups. */
static uint64_t gather_sums(pt_bufs *bf, const pt_job *j, const op_cache *pc, float *C, int64_t sb)
{
    const op_key pk = key_of(&j->in, OP_P);
    const int64_t l32 = sb / 4;
    op_cache *row = &bf->oc[OP_P][j->core * cached[OP_P]];
    uint64_t have = 0;
    for (int i = 0; i < cached[OP_P]; i++) {
        op_cache *e = &row[i];
        const op_key *k = &e->key;
        const int64_t at = k->off - pk.off, g0 = pk.stride > 0 && at >= 0 ? at / pk.stride : -1;
        if (e == pc || !e->dirty || k->rows != pk.rows || k->stride != pk.stride || g0 < 0 || at % pk.stride ||
            g0 * l32 + k->cols > pk.cols || (k->cols % l32 && g0 * l32 + k->cols != pk.cols))
            continue;
        const int64_t ng = (k->cols + l32 - 1) / l32;
        const uint64_t mask = (ng >= 64 ? ~0ull : (1ull << ng) - 1) << g0;
        const sim_lx_set x = key_set(k, sb);
        if (have & mask || meets(&x, &j->ops[OP_A]) || meets(&x, &j->ops[OP_B]))
            continue; /* a and b read LX, where the sums must be first */
        for (int64_t r = 0; r < pk.rows; r++)
            memcpy(C + r * pk.cols + g0 * l32, e->v + r * k->cols, (size_t)k->cols * 4);
        e->dirty = 0;
        e->gen = 0; /* its bytes in LX are stale: never found again */
        have |= mask;
    }
    return have;
}

/* d := (acc ? p : 0) + a x b on one core's LX (layouts in isa.h; ops[] the
 * sticks of a, b, p and d).  The sums are made in a P entry: the one that
 * holds p already (acc, the version matches), else the next one, p copied
 * in.  An fp32 d stays in its entry, dirty, keyed as d at version gen_d. */
static void compute(pt_bufs *bf, uint8_t *lx, const pt_job *j)
{
    const int core = j->core;
    const uint64_t *gen = j->gen, gen_d = j->gen_d;
    const isa_insn *in = &j->in;
    const sim_lx_set *ops = j->ops;
    const int64_t sb = bf->sb, l16 = sb / 2, l32 = sb / 4;
    const int64_t m = in->m, n = in->nn, k = in->k;
    const int acc = (in->flags & ISA_F_ACC) != 0, out32 = (in->flags & ISA_F_F32) != 0;
    const int64_t gb = (n + l16 - 1) / l16, g32 = (n + l32 - 1) / l32;
    op_cache *pc = acc ? cache_find(bf, core, OP_P, gen[OP_P], key_of(in, OP_P)) : NULL;
    const op_key dk = key_of_d(in);
    const op_cache *keep = pc && out32 && same_key(&pc->key, &dk) ? pc : NULL;
    const int fresh = !pc;
    if (fresh)
        pc = cache_next(bf, lx, core, OP_P);
    const op_key pk = key_of(in, OP_P);
    const uint64_t have = acc && fresh && out32 && same_key(&pk, &dk) && !j->snapped[OP_P] && g32 <= 64
                              ? gather_sums(bf, j, pc, grow(&pc->v, &pc->cap, (size_t)(m * n)), sb) : 0;
    flush_meeting(bf, lx, core, ops, keep);
    const float *A, *B;
    const int packed = operands(bf, lx, j, core, gen, sb, &A, &B);
    pc->gen = 0; /* its values change below */
    pc->dirty = 0;
    float *C = grow(&pc->v, &pc->cap, (size_t)(m * n));
    if (acc && fresh) {
        const op_src src = source(j, lx, OP_P);
        for (int64_t g = 0; g < g32; g++) {
            int64_t w = n - g * l32 < l32 ? n - g * l32 : l32;
            if (!(have >> g & 1))
                copy_rows(C + g * l32, n * 4, src.at + g * src.pitch, sb, m, w * 4);
        }
    }
    (packed ? sim_pt_product_packed : sim_pt_product)(A, B, C, m, n, k, acc);
    if (out32) {
        pc->key = dk;
        pc->gen = gen_d;
        pc->dirty = 1;
    } else {
        for (int64_t g = 0; g < gb; g++) {
            int64_t w = n - g * l16 < l16 ? n - g * l16 : l16;
            uint8_t *base = lx + in->d.off + g * in->ds[0];
            for (int64_t r = 0; r < m; r++)
                isa_dl16_from_f32_n(C + r * n + g * l16, (uint16_t *)(base + r * sb), (size_t)w);
        }
    }
}

/* A dma.st job's copies to DRAM, after the sums its bytes may hold. */
static void store(pt_bufs *bf, uint8_t *lx, const pt_job *j)
{
    flush_meeting(bf, lx, j->core, j->ops, NULL);
    const op_src src = source(j, lx, OP_A);
    for (size_t i = 0; i < j->npieces; i++)
        memcpy(j->pieces[i].dst, src.at + (j->pieces[i].lx - j->ops[0].base), j->pieces[i].len);
}

/* Wake the other side, which has said it sleeps (or is about to) on c:
 * once mu is free it waits there, and signalled after mu is released it
 * does not wake only to wait for mu. */
static void wake(pt_worker *q, pthread_cond_t *c)
{
    pthread_mutex_lock(&q->mu);
    pthread_mutex_unlock(&q->mu);
    pthread_cond_broadcast(c);
}

/* Sleep until job `next` is submitted; 0 once stopped with none left. */
static int await_job(pt_worker *q, uint64_t next)
{
    if (atomic_load(&q->submitted) != next)
        return 1;
    pthread_mutex_lock(&q->mu);
    /* idle is set again before every sleep: a wake that found it set
     * clears it, and may reach the worker after it has run the job it was
     * for and come back here, when there is nothing to do */
    for (;;) {
        atomic_store(&q->idle, 1);
        if (q->stop || atomic_load(&q->submitted) != next)
            break;
        pthread_cond_wait(&q->more, &q->mu);
    }
    atomic_store(&q->idle, 0);
    int more = atomic_load(&q->submitted) != next;
    pthread_mutex_unlock(&q->mu);
    return more;
}

/* Take job j, unless the event loop is copying into it: then once it is done. */
static void take(pt_job *j)
{
    int queued = JOB_QUEUED;
    while (!atomic_compare_exchange_weak(&j->state, &queued, JOB_TAKEN)) {
        queued = JOB_QUEUED;
        sched_yield();
    }
}

static void *worker(void *arg)
{
    pt_worker *q = arg;
    for (uint64_t next = 0; await_job(q, next); next++) {
        pt_job *j = &q->jobs[next % QUEUE];
        take(j);
        (j->store ? store : compute)(&q->bufs, q->s->cores[j->core].lx, j);
        atomic_store(&q->completed, next + 1);
        const uint64_t want = atomic_load(&q->wait_for);
        if (want && next + 1 >= want)
            wake(q, &q->done);
    }
    return NULL;
}

/* Host threads for products: one per host processor (at most
 * MAX_WORKERS); SPYRE_THREADS overrides. */
static int worker_count(void)
{
    const char *env = getenv("SPYRE_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_WORKERS ? MAX_WORKERS : (int)n;
}

static void free_tables(sim_ptq *q)
{
    free(q->ov);
    free(q->vnext);
    free(q->dirty);
    free(q->pend);
    free(q->pend_head);
    free(q->pend_n);
    free(q->tags);
    free(q);
}

static void tags_clear(core_tags *t)
{
    for (int i = 0; i < TAGS_PER_CORE; i++) {
        t->lo[i] = INT32_MAX;
        t->hi[i] = 0;
    }
    t->blo = INT32_MAX;
    t->bhi = 0;
}

static sim_ptq *start(sim *s)
{
    sim_ptq *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->n = worker_count();
    q->ov = calloc((size_t)s->cfg.cores * VERSIONS_PER_CORE, sizeof *q->ov);
    q->vnext = calloc((size_t)s->cfg.cores * OP_KINDS, sizeof *q->vnext);
    q->dirty = calloc((size_t)s->cfg.cores * 2, sizeof *q->dirty);
    q->pend = calloc((size_t)s->cfg.cores * QUEUE, sizeof *q->pend);
    q->pend_head = calloc((size_t)s->cfg.cores, sizeof *q->pend_head);
    q->pend_n = calloc((size_t)s->cfg.cores, sizeof *q->pend_n);
    q->tags = s->cfg.lx_bytes <= INT32_MAX ? calloc((size_t)s->cfg.cores, sizeof *q->tags) : NULL;
    for (int c = 0; q->tags && c < s->cfg.cores; c++)
        tags_clear(&q->tags[c]);
    if (!q->ov || !q->vnext || !q->dirty || !q->pend || !q->pend_head || !q->pend_n ||
        (!q->tags && s->cfg.lx_bytes <= INT32_MAX)) {
        free_tables(q);
        return NULL;
    }
    for (int i = 0; i < q->n; i++) {
        pt_worker *w = &q->w[i];
        w->s = s;
        w->bufs.sb = s->cfg.stick_bytes;
        int ok = 1;
        for (int k = 0; k < OP_KINDS; k++) {
            w->bufs.oc[k] = calloc((size_t)s->cfg.cores * (size_t)cached[k], sizeof *w->bufs.oc[k]);
            w->bufs.next[k] = calloc((size_t)s->cfg.cores, sizeof *w->bufs.next[k]);
            ok &= w->bufs.oc[k] && w->bufs.next[k];
        }
        for (int k = OP_A; k <= OP_B; k++)
            w->bufs.pool[k] = sim_conv_new(pooled[k]);
        if (!ok) {
            fprintf(stderr, "spyre: out of host memory\n");
            abort();
        }
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->more, NULL);
        pthread_cond_init(&w->done, NULL);
        w->threaded = pthread_create(&w->thread, NULL, worker, w) == 0;
    }
    return q;
}

/* Wake worker w if it sleeps (or is about to) with no job. */
static void wake_worker(pt_worker *w)
{
    if (atomic_load(&w->idle) && atomic_exchange(&w->idle, 0))
        wake(w, &w->more);
}

/* Wait until the worker has finished its jobs before number `upto`. */
static void wait_until(pt_worker *w, uint64_t upto)
{
    if (atomic_load(&w->completed) >= upto)
        return;
    /* The wait ends only if the worker runs: should it sleep with jobs
     * queued (a lost wake), this one wakes it (waits are few, and a
     * broadcast with no sleeper makes no system call). */
    wake(w, &w->more);
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->wait_for, upto);
    while (atomic_load(&w->completed) < upto)
        pthread_cond_wait(&w->done, &w->mu);
    atomic_store(&w->wait_for, 0);
    pthread_mutex_unlock(&w->mu);
}

/* Core's queued jobs, oldest first: n of them, the k-th numbered
 * pend_at(v, k). */
typedef struct {
    const uint64_t *ring;
    uint32_t head, n;
} pend_view;

static uint64_t pend_at(pend_view v, uint32_t k) { return v.ring[(v.head + k) % QUEUE]; }

/* Core's queued jobs, those its worker has completed dropped first. */
static pend_view pending(sim_ptq *q, int core)
{
    const pt_worker *w = &q->w[core % q->n];
    const uint64_t *ring = &q->pend[(size_t)core * QUEUE];
    uint32_t *h = &q->pend_head[core], *n = &q->pend_n[core];
    const uint64_t done = atomic_load(&w->completed);
    while (*n && ring[*h] < done) {
        *h = (*h + 1) % QUEUE;
        --*n;
    }
    return (pend_view){ring, *h, *n};
}

/* Something may write core's LX bytes in the ranges of w: operands there
 * get a new version. */
static void op_touch(sim_ptq *q, int core, const sim_lx_set *w)
{
    uint64_t lo, hi;
    set_bounds(w, &lo, &hi);
    op_version *row = &q->ov[(size_t)core * VERSIONS_PER_CORE];
    for (int i = 0; i < VERSIONS_PER_CORE; i++) {
        if (!row[i].gen || row[i].hi <= lo || hi <= row[i].lo)
            continue;
        for (int64_t g = 0; g < w->count; g++) {
            uint64_t a = (uint64_t)(w->base + g * w->stride);
            if (hits(&row[i].bytes, a, a + (uint64_t)w->len)) {
                row[i].gen = ++q->gen;
                break;
            }
        }
    }
}

/* The version of the operand of `kind` with key k (bytes `set`) as of now. */
static uint64_t op_current(sim_ptq *q, int core, int kind, op_key k, const sim_lx_set *set)
{
    size_t first = 0;
    for (int i = 0; i < kind; i++)
        first += (size_t)versions[i];
    op_version *row = &q->ov[(size_t)core * VERSIONS_PER_CORE + first];
    for (int i = 0; i < versions[kind]; i++)
        if (row[i].gen && same_key(&row[i].key, &k))
            return row[i].gen;
    int *next = &q->vnext[core * OP_KINDS + kind];
    op_version *v = &row[*next];
    *next = (*next + 1) % versions[kind];
    v->key = k;
    v->bytes = *set;
    set_bounds(set, &v->lo, &v->hi);
    v->gen = ++q->gen;
    return v->gen;
}

/* core's fp32 d in `set` may stay in its worker's buffer: note its bounds. */
static void widen_dirty(sim_ptq *q, int core, const sim_lx_set *set)
{
    uint64_t lo, hi, *b = &q->dirty[2 * core];
    set_bounds(set, &lo, &hi);
    if (b[0] >= b[1]) {
        b[0] = lo, b[1] = hi;
        return;
    }
    b[0] = lo < b[0] ? lo : b[0];
    b[1] = hi > b[1] ? hi : b[1];
}

/* Sums of core's products that [lo, hi) may meet and that may not be in
 * LX yet: once its worker has done core's products (the event loop is the
 * only one that gives it work, and its other cores' products touch
 * neither core's entries nor its LX), copy them there from here. */
static void flush_dirty(sim *s, int core, uint64_t lo, uint64_t hi)
{
    uint64_t *b = &s->ptq->dirty[2 * core];
    if (hi <= b[0] || b[1] <= lo)
        return;
    pt_worker *w = &s->ptq->w[core % s->ptq->n];
    const pend_view v = pending(s->ptq, core);
    if (v.n)
        wait_until(w, pend_at(v, v.n - 1) + 1);
    flush_core(&w->bufs, s->cores[core].lx, core);
    b[0] = b[1] = 0;
}

/* The end of x's last range (its base when it has none). */
static uint64_t ops_end(const sim_lx_set *x)
{
    return x->count > 0 ? (uint64_t)(x->base + (x->count - 1) * x->stride + x->len) : (uint64_t)x->base;
}

/* Something may write core's LX bytes [lo, hi): the tags there go.  The
 * loop has no branch on the tags (GCC vectorises it): every DMA, ring
 * transfer and vector instruction that writes LX comes here. */
static void tags_drop(sim_ptq *q, int core, uint64_t lo, uint64_t hi)
{
    core_tags *t = q->tags ? &q->tags[core] : NULL;
    if (!t || hi <= (uint64_t)t->blo || (uint64_t)t->bhi <= lo)
        return;
    const int32_t l = (int32_t)lo, h = hi > INT32_MAX ? INT32_MAX : (int32_t)hi;
    int32_t blo = INT32_MAX, bhi = 0;
    for (int i = 0; i < TAGS_PER_CORE; i++) {
        const int32_t drop = -((t->lo[i] < h) & (l < t->hi[i])); /* all ones or zero */
        const int32_t tlo = (t->lo[i] & ~drop) | (INT32_MAX & drop), thi = t->hi[i] & ~drop;
        t->lo[i] = tlo;
        t->hi[i] = thi;
        blo = tlo < blo ? tlo : blo;
        bhi = thi > bhi ? thi : bhi;
    }
    t->blo = blo;
    t->bhi = bhi;
}

/* Tag LX bytes [lo, lo + len) of core as bytes [off, off + len) of content id. */
static void tag_add(sim_ptq *q, int core, uint64_t lo, uint64_t len, uint64_t id, uint64_t off)
{
    core_tags *t = &q->tags[core];
    const int i = t->next;
    t->next = (i + 1) % TAGS_PER_CORE;
    t->lo[i] = (int32_t)lo;
    t->hi[i] = (int32_t)(lo + len);
    t->id[i] = id;
    t->off[i] = off;
    t->blo = t->lo[i] < t->blo ? t->lo[i] : t->blo;
    t->bhi = t->hi[i] > t->bhi ? t->hi[i] : t->bhi;
}

/* The tag of core's that holds byte a, or -1. */
static int tag_at(const sim_ptq *q, int core, uint64_t a)
{
    const core_tags *t = &q->tags[core];
    if (a < (uint64_t)t->blo || (uint64_t)t->bhi <= a)
        return -1;
    for (int i = 0; i < TAGS_PER_CORE; i++)
        if ((uint64_t)t->lo[i] <= a && a < (uint64_t)t->hi[i])
            return i;
    return -1;
}

void sim_pt_copied(sim *s, int src, uint64_t a, int dst, uint64_t d, uint64_t len)
{
    sim_ptq *q = s->ptq;
    if (!q->tags || !len)
        return;
    const core_tags *st = &q->tags[src];
    const int i = tag_at(q, src, a);
    uint64_t id, off;
    if (i >= 0 && (uint64_t)st->hi[i] - a >= len) {
        id = st->id[i];
        off = st->off[i] + (a - (uint64_t)st->lo[i]);
    } else { /* src's bytes, unknown so far, are the copy's: a new content */
        id = ++q->content;
        off = 0;
        tags_drop(q, src, a, a + len);
        tag_add(q, src, a, len, id, off);
    }
    tags_drop(q, dst, d, d + len); /* an earlier run of the same transfer may lie there */
    tag_add(q, dst, d, len, id, off);
}

/* The content of operand x of core (groups of rows x stick bytes), piece
 * by piece, as far as the tags know it (n 0 otherwise). */
static void tags_of(const sim_ptq *q, int core, const sim_lx_set *x, sim_tile_tags *out)
{
    out->n = 0;
    if (!q->tags)
        return;
    const core_tags *t = &q->tags[core];
    for (int64_t g = 0; g < x->count; g++) {
        uint64_t at = (uint64_t)(x->base + g * x->stride), end = at + (uint64_t)x->len;
        while (at < end) {
            const int i = tag_at(q, core, at);
            if (i < 0 || out->n == SIM_TILE_PIECES) {
                out->n = 0;
                return;
            }
            const uint64_t left = (uint64_t)t->hi[i] - at, len = left < end - at ? left : end - at;
            out->p[out->n].id = t->id[i];
            out->p[out->n].off = t->off[i] + (at - (uint64_t)t->lo[i]);
            out->p[out->n++].len = len;
            at += len;
        }
    }
}

/* The slot of w's next job, *n its number, once the worker is done with
 * the job that had it before. */
static pt_job *free_slot(pt_worker *w, uint64_t *n)
{
    *n = atomic_load(&w->submitted);
    if (*n - atomic_load(&w->completed) == QUEUE)
        wait_until(w, *n - QUEUE + 1);
    return &w->jobs[*n % QUEUE];
}

/* Job n (in slot j) of core, which reads ops[0..2] and writes ops[3]: the
 * event loop's fences see it from now on; the worker once `submitted`
 * says so. */
static void enqueue(sim_ptq *q, int core, uint64_t n, pt_job *j, const sim_lx_set ops[4])
{
    const pend_view v = pending(q, core); /* room: at most QUEUE - 1 queued */
    q->pend[(size_t)core * QUEUE + (v.head + v.n) % QUEUE] = n;
    q->pend_n[core]++;
    atomic_store_explicit(&j->state, JOB_QUEUED, memory_order_relaxed); /* published with submitted */
    j->core = core;
    memcpy(j->ops, ops, sizeof j->ops);
    for (int r = 0; r < 4; r++) {
        j->lo[r] = j->hi[r] = 0;
        if (ops[r].count > 0)
            set_bounds(&ops[r], &j->lo[r], &j->hi[r]);
    }
    memset(j->snapped, 0, sizeof j->snapped);
}

void sim_pt_submit(sim *s, int core, const isa_insn *in, const sim_lx_set ops[4])
{
    if (!s->ptq && !(s->ptq = start(s))) {
        fprintf(stderr, "spyre: out of host memory\n");
        abort();
    }
    pt_worker *w = &s->ptq->w[core % s->ptq->n];
    if (in->flags & ISA_F_F32)
        widen_dirty(s->ptq, core, &ops[3]);
    if (!w->threaded) {
        tags_drop(s->ptq, core, (uint64_t)ops[3].base, ops_end(&ops[3]));
        pt_job now = {.core = core, .in = *in};
        memcpy(now.ops, ops, sizeof now.ops);
        compute(&w->bufs, s->cores[core].lx, &now);
        return;
    }
    uint64_t n;
    pt_job *j = free_slot(w, &n);
    j->store = 0;
    j->in = *in;
    enqueue(s->ptq, core, n, j, ops);
    j->gen[OP_A] = op_current(s->ptq, core, OP_A, key_of(in, OP_A), &ops[0]);
    j->gen[OP_B] = op_current(s->ptq, core, OP_B, key_of(in, OP_B), &ops[1]);
    j->gen[OP_P] = in->flags & ISA_F_ACC ? op_current(s->ptq, core, OP_P, key_of(in, OP_P), &ops[2]) : 0;
    tags_of(s->ptq, core, &ops[0], &j->tags[OP_A]);
    tags_of(s->ptq, core, &ops[1], &j->tags[OP_B]);
    /* later products see what this one writes (its ranges, not their
     * bounds: the other PT unit's sums often lie between them) */
    op_touch(s->ptq, core, &ops[3]);
    tags_drop(s->ptq, core, (uint64_t)ops[3].base, ops_end(&ops[3]));
    /* what it writes, as a later product's P */
    j->gen_d = in->flags & ISA_F_F32 ? op_current(s->ptq, core, OP_P, key_of_d(in), &ops[3]) : 0;
    atomic_store(&w->submitted, n + 1);
    wake_worker(w);
}

/* Does store job j write any of DRAM bytes [lo, hi)? */
static int spans_meet(const pt_job *j, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = j->nspans; /* the first span that ends after lo */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (j->spans[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a < j->nspans && j->spans[a].lo < hi;
}

/* Do store jobs x and y write a DRAM byte in common? */
static int stores_meet(const pt_job *x, const pt_job *y)
{
    size_t a = 0, b = 0;
    while (a < x->nspans && b < y->nspans) {
        if (x->spans[a].hi <= y->spans[b].lo)
            a++;
        else if (y->spans[b].hi <= x->spans[a].lo)
            b++;
        else
            return 1;
    }
    return 0;
}

/* Wait for the queued dma.st jobs that write DRAM bytes of [lo, hi) (of
 * store job `mine`'s, when not NULL), but for those of worker `skip` (-1:
 * none), whose queue keeps them in order. */
static void fence_stores(sim_ptq *q, uint64_t lo, uint64_t hi, const pt_job *mine, int skip)
{
    int k = 0;
    for (int i = 0; i < q->nstores; i++) {
        pt_worker *w = &q->w[q->stores[i].worker];
        if (atomic_load(&w->completed) > q->stores[i].job)
            continue; /* done (its slot is reused only by this thread, so q->stores[i].j stays) */
        if (q->stores[i].worker != skip && lo < q->stores[i].hi && q->stores[i].lo < hi &&
            (mine ? stores_meet(mine, q->stores[i].j) : spans_meet(q->stores[i].j, lo, hi))) {
            wait_until(w, q->stores[i].job + 1);
            continue;
        }
        q->stores[k++] = q->stores[i];
    }
    q->nstores = k;
}

void sim_pt_fence_dram(sim *s, uint64_t addr, size_t len)
{
    if (s->ptq && s->ptq->nstores)
        fence_stores(s->ptq, addr, addr + len, NULL, -1);
}

sim_pt_store *sim_pt_store_begin(sim *s, int core, uint64_t lo, uint64_t hi)
{
    sim_ptq *q = s->ptq;
    if (q && q->nstores == PENDING_STORES)
        fence_stores(q, 0, 0, NULL, -1); /* drops the done ones */
    if (!q || lo >= hi || q->nstores == PENDING_STORES)
        return NULL;
    pt_worker *w = &q->w[core % q->n];
    if (!w->threaded || !pending(q, core).n)
        return NULL; /* nothing to wait for: the event loop copies at once */
    uint64_t n;
    pt_job *j = free_slot(w, &n);
    j->store = 1;
    j->core = core;
    j->npieces = 0;
    j->dlo = UINT64_MAX;
    j->dhi = 0;
    j->ops[0] = (sim_lx_set){(int64_t)lo, 1, 0, (int64_t)(hi - lo)};
    return j;
}

void sim_pt_store_piece(sim *s, sim_pt_store *j, uint64_t addr, uint64_t lx, size_t len)
{
    j->dlo = addr < j->dlo ? addr : j->dlo;
    j->dhi = addr + len > j->dhi ? addr + len : j->dhi;
    while (len) {
        if (j->npieces == j->pieces_cap) {
            j->pieces_cap = j->pieces_cap ? 2 * j->pieces_cap : 64;
            j->pieces = realloc(j->pieces, j->pieces_cap * sizeof *j->pieces);
            if (!j->pieces) {
                fprintf(stderr, "spyre: out of host memory\n");
                abort();
            }
        }
        store_piece *p = &j->pieces[j->npieces++];
        p->dst = sim_dram_for_write(s, addr, len, &p->len);
        p->addr = addr;
        p->lx = (int64_t)lx;
        addr += p->len;
        lx += p->len;
        len -= p->len;
    }
}

static int span_order(const void *x, const void *y)
{
    const dram_span *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Store job j's spans from its pieces (which keep their order: two that
 * write one byte must copy in program order). */
static void make_spans(pt_job *j)
{
    j->spans = sim_buf_room(j->spans, &j->spans_cap, j->npieces * sizeof *j->spans);
    int sorted = 1;
    for (size_t i = 0; i < j->npieces; i++) {
        j->spans[i] = (dram_span){j->pieces[i].addr, j->pieces[i].addr + j->pieces[i].len};
        sorted &= i == 0 || j->spans[i - 1].lo <= j->spans[i].lo;
    }
    if (!sorted)
        qsort(j->spans, j->npieces, sizeof *j->spans, span_order);
    size_t k = 0;
    for (size_t i = 0; i < j->npieces; i++) {
        if (k && j->spans[i].lo <= j->spans[k - 1].hi)
            j->spans[k - 1].hi = j->spans[i].hi > j->spans[k - 1].hi ? j->spans[i].hi : j->spans[k - 1].hi;
        else
            j->spans[k++] = j->spans[i];
    }
    j->nspans = k;
}

void sim_pt_store_end(sim *s, sim_pt_store *j)
{
    sim_ptq *q = s->ptq;
    const int wi = j->core % q->n;
    pt_worker *w = &q->w[wi];
    const uint64_t n = atomic_load(&w->submitted);
    make_spans(j);
    if (j->dlo < j->dhi)
        fence_stores(q, j->dlo, j->dhi, j, wi); /* another worker's stores there land first */
    const sim_lx_set ops[4] = {j->ops[0]};
    enqueue(q, j->core, n, j, ops);
    q->stores[q->nstores].lo = j->dlo;
    q->stores[q->nstores].hi = j->dhi;
    q->stores[q->nstores].job = n;
    q->stores[q->nstores].j = j;
    q->stores[q->nstores++].worker = wi;
    atomic_store(&w->submitted, n + 1);
    wake_worker(w);
}

/* Host memory the operand copies of one worker's jobs may hold (a product's
 * operand is at most an LX, and a queue holds QUEUE products): past it, the
 * event loop waits for the product instead, as it would without copies. */
#define SNAP_BUDGET ((size_t)64 << 20)

/* May queued job i of core (`before`: the core's queued jobs before it) read a copy of its operand bytes x made now
 * instead of LX later?  When nothing may write them before it runs: no
 * product queued before it writes them (completed ones have), and no sums
 * waiting in a buffer lie there (every fp32 d since the last flush is
 * inside the core's dirty bounds).  The copy then holds what it would read.
 * And only while the worker's copies fit SNAP_BUDGET. */
static int may_copy(sim_ptq *q, pt_worker *w, int core, uint64_t i, const sim_lx_set *x, pend_view before)
{
    const pt_job *j = &w->jobs[i % QUEUE];
    const size_t need = (size_t)(x->count * x->len), have = j->snap_cap[x - j->ops];
    if (need > have && w->snap_bytes + (need - have) > SNAP_BUDGET)
        return 0;
    const uint64_t *b = &q->dirty[2 * core];
    uint64_t lo, hi;
    set_bounds(x, &lo, &hi);
    if (b[0] < b[1] && lo < b[1] && b[0] < hi)
        return 0;
    const uint64_t done = atomic_load(&w->completed);
    for (uint32_t k = 0; k < before.n; k++) {
        uint64_t e = pend_at(before, k);
        if (e >= done && meets(&w->jobs[e % QUEUE].ops[3], x))
            return 0;
    }
    return 1;
}

/* Job j's copy buffer r swapped for a done job's that holds n bytes, when
 * one does: copies fall on other queue slots from run to run, and a run
 * otherwise grows (and faults in) fresh buffers while the last run's lie
 * idle.  Jobs below `completed` are the worker's no more; those above
 * submitted - QUEUE still hold their slots (job submitted - QUEUE's is
 * the next job's, which a dma.st may be filling). */
static void reuse_snap(pt_worker *w, pt_job *j, int r, size_t n)
{
    const uint64_t done = atomic_load(&w->completed), sub = atomic_load(&w->submitted);
    for (uint64_t e = done; e-- > 0 && e + QUEUE > sub;) {
        pt_job *d = &w->jobs[e % QUEUE];
        for (int k = 0; k < OP_KINDS; k++) {
            if (d->snap_cap[k] < n)
                continue;
            uint8_t *b = d->snap[k];
            size_t c = d->snap_cap[k];
            d->snap[k] = j->snap[r], d->snap_cap[k] = j->snap_cap[r];
            j->snap[r] = b, j->snap_cap[r] = c;
            return;
        }
    }
}

/* Job j's operand r from LX into its copy (range g at g * len). */
static void copy_operand(pt_worker *w, pt_job *j, int r, const uint8_t *lx)
{
    const sim_lx_set *x = &j->ops[r];
    size_t n = (size_t)(x->count * x->len);
    if (n > j->snap_cap[r])
        reuse_snap(w, j, r, n);
    if (n > j->snap_cap[r])
        w->snap_bytes += n - j->snap_cap[r];
    j->snap[r] = sim_buf_room(j->snap[r], &j->snap_cap[r], n);
    for (int64_t g = 0; g < x->count; g++)
        memcpy(j->snap[r] + g * x->len, lx + x->base + g * x->stride, (size_t)x->len);
    j->snapped[r] = 1;
}

/* Before the event loop reads (or writes) core's LX bytes [lo, hi): the
 * products that write them (or read them) are done first.  A product the
 * worker has not taken yet that only reads bytes about to be written gets
 * a copy of its operand instead, when may_copy allows, and the event loop
 * goes on without waiting for it: a DMA filling the next buffer of a
 * double-buffered loop does not wait for the products on the last one. */
void sim_pt_fence_queued(sim *s, int core, uint64_t lo, uint64_t hi, int is_write)
{
    flush_dirty(s, core, lo, hi);
    if (is_write) {
        op_touch(s->ptq, core, &(sim_lx_set){(int64_t)lo, 1, 0, (int64_t)(hi - lo)});
        tags_drop(s->ptq, core, lo, hi);
    }
    pt_worker *w = &s->ptq->w[core % s->ptq->n];
    const pend_view v = pending(s->ptq, core);
    uint64_t need = 0;
    for (uint32_t k = 0; k < v.n; k++) {
        const uint64_t i = pend_at(v, k);
        pt_job *j = &w->jobs[i % QUEUE];
        int hit = lo < j->hi[3] && j->lo[3] < hi && hits(&j->ops[3], lo, hi);
        for (int r = 0; r < 3 && is_write && !hit; r++) {
            if (j->snapped[r] || hi <= j->lo[r] || j->hi[r] <= lo || !hits(&j->ops[r], lo, hi))
                continue;
            int queued = JOB_QUEUED;
            if (!atomic_compare_exchange_strong(&j->state, &queued, JOB_COPYING)) {
                hit = 1; /* the worker has it */
                continue;
            }
            if (may_copy(s->ptq, w, core, i, &j->ops[r], (pend_view){v.ring, v.head, k}))
                copy_operand(w, j, r, s->cores[core].lx);
            else
                hit = 1;
            atomic_store(&j->state, JOB_QUEUED);
        }
        if (hit)
            need = i + 1;
    }
    wait_until(w, need);
}

void sim_pt_drain(sim *s)
{
    if (!s->ptq)
        return;
    for (int i = 0; i < s->ptq->n; i++)
        wait_until(&s->ptq->w[i], atomic_load(&s->ptq->w[i].submitted));
    s->ptq->nstores = 0;
    for (int c = 0; c < s->cfg.cores; c++)
        flush_dirty(s, c, 0, UINT64_MAX);
    /* The next run takes cache and pool entries in the order this one
     * did, so it finds their buffers grown and faulted in already (the
     * workers are idle: the next submit publishes this). */
    for (int i = 0; i < s->ptq->n; i++) {
        for (int k = 0; k < OP_KINDS; k++)
            memset(s->ptq->w[i].bufs.next[k], 0, (size_t)s->cfg.cores * sizeof *s->ptq->w[i].bufs.next[k]);
        for (int k = OP_A; k <= OP_B; k++)
            sim_conv_rewind(s->ptq->w[i].bufs.pool[k]);
    }
}

void sim_pt_stop(sim *s)
{
    sim_ptq *q = s->ptq;
    if (!q)
        return;
    for (int i = 0; i < q->n; i++) {
        pt_worker *w = &q->w[i];
        if (w->threaded) {
            pthread_mutex_lock(&w->mu);
            w->stop = 1;
            pthread_cond_signal(&w->more);
            pthread_mutex_unlock(&w->mu);
            pthread_join(w->thread, NULL);
        }
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->more);
        pthread_cond_destroy(&w->done);
        for (int i = 0; i < QUEUE; i++) {
            for (int k = 0; k < OP_KINDS; k++)
                free(w->jobs[i].snap[k]);
            free(w->jobs[i].pieces);
            free(w->jobs[i].spans);
        }
        for (int k = 0; k < OP_KINDS; k++) {
            for (int c = 0; c < s->cfg.cores * cached[k]; c++)
                free(w->bufs.oc[k][c].v);
            free(w->bufs.oc[k]);
            free(w->bufs.next[k]);
        }
        for (int k = OP_A; k <= OP_B; k++)
            sim_conv_free(w->bufs.pool[k]);
    }
    free_tables(q);
    s->ptq = NULL;
}
