/* ref_trilinear.c: reference op: _trilinear (nn.functional.bilinear's product): each input unsqueezed at its
 * expand dims to one rank, the three multiplied (broadcast) and summed over sumdim, in double. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* t unsqueezed at the sorted dims ex (n of them): its extents and strides in rank r, 0 where broadcast. */
static int expand_view(const tens *t, const int64_t *ex, int n, int r, int64_t *shape, int64_t *st)
{
    int64_t cst[MAXR];
    ref_contiguous_strides(t->rank, t->shape, cst);
    for (int d = 0, j = 0, e = 0; d < r; d++) {
        if (e < n && ex[e] == d) {
            shape[d] = 1, st[d] = 0, e++;
            continue;
        }
        if (j >= t->rank)
            return -1;
        shape[d] = t->shape[j], st[d] = t->shape[j] == 1 ? 0 : cst[j];
        j++;
    }
    return t->rank + n == r ? 0 : -1;
}

/* _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1) */
static int op_trilinear(ex *E, int unused)
{
    (void)unused;
    const tens *in[3];
    int64_t ex[3][MAXR], sd[MAXR], sh[3][MAXR], st[3][MAXR], full[MAXR], oshape[MAXR];
    int ne[3], ns, r = 0;
    for (int i = 0; i < 3; i++)
        if (!(in[i] = ref_arg_tensor(E, i, i == 0 ? "i1" : i == 1 ? "i2" : "i3")) ||
            ref_arg_ints(E, 3 + i, i == 0 ? "expand1" : i == 1 ? "expand2" : "expand3", ex[i], &ne[i], MAXR))
            return -1;
    if (ref_arg_ints(E, 6, "sumdim", sd, &ns, MAXR))
        return -1;
    r = in[0]->rank + (ne[0] > 0 ? ne[0] : 0);
    for (int i = 0; i < 3; i++)
        if (expand_view(in[i], ex[i], ne[i] > 0 ? ne[i] : 0, r, sh[i], st[i]))
            return ref_fail(E, "the inputs and their expand dims do not make one rank");
    int summed[MAXR] = {0}, orank = 0;
    for (int k = 0; k < ns; k++)
        if (sd[k] < 0 || sd[k] >= r)
            return ref_fail(E, "sumdim %lld out of range", (long long)sd[k]);
        else
            summed[sd[k]] = 1;
    for (int d = 0; d < r; d++) {
        full[d] = sh[0][d] > 1 ? sh[0][d] : sh[1][d] > 1 ? sh[1][d] : sh[2][d];
        for (int i = 0; i < 3; i++)
            if (sh[i][d] != 1 && sh[i][d] != full[d])
                return ref_fail(E, "the inputs do not broadcast");
        if (!summed[d])
            oshape[orank++] = full[d];
    }
    tens *o = ref_new_result(E, K_F, orank, oshape);
    if (!o)
        return -1;
    int64_t total = ref_numel(r, full);
    double *acc = o->n ? calloc((size_t)o->n, sizeof(double)) : NULL;
    eb_acc *ea = o->n && o->eb[0] ? calloc((size_t)o->n * 2, sizeof(eb_acc)) : NULL;
    if ((o->n && !acc) || (o->n && o->eb[0] && !ea)) {
        free(acc);
        return ref_fail(E, "out of memory");
    }
    for (int64_t k = 0; k < o->n && ea; k++)
        ea[2 * k] = (eb_acc){.w = 0}, ea[2 * k + 1] = (eb_acc){.w = 1};
    for (int64_t f = 0; f < total; f++) {
        int64_t rem = f, off[3] = {0, 0, 0}, oi = 0, mul = 1;
        for (int d = r - 1; d >= 0; d--) {
            int64_t ix = rem % full[d];
            rem /= full[d];
            for (int i = 0; i < 3; i++)
                off[i] += ix * st[i][d];
            if (!summed[d])
                oi += ix * mul, mul *= full[d];
        }
        double p = ldd(in[0], off[0]) * ldd(in[1], off[1]) * ldd(in[2], off[2]);
        acc[oi] += p;
        for (int w = 0; ea && w < 2; w++) {
            bv t = ref_bv_mul(ref_bv_mul((bv){ldd(in[0], off[0]), ldb(in[0], w, off[0]), w},
                                         (bv){ldd(in[1], off[1]), ldb(in[1], w, off[1]), w}),
                              (bv){ldd(in[2], off[2]), ldb(in[2], w, off[2]), w});
            ref_acc_add(&ea[2 * oi + w], t.v, t.e);
        }
    }
    for (int64_t k = 0; k < o->n; k++) {
        o->f[k] = (float)acc[k];
        for (int w = 0; ea && w < 2; w++)
            o->eb[w][k] = (float)ref_acc_sum(&ea[2 * k + w]).e;
    }
    free(acc);
    free(ea);
    return 0;
}

static const ref_op ops[] = {
    {"_trilinear", op_trilinear, 0},
};
const ref_ops ref_trilinear_ops = REF_OPS(ops);
