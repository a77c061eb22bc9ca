/* race.c: hazard detection.  Every unit carries a vector clock; `sig`
 * publishes the signaller's clock on the token (a FIFO per token, since
 * tokens count), `wait` joins the clock it consumes, a barrier joins all,
 * a fence joins the units of its core.
 * Shadow memory keeps, per 128-byte stick of LX and DRAM, the last write
 * and a few reads with the byte range each touched.  Two accesses to
 * overlapping bytes, one a write, neither ordered before the other by the
 * clocks, are a race.  Approximations (they can miss a race, never invent
 * one): a stick remembers one write and SHADOW_READS reads.
 * Sticks are grouped in blocks of BLOCK_STICKS; a block whose sticks all
 * share one state keeps it once, so a DMA or PT access over whole blocks
 * costs one check per block instead of one per stick. */
#include "internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RACE_AVX2 1 /* an AVX2 clock join, taken when the host has it */
#endif

#define SHADOW_READS 4

typedef struct {
    uint32_t clock; /* 0: none */
    uint32_t index; /* instruction index */
    uint16_t unit;  /* global unit id */
    uint8_t lo, hi; /* bytes [lo, hi) of the stick; hi 0 means 256 never used */
} access_rec;

typedef struct {
    uint32_t nr;    /* reads in r */
    access_rec w;
    access_rec r[SHADOW_READS];
} shadow;

#define BLOCK_STICKS 16

/* A block's header.  Headers sit together, apart from the shadows: every
 * access reads its blocks' headers, and a dense array of them stays in
 * cache where 72-byte blocks spread over two lines each did not. */
typedef struct {
    uint32_t gen;     /* run the block belongs to; an older block reads as empty */
    uint32_t uniform; /* every stick has state sums[block] (sticks[] not used) */
} block;

/* Shadow of one LX or one DRAM page: block headers, the state of each
 * uniform block, and the sticks.  Only the headers start zeroed: a sum is
 * written when its block joins the run, a stick when its block stops
 * being uniform, before either is read. */
typedef struct {
    block *blocks;
    shadow *sums;
    shadow *sticks;
} space_shadow;

/* A unit's clock as of a `sig`.  The unit's later sigs share it for as
 * long as its clock changes only by its own count (a GEMM's launch makes
 * 6,976 sigs, about 60% of them with no join since the unit's last one):
 * an entry holds the snapshot and the count, and a wait joins both, which
 * gives the clock the copy had (the snapshot's own count is at most the
 * entry's).  refs: the entries holding it, and its unit while current. */
typedef struct vc_snap {
    struct vc_snap *next_free;
    uint32_t refs;
    uint32_t vc[]; /* nunits clocks */
} vc_snap;

typedef struct {
    vc_snap *snap;
    uint32_t own; /* the signaller's own count at the sig */
    int src;      /* the signaller (global unit id) */
} vc_entry;

typedef struct {
    vc_entry *v;
    size_t head, n, cap;
} vc_fifo;

struct sim_race {
    int nunits;
    void (*join)(uint32_t *mine, const uint32_t *got, int n); /* vc_join, or its AVX2 twin */
    uint32_t *vc;     /* nunits x nunits: the clock of each unit */
    vc_fifo *fifos;   /* cores x tokens */
    vc_snap **snap;   /* per unit: the snapshot its sigs share, NULL once its clock changed */
    vc_snap **all, *free_snaps; /* every snapshot made (nall), the unused ones */
    size_t nall, cap_all;
    space_shadow *lx;   /* per core, allocated on first use */
    space_shadow *dram; /* per DRAM page, allocated on first use */
    uint64_t dram_pages;
    size_t sticks_per_page;
    uint64_t stick_bytes;
    int stick_sh, page_sh; /* log2 of stick_bytes and of sticks_per_page, or -1 */
    uint32_t gen; /* current run */
};

static int log2_or_none(uint64_t v)
{
    int sh = 0;
    while (sh < 63 && (1ull << sh) < v)
        sh++;
    return (1ull << sh) == v ? sh : -1;
}

/* The stick of byte a and the page of stick st: every access divides by
 * both, a shift for the shipped (power-of-two) sizes. */
static inline uint64_t sticks_of(const sim_race *r, uint64_t a)
{
    return r->stick_sh >= 0 ? a >> r->stick_sh : a / r->stick_bytes;
}

static inline uint64_t pages_of(const sim_race *r, uint64_t st)
{
    return r->page_sh >= 0 ? st >> r->page_sh : st / r->sticks_per_page;
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (!p && n && sz) {
        fprintf(stderr, "spyre: out of host memory (race detector)\n");
        abort();
    }
    return p;
}

/* Shadows are 64 bytes: on cache-line boundaries each is one line. */
static void *xmalloc(size_t n)
{
    void *p = n ? aligned_alloc(64, (n + 63) / 64 * 64) : NULL;
    if (!p && n) {
        fprintf(stderr, "spyre: out of host memory (race detector)\n");
        abort();
    }
    return p;
}

static uint32_t *clock_of(sim_race *r, int g) { return r->vc + (size_t)g * (size_t)r->nunits; }

/* An array of n space shadows, and what each holds. */
static void free_shadows(space_shadow *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        free(v[i].blocks);
        free(v[i].sums);
        free(v[i].sticks);
    }
    free(v);
}

void sim_race_free(sim *s)
{
    sim_race *r = s->race;
    if (!r)
        return;
    for (int i = 0; i < s->cfg.cores * s->cfg.tokens; i++)
        free(r->fifos[i].v);
    free(r->fifos);
    for (size_t i = 0; i < r->nall; i++)
        free(r->all[i]);
    free(r->all);
    free(r->snap);
    free_shadows(r->lx, (uint64_t)s->cfg.cores);
    free_shadows(r->dram, r->dram_pages);
    free(r->vc);
    free(r);
    s->race = NULL;
}

/* mine := max(mine, got), clock by clock: a wait, a fence and a barrier
 * join one clock per unit of the chip.  SSE2 has no unsigned 32-bit max, so four lanes at a time
 * compare as signed with their top bits flipped. */
static void vc_join(uint32_t *mine, const uint32_t *got, int n)
{
    int g = 0;
#if defined(__SSE2__)
    const __m128i flip = _mm_set1_epi32((int)0x80000000u);
    for (; g + 4 <= n; g += 4) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(got + g));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(mine + g));
        __m128i gt = _mm_cmpgt_epi32(_mm_xor_si128(a, flip), _mm_xor_si128(b, flip));
        _mm_storeu_si128((__m128i *)(void *)(mine + g), _mm_or_si128(_mm_and_si128(gt, a), _mm_andnot_si128(gt, b)));
    }
#endif
    for (; g < n; g++)
        mine[g] = got[g] > mine[g] ? got[g] : mine[g];
}

#if defined(RACE_AVX2)
/* vc_join eight lanes at a time (AVX2 has the unsigned max): the same
 * maxima.  A chip of 32 cores joins 256 clocks per wait. */
__attribute__((target("avx2"))) static void vc_join_avx2(uint32_t *mine, const uint32_t *got, int n)
{
    int g = 0;
    for (; g + 8 <= n; g += 8) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(got + g));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(mine + g));
        _mm256_storeu_si256((__m256i *)(void *)(mine + g), _mm256_max_epu32(a, b));
    }
    for (; g < n; g++)
        mine[g] = got[g] > mine[g] ? got[g] : mine[g];
}
#endif

static void (*join_for_host(void))(uint32_t *, const uint32_t *, int)
{
#if defined(RACE_AVX2)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return vc_join_avx2;
#endif
    return vc_join;
}

void sim_race_reset(sim *s)
{
    s->race_found = 0;
    if (!s->opt.detect_races)
        return;
    sim_race *r = sim_race_active(s);
    if (!r) {
        r = s->race = xcalloc(1, sizeof *r);
        r->nunits = s->cfg.cores * ISA_NUNITS;
        r->join = join_for_host();
        r->vc = xcalloc((size_t)r->nunits * (size_t)r->nunits, sizeof *r->vc);
        r->fifos = xcalloc((size_t)s->cfg.cores * (size_t)s->cfg.tokens, sizeof *r->fifos);
        r->snap = xcalloc((size_t)r->nunits, sizeof *r->snap);
        r->lx = xcalloc((size_t)s->cfg.cores, sizeof *r->lx);
        assert(s->cfg.lx_bytes % (s->cfg.stick_bytes * BLOCK_STICKS) == 0); /* chip_config_load checks */
        assert(s->cfg.dram_page_bytes % (s->cfg.stick_bytes * BLOCK_STICKS) == 0);
        r->dram_pages = s->npages;
        r->dram = xcalloc(r->dram_pages, sizeof *r->dram);
        r->sticks_per_page = s->cfg.dram_page_bytes / s->cfg.stick_bytes;
        r->stick_bytes = s->cfg.stick_bytes;
        r->stick_sh = log2_or_none(r->stick_bytes);
        r->page_sh = log2_or_none(r->sticks_per_page);
    }
    memset(r->vc, 0, (size_t)r->nunits * (size_t)r->nunits * sizeof *r->vc);
    for (int g = 0; g < r->nunits; g++)
        clock_of(r, g)[g] = 1;
    for (int i = 0; i < s->cfg.cores * s->cfg.tokens; i++)
        r->fifos[i].head = r->fifos[i].n = 0;
    memset(r->snap, 0, (size_t)r->nunits * sizeof *r->snap);
    r->free_snaps = NULL; /* no entry or unit holds one now */
    for (size_t i = 0; i < r->nall; i++) {
        r->all[i]->refs = 0;
        r->all[i]->next_free = r->free_snaps;
        r->free_snaps = r->all[i];
    }
    r->gen++; /* every shadow entry of earlier runs now reads as empty */
}

static int gid(const sim_core *c, int u) { return c->id * ISA_NUNITS + u; }

static vc_snap *snap_new(sim_race *r)
{
    vc_snap *v = r->free_snaps;
    if (v) {
        r->free_snaps = v->next_free;
        return v;
    }
    if (r->nall == r->cap_all) {
        r->cap_all = r->cap_all ? 2 * r->cap_all : 64;
        vc_snap **all = realloc(r->all, r->cap_all * sizeof *all);
        if (!all) {
            fprintf(stderr, "spyre: out of host memory (race detector)\n");
            abort();
        }
        r->all = all;
    }
    v = xcalloc(1, sizeof *v + (size_t)r->nunits * sizeof(uint32_t));
    r->all[r->nall++] = v;
    return v;
}

static void snap_drop(sim_race *r, vc_snap *v)
{
    if (--v->refs == 0) {
        v->next_free = r->free_snaps;
        r->free_snaps = v;
    }
}

/* Unit g's clock changed other than by its own count: its next sig takes
 * a new snapshot. */
static void clock_changed(sim_race *r, int g)
{
    if (r->snap[g]) {
        snap_drop(r, r->snap[g]);
        r->snap[g] = NULL;
    }
}

void sim_race_signal(sim *s, sim_core *src, int u, sim_core *dst, int64_t tok)
{
    sim_race *r = sim_race_active(s);
    if (!r)
        return;
    vc_fifo *f = &r->fifos[dst->id * s->cfg.tokens + tok];
    if (f->n == f->cap) {
        size_t ncap = f->cap ? 2 * f->cap : 4;
        vc_entry *nv = xcalloc(ncap, sizeof *nv);
        for (size_t j = 0; j < f->n; j++)
            nv[j] = f->v[(f->head + j) % f->cap];
        free(f->v);
        f->v = nv;
        f->head = 0;
        f->cap = ncap;
    }
    const int g = gid(src, u);
    uint32_t *mine = clock_of(r, g);
    if (!r->snap[g]) {
        r->snap[g] = snap_new(r);
        memcpy(r->snap[g]->vc, mine, (size_t)r->nunits * sizeof *mine);
        r->snap[g]->refs = 1;
    }
    r->snap[g]->refs++;
    f->v[(f->head + f->n) % f->cap] = (vc_entry){r->snap[g], mine[g], g};
    f->n++;
    mine[g]++;
}

void sim_race_wait(sim *s, sim_core *c, int u, int64_t tok)
{
    sim_race *r = sim_race_active(s);
    if (!r)
        return;
    vc_fifo *f = &r->fifos[c->id * s->cfg.tokens + tok];
    if (!f->n)
        return; /* a token given by no signal of this run cannot order anything */
    const vc_entry *e = &f->v[f->head];
    uint32_t *mine = clock_of(r, gid(c, u));
    r->join(mine, e->snap->vc, r->nunits);
    mine[e->src] = e->own > mine[e->src] ? e->own : mine[e->src];
    snap_drop(r, e->snap);
    clock_changed(r, gid(c, u));
    f->head = (f->head + 1) % f->cap;
    f->n--;
}

void sim_race_barrier(sim *s)
{
    sim_race *r = sim_race_active(s);
    if (!r)
        return;
    uint32_t *join = xcalloc((size_t)r->nunits, sizeof *join);
    for (int g = 0; g < r->nunits; g++)
        r->join(join, clock_of(r, g), r->nunits);
    for (int g = 0; g < r->nunits; g++) {
        uint32_t *v = clock_of(r, g);
        memcpy(v, join, (size_t)r->nunits * sizeof *v);
        v[g]++;
        clock_changed(r, g);
    }
    free(join);
}

/* A fence: every earlier instruction of core c's units happens before
 * every later one, as a barrier orders them, but no other core's. */
void sim_race_fence(sim *s, sim_core *c)
{
    sim_race *r = sim_race_active(s);
    if (!r)
        return;
    uint32_t *join = xcalloc((size_t)r->nunits, sizeof *join);
    for (int u = 0; u < ISA_NUNITS; u++)
        r->join(join, clock_of(r, gid(c, u)), r->nunits);
    for (int u = 0; u < ISA_NUNITS; u++) {
        uint32_t *v = clock_of(r, gid(c, u));
        memcpy(v, join, (size_t)r->nunits * sizeof *v);
        v[gid(c, u)]++;
        clock_changed(r, gid(c, u));
    }
    free(join);
}

static void report(sim *s, int g, long index, int is_write, const access_rec *other, int other_write, int space,
                   uint64_t stick_addr)
{
    if (s->race_found)
        return;
    s->race_found = 1;
    int core = g / ISA_NUNITS, unit = g % ISA_NUNITS;
    int ocore = other->unit / ISA_NUNITS, ounit = other->unit % ISA_NUNITS;
    char where[64];
    if (space < 0)
        snprintf(where, sizeof where, "DRAM");
    else
        snprintf(where, sizeof where, "core %d's LX", space);
    sim_faultf(s, core, unit, index,
               "race: core %d %s #%ld %s %s bytes [0x%" PRIx64 ", 0x%" PRIx64 ") that core %d %s #%u %s, "
               "with no token, fence or barrier ordering the two",
               core, isa_unit_names[unit], index, is_write ? "writes" : "reads", where, stick_addr + other->lo,
               stick_addr + other->hi, ocore, isa_unit_names[ounit], other->index, other_write ? "wrote" : "read");
}

static int overlaps(const access_rec *a, unsigned lo, unsigned hi) { return a->lo < hi && lo < a->hi; }

static inline __attribute__((always_inline)) void access_stick(sim *s, shadow *sh, int g, const uint32_t *vc, long index, unsigned lo, unsigned hi,
                                int is_write, int space, uint64_t stick_addr)
{
    access_rec me = {vc[g], (uint32_t)index, (uint16_t)g, (uint8_t)lo, (uint8_t)hi};
    if (sh->w.clock && sh->w.unit != g && vc[sh->w.unit] < sh->w.clock && overlaps(&sh->w, lo, hi))
        report(s, g, index, is_write, &sh->w, 1, space, stick_addr);
    if (is_write) {
        uint32_t keep = 0;
        for (uint32_t i = 0; i < sh->nr; i++) {
            access_rec *rd = &sh->r[i];
            if (rd->unit == g || vc[rd->unit] >= rd->clock)
                continue; /* ordered before this write: no longer needed */
            if (overlaps(rd, lo, hi))
                report(s, g, index, 1, rd, 0, space, stick_addr);
            sh->r[keep++] = *rd;
        }
        sh->nr = keep;
        sh->w = me;
        return;
    }
    for (uint32_t i = 0; i < sh->nr; i++) {
        access_rec *rd = &sh->r[i];
        if ((rd->unit == g && rd->lo == lo && rd->hi == hi) || vc[rd->unit] >= rd->clock) {
            *rd = me; /* the same reader again, or one ordered before this read */
            return;
        }
    }
    if (sh->nr < SHADOW_READS)
        sh->r[sh->nr++] = me;
    else /* more concurrent readers than we track: forget the oldest */
        sh->r[0] = me;
}

/* Sticks [s0, s1) of one block, bytes [lo, hi) of the space. */
static void access_block(sim *s, sim_race *r, block *b, shadow *sum, shadow *sticks, uint64_t bstart, uint64_t s0,
                         uint64_t s1, int g, const uint32_t *vc, long index, uint64_t lo, uint64_t hi, int is_write,
                         int space)
{
    const uint64_t sb = s->cfg.stick_bytes;
    if (b->gen != r->gen) {
        memset(sum, 0, sizeof *sum);
        b->gen = r->gen;
        b->uniform = 1;
    }
    uint64_t blo = bstart * sb, bhi = (bstart + BLOCK_STICKS) * sb;
    int full = lo <= blo && hi >= bhi;
    if (b->uniform && full) {
        access_stick(s, sum, g, vc, index, 0, (unsigned)sb, is_write, space, blo);
        return;
    }
    if (b->uniform) {
        for (int i = 0; i < BLOCK_STICKS; i++)
            sticks[i] = *sum;
        b->uniform = 0;
    }
    for (uint64_t st = s0; st < s1; st++) {
        uint64_t a = st * sb;
        unsigned l = lo > a ? (unsigned)(lo - a) : 0;
        unsigned h = hi < a + sb ? (unsigned)(hi - a) : (unsigned)sb;
        access_stick(s, &sticks[st - bstart], g, vc, index, l, h, is_write, space, a);
    }
    if (full) { /* a whole-block access often leaves every stick alike again */
        for (int i = 1; i < BLOCK_STICKS; i++)
            if (memcmp(&sticks[i], &sticks[0], sizeof sticks[0]))
                return;
        *sum = sticks[0];
        b->uniform = 1;
    }
}

static space_shadow *shadow_of(sim_race *r, size_t sticks, space_shadow *sp)
{
    if (!sp->blocks) {
        sp->blocks = xcalloc(sticks / BLOCK_STICKS, sizeof *sp->blocks);
        sp->sums = xmalloc(sticks / BLOCK_STICKS * sizeof *sp->sums);
        sp->sticks = xmalloc(sticks * sizeof *sp->sticks);
    }
    (void)r;
    return sp;
}

void sim_race_access(sim *s, sim_core *c, int u, long index, int space, uint64_t lo, uint64_t hi, int is_write)
{
    sim_race *r = sim_race_active(s);
    if (!r || lo >= hi || s->race_found)
        return;
    const uint64_t sb = s->cfg.stick_bytes;
    int g = gid(c, u);
    const uint32_t *vc = clock_of(r, g);
    uint64_t st = sticks_of(r, lo), end = sticks_of(r, hi + sb - 1);
    /* an LX access stays in its core's shadow; a DRAM one may cross pages */
    space_shadow *sp = space >= 0 ? shadow_of(r, s->cfg.lx_bytes / sb, &r->lx[space]) : NULL;
    uint64_t base = 0; /* first stick of the shadow's range */
    while (st < end) {
        if (space < 0) {
            uint64_t page = pages_of(r, st);
            sp = shadow_of(r, r->sticks_per_page, &r->dram[page]);
            base = page * r->sticks_per_page;
        }
        uint64_t bi = (st - base) / BLOCK_STICKS, bstart = base + bi * BLOCK_STICKS;
        uint64_t s1 = end < bstart + BLOCK_STICKS ? end : bstart + BLOCK_STICKS;
        access_block(s, r, &sp->blocks[bi], &sp->sums[bi], sp->sticks + (bstart - base), bstart, st, s1, g, vc,
                     index, lo, hi, is_write, space);
        st = s1;
    }
}
