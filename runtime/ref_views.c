/* ref_views.c: reference ops: views as copies (view, reshape, permute, transpose, expand, slice, squeeze). */
#include "ref_internal.h"

#include <string.h>

/* view(self, size), _unsafe_view, reshape(self, shape): one -1 inferred. */
static int op_view(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t sz[MAXR + 1];
    int cnt;
    if (ref_arg_ints(E, 1, strcmp(E->node->base, "reshape") == 0 ? "shape" : "size", sz, &cnt, MAXR))
        return -1;
    if (cnt < 0)
        return ref_fail(E, "missing argument size");
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < cnt; i++) {
        if (sz[i] == -1) {
            if (infer >= 0)
                return ref_fail(E, "more than one -1 in the size");
            infer = i;
        } else if (sz[i] < 0) {
            return ref_fail(E, "negative size %lld", (long long)sz[i]);
        } else {
            if (sz[i] && known > INT64_MAX / sz[i])
                return ref_fail(E, "size too large");
            known *= sz[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || x->n % known)
            return ref_fail(E, "cannot infer the -1 of a view of %lld elements", (long long)x->n);
        sz[infer] = x->n / known;
        known = x->n;
    }
    if (known != x->n) {
        char xs[256], ss[256];
        ref_shape_str("", x->rank, x->shape, xs, sizeof xs);
        ref_shape_str("", cnt, sz, ss, sizeof ss);
        return ref_fail(E, "a view of shape %s as %s changes the number of elements", xs, ss);
    }
    return ref_result_reshaped(E, x, cnt, sz);
}

/* permute(self, dims) */
static int op_permute(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dims[MAXR];
    int cnt;
    if (ref_arg_ints(E, 1, "dims", dims, &cnt, MAXR))
        return -1;
    if (cnt != x->rank)
        return ref_fail(E, "dims has %d entries for a rank-%d tensor", cnt < 0 ? 0 : cnt, x->rank);
    int64_t st[MAXR], nst[MAXR], shape[MAXR];
    int seen[MAXR] = {0};
    ref_contiguous_strides(x->rank, x->shape, st);
    for (int i = 0; i < cnt; i++) {
        int d = 0;
        if (ref_norm_dim(E, dims[i], x->rank, &d))
            return -1;
        if (seen[d]++)
            return ref_fail(E, "dims is not a permutation");
        shape[i] = x->shape[d];
        nst[i] = st[d];
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    ref_strided_copy(x, x->rank, shape, nst, 0, o);
    return 0;
}

static int transpose_result(ex *E, const tens *x, int d0, int d1)
{
    int64_t st[MAXR], shape[MAXR];
    ref_contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    int64_t t = shape[d0];
    shape[d0] = shape[d1];
    shape[d1] = t;
    t = st[d0];
    st[d0] = st[d1];
    st[d1] = t;
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    ref_strided_copy(x, x->rank, shape, st, 0, o);
    return 0;
}

/* transpose(self, dim0, dim1), t(self) */
static int op_transpose(ex *E, int is_t)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (is_t) {
        if (x->rank > 2)
            return ref_fail(E, "t() of a rank-%d tensor (at most 2)", x->rank);
        if (x->rank < 2)
            return ref_result_reshaped(E, x, x->rank, x->shape);
        return transpose_result(E, x, 0, 1);
    }
    int64_t a = 0, b = 0;
    int d0 = 0, d1 = 0;
    if (ref_arg_req_int(E, 1, "dim0", &a) || ref_arg_req_int(E, 2, "dim1", &b) || ref_norm_dim(E, a, x->rank, &d0) ||
        ref_norm_dim(E, b, x->rank, &d1))
        return -1;
    if (x->rank == 0)
        return ref_result_reshaped(E, x, 0, x->shape);
    return transpose_result(E, x, d0, d1);
}

/* expand(self, size, implicit=False), expand_as(self, other) */
static int op_expand(ex *E, int as)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t sz[MAXR];
    int cnt;
    if (as) {
        const tens *other = ref_arg_tensor(E, 1, "other");
        if (!other)
            return -1;
        cnt = other->rank;
        memcpy(sz, other->shape, sizeof sz);
    } else if (ref_arg_ints(E, 1, "size", sz, &cnt, MAXR)) {
        return -1;
    }
    if (cnt < x->rank)
        return ref_fail(E, "expand to %d dims of a rank-%d tensor", cnt < 0 ? 0 : cnt, x->rank);
    int64_t st[MAXR], nst[MAXR];
    ref_contiguous_strides(x->rank, x->shape, st);
    for (int d = 0; d < cnt; d++) {
        int od = d - (cnt - x->rank);
        if (od < 0) {
            if (sz[d] < 0)
                return ref_fail(E, "size -1 for a new leading dimension");
            nst[d] = 0;
            continue;
        }
        if (sz[d] == -1)
            sz[d] = x->shape[od];
        if (x->shape[od] == sz[d]) {
            nst[d] = st[od];
        } else if (x->shape[od] == 1 && sz[d] >= 0) {
            nst[d] = 0;
        } else {
            return ref_fail(E, "cannot expand dim %d of size %lld to %lld", od, (long long)x->shape[od],
                            (long long)sz[d]);
        }
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), cnt, sz);
    if (!o)
        return -1;
    ref_strided_copy(x, cnt, sz, nst, 0, o);
    return 0;
}

/* slice(self, dim=0, start=None, end=None, step=1) */
static int op_slice(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dim = 0, step = 1, start = 0, end = 0;
    int d = 0;
    if (ref_arg_int(E, 1, "dim", 0, &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    if (x->rank == 0)
        return ref_fail(E, "slice of a rank-0 tensor");
    int64_t size = x->shape[d];
    if (ref_arg_int(E, 2, "start", 0, &start) || ref_arg_int(E, 3, "end", INT64_MAX, &end) ||
        ref_arg_int(E, 4, "step", 1, &step))
        return -1;
    if (step <= 0)
        return ref_fail(E, "slice step %lld must be positive", (long long)step);
    if (start < 0)
        start = start < -size ? 0 : start + size;
    if (end < 0)
        end = end < -size ? 0 : end + size;
    if (start > size)
        start = size;
    if (end > size)
        end = size;
    if (step > size) /* the same slice, without overflow below */
        step = size ? size : 1;
    int64_t len = end > start ? (end - start + step - 1) / step : 0;
    int64_t st[MAXR], shape[MAXR];
    ref_contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = len;
    int64_t off = start * st[d];
    st[d] *= step;
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    if (len)
        ref_strided_copy(x, x->rank, shape, st, off, o);
    return 0;
}

/* select(self, dim, index) */
/* narrow(self, dim, start, length): a slice of length elements from
 * start. */
static int op_narrow(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim = 0, start = 0, len = 0;
    int d = 0;
    if (!x || ref_arg_int(E, 1, "dim", 0, &dim) || ref_norm_dim(E, dim, x->rank, &d) ||
        ref_arg_int(E, 2, "start", 0, &start) || ref_arg_int(E, 3, "length", 0, &len))
        return -1;
    if (x->rank == 0)
        return ref_fail(E, "narrow of a rank-0 tensor");
    if (start < 0)
        start += x->shape[d];
    if (start < 0 || len < 0 || start + len > x->shape[d])
        return ref_fail(E, "start %lld and length %lld are out of range for size %lld", (long long)start,
                        (long long)len, (long long)x->shape[d]);
    int64_t st[MAXR], shape[MAXR];
    ref_contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = len;
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    if (len)
        ref_strided_copy(x, x->rank, shape, st, start * st[d], o);
    return 0;
}

static int op_select(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dim = 0, index = 0;
    int d = 0;
    if (ref_arg_req_int(E, 1, "dim", &dim) || ref_arg_req_int(E, 2, "index", &index) ||
        ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    if (x->rank == 0)
        return ref_fail(E, "select of a rank-0 tensor");
    int64_t size = x->shape[d];
    if (index < -size || index >= size)
        return ref_fail(E, "index %lld out of range for dim %d of size %lld", (long long)index, d, (long long)size);
    if (index < 0)
        index += size;
    int64_t st[MAXR], shape[MAXR], nst[MAXR];
    int r = ref_drop_dim(x, d, st, shape, nst);
    tens *o = ref_new_result(E, kind_of(x->dtype), r, shape);
    if (!o)
        return -1;
    ref_strided_copy(x, r, shape, nst, index * st[d], o);
    return 0;
}

/* unsqueeze(self, dim) */
static int op_unsqueeze(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim = 0;
    int d = 0;
    if (!x || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank + 1, &d))
        return -1;
    if (x->rank == MAXR)
        return ref_fail(E, "more than %d dimensions", MAXR);
    int64_t shape[MAXR];
    for (int i = 0, j = 0; i <= x->rank; i++)
        shape[i] = i == d ? 1 : x->shape[j++];
    return ref_result_reshaped(E, x, x->rank + 1, shape);
}

/* squeeze(self), squeeze.dim(self, dim), squeeze.dims(self, dim) */
static int op_squeeze(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dims[MAXR];
    int cnt;
    if (ref_arg_ints(E, 1, "dim", dims, &cnt, MAXR))
        return -1;
    char drop[MAXR] = {0};
    if (cnt < 0) {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->shape[i] == 1;
    } else {
        for (int i = 0; i < cnt; i++) {
            int d = 0;
            if (ref_norm_dim(E, dims[i], x->rank, &d))
                return -1;
            if (x->rank)
                drop[d] = x->shape[d] == 1;
        }
    }
    int64_t shape[MAXR];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            shape[r++] = x->shape[i];
    return ref_result_reshaped(E, x, r, shape);
}

enum { RS_FLATTEN, RS_UNFLATTEN, RS_AS };

/* flatten(self, start_dim=0, end_dim=-1), unflatten(self, dim, sizes),
 * view_as / reshape_as(self, other): reshapes */
static int op_reshape_like(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t shape[MAXR + MAXR];
    int rank = 0;
    if (how == RS_AS) {
        const tens *o = ref_arg_tensor(E, 1, "other");
        if (!o)
            return -1;
        if (o->n != x->n)
            return ref_fail(E, "other has %lld elements, self %lld", (long long)o->n, (long long)x->n);
        return ref_result_reshaped(E, x, o->rank, o->shape);
    }
    if (how == RS_FLATTEN) {
        int64_t a = 0, b = 0;
        int s = 0, e = 0;
        if (ref_arg_int(E, 1, "start_dim", 0, &a) || ref_arg_int(E, 2, "end_dim", -1, &b) ||
            ref_norm_dim(E, a, x->rank, &s) || ref_norm_dim(E, b, x->rank, &e))
            return -1;
        if (x->rank == 0)
            return ref_result_reshaped(E, x, 1, (int64_t[]){1});
        if (s > e)
            return ref_fail(E, "start_dim after end_dim");
        for (int d = 0; d < s; d++)
            shape[rank++] = x->shape[d];
        shape[rank++] = ref_numel(e - s + 1, x->shape + s);
        for (int d = e + 1; d < x->rank; d++)
            shape[rank++] = x->shape[d];
        return ref_result_reshaped(E, x, rank, shape);
    }
    int64_t dim = 0, sz[MAXR];
    int d = 0, cnt;
    if (ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d) ||
        ref_arg_ints(E, 2, "sizes", sz, &cnt, MAXR))
        return -1;
    if (cnt < 1 || x->rank - 1 + cnt > MAXR)
        return ref_fail(E, "sizes must have 1 to %d entries", MAXR - x->rank + 1);
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < cnt; i++) {
        if (sz[i] == -1 && infer < 0)
            infer = i;
        else if (sz[i] < 0)
            return ref_fail(E, "bad size %lld", (long long)sz[i]);
        else
            known = ref_sat_mul(known, sz[i]);
    }
    if (infer >= 0)
        sz[infer] = known ? x->shape[d] / known : 0;
    if (ref_numel(cnt, sz) != x->shape[d])
        return ref_fail(E, "sizes do not multiply to the size %lld of dim %d", (long long)x->shape[d], d);
    for (int i = 0; i < d; i++)
        shape[rank++] = x->shape[i];
    for (int i = 0; i < cnt; i++)
        shape[rank++] = sz[i];
    for (int i = d + 1; i < x->rank; i++)
        shape[rank++] = x->shape[i];
    return ref_result_reshaped(E, x, rank, shape);
}

static const ref_op ops[] = {
    /* views */
    {"view", op_view, 0},
    {"_unsafe_view", op_view, 0},
    {"reshape", op_view, 0},
    {"flatten", op_reshape_like, RS_FLATTEN},
    {"unflatten", op_reshape_like, RS_UNFLATTEN},
    {"view_as", op_reshape_like, RS_AS},
    {"reshape_as", op_reshape_like, RS_AS},
    {"_reshape_alias", op_view, 0},      /* (self, size, stride): the stride describes PyTorch's storage,
                                            which a contiguous copy does not have: a reshape */
    {"permute", op_permute, 0},
    {"transpose", op_transpose, 0},
    {"t", op_transpose, 1},
    {"expand", op_expand, 0},
    {"expand_as", op_expand, 1},
    {"slice", op_slice, 0},              /* dim, start, end, step (clamped as Python does) */
    {"narrow", op_narrow, 0},            /* dim, start, length (narrow_copy: ref_index.c) */
    {"select", op_select, 0},
    {"unsqueeze", op_unsqueeze, 0},
    {"squeeze", op_squeeze, 0},          /* all size-1 dims, one dim, or a list */
};
const ref_ops ref_views_ops = REF_OPS(ops);
