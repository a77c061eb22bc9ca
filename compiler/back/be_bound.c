/* be_bound.c: kernel boundaries: a bar only where a dependency crosses
 * cores, else a fence, found by running each core's emitted stream
 * (be_bound.h). */
#include "be_bound.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void bd_begin(bd_state *b, const be_ctx *c)
{
    memset(b, 0, sizeof *b);
    b->stick = c->t.stick;
    b->regs = ir_xalloc((size_t)c->cfg->cores * sizeof *b->regs);
    b->ncores = (int)c->cfg->cores;
    b->ntok = (int)c->cfg->tokens;
    b->tokbal = ir_xalloc((size_t)c->cfg->cores * (size_t)b->ntok * sizeof *b->tokbal);
    memset(b->tokbal, 0, (size_t)c->cfg->cores * (size_t)b->ntok * sizeof *b->tokbal);
    b->unmarked = ir_xalloc((size_t)c->cfg->cores * (size_t)c->cfg->cores);
    memset(b->unmarked, 0, (size_t)c->cfg->cores * (size_t)c->cfg->cores);
    /* zeroed, unmarked: a large calloc maps pages that stay untouched
     * until marked (a decode step's marks span 27 MB of which its kernels
     * touch a seventh; clearing all of it was a third of its compile) */
    b->nuse = cc_ceil_div((int64_t)c->prog->dram_bytes, b->stick) + 1;
    b->use = calloc((size_t)b->nuse, sizeof *b->use);
    if (!b->use)
        abort();
}

void bd_free(bd_state *b)
{
    free(b->use);
    free(b->regs);
    free(b->tokbal);
    free(b->unmarked);
    free(b->pieces);
    free(b->marked);
}

static void bd_add(bd_state *b, int core, int write, int64_t lo, int64_t hi)
{
    assert(lo >= 0 && lo < hi);
    bd_piece *last = b->npieces ? &b->pieces[b->npieces - 1] : NULL;
    if (last && last->core == core && last->write == write && last->hi == lo) {
        last->hi = hi;
        return;
    }
    if (b->npieces == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->pieces = realloc(b->pieces, b->cap * sizeof *b->pieces);
        if (!b->pieces)
            abort();
    }
    b->pieces[b->npieces++] = (bd_piece){lo, hi, core, write};
}

/* Run core `core`'s instructions from `first` on as its sequencer would
 * (registers, loops) and collect the DRAM sticks its DMAs touch and
 * whether it uses the ring. */
void bd_collect(bd_state *b, const isa_stream *s, size_t first, int core)
{
    int64_t *r = b->regs[core];
    struct {
        size_t start;
        int64_t left;
    } loop[ISA_MAX_LOOPS];
    int depth = 0;
    for (size_t pc = first; pc < s->n; pc++) {
        const isa_insn *in = &s->insns[pc];
        switch (in->op) {
        case ISA_OP_LI:
            r[in->reg] = in->val;
            break;
        case ISA_OP_ADDI:
            r[in->reg] += in->val;
            break;
        case ISA_OP_LOOP:
            assert(depth < ISA_MAX_LOOPS);
            loop[depth].start = pc + 1;
            loop[depth++].left = in->val - 1;
            break;
        case ISA_OP_ENDL:
            assert(depth > 0);
            if (loop[depth - 1].left-- > 0)
                pc = loop[depth - 1].start - 1;
            else
                depth--;
            break;
        case ISA_OP_DMA_LD:
        case ISA_OP_DMA_ST: {
            const int st = in->op == ISA_OP_DMA_ST;
            const isa_addr *x = st ? &in->d : &in->a;
            const int64_t *str = st ? in->ds : in->as, base = x->off + r[x->reg];
            for (int64_t i3 = 0; i3 < in->n[3]; i3++)
                for (int64_t i2 = 0; i2 < in->n[2]; i2++)
                    for (int64_t i1 = 0; i1 < in->n[1]; i1++)
                        for (int64_t i0 = 0; i0 < in->n[0]; i0++) {
                            int64_t a = base + i0 * str[0] + i1 * str[1] + i2 * str[2] + i3 * str[3];
                            bd_add(b, core, st, a / b->stick, a / b->stick + in->run);
                        }
            break;
        }
        case ISA_OP_DMA_GATHER:
        case ISA_OP_DMA_SCATTER: { /* the rows it picks are data: any row of the table */
            const int sc = in->op == ISA_OP_DMA_SCATTER;
            const isa_addr *t = sc ? &in->d : &in->a;
            const int64_t *str = sc ? in->ds : in->as;
            int64_t lo = t->off + r[t->reg], hi = lo + in->run * b->stick;
            const int64_t step[2] = {(in->vl - 1) * str[0], (in->n[1] - 1) * str[1]};
            for (int l = 0; l < 2; l++)
                *(step[l] < 0 ? &lo : &hi) += step[l];
            bd_add(b, core, sc, lo / b->stick, cc_ceil_div(hi, b->stick));
            break;
        }
        case ISA_OP_RING_SEND:
        case ISA_OP_RING_RED:
            b->kring = 1;
            b->unmarked[core * b->ncores + in->core] = in->tok >= b->ntok;
            if (in->tok < b->ntok)
                b->tokbal[in->core * b->ntok + in->tok]++;
            break;
        case ISA_OP_SIG:
        case ISA_OP_WAIT:
            if (in->tok < b->ntok)
                b->tokbal[core * b->ntok + in->tok] += in->op == ISA_OP_SIG ? 1 : -1;
            break;
        }
    }
}

void bd_order(bd_state *b)
{
    size_t i = 1;
    while (i < b->npieces && b->pieces[i - 1].core <= b->pieces[i].core)
        i++;
    if (i >= b->npieces)
        return; /* the rule: cores one after the other */
    /* a stable counting sort by core */
    size_t *at = ir_xalloc(((size_t)b->ncores + 1) * sizeof *at);
    for (i = 0; i < b->npieces; i++)
        at[b->pieces[i].core + 1]++;
    for (int c = 0; c < b->ncores; c++)
        at[c + 1] += at[c];
    bd_piece *out = ir_xalloc(b->cap * sizeof *out);
    for (i = 0; i < b->npieces; i++)
        out[at[b->pieces[i].core]++] = b->pieces[i];
    free(b->pieces);
    b->pieces = out;
    free(at);
}

/* Does the next kernel (the collected accesses) need a bar before it?
 * The reason goes to why. */
int bd_needs_bar(const bd_state *b, char *why, size_t len)
{
    if (b->ring || b->kring) {
        snprintf(why, len, "ring traffic in %s", b->kring ? "this kernel" : "the kernel before");
        return 1;
    }
    for (size_t i = 0; i < b->npieces; i++) {
        const bd_piece *p = &b->pieces[i];
        /* only marked sticks can clash: a read with a write mark, a write with any */
        const int64_t lo = cc_max(p->lo, p->write ? b->ulo : b->wlo);
        const int64_t hi = cc_min(cc_min(p->hi, b->nuse), p->write ? b->uhi : b->whi);
        for (int64_t st = lo; st < hi; st++) {
            const bd_stick *u = &b->use[st];
            const int wrote = u->w != BD_NONE && u->w != p->core + 1; /* RAW or WAW */
            const int read = p->write && u->r != BD_NONE && u->r != p->core + 1; /* WAR */
            if (!wrote && !read)
                continue;
            const int other = wrote ? u->w : u->r;
            char who[32];
            if (other == BD_MANY)
                snprintf(who, sizeof who, "other cores");
            else
                snprintf(who, sizeof who, "core %d", other - 1);
            snprintf(why, len, "core %d %s DRAM 0x%" PRIx64 " that %s %s", p->core, p->write ? "writes" : "reads",
                     (uint64_t)(st * b->stick), who, wrote ? "wrote" : "read");
            return 1;
        }
    }
    return 0;
}

static int16_t bd_merge(int16_t had, int core)
{
    return had == BD_NONE || had == core + 1 ? (int16_t)(core + 1) : BD_MANY;
}

/* Sticks u[0..n) marked by no core: BD_NONE is all zeros, so a memset
 * (a bar clears many megabytes of marks in a decode step). */
static void unmark(bd_stick *u, int64_t n)
{
    _Static_assert(BD_NONE == 0, "BD_NONE is all zero bits");
    if (n > 0)
        memset(u, 0, (size_t)n * sizeof *u);
}

/* A bar: clear the marks of the pieces since the last one, each piece
 * (not the span between them: a layer's weights lie far apart, and
 * clearing the span between them took as long as the rest of the pass).
 * Pieces overlap (cores read the same weights), but clearing one again
 * costs less than marking it did (a memset against a loop over its
 * sticks), and less than sorting them to clear their union (a qsort of
 * the decode step's pieces was a third of its compile). */
static void unmark_marked(bd_state *b)
{
    for (size_t i = 0; i < b->nmarked; i++)
        unmark(b->use + b->marked[i].lo, b->marked[i].hi - b->marked[i].lo);
    b->nmarked = 0;
}

/* Widen span [*lo, *hi) (empty: lo == hi) to hold piece p. */
static void span_add(int64_t *lo, int64_t *hi, const bd_piece *p)
{
    const int none = *lo == *hi;
    *lo = none ? p->lo : cc_min(*lo, p->lo);
    *hi = none ? p->hi : cc_max(*hi, p->hi);
}

/* Does the next kernel's ring traffic outlive it on some core (a transfer
 * no wait of its destination's consumes; be_bound.h)?  Clears the tallies. */
static int bd_ring_open(bd_state *b)
{
    int open = 0;
    for (size_t i = 0; i < (size_t)b->ncores * (size_t)b->ncores; i++) {
        open |= b->unmarked[i];
        b->unmarked[i] = 0;
    }
    const size_t n = (size_t)(b->regs ? b->ncores : 0) * (size_t)b->ntok;
    for (size_t i = 0; i < n; i++) {
        open |= b->tokbal[i] != 0;
        b->tokbal[i] = 0;
    }
    return open;
}

/* The next kernel ran after a bar (forget what came before) or a fence:
 * add its accesses to those since the last bar. */
void bd_record(bd_state *b, int bar)
{
    if (bar) {
        unmark_marked(b);
        b->ulo = b->uhi = b->wlo = b->whi = 0;
        b->ring = 0;
    }
    b->ring |= b->kring && bd_ring_open(b);
    for (size_t i = 0; i < b->npieces; i++) {
        const bd_piece *p = &b->pieces[i];
        if (p->hi > b->nuse) {
            int64_t n = cc_max(p->hi, 2 * b->nuse);
            b->use = realloc(b->use, (size_t)n * sizeof *b->use);
            if (!b->use)
                abort();
            unmark(b->use + b->nuse, n - b->nuse);
            b->nuse = n;
        }
        span_add(&b->ulo, &b->uhi, p);
        if (p->write) {
            span_add(&b->wlo, &b->whi, p);
            for (int64_t st = p->lo; st < p->hi; st++)
                b->use[st].w = bd_merge(b->use[st].w, p->core);
        } else {
            for (int64_t st = p->lo; st < p->hi; st++)
                b->use[st].r = bd_merge(b->use[st].r, p->core);
        }
    }
    if (b->nmarked + b->npieces > b->mcap) {
        b->mcap = cc_max((int64_t)(b->nmarked + b->npieces), 2 * (int64_t)b->mcap);
        b->marked = realloc(b->marked, b->mcap * sizeof *b->marked);
        if (!b->marked)
            abort();
    }
    if (b->npieces)
        memcpy(b->marked + b->nmarked, b->pieces, b->npieces * sizeof *b->pieces);
    b->nmarked += b->npieces;
    b->npieces = 0;
    b->kring = 0;
}
