/* ref_mode.c: reference op: mode along a dim (the most frequent value, the smallest of equally frequent ones,
 * and the position of its last occurrence, as PyTorch's CPU kernel on short rows). */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    float v;
    int64_t at;
} vpos;

/* Equal, NaNs equal to each other. */
static int same(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

/* By value (NaN last), then by position: the runs of equal values in their order. */
static int by_value(const void *a, const void *b)
{
    const vpos *x = a, *y = b;
    if (!same(x->v, y->v))
        return isnan(x->v) ? 1 : isnan(y->v) || x->v < y->v ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* One row's mode (n elements at stride st from base) and its bounds: the
 * value's own bound and an exact index, unless two distinct values could
 * be equal within their bounds (the counts could change: both unbounded)
 * or the mode occurs more than once (which of its positions PyTorch's
 * unstable sort reports is its own: the index unbounded). */
static void mode_row(const tens *x, int64_t base, int64_t n, int64_t st, vpos *buf, tens *o, tens *ix, int64_t k)
{
    for (int64_t j = 0; j < n; j++)
        buf[j] = (vpos){x->f[base + j * st], j};
    qsort(buf, (size_t)n, sizeof *buf, by_value);
    int64_t best = 0, bestn = 0;
    for (int64_t j = 0, run = 0; j < n; j++) {
        run++;
        if (j == n - 1 || !same(buf[j].v, buf[j + 1].v)) {
            if (run > bestn) {
                best = j;
                bestn = run;
            }
            run = 0;
        }
    }
    o->f[k] = buf[best].v;
    ix->i[k] = buf[best].at;
    for (int w = 0; o->eb[0] && w < 2; w++) {
        int close = 0;
        for (int64_t j = 0; j + 1 < n && !close; j++) {
            double e = ldb(x, w, base + buf[j].at * st) + ldb(x, w, base + buf[j + 1].at * st);
            close = !same(buf[j].v, buf[j + 1].v) && ref_eb_flips((double)buf[j + 1].v - buf[j].v, e, w);
        }
        o->eb[w][k] = close ? INFINITY : (float)ldb(x, w, base + buf[best].at * st);
        ix->eb[w][k] = close || bestn > 1 ? INFINITY : 0;
    }
}

/* mode(self, dim=-1, keepdim=False) -> (values, indices) */
static int op_mode(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t d64, shape[MAXR], st[MAXR], rest[MAXR], rst[MAXR];
    int d, keep;
    if (!x || ref_arg_int(E, 1, "dim", -1, &d64) || ref_arg_bool(E, 2, "keepdim", 0, &keep) ||
        ref_norm_dim(E, d64, x->rank, &d))
        return -1;
    if (kind_of(x->dtype) != K_F)
        return ref_fail(E, "runs float tensors only");
    int64_t n = x->rank ? x->shape[d] : 1;
    int nr = x->rank ? ref_drop_dim(x, d, st, rest, rst) : 0;
    for (int i = 0, j = 0; i < x->rank; i++)
        if (i != d || keep)
            shape[j++] = i == d ? 1 : x->shape[i];
    int orank = x->rank && !keep ? x->rank - 1 : x->rank;
    tens *o = ref_new_result(E, K_F, orank, shape), *ix = o ? ref_new_result(E, K_I, orank, shape) : NULL;
    vpos *buf = ix ? malloc(sizeof *buf * (size_t)(n ? n : 1)) : NULL;
    if (!buf)
        return ix ? ref_fail(E, "out of memory") : -1;
    o = &E->res[E->nres - 2]; /* the array may have moved */
    int64_t step = x->rank ? st[d] : 1;
    for (int64_t k = 0; k < o->n && n > 0; k++) {
        int64_t base = 0, r = k;
        for (int i = nr - 1; i >= 0; i--) {
            base += r % rest[i] * rst[i];
            r /= rest[i];
        }
        mode_row(x, base, n, step, buf, o, ix, k);
    }
    free(buf);
    return 0;
}

static const ref_op ops[] = {
    {"mode", op_mode, 0}, /* (values, indices) */
};
const ref_ops ref_mode_ops = REF_OPS(ops);
