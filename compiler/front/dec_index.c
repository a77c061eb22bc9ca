/* dec_index.c: decompositions of the ops that pick elements by position or
 * by rank: argmax/argmin, max/min with indices, sort, topk, gather,
 * scatter_add, index_fill, nll_loss, cumsum, roll, rot90, diag, trace and
 * the scatters of slices.  The device has no gather by a computed index
 * beyond row lookups and no sort network, so each becomes a comparison
 * against a position (arange) and a sum or a min over it: one-hot
 * selection, exact in DL16 while positions stay within 1024 (intexact.c
 * refuses beyond).  Their cost is the size of the compared axis per
 * element, which is what the docs say (docs/compiler.md, Decomposition). */
#include "decompose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* arange(n) as int64, shaped [1, .., n, .., 1]: rank dims, n at dim d. */
static int iota(dctx *c, int64_t n, int rank, int d)
{
    gr_ttype t = {.dtype = GR_I64, .rank = 1, .shape = {n}};
    int a = DC_EMIT(c, "aten.arange.default", t, da_int(n), da_kw("dtype", da_dtype(GR_I64)));
    if (rank <= 1)
        return a;
    int64_t shape[GR_MAX_RANK];
    for (int i = 0; i < rank; i++)
        shape[i] = i == d ? n : 1;
    return dc_reshape(c, a, rank, shape);
}

/* x with dim d moved last (back: 0), or last moved back to d (back: 1). */
static int move_last(dctx *c, int x, int d, int back)
{
    int r = dc_T(c, x).rank;
    if (d == r - 1)
        return x;
    int64_t perm[GR_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++) {
        if (!back)
            perm[i] = i == r - 1 ? d : k + (k >= d);
        else
            perm[i] = i < d ? i : i == d ? r - 1 : i - 1;
        if (!back && i < r - 1)
            k++;
    }
    return dc_permute(c, x, perm);
}

static int lnot(dctx *c, int a)
{
    gr_ttype t = dc_T(c, a);
    t.dtype = GR_BOOL;
    return DC_EMIT(c, "aten.logical_not.default", t, da_val(a));
}

/* a < b as sort orders floats: NaN after every number (desc: a > b, NaN
 * before every number). */
static int before(dctx *c, int a, int b, int desc)
{
    int lt = dc_cmpv(c, desc ? "aten.gt.Tensor" : "aten.lt.Tensor", a, b);
    int anan = dc_cmpv(c, "aten.ne.Tensor", a, a), bnan = dc_cmpv(c, "aten.ne.Tensor", b, b);
    int nan_first = desc ? anan : bnan, other = desc ? bnan : anan;
    int edge = dc_bin(c, "aten.logical_and.default", nan_first, lnot(c, other));
    return dc_bin(c, "aten.logical_or.default", lt, edge);
}

/* The position of x's extreme along d (first one; a NaN counts as the
 * extreme, as PyTorch's argmax), as int64 with d kept as 1 or dropped. */
static int arg_extreme(dctx *c, int x, int d, int keep, int is_max)
{
    gr_ttype t = dc_T(c, x);
    int64_t dd = d, n = t.rank ? t.shape[d] : 1, none[1] = {0};
    if (t.rank == 0) /* a 0-d tensor's only position */
        return dc_full(c, 0, none, 0, GR_I64);
    int m = dc_red(c, is_max ? "aten.amax.default" : "aten.amin.default", x, 1, &dd, 1);
    int hit = dc_bin(c, "aten.logical_or.default", dc_cmpv(c, "aten.eq.Tensor", x, m),
                     dc_cmpv(c, "aten.ne.Tensor", x, x));
    int pos = dc_where_s(c, hit, iota(c, n, t.rank, d), (double)n, 0);
    return dc_red(c, "aten.amin.default", pos, 1, &dd, keep);
}

/* The source's dim argument, or the whole tensor flattened (dim None). */
static int dim_or_flat(dctx *c, const gr_node *n, int *x, int pos)
{
    const gr_arg *a = gr_node_arg(n, pos, "dim");
    if (!a || a->kind == GR_ARG_NONE) {
        gr_ttype t = dc_T(c, *x);
        int64_t all = dc_numel(&t);
        *x = dc_reshape(c, *x, 1, &all);
        return -1;
    }
    return dc_normdim(c, (int64_t)dc_num(c, n, pos, "dim", 0), dc_T(c, *x).rank);
}

int dc_r_argmax(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), keep = (int)dc_num(c, n, 2, "keepdim", 0);
    gr_ttype t0 = dc_T(c, x);
    int d = dim_or_flat(c, n, &x, 1);
    out[0] = arg_extreme(c, x, d < 0 ? 0 : d, d < 0 ? 0 : keep, !strcmp(n->base, "argmax"));
    if (d < 0 && keep) { /* keepdim without dim: every dim kept as 1 */
        int64_t ones[GR_MAX_RANK];
        for (int i = 0; i < t0.rank; i++)
            ones[i] = 1;
        out[0] = dc_reshape(c, out[0], t0.rank, ones);
    }
    return 1;
}

/* max.dim, min.dim: (values, indices); max(x): the value over all;
 * max(x, other): maximum. */
int dc_r_max_dim(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), is_max = !strcmp(n->base, "max");
    const gr_arg *a = gr_node_arg(n, 1, "dim");
    if (!a || a->kind == GR_ARG_NONE) {
        out[0] = dc_red(c, is_max ? "aten.amax.default" : "aten.amin.default", x, 0, NULL, 0);
        return 1;
    }
    if (a->kind == GR_ARG_VALUE) {
        out[0] = dc_bin(c, is_max ? "aten.maximum.default" : "aten.minimum.default", x, dc_val(c, n, 1, "other"));
        return 1;
    }
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), dc_T(c, x).rank);
    int keep = (int)dc_num(c, n, 2, "keepdim", 0);
    int64_t dd = d;
    out[0] = dc_red(c, is_max ? "aten.amax.default" : "aten.amin.default", x, 1, &dd, keep);
    out[1] = arg_extreme(c, x, d, keep, is_max);
    return 2;
}

int dc_r_aminmax(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), keep = (int)dc_num(c, n, 2, "keepdim", 0);
    int d = dim_or_flat(c, n, &x, 1);
    int64_t dd = d < 0 ? 0 : d;
    out[0] = dc_red(c, "aten.amin.default", x, 1, &dd, d < 0 ? 0 : keep);
    out[1] = dc_red(c, "aten.amax.default", x, 1, &dd, d < 0 ? 0 : keep);
    if (d >= 0 && keep && !dc_T(c, x).rank) { /* PyTorch gives a 0-d tensor's min and max, kept, as [1] */
        int64_t one = 1;
        out[0] = dc_reshape(c, out[0], 1, &one);
        out[1] = dc_reshape(c, out[1], 1, &one);
    }
    return 2;
}

int dc_r_count_nonzero(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int64_t dims[GR_MAX_RANK];
    int nd = dc_ints(c, n, 1, "dim", dims);
    int nz = dc_cmps(c, "aten.ne.Scalar", x, 0);
    out[0] = dc_red(c, "aten.sum.dim_IntList", dc_cast(c, nz, GR_I64), nd < 0 ? 0 : nd, dims, 0);
    return 1;
}

/* sort along the last dim by rank counting: rank_i = #{j: x_j before x_i,
 * or equal with j < i} (stable); out[r] = sum_i where(rank_i == r, x_i, 0),
 * its index alike (rows over 32: amin_i where(rank_i == r, i, n)); an
 * integer x's values amax_i where(rank_i == r, x_i, min x).  Only
 * the k ranks from r0 are produced (topk; median and kthvalue: one). */
static void sort_last(dctx *c, int x, int64_t r0, int64_t k, int desc, int *vals, int *idx)
{
    gr_ttype t = dc_T(c, x);
    int r = t.rank, last = r - 1;
    int64_t len = t.shape[last];
    int xi = dc_unsqueeze(c, x, r), xj = dc_unsqueeze(c, x, r - 1); /* (.., n, 1), (.., 1, n) */
    int ii = iota(c, len, r + 1, last), jj = iota(c, len, r + 1, r);
    int tie = dc_bin(c, "aten.logical_and.default", lnot(c, before(c, xi, xj, desc)),
                     dc_cmpv(c, "aten.lt.Tensor", jj, ii));
    int ahead = dc_bin(c, "aten.logical_or.default", before(c, xj, xi, desc), tie);
    int64_t rd = r;
    int rank = dc_red(c, "aten.sum.dim_IntList", dc_cast(c, ahead, GR_I64), 1, &rd, 0); /* (.., n) */
    if (r0)
        rank = dc_bins(c, "aten.sub.Tensor", rank, (double)r0);
    int rk = dc_unsqueeze(c, rank, r - 1);                                               /* (.., 1, n) */
    int hit = dc_cmpv(c, "aten.eq.Tensor", rk, iota(c, k, r + 1, last));                /* (.., k, n) */
    if (dc_is_float(t.dtype))
        *vals = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, xj, 0, 0), 1, &rd, 0);
    else /* the one hit's value is the greatest against the row's least: bounded by x's own
          * values, where intexact.c bounds a sum by len times them (Reformer's bucket keys) */
        *vals = dc_red(c, "aten.amax.default",
                       dc_where(c, hit, xj, dc_red(c, "aten.amin.default", xj, 1, &rd, 1)), 1, &rd, 0);
    /* one i hits each rank: a sum of where(hit, i, 0) joins the values'
     * reduction, but intexact.c bounds it by len (len - 1); past DL16's
     * exact integers the amin of where(hit, i, len), bounded by len */
    int pos = iota(c, len, r + 1, r);
    if ((len - 1) * len <= IR_INT_EXACT)
        *idx = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, pos, 0, 0), 1, &rd, 0);
    else
        *idx = dc_red(c, "aten.amin.default", dc_where_s(c, hit, pos, (double)len, 0), 1, &rd, 0);
}

static void sort_dim(dctx *c, int x, int d, int64_t k, int desc, int *vals, int *idx)
{
    if (dc_T(c, x).rank == 0) {
        *vals = x;
        int64_t none[1] = {0};
        *idx = dc_full(c, 0, none, 0, GR_I64);
        return;
    }
    int y = move_last(c, x, d, 0);
    sort_last(c, y, 0, k, desc, vals, idx);
    *vals = move_last(c, *vals, d, 1);
    *idx = move_last(c, *idx, d, 1);
}

int dc_r_sort(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int r = dc_T(c, x).rank;
    /* sort(self, dim=-1, descending=False) and sort.stable(self, *, stable, dim, descending) */
    const gr_arg *s = gr_node_arg(n, 1, "stable");
    int shift = s && s->kind == GR_ARG_BOOL && !s->key ? 1 : 0;
    int d = r ? dc_normdim(c, (int64_t)dc_num(c, n, 1 + shift, "dim", -1), r) : 0;
    int desc = (int)dc_num(c, n, 2 + shift, "descending", 0);
    sort_dim(c, x, d, r ? dc_T(c, x).shape[d] : 1, desc, &out[0], &out[1]);
    if (!strcmp(n->base, "argsort")) {
        out[0] = out[1];
        return 1;
    }
    return 2;
}

int dc_r_topk(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int r = dc_T(c, x).rank;
    int64_t k = (int64_t)dc_num(c, n, 1, "k", 0);
    int d = r ? dc_normdim(c, (int64_t)dc_num(c, n, 2, "dim", -1), r) : 0;
    int largest = (int)dc_num(c, n, 3, "largest", 1);
    if (k < 0 || k > (r ? dc_T(c, x).shape[d] : 1))
        dc_fail(c, "k = %lld is out of range", (long long)k);
    sort_dim(c, x, d, k, largest, &out[0], &out[1]);
    return 2;
}

/* median(self, dim, keepdim), kthvalue(self, k, dim, keepdim): the value
 * of rank (n - 1) / 2 (the lower middle) or k - 1 in sort's order (NaN
 * last) and its index; median of a row with a NaN: NaN and the first
 * NaN's index, as PyTorch.  median(self): of all elements, the value. */
int dc_r_median(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), kth = !strcmp(n->base, "kthvalue");
    if (!dc_is_float(dc_T(c, x).dtype))
        return 0;
    int d = kth ? dc_normdim(c, (int64_t)dc_num(c, n, 2, "dim", -1), dc_T(c, x).rank) : dim_or_flat(c, n, &x, 1);
    int keep = (int)dc_num(c, n, kth ? 3 : 2, "keepdim", 0);
    gr_ttype t = dc_T(c, x);
    int r = t.rank, dd = d < 0 ? 0 : d;
    int64_t len = r ? t.shape[dd] : 1, k = kth ? (int64_t)dc_num(c, n, 1, "k", 1) - 1 : (len - 1) / 2;
    if (k < 0 || k >= len)
        dc_fail(c, "k = %lld is out of range", (long long)k + kth);
    if (d < 0)
        keep = 0;
    int vals, idx;
    if (r == 0) {
        vals = x;
        idx = dc_full(c, 0, (int64_t[]){0}, 0, GR_I64);
    } else {
        int y = move_last(c, x, dd, 0);
        sort_last(c, y, k, 1, 0, &vals, &idx); /* (.., 1): rank k */
        if (!kth) {
            int64_t ld = r - 1;
            int nan = dc_cmpv(c, "aten.ne.Tensor", y, y);
            int first = dc_red(c, "aten.amin.default", dc_where_s(c, nan, iota(c, len, r, r - 1), (double)len, 0), 1,
                               &ld, 1);
            int has = dc_cmps(c, "aten.lt.Scalar", first, (double)len);
            vals = dc_where_s(c, has, vals, NAN, 1);
            idx = dc_where(c, has, first, idx);
        }
        vals = dc_select(c, vals, r - 1, 0);
        idx = dc_select(c, idx, r - 1, 0);
        if (keep) {
            vals = dc_unsqueeze(c, vals, dd);
            idx = dc_unsqueeze(c, idx, dd);
        }
    }
    out[0] = vals;
    out[1] = idx;
    return d < 0 ? 1 : 2;
}

/* any(self, dim, keepdim), all: amax (any) or amin (all) of self != 0 as
 * 0/1 and then > 0: a selection, exact at any width (a NaN counts as
 * true); over no elements any is False and all True. */
int dc_r_any(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), is_all = !strcmp(n->base, "all");
    gr_ttype tx = dc_T(c, x), to = c->g->values[n->out].type;
    int64_t dims[GR_MAX_RANK];
    int nd = dc_ints(c, n, 1, "dim", dims); /* an int, a list (any.dims) or none: all */
    if (dc_numel(&tx) == 0) {
        out[0] = dc_full(c, to.rank, to.shape, is_all, to.dtype);
        return 1;
    }
    int nz = dc_cast(c, dc_cmps(c, "aten.ne.Scalar", x, 0), GR_F32);
    int m = dc_red(c, is_all ? "aten.amin.default" : "aten.amax.default", nz, nd < 0 ? 0 : nd, dims,
                   nd > 0 && (int)dc_num(c, n, 2, "keepdim", 0));
    out[0] = dc_cmps(c, "aten.gt.Scalar", m, 0);
    if (to.dtype != GR_BOOL)
        out[0] = dc_cast(c, out[0], to.dtype);
    return 1;
}

/* bucketize(self, boundaries, out_int32, right), searchsorted(sorted,
 * self, out_int32, right, side): #{j: !(b_j >= x)} (right: !(b_j > x)),
 * which counts a NaN past every boundary as PyTorch's binary search does;
 * a sorted sequence of rank > 1 per row.  A count does not depend on the
 * order, so a sorter (a permutation) changes nothing. */
int dc_r_bucketize(dctx *c, const gr_node *n, int *out)
{
    int bz = !strcmp(n->base, "bucketize");
    const gr_arg *xa = gr_node_arg(n, bz ? 0 : 1, "self");
    if (!xa || xa->kind != GR_ARG_VALUE) /* searchsorted.Scalar */
        return 0;
    int x = dc_val(c, n, bz ? 0 : 1, "self"), b = dc_val(c, n, bz ? 1 : 0, bz ? "boundaries" : "sorted_sequence");
    const gr_arg *side = gr_node_arg(n, 4, "side");
    gr_ttype tx = dc_T(c, x), tb = dc_T(c, b), to = c->g->values[n->out].type;
    if (tb.rank < 1 || (tb.rank > 1 && tb.rank != tx.rank))
        return 0;
    if (!tb.shape[tb.rank - 1] || !dc_numel(&tx)) { /* no boundaries or no values */
        out[0] = dc_full(c, to.rank, to.shape, 0, to.dtype);
        return 1;
    }
    int right = (int)dc_num(c, n, 3, "right", 0) || (side && side->kind == GR_ARG_STR && !strcmp(side->s, "right"));
    int xu = dc_unsqueeze(c, x, tx.rank), bu = tb.rank > 1 ? dc_unsqueeze(c, b, tb.rank - 1) : b;
    int past = lnot(c, dc_cmpv(c, right ? "aten.gt.Tensor" : "aten.ge.Tensor", bu, xu));
    int64_t ld = tx.rank;
    out[0] = dc_cast(c, dc_red(c, "aten.sum.dim_IntList", dc_cast(c, past, GR_I64), 1, &ld, 0), to.dtype);
    return 1;
}

/* bincount(self, weights=None, minlength=0): out[k] = the count of self's elements equal to k (or
 * their weights' sum), k below the declared length (one-hot).  A larger value, which PyTorch would
 * have grown the shape for, or a negative one is refused at launch as an index (runtime/tensor.c). */
int dc_r_bincount(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), w = dc_opt_val(c, n, 1, "weights");
    gr_ttype tx = dc_T(c, x), to = c->g->values[n->out].type;
    if (tx.rank != 1 || to.rank != 1)
        return 0;
    if (!tx.shape[0] || !to.shape[0]) {
        out[0] = dc_full(c, 1, to.shape, 0, to.dtype);
        return 1;
    }
    int hit = dc_cmpv(c, "aten.eq.Tensor", dc_unsqueeze(c, x, 1), iota(c, to.shape[0], 2, 1)); /* (m, len) */
    int v = w >= 0 ? dc_where_s(c, hit, dc_unsqueeze(c, dc_cast(c, w, GR_F32), 1), 0, 0) : dc_cast(c, hit, GR_I64);
    int64_t d0 = 0;
    out[0] = dc_cast(c, dc_red(c, "aten.sum.dim_IntList", v, 1, &d0, 0), to.dtype);
    return 1;
}

/* One-hot selection along the last dim: sum_k where(pos == k, x, 0) with
 * pos (.., 1) int64 and x (.., n): x's element at pos (pos beyond n: 0). */
static int pick_last(dctx *c, int x, int pos)
{
    gr_ttype t = dc_T(c, x);
    int last = t.rank - 1;
    int64_t ld = last;
    int hit = dc_cmpv(c, "aten.eq.Tensor", pos, iota(c, t.shape[last], t.rank, last));
    int got = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, x, 0, 0), 1, &ld, 0);
    return dc_cast(c, got, t.dtype); /* a bool table's sum is i64; one hit at most */
}

/* gather(self, dim, index): out[.., i, ..] = self[.., index[.., i, ..], ..],
 * index no larger than self in the other dims. */
int dc_r_gather(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index");
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    if (tx.rank != ti.rank)
        dc_fail(c, "index has rank %d, self %d", ti.rank, tx.rank);
    if (tx.rank == 0) {
        out[0] = x;
        return 1;
    }
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank);
    if (dc_affine_gather(c, n, x, d, out))
        return 1;
    for (int i = 0; i < tx.rank; i++)
        if (i != d && ti.shape[i] > tx.shape[i])
            dc_fail(c, "index is larger than self in dim %d", i);
        else if (i != d && ti.shape[i] < tx.shape[i])
            x = dc_slice(c, x, i, 0, ti.shape[i], 1);
    int xs = dc_unsqueeze(c, move_last(c, x, d, 0), d); /* (.., 1 at d, .., n) */
    int64_t shape[GR_MAX_RANK];
    gr_ttype ts = dc_T(c, xs);
    for (int i = 0; i < ts.rank; i++)
        shape[i] = i < tx.rank ? ti.shape[i] : ts.shape[i];
    xs = dc_expand(c, xs, ts.rank, shape);
    out[0] = pick_last(c, xs, dc_unsqueeze(c, ix, ti.rank));
    return 1;
}

/* A tensor with d of extent n: t's size-m dim d padded with zeros. */
static int pad_dim(dctx *c, int t, int d, int64_t n)
{
    gr_ttype tt = dc_T(c, t);
    if (tt.shape[d] >= n)
        return t;
    int64_t shape[GR_MAX_RANK];
    memcpy(shape, tt.shape, sizeof shape);
    shape[d] = n - tt.shape[d];
    int z = dc_full(c, tt.rank, shape, 0, tt.dtype), parts[2] = {t, z};
    tt.shape[d] = n;
    return DC_EMIT(c, "aten.cat.default", tt, da_vals(2, parts), da_int(d));
}

/* Below this many elements of the one-hot sum's (n, m, rest) terms the sum stays: one small
 * kernel, which fuses with a sibling scatter's over the same index (a graph readout's sum, mean
 * and amax of 12 nodes into 3 graphs: 5,263 cycles, 6,754 as a product). */
#define ROWS_PRODUCT_MIN 1024

/* Whether n rows gathering m rows of src are worth rows_by_product. */
static int rows_product_pays(dctx *c, int64_t n, int src)
{
    gr_ttype t = dc_T(c, src);
    return dc_is_float(t.dtype) && (double)n * (double)dc_numel(&t) >= ROWS_PRODUCT_MIN;
}

/* src's rows (m, ..) summed into n rows at the m positions ix holds: the
 * one-hot (n, m) times src as (m, rest), one product on the PT units (a
 * where-and-sum over m reads src across its sticks: more LX than a 4-core
 * chip has at a GNN's 40 edges x 384 features). */
static int rows_by_product(dctx *c, int64_t n, int ix, int src)
{
    gr_ttype ts = dc_T(c, src), to = ts;
    int64_t m = ts.shape[0], s2[2] = {m, dc_numel(&ts) / m}, i2[2] = {1, m};
    int hit = dc_cmpv(c, "aten.eq.Tensor", iota(c, n, 2, 0), dc_reshape(c, ix, 2, i2)); /* (n, m) */
    to.shape[0] = n;
    return dc_reshape(c, dc_matmul(c, "aten.mm.default", dc_cast(c, hit, ts.dtype), dc_reshape(c, src, 2, s2)),
                      to.rank, to.shape);
}

/* The 1-D index an index of extent m along dim 0 repeats along the others
 * (expand of an (m, 1, ..) tensor: a GNN's dst[:, None].expand_as(msg)),
 * or -1. */
static int index_rows(dctx *c, int ix)
{
    const gr_value *v = &c->d->values[ix];
    const gr_node *e = v->kind == GR_VAL_NODE ? &c->d->nodes[v->node] : NULL;
    if (!e || strcmp(e->base, "expand") || e->nargs < 1 || e->args[0].kind != GR_ARG_VALUE)
        return -1;
    gr_ttype ts = dc_T(c, e->args[0].value);
    if (ts.rank != v->type.rank || ts.shape[0] != v->type.shape[0])
        return -1;
    for (int i = 1; i < ts.rank; i++)
        if (ts.shape[i] != 1)
            return -1;
    return e->args[0].value;
}

/* scatter_add(self, dim, index, src): self + the sum of src's elements
 * sent to each position (one-hot over self's dim; along dim 0 of a float
 * self with an index repeated along the other dims: rows_by_product). */
int dc_r_scatter_add(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index"), src = dc_val(c, n, 3, "src");
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    if (tx.rank == 0 && ti.rank == 0 && dc_T(c, src).rank == 0) { /* the one position 0 */
        out[0] = dc_bin(c, "aten.add.Tensor", x, dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", ix, 0), src, 0, 0));
        return 1;
    }
    if (tx.rank == 0 || ti.rank != tx.rank)
        return 0;
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank);
    for (int i = 0; i < tx.rank; i++) {
        if (ti.shape[i] > dc_T(c, src).shape[i] || (i != d && ti.shape[i] > tx.shape[i]))
            dc_fail(c, "index is larger than src or self in dim %d", i);
        if (ti.shape[i] < dc_T(c, src).shape[i])
            src = dc_slice(c, src, i, 0, ti.shape[i], 1);
    }
    if (dc_numel(&ti) == 0) {
        out[0] = x;
        return 1;
    }
    int rows = d == 0 && tx.rank > 1 && rows_product_pays(c, tx.shape[0], src) ? index_rows(c, ix) : -1;
    for (int i = 1; rows >= 0 && i < tx.rank; i++)
        if (ti.shape[i] != tx.shape[i]) /* positions no entry reaches keep self's */
            rows = -1;
    if (rows >= 0) {
        out[0] = dc_bin(c, "aten.add.Tensor", x, dc_cast(c, rows_by_product(c, tx.shape[0], rows, src), tx.dtype));
        return 1;
    }
    /* (.., m at d, n, ..): the sum runs over index's positions m, the
     * lanes along self's positions n where the dim is self's last */
    int r = tx.rank;
    int im = dc_unsqueeze(c, ix, d + 1), sm = dc_unsqueeze(c, src, d + 1);
    int hit = dc_cmpv(c, "aten.eq.Tensor", im, iota(c, tx.shape[d], r + 1, d + 1));
    int64_t ld = d;
    int add = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, sm, 0, 0), 1, &ld, 0);
    for (int i = 0; i < r; i++)
        if (i != d)
            add = pad_dim(c, add, i, tx.shape[i]);
    out[0] = dc_bin(c, "aten.add.Tensor", x, add);
    return 1;
}

/* index_fill(self, dim, index, value): value where the position along dim
 * is one of index's. */
int dc_r_index_fill(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index");
    gr_ttype tx = dc_T(c, x);
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank);
    int64_t len = tx.rank ? tx.shape[d] : 1, m = dc_numel((gr_ttype[]){dc_T(c, ix)});
    ix = dc_reshape(c, ix, 1, &m);
    int hit = dc_cmpv(c, "aten.eq.Tensor", iota(c, len, 2, 0), dc_unsqueeze(c, ix, 0)); /* (len, m) */
    int64_t one = 1;
    int mask = dc_cmps(c, "aten.gt.Scalar", dc_red(c, "aten.sum.dim_IntList", dc_cast(c, hit, GR_I64), 1, &one, 0), 0);
    if (tx.rank) {
        int64_t shape[GR_MAX_RANK];
        for (int i = 0; i < tx.rank; i++)
            shape[i] = i == d ? len : 1;
        mask = dc_reshape(c, mask, tx.rank, shape);
    } else {
        mask = dc_reshape(c, mask, 0, &one);
    }
    const gr_arg *v = gr_node_arg(n, 3, "value");
    if (v && v->kind == GR_ARG_VALUE) {
        out[0] = dc_where(c, mask, dc_cast(c, dc_val(c, n, 3, "value"), tx.dtype), x);
        return 1;
    }
    out[0] = dc_where_s(c, mask, x, dc_num(c, n, 3, "value", 0), 1);
    return 1;
}

/* nll_loss_forward(self, target, weight, reduction, ignore_index):
 * (loss, total_weight).  The class is picked one-hot, a hit where target
 * is the class and not ignore_index; the row's weight is the picked
 * weight (1 without one), so an ignored row weighs 0.  Every read of
 * target is then inside the selection over the classes. */
int dc_r_nll_loss(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), tg = dc_val(c, n, 1, "target"), w = dc_opt_val(c, n, 2, "weight");
    int reduction = (int)dc_num(c, n, 3, "reduction", 1);
    double ignore = dc_num(c, n, 4, "ignore_index", -100);
    gr_ttype tx = dc_T(c, x);
    if (tx.rank < 1 || tx.rank > 2)
        return 0; /* the N-d form (N, C, d1, ..) stays for the host */
    int last = tx.rank - 1;
    int64_t ld = last;
    int pos = dc_unsqueeze(c, tg, dc_T(c, tg).rank);
    int hit = dc_bin(c, "aten.logical_and.default", dc_cmpv(c, "aten.eq.Tensor", pos, iota(c, tx.shape[last], tx.rank, last)),
                     dc_cmps(c, "aten.ne.Scalar", pos, ignore));
    int picked = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, x, 0, 0), 1, &ld, 0);
    int wt = w >= 0 ? dc_where_s(c, hit, w, 0, 0) : dc_cast(c, hit, tx.dtype);
    int keep = dc_red(c, "aten.sum.dim_IntList", wt, 1, &ld, 0);
    int loss = dc_neg(c, dc_bin(c, "aten.mul.Tensor", picked, keep));
    int64_t all = 0;
    int total = tx.rank == 2 ? dc_red(c, "aten.sum.dim_IntList", keep, 1, &all, 0) : keep;
    if (reduction == 0 && tx.rank == 2) { /* PyTorch's total_weight of rows without a reduction: 0 */
        out[0] = loss;
        int64_t none[1] = {0};
        out[1] = dc_full(c, 0, none, 0, tx.dtype);
        return 2;
    }
    int s = tx.rank == 2 ? dc_red(c, "aten.sum.dim_IntList", loss, 1, &all, 0) : loss;
    out[0] = reduction == 1 ? dc_bin(c, "aten.div.Tensor", s, total) : s; /* none of one row: s */
    out[1] = total;
    return 2;
}

/* x's elements at positions idx (1-D, m of them) along dim d: x with d
 * replaced by m, one-hot.  wrap: a negative position counts from the end
 * (index and take, as Python's). */
static int select_one_hot(dctx *c, int x, int d, int idx, int wrap)
{
    gr_ttype ti = dc_T(c, idx);
    if (wrap) {
        int neg = dc_cmps(c, "aten.lt.Scalar", idx, 0);
        idx = dc_where(c, neg, dc_bins(c, "aten.add.Tensor", idx, (double)dc_T(c, x).shape[d]), idx);
    }
    int64_t m = ti.rank ? ti.shape[0] : 1, shape[GR_MAX_RANK], pshape[GR_MAX_RANK];
    if (!ti.rank)
        idx = dc_reshape(c, idx, 1, &m);
    int xs = dc_unsqueeze(c, move_last(c, x, d, 0), d); /* (pre, 1, post, n) */
    gr_ttype ts = dc_T(c, xs);
    for (int i = 0; i < ts.rank; i++) {
        shape[i] = i == d ? m : ts.shape[i];
        pshape[i] = i == d ? m : 1;
    }
    xs = dc_expand(c, xs, ts.rank, shape);
    return pick_last(c, xs, dc_reshape(c, idx, ts.rank, pshape));
}

/* A 2-D table indexed along its rows by an input's row numbers is the
 * back half's row gather (lower.c); any other selection is one-hot. */
static int row_gather(dctx *c, int x, int d, int idx)
{
    return dc_T(c, x).rank == 2 && d == 0 && dc_T(c, idx).rank <= 1 && c->d->values[idx].kind != GR_VAL_NODE;
}

/* Whether value v is arange(0, n) itself: 0, 1, .., n - 1. */
static int is_count(dctx *c, int v)
{
    const gr_value *r = &c->d->values[v];
    if (r->kind != GR_VAL_NODE)
        return 0;
    const gr_node *a = &c->d->nodes[r->node];
    const int one_arg = !strcmp(a->op, "aten.arange.default");
    return !strcmp(a->base, "arange") && (one_arg || (dc_num(c, a, 0, "start", -1) == 0 && dc_num(c, a, 2, "step", 1) == 1));
}

int dc_r_index_select(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index");
    gr_ttype t = dc_T(c, x);
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
    gr_ttype ti = dc_T(c, ix);
    if (t.rank == 1 && is_count(c, x) && !dc_is_float(ti.dtype)) { /* F.one_hot's check (export.py): the index */
        out[0] = dc_cast(c, ix, t.dtype);
        return 1;
    }
    if (!t.rank && dc_numel(&ti) == 1 && !dc_is_float(ti.dtype)) { /* a 0-d tensor's one element (index 0) */
        out[0] = x;
        return 1;
    }
    if (t.rank && dc_affine_index_select(c, n, x, d, out))
        return 1;
    if (row_gather(c, x, d, ix) || dc_T(c, ix).rank > 1 || dc_is_float(dc_T(c, ix).dtype) || !t.rank ||
        !t.shape[d])
        return 0;
    out[0] = select_one_hot(c, x, d, ix, 0);
    return 1;
}

/* embedding(weight, indices) with indices made from positions alone (a
 * relative-position bucket): one-hot over the table's rows, as
 * index_select; an arange (learned positions) is a plain load, and indices
 * that read an input stay the back half's row gather (lower.c) or,
 * computed from one, one-hot up to EMB_COMPUTED_MAX_ROWS rows, else the
 * host's. */
static int reads_data(dctx *c, int v) { return dc_reads_data(c->d, v); }

/* Whether value v is an arange seen through views (the lowering reads the
 * table's rows at those positions by a plain load). */
static int is_positions(dctx *c, int v)
{
    const gr_value *r = &c->d->values[ir_view_root(c->d, v)];
    return r->kind == GR_VAL_NODE && !strcmp(c->d->nodes[r->node].base, "arange");
}

/* Embedding rows computed indices are one-hot over, at most: the back
 * half's gather reads its row numbers from an input only (a computed
 * integer is DL16 on the device), and one-hot costs the table's rows per
 * element (a VQ-VAE's codebook at argmin). */
#define EMB_COMPUTED_MAX_ROWS 1024

/* Whether the indices v are computed on the device (not an input seen
 * through views, selects, permutes and integer casts, which the gather
 * reads: DLRM's ids[:, i]). */
static int computed_indices(dctx *c, int v)
{
    for (;;) {
        v = ir_view_root(c->d, v);
        if (c->d->values[v].kind != GR_VAL_NODE)
            return 0;
        const gr_node *n = &c->d->nodes[c->d->values[v].node];
        const int read = (ir_op_attrs(n->base) & (IR_OP_CAST | IR_OP_SELECT | IR_OP_PERMUTE)) != 0;
        if (!read || !n->nargs || n->args[0].kind != GR_ARG_VALUE)
            return 1;
        v = n->args[0].value;
    }
}

int dc_r_embedding(dctx *c, const gr_node *n, int *out)
{
    int w = dc_val(c, n, 0, "weight"), ix = dc_val(c, n, 1, "indices");
    gr_ttype tw = dc_T(c, w), ti = dc_T(c, ix), to = ti;
    const int computed = computed_indices(c, ix) && tw.rank == 2 && tw.shape[0] <= EMB_COMPUTED_MAX_ROWS;
    if ((reads_data(c, ix) && !computed) || is_positions(c, ix) || tw.rank != 2 || !tw.shape[0] ||
        dc_is_float(ti.dtype) || ti.rank >= GR_MAX_RANK)
        return 0;
    int64_t m = dc_numel(&ti);
    int r = select_one_hot(c, w, 0, ti.rank == 1 ? ix : dc_reshape(c, ix, 1, &m), 0);
    to.dtype = tw.dtype;
    to.shape[to.rank++] = tw.shape[1];
    out[0] = dc_reshape(c, r, to.rank, to.shape);
    return 1;
}

/* The one index tensor of an indices list (index, index_put), at dim
 * *d; -1 if there are several or none. */
static int one_index(dctx *c, const gr_node *n, int *d)
{
    const gr_arg *l = gr_node_arg(n, 1, "indices");
    int ix = -1;
    *d = -1;
    for (int i = 0; l && l->kind == GR_ARG_LIST && i < l->nitems; i++)
        if (l->items[i].kind == GR_ARG_VALUE) {
            if (*d >= 0)
                return -1;
            *d = i;
            ix = c->vmap[l->items[i].value];
        }
    return ix;
}

/* sum_j ix_j * stride_j, each ix_j's negative positions wrapped, the
 * strides row-major over sizes (span their product) */
static int combined_offsets(dctx *c, const int *ix, const int64_t *sizes, int k, int64_t span)
{
    int off = -1;
    for (int j = 0; j < k; j++) {
        span /= sizes[j];
        int neg = dc_cmps(c, "aten.lt.Scalar", ix[j], 0);
        int w = dc_where(c, neg, dc_bins(c, "aten.add.Tensor", ix[j], (double)sizes[j]), ix[j]);
        w = dc_bins(c, "aten.mul.Tensor", w, (double)span);
        off = off < 0 ? w : dc_bin(c, "aten.add.Tensor", off, w);
    }
    return off;
}

/* index.Tensor(self, indices) with several integer index tensors: they
 * broadcast together and pick elements of the dims they index, so those
 * dims merged into one are indexed by one tensor of combined offsets
 * (row-major within them).  Index tensors apart (a None between them)
 * put their dims first, as PyTorch; so x's indexed dims are moved first.
 * What it cannot do stays on the host, saying why. */
static int several_indices(dctx *c, const gr_node *n, int x)
{
    const gr_arg *l = gr_node_arg(n, 1, "indices");
    gr_ttype t = dc_T(c, x), tb = {.rank = 0};
    int64_t perm[GR_MAX_RANK], merged[GR_MAX_RANK], span = 1;
    int np = 0, k = 0, first = -1, apart = 0, ix[GR_MAX_RANK];
    for (int i = 0; i < l->nitems && i < t.rank; i++)
        if (l->items[i].kind == GR_ARG_VALUE) {
            ix[k] = c->vmap[l->items[i].value];
            gr_ttype ti = dc_T(c, ix[k]);
            gr_ttype prev = tb;
            if (ti.dtype == GR_BOOL)
                dc_fail(c, "a bool mask among several indices (a shape known only at run time) stays on the host");
            if (dc_is_float(ti.dtype))
                dc_fail(c, "index %d is not an integer tensor", i);
            if (!t.shape[i])
                dc_fail(c, "index %d indexes an empty dim", i);
            if (ir_broadcast(&prev, &ti, &tb))
                dc_fail(c, "the index tensors do not broadcast together");
            apart |= first >= 0 && i != first + k;
            first = first < 0 ? i : first;
            perm[np++] = i;
            span *= t.shape[i];
            k++;
        }
    if (l->nitems > t.rank)
        dc_fail(c, "%d indices for a tensor of rank %d", l->nitems, t.rank);
    if (span - 1 > IR_INT_EXACT)
        dc_fail(c, "the indexed dims' combined offsets reach %lld, beyond DL16's exact integers (%d)",
                (long long)(span - 1), IR_INT_EXACT);
    if (t.rank - k + tb.rank > GR_MAX_RANK)
        dc_fail(c, "the result's rank would pass %d", GR_MAX_RANK);
    int d0 = apart ? 0 : first;
    for (int i = 0; i < t.rank; i++)
        if (i >= l->nitems || l->items[i].kind != GR_ARG_VALUE)
            perm[np++] = i;
    if (apart)
        x = dc_permute(c, x, perm);
    int64_t sizes[GR_MAX_RANK];
    for (int j = 0; j < k; j++)
        sizes[j] = t.shape[perm[j]]; /* perm lists the indexed dims first */
    int off = combined_offsets(c, ix, sizes, k, span);
    gr_ttype tx = dc_T(c, x), to = {.dtype = t.dtype, .rank = 0};
    int mr = 0;
    for (int i = 0; i < tx.rank; i++)
        if (i < d0 || i >= d0 + k)
            merged[mr++] = tx.shape[i];
        else if (i == d0)
            merged[mr++] = span;
    int64_t m = dc_numel(&tb);
    int r = select_one_hot(c, dc_reshape(c, x, mr, merged), d0, dc_reshape(c, off, 1, &m), 0);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < (i == d0 ? tb.rank : 1); j++)
            to.shape[to.rank++] = i == d0 ? tb.shape[j] : merged[i];
    return dc_reshape(c, r, to.rank, to.shape);
}

/* A 2-D table's rows picked by a parameter (a buffer of the model, seen
 * through views: Swin's relative-position index) are the back half's row
 * gather, one DMA per row where one-hot costs the table's rows per
 * element; the host uploads the positions wrapped (a negative one counts
 * from the end: lower.c, wrap_param_rows), so only when every reader of
 * the parameter is such a gather (ir_only_row_gathers).  An input's stay
 * one-hot: the gather takes row numbers as they are. */
static int param_rows(dctx *c, const gr_node *n, int x, int d)
{
    if (dc_T(c, x).rank != 2 || d != 0 || dc_T(c, x).shape[0] > IR_WRAP_ROWS_MAX)
        return 0;
    const int p = ir_view_root(c->g, gr_node_arg(n, 1, "indices")->items[0].value);
    return c->g->values[p].kind == GR_VAL_PARAM && ir_only_row_gathers(c->g, p, dc_T(c, x).shape[0]);
}

/* index.Tensor(self, indices) with one integer index tensor (the others
 * None): x with that dim replaced by the index's shape; several: as
 * several_indices.  Bool masks (a data-dependent shape) stay for the host. */
int dc_r_index(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int d, ix = one_index(c, n, &d);
    if (dc_affine_index(c, n, x, out))
        return 1;
    if (ix < 0 && d >= 0)
        return (out[0] = several_indices(c, n, x)) > 0;
    if (ix < 0 || d >= t.rank || dc_T(c, ix).dtype == GR_BOOL || dc_is_float(dc_T(c, ix).dtype) || !t.shape[d])
        return 0;
    gr_ttype ti = dc_T(c, ix), to;
    to.dtype = t.dtype;
    to.rank = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != d)
            to.shape[to.rank++] = t.shape[i];
        else
            for (int j = 0; j < ti.rank; j++)
                to.shape[to.rank++] = ti.shape[j];
    if (to.rank > GR_MAX_RANK)
        return 0;
    if (param_rows(c, n, x, d)) {
        out[0] = DC_EMIT(c, "aten.embedding.default", to, da_val(x), da_val(ix));
        return 1;
    }
    int64_t m = dc_numel(&ti);
    int flat = ti.rank == 1 ? ix : dc_reshape(c, ix, 1, &m);
    int r = select_one_hot(c, x, d, flat, 1); /* one-hot: a negative position wraps, as Python's */
    out[0] = dc_reshape(c, r, to.rank, to.shape);
    return 1;
}

/* take(self, index): the flattened self's elements at index. */
int dc_r_take(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 1, "index");
    gr_ttype t = dc_T(c, x), ti = dc_T(c, ix);
    int64_t all = dc_numel(&t), m = dc_numel(&ti);
    if (!all || dc_is_float(ti.dtype))
        return 0;
    int r = select_one_hot(c, dc_reshape(c, x, 1, &all), 0, dc_reshape(c, ix, 1, &m), 1);
    out[0] = dc_reshape(c, r, ti.rank, ti.shape);
    return 1;
}

/* index_add(self, dim, index, source, alpha): self + alpha * the sum of
 * source's slices sent to each position (one-hot, as scatter_add); along
 * dim 0 of a float tensor of rank > 1 rows_by_product (a 1-D count is as
 * fast either way). */
int dc_r_index_add(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index"), src = dc_val(c, n, 3, "source");
    double alpha = dc_num(c, n, 4, "alpha", 1);
    gr_ttype tx = dc_T(c, x);
    int64_t one = 1, m = dc_numel((gr_ttype[]){dc_T(c, ix)});
    int x1 = tx.rank ? x : dc_reshape(c, x, 1, &one);
    int s1 = dc_T(c, src).rank ? src : dc_reshape(c, src, 1, &one);
    gr_ttype t = dc_T(c, x1);
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
    if (dc_T(c, s1).rank != t.rank || dc_T(c, s1).shape[d] != m || !m)
        return 0;
    if (d == 0 && t.rank > 1 && rows_product_pays(c, t.shape[0], s1)) { /* a GNN's aggregation */
        int add = dc_scale(c, rows_by_product(c, t.shape[0], ix, s1), alpha);
        out[0] = dc_bin(c, "aten.add.Tensor", x1, dc_cast(c, add, t.dtype));
        return 1;
    }
    int64_t ishape[GR_MAX_RANK];
    for (int i = 0; i <= t.rank; i++)
        ishape[i] = i == d ? m : 1;
    int im = dc_reshape(c, dc_reshape(c, ix, 1, &m), t.rank + 1, ishape); /* (.., m at d, 1, ..) */
    int hit = dc_cmpv(c, "aten.eq.Tensor", im, iota(c, t.shape[d], t.rank + 1, d + 1));
    int64_t ld = d;
    int add = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, dc_unsqueeze(c, s1, d + 1), 0, 0), 1, &ld, 0);
    if (alpha != 1)
        add = dc_bins(c, "aten.mul.Tensor", add, alpha);
    int r = dc_bin(c, "aten.add.Tensor", x1, dc_cast(c, add, t.dtype));
    out[0] = tx.rank ? r : dc_reshape(c, r, 0, &one);
    return 1;
}

/* repeat_interleave.Tensor(repeats): position j of the output is the i
 * with cs[i-1] <= j < cs[i], i.e. #{i: cs[i] <= j}, cs = cumsum(repeats)
 * (a triangular product, exact while the total is within 1024). */
int dc_r_repeat_positions(dctx *c, const gr_node *n, int *out)
{
    int r = dc_val(c, n, 0, "repeats");
    gr_ttype tr = dc_T(c, r), to = c->g->values[n->out].type;
    if (tr.rank != 1 || to.rank != 1 || to.shape[0] > IR_INT_EXACT || !tr.shape[0])
        return 0;
    int64_t len = tr.shape[0], row[2] = {1, len};
    int rf = dc_reshape(c, dc_cast(c, r, GR_F32), 2, row);
    int u = dc_cast(c, dc_cmpv(c, "aten.le.Tensor", iota(c, len, 2, 0), iota(c, len, 2, 1)), GR_F32);
    int cs = dc_matmul(c, "aten.mm.default", rf, u); /* (1, len) */
    int le = dc_cmpv(c, "aten.le.Tensor", dc_reshape(c, cs, 2, (int64_t[]){len, 1}), iota(c, to.shape[0], 2, 1));
    int64_t zero = 0;
    out[0] = dc_red(c, "aten.sum.dim_IntList", dc_cast(c, le, GR_I64), 1, &zero, 0);
    return 1;
}

/* index_put with a bool mask over self's leading dims and values that
 * broadcast to the rest: where(mask, values, self) (accumulate: self +
 * values there).  Values with one row per true element (a shape that
 * depends on the data) stay for the host. */
static int index_put_mask(dctx *c, int x, int mask, int val, int acc)
{
    gr_ttype t = dc_T(c, x), tm = dc_T(c, mask), tv = dc_T(c, val);
    int rest = t.rank - tm.rank;
    if (tm.rank > t.rank || memcmp(tm.shape, t.shape, (size_t)tm.rank * sizeof *t.shape) ||
        (tv.rank > rest && !(tv.rank == rest + 1 && tv.shape[0] == 1)))
        return -1;
    if (tv.rank == rest + 1)
        val = dc_reshape(c, val, rest, tv.shape + 1);
    int64_t ms[GR_MAX_RANK];
    for (int i = 0; i < t.rank; i++)
        ms[i] = i < tm.rank ? tm.shape[i] : 1;
    mask = dc_reshape(c, mask, t.rank, ms);
    val = dc_cast(c, val, t.dtype);
    return dc_where(c, mask, acc ? dc_bin(c, "aten.add.Tensor", x, val) : val, x);
}

/* index_put with one integer index tensor at dim d: positions k along d
 * get the values of the index entries j equal to k: their sum added
 * (accumulate), else the last one's (as a serial write). */
static int index_put_int(dctx *c, int x, int d, int ix, int val, int acc)
{
    gr_ttype t = dc_T(c, x), ti = dc_T(c, ix);
    int64_t m = dc_numel(&ti), vs[GR_MAX_RANK], is[GR_MAX_RANK];
    if (!m || !t.shape[d] || t.rank + 1 > GR_MAX_RANK)
        return -1;
    for (int i = 0; i < t.rank; i++)
        vs[i] = i == d ? m : t.shape[i];
    /* values broadcast to self's shape with d replaced by index's, then
     * index's dims flattened into m */
    int64_t fs[GR_MAX_RANK], ones[GR_MAX_RANK];
    int fr = 0;
    for (int i = 0; i < t.rank; i++)
        for (int j = 0; j < (i == d ? ti.rank : 1); j++)
            if (fr < GR_MAX_RANK)
                fs[fr++] = i == d ? ti.shape[j] : t.shape[i];
    gr_ttype tv = dc_T(c, val);
    if (fr != t.rank - 1 + ti.rank || tv.rank > fr)
        return -1;
    for (int i = 0; i < fr; i++)
        ones[i] = i < fr - tv.rank ? 1 : tv.shape[i - (fr - tv.rank)];
    int v = dc_reshape(c, dc_expand(c, dc_reshape(c, val, fr, ones), fr, fs), t.rank, vs);
    for (int i = 0; i <= t.rank; i++)
        is[i] = i == d ? m : 1;
    ix = dc_reshape(c, ix, 1, &m);
    ix = dc_where(c, dc_cmps(c, "aten.lt.Scalar", ix, 0), dc_bins(c, "aten.add.Tensor", ix, (double)t.shape[d]), ix);
    int hit = dc_cmpv(c, "aten.eq.Tensor", dc_reshape(c, ix, t.rank + 1, is), iota(c, t.shape[d], t.rank + 1, d + 1));
    int vu = dc_unsqueeze(c, dc_cast(c, v, t.dtype), d + 1); /* (.., m at d, 1, ..) */
    int64_t ld = d;
    if (acc)
        return dc_bin(c, "aten.add.Tensor", x, dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, vu, 0, 0), 1, &ld, 0));
    int last = dc_red(c, "aten.amax.default", dc_where_s(c, hit, iota(c, m, t.rank + 1, d), -1, 0), 1, &ld, 1);
    int pick = dc_cmpv(c, "aten.eq.Tensor", iota(c, m, t.rank + 1, d), last); /* (.., m, n, ..) */
    int got = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, pick, vu, 0, 0), 1, &ld, 0);
    int64_t ls[GR_MAX_RANK]; /* last varies along self's dim d only */
    for (int i = 0; i < t.rank; i++)
        ls[i] = i == d ? t.shape[d] : 1;
    int any = dc_cmps(c, "aten.ge.Scalar", dc_reshape(c, last, t.rank, ls), 0);
    return dc_where(c, any, got, x);
}

/* Rows of float x (n, ..) put at the positions ix holds (any shape, m
 * entries), from val broadcast to (ix's shape, x's rest): their sum added
 * (accumulate), else the last entry of a position winning as a serial
 * write: the one-hot (n, m) of the entries (the winners) times the values
 * (m, rest), one product on the PT units, where a where-and-sum over m,
 * (n, m, rest) at once, misses LX. */
static int put_rows_by_product(dctx *c, int x, int ix, int val, int acc)
{
    gr_ttype t = dc_T(c, x), ti = dc_T(c, ix), tv = dc_T(c, val);
    int64_t n = t.shape[0], m = dc_numel(&ti), rest = dc_numel(&t) / (n ? n : 1), fs[GR_MAX_RANK], ones[GR_MAX_RANK];
    int fr = 0;
    for (int i = 0; i < ti.rank && fr < GR_MAX_RANK; i++)
        fs[fr++] = ti.shape[i];
    for (int i = 1; i < t.rank && fr < GR_MAX_RANK; i++)
        fs[fr++] = t.shape[i];
    if (!n || !m || fr != ti.rank + t.rank - 1 || tv.rank > fr)
        return -1;
    for (int i = 0; i < fr; i++)
        ones[i] = i < fr - tv.rank ? 1 : tv.shape[i - (fr - tv.rank)];
    int64_t v2[2] = {m, rest}, i2[2] = {1, m}, x2[2] = {n, rest}, l2[2] = {n, 1}, d1 = 1;
    int v = dc_reshape(c, dc_expand(c, dc_reshape(c, dc_cast(c, val, t.dtype), fr, ones), fr, fs), 2, v2);
    int hit = dc_cmpv(c, "aten.eq.Tensor", iota(c, n, 2, 0), dc_reshape(c, ix, 2, i2)); /* (n, m) */
    if (acc) {
        int sum = dc_matmul(c, "aten.mm.default", dc_cast(c, hit, t.dtype), v);
        return dc_reshape(c, dc_bin(c, "aten.add.Tensor", dc_reshape(c, x, 2, x2), sum), t.rank, t.shape);
    }
    int last = dc_red(c, "aten.amax.default", dc_where_s(c, hit, iota(c, m, 2, 1), -1, 0), 1, &d1, 1); /* (n, 1) */
    int pick = dc_cast(c, dc_cmpv(c, "aten.eq.Tensor", iota(c, m, 2, 1), last), t.dtype);
    int got = dc_matmul(c, "aten.mm.default", pick, v);
    int any = dc_cmps(c, "aten.ge.Scalar", dc_reshape(c, last, 2, l2), 0);
    return dc_reshape(c, dc_where(c, any, got, dc_reshape(c, x, 2, x2)), t.rank, t.shape);
}

/* index_put with several integer index tensors on adjacent dims
 * (Informer's context[arange(B)[:, None, None], arange(H)[None, :, None],
 * top, :] = ...): those dims merged into one, indexed by the combined
 * offsets (row-major), as index_put_int; -1 if it cannot. */
static int several_put(dctx *c, const gr_node *n, int x, int val, int acc)
{
    const gr_arg *l = gr_node_arg(n, 1, "indices");
    gr_ttype t = dc_T(c, x), tb = {.rank = 0};
    int64_t merged[GR_MAX_RANK], sizes[GR_MAX_RANK], span = 1;
    int k = 0, first = -1, ix[GR_MAX_RANK], mr = 0;
    for (int i = 0; i < l->nitems && i < t.rank; i++) {
        if (l->items[i].kind != GR_ARG_VALUE)
            continue;
        ix[k] = c->vmap[l->items[i].value];
        gr_ttype ti = dc_T(c, ix[k]), prev = tb;
        if (ti.dtype == GR_BOOL || dc_is_float(ti.dtype))
            dc_fail(c, "index %d of several is not an integer tensor", i);
        if ((first >= 0 && i != first + k) || ir_broadcast(&prev, &ti, &tb))
            dc_fail(c, "index tensors apart (a None between them) or not broadcasting together stay on the host");
        first = first < 0 ? i : first;
        sizes[k++] = t.shape[i];
        span *= t.shape[i];
    }
    if (!dc_numel(&tb) || !dc_numel(&t))
        return x; /* nothing is put (an empty index, or an empty dim PyTorch accepted): x, as PyTorch */
    if (l->nitems > t.rank || span - 1 > IR_INT_EXACT)
        dc_fail(c, "the indexed dims' combined offsets reach %lld, beyond DL16's exact integers (%d)",
                (long long)(span - 1), IR_INT_EXACT);
    for (int i = 0; i < t.rank; i++)
        if (i < first || i >= first + k)
            merged[mr++] = t.shape[i];
        else if (i == first)
            merged[mr++] = span;
    int off = combined_offsets(c, ix, sizes, k, span);
    int r = first || !dc_is_float(t.dtype) ? index_put_int(c, dc_reshape(c, x, mr, merged), first, off, val, acc)
                                           : put_rows_by_product(c, dc_reshape(c, x, mr, merged), off, val, acc);
    return r < 0 ? -1 : dc_reshape(c, r, t.rank, t.shape);
}

int dc_r_index_put(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), val = dc_val(c, n, 2, "values");
    int acc = (int)dc_num(c, n, 3, "accumulate", 0);
    int d, ix = one_index(c, n, &d);
    if (ix < 0 && d >= 0 && d < dc_T(c, x).rank) {
        int r = several_put(c, n, x, val, acc);
        out[0] = r;
        return r >= 0;
    }
    if (ix < 0 || d >= dc_T(c, x).rank || dc_is_float(dc_T(c, ix).dtype))
        return 0;
    int r = dc_T(c, ix).dtype == GR_BOOL ? (d ? -1 : index_put_mask(c, x, ix, val, acc))
                                          : index_put_int(c, x, d, ix, val, acc);
    if (r < 0)
        return 0;
    out[0] = r;
    return 1;
}

/* The product over dim d of t, by halves: log2 of its extent pointwise
 * products (an odd extent carries its last element up a level). */
static int prod_dim(dctx *c, int t, int d)
{
    for (int64_t len = dc_T(c, t).shape[d]; len > 1; len = (len + 1) / 2) {
        int64_t h = len / 2;
        int p = dc_bin(c, "aten.mul.Tensor", dc_slice(c, t, d, 0, h, 1), dc_slice(c, t, d, h, 2 * h, 1));
        if (len % 2) {
            gr_ttype tt = dc_T(c, p);
            int parts[2] = {p, dc_slice(c, t, d, 2 * h, len, 1)};
            tt.shape[d] = h + 1;
            p = DC_EMIT(c, "aten.cat.default", tt, da_vals(2, parts), da_int(d));
        }
        t = p;
    }
    int64_t dd = d;
    return dc_red(c, "aten.sum.dim_IntList", t, 1, &dd, 0); /* of one element: t without dim d */
}

/* prod(self, dim, keepdim, dtype), prod(self, dtype): prod_dim, n - 1
 * roundings as a serial product.  DL16's range (up to about 8.6e9, down
 * to 2^-31) is narrower than fp32's: a product beyond it is NaN or 0 on
 * the device, which --check reports.  Integer inputs stay for the host. */
int dc_r_prod(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    const gr_arg *a = gr_node_arg(n, 1, "dim");
    int has_dim = a && a->kind != GR_ARG_NONE && a->kind != GR_ARG_DTYPE;
    int dt = dc_dtype_arg(c, n, has_dim ? 3 : 1, "dtype");
    if (dt >= 0)
        x = dc_cast(c, x, (gr_dtype)dt);
    gr_ttype t = dc_T(c, x), to = c->g->values[n->out].type;
    if (!dc_is_float(t.dtype))
        return 0;
    if (dc_numel(&t) == 0) {
        out[0] = dc_full(c, to.rank, to.shape, 1, to.dtype);
        return 1;
    }
    int d = 0;
    if (!has_dim || t.rank == 0) {
        int64_t all = dc_numel(&t);
        x = dc_reshape(c, x, 1, &all);
    } else {
        d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
    }
    out[0] = dc_reshape(c, prod_dim(c, x, d), to.rank, to.shape);
    return 1;
}

/* scatter.reduce(self, dim, index, src, reduce): "add" as scatter_add;
 * "multiply": self times the product of the src entries sent to each
 * position (ones elsewhere). */
static int scatter_reduce(dctx *c, const gr_node *n, int x, int ix, int mul, int *out)
{
    if (!mul)
        return dc_r_scatter_add(c, n, out);
    const gr_arg *sa = gr_node_arg(n, 3, "src");
    if (!sa || sa->kind != GR_ARG_VALUE)
        return 0;
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank), r = tx.rank;
    int src = dc_val(c, n, 3, "src");
    for (int i = 0; i < r; i++) {
        if (i != d && ti.shape[i] > tx.shape[i])
            return 0;
        if (dc_T(c, src).shape[i] > ti.shape[i])
            src = dc_slice(c, src, i, 0, ti.shape[i], 1);
    }
    int hit = dc_cmpv(c, "aten.eq.Tensor", dc_unsqueeze(c, ix, d + 1), iota(c, tx.shape[d], r + 1, d + 1));
    int p = prod_dim(c, dc_where_s(c, hit, dc_unsqueeze(c, dc_cast(c, src, tx.dtype), d + 1), 1, 0), d);
    for (int i = 0; i < r; i++)
        if (i != d && ti.shape[i] < tx.shape[i]) { /* positions no index reaches: times 1 */
            gr_ttype tp = dc_T(c, p);
            int64_t sh[GR_MAX_RANK];
            memcpy(sh, tp.shape, sizeof sh);
            sh[i] = tx.shape[i] - tp.shape[i];
            int parts[2] = {p, dc_full(c, tp.rank, sh, 1, tp.dtype)};
            tp.shape[i] = tx.shape[i];
            p = DC_EMIT(c, "aten.cat.default", tp, da_vals(2, parts), da_int(i));
        }
    out[0] = dc_bin(c, "aten.mul.Tensor", x, p);
    return 1;
}

/* src's entries sent to each position of self's dim d, reduced over index's
 * positions (one-hot: hit is index == the position): sum, prod, mean (the
 * sum), amax, amin; *cnt: how many entries each position gets (f32).  Both
 * padded with zeros to self's extents in the other dims. */
static int scatter_gathered(dctx *c, int x, int ix, int src, int d, const char *reduce, int *cnt)
{
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    const int r = tx.rank;
    int64_t ld = d;
    for (int i = 0; i < r; i++)
        if (dc_T(c, src).shape[i] > ti.shape[i])
            src = dc_slice(c, src, i, 0, ti.shape[i], 1);
    int sm = dc_unsqueeze(c, dc_cast(c, src, tx.dtype), d + 1);
    int hit = dc_cmpv(c, "aten.eq.Tensor", dc_unsqueeze(c, ix, d + 1), iota(c, tx.shape[d], r + 1, d + 1));
    int red;
    if (!strcmp(reduce, "prod"))
        red = prod_dim(c, dc_where_s(c, hit, sm, 1, 0), d);
    else if (!strcmp(reduce, "amax") || !strcmp(reduce, "amin"))
        red = dc_red(c, !strcmp(reduce, "amax") ? "aten.amax.default" : "aten.amin.default",
                     dc_where_s(c, hit, sm, !strcmp(reduce, "amax") ? -INFINITY : INFINITY, 0), 1, &ld, 0);
    else
        red = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, hit, sm, 0, 0), 1, &ld, 0);
    *cnt = dc_red(c, "aten.sum.dim_IntList", dc_cast(c, hit, GR_F32), 1, &ld, 0);
    for (int i = 0; i < r; i++)
        if (i != d) {
            red = pad_dim(c, red, i, tx.shape[i]);
            *cnt = pad_dim(c, *cnt, i, tx.shape[i]);
        }
    return red;
}

/* self combined with red, the reduction of the cnt entries each position
 * gets (scatter_gathered), as scatter_reduce's reduction rd does; self
 * where a position gets none. */
static int scatter_combined(dctx *c, int x, int red, int cnt, const char *rd, int incl)
{
    const int mean = !strcmp(rd, "mean");
    int v = red;
    if (incl && (mean || !strcmp(rd, "sum")))
        v = dc_bin(c, "aten.add.Tensor", x, red);
    else if (incl && !strcmp(rd, "prod"))
        v = dc_bin(c, "aten.mul.Tensor", x, red);
    else if (incl)
        v = dc_bin(c, !strcmp(rd, "amax") ? "aten.maximum.default" : "aten.minimum.default", x, red);
    if (mean) { /* the count in self's dtype: an f32 count would promote an f16 mean */
        cnt = dc_cast(c, cnt, dc_T(c, x).dtype);
        v = dc_bin(c, "aten.div.Tensor", v, incl ? dc_bins(c, "aten.add.Tensor", cnt, 1) : cnt);
    }
    return dc_where(c, dc_cmps(c, "aten.gt.Scalar", cnt, 0), v, x);
}

/* scatter_reduce(self, dim, index, src, reduce, include_self): where a
 * position gets entries, their reduction (with self's when include_self;
 * mean divides by the count, + 1 with self); elsewhere self.  0-d tensors
 * as one element.  Integer mean (a floor division) stays for the host. */
int dc_r_scatter_reduce(dctx *c, const gr_node *n, int *out)
{
    static const char *const known[] = {"sum", "prod", "mean", "amax", "amin"};
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index"), src = dc_val(c, n, 3, "src");
    const gr_arg *ra = gr_node_arg(n, 4, "reduce");
    const int scalar = dc_T(c, x).rank == 0;
    if (scalar && (dc_T(c, ix).rank != 0 || dc_T(c, src).rank != 0))
        return 0;
    int64_t one = 1;
    if (scalar) {
        x = dc_reshape(c, x, 1, &one);
        ix = dc_reshape(c, ix, 1, &one);
        src = dc_reshape(c, src, 1, &one);
    }
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    int k = 0;
    while (ra && ra->kind == GR_ARG_STR && k < 5 && strcmp(ra->s, known[k]))
        k++;
    if (!ra || ra->kind != GR_ARG_STR || k == 5 || ti.rank != tx.rank || !dc_numel(&ti) ||
        (k == 2 && !dc_is_float(tx.dtype)))
        return 0;
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank);
    for (int i = 0; i < tx.rank; i++)
        if (ti.shape[i] > dc_T(c, src).shape[i] || (i != d && ti.shape[i] > tx.shape[i]))
            dc_fail(c, "index is larger than src or self in dim %d", i);
    int cnt, red = scatter_gathered(c, x, ix, src, d, ra->s, &cnt);
    int v = scatter_combined(c, x, red, cnt, ra->s, dc_num(c, n, 5, "include_self", 1) != 0);
    out[0] = scalar ? dc_reshape(c, v, 0, &one) : v;
    return 1;
}

/* x with each position along dim d set to the src element (or value,
 * src < 0) of the last index entry equal to it, as a serial write leaves
 * it; others keep x's (one-hot: the amax of the matching entries, then a
 * selection). */
static int scatter_last(dctx *c, int x, int ix, int src, double value, int d, int *out)
{
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    const int r = tx.rank;
    if (src >= 0) {
        for (int i = 0; i < r; i++)
            if (dc_T(c, src).shape[i] > ti.shape[i])
                src = dc_slice(c, src, i, 0, ti.shape[i], 1);
        src = dc_cast(c, src, tx.dtype == GR_BOOL ? GR_I64 : tx.dtype); /* summed below */
    }
    for (int i = 0; i < r; i++)
        if (i != d && ti.shape[i] > tx.shape[i])
            return 0;
    int64_t m = ti.shape[d], ld = d;
    int hit = dc_cmpv(c, "aten.eq.Tensor", dc_unsqueeze(c, ix, d + 1), iota(c, tx.shape[d], r + 1, d + 1));
    int last = dc_red(c, "aten.amax.default", dc_where_s(c, hit, iota(c, m, r + 1, d), -1, 0), 1, &ld, 1);
    int64_t ls[GR_MAX_RANK]; /* last without dim d: (.., n, ..) over index's other extents */
    for (int i = 0; i < r; i++)
        ls[i] = i == d ? tx.shape[d] : ti.shape[i];
    int got;
    if (src >= 0) {
        int pick = dc_cmpv(c, "aten.eq.Tensor", iota(c, m, r + 1, d), last);
        got = dc_red(c, "aten.sum.dim_IntList", dc_where_s(c, pick, dc_unsqueeze(c, src, d + 1), 0, 0), 1, &ld, 0);
        got = dc_cast(c, got, tx.dtype);
    } else {
        got = dc_full(c, r, ls, value, tx.dtype);
    }
    int any = dc_cmps(c, "aten.ge.Scalar", dc_reshape(c, last, r, ls), 0);
    for (int i = 0; i < r; i++)
        if (i != d && ti.shape[i] < tx.shape[i]) {
            got = pad_dim(c, got, i, tx.shape[i]);
            any = dc_cmps(c, "aten.ne.Scalar", pad_dim(c, dc_cast(c, any, GR_F32), i, tx.shape[i]), 0);
        }
    out[0] = dc_where(c, any, got, x);
    return 1;
}

/* scatter(self, dim, index, src | value): each position along dim gets
 * the src element (or value) of the last index entry equal to it (a serial
 * write's result), others keep self's.  scatter.reduce stays for the host. */
int dc_r_scatter(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index");
    gr_ttype tx = dc_T(c, x), ti = dc_T(c, ix);
    const gr_arg *sa = gr_node_arg(n, 3, "src"), *va = sa ? sa : gr_node_arg(n, 3, "value");
    const gr_arg *ra = gr_node_arg(n, 4, "reduce");
    if (!va || tx.rank == 0 || ti.rank != tx.rank || !dc_numel(&ti))
        return 0;
    if (ra && ra->kind == GR_ARG_STR) /* reduce="add" or "multiply" */
        return scatter_reduce(c, n, x, ix, !strcmp(ra->s, "multiply"), out);
    if (ra)
        return 0;
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank), src = -1;
    if (va->kind == GR_ARG_VALUE)
        src = dc_val(c, n, 3, "src");
    return scatter_last(c, x, ix, src, src < 0 ? dc_num(c, n, 3, "value", 0) : 0, d, out);
}

/* index_copy(self, dim, index, source): scatter of source along dim by
 * index broadcast over source's other dims (scatter_last). */
int dc_r_index_copy(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), ix = dc_val(c, n, 2, "index"), src = dc_val(c, n, 3, "source");
    gr_ttype tx = dc_T(c, x), ts = dc_T(c, src);
    int64_t m = dc_numel((gr_ttype[]){dc_T(c, ix)}), sh[GR_MAX_RANK];
    if (tx.rank == 0 || ts.rank != tx.rank)
        return 0;
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), tx.rank);
    if (ts.shape[d] != m)
        return 0;
    for (int i = 0; i < tx.rank; i++)
        sh[i] = i == d ? m : 1;
    ix = dc_expand(c, dc_reshape(c, dc_reshape(c, ix, 1, &m), tx.rank, sh), ts.rank, ts.shape);
    return scatter_last(c, x, ix, src, 0, d, out);
}

/* The length L of every bag when the offsets are a graph line's
 * arange(0, nidx, L) giving nbags bags (a 2-D input flattened); else 0. */
static int64_t fixed_bag(dctx *c, const gr_node *n, int64_t nidx, int64_t nbags)
{
    const gr_arg *a = gr_node_arg(n, 2, "offsets");
    const gr_value *v = a && a->kind == GR_ARG_VALUE ? &c->g->values[a->value] : NULL;
    if (!v || v->kind != GR_VAL_NODE || v->node < 0 || strcmp(c->g->nodes[v->node].op, "aten.arange.start_step"))
        return 0;
    const gr_node *m = &c->g->nodes[v->node];
    for (int i = 0; i < 3; i++)
        if (!dc_is_number(gr_node_arg(m, i, NULL)))
            return 0;
    int64_t start = (int64_t)dc_num(c, m, 0, "start", 0), step = (int64_t)dc_num(c, m, 2, "step", 1);
    return start == 0 && step > 0 && step * nbags == nidx ? step : 0;
}

/* Which of N indices fall in each bag (B, N): offsets[b] <= i and not
 * offsets[b + 1] <= i (the last bag to N unless the last offset is
 * given).  Only compares read the offsets: an offsets input's values are
 * unbounded to the compiler, and a compare with an index is exact where
 * any sum or copy of them would not be. */
static int bag_members(dctx *c, int off, int64_t N, int64_t B, int last)
{
    int i = iota(c, N, 2, 1);
    int started = dc_cmpv(c, "aten.le.Tensor", dc_unsqueeze(c, dc_slice(c, off, 0, 0, last ? B + 1 : B, 1), 1), i);
    int next = dc_slice(c, started, 0, 1, last ? B + 1 : B, 1);
    if (!last) /* no bag after the last: none started */
        next = B > 1 ? pad_dim(c, next, 0, B) : dc_full(c, 2, (int64_t[]){1, N}, 0, GR_BOOL);
    return dc_bin(c, "aten.logical_and.default", dc_slice(c, started, 0, 0, B, 1),
                  dc_cmps(c, "aten.eq.Scalar", next, 0));
}

#define STICK_ELEMS 64 /* DL16 elements in one 128-byte stick */
#define MASK_FULL_MAX ((int64_t)1 << 18) /* elements of a padding mask as wide as the weight */

/* indices != pad as a gather of a constant table of ones but row pad: the
 * device reads an integer input only by a gather of whole rows.  Up to
 * MASK_FULL_MAX elements the table is as wide as the weight, (N, D), its
 * gather fused with the weight's; beyond, the table would be the weight's
 * size again (256 MB for 1M x 64), so its rows are one stick and the mask
 * each row's maximum, (N, 1) (a kernel of its own). */
static int not_padding(dctx *c, int ix, gr_ttype tw, int64_t pad)
{
    int64_t V = tw.shape[0], D = tw.shape[1], S = V * D <= MASK_FULL_MAX || D < STICK_ELEMS ? D : STICK_ELEMS;
    float *ones = ir_xalloc((size_t)(V * S) * sizeof *ones);
    for (int64_t i = 0; i < V * S; i++)
        ones[i] = i / S != pad;
    gr_ttype tt = {.dtype = tw.dtype, .rank = 2, .shape = {V, S}}, tg = tt;
    tg.shape[0] = dc_T(c, ix).shape[0];
    int g = DC_EMIT(c, "aten.embedding.default", tg, da_val(dc_const(c, tt, ones)), da_val(ix));
    if (S < D)
        g = dc_red(c, "aten.amax.default", g, 1, (int64_t[]){1}, 1);
    return dc_cmps(c, "aten.gt.Scalar", g, 0.5);
}

/* _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode,
 * sparse, per_sample_weights, include_last_offset, padding_idx): the rows
 * gathered (embedding), then per bag a sum (0), mean (1) or max (2) over
 * bags (B, K, D) with a mask of the rows that count (padding_idx's out):
 * fixed bags are the rows reshaped, any others every row against the
 * offsets (K = N).  An empty bag gives 0.  offset2bag, bag_size and max_indices are
 * refused when the graph reads them (their values differ by path in
 * PyTorch). */
int dc_r_embedding_bag(dctx *c, const gr_node *n, int *out)
{
    int w = dc_val(c, n, 0, "weight"), ix = dc_val(c, n, 1, "indices"), off = dc_val(c, n, 2, "offsets");
    int mode = (int)dc_num(c, n, 4, "mode", 0), last = (int)dc_num(c, n, 7, "include_last_offset", 0);
    int psw = dc_opt_val(c, n, 6, "per_sample_weights");
    int64_t pad = (int64_t)dc_num(c, n, 8, "padding_idx", -1);
    const gr_value *v = &c->g->values[n->out];
    gr_ttype tw = dc_T(c, w), ti = dc_T(c, ix);
    if (tw.rank != 2 || ti.rank != 1 || dc_T(c, off).rank != 1 || v->ntuple != 4 || mode < 0 || mode > 2)
        dc_fail(c, "expects a 2-D weight, 1-D indices and offsets, mode 0, 1 or 2");
    for (int e = 1; e < 4; e++)
        if (dc_result_read(c, n, e))
            dc_fail(c, "result %d (offset2bag, bag_size, max_indices) is not lowered; only the bags are", e);
    if (psw >= 0 && mode != 0)
        dc_fail(c, "per_sample_weights need mode sum");
    int64_t N = ti.shape[0], B = v->tuple[0].shape[0], D = tw.shape[1];
    gr_ttype tr = {.dtype = tw.dtype, .rank = 2, .shape = {N, D}};
    int rows = DC_EMIT(c, "aten.embedding.default", tr, da_val(w), da_val(ix));
    if (psw >= 0)
        rows = dc_bin(c, "aten.mul.Tensor", rows, dc_unsqueeze(c, psw, 1));
    int keep = pad >= 0 ? not_padding(c, ix, tw, pad) : -1, mask, x;
    int64_t L = last ? 0 : fixed_bag(c, n, N, B), k = 1;
    if (L) {
        int64_t bags[3] = {B, L, D};
        x = dc_reshape(c, rows, 3, bags);
        mask = keep >= 0 ? dc_reshape(c, keep, 3, (int64_t[]){B, L, dc_T(c, keep).shape[1]}) : -1;
    } else {
        x = dc_unsqueeze(c, rows, 0);
        mask = dc_unsqueeze(c, bag_members(c, off, N, B, last), 2);
        if (keep >= 0)
            mask = dc_bin(c, "aten.logical_and.default", mask, dc_unsqueeze(c, keep, 0));
    }
    int count = mask >= 0 ? dc_red(c, "aten.sum.dim_IntList", dc_cast(c, mask, tw.dtype), 1, &k, 0) : -1;
    if (mode == 2) {
        int m = dc_red(c, "aten.amax.default", mask >= 0 ? dc_where_s(c, mask, x, -INFINITY, 0) : x, 1, &k, 0);
        out[0] = count >= 0 ? dc_where_s(c, dc_cmps(c, "aten.gt.Scalar", count, 0), m, 0, 0) : m;
    } else {
        out[0] = dc_red(c, "aten.sum.dim_IntList", mask >= 0 ? dc_where_s(c, mask, x, 0, 0) : x, 1, &k, 0);
        if (mode == 1)
            out[0] = count >= 0 ? dc_bin(c, "aten.div.Tensor", out[0], dc_bins(c, "aten.clamp_min.default", count, 1))
                                : dc_bins(c, "aten.div.Tensor", out[0], (double)L);
    }
    for (int e = 1; e < 4; e++) /* unread (checked above) */
        out[e] = dc_full(c, v->tuple[e].rank, v->tuple[e].shape, 0, v->tuple[e].dtype);
    return 4;
}
