/* ref_act.c: reference ops: activations with parameters (hardtanh, leaky_relu, elu, softplus, ...), frac, glu, remainder and fmod. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

/* Each value is PyTorch's formula in double; each bound follows the
 * compiler's decomposition (compiler/decompose.c) one stored SFP result at
 * a time, with the bv rules. */
enum { A_HARDTANH, A_LEAKY, A_ELU, A_THRESHOLD, A_HARDSIGMOID, A_HARDSWISH, A_SOFTPLUS, A_MISH, A_FRAC };

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
    default: /* frac: x - trunc(x) */
        return ref_bv_sub(b, ref_bv_fn(U_TRUNC, b)).e;
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
    default: return x - trunc(x);
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
    default: return 0;
    }
}

static int op_act(ex *E, int op)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    double p[3] = {0, 0, 0};
    if (!x || act_params(E, op, p))
        return -1;
    if (kind_of(x->dtype) != K_F)
        return ref_fail(E, "%s of a non-float tensor is not supported", E->node->base);
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        o->f[k] = (float)act_value(op, ldd(x, k), p);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)act_bound(op, ldd(x, k), ldb(x, w, k), w, p);
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
                o->eb[w][k] = (float)ref_bv_mul((bv){a, ldb(x, w, ia), w}, ref_bv_fn(U_SIGMOID, (bv){b, ldb(x, w, ib), w})).e;
        }
    return 0;
}

/* The bound of a - F(a / b) b (F floor for remainder, trunc for fmod) as
 * the compiler decomposes it: a divide, F (exact integers: it moves as far
 * as F moves over the quotient's bound), a multiply, a subtract. */
static double rem_bound(int fm, double a, double ea, double b, double eb, int w)
{
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
            double x = ldd(a, it.off[0]), y = ldd(b, it.off[1]), r = fmod(x, y);
            o->f[k] = (float)(!fm && r != 0 && (r < 0) != (y < 0) ? r + y : r);
        }
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)rem_bound(fm, ldd(a, it.off[0]), ldb(a, w, it.off[0]), ldd(b, it.off[1]),
                                           ldb(b, w, it.off[1]), w);
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
    {"glu", op_glu, 0},                     /* a sigmoid(b), the halves of dim */
    {"remainder", op_rem, 0},               /* a - floor(a / b) b */
    {"fmod", op_rem, 1},                    /* a - trunc(a / b) b */
};
const ref_ops ref_act_ops = REF_OPS(ops);
