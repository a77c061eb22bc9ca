/* be_restick.c: restickify in LX.  An operand whose affine index does not
 * walk its buffer's stick layout (a head's 16 columns starting inside a
 * 64-lane stick, k^T read as a B sticked on K, a result stored into the
 * middle of sticks) is copied element by element with sfp.rst between a
 * staged copy of the buffer (its device layout, whole, in LX) and the
 * layout the PT or the SFP wants.  The caller lists the element pairs one
 * destination stick at a time; this file turns them into few
 * instructions: a run of constant source and destination strides is one
 * sfp.rst, equal runs of consecutive sticks share its i0 loop, and equal
 * blocks of such runs its i1 loop.  Each gather's runs are merged in three
 * ways and the one of fewest instructions is emitted (be_rst_flush). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* Up to RST_PEND instructions are open at once, so a row of two runs (a
 * lane walk across a stick boundary) merges with the next rows' two. */
#define RST_PEND 4

/* The ways to merge: i0 loops alone; equal blocks of i0 runs into the i1
 * loop too; and that, with a block that stops part way taken out again
 * when its runs then merge with the next run (rst_peel). */
enum { RST_I0, RST_I1, RST_I1_PEEL };

/* The instructions one way of merging made, in order. */
typedef struct {
    cc_sfp_args *a;
    int64_t n, cap;
} rst_insns;

/* One merge of a gather's runs: its open instructions, and the
 * instructions it has made. */
typedef struct {
    rst_insns *out;
    int corelet, how; /* how: RST_I0, RST_I1 or RST_I1_PEEL */
    int have;        /* open instructions in pend */
    cc_sfp_args pend[RST_PEND];
    int64_t part[RST_PEND]; /* runs of pend's last i1 block so far (0: it is whole) */
    int i1;          /* a run went into an i1 loop (else every way merges alike) */
    int peel;        /* a run opened an instruction while a block was part way (else RST_I1_PEEL
                        merges as RST_I1) */
} rst_form;

static void rst_take_spare(be_rst *r);

void be_rst_begin(be_rst *r, cc_emit *e, int corelet, struct be_rstmemo **memo)
{
    memset(r, 0, sizeof *r);
    r->e = e;
    r->corelet = corelet;
    r->memo = memo;
    rst_take_spare(r);
}

static void rst_put(rst_form *r, const cc_sfp_args *p)
{
    rst_insns *o = r->out;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 16;
        o->a = realloc(o->a, (size_t)o->cap * sizeof *o->a);
        if (!o->a)
            abort();
    }
    o->a[o->n++] = *p;
}

/* Emit open instruction i: its whole i1 blocks, then the runs of a last
 * block left part way as an instruction of their own. */
static void rst_emit(rst_form *r, int i)
{
    cc_sfp_args p = r->pend[i];
    const int64_t part = r->part[i];
    if (!part) {
        rst_put(r, &p);
        return;
    }
    if (p.n1 > 1) {
        p.n1--;
        rst_put(r, &p);
    }
    cc_sfp_args t = r->pend[i];
    t.d = cc_abs(t.d.off + (t.n1 - 1) * t.ds1);
    t.a = cc_abs(t.a.off + (t.n1 - 1) * t.as1);
    t.n0 = part;
    t.n1 = 1;
    t.ds1 = t.as1 = 0;
    rst_put(r, &t);
}

/* Can open instruction p (part: runs of its last i1 block so far) take
 * the run vl elements from src to dst (strides sd, ss) as its next
 * iteration, of i0 or of i1?  Extends it if so. */
static int rst_extend(cc_sfp_args *p, int64_t *part, int i1, int64_t dst, int64_t src, int64_t vl, int64_t sd,
                      int64_t ss)
{
    if (p->vl != vl || p->bs1 != sd || p->bs0 != ss)
        return 0;
    if (*part) { /* the next run of the last block */
        if (dst != p->d.off + (p->n1 - 1) * p->ds1 + *part * p->ds0 ||
            src != p->a.off + (p->n1 - 1) * p->as1 + *part * p->as0)
            return 0;
        *part = *part + 1 == p->n0 ? 0 : *part + 1;
        return 1;
    }
    if (p->n1 == 1 && p->n0 == 1 && p->n0 < ISA_COUNT_MAX) {
        p->ds0 = dst - p->d.off;
        p->as0 = src - p->a.off;
        p->n0 = 2;
        return 1;
    }
    if (p->n1 == 1 && p->n0 < ISA_COUNT_MAX && dst == p->d.off + p->n0 * p->ds0 && src == p->a.off + p->n0 * p->as0) {
        p->n0++;
        return 1;
    }
    if (!i1 || p->n1 >= ISA_COUNT_MAX)
        return 0;
    if (p->n1 == 1) { /* a second block: its first run sets the i1 strides */
        p->ds1 = dst - p->d.off;
        p->as1 = src - p->a.off;
    } else if (dst != p->d.off + p->n1 * p->ds1 || src != p->a.off + p->n1 * p->as1) {
        return 0;
    }
    p->n1++;
    *part = p->n0 == 1 ? 0 : 1;
    return 1;
}

/* Open a new instruction q (oldest out if all are open). */
static void rst_open(rst_form *r, const cc_sfp_args *q, int64_t part)
{
    if (r->have == RST_PEND) { /* the oldest goes out */
        rst_emit(r, 0);
        memmove(r->pend, r->pend + 1, (RST_PEND - 1) * sizeof *r->pend);
        memmove(r->part, r->part + 1, (RST_PEND - 1) * sizeof *r->part);
        r->have--;
    }
    r->part[r->have] = part;
    r->pend[r->have++] = *q;
}

/* Does an open instruction's last, unfinished i1 block, taken out as an
 * instruction of its own, take the run in its i0 loop?  Does so if it
 * does: a run taken as a block's first can then still pair with the next
 * as the i0 merge alone would have. */
static int rst_peel(rst_form *r, int64_t dst, int64_t src, int64_t vl, int64_t sd, int64_t ss)
{
    for (int i = 0; i < r->have; i++) {
        if (!r->part[i])
            continue;
        cc_sfp_args *p = &r->pend[i], q = *p;
        int64_t qpart = 0;
        q.d = cc_abs(p->d.off + (p->n1 - 1) * p->ds1);
        q.a = cc_abs(p->a.off + (p->n1 - 1) * p->as1);
        q.n0 = r->part[i];
        q.n1 = 1;
        q.ds1 = q.as1 = 0;
        if (q.n0 == 1)
            q.ds0 = q.as0 = 0;
        if (!rst_extend(&q, &qpart, 0, dst, src, vl, sd, ss))
            continue;
        if (--p->n1 == 1)
            p->ds1 = p->as1 = 0;
        r->part[i] = 0;
        rst_open(r, &q, qpart);
        return 1;
    }
    return 0;
}

/* One run: vl elements from src (stride ss) to dst (stride sd). */
static void rst_run(rst_form *r, int64_t dst, int64_t src, int64_t vl, int64_t sd, int64_t ss)
{
    for (int i = 0; i < r->have; i++) {
        const int64_t n1 = r->pend[i].n1;
        if (rst_extend(&r->pend[i], &r->part[i], r->how != RST_I0, dst, src, vl, sd, ss)) {
            r->i1 |= r->pend[i].n1 != n1;
            return;
        }
    }
    for (int i = 0; i < r->have; i++)
        r->peel |= r->part[i] != 0;
    if (r->how == RST_I1_PEEL && rst_peel(r, dst, src, vl, sd, ss))
        return;
    if (r->have == RST_PEND) { /* the oldest goes out */
        rst_emit(r, 0);
        memmove(r->pend, r->pend + 1, (RST_PEND - 1) * sizeof *r->pend);
        memmove(r->part, r->part + 1, (RST_PEND - 1) * sizeof *r->part);
        r->have--;
    }
    r->part[r->have] = 0;
    cc_sfp_args *p = &r->pend[r->have++];
    memset(p, 0, sizeof *p);
    p->op = ISA_OP_SFP_RST;
    p->c = r->corelet;
    p->t = ISA_T_DL16;
    p->bm = ISA_BM_VEC;
    p->d = cc_abs(dst);
    p->a = cc_abs(src);
    p->n0 = p->n1 = 1;
    p->vl = vl;
    p->bs0 = ss;
    p->bs1 = sd;
}

/* Room for more runs: apart, so that rst_keep, a few stores per row of
 * a gather, is inlined where it is called. */
static __attribute__((noinline)) void rst_grow(be_rst *r)
{
    r->cap = r->cap ? 2 * r->cap : 256;
    r->run = realloc(r->run, (size_t)r->cap * sizeof *r->run);
    if (!r->run)
        abort();
}

static inline void rst_keep(be_rst *r, int64_t dst, int64_t src, int64_t vl, int64_t sd, int64_t ss)
{
    if (r->nrun && be_rst_again(&r->run[r->nrun - 1], dst, src, vl, sd, ss))
        return;
    if (r->nrun == r->cap)
        rst_grow(r);
    r->run[r->nrun++] = (be_rst_run){dst, src, vl, sd, ss, 1, 0, 0};
}

/* Runs of constant strides: each is kept for be_rst_flush. */
void be_rst_row(be_rst *r, const int64_t *dst, const int64_t *src, int64_t n)
{
    for (int64_t j = 0; j < n;) {
        int64_t len = 1, sd = 0, ss = 0;
        if (j + 1 < n) {
            sd = dst[j + 1] - dst[j];
            ss = src[j + 1] - src[j];
            len = 2;
            while (j + len < n && dst[j + len] - dst[j + len - 1] == sd && src[j + len] - src[j + len - 1] == ss)
                len++;
        }
        rst_keep(r, dst[j], src[j], len, sd, ss);
        j += len;
    }
}

/* The element after element o of segment k (k == ns past the last). */
static void seg_next(const be_rst_seg *s, int *k, int64_t *o)
{
    if (++*o == s[*k].n) {
        ++*k;
        *o = 0;
    }
}

/* be_rst_segs of several segments: runs across them where their strides
 * continue. */
static __attribute__((noinline)) void rst_segs_walk(be_rst *r, int64_t dst, const be_rst_seg *s, int ns)
{
    int k = 0;
    int64_t o = 0, j = 0; /* element j is element o of segment k */
    while (k < ns) {
        const int64_t from = s[k].src + o * s[k].d;
        int kq = k;
        int64_t oq = o, len = 1, ss = 0;
        seg_next(s, &kq, &oq);
        if (kq == ns) { /* the last element alone: no strides */
            rst_keep(r, dst + 2 * j, from, 1, 0, 0);
            return;
        }
        ss = s[kq].src + oq * s[kq].d - from;
        len = 2;
        for (;;) { /* element oq of segment kq is the run's last so far */
            if (oq + 1 < s[kq].n) { /* the rest of its segment, if alike */
                if (s[kq].d != ss)
                    break;
                len += s[kq].n - 1 - oq;
                oq = s[kq].n - 1;
            } else if (kq + 1 < ns && s[kq + 1].src - (s[kq].src + oq * s[kq].d) == ss) {
                kq++;
                oq = 0;
                len++;
            } else {
                break;
            }
        }
        rst_keep(r, dst + 2 * j, from, len, 2, ss);
        j += len;
        k = kq;
        o = oq;
        seg_next(s, &k, &o);
    }
}

/* A segment alone is one run, as the walk would find it (most rows of a
 * gather: the walk, with its frame, and rst_keep called for each run
 * were 3% of the Llama-8B decode step's compile). */
void be_rst_segs_call(be_rst *r, int64_t dst, const be_rst_seg *s, int ns)
{
    if (ns == 1 && s[0].n >= 1)
        rst_keep(r, dst, s[0].src, s[0].n, s[0].n > 1 ? 2 : 0, s[0].n > 1 ? s[0].d : 0);
    else
        rst_segs_walk(r, dst, s, ns);
}

/* The instructions r's runs make merged one way, into out (emptied
 * first); *i1, *peel: as rst_form's. */
static int64_t rst_play(const be_rst *r, rst_insns *out, int how, int *i1, int *peel)
{
    rst_form f;
    memset(&f, 0, sizeof f);
    out->n = 0;
    f.out = out;
    f.corelet = r->corelet;
    f.how = how;
    for (int64_t k = 0; k < r->nrun; k++) {
        const be_rst_run *u = &r->run[k];
        for (int64_t t = 0; t < u->rep; t++)
            rst_run(&f, u->dst + t * u->dstep, u->src + t * u->sstep, u->vl, u->sd, u->ss);
    }
    for (int i = 0; i < f.have; i++)
        rst_emit(&f, i);
    *i1 = f.i1;
    *peel = f.peel;
    return out->n;
}

/* The last RST_MEMO gathers' runs and the instructions be_rst_flush made
 * of them, both less their first run's dst and src.  The merges compare
 * addresses only through their differences, so runs that are another
 * gather's moved by a constant (each core's gather of its own rows into
 * the same slots, kernel after kernel) make that gather's instructions
 * moved alike: the Llama-8B decode step's 180 gathers have 11 different
 * run lists, the prefill layer's 1,032 have 6. */
#define RST_MEMO 16
typedef struct {
    int corelet;
    int64_t nrun;
    be_rst_run *run;
    cc_sfp_args *a;
    int64_t n;
} rst_memo_ent;
struct be_rstmemo {
    rst_memo_ent e[RST_MEMO];
    int next;          /* the one to replace */
    be_rst_run *spare; /* a runs' array given back (nspare runs), or NULL */
    int64_t nspare;
};

/* The runs' array a gather gave back (rst_done), for the next: each
 * allocating, growing and freeing its own was 0.3% of the Llama-8B
 * decode step's compile (its 180 gathers). */
static void rst_take_spare(be_rst *r)
{
    struct be_rstmemo *m = r->memo ? *r->memo : NULL;
    if (!m || !m->spare)
        return;
    r->run = m->spare;
    r->cap = m->nspare;
    m->spare = NULL;
}

void be_rst_memo_free(struct be_rstmemo **memo)
{
    if (!*memo)
        return;
    for (int i = 0; i < RST_MEMO; i++) {
        free((*memo)->e[i].run);
        free((*memo)->e[i].a);
    }
    free((*memo)->spare);
    free(*memo);
    *memo = NULL;
}

/* Are r's runs those of m moved by r's first? */
static int rst_memo_same(const rst_memo_ent *m, const be_rst *r)
{
    if (m->nrun != r->nrun || m->corelet != r->corelet)
        return 0;
    const int64_t d0 = r->run[0].dst, s0 = r->run[0].src;
    for (int64_t k = 0; k < r->nrun; k++) {
        const be_rst_run *u = &r->run[k], *v = &m->run[k];
        if (u->dst - d0 != v->dst || u->src - s0 != v->src || u->vl != v->vl || u->sd != v->sd || u->ss != v->ss ||
            u->rep != v->rep || u->dstep != v->dstep || u->sstep != v->sstep)
            return 0;
    }
    return 1;
}

/* The memo's entry for r's runs, or NULL. */
static const rst_memo_ent *rst_memo_find(const be_rst *r)
{
    const struct be_rstmemo *m = r->memo ? *r->memo : NULL;
    for (int i = 0; m && r->nrun && i < RST_MEMO; i++)
        if (rst_memo_same(&m->e[i], r))
            return &m->e[i];
    return NULL;
}

/* Keep r's runs and their instructions a[0..n) (both moved back by the
 * first run) in place of the oldest entry. */
static void rst_memo_keep(const be_rst *r, const cc_sfp_args *a, int64_t n)
{
    if (!r->memo || !r->nrun)
        return;
    if (!*r->memo)
        *r->memo = ir_xalloc(sizeof **r->memo);
    struct be_rstmemo *m = *r->memo;
    rst_memo_ent *x = &m->e[m->next];
    m->next = (m->next + 1) % RST_MEMO;
    const int64_t d0 = r->run[0].dst, s0 = r->run[0].src;
    free(x->run);
    free(x->a);
    x->corelet = r->corelet;
    x->nrun = r->nrun;
    x->run = ir_xmalloc((size_t)r->nrun * sizeof *x->run);
    for (int64_t k = 0; k < r->nrun; k++) {
        x->run[k] = r->run[k];
        x->run[k].dst -= d0;
        x->run[k].src -= s0;
    }
    x->n = n;
    x->a = ir_xmalloc((size_t)(n + 1) * sizeof *x->a);
    for (int64_t i = 0; i < n; i++) {
        x->a[i] = a[i];
        isa_set_off(&x->a[i].d, x->a[i].d.off - d0);
        isa_set_off(&x->a[i].a, x->a[i].a.off - s0);
    }
}

/* The runs' array back to the memo's spare (else freed). */
static void rst_done(be_rst *r)
{
    struct be_rstmemo *m = r->memo ? *r->memo : NULL;
    if (m && !m->spare) {
        m->spare = r->run;
        m->nspare = r->cap;
    } else {
        free(r->run);
    }
    r->run = NULL;
    r->nrun = r->cap = 0;
}

/* Every way copies the same elements in the same stick-times, so the
 * cheapest is the one of fewest instructions (each costs
 * sfp_issue_cycles).  None is always best: the i1 merge is greedy, and a
 * run taken as the first of a block that never completes can no longer
 * pair with the next run in an i0 loop (MobileNetV2's padded copies into
 * its depthwise convs: more instructions than the i0 merge alone); taking
 * such a block out again makes more instructions where the block would
 * have completed later (ResNet-18's stem).  A tie keeps the earlier of RST_I1, RST_I0, RST_I1_PEEL.
 * The ways part only where RST_I1 takes a run into an i1 loop, and
 * RST_I1_PEEL only where a run then comes while a block is part way: a
 * way that cannot part from RST_I1's merge is not played, and the best
 * way's instructions are kept as it made them, not made again (these
 * plays were 6.5% of the Llama-8B decode step's compile). */
void be_rst_flush(be_rst *r)
{
    const rst_memo_ent *hit = rst_memo_find(r);
    if (hit) {
        const int64_t d0 = r->run[0].dst, s0 = r->run[0].src;
        for (int64_t i = 0; r->e && i < hit->n; i++) {
            cc_sfp_args p = hit->a[i];
            isa_set_off(&p.d, p.d.off + d0);
            isa_set_off(&p.a, p.a.off + s0);
            cc_emit_sfp(r->e, &p);
        }
        rst_done(r);
        return;
    }
    static const int order[] = {RST_I1, RST_I0, RST_I1_PEEL};
    int may[3] = {1}, skip;
    rst_insns best = {0}, other = {0};
    rst_play(r, &best, order[0], &may[1], &may[2]);
    for (int k = 1; k < 3; k++)
        if (may[k] && rst_play(r, &other, order[k], &skip, &skip) < best.n) {
            const rst_insns t = best;
            best = other;
            other = t;
        }
    rst_memo_keep(r, best.a, best.n);
    for (int64_t i = 0; r->e && i < best.n; i++)
        cc_emit_sfp(r->e, &best.a[i]);
    free(best.a);
    free(other.a);
    rst_done(r);
}
