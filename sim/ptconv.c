/* ptconv.c: DL16 tiles converted to row-major fp32, shared by the cores
 * of one PT worker.  A GEMM sends each B tile to eight cores and each A
 * tile to four (by ring), and every core used to convert its own copy:
 * the same bytes converted up to eight times, into buffers spread over
 * megabytes (in a `perf` profile of a values launch the conversions were
 * a tenth of the samples, most of it cache misses on their stores).  A
 * pool entry keeps the DL16 bytes it was converted from; a tile whose
 * bytes equal an entry's takes that entry's fp32 values, which are the
 * same numbers (the conversion is a function of the bytes alone).  No
 * provenance is needed, so a tile's ring and DMA history does not matter;
 * when the event loop knows it (content tags, ptworker.c), equal tags
 * stand for equal bytes and the compare is skipped. */
#include "internal.h"
#include "ptprod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *v;       /* rows x cols fp32, row-major */
    uint8_t *src;   /* the DL16 bytes converted: group by group, row by row, w lanes each */
    size_t cap, src_cap;
    int64_t rows, cols;
    uint64_t first; /* a hash of the first row's bytes: most entries differ there */
    sim_tile_tags tags; /* what its bytes are by content, when known */
    uint64_t serial; /* changes whenever the entry is refilled (0: empty) */
    float *pk;       /* v packed for OpenBLAS's kernel, once a product asks (sim_conv_packed) */
    size_t pk_cap;
    int packed;
    int uses;        /* products that took it since it was filled (sim_conv_use) */
} conv;

struct sim_conv_pool {
    conv *e;
    int n, next;
    uint64_t serial;
};

sim_conv_pool *sim_conv_new(int entries)
{
    sim_conv_pool *p = calloc(1, sizeof *p);
    if (p && !(p->e = calloc((size_t)entries, sizeof *p->e))) {
        free(p);
        p = NULL;
    }
    if (!p) {
        fprintf(stderr, "spyre: out of host memory\n");
        abort();
    }
    p->n = entries;
    return p;
}

void sim_conv_free(sim_conv_pool *p)
{
    for (int i = 0; p && i < p->n; i++) {
        free(p->e[i].v);
        free(p->e[i].src);
        free(p->e[i].pk);
    }
    if (p)
        free(p->e);
    free(p);
}

/* (On malloc's 16-byte boundary every 64-byte load of a row that
 * OpenBLAS's packing makes straddled two lines.) */
void *sim_buf_room(void *buf, size_t *cap, size_t bytes)
{
    if (bytes <= *cap)
        return buf;
    free(buf);
    buf = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!buf) {
        fprintf(stderr, "spyre: out of host memory\n");
        abort();
    }
    *cap = bytes;
    return buf;
}

static uint64_t hash_row(const uint8_t *b, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull, w;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (size_t i = len & ~(size_t)7; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Lanes of group g (the last may be narrower). */
static int64_t lanes_of(const sim_tile_src *t, int64_t g, int64_t l16)
{
    return t->cols - g * l16 < l16 ? t->cols - g * l16 : l16;
}

/* The bytes of group g's rows: one run when its lanes fill whole sticks
 * (every group but a narrow last one), else one run a row. */
static int64_t runs_of(const sim_tile_src *t, int64_t len) { return len == t->sb ? 1 : t->rows; }

/* Are the tile's bytes those entry e was converted from?  A group's rows
 * of whole sticks are one run in LX and in e->src: one memcmp, not one a
 * 128-byte row (a library call each was a third of a B tile's compare). */
static int same_bytes(const conv *e, const sim_tile_src *t, int64_t l16)
{
    const uint8_t *k = e->src;
    for (int64_t g = 0; g * l16 < t->cols; g++) {
        const int64_t len = lanes_of(t, g, l16) * 2, runs = runs_of(t, len);
        const size_t run = (size_t)(len * t->rows / runs);
        for (int64_t r = 0; r < runs; r++, k += run)
            if (memcmp(k, t->at + g * t->pitch + r * t->sb, run))
                return 0;
    }
    return 1;
}

static int same_tags(const sim_tile_tags *a, const sim_tile_tags *b)
{
    if (!a->n || a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (a->p[i].id != b->p[i].id || a->p[i].off != b->p[i].off || a->p[i].len != b->p[i].len)
            return 0;
    return 1;
}

/* Convert the tile into entry e, keeping its bytes. */
static void fill(sim_conv_pool *p, conv *e, const sim_tile_src *t, int64_t l16, uint64_t first)
{
    const size_t elems = (size_t)(t->rows * t->cols);
    e->v = sim_buf_room(e->v, &e->cap, elems * sizeof *e->v);
    e->src = sim_buf_room(e->src, &e->src_cap, elems * 2);
    uint8_t *k = e->src;
    for (int64_t g = 0; g * l16 < t->cols; g++) { /* one call a group of lanes (the rows of an A tile: one run) */
        const int64_t w = lanes_of(t, g, l16);
        const uint8_t *at = t->at + g * t->pitch;
        isa_dl16_to_f32_rows((const uint16_t *)(const void *)at, (size_t)t->sb / 2, e->v + g * l16,
                             (size_t)t->cols, (size_t)t->rows, (size_t)w);
        const int64_t runs = runs_of(t, w * 2);
        const size_t run = (size_t)(w * 2 * t->rows / runs);
        for (int64_t r = 0; r < runs; r++, k += run)
            memcpy(k, at + r * t->sb, run);
    }
    e->rows = t->rows;
    e->cols = t->cols;
    e->first = first;
    e->serial = ++p->serial;
    e->packed = 0;
    e->uses = 0;
}

static const float *found(conv *e, int i, int *slot, uint64_t *serial)
{
    *slot = i;
    *serial = e->serial;
    return e->v;
}

/* Equal content tags say the bytes are equal without reading them (a B
 * tile of a GEMM reaches four cores of a worker by ring: the compare of
 * each copy read 32 KiB the event loop had just written on the other host
 * core); otherwise the bytes are compared, and an entry found so learns
 * the tile's tags if it had none. */
const float *sim_conv_get(sim_conv_pool *p, const sim_tile_src *t, const sim_tile_tags *tags, int *slot,
                          uint64_t *serial)
{
    for (int i = 0; tags->n && i < p->n; i++) {
        conv *e = &p->e[i];
        if (e->serial && e->rows == t->rows && e->cols == t->cols && same_tags(&e->tags, tags))
            return found(e, i, slot, serial);
    }
    const int64_t l16 = t->sb / 2;
    const uint64_t first = hash_row(t->at, (size_t)lanes_of(t, 0, l16) * 2);
    for (int i = 0; i < p->n; i++) {
        conv *e = &p->e[i];
        if (e->serial && e->first == first && e->rows == t->rows && e->cols == t->cols && same_bytes(e, t, l16)) {
            if (!e->tags.n)
                e->tags = *tags;
            return found(e, i, slot, serial);
        }
    }
    conv *e = &p->e[p->next];
    p->next = (p->next + 1) % p->n;
    fill(p, e, t, l16, first);
    e->tags = *tags;
    return found(e, (int)(e - p->e), slot, serial);
}

const float *sim_conv_at(const sim_conv_pool *p, int slot, uint64_t serial)
{
    const conv *e = &p->e[slot];
    return serial && e->serial == serial ? e->v : NULL;
}

const float *sim_conv_packed(sim_conv_pool *p, int slot, int as_b)
{
    conv *e = &p->e[slot];
    if (!e->packed) {
        e->pk = sim_buf_room(e->pk, &e->pk_cap, sizeof *e->pk * (size_t)(e->rows * e->cols));
        if (as_b)
            sim_pt_pack_b(e->v, e->rows, e->cols, e->pk);
        else
            sim_pt_pack_a(e->v, e->rows, e->cols, e->pk);
        e->packed = 1;
    }
    return e->pk;
}

int sim_conv_use(sim_conv_pool *p, int slot)
{
    conv *e = &p->e[slot];
    if (e->uses < 2) /* no more is asked: it cannot overflow */
        e->uses++;
    return e->uses > 1 || e->packed;
}

void sim_conv_rewind(sim_conv_pool *p)
{
    for (int i = 0; i < p->n; i++)
        p->e[i].serial = 0;
    p->next = 0;
}
