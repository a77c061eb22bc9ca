/* ref_math.c: the unary functions of the reference executor and their error-bound rules. */
#include "ref_internal.h"

#include <math.h>

double ref_gelu(double x) { return 0.5 * x * (1 + erf(x * 0.70710678118654752440)); /* x / sqrt(2) */ }
double ref_gelu_tanh(double x)
{
    const double k = 0.7978845608028654; /* sqrt(2/pi) */
    return 0.5 * x * (1 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* The unary functions in double, for the bounds. */
static double un_eval(int op, double d)
{
    switch (op) {
    case U_NEG: return -d;
    case U_EXP: return exp(d);
    case U_LOG: return log(d);
    case U_SQRT: return sqrt(d);
    case U_RSQRT: return 1 / sqrt(d);
    case U_TANH: return tanh(d);
    case U_SIGMOID: return 1 / (1 + exp(-d));
    case U_RELU: return d > 0 ? d : 0;
    case U_SILU: return d / (1 + exp(-d));
    case U_SIN: return sin(d);
    case U_COS: return cos(d);
    case U_ABS: return fabs(d);
    case U_RECIP: return 1 / d;
    case U_ERF: return erf(d);
    case U_LOG1P: return log1p(d);
    case U_EXPM1: return expm1(d);
    case U_FLOOR: return floor(d);
    case U_CEIL: return ceil(d);
    case U_ROUND: return nearbyint(d);
    case U_TRUNC: return trunc(d);
    case U_SIGN: return (double)((d > 0) - (d < 0));
    case U_GELU: return ref_gelu(d);
    case U_GELU_TANH: return ref_gelu_tanh(d);
    case U_SQUARE: return d * d;
    default: return NAN;
    }
}

#define EB_PI 3.14159265358979323846

/* max |f(t) - f(x)| over |t - x| <= lam e, over lam (track w), f =
 * un_eval(op): f is monotone between the points tried (the ends, and the
 * extremes or the pole inside the interval), so the largest change is at
 * one of them. */
static double eb_swing(int op, double x, double e0, int w)
{
    if (!(e0 > 0) || isinf(x))
        return isnan(e0) ? e0 : 0;
    double e = ref_eb_lam(w) * e0, pts[6] = {x - e, x + e};
    int n = 2;
    switch (op) {
    case U_RECIP:
        if (x - e <= 0 && x + e >= 0)
            return INFINITY;
        break;
    case U_ABS:
    case U_SQUARE:
        if (x - e < 0 && x + e > 0)
            pts[n++] = 0;
        break;
    case U_SIN:
    case U_COS: {
        if (e >= EB_PI)
            return 2 / ref_eb_lam(w);
        double off = op == U_SIN ? EB_PI / 2 : 0; /* extremes at off + k pi: at most two inside */
        for (double k = ceil((x - e - off) / EB_PI); k * EB_PI + off <= x + e && n < 6; k++)
            pts[n++] = k * EB_PI + off;
        break;
    }
    default: /* monotone */
        break;
    }
    double fx = un_eval(op, x), s = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs(un_eval(op, pts[i]) - fx);
        if (isnan(d))
            return INFINITY;
        s = fmax(s, d);
    }
    return s / ref_eb_lam(w);
}

/* One SFP function of a value with a bound, stored. */
bv ref_bv_fn(int op, bv x)
{
    double v = un_eval(op, x.v);
    return (bv){v, ref_eb_store(v, eb_swing(op, x.v, x.e, x.w), x.w), x.w};
}

/* GELU as the device computes it (the compiler's decomposition):
 * x*0.5 * (1 + erf(x*0.70710678)), or with approximate="tanh"
 * x*0.5 * (1 + tanh(0.79788456 * (x + 0.044715*x*x*x))), every step stored. */
static bv bv_gelu(bv x, int tanh_form)
{
    bv half = ref_bv_mul(x, ref_bv_k(0.5)), inner;
    if (tanh_form) {
        bv x3 = ref_bv_mul(ref_bv_mul(x, x), x);
        bv s = ref_bv_add(x, ref_bv_mul(x3, ref_bv_k(0.044715)));
        inner = ref_bv_fn(U_TANH, ref_bv_mul(s, ref_bv_k(0.7978845608028654)));
    } else {
        inner = ref_bv_fn(U_ERF, ref_bv_mul(x, ref_bv_k(0.7071067811865476)));
    }
    return ref_bv_mul(half, ref_bv_add(inner, ref_bv_k(1.0)));
}

/* The bound (track w) of element x (bound e) of unary op `op` with a
 * float result. */
double ref_unary_bound(int op, double x, double e, int w)
{
    bv b = {x, e, w};
    switch (op) {
    case U_NEG: /* exact on the device */
    case U_ABS:
        return e;
    case U_RELU: /* selections: no rounding */
        return eb_swing(op, x, e, w);
    case U_SIGN: /* of NaN 0: both comparisons fail on the device too */
        return isnan(x) ? 0 : eb_swing(op, x, e, w);
    case U_GELU:
    case U_GELU_TANH:
        return bv_gelu(b, op == U_GELU_TANH).e;
    case U_SILU: /* x * sigmoid(x) */
        return ref_bv_mul(b, ref_bv_fn(U_SIGMOID, b)).e;
    case U_SQUARE: /* x * x */
        return ref_bv_mul(b, b).e;
    case U_EXPM1: /* exp(x) - 1 */
        return ref_bv_sub(ref_bv_fn(U_EXP, b), ref_bv_k(1)).e;
    case U_LOG1P: /* log(x + 1) */
        return ref_bv_fn(U_LOG, ref_bv_add(b, ref_bv_k(1))).e;
    default:
        return ref_bv_fn(op, b).e;
    }
}
