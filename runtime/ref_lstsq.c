/* ref_lstsq.c: reference solves from a symmetric-indefinite factorization (linalg_ldl_solve, of
 * ldl_factor's LAPACK sytrf form) and least squares (linalg_lstsq, PyTorch's CPU semantics per LAPACK
 * driver); fallback only.
 *
 * ldl_solve: sytrf ('L') stores A = L D L^T with L = P(1) L(1) P(2) L(2) ..., a 1 x 1 block at k when
 * pivots[k] > 0 (rows and columns k and pivots[k] swapped), a 2 x 2 block at k, k + 1 when pivots[k] =
 * pivots[k + 1] < 0 (k + 1 and -pivots[k] swapped), L(k) unit with the block's columns below it from LD.
 * The product folds into M = P L': each column of M is a unit vector plus, in distinct rows, LD's entries
 * of that column, so every entry of M is 0, 1 or one entry of LD.  A = M D M^T is formed and solved in
 * double (LAPACK dgesv), the exact solution of the system the factors stand for.
 * Bound: with E_M, E_D the entries' bounds (lambda E of the LD entry each is), |dA| <= (|M| + E_M)
 * (|D| + E_D) (|M| + E_M)^T - |M| |D| |M|^T entrywise (every term of the expansion but the first has a
 * perturbed factor); the solve's backward error H = 3 n 2^-24 |M| |D| |M|^T covers an fp32 sytrs
 * (PyTorch's); then the solve's rule (ref_solve_bound) and the store.  Pivots with a bound: infinite.
 *
 * lstsq: LAPACK's fp32 drivers, as PyTorch (op_lstsq). */
#include "ref_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scratch of one n x n system with k right-hand sides: M, D, and their bound twins, A, |A^-1|, P; the
 * solution in double (x) and fp32 (xf), B's bounds (eb), the unit rows of unfolded columns (pi). */
typedef struct {
    int64_t n, k;
    double *m, *d, *em, *ed, *a, *ai, *p, *x, *eb;
    float *xf;
    int64_t *pi;
} ldl_t;

static void ldl_free(ldl_t *f)
{
    free(f->m);
    free(f->d);
    free(f->em);
    free(f->ed);
    free(f->a);
    free(f->ai);
    free(f->p);
    free(f->x);
    free(f->eb);
    free(f->xf);
    free(f->pi);
}

static int ldl_new(ex *E, ldl_t *f, int64_t n, int64_t k)
{
    size_t nn = (size_t)(n * n + 1), nk = (size_t)(n * k + 1);
    f->n = n;
    f->k = k;
    f->x = calloc(nn > nk ? nn : nk, sizeof(double));
    f->eb = calloc(nk, sizeof(double));
    f->xf = calloc(nk, sizeof(float));
    f->pi = calloc((size_t)n + 1, sizeof(int64_t));
    f->m = calloc(nn, sizeof(double));
    f->d = calloc(nn, sizeof(double));
    f->em = calloc(nn, sizeof(double));
    f->ed = calloc(nn, sizeof(double));
    f->a = calloc(nn, sizeof(double));
    f->ai = calloc(nn, sizeof(double));
    f->p = calloc(nn, sizeof(double));
    if (f->m && f->d && f->em && f->ed && f->a && f->ai && f->p && f->x && f->eb && f->xf && f->pi)
        return 0;
    ldl_free(f);
    return ref_fail(E, "out of host memory");
}

/* M and D (values, and in em, ed the bounds lambda E of track w) from LD at off and 1-based pivots
 * at poff; -1 on pivots that are not sytrf's. */
static int ldl_unfold(ldl_t *f, const tens *ld, int64_t off, const tens *pv, int64_t poff, int w, int64_t *pi)
{
    int64_t n = f->n;
    memset(f->m, 0, (size_t)(n * n) * sizeof *f->m);
    memset(f->d, 0, (size_t)(n * n) * sizeof *f->d);
    memset(f->em, 0, (size_t)(n * n) * sizeof *f->em);
    memset(f->ed, 0, (size_t)(n * n) * sizeof *f->ed);
    for (int64_t i = 0; i < n; i++)
        pi[i] = i; /* the row of column i's unit, for the columns not yet folded */
    for (int64_t k = 0; k < n;) {
        int64_t p = ldi(pv, poff + k), s = p > 0 ? 1 : 2, q = p > 0 ? p - 1 : -p - 1;
        if ((p < 0 && (k + 1 >= n || ldi(pv, poff + k + 1) != p)) || p == 0 || q < k + s - 1 || q >= n)
            return -1;
        int64_t t = pi[k + s - 1]; /* P(k): the swap of k + s - 1 and q */
        pi[k + s - 1] = pi[q];
        pi[q] = t;
        for (int64_t j = k; j < k + s; j++) {
            f->m[pi[j] * n + j] = 1;
            for (int64_t i = k + s; i < n; i++) {
                f->m[pi[i] * n + j] = ldd(ld, off + i * n + j);
                f->em[pi[i] * n + j] = ref_eb_lam(w) * ldb(ld, w, off + i * n + j);
            }
            for (int64_t i = k; i < k + s; i++) { /* the block, mirrored */
                int64_t r = i > j ? i : j, c = i > j ? j : i;
                f->d[i * n + j] = ldd(ld, off + r * n + c);
                f->ed[i * n + j] = ref_eb_lam(w) * ldb(ld, w, off + r * n + c);
            }
        }
        k += s;
    }
    return 0;
}

/* out = X Y Z^T for n x n matrices (double), as X (Y Z^T): n^3 twice; -1 out of memory. */
static int triple(const double *x, const double *y, const double *z, int64_t n, double *out)
{
    double *t = malloc((size_t)(n * n + 1) * sizeof *t);
    if (!t)
        return -1;
    for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < n; l++)
                s += y[k * n + l] * z[j * n + l];
            t[k * n + j] = s;
        }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t k = 0; k < n; k++)
                s += x[i * n + k] * t[k * n + j];
            out[i * n + j] = s;
        }
    free(t);
    return 0;
}

/* From the unfolded M, D (track w's bounds in em, ed): P = |dA| + H into p (infinite out of memory). */
static void ldl_perturbation(ldl_t *f)
{
    int64_t n = f->n, nn = n * n;
    double *am = malloc((size_t)(nn + 1) * sizeof *am), *ad = malloc((size_t)(nn + 1) * sizeof *ad);
    double *hi = malloc((size_t)(nn + 1) * sizeof *hi);
    int ok = am && ad && hi;
    for (int64_t k = 0; ok && k < nn; k++)
        am[k] = fabs(f->m[k]), ad[k] = fabs(f->d[k]);
    ok = ok && !triple(am, ad, am, n, f->p); /* |M| |D| |M|^T */
    for (int64_t k = 0; ok && k < nn; k++)
        am[k] += f->em[k], ad[k] += f->ed[k];
    ok = ok && !triple(am, ad, am, n, hi);
    for (int64_t k = 0; k < nn; k++)
        f->p[k] = ok ? hi[k] - f->p[k] + 3 * (double)n * 0x1p-24 * f->p[k] : INFINITY;
    free(am);
    free(ad);
    free(hi);
}

/* X = A^-1 B (n x k) in double into x (B's values in x on entry), and |A^-1| into ai; -1 when singular. */
static int solve_double(ldl_t *f, double *x, int64_t k)
{
    int64_t n = f->n;
    double *a = malloc((size_t)(n * n + 1) * sizeof *a);
    lapack_int *ip = malloc((size_t)(n + 1) * sizeof *ip);
    int rc = !a || !ip ? -1 : 0;
    for (int pass = 0; !rc && pass < 2 && n; pass++) { /* the solution, then the inverse */
        memcpy(a, f->a, (size_t)(n * n) * sizeof *a);
        if (pass) {
            memset(f->ai, 0, (size_t)(n * n) * sizeof *f->ai);
            for (int64_t i = 0; i < n; i++)
                f->ai[i * n + i] = 1;
        }
        if (LAPACKE_dgesv(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)(pass ? n : k), a, (lapack_int)n, ip,
                          pass ? f->ai : x, (lapack_int)(pass ? n : k)))
            rc = -1;
    }
    for (int64_t i = 0; !rc && i < n * n; i++)
        f->ai[i] = fabs(f->ai[i]);
    free(a);
    free(ip);
    return rc;
}

/* Whether t has a positive bound somewhere. */
static int inexact(const tens *t)
{
    for (int w = 0; t->eb[0] && w < 2; w++)
        for (int64_t k = 0; k < t->n; k++)
            if (t->eb[w][k] > 0)
                return 1;
    return 0;
}

/* System b of the (broadcast) batch from LD's system bl and B's bb: X into o, its bounds. */
static int ldl_solve_one(ex *E, ldl_t *f, const tens *ld, const tens *pv, const tens *B, const int64_t *ix, tens *o)
{
    int64_t n = f->n, nk = n * f->k, b = ix[0], bl = ix[1], bb = ix[2];
    if (ldl_unfold(f, ld, bl * n * n, pv, bl * n, 0, f->pi))
        return ref_fail(E, "pivots of system %lld are not sytrf's", (long long)bl);
    for (int64_t i = 0; i < nk; i++)
        f->x[i] = ldd(B, bb * nk + i);
    if (triple(f->m, f->d, f->m, n, f->a))
        return ref_fail(E, "out of host memory");
    int singular = solve_double(f, f->x, f->k);
    for (int64_t i = 0; i < nk; i++)
        o->f[b * nk + i] = f->xf[i] = singular ? NAN : (float)f->x[i];
    for (int w = 0; o->eb[0] && w < 2; w++) {
        ldl_unfold(f, ld, bl * n * n, pv, bl * n, w, f->pi);
        ldl_perturbation(f);
        for (int64_t i = 0; i < nk; i++)
            f->eb[i] = ref_eb_lam(w) * ldb(B, w, bb * nk + i);
        ref_solve_bound(n, f->k, f->ai, f->p, f->xf, f->eb, ref_eb_lam(w), f->x);
        for (int64_t i = 0; i < nk; i++)
            o->eb[w][b * nk + i] = (float)(singular || inexact(pv) || !isfinite(f->x[i])
                                               ? INFINITY
                                               : ref_eb_store(f->xf[i], f->x[i], w));
    }
    return 0;
}

/* The result of LD's and B's batch dims broadcast (then n x k), and the iteration over both. */
static tens *ldl_result(ex *E, const tens *ld, const tens *B, int64_t n, int64_t k, iter *it, int64_t *batch)
{
    int rl = ld->rank - 2, rb = B->rank - 2, r = rl > rb ? rl : rb;
    int64_t sh[MAXR];
    for (int d = 0; d < r; d++) {
        int64_t a = d - (r - rl) >= 0 ? ld->shape[d - (r - rl)] : 1, c = d - (r - rb) >= 0 ? B->shape[d - (r - rb)] : 1;
        if (a != c && a != 1 && c != 1) {
            ref_fail(E, "LD's and B's batch dims do not broadcast");
            return NULL;
        }
        sh[d] = a == 1 ? c : a;
    }
    ref_iter_init(it, r, sh, 2, (const int[]){rl, rb}, (const int64_t *const[]){ld->shape, B->shape});
    *batch = ref_numel(r, sh);
    sh[r] = n;
    sh[r + 1] = k;
    return ref_new_result(E, K_F, r + 2, sh);
}

/* linalg_ldl_solve(LD, pivots, B, *, hermitian=False): A X = B, A = L D L^T of sytrf's 'L' form; the
 * batch dims broadcast */
static int op_ldl_solve(ex *E, int unused)
{
    (void)unused;
    const tens *ld = ref_arg_tensor(E, 0, "LD"), *pv = ld ? ref_arg_tensor(E, 1, "pivots") : NULL;
    const tens *B = pv ? ref_arg_tensor(E, 2, "B") : NULL;
    int64_t lb, n, m, bb, br, k, batch;
    if (!B || ref_mats_of(E, ld, &lb, &n, &m) || ref_mats_of(E, B, &bb, &br, &k))
        return -1;
    if (n != m || br != n || pv->n != lb * n)
        return ref_fail(E, "LD (n x n), pivots (n) and B (n x k) do not match");
    iter it;
    tens *o = ldl_result(E, ld, B, n, k, &it, &batch);
    ldl_t f;
    if (!o || ldl_new(E, &f, n, k))
        return -1;
    int rc = 0;
    for (int64_t b = 0; !rc && b < batch; b++, iter_next(&it))
        rc = ldl_solve_one(E, &f, ld, pv, B, (const int64_t[]){b, it.off[0], it.off[1]}, o);
    ldl_free(&f);
    return rc;
}

/* ---- Least squares ---- */

/* The drivers, as PyTorch names them; what each gives besides the solution. */
enum { D_GELS, D_GELSY, D_GELSD, D_GELSS };
static const char *const drivers[] = {"gels", "gelsy", "gelsd", "gelss"};

/* One problem's sizes and PyTorch's choices for it. */
typedef struct {
    int64_t batch, m, n, k, mx; /* A m x n, B m x k, mx = max(m, n) rows of LAPACK's B */
    int drv, vec, resid;        /* driver, B a vector, residuals given (m > n, not gelsy, full rank) */
    double rcond;
} lsq_t;

/* driver= (gelsy, PyTorch's CPU default) and rcond (eps(fp32) max(m, n) when absent or None). */
static int lsq_options(ex *E, lsq_t *q)
{
    const gr_arg *a = ref_arg(E, -1, "driver");
    q->drv = D_GELSY;
    if (ref_present(a)) {
        if (a->kind != GR_ARG_STR)
            return ref_fail(E, "argument driver is not a string");
        for (q->drv = 0; q->drv < 4 && strcmp(a->s, drivers[q->drv]); q->drv++)
            ;
        if (q->drv == 4)
            return ref_fail(E, "lstsq driver \"%s\"", a->s);
    }
    double r = -1;
    if (ref_arg_num(E, 2, "rcond", -1, &r))
        return -1;
    q->rcond = r >= 0 ? r : 0x1p-23 * (double)q->mx;
    return 0;
}

/* The four results' shapes as PyTorch's (the residuals' decided once the ranks are known: resid). */
static int lsq_results(ex *E, const tens *A, const lsq_t *q)
{
    int64_t sh[MAXR], zero = 0;
    int r = A->rank - 2;
    memcpy(sh, A->shape, (size_t)r * sizeof *sh);
    sh[r] = q->n;
    sh[r + 1] = q->k;
    if (!ref_new_result(E, K_F, r + (q->vec ? 1 : 2), sh))
        return -1;
    sh[r] = q->k;
    if (!(q->resid ? ref_new_result(E, K_F, r + (q->vec ? 0 : 1), sh) : ref_new_result(E, K_F, 1, &zero)))
        return -1;
    if (!(q->drv == D_GELS ? ref_new_result(E, K_I, 1, &zero) : ref_new_result(E, K_I, r, sh)))
        return -1;
    sh[r] = q->m < q->n ? q->m : q->n;
    int sv = q->drv == D_GELSD || q->drv == D_GELSS;
    return sv ? (ref_new_result(E, K_F, r + 1, sh) ? 0 : -1) : (ref_new_result(E, K_F, 1, &zero) ? 0 : -1);
}

/* One problem through LAPACK (fp32, as PyTorch): a (m x n) destroyed, x (mx x k) B in, the solution's
 * rows then the residual rows out; rank and singular values s.  0, or LAPACK's info. */
static lapack_int lsq_lapack(const lsq_t *q, float *a, float *x, lapack_int *jpvt, float *s, lapack_int *rank)
{
    lapack_int m = (lapack_int)q->m, n = (lapack_int)q->n, k = (lapack_int)q->k;
    *rank = (lapack_int)(q->m < q->n ? q->m : q->n);
    if (!m || !n || !k)
        return 0;
    switch (q->drv) {
    case D_GELS:
        return LAPACKE_sgels(LAPACK_ROW_MAJOR, 'N', m, n, k, a, n, x, k);
    case D_GELSY:
        memset(jpvt, 0, (size_t)n * sizeof *jpvt);
        return LAPACKE_sgelsy(LAPACK_ROW_MAJOR, m, n, k, a, n, x, k, jpvt, (float)q->rcond, rank);
    case D_GELSD:
        return LAPACKE_sgelsd(LAPACK_ROW_MAJOR, m, n, k, a, n, x, k, s, (float)q->rcond, rank);
    default:
        return LAPACKE_sgelss(LAPACK_ROW_MAJOR, m, n, k, a, n, x, k, s, (float)q->rcond, rank);
    }
}

/* P = lambda E_A + H (m x n, track w) for A at off, H_ij = 8 m n 2^-24 ||a_j||_2: the drivers' backward
 * error (Householder QR's column-wise one, Higham Thms 19.5, 20.3 and 21.4, with room; assumed to cover the
 * SVD drivers' normwise one); returns ||P||_F, which bounds ||dA||_2. */
static double lsq_perturbation(const lsq_t *q, const tens *A, int64_t off, int w, double *P)
{
    int64_t m = q->m, n = q->n;
    double F = 0, g = 8 * (double)(m * n) * 0x1p-24;
    for (int64_t j = 0; j < n; j++) {
        double c = 0;
        for (int64_t i = 0; i < m; i++)
            c += ldd(A, off + i * n + j) * ldd(A, off + i * n + j);
        for (int64_t i = 0; i < m; i++) {
            P[i * n + j] = ref_eb_lam(w) * ldb(A, w, off + i * n + j) + g * sqrt(c);
            F += P[i * n + j] * P[i * n + j];
        }
    }
    return sqrt(F);
}

/* |A^-1| of a square A at off into ai (a: scratch), or the singular values of A into sv; 0 or -1. */
static int lsq_lapack_double(const lsq_t *q, const tens *A, int64_t off, double *a, double *ai, double *sv)
{
    int64_t m = q->m, n = q->n;
    for (int64_t i = 0; i < m * n; i++)
        a[i] = ldd(A, off + i);
    if (sv)
        return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'N', (lapack_int)m, (lapack_int)n, a, (lapack_int)n, sv, NULL, 1,
                              NULL, (lapack_int)n) /* LAPACKE checks ldvt >= n even without V */
                   ? -1
                   : 0;
    lapack_int *ip = malloc((size_t)(n + 1) * sizeof *ip);
    for (int64_t i = 0; i < n * n; i++)
        ai[i] = i / n == i % n;
    int rc = !ip || LAPACKE_dgesv(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, a, (lapack_int)n, ip, ai,
                                  (lapack_int)n) ? -1 : 0;
    for (int64_t i = 0; !rc && i < n * n; i++)
        ai[i] = fabs(ai[i]);
    free(ip);
    return rc;
}

/* The bound (track w, before the store, into out: n x k) of a full-rank problem's solution X, kept only
 * while PyTorch's rank decision cannot change: sigma_min - ||P||_F > c rcond (sigma_1 + ||P||_F) (Weyl),
 * c = 1 for gelsd and gelss (thresholds on singular values), n for gelsy (its incremental condition
 * estimate, assumed within a factor n); gels needs only sigma_min > ||P||_F.  B's perturbation: lambda E_B
 * plus the backward error 8 m n 2^-24 ||b_j||_2.  A square A: the solve's rule (ref_solve_bound).  Else
 * Wedin's ||B^+ - A^+||_2 <= sqrt 2 ||A^+||_2 ||B^+||_2 ||dA||_2 (equal ranks) with ||B^+||_2 <=
 * 1 / (sigma_min - ||P||_F): every element of column j within sqrt 2 F ||b_j|| / (s (s - F)) + ||db_j|| /
 * (s - F).  Infinite otherwise; returns 1 when bounded (the rank then exact). */
static int lsq_bound(const lsq_t *q, const tens *A, int64_t off, const float *X, const tens *B, int64_t boff, int w,
                     double *out)
{
    int64_t m = q->m, n = q->n, k = q->k, mn = m < n ? m : n;
    double L = ref_eb_lam(w), *a = malloc((size_t)(3 * m * n + mn + m * k + 1) * sizeof *a);
    double *ai = a ? a + m * n : NULL, *P = a ? ai + m * n : NULL, *sv = a ? P + m * n : NULL, *eb = a ? sv + mn : NULL;
    int ok = a && mn && !lsq_lapack_double(q, A, off, a, NULL, sv);
    double F = ok ? lsq_perturbation(q, A, off, w, P) : 0, s = ok ? sv[mn - 1] : 0;
    ok = ok && s > F && (q->drv == D_GELS || s - F > (q->drv == D_GELSY ? (double)n : 1) * q->rcond * (sv[0] + F));
    ok = ok && (m != n || !lsq_lapack_double(q, A, off, a, ai, NULL));
    for (int64_t j = 0; ok && j < k; j++) {
        double nb = 0, ndb = 0;
        for (int64_t i = 0; i < m; i++) {
            nb += ldd(B, boff + i * k + j) * ldd(B, boff + i * k + j);
            ndb += L * ldb(B, w, boff + i * k + j) * L * ldb(B, w, boff + i * k + j);
        }
        nb = sqrt(nb);
        for (int64_t i = 0; i < m; i++)
            eb[i * k + j] = L * ldb(B, w, boff + i * k + j) + 8 * (double)(m * n) * 0x1p-24 * nb;
        double v = (sqrt(2) * F * nb / (s * (s - F)) + (sqrt(ndb) + 8 * (double)(m * n) * 0x1p-24 * nb) / (s - F)) / L;
        for (int64_t i = 0; m != n && i < n; i++)
            out[i * k + j] = v;
    }
    if (ok && m == n)
        ref_solve_bound(n, k, ai, P, X, eb, L, out);
    for (int64_t i = 0; !ok && i < n * k; i++)
        out[i] = INFINITY;
    free(a);
    return ok;
}

/* Every problem's LAPACK results: solutions (mx x k each), ranks, singular values (min(m, n) each). */
typedef struct {
    float *x, *s;
    lapack_int *rank;
} lsq_out;

static int lsq_solve_all(ex *E, const tens *A, const tens *B, lsq_t *q, lsq_out *o)
{
    int64_t m = q->m, n = q->n, k = q->k, mn = m < n ? m : n;
    o->x = calloc((size_t)(q->batch * q->mx * k + 1), sizeof *o->x);
    o->s = calloc((size_t)(q->batch * mn + 1), sizeof *o->s);
    o->rank = calloc((size_t)(q->batch + 1), sizeof *o->rank);
    float *a = malloc((size_t)(m * n + 1) * sizeof *a);
    lapack_int *jpvt = malloc((size_t)(n + 1) * sizeof *jpvt);
    int rc = o->x && o->s && o->rank && a && jpvt ? 0 : ref_fail(E, "out of host memory");
    q->resid = q->m > q->n && q->drv != D_GELSY;
    for (int64_t b = 0; !rc && b < q->batch; b++) {
        float *x = o->x + b * q->mx * k;
        for (int64_t i = 0; i < m * n; i++)
            a[i] = ldf(A, b * m * n + i);
        for (int64_t i = 0; i < m * k; i++)
            x[i] = ldf(B, b * m * k + i);
        lapack_int info = lsq_lapack(q, a, x, jpvt, o->s + b * mn, &o->rank[b]);
        if (info)
            rc = ref_fail(E, "lstsq (%s) failed: LAPACK info %d%s", drivers[q->drv], (int)info,
                          info > 0 && q->drv == D_GELS ? " (gels needs a matrix of full rank)" : "");
        q->resid &= q->drv == D_GELS || o->rank[b] == n;
    }
    free(a);
    free(jpvt);
    return rc;
}

/* Problem b's results: the solution (lsq_bound), residuals (unbounded), rank (exact when lsq_bound keeps
 * it), singular values (Weyl, ref_weyl_bound). */
static void lsq_put(ex *E, int first, const tens *A, const tens *B, const lsq_t *q, const lsq_out *o, int64_t b)
{
    int64_t n = q->n, k = q->k, mn = q->m < n ? q->m : n;
    tens *X = &E->res[first], *R = &E->res[first + 1], *K = &E->res[first + 2], *S = &E->res[first + 3];
    const float *x = o->x + b * q->mx * k;
    double *out = X->eb[0] ? malloc((size_t)(n * k + 1) * sizeof *out) : NULL;
    memcpy(X->f + b * n * k, x, (size_t)(n * k) * sizeof *x);
    for (int64_t j = 0; q->resid && j < k; j++) {
        double r = 0;
        for (int64_t i = n; i < q->m; i++)
            r += (double)x[i * k + j] * x[i * k + j];
        R->f[b * k + j] = (float)r;
    }
    if (q->drv != D_GELS)
        K->i[b] = o->rank[b];
    for (int64_t i = 0; S->n && i < mn; i++)
        S->f[b * mn + i] = o->s[b * mn + i];
    for (int w = 0; X->eb[0] && w < 2; w++) {
        int exact = out && lsq_bound(q, A, b * q->m * n, x, B, b * q->m * k, w, out);
        for (int64_t i = 0; i < n * k; i++)
            X->eb[w][b * n * k + i] = (float)(exact && isfinite(out[i]) ? ref_eb_store(x[i], out[i], w) : INFINITY);
        for (int64_t j = 0; q->resid && j < k; j++)
            R->eb[w][b * k + j] = INFINITY;
        if (q->drv != D_GELS)
            K->eb[w][b] = exact ? 0 : INFINITY;
        double e = ref_weyl_bound(A, b * q->m * n, q->m, n, 0, 0, w);
        for (int64_t i = 0; S->n && i < mn; i++)
            S->eb[w][b * mn + i] = (float)ref_eb_store(S->f[b * mn + i], e, w);
    }
    free(out);
}

/* linalg_lstsq(self, b, rcond=None, *, driver=None) -> (solution, residuals, rank, singular_values), as
 * PyTorch's CPU: the solution n x k; residuals (squared 2-norms of LAPACK's rows n..m-1 per column) when
 * m > n and the driver is not gelsy (gelsd, gelss: only when every matrix has rank n), else empty; rank
 * (empty for gels); singular values for gelsd and gelss, else empty.  Bounds: the solution of a full-rank
 * A by lsq_bound; of a rank-deficient one, and the residuals, infinite (not validated), as pinv's. */
static int op_lstsq(ex *E, int unused)
{
    (void)unused;
    const tens *A = ref_arg_tensor(E, 0, "self"), *B = A ? ref_arg_tensor(E, 1, "b") : NULL;
    lsq_t q = {0};
    if (!B || ref_mats_of(E, A, &q.batch, &q.m, &q.n))
        return -1;
    q.vec = B->rank == A->rank - 1;
    q.k = q.vec ? 1 : B->rank >= 2 ? B->shape[B->rank - 1] : 0;
    q.mx = q.m > q.n ? q.m : q.n;
    if ((!q.vec && B->rank != A->rank) || B->shape[B->rank - (q.vec ? 1 : 2)] != q.m || B->n != q.batch * q.m * q.k)
        return ref_fail(E, "lstsq's A and B of matching batches and rows (no broadcasting here)");
    if (lsq_options(E, &q))
        return -1;
    lsq_out o = {0};
    int first = E->nres, rc = lsq_solve_all(E, A, B, &q, &o) || lsq_results(E, A, &q);
    for (int64_t b = 0; !rc && b < q.batch; b++)
        lsq_put(E, first, A, B, &q, &o, b);
    free(o.x);
    free(o.s);
    free(o.rank);
    return rc ? -1 : 0;
}

static const ref_op ops[] = {
    {"linalg_ldl_solve", op_ldl_solve, 0},
    {"linalg_lstsq", op_lstsq, 0}, /* (solution, residuals, rank, singular_values) */
};
const ref_ops ref_lstsq_ops = REF_OPS(ops);
