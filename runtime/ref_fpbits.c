/* ref_fpbits.c: reference ops on a float's representation: copysign, signbit, nextafter, frexp.
 *
 * Error bounds: a sign that may come out the other way (a value within its
 * bound of zero) is a jump (copysign: of 2 |a|; signbit: of 1); nextafter
 * moves its input by one fp32 step either way (its input's bound plus two
 * steps); frexp's exponent jumps by the number of powers of two the
 * value's interval spans and its mantissa then by up to its whole range. */
#include "ref_internal.h"

#include <math.h>

/* copysign(self, other) (.Tensor, .Scalar): |self| with other's sign (a -0.0 counts) */
static int op_copysign(ex *E, int unused)
{
    (void)unused;
    scalar_box b0, b1;
    const tens *a, *b;
    iter it;
    tens *o = ref_binary_float(E, "self", "other", &b0, &b1, &a, &b, &it);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        double u = ldd(a, it.off[0]), v = ldd(b, it.off[1]);
        o->f[k] = (float)copysign(u, v);
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double eu = ldb(a, w, it.off[0]), ev = ldb(b, w, it.off[1]);
            int flip = ev > 0 && fabs(v) <= ref_eb_lam(w) * ev;
            o->eb[w][k] = (float)(flip ? ref_eb_jump(2 * (fabs(u) + ref_eb_lam(w) * eu) * (1 + EB_JUMP_MARGIN), w) + eu
                                       : eu);
        }
    }
    return 0;
}

/* signbit(self): whether the sign bit is set (-0.0 too) */
static int op_signbit(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    tens *o = ref_new_result(E, K_B, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        o->i[k] = x->f ? signbit(x->f[k]) != 0 : x->i[k] < 0;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = ref_eb_flips(ldd(x, k), ldb(x, w, k), w) ? (float)ref_eb_jump(1 + EB_JUMP_MARGIN, w) : 0;
    }
    return 0;
}

/* nextafter(self, other): the next fp32 value after self towards other */
static int op_nextafter(ex *E, int unused)
{
    (void)unused;
    scalar_box b0, b1;
    const tens *a, *b;
    iter it;
    tens *o = ref_binary_float(E, "self", "other", &b0, &b1, &a, &b, &it);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        float u = ldf(a, it.off[0]), r = nextafterf(u, ldf(b, it.off[1]));
        o->f[k] = r;
        for (int w = 0; o->eb[0] && w < 2; w++) { /* an fp32 step either way, at the interval's largest magnitude */
            double eu = ldb(a, w, it.off[0]), hi = fabs(u) + ref_eb_lam(w) * eu;
            double ulp = hi >= 0x1p-126 ? ldexp(1, ilogb(hi) - 23) : 0x1p-149;
            o->eb[w][k] = (float)(isfinite(r) ? eu + 2 * ulp : 0);
        }
    }
    return 0;
}

/* frexp(self) -> (mantissa in [0.5, 1) with self's sign, exponent int32): self = m 2^e */
static int op_frexp(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x || !ref_new_result(E, K_F, x->rank, x->shape) || !ref_new_result(E, K_I, x->rank, x->shape))
        return -1;
    tens *m = &E->res[E->nres - 2], *ex = &E->res[E->nres - 1];
    for (int64_t k = 0; k < x->n; k++) {
        int e = 0;
        double v = ldd(x, k), mv = frexp(v, &e);
        m->f[k] = (float)mv;
        ex->i[k] = isfinite(v) ? e : 0;
        for (int w = 0; m->eb[0] && w < 2; w++) {
            double r = ref_eb_lam(w) * ldb(x, w, k), lo = fabs(v) - r, hi = fabs(v) + r;
            int elo = 0, ehi = 0;
            frexp(hi, &ehi);
            if (lo > 0)
                frexp(lo, &elo);
            if (r == 0 || !isfinite(v)) {
                m->eb[w][k] = ex->eb[w][k] = 0;
            } else if (lo > 0 && elo == ehi) { /* one binade: the mantissa moves as self, scaled */
                m->eb[w][k] = (float)ldexp(ldb(x, w, k), -e);
                ex->eb[w][k] = 0;
            } else { /* across powers of two (or zero): the mantissa anywhere in (-1, 1), the exponent by the span */
                m->eb[w][k] = (float)ref_eb_jump(2 * (1 + EB_JUMP_MARGIN), w);
                ex->eb[w][k] = lo > 0 ? (float)ref_eb_jump((ehi - elo) * (1 + EB_JUMP_MARGIN), w) : INFINITY;
            }
        }
    }
    return 0;
}

static const ref_op ops[] = {
    {"copysign", op_copysign, 0},   /* .Tensor, .Scalar */
    {"signbit", op_signbit, 0},
    {"nextafter", op_nextafter, 0},
    {"frexp", op_frexp, 0},         /* (mantissa, exponent) */
};
const ref_ops ref_fpbits_ops = REF_OPS(ops);
