/* ref_select.c: reference ops that pick elements by a condition: where, masked_fill, triu / tril. */
#include "ref_internal.h"

/* where(condition, self, other): condition != 0 picks self. */
static int op_where(ex *E, int unused)
{
    (void)unused;
    scalar_box b1, b2;
    const tens *c = ref_arg_tensor(E, 0, "condition");
    const tens *a = c ? ref_operand(E, ref_arg(E, 1, "self"), "self", &b1) : NULL;
    const tens *b = a ? ref_operand(E, ref_arg(E, 2, "other"), "other", &b2) : NULL;
    if (!b)
        return -1;
    const tens *ts[3] = {c, a, b};
    int rank = 0;
    int64_t shape[MAXR];
    if (ref_bcast(E, 3, ts, &rank, shape))
        return -1;
    kind ka = kind_of(a->dtype), kb = kind_of(b->dtype), kr = ka > kb ? ka : kb;
    tens *o = ref_new_result(E, kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 3, ts);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int pick = c->f ? c->f[it.off[0]] != 0 : c->i[it.off[0]] != 0;
        const tens *s = pick ? a : b;
        int64_t off = pick ? it.off[1] : it.off[2];
        if (kr == K_F)
            o->f[k] = ldf(s, off);
        else
            o->i[k] = ldi(s, off);
        for (int w = 0; o->eb[0] && w < 2; w++) /* the picked bound, or if the condition may flip ... */
            o->eb[w][k] =
                (float)ref_select_bound(ref_eb_flips(ldd(c, it.off[0]), ldb(c, w, it.off[0]), w), ldd(a, it.off[1]),
                                        ldb(a, w, it.off[1]), ldd(b, it.off[2]), ldb(b, w, it.off[2]), pick, w);
    }
    return 0;
}

/* masked_fill(self, mask, value): value where mask, self elsewhere; the
 * result has the broadcast shape of self and mask, self's kind. */
static int op_masked_fill(ex *E, int unused)
{
    (void)unused;
    scalar_box bv;
    const tens *x = ref_arg_tensor(E, 0, "self");
    const tens *m = x ? ref_arg_tensor(E, 1, "mask") : NULL;
    const tens *v = m ? ref_operand(E, ref_arg(E, 2, "value"), "value", &bv) : NULL;
    if (!v)
        return -1;
    if (v->n != 1 || v->rank != 0)
        return ref_fail(E, "value is not a number or a rank-0 tensor");
    const tens *ts[2] = {x, m};
    int rank = 0;
    int64_t shape[MAXR];
    if (ref_bcast(E, 2, ts, &rank, shape))
        return -1;
    kind kr = kind_of(x->dtype);
    tens *o = ref_new_result(E, kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int fill = m->f ? m->f[it.off[1]] != 0 : m->i[it.off[1]] != 0;
        if (kr == K_F)
            o->f[k] = fill ? ldf(v, 0) : ldf(x, it.off[0]);
        else
            o->i[k] = fill ? (kr == K_B ? ldi(v, 0) != 0 : ldi(v, 0)) : ldi(x, it.off[0]);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)ref_select_bound(ref_eb_flips(ldd(m, it.off[1]), ldb(m, w, it.off[1]), w), ldd(v, 0),
                                                  ldb(v, w, 0), ldd(x, it.off[0]), ldb(x, w, it.off[0]), fill, w);
    }
    return 0;
}

/* triu(self, diagonal=0), tril(self, diagonal=0) */
static int op_tri(ex *E, int upper)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t diag = 0;
    if (!x || ref_arg_int(E, 1, "diagonal", 0, &diag))
        return -1;
    if (x->rank < 2)
        return ref_fail(E, "%s of a rank-%d tensor (at least 2)", upper ? "triu" : "tril", x->rank);
    if (ref_result_reshaped(E, x, x->rank, x->shape))
        return -1;
    tens *o = &E->res[E->nres - 1];
    int64_t R = x->shape[x->rank - 2], C = x->shape[x->rank - 1], mats = R && C ? x->n / (R * C) : 0;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                int keep = upper ? j - i >= diag : j - i <= diag;
                if (!keep) {
                    int64_t k = (m * R + i) * C + j;
                    if (o->f)
                        o->f[k] = 0;
                    else
                        o->i[k] = 0;
                    for (int w = 0; o->eb[0] && w < 2; w++)
                        o->eb[w][k] = 0;
                }
            }
    return 0;
}

static const ref_op ops[] = {
    {"where", op_where, 0},              /* condition ? self : other */
    {"masked_fill", op_masked_fill, 0},  /* mask ? value : self */
    {"triu", op_tri, 1},
    {"tril", op_tri, 0},
};
const ref_ops ref_select_ops = REF_OPS(ops);
