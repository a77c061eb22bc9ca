/* reference.c: the reference executor (rt.h, "Reference executor").
 *
 * A graph runs as written, one node at a time, in the topological order
 * the parser gives.  Each value holds one tensor, or a tuple of them
 * (multi-output ops).  A tensor is row-major and contiguous; its kind is
 * float (fp32 data), integer (int64 data) or bool (int64 0 / 1), whatever
 * the float or integer dtype it stands for.  Views (transpose, slice,
 * expand, ...) are copies made by one strided gather.
 *
 * An op is a row of the table at the end: its base name ("add" for
 * aten.add.Tensor), the function that runs it and a code the function
 * switches on.  A function reads its arguments as the schema says
 * (positional or keyword), computes the result's shape and kind, and asks
 * new_result for the tensor: new_result compares shape and kind with the
 * declared type before anything is allocated, so a wrong declaration is
 * reported as such and never sizes a buffer.
 *
 * Broadcasting and type promotion follow PyTorch for these ops, at the
 * level of kinds: bool < integer < float, the result of arithmetic is the
 * highest kind of its operands (a Python float scalar makes an integer
 * tensor float), true division and the transcendental functions make
 * floats, comparisons make bools.
 *
 * Error bounds (rt_ref_track_errors): every tensor then also carries eb[2],
 * per element two bounds on |device value - reference value| (the worst
 * case, and the probabilistic scale) for a device that stores every value
 * of the decomposed graph in DL16.  Each op computes its result's bounds
 * from its arguments' values and bounds (the rules are in the section
 * "Error bounds" below and derived in docs/validation.md); views and copies
 * move the bounds with the values.  The bounds never change a value. */
#include "rt_internal.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR CC_MAX_RANK

typedef enum { K_B, K_I, K_F } kind; /* ordered for promotion */

static kind kind_of(cc_dtype d)
{
    return d == CC_BOOL ? K_B : d == CC_I64 || d == CC_I32 ? K_I : K_F;
}
static cc_dtype dtype_of(kind k) { return k == K_B ? CC_BOOL : k == K_I ? CC_I64 : CC_F32; }

typedef struct {
    cc_dtype dtype;
    int rank;
    int64_t shape[MAXR];
    int64_t n;
    float *f;     /* K_F */
    int64_t *i;   /* K_I, K_B */
    float *fview; /* fp32 copy of i, made on request */
    float *eb[2]; /* error bounds per element (tracking on), else NULL: worst case, probabilistic scale */
} tens;

typedef struct {
    tens *t; /* nt tensors: 1 for a tensor value, the tuple's size otherwise */
    int nt;
} slot;

struct rt_ref {
    const cc_graph *g;
    slot *vals;    /* per value */
    char *keep;    /* per value: survives the run */
    int *last_use; /* per value: last node that reads it, -1 */
    /* the node being run, and its results */
    const cc_node *node;
    tens *res;
    int nres, capres;
    char *err;
    size_t errlen;
    int bounds; /* propagate error bounds (rt_ref_track_errors) */
};

typedef rt_ref ex;

/* ---- Tensors ---- */

static void tfree(tens *t)
{
    free(t->f);
    free(t->i);
    free(t->fview);
    free(t->eb[0]);
    free(t->eb[1]);
    memset(t, 0, sizeof *t);
}

static void slot_free(slot *s)
{
    for (int i = 0; i < s->nt; i++)
        tfree(&s->t[i]);
    free(s->t);
    s->t = NULL;
    s->nt = 0;
}

/* a * b for sizes (>= 0), INT64_MAX when it overflows */
static int64_t sat_mul(int64_t a, int64_t b) { return a && b > INT64_MAX / a ? INT64_MAX : a * b; }

/* Elements of a shape (sizes >= 0), INT64_MAX when they overflow. */
static int64_t numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n = sat_mul(n, shape[i]);
    return n;
}

/* "f32[2, 3]" (dtype may be "") */
static void shape_str(const char *dtype, int rank, const int64_t *shape, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%s[", dtype);
    for (int i = 0; i < rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

static void contiguous_strides(int rank, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

static inline float ldf(const tens *t, int64_t k) { return t->f ? t->f[k] : (float)t->i[k]; }
static inline int64_t ldi(const tens *t, int64_t k) { return t->i ? t->i[k] : (int64_t)t->f[k]; }
static inline double ldd(const tens *t, int64_t k) { return t->f ? (double)t->f[k] : (double)t->i[k]; }
/* Error bound track w of element k (0 without bounds). */
static inline double ldb(const tens *t, int w, int64_t k) { return t->eb[w] ? (double)t->eb[w][k] : 0; }

/* ---- Error bounds: the element rules (docs/validation.md, "Error bounds") ----
 * The device's value of every stored tensor is the reference value plus an
 * error.  Two bounds of its magnitude are carried, per element, in two
 * tracks that follow the same rules:
 *
 * - track 0, the worst case: every error at its largest and of the worst
 *   sign, so the errors of the terms of a sum add up;
 * - track 1, the probabilistic scale S: rounding errors are independent
 *   and of mean zero, so the errors of the terms of a sum add in quadrature
 *   (root-sum-square); the error exceeds EB_LAMBDA S with probability at
 *   most 2 exp(-EB_LAMBDA^2 / 2) (Hoeffding).  A nonlinear function is
 *   followed over EB_LAMBDA times the bound, and its swing scaled back.
 *
 * A rule takes its arguments' reference values and bounds and gives the
 * result's: the propagated part (how far the exact op moves when its
 * arguments move within their bounds, at the reference values) plus the
 * op's own rounding when the device stores the result.  An infinite
 * reference value is exact by convention: the device holds a stand-in
 * (+-2^30) that saturates the same way. */

#define EB_U 0x1p-10            /* DL16 unit roundoff */
#define EB_RHO (EB_U + 0x1p-21) /* one SFP result: fp32 evaluation (4 fp32 ulps), then DL16 */
#define EB_FLUSH 0x1p-31        /* DL16 flushes smaller magnitudes to zero */
#define EB_ACC 0x1p-23          /* an fp32 sum, per term: twice the first-order 2^-24 */
#define EB_LAMBDA RT_REF_LAMBDA /* track 1: the bound is EB_LAMBDA S */
#define EB_JUMP_MARGIN 0x1p-20  /* a flip's jump, widened to survive fp32 storage of bounds */

/* How far track w follows a nonlinear function: 1 or EB_LAMBDA. */
static double eb_lam(int w) { return w ? EB_LAMBDA : 1; }

/* The bound (track w) of a value v computed with propagated error prop
 * and then stored with relative rounding rel: the rounding of a magnitude
 * up to |v| + prop, or the flush to zero of one below 2^-31, added to prop
 * (track 0), or in quadrature (track 1: a new rounding is independent of
 * every earlier one). */
static double eb_round(double v, double prop, double rel, int w)
{
    if (isinf(v))
        return 0;
    double hi = fabs(v) + eb_lam(w) * prop, r = rel * hi;
    if (fabs(v) - eb_lam(w) * prop < EB_FLUSH && fmin(hi, EB_FLUSH) > r)
        r = fmin(hi, EB_FLUSH);
    return w ? sqrt(prop * prop + r * r) : prop + r;
}

/* A result of one SFP operation, stored in DL16. */
static double eb_store(double v, double prop, int w) { return eb_round(v, prop, EB_RHO, w); }

/* A graph input or parameter: rounded to DL16 once, when uploaded. */
static double eb_leaf(double x) { return eb_round(x, 0, EB_U, 0); }

/* The device's copy of constant c: an fp32 immediate here, DL16 on a chip
 * that keeps constants so; the larger of the two rounding errors. */
static double eb_const(double c)
{
    if (!isfinite(c))
        return 0;
    float f = (float)c;
    double d = fabs((double)isa_dl16_round(f) - c);
    return fmax(fabs((double)f - c), isnan(d) ? 0 : d);
}

/* x y for a factor x and a bound y (or two bounds) where a zero factor
 * is exact: 0 times an infinite bound is 0, not NaN (an exact zero times
 * anything the device holds is exactly zero). */
static double eb_mul0(double x, double y) { return x == 0 || y == 0 ? 0 : x * y; }

/* |a~ b~ - a b| for |a~ - a| <= ea, |b~ - b| <= eb (track w). */
static double eb_prod(double a, double ea, double b, double eb, int w)
{
    return eb_mul0(fabs(b), ea) + eb_mul0(fabs(a), eb) + eb_mul0(eb_lam(w) * ea, eb);
}

/* |a~ / b~ - a / b|; unbounded when b~ may be 0. */
static double eb_quot(double a, double ea, double b, double eb, int w)
{
    double lb = eb_lam(w) * eb;
    if (!(fabs(b) > lb))
        return INFINITY;
    return ((ea ? ea * fabs(b) : 0) + (eb ? fabs(a) * eb : 0)) / (fabs(b) * (fabs(b) - lb));
}

/* A comparison or a test against zero whose outcome may differ on the
 * device: its operands' bounds reach across the threshold. */
static int eb_flips(double d, double e, int w) { return e > 0 && fabs(d) <= eb_lam(w) * e; }

/* The bound of a jump of size j (a bool that may flip: 1): in track 1
 * scaled so that EB_LAMBDA times it is the jump. */
static double eb_jump(double j, int w) { return j / eb_lam(w); }

/* A value, its bound and the bound's track, for rules written as the
 * device's sequence of operations (composite ops: GELU, layer norm, ...). */
typedef struct {
    double v, e;
    int w;
} bv;

static int bv_w(bv a, bv b) { return a.w > b.w ? a.w : b.w; }
static bv bv_k(double c) { return (bv){c, eb_const(c), 0}; }
static bv bv_add(bv a, bv b)
{
    int w = bv_w(a, b);
    return (bv){a.v + b.v, eb_store(a.v + b.v, a.e + b.e, w), w};
}
static bv bv_sub(bv a, bv b)
{
    int w = bv_w(a, b);
    return (bv){a.v - b.v, eb_store(a.v - b.v, a.e + b.e, w), w};
}
static bv bv_mul(bv a, bv b)
{
    int w = bv_w(a, b);
    return (bv){a.v * b.v, eb_store(a.v * b.v, eb_prod(a.v, a.e, b.v, b.e, w), w), w};
}
/* a / b: a divide, or a reciprocal and a multiply: two roundings */
static bv bv_div(bv a, bv b)
{
    int w = bv_w(a, b);
    double v = a.v / b.v;
    return (bv){v, eb_store(v, eb_store(v, eb_quot(a.v, a.e, b.v, b.e, w), w), w), w};
}

/* A sum over elements accumulated in fp32 and stored (sfp.rsum): the
 * terms' bounds add (track 0) or add in quadrature (track 1), and the fp32
 * accumulation adds n 2^-23 sum (|term| + bound). */
typedef struct {
    double s, p, mag;
    int64_t n;
    int w;
} eb_acc;

static void acc_add(eb_acc *a, double v, double e)
{
    a->s += v;
    a->p += a->w ? e * e : e;
    a->mag += fabs(v) + e;
    a->n++;
}

static bv acc_sum(const eb_acc *a)
{
    double p = a->w ? sqrt(a->p) : a->p;
    return (bv){a->s, eb_store(a->s, p + (double)a->n * EB_ACC * a->mag, a->w), a->w};
}

/* ---- Errors ---- */

static int fail(ex *E, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(ex *E, const char *fmt, ...)
{
    if (!E->err || !E->errlen)
        return -1;
    const cc_node *n = E->node;
    int o = n ? snprintf(E->err, E->errlen, "%s:%d: %s: ", E->g->path, n->line, n->op)
              : snprintf(E->err, E->errlen, "%s: ", E->g->path);
    if (o < 0 || (size_t)o >= E->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(E->err + o, E->errlen - (size_t)o, fmt, ap);
    va_end(ap);
    return -1;
}

/* The declared type of result idx of the current node. */
static const cc_ttype *declared(ex *E, int idx)
{
    const cc_value *v = &E->g->values[E->node->out];
    if (v->ntuple)
        return idx < v->ntuple ? &v->tuple[idx] : NULL;
    return idx == 0 ? &v->type : NULL;
}

/* The next result of the current node, of kind k and the given shape:
 * checked against the declared type, then allocated (zeroed). */
static tens *new_result(ex *E, kind k, int rank, const int64_t *shape)
{
    int idx = E->nres;
    const cc_ttype *d = declared(E, idx);
    const cc_value *v = &E->g->values[E->node->out];
    if (!d) {
        fail(E, "declares %d result%s but the op computes more", v->ntuple ? v->ntuple : 1,
             v->ntuple > 1 ? "s" : "");
        return NULL;
    }
    int same = d->rank == rank && kind_of(d->dtype) == k;
    for (int i = 0; same && i < rank; i++)
        same = d->shape[i] == shape[i];
    if (!same) {
        char ds[256], cs[256];
        cc_ttype_str(d, ds, sizeof ds);
        shape_str(kind_of(d->dtype) == k ? cc_dtype_names[d->dtype] : cc_dtype_names[dtype_of(k)], rank, shape, cs,
                  sizeof cs);
        if (v->ntuple)
            fail(E, "result %d declared %s but computes %s", idx, ds, cs);
        else
            fail(E, "declared %s but computes %s", ds, cs);
        return NULL;
    }
    if (E->nres == E->capres) {
        int cap = E->capres ? 2 * E->capres : 8;
        tens *nr = realloc(E->res, (size_t)cap * sizeof *nr);
        if (!nr) {
            fail(E, "out of host memory");
            return NULL;
        }
        E->res = nr;
        E->capres = cap;
    }
    tens *t = &E->res[E->nres];
    memset(t, 0, sizeof *t);
    t->dtype = d->dtype;
    t->rank = rank;
    memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    t->n = numel(rank, shape);
    size_t n = t->n ? (size_t)t->n : 1;
    if (k == K_F)
        t->f = calloc(n, sizeof *t->f);
    else
        t->i = calloc(n, sizeof *t->i);
    for (int w = 0; E->bounds && w < 2; w++)
        t->eb[w] = calloc(n, sizeof *t->eb[w]);
    if ((!t->f && !t->i) || (E->bounds && (!t->eb[0] || !t->eb[1]))) {
        tfree(t);
        fail(E, "out of host memory for %lld elements", (long long)numel(rank, shape));
        return NULL;
    }
    E->nres++;
    return t;
}

/* A temporary tensor (not a result), zeroed; NULL with a message. */
static int temp_tensor(ex *E, tens *t, kind k, int rank, const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype_of(k);
    t->rank = rank;
    memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    t->n = numel(rank, shape);
    size_t n = t->n ? (size_t)t->n : 1;
    if (k == K_F)
        t->f = calloc(n, sizeof *t->f);
    else
        t->i = calloc(n, sizeof *t->i);
    for (int w = 0; E->bounds && w < 2; w++)
        t->eb[w] = calloc(n, sizeof *t->eb[w]);
    if ((!t->f && !t->i) || (E->bounds && (!t->eb[0] || !t->eb[1]))) {
        tfree(t);
        return fail(E, "out of host memory for %lld elements", (long long)numel(rank, shape));
    }
    return 0;
}

/* ---- Arguments ---- */

/* The overload of an op: "Tensor" in aten.add.Tensor, "default" when absent. */
static const char *overload(const cc_node *n)
{
    const char *d1 = strchr(n->op, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    return d2 ? d2 + 1 : "default";
}

static const cc_arg *A(ex *E, int pos, const char *key) { return cc_node_arg(E->node, pos, key); }

static int present(const cc_arg *a) { return a && a->kind != CC_ARG_NONE; }

/* A value argument holding one tensor. */
static const tens *tensor_of(ex *E, const cc_arg *a, const char *what)
{
    if (!a) {
        fail(E, "missing argument %s", what);
        return NULL;
    }
    if (a->kind != CC_ARG_VALUE) {
        fail(E, "argument %s is not a tensor", what);
        return NULL;
    }
    const cc_value *v = &E->g->values[a->value];
    slot *s = &E->vals[a->value];
    if (v->ntuple) {
        fail(E, "argument %s: %%%s is a tuple (take an element with getitem)", what, v->name);
        return NULL;
    }
    if (s->nt != 1) {
        fail(E, "argument %s: %%%s has no value", what, v->name);
        return NULL;
    }
    return &s->t[0];
}

static const tens *arg_tensor(ex *E, int pos, const char *key)
{
    return tensor_of(E, A(E, pos, key), key);
}

/* An integer argument; def when absent or None. */
static int arg_int(ex *E, int pos, const char *key, int64_t def, int64_t *v)
{
    const cc_arg *a = A(E, pos, key);
    if (!present(a)) {
        *v = def;
        return 0;
    }
    if (a->kind == CC_ARG_INT || a->kind == CC_ARG_BOOL) {
        *v = a->i;
        return 0;
    }
    return fail(E, "argument %s is not an integer", key);
}

static int arg_req_int(ex *E, int pos, const char *key, int64_t *v)
{
    if (!present(A(E, pos, key)))
        return fail(E, "missing argument %s", key);
    return arg_int(E, pos, key, 0, v);
}

static int arg_bool(ex *E, int pos, const char *key, int def, int *v)
{
    const cc_arg *a = A(E, pos, key);
    if (!present(a)) {
        *v = def;
        return 0;
    }
    if (a->kind == CC_ARG_BOOL || a->kind == CC_ARG_INT) {
        *v = a->i != 0;
        return 0;
    }
    return fail(E, "argument %s is not a bool", key);
}

/* A number (int, float or bool argument): its value and kind. */
static int num_of(ex *E, const cc_arg *a, const char *what, double *v, kind *k)
{
    if (!a)
        return fail(E, "missing argument %s", what);
    switch (a->kind) {
    case CC_ARG_INT:
        *v = (double)a->i;
        *k = K_I;
        return 0;
    case CC_ARG_BOOL:
        *v = (double)a->i;
        *k = K_B;
        return 0;
    case CC_ARG_FLOAT:
        *v = a->f;
        *k = K_F;
        return 0;
    default:
        return fail(E, "argument %s is not a number", what);
    }
}

static int arg_num(ex *E, int pos, const char *key, double def, double *v)
{
    const cc_arg *a = A(E, pos, key);
    kind k;
    if (!present(a)) {
        *v = def;
        return 0;
    }
    return num_of(E, a, key, v, &k);
}

/* A list of integers (a single integer is a list of one).  *cnt = -1 when
 * absent or None. */
static int arg_ints(ex *E, int pos, const char *key, int64_t *out, int *cnt, int max)
{
    const cc_arg *a = A(E, pos, key);
    *cnt = -1;
    if (!present(a))
        return 0;
    if (a->kind == CC_ARG_INT) {
        out[0] = a->i;
        *cnt = 1;
        return 0;
    }
    if (a->kind != CC_ARG_LIST)
        return fail(E, "argument %s is not a list of integers", key);
    if (a->nitems > max)
        return fail(E, "argument %s has more than %d entries", key, max);
    for (int i = 0; i < a->nitems; i++) {
        if (a->items[i].kind != CC_ARG_INT)
            return fail(E, "argument %s is not a list of integers", key);
        out[i] = a->items[i].i;
    }
    *cnt = a->nitems;
    return 0;
}

/* A dtype argument: its dtype, or -1 when absent or None. */
static int arg_dtype(ex *E, int pos, const char *key, int *dt)
{
    const cc_arg *a = A(E, pos, key);
    *dt = -1;
    if (!present(a))
        return 0;
    if (a->kind != CC_ARG_DTYPE)
        return fail(E, "argument %s is not a dtype", key);
    *dt = (int)a->i;
    return 0;
}

/* A tensor or a number; a number becomes a rank-0 tensor held in *box. */
typedef struct {
    tens t;
    float f;
    int64_t i;
    float eb; /* the device's rounding of the number (error bounds) */
} scalar_box;

static const tens *operand(ex *E, const cc_arg *a, const char *what, scalar_box *box)
{
    if (a && a->kind == CC_ARG_VALUE)
        return tensor_of(E, a, what);
    double v = 0;
    kind k = K_F;
    if (num_of(E, a, what, &v, &k))
        return NULL;
    memset(box, 0, sizeof *box);
    box->t.dtype = dtype_of(k);
    box->t.n = 1;
    box->eb = (float)eb_const(v);
    box->t.eb[0] = box->t.eb[1] = &box->eb;
    if (k == K_F) {
        box->f = (float)v;
        box->t.f = &box->f;
    } else {
        box->i = (int64_t)v;
        box->t.i = &box->i;
    }
    return &box->t;
}

static int norm_dim(ex *E, int64_t d, int rank, int *out)
{
    int r = rank ? rank : 1;
    if (d < -r || d >= r)
        return fail(E, "dim %lld out of range for a rank-%d tensor", (long long)d, rank);
    *out = (int)(d < 0 ? d + r : d);
    return 0;
}

/* ---- Iteration over broadcast operands ---- */

typedef struct {
    int rank, nop;
    int64_t shape[MAXR], idx[MAXR];
    int64_t st[4][MAXR];
    int64_t off[4];
} iter;

/* Operand j has rank[j] and shape[j] right-aligned against the iteration
 * shape; a dimension of size 1 is broadcast (stride 0). */
static void iter_init(iter *it, int rank, const int64_t *shape, int nop, const int *ranks, const int64_t *const *shapes)
{
    memset(it, 0, sizeof *it);
    it->rank = rank;
    it->nop = nop;
    memcpy(it->shape, shape, (size_t)rank * sizeof *shape);
    for (int j = 0; j < nop; j++) {
        int64_t cs[MAXR];
        contiguous_strides(ranks[j], shapes[j], cs);
        for (int d = 0; d < rank; d++) {
            int od = d - (rank - ranks[j]);
            it->st[j][d] = od < 0 || shapes[j][od] == 1 ? 0 : cs[od];
        }
    }
}

static void iter_tensors(iter *it, int rank, const int64_t *shape, int nop, const tens *const *ts)
{
    int ranks[4];
    const int64_t *shapes[4];
    for (int j = 0; j < nop; j++) {
        ranks[j] = ts[j]->rank;
        shapes[j] = ts[j]->shape;
    }
    iter_init(it, rank, shape, nop, ranks, shapes);
}

static inline void iter_next(iter *it)
{
    for (int d = it->rank - 1; d >= 0; d--) {
        it->idx[d]++;
        for (int j = 0; j < it->nop; j++)
            it->off[j] += it->st[j][d];
        if (it->idx[d] < it->shape[d])
            return;
        for (int j = 0; j < it->nop; j++)
            it->off[j] -= it->st[j][d] * it->shape[d];
        it->idx[d] = 0;
    }
}

/* The broadcast shape of k tensors. */
static int bcast(ex *E, int k, const tens *const *ts, int *rank, int64_t *shape)
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
                shape_str("", ts[0]->rank, ts[0]->shape, a, sizeof a);
                shape_str("", ts[j]->rank, ts[j]->shape, b, sizeof b);
                return fail(E, "shapes %s and %s do not broadcast", a, b);
            }
            s = x;
        }
        shape[d] = s;
    }
    *rank = r;
    return 0;
}

/* out[k] = x at a strided view (shape, strides, offset) of x's data. */
static void strided_copy(const tens *x, int rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                         tens *out)
{
    int64_t n = numel(rank, shape), idx[MAXR] = {0}, off = offset;
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
static int result_reshaped(ex *E, const tens *x, int rank, const int64_t *shape)
{
    tens *o = new_result(E, kind_of(x->dtype), rank, shape);
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
static double convert_bound(const tens *x, int64_t j, kind k, int w)
{
    double v = ldd(x, j), e = ldb(x, w, j), le = eb_lam(w) * e;
    kind kx = kind_of(x->dtype);
    if (k == K_B)
        return eb_flips(v, e, w) ? eb_jump(1, w) : 0;
    if (k == K_F)
        return kx == K_F ? e : e + eb_const(v);
    if (kx != K_F || e == 0)
        return e;
    return fmax(fabs(trunc(v + le) - trunc(v)), fabs(trunc(v - le) - trunc(v))) / eb_lam(w);
}

/* A result converted to kind k (float -> integer truncates, -> bool is != 0). */
static int result_as(ex *E, const tens *x, kind k, int rank, const int64_t *shape)
{
    tens *o = new_result(E, k, rank, shape);
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
            o->eb[w][j] = (float)convert_bound(x, j, k, w);
    }
    return 0;
}

/* ---- Elementwise: binary ---- */

enum {
    B_ADD, B_SUB, B_RSUB, B_MUL, B_DIV, B_POW, B_MIN, B_MAX,
    B_EQ, B_NE, B_LT, B_GT, B_LE, B_GE, B_LAND, B_LOR, B_LXOR, B_BAND, B_BOR, B_BXOR,
};

static float powf_exact(float x, float y)
{
    if (y == 2)
        return x * x;
    if (y == 1)
        return x;
    if (y == 0.5f)
        return sqrtf(x);
    if (y == 3)
        return x * x * x;
    if (y == -1)
        return 1 / x;
    if (y == -0.5f)
        return 1 / sqrtf(x);
    if (y == -2)
        return 1 / (x * x);
    return powf(x, y);
}

/* max |t^p - x^p| over |t - x| <= lam e, over lam: t^p is monotone on
 * each side of 0. */
static double pow_swing(double x, double e, double p, int w)
{
    if (e == 0)
        return 0;
    double le = eb_lam(w) * e, pts[3] = {x - le, x + le, 0}, fx = pow(x, p), s = 0;
    int n = x - e < 0 && x + e > 0 ? 3 : 2;
    for (int i = 0; i < n; i++) {
        double d = fabs(pow(pts[i], p) - fx);
        if (isnan(d))
            return INFINITY;
        s = fmax(s, d);
    }
    return s / eb_lam(w);
}

/* The bound (track w) of one element of binary op `op` on x and y with
 * bounds ex and ey.  stored: the result is a float, rounded to DL16 (an
 * integer result is exact on the device, fp32 up to 2^24). */
static double eb_binary(int op, double x, double ex, double y, double ey, double alpha, int rmode, int stored, int w)
{
    double r, p;
    switch (op) {
    case B_ADD:
    case B_SUB:
    case B_RSUB: { /* a +- alpha b; with alpha != 1 alpha b is a multiply of its own */
        int rs = op == B_RSUB;
        double a = rs ? y : x, ea = rs ? ey : ex, b = rs ? x : y, eb = rs ? ex : ey;
        double es = alpha == 1 ? eb : stored ? eb_store(alpha * b, eb_prod(b, eb, alpha, eb_const(alpha), w), w)
                                             : fabs(alpha) * eb;
        r = op == B_ADD ? a + alpha * b : a - alpha * b;
        p = ea + es;
        break;
    }
    case B_MUL:
        r = x * y;
        p = eb_prod(x, ex, y, ey, w);
        break;
    case B_DIV:
        r = x / y;
        p = eb_quot(x, ex, y, ey, w);
        if (stored) /* a divide, or a reciprocal and a multiply */
            p = eb_store(r, p, w);
        if (rmode) { /* the quotient, then trunc or floor: exact integers */
            double q = rmode == 1 ? trunc(r) : floor(r), pq = eb_lam(w) * (stored ? eb_store(r, p, w) : p);
            if (pq == 0)
                return 0;
            double lo = rmode == 1 ? trunc(r - pq) : floor(r - pq), hi = rmode == 1 ? trunc(r + pq) : floor(r + pq);
            return fmax(fabs(lo - q), fabs(hi - q)) / eb_lam(w);
        }
        break;
    case B_POW:
        r = pow(x, y);
        if (ey == 0)
            p = pow_swing(x, ex, y, w);
        else /* a tensor exponent: first order */
            p = fabs(y * pow(x, y - 1)) * ex + fabs(r * log(fabs(x))) * ey;
        break;
    case B_MIN:
    case B_MAX: /* a selection: no rounding */
        return fmax(ex, ey);
    case B_EQ:
    case B_NE:
    case B_LT:
    case B_GT:
    case B_LE:
    case B_GE:
        return eb_flips(x - y, ex + ey, w) ? eb_jump(1, w) : 0;
    case B_LAND:
    case B_LOR:
    case B_LXOR:
        return eb_flips(x, ex, w) || eb_flips(y, ey, w) ? eb_jump(1, w) : 0;
    default: /* bitwise: any doubt about an operand and nothing is known */
        return ex > 0 || ey > 0 ? INFINITY : 0;
    }
    return stored ? eb_store(r, p, w) : p;
}

/* div with rounding_mode: 0 none, 1 trunc, 2 floor */
static int binary(ex *E, int op, const tens *a, const tens *b, double alpha, int rmode)
{
    const tens *ab[2] = {a, b};
    int rank = 0;
    int64_t shape[MAXR];
    if (bcast(E, 2, ab, &rank, shape))
        return -1;
    kind ka = kind_of(a->dtype), kb = kind_of(b->dtype);
    kind kc = ka > kb ? ka : kb, kr = kc; /* computing kind, result kind */
    if (op == B_DIV && rmode == 0)
        kc = kr = K_F;
    if (op >= B_EQ && op <= B_LXOR)
        kr = K_B;
    if (op >= B_BAND && kc == K_F)
        return fail(E, "bitwise op on float tensors");
    if ((op == B_SUB || op == B_RSUB) && ka == K_B && kb == K_B)
        return fail(E, "subtraction of bool tensors");
    tens *o = new_result(E, kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    iter_tensors(&it, rank, shape, 2, ab);
    if (kc == K_F) {
        float al = (float)alpha;
        for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
            float x = ldf(a, it.off[0]), y = ldf(b, it.off[1]), r;
            switch (op) {
            case B_ADD: r = alpha == 1 ? x + y : x + al * y; break;
            case B_SUB: r = alpha == 1 ? x - y : x - al * y; break;
            case B_RSUB: r = alpha == 1 ? y - x : y - al * x; break;
            case B_MUL: r = x * y; break;
            case B_DIV:
                r = x / y;
                r = rmode == 1 ? truncf(r) : rmode == 2 ? floorf(r) : r;
                break;
            case B_POW: r = powf_exact(x, y); break;
            case B_MIN: r = isnan(x) || isnan(y) ? NAN : x < y ? x : y; break;
            case B_MAX: r = isnan(x) || isnan(y) ? NAN : x > y ? x : y; break;
            case B_EQ: r = x == y; break;
            case B_NE: r = x != y; break;
            case B_LT: r = x < y; break;
            case B_GT: r = x > y; break;
            case B_LE: r = x <= y; break;
            case B_GE: r = x >= y; break;
            case B_LAND: r = x != 0 && y != 0; break;
            case B_LOR: r = x != 0 || y != 0; break;
            case B_LXOR: r = (x != 0) != (y != 0); break;
            default: r = NAN; break;
            }
            if (kr == K_F)
                o->f[k] = r;
            else
                o->i[k] = (int64_t)r;
            for (int w = 0; o->eb[0] && w < 2; w++)
                o->eb[w][k] = (float)eb_binary(op, x, ldb(a, w, it.off[0]), y, ldb(b, w, it.off[1]), alpha, rmode,
                                               kr == K_F, w);
        }
        return 0;
    }
    int64_t al = (int64_t)alpha;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int64_t x = ldi(a, it.off[0]), y = ldi(b, it.off[1]), r;
        switch (op) {
        case B_ADD: r = (int64_t)((uint64_t)x + (uint64_t)al * (uint64_t)y); break;
        case B_SUB: r = (int64_t)((uint64_t)x - (uint64_t)al * (uint64_t)y); break;
        case B_RSUB: r = (int64_t)((uint64_t)y - (uint64_t)al * (uint64_t)x); break;
        case B_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
        case B_DIV:
            if (y == 0)
                return fail(E, "integer division by zero");
            if (x == INT64_MIN && y == -1)
                return fail(E, "integer division overflow");
            r = x / y;
            if (rmode == 2 && (x % y != 0) && ((x < 0) != (y < 0)))
                r--;
            break;
        case B_POW:
            if (y < 0)
                return fail(E, "integers to negative integer powers are not allowed");
            r = 1;
            for (int64_t e = y, base = x; e; e >>= 1) {
                if (e & 1)
                    r = (int64_t)((uint64_t)r * (uint64_t)base);
                base = (int64_t)((uint64_t)base * (uint64_t)base);
            }
            break;
        case B_MIN: r = x < y ? x : y; break;
        case B_MAX: r = x > y ? x : y; break;
        case B_EQ: r = x == y; break;
        case B_NE: r = x != y; break;
        case B_LT: r = x < y; break;
        case B_GT: r = x > y; break;
        case B_LE: r = x <= y; break;
        case B_GE: r = x >= y; break;
        case B_LAND: r = x && y; break;
        case B_LOR: r = x || y; break;
        case B_LXOR: r = !x != !y; break;
        case B_BAND: r = x & y; break;
        case B_BOR: r = x | y; break;
        case B_BXOR: r = x ^ y; break;
        default: r = 0; break;
        }
        o->i[k] = kr == K_B ? r != 0 : r;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)eb_binary(op, (double)x, ldb(a, w, it.off[0]), (double)y, ldb(b, w, it.off[1]), alpha,
                                           rmode, 0, w);
    }
    return 0;
}

/* add/sub/rsub/mul/div/pow/minimum/maximum/comparisons/logical ops,
 * Tensor and Scalar overloads alike: (self, other, alpha=1 or
 * rounding_mode=None). */
static int op_binary(ex *E, int op)
{
    scalar_box b0, b1;
    const char *k2 = op == B_POW ? "exponent" : "other";
    const tens *a = operand(E, A(E, 0, "self"), "self", &b0);
    const tens *b = a ? operand(E, A(E, 1, k2), k2, &b1) : NULL;
    if (!a || !b)
        return -1;
    double alpha = 1;
    int rmode = 0;
    if ((op == B_ADD || op == B_SUB || op == B_RSUB) && arg_num(E, 2, "alpha", 1, &alpha))
        return -1;
    if (op == B_DIV) {
        const cc_arg *m = A(E, 2, "rounding_mode");
        if (present(m)) {
            if (m->kind != CC_ARG_STR || (strcmp(m->s, "trunc") && strcmp(m->s, "floor")))
                return fail(E, "rounding_mode is not None, \"trunc\" or \"floor\"");
            rmode = m->s[0] == 't' ? 1 : 2;
        }
    }
    return binary(E, op, a, b, alpha, rmode);
}

/* ---- Elementwise: unary ---- */

enum {
    U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_TANH, U_SIGMOID, U_RELU, U_SILU, U_SIN, U_COS, U_ABS,
    U_RECIP, U_ERF, U_LOG1P, U_EXPM1, U_FLOOR, U_CEIL, U_ROUND, U_TRUNC, U_SIGN, U_LNOT, U_BNOT,
    U_GELU, U_GELU_TANH, U_SQUARE,
};

static double gelu(double x) { return 0.5 * x * (1 + erf(x * 0.70710678118654752440)); /* x / sqrt(2) */ }
static double gelu_tanh(double x)
{
    const double k = 0.7978845608028654; /* sqrt(2/pi) */
    return 0.5 * x * (1 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* The unary functions in double, for the bounds. */
static double un_eval(int op, double d)
{
    switch (op) {
    case U_NEG: return -d;
    case U_EXP: return exp(d);
    case U_LOG: return log(d);
    case U_SQRT: return sqrt(d);
    case U_RSQRT: return 1 / sqrt(d);
    case U_TANH: return tanh(d);
    case U_SIGMOID: return 1 / (1 + exp(-d));
    case U_RELU: return d > 0 ? d : 0;
    case U_SILU: return d / (1 + exp(-d));
    case U_SIN: return sin(d);
    case U_COS: return cos(d);
    case U_ABS: return fabs(d);
    case U_RECIP: return 1 / d;
    case U_ERF: return erf(d);
    case U_LOG1P: return log1p(d);
    case U_EXPM1: return expm1(d);
    case U_FLOOR: return floor(d);
    case U_CEIL: return ceil(d);
    case U_ROUND: return nearbyint(d);
    case U_TRUNC: return trunc(d);
    case U_SIGN: return (double)((d > 0) - (d < 0));
    case U_GELU: return gelu(d);
    case U_GELU_TANH: return gelu_tanh(d);
    case U_SQUARE: return d * d;
    default: return NAN;
    }
}

#define EB_PI 3.14159265358979323846

/* max |f(t) - f(x)| over |t - x| <= lam e, over lam (track w), f =
 * un_eval(op): f is monotone between the points tried (the ends, and the
 * extremes or the pole inside the interval), so the largest change is at
 * one of them. */
static double eb_swing(int op, double x, double e0, int w)
{
    if (!(e0 > 0) || isinf(x))
        return isnan(e0) ? e0 : 0;
    double e = eb_lam(w) * e0, pts[6] = {x - e, x + e};
    int n = 2;
    switch (op) {
    case U_RECIP:
        if (x - e <= 0 && x + e >= 0)
            return INFINITY;
        break;
    case U_ABS:
    case U_SQUARE:
        if (x - e < 0 && x + e > 0)
            pts[n++] = 0;
        break;
    case U_SIN:
    case U_COS: {
        if (e >= EB_PI)
            return 2 / eb_lam(w);
        double off = op == U_SIN ? EB_PI / 2 : 0; /* extremes at off + k pi: at most two inside */
        for (double k = ceil((x - e - off) / EB_PI); k * EB_PI + off <= x + e && n < 6; k++)
            pts[n++] = k * EB_PI + off;
        break;
    }
    default: /* monotone */
        break;
    }
    double fx = un_eval(op, x), s = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs(un_eval(op, pts[i]) - fx);
        if (isnan(d))
            return INFINITY;
        s = fmax(s, d);
    }
    return s / eb_lam(w);
}

/* One SFP function of a value with a bound, stored. */
static bv bv_fn(int op, bv x)
{
    double v = un_eval(op, x.v);
    return (bv){v, eb_store(v, eb_swing(op, x.v, x.e, x.w), x.w), x.w};
}

/* GELU as the device computes it (the compiler's decomposition):
 * x*0.5 * (1 + erf(x*0.70710678)), or with approximate="tanh"
 * x*0.5 * (1 + tanh(0.79788456 * (x + 0.044715*x*x*x))), every step stored. */
static bv bv_gelu(bv x, int tanh_form)
{
    bv half = bv_mul(x, bv_k(0.5)), inner;
    if (tanh_form) {
        bv x3 = bv_mul(bv_mul(x, x), x);
        bv s = bv_add(x, bv_mul(x3, bv_k(0.044715)));
        inner = bv_fn(U_TANH, bv_mul(s, bv_k(0.7978845608028654)));
    } else {
        inner = bv_fn(U_ERF, bv_mul(x, bv_k(0.7071067811865476)));
    }
    return bv_mul(half, bv_add(inner, bv_k(1.0)));
}

/* The bound (track w) of element x (bound e) of unary op `op` with a
 * float result. */
static double unary_bound(int op, double x, double e, int w)
{
    bv b = {x, e, w};
    switch (op) {
    case U_NEG: /* exact on the device */
    case U_ABS:
        return e;
    case U_RELU: /* selections: no rounding */
    case U_SIGN:
        return eb_swing(op, x, e, w);
    case U_GELU:
    case U_GELU_TANH:
        return bv_gelu(b, op == U_GELU_TANH).e;
    case U_SILU: /* x * sigmoid(x) */
        return bv_mul(b, bv_fn(U_SIGMOID, b)).e;
    case U_SQUARE: /* x * x */
        return bv_mul(b, b).e;
    default:
        return bv_fn(op, b).e;
    }
}

static int unary(ex *E, int op, const tens *x)
{
    kind kx = kind_of(x->dtype), kr;
    switch (op) {
    case U_NEG:
    case U_RELU:
    case U_ABS:
    case U_FLOOR:
    case U_CEIL:
    case U_ROUND:
    case U_TRUNC:
    case U_SIGN:
    case U_SQUARE:
        kr = kx;
        break;
    case U_LNOT:
        kr = K_B;
        break;
    case U_BNOT:
        if (kx == K_F)
            return fail(E, "bitwise_not of a float tensor");
        kr = kx;
        break;
    default:
        kr = K_F;
        break;
    }
    tens *o = new_result(E, kr, x->rank, x->shape);
    if (!o)
        return -1;
    if (kr != K_F) {
        for (int64_t k = 0; k < x->n; k++) {
            if (op == U_LNOT) {
                o->i[k] = x->f ? x->f[k] == 0 : x->i[k] == 0;
                for (int w = 0; o->eb[0] && w < 2; w++)
                    o->eb[w][k] = (float)(eb_flips(ldd(x, k), ldb(x, w, k), w) ? eb_jump(1, w) : 0);
                continue;
            }
            int64_t v = x->i[k], r;
            switch (op) {
            case U_NEG: r = (int64_t)(0 - (uint64_t)v); break;
            case U_RELU: r = v > 0 ? v : 0; break;
            case U_ABS: r = v < 0 ? (int64_t)(0 - (uint64_t)v) : v; break;
            case U_SIGN: r = (v > 0) - (v < 0); break;
            case U_BNOT: r = kx == K_B ? !v : ~v; break;
            case U_SQUARE: r = (int64_t)((uint64_t)v * (uint64_t)v); break;
            default: r = v; break; /* floor, ceil, round, trunc of integers */
            }
            o->i[k] = r;
            for (int w = 0; o->eb[0] && w < 2; w++) { /* integers are exact; one known only within e: */
                double e = ldb(x, w, k);
                o->eb[w][k] = (float)(e == 0 ? 0 : op == U_NEG || op == U_ABS || op == U_RELU || op == U_FLOOR ||
                                                        op == U_CEIL || op == U_ROUND || op == U_TRUNC
                                                        ? e
                                                        : INFINITY);
            }
        }
        return 0;
    }
    for (int64_t k = 0; k < x->n; k++) {
        float v = ldf(x, k);
        double d = v;
        float r;
        switch (op) {
        case U_NEG: r = -v; break;
        case U_EXP: r = (float)exp(d); break;
        case U_LOG: r = (float)log(d); break;
        case U_SQRT: r = sqrtf(v); break;
        case U_RSQRT: r = (float)(1 / sqrt(d)); break;
        case U_TANH: r = (float)tanh(d); break;
        case U_SIGMOID: r = (float)(1 / (1 + exp(-d))); break;
        case U_RELU: r = isnan(v) ? v : v > 0 ? v : 0; break;
        case U_SILU: r = (float)(d / (1 + exp(-d))); break;
        case U_SIN: r = (float)sin(d); break;
        case U_COS: r = (float)cos(d); break;
        case U_ABS: r = fabsf(v); break;
        case U_RECIP: r = 1 / v; break;
        case U_ERF: r = (float)erf(d); break;
        case U_LOG1P: r = (float)log1p(d); break;
        case U_EXPM1: r = (float)expm1(d); break;
        case U_FLOOR: r = floorf(v); break;
        case U_CEIL: r = ceilf(v); break;
        case U_ROUND: r = nearbyintf(v); break; /* half to even, as torch.round */
        case U_TRUNC: r = truncf(v); break;
        case U_SIGN: r = isnan(v) ? v : (float)((v > 0) - (v < 0)); break;
        case U_GELU: r = (float)gelu(d); break;
        case U_GELU_TANH: r = (float)gelu_tanh(d); break;
        case U_SQUARE: r = v * v; break;
        default: r = NAN; break;
        }
        o->f[k] = r;
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)unary_bound(op, d, ldb(x, w, k), w);
    }
    return 0;
}

static int op_unary(ex *E, int op)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (op == U_GELU) {
        const cc_arg *ap = A(E, 1, "approximate");
        if (present(ap)) {
            if (ap->kind != CC_ARG_STR || (strcmp(ap->s, "none") && strcmp(ap->s, "tanh")))
                return fail(E, "approximate is not \"none\" or \"tanh\"");
            if (strcmp(ap->s, "tanh") == 0)
                op = U_GELU_TANH;
        }
    }
    return unary(E, op, x);
}

/* clamp(self, min=None, max=None), clamp_min(self, min), clamp_max(self, max);
 * min and max may be numbers or tensors (clamp.Tensor). */
enum { CL_BOTH, CL_MIN, CL_MAX };
static int op_clamp(ex *E, int which)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    const cc_arg *lo = which == CL_MAX ? NULL : A(E, 1, "min");
    const cc_arg *hi = which == CL_MIN ? NULL : A(E, which == CL_MAX ? 1 : 2, "max");
    if ((lo && lo->kind == CC_ARG_VALUE) || (hi && hi->kind == CC_ARG_VALUE)) {
        /* tensor bounds: max(x, lo) then min(., hi) through temporaries */
        if (present(lo) && present(hi))
            return fail(E, "clamp with both bounds as tensors is not supported");
        scalar_box b;
        const tens *t = operand(E, present(lo) ? lo : hi, "bound", &b);
        return t ? binary(E, present(lo) ? B_MAX : B_MIN, x, t, 1, 0) : -1;
    }
    double l = -INFINITY, h = INFINITY;
    kind kl = K_B, kh = K_B;
    if (present(lo) && num_of(E, lo, "min", &l, &kl))
        return -1;
    if (present(hi) && num_of(E, hi, "max", &h, &kh))
        return -1;
    kind kx = kind_of(x->dtype), kr = kx;
    if (kl > kr)
        kr = kl;
    if (kh > kr)
        kr = kh;
    tens *o = new_result(E, kr, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < x->n; k++) {
        if (kr == K_F) {
            float v = ldf(x, k), fl = (float)l, fh = (float)h;
            v = v < fl ? fl : v; /* NaN stays */
            o->f[k] = v > fh ? fh : v;
        } else {
            int64_t v = ldi(x, k);
            if (present(lo) && v < (int64_t)l)
                v = (int64_t)l;
            if (present(hi) && v > (int64_t)h)
                v = (int64_t)h;
            o->i[k] = v;
        }
        for (int w = 0; o->eb[0] && w < 2; w++) {
            /* clamp is monotone: its swing over [v - lam e, v + lam e] (over
             * lam, as every piecewise function) is at the ends, never the
             * derivative at v (0 at a clamped v); a clamped element is the
             * constant, with its rounding */
            double v = ldd(x, k), e = ldb(x, w, k), le = eb_lam(w) * e, c = fmin(fmax(v, l), h);
            double sw = e == 0 ? 0
                               : fmax(fabs(fmin(fmax(v + le, l), h) - c), fabs(fmin(fmax(v - le, l), h) - c)) /
                                     eb_lam(w);
            o->eb[w][k] = (float)(sw + (v - le <= l ? eb_const(l) : 0) + (v + le >= h ? eb_const(h) : 0));
        }
    }
    return 0;
}

/* The bound (track w) of a selection between a and b (bounds ea, eb)
 * that picked a (pick) or b: the picked bound, or when the condition may
 * flip, also the jump to the other side and that side's bound. */
static double select_bound(int flips, double a, double ea, double b, double eb, int pick, int w)
{
    double e = pick ? ea : eb;
    if (!flips)
        return e;
    /* A flipped element's error |b~ - a| reaches |b - a| + E_b exactly (a
     * selection is exact, and E_b = 0 for a constant), so the bound must not
     * lose anything to the fp32 storage of bounds (2^-24 relative per store,
     * and the division and multiplication by lambda): EB_JUMP_MARGIN. */
    double j = fabs(b - a) * (1 + EB_JUMP_MARGIN);
    double d = pick ? eb_jump(j, w) + eb : eb_jump(j, w) + ea;
    return isnan(d) ? INFINITY : fmax(e, d);
}

/* where(condition, self, other): condition != 0 picks self. */
static int op_where(ex *E, int unused)
{
    (void)unused;
    scalar_box b1, b2;
    const tens *c = arg_tensor(E, 0, "condition");
    const tens *a = c ? operand(E, A(E, 1, "self"), "self", &b1) : NULL;
    const tens *b = a ? operand(E, A(E, 2, "other"), "other", &b2) : NULL;
    if (!b)
        return -1;
    const tens *ts[3] = {c, a, b};
    int rank = 0;
    int64_t shape[MAXR];
    if (bcast(E, 3, ts, &rank, shape))
        return -1;
    kind ka = kind_of(a->dtype), kb = kind_of(b->dtype), kr = ka > kb ? ka : kb;
    tens *o = new_result(E, kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    iter_tensors(&it, rank, shape, 3, ts);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int pick = c->f ? c->f[it.off[0]] != 0 : c->i[it.off[0]] != 0;
        const tens *s = pick ? a : b;
        int64_t off = pick ? it.off[1] : it.off[2];
        if (kr == K_F)
            o->f[k] = ldf(s, off);
        else
            o->i[k] = ldi(s, off);
        for (int w = 0; o->eb[0] && w < 2; w++) /* the picked bound, or if the condition may flip ... */
            o->eb[w][k] = (float)select_bound(eb_flips(ldd(c, it.off[0]), ldb(c, w, it.off[0]), w), ldd(a, it.off[1]),
                                              ldb(a, w, it.off[1]), ldd(b, it.off[2]), ldb(b, w, it.off[2]), pick, w);
    }
    return 0;
}

/* masked_fill(self, mask, value): value where mask, self elsewhere; the
 * result has the broadcast shape of self and mask, self's kind. */
static int op_masked_fill(ex *E, int unused)
{
    (void)unused;
    scalar_box bv;
    const tens *x = arg_tensor(E, 0, "self");
    const tens *m = x ? arg_tensor(E, 1, "mask") : NULL;
    const tens *v = m ? operand(E, A(E, 2, "value"), "value", &bv) : NULL;
    if (!v)
        return -1;
    if (v->n != 1 || v->rank != 0)
        return fail(E, "value is not a number or a rank-0 tensor");
    const tens *ts[2] = {x, m};
    int rank = 0;
    int64_t shape[MAXR];
    if (bcast(E, 2, ts, &rank, shape))
        return -1;
    kind kr = kind_of(x->dtype);
    tens *o = new_result(E, kr, rank, shape);
    if (!o)
        return -1;
    iter it;
    iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        int fill = m->f ? m->f[it.off[1]] != 0 : m->i[it.off[1]] != 0;
        if (kr == K_F)
            o->f[k] = fill ? ldf(v, 0) : ldf(x, it.off[0]);
        else
            o->i[k] = fill ? (kr == K_B ? ldi(v, 0) != 0 : ldi(v, 0)) : ldi(x, it.off[0]);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)select_bound(eb_flips(ldd(m, it.off[1]), ldb(m, w, it.off[1]), w), ldd(v, 0),
                                              ldb(v, w, 0), ldd(x, it.off[0]), ldb(x, w, it.off[0]), fill, w);
    }
    return 0;
}

/* ---- Casts and copies ---- */

/* clone, contiguous, alias, detach, lift_fresh_copy, _to_copy, to:
 * a copy, converted when a dtype is given. */
static int op_copy(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int dt = -1;
    const char *base = E->node->base;
    if (strcmp(base, "_to_copy") == 0 || strcmp(base, "to") == 0) {
        const cc_arg *a = A(E, strcmp(base, "to") == 0 ? 1 : -1, "dtype");
        if (present(a)) {
            if (a->kind != CC_ARG_DTYPE)
                return fail(E, "argument dtype is not a dtype");
            dt = (int)a->i;
        }
    }
    return result_as(E, x, dt < 0 ? kind_of(x->dtype) : kind_of((cc_dtype)dt), x->rank, x->shape);
}

/* copy(self, src): src broadcast to self's shape, in self's kind. */
static int op_copy_into(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    const tens *s = x ? arg_tensor(E, 1, "src") : NULL;
    if (!s)
        return -1;
    const tens *ts[2] = {x, s};
    int rank = 0;
    int64_t shape[MAXR];
    if (bcast(E, 2, ts, &rank, shape))
        return -1;
    if (rank != x->rank || memcmp(shape, x->shape, (size_t)rank * sizeof *shape))
        return fail(E, "src does not broadcast to self's shape");
    kind kr = kind_of(x->dtype);
    tens *o = new_result(E, kr, x->rank, x->shape);
    if (!o)
        return -1;
    iter it;
    iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        if (kr == K_F)
            o->f[k] = ldf(s, it.off[1]);
        else
            o->i[k] = kr == K_B ? ldd(s, it.off[1]) != 0 : ldi(s, it.off[1]);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)convert_bound(s, it.off[1], kr, w);
    }
    return 0;
}

/* native_dropout(input, p, train) -> (output, mask), dropout(input, p, train):
 * the identity when train is False (or None) or p == 0. */
static int op_dropout(ex *E, int tuple)
{
    const tens *x = arg_tensor(E, 0, "input");
    if (!x)
        return -1;
    double p = 0;
    int train = 0;
    if (arg_num(E, 1, "p", 0, &p) || arg_bool(E, 2, "train", 0, &train))
        return -1;
    if (train && p != 0)
        return fail(E, "dropout with p=%g in training is random: the reference runs only p=0 or train=False", p);
    if (result_as(E, x, kind_of(x->dtype), x->rank, x->shape))
        return -1;
    if (!tuple)
        return 0;
    tens *m = new_result(E, K_B, x->rank, x->shape);
    if (!m)
        return -1;
    for (int64_t k = 0; k < m->n; k++)
        m->i[k] = 1;
    return 0;
}

/* ---- Views (computed as copies) ---- */

/* view(self, size), _unsafe_view, reshape(self, shape): one -1 inferred. */
static int op_view(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t sz[MAXR + 1];
    int cnt;
    if (arg_ints(E, 1, strcmp(E->node->base, "reshape") == 0 ? "shape" : "size", sz, &cnt, MAXR))
        return -1;
    if (cnt < 0)
        return fail(E, "missing argument size");
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < cnt; i++) {
        if (sz[i] == -1) {
            if (infer >= 0)
                return fail(E, "more than one -1 in the size");
            infer = i;
        } else if (sz[i] < 0) {
            return fail(E, "negative size %lld", (long long)sz[i]);
        } else {
            if (sz[i] && known > INT64_MAX / sz[i])
                return fail(E, "size too large");
            known *= sz[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || x->n % known)
            return fail(E, "cannot infer the -1 of a view of %lld elements", (long long)x->n);
        sz[infer] = x->n / known;
        known = x->n;
    }
    if (known != x->n) {
        char xs[256], ss[256];
        shape_str("", x->rank, x->shape, xs, sizeof xs);
        shape_str("", cnt, sz, ss, sizeof ss);
        return fail(E, "a view of shape %s as %s changes the number of elements", xs, ss);
    }
    return result_reshaped(E, x, cnt, sz);
}

/* permute(self, dims) */
static int op_permute(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dims[MAXR];
    int cnt;
    if (arg_ints(E, 1, "dims", dims, &cnt, MAXR))
        return -1;
    if (cnt != x->rank)
        return fail(E, "dims has %d entries for a rank-%d tensor", cnt < 0 ? 0 : cnt, x->rank);
    int64_t st[MAXR], nst[MAXR], shape[MAXR];
    int seen[MAXR] = {0};
    contiguous_strides(x->rank, x->shape, st);
    for (int i = 0; i < cnt; i++) {
        int d = 0;
        if (norm_dim(E, dims[i], x->rank, &d))
            return -1;
        if (seen[d]++)
            return fail(E, "dims is not a permutation");
        shape[i] = x->shape[d];
        nst[i] = st[d];
    }
    tens *o = new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    strided_copy(x, x->rank, shape, nst, 0, o);
    return 0;
}

static int transpose_result(ex *E, const tens *x, int d0, int d1)
{
    int64_t st[MAXR], shape[MAXR];
    contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    int64_t t = shape[d0];
    shape[d0] = shape[d1];
    shape[d1] = t;
    t = st[d0];
    st[d0] = st[d1];
    st[d1] = t;
    tens *o = new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    strided_copy(x, x->rank, shape, st, 0, o);
    return 0;
}

/* transpose(self, dim0, dim1), t(self) */
static int op_transpose(ex *E, int is_t)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (is_t) {
        if (x->rank > 2)
            return fail(E, "t() of a rank-%d tensor (at most 2)", x->rank);
        if (x->rank < 2)
            return result_reshaped(E, x, x->rank, x->shape);
        return transpose_result(E, x, 0, 1);
    }
    int64_t a = 0, b = 0;
    int d0 = 0, d1 = 0;
    if (arg_req_int(E, 1, "dim0", &a) || arg_req_int(E, 2, "dim1", &b) || norm_dim(E, a, x->rank, &d0) ||
        norm_dim(E, b, x->rank, &d1))
        return -1;
    if (x->rank == 0)
        return result_reshaped(E, x, 0, x->shape);
    return transpose_result(E, x, d0, d1);
}

/* expand(self, size, implicit=False), expand_as(self, other) */
static int op_expand(ex *E, int as)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t sz[MAXR];
    int cnt;
    if (as) {
        const tens *other = arg_tensor(E, 1, "other");
        if (!other)
            return -1;
        cnt = other->rank;
        memcpy(sz, other->shape, sizeof sz);
    } else if (arg_ints(E, 1, "size", sz, &cnt, MAXR)) {
        return -1;
    }
    if (cnt < x->rank)
        return fail(E, "expand to %d dims of a rank-%d tensor", cnt < 0 ? 0 : cnt, x->rank);
    int64_t st[MAXR], nst[MAXR];
    contiguous_strides(x->rank, x->shape, st);
    for (int d = 0; d < cnt; d++) {
        int od = d - (cnt - x->rank);
        if (od < 0) {
            if (sz[d] < 0)
                return fail(E, "size -1 for a new leading dimension");
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
            return fail(E, "cannot expand dim %d of size %lld to %lld", od, (long long)x->shape[od],
                        (long long)sz[d]);
        }
    }
    tens *o = new_result(E, kind_of(x->dtype), cnt, sz);
    if (!o)
        return -1;
    strided_copy(x, cnt, sz, nst, 0, o);
    return 0;
}

/* slice(self, dim=0, start=None, end=None, step=1) */
static int op_slice(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dim = 0, step = 1, start = 0, end = 0;
    int d = 0;
    if (arg_int(E, 1, "dim", 0, &dim) || norm_dim(E, dim, x->rank, &d))
        return -1;
    if (x->rank == 0)
        return fail(E, "slice of a rank-0 tensor");
    int64_t size = x->shape[d];
    if (arg_int(E, 2, "start", 0, &start) || arg_int(E, 3, "end", INT64_MAX, &end) ||
        arg_int(E, 4, "step", 1, &step))
        return -1;
    if (step <= 0)
        return fail(E, "slice step %lld must be positive", (long long)step);
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
    contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = len;
    int64_t off = start * st[d];
    st[d] *= step;
    tens *o = new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    if (len)
        strided_copy(x, x->rank, shape, st, off, o);
    return 0;
}

/* select(self, dim, index) */
static int op_select(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dim = 0, index = 0;
    int d = 0;
    if (arg_req_int(E, 1, "dim", &dim) || arg_req_int(E, 2, "index", &index) || norm_dim(E, dim, x->rank, &d))
        return -1;
    if (x->rank == 0)
        return fail(E, "select of a rank-0 tensor");
    int64_t size = x->shape[d];
    if (index < -size || index >= size)
        return fail(E, "index %lld out of range for dim %d of size %lld", (long long)index, d, (long long)size);
    if (index < 0)
        index += size;
    int64_t st[MAXR], shape[MAXR], nst[MAXR];
    contiguous_strides(x->rank, x->shape, st);
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != d) {
            shape[r] = x->shape[i];
            nst[r++] = st[i];
        }
    tens *o = new_result(E, kind_of(x->dtype), r, shape);
    if (!o)
        return -1;
    strided_copy(x, r, shape, nst, index * st[d], o);
    return 0;
}

/* Pieces of x along dim d, of the given sizes, as results. */
static int split_results(ex *E, const tens *x, int d, const int64_t *sizes, int n)
{
    int64_t st[MAXR], shape[MAXR], off = 0;
    contiguous_strides(x->rank, x->shape, st);
    memcpy(shape, x->shape, sizeof shape);
    for (int i = 0; i < n; i++) {
        shape[d] = sizes[i];
        tens *o = new_result(E, kind_of(x->dtype), x->rank, shape);
        if (!o)
            return -1;
        strided_copy(x, x->rank, shape, st, off * st[d], o);
        off += sizes[i];
    }
    return 0;
}

enum { SP_SIZE, SP_SIZES, SP_CHUNK, SP_UNBIND };

/* split(self, split_size, dim=0), split_with_sizes(self, split_sizes, dim=0),
 * chunk(self, chunks, dim=0), unbind(self, dim=0) */
static int op_split(ex *E, int how)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    if (x->rank == 0)
        return fail(E, "split of a rank-0 tensor");
    int64_t dim = 0;
    int d = 0;
    if (arg_int(E, how == SP_UNBIND ? 1 : 2, "dim", 0, &dim) || norm_dim(E, dim, x->rank, &d))
        return -1;
    int64_t size = x->shape[d];
    int cap = 1024;
    int64_t *sizes = malloc((size_t)cap * sizeof *sizes);
    int n = 0, rc = -1;
    if (!sizes)
        return fail(E, "out of host memory");
    if (how == SP_SIZES) {
        const cc_arg *a = A(E, 1, "split_sizes");
        if (!a || a->kind != CC_ARG_LIST || a->nitems > cap) {
            fail(E, "split_sizes is not a list of integers");
            goto out;
        }
        int64_t sum = 0;
        for (int i = 0; i < a->nitems; i++) {
            if (a->items[i].kind != CC_ARG_INT || a->items[i].i < 0) {
                fail(E, "split_sizes is not a list of integers >= 0");
                goto out;
            }
            sizes[n++] = a->items[i].i;
            sum += a->items[i].i;
        }
        if (sum != size) {
            fail(E, "split_sizes add up to %lld, not the size %lld of dim %d", (long long)sum, (long long)size, d);
            goto out;
        }
    } else if (how == SP_UNBIND) {
        if (size > cap) {
            fail(E, "unbind into more than %d tensors", cap);
            goto out;
        }
        for (n = 0; n < size; n++)
            sizes[n] = 1;
        int64_t st[MAXR], shape[MAXR], nst[MAXR];
        contiguous_strides(x->rank, x->shape, st);
        int r = 0;
        for (int i = 0; i < x->rank; i++)
            if (i != d) {
                shape[r] = x->shape[i];
                nst[r++] = st[i];
            }
        for (int i = 0; i < n; i++) {
            tens *o = new_result(E, kind_of(x->dtype), r, shape);
            if (!o)
                goto out;
            strided_copy(x, r, shape, nst, i * st[d], o);
        }
        rc = 0;
        goto out;
    } else {
        int64_t s;
        if (arg_req_int(E, 1, how == SP_CHUNK ? "chunks" : "split_size", &s))
            goto out;
        if (how == SP_CHUNK) {
            if (s <= 0) {
                fail(E, "chunks must be positive");
                goto out;
            }
            s = (size + s - 1) / s;
        }
        if (s < 0 || (s == 0 && size)) {
            fail(E, "split_size %lld for a dim of size %lld", (long long)s, (long long)size);
            goto out;
        }
        if (s == 0)
            sizes[n++] = 0;
        for (int64_t at = 0; at < size; at = s < size - at ? at + s : size) {
            if (n == cap) {
                fail(E, "split into more than %d tensors", cap);
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
    const cc_arg *a = A(E, 0, NULL);
    int64_t idx;
    if (!a || a->kind != CC_ARG_VALUE)
        return fail(E, "first argument is not a value");
    const cc_value *v = &E->g->values[a->value];
    slot *s = &E->vals[a->value];
    if (!v->ntuple)
        return fail(E, "%%%s is not a tuple", v->name);
    if (arg_req_int(E, 1, "index", &idx))
        return -1;
    if (idx < -s->nt || idx >= s->nt)
        return fail(E, "index %lld out of range for a tuple of %d", (long long)idx, s->nt);
    if (idx < 0)
        idx += s->nt;
    const tens *x = &s->t[idx];
    return result_reshaped(E, x, x->rank, x->shape);
}

/* unsqueeze(self, dim) */
static int op_unsqueeze(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    int64_t dim = 0;
    int d = 0;
    if (!x || arg_req_int(E, 1, "dim", &dim) || norm_dim(E, dim, x->rank + 1, &d))
        return -1;
    if (x->rank == MAXR)
        return fail(E, "more than %d dimensions", MAXR);
    int64_t shape[MAXR];
    for (int i = 0, j = 0; i <= x->rank; i++)
        shape[i] = i == d ? 1 : x->shape[j++];
    return result_reshaped(E, x, x->rank + 1, shape);
}

/* squeeze(self), squeeze.dim(self, dim), squeeze.dims(self, dim) */
static int op_squeeze(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t dims[MAXR];
    int cnt;
    if (arg_ints(E, 1, "dim", dims, &cnt, MAXR))
        return -1;
    char drop[MAXR] = {0};
    if (cnt < 0) {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->shape[i] == 1;
    } else {
        for (int i = 0; i < cnt; i++) {
            int d = 0;
            if (norm_dim(E, dims[i], x->rank, &d))
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
    return result_reshaped(E, x, r, shape);
}

/* cat(tensors, dim=0), stack(tensors, dim=0) */
static int op_cat(ex *E, int stack)
{
    const cc_arg *a = A(E, 0, "tensors");
    if (!a || a->kind != CC_ARG_LIST || a->nitems == 0)
        return fail(E, "tensors is not a non-empty list of tensors");
    int n = a->nitems, m = 0;
    const tens **ts = malloc((size_t)n * sizeof *ts);
    if (!ts)
        return fail(E, "out of host memory");
    int rc = -1;
    kind kr = K_B;
    for (int i = 0; i < n; i++) {
        if (!(ts[m] = tensor_of(E, &a->items[i], "tensors")))
            goto out;
        if (kind_of(ts[m]->dtype) > kr)
            kr = kind_of(ts[m]->dtype);
        /* cat skips a 1-D empty tensor (legacy behaviour) */
        if (!stack && ts[m]->rank == 1 && ts[m]->n == 0)
            continue;
        m++;
    }
    if (m == 0) /* all of them empty 1-D */
        ts[m++] = tensor_of(E, &a->items[0], "tensors");
    const tens *ref = ts[0];
    int rank = ref->rank + stack;
    int64_t dim = 0;
    int d = 0;
    if (arg_int(E, 1, "dim", 0, &dim) || norm_dim(E, dim, rank, &d))
        goto out;
    if (ref->rank == 0 && !stack) {
        fail(E, "cat of rank-0 tensors");
        goto out;
    }
    if (rank > MAXR) {
        fail(E, "more than %d dimensions", MAXR);
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
            shape_str("", ref->rank, ref->shape, s1, sizeof s1);
            shape_str("", t->rank, t->shape, s2, sizeof s2);
            fail(E, "tensors of shapes %s and %s do not %s along dim %d", s1, s2, stack ? "stack" : "concatenate", d);
            goto out;
        }
        if (!stack)
            shape[d] += t->shape[d];
    }
    tens *o = new_result(E, kr, rank, shape);
    if (!o)
        goto out;
    int64_t outer = numel(d, shape), inner = numel(rank - d - 1, shape + d + 1), at = 0;
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
                    o->eb[w][dst] = (float)convert_bound(t, src, kr, w);
            }
        at += len;
    }
    rc = 0;
out:
    free(ts);
    return rc;
}

/* triu(self, diagonal=0), tril(self, diagonal=0) */
static int op_tri(ex *E, int upper)
{
    const tens *x = arg_tensor(E, 0, "self");
    int64_t diag = 0;
    if (!x || arg_int(E, 1, "diagonal", 0, &diag))
        return -1;
    if (x->rank < 2)
        return fail(E, "%s of a rank-%d tensor (at least 2)", upper ? "triu" : "tril", x->rank);
    if (result_reshaped(E, x, x->rank, x->shape))
        return -1;
    tens *o = &E->res[E->nres - 1];
    int64_t R = x->shape[x->rank - 2], C = x->shape[x->rank - 1], mats = R && C ? x->n / (R * C) : 0;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                int keep = upper ? j - i >= diag : j - i <= diag;
                if (!keep) {
                    int64_t k = (m * R + i) * C + j;
                    if (o->f)
                        o->f[k] = 0;
                    else
                        o->i[k] = 0;
                    for (int w = 0; o->eb[0] && w < 2; w++)
                        o->eb[w][k] = 0;
                }
            }
    return 0;
}

/* repeat_interleave(self, repeats: int, dim=None, output_size=None) */
static int op_repeat_interleave(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    int64_t rep = 0, dim = 0;
    if (!x || arg_req_int(E, 1, "repeats", &rep) || arg_int(E, 2, "dim", INT64_MIN, &dim))
        return -1;
    if (rep < 0)
        return fail(E, "repeats must be >= 0");
    tens flat = *x;
    int d = 0;
    if (dim == INT64_MIN) { /* flattened */
        flat.rank = 1;
        flat.shape[0] = x->n;
        d = 0;
    } else if (norm_dim(E, dim, x->rank, &d)) {
        return -1;
    }
    if (flat.rank == 0) {
        flat.rank = 1;
        flat.shape[0] = 1;
    }
    int64_t shape[MAXR];
    memcpy(shape, flat.shape, sizeof shape);
    if (rep && shape[d] > INT64_MAX / rep)
        return fail(E, "repeats too large");
    shape[d] *= rep;
    tens *o = new_result(E, kind_of(x->dtype), flat.rank, shape);
    if (!o)
        return -1;
    int64_t outer = numel(d, flat.shape), inner = numel(flat.rank - d - 1, flat.shape + d + 1), len = flat.shape[d];
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
    const tens *w = arg_tensor(E, 0, "weight");
    const tens *ix = w ? arg_tensor(E, 1, "indices") : NULL;
    if (!ix)
        return -1;
    if (w->rank != 2)
        return fail(E, "weight has rank %d (2 expected)", w->rank);
    if (kind_of(ix->dtype) != K_I)
        return fail(E, "indices are not an integer tensor");
    if (ix->rank + 1 > MAXR)
        return fail(E, "more than %d dimensions", MAXR);
    int64_t shape[MAXR], V = w->shape[0], D = w->shape[1];
    memcpy(shape, ix->shape, (size_t)ix->rank * sizeof *shape);
    shape[ix->rank] = D;
    for (int64_t k = 0; k < ix->n; k++)
        if (ix->i[k] < 0 || ix->i[k] >= V)
            return fail(E, "index %lld (element %lld of the indices) out of range [0, %lld)", (long long)ix->i[k],
                        (long long)k, (long long)V);
    tens *o = new_result(E, kind_of(w->dtype), ix->rank + 1, shape);
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

/* ---- Creation ---- */

enum { C_FULL, C_ZEROS, C_ONES, C_SCALAR, C_FULL_LIKE, C_ZEROS_LIKE, C_ONES_LIKE, C_NEW_ZEROS, C_NEW_ONES,
       C_NEW_FULL, C_NEW_EMPTY, C_EMPTY };

static int op_create(ex *E, int how)
{
    int64_t sz[MAXR];
    int cnt = 0, dt;
    const tens *like = NULL;
    double fill = 0;
    kind kf = K_F; /* kind of the fill value */
    int fill_pos = -1;
    switch (how) {
    case C_FULL:
    case C_ZEROS:
    case C_ONES:
    case C_EMPTY:
        if (arg_ints(E, 0, "size", sz, &cnt, MAXR))
            return -1;
        if (cnt < 0)
            return fail(E, "missing argument size");
        fill_pos = how == C_FULL ? 1 : -1;
        break;
    case C_SCALAR:
        fill_pos = 0;
        break;
    default:
        if (!(like = arg_tensor(E, 0, "self")))
            return -1;
        if (how >= C_NEW_ZEROS) {
            if (arg_ints(E, 1, "size", sz, &cnt, MAXR))
                return -1;
            if (cnt < 0)
                return fail(E, "missing argument size");
            fill_pos = how == C_NEW_FULL ? 2 : -1;
        } else {
            cnt = like->rank;
            memcpy(sz, like->shape, sizeof sz);
            fill_pos = how == C_FULL_LIKE ? 1 : -1;
        }
        break;
    }
    for (int i = 0; i < cnt; i++)
        if (sz[i] < 0)
            return fail(E, "negative size %lld", (long long)sz[i]);
    if (fill_pos >= 0) {
        const char *key = how == C_SCALAR ? "s" : "fill_value";
        if (num_of(E, A(E, fill_pos, key), key, &fill, &kf))
            return -1;
    } else {
        fill = how == C_ONES || how == C_ONES_LIKE || how == C_NEW_ONES;
        kf = K_F;
    }
    if (arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind k;
    if (dt >= 0)
        k = kind_of((cc_dtype)dt);
    else if (like)
        k = kind_of(like->dtype);
    else if (how == C_FULL)
        k = kf; /* torch.full infers the dtype from the fill value */
    else
        k = K_F;
    tens *o = new_result(E, k, cnt, sz);
    if (!o)
        return -1;
    for (int64_t j = 0; j < o->n; j++) {
        if (k == K_F)
            o->f[j] = (float)fill;
        else
            o->i[j] = k == K_B ? fill != 0 : (int64_t)fill;
        for (int w = 0; o->eb[0] && k == K_F && w < 2; w++)
            o->eb[w][j] = (float)eb_const(fill);
    }
    return 0;
}

/* arange(end), arange.start(start, end), arange.start_step(start, end, step) */
static int op_arange(ex *E, int unused)
{
    (void)unused;
    double v[3] = {0, 0, 1};
    kind kv[3] = {K_I, K_I, K_I};
    int npos = 0;
    const cc_node *n = E->node;
    for (int i = 0; i < n->nargs && npos < 3; i++)
        if (!n->args[i].key && n->args[i].kind != CC_ARG_NONE) {
            if (num_of(E, &n->args[i], "start/end/step", &v[npos], &kv[npos]))
                return -1;
            npos++;
        }
    if (npos == 1) {
        v[1] = v[0];
        kv[1] = kv[0];
        v[0] = 0;
        kv[0] = K_I;
    }
    const char *keys[3] = {"start", "end", "step"};
    for (int i = 0; i < 3; i++) {
        const cc_arg *a = A(E, -1, keys[i]);
        if (present(a) && num_of(E, a, keys[i], &v[i], &kv[i]))
            return -1;
    }
    if (npos == 0 && !present(A(E, -1, "end")))
        return fail(E, "missing argument end");
    if (v[2] == 0 || isnan(v[0]) || isnan(v[1]) || isnan(v[2]))
        return fail(E, "step must be nonzero and bounds finite");
    double len = ceil((v[1] - v[0]) / v[2]);
    if (len < 0)
        len = 0;
    if (len > (double)((int64_t)1 << 40))
        return fail(E, "arange of %g elements", len);
    int dt;
    if (arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind k = dt >= 0 ? kind_of((cc_dtype)dt) : (kv[0] == K_F || kv[1] == K_F || kv[2] == K_F) ? K_F : K_I;
    int64_t shape[1] = {(int64_t)len};
    tens *o = new_result(E, k, 1, shape);
    if (!o)
        return -1;
    for (int64_t j = 0; j < shape[0]; j++) {
        double x = v[0] + (double)j * v[2];
        if (k == K_F)
            o->f[j] = (float)x;
        else
            o->i[j] = (int64_t)x;
        for (int w = 0; o->eb[0] && k == K_F && w < 2; w++) /* index values: sfp.iota rounds them once */
            o->eb[w][j] = (float)eb_const(x);
    }
    return 0;
}

/* ---- Reductions ---- */

enum { R_SUM, R_MEAN, R_AMAX, R_AMIN, R_ANY, R_ALL, R_VAR, R_VAR_MEAN, R_STD };

/* The bound (track w) of one reduction over the cols elements of src
 * from b (the device: sfp.rsum / sfp.rmax over the row, fp32
 * accumulation, one rounding; mean = sum / N; var as the compiler
 * decomposes it); for var also the mean's bound in *mean_e. */
static double reduce_bound(const tens *src, int64_t b, int64_t cols, int op, double corr, kind kr, int w,
                           double *mean_e)
{
    double p = 0;
    switch (op) {
    case R_AMAX: /* a selection: within the largest bound */
    case R_AMIN:
        for (int64_t c = 0; c < cols; c++)
            p = fmax(p, ldb(src, w, b + c));
        return p;
    case R_ANY:
    case R_ALL:
        for (int64_t c = 0; c < cols; c++)
            if (eb_flips(ldd(src, b + c), ldb(src, w, b + c), w))
                return eb_jump(1, w);
        return 0;
    default:
        break;
    }
    eb_acc acc = {.w = w};
    for (int64_t c = 0; c < cols; c++)
        acc_add(&acc, ldd(src, b + c), ldb(src, w, b + c));
    bv sum = acc_sum(&acc);
    if (op == R_SUM)
        return kr == K_F ? sum.e : w ? sqrt(acc.p) : acc.p;
    bv mean = bv_div(sum, bv_k((double)cols));
    if (mean_e)
        *mean_e = mean.e;
    if (op == R_MEAN)
        return mean.e;
    /* var: the mean, x - mean, its square, their sum, / (N - correction) */
    eb_acc sq = {.w = w};
    for (int64_t c = 0; c < cols; c++) {
        bv xc = bv_sub((bv){ldd(src, b + c), ldb(src, w, b + c), w}, mean);
        bv x2 = bv_mul(xc, xc);
        acc_add(&sq, x2.v, x2.e);
    }
    bv var = bv_div(acc_sum(&sq), bv_k((double)cols - corr));
    return op == R_STD ? bv_fn(U_SQRT, var).e : var.e;
}

/* Reduce x over the dims in mask: rows (kept dims) x cols (reduced dims),
 * with the reduced dims moved last when they are not already. */
static int reduce(ex *E, const tens *x, const char *mask, int keepdim, int op, double correction, int dt)
{
    int rank = x->rank;
    int perm[MAXR], np = 0;
    for (int d = 0; d < rank; d++)
        if (!mask[d])
            perm[np++] = d;
    for (int d = 0; d < rank; d++)
        if (mask[d])
            perm[np++] = d;
    int64_t rows = 1, cols = 1, oshape[MAXR];
    int orank = 0;
    for (int d = 0; d < rank; d++) {
        if (mask[d]) {
            cols *= x->shape[d];
            if (keepdim)
                oshape[orank++] = 1;
        } else {
            rows *= x->shape[d];
            oshape[orank++] = x->shape[d];
        }
    }
    int moved = 0;
    for (int i = 0; i < rank; i++)
        moved |= perm[i] != i;
    tens tmp = {0};
    const tens *src = x;
    if (moved) {
        int64_t st[MAXR], pshape[MAXR], pst[MAXR];
        contiguous_strides(rank, x->shape, st);
        for (int i = 0; i < rank; i++) {
            pshape[i] = x->shape[perm[i]];
            pst[i] = st[perm[i]];
        }
        if (temp_tensor(E, &tmp, kind_of(x->dtype), rank, pshape))
            return -1;
        strided_copy(x, rank, pshape, pst, 0, &tmp);
        src = &tmp;
    }
    kind kx = kind_of(x->dtype), kr;
    switch (op) {
    case R_SUM:
        kr = kx == K_F ? K_F : K_I;
        break;
    case R_AMAX:
    case R_AMIN:
        kr = kx;
        break;
    case R_ANY:
    case R_ALL:
        kr = K_B;
        break;
    default:
        kr = K_F;
        break;
    }
    if (dt >= 0)
        kr = kind_of((cc_dtype)dt);
    tens *o = new_result(E, kr, orank, oshape), *o2 = NULL;
    if (o && op == R_VAR_MEAN)
        o2 = new_result(E, K_F, orank, oshape);
    if (!o || (op == R_VAR_MEAN && !o2)) {
        tfree(&tmp);
        return -1;
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = r * cols;
        double acc = 0;
        int64_t iacc = 0;
        switch (op) {
        case R_SUM:
        case R_MEAN:
            if (kx == K_F || op == R_MEAN || kr == K_F) {
                for (int64_t c = 0; c < cols; c++)
                    acc += ldd(src, b + c);
                if (op == R_MEAN)
                    acc /= (double)cols;
            } else {
                for (int64_t c = 0; c < cols; c++)
                    iacc += src->i[b + c];
                acc = (double)iacc;
            }
            break;
        case R_AMAX:
        case R_AMIN: {
            if (kx == K_F) {
                float m = op == R_AMAX ? -INFINITY : INFINITY;
                for (int64_t c = 0; c < cols; c++) {
                    float v = src->f[b + c];
                    if (isnan(v) || (op == R_AMAX ? v > m : v < m))
                        m = v;
                    if (isnan(v))
                        break;
                }
                acc = m;
            } else {
                iacc = op == R_AMAX ? INT64_MIN : INT64_MAX;
                for (int64_t c = 0; c < cols; c++) {
                    int64_t v = src->i[b + c];
                    if (op == R_AMAX ? v > iacc : v < iacc)
                        iacc = v;
                }
                acc = (double)iacc;
            }
            break;
        }
        case R_ANY:
        case R_ALL:
            iacc = op == R_ALL;
            for (int64_t c = 0; c < cols; c++) {
                int nz = ldd(src, b + c) != 0;
                if (op == R_ANY && nz)
                    iacc = 1;
                if (op == R_ALL && !nz)
                    iacc = 0;
            }
            acc = (double)iacc;
            break;
        default: { /* var, var_mean: two passes in double */
            double mean = 0, ss = 0;
            for (int64_t c = 0; c < cols; c++)
                mean += ldd(src, b + c);
            mean /= (double)cols;
            for (int64_t c = 0; c < cols; c++) {
                double dv = ldd(src, b + c) - mean;
                ss += dv * dv;
            }
            double den = (double)cols - correction;
            acc = ss / (den > 0 ? den : 0);
            if (op == R_STD)
                acc = sqrt(acc);
            if (o2)
                o2->f[r] = (float)mean;
            break;
        }
        }
        for (int w = 0; o->eb[0] && w < 2; w++) {
            double me = 0;
            o->eb[w][r] = (float)reduce_bound(src, b, cols, op, correction, kr, w, &me);
            if (o2)
                o2->eb[w][r] = (float)me;
        }
        if (kr == K_F)
            o->f[r] = (float)acc;
        else if (kr == K_B)
            o->i[r] = acc != 0;
        else
            o->i[r] = (op == R_SUM || op == R_AMAX || op == R_AMIN) && kx != K_F ? iacc : (int64_t)acc;
    }
    tfree(&tmp);
    return 0;
}

/* The reduced-dims mask from a dim argument: a list, one int, or None /
 * absent / [] for all dims. */
static int dims_mask(ex *E, const tens *x, int pos, const char *key, char *mask)
{
    int64_t dims[MAXR];
    int cnt;
    if (arg_ints(E, pos, key, dims, &cnt, MAXR))
        return -1;
    memset(mask, 0, MAXR);
    if (cnt <= 0) {
        memset(mask, 1, (size_t)x->rank);
        return 0;
    }
    for (int i = 0; i < cnt; i++) {
        int d = 0;
        if (norm_dim(E, dims[i], x->rank, &d))
            return -1;
        if (x->rank && mask[d])
            return fail(E, "dim %d appears twice", d);
        if (x->rank)
            mask[d] = 1;
    }
    return 0;
}

/* sum(self, dim=None, keepdim=False, dtype=None), mean, amax(self, dim=[],
 * keepdim=False), amin, any(self) / any.dim(self, dim, keepdim=False), all */
static int op_reduce(ex *E, int op)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    char mask[MAXR];
    int keep = 0, dt = -1;
    /* sum.default(self, dtype=None) and mean.default: dtype is positional 1 */
    const cc_arg *a1 = A(E, 1, NULL);
    if (a1 && a1->kind == CC_ARG_DTYPE) {
        memset(mask, 1, MAXR);
        dt = (int)a1->i;
    } else {
        if (dims_mask(E, x, 1, "dim", mask) || arg_bool(E, 2, "keepdim", 0, &keep))
            return -1;
        if ((op == R_SUM || op == R_MEAN) && arg_dtype(E, 3, "dtype", &dt))
            return -1;
    }
    if (dt < 0 && (op == R_SUM || op == R_MEAN) && arg_dtype(E, -1, "dtype", &dt))
        return -1;
    return reduce(E, x, mask, keep, op, 0, dt);
}

/* var(self, dim=None, correction=None, keepdim=False) (.correction),
 * var.dim(self, dim, unbiased=True, keepdim=False), var.default(self, unbiased=True);
 * var_mean likewise, giving (var, mean). */
static int op_var(ex *E, int op)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    char mask[MAXR];
    int keep = 0;
    double corr = 1;
    const cc_arg *a1 = A(E, 1, NULL);
    const char *ov = overload(E->node);
    if (a1 && a1->kind == CC_ARG_BOOL) { /* var.default(self, unbiased) */
        memset(mask, 1, MAXR);
        corr = a1->i ? 1 : 0;
    } else if (dims_mask(E, x, 1, "dim", mask)) {
        return -1;
    } else if (strcmp(ov, "dim") == 0) { /* var.dim(self, dim, unbiased=True, keepdim=False) */
        int unbiased = 1;
        if (arg_bool(E, 2, "unbiased", 1, &unbiased) || arg_bool(E, 3, "keepdim", 0, &keep))
            return -1;
        corr = unbiased;
    } else { /* .correction(self, dim=None, *, correction=None, keepdim=False) */
        if (arg_num(E, -1, "correction", 1, &corr) || arg_bool(E, -1, "keepdim", 0, &keep))
            return -1;
    }
    return reduce(E, x, mask, keep, op, corr, -1);
}

/* The bounds (track w) of y = softmax(x) over one row (D elements at
 * stride st, x with bounds ex) as the device computes it (the compiler's
 * decomposition: m = max x~, d = x~ - m, e = exp(d), s = sum e in fp32,
 * y = e / s, each stored in DL16).  Every error is written as a
 * perturbation Delta_j of the exponent (|Delta_j| <= D_j: the input's
 * bound, the rounding of d, the rounding of exp as log(1 + rho)), eta of
 * the sum and zeta of the quotient, so that
 *   y_j~ / y_j = e^Delta_j / (sum_k y_k e^Delta_k) (1 + zeta) / (1 + eta).
 * Track 0 bounds it at its extremes; track 1 takes it to first order,
 * Delta_j (1 - y_j) - sum_k!=j y_k Delta_k + zeta - eta, the sum over k in
 * quadrature, each term scaled by the exponential's growth over
 * EB_LAMBDA D_k.  A masked element (-inf, the device's -2^30) is exactly
 * 0.  Large logit bounds: the terms are formed in the log domain (y_k
 * underflows, e^(lambda D) overflows), each capped at 1 (a change of the
 * others moves y_j by at most y_j, its own by at most 1 - y_j), and the
 * result at max(y_j, y_max - y_j), y_max = (1 + zeta) / (1 - eta) the
 * largest value the device's e_j / s can take.  ey may be ex
 * (docs/validation.md). */
static void softmax_bound(const float *x, const float *ex, int64_t D, int64_t st, float *ey, int w)
{
    double m = -INFINITY, emax = 0, s = 0, s1 = 0, sp = 0, sm = 0, q2 = 0;
    int64_t nf = 0;
    int64_t jm = 0;
    for (int64_t j = 0; j < D; j++) {
        double v = x[j * st];
        if (isnan(v))
            m = NAN;
        if (isfinite(v)) {
            if (v > m)
                m = v, jm = j;
            nf++;
        }
    }
    if (!isfinite(m)) { /* every element masked, or a NaN: the reference is NaN */
        for (int64_t j = 0; j < D; j++)
            ey[j * st] = 0;
        return;
    }
    /* emax bounds |m~ - m|: m~ >= x~ at the max, and m~ - m <= x_k + E_k - m for every k */
    emax = ex[jm * st];
    for (int64_t j = 0; j < D; j++)
        if (isfinite(x[j * st]))
            emax = fmax(emax, (x[j * st] + eb_lam(w) * ex[j * st] - m) / eb_lam(w));
    for (int64_t j = 0; j < D; j++)
        if (isfinite(x[j * st]) && j != jm)
            s1 += exp(x[j * st] - m); /* 1 - y at the max is s1 / s, without cancellation */
    s = 1 + s1;
    double ls = log(s);
#define SM_DELTA(j) (ex[(j) * st] + EB_RHO * (fabs(x[(j) * st] - m) + ex[(j) * st] + emax) + EB_RHO / (1 - EB_RHO))
/* log of the growth g(d) = (e^(lambda d) - 1) / (lambda d) */
#define SM_LOGG(d) (EB_LAMBDA * (d) > 30 ? EB_LAMBDA * (d) - log(EB_LAMBDA * (d)) : log(SM_G(d)))
#define SM_G(d) ((d) > 0 ? expm1(EB_LAMBDA * (d)) / (EB_LAMBDA * (d)) : 1)
/* y_j D_j g(D_j), capped at 1 */
#define SM_T(j, dj) fmin(1, exp(x[(j) * st] - m - ls + log(dj) + SM_LOGG(dj)))
    for (int64_t j = 0; j < D; j++)
        if (isfinite(x[j * st])) {
            double ly = x[j * st] - m - ls, dj = SM_DELTA(j), t = SM_T(j, dj);
            sp += exp(ly + dj);
            sm += exp(ly - dj);
            q2 += t * t;
        }
    double eta = (1 + (double)nf * EB_ACC) * (1 + EB_RHO) - 1 + (double)nf * EB_FLUSH; /* s >= 1 */
    double zeta = (1 + EB_RHO) * (1 + EB_RHO) - 1, ymax = (1 + zeta) / (1 - eta);
    for (int64_t j = 0; j < D; j++) {
        if (!isfinite(x[j * st])) { /* masked: the device's exp gives exactly 0 */
            ey[j * st] = (float)(2 * EB_FLUSH);
            continue;
        }
        double ly = x[j * st] - m - ls, y = exp(ly), y1 = j == jm ? s1 / s : 1 - y, dj = SM_DELTA(j), r;
        if (w) {
            double t = SM_T(j, dj), others = sqrt(fmax(0, q2 - t * t));
            r = t * y1 + y * (others + zeta + eta);
        } else { /* y at the ratio's extremes, minus y */
            double up = sm > 0 ? exp(ly + dj - log(sm)) * (1 + zeta) / (1 - eta) - y : INFINITY;
            double lo = y - exp(ly - dj - log(sp)) * (1 - zeta) / (1 + eta);
            r = fmax(up, lo);
        }
        ey[j * st] = (float)(fmin(r, fmax(y, ymax - y)) + 2 * EB_FLUSH); /* exp's and y's flush to zero */
    }
#undef SM_DELTA
#undef SM_LOGG
#undef SM_G
#undef SM_T
}

/* The bounds (track w) of log_softmax over one row, as the device
 * computes it: d = x~ - max x~, s = sum exp(d), y = d - log(s), each
 * stored. */
static void log_softmax_bound(const float *x, const float *ex, int64_t D, int64_t st, float *ey, int w)
{
    double m = -INFINITY, emax = 0;
    for (int64_t j = 0; j < D; j++)
        if (!isinf(x[j * st])) {
            m = fmax(m, x[j * st]);
            emax = fmax(emax, ex[j * st]);
        }
    bv mb = {m, emax, w};
    eb_acc acc = {.w = w};
    for (int64_t j = 0; j < D; j++) {
        bv e = bv_fn(U_EXP, bv_sub((bv){x[j * st], ex[j * st], w}, mb));
        acc_add(&acc, e.v, e.e);
    }
    bv ls = bv_fn(U_LOG, acc_sum(&acc));
    for (int64_t j = 0; j < D; j++)
        ey[j * st] = (float)bv_sub(bv_sub((bv){x[j * st], ex[j * st], w}, mb), ls).e;
}

/* _softmax(self, dim, half_to_float), softmax.int(self, dim, dtype=None),
 * _log_softmax, log_softmax.int; computed in double over dim. */
static int op_softmax(ex *E, int logsm)
{
    const tens *x = arg_tensor(E, 0, "self");
    int64_t dim = 0;
    int d = 0;
    if (!x || arg_req_int(E, 1, "dim", &dim) || norm_dim(E, dim, x->rank, &d))
        return -1;
    tens *o = new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    int64_t D = x->rank ? x->shape[d] : 1, inner = x->rank ? numel(x->rank - d - 1, x->shape + d + 1) : 1;
    int64_t outer = D && inner ? x->n / (D * inner) : 0;
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t b = q * D * inner + i;
            double m = -INFINITY, s = 0;
            for (int w = 0; o->eb[0] && x->f && x->eb[0] && w < 2; w++)
                (logsm ? log_softmax_bound : softmax_bound)(x->f + b, x->eb[w] + b, D, inner, o->eb[w] + b, w);
            for (int64_t j = 0; j < D; j++) {
                double v = ldd(x, b + j * inner);
                if (v > m || isnan(v))
                    m = v;
            }
            for (int64_t j = 0; j < D; j++)
                s += exp(ldd(x, b + j * inner) - m);
            double ls = log(s);
            for (int64_t j = 0; j < D; j++) {
                double v = ldd(x, b + j * inner) - m;
                o->f[b + j * inner] = (float)(logsm ? v - ls : exp(v) / s);
            }
        }
    return 0;
}

/* The bounds (track w) of one row of a layer norm (cols elements of x
 * from base, weight w and bias b or NULL) into ey, as the device computes
 * it (the compiler's decomposition, each step stored): mean = sum(x) / N,
 * xc = x - mean, var = sum(xc * xc) / N, rstd = rsqrt(var + eps),
 * y = xc * rstd * w + b.  The mean and rstd (values and bounds) too. */
static void layer_norm_bound(const tens *x, int64_t base, int64_t cols, const tens *wt, const tens *b, double eps,
                             int w, float *ey, bv *mean, bv *rstd)
{
    eb_acc s1 = {.w = w}, s2 = {.w = w};
    for (int64_t c = 0; c < cols; c++)
        acc_add(&s1, ldd(x, base + c), ldb(x, w, base + c));
    *mean = cols ? bv_div(acc_sum(&s1), bv_k((double)cols)) : bv_k(0); /* the mean of no element: 0, exact */
    for (int64_t c = 0; c < cols; c++) {
        bv xc = bv_sub((bv){ldd(x, base + c), ldb(x, w, base + c), w}, *mean), sq = bv_mul(xc, xc);
        acc_add(&s2, sq.v, sq.e);
    }
    bv var = bv_div(acc_sum(&s2), bv_k((double)cols));
    *rstd = bv_fn(U_RSQRT, bv_add(var, bv_k(eps)));
    for (int64_t c = 0; c < cols; c++) {
        bv y = bv_mul(bv_sub((bv){ldd(x, base + c), ldb(x, w, base + c), w}, *mean), *rstd);
        if (wt)
            y = bv_mul(y, (bv){ldd(wt, c), ldb(wt, w, c), w});
        if (b)
            y = bv_add(y, (bv){ldd(b, c), ldb(b, w, c), w});
        ey[c] = (float)y.e;
    }
}

/* native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd);
 * layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05) -> out */
static int op_layer_norm(ex *E, int native)
{
    const tens *x = arg_tensor(E, 0, "input");
    if (!x)
        return -1;
    int64_t ns[MAXR];
    int cnt;
    double eps = 1e-5;
    if (arg_ints(E, 1, "normalized_shape", ns, &cnt, MAXR) || arg_num(E, 4, "eps", 1e-5, &eps))
        return -1;
    if (cnt < 0 || cnt > x->rank)
        return fail(E, "normalized_shape does not fit a rank-%d input", x->rank);
    int axis = x->rank - cnt;
    for (int i = 0; i < cnt; i++)
        if (x->shape[axis + i] != ns[i])
            return fail(E, "normalized_shape does not match the last %d dims of the input", cnt);
    const tens *w = NULL, *b = NULL;
    const cc_arg *aw = A(E, 2, "weight"), *abias = A(E, 3, "bias");
    if (present(aw) && !(w = tensor_of(E, aw, "weight")))
        return -1;
    if (present(abias) && !(b = tensor_of(E, abias, "bias")))
        return -1;
    /* rows from the leading dims: over an empty normalized shape each row
     * still has its mean (0) and rstd (NaN), as in PyTorch */
    int64_t cols = numel(cnt, ns), rows = numel(axis, x->shape);
    if ((w && w->n != cols) || (b && b->n != cols))
        return fail(E, "weight or bias does not have normalized_shape's %lld elements", (long long)cols);
    tens *o = new_result(E, K_F, x->rank, x->shape), *om = NULL, *orstd = NULL;
    if (!o)
        return -1;
    if (native) {
        int64_t sshape[MAXR];
        memcpy(sshape, x->shape, sizeof sshape);
        for (int i = axis; i < x->rank; i++)
            sshape[i] = 1;
        if (!(om = new_result(E, K_F, x->rank, sshape)) || !(orstd = new_result(E, K_F, x->rank, sshape)))
            return -1;
        o = &E->res[E->nres - 3]; /* the array may have moved */
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            mean += ldd(x, base + c);
        mean = cols ? mean / (double)cols : 0;
        for (int64_t c = 0; c < cols; c++) {
            double dv = ldd(x, base + c) - mean;
            var += dv * dv;
        }
        var /= (double)cols;
        double rstd = 1 / sqrt(var + eps);
        for (int64_t c = 0; c < cols; c++) {
            double y = (ldd(x, base + c) - mean) * rstd;
            if (w)
                y *= ldd(w, c);
            if (b)
                y += ldd(b, c);
            o->f[base + c] = (float)y;
        }
        if (native) {
            E->res[E->nres - 2].f[r] = (float)mean;
            E->res[E->nres - 1].f[r] = (float)rstd;
        }
        for (int t = 0; o->eb[0] && t < 2; t++) {
            bv bm, br;
            layer_norm_bound(x, base, cols, w, b, eps, t, o->eb[t] + base, &bm, &br);
            if (native) {
                E->res[E->nres - 2].eb[t][r] = (float)bm.e;
                E->res[E->nres - 1].eb[t][r] = (float)br.e;
            }
        }
    }
    return 0;
}

/* ---- Matrix products (OpenBLAS) ---- */

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* C[M,N] = A[M,K] (or its transpose) x B[K,N] (or its transpose), row-major. */
static int gemm(ex *E, int ta, int tb, int64_t M, int64_t N, int64_t K, const float *a, int64_t lda, const float *b,
                int64_t ldb, float *c, int64_t ldc)
{
    if (!fits_int(M) || !fits_int(N) || !fits_int(K) || !fits_int(lda) || !fits_int(ldb) || !fits_int(ldc))
        return fail(E, "matrix too large for BLAS");
    if (!M || !N)
        return 0;
    if (!K) {
        for (int64_t i = 0; i < M; i++)
            memset(c + i * ldc, 0, (size_t)N * sizeof *c);
        return 0;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                1.0f, a, (int)(lda ? lda : 1), b, (int)(ldb ? ldb : 1), 0.0f, c, (int)(ldc ? ldc : 1));
    return 0;
}

/* x as fp32: x->f, or a converted copy in *owned. */
static const float *as_f32(ex *E, const tens *x, float **owned)
{
    *owned = NULL;
    if (x->f)
        return x->f;
    *owned = malloc((x->n ? (size_t)x->n : 1) * sizeof **owned);
    if (!*owned) {
        fail(E, "out of host memory");
        return NULL;
    }
    for (int64_t k = 0; k < x->n; k++)
        (*owned)[k] = (float)x->i[k];
    return *owned;
}

static int mm_shapes_fail(ex *E, const tens *a, const tens *b)
{
    char s1[256], s2[256];
    shape_str("", a->rank, a->shape, s1, sizeof s1);
    shape_str("", b->rank, b->shape, s2, sizeof s2);
    return fail(E, "shapes %s and %s cannot be multiplied", s1, s2);
}

/* out = beta * bias (broadcast to out) + alpha * out */
static int add_scaled_bias(ex *E, tens *o, const tens *bias, double alpha, double beta)
{
    const tens *ts[2] = {o, bias};
    int rank = 0;
    int64_t shape[MAXR];
    if (bcast(E, 2, ts, &rank, shape))
        return -1;
    if (rank != o->rank || memcmp(shape, o->shape, (size_t)rank * sizeof *shape))
        return fail(E, "the added tensor does not broadcast to the product's shape");
    iter it;
    iter_tensors(&it, rank, shape, 2, ts);
    float al = (float)alpha, be = (float)beta;
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        for (int w = 0; o->eb[0] && w < 2; w++) { /* the product stored, then alpha *, beta * bias, + */
            bv pr = {o->f[k], o->eb[w][k], w};
            if (alpha != 1)
                pr = bv_mul(pr, bv_k(alpha));
            if (beta != 0) {
                bv bb = {ldd(bias, it.off[1]), ldb(bias, w, it.off[1]), w};
                pr = bv_add(pr, beta == 1 ? bb : bv_mul(bb, bv_k(beta)));
            }
            o->eb[w][k] = (float)pr.e;
        }
        float p = alpha == 1 ? o->f[k] : al * o->f[k];
        o->f[k] = beta == 0 ? p : beta == 1 ? ldf(bias, it.off[1]) + p : be * ldf(bias, it.off[1]) + p;
    }
    return 0;
}

/* matmul's batch geometry: out = a x b, b one matrix (a's batch folded
 * into rows) or batches of n x k times k x m, broadcast. */
typedef struct {
    const tens *a, *b;
    int64_t n, k, m, batches;
    int br, bra, brb;
    int64_t bshape[MAXR];
} mm_geom;

static int mm_apply(ex *E, const mm_geom *g, const float *fa, const float *fb, float *out)
{
    int64_t n = g->n, k = g->k, m = g->m;
    if (g->brb == 0 || g->batches == 1) {
        /* b is one matrix: fold a's batch into rows */
        int64_t rows = g->a->n / (k ? k : 1);
        if (!k)
            rows = numel(g->a->rank - 1, g->a->shape);
        return gemm(E, 0, 0, rows, m, k, fa, k, fb, m, out, m);
    }
    int ranks[2] = {g->bra, g->brb}, rc = 0;
    const int64_t *shapes[2] = {g->a->shape, g->b->shape};
    iter it;
    iter_init(&it, g->br, g->bshape, 2, ranks, shapes);
    for (int64_t q = 0; q < g->batches && !rc; q++, iter_next(&it))
        rc = gemm(E, 0, 0, n, m, k, fa + it.off[0] * n * k, k, fb + it.off[1] * k * m, m, out + q * n * m, m);
    return rc;
}

/* A product as mm_apply does it (linear 0), or x (rows x K) times w^T
 * (w M x K) as linear does it. */
typedef struct {
    int linear;
    mm_geom g;
    int64_t rows, M, K;
} mm_plan;

static int mm_prod(ex *E, const mm_plan *p, const float *a, const float *b, float *out)
{
    if (p->linear)
        return gemm(E, 0, 1, p->rows, p->M, p->K, a, p->K, b, p->K, out, p->M);
    return mm_apply(E, &p->g, a, b, out);
}

/* The bounds of a matrix product C = A B (the PT unit: operands in DL16,
 * exact products, K fp32 sums, C stored in DL16; docs/validation.md), per
 * element, track 0:
 *   (1+u) (E_A |B| + |A| E_B) + E_A E_B + K 2^-23 |A||B| + u |C|
 * as the two products (K 2^-23 |A| + (1+u) E_A) |B| and ((1+u)|A| + E_A) E_B;
 * track 1, the terms of the sum over k in quadrature:
 *   (1+u) (sqrt(S_A^2 (|B| + lambda S_B)^2) + sqrt(A^2 S_B^2)) + K 2^-23 |A||B| + u |C|
 * (squares and roots elementwise, the products over k).  Both with the
 * flush to zero of a result below 2^-31. */
static int mm_bounds(ex *E, const mm_plan *p, const float *fa, const tens *a, const float *fb, const tens *b, tens *o)
{
    size_t na = a->n ? (size_t)a->n : 1, nb = b->n ? (size_t)b->n : 1, no = o->n ? (size_t)o->n : 1;
    float *a1 = malloc(na * sizeof *a1), *a2 = malloc(na * sizeof *a2);
    float *b1 = malloc(nb * sizeof *b1), *b2 = malloc(nb * sizeof *b2);
    float *t1 = malloc(no * sizeof *t1), *t2 = malloc(no * sizeof *t2);
    int rc = a1 && a2 && b1 && b2 && t1 && t2 ? 0 : fail(E, "out of host memory");
    const double K = (double)p->K, u = EB_U, lam = EB_LAMBDA;
    /* track 0 */
    for (int64_t i = 0; !rc && i < a->n; i++) {
        double x = fabs(fa[i]), e = ldb(a, 0, i);
        a1[i] = (float)(K * EB_ACC * x + (1 + u) * e);
        a2[i] = (float)((1 + u) * x + e);
    }
    for (int64_t i = 0; !rc && i < b->n; i++) {
        b1[i] = fabsf(fb[i]);
        b2[i] = (float)ldb(b, 0, i);
    }
    if (!rc)
        rc = mm_prod(E, p, a1, b1, o->eb[0]) || mm_prod(E, p, a2, b2, t1) ? -1 : 0;
    for (int64_t i = 0; !rc && i < o->n; i++) {
        double c = fabs(o->f[i]), q = (double)o->eb[0][i] + t1[i], r = u * c;
        o->eb[0][i] = (float)(q + (c - q < EB_FLUSH ? fmax(r, EB_FLUSH) : r));
    }
    /* track 1: S_A^2 (|B| + lambda S_B)^2, A^2 S_B^2, |A||B| */
    for (int64_t i = 0; !rc && i < a->n; i++) {
        double e = ldb(a, 1, i);
        a1[i] = (float)(e * e);
        a2[i] = fa[i] * fa[i];
    }
    for (int64_t i = 0; !rc && i < b->n; i++) {
        double e = ldb(b, 1, i), x = fabs(fb[i]) + lam * e;
        b2[i] = (float)(x * x);
    }
    if (!rc)
        rc = mm_prod(E, p, a1, b2, t1) ? -1 : 0;
    for (int64_t i = 0; !rc && i < b->n; i++) {
        double e = ldb(b, 1, i);
        b2[i] = (float)(e * e);
    }
    for (int64_t i = 0; !rc && i < a->n; i++)
        a1[i] = fabsf(fa[i]);
    if (!rc)
        rc = mm_prod(E, p, a2, b2, t2) || mm_prod(E, p, a1, b1, o->eb[1]) ? -1 : 0;
    for (int64_t i = 0; !rc && i < o->n; i++) {
        double c = fabs(o->f[i]), r = u * c;
        double q = (1 + u) * (sqrt(fmax(0, t1[i])) + sqrt(fmax(0, t2[i]))) + K * EB_ACC * o->eb[1][i];
        r = c - lam * q < EB_FLUSH ? fmax(r, EB_FLUSH) : r;
        o->eb[1][i] = (float)sqrt(q * q + r * r);
    }
    free(a1), free(a2), free(b1), free(b2), free(t1), free(t2);
    return rc;
}

/* matmul with PyTorch's rules: 1-D operands get a dim added and removed,
 * batch dims broadcast.  mm and bmm check their ranks first.  The product
 * is the next result, or (tmp not NULL) the temporary *tmp. */
static int matmul(ex *E, const tens *a, const tens *b, tens **out, tens *tmp)
{
    if (a->rank == 0 || b->rank == 0)
        return fail(E, "matmul of a rank-0 tensor");
    int ra = a->rank, rb = b->rank;
    int64_t n = ra >= 2 ? a->shape[ra - 2] : 1, k = a->shape[ra - 1];
    int64_t kb = rb >= 2 ? b->shape[rb - 2] : b->shape[0], m = rb >= 2 ? b->shape[rb - 1] : 1;
    if (k != kb)
        return mm_shapes_fail(E, a, b);
    /* batch dims */
    int bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0, br = bra > brb ? bra : brb;
    int64_t bshape[MAXR];
    for (int d = 0; d < br; d++) {
        int da = d - (br - bra), db = d - (br - brb);
        int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        if (x != y && x != 1 && y != 1)
            return mm_shapes_fail(E, a, b);
        bshape[d] = x == 1 ? y : x;
    }
    int64_t oshape[MAXR];
    int orank = br;
    memcpy(oshape, bshape, (size_t)br * sizeof *oshape);
    if (ra >= 2)
        oshape[orank++] = n;
    if (rb >= 2)
        oshape[orank++] = m;
    tens *o = tmp;
    if (tmp ? temp_tensor(E, tmp, K_F, orank, oshape) : !(o = new_result(E, K_F, orank, oshape)))
        return -1;
    *out = o;
    float *oa, *ob;
    const float *fa = as_f32(E, a, &oa), *fb = fa ? as_f32(E, b, &ob) : NULL;
    if (!fb) {
        free(oa);
        return -1;
    }
    mm_geom g = {a, b, n, k, m, numel(br, bshape), br, bra, brb, {0}};
    memcpy(g.bshape, bshape, sizeof g.bshape);
    int rc = mm_apply(E, &g, fa, fb, o->f);
    if (!rc && o->eb[0]) {
        mm_plan pl = {0, g, 0, 0, k};
        rc = mm_bounds(E, &pl, fa, a, fb, b, o);
    }
    free(oa);
    free(ob);
    return rc;
}

enum { M_MM, M_BMM, M_MATMUL, M_ADDMM, M_BADDBMM, M_LINEAR };

/* mm(self, mat2), bmm(self, mat2), matmul(self, other),
 * addmm(self, mat1, mat2, beta=1, alpha=1), baddbmm(self, batch1, batch2, beta=1, alpha=1),
 * linear(input, weight, bias=None) */
static int op_matmul(ex *E, int how)
{
    tens *o = NULL;
    if (how == M_LINEAR) {
        const tens *x = arg_tensor(E, 0, "input"), *w = x ? arg_tensor(E, 1, "weight") : NULL;
        if (!w)
            return -1;
        const cc_arg *ab = A(E, 2, "bias");
        const tens *b = present(ab) ? tensor_of(E, ab, "bias") : NULL;
        if (present(ab) && !b)
            return -1;
        if (x->rank == 0 || w->rank != 2 || x->shape[x->rank - 1] != w->shape[1])
            return mm_shapes_fail(E, x, w);
        int64_t shape[MAXR], K = w->shape[1], M = w->shape[0], rows = numel(x->rank - 1, x->shape);
        memcpy(shape, x->shape, sizeof shape);
        shape[x->rank - 1] = M;
        if (!(o = new_result(E, K_F, x->rank, shape)))
            return -1;
        float *ox, *ow;
        const float *fx = as_f32(E, x, &ox), *fw = fx ? as_f32(E, w, &ow) : NULL;
        int rc = fw ? gemm(E, 0, 1, rows, M, K, fx, K, fw, K, o->f, M) : -1;
        if (!rc && o->eb[0]) { /* the mm bounds with w transposed */
            mm_plan pl = {1, {0}, rows, M, K};
            rc = mm_bounds(E, &pl, fx, x, fw, w, o);
        }
        free(ox);
        if (fw)
            free(ow);
        if (rc)
            return -1;
        return b ? add_scaled_bias(E, o, b, 1, 1) : 0;
    }
    int three = how == M_ADDMM || how == M_BADDBMM;
    const char *k1 = how == M_ADDMM ? "mat1" : how == M_BADDBMM ? "batch1" : "self";
    const char *k2 = how == M_ADDMM ? "mat2" : how == M_BADDBMM ? "batch2" : how == M_MATMUL ? "other" : "mat2";
    const tens *bias = three ? arg_tensor(E, 0, "self") : NULL;
    if (three && !bias)
        return -1;
    const tens *a = arg_tensor(E, three, k1), *b = a ? arg_tensor(E, three + 1, k2) : NULL;
    if (!b)
        return -1;
    int want = how == M_MM || how == M_ADDMM ? 2 : how == M_BMM || how == M_BADDBMM ? 3 : 0;
    if (want && (a->rank != want || b->rank != want || (want == 3 && a->shape[0] != b->shape[0])))
        return mm_shapes_fail(E, a, b);
    if (matmul(E, a, b, &o, NULL))
        return -1;
    if (!three)
        return 0;
    double beta, alpha;
    if (arg_num(E, 3, "beta", 1, &beta) || arg_num(E, 4, "alpha", 1, &alpha))
        return -1;
    return add_scaled_bias(E, o, bias, alpha, beta);
}

/* scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
 * is_causal=False, scale=None): softmax(q k^T * scale + mask) v, with a bool
 * mask keeping where true, a float mask added, is_causal keeping j <= i. */
static int op_sdpa(ex *E, int unused)
{
    (void)unused;
    const tens *q = arg_tensor(E, 0, "query"), *k = q ? arg_tensor(E, 1, "key") : NULL;
    const tens *v = k ? arg_tensor(E, 2, "value") : NULL;
    if (!v)
        return -1;
    const cc_arg *am = A(E, 3, "attn_mask");
    const tens *mask = present(am) ? tensor_of(E, am, "attn_mask") : NULL;
    double p, scale;
    int causal = 0;
    if ((present(am) && !mask) || arg_num(E, 4, "dropout_p", 0, &p) || arg_bool(E, 5, "is_causal", 0, &causal))
        return -1;
    if (p != 0)
        return fail(E, "attention dropout with p=%g is random: the reference runs only p=0", p);
    if (q->rank < 2 || k->rank < 2 || v->rank < 2)
        return fail(E, "query, key and value need rank >= 2");
    if (arg_num(E, 6, "scale", 1 / sqrt((double)q->shape[q->rank - 1]), &scale))
        return -1;
    /* kt = k^T over the last two dims */
    tens kt, s = {0};
    int64_t st[MAXR], shape[MAXR];
    contiguous_strides(k->rank, k->shape, st);
    memcpy(shape, k->shape, sizeof shape);
    int r = k->rank;
    int64_t tmp = shape[r - 1];
    shape[r - 1] = shape[r - 2];
    shape[r - 2] = tmp;
    tmp = st[r - 1];
    st[r - 1] = st[r - 2];
    st[r - 2] = tmp;
    if (temp_tensor(E, &kt, kind_of(k->dtype), r, shape))
        return -1;
    strided_copy(k, r, shape, st, 0, &kt);
    tens *sp = NULL;
    int rc = matmul(E, q, &kt, &sp, &s);
    tfree(&kt);
    if (rc)
        return -1;
    int64_t L = s.shape[s.rank - 2], S = s.shape[s.rank - 1];
    if (mask) {
        const tens *ts[2] = {&s, mask};
        int mr;
        int64_t ms[MAXR];
        if (bcast(E, 2, ts, &mr, ms)) {
            tfree(&s);
            return -1;
        }
        if (mr != s.rank || memcmp(ms, s.shape, (size_t)mr * sizeof *ms)) {
            tfree(&s);
            return fail(E, "attn_mask does not broadcast to the scores");
        }
    }
    iter it;
    const tens *ts[2] = {&s, mask ? mask : &s};
    iter_tensors(&it, s.rank, s.shape, 2, ts);
    for (int64_t e = 0; e < s.n; e++, iter_next(&it)) {
        int64_t i = (e / S) % L, j = e % S;
        float x = (float)(s.f[e] * scale);
        for (int w = 0; s.eb[0] && w < 2; w++) { /* the scores scaled, then masked (a select, or an add) */
            bv b = bv_mul((bv){s.f[e], s.eb[w][e], w}, bv_k(scale));
            if (mask && kind_of(mask->dtype) == K_B)
                b.e = select_bound(eb_flips(ldd(mask, it.off[1]), ldb(mask, w, it.off[1]), w), b.v, b.e, -INFINITY, 0,
                                   mask->i[it.off[1]] != 0, w);
            else if (mask)
                b = bv_add(b, (bv){ldd(mask, it.off[1]), ldb(mask, w, it.off[1]), w});
            s.eb[w][e] = (float)(causal && j > i ? 0 : b.e);
        }
        if (mask && kind_of(mask->dtype) == K_B)
            x = mask->i[it.off[1]] ? x : -INFINITY;
        else if (mask)
            x += ldf(mask, it.off[1]);
        if (causal && j > i)
            x = -INFINITY;
        s.f[e] = x;
        for (int w = 0; s.eb[0] && w < 2; w++)
            if (!isfinite(x) && isfinite(s.eb[w][e]))
                s.eb[w][e] = 0;
    }
    /* softmax over the last dim, in double */
    for (int64_t row = 0; S && row < s.n / S; row++) {
        float *x = s.f + row * S;
        for (int w = 0; s.eb[0] && w < 2; w++)
            softmax_bound(x, s.eb[w] + row * S, S, 1, s.eb[w] + row * S, w);
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++)
            m = x[j] > m ? x[j] : m;
        for (int64_t j = 0; j < S; j++)
            sum += exp(x[j] - m);
        for (int64_t j = 0; j < S; j++)
            x[j] = (float)(exp(x[j] - m) / sum);
    }
    tens *o;
    rc = matmul(E, &s, v, &o, NULL);
    tfree(&s);
    return rc;
}

/* repeat(self, repeats): the tensor tiled repeats[d] times along each dim
 * (leading repeats add dims). */
static int op_repeat(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self");
    int64_t rep[MAXR];
    int cnt;
    if (!x || arg_ints(E, 1, "repeats", rep, &cnt, MAXR))
        return -1;
    if (cnt < x->rank)
        return fail(E, "repeats has fewer entries than the tensor has dims");
    int64_t xs[MAXR], shape[MAXR];
    for (int d = 0; d < cnt; d++) {
        int od = d - (cnt - x->rank);
        xs[d] = od < 0 ? 1 : x->shape[od];
        if (rep[d] < 0)
            return fail(E, "negative repeat %lld", (long long)rep[d]);
        if (rep[d] && xs[d] > INT64_MAX / rep[d] / 2)
            return fail(E, "repeats too large");
        shape[d] = xs[d] * rep[d];
    }
    tens *o = new_result(E, kind_of(x->dtype), cnt, shape);
    if (!o)
        return -1;
    int64_t st[MAXR], idx[MAXR] = {0};
    contiguous_strides(cnt, xs, st);
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

enum { RS_FLATTEN, RS_UNFLATTEN, RS_AS };

/* flatten(self, start_dim=0, end_dim=-1), unflatten(self, dim, sizes),
 * view_as / reshape_as(self, other): reshapes */
static int op_reshape_like(ex *E, int how)
{
    const tens *x = arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int64_t shape[MAXR + MAXR];
    int rank = 0;
    if (how == RS_AS) {
        const tens *o = arg_tensor(E, 1, "other");
        if (!o)
            return -1;
        if (o->n != x->n)
            return fail(E, "other has %lld elements, self %lld", (long long)o->n, (long long)x->n);
        return result_reshaped(E, x, o->rank, o->shape);
    }
    if (how == RS_FLATTEN) {
        int64_t a = 0, b = 0;
        int s = 0, e = 0;
        if (arg_int(E, 1, "start_dim", 0, &a) || arg_int(E, 2, "end_dim", -1, &b) || norm_dim(E, a, x->rank, &s) ||
            norm_dim(E, b, x->rank, &e))
            return -1;
        if (x->rank == 0)
            return result_reshaped(E, x, 1, (int64_t[]){1});
        if (s > e)
            return fail(E, "start_dim after end_dim");
        for (int d = 0; d < s; d++)
            shape[rank++] = x->shape[d];
        shape[rank++] = numel(e - s + 1, x->shape + s);
        for (int d = e + 1; d < x->rank; d++)
            shape[rank++] = x->shape[d];
        return result_reshaped(E, x, rank, shape);
    }
    int64_t dim = 0, sz[MAXR];
    int d = 0, cnt;
    if (arg_req_int(E, 1, "dim", &dim) || norm_dim(E, dim, x->rank, &d) || arg_ints(E, 2, "sizes", sz, &cnt, MAXR))
        return -1;
    if (cnt < 1 || x->rank - 1 + cnt > MAXR)
        return fail(E, "sizes must have 1 to %d entries", MAXR - x->rank + 1);
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < cnt; i++) {
        if (sz[i] == -1 && infer < 0)
            infer = i;
        else if (sz[i] < 0)
            return fail(E, "bad size %lld", (long long)sz[i]);
        else
            known = sat_mul(known, sz[i]);
    }
    if (infer >= 0)
        sz[infer] = known ? x->shape[d] / known : 0;
    if (numel(cnt, sz) != x->shape[d])
        return fail(E, "sizes do not multiply to the size %lld of dim %d", (long long)x->shape[d], d);
    for (int i = 0; i < d; i++)
        shape[rank++] = x->shape[i];
    for (int i = 0; i < cnt; i++)
        shape[rank++] = sz[i];
    for (int i = d + 1; i < x->rank; i++)
        shape[rank++] = x->shape[i];
    return result_reshaped(E, x, rank, shape);
}

/* type_as(self, other): self cast to other's dtype */
static int op_type_as(ex *E, int unused)
{
    (void)unused;
    const tens *x = arg_tensor(E, 0, "self"), *o = x ? arg_tensor(E, 1, "other") : NULL;
    return o ? result_as(E, x, kind_of(o->dtype), x->rank, x->shape) : -1;
}

/* ---- The op table ---- */

typedef int (*op_fn)(ex *E, int code);

static const struct {
    const char *base;
    op_fn fn;
    int code;
} op_table[] = {
    /* matrix products (cblas_sgemm) */
    {"mm", op_matmul, M_MM},             /* self @ mat2, 2-D */
    {"bmm", op_matmul, M_BMM},           /* batched, 3-D */
    {"matmul", op_matmul, M_MATMUL},     /* 1-D / 2-D / batched with broadcast */
    {"addmm", op_matmul, M_ADDMM},       /* beta self + alpha mat1 @ mat2 */
    {"baddbmm", op_matmul, M_BADDBMM},   /* beta self + alpha batch1 @ batch2 */
    {"linear", op_matmul, M_LINEAR},     /* input @ weight^T + bias */
    {"scaled_dot_product_attention", op_sdpa, 0}, /* softmax(q k^T scale + mask) v */
    /* elementwise, broadcasting; Tensor and Scalar overloads */
    {"add", op_binary, B_ADD},           /* self + alpha other */
    {"sub", op_binary, B_SUB},           /* self - alpha other */
    {"rsub", op_binary, B_RSUB},         /* other - alpha self */
    {"mul", op_binary, B_MUL},
    {"div", op_binary, B_DIV},           /* true division, or rounding_mode trunc / floor */
    {"pow", op_binary, B_POW},
    {"minimum", op_binary, B_MIN},       /* NaN propagates */
    {"maximum", op_binary, B_MAX},
    {"eq", op_binary, B_EQ},
    {"ne", op_binary, B_NE},
    {"lt", op_binary, B_LT},
    {"gt", op_binary, B_GT},
    {"le", op_binary, B_LE},
    {"ge", op_binary, B_GE},
    {"logical_and", op_binary, B_LAND},
    {"logical_or", op_binary, B_LOR},
    {"logical_xor", op_binary, B_LXOR},
    {"bitwise_and", op_binary, B_BAND},
    {"bitwise_or", op_binary, B_BOR},
    {"bitwise_xor", op_binary, B_BXOR},
    {"neg", op_unary, U_NEG},
    {"exp", op_unary, U_EXP},
    {"log", op_unary, U_LOG},
    {"sqrt", op_unary, U_SQRT},
    {"rsqrt", op_unary, U_RSQRT},
    {"tanh", op_unary, U_TANH},
    {"sigmoid", op_unary, U_SIGMOID},
    {"relu", op_unary, U_RELU},
    {"silu", op_unary, U_SILU},          /* x sigmoid(x) */
    {"square", op_unary, U_SQUARE},
    {"gelu", op_unary, U_GELU},          /* approximate "none" (erf) or "tanh" */
    {"sin", op_unary, U_SIN},
    {"cos", op_unary, U_COS},
    {"abs", op_unary, U_ABS},
    {"reciprocal", op_unary, U_RECIP},
    {"erf", op_unary, U_ERF},
    {"log1p", op_unary, U_LOG1P},
    {"expm1", op_unary, U_EXPM1},
    {"floor", op_unary, U_FLOOR},
    {"ceil", op_unary, U_CEIL},
    {"round", op_unary, U_ROUND},
    {"trunc", op_unary, U_TRUNC},
    {"sign", op_unary, U_SIGN},
    {"logical_not", op_unary, U_LNOT},
    {"bitwise_not", op_unary, U_BNOT},
    {"clamp", op_clamp, CL_BOTH},
    {"clamp_min", op_clamp, CL_MIN},
    {"clamp_max", op_clamp, CL_MAX},
    {"where", op_where, 0},              /* condition ? self : other */
    {"masked_fill", op_masked_fill, 0},  /* mask ? value : self */
    /* copies and casts */
    {"clone", op_copy, 0},
    {"contiguous", op_copy, 0},
    {"alias", op_copy, 0},
    {"detach", op_copy, 0},
    {"lift_fresh_copy", op_copy, 0},
    {"_to_copy", op_copy, 0},            /* dtype= casts */
    {"to", op_copy, 0},
    {"type_as", op_type_as, 0},          /* cast to other's dtype */
    {"copy", op_copy_into, 0},           /* src broadcast into self's shape and dtype */
    {"native_dropout", op_dropout, 1},   /* identity and an all-true mask (p=0 or train=False) */
    {"dropout", op_dropout, 0},
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
    {"select", op_select, 0},
    {"split", op_split, SP_SIZE},
    {"split_with_sizes", op_split, SP_SIZES},
    {"chunk", op_split, SP_CHUNK},
    {"unbind", op_split, SP_UNBIND},
    {"getitem", op_getitem, 0},
    {"unsqueeze", op_unsqueeze, 0},
    {"squeeze", op_squeeze, 0},          /* all size-1 dims, one dim, or a list */
    {"cat", op_cat, 0},
    {"stack", op_cat, 1},
    {"triu", op_tri, 1},
    {"tril", op_tri, 0},
    {"repeat_interleave", op_repeat_interleave, 0},
    {"repeat", op_repeat, 0},            /* tile */
    {"embedding", op_embedding, 0},      /* weight[indices] */
    /* creation */
    {"full", op_create, C_FULL},
    {"zeros", op_create, C_ZEROS},
    {"ones", op_create, C_ONES},
    {"empty", op_create, C_EMPTY},       /* zeros (deterministic) */
    {"scalar_tensor", op_create, C_SCALAR},
    {"full_like", op_create, C_FULL_LIKE},
    {"empty_like", op_create, C_ZEROS_LIKE}, /* zeros (deterministic) */
    {"zeros_like", op_create, C_ZEROS_LIKE},
    {"ones_like", op_create, C_ONES_LIKE},
    {"new_zeros", op_create, C_NEW_ZEROS},
    {"new_ones", op_create, C_NEW_ONES},
    {"new_full", op_create, C_NEW_FULL},
    {"new_empty", op_create, C_NEW_EMPTY},
    {"arange", op_arange, 0},
    /* reductions (accumulated in double) */
    {"sum", op_reduce, R_SUM},
    {"mean", op_reduce, R_MEAN},
    {"amax", op_reduce, R_AMAX},
    {"amin", op_reduce, R_AMIN},
    {"any", op_reduce, R_ANY},
    {"all", op_reduce, R_ALL},
    {"var", op_var, R_VAR},              /* correction (default 1) or unbiased */
    {"var_mean", op_var, R_VAR_MEAN},    /* (var, mean) */
    {"std", op_var, R_STD},              /* sqrt(var) */
    {"_softmax", op_softmax, 0},
    {"softmax", op_softmax, 0},
    {"_log_softmax", op_softmax, 1},
    {"log_softmax", op_softmax, 1},
    {"native_layer_norm", op_layer_norm, 1}, /* (out, mean, rstd) */
    {"layer_norm", op_layer_norm, 0},
};

/* The op table row of a node, or -1. */
static int find_op(const cc_node *n)
{
    if (strncmp(n->op, "aten.", 5) != 0 && strcmp(n->op, "getitem") != 0)
        return -1;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (strcmp(n->base, op_table[i].base) == 0)
            return (int)i;
    return -1;
}

/* ---- The executor ---- */

rt_ref *rt_ref_new(const cc_graph *g, char *err, size_t errlen)
{
    rt_ref *r = calloc(1, sizeof *r);
    if (!r) {
        rt_errf(err, errlen, "%s: out of host memory", g->path);
        return NULL;
    }
    r->g = g;
    size_t nv = g->nvalues ? (size_t)g->nvalues : 1;
    r->vals = calloc(nv, sizeof *r->vals);
    r->keep = calloc(nv, 1);
    r->last_use = malloc(nv * sizeof *r->last_use);
    if (!r->vals || !r->keep || !r->last_use) {
        rt_ref_free(r);
        rt_errf(err, errlen, "%s: out of host memory", g->path);
        return NULL;
    }
    for (int n = 0; n < g->nnodes; n++)
        if (find_op(&g->nodes[n]) == -1) {
            rt_errf(err, errlen, "%s:%d: unsupported op %s", g->path, g->nodes[n].line, g->nodes[n].op);
            rt_ref_free(r);
            return NULL;
        }
    return r;
}

void rt_ref_free(rt_ref *r)
{
    if (!r)
        return;
    if (r->vals)
        for (int i = 0; i < r->g->nvalues; i++)
            slot_free(&r->vals[i]);
    free(r->vals);
    free(r->keep);
    free(r->last_use);
    for (int i = 0; i < r->nres; i++)
        tfree(&r->res[i]);
    free(r->res);
    free(r);
}

void rt_ref_keep(rt_ref *r, int v)
{
    if (v >= 0 && v < r->g->nvalues)
        r->keep[v] = 1;
}

/* The input or parameter called name (value name, %name or weight key). */
static int find_leaf(const cc_graph *g, const char *name)
{
    int v = cc_graph_find(g, name);
    if (v >= 0 && g->values[v].kind != CC_VAL_NODE)
        return v;
    for (int i = 0; i < g->nparams; i++)
        if (strcmp(g->values[g->params[i]].param_key, name) == 0)
            return g->params[i];
    return v >= 0 ? -2 : -1;
}

/* Set leaf v from count values of either type. */
static int set_leaf(rt_ref *r, int v, const float *f, const int64_t *i, int64_t count, char *err, size_t errlen)
{
    const cc_value *val = &r->g->values[v];
    int64_t n = cc_ttype_numel(&val->type);
    if (count != n) {
        char ts[256];
        cc_ttype_str(&val->type, ts, sizeof ts);
        return rt_errf(err, errlen, "%s:%d: %%%s is %s (%lld elements) but %lld values were given", r->g->path,
                       val->line, val->name, ts, (long long)n, (long long)count);
    }
    slot *s = &r->vals[v];
    slot_free(s);
    s->t = calloc(1, sizeof *s->t);
    if (!s->t)
        return rt_errf(err, errlen, "out of host memory");
    s->nt = 1;
    tens *t = s->t;
    t->dtype = val->type.dtype;
    t->rank = val->type.rank;
    memcpy(t->shape, val->type.shape, sizeof t->shape);
    t->n = n;
    kind k = kind_of(t->dtype);
    size_t m = n ? (size_t)n : 1;
    if (k == K_F)
        t->f = malloc(m * sizeof *t->f);
    else
        t->i = malloc(m * sizeof *t->i);
    if (!t->f && !t->i) {
        slot_free(s);
        return rt_errf(err, errlen, "out of host memory for %%%s", val->name);
    }
    for (int64_t j = 0; j < n; j++) {
        if (k == K_F)
            t->f[j] = f ? f[j] : (float)i[j];
        else if (f)
            t->i[j] = k == K_B ? f[j] != 0 : (int64_t)f[j];
        else
            t->i[j] = k == K_B ? i[j] != 0 : i[j];
    }
    return 0;
}

static int set_named(rt_ref *r, const char *name, const float *f, const int64_t *i, int64_t count, char *err,
                     size_t errlen)
{
    int v = find_leaf(r->g, name);
    if (v == -2)
        return rt_errf(err, errlen, "%s: %s is computed by the graph, not an input or a parameter", r->g->path, name);
    if (v < 0)
        return rt_errf(err, errlen, "%s: no input or parameter %s", r->g->path, name);
    return set_leaf(r, v, f, i, count, err, errlen);
}

int rt_ref_set(rt_ref *r, const char *name, const float *data, int64_t count, char *err, size_t errlen)
{
    return set_named(r, name, data, NULL, count, err, errlen);
}

int rt_ref_set_i64(rt_ref *r, const char *name, const int64_t *data, int64_t count, char *err, size_t errlen)
{
    return set_named(r, name, NULL, data, count, err, errlen);
}

/* Set leaf v from a file's tensor (shape and kind checked). */
static int set_from_file(rt_ref *r, int v, const rt_st_file *f, const rt_st_tensor *t, const char *what, char *err,
                         size_t errlen)
{
    const cc_value *val = &r->g->values[v];
    if (rt_st_check_type(t, f->path, val, what, err, errlen))
        return -1;
    kind k = kind_of(val->type.dtype);
    int rc;
    if (k == K_F) {
        float *buf = malloc((t->numel ? (size_t)t->numel : 1) * sizeof *buf);
        if (!buf)
            return rt_errf(err, errlen, "out of host memory");
        rt_st_to_f32(t, buf);
        rc = set_leaf(r, v, buf, NULL, t->numel, err, errlen);
        free(buf);
    } else {
        int64_t *buf = malloc((t->numel ? (size_t)t->numel : 1) * sizeof *buf);
        if (!buf)
            return rt_errf(err, errlen, "out of host memory");
        rc = rt_st_to_i64(t, f->path, buf, err, errlen);
        if (!rc)
            rc = set_leaf(r, v, NULL, buf, t->numel, err, errlen);
        free(buf);
    }
    return rc;
}

int rt_ref_load_weights(rt_ref *r, const char *path, char *err, size_t errlen)
{
    const cc_graph *g = r->g;
    char *rel = NULL;
    if (!path) {
        if (!g->nparams)
            return 0;
        if (!g->weights)
            return rt_errf(err, errlen, "%s: the graph has parameters but no weights line", g->path);
        path = rel = cc_graph_relpath(g, g->weights);
    }
    rt_st_file *f = rt_st_read(path, err, errlen);
    int rc = f ? 0 : -1;
    for (int i = 0; f && i < g->nparams && !rc; i++) {
        int v = g->params[i];
        const cc_value *val = &g->values[v];
        const rt_st_tensor *t = rt_st_find(f, val->param_key);
        if (!t)
            rc = rt_errf(err, errlen, "%s: missing weight %s for %%%s (graph line %d)", path, val->param_key,
                         val->name, val->line);
        else
            rc = set_from_file(r, v, f, t, "weight", err, errlen);
    }
    rt_st_free(f);
    free(rel);
    return rc;
}

int rt_ref_load_inputs(rt_ref *r, const char *path, char *err, size_t errlen)
{
    const cc_graph *g = r->g;
    rt_st_file *f = rt_st_read(path, err, errlen);
    if (!f)
        return -1;
    int rc = 0;
    for (int i = 0; i < g->ninputs && !rc; i++) {
        int v = g->inputs[i];
        const cc_value *val = &g->values[v];
        const rt_st_tensor *t = rt_st_find(f, val->name);
        if (!t)
            rc = rt_errf(err, errlen, "%s: missing input %s for %%%s (graph line %d)", path, val->name, val->name,
                         val->line);
        else
            rc = set_from_file(r, v, f, t, "input", err, errlen);
    }
    rt_st_free(f);
    return rc;
}

/* An input or parameter's bounds: its rounding to DL16 when uploaded
 * (integers are exact: the device holds them in fp32). */
static int leaf_bounds(tens *t)
{
    for (int w = 0; w < 2; w++) {
        t->eb[w] = calloc(t->n ? (size_t)t->n : 1, sizeof *t->eb[w]);
        if (!t->eb[w])
            return -1;
        for (int64_t k = 0; t->f && k < t->n; k++)
            t->eb[w][k] = (float)eb_leaf(t->f[k]);
    }
    return 0;
}

void rt_ref_track_errors(rt_ref *r, int on) { r->bounds = on != 0; }

const float *rt_ref_error(rt_ref *r, int v, int track)
{
    if (v < 0 || v >= r->g->nvalues || track < 0 || track > 1)
        return NULL;
    const slot *s = &r->vals[v];
    return r->g->values[v].ntuple || s->nt != 1 ? NULL : s->t[0].eb[track];
}

/* A NaN bound of an element whose reference value is a number is a bug in
 * the bound rules (a 0 * inf, an inf - inf): it would turn into a NaN
 * tolerance, which fails its element and hides the bug as a MISMATCH (and
 * fmin would silently drop it).  Reported as the executor's error, with
 * the op's line. */
static int check_bounds(ex *E, const tens *t)
{
    for (int w = 0; t->eb[0] && w < 2; w++)
        for (int64_t k = 0; k < t->n; k++)
            if (isnan(t->eb[w][k]) && !isnan(ldd(t, k)))
                return fail(E, "internal error: the error bound (track %d) of element %lld is NaN for the value %g",
                            w, (long long)k, ldd(t, k));
    return 0;
}

static void last_uses(const cc_arg *a, int node, int *last)
{
    if (a->kind == CC_ARG_VALUE)
        last[a->value] = node;
    for (int i = 0; i < a->nitems; i++)
        last_uses(&a->items[i], node, last);
}

int rt_ref_run(rt_ref *r, char *err, size_t errlen)
{
    const cc_graph *g = r->g;
    r->err = err;
    r->errlen = errlen;
    r->node = NULL;
    for (int v = 0; v < g->nvalues; v++) {
        const cc_value *val = &g->values[v];
        if (val->kind == CC_VAL_NODE)
            slot_free(&r->vals[v]);
        else if (r->vals[v].nt != 1)
            return rt_errf(err, errlen, "%s:%d: %s %%%s has no value (%s first)", g->path, val->line,
                           val->kind == CC_VAL_INPUT ? "input" : "param", val->name,
                           val->kind == CC_VAL_INPUT ? "rt_ref_set or rt_ref_load_inputs" : "rt_ref_load_weights");
        else if (r->bounds && !r->vals[v].t[0].eb[0] && leaf_bounds(&r->vals[v].t[0]))
            return rt_errf(err, errlen, "%s: out of host memory for the bounds of %%%s", g->path, val->name);
        r->last_use[v] = -1;
    }
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].nargs; i++)
            last_uses(&g->nodes[n].args[i], n, r->last_use);
    for (int i = 0; i < g->noutputs; i++)
        r->last_use[g->outputs[i]] = INT_MAX;
    for (int n = 0; n < g->nnodes; n++) {
        const cc_node *nd = &g->nodes[n];
        r->node = nd;
        r->nres = 0;
        int op = find_op(nd);
        int rc;
        if (op < 0)
            rc = rt_errf(err, errlen, "%s:%d: unsupported op %s", g->path, nd->line, nd->op);
        else
            rc = op_table[op].fn(r, op_table[op].code);
        const cc_value *val = &g->values[nd->out];
        int want = val->ntuple ? val->ntuple : 1;
        if (!rc && r->nres != want)
            rc = fail(r, "declares %d result%s but the op computes %d", want, want > 1 ? "s" : "", r->nres);
        for (int i = 0; !rc && i < r->nres; i++)
            rc = check_bounds(r, &r->res[i]);
        if (rc) {
            for (int i = 0; i < r->nres; i++)
                tfree(&r->res[i]);
            r->nres = 0;
            r->node = NULL;
            return -1;
        }
        slot *s = &r->vals[nd->out];
        s->t = malloc((size_t)r->nres * sizeof *s->t);
        if (!s->t) {
            for (int i = 0; i < r->nres; i++)
                tfree(&r->res[i]);
            r->nres = 0;
            return fail(r, "out of host memory");
        }
        memcpy(s->t, r->res, (size_t)r->nres * sizeof *s->t);
        s->nt = r->nres;
        r->nres = 0;
        /* free what no later node reads */
        for (int i = 0; i < nd->nargs; i++) {
            const cc_arg *a = &nd->args[i];
            for (int j = 0; j < (a->kind == CC_ARG_LIST ? a->nitems : 1); j++) {
                const cc_arg *x = a->kind == CC_ARG_LIST ? &a->items[j] : a;
                if (x->kind == CC_ARG_VALUE && r->last_use[x->value] == n && !r->keep[x->value] &&
                    g->values[x->value].kind == CC_VAL_NODE)
                    slot_free(&r->vals[x->value]);
            }
        }
        if (r->last_use[nd->out] == -1 && !r->keep[nd->out])
            slot_free(s); /* dead value */
    }
    r->node = NULL;
    return 0;
}

const float *rt_ref_value(rt_ref *r, int v, cc_ttype *type)
{
    if (v < 0 || v >= r->g->nvalues)
        return NULL;
    const cc_value *val = &r->g->values[v];
    slot *s = &r->vals[v];
    if (val->ntuple || s->nt != 1)
        return NULL;
    if (type)
        *type = val->type;
    tens *t = &s->t[0];
    if (t->f)
        return t->f;
    if (!t->fview) {
        t->fview = malloc((t->n ? (size_t)t->n : 1) * sizeof *t->fview);
        if (!t->fview)
            return NULL;
        for (int64_t k = 0; k < t->n; k++)
            t->fview[k] = (float)t->i[k];
    }
    return t->fview;
}

const int64_t *rt_ref_value_i64(rt_ref *r, int v, cc_ttype *type)
{
    if (v < 0 || v >= r->g->nvalues)
        return NULL;
    const cc_value *val = &r->g->values[v];
    slot *s = &r->vals[v];
    if (val->ntuple || s->nt != 1 || !s->t[0].i)
        return NULL;
    if (type)
        *type = val->type;
    return s->t[0].i;
}

const float *rt_ref_output(rt_ref *r, int i, cc_ttype *type)
{
    if (i < 0 || i >= r->g->noutputs)
        return NULL;
    return rt_ref_value(r, r->g->outputs[i], type);
}
