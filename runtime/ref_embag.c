/* ref_embag.c: reference op: _embedding_bag (sum, mean or max of the weight's rows per bag, bags by offsets,
 * per-sample weights, padding_idx, include_last_offset) and its three index outputs, PyTorch's shapes. */
#include "ref_internal.h"

#include <math.h>

typedef struct {
    const tens *wt, *ix, *off, *psw;
    int64_t mode, pad, nb, n, D;
    int last;
} bag_args;

/* Bag b's index range [s, e). */
static void bag_range(const bag_args *a, int64_t b, int64_t *s, int64_t *e)
{
    *s = ldi(a->off, b);
    *e = b + 1 < a->off->n ? ldi(a->off, b + 1) : a->n;
    *e = *e < a->n ? *e : a->n;
}

/* Column d of bag b: the value, its bound per track (sums and products as
 * stored operations, a mean one division more, a max a selection:
 * 1-Lipschitz, the largest bound), the row the max came from, the count. */
static double bag_col(const bag_args *a, int64_t b, int64_t d, double eb[2], int64_t *arg, int64_t *cnt)
{
    int64_t s, e;
    bag_range(a, b, &s, &e);
    double v = 0;
    bv r[2] = {{0, 0, 0}, {0, 0, 1}};
    *cnt = 0;
    *arg = -1;
    for (int64_t i = s; i < e; i++) {
        int64_t row = ldi(a->ix, i), k = row * a->D + d;
        if (row == a->pad)
            continue;
        double x = ldd(a->wt, k);
        for (int w = 0; w < 2; w++) {
            bv t = {x, ldb(a->wt, w, k), w};
            if (a->psw)
                t = ref_bv_mul(t, (bv){ldd(a->psw, i), ldb(a->psw, w, i), w});
            r[w] = a->mode == 2 ? (bv){0, *cnt ? fmax(r[w].e, t.e) : t.e, w} : *cnt ? ref_bv_add(r[w], t) : t;
        }
        x = a->psw ? x * ldd(a->psw, i) : x;
        if (a->mode != 2)
            v += x;
        else if (!*cnt || x > v) {
            v = x;
            *arg = row;
        }
        ++*cnt;
    }
    if (a->mode == 1 && *cnt)
        v /= (double)*cnt;
    for (int w = 0; w < 2; w++)
        eb[w] = a->mode == 1 && *cnt ? ref_bv_div(r[w], ref_bv_k((double)*cnt)).e : r[w].e;
    return v;
}

static void bag_fill(const bag_args *a, tens *o, tens *o2b, tens *bs, tens *mi)
{
    for (int64_t b = 0; b < a->nb; b++) {
        int64_t s, e, arg = -1, cnt = 0;
        bag_range(a, b, &s, &e);
        for (int64_t i = s; i < e && o2b->n; i++)
            o2b->i[i] = b;
        for (int64_t d = 0; d < a->D; d++) {
            double eb[2];
            int64_t k = b * a->D + d;
            o->f[k] = (float)bag_col(a, b, d, eb, &arg, &cnt);
            for (int w = 0; o->eb[0] && w < 2; w++)
                o->eb[w][k] = (float)eb[w];
            if (a->mode == 2)
                mi->i[k] = arg;
        }
        bs->i[b] = a->D ? cnt : 0;
    }
    /* bag_size and max_indices outside max mode: PyTorch may leave them unset; not validated */
    for (int w = 0; o->eb[0] && w < 2; w++) {
        for (int64_t k = 0; k < mi->n; k++)
            mi->eb[w][k] = a->mode == 2 ? 0 : INFINITY;
        for (int64_t k = 0; k < bs->n; k++)
            bs->eb[w][k] = a->mode == 0 ? INFINITY : 0;
    }
}

/* _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
 * per_sample_weights=None, include_last_offset=False, padding_idx=-1)
 * -> (output, offset2bag, bag_size, max_indices) */
static int op_embedding_bag(ex *E, int unused)
{
    (void)unused;
    bag_args a = {0};
    a.wt = ref_arg_tensor(E, 0, "weight");
    a.ix = a.wt ? ref_arg_tensor(E, 1, "indices") : NULL;
    a.off = a.ix ? ref_arg_tensor(E, 2, "offsets") : NULL;
    const gr_arg *pa = ref_arg(E, 6, "per_sample_weights");
    if (!a.off || ref_arg_int(E, 4, "mode", 0, &a.mode) || ref_arg_bool(E, 7, "include_last_offset", 0, &a.last) ||
        ref_arg_int(E, 8, "padding_idx", -1, &a.pad) || (ref_present(pa) && !(a.psw = ref_tensor_of(E, pa, "per_sample_weights"))))
        return -1;
    if (a.wt->rank != 2 || a.ix->rank != 1 || a.off->rank != 1 || kind_of(a.wt->dtype) != K_F || a.mode < 0 ||
        a.mode > 2 || (a.psw && (a.psw->n != a.ix->n || a.mode != 0)))
        return ref_fail(E, "runs a float matrix, 1-D indices and offsets, modes 0 to 2 (weights with sum only)");
    a.n = a.ix->n;
    a.D = a.wt->shape[1];
    a.nb = a.last ? a.off->n - 1 : a.off->n;
    for (int64_t i = 0; i < a.n; i++)
        if (ldi(a.ix, i) < 0 || ldi(a.ix, i) >= a.wt->shape[0])
            return ref_fail(E, "index %lld is not a row of the weight", (long long)ldi(a.ix, i));
    for (int64_t b = 0; b < a.off->n; b++)
        if (ldi(a.off, b) < 0 || ldi(a.off, b) > a.n || (b && ldi(a.off, b) < ldi(a.off, b - 1)))
            return ref_fail(E, "offsets must rise within the indices");
    /* offset2bag is skipped by PyTorch's fast path: sum without padding_idx */
    int64_t os[2] = {a.nb < 0 ? 0 : a.nb, a.D}, n2b = a.mode == 0 && a.pad < 0 ? 0 : a.n;
    if (!ref_new_result(E, K_F, 2, os) || !ref_new_result(E, K_I, 1, &n2b) || !ref_new_result(E, K_I, 1, os) ||
        !ref_new_result(E, K_I, a.mode == 2 ? 2 : 1, os))
        return -1;
    tens *r = &E->res[E->nres - 4];
    bag_fill(&a, &r[0], &r[1], &r[2], &r[3]);
    return 0;
}

static const ref_op ops[] = {
    {"_embedding_bag", op_embedding_bag, 0}, /* (output, offset2bag, bag_size, max_indices) */
};
const ref_ops ref_embag_ops = REF_OPS(ops);
