/* be_mmmemo.c: work division's memo of matmul plans.  workdiv plans a
 * product several times (its second round, the alignment's replans, the
 * kernel ahead's plan), most often on the same inputs: a plan found again
 * is taken from the memo instead of searched.  What be_matmul_plan reads
 * while the LX plan has not run (c->res and c->lx_floor unset) is the
 * program, its layouts, the configuration (fixed for the be_ctx), the
 * kernel's own be_work as it enters, c->waits, its notes so far (unless
 * it writes them afresh, as a plan that finds a tiling does), and the
 * tensors it may take from or leave in LX (c->hope, the second round's):
 * mm_build reads those into the plan once (atile, alx, elx, each node's
 * lxonly), and nothing after reads c->hope again.  So a plan whose entry
 * work, notes, waits and those flags are a remembered plan's is that
 * plan: its work and notes are put back as it left them.  The lxonly
 * flags are read only for a product with a batch (mm_keeps_rows, and
 * through it mm_grid_of's DRAM bytes): for one without, they may differ
 * (BERT-base's second round finds its four projections' results may
 * stay in LX, and plans them as the first did). */
#include "be_matmul.h"
#include "be_diag.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int pos, waits, atile, alx;
    uint64_t elx;
    int fresh;            /* the plan wrote its notes afresh (a tiles note): those it found do not matter */
    char *lxonly;         /* per epilogue node */
    int nn;
    be_work in, out;      /* the kernel's work as the plan found and left it */
    char tiles[sizeof((be_kinfo *)0)->tiles], restick[sizeof((be_kinfo *)0)->restick];
    int nrestick;         /* the notes as the plan found them */
    char otiles[sizeof((be_kinfo *)0)->tiles], orestick[sizeof((be_kinfo *)0)->restick];
    int onrestick;        /* and left them */
} mm_memo_entry;

/* Slots of the memo of most rows (mm_rows_memo): a plan asks for up to a
 * few hundred (sticks times K chunks). */
#define MM_ROWS_MEMO 1024

struct be_mmmemo {
    mm_rows_memo rows[MM_ROWS_MEMO];
    uint32_t gen;         /* the last plan's number */
    mm_memo_entry *e;
    int n, cap;
    be_work in;           /* the plan under way (a miss): its work and notes as it found them */
    be_kinfo kin;
    mm_grid_memo spare;   /* a grid memo's arrays a plan gave back, every entry unpriced (e NULL: none) */
};

/* The rows memo's slots are told empty by their gen alone (plans number
 * from 1): zeroing all 72 KB of them was 1.3% of BERT-base's plans. */
void be_mmmemo_begin(be_ctx *c)
{
    struct be_mmmemo *q = ir_xmalloc(sizeof *q);
    const size_t rest = offsetof(struct be_mmmemo, gen);
    memset((char *)q + rest, 0, sizeof *q - rest);
    for (int i = 0; i < MM_ROWS_MEMO; i++)
        q->rows[i].gen = 0;
    c->mmmemo = q;
}

void be_mmmemo_end(be_ctx *c)
{
    for (int i = 0; c->mmmemo && i < c->mmmemo->n; i++)
        free(c->mmmemo->e[i].lxonly);
    if (c->mmmemo) {
        free(c->mmmemo->e);
        free(c->mmmemo->spare.e);
        free(c->mmmemo->spare.waited);
        free(c->mmmemo->spare.set);
    }
    free(c->mmmemo);
    c->mmmemo = NULL;
}

/* A plan's grid memo takes the arrays the last plan gave back: each plan
 * allocating its own 22 KB and marking 1,089 entries unpriced was 17 page
 * faults and 100 k instructions of the Llama-8B decode step's compile
 * (19 searches). */
int be_mmmemo_grid_take(be_ctx *c, mm_grid_memo *g)
{
    mm_grid_memo *s = c->mmmemo ? &c->mmmemo->spare : NULL;
    if (!s || !s->e)
        return 0;
    g->e = s->e, g->waited = s->waited, g->set = s->set;
    s->e = NULL;
    return 1;
}

void be_mmmemo_grid_give(be_ctx *c, mm_grid_memo *g)
{
    if (!g->e)
        return;
    mm_grid_memo *s = c->mmmemo && !c->mmmemo->spare.e ? &c->mmmemo->spare : NULL;
    if (s) { /* given back unpriced, as a fresh one starts */
        for (int i = 0; i < g->nset; i++)
            g->e[g->set[i]] = -1;
        s->e = g->e, s->waited = g->waited, s->set = g->set;
    } else {
        free(g->e);
        free(g->waited);
        free(g->set);
    }
    g->e = NULL;
}

uint32_t be_mmmemo_gen(be_ctx *c)
{
    return c->mmmemo ? ++c->mmmemo->gen : 0;
}

mm_rows_memo *be_mmmemo_rows(be_ctx *c, uint64_t h)
{
    return c->mmmemo ? &c->mmmemo->rows[h % MM_ROWS_MEMO] : NULL;
}

/* Field by field: be_work has padding.  A field added to be_work must be
 * compared here too, or a plan would be recalled for other work: the
 * size check stops the build until it is. */
_Static_assert(sizeof(be_work) == 144, "be_mmmemo.c's work_same compares every be_work field: add the new one");
static int work_same(const be_work *a, const be_work *b)
{
    return a->cores == b->cores && a->gm == b->gm && a->gn == b->gn && a->gk == b->gk && a->gb == b->gb &&
           a->rows == b->rows && a->cols == b->cols && a->batches == b->batches && a->est_cycles == b->est_cycles &&
           a->stage_scale == b->stage_scale && a->stage_whole == b->stage_whole && a->mb == b->mb &&
           a->nbs == b->nbs && a->kc == b->kc && a->chunk == b->chunk && a->bcast == b->bcast &&
           a->nokeep == b->nokeep && a->aligned_to == b->aligned_to && a->ahead == b->ahead && a->base == b->base &&
           a->bar_before == b->bar_before;
}

static int usable(const be_ctx *c)
{
    return c->mmmemo && !c->res && !c->lx_floor;
}

static int entry_fits(const mm_memo_entry *x, be_ctx *c, int pos, const mm_plan *m)
{
    const be_kinfo *ki = &state_of(c)->k[pos];
    if (x->pos != pos || x->waits != c->waits || x->atile != m->atile || x->alx != m->alx || x->elx != m->elx || x->nn != m->ep.nn ||
        !work_same(&x->in, &c->work[pos]) || (!x->fresh && (x->nrestick != ki->nrestick ||
        strcmp(x->tiles, ki->tiles) || strcmp(x->restick, ki->restick))))
        return 0;
    for (int j = 0; j < m->ep.nn && m->nbatch > 1; j++)
        if (x->lxonly[j] != m->ep.nodes[j].lxonly)
            return 0;
    return 1;
}

int be_mmmemo_recall(be_ctx *c, int pos, const mm_plan *m)
{
    for (int i = 0; usable(c) && i < c->mmmemo->n; i++) {
        const mm_memo_entry *x = &c->mmmemo->e[i];
        if (!entry_fits(x, c, pos, m))
            continue;
        be_kinfo *ki = &state_of(c)->k[pos];
        c->work[pos] = x->out;
        memcpy(ki->tiles, x->otiles, sizeof ki->tiles);
        memcpy(ki->restick, x->orestick, sizeof ki->restick);
        ki->nrestick = x->onrestick;
        return 0;
    }
    if (usable(c)) {
        c->mmmemo->in = c->work[pos];
        c->mmmemo->kin = state_of(c)->k[pos];
    }
    return -1;
}

static mm_memo_entry *memo_add(be_ctx *c)
{
    struct be_mmmemo *mo = c->mmmemo;
    if (mo->n == mo->cap) {
        mo->cap = mo->cap ? 2 * mo->cap : 16;
        mo->e = realloc(mo->e, (size_t)mo->cap * sizeof *mo->e);
        if (!mo->e)
            abort();
    }
    return &mo->e[mo->n++];
}

void be_mmmemo_keep(be_ctx *c, int pos, const mm_plan *m, int fresh)
{
    if (!usable(c))
        return;
    const be_work *in = &c->mmmemo->in;
    const be_kinfo *kin = &c->mmmemo->kin;
    mm_memo_entry *x = memo_add(c);
    const be_kinfo *ki = &state_of(c)->k[pos];
    x->pos = pos;
    x->fresh = fresh;
    x->waits = c->waits;
    x->atile = m->atile;
    x->alx = m->alx;
    x->elx = m->elx;
    x->nn = m->ep.nn;
    x->lxonly = ir_xalloc((size_t)m->ep.nn + 1);
    for (int j = 0; j < m->ep.nn; j++)
        x->lxonly[j] = (char)m->ep.nodes[j].lxonly;
    x->in = *in;
    x->out = c->work[pos];
    memcpy(x->tiles, kin->tiles, sizeof x->tiles);
    memcpy(x->restick, kin->restick, sizeof x->restick);
    x->nrestick = kin->nrestick;
    memcpy(x->otiles, ki->tiles, sizeof x->otiles);
    memcpy(x->orestick, ki->restick, sizeof x->orestick);
    x->onrestick = ki->nrestick;
}

/* ---- mm_block's tilings, for the compile ----
 * A tiling search of a grid's tile reads only what its key holds (built
 * by be_matmul.c's mm_block_key), and the target, the same for every key
 * of a memo: a key found is the search's answer, whichever kernel, pass
 * or attempt of cc_compile asks (the products fused and apart share most
 * products).  Open addressing by the key's hash into the entries. */
typedef struct {
    uint64_t h;
    int none;              /* no tiling fits */
    mm_tiling tl;
} mm_block_entry;

typedef struct {
    uint64_t h;
    unsigned char *key;
    mm_search_result r;
} mm_search_entry;

struct be_blockmemo {
    const chip_config *cfg;
    cc_target t;
    size_t n;              /* the keys' size */
    mm_block_entry *e;
    unsigned char *keys;   /* entry i's at keys + i * n */
    int32_t *slot;         /* cap of them, -1 empty, else an entry */
    int ne, ecap, cap;
    isa_buf eb, kb, sb;    /* e's, keys' and slot's memory */
    mm_search_entry *s;    /* the grid searches (a few dozen: a list) */
    int ns, scap;
};

void be_blockmemo_free(struct be_blockmemo *b)
{
    if (b) {
        isa_buf_free(&b->eb);
        isa_buf_free(&b->kb);
        isa_buf_free(&b->sb);
        for (int i = 0; i < b->ns; i++) {
            free(b->s[i].key);
            free(b->s[i].r.at);
            free(b->s[i].r.e);
            free(b->s[i].r.waited);
        }
        free(b->s);
    }
    free(b);
}

/* The memo for c's target (made if new), or NULL: another target's. */
static struct be_blockmemo *blocks_of(be_ctx *c, size_t n)
{
    struct be_blockmemo **bp = be_spancache_blocks(c);
    if (!*bp) {
        *bp = ir_xalloc(sizeof **bp);
        (*bp)->cfg = c->cfg;
        memcpy(&(*bp)->t, &c->t, sizeof c->t);
        (*bp)->n = n;
        (*bp)->eb.arena = (*bp)->kb.arena = (*bp)->sb.arena = be_spancache_arena(c);
    }
    struct be_blockmemo *b = *bp;
    return b->cfg == c->cfg && !memcmp(&b->t, &c->t, sizeof c->t) && b->n == n ? b : NULL;
}

/* Where key (hashed h) is, or the empty slot where it goes. */
static int32_t *block_slot(struct be_blockmemo *b, const void *key, uint64_t h)
{
    for (size_t i = (size_t)h;; i++) {
        int32_t *s = &b->slot[i & (size_t)(b->cap - 1)];
        if (*s < 0 || (b->e[*s].h == h && !memcmp(b->keys + (size_t)*s * b->n, key, b->n)))
            return s;
    }
}

int be_mmblock_find(be_ctx *c, const void *key, size_t n, uint64_t h, mm_tiling *out)
{
    struct be_blockmemo *b = blocks_of(c, n);
    const int32_t *s = b && b->cap ? block_slot(b, key, h) : NULL;
    if (!s || *s < 0)
        return -1;
    if (b->e[*s].none)
        return 1;
    *out = b->e[*s].tl;
    return 0;
}

void be_mmblock_keep(be_ctx *c, const void *key, size_t n, uint64_t h, const mm_tiling *tl)
{
    struct be_blockmemo *b = blocks_of(c, n);
    if (!b)
        return;
    if (2 * (b->ne + 1) > b->cap) { /* at most half full */
        b->cap = b->cap ? 2 * b->cap : 256;
        b->slot = isa_buf_reserve(&b->sb, (size_t)b->cap * sizeof *b->slot, 0);
        memset(b->slot, -1, (size_t)b->cap * sizeof *b->slot);
        for (int i = 0; i < b->ne; i++)
            *block_slot(b, b->keys + (size_t)i * n, b->e[i].h) = i;
    }
    if (b->ne == b->ecap) { /* 512 first, then twice as many, each time as many as the slots hold
                               (BERT-base keeps some 420, decode 270: none copied) */
        const size_t want = b->ecap ? 2 * (size_t)b->ecap : 512;
        b->e = isa_buf_reserve(&b->eb, want * sizeof *b->e, (size_t)b->ne * sizeof *b->e);
        b->keys = isa_buf_reserve(&b->kb, want * n, (size_t)b->ne * n);
        const size_t ne = b->eb.cap / sizeof *b->e, nk = b->kb.cap / n;
        b->ecap = (int)(ne < nk ? ne : nk);
    }
    memcpy(b->keys + (size_t)b->ne * n, key, n);
    b->e[b->ne] = (mm_block_entry){h, !tl, tl ? *tl : (mm_tiling){0}};
    *block_slot(b, key, h) = b->ne++;
}

/* ---- mm_plan_search's grids, for the compile ----
 * Keyed as mm_block's tilings are (by everything the search reads, built
 * by be_matmul.c's mm_search_key_of), in the same memo: the same target. */
const mm_search_result *be_mmsearch_find(be_ctx *c, const void *key, size_t n, uint64_t h)
{
    const struct be_blockmemo *b = blocks_of(c, n);
    for (int i = 0; b && i < b->ns; i++)
        if (b->s[i].h == h && !memcmp(b->s[i].key, key, n))
            return &b->s[i].r;
    return NULL;
}

void be_mmsearch_keep(be_ctx *c, const void *key, size_t n, uint64_t h, const mm_search_result *r)
{
    struct be_blockmemo *b = blocks_of(c, n);
    if (!b)
        return;
    b->s = ir_xgrow(b->s, &b->scap, b->ns + 1, sizeof *b->s);
    mm_search_entry *x = &b->s[b->ns++];
    x->h = h;
    x->key = ir_xmemdup(key, n);
    x->r = *r;
    x->r.at = ir_xmemdup(r->at, (size_t)r->n * sizeof *r->at);
    x->r.e = ir_xmemdup(r->e, (size_t)r->n * sizeof *r->e);
    x->r.waited = ir_xmemdup(r->waited, (size_t)r->n * sizeof *r->waited);
}
