/* dec_space.c: the constant factories linspace, logspace, tril_indices and triu_indices.  Their values depend
 * on the arguments alone, so they are computed here as PyTorch computes them and baked as a constant; the
 * reference executor calls the same functions (runtime/ref_space.c). */
#include "decompose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* linspace's point j of n > 1, float: PyTorch 1.13's CPU kernel (AVX2), its step of the result's type; a
 * point of a whole block of 16 is in a run of 8 from its first, from + k * step; a run's first, and any other
 * point, a fused start + i * step, or in the second half end - (n - 1 - i) * step */
static float float_point(double a, double b, int64_t n, int64_t j)
{
    float fa = (float)a, fb = (float)b, st = (fb - fa) / (float)(n - 1);
    int64_t i = j < n / 16 * 16 ? j / 8 * 8 : j;
    float from = i < n / 2 ? fmaf(st, (float)i, fa) : fmaf(-st, (float)(n - 1 - i), fb);
    return from + (float)(j - i) * st;
}

double cc_space_at(double a, double b, int is_log, double base, int64_t n, int64_t j, int is_float)
{
    if (!is_float) { /* PyTorch casts start and end to the result's type first */
        a = trunc(a);
        b = trunc(b);
    }
    if (n == 1)
        return is_float ? (double)(float)(is_log ? pow(base, a) : a) : trunc(is_log ? pow(base, a) : a);
    if (is_float && !is_log)
        return (double)float_point(a, b, n, j);
    /* logspace's exponents, and integer points: in double (logspace's step of the float difference) */
    double fa = is_float ? (double)(float)a : a, fb = is_float ? (double)(float)b : b;
    double st = (is_float ? (double)(float)(fb - fa) : b - a) / (double)(n - 1);
    double x = j < n / 2 ? fa + st * (double)j : fb - st * (double)(n - 1 - j);
    if (is_log)
        x = pow(base, x);
    return is_float ? (double)(float)x : trunc(x);
}

int64_t cc_tri_indices(int64_t row, int64_t col, int64_t offset, int upper, int64_t *rows, int64_t *cols)
{
    int64_t k = 0;
    for (int64_t i = 0; i < row; i++) {
        int64_t lo = upper ? i + offset : 0, hi = upper ? col : i + offset + 1;
        lo = lo < 0 ? 0 : lo;
        hi = hi > col ? col : hi;
        for (int64_t j = lo; rows && j < hi; j++) {
            rows[k + j - lo] = i;
            cols[k + j - lo] = j;
        }
        k += hi > lo ? hi - lo : 0; /* (a row's count at once: counting alone stays O(row)) */
    }
    return k;
}

/* An integer constant is exact on the device only within DL16's integers:
 * beyond (top, the largest magnitude) the op stays on the host.  Checked
 * on the values' bound before they are made (tril_indices(70000, 70000)
 * would take gigabytes first). */
static void need_exact(dctx *c, double top)
{
    if (top > IR_INT_EXACT)
        dc_fail(c, "integer values up to %g are not exact on the device (DL16 keeps every integer up to %d)", top,
                IR_INT_EXACT);
}

/* A baked constant of n elements: more than MAX_BAKED (64 MB) stays on the host. */
#define MAX_BAKED ((int64_t)1 << 24)

static void need_small(dctx *c, int64_t n)
{
    if (n > MAX_BAKED)
        dc_fail(c, "%lld values are too many to bake as a constant (at most %lld)", (long long)n,
                (long long)MAX_BAKED);
}

/* linspace(start, end, steps, dtype), logspace(start, end, steps, base=10, dtype) */
int dc_r_space(dctx *c, const gr_node *n, int *out)
{
    int is_log = !strcmp(n->base, "logspace");
    double a = dc_num(c, n, 0, "start", 0), b = dc_num(c, n, 1, "end", 0);
    double base = is_log ? dc_num(c, n, 3, "base", 10) : 0;
    int64_t steps = (int64_t)dc_num(c, n, 2, "steps", 0);
    int d = dc_dtype_arg(c, n, 99, "dtype");
    gr_ttype t = {.dtype = d >= 0 ? (gr_dtype)d : GR_F32, .rank = 1, .shape = {steps}};
    if (steps < 0)
        dc_fail(c, "steps must not be negative");
    if (!steps || t.dtype == GR_BOOL || (is_log && base <= 0)) /* the host's: nothing to bake, or NaNs */
        return 0;
    if (!dc_is_float(t.dtype)) /* the points lie between the ends (base > 0: monotone) */
        need_exact(c, fmax(fabs(cc_space_at(a, b, is_log, base, steps, 0, 0)),
                           fabs(cc_space_at(a, b, is_log, base, steps, steps - 1, 0))));
    need_small(c, steps);
    float *v = ir_xalloc((size_t)steps * sizeof *v);
    for (int64_t j = 0; j < steps; j++)
        v[j] = (float)cc_space_at(a, b, is_log, base, steps, j, dc_is_float(t.dtype));
    out[0] = dc_const(c, t, v);
    return 1;
}

/* tril_indices(row, col, offset, dtype), triu_indices: the (row, column) pairs of the triangle, row-major */
int dc_r_tri_indices(dctx *c, const gr_node *n, int *out)
{
    int64_t row = (int64_t)dc_num(c, n, 0, "row", 0), col = (int64_t)dc_num(c, n, 1, "col", 0);
    int64_t off = (int64_t)dc_num(c, n, 2, "offset", 0);
    int d = dc_dtype_arg(c, n, 99, "dtype");
    if (row < 0 || col < 0)
        dc_fail(c, "row and col must not be negative");
    int upper = !strcmp(n->base, "triu_indices");
    int64_t k = cc_tri_indices(row, col, off, upper, NULL, NULL);
    gr_ttype t = {.dtype = d >= 0 ? (gr_dtype)d : GR_I64, .rank = 2, .shape = {2, k}};
    if (!k)
        return 0;
    need_exact(c, (double)(row > col ? row - 1 : col - 1));
    need_small(c, 2 * k);
    int64_t *ij = ir_xalloc((size_t)(2 * k) * sizeof *ij);
    cc_tri_indices(row, col, off, upper, ij, ij + k);
    float *v = ir_xalloc((size_t)(2 * k) * sizeof *v);
    for (int64_t i = 0; i < 2 * k; i++)
        v[i] = (float)ij[i];
    free(ij);
    out[0] = dc_const(c, t, v);
    return 1;
}
