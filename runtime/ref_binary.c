/* ref_binary.c: reference ops: elementwise binary arithmetic, comparisons and logic with broadcasting; clamp. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

enum {
    B_ADD, B_SUB, B_RSUB, B_MUL, B_DIV, B_POW, B_MIN, B_MAX,
    B_EQ, B_NE, B_LT, B_GT, B_LE, B_GE, B_LAND, B_LOR, B_LXOR, B_BAND, B_BOR, B_BXOR,
};

static float powf_exact(float x, float y)
{
    if (y == 2)
        return x * x;
    if (y == 1)
        return x;
    if (y == 0.5f)
        return sqrtf(x);
    if (y == 3)
        return x * x * x;
    if (y == -1)
        return 1 / x;
    if (y == -0.5f)
        return 1 / sqrtf(x);
    if (y == -2)
        return 1 / (x * x);
    return powf(x, y);
}

/* max |t^p - x^p| over |t - x| <= lam e, over lam: t^p is monotone on
 * each side of 0. */
static double pow_swing(double x, double e, double p, int w)
{
    if (e == 0)
        return 0;
    double le = ref_eb_lam(w) * e, pts[3] = {x - le, x + le, 0}, fx = pow(x, p), s = 0;
    int n = x - e < 0 && x + e > 0 ? 3 : 2;
    for (int i = 0; i < n; i++) {
        double d = fabs(pow(pts[i], p) - fx);
        if (isnan(d))
            return INFINITY;
        s = fmax(s, d);
    }
    return s / ref_eb_lam(w);
}

/* The bound (track w) of one element of binary op `op` on x and y with
 * bounds ex and ey.  stored: the result is a float, rounded to DL16 (an
 * integer result is exact on the device, fp32 up to 2^24). */
static double eb_binary(int op, double x, double ex, double y, double ey, double alpha, int rmode, int stored, int w)
{
    double r, p;
    switch (op) {
    case B_ADD:
    case B_SUB:
    case B_RSUB: { /* a +- alpha b; with alpha != 1 alpha b is a multiply of its own */
        int rs = op == B_RSUB;
        double a = rs ? y : x, ea = rs ? ey : ex, b = rs ? x : y, eb = rs ? ex : ey;
        double es = alpha == 1 ? eb
                    : stored   ? ref_eb_store(alpha * b, ref_eb_prod(b, eb, alpha, ref_eb_const(alpha), w), w)
                               : fabs(alpha) * eb;
        r = op == B_ADD ? a + alpha * b : a - alpha * b;
        p = ea + es;
        break;
    }
    case B_MUL:
        r = x * y;
        p = ref_eb_prod(x, ex, y, ey, w);
        break;
    case B_DIV:
        r = x / y;
        p = ref_eb_quot(x, ex, y, ey, w);
        if (stored) /* a divide, or a reciprocal and a multiply */
            p = ref_eb_store(r, p, w);
        if (rmode) { /* the quotient, then trunc or floor: exact integers */
            double q = rmode == 1 ? trunc(r) : floor(r), pq = ref_eb_lam(w) * (stored ? ref_eb_store(r, p, w) : p);
            if (pq == 0)
                return 0;
            double lo = rmode == 1 ? trunc(r - pq) : floor(r - pq), hi = rmode == 1 ? trunc(r + pq) : floor(r + pq);
            return fmax(fabs(lo - q), fabs(hi - q)) / ref_eb_lam(w);
        }
        break;
    case B_POW:
        r = pow(x, y);
        if (ey == 0)
            p = pow_swing(x, ex, y, w);
        else /* a tensor exponent: first order */
            p = fabs(y * pow(x, y - 1)) * ex + fabs(r * log(fabs(x))) * ey;
        break;
    case B_MIN:
    case B_MAX: /* a selection: no rounding */
        return fmax(ex, ey);
    case B_EQ:
    case B_NE:
    case B_LT:
    case B_GT:
    case B_LE:
    case B_GE: /* a flip of an operand with an infinite bound: vacuous, not a jump of 1 */
        return ref_eb_flips(x - y, ex + ey, w) ? ref_eb_jump(isinf(ex + ey) ? INFINITY : 1, w) : 0;
    case B_LAND:
    case B_LOR:
    case B_LXOR:
        return ref_eb_flips(x, ex, w) || ref_eb_flips(y, ey, w) ? ref_eb_jump(1, w) : 0;
    default: /* bitwise: any doubt about an operand and nothing is known */
        return ex > 0 || ey > 0 ? INFINITY : 0;
    }
    return stored ? ref_eb_store(r, p, w) : p;
}

/* div with rounding_mode: 0 none, 1 trunc, 2 floor */
static int binary(ex *E, int op, const tens *a, const tens *b, double alpha, int rmode)
{
    const tens *ab[2] = {a, b};
    int rank = 0;
    int64_t shape[MAXR];
    if (ref_bcast(E, 2, ab, &rank, shape))
        return -1;
    kind ka = kind_of(a->dtype), kb = kind_of(b->dtype);
    kind kc = ka > kb ? ka : kb, kr = kc; /* computing kind, result kind */
    if (op == B_DIV && rmode == 0)
        kc = kr = K_F;
    if (op >= B_EQ && op <= B_LXOR)
        kr = K_B;
    if (op >= B_BAND && kc == K_F)
        return ref_fail(E, "bitwise op on float tensors");
    if ((op == B_SUB || op == B_RSUB) && ka == K_B && kb == K_B)
        return ref_fail(E, "subtraction of bool tensors");
    tens *o = ref_new_result(E, kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ab);
    if (kc == K_F) {
        float al = (float)alpha;
        for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
            float x = ldf(a, it.off[0]), y = ldf(b, it.off[1]), r;
            switch (op) {
            case B_ADD: r = alpha == 1 ? x + y : x + al * y; break;
            case B_SUB: r = alpha == 1 ? x - y : x - al * y; break;
            case B_RSUB: r = alpha == 1 ? y - x : y - al * x; break;
            case B_MUL: r = x * y; break;
            case B_DIV:
                r = x / y;
                r = rmode == 1 ? truncf(r) : rmode == 2 ? floorf(r) : r;
                break;
            case B_POW: r = powf_exact(x, y); break;
            case B_MIN: r = isnan(x) || isnan(y) ? NAN : x < y ? x : y; break;
            case B_MAX: r = isnan(x) || isnan(y) ? NAN : x > y ? x : y; break;
            case B_EQ: r = x == y; break;
            case B_NE: r = x != y; break;
            case B_LT: r = x < y; break;
            case B_GT: r = x > y; break;
            case B_LE: r = x <= y; break;
            case B_GE: r = x >= y; break;
            case B_LAND: r = x != 0 && y != 0; break;
            case B_LOR: r = x != 0 || y != 0; break;
            case B_LXOR: r = (x != 0) != (y != 0); break;
            default: r = NAN; break;
            }
            if (kr == K_F)
                o->f[k] = r;
            else
                o->i[k] = (int64_t)r;
            for (int w = 0; o->eb[0] && w < 2; w++)
                o->eb[w][k] = (float)eb_binary(op, x, ldb(a, w, it.off[0]), y, ldb(b, w, it.off[1]), alpha, rmode,
                                               kr == K_F, w);
        }
        return 0;
    }
    int64_t al = (int64_t)alpha;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int64_t x = ldi(a, it.off[0]), y = ldi(b, it.off[1]), r;
        switch (op) {
        case B_ADD: r = (int64_t)((uint64_t)x + (uint64_t)al * (uint64_t)y); break;
        case B_SUB: r = (int64_t)((uint64_t)x - (uint64_t)al * (uint64_t)y); break;
        case B_RSUB: r = (int64_t)((uint64_t)y - (uint64_t)al * (uint64_t)x); break;
        case B_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
        case B_DIV:
            if (y == 0)
                return ref_fail(E, "integer division by zero");
            if (x == INT64_MIN && y == -1)
                return ref_fail(E, "integer division overflow");
            r = x / y;
            if (rmode == 2 && (x % y != 0) && ((x < 0) != (y < 0)))
                r--;
            break;
        case B_POW:
            if (y < 0)
                return ref_fail(E, "integers to negative integer powers are not allowed");
            r = 1;
            for (int64_t e = y, base = x; e; e >>= 1) {
                if (e & 1)
                    r = (int64_t)((uint64_t)r * (uint64_t)base);
                base = (int64_t)((uint64_t)base * (uint64_t)base);
            }
            break;
        case B_MIN: r = x < y ? x : y; break;
        case B_MAX: r = x > y ? x : y; break;
        case B_EQ: r = x == y; break;
        case B_NE: r = x != y; break;
        case B_LT: r = x < y; break;
        case B_GT: r = x > y; break;
        case B_LE: r = x <= y; break;
        case B_GE: r = x >= y; break;
        case B_LAND: r = x && y; break;
        case B_LOR: r = x || y; break;
        case B_LXOR: r = !x != !y; break;
        case B_BAND: r = x & y; break;
        case B_BOR: r = x | y; break;
        case B_BXOR: r = x ^ y; break;
        default: r = 0; break;
        }
        o->i[k] = kr == K_B ? r != 0 : r;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)eb_binary(op, (double)x, ldb(a, w, it.off[0]), (double)y, ldb(b, w, it.off[1]), alpha,
                                           rmode, 0, w);
    }
    return 0;
}

/* add/sub/rsub/mul/div/pow/minimum/maximum/comparisons/logical ops,
 * Tensor and Scalar overloads alike: (self, other, alpha=1 or
 * rounding_mode=None). */
static int op_binary(ex *E, int op)
{
    scalar_box b0, b1;
    const char *k2 = op == B_POW ? "exponent" : "other";
    const tens *a = ref_operand(E, ref_arg(E, 0, "self"), "self", &b0);
    const tens *b = a ? ref_operand(E, ref_arg(E, 1, k2), k2, &b1) : NULL;
    if (!a || !b)
        return -1;
    double alpha = 1;
    int rmode = 0;
    if ((op == B_ADD || op == B_SUB || op == B_RSUB) && ref_arg_num(E, 2, "alpha", 1, &alpha))
        return -1;
    if (op == B_DIV) {
        const gr_arg *m = ref_arg(E, 2, "rounding_mode");
        if (ref_present(m)) {
            if (m->kind != GR_ARG_STR || (strcmp(m->s, "trunc") && strcmp(m->s, "floor")))
                return ref_fail(E, "rounding_mode is not None, \"trunc\" or \"floor\"");
            rmode = m->s[0] == 't' ? 1 : 2;
        }
    }
    return binary(E, op, a, b, alpha, rmode);
}

/* floor_divide(self, other): div with rounding_mode "floor" */
static int op_floor_divide(ex *E, int op)
{
    scalar_box b0, b1;
    const tens *a = ref_operand(E, ref_arg(E, 0, "self"), "self", &b0);
    const tens *b = a ? ref_operand(E, ref_arg(E, 1, "other"), "other", &b1) : NULL;
    return a && b ? binary(E, op, a, b, 1, 2) : -1;
}

/* clamp(x, lo, hi) with both bounds (one a tensor): min(max(x, lo), hi),
 * the max in a temporary result that the min then replaces. */
static int clamp_both(ex *E, const tens *x, const gr_arg *lo, const gr_arg *hi)
{
    scalar_box bl, bh;
    const tens *l = ref_operand(E, lo, "min", &bl), *h = l ? ref_operand(E, hi, "max", &bh) : NULL;
    if (!h || binary(E, B_MAX, x, l, 1, 0))
        return -1;
    tens m = E->res[--E->nres]; /* the max, taken back from the results */
    int rc = binary(E, B_MIN, &m, h, 1, 0);
    ref_tfree(&m);
    return rc;
}

/* |a - c|, 0 where both are the same infinity (an infinite bound clamps to itself) */
static double moved(double a, double c)
{
    return a == c ? 0 : fabs(a - c);
}

/* clamp(self, min=None, max=None), clamp_min(self, min), clamp_max(self, max);
 * min and max may be numbers or tensors (clamp.Tensor). */
enum { CL_BOTH, CL_MIN, CL_MAX };
static int op_clamp(ex *E, int which)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    const gr_arg *lo = which == CL_MAX ? NULL : ref_arg(E, 1, "min");
    const gr_arg *hi = which == CL_MIN ? NULL : ref_arg(E, which == CL_MAX ? 1 : 2, "max");
    if ((lo && lo->kind == GR_ARG_VALUE) || (hi && hi->kind == GR_ARG_VALUE)) {
        /* tensor bounds: max(x, lo), then min(., hi) as a second op on that result */
        if (ref_present(lo) && ref_present(hi))
            return clamp_both(E, x, lo, hi);
        scalar_box b;
        const tens *t = ref_operand(E, ref_present(lo) ? lo : hi, "bound", &b);
        return t ? binary(E, ref_present(lo) ? B_MAX : B_MIN, x, t, 1, 0) : -1;
    }
    double l = -INFINITY, h = INFINITY;
    kind kl = K_B, kh = K_B;
    if (ref_present(lo) && ref_num_of(E, lo, "min", &l, &kl))
        return -1;
    if (ref_present(hi) && ref_num_of(E, hi, "max", &h, &kh))
        return -1;
    kind kx = kind_of(x->dtype), kr = kx;
    if (kl > kr)
        kr = kl;
    if (kh > kr)
        kr = kh;
    tens *o = ref_new_result(E, kr, x->rank, x->shape);
    if (!o)
        return -1;
    /* a NaN bound: clamp ignores it beside None, else it gives NaN (torch 1.13) */
    int nan_wins = which != CL_BOTH || (ref_present(lo) && ref_present(hi));
    for (int64_t k = 0; k < x->n; k++) {
        if (kr == K_F) {
            float v = ldf(x, k), fl = (float)l, fh = (float)h;
            v = v < fl || (nan_wins && fl != fl) ? fl : v; /* NaN stays */
            o->f[k] = v > fh || (nan_wins && fh != fh) ? fh : v;
        } else {
            int64_t v = ldi(x, k);
            if (ref_present(lo) && v < (int64_t)l)
                v = (int64_t)l;
            if (ref_present(hi) && v > (int64_t)h)
                v = (int64_t)h;
            o->i[k] = v;
        }
        for (int w = 0; o->eb[0] && w < 2; w++) {
            /* clamp is monotone: its swing over [v - lam e, v + lam e] (over
             * lam, as every piecewise function) is at the ends, never the
             * derivative at v (0 at a clamped v); a clamped element is the
             * constant, with its rounding */
            double v = ldd(x, k), e = ldb(x, w, k), le = ref_eb_lam(w) * e, c = fmin(fmax(v, l), h);
            double sw = e == 0 ? 0
                               : fmax(moved(fmin(fmax(v + le, l), h), c), moved(fmin(fmax(v - le, l), h), c)) /
                                     ref_eb_lam(w);
            o->eb[w][k] = (float)(sw + (v - le <= l ? ref_eb_const(l) : 0) + (fmax(v + le, l) >= h ? ref_eb_const(h) : 0));
        }
    }
    return 0;
}

static const ref_op ops[] = {
    /* elementwise, broadcasting; Tensor and Scalar overloads */
    {"add", op_binary, B_ADD},           /* self + alpha other */
    {"sub", op_binary, B_SUB},           /* self - alpha other */
    {"rsub", op_binary, B_RSUB},         /* other - alpha self */
    {"mul", op_binary, B_MUL},
    {"div", op_binary, B_DIV},           /* true division, or rounding_mode trunc / floor */
    {"floor_divide", op_floor_divide, B_DIV},
    {"pow", op_binary, B_POW},
    {"minimum", op_binary, B_MIN},       /* NaN propagates */
    {"maximum", op_binary, B_MAX},
    {"eq", op_binary, B_EQ},
    {"ne", op_binary, B_NE},
    {"lt", op_binary, B_LT},
    {"gt", op_binary, B_GT},
    {"le", op_binary, B_LE},
    {"ge", op_binary, B_GE},
    {"logical_and", op_binary, B_LAND},
    {"logical_or", op_binary, B_LOR},
    {"logical_xor", op_binary, B_LXOR},
    {"bitwise_and", op_binary, B_BAND},
    {"bitwise_or", op_binary, B_BOR},
    {"bitwise_xor", op_binary, B_BXOR},
    {"clamp", op_clamp, CL_BOTH},
    {"clamp_min", op_clamp, CL_MIN},
    {"clamp_max", op_clamp, CL_MAX},
};
const ref_ops ref_binary_ops = REF_OPS(ops);
