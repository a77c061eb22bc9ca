/* ref_histogram.c: reference op: histogram (bins_tensor: given edges; bin_ct: bins+1 edges by PyTorch's
 * linspace over range or the data's min and max), weights and density, the last bin closed, as histogramdd. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

/* PyTorch's linspace in float: the first half up from a, the second down from b. */
static float edge_at(float a, float b, int64_t n, int64_t j)
{
    float st = (b - a) / (float)(n - 1);
    return j < n / 2 ? a + st * (float)j : b - st * (float)(n - j - 1);
}

/* The bin of v among ne edges (upper_bound - 1, the last edge inside the last bin), or -1 outside. */
static int64_t bin_of(const float *e, int64_t ne, float v)
{
    if (!(v >= e[0] && v <= e[ne - 1]))
        return -1;
    int64_t lo = 0, hi = ne;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (e[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1 == ne - 1 ? ne - 2 : lo - 1;
}

/* The edges of bin_ct(self, bins, range=None): range, or the data's extremes,
 * widened by 0.5 each way when equal; their bound the extremes' (track w). */
static int ct_edges(ex *E, const tens *x, tens *ed, int64_t ne)
{
    double rg[2] = {INFINITY, -INFINITY}, eb[2] = {0, 0};
    const gr_arg *ra = ref_arg(E, 2, "range");
    if (ref_present(ra)) {
        kind k;
        if (ra->kind != GR_ARG_LIST || ra->nitems != 2 || ref_num_of(E, &ra->items[0], "range", &rg[0], &k) ||
            ref_num_of(E, &ra->items[1], "range", &rg[1], &k))
            return ref_present(ra) && ra->kind != GR_ARG_LIST ? ref_fail(E, "range must be two numbers") : -1;
    }
    for (int64_t k = 0; !ref_present(ra) && k < x->n; k++) {
        rg[0] = fmin(rg[0], ldd(x, k));
        rg[1] = fmax(rg[1], ldd(x, k));
        for (int w = 0; w < 2; w++)
            eb[w] = fmax(eb[w], ldb(x, w, k)); /* a min or max is 1-Lipschitz */
    }
    if (x->n == 0 && !ref_present(ra))
        rg[0] = rg[1] = 0;
    if (rg[0] > rg[1] || isnan(rg[0]) || isnan(rg[1]))
        return ref_fail(E, "the range's start exceeds its end, or is not finite");
    if (rg[0] == rg[1]) {
        rg[0] -= 0.5;
        rg[1] += 0.5;
    }
    for (int64_t j = 0; j < ne; j++) {
        ed->f[j] = edge_at((float)rg[0], (float)rg[1], ne, j);
        for (int w = 0; ed->eb[0] && w < 2; w++)
            ed->eb[w][j] = (float)ref_eb_store(ed->f[j], eb[w], w);
    }
    return 0;
}

/* Counts (or weight sums) per bin; their bound is the weights' sum's, or
 * infinite where some element could cross an edge of its bin or fall
 * outside; a density (count / total / width) is not validated. */
static void hist_fill(const tens *x, const tens *wt, const tens *ed, tens *h, int density)
{
    int64_t ne = ed->n, nb = ne - 1;
    double total = 0;
    for (int64_t k = 0; k < x->n; k++) {
        int64_t b = bin_of(ed->f, ne, x->f[k]);
        double wv = wt ? ldd(wt, k) : 1;
        if (b >= 0) {
            h->f[b] += (float)wv;
            total += wv;
        }
        for (int w = 0; h->eb[0] && w < 2; w++) {
            double ex = ldb(x, w, k);
            for (int64_t j = 0; j < ne; j++)
                if (ref_eb_flips((double)x->f[k] - ed->f[j], ex + ldb(ed, w, j), w)) {
                    int64_t lo = j > 0 ? j - 1 : 0, hi = j < nb ? j : nb - 1;
                    h->eb[w][lo] = h->eb[w][hi] = INFINITY;
                }
            if (b >= 0 && wt)
                h->eb[w][b] += (float)(ldb(wt, w, k) + fabs(wv) * EB_ACC * (double)x->n);
        }
    }
    for (int64_t j = 0; density && j < nb; j++) {
        h->f[j] = (float)(h->f[j] / total / ((double)ed->f[j + 1] - ed->f[j]));
        for (int w = 0; h->eb[0] && w < 2; w++)
            h->eb[w][j] = INFINITY;
    }
}

/* histogram.bins_tensor(self, bins, *, weight=None, density=False),
 * histogram.bin_ct(self, bins=100, *, range=None, weight=None, density=False) -> (hist, bin_edges) */
static int op_histogram(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *bt = NULL, *wt = NULL;
    int ct = !strcmp(ref_overload(E->node), "bin_ct");
    int64_t nbins = 100;
    int density;
    const gr_arg *wa = ref_arg(E, ct ? 3 : 2, "weight");
    if (!x || (ct && ref_arg_int(E, 1, "bins", 100, &nbins)) || (!ct && !(bt = ref_arg_tensor(E, 1, "bins"))) ||
        (ref_present(wa) && !(wt = ref_tensor_of(E, wa, "weight"))) ||
        ref_arg_bool(E, ct ? 4 : 3, "density", 0, &density))
        return -1;
    if (kind_of(x->dtype) != K_F || (wt && wt->n != x->n) || (bt && (bt->rank != 1 || bt->n < 2)))
        return ref_fail(E, "a float input, weights of its size, and 2 or more edges");
    if (nbins < 1)
        return ref_fail(E, "bins must be positive");
    int64_t ne = ct ? nbins + 1 : bt->n, nb = ne - 1;
    tens *h = ref_new_result(E, K_F, 1, &nb), *ed = h ? ref_new_result(E, K_F, 1, &ne) : NULL;
    if (!ed)
        return -1;
    h = &E->res[E->nres - 2]; /* the array may have moved */
    if (ct && ct_edges(E, x, ed, ne))
        return -1;
    for (int64_t j = 0; !ct && j < ne; j++) {
        ed->f[j] = (float)ldd(bt, j);
        for (int w = 0; ed->eb[0] && w < 2; w++)
            ed->eb[w][j] = (float)ldb(bt, w, j);
    }
    hist_fill(x, wt, ed, h, density);
    return 0;
}

static const ref_op ops[] = {
    {"histogram", op_histogram, 0}, /* (hist, bin_edges) */
};
const ref_ops ref_histogram_ops = REF_OPS(ops);
