/* ktir partial-stick stores of several cores: staged in LX and merged once.
 *
 * KTIR stores elements; the chip's DMA writes whole 128-byte sticks, so a
 * store that covers part of a stick reads the stick, puts its elements in
 * and writes it back.  On one core that is right; when two cores store
 * disjoint parts of one stick (a row of C split between two cores' column
 * blocks, one mean per row from each of 32 cores) their read-modify-writes
 * race on the chip.  The measuring pass notes every partial stick each core
 * stores; a stick that two or more cores store disjoint parts of and no
 * core loads is staged: each core keeps its elements
 * of it in a stick of its own LX instead of writing DRAM, at its end sends
 * that stick over the ring to a slot of its own on core 0, and after a
 * `bar` core 0 lays each core's lanes into the stick (read from DRAM first
 * when the lanes do not cover it) and writes it once.  Cores that store
 * the same element of such a stick are left to the simulator's race check.
 *
 * LX at the top, below the ring slots, the same on every core: the staged
 * sticks' local copies (one per staged stick), then core 0's slots (one
 * per contribution of another core). */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define KT_STAGE_OWNER 0

static int cmp_note(const void *x, const void *y)
{
    const kt_stage_note *a = x, *b = y;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    if (a->stick != b->stick) return a->stick < b->stick ? -1 : 1;
    return a->core < b->core ? -1 : a->core > b->core;
}

static void add_note(kt_ctx *c, int tensor, int64_t stick, uint64_t mask)
{
    kt_stage_note *last = c->nnotes ? &c->notes[c->nnotes - 1] : NULL;
    if (last && last->tensor == tensor && last->stick == stick && last->core == c->core) {
        last->mask |= mask;
        return;
    }
    c->notes = kt_grow(c->notes, &c->capnotes, c->nnotes + 1, sizeof *c->notes, 256);
    c->notes[c->nnotes++] = (kt_stage_note){.tensor = tensor, .stick = stick, .core = c->core, .mask = mask};
}

static uint64_t lanes_mask(int64_t lo, int64_t hi) /* lanes [lo, hi) of at most 64 */
{
    uint64_t m = hi - lo >= 64 ? ~0ull : ((1ull << (hi - lo)) - 1);
    return m << lo;
}

static void add_full(kt_ctx *c, int tensor, int64_t lo, int64_t hi)
{
    kt_full *last = c->nfulls ? &c->fulls[c->nfulls - 1] : NULL;
    if (last && last->tensor == tensor && last->core == c->core && lo == last->hi + 1) {
        last->hi = hi;
        return;
    }
    c->fulls = kt_grow(c->fulls, &c->capfulls, c->nfulls + 1, sizeof *c->fulls, 256);
    c->fulls[c->nfulls++] = (kt_full){.tensor = tensor, .core = c->core, .lo = lo, .hi = hi};
}

void kt_stage_note_store(kt_ctx *c, int tensor, int64_t first, int64_t stride, int64_t h, int64_t w, int64_t lanes)
{
    if (c->final) return;
    int64_t runs = stride == w ? 1 : h, len = stride == w ? h * w : w; /* rows one after another: one run */
    for (int64_t r = 0; r < runs; r++) {
        int64_t e0 = first + r * stride, lo = (e0 + lanes - 1) / lanes, hi = (e0 + len) / lanes - 1;
        if (lo <= hi) add_full(c, tensor, lo, hi);
    }
    uint64_t full = lanes_mask(0, lanes);
    for (int64_t r = 0; r < h; r++) {
        int64_t e0 = first + r * stride, e1 = e0 + w;
        for (int64_t s = e0 / lanes; s * lanes < e1; s++) {
            int64_t lo = e0 > s * lanes ? e0 - s * lanes : 0, hi = e1 < (s + 1) * lanes ? e1 - s * lanes : lanes;
            uint64_t m = lanes_mask(lo, hi);
            if (m != full) add_note(c, tensor, s, m);
        }
    }
}

void kt_stage_note_load(kt_ctx *c, int tensor, int64_t lo, int64_t hi)
{
    if (c->final) return;
    kt_span *last = c->nloads ? &c->loads[c->nloads - 1] : NULL;
    if (last && last->tensor == tensor && lo <= last->hi + 1 && hi >= last->lo - 1) { /* a loop walking a tensor */
        if (lo < last->lo) last->lo = lo;
        if (hi > last->hi) last->hi = hi;
        return;
    }
    c->loads = kt_grow(c->loads, &c->caploads, c->nloads + 1, sizeof *c->loads, 256);
    c->loads[c->nloads++] = (kt_span){.tensor = tensor, .lo = lo, .hi = hi};
}

static int cmp_span(const void *x, const void *y)
{
    const kt_span *a = x, *b = y;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The loaded spans sorted, overlapping ones joined. */
static void merge_loads(kt_ctx *c)
{
    if (c->nloads) qsort(c->loads, (size_t)c->nloads, sizeof *c->loads, cmp_span);
    int n = 0;
    for (int i = 0; i < c->nloads; i++) {
        kt_span *p = n ? &c->loads[n - 1] : NULL;
        if (p && p->tensor == c->loads[i].tensor && c->loads[i].lo <= p->hi + 1) {
            if (c->loads[i].hi > p->hi) p->hi = c->loads[i].hi;
        } else {
            c->loads[n++] = c->loads[i];
        }
    }
    c->nloads = n;
}

static int is_loaded(const kt_ctx *c, int tensor, int64_t stick)
{
    int lo = 0, hi = c->nloads - 1;
    while (lo <= hi) { /* the last span starting at or before stick */
        int mid = (lo + hi) / 2;
        const kt_span *s = &c->loads[mid];
        if (s->tensor < tensor || (s->tensor == tensor && s->lo <= stick)) lo = mid + 1;
        else hi = mid - 1;
    }
    return hi >= 0 && c->loads[hi].tensor == tensor && c->loads[hi].hi >= stick;
}

/* One staged stick from the notes [i, j) of one (tensor, stick), or none
 * when fewer than two cores store into it or two store the same element. */
static void plan_stick(kt_ctx *c, int i, int j)
{
    const kt_tensor *t = &c->tensors[c->notes[i].tensor];
    if (j - i < 2 || is_loaded(c, c->notes[i].tensor, c->notes[i].stick)) return;
    uint64_t all = 0;
    for (int k = i; k < j; k++) {
        if (all & c->notes[k].mask) return;
        all |= c->notes[k].mask;
    }
    int64_t lanes = (int64_t)c->cfg->stick_bytes / (t->f32 ? 4 : 2), s = c->notes[i].stick;
    int64_t valid = t->extent - s * lanes; /* lanes past the tensor's end are its padding */
    uint64_t need = lanes_mask(0, valid < lanes ? valid : lanes);
    kt_staged st = {.tensor = c->notes[i].tensor, .stick = s, .first = i, .n = j - i, .covered = (all & need) == need};
    for (int k = i; k < j; k++)
        if (c->notes[k].core != KT_STAGE_OWNER) c->notes[k].slot = c->nslots++;
    c->staged = kt_grow(c->staged, &c->capstaged, c->nstaged + 1, sizeof *c->staged, 64);
    c->staged[c->nstaged++] = st;
}

static int cmp_full(const void *x, const void *y)
{
    const kt_full *a = x, *b = y;
    if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Tensors two cores store some whole stick of: sorted by start, a span
 * overlapping the furthest-reaching one before it of another core. */
static void plan_contested(kt_ctx *c)
{
    if (c->nfulls) qsort(c->fulls, (size_t)c->nfulls, sizeof *c->fulls, cmp_full);
    for (int i = 1, far = 0; i < c->nfulls; i++) {
        const kt_full *f = &c->fulls[i], *m = &c->fulls[far];
        if (m->tensor == f->tensor && f->lo <= m->hi && f->core != m->core) c->tensors[f->tensor].contested = 1;
        if (m->tensor != f->tensor || f->hi > m->hi) far = i;
    }
}

void kt_stage_plan(kt_ctx *c)
{
    plan_contested(c);
    c->nstaged = 0, c->nslots = 0;
    merge_loads(c);
    if (c->nnotes) qsort(c->notes, (size_t)c->nnotes, sizeof *c->notes, cmp_note);
    int n = 0; /* merge the notes of one core on one stick */
    for (int i = 0; i < c->nnotes; i++) {
        if (n && !cmp_note(&c->notes[n - 1], &c->notes[i])) c->notes[n - 1].mask |= c->notes[i].mask;
        else c->notes[n++] = c->notes[i];
    }
    c->nnotes = n;
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && c->notes[j].tensor == c->notes[i].tensor && c->notes[j].stick == c->notes[i].stick; j++)
            ;
        plan_stick(c, i, j);
    }
    c->stage_bytes = (uint64_t)(c->nstaged + c->nslots) * c->cfg->stick_bytes;
}

/* Does some core load a stick of [lo, hi]? (the spans are merged: the last one starting at or before hi) */
static int any_loaded(const kt_ctx *c, int tensor, int64_t lo, int64_t hi)
{
    int a = 0, b = c->nloads - 1;
    while (a <= b) {
        int mid = (a + b) / 2;
        const kt_span *s = &c->loads[mid];
        if (s->tensor < tensor || (s->tensor == tensor && s->lo <= hi)) a = mid + 1;
        else b = mid - 1;
    }
    return b >= 0 && c->loads[b].tensor == tensor && c->loads[b].hi >= lo;
}

/* The highest core after this one whose whole-stick stores cover [lo, hi], or -1. */
static int later_cover(const kt_ctx *c, int tensor, int64_t lo, int64_t hi)
{
    int best = -1;
    for (int64_t pos = lo; pos <= hi;) {
        int found = -1;
        for (int i = 0; i < c->nfulls && found < 0; i++) {
            const kt_full *f = &c->fulls[i];
            if (f->tensor == tensor && f->core > c->core && f->lo <= pos && f->hi >= pos) found = i;
        }
        if (found < 0) return -1;
        pos = c->fulls[found].hi + 1;
        if (c->fulls[found].core > best) best = c->fulls[found].core;
    }
    return best;
}

/* Two cores storing the same whole sticks race on the chip; ktir-cpu runs
 * the cores one after another, so the later core's values stay.  A store
 * whose every stick a later core also stores whole, and that no core
 * loads, leaves nothing that core order keeps: it is dropped. */
int kt_stage_dead_store(kt_ctx *c, int tensor, int64_t first, int64_t stride, int64_t h, int64_t w, int64_t lanes)
{
    int64_t runs = stride == w ? 1 : h, len = stride == w ? h * w : w;
    if (!c->final || !c->tensors[tensor].contested || first % lanes || len % lanes || (runs > 1 && stride % lanes)) return -1;
    int best = -1;
    len /= lanes;
    for (int64_t r = 0; r < runs; r++) {
        int64_t lo = (first + r * stride) / lanes, hi = lo + len - 1;
        int k = any_loaded(c, tensor, lo, hi) ? -1 : later_cover(c, tensor, lo, hi);
        if (k < 0) return -1;
        if (k > best) best = k;
    }
    return best;
}

uint64_t kt_stage_base(const kt_ctx *c)
{
    return c->cfg->lx_bytes - (uint64_t)c->ncores * (uint64_t)c->ring_slot - c->stage_bytes;
}

int kt_stage_index(const kt_ctx *c, int tensor, int64_t stick)
{
    int lo = 0, hi = c->nstaged - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const kt_staged *s = &c->staged[mid];
        if (s->tensor == tensor && s->stick == stick) return mid;
        if (s->tensor < tensor || (s->tensor == tensor && s->stick < stick)) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int kt_stage_any(const kt_ctx *c, int tensor, int64_t lo, int64_t hi)
{
    int a = 0, b = c->nstaged; /* the first staged stick at or after (tensor, lo) */
    while (a < b) {
        int mid = (a + b) / 2;
        const kt_staged *s = &c->staged[mid];
        if (s->tensor < tensor || (s->tensor == tensor && s->stick < lo)) a = mid + 1;
        else b = mid;
    }
    return c->final && a < c->nstaged && c->staged[a].tensor == tensor && c->staged[a].stick <= hi;
}

/* This core's note on staged stick i, or NULL. */
static const kt_stage_note *my_note(const kt_ctx *c, int i, int core)
{
    const kt_staged *s = &c->staged[i];
    for (int k = s->first; k < s->first + s->n; k++)
        if (c->notes[k].core == core) return &c->notes[k];
    return NULL;
}

/* Every run of lanes of mask copied from the stick at `from` into the stick at `to`. */
static void copy_lanes(kt_ctx *c, uint64_t to, uint64_t from, uint64_t mask, int eb, int dtype)
{
    for (int l = 0; l < 64;) {
        if (!(mask >> l & 1)) { l++; continue; }
        int e = l;
        while (e < 64 && (mask >> e & 1)) e++;
        isa_insn in;
        isa_insn_init(&in, ISA_OP_SFP_RST);
        isa_set(&in, t, dtype), in.vl = e - l, in.bs[0] = in.bs[1] = eb;
        isa_set_off(&in.a, (int64_t)(from + (uint64_t)(l * eb))), isa_set_off(&in.d, (int64_t)(to + (uint64_t)(l * eb)));
        kt_emit(c, &in);
        l = e;
    }
}

static void dma_stick(kt_ctx *c, int op, uint64_t lx, int64_t dram)
{
    isa_insn in;
    isa_insn_init(&in, op);
    in.run = 1;
    isa_set_off(&in.d, op == ISA_OP_DMA_ST ? dram : (int64_t)lx), isa_set_off(&in.a, op == ISA_OP_DMA_ST ? (int64_t)lx : dram);
    kt_emit(c, &in);
}

/* Core 0 after the bar: each staged stick from DRAM (when the lanes leave
 * some of it) and every core's lanes, written once. */
static void merge_owned(kt_ctx *c, const ml_op *fn)
{
    uint64_t sb = c->cfg->stick_bytes, base = kt_stage_base(c), slots = base + (uint64_t)c->nstaged * sb;
    uint64_t buf = kt_lx_alloc(c, fn, (uint64_t)c->nstaged * sb);
    for (int i = 0; i < c->nstaged; i++) {
        const kt_staged *s = &c->staged[i];
        if (!s->covered)
            dma_stick(c, ISA_OP_DMA_LD, buf + (uint64_t)i * sb,
                      (int64_t)c->prog->tensors[c->tensors[s->tensor].index].dram_off + s->stick * (int64_t)sb);
    }
    for (int i = 0; i < c->nstaged; i++) {
        const kt_staged *s = &c->staged[i];
        int f32 = c->tensors[s->tensor].f32;
        for (int k = s->first; k < s->first + s->n; k++) {
            const kt_stage_note *nt = &c->notes[k];
            uint64_t from = nt->core == KT_STAGE_OWNER ? base + (uint64_t)i * sb : slots + (uint64_t)nt->slot * sb;
            copy_lanes(c, buf + (uint64_t)i * sb, from, nt->mask, f32 ? 4 : 2, f32 ? ISA_T_F32 : ISA_T_DL16);
        }
    }
    for (int i = 0; i < c->nstaged; i++) {
        const kt_staged *s = &c->staged[i];
        dma_stick(c, ISA_OP_DMA_ST, buf + (uint64_t)i * sb,
                  (int64_t)c->prog->tensors[c->tensors[s->tensor].index].dram_off + s->stick * (int64_t)sb);
    }
}

void kt_stage_flush(kt_ctx *c, const ml_op *fn)
{
    if (!c->final || !c->nstaged) return;
    uint64_t sb = c->cfg->stick_bytes, base = kt_stage_base(c), slots = base + (uint64_t)c->nstaged * sb;
    if (c->core != KT_STAGE_OWNER)
        for (int i = 0; i < c->nstaged; i++) {
            const kt_stage_note *nt = my_note(c, i, c->core);
            if (!nt) continue;
            isa_insn in;
            isa_insn_init(&in, ISA_OP_RING_SEND);
            in.core = KT_STAGE_OWNER, in.run = 1;
            isa_set_off(&in.a, (int64_t)(base + (uint64_t)i * sb)), isa_set_off(&in.d, (int64_t)(slots + (uint64_t)nt->slot * sb));
            kt_emit(c, &in);
        }
    kt_push(c, ISA_OP_BAR); /* every core's sticks have landed */
    if (c->core == KT_STAGE_OWNER) merge_owned(c, fn);
}
