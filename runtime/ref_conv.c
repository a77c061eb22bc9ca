/* ref_conv.c: reference op: convolution (1-D and 2-D, stride, padding, dilation, groups), direct loops in double. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The geometry, 1-D as 2-D with height 1. */
typedef struct {
    int64_t n, cin, cout, g, h, w, kh, kw, oh, ow;
    int64_t s[2], p[2], d[2];
} cgeom;

/* stride, padding or dilation: nsp ints, or one for all. */
static int conv_ints(ex *E, int pos, const char *key, int nsp, int64_t dflt, int64_t *out2)
{
    int64_t v[MAXR];
    int cnt;
    if (ref_arg_ints(E, pos, key, v, &cnt, MAXR))
        return -1;
    if (cnt > 0 && cnt != 1 && cnt != nsp)
        return ref_fail(E, "argument %s must have %d values", key, nsp);
    out2[0] = out2[1] = dflt;
    for (int i = 0; i < nsp && cnt > 0; i++)
        out2[2 - nsp + i] = v[cnt == 1 ? 0 : i];
    return 0;
}

static int conv_geom(ex *E, const tens *x, const tens *wt, cgeom *g)
{
    int nsp = x->rank - 2, tr = 0;
    if ((nsp != 1 && nsp != 2) || wt->rank != x->rank)
        return ref_fail(E, "runs 1-D and 2-D convolutions of a batched input only");
    if (ref_arg_bool(E, 6, "transposed", 0, &tr) || ref_arg_int(E, 8, "groups", 1, &g->g))
        return -1;
    if (tr)
        return ref_fail(E, "does not run a transposed convolution");
    g->n = x->shape[0];
    g->cin = x->shape[1];
    g->cout = wt->shape[0];
    g->h = nsp == 2 ? x->shape[2] : 1;
    g->w = x->shape[x->rank - 1];
    g->kh = nsp == 2 ? wt->shape[2] : 1;
    g->kw = wt->shape[wt->rank - 1];
    if (g->g < 1 || g->cin % g->g || g->cout % g->g || wt->shape[1] * g->g != g->cin)
        return ref_fail(E, "weight and groups do not match the input's channels");
    if (conv_ints(E, 3, "stride", nsp, 1, g->s) || conv_ints(E, 4, "padding", nsp, 0, g->p) ||
        conv_ints(E, 5, "dilation", nsp, 1, g->d))
        return -1;
    for (int i = 0; i < 2; i++)
        if (g->s[i] < 1 || g->p[i] < 0 || g->d[i] < 1)
            return ref_fail(E, "stride and dilation must be positive and padding not negative");
    int64_t eh = g->h + 2 * g->p[0] - g->d[0] * (g->kh - 1), ew = g->w + 2 * g->p[1] - g->d[1] * (g->kw - 1);
    if (eh < 1 || ew < 1)
        return ref_fail(E, "the kernel is larger than the padded input");
    g->oh = (eh - 1) / g->s[0] + 1;
    g->ow = (ew - 1) / g->s[1] + 1;
    return 0;
}

/* Per output element, the sums over (ci, kh, kw): the value, sum |x||w|,
 * and the bound terms of track w (mm_bounds' rule in ref_matmul.c). */
typedef struct {
    double v, mag, t0, q1, q2;
} csum;

static csum conv_at(const cgeom *g, const tens *x, const tens *wt, int64_t n, int64_t co, int64_t oh, int64_t ow,
                    int w)
{
    const int64_t cig = g->cin / g->g, grp = co / (g->cout / g->g);
    const double u = EB_U, lam = EB_LAMBDA;
    csum s = {0, 0, 0, 0, 0};
    for (int64_t ci = 0; ci < cig; ci++)
        for (int64_t i = 0; i < g->kh; i++) {
            int64_t y = oh * g->s[0] + i * g->d[0] - g->p[0];
            if (y < 0 || y >= g->h)
                continue;
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t xx = ow * g->s[1] + j * g->d[1] - g->p[1];
                if (xx < 0 || xx >= g->w)
                    continue;
                int64_t xi = ((n * g->cin + grp * cig + ci) * g->h + y) * g->w + xx;
                int64_t wi = ((co * cig + ci) * g->kh + i) * g->kw + j;
                double a = ldd(x, xi), b = ldd(wt, wi), ea = ldb(x, w, xi), eb = ldb(wt, w, wi);
                s.v += a * b;
                s.mag += fabs(a) * fabs(b);
                if (!w) {
                    s.t0 += (1 + u) * (ea * fabs(b) + fabs(a) * eb) + ea * eb;
                } else {
                    s.q1 += ea * ea * (fabs(b) + lam * eb) * (fabs(b) + lam * eb);
                    s.q2 += a * a * eb * eb;
                }
            }
        }
    return s;
}

/* The bound of one output element: the product's (as a matrix product of
 * K = CIg kh kw) plus one DL16 rounding of each of the kh kw partial sums
 * the device stores (docs/validation.md, "Convolution"). */
static double conv_bound(const cgeom *g, const csum *s, int w)
{
    const double u = EB_U, lam = EB_LAMBDA, K = (double)(g->cin / g->g * g->kh * g->kw);
    const double taps = (double)(g->kh * g->kw), c = fabs(s->v);
    if (!w) {
        double q = s->t0 + K * EB_ACC * s->mag + taps * EB_RHO * s->mag, r = u * c;
        return q + (c - q < EB_FLUSH ? fmax(r, EB_FLUSH) : r);
    }
    double q = (1 + u) * (sqrt(s->q1) + sqrt(s->q2)) + K * EB_ACC * s->mag + sqrt(taps) * EB_RHO * s->mag;
    double r = u * c;
    r = c - lam * q < EB_FLUSH ? fmax(r, EB_FLUSH) : r;
    return sqrt(q * q + r * r);
}

/* convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups) */
static int op_conv(ex *E, int code)
{
    (void)code;
    const tens *x = ref_arg_tensor(E, 0, "input"), *wt = x ? ref_arg_tensor(E, 1, "weight") : NULL;
    if (!wt)
        return -1;
    const gr_arg *ab = ref_arg(E, 2, "bias");
    const tens *bias = ref_present(ab) ? ref_tensor_of(E, ab, "bias") : NULL;
    if (ref_present(ab) && !bias)
        return -1;
    cgeom g;
    if (kind_of(x->dtype) != K_F || kind_of(wt->dtype) != K_F)
        return ref_fail(E, "input and weight must be float tensors");
    if (conv_geom(E, x, wt, &g))
        return -1;
    if (bias && (bias->rank != 1 || bias->shape[0] != g.cout))
        return ref_fail(E, "bias must have one element per output channel");
    int64_t shape[MAXR];
    memcpy(shape, x->shape, sizeof shape);
    shape[1] = g.cout;
    if (x->rank == 4)
        shape[2] = g.oh;
    shape[x->rank - 1] = g.ow;
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    if (!o)
        return -1;
    int64_t k = 0;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t co = 0; co < g.cout; co++)
            for (int64_t oh = 0; oh < g.oh; oh++)
                for (int64_t ow = 0; ow < g.ow; ow++, k++) {
                    csum s = conv_at(&g, x, wt, n, co, oh, ow, 0);
                    double v = s.v;
                    for (int w = 0; o->eb[0] && w < 2; w++) {
                        csum t = w ? conv_at(&g, x, wt, n, co, oh, ow, 1) : s;
                        bv r = {v, conv_bound(&g, &t, w), w};
                        if (bias)
                            r = ref_bv_add(r, (bv){ldd(bias, co), ldb(bias, w, co), w});
                        o->eb[w][k] = (float)r.e;
                    }
                    o->f[k] = (float)(bias ? (double)(float)v + ldd(bias, co) : v);
                }
    return 0;
}

static const ref_op ops[] = {
    {"convolution", op_conv, 0}, /* 1-D / 2-D, stride, padding, dilation, groups */
};
const ref_ops ref_conv_ops = REF_OPS(ops);
