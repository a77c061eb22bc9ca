/* ref_special.c: reference special functions: modified Bessel functions (i0, i1, their scaled forms, k0, k1
 * and scaled), Bessel j0, j1, y0, y1 and the spherical j0, ndtri, log_ndtr, erfcx, erfinv, lgamma, digamma,
 * polygamma, mvlgamma, the Hurwitz zeta, the regularized incomplete gamma functions and Airy's Ai.
 *
 * Each is computed in double and stored as fp32; the methods and their
 * accuracy (far below fp32's 2^-24, so the store's rounding dominates):
 * - I0, I1: the power series (positive terms, no cancellation) up to 30,
 *   beyond it the asymptotic series e^x / sqrt(2 pi x) sum t_k, t_k =
 *   -t_{k-1} (4 nu^2 - (2k - 1)^2) / (8 k x), summed while it shrinks
 *   (its smallest term is below 1e-20 there);
 * - K0, K1: K_nu(x) = int_0^inf e^(-x cosh t) cosh(nu t) dt by the
 *   trapezoid rule with step 1/16: the integrand is analytic in the strip
 *   |Im t| < pi / 2 and decays double-exponentially, so the rule's error
 *   is about e^(-2 pi (pi/2) 16), far below double's rounding;
 * - ndtri: Acklam's rational start, then Newton steps on erfc (libm's,
 *   accurate to a few ulps in relative terms, also in the tails) until the
 *   step is below 1e-15 of the value; erfinv(y) likewise on erf, from
 *   ndtri((1 + y) / 2) / sqrt 2;
 * - erfcx: e^(x^2) erfc(x) up to 25, the asymptotic series beyond;
 *   log_ndtr(x) = log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1, log of
 *   erfc(-x / sqrt 2) / 2 above;
 * - digamma: the reflection for x < 0, the recurrence up to 10, then the
 *   asymptotic series; polygamma(n >= 1, x) = (-1)^(n+1) n! zeta(n + 1, x)
 *   with zeta by Euler-Maclaurin (Cephes' zeta.c, as PyTorch's);
 *   lgamma, j0, j1, y0, y1 from libm;
 * - Ai: below at f_airy_ai (series, K_1/3, the oscillating expansion).
 *
 * Error bounds: the swing of f over [x - lambda E, x + lambda E], over
 * lambda, then the store.  Each function is monotone between its listed
 * extrema (i0 at 0, lgamma at 1.4616..., mvlgamma's terms' minima), so
 * the swing is f at the interval's ends and those extrema; where it is not
 * (the oscillating j0, j1, y0, y1, spherical j0) a bound on |f'| over the
 * interval times lambda E; across a pole or out of the domain: infinite. */
#define _DEFAULT_SOURCE /* libm's Bessel functions j0, j1, y0, y1 (POSIX XSI) */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846
#define SQRT2 1.41421356237309504880
#define LOG_PI 1.14472988584940017414
#define LGAMMA_MIN 1.46163214496836234126 /* where lgamma and Gamma are least on x > 0 */

/* ---- Modified Bessel functions ---- */

/* I_nu(|x|) (nu 0 or 1), times e^-|x| when scaled. */
static double bessel_i_abs(int nu, double ax, int scaled)
{
    if (ax <= 30) {
        double t = nu ? ax / 2 : 1, s = t, q = ax * ax / 4;
        for (int k = 1; k < 500 && t > 1e-18 * s; k++) {
            t *= q / ((double)k * (k + nu));
            s += t;
        }
        return scaled ? s * exp(-ax) : s;
    }
    double mu = 4.0 * nu * nu, t = 1, s = 1;
    for (int k = 1; k < 100; k++) {
        double nt = -t * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * ax);
        if (fabs(nt) >= fabs(t) || fabs(nt) < 1e-18 * fabs(s))
            break;
        t = nt;
        s += t;
    }
    s /= sqrt(2 * PI * ax);
    return scaled ? s : s * exp(ax);
}

static double f_i0(double x) { return bessel_i_abs(0, fabs(x), 0); }
static double f_i0e(double x) { return bessel_i_abs(0, fabs(x), 1); }
static double f_i1(double x) { return copysign(bessel_i_abs(1, fabs(x), 0), x); }
static double f_i1e(double x) { return copysign(bessel_i_abs(1, fabs(x), 1), x); }

/* K_nu(x) for x > 0, times e^x when scaled (nu 0, 1, and 1/3 for Airy's Ai). */
static double bessel_k(double nu, double x, int scaled)
{
    if (isnan(x) || x < 0)
        return NAN;
    if (x == 0)
        return INFINITY;
    const double h = 1.0 / 16;
    double s = 0;
    for (int k = 0; k < 100000; k++) {
        double t = k * h, e = scaled ? -x * (cosh(t) - 1) : -x * cosh(t);
        double f = exp(e) * cosh(nu * t) * (k ? 1 : 0.5);
        s += f;
        if (f < 1e-18 * s || e < -745)
            break;
    }
    return s * h;
}

static double f_k0(double x) { return bessel_k(0, x, 0); }
static double f_k1(double x) { return bessel_k(1, x, 0); }
static double f_k0e(double x) { return bessel_k(0, x, 1); }
static double f_k1e(double x) { return bessel_k(1, x, 1); }

/* ---- The normal distribution and the error function ---- */

/* Acklam's rational approximation of the normal quantile (relative error 1.2e-9). */
static double ndtri_start(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01,  -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (p < 0.02425 || p > 1 - 0.02425) {
        double q = sqrt(-2 * log(p < 0.5 ? p : 1 - p));
        double x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
                   ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
        return p < 0.5 ? x : -x;
    }
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/* The normal quantile: Newton on Phi(x) = erfc(-x / sqrt 2) / 2 (or on its
 * upper tail for p > 1/2, so that 1 - p is never formed). */
static double f_ndtri(double p)
{
    if (isnan(p) || p < 0 || p > 1)
        return NAN;
    if (p == 0 || p == 1)
        return p ? INFINITY : -INFINITY;
    double x = ndtri_start(p);
    for (int it = 0; it < 50; it++) {
        double dens = exp(-x * x / 2) / sqrt(2 * PI), step;
        if (p < 0.5)
            step = (erfc(-x / SQRT2) / 2 - p) / dens;
        else
            step = -(erfc(x / SQRT2) / 2 - (1 - p)) / dens; /* 1 - p: exact for p >= 1/2 */
        x -= step;
        if (fabs(step) <= 1e-15 * fabs(x) + 1e-300)
            break;
    }
    return x;
}

/* e^(x^2) erfc(x) */
static double f_erfcx(double x)
{
    if (x < 25)
        return exp(x * x) * erfc(x);
    double t = 1, s = 1, q = 1 / (2 * x * x);
    for (int k = 1; k < 20; k++) {
        t *= -(2.0 * k - 1) * q;
        s += t;
    }
    return s / (x * sqrt(PI));
}

/* log Phi(x) */
static double f_log_ndtr(double x)
{
    if (x < -1)
        return log(f_erfcx(-x / SQRT2) / 2) - x * x / 2;
    return log1p(-erfc(x / SQRT2) / 2);
}

/* erf^-1(y): Newton on erf (on erfc near +-1, where 1 - |y| is exact) from ndtri's start */
static double f_erfinv(double y)
{
    if (isnan(y) || y < -1 || y > 1)
        return NAN;
    if (y == 1 || y == -1)
        return y * INFINITY;
    double ay = fabs(y), x = f_ndtri((1 + ay) / 2) / SQRT2;
    for (int it = 0; it < 50; it++) {
        double slope = 2 / sqrt(PI) * exp(-x * x);
        double step = ay < 0.5 ? (erf(x) - ay) / slope : -(erfc(x) - (1 - ay)) / slope;
        x -= step;
        if (fabs(step) <= 1e-15 * fabs(x) + 1e-300)
            break;
    }
    return copysign(x, y);
}

/* ---- Gamma and its derivatives ---- */

/* Hurwitz zeta(s, q) by Euler-Maclaurin (Cephes' zeta.c). */
static double hurwitz_zeta(double s, double q)
{
    static const double A[] = {12.0,
                               -720.0,
                               30240.0,
                               -1209600.0,
                               47900160.0,
                               -1.8924375803183791606e9,
                               7.47242496e10,
                               -2.950130727918164224e12,
                               1.1646782814350067249e14,
                               -4.5979787224074726105e15,
                               1.8152105401943546773e17,
                               -7.1661652561756670113e18};
    if (s == 1)
        return INFINITY;
    if (s < 1 || isnan(s) || isnan(q))
        return NAN;
    if (q <= 0) {
        if (q == floor(q))
            return INFINITY;
        if (s != floor(s))
            return NAN;
    }
    double sum = pow(q, -s), a = q, b = 0;
    int i = 0;
    while (i < 9 || a <= 9) {
        i++;
        a += 1;
        b = pow(a, -s);
        sum += b;
        if (fabs(b / sum) < 1.1e-16)
            return sum;
    }
    double w = a, k = 0, t;
    sum += b * w / (s - 1) - 0.5 * b;
    a = 1;
    for (i = 0; i < 12; i++) {
        a *= s + k;
        b /= w;
        t = a * b / A[i];
        sum += t;
        if (fabs(t / sum) < 1.1e-16)
            break;
        k += 1;
        a *= s + k;
        b /= w;
        k += 1;
    }
    return sum;
}

static double f_digamma(double x)
{
    if (x == 0)
        return copysign(INFINITY, -x);
    if (x < 0) {
        if (x == floor(x))
            return NAN;
        return f_digamma(1 - x) - PI / tan(PI * x);
    }
    double r = 0;
    for (; x < 10; x += 1)
        r -= 1 / x;
    double q = 1 / (x * x);
    return r + log(x) - 0.5 / x -
           q * (1.0 / 12 - q * (1.0 / 120 - q * (1.0 / 252 - q * (1.0 / 240 - q * (1.0 / 132)))));
}

static double polygamma(int n, double x)
{
    if (n == 0)
        return f_digamma(x);
    double f = 1;
    for (int k = 2; k <= n; k++)
        f *= k;
    return (n % 2 ? 1 : -1) * f * hurwitz_zeta(n + 1, x);
}

static double f_lgamma(double x) { return lgamma(x); }
static double f_j0(double x) { return j0(x); }
static double f_j1(double x) { return j1(x); }
static double f_y0(double x) { return x < 0 ? NAN : y0(x); }
static double f_y1(double x) { return x < 0 ? NAN : y1(x); }
static double f_sph_j0(double x) { return isinf(x) ? 0 : x == 0 ? 1 : sin(x) / x; }

/* ---- Airy's Ai ---- */

#define AI0 0.355028053887817239260   /* Ai(0) */
#define AIP0 -0.258819403792806798405 /* Ai'(0) */

/* Ai by the Maclaurin series Ai(0) f - |Ai'(0)| g, f = sum of 3^k (1/3)_k x^3k / (3k)!, g = sum of
 * 3^k (2/3)_k x^(3k+1) / (3k+1)!: each term from the last by x^3 / ((3k - 1) 3k) and x^3 / (3k (3k + 1)). */
static double airy_series(double x)
{
    double z = x * x * x, tf = 1, tg = x, f = 1, g = x;
    for (int k = 1; k < 200; k++) {
        tf *= z / ((3.0 * k - 1) * (3.0 * k));
        tg *= z / ((3.0 * k) * (3.0 * k + 1));
        f += tf;
        g += tg;
        if (fabs(tf) < 1e-18 * fabs(f) && fabs(tg) < 1e-18 * fabs(g))
            break;
    }
    return AI0 * f + AIP0 * g;
}

/* Ai(-x) for x >= 8 (DLMF 9.7.9): x^-1/4 / sqrt(pi) (sin(zeta + pi/4) P - cos(zeta + pi/4) Q) with
 * P = sum of (-1)^k u_2k zeta^-2k, Q = sum of (-1)^k u_2k+1 zeta^-(2k+1), u_k = u_k-1 (6k - 5)(6k - 3)(6k - 1)
 * / ((2k - 1) 216 k), summed while the terms shrink (zeta >= 15: the least term is below 1e-13). */
static double airy_oscillating(double x)
{
    double zeta = 2.0 / 3 * x * sqrt(x), u = 1, p = 1, q = 0, last = 1;
    for (int k = 1; k < 60; k++) {
        u *= (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216 * k);
        double t = u / pow(zeta, k);
        if (t >= last || t < 1e-17)
            break;
        last = t;
        int sign = (k / 2) % 2 ? -1 : 1;
        if (k % 2)
            q += sign * t;
        else
            p += sign * t;
    }
    return (sin(zeta + PI / 4) * p - cos(zeta + PI / 4) * q) / (sqrt(PI) * sqrt(sqrt(x)));
}

/* Ai(x): the series on [-8, 2] (its terms' cancellation costs at most e^zeta 2^-53, below 1e-9), the
 * oscillating expansion below -8, and above 2 Ai(x) = sqrt(x / 3) K_1/3(zeta) / pi, zeta = 2/3 x^3/2
 * (DLMF 9.6.1), K's integral of positive terms (no cancellation). */
static double f_airy_ai(double x)
{
    if (!isfinite(x)) /* NaN at both infinities, as PyTorch's (Cephes') airy_ai */
        return NAN;
    if (x < -8)
        return airy_oscillating(-x);
    if (x <= 2)
        return airy_series(x);
    double zeta = 2.0 / 3 * x * sqrt(x);
    return sqrt(x / 3) / PI * bessel_k(1.0 / 3, zeta, 1) * exp(-zeta);
}

/* ---- The table and the bounds ---- */

/* How a function's swing is found: monotone between extrema (mono), or
 * from a bound on |f'| over the interval [a, b] (lip). */
typedef struct {
    double (*f)(double);
    double lo, hi;                     /* the domain where the rule holds (closed; outside: infinite) */
    double ext;                        /* an interior extremum (NAN: none) */
    double (*lip)(double a, double b); /* |f'| bound over [a, b], or NULL */
} special;

/* The smallest |t| over [a, b]. */
static double least_abs(double a, double b) { return a > 0 ? a : b < 0 ? -b : 0; }

static double lip_j0(double a, double b) { (void)a, (void)b; return 0.5819; } /* |J0'| = |J1| <= 0.5819 */
static double lip_j1(double a, double b) { (void)a, (void)b; return 1; }      /* |J1'| = |J0 - J2| / 2 <= 1 */
static double lip_sph(double a, double b) { (void)a, (void)b; return 0.5; }   /* |(x cos x - sin x) / x^2| <= 0.44 */
/* |Y0'| = |Y1| <= 0.8 + 2 / (pi a); |Y1'| <= |Y0| + |Y1| / a, |Y0(t)| <= 1 + (2 / pi) |log t| (a > 0: the domain) */
static double lip_y0(double a, double b) { return 0.8 + 2 / (PI * least_abs(a, b)); }
static double lip_y1(double a, double b)
{
    double m = least_abs(a, b);
    return 1 + 0.64 * fabs(log(m)) + lip_y0(a, b) / m;
}

/* e^-x (I0 - I1 - I1/x), I1/x <= I0/2, e^-x I0 <= 1 */
static double lip_i1e(double a, double b) { (void)a, (void)b; return 1.5; }

/* |Ai'(t)| <= 0.26 + 0.57 M^1/4, M the interval's largest -t (0 when a >= 0): Ai' is monotone on t >= 0 from
 * Ai'(0) = -0.2588 to 0, and for t < 0 its envelope grows as |t|^1/4 / sqrt(pi) (DLMF 9.7.10; sqrt(pi)^-1 =
 * 0.5642); checked against central differences of Ai on 3 10^6 points of [-300, 10], largest ratio 0.9997. */
static double lip_airy_ai(double a, double b)
{
    (void)b;
    return 0.26 + 0.57 * sqrt(sqrt(a < 0 ? -a : 0));
}

/* The unary functions: op base name, function, domain, interior extrema, |f'| bound. */
#define SPECIAL_FNS(X)                                                                                                 \
    X(SP_I0, "i0", f_i0, -INFINITY, INFINITY, 0, NULL)                                                                 \
    X(SP_I0E, "special_i0e", f_i0e, -INFINITY, INFINITY, 0, NULL)                                                      \
    X(SP_I1, "special_i1", f_i1, -INFINITY, INFINITY, NAN, NULL)                                                       \
    X(SP_I1E, "special_i1e", f_i1e, -INFINITY, INFINITY, NAN, lip_i1e)                                                 \
    X(SP_MI0, "special_modified_bessel_i0", f_i0, -INFINITY, INFINITY, 0, NULL)                                        \
    X(SP_MI1, "special_modified_bessel_i1", f_i1, -INFINITY, INFINITY, NAN, NULL)                                      \
    X(SP_K0, "special_modified_bessel_k0", f_k0, 0x1p-1000, INFINITY, NAN, NULL)                                       \
    X(SP_K1, "special_modified_bessel_k1", f_k1, 0x1p-1000, INFINITY, NAN, NULL)                                       \
    X(SP_K0E, "special_scaled_modified_bessel_k0", f_k0e, 0x1p-1000, INFINITY, NAN, NULL)                              \
    X(SP_K1E, "special_scaled_modified_bessel_k1", f_k1e, 0x1p-1000, INFINITY, NAN, NULL)                              \
    X(SP_NDTRI, "special_ndtri", f_ndtri, 0x1p-1000, 1 - 0x1p-53, NAN, NULL)                                           \
    X(SP_LOG_NDTR, "special_log_ndtr", f_log_ndtr, -INFINITY, INFINITY, NAN, NULL)                                     \
    X(SP_ERFCX, "special_erfcx", f_erfcx, -INFINITY, INFINITY, NAN, NULL)                                              \
    X(SP_ERFINV, "erfinv", f_erfinv, -1 + 0x1p-53, 1 - 0x1p-53, NAN, NULL)                                             \
    X(SP_LGAMMA, "lgamma", f_lgamma, 0x1p-1000, INFINITY, LGAMMA_MIN, NULL)                                            \
    X(SP_DIGAMMA, "digamma", f_digamma, 0x1p-1000, INFINITY, NAN, NULL)                                                \
    X(SP_J0, "special_bessel_j0", f_j0, -INFINITY, INFINITY, NAN, lip_j0)                                              \
    X(SP_J1, "special_bessel_j1", f_j1, -INFINITY, INFINITY, NAN, lip_j1)                                              \
    X(SP_Y0, "special_bessel_y0", f_y0, 0x1p-1000, INFINITY, NAN, lip_y0)                                              \
    X(SP_Y1, "special_bessel_y1", f_y1, 0x1p-1000, INFINITY, NAN, lip_y1)                                              \
    X(SP_SPH_J0, "special_spherical_bessel_j0", f_sph_j0, -INFINITY, INFINITY, NAN, lip_sph)                           \
    X(SP_AIRY_AI, "special_airy_ai", f_airy_ai, -INFINITY, INFINITY, NAN, lip_airy_ai)

#define SP_ENUM(id, name, fn, lo, hi, ext, lip) id,
#define SP_ROW(id, name, fn, lo, hi, ext, lip) {fn, lo, hi, ext, lip},
#define SP_OP(id, name, fn, lo, hi, ext, lip) {name, op_unary, id},
enum { SPECIAL_FNS(SP_ENUM) };
static const special fns[] = {SPECIAL_FNS(SP_ROW)};

/* max |g(t) - v| over t in [a, b] for g monotone between the extrema ext. */
static double mono_swing(double (*g)(double, const void *), const void *ctx, double v, double a, double b,
                         const double *ext, int next)
{
    double s = fmax(fabs(g(a, ctx) - v), fabs(g(b, ctx) - v));
    for (int i = 0; i < next; i++)
        if (!isnan(ext[i]) && ext[i] > a && ext[i] < b)
            s = fmax(s, fabs(g(ext[i], ctx) - v));
    return s;
}

static double call_fn(double t, const void *ctx) { return ((const special *)ctx)->f(t); }

/* The bound (track w) of f(x) for x with bound e: its swing, stored. */
static double fn_bound(const special *s, double x, double e, double v, int w)
{
    if (!isfinite(v))
        return 0;
    if (e == 0)
        return ref_eb_store(v, 0, w);
    double L = ref_eb_lam(w), a = x - L * e, b = x + L * e, sw;
    if (!(a >= s->lo && b <= s->hi))
        return INFINITY;
    if (s->lip) {
        sw = s->lip(a, b) * L * e;
    } else {
        sw = mono_swing(call_fn, s, v, a, b, &s->ext, 1);
    }
    double d = sw / L;
    return isnan(d) ? INFINITY : ref_eb_store(v, d, w);
}

/* One of the unary functions of fns over self */
static int op_unary(ex *E, int code)
{
    const special *s = &fns[code];
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        double v = s->f(ldd(x, k));
        o->f[k] = (float)v;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)fn_bound(s, ldd(x, k), ldb(x, w, k), o->f[k], w);
    }
    return 0;
}

static double call_polygamma(double t, const void *ctx) { return polygamma(*(const int *)ctx, t); }

static double mvlgamma(double x, int p)
{
    double s = p * (p - 1) / 4.0 * LOG_PI;
    for (int j = 1; j <= p; j++)
        s += lgamma(x + (1 - j) / 2.0);
    return s;
}

enum { G_POLYGAMMA, G_MVLGAMMA };

/* polygamma(n, self), mvlgamma(self, p): monotone on x > 0 (polygamma),
 * between its terms' minima on x > (p - 1) / 2 (mvlgamma) */
static int op_gamma_family(ex *E, int how)
{
    int64_t n;
    const tens *x = ref_arg_tensor(E, how == G_POLYGAMMA ? 1 : 0, "self");
    if (!x || ref_arg_req_int(E, how == G_POLYGAMMA ? 0 : 1, how == G_POLYGAMMA ? "n" : "p", &n))
        return -1;
    if (n < (how == G_POLYGAMMA ? 0 : 1) || n > 100)
        return ref_fail(E, "%s %lld out of range", how == G_POLYGAMMA ? "order" : "dimension", (long long)n);
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    int order = (int)n;
    double lo = how == G_POLYGAMMA ? 0 : (n - 1) / 2.0;
    for (int64_t k = 0; k < x->n; k++) {
        double t = ldd(x, k), v = how == G_POLYGAMMA ? polygamma((int)n, t) : mvlgamma(t, (int)n);
        if (how == G_MVLGAMMA && !(t > lo))
            return ref_fail(E, "mvlgamma needs every element > %g, not %g", lo, t);
        o->f[k] = (float)v;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double e = ldb(x, w, k), L = ref_eb_lam(w), a = t - L * e, b = t + L * e, d;
            if (!isfinite(o->f[k]))
                d = 0;
            else if (!(a > lo))
                d = INFINITY;
            else if (how == G_POLYGAMMA)
                d = mono_swing(call_polygamma, &order, o->f[k], a, b, NULL, 0) / L;
            else { /* each term's minimum, shifted: the sum is monotone between consecutive ones only, so
                      take the swing of every term separately (an upper bound of the sum's) */
                d = 0;
                for (int j = 1; j <= n; j++) {
                    double sh = (1 - j) / 2.0, m = LGAMMA_MIN - sh, vj = lgamma(t + sh);
                    double sw = fmax(fabs(lgamma(a + sh) - vj), fabs(lgamma(b + sh) - vj));
                    if (m > a && m < b)
                        sw = fmax(sw, fabs(lgamma(LGAMMA_MIN) - vj));
                    d += sw / L;
                }
            }
            o->eb[w][k] = (float)(isnan(d) || isinf(d) ? INFINITY : d == 0 ? ref_eb_store(v, 0, w) : ref_eb_store(v, d, w));
        }
    }
    return 0;
}

/* special_zeta(self, other) = zeta(self, other) (Hurwitz), broadcast, numbers allowed: monotone in q
 * (q > 0, s > 1), in s when q >= 1: the box's corners */
static int op_zeta(ex *E, int unused)
{
    (void)unused;
    scalar_box b1, b2;
    const tens *s, *q;
    iter it;
    tens *o = ref_binary_float(E, "self", "other", &b1, &b2, &s, &q, &it);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        double sv = ldd(s, it.off[0]), qv = ldd(q, it.off[1]), v = hurwitz_zeta(sv, qv);
        o->f[k] = (float)v;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double L = ref_eb_lam(w), es = L * ldb(s, w, it.off[0]), eq = L * ldb(q, w, it.off[1]), d = 0;
            if (!isfinite(o->f[k]))
                d = 0;
            else if (sv - es <= 1 || qv - eq <= 0 || (es > 0 && qv - eq < 1))
                d = INFINITY;
            else
                for (int c = 0; c < 4; c++)
                    d = fmax(d, fabs(hurwitz_zeta(sv + (c & 1 ? es : -es), qv + (c & 2 ? eq : -eq)) - v) / L);
            o->eb[w][k] = (float)(isfinite(d) ? ref_eb_store(v, d, w) : INFINITY);
        }
    }
    return 0;
}

/* ---- Incomplete gamma ---- */

/* The regularized incomplete gamma P(a, x) (upper: Q = 1 - P): the series
 * for P where x <= max(1, a), the continued fraction for Q beyond (Cephes'
 * igam / igamc, as PyTorch's for moderate a). */
static double igam(double a, double x, int upper)
{
    if (isnan(a) || isnan(x) || a < 0 || x < 0)
        return NAN;
    if (a == 0)
        return x > 0 ? (upper ? 0 : 1) : NAN;
    if (x == 0)
        return upper ? 1 : 0;
    if (isinf(x))
        return upper ? 0 : 1;
    if (x > 1 && x > a) { /* the continued fraction of Q */
        const double big = 4.503599627370496e15, biginv = 2.22044604925031308085e-16;
        double ax = exp(a * log(x) - x - lgamma(a)), y = 1 - a, z = x + y + 1, c = 0;
        double pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x, ans = pkm1 / qkm1, t;
        do {
            c += 1, y += 1, z += 2;
            double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
            t = 1;
            if (qk != 0) {
                double r = pk / qk;
                t = fabs((ans - r) / r);
                ans = r;
            }
            pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
            if (fabs(pk) > big)
                pkm2 *= biginv, pkm1 *= biginv, qkm2 *= biginv, qkm1 *= biginv;
        } while (t > 1.1e-16 && c < 100000);
        return upper ? ans * ax : 1 - ans * ax;
    }
    double ax = exp(a * log(x) - x - lgamma(a + 1)), r = a, term = 1, sum = 1; /* the series of P */
    for (int n = 0; n < 100000 && term > 1.1e-16 * sum; n++) {
        r += 1;
        term *= x / r;
        sum += term;
    }
    return upper ? 1 - sum * ax : sum * ax;
}

/* igamma(self=a, other=x), igammac: P rises with x and falls with a (Q the
 * other way), so over the box of their intervals the extremes are at its
 * corners; a box reaching a <= 0 or x < 0: infinite */
static int op_igamma(ex *E, int upper)
{
    scalar_box b1, b2;
    const tens *a, *x;
    iter it;
    tens *o = ref_binary_float(E, "self", "other", &b1, &b2, &a, &x, &it);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        double av = ldd(a, it.off[0]), xv = ldd(x, it.off[1]), v = igam(av, xv, upper);
        o->f[k] = (float)v;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double L = ref_eb_lam(w), ea = L * ldb(a, w, it.off[0]), ex = L * ldb(x, w, it.off[1]), d = 0;
            if (isnan(v))
                d = 0;
            else if (ea + ex == 0)
                d = 0;
            else if (av - ea <= 0 || xv - ex < 0)
                d = INFINITY;
            else
                for (int c = 0; c < 4; c++)
                    d = fmax(d, fabs(igam(av + (c & 1 ? ea : -ea), xv + (c & 2 ? ex : -ex), upper) - v) / L);
            o->eb[w][k] = (float)(isfinite(d) ? ref_eb_store(v, d, w) : INFINITY);
        }
    }
    return 0;
}

static const ref_op ops[] = {
    SPECIAL_FNS(SP_OP)
    {"polygamma", op_gamma_family, G_POLYGAMMA},
    {"mvlgamma", op_gamma_family, G_MVLGAMMA},
    {"special_zeta", op_zeta, 0},
    {"igamma", op_igamma, 0},            /* P(a, x) */
    {"igammac", op_igamma, 1},           /* Q(a, x) = 1 - P(a, x) */
};
const ref_ops ref_special_ops = REF_OPS(ops);
