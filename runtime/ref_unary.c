/* ref_unary.c: reference ops: elementwise unary functions. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

static int unary(ex *E, int op, const tens *x)
{
    kind kx = kind_of(x->dtype), kr;
    switch (op) {
    case U_NEG:
    case U_RELU:
    case U_ABS:
    case U_FLOOR:
    case U_CEIL:
    case U_ROUND:
    case U_TRUNC:
    case U_SIGN:
    case U_SQUARE:
        kr = kx;
        break;
    case U_LNOT:
        kr = K_B;
        break;
    case U_BNOT:
        if (kx == K_F)
            return ref_fail(E, "bitwise_not of a float tensor");
        kr = kx;
        break;
    default:
        kr = K_F;
        break;
    }
    tens *o = ref_new_result(E, kr, x->rank, x->shape);
    if (!o)
        return -1;
    if (kr != K_F) {
        for (int64_t k = 0; k < x->n; k++) {
            if (op == U_LNOT) {
                o->i[k] = x->f ? x->f[k] == 0 : x->i[k] == 0;
                for (int w = 0; o->eb[0] && w < 2; w++)
                    o->eb[w][k] = (float)(ref_eb_flips(ldd(x, k), ldb(x, w, k), w) ? ref_eb_jump(1, w) : 0);
                continue;
            }
            int64_t v = x->i[k], r;
            switch (op) {
            case U_NEG: r = (int64_t)(0 - (uint64_t)v); break;
            case U_RELU: r = v > 0 ? v : 0; break;
            case U_ABS: r = v < 0 ? (int64_t)(0 - (uint64_t)v) : v; break;
            case U_SIGN: r = (v > 0) - (v < 0); break;
            case U_BNOT: r = kx == K_B ? !v : ~v; break;
            case U_SQUARE: r = (int64_t)((uint64_t)v * (uint64_t)v); break;
            default: r = v; break; /* floor, ceil, round, trunc of integers */
            }
            o->i[k] = r;
            for (int w = 0; o->eb[0] && w < 2; w++) { /* integers are exact; one known only within e: */
                double e = ldb(x, w, k);
                o->eb[w][k] = (float)(e == 0 ? 0 : op == U_NEG || op == U_ABS || op == U_RELU || op == U_FLOOR ||
                                                        op == U_CEIL || op == U_ROUND || op == U_TRUNC
                                                        ? e
                                                        : INFINITY);
            }
        }
        return 0;
    }
    for (int64_t k = 0; k < x->n; k++) {
        float v = ldf(x, k);
        double d = v;
        float r;
        switch (op) {
        case U_NEG: r = -v; break;
        case U_EXP: r = (float)exp(d); break;
        case U_LOG: r = (float)log(d); break;
        case U_SQRT: r = sqrtf(v); break;
        case U_RSQRT: r = 1 / sqrtf(v); break; /* two roundings, as PyTorch's */
        case U_TANH: r = (float)tanh(d); break;
        case U_SIGMOID: r = (float)(1 / (1 + exp(-d))); break;
        case U_RELU: r = isnan(v) ? v : v > 0 ? v : 0; break;
        case U_SILU: r = (float)(d / (1 + exp(-d))); break;
        case U_SIN: r = (float)sin(d); break;
        case U_COS: r = (float)cos(d); break;
        case U_ABS: r = fabsf(v); break;
        case U_RECIP: r = 1 / v; break;
        case U_ERF: r = (float)erf(d); break;
        case U_LOG1P: r = (float)log1p(d); break;
        case U_EXPM1: r = (float)expm1(d); break;
        case U_FLOOR: r = floorf(v); break;
        case U_CEIL: r = ceilf(v); break;
        case U_ROUND: r = nearbyintf(v); break; /* half to even, as torch.round */
        case U_TRUNC: r = truncf(v); break;
        case U_SIGN: r = (float)((v > 0) - (v < 0)); break; /* of NaN 0, as torch 1.13 */
        case U_GELU: r = (float)ref_gelu(d); break;
        case U_GELU_TANH: r = (float)ref_gelu_tanh(d); break;
        case U_SQUARE: r = v * v; break;
        default: r = NAN; break;
        }
        o->f[k] = r;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)ref_unary_bound(op, d, ldb(x, w, k), w);
    }
    return 0;
}

/* round(x, decimals=d != 0): PyTorch's nearbyint(x * 10^d) / 10^d (d < 0:
 * nearbyint(x / 10^-d) * 10^-d); the bound follows those three steps. */
static int round_decimals(ex *E, const tens *x, double d)
{
    if (kind_of(x->dtype) != K_F)
        return ref_fail(E, "round with decimals of a non-float tensor");
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    double p = pow(10, fabs(d));
    for (int64_t k = 0; k < x->n; k++) {
        float v = ldf(x, k), pf = (float)p;
        o->f[k] = d > 0 ? nearbyintf(v * pf) / pf : nearbyintf(v / pf) * pf;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv b = {v, ldb(x, w, k), w}, y = d > 0 ? ref_bv_mul(b, ref_bv_k(p)) : ref_bv_div(b, ref_bv_k(p));
            bv r = ref_bv_fn(U_ROUND, y);
            o->eb[w][k] = (float)(d > 0 ? ref_bv_div(r, ref_bv_k(p)) : ref_bv_mul(r, ref_bv_k(p))).e;
        }
    }
    return 0;
}

static int op_unary(ex *E, int op)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    double dec = 0;
    if (op == U_ROUND && ref_arg_num(E, 1, "decimals", 0, &dec))
        return -1;
    if (dec != 0)
        return round_decimals(E, x, dec);
    if (op == U_GELU) {
        const gr_arg *ap = ref_arg(E, 1, "approximate");
        if (ref_present(ap)) {
            if (ap->kind != GR_ARG_STR || (strcmp(ap->s, "none") && strcmp(ap->s, "tanh")))
                return ref_fail(E, "approximate is not \"none\" or \"tanh\"");
            if (strcmp(ap->s, "tanh") == 0)
                op = U_GELU_TANH;
        }
    }
    return unary(E, op, x);
}

static const ref_op ops[] = {
    {"neg", op_unary, U_NEG},
    {"exp", op_unary, U_EXP},
    {"log", op_unary, U_LOG},
    {"sqrt", op_unary, U_SQRT},
    {"rsqrt", op_unary, U_RSQRT},
    {"tanh", op_unary, U_TANH},
    {"sigmoid", op_unary, U_SIGMOID},
    {"relu", op_unary, U_RELU},
    {"silu", op_unary, U_SILU},          /* x sigmoid(x) */
    {"square", op_unary, U_SQUARE},
    {"gelu", op_unary, U_GELU},          /* approximate "none" (erf) or "tanh" */
    {"sin", op_unary, U_SIN},
    {"cos", op_unary, U_COS},
    {"abs", op_unary, U_ABS},
    {"reciprocal", op_unary, U_RECIP},
    {"erf", op_unary, U_ERF},
    {"log1p", op_unary, U_LOG1P},
    {"expm1", op_unary, U_EXPM1},
    {"floor", op_unary, U_FLOOR},
    {"ceil", op_unary, U_CEIL},
    {"round", op_unary, U_ROUND},        /* decimals too */
    {"trunc", op_unary, U_TRUNC},
    {"sign", op_unary, U_SIGN},
    {"sgn", op_unary, U_SIGN},           /* sign, for real tensors */
    {"logical_not", op_unary, U_LNOT},
    {"bitwise_not", op_unary, U_BNOT},
};
const ref_ops ref_unary_ops = REF_OPS(ops);
