/* ref_gather.c: reference ops that assemble pieces: cat, stack, split, chunk, unbind, getitem, repeat, embedding. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Pieces of x along dim d, of the given sizes, as results. */
static int split_results(ex *E, const tens *x, int d, const int64_t *sizes, int n)
{
    int64_t st[MAXR], shape[MAXR], off = 0;
    ref_contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    for (int i = 0; i < n; i++) {
        shape[d] = sizes[i];
        tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
        if (!o)
            return -1;
        ref_strided_copy(x, x->rank, shape, st, off * st[d], o);
        off += sizes[i];
    }
    return 0;
}

enum { SP_SIZE, SP_SIZES, SP_CHUNK, SP_UNBIND };

/* split(self, split_size, dim=0), split_with_sizes(self, split_sizes, dim=0),
 * chunk(self, chunks, dim=0), unbind(self, dim=0) */
static int op_split(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (x->rank == 0)
        return ref_fail(E, "split of a rank-0 tensor");
    int64_t dim = 0;
    int d = 0;
    if (ref_arg_int(E, how == SP_UNBIND ? 1 : 2, "dim", 0, &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    int64_t size = x->shape[d];
    int cap = 1024;
    int64_t *sizes = malloc((size_t)cap * sizeof *sizes);
    int n = 0, rc = -1;
    if (!sizes)
        return ref_fail(E, "out of host memory");
    if (how == SP_SIZES) {
        const gr_arg *a = ref_arg(E, 1, "split_sizes");
        if (!a || a->kind != GR_ARG_LIST || a->nitems > cap) {
            ref_fail(E, "split_sizes is not a list of integers");
            goto out;
        }
        int64_t sum = 0;
        for (int i = 0; i < a->nitems; i++) {
            if (a->items[i].kind != GR_ARG_INT || a->items[i].i < 0) {
                ref_fail(E, "split_sizes is not a list of integers >= 0");
                goto out;
            }
            sizes[n++] = a->items[i].i;
            sum += a->items[i].i;
        }
        if (sum != size) {
            ref_fail(E, "split_sizes add up to %lld, not the size %lld of dim %d", (long long)sum, (long long)size, d);
            goto out;
        }
    } else if (how == SP_UNBIND) {
        if (size > cap) {
            ref_fail(E, "unbind into more than %d tensors", cap);
            goto out;
        }
        for (n = 0; n < size; n++)
            sizes[n] = 1;
        int64_t st[MAXR], shape[MAXR], nst[MAXR];
        int r = ref_drop_dim(x, d, st, shape, nst);
        for (int i = 0; i < n; i++) {
            tens *o = ref_new_result(E, kind_of(x->dtype), r, shape);
            if (!o)
                goto out;
            ref_strided_copy(x, r, shape, nst, i * st[d], o);
        }
        rc = 0;
        goto out;
    } else {
        int64_t s;
        if (ref_arg_req_int(E, 1, how == SP_CHUNK ? "chunks" : "split_size", &s))
            goto out;
        if (how == SP_CHUNK) {
            if (s <= 0) {
                ref_fail(E, "chunks must be positive");
                goto out;
            }
            s = (size + s - 1) / s;
        }
        if (s < 0 || (s == 0 && size)) {
            ref_fail(E, "split_size %lld for a dim of size %lld", (long long)s, (long long)size);
            goto out;
        }
        if (s == 0)
            sizes[n++] = 0;
        for (int64_t at = 0; at < size; at = s < size - at ? at + s : size) {
            if (n == cap) {
                ref_fail(E, "split into more than %d tensors", cap);
                goto out;
            }
            sizes[n++] = s <= size - at ? s : size - at;
        }
    }
    rc = split_results(E, x, d, sizes, n);
out:
    free(sizes);
    return rc;
}

/* getitem(tuple, index) */
static int op_getitem(ex *E, int unused)
{
    (void)unused;
    const gr_arg *a = ref_arg(E, 0, NULL);
    int64_t idx;
    if (!a || a->kind != GR_ARG_VALUE)
        return ref_fail(E, "first argument is not a value");
    const gr_value *v = &E->g->values[a->value];
    slot *s = &E->vals[a->value];
    if (!v->ntuple)
        return ref_fail(E, "%%%s is not a tuple", v->name);
    if (ref_arg_req_int(E, 1, "index", &idx))
        return -1;
    if (idx < -s->nt || idx >= s->nt)
        return ref_fail(E, "index %lld out of range for a tuple of %d", (long long)idx, s->nt);
    if (idx < 0)
        idx += s->nt;
    const tens *x = &s->t[idx];
    return ref_result_reshaped(E, x, x->rank, x->shape);
}

/* cat(tensors, dim=0), stack(tensors, dim=0) */
static int op_cat(ex *E, int stack)
{
    const gr_arg *a = ref_arg(E, 0, "tensors");
    if (!a || a->kind != GR_ARG_LIST || a->nitems == 0)
        return ref_fail(E, "tensors is not a non-empty list of tensors");
    int n = a->nitems, m = 0;
    const tens **ts = malloc((size_t)n * sizeof *ts);
    if (!ts)
        return ref_fail(E, "out of host memory");
    int rc = -1;
    kind kr = K_B;
    for (int i = 0; i < n; i++) {
        if (!(ts[m] = ref_tensor_of(E, &a->items[i], "tensors")))
            goto out;
        if (kind_of(ts[m]->dtype) > kr)
            kr = kind_of(ts[m]->dtype);
        /* cat skips a 1-D empty tensor (legacy behaviour) */
        if (!stack && ts[m]->rank == 1 && ts[m]->n == 0)
            continue;
        m++;
    }
    if (m == 0) /* all of them empty 1-D */
        ts[m++] = ref_tensor_of(E, &a->items[0], "tensors");
    const tens *ref = ts[0];
    int rank = ref->rank + stack;
    int64_t dim = 0;
    int d = 0;
    if (ref_arg_int(E, 1, "dim", 0, &dim) || ref_norm_dim(E, dim, rank, &d))
        goto out;
    if (ref->rank == 0 && !stack) {
        ref_fail(E, "cat of rank-0 tensors");
        goto out;
    }
    if (rank > MAXR) {
        ref_fail(E, "more than %d dimensions", MAXR);
        goto out;
    }
    int64_t shape[MAXR];
    for (int i = 0, j = 0; i < rank; i++)
        shape[i] = stack && i == d ? m : ref->shape[j++];
    if (!stack)
        shape[d] = 0;
    for (int i = 0; i < m; i++) {
        const tens *t = ts[i];
        int same = t->rank == ref->rank;
        for (int k = 0; same && k < t->rank; k++)
            same = (!stack && k == d) || t->shape[k] == ref->shape[k];
        if (!same) {
            char s1[256], s2[256];
            ref_shape_str("", ref->rank, ref->shape, s1, sizeof s1);
            ref_shape_str("", t->rank, t->shape, s2, sizeof s2);
            ref_fail(E, "tensors of shapes %s and %s do not %s along dim %d", s1, s2, stack ? "stack" : "concatenate",
                     d);
            goto out;
        }
        if (!stack)
            shape[d] += t->shape[d];
    }
    tens *o = ref_new_result(E, kr, rank, shape);
    if (!o)
        goto out;
    int64_t outer = ref_numel(d, shape), inner = ref_numel(rank - d - 1, shape + d + 1), at = 0;
    for (int i = 0; i < m; i++) {
        const tens *t = ts[i];
        int64_t len = stack ? 1 : t->shape[d], blk = len * inner;
        for (int64_t q = 0; q < outer; q++)
            for (int64_t e = 0; e < blk; e++) {
                int64_t dst = (q * shape[d] + at) * inner + e, src = q * blk + e;
                if (kr == K_F)
                    o->f[dst] = ldf(t, src);
                else
                    o->i[dst] = ldi(t, src);
                for (int w = 0; o->eb[0] && w < 2; w++)
                    o->eb[w][dst] = (float)ref_convert_bound(t, src, kr, w);
            }
        at += len;
    }
    rc = 0;
out:
    free(ts);
    return rc;
}

/* repeat_interleave.Tensor(repeats): i repeated repeats[i] times, the
 * positions a repeat_interleave with tensor repeats selects. */
static int repeat_positions(ex *E)
{
    const tens *r = ref_arg_tensor(E, 0, "repeats");
    if (!r)
        return -1;
    if (r->rank != 1 || kind_of(r->dtype) != K_I)
        return ref_fail(E, "repeats must be a 1-D integer tensor");
    int64_t total = 0;
    for (int64_t i = 0; i < r->n; i++) {
        if (r->i[i] < 0 || r->i[i] > INT64_MAX - total)
            return ref_fail(E, "repeats[%lld] = %lld is negative or too large", (long long)i, (long long)r->i[i]);
        total += r->i[i];
    }
    tens *o = ref_new_result(E, K_I, 1, &total);
    if (!o)
        return -1;
    for (int64_t i = 0, j = 0; i < r->n; i++)
        for (int64_t k = 0; k < r->i[i]; k++)
            o->i[j++] = i;
    return 0;
}

/* repeat_interleave(self, repeats: int, dim=None, output_size=None) */
static int op_repeat_interleave(ex *E, int unused)
{
    (void)unused;
    if (E->node->nargs == 1)
        return repeat_positions(E);
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t rep = 0, dim = 0;
    if (!x || ref_arg_req_int(E, 1, "repeats", &rep) || ref_arg_int(E, 2, "dim", INT64_MIN, &dim))
        return -1;
    if (rep < 0)
        return ref_fail(E, "repeats must be >= 0");
    tens flat = *x;
    int d = 0;
    if (dim == INT64_MIN) { /* flattened */
        flat.rank = 1;
        flat.shape[0] = x->n;
        d = 0;
    } else if (ref_norm_dim(E, dim, x->rank, &d)) {
        return -1;
    }
    if (flat.rank == 0) {
        flat.rank = 1;
        flat.shape[0] = 1;
    }
    int64_t shape[MAXR];
    memcpy(shape, flat.shape, sizeof shape);
    if (rep && shape[d] > INT64_MAX / rep)
        return ref_fail(E, "repeats too large");
    shape[d] *= rep;
    tens *o = ref_new_result(E, kind_of(x->dtype), flat.rank, shape);
    if (!o)
        return -1;
    int64_t outer = ref_numel(d, flat.shape), inner = ref_numel(flat.rank - d - 1, flat.shape + d + 1),
            len = flat.shape[d];
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < len * rep; i++)
            for (int64_t e = 0; e < inner; e++) {
                int64_t dst = (q * len * rep + i) * inner + e, src = (q * len + i / rep) * inner + e;
                if (o->f)
                    o->f[dst] = x->f[src];
                else
                    o->i[dst] = x->i[src];
                for (int w = 0; o->eb[0] && w < 2; w++)
                    o->eb[w][dst] = (float)ldb(x, w, src);
            }
    return 0;
}

/* embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False) */
static int op_embedding(ex *E, int unused)
{
    (void)unused;
    const tens *w = ref_arg_tensor(E, 0, "weight");
    const tens *ix = w ? ref_arg_tensor(E, 1, "indices") : NULL;
    if (!ix)
        return -1;
    if (w->rank != 2)
        return ref_fail(E, "weight has rank %d (2 expected)", w->rank);
    if (kind_of(ix->dtype) != K_I)
        return ref_fail(E, "indices are not an integer tensor");
    if (ix->rank + 1 > MAXR)
        return ref_fail(E, "more than %d dimensions", MAXR);
    int64_t shape[MAXR], V = w->shape[0], D = w->shape[1];
    memcpy(shape, ix->shape, (size_t)ix->rank * sizeof *shape);
    shape[ix->rank] = D;
    for (int64_t k = 0; k < ix->n; k++)
        if (ix->i[k] < 0 || ix->i[k] >= V)
            return ref_fail(E, "index %lld (element %lld of the indices) out of range [0, %lld)", (long long)ix->i[k],
                            (long long)k, (long long)V);
    tens *o = ref_new_result(E, kind_of(w->dtype), ix->rank + 1, shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < ix->n; k++)
        for (int64_t j = 0; j < D; j++) {
            if (o->f)
                o->f[k * D + j] = w->f[ix->i[k] * D + j];
            else
                o->i[k * D + j] = w->i[ix->i[k] * D + j];
            for (int t = 0; o->eb[0] && t < 2; t++) /* a row picked by an index known only within a bound: any row */
                o->eb[t][k * D + j] = (float)(ldb(ix, t, k) > 0 ? INFINITY : ldb(w, t, ix->i[k] * D + j));
        }
    return 0;
}

/* repeat(self, repeats): the tensor tiled repeats[d] times along each dim
 * (leading repeats add dims). */
static int op_repeat(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t rep[MAXR];
    int cnt;
    if (!x || ref_arg_ints(E, 1, "repeats", rep, &cnt, MAXR))
        return -1;
    if (cnt < x->rank)
        return ref_fail(E, "repeats has fewer entries than the tensor has dims");
    int64_t xs[MAXR], shape[MAXR];
    for (int d = 0; d < cnt; d++) {
        int od = d - (cnt - x->rank);
        xs[d] = od < 0 ? 1 : x->shape[od];
        if (rep[d] < 0)
            return ref_fail(E, "negative repeat %lld", (long long)rep[d]);
        if (rep[d] && xs[d] > INT64_MAX / rep[d] / 2)
            return ref_fail(E, "repeats too large");
        shape[d] = xs[d] * rep[d];
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), cnt, shape);
    if (!o)
        return -1;
    int64_t st[MAXR], idx[MAXR] = {0};
    ref_contiguous_strides(cnt, xs, st);
    for (int64_t k = 0; k < o->n; k++) {
        int64_t off = 0;
        for (int d = 0; d < cnt; d++)
            off += (idx[d] % xs[d]) * st[d];
        if (o->f)
            o->f[k] = x->f[off];
        else
            o->i[k] = x->i[off];
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)ldb(x, w, off);
        for (int d = cnt - 1; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}

static const ref_op ops[] = {
    {"split", op_split, SP_SIZE},
    {"split_with_sizes", op_split, SP_SIZES},
    {"chunk", op_split, SP_CHUNK},
    {"unbind", op_split, SP_UNBIND},
    {"getitem", op_getitem, 0},
    {"cat", op_cat, 0},
    {"stack", op_cat, 1},
    {"repeat_interleave", op_repeat_interleave, 0},
    {"repeat", op_repeat, 0},            /* tile */
    {"embedding", op_embedding, 0},      /* weight[indices] */
};
const ref_ops ref_gather_ops = REF_OPS(ops);
