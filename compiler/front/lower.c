/* lower.c: the `lower` pass.  Maps every core op of the decomposed graph
 * to loop-level IR, Inductor-style.
 *
 * A lowered value (Inductor's TensorBox) is a view of a *base*: base
 * coordinate j = map[j], an affine index over the value's coordinates.  A
 * base (Inductor's StorageBox) is an expression over its own coordinates;
 * either unrealized (consumers inline it, substituting their coordinates)
 * or realized: a POINTWISE node computed it into a buffer and its
 * expression is now a load of that buffer.  So a pointwise op makes a new
 * base from its inputs' expressions, and a view op (permute, expand,
 * slice, reshape, ...) makes a new value of the same base with another
 * map.  A base is realized when:
 *   - a value on it is a graph output, or read by more consumers than
 *     opts.max_reads, or its expression grows beyond opts.max_body nodes;
 *   - a value on it is the input of a reduction or a matmul (these read
 *     buffers through affine indices only);
 *   - a reshape cannot be expressed as an affine map of it (then either
 *     the base is realized, if that makes the reshape a view of a
 *     contiguous buffer, or the value itself is copied into its own
 *     buffer, as Inductor does).
 * Reductions and matmuls always write buffers.  Broadcasting and type
 * promotion (PyTorch's rules) happen here, as casts in the expressions. */
#include "ir.h"

#include <assert.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gr_ttype type;     /* shape and dtype of its coordinates */
    int body;          /* expression over variables 0..rank-1 */
    int buf;           /* realized: the buffer, else -1 */
    uint64_t *ops;     /* source ops the (unrealized) expression computes */
    char *name;
    int cl;            /* (n, c, h, w) realized channels-last: next to a conv's y */
} lbase;

typedef struct {
    int base;          /* -1: not lowered */
    gr_ttype type;
    ir_index map[GR_MAX_RANK]; /* base coordinates over the value's */
    uint64_t *ops;     /* source ops of the views since the base */
} lval;

typedef struct {
    ir_prog *p;
    const gr_graph *d;
    lbase *bases;
    int nbases, capbases;
    lval **vals;       /* per value of d, in blocks of LVAL_BLOCK (val) */
    int *consumers;    /* per value of d: nodes (and outputs) reading it */
    int *flat;         /* per buffer: its flat base, or -1 */
    int capflat;
    int nwords;        /* of an ops bitset */
    int cur;           /* the node of d being lowered */
    int max_reads, max_body;
    jmp_buf fail;
} lctx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static _Noreturn void
fail(lctx *c, const char *fmt, ...)
{
    const gr_node *n = &c->d->nodes[c->cur];
    ir_refuse(c->p, c->p->dfrom[c->cur], "%s: ", n->op);
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(c->p->err, c->p->errlen, fmt, ap);
    va_end(ap);
    longjmp(c->fail, 1);
}

/* Values' records a block: 1,176 bytes each (room for a map of
 * GR_MAX_RANK coordinates), one array of them over malloc's 128 KB mmap
 * threshold (the Llama-8B decode step's 121 values) was mapped, faulted
 * in page by page (35 faults) and unmapped every compile; blocks of 75 KB
 * come from the heap and go back to it for the passes after. */
enum { LVAL_BLOCK = 64 };

static lval *val(const lctx *c, int v)
{
    return &c->vals[v / LVAL_BLOCK][v % LVAL_BLOCK];
}

/* ---- Source-op sets ---- */

static uint64_t *ops_new(lctx *c)
{
    return ir_xalloc((size_t)c->nwords * sizeof(uint64_t));
}

static void ops_or(lctx *c, uint64_t *dst, const uint64_t *src)
{
    for (int i = 0; i < c->nwords; i++)
        dst[i] |= src[i];
}

static void ops_add_cur(lctx *c, uint64_t *dst)
{
    int s = c->p->dfrom[c->cur];
    dst[s / 64] |= 1ull << (s % 64);
}

/* The source ops reading value v brings in: its views, and its base's
 * expression while unrealized. */
static void ops_of(lctx *c, uint64_t *dst, int v)
{
    const lval *V = val(c, v);
    ops_or(c, dst, V->ops);
    if (c->bases[V->base].buf < 0)
        ops_or(c, dst, c->bases[V->base].ops);
}

/* The set as a list sorted by line (then by position). */
static void ops_list(lctx *c, const uint64_t *set, int **out, int *n)
{
    int cnt = 0;
    for (int s = 0; s < c->p->nsrc; s++)
        cnt += (set[s / 64] >> (s % 64)) & 1;
    *out = ir_xalloc((size_t)(cnt ? cnt : 1) * sizeof **out);
    *n = 0;
    for (int s = 0; s < c->p->nsrc; s++)
        if ((set[s / 64] >> (s % 64)) & 1) {
            int at = (*n)++;
            while (at > 0 && c->p->src[(*out)[at - 1]].line > c->p->src[s].line) {
                (*out)[at] = (*out)[at - 1];
                at--;
            }
            (*out)[at] = s;
        }
}

/* ---- Bases and values ---- */

static gr_ttype ttype(gr_dtype dt, int rank, const int64_t *shape)
{
    gr_ttype t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    if (rank)
        memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    return t;
}

/* Flat row-major offset of coordinates (variables 0..rank-1) in shape. */
static ir_index contiguous(const gr_ttype *t)
{
    ir_index x = ir_idx_const(0);
    int64_t st = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        x.coef[d] = t->shape[d] == 1 ? 0 : st;
        st *= t->shape[d];
    }
    return x;
}

static int new_base(lctx *c, const gr_ttype *t, int body, const char *name)
{
    c->bases = ir_xgrow(c->bases, &c->capbases, c->nbases + 1, sizeof *c->bases);
    lbase *B = &c->bases[c->nbases];
    B->type = *t;
    B->body = body;
    B->buf = -1;
    B->ops = ops_new(c);
    B->name = ir_xstrdup(name);
    B->cl = 0;
    return c->nbases++;
}

/* Value v as the whole of base b (identity map). */
static void set_whole(lctx *c, int v, int b)
{
    lval *V = val(c, v);
    V->base = b;
    V->type = c->bases[b].type;
    for (int j = 0; j < V->type.rank; j++)
        V->map[j] = ir_idx_var(j);
    if (!V->ops)
        V->ops = ops_new(c);
    memset(V->ops, 0, (size_t)c->nwords * sizeof(uint64_t));
}

/* A base that is buffer buf, read over its shape (or flat: one coordinate). */
static int buffer_base(lctx *c, int buf, int flat)
{
    const ir_buf *B = &c->p->bufs[buf];
    gr_ttype t = B->type;
    if (flat) {
        int64_t n = gr_ttype_numel(&t);
        t = ttype(t.dtype, 1, &n);
    }
    ir_index idx = contiguous(&t);
    int b = new_base(c, &t, ir_load(&c->p->A, buf, t.dtype, &idx), B->name);
    c->bases[b].buf = buf;
    return b;
}

static int flat_base(lctx *c, int buf)
{
    int old = c->capflat;
    c->flat = ir_xgrow(c->flat, &c->capflat, c->p->nbufs, sizeof *c->flat);
    for (int i = old; i < c->capflat; i++)
        c->flat[i] = -1;
    if (c->flat[buf] < 0)
        c->flat[buf] = buffer_base(c, buf, 1);
    return c->flat[buf];
}

/* Value v read at coords (one index per coordinate of v, over the
 * reader's variables): its base's expression with the composed map. */
static int read_at(lctx *c, int v, const ir_index *coords)
{
    const lval *V = val(c, v);
    const lbase *B = &c->bases[V->base];
    ir_index bc[GR_MAX_RANK];
    for (int j = 0; j < B->type.rank; j++)
        bc[j] = ir_idx_compose(&V->map[j], V->type.rank, coords);
    return ir_subst(&c->p->A, B->body, B->type.rank, bc, NULL);
}

static int read_whole(lctx *c, int v)
{
    ir_index id[GR_MAX_RANK];
    for (int d = 0; d < val(c, v)->type.rank; d++)
        id[d] = ir_idx_var(d);
    return read_at(c, v, id);
}

static int new_node(lctx *c, ir_node_kind kind, const gr_ttype *t, const char *name, const uint64_t *ops)
{
    int buf = ir_buf_new(c->p, name, t, IR_BUF_COMPUTED);
    int n = ir_node_new(c->p, kind, buf);
    ops_list(c, ops, &c->p->nodes[n].ops, &c->p->nodes[n].nops);
    return n;
}

static void realize_channels_last(lctx *c, int b);

/* Compute base b into a buffer: a POINTWISE node over its shape. */
static void realize_base(lctx *c, int b)
{
    lbase *B = &c->bases[b];
    if (B->buf >= 0)
        return;
    if (B->cl) {
        realize_channels_last(c, b);
        return;
    }
    int n = new_node(c, IR_POINTWISE, &B->type, B->name, B->ops);
    ir_node *N = &c->p->nodes[n];
    N->nvars = B->type.rank;
    memcpy(N->ranges, B->type.shape, (size_t)N->nvars * sizeof *N->ranges);
    N->body = B->body;
    N->store = contiguous(&B->type);
    ir_node_simplify(c->p, n);
    B = &c->bases[b];
    B->buf = c->p->nodes[n].out;
    ir_index idx = contiguous(&B->type);
    B->body = ir_load(&c->p->A, B->buf, B->type.dtype, &idx);
    memset(B->ops, 0, (size_t)c->nwords * sizeof(uint64_t));
}

/* Base b (n, c, h, w) or (n, c, d, h, w) computed into a buffer (n, h, w,
 * c) or (n, d, h, w, c), its node's lanes along c; b becomes that buffer
 * and every value on it reads it through the permuted map (as a conv's
 * result does). */
static void realize_channels_last(lctx *c, int b)
{
    lbase *B = &c->bases[b];
    const int r = B->type.rank;
    int64_t shape[GR_MAX_RANK];
    ir_index at[GR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        shape[d] = B->type.shape[d == 0 ? 0 : d == r - 1 ? 1 : d + 1];
        at[d] = ir_idx_var(d == 0 ? 0 : d == 1 ? r - 1 : d - 1);
    }
    gr_ttype t = ttype(B->type.dtype, r, shape);
    int n = new_node(c, IR_POINTWISE, &t, B->name, B->ops);
    ir_node *N = &c->p->nodes[n];
    N->nvars = r;
    memcpy(N->ranges, shape, (size_t)r * sizeof *shape);
    N->body = ir_subst(&c->p->A, B->body, r, at, NULL);
    N->store = contiguous(&t);
    ir_node_simplify(c->p, n);
    B = &c->bases[b];
    B->buf = c->p->nodes[n].out;
    B->type = t;
    ir_index idx = contiguous(&t);
    B->body = ir_load(&c->p->A, B->buf, t.dtype, &idx);
    B->cl = 0;
    memset(B->ops, 0, (size_t)c->nwords * sizeof(uint64_t));
    for (int v = 0; v < c->d->nvalues; v++)
        if (val(c, v)->base == b) {
            ir_index *m = val(c, v)->map, cm = m[1];
            memmove(&m[1], &m[2], (size_t)(r - 2) * sizeof *m);
            m[r - 1] = cm;
        }
}

/* Copy value v into a buffer of its own shape; v becomes that buffer. */
static void realize_copy(lctx *c, int v, const char *name)
{
    uint64_t *ops = ops_new(c);
    ops_of(c, ops, v);
    int b = new_base(c, &val(c, v)->type, read_whole(c, v), name);
    ops_or(c, c->bases[b].ops, ops);
    free(ops);
    set_whole(c, v, b);
    realize_base(c, b);
}

/* The map of value x as if its base were a contiguous buffer: one row,
 * the flat element offset. */
static ir_index flat_row(lctx *c, int x)
{
    const lval *X = val(c, x);
    const lbase *B = &c->bases[X->base];
    ir_index row = ir_idx_const(0);
    int64_t st = 1;
    for (int j = B->type.rank - 1; j >= 0; j--) {
        row.offset += st * X->map[j].offset;
        for (int w = 0; w < IR_MAX_VARS; w++)
            row.coef[w] += st * X->map[j].coef[w];
        st *= B->type.shape[j];
    }
    return row;
}

/* Value v on a realized base, seen as a strided view of the buffer:
 * one coordinate, the flat element offset. */
static void flatten(lctx *c, int v)
{
    int buf = c->bases[val(c, v)->base].buf;
    assert(buf >= 0);
    int fb = flat_base(c, buf);
    if (val(c, v)->base == fb)
        return;
    ir_index row = flat_row(c, v);
    val(c, v)->base = fb;
    val(c, v)->map[0] = row;
}

/* Make value v a strided view of a buffer (for a matmul or reduction
 * input): realize its base when v covers all of it, else copy v. */
static void as_buffer_view(lctx *c, int v)
{
    lval *V = val(c, v);
    lbase *B = &c->bases[V->base];
    if (B->buf < 0) {
        if (gr_ttype_numel(&V->type) >= gr_ttype_numel(&B->type))
            realize_base(c, V->base);
        else
            realize_copy(c, v, c->d->values[v].name);
    }
    flatten(c, v);
}

/* Realize what value v needs to be read many times. */
static void realize_for_reuse(lctx *c, int v)
{
    const lval *V = val(c, v);
    const lbase *B = &c->bases[V->base];
    if (B->buf >= 0)
        return;
    if (gr_ttype_numel(&V->type) >= gr_ttype_numel(&B->type))
        realize_base(c, V->base);
    else
        realize_copy(c, v, c->d->values[v].name);
}

/* The loads walking (n, c, [d,] h, w) channels-last (lanes along c, w
 * strided: a conv's y, a buffer of rank 4 or 5; not Swin's bias gathered
 * as [N, heads]) and NCHW (lanes along w), w being variable wv. */
typedef struct {
    const lctx *c;
    int cl, nchw, wv;
} layout_count;

static void count_layouts(void *ctx, const ir_expr *x)
{
    layout_count *q = ctx;
    if (x->kind == IR_E_LOAD) {
        q->cl += x->idx.coef[1] == 1 && x->idx.coef[q->wv] > 1 && q->c->p->bufs[x->buf].type.rank >= 4;
        q->nchw += x->idx.coef[q->wv] == 1;
    }
}

static int is_graph_output(lctx *c, int v);

/* The result of the current node: a new base computing body over t.  A
 * 4-D or 5-D one that reads a conv's channels-last y at least as much as
 * NCHW tensors (a batch norm, relu or residual add between convs; a 3-D
 * conv's y is its depth taps' sum seen as 5-D) is realized channels-last,
 * unless a graph output: the next conv's copy then reads it along its
 * sticks, as it reads y (an NCHW one costs a transposition to store and
 * another to read back). */
static void set_computed(lctx *c, int v, const gr_ttype *t, int body, const uint64_t *ops)
{
    int b = new_base(c, t, body, c->d->values[v].name);
    if ((t->rank == 4 || t->rank == 5) && !is_graph_output(c, v)) {
        layout_count q = {c, 0, 0, t->rank - 1};
        ir_expr_walk(&c->p->A, body, count_layouts, &q);
        c->bases[b].cl = q.cl > 0 && q.cl >= q.nchw;
    }
    ops_or(c, c->bases[b].ops, ops);
    ops_add_cur(c, c->bases[b].ops);
    set_whole(c, v, b);
}

static void note_gather(void *ctx, const ir_expr *x)
{
    *(int *)ctx |= x->kind == IR_E_ILOAD;
}

/* Does expression e gather (hold an IR_E_ILOAD)? */
static int gathers(lctx *c, int e)
{
    int any = 0;
    ir_expr_walk(&c->p->A, e, note_gather, &any);
    return any;
}

/* A gather reads whole table rows along its kernel's columns: a view of
 * an unrealized one whose last dim is not the gather's last (Swin's bias
 * rows [N, heads] permuted to [heads, N]) is read from its own buffer. */
static void realize_turned_gather(lctx *c, int v, const ir_index *coords, int rank)
{
    const lval *V = val(c, v);
    const lbase *B = &c->bases[V->base];
    if (B->buf >= 0 || !rank || !gathers(c, B->body))
        return;
    ir_index last = ir_idx_compose(&V->map[B->type.rank - 1], V->type.rank, coords);
    if (last.coef[rank - 1] != 1)
        realize_for_reuse(c, v);
}

/* Value w a view of v: v's coordinate d is coords[d] over w's. */
static void set_view(lctx *c, int w, int v, const gr_ttype *t, const ir_index *coords)
{
    realize_turned_gather(c, v, coords, t->rank);
    const lval *V = val(c, v);
    lval *W = val(c, w);
    int rank = c->bases[V->base].type.rank;
    ir_index map[GR_MAX_RANK];
    for (int j = 0; j < rank; j++)
        map[j] = ir_idx_compose(&V->map[j], V->type.rank, coords);
    W->base = V->base;
    W->type = *t;
    memcpy(W->map, map, sizeof map);
    if (!W->ops)
        W->ops = ops_new(c);
    ops_or(c, W->ops, val(c, v)->ops);
    ops_add_cur(c, W->ops);
}

/* ---- Arguments ---- */

static const gr_arg *arg(lctx *c, int pos, const char *key)
{
    return gr_node_arg(&c->d->nodes[c->cur], pos, key);
}

static int is_number(const gr_arg *a)
{
    return a && (a->kind == GR_ARG_INT || a->kind == GR_ARG_FLOAT || a->kind == GR_ARG_BOOL);
}

static double number(const gr_arg *a)
{
    return a->kind == GR_ARG_FLOAT ? a->f : (double)a->i;
}

static int tensor(lctx *c, int pos, const char *key)
{
    const gr_arg *a = arg(c, pos, key);
    if (!a || a->kind != GR_ARG_VALUE)
        fail(c, "argument %s must be a tensor", key);
    assert(val(c, a->value)->base >= 0);
    return a->value;
}

static double num(lctx *c, int pos, const char *key, double dflt)
{
    const gr_arg *a = arg(c, pos, key);
    if (!a || a->kind == GR_ARG_NONE)
        return dflt;
    if (!is_number(a))
        fail(c, "argument %s must be a number", key);
    return number(a);
}

static int ints(lctx *c, int pos, const char *key, int64_t *out)
{
    int cnt = gr_arg_ints(arg(c, pos, key), out);
    if (cnt == -2)
        fail(c, "argument %s must be an int or a list of at most %d ints", key, GR_MAX_RANK);
    return cnt;
}

static int dtype_kw(lctx *c)
{
    const gr_arg *a = arg(c, 99, "dtype");
    if (!a || a->kind == GR_ARG_NONE)
        return -1;
    if (a->kind != GR_ARG_DTYPE)
        fail(c, "argument dtype must be a dtype");
    return (int)a->i;
}

static int normdim(lctx *c, int64_t d, int rank)
{
    int r = rank ? rank : 1;
    if (d < -r || d >= r)
        fail(c, "dimension %lld is out of range for rank %d", (long long)d, rank);
    return (int)(d < 0 ? d + r : d);
}

static const gr_ttype *vtype(lctx *c, int v)
{
    return &val(c, v)->type;
}

/* ---- Pointwise ops ---- */

/* An operand of a pointwise op: a tensor value or a Python scalar. */
typedef struct {
    int v;          /* tensor, or -1 */
    double s;       /* scalar */
    gr_dtype dt;
    int cls;        /* for promotion: 0 tensor, 1 0-d tensor, 2 scalar */
} operand;

static operand get_operand(lctx *c, int pos, const char *key)
{
    const gr_arg *a = arg(c, pos, key);
    operand o = {-1, 0, GR_F32, 2};
    if (a && a->kind == GR_ARG_VALUE) {
        o.v = a->value;
        o.dt = vtype(c, o.v)->dtype;
        o.cls = vtype(c, o.v)->rank ? 0 : 1;
    } else if (is_number(a)) {
        o.s = number(a);
        o.dt = a->kind == GR_ARG_FLOAT ? GR_F64 : a->kind == GR_ARG_BOOL ? GR_BOOL : GR_I64;
    } else {
        fail(c, "argument %s must be a tensor or a number", key);
    }
    return o;
}

/* The broadcast shape of the tensor operands. */
static gr_ttype broadcast(lctx *c, const operand *o, int n)
{
    gr_ttype t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < n; i++)
        if (o[i].v >= 0 && ir_broadcast(&t, vtype(c, o[i].v), &t)) {
            char a[256], b[256];
            gr_ttype_str(vtype(c, o[0].v), a, sizeof a);
            gr_ttype_str(vtype(c, o[i].v), b, sizeof b);
            fail(c, "shapes %s and %s do not broadcast", a, b);
        }
    return t;
}

static gr_dtype promote(const operand *o, int n)
{
    gr_dtype dt[3];
    int cls[3];
    for (int i = 0; i < n; i++) {
        dt[i] = o[i].dt;
        cls[i] = o[i].cls;
    }
    return ir_promote(n, dt, cls);
}

/* Operand o read at the coordinates of a value of shape t (broadcast),
 * converted to dt; its source ops go into ops. */
static int operand_expr(lctx *c, const operand *o, const gr_ttype *t, gr_dtype dt, uint64_t *ops)
{
    if (o->v < 0)
        return ir_const(&c->p->A, o->s, dt);
    const gr_ttype *vt = vtype(c, o->v);
    ir_index coords[GR_MAX_RANK];
    /* a size-1 dim broadcast reads coordinate 0; one the result keeps at
     * size 1 reads the result's coordinate, so that a consumer reading the
     * result shifted (a cat's piece one wide) still walks it */
    for (int d = 0; d < vt->rank; d++) {
        int od = d + t->rank - vt->rank;
        coords[d] = vt->shape[d] == 1 && t->shape[od] != 1 ? ir_idx_const(0) : ir_idx_var(od);
    }
    ops_of(c, ops, o->v);
    return ir_cast(&c->p->A, read_at(c, o->v, coords), dt);
}

static int is_compare(ir_op op)
{
    return op >= IR_EQ && op <= IR_GE;
}

static void l_binary(lctx *c, int out, int opi)
{
    ir_op op = (ir_op)opi;
    operand o[2] = {get_operand(c, 0, "self"), get_operand(c, 1, "other")};
    if (o[0].v < 0 && o[1].v < 0)
        fail(c, "needs a tensor operand");
    gr_ttype t = broadcast(c, o, 2);
    gr_dtype dt = promote(o, 2);
    if (op == IR_DIV && !ir_dtype_is_float(dt))
        dt = GR_F32;
    if (op == IR_AND || op == IR_OR)
        dt = GR_BOOL;
    uint64_t *ops = ops_new(c);
    int a = operand_expr(c, &o[0], &t, dt, ops), b = operand_expr(c, &o[1], &t, dt, ops);
    t.dtype = is_compare(op) || op == IR_AND || op == IR_OR ? GR_BOOL : dt;
    set_computed(c, out, &t, ir_op2(&c->p->A, op, a, b), ops);
    free(ops);
}

static int is_float_op(ir_op op)
{
    return op != IR_NEG && op != IR_ABS && op != IR_RELU && op != IR_NOT;
}

static void l_unary(lctx *c, int out, int opi)
{
    ir_op op = (ir_op)opi;
    operand o = get_operand(c, 0, "self");
    if (o.v < 0)
        fail(c, "argument self must be a tensor");
    gr_ttype t = *vtype(c, o.v);
    gr_dtype dt = op == IR_NOT ? GR_BOOL : is_float_op(op) && !ir_dtype_is_float(t.dtype) ? GR_F32 : t.dtype;
    uint64_t *ops = ops_new(c);
    int a = operand_expr(c, &o, &t, dt, ops);
    t.dtype = dt;
    set_computed(c, out, &t, ir_op1(&c->p->A, op, a), ops);
    free(ops);
}

/* pow: a scalar exponent of 2, 0.5, -0.5, 1 or -1 is a cheaper op. */
static void l_pow(lctx *c, int out, int opi)
{
    (void)opi;
    operand o[2] = {get_operand(c, 0, "self"), get_operand(c, 1, "exponent")};
    if (o[0].v < 0 && o[1].v < 0)
        fail(c, "needs a tensor operand");
    gr_ttype t = broadcast(c, o, 2);
    t.dtype = promote(o, 2);
    uint64_t *ops = ops_new(c);
    ir_arena *A = &c->p->A;
    int x = operand_expr(c, &o[0], &t, t.dtype, ops), body;
    double e = o[1].s;
    if (o[1].v >= 0 || !ir_dtype_is_float(t.dtype))
        body = ir_op2(A, IR_POW, x, operand_expr(c, &o[1], &t, t.dtype, ops));
    else if (e == 2)
        body = ir_op2(A, IR_MUL, x, x);
    else if (e == 1)
        body = x;
    else if (e == 0.5)
        body = ir_op1(A, IR_SQRT, x);
    else if (e == -0.5)
        body = ir_op1(A, IR_RSQRT, x);
    else if (e == -1)
        body = ir_op1(A, IR_RECIP, x);
    else
        body = ir_op2(A, IR_POW, x, ir_const(A, e, t.dtype));
    set_computed(c, out, &t, body, ops);
    free(ops);
}

static void l_where(lctx *c, int out, int opi)
{
    (void)opi;
    operand o[3] = {get_operand(c, 0, "condition"), get_operand(c, 1, "self"), get_operand(c, 2, "other")};
    if (o[0].v < 0)
        fail(c, "argument condition must be a tensor");
    gr_ttype t = broadcast(c, o, 3);
    gr_dtype dt = promote(o + 1, 2);
    uint64_t *ops = ops_new(c);
    int cond = operand_expr(c, &o[0], &t, GR_BOOL, ops);
    int a = operand_expr(c, &o[1], &t, dt, ops), b = operand_expr(c, &o[2], &t, dt, ops);
    t.dtype = dt;
    set_computed(c, out, &t, ir_where(&c->p->A, cond, a, b), ops);
    free(ops);
}

static void l_to_copy(lctx *c, int out, int opi)
{
    (void)opi;
    operand o = get_operand(c, 0, "self");
    if (o.v < 0)
        fail(c, "argument self must be a tensor");
    int dt = dtype_kw(c);
    gr_ttype t = *vtype(c, o.v);
    if (dt >= 0)
        t.dtype = (gr_dtype)dt;
    uint64_t *ops = ops_new(c);
    int e = operand_expr(c, &o, &t, t.dtype, ops);
    set_computed(c, out, &t, e, ops);
    free(ops);
}

static void l_full(lctx *c, int out, int opi)
{
    int64_t shape[GR_MAX_RANK];
    int rank = 0;
    const gr_arg *v;
    if (opi) { /* scalar_tensor(s) */
        v = arg(c, 0, "s");
    } else {
        rank = ints(c, 0, "size", shape);
        if (rank < 0)
            fail(c, "argument size must be a list of ints");
        v = arg(c, 1, "fill_value");
    }
    if (!is_number(v))
        fail(c, "the fill value must be a number");
    int dt = dtype_kw(c);
    if (dt < 0)
        dt = opi || v->kind == GR_ARG_FLOAT ? GR_F32 : v->kind == GR_ARG_BOOL ? GR_BOOL : GR_I64;
    gr_ttype t = ttype((gr_dtype)dt, rank, shape);
    uint64_t *ops = ops_new(c);
    set_computed(c, out, &t, ir_const(&c->p->A, number(v), (gr_dtype)dt), ops);
    free(ops);
}

static void l_arange(lctx *c, int out, int opi)
{
    (void)opi;
    double x[3] = {0, 0, 1};
    int n = 0, all_int = 1;
    for (; n < 3; n++) {
        const gr_arg *a = arg(c, n, NULL);
        if (!is_number(a))
            break;
        x[n] = number(a);
        all_int &= a->kind == GR_ARG_INT;
    }
    if (n == 0)
        fail(c, "needs an end");
    double start = n == 1 ? 0 : x[0], end = n == 1 ? x[0] : x[1], step = n == 3 ? x[2] : 1;
    if (step == 0)
        fail(c, "step must not be 0");
    int64_t len = (int64_t)ceil((end - start) / step);
    if (len < 0)
        len = 0;
    int dt = dtype_kw(c);
    if (dt < 0)
        dt = all_int ? GR_I64 : GR_F32;
    ir_arena *A = &c->p->A;
    int body;
    if (all_int) {
        ir_index i = ir_idx_var(0);
        i.coef[0] = (int64_t)step;
        i.offset = (int64_t)start;
        body = ir_cast(A, ir_indexval(A, &i), (gr_dtype)dt);
    } else {
        ir_index i = ir_idx_var(0);
        int iv = ir_cast(A, ir_indexval(A, &i), (gr_dtype)dt);
        body = ir_op2(A, IR_ADD, ir_const(A, start, (gr_dtype)dt), ir_op2(A, IR_MUL, iv, ir_const(A, step, (gr_dtype)dt)));
    }
    gr_ttype t = ttype((gr_dtype)dt, 1, &len);
    uint64_t *ops = ops_new(c);
    set_computed(c, out, &t, body, ops);
    free(ops);
}

/* triu (upper = 1) / tril: where(col - row >= k (<= k), x, 0) */
static void l_tri(lctx *c, int out, int upper)
{
    operand o = get_operand(c, 0, "self");
    if (o.v < 0 || vtype(c, o.v)->rank < 2)
        fail(c, "argument self must be a tensor of rank >= 2");
    int64_t k = (int64_t)num(c, 1, "diagonal", 0);
    gr_ttype t = *vtype(c, o.v);
    ir_arena *A = &c->p->A;
    ir_index diff = ir_idx_const(0);
    diff.coef[t.rank - 1] = 1;
    diff.coef[t.rank - 2] = -1;
    int cond = ir_op2(A, upper ? IR_GE : IR_LE, ir_indexval(A, &diff), ir_const(A, (double)k, GR_I64));
    uint64_t *ops = ops_new(c);
    int x = operand_expr(c, &o, &t, t.dtype, ops);
    set_computed(c, out, &t, ir_where(A, cond, x, ir_const(A, 0, t.dtype)), ops);
    free(ops);
}

/* cat: a chain of where(i_dim < end of piece, piece at i_dim - its start, ...);
 * only the chosen piece is read (ir.h, IR_E_WHERE). */
static void l_cat(lctx *c, int out, int opi)
{
    (void)opi;
    const gr_arg *l = arg(c, 0, "tensors");
    if (!l || l->kind != GR_ARG_LIST || !l->nitems)
        fail(c, "argument tensors must be a list of tensors");
    int n = l->nitems, v[256], nv = 0;
    if (n > 256)
        fail(c, "more than 256 tensors");
    operand o[256];
    for (int i = 0; i < n; i++) {
        if (l->items[i].kind != GR_ARG_VALUE)
            fail(c, "argument tensors must be a list of tensors");
        int x = l->items[i].value;
        const gr_ttype *xt = vtype(c, x);
        if (xt->rank == 1 && xt->shape[0] == 0)
            continue; /* legacy empty tensors take no part */
        v[nv] = x;
        o[nv] = (operand){x, 0, xt->dtype, xt->rank ? 0 : 1};
        nv++;
    }
    if (!nv) { /* only legacy empty tensors: an empty tensor */
        const int64_t zero = 0;
        gr_ttype t = ttype(vtype(c, l->items[0].value)->dtype, 1, &zero);
        uint64_t *ops = ops_new(c);
        set_computed(c, out, &t, ir_const(&c->p->A, 0, t.dtype), ops);
        free(ops);
        return;
    }
    gr_ttype t = *vtype(c, v[0]);
    int dim = normdim(c, (int64_t)num(c, 1, "dim", 0), t.rank);
    int64_t start[256];
    t.shape[dim] = 0;
    for (int i = 0; i < nv; i++) {
        const gr_ttype *xt = vtype(c, v[i]);
        for (int d = 0; d < t.rank; d++)
            if (xt->rank != t.rank || (d != dim && xt->shape[d] != t.shape[d]))
                fail(c, "tensor %d does not match the others outside dimension %d", i, dim);
        start[i] = t.shape[dim];
        t.shape[dim] += xt->shape[dim];
    }
    {
        gr_dtype dts[256];
        int cls[256];
        for (int i = 0; i < nv; i++) {
            dts[i] = o[i].dt;
            cls[i] = o[i].cls;
        }
        t.dtype = ir_promote(nv, dts, cls);
    }
    ir_arena *A = &c->p->A;
    /* a gather reads whole table rows along its kernel's columns: along
     * the last dim, a piece that gathers is computed first, on its own */
    for (int i = 0; dim == t.rank - 1 && i < nv; i++)
        if (c->bases[val(c, v[i])->base].buf < 0 && gathers(c, c->bases[val(c, v[i])->base].body))
            realize_for_reuse(c, v[i]);
    uint64_t *ops = ops_new(c);
    int body = -1;
    for (int i = nv - 1; i >= 0; i--) {
        ir_index coords[GR_MAX_RANK];
        for (int d = 0; d < t.rank; d++) {
            coords[d] = ir_idx_var(d);
            if (d == dim)
                coords[d].offset = -start[i];
        }
        ops_of(c, ops, v[i]);
        int piece = ir_cast(A, read_at(c, v[i], coords), t.dtype);
        if (body < 0) {
            body = piece;
        } else {
            ir_index at = ir_idx_var(dim);
            int cond = ir_op2(A, IR_LT, ir_indexval(A, &at), ir_const(A, (double)start[i + 1], GR_I64));
            body = ir_where(A, cond, piece, body);
        }
    }
    set_computed(c, out, &t, body, ops);
    free(ops);
}

/* constant_pad_nd(self, pad, value): pad[2k], pad[2k+1] widen dim rank-1-k
 * before and after (negative: crop).  where(every padded coordinate within
 * x, x at the coordinates shifted back, value); only the chosen side is
 * read (ir.h, IR_E_WHERE), so no load runs outside x. */
static void l_constant_pad(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    int64_t pad[2 * GR_MAX_RANK];
    int np = gr_arg_ints(arg(c, 1, "pad"), pad);
    gr_ttype t = *vtype(c, x);
    if (np < 0 || np % 2 || np / 2 > t.rank)
        fail(c, "argument pad must be a list of an even number of ints, at most 2 per dimension");
    double value = num(c, 2, "value", 0);
    ir_arena *A = &c->p->A;
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < t.rank; d++)
        coords[d] = ir_idx_var(d);
    int cond = -1;
    for (int k = 0; k < np / 2; k++) {
        int d = t.rank - 1 - k;
        int64_t lo = pad[2 * k], hi = pad[2 * k + 1], in = t.shape[d];
        t.shape[d] = in + lo + hi;
        if (t.shape[d] < 0)
            fail(c, "the padding leaves dimension %d with a negative size", d);
        coords[d].offset = -lo;
        ir_index at = ir_idx_var(d);
        int inside[2] = {lo > 0 ? ir_op2(A, IR_GE, ir_indexval(A, &at), ir_const(A, (double)lo, GR_I64)) : -1,
                         hi > 0 ? ir_op2(A, IR_LT, ir_indexval(A, &at), ir_const(A, (double)(lo + in), GR_I64)) : -1};
        for (int j = 0; j < 2; j++)
            if (inside[j] >= 0)
                cond = cond < 0 ? inside[j] : ir_op2(A, IR_AND, cond, inside[j]);
    }
    uint64_t *ops = ops_new(c);
    ops_of(c, ops, x);
    int body;
    if (!gr_ttype_numel(vtype(c, x))) { /* nothing to read: a load would read past x, racing the output */
        body = ir_const(A, value, t.dtype);
    } else {
        body = read_at(c, x, coords);
        if (cond >= 0 && gr_ttype_numel(&t))
            body = ir_where(A, cond, body, ir_const(A, value, t.dtype));
    }
    set_computed(c, out, &t, body, ops);
    free(ops);
}

/* The table W's rows at positions sub (an index value: learned absolute
 * positions, embedding(arange)) as a plain load, when they lie in its
 * rows; else -1. */
static int positions_load(lctx *c, const lval *W, const ir_index *idx, int sub, const gr_ttype *it, const gr_ttype *t,
                          int64_t rows)
{
    const ir_expr *x = &c->p->A.e[sub];
    if (x->kind != IR_E_INDEX)
        return -1;
    int64_t lo = x->idx.offset, hi = x->idx.offset;
    for (int d = 0; d < it->rank; d++) {
        int64_t s = x->idx.coef[d] * (it->shape[d] - 1);
        lo += s < 0 ? s : 0;
        hi += s > 0 ? s : 0;
    }
    if (lo < 0 || hi >= rows)
        return -1;
    ir_index at = *idx;
    at.offset += W->map[0].coef[0] * x->idx.offset;
    for (int d = 0; d < it->rank; d++)
        at.coef[d] += W->map[0].coef[0] * x->idx.coef[d];
    return ir_load(&c->p->A, c->bases[W->base].buf, t->dtype, &at);
}

/* A parameter's positions gathered from a table of rows rows are uploaded
 * wrapped (ir_buf.wrap_rows): a negative one counts from the end, as
 * index.Tensor's (embedding refuses one, so wrapping changes no result;
 * index.Tensor's tables fit IR_WRAP_ROWS_MAX: dec_index.c), when nothing
 * else reads them (ir_only_row_gathers, the rule dec_index.c's param_rows
 * decides by). */
static void wrap_param_rows(lctx *c, int ix, int64_t rows)
{
    const int b = c->bases[val(c, ix)->base].buf, root = ir_view_root(c->d, ix);
    if (b < 0 || c->p->bufs[b].kind != IR_BUF_PARAM || rows > IR_WRAP_ROWS_MAX ||
        c->d->values[root].kind != GR_VAL_PARAM || !ir_only_row_gathers(c->d, root, rows))
        return;
    c->p->bufs[b].wrap_rows = rows;
}

/* embedding(weight, indices): out[.., d] = weight[indices[..], d], a gather. */
static void l_embedding(lctx *c, int out, int opi)
{
    (void)opi;
    int w = tensor(c, 0, "weight"), ix = tensor(c, 1, "indices");
    const gr_ttype *wt = vtype(c, w), *it = vtype(c, ix);
    if (wt->rank != 2 || it->rank >= GR_MAX_RANK || ir_dtype_is_float(it->dtype))
        fail(c, "expects a 2-D weight and integer indices");
    gr_ttype t = *it;
    t.dtype = wt->dtype;
    t.shape[t.rank++] = wt->shape[1];
    if (!wt->shape[0] && gr_ttype_numel(&t))
        fail(c, "every index is out of range of an empty weight");
    as_buffer_view(c, w);
    uint64_t *ops = ops_new(c);
    ops_of(c, ops, ix);
    ops_of(c, ops, w);
    const lval *W = val(c, w);
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < it->rank; d++)
        coords[d] = ir_idx_var(d);
    int sub = ir_cast(&c->p->A, read_at(c, ix, coords), GR_I64);
    ir_index idx = ir_idx_const(W->map[0].offset);
    idx.coef[t.rank - 1] = W->map[0].coef[1];
    int body = positions_load(c, W, &idx, sub, it, &t, wt->shape[0]);
    if (body < 0) {
        wrap_param_rows(c, ix, wt->shape[0]);
        body = ir_iload(&c->p->A, c->bases[W->base].buf, t.dtype, &idx, W->map[0].coef[0], sub);
    }
    set_computed(c, out, &t, body, ops);
    free(ops);
}

/* index_select(x, dim, index): out[.., i, ..] = x[.., index[i], ..], a gather. */
static void l_index_select(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self"), ix = tensor(c, 2, "index");
    const gr_ttype *it = vtype(c, ix);
    gr_ttype t = *vtype(c, x);
    int dim = normdim(c, (int64_t)num(c, 1, "dim", 0), t.rank);
    if (it->rank > 1 || ir_dtype_is_float(it->dtype))
        fail(c, "expects a 1-D integer index");
    t.shape[dim] = it->rank ? it->shape[0] : 1;
    if (!vtype(c, x)->shape[dim] && gr_ttype_numel(&t))
        fail(c, "every index is out of range of an empty dimension %d", dim);
    as_buffer_view(c, x);
    uint64_t *ops = ops_new(c);
    ops_of(c, ops, ix);
    ops_of(c, ops, x);
    const lval *X = val(c, x);
    ir_index at = ir_idx_var(dim), idx = X->map[0];
    idx.coef[dim] = 0;
    int sub = ir_cast(&c->p->A, read_at(c, ix, &at), GR_I64);
    int body = ir_iload(&c->p->A, c->bases[X->base].buf, t.dtype, &idx, X->map[0].coef[dim], sub);
    set_computed(c, out, &t, body, ops);
    free(ops);
}

/* ---- Reductions ---- */

/* A reduction over no element is its identity: 0 for a sum (and for a
 * matrix product with K = 0), -inf for max and +inf for min, the sup and
 * inf of the empty set (PyTorch raises an error for those two instead). */
static const double identity[] = {[IR_RSUM] = 0, [IR_RMAX] = -INFINITY, [IR_RMIN] = INFINITY};

/* A reduction over one leading dimension longer than this is split in two. */
#define REDUCE_SPLIT_OVER 512

/* The largest divisor of e in [16, 128], or 128 (the last block partly
 * past e, guarded). */
static int64_t split_factor(int64_t e)
{
    for (int64_t b = 128; b >= 16; b--)
        if (e % b == 0)
            return b;
    return 128;
}

/* A reduction over one leading dimension of E > REDUCE_SPLIT_OVER elements
 * as two (Inductor's split reduction): partials over blocks of B
 * consecutive elements into a (ceil(E / B), kept...) buffer, then the reduction
 * of the partials.  The back half walks a leading dimension through a
 * staged copy of the sticks a row reads, E sticks per row of the kernel:
 * for E = 8192 two rows need 2 MB, more than LX; split, each reduction's
 * row reads at most 128 sticks.  Returns 1 when it lowered value out. */
static int reduce_in_two(lctx *c, int out, int x, ir_reduce_op rop, gr_dtype dt, const gr_ttype *t, const int *pos,
                         int nred, const int64_t *red_ext, const uint64_t *ops)
{
    const gr_ttype xt = *vtype(c, x);
    int64_t e = nred == 1 ? red_ext[0] : 0, b = split_factor(e);
    if (nred != 1 || e <= REDUCE_SPLIT_OVER || pos[xt.rank - 1] < 0 || !ir_dtype_is_float(dt))
        return 0;
    /* the partials: (ceil(E / B), kept dims...), variable nk + 1 the block's element */
    const int64_t nb = (e + b - 1) / b;
    gr_ttype pt = ttype(dt, 1, &nb);
    ir_index coords[GR_MAX_RANK];
    const int nk = xt.rank - 1;
    for (int d = 0, k = 0; d < xt.rank; d++) {
        if (pos[d] >= 0) {
            pt.shape[pt.rank++] = xt.shape[d];
            coords[d] = ir_idx_var(1 + k++);
        } else {
            coords[d] = ir_idx_var(0);
            coords[d].coef[0] = b;
            coords[d].coef[nk + 1] = 1;
        }
    }
    char name[256];
    snprintf(name, sizeof name, "%s_part", c->d->values[out].name);
    int n1 = new_node(c, IR_REDUCTION, &pt, name, ops);
    ir_node *N = &c->p->nodes[n1];
    N->rop = rop;
    N->nvars = pt.rank + 1;
    N->nred = 1;
    memcpy(N->ranges, pt.shape, (size_t)pt.rank * sizeof *N->ranges);
    N->ranges[pt.rank] = b;
    N->store = contiguous(&pt);
    N->body = ir_cast(&c->p->A, read_at(c, x, coords), dt);
    if (e % b) { /* the last block's elements past E: the identity (the load is not evaluated there) */
        /* block < nb - 1 or element < E mod B: index values of at most nb
         * and B, exact in DL16 up to 1024 (B * nb - B + element is not) */
        ir_arena *A = &c->p->A;
        ir_index blk = ir_idx_var(0), el = ir_idx_var(nk + 1);
        int early = ir_op2(A, IR_LT, ir_indexval(A, &blk), ir_const(A, (double)(nb - 1), GR_I64));
        int head = ir_op2(A, IR_LT, ir_indexval(A, &el), ir_const(A, (double)(e % b), GR_I64));
        N->body = ir_where(A, ir_op2(A, IR_OR, early, head), N->body, ir_const(A, identity[rop], dt));
    }
    ir_node_simplify(c->p, n1);
    const int part = c->p->nodes[n1].out;
    /* the result: output variables 0..t.rank-1, variable t.rank the block */
    const ir_index pst = contiguous(&pt);
    ir_index idx = ir_idx_const(0);
    idx.coef[t->rank] = pst.coef[0];
    for (int d = 0, k = 0; d < xt.rank; d++)
        if (pos[d] >= 0)
            idx.coef[pos[d]] = pst.coef[1 + k++];
    int n2 = new_node(c, IR_REDUCTION, t, c->d->values[out].name, ops);
    N = &c->p->nodes[n2];
    N->rop = rop;
    N->nvars = t->rank + 1;
    N->nred = 1;
    memcpy(N->ranges, t->shape, (size_t)t->rank * sizeof *N->ranges);
    N->ranges[t->rank] = nb;
    N->store = contiguous(t);
    N->body = ir_load(&c->p->A, part, dt, &idx);
    ir_node_simplify(c->p, n2);
    set_whole(c, out, buffer_base(c, c->p->nodes[n2].out, 0));
    return 1;
}

/* Do the reduced dims (reduced[d], extents over 1) of a value of shape t,
 * read at element strides coef[d], walk one run, the reduction's loops
 * merging into one? */
static int reduced_merge(const gr_ttype *t, const int64_t *coef, const int *reduced)
{
    int inner = -1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (!reduced[d] || t->shape[d] == 1)
            continue;
        if (inner >= 0 && coef[d] != coef[inner] * t->shape[inner])
            return 0;
        inner = d;
    }
    return 1;
}

/* A reduction of x (a strided view, flatten) whose reduced dims x walks
 * apart (a conv's result, channels-last and padded, read NCHW by a group
 * norm's sums over (h, w); a sum over dims 1 and 3): the back half reduces
 * one loop, so x becomes a copy of itself with its kept dims first and its
 * reduced dims last, each in order, which walks them as one run (for a
 * norm's trailing dims, its contiguous copy, which the norm's elementwise
 * part reads too). */
static void merge_reduced(lctx *c, int x, const int *reduced)
{
    const gr_ttype t = val(c, x)->type;
    int64_t flat[GR_MAX_RANK];
    for (int d = 0; d < t.rank; d++)
        flat[d] = val(c, x)->map[0].coef[d];
    if (reduced_merge(&t, flat, reduced))
        return;
    int perm[GR_MAX_RANK], n = 0; /* the copy's dim j is x's perm[j] */
    for (int last = 0; last < 2; last++)
        for (int d = 0; d < t.rank; d++)
            if (!!reduced[d] == last)
                perm[n++] = d;
    gr_ttype ct = t;
    ir_index at[GR_MAX_RANK];
    for (int j = 0; j < t.rank; j++) {
        ct.shape[j] = t.shape[perm[j]];
        at[perm[j]] = ir_idx_var(j);
    }
    uint64_t *ops = ops_new(c);
    ops_of(c, ops, x);
    const int b = new_base(c, &ct, read_at(c, x, at), c->d->values[x].name);
    ops_or(c, c->bases[b].ops, ops);
    free(ops);
    lval *V = val(c, x);
    V->base = b;
    for (int j = 0; j < t.rank; j++)
        V->map[j] = ir_idx_var(perm[j]);
    memset(V->ops, 0, (size_t)c->nwords * sizeof(uint64_t));
    realize_base(c, b);
    flatten(c, x);
}

static void l_reduce(lctx *c, int out, int opi)
{
    ir_reduce_op rop = (ir_reduce_op)opi;
    int x = tensor(c, 0, "self");
    int64_t in[GR_MAX_RANK];
    const gr_arg *a1 = arg(c, 1, "dim");
    int nd = a1 && a1->kind != GR_ARG_DTYPE ? ints(c, 1, "dim", in) : -1;
    const gr_arg *kd = arg(c, 2, "keepdim");
    int keepdim = kd && kd->kind == GR_ARG_BOOL && kd->i;
    gr_ttype xt = *vtype(c, x);
    int reduced[GR_MAX_RANK] = {0};
    for (int i = 0; i < nd; i++)
        reduced[normdim(c, in[i], xt.rank)] = 1;
    if (nd <= 0)
        for (int d = 0; d < xt.rank; d++)
            reduced[d] = 1;
    gr_dtype dt = xt.dtype;
    int kwdt = dtype_kw(c);
    if (kwdt >= 0)
        dt = (gr_dtype)kwdt;
    else if (rop == IR_RSUM && !ir_dtype_is_float(dt))
        dt = GR_I64;
    /* The output's dims, and where each input dim goes. */
    gr_ttype t = ttype(dt, 0, NULL);
    int64_t red_ext[GR_MAX_RANK];
    int nred = 0, pos[GR_MAX_RANK], trivial = 1;
    for (int d = 0; d < xt.rank; d++) {
        if (!reduced[d]) {
            pos[d] = t.rank;
            t.shape[t.rank++] = xt.shape[d];
            continue;
        }
        if (keepdim)
            t.shape[t.rank++] = 1;
        pos[d] = -1 - nred;
        red_ext[nred++] = xt.shape[d];
        trivial &= xt.shape[d] == 1;
    }
    ir_index coords[GR_MAX_RANK];
    int64_t nelems = 1;
    for (int i = 0; i < nred; i++)
        nelems *= red_ext[i];
    if (!nelems) { /* over no element: the identity, a constant its readers fold in */
        uint64_t *ops = ops_new(c);
        ops_of(c, ops, x);
        set_computed(c, out, &t, ir_const(&c->p->A, identity[rop], dt), ops);
        free(ops);
        return;
    }
    if (trivial) { /* nothing to reduce: a pointwise view of x */
        uint64_t *ops = ops_new(c);
        for (int d = 0; d < xt.rank; d++)
            coords[d] = pos[d] >= 0 ? ir_idx_var(pos[d]) : ir_idx_const(0);
        ops_of(c, ops, x);
        set_computed(c, out, &t, ir_cast(&c->p->A, read_at(c, x, coords), dt), ops);
        free(ops);
        return;
    }
    as_buffer_view(c, x);
    merge_reduced(c, x, reduced);
    uint64_t *ops = ops_new(c);
    ops_of(c, ops, x);
    ops_add_cur(c, ops);
    if (reduce_in_two(c, out, x, rop, dt, &t, pos, nred, red_ext, ops)) {
        free(ops);
        return;
    }
    for (int d = 0; d < xt.rank; d++)
        coords[d] = pos[d] >= 0 ? ir_idx_var(pos[d]) : ir_idx_var(t.rank - 1 - pos[d]);
    int n = new_node(c, IR_REDUCTION, &t, c->d->values[out].name, ops);
    ir_node *N = &c->p->nodes[n];
    N->rop = rop;
    N->nvars = t.rank + nred;
    N->nred = nred;
    memcpy(N->ranges, t.shape, (size_t)t.rank * sizeof *N->ranges);
    memcpy(N->ranges + t.rank, red_ext, (size_t)nred * sizeof *N->ranges);
    N->store = contiguous(&t);
    N->body = ir_cast(&c->p->A, read_at(c, x, coords), dt);
    ir_node_simplify(c->p, n);
    set_whole(c, out, buffer_base(c, c->p->nodes[n].out, 0));
    free(ops);
}

/* ---- Matmul ---- */

static int is_reshape_op(const char *base)
{
    return !strcmp(base, "view") || !strcmp(base, "_unsafe_view") || !strcmp(base, "reshape");
}

/* Is node nd a transpose of the last two of rank dims? */
static int swaps_last_two(const gr_node *nd, int rank)
{
    if (strcmp(nd->base, "transpose"))
        return 0;
    const gr_arg *d0 = gr_node_arg(nd, 1, "dim0"), *d1 = gr_node_arg(nd, 2, "dim1");
    if (!d0 || !d1 || d0->kind != GR_ARG_INT || d1->kind != GR_ARG_INT)
        return 0;
    int64_t i = d0->i < 0 ? d0->i + rank : d0->i, j = d1->i < 0 ? d1->i + rank : d1->i;
    return (i == rank - 2 && j == rank - 1) || (i == rank - 1 && j == rank - 2);
}

/* The value to read for operand v of a batched matmul: v itself, or a
 * value x that v merely views through reshapes that regroup batch dims
 * (x [2, 4, 16, 16] viewed as [8, 16, 16]), expands that change nothing
 * and transposes of the last two dims (each toggles *trans).  x's finer
 * batch dims keep its index affine where v's merged ones would need a
 * copy: repeat_kv's [1, 8, 4, 513, 128] expand of a KV cache viewed as 32
 * heads is read through its broadcast, never materialized. */
static int matmul_source(lctx *c, int v, int deep, int *trans)
{
    *trans = 0;
    for (int steps = 0; deep || !steps; steps++) {
        const gr_value *dv = &c->d->values[v];
        if (dv->node < 0)
            return v;
        const gr_node *nd = &c->d->nodes[dv->node];
        const gr_arg *a = gr_node_arg(nd, 0, NULL);
        if (!a || a->kind != GR_ARG_VALUE)
            return v;
        const gr_ttype *vt = vtype(c, v), *xt = vtype(c, a->value);
        int r = vt->rank, xr = xt->rank;
        if (r < 3 || xr < 3)
            return v;
        int same_rows = xt->shape[xr - 1] == vt->shape[r - 1] && xt->shape[xr - 2] == vt->shape[r - 2];
        if (is_reshape_op(nd->base)) {
            if (!same_rows || (!deep && xr <= r))
                return v;
        } else if (!deep) {
            return v;
        } else if (!strcmp(nd->base, "expand")) {
            if (xr != r || memcmp(xt->shape, vt->shape, (size_t)r * sizeof *vt->shape))
                return v;
        } else if (swaps_last_two(nd, r)) {
            *trans ^= 1;
        } else {
            return v;
        }
        v = a->value;
    }
    return v;
}

/* Coordinates of batch shape s over the variables of batch shape r, when
 * each dim of s is a run of consecutive dims of r (its coordinate is
 * theirs merged row-major, so affine).  0, or -1. */
static int batch_grouped(const gr_ttype *s, const gr_ttype *r, ir_index *out)
{
    int j = 0;
    for (int d = 0; d < s->rank; d++) {
        out[d] = ir_idx_const(0);
        if (s->shape[d] == 1)
            continue;
        while (j < r->rank && r->shape[j] == 1)
            j++;
        int j0 = j;
        int64_t p = 1;
        while (j < r->rank && p < s->shape[d])
            p *= r->shape[j++];
        if (p != s->shape[d])
            return -1;
        int64_t st = 1;
        for (int k = j - 1; k >= j0; k--) {
            out[d].coef[k] = st;
            st *= r->shape[k];
        }
    }
    for (; j < r->rank; j++)
        if (r->shape[j] != 1)
            return -1;
    return 0;
}

static int same_batch(const gr_ttype *a, const gr_ttype *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int d = 0; d < a->rank - 2; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

/* Is value v the same all along its last dimension (of more than one
 * element)? */
static int broadcast_last(lctx *c, int v)
{
    const lval *V = val(c, v);
    const int d = V->type.rank - 1;
    if (d < 0 || V->type.shape[d] < 2)
        return 0;
    for (int j = 0; j < c->bases[V->base].type.rank; j++)
        if (V->map[j].coef[d])
            return 0;
    return 1;
}

/* Operands a and b of a batched matmul read through their sources
 * (matmul_source) when the batch dims of each group into the finer one's
 * (or it has none): *batch becomes that finer batch, *grouped is set.
 * A product of one row (a decode step's attention) looks through every
 * view to its source (deep); one of many rows only through a reshape of
 * both operands alike, or of one beside an operand without batch dims:
 * there the copy of a broadcast KV head gives each head's product
 * contiguous operands, which its batch split is tuned for (reading the
 * broadcast made the Llama-8B prefill layer 7.78 M -> 8.50 M cycles). */
static void read_sources(lctx *c, int *a, int *b, int64_t M, int *trans, gr_ttype *batch, int *grouped)
{
    const gr_ttype *ta = vtype(c, *a), *tb = vtype(c, *b);
    if (!same_batch(ta, tb) && ta->rank != 2 && tb->rank != 2)
        return;
    int v[2] = {*a, *b}, tr[2], deep = M == 1;
    gr_ttype s[2];
    for (int i = 0; i < 2; i++) {
        v[i] = matmul_source(c, v[i], deep, &tr[i]);
        s[i] = *vtype(c, v[i]);
        s[i].rank -= 2;
        if (!gr_ttype_numel(&s[i]))
            return;
    }
    int moved = (v[0] != *a) + (v[1] != *b);
    if (!moved || (!deep && (moved == 2 ? !same_batch(vtype(c, v[0]), vtype(c, v[1]))
                                         : (v[0] == *a ? ta : tb)->rank != 2)))
        return;
    const gr_ttype *r = &s[s[1].rank > s[0].rank];
    ir_index co[GR_MAX_RANK];
    for (int i = 0; i < 2; i++)
        if (s[i].rank && batch_grouped(&s[i], r, co))
            return;
    *a = v[0];
    *b = v[1];
    trans[0] = tr[0];
    trans[1] = tr[1];
    *batch = *r;
    batch->dtype = ta->dtype;
    *grouped = 1;
}

/* Coordinates of operand v (A when !is_b) over the matmul's variables
 * b0.., m, n, k (nb batch dims of shape batch). */
static void operand_coords(lctx *c, int v, int is_b, int vec, int trans, int grouped, const gr_ttype *batch,
                           ir_index *co)
{
    const gr_ttype *pv = vtype(c, v);
    int r = pv->rank, nb = batch->rank, vm = nb, vn = nb + 1, vk = nb + 2;
    if (grouped) {
        gr_ttype s = *pv;
        s.rank = r - 2;
        batch_grouped(&s, batch, co);
    } else {
        for (int d = 0; d < r - (vec ? 1 : 2); d++)
            co[d] = pv->shape[d] == 1 ? ir_idx_const(0) : ir_idx_var(d + nb - (r - 2));
    }
    int rows = is_b ? vk : vm, cols = is_b ? vn : vk; /* the operand's own [rows, cols] */
    if (vec) {
        co[r - 1] = ir_idx_var(vk);
    } else {
        co[r - 2] = ir_idx_var(trans ? cols : rows);
        co[r - 1] = ir_idx_var(trans ? rows : cols);
    }
}

/* A batch loop that B does not depend on (the query heads that share a KV
 * head) joins m when the product has one row (a decode step's attention):
 * B is then read once for all of them, as one product of as many rows,
 * instead of once per row.  With many rows B is read once per block of
 * them anyway, and the batch split keeps its parallel parts. */
static void fold_broadcast_batch(ir_node *Nd)
{
    int vm = Nd->nbatch;
    for (int d = Nd->nbatch - 1; d >= 0 && Nd->ranges[vm] == 1; d--) {
        if (Nd->ranges[d] == 1 || Nd->bidx.coef[d])
            continue;
        Nd->aidx.coef[vm] = Nd->aidx.coef[d];
        Nd->store.coef[vm] = Nd->store.coef[d];
        Nd->ranges[vm] = Nd->ranges[d];
        Nd->ranges[d] = 1;
        Nd->aidx.coef[d] = 0;
        Nd->store.coef[d] = 0;
    }
}

/* The matmul node of out = a @ b over batch, each operand read through
 * coordinates ca, cb (over b0.., m, n, k); the output is contiguous in
 * (b.., m, n). */
static void matmul_node(lctx *c, int out, int a, int b, const gr_ttype *t, const gr_ttype *batch, int64_t M,
                        int64_t N, int64_t K, const ir_index *ca, const ir_index *cb, const uint64_t *ops)
{
    int nb = batch->rank, vm = nb, vn = nb + 1, vk = nb + 2;
    int n = new_node(c, IR_MATMUL, t, c->d->values[out].name, ops);
    ir_node *Nd = &c->p->nodes[n];
    Nd->nbatch = nb;
    Nd->nvars = nb + 3;
    memcpy(Nd->ranges, batch->shape, (size_t)nb * sizeof *Nd->ranges);
    Nd->ranges[vm] = M;
    Nd->ranges[vn] = N;
    Nd->ranges[vk] = K;
    Nd->a = c->bases[val(c, a)->base].buf;
    Nd->b = c->bases[val(c, b)->base].buf;
    Nd->aidx = ir_idx_compose(&val(c, a)->map[0], vtype(c, a)->rank, ca);
    Nd->bidx = ir_idx_compose(&val(c, b)->map[0], vtype(c, b)->rank, cb);
    int64_t st = N;
    Nd->store = ir_idx_const(0);
    Nd->store.coef[vn] = 1;
    Nd->store.coef[vm] = st;
    st *= M;
    for (int d = nb - 1; d >= 0; d--) {
        Nd->store.coef[d] = st;
        st *= batch->shape[d];
    }
    fold_broadcast_batch(Nd);
    ir_node_simplify(c->p, n);
    set_whole(c, out, buffer_base(c, c->p->nodes[n].out, 0));
}

static void l_matmul(lctx *c, int out, int opi)
{
    (void)opi;
    int a = tensor(c, 0, "self"), b = tensor(c, 1, "mat2");
    gr_ttype ta = *vtype(c, a), tb = *vtype(c, b);
    int vec_a = ta.rank == 1, vec_b = tb.rank == 1; /* matmul of vectors: a row / a column */
    if (ta.rank < 1 || tb.rank < 1 || ta.shape[ta.rank - 1] != tb.shape[vec_b ? 0 : tb.rank - 2])
        fail(c, "matrix shapes do not agree");
    int64_t M = vec_a ? 1 : ta.shape[ta.rank - 2], K = ta.shape[ta.rank - 1], N = vec_b ? 1 : tb.shape[tb.rank - 1];
    gr_ttype ba = ta, bb = tb, batch;
    ba.rank = vec_a ? 0 : ta.rank - 2;
    bb.rank = vec_b ? 0 : tb.rank - 2;
    if (ir_broadcast(&ba, &bb, &batch))
        fail(c, "batch dimensions do not broadcast");
    gr_ttype t = batch;
    t.dtype = ta.dtype;
    if (!vec_a)
        t.shape[t.rank++] = M;
    if (!vec_b)
        t.shape[t.rank++] = N;
    if (ta.dtype != tb.dtype)
        fail(c, "operands have different dtypes");

    uint64_t *ops = ops_new(c);
    ops_or(c, ops, val(c, a)->ops);
    ops_or(c, ops, val(c, b)->ops);
    ops_add_cur(c, ops);
    if (!K) { /* a sum over no element (so addmm gives its bias) */
        set_computed(c, out, &t, ir_const(&c->p->A, identity[IR_RSUM], t.dtype), ops);
        free(ops);
        return;
    }
    int trans[2] = {0, 0}, grouped = 0;
    if (!vec_a && !vec_b)
        read_sources(c, &a, &b, M, trans, &batch, &grouped);
    /* An operand broadcast along its last dimension (an expand into A's K
     * or B's N) is copied first: the PT reads that dimension as the lanes
     * of its sticks. */
    if (broadcast_last(c, a))
        realize_copy(c, a, c->d->values[a].name);
    if (broadcast_last(c, b))
        realize_copy(c, b, c->d->values[b].name);
    as_buffer_view(c, a);
    as_buffer_view(c, b);
    ops_of(c, ops, a);
    ops_of(c, ops, b);
    ir_index ca[GR_MAX_RANK], cb[GR_MAX_RANK];
    operand_coords(c, a, 0, vec_a, trans[0], grouped, &batch, ca);
    operand_coords(c, b, 1, vec_b, trans[1], grouped, &batch, cb);
    matmul_node(c, out, a, b, &t, &batch, M, N, K, ca, cb, ops);
    free(ops);
}

/* ---- Convolution ----
 *
 * convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
 * as an implicit GEMM on the PT units (docs/compiler.md, "Convolution").
 * The input is copied once, padded and channels-last: xp[n, hp, wp, c]
 * (input-sized; the copy is the transposition the PT needs anyway, A
 * sticked on K = channels).  Then every tap (kh, kw) is one MATMUL over
 * batch (n, g, oh), m = ow, n = co (in the group), k = ci (in the group):
 *   A = xp[n, oh*s + kh*d, ow*s + kw*d, g*CIg + ci]   (affine, sticks on ci)
 *   B = w[g*COg + co, ci, kh, kw]                    (a weight sticked on co)
 * and each tap's product is added to the sum of the taps before it (an
 * epilogue, as addmm's bias), into y[n, oh, ow, co] (channels-last).
 * The last tap adds the bias.  The result is y seen as (n, co, oh, ow),
 * a view: a following conv's padded copy reads y along the channels.
 * With stride 1 and Wp > OW, (oh, ow) is one loop m over oh*Wp + ow: A's index is
 * still affine (m*C), the product has M = OH*Wp rows instead of a batch of
 * OH products of OW rows, and y is Wp wide, its columns past OW never read
 * (xp has one more row of zeros, so the last row's taps stay inside it). */
typedef struct {
    int64_t n, cin, cout, g, h, w, kh, kw, oh, ow, hp, wp;
    int merged;               /* (oh, ow) is one loop */
    int64_t yw;               /* y's width: ow, or wp when merged */
    int64_t cs[2];            /* xp's pixel i is padded x's i*cs: a 1x1 conv's stride is the copy's */
    int64_t kwf;              /* kw taps folded into one product's K (kw, ci): KW or 1 */
    int64_t kc;               /* every tap in one K (kh, kw, ci) through an im2col copy, or 0 */
    int chan;                 /* that K is (ci, kh, kw) instead, each channel's taps padded to whole sticks */
    int64_t s[2], p[2], d[2]; /* H then W */
    int nsp;                  /* spatial dims of the op: 1 or 2 */
    int64_t c0;               /* the first input channel of this K block (cin of them) */
    int kblocks;              /* the conv runs as K blocks (conv_kblock) */
    int64_t bdg;              /* > 1: the groups run as one product over a block-diagonal weight (conv_blockdiag) */
} convshape;

/* One of stride, padding, dilation: a list of nsp ints (or one for all). */
static void conv_ints(lctx *c, int pos, const char *key, int nsp, int64_t dflt, int64_t *out2)
{
    int64_t v[GR_MAX_RANK];
    const gr_arg *a = arg(c, pos, key);
    int cnt = a && a->kind != GR_ARG_NONE ? ints(c, pos, key, v) : 0;
    if (cnt != 0 && cnt != 1 && cnt != nsp)
        fail(c, "argument %s must have %d values", key, nsp);
    out2[0] = out2[1] = dflt;
    for (int i = 0; i < nsp && cnt; i++)
        out2[2 - nsp + i] = v[cnt == 1 ? 0 : i];
}

/* Fold a row of kw taps into one product only for a weight of at most
 * this many times the input's elements (conv_shape). */
#define CONV_FOLD_MAX_WEIGHT 8
/* An im2col copy (conv_shape) for few input channels only for a K of at
 * most IR_IM2COL_MAX_K (4 sticks; each row of kw taps is then padded to whole sticks
 * of CONV_IM2COL_ROW); else only of at most this many times the input's
 * elements (a stride-2 3x3 conv's is 2.25 times) */
#define CONV_IM2COL_MAX_GROWTH 4
#define CONV_IM2COL_ROW IR_STICK_LANES
#define CONV_IM2COL_MAX_PADDED_ROW 1024
#define CONV_ROWS_FIRST_MAX_C 16

/* K of an im2col copy over (ci, kh, kw): each channel's kh*kw taps padded
 * to whole sticks of CONV_IM2COL_ROW elements. */
static int64_t conv_kc_chan(const convshape *s)
{
    return s->cin * ((s->kh * s->kw + CONV_IM2COL_ROW - 1) / CONV_IM2COL_ROW * CONV_IM2COL_ROW);
}

/* One input and one output channel per group (conv_depthwise). */
static int conv_is_depthwise(const convshape *s)
{
    return s->g > 1 && s->g == s->cin && s->cout == s->cin;
}

/* Grouped convs of at most this many input channels run as one product
 * over a block-diagonal weight (conv_blockdiag). */
#define CONV_BLOCKDIAG_MAX_C 256

/* Does a grouped conv (not depthwise) run as one group, its weight
 * expanded to [C_out, C_in] per tap with zeros off the groups' blocks
 * (conv_blockdiag_weight)?  Only where groups part a stick: per group,
 * products of C/G channels (8 for 64 in 8 groups) shared each output stick
 * between groups, whose store staged all of y in LX ("no block of the
 * product fits" from a batch of 16 at 28x28).  K grows G times: groups of
 * whole sticks keep their own products (256 channels in 2 groups at 14x14:
 * 89,137 cycles per group, 98,118 block-diagonal; spyre-4core 109,842 and
 * 186,567). */
static int conv_blockdiag(const lctx *c, const convshape *s)
{
    const chip_config *cfg = c->p->opts.target;
    if (!cfg || s->g == 1 || conv_is_depthwise(s) || s->cin > CONV_BLOCKDIAG_MAX_C)
        return 0;
    const int64_t lanes = cfg->stick_bytes / 2;
    return (s->cin / s->g) % lanes || (s->cout / s->g) % lanes;
}

static convshape conv_shape(lctx *c, const gr_ttype *xt, const gr_ttype *wt)
{
    convshape s;
    memset(&s, 0, sizeof s);
    s.nsp = xt->rank - 2;
    if ((s.nsp != 1 && s.nsp != 2) || wt->rank != xt->rank)
        fail(c, "lowers 1-D and 2-D convolutions of a batched input only");
    if (num(c, 6, "transposed", 0))
        fail(c, "does not lower a transposed convolution");
    s.g = (int64_t)num(c, 8, "groups", 1);
    s.n = xt->shape[0];
    s.cin = xt->shape[1];
    s.cout = wt->shape[0];
    s.h = s.nsp == 2 ? xt->shape[2] : 1;
    s.w = xt->shape[xt->rank - 1];
    s.kh = s.nsp == 2 ? wt->shape[2] : 1;
    s.kw = wt->shape[wt->rank - 1];
    if (s.g < 1 || s.cin % s.g || s.cout % s.g || wt->shape[1] * s.g != s.cin)
        fail(c, "weight and groups do not match the input's %lld channels", (long long)s.cin);
    s.bdg = conv_blockdiag(c, &s) ? s.g : 1;
    if (s.bdg > 1)
        s.g = 1;
    conv_ints(c, 3, "stride", s.nsp, 1, s.s);
    conv_ints(c, 4, "padding", s.nsp, 0, s.p);
    conv_ints(c, 5, "dilation", s.nsp, 1, s.d);
    for (int i = 0; i < 2; i++) {
        if (s.s[i] < 1 || s.p[i] < 0 || s.d[i] < 1)
            fail(c, "stride and dilation must be positive and padding not negative");
        if (s.s[i] > INT32_MAX || s.p[i] > INT32_MAX || s.d[i] > INT32_MAX) /* (the extents' arithmetic in 64 bits) */
            fail(c, "stride, padding and dilation must be below 2^31");
    }
    s.hp = s.h + 2 * s.p[0];
    s.wp = s.w + 2 * s.p[1];
    s.oh = (s.hp - s.d[0] * (s.kh - 1) - 1) / s.s[0] + 1;
    s.ow = (s.wp - s.d[1] * (s.kw - 1) - 1) / s.s[1] + 1;
    if (s.hp < s.d[0] * (s.kh - 1) + 1 || s.wp < s.d[1] * (s.kw - 1) + 1)
        fail(c, "the kernel is larger than the padded input");
    s.cs[0] = s.cs[1] = 1;
    if (s.kh == 1 && s.kw == 1) { /* a 1x1 conv reads every s-th pixel: copy only those, then stride 1 */
        memcpy(s.cs, s.s, sizeof s.cs);
        s.hp = s.oh;
        s.wp = s.ow;
        s.s[0] = s.s[1] = 1;
    }
    /* merged when y is wider than the output, and for a 1x1 conv (its xp is
     * dense: one product of M = oh*ow instead of a batch of oh products of
     * ow rows); an NCHW result taken as the product's epilogue is then
     * split between cores only at whole sticks (be_matmul.c).  Not for one
     * input channel and a larger kernel: its xp, one lane per stick, staged
     * a whole image per row and missed LX from a batch of 12 (32x32) up;
     * the im2col below takes it */
    s.merged = s.s[0] == 1 && s.s[1] == 1 && ((s.wp > s.ow && s.cin > 1) || (s.kh == 1 && s.kw == 1));
    /* xp's pixels are C apart: with dilation 1 along W and one group, a
     * row of kw taps reads A at m*C + kw*C + ci, one k over (kw, ci).  Not
     * for one row of taps: one product alone would take an NCHW output's
     * copy as its epilogue, whose store the back half may split mid-stick.
     * The weight is then copied each run (wr): not when it is much larger
     * than the input (bench/run conv, ResNet-18's body: 128 channels at
     * 28x28, a weight 1.5 times the input, gains; 256 at 14x14, 12 times,
     * loses: layer3 0.45 -> 0.53 of the matmuls without the copy) */
    s.kwf = s.d[1] == 1 && s.g == 1 && s.kw > 1 && s.kh > 1 &&
                    gr_ttype_numel(wt) <= CONV_FOLD_MAX_WEIGHT * gr_ttype_numel(xt)
                ? s.kw
                : 1;
    /* few input channels and no merged rows (the stem: 3 channels, stride
     * 2): the products' K of kw*C (21) would fill a third of a stick and
     * each run as a batch of OH products of OW rows (bench/run conv: the
     * stem's 7 products 1.5 million cycles); one product over an im2col
     * copy of K = kh rows of kw*C, each padded to whole sticks, instead.
     * Always for windows that tile the input (stride = kernel, no padding:
     * ViT's patch embedding; the copy is the input, its rows padded): no
     * partial sum is stored, which the reference's bound counts on
     * (docs/validation.md, "Convolution") */
    const int tiles = s.s[0] == s.kh && s.s[1] == s.kw && !s.p[0] && !s.p[1];
    const int64_t kc = s.kh * ((s.cin * s.kw + CONV_IM2COL_ROW - 1) / CONV_IM2COL_ROW * CONV_IM2COL_ROW);
    /* padded rows tell their zeros by the index j < kw*C, exact in DL16
     * only up to 1024; a tiling conv takes the copy whatever (the
     * reference bounds it as one product; refused, it runs on the host) */
    const int pad_ok = kc == s.kh * s.kw * s.cin || kc / s.kh <= CONV_IM2COL_MAX_PADDED_ROW;
    const int chan = s.bdg == 1 && s.cin < CONV_ROWS_FIRST_MAX_C && conv_kc_chan(&s) <= kc;
    if (!s.merged && s.g == 1 && s.kh * s.kw > 1 && (pad_ok || tiles) && ((s.d[0] == 1 && s.d[1] == 1) || chan) &&
        ((s.cin < CONV_ROWS_FIRST_MAX_C && s.cin * s.kh * s.kw <= IR_IM2COL_MAX_K) || tiles ||
         s.oh * s.ow * kc <= CONV_IM2COL_MAX_GROWTH * s.h * s.w * s.cin)) {
        s.kc = kc;
        s.kwf = s.kw;
        /* few channels: K over (ci, kh, kw) pads each channel's taps
         * instead of each row's (the stem: 3 x 64 = 192 instead of 7 x 64),
         * read from a rows-first copy of x (conv_im2col_chan); the only
         * im2col that reads a dilated conv's taps (d apart in xq's rows) */
        s.chan = chan;
    }
    s.yw = s.merged ? s.wp : s.ow;
    return s;
}

/* The NCHW <-> channels-last copies go through a rows-first copy when the
 * NCHW rows are long and the channels few: an input of fewer channels than
 * a quarter stick (the layout pass sticks an NCHW input read only by the
 * copy on its channels, which then fill few lanes: the stem's 3) and rows
 * of at least a quarter stick; an output whose rows fill a stick.  Measured
 * with bench/run conv: the stem gains both, the 3x3 convs of 64 to 512
 * channels lose with either. */
#define CONV_ROWS_FIRST_MIN_W 16
#define CONV_OUT_ROWS_FIRST_MIN_W 64

/* Does a load of e walk its buffer across rows along variable 3 (the
 * copy's channel, its lanes)? */
static void strided_lane(void *ctx, const ir_expr *x)
{
    if (x->kind == IR_E_LOAD && x->idx.coef[3] != 0 && x->idx.coef[3] != 1)
        *(int *)ctx = 1;
}

/* A conv's copy: body over t as a realized buffer named name, made by the
 * ops in ops (or NULL) and, for from >= 0, by value from's and the current
 * op; its buffer. */
static int conv_copy(lctx *c, const gr_ttype *t, int body, const char *name, const uint64_t *ops, int from)
{
    int b = new_base(c, t, body, name);
    if (ops)
        ops_or(c, c->bases[b].ops, ops);
    if (from >= 0) {
        ops_of(c, c->bases[b].ops, from);
        ops_add_cur(c, c->bases[b].ops);
    }
    realize_base(c, b);
    return c->bases[b].buf;
}

/* A comparison of variable v's affine index with a constant decided over
 * v in [0, n) (every other variable's coefficient 0): 1 or 0; else -1. */
static int chan_cmp_known(const ir_arena *A, const ir_expr *x, int v, int64_t n)
{
    if (x->kind != IR_E_OP || x->b < 0 || A->e[x->a].kind != IR_E_INDEX || A->e[x->b].kind != IR_E_CONST)
        return -1;
    const ir_index *i = &A->e[x->a].idx;
    for (int d = 0; d < IR_MAX_VARS; d++)
        if (d != v && i->coef[d])
            return -1;
    const int64_t a = i->offset, b = i->offset + i->coef[v] * (n - 1);
    const int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    const double k = A->e[x->b].value;
    switch (x->op) {
    case IR_LT: return hi < k ? 1 : lo >= k ? 0 : -1;
    case IR_GE: return lo >= k ? 1 : hi < k ? 0 : -1;
    default: return -1;
    }
}

static int prune_chan_rec(ir_arena *A, int e, int v, int64_t n, int *memo)
{
    if (memo[e] >= 0)
        return memo[e];
    const ir_expr x = A->e[e]; /* a copy: interning may move the arena */
    int r = e;
    if (x.kind == IR_E_WHERE) {
        const int known = chan_cmp_known(A, &A->e[x.a], v, n);
        if (known >= 0)
            r = prune_chan_rec(A, known ? x.b : x.c, v, n, memo);
        else
            r = ir_where(A, x.a, prune_chan_rec(A, x.b, v, n, memo), prune_chan_rec(A, x.c, v, n, memo));
    } else if (x.kind == IR_E_OP) {
        const int a = prune_chan_rec(A, x.a, v, n, memo);
        r = x.b < 0 ? ir_op1(A, x.op, a) : ir_op2(A, x.op, a, prune_chan_rec(A, x.b, v, n, memo));
    } else if (x.kind == IR_E_CAST) {
        r = ir_cast(A, prune_chan_rec(A, x.a, v, n, memo), x.dtype);
    }
    return memo[e] = r;
}

/* Body e of a K block's copy without the cat pieces (where-chains on the
 * channel, variable v in [0, n)) the block's channels lie outside: a block
 * reads only its own pieces. */
static int prune_chan(lctx *c, int e, int v, int64_t n)
{
    ir_arena *A = &c->p->A;
    int *memo = ir_xalloc((size_t)(e + 1) * sizeof *memo);
    for (int i = 0; i <= e; i++)
        memo[i] = -1;
    const int r = prune_chan_rec(A, e, v, n, memo);
    free(memo);
    return r;
}

/* x (N, C, H, W) copied into xt[n, h, c, w], its lanes still along w
 * (every row one stick of x), and read back at (n, c, h, w) = co: a
 * channels-last copy of an NCHW x stages only the sticks of a few rows of
 * xt per chunk, where x's would span every channel's (docs/compiler.md,
 * "Convolution"). */
static int conv_rows_first(lctx *c, int x, const convshape *s, const ir_index *co)
{
    const int64_t shape[4] = {s->n, s->h, s->cin, s->w};
    gr_ttype t = ttype(vtype(c, x)->dtype, 4, shape);
    ir_index xc[4] = {ir_idx_var(0), ir_idx_var(2), ir_idx_var(1), ir_idx_var(3)};
    xc[1].offset = s->c0;
    if (s->nsp == 1)
        xc[2] = ir_idx_var(3);
    int body = read_at(c, x, xc);
    if (s->kblocks)
        body = prune_chan(c, body, 2, s->cin);
    int buf = conv_copy(c, &t, body, "conv_rows", NULL, x);
    ir_index row = contiguous(&t), at[4] = {co[0], s->nsp == 2 ? co[2] : ir_idx_const(0), co[1], co[3]};
    at[2].offset -= s->c0;
    ir_index idx = ir_idx_compose(&row, 4, at);
    return ir_load(&c->p->A, buf, t.dtype, &idx);
}

/* The sticks between one channel's and the next's in the loads of a
 * copy's body that walk their buffer across rows along the channel
 * (variable 3), each buffer's rows a stick or more: at most. */
typedef struct {
    const lctx *c;
    int64_t lanes, step;
} chan_step;

static void note_chan_step(void *ctx, const ir_expr *x)
{
    chan_step *q = ctx;
    if (x->kind != IR_E_LOAD || x->idx.coef[3] == 0 || x->idx.coef[3] == 1)
        return;
    const gr_ttype *bt = &q->c->p->bufs[x->buf].type;
    const int64_t row = bt->rank ? bt->shape[bt->rank - 1] : 1, coef = x->idx.coef[3] < 0 ? -x->idx.coef[3] : x->idx.coef[3];
    const int64_t step = (coef + row - 1) / (row ? row : 1) * ((row + q->lanes - 1) / q->lanes);
    q->step = step > q->step ? step : q->step;
}

/* Would the channels-last copy of an NCHW x (its expression body) read
 * across its sticks miss the target's LX?  A row of the copy (one pixel,
 * every channel) stages the sticks its channels span, (C - 1) H of x's
 * rows, in two slots: on the 4-core chip 64 channels at 56 x 56 need
 * 904,704 bytes (ResNet-18's first 3x3 after its max pool); more when a
 * buffer body reads has shorter rows than x (MobileViT's fold, 32
 * channels of 8 x 8 from rows of 2: 254,464).  The rows-first copy stages
 * C sticks. */
static int conv_span_unfit(const lctx *c, const convshape *s, int body)
{
    const chip_config *cfg = c->p->opts.target;
    if (!cfg)
        return 0;
    chan_step q = {c, cfg->stick_bytes / 2, 0};
    ir_expr_walk(&c->p->A, body, note_chan_step, &q);
    int64_t step = s->h * ((s->w + q.lanes - 1) / q.lanes);
    step = q.step > step ? q.step : step;
    int64_t span = ((s->cin - 1) * step + 1) * (int64_t)cfg->stick_bytes;
    return 2 * span > (int64_t)cfg->lx_usable_bytes;
}

/* xp[n, hp, wp, c]: x padded with zeros (its every cs-th pixel),
 * channels-last, in a buffer.  One channel: stored as [n, hp, 1, wp] (the
 * same elements in the same order), so that the copy's rows are rows of
 * x: as [.., wp, 1] each row is one element and its store is staged whole
 * (spyre-4core: a dilated 3x3 on 2x1x32x32 needs 333,312 bytes of LX). */
static int conv_padded(lctx *c, int x, const convshape *s)
{
    ir_arena *A = &c->p->A;
    const int one = s->cin == 1, vw = one ? 3 : 2;
    const int64_t shape[4] = {s->n, s->hp + (s->merged && s->kw > 1), one ? 1 : s->wp, one ? s->wp : s->cin};
    gr_ttype t = ttype(vtype(c, x)->dtype, 4, shape);
    ir_index co[4], hv = ir_idx_var(1), wv = ir_idx_var(vw);
    co[0] = ir_idx_var(0);
    co[1] = ir_idx_var(5 - vw);
    co[1].offset = s->c0;
    hv.coef[1] = s->cs[0];
    wv.coef[vw] = s->cs[1];
    hv.offset = -s->p[0];
    wv.offset = -s->p[1];
    co[2] = s->nsp == 2 ? hv : wv;
    co[3] = wv;
    int body = read_at(c, x, co), cond = -1, strided = 0;
    if (s->kblocks)
        body = prune_chan(c, body, 5 - vw, s->cin);
    ir_expr_walk(A, body, strided_lane, &strided);
    if (strided && s->cin > 1 &&
        ((s->cin < CONV_ROWS_FIRST_MAX_C && s->w >= CONV_ROWS_FIRST_MIN_W) || conv_span_unfit(c, s, body)))
        body = conv_rows_first(c, x, s, co);
    for (int i = 0; i < 2; i++) {
        if (!s->p[i])
            continue;
        const int v = i ? vw : 1;
        ir_index at = ir_idx_var(v);
        at.coef[v] = s->cs[i];
        int e = ir_indexval(A, &at), lo = ir_const(A, (double)s->p[i], GR_I64);
        int hi = ir_const(A, (double)(s->p[i] + (i ? s->w : s->h)), GR_I64);
        int in = ir_op2(A, IR_AND, ir_op2(A, IR_GE, e, lo), ir_op2(A, IR_LT, e, hi));
        cond = cond < 0 ? in : ir_op2(A, IR_AND, cond, in);
    }
    if (cond >= 0)
        body = ir_where(A, cond, body, ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_in", NULL, x);
}

/* wr[kh, kw, ci, co]: the weight with a row of kw taps and the input
 * channels one K, in a buffer (weight-sized; its lanes along co, as B's);
 * for s->chan wq[ci, kh, kw, co]. */
static int conv_weight_rows(lctx *c, int w, const convshape *s)
{
    const int64_t shape[4] = {s->chan ? s->cin : s->kh, s->chan ? s->kh : s->kw, s->chan ? s->kw : s->cin, s->cout};
    gr_ttype t = ttype(vtype(c, w)->dtype, 4, shape);
    ir_index wc[4] = {ir_idx_var(3), ir_idx_var(2), ir_idx_var(0), ir_idx_var(1)};
    if (s->chan) {
        wc[1] = ir_idx_var(0);
        wc[2] = ir_idx_var(1);
        wc[3] = ir_idx_var(2);
    }
    if (s->nsp == 1)
        wc[2] = ir_idx_var(s->chan ? 2 : 1);
    return conv_copy(c, &t, read_at(c, w, wc), "conv_weight", NULL, w);
}

/* wr[kh, kw, ci, co] of a grouped conv run as one group: w's blocks on
 * the diagonal, zeros elsewhere; built as [kh, kw, G, ci, co] (the same
 * elements in the same order), where group g's block, co - g*C_out/G in
 * [0, C_out/G), is affine. */
static int conv_blockdiag_weight(lctx *c, int w, const convshape *s)
{
    ir_arena *A = &c->p->A;
    const int64_t g = s->bdg, cig = s->cin / g, cog = s->cout / g;
    const int64_t shape[5] = {s->kh, s->kw, g, cig, s->cout};
    gr_ttype t = ttype(vtype(c, w)->dtype, 5, shape);
    ir_index wc[4] = {ir_idx_var(4), ir_idx_var(3), ir_idx_var(0), ir_idx_var(1)};
    if (s->nsp == 1)
        wc[2] = ir_idx_var(1);
    ir_index in_g = ir_idx_var(4);
    in_g.coef[2] = -cog;
    int e = ir_indexval(A, &in_g);
    int same = ir_op2(A, IR_AND, ir_op2(A, IR_GE, e, ir_const(A, 0, GR_I64)),
                      ir_op2(A, IR_LT, e, ir_const(A, (double)cog, GR_I64)));
    int body = ir_where(A, same, read_at(c, w, wc), ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_wdiag", NULL, w);
}

/* An im2col copy's row of kw taps (kw*C elements) is padded to whole
 * sticks of CONV_IM2COL_ROW elements (a 128-byte stick of DL16), so that
 * each row is its own sticks: a row at kh*kw*C inside a stick is refused
 * as needing the whole copy staged in LX. */
/* xc[n, oh, ow, kh, j]: every tap's input of each output pixel, row kh's
 * kw taps at j = (kw, ci) < kw*C (xp's pixels are C apart, so they are
 * kw*C consecutive elements), zeros up to s->kc / kh. */
static int conv_im2col(lctx *c, int xp, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t hx = c->p->bufs[xp].type.shape[1], rowk = s->kw * s->cin;
    const int64_t shape[5] = {s->n, s->oh, s->ow, s->kh, s->kc / s->kh};
    gr_ttype t = ttype(c->p->bufs[xp].type.dtype, 5, shape);
    ir_index xi = ir_idx_const(0);
    const int64_t xc[5] = {hx * s->wp * s->cin, s->s[0] * s->wp * s->cin, s->s[1] * s->cin, s->wp * s->cin, 1};
    memcpy(xi.coef, xc, sizeof xc);
    ir_index j = ir_idx_var(4);
    int body = ir_load(A, xp, t.dtype, &xi);
    if (rowk < s->kc / s->kh) /* rows padded: zeros past kw*C */
        body = ir_where(A, ir_op2(A, IR_LT, ir_indexval(A, &j), ir_const(A, (double)rowk, GR_I64)), body,
                        ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_cols", ops, -1);
}

/* wr's rows of kw taps padded as xc's: wc[kh, j, co], zeros for j past
 * kw*C. */
static int conv_im2col_weight(lctx *c, int wr, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t rowk = s->kw * s->cin, shape[3] = {s->kh, s->kc / s->kh, s->cout};
    gr_ttype t = ttype(c->p->bufs[wr].type.dtype, 3, shape);
    ir_index wi = ir_idx_var(2), j = ir_idx_var(1);
    wi.coef[0] = rowk * s->cout;
    wi.coef[1] = s->cout;
    int in = ir_op2(A, IR_LT, ir_indexval(A, &j), ir_const(A, (double)rowk, GR_I64));
    int body = ir_where(A, in, ir_load(A, wr, t.dtype, &wi), ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_wcols", ops, -1);
}

/* xq[n, hp, c, wp]: x padded with zeros, its rows of every channel next
 * to each other (lanes along w, as x's): the rows an output row's taps
 * read are a few neighbouring sticks of it. */
static int conv_padded_rows(lctx *c, int x, const convshape *s)
{
    ir_arena *A = &c->p->A;
    const int64_t shape[4] = {s->n, s->hp, s->cin, s->wp};
    gr_ttype t = ttype(vtype(c, x)->dtype, 4, shape);
    ir_index hv = ir_idx_var(1), wv = ir_idx_var(3);
    hv.offset = -s->p[0];
    wv.offset = -s->p[1];
    ir_index co[4] = {ir_idx_var(0), ir_idx_var(2), s->nsp == 2 ? hv : wv, wv};
    int body = s->p[1] ? conv_rows_first(c, x, s, co) : read_at(c, x, co), cond = -1;
    for (int i = 0; i < 2; i++) {
        if (!s->p[i])
            continue;
        ir_index at = ir_idx_var(i ? 3 : 1);
        int e = ir_indexval(A, &at), lo = ir_const(A, (double)s->p[i], GR_I64);
        int hi = ir_const(A, (double)(s->p[i] + (i ? s->w : s->h)), GR_I64);
        int in = ir_op2(A, IR_AND, ir_op2(A, IR_GE, e, lo), ir_op2(A, IR_LT, e, hi));
        cond = cond < 0 ? in : ir_op2(A, IR_AND, cond, in);
    }
    if (cond >= 0)
        body = ir_where(A, cond, body, ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_in", NULL, x);
}

/* xc[n, oh, ow, ci, j]: channel ci's taps of each output pixel, j = (kh,
 * kw) below kh*kw, zeros past it up to s->kc / C.  Row kh's kw taps are kw
 * consecutive elements of xq's row oh s + kh of channel ci: one load per
 * row of taps, each chosen for its lanes by a where on j (docs/compiler.md,
 * "Convolution"). */
static int conv_im2col_chan(lctx *c, int xq, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t wq = s->cin * s->wp, shape[5] = {s->n, s->oh, s->ow, s->cin, s->kc / s->cin};
    gr_ttype t = ttype(c->p->bufs[xq].type.dtype, 5, shape);
    ir_index j = ir_idx_var(4);
    int jv = ir_indexval(A, &j), body = ir_const(A, 0, t.dtype);
    for (int64_t kh = s->kh - 1; kh >= 0; kh--) {
        ir_index xi = ir_idx_const(kh * s->d[0] * wq - kh * s->kw * s->d[1]);
        const int64_t xc[5] = {s->hp * wq, s->s[0] * wq, s->s[1], s->wp, s->d[1]};
        memcpy(xi.coef, xc, sizeof xc);
        int in = ir_op2(A, IR_LT, jv, ir_const(A, (double)((kh + 1) * s->kw), GR_I64));
        body = ir_where(A, in, ir_load(A, xq, t.dtype, &xi), body);
    }
    return conv_copy(c, &t, body, "conv_cols", ops, -1);
}

/* wc[ci, j, co]: the weight as xc's K, wq[ci, kh, kw, co] (the weight
 * copied with its lanes along co, conv_weight_rows) at j = (kh, kw) below
 * kh*kw, zeros past it.  (A copy straight from w would walk j past a
 * channel's taps into the next output channel's, which the layout pass
 * cannot stick on co.) */
static int conv_im2col_chan_weight(lctx *c, int wq, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t shape[3] = {s->cin, s->kc / s->cin, s->cout};
    gr_ttype t = ttype(c->p->bufs[wq].type.dtype, 3, shape);
    ir_index wi = ir_idx_var(2), j = ir_idx_var(1);
    wi.coef[0] = s->kh * s->kw * s->cout;
    wi.coef[1] = s->cout;
    int in = ir_op2(A, IR_LT, ir_indexval(A, &j), ir_const(A, (double)(s->kh * s->kw), GR_I64));
    int body = ir_where(A, in, ir_load(A, wq, t.dtype, &wi), ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_wcols", ops, -1);
}

/* Tap (kh, kw)'s MATMUL node into a new (n, oh, ow, co) buffer; returns it.
 * With an im2col copy (s->kc) xp is xc and the one tap is every tap. */
static int conv_tap(lctx *c, int xp, int w, int wr, const convshape *s, int64_t kh, int64_t kw, const uint64_t *ops)
{
    enum { VN, VG, VOH, VM, VNN, VK };
    const int64_t shape[4] = {s->n, s->oh, s->yw, s->cout}, hx = c->p->bufs[xp].type.shape[1];
    gr_ttype t = ttype(c->p->bufs[xp].type.dtype, 4, shape);
    const int64_t cig = s->cin / s->g, cog = s->cout / s->g, merged = s->merged;
    int n = new_node(c, IR_MATMUL, &t, "conv_tap", ops);
    ir_node *N = &c->p->nodes[n];
    const int64_t r[6] = {s->n, s->g, merged || s->kc ? 1 : s->oh,
                          merged ? s->oh * s->yw : s->kc ? s->oh * s->ow : s->ow, cog, s->kc ? s->kc : cig * s->kwf};
    N->nbatch = 3;
    N->nvars = 6;
    memcpy(N->ranges, r, sizeof r);
    N->a = xp;
    N->aidx = ir_idx_const(((kh * s->d[0]) * s->wp + kw * s->d[1]) * s->cin);
    N->aidx.coef[VN] = hx * s->wp * s->cin;
    N->aidx.coef[VG] = cig;
    N->aidx.coef[VOH] = s->s[0] * s->wp * s->cin;
    N->aidx.coef[VM] = s->s[1] * s->cin;
    N->aidx.coef[VK] = 1;
    if (s->kc) { /* xc[n, m, (kh, j)] */
        N->aidx = ir_idx_var(VK);
        N->aidx.coef[VN] = s->oh * s->ow * s->kc;
        N->aidx.coef[VM] = s->kc;
    }
    ir_index wc[4];
    wc[0] = ir_idx_var(VNN);
    wc[0].coef[VG] = cog;
    wc[1] = ir_idx_var(VK);
    wc[1].offset = s->c0;
    wc[2] = ir_idx_const(s->nsp == 2 ? kh : kw);
    wc[3] = ir_idx_const(kw);
    if (wr >= 0) { /* wr[kh, (kw, ci), co] */
        N->b = wr;
        N->bidx = ir_idx_var(VNN);
        N->bidx.coef[VK] = s->cout;
        N->bidx.offset = (kh * s->kw + kw) * s->cin * s->cout;
    } else {
        N->b = c->bases[val(c, w)->base].buf;
        N->bidx = ir_idx_compose(&val(c, w)->map[0], s->nsp + 2, wc);
    }
    N->store = ir_idx_const(0);
    N->store.coef[VN] = s->oh * s->yw * s->cout;
    N->store.coef[VG] = cog;
    N->store.coef[VOH] = s->yw * s->cout;
    N->store.coef[VM] = s->cout;
    N->store.coef[VNN] = 1;
    ir_node_simplify(c->p, n);
    return c->p->nodes[n].out;
}

/* The bias read at channel variable 3 of (n, oh, ow, co), as dtype dt. */
static int conv_bias(lctx *c, int bias, gr_dtype dt, uint64_t *ops)
{
    ir_index at = ir_idx_var(3);
    ops_of(c, ops, bias);
    return ir_cast(&c->p->A, read_at(c, bias, &at), dt);
}

static int is_graph_output(lctx *c, int v)
{
    for (int i = 0; i < c->d->noutputs; i++)
        if (c->d->outputs[i] == v)
            return 1;
    return 0;
}

/* The one node reading value v, or -1 (none or more). */
static int sole_reader(lctx *c, int v)
{
    int r = -1;
    for (int i = 0; i < c->d->nnodes; i++) {
        const gr_node *n = &c->d->nodes[i];
        for (int a = 0; a < n->nargs; a++)
            if (n->args[a].kind == GR_ARG_VALUE && n->args[a].value == v) {
                if (r >= 0 && r != i)
                    return -1;
                r = i;
            }
    }
    return r;
}

/* Is v a graph output seen through reshapes and a permute (a 3-D conv's
 * [N OD, Co, OH, OW] as [N, Co, OD, OH, OW])? */
static int permuted_output(lctx *c, int v, int permuted)
{
    if (is_graph_output(c, v))
        return permuted;
    const int r = sole_reader(c, v);
    if (r < 0)
        return 0;
    const char *b = c->d->nodes[r].base;
    const int perm = !strcmp(b, "permute");
    if (!perm && strcmp(b, "view") && strcmp(b, "_unsafe_view") && strcmp(b, "reshape"))
        return 0;
    return permuted_output(c, c->d->nodes[r].out, permuted || perm);
}

/* Would the NCHW copy of a graph output t stage y's sticks again per
 * channel?  Its chunks of one channel's rows read the sticks of every
 * channel, each staged once only when a chunk of an image's channels, its
 * OH OW sticks in two slots, fits the target's LX (Conv2d(1, 32, 3) on
 * 16x1x28x28, spyre-4core: 1,970,162 cycles, 352,136 rows first). */
static int conv_out_unfit(const lctx *c, const gr_ttype *t)
{
    const chip_config *cfg = c->p->opts.target;
    int64_t px = 1;
    for (int d = 2; d < t->rank; d++)
        px *= t->shape[d];
    return cfg && 2 * px * (int64_t)cfg->stick_bytes > (int64_t)cfg->lx_usable_bytes;
}

/* out (of type t): y[n, oh, ow, co] seen at (n, co, (oh,) ow), a view.  A
 * graph output whose rows fill a stick, or whose image misses LX
 * (conv_out_unfit), is first copied into yt[n, oh, co, ow] (lanes along ow, a
 * chunk's rows reading the sticks of a few rows of y), which its copy into
 * NCHW reads along its sticks: y's own sticks would span every row's.  So
 * is one read as an output permuted across the batch, whatever its width:
 * the copy's chunks of rows of one channel would read the sticks of every
 * channel (a one-channel Conv3d, 16x32x32 by 8: 594,495 cycles, 367,714
 * rows first; on spyre-4core 1,599,214 and 530,077). */
static void conv_result(lctx *c, int out, int y, const gr_ttype *t)
{
    ir_index yc[4] = {ir_idx_var(0), t->rank == 4 ? ir_idx_var(2) : ir_idx_const(0), ir_idx_var(t->rank - 1),
                      ir_idx_var(1)};
    int yb = buffer_base(c, y, 0);
    if (t->shape[1] > 1 &&
        ((is_graph_output(c, out) && (t->shape[t->rank - 1] >= CONV_OUT_ROWS_FIRST_MIN_W || conv_out_unfit(c, t))) ||
         permuted_output(c, out, 0))) {
        const gr_ttype *yt = &c->p->bufs[y].type;
        const int64_t shape[4] = {yt->shape[0], yt->shape[1], t->shape[1], t->shape[t->rank - 1]};
        gr_ttype tt = ttype(t->dtype, 4, shape);
        ir_index at[4] = {ir_idx_var(0), ir_idx_var(1), ir_idx_var(3), ir_idx_var(2)};
        ir_index row = contiguous(yt), idx = ir_idx_compose(&row, 4, at);
        yb = new_base(c, &tt, ir_load(&c->p->A, y, t->dtype, &idx), "conv_out");
        ops_add_cur(c, c->bases[yb].ops);
        realize_base(c, yb);
        ir_index tc[4] = {yc[0], yc[1], ir_idx_var(1), yc[2]};
        memcpy(yc, tc, sizeof yc);
    }
    set_whole(c, out, yb);
    val(c, out)->type = *t;
    memcpy(val(c, out)->map, yc, sizeof yc);
    ops_add_cur(c, val(c, out)->ops);
}

/* A depthwise conv (one input and one output channel per group) as one
 * pointwise op on the SFP: y[n, oh, ow, c] = sum over the taps of
 * xp[n, oh s + kh d, ow s + kw d, c] w[c, 0, kh, kw] (+ bias[c]), lanes
 * along c for xp, w (sticked on c by the layout pass) and y: a product
 * would have K = 1 and N = 1 per group. */
static int conv_depthwise(lctx *c, int xp, int w, int bias, const convshape *s, uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t shape[4] = {s->n, s->oh, s->ow, s->cout}, hx = c->p->bufs[xp].type.shape[1];
    gr_ttype t = ttype(c->p->bufs[xp].type.dtype, 4, shape);
    int body = -1;
    for (int64_t kh = 0; kh < s->kh; kh++)
        for (int64_t kw = 0; kw < s->kw; kw++) {
            ir_index xi = ir_idx_const(((kh * s->d[0]) * s->wp + kw * s->d[1]) * s->cin);
            xi.coef[0] = hx * s->wp * s->cin;
            xi.coef[1] = s->s[0] * s->wp * s->cin;
            xi.coef[2] = s->s[1] * s->cin;
            xi.coef[3] = 1;
            ir_index wc[4] = {ir_idx_var(3), ir_idx_const(0), ir_idx_const(s->nsp == 2 ? kh : kw), ir_idx_const(kw)};
            int term = ir_op2(A, IR_MUL, ir_load(A, xp, t.dtype, &xi), ir_cast(A, read_at(c, w, wc), t.dtype));
            body = body < 0 ? term : ir_op2(A, IR_ADD, body, term);
        }
    if (bias >= 0)
        body = ir_op2(A, IR_ADD, body, conv_bias(c, bias, t.dtype, ops));
    ops_of(c, ops, w);
    return conv_copy(c, &t, body, "conv_dw", ops, -1);
}

/* Would an NCW reader of a 1-D conv's channels-last y miss the target's
 * LX?  A row of it (one channel, ow pixels) stages a stick per pixel in two
 * slots: the 4-core chip's 157,312 bytes hold 614 (a Conv1d of stride 4
 * over 4,000 samples has 998). */
static int conv_row_unfit(const lctx *c, const convshape *s)
{
    const chip_config *cfg = c->p->opts.target;
    return cfg && 2 * s->ow * (int64_t)cfg->stick_bytes > (int64_t)cfg->lx_usable_bytes;
}

/* A 2-D conv of one input channel, dilated or 1x1: its taps' inputs are
 * copied with lanes along ow (conv_ncw_cols) as whole shifted rows and
 * its result is NCHW, where the per-channel im2col restickifies kh loads
 * per output pixel and y, 8 channels a stick, is copied into NCHW
 * (spyre-4core, 2x1x32x32: Conv2d(1, 8, 3, padding=2, dilation=2) 56,855
 * cycles, the host 27,035, now 15,244; Conv2d(1, 8, 1) 12,789 -> 6,821).
 * Not a larger undilated kernel: MNIST's Conv2d(1, 32, 3) on 16x1x28x28
 * ran 115,245 -> 172,454 cycles on spyre. */
static int conv_ncw_one(const convshape *s)
{
    return s->nsp == 2 && s->cin == 1 && (s->d[0] > 1 || s->d[1] > 1 || s->kh * s->kw == 1);
}

/* w[co, ci, (kh,) kw] as wt[co, (ci, kh, kw)] in a buffer sticked on its
 * K, or -1 when w's view does not hold (ci, kh, kw) contiguously. */
static int conv_ncw_weight(lctx *c, int w, const convshape *s, const uint64_t *ops)
{
    as_buffer_view(c, w);
    const lval *V = val(c, w);
    const ir_index *f = &V->map[0];
    const int r = s->nsp + 1;
    if (f->coef[r] != 1 || f->coef[r - 1] != s->kw || (s->nsp == 2 && f->coef[1] != s->kh * s->kw))
        return -1;
    ir_index at = ir_idx_var(1);
    at.coef[0] = f->coef[0];
    at.offset = f->offset;
    const int64_t shape[2] = {s->cout, s->cin * s->kh * s->kw};
    gr_ttype t = ttype(V->type.dtype, 2, shape);
    const lbase *B = &c->bases[V->base];
    return conv_copy(c, &t, ir_subst(&c->p->A, B->body, 1, &at, NULL), "conv_weight", ops, w);
}

/* x's coordinate along spatial axis i (0: h, 1: w) of output position
 * variable o and tap variable k, and its test of lying inside the padding's
 * zeros (-1 when unpadded). */
static ir_index conv_ncw_at(lctx *c, const convshape *s, int i, int o, int k, int *in)
{
    ir_arena *A = &c->p->A;
    ir_index at = ir_idx_var(o);
    at.coef[o] = s->s[i] * s->cs[i]; /* a 1x1 conv's stride is in cs */
    at.coef[k] = s->d[i];
    *in = -1;
    if (s->p[i]) {
        int e = ir_indexval(A, &at), lo = ir_const(A, (double)s->p[i], GR_I64);
        int hi = ir_const(A, (double)(s->p[i] + (i ? s->w : s->h)), GR_I64);
        *in = ir_op2(A, IR_AND, ir_op2(A, IR_GE, e, lo), ir_op2(A, IR_LT, e, hi));
    }
    at.offset = -s->p[i];
    return at;
}

/* xt[n, (oh,) ci, (kh,) kw, ow]: tap (kh, kw)'s input of output pixel (oh,
 * ow) (zeros in the padding), lanes along ow as x's: B of the NCW product.
 * (x realized first put wav2vec2's GELU into the product's epilogue
 * instead: 4,918,487 -> 5,920,376 cycles on the 4-core chip.) */
static int conv_ncw_cols(lctx *c, int x, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int two = s->nsp == 2, r = two ? 6 : 4;
    const int64_t shape2[6] = {s->n, s->oh, s->cin, s->kh, s->kw, s->ow}, shape1[4] = {s->n, s->cin, s->kw, s->ow};
    gr_ttype t = ttype(vtype(c, x)->dtype, r, two ? shape2 : shape1);
    int inw, inh = -1;
    ir_index co[4] = {ir_idx_var(0), ir_idx_var(two ? 2 : 1), {0}, conv_ncw_at(c, s, 1, r - 1, r - 2, &inw)};
    if (two)
        co[2] = conv_ncw_at(c, s, 0, 1, 3, &inh);
    else /* x[n, ci, w]: read_at takes co[0..2] */
        co[2] = co[3];
    int body = read_at(c, x, co), in = inh < 0 ? inw : inw < 0 ? inh : ir_op2(A, IR_AND, inh, inw);
    if (in >= 0)
        body = ir_where(A, in, body, ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_cols", ops, x);
}

/* A conv as the product the other way round, y[n, co, (oh,) ow] = wt[co,
 * k] xt[n, (oh,) k, ow] over k = (ci, (kh,) kw), a batch over (n, oh): m =
 * co, n = ow, its result NCHW (lanes along ow) with no channels-last copy
 * of x nor y.  Returns 0 when w's view does not allow it. */
static int conv_ncw(lctx *c, int out, int x, int w, int bias, const convshape *s, uint64_t *ops)
{
    const int two = s->nsp == 2, nb = two ? 2 : 1, VM = nb, VNN = nb + 1, VK = nb + 2;
    const int64_t K = s->cin * s->kh * s->kw, shape[4] = {s->n, s->cout, s->oh, s->ow};
    const int64_t shape1[3] = {s->n, s->cout, s->ow};
    const gr_ttype tt = two ? ttype(vtype(c, x)->dtype, 4, shape) : ttype(vtype(c, x)->dtype, 3, shape1), *t = &tt;
    int wt = conv_ncw_weight(c, w, s, ops);
    if (wt < 0)
        return 0;
    int xt = conv_ncw_cols(c, x, s, ops);
    int n = new_node(c, IR_MATMUL, t, "conv_tap", ops);
    ir_node *N = &c->p->nodes[n];
    const int64_t r2[5] = {s->n, s->oh, s->cout, s->ow, K}, r1[4] = {s->n, s->cout, s->ow, K};
    N->nbatch = nb;
    N->nvars = nb + 3;
    memcpy(N->ranges, two ? r2 : r1, (size_t)(nb + 3) * sizeof r2[0]);
    N->a = wt;
    N->aidx = ir_idx_var(VK);
    N->aidx.coef[VM] = K;
    N->b = xt;
    N->bidx = ir_idx_var(VNN);
    N->bidx.coef[VK] = s->ow;
    N->bidx.coef[0] = s->oh * K * s->ow;
    N->store = ir_idx_var(VNN);
    N->store.coef[0] = s->cout * s->oh * s->ow;
    N->store.coef[VM] = s->oh * s->ow;
    if (two) {
        N->bidx.coef[1] = K * s->ow;
        N->store.coef[1] = s->ow;
    }
    ir_node_simplify(c->p, n);
    int y = buffer_base(c, c->p->nodes[n].out, 0);
    if (bias >= 0) {
        ir_index at = ir_idx_var(1);
        ir_index id = contiguous(t);
        ops_of(c, ops, bias);
        int body = ir_op2(&c->p->A, IR_ADD, ir_load(&c->p->A, c->p->nodes[n].out, t->dtype, &id),
                          ir_cast(&c->p->A, read_at(c, bias, &at), t->dtype));
        y = new_base(c, t, body, "conv_sum");
        ops_or(c, c->bases[y].ops, ops);
    }
    set_whole(c, out, y);
    ops_add_cur(c, val(c, out)->ops);
    return 1;
}

/* Does weight w, through its view, read its buffer downwards (flipped: a
 * transposed conv's phase, dec_convt.c) or its input channels right after
 * the span of its output channels (w[ci, co, ..] seen transposed)?  A
 * kw-folded or im2col copy of it would then walk no stick (the layout pass
 * sticks a tensor only on a dim its readers walk upwards without carrying
 * out of it) and gather each lane; the per-tap products read it in place,
 * co along its sticks.  Only past CONV_GATHER_MAX_WEIGHT elements (of w
 * as the conv reads it, a phase's taps): a 4x4 stride-2 transposed conv on
 * 16x16 (one conv a phase), 16 -> 8 channels (512 elements a phase) runs
 * in 41,209 cycles folded, 49,750 per tap; 32 -> 16 (2,048) 61,045 and
 * 58,631; 32 -> 32 (4,096) 73,103 and 64,366; 128 -> 64 284,764 and
 * 114,183. */
#define CONV_GATHER_MAX_WEIGHT 1024
static int conv_weight_walks_no_stick(lctx *c, int w, const convshape *s)
{
    const lval *V = val(c, w);
    if (gr_ttype_numel(&V->type) <= CONV_GATHER_MAX_WEIGHT)
        return 0;
    const gr_ttype *bt = &c->bases[V->base].type;
    ir_index row = contiguous(bt), flat = ir_idx_compose(&row, bt->rank, V->map);
    for (int d = 0; d < V->type.rank; d++)
        if (flat.coef[d] < 0)
            return 1;
    return flat.coef[1] && flat.coef[1] == flat.coef[0] * s->cout;
}

/* Every tap's product of xp (and w or wr) added to sum (-1: none) in
 * y[n, oh, ow, co], the bias (-1: none) with the last; y's buffer. */
static int conv_taps(lctx *c, int xp, int w, int wr, const convshape *s, int bias, int sum, uint64_t *ops)
{
    const int64_t shape[4] = {s->n, s->oh, s->yw, s->cout};
    gr_ttype yt = ttype(c->p->bufs[xp].type.dtype, 4, shape);
    ir_index yi = contiguous(&yt);
    ir_arena *A = &c->p->A;
    for (int64_t kh = 0; kh < (s->kc ? 1 : s->kh); kh++)
        for (int64_t kw = 0; kw < s->kw; kw += s->kwf) {
            int tap = conv_tap(c, xp, w, wr, s, kh, kw, ops);
            int body = ir_load(A, tap, yt.dtype, &yi);
            if (sum >= 0)
                body = ir_op2(A, IR_ADD, body, ir_load(A, sum, yt.dtype, &yi));
            if (bias >= 0 && (s->kc || kh == s->kh - 1) && kw + s->kwf == s->kw)
                body = ir_op2(A, IR_ADD, body, conv_bias(c, bias, yt.dtype, ops));
            if (body == ir_load(A, tap, yt.dtype, &yi)) {
                sum = tap;
                continue;
            }
            sum = conv_copy(c, &yt, body, "conv_sum", ops, -1);
        }
    return sum;
}

/* Does a load of e walk its buffer across rows along variable 3, the
 * copy's channel: a stride other than one, or rows of one element (an
 * NCHW value of 1x1 pixels)? */
typedef struct {
    const lctx *c;
    int across;
} chan_across;

static void note_chan_across(void *ctx, const ir_expr *x)
{
    chan_across *q = ctx;
    if (x->kind != IR_E_LOAD || x->idx.coef[3] == 0)
        return;
    const gr_ttype *bt = &q->c->p->bufs[x->buf].type;
    q->across |= x->idx.coef[3] != 1 || (bt->rank && bt->shape[bt->rank - 1] == 1);
}

/* Input channels per K block of a conv whose channels-last copy reads x
 * across its sticks and whose rows-first copy (conv_rows_first: a row of
 * the copy stages a stick per channel, in two slots) still misses the
 * target's LX, or 0 (one block).  DeepLab's ASPP projection, 1,280
 * channels (332,800 bytes of LX a row on spyre-4core), runs as 5 blocks
 * of 256, each a copy and a product of K = 256 summed; DenseNet's last
 * block at 1x1 pixels (BN and ReLU over a cat of 11 [1, 32, 1, 1] pieces
 * and more, a stick per channel: 162,816 bytes at 832 channels) too. */
static int64_t conv_kblock(lctx *c, int x, const convshape *s)
{
    const chip_config *cfg = c->p->opts.target;
    if (!cfg || s->g != 1 || s->chan || s->kc || s->kwf != 1 ||
        2 * s->cin * (int64_t)cfg->stick_bytes <= (int64_t)cfg->lx_usable_bytes)
        return 0;
    ir_index co[4] = {ir_idx_var(0), ir_idx_var(3), ir_idx_var(1), ir_idx_var(2)};
    if (s->nsp == 1)
        co[2] = ir_idx_var(2);
    chan_across q = {c, 0};
    ir_expr_walk(&c->p->A, read_at(c, x, co), note_chan_across, &q);
    const int64_t lanes = cfg->stick_bytes / 2, blk = (int64_t)cfg->lx_usable_bytes / (4 * cfg->stick_bytes) / lanes * lanes;
    return q.across ? (blk > lanes ? blk : lanes) : 0;
}

/* The conv as K blocks of blk input channels (conv_kblock): each block's
 * channels-last copy of x and its taps, added to the blocks' before. */
static int conv_kblocks(lctx *c, int x, int w, int bias, const convshape *s, int64_t blk, uint64_t *ops)
{
    as_buffer_view(c, w);
    ops_of(c, ops, w);
    int sum = -1;
    for (int64_t c0 = 0; c0 < s->cin; c0 += blk) {
        convshape b = *s;
        b.c0 = c0;
        b.kblocks = 1;
        b.cin = (blk < s->cin - c0 ? blk : s->cin - c0);
        sum = conv_taps(c, conv_padded(c, x, &b), w, -1, &b, c0 + blk >= s->cin ? bias : -1, sum, ops);
    }
    return sum;
}

static void l_convolution(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "input"), w = tensor(c, 1, "weight");
    const gr_arg *ba = arg(c, 2, "bias");
    int bias = ba && ba->kind == GR_ARG_VALUE ? ba->value : -1;
    const gr_ttype xt = *vtype(c, x), wt = *vtype(c, w);
    if (xt.dtype != wt.dtype || !ir_dtype_is_float(xt.dtype))
        fail(c, "input and weight must have one float dtype");
    convshape s = conv_shape(c, &xt, &wt);
    if ((s.kwf > 1 || s.kc) && conv_weight_walks_no_stick(c, w, &s)) {
        s.kwf = 1;
        s.kc = 0;
        s.chan = 0;
    }
    if (bias >= 0 && (vtype(c, bias)->rank != 1 || vtype(c, bias)->shape[0] != s.cout))
        fail(c, "argument bias must have %lld elements", (long long)s.cout);
    uint64_t *ops = ops_new(c);
    ops_add_cur(c, ops);
    if (s.bdg == 1 && s.g == 1 && ((s.nsp == 1 && conv_row_unfit(c, &s)) || conv_ncw_one(&s)) &&
        conv_ncw(c, out, x, w, bias, &s, ops)) {
        free(ops);
        return;
    }
    gr_ttype t = xt;
    t.shape[1] = s.cout;
    if (s.nsp == 2)
        t.shape[2] = s.oh;
    t.shape[t.rank - 1] = s.ow;
    const int64_t blk = s.bdg > 1 ? 0 : conv_kblock(c, x, &s);
    if (blk) {
        conv_result(c, out, conv_kblocks(c, x, w, bias, &s, blk, ops), &t);
        free(ops);
        return;
    }
    /* the stem's weight copy first: it needs nothing the input's copies make */
    int wq = s.chan ? conv_weight_rows(c, w, &s) : -1;
    int xp = s.chan ? conv_padded_rows(c, x, &s) : conv_padded(c, x, &s), wr = -1;
    if (conv_is_depthwise(&s)) {
        conv_result(c, out, conv_depthwise(c, xp, w, bias, &s, ops), &t);
        free(ops);
        return;
    }
    if (s.bdg > 1)
        wr = conv_blockdiag_weight(c, w, &s);
    else if ((s.kwf > 1 || s.kc) && !s.chan) /* an im2col K is (kh, kw, ci): kw = 1 too */
        wr = conv_weight_rows(c, w, &s);
    else
        as_buffer_view(c, w);
    ops_of(c, ops, w);
    int sum = -1;
    if (s.chan) {
        s.kc = conv_kc_chan(&s);
        xp = conv_im2col_chan(c, xp, &s, ops);
        wr = conv_im2col_chan_weight(c, wq, &s, ops);
    } else if (s.kc) {
        xp = conv_im2col(c, xp, &s, ops);
        if (s.kc != s.kh * s.kw * s.cin) /* rows padded */
            wr = conv_im2col_weight(c, wr, &s, ops);
    }
    conv_result(c, out, conv_taps(c, xp, w, wr, &s, bias, sum, ops), &t);
    free(ops);
}

/* ---- Views ---- */

static void view_as(lctx *c, int out, int x, const gr_ttype *t, const ir_index *coords)
{
    gr_ttype tt = *t;
    tt.dtype = vtype(c, x)->dtype;
    set_view(c, out, x, &tt, coords);
}

/* Map value x (old shape) to the new shape when every base coordinate
 * stays affine: dims group into runs of equal product; within a run the
 * base coordinate's coefficients must be proportional to the run's
 * contiguous strides.  0 and map in out, or -1. */
static int reshape_map(const ir_index *map, int nrows, const gr_ttype *old, const gr_ttype *nw, ir_index *out)
{
    int od[GR_MAX_RANK], nd[GR_MAX_RANK], no = 0, nn = 0;
    for (int d = 0; d < old->rank; d++)
        if (old->shape[d] != 1)
            od[no++] = d;
    for (int d = 0; d < nw->rank; d++)
        if (nw->shape[d] != 1)
            nd[nn++] = d;
    for (int r = 0; r < nrows; r++) {
        out[r] = ir_idx_const(map[r].offset);
        for (int v = 0; v < IR_MAX_VARS; v++)
            if (v >= old->rank && map[r].coef[v])
                return -1;
    }
    int i = 0, j = 0;
    while (i < no || j < nn) {
        if (i >= no || j >= nn)
            return -1;
        int i0 = i, j0 = j;
        int64_t po = old->shape[od[i++]], pn = nw->shape[nd[j++]];
        while (po != pn) {
            if (po < pn) {
                if (i >= no)
                    return -1;
                po *= old->shape[od[i++]];
            } else {
                if (j >= nn)
                    return -1;
                pn *= nw->shape[nd[j++]];
            }
        }
        for (int r = 0; r < nrows; r++) {
            int64_t alpha = map[r].coef[od[i - 1]], st = 1;
            for (int k = i - 1; k >= i0; k--) {
                if (map[r].coef[od[k]] != alpha * st)
                    return -1;
                st *= old->shape[od[k]];
            }
            st = 1;
            for (int k = j - 1; k >= j0; k--) {
                out[r].coef[nd[k]] = alpha * st;
                st *= nw->shape[nd[k]];
            }
        }
    }
    return 0;
}

/* out = x with shape t: a view when the data of x (or of its base, once
 * realized) can be read in the new shape through an affine map, else a
 * contiguous copy of x made for out (x itself stays a view, so a matmul
 * can still read it unmerged). */
static void reshape_to(lctx *c, int out, int x, const gr_ttype *t)
{
    gr_ttype nt = *t;
    nt.dtype = vtype(c, x)->dtype;
    if (gr_ttype_numel(&nt) != gr_ttype_numel(vtype(c, x)))
        fail(c, "cannot reshape %lld elements to %lld", (long long)gr_ttype_numel(vtype(c, x)),
             (long long)gr_ttype_numel(&nt));
    if (c->bases[val(c, x)->base].buf >= 0)
        flatten(c, x);
    ir_index m[GR_MAX_RANK], row = flat_row(c, x);
    const lval *X = val(c, x);
    const lbase *B = &c->bases[X->base];
    int src = x;
    if (!gr_ttype_numel(&nt)) { /* no element is ever read: any map will do */
        for (int r = 0; r < GR_MAX_RANK; r++)
            m[r] = ir_idx_const(0);
    } else if (reshape_map(X->map, B->type.rank, &X->type, &nt, m)) {
        int flat = 0;
        if (B->buf < 0 && gr_ttype_numel(&X->type) >= gr_ttype_numel(&B->type) &&
            !reshape_map(&row, 1, &X->type, &nt, m)) {
            realize_base(c, X->base);
            flatten(c, x);
            /* a view that is not its whole base laid out row-major (an
             * expand, a permutation) stays unflattened: copied below */
            flat = !reshape_map(val(c, x)->map, 1, &val(c, x)->type, &nt, m);
        }
        if (!flat) {
            uint64_t *ops = ops_new(c);
            ops_of(c, ops, x);
            ops_add_cur(c, ops);
            int b = new_base(c, &X->type, read_whole(c, x), c->d->values[out].name);
            ops_or(c, c->bases[b].ops, ops);
            free(ops);
            realize_base(c, b);
            set_whole(c, out, b);
            flatten(c, out);
            src = out;
        }
        X = val(c, src);
        if (reshape_map(X->map, 1, &X->type, &nt, m))
            fail(c, "internal: a reshape of a copied %d-D value has no row map", X->type.rank);
    }
    lval *O = val(c, out);
    O->base = val(c, src)->base;
    O->type = nt;
    memcpy(O->map, m, sizeof m);
    if (!O->ops)
        O->ops = ops_new(c);
    if (src == x)
        ops_or(c, O->ops, val(c, x)->ops);
    ops_add_cur(c, O->ops);
}

static void l_view(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    int64_t shape[GR_MAX_RANK];
    int rank = ints(c, 1, "size", shape);
    if (rank < 0)
        fail(c, "argument size must be a list of ints");
    int64_t known = 1, total = gr_ttype_numel(vtype(c, x));
    int infer = -1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] == -1) {
            if (infer >= 0)
                fail(c, "more than one -1 in the shape");
            infer = d;
        } else {
            known *= shape[d];
        }
    }
    if (infer >= 0)
        shape[infer] = known ? total / known : 0;
    gr_ttype t = ttype(vtype(c, x)->dtype, rank, shape);
    reshape_to(c, out, x, &t);
}

static void permute_by(lctx *c, int out, int x, const int64_t *perm, int n)
{
    gr_ttype xt = *vtype(c, x), t = xt;
    if (n != xt.rank)
        fail(c, "the permutation has %d dims, the tensor %d", n, xt.rank);
    ir_index coords[GR_MAX_RANK];
    int seen[GR_MAX_RANK] = {0};
    for (int k = 0; k < n; k++) {
        int d = normdim(c, perm[k], xt.rank);
        if (seen[d]++)
            fail(c, "dimension %d appears twice in the permutation", d);
        t.shape[k] = xt.shape[d];
        coords[d] = ir_idx_var(k);
    }
    view_as(c, out, x, &t, coords);
}

static void l_permute(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    int64_t perm[GR_MAX_RANK];
    int n = ints(c, 1, "dims", perm);
    permute_by(c, out, x, perm, n < 0 ? 0 : n);
}

static void l_transpose(lctx *c, int out, int is_t)
{
    int x = tensor(c, 0, "self");
    int r = vtype(c, x)->rank;
    int64_t perm[GR_MAX_RANK];
    for (int d = 0; d < r; d++)
        perm[d] = d;
    if (is_t && r > 2)
        fail(c, "t() expects a tensor of rank <= 2");
    int64_t d0 = is_t ? 0 : (int64_t)num(c, 1, "dim0", 0), d1 = is_t ? (r == 2) : (int64_t)num(c, 2, "dim1", 0);
    if (r > 0) {
        int i = normdim(c, d0, r), j = normdim(c, d1, r);
        perm[i] = j;
        perm[j] = i;
    }
    permute_by(c, out, x, perm, r);
}

static void l_expand(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    int64_t shape[GR_MAX_RANK];
    int rank = ints(c, 1, "size", shape);
    gr_ttype xt = *vtype(c, x);
    if (rank < xt.rank)
        fail(c, "cannot expand rank %d to rank %d", xt.rank, rank);
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int xd = d - (rank - xt.rank);
        if (shape[d] == -1) {
            if (xd < 0)
                fail(c, "-1 in a new leading dimension");
            shape[d] = xt.shape[xd];
        }
        if (xd < 0)
            continue;
        if (xt.shape[xd] != 1 && xt.shape[xd] != shape[d])
            fail(c, "cannot expand dimension %d of size %lld to %lld", xd, (long long)xt.shape[xd],
                 (long long)shape[d]);
        coords[xd] = xt.shape[xd] == 1 ? ir_idx_const(0) : ir_idx_var(d);
    }
    gr_ttype t = ttype(xt.dtype, rank, shape);
    view_as(c, out, x, &t, coords);
}

static void l_slice(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x), t = xt;
    int dim = normdim(c, (int64_t)num(c, 1, "dim", 0), xt.rank);
    int64_t size = xt.shape[dim];
    double s = num(c, 2, "start", 0), e = num(c, 3, "end", (double)INT64_MAX), st = num(c, 4, "step", 1);
    int64_t start = s >= (double)INT64_MAX ? size : (int64_t)s;
    int64_t end = e >= (double)INT64_MAX ? size : (int64_t)e, step = (int64_t)st;
    if (step <= 0)
        fail(c, "step must be positive");
    if (start < 0)
        start += size;
    if (end < 0)
        end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    t.shape[dim] = (end - start + step - 1) / step;
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < xt.rank; d++)
        coords[d] = ir_idx_var(d);
    coords[dim].coef[dim] = step;
    coords[dim].offset = start;
    view_as(c, out, x, &t, coords);
}

/* flip(self, dims): coordinate n - 1 - i along each flipped dim. */
static void l_flip(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x);
    int64_t dims[GR_MAX_RANK];
    int nd = ints(c, 1, "dims", dims);
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < xt.rank; d++)
        coords[d] = ir_idx_var(d);
    for (int i = 0; i < nd; i++) {
        int d = normdim(c, dims[i], xt.rank);
        coords[d].coef[d] = -1;
        coords[d].offset = xt.shape[d] - 1;
    }
    view_as(c, out, x, &xt, coords);
}

/* diagonal(self, offset, dim1, dim2): the other dims, then the diagonal's
 * position p: dim1 at p + max(-offset, 0), dim2 at p + max(offset, 0). */
static void l_diagonal(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x), t = xt;
    if (xt.rank < 2)
        fail(c, "diagonal needs two dimensions");
    int64_t off = (int64_t)num(c, 1, "offset", 0);
    int d1 = normdim(c, (int64_t)num(c, 2, "dim1", 0), xt.rank), d2 = normdim(c, (int64_t)num(c, 3, "dim2", 1), xt.rank);
    if (d1 == d2)
        fail(c, "dim1 and dim2 must differ");
    int64_t o1 = off < 0 ? -off : 0, o2 = off > 0 ? off : 0;
    int64_t len = xt.shape[d1] - o1 < xt.shape[d2] - o2 ? xt.shape[d1] - o1 : xt.shape[d2] - o2;
    ir_index coords[GR_MAX_RANK];
    t.rank = 0;
    for (int d = 0; d < xt.rank; d++)
        if (d != d1 && d != d2) {
            coords[d] = ir_idx_var(t.rank);
            t.shape[t.rank++] = xt.shape[d];
        }
    int p = t.rank;
    t.shape[t.rank++] = len < 0 ? 0 : len;
    coords[d1] = ir_idx_var(p);
    coords[d1].offset = o1;
    coords[d2] = ir_idx_var(p);
    coords[d2].offset = o2;
    view_as(c, out, x, &t, coords);
}

/* unfold(self, dimension, size, step): windows along dim as a new last
 * dim: coordinate w*step + e. */
static void l_unfold(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x), t = xt;
    int64_t size = (int64_t)num(c, 2, "size", 0), step = (int64_t)num(c, 3, "step", 1);
    ir_index coords[GR_MAX_RANK];
    if (xt.rank == 0) { /* a 0-d tensor is one window of its element (size 1) or none */
        if (size < 0 || size > 1 || step < 1)
            fail(c, "size %lld or step %lld out of range for a 0-d tensor", (long long)size, (long long)step);
        t.rank = 1;
        t.shape[0] = size;
        view_as(c, out, x, &t, coords);
        return;
    }
    if (xt.rank >= GR_MAX_RANK)
        fail(c, "unfold needs at most %d dimensions", GR_MAX_RANK - 1);
    int d = normdim(c, (int64_t)num(c, 1, "dimension", 0), xt.rank);
    if (size < 0 || size > xt.shape[d] || step < 1)
        fail(c, "size %lld or step %lld out of range", (long long)size, (long long)step);
    for (int i = 0; i < xt.rank; i++)
        coords[i] = ir_idx_var(i);
    coords[d].coef[d] = step;
    coords[d].coef[xt.rank] = 1;
    t.shape[d] = (xt.shape[d] - size) / step + 1;
    t.shape[t.rank++] = size;
    view_as(c, out, x, &t, coords);
}

static void l_select(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x), t = xt;
    if (!xt.rank)
        fail(c, "cannot select from a 0-d tensor");
    int dim = normdim(c, (int64_t)num(c, 1, "dim", 0), xt.rank);
    int64_t i = (int64_t)num(c, 2, "index", 0);
    if (i < -xt.shape[dim] || i >= xt.shape[dim])
        fail(c, "index %lld is out of range for size %lld", (long long)i, (long long)xt.shape[dim]);
    if (i < 0)
        i += xt.shape[dim];
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < xt.rank; d++)
        coords[d] = d < dim ? ir_idx_var(d) : d == dim ? ir_idx_const(i) : ir_idx_var(d - 1);
    memmove(&t.shape[dim], &t.shape[dim + 1], (size_t)(t.rank - dim - 1) * sizeof *t.shape);
    t.rank--;
    view_as(c, out, x, &t, coords);
}

static void l_unsqueeze(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x), t = xt;
    if (xt.rank >= GR_MAX_RANK)
        fail(c, "more than %d dimensions", GR_MAX_RANK);
    int dim = normdim(c, (int64_t)num(c, 1, "dim", 0), xt.rank + 1);
    ir_index coords[GR_MAX_RANK];
    for (int d = 0; d < xt.rank; d++)
        coords[d] = ir_idx_var(d < dim ? d : d + 1);
    memmove(&t.shape[dim + 1], &t.shape[dim], (size_t)(xt.rank - dim) * sizeof *t.shape);
    t.shape[dim] = 1;
    t.rank++;
    view_as(c, out, x, &t, coords);
}

static void l_squeeze(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "self");
    gr_ttype xt = *vtype(c, x), t = xt;
    int64_t dims[GR_MAX_RANK];
    int nd = ints(c, 1, "dim", dims), drop[GR_MAX_RANK] = {0};
    for (int d = 0; d < xt.rank; d++)
        drop[d] = nd < 0 && xt.shape[d] == 1;
    for (int i = 0; i < nd; i++) {
        int d = normdim(c, dims[i], xt.rank);
        drop[d] = xt.shape[d] == 1;
    }
    ir_index coords[GR_MAX_RANK];
    t.rank = 0;
    for (int d = 0; d < xt.rank; d++) {
        if (drop[d]) {
            coords[d] = ir_idx_const(0);
            continue;
        }
        coords[d] = ir_idx_var(t.rank);
        t.shape[t.rank++] = xt.shape[d];
    }
    view_as(c, out, x, &t, coords);
}

/* ---- Host ops (the host fallback) ---- */

static int same_type(const gr_ttype *a, const gr_ttype *b)
{
    return a->dtype == b->dtype && a->rank == b->rank &&
           !memcmp(a->shape, b->shape, (size_t)a->rank * sizeof *a->shape);
}


/* Value v is all of buffer b, in its order (a reshape of it too: the
 * runtime reads a tensor's elements in row-major order). */
static int is_whole_buffer(lctx *c, int v, int b)
{
    const lval *V = val(c, v);
    const gr_ttype *bt = &c->p->bufs[b].type;
    ir_index want = contiguous(&V->type);
    ir_index row = flat_row(c, v);
    for (int d = 0; d < V->type.rank; d++)
        if (V->type.shape[d] == 1)
            row.coef[d] = 0;
    return bt->dtype == V->type.dtype && gr_ttype_numel(bt) == gr_ttype_numel(&V->type) && ir_idx_equal(&row, &want);
}

/* The buffer a host op reads value v from: v whole, contiguous, under
 * `name`, the name of the source graph's value the op reads (the runtime
 * finds the op's tensors by their values' names in the program's graph;
 * decompose may have folded that value into another, a clone into the
 * value it copies, and the copy here brings the name back). */
static int host_input(lctx *c, int v, const char *name)
{
    lval *V = val(c, v);
    if (c->bases[V->base].buf < 0 && same_type(&V->type, &c->bases[V->base].type))
        realize_for_reuse(c, v);
    int b = c->bases[val(c, v)->base].buf;
    if (b < 0 || !is_whole_buffer(c, v, b) || strcmp(c->p->bufs[b].name, name))
        realize_copy(c, v, name);
    b = c->bases[val(c, v)->base].buf;
    for (int o = 0; o < c->p->nbufs && strcmp(c->p->bufs[b].name, name); o++)
        if (!strcmp(c->p->bufs[o].name, name) && c->p->bufs[o].kind == IR_BUF_COMPUTED) {
            /* the name is a computed buffer's that holds v otherwise laid
             * out (channels-last between convs): the copy takes the name */
            char *t = c->p->bufs[o].name;
            c->p->bufs[o].name = c->p->bufs[b].name;
            c->p->bufs[b].name = t;
            c->p->bnames[o] = c->p->bufs[o].name;
            c->p->bnames[b] = c->p->bufs[b].name;
        }
    if (strcmp(c->p->bufs[b].name, name))
        fail(c, "%%%s cannot go to the host under its own name (buffer %s)", name, c->p->bufs[b].name);
    return b;
}

/* Argument a of the host op's node in d and s, the same argument of its
 * source node (decompose copied one into the other, each value mapped to
 * its value in d; s NULL: no source graph, d's names). */
static void host_inputs(lctx *c, const gr_arg *a, const gr_arg *s, ir_node *n)
{
    if (a->kind == GR_ARG_VALUE) {
        const char *name = s ? c->p->graph->values[s->value].name : c->d->values[a->value].name;
        int b = host_input(c, a->value, name);
        for (int i = 0; i < n->nhin; i++)
            if (n->hin[i] == b)
                return;
        n->hin[n->nhin++] = b;
    }
    for (int i = 0; i < a->nitems; i++)
        host_inputs(c, &a->items[i], s && s->nitems == a->nitems ? &s->items[i] : NULL, n);
}

static int count_values(const gr_arg *a)
{
    int k = a->kind == GR_ARG_VALUE;
    for (int i = 0; i < a->nitems; i++)
        k += count_values(&a->items[i]);
    return k;
}

/* Node id runs on the host: its tensor arguments go to DRAM buffers of
 * their own, a HOST node writes its result into a new buffer. */
static void l_host(lctx *c, int id)
{
    const gr_node *dn = &c->d->nodes[id];
    const gr_value *dv = &c->d->values[dn->out];
    const int src = c->p->dfrom[id];
    if (id > 0 && c->p->dfrom[id - 1] == src)
        return; /* a later result of a host op: made with its first */
    int nres = 1;
    while (id + nres < c->d->nnodes && c->p->dfrom[id + nres] == src)
        nres++;
    ir_node tmp = {0};
    int cap = 1;
    for (int i = 0; i < dn->nargs; i++)
        cap += count_values(&dn->args[i]);
    tmp.hin = ir_xalloc((size_t)cap * sizeof *tmp.hin);
    const gr_node *sn = c->p->graph ? &c->p->graph->nodes[src] : NULL;
    if (sn && sn->nargs != dn->nargs) /* not a copy of its source line: d's names */
        sn = NULL;
    for (int i = 0; i < dn->nargs; i++)
        host_inputs(c, &dn->args[i], sn ? &sn->args[i] : NULL, &tmp);
    int buf = ir_buf_new(c->p, dv->name, &dv->type, IR_BUF_COMPUTED);
    int n = ir_node_new(c->p, IR_HOST, buf);
    ir_node *N = &c->p->nodes[n];
    N->hin = tmp.hin;
    N->nhin = tmp.nhin;
    N->ops = ir_xalloc(sizeof *N->ops);
    N->ops[0] = c->p->dfrom[id];
    N->nops = 1;
    N->hout = ir_xalloc((size_t)nres * sizeof *N->hout);
    for (int e = 1; e < nres; e++) { /* the other results, written by the same node */
        const gr_value *ev = &c->d->values[c->d->nodes[id + e].out];
        int b = ir_buf_new(c->p, ev->name, &ev->type, IR_BUF_COMPUTED);
        c->p->bufs[b].node = n;
        c->p->nodes[n].hout[c->p->nodes[n].nhout++] = b;
        if (strcmp(c->p->bufs[b].name, ev->name))
            fail(c, "%%%s cannot come back from the host under its own name", ev->name);
        set_whole(c, c->d->nodes[id + e].out, buffer_base(c, b, 0));
    }
    if (strcmp(c->p->bufs[buf].name, dv->name))
        fail(c, "%%%s cannot come back from the host under its own name", dv->name);
    set_whole(c, dn->out, buffer_base(c, buf, 0));
}

/* ---- The table ---- */

typedef void (*lower_fn)(lctx *c, int out, int param);

static const struct {
    const char *op; /* base name */
    lower_fn fn;
    int param;
} lowerings[] = {
    {"add", l_binary, IR_ADD},         {"sub", l_binary, IR_SUB},
    {"mul", l_binary, IR_MUL},         {"div", l_binary, IR_DIV},
    {"maximum", l_binary, IR_MAX},     {"minimum", l_binary, IR_MIN},
    {"clamp_min", l_binary, IR_MAX},   {"clamp_max", l_binary, IR_MIN},
    {"eq", l_binary, IR_EQ},           {"ne", l_binary, IR_NE},
    {"lt", l_binary, IR_LT},           {"le", l_binary, IR_LE},
    {"gt", l_binary, IR_GT},           {"ge", l_binary, IR_GE},
    {"logical_and", l_binary, IR_AND}, {"logical_or", l_binary, IR_OR},
    {"bitwise_and", l_binary, IR_AND}, {"bitwise_or", l_binary, IR_OR},
    {"pow", l_pow, 0},                 {"neg", l_unary, IR_NEG},
    {"exp", l_unary, IR_EXP},          {"log", l_unary, IR_LOG},
    {"sqrt", l_unary, IR_SQRT},        {"rsqrt", l_unary, IR_RSQRT},
    {"reciprocal", l_unary, IR_RECIP}, {"tanh", l_unary, IR_TANH},
    {"sigmoid", l_unary, IR_SIGMOID},  {"erf", l_unary, IR_ERF},
    {"relu", l_unary, IR_RELU},        {"sin", l_unary, IR_SIN},
    {"cos", l_unary, IR_COS},          {"abs", l_unary, IR_ABS},
    {"logical_not", l_unary, IR_NOT},  {"bitwise_not", l_unary, IR_NOT},
    {"where", l_where, 0},             {"_to_copy", l_to_copy, 0},
    {"full", l_full, 0},               {"scalar_tensor", l_full, 1},
    {"arange", l_arange, 0},           {"triu", l_tri, 1},
    {"tril", l_tri, 0},                {"cat", l_cat, 0},
    {"constant_pad_nd", l_constant_pad, 0},
    {"embedding", l_embedding, 0},     {"index_select", l_index_select, 0},
    {"sum", l_reduce, IR_RSUM},
    {"amax", l_reduce, IR_RMAX},       {"amin", l_reduce, IR_RMIN},
    {"mm", l_matmul, 0},               {"bmm", l_matmul, 0},
    {"matmul", l_matmul, 0},           {"mv", l_matmul, 0},
    {"convolution", l_convolution, 0},
    {"view", l_view, 0},
    {"_unsafe_view", l_view, 0},       {"reshape", l_view, 0},
    {"permute", l_permute, 0},         {"t", l_transpose, 1},
    {"transpose", l_transpose, 0},     {"expand", l_expand, 0},
    {"slice", l_slice, 0},             {"select", l_select, 0},
    {"unsqueeze", l_unsqueeze, 0},     {"squeeze", l_squeeze, 0},
    {"flip", l_flip, 0},               {"diagonal", l_diagonal, 0},
    {"unfold", l_unfold, 0},
};

/* ---- The pass ---- */

static void count_uses(lctx *c, const gr_arg *a, int node, int *last)
{
    if (a->kind == GR_ARG_VALUE && last[a->value] != node) {
        last[a->value] = node;
        c->consumers[a->value]++;
    }
    for (int i = 0; i < a->nitems; i++)
        count_uses(c, &a->items[i], node, last);
}

static void lower_node(lctx *c, int id)
{
    const gr_node *n = &c->d->nodes[id];
    c->cur = id;
    if (c->p->host[c->p->dfrom[id]] & IR_SRC_HOST) {
        l_host(c, id);
        return;
    }
    size_t i = 0;
    while (i < sizeof lowerings / sizeof lowerings[0] && !ir_name_eq(lowerings[i].op, n->base))
        i++;
    if (i == sizeof lowerings / sizeof lowerings[0]) {
        ir_refuse(c->p, c->p->dfrom[id], "the compiler does not lower %s", n->op);
        longjmp(c->fail, 1);
    }
    lowerings[i].fn(c, n->out, lowerings[i].param);
    const gr_value *v = &c->d->values[n->out];
    if (!same_type(&v->type, &val(c, n->out)->type)) {
        char dt[256], pt[256];
        gr_ttype_str(&v->type, dt, sizeof dt);
        gr_ttype_str(&val(c, n->out)->type, pt, sizeof pt);
        /* the graph's own mistake, not the compiler's: no host fallback */
        ir_error(c->p, c->p->src[c->p->dfrom[id]].line, "%s: %%%s is declared %s but the op produces %s", n->op,
                 v->name, dt, pt);
        longjmp(c->fail, 1);
    }
    if (c->consumers[n->out] > c->max_reads ||
        (c->bases[val(c, n->out)->base].buf < 0 && ir_expr_size(&c->p->A, c->bases[val(c, n->out)->base].body) > c->max_body))
        realize_for_reuse(c, n->out);
}

/* Graph output v (named o->name): a computed buffer holding exactly v (a
 * contiguous view of all of it), else a copy. */
static void lower_output(lctx *c, int v, ir_output *o)
{
    lval *V = val(c, v);
    lbase *B = &c->bases[V->base];
    if (B->buf < 0 && same_type(&V->type, &B->type)) {
        int identity = 1;
        for (int j = 0; j < V->type.rank; j++) {
            ir_index id = ir_idx_var(j);
            identity &= V->type.shape[j] == 1 || ir_idx_equal(&V->map[j], &id);
        }
        if (identity)
            realize_base(c, V->base);
    }
    if (c->bases[V->base].buf < 0)
        realize_copy(c, v, o->name);
    flatten(c, v);
    V = val(c, v);
    int buf = c->bases[V->base].buf;
    ir_index want = contiguous(&V->type);
    for (int d = 0; d < V->type.rank; d++)
        if (V->type.shape[d] == 1)
            V->map[0].coef[d] = 0;
    /* With a target, a reshape that regroups the last dimension is a copy
     * too: the device sticks a computed buffer on its last dimension, so
     * such an output needs its own layout (docs/compiler.md, Back half). */
    const gr_ttype *bt = &c->p->bufs[buf].type;
    int regroups = c->p->opts.target &&
                   ((V->type.rank == 0) != (bt->rank == 0) ||
                    (V->type.rank && V->type.shape[V->type.rank - 1] != bt->shape[bt->rank - 1]));
    /* A host op's result keeps its own name (the runtime writes it by
     * that name): an output that is a view of one under another name is
     * a copy. */
    int bn = c->p->bufs[buf].node;
    int host_alias = bn >= 0 && c->p->nodes[bn].kind == IR_HOST && strcmp(c->p->bufs[buf].name, o->name);
    if (c->p->bufs[buf].kind != IR_BUF_COMPUTED || !ir_idx_equal(&V->map[0], &want) ||
        gr_ttype_numel(&V->type) != gr_ttype_numel(bt) || regroups || host_alias) {
        realize_copy(c, v, o->name);
        buf = c->bases[val(c, v)->base].buf;
    }
    o->buf = buf;
    o->type = val(c, v)->type;
    c->p->bufs[buf].output = 1;
}

/* Mark the computed buffers that hold a graph value of their own name
 * whole, written by one node: the cuts of a stepwise check (ISA_TF_VALUE). */
static void mark_whole_values(lctx *c)
{
    ir_prog *p = c->p;
    int *writers = ir_xalloc((size_t)(p->nbufs + 1) * sizeof *writers);
    for (int n = 0; n < p->nnodes; n++)
        writers[p->nodes[n].out]++;
    for (int v = 0; v < c->d->nvalues; v++) {
        const gr_value *dv = &c->d->values[v];
        int base = val(c, v)->base;
        if (dv->kind != GR_VAL_NODE || dv->ntuple || base < 0 || !ir_dtype_is_float(dv->type.dtype))
            continue;
        int b = c->bases[base].buf;
        if (b >= 0 && writers[b] == 1 && p->bufs[b].kind == IR_BUF_COMPUTED && !strcmp(p->bufs[b].name, dv->name) &&
            is_whole_buffer(c, v, b))
            p->bufs[b].whole_value = 1;
    }
    free(writers);
}

/* What decompose left for lower, freed once lowered: nothing after lower
 * reads it, and the program lives on through both attempts' back half,
 * whose peak of heap is what the compile faults in (54 KB of BERT-base's
 * 910 KB). */
void ir_free_dgraph(ir_prog *p)
{
    gr_graph_free(p->dg);
    p->dg = NULL;
    free(p->dfrom);
    p->dfrom = NULL;
    free(p->dnan);
    p->dnan = NULL;
    for (int i = 0; i < p->ndconsts; i++)
        free(p->dconsts[i].data);
    free(p->dconsts);
    p->dconsts = NULL;
    p->ndconsts = 0;
}

int ir_lower(ir_prog *p)
{
    lctx *c = ir_xalloc(sizeof *c); /* on the heap: longjmp keeps it intact */
    c->p = p;
    c->d = p->dg;
    c->nwords = (p->nsrc + 63) / 64 + 1;
    c->max_reads = p->opts.max_reads > 0 ? p->opts.max_reads : 1;
    c->max_body = p->opts.max_body > 0 ? p->opts.max_body : 64;
    const int nblocks = c->d->nvalues / LVAL_BLOCK + 1; /* (nvalues + 1 values) */
    c->vals = ir_xmalloc((size_t)nblocks * sizeof *c->vals);
    for (int b = 0; b < nblocks; b++)
        c->vals[b] = ir_xalloc(LVAL_BLOCK * sizeof **c->vals);
    c->consumers = ir_xalloc((size_t)(c->d->nvalues + 1) * sizeof *c->consumers);
    int *last = ir_xalloc((size_t)(c->d->nvalues + 1) * sizeof *last);
    for (int v = 0; v < c->d->nvalues; v++) {
        val(c, v)->base = -1;
        last[v] = -1;
    }
    for (int n = 0; n < c->d->nnodes; n++)
        for (int i = 0; i < c->d->nodes[n].nargs; i++)
            count_uses(c, &c->d->nodes[n].args[i], n, last);
    for (int i = 0; i < c->d->noutputs; i++)
        c->consumers[c->d->outputs[i]]++;
    free(last);
    volatile int rc = 0;
    if (setjmp(c->fail)) {
        rc = -1;
        goto done;
    }
    for (int v = 0; v < c->d->nvalues; v++) {
        const gr_value *dv = &c->d->values[v];
        if (dv->kind == GR_VAL_NODE)
            continue;
        int b = ir_buf_new(p, dv->name, &dv->type, dv->kind == GR_VAL_INPUT ? IR_BUF_INPUT : IR_BUF_PARAM);
        p->bufs[b].nan_axis = dv->kind == GR_VAL_INPUT ? p->dnan[v] : IR_MASK_NONE;
        if (dv->param_key)
            p->bufs[b].param_key = ir_xstrdup(dv->param_key);
        p->bufs[b].ranged = dv->ranged;
        p->bufs[b].lo = dv->lo;
        p->bufs[b].hi = dv->hi;
        for (int i = 0; i < p->ndconsts; i++)
            if (p->dconsts[i].value == v) {
                p->bufs[b].cdata = p->dconsts[i].data;
                p->dconsts[i].data = NULL;
            }
        set_whole(c, v, buffer_base(c, b, 0));
    }
    for (int n = 0; n < c->d->nnodes; n++)
        lower_node(c, n);
    for (int i = 0; i < c->d->noutputs; i++)
        lower_output(c, c->d->outputs[i], &p->outputs[i]);
    mark_whole_values(c);
done:
    for (int b = 0; b < c->nbases; b++) {
        free(c->bases[b].ops);
        free(c->bases[b].name);
    }
    free(c->bases);
    for (int v = 0; v < c->d->nvalues; v++)
        free(val(c, v)->ops);
    for (int b = 0; b <= c->d->nvalues / LVAL_BLOCK; b++)
        free(c->vals[b]);
    free(c->vals);
    free(c->consumers);
    free(c->flat);
    free(c);
    ir_free_dgraph(p);
    return rc ? rc : ir_check_int_exact(p);
}
