/* ref_space.c: reference ops: linspace and logspace with PyTorch's halves (the first half counted up from
 * start, the second down from end) and its float step, and tril_indices / triu_indices: the values the
 * compiler bakes (cc_space_at, cc_tri_indices), so both are PyTorch's own. */
#include "ref_internal.h"

#include "cc.h"

#include <math.h>
#include <stdlib.h>

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
        double x = cc_space_at(a, b, is_log, base, n, j, k == K_F);
        if (k == K_F)
            o->f[j] = (float)x;
        else
            o->i[j] = (int64_t)x;
        for (int w = 0; o->eb[0] && k == K_F && w < 2; w++) /* a constant, rounded once to DL16 */
            o->eb[w][j] = (float)ref_eb_const(x);
    }
    return 0;
}

/* tril_indices(row, col, offset=0, dtype=long) (code 0), triu_indices (code 1): a (2, N) tensor, the rows of
 * the triangle's elements then their columns, row-major */
static int op_tri_indices(ex *E, int upper)
{
    int64_t row, col, off;
    int dt;
    if (ref_arg_req_int(E, 0, "row", &row) || ref_arg_req_int(E, 1, "col", &col) ||
        ref_arg_int(E, 2, "offset", 0, &off) || ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    if (row < 0 || col < 0)
        return ref_fail(E, "row and col must not be negative");
    int64_t shape[2] = {2, cc_tri_indices(row, col, off, upper, NULL, NULL)};
    kind k = dt >= 0 ? kind_of((gr_dtype)dt) : K_I;
    if (k != K_I)
        return ref_fail(E, "the indices' dtype must be an integer");
    tens *o = ref_new_result(E, k, 2, shape);
    if (!o)
        return -1;
    cc_tri_indices(row, col, off, upper, o->i, o->i + shape[1]);
    return 0;
}

static const ref_op ops[] = {
    {"linspace", op_space, 0},
    {"logspace", op_space, 1},
    {"tril_indices", op_tri_indices, 0},
    {"triu_indices", op_tri_indices, 1},
};
const ref_ops ref_space_ops = REF_OPS(ops);
