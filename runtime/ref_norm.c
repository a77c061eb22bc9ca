/* ref_norm.c: reference ops: softmax, log_softmax and layer norm. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

/* The bounds (track w) of log_softmax over one row, as the device
 * computes it: d = x~ - max x~, s = sum exp(d), y = d - log(s), each
 * stored. */
static void log_softmax_bound(const float *x, const float *ex, int64_t D, int64_t st, float *ey, int w)
{
    double m = -INFINITY, emax = 0;
    for (int64_t j = 0; j < D; j++)
        if (!isinf(x[j * st])) {
            m = fmax(m, x[j * st]);
            emax = fmax(emax, ex[j * st]);
        }
    bv mb = {m, emax, w};
    eb_acc acc = {.w = w};
    for (int64_t j = 0; j < D; j++) {
        bv e = ref_bv_fn(U_EXP, ref_bv_sub((bv){x[j * st], ex[j * st], w}, mb));
        ref_acc_add(&acc, e.v, e.e);
    }
    bv ls = ref_bv_fn(U_LOG, ref_acc_sum(&acc));
    for (int64_t j = 0; j < D; j++)
        ey[j * st] = (float)ref_bv_sub(ref_bv_sub((bv){x[j * st], ex[j * st], w}, mb), ls).e;
}

/* _softmax(self, dim, half_to_float), softmax.int(self, dim, dtype=None),
 * _log_softmax, log_softmax.int; computed in double over dim. */
static int op_softmax(ex *E, int logsm)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim = 0;
    int d = 0;
    if (!x || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    int64_t D = x->rank ? x->shape[d] : 1, inner = x->rank ? ref_numel(x->rank - d - 1, x->shape + d + 1) : 1;
    int64_t outer = D && inner ? x->n / (D * inner) : 0;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t b = q * D * inner + i;
            double m = -INFINITY, s = 0;
            for (int w = 0; o->eb[0] && x->f && x->eb[0] && w < 2; w++)
                (logsm ? log_softmax_bound : ref_softmax_bound)(x->f + b, x->eb[w] + b, D, inner, o->eb[w] + b, w);
            for (int64_t j = 0; j < D; j++) {
                double v = ldd(x, b + j * inner);
                if (v > m || isnan(v))
                    m = v;
            }
            /* an infinite max, or the device's stand-in for one (+-2^30:
             * a row masked whole with -inf), makes the row NaN, as
             * inf - inf in PyTorch; any finite one, the stand-in +-2^29
             * for torch.finfo(f32).min included, leaves it uniform */
            if (isinf(m) || fabs(m) == ISA_DL16_INF)
                m = NAN;
            for (int64_t j = 0; j < D; j++)
                s += exp(ldd(x, b + j * inner) - m);
            double ls = log(s);
            for (int64_t j = 0; j < D; j++) {
                double v = ldd(x, b + j * inner) - m;
                o->f[b + j * inner] = (float)(logsm ? v - ls : exp(v) / s);
            }
        }
    return 0;
}

/* The bounds (track w) of one row of a layer norm (cols elements of x
 * from base, weight w and bias b or NULL) into ey, as the device computes
 * it (the compiler's decomposition, each step stored): mean = sum(x) / N,
 * xc = x - mean, var = sum(xc * xc) / N, rstd = rsqrt(var + eps),
 * y = xc * rstd * w + b.  The mean and rstd (values and bounds) too. */
static void layer_norm_bound(const tens *x, int64_t base, int64_t cols, const tens *wt, const tens *b, double eps,
                             int w, float *ey, bv *mean, bv *rstd)
{
    eb_acc s1 = {.w = w}, s2 = {.w = w};
    for (int64_t c = 0; c < cols; c++)
        ref_acc_add(&s1, ldd(x, base + c), ldb(x, w, base + c));
    /* the mean of no element: 0, exact */
    *mean = cols ? ref_bv_div(ref_acc_sum(&s1), ref_bv_k((double)cols)) : ref_bv_k(0);
    for (int64_t c = 0; c < cols; c++) {
        bv xc = ref_bv_sub((bv){ldd(x, base + c), ldb(x, w, base + c), w}, *mean), sq = ref_bv_mul(xc, xc);
        ref_acc_add(&s2, sq.v, sq.e);
    }
    bv var = ref_bv_div(ref_acc_sum(&s2), ref_bv_k((double)cols));
    *rstd = ref_bv_fn(U_RSQRT, ref_bv_add(var, ref_bv_k(eps)));
    for (int64_t c = 0; c < cols; c++) {
        bv y = ref_bv_mul(ref_bv_sub((bv){ldd(x, base + c), ldb(x, w, base + c), w}, *mean), *rstd);
        if (wt)
            y = ref_bv_mul(y, (bv){ldd(wt, c), ldb(wt, w, c), w});
        if (b)
            y = ref_bv_add(y, (bv){ldd(b, c), ldb(b, w, c), w});
        ey[c] = (float)y.e;
    }
}

/* native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd);
 * layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05) -> out */
static int op_layer_norm(ex *E, int native)
{
    const tens *x = ref_arg_tensor(E, 0, "input");
    if (!x)
        return -1;
    int64_t ns[MAXR];
    int cnt;
    double eps = 1e-5;
    if (ref_arg_ints(E, 1, "normalized_shape", ns, &cnt, MAXR) || ref_arg_num(E, 4, "eps", 1e-5, &eps))
        return -1;
    if (cnt < 0 || cnt > x->rank)
        return ref_fail(E, "normalized_shape does not fit a rank-%d input", x->rank);
    int axis = x->rank - cnt;
    for (int i = 0; i < cnt; i++)
        if (x->shape[axis + i] != ns[i])
            return ref_fail(E, "normalized_shape does not match the last %d dims of the input", cnt);
    const tens *w = NULL, *b = NULL;
    const gr_arg *aw = ref_arg(E, 2, "weight"), *abias = ref_arg(E, 3, "bias");
    if (ref_present(aw) && !(w = ref_tensor_of(E, aw, "weight")))
        return -1;
    if (ref_present(abias) && !(b = ref_tensor_of(E, abias, "bias")))
        return -1;
    /* rows from the leading dims: over an empty normalized shape each row
     * still has its mean (0) and rstd (NaN), as in PyTorch */
    int64_t cols = ref_numel(cnt, ns), rows = ref_numel(axis, x->shape);
    if ((w && w->n != cols) || (b && b->n != cols))
        return ref_fail(E, "weight or bias does not have normalized_shape's %lld elements", (long long)cols);
    tens *o = ref_new_result(E, K_F, x->rank, x->shape), *om = NULL, *orstd = NULL;
    if (!o)
        return -1;
    if (native) {
        int64_t sshape[MAXR];
        memcpy(sshape, x->shape, sizeof sshape);
        for (int i = axis; i < x->rank; i++)
            sshape[i] = 1;
        if (!(om = ref_new_result(E, K_F, x->rank, sshape)) || !(orstd = ref_new_result(E, K_F, x->rank, sshape)))
            return -1;
        o = &E->res[E->nres - 3]; /* the array may have moved */
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            mean += ldd(x, base + c);
        mean = cols ? mean / (double)cols : 0;
        for (int64_t c = 0; c < cols; c++) {
            double dv = ldd(x, base + c) - mean;
            var += dv * dv;
        }
        var /= (double)cols;
        double rstd = 1 / sqrt(var + eps);
        for (int64_t c = 0; c < cols; c++) {
            double y = (ldd(x, base + c) - mean) * rstd;
            if (w)
                y *= ldd(w, c);
            if (b)
                y += ldd(b, c);
            o->f[base + c] = (float)y;
        }
        if (native) {
            E->res[E->nres - 2].f[r] = (float)mean;
            E->res[E->nres - 1].f[r] = (float)rstd;
        }
        for (int t = 0; o->eb[0] && t < 2; t++) {
            bv bm, br;
            layer_norm_bound(x, base, cols, w, b, eps, t, o->eb[t] + base, &bm, &br);
            if (native) {
                E->res[E->nres - 2].eb[t][r] = (float)bm.e;
                E->res[E->nres - 1].eb[t][r] = (float)br.e;
            }
        }
    }
    return 0;
}

static const ref_op ops[] = {
    {"_softmax", op_softmax, 0},
    {"softmax", op_softmax, 0},
    {"_log_softmax", op_softmax, 1},
    {"log_softmax", op_softmax, 1},
    {"native_layer_norm", op_layer_norm, 1}, /* (out, mean, rstd) */
    {"layer_norm", op_layer_norm, 0},
};
const ref_ops ref_norm_ops = REF_OPS(ops);
