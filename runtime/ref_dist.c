/* ref_dist.c: reference ops: _cdist_forward, _euclidean_dist and _pdist_forward, the p-norm distances between rows
 * (p = 0 counts the differing coordinates, p = inf takes the largest difference), in double. */
#include "ref_internal.h"

#include <math.h>

/* The distance of rows a and b (m coordinates) and its bound on track w.
 * For p >= 1 the norm is 1-Lipschitz in its own norm, which the 1-norm
 * bounds: | |d|_p - |d'|_p | <= |d - d'|_1, so the bound is the sum of the
 * differences' bounds (each a DL16 subtraction), then the result's own
 * rounding; the largest (p = inf) likewise.  A count (p = 0) is exact
 * unless a difference could be zero; 0 < p < 1 is not a norm: unbounded. */
static double dist_of(const tens *x, int64_t a, const tens *y, int64_t b, int64_t m, double p, int w, double *eb)
{
    double s = 0, e = 0;
    int flips = 0;
    for (int64_t k = 0; k < m; k++) {
        bv d = ref_bv_sub((bv){ldd(x, a + k), ldb(x, w, a + k), w}, (bv){ldd(y, b + k), ldb(y, w, b + k), w});
        double v = fabs(ldd(x, a + k) - ldd(y, b + k));
        s = p == 0 ? s + (v != 0) : isinf(p) ? fmax(s, v) : p == 1 ? s + v : p == 2 ? s + v * v : s + pow(v, p);
        e += d.e;
        flips |= ref_eb_flips(fabs(d.v), d.e, w);
    }
    double r = p == 0 || isinf(p) || p == 1 ? s : p == 2 ? sqrt(s) : pow(s, 1 / p);
    if (eb)
        *eb = p == 0 ? (flips ? INFINITY : 0) : p < 1 ? INFINITY : ref_eb_store(r, e, w);
    return r;
}

static int dist_p(ex *E, int pos, double *p)
{
    if (ref_arg_num(E, pos, "p", 2, p))
        return -1;
    return *p < 0 || isnan(*p) ? ref_fail(E, "p must not be negative") : 0;
}

static void dist_put(tens *o, int64_t k, const tens *x, int64_t a, const tens *y, int64_t b, int64_t m, double p)
{
    o->f[k] = (float)dist_of(x, a, y, b, m, p, 0, NULL);
    for (int w = 0; o->eb[0] && w < 2; w++) {
        double e;
        dist_of(x, a, y, b, m, p, w, &e);
        o->eb[w][k] = (float)e;
    }
}

/* The flat batch of operand t (rank r, batch dims right-aligned to the
 * output's nb) that output batch bt reads, its extent-1 dims broadcast. */
static int64_t batch_of(const tens *t, int nb, const int64_t *bshape, int64_t bt)
{
    int64_t off = 0, mul = 1;
    for (int i = nb - 1, j = t->rank - 3; i >= 0; i--, j--) {
        int64_t ix = bt % bshape[i];
        bt /= bshape[i];
        if (j >= 0) {
            off += (t->shape[j] == 1 ? 0 : ix) * mul;
            mul *= t->shape[j];
        }
    }
    return off;
}

/* _cdist_forward(x1, x2, p, compute_mode): x1 (B..., P, M), x2 (B..., R, M) -> (B..., P, R), batches broadcast;
 * _euclidean_dist(x1, x2) (euclid): p = 2. */
static int op_cdist(ex *E, int euclid)
{
    const tens *x = ref_arg_tensor(E, 0, "x1"), *y = x ? ref_arg_tensor(E, 1, "x2") : NULL;
    double p = 2;
    if (!y || (!euclid && dist_p(E, 2, &p)))
        return -1;
    int rx = x->rank, ry = y->rank, r = rx > ry ? rx : ry, nb = r - 2;
    if (rx < 2 || ry < 2 || kind_of(x->dtype) != K_F || kind_of(y->dtype) != K_F || x->shape[rx - 1] != y->shape[ry - 1])
        return ref_fail(E, "x1 and x2 must be float rows of equal width");
    int64_t shape[MAXR], P = x->shape[rx - 2], R = y->shape[ry - 2], M = x->shape[rx - 1];
    for (int i = 0; i < nb; i++) {
        int jx = i - (r - rx), jy = i - (r - ry);
        int64_t a = jx >= 0 ? x->shape[jx] : 1, b = jy >= 0 ? y->shape[jy] : 1;
        if (a != b && a != 1 && b != 1)
            return ref_fail(E, "the batch dims of x1 and x2 do not broadcast");
        shape[i] = a == 1 ? b : a;
    }
    shape[r - 2] = P;
    shape[r - 1] = R;
    tens *o = ref_new_result(E, K_F, r, shape);
    for (int64_t k = 0; o && k < o->n; k++) {
        int64_t bt = k / (P * R), i = k / R % P, j = k % R;
        int64_t bx = batch_of(x, nb, shape, bt), by = batch_of(y, nb, shape, bt);
        dist_put(o, k, x, (bx * P + i) * M, y, (by * R + j) * M, M, p);
    }
    return o ? 0 : -1;
}

/* _pdist_forward(self, p=2): self (N, M) -> the N (N - 1) / 2 distances of rows i < j, row-major. */
static int op_pdist(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    double p;
    if (!x || dist_p(E, 1, &p))
        return -1;
    if (x->rank != 2 || kind_of(x->dtype) != K_F)
        return ref_fail(E, "self must be a float matrix");
    int64_t N = x->shape[0], M = x->shape[1], n = N * (N - 1) / 2, k = 0;
    tens *o = ref_new_result(E, K_F, 1, &n);
    if (!o)
        return -1;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = i + 1; j < N; j++, k++)
            dist_put(o, k, x, i * M, x, j * M, M, p);
    return 0;
}

static const ref_op ops[] = {
    {"_cdist_forward", op_cdist, 0},
    {"_euclidean_dist", op_cdist, 1},
    {"_pdist_forward", op_pdist, 0},
};
const ref_ops ref_dist_ops = REF_OPS(ops);
