/* ref_sort.c: reference ops that order a line along one dim: sort, topk, kthvalue, argmax, argmin,
 * max / min (all elements, or along a dim with indices), and the running product (cumprod).
 *
 * Orders follow PyTorch on the CPU: a NaN is larger than every number (last
 * in an ascending sort, first in a descending one, and max / argmax pick
 * the first NaN), equal values keep their order (a stable sort; argmax
 * picks the first of equal maxima).
 *
 * Error bounds: the k-th smallest of a line lies between the k-th smallest
 * of the lower ends x - lambda E and that of the upper ends x + lambda E of
 * its elements' intervals (order statistics are monotone in every
 * element), so a value's bound is the larger distance to those, over
 * lambda.  An index may be that of any element whose interval reaches the
 * k-th value's interval (the device may order them the other way): a jump
 * of the largest index distance (infinite when an infinite bound is among
 * them: such an index is vacuous, not a jump); exact when no bound is positive, except
 * that topk's and kthvalue's equal elements may come in either order
 * (PyTorch's order of them is unspecified). */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A line along dim d of a contiguous tensor: n elements st apart from base. */
typedef struct {
    int64_t outer, n, inner;
} lines;

static lines lines_of(const tens *x, int d)
{
    lines l = {1, x->rank ? x->shape[d] : 1, 1};
    for (int i = 0; i < x->rank; i++)
        if (i != d)
            *(i < d ? &l.outer : &l.inner) *= x->shape[i];
    return l;
}

/* -1, 0, 1 as x[a] orders before, with, after x[b]; a NaN after every number. */
static int cmp_elem(const tens *x, int64_t a, int64_t b)
{
    if (x->f) {
        float u = x->f[a], v = x->f[b];
        if (isnan(u) || isnan(v))
            return isnan(u) - isnan(v);
        return (u > v) - (u < v);
    }
    return (x->i[a] > x->i[b]) - (x->i[a] < x->i[b]);
}

/* Stable merge sort of the n offsets in p (tmp of n), ascending or descending. */
static void msort(const tens *x, int64_t *p, int64_t *tmp, int64_t n, int desc)
{
    if (n < 2)
        return;
    int64_t h = n / 2, i = 0, j = h, k = 0;
    msort(x, p, tmp, h, desc);
    msort(x, p + h, tmp, n - h, desc);
    while (i < h && j < n) {
        int c = cmp_elem(x, p[j], p[i]);
        tmp[k++] = (desc ? c > 0 : c < 0) ? p[j++] : p[i++];
    }
    while (i < h)
        tmp[k++] = p[i++];
    while (j < n)
        tmp[k++] = p[j++];
    memcpy(p, tmp, (size_t)n * sizeof *p);
}

static int cmp_double(const void *a, const void *b)
{
    double u = *(const double *)a, v = *(const double *)b;
    if (isnan(u) || isnan(v))
        return isnan(u) - isnan(v);
    return (u > v) - (u < v);
}

/* Per line, scratch for the bounds: the lower and upper ends of the
 * elements' intervals (track w), each sorted ascending. */
typedef struct {
    double *lo, *hi;
    double rmax; /* the largest lambda E */
    int ties;    /* equal elements may come in either order (topk, kthvalue: PyTorch's is unspecified) */
} ends;

static void line_ends(const tens *x, int64_t b, int64_t n, int64_t st, int w, ends *e)
{
    double L = ref_eb_lam(w);
    e->rmax = 0;
    for (int64_t k = 0; k < n; k++) {
        double v = ldd(x, b + k * st), r = L * ldb(x, w, b + k * st);
        e->rmax = fmax(e->rmax, r);
        e->lo[k] = r > 0 ? v - r : v;
        e->hi[k] = r > 0 ? v + r : v;
    }
    qsort(e->lo, (size_t)n, sizeof *e->lo, cmp_double);
    qsort(e->hi, (size_t)n, sizeof *e->hi, cmp_double);
}

/* The bound (track w) of the value v at ascending rank r of its line. */
static double value_bound(const ends *e, int64_t r, double v, int w)
{
    if (!isfinite(v)) /* an infinity is exact by convention; a NaN stays NaN */
        return 0;
    double d = fmax(e->hi[r] - v, v - e->lo[r]) / ref_eb_lam(w);
    return isnan(d) ? INFINITY : fmax(d, 0);
}

/* Whether element k (value v, reach rk = lambda E_k) may stand at the
 * rank whose value lies in [lo, hi] instead of element j (reach rj). */
static int may_swap(double v, double rk, double rj, double lo, double hi)
{
    if (rj == 0 && rk == 0)
        return 0;
    return isnan(v) || isnan(lo) || (v - rk <= hi && v + rk >= lo);
}

/* The bound (track w) of the index of element j of a line, picked for
 * the value at ascending rank r: a jump to any element whose interval
 * reaches [lo_r, hi_r].  With the line's stably sorted offsets p (s: j's
 * place in it; step: the offset between elements), only the neighbours
 * within the largest reach are looked at; without p, every element. */
static double index_bound(const tens *x, int64_t b, int64_t n, int64_t step, int64_t j, const ends *e, int64_t r,
                          const int64_t *p, int64_t s, int w)
{
    double L = ref_eb_lam(w), lo = e->lo[r], hi = e->hi[r], far = 0, rj = L * ldb(x, w, b + j * step), rmax = e->rmax;
    const double vj = ldd(x, b + j * step);
    for (int dir = -1; dir <= 1; dir += 2)
        for (int64_t t = p ? s + dir : (dir < 0 ? 0 : n); t >= 0 && t < n; t += p ? dir : 1) {
            int64_t k = p ? (p[t] - b) / step : t;
            double v = ldd(x, b + k * step);
            if (p && !isnan(v) && (v < lo - rmax || v > hi + rmax))
                break;
            if (k != j && (may_swap(v, L * ldb(x, w, b + k * step), rj, lo, hi) || (e->ties && v == vj)))
                far = fmax(far, isinf(rj) || isinf(ldb(x, w, b + k * step)) ? INFINITY : (double)llabs(k - j));
        }
    return far ? ref_eb_jump(far * (1 + EB_JUMP_MARGIN), w) : 0;
}

/* Store element j of line (b, st) of x as element k of the values o
 * (if any) and its index into oi (if any), with bounds at ascending rank r. */
static void put(const tens *x, int64_t b, int64_t n, int64_t st, int64_t j, int64_t r, const ends *e,
                const int64_t *p, int64_t s, tens *o, tens *oi, int64_t k)
{
    if (o) {
        if (o->f)
            o->f[k] = x->f[b + j * st];
        else
            o->i[k] = x->i[b + j * st];
    }
    if (oi)
        oi->i[k] = j;
    for (int w = 0; e && w < 2; w++) {
        if (o)
            o->eb[w][k] = (float)value_bound(&e[w], r, ldd(x, b + j * st), w);
        if (oi)
            oi->eb[w][k] = (float)index_bound(x, b, n, st, j, &e[w], r, p, s, w);
    }
}

/* A line's one picked place: a fixed position, its lower median (a NaN
 * if it has one: the first), or the lower median of its numbers (nanmedian). */
enum { PICK_ALL = -1, PICK_MEDIAN = -2, PICK_NANMEDIAN = -3 };

static int64_t pick_of(int64_t pick, const tens *x, int64_t b, int64_t n, int64_t st)
{
    if (pick >= 0)
        return pick;
    int64_t nan = 0;
    for (int64_t k = 0; x->f && k < n; k++)
        nan += isnan(x->f[b + k * st]);
    if (pick == PICK_MEDIAN)
        return nan ? n - nan : (n - 1) / 2;
    return nan == n ? 0 : (n - nan - 1) / 2;
}

/* The ordered elements of each line of x along d: positions [0, k) of
 * the stably sorted line (descending or not) go to o and oi (dim d of
 * size k; pick PICK_ALL), or only the place pick_of picks (dim d dropped
 * unless keepdim); ties: equal elements' indices bounded as either order. */
static int ordered(ex *E, const tens *x, int d, int desc, int64_t k, int64_t pick, int keepdim, int want_vals,
                   int ties)
{
    lines l = lines_of(x, d);
    int64_t shape[MAXR], cnt = pick != PICK_ALL ? 1 : k;
    int rank = x->rank;
    memcpy(shape, x->shape, sizeof shape);
    if (rank)
        shape[d] = cnt;
    if (pick != PICK_ALL && !keepdim && rank) {
        memmove(shape + d, shape + d + 1, (size_t)(rank - d - 1) * sizeof *shape);
        rank--;
    }
    if (want_vals && !ref_new_result(E, kind_of(x->dtype), rank, shape))
        return -1;
    if (want_vals != 2 && !ref_new_result(E, K_I, rank, shape))
        return -1;
    tens *oi = want_vals != 2 ? &E->res[E->nres - 1] : NULL;
    tens *o = want_vals == 1 ? &E->res[E->nres - 2] : want_vals == 2 ? &E->res[E->nres - 1] : NULL;
    int64_t *p = malloc((size_t)(2 * l.n + 1) * sizeof *p);
    double *buf = E->bounds ? malloc((size_t)(4 * l.n + 1) * sizeof *buf) : NULL;
    if (!p || (E->bounds && !buf)) {
        free(p);
        free(buf);
        return ref_fail(E, "out of host memory");
    }
    ends e[2] = {{buf, buf + l.n, 0, ties}, {buf + 2 * l.n, buf + 3 * l.n, 0, ties}};
    for (int64_t q = 0; q < l.outer; q++)
        for (int64_t in = 0; in < l.inner; in++) {
            int64_t b = q * l.n * l.inner + in;
            for (int64_t j = 0; j < l.n; j++)
                p[j] = b + j * l.inner;
            msort(x, p, p + l.n, l.n, desc);
            for (int w = 0; buf && w < 2; w++)
                line_ends(x, b, l.n, l.inner, w, &e[w]);
            int64_t s0 = pick == PICK_ALL ? 0 : pick_of(pick, x, b, l.n, l.inner);
            for (int64_t s = s0; s < (pick == PICK_ALL ? k : s0 + 1); s++) {
                int64_t j = (p[s] - b) / l.inner, r = desc ? l.n - 1 - s : s;
                int64_t dst = (q * cnt + (pick == PICK_ALL ? s : 0)) * l.inner + in;
                put(x, b, l.n, l.inner, j, r, buf ? e : NULL, p, s, o, oi, dst);
            }
        }
    free(p);
    free(buf);
    return 0;
}

/* The dim argument at pos (default def; INT64_MIN: required), normalised. */
static int dim_arg(ex *E, const tens *x, int pos, int64_t def, int *d)
{
    int64_t dim;
    if (def == INT64_MIN ? ref_arg_req_int(E, pos, "dim", &dim) : ref_arg_int(E, pos, "dim", def, &dim))
        return -1;
    return ref_norm_dim(E, dim, x->rank, d);
}

/* sort(self, dim=-1, descending=False); sort.stable(self, *, stable, dim=-1, descending=False) */
static int op_sort(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int stable = strcmp(ref_overload(E->node), "stable") == 0, d, desc;
    if (!x || dim_arg(E, x, stable ? -1 : 1, -1, &d) || ref_arg_bool(E, stable ? -1 : 2, "descending", 0, &desc))
        return -1;
    return ordered(E, x, d, desc, x->rank ? x->shape[d] : 1, PICK_ALL, 1, 1, 0);
}

/* topk(self, k, dim=-1, largest=True, sorted=True): the k largest (or smallest), in order */
static int op_topk(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t k;
    int d, largest;
    if (!x || ref_arg_req_int(E, 1, "k", &k) || dim_arg(E, x, 2, -1, &d) || ref_arg_bool(E, 3, "largest", 1, &largest))
        return -1;
    int64_t n = x->rank ? x->shape[d] : 1;
    if (k < 0 || k > n)
        return ref_fail(E, "k = %lld out of range for a dim of size %lld", (long long)k, (long long)n);
    return ordered(E, x, d, largest, k, PICK_ALL, 1, 1, 1);
}

/* kthvalue(self, k, dim=-1, keepdim=False): the k-th smallest and its index */
static int op_kthvalue(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t k;
    int d, keep;
    if (!x || ref_arg_req_int(E, 1, "k", &k) || dim_arg(E, x, 2, -1, &d) || ref_arg_bool(E, 3, "keepdim", 0, &keep))
        return -1;
    int64_t n = x->rank ? x->shape[d] : 1;
    if (k < 1 || k > n)
        return ref_fail(E, "k = %lld out of range for a dim of size %lld", (long long)k, (long long)n);
    return ordered(E, x, d, 0, n, k - 1, keep, 1, 1);
}

/* The place of a line's max (mx) or min: its first NaN, else the first
 * of equal extremes. */
static int64_t extreme_of(const tens *x, int64_t b, int64_t n, int64_t st, int mx)
{
    int64_t best = 0;
    for (int64_t k = 0; k < n; k++) {
        if (x->f && isnan(x->f[b + k * st]))
            return k;
        int c = cmp_elem(x, b + k * st, b + best * st);
        if (mx ? c > 0 : c < 0)
            best = k;
    }
    return best;
}

/* argmax / argmin / max.dim / min.dim / max / min over one dim (or all
 * elements: x flattened), its values (want_vals) and indices. */
static int extreme(ex *E, const tens *x, int d, int keepdim, int mx, int want_vals, int want_idx)
{
    lines l = lines_of(x, d);
    if (l.n == 0)
        return ref_fail(E, "%s of an empty dim", mx ? "max" : "min");
    int64_t shape[MAXR];
    int rank = x->rank;
    memcpy(shape, x->shape, sizeof shape);
    if (rank && keepdim)
        shape[d] = 1;
    else if (rank) {
        memmove(shape + d, shape + d + 1, (size_t)(rank - d - 1) * sizeof *shape);
        rank--;
    }
    if ((want_vals && !ref_new_result(E, kind_of(x->dtype), rank, shape)) ||
        (want_idx && !ref_new_result(E, K_I, rank, shape)))
        return -1;
    tens *o = want_vals ? &E->res[E->nres - 1 - want_idx] : NULL, *oi = want_idx ? &E->res[E->nres - 1] : NULL;
    double *buf = E->bounds ? malloc((size_t)(4 * l.n) * sizeof *buf) : NULL;
    if (E->bounds && !buf)
        return ref_fail(E, "out of host memory");
    ends e[2] = {{buf, buf + l.n, 0, 0}, {buf + 2 * l.n, buf + 3 * l.n, 0, 0}};
    for (int64_t q = 0; q < l.outer; q++)
        for (int64_t in = 0; in < l.inner; in++) {
            int64_t b = q * l.n * l.inner + in, j = extreme_of(x, b, l.n, l.inner, mx);
            for (int w = 0; buf && w < 2; w++)
                line_ends(x, b, l.n, l.inner, w, &e[w]);
            put(x, b, l.n, l.inner, j, mx ? l.n - 1 : 0, buf ? e : NULL, NULL, 0, o, oi, q * l.inner + in);
        }
    free(buf);
    return 0;
}

enum { X_ARGMAX, X_ARGMIN, X_MAX, X_MIN };

/* argmax(self, dim=None, keepdim=False), argmin; max(self) / max.dim(self,
 * dim, keepdim=False) giving (values, indices); min likewise */
static int op_extreme(ex *E, int op)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int mx = op == X_ARGMAX || op == X_MAX, arg = op == X_ARGMAX || op == X_ARGMIN, keep, d = 0;
    int64_t dim;
    if (ref_arg_int(E, 1, "dim", INT64_MIN, &dim) || ref_arg_bool(E, 2, "keepdim", 0, &keep))
        return -1;
    if (dim == INT64_MIN) { /* every element: the flattened tensor */
        tens flat = *x;
        flat.rank = 1;
        flat.shape[0] = x->n;
        if (keep && arg && x->rank)
            return ref_fail(E, "keepdim without a dim");
        return extreme(E, &flat, 0, 0, mx, !arg, arg);
    }
    if (ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    return extreme(E, x, d, keep, mx, !arg, arg || strcmp(ref_overload(E->node), "dim") == 0);
}

/* median(self) / median.dim(self, dim, keepdim=False): the lower median
 * (a NaN if the line has one), with its index for .dim; nanmedian: of the
 * numbers only (NaN when there are none) */
static int op_median(ex *E, int nan)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    int keep, d;
    if (!x)
        return -1;
    int64_t pick = nan ? PICK_NANMEDIAN : PICK_MEDIAN;
    if (strcmp(ref_overload(E->node), "dim") != 0) { /* every element: values only */
        tens flat = *x;
        flat.rank = 1;
        flat.shape[0] = x->n;
        if (!x->n)
            return ref_fail(E, "median of an empty tensor");
        return ordered(E, &flat, 0, 0, x->n, pick, 0, 2, 0);
    }
    if (dim_arg(E, x, 1, INT64_MIN, &d) || ref_arg_bool(E, 2, "keepdim", 0, &keep))
        return -1;
    if (x->rank && !x->shape[d])
        return ref_fail(E, "median of an empty dim");
    return ordered(E, x, d, 0, 0, pick, keep, 1, 0);
}

/* aminmax(self, *, dim=None, keepdim=False): (min, max) */
static int op_aminmax(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim;
    int keep, d = 0;
    if (!x || ref_arg_int(E, -1, "dim", INT64_MIN, &dim) || ref_arg_bool(E, -1, "keepdim", 0, &keep))
        return -1;
    tens flat = *x;
    if (dim == INT64_MIN) { /* every element: the last of dims of size 1 (kept), or one dim (dropped) */
        keep = keep && x->rank;
        flat.rank = keep ? x->rank : 1;
        for (int k = 0; k < flat.rank; k++)
            flat.shape[k] = k == flat.rank - 1 ? x->n : 1;
        d = flat.rank - 1;
    } else if (ref_norm_dim(E, dim, x->rank, &d)) {
        return -1;
    } else if (!x->rank && keep) { /* PyTorch gives a 0-d tensor's min and max, kept, as [1] */
        flat.rank = 1;
        flat.shape[0] = 1;
    }
    return extreme(E, &flat, d, keep, 0, 1, 0) || extreme(E, &flat, d, keep, 1, 1, 0) ? -1 : 0;
}

/* The running extreme of one line (n elements st apart from b) into o
 * and oi: PyTorch's cummax / cummin, where an equal value or a NaN takes
 * over (the last index), and a NaN stays. */
static void cum_line(const tens *x, int64_t b, int64_t n, int64_t st, int mx, tens *o, tens *oi)
{
    int64_t best = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = b + k * st;
        int c = cmp_elem(x, j, b + best * st), xn = x->f && isnan(x->f[j]), bn = x->f && isnan(x->f[b + best * st]);
        if (k == 0 || xn || (!bn && (mx ? c >= 0 : c <= 0)))
            best = k;
        if (o->f)
            o->f[j] = x->f[b + best * st];
        else
            o->i[j] = x->i[b + best * st];
        oi->i[j] = best;
        for (int w = 0; o->eb[0] && w < 2; w++) { /* the prefix's extreme over its intervals */
            double L = ref_eb_lam(w), v = ldd(x, b + best * st), lo = -INFINITY, hi = -INFINITY, far = 0;
            double sg = mx ? 1 : -1; /* a min is the max of the negated values */
            for (int64_t i = 0; i <= k; i++) {
                double u = sg * ldd(x, b + i * st), r = L * ldb(x, w, b + i * st);
                lo = fmax(lo, u - r);
                hi = fmax(hi, u + r);
            }
            for (int64_t i = 0; i <= k; i++) {
                double u = sg * ldd(x, b + i * st), r = L * ldb(x, w, b + i * st);
                if (i != best && (r > 0 || ldb(x, w, b + best * st) > 0) && (isnan(u) || u + r >= lo))
                    far = fmax(far, isinf(r) || isinf(ldb(x, w, b + best * st)) ? INFINITY : (double)llabs(i - best));
            }
            double e = isfinite(v) ? fmax(hi - sg * v, sg * v - lo) / L : 0;
            o->eb[w][j] = (float)(isnan(e) ? INFINITY : e);
            oi->eb[w][j] = (float)(far ? ref_eb_jump(far * (1 + EB_JUMP_MARGIN), w) : 0);
        }
    }
}

/* cummax(self, dim), cummin(self, dim): (values, indices) */
static int op_cumext(ex *E, int mx)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    int d;
    if (!x || dim_arg(E, x, 1, INT64_MIN, &d))
        return -1;
    if (!ref_new_result(E, kind_of(x->dtype), x->rank, x->shape) || !ref_new_result(E, K_I, x->rank, x->shape))
        return -1;
    tens *o = &E->res[E->nres - 2], *oi = &E->res[E->nres - 1];
    lines l = lines_of(x, d);
    for (int64_t q = 0; q < l.outer; q++)
        for (int64_t in = 0; in < l.inner; in++)
            cum_line(x, q * l.n * l.inner + in, l.n, l.inner, mx, o, oi);
    return 0;
}

/* cumprod(self, dim, *, dtype=None): the running product along dim, each
 * product stored (its bound: a stored product's, step by step). */
static int op_cumprod(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int d, dt;
    if (!x || dim_arg(E, x, 1, INT64_MIN, &d) || ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind kx = kind_of(x->dtype), kr = dt >= 0 ? kind_of((gr_dtype)dt) : kx == K_F ? K_F : K_I;
    tens *o = ref_new_result(E, kr == K_B ? K_I : kr, x->rank, x->shape);
    if (!o)
        return -1;
    lines l = lines_of(x, d);
    for (int64_t q = 0; q < l.outer; q++)
        for (int64_t in = 0; in < l.inner; in++) {
            bv p[2] = {{1, 0, 0}, {1, 0, 1}};
            int64_t ip = 1;
            for (int64_t k = 0, j = q * l.n * l.inner + in; k < l.n; k++, j += l.inner) {
                for (int w = 0; w < 2; w++) {
                    bv xk = {ldd(x, j), ldb(x, w, j), w};
                    p[w] = k ? ref_bv_mul(p[w], xk) : xk;
                }
                ip *= ldi(x, j);
                if (o->f)
                    o->f[j] = (float)p[0].v;
                else
                    o->i[j] = kx == K_F ? (int64_t)p[0].v : ip;
                for (int w = 0; o->eb[0] && w < 2; w++)
                    o->eb[w][j] = (float)(isnan(p[w].e) ? INFINITY : p[w].e);
            }
        }
    return 0;
}

/* logcumsumexp(self, dim): log of the running sum of exp, in double from
 * the running max; the bound: log-sum-exp moves by at most the largest
 * move of its arguments, the prefix's largest bound, then the store */
static int op_logcumsumexp(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int d;
    if (!x || dim_arg(E, x, 1, INT64_MIN, &d))
        return -1;
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    lines l = lines_of(x, d);
    for (int64_t q = 0; q < l.outer; q++)
        for (int64_t in = 0; in < l.inner; in++) {
            double m = -INFINITY, s = 0, e[2] = {0, 0};
            for (int64_t k = 0, j = q * l.n * l.inner + in; k < l.n; k++, j += l.inner) {
                double v = ldd(x, j);
                if (v > m) { /* rescale the running sum to the new max */
                    s = s * exp(m - v) + 1;
                    m = v;
                } else if (v != -INFINITY) { /* exp(-inf) adds nothing, also to an all -inf prefix */
                    s += exp(v - m);
                }
                double r = isnan(v) || isnan(m) ? NAN : m == -INFINITY ? -INFINITY : m + log(s);
                o->f[j] = (float)r;
                for (int w = 0; o->eb[0] && w < 2; w++) {
                    e[w] = fmax(e[w], ldb(x, w, j));
                    o->eb[w][j] = (float)(isfinite(r) ? ref_eb_store(r, e[w], w) : 0);
                }
            }
        }
    return 0;
}

static const ref_op ops[] = {
    {"sort", op_sort, 0},                /* (values, indices), stable */
    {"topk", op_topk, 0},                /* the k largest / smallest, sorted */
    {"kthvalue", op_kthvalue, 0},        /* the k-th smallest */
    {"argmax", op_extreme, X_ARGMAX},    /* the first maximum (a NaN wins) */
    {"argmin", op_extreme, X_ARGMIN},
    {"max", op_extreme, X_MAX},          /* max(self): the value; max.dim: (values, indices) */
    {"min", op_extreme, X_MIN},
    {"cumprod", op_cumprod, 0},          /* running product along one dim */
    {"median", op_median, 0},            /* the lower median; a NaN wins */
    {"nanmedian", op_median, 1},         /* the lower median of the numbers */
    {"aminmax", op_aminmax, 0},          /* (min, max) */
    {"cummax", op_cumext, 1},            /* (running max, its last index) */
    {"cummin", op_cumext, 0},
    {"logcumsumexp", op_logcumsumexp, 0},
};
const ref_ops ref_sort_ops = REF_OPS(ops);
