/* ref_pool3d.c: reference ops: max, average, adaptive and fractional pooling over the last three dims
 * (PyTorch's window and output-size rules, as runtime/ref_spatial.c's 2-D pooling, one axis more;
 * fractional 2-D pooling as 3-D with a unit leading axis). */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t k[3], s[3], p[3], d[3]; /* kernel, stride, padding, dilation */
    int64_t in[3], out[3];
    int adaptive;
} geom3;

/* The window of output position i along axis a: its (padded) first tap,
 * step and count of taps, the taps inside the input [lo, hi) in tap
 * numbers, and *full the count padding included up to in + pad (PyTorch's
 * avg pool counts padding up to there, not beyond). */
typedef struct {
    int64_t first, step, n, lo, hi, full;
} win;

static win window(const geom3 *g, int a, int64_t i)
{
    win w;
    if (g->adaptive) { /* floor(i * in / out) .. ceil((i + 1) * in / out) */
        int64_t s = i * g->in[a] / g->out[a], e = ((i + 1) * g->in[a] + g->out[a] - 1) / g->out[a];
        return (win){s, 1, e - s, 0, e - s, e - s};
    }
    w.first = i * g->s[a] - g->p[a];
    w.step = g->d[a];
    w.n = g->k[a];
    int64_t fend = w.first + (g->k[a] - 1) * g->d[a] + 1, lim = g->in[a] + g->p[a];
    w.full = (fend < lim ? fend : lim) - w.first;
    w.lo = 0;
    while (w.lo < w.n && w.first + w.lo * w.step < 0)
        w.lo++;
    w.hi = w.lo;
    while (w.hi < w.n && w.first + w.hi * w.step < g->in[a])
        w.hi++;
    return w;
}

/* Output size of a pooled axis (PyTorch's pooling_output_shape). */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p)
        o--;
    return o;
}

/* kernel_size, stride (default: the kernel), padding, dilation: one int or three each. */
static int pool3_args(ex *E, const tens *x, int with_dilation, geom3 *g, int *ceil_mode)
{
    int64_t v[4][3] = {{0}, {0}, {0, 0, 0}, {1, 1, 1}};
    const char *keys[4] = {"kernel_size", "stride", "padding", "dilation"};
    for (int i = 0; i < (with_dilation ? 4 : 3); i++) {
        int cnt;
        if (ref_arg_ints(E, i + 1, keys[i], v[i], &cnt, 3))
            return -1;
        if (cnt == 1)
            v[i][1] = v[i][2] = v[i][0];
        else if (cnt <= 0 && i == 1)
            memcpy(v[1], v[0], sizeof v[1]);
        else if (cnt <= 0 && i == 0)
            return ref_fail(E, "needs a kernel_size");
        else if (cnt > 0 && cnt != 3)
            return ref_fail(E, "%s must have 1 or 3 values", keys[i]);
    }
    if (ref_arg_bool(E, with_dilation ? 5 : 4, "ceil_mode", 0, ceil_mode))
        return -1;
    for (int a = 0; a < 3; a++) {
        g->k[a] = v[0][a], g->s[a] = v[1][a], g->p[a] = v[2][a], g->d[a] = v[3][a];
        if (g->k[a] <= 0 || g->s[a] <= 0 || g->d[a] <= 0 || g->p[a] < 0 || 2 * g->p[a] > g->k[a])
            return ref_fail(E, "kernel, stride and dilation must be positive, padding at most half the kernel");
        g->in[a] = x->shape[x->rank - 3 + a];
        g->out[a] = out_size(g->in[a], g->k[a], g->s[a], g->p[a], g->d[a], *ceil_mode);
        if (g->out[a] < 0)
            return ref_fail(E, "the window is larger than the padded input");
    }
    return 0;
}

/* The flat index in the plane of tap (t0, t1, t2) of windows w. */
static int64_t tap_at(const geom3 *g, const win *w, int64_t t0, int64_t t1, int64_t t2)
{
    int64_t z = w[0].first + t0 * w[0].step, y = w[1].first + t1 * w[1].step, x = w[2].first + t2 * w[2].step;
    return (z * g->in[1] + y) * g->in[2] + x;
}

/* The max of one window (the last NaN, else the first maximum's flat index), with
 * a selection's bound: the largest bound of any element that could be the
 * max; the index exact unless another element could be (ref_spatial.c). */
static void max3(const tens *x, int64_t base, const geom3 *g, const win *w, float *v, int64_t *ix, double eb[2],
                 double ieb[2])
{
    float m = -INFINITY;
    *ix = -1;
    for (int64_t a = w[0].lo; a < w[0].hi; a++)
        for (int64_t b = w[1].lo; b < w[1].hi; b++)
            for (int64_t c = w[2].lo; c < w[2].hi; c++) {
                int64_t at = tap_at(g, w, a, b, c);
                float xv = x->f[base + at];
                if (*ix < 0 || xv > m || isnan(xv)) { /* PyTorch's test: the last NaN wins */
                    m = xv;
                    *ix = at;
                }
            }
    *v = m;
    for (int t = 0; t < 2; t++) {
        double em = x->eb[t] && *ix >= 0 ? ldb(x, t, base + *ix) : 0;
        eb[t] = em;
        ieb[t] = 0;
        for (int64_t a = w[0].lo; x->eb[t] && a < w[0].hi; a++)
            for (int64_t b = w[1].lo; b < w[1].hi; b++)
                for (int64_t c = w[2].lo; c < w[2].hi; c++) {
                    int64_t k = base + tap_at(g, w, a, b, c);
                    if (k != base + *ix && ref_eb_flips(m - x->f[k], em + ldb(x, t, k), t)) {
                        eb[t] = fmax(eb[t], ldb(x, t, k) + ref_eb_jump(fabs((double)m - x->f[k]), t));
                        ieb[t] = INFINITY;
                    }
                }
    }
}

/* The mean of one window over the divisor (padding counted or not, or
 * divisor_override), bounded as a chain of DL16 additions over its taps
 * inside the input (a tap in the padding adds an exact 0), then one
 * division. */
static void avg3(const tens *x, int64_t base, const geom3 *g, const win *w, int incl_pad, int64_t div, float *v,
                 double eb[2])
{
    double s = 0;
    bv acc[2] = {{0, 0, 0}, {0, 0, 1}};
    int first = 1;
    for (int64_t a = w[0].lo; a < w[0].hi; a++)
        for (int64_t b = w[1].lo; b < w[1].hi; b++)
            for (int64_t c = w[2].lo; c < w[2].hi; c++, first = 0) {
                int64_t k = base + tap_at(g, w, a, b, c);
                s += ldd(x, k);
                for (int t = 0; t < 2; t++) {
                    bv tap = {ldd(x, k), ldb(x, t, k), t};
                    acc[t] = first ? tap : ref_bv_add(acc[t], tap);
                }
            }
    double inside = (double)((w[0].hi - w[0].lo) * (w[1].hi - w[1].lo) * (w[2].hi - w[2].lo));
    double cnt = div ? (double)div : incl_pad ? (double)(w[0].full * w[1].full * w[2].full) : inside;
    *v = (float)(s / cnt);
    for (int t = 0; t < 2; t++)
        eb[t] = ref_bv_div(acc[t], ref_bv_k(cnt)).e;
}

/* The result of a pooling (out, and indices for max) over x's volumes. */
static int run3(ex *E, const tens *x, const geom3 *g, int is_max, int incl_pad, int64_t div)
{
    int64_t shape[MAXR];
    memcpy(shape, x->shape, sizeof shape);
    for (int a = 0; a < 3; a++)
        shape[x->rank - 3 + a] = g->out[a];
    tens *o = ref_new_result(E, K_F, x->rank, shape), *ix = NULL;
    if (!o || (is_max && !(ix = ref_new_result(E, K_I, x->rank, shape))))
        return -1;
    if (is_max)
        o = &E->res[E->nres - 2]; /* the array may have moved */
    int64_t vol = g->in[0] * g->in[1] * g->in[2], ovol = g->out[0] * g->out[1] * g->out[2];
    for (int64_t k = 0; k < o->n; k++) {
        int64_t r = k % ovol;
        win w[3] = {window(g, 0, r / (g->out[1] * g->out[2])), window(g, 1, r / g->out[2] % g->out[1]),
                    window(g, 2, r % g->out[2])};
        double eb[2], ieb[2] = {0, 0};
        if (is_max)
            max3(x, k / ovol * vol, g, w, &o->f[k], &ix->i[k], eb, ieb);
        else
            avg3(x, k / ovol * vol, g, w, incl_pad, div, &o->f[k], eb);
        for (int t = 0; o->eb[0] && t < 2; t++) {
            o->eb[t][k] = (float)eb[t];
            if (ix)
                ix->eb[t][k] = (float)ieb[t];
        }
    }
    return 0;
}

static const tens *pool3_input(ex *E)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (x && (x->rank < 4 || kind_of(x->dtype) != K_F)) {
        ref_fail(E, "input must be a float tensor of rank 4 or more");
        return NULL;
    }
    return x;
}

/* max_pool3d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False) */
static int op_max_pool3d(ex *E, int unused)
{
    (void)unused;
    const tens *x = pool3_input(E);
    geom3 g = {0};
    int ceil_mode = 0;
    if (!x || pool3_args(E, x, 1, &g, &ceil_mode))
        return -1;
    return run3(E, x, &g, 1, 0, 0);
}

/* avg_pool3d(self, kernel_size, stride=[], padding=0, ceil_mode=False,
 * count_include_pad=True, divisor_override=None) */
static int op_avg_pool3d(ex *E, int unused)
{
    (void)unused;
    const tens *x = pool3_input(E);
    geom3 g = {0};
    int ceil_mode = 0, incl = 1;
    int64_t div = 0;
    if (!x || pool3_args(E, x, 0, &g, &ceil_mode) || ref_arg_bool(E, 5, "count_include_pad", 1, &incl) ||
        ref_arg_int(E, 6, "divisor_override", 0, &div))
        return -1;
    if (ref_present(ref_arg(E, 6, "divisor_override")) && !div)
        return ref_fail(E, "divisor_override must not be zero");
    return run3(E, x, &g, 0, incl, div);
}

/* _adaptive_avg_pool3d(self, output_size), adaptive_max_pool3d(self, output_size) -> (out, indices) */
static int op_adaptive_pool3d(ex *E, int is_max)
{
    const tens *x = pool3_input(E);
    int64_t os[3];
    int cnt;
    if (!x || ref_arg_ints(E, 1, "output_size", os, &cnt, 3))
        return -1;
    if (cnt != 3 || os[0] < 0 || os[1] < 0 || os[2] < 0)
        return ref_fail(E, "output_size must be three sizes");
    geom3 g = {.adaptive = 1};
    for (int a = 0; a < 3; a++) {
        g.in[a] = x->shape[x->rank - 3 + a];
        g.out[a] = os[a];
        if (os[a] && !g.in[a])
            return ref_fail(E, "an empty input has no window");
    }
    return run3(E, x, &g, is_max, 1, 0);
}

/* PyTorch's window starts of a fractional pooling axis for sample u
 * (generate_intervals, in the input's float type): start i < out - 1 is
 * int((i + u) alpha) - int(u alpha), alpha = (in - k) / (out - 1); the last
 * is in - k. */
static void frac_starts(float u, int64_t in, int64_t out, int64_t k, int64_t *seq)
{
    float alpha = out > 1 ? (float)(in - k) / (float)(out - 1) : 0;
    for (int64_t i = 0; i + 1 < out; i++)
        seq[i] = (int64_t)(((float)i + u) * alpha) - (int64_t)(u * alpha);
    if (out > 0)
        seq[out - 1] = in - k;
}

/* The sample of axis a of a fractional pooling over the last nax axes
 * (PyTorch's order: W, H for 2-D; T, H, W for 3-D), or -1. */
static int sample_of(int nax, int a) { return a < 3 - nax ? -1 : nax == 2 ? 2 - a : a; }

/* The range [*lo, *hi] of window start i of an axis (frac_starts) for
 * every sample in [u - e, u + e]: each floor moves with u on its own. */
static void frac_range(double u, double e, int64_t in, int64_t out, int64_t k, int64_t i, int64_t *lo, int64_t *hi)
{
    double alpha = out > 1 ? (double)(in - k) / (double)(out - 1) : 0;
    if (i + 1 == out || e == 0) {
        *lo = *hi = -1; /* exactly as frac_starts */
        return;
    }
    *lo = (int64_t)floor((i + fmax(u - e, 0)) * alpha) - (int64_t)floor((u + e) * alpha);
    *hi = (int64_t)floor((i + u + e) * alpha) - (int64_t)floor(fmax(u - e, 0) * alpha);
    *lo = *lo < 0 ? 0 : *lo;
    *hi = *hi > in - k ? in - k : *hi;
}

/* Output r of one plane of a fractional max pooling, its windows starting
 * at seq[a]; the samples u (bounds eu) of the last nax axes.  The device's
 * samples may sit anywhere within their bounds, so every window start
 * those could give counts too: where another window is possible, the
 * element's bound covers its max as well, and its index is unbounded. */
static void frac_out(const tens *x, int64_t base, const geom3 *g, int64_t *const seq[3], const float *u,
                     const double *eu, int nax, int64_t r, tens *o, tens *ix, int64_t k)
{
    int64_t at[3] = {r / (g->out[1] * g->out[2]), r / g->out[2] % g->out[1], r % g->out[2]}, lo[3], hi[3];
    win w[3];
    for (int a = 0; a < 3; a++) {
        int j = sample_of(nax, a);
        w[a] = (win){seq[a][at[a]], 1, g->k[a], 0, g->k[a], g->k[a]};
        frac_range(j < 0 ? 0 : u[j], j < 0 || !o->eb[0] ? 0 : eu[j], g->in[a], g->out[a], g->k[a], at[a], &lo[a],
                   &hi[a]);
        if (lo[a] < 0)
            lo[a] = hi[a] = w[a].first;
    }
    double eb[2], ieb[2];
    max3(x, base, g, w, &o->f[k], &ix->i[k], eb, ieb);
    for (int64_t s0 = lo[0]; s0 <= hi[0]; s0++)
        for (int64_t s1 = lo[1]; s1 <= hi[1]; s1++)
            for (int64_t s2 = lo[2]; s2 <= hi[2]; s2++) {
                if (s0 == w[0].first && s1 == w[1].first && s2 == w[2].first)
                    continue;
                win wv[3] = {w[0], w[1], w[2]};
                wv[0].first = s0, wv[1].first = s1, wv[2].first = s2;
                double ebv[2], iebv[2];
                int64_t iv;
                float mv;
                max3(x, base, g, wv, &mv, &iv, ebv, iebv);
                for (int t = 0; t < 2; t++) {
                    eb[t] = fmax(eb[t], fabs((double)mv - o->f[k]) + ebv[t]);
                    ieb[t] = INFINITY;
                }
            }
    for (int t = 0; o->eb[0] && t < 2; t++) {
        o->eb[t][k] = (float)eb[t];
        ix->eb[t][k] = (float)ieb[t];
    }
}

/* fractional_max_pool2d(self, kernel_size, output_size, random_samples),
 * fractional_max_pool3d(...) -> (out, indices): self (N, C, ...) or (C, ...),
 * random_samples (N, C, nax) of floats in [0, 1) (PyTorch's order: W, H
 * for 2-D; T, H, W for 3-D). */
static int op_frac_pool(ex *E, int nax)
{
    const tens *x = ref_arg_tensor(E, 0, "self"), *sm = x ? ref_arg_tensor(E, 3, "random_samples") : NULL;
    int64_t ks[3], os[3];
    int kc, oc;
    if (!sm || ref_arg_ints(E, 1, "kernel_size", ks, &kc, 3) || ref_arg_ints(E, 2, "output_size", os, &oc, 3))
        return -1;
    if (kind_of(x->dtype) != K_F || kind_of(sm->dtype) != K_F || x->rank < nax + 1 || x->rank > nax + 2 ||
        kc != nax || oc != nax)
        return ref_fail(E, "takes a float input of rank %d or %d and %d kernel and output sizes", nax + 1, nax + 2,
                        nax);
    geom3 g = {.k = {1, 1, 1}, .in = {1, 1, 1}, .out = {1, 1, 1}};
    int64_t shape[MAXR];
    memcpy(shape, x->shape, sizeof shape);
    for (int a = 3 - nax; a < 3; a++) {
        g.k[a] = ks[a - (3 - nax)], g.out[a] = os[a - (3 - nax)], g.in[a] = x->shape[x->rank - 3 + a];
        if (g.k[a] <= 0 || g.out[a] < 0 || g.out[a] + g.k[a] - 1 > g.in[a])
            return ref_fail(E, "output_size + kernel_size - 1 must not exceed the input along each axis");
        shape[x->rank - 3 + a] = g.out[a];
    }
    int64_t vol = g.in[0] * g.in[1] * g.in[2], ovol = g.out[0] * g.out[1] * g.out[2];
    int64_t planes = vol ? x->n / vol : 0;
    if (sm->n != planes * nax)
        return ref_fail(E, "random_samples must hold %d samples for each of the %lld planes", nax, (long long)planes);
    tens *o = ref_new_result(E, K_F, x->rank, shape), *ix = o ? ref_new_result(E, K_I, x->rank, shape) : NULL;
    if (!ix)
        return -1;
    o = &E->res[E->nres - 2]; /* the array may have moved */
    int64_t *seq[3], longest = g.out[0] + g.out[1] + g.out[2];
    int64_t *buf = malloc((size_t)(3 * longest + 1) * sizeof *buf);
    if (!buf)
        return ref_fail(E, "out of host memory");
    for (int64_t p = 0; p < planes; p++) {
        float u[3];
        double eu[3];
        for (int j = 0; j < nax; j++) {
            u[j] = (float)ldd(sm, p * nax + j);
            eu[j] = ldb(sm, 0, p * nax + j);
        }
        for (int a = 0; a < 3; a++) {
            seq[a] = buf + a * longest;
            frac_starts(sample_of(nax, a) < 0 ? 0 : u[sample_of(nax, a)], g.in[a], g.out[a], g.k[a], seq[a]);
        }
        for (int64_t r = 0; r < ovol; r++)
            frac_out(x, p * vol, &g, seq, u, eu, nax, r, o, ix, p * ovol + r);
    }
    free(buf);
    return 0;
}

static const ref_op ops[] = {
    {"fractional_max_pool2d", op_frac_pool, 2}, /* (out, indices) */
    {"fractional_max_pool3d", op_frac_pool, 3}, /* (out, indices) */
    {"max_pool3d_with_indices", op_max_pool3d, 0}, /* (out, indices) */
    {"avg_pool3d", op_avg_pool3d, 0},
    {"_adaptive_avg_pool3d", op_adaptive_pool3d, 0},
    {"adaptive_max_pool3d", op_adaptive_pool3d, 1}, /* (out, indices) */
};
const ref_ops ref_pool3d_ops = REF_OPS(ops);
