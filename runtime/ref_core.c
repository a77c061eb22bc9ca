/* ref_core.c: the reference executor's tensors: results checked against the declared type, errors, broadcasting. */
#include "ref_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>

/* ---- Tensors ---- */

void ref_tfree(tens *t)
{
    free(t->f);
    free(t->i);
    free(t->fview);
    free(t->eb[0]);
    free(t->eb[1]);
    memset(t, 0, sizeof *t);
}

void ref_slot_free(slot *s)
{
    for (int i = 0; i < s->nt; i++)
        ref_tfree(&s->t[i]);
    free(s->t);
    s->t = NULL;
    s->nt = 0;
}

/* a * b for sizes (>= 0), INT64_MAX when it overflows */
int64_t ref_sat_mul(int64_t a, int64_t b) { return a && b > INT64_MAX / a ? INT64_MAX : a * b; }

/* Elements of a shape (sizes >= 0), INT64_MAX when they overflow. */
int64_t ref_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n = ref_sat_mul(n, shape[i]);
    return n;
}

/* "f32[2, 3]" (dtype may be "") */
void ref_shape_str(const char *dtype, int rank, const int64_t *shape, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%s[", dtype);
    for (int i = 0; i < rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

void ref_contiguous_strides(int rank, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

int ref_drop_dim(const tens *x, int d, int64_t *st, int64_t *shape, int64_t *nst)
{
    ref_contiguous_strides(x->rank, x->shape, st);
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != d) {
            shape[r] = x->shape[i];
            nst[r++] = st[i];
        }
    return r;
}

/* ---- Errors ---- */

int ref_fail(ex *E, const char *fmt, ...)
{
    const gr_node *n = E->node;
    if (n)
        isa_errf(E->err, E->errlen, "%s:%d: %s: ", E->g->path, n->line, n->op);
    else
        isa_errf(E->err, E->errlen, "%s: ", E->g->path);
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(E->err, E->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The declared type of result idx of the current node. */
static const gr_ttype *declared(ex *E, int idx)
{
    const gr_value *v = &E->g->values[E->node->out];
    if (v->ntuple)
        return idx < v->ntuple ? &v->tuple[idx] : NULL;
    return idx == 0 ? &v->type : NULL;
}

/* The next result of the current node, of kind k and the given shape:
 * checked against the declared type, then allocated (zeroed). */
tens *ref_new_result(ex *E, kind k, int rank, const int64_t *shape)
{
    int idx = E->nres;
    const gr_ttype *d = declared(E, idx);
    const gr_value *v = &E->g->values[E->node->out];
    if (!d) {
        ref_fail(E, "declares %d result%s but the op computes more", v->ntuple ? v->ntuple : 1,
                 v->ntuple > 1 ? "s" : "");
        return NULL;
    }
    int same = d->rank == rank && kind_of(d->dtype) == k;
    for (int i = 0; same && i < rank; i++)
        same = d->shape[i] == shape[i];
    if (!same) {
        char ds[256], cs[256];
        gr_ttype_str(d, ds, sizeof ds);
        ref_shape_str(kind_of(d->dtype) == k ? gr_dtype_names[d->dtype] : gr_dtype_names[dtype_of(k)], rank, shape, cs,
                      sizeof cs);
        if (v->ntuple)
            ref_fail(E, "result %d declared %s but computes %s", idx, ds, cs);
        else
            ref_fail(E, "declared %s but computes %s", ds, cs);
        return NULL;
    }
    if (E->nres == E->capres) {
        int cap = E->capres ? 2 * E->capres : 8;
        tens *nr = realloc(E->res, (size_t)cap * sizeof *nr);
        if (!nr) {
            ref_fail(E, "out of host memory");
            return NULL;
        }
        E->res = nr;
        E->capres = cap;
    }
    tens *t = &E->res[E->nres];
    if (ref_temp_tensor(E, t, k, rank, shape))
        return NULL;
    t->dtype = d->dtype; /* the declared one: f16 and f32 are one kind */
    E->nres++;
    return t;
}

/* A temporary tensor (not a result), zeroed; NULL with a message. */
int ref_temp_tensor(ex *E, tens *t, kind k, int rank, const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype_of(k);
    t->rank = rank;
    memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    t->n = ref_numel(rank, shape);
    size_t n = t->n ? (size_t)t->n : 1;
    if (k == K_F)
        t->f = calloc(n, sizeof *t->f);
    else
        t->i = calloc(n, sizeof *t->i);
    for (int w = 0; E->bounds && w < 2; w++)
        t->eb[w] = calloc(n, sizeof *t->eb[w]);
    if ((!t->f && !t->i) || (E->bounds && (!t->eb[0] || !t->eb[1]))) {
        ref_tfree(t);
        return ref_fail(E, "out of host memory for %lld elements", (long long)ref_numel(rank, shape));
    }
    return 0;
}

/* ---- Iteration over broadcast operands ---- */

/* Operand j has rank[j] and shape[j] right-aligned against the iteration
 * shape; a dimension of size 1 is broadcast (stride 0). */
void ref_iter_init(iter *it, int rank, const int64_t *shape, int nop, const int *ranks, const int64_t *const *shapes)
{
    memset(it, 0, sizeof *it);
    it->rank = rank;
    it->nop = nop;
    memcpy(it->shape, shape, (size_t)rank * sizeof *shape);
    for (int j = 0; j < nop; j++) {
        int64_t cs[MAXR];
        ref_contiguous_strides(ranks[j], shapes[j], cs);
        for (int d = 0; d < rank; d++) {
            int od = d - (rank - ranks[j]);
            it->st[j][d] = od < 0 || shapes[j][od] == 1 ? 0 : cs[od];
        }
    }
}

void ref_iter_tensors(iter *it, int rank, const int64_t *shape, int nop, const tens *const *ts)
{
    int ranks[4];
    const int64_t *shapes[4];
    for (int j = 0; j < nop; j++) {
        ranks[j] = ts[j]->rank;
        shapes[j] = ts[j]->shape;
    }
    ref_iter_init(it, rank, shape, nop, ranks, shapes);
}

/* The broadcast shape of k tensors. */
int ref_bcast(ex *E, int k, const tens *const *ts, int *rank, int64_t *shape)
{
    int r = 0;
    for (int j = 0; j < k; j++)
        if (ts[j]->rank > r)
            r = ts[j]->rank;
    for (int d = 0; d < r; d++) {
        int64_t s = 1;
        for (int j = 0; j < k; j++) {
            int od = d - (r - ts[j]->rank);
            if (od < 0)
                continue;
            int64_t x = ts[j]->shape[od];
            if (x == 1)
                continue;
            if (s != 1 && s != x) {
                char a[256], b[256];
                ref_shape_str("", ts[0]->rank, ts[0]->shape, a, sizeof a);
                ref_shape_str("", ts[j]->rank, ts[j]->shape, b, sizeof b);
                return ref_fail(E, "shapes %s and %s do not broadcast", a, b);
            }
            s = x;
        }
        shape[d] = s;
    }
    *rank = r;
    return 0;
}

/* out[k] = x at a strided view (shape, strides, offset) of x's data. */
void ref_strided_copy(const tens *x, int rank, const int64_t *shape, const int64_t *strides, int64_t offset, tens *out)
{
    int64_t n = ref_numel(rank, shape), idx[MAXR] = {0}, off = offset;
    for (int64_t k = 0; k < n; k++) {
        if (out->f)
            out->f[k] = ldf(x, off);
        else
            out->i[k] = ldi(x, off);
        for (int w = 0; out->eb[0] && w < 2; w++)
            out->eb[w][k] = (float)ldb(x, w, off);
        for (int d = rank - 1; d >= 0; d--) {
            idx[d]++;
            off += strides[d];
            if (idx[d] < shape[d])
                break;
            off -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/* A result that is x (same data) with another shape. */
int ref_result_reshaped(ex *E, const tens *x, int rank, const int64_t *shape)
{
    tens *o = ref_new_result(E, kind_of(x->dtype), rank, shape);
    if (!o)
        return -1;
    if (o->f)
        memcpy(o->f, x->f, (size_t)x->n * sizeof *o->f);
    else
        memcpy(o->i, x->i, (size_t)x->n * sizeof *o->i);
    for (int w = 0; o->eb[0] && x->eb[0] && w < 2; w++)
        memcpy(o->eb[w], x->eb[w], (size_t)x->n * sizeof *o->eb[w]);
    return 0;
}

/* The bound of element j of x converted to kind k: an integer becomes a
 * DL16 float (exact up to 1024); a float truncated to an integer moves as
 * far as trunc moves over its interval; a test against zero may flip. */
double ref_convert_bound(const tens *x, int64_t j, kind k, int w)
{
    double v = ldd(x, j), e = ldb(x, w, j), le = ref_eb_lam(w) * e;
    kind kx = kind_of(x->dtype);
    if (k == K_B)
        return ref_eb_flips(v, e, w) ? ref_eb_jump(1, w) : 0;
    if (k == K_F)
        return kx == K_F ? e : e + ref_eb_const(v);
    if (kx != K_F || e == 0)
        return e;
    return fmax(fabs(trunc(v + le) - trunc(v)), fabs(trunc(v - le) - trunc(v))) / ref_eb_lam(w);
}

/* A result converted to kind k (float -> integer truncates, -> bool is != 0). */
int ref_result_as(ex *E, const tens *x, kind k, int rank, const int64_t *shape)
{
    tens *o = ref_new_result(E, k, rank, shape);
    if (!o)
        return -1;
    for (int64_t j = 0; j < x->n; j++) {
        if (k == K_F)
            o->f[j] = ldf(x, j);
        else if (k == K_B)
            o->i[j] = x->f ? x->f[j] != 0 : x->i[j] != 0;
        else
            o->i[j] = ldi(x, j);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][j] = (float)ref_convert_bound(x, j, k, w);
    }
    return 0;
}

/* The batch count and the last two dims of x (rank >= 2). */
int ref_mats_of(ex *E, const tens *x, int64_t *batch, int64_t *r, int64_t *c)
{
    if (x->rank < 2)
        return ref_fail(E, "a matrix op on a rank-%d tensor", x->rank);
    *r = x->shape[x->rank - 2];
    *c = x->shape[x->rank - 1];
    *batch = ref_numel(x->rank - 2, x->shape);
    if (*r > 4096 || *c > 4096)
        return ref_fail(E, "matrices of %lld x %lld are beyond the reference's 4096", (long long)*r, (long long)*c);
    return 0;
}
