/* ref_segment.c: reference op: segment_reduce (sum, mean, max, min, prod over segments given by lengths or
 * offsets along an axis, initial or the reduction's identity for an empty segment; PyTorch's CPU rules). */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

enum { S_SUM, S_MEAN, S_MAX, S_MIN, S_PROD };

/* The reduction's name. */
static int seg_kind(ex *E, int *r)
{
    static const char *names[] = {"sum", "mean", "max", "min", "prod"};
    const gr_arg *a = ref_arg(E, 1, "reduce");
    for (int i = 0; a && a->kind == GR_ARG_STR && i < 5; i++)
        if (!strcmp(a->s, names[i])) {
            *r = i;
            return 0;
        }
    return ref_fail(E, "reduce must be sum, mean, max, min or prod");
}

/* One segment [s, s + len) of column c (data seen as (pre, n, post)): the
 * value, and per track the bound: adds and multiplies as stored
 * operations, a max or min as a selection (1-Lipschitz: the largest
 * bound among its operands), a mean one division more. */
static double seg_one(const tens *x, int r, double init, int has_init, int64_t base, int64_t post, int64_t s,
                      int64_t len, double eb[2])
{
    double v = r == S_MAX ? (has_init ? init : -INFINITY) : r == S_MIN ? (has_init ? init : INFINITY)
                                                                      : r == S_PROD ? (has_init ? init : 1)
                                                                                    : (has_init ? init : 0);
    bv b[2] = {{v, isinf(v) ? 0 : ref_eb_const(v), 0}, {v, isinf(v) ? 0 : ref_eb_const(v), 1}};
    for (int64_t j = s; j < s + len; j++) {
        int64_t k = base + j * post;
        double d = ldd(x, k);
        if (r == S_MAX)
            v = isnan(d) ? d : isnan(v) ? v : fmax(v, d);
        else if (r == S_MIN)
            v = isnan(d) ? d : isnan(v) ? v : fmin(v, d);
        else
            v = r == S_PROD ? v * d : v + d;
        for (int w = 0; eb && w < 2; w++) {
            bv t = {d, ldb(x, w, k), w};
            b[w] = r == S_PROD ? ref_bv_mul(b[w], t) : r <= S_MEAN ? ref_bv_add(b[w], t)
                                                                   : (bv){v, fmax(b[w].e, t.e), w};
        }
    }
    if (r == S_MEAN)
        v = len == 0 ? (has_init ? v : NAN) : isnan(v) ? v : v / (double)len;
    for (int w = 0; eb && w < 2; w++)
        eb[w] = r == S_MEAN && len > 0 ? ref_bv_div(b[w], ref_bv_k((double)len)).e : isnan(v) ? INFINITY : b[w].e;
    return v;
}

/* segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None) */
static int op_segment_reduce(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "data");
    const gr_arg *la = ref_arg(E, -1, "lengths"), *oa = ref_arg(E, -1, "offsets"), *ia = ref_arg(E, -1, "initial");
    int r = 0, ax;
    int64_t axis;
    double init = 0;
    kind ki;
    if (!x || seg_kind(E, &r) || ref_arg_int(E, -1, "axis", 0, &axis) || ref_norm_dim(E, axis, x->rank, &ax) ||
        (ref_present(ia) && ref_num_of(E, ia, "initial", &init, &ki)))
        return -1;
    const tens *sg = ref_present(la) ? ref_tensor_of(E, la, "lengths") : ref_present(oa) ? ref_tensor_of(E, oa, "offsets") : NULL;
    if (!sg)
        return ref_present(la) || ref_present(oa) ? -1 : ref_fail(E, "needs lengths or offsets");
    int offs = !ref_present(la);
    if (sg->rank != 1 || kind_of(sg->dtype) != K_I || x->rank < 1 || (offs && sg->n < 1))
        return ref_fail(E, "runs 1-D integer lengths or offsets only");
    int64_t nseg = offs ? sg->n - 1 : sg->n, shape[MAXR], n = x->shape[ax];
    int64_t post = ref_numel(x->rank - ax - 1, x->shape + ax + 1);
    memcpy(shape, x->shape, sizeof shape);
    shape[ax] = nseg;
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    for (int64_t k = 0, s = offs ? ldi(sg, 0) : 0; o && k < o->n; k++) {
        int64_t p = k / (nseg * post), g = k / post % nseg, c = k % post;
        int64_t st = offs ? ldi(sg, g) : s, len = offs ? ldi(sg, g + 1) - st : ldi(sg, g);
        if (!offs && c == post - 1)
            s = g == nseg - 1 ? 0 : s + len;
        if (len < 0 || st < 0 || st + len > n)
            return ref_fail(E, "segment %lld is outside the data's %lld elements", (long long)g, (long long)n);
        double eb[2];
        o->f[k] = (float)seg_one(x, r, init, ref_present(ia), p * n * post + c, post, st, len, o->eb[0] ? eb : NULL);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)eb[w];
    }
    return o ? 0 : -1;
}

static const ref_op ops[] = {
    {"segment_reduce", op_segment_reduce, 0},
};
const ref_ops ref_segment_ops = REF_OPS(ops);
