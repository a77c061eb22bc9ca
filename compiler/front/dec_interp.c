/* dec_interp.c: decompose rules for linear, bilinear, trilinear and
 * bicubic upsampling.  Each is separable: along each spatial axis every
 * output is a weighted sum of at most 4 inputs, so the op is one product
 * per axis with a constant (out x in) matrix of PyTorch's weights, on the
 * PT units (docs/compiler.md, "Upsampling"). */
#include "decompose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int nd, align, cubic;
} interp_kind;

/* area_pixel_compute_scale, in float as PyTorch's CPU kernels. */
static float axis_scale(int64_t in, int64_t out, int align, double given)
{
    if (align)
        return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.f;
    return given > 0 ? (float)(1.0 / given) : (float)in / (float)out;
}

static double keys1(double x) { return ((-0.75 + 2) * x - (-0.75 + 3)) * x * x + 1; }
static double keys2(double x) { return ((-0.75 * x - 5 * -0.75) * x + 8 * -0.75) * x - 4 * -0.75; }

/* Row o of the (out x in) matrix m: linear, the floor and its neighbour
 * (lambda clamped to [0, 1]); cubic, the 4 around the floor with Keys'
 * weights (A = -0.75), indices clamped to the edges (weights of a clamped
 * index add up). */
static void axis_row(const interp_kind *k, float scale, int64_t in, int64_t o, double *m)
{
    float src = k->align ? scale * (float)o : scale * ((float)o + 0.5f) - 0.5f;
    if (!k->cubic && src < 0)
        src = 0;
    int64_t f = (int64_t)floorf(src);
    if (k->cubic) {
        double t = src - (float)f, w[4] = {keys2(t + 1), keys1(t), keys1(1 - t), keys2(2 - t)};
        for (int j = 0; j < 4; j++) {
            int64_t i = f - 1 + j;
            m[i < 0 ? 0 : i > in - 1 ? in - 1 : i] += w[j];
        }
        return;
    }
    f = f < in - 1 ? f : in - 1;
    float l = src - (float)f;
    l = l < 0 ? 0 : l > 1 ? 1 : l;
    m[f] += 1.0f - l;
    m[f + (f < in - 1)] += l;
}

/* The matrix of one axis as a constant: (in, out) when it multiplies rows
 * from the right (the last axis), else (out, in). */
static int axis_matrix(dctx *c, const interp_kind *k, float scale, int64_t in, int64_t out, int right, gr_dtype dt)
{
    double *m = calloc((size_t)(in * out), sizeof *m);
    float *v = malloc((size_t)(in * out) * sizeof *v);
    if (!m || !v)
        abort();
    for (int64_t o = 0; o < out; o++)
        axis_row(k, scale, in, o, m + o * in);
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++)
            v[right ? i * out + o : o * in + i] = (float)m[o * in + i];
    free(m);
    gr_ttype t = {.dtype = dt, .rank = 2, .shape = {right ? in : out, right ? out : in}};
    return dc_const(c, t, v);
}

int dc_last_axis_times(dctx *c, int x, int m)
{
    gr_ttype t = dc_T(c, x);
    const int64_t in = t.shape[t.rank - 1], rows[2] = {dc_numel(&t) / in, in};
    t.shape[t.rank - 1] = dc_T(c, m).shape[1];
    return dc_reshape(c, dc_matmul(c, "aten.mm.default", dc_reshape(c, x, 2, rows), m), t.rank, t.shape);
}

/* Resample axis d of x (its last nd are spatial) to `out` elements. */
static int resample_axis(dctx *c, const interp_kind *k, int x, int d, int64_t out, float scale)
{
    gr_ttype t = dc_T(c, x);
    int64_t in = t.shape[d], pre = 1, post = 1;
    for (int i = 0; i < t.rank; i++)
        pre *= i < d ? t.shape[i] : 1, post *= i > d ? t.shape[i] : 1;
    int m = axis_matrix(c, k, scale, in, out, d == t.rank - 1, t.dtype);
    if (d == t.rank - 1)
        return dc_last_axis_times(c, x, m);
    gr_ttype to = t;
    to.shape[d] = out;
    int64_t s3[3] = {pre, in, post};
    gr_ttype t3 = {.dtype = t.dtype, .rank = 3, .shape = {pre, out, post}};
    int y = DC_EMIT(c, "aten.matmul.default", t3, da_val(m), da_val(dc_reshape(c, x, 3, s3)));
    return dc_reshape(c, y, t.rank, to.shape);
}

/* The scale argument of axis a (a number, or 0 when absent). */
static double scale_arg(const gr_node *n, int nd, int a)
{
    const gr_arg *f = gr_upsample_scale(n, 3, nd, a);
    return dc_is_number(f) ? (f->kind == GR_ARG_FLOAT ? f->f : (double)f->i) : 0;
}

/* upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d,
 * upsample_bicubic2d (input, output_size, align_corners, scales...) and
 * their .vec (input, output_size, align_corners, scale_factors): the axes
 * from the last, each one product.  An empty or non-float input stays for
 * the host. */
int dc_r_upsample_interp(dctx *c, const gr_node *n, int *out)
{
    interp_kind k = {.cubic = strstr(n->base, "bicubic") != NULL};
    k.nd = strstr(n->base, "3d") ? 3 : strstr(n->base, "2d") ? 2 : 1;
    int x = dc_val(c, n, 0, "input");
    gr_ttype t = dc_T(c, x);
    int64_t os[GR_MAX_RANK] = {0};
    int cnt = dc_ints(c, n, 1, "output_size", os);
    const gr_arg *al = gr_node_arg(n, 2, "align_corners");
    k.align = al && (al->kind == GR_ARG_BOOL || al->kind == GR_ARG_INT) && al->i;
    if (t.rank != k.nd + 2 || (cnt > 0 && cnt != k.nd))
        dc_fail(c, "needs an input of rank %d and %d output sizes", k.nd + 2, k.nd);
    if (!dc_is_float(t.dtype) || dc_numel(&t) == 0)
        return 0;
    for (int a = k.nd - 1; a >= 0; a--) {
        int d = 2 + a;
        int64_t in = t.shape[d];
        double s = scale_arg(n, k.nd, a);
        int64_t to = cnt > 0 ? os[a] : (int64_t)floor((double)in * s);
        if (to < 1)
            dc_fail(c, "output size %lld of axis %d is not positive", (long long)to, d);
        x = resample_axis(c, &k, x, d, to, axis_scale(in, to, k.align, s));
    }
    out[0] = x;
    return 1;
}
