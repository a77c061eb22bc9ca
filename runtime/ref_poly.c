/* ref_poly.c: reference orthogonal polynomials p_n(x): Chebyshev T, U, V, W (and shifted), Hermite H and
 * He, Laguerre L, Legendre P, each by its three-term recurrence in double (n from a tensor, as an integer;
 * n < 0 gives 0, as PyTorch).
 *
 * Error bounds: by the mean value theorem |p_n(t) - p_n(x)| <= max |p_n'| over
 * [x - lambda E, x + lambda E] times lambda E; that maximum is bounded by
 * running the recurrence and its derivative (p_{k+1}' = a_k p_k + (a_k x +
 * b_k) p_k' - c_k p_{k-1}') in interval arithmetic over the interval, which
 * encloses every value the recurrence can take there.  Over lambda, then
 * the store.  An n known only within a bound: infinite. */
#include "ref_internal.h"

#include <math.h>

/* A closed interval, and the arithmetic that encloses its results. */
typedef struct {
    double lo, hi;
} ival;

static ival iv(double v) { return (ival){v, v}; }
static ival iv_add(ival a, ival b) { return (ival){a.lo + b.lo, a.hi + b.hi}; }
static ival iv_scale(ival a, double k) { return k >= 0 ? (ival){a.lo * k, a.hi * k} : (ival){a.hi * k, a.lo * k}; }
static ival iv_mul(ival a, ival b)
{
    double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    ival r = {p[0], p[0]};
    for (int i = 1; i < 4; i++)
        r.lo = fmin(r.lo, p[i]), r.hi = fmax(r.hi, p[i]);
    return r;
}
/* Widened by a relative 2^-50 each way: the double rounding of each step. */
static ival iv_round(ival a)
{
    double m = fmax(fabs(a.lo), fabs(a.hi)) * 0x1p-50;
    return (ival){a.lo - m, a.hi + m};
}

/* A family: p_0 = 1, p_1 = u1 x + v1, p_{k+1} = (a(k) x + b(k)) p_k - c(k) p_{k-1}, in the argument s x + t. */
typedef struct {
    double u1, v1;
    double (*a)(int64_t k), (*b)(int64_t k), (*c)(int64_t k);
    double s, t; /* the shifted Chebyshev polynomials take 2 x - 1 */
} family;

static double k_two(int64_t k) { (void)k; return 2; }
static double k_one(int64_t k) { (void)k; return 1; }
static double k_zero(int64_t k) { (void)k; return 0; }
static double k_2k(int64_t k) { return 2.0 * (double)k; }
static double k_k(int64_t k) { return (double)k; }
static double lag_a(int64_t k) { return -1.0 / (double)(k + 1); }
static double lag_b(int64_t k) { return (2.0 * (double)k + 1) / (double)(k + 1); }
static double lag_c(int64_t k) { return (double)k / (double)(k + 1); }
static double leg_a(int64_t k) { return (2.0 * (double)k + 1) / (double)(k + 1); }

/* The families: id, op name, p_1 = u1 x + v1, the recurrence's a, b, c, the argument s x + t. */
#define POLY_FAMILIES(X)                                                                                               \
    X(PL_T, "special_chebyshev_polynomial_t", 1, 0, k_two, k_zero, k_one, 1, 0)                                        \
    X(PL_U, "special_chebyshev_polynomial_u", 2, 0, k_two, k_zero, k_one, 1, 0)                                        \
    X(PL_V, "special_chebyshev_polynomial_v", 2, -1, k_two, k_zero, k_one, 1, 0)                                       \
    X(PL_W, "special_chebyshev_polynomial_w", 2, 1, k_two, k_zero, k_one, 1, 0)                                        \
    X(PL_ST, "special_shifted_chebyshev_polynomial_t", 1, 0, k_two, k_zero, k_one, 2, -1)                              \
    X(PL_SU, "special_shifted_chebyshev_polynomial_u", 2, 0, k_two, k_zero, k_one, 2, -1)                              \
    X(PL_SV, "special_shifted_chebyshev_polynomial_v", 2, -1, k_two, k_zero, k_one, 2, -1)                             \
    X(PL_SW, "special_shifted_chebyshev_polynomial_w", 2, 1, k_two, k_zero, k_one, 2, -1)                              \
    X(PL_H, "special_hermite_polynomial_h", 2, 0, k_two, k_zero, k_2k, 1, 0)                                           \
    X(PL_HE, "special_hermite_polynomial_he", 1, 0, k_one, k_zero, k_k, 1, 0)                                          \
    X(PL_L, "special_laguerre_polynomial_l", -1, 1, lag_a, lag_b, lag_c, 1, 0)                                         \
    X(PL_P, "special_legendre_polynomial_p", 1, 0, leg_a, k_zero, lag_c, 1, 0)

#define POLY_ROW(id, name, u1, v1, a, b, c, s, t) {u1, v1, a, b, c, s, t},
#define POLY_ENUM(id, name, u1, v1, a, b, c, s, t) id,
enum { POLY_FAMILIES(POLY_ENUM) };
static const family fams[] = {POLY_FAMILIES(POLY_ROW)};

/* p_n at y (the family's argument), and in *d an enclosure of |p_n'| (in
 * y) over [ylo, yhi] when d is not NULL. */
static double poly(const family *f, int64_t n, double y, double ylo, double yhi, double *d)
{
    if (n < 0)
        return 0;
    double p0 = 1, p1 = f->u1 * y + f->v1;
    ival Y = {ylo, yhi}, q0 = iv(1), q1 = iv_add(iv_scale(Y, f->u1), iv(f->v1)), d0 = iv(0), d1 = iv(f->u1);
    for (int64_t k = 1; k < n; k++) {
        double p2 = (f->a(k) * y + f->b(k)) * p1 - f->c(k) * p0;
        p0 = p1, p1 = p2;
        if (!d)
            continue;
        ival m = iv_add(iv_scale(Y, f->a(k)), iv(f->b(k)));
        ival q2 = iv_round(iv_add(iv_mul(m, q1), iv_scale(q0, -f->c(k))));
        ival d2 = iv_round(iv_add(iv_add(iv_scale(q1, f->a(k)), iv_mul(m, d1)), iv_scale(d0, -f->c(k))));
        q0 = q1, q1 = q2, d0 = d1, d1 = d2;
    }
    if (d)
        *d = n == 0 ? 0 : fmax(fabs(d1.lo), fabs(d1.hi));
    return n == 0 ? 1 : p1;
}

/* One of fams over (x, n), both tensors or numbers, broadcast */
static int op_poly(ex *E, int code)
{
    const family *f = &fams[code];
    scalar_box b1, b2;
    const tens *x, *n;
    iter it;
    tens *o = ref_binary_float(E, "x", "n", &b1, &b2, &x, &n, &it);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        double xv = ldd(x, it.off[0]), nv = ldd(n, it.off[1]);
        int64_t ni = isfinite(nv) && fabs(nv) < 1e6 ? (int64_t)nv : -1;
        double v = isnan(xv) ? NAN : poly(f, ni, f->s * xv + f->t, 0, 0, NULL);
        o->f[k] = (float)v;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double L = ref_eb_lam(w), ex = L * ldb(x, w, it.off[0]), d = 0;
            if (ldb(n, w, it.off[1]) > 0)
                d = INFINITY;
            else if (ex > 0 && ni > 0) {
                double y0 = f->s * (xv - ex) + f->t, y1 = f->s * (xv + ex) + f->t;
                poly(f, ni, f->s * xv + f->t, fmin(y0, y1), fmax(y0, y1), &d);
                d = d * fabs(f->s) * ex / L; /* |dp/dx| = |s| |dp/dy| */
            }
            o->eb[w][k] = (float)(!isfinite(o->f[k]) ? 0 : isfinite(d) ? ref_eb_store(v, d, w) : INFINITY);
        }
    }
    return 0;
}

#define POLY_OP(id, name, u1, v1, a, b, c, s, t) {name, op_poly, id},
static const ref_op ops[] = {POLY_FAMILIES(POLY_OP)};
const ref_ops ref_poly_ops = REF_OPS(ops);
