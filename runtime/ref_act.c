/* ref_act.c: reference ops: activations and the elementwise math the compiler decomposes. */
/* hardtanh, elu, softplus, ...; log2, tan, asinh, atan, ...; xlogy, logaddexp, hypot, atan2, ...;
 * addcmul, lerp; isnan, isinf, nan_to_num; glu, dot, remainder, fmod, log_sigmoid_forward, prelu. */
#include "ref_internal.h"

#include "cc.h" /* cc_atan_coef: the polynomial whose steps the atan bounds follow */

#include <float.h>
#include <math.h>
#include <string.h>

/* Each value is PyTorch's formula in double; each bound follows the
 * compiler's decomposition (compiler/front/decompose.c) one stored SFP result at
 * a time, with the bv rules. */
enum {
    A_HARDTANH, A_LEAKY, A_ELU, A_THRESHOLD, A_HARDSIGMOID, A_HARDSWISH, A_SOFTPLUS, A_MISH, A_FRAC, A_LOG2, A_LOG10,
    A_EXP2, A_TAN, A_SINH, A_COSH, A_ASINH, A_ACOSH, A_ATANH, A_DEG2RAD, A_RAD2DEG, A_SINC, A_LOGIT, A_HARDSHRINK,
    A_SOFTSHRINK, A_ATAN, A_ASIN, A_ACOS, A_ERFC, A_ANGLE, A_ENTR,
};

#define LN2 0.69314718055994530942
#define PI 3.14159265358979323846

/* where(d > 0, a, b): the comparison may flip when d's bound reaches 0 */
static bv bv_sel(bv d, bv a, bv b)
{
    int pick = d.v > 0;
    return (bv){pick ? a.v : b.v, ref_select_bound(ref_eb_flips(d.v, d.e, d.w), a.v, a.e, b.v, b.e, pick, d.w), d.w};
}

/* x, or x * s (s != 1: one multiply) */
static bv bv_scale(bv x, double s) { return s == 1 ? x : ref_bv_mul(x, ref_bv_k(s)); }

/* x - c as a comparison's margin: no rounding, c's own */
static bv bv_margin(bv x, double c) { return (bv){x.v - c, x.e + ref_eb_const(c), x.w}; }

/* min(max(x, lo), hi): exact selections, 1-Lipschitz (NaN stays) */
static bv bv_clamp(bv x, double lo, double hi)
{
    double v = isnan(x.v) ? x.v : fmin(fmax(x.v, lo), hi);
    return (bv){v, x.e + ref_eb_const(lo) + ref_eb_const(hi), x.w};
}

static bv bv_hardsigmoid(bv x) { return ref_bv_mul(bv_clamp(ref_bv_add(x, ref_bv_k(3)), 0, 6), ref_bv_k(1.0 / 6)); }

/* where(x beta > th, x, log(exp(x beta) + 1) * (1 / beta)) */
static bv bv_softplus(bv x, double beta, double th)
{
    bv xb = bv_scale(x, beta);
    bv sp = ref_bv_fn(U_LOG, ref_bv_add(ref_bv_fn(U_EXP, xb), ref_bv_k(1)));
    return bv_sel(bv_margin(xb, th), x, bv_scale(sp, 1 / beta));
}

static bv bv_neg(bv x) { return (bv){-x.v, x.e, x.w}; }

/* log(a + sqrt(a*a + s)), or log(a) + ln 2 above 4096 (the compiler's
 * asinh / acosh) */
static bv bv_log_hyp(bv a, double s)
{
    bv r = ref_bv_fn(U_LOG, ref_bv_add(a, ref_bv_fn(U_SQRT, ref_bv_add(ref_bv_mul(a, a), ref_bv_k(s)))));
    return bv_sel(bv_margin(a, 4096), ref_bv_add(ref_bv_fn(U_LOG, a), ref_bv_k(LN2)), r);
}

/* sin(pi x) / (pi x), 1 at x == 0 (its limit: the quotient is followed at
 * the bound's reach instead) */
static bv bv_sinc(bv x)
{
    bv at = x.v != 0 ? x : (bv){fmax(ref_eb_lam(x.w) * x.e, 0x1p-60), x.e, x.w};
    bv px = ref_bv_mul(at, ref_bv_k(PI)), q = ref_bv_div(ref_bv_fn(U_SIN, px), px);
    int flips = x.e > 0 && fabs(x.v) <= ref_eb_lam(x.w) * x.e;
    return (bv){x.v == 0 ? 1 : q.v, ref_select_bound(flips, 1, 0, q.v, q.e, x.v == 0, x.w), x.w};
}

/* atan(r), r in [0, 1], as the compiler's polynomial (cc_atan_coef, Horner
 * in r^2): each step stored, plus the fit's own error CC_ATAN_ERR; the
 * value is atan's */
static bv bv_atan_unit(bv r)
{
    bv s = ref_bv_mul(r, r), p = ref_bv_mul(s, ref_bv_k(cc_atan_coef[CC_ATAN_NCOEF - 1]));
    for (int k = CC_ATAN_NCOEF - 2; k > 0; k--)
        p = ref_bv_mul(ref_bv_add(p, ref_bv_k(cc_atan_coef[k])), s);
    p = ref_bv_mul(ref_bv_add(p, ref_bv_k(cc_atan_coef[0])), r);
    return (bv){atan(r.v), p.e + CC_ATAN_ERR, r.w};
}

/* atan2(y, x) as the compiler folds atan(min / max) into its octant */
static bv bv_atan2(bv y, bv x)
{
    int w = y.w;
    if (isnan(y.v) || isnan(x.v))
        return (bv){NAN, 0, w};
    double e = fmax(y.e, x.e);
    bv ay = {fabs(y.v), y.e, w}, ax = {fabs(x.v), x.e, w};
    bv mx = {fmax(ay.v, ax.v), e, w}, mn = {fmin(ay.v, ax.v), e, w};
    bv a = bv_atan_unit(ref_bv_div(mn, mx));
    a = bv_sel((bv){ay.v - ax.v, y.e + x.e, w}, ref_bv_add(bv_neg(a), ref_bv_k(PI / 2)), a);
    a = bv_sel(bv_neg(x), ref_bv_add(bv_neg(a), ref_bv_k(PI)), a);
    a = bv_sel(bv_neg(y), bv_neg(a), a);
    return (bv){atan2(y.v, x.v), ref_select_bound(ref_eb_flips(mx.v, e, w), 0, 0, a.v, a.e, mx.v == 0, w), w};
}

/* atan(x): atan(|x|), or pi/2 - atan(1 / |x|) above 1, the sign restored */
static bv bv_atan(bv x)
{
    bv ax = {fabs(x.v), x.e, x.w}, big = bv_margin(ax, 1);
    bv a = bv_atan_unit(bv_sel(big, ref_bv_fn(U_RECIP, ax), ax));
    a = bv_sel(big, ref_bv_add(bv_neg(a), ref_bv_k(PI / 2)), a);
    return bv_sel(bv_neg(x), bv_neg(a), a);
}

/* sqrt((1 - x)(1 + x)) */
static bv bv_cosine_of(bv x)
{
    return ref_bv_fn(U_SQRT, ref_bv_mul(ref_bv_add(bv_neg(x), ref_bv_k(1)), ref_bv_add(x, ref_bv_k(1))));
}

/* More unary bounds: the math functions the compiler writes with exp, log,
 * sin, cos, sqrt (compiler/front/decompose.c, math_fn) and the shrinks. */
static bv bv_math(int op, bv b, const double *p)
{
    switch (op) {
    case A_LOG2: return ref_bv_mul(ref_bv_fn(U_LOG, b), ref_bv_k(1 / LN2));
    case A_LOG10: return ref_bv_mul(ref_bv_fn(U_LOG, b), ref_bv_k(1 / log(10.0)));
    case A_EXP2: return ref_bv_fn(U_EXP, ref_bv_mul(b, ref_bv_k(LN2)));
    case A_TAN: return ref_bv_div(ref_bv_fn(U_SIN, b), ref_bv_fn(U_COS, b));
    case A_SINH: return ref_bv_mul(ref_bv_sub(ref_bv_fn(U_EXP, b), ref_bv_fn(U_EXP, bv_neg(b))), ref_bv_k(0.5));
    case A_COSH: return ref_bv_mul(ref_bv_add(ref_bv_fn(U_EXP, b), ref_bv_fn(U_EXP, bv_neg(b))), ref_bv_k(0.5));
    case A_ASINH: {
        bv r = bv_log_hyp((bv){fabs(b.v), b.e, b.w}, 1);
        return bv_sel(bv_neg(b), bv_neg(r), r);
    }
    case A_ACOSH: return bv_log_hyp(b, -1);
    case A_ATANH: {
        bv q = ref_bv_div(ref_bv_add(b, ref_bv_k(1)), ref_bv_add(bv_neg(b), ref_bv_k(1)));
        return ref_bv_mul(ref_bv_fn(U_LOG, q), ref_bv_k(0.5));
    }
    case A_DEG2RAD: return ref_bv_mul(b, ref_bv_k(PI / 180));
    case A_RAD2DEG: return ref_bv_mul(b, ref_bv_k(180 / PI));
    case A_SINC: return bv_sinc(b);
    case A_LOGIT: {
        bv z = isnan(p[0]) ? b : bv_clamp(b, p[0], 1 - p[0]);
        return ref_bv_fn(U_LOG, ref_bv_div(z, ref_bv_add(bv_neg(z), ref_bv_k(1))));
    }
    case A_ERFC: return ref_bv_add(bv_neg(ref_bv_fn(U_ERF, b)), ref_bv_k(1));
    case A_ANGLE: /* pi is a full() tensor: a stored DL16 value, not an immediate */
        return bv_sel(bv_neg(b), (bv){PI, ref_eb_store(PI, ref_eb_const(PI), b.w), b.w}, ref_bv_k(0));
    case A_ENTR: { /* where(x > 0, -x log x, where(x == 0, 0, -inf)) */
        bv e = bv_neg(ref_bv_mul(b, ref_bv_fn(U_LOG, b)));
        bv z = {b.v == 0 ? 0 : -INFINITY, 0, b.w};
        if (ref_eb_flips(b.v, b.e, b.w)) /* x may be 0 or negative on the device: -inf */
            return (bv){b.v > 0 ? e.v : z.v, INFINITY, b.w};
        return b.v > 0 ? e : z;
    }
    case A_ATAN: return bv_atan(b);
    case A_ASIN: return bv_atan2(b, bv_cosine_of(b));
    case A_ACOS: return bv_atan2(bv_cosine_of(b), b);
    case A_HARDSHRINK: return bv_sel((bv){fabs(b.v) - p[0], b.e + ref_eb_const(p[0]), b.w}, b, ref_bv_k(0));
    default: { /* softshrink */
        bv lo = bv_sel(bv_margin(bv_neg(b), p[0]), ref_bv_add(b, ref_bv_k(p[0])), ref_bv_k(0));
        return bv_sel(bv_margin(b, p[0]), ref_bv_sub(b, ref_bv_k(p[0])), lo);
    }
    }
}

/* The device's bound (track w) for op on x (bound e), parameters p. */
static double act_bound(int op, double x, double e, int w, const double *p)
{
    bv b = {x, e, w};
    switch (op) {
    case A_HARDTANH: return bv_clamp(b, p[0], p[1]).e;
    case A_LEAKY: return bv_sel(bv_margin(b, 0), b, ref_bv_mul(b, ref_bv_k(p[0]))).e;
    case A_ELU: { /* where(x > 0, x * scale, (exp(x * input_scale) - 1) * alpha * scale) */
        bv em1 = ref_bv_sub(ref_bv_fn(U_EXP, bv_scale(b, p[2])), ref_bv_k(1));
        return bv_sel(bv_margin(b, 0), bv_scale(b, p[1]), bv_scale(em1, p[0] * p[1])).e;
    }
    case A_THRESHOLD: return bv_sel(bv_margin(b, p[0]), b, ref_bv_k(p[1])).e;
    case A_HARDSIGMOID: return bv_hardsigmoid(b).e;
    case A_HARDSWISH: return ref_bv_mul(b, bv_hardsigmoid(b)).e;
    case A_SOFTPLUS: return bv_softplus(b, p[0], p[1]).e;
    case A_MISH: return ref_bv_mul(b, ref_bv_fn(U_TANH, bv_softplus(b, 1, 20))).e;
    case A_FRAC: return ref_bv_sub(b, ref_bv_fn(U_TRUNC, b)).e;
    default: return bv_math(op, b, p).e;
    }
}

/* PyTorch's value of op on x. */
static double act_value(int op, double x, const double *p)
{
    switch (op) {
    case A_HARDTANH: return isnan(x) ? x : fmin(fmax(x, p[0]), p[1]);
    case A_LEAKY: return x > 0 ? x : x * p[0];
    case A_ELU: return x > 0 ? x * p[1] : expm1(x * p[2]) * p[0] * p[1];
    case A_THRESHOLD: return x > p[0] ? x : p[1];
    case A_HARDSIGMOID: return isnan(x) ? x : fmin(fmax(x + 3, 0), 6) / 6;
    case A_HARDSWISH: return isnan(x) ? x : x * fmin(fmax(x + 3, 0), 6) / 6;
    case A_SOFTPLUS: return x * p[0] > p[1] ? x : log1p(exp(x * p[0])) / p[0];
    case A_MISH: return x * tanh(x > 20 ? x : log1p(exp(x)));
    case A_FRAC: return x - trunc(x);
    case A_LOG2: return log2(x);
    case A_LOG10: return log10(x);
    case A_EXP2: return exp2(x);
    case A_TAN: return tan(x);
    case A_SINH: return sinh(x);
    case A_COSH: return cosh(x);
    case A_ASINH: return asinh(x);
    case A_ACOSH: return acosh(x);
    case A_ATANH: return atanh(x);
    case A_DEG2RAD: return x * (PI / 180);
    case A_RAD2DEG: return x * (180 / PI);
    case A_SINC: return x == 0 ? 1 : sin(PI * x) / (PI * x);
    case A_LOGIT: {
        double z = isnan(p[0]) || isnan(x) ? x : fmin(fmax(x, p[0]), 1 - p[0]);
        return log(z / (1 - z));
    }
    case A_ERFC: return erfc(x);
    case A_ANGLE: return isnan(x) ? x : x < 0 ? PI : 0;
    case A_ENTR: return isnan(x) ? x : x > 0 ? -x * log(x) : x == 0 ? 0 : -INFINITY;
    case A_ATAN: return atan(x);
    case A_ASIN: return asin(x);
    case A_ACOS: return acos(x);
    case A_HARDSHRINK: return fabs(x) > p[0] ? x : 0;
    default: return x > p[0] ? x - p[0] : x < -p[0] ? x + p[0] : 0; /* softshrink */
    }
}

/* The op's parameters from its arguments, PyTorch's defaults. */
static int act_params(ex *E, int op, double *p)
{
    const char *b = E->node->base;
    switch (op) {
    case A_HARDTANH:
        if (!strcmp(b, "relu6")) {
            p[0] = 0, p[1] = 6;
            return 0;
        }
        return ref_arg_num(E, 1, "min_val", -1, &p[0]) || ref_arg_num(E, 2, "max_val", 1, &p[1]) ? -1 : 0;
    case A_LEAKY: return ref_arg_num(E, 1, "negative_slope", 0.01, &p[0]);
    case A_ELU: /* alpha, scale, input_scale */
        if (!strcmp(b, "selu")) {
            p[0] = 1.6732632423543772848170429916717, p[1] = 1.0507009873554804934193349852946, p[2] = 1;
            return 0;
        }
        if (ref_arg_num(E, 1, "alpha", 1, &p[0]))
            return -1;
        if (!strcmp(b, "celu")) {
            p[1] = 1, p[2] = 1 / p[0];
            return 0;
        }
        return ref_arg_num(E, 2, "scale", 1, &p[1]) || ref_arg_num(E, 3, "input_scale", 1, &p[2]) ? -1 : 0;
    case A_THRESHOLD:
        return ref_arg_num(E, 1, "threshold", 0, &p[0]) || ref_arg_num(E, 2, "value", 0, &p[1]) ? -1 : 0;
    case A_SOFTPLUS: return ref_arg_num(E, 1, "beta", 1, &p[0]) || ref_arg_num(E, 2, "threshold", 20, &p[1]) ? -1 : 0;
    case A_LOGIT: p[0] = NAN; return ref_present(ref_arg(E, 1, "eps")) ? ref_arg_num(E, 1, "eps", 0, &p[0]) : 0;
    case A_HARDSHRINK:
    case A_SOFTSHRINK: return ref_arg_num(E, 1, "lambd", 0.5, &p[0]);
    default: return 0;
    }
}

static int op_act(ex *E, int op)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    double p[3] = {0, 0, 0};
    if (!x || act_params(E, op, p))
        return -1;
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        o->f[k] = (float)act_value(op, ldd(x, k), p);
        for (int w = 0; o->eb[0] && w < 2; w++) /* a NaN result is exact (the device's NaN) */
            o->eb[w][k] = isnan(o->f[k]) ? 0 : (float)act_bound(op, ldd(x, k), ldb(x, w, k), w, p);
    }
    return 0;
}

/* glu(self, dim=-1): the first half of dim times sigmoid of the second */
static int op_glu(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim = -1;
    int d = 0;
    if (!x || ref_arg_int(E, 1, "dim", -1, &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    if (!x->rank || x->shape[d] % 2 || kind_of(x->dtype) != K_F)
        return ref_fail(E, "glu needs a float tensor whose dim %d has an even size", d);
    int64_t shape[MAXR], outer = 1, inner = 1, h = x->shape[d] / 2;
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = h;
    for (int i = 0; i < d; i++)
        outer *= x->shape[i];
    for (int i = d + 1; i < x->rank; i++)
        inner *= x->shape[i];
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    if (!o)
        return -1;
    for (int64_t i = 0, k = 0; i < outer; i++)
        for (int64_t j = 0; j < h * inner; j++, k++) {
            int64_t ia = i * 2 * h * inner + j, ib = ia + h * inner;
            double a = ldd(x, ia), b = ldd(x, ib);
            o->f[k] = (float)(a / (1 + exp(-b)));
            for (int w = 0; o->eb[0] && w < 2; w++)
                o->eb[w][k] =
                    (float)ref_bv_mul((bv){a, ldb(x, w, ia), w}, ref_bv_fn(U_SIGMOID, (bv){b, ldb(x, w, ib), w})).e;
        }
    return 0;
}

/* The bound of a - F(a / b) b (F floor for remainder, trunc for fmod) as
 * the compiler decomposes it: a divide, F (exact integers: it moves as far
 * as F moves over the quotient's bound), a multiply, a subtract. */
static double rem_bound(int fm, double a, double ea, double b, double eb, int w)
{
    if (isinf(b) && isfinite(a)) { /* a itself, or remainder's a + b = b where their signs differ */
        if (fm)
            return ea;
        if (fabs(a) <= ref_eb_lam(w) * ea && a != 0)
            return INFINITY; /* a's sign, so which of the two, is not known */
        return a != 0 && (a < 0) != (b < 0) ? 0 : ea;
    }
    bv q = ref_bv_div((bv){a, ea, w}, (bv){b, eb, w});
    double f = fm ? trunc(q.v) : floor(q.v), le = ref_eb_lam(w) * q.e, eq = 0;
    if (le > 0) {
        double lo = fm ? trunc(q.v - le) : floor(q.v - le), hi = fm ? trunc(q.v + le) : floor(q.v + le);
        eq = fmax(fabs(lo - f), fabs(hi - f)) / ref_eb_lam(w);
    }
    if (isnan(eq))
        return INFINITY;
    return ref_bv_sub((bv){a, ea, w}, ref_bv_mul((bv){f, eq, w}, (bv){b, eb, w})).e;
}

/* remainder(self, other) (sign of other), fmod(self, other) (sign of self) */
static int op_rem(ex *E, int fm)
{
    scalar_box b0, b1;
    const tens *a = ref_operand(E, ref_arg(E, 0, "self"), "self", &b0);
    const tens *b = a ? ref_operand(E, ref_arg(E, 1, "other"), "other", &b1) : NULL;
    const tens *ab[2] = {a, b};
    int rank = 0;
    int64_t shape[MAXR];
    if (!a || !b || ref_bcast(E, 2, ab, &rank, shape))
        return -1;
    kind kr = kind_of(a->dtype) > kind_of(b->dtype) ? kind_of(a->dtype) : kind_of(b->dtype);
    tens *o = ref_new_result(E, kr == K_B ? K_I : kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ab);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        if (kr != K_F) {
            int64_t x = ldi(a, it.off[0]), y = ldi(b, it.off[1]);
            if (y == 0)
                return ref_fail(E, "integer %s by zero", fm ? "fmod" : "remainder");
            int64_t r = y == -1 ? 0 : x % y;
            o->i[k] = !fm && r != 0 && (r < 0) != (y < 0) ? r + y : r;
        } else {
            double x = ldd(a, it.off[0]), y = ldd(b, it.off[1]);
            double r = isinf(y) && fabs(x) == ISA_DL16_INF ? NAN : fmod(x, y); /* an input's inf as uploaded */
            o->f[k] = (float)(!fm && r != 0 && (r < 0) != (y < 0) ? r + y : r);
        }
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)rem_bound(fm, ldd(a, it.off[0]), ldb(a, w, it.off[0]), ldd(b, it.off[1]),
                                           ldb(b, w, it.off[1]), w);
    }
    return 0;
}

/* ---- Binary and ternary functions, broadcasting ---- */

enum { B2_XLOGY, B2_XLOG1PY, B2_LOGADDEXP, B2_LOGADDEXP2, B2_FMAX, B2_FMIN, B2_HEAVISIDE, B2_ATAN2, B2_HYPOT };

static double bin_value(int op, double x, double y)
{
    switch (op) {
    case B2_XLOGY: return isnan(y) ? y : x == 0 ? 0 : x * log(y);
    case B2_XLOG1PY: return isnan(y) ? y : x == 0 ? 0 : x * log1p(y);
    case B2_LOGADDEXP:
    case B2_LOGADDEXP2: {
        if (isinf(x) && x == y)
            return x;
        double m = fmax(x, y), d = fabs(x - y);
        return op == B2_LOGADDEXP ? m + log1p(exp(-d)) : m + log1p(exp2(-d)) / LN2;
    }
    case B2_FMAX: return fmax(x, y);
    case B2_FMIN: return fmin(x, y);
    case B2_ATAN2: return atan2(x, y);
    case B2_HYPOT: return hypot(x, y);
    default: return x == 0 ? y : x > 0; /* heaviside */
    }
}

/* The bound of op on a, b as the compiler decomposes it. */
static double bin_bound(int op, bv a, bv b)
{
    int w = a.w;
    switch (op) {
    case B2_XLOGY:
    case B2_XLOG1PY: { /* where(y != y, y, where(x == 0, 0, x * log(y))) */
        if (isnan(b.v))
            return 0;
        bv ly = ref_bv_fn(U_LOG, op == B2_XLOGY ? b : ref_bv_add(b, ref_bv_k(1))), m = ref_bv_mul(a, ly);
        return ref_select_bound(ref_eb_flips(a.v, a.e, w), 0, 0, m.v, m.e, a.v == 0, w);
    }
    case B2_LOGADDEXP:
    case B2_LOGADDEXP2: { /* maximum(a, b) + log(exp(-|a - b|) + 1), base 2 scaled */
        if (isinf(a.v) || isinf(b.v))
            return 0;
        bv d = ref_bv_sub(a, b);
        d.v = fabs(d.v);
        if (op == B2_LOGADDEXP2)
            d = ref_bv_mul(d, ref_bv_k(LN2));
        bv l = ref_bv_fn(U_LOG, ref_bv_add(ref_bv_fn(U_EXP, bv_neg(d)), ref_bv_k(1)));
        if (op == B2_LOGADDEXP2)
            l = ref_bv_mul(l, ref_bv_k(1 / LN2));
        return ref_bv_add((bv){fmax(a.v, b.v), fmax(a.e, b.e), w}, l).e;
    }
    case B2_FMAX:
    case B2_FMIN: /* selections */
        return isnan(a.v) ? b.e : isnan(b.v) ? a.e : fmax(a.e, b.e);
    case B2_ATAN2: return bv_atan2(a, b).e;
    case B2_HYPOT: { /* m sqrt(r*r + 1), m = max(|a|, |b|) (a selection), r = min / m; m == 0: 0 */
        double e = fmax(a.e, b.e);
        bv m = {fmax(fabs(a.v), fabs(b.v)), e, w}, r = ref_bv_div((bv){fmin(fabs(a.v), fabs(b.v)), e, w}, m);
        bv h = ref_bv_mul(m, ref_bv_fn(U_SQRT, ref_bv_add(ref_bv_mul(r, r), ref_bv_k(1))));
        return ref_select_bound(ref_eb_flips(m.v, e, w), 0, 0, h.v, h.e, m.v == 0, w);
    }
    default: /* heaviside: where(x == 0, v, x > 0) */
        if (ref_eb_flips(a.v, a.e, w))
            return ref_eb_jump(fmax(1, fmax(fabs(b.v), fabs(b.v - 1))), w) + b.e;
        return a.v == 0 ? b.e : 0;
    }
}

static int op_bin(ex *E, int op)
{
    scalar_box b0, b1;
    const char *k2 = op == B2_HEAVISIDE ? "values" : "other";
    const tens *a = ref_operand(E, ref_arg(E, 0, "self"), "self", &b0);
    const tens *b = a ? ref_operand(E, ref_arg(E, 1, k2), k2, &b1) : NULL;
    const tens *ab[2] = {a, b};
    int rank = 0;
    int64_t shape[MAXR];
    if (!a || !b || ref_bcast(E, 2, ab, &rank, shape))
        return -1;
    tens *o = ref_new_result(E, K_F, rank, shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ab);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int64_t i = it.off[0], j = it.off[1];
        o->f[k] = (float)bin_value(op, ldd(a, i), ldd(b, j));
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)bin_bound(op, (bv){ldd(a, i), ldb(a, w, i), w}, (bv){ldd(b, j), ldb(b, w, j), w});
    }
    return 0;
}

/* addcmul / addcdiv(self, tensor1, tensor2, value=1): self + value (t1 op t2);
 * lerp(self, end, weight): self + weight (end - self), PyTorch's value
 * from the nearer end */
enum { T3_ADDCMUL, T3_ADDCDIV, T3_LERP };

static int op_tern(ex *E, int op)
{
    scalar_box bx[3];
    static const char *const keys[3][3] = {{"self", "tensor1", "tensor2"}, {"self", "tensor1", "tensor2"},
                                           {"self", "end", "weight"}};
    const tens *t[3];
    for (int i = 0; i < 3; i++)
        if (!(t[i] = ref_operand(E, ref_arg(E, i, keys[op][i]), keys[op][i], &bx[i])))
            return -1;
    double value = 1;
    if (op != T3_LERP && ref_arg_num(E, 3, "value", 1, &value))
        return -1;
    int rank = 0, wnum = op == T3_LERP && ref_arg(E, 2, "weight")->kind != GR_ARG_VALUE;
    int64_t shape[MAXR];
    if (ref_bcast(E, 3, t, &rank, shape))
        return -1;
    tens *o = ref_new_result(E, K_F, rank, shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 3, t);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        double x = ldd(t[0], it.off[0]), y = ldd(t[1], it.off[1]), z = ldd(t[2], it.off[2]);
        o->f[k] = (float)(op == T3_ADDCMUL   ? x + value * y * z
                          : op == T3_ADDCDIV ? x + value * (y / z)
                          : fabs(z) < 0.5    ? x + z * (y - x)
                                             : y - (y - x) * (1 - z));
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv a = {x, ldb(t[0], w, it.off[0]), w}, b = {y, ldb(t[1], w, it.off[1]), w};
            bv c = {z, ldb(t[2], w, it.off[2]), w};
            bv r = op == T3_ADDCMUL   ? ref_bv_add(a, bv_scale(ref_bv_mul(b, c), value))
                   : op == T3_ADDCDIV ? ref_bv_add(a, bv_scale(ref_bv_div(b, c), value))
                   : wnum             ? ref_bv_add(a, bv_scale(ref_bv_sub(b, a), z))
                                      : ref_bv_add(a, ref_bv_mul(ref_bv_sub(b, a), c));
            o->eb[w][k] = (float)r.e;
        }
    }
    return 0;
}

/* isnan(self): a bool, exact (a NaN stays one on the device) */
static int op_isnan(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "self");
    tens *o = x ? ref_new_result(E, K_B, x->rank, x->shape) : NULL;
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++)
        o->i[k] = isnan(ldd(x, k));
    return 0;
}

/* isinf, isposinf, isneginf: bools; the device tests |x| >= 2^30 (its
 * infinity's stand-in), so a bound that reaches 2^30 may flip the test */
enum { INF_ANY, INF_POS, INF_NEG };

static int op_isinf(ex *E, int which)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    tens *o = x ? ref_new_result(E, K_B, x->rank, x->shape) : NULL;
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        double v = ldd(x, k), d = which == INF_ANY ? fabs(v) : which == INF_POS ? v : -v;
        o->i[k] = isinf(v) && (which == INF_ANY || (which == INF_POS) == (v > 0));
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)(isfinite(v) && ref_eb_flips(d - 0x1p30, ldb(x, w, k), w) ? ref_eb_jump(1, w) : 0);
    }
    return 0;
}

/* nan_to_num(self, nan=0, posinf=None, neginf=None): PyTorch's defaults
 * for posinf / neginf are float32's extremes */
static int op_nan_to_num(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "self");
    double r[3];
    if (!x || ref_arg_num(E, 1, "nan", 0, &r[0]) || ref_arg_num(E, 2, "posinf", FLT_MAX, &r[1]) ||
        ref_arg_num(E, 3, "neginf", -FLT_MAX, &r[2]))
        return -1;
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        if (!o->f) {
            o->i[k] = x->i[k];
            continue;
        }
        double v = ldd(x, k), y = isnan(v) ? r[0] : v == INFINITY ? r[1] : v == -INFINITY ? r[2] : v;
        o->f[k] = (float)y;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double e = ldb(x, w, k);
            int flips = isfinite(v) && e > 0 && fabs(v) + ref_eb_lam(w) * e >= 0x1p30;
            o->eb[w][k] = (float)(!isfinite(v) ? ref_eb_const(y) : flips ? INFINITY : e);
        }
    }
    return 0;
}

/* log_sigmoid_forward(self): (min(x, 0) - log1p(e), e), e = exp(-|x|) */
static int op_log_sigmoid(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "self");
    tens *o = x ? ref_new_result(E, K_F, x->rank, x->shape) : NULL;
    tens *bf = o ? ref_new_result(E, K_F, x->rank, x->shape) : NULL;
    if (!bf)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        double v = ldd(x, k), e = exp(-fabs(v));
        o->f[k] = (float)(fmin(v, 0) - log1p(e));
        bf->f[k] = (float)e;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv b = {v, ldb(x, w, k), w}, ev = ref_bv_fn(U_EXP, (bv){-fabs(v), b.e, w});
            bv l = ref_bv_fn(U_LOG, ref_bv_add(ev, ref_bv_k(1)));
            o->eb[w][k] = (float)ref_bv_sub(bv_clamp(b, -INFINITY, 0), l).e;
            bf->eb[w][k] = (float)ev.e;
        }
    }
    return 0;
}

/* prelu(self, weight): x > 0 ? x : weight x, weight along dim 1 (or one) */
static int op_prelu(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "self"), *wt = x ? ref_arg_tensor(E, 1, "weight") : NULL;
    if (!wt)
        return -1;
    if (wt->n != 1 && (x->rank < 2 || x->shape[1] != wt->n))
        return ref_fail(E, "the weight must have one element or one per channel (dim 1)");
    int64_t inner = 1;
    for (int d = 2; d < x->rank; d++)
        inner *= x->shape[d];
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        int64_t c = wt->n == 1 ? 0 : k / inner % wt->n;
        double v = ldd(x, k), s = ldd(wt, c);
        o->f[k] = (float)(v > 0 ? v : v * s);
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv b = {v, ldb(x, w, k), w};
            o->eb[w][k] = (float)bv_sel(bv_margin(b, 0), b, ref_bv_mul(b, (bv){s, ldb(wt, w, c), w})).e;
        }
    }
    return 0;
}

/* dot / vdot(self, other): the sum of products of two vectors */
static int op_dot(ex *E, int code)
{
    (void)code;
    const tens *a = ref_arg_tensor(E, 0, "self"), *b = a ? ref_arg_tensor(E, 1, "other") : NULL;
    if (!b)
        return -1;
    if (a->rank != 1 || b->rank != 1 || a->n != b->n)
        return ref_fail(E, "%s needs two vectors of one length", E->node->base);
    int64_t none[1] = {0};
    tens *o = ref_new_result(E, K_F, 0, none);
    if (!o)
        return -1;
    double s = 0;
    for (int64_t k = 0; k < a->n; k++)
        s += ldd(a, k) * ldd(b, k);
    o->f[0] = (float)s;
    for (int w = 0; o->eb[0] && w < 2; w++) { /* products stored, summed in fp32 */
        eb_acc acc = {.w = w};
        for (int64_t k = 0; k < a->n; k++) {
            bv p = ref_bv_mul((bv){ldd(a, k), ldb(a, w, k), w}, (bv){ldd(b, k), ldb(b, w, k), w});
            ref_acc_add(&acc, p.v, p.e);
        }
        o->eb[w][0] = (float)ref_acc_sum(&acc).e;
    }
    return 0;
}

/* mse_loss, huber_loss, smooth_l1_loss(self, target, reduction=1, delta or
 * beta=1): PyTorch's per-element loss, then none (0), mean (1) or sum (2);
 * the bound follows the compiler's steps (compiler/front/decompose.c, r_loss) */
enum { L_MSE, L_HUBER, L_SMOOTH };

static double loss_value(int op, double d, double th)
{
    double z = fabs(d);
    if (op == L_MSE)
        return d * d;
    if (op == L_HUBER)
        return z < th ? 0.5 * z * z : th * (z - 0.5 * th);
    return th == 0 ? z : z < th ? 0.5 * z * z / th : z - 0.5 * th;
}

static bv loss_bound(int op, bv a, bv b, double th)
{
    bv d = ref_bv_sub(a, b), z = {fabs(d.v), d.e, d.w};
    if (op == L_MSE)
        return ref_bv_mul(d, d);
    if (op == L_SMOOTH && th == 0)
        return z;
    bv q = ref_bv_mul(ref_bv_mul(z, z), ref_bv_k(0.5)), l = ref_bv_sub(z, ref_bv_k(th / 2));
    if (op == L_HUBER)
        l = bv_scale(l, th);
    else
        q = bv_scale(q, 1 / th);
    return bv_sel(bv_neg(bv_margin(z, th)), q, l);
}

static int op_loss(ex *E, int op)
{
    const tens *t[2];
    int64_t red;
    double th = 1;
    const char *thk = op == L_HUBER ? "delta" : "beta";
    if (!(t[0] = ref_arg_tensor(E, 0, "self")) || !(t[1] = ref_arg_tensor(E, 1, "target")) ||
        ref_arg_int(E, 2, "reduction", 1, &red) || (op != L_MSE && ref_arg_num(E, 3, thk, 1, &th)))
        return -1;
    if (red < 0 || red > 2)
        return ref_fail(E, "reduction is not 0 (none), 1 (mean) or 2 (sum)");
    int rank = 0;
    int64_t shape[MAXR], none[1] = {0};
    if (ref_bcast(E, 2, t, &rank, shape))
        return -1;
    tens *o = red ? ref_new_result(E, K_F, 0, none) : ref_new_result(E, K_F, rank, shape);
    if (!o)
        return -1;
    int64_t n = ref_numel(rank, shape);
    double sum = 0;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}};
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, t);
    for (int64_t k = 0; k < n; k++, iter_next(&it)) {
        double x = ldd(t[0], it.off[0]), y = ldd(t[1], it.off[1]), v = loss_value(op, x - y, th);
        sum += v;
        if (!red)
            o->f[k] = (float)v;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv e = loss_bound(op, (bv){x, ldb(t[0], w, it.off[0]), w}, (bv){y, ldb(t[1], w, it.off[1]), w}, th);
            if (!red)
                o->eb[w][k] = (float)e.e;
            else
                ref_acc_add(&acc[w], e.v, e.e);
        }
    }
    if (!red)
        return 0;
    o->f[0] = (float)(red == 1 ? sum / (double)n : sum);
    for (int w = 0; o->eb[0] && w < 2; w++) {
        bv r = ref_acc_sum(&acc[w]);
        o->eb[w][0] = (float)(red == 1 ? ref_bv_div(r, ref_bv_k((double)n)) : r).e;
    }
    return 0;
}

static const ref_op ops[] = {
    {"hardtanh", op_act, A_HARDTANH},       /* clamp(x, min_val, max_val) */
    {"relu6", op_act, A_HARDTANH},          /* hardtanh(x, 0, 6) */
    {"leaky_relu", op_act, A_LEAKY},        /* x > 0 ? x : x * negative_slope */
    {"elu", op_act, A_ELU},                 /* x > 0 ? x scale : expm1(x input_scale) alpha scale */
    {"celu", op_act, A_ELU},                /* elu(alpha, 1, 1 / alpha) */
    {"selu", op_act, A_ELU},                /* elu with SELU's constants */
    {"threshold", op_act, A_THRESHOLD},     /* x > threshold ? x : value */
    {"hardsigmoid", op_act, A_HARDSIGMOID}, /* clamp(x + 3, 0, 6) / 6 */
    {"hardswish", op_act, A_HARDSWISH},     /* x hardsigmoid(x) */
    {"softplus", op_act, A_SOFTPLUS},       /* x beta > threshold ? x : log1p(exp(x beta)) / beta */
    {"mish", op_act, A_MISH},               /* x tanh(softplus(x)) */
    {"frac", op_act, A_FRAC},               /* x - trunc(x) */
    {"log2", op_act, A_LOG2},
    {"log10", op_act, A_LOG10},
    {"exp2", op_act, A_EXP2},
    {"tan", op_act, A_TAN},
    {"sinh", op_act, A_SINH},
    {"cosh", op_act, A_COSH},
    {"asinh", op_act, A_ASINH},
    {"acosh", op_act, A_ACOSH},
    {"atanh", op_act, A_ATANH},
    {"deg2rad", op_act, A_DEG2RAD},
    {"rad2deg", op_act, A_RAD2DEG},
    {"sinc", op_act, A_SINC},               /* sin(pi x) / (pi x), 1 at 0 */
    {"logit", op_act, A_LOGIT},             /* log(z / (1 - z)), z = clamp(x, eps, 1 - eps) with eps */
    {"erfc", op_act, A_ERFC},
    {"angle", op_act, A_ANGLE},             /* real tensors: pi below 0, else 0 */
    {"special_entr", op_act, A_ENTR},       /* -x log x; 0 at 0; -inf below */
    {"atan", op_act, A_ATAN},
    {"asin", op_act, A_ASIN},
    {"acos", op_act, A_ACOS},
    {"hardshrink", op_act, A_HARDSHRINK},   /* |x| > lambd ? x : 0 */
    {"softshrink", op_act, A_SOFTSHRINK},   /* x -+ lambd beyond +-lambd, else 0 */
    {"xlogy", op_bin, B2_XLOGY},            /* y NaN: NaN; x == 0: 0; else x log y */
    {"special_xlog1py", op_bin, B2_XLOG1PY},
    {"logaddexp", op_bin, B2_LOGADDEXP},
    {"logaddexp2", op_bin, B2_LOGADDEXP2},
    {"fmax", op_bin, B2_FMAX},              /* a NaN operand ignored */
    {"fmin", op_bin, B2_FMIN},
    {"heaviside", op_bin, B2_HEAVISIDE},    /* x == 0 ? values : x > 0 */
    {"atan2", op_bin, B2_ATAN2},
    {"hypot", op_bin, B2_HYPOT},
    {"addcmul", op_tern, T3_ADDCMUL},
    {"addcdiv", op_tern, T3_ADDCDIV},
    {"lerp", op_tern, T3_LERP},
    {"isnan", op_isnan, 0},
    {"isinf", op_isinf, INF_ANY},
    {"isposinf", op_isinf, INF_POS},
    {"isneginf", op_isinf, INF_NEG},
    {"nan_to_num", op_nan_to_num, 0},       /* posinf / neginf default to float32's extremes */
    {"log_sigmoid_forward", op_log_sigmoid, 0}, /* (output, buffer) */
    {"prelu", op_prelu, 0},
    {"dot", op_dot, 0},
    {"vdot", op_dot, 0},                    /* dot, real tensors */
    {"mse_loss", op_loss, L_MSE},
    {"huber_loss", op_loss, L_HUBER},
    {"smooth_l1_loss", op_loss, L_SMOOTH},
    {"glu", op_glu, 0},                     /* a sigmoid(b), the halves of dim */
    {"remainder", op_rem, 0},               /* a - floor(a / b) b */
    {"fmod", op_rem, 1},                    /* a - trunc(a / b) b */
};
const ref_ops ref_act_ops = REF_OPS(ops);
