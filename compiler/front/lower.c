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
#include "lower_int.h"

#include <assert.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void
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

/* ---- Source-op sets ---- */

uint64_t *ops_new(lctx *c)
{
    return ir_xalloc((size_t)c->nwords * sizeof(uint64_t));
}

void ops_or(lctx *c, uint64_t *dst, const uint64_t *src)
{
    for (int i = 0; i < c->nwords; i++)
        dst[i] |= src[i];
}

void ops_add_cur(lctx *c, uint64_t *dst)
{
    int s = c->p->dfrom[c->cur];
    dst[s / 64] |= 1ull << (s % 64);
}

/* The source ops reading value v brings in: its views, and its base's
 * expression while unrealized. */
void ops_of(lctx *c, uint64_t *dst, int v)
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

gr_ttype ttype(gr_dtype dt, int rank, const int64_t *shape)
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
ir_index contiguous(const gr_ttype *t)
{
    ir_index x = ir_idx_const(0);
    int64_t st = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        x.coef[d] = t->shape[d] == 1 ? 0 : st;
        st *= t->shape[d];
    }
    return x;
}

int new_base(lctx *c, const gr_ttype *t, int body, const char *name)
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
void set_whole(lctx *c, int v, int b)
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
int buffer_base(lctx *c, int buf, int flat)
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
int read_at(lctx *c, int v, const ir_index *coords)
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

int new_node(lctx *c, ir_node_kind kind, const gr_ttype *t, const char *name, const uint64_t *ops)
{
    int buf = ir_buf_new(c->p, name, t, IR_BUF_COMPUTED);
    int n = ir_node_new(c->p, kind, buf);
    ops_list(c, ops, &c->p->nodes[n].ops, &c->p->nodes[n].nops);
    return n;
}

static void realize_channels_last(lctx *c, int b);

/* Compute base b into a buffer: a POINTWISE node over its shape. */
void realize_base(lctx *c, int b)
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
void as_buffer_view(lctx *c, int v)
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

int is_graph_output(lctx *c, int v)
{
    for (int i = 0; i < c->d->noutputs; i++)
        if (c->d->outputs[i] == v)
            return 1;
    return 0;
}

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

const gr_arg *arg(lctx *c, int pos, const char *key)
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

int tensor(lctx *c, int pos, const char *key)
{
    const gr_arg *a = arg(c, pos, key);
    if (!a || a->kind != GR_ARG_VALUE)
        fail(c, "argument %s must be a tensor", key);
    assert(val(c, a->value)->base >= 0);
    return a->value;
}

double num(lctx *c, int pos, const char *key, double dflt)
{
    const gr_arg *a = arg(c, pos, key);
    if (!a || a->kind == GR_ARG_NONE)
        return dflt;
    if (!is_number(a))
        fail(c, "argument %s must be a number", key);
    return number(a);
}

int ints(lctx *c, int pos, const char *key, int64_t *out)
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

const gr_ttype *vtype(lctx *c, int v)
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

/* bitwise_and, _or, _not: of bools, the logical op; the device has no
 * bitwise op on integers (the host's). */
static void l_bitwise(lctx *c, int out, int opi)
{
    const gr_node *n = &c->d->nodes[c->cur];
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i].kind == GR_ARG_VALUE ? vtype(c, n->args[i].value)->dtype != GR_BOOL
                                            : n->args[i].kind != GR_ARG_BOOL)
            fail(c, "the device has bitwise ops of bools only");
    (ir_ops[opi].arity == 1 ? l_unary : l_binary)(c, out, opi);
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
        const unsigned attrs = ir_op_attrs(nd->base);
        if (attrs & IR_OP_RESHAPE) {
            if (!same_rows || (!deep && xr <= r))
                return v;
        } else if (!deep) {
            return v;
        } else if (attrs & IR_OP_EXPAND) {
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

/* The ops opsem.c's table does not lower (the elementwise ops are its
 * rows), and pow, whose scalar exponents make cheaper ops. */
static const struct {
    const char *op; /* base name */
    lower_fn fn;
    int param;
} lowerings[] = {
    {"bitwise_and", l_bitwise, IR_AND}, {"bitwise_or", l_bitwise, IR_OR},
    {"bitwise_not", l_bitwise, IR_NOT},
    {"pow", l_pow, 0},                 {"where", l_where, 0},
    {"_to_copy", l_to_copy, 0},
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

/* Base name's lowering into *fn, *param: its row of lowerings[], else the
 * IR operator of its opsem.c row (the elementwise ops); 0 when none. */
static int find_lowering(const char *base, lower_fn *fn, int *param)
{
    for (size_t i = 0; i < sizeof lowerings / sizeof lowerings[0]; i++)
        if (ir_name_eq(lowerings[i].op, base)) {
            *fn = lowerings[i].fn;
            *param = lowerings[i].param;
            return 1;
        }
    const ir_opsem *s = ir_opsem_aten(base);
    if (!s || s->ir < 0)
        return 0;
    *fn = s->arity == 1 ? l_unary : l_binary;
    *param = s->ir;
    return 1;
}

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
    lower_fn fn;
    int param;
    if (!find_lowering(n->base, &fn, &param)) {
        ir_refuse(c->p, c->p->dfrom[id], "the compiler does not lower %s", n->op);
        longjmp(c->fail, 1);
    }
    fn(c, n->out, param);
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

/* Whether buf holds an output before o: a value returned twice, or a no-op
 * view of another output, each needs a tensor of its own to be read back. */
static int earlier_output(const ir_prog *p, const ir_output *o, int buf)
{
    for (const ir_output *e = p->outputs; e < o; e++)
        if (e->buf == buf)
            return 1;
    return 0;
}

/* Graph output v (named o->name): a computed buffer holding exactly v (a
 * contiguous view of all of it) and no earlier output, else a copy. */
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
        gr_ttype_numel(&V->type) != gr_ttype_numel(bt) || regroups || host_alias || earlier_output(c->p, o, buf)) {
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
