/* decompose.c: the `decompose` pass.  Rewrites the source graph into a
 * private copy (p->dg) that holds only core ops, the set `lower` knows:
 * composite ATen ops (layer norm, softmax, GELU, linear, addmm, var,
 * mean, ...) become small graphs of core ops, identities (clone, detach,
 * dropout with p = 0, ...) disappear, and multi-output ops become their
 * separate results, so `getitem` disappears too.
 *
 * Each rule is one small function in the table `rules` at the end; a rule
 * reads the source node's arguments, emits core nodes with their types
 * and returns its results, whose types are then checked against the
 * types the source graph declares.  A node no rule matches is copied as
 * it is (lower decides whether it knows the op).  Every emitted node
 * remembers the source node it comes from (p->dfrom), for messages and
 * for the report. */
#include "decompose.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void
dc_fail(dctx *c, const char *fmt, ...)
{
    const gr_node *n = &c->g->nodes[c->cur];
    ir_refuse(c->p, c->cur, "%s: ", n->op);
    va_list ap;
    va_start(ap, fmt);
    isa_verrf_cat(c->p->err, c->p->errlen, fmt, ap);
    va_end(ap);
    longjmp(c->fail, 1);
}

/* ---- Building the core graph ---- */

static int new_value(dctx *c, const char *name, const gr_ttype *t)
{
    gr_graph *d = c->d;
    d->values = ir_xgrow(d->values, &c->capvalues, d->nvalues + 1, sizeof *d->values);
    gr_value *v = &d->values[d->nvalues];
    v->name = ir_xstrdup(name);
    v->kind = GR_VAL_NODE;
    v->type = *t;
    v->node = -1;
    v->line = c->g->nodes[c->cur].line;
    return d->nvalues++;
}

static int name_taken(const gr_graph *d, const char *name)
{
    for (int i = 0; i < d->nvalues; i++)
        if (ir_name_eq(d->values[i].name, name))
            return 1;
    return 0;
}

/* "aten.sum.dim_IntList" -> "sum" */
static char *op_base(const char *op)
{
    const char *s = strchr(op, '.');
    s = s ? s + 1 : op;
    const char *e = strchr(s, '.');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char *b = ir_xalloc(n + 1);
    memcpy(b, s, n);
    return b;
}

/* Append node `op(args) : t`, named after the source node's result and
 * the op ("ln.rsqrt"); takes ownership of the args.  Returns its value. */
int dc_emit(dctx *c, const char *op, gr_ttype t, int nargs, const gr_arg *args)
{
    gr_graph *d = c->d;
    char *base = op_base(op);
    const char *src = c->g->values[c->g->nodes[c->cur].out].name;
    char *name = ir_xdotted(src, base);
    for (int k = 1; name_taken(d, name); k++) {
        free(name);
        name = ir_xsprintf("%s.%s.%d", src, base, k);
    }
    int v = new_value(c, name, &t);
    free(name);
    d->nodes = ir_xgrow(d->nodes, &c->capnodes, d->nnodes + 1, sizeof *d->nodes);
    c->p->dfrom = realloc(c->p->dfrom, (size_t)c->capnodes * sizeof *c->p->dfrom);
    if (!c->p->dfrom)
        abort();
    gr_node *n = &d->nodes[d->nnodes];
    n->op = ir_xstrdup(op);
    n->base = base;
    n->nargs = nargs;
    n->args = ir_xalloc((size_t)(nargs ? nargs : 1) * sizeof *n->args);
    memcpy(n->args, args, (size_t)nargs * sizeof *args);
    n->out = v;
    n->line = c->g->nodes[c->cur].line;
    n->col = c->g->nodes[c->cur].col;
    d->values[v].node = d->nnodes;
    c->p->dfrom[d->nnodes] = c->cur;
    d->nnodes++;
    return v;
}

int dc_const(dctx *c, gr_ttype t, float *data)
{
    gr_graph *d = c->d;
    const char *src = c->g->values[c->g->nodes[c->cur].out].name;
    char *name = ir_xdotted(src, "const");
    for (int k = 1; name_taken(d, name); k++) {
        free(name);
        name = ir_xsprintf("%s.const.%d", src, k);
    }
    int v = new_value(c, name, &t);
    free(name);
    d->values[v].kind = GR_VAL_PARAM;
    d->params = realloc(d->params, (size_t)(d->nparams + 1) * sizeof *d->params);
    c->p->dconsts = realloc(c->p->dconsts, (size_t)(c->p->ndconsts + 1) * sizeof *c->p->dconsts);
    if (!d->params || !c->p->dconsts)
        abort();
    d->params[d->nparams++] = v;
    c->p->dconsts[c->p->ndconsts++] = (ir_dconst){v, data};
    return v;
}

gr_arg da_val(int v)
{
    gr_arg a = {.kind = GR_ARG_VALUE, .value = v};
    return a;
}

gr_arg da_int(int64_t i)
{
    gr_arg a = {.kind = GR_ARG_INT, .i = i};
    return a;
}

gr_arg da_num(double f)
{
    gr_arg a = {.kind = GR_ARG_FLOAT, .f = f};
    return a;
}

gr_arg da_bool(int b)
{
    gr_arg a = {.kind = GR_ARG_BOOL, .i = b != 0};
    return a;
}

gr_arg da_ints(int n, const int64_t *x)
{
    gr_arg a = {.kind = GR_ARG_LIST, .nitems = n};
    a.items = ir_xalloc((size_t)(n ? n : 1) * sizeof *a.items);
    for (int i = 0; i < n; i++)
        a.items[i] = da_int(x[i]);
    return a;
}

gr_arg da_vals(int n, const int *x)
{
    gr_arg a = {.kind = GR_ARG_LIST, .nitems = n};
    a.items = ir_xalloc((size_t)(n ? n : 1) * sizeof *a.items);
    for (int i = 0; i < n; i++)
        a.items[i] = da_val(x[i]);
    return a;
}

gr_arg da_kw(const char *key, gr_arg a)
{
    a.key = ir_xstrdup(key);
    return a;
}

gr_arg da_dtype(gr_dtype dt)
{
    gr_arg a = {.kind = GR_ARG_DTYPE, .i = dt};
    return a;
}

/* A copy of a source argument, its values mapped into the core graph. */
/* Fails if a value in a (or in its list) is a tuple: checked before
 * arg_copy allocates, so that the failure leaks nothing. */
static void check_no_tuple(dctx *c, const gr_arg *a)
{
    if (a->kind == GR_ARG_VALUE && c->vmap[a->value] < 0)
        dc_fail(c, "uses the tuple %%%s as a tensor", c->g->values[a->value].name);
    for (int i = 0; i < a->nitems; i++)
        check_no_tuple(c, &a->items[i]);
}

static gr_arg arg_copy(dctx *c, const gr_arg *s)
{
    gr_arg a = *s;
    a.key = s->key ? ir_xstrdup(s->key) : NULL;
    a.s = s->s ? ir_xstrdup(s->s) : NULL;
    if (s->kind == GR_ARG_VALUE)
        a.value = c->vmap[s->value];
    if (s->nitems) {
        a.items = ir_xalloc((size_t)s->nitems * sizeof *a.items);
        for (int i = 0; i < s->nitems; i++)
            a.items[i] = arg_copy(c, &s->items[i]);
    }
    return a;
}

/* ---- Reading the source node's arguments ---- */

gr_ttype dc_T(dctx *c, int v)
{
    return c->d->values[v].type;
}

/* Tensor argument (required): its value in the core graph. */
int dc_val(dctx *c, const gr_node *n, int pos, const char *key)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    if (!a || a->kind != GR_ARG_VALUE)
        dc_fail(c, "argument %s must be a tensor", key);
    int v = c->vmap[a->value];
    if (v < 0)
        dc_fail(c, "uses the tuple %%%s as a tensor", c->g->values[a->value].name);
    return v;
}

/* Optional tensor argument: -1 when absent or None. */
int dc_opt_val(dctx *c, const gr_node *n, int pos, const char *key)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    if (!a || a->kind == GR_ARG_NONE)
        return -1;
    return dc_val(c, n, pos, key);
}

int dc_is_number(const gr_arg *a)
{
    return a && (a->kind == GR_ARG_INT || a->kind == GR_ARG_FLOAT || a->kind == GR_ARG_BOOL);
}

double dc_num(dctx *c, const gr_node *n, int pos, const char *key, double dflt)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    if (!a || a->kind == GR_ARG_NONE)
        return dflt;
    if (!dc_is_number(a))
        dc_fail(c, "argument %s must be a number", key);
    return a->kind == GR_ARG_FLOAT ? a->f : (double)a->i;
}

/* A list of ints (or a single int) into out; -1 when absent or None. */
int dc_ints(dctx *c, const gr_node *n, int pos, const char *key, int64_t *out)
{
    int cnt = gr_arg_ints(gr_node_arg(n, pos, key), out);
    if (cnt == -2)
        dc_fail(c, "argument %s must be an int or a list of at most %d ints", key, GR_MAX_RANK);
    return cnt;
}

int dc_dtype_arg(dctx *c, const gr_node *n, int pos, const char *key)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    if (!a || a->kind == GR_ARG_NONE)
        return -1;
    if (a->kind != GR_ARG_DTYPE)
        dc_fail(c, "argument %s must be a dtype", key);
    return (int)a->i;
}

int dc_normdim(dctx *c, int64_t d, int rank)
{
    int r = rank ? rank : 1;
    if (d < -r || d >= r)
        dc_fail(c, "dimension %lld is out of range for rank %d", (long long)d, rank);
    return (int)(d < 0 ? d + r : d);
}

int64_t dc_numel(const gr_ttype *t)
{
    return gr_ttype_numel(t);
}

/* ---- Emitting core ops, with their result types ---- */

int dc_is_float(gr_dtype dt)
{
    return ir_dtype_is_float(dt);
}

int dc_bin(dctx *c, const char *op, int a, int b)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b), t;
    if (ir_broadcast(&ta, &tb, &t))
        dc_fail(c, "operand shapes do not broadcast");
    gr_dtype dt[2] = {ta.dtype, tb.dtype};
    int cls[2] = {ta.rank ? 0 : 1, tb.rank ? 0 : 1};
    t.dtype = ir_promote(2, dt, cls);
    if (strstr(op, ".div.") && !dc_is_float(t.dtype))
        t.dtype = GR_F32;
    return DC_EMIT(c, op, t, da_val(a), da_val(b));
}

int dc_bins(dctx *c, const char *op, int a, double s)
{
    gr_ttype t = dc_T(c, a);
    gr_dtype dt[2] = {t.dtype, GR_F64};
    int cls[2] = {t.rank ? 0 : 1, 2};
    t.dtype = ir_promote(2, dt, cls);
    return DC_EMIT(c, op, t, da_val(a), da_num(s));
}

int dc_un(dctx *c, const char *op, int a)
{
    gr_ttype t = dc_T(c, a);
    if (!dc_is_float(t.dtype))
        t.dtype = GR_F32;
    return DC_EMIT(c, op, t, da_val(a));
}

/* sum / amax over dims (nd >= 0), kept as extent 1 or dropped. */
int dc_red(dctx *c, const char *op, int a, int nd, const int64_t *dims, int keepdim)
{
    gr_ttype ta = dc_T(c, a), t = ta;
    int reduced[GR_MAX_RANK] = {0};
    int64_t nds[GR_MAX_RANK];
    for (int i = 0; i < nd; i++) {
        nds[i] = dc_normdim(c, dims[i], ta.rank);
        reduced[nds[i]] = 1;
    }
    t.rank = 0;
    for (int d = 0; d < ta.rank; d++) {
        if (!reduced[d] && nd)
            t.shape[t.rank++] = ta.shape[d];
        else if (keepdim)
            t.shape[t.rank++] = 1;
    }
    if (strstr(op, ".sum.") && !dc_is_float(t.dtype))
        t.dtype = GR_I64;
    return DC_EMIT(c, op, t, da_val(a), da_ints(nd, nds), da_bool(keepdim));
}

int dc_reshape(dctx *c, int a, int rank, const int64_t *shape)
{
    gr_ttype t = dc_T(c, a);
    t.rank = rank;
    memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    if (dc_numel(&t) != dc_numel(&c->d->values[a].type))
        dc_fail(c, "cannot reshape %lld elements to %lld", (long long)dc_numel(&c->d->values[a].type),
             (long long)dc_numel(&t));
    return DC_EMIT(c, "aten.reshape.default", t, da_val(a), da_ints(rank, shape));
}

int dc_transpose(dctx *c, int a, int64_t d0, int64_t d1)
{
    gr_ttype t = dc_T(c, a);
    int i = dc_normdim(c, d0, t.rank), j = dc_normdim(c, d1, t.rank);
    int64_t s = t.shape[i];
    t.shape[i] = t.shape[j];
    t.shape[j] = s;
    return DC_EMIT(c, "aten.transpose.int", t, da_val(a), da_int(d0), da_int(d1));
}

int dc_permute(dctx *c, int x, const int64_t *perm)
{
    gr_ttype t = dc_T(c, x), u = t;
    for (int i = 0; i < t.rank; i++)
        u.shape[i] = t.shape[perm[i]];
    return DC_EMIT(c, "aten.permute.default", u, da_val(x), da_ints(t.rank, perm));
}

int dc_flip(dctx *c, int x, int nd, const int64_t *dims)
{
    return DC_EMIT(c, "aten.flip.default", dc_T(c, x), da_val(x), da_ints(nd, dims));
}

int dc_pad(dctx *c, int x, int n, const int64_t *pads, double v)
{
    gr_ttype t = dc_T(c, x);
    for (int k = 0; k < n; k++)
        t.shape[t.rank - 1 - k] += pads[2 * k] + pads[2 * k + 1];
    return DC_EMIT(c, "aten.constant_pad_nd.default", t, da_val(x), da_ints(2 * n, pads), da_num(v));
}

int dc_unsqueeze(dctx *c, int a, int64_t dim)
{
    gr_ttype t = dc_T(c, a);
    if (t.rank >= GR_MAX_RANK)
        dc_fail(c, "more than %d dimensions", GR_MAX_RANK);
    int d = dc_normdim(c, dim, t.rank + 1);
    memmove(&t.shape[d + 1], &t.shape[d], (size_t)(t.rank - d) * sizeof *t.shape);
    t.shape[d] = 1;
    t.rank++;
    return DC_EMIT(c, "aten.unsqueeze.default", t, da_val(a), da_int(d));
}

int dc_expand(dctx *c, int a, int rank, const int64_t *shape)
{
    gr_ttype t = dc_T(c, a);
    t.rank = rank;
    memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    return DC_EMIT(c, "aten.expand.default", t, da_val(a), da_ints(rank, shape));
}

int dc_slice(dctx *c, int a, int dim, int64_t start, int64_t end, int64_t step)
{
    gr_ttype t = dc_T(c, a);
    t.shape[dim] = (end - start + step - 1) / step;
    return DC_EMIT(c, "aten.slice.Tensor", t, da_val(a), da_int(dim), da_int(start), da_int(end), da_int(step));
}

int dc_select(dctx *c, int a, int dim, int64_t i)
{
    gr_ttype t = dc_T(c, a);
    memmove(&t.shape[dim], &t.shape[dim + 1], (size_t)(t.rank - dim - 1) * sizeof *t.shape);
    t.rank--;
    return DC_EMIT(c, "aten.select.int", t, da_val(a), da_int(dim), da_int(i));
}

int dc_full(dctx *c, int rank, const int64_t *shape, double v, gr_dtype dt)
{
    gr_ttype t = {.dtype = dt, .rank = rank};
    memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    return DC_EMIT(c, "aten.full.default", t, da_ints(rank, shape), da_num(v), da_kw("dtype", da_dtype(dt)));
}

int dc_cast(dctx *c, int a, gr_dtype dt)
{
    gr_ttype t = dc_T(c, a);
    if (t.dtype == dt)
        return a;
    t.dtype = dt;
    return DC_EMIT(c, "aten._to_copy.default", t, da_val(a), da_kw("dtype", da_dtype(dt)));
}

/* Matrix product of a (.., M, K) and b (.., K, N), batch dims broadcast. */
int dc_matmul(dctx *c, const char *op, int a, int b)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b), t;
    if (ta.rank < 2 || tb.rank < 2 || ta.shape[ta.rank - 1] != tb.shape[tb.rank - 2])
        dc_fail(c, "matrix shapes do not agree");
    gr_ttype ba = ta, bb = tb;
    ba.rank -= 2;
    bb.rank -= 2;
    if (ir_broadcast(&ba, &bb, &t))
        dc_fail(c, "batch dimensions do not broadcast");
    t.shape[t.rank++] = ta.shape[ta.rank - 2];
    t.shape[t.rank++] = tb.shape[tb.rank - 1];
    t.dtype = ta.dtype;
    return DC_EMIT(c, op, t, da_val(a), da_val(b));
}

int dc_where(dctx *c, int cond, int a, int b)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b), tc = dc_T(c, cond), t, t2;
    if (ir_broadcast(&ta, &tb, &t) || ir_broadcast(&t, &tc, &t2))
        dc_fail(c, "operand shapes do not broadcast");
    gr_dtype dt[2] = {ta.dtype, tb.dtype};
    int cls[2] = {ta.rank ? 0 : 1, tb.rank ? 0 : 1};
    t2.dtype = ir_promote(2, dt, cls);
    return DC_EMIT(c, "aten.where.self", t2, da_val(cond), da_val(a), da_val(b));
}

/* where(cond, a, s) (scalar_first: where(cond, s, a)) with a scalar s */
int dc_where_s(dctx *c, int cond, int a, double s, int scalar_first)
{
    gr_ttype ta = dc_T(c, a), tc = dc_T(c, cond), t;
    if (ir_broadcast(&ta, &tc, &t))
        dc_fail(c, "operand shapes do not broadcast");
    t.dtype = ta.dtype;
    /* an integer tensor keeps its dtype only beside an integer scalar, a bool beside a bool */
    gr_arg sa = t.dtype == GR_BOOL                                       ? da_bool(s != 0)
                : !dc_is_float(t.dtype) && s == floor(s) && fabs(s) < 0x1p53 ? da_int((int64_t)s)
                                                                             : da_num(s);
    if (scalar_first)
        return DC_EMIT(c, "aten.where.ScalarSelf", t, da_val(cond), sa, da_val(a));
    return DC_EMIT(c, "aten.where.ScalarOther", t, da_val(cond), da_val(a), sa);
}

/* ---- Shared pieces of rules ---- */

/* DL16 has no infinity: the device's infinity is the stand-in
 * +-ISA_DL16_INF and beyond (docs/compiler.md, "Infinities"), as
 * runtime/compare.c reads it */
#define DL16_INF ((double)ISA_DL16_INF)

/* What infinity source value v may hold, as bits: INF_NEG when only -inf
 * (the stand-in -2^30) can reach it, INF_ANY when +inf may too.
 * Infinities come from an infinite scalar argument, a 0-d weight
 * (make_fx's capture of a torch.tensor(-inf), either sign) or a float
 * graph input added in on the way (add_in: the user's additive -inf
 * attention mask, its data's -inf uploaded as the stand-in,
 * runtime/graphdata.c, taken to carry no +inf; not an input used only as
 * a softmax mask, whose rows of -inf the runtime uploads as NaN:
 * maskrows.c), through any op; of a
 * product only its bias (baddbmm's -inf padding mask) carries one, its
 * sum of products is taken as finite.  A -inf stays INF_NEG only through
 * ops that move or add it unchanged (sign_keeping); through any other
 * (a negation, the subtrahend of a sub) it is INF_ANY.  Deep chains are
 * assumed INF_ANY.  The guard costs cycles, so other inputs (a softmax
 * straight over the user's data) and weights (a model's causal mask,
 * which does not mask a row whole) are taken as finite. */
enum { INF_NEG = 1, INF_ANY = 2 };

static int sign_keeping(const gr_node *n)
{
    static const char *const keep[] = {"add", "where", "masked_fill", "cat", "full", "fill", "zeros_like", "full_like"};
    const unsigned moves = IR_OP_RESHAPE | IR_OP_ALIAS | IR_OP_COPY | IR_OP_CAST | IR_OP_PERMUTE | IR_OP_SLICE |
                           IR_OP_SELECT | IR_OP_EXPAND;
    if (ir_op_attrs(n->base) & moves)
        return 1;
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        if (!strcmp(n->base, keep[i]))
            return !gr_node_arg(n, 99, "alpha");
    return 0;
}

/* *one_mask: the mask input taken as finite so far, -1 none yet */
static int may_be_inf(dctx *c, int v, int depth, int add_in, int *one_mask)
{
    const gr_graph *g = c->g;
    static const struct {
        const char *base, *bias;
        int pos;
    } sums[] = {{"mm", NULL, 0},         {"bmm", NULL, 0},         {"matmul", NULL, 0},
                {"addmm", "self", 0},    {"baddbmm", "self", 0},   {"linear", "bias", 2},
                {"convolution", "bias", 2}};
    const gr_value *gv = &g->values[v];
    if (!dc_is_float(gv->type.dtype) && !gv->ntuple)
        return 0;
    /* A mask's rows of -inf are NaN already (maskrows.c), but a row masked
     * whole only by two masks together is not */
    if (gv->kind == GR_VAL_INPUT && add_in && c->mask[v] && (*one_mask < 0 || *one_mask == v))
        return *one_mask = v, 0;
    if (gv->kind == GR_VAL_INPUT)
        return add_in ? INF_NEG : 0;
    if (gv->kind == GR_VAL_PARAM)
        return gv->type.rank == 0 ? INF_ANY : 0;
    if (depth > 32)
        return INF_ANY;
    const gr_node *n = &g->nodes[gv->node];
    for (size_t i = 0; i < sizeof sums / sizeof *sums; i++)
        if (!strcmp(n->base, sums[i].base)) {
            const gr_arg *b = sums[i].bias ? gr_node_arg(n, sums[i].pos, sums[i].bias) : NULL;
            int r = b && b->kind == GR_ARG_VALUE ? may_be_inf(c, b->value, depth + 1, 1, one_mask) : 0;
            /* a bias scaled (beta) may change its sign */
            return r && gr_node_arg(n, 3, "beta") ? INF_ANY : r;
        }
    int adds = !strcmp(n->base, "add") || !strcmp(n->base, "sub"), keeps = sign_keeping(n), r = 0;
    for (int i = 0; i < n->nargs; i++) {
        const gr_arg *a = &n->args[i];
        int ri = a->kind == GR_ARG_FLOAT && isinf(a->f) ? (a->f < 0 ? INF_NEG : INF_ANY)
                 : a->kind == GR_ARG_VALUE           ? may_be_inf(c, a->value, depth + 1, add_in || adds, one_mask)
                                                     : 0;
        /* sub's first operand keeps its sign, its second is negated */
        int kept = keeps || (!strcmp(n->base, "sub") && i == 0 && !gr_node_arg(n, 99, "alpha"));
        r |= ri && !kept ? INF_ANY : ri;
    }
    return r & INF_ANY ? INF_ANY : r;
}

/* The infinities a softmax over v must guard (may_be_inf's, from the top). */
static int inf_rows_of(dctx *c, int v, int add_in)
{
    int one_mask = -1;
    return may_be_inf(c, v, 0, add_in, &one_mask);
}

static int softmax(dctx *c, int x, int64_t dim, int logsoft, int inf_rows)
{
    int64_t d = dc_normdim(c, dim, dc_T(c, x).rank);
    int m = dc_red(c, "aten.amax.default", x, 1, &d, 1);
    /* Only -inf possible: the max floored at -2^29 (above the stand-in,
     * below any finite score) leaves other rows alone; a row masked whole
     * then exps to 0 and sums to 0, so 0/0 (log 0) makes it NaN, one op a
     * row where the where below takes three */
    if (inf_rows == INF_NEG)
        m = dc_bins(c, "aten.clamp_min.default", m, -0x1p29);
    int sh = dc_bin(c, "aten.sub.Tensor", x, m);
    int e = dc_un(c, "aten.exp.default", sh);
    int s = dc_red(c, "aten.sum.dim_IntList", e, 1, &d, 1);
    /* a row whose max is infinite (every element -inf: a row masked whole;
     * or a +inf) is NaN in PyTorch (inf - inf); the device's stand-in
     * +-2^30 would give a uniform or one-hot row.  inf_rows: inf_rows_of's */
    if (inf_rows == INF_ANY)
        s = dc_where_s(c, dc_cmps(c, "aten.ge.Scalar", dc_un(c, "aten.abs.default", m), DL16_INF), s, NAN, 1);
    if (logsoft)
        return dc_bin(c, "aten.sub.Tensor", sh, dc_un(c, "aten.log.default", s));
    return dc_bin(c, "aten.div.Tensor", e, s);
}

/* The dims a reduction argument names (all when nd < 0 or 0), normalised;
 * returns the count, and the number of elements reduced in *count. */
static int red_dims(dctx *c, int x, int nd, const int64_t *in, int64_t *dims, int64_t *count)
{
    gr_ttype t = dc_T(c, x);
    *count = 1;
    if (nd <= 0) {
        for (int d = 0; d < t.rank; d++)
            dims[d] = d;
        nd = t.rank;
    } else {
        for (int i = 0; i < nd; i++)
            dims[i] = dc_normdim(c, in[i], t.rank);
    }
    if (!t.rank) /* a 0-d tensor's dim 0 (or -1) is one element: reduce over nothing */
        return 0;
    for (int i = 0; i < nd; i++)
        *count *= t.shape[dims[i]];
    return nd;
}

/* mean over dims, kept as extent 1 or not */
static int mean(dctx *c, int x, int nd, const int64_t *dims, int keepdim, int64_t count)
{
    int s = dc_red(c, "aten.sum.dim_IntList", x, nd, dims, keepdim);
    return dc_bins(c, "aten.div.Tensor", s, (double)count);
}

/* The sum over dims of xc * xc / div, scaled before the sum: the sum of
 * squares itself leaves DL16's range (about 8.6e9) for rows of values
 * around 1e4.  PyTorch divides by max(0, div): with no element or a
 * correction of N or more that is a division by 0, NaN or inf (scaling
 * each square by 1 / 0 would give 0 for a zero square, and 0 over no element). */
static int sum_sq(dctx *c, int xc, int nd, const int64_t *dims, int keepdim, double div)
{
    int sq = dc_bin(c, "aten.mul.Tensor", xc, xc);
    if (div <= 0)
        return dc_bins(c, "aten.div.Tensor", dc_red(c, "aten.sum.dim_IntList", sq, nd, dims, keepdim), 0.0);
    sq = dc_bins(c, "aten.mul.Tensor", sq, 1.0 / div);
    return dc_red(c, "aten.sum.dim_IntList", sq, nd, dims, keepdim);
}

/* var over dims with a correction; also its mean (kept dims) in *meanv */
static int variance(dctx *c, int x, int nd, const int64_t *dims, int64_t count, double corr, int keepdim,
                    int *meanv)
{
    int m = mean(c, x, nd, dims, 1, count);
    int xc = dc_bin(c, "aten.sub.Tensor", x, m);
    if (meanv)
        *meanv = m;
    return sum_sq(c, xc, nd, dims, keepdim, (double)count - corr);
}

static void var_args(dctx *c, const gr_node *n, int x, int64_t *dims, int *nd, int64_t *count, double *corr,
                     int *keepdim)
{
    int64_t in[GR_MAX_RANK];
    const gr_arg *a1 = gr_node_arg(n, 1, "dim");
    int k = -1;
    *corr = 1;
    if (a1 && a1->kind == GR_ARG_BOOL) { /* var.default(self, unbiased) */
        *corr = a1->i ? 1 : 0;
    } else {
        k = dc_ints(c, n, 1, "dim", in);
        const gr_arg *u = gr_node_arg(n, 2, "unbiased");
        if (u && u->kind == GR_ARG_BOOL)
            *corr = u->i ? 1 : 0;
        *corr = dc_num(c, n, 99, "correction", *corr);
    }
    const gr_arg *kd = gr_node_arg(n, 3, "keepdim");
    *keepdim = kd && kd->kind == GR_ARG_BOOL ? (int)kd->i : 0;
    *nd = red_dims(c, x, k, in, dims, count);
}

static void layer_norm(dctx *c, const gr_node *n, int res[3])
{
    int x = dc_val(c, n, 0, "input");
    int64_t ns[GR_MAX_RANK];
    int nn = dc_ints(c, n, 1, "normalized_shape", ns);
    int w = dc_opt_val(c, n, 2, "weight"), b = dc_opt_val(c, n, 3, "bias");
    double eps = dc_num(c, n, 4, "eps", 1e-5);
    gr_ttype t = dc_T(c, x);
    if (nn < 1 || nn > t.rank)
        dc_fail(c, "normalized_shape must name 1 to %d trailing dimensions", t.rank);
    int64_t dims[GR_MAX_RANK], count = 1;
    for (int i = 0; i < nn; i++) {
        dims[i] = t.rank - nn + i;
        if (t.shape[dims[i]] != ns[i])
            dc_fail(c, "normalized_shape does not match the input's trailing dimensions");
        count *= ns[i];
    }
    /* over an empty normalized shape: mean 0 (the sum), rstd NaN, as in PyTorch */
    int m = count ? mean(c, x, nn, dims, 1, count) : dc_red(c, "aten.sum.dim_IntList", x, nn, dims, 1);
    int xc = dc_bin(c, "aten.sub.Tensor", x, m);
    int var = sum_sq(c, xc, nn, dims, 1, (double)count);
    int rstd = dc_un(c, "aten.rsqrt.default", dc_bins(c, "aten.add.Tensor", var, eps));
    int y = dc_bin(c, "aten.mul.Tensor", xc, rstd);
    if (w >= 0)
        y = dc_bin(c, "aten.mul.Tensor", y, w);
    if (b >= 0)
        y = dc_bin(c, "aten.add.Tensor", y, b);
    res[0] = y;
    res[1] = m;
    res[2] = rstd;
}

/* _weight_norm_interface(v, g, dim) -> (w, norm): norm = sqrt(sum(v^2)) over every dim but
 * dim (kept; dim -1: all of v, 0-d), w = v * (g / norm). */
static int r_weight_norm(dctx *c, const gr_node *n, int *out)
{
    int v = dc_val(c, n, 0, "v"), g = dc_val(c, n, 1, "g");
    gr_ttype t = dc_T(c, v);
    int64_t d = (int64_t)dc_num(c, n, 2, "dim", 0), dims[GR_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != d)
            dims[nd++] = i;
    int sq = dc_bin(c, "aten.mul.Tensor", v, v);
    int nrm = dc_un(c, "aten.sqrt.default", nd ? dc_red(c, "aten.sum.dim_IntList", sq, nd, dims, d != -1) : sq);
    out[0] = dc_bin(c, "aten.mul.Tensor", v, dc_bin(c, "aten.div.Tensor", g, nrm));
    out[1] = nrm;
    return 2;
}

/* The fill value of a factory op as a double, and its default dtype. */
static double fill_value(dctx *c, const gr_node *n, int pos, gr_dtype *dt)
{
    const gr_arg *a = gr_node_arg(n, pos, "fill_value");
    if (!dc_is_number(a))
        dc_fail(c, "argument fill_value must be a number");
    *dt = a->kind == GR_ARG_FLOAT ? GR_F32 : a->kind == GR_ARG_BOOL ? GR_BOOL : GR_I64;
    return a->kind == GR_ARG_FLOAT ? a->f : (double)a->i;
}

/* ---- Rules: each returns its number of results (0: keep the node as a
 * core op) with the results in out[] ---- */

static int r_identity(dctx *c, const gr_node *n, int *out)
{
    out[0] = dc_val(c, n, 0, "self");
    return 1;
}

static int r_to_copy(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int dt = dc_dtype_arg(c, n, 99, "dtype");
    if (dt >= 0 && dt != (int)dc_T(c, x).dtype)
        return 0;
    out[0] = x;
    return 1;
}

/* to(x, [device,] dtype, ...): its dtype argument, wherever it is */
static int r_to_dtype(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), dt = -1;
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i].kind == GR_ARG_DTYPE)
            dt = (int)n->args[i].i;
    out[0] = dt < 0 ? x : dc_cast(c, x, (gr_dtype)dt);
    return 1;
}

static int r_type_as(dctx *c, const gr_node *n, int *out)
{
    out[0] = dc_cast(c, dc_val(c, n, 0, "self"), dc_T(c, dc_val(c, n, 1, "other")).dtype);
    return 1;
}

static void no_dropout(dctx *c, const gr_node *n)
{
    double pr = dc_num(c, n, 1, "p", 0);
    const gr_arg *tr = gr_node_arg(n, 2, "train");
    int train = tr && tr->kind == GR_ARG_BOOL ? (int)tr->i : 1;
    if (pr > 0 && train)
        dc_fail(c, "the compiler does not lower dropout with p > 0 in training mode");
}

static int r_dropout(dctx *c, const gr_node *n, int *out)
{
    no_dropout(c, n);
    out[0] = dc_val(c, n, 0, "input");
    return 1;
}

static int r_native_dropout(dctx *c, const gr_node *n, int *out)
{
    no_dropout(c, n);
    out[0] = dc_val(c, n, 0, "input");
    gr_ttype t = dc_T(c, out[0]);
    out[1] = dc_full(c, t.rank, t.shape, 1, GR_BOOL);
    return 2;
}

static int r_native_layer_norm(dctx *c, const gr_node *n, int *out)
{
    layer_norm(c, n, out);
    return 3;
}

static int r_layer_norm(dctx *c, const gr_node *n, int *out)
{
    int res[3];
    layer_norm(c, n, res);
    out[0] = res[0];
    return 1;
}

static int r_softmax(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int64_t dim = (int64_t)dc_num(c, n, 1, "dim", -1);
    if (n->base[0] == '_') { /* _softmax(x, dim, half_to_float) */
        const gr_arg *h = gr_node_arg(n, 2, "half_to_float");
        if (h && h->kind == GR_ARG_BOOL && h->i)
            x = dc_cast(c, x, GR_F32);
    } else { /* softmax(x, dim, dtype) */
        int dt = dc_dtype_arg(c, n, 2, "dtype");
        if (dt >= 0)
            x = dc_cast(c, x, (gr_dtype)dt);
    }
    int inf_rows = inf_rows_of(c, gr_node_arg(n, 0, "self")->value, 0);
    out[0] = softmax(c, x, dim, strstr(n->base, "log_") != NULL, inf_rows);
    return 1;
}

static int r_gelu(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    const gr_arg *ap = gr_node_arg(n, 1, "approximate");
    int tanh_form = ap && ap->kind == GR_ARG_STR && !strcmp(ap->s, "tanh");
    if (ap && !(ap->kind == GR_ARG_STR && (!strcmp(ap->s, "tanh") || !strcmp(ap->s, "none"))))
        dc_fail(c, "approximate must be \"none\" or \"tanh\"");
    int half = dc_bins(c, "aten.mul.Tensor", x, 0.5);
    int inner;
    if (tanh_form) { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        /* the cube of x clamped to +-64: 0.044715 x^3 leaves DL16's range (NaN) from
         * |x| ~ 5,800, and from |x| = 64 on tanh's argument passes 9,000, where tanh is
         * +-1 in fp32 either way (NaN stays NaN through the clamps) */
        int xc = dc_bins(c, "aten.clamp_max.default", dc_bins(c, "aten.clamp_min.default", x, -64), 64);
        int x2c = dc_bins(c, "aten.mul.Tensor", dc_bin(c, "aten.mul.Tensor", xc, xc), 0.044715);
        int s = dc_bin(c, "aten.add.Tensor", x, dc_bin(c, "aten.mul.Tensor", x2c, xc));
        inner = dc_un(c, "aten.tanh.default", dc_bins(c, "aten.mul.Tensor", s, 0.7978845608028654));
    } else { /* 0.5 x (1 + erf(x / sqrt(2))) */
        inner = dc_un(c, "aten.erf.default", dc_bins(c, "aten.mul.Tensor", x, 0.7071067811865476));
    }
    out[0] = dc_bin(c, "aten.mul.Tensor", half, dc_bins(c, "aten.add.Tensor", inner, 1.0));
    return 1;
}

static int r_silu(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    out[0] = dc_bin(c, "aten.mul.Tensor", x, dc_un(c, "aten.sigmoid.default", x));
    return 1;
}

static int r_square(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    out[0] = dc_bin(c, "aten.mul.Tensor", x, x);
    return 1;
}

/* bias * beta + product * alpha */
int dc_add_scaled(dctx *c, const gr_node *n, int bias, int prod)
{
    double beta = dc_num(c, n, 99, "beta", 1), alpha = dc_num(c, n, 99, "alpha", 1);
    if (alpha != 1)
        prod = dc_bins(c, "aten.mul.Tensor", prod, alpha);
    if (beta == 0)
        return prod;
    if (beta != 1)
        bias = dc_bins(c, "aten.mul.Tensor", bias, beta);
    return dc_bin(c, "aten.add.Tensor", prod, bias);
}

static int r_addmm(dctx *c, const gr_node *n, int *out)
{
    int bias = dc_val(c, n, 0, "self");
    int p = dc_matmul(c, "aten.mm.default", dc_val(c, n, 1, "mat1"), dc_val(c, n, 2, "mat2"));
    out[0] = dc_add_scaled(c, n, bias, p);
    return 1;
}

static int r_baddbmm(dctx *c, const gr_node *n, int *out)
{
    int bias = dc_val(c, n, 0, "self");
    int p = dc_matmul(c, "aten.bmm.default", dc_val(c, n, 1, "batch1"), dc_val(c, n, 2, "batch2"));
    out[0] = dc_add_scaled(c, n, bias, p);
    return 1;
}

static int r_linear(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "input"), w = dc_val(c, n, 1, "weight"), b = dc_opt_val(c, n, 2, "bias");
    gr_ttype tx = dc_T(c, x), tw = dc_T(c, w);
    if (tw.rank != 2 || tx.rank < 1)
        dc_fail(c, "weight must be 2-D");
    gr_ttype twt = tw;
    twt.shape[0] = tw.shape[1];
    twt.shape[1] = tw.shape[0];
    int wt = DC_EMIT(c, "aten.t.default", twt, da_val(w));
    int64_t k = tx.shape[tx.rank - 1], rows = dc_numel(&tx) / (k ? k : 1);
    int x2 = tx.rank == 2 ? x : dc_reshape(c, x, 2, (int64_t[]){rows, k});
    int y = dc_matmul(c, "aten.mm.default", x2, wt);
    if (b >= 0)
        y = dc_bin(c, "aten.add.Tensor", y, b);
    if (tx.rank != 2) {
        gr_ttype ty = tx;
        ty.shape[ty.rank - 1] = tw.shape[0];
        y = dc_reshape(c, y, ty.rank, ty.shape);
    }
    out[0] = y;
    return 1;
}

/* add / sub with alpha != 1: the other operand scaled first */
static int r_add_alpha(dctx *c, const gr_node *n, int *out)
{
    double alpha = dc_num(c, n, 99, "alpha", 1);
    if (alpha == 1)
        return 0;
    int x = dc_val(c, n, 0, "self");
    const gr_arg *o = gr_node_arg(n, 1, "other");
    char op[64];
    snprintf(op, sizeof op, "aten.%s.Tensor", n->base);
    if (dc_is_number(o))
        out[0] = dc_bins(c, op, x, alpha * (o->kind == GR_ARG_FLOAT ? o->f : (double)o->i));
    else
        out[0] = dc_bin(c, op, x, dc_bins(c, "aten.mul.Tensor", dc_val(c, n, 1, "other"), alpha));
    return 1;
}

static int r_rsub(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    double alpha = dc_num(c, n, 2, "alpha", 1);
    if (alpha != 1)
        x = dc_bins(c, "aten.mul.Tensor", x, alpha);
    const gr_arg *o = gr_node_arg(n, 1, "other");
    gr_ttype t = dc_T(c, x);
    if (dc_is_number(o) && o->kind == GR_ARG_INT && !dc_is_float(t.dtype)) /* an integer stays one (PyTorch) */
        out[0] = DC_EMIT(c, "aten.add.Tensor", t, da_val(DC_EMIT(c, "aten.mul.Tensor", t, da_val(x), da_int(-1))),
                         da_int(o->i));
    else if (dc_is_number(o))
        out[0] = dc_bins(c, "aten.add.Tensor", dc_un(c, "aten.neg.default", x), o->kind == GR_ARG_FLOAT ? o->f : (double)o->i);
    else
        out[0] = dc_bin(c, "aten.sub.Tensor", dc_val(c, n, 1, "other"), x);
    return 1;
}

static int r_clamp(dctx *c, const gr_node *n, int *out)
{
    int y = dc_val(c, n, 0, "self");
    const char *which[2] = {"min", "max"};
    const gr_arg *lo = gr_node_arg(n, 1, "min"), *hi = gr_node_arg(n, 2, "max");
    /* torch 1.13 ignores a NaN number bound beside None, and gives NaN beside another bound */
    int both = lo && lo->kind != GR_ARG_NONE && hi && hi->kind != GR_ARG_NONE;
    for (int i = 0; i < 2; i++) {
        const gr_arg *a = gr_node_arg(n, 1 + i, which[i]);
        if (!a || a->kind == GR_ARG_NONE)
            continue;
        char op[64];
        snprintf(op, sizeof op, "aten.clamp_%s.%s", which[i], a->kind == GR_ARG_VALUE ? "Tensor" : "default");
        if (a->kind == GR_ARG_VALUE)
            y = dc_bin(c, op, y, dc_val(c, n, 1 + i, which[i]));
        else if (a->kind == GR_ARG_INT && !dc_is_float(dc_T(c, y).dtype)) /* an integer stays one (PyTorch) */
            y = DC_EMIT(c, op, dc_T(c, y), da_val(y), da_int(a->i));
        else if (both || dc_num(c, n, 1 + i, which[i], 0) == dc_num(c, n, 1 + i, which[i], 0))
            y = dc_bins(c, op, y, dc_num(c, n, 1 + i, which[i], 0));
    }
    out[0] = y;
    return 1;
}

static int r_masked_fill(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), mask = dc_val(c, n, 1, "mask");
    const gr_arg *v = gr_node_arg(n, 2, "value");
    gr_dtype dt = dc_T(c, x).dtype;
    int y;
    if (v && v->kind == GR_ARG_VALUE)
        y = dc_where(c, mask, dc_cast(c, dc_val(c, n, 2, "value"), dt), x);
    else
        y = dc_where_s(c, mask, x, dc_num(c, n, 2, "value", 0), 1);
    out[0] = dc_cast(c, y, dt);
    return 1;
}

/* The arguments of a reduction op (self, dim, keepdim, dtype): self cast
 * to dtype if given, in *x; its reduced dims, normalised, in dims (the
 * count returned), the elements reduced in *count, keepdim in *keep. */
static int red_args(dctx *c, const gr_node *n, int *x, int64_t *dims, int64_t *count, int *keep)
{
    *x = dc_val(c, n, 0, "self");
    int dt = dc_dtype_arg(c, n, 99, "dtype");
    if (dt >= 0)
        *x = dc_cast(c, *x, (gr_dtype)dt);
    int64_t in[GR_MAX_RANK];
    const gr_arg *a1 = gr_node_arg(n, 1, "dim");
    int k = a1 && a1->kind != GR_ARG_DTYPE ? dc_ints(c, n, 1, "dim", in) : -1;
    const gr_arg *kd = gr_node_arg(n, 2, "keepdim");
    *keep = kd && kd->kind == GR_ARG_BOOL && kd->i;
    return red_dims(c, *x, k, in, dims, count);
}

static int r_mean(dctx *c, const gr_node *n, int *out)
{
    int x, keep;
    int64_t dims[GR_MAX_RANK], count;
    int nd = red_args(c, n, &x, dims, &count, &keep);
    out[0] = mean(c, x, nd, dims, keep, count);
    return 1;
}

static int r_var(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), nd, keepdim;
    int64_t dims[GR_MAX_RANK], count;
    double corr;
    var_args(c, n, x, dims, &nd, &count, &corr, &keepdim);
    int m;
    out[0] = variance(c, x, nd, dims, count, corr, keepdim, &m);
    if (!strcmp(n->base, "std") || !strcmp(n->base, "std_mean"))
        out[0] = dc_un(c, "aten.sqrt.default", out[0]);
    if (strcmp(n->base, "var_mean") && strcmp(n->base, "std_mean"))
        return 1;
    out[1] = keepdim ? m : mean(c, x, nd, dims, 0, count);
    return 2;
}

static int r_split(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int dim = dc_normdim(c, (int64_t)dc_num(c, n, 2, "dim", 0), t.rank);
    int64_t size = t.shape[dim], sizes[256];
    int k = 0;
    if (!strcmp(n->base, "split_with_sizes")) {
        const gr_arg *a = gr_node_arg(n, 1, "split_sizes");
        if (!a || a->kind != GR_ARG_LIST || a->nitems > 256)
            dc_fail(c, "argument split_sizes must be a list of ints");
        for (; k < a->nitems; k++)
            sizes[k] = a->items[k].i;
    } else {
        int64_t each = (int64_t)dc_num(c, n, 1, "split_size", 0);
        if (!strcmp(n->base, "chunk")) /* chunks -> size of each */
            each = each > 0 ? (size + each - 1) / each : 0;
        if (each <= 0)
            dc_fail(c, "the split size must be positive");
        for (int64_t at = 0; at < size || (size == 0 && k == 0); at += each) {
            if (k == 256)
                dc_fail(c, "more than 256 pieces");
            sizes[k++] = each < size - at ? each : size - at;
        }
    }
    int64_t at = 0;
    for (int i = 0; i < k; i++) {
        out[i] = dc_slice(c, x, dim, at, at + sizes[i], 1);
        at += sizes[i];
    }
    if (at != size)
        dc_fail(c, "split sizes add up to %lld, not %lld", (long long)at, (long long)size);
    return k;
}

static int r_unbind(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int dim = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
    if (t.shape[dim] > 256)
        dc_fail(c, "more than 256 pieces");
    for (int64_t i = 0; i < t.shape[dim]; i++)
        out[i] = dc_select(c, x, dim, i);
    return (int)t.shape[dim];
}

static int r_stack(dctx *c, const gr_node *n, int *out)
{
    const gr_arg *a = gr_node_arg(n, 0, "tensors");
    if (!a || a->kind != GR_ARG_LIST || !a->nitems || a->nitems > 256)
        dc_fail(c, "argument tensors must be a list of tensors");
    int v[256];
    int64_t dim = (int64_t)dc_num(c, n, 1, "dim", 0);
    for (int i = 0; i < a->nitems; i++) {
        if (a->items[i].kind != GR_ARG_VALUE || c->vmap[a->items[i].value] < 0)
            dc_fail(c, "argument tensors must be a list of tensors");
        v[i] = dc_unsqueeze(c, c->vmap[a->items[i].value], dim);
    }
    gr_ttype t = dc_T(c, v[0]);
    int d = dc_normdim(c, dim, t.rank);
    t.shape[d] = a->nitems;
    out[0] = DC_EMIT(c, "aten.cat.default", t, da_vals(a->nitems, v), da_int(d));
    return 1;
}

/* fill(x, value): full(x's shape, value) in x's dtype, or a 0-d tensor value expanded */
static int r_fill(dctx *c, const gr_node *n, int *out)
{
    gr_ttype t = dc_T(c, dc_val(c, n, 0, "self"));
    const gr_arg *v = gr_node_arg(n, 1, "value");
    if (v && v->kind == GR_ARG_VALUE) { /* fill.Tensor: the 0-d value expanded */
        int e = dc_cast(c, dc_val(c, n, 1, "value"), t.dtype);
        if (dc_numel(&c->d->values[e].type) != 1)
            dc_fail(c, "the fill value must have one element");
        out[0] = dc_expand(c, dc_reshape(c, e, 0, t.shape), t.rank, t.shape);
        return 1;
    }
    if (!dc_is_number(v))
        dc_fail(c, "argument value must be a number or a tensor");
    out[0] = dc_full(c, t.rank, t.shape, v->kind == GR_ARG_FLOAT ? v->f : (double)v->i, t.dtype);
    return 1;
}

/* A factory: full(shape, value) with shape and dtype from the arguments. */
static int r_factory(dctx *c, const gr_node *n, int *out)
{
    const char *b = n->base;
    int like = strstr(b, "_like") != NULL, newop = !strncmp(b, "new_", 4);
    int src = like || newop ? dc_val(c, n, 0, "self") : -1;
    int64_t shape[GR_MAX_RANK];
    int rank;
    if (like) {
        gr_ttype t = dc_T(c, src);
        rank = t.rank;
        memcpy(shape, t.shape, sizeof shape);
    } else {
        rank = dc_ints(c, n, newop ? 1 : 0, "size", shape);
        if (rank < 0)
            dc_fail(c, "argument size must be a list of ints");
    }
    gr_dtype dt = src >= 0 ? dc_T(c, src).dtype : GR_F32;
    double v = strstr(b, "ones") ? 1 : 0;
    if (strstr(b, "full")) {
        gr_dtype vdt;
        v = fill_value(c, n, like ? 1 : 2, &vdt);
        if (src < 0)
            dt = vdt;
    }
    int d = dc_dtype_arg(c, n, 99, "dtype");
    out[0] = dc_full(c, rank, shape, v, d >= 0 ? (gr_dtype)d : dt);
    return 1;
}

static int r_view_like(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int64_t shape[GR_MAX_RANK];
    int rank;
    if (!strcmp(n->base, "_reshape_alias")) {
        rank = dc_ints(c, n, 1, "size", shape);
    } else if (!strcmp(n->base, "flatten")) {
        int s = dc_normdim(c, (int64_t)dc_num(c, n, 1, "start_dim", 0), t.rank);
        int e = dc_normdim(c, (int64_t)dc_num(c, n, 2, "end_dim", -1), t.rank);
        rank = 0;
        for (int d = 0; d < t.rank; d++) {
            if (d > s && d <= e)
                shape[rank - 1] *= t.shape[d];
            else
                shape[rank++] = t.shape[d];
        }
    } else if (!strcmp(n->base, "unflatten")) {
        int dim = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", 0), t.rank);
        int64_t sz[GR_MAX_RANK];
        int k = dc_ints(c, n, 2, "sizes", sz);
        if (k < 1 || t.rank - 1 + k > GR_MAX_RANK)
            dc_fail(c, "argument sizes must be a list of ints");
        int64_t known = 1;
        int infer = -1;
        for (int i = 0; i < k; i++) {
            if (sz[i] == -1)
                infer = i;
            else
                known *= sz[i];
        }
        if (infer >= 0)
            sz[infer] = known ? t.shape[dim] / known : 0;
        rank = 0;
        for (int d = 0; d < t.rank; d++) {
            if (d == dim)
                for (int i = 0; i < k; i++)
                    shape[rank++] = sz[i];
            else
                shape[rank++] = t.shape[d];
        }
    } else { /* view_as, reshape_as, expand_as */
        gr_ttype o = dc_T(c, dc_val(c, n, 1, "other"));
        if (!strcmp(n->base, "expand_as")) {
            out[0] = dc_expand(c, x, o.rank, o.shape);
            return 1;
        }
        rank = o.rank;
        memcpy(shape, o.shape, sizeof shape);
    }
    if (rank < 0)
        dc_fail(c, "argument size must be a list of ints");
    out[0] = dc_reshape(c, x, rank, shape);
    return 1;
}

/* repeat_interleave(x, repeats, dim): x[.., j, ..] repeated r times in place:
 * unsqueeze after dim, expand it to r, merge. */
static int r_repeat_interleave(dctx *c, const gr_node *n, int *out)
{
    if (n->nargs == 1) /* repeat_interleave.Tensor(repeats): the positions */
        return dc_r_repeat_positions(c, n, out);
    int x = dc_val(c, n, 0, "self");
    const gr_arg *r = gr_node_arg(n, 1, "repeats");
    if (!r || r->kind != GR_ARG_INT)
        return 0; /* repeats per element: the output's layout depends on the data (host) */
    const gr_arg *da = gr_node_arg(n, 2, "dim");
    gr_ttype t = dc_T(c, x);
    if (!da || da->kind == GR_ARG_NONE) {
        int64_t all = dc_numel(&t);
        x = dc_reshape(c, x, 1, &all);
        t = dc_T(c, x);
    }
    int dim = da && da->kind != GR_ARG_NONE ? dc_normdim(c, (int64_t)dc_num(c, n, 2, "dim", 0), t.rank) : 0;
    int u = dc_unsqueeze(c, x, dim + 1);
    gr_ttype tu = dc_T(c, u);
    tu.shape[dim + 1] = r->i;
    int e = dc_expand(c, u, tu.rank, tu.shape);
    t.shape[dim] *= r->i;
    out[0] = dc_reshape(c, e, t.rank, t.shape);
    return 1;
}

/* repeat(x, sizes): tile; x as [1, s0, 1, s1, ..] expanded to [r0, s0, r1, s1, ..] */
static int r_repeat(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int64_t rep[GR_MAX_RANK];
    int k = dc_ints(c, n, 1, "repeats", rep);
    gr_ttype t = dc_T(c, x);
    if (k < t.rank || 2 * k > GR_MAX_RANK)
        dc_fail(c, "the compiler lowers repeat of at most %d dimensions", GR_MAX_RANK / 2);
    int64_t inter[GR_MAX_RANK], big[GR_MAX_RANK], res[GR_MAX_RANK];
    for (int d = 0; d < k; d++) {
        int sd = d - (k - t.rank);
        int64_t s = sd >= 0 ? t.shape[sd] : 1;
        inter[2 * d] = 1;
        inter[2 * d + 1] = s;
        big[2 * d] = rep[d];
        big[2 * d + 1] = s;
        res[d] = rep[d] * s;
    }
    int v = dc_reshape(c, x, 2 * k, inter);
    v = dc_expand(c, v, 2 * k, big);
    out[0] = dc_reshape(c, v, k, res);
    return 1;
}

/* pixel_shuffle(x, r): [*, C*r*r, H, W] as [B, C, r, r, H, W], permuted to
 * [B, C, H, r, W, r], as [*, C, H*r, W*r]; pixel_unshuffle(x, r) the
 * inverse: [B, C, H, r, W, r] permuted to [B, C, r, r, H, W]. */
static int r_pixel_shuffle(dctx *c, const gr_node *n, int *out)
{
    const int un = !strcmp(n->base, "pixel_unshuffle");
    int x = dc_val(c, n, 0, "self");
    int64_t r = (int64_t)dc_num(c, n, 1, un ? "downscale_factor" : "upscale_factor", 0);
    gr_ttype t = dc_T(c, x);
    if (t.rank < 3 || r < 1)
        dc_fail(c, "needs a tensor of rank 3 or more and a factor of 1 or more");
    const int64_t *chw = t.shape + t.rank - 3;
    int64_t b = 1; /* the leading dimensions as one (of a tensor with no elements too) */
    for (int d = 0; d < t.rank - 3; d++)
        b *= t.shape[d];
    /* (C / r) % r, not C % (r * r): a factor of 2^32 squared overflows */
    if ((un && (chw[1] % r || chw[2] % r)) || (!un && (chw[0] % r || chw[0] / r % r)))
        dc_fail(c, "the shape does not divide by the factor %lld", (long long)r);
    int64_t C = un ? chw[0] : chw[0] / r / r, H = un ? chw[1] / r : chw[1], W = un ? chw[2] / r : chw[2];
    int64_t spread[6] = {b, C, H, r, W, r}, packed[6] = {b, C, r, r, H, W};
    static const int64_t to_spread[6] = {0, 1, 4, 2, 5, 3}, to_packed[6] = {0, 1, 3, 5, 2, 4};
    gr_ttype pt = t;
    pt.rank = 6;
    memcpy(pt.shape, un ? packed : spread, sizeof spread);
    int v = dc_reshape(c, x, 6, un ? spread : packed);
    v = DC_EMIT(c, "aten.permute.default", pt, da_val(v), da_ints(6, un ? to_packed : to_spread));
    const gr_ttype o = c->g->values[n->out].type;
    out[0] = dc_reshape(c, v, o.rank, o.shape);
    return 1;
}

/* scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale) */
static int r_sdpa(dctx *c, const gr_node *n, int *out)
{
    int q = dc_val(c, n, 0, "query"), k = dc_val(c, n, 1, "key"), v = dc_val(c, n, 2, "value");
    int mask = dc_opt_val(c, n, 3, "attn_mask");
    if (dc_num(c, n, 4, "dropout_p", 0) != 0)
        dc_fail(c, "the compiler does not lower attention dropout");
    const gr_arg *ca = gr_node_arg(n, 5, "is_causal");
    gr_ttype tq = dc_T(c, q), tk = dc_T(c, k);
    double scale = dc_num(c, n, 6, "scale", 1.0 / sqrt((double)tq.shape[tq.rank - 1]));
    int s = dc_matmul(c, "aten.matmul.default", q, dc_transpose(c, k, -2, -1));
    s = dc_bins(c, "aten.mul.Tensor", s, scale);
    if (ca && ca->kind == GR_ARG_BOOL && ca->i) { /* no row masked whole: no NaN row */
        int64_t ls[2] = {tq.shape[tq.rank - 2], tk.shape[tk.rank - 2]};
        int ones = dc_full(c, 2, ls, 1, GR_BOOL);
        gr_ttype tt = dc_T(c, ones);
        int tril = DC_EMIT(c, "aten.tril.default", tt, da_val(ones), da_int(0));
        s = dc_where_s(c, tril, s, -INFINITY, 0);
    }
    /* the infinities softmax must guard (inf_rows_of, as r_softmax asks it):
     * a boolean mask's -inf; a float mask's as its source may hold */
    int inf_rows = 0;
    if (mask >= 0 && dc_T(c, mask).dtype == GR_BOOL) {
        s = dc_where_s(c, mask, s, -INFINITY, 0);
        inf_rows = INF_NEG;
    } else if (mask >= 0) {
        s = dc_bin(c, "aten.add.Tensor", s, mask);
        inf_rows = inf_rows_of(c, gr_node_arg(n, 3, "attn_mask")->value, 1);
    }
    out[0] = dc_matmul(c, "aten.matmul.default", softmax(c, s, -1, 0, inf_rows), v);
    return 1;
}

/* ---- Elementwise math and activations, in core ops ----
 * Each is written as the DL16 device computes well: selections (where,
 * clamp) are exact, and each arithmetic step is one SFP operation whose
 * result is stored in DL16 (9 fraction bits). */

/* a comparison of a with the number s: a bool tensor */
int dc_cmps(dctx *c, const char *op, int a, double s)
{
    gr_ttype t = dc_T(c, a);
    t.dtype = GR_BOOL;
    return DC_EMIT(c, op, t, da_val(a), da_num(s));
}

int dc_cmpv(dctx *c, const char *op, int a, int b)
{
    gr_ttype ta = dc_T(c, a), tb = dc_T(c, b), t;
    if (ir_broadcast(&ta, &tb, &t))
        dc_fail(c, "operand shapes do not broadcast");
    t.dtype = GR_BOOL;
    return DC_EMIT(c, op, t, da_val(a), da_val(b));
}

/* a bool as 0 / 1 in the float dtype dt */
static int as_num(dctx *c, int b, gr_dtype dt) { return dc_cast(c, b, dt); }

int dc_neg(dctx *c, int a) { return dc_un(c, "aten.neg.default", a); }

/* x, or x * s when s != 1 */
int dc_scale(dctx *c, int x, double s) { return s == 1 ? x : dc_bins(c, "aten.mul.Tensor", x, s); }

enum { RD_FLOOR, RD_CEIL, RD_TRUNC, RD_ROUND };

/* floor, ceil, trunc or round (half to even) of a float x.  The SFP has no
 * rounding function; DL16 keeps every integer up to 1024 and has ulp 1 on
 * [512, 1024), so for a = |x| < 512, (a + 512) - 512 is an integer near a
 * (the store rounds ties away from zero), exact after a compare and a
 * correction by 1; a magnitude of 512 or more is already an integer (and
 * NaN fails the test a < 512, so it passes through). */
static int round_to_int(dctx *c, int x, int which)
{
    gr_dtype dt = dc_T(c, x).dtype;
    int a = dc_un(c, "aten.abs.default", x);
    int t = dc_bins(c, "aten.sub.Tensor", dc_bins(c, "aten.add.Tensor", a, 512), 512);
    int fl = dc_bin(c, "aten.sub.Tensor", t, as_num(c, dc_cmpv(c, "aten.gt.Tensor", t, a), dt));
    int up;
    if (which == RD_ROUND) { /* fl + 1 when a - fl > 0.5, or == 0.5 and fl is odd */
        int d = dc_bin(c, "aten.sub.Tensor", a, fl);
        int h = dc_bins(c, "aten.mul.Tensor", fl, 0.5);
        int hu = dc_bins(c, "aten.sub.Tensor", dc_bins(c, "aten.add.Tensor", h, 512), 512);
        int odd = dc_cmpv(c, "aten.ne.Tensor", hu, h);
        int tie = dc_bin(c, "aten.logical_and.default", dc_cmps(c, "aten.eq.Scalar", d, 0.5), odd);
        up = dc_bin(c, "aten.add.Tensor", fl,
                 as_num(c, dc_bin(c, "aten.logical_or.default", dc_cmps(c, "aten.gt.Scalar", d, 0.5), tie), dt));
    } else { /* ceil(a) */
        up = dc_bin(c, "aten.add.Tensor", t, as_num(c, dc_cmpv(c, "aten.lt.Tensor", t, a), dt));
    }
    /* for x < 0: floor(x) = -ceil(a), ceil(x) = trunc(x) = -floor(a), round(x) = -round(a) */
    int pos = which == RD_FLOOR || which == RD_TRUNC ? fl : up;
    int negv = which == RD_FLOOR || which == RD_ROUND ? up : fl;
    int r = dc_where(c, dc_cmps(c, "aten.lt.Scalar", x, 0), dc_neg(c, negv), pos);
    return dc_where(c, dc_cmps(c, "aten.lt.Scalar", a, 512), r, x);
}

static int r_round(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    static const char *const names[] = {"floor", "ceil", "trunc", "round"};
    int which = 0;
    while (strcmp(names[which], n->base))
        which++;
    double d = which == RD_ROUND ? dc_num(c, n, 1, "decimals", 0) : 0;
    if (!dc_is_float(dc_T(c, x).dtype) || d == 0) {
        out[0] = dc_is_float(dc_T(c, x).dtype) ? round_to_int(c, x, which) : x;
        return 1;
    }
    /* decimals: as PyTorch, round(x * 10^d) / 10^d (d < 0: round(x / 10^-d) * 10^-d) */
    double p = pow(10, fabs(d));
    int y = dc_bins(c, d > 0 ? "aten.mul.Tensor" : "aten.div.Tensor", x, p);
    out[0] = dc_bins(c, d > 0 ? "aten.div.Tensor" : "aten.mul.Tensor", round_to_int(c, y, RD_ROUND), p);
    return 1;
}

static int r_frac(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    out[0] = dc_bin(c, "aten.sub.Tensor", x, round_to_int(c, x, RD_TRUNC));
    return 1;
}

/* sign, sgn: (x > 0) - (x < 0), an integer's in its dtype; of NaN 0, as
 * torch 1.13 computes it; a bool's is itself */
static int r_sign(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_dtype dt = dc_T(c, x).dtype;
    if (dt == GR_BOOL) {
        out[0] = x;
        return 1;
    }
    out[0] = dc_bin(c, "aten.sub.Tensor", as_num(c, dc_cmps(c, "aten.gt.Scalar", x, 0), dt),
                    as_num(c, dc_cmps(c, "aten.lt.Scalar", x, 0), dt));
    return 1;
}

/* b (the value bv, or the number bs when bv < 0) applied to x by op; an integer x keeps its
 * dtype by an integer number */
static int by_b(dctx *c, const char *op, int x, int bv, double bs)
{
    if (bv >= 0)
        return dc_bin(c, op, x, bv);
    if (dc_is_float(dc_T(c, x).dtype))
        return dc_bins(c, op, x, bs);
    return DC_EMIT(c, op, dc_T(c, x), da_val(x), da_int((int64_t)bs));
}

/* Integer a / b rounded to trunc or floor (as a's dtype): the cast of the fp32 quotient truncates
 * as PyTorch's does, and intexact.c tabulates that cast of a bounded integer into comparisons of
 * it, exact (or refuses it); floor is one less where a and b differ in sign and b does not
 * divide a. */
static int int_div(dctx *c, int a, int bv, double bs, int which)
{
    gr_dtype dt = dc_T(c, a).dtype;
    int af = dc_cast(c, a, GR_F32);
    int q = dc_cast(c, by_b(c, "aten.div.Tensor", af, bv >= 0 ? dc_cast(c, bv, GR_F32) : -1, bs), dt);
    if (which == RD_TRUNC)
        return q;
    int r = dc_bin(c, "aten.sub.Tensor", a, by_b(c, "aten.mul.Tensor", q, bv, bs));
    int apart = bv >= 0 ? dc_cmpv(c, "aten.ne.Tensor", dc_cmps(c, "aten.lt.Scalar", a, 0), dc_cmps(c, "aten.lt.Scalar", bv, 0))
                        : dc_cmps(c, bs < 0 ? "aten.ge.Scalar" : "aten.lt.Scalar", a, 0);
    int down = dc_bin(c, "aten.logical_and.default", apart, dc_cmps(c, "aten.ne.Scalar", r, 0));
    return dc_bin(c, "aten.sub.Tensor", q, as_num(c, down, dt));
}

/* Whether a / other divides integers: a integer, other an integer number or tensor */
static int int_operands(dctx *c, const gr_node *n, int a, int *bv, double *bs)
{
    const gr_arg *o = gr_node_arg(n, 1, "other");
    *bv = -1;
    *bs = 0;
    if (dc_is_float(dc_T(c, a).dtype))
        return 0;
    if (dc_is_number(o)) {
        *bs = dc_num(c, n, 1, "other", 1);
        return o->kind == GR_ARG_INT;
    }
    *bv = dc_val(c, n, 1, "other");
    return !dc_is_float(dc_T(c, *bv).dtype);
}

/* div with rounding_mode "trunc" / "floor": the true quotient, rounded (integers: int_div) */
static int r_div_mode(dctx *c, const gr_node *n, int *out)
{
    const gr_arg *m = gr_node_arg(n, 2, "rounding_mode");
    if (!m || m->kind == GR_ARG_NONE)
        return 0;
    if (m->kind != GR_ARG_STR || (strcmp(m->s, "trunc") && strcmp(m->s, "floor")))
        dc_fail(c, "rounding_mode must be None, \"trunc\" or \"floor\"");
    int x = dc_val(c, n, 0, "self"), bv;
    double bs;
    int which = strcmp(m->s, "trunc") ? RD_FLOOR : RD_TRUNC;
    if (int_operands(c, n, x, &bv, &bs)) {
        out[0] = int_div(c, x, bv, bs, which);
        return 1;
    }
    const gr_arg *o = gr_node_arg(n, 1, "other");
    int q = dc_is_number(o) ? dc_bins(c, "aten.div.Tensor", x, dc_num(c, n, 1, "other", 1))
                         : dc_bin(c, "aten.div.Tensor", x, dc_val(c, n, 1, "other"));
    out[0] = round_to_int(c, q, which);
    return 1;
}

/* floor_divide(a, b): floor(a / b) (integers: int_div) */
static int r_floor_divide(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), bv;
    double bs;
    if (int_operands(c, n, x, &bv, &bs)) {
        out[0] = int_div(c, x, bv, bs, RD_FLOOR);
        return 1;
    }
    const gr_arg *o = gr_node_arg(n, 1, "other");
    int q = dc_is_number(o) ? dc_bins(c, "aten.div.Tensor", x, dc_num(c, n, 1, "other", 1))
                         : dc_bin(c, "aten.div.Tensor", x, dc_val(c, n, 1, "other"));
    if (!dc_is_float(dc_T(c, x).dtype) || !dc_is_float(dc_T(c, q).dtype))
        dc_fail(c, "the compiler lowers floor_divide of float tensors or of integers by integers");
    out[0] = round_to_int(c, q, RD_FLOOR);
    return 1;
}

/* remainder: a - floor(a / b) b; fmod: a - trunc(a / b) b (integers: int_div's quotient) */
static int r_remainder(dctx *c, const gr_node *n, int *out)
{
    int a = dc_val(c, n, 0, "self"), bv;
    const gr_arg *o = gr_node_arg(n, 1, "other");
    int fm = !strcmp(n->base, "fmod");
    double bs;
    if (int_operands(c, n, a, &bv, &bs)) {
        int q = int_div(c, a, bv, bs, fm ? RD_TRUNC : RD_FLOOR);
        out[0] = dc_bin(c, "aten.sub.Tensor", a, by_b(c, "aten.mul.Tensor", q, bv, bs));
        return 1;
    }
    if (!dc_is_float(dc_T(c, a).dtype))
        dc_fail(c, "the compiler lowers %s of a float tensor or of integers by integers", n->base);
    int q, p;
    if (dc_is_number(o) && isinf(dc_num(c, n, 1, "other", 1))) {
        /* fmod: a; remainder: b where a's sign differs from b's, else a (a / b underflows in DL16:
         * floor gave 0, not -1); NaN where a is the stand-in 2^30 itself, an infinity (a finite
         * a beyond it, which DL16 holds, stays a: a - trunc(a / 2^30) 2^30 was not) */
        double b = dc_num(c, n, 1, "other", 1);
        int r = fm ? a : dc_where_s(c, dc_cmps(c, b > 0 ? "aten.lt.Scalar" : "aten.gt.Scalar", a, 0), a, b, 1);
        out[0] = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", dc_un(c, "aten.abs.default", a), DL16_INF), r, NAN, 1);
        return 1;
    }
    if (dc_is_number(o)) {
        double b = dc_num(c, n, 1, "other", 1);
        q = round_to_int(c, dc_bins(c, "aten.div.Tensor", a, b), fm ? RD_TRUNC : RD_FLOOR);
        p = dc_bins(c, "aten.mul.Tensor", q, b);
    } else {
        int b = dc_val(c, n, 1, "other");
        q = round_to_int(c, dc_bin(c, "aten.div.Tensor", a, b), fm ? RD_TRUNC : RD_FLOOR);
        p = dc_bin(c, "aten.mul.Tensor", q, b);
    }
    out[0] = dc_bin(c, "aten.sub.Tensor", a, p);
    return 1;
}

/* hardtanh(x, min_val, max_val), relu6 */
static int r_hardtanh(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int six = !strcmp(n->base, "relu6");
    double lo = six ? 0 : dc_num(c, n, 1, "min_val", -1), hi = six ? 6 : dc_num(c, n, 2, "max_val", 1);
    out[0] = dc_bins(c, "aten.clamp_max.default", dc_bins(c, "aten.clamp_min.default", x, lo), hi);
    return 1;
}

static int r_leaky_relu(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    double s = dc_num(c, n, 1, "negative_slope", 0.01);
    out[0] = dc_where(c, dc_cmps(c, "aten.gt.Scalar", x, 0), x, dc_bins(c, "aten.mul.Tensor", x, s));
    return 1;
}

/* x > 0 ? x * scale : (exp(x * input_scale) - 1) * alpha * scale (elu);
 * celu(alpha) is elu(alpha, 1, 1 / alpha), selu fixed constants */
static int r_elu(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    double alpha = dc_num(c, n, 1, "alpha", 1), sc = 1, isc = 1;
    if (!strcmp(n->base, "celu")) {
        isc = 1 / alpha;
    } else if (!strcmp(n->base, "selu")) {
        alpha = 1.6732632423543772848170429916717;
        sc = 1.0507009873554804934193349852946;
    } else {
        sc = dc_num(c, n, 2, "scale", 1);
        isc = dc_num(c, n, 3, "input_scale", 1);
    }
    int em1 = dc_bins(c, "aten.sub.Tensor", dc_un(c, "aten.exp.default", dc_scale(c, x, isc)), 1);
    out[0] = dc_where(c, dc_cmps(c, "aten.gt.Scalar", x, 0), dc_scale(c, x, sc), dc_scale(c, em1, alpha * sc));
    return 1;
}

static int r_threshold(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    double th = dc_num(c, n, 1, "threshold", 0), v = dc_num(c, n, 2, "value", 0);
    out[0] = dc_where_s(c, dc_cmps(c, "aten.gt.Scalar", x, th), x, v, 0);
    return 1;
}

/* hardsigmoid(x) = clamp(x + 3, 0, 6) / 6 (as Inductor) */
static int hardsigmoid(dctx *c, int x)
{
    int r = dc_bins(c, "aten.clamp_min.default", dc_bins(c, "aten.add.Tensor", x, 3), 0);
    r = dc_bins(c, "aten.clamp_max.default", r, 6);
    return dc_bins(c, "aten.mul.Tensor", r, 1.0 / 6);
}

static int r_hardsigmoid(dctx *c, const gr_node *n, int *out)
{
    out[0] = hardsigmoid(c, dc_val(c, n, 0, "self"));
    return 1;
}

static int r_hardswish(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    out[0] = dc_bin(c, "aten.mul.Tensor", x, hardsigmoid(c, x));
    return 1;
}

/* x beta > threshold ? x : log(exp(x beta) + 1) / beta.  log1p(e) as
 * log(e + 1): for small e the sum rounds to 1 and the result to 0, an
 * absolute error of at most e (about e^(x beta)). */
static int softplus(dctx *c, int x, double beta, double th)
{
    int xb = dc_scale(c, x, beta);
    int sp = dc_un(c, "aten.log.default", dc_bins(c, "aten.add.Tensor", dc_un(c, "aten.exp.default", xb), 1));
    return dc_where(c, dc_cmps(c, "aten.gt.Scalar", xb, th), x, dc_scale(c, sp, 1 / beta));
}

static int r_softplus(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    out[0] = softplus(c, x, dc_num(c, n, 1, "beta", 1), dc_num(c, n, 2, "threshold", 20));
    return 1;
}

/* mish(x) = x tanh(softplus(x)) */
static int r_mish(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    out[0] = dc_bin(c, "aten.mul.Tensor", x, dc_un(c, "aten.tanh.default", softplus(c, x, 1, 20)));
    return 1;
}

/* glu(x, dim): the first half times sigmoid of the second */
static int r_glu(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    int d = dc_normdim(c, (int64_t)dc_num(c, n, 1, "dim", -1), t.rank);
    int64_t h = t.shape[d] / 2;
    if (!t.rank || t.shape[d] % 2)
        dc_fail(c, "glu halves a dimension of even size");
    int a = dc_slice(c, x, d, 0, h, 1), b = dc_slice(c, x, d, h, 2 * h, 1);
    out[0] = dc_bin(c, "aten.mul.Tensor", a, dc_un(c, "aten.sigmoid.default", b));
    return 1;
}

/* logsumexp(x, dims, keepdim) = m + log(sum(exp(x - m))), m = amax(x) */
static int r_logsumexp(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    if (!dc_is_float(dc_T(c, x).dtype))
        x = dc_cast(c, x, GR_F32);
    int64_t in[GR_MAX_RANK], dims[GR_MAX_RANK], count;
    int k = dc_ints(c, n, 1, "dim", in);
    const gr_arg *kd = gr_node_arg(n, 2, "keepdim");
    int keep = kd && kd->kind == GR_ARG_BOOL && kd->i;
    int nd = red_dims(c, x, k, in, dims, &count);
    int m = dc_red(c, "aten.amax.default", x, nd, dims, 1);
    int s = dc_red(c, "aten.sum.dim_IntList", dc_un(c, "aten.exp.default", dc_bin(c, "aten.sub.Tensor", x, m)), nd, dims, keep);
    gr_ttype ts = dc_T(c, s);
    if (!keep)
        m = dc_reshape(c, m, ts.rank, ts.shape);
    out[0] = dc_bin(c, "aten.add.Tensor", dc_un(c, "aten.log.default", s), m);
    return 1;
}

/* x as a float tensor: integers and bools become f32, as PyTorch's
 * floating functions promote them */
int dc_fx(dctx *c, int x) { return dc_is_float(dc_T(c, x).dtype) ? x : dc_cast(c, x, GR_F32); }

/* Unary functions written with exp, log, sin, cos, sqrt and arithmetic. */
enum { M_EXPM1, M_LOG1P, M_LOG2, M_LOG10, M_EXP2, M_TAN, M_SINH, M_COSH, M_ASINH, M_ACOSH, M_ATANH,
       M_DEG2RAD, M_RAD2DEG, M_SINC, M_ISNAN, M_ERFC, M_ANGLE, M_ENTR };

static const struct {
    const char *name;
    const char *into;
} math_fns[] = {
    [M_EXPM1] = {"expm1", "exp(x) - 1"},
    [M_LOG1P] = {"log1p", "log(x + 1)"},
    [M_LOG2] = {"log2", "log(x) * (1/ln 2)"},
    [M_LOG10] = {"log10", "log(x) * (1/ln 10)"},
    [M_EXP2] = {"exp2", "exp(x * ln 2)"},
    [M_TAN] = {"tan", "sin(x) / cos(x)"},
    [M_SINH] = {"sinh", "(exp(x) - exp(-x)) * 0.5"},
    [M_COSH] = {"cosh", "(exp(x) + exp(-x)) * 0.5"},
    [M_ASINH] = {"asinh", "a = |x|: log(a + sqrt(a*a + 1)) (a > 4096: log(a) + ln 2), sign of x"},
    [M_ACOSH] = {"acosh", "log(x + sqrt(x*x - 1)) (x > 4096: log(x) + ln 2)"},
    [M_ATANH] = {"atanh", "log((1 + x) / (1 - x)) * 0.5; x == +-1: +-inf"},
    [M_DEG2RAD] = {"deg2rad", "x * (pi/180)"},
    [M_RAD2DEG] = {"rad2deg", "x * (180/pi)"},
    [M_SINC] = {"sinc", "where(x == 0, 1, sin(pi x) / (pi x))"},
    [M_ISNAN] = {"isnan", "x != x (DL16's NINF reads as NaN)"},
    [M_ERFC] = {"erfc", "1 - erf(x) (absolute, not relative, DL16 accuracy in the tail)"},
    [M_ANGLE] = {"angle", "where(x < 0, pi, 0), NaN kept (real tensors)"},
    [M_ENTR] = {"special_entr", "where(x > 0, -x * log(x), where(x == 0, 0, -inf))"},
};

#define LN2 0.69314718055994530942
#define PI 3.14159265358979323846

/* log(a + sqrt(a*a + s)), or log(a) + ln 2 where a*a would leave DL16's
 * range (about 8.6e9: a > 4096 is far enough, the two agree there to
 * DL16's precision) */
static int log_hyp(dctx *c, int a, double s)
{
    int q = dc_bins(c, "aten.add.Tensor", dc_bin(c, "aten.mul.Tensor", a, a), s);
    int r = dc_bin(c, "aten.add.Tensor", a, dc_un(c, "aten.sqrt.default", q));
    int big = dc_bins(c, "aten.add.Tensor", dc_un(c, "aten.log.default", a), LN2);
    return dc_where(c, dc_cmps(c, "aten.gt.Scalar", a, 4096), big, dc_un(c, "aten.log.default", r));
}

static int math_fn(dctx *c, int x, int which)
{
    x = dc_fx(c, x);
    switch (which) {
    case M_EXPM1: return dc_bins(c, "aten.sub.Tensor", dc_un(c, "aten.exp.default", x), 1);
    case M_LOG1P: return dc_un(c, "aten.log.default", dc_bins(c, "aten.add.Tensor", x, 1));
    case M_LOG2: return dc_bins(c, "aten.mul.Tensor", dc_un(c, "aten.log.default", x), 1 / LN2);
    case M_LOG10: return dc_bins(c, "aten.mul.Tensor", dc_un(c, "aten.log.default", x), 1 / log(10.0));
    case M_EXP2: return dc_un(c, "aten.exp.default", dc_bins(c, "aten.mul.Tensor", x, LN2));
    case M_TAN: return dc_bin(c, "aten.div.Tensor", dc_un(c, "aten.sin.default", x), dc_un(c, "aten.cos.default", x));
    case M_SINH:
    case M_COSH: {
        int e = dc_un(c, "aten.exp.default", x), en = dc_un(c, "aten.exp.default", dc_neg(c, x));
        return dc_bins(c, "aten.mul.Tensor", dc_bin(c, which == M_SINH ? "aten.sub.Tensor" : "aten.add.Tensor", e, en), 0.5);
    }
    case M_ASINH: {
        int r = log_hyp(c, dc_un(c, "aten.abs.default", x), 1);
        return dc_where(c, dc_cmps(c, "aten.lt.Scalar", x, 0), dc_neg(c, r), r);
    }
    case M_ACOSH: return log_hyp(c, x, -1);
    case M_ATANH: {
        int q = dc_bin(c, "aten.div.Tensor", dc_bins(c, "aten.add.Tensor", x, 1), dc_bins(c, "aten.add.Tensor", dc_neg(c, x), 1));
        int r = dc_bins(c, "aten.mul.Tensor", dc_un(c, "aten.log.default", q), 0.5);
        /* +-1 (also an input that DL16 rounds to it): +-inf, the device's
         * stand-in, where the quotient's infinity would be stored as NaN */
        r = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", x, 1), r, INFINITY, 1);
        return dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", x, -1), r, -INFINITY, 1);
    }
    case M_DEG2RAD: return dc_bins(c, "aten.mul.Tensor", x, PI / 180);
    case M_RAD2DEG: return dc_bins(c, "aten.mul.Tensor", x, 180 / PI);
    case M_SINC: {
        int px = dc_bins(c, "aten.mul.Tensor", x, PI);
        int q = dc_bin(c, "aten.div.Tensor", dc_un(c, "aten.sin.default", px), px);
        return dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", x, 0), q, 1, 1);
    }
    case M_ERFC: return dc_bins(c, "aten.add.Tensor", dc_neg(c, dc_un(c, "aten.erf.default", x)), 1);
    case M_ANGLE: {
        int a = dc_where_s(c, dc_cmps(c, "aten.lt.Scalar", x, 0), dc_full(c, 0, (int64_t[]){0}, PI, dc_T(c, x).dtype), 0, 0);
        return dc_where(c, dc_cmpv(c, "aten.ne.Tensor", x, x), x, a);
    }
    case M_ENTR: {
        int z = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", x, 0), dc_full(c, 0, (int64_t[]){0}, -INFINITY, dc_T(c, x).dtype), 0, 1);
        int e = dc_neg(c, dc_bin(c, "aten.mul.Tensor", x, dc_un(c, "aten.log.default", x)));
        return dc_where(c, dc_cmps(c, "aten.gt.Scalar", x, 0), e, dc_where(c, dc_cmpv(c, "aten.ne.Tensor", x, x), x, z));
    }
    default: return dc_cmpv(c, "aten.ne.Tensor", x, x);
    }
}

static int r_math(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    for (size_t i = 0; i < sizeof math_fns / sizeof math_fns[0]; i++)
        if (!strcmp(math_fns[i].name, n->base)) {
            out[0] = math_fn(c, x, (int)i);
            return 1;
        }
    dc_fail(c, "internal: no math function %s", n->base);
}

/* logit(x, eps): log(z / (1 - z)), z = clamp(x, eps, 1 - eps) with eps */
static int r_logit(dctx *c, const gr_node *n, int *out)
{
    int x = dc_fx(c, dc_val(c, n, 0, "self"));
    const gr_arg *e = gr_node_arg(n, 1, "eps");
    if (dc_is_number(e)) {
        double eps = dc_num(c, n, 1, "eps", 0);
        x = dc_bins(c, "aten.clamp_max.default", dc_bins(c, "aten.clamp_min.default", x, eps), 1 - eps);
    }
    int q = dc_bin(c, "aten.div.Tensor", x, dc_bins(c, "aten.add.Tensor", dc_neg(c, x), 1));
    out[0] = dc_un(c, "aten.log.default", q);
    return 1;
}

/* log_sigmoid_forward: (min(x, 0) - log(e + 1), e = exp(-|x|)), PyTorch's buffer e */
static int r_log_sigmoid(dctx *c, const gr_node *n, int *out)
{
    int x = dc_fx(c, dc_val(c, n, 0, "self"));
    int e = dc_un(c, "aten.exp.default", dc_neg(c, dc_un(c, "aten.abs.default", x)));
    int l = dc_un(c, "aten.log.default", dc_bins(c, "aten.add.Tensor", e, 1));
    out[0] = dc_bin(c, "aten.sub.Tensor", dc_bins(c, "aten.clamp_max.default", x, 0), l);
    out[1] = e;
    return 2;
}

static int r_hardshrink(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    double l = dc_num(c, n, 1, "lambd", 0.5);
    int keep = dc_cmps(c, "aten.gt.Scalar", dc_un(c, "aten.abs.default", x), l);
    out[0] = dc_where_s(c, keep, x, 0, 0);
    return 1;
}

/* softshrink: x - l above l, x + l below -l, else 0 */
static int r_softshrink(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    double l = dc_num(c, n, 1, "lambd", 0.5);
    int lo = dc_where_s(c, dc_cmps(c, "aten.lt.Scalar", x, -l), dc_bins(c, "aten.add.Tensor", x, l), 0, 0);
    out[0] = dc_where(c, dc_cmps(c, "aten.gt.Scalar", x, l), dc_bins(c, "aten.sub.Tensor", x, l), lo);
    return 1;
}

/* prelu(x, w): where(x > 0, x, w x), w along dim 1 of x (or one weight) */
static int r_prelu(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), w = dc_val(c, n, 1, "weight");
    gr_ttype tx = dc_T(c, x), tw = dc_T(c, w);
    int64_t nw = dc_numel(&tw);
    if (nw != 1) {
        if (tx.rank < 2 || tx.shape[1] != nw)
            dc_fail(c, "the weight must have one element or one per channel (dim 1)");
        int64_t shape[GR_MAX_RANK];
        for (int d = 0; d < tx.rank - 1; d++)
            shape[d] = d == 0 ? nw : 1;
        w = dc_reshape(c, w, tx.rank - 1, shape);
    } else if (tw.rank) {
        int64_t none[1] = {0};
        w = dc_reshape(c, w, 0, none);
    }
    out[0] = dc_where(c, dc_cmps(c, "aten.gt.Scalar", x, 0), x, dc_bin(c, "aten.mul.Tensor", x, w));
    return 1;
}

/* A tensor or number argument as a value: a number becomes a 0-d full */
static int val_or_num(dctx *c, const gr_node *n, int pos, const char *key, gr_dtype dt)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    int64_t none[1] = {0};
    if (dc_is_number(a))
        return dc_full(c, 0, none, dc_num(c, n, pos, key, 0), dt);
    return dc_val(c, n, pos, key);
}

/* xlogy(x, y) = where(y != y, y, where(x == 0, 0, x log y)); xlog1py with log(y + 1) */
static int r_xlogy(dctx *c, const gr_node *n, int *out)
{
    int x = dc_fx(c, val_or_num(c, n, 0, "self", GR_F32)), y = dc_fx(c, val_or_num(c, n, 1, "other", GR_F32));
    int ly = dc_un(c, "aten.log.default", strstr(n->base, "1p") ? dc_bins(c, "aten.add.Tensor", y, 1) : y);
    int r = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", x, 0), dc_bin(c, "aten.mul.Tensor", x, ly), 0, 1);
    out[0] = dc_where(c, dc_cmpv(c, "aten.ne.Tensor", y, y), y, r);
    return 1;
}

/* logaddexp(a, b) = max(a, b) + log(exp(-|a - b|) + 1); logaddexp2 in base 2 */
static int r_logaddexp(dctx *c, const gr_node *n, int *out)
{
    int a = dc_fx(c, dc_val(c, n, 0, "self")), b = dc_fx(c, dc_val(c, n, 1, "other"));
    int two = !strcmp(n->base, "logaddexp2");
    int d = dc_un(c, "aten.abs.default", dc_bin(c, "aten.sub.Tensor", a, b));
    int e = dc_un(c, "aten.exp.default", dc_neg(c, two ? dc_bins(c, "aten.mul.Tensor", d, LN2) : d));
    int l = dc_un(c, "aten.log.default", dc_bins(c, "aten.add.Tensor", e, 1));
    if (two)
        l = dc_bins(c, "aten.mul.Tensor", l, 1 / LN2);
    out[0] = dc_bin(c, "aten.add.Tensor", dc_bin(c, "aten.maximum.default", a, b), l);
    return 1;
}

/* isinf, isposinf, isneginf: |x|, x, -x >= 2^30 */
static int r_isinf(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    gr_ttype t = dc_T(c, x);
    if (!dc_is_float(t.dtype))
        out[0] = dc_full(c, t.rank, t.shape, 0, GR_BOOL);
    else if (!strcmp(n->base, "isinf"))
        out[0] = dc_cmps(c, "aten.ge.Scalar", dc_un(c, "aten.abs.default", x), DL16_INF);
    else if (!strcmp(n->base, "isposinf"))
        out[0] = dc_cmps(c, "aten.ge.Scalar", x, DL16_INF);
    else
        out[0] = dc_cmps(c, "aten.le.Scalar", x, -DL16_INF);
    return 1;
}

/* nan_to_num(x, nan=0, posinf, neginf): wheres.  A replacement beyond
 * DL16 (PyTorch's default, float32's extremes) is +-ISA_DL16_TOP, and x
 * from there on is taken for an infinity: every finite value left ranks
 * below it, as below float32's extremes (the constants' stand-in 2^29
 * would rank below a finite 6e8). */
static double ntn_replacement(double v) { return isa_dl16_beyond(v) ? copysign((double)ISA_DL16_TOP, v) : v; }

static int r_nan_to_num(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    if (!dc_is_float(dc_T(c, x).dtype)) {
        out[0] = x;
        return 1;
    }
    double v[3] = {dc_num(c, n, 1, "nan", 0), ntn_replacement(dc_num(c, n, 2, "posinf", FLT_MAX)),
                   ntn_replacement(dc_num(c, n, 3, "neginf", -FLT_MAX))};
    double up = v[1] == ISA_DL16_TOP ? ISA_DL16_TOP : DL16_INF, down = v[2] == -ISA_DL16_TOP ? ISA_DL16_TOP : DL16_INF;
    int y = dc_where_s(c, dc_cmps(c, "aten.ge.Scalar", x, up), x, v[1], 1);
    y = dc_where_s(c, dc_cmps(c, "aten.le.Scalar", x, -down), y, v[2], 1);
    out[0] = dc_where_s(c, dc_cmpv(c, "aten.ne.Tensor", x, x), y, v[0], 1);
    return 1;
}

/* hypot(a, b) = m sqrt(1 + r*r), m = max(|a|, |b|), r = min / m (no square
 * leaves DL16's range); m == 0: 0 */
static int r_hypot(dctx *c, const gr_node *n, int *out)
{
    int a = dc_un(c, "aten.abs.default", dc_val(c, n, 0, "self")), b = dc_un(c, "aten.abs.default", dc_val(c, n, 1, "other"));
    int m = dc_bin(c, "aten.maximum.default", a, b);
    int r = dc_bin(c, "aten.div.Tensor", dc_bin(c, "aten.minimum.default", a, b), m);
    int s = dc_un(c, "aten.sqrt.default", dc_bins(c, "aten.add.Tensor", dc_bin(c, "aten.mul.Tensor", r, r), 1));
    int h = dc_bin(c, "aten.mul.Tensor", m, s);
    out[0] = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", m, 0), h, 0, 1);
    return 1;
}

/* fmax / fmin: maximum / minimum, a NaN operand ignored */
static int r_fmax(dctx *c, const gr_node *n, int *out)
{
    int a = dc_val(c, n, 0, "self"), b = dc_val(c, n, 1, "other");
    int m = dc_bin(c, strcmp(n->base, "fmax") ? "aten.minimum.default" : "aten.maximum.default", a, b);
    out[0] = dc_where(c, dc_cmpv(c, "aten.ne.Tensor", a, a), b, dc_where(c, dc_cmpv(c, "aten.ne.Tensor", b, b), a, m));
    return 1;
}

/* heaviside(x, v) = x == 0 ? v : x > 0 */
static int r_heaviside(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), v = dc_val(c, n, 1, "values");
    gr_dtype dt = dc_T(c, x).dtype;
    out[0] = dc_where(c, dc_cmps(c, "aten.eq.Scalar", x, 0), v, as_num(c, dc_cmps(c, "aten.gt.Scalar", x, 0), dt));
    return 1;
}

static int r_logical_xor(dctx *c, const gr_node *n, int *out)
{
    out[0] = dc_cmpv(c, "aten.ne.Tensor", dc_cast(c, dc_val(c, n, 0, "self"), GR_BOOL), dc_cast(c, dc_val(c, n, 1, "other"), GR_BOOL));
    return 1;
}

/* addcmul / addcdiv(self, t1, t2, value): self + value * (t1 op t2) */
static int r_addcmul(dctx *c, const gr_node *n, int *out)
{
    int s = dc_val(c, n, 0, "self"), t1 = dc_val(c, n, 1, "tensor1"), t2 = dc_val(c, n, 2, "tensor2");
    int p = dc_bin(c, strcmp(n->base, "addcdiv") ? "aten.mul.Tensor" : "aten.div.Tensor", t1, t2);
    out[0] = dc_bin(c, "aten.add.Tensor", s, dc_scale(c, p, dc_num(c, n, 3, "value", 1)));
    return 1;
}

/* lerp(start, end, weight) = start + weight * (end - start) */
static int r_lerp(dctx *c, const gr_node *n, int *out)
{
    int s = dc_val(c, n, 0, "self"), e = dc_val(c, n, 1, "end");
    const gr_arg *w = gr_node_arg(n, 2, "weight");
    int d = dc_bin(c, "aten.sub.Tensor", e, s);
    d = dc_is_number(w) ? dc_scale(c, d, dc_num(c, n, 2, "weight", 0)) : dc_bin(c, "aten.mul.Tensor", d, dc_val(c, n, 2, "weight"));
    out[0] = dc_bin(c, "aten.add.Tensor", s, d);
    return 1;
}

/* nansum(x, dims, keepdim, dtype): sum of where(x != x, 0, x) */
static int r_nansum(dctx *c, const gr_node *n, int *out)
{
    int x, keep;
    int64_t dims[GR_MAX_RANK], count;
    int nd = red_args(c, n, &x, dims, &count, &keep);
    if (dc_is_float(dc_T(c, x).dtype))
        x = dc_where_s(c, dc_cmpv(c, "aten.ne.Tensor", x, x), x, 0, 1);
    out[0] = dc_red(c, "aten.sum.dim_IntList", x, nd, dims, keep);
    return 1;
}

/* dot / vdot of two vectors: sum(a * b) */
static int r_dot(dctx *c, const gr_node *n, int *out)
{
    int a = dc_val(c, n, 0, "self"), b = dc_val(c, n, 1, "other");
    if (dc_T(c, a).rank != 1 || dc_T(c, b).rank != 1 || dc_T(c, a).shape[0] != dc_T(c, b).shape[0])
        dc_fail(c, "%s needs two vectors of one length", n->base);
    int64_t d0 = 0;
    out[0] = dc_red(c, "aten.sum.dim_IntList", dc_bin(c, "aten.mul.Tensor", a, b), 1, &d0, 0);
    return 1;
}

/* zero(x): full(x's shape, 0) */
static int r_zero(dctx *c, const gr_node *n, int *out)
{
    gr_ttype t = dc_T(c, dc_val(c, n, 0, "self"));
    out[0] = dc_full(c, t.rank, t.shape, 0, t.dtype);
    return 1;
}

/* eye(n, m): arange(n)[:, None] == arange(m), in the dtype */
static int r_eye(dctx *c, const gr_node *n, int *out)
{
    int64_t rows = (int64_t)dc_num(c, n, 0, "n", 0), cols = (int64_t)dc_num(c, n, 1, "m", (double)rows);
    int dt = dc_dtype_arg(c, n, 99, "dtype");
    gr_ttype ti = {.dtype = GR_I64, .rank = 1, .shape = {rows}}, tj = {.dtype = GR_I64, .rank = 1, .shape = {cols}};
    int i = DC_EMIT(c, "aten.arange.default", ti, da_int(rows), da_kw("dtype", da_dtype(GR_I64)));
    int j = DC_EMIT(c, "aten.arange.default", tj, da_int(cols), da_kw("dtype", da_dtype(GR_I64)));
    out[0] = dc_cast(c, dc_cmpv(c, "aten.eq.Tensor", dc_unsqueeze(c, i, 1), j), dt >= 0 ? (gr_dtype)dt : GR_F32);
    return 1;
}

/* ---- atan, asin, acos, atan2: a polynomial (the SFP has no arctangent) ---- */

/* A least-squares fit of atan(r) / r in r^2 on [0, 1], refined toward
 * minimax; max error 1.16e-5, far below DL16's 2^-10 */
const double cc_atan_coef[CC_ATAN_NCOEF] = {0.999865406416853, -0.33029697587161266, 0.18013886211592456,
                                             -0.08513515014216966, 0.020837469707497294};

/* atan(r) for r in [0, 1] */
static int atan_unit(dctx *c, int r)
{
    int s = dc_bin(c, "aten.mul.Tensor", r, r);
    int p = dc_bins(c, "aten.mul.Tensor", s, cc_atan_coef[CC_ATAN_NCOEF - 1]);
    for (int k = CC_ATAN_NCOEF - 2; k > 0; k--)
        p = dc_bin(c, "aten.mul.Tensor", dc_bins(c, "aten.add.Tensor", p, cc_atan_coef[k]), s);
    return dc_bin(c, "aten.mul.Tensor", dc_bins(c, "aten.add.Tensor", p, cc_atan_coef[0]), r);
}

/* atan2(y, x): r = min(|x|, |y|) / max(|x|, |y|) in [0, 1] (no division
 * by zero, no infinity stored), atan(r) folded into its octant; both zero:
 * 0; a NaN operand: NaN */
static int atan2_of(dctx *c, int y, int x)
{
    int ay = dc_un(c, "aten.abs.default", y), ax = dc_un(c, "aten.abs.default", x);
    int mx = dc_bin(c, "aten.maximum.default", ax, ay), mn = dc_bin(c, "aten.minimum.default", ax, ay);
    int a = atan_unit(c, dc_bin(c, "aten.div.Tensor", mn, mx));
    a = dc_where(c, dc_cmpv(c, "aten.gt.Tensor", ay, ax), dc_bins(c, "aten.add.Tensor", dc_neg(c, a), PI / 2), a);
    a = dc_where(c, dc_cmps(c, "aten.lt.Scalar", x, 0), dc_bins(c, "aten.add.Tensor", dc_neg(c, a), PI), a);
    a = dc_where(c, dc_cmps(c, "aten.lt.Scalar", y, 0), dc_neg(c, a), a);
    a = dc_where_s(c, dc_cmps(c, "aten.eq.Scalar", mx, 0), a, 0, 1);
    a = dc_where(c, dc_cmpv(c, "aten.ne.Tensor", x, x), x, a);
    return dc_where(c, dc_cmpv(c, "aten.ne.Tensor", y, y), y, a);
}

/* atan(x): atan(|x|) or pi/2 - atan(1/|x|) above 1, the sign restored */
static int atan_of(dctx *c, int x)
{
    int ax = dc_un(c, "aten.abs.default", x), big = dc_cmps(c, "aten.gt.Scalar", ax, 1);
    int a = atan_unit(c, dc_where(c, big, dc_un(c, "aten.reciprocal.default", ax), ax));
    a = dc_where(c, big, dc_bins(c, "aten.add.Tensor", dc_neg(c, a), PI / 2), a);
    return dc_where(c, dc_cmps(c, "aten.lt.Scalar", x, 0), dc_neg(c, a), a);
}

/* asin(x) = atan2(x, sqrt((1 - x)(1 + x))), acos(x) = atan2(sqrt(..), x);
 * (1 - x)(1 + x) rather than 1 - x*x: 1 - x is exact near 1 */
static int r_atan(dctx *c, const gr_node *n, int *out)
{
    int x = dc_fx(c, dc_val(c, n, 0, "self"));
    if (!strcmp(n->base, "atan2")) {
        int o = dc_fx(c, dc_val(c, n, 1, "other"));
        out[0] = atan2_of(c, x, o);
        return 1;
    }
    if (!strcmp(n->base, "atan")) {
        out[0] = atan_of(c, x);
        return 1;
    }
    int q = dc_bin(c, "aten.mul.Tensor", dc_bins(c, "aten.add.Tensor", dc_neg(c, x), 1), dc_bins(c, "aten.add.Tensor", x, 1));
    int s = dc_un(c, "aten.sqrt.default", q);
    out[0] = !strcmp(n->base, "asin") ? atan2_of(c, x, s) : atan2_of(c, s, x);
    return 1;
}

/* mse_loss, huber_loss(delta), smooth_l1_loss(beta) of self - target, then
 * reduction 0 none, 1 mean, 2 sum.  z = |d|: mse z*z; huber
 * z < delta ? z*z*0.5 : (z - delta/2) * delta; smooth_l1 z < beta ?
 * z*z*0.5 * (1/beta) : z - beta/2 (beta 0: z). */
static int r_loss(dctx *c, const gr_node *n, int *out)
{
    int d = dc_bin(c, "aten.sub.Tensor", dc_val(c, n, 0, "self"), dc_val(c, n, 1, "target"));
    int64_t red_mode = (int64_t)dc_num(c, n, 2, "reduction", 1);
    int e;
    if (!strcmp(n->base, "mse_loss")) {
        e = dc_bin(c, "aten.mul.Tensor", d, d);
    } else {
        int z = dc_un(c, "aten.abs.default", d), hub = !strcmp(n->base, "huber_loss");
        double th = dc_num(c, n, 3, hub ? "delta" : "beta", 1);
        int q = dc_bins(c, "aten.mul.Tensor", dc_bin(c, "aten.mul.Tensor", z, z), 0.5);
        int l = dc_bins(c, "aten.sub.Tensor", z, th / 2);
        if (hub)
            l = dc_scale(c, l, th);
        e = th > 0 ? dc_where(c, dc_cmps(c, "aten.lt.Scalar", z, th), hub ? q : dc_scale(c, q, 1 / th), l) : z;
    }
    if (red_mode < 0 || red_mode > 2)
        dc_fail(c, "reduction must be 0 (none), 1 (mean) or 2 (sum)");
    if (red_mode) {
        int64_t dims[GR_MAX_RANK], count;
        int nd = red_dims(c, e, -1, NULL, dims, &count);
        e = red_mode == 1 ? mean(c, e, nd, dims, 0, count) : dc_red(c, "aten.sum.dim_IntList", e, nd, dims, 0);
    }
    out[0] = e;
    return 1;
}

/* ---- Images: batch and group norm, pooling ---- */

/* Per-channel p (C elements) seen as (C, 1, ..) against a rank-`rank` input
 * (N, C, ...): broadcast from dim 1. */
static int per_channel(dctx *c, int p, int rank)
{
    int64_t shape[GR_MAX_RANK];
    shape[0] = dc_numel(&c->d->values[p].type);
    for (int d = 1; d < rank - 1; d++)
        shape[d] = 1;
    return dc_reshape(c, p, rank - 1, shape);
}

/* The sums of x (N, C, ...) over every dim but 1, kept as (1, C, 1, ..):
 * per sample and channel first, then over the samples (one reduction over
 * samples and pixels at once is more than the back half does). */
static int channel_sums(dctx *c, int x)
{
    gr_ttype t = dc_T(c, x);
    int64_t dims[GR_MAX_RANK], nd = 0, first = 0;
    for (int d = 2; d < t.rank; d++)
        dims[nd++] = d;
    int s = nd ? dc_red(c, "aten.sum.dim_IntList", x, (int)nd, dims, 1) : x;
    return dc_red(c, "aten.sum.dim_IntList", s, 1, &first, 1);
}

/* native_batch_norm(input, weight, bias, running_mean, running_var, training,
 * momentum, eps) -> (out, save_mean, save_invstd), and
 * _native_batch_norm_legit_no_training (no training argument): not training,
 * (x - running_mean) * rsqrt(running_var + eps) * weight + bias and two empty
 * statistics; training, the batch's own statistics over all dims but 1 (as
 * layer norm's), returned per channel.  The running statistics are not
 * updated (a graph has no state). */
static int r_batch_norm(dctx *c, const gr_node *n, int *out)
{
    int legit = n->base[0] == '_';
    int x = dc_val(c, n, 0, "input"), w = dc_opt_val(c, n, 1, "weight"), b = dc_opt_val(c, n, 2, "bias");
    int rm = dc_opt_val(c, n, 3, "running_mean"), rv = dc_opt_val(c, n, 4, "running_var");
    const gr_arg *tr = legit ? NULL : gr_node_arg(n, 5, "training");
    int training = tr && tr->kind == GR_ARG_BOOL && tr->i;
    double eps = dc_num(c, n, legit ? 6 : 7, "eps", 1e-5);
    gr_ttype t = dc_T(c, x);
    if (t.rank < 2)
        dc_fail(c, "input must have a channel dimension (rank 2 or more)");
    int64_t C = t.shape[1];
    int y;
    if (training) {
        int64_t count = dc_numel(&t) / (C ? C : 1);
        if (!count || !C)
            dc_fail(c, "the batch statistics of an empty input");
        int m = dc_bins(c, "aten.div.Tensor", channel_sums(c, x), (double)count), xc = dc_bin(c, "aten.sub.Tensor", x, m);
        int sq = dc_bins(c, "aten.mul.Tensor", dc_bin(c, "aten.mul.Tensor", xc, xc), 1.0 / (double)count);
        int rstd = dc_un(c, "aten.rsqrt.default", dc_bins(c, "aten.add.Tensor", channel_sums(c, sq), eps));
        y = dc_bin(c, "aten.mul.Tensor", xc, rstd);
        out[1] = dc_reshape(c, m, 1, &C);
        out[2] = dc_reshape(c, rstd, 1, &C);
    } else {
        if (rm < 0 || rv < 0)
            dc_fail(c, "needs running_mean and running_var when not training");
        int rstd = dc_un(c, "aten.rsqrt.default", dc_bins(c, "aten.add.Tensor", rv, eps));
        y = dc_bin(c, "aten.mul.Tensor", dc_bin(c, "aten.sub.Tensor", x, per_channel(c, rm, t.rank)),
                per_channel(c, rstd, t.rank));
        /* empty statistics (PyTorch's CPU kernel), or per channel where the
         * graph declares them so (a trace on the meta device): the running
         * mean and the rstd used */
        const gr_value *sv = &c->g->values[n->out];
        const int64_t zero = 0;
        int per = sv->ntuple == 3 && sv->tuple[1].rank == 1 && sv->tuple[1].shape[0] == C && C;
        /* (of the declared type: a half or bfloat16 model's are its running statistics') */
        const int sdt = sv->ntuple == 3 ? sv->tuple[1].dtype : GR_F32;
        out[1] = per ? rm : dc_full(c, 1, &zero, 0, sdt);
        out[2] = per ? rstd : dc_full(c, 1, &zero, 0, sdt);
    }
    if (w >= 0)
        y = dc_bin(c, "aten.mul.Tensor", y, per_channel(c, w, t.rank));
    if (b >= 0)
        y = dc_bin(c, "aten.add.Tensor", y, per_channel(c, b, t.rank));
    out[0] = y;
    return 3;
}

/* The sums of x (N, C, ...) over each group's elements, (N, G, 1): per
 * channel first (a reduction over its own elements, as instance norm's),
 * then over the group's channels (a reduction over several dims at once,
 * channels and pixels, is more than the back half does). */
static int group_sums(dctx *c, int x, int64_t G)
{
    gr_ttype t = dc_T(c, x);
    int64_t dims[GR_MAX_RANK], nd = 0, last = 2, gs[3] = {t.shape[0], G, t.shape[1] / G};
    for (int d = 2; d < t.rank; d++)
        dims[nd++] = d;
    int s = nd ? dc_red(c, "aten.sum.dim_IntList", x, (int)nd, dims, 0) : x;
    return dc_red(c, "aten.sum.dim_IntList", dc_reshape(c, s, 3, gs), 1, &last, 1);
}

/* native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean,
 * rstd): mean = group_sums(x) / count, xc = x - mean (seen as (N, G, rest)),
 * rstd = rsqrt(group_sums(xc * xc * (1/count)) + eps), out = xc * rstd, seen
 * back; weight and bias per channel. */
static int r_group_norm(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "input"), w = dc_opt_val(c, n, 1, "weight"), b = dc_opt_val(c, n, 2, "bias");
    int64_t G = (int64_t)dc_num(c, n, 6, "group", 0);
    double eps = dc_num(c, n, 7, "eps", 1e-5);
    gr_ttype t = dc_T(c, x);
    if (t.rank < 2 || G <= 0 || t.shape[1] % G)
        dc_fail(c, "the groups must divide the input's channels (dim 1)");
    int64_t N = t.shape[0], per = N && G ? dc_numel(&t) / (N * G) : 0;
    if (!per)
        dc_fail(c, "the statistics of an empty group");
    int64_t gs[3] = {N, G, per}, ns[2] = {N, G};
    int m = dc_bins(c, "aten.div.Tensor", group_sums(c, x, G), (double)per);
    int xc = dc_bin(c, "aten.sub.Tensor", dc_reshape(c, x, 3, gs), m);
    int sq = dc_reshape(c, dc_bins(c, "aten.mul.Tensor", dc_bin(c, "aten.mul.Tensor", xc, xc), 1.0 / (double)per), t.rank, t.shape);
    int rstd = dc_un(c, "aten.rsqrt.default", dc_bins(c, "aten.add.Tensor", group_sums(c, sq, G), eps));
    int y = dc_reshape(c, dc_bin(c, "aten.mul.Tensor", xc, rstd), t.rank, t.shape);
    if (w >= 0)
        y = dc_bin(c, "aten.mul.Tensor", y, per_channel(c, w, t.rank));
    if (b >= 0)
        y = dc_bin(c, "aten.add.Tensor", y, per_channel(c, b, t.rank));
    out[0] = y;
    out[1] = dc_reshape(c, m, 2, ns);
    out[2] = dc_reshape(c, rstd, 2, ns);
    return 3;
}

/* A 2-D or 3-D pooling's window over the last nd dims: kernel, stride,
 * padding, dilation and the output's extent per axis. */
typedef struct {
    int nd;
    int64_t k[3], s[3], p[3], d[3], in[3], out[3];
} pool_win;

/* The spatial axes of a pooling op: 3 for the *3d ones, else 2. */
static int pool_axes(const gr_node *n)
{
    return strstr(n->base, "3d") ? 3 : 2;
}

/* PyTorch's pooling_output_shape */
static int64_t pool_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p)
        o--;
    return o;
}

/* pool(self, kernel_size, stride=[], padding=0[, dilation=1], ceil_mode) */
static pool_win pool_args(dctx *c, const gr_node *n, int x, int with_dilation)
{
    pool_win g = {.nd = pool_axes(n)};
    int64_t v[4][GR_MAX_RANK] = {{0}, {0}, {0, 0, 0}, {1, 1, 1}}; /* (dc_ints writes up to GR_MAX_RANK) */
    const char *keys[4] = {"kernel_size", "stride", "padding", "dilation"};
    for (int i = 0; i < (with_dilation ? 4 : 3); i++) {
        int cnt = dc_ints(c, n, i + 1, keys[i], v[i]);
        if ((cnt > 1 && cnt != g.nd) || (i == 0 && cnt <= 0))
            dc_fail(c, "argument %s must be one or %d ints", keys[i], g.nd);
        for (int a = 1; cnt == 1 && a < g.nd; a++)
            v[i][a] = v[i][0];
        if (i == 1 && cnt <= 0)
            memcpy(v[1], v[0], sizeof v[1]);
    }
    const gr_arg *cm = gr_node_arg(n, with_dilation ? 5 : 4, "ceil_mode");
    int ceil_mode = cm && cm->kind == GR_ARG_BOOL && cm->i;
    gr_ttype t = dc_T(c, x);
    if (t.rank < g.nd + 1 || !dc_is_float(t.dtype))
        dc_fail(c, "input must be a float tensor of rank %d or more", g.nd + 1);
    for (int a = 0; a < g.nd; a++) {
        g.k[a] = v[0][a], g.s[a] = v[1][a], g.p[a] = v[2][a], g.d[a] = v[3][a];
        if (g.k[a] <= 0 || g.s[a] <= 0 || g.d[a] <= 0 || g.p[a] < 0 || 2 * g.p[a] > g.k[a])
            dc_fail(c, "kernel, stride and dilation must be positive, padding at most half the kernel");
        g.in[a] = t.shape[t.rank - g.nd + a];
        g.out[a] = pool_extent(g.in[a], g.k[a], g.s[a], g.p[a], g.d[a], ceil_mode);
        if (g.out[a] <= 0 || !g.in[a])
            dc_fail(c, "the pooling has an empty input or output");
    }
    return g;
}

/* x padded with v so that every window's slice lies inside it */
static int pool_pad(dctx *c, int x, const pool_win *g, double v)
{
    int64_t pad[6];
    int any = 0;
    for (int a = 0; a < g->nd; a++) {
        int64_t hi = (g->out[a] - 1) * g->s[a] + (g->k[a] - 1) * g->d[a] + 1 - g->in[a] - g->p[a];
        pad[2 * (g->nd - 1 - a)] = g->p[a];
        pad[2 * (g->nd - 1 - a) + 1] = hi > 0 ? hi : 0;
        any |= g->p[a] || hi > 0;
    }
    return any ? dc_pad(c, x, g->nd, pad, v) : x;
}

/* Tap j of axis a at every output position: a strided slice of y along a. */
static int axis_tap(dctx *c, int y, const pool_win *g, int a, int64_t j)
{
    const int64_t h0 = j * g->d[a];
    return dc_slice(c, y, dc_T(c, y).rank - g->nd + a, h0, h0 + (g->out[a] - 1) * g->s[a] + 1, g->s[a]);
}

/* Window element i (one tap per axis) of every output position: a strided
 * slice of the padded x. */
static int pool_tap(dctx *c, int xp, const pool_win *g, const int64_t *i)
{
    int y = xp;
    for (int a = 0; a < g->nd; a++)
        y = axis_tap(c, y, g, a, i[a]);
    return y;
}

/* The elements of a window (taps over every axis). */
static int64_t pool_taps(const pool_win *g)
{
    int64_t taps = 1;
    for (int a = 0; a < g->nd; a++)
        taps *= g->k[a];
    return taps;
}

/* v, along axis a of nd, seen as [out[a], 1, ..]: unsqueezed for the axes
 * after a, so that the axes' vectors combine by broadcasting. */
static int axis_vector(dctx *c, int v, int a, int nd)
{
    for (int b = a + 1; b < nd; b++)
        v = dc_unsqueeze(c, v, b - a);
    return v;
}

/* The windows of the padded x combined by op (maximum, add), separably
 * from the last axis: first the k column taps of every row (strided slices
 * inside the sticks: a staged load each), then the row taps of that
 * (strided rows: plain loads), then the depth taps, each a chain in tap
 * order. */
static int pool_reduce(dctx *c, int xp, const pool_win *g, const char *op)
{
    int y = xp;
    for (int a = g->nd - 1; a >= 0; a--) {
        int acc = -1;
        for (int64_t j = 0; j < g->k[a]; j++) {
            const int tap = axis_tap(c, y, g, a, j);
            acc = acc < 0 ? tap : dc_bin(c, op, acc, tap);
        }
        y = acc;
    }
    return y;
}

/* The flat input index ((d H) + h) W + w of window element i at each
 * output position, i64 [out..] */
static int pool_flat_index(dctx *c, const pool_win *g, const int64_t *i)
{
    int pos[3], y = -1;
    for (int a = 0; a < g->nd; a++) {
        int64_t scale = 1, h0 = i[a] * g->d[a] - g->p[a];
        for (int b = a + 1; b < g->nd; b++)
            scale *= g->in[b];
        gr_ttype th = {.dtype = GR_I64, .rank = 1, .shape = {g->out[a]}};
        pos[a] = DC_EMIT(c, "aten.arange.start_step", th, da_int(h0 * scale), da_int((h0 + g->out[a] * g->s[a]) * scale),
                         da_int(g->s[a] * scale), da_kw("dtype", da_dtype(GR_I64)));
    }
    for (int a = 0; a < g->nd; a++) {
        const int v = axis_vector(c, pos[a], a, g->nd);
        y = y < 0 ? v : dc_bin(c, "aten.add.Tensor", y, v);
    }
    return y;
}

/* Whether window element i of every output position lies in x (not in
 * its padding): -1 when all do, else a bool [out..] mask. */
static int pool_in_bounds(dctx *c, const pool_win *g, const int64_t *i)
{
    int y = -1;
    for (int a = 0; a < g->nd; a++) {
        int64_t h0 = i[a] * g->d[a] - g->p[a], h1 = h0 + (g->out[a] - 1) * g->s[a];
        if (h0 >= 0 && h1 < g->in[a])
            continue;
        gr_ttype th = {.dtype = GR_I64, .rank = 1, .shape = {g->out[a]}};
        int pos = DC_EMIT(c, "aten.arange.start_step", th, da_int(h0), da_int(h1 + 1), da_int(g->s[a]),
                          da_kw("dtype", da_dtype(GR_I64)));
        const int v = axis_vector(c, dc_bin(c, "aten.logical_and.default", dc_cmps(c, "aten.ge.Scalar", pos, 0),
                                            dc_cmps(c, "aten.lt.Scalar", pos, (double)g->in[a])),
                                  a, g->nd);
        y = y < 0 ? v : dc_bin(c, "aten.logical_and.default", y, v);
    }
    return y;
}

/* max_pool2d_with_indices, max_pool3d_with_indices(self, kernel_size,
 * stride=[], padding=0, dilation=1, ceil_mode=False) -> (out, indices): x
 * padded with -inf, the maximum of the window's strided slices; the index
 * as PyTorch's (val > max || isnan(val) in tap order): the first window
 * element of x (not its padding) equal to the maximum, a where chain from
 * the last; then, over it, the last NaN's.  Built only when node n's
 * indices are read (a where per tap: a global pool's hundreds of taps are
 * slow to compile, even to drop). */
static int max_pool(dctx *c, const gr_node *n, int x, const pool_win *g, int *out)
{
    int xp = pool_pad(c, x, g, -INFINITY), m = pool_reduce(c, xp, g, "aten.maximum.default"), ix = -1;
    if (!dc_result_read(c, n, 1)) {
        out[0] = m;
        out[1] = dc_full(c, dc_T(c, m).rank, dc_T(c, m).shape, 0, GR_I64); /* never read */
        return 2;
    }
    const int64_t taps = pool_taps(g);
    int *tap = ir_xalloc((size_t)taps * sizeof *tap), *flat = ir_xalloc((size_t)taps * sizeof *flat);
    for (int64_t q = taps - 1; q >= 0; q--) {
        int64_t i[3], rest = q;
        for (int a = g->nd - 1; a >= 0; a--) {
            i[a] = rest % g->k[a];
            rest /= g->k[a];
        }
        flat[q] = pool_flat_index(c, g, i);
        tap[q] = pool_tap(c, xp, g, i);
        if (ix < 0) {
            ix = flat[q];
            continue;
        }
        int hit = dc_cmpv(c, "aten.eq.Tensor", tap[q], m), inb = pool_in_bounds(c, g, i);
        if (inb >= 0)
            hit = dc_bin(c, "aten.logical_and.default", hit, inb);
        ix = dc_where(c, hit, flat[q], ix);
    }
    for (int64_t q = 0; q < taps; q++)
        ix = dc_where(c, dc_cmpv(c, "aten.ne.Tensor", tap[q], tap[q]), flat[q], ix);
    free(tap);
    free(flat);
    out[0] = m;
    out[1] = dc_expand(c, ix, dc_T(c, m).rank, dc_T(c, m).shape);
    return 2;
}

static int r_max_pool(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    pool_win g = pool_args(c, n, x, 1);
    return max_pool(c, n, x, &g, out);
}

/* avg_pool2d, avg_pool3d(self, kernel_size, stride=[], padding=0,
 * ceil_mode=False, count_include_pad=True, divisor_override=None): x
 * padded with 0, the sum of the window's strided slices over the divisor:
 * divisor_override, or the count of window elements (padding included or
 * not) per position, the same sum over a padded tensor of ones. */
static int r_avg_pool(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    pool_win g = pool_args(c, n, x, 0);
    const gr_arg *ci = gr_node_arg(n, 5, "count_include_pad");
    int incl = !(ci && ci->kind == GR_ARG_BOOL && !ci->i);
    const gr_arg *dv = gr_node_arg(n, 6, "divisor_override");
    int has_div = dv && dv->kind != GR_ARG_NONE;
    double div = dc_num(c, n, 6, "divisor_override", 0);
    if (has_div && div == 0)
        dc_fail(c, "divisor_override must not be zero");
    int xp = pool_pad(c, x, &g, 0), s, cnt = -1;
    /* the count: ones over the input (and its padding when counted; PyTorch
     * counts padding up to in + pad, not the ceil_mode overhang) */
    int64_t ext[3];
    pool_win gc = g;
    for (int a = 0; a < g.nd; a++) {
        ext[a] = g.in[a] + (incl ? 2 * g.p[a] : 0);
        if (incl)
            gc.in[a] = ext[a], gc.p[a] = 0;
    }
    int ones = has_div ? -1 : pool_pad(c, dc_full(c, g.nd, ext, 1, GR_F32), &gc, 0);
    s = pool_reduce(c, xp, &g, "aten.add.Tensor");
    if (ones >= 0)
        cnt = pool_reduce(c, ones, &gc, "aten.add.Tensor");
    out[0] = has_div ? dc_bins(c, "aten.div.Tensor", s, div) : dc_bin(c, "aten.div.Tensor", s, cnt);
    return 1;
}

int dc_result_read(dctx *c, const gr_node *n, int k)
{
    for (int i = 0; i < c->g->nnodes; i++) {
        const gr_node *m = &c->g->nodes[i];
        if (!strcmp(m->op, "getitem") && m->nargs == 2 && m->args[0].kind == GR_ARG_VALUE &&
            m->args[0].value == n->out && m->args[1].kind == GR_ARG_INT && m->args[1].i == k)
            return 1;
    }
    return 0;
}

/* One axis d of an adaptive pooling with uneven windows (output i over
 * [floor(i * in / out), ceil((i + 1) * in / out))): the runs of outputs
 * whose windows have one length and evenly stepping starts, each the op
 * (add, maximum) chained over its taps, strided slices (one element
 * expanded when the starts repeat), joined by cat. */
typedef struct {
    int x, ix;      /* the values, and (or -1) each value's index so far */
    int d;          /* the axis */
    int64_t scale;  /* an index along d counts scale in the flat index */
} adaptive_in;

/* Tap k of a run of len outputs whose windows start at s0, stepping st:
 * a strided slice of v along d, or its element expanded (st = 0). */
static int run_tap(dctx *c, int v, int d, int64_t from, int64_t st, int64_t len)
{
    if (st)
        return dc_slice(c, v, d, from, from + (len - 1) * st + 1, st);
    gr_ttype e = dc_T(c, v);
    e.shape[d] = len;
    return dc_expand(c, dc_slice(c, v, d, from, from + 1, 1), e.rank, e.shape);
}

/* The flat index of tap k of a run (the position along d times scale, plus
 * the tap's index so far), shaped to broadcast along d. */
static int run_tap_index(dctx *c, const adaptive_in *a, int rank, int64_t from, int64_t st, int64_t len)
{
    gr_ttype th = {.dtype = GR_I64, .rank = 1, .shape = {len}};
    int pos = st ? DC_EMIT(c, "aten.arange.start_step", th, da_int(from * a->scale),
                           da_int((from + (len - 1) * st + 1) * a->scale), da_int(st * a->scale),
                           da_kw("dtype", da_dtype(GR_I64)))
                 : dc_full(c, 1, &len, (double)(from * a->scale), GR_I64);
    int64_t sh[GR_MAX_RANK];
    for (int i = 0; i < rank; i++)
        sh[i] = i == a->d ? len : 1;
    pos = dc_reshape(c, pos, rank, sh);
    return a->ix < 0 ? pos : dc_bin(c, "aten.add.Tensor", run_tap(c, a->ix, a->d, from, st, len), pos);
}

/* One run's maximum's index as PyTorch's (val > max || isnan(val) in tap
 * order): the first tap equal to the maximum m, a where chain from the
 * last tap; then, over it, the last NaN's. */
static int run_argmax(dctx *c, const adaptive_in *a, int m, int64_t s0, int64_t w, int64_t st, int64_t len)
{
    gr_ttype tm = dc_T(c, m);
    int ix = -1;
    for (int64_t k = w - 1; k >= 0; k--) {
        int at = run_tap_index(c, a, tm.rank, s0 + k, st, len);
        if (ix < 0) {
            ix = dc_expand(c, at, tm.rank, tm.shape);
            continue;
        }
        int tap = run_tap(c, a->x, a->d, s0 + k, st, len);
        ix = dc_where(c, dc_cmpv(c, "aten.eq.Tensor", tap, m), at, ix);
    }
    for (int64_t k = 0; k < w; k++) {
        int tap = run_tap(c, a->x, a->d, s0 + k, st, len);
        ix = dc_where(c, dc_cmpv(c, "aten.ne.Tensor", tap, tap), run_tap_index(c, a, tm.rank, s0 + k, st, len), ix);
    }
    return ix;
}

/* Adaptive pooling along axis a->d to `out` (window i: [floor(i * in /
 * out), ceil((i + 1) * in / out))): the runs of outputs whose windows have
 * one length and evenly stepping starts, each the op (add, maximum)
 * chained over its taps (run_tap), joined by cat.  iy (not NULL, a
 * maximum): the index of each maximum as well (run_argmax). */
static int adaptive_axis(dctx *c, const adaptive_in *a, int64_t out, const char *op, int *iy)
{
    gr_ttype t = dc_T(c, a->x);
    int64_t in = t.shape[a->d];
    int v[256], vi[256], nv = 0;
#define WIN_S(i) ((i) * in / out)
#define WIN_LEN(i) ((((i) + 1) * in + out - 1) / out - WIN_S(i))
    for (int64_t i = 0; i < out;) {
        int64_t s0 = WIN_S(i), w = WIN_LEN(i), st = i + 1 < out ? WIN_S(i + 1) - s0 : 1, len = 1;
        while (i + len < out && WIN_LEN(i + len) == w && WIN_S(i + len) - WIN_S(i + len - 1) == st)
            len++;
        if (nv == 256)
            dc_fail(c, "adaptive pooling of %lld to %lld needs over 256 pieces", (long long)in, (long long)out);
        int y = -1;
        for (int64_t k = 0; k < w; k++) {
            int tap = run_tap(c, a->x, a->d, s0 + k, st, len);
            y = y < 0 ? tap : dc_bin(c, op, y, tap);
        }
        if (iy)
            vi[nv] = run_argmax(c, a, y, s0, w, st, len);
        v[nv++] = y;
        i += len;
    }
#undef WIN_S
#undef WIN_LEN
    t.shape[a->d] = out;
    if (iy) {
        gr_ttype ti = t;
        ti.dtype = GR_I64;
        *iy = nv == 1 ? vi[0] : DC_EMIT(c, "aten.cat.default", ti, da_vals(nv, vi), da_int(a->d));
    }
    return nv == 1 ? v[0] : DC_EMIT(c, "aten.cat.default", t, da_vals(nv, v), da_int(a->d));
}

/* The lengths of the out adaptive windows over in elements, f32[out]: a
 * cat of constants, one per run of equal lengths. */
static int window_lengths(dctx *c, int64_t in, int64_t out)
{
    int v[256], nv = 0;
    for (int64_t i = 0; i < out && nv < 256;) {
        int64_t w = ((i + 1) * in + out - 1) / out - i * in / out, len = 1;
        while (i + len < out && ((i + len + 1) * in + out - 1) / out - (i + len) * in / out == w)
            len++;
        v[nv++] = dc_full(c, 1, &len, (double)w, GR_F32);
        i += len;
    }
    if (nv == 256)
        dc_fail(c, "adaptive pooling of %lld to %lld needs over 256 pieces", (long long)in, (long long)out);
    gr_ttype t = {.dtype = GR_F32, .rank = 1, .shape = {out}};
    return nv == 1 ? v[0] : DC_EMIT(c, "aten.cat.default", t, da_vals(nv, v), da_int(0));
}

/* _adaptive_avg_pool2d, _adaptive_avg_pool3d(self, output_size),
 * adaptive_max_pool2d, adaptive_max_pool3d -> (out, indices): output sizes
 * dividing the input are avg_pool or max_pool_with_indices with kernel =
 * stride = in / out; uneven windows reduce per axis (adaptive_axis: from
 * the last axis), the mean over the window's size; their max's indices, when
 * read, are refused. */
static int r_adaptive_pool(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self"), is_max = strstr(n->base, "max") != NULL, even = 1;
    int64_t os[GR_MAX_RANK];
    gr_ttype t = dc_T(c, x);
    pool_win g = {.nd = pool_axes(n)};
    if (dc_ints(c, n, 1, "output_size", os) != g.nd || t.rank < g.nd + 1 || !dc_is_float(t.dtype))
        dc_fail(c, "needs a float input of rank %d or more and %d output sizes", g.nd + 1, g.nd);
    for (int a = 0; a < g.nd; a++) {
        g.in[a] = t.shape[t.rank - g.nd + a];
        g.out[a] = os[a];
        if (os[a] <= 0 || !g.in[a])
            dc_fail(c, "an empty input or output");
        even &= g.in[a] % os[a] == 0;
        g.k[a] = g.s[a] = g.in[a] / os[a];
        g.p[a] = 0, g.d[a] = 1;
    }
    if (even && is_max)
        return max_pool(c, n, x, &g, out);
    if (even) {
        out[0] = dc_bins(c, "aten.div.Tensor", pool_reduce(c, x, &g, "aten.add.Tensor"), (double)pool_taps(&g));
        return 1;
    }
    const char *op = is_max ? "aten.maximum.default" : "aten.add.Tensor";
    int want_ix = is_max && dc_result_read(c, n, 1), ix = -1, y = x;
    int64_t scale = 1;
    for (int a = g.nd - 1; a >= 0; a--) {
        adaptive_in ax = {y, ix, t.rank - g.nd + a, scale};
        y = adaptive_axis(c, &ax, os[a], op, want_ix ? &ix : NULL);
        scale *= g.in[a];
    }
    if (!is_max) { /* the window sizes: (out[0], 1..) times (out[1], 1..) .., index expressions alone */
        int sizes = -1;
        for (int a = 0; a < g.nd; a++) {
            const int v = axis_vector(c, window_lengths(c, g.in[a], os[a]), a, g.nd);
            sizes = sizes < 0 ? v : dc_bin(c, "aten.mul.Tensor", sizes, v);
        }
        out[0] = dc_bin(c, "aten.div.Tensor", y, sizes);
        return 1;
    }
    out[0] = y;
    out[1] = want_ix ? ix : dc_full(c, dc_T(c, y).rank, dc_T(c, y).shape, 0, GR_I64); /* never read */
    return 2;
}

/* ---- Padding modes and nearest upsampling: slices, expand and cat ---- */

/* x widened along dim d by lo and hi elements, a cat of slices: mirrored
 * elements (reflect: x[lo], .., x[1] before, x[n-2], .. after) or the edge
 * element expanded (replicate).  A negative lo or hi crops that side
 * first: PyTorch mirrors and repeats about the cropped edges. */
static int pad_dim(dctx *c, int x, int d, int64_t lo, int64_t hi, int replicate)
{
    gr_ttype t = dc_T(c, x);
    int64_t n = t.shape[d];
    if ((lo < 0 || hi < 0) && n + (lo < 0 ? lo : 0) + (hi < 0 ? hi : 0) > 0) {
        x = dc_slice(c, x, d, lo < 0 ? -lo : 0, hi < 0 ? n + hi : n, 1);
        t = dc_T(c, x);
        n = t.shape[d];
        lo = lo < 0 ? 0 : lo;
        hi = hi < 0 ? 0 : hi;
    }
    if (lo < 0 || hi < 0 || !n || (!replicate && (lo >= n || hi >= n)) || lo + hi > 200)
        dc_fail(c, "padding of dimension %d out of range for its size %lld (or over 200)", d, (long long)n);
    int v[256], nv = 0;
    for (int64_t k = lo; k > 0 && !replicate; k--)
        v[nv++] = dc_slice(c, x, d, k, k + 1, 1);
    if (replicate && lo) {
        t.shape[d] = lo;
        v[nv++] = dc_expand(c, dc_slice(c, x, d, 0, 1, 1), t.rank, t.shape);
    }
    v[nv++] = x;
    for (int64_t k = 1; k <= hi && !replicate; k++)
        v[nv++] = dc_slice(c, x, d, n - 1 - k, n - k, 1);
    if (replicate && hi) {
        t.shape[d] = hi;
        v[nv++] = dc_expand(c, dc_slice(c, x, d, n - 1, n, 1), t.rank, t.shape);
    }
    t.shape[d] = n + lo + hi;
    return nv == 1 ? x : DC_EMIT(c, "aten.cat.default", t, da_vals(nv, v), da_int(d));
}

/* reflection_padNd / replication_padNd(self, padding) */
static int r_mode_pad(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "self");
    int64_t pad[2 * GR_MAX_RANK];
    int np = dc_ints(c, n, 1, "padding", pad), rank = dc_T(c, x).rank;
    if (np <= 0 || np % 2 || np / 2 > rank)
        dc_fail(c, "argument padding must be an even number of ints, at most 2 per dimension");
    for (int k = 0; k < np / 2; k++)
        x = pad_dim(c, x, rank - 1 - k, pad[2 * k], pad[2 * k + 1], strstr(n->base, "replication") != NULL);
    out[0] = x;
    return 1;
}

/* Source index of output i of a nearest resampling (PyTorch's nearest_idx:
 * the scale and the product in float; nearest-exact's from the pixel
 * centre, half = 0.5, its product in double), clamped to the input. */
static int64_t nearest_src(int64_t i, float scale, int64_t in, double half)
{
    int64_t s = (int64_t)(half > 0 ? floorf((float)(((double)i + half) * scale)) : floorf((float)i * scale));
    return s < in - 1 ? s : in - 1;
}

/* Whether axis d of t goes by nearest_last_product: an expand on the last
 * axis makes a last dim of `up` elements, each row of it a padded stick
 * (32x the bytes at up 2).  Taken while the matrix is no larger than the
 * output (in <= rows): a wider one costs more to load than those sticks
 * (docs/compiler.md). */
static int nearest_last_pays(const gr_ttype *t, int d)
{
    int64_t in = t->shape[t->rank - 1];
    return d == t->rank - 1 && dc_is_float(t->dtype) && in <= dc_numel(t) / in;
}

/* The last axis of x repeated `up` times per element: the rows times a
 * constant (in x in*up) 0/1 matrix. */
static int nearest_last_product(dctx *c, int x, int64_t up)
{
    gr_ttype t = dc_T(c, x);
    int64_t in = t.shape[t.rank - 1];
    float *m = calloc((size_t)(in * in * up), sizeof *m);
    if (!m)
        abort();
    for (int64_t o = 0; o < in * up; o++)
        m[(o / up) * in * up + o] = 1;
    gr_ttype mt = {.dtype = t.dtype, .rank = 2, .shape = {in, in * up}};
    return dc_last_axis_times(c, x, dc_const(c, mt, m));
}

/* One axis d of a nearest resampling to `to` elements: an integer factor up
 * (unsqueeze, expand, reshape; the last axis of a float tensor of at least
 * as many rows as elements a row a product, above); else the runs of
 * outputs whose sources step evenly, each a strided slice (or one element
 * expanded), joined by cat. */
static int nearest_axis(dctx *c, int x, int d, int64_t to, float scale, double half)
{
    gr_ttype t = dc_T(c, x);
    int64_t in = t.shape[d], up = to / in, ok_up = up >= 1;
    for (int64_t i = 0; i < to; i++)
        ok_up &= nearest_src(i, scale, in, half) == i / (up ? up : 1);
    if (ok_up && up == 1)
        return x;
    if (ok_up && nearest_last_pays(&t, d))
        return nearest_last_product(c, x, up);
    if (ok_up) {
        int u = dc_unsqueeze(c, x, d + 1);
        gr_ttype e = dc_T(c, u);
        e.shape[d + 1] = up;
        u = dc_expand(c, u, e.rank, e.shape);
        t.shape[d] = to;
        return dc_reshape(c, u, t.rank, t.shape);
    }
    int v[256], nv = 0;
    for (int64_t i = 0; i < to;) {
        int64_t s0 = nearest_src(i, scale, in, half), step = i + 1 < to ? nearest_src(i + 1, scale, in, half) - s0 : 1, len = 1;
        while (i + len < to && nearest_src(i + len, scale, in, half) - nearest_src(i + len - 1, scale, in, half) == step)
            len++;
        if (nv == 256)
            dc_fail(c, "nearest resampling of %lld to %lld elements needs over 256 pieces", (long long)in, (long long)to);
        if (step) {
            v[nv++] = dc_slice(c, x, d, s0, s0 + (len - 1) * step + 1, step);
        } else {
            gr_ttype e = t;
            e.shape[d] = len;
            v[nv++] = dc_expand(c, dc_slice(c, x, d, s0, s0 + 1, 1), e.rank, e.shape);
        }
        i += len;
    }
    t.shape[d] = to;
    return nv == 1 ? v[0] : DC_EMIT(c, "aten.cat.default", t, da_vals(nv, v), da_int(d));
}

/* upsample_nearest1d/2d/3d(input, output_size, scales...) and .vec(input,
 * output_size, scale_factors), and _upsample_nearest_exact1d/2d/3d (mode
 * "nearest-exact"): each of the last 1 to 3 axes by nearest_axis */
static int r_upsample_nearest(dctx *c, const gr_node *n, int *out)
{
    int x = dc_val(c, n, 0, "input"), nd = strstr(n->base, "3d") ? 3 : strstr(n->base, "2d") ? 2 : 1;
    double half = strstr(n->base, "exact") ? 0.5 : 0;
    gr_ttype t = dc_T(c, x);
    int64_t os[GR_MAX_RANK] = {0};
    int cnt = dc_ints(c, n, 1, "output_size", os);
    if (t.rank < nd + 1 || (cnt >= 0 && cnt != nd))
        dc_fail(c, "needs an input of rank %d or more and %d output sizes", nd + 1, nd);
    for (int a = 0; a < nd; a++) {
        const gr_arg *f = gr_upsample_scale(n, 2, nd, a);
        double v = dc_is_number(f) ? (f->kind == GR_ARG_FLOAT ? f->f : (double)f->i) : 0;
        int d = t.rank - nd + a;
        int64_t in = t.shape[d], to = cnt > 0 ? os[a] : (int64_t)floor((double)in * v);
        if (to <= 0 || !in)
            dc_fail(c, "an empty input or output");
        x = nearest_axis(c, x, d, to, v > 0 ? (float)(1 / v) : (float)in / (float)to, half);
    }
    out[0] = x;
    return 1;
}

/* ---- The table ---- */

static const struct {
    const char *op; /* base name: the ATen op without namespace and overload */
    dc_rule_fn fn;
    const char *into;
} rules[] = {
    {"native_layer_norm", r_native_layer_norm, "(out, mean, rstd): mean = sum/N, xc = x - mean, "
                                               "rstd = rsqrt(sum(xc*xc*(1/N)) + eps), out = xc*rstd*weight + bias"},
    {"layer_norm", r_layer_norm, "as native_layer_norm, out only"},
    {"_softmax", r_softmax, "amax, sub, exp, sum, div"},
    {"softmax", r_softmax, "amax, sub, exp, sum, div (after a cast to dtype)"},
    {"_log_softmax", r_softmax, "amax, sub, exp, sum, log, sub"},
    {"log_softmax", r_softmax, "amax, sub, exp, sum, log, sub"},
    {"gelu", r_gelu, "x*0.5 * (1 + erf(x*0.70710678)); approximate=\"tanh\": "
                     "x*0.5 * (1 + tanh(0.79788456 * (x + c*c*0.044715*c))), c = clamp(x, -64, 64)"},
    {"silu", r_silu, "x * sigmoid(x)"},
    {"square", r_square, "x * x"},
    {"linear", r_linear, "t(weight), mm (inputs of rank > 2 reshaped to 2-D and back), add bias"},
    {"addmm", r_addmm, "mm, add (bias*beta + product*alpha)"},
    {"baddbmm", r_baddbmm, "bmm, add (bias*beta + product*alpha)"},
    {"add", r_add_alpha, "with alpha != 1: add(x, other*alpha)"},
    {"sub", r_add_alpha, "with alpha != 1: sub(x, other*alpha)"},
    {"rsub", r_rsub, "other - x*alpha"},
    {"clamp", r_clamp, "clamp_min, clamp_max"},
    {"masked_fill", r_masked_fill, "where(mask, value, x)"},
    {"mean", r_mean, "sum, div"},
    {"var", r_var, "mean, sub, mul, scale by 1/(N - correction), sum"},
    {"std", r_var, "as var, then sqrt"},
    {"var_mean", r_var, "(var, mean) as var"},
    {"split", r_split, "slice per piece"},
    {"split_with_sizes", r_split, "slice per piece"},
    {"chunk", r_split, "slice per piece"},
    {"unbind", r_unbind, "select per piece"},
    {"stack", r_stack, "unsqueeze each, cat"},
    {"repeat_interleave", r_repeat_interleave, "unsqueeze, expand, reshape (int repeats); of repeats alone: "
                                               "position j is #{i: cumsum(repeats)[i] <= j} (total within 1024)"},
    {"repeat", r_repeat, "reshape, expand, reshape"},
    {"pixel_shuffle", r_pixel_shuffle, "reshape, permute, reshape"},
    {"pixel_unshuffle", r_pixel_shuffle, "reshape, permute, reshape"},
    {"convolution", dc_r_convolution, "3-D: the sum over the kernel's depth taps of 2-D convolutions of the "
                                      "depth slices as a batch; transposed (1-D, 2-D): per output phase, a "
                                      "stride-1 convolution of the "
                                      "input with the flipped weight's taps of that phase (kernel = stride: all as "
                                      "one 1x1; small weights: all as one over the union of their windows); the "
                                      "last axis interleaved by a product with a 0/1 matrix, the rows by cat, reshape"},
    {"scaled_dot_product_attention", r_sdpa, "matmul(q, k^T) * scale, mask (add, or where), "
                                             "softmax, matmul v"},
    {"clone", r_identity, "identity"},
    {"contiguous", r_identity, "identity"},
    {"detach", r_identity, "identity"},
    {"alias", r_identity, "identity"},
    {"lift_fresh_copy", r_identity, "identity"},
    {"_to_copy", r_to_copy, "identity, unless dtype changes (then kept: a cast)"},
    {"to", r_to_dtype, "_to_copy with dtype (a cast), or identity"},
    {"type_as", r_type_as, "_to_copy to other's dtype"},
    {"dropout", r_dropout, "identity (p = 0 or not training)"},
    {"native_dropout", r_native_dropout, "(x, full(True)) (p = 0 or not training)"},
    {"_reshape_alias", r_view_like, "reshape"},
    {"as_strided", dc_r_as_strided, "over self's own storage, a permuted row-major layout from offset 0: reshape and "
                                    "permute; else the host"},
    {"flatten", r_view_like, "reshape"},
    {"unflatten", r_view_like, "reshape"},
    {"view_as", r_view_like, "reshape"},
    {"reshape_as", r_view_like, "reshape"},
    {"expand_as", r_view_like, "expand"},
    {"zeros", r_factory, "full(size, 0)"},
    {"ones", r_factory, "full(size, 1)"},
    {"empty", r_factory, "full(size, 0)"},
    {"zeros_like", r_factory, "full(x's shape, 0)"},
    {"ones_like", r_factory, "full(x's shape, 1)"},
    {"empty_like", r_factory, "full(x's shape, 0)"},
    {"full_like", r_factory, "full(x's shape, value)"},
    {"new_zeros", r_factory, "full(size, 0)"},
    {"new_ones", r_factory, "full(size, 1)"},
    {"new_empty", r_factory, "full(size, 0)"},
    {"new_full", r_factory, "full(size, value)"},
    {"fill", r_fill, "full(x's shape, value); a tensor value: reshape to 0-d, expand"},
    {"floor", r_round, "|x| < 512: t = (|x| + 512) - 512 (DL16 ulp 1 there), corrected by 1 after a compare; "
                       "the sign restored by where; |x| >= 512 (already an integer) or NaN: x"},
    {"ceil", r_round, "as floor"},
    {"trunc", r_round, "as floor"},
    {"round", r_round, "as floor, ties to even; decimals d: round(x * 10^d) / 10^d"},
    {"frac", r_frac, "x - trunc(x)"},
    {"sign", r_sign, "(x > 0) - (x < 0), of NaN 0 (as torch 1.13); integers too"},
    {"sgn", r_sign, "as sign (real tensors)"},
    {"div", r_div_mode, "with rounding_mode: div, then trunc or floor (as floor); integers as floor_divide"},
    {"remainder", r_remainder, "a - floor(a / b) * b"},
    {"fmod", r_remainder, "a - trunc(a / b) * b"},
    {"hardtanh", r_hardtanh, "clamp_min, clamp_max"},
    {"relu6", r_hardtanh, "clamp_min 0, clamp_max 6"},
    {"leaky_relu", r_leaky_relu, "where(x > 0, x, x * slope)"},
    {"elu", r_elu, "where(x > 0, x * scale, (exp(x * input_scale) - 1) * alpha * scale)"},
    {"celu", r_elu, "elu with scale 1, input_scale 1/alpha"},
    {"selu", r_elu, "elu with SELU's alpha and scale"},
    {"threshold", r_threshold, "where(x > threshold, x, value)"},
    {"hardsigmoid", r_hardsigmoid, "clamp(x + 3, 0, 6) * (1/6)"},
    {"hardswish", r_hardswish, "x * hardsigmoid(x)"},
    {"softplus", r_softplus, "where(x*beta > threshold, x, log(exp(x*beta) + 1) * (1/beta))"},
    {"mish", r_mish, "x * tanh(softplus(x))"},
    {"glu", r_glu, "slice halves a, b; a * sigmoid(b)"},
    {"expm1", r_math, NULL},
    {"log1p", r_math, NULL},
    {"log2", r_math, NULL},
    {"log10", r_math, NULL},
    {"exp2", r_math, NULL},
    {"tan", r_math, NULL},
    {"sinh", r_math, NULL},
    {"cosh", r_math, NULL},
    {"asinh", r_math, NULL},
    {"acosh", r_math, NULL},
    {"atanh", r_math, NULL},
    {"deg2rad", r_math, NULL},
    {"rad2deg", r_math, NULL},
    {"sinc", r_math, NULL},
    {"isnan", r_math, NULL},
    {"atan", r_atan, "a = |x|: p(a), above 1 pi/2 - p(1/a), sign of x; p a degree-9 odd polynomial (cc_atan_coef)"},
    {"atan2", r_atan, "r = min(|x|,|y|) / max(|x|,|y|), p(r) folded into the octant by where; both 0: 0"},
    {"asin", r_atan, "atan2(x, sqrt((1 - x) * (1 + x)))"},
    {"acos", r_atan, "atan2(sqrt((1 - x) * (1 + x)), x)"},
    {"erfc", r_math, NULL},
    {"angle", r_math, NULL},
    {"special_entr", r_math, NULL},
    {"floor_divide", r_floor_divide, "div, then floor (as floor); integers: the fp32 quotient cast to the "
                                     "integer (tabulated exact, intexact.c), minus 1 where the signs differ and "
                                     "a - q b != 0"},
    {"hypot", r_hypot, "m * sqrt(r*r + 1), m = maximum(|a|, |b|), r = minimum / m; m == 0: 0"},
    {"isinf", r_isinf, "|x| >= 2^30 (the device's infinity: the stand-in 2^30 and beyond)"},
    {"isposinf", r_isinf, "x >= 2^30"},
    {"isneginf", r_isinf, "x <= -2^30"},
    {"nan_to_num", r_nan_to_num, "where(x != x, nan, where(x >= 2^30, posinf, where(x <= -2^30, neginf, x))); "
                                 "beyond DL16 (the defaults): +-(2^30 - 2^20), x from there on infinite"},
    {"mse_loss", r_loss, "d = self - target: d*d; then reduction none, mean (sum, div) or sum"},
    {"huber_loss", r_loss, "z = |d|: where(z < delta, z*z*0.5, (z - delta/2) * delta); reduction as mse_loss"},
    {"smooth_l1_loss", r_loss, "z = |d|: where(z < beta, z*z*0.5 * (1/beta), z - beta/2) (beta 0: z); "
                               "reduction as mse_loss"},
    {"logit", r_logit, "clamp(x, eps, 1 - eps) with eps; log(x / (1 - x))"},
    {"log_sigmoid_forward", r_log_sigmoid, "(clamp_max(x, 0) - log(e + 1), e), e = exp(-|x|)"},
    {"hardshrink", r_hardshrink, "where(|x| > lambd, x, 0)"},
    {"softshrink", r_softshrink, "where(x > l, x - l, where(x < -l, x + l, 0))"},
    {"prelu", r_prelu, "where(x > 0, x, x * weight), weight along dim 1"},
    {"xlogy", r_xlogy, "where(y != y, y, where(x == 0, 0, x * log(y)))"},
    {"special_xlog1py", r_xlogy, "as xlogy with log(y + 1)"},
    {"logaddexp", r_logaddexp, "maximum(a, b) + log(exp(-|a - b|) + 1)"},
    {"logaddexp2", r_logaddexp, "as logaddexp in base 2 (scaled by ln 2)"},
    {"fmax", r_fmax, "maximum, a NaN operand ignored (where(a != a, b, ..))"},
    {"fmin", r_fmax, "minimum, a NaN operand ignored"},
    {"heaviside", r_heaviside, "where(x == 0, values, x > 0)"},
    {"logical_xor", r_logical_xor, "ne(bool(a), bool(b))"},
    {"addcmul", r_addcmul, "self + value * (t1 * t2)"},
    {"addcdiv", r_addcmul, "self + value * (t1 / t2)"},
    {"lerp", r_lerp, "start + weight * (end - start)"},
    {"nansum", r_nansum, "sum(where(x != x, 0, x))"},
    {"dot", r_dot, "sum(a * b)"},
    {"vdot", r_dot, "sum(a * b) (real tensors)"},
    {"zero", r_zero, "full(x's shape, 0)"},
    {"eye", r_eye, "arange(n)[:, None] == arange(m), cast"},
    {"linspace", dc_r_space, "a constant of PyTorch's values (an integer dtype: within 1024)"},
    {"logspace", dc_r_space, "as linspace (base <= 0: on the host)"},
    {"tril_indices", dc_r_tri_indices, "a constant of the (row, column) pairs (indices within 1024)"},
    {"triu_indices", dc_r_tri_indices, "as tril_indices"},
    {"logsumexp", r_logsumexp, "m = amax (kept dims), log(sum(exp(x - m))) + m"},
    {"native_batch_norm", r_batch_norm, "not training: (x - running_mean) * rsqrt(running_var + eps) * weight + "
                                        "bias per channel; training: the batch's statistics as group_norm's, per channel"},
    {"_native_batch_norm_legit_no_training", r_batch_norm, "as native_batch_norm, not training"},
    {"native_group_norm", r_group_norm, "layer_norm's steps over each group (x seen as (N, group, rest)), its "
                                        "sums per channel, then over the group's channels; weight, bias per channel"},
    {"max_pool2d_with_indices", r_max_pool, "constant_pad_nd(-inf), maximum of the k strided column slices, then "
                                              "of k strided row slices of that; indices (when read): where chain of "
                                              "eq over arange flat indices, inside x (first hit), then of x != x (last)"},
    {"avg_pool2d", r_avg_pool, "constant_pad_nd(0), sums of strided slices as max_pool2d's, div by divisor_override or "
                                 "the same sum over padded ones"},
    {"_adaptive_avg_pool2d", r_adaptive_pool, "output dividing the input: avg_pool2d with kernel = stride; else per "
                                                "axis a cat of runs of windows alike (chains of strided slices), "
                                                "div by the window sizes"},
    {"max_pool3d_with_indices", r_max_pool, "as max_pool2d_with_indices, then the depth slices"},
    {"avg_pool3d", r_avg_pool, "as avg_pool2d, then the depth slices"},
    {"_adaptive_avg_pool3d", r_adaptive_pool, "as _adaptive_avg_pool2d, per axis"},
    {"adaptive_max_pool3d", r_adaptive_pool, "as adaptive_max_pool2d, per axis"},
    {"reflection_pad1d", r_mode_pad, "cat of single-element slices mirrored about the edges, and x"},
    {"reflection_pad2d", r_mode_pad, "as reflection_pad1d, per dimension"},
    {"reflection_pad3d", r_mode_pad, "as reflection_pad1d, per dimension"},
    {"replication_pad1d", r_mode_pad, "cat of the edge slices expanded, and x"},
    {"replication_pad2d", r_mode_pad, "as replication_pad1d, per dimension"},
    {"replication_pad3d", r_mode_pad, "as replication_pad1d, per dimension"},
    {"upsample_nearest1d", r_upsample_nearest, "integer factor up: unsqueeze, expand, reshape (the last axis of a float "
                                               "tensor of as many rows: mm by a constant 0/1 matrix); else cat of the runs of evenly "
                                               "stepping sources (strided slices, or an element expanded)"},
    {"upsample_nearest2d", r_upsample_nearest, "as upsample_nearest1d, per axis"},
    {"upsample_nearest3d", r_upsample_nearest, "as upsample_nearest1d, per axis"},
    {"_upsample_nearest_exact1d", r_upsample_nearest, "as upsample_nearest1d, sources floor((i + 0.5) * scale)"},
    {"_upsample_nearest_exact2d", r_upsample_nearest, "as _upsample_nearest_exact1d, per axis"},
    {"_upsample_nearest_exact3d", r_upsample_nearest, "as _upsample_nearest_exact1d, per axis"},
    {"upsample_linear1d", dc_r_upsample_interp, "per spatial axis from the last, one product with a constant "
                                                "(out x in) matrix of PyTorch's weights"},
    {"upsample_bilinear2d", dc_r_upsample_interp, "as upsample_linear1d"},
    {"upsample_trilinear3d", dc_r_upsample_interp, "as upsample_linear1d"},
    {"upsample_bicubic2d", dc_r_upsample_interp, "as upsample_linear1d, 4 taps per axis (Keys, A = -0.75)"},
    {"adaptive_max_pool2d", r_adaptive_pool, "output dividing the input: max_pool2d_with_indices with kernel = "
                                               "stride; else as _adaptive_avg_pool2d's sums, the indices by where chains per axis"},
    {"std_mean", r_var, "(std, mean) as var, then sqrt"},
    {"argmax", dc_r_argmax, "m = amax (kept), amin(where(x == m or x != x, arange, n)): the first extreme, NaN first"},
    {"argmin", dc_r_argmax, "as argmax with amin"},
    {"max", dc_r_max_dim, "with dim: (amax, as argmax); without: amax over all; with other: maximum"},
    {"min", dc_r_max_dim, "as max with amin, minimum"},
    {"aminmax", dc_r_aminmax, "(amin, amax)"},
    {"count_nonzero", dc_r_count_nonzero, "sum(x != 0)"},
    {"sort", dc_r_sort, "rank_i = sum_j (x_j before x_i, or equal and j < i); out[r] = sum_i where(rank_i == r, x_i, 0), "
                        "indices alike (n over 32: amin_i where(rank_i == r, i, n)) (n*n per row; NaN last)"},
    {"argsort", dc_r_sort, "as sort, indices"},
    {"topk", dc_r_topk, "as sort (descending if largest), ranks 0..k-1 only"},
    {"gather", dc_r_gather, "an index of arange affine in the output: a strided view (dec_affine.c); else "
                            "sum_k where(index == k, self[.., k, ..], 0) along dim (one-hot)"},
    {"scatter", dc_r_scatter, "src or value: each position gets the last equal index entry's (one-hot: amax of "
                              "the matching positions, then a selection), else self; .reduce stays for the host"},
    {"scatter_add", dc_r_scatter_add, "self + sum_j where(index_j == k, src_j, 0) along dim (one-hot); dim 0 by an "
                                      "index repeating one column: one-hot (n, m) @ src as (m, rest)"},
    {"scatter_reduce", dc_r_scatter_reduce, "sum, prod, mean, amax, amin of where(index_j == k, src_j, ..) along dim "
                                            "(one-hot), with self's (include_self), where a position gets any; else self"},
    {"index_fill", dc_r_index_fill, "where(any(arange == index) along dim, value, self)"},
    {"nll_loss_forward", dc_r_nll_loss, "picked = one-hot select of target; w = weight[target] * (target != ignore); "
                                        "-picked*w, reduced (mean: / sum w), total_weight = sum w"},
    {"cumsum", dc_r_cumsum, "last dim: rows times U, U[k][i] = (k <= i); else L (k <= i) times x as (pre, n, post): "
                            "products on the PT units; integers: sum_k where(k <= i, x_k, 0), bounded by intexact.c"},
    {"cumprod", dc_r_cumprod, "scan by doubling: for k = 1, 2, 4, ..: y *= cat(ones(k), y[:n-k]) along dim "
                              "(log2 n products; float only)"},
    {"prod", dc_r_prod, "halves multiplied along dim (an odd extent's last element carried up) until one element "
                        "is left: log2 n products (float only; DL16's range)"},
    {"median", dc_r_median, "as sort, rank (n - 1) / 2 alone (the lower middle), its index; a row with a NaN: NaN, "
                            "the first NaN's index (amin of where(x != x, arange, n))"},
    {"kthvalue", dc_r_median, "as sort, rank k - 1 alone, its index"},
    {"any", dc_r_any, "amax(x != 0 as 0/1) > 0 (exact: a selection); empty: False"},
    {"all", dc_r_any, "amin(x != 0 as 0/1) > 0; empty: True"},
    {"bucketize", dc_r_bucketize, "sum_j !(boundaries_j >= x) (right: !(b_j > x)): NaN past every boundary"},
    {"searchsorted", dc_r_bucketize, "as bucketize, per row of a sorted sequence of rank > 1; a sorter ignored (a count)"},
    {"dist", dc_r_dist, "norm(self - other, p) over all elements"},
    {"_trilinear", dc_r_trilinear, "nn.Bilinear's form: mm(x2, weight as (J, O*I)) as (B, O, I) times x1 (B, 1, I), "
                                   "summed over I; other forms: the host"},
    {"mv", dc_r_mv, "mm of the vector as a row and self^T (the result's lanes along M)"},
    {"roll", dc_r_roll, "cat(slice(last s), slice(first n - s)) per dim"},
    {"rot90", dc_r_rot90, "flip and transpose"},
    {"diag", dc_r_diag, "vector: where(j - i == k, x shifted along the columns, 0); matrix: diagonal"},
    {"trace", dc_r_trace, "sum(diagonal)"},
    {"slice_scatter", dc_r_slice_scatter, "where(placed ones != 0, src placed by cat (interleaved for step > 1), self)"},
    {"select_scatter", dc_r_slice_scatter, "slice_scatter of src unsqueezed at dim"},
    {"narrow_copy", dc_r_narrow_copy, "slice"},
    {"_embedding_bag", dc_r_embedding_bag, "rows = embedding(weight, indices) (* per_sample_weights); bags of one "
                                           "length L (offsets arange(0, N, L)): rows as (B, L, D); else a mask (B, N) "
                                           "offsets[b] <= i < next; sum, mean (/ count) or amax over the bag, padding_idx "
                                           "rows out, empty bags 0"},
    {"index_select", dc_r_index_select, "a self of arange(0, n): the index (F.one_hot's check, export.py); an index of "
                                        "arange affine in the output: a strided view (dec_affine.c); else "
                                        "a 0-d self: itself; a 2-D table's rows by an input's row numbers: a row gather (lower); "
                                        "else one-hot: sum_k where(index == k, x[.., k, ..], 0)"},
    {"embedding", dc_r_embedding, "indices made from positions alone, or computed on the device (within 1024 "
                                  "rows): one-hot over the flattened indices, as index_select, reshaped; else a "
                                  "row gather (lower)"},
    {"index", dc_r_index, "an index of arange affine in the output: a strided view (dec_affine.c); else "
                          "one integer index tensor: one-hot over its flattened positions (negative ones wrap), reshaped; "
                          "several: the indexed dims merged (moved first when apart), one index of combined offsets "
                          "(within 1024)"},
    {"take", dc_r_take, "one-hot over the flattened self (negative positions wrap), reshaped as index"},
    {"index_put", dc_r_index_put, "one integer index tensor: the values of the entries equal to each position, "
                                  "summed (accumulate) or the last one's; a bool mask over the leading dims with values "
                                  "that broadcast: where(mask, values, self); several on adjacent dims: those dims merged, indexed by "
                                  "the combined offsets (leading ones: the entries' one-hot times the values)"},
    {"index_add", dc_r_index_add, "self + alpha * sum_j where(index_j == k, source[.., j, ..], 0) (one-hot); dim 0 "
                                  "of a float tensor of rank > 1: one-hot (n, m) @ source as (m, rest)"},
    {"index_copy", dc_r_index_copy, "as scatter of source by index broadcast over source's other dims (a state's "
                                    "update stays a dma.scatter)"},
    {"addmv", dc_r_addmv, "mm of vec as a row and mat^T, add (bias*beta + product*alpha)"},
    {"addr", dc_r_addmv, "mm of a column and a row (K = 1), add"},
    {"addbmm", dc_r_addmv, "one mm over K = batch*K: batch1 permuted to (N, B, K) and flattened, batch2 flattened; add"},
    {"norm", dc_r_norm, "p = 2: sqrt(sum(x*x)); 1: sum|x|; inf: amax|x|; 0: sum(x != 0); else sum(|x|^p)^(1/p)"},
    {"linalg_vector_norm", dc_r_norm, "as norm"},
    {"_cdist_forward", dc_r_cdist, "norm over m of a[.., :, None, :] - b[.., None, :, :], any compute_mode; p = 2 "
                                   "past 2^22 differences: as _euclidean_dist's matmul"},
    {"_euclidean_dist", dc_r_euclidean_dist, "as _cdist_forward, p = 2: differences up to 2^22 of them, else "
                                             "sqrt(clamp_min([-2a, |a|^2, 1] @ [b, 1, |b|^2]^T, 0)), one matmul"},
    {"_weight_norm_interface", r_weight_norm, "(v * (g / norm), norm), norm = sqrt(sum(v*v)) over every dim but "
                                              "dim (kept)"},
    {"bincount", dc_r_bincount, "sum_j where(self_j == k, weights_j or 1, 0) over k < the declared length (one-hot)"},
};

/* A rule's description: its row's, or the math function's (r_math). */
static const char *rule_into(size_t i)
{
    for (size_t k = 0; !rules[i].into && k < sizeof math_fns / sizeof math_fns[0]; k++)
        if (!strcmp(math_fns[k].name, rules[i].op))
            return math_fns[k].into;
    return rules[i].into;
}

void cc_decompositions_print(FILE *f)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        fprintf(f, "%-28s -> %s\n", rules[i].op, rule_into(i));
}

static dc_rule_fn find_rule(const char *base)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (ir_name_eq(rules[i].op, base))
            return rules[i].fn;
    return NULL;
}

/* ---- The pass ---- */

static int same_type(const gr_ttype *a, const gr_ttype *b)
{
    return a->dtype == b->dtype && a->rank == b->rank && !memcmp(a->shape, b->shape, (size_t)a->rank * sizeof *a->shape);
}

/* The results of the rule for node n against the types n declares. */
static void check_results(dctx *c, const gr_node *n, const int *res, int nres)
{
    const gr_value *v = &c->g->values[n->out];
    int want = v->ntuple ? v->ntuple : 1;
    char dt[256], pt[256];
    if (nres != want)
        dc_fail(c, "%%%s is declared with %d results but the op produces %d", v->name, want, nres);
    for (int i = 0; i < nres; i++) {
        const gr_ttype *decl = v->ntuple ? &v->tuple[i] : &v->type;
        gr_ttype got = dc_T(c, res[i]);
        if (same_type(decl, &got))
            continue;
        gr_ttype_str(decl, dt, sizeof dt);
        gr_ttype_str(&got, pt, sizeof pt);
        /* the graph's own mistake, not the compiler's: no host fallback */
        if (v->ntuple)
            ir_error(c->p, n->line, "%s: result %d of %%%s is declared %s but the op produces %s", n->op, i, v->name,
                     dt, pt);
        else
            ir_error(c->p, n->line, "%s: %%%s is declared %s but the op produces %s", n->op, v->name, dt, pt);
        longjmp(c->fail, 1);
    }
}

static void copy_node(dctx *c, const gr_node *n)
{
    const gr_value *v = &c->g->values[n->out];
    if (v->ntuple) { /* every multi-output op we lower has a rule */
        ir_refuse(c->p, c->cur, "the compiler does not lower %s", n->op);
        longjmp(c->fail, 1);
    }
    for (int i = 0; i < n->nargs; i++)
        check_no_tuple(c, &n->args[i]);
    gr_arg *args = ir_xalloc((size_t)(n->nargs ? n->nargs : 1) * sizeof *args);
    for (int i = 0; i < n->nargs; i++)
        args[i] = arg_copy(c, &n->args[i]);
    int out = dc_emit(c, n->op, v->type, n->nargs, args);
    free(args);
    gr_node *copy = &c->d->nodes[c->d->values[out].node];
    if (strcmp(copy->base, n->base)) { /* the parser's second name (expand_copy: expand) */
        free(copy->base);
        copy->base = ir_xstrdup(n->base);
    }
    free(c->d->values[out].name);
    c->d->values[out].name = ir_xstrdup(v->name);
    c->vmap[n->out] = out;
}

/* A host op of several results: one copy of the node per element, in
 * order (lower makes the first a HOST node writing all of them). */
static void copy_tuple(dctx *c, const gr_node *n)
{
    const gr_value *v = &c->g->values[n->out];
    c->tmap[n->out] = ir_xalloc((size_t)v->ntuple * sizeof(int));
    for (int i = 0; i < n->nargs; i++)
        check_no_tuple(c, &n->args[i]);
    for (int e = 0; e < v->ntuple; e++) {
        gr_arg *args = ir_xalloc((size_t)(n->nargs ? n->nargs : 1) * sizeof *args);
        for (int i = 0; i < n->nargs; i++)
            args[i] = arg_copy(c, &n->args[i]);
        c->tmap[n->out][e] = dc_emit(c, n->op, v->tuple[e], n->nargs, args);
        free(args);
    }
}

static void getitem(dctx *c, const gr_node *n)
{
    const gr_arg *t = gr_node_arg(n, 0, NULL), *i = gr_node_arg(n, 1, NULL);
    if (!t || t->kind != GR_ARG_VALUE || !i || i->kind != GR_ARG_INT)
        dc_fail(c, "expected getitem(%%tuple, index)");
    const gr_value *tv = &c->g->values[t->value];
    if (!c->tmap[t->value] || i->i < 0 || i->i >= tv->ntuple)
        dc_fail(c, "%%%s has no element %lld", tv->name, (long long)i->i);
    int v = c->tmap[t->value][i->i];
    const gr_value *out = &c->g->values[n->out];
    if (!same_type(&out->type, &c->d->values[v].type)) {
        char dt[256], pt[256];
        gr_ttype_str(&out->type, dt, sizeof dt);
        gr_ttype_str(&c->d->values[v].type, pt, sizeof pt);
        dc_fail(c, "%%%s is declared %s but element %lld of %%%s is %s", out->name, dt, (long long)i->i, tv->name, pt);
    }
    /* The element takes the name the graph gives it, unless it is a value
     * of its own (an identity's input). */
    if (c->d->values[v].kind == GR_VAL_NODE && c->d->values[v].node >= 0 &&
        c->p->dfrom[c->d->values[v].node] == c->g->values[t->value].node) {
        free(c->d->values[v].name);
        c->d->values[v].name = ir_xstrdup(out->name);
    }
    c->vmap[n->out] = v;
}

/* Is value v the new value of a state that nothing else reads?  The
 * program writes the update's source into the state by dma.scatter
 * (docs/graph-format.md, "State"), so it does not compute the whole new
 * value. */
static int update_only(const gr_graph *g, int v)
{
    int is_update = 0;
    for (int u = 0; u < g->nupdates; u++)
        is_update |= g->updates[u].value == v;
    for (int i = 0; i < g->noutputs; i++)
        is_update &= g->outputs[i] != v;
    for (int n = 0; n < g->nnodes && is_update; n++)
        for (int a = 0; a < g->nodes[n].nargs; a++)
            is_update &= !gr_arg_uses(&g->nodes[n].args[a], v);
    return is_update;
}

static void decompose_node(dctx *c, int id)
{
    const gr_node *n = &c->g->nodes[id];
    if (update_only(c->g, n->out))
        return;
    c->cur = id;
    c->fresh = c->d->nvalues;
    if (c->p->host[id] & IR_SRC_HOST) { /* a host op: lower makes it a HOST node as it is */
        if (c->g->values[n->out].ntuple)
            copy_tuple(c, n);
        else
            copy_node(c, n);
        return;
    }
    if (!strcmp(n->op, "getitem")) {
        getitem(c, n);
        return;
    }
    dc_rule_fn fn = find_rule(n->base);
    const gr_value *v = &c->g->values[n->out];
    int *res = c->res;
    int nres = fn ? fn(c, n, res) : 0;
    if (!nres) {
        copy_node(c, n);
        return;
    }
    check_results(c, n, res, nres);
    if (v->ntuple) {
        c->tmap[n->out] = ir_xalloc((size_t)nres * sizeof *res);
        memcpy(c->tmap[n->out], res, (size_t)nres * sizeof *res);
        return;
    }
    /* the result takes the graph's name; a constant (dc_const) keeps its own, an output of it a copy */
    if (res[0] >= c->fresh && c->d->values[res[0]].kind == GR_VAL_NODE) {
        free(c->d->values[res[0]].name);
        c->d->values[res[0]].name = ir_xstrdup(v->name);
    }
    c->vmap[n->out] = res[0];
}

/* The program's name of graph output i: its value's, unless that value is
 * an input or a parameter (an identity graph, x.contiguous()) or an earlier
 * output too: the output is then a copy and needs a tensor of its own,
 * "outputN" as in PyTorch's expected outputs (the runtime's check maps that
 * name to output N), when no value of the graph has that name. */
static char *output_name(const gr_graph *g, int i)
{
    const gr_value *v = &g->values[g->outputs[i]];
    int again = 0;
    for (int j = 0; j < i; j++)
        again |= g->outputs[j] == g->outputs[i];
    char name[32];
    snprintf(name, sizeof name, "output%d", i);
    if ((v->kind == GR_VAL_NODE && !again) || gr_graph_find_tensor(g, name) >= 0)
        return ir_xstrdup(v->name);
    return ir_xstrdup(name);
}

int ir_decompose(ir_prog *p, const gr_graph *g)
{
    dctx *c = ir_xalloc(sizeof *c); /* on the heap: longjmp keeps it intact */
    c->p = p;
    c->g = g;
    c->d = ir_xalloc(sizeof *c->d);
    p->dg = c->d;
    c->d->name = ir_xstrdup(g->name ? g->name : "graph");
    c->d->path = ir_xstrdup(p->path);
    c->vmap = ir_xalloc((size_t)(g->nvalues + 1) * sizeof *c->vmap);
    c->tmap = ir_xalloc((size_t)(g->nvalues + 1) * sizeof *c->tmap);
    c->nres = 256; /* split, unbind: at most 256 pieces */
    for (int i = 0; i < g->nvalues; i++) {
        c->vmap[i] = -1;
        if (g->values[i].ntuple > c->nres)
            c->nres = g->values[i].ntuple;
    }
    c->res = ir_xalloc((size_t)c->nres * sizeof *c->res);
    c->mask = ir_xalloc((size_t)g->nvalues + 1);
    int *axis = ir_xalloc((size_t)(g->nvalues + 1) * sizeof *axis);
    for (int i = 0; i < g->nvalues; i++)
        axis[i] = IR_MASK_NONE;
    for (int i = 0; i < g->ninputs; i++) {
        axis[g->inputs[i]] = ir_mask_axis(g, g->inputs[i]);
        c->mask[g->inputs[i]] = axis[g->inputs[i]] != IR_MASK_NONE;
    }
    volatile int rc = 0;
    if (setjmp(c->fail)) {
        rc = -1;
        goto done;
    }
    for (int i = 0; i < g->nvalues; i++) {
        const gr_value *v = &g->values[i];
        if (v->kind == GR_VAL_NODE)
            continue;
        gr_value *d;
        c->d->values = ir_xgrow(c->d->values, &c->capvalues, c->d->nvalues + 1, sizeof *c->d->values);
        d = &c->d->values[c->d->nvalues];
        d->name = ir_xstrdup(v->name);
        d->kind = v->kind;
        d->type = v->type;
        d->node = -1;
        d->param_key = v->param_key ? ir_xstrdup(v->param_key) : NULL;
        d->ranged = v->ranged;
        d->lo = v->lo;
        d->hi = v->hi;
        d->line = v->line;
        c->vmap[i] = c->d->nvalues++;
    }
    p->dnan = ir_xalloc((size_t)(c->d->nvalues + 1) * sizeof *p->dnan);
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i].kind != GR_VAL_NODE)
            p->dnan[c->vmap[i]] = axis[i];
    free(axis);
    c->d->inputs = ir_xalloc((size_t)(g->ninputs + 1) * sizeof(int));
    for (int i = 0; i < g->ninputs; i++)
        c->d->inputs[c->d->ninputs++] = c->vmap[g->inputs[i]];
    c->d->params = ir_xalloc((size_t)(g->nparams + 1) * sizeof(int));
    for (int i = 0; i < g->nparams; i++)
        c->d->params[c->d->nparams++] = c->vmap[g->params[i]];
    for (int n = 0; n < g->nnodes; n++)
        decompose_node(c, n);
    /* The graph's outputs, then the source of each state update that is
     * not one already: the program's scatter (be_update.c) reads it from
     * there, and the runtime gives its rows to other programs holding the
     * same state (docs/runtime.md, "State"). */
    int *outs = ir_xalloc((size_t)(g->noutputs + g->nupdates + 1) * sizeof(int)), nouts = 0;
    for (int i = 0; i < g->noutputs; i++)
        outs[nouts++] = g->outputs[i];
    for (int u = 0; u < g->nupdates; u++) {
        int dup = 0;
        for (int i = 0; i < nouts; i++)
            dup |= outs[i] == g->updates[u].src;
        if (!dup)
            outs[nouts++] = g->updates[u].src;
    }
    c->d->outputs = ir_xalloc((size_t)(nouts + 1) * sizeof(int));
    for (int i = 0; i < nouts; i++) {
        int v = c->vmap[outs[i]];
        if (v < 0) {
            ir_error(p, g->values[outs[i]].line, "output %%%s is a tuple, not a tensor", g->values[outs[i]].name);
            free(outs);
            rc = -1;
            goto done;
        }
        c->d->outputs[c->d->noutputs++] = v;
    }
    /* The program's outputs keep the source graph's names (an identity
     * may have made the core graph's output another value). */
    p->outputs = ir_xalloc((size_t)(nouts + 1) * sizeof *p->outputs);
    for (int i = 0; i < nouts; i++) {
        p->outputs[i].name = i < g->noutputs ? output_name(g, i) : ir_xstrdup(g->values[outs[i]].name);
        p->outputs[i].buf = -1;
    }
    p->noutputs = nouts;
    free(outs);
    p->updates = ir_xalloc((size_t)(g->nupdates + 1) * sizeof *p->updates);
    for (int u = 0; u < g->nupdates; u++) {
        const gr_update *U = &g->updates[u];
        ir_update *d = &p->updates[p->nupdates++];
        d->state = ir_xstrdup(g->values[U->state].name);
        d->index = ir_xstrdup(g->values[U->index].name);
        d->src = ir_xstrdup(g->values[U->src].name);
        d->dim = U->dim;
        d->line = U->line;
    }
    c->d->hints = ir_xalloc((size_t)(g->nhints + 1) * sizeof(char *));
    for (int i = 0; i < g->nhints; i++)
        c->d->hints[c->d->nhints++] = ir_xstrdup(g->hints[i]);
done:
    for (int i = 0; i < g->nvalues; i++)
        free(c->tmap[i]);
    free(c->tmap);
    free(c->vmap);
    free(c->res);
    free(c->mask);
    free(c);
    return rc;
}
