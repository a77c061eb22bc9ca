/* ref_vecnorm.c: reference ops that reduce lines by a norm or a product: linalg_vector_norm, norm, dist,
 * prod, count_nonzero, trace.
 *
 * Error bounds: a p-norm (p != 0) is increasing in every |x_i| (also for
 * p < 0, a generalised mean), so over the elements' intervals it lies
 * between the norm of the lower ends max(0, |x| - lambda E) and that of
 * the upper ends |x| + lambda E: the larger distance to those, over
 * lambda, then the result's rounding (an fp32 sum of n terms: n 2^-23 of
 * the value, and the DL16 store).  A count (p = 0, count_nonzero) moves by
 * at most the number of elements that may be zero or not: a jump of that
 * count.  A product: a stored product per factor, as cumprod. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Lines of a reduction ---- */

/* x with the dims in mask moved last (a copy with bounds), as rows of
 * cols elements; the result's shape in oshape / orank. */
static int reduce_lines(ex *E, const tens *x, const char *mask, int keepdim, tens *tmp, int64_t *rows, int64_t *cols,
                        int64_t *oshape, int *orank)
{
    int perm[MAXR], np = 0;
    int64_t st[MAXR], pshape[MAXR], pst[MAXR];
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < x->rank; d++)
            if (!mask[d] == !pass)
                perm[np++] = d;
    ref_contiguous_strides(x->rank, x->shape, st);
    *rows = *cols = 1;
    *orank = 0;
    for (int i = 0; i < x->rank; i++) {
        pshape[i] = x->shape[perm[i]];
        pst[i] = st[perm[i]];
        *(mask[i] ? cols : rows) *= x->shape[i];
        if (!mask[i] || keepdim)
            oshape[(*orank)++] = mask[i] ? 1 : x->shape[i];
    }
    if (ref_temp_tensor(E, tmp, kind_of(x->dtype), x->rank, pshape))
        return -1;
    if (tmp->n)
        ref_strided_copy(x, x->rank, pshape, pst, 0, tmp);
    return 0;
}

/* The reduced-dims mask of a dim argument: a list, an int, or None / [] for all. */
static int dims_mask(ex *E, const tens *x, int pos, const char *key, char *mask)
{
    int64_t dims[MAXR];
    int cnt;
    memset(mask, 0, MAXR);
    if (ref_arg_ints(E, pos, key, dims, &cnt, MAXR))
        return -1;
    if (cnt <= 0)
        memset(mask, 1, (size_t)x->rank);
    for (int i = 0; i < cnt; i++) {
        int d;
        if (ref_norm_dim(E, dims[i], x->rank, &d))
            return -1;
        if (x->rank && mask[d])
            return ref_fail(E, "dim %d appears twice", d);
        mask[d] = x->rank > 0;
    }
    return 0;
}

/* ---- Norms ---- */

/* The p-norm of n magnitudes a[k] st apart; max for p = inf, min for
 * -inf, the count of nonzeros for 0. */
static double pnorm(const double *a, int64_t n, double p)
{
    double s = p == -INFINITY ? INFINITY : 0, m = 0;
    for (int64_t k = 0; k < n; k++)
        m = fmax(m, a[k]);
    for (int64_t k = 0; k < n; k++) {
        if (isnan(a[k]))
            return NAN;
        if (p == INFINITY)
            s = fmax(s, a[k]);
        else if (p == -INFINITY)
            s = fmin(s, a[k]);
        else if (p == 0)
            s += a[k] != 0;
        else if (m > 0 && isfinite(m)) /* scaled by the largest: no overflow, no underflow */
            s += pow(a[k] / m, p);
        else if (a[k] != 0 || p > 0)
            s += pow(a[k], p);
    }
    if (p == INFINITY || p == -INFINITY || p == 0)
        return s;
    if (m > 0 && isfinite(m))
        return m * pow(s, 1 / p);
    return pow(s, 1 / p);
}

/* One row of cols elements of t from b: its norm, and in eb[w] (eb NULL:
 * none) how far the norm moves over the elements' bounds (track w);
 * scratch holds 3 cols doubles. */
static double norm_row(const tens *t, int64_t b, int64_t cols, double p, double *scratch, double *eb)
{
    double *a = scratch, *lo = scratch + cols, *hi = scratch + 2 * cols;
    for (int64_t k = 0; k < cols; k++)
        a[k] = fabs(ldd(t, b + k));
    double v = pnorm(a, cols, p);
    for (int w = 0; eb && w < 2; w++) {
        double L = ref_eb_lam(w);
        for (int64_t k = 0; k < cols; k++) {
            double r = L * ldb(t, w, b + k);
            lo[k] = r > 0 ? fmax(0, a[k] - r) : a[k];
            hi[k] = r > 0 ? a[k] + r : a[k];
        }
        double d = fmax(pnorm(hi, cols, p) - v, v - pnorm(lo, cols, p)) / L;
        eb[w] = !isfinite(v) ? 0 : isnan(d) ? INFINITY : d;
    }
    return v;
}

/* The norm of x over the dims in mask into a new result. */
static int norm_of(ex *E, const tens *x, double p, const char *mask, int keep, kind kr)
{
    tens tmp;
    int64_t rows, cols, oshape[MAXR];
    int orank;
    if (reduce_lines(E, x, mask, keep, &tmp, &rows, &cols, oshape, &orank))
        return -1;
    tens *o = ref_new_result(E, kr, orank, oshape);
    double *scratch = malloc((size_t)(3 * cols + 1) * sizeof *scratch);
    if (!o || !scratch) {
        free(scratch);
        ref_tfree(&tmp);
        return o ? ref_fail(E, "out of host memory") : -1;
    }
    if (cols == 0 && (p == INFINITY || p == -INFINITY) && rows) {
        free(scratch);
        ref_tfree(&tmp);
        return ref_fail(E, "the infinity norm of an empty dim");
    }
    for (int64_t r = 0; r < rows; r++) {
        double eb[2];
        double v = norm_row(&tmp, r * cols, cols, p, scratch, o->eb[0] ? eb : NULL);
        if (o->f)
            o->f[r] = (float)v;
        else
            o->i[r] = (int64_t)v;
        for (int w = 0; o->eb[0] && w < 2; w++) /* a count is exact but for its jump; a norm is an fp32 sum, stored */
            o->eb[w][r] = (float)(kr != K_F || !isfinite(v) ? eb[w] : ref_eb_store(v, eb[w] + (double)cols * EB_ACC * v, w));
    }
    free(scratch);
    ref_tfree(&tmp);
    return 0;
}

/* The order argument: a number, inf / -inf, or absent (def). */
static int ord_arg(ex *E, int pos, const char *key, double def, double *p)
{
    const gr_arg *a = ref_arg(E, pos, key);
    kind k;
    if (!ref_present(a)) {
        *p = def;
        return 0;
    }
    if (a->kind == GR_ARG_STR) { /* "fro" of norm: the 2-norm */
        if (strcmp(a->s, "fro") == 0) {
            *p = 2;
            return 0;
        }
        return ref_fail(E, "norm of order \"%s\"", a->s);
    }
    return ref_num_of(E, a, key, p, &k);
}

enum { N_VECTOR, N_NORM };

/* linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None);
 * norm.Scalar(self, p=2), norm.ScalarOpt_dim(self, p, dim, keepdim=False) */
static int op_norm(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    double p;
    char mask[MAXR];
    int keep;
    if (!x || ord_arg(E, 1, how == N_VECTOR ? "ord" : "p", 2, &p) || dims_mask(E, x, 2, "dim", mask) ||
        ref_arg_bool(E, 3, "keepdim", 0, &keep))
        return -1;
    return norm_of(E, x, p, mask, keep, K_F);
}

/* dist(self, other, p=2): the p-norm of self - other (broadcast), the
 * difference a stored subtraction */
static int op_dist(ex *E, int unused)
{
    (void)unused;
    const tens *a = ref_arg_tensor(E, 0, "self"), *b = a ? ref_arg_tensor(E, 1, "other") : NULL;
    double p;
    int rank, rc;
    int64_t shape[MAXR];
    tens d;
    const tens *ts[2] = {a, b};
    if (!b || ord_arg(E, 2, "p", 2, &p) || ref_bcast(E, 2, ts, &rank, shape) || ref_temp_tensor(E, &d, K_F, rank, shape))
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0; k < d.n; k++, iter_next(&it)) {
        double u = ldd(a, it.off[0]), v = ldd(b, it.off[1]);
        d.f[k] = (float)(u - v);
        for (int w = 0; d.eb[0] && w < 2; w++)
            d.eb[w][k] = (float)ref_bv_sub((bv){u, ldb(a, w, it.off[0]), w}, (bv){v, ldb(b, w, it.off[1]), w}).e;
    }
    char mask[MAXR];
    memset(mask, 1, MAXR);
    rc = norm_of(E, &d, p, mask, 0, K_F);
    ref_tfree(&d);
    return rc;
}

/* count_nonzero(self, dim=None) / .dim_IntList(self, dim): an int64 count */
static int op_count_nonzero(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    char mask[MAXR];
    if (!x || dims_mask(E, x, 1, "dim", mask))
        return -1;
    return norm_of(E, x, 0, mask, 0, K_I);
}

/* renorm's factor for a sub-tensor of norm n: maxnorm / (n + 1e-7) above maxnorm, else 1 */
static double renorm_factor(double n, double maxnorm) { return n > maxnorm ? maxnorm / (n + 1e-7) : 1; }

/* renorm(self, p, dim, maxnorm): each sub-tensor along dim whose p-norm
 * exceeds maxnorm scaled down to it.  The factor c(n) falls as the norm
 * grows, so over the norm's interval it lies in [c(n + lambda d), c(n -
 * lambda d)]: |c~ x~ - c x| <= c_hi lambda E + |x| |c~ - c|, over lambda,
 * then the product's store; a sub-tensor that stays below maxnorm is
 * moved exactly. */
static int op_renorm(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    double p, maxnorm;
    int64_t dim;
    int d;
    if (!x || ref_arg_num(E, 1, "p", 2, &p) || ref_arg_req_int(E, 2, "dim", &dim) ||
        ref_arg_num(E, 3, "maxnorm", 0, &maxnorm) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    if (x->rank < 2 || p <= 0)
        return ref_fail(E, "renorm needs rank >= 2 and p > 0");
    char mask[MAXR];
    memset(mask, 1, MAXR);
    mask[d] = 0;
    tens tmp;
    int64_t rows, cols, oshape[MAXR];
    int orank;
    if (reduce_lines(E, x, mask, 0, &tmp, &rows, &cols, oshape, &orank))
        return -1;
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    double *scratch = malloc((size_t)(3 * cols + 1) * sizeof *scratch), *nb = malloc((size_t)(3 * rows + 1) * sizeof *nb);
    if (!o || !scratch || !nb) {
        free(scratch);
        free(nb);
        ref_tfree(&tmp);
        return o ? ref_fail(E, "out of host memory") : -1;
    }
    for (int64_t r = 0; r < rows; r++) /* per sub-tensor: its norm, and how far it moves (two tracks) */
        nb[3 * r] = norm_row(&tmp, r * cols, cols, p, scratch, &nb[3 * r + 1]);
    int64_t inner = ref_numel(x->rank - d - 1, x->shape + d + 1);
    for (int64_t k = 0; k < x->n; k++) {
        int64_t r = (k / inner) % x->shape[d];
        double n = nb[3 * r], c = renorm_factor(n, maxnorm), v = ldd(x, k);
        o->f[k] = (float)(v * c);
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double L = ref_eb_lam(w), dn = L * nb[3 * r + 1 + w], e = ldb(x, w, k);
            double chi = renorm_factor(fmax(0, n - dn), maxnorm), clo = renorm_factor(n + dn, maxnorm);
            double dc = fmax(chi - c, c - clo);
            o->eb[w][k] = (float)(c == 1 && clo == 1 ? e : ref_eb_store(v * c, chi * e + fabs(v) * dc / L, w));
        }
    }
    free(scratch);
    free(nb);
    ref_tfree(&tmp);
    return 0;
}

/* _weight_norm_interface(v, g, dim=0) -> (v * g / norm, norm), norm the 2-norm of v over every
 * dim but dim (kept; dim -1: all of v).  The factor c = g / n lies, over g's and n's intervals,
 * within dc of c: |c~ v~ - c v| <= (|c| + dc) lambda E + |v| dc, over lambda, then the store. */
static int op_weight_norm(ex *E, int unused)
{
    (void)unused;
    const tens *v = ref_arg_tensor(E, 0, "v"), *g = ref_arg_tensor(E, 1, "g");
    int64_t dim;
    int d = -1;
    if (!v || !g || ref_arg_int(E, 2, "dim", 0, &dim) || (dim != -1 && ref_norm_dim(E, dim, v->rank, &d)))
        return -1;
    char mask[MAXR];
    memset(mask, 1, MAXR);
    if (d >= 0)
        mask[d] = 0;
    int64_t rows = d >= 0 ? v->shape[d] : 1, inner = d >= 0 ? ref_numel(v->rank - d - 1, v->shape + d + 1) : 1;
    if (g->n != rows)
        return ref_fail(E, "g has %lld elements, not one per slice of v along dim", (long long)g->n);
    if (!ref_new_result(E, K_F, v->rank, v->shape) || norm_of(E, v, 2, mask, d >= 0, K_F))
        return -1;
    tens *o = &E->res[E->nres - 2], *nr = &E->res[E->nres - 1]; /* the array may have moved */
    for (int64_t k = 0; k < v->n; k++) {
        int64_t r = (k / inner) % rows;
        double n = nr->f[r], gv = ldd(g, r), c = gv / n, x = ldd(v, k);
        o->f[k] = (float)(x * c);
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double L = ref_eb_lam(w), dn = L * ldb(nr, w, r);
            double dc = n > dn ? (fabs(gv) + L * ldb(g, w, r)) / (n - dn) - fabs(c) : INFINITY;
            o->eb[w][k] = (float)ref_eb_store(x * c, (fabs(c) + dc) * ldb(v, w, k) + fabs(x) * dc / L, w);
        }
    }
    return 0;
}

/* ---- Products ---- */

/* prod(self, *, dtype=None), prod.dim_int(self, dim, keepdim=False, *, dtype=None) */
static int op_prod(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    char mask[MAXR];
    int keep = 0, dt;
    memset(mask, 1, MAXR);
    if (!x || ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    if (strcmp(ref_overload(E->node), "default") != 0 &&
        (dims_mask(E, x, 1, "dim", mask) || ref_arg_bool(E, 2, "keepdim", 0, &keep)))
        return -1;
    kind kx = kind_of(x->dtype), kr = dt >= 0 ? kind_of((gr_dtype)dt) : kx == K_F ? K_F : K_I;
    tens tmp;
    int64_t rows, cols, oshape[MAXR];
    int orank;
    if (reduce_lines(E, x, mask, keep, &tmp, &rows, &cols, oshape, &orank))
        return -1;
    tens *o = ref_new_result(E, kr == K_B ? K_I : kr, orank, oshape);
    for (int64_t r = 0; o && r < rows; r++) {
        bv p[2] = {{1, 0, 0}, {1, 0, 1}};
        int64_t ip = 1;
        for (int64_t k = 0, j = r * cols; k < cols; k++, j++) {
            for (int w = 0; w < 2; w++) {
                bv xk = {ldd(&tmp, j), ldb(&tmp, w, j), w};
                p[w] = k ? ref_bv_mul(p[w], xk) : xk;
            }
            ip *= ldi(&tmp, j);
        }
        if (o->f)
            o->f[r] = (float)p[0].v;
        else
            o->i[r] = kx == K_F ? (int64_t)p[0].v : ip;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][r] = (float)(isnan(p[w].e) ? INFINITY : p[w].e);
    }
    ref_tfree(&tmp);
    return o ? 0 : -1;
}

/* trace(self): the sum of a matrix's diagonal (`sum`'s bound) */
static int op_trace(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (x->rank != 2)
        return ref_fail(E, "trace of a rank-%d tensor", x->rank);
    kind kx = kind_of(x->dtype), kr = kx == K_F ? K_F : K_I;
    int64_t none[1] = {0};
    tens *o = ref_new_result(E, kr, 0, none);
    if (!o)
        return -1;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}};
    int64_t n = x->shape[0] < x->shape[1] ? x->shape[0] : x->shape[1], is = 0;
    double s = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = k * x->shape[1] + k;
        s += ldd(x, j);
        is += ldi(x, j);
        for (int w = 0; w < 2; w++)
            ref_acc_add(&acc[w], ldd(x, j), ldb(x, w, j));
    }
    if (o->f)
        o->f[0] = (float)s;
    else
        o->i[0] = is;
    for (int w = 0; o->eb[0] && w < 2; w++)
        o->eb[w][0] = (float)(kr == K_F ? ref_acc_sum(&acc[w]).e : w ? sqrt(acc[w].p) : acc[w].p);
    return 0;
}

static const ref_op ops[] = {
    {"linalg_vector_norm", op_norm, N_VECTOR}, /* ord: any number, inf, -inf, 0 */
    {"norm", op_norm, N_NORM},                 /* .Scalar, .ScalarOpt_dim; p "fro" is 2 */
    {"dist", op_dist, 0},                      /* ||self - other||_p */
    {"count_nonzero", op_count_nonzero, 0},
    {"prod", op_prod, 0},
    {"trace", op_trace, 0},
    {"renorm", op_renorm, 0},                  /* sub-tensors along dim scaled to a norm <= maxnorm */
    {"_weight_norm_interface", op_weight_norm, 0}, /* nn.utils.weight_norm's weight */
};
const ref_ops ref_vecnorm_ops = REF_OPS(ops);
