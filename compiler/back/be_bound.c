/* be_bound.c: kernel boundaries: a bar only where a dependency crosses
 * cores, else a fence, found by running each core's emitted stream
 * (be_bound.h). */
#include "be_bound.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void bd_begin(bd_state *b, const be_ctx *c, isa_arena *arena)
{
    memset(b, 0, sizeof *b);
    b->runsm.arena = b->outm.arena = b->edgesm.arena = b->prevm.arena = arena;
    b->piecesm.arena = b->sortedm.arena = b->endsm.arena = arena;
    b->stick = c->t.stick;
    b->shift = b->stick > 0 && !(b->stick & (b->stick - 1)) ? __builtin_ctzll((unsigned long long)b->stick) : -1;
    b->regs = ir_xalloc((size_t)c->cfg->cores * sizeof *b->regs);
    b->ncores = (int)c->cfg->cores;
    b->ntok = cc_tokens(c->cfg); /* ring.send's ISA_TOK_NONE lies past them: no token */
    b->tokbal = ir_xalloc((size_t)c->cfg->cores * (size_t)b->ntok * sizeof *b->tokbal);
    b->urow = (int)cc_round_up(c->cfg->cores, 64);
    b->unmarked = ir_xlines((size_t)c->cfg->cores * (size_t)b->urow);
    b->live = ir_xalloc(2 * (size_t)c->cfg->cores * sizeof *b->live); /* (ir_xalloc's are zeroed) */
}

void bd_free(bd_state *b)
{
    isa_buf *m[] = {&b->runsm, &b->outm, &b->edgesm, &b->prevm, &b->piecesm, &b->sortedm, &b->endsm, &b->groupsm};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        isa_buf_free(m[i]);
    free(b->live);
    free(b->regs);
    free(b->tokbal);
    free(b->unmarked);
}

/* Scratch m of at least n elements of size bytes, kept from kernel to
 * kernel: one allocated anew per kernel was mapped and page-faulted anew
 * each time (a fifth of the Llama-8B decode step's page faults in its
 * compile). */
static void *bd_scratch(isa_buf *m, size_t n, size_t size)
{
    return isa_buf_reserve(m, n * size, 0);
}

/* Room for more pieces, or runs (bd_put's), in m (*cap of them, kept;
 * first room for `first`, untouched till used): apart, so that bd_add
 * and bd_put, once per DMA element and per run, are inlined where
 * called. */
static __attribute__((noinline)) void *bd_grow(isa_buf *m, size_t *cap, size_t size, size_t first)
{
    void *p = isa_buf_reserve(m, (*cap ? 2 * *cap : first) * size, *cap * size);
    *cap = m->cap / size;
    return p;
}

/* The pieces' first room: a kernel's weights read a K chunk of every
 * stick group after another (the Llama-8B decode step's largest kernel
 * 7,065 pieces, which grew five times from 256, copying). */
enum { BD_PIECES_FIRST = 8192 };

/* The last piece grew: it leaves a group it ends (no longer alike). */
static inline void bd_group_drop_last(bd_state *b)
{
    bd_group *g = b->ngroups ? &b->groups[b->ngroups - 1] : NULL;
    if (g && g->first + (size_t)g->n == b->npieces && !--g->n)
        b->ngroups--;
}

static inline void bd_add(bd_state *b, int core, int write, int64_t lo, int64_t hi)
{
    assert(lo >= 0 && lo < hi);
    bd_piece *last = b->npieces ? &b->pieces[b->npieces - 1] : NULL;
    if (last && last->core == core && last->write == write && last->hi == lo) {
        last->hi = hi;
        bd_group_drop_last(b);
        return;
    }
    b->unordered |= last && core < last->core; /* (before bd_grow, which may free last's room) */
    if (b->npieces == b->cap)
        b->pieces = bd_grow(&b->piecesm, &b->cap, sizeof *b->pieces, BD_PIECES_FIRST);
    b->pieces[b->npieces++] = (bd_piece){lo, hi, core, write};
}

/* Pieces bd_add_strided adds more of than this are noted as a group. */
enum { BD_GROUP_FROM = 8 };

/* bd_add of n pieces of len sticks, step apart from lo on, as one call
 * each would add them: after the first, a piece joins the one before
 * only when they touch (step == len).  The Llama-8B decode step's DMAs
 * make 25,900 pieces, which took a call each (1.4 M host instructions). */
static void bd_add_strided(bd_state *b, int core, int write, int64_t lo, int64_t step, int64_t n, int64_t len)
{
    if (n < 1)
        return;
    assert(len > 0);
    if (step == len) {
        bd_add(b, core, write, lo, lo + n * len);
        return;
    }
    bd_add(b, core, write, lo, lo + len);
    while (b->npieces + (size_t)n > b->cap)
        b->pieces = bd_grow(&b->piecesm, &b->cap, sizeof *b->pieces, BD_PIECES_FIRST);
    bd_piece *p = b->pieces + b->npieces;
    if (n > BD_GROUP_FROM) { /* the group's pieces written by bd_fill_groups, but the last (bd_add reads it) */
        if (b->ngroups == b->gcap)
            b->groups = bd_grow(&b->groupsm, &b->gcap, sizeof *b->groups, 64);
        b->groups[b->ngroups++] = (bd_group){b->npieces, n - 1, lo + step, step, len, core, write};
        p[n - 2] = (bd_piece){lo + (n - 1) * step, lo + (n - 1) * step + len, core, write};
    } else
        for (int64_t i = 1; i < n; i++)
            p[i - 1] = (bd_piece){lo + i * step, lo + i * step + len, core, write};
    b->npieces += (size_t)n - 1;
}

/* Piece k of group g. */
static inline bd_piece bd_group_piece(const bd_group *g, int64_t k)
{
    const int64_t lo = g->lo + k * g->step;
    return (bd_piece){lo, lo + g->len, g->core, g->write};
}

/* The groups' pieces written out (a group's are left unwritten till
 * then: most of the Llama-8B decode step's continue an earlier group's,
 * which then grow, bd_group_join, and are never written). */
static void bd_fill_groups(bd_state *b)
{
    for (size_t k = 0; k < b->ngroups; k++) {
        const bd_group *g = &b->groups[k];
        bd_piece *p = b->pieces + g->first;
        for (int64_t i = 0; i < g->n; i++)
            p[i] = bd_group_piece(g, i);
    }
}

void bd_lane_begin(bd_state *lane, const bd_state *b)
{
    memset(lane, 0, sizeof *lane);
    lane->stick = b->stick;
    lane->shift = b->shift;
    lane->regs = b->regs;
    lane->unmarked = b->unmarked;
    lane->urow = b->urow;
    lane->ncores = b->ncores;
    lane->ntok = b->ntok;
    lane->tokbal = ir_xalloc((size_t)b->ncores * (size_t)b->ntok * sizeof *lane->tokbal);
}

/* A lane's ring flag and balances into b, and zeroed. */
static void bd_lane_add(bd_state *b, bd_state *lane)
{
    b->kring |= lane->kring;
    lane->kring = 0;
    const size_t n = (size_t)b->ncores * (size_t)b->ntok;
    for (size_t i = 0; i < n; i++)
        b->tokbal[i] += lane->tokbal[i];
    memset(lane->tokbal, 0, n * sizeof *lane->tokbal);
}

void bd_lanes_join(bd_state *b, bd_state *x, bd_state *y)
{
    /* a stable counting sort of both lanes' pieces by core: each core's
     * lie in one lane, in the order collected */
    size_t *at = ir_xalloc(((size_t)b->ncores + 1) * sizeof *at);
    bd_fill_groups(x);
    bd_fill_groups(y);
    const bd_state *lane[2] = {x, y};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < lane[l]->npieces; i++)
            at[lane[l]->pieces[i].core + 1]++;
    for (int c = 0; c < b->ncores; c++)
        at[c + 1] += at[c];
    const size_t n = x->npieces + y->npieces;
    bd_piece *out = b->sorted = bd_scratch(&b->sortedm, n, sizeof *out);
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < lane[l]->npieces; i++)
            out[at[lane[l]->pieces[i].core]++] = lane[l]->pieces[i];
    free(at);
    for (size_t i = 0; i < n; i++)
        bd_add(b, out[i].core, out[i].write, out[i].lo, out[i].hi);
    x->npieces = y->npieces = 0;
    x->unordered = y->unordered = 0;
    x->ngroups = y->ngroups = 0;
    bd_lane_add(b, x);
    bd_lane_add(b, y);
}

void bd_lane_free(bd_state *lane)
{
    free(lane->tokbal);
    isa_buf_free(&lane->piecesm);
    isa_buf_free(&lane->groupsm);
}

/* The pieces of len sticks at a + i0 s[0] + i1 s[1] + ... (i_k < n[k]),
 * innermost level first, as bd_add_strided's of the levels merged
 * (be_level_join, as be_dma_rows merges a view's rows): the same pieces
 * in the same order (a call per piece or per strided run adds the same
 * ones; only the groups differ, which bd_needs_bar's answer and the runs
 * do not depend on).
 * A weight's K chunk read a piece per stick group made a call per row
 * of its DMA (the Llama-8B decode step: 3,100 calls). */
static void bd_dma_levels(bd_state *b, int core, int st, int64_t a, const int64_t *n, const int64_t *s, int64_t len)
{
    int64_t cn[ISA_MAX_LOOPS], cs[ISA_MAX_LOOPS];
    int k = 0;
    for (int l = 0; l < ISA_MAX_LOOPS; l++) {
        if (n[l] < 1)
            return; /* no piece */
        k = be_level_join(k, cn, cs, n[l], s[l]);
    }
    if (!k) {
        bd_add(b, core, st, a, a + len);
        return;
    }
    int64_t i[ISA_MAX_LOOPS] = {0}; /* the outer levels' steps: an odometer */
    for (;;) {
        bd_add_strided(b, core, st, a, cs[0], cn[0], len);
        int l = 1;
        for (; l < k && ++i[l] == cn[l]; l++) {
            i[l] = 0;
            a -= (cn[l] - 1) * cs[l];
        }
        if (l == k)
            return;
        a += cs[l];
    }
}

/* A dma.ld's or dma.st's DRAM sticks (this and bd_table apart from
 * bd_insn: their registers made every instruction's call save and
 * restore six). */
__attribute__((noinline)) void bd_dma(bd_state *b, const isa_insn *in, int core)
{
    const int64_t *r = b->regs[core];
    const int st = in->op == ISA_OP_DMA_ST;
    const isa_addr *x = st ? &in->d : &in->a;
    const int32_t *str = st ? in->ds : in->as;
    const int64_t base = x->off + r[x->reg];
    /* elements one after another in DRAM: bd_add would join them into one
     * piece, element by element */
    const int joined = in->n[0] > 0 && str[0] == in->run * b->stick;
    const int64_t n0 = joined ? 1 : in->n[0], len = joined ? (int64_t)in->n[0] * in->run : in->run;
    /* an address and strides of whole sticks (the usual, of a stick of a
     * power of two bytes) are counted in sticks: no division per element */
    const int64_t sk = b->stick;
    const int whole = b->shift >= 0 && !((base | str[0] | str[1] | str[2] | str[3]) & (sk - 1));
    const int sh = whole ? b->shift : 0;
    const int64_t b0 = base >> sh, s0 = str[0] >> sh, s1 = str[1] >> sh, s2 = str[2] >> sh, s3 = str[3] >> sh;
    if (whole) {
        const int64_t n[ISA_MAX_LOOPS] = {n0, in->n[1], in->n[2], in->n[3]}, s[ISA_MAX_LOOPS] = {s0, s1, s2, s3};
        bd_dma_levels(b, core, st, b0, n, s, len);
        return;
    }
    for (int64_t i3 = 0; i3 < in->n[3]; i3++)
        for (int64_t i2 = 0; i2 < in->n[2]; i2++)
            for (int64_t i1 = 0; i1 < in->n[1]; i1++)
                for (int64_t i0 = 0; i0 < n0; i0++) {
                    const int64_t a = b0 + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3, lo = whole ? a : a / sk;
                    bd_add(b, core, st, lo, lo + len);
                }
}

/* A dma.gather's or dma.scatter's: the rows it picks are data, so any
 * row of the table. */
__attribute__((noinline)) void bd_table(bd_state *b, const isa_insn *in, int core)
{
    const int sc = in->op == ISA_OP_DMA_SCATTER;
    const isa_addr *t = sc ? &in->d : &in->a;
    const int32_t *str = sc ? in->ds : in->as;
    int64_t lo = t->off + b->regs[core][t->reg], hi = lo + in->run * b->stick;
    const int64_t step[2] = {((int64_t)in->vl - 1) * str[0], ((int64_t)in->n[1] - 1) * str[1]};
    for (int l = 0; l < 2; l++)
        *(step[l] < 0 ? &lo : &hi) += step[l];
    bd_add(b, core, sc, lo / b->stick, cc_ceil_div(hi, b->stick));
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
        if (!bd_insn(b, in, core))
            continue;
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
        }
    }
}

void bd_order(bd_state *b)
{
    if (!b->unordered)
        return; /* the rule: cores one after the other */
    /* a stable counting sort by core (the groups' pieces move: written
     * out and forgotten) */
    bd_fill_groups(b);
    b->unordered = 0;
    b->ngroups = 0;
    size_t i, *at = ir_xalloc(((size_t)b->ncores + 1) * sizeof *at);
    for (i = 0; i < b->npieces; i++)
        at[b->pieces[i].core + 1]++;
    for (int c = 0; c < b->ncores; c++)
        at[c + 1] += at[c];
    bd_piece *out = b->sorted = bd_scratch(&b->sortedm, b->npieces, sizeof *out);
    for (i = 0; i < b->npieces; i++)
        out[at[b->pieces[i].core]++] = b->pieces[i];
    b->sorted = b->pieces; /* the two arrays change places */
    b->pieces = out;
    const isa_buf m = b->piecesm;
    b->piecesm = b->sortedm;
    b->sortedm = m;
    b->cap = b->piecesm.cap / sizeof *b->pieces;
    free(at);
}

/* The first run that ends after stick lo, from run l on (no run before l does). */
static size_t bd_run_at(const bd_state *b, int64_t lo, size_t l)
{
    size_t h = b->nruns;
    while (l < h) {
        size_t m = l + (h - l) / 2;
        if (b->runs[m].hi <= lo)
            l = m + 1;
        else
            h = m;
    }
    return l;
}

/* May a piece of group g clash with the runs: does a run over the sticks
 * between its first piece's start and its last's end hold another core's
 * write, or for a write another's read?  (A group's pieces are checked
 * one by one only then: a weight's K chunk read as a piece per stick
 * group, 20,000 pieces of the Llama-8B decode step, each looked up among
 * the runs, were 0.9% of its compile.) */
static int bd_group_may_clash(const bd_state *b, const bd_group *g)
{
    const int64_t end = g->lo + (g->n - 1) * g->step, lo = cc_min(g->lo, end), hi = cc_max(g->lo, end) + g->len;
    for (size_t j = bd_run_at(b, lo, 0); j < b->nruns && b->runs[j].lo < hi; j++) {
        const bd_run *u = &b->runs[j];
        if ((u->w != BD_NONE && u->w != g->core + 1) || (g->write && u->r != BD_NONE && u->r != g->core + 1))
            return 1;
    }
    return 0;
}

/* Does piece p clash with the runs (the reason to why)?  The first run
 * past its start is found from *at, the last piece's, when it starts no
 * earlier than that one (*last: its start; no run before that one ends
 * past it): mostly that same run, a DMA's pieces rising through a
 * weight. */
static int bd_piece_clash(const bd_state *b, const bd_piece *p, size_t *at, int64_t *last, char *why, size_t len)
{
    if (p->lo < *last)
        *at = 0;
    if (*at >= b->nruns || b->runs[*at].hi <= p->lo)
        *at = bd_run_at(b, p->lo, *at);
    *last = p->lo;
    for (size_t j = *at; j < b->nruns && b->runs[j].lo < p->hi; j++) {
        const bd_run *u = &b->runs[j];
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
                 (uint64_t)(cc_max(u->lo, p->lo) * b->stick), who, wrote ? "wrote" : "read");
        return 1;
    }
    return 0;
}

/* Does the next kernel (the collected accesses) need a bar before it?
 * The reason goes to why: the first piece that clashes, at its first
 * stick that does.  A group's pieces (not written yet) are made one by
 * one from it when it may clash. */
int bd_needs_bar(const bd_state *b, char *why, size_t len)
{
    if (b->ring || b->kring) {
        snprintf(why, len, "ring traffic in %s", b->kring ? "this kernel" : "the kernel before");
        return 1;
    }
    size_t at = 0, g = 0;
    int64_t last = INT64_MIN;
    for (size_t i = 0; i < b->npieces; i++) {
        if (g < b->ngroups && b->groups[g].first == i) {
            const bd_group *gr = &b->groups[g++];
            if (bd_group_may_clash(b, gr))
                for (int64_t k = 0; k < gr->n; k++) {
                    const bd_piece p = bd_group_piece(gr, k);
                    if (bd_piece_clash(b, &p, &at, &last, why, len))
                        return 1;
                }
            else { /* none of its pieces clashes */
                at = 0;
                last = INT64_MIN;
            }
            i += (size_t)gr->n - 1;
            continue;
        }
        if (bd_piece_clash(b, &b->pieces[i], &at, &last, why, len))
            return 1;
    }
    return 0;
}

/* Two marks of one stick together: no core, one, or more than one. */
static int16_t bd_merge(int16_t a, int16_t b)
{
    return a == BD_NONE ? b : b == BD_NONE || b == a ? a : BD_MANY;
}

/* Append run [lo, hi) marked w, r to the scratch runs, joined to the last
 * one when it continues it alike. */
static inline void bd_put(bd_state *b, size_t *n, int64_t lo, int64_t hi, int16_t w, int16_t r)
{
    bd_run *last = *n ? &b->out[*n - 1] : NULL;
    if (last && last->hi == lo && last->w == w && last->r == r) {
        last->hi = hi;
        return;
    }
    if (*n == b->ocap)
        b->out = bd_grow(&b->outm, &b->ocap, sizeof *b->out, 256);
    b->out[(*n)++] = (bd_run){lo, hi, w, r};
}

/* The scratch runs become the marks (the old marks' array the scratch). */
static void bd_swap(bd_state *b, size_t n)
{
    bd_run *t = b->runs;
    const isa_buf m = b->runsm;
    b->runs = b->out;
    b->runsm = b->outm;
    b->nruns = n;
    b->out = t;
    b->outm = m;
    b->ocap = b->outm.cap / sizeof *b->out;
}

/* Edges e[0..n) in stick order, stably: a few by insertion, more by a
 * radix sort through tmp (qsort's compares were a tenth of a decode
 * step's compile), each digit's pass from one array into the other (a
 * copy back after each was 2% of the Llama-8B decode step's compile):
 * returns the one the last pass wrote, e or tmp (a copy back into e was
 * 0.1% of BERT-base's compile).  (Its counts zeroed and summed over every bin,
 * each pass, outweighed the sort of a kernel of a few pieces.)  The
 * first two digits are counted in the walk that finds the largest stick
 * (sticks of up to 22 bits, two passes, are the usual). */
static bd_edge *bd_sort_edges(bd_edge *e, bd_edge *tmp, size_t n)
{
    enum { WIDE = 11, FEW = 64 };
    if (n <= FEW) {
        for (size_t i = 1; i < n; i++) {
            const bd_edge x = e[i];
            size_t j = i;
            for (; j > 0 && e[j - 1].at > x.at; j--)
                e[j] = e[j - 1];
            e[j] = x;
        }
        return e;
    }
    assert(n < UINT32_MAX);
    /* digits of 8 bits under 2,048 edges: a pass's bins are then more
     * than its edges (the decode step's joined kernels, some 500 edges
     * over sticks of 27 bits) */
    const int digit = n < 2048 ? 8 : WIDE;
    const int64_t bins = (int64_t)1 << digit;
    int64_t top = 0;
    uint32_t at[2][((size_t)1 << WIDE) + 1];
    memset(at[0], 0, (size_t)(bins + 1) * sizeof at[0][0]);
    memset(at[1], 0, (size_t)(bins + 1) * sizeof at[1][0]);
    for (size_t i = 0; i < n; i++) {
        top = cc_max(top, e[i].at);
        at[0][(e[i].at & (bins - 1)) + 1]++;
        at[1][((e[i].at >> digit) & (bins - 1)) + 1]++;
    }
    bd_edge *from = e, *to = tmp;
    for (int shift = 0; top >> shift; shift += digit) {
        uint32_t *cnt = at[shift > 0];
        if (shift > digit) { /* a third digit or more: counted apart */
            memset(cnt, 0, (size_t)(bins + 1) * sizeof *cnt);
            for (size_t i = 0; i < n; i++)
                cnt[((from[i].at >> shift) & (bins - 1)) + 1]++;
        }
        for (int64_t d = 0; d < bins; d++)
            cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++)
            to[cnt[(from[i].at >> shift) & (bins - 1)]++] = from[i];
        bd_edge *t = from;
        from = to;
        to = t;
    }
    return from;
}

/* The mark of sticks covered by `count` cores' pieces, `sum` the sum of
 * their numbers. */
static int16_t bd_mark(int count, int64_t sum)
{
    return count == 0 ? BD_NONE : count == 1 ? (int16_t)(sum + 1) : BD_MANY;
}

static size_t bd_end_hash(int64_t at, int core, int write, size_t mask)
{
    const uint64_t h = ((uint64_t)at * 2 + (uint64_t)write) * 0x9e3779b97f4a7c15u ^ (uint64_t)core * 0xc2b2ae3d27d4eb4fu;
    return (size_t)(h ^ h >> 31) & mask;
}

/* bd_join's table of at least size entries, each empty: at most the
 * join's base (an entry holds base + 1 + its piece; each join's base is
 * past the last's entries).  Kept from join to join, zeroed only when it
 * grows or the bases would wrap: zeroed for each join, it was 0.8% of the
 * Llama-8B decode step's compile (a few thousand entries used of up to
 * 16,384). */
static uint32_t *bd_ends(bd_state *b, size_t size)
{
    if (size > b->nends || b->endbase > UINT32_MAX - b->npieces - 1) {
        b->ends = isa_buf_reserve(&b->endsm, size * sizeof *b->ends, 0);
        b->nends = b->endsm.cap / sizeof *b->ends;
        memset(b->ends, 0, b->nends * sizeof *b->ends);
        b->endbase = 0;
    }
    return b->ends;
}

/* Join each piece to an earlier one of its core and kind that it
 * continues, wherever that one lies: a product's weights are read a K
 * chunk of every stick group after another, so a core's pieces of one
 * group continue each other across the other groups' (the Llama-8B
 * decode step: 7,065 pieces of one kernel, 19 runs).  The sticks each
 * core reads and writes stay the same, and so do the runs; the
 * pieces' order no longer matters (bd_needs_bar has read them).  A
 * table of the pieces by where they end (open addressing; a piece that
 * grows leaves its old entry behind, which no lookup matches).  Before
 * the table, the piece after the one the last piece joined: a weight's K
 * chunk continues the stick groups one after another (the decode step:
 * most of its 25,600 pieces).  Joined so, a piece is not entered under
 * its new end; a piece continuing it later that the table misses stays
 * apart, the same sticks. */
static void bd_join(bd_state *b)
{
    size_t size = 1;
    while (size < 2 * b->npieces)
        size *= 2;
    assert(b->npieces < UINT32_MAX);
    uint32_t *t = bd_ends(b, size);
    const uint32_t base = b->endbase;
    bd_piece *p = b->pieces;
    size_t m = 0, next = 0;
    for (size_t i = 0; i < b->npieces; i++) {
        bd_piece *n = &p[next];
        if (next < m && n->hi == p[i].lo && n->core == p[i].core && n->write == p[i].write) {
            n->hi = p[i].hi;
            next++;
            continue;
        }
        const bd_piece x = p[i];
        size_t s = bd_end_hash(x.lo, x.core, x.write, size - 1), at = m;
        for (; t[s] > base; s = (s + 1) & (size - 1)) {
            const bd_piece *q = &p[t[s] - base - 1];
            if (q->hi == x.lo && q->core == x.core && q->write == x.write) {
                at = t[s] - base - 1;
                break;
            }
        }
        if (at == m)
            p[m++] = x;
        else
            p[at].hi = x.hi;
        for (s = bd_end_hash(x.hi, x.core, x.write, size - 1); t[s] > base; s = (s + 1) & (size - 1))
            ;
        t[s] = base + (uint32_t)at + 1;
        next = at + 1;
    }
    b->endbase += (uint32_t)b->npieces;
    b->npieces = m;
}

/* The next kernel's pieces as runs (into the scratch): their edges in
 * stick order, swept with the pieces of each core and kind over each
 * stick counted. */
static size_t bd_piece_runs(bd_state *b)
{
    bd_edge *e = b->edges = bd_scratch(&b->edgesm, 4 * b->npieces + 1, sizeof *b->edges);
    for (size_t i = 0; i < b->npieces; i++) {
        const bd_piece *p = &b->pieces[i];
        e[2 * i] = (bd_edge){p->lo, p->core, p->write, 1};
        e[2 * i + 1] = (bd_edge){p->hi, p->core, p->write, -1};
    }
    e = bd_sort_edges(e, e + 2 * b->npieces, 2 * b->npieces);
    int count[2] = {0, 0}; /* cores with a piece over the stick, reading and writing */
    int64_t sum[2] = {0, 0};
    size_t n = 0;
    for (size_t i = 0; i < 2 * b->npieces; i++) {
        int32_t *live = &b->live[e[i].write * b->ncores + e[i].core];
        const int was = *live > 0;
        *live += e[i].delta;
        count[e[i].write] += (*live > 0) - was;
        sum[e[i].write] += ((*live > 0) - was) * e[i].core;
        if (i + 1 < 2 * b->npieces && e[i + 1].at > e[i].at && (count[0] || count[1]))
            bd_put(b, &n, e[i].at, e[i + 1].at, bd_mark(count[1], sum[1]), bd_mark(count[0], sum[0]));
    }
    return n;
}

/* The marks and the scratch runs together, into the scratch's place. */
static void bd_merge_runs(bd_state *b, size_t nnew)
{
    bd_run *a = b->runs, *c = b->prev = bd_scratch(&b->prevm, nnew + 1, sizeof *c);
    if (nnew) /* b->out is NULL before any kernel's pieces made runs */
        memcpy(c, b->out, nnew * sizeof *c);
    size_t i = 0, j = 0, n = 0;
    int64_t at = INT64_MIN; /* sticks before it are done */
    while (i < b->nruns || j < nnew) {
        const bd_run *x = i < b->nruns ? &a[i] : NULL, *y = j < nnew ? &c[j] : NULL;
        const int64_t lo = cc_min(x ? cc_max(x->lo, at) : INT64_MAX, y ? cc_max(y->lo, at) : INT64_MAX);
        const int inx = x && x->lo <= lo, iny = y && y->lo <= lo;
        const int64_t hi = cc_min(x ? (inx ? x->hi : x->lo) : INT64_MAX, y ? (iny ? y->hi : y->lo) : INT64_MAX);
        bd_put(b, &n, lo, hi, bd_merge(inx ? x->w : BD_NONE, iny ? y->w : BD_NONE),
               bd_merge(inx ? x->r : BD_NONE, iny ? y->r : BD_NONE));
        at = hi;
        i += x && x->hi <= hi;
        j += y && y->hi <= hi;
    }
    bd_swap(b, n);
}

/* Does the next kernel's ring traffic outlive it on some core (a transfer
 * no wait of its destination's consumes; be_bound.h)?  Clears the tallies. */
static int bd_ring_open(bd_state *b)
{
    /* the flags 8 at a time (a row is whole cache lines), then cleared:
     * byte by byte, this was most of bd_record on BERT-base */
    const size_t nu = (size_t)b->ncores * (size_t)b->urow;
    uint64_t any = 0;
    for (size_t i = 0; i < nu; i += sizeof any) {
        uint64_t w;
        memcpy(&w, b->unmarked + i, sizeof w);
        any |= w;
    }
    memset(b->unmarked, 0, nu);
    int open = any != 0;
    const size_t n = (size_t)(b->regs ? b->ncores : 0) * (size_t)b->ntok;
    for (size_t i = 0; i < n; i++)
        open |= b->tokbal[i] != 0;
    memset(b->tokbal, 0, n * sizeof *b->tokbal);
    return open;
}

/* The open group of the last few (ring of BD_GROUP_OPEN) that group y
 * continues, piece by piece (each of its pieces starts where the same
 * piece of that group ends), or NULL. */
enum { BD_GROUP_OPEN = 4 };
static bd_group *bd_group_continued(bd_state *b, const size_t *open, int nopen, const bd_group *y)
{
    for (int o = 0; o < nopen; o++) {
        bd_group *x = &b->groups[open[o]];
        if (x->core == y->core && x->write == y->write && x->n == y->n && x->step == y->step && y->lo == x->lo + x->len)
            return x;
    }
    return NULL;
}

/* Groups that continue an earlier one (a weight's next K chunk, read a
 * piece per stick group after the last) join it before bd_join: its
 * pieces grow by the later's sticks, and the later's pieces go, the rest
 * closing up in place.  Each core's sticks of each kind stay the same,
 * and so do the runs.  (Joined piece by piece in bd_join, the decode
 * step's 25,900 pieces were 1.6% of its compile.) */
static void bd_group_join(bd_state *b)
{
    if (!b->ngroups) /* (nothing to join; and no pieces may mean none allocated: memmove of NULL) */
        return;
    size_t open[BD_GROUP_OPEN], out = 0, from = 0;
    int nopen = 0, next = 0;
    bd_piece *p = b->pieces;
    for (size_t k = 0; k < b->ngroups; k++) {
        bd_group *y = &b->groups[k];
        bd_group *x = bd_group_continued(b, open, nopen, y);
        if (!x) { /* it stays: where it will be once the pieces before it close up */
            y->first -= from - out;
            open[next] = k;
            next = (next + 1) % BD_GROUP_OPEN;
            nopen += nopen < BD_GROUP_OPEN;
            continue;
        }
        memmove(p + out, p + from, (y->first - from) * sizeof *p);
        out += y->first - from;
        from = y->first + (size_t)y->n;
        x->len += y->len;
        y->n = 0; /* (gone: nothing to write) */
    }
    memmove(p + out, p + from, (b->npieces - from) * sizeof *p);
    b->npieces = out + b->npieces - from;
    bd_fill_groups(b);
    b->ngroups = 0;
}

/* This many pieces or fewer are not worth bd_join's table. */
enum { BD_JOIN_FROM = 64 };

/* The next kernel ran after a bar (forget what came before) or a fence:
 * add its accesses to those since the last bar. */
void bd_record(bd_state *b, int bar)
{
    if (bar) {
        b->nruns = 0;
        b->ring = 0;
    }
    b->ring |= b->kring && bd_ring_open(b);
    bd_group_join(b);
    if (b->npieces > BD_JOIN_FROM)
        bd_join(b);
    const size_t n = bd_piece_runs(b);
    if (!b->nruns)
        bd_swap(b, n);
    else
        bd_merge_runs(b, n);
    b->npieces = 0;
    b->unordered = 0;
    b->ngroups = 0;
    b->kring = 0;
}
