/* ref_index.c: reference ops that read or write a tensor at computed places: flip, roll, diagonal, diag,
 * gather, take, index_select, index (advanced indexing), and the scatters: scatter (plain and reducing),
 * scatter_add, scatter_reduce, index_put, index_add, index_copy, index_fill, slice_scatter, select_scatter.
 *
 * Every op here first lists, per element it reads or writes, the offset
 * in self (an int64 array), then one gather or one scatter runs over that
 * list.  Values move exactly, so the bounds move with them; a place
 * computed from an index known only within a bound (an index tensor with
 * a positive bound) may be any place: the result's bounds in that track
 * are infinite (as embedding's).  A scatter's reduction follows its own rule: a sum's
 * (`sum` in docs/validation.md), a product's step by step, a mean's sum
 * then a division, amax / amin a selection's; a place written more than
 * once without reduction takes the last write (PyTorch's CPU order), and
 * its bound covers any of the writes: the largest write's bound plus a
 * jump of the spread of the written values. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Index tensors ---- */

/* The tracks in which an index tensor holds integers known exactly: bit
 * w for track w (a comparison's flip may show in track 1 only). */
static int idx_exact(const tens *ix)
{
    int bits = 3;
    for (int64_t k = 0; ix->eb[0] && k < ix->n; k++)
        for (int w = 0; w < 2; w++)
            if (ix->eb[w][k] > 0)
                bits &= ~(1 << w);
    return bits;
}

/* An index v into a dim of size n: wrapped when negative if wrap; -1
 * with a message when out of range. */
static int64_t idx_at(ex *E, int64_t v, int64_t n, int wrap)
{
    int64_t r = wrap && v < 0 ? v + n : v;
    if (r < 0 || r >= n) {
        ref_fail(E, "index %lld out of range for a dim of size %lld", (long long)v, (long long)n);
        return -1;
    }
    return r;
}

/* The offset in t (contiguous, right-aligned against a broadcast shape of
 * rank r) of the element at coordinates c of the broadcast shape. */
static int64_t bcast_off(const tens *t, int r, const int64_t *c)
{
    int64_t off = 0, st = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        int bd = d + r - t->rank;
        off += (t->shape[d] == 1 ? 0 : c[bd]) * st;
        st *= t->shape[d];
    }
    return off;
}

/* The next coordinates of a shape in row-major order. */
static void next_coord(int rank, const int64_t *shape, int64_t *c)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++c[d] < shape[d])
            return;
        c[d] = 0;
    }
}

/* ---- Gathering: out[k] = self[off[k]] ---- */

static int gather_result(ex *E, const tens *x, int rank, const int64_t *shape, const int64_t *off, int exact)
{
    tens *o = ref_new_result(E, kind_of(x->dtype), rank, shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++) {
        if (o->f)
            o->f[k] = x->f[off[k]];
        else
            o->i[k] = x->i[off[k]];
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = exact >> w & 1 ? (float)ldb(x, w, off[k]) : INFINITY;
    }
    return 0;
}

static int64_t *offsets(ex *E, int64_t n)
{
    int64_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p)
        ref_fail(E, "out of host memory");
    return p;
}

/* flip(self, dims) */
static int op_flip(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dims[MAXR], st[MAXR], off = 0;
    int cnt;
    if (!x || ref_arg_ints(E, 1, "dims", dims, &cnt, MAXR))
        return -1;
    ref_contiguous_strides(x->rank, x->shape, st);
    for (int i = 0; i < cnt; i++) {
        int d;
        if (ref_norm_dim(E, dims[i], x->rank, &d))
            return -1;
        if (x->rank && st[d] > 0 && x->shape[d] > 0) {
            off += (x->shape[d] - 1) * st[d];
            st[d] = -st[d];
        }
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, x->shape);
    if (!o)
        return -1;
    if (o->n)
        ref_strided_copy(x, x->rank, x->shape, st, off, o);
    return 0;
}

/* rot90(self, k=1, dims=[0, 1]): k quarter turns from dims[0] towards
 * dims[1], as PyTorch: flip dims[1] then transpose (k = 1), flip both
 * (k = 2), flip dims[0] then transpose (k = 3) */
static int op_rot90(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t k, dims[MAXR] = {0, 1}, st[MAXR], shape[MAXR], off = 0;
    int cnt, d[2];
    if (!x || ref_arg_int(E, 1, "k", 1, &k) || ref_arg_ints(E, 2, "dims", dims, &cnt, MAXR))
        return -1;
    if ((cnt >= 0 && cnt != 2) || x->rank < 2)
        return ref_fail(E, "rot90 takes two dims of a tensor of rank >= 2");
    if (ref_norm_dim(E, dims[0], x->rank, &d[0]) || ref_norm_dim(E, dims[1], x->rank, &d[1]))
        return -1;
    if (d[0] == d[1])
        return ref_fail(E, "rot90 of dims %d and %d", d[0], d[1]);
    ref_contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    k = ((k % 4) + 4) % 4;
    for (int i = 0; i < 2; i++)
        if ((k == 2 || k == (i ? 1 : 3)) && shape[d[i]] > 0) {
            off += (shape[d[i]] - 1) * st[d[i]];
            st[d[i]] = -st[d[i]];
        }
    if (k % 2) {
        int64_t t = shape[d[0]], u = st[d[0]];
        shape[d[0]] = shape[d[1]], st[d[0]] = st[d[1]];
        shape[d[1]] = t, st[d[1]] = u;
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (o && o->n)
        ref_strided_copy(x, x->rank, shape, st, off, o);
    return o ? 0 : -1;
}

/* unfold(self, dimension, size, step): the windows of size along dimension,
 * step apart, as a new last dim */
static int op_unfold(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim, size, step, st[MAXR], shape[MAXR], nst[MAXR];
    int d;
    if (!x || ref_arg_req_int(E, 1, "dimension", &dim) || ref_arg_req_int(E, 2, "size", &size) ||
        ref_arg_req_int(E, 3, "step", &step) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    int64_t n = x->rank ? x->shape[d] : 1;
    if (size < 0 || size > n || step < 1 || x->rank + 1 > MAXR)
        return ref_fail(E, "windows of %lld, step %lld, over a dim of %lld", (long long)size, (long long)step,
                        (long long)n);
    int r = x->rank;
    ref_contiguous_strides(r, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    memcpy(nst, st, sizeof nst);
    if (r) { /* a 0-d tensor is one window of its element (or none) */
        shape[d] = (n - size) / step + 1;
        nst[d] = st[d] * step;
    }
    shape[r] = size;
    nst[r] = r ? st[d] : 0;
    tens *o = ref_new_result(E, kind_of(x->dtype), r + 1, shape);
    if (o && o->n)
        ref_strided_copy(x, r + 1, shape, nst, 0, o);
    return o ? 0 : -1;
}

/* roll(self, shifts, dims=[]): without dims, of the flattened tensor */
static int op_roll(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t sh[MAXR], dims[MAXR], by[MAXR] = {0}, c[MAXR] = {0}, st[MAXR];
    int ns, nd;
    if (!x || ref_arg_ints(E, 1, "shifts", sh, &ns, MAXR) || ref_arg_ints(E, 2, "dims", dims, &nd, MAXR))
        return -1;
    if (nd <= 0 && ns != 1)
        return ref_fail(E, "roll without dims takes one shift");
    if (nd > 0 && ns != nd)
        return ref_fail(E, "%d shifts for %d dims", ns, nd);
    tens flat = *x;
    if (nd <= 0) {
        flat.rank = 1;
        flat.shape[0] = x->n;
        dims[0] = 0;
        nd = 1;
    }
    for (int i = 0; i < nd; i++) {
        int d;
        if (ref_norm_dim(E, dims[i], flat.rank, &d))
            return -1;
        int64_t n = flat.rank ? flat.shape[d] : 1;
        if (n)
            by[d] = ((by[d] + sh[i]) % n + n) % n;
    }
    int64_t *off = offsets(E, x->n);
    if (!off)
        return -1;
    ref_contiguous_strides(flat.rank, flat.shape, st);
    for (int64_t k = 0; k < x->n; k++, next_coord(flat.rank, flat.shape, c)) {
        off[k] = 0;
        for (int d = 0; d < flat.rank; d++)
            off[k] += ((c[d] - by[d] + flat.shape[d]) % flat.shape[d]) * st[d];
    }
    int rc = gather_result(E, x, x->rank, x->shape, off, 1);
    free(off);
    return rc;
}

/* The diagonal of dims d1, d2 of x at offset: its length, start and step. */
static int64_t diag_len(const tens *x, int d1, int d2, int64_t offset, const int64_t *st, int64_t *start,
                        int64_t *step)
{
    int64_t r0 = offset < 0 ? -offset : 0, c0 = offset > 0 ? offset : 0;
    int64_t n1 = x->shape[d1] - r0, n2 = x->shape[d2] - c0, n = n1 < n2 ? n1 : n2;
    *start = n > 0 ? r0 * st[d1] + c0 * st[d2] : 0;
    *step = st[d1] + st[d2];
    return n > 0 ? n : 0;
}

/* diagonal(self, offset=0, dim1=0, dim2=1): the other dims, then the diagonal */
static int op_diagonal(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t offset, a, b, st[MAXR], shape[MAXR], nst[MAXR], start, step;
    int d1, d2, r = 0;
    if (!x || ref_arg_int(E, 1, "offset", 0, &offset) || ref_arg_int(E, 2, "dim1", 0, &a) ||
        ref_arg_int(E, 3, "dim2", 1, &b))
        return -1;
    if (x->rank < 2)
        return ref_fail(E, "diagonal of a rank-%d tensor", x->rank);
    if (ref_norm_dim(E, a, x->rank, &d1) || ref_norm_dim(E, b, x->rank, &d2))
        return -1;
    if (d1 == d2)
        return ref_fail(E, "diagonal of dims %d and %d", d1, d2);
    ref_contiguous_strides(x->rank, x->shape, st);
    for (int d = 0; d < x->rank; d++)
        if (d != d1 && d != d2) {
            shape[r] = x->shape[d];
            nst[r++] = st[d];
        }
    shape[r] = diag_len(x, d1, d2, offset, st, &start, &step);
    nst[r++] = step;
    tens *o = ref_new_result(E, kind_of(x->dtype), r, shape);
    if (!o)
        return -1;
    if (o->n)
        ref_strided_copy(x, r, shape, nst, start, o);
    return 0;
}

/* diag(self, diagonal=0): a vector's matrix (zeros off the diagonal), or a matrix's diagonal */
static int op_diag(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t k, st[MAXR], start, step;
    if (!x || ref_arg_int(E, 1, "diagonal", 0, &k))
        return -1;
    if (x->rank == 2) {
        ref_contiguous_strides(2, x->shape, st);
        int64_t n = diag_len(x, 0, 1, k, st, &start, &step);
        tens *o = ref_new_result(E, kind_of(x->dtype), 1, &n);
        if (o && n)
            ref_strided_copy(x, 1, &n, &step, start, o);
        return o ? 0 : -1;
    }
    if (x->rank != 1)
        return ref_fail(E, "diag of a rank-%d tensor", x->rank);
    int64_t m = x->shape[0] + (k < 0 ? -k : k), shape[2] = {m, m};
    tens *o = ref_new_result(E, kind_of(x->dtype), 2, shape);
    if (!o)
        return -1;
    for (int64_t i = 0; i < x->shape[0]; i++) {
        int64_t dst = (k >= 0 ? i * m + i + k : (i - k) * m + i);
        if (o->f)
            o->f[dst] = x->f[i];
        else
            o->i[dst] = x->i[i];
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][dst] = (float)ldb(x, w, i);
    }
    return 0;
}

/* The offset in x (contiguous) of coordinates c (rank of x) with dim d at v. */
static int64_t off_with(const tens *x, const int64_t *c, int d, int64_t v)
{
    int64_t off = 0, st = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        off += (i == d ? v : c[i]) * st;
        st *= x->shape[i];
    }
    return off;
}

/* The places of x that index (same rank as x) picks along dim d, one per
 * element of index at its coordinates; the other dims of index may not
 * exceed x's (other). */
static int64_t *along_dim(ex *E, const tens *x0, const tens *ix, int d, const tens *other)
{
    tens xv = *x0; /* a rank-0 self is one element along dim 0 */
    const tens *x = &xv;
    if (!xv.rank) {
        xv.rank = 1;
        xv.shape[0] = 1;
    }
    if (kind_of(ix->dtype) != K_I) {
        ref_fail(E, "index is not an integer tensor");
        return NULL;
    }
    if (ix->rank != x->rank && ix->n && !(ix->rank <= 1 && x->rank == 1)) {
        ref_fail(E, "index has rank %d, self %d", ix->rank, x->rank);
        return NULL;
    }
    for (int i = 0; i < ix->rank; i++)
        if ((i != d && ix->shape[i] > x->shape[i]) || (other && other->rank && ix->shape[i] > other->shape[i])) {
            ref_fail(E, "index is larger than its tensors in dim %d", i);
            return NULL;
        }
    int64_t *off = offsets(E, ix->n), c[MAXR] = {0};
    for (int64_t k = 0; off && k < ix->n; k++, next_coord(ix->rank, ix->shape, c)) {
        int64_t v = idx_at(E, ix->i[k], x->rank ? x->shape[d] : 1, 0);
        if (v < 0) {
            free(off);
            return NULL;
        }
        off[k] = off_with(x, c, d, v);
    }
    return off;
}

/* gather(self, dim, index, sparse_grad=False) */
static int op_gather(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 2, "index") : NULL;
    int64_t dim;
    int d;
    if (!ix || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    int64_t *off = along_dim(E, x, ix, d, NULL);
    if (!off)
        return -1;
    int rc = gather_result(E, x, ix->rank, ix->shape, off, idx_exact(ix));
    free(off);
    return rc;
}

/* take(self, index): self flattened, negative indices wrapped */
static int op_take(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 1, "index") : NULL;
    if (!ix)
        return -1;
    if (kind_of(ix->dtype) != K_I)
        return ref_fail(E, "index is not an integer tensor");
    int64_t *off = offsets(E, ix->n);
    for (int64_t k = 0; off && k < ix->n; k++)
        if ((off[k] = idx_at(E, ix->i[k], x->n, 1)) < 0) {
            free(off);
            return -1;
        }
    int rc = off ? gather_result(E, x, ix->rank, ix->shape, off, idx_exact(ix)) : -1;
    free(off);
    return rc;
}

/* The places of x along dim d picked by a 1-D index (index_select, and
 * the scatters index_add / index_copy / index_fill): for each element of
 * x's shape with dim d of the index's length; a negative index counts
 * from the end if wrap (index_fill's alone: PyTorch refuses it in the
 * others). */
static int64_t *select_places(ex *E, const tens *x, int d, const tens *ix, int wrap, int64_t *shape)
{
    if (kind_of(ix->dtype) != K_I || ix->rank > 1) {
        ref_fail(E, "index is not a 1-D integer tensor");
        return NULL;
    }
    memcpy(shape, x->shape, sizeof(int64_t) * MAXR);
    if (x->rank)
        shape[d] = ix->n;
    int rank = x->rank, n1 = x->rank ? 0 : 1;
    int64_t m = ref_numel(rank, shape), c[MAXR] = {0};
    int64_t *off = offsets(E, m);
    for (int64_t k = 0; off && k < m; k++, next_coord(rank, shape, c)) {
        int64_t v = idx_at(E, ix->i[n1 ? 0 : c[d]], x->rank ? x->shape[d] : 1, wrap);
        if (v < 0) {
            free(off);
            return NULL;
        }
        off[k] = off_with(x, c, d, v);
    }
    return off;
}

/* index_select(self, dim, index) */
static int op_index_select(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 2, "index") : NULL;
    int64_t dim, shape[MAXR];
    int d;
    if (!ix || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    int64_t *off = select_places(E, x, d, ix, 0, shape);
    int rc = off ? gather_result(E, x, x->rank, shape, off, idx_exact(ix)) : -1;
    free(off);
    return rc;
}

/* ---- Advanced indexing: index(self, indices), index_put(self, indices, values, accumulate) ---- */

typedef struct {
    const tens *ix[MAXR]; /* per dim of self: its index tensor, or NULL (all of the dim) */
    int rank;             /* of the result */
    int64_t shape[MAXR];
    int brank, first, adjacent; /* the broadcast indices' rank, the first indexed dim, indexed dims adjacent */
    int64_t bshape[MAXR];
    int exact; /* bit w: the places are exact in track w */
    tens own[MAXR]; /* the integer indices a bool mask stands for */
    int nown;
} adv;

static void adv_free(adv *A)
{
    for (int i = 0; i < A->nown; i++)
        ref_tfree(&A->own[i]);
    A->nown = 0;
}

/* A bool mask m over dims xd .. xd + rank - 1 of x as the integer index
 * tensors of its true elements' coordinates (PyTorch's nonzero), one per dim. */
static int mask_indices(ex *E, const tens *x, const tens *m, int xd, adv *A)
{
    if (xd + m->rank > x->rank)
        return ref_fail(E, "a mask of rank %d from dim %d of a rank-%d tensor", m->rank, xd, x->rank);
    for (int i = 0; i < m->rank; i++)
        if (m->shape[i] != x->shape[xd + i])
            return ref_fail(E, "the mask's dim %d has size %lld, the tensor's %lld", i, (long long)m->shape[i],
                            (long long)x->shape[xd + i]);
    int64_t nnz = 0, c[MAXR] = {0};
    for (int64_t k = 0; k < m->n; k++)
        nnz += m->i[k] != 0;
    A->exact &= idx_exact(m);
    for (int i = 0; i < m->rank; i++, A->nown++) {
        if (ref_temp_tensor(E, &A->own[A->nown], K_I, 1, &nnz))
            return -1;
        A->ix[xd + i] = &A->own[A->nown];
    }
    for (int64_t k = 0, j = 0; k < m->n; k++, next_coord(m->rank, m->shape, c))
        if (m->i[k]) {
            for (int i = 0; i < m->rank; i++)
                A->own[A->nown - m->rank + i].i[j] = c[i];
            j++;
        }
    return 0;
}

/* Reads the indices list (None for a whole dim) and forms the result's shape. */
static int adv_plan(ex *E, const tens *x, adv *A)
{
    const gr_arg *a = ref_arg(E, 1, "indices");
    memset(A, 0, sizeof *A);
    A->exact = 3;
    A->first = -1;
    if (!a || a->kind != GR_ARG_LIST || a->nitems > x->rank)
        return ref_fail(E, "indices is not a list of at most %d tensors", x->rank);
    const tens *ts[MAXR];
    int nt = 0, last = -1;
    for (int i = 0, xd = 0; i < a->nitems; i++) {
        if (!ref_present(&a->items[i])) {
            xd++;
            continue;
        }
        const tens *t = ref_tensor_of(E, &a->items[i], "indices");
        if (!t)
            return -1;
        if (kind_of(t->dtype) == K_B) {
            if (mask_indices(E, x, t, xd, A))
                return -1;
        } else if (kind_of(t->dtype) != K_I) {
            return ref_fail(E, "index %d is not an integer or bool tensor", i);
        } else if (xd >= x->rank) {
            return ref_fail(E, "more indices than the tensor has dims");
        } else {
            A->ix[xd] = t;
            A->exact &= idx_exact(t);
        }
        for (int n = kind_of(t->dtype) == K_B ? t->rank : 1; n > 0; n--, xd++) {
            ts[nt++] = A->ix[xd];
            A->first = A->first < 0 ? xd : A->first;
            last = xd;
        }
    }
    if (!nt)
        return ref_fail(E, "indices holds no tensor");
    if (ref_bcast(E, nt, ts, &A->brank, A->bshape))
        return -1;
    A->adjacent = last - A->first + 1 == nt;
    int r = 0, at = A->adjacent ? A->first : 0;
    for (int d = 0; d <= x->rank; d++) {
        if (d == at)
            for (int i = 0; i < A->brank && r < MAXR; i++)
                A->shape[r++] = A->bshape[i];
        if (d < x->rank && !A->ix[d]) {
            if (r == MAXR)
                return ref_fail(E, "more than %d dimensions", MAXR);
            A->shape[r++] = x->shape[d];
        }
    }
    if (r != (A->brank + x->rank - nt))
        return ref_fail(E, "more than %d dimensions", MAXR);
    A->rank = r;
    return 0;
}

/* The place in x of each element of the result of adv_plan. */
static int64_t *adv_places(ex *E, const tens *x, const adv *A)
{
    int64_t m = ref_numel(A->rank, A->shape), c[MAXR] = {0}, st[MAXR];
    int64_t *off = offsets(E, m);
    ref_contiguous_strides(x->rank, x->shape, st);
    int at = A->adjacent ? A->first : 0;
    for (int64_t k = 0; off && k < m; k++, next_coord(A->rank, A->shape, c)) {
        int r = 0;
        const int64_t *bc = NULL;
        off[k] = 0;
        for (int d = 0; d <= x->rank; d++) {
            if (d == at) {
                bc = c + r;
                r += A->brank;
            }
            if (d < x->rank && !A->ix[d])
                off[k] += c[r++] * st[d];
        }
        for (int d = 0; d < x->rank; d++) {
            if (!A->ix[d])
                continue;
            int64_t v = idx_at(E, A->ix[d]->i[bcast_off(A->ix[d], A->brank, bc)], x->shape[d], 1);
            if (v < 0) {
                free(off);
                return NULL;
            }
            off[k] += v * st[d];
        }
    }
    return off;
}

/* index.Tensor(self, indices) */
static int op_index(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    adv A;
    if (!x)
        return -1;
    if (adv_plan(E, x, &A)) {
        adv_free(&A);
        return -1;
    }
    int64_t *off = adv_places(E, x, &A);
    int rc = off ? gather_result(E, x, A.rank, A.shape, off, A.exact) : -1;
    free(off);
    adv_free(&A);
    return rc;
}

/* ---- Scattering: out = self, then out[dst[k]] (op)= src[soff[k]] ---- */

enum { S_SET, S_SUM, S_PROD, S_MEAN, S_AMAX, S_AMIN };

typedef struct {
    int red, fresh; /* fresh: a place's first write replaces self (include_self=False) */
    double *v, *e[2], *aux[2]; /* per place: value, bound (a sum's P), aux: a sum's magnitude, S_SET's spread */
    double *lo, *hi;           /* S_SET: the written values' range */
    int64_t *cnt;
} scat;

/* The running bound of a place after one more term (value x, bound ex). */
static void scat_bound(scat *S, int64_t p, double old, double x, double ex, int w)
{
    double *e = &S->e[w][p];
    switch (S->red) {
    case S_SUM:
    case S_MEAN:
        *e += w ? ex * ex : ex;
        S->aux[w][p] += fabs(x) + ex;
        break;
    case S_PROD:
        *e = ref_eb_store(old * x, ref_eb_prod(old, *e, x, ex, w), w);
        break;
    default:
        *e = S->red == S_SET ? ex : fmax(*e, ex);
        S->aux[w][p] = fmax(S->aux[w][p], ex);
    }
}

static void scat_add(scat *S, int64_t p, double x, double ex0, double ex1)
{
    double old = S->v[p];
    int first = S->cnt[p] == 0 && (S->fresh || S->red == S_SET);
    if (first || S->red == S_SET)
        S->v[p] = x;
    else if (S->red == S_SUM || S->red == S_MEAN)
        S->v[p] += x;
    else if (S->red == S_PROD)
        S->v[p] *= x;
    else if (isnan(x) || (S->red == S_AMAX ? x > old : x < old))
        S->v[p] = isnan(old) ? old : x;
    if (S->red == S_SET) {
        S->lo[p] = S->cnt[p] ? fmin(S->lo[p], x) : x;
        S->hi[p] = S->cnt[p] ? fmax(S->hi[p], x) : x;
    }
    for (int w = 0; S->e[0] && w < 2; w++) {
        if (first) {
            S->e[w][p] = S->aux[w][p] = 0;
            old = 1;
        }
        if (first && (S->red == S_PROD || S->red == S_AMAX || S->red == S_AMIN))
            S->e[w][p] = w ? ex1 : ex0;
        else
            scat_bound(S, p, old, x, w ? ex1 : ex0, w);
    }
    S->cnt[p]++;
}

/* The bound of place p at the end. */
static double scat_final(const scat *S, int64_t p, kind k, int w)
{
    double e = S->e[w][p];
    if (S->red == S_SUM || S->red == S_MEAN) {
        double P = w ? sqrt(e) : e, n = (double)S->cnt[p] + !S->fresh;
        bv s = {S->v[p], k == K_F ? ref_eb_store(S->v[p], P + n * EB_ACC * S->aux[w][p], w) : P, w};
        if (S->red == S_MEAN && S->cnt[p] + !S->fresh > 1)
            s = ref_bv_div(s, ref_bv_k(n));
        return s.e;
    }
    if (S->red == S_SET && S->cnt[p] > 1 && S->hi[p] > S->lo[p])
        return S->aux[w][p] + ref_eb_jump((S->hi[p] - S->lo[p]) * (1 + EB_JUMP_MARGIN), w);
    return e;
}

static void scat_free(scat *S)
{
    free(S->v);
    free(S->cnt);
    free(S->lo);
    free(S->hi);
    for (int w = 0; w < 2; w++) {
        free(S->e[w]);
        free(S->aux[w]);
    }
}

/* self with the m values alpha src at soff[k] written to dst[k] (op red;
 * include_self; exact: bit w, the places are known exactly in track w); alpha != 1 is a
 * stored product. */
static int scatter(ex *E, const tens *x, const int64_t *dst, const tens *src, const int64_t *soff, int64_t m, int red,
                   int include_self, int exact, double alpha)
{
    size_t n = (size_t)(x->n ? x->n : 1);
    scat S = {red, !include_self, calloc(n, sizeof(double)), {0}, {0}, NULL, NULL, calloc(n, sizeof(int64_t))};
    int ok = S.v && S.cnt;
    if (red == S_SET) { /* both made, whichever fails: scat_free frees what is there */
        S.lo = calloc(n, sizeof(double));
        S.hi = calloc(n, sizeof(double));
        ok = ok && S.lo && S.hi;
    }
    for (int w = 0; E->bounds && w < 2; w++) {
        S.e[w] = calloc(n, sizeof(double));
        S.aux[w] = calloc(n, sizeof(double));
        ok = ok && S.e[w] && S.aux[w];
    }
    tens *o = ok ? ref_new_result(E, kind_of(x->dtype), x->rank, x->shape) : NULL;
    if (!o) {
        scat_free(&S);
        return ok ? -1 : ref_fail(E, "out of host memory");
    }
    for (int64_t p = 0; p < x->n; p++) {
        S.v[p] = ldd(x, p);
        for (int w = 0; S.e[0] && w < 2; w++) {
            double e = ldb(x, w, p);
            S.e[w][p] = (red == S_SUM || red == S_MEAN) && w ? e * e : e;
            S.aux[w][p] = red == S_SUM || red == S_MEAN ? fabs(S.v[p]) + e : e;
        }
    }
    for (int64_t k = 0; k < m; k++) {
        bv t[2];
        for (int w = 0; w < 2; w++) {
            t[w] = (bv){ldd(src, soff[k]), ldb(src, w, soff[k]), w};
            if (alpha != 1)
                t[w] = ref_bv_mul(t[w], ref_bv_k(alpha));
        }
        scat_add(&S, dst[k], t[0].v, t[0].e, t[1].e);
    }
    for (int64_t p = 0; p < x->n; p++) {
        double v = S.v[p];
        if (red == S_MEAN && S.cnt[p] + include_self > 1)
            v /= (double)(S.cnt[p] + include_self);
        if (o->f)
            o->f[p] = (float)v;
        else /* an integer mean rounds toward zero, as PyTorch's */
            o->i[p] = red == S_MEAN ? (int64_t)trunc(v) : (int64_t)v;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][p] = (float)(!(exact >> w & 1) ? INFINITY
                                  : S.cnt[p] ? scat_final(&S, p, kind_of(x->dtype), w) : ldb(x, w, p));
    }
    scat_free(&S);
    return 0;
}

/* The offsets 0 .. m-1 of a contiguous source, or all 0 for a scalar. */
static int64_t *src_offsets(ex *E, const tens *src, int64_t m)
{
    int64_t *p = offsets(E, m);
    for (int64_t k = 0; p && k < m; k++)
        p[k] = src->n == 1 ? 0 : k;
    return p;
}

/* The reduction named by a string argument (PyTorch's names). */
static int red_arg(ex *E, int pos, const char *key, int *red)
{
    static const struct {
        const char *name;
        int red;
    } names[] = {{"sum", S_SUM}, {"add", S_SUM}, {"prod", S_PROD}, {"multiply", S_PROD},
                 {"mean", S_MEAN}, {"amax", S_AMAX}, {"amin", S_AMIN}};
    const gr_arg *a = ref_arg(E, pos, key);
    *red = S_SET;
    if (!ref_present(a))
        return 0;
    for (size_t i = 0; a->kind == GR_ARG_STR && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(a->s, names[i].name) == 0) {
            *red = names[i].red;
            return 0;
        }
    return ref_fail(E, "unknown reduction for argument %s", key);
}

/* src's element at index's coordinates k (index no larger than src). */
static int64_t *src_at_index(ex *E, const tens *src, const tens *ix)
{
    int64_t *p = offsets(E, ix->n), c[MAXR] = {0};
    for (int64_t k = 0; p && k < ix->n; k++, next_coord(ix->rank, ix->shape, c))
        p[k] = src->n == 1 && src->rank == 0 ? 0 : off_with(src, c, -1, 0);
    return p;
}

enum { SC_SCATTER, SC_ADD, SC_REDUCE };

/* scatter.src / .value (self, dim, index, src|value), scatter.reduce / .value_reduce
 * (..., reduce), scatter_add(self, dim, index, src), scatter_reduce.two(self, dim,
 * index, src, reduce, *, include_self=True) */
static int op_scatter(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 2, "index") : NULL;
    int64_t dim;
    int d, red = how == SC_ADD ? S_SUM : S_SET, incl = 1;
    scalar_box box;
    if (!ix || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    const gr_arg *sa = ref_arg(E, 3, "src");
    const tens *src = ref_operand(E, ref_present(sa) ? sa : ref_arg(E, 3, "value"), "src", &box);
    if (!src || (how != SC_ADD && red_arg(E, 4, "reduce", &red)) || ref_arg_bool(E, -1, "include_self", 1, &incl))
        return -1;
    if (how == SC_REDUCE && red == S_SET)
        return ref_fail(E, "scatter_reduce without a reduction");
    if (src->rank && src->rank != ix->rank && !(src->rank <= 1 && ix->rank <= 1))
        return ref_fail(E, "src has rank %d, index %d", src->rank, ix->rank);
    int64_t *dst = along_dim(E, x, ix, d, src->rank ? src : NULL), *so = dst ? src_at_index(E, src, ix) : NULL;
    int rc = so ? scatter(E, x, dst, src, so, ix->n, red, incl, idx_exact(ix), 1) : -1;
    free(dst);
    free(so);
    return rc;
}

/* index_put(self, indices, values, accumulate=False): values broadcast to the indexed shape */
static int op_index_put(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *val = x ? ref_arg_tensor(E, 2, "values") : NULL;
    adv A;
    int acc;
    if (!val || ref_arg_bool(E, 3, "accumulate", 0, &acc))
        return -1;
    if (adv_plan(E, x, &A)) {
        adv_free(&A);
        return -1;
    }
    int fits = val->rank <= A.rank;
    for (int i = 0; fits && i < val->rank; i++)
        fits = val->shape[i] == 1 || val->shape[i] == A.shape[i + A.rank - val->rank];
    if (!fits) {
        adv_free(&A);
        return ref_fail(E, "values do not broadcast to the indexed shape");
    }
    int64_t m = ref_numel(A.rank, A.shape), c[MAXR] = {0};
    int64_t *dst = adv_places(E, x, &A), *so = dst ? offsets(E, m) : NULL;
    for (int64_t k = 0; so && k < m; k++, next_coord(A.rank, A.shape, c))
        so[k] = bcast_off(val, A.rank, c);
    int rc = so ? scatter(E, x, dst, val, so, m, acc ? S_SUM : S_SET, 1, A.exact, 1) : -1;
    free(dst);
    free(so);
    adv_free(&A);
    return rc;
}

enum { IX_ADD, IX_COPY, IX_FILL };

/* index_add(self, dim, index, source, *, alpha=1), index_copy(self, dim,
 * index, source), index_fill(self, dim, index, value) */
static int op_index_write(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 2, "index") : NULL;
    int64_t dim, shape[MAXR];
    int d;
    double alpha;
    scalar_box box;
    if (!ix || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d) ||
        ref_arg_num(E, -1, "alpha", 1, &alpha))
        return -1;
    const tens *src = ref_operand(E, ref_arg(E, 3, how == IX_FILL ? "value" : "source"), "source", &box);
    if (!src)
        return -1;
    int64_t *dst = select_places(E, x, d, ix, how == IX_FILL, shape), m = ref_numel(x->rank, shape);
    if (dst && how != IX_FILL && ref_numel(src->rank, src->shape) != m) {
        free(dst);
        return ref_fail(E, "source has %lld elements, the indexed places %lld", (long long)src->n, (long long)m);
    }
    int64_t *so = dst ? src_offsets(E, src, m) : NULL;
    int rc = so ? scatter(E, x, dst, src, so, m, how == IX_ADD ? S_SUM : S_SET, 1, idx_exact(ix), alpha) : -1;
    free(dst);
    free(so);
    return rc;
}

enum { SS_SLICE, SS_SELECT };

/* slice_scatter(self, src, dim=0, start=None, end=None, step=1),
 * select_scatter(self, src, dim, index): src written over that slice */
static int op_slice_scatter(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self"), *src = x ? ref_arg_tensor(E, 1, "src") : NULL;
    int64_t dim, start, end, step, st[MAXR], shape[MAXR], c[MAXR] = {0};
    int d;
    if (!src || ref_arg_int(E, 2, "dim", 0, &dim) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    if (x->rank == 0)
        return ref_fail(E, "%s of a rank-0 tensor", how == SS_SLICE ? "slice_scatter" : "select_scatter");
    int64_t n = x->shape[d];
    if (how == SS_SELECT) {
        if (ref_arg_req_int(E, 3, "index", &start) || (start = idx_at(E, start, n, 1)) < 0)
            return -1;
        end = start + 1;
        step = 1;
    } else if (ref_arg_int(E, 3, "start", 0, &start) || ref_arg_int(E, 4, "end", INT64_MAX, &end) ||
               ref_arg_int(E, 5, "step", 1, &step)) {
        return -1;
    }
    if (step < 1)
        return ref_fail(E, "step %lld", (long long)step);
    start = start < 0 ? (start + n < 0 ? 0 : start + n) : start > n ? n : start;
    end = end < 0 ? (end + n < 0 ? 0 : end + n) : end > n ? n : end;
    int64_t len = end > start ? (end - start + step - 1) / step : 0;
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = len;
    int64_t m = ref_numel(x->rank, shape);
    if (src->n != m)
        return ref_fail(E, "src has %lld elements, the slice %lld", (long long)src->n, (long long)m);
    ref_contiguous_strides(x->rank, x->shape, st);
    int64_t *dst = offsets(E, m), *so = dst ? src_offsets(E, src, m) : NULL;
    for (int64_t k = 0; so && k < m; k++, next_coord(x->rank, shape, c))
        dst[k] = off_with(x, c, d, start + c[d] * step);
    int rc = so ? scatter(E, x, dst, src, so, m, S_SET, 1, 3, 1) : -1;
    free(dst);
    free(so);
    return rc;
}

/* The places of the diagonal (offset) of dims d1, d2 of x: the other
 * dims in order, then along the diagonal; their count in *m. */
static int64_t *diag_places(ex *E, const tens *x, int d1, int d2, int64_t offset, int64_t *m)
{
    int64_t st[MAXR], shape[MAXR], nst[MAXR], start, step, c[MAXR] = {0};
    int r = 0;
    ref_contiguous_strides(x->rank, x->shape, st);
    for (int d = 0; d < x->rank; d++)
        if (d != d1 && d != d2) {
            shape[r] = x->shape[d];
            nst[r++] = st[d];
        }
    shape[r] = diag_len(x, d1, d2, offset, st, &start, &step);
    nst[r++] = step;
    *m = ref_numel(r, shape);
    int64_t *off = offsets(E, *m);
    for (int64_t k = 0; off && k < *m; k++, next_coord(r, shape, c)) {
        off[k] = start;
        for (int d = 0; d < r; d++)
            off[k] += c[d] * nst[d];
    }
    return off;
}

/* The diagonal's dims of an op (offset at pos, dims after it), normalised for rank. */
static int diag_dims(ex *E, int pos, int64_t def1, int64_t def2, int rank, int64_t *offset, int *d1, int *d2)
{
    int64_t a, b;
    if (ref_arg_int(E, pos, "offset", 0, offset) || ref_arg_int(E, pos + 1, "dim1", def1, &a) ||
        ref_arg_int(E, pos + 2, "dim2", def2, &b) || ref_norm_dim(E, a, rank, d1) || ref_norm_dim(E, b, rank, d2))
        return -1;
    return *d1 == *d2 ? ref_fail(E, "a diagonal of dims %d and %d", *d1, *d2) : 0;
}

/* diagonal_scatter(self, src, offset=0, dim1=0, dim2=1): src written over that diagonal */
static int op_diagonal_scatter(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *src = x ? ref_arg_tensor(E, 1, "src") : NULL;
    int64_t offset, m;
    int d1, d2;
    if (!src || x->rank < 2 || diag_dims(E, 2, 0, 1, x->rank, &offset, &d1, &d2))
        return src && x->rank < 2 ? ref_fail(E, "diagonal_scatter of a rank-%d tensor", x->rank) : -1;
    int64_t *dst = diag_places(E, x, d1, d2, offset, &m), *so = dst ? src_offsets(E, src, m) : NULL;
    if (so && src->n != m) {
        free(dst);
        free(so);
        return ref_fail(E, "src has %lld elements, the diagonal %lld", (long long)src->n, (long long)m);
    }
    int rc = so ? scatter(E, x, dst, src, so, m, S_SET, 1, 3, 1) : -1;
    free(dst);
    free(so);
    return rc;
}

/* diag_embed(self, offset=0, dim1=-2, dim2=-1): self's last dim as the
 * diagonal of two new dims, zeros elsewhere */
static int op_diag_embed(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t offset, shape[MAXR];
    int d1, d2, rank = x ? x->rank + 1 : 0;
    if (!x || rank > MAXR || x->rank < 1 || diag_dims(E, 1, -2, -1, rank, &offset, &d1, &d2))
        return x && (rank > MAXR || x->rank < 1) ? ref_fail(E, "diag_embed of a rank-%d tensor", x->rank) : -1;
    int64_t n = x->shape[x->rank - 1], len = n + (offset < 0 ? -offset : offset);
    for (int d = 0, j = 0; d < rank; d++)
        shape[d] = d == d1 || d == d2 ? len : x->shape[j++];
    tens *o = ref_new_result(E, kind_of(x->dtype), rank, shape);
    if (!o)
        return -1;
    int64_t m, *dst = diag_places(E, o, d1, d2, offset, &m);
    for (int64_t k = 0; dst && k < m && k < x->n; k++) { /* the diagonal in x's order */
        if (o->f)
            o->f[dst[k]] = x->f[k];
        else
            o->i[dst[k]] = x->i[k];
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][dst[k]] = (float)ldb(x, w, k);
    }
    free(dst);
    return dst ? 0 : -1;
}

/* masked_scatter(self, mask, source): source's elements in order into the
 * places where mask is true (self and mask broadcast together) */
static int op_masked_scatter(ex *E, int unused)
{
    (void)unused;
    const tens *x0 = ref_arg_tensor(E, 0, "self"), *mk = x0 ? ref_arg_tensor(E, 1, "mask") : NULL;
    const tens *src = mk ? ref_arg_tensor(E, 2, "source") : NULL;
    const tens *ts[2] = {x0, mk};
    int64_t shape[MAXR], st[MAXR] = {0}, c[MAXR] = {0};
    int rank;
    tens x;
    if (!src || ref_bcast(E, 2, ts, &rank, shape) || ref_temp_tensor(E, &x, kind_of(x0->dtype), rank, shape))
        return -1;
    for (int d = 0; d < x0->rank; d++) /* self expanded: stride 0 along a broadcast dim */
        st[d + rank - x0->rank] = x0->shape[d] == 1 ? 0 : ref_numel(x0->rank - d - 1, x0->shape + d + 1);
    if (x.n)
        ref_strided_copy(x0, rank, shape, st, 0, &x);
    int64_t m = 0, *dst = offsets(E, x.n), *so = dst ? offsets(E, x.n) : NULL;
    for (int64_t k = 0; so && k < x.n; k++, next_coord(rank, shape, c))
        if (ldd(mk, bcast_off(mk, rank, c)) != 0) {
            dst[m] = k;
            so[m] = m;
            m++;
        }
    int rc = !so ? -1 : m > src->n ? ref_fail(E, "the mask has %lld true places, source %lld elements", (long long)m,
                                               (long long)src->n)
                                   : scatter(E, &x, dst, src, so, m, S_SET, 1, idx_exact(mk), 1);
    free(dst);
    free(so);
    ref_tfree(&x);
    return rc;
}

/* ---- Rearrangements ---- */

enum { PS_SHUFFLE, PS_UNSHUFFLE };

/* pixel_shuffle(self, upscale_factor): [*, C r^2, H, W] -> [*, C, H r, W r];
 * pixel_unshuffle(self, downscale_factor): the inverse; one strided copy
 * over six dims (the leading ones folded) */
static int op_pixel_shuffle(ex *E, int how)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t r;
    if (!x || ref_arg_req_int(E, 1, how == PS_SHUFFLE ? "upscale_factor" : "downscale_factor", &r))
        return -1;
    int q = x->rank;
    if (q < 3 || r < 1)
        return ref_fail(E, "pixel shuffle of a rank-%d tensor by %lld", q, (long long)r);
    int64_t nb = ref_numel(q - 3, x->shape), C = x->shape[q - 3], H = x->shape[q - 2], W = x->shape[q - 1];
    if (how == PS_SHUFFLE ? C % (r * r) : H % r || W % r)
        return ref_fail(E, "sizes not divisible by %lld", (long long)r);
    int64_t shape[MAXR], sh6[6], st6[6];
    memcpy(shape, x->shape, sizeof shape);
    if (how == PS_SHUFFLE) { /* out (b, c, h, i, w, j) = in (b, c r^2 + i r + j, h, w) */
        int64_t c = C / (r * r);
        shape[q - 3] = c, shape[q - 2] = H * r, shape[q - 1] = W * r;
        int64_t s[6] = {C * H * W, r * r * H * W, W, r * H * W, 1, H * W}, z[6] = {nb, c, H, r, W, r};
        memcpy(st6, s, sizeof s), memcpy(sh6, z, sizeof z);
    } else { /* out (b, c, i, j, h, w) = in (b, c, h r + i, w r + j) */
        int64_t h = H / r, w = W / r;
        shape[q - 3] = C * r * r, shape[q - 2] = h, shape[q - 1] = w;
        int64_t s[6] = {C * H * W, H * W, W, 1, r * W, r}, z[6] = {nb, C, r, r, h, w};
        memcpy(st6, s, sizeof s), memcpy(sh6, z, sizeof z);
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), q, shape);
    if (o && o->n)
        ref_strided_copy(x, 6, sh6, st6, 0, o);
    return o ? 0 : -1;
}

/* narrow_copy(self, dim, start, length) */
static int op_narrow_copy(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t dim, start, len, st[MAXR], shape[MAXR];
    int d;
    if (!x || ref_arg_req_int(E, 1, "dim", &dim) || ref_arg_req_int(E, 2, "start", &start) ||
        ref_arg_req_int(E, 3, "length", &len) || ref_norm_dim(E, dim, x->rank, &d))
        return -1;
    int64_t n = x->rank ? x->shape[d] : 1;
    start = start < 0 ? start + n : start;
    if (x->rank == 0 || start < 0 || len < 0 || start + len > n)
        return ref_fail(E, "narrow of [%lld, +%lld) from a dim of %lld", (long long)start, (long long)len, (long long)n);
    ref_contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = len;
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (o && o->n)
        ref_strided_copy(x, x->rank, shape, st, start * st[d], o);
    return o ? 0 : -1;
}

/* The places of as_strided's view (size, stride, storage_offset at pos): its offsets, count in *m. */
static int64_t *strided_places(ex *E, const tens *x, int pos, int *rank, int64_t *size, int64_t *m)
{
    int64_t stride[MAXR], off, c[MAXR] = {0};
    int ns;
    if (ref_arg_ints(E, pos, "size", size, rank, MAXR) || ref_arg_ints(E, pos + 1, "stride", stride, &ns, MAXR) ||
        ref_arg_int(E, pos + 2, "storage_offset", 0, &off))
        return NULL;
    if (*rank < 0)
        *rank = 0;
    if (ns != *rank && !(ns < 0 && *rank == 0)) {
        ref_fail(E, "as_strided with %d sizes and %d strides", *rank, ns);
        return NULL;
    }
    *m = ref_numel(*rank, size);
    int64_t *p = offsets(E, *m);
    for (int64_t k = 0; p && k < *m; k++, next_coord(*rank, size, c)) {
        p[k] = off;
        for (int d = 0; d < *rank; d++)
            p[k] += c[d] * stride[d];
        if (p[k] < 0 || p[k] >= x->n) { /* the reference's tensors are contiguous: their storage is their data */
            ref_fail(E, "as_strided reaches element %lld of a tensor of %lld", (long long)p[k], (long long)x->n);
            free(p);
            return NULL;
        }
    }
    return p;
}

/* as_strided(self, size, stride, storage_offset=None): a copy of that view of self's elements */
static int op_as_strided(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int rank;
    int64_t size[MAXR], m, *p = x ? strided_places(E, x, 1, &rank, size, &m) : NULL;
    int rc = p ? gather_result(E, x, rank, size, p, 3) : -1;
    free(p);
    return rc;
}

/* as_strided_scatter(self, src, size, stride, storage_offset=None): src written over that view */
static int op_as_strided_scatter(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *src = x ? ref_arg_tensor(E, 1, "src") : NULL;
    int rank;
    int64_t size[MAXR], m, *p = src ? strided_places(E, x, 2, &rank, size, &m) : NULL;
    int64_t *so = p ? src_offsets(E, src, m) : NULL;
    int rc = !so ? -1 : src->n != m ? ref_fail(E, "src has %lld elements, the view %lld", (long long)src->n, (long long)m)
                                    : scatter(E, x, p, src, so, m, S_SET, 1, 3, 1);
    free(p);
    free(so);
    return rc;
}

/* block_diag(tensors): the 2-D blocks (a 1-D tensor is a row, a 0-d one 1 x 1) along the diagonal */
static int op_block_diag(ex *E, int unused)
{
    (void)unused;
    const gr_arg *a = ref_arg(E, 0, "tensors");
    if (!a || a->kind != GR_ARG_LIST)
        return ref_fail(E, "tensors is not a list of tensors");
    int64_t shape[2] = {0, 0};
    kind k = K_B;
    for (int i = 0; i < a->nitems; i++) {
        const tens *t = ref_tensor_of(E, &a->items[i], "tensors");
        if (!t)
            return -1;
        if (t->rank > 2)
            return ref_fail(E, "block_diag of a rank-%d tensor", t->rank);
        shape[0] += t->rank == 2 ? t->shape[0] : 1;
        shape[1] += t->rank == 2 ? t->shape[1] : t->rank == 1 ? t->shape[0] : 1;
        k = kind_of(t->dtype) > k ? kind_of(t->dtype) : k;
    }
    tens *o = ref_new_result(E, k, 2, shape);
    for (int i = 0, r0 = 0, c0 = 0; o && i < a->nitems; i++) {
        const tens *t = ref_tensor_of(E, &a->items[i], "tensors");
        int64_t rows = t->rank == 2 ? t->shape[0] : 1, cols = t->n / (rows ? rows : 1);
        for (int64_t j = 0; j < t->n; j++) {
            int64_t dst = (r0 + j / cols) * shape[1] + c0 + j % cols;
            if (o->f)
                o->f[dst] = ldf(t, j);
            else
                o->i[dst] = ldi(t, j);
            for (int w = 0; o->eb[0] && w < 2; w++)
                o->eb[w][dst] = (float)ref_convert_bound(t, j, k, w);
        }
        r0 += (int)rows, c0 += (int)(t->rank == 2 ? t->shape[1] : t->rank == 1 ? t->shape[0] : 1);
    }
    return o ? 0 : -1;
}

/* put(self, index, source, accumulate=False): source into self flattened at index (wrapped) */
static int op_put(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 1, "index") : NULL;
    const tens *src = ix ? ref_arg_tensor(E, 2, "source") : NULL;
    int acc;
    if (!src || ref_arg_bool(E, 3, "accumulate", 0, &acc))
        return -1;
    if (kind_of(ix->dtype) != K_I || ix->n != src->n)
        return ref_fail(E, "index is not an integer tensor of source's size");
    int64_t *dst = offsets(E, ix->n), *so = dst ? src_offsets(E, src, ix->n) : NULL;
    for (int64_t k = 0; so && k < ix->n; k++)
        if ((dst[k] = idx_at(E, ix->i[k], x->n, 1)) < 0) {
            free(dst);
            free(so);
            return -1;
        }
    int rc = so ? scatter(E, x, dst, src, so, ix->n, acc ? S_SUM : S_SET, 1, idx_exact(ix), 1) : -1;
    free(dst);
    free(so);
    return rc;
}

/* index_reduce(self, dim, index, source, reduce, *, include_self=True): prod, mean, amax or amin
 * of the source's slices into self's along dim */
static int op_index_reduce(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *ix = x ? ref_arg_tensor(E, 2, "index") : NULL;
    const tens *src = ix ? ref_arg_tensor(E, 3, "source") : NULL;
    int64_t dim, shape[MAXR];
    int d, red, incl;
    if (!src || ref_arg_req_int(E, 1, "dim", &dim) || ref_norm_dim(E, dim, x->rank, &d) ||
        red_arg(E, 4, "reduce", &red) || ref_arg_bool(E, -1, "include_self", 1, &incl))
        return -1;
    if (red == S_SET)
        return ref_fail(E, "index_reduce without a reduction");
    int64_t *dst = select_places(E, x, d, ix, 0, shape), m = ref_numel(x->rank, shape);
    if (dst && src->n != m) {
        free(dst);
        return ref_fail(E, "source has %lld elements, the indexed places %lld", (long long)src->n, (long long)m);
    }
    int64_t *so = dst ? src_offsets(E, src, m) : NULL;
    int rc = so ? scatter(E, x, dst, src, so, m, red, incl, idx_exact(ix), 1) : -1;
    free(dst);
    free(so);
    return rc;
}

static const ref_op ops[] = {
    {"flip", op_flip, 0},
    {"roll", op_roll, 0},
    {"rot90", op_rot90, 0},
    {"unfold", op_unfold, 0},                /* sliding windows as a new last dim */
    {"diagonal", op_diagonal, 0},
    {"diag", op_diag, 0},
    {"gather", op_gather, 0},                /* self[..., index[...], ...] along dim */
    {"take", op_take, 0},                    /* self.flatten()[index] */
    {"index_select", op_index_select, 0},
    {"index", op_index, 0},                  /* advanced indexing, integer index tensors */
    {"scatter", op_scatter, SC_SCATTER},     /* .src, .value, .reduce, .value_reduce */
    {"scatter_add", op_scatter, SC_ADD},
    {"scatter_reduce", op_scatter, SC_REDUCE}, /* sum, prod, mean, amax, amin; include_self */
    {"index_put", op_index_put, 0},          /* accumulate: a sum */
    {"index_add", op_index_write, IX_ADD},
    {"index_copy", op_index_write, IX_COPY},
    {"index_fill", op_index_write, IX_FILL},
    {"slice_scatter", op_slice_scatter, SS_SLICE},
    {"select_scatter", op_slice_scatter, SS_SELECT},
    {"diagonal_scatter", op_diagonal_scatter, 0},
    {"diag_embed", op_diag_embed, 0},
    {"masked_scatter", op_masked_scatter, 0},  /* mask's true places, in order */
    {"pixel_shuffle", op_pixel_shuffle, PS_SHUFFLE},
    {"pixel_unshuffle", op_pixel_shuffle, PS_UNSHUFFLE},
    {"narrow_copy", op_narrow_copy, 0},
    {"as_strided", op_as_strided, 0},        /* over self's elements as its storage */
    {"as_strided_scatter", op_as_strided_scatter, 0},
    {"block_diag", op_block_diag, 0},
    {"put", op_put, 0},                      /* self.flatten()[index] = source (accumulate: +=) */
    {"index_reduce", op_index_reduce, 0},    /* prod, mean, amax, amin; include_self */
};
const ref_ops ref_index_ops = REF_OPS(ops);
