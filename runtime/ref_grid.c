/* ref_grid.c: reference op: grid_sampler_2d (bilinear, nearest and bicubic; zeros, border and reflection padding;
 * align_corners either way), PyTorch's coordinate math in float (GridSampler.h). */
#include "ref_internal.h"

#include <math.h>

/* PyTorch's reflect_coordinates: fold c into [lo2 / 2, hi2 / 2]. */
static float reflect(float c, int64_t lo2, int64_t hi2)
{
    if (lo2 == hi2)
        return 0;
    float mn = (float)lo2 / 2, span = (float)(hi2 - lo2) / 2;
    c = fabsf(c - mn);
    float extra = fmodf(c, span);
    int flips = (int)floorf(c / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

/* A coordinate folded (reflection) or clipped (border) into the input. */
static float grid_pad(float c, int64_t n, int pad, int align)
{
    if (pad == 2)
        c = align ? reflect(c, 0, 2 * (n - 1)) : reflect(c, -1, 2 * n - 1);
    if (pad >= 1)
        c = fminf((float)(n - 1), fmaxf(c, 0));
    return c;
}

/* The source coordinate of normalized g along an axis of n pixels, before padding. */
static float grid_unnorm(float g, int64_t n, int align)
{
    return align ? (g + 1) / 2 * (float)(n - 1) : ((g + 1) * (float)n - 1) / 2;
}

static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

/* Bicubic: the 4 x 4 taps around the unpadded coordinate, each tap's
 * coordinate padded on its own (PyTorch's get_value_bounded), Keys'
 * weights with A = -0.75; taps still outside read 0. */
static int grid_cubic(float ix, float iy, int64_t H, int64_t W, int pad, int align, int64_t *xs, int64_t *ys,
                      double *ws)
{
    float x0 = floorf(ix), y0 = floorf(iy), tx = ix - x0, ty = iy - y0;
    const double A = -0.75;
    double cx[4] = {cubic2(tx + 1.0, A), cubic1(tx, A), cubic1(1.0 - tx, A), cubic2(2.0 - tx, A)};
    double cy[4] = {cubic2(ty + 1.0, A), cubic1(ty, A), cubic1(1.0 - ty, A), cubic2(2.0 - ty, A)};
    for (int t = 0; t < 16; t++) {
        xs[t] = (int64_t)grid_pad(x0 - 1 + (float)(t % 4), W, pad, align);
        ys[t] = (int64_t)grid_pad(y0 - 1 + (float)(t / 4), H, pad, align);
        ws[t] = cx[t % 4] * cy[t / 4];
    }
    return 16;
}

/* One output: the taps inside the input times their weights (exact given
 * the coordinates: the values' bounds weighted); a coordinate from a grid
 * value with a bound is not validated (the sample moves with it, and
 * jumps at pixel edges for nearest): unbounded. */
static void grid_one(const tens *x, int64_t plane, int64_t H, int64_t W, float ix, float iy, int mode, int pad,
                     int align, tens *o, int64_t k, int gbound)
{
    int64_t xs[16], ys[16];
    double ws[16];
    int nt;
    if (mode == 2) {
        nt = grid_cubic(ix, iy, H, W, pad, align, xs, ys, ws);
    } else if (mode == 1) {
        ix = grid_pad(ix, W, pad, align);
        iy = grid_pad(iy, H, pad, align);
        xs[0] = (int64_t)nearbyintf(ix), ys[0] = (int64_t)nearbyintf(iy), ws[0] = 1, nt = 1;
    } else {
        ix = grid_pad(ix, W, pad, align);
        iy = grid_pad(iy, H, pad, align);
        float x0 = floorf(ix), y0 = floorf(iy), x1 = x0 + 1, y1 = y0 + 1;
        float w4[4] = {(x1 - ix) * (y1 - iy), (ix - x0) * (y1 - iy), (x1 - ix) * (iy - y0), (ix - x0) * (iy - y0)};
        for (int t = 0; t < 4; t++) {
            xs[t] = (int64_t)(t & 1 ? x1 : x0);
            ys[t] = (int64_t)(t & 2 ? y1 : y0);
            ws[t] = w4[t];
        }
        nt = 4;
    }
    double v = 0, e[2] = {0, 0};
    for (int t = 0; t < nt; t++) {
        if (xs[t] < 0 || xs[t] >= W || ys[t] < 0 || ys[t] >= H)
            continue;
        int64_t src = plane + ys[t] * W + xs[t];
        v += ws[t] * ldd(x, src);
        for (int w = 0; w < 2; w++)
            e[w] += fabs(ws[t]) * ldb(x, w, src);
    }
    o->f[k] = (float)v;
    for (int w = 0; o->eb[0] && w < 2; w++)
        o->eb[w][k] = gbound ? INFINITY : (float)ref_eb_store(v, e[w] + EB_ACC * nt * fabs(v), w);
}

/* grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners) */
static int op_grid_sampler(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "input"), *g = x ? ref_arg_tensor(E, 1, "grid") : NULL;
    int64_t mode, pad;
    int align;
    if (!g || ref_arg_req_int(E, 2, "interpolation_mode", &mode) || ref_arg_req_int(E, 3, "padding_mode", &pad) ||
        ref_arg_bool(E, 4, "align_corners", 0, &align))
        return -1;
    if (x->rank != 4 || g->rank != 4 || g->shape[3] != 2 || g->shape[0] != x->shape[0] || kind_of(x->dtype) != K_F)
        return ref_fail(E, "input (N, C, H, W) and grid (N, Ho, Wo, 2)");
    if (mode < 0 || mode > 2 || pad < 0 || pad > 2)
        return ref_fail(E, "runs bilinear, nearest and bicubic sampling with zeros, border or reflection padding");
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], Ho = g->shape[1], Wo = g->shape[2];
    int64_t shape[4] = {N, C, Ho, Wo};
    tens *o = ref_new_result(E, K_F, 4, shape);
    for (int64_t k = 0; o && k < o->n; k++) {
        int64_t n = k / (C * Ho * Wo), c = k / (Ho * Wo) % C, p = k % (Ho * Wo), gi = (n * Ho * Wo + p) * 2;
        float ix = grid_unnorm((float)ldd(g, gi), W, align), iy = grid_unnorm((float)ldd(g, gi + 1), H, align);
        int gb = o->eb[0] && (ldb(g, 0, gi) > 0 || ldb(g, 0, gi + 1) > 0);
        grid_one(x, (n * C + c) * H * W, H, W, ix, iy, (int)mode, (int)pad, align, o, k, gb);
    }
    return o ? 0 : -1;
}

static const ref_op ops[] = {
    {"grid_sampler_2d", op_grid_sampler, 0},
};
const ref_ops ref_grid_ops = REF_OPS(ops);
