/* ref_reductions.c: reference ops: reductions over dims (sum, mean, amax, amin, any, all, var, std, logsumexp, ...)
 * and the running sum along one dim (cumsum). */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

enum { R_SUM, R_MEAN, R_AMAX, R_AMIN, R_ANY, R_ALL, R_VAR, R_VAR_MEAN, R_STD, R_STD_MEAN, R_LSE, R_NANSUM };

/* The bound (track w) of logsumexp over a row as the compiler decomposes
 * it: m = amax (a selection), exp(x - m) each stored, their fp32 sum,
 * log, + m.  An infinite or NaN max is exact (the device's stand-in). */
static double lse_bound(const tens *src, int64_t b, int64_t cols, int w)
{
    bv m = {-INFINITY, 0, w};
    for (int64_t c = 0; c < cols; c++) {
        m.v = fmax(m.v, ldd(src, b + c));
        m.e = fmax(m.e, ldb(src, w, b + c));
    }
    if (!isfinite(m.v))
        return 0;
    eb_acc acc = {.w = w};
    for (int64_t c = 0; c < cols; c++) {
        bv e = ref_bv_fn(U_EXP, ref_bv_sub((bv){ldd(src, b + c), ldb(src, w, b + c), w}, m));
        ref_acc_add(&acc, e.v, e.e);
    }
    return ref_bv_add(ref_bv_fn(U_LOG, ref_acc_sum(&acc)), m).e;
}

/* The bound (track w) of one reduction over the cols elements of src
 * from b (the device: sfp.rsum / sfp.rmax over the row, fp32
 * accumulation, one rounding; mean = sum / N; var as the compiler
 * decomposes it); for var also the mean's bound in *mean_e. */
static double reduce_bound(const tens *src, int64_t b, int64_t cols, int op, double corr, kind kr, int w,
                           double *mean_e)
{
    double p = 0;
    switch (op) {
    case R_AMAX: /* a selection: within the largest bound */
    case R_AMIN:
        for (int64_t c = 0; c < cols; c++)
            p = fmax(p, ldb(src, w, b + c));
        return p;
    case R_LSE:
        return lse_bound(src, b, cols, w);
    case R_ANY:
    case R_ALL:
        for (int64_t c = 0; c < cols; c++)
            if (ref_eb_flips(ldd(src, b + c), ldb(src, w, b + c), w))
                return ref_eb_jump(1, w);
        return 0;
    default:
        break;
    }
    eb_acc acc = {.w = w};
    for (int64_t c = 0; c < cols; c++) /* nansum: a NaN is an exact 0 */
        if (op != R_NANSUM || !isnan(ldd(src, b + c)))
            ref_acc_add(&acc, ldd(src, b + c), ldb(src, w, b + c));
    bv sum = ref_acc_sum(&acc);
    if (op == R_NANSUM)
        return sum.e;
    if (op == R_SUM)
        return kr == K_F ? sum.e : w ? sqrt(acc.p) : acc.p;
    bv mean = ref_bv_div(sum, ref_bv_k((double)cols));
    if (mean_e)
        *mean_e = mean.e;
    if (op == R_MEAN)
        return mean.e;
    /* var: the mean, x - mean, its square, their sum, / (N - correction) */
    eb_acc sq = {.w = w};
    for (int64_t c = 0; c < cols; c++) {
        bv xc = ref_bv_sub((bv){ldd(src, b + c), ldb(src, w, b + c), w}, mean);
        bv x2 = ref_bv_mul(xc, xc);
        ref_acc_add(&sq, x2.v, x2.e);
    }
    bv var = ref_bv_div(ref_acc_sum(&sq), ref_bv_k((double)cols - corr));
    return op == R_STD || op == R_STD_MEAN ? ref_bv_fn(U_SQRT, var).e : var.e;
}

/* The shape of a reduction of x over the dims in mask: perm lists the
 * kept dims, then the reduced ones; rows kept elements of cols reduced
 * ones each; the result's shape (1 for a reduced dim when keepdim).
 * Returns whether perm moves a dim. */
static int reduce_shape(const tens *x, const char *mask, int keepdim, int *perm, int64_t *rows, int64_t *cols,
                        int64_t *oshape, int *orank)
{
    int rank = x->rank, np = 0;
    for (int d = 0; d < rank; d++)
        if (!mask[d])
            perm[np++] = d;
    for (int d = 0; d < rank; d++)
        if (mask[d])
            perm[np++] = d;
    *rows = *cols = 1;
    *orank = 0;
    for (int d = 0; d < rank; d++) {
        if (mask[d]) {
            *cols *= x->shape[d];
            if (keepdim)
                oshape[(*orank)++] = 1;
        } else {
            *rows *= x->shape[d];
            oshape[(*orank)++] = x->shape[d];
        }
    }
    int moved = 0;
    for (int i = 0; i < rank; i++)
        moved |= perm[i] != i;
    return moved;
}

/* x with its dims in perm's order, in tmp (freed by the caller). */
static int permuted_copy(ex *E, const tens *x, const int *perm, tens *tmp)
{
    int64_t st[MAXR], pshape[MAXR], pst[MAXR];
    ref_contiguous_strides(x->rank, x->shape, st);
    for (int i = 0; i < x->rank; i++) {
        pshape[i] = x->shape[perm[i]];
        pst[i] = st[perm[i]];
    }
    if (ref_temp_tensor(E, tmp, kind_of(x->dtype), x->rank, pshape))
        return -1;
    ref_strided_copy(x, x->rank, pshape, pst, 0, tmp);
    return 0;
}

/* The result's kind: PyTorch's for op on kind kx, or dtype dt (>= 0). */
static kind reduce_kind(int op, kind kx, int dt)
{
    if (dt >= 0)
        return kind_of((gr_dtype)dt);
    switch (op) {
    case R_SUM:
    case R_NANSUM:
        return kx == K_F ? K_F : K_I;
    case R_AMAX:
    case R_AMIN:
        return kx;
    case R_ANY:
    case R_ALL:
        return K_B;
    default:
        return K_F;
    }
}

/* sum / mean of a row: in double, or exactly in int64 (*iacc) for an
 * integer sum. */
static double row_sum(const tens *src, int64_t b, int64_t cols, int op, kind kx, kind kr, int64_t *iacc)
{
    double acc = 0;
    if (kx == K_F || op == R_MEAN || kr == K_F) {
        for (int64_t c = 0; c < cols; c++)
            if (op != R_NANSUM || !isnan(ldd(src, b + c)))
                acc += ldd(src, b + c);
        if (op == R_MEAN)
            acc /= (double)cols;
        return acc;
    }
    for (int64_t c = 0; c < cols; c++)
        *iacc += src->i[b + c];
    return (double)*iacc;
}

/* amax / amin of a row (a NaN wins), in its own kind (*iacc for integers). */
static double row_extreme(const tens *src, int64_t b, int64_t cols, int op, kind kx, int64_t *iacc)
{
    if (kx == K_F) {
        float m = op == R_AMAX ? -INFINITY : INFINITY;
        for (int64_t c = 0; c < cols; c++) {
            float v = src->f[b + c];
            if (isnan(v) || (op == R_AMAX ? v > m : v < m))
                m = v;
            if (isnan(v))
                break;
        }
        return m;
    }
    *iacc = op == R_AMAX ? INT64_MIN : INT64_MAX;
    for (int64_t c = 0; c < cols; c++) {
        int64_t v = src->i[b + c];
        if (op == R_AMAX ? v > *iacc : v < *iacc)
            *iacc = v;
    }
    return (double)*iacc;
}

/* any / all of a row, as 0 / 1 (also in *iacc). */
static double row_any_all(const tens *src, int64_t b, int64_t cols, int op, int64_t *iacc)
{
    *iacc = op == R_ALL;
    for (int64_t c = 0; c < cols; c++) {
        int nz = ldd(src, b + c) != 0;
        if (op == R_ANY && nz)
            *iacc = 1;
        if (op == R_ALL && !nz)
            *iacc = 0;
    }
    return (double)*iacc;
}

/* var / std of a row: two passes in double; *mean gets the mean. */
static double row_var(const tens *src, int64_t b, int64_t cols, int op, double correction, double *mean)
{
    double m = 0, ss = 0;
    for (int64_t c = 0; c < cols; c++)
        m += ldd(src, b + c);
    m /= (double)cols;
    for (int64_t c = 0; c < cols; c++) {
        double dv = ldd(src, b + c) - m;
        ss += dv * dv;
    }
    double den = (double)cols - correction;
    double acc = ss / (den > 0 ? den : 0);
    *mean = m;
    return op == R_STD || op == R_STD_MEAN ? sqrt(acc) : acc;
}

/* logsumexp of a row: max + log(sum(exp(x - max))) in double; an
 * infinite or NaN max is the result (an empty row: -inf). */
static double row_lse(const tens *src, int64_t b, int64_t cols)
{
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; c++) {
        if (isnan(ldd(src, b + c)))
            return NAN;
        m = fmax(m, ldd(src, b + c));
    }
    if (!isfinite(m))
        return m;
    for (int64_t c = 0; c < cols; c++)
        s += exp(ldd(src, b + c) - m);
    return m + log(s);
}

/* One row's reduction: the value in double, and in *iacc the exact
 * integer of an integer sum, amax, amin, any or all. */
static double reduce_row(const tens *src, int64_t b, int64_t cols, int op, kind kx, kind kr, double correction,
                         int64_t *iacc, double *mean)
{
    *iacc = 0;
    switch (op) {
    case R_SUM:
    case R_MEAN:
    case R_NANSUM:
        return row_sum(src, b, cols, op, kx, kr, iacc);
    case R_AMAX:
    case R_AMIN:
        return row_extreme(src, b, cols, op, kx, iacc);
    case R_ANY:
    case R_ALL:
        return row_any_all(src, b, cols, op, iacc);
    case R_LSE:
        return row_lse(src, b, cols);
    default:
        return row_var(src, b, cols, op, correction, mean);
    }
}

/* x reduced over the dims in mask (op, the correction of var / std, the
 * result's dtype dt or -1): the reduced dims are moved last, then each row
 * is reduced; var_mean also gives the mean. */
static int reduce(ex *E, const tens *x, const char *mask, int keepdim, int op, double correction, int dt)
{
    int perm[MAXR], orank;
    int64_t rows, cols, oshape[MAXR];
    tens tmp = {0};
    const tens *src = x;
    if (reduce_shape(x, mask, keepdim, perm, &rows, &cols, oshape, &orank)) {
        if (permuted_copy(E, x, perm, &tmp))
            return -1;
        src = &tmp;
    }
    kind kx = kind_of(x->dtype), kr = reduce_kind(op, kx, dt);
    tens *o = ref_new_result(E, kr, orank, oshape), *o2 = NULL;
    int two = op == R_VAR_MEAN || op == R_STD_MEAN; /* (var or std, mean) */
    if (o && two)
        o2 = ref_new_result(E, K_F, orank, oshape);
    if (!o || (two && !o2)) {
        ref_tfree(&tmp);
        return -1;
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = r * cols, iacc;
        double mean = 0, acc = reduce_row(src, b, cols, op, kx, kr, correction, &iacc, &mean);
        if (o2)
            o2->f[r] = (float)mean;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double me = 0;
            o->eb[w][r] = (float)reduce_bound(src, b, cols, op, correction, kr, w, &me);
            if (o2)
                o2->eb[w][r] = (float)me;
        }
        if (kr == K_F)
            o->f[r] = (float)acc;
        else if (kr == K_B)
            o->i[r] = acc != 0;
        else
            o->i[r] = (op == R_SUM || op == R_AMAX || op == R_AMIN) && kx != K_F ? iacc : (int64_t)acc;
    }
    ref_tfree(&tmp);
    return 0;
}

/* The reduced-dims mask from a dim argument: a list, one int, or None /
 * absent / [] for all dims. */
static int dims_mask(ex *E, const tens *x, int pos, const char *key, char *mask)
{
    int64_t dims[MAXR];
    int cnt;
    if (ref_arg_ints(E, pos, key, dims, &cnt, MAXR))
        return -1;
    memset(mask, 0, MAXR);
    if (cnt <= 0) {
        memset(mask, 1, (size_t)x->rank);
        return 0;
    }
    for (int i = 0; i < cnt; i++) {
        int d = 0;
        if (ref_norm_dim(E, dims[i], x->rank, &d))
            return -1;
        if (x->rank && mask[d])
            return ref_fail(E, "dim %d appears twice", d);
        if (x->rank)
            mask[d] = 1;
    }
    return 0;
}

/* sum(self, dim=None, keepdim=False, dtype=None), mean, amax(self, dim=[],
 * keepdim=False), amin, any(self) / any.dim(self, dim, keepdim=False), all */
static int op_reduce(ex *E, int op)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    char mask[MAXR];
    int keep = 0, dt = -1;
    /* sum.default(self, dtype=None) and mean.default: dtype is positional 1 */
    const gr_arg *a1 = ref_arg(E, 1, NULL);
    if (a1 && a1->kind == GR_ARG_DTYPE) {
        memset(mask, 1, MAXR);
        dt = (int)a1->i;
    } else {
        if (dims_mask(E, x, 1, "dim", mask) || ref_arg_bool(E, 2, "keepdim", 0, &keep))
            return -1;
        if ((op == R_SUM || op == R_MEAN || op == R_NANSUM) && ref_arg_dtype(E, 3, "dtype", &dt))
            return -1;
    }
    if (dt < 0 && (op == R_SUM || op == R_MEAN || op == R_NANSUM) && ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    return reduce(E, x, mask, keep, op, 0, dt);
}

/* var(self, dim=None, correction=None, keepdim=False) (.correction),
 * var.dim(self, dim, unbiased=True, keepdim=False), var.default(self, unbiased=True);
 * var_mean likewise, giving (var, mean). */
static int op_var(ex *E, int op)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    char mask[MAXR];
    int keep = 0;
    double corr = 1;
    const gr_arg *a1 = ref_arg(E, 1, NULL);
    const char *ov = ref_overload(E->node);
    if (a1 && a1->kind == GR_ARG_BOOL) { /* var.default(self, unbiased) */
        memset(mask, 1, MAXR);
        corr = a1->i ? 1 : 0;
    } else if (dims_mask(E, x, 1, "dim", mask)) {
        return -1;
    } else if (strcmp(ov, "dim") == 0) { /* var.dim(self, dim, unbiased=True, keepdim=False) */
        int unbiased = 1;
        if (ref_arg_bool(E, 2, "unbiased", 1, &unbiased) || ref_arg_bool(E, 3, "keepdim", 0, &keep))
            return -1;
        corr = unbiased;
    } else { /* .correction(self, dim=None, *, correction=None, keepdim=False) */
        if (ref_arg_num(E, -1, "correction", 1, &corr) || ref_arg_bool(E, -1, "keepdim", 0, &keep))
            return -1;
    }
    return reduce(E, x, mask, keep, op, corr, -1);
}

/* One line of cumsum: n elements of x from b, st apart, into o; a float
 * sum in double, an integer one exact.  The bounds are a sum's over the
 * prefix (fp32 accumulation, each prefix stored once). */
static void cumsum_line(const tens *x, tens *o, int64_t b, int64_t n, int64_t st)
{
    double s = 0;
    int64_t is = 0;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}};
    for (int64_t k = 0, j = b; k < n; k++, j += st) {
        s += ldd(x, j);
        is += ldi(x, j);
        if (o->f)
            o->f[j] = (float)s;
        else
            o->i[j] = kind_of(x->dtype) == K_F ? (int64_t)s : is;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            ref_acc_add(&acc[w], ldd(x, j), ldb(x, w, j));
            o->eb[w][j] = (float)(o->f ? ref_acc_sum(&acc[w]).e : w ? sqrt(acc[w].p) : acc[w].p);
        }
    }
}

/* cumsum(self, dim, *, dtype=None): the running sum along dim; an integer
 * or bool tensor sums to int64 as in PyTorch. */
static int op_cumsum(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim;
    int d = 0, dt = -1;
    if (!x || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d) ||
        ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind kx = kind_of(x->dtype), kr = dt >= 0 ? kind_of((gr_dtype)dt) : kx == K_F ? K_F : K_I;
    tens *o = ref_new_result(E, kr == K_B ? K_I : kr, x->rank, x->shape);
    if (!o)
        return -1;
    int64_t n = x->rank ? x->shape[d] : 1, inner = 1, outer = 1;
    for (int i = 0; i < x->rank; i++)
        *(i < d ? &outer : &inner) *= i == d ? 1 : x->shape[i];
    for (int64_t out = 0; out < outer; out++)
        for (int64_t in = 0; in < inner; in++)
            cumsum_line(x, o, out * n * inner + in, n, inner);
    return 0;
}

static const ref_op ops[] = {
    /* reductions (accumulated in double) */
    {"sum", op_reduce, R_SUM},
    {"mean", op_reduce, R_MEAN},
    {"amax", op_reduce, R_AMAX},
    {"amin", op_reduce, R_AMIN},
    {"any", op_reduce, R_ANY},
    {"all", op_reduce, R_ALL},
    {"var", op_var, R_VAR},              /* correction (default 1) or unbiased */
    {"var_mean", op_var, R_VAR_MEAN},    /* (var, mean) */
    {"std", op_var, R_STD},              /* sqrt(var) */
    {"std_mean", op_var, R_STD_MEAN},    /* (std, mean) */
    {"logsumexp", op_reduce, R_LSE},
    {"nansum", op_reduce, R_NANSUM},     /* sum, NaNs as 0 */     /* max + log(sum(exp(x - max))) */
    {"cumsum", op_cumsum, 0},            /* running sum along one dim */
};
const ref_ops ref_reductions_ops = REF_OPS(ops);
