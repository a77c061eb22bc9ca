/* race.c: hazard detection.  Every unit carries a vector clock; `sig`
 * publishes the signaller's clock on the token (a FIFO per token, since
 * tokens count), `wait` joins the clock it consumes, a barrier joins all.
 * Shadow memory keeps, per 128-byte stick of LX and DRAM, the last write
 * and a few reads with the byte range each touched.  Two accesses to
 * overlapping bytes, one a write, neither ordered before the other by the
 * clocks, are a race.  Approximations (they can miss a race, never invent
 * one): a stick remembers one write and SHADOW_READS reads. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHADOW_READS 4

typedef struct {
    uint32_t clock; /* 0: none */
    uint32_t index; /* instruction index */
    uint16_t unit;  /* global unit id */
    uint8_t lo, hi; /* bytes [lo, hi) of the stick; hi 0 means 256 never used */
} access_rec;

typedef struct {
    access_rec w;
    access_rec r[SHADOW_READS];
} shadow;

typedef struct {
    uint32_t *vc; /* nunits clocks */
} vc_entry;

typedef struct {
    vc_entry *v;
    size_t head, n, cap;
} vc_fifo;

struct sim_race {
    int nunits;
    uint32_t *vc;     /* nunits x nunits: the clock of each unit */
    vc_fifo *fifos;   /* cores x tokens */
    shadow **lx;      /* per core, lx_bytes / stick sticks, allocated on first use */
    shadow **dram;    /* per DRAM page, allocated on first use */
    uint64_t dram_pages;
    size_t sticks_per_page;
};

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (!p && n && sz) {
        fprintf(stderr, "spyre: out of host memory (race detector)\n");
        abort();
    }
    return p;
}

static uint32_t *clock_of(sim_race *r, int g) { return r->vc + (size_t)g * (size_t)r->nunits; }

void sim_race_free(sim *s)
{
    sim_race *r = s->race;
    if (!r)
        return;
    for (int i = 0; i < s->cfg.cores * s->cfg.tokens; i++) {
        vc_fifo *f = &r->fifos[i];
        for (size_t j = 0; j < f->cap; j++)
            free(f->v[j].vc);
        free(f->v);
    }
    free(r->fifos);
    for (int i = 0; i < s->cfg.cores; i++)
        free(r->lx[i]);
    free(r->lx);
    for (uint64_t i = 0; i < r->dram_pages; i++)
        free(r->dram[i]);
    free(r->dram);
    free(r->vc);
    free(r);
    s->race = NULL;
}

void sim_race_reset(sim *s)
{
    s->race_found = 0;
    if (!s->opt.detect_races)
        return;
    sim_race *r = s->race;
    if (!r) {
        r = s->race = xcalloc(1, sizeof *r);
        r->nunits = s->cfg.cores * ISA_NUNITS;
        r->vc = xcalloc((size_t)r->nunits * (size_t)r->nunits, sizeof *r->vc);
        r->fifos = xcalloc((size_t)s->cfg.cores * (size_t)s->cfg.tokens, sizeof *r->fifos);
        r->lx = xcalloc((size_t)s->cfg.cores, sizeof *r->lx);
        r->dram_pages = s->npages;
        r->dram = xcalloc(r->dram_pages, sizeof *r->dram);
        r->sticks_per_page = s->cfg.dram_page_bytes / s->cfg.stick_bytes;
    }
    memset(r->vc, 0, (size_t)r->nunits * (size_t)r->nunits * sizeof *r->vc);
    for (int g = 0; g < r->nunits; g++)
        clock_of(r, g)[g] = 1;
    for (int i = 0; i < s->cfg.cores * s->cfg.tokens; i++)
        r->fifos[i].head = r->fifos[i].n = 0;
    size_t lx_sticks = s->cfg.lx_bytes / s->cfg.stick_bytes;
    for (int i = 0; i < s->cfg.cores; i++)
        if (r->lx[i])
            memset(r->lx[i], 0, lx_sticks * sizeof(shadow));
    for (uint64_t i = 0; i < r->dram_pages; i++)
        if (r->dram[i])
            memset(r->dram[i], 0, r->sticks_per_page * sizeof(shadow));
}

static int gid(const sim_core *c, int u) { return c->id * ISA_NUNITS + u; }

void sim_race_signal(sim *s, sim_core *src, int u, sim_core *dst, int64_t tok)
{
    sim_race *r = s->race;
    if (!r)
        return;
    vc_fifo *f = &r->fifos[dst->id * s->cfg.tokens + tok];
    if (f->n == f->cap) {
        size_t ncap = f->cap ? 2 * f->cap : 4;
        vc_entry *nv = xcalloc(ncap, sizeof *nv);
        for (size_t j = 0; j < f->n; j++)
            nv[j] = f->v[(f->head + j) % f->cap];
        for (size_t j = f->n; j < ncap; j++)
            nv[j].vc = xcalloc((size_t)r->nunits, sizeof(uint32_t));
        free(f->v);
        f->v = nv;
        f->head = 0;
        f->cap = ncap;
    }
    uint32_t *mine = clock_of(r, gid(src, u));
    memcpy(f->v[(f->head + f->n) % f->cap].vc, mine, (size_t)r->nunits * sizeof *mine);
    f->n++;
    mine[gid(src, u)]++;
}

void sim_race_wait(sim *s, sim_core *c, int u, int64_t tok)
{
    sim_race *r = s->race;
    if (!r)
        return;
    vc_fifo *f = &r->fifos[c->id * s->cfg.tokens + tok];
    if (!f->n)
        return; /* a token given by no signal of this run cannot order anything */
    const uint32_t *got = f->v[f->head].vc;
    uint32_t *mine = clock_of(r, gid(c, u));
    for (int g = 0; g < r->nunits; g++)
        if (got[g] > mine[g])
            mine[g] = got[g];
    f->head = (f->head + 1) % f->cap;
    f->n--;
}

void sim_race_barrier(sim *s)
{
    sim_race *r = s->race;
    if (!r)
        return;
    uint32_t *join = xcalloc((size_t)r->nunits, sizeof *join);
    for (int g = 0; g < r->nunits; g++) {
        const uint32_t *v = clock_of(r, g);
        for (int k = 0; k < r->nunits; k++)
            if (v[k] > join[k])
                join[k] = v[k];
    }
    for (int g = 0; g < r->nunits; g++) {
        uint32_t *v = clock_of(r, g);
        memcpy(v, join, (size_t)r->nunits * sizeof *v);
        v[g]++;
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
               "with no token or barrier ordering the two",
               core, isa_unit_names[unit], index, is_write ? "writes" : "reads", where, stick_addr + other->lo,
               stick_addr + other->hi, ocore, isa_unit_names[ounit], other->index, other_write ? "wrote" : "read");
}

static int overlaps(const access_rec *a, unsigned lo, unsigned hi) { return a->clock && a->lo < hi && lo < a->hi; }

static void access_stick(sim *s, shadow *sh, int g, const uint32_t *vc, long index, unsigned lo, unsigned hi,
                         int is_write, int space, uint64_t stick_addr)
{
    access_rec me = {vc[g], (uint32_t)index, (uint16_t)g, (uint8_t)lo, (uint8_t)hi};
    if (sh->w.unit != g && overlaps(&sh->w, lo, hi) && vc[sh->w.unit] < sh->w.clock)
        report(s, g, index, is_write, &sh->w, 1, space, stick_addr);
    if (is_write) {
        for (int i = 0; i < SHADOW_READS; i++) {
            access_rec *rd = &sh->r[i];
            if (!rd->clock)
                continue;
            if (rd->unit != g && overlaps(rd, lo, hi) && vc[rd->unit] < rd->clock)
                report(s, g, index, 1, rd, 0, space, stick_addr);
            if (rd->unit == g || vc[rd->unit] >= rd->clock)
                rd->clock = 0; /* ordered before this write: no longer needed */
        }
        sh->w = me;
        return;
    }
    int slot = -1;
    for (int i = 0; i < SHADOW_READS; i++) {
        access_rec *rd = &sh->r[i];
        if (rd->clock && rd->unit == g && rd->lo == lo && rd->hi == hi) {
            slot = i;
            break;
        }
        if (slot < 0 && (!rd->clock || vc[rd->unit] >= rd->clock))
            slot = i;
    }
    if (slot < 0) /* more concurrent readers than we track: forget the oldest */
        slot = 0;
    sh->r[slot] = me;
}

void sim_race_access(sim *s, sim_core *c, int u, long index, int space, uint64_t lo, uint64_t hi, int is_write)
{
    sim_race *r = s->race;
    if (!r || lo >= hi || s->race_found)
        return;
    const uint64_t sb = s->cfg.stick_bytes;
    int g = gid(c, u);
    const uint32_t *vc = clock_of(r, g);
    for (uint64_t st = lo / sb; st * sb < hi; st++) {
        shadow *sh;
        if (space >= 0) {
            if (!r->lx[space])
                r->lx[space] = xcalloc(s->cfg.lx_bytes / sb, sizeof(shadow));
            sh = &r->lx[space][st];
        } else {
            uint64_t page = st / r->sticks_per_page;
            if (!r->dram[page])
                r->dram[page] = xcalloc(r->sticks_per_page, sizeof(shadow));
            sh = &r->dram[page][st % r->sticks_per_page];
        }
        uint64_t a = st * sb;
        unsigned blo = lo > a ? (unsigned)(lo - a) : 0;
        unsigned bhi = hi < a + sb ? (unsigned)(hi - a) : (unsigned)sb;
        access_stick(s, sh, g, vc, index, blo, bhi, is_write, space, a);
    }
}
