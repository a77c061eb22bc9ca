/* be_restick.c: restickify in LX.  An operand whose affine index does not
 * walk its buffer's stick layout (a head's 16 columns starting inside a
 * 64-lane stick, k^T read as a B sticked on K, a result stored into the
 * middle of sticks) is copied element by element with sfp.rst between a
 * staged copy of the buffer (its device layout, whole, in LX) and the
 * layout the PT or the SFP wants.  The caller lists the element pairs one
 * destination stick at a time; this file turns them into few
 * instructions: a run of constant source and destination strides is one
 * sfp.rst, and equal runs of consecutive sticks share its i0 loop. */
#include "backend.h"

#include <string.h>

void be_rst_begin(be_rst *r, cc_emit *e, int corelet)
{
    memset(r, 0, sizeof *r);
    r->e = e;
    r->corelet = corelet;
}

/* Emit open instruction i: its whole i1 blocks, then the runs of a last
 * block left part way as an instruction of their own. */
static void rst_emit(be_rst *r, int i)
{
    cc_sfp_args p = r->pend[i];
    const int64_t part = r->part[i];
    if (!part) {
        cc_emit_sfp(r->e, &p);
        return;
    }
    if (p.n1 > 1) {
        p.n1--;
        cc_emit_sfp(r->e, &p);
    }
    cc_sfp_args t = r->pend[i];
    t.d = cc_abs(t.d.off + (t.n1 - 1) * t.ds1);
    t.a = cc_abs(t.a.off + (t.n1 - 1) * t.as1);
    t.n0 = part;
    t.n1 = 1;
    t.ds1 = t.as1 = 0;
    cc_emit_sfp(r->e, &t);
}

void be_rst_flush(be_rst *r)
{
    for (int i = 0; i < r->have; i++)
        rst_emit(r, i);
    r->have = 0;
}

/* Can open instruction p (part: runs of its last i1 block so far) take
 * the run vl elements from src to dst (strides sd, ss) as its next
 * iteration, of i0 or of i1?  Extends it if so. */
static int rst_extend(cc_sfp_args *p, int64_t *part, int64_t dst, int64_t src, int64_t vl, int64_t sd, int64_t ss)
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
    if (p->n1 == 1 && p->n0 == 1 && p->n0 < 65535) {
        p->ds0 = dst - p->d.off;
        p->as0 = src - p->a.off;
        p->n0 = 2;
        return 1;
    }
    if (p->n1 == 1 && p->n0 < 65535 && dst == p->d.off + p->n0 * p->ds0 && src == p->a.off + p->n0 * p->as0) {
        p->n0++;
        return 1;
    }
    if (p->n1 >= 65535)
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

/* One run: vl elements from src (stride ss) to dst (stride sd). */
static void rst_run(be_rst *r, int64_t dst, int64_t src, int64_t vl, int64_t sd, int64_t ss)
{
    for (int i = 0; i < r->have; i++)
        if (rst_extend(&r->pend[i], &r->part[i], dst, src, vl, sd, ss))
            return;
    if (r->have == BE_RST_PEND) { /* the oldest goes out */
        rst_emit(r, 0);
        memmove(r->pend, r->pend + 1, (BE_RST_PEND - 1) * sizeof *r->pend);
        memmove(r->part, r->part + 1, (BE_RST_PEND - 1) * sizeof *r->part);
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
        rst_run(r, dst[j], src[j], len, sd, ss);
        j += len;
    }
}
