/* ktir ct_local memory views: tensors resident in a core's LX.
 *
 * RFC 0682 says nothing of what a core's LX holds when a program starts;
 * our reading, as ktir-cpu's test seeds it: a view in
 * `#ktdp.memory_space<ct_local, ct_id = N>` at element address A is a
 * program input, the tensor "lxN_A", that is in core N's LX from byte
 * A * (element bytes) when the program starts (the runtime writes it there
 * before the run, untimed: ISA_TF_LX).  Without ct_id it is the executing
 * core's LX, as ktir-cpu resolves it.  Its bytes are never handed out by
 * that core's LX allocator; stores to it are refused.
 *
 * On the chip only the owner of an LX can send it over the ring.  The
 * measuring pass notes, per reading core and tensor, the sticks read from
 * another core's LX; each owner `ring.send`s those sticks once, first thing
 * in its stream (the data is there from the start and never written), into
 * a landing area of the reader's LX (below the staged sticks, the same size
 * on every core); the reader's ring unit waits for them (token KT_LX_TOKEN)
 * first thing, and its first such load fences after that.  Sends never
 * wait, so this cannot deadlock.  A load moves a piece from LX into the
 * tile's layout: `dma.lx` when its rows are whole sticks, else `sfp.rst`
 * element moves with the view's strides, which also transposes a
 * column-major partition (strides [1, C]); both copy the bits, so values
 * arrive unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define KT_LX_TOKEN 1 /* counts the remote LX sends that arrived (ring.c's reductions use 0) */

int kt_lx_space(kt_ctx *c, const ml_op *op)
{
    /* Two spellings: ktir-cpu's `#ktdp.memory_space<global>` and
     * `<ct_local, ct_id = N>`, and RFC 0682's `#ktdp.spyre_memory_space<HBM>`
     * and `<LX, core = N>`. */
    const ml_attr *ms = ml_op_attr(c->m, op, "memory_space");
    if (!ms || ms->kind != ML_A_DIALECT || !strcmp(ms->body, "global") || !strcmp(ms->body, "HBM")) return -1;
    const char *b = ms->body;
    int rfc = !strncmp(b, "LX", 2) && (!b[2] || b[2] == ',' || b[2] == ' ');
    const char *id = strstr(b, rfc ? "core" : "ct_id");
    if (!rfc && (strncmp(b, "ct_local", 8) || (b[8] && b[8] != ',' && b[8] != ' ')))
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: memory views in %s (only global HBM and ct_local)", b);
    if (!id) return c->core; /* the executing core's LX */
    char *end;
    const char *eq = strchr(id, '=');
    long n = eq ? strtol(eq + 1, &end, 10) : -1;
    if (!eq || end == eq + 1 || n < 0)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "expected `%s = N` in the memory space, got `%s`", rfc ? "core" : "ct_id", b);
    if (n >= c->ncores)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "%s = %ld: the grid has %d compute tiles", rfc ? "core" : "ct_id", n, c->ncores);
    return (int)n;
}

/* The view r (sizes and strides set) of the LX tensor of core at the
 * element address of its base: any positive strides, rank 1 or 2. */
void kt_lx_view(kt_ctx *c, const ml_op *op, int core, kv *r, const int64_t *size, const int64_t *st)
{
    const kv *base = kt_lookup(c, &op->items[0]);
    if (base->kind != KV_INT || r->integer || r->rank > 2 || r->dynamic)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col,
                "not supported: a ct_local view that is not of f16 or f32, static, of rank 1 or 2 at an element address");
    int64_t span = 1, eb = r->f32 ? 4 : 2, most = (int64_t)(c->cfg->lx_bytes / (uint64_t)eb); /* elements of an LX */
    for (int d = 0; d < r->rank; d++) {
        if (st[d] < 1 || st[d] > most || size[d] > most)
            kt_fail(c, KT_EXIT_CHIP, op->line, op->col, "a ct_local view with a stride below 1 or beyond the LX (core %d)", core);
        span += (size[d] - 1) * st[d];
    }
    if (base->i < 0 || base->i >= most || (uint64_t)(base->i * eb) % c->cfg->stick_bytes)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a ct_local view at element %lld (not a stick of the LX)",
                (long long)base->i);
    char key[48];
    snprintf(key, sizeof key, "lx%d_%lld", core, (long long)base->i);
    r->tensor = kt_tensor_for(c, op, key, r->f32);
    r->i = 0;
    kt_tensor *t = &c->tensors[r->tensor];
    t->lx_core = core, t->lx_off = (uint64_t)(base->i * eb);
    if (!t->line) t->line = op->line, t->col = op->col;
    if (span > t->extent) t->extent = span;
}

uint64_t kt_lx_skip(const kt_ctx *c, uint64_t at, uint64_t bytes)
{
    for (int moved = 1; moved;) {
        moved = 0;
        for (int i = 0; i < c->ntensors; i++) {
            const kt_tensor *t = &c->tensors[i];
            uint64_t end = t->lx_off + (uint64_t)t->extent * (t->f32 ? 4 : 2);
            end = (end + c->cfg->stick_bytes - 1) / c->cfg->stick_bytes * c->cfg->stick_bytes;
            if (t->lx_core == c->core && at < end && at + bytes > t->lx_off) at = end, moved = 1;
        }
    }
    return at;
}

static uint64_t land_base(const kt_ctx *c)
{
    return kt_stage_base(c) - c->land_bytes;
}

/* The measuring pass: sticks [lo, hi] of tensor read by this core. */
static void note_remote(kt_ctx *c, int tensor, int64_t lo, int64_t hi)
{
    for (int i = 0; i < c->nremotes; i++) {
        kt_remote *r = &c->remotes[i];
        if (r->reader != c->core || r->tensor != tensor) continue;
        if (lo < r->lo) r->lo = lo;
        if (hi > r->hi) r->hi = hi;
        return;
    }
    c->remotes = kt_grow(c->remotes, &c->capremotes, c->nremotes + 1, sizeof *c->remotes, 16);
    c->remotes[c->nremotes++] = (kt_remote){.reader = c->core, .tensor = tensor, .lo = lo, .hi = hi};
}

/* Landing places, and no two LX tensors of one core sharing a byte. */
void kt_lx_plan(kt_ctx *c)
{
    c->land_bytes = 0;
    for (int core = 0; core < c->ncores; core++) {
        uint64_t at = 0;
        for (int i = 0; i < c->nremotes; i++)
            if (c->remotes[i].reader == core)
                c->remotes[i].land = at, at += (uint64_t)(c->remotes[i].hi - c->remotes[i].lo + 1) * c->cfg->stick_bytes;
        if (at > c->land_bytes) c->land_bytes = at;
    }
    for (int i = 0; i < c->ntensors; i++)
        for (int j = i + 1; j < c->ntensors; j++) {
            const kt_tensor *a = &c->tensors[i], *b = &c->tensors[j];
            uint64_t ae = a->lx_off + (uint64_t)a->extent * (a->f32 ? 4 : 2), be = b->lx_off + (uint64_t)b->extent * (b->f32 ? 4 : 2);
            if (a->lx_core >= 0 && a->lx_core == b->lx_core && a->lx_off < be && b->lx_off < ae)
                kt_fail(c, KT_EXIT_REFUSED, b->line, b->col, "not supported: ct_local views %s and %s overlap in the LX of core %d",
                        a->key, b->key, a->lx_core);
        }
    for (int i = 0; i < c->ntensors; i++) { /* clear of the ring slots, staged sticks and landing area at the top */
        const kt_tensor *t = &c->tensors[i];
        uint64_t end = t->lx_off + (uint64_t)t->extent * (t->f32 ? 4 : 2);
        if (t->lx_core >= 0 && end > land_base(c))
            kt_fail(c, KT_EXIT_CHIP, t->line, t->col, "LX scratchpad overflow: core %d: ct_local view %s reaches LX byte %llu, the "
                    "compiler keeps the LX from byte %llu for ring slots, staged sticks and remote reads", t->lx_core,
                    t->key, (unsigned long long)end, (unsigned long long)land_base(c));
    }
}

void kt_lx_send(kt_ctx *c)
{
    uint64_t sb = c->cfg->stick_bytes;
    for (int i = 0; c->final && i < c->nremotes; i++) {
        const kt_remote *r = &c->remotes[i];
        const kt_tensor *t = &c->tensors[r->tensor];
        if (t->lx_core != c->core) continue;
        isa_insn in;
        isa_insn_init(&in, ISA_OP_RING_SEND);
        isa_set(&in, core, r->reader), in.tok = KT_LX_TOKEN, isa_set(&in, run, r->hi - r->lo + 1);
        isa_set_off(&in.a, (int64_t)(t->lx_off + (uint64_t)r->lo * sb)), isa_set_off(&in.d, (int64_t)(land_base(c) + r->land));
        isa_stream_push(&c->prog->cores[c->core], &in); /* reads LX nothing writes: no fence needed */
        c->ring_bytes += (double)(in.run * (int64_t)sb);
    }
    /* The ring unit takes this core's arrivals before anything else runs
     * on it (no token may be left over at a fence); the first remote load
     * fences after them. */
    for (int i = 0; c->final && i < c->nremotes; i++) {
        if (c->remotes[i].reader != c->core) continue;
        isa_insn w;
        isa_insn_init(&w, ISA_OP_WAIT);
        w.u = ISA_U_RING, w.tok = KT_LX_TOKEN;
        isa_stream_push(&c->prog->cores[c->core], &w);
    }
}

/* Where byte 0 of the LX tensor is in this core's LX: its own, or the
 * landing copy of another core's sticks [lo, hi]. */
static int64_t lx_source(kt_ctx *c, const ml_op *op, int tensor, int64_t lo, int64_t hi)
{
    const kt_tensor *t = &c->tensors[tensor];
    int64_t sb = (int64_t)c->cfg->stick_bytes;
    if (t->lx_core == c->core) return (int64_t)t->lx_off;
    if (!c->final) {
        note_remote(c, tensor, lo, hi);
        return 0;
    }
    for (int i = 0; i < c->nremotes; i++) {
        const kt_remote *r = &c->remotes[i];
        if (r->reader != c->core || r->tensor != tensor) continue;
        if (!c->land_waited) kt_push(c, ISA_OP_FENCE); /* after the ring unit's waits */
        c->land_waited = 1;
        return (int64_t)(land_base(c) + r->land) - r->lo * sb;
    }
    kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "internal: remote LX read of %s not measured", t->key);
}

void kt_lx_load(kt_ctx *c, const ml_op *op, const kv *p, uint64_t lx, int64_t hf, int64_t ro, int64_t co)
{
    int64_t sb = (int64_t)c->cfg->stick_bytes, eb = kt_ebytes(p), lanes = sb / eb, two = p->vrank == 2;
    int64_t s0 = two ? p->vstr[0] : 0, s1 = p->vstr[p->vrank - 1];
    int64_t h = two ? p->shape[0] : 1, w = p->shape[p->rank - 1], lane0 = co % lanes;
    int64_t first = p->i + (two ? p->off[0] * s0 : 0) + p->off[p->vrank - 1] * s1, last = first + (h - 1) * s0 + (w - 1) * s1;
    if (lane0 && lane0 + w > lanes)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a piece of a distributed tile that crosses a stick of the tile");
    if (h > 65535 || w > 65535 * lanes)
        kt_fail(c, KT_EXIT_REFUSED, op->line, op->col, "not supported: a ct_local tile of more than 65535 rows or sticks");
    int whole = s1 == 1 && lane0 == 0 && first % lanes == 0 && (h == 1 || s0 % lanes == 0) && w % lanes == 0;
    int64_t src = lx_source(c, op, p->tensor, first / lanes, last / lanes) + first * eb;
    int64_t at = (int64_t)lx + ((co / lanes) * hf + ro) * sb, groups = (w + lanes - 1) / lanes;
    isa_insn in;
    if (whole) { /* sticks as they are: group g of row r to stick g * hf + r */
        isa_insn_init(&in, ISA_OP_DMA_LX);
        isa_set(&in, n[0], groups), isa_set(&in, n[1], h), isa_set(&in, ds[0], hf * sb), isa_set(&in, as[0], sb),
            isa_set(&in, ds[1], sb), isa_set(&in, as[1], s0 * eb);
        isa_set_off(&in.d, at), isa_set_off(&in.a, src);
        kt_emit(c, &in);
        return;
    }
    for (int part = 0; part < 2; part++) { /* element (i, j) from src + (i * s0 + j * s1) elements */
        int64_t n = part ? (w % lanes != 0) : w / lanes, g0 = part ? w / lanes : 0;
        if (!n) continue;
        isa_insn_init(&in, ISA_OP_SFP_RST);
        isa_set(&in, t, kt_dtype(p)), isa_set(&in, vl, part ? w % lanes : lanes);
        isa_set(&in, n[0], h), isa_set(&in, n[1], n), isa_set_off(&in.a, src + g0 * lanes * s1 * eb),
            isa_set_off(&in.d, at + g0 * hf * sb + lane0 * eb);
        isa_set(&in, as[0], s0 * eb), isa_set(&in, as[1], lanes * s1 * eb), isa_set(&in, bs[0], s1 * eb);
        isa_set(&in, ds[0], sb), isa_set(&in, ds[1], hf * sb), isa_set(&in, bs[1], eb);
        kt_emit(c, &in);
    }
}
