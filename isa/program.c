/* program.c: the in-memory program (per-core streams, tensor table,
 * constants) shared by the assembler, the compiler, the ELF container,
 * the runtime and the simulator. */
#define _GNU_SOURCE /* mremap */
#include "isa.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *const isa_role_names[] = {"input", "output", "weight", "scratch", NULL};
const char *const isa_host_dtype_names[] = {"f32", "f16", "bf16", NULL};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q && n) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    return q;
}

isa_program *isa_program_new(int ncores)
{
    isa_program *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ncores = ncores;
    p->stick_bytes = 128;
    p->cores = calloc((size_t)(ncores > 0 ? ncores : 1), sizeof *p->cores);
    if (!p->cores) {
        free(p);
        return NULL;
    }
    return p;
}

void isa_program_free(isa_program *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->ncores; i++)
        isa_stream_free(&p->cores[i]);
    isa_arena_free(p->arena);
    free(p->cores);
    free(p->tensors);
    free(p->consts);
    free(p->graph);
    free(p->kernels);
    free(p);
}

/* A stream's memory is a mapping of its own, which grows by mremap: the
 * kernel moves its pages instead of copying them.  Doubling by realloc
 * copied every core's stream at each step (a tenth of a BERT-base
 * compile in a process that had compiled before; malloc's own mmap
 * threshold climbs as large blocks are freed, and the streams then grew
 * on the heap).  Under AddressSanitizer streams stay malloc'd, where it
 * sees a write past their end; under ThreadSanitizer too, which does not
 * follow mremap's moves (a range one thread's stream left, mapped again
 * for another's, looked shared). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) /* gcc */
#define STREAM_MAPPED 0
#elif defined(__has_feature) /* clang (the fuzz targets) */
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STREAM_MAPPED 0
#endif
#endif
#ifndef STREAM_MAPPED
#define STREAM_MAPPED 1
#endif

/* An arena: one reservation of address space, THP-advised, where the
 * streams take slots of a power of two times 64 instructions, a buddy
 * system: a slot of class k is half of one of class k + 1 (split when
 * none is free, merged with its buddy when both are free again), the
 * largest (class top) cut whole from the reservation.  A stream that
 * grows is copied into a slot twice the size and gives its old one back:
 * the streams of a compile grow by turns at about one pace, so the two
 * halves a pair of them outgrew make the slot the next one grows into.
 * A compile's streams are some 32 of half a megabyte each on BERT-base:
 * each a mapping of its own, every 4 KB of them was a page fault (a third
 * of the compile, 3,900 faults for its 16 MB of code); here they fault
 * 2 MB at a time.  The reservation is address space only: memory is what
 * the slots touch (the free lists are kept aside, so a slot split off is
 * not touched until taken); a stream larger than class top, or that
 * finds the arena full, grows on in a mapping of its own. */
#define ARENA_TOP 10 /* the largest slot: 65,536 instructions, 8 MB */
#define ARENA_UNIT (ISA_STREAM_LEAST * sizeof(isa_insn)) /* a slot of class 0 */
typedef struct {
    uint32_t *v; /* offsets in ARENA_UNITs */
    size_t n, cap;
} arena_list;
struct isa_arena {
    char *base;
    size_t bytes, used; /* used: by slots of class top */
    size_t reach;       /* the end of the highest slot ever handed out (bytes): memory past it is untouched */
    int top;            /* ARENA_TOP, or less when the reservation is smaller */
    arena_list idle[ARENA_TOP + 1]; /* per class, its free slots */
    int holders;                    /* isa_arena_keep's count */
    pthread_mutex_t lock; /* the compiler's codegen grows two cores' streams and buffers at once (two threads) */
};

isa_arena *isa_arena_keep(isa_arena *a)
{
    if (a) {
        pthread_mutex_lock(&a->lock);
        a->holders++;
        pthread_mutex_unlock(&a->lock);
    }
    return a;
}

void isa_arena_free(isa_arena *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    const int left = --a->holders;
    pthread_mutex_unlock(&a->lock);
    if (left)
        return;
    munmap(a->base, a->bytes);
    for (int k = 0; k <= ARENA_TOP; k++)
        free(a->idle[k].v);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static int arena_class(size_t cap)
{
    int k = 0;
    while ((size_t)ISA_STREAM_LEAST << k < cap)
        k++;
    return k;
}

static void list_push(arena_list *l, uint32_t off)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = off;
}

/* Take slot off from list l if it is there. */
static int list_take(arena_list *l, uint32_t off)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == off) {
            l->v[i] = l->v[--l->n];
            return 1;
        }
    return 0;
}

/* A slot of class k (its offset), or -1: k above top, or the
 * reservation used up. */
static int64_t arena_cut(isa_arena *a, int k)
{
    if (k > a->top)
        return -1;
    arena_list *l = &a->idle[k];
    if (l->n) {
        size_t lo = 0;
        for (size_t i = 1; i < l->n; i++)
            if (l->v[i] < l->v[lo])
                lo = i;
        const uint32_t off = l->v[lo];
        l->v[lo] = l->v[--l->n];
        return off;
    }
    if (k == a->top) {
        if (a->bytes - a->used < (ARENA_UNIT << k))
            return -1;
        a->used += ARENA_UNIT << k;
        return (int64_t)((a->used / ARENA_UNIT) - ((size_t)1 << k));
    }
    const int64_t off = arena_cut(a, k + 1);
    if (off >= 0)
        list_push(l, (uint32_t)off + (1u << k)); /* its second half */
    return off;
}

/* Slot [off, off + 2^k) handed out: a's reach past it. */
static void arena_reach(isa_arena *a, uint32_t off, int k)
{
    const size_t end = ((size_t)off + ((size_t)1 << k)) * ARENA_UNIT;
    if (end > a->reach)
        a->reach = end;
}

/* arena_cut, the slot handed out. */
static int64_t arena_take(isa_arena *a, int k)
{
    const int64_t off = arena_cut(a, k);
    if (off >= 0)
        arena_reach(a, (uint32_t)off, k);
    return off;
}

static void arena_give(isa_arena *a, uint32_t off, int k)
{
    for (; k < a->top && list_take(&a->idle[k], off ^ (1u << k)); k++)
        off &= ~(1u << k);
    list_push(&a->idle[k], off);
}

typedef struct {
    uint32_t from, to; /* in ARENA_UNITs */
} arena_run;

static int by_from(const void *x, const void *y)
{
    const arena_run *a = x, *b = y;
    return (a->from > b->from) - (a->from < b->from);
}

/* The whole huge pages of a's free memory [from, to) given back, none
 * past its reach (never touched): giving back part of a huge page splits
 * it (some 7 us) and frees it 4 KB by 4 KB, and a madvise over nothing
 * still costs a call (trimming every free run took 31-39 us of a
 * BERT-base compile, whose free runs are parts of pages its program keeps
 * and untouched space; whole pages only, 2 us). */
#define HUGE_PAGE ((uintptr_t)2 << 20)
static void trim_run(const isa_arena *a, uint32_t from, uint32_t to)
{
    const uintptr_t lo = ((uintptr_t)a->base + (size_t)from * ARENA_UNIT + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    const uintptr_t end = ((uintptr_t)a->base + a->reach + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1); /* (never touched past it) */
    uintptr_t hi = ((uintptr_t)a->base + (size_t)to * ARENA_UNIT) & ~(HUGE_PAGE - 1);
    if (hi > end)
        hi = end;
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* a's free slots, by offset (*n of them; the caller frees). */
static arena_run *free_slots(const isa_arena *a, size_t *n)
{
    size_t m = 0;
    for (int k = 0; k <= a->top; k++)
        m += a->idle[k].n;
    arena_run *r = xrealloc(NULL, (m + 1) * sizeof *r);
    m = 0;
    for (int k = 0; k <= a->top; k++)
        for (size_t i = 0; i < a->idle[k].n; i++)
            r[m++] = (arena_run){a->idle[k].v[i], a->idle[k].v[i] + (1u << k)};
    qsort(r, m, sizeof *r, by_from);
    *n = m;
    return r;
}

/* The end of the run of free slots side by side (not buddies, so not
 * merged) that starts at r[i]; *j: the slot after it. */
static uint32_t run_end(const arena_run *r, size_t n, size_t i, size_t *j)
{
    uint32_t to = r[i].to;
    for (*j = i + 1; *j < n && r[*j].from == to; ++*j)
        to = r[*j].to;
    return to;
}

void isa_arena_trim(isa_arena *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    size_t n, j;
    arena_run *r = free_slots(a, &n);
    for (size_t i = 0; i < n; i = j)
        trim_run(a, r[i].from, run_end(r, n, i, &j));
    pthread_mutex_unlock(&a->lock);
    free(r);
}

static uint32_t arena_off(const isa_arena *a, const isa_insn *slot)
{
    return (uint32_t)(((const char *)slot - a->base) / ARENA_UNIT);
}

isa_arena *isa_arena_new(size_t bytes)
{
    if (!STREAM_MAPPED)
        return NULL;
    isa_arena *a = calloc(1, sizeof *a);
    void *m = a ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                : MAP_FAILED;
    if (m == MAP_FAILED) {
        free(a);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(m, bytes, MADV_HUGEPAGE);
#endif
    a->base = m;
    a->bytes = bytes;
    a->holders = 1;
    pthread_mutex_init(&a->lock, NULL);
    while (a->top < ARENA_TOP && (ARENA_UNIT << (a->top + 1)) <= bytes)
        a->top++;
    return a;
}

static void program_set_arena(isa_program *p, isa_arena *a)
{
    p->arena = a;
    for (int i = 0; i < p->ncores; i++)
        p->cores[i].arena = a;
}

void isa_program_arena(isa_program *p, size_t bytes)
{
    if (!p->arena)
        program_set_arena(p, isa_arena_new(bytes));
}

void isa_program_share_arena(isa_program *p, isa_arena *a)
{
    assert(!p->arena);
    program_set_arena(p, isa_arena_keep(a));
}

/* A buffer smaller than this stays on the heap: an arena slot is at
 * least ARENA_UNIT (8 KB). */
#define BUF_MIN (ARENA_UNIT / 4)

/* A buffer's slot is its size rounded up to whole ARENA_UNITs, not to a
 * power of two: the buddy slot it is cut from gives its tail back, and
 * the buffer is given back as the aligned slots it is made of, each
 * merging with its buddy once that is free.  The decode step's reroll
 * entries list, 302 KB in a slot of 512 KB, first touched a third huge
 * page. */
#define BUF_FIT 8 /* units: a buffer this large is placed first fit */
static size_t buf_units(size_t bytes)
{
    return (bytes + ARENA_UNIT - 1) / ARENA_UNIT;
}

/* Units [from, to) given back as the aligned slots they are made of,
 * each as large as its offset and the end allow. */
static void give_range(isa_arena *a, uint32_t from, uint32_t to)
{
    while (from < to) {
        int j = from ? __builtin_ctz(from) : a->top;
        if (j > a->top)
            j = a->top;
        while (from + (1u << j) > to)
            j--;
        arena_give(a, from, j);
        from += 1u << j;
    }
}

/* The lowest run of free slots side by side with room for u units, taken
 * (what it has past them given back), or -1.  A buddy slot must be
 * aligned to its size: the decode step's reroll entries list, 302 KB,
 * found no free aligned 512 KB below its arena's 4 MB, where runs of
 * free slots had room for it. */
static int64_t fit_run(isa_arena *a, uint32_t u)
{
    size_t n, j;
    arena_run *r = free_slots(a, &n);
    int64_t off = -1;
    for (size_t i = 0; i < n && off < 0; i = j) {
        const uint32_t to = run_end(r, n, i, &j);
        if (to - r[i].from < u)
            continue;
        off = r[i].from;
        size_t e = i;
        for (; e < j && r[e].from < off + u; e++)
            list_take(&a->idle[__builtin_ctz(r[e].to - r[e].from)], r[e].from);
        give_range(a, (uint32_t)off + u, r[e - 1].to);
    }
    free(r);
    return off;
}

/* b's memory (heap or slot) given back. */
static void buf_release(isa_buf *b)
{
    if (b->slot) {
        isa_arena *a = b->arena;
        const uint32_t off = arena_off(a, b->p), u = (uint32_t)buf_units(b->cap);
        pthread_mutex_lock(&a->lock);
        give_range(a, off, off + u);
        pthread_mutex_unlock(&a->lock);
    } else {
        free(b->p);
    }
}

/* A run of u units in b's arena (its offset), the slot's tail given
 * back, or -1: none to be had. */
static int64_t buf_take(isa_buf *b, uint32_t u)
{
    const int k = arena_class((size_t)u * ISA_STREAM_LEAST);
    isa_arena *a = b->arena;
    pthread_mutex_lock(&a->lock);
    int64_t off = u >= BUF_FIT ? fit_run(a, u) : -1;
    if (off < 0 && (off = arena_cut(a, k)) >= 0)
        give_range(a, (uint32_t)off + u, (uint32_t)off + (1u << k));
    if (off >= 0)
        arena_reach(a, (uint32_t)off + u - 1, 0); /* (the rest is not touched) */
    pthread_mutex_unlock(&a->lock);
    return off;
}

void *isa_buf_reserve(isa_buf *b, size_t bytes, size_t keep)
{
    if (bytes <= b->cap)
        return b->p;
    if (bytes < 2 * b->cap) /* geometric growth */
        bytes = 2 * b->cap;
    const uint32_t u = (uint32_t)buf_units(bytes);
    if (!keep && b->slot) { /* nothing to copy: its slot is free for the new one to be cut from */
        buf_release(b);
        *b = (isa_buf){.arena = b->arena};
    }
    const int64_t off = b->arena && bytes >= BUF_MIN ? buf_take(b, u) : -1;
    if (off < 0 && !b->slot) { /* on the heap it stays */
        if (!keep) { /* (nothing to copy) */
            free(b->p);
            b->p = NULL;
        }
        b->p = xrealloc(b->p, bytes);
        b->cap = bytes;
        return b->p;
    }
    void *m = off >= 0 ? b->arena->base + (size_t)off * ARENA_UNIT : xrealloc(NULL, bytes);
    if (keep)
        memcpy(m, b->p, keep);
    buf_release(b);
    b->p = m;
    b->cap = off >= 0 ? (size_t)u * ARENA_UNIT : bytes;
    b->slot = off >= 0;
    return m;
}

void isa_buf_free(isa_buf *b)
{
    buf_release(b);
    *b = (isa_buf){.arena = b->arena};
}

/* stream_grow in s's arena: 0 when it has no room left.  A stream
 * whose slot's buddy is free takes the two as its slot of the next
 * class (when that is what it grows to): in place when it is the lower
 * half, else moved down into memory some stream touched already, not
 * into a fresh slot (the kernel zeroes a fresh slot's pages as they are
 * first touched): BERT-base's 32 streams, growing by turns, found the
 * buddy free in 130 of their 160 growths (memcpy 25.0 M instructions of
 * its compile, now 20.7 M). */
static int arena_grow(isa_stream *s, size_t cap)
{
    isa_arena *a = s->arena;
    const int k = s->mapped == 2 ? arena_class(s->cap) : 0, to = arena_class(cap);
    const uint32_t at = s->mapped == 2 ? arena_off(a, s->insns) : 0;
    if (s->mapped == 2 && to == k + 1 && k < a->top && list_take(&a->idle[k], at ^ (1u << k))) {
        arena_reach(a, at & ~(1u << k), k + 1);
        isa_insn *slot = (isa_insn *)(a->base + (size_t)(at & ~(1u << k)) * ARENA_UNIT);
        if (slot != s->insns)
            memcpy(slot, s->insns, s->n * sizeof *s->insns);
        s->insns = slot;
        s->cap = (size_t)ISA_STREAM_LEAST << (k + 1);
        return 1;
    }
    const int64_t off = arena_take(s->arena, to);
    if (off < 0)
        return 0;
    isa_insn *slot = (isa_insn *)(s->arena->base + (size_t)off * ARENA_UNIT);
    if (s->n)
        memcpy(slot, s->insns, s->n * sizeof *s->insns);
    if (s->mapped == 2)
        arena_give(s->arena, arena_off(s->arena, s->insns), arena_class(s->cap));
    else if (s->mapped)
        munmap(s->insns, s->cap * sizeof *s->insns);
    else
        free(s->insns);
    s->insns = slot;
    s->cap = (size_t)ISA_STREAM_LEAST << to;
    s->mapped = 2;
    return 1;
}

/* s grown to room for cap instructions (at least), moved once. */
static void stream_grow(isa_stream *s, size_t cap)
{
    int grown = 0;
    if (s->arena) {
        pthread_mutex_lock(&s->arena->lock);
        grown = arena_grow(s, cap);
        pthread_mutex_unlock(&s->arena->lock);
    }
    if (grown)
        return;
    s->arena = NULL; /* the arena full: a mapping of its own from here on */
    const size_t page = 4096;
    if (!STREAM_MAPPED) {
        s->insns = xrealloc(s->insns, cap * sizeof *s->insns);
        s->cap = cap;
        return;
    }
    const size_t bytes = (cap * sizeof *s->insns + page - 1) / page * page; /* the last page holds instructions too */
    void *m = s->mapped == 1 ? mremap(s->insns, s->cap * sizeof *s->insns, bytes, MREMAP_MAYMOVE)
                        : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "spyre: out of memory\n");
        abort();
    }
    if (s->mapped != 1) { /* a stream the ELF reader allocated, an empty one, or one leaving its arena */
        if (s->n)
            memcpy(m, s->insns, s->n * sizeof *s->insns);
        if (!s->mapped)
            free(s->insns);
    }
    s->insns = m;
    s->mapped = 1;
    s->cap = bytes / sizeof *s->insns;
}

isa_insn *isa_stream_grow(isa_stream *s)
{
    stream_grow(s, s->cap ? s->cap * 2 : ISA_STREAM_LEAST);
    return &s->insns[s->n];
}

void isa_stream_reserve(isa_stream *s, size_t cap)
{
    if (cap > s->cap)
        stream_grow(s, cap > 2 * s->cap ? cap : 2 * s->cap);
}

void isa_stream_free(isa_stream *s)
{
    isa_arena *a = s->arena; /* it grows there again */
    if (s->mapped == 2) {
        pthread_mutex_lock(&a->lock);
        arena_give(a, arena_off(a, s->insns), arena_class(s->cap));
        pthread_mutex_unlock(&a->lock);
    } else if (s->mapped)
        munmap(s->insns, s->cap * sizeof *s->insns);
    else
        free(s->insns);
    *s = (isa_stream){.arena = a};
}

void isa_stream_push(isa_stream *s, const isa_insn *in)
{
    isa_insn_copy(isa_stream_room(s), in);
    s->n++;
}

int64_t isa_tensor_lanes(const isa_tensor *t, uint32_t stick_bytes)
{
    return stick_bytes / (t->dev_dtype == ISA_T_F32 ? 4 : 2);
}

int64_t isa_tensor_groups(const isa_tensor *t, uint32_t stick_bytes)
{
    int64_t lanes = isa_tensor_lanes(t, stick_bytes);
    int64_t len = t->rank ? t->shape[t->stick_dim] : 1;
    return (len + lanes - 1) / lanes;
}

int64_t isa_tensor_rows(const isa_tensor *t)
{
    for (int i = 0; i < t->rank; i++) /* empty: no rows (the other dimensions may multiply past 2^63) */
        if (t->shape[i] == 0)
            return 0;
    int64_t r = 1;
    for (int i = 0; i < t->rank; i++)
        if (i != t->stick_dim)
            r *= t->shape[i];
    return r;
}

uint64_t isa_tensor_device_bytes(const isa_tensor *t, uint32_t stick_bytes)
{
    return (uint64_t)isa_tensor_groups(t, stick_bytes) * (uint64_t)isa_tensor_rows(t) * stick_bytes;
}

int isa_program_add_tensor(isa_program *p, const char *name, isa_role role,
                           isa_host_dtype hdt, isa_dtype_dev ddt, int rank,
                           const int64_t *shape, uint64_t dram_off)
{
    assert(rank >= 0 && rank <= ISA_MAX_RANK);
    if (p->ntensors >= p->tensor_cap) { /* doubling: a table of 200,000 is not 200,000 copies */
        p->tensor_cap = p->ntensors < 8 ? 8 : 2 * p->ntensors;
        p->tensors = xrealloc(p->tensors, p->tensor_cap * sizeof *p->tensors);
    }
    isa_tensor *t = &p->tensors[p->ntensors];
    memset(t, 0, sizeof *t);
    isa_name_copy(t->name, name);
    t->role = role;
    t->host_dtype = hdt;
    t->dev_dtype = ddt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->shape[i] = shape[i];
    t->stick_dim = rank ? rank - 1 : 0;
    t->dram_off = dram_off;
    t->bytes = isa_tensor_device_bytes(t, p->stick_bytes);
    t->const_off = -1;
    if (dram_off + t->bytes > p->dram_bytes)
        p->dram_bytes = dram_off + t->bytes;
    return (int)p->ntensors++;
}

int isa_program_add_lx_tensor(isa_program *p, const char *name, isa_host_dtype hdt, isa_dtype_dev ddt, int rank,
                              const int64_t *shape, int core, uint64_t lx_off)
{
    uint64_t dram = p->dram_bytes;
    int i = isa_program_add_tensor(p, name, ISA_ROLE_INPUT, hdt, ddt, rank, shape, lx_off);
    p->dram_bytes = dram; /* it lives in LX */
    p->tensors[i].flags = ISA_TF_LX, p->tensors[i].lx_core = core;
    return i;
}

int isa_tensor_check_lx(const isa_program *p, const isa_tensor *t, char *msg, size_t len)
{
    if (t->role != ISA_ROLE_INPUT || t->const_off != -1)
        return isa_errf(msg, len, "tensor %s: in LX, but not an input without constant data", t->name);
    if (t->lx_core < 0 || t->lx_core >= p->ncores)
        return isa_errf(msg, len, "tensor %s: in the LX of core %d, the program has %d cores", t->name, t->lx_core,
                        p->ncores);
    if (t->dram_off % p->stick_bytes || t->dram_off > p->lx_bytes || t->bytes > p->lx_bytes - t->dram_off)
        return isa_errf(msg, len, "tensor %s: LX bytes [%" PRIu64 ", +%" PRIu64 ") of core %d are not whole sticks "
                        "inside its %" PRIu64 " bytes", t->name, t->dram_off, t->bytes, t->lx_core, p->lx_bytes);
    return 0;
}

int isa_program_find_tensor(const isa_program *p, const char *name)
{
    for (size_t i = 0; i < p->ntensors; i++) /* (most names differ in their first character) */
        if (p->tensors[i].name[0] == name[0] && strcmp(p->tensors[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int by_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const isa_tensor *const *)a)->name, (*(const isa_tensor *const *)b)->name);
}

/* Sorted, not pairwise: a table of 200,000 tensors must not take minutes. */
const char *isa_program_duplicate_tensor(const isa_program *p)
{
    if (p->ntensors < 2)
        return NULL;
    const isa_tensor **order = xrealloc(NULL, p->ntensors * sizeof *order);
    for (size_t i = 0; i < p->ntensors; i++)
        order[i] = &p->tensors[i];
    qsort(order, p->ntensors, sizeof *order, by_tensor_name);
    const char *dup = NULL;
    for (size_t k = 1; k < p->ntensors && !dup; k++)
        if (strcmp(order[k - 1]->name, order[k]->name) == 0)
            dup = order[k]->name;
    free(order);
    return dup;
}

void isa_program_add_kernel(isa_program *p, const char *name, int core, long first, long last)
{
    p->kernels = xrealloc(p->kernels, (p->nkernels + 1) * sizeof *p->kernels);
    isa_kernel *k = &p->kernels[p->nkernels++];
    isa_name_copy(k->name, name);
    k->core = core;
    k->first = first;
    k->last = last;
}

void isa_name_copy(char *dst, const char *name)
{
    const size_t n = strnlen(name, ISA_NAME_MAX - 1);
    memcpy(dst, name, n);
    dst[n] = 0;
}

int isa_name_printable(const char *name)
{
    size_t n = strnlen(name, ISA_NAME_MAX);
    if (n == 0 || n == ISA_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)name[i]) || name[i] == '#' || name[i] == ';')
            return 0;
    return 1;
}

int isa_config_name_valid(const char *name)
{
    return isa_name_printable(name) && !strchr(name, '=');
}
