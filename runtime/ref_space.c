/* ref_space.c: reference ops: linspace and logspace, with PyTorch's halves (the first half counted up from
 * start, the second down from end) and its float step, so the values are PyTorch's own. */
#include "ref_internal.h"

#include <math.h>

/* The j-th of n points from a to b: float arithmetic for a float result
 * (PyTorch's step is of the result's type), double for an integer one. */
static double space_at(double a, double b, int64_t n, int64_t j, int is_float)
{
    if (n == 1)
        return a;
    if (is_float) {
        float fa = (float)a, fb = (float)b, st = (fb - fa) / (float)(n - 1);
        return j < n / 2 ? (double)(fa + st * (float)j) : (double)(fb - st * (float)(n - j - 1));
    }
    double st = (b - a) / (double)(n - 1);
    return j < n / 2 ? a + st * (double)j : b - st * (double)(n - j - 1);
}

/* linspace(start, end, steps, dtype=...) (code 0), logspace(start, end, steps, base=10, dtype=...) (code 1):
 * a float result unless dtype says otherwise; an integer one truncates, as PyTorch's cast. */
static int op_space(ex *E, int is_log)
{
    double a, b, base = 10;
    int64_t n;
    kind ka;
    int dt;
    const gr_arg *s0 = ref_arg(E, 0, "start"), *s1 = ref_arg(E, 1, "end");
    if (!ref_present(s0) || !ref_present(s1))
        return ref_fail(E, "needs start and end");
    if (ref_num_of(E, s0, "start", &a, &ka) || ref_num_of(E, s1, "end", &b, &ka) ||
        ref_arg_req_int(E, 2, "steps", &n) || (is_log && ref_arg_num(E, 3, "base", 10, &base)) ||
        ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    if (n < 0)
        return ref_fail(E, "steps must not be negative");
    kind k = dt >= 0 ? kind_of((gr_dtype)dt) : K_F;
    tens *o = ref_new_result(E, k, 1, &n);
    if (!o)
        return -1;
    for (int64_t j = 0; j < n; j++) {
        double x = space_at(a, b, n, j, k == K_F);
        if (is_log)
            x = k == K_F ? (double)powf((float)base, (float)x) : pow(base, x);
        if (k == K_F)
            o->f[j] = (float)x;
        else
            o->i[j] = (int64_t)x;
        for (int w = 0; o->eb[0] && k == K_F && w < 2; w++) /* a constant, rounded once to DL16 */
            o->eb[w][j] = (float)ref_eb_const(x);
    }
    return 0;
}

static const ref_op ops[] = {
    {"linspace", op_space, 0},
    {"logspace", op_space, 1},
};
const ref_ops ref_space_ops = REF_OPS(ops);
