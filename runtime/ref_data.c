/* ref_data.c: reference ops whose result's shape or places depend on the data: nonzero, masked_select,
 * unique (_unique2, unique_consecutive), the searches searchsorted, bucketize, isin, and histc.
 *
 * They run only on the host (fallback-only): the device has no dynamic
 * shapes.  Error bounds: when an element that decides the shape may come
 * out the other way (a value within its bound of zero, two distinct values
 * whose intervals meet), the result in that track is unbounded (infinite);
 * otherwise values move with their bounds and counts and indices are
 * exact.  A search's index moves by the number of boundaries within
 * reach of the value (a jump of that many). */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether element k of t may be zero or not on the device (track w). */
static int may_flip(const tens *t, int64_t k, int w) { return ref_eb_flips(ldd(t, k), ldb(t, w, k), w); }

/* nonzero(self): the coordinates of the nonzero elements, row-major, as int64 [n, rank] */
static int op_nonzero(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t nnz = 0, c[MAXR] = {0};
    int flip[2] = {0, 0};
    for (int64_t k = 0; k < x->n; k++) {
        nnz += ldd(x, k) != 0;
        for (int w = 0; x->eb[0] && w < 2; w++)
            flip[w] |= may_flip(x, k, w);
    }
    int64_t shape[2] = {nnz, x->rank};
    tens *o = ref_new_result(E, K_I, 2, shape);
    if (!o)
        return -1;
    for (int64_t k = 0, j = 0; k < x->n; k++) {
        if (ldd(x, k) != 0) {
            for (int d = 0; d < x->rank; d++)
                o->i[j * x->rank + d] = c[d];
            j++;
        }
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++c[d] < x->shape[d])
                break;
            c[d] = 0;
        }
    }
    for (int w = 0; o->eb[0] && w < 2; w++)
        for (int64_t k = 0; k < o->n; k++)
            o->eb[w][k] = flip[w] ? INFINITY : 0;
    return 0;
}

/* masked_select(self, mask): self's elements where mask (both broadcast) is true */
static int op_masked_select(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *m = x ? ref_arg_tensor(E, 1, "mask") : NULL;
    int rank;
    int64_t shape[MAXR];
    const tens *ts[2] = {x, m};
    if (!m || ref_bcast(E, 2, ts, &rank, shape))
        return -1;
    iter it;
    int64_t cnt = 0, total = ref_numel(rank, shape);
    int flip[2] = {0, 0};
    ref_iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0; k < total; k++, iter_next(&it)) {
        cnt += ldd(m, it.off[1]) != 0;
        for (int w = 0; m->eb[0] && w < 2; w++)
            flip[w] |= ldb(m, w, it.off[1]) > 0;
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), 1, &cnt);
    if (!o)
        return -1;
    ref_iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0, j = 0; k < total; k++, iter_next(&it)) {
        if (ldd(m, it.off[1]) == 0)
            continue;
        if (o->f)
            o->f[j] = x->f[it.off[0]];
        else
            o->i[j] = x->i[it.off[0]];
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][j] = flip[w] ? INFINITY : (float)ldb(x, w, it.off[0]);
        j++;
    }
    return 0;
}

/* ---- unique ---- */

typedef struct {
    double v;
    int64_t i;
} vi;

/* Ascending, NaNs last, equal values in their order. */
static int cmp_vi(const void *a, const void *b)
{
    const vi *p = a, *q = b;
    int na = isnan(p->v), nb = isnan(q->v);
    if (na != nb)
        return na - nb;
    if (!na && p->v != q->v)
        return p->v < q->v ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

/* Whether values u and v may be equal on the device, or equal values differ (track w). */
static int may_merge(double u, double eu, double v, double ev, int w)
{
    return (eu > 0 || ev > 0) && (u == v ? 1 : ref_eb_flips(u - v, eu + ev, w));
}

/* A result not asked for: empty, or as the trace declares it when that
 * holds at most one element (PyTorch 1.13's inverse of a 0-d tensor is 0-d). */
static tens *unasked(ex *E, int idx)
{
    const gr_value *v = &E->g->values[E->node->out];
    int64_t zero = 0;
    if (v->ntuple > idx && gr_ttype_numel(&v->tuple[idx]) <= 1)
        return ref_new_result(E, K_I, v->tuple[idx].rank, v->tuple[idx].shape);
    return ref_new_result(E, K_I, 1, &zero);
}

/* The unique values of the flattened x (sorted, or consecutive runs
 * only), the group of each element (inverse, x's shape) and the counts;
 * empty [0] for a result not asked for. */
static int unique(ex *E, const tens *x, int consecutive, int inv, int counts)
{
    int64_t n = x->n, *ord = malloc((size_t)(n + 1) * sizeof *ord), *grp = malloc((size_t)(n + 1) * sizeof *grp);
    if (!ord || !grp) {
        free(ord);
        free(grp);
        return ref_fail(E, "out of host memory");
    }
    vi *pairs = consecutive ? NULL : malloc((size_t)(n + 1) * sizeof *pairs);
    for (int64_t k = 0; k < n; k++) {
        ord[k] = k;
        if (pairs)
            pairs[k] = (vi){ldd(x, k), k};
    }
    if (!consecutive && !pairs) {
        free(ord);
        free(grp);
        return ref_fail(E, "out of host memory");
    }
    if (pairs) {
        qsort(pairs, (size_t)n, sizeof *pairs, cmp_vi);
        for (int64_t k = 0; k < n; k++)
            ord[k] = pairs[k].i;
        free(pairs);
    }
    int64_t nu = 0;
    int merge[2] = {0, 0};
    for (int64_t k = 0; k < n; k++) {
        int same = k && ldd(x, ord[k]) == ldd(x, ord[k - 1]); /* a NaN is its own value, as PyTorch's */
        nu += !same;
        grp[ord[k]] = nu - 1;
        for (int w = 0; k && x->eb[0] && w < 2; w++)
            merge[w] |= may_merge(ldd(x, ord[k]), ldb(x, w, ord[k]), ldd(x, ord[k - 1]), ldb(x, w, ord[k - 1]), w);
    }
    int64_t zero = 0, *cnt = calloc((size_t)(nu + 1), sizeof *cnt);
    int first = E->nres, rc = -1;
    if (!cnt)
        ref_fail(E, "out of host memory");
    else if (ref_new_result(E, kind_of(x->dtype), 1, &nu) &&
             (inv ? ref_new_result(E, K_I, x->rank, x->shape) : unasked(E, 1)) &&
             ref_new_result(E, K_I, 1, counts ? &nu : &zero))
        rc = 0;
    for (int64_t k = 0; !rc && k < n; k++) {
        tens *o = &E->res[first];
        if (o->f)
            o->f[grp[ord[k]]] = x->f[ord[k]];
        else
            o->i[grp[ord[k]]] = x->i[ord[k]];
        cnt[grp[ord[k]]]++;
        if (inv)
            E->res[first + 1].i[ord[k]] = grp[ord[k]];
        for (int w = 0; o->eb[0] && w < 2; w++) {
            float *e = &o->eb[w][grp[ord[k]]];
            *e = merge[w] ? INFINITY : fmaxf(*e, (float)ldb(x, w, ord[k]));
        }
    }
    for (int64_t g = 0; !rc && counts && g < nu; g++)
        E->res[first + 2].i[g] = cnt[g];
    for (int r = 1; !rc && r < 3; r++)
        for (int w = 0; E->res[first + r].eb[0] && w < 2; w++)
            for (int64_t k = 0; k < E->res[first + r].n; k++)
                E->res[first + r].eb[w][k] = merge[w] ? INFINITY : 0;
    free(ord);
    free(grp);
    free(cnt);
    return rc;
}

/* _unique2(self, sorted=True, return_inverse=False, return_counts=False) -> (values, inverse, counts) */
static int op_unique2(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int inv, counts;
    if (!x || ref_arg_bool(E, 2, "return_inverse", 0, &inv) || ref_arg_bool(E, 3, "return_counts", 0, &counts))
        return -1;
    return unique(E, x, 0, inv, counts);
}

/* unique_consecutive(self, return_inverse=False, return_counts=False, dim=None) */
static int op_unique_consecutive(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int inv, counts;
    int64_t dim;
    if (!x || ref_arg_bool(E, 1, "return_inverse", 0, &inv) || ref_arg_bool(E, 2, "return_counts", 0, &counts) ||
        ref_arg_int(E, 3, "dim", INT64_MIN, &dim))
        return -1;
    if (dim != INT64_MIN && x->rank > 1)
        return ref_fail(E, "unique_consecutive along a dim of a rank-%d tensor", x->rank);
    return unique(E, x, 1, inv, counts);
}

/* ---- Searches ---- */

/* The place of v in the n sorted values of s from off (st apart): the
 * count of those < v (<= v when right). */
static int64_t place(const tens *s, int64_t off, int64_t n, int64_t st, double v, int right)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        double m = ldd(s, off + mid * st);
        if (right ? !(m > v) : m < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The bound (track w) of v's place among s's n values: a jump of the
 * number of them whose test against v may come out the other way. */
static double place_bound(const tens *s, int64_t off, int64_t n, int64_t st, double v, double ev, int w)
{
    double j = 0;
    for (int64_t k = 0; k < n; k++)
        j += ref_eb_flips(v - ldd(s, off + k * st), ev + ldb(s, w, off + k * st), w);
    return j ? ref_eb_jump(j * (1 + EB_JUMP_MARGIN), w) : 0;
}

/* The places of x's values in s (a 1-D sequence, or one row per row of x). */
static int search(ex *E, const tens *s, const tens *x, int right)
{
    int64_t n = s->rank ? s->shape[s->rank - 1] : 1, rows = s->rank > 1 ? s->n / (n ? n : 1) : 1;
    int64_t per = x->rank ? x->shape[x->rank - 1] : 1;
    if (s->rank > 1 && x->n != rows * per)
        return ref_fail(E, "the sorted sequence's rows do not match self's");
    tens *o = ref_new_result(E, K_I, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        int64_t off = s->rank > 1 ? (k / per) * n : 0;
        o->i[k] = place(s, off, n, 1, ldd(x, k), right);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)place_bound(s, off, n, 1, ldd(x, k), ldb(x, w, k), w);
    }
    return 0;
}

enum { SR_SEARCHSORTED, SR_BUCKETIZE };

/* searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
 * a 1-D sequence, or one row per row of self; bucketize(self, boundaries, *, out_int32=False,
 * right=False) */
static int op_search(ex *E, int how)
{
    const tens *s = ref_arg_tensor(E, how == SR_BUCKETIZE ? 1 : 0, how == SR_BUCKETIZE ? "boundaries" : "sorted_sequence");
    const tens *x = s ? ref_arg_tensor(E, how == SR_BUCKETIZE ? 0 : 1, "self") : NULL;
    int right;
    if (!x || ref_arg_bool(E, -1, "right", 0, &right))
        return -1;
    const gr_arg *side = ref_arg(E, -1, "side");
    if (ref_present(side) && side->kind == GR_ARG_STR)
        right = strcmp(side->s, "right") == 0;
    tens sorted = {0};
    const gr_arg *sa = ref_arg(E, -1, "sorter");
    if (ref_present(sa)) { /* the sequence in sorter's order, a copy with bounds */
        const tens *so = ref_tensor_of(E, sa, "sorter");
        if (!so || kind_of(so->dtype) != K_I || so->n != s->n || ref_temp_tensor(E, &sorted, K_F, s->rank, s->shape))
            return so ? ref_fail(E, "sorter does not match the sequence") : -1;
        int64_t len = s->rank ? s->shape[s->rank - 1] : 1;
        for (int64_t k = 0; k < s->n; k++) {
            int64_t j = (k / len) * len + so->i[k];
            if (so->i[k] < 0 || so->i[k] >= len) {
                ref_tfree(&sorted);
                return ref_fail(E, "sorter index %lld out of range", (long long)so->i[k]);
            }
            sorted.f[k] = ldf(s, j);
            for (int w = 0; sorted.eb[0] && w < 2; w++)
                sorted.eb[w][k] = (float)ldb(s, w, j);
        }
        s = &sorted;
    }
    int rc = search(E, s, x, right);
    ref_tfree(&sorted);
    return rc;
}

/* isin(elements, test_elements, *, assume_unique=False, invert=False) (.Tensor_Tensor, .Tensor_Scalar) */
static int op_isin(ex *E, int unused)
{
    (void)unused;
    scalar_box box;
    const tens *x = ref_arg_tensor(E, 0, "elements");
    const tens *t = x ? ref_operand(E, ref_arg(E, 1, "test_elements"), "test_elements", &box) : NULL;
    int invert;
    if (!t || ref_arg_bool(E, -1, "invert", 0, &invert))
        return -1;
    tens *o = ref_new_result(E, K_B, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        int in = 0, flip[2] = {0, 0};
        for (int64_t j = 0; j < t->n; j++) {
            in |= ldd(x, k) == ldd(t, j);
            for (int w = 0; o->eb[0] && w < 2; w++)
                flip[w] |= may_merge(ldd(x, k), ldb(x, w, k), ldd(t, j), ldb(t, w, j), w);
        }
        o->i[k] = in != invert;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = flip[w] ? (float)ref_eb_jump(1 + EB_JUMP_MARGIN, w) : 0;
    }
    return 0;
}

/* The bin of v among bins equal bins over [lo, hi] (hi in the last), -1 outside. */
static int64_t bin_of(double v, int64_t bins, double lo, double hi)
{
    if (!(v >= lo && v <= hi))
        return -1;
    int64_t b = (int64_t)((v - lo) * (double)bins / (hi - lo));
    return b < bins ? b : bins - 1;
}

/* histc(self, bins=100, min=0, max=0): counts in equal bins over [min, max]
 * (the data's range when min == max, widened by 1 each way when that is
 * one value); elements outside are not counted.  A count moves by the
 * number of elements whose interval reaches another bin or the outside
 * (a jump); a range taken from the data moves with it: infinite. */
static int op_histc(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t bins;
    double lo, hi;
    if (!x || ref_arg_int(E, 1, "bins", 100, &bins) || ref_arg_num(E, 2, "min", 0, &lo) ||
        ref_arg_num(E, 3, "max", 0, &hi))
        return -1;
    if (bins <= 0 || lo > hi)
        return ref_fail(E, "histc with %lld bins over [%g, %g]", (long long)bins, lo, hi);
    int from_data = lo == hi;
    if (from_data && x->n) {
        lo = INFINITY, hi = -INFINITY;
        for (int64_t k = 0; k < x->n; k++)
            lo = fmin(lo, ldd(x, k)), hi = fmax(hi, ldd(x, k));
    }
    if (lo == hi)
        lo -= 1, hi += 1;
    tens *o = ref_new_result(E, kind_of(x->dtype) == K_F ? K_F : K_I, 1, &bins);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        double v = ldd(x, k);
        int64_t b = bin_of(v, bins, lo, hi);
        if (b >= 0) {
            if (o->f)
                o->f[b] += 1;
            else
                o->i[b] += 1;
        }
        for (int w = 0; o->eb[0] && w < 2; w++) { /* the bins the element may fall in or leave: counted in eb */
            double r = ref_eb_lam(w) * ldb(x, w, k);
            if (r == 0 || v + r < lo || v - r > hi)
                continue;
            int64_t b0 = v - r < lo ? -1 : bin_of(v - r, bins, lo, hi), b1 = v + r > hi ? bins : bin_of(v + r, bins, lo, hi);
            if (b0 == b1)
                continue;
            for (int64_t j = b0 < 0 ? 0 : b0; j <= (b1 >= bins ? bins - 1 : b1); j++)
                o->eb[w][j] += 1;
        }
    }
    for (int w = 0; o->eb[0] && w < 2; w++)
        for (int64_t j = 0; j < bins; j++) {
            int inexact = o->eb[w][j] > 0;
            o->eb[w][j] = from_data && inexact ? INFINITY : (float)ref_eb_jump(o->eb[w][j] * (1 + EB_JUMP_MARGIN), w);
        }
    return 0;
}

/* bincount(self, weights=None, minlength=0): per value k from 0 to max(self) (minlength at
 * least) the count of elements equal to k, or their weights' sum.  A count moves by a jump of the
 * elements whose interval reaches another value; a sum also by its weights' bounds. */
static int op_bincount(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *wt = NULL;
    const gr_arg *wa = ref_arg(E, 1, "weights");
    int64_t len;
    if (!x || (ref_present(wa) && !(wt = ref_tensor_of(E, wa, "weights"))) || ref_arg_int(E, 2, "minlength", 0, &len))
        return -1;
    if (kind_of(x->dtype) == K_F || x->rank != 1 || (wt && wt->n != x->n))
        return ref_fail(E, "bincount counts a 1-D integer tensor, with weights of its size");
    for (int64_t k = 0; k < x->n; k++) {
        if (ldd(x, k) < 0)
            return ref_fail(E, "bincount of the negative value %g at element %lld", ldd(x, k), (long long)k);
        len = len > (int64_t)ldd(x, k) ? len : (int64_t)ldd(x, k) + 1;
    }
    tens *o = ref_new_result(E, wt ? K_F : K_I, 1, &len);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        int64_t b = (int64_t)ldd(x, k);
        double wv = wt ? ldd(wt, k) : 1;
        if (o->f)
            o->f[b] += (float)wv;
        else
            o->i[b] += 1;
        for (int w = 0; o->eb[0] && w < 2; w++)
            if (ldb(x, w, k) > 0)
                for (int64_t j = 0; j < len; j++)
                    o->eb[w][j] = INFINITY;
            else if (wt)
                o->eb[w][b] += (float)(ldb(wt, w, k) + fabs(wv) * EB_ACC * (double)x->n);
    }
    return 0;
}

static const ref_op ops[] = {
    {"nonzero", op_nonzero, 0},
    {"masked_select", op_masked_select, 0},
    {"_unique2", op_unique2, 0},                     /* (values sorted, inverse, counts) */
    {"unique_consecutive", op_unique_consecutive, 0},
    {"searchsorted", op_search, SR_SEARCHSORTED},
    {"bucketize", op_search, SR_BUCKETIZE},
    {"isin", op_isin, 0},
    {"histc", op_histc, 0},
    {"bincount", op_bincount, 0},
};
const ref_ops ref_data_ops = REF_OPS(ops);
