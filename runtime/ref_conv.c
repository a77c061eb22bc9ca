/* ref_conv.c: reference op: convolution (1-D, 2-D and 3-D, stride, padding, dilation, groups, transposed), direct loops in double. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The geometry, every input seen as 3-D (missing leading spatial dims of
 * extent 1).  A transposed convolution's weight is (cin, cout/g, k...). */
typedef struct {
    int64_t n, cin, cout, g;
    int64_t in[3], k[3], out[3];
    int64_t s[3], p[3], d[3], op[3];
    int tr;
} cgeom;

/* stride, padding, dilation or output_padding: nsp ints, or one for all. */
static int conv_ints(ex *E, int pos, const char *key, int nsp, int64_t dflt, int64_t *out3)
{
    int64_t v[MAXR];
    int cnt;
    if (ref_arg_ints(E, pos, key, v, &cnt, MAXR))
        return -1;
    if (cnt > 0 && cnt != 1 && cnt != nsp)
        return ref_fail(E, "argument %s must have %d values", key, nsp);
    out3[0] = out3[1] = out3[2] = dflt;
    for (int i = 0; i < nsp && cnt > 0; i++)
        out3[3 - nsp + i] = v[cnt == 1 ? 0 : i];
    return 0;
}

/* The output extents: a convolution's, or the transposed one's
 * (in - 1) s - 2 p + d (k - 1) + output_padding + 1. */
static int conv_out(ex *E, cgeom *g)
{
    for (int i = 0; i < 3; i++) {
        if (g->s[i] < 1 || g->p[i] < 0 || g->d[i] < 1 || g->op[i] < 0)
            return ref_fail(E, "stride and dilation must be positive and paddings not negative");
        if (g->s[i] > INT32_MAX || g->p[i] > INT32_MAX || g->d[i] > INT32_MAX || g->op[i] > INT32_MAX)
            return ref_fail(E, "stride, padding and dilation must be below 2^31"); /* (extents in 64 bits) */
        if (g->tr && g->op[i] >= g->s[i] && g->op[i] >= g->d[i])
            return ref_fail(E, "output_padding must be smaller than stride or dilation");
        int64_t e = g->in[i] + 2 * g->p[i] - g->d[i] * (g->k[i] - 1);
        g->out[i] = g->tr ? (g->in[i] - 1) * g->s[i] - 2 * g->p[i] + g->d[i] * (g->k[i] - 1) + g->op[i] + 1
                          : (e - 1) / g->s[i] + 1;
        if ((!g->tr && e < 1) || g->out[i] < 1)
            return ref_fail(E, "the kernel does not fit the padded input");
    }
    return 0;
}

static int conv_geom(ex *E, const tens *x, const tens *wt, cgeom *g)
{
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > 3 || wt->rank != x->rank)
        return ref_fail(E, "runs 1-D, 2-D and 3-D convolutions of a batched input only");
    if (ref_arg_bool(E, 6, "transposed", 0, &g->tr) || ref_arg_int(E, 8, "groups", 1, &g->g))
        return -1;
    g->n = x->shape[0];
    g->cin = x->shape[1];
    if (g->g < 1 || g->cin % g->g)
        return ref_fail(E, "groups must divide the input's channels");
    g->cout = g->tr ? wt->shape[1] * g->g : wt->shape[0];
    for (int i = 0; i < 3; i++) {
        g->in[i] = i < 3 - nsp ? 1 : x->shape[2 + i - (3 - nsp)];
        g->k[i] = i < 3 - nsp ? 1 : wt->shape[2 + i - (3 - nsp)];
    }
    int ok = g->tr ? wt->shape[0] == g->cin : g->cout % g->g == 0 && wt->shape[1] * g->g == g->cin;
    if (!ok)
        return ref_fail(E, "weight and groups do not match the input's channels");
    if (conv_ints(E, 3, "stride", nsp, 1, g->s) || conv_ints(E, 4, "padding", nsp, 0, g->p) ||
        conv_ints(E, 5, "dilation", nsp, 1, g->d))
        return -1;
    if (g->tr && conv_ints(E, 7, "output_padding", nsp, 0, g->op))
        return -1;
    if (!g->tr)
        g->op[0] = g->op[1] = g->op[2] = 0;
    return conv_out(E, g);
}

/* Per output element, the sums over (ci, taps): the value, sum |x||w|,
 * and the bound terms of track w (mm_bounds' rule in ref_matmul.c). */
typedef struct {
    double v, mag, t0, q1, q2;
} csum;

static void csum_add(csum *s, const tens *x, const tens *wt, int64_t xi, int64_t wi, int w)
{
    const double u = EB_U, lam = EB_LAMBDA;
    double a = ldd(x, xi), b = ldd(wt, wi), ea = ldb(x, w, xi), eb = ldb(wt, w, wi);
    s->v += a * b;
    s->mag += fabs(a) * fabs(b);
    if (!w) { /* an infinite bound times an exact zero is 0 (eb_mul0) */
        s->t0 += (1 + u) * (eb_mul0(ea, fabs(b)) + eb_mul0(fabs(a), eb)) + eb_mul0(ea, eb);
    } else {
        double f = fabs(b) + lam * eb;
        s->q1 += eb_mul0(ea * ea, f * f);
        s->q2 += eb_mul0(a * a, eb * eb);
    }
}

/* The input position tap kk of output position o reads along dim i, or -1:
 * a convolution reads o s + kk d - p; a transposed one is read where
 * that input position times s lands, o + p - kk d = y s. */
static int64_t conv_src(const cgeom *g, int i, int64_t o, int64_t kk)
{
    if (!g->tr) {
        int64_t y = o * g->s[i] + kk * g->d[i] - g->p[i];
        return y >= 0 && y < g->in[i] ? y : -1;
    }
    int64_t t = o + g->p[i] - kk * g->d[i];
    if (t < 0 || t % g->s[i])
        return -1;
    return t / g->s[i] < g->in[i] ? t / g->s[i] : -1;
}

static csum conv_at(const cgeom *g, const tens *x, const tens *wt, int64_t n, int64_t co, const int64_t *o, int w)
{
    const int64_t cig = g->cin / g->g, cog = g->cout / g->g, grp = co / cog;
    const int64_t taps = g->k[0] * g->k[1] * g->k[2];
    csum s = {0, 0, 0, 0, 0};
    for (int64_t t = 0; t < taps; t++) {
        int64_t kk[3] = {t / (g->k[1] * g->k[2]), t / g->k[2] % g->k[1], t % g->k[2]}, y[3];
        int in = 1;
        for (int i = 0; i < 3 && in; i++)
            in = (y[i] = conv_src(g, i, o[i], kk[i])) >= 0;
        if (!in)
            continue;
        int64_t sp = (y[0] * g->in[1] + y[1]) * g->in[2] + y[2], area = g->in[0] * g->in[1] * g->in[2];
        for (int64_t ci = 0; ci < cig; ci++) {
            int64_t cx = grp * cig + ci;
            int64_t wrow = g->tr ? cx * cog + co % cog : co * cig + ci;
            csum_add(&s, x, wt, (n * g->cin + cx) * area + sp, wrow * taps + t, w);
        }
    }
    return s;
}

/* How many partial sums the device stores in DL16 before the result: none
 * when the compiler lowers the conv as one product on the PT (one group,
 * and one tap, or windows that tile the input: stride = kernel, no padding,
 * dilation 1, as ViT's patch embedding), else one per tap (docs/compiler.md,
 * "Convolution"). */
static double conv_partials(const cgeom *g)
{
    const int64_t taps = g->k[0] * g->k[1] * g->k[2];
    int tiles = 1;
    for (int i = 0; i < 3; i++)
        tiles = tiles && g->s[i] == g->k[i] && g->p[i] == 0 && g->d[i] == 1;
    return !g->tr && g->g == 1 && (taps == 1 || tiles) ? 0 : (double)taps;
}

/* The bound of one output element: the product's (as a matrix product of
 * K = CIg taps terms, at most) plus one DL16 rounding of each of the
 * partial sums the device stores (docs/validation.md, "Convolution"). */
static double conv_bound(const cgeom *g, const csum *s, int w)
{
    const double u = EB_U, lam = EB_LAMBDA, parts = conv_partials(g);
    const double K = (double)(g->cin / g->g * g->k[0] * g->k[1] * g->k[2]), c = fabs(s->v);
    if (!w) {
        double q = s->t0 + K * EB_ACC * s->mag + parts * EB_RHO * s->mag, r = u * c;
        return q + (c - q < EB_FLUSH ? fmax(r, EB_FLUSH) : r);
    }
    double q = (1 + u) * (sqrt(s->q1) + sqrt(s->q2)) + ref_eb_acc_n(K, 1) * EB_ACC * s->mag +
               sqrt(parts) * EB_RHO * s->mag;
    double r = u * c;
    r = c - lam * q < EB_FLUSH ? fmax(r, EB_FLUSH) : r;
    return sqrt(q * q + r * r);
}

static void conv_one(const cgeom *g, const tens *x, const tens *wt, const tens *bias, tens *o, int64_t k)
{
    int64_t pos = k, idx[3], co, n;
    for (int i = 2; i >= 0; i--) {
        idx[i] = pos % g->out[i];
        pos /= g->out[i];
    }
    co = pos % g->cout;
    n = pos / g->cout;
    csum s = conv_at(g, x, wt, n, co, idx, 0);
    for (int w = 0; o->eb[0] && w < 2; w++) {
        csum t = w ? conv_at(g, x, wt, n, co, idx, 1) : s;
        bv r = {s.v, conv_bound(g, &t, w), w};
        if (bias)
            r = ref_bv_add(r, (bv){ldd(bias, co), ldb(bias, w, co), w});
        o->eb[w][k] = (float)r.e;
    }
    o->f[k] = (float)(bias ? (double)(float)s.v + ldd(bias, co) : s.v);
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
    for (int i = 2; i < x->rank; i++)
        shape[i] = g.out[i - x->rank + 3];
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++)
        conv_one(&g, x, wt, bias, o, k);
    return 0;
}

static const ref_op ops[] = {
    {"convolution", op_conv, 0}, /* 1-D / 2-D / 3-D, stride, padding, dilation, groups, transposed */
};
const ref_ops ref_conv_ops = REF_OPS(ops);
