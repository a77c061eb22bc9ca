/* ref_linalg.c: reference linear algebra through LAPACK (LAPACKE, fp32): inverse, solve, LU, determinant,
 * log-determinant, Cholesky, symmetric eigenvalues (eigh, symeig), SVD, QR, and the cross product.
 *
 * LAPACK, not factorizations of our own: a well-kept library, and the one
 * PyTorch calls, so the conventions agree (LU pivots 1-based int32 as
 * LAPACK gives them, R of QR with LAPACK's signs, eigenvalues ascending,
 * singular values descending).  A batch (leading dims) runs matrix by
 * matrix.  The ops run only on the host (fallback-only).
 *
 * Error bounds (E: the input's bound in track w, lambda its scale):
 * - inverse and solve X = A^-1 B: X~ - X = A^-1 (dB - dA X~), so with M =
 *   |A^-1| (lambda E_A + H) and v = |A^-1| ((lambda E_A + H) |X| + lambda E_B),
 *   where mu = ||M||_inf < 1, every column j gives |dX_ij| <= v_ij + mu / (1 - mu)
 *   max_i v_ij (the Neumann series); H = 3 n 2^-24 |L||U| is the LU solve's
 *   backward error (Higham, Accuracy and Stability, Thm 9.4), so a bound
 *   also covers another fp32 LAPACK's answer; over lambda, then the store.
 * - determinant: det(A + dA) = det A det(I + A^-1 dA), and |det(I + F) - 1|
 *   <= prod_i (1 + r_i) - 1 for F's row sums r_i of |F| (each term of the
 *   expansion over rows is at most the product of its rows' norms,
 *   Hadamard); log|det| moves by at most max(log(1 + P), -log(1 - P)), and
 *   the sign may flip (a jump of 2) only when P >= 1.
 * - eigenvalues of a symmetric matrix and singular values: Weyl, |d lambda_i|
 *   <= ||dA||_2 <= ||lambda E||_F (the read triangle mirrored), plus the
 *   solver's backward error n 2^-23 ||A||_F.
 * - the factors (L, U, pivots, Q, R, eigenvectors, U, V of the SVD, a
 *   Cholesky factor) are not unique under perturbation (signs, pivot
 *   choices, degenerate subspaces): their bounds are infinite, and --check
 *   does not validate them. */
#include "ref_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Matrices of a batch ---- */

/* A result of x's batch dims then the given last dims (nlast of them). */
static tens *batched_result(ex *E, const tens *x, kind k, int nlast, int64_t d0, int64_t d1)
{
    int64_t shape[MAXR];
    int r = x->rank - 2;
    memcpy(shape, x->shape, (size_t)r * sizeof *shape);
    if (nlast > 0)
        shape[r++] = d0;
    if (nlast > 1)
        shape[r++] = d1;
    return ref_new_result(E, k, r, shape);
}

/* The n elements of matrix b of x from element offset b * n, as floats (or doubles). */
static void load(const tens *x, int64_t off, int64_t n, float *a)
{
    for (int64_t k = 0; k < n; k++)
        a[k] = ldf(x, off + k);
}

/* The bounds of o from element off, n of them: infinite (not validated). */
static void unbounded(tens *o, int64_t off, int64_t n)
{
    for (int w = 0; o->eb[0] && w < 2; w++)
        for (int64_t k = 0; k < n; k++)
            o->eb[w][off + k] = INFINITY;
}

/* Results refer into E->res, which grows: the i-th result of this node. */
static tens *res(ex *E, int first, int i) { return &E->res[first + i]; }

/* ---- LU: inverse, solve, factor, determinant ---- */

/* H = 3 n 2^-24 |L||U| from the packed LU of an n x n matrix (doubles, n * n). */
static void lu_backward(const float *lu, int64_t n, double *h)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t k = 0; k <= (i < j ? i : j); k++)
                s += (k == i ? 1 : fabs(lu[i * n + k])) * fabs(lu[k * n + j]);
            h[i * n + j] = 3 * (double)n * 0x1p-24 * s;
        }
}

/* One matrix's LU pieces for the bounds: |A^-1| and P = lambda E_A + H per track. */
typedef struct {
    int64_t n;
    float *a, *lu, *inv; /* A, its packed LU, its inverse */
    lapack_int *piv;
    int info;
    double *ai, *h, *P; /* |A^-1|, H, P */
} lu_t;

static void lu_free(lu_t *f)
{
    free(f->a);
    free(f->lu);
    free(f->inv);
    free(f->piv);
    free(f->ai);
    free(f->h);
    free(f->P);
}

/* Factor matrix at element off of x (n x n): LU, and with bounds its inverse, |A^-1|, H. */
static int lu_of(ex *E, const tens *x, int64_t off, int64_t n, lu_t *f)
{
    size_t nn = (size_t)(n * n + 1);
    memset(f, 0, sizeof *f);
    f->n = n;
    f->a = malloc(nn * sizeof *f->a);
    f->lu = malloc(nn * sizeof *f->lu);
    f->inv = malloc(nn * sizeof *f->inv);
    f->piv = malloc((size_t)(n + 1) * sizeof *f->piv);
    f->ai = malloc(nn * sizeof *f->ai);
    f->h = malloc(nn * sizeof *f->h);
    f->P = malloc(nn * sizeof *f->P);
    if (!f->a || !f->lu || !f->inv || !f->piv || !f->ai || !f->h || !f->P) {
        lu_free(f);
        return ref_fail(E, "out of host memory");
    }
    load(x, off, n * n, f->a);
    memcpy(f->lu, f->a, (size_t)(n * n) * sizeof *f->lu);
    f->info = n ? LAPACKE_sgetrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, f->lu, (lapack_int)n, f->piv) : 0;
    memcpy(f->inv, f->lu, (size_t)(n * n) * sizeof *f->inv);
    if (n && f->info == 0 && LAPACKE_sgetri(LAPACK_ROW_MAJOR, (lapack_int)n, f->inv, (lapack_int)n, f->piv))
        f->info = -1;
    for (int64_t k = 0; f->info == 0 && k < n * n; k++)
        f->ai[k] = fabs(f->inv[k]);
    lu_backward(f->lu, n, f->h);
    return 0;
}

/* P = lambda E_A + H for track w. */
static void lu_perturb(lu_t *f, const tens *x, int64_t off, int w)
{
    for (int64_t k = 0; k < f->n * f->n; k++)
        f->P[k] = ref_eb_lam(w) * ldb(x, w, off + k) + f->h[k];
}

/* Writes a matrix (n * m floats) into o at off, with X's solve bounds
 * (or infinite ones when the matrix is singular). */
static void put_solution(lu_t *f, const tens *A, int64_t aoff, const float *X, int64_t m, const tens *B, int64_t boff,
                         tens *o, int64_t off)
{
    int64_t n = f->n;
    for (int64_t k = 0; k < n * m; k++)
        o->f[off + k] = X[k];
    double *out = o->eb[0] ? malloc((size_t)(n * m + 1) * sizeof *out) : NULL;
    double *eb = out && B ? malloc((size_t)(n * m + 1) * sizeof *eb) : NULL;
    for (int w = 0; o->eb[0] && w < 2; w++) {
        if (!out || f->info || (B && !eb)) {
            unbounded(o, off, n * m);
            break;
        }
        lu_perturb(f, A, aoff, w);
        for (int64_t k = 0; eb && k < n * m; k++)
            eb[k] = ref_eb_lam(w) * ldb(B, w, boff + k);
        ref_solve_bound(n, m, f->ai, f->P, X, eb, ref_eb_lam(w), out);
        for (int64_t k = 0; k < n * m; k++)
            o->eb[w][off + k] = (float)(isfinite(out[k]) ? ref_eb_store(X[k], out[k], w) : INFINITY);
    }
    free(out);
    free(eb);
}

/* LU, pivots (1-based, int32) and info of one matrix into results (unbounded). */
static void put_lu(const lu_t *f, tens *lu, tens *piv, tens *info, int64_t b)
{
    int64_t n = f->n;
    for (int64_t k = 0; lu && k < n * n; k++)
        lu->f[b * n * n + k] = f->lu[k];
    for (int64_t k = 0; piv && k < n; k++)
        piv->i[b * n + k] = f->piv[k];
    if (info)
        info->i[b] = f->info > 0 ? f->info : 0;
    if (lu)
        unbounded(lu, b * n * n, n * n);
    if (piv)
        unbounded(piv, b * n, n);
    if (info)
        unbounded(info, b, 1);
}

enum { L_INV, L_LU, L_DET, L_SLOGDET };

/* det of one factored matrix, and its perturbation bound P (track w, before lambda). */
static double det_of(const lu_t *f, double *P, const tens *x, int64_t off, int w)
{
    double d = 1;
    for (int64_t i = 0; i < f->n; i++)
        d *= f->lu[i * f->n + i] * (f->piv[i] != i + 1 ? -1 : 1);
    if (!P)
        return d;
    if (f->info) {
        *P = INFINITY;
        return d;
    }
    lu_perturb((lu_t *)f, x, off, w);
    double prod = 1;
    for (int64_t i = 0; i < f->n; i++) {
        double r = 0;
        for (int64_t j = 0; j < f->n; j++)
            for (int64_t k = 0; k < f->n; k++)
                r += f->ai[i * f->n + k] * f->P[k * f->n + j];
        prod *= 1 + r;
    }
    *P = prod - 1;
    return d;
}

static void put_det(ex *E, int first, int how, const lu_t *f, const tens *x, int64_t b)
{
    int64_t n = f->n, off = b * n * n;
    double d = det_of(f, NULL, x, off, 0);
    tens *o = res(E, first, 0);
    if (how == L_DET)
        o->f[b] = (float)d;
    else {
        o->f[b] = (float)(d > 0 ? 1 : d < 0 ? -1 : 0);
        res(E, first, 1)->f[b] = (float)log(fabs(d));
    }
    for (int w = 0; o->eb[0] && w < 2; w++) {
        double P, L = ref_eb_lam(w);
        det_of(f, &P, x, off, w);
        if (how == L_DET) {
            o->eb[w][b] = (float)(isfinite(P) ? ref_eb_store(d, fabs(d) * P / L, w) : INFINITY);
            continue;
        }
        double la = P < 1 ? fmax(log1p(P), -log1p(-P)) / L : INFINITY;
        o->eb[w][b] = (float)(P < 1 || d == 0 ? 0 : ref_eb_jump(2 * (1 + EB_JUMP_MARGIN), w));
        res(E, first, 1)->eb[w][b] = (float)(d == 0 ? 0 : isfinite(la) ? ref_eb_store(log(fabs(d)), la, w) : INFINITY);
    }
}

/* The LU of each r x c matrix of x: (LU, pivots of min(r, c), info), unbounded. */
static int lu_factor(ex *E, const tens *x, int64_t batch, int64_t r, int64_t c)
{
    int64_t k = r < c ? r : c;
    int first = E->nres;
    if (!batched_result(E, x, K_F, 2, r, c) || !batched_result(E, x, K_I, 1, k, 0) ||
        !batched_result(E, x, K_I, 0, 0, 0))
        return -1;
    float *a = malloc((size_t)(r * c + 1) * sizeof *a);
    lapack_int *piv = malloc((size_t)(k + 1) * sizeof *piv);
    if (!a || !piv) {
        free(a);
        free(piv);
        return ref_fail(E, "out of host memory");
    }
    for (int64_t b = 0; b < batch; b++) {
        load(x, b * r * c, r * c, a);
        lapack_int info = k ? LAPACKE_sgetrf(LAPACK_ROW_MAJOR, (lapack_int)r, (lapack_int)c, a, (lapack_int)c, piv) : 0;
        memcpy(res(E, first, 0)->f + b * r * c, a, (size_t)(r * c) * sizeof *a);
        for (int64_t i = 0; i < k; i++)
            res(E, first, 1)->i[b * k + i] = piv[i];
        res(E, first, 2)->i[b] = info > 0 ? info : 0;
        unbounded(res(E, first, 0), b * r * c, r * c);
        unbounded(res(E, first, 1), b * k, k);
        unbounded(res(E, first, 2), b, 1);
    }
    free(a);
    free(piv);
    return 0;
}

/* linalg_inv_ex(A) -> (inverse, info); linalg_lu_factor_ex(A, pivot=True) ->
 * (LU, pivots, info); _linalg_det(A) -> (det, LU, pivots);
 * _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots) */
static int op_lu(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "A");
    int64_t batch, n, m;
    if (!x || ref_mats_of(E, x, &batch, &n, &m))
        return -1;
    if (how == L_LU)
        return lu_factor(E, x, batch, n, m);
    if (n != m)
        return ref_fail(E, "a square matrix is needed, not %lld x %lld", (long long)n, (long long)m);
    int first = E->nres, ok = 1;
    if (how == L_INV)
        ok = batched_result(E, x, K_F, 2, n, n) && batched_result(E, x, K_I, 0, 0, 0);
    else
        ok = batched_result(E, x, K_F, 0, 0, 0) && (how == L_DET || batched_result(E, x, K_F, 0, 0, 0)) &&
             batched_result(E, x, K_F, 2, n, n) && batched_result(E, x, K_I, 1, n, 0);
    if (!ok)
        return -1;
    int nv = how == L_SLOGDET ? 2 : 1; /* values before LU and pivots */
    for (int64_t b = 0; b < batch; b++) {
        lu_t f;
        if (lu_of(E, x, b * n * n, n, &f))
            return -1;
        if (how == L_INV) {
            if (f.info) /* PyTorch: the info of a singular matrix, the inverse undefined */
                memset(f.inv, 0, (size_t)(n * n) * sizeof *f.inv);
            put_solution(&f, x, b * n * n, f.inv, n, NULL, 0, res(E, first, 0), b * n * n);
            put_lu(&f, NULL, NULL, res(E, first, 1), b);
        } else {
            put_det(E, first, how, &f, x, b);
            put_lu(&f, res(E, first, nv), res(E, first, nv + 1), NULL, b);
        }
        lu_free(&f);
    }
    return 0;
}

/* _linalg_solve_ex(A, B, *, left=True, check_errors=False) -> (result, LU, pivots, info):
 * B a matrix per batch (n x k), or a vector (n) */
static int op_solve(ex *E, int unused)
{
    (void)unused;
    const tens *A = ref_arg_tensor(E, 0, "A"), *B = A ? ref_arg_tensor(E, 1, "B") : NULL;
    int64_t batch, n, m;
    int left;
    if (!B || ref_mats_of(E, A, &batch, &n, &m) || ref_arg_bool(E, -1, "left", 1, &left))
        return -1;
    if (n != m || !left)
        return ref_fail(E, "solve of a %lld x %lld matrix from the %s", (long long)n, (long long)m,
                        left ? "left" : "right");
    int vec = B->rank == A->rank - 1 || B->rank == 1;
    int64_t k = vec ? 1 : B->shape[B->rank - 1];
    if ((vec ? B->n != batch * n : B->n != batch * n * k) || (!vec && B->shape[B->rank - 2] != n))
        return ref_fail(E, "B does not match A's batch and rows (no broadcasting here)");
    int first = E->nres;
    if (!ref_new_result(E, K_F, B->rank, B->shape) || !batched_result(E, A, K_F, 2, n, n) ||
        !batched_result(E, A, K_I, 1, n, 0) || !batched_result(E, A, K_I, 0, 0, 0))
        return -1;
    float *X = malloc((size_t)(n * k + 1) * sizeof *X);
    if (!X)
        return ref_fail(E, "out of host memory");
    for (int64_t b = 0; b < batch; b++) {
        lu_t f;
        if (lu_of(E, A, b * n * n, n, &f)) {
            free(X);
            return -1;
        }
        load(B, b * n * k, n * k, X);
        if (f.info == 0 && n)
            LAPACKE_sgetrs(LAPACK_ROW_MAJOR, 'N', (lapack_int)n, (lapack_int)k, f.lu, (lapack_int)n, f.piv, X,
                           (lapack_int)k);
        put_solution(&f, A, b * n * n, X, k, B, b * n * k, res(E, first, 0), b * n * k);
        put_lu(&f, res(E, first, 1), res(E, first, 2), res(E, first, 3), b);
        lu_free(&f);
    }
    free(X);
    return 0;
}

/* ---- Triangular solves ---- */

/* T (n x n at element toff of t, upper or lower, unit diagonal or not) made
 * explicit in f (the other triangle zero) with its inverse, |T^-1| and the
 * triangular solve's backward error H = n 2^-23 |T| (Higham, Thm 8.5, with
 * room), so that ref_solve_bound applies as for an LU solve (T's bounds off
 * its triangle count too: an overestimate). */
static int tri_of(ex *E, const tens *t, int64_t toff, int64_t n, int upper, int unit, lu_t *f)
{
    memset(f, 0, sizeof *f);
    size_t nn = (size_t)(n * n + 1);
    f->n = n;
    f->lu = malloc(nn * sizeof *f->lu);
    f->inv = malloc(nn * sizeof *f->inv);
    f->ai = malloc(nn * sizeof *f->ai);
    f->h = malloc(nn * sizeof *f->h);
    f->P = malloc(nn * sizeof *f->P);
    if (!f->lu || !f->inv || !f->ai || !f->h || !f->P) {
        lu_free(f);
        return ref_fail(E, "out of host memory");
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            int in = upper ? j >= i : j <= i;
            float v = i == j && unit ? 1 : in ? ldf(t, toff + i * n + j) : 0;
            f->lu[i * n + j] = f->inv[i * n + j] = v;
            f->h[i * n + j] = (double)n * 0x1p-23 * fabs(v);
        }
    f->info = n ? LAPACKE_strtri(LAPACK_ROW_MAJOR, upper ? 'U' : 'L', unit ? 'U' : 'N', (lapack_int)n, f->inv,
                                 (lapack_int)n)
                : 0;
    for (int64_t k = 0; f->info == 0 && k < n * n; k++)
        f->ai[k] = fabs(f->inv[k]);
    return 0;
}

/* X = T^-1 B for each matrix of the batch (B n x k, or a vector), into o;
 * bounds as an LU solve's. */
static int tri_solve(ex *E, const tens *T, const tens *B, int upper, int unit, tens *o)
{
    int64_t batch, n, m, k = B->shape[B->rank - 1];
    if (ref_mats_of(E, T, &batch, &n, &m))
        return -1;
    if (n != m || B->rank != T->rank || B->shape[B->rank - 2] != n || B->n != batch * n * k)
        return ref_fail(E, "a triangular solve of matching batches (no broadcasting here)");
    float *X = malloc((size_t)(n * k + 1) * sizeof *X);
    if (!X)
        return ref_fail(E, "out of host memory");
    int rc = 0;
    for (int64_t b = 0; !rc && b < batch; b++) {
        lu_t f;
        if (tri_of(E, T, b * n * n, n, upper, unit, &f)) {
            rc = -1;
            break;
        }
        load(B, b * n * k, n * k, X);
        if (n && f.info == 0)
            LAPACKE_strtrs(LAPACK_ROW_MAJOR, upper ? 'U' : 'L', 'N', unit ? 'U' : 'N', (lapack_int)n, (lapack_int)k,
                           f.lu, (lapack_int)n, X, (lapack_int)k);
        put_solution(&f, T, b * n * n, X, k, B, b * n * k, o, b * n * k);
        lu_free(&f);
    }
    free(X);
    return rc;
}

/* x with its last two dims swapped, into tmp (with bounds; freed by the caller). */
static int transposed(ex *E, const tens *x, tens *tmp)
{
    int64_t st[MAXR], shape[MAXR];
    int r = x->rank;
    ref_contiguous_strides(r, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    int64_t t = shape[r - 1], u = st[r - 1];
    shape[r - 1] = shape[r - 2], st[r - 1] = st[r - 2];
    shape[r - 2] = t, st[r - 2] = u;
    if (ref_temp_tensor(E, tmp, kind_of(x->dtype), r, shape))
        return -1;
    if (tmp->n)
        ref_strided_copy(x, r, shape, st, 0, tmp);
    return 0;
}

/* X A = B, as A^T X^T = B^T (A^T's triangle the other one), into o. */
static int tri_solve_right(ex *E, const tens *A, const tens *B, int upper, int unit, tens *o)
{
    tens at = {0}, bt = {0}, xt = {0}, back = {0};
    int rc = transposed(E, A, &at) || transposed(E, B, &bt) || ref_temp_tensor(E, &xt, K_F, bt.rank, bt.shape) ||
             tri_solve(E, &at, &bt, !upper, unit, &xt) || transposed(E, &xt, &back);
    if (!rc) {
        memcpy(o->f, back.f, (size_t)o->n * sizeof *o->f);
        for (int w = 0; o->eb[0] && w < 2; w++)
            memcpy(o->eb[w], back.eb[w], (size_t)o->n * sizeof *o->eb[w]);
    }
    ref_tfree(&at);
    ref_tfree(&bt);
    ref_tfree(&xt);
    ref_tfree(&back);
    return rc ? -1 : 0;
}

/* linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False) */
static int op_solve_triangular(ex *E, int unused)
{
    (void)unused;
    const tens *A = ref_arg_tensor(E, 0, "self"), *B = A ? ref_arg_tensor(E, 1, "B") : NULL;
    int upper, left, unit;
    if (!B || ref_arg_bool(E, -1, "upper", 0, &upper) || ref_arg_bool(E, -1, "left", 1, &left) ||
        ref_arg_bool(E, -1, "unitriangular", 0, &unit))
        return -1;
    if (A->rank < 2 || B->rank < 2)
        return ref_fail(E, "a triangular solve needs matrices");
    tens *o = ref_new_result(E, K_F, B->rank, B->shape);
    return !o ? -1 : left ? tri_solve(E, A, B, upper, unit, o) : tri_solve_right(E, A, B, upper, unit, o);
}

/* triangular_solve(self=B, A, upper=True, transpose=False, unitriangular=False) -> (X, A) */
static int op_triangular_solve(ex *E, int unused)
{
    (void)unused;
    const tens *B = ref_arg_tensor(E, 0, "self"), *A = B ? ref_arg_tensor(E, 1, "A") : NULL;
    int upper, tr, unit;
    if (!A || ref_arg_bool(E, 2, "upper", 1, &upper) || ref_arg_bool(E, 3, "transpose", 0, &tr) ||
        ref_arg_bool(E, 4, "unitriangular", 0, &unit))
        return -1;
    if (tr)
        return ref_fail(E, "triangular_solve with transpose");
    int first = E->nres;
    if (!ref_new_result(E, K_F, B->rank, B->shape) || ref_result_reshaped(E, A, A->rank, A->shape))
        return -1;
    return tri_solve(E, A, B, upper, unit, res(E, first, 0));
}

/* ---- Factor forms: unpacking, Cholesky solves, Householder (all unbounded but lu_unpack) ---- */

/* P (m x m), L (m x k, unit lower), U (k x n) of packed LU factors lu (m x n) and 1-based pivots. */
static void unpack_lu(const float *lu, const int64_t *piv, int64_t m, int64_t n, float *P, float *L, float *U)
{
    int64_t k = m < n ? m : n, perm[4096];
    for (int64_t i = 0; i < m; i++)
        perm[i] = i;
    for (int64_t i = 0; i < k; i++) { /* the row swaps of getrf, in order */
        int64_t j = piv[i] - 1, t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    memset(P, 0, (size_t)(m * m) * sizeof *P);
    for (int64_t i = 0; i < m; i++) /* A = P L U: row i of L U is row perm[i] of A */
        P[perm[i] * m + i] = 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++)
            L[i * k + j] = i == j ? 1 : j < i ? lu[i * n + j] : 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++)
            U[i * n + j] = j >= i ? lu[i * n + j] : 0;
}

/* The three results (P, L, U) of the r x c matrices of x. */
static int plu_results(ex *E, const tens *x, int64_t r, int64_t c)
{
    int64_t k = r < c ? r : c;
    return batched_result(E, x, K_F, 2, r, r) && batched_result(E, x, K_F, 2, r, k) && batched_result(E, x, K_F, 2, k, c)
               ? 0
               : -1;
}

/* Writes the unpacked P, L, U of batch b; bounds: exact movement of lu's
 * (P exact) when pivots are exact and given (exact), else infinite. */
static void put_plu(ex *E, int first, const tens *lut, int64_t b, const float *lu, const int64_t *piv, int64_t r,
                    int64_t c, int exact)
{
    int64_t k = r < c ? r : c;
    tens *P = res(E, first, 0), *L = res(E, first, 1), *U = res(E, first, 2);
    unpack_lu(lu, piv, r, c, P->f + b * r * r, L->f + b * r * k, U->f + b * k * c);
    for (int w = 0; P->eb[0] && w < 2; w++) {
        for (int64_t i = 0; i < r * r; i++)
            P->eb[w][b * r * r + i] = exact ? 0 : INFINITY;
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < k; j++)
                L->eb[w][b * r * k + i * k + j] = !exact ? INFINITY : j < i ? (float)ldb(lut, w, b * r * c + i * c + j) : 0;
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < c; j++)
                U->eb[w][b * k * c + i * c + j] = !exact ? INFINITY : j >= i ? (float)ldb(lut, w, b * r * c + i * c + j) : 0;
    }
}

/* Whether t has no positive bound (or no bounds tracked). */
static int exact_tensor(const tens *t)
{
    for (int w = 0; t->eb[0] && w < 2; w++)
        for (int64_t k = 0; k < t->n; k++)
            if (t->eb[w][k] > 0)
                return 0;
    return 1;
}

/* lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True) -> (P, L, U);
 * linalg_lu(A, *, pivot=True) -> (P, L, U) (factored first: unbounded) */
static int op_lu_unpack(ex *E, int factor)
{
    const tens *x = ref_arg_tensor(E, 0, factor ? "A" : "LU_data"), *pv = factor || !x ? NULL : ref_arg_tensor(E, 1, "LU_pivots");
    int64_t batch, r, c;
    if (!x || (!factor && !pv) || ref_mats_of(E, x, &batch, &r, &c) || plu_results(E, x, r, c))
        return -1;
    int64_t k = r < c ? r : c, first = E->nres - 3;
    if (!factor && pv->n != batch * k)
        return ref_fail(E, "LU_pivots has %lld entries, not %lld", (long long)pv->n, (long long)(batch * k));
    float *lu = malloc((size_t)(r * c + 1) * sizeof *lu);
    int64_t *piv = malloc((size_t)(k + 1) * sizeof *piv);
    lapack_int *lp = malloc((size_t)(k + 1) * sizeof *lp);
    int rc = lu && piv && lp ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(x, b * r * c, r * c, lu);
        if (factor && k)
            LAPACKE_sgetrf(LAPACK_ROW_MAJOR, (lapack_int)r, (lapack_int)c, lu, (lapack_int)c, lp);
        for (int64_t i = 0; i < k; i++) {
            piv[i] = factor ? lp[i] : ldi(pv, b * k + i);
            if (piv[i] < i + 1 || piv[i] > r) {
                rc = ref_fail(E, "pivot %lld out of range", (long long)piv[i]);
                break;
            }
        }
        if (!rc)
            put_plu(E, (int)first, x, b, lu, piv, r, c, !factor && exact_tensor(pv));
    }
    free(lu);
    free(piv);
    free(lp);
    return rc;
}

/* cholesky_solve(self=B, input2=L, upper=False): (L L^T)^-1 B;
 * cholesky_inverse(self=L, upper=False): (L L^T)^-1 (unbounded) */
static int op_cholesky_use(ex *E, int inverse)
{
    const tens *B = inverse ? NULL : ref_arg_tensor(E, 0, "self");
    const tens *L = ref_arg_tensor(E, inverse ? 0 : 1, inverse ? "self" : "input2");
    int64_t batch, n, m;
    int upper;
    if (!L || (!inverse && !B) || ref_mats_of(E, L, &batch, &n, &m) || ref_arg_bool(E, inverse ? 1 : 2, "upper", 0, &upper))
        return -1;
    int64_t k = inverse ? n : B->shape[B->rank - 1];
    if (n != m || (!inverse && (B->rank != L->rank || B->shape[B->rank - 2] != n || B->n != batch * n * k)))
        return ref_fail(E, "a Cholesky factor and a right-hand side of matching batches (no broadcasting here)");
    tens *o = inverse ? batched_result(E, L, K_F, 2, n, n) : ref_new_result(E, K_F, B->rank, B->shape);
    float *l = malloc((size_t)(n * n + 1) * sizeof *l), *x = malloc((size_t)(n * k + 1) * sizeof *x);
    int rc = !o ? -1 : l && x ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(L, b * n * n, n * n, l);
        if (inverse) {
            if (n)
                LAPACKE_spotri(LAPACK_ROW_MAJOR, upper ? 'U' : 'L', (lapack_int)n, l, (lapack_int)n);
            for (int64_t i = 0; i < n; i++) /* the triangle computed, mirrored */
                for (int64_t j = 0; j < n; j++)
                    x[i * n + j] = (upper ? j >= i : j <= i) ? l[i * n + j] : l[j * n + i];
        } else {
            load(B, b * n * k, n * k, x);
            if (n && k)
                LAPACKE_spotrs(LAPACK_ROW_MAJOR, upper ? 'U' : 'L', (lapack_int)n, (lapack_int)k, l, (lapack_int)n, x,
                               (lapack_int)k);
        }
        memcpy(o->f + b * n * k, x, (size_t)(n * k) * sizeof *x);
        unbounded(o, b * n * k, n * k);
    }
    free(l);
    free(x);
    return rc;
}

/* geqrf(self) -> (a, tau): LAPACK's compact QR; linalg_householder_product(input, tau): its Q (unbounded) */
static int op_householder(ex *E, int product)
{
    const tens *x = ref_arg_tensor(E, 0, product ? "input" : "self"), *tau = product && x ? ref_arg_tensor(E, 1, "tau") : NULL;
    int64_t batch, r, c;
    if (!x || (product && !tau) || ref_mats_of(E, x, &batch, &r, &c))
        return -1;
    int64_t k = product ? (tau->rank ? tau->shape[tau->rank - 1] : 1) : (r < c ? r : c);
    if (product && (c > r || k > c || tau->n != batch * k))
        return ref_fail(E, "householder_product of %lld x %lld with %lld reflectors", (long long)r, (long long)c,
                        (long long)k);
    int first = E->nres;
    if (!batched_result(E, x, K_F, 2, r, c) || (!product && !batched_result(E, x, K_F, 1, k, 0)))
        return -1;
    float *a = malloc((size_t)(r * c + 1) * sizeof *a), *t = malloc((size_t)(k + 1) * sizeof *t);
    int rc = a && t ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(x, b * r * c, r * c, a);
        if (product) {
            load(tau, b * k, k, t);
            if (c && LAPACKE_sorgqr(LAPACK_ROW_MAJOR, (lapack_int)r, (lapack_int)c, (lapack_int)k, a, (lapack_int)c, t))
                rc = ref_fail(E, "forming Q failed");
        } else if (k && LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, (lapack_int)r, (lapack_int)c, a, (lapack_int)c, t)) {
            rc = ref_fail(E, "the QR factorization failed");
        }
        memcpy(res(E, first, 0)->f + b * r * c, a, (size_t)(r * c) * sizeof *a);
        unbounded(res(E, first, 0), b * r * c, r * c);
        if (!product) {
            memcpy(res(E, first, 1)->f + b * k, t, (size_t)k * sizeof *t);
            unbounded(res(E, first, 1), b * k, k);
        }
    }
    free(a);
    free(t);
    return rc;
}

/* linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False): A X = B from
 * getrf's factors; A^T X = B (adjoint); X A = B as A^T X^T = B^T (not left) */
static int op_lu_solve(ex *E, int unused)
{
    (void)unused;
    const tens *lu = ref_arg_tensor(E, 0, "LU"), *pv = lu ? ref_arg_tensor(E, 1, "pivots") : NULL;
    const tens *B = pv ? ref_arg_tensor(E, 2, "B") : NULL;
    int64_t batch, n, m;
    int left, adj;
    if (!B || ref_mats_of(E, lu, &batch, &n, &m) || ref_arg_bool(E, -1, "left", 1, &left) ||
        ref_arg_bool(E, -1, "adjoint", 0, &adj))
        return -1;
    int64_t br = B->rank >= 2 ? B->shape[B->rank - 2] : 0, bc = B->rank >= 2 ? B->shape[B->rank - 1] : 0;
    int64_t k = left ? bc : br;
    if (n != m || B->rank != lu->rank || (left ? br : bc) != n || B->n != batch * n * k || pv->n != batch * n)
        return ref_fail(E, "LU, pivots and B of matching batches (no broadcasting here)");
    tens *o = ref_new_result(E, K_F, B->rank, B->shape);
    float *a = malloc((size_t)(n * n + 1) * sizeof *a), *x = malloc((size_t)(n * k + 1) * sizeof *x);
    lapack_int *ip = malloc((size_t)(n + 1) * sizeof *ip);
    int rc = !o ? -1 : a && x && ip ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(lu, b * n * n, n * n, a);
        for (int64_t i = 0; i < n; i++)
            ip[i] = (lapack_int)ldi(pv, b * n + i);
        for (int64_t i = 0; i < n * k; i++) /* B, or B^T from the right: n x k either way */
            x[i] = left ? ldf(B, b * n * k + i) : ldf(B, b * n * k + (i % k) * n + i / k);
        char trans = left == !adj ? 'N' : 'T';
        if (n && k)
            LAPACKE_sgetrs(LAPACK_ROW_MAJOR, trans, (lapack_int)n, (lapack_int)k, a, (lapack_int)n, ip, x, (lapack_int)k);
        for (int64_t i = 0; i < n * k; i++)
            o->f[b * n * k + (left ? i : (i % k) * n + i / k)] = x[i];
        unbounded(o, b * n * k, n * k);
    }
    free(a);
    free(x);
    free(ip);
    return rc;
}

/* ormqr(input, tau, other, left=True, transpose=False): Q (of geqrf's
 * reflectors) or Q^T times other, from the left or the right (unbounded) */
static int op_ormqr(ex *E, int unused)
{
    (void)unused;
    const tens *a0 = ref_arg_tensor(E, 0, "input"), *tau = a0 ? ref_arg_tensor(E, 1, "tau") : NULL;
    const tens *C = tau ? ref_arg_tensor(E, 2, "other") : NULL;
    int64_t batch, r, c, cb, cr, cc;
    int left, tr;
    if (!C || ref_mats_of(E, a0, &batch, &r, &c) || ref_mats_of(E, C, &cb, &cr, &cc) || ref_arg_bool(E, 3, "left", 1, &left) ||
        ref_arg_bool(E, 4, "transpose", 0, &tr))
        return -1;
    int64_t k = tau->rank ? tau->shape[tau->rank - 1] : 1;
    if (cb != batch || (left ? cr : cc) != r || k > (r < c ? r : c) || tau->n != batch * k)
        return ref_fail(E, "ormqr's input, tau and other do not match (no broadcasting here)");
    tens *o = ref_new_result(E, K_F, C->rank, C->shape);
    float *a = malloc((size_t)(r * c + 1) * sizeof *a), *t = malloc((size_t)(k + 1) * sizeof *t);
    int rc = !o ? -1 : a && t ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(a0, b * r * c, r * c, a);
        load(tau, b * k, k, t);
        float *x = o->f + b * cr * cc;
        load(C, b * cr * cc, cr * cc, x);
        if (cr && cc && k &&
            LAPACKE_sormqr(LAPACK_ROW_MAJOR, left ? 'L' : 'R', tr ? 'T' : 'N', (lapack_int)cr, (lapack_int)cc,
                           (lapack_int)k, a, (lapack_int)c, t, x, (lapack_int)cc))
            rc = ref_fail(E, "ormqr failed");
        unbounded(o, b * cr * cc, cr * cc);
    }
    free(a);
    free(t);
    return rc;
}

/* linalg_ldl_factor_ex(self, *, hermitian=False, check_errors=False) -> (LD, pivots, info):
 * LAPACK's sytrf of the lower triangle, the upper one zero (unbounded) */
static int op_ldl(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t batch, n, m;
    if (!x || ref_mats_of(E, x, &batch, &n, &m))
        return -1;
    if (n != m)
        return ref_fail(E, "ldl of a %lld x %lld matrix", (long long)n, (long long)m);
    int first = E->nres;
    if (!batched_result(E, x, K_F, 2, n, n) || !batched_result(E, x, K_I, 1, n, 0) || !batched_result(E, x, K_I, 0, 0, 0))
        return -1;
    float *a = malloc((size_t)(n * n + 1) * sizeof *a);
    lapack_int *ip = malloc((size_t)(n + 1) * sizeof *ip);
    int rc = a && ip ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(x, b * n * n, n * n, a);
        lapack_int info = n ? LAPACKE_ssytrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n, ip) : 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                res(E, first, 0)->f[b * n * n + i * n + j] = j <= i ? a[i * n + j] : 0;
        for (int64_t i = 0; i < n; i++)
            res(E, first, 1)->i[b * n + i] = ip[i];
        res(E, first, 2)->i[b] = info > 0 ? info : 0;
        unbounded(res(E, first, 0), b * n * n, n * n);
        unbounded(res(E, first, 1), b * n, n);
        unbounded(res(E, first, 2), b, 1);
    }
    free(a);
    free(ip);
    return rc;
}

/* ---- Symmetric eigenvalues, SVD, QR, Cholesky ---- */

/* Values v[k] into o at off with the bound e (track w) each, stored. */
static void put_values(tens *o, int64_t off, const float *v, int64_t n, const double *e)
{
    for (int64_t k = 0; k < n; k++) {
        o->f[off + k] = v[k];
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][off + k] = (float)(isfinite(e[w]) ? ref_eb_store(v[k], e[w], w) : INFINITY);
    }
}

/* A string argument's first letter, or def. */
static int str_arg(ex *E, int pos, const char *key, const char *def, const char **s)
{
    const gr_arg *a = ref_arg(E, pos, key);
    *s = def;
    if (!ref_present(a))
        return 0;
    if (a->kind != GR_ARG_STR)
        return ref_fail(E, "argument %s is not a string", key);
    *s = a->s;
    return 0;
}

/* The arguments of an eigh op: _linalg_eigh(A, UPLO="L", compute_v=True), or (symeig) the
 * deprecated symeig(self, eigenvectors=False, upper=True), its eigenvectors empty when not computed. */
static int eigh_args(ex *E, int symeig, const tens **x, char *uplo, int *cv)
{
    const char *s = "L";
    int upper = 1;
    *x = ref_arg_tensor(E, 0, symeig ? "self" : "A");
    if (!*x || (symeig ? ref_arg_bool(E, 1, "eigenvectors", 0, cv) || ref_arg_bool(E, 2, "upper", 1, &upper)
                       : str_arg(E, 1, "UPLO", "L", &s) || ref_arg_bool(E, 2, "compute_v", 1, cv)))
        return -1;
    if (s[0] != 'L' && s[0] != 'U')
        return ref_fail(E, "eigh with UPLO %s", s);
    *uplo = symeig ? (upper ? 'U' : 'L') : s[0];
    return 0;
}

/* _linalg_eigh and symeig -> (eigenvalues ascending, eigenvectors in columns) */
static int op_eigh(ex *E, int symeig)
{
    const tens *x;
    char uplo = 'L';
    int64_t batch, n, m;
    int cv;
    if (eigh_args(E, symeig, &x, &uplo, &cv) || ref_mats_of(E, x, &batch, &n, &m))
        return -1;
    if (n != m)
        return ref_fail(E, "eigh of a %lld x %lld matrix", (long long)n, (long long)m);
    int first = E->nres;
    int64_t zero = 0;
    if (!batched_result(E, x, K_F, 1, n, 0) ||
        !(cv ? batched_result(E, x, K_F, 2, n, n) : ref_new_result(E, K_F, 1, &zero)))
        return -1;
    float *a = malloc((size_t)(n * n + 1) * sizeof *a), *v = malloc((size_t)(n + 1) * sizeof *v);
    int rc = a && v ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(x, b * n * n, n * n, a);
        if (n && LAPACKE_ssyevd(LAPACK_ROW_MAJOR, cv ? 'V' : 'N', uplo, (lapack_int)n, a, (lapack_int)n, v)) {
            rc = ref_fail(E, "the eigenvalue solver did not converge");
            break;
        }
        double e[2] = {ref_weyl_bound(x, b * n * n, n, n, 1, uplo == 'L', 0),
                       ref_weyl_bound(x, b * n * n, n, n, 1, uplo == 'L', 1)};
        put_values(res(E, first, 0), b * n, v, n, e);
        for (int64_t k = 0; cv && k < n * n; k++)
            res(E, first, 1)->f[b * n * n + k] = a[k];
        if (cv)
            unbounded(res(E, first, 1), b * n * n, n * n);
    }
    free(a);
    free(v);
    return rc;
}

/* _linalg_svd(A, full_matrices=True, compute_uv=True, driver=None) -> (U, S, Vh) */
static int op_svd(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "A");
    int64_t batch, r, c, zero = 0;
    int full, cuv;
    if (!x || ref_mats_of(E, x, &batch, &r, &c) || ref_arg_bool(E, 1, "full_matrices", 1, &full) ||
        ref_arg_bool(E, 2, "compute_uv", 1, &cuv))
        return -1;
    int64_t k = r < c ? r : c;
    const gr_value *ov = &E->g->values[E->node->out];
    if (!ref_present(ref_arg(E, 1, "full_matrices")) && ov->ntuple == 3 && ov->tuple[0].rank == x->rank)
        full = ov->tuple[0].shape[x->rank - 1] == r && ov->tuple[2].shape[x->rank - 2] == c; /* svdvals' trace omits it */
    int64_t ur = full ? r : k, vr = full ? c : k;
    int first = E->nres;
    if (!(cuv ? batched_result(E, x, K_F, 2, r, ur) : ref_new_result(E, K_F, 1, &zero)) ||
        !batched_result(E, x, K_F, 1, k, 0) ||
        !(cuv ? batched_result(E, x, K_F, 2, vr, c) : ref_new_result(E, K_F, 1, &zero)))
        return -1;
    size_t big = (size_t)((r > c ? r : c) * (r > c ? r : c) + 1);
    float *a = malloc((size_t)(r * c + 1) * sizeof *a), *s = malloc((size_t)(k + 1) * sizeof *s);
    float *u = malloc(big * sizeof *u), *vt = malloc(big * sizeof *vt);
    int rc = a && s && u && vt ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(x, b * r * c, r * c, a);
        char job = !cuv ? 'N' : full ? 'A' : 'S';
        if (k && LAPACKE_sgesdd(LAPACK_ROW_MAJOR, job, (lapack_int)r, (lapack_int)c, a, (lapack_int)c, s, u,
                                (lapack_int)(cuv ? ur : 1), vt, (lapack_int)(cuv ? c : 1))) {
            rc = ref_fail(E, "the SVD did not converge");
            break;
        }
        double e[2] = {ref_weyl_bound(x, b * r * c, r, c, 0, 0, 0), ref_weyl_bound(x, b * r * c, r, c, 0, 0, 1)};
        put_values(res(E, first, 1), b * k, s, k, e);
        if (!cuv)
            continue;
        memcpy(res(E, first, 0)->f + b * r * ur, u, (size_t)(r * ur) * sizeof *u);
        memcpy(res(E, first, 2)->f + b * vr * c, vt, (size_t)(vr * c) * sizeof *vt);
        unbounded(res(E, first, 0), b * r * ur, r * ur);
        unbounded(res(E, first, 2), b * vr * c, vr * c);
    }
    free(a);
    free(s);
    free(u);
    free(vt);
    return rc;
}

/* linalg_qr(A, mode="reduced") -> (Q, R); "complete": Q square; "r": Q empty */
static int op_qr(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "A");
    const char *mode;
    int64_t batch, r, c, zero = 0;
    if (!x || ref_mats_of(E, x, &batch, &r, &c) || str_arg(E, 1, "mode", "reduced", &mode))
        return -1;
    int complete = strcmp(mode, "complete") == 0, ronly = strcmp(mode, "r") == 0;
    if (!complete && !ronly && strcmp(mode, "reduced") != 0)
        return ref_fail(E, "qr mode \"%s\"", mode);
    int64_t k = r < c ? r : c, qc = complete ? r : k, rr = complete ? r : k;
    int first = E->nres;
    if (!(ronly ? ref_new_result(E, K_F, 1, &zero) : batched_result(E, x, K_F, 2, r, qc)) ||
        !batched_result(E, x, K_F, 2, rr, c))
        return -1;
    int64_t w = c > qc ? c : qc;
    float *a = malloc((size_t)(r * w + 1) * sizeof *a), *tau = malloc((size_t)(k + 1) * sizeof *tau);
    int rc = a && tau ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        for (int64_t i = 0; i < r; i++)
            load(x, b * r * c + i * c, c, a + i * w);
        if (k && LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, (lapack_int)r, (lapack_int)c, a, (lapack_int)w, tau)) {
            rc = ref_fail(E, "the QR factorization failed");
            break;
        }
        tens *R = res(E, first, 1);
        for (int64_t i = 0; i < rr; i++)
            for (int64_t j = 0; j < c; j++)
                R->f[b * rr * c + i * c + j] = j >= i ? a[i * w + j] : 0;
        unbounded(R, b * rr * c, rr * c);
        if (ronly)
            continue;
        if (qc && LAPACKE_sorgqr(LAPACK_ROW_MAJOR, (lapack_int)r, (lapack_int)qc, (lapack_int)k, a, (lapack_int)w,
                                 tau)) {
            rc = ref_fail(E, "forming Q failed");
            break;
        }
        tens *Q = res(E, first, 0);
        for (int64_t i = 0; i < r; i++)
            memcpy(Q->f + b * r * qc + i * qc, a + i * w, (size_t)qc * sizeof *a);
        unbounded(Q, b * r * qc, r * qc);
    }
    free(a);
    free(tau);
    return rc;
}

/* A tolerance argument of pinv: a number, a 0-d tensor, or absent (-1). */
static int tol_arg(ex *E, const char *key, double *v)
{
    const gr_arg *a = ref_arg(E, -1, key);
    kind k;
    *v = -1;
    if (!ref_present(a))
        return 0;
    if (a->kind == GR_ARG_VALUE) {
        const tens *t = ref_tensor_of(E, a, key);
        if (!t || t->n != 1)
            return t ? ref_fail(E, "argument %s is not one number", key) : -1;
        *v = ldd(t, 0);
        return 0;
    }
    return ref_num_of(E, a, key, v, &k);
}

/* pinv of one r x c matrix a (destroyed) into p (c x r): V diag(1/s) U^T
 * over the singular values above max(atol, rtol s_max). */
static int pinv_one(float *a, int64_t r, int64_t c, double atol, double rtol, float *p, float *s, float *u, float *vt)
{
    int64_t k = r < c ? r : c;
    if (k && LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)r, (lapack_int)c, a, (lapack_int)c, s, u,
                            (lapack_int)k, vt, (lapack_int)c))
        return -1;
    double thr = fmax(atol, rtol * (k ? s[0] : 0));
    for (int64_t i = 0; i < c; i++)
        for (int64_t j = 0; j < r; j++) {
            double acc = 0;
            for (int64_t l = 0; l < k; l++)
                if (s[l] > thr)
                    acc += (double)vt[l * c + i] * u[j * k + l] / s[l];
            p[i * r + j] = (float)acc;
        }
    return 0;
}

/* linalg_pinv(self, *, atol=None, rtol=None, hermitian=False): PyTorch's
 * tolerances (rtol defaults to eps r c's larger, or to 0 when atol > 0);
 * unbounded (the threshold is a discontinuity) */
static int op_pinv(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t batch, r, c;
    double atol, rtol;
    if (!x || ref_mats_of(E, x, &batch, &r, &c) || tol_arg(E, "atol", &atol) || tol_arg(E, "rtol", &rtol))
        return -1;
    if (rtol < 0)
        rtol = atol > 0 ? 0 : 0x1p-23 * (double)(r > c ? r : c);
    tens *o = batched_result(E, x, K_F, 2, c, r);
    if (!o)
        return -1;
    int64_t k = r < c ? r : c;
    float *a = malloc((size_t)(r * c + 1) * sizeof *a), *s = malloc((size_t)(k + 1) * sizeof *s);
    float *u = malloc((size_t)(r * k + 1) * sizeof *u), *vt = malloc((size_t)(k * c + 1) * sizeof *vt);
    int rc = a && s && u && vt ? 0 : ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < batch; b++) {
        load(x, b * r * c, r * c, a);
        if (pinv_one(a, r, c, atol, rtol, o->f + b * r * c, s, u, vt))
            rc = ref_fail(E, "the SVD did not converge");
        unbounded(o, b * r * c, r * c);
    }
    free(a);
    free(s);
    free(u);
    free(vt);
    return rc;
}

/* linalg_cholesky_ex(A, upper=False, check_errors=False) -> (L, info);
 * cholesky(self, upper=False) -> L (with_info 0) */
static int op_cholesky(ex *E, int with_info)
{
    const tens *x = ref_arg_tensor(E, 0, with_info ? "A" : "self");
    int64_t batch, n, m;
    int upper;
    if (!x || ref_mats_of(E, x, &batch, &n, &m) || ref_arg_bool(E, 1, "upper", 0, &upper))
        return -1;
    if (n != m)
        return ref_fail(E, "cholesky of a %lld x %lld matrix", (long long)n, (long long)m);
    int first = E->nres;
    if (!batched_result(E, x, K_F, 2, n, n) || (with_info && !batched_result(E, x, K_I, 0, 0, 0)))
        return -1;
    float *a = malloc((size_t)(n * n + 1) * sizeof *a);
    if (!a)
        return ref_fail(E, "out of host memory");
    for (int64_t b = 0; b < batch; b++) {
        load(x, b * n * n, n * n, a);
        lapack_int info = n ? LAPACKE_spotrf(LAPACK_ROW_MAJOR, upper ? 'U' : 'L', (lapack_int)n, a, (lapack_int)n) : 0;
        tens *o = res(E, first, 0);
        for (int64_t i = 0; i < n; i++) /* the other triangle zero, as PyTorch */
            for (int64_t j = 0; j < n; j++)
                o->f[b * n * n + i * n + j] = (upper ? j >= i : j <= i) ? a[i * n + j] : 0;
        unbounded(o, b * n * n, n * n);
        if (!with_info)
            continue;
        res(E, first, 1)->i[b] = info;
        unbounded(res(E, first, 1), b, 1);
    }
    free(a);
    return 0;
}

/* Component cc along dim d of t from off (strides st), track w. */
static bv comp(const tens *t, const int64_t *st, int d, int64_t off, int cc, int w)
{
    return (bv){ldd(t, off + cc * st[d]), ldb(t, w, off + cc * st[d]), w};
}

/* linalg_cross(self, other, dim=-1): both broadcast, dim of size 3; each
 * component a stored difference of stored products */
static int op_cross(ex *E, int unused)
{
    (void)unused;
    const tens *a = ref_arg_tensor(E, 0, "self"), *b = a ? ref_arg_tensor(E, 1, "other") : NULL;
    int64_t dim, shape[MAXR];
    int rank, d;
    const tens *ts[2] = {a, b};
    if (!b || ref_arg_int(E, 2, "dim", -1, &dim) || ref_bcast(E, 2, ts, &rank, shape) || ref_norm_dim(E, dim, rank, &d))
        return -1;
    if (a->rank != rank || b->rank != rank || shape[d] != 3 || a->shape[d] != 3 || b->shape[d] != 3)
        return ref_fail(E, "cross needs both of one rank and size 3 along dim %d", d);
    tens *o = ref_new_result(E, K_F, rank, shape);
    if (!o)
        return -1;
    int64_t s3[MAXR];
    memcpy(s3, shape, sizeof s3);
    s3[d] = 1;
    int64_t ast[MAXR], bst[MAXR], ost[MAXR];
    ref_contiguous_strides(rank, a->shape, ast);
    ref_contiguous_strides(rank, b->shape, bst);
    ref_contiguous_strides(rank, shape, ost);
    iter it;
    ref_iter_tensors(&it, rank, s3, 2, ts);
    for (int64_t q = 0; q < ref_numel(rank, s3); q++, iter_next(&it)) {
        int64_t oo = 0;
        for (int i = 0; i < rank; i++)
            oo += it.idx[i] * ost[i];
        for (int c = 0; c < 3; c++) {
            int c1 = (c + 1) % 3, c2 = (c + 2) % 3;
            for (int w = 0; w < 2; w++) {
                bv p = ref_bv_mul(comp(a, ast, d, it.off[0], c1, w), comp(b, bst, d, it.off[1], c2, w));
                bv m = ref_bv_mul(comp(a, ast, d, it.off[0], c2, w), comp(b, bst, d, it.off[1], c1, w));
                bv r = ref_bv_sub(p, m);
                if (w == 0)
                    o->f[oo + c * ost[d]] = (float)r.v;
                if (o->eb[0])
                    o->eb[w][oo + c * ost[d]] = (float)r.e;
            }
        }
    }
    return 0;
}

static const ref_op ops[] = {
    {"linalg_inv_ex", op_lu, L_INV},             /* (inverse, info) */
    {"linalg_lu_factor_ex", op_lu, L_LU},        /* (LU, pivots, info) */
    {"_linalg_det", op_lu, L_DET},               /* (det, LU, pivots) */
    {"_linalg_slogdet", op_lu, L_SLOGDET},       /* (sign, logabsdet, LU, pivots) */
    {"_linalg_solve_ex", op_solve, 0},           /* (result, LU, pivots, info) */
    {"_linalg_eigh", op_eigh, 0},                /* (eigenvalues, eigenvectors) */
    {"symeig", op_eigh, 1},                      /* the same, deprecated; upper by default */
    {"_linalg_svd", op_svd, 0},                  /* (U, S, Vh) */
    {"linalg_qr", op_qr, 0},                     /* (Q, R) */
    {"linalg_cholesky_ex", op_cholesky, 1},      /* (L, info) */
    {"cholesky", op_cholesky, 0},
    {"linalg_pinv", op_pinv, 0},                 /* through the SVD; .atol_rtol_tensor, .atol_rtol_float */
    {"linalg_cross", op_cross, 0},
    {"linalg_solve_triangular", op_solve_triangular, 0},
    {"triangular_solve", op_triangular_solve, 0}, /* (X, A) */
    {"lu_unpack", op_lu_unpack, 0},              /* (P, L, U) with A = P L U */
    {"linalg_lu", op_lu_unpack, 1},
    {"cholesky_solve", op_cholesky_use, 0},
    {"cholesky_inverse", op_cholesky_use, 1},
    {"geqrf", op_householder, 0},                /* (a, tau) */
    {"linalg_householder_product", op_householder, 1},
    {"linalg_lu_solve", op_lu_solve, 0},
    {"ormqr", op_ormqr, 0},
    {"linalg_ldl_factor_ex", op_ldl, 0},         /* (LD, pivots, info) */
};
const ref_ops ref_linalg_ops = REF_OPS(ops);
