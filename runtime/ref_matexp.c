/* ref_matexp.c: reference op: linalg_matrix_exp of square matrices (batched), by scaling and squaring with a
 * Taylor series in double; fallback only, its result not validated (an infinite bound). */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* c = a b, n x n. */
static void mat_mul(const double *a, const double *b, double *c, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}

/* exp(A) of one matrix (a: n x n, overwritten; t, u scratch): A / 2^s with
 * its 1-norm at most 1/2, then 24 Taylor terms (error below 2^-53
 * relative), then s squarings. */
static void mat_exp(double *a, double *r, double *t, double *u, int64_t n)
{
    double nrm = 0;
    for (int64_t j = 0; j < n; j++) {
        double c = 0;
        for (int64_t i = 0; i < n; i++)
            c += fabs(a[i * n + j]);
        nrm = fmax(nrm, c);
    }
    int s = nrm > 0.5 && isfinite(nrm) ? (int)ceil(log2(nrm / 0.5)) : 0;
    for (int64_t k = 0; k < n * n; k++) {
        a[k] = ldexp(a[k], -s);
        r[k] = t[k] = (k % (n + 1) == 0);
    }
    for (int m = 1; m <= 24; m++) {
        mat_mul(t, a, u, n);
        for (int64_t k = 0; k < n * n; k++) {
            t[k] = u[k] / m;
            r[k] += t[k];
        }
    }
    for (int q = 0; q < s; q++) {
        mat_mul(r, r, u, n);
        memcpy(r, u, sizeof *r * (size_t)(n * n));
    }
}

/* linalg_matrix_exp(self) */
static int op_matrix_exp(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (x->rank < 2 || x->shape[x->rank - 1] != x->shape[x->rank - 2] || kind_of(x->dtype) != K_F)
        return ref_fail(E, "runs float square matrices only");
    int64_t n = x->shape[x->rank - 1], nn = n * n;
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    double *w = o && nn ? malloc(sizeof(double) * (size_t)(4 * nn)) : NULL;
    if (!o || (nn && !w))
        return o ? ref_fail(E, "out of memory") : -1;
    for (int64_t b = 0; nn && b < x->n / nn; b++) {
        for (int64_t k = 0; k < nn; k++)
            w[k] = ldd(x, b * nn + k);
        mat_exp(w, w + nn, w + 2 * nn, w + 3 * nn, n);
        for (int64_t k = 0; k < nn; k++) {
            o->f[b * nn + k] = (float)w[nn + k];
            for (int t = 0; o->eb[0] && t < 2; t++)
                o->eb[t][b * nn + k] = INFINITY;
        }
    }
    free(w);
    return 0;
}

static const ref_op ops[] = {
    {"linalg_matrix_exp", op_matrix_exp, 0},
};
const ref_ops ref_matexp_ops = REF_OPS(ops);
