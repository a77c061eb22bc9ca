/* ref_bounds.c: the reference executor's error-bound rules (docs/validation.md, "Error bounds"). */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

/* ---- Error bounds: the element rules (docs/validation.md, "Error bounds") ----
 * The device's value of every stored tensor is the reference value plus an
 * error.  Two bounds of its magnitude are carried, per element, in two
 * tracks that follow the same rules:
 *
 * - track 0, the worst case: every error at its largest and of the worst
 *   sign, so the errors of the terms of a sum add up;
 * - track 1, the probabilistic scale S: rounding errors are independent
 *   and of mean zero, so the errors of the terms of a sum add in quadrature
 *   (root-sum-square); the error exceeds EB_LAMBDA S with probability at
 *   most 2 exp(-EB_LAMBDA^2 / 2) (Hoeffding).  A nonlinear function is
 *   followed over EB_LAMBDA times the bound, and its swing scaled back.
 *
 * A rule takes its arguments' reference values and bounds and gives the
 * result's: the propagated part (how far the exact op moves when its
 * arguments move within their bounds, at the reference values) plus the
 * op's own rounding when the device stores the result.  An infinite
 * reference value is exact by convention: the device holds a stand-in
 * (+-2^30) that saturates the same way. */

/* How far track w follows a nonlinear function: 1 or EB_LAMBDA. */
double ref_eb_lam(int w) { return w ? EB_LAMBDA : 1; }

/* The bound (track w) of a value v computed with propagated error prop
 * and then stored with relative rounding rel: the rounding of a magnitude
 * up to |v| + prop, or the flush to zero of one below 2^-31, added to prop
 * (track 0), or in quadrature (track 1: a new rounding is independent of
 * every earlier one). */
static double eb_round(double v, double prop, double rel, int w)
{
    if (isinf(v))
        return 0;
    double hi = fabs(v) + ref_eb_lam(w) * prop, r = rel * hi;
    if (fabs(v) - ref_eb_lam(w) * prop < EB_FLUSH && fmin(hi, EB_FLUSH) > r)
        r = fmin(hi, EB_FLUSH);
    return w ? sqrt(prop * prop + r * r) : prop + r;
}

/* The fp32 accumulation of n terms rounds each of its n - 1 partial sums,
 * each error at most 2^-24 of a partial sum, which sum |term| bounds: the
 * errors add up (track 0), or, independent and of mean zero, in quadrature
 * (track 1): sqrt(n - 1) 2^-24 sum |term|.  With EB_ACC = 2^-23 per term
 * both keep a factor 2 (docs/validation.md, "The pieces every rule uses"). */
double ref_eb_acc_n(double n, int w) { return w ? sqrt(n) : n; }

/* A result of one SFP operation, stored in DL16. */
double ref_eb_store(double v, double prop, int w) { return eb_round(v, prop, EB_RHO, w); }

/* A graph input or parameter: rounded to DL16 once, when uploaded. */
double ref_eb_leaf(double x) { return eb_round(x, 0, EB_U, 0); }

/* The device's copy of constant c: an fp32 immediate here, DL16 on a chip
 * that keeps constants so (rounded from the fp32 value). The sum of both
 * roundings bounds either copy's distance from c and from its fp32 value,
 * which is the reference's value of a constant output (OpInfo's full_like
 * to f64 of -0.731107023705885 was off by more than the larger alone). */
double ref_eb_const(double c)
{
    if (!isfinite(c))
        return 0;
    float f = (float)c;
    double d = fabs((double)isa_dl16_round(f) - (double)f);
    return fabs((double)f - c) + (isnan(d) ? 0 : d);
}

/* |a~ b~ - a b| for |a~ - a| <= ea, |b~ - b| <= eb (track w). */
double ref_eb_prod(double a, double ea, double b, double eb, int w)
{
    return eb_mul0(fabs(b), ea) + eb_mul0(fabs(a), eb) + eb_mul0(ref_eb_lam(w) * ea, eb);
}

/* |a~ / b~ - a / b|; unbounded when b~ may be 0.  An infinite b is the
 * device's stand-in, ISA_DL16_INF (docs/compiler.md, "Infinities and
 * NaNs"): a~ / b~ is within (|a| + ea) / ISA_DL16_INF of a / b = 0. */
double ref_eb_quot(double a, double ea, double b, double eb, int w)
{
    if (isinf(b))
        return isfinite(a) ? (fabs(a) + ea) / ISA_DL16_INF : INFINITY;
    double lb = ref_eb_lam(w) * eb;
    if (!(fabs(b) > lb))
        return INFINITY;
    return ((ea ? ea * fabs(b) : 0) + (eb ? fabs(a) * eb : 0)) / (fabs(b) * (fabs(b) - lb));
}

/* A comparison or a test against zero whose outcome may differ on the
 * device: its operands' bounds reach across the threshold. */
int ref_eb_flips(double d, double e, int w) { return e > 0 && fabs(d) <= ref_eb_lam(w) * e; }

/* The bound of a jump of size j (a bool that may flip: 1): in track 1
 * scaled so that EB_LAMBDA times it is the jump. */
double ref_eb_jump(double j, int w) { return j / ref_eb_lam(w); }

static int bv_w(bv a, bv b) { return a.w > b.w ? a.w : b.w; }
bv ref_bv_k(double c) { return (bv){c, ref_eb_const(c), 0}; }
bv ref_bv_add(bv a, bv b)
{
    int w = bv_w(a, b);
    return (bv){a.v + b.v, ref_eb_store(a.v + b.v, a.e + b.e, w), w};
}
bv ref_bv_sub(bv a, bv b)
{
    int w = bv_w(a, b);
    return (bv){a.v - b.v, ref_eb_store(a.v - b.v, a.e + b.e, w), w};
}
bv ref_bv_mul(bv a, bv b)
{
    int w = bv_w(a, b);
    return (bv){a.v * b.v, ref_eb_store(a.v * b.v, ref_eb_prod(a.v, a.e, b.v, b.e, w), w), w};
}
/* a / b: a divide, or a reciprocal and a multiply: two roundings */
bv ref_bv_div(bv a, bv b)
{
    int w = bv_w(a, b);
    double v = a.v / b.v;
    return (bv){v, ref_eb_store(v, ref_eb_store(v, ref_eb_quot(a.v, a.e, b.v, b.e, w), w), w), w};
}

void ref_acc_add(eb_acc *a, double v, double e)
{
    a->s += v;
    a->p += a->w ? e * e : e;
    a->mag += fabs(v) + e;
    a->n++;
}

bv ref_acc_sum(const eb_acc *a)
{
    double p = a->w ? sqrt(a->p) : a->p;
    return (bv){a->s, ref_eb_store(a->s, p + ref_eb_acc_n((double)a->n, a->w) * EB_ACC * a->mag, a->w), a->w};
}

/* The bound (track w) of a selection between a and b (bounds ea, eb)
 * that picked a (pick) or b: the picked bound, or when the condition may
 * flip, also the jump to the other side and that side's bound. */
double ref_select_bound(int flips, double a, double ea, double b, double eb, int pick, int w)
{
    double e = pick ? ea : eb;
    if (!flips)
        return e;
    /* A flipped element's error |b~ - a| reaches |b - a| + E_b exactly (a
     * selection is exact, and E_b = 0 for a constant), so the bound must not
     * lose anything to the fp32 storage of bounds (2^-24 relative per store,
     * and the division and multiplication by lambda): EB_JUMP_MARGIN. */
    double j = fabs(b - a) * (1 + EB_JUMP_MARGIN);
    double d = pick ? ref_eb_jump(j, w) + eb : ref_eb_jump(j, w) + ea;
    return isnan(d) ? INFINITY : fmax(e, d);
}

/* The bounds (track w) of y = softmax(x) over one row (D elements at
 * stride st, x with bounds ex) as the device computes it (the compiler's
 * decomposition: m = max x~, d = x~ - m, e = exp(d), s = sum e in fp32,
 * y = e / s, each stored in DL16).  Every error is written as a
 * perturbation Delta_j of the exponent (|Delta_j| <= D_j: the input's
 * bound, the rounding of d, the rounding of exp as log(1 + rho)), eta of
 * the sum and zeta of the quotient, so that
 *   y_j~ / y_j = e^Delta_j / (sum_k y_k e^Delta_k) (1 + zeta) / (1 + eta).
 * Track 0 bounds it at its extremes; track 1 takes it to first order,
 * Delta_j (1 - y_j) - sum_k!=j y_k Delta_k + zeta - eta, the sum over k in
 * quadrature, each term scaled by the exponential's growth over
 * EB_LAMBDA D_k.  A masked element (-inf, the device's -2^30) is exactly
 * 0.  Large logit bounds: the terms are formed in the log domain (y_k
 * underflows, e^(lambda D) overflows), each capped at 1 (a change of the
 * others moves y_j by at most y_j, its own by at most 1 - y_j), and the
 * result at max(y_j, y_max - y_j), y_max = (1 + zeta) / (1 - eta) the
 * largest value the device's e_j / s can take.  ey may be ex
 * (docs/validation.md). */
void ref_softmax_bound(const float *x, const float *ex, int64_t D, int64_t st, float *ey, int w)
{
    double m = -INFINITY, emax = 0, s = 0, s1 = 0, sp = 0, sm = 0, q2 = 0;
    int64_t nf = 0;
    int64_t jm = 0;
    for (int64_t j = 0; j < D; j++) {
        double v = x[j * st];
        if (isnan(v))
            m = NAN;
        if (isfinite(v)) {
            if (v > m)
                m = v, jm = j;
            nf++;
        }
    }
    if (!isfinite(m)) { /* every element masked, or a NaN: the reference is NaN */
        for (int64_t j = 0; j < D; j++)
            ey[j * st] = 0;
        return;
    }
    /* emax bounds |m~ - m|: m~ >= x~ at the max, and m~ - m <= x_k + E_k - m for every k */
    emax = ex[jm * st];
    for (int64_t j = 0; j < D; j++)
        if (isfinite(x[j * st]))
            emax = fmax(emax, (x[j * st] + ref_eb_lam(w) * ex[j * st] - m) / ref_eb_lam(w));
    for (int64_t j = 0; j < D; j++)
        if (isfinite(x[j * st]) && j != jm)
            s1 += exp(x[j * st] - m); /* 1 - y at the max is s1 / s, without cancellation */
    s = 1 + s1;
    double ls = log(s);
#define SM_DELTA(j) (ex[(j) * st] + EB_RHO * (fabs(x[(j) * st] - m) + ex[(j) * st] + emax) + EB_RHO / (1 - EB_RHO))
/* log of the growth g(d) = (e^(lambda d) - 1) / (lambda d) */
#define SM_LOGG(d) (EB_LAMBDA * (d) > 30 ? EB_LAMBDA * (d) - log(EB_LAMBDA * (d)) : log(SM_G(d)))
#define SM_G(d) ((d) > 0 ? expm1(EB_LAMBDA * (d)) / (EB_LAMBDA * (d)) : 1)
/* y_j D_j g(D_j), capped at 1 */
#define SM_T(j, dj) fmin(1, exp(x[(j) * st] - m - ls + log(dj) + SM_LOGG(dj)))
    for (int64_t j = 0; j < D; j++)
        if (isfinite(x[j * st])) {
            double ly = x[j * st] - m - ls, dj = SM_DELTA(j), t = SM_T(j, dj);
            sp += exp(ly + dj);
            sm += exp(ly - dj);
            q2 += t * t;
        }
    double eta = (1 + (double)nf * EB_ACC) * (1 + EB_RHO) - 1 + (double)nf * EB_FLUSH; /* s >= 1 */
    double zeta = (1 + EB_RHO) * (1 + EB_RHO) - 1, ymax = (1 + zeta) / (1 - eta);
    for (int64_t j = 0; j < D; j++) {
        if (!isfinite(x[j * st])) { /* masked: the device's exp gives exactly 0 */
            ey[j * st] = (float)(2 * EB_FLUSH);
            continue;
        }
        double ly = x[j * st] - m - ls, y = exp(ly), y1 = j == jm ? s1 / s : 1 - y, dj = SM_DELTA(j), r;
        if (w) {
            double t = SM_T(j, dj), others = sqrt(fmax(0, q2 - t * t));
            r = t * y1 + y * (others + zeta + eta);
        } else { /* y at the ratio's extremes, minus y */
            double up = sm > 0 ? exp(ly + dj - log(sm)) * (1 + zeta) / (1 - eta) - y : INFINITY;
            double lo = y - exp(ly - dj - log(sp)) * (1 - zeta) / (1 + eta);
            r = fmax(up, lo);
        }
        ey[j * st] = (float)(fmin(r, fmax(y, ymax - y)) + 2 * EB_FLUSH); /* exp's and y's flush to zero */
    }
#undef SM_DELTA
#undef SM_LOGG
#undef SM_G
#undef SM_T
}

/* ---- Linear algebra (ref_linalg.c, ref_lstsq.c) ---- */

/* The bounds (track w, before the store) of X = A^-1 B (n x m) given
 * |A^-1| (ai), the perturbation P = lambda E_A + H of A, and lambda E_B
 * (eb, NULL: B exact), into out (n * m); infinite when mu >= 1. */
void ref_solve_bound(int64_t n, int64_t m, const double *ai, const double *P, const float *X, const double *eb,
                     double L, double *out)
{
    double mu = 0, *t = malloc((size_t)(n * (m > n ? m : n) + 1) * sizeof *t);
    if (!t) {
        for (int64_t k = 0; k < n * m; k++)
            out[k] = INFINITY;
        return;
    }
    for (int64_t i = 0; i < n; i++) { /* mu = max row sum of |A^-1| P */
        double rs = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t k = 0; k < n; k++)
                rs += ai[i * n + k] * P[k * n + j];
        mu = fmax(mu, rs);
    }
    for (int64_t k = 0; k < n; k++) /* t = P |X| + lambda E_B */
        for (int64_t j = 0; j < m; j++) {
            double s = eb ? eb[k * m + j] : 0;
            for (int64_t l = 0; l < n; l++)
                s += P[k * n + l] * fabs(X[l * m + j]);
            t[k * m + j] = s;
        }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            double s = 0;
            for (int64_t k = 0; k < n; k++)
                s += ai[i * n + k] * t[k * m + j];
            out[i * m + j] = s;
        }
    for (int64_t j = 0; j < m; j++) {
        double cmax = 0;
        for (int64_t i = 0; i < n; i++)
            cmax = fmax(cmax, out[i * m + j]);
        for (int64_t i = 0; i < n; i++)
            out[i * m + j] = mu < 1 ? (out[i * m + j] + mu / (1 - mu) * cmax) / L : INFINITY;
    }
    free(t);
}

/* ||lambda E||_F of matrix off (r x c) of x (sym: the triangle read, mirrored), plus n 2^-23 ||A||_F, over lambda. */
double ref_weyl_bound(const tens *x, int64_t off, int64_t r, int64_t c, int sym, int lower, int w)
{
    double e2 = 0, a2 = 0, L = ref_eb_lam(w);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            if (sym && (lower ? j > i : j < i))
                continue;
            double k = sym && i != j ? 2 : 1, e = L * ldb(x, w, off + i * c + j), a = ldd(x, off + i * c + j);
            e2 += k * e * e;
            a2 += k * a * a;
        }
    return (sqrt(e2) + (double)(r > c ? r : c) * 0x1p-23 * sqrt(a2)) / L;
}
