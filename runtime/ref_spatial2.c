/* ref_spatial2.c: reference ops: max_unpool2d/3d, im2col, and linear, bilinear, trilinear and bicubic upsampling
 * with PyTorch's index math (area_pixel_compute_source_index), each weight and source index as it computes them. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- max_unpool ---- */

/* max_unpool2d(self, indices, output_size), max_unpool3d(self, indices,
 * output_size, stride, padding): zeros of the output size, and each input
 * element written at its index into its plane (the last nd dims seen
 * flat); in order, so of equal indices the last wins, as PyTorch's loop. */
static int op_max_unpool(ex *E, int nd)
{
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 1, "indices") : NULL;
    int64_t os[MAXR], shape[MAXR];
    int cnt;
    if (!ix)
        return -1;
    if (kind_of(ix->dtype) != K_I || ix->rank != x->rank || memcmp(ix->shape, x->shape, sizeof(int64_t) * x->rank))
        return ref_fail(E, "indices must be an integer tensor of the input's shape");
    if (x->rank != nd + 1 && x->rank != nd + 2)
        return ref_fail(E, "input must have rank %d or %d", nd + 1, nd + 2);
    if (ref_arg_ints(E, 2, "output_size", os, &cnt, MAXR) || cnt != nd)
        return ref_fail(E, "output_size must have %d sizes", nd);
    memcpy(shape, x->shape, sizeof shape);
    int64_t area = 1, inarea = 1;
    for (int a = 0; a < nd; a++) {
        shape[x->rank - nd + a] = os[a];
        area = ref_sat_mul(area, os[a]);
        inarea *= x->shape[x->rank - nd + a];
    }
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        int64_t at = ldi(ix, k);
        if (at < 0 || at >= area)
            return ref_fail(E, "index %lld is outside the output plane of %lld elements", (long long)at,
                            (long long)area);
        int64_t dst = k / inarea * area + at;
        o->f[dst] = (float)ldd(x, k);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][dst] = (float)ldb(x, w, k);
    }
    return 0;
}

/* ---- im2col ---- */

/* im2col(self, kernel_size, dilation, padding, stride): (N, C, H, W) or
 * (C, H, W) to (N, C kh kw, L), column l = oh OW + ow holding the window's
 * taps (c, i, j) in rows (c kh + i) kw + j, the padding's zeros exact;
 * values move with their bounds. */
static int op_im2col(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t v[4][2], o[2];
    const char *keys[4] = {"kernel_size", "dilation", "padding", "stride"};
    if (!x)
        return -1;
    if (x->rank != 3 && x->rank != 4)
        return ref_fail(E, "input must have rank 3 or 4");
    for (int i = 0; i < 4; i++) {
        int cnt;
        if (ref_arg_ints(E, i + 1, keys[i], v[i], &cnt, 2) || cnt != 2)
            return ref_fail(E, "%s must have 2 values", keys[i]);
    }
    int64_t C = x->shape[x->rank - 3], H = x->shape[x->rank - 2], W = x->shape[x->rank - 1];
    int64_t N = x->rank == 4 ? x->shape[0] : 1, in[2] = {H, W};
    for (int a = 0; a < 2; a++) {
        if (v[0][a] < 1 || v[1][a] < 1 || v[2][a] < 0 || v[3][a] < 1)
            return ref_fail(E, "kernel, dilation and stride must be positive, padding not negative");
        o[a] = (in[a] + 2 * v[2][a] - v[1][a] * (v[0][a] - 1) - 1) / v[3][a] + 1;
        if (o[a] < 1)
            return ref_fail(E, "the kernel is larger than the padded input");
    }
    int64_t rows = C * v[0][0] * v[0][1], L = o[0] * o[1], shape[3] = {N, rows, L};
    tens *r = ref_new_result(E, K_F, x->rank - 1, x->rank == 4 ? shape : shape + 1);
    for (int64_t k = 0; r && k < r->n; k++) {
        int64_t n = k / (rows * L), row = k / L % rows, l = k % L;
        int64_t c = row / (v[0][0] * v[0][1]), i = row / v[0][1] % v[0][0], j = row % v[0][1];
        int64_t y = l / o[1] * v[3][0] - v[2][0] + i * v[1][0], xx = l % o[1] * v[3][1] - v[2][1] + j * v[1][1];
        if (y < 0 || y >= H || xx < 0 || xx >= W)
            continue;
        int64_t src = ((n * C + c) * H + y) * W + xx;
        r->f[k] = (float)ldd(x, src);
        for (int w = 0; r->eb[0] && w < 2; w++)
            r->eb[w][k] = (float)ldb(x, w, src);
    }
    return r ? 0 : -1;
}

/* ---- Interpolation ---- */

/* The sizes and the source-index scale per axis (PyTorch's
 * area_pixel_compute_scale, in float as its CPU kernels). */
typedef struct {
    int nd, align, cubic;
    int64_t in[3], out[3];
    float scale[3];
} interp;

static float interp_scale(int64_t in, int64_t out, int align, double given)
{
    if (align)
        return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.f;
    return given > 0 ? (float)(1.0 / given) : (float)in / (float)out;
}

/* upsample_*(input, output_size, align_corners, scales...) or .vec(input,
 * output_size, align_corners, scale_factors): sizes given, or floor(in s). */
static int interp_args(ex *E, const tens *x, interp *g)
{
    int64_t os[3] = {0};
    int cnt = 0, nd = g->nd;
    if (x->rank != nd + 2)
        return ref_fail(E, "input must have rank %d", nd + 2);
    if (ref_present(ref_arg(E, 1, "output_size")) && (ref_arg_ints(E, 1, "output_size", os, &cnt, 3) || cnt != nd))
        return ref_fail(E, "output_size must have %d sizes", nd);
    if (ref_arg_bool(E, 2, "align_corners", 0, &g->align))
        return -1;
    for (int a = 0; a < nd; a++) {
        const gr_arg *f = gr_upsample_scale(E->node, 3, nd, a);
        double v = 0;
        kind k;
        if (ref_present(f) && ref_num_of(E, f, "scale", &v, &k))
            return -1;
        g->in[a] = x->shape[2 + a];
        g->out[a] = cnt ? os[a] : (int64_t)floor((double)g->in[a] * v);
        if (g->out[a] < 1 || g->in[a] < 1)
            return ref_fail(E, "input and output sizes must be positive");
        g->scale[a] = interp_scale(g->in[a], g->out[a], g->align, v);
    }
    return 0;
}

/* area_pixel_compute_source_index, in float. */
static float interp_src(const interp *g, int a, int64_t i)
{
    if (g->align)
        return g->scale[a] * (float)i;
    float s = g->scale[a] * ((float)i + 0.5f) - 0.5f;
    return !g->cubic && s < 0 ? 0.f : s;
}

/* Up to 4 taps per axis: source indices and weights. */
typedef struct {
    int n;
    int64_t at[4];
    double w[4];
} taps;

static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

/* Linear: floor and its neighbour, lambda clamped to [0, 1] (guard_index_and_lambda);
 * cubic: the 4 around floor, clamped to the edges, Keys' weights with A = -0.75. */
static taps interp_taps(const interp *g, int a, int64_t i)
{
    taps t;
    float src = interp_src(g, a, i);
    int64_t in = g->in[a];
    if (g->cubic) {
        int64_t f = (int64_t)floorf(src);
        float fr = src - (float)f;
        const double A = -0.75, c[4] = {cubic2(fr + 1.0, A), cubic1(fr, A), cubic1(1.0 - fr, A),
                                        cubic2(1.0 - fr + 1.0, A)};
        t.n = 4;
        for (int k = 0; k < 4; k++) {
            int64_t p = f - 1 + k;
            t.at[k] = p < 0 ? 0 : p > in - 1 ? in - 1 : p;
            t.w[k] = c[k];
        }
        return t;
    }
    int64_t i0 = (int64_t)floorf(src);
    i0 = i0 < in - 1 ? i0 : in - 1;
    float l = src - (float)i0;
    l = l < 0 ? 0 : l > 1 ? 1 : l;
    t.n = 2;
    t.at[0] = i0;
    t.at[1] = i0 + (i0 < in - 1);
    t.w[0] = 1.0f - l;
    t.w[1] = l;
    return t;
}

/* One output element's value: the sum over the taps' product, in double. */
static double interp_value(const interp *g, const tens *x, int64_t plane, const int64_t *idx)
{
    taps t[3];
    int n[3] = {1, 1, 1};
    for (int a = 0; a < g->nd; a++) {
        t[a] = interp_taps(g, a, idx[a]);
        n[a] = t[a].n;
    }
    int64_t area = g->in[0] * (g->nd > 1 ? g->in[1] : 1) * (g->nd > 2 ? g->in[2] : 1);
    double v = 0;
    for (int q = 0; q < n[0] * n[1] * n[2]; q++) {
        int j[3] = {q / (n[1] * n[2]), q / n[2] % n[1], q % n[2]};
        int64_t src = 0;
        double wt = 1;
        for (int a = 0; a < g->nd; a++) {
            src = src * g->in[a] + t[a].at[j[a]];
            wt *= t[a].w[j[a]];
        }
        v += wt * ldd(x, plane * area + src);
    }
    return v;
}

/* A tensor's values and bounds between the bound's passes. */
typedef struct {
    int64_t shape[5];
    double *v;
    float *e[2];
} ipass;

/* One pass of the bound along axis a: each output the weighted sum of its
 * taps as the device's stored operations (each weight a constant rounded
 * to DL16, a product, an add), from the pass before. */
static int interp_pass(const interp *g, int a, const ipass *in, ipass *out)
{
    int d = 2 + a;
    memcpy(out->shape, in->shape, sizeof out->shape);
    out->shape[d] = g->out[a];
    int64_t pre = 1, post = 1;
    for (int i = 0; i < g->nd + 2; i++)
        pre *= i < d ? in->shape[i] : 1, post *= i > d ? in->shape[i] : 1;
    int64_t n = pre * g->out[a] * post;
    out->v = malloc((size_t)(n ? n : 1) * sizeof *out->v);
    out->e[0] = malloc((size_t)(n ? n : 1) * sizeof(float));
    out->e[1] = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!out->v || !out->e[0] || !out->e[1])
        return -1;
    for (int64_t k = 0; k < n; k++) {
        int64_t r = k % post, o = k / post % g->out[a], p = k / post / g->out[a];
        taps t = interp_taps(g, a, o);
        bv acc[2] = {{0, 0, 0}, {0, 0, 1}};
        for (int j = 0; j < t.n; j++) {
            int64_t src = (p * g->in[a] + t.at[j]) * post + r;
            for (int w = 0; w < 2; w++)
                acc[w] = ref_bv_add(acc[w], ref_bv_mul(ref_bv_k(t.w[j]), (bv){in->v[src], in->e[w][src], w}));
        }
        out->v[k] = acc[0].v;
        out->e[0][k] = (float)acc[0].e;
        out->e[1][k] = (float)acc[1].e;
    }
    return 0;
}

static void ipass_free(ipass *q)
{
    free(q->v);
    free(q->e[0]);
    free(q->e[1]);
}

/* The bounds: the device resamples one axis at a time, the last first, each
 * a product with a constant matrix of the weights (docs/compiler.md,
 * "Upsampling"), each pass's result stored; so the bound runs the same
 * passes. */
static int interp_bounds(ex *E, const interp *g, const tens *x, tens *o)
{
    size_t n = (size_t)x->n;
    ipass cur = {{0}, malloc(n * sizeof(double)), {malloc(n * sizeof(float)), malloc(n * sizeof(float))}};
    memcpy(cur.shape, x->shape, (size_t)x->rank * sizeof *x->shape);
    int rc = !cur.v || !cur.e[0] || !cur.e[1];
    for (size_t k = 0; k < n && !rc; k++) {
        cur.v[k] = ldd(x, (int64_t)k);
        cur.e[0][k] = (float)ldb(x, 0, (int64_t)k);
        cur.e[1][k] = (float)ldb(x, 1, (int64_t)k);
    }
    for (int a = g->nd - 1; a >= 0 && !rc; a--) {
        ipass next = {{0}, NULL, {NULL, NULL}};
        rc = interp_pass(g, a, &cur, &next);
        ipass_free(&cur);
        cur = next;
    }
    if (!rc) {
        memcpy(o->eb[0], cur.e[0], (size_t)o->n * sizeof(float));
        memcpy(o->eb[1], cur.e[1], (size_t)o->n * sizeof(float));
    }
    ipass_free(&cur);
    return rc ? ref_fail(E, "out of memory") : 0;
}

/* upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d (code = dims),
 * upsample_bicubic2d (code 4). */
static int op_upsample(ex *E, int code)
{
    const tens *x = ref_arg_tensor(E, 0, "input");
    interp g = {.nd = code == 4 ? 2 : code, .cubic = code == 4};
    if (!x || interp_args(E, x, &g))
        return -1;
    if (kind_of(x->dtype) != K_F)
        return ref_fail(E, "input must be a float tensor");
    int64_t shape[MAXR];
    memcpy(shape, x->shape, sizeof shape);
    for (int a = 0; a < g.nd; a++)
        shape[2 + a] = g.out[a];
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    if (!o)
        return -1;
    int64_t oarea = o->n / (x->shape[0] * x->shape[1]);
    for (int64_t k = 0; k < o->n; k++) {
        int64_t idx[3], pos = k % oarea;
        for (int a = g.nd - 1; a >= 0; a--) {
            idx[a] = pos % g.out[a];
            pos /= g.out[a];
        }
        o->f[k] = (float)interp_value(&g, x, k / oarea, idx);
    }
    return o->eb[0] && x->n ? interp_bounds(E, &g, x, o) : 0;
}

static const ref_op ops[] = {
    {"max_unpool2d", op_max_unpool, 2},
    {"max_unpool3d", op_max_unpool, 3},
    {"im2col", op_im2col, 0},
    {"upsample_linear1d", op_upsample, 1},
    {"upsample_bilinear2d", op_upsample, 2},
    {"upsample_trilinear3d", op_upsample, 3},
    {"upsample_bicubic2d", op_upsample, 4},
};
const ref_ops ref_spatial2_ops = REF_OPS(ops);
