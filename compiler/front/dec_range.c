/* dec_range.c: the values an index computed on the device may take,
 * proven from the source graph.  A gather by such an index is one-hot
 * (dec_index.c): an out-of-bounds position would pick no row and give 0
 * where PyTorch raises.  An interval propagated from the inputs' declared
 * ranges proves most legal (argmax, topk, sort and argsort indices, an arange,
 * clamp, remainder: by construction); the runtime computes the others
 * from each launch's inputs on the host and refuses an out-of-bounds one
 * as PyTorch (runtime/idxcheck.c): a view of an input among them (DLRM's
 * ids[:, i], each column indexing its own table).  An input itself is
 * checked at launch as it is (runtime/tensor.c), and an index made from
 * positions and constants alone is the same at every run (PyTorch ran it
 * at export). */
#include "cc.h"
#include "decompose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef ir_ival rng;

static const rng ANY = {-INFINITY, INFINITY};

typedef struct {
    const gr_graph *g;
    rng *memo;
    char *done;
} rctx;

static rng of(rctx *r, int v);

static rng point(double x) { return (rng){x, x}; }

static rng join(rng a, rng b) { return (rng){fmin(a.lo, b.lo), fmax(a.hi, b.hi)}; }

/* Argument pos (or key) of n: a value's range, a number's point; dflt
 * when absent or None. */
static rng arg(rctx *r, const gr_node *n, int pos, const char *key, rng dflt)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    if (!a || a->kind == GR_ARG_NONE)
        return dflt;
    if (a->kind == GR_ARG_VALUE)
        return of(r, a->value);
    if (a->kind == GR_ARG_INT || a->kind == GR_ARG_BOOL)
        return point((double)a->i);
    return a->kind == GR_ARG_FLOAT ? point(a->f) : ANY;
}

static rng same(rctx *r, const gr_node *n) { return arg(r, n, 0, "self", ANY); }

/* An op of opsem.c's table with an interval: its row's over its operands. */
static rng elementwise(rctx *r, const gr_node *n, const ir_opsem *s)
{
    rng a = same(r, n);
    return ir_opsem_iv(s, a, s->arity == 1 ? a : arg(r, n, 1, "other", ANY), arg(r, n, 2, "alpha", point(1)));
}

/* clamp(self, min, max): clamp_max(clamp_min(self, min), max), as PyTorch
 * (max wins where min > max); an absent bound leaves self's. */
static rng clamp(rctx *r, const gr_node *n)
{
    rng x = ir_opsem_aten("clamp_min")->iv(same(r, n), arg(r, n, 1, "min", point(-INFINITY)));
    return ir_opsem_aten("clamp_max")->iv(x, arg(r, n, 2, "max", point(INFINITY)));
}

/* How far inside a bound b a result of n strictly below it lies: an
 * integer's is b - 1, a float's b itself (the interval is closed). */
static double inside(rctx *r, const gr_node *n, double b)
{
    return dc_is_float(r->g->values[n->out].type.dtype) ? b : b - 1;
}

/* remainder(x, m), Python's: the sign of m; x already within it stays. */
static rng remainder_(rctx *r, const gr_node *n)
{
    rng x = same(r, n), m = arg(r, n, 1, "other", ANY);
    if (m.lo > 0 && x.lo >= 0 && x.hi < m.lo)
        return x;
    return m.lo > 0 ? (rng){0, inside(r, n, m.hi)} : m.hi < 0 ? (rng){-inside(r, n, -m.lo), 0} : ANY;
}

/* fmod(x, m), C's: the sign of x, smaller than |m|. */
static rng fmod_(rctx *r, const gr_node *n)
{
    rng x = same(r, n), m = arg(r, n, 1, "other", ANY);
    double b = inside(r, n, fmax(fabs(m.lo), fabs(m.hi)));
    return (rng){x.lo < 0 ? fmax(-b, x.lo) : 0, x.hi > 0 ? fmin(b, x.hi) : 0};
}

/* x / d for d of one sign, rounded as rounding_mode says: the ends'
 * quotients bound it (x / d is monotone in each, and so are floor and
 * trunc), each taken directly: 49 * (1 / 49) is below 1. */
static rng divide(rctx *r, const gr_node *n)
{
    rng x = same(r, n), d = arg(r, n, 1, "other", ANY);
    if (d.lo <= 0 && d.hi >= 0)
        return ANY;
    const gr_arg *m = gr_node_arg(n, 2, "rounding_mode");
    const char *mode = !strcmp(n->base, "floor_divide") ? "floor" : m && m->kind == GR_ARG_STR ? m->s : "";
    double p[4] = {x.lo / d.lo, x.lo / d.hi, x.hi / d.lo, x.hi / d.hi};
    rng q = {INFINITY, -INFINITY};
    for (int i = 0; i < 4; i++) {
        double v = !strcmp(mode, "floor") ? floor(p[i]) : !strcmp(mode, "trunc") ? trunc(p[i]) : p[i];
        if (isnan(v))
            return ANY;
        q = join(q, point(v));
    }
    return q;
}

static rng where(rctx *r, const gr_node *n) { return join(arg(r, n, 1, "self", ANY), arg(r, n, 2, "other", ANY)); }

static rng fill_value(rctx *r, const gr_node *n) { return arg(r, n, 1, "fill_value", ANY); }

static rng first_value(rctx *r, const gr_node *n) { return arg(r, n, 0, "s", ANY); }

static rng zero(rctx *r, const gr_node *n) { return (void)r, (void)n, point(0); }

static rng one(rctx *r, const gr_node *n) { return (void)r, (void)n, point(1); }

/* arange([start,] end[, step]): start + k * step for the result's k. */
static rng arange(rctx *r, const gr_node *n)
{
    const int one_arg = !strcmp(n->op, "aten.arange.default");
    double start = one_arg ? 0 : arg(r, n, 0, "start", point(0)).lo;
    double step = one_arg ? 1 : arg(r, n, 2, "step", point(1)).lo;
    const gr_ttype *t = &r->g->values[n->out].type;
    double last = start + step * (double)(t->rank ? t->shape[0] - 1 : 0);
    return (rng){fmin(start, last), fmax(start, last)};
}

/* Flattened: positions of every element (argmax without a dim). */
enum { FLAT = GR_MAX_RANK + 1 };

/* The positions along dim (argument pos, dflt when absent; None or FLAT:
 * of the flattened tensor) of n's first argument. */
static rng positions(rctx *r, const gr_node *n, int pos, int dflt)
{
    if (!n->nargs || n->args[0].kind != GR_ARG_VALUE)
        return ANY;
    const gr_ttype *t = &r->g->values[n->args[0].value].type;
    const gr_arg *a = gr_node_arg(n, pos, "dim");
    int64_t d = a && a->kind == GR_ARG_INT ? a->i : a ? FLAT : dflt, size = 1;
    d += d < 0 ? t->rank : 0;
    for (int i = 0; i < t->rank; i++)
        size *= d == FLAT || d == i ? t->shape[i] : 1;
    return size > 0 && (d == FLAT || (d >= 0 && d < t->rank)) ? (rng){0, (double)(size - 1)} : ANY;
}

static rng argext(rctx *r, const gr_node *n) { return positions(r, n, 1, FLAT); }

static rng argsort(rctx *r, const gr_node *n) { return positions(r, n, 1, -1); }

static rng cat(rctx *r, const gr_node *n)
{
    const gr_arg *l = gr_node_arg(n, 0, "tensors");
    rng u = {INFINITY, -INFINITY};
    for (int i = 0; l && l->kind == GR_ARG_LIST && i < l->nitems; i++)
        u = join(u, l->items[i].kind == GR_ARG_VALUE ? of(r, l->items[i].value) : ANY);
    return l && l->kind == GR_ARG_LIST && l->nitems ? u : ANY;
}

/* bucketize(x, boundaries): a count of boundaries, 0 to all of them. */
static rng bucketize(rctx *r, const gr_node *n)
{
    const gr_arg *b = gr_node_arg(n, 1, "boundaries");
    if (!b || b->kind != GR_ARG_VALUE)
        return ANY;
    const gr_ttype *t = &r->g->values[b->value].type;
    return (rng){0, t->rank ? (double)t->shape[t->rank - 1] : 1};
}

static rng searchsorted(rctx *r, const gr_node *n)
{
    if (!n->nargs || n->args[0].kind != GR_ARG_VALUE)
        return ANY;
    const gr_ttype *t = &r->g->values[n->args[0].value].type;
    return (rng){0, t->rank ? (double)t->shape[t->rank - 1] : 1};
}

typedef rng (*rng_fn)(rctx *r, const gr_node *n);

/* Ops whose result's range follows from their arguments', by base name,
 * beside opsem.c's elementwise rows; movement ops (ir_op_attrs) and
 * gathers keep their first argument's. */
static const struct {
    const char *base;
    rng_fn fn;
} rules[] = {
    {"clamp", clamp},
    {"clip", clamp},
    {"remainder", remainder_},
    {"fmod", fmod_},
    {"div", divide},
    {"floor_divide", divide},
    {"where", where},
    {"full", fill_value},
    {"full_like", fill_value},
    {"fill", fill_value},
    {"scalar_tensor", first_value},
    {"zeros", zero},
    {"zeros_like", zero},
    {"new_zeros", zero},
    {"ones", one},
    {"ones_like", one},
    {"new_ones", one},
    {"arange", arange},
    {"argmax", argext},
    {"argmin", argext},
    {"argsort", argsort},
    {"cat", cat},
    {"stack", cat},
    {"bucketize", bucketize},
    {"searchsorted", searchsorted},
    {"index", same},
    {"gather", same},
    {"index_select", same},
    {"take", same},
    {"flip", same},
    {"roll", same},
    {"repeat", same},
    {"amax", same},
    {"amin", same},
};

/* Multi-output ops whose result 1 holds positions along a dim of their
 * first argument: the dim's argument position and default. */
static const struct {
    const char *base;
    int pos, dflt;
} indices_of[] = {
    {"topk", 2, -1},  {"sort", 1, -1},   {"max", 1, 0},        {"min", 1, 0},      {"kthvalue", 2, -1},
    {"median", 1, 0}, {"nanmedian", 1, 0}, {"mode", 1, -1},    {"cummax", 1, 0},   {"cummin", 1, 0},
};

/* getitem(t, k): a positions result of indices_of; their values and a
 * split's pieces are within t's first argument's range. */
static rng getitem(rctx *r, const gr_node *n)
{
    if (n->nargs < 2 || n->args[0].kind != GR_ARG_VALUE || n->args[1].kind != GR_ARG_INT)
        return ANY;
    const gr_value *t = &r->g->values[n->args[0].value];
    if (t->kind != GR_VAL_NODE)
        return ANY;
    const gr_node *m = &r->g->nodes[t->node];
    int part = (ir_op_attrs(m->base) & IR_OP_SPLIT) != 0;
    for (size_t k = 0; k < sizeof indices_of / sizeof *indices_of; k++)
        if (!strcmp(m->base, indices_of[k].base)) {
            if (n->args[1].i == 1)
                return positions(r, m, indices_of[k].pos, indices_of[k].dflt);
            part = 1;
        }
    return part && m->nargs && m->args[0].kind == GR_ARG_VALUE ? of(r, m->args[0].value) : ANY;
}

/* Whether value v is a float cast from integers: no NaN among its values. */
static int from_integers(const gr_graph *g, int v)
{
    const gr_value *x = &g->values[ir_view_root(g, v)];
    if (x->kind != GR_VAL_NODE)
        return 0;
    const gr_node *m = &g->nodes[x->node];
    return (ir_op_attrs(m->base) & IR_OP_CAST) && m->nargs && m->args[0].kind == GR_ARG_VALUE &&
           !dc_is_float(g->values[m->args[0].value].type.dtype);
}

/* A cast: its argument's values, but a float's that may hold a NaN (a
 * clamp keeps it) becomes any integer. */
static rng cast(rctx *r, const gr_node *n)
{
    if (!n->nargs || n->args[0].kind != GR_ARG_VALUE)
        return ANY;
    const int v = n->args[0].value;
    const int to_int = !dc_is_float(r->g->values[n->out].type.dtype);
    return to_int && dc_is_float(r->g->values[v].type.dtype) && !from_integers(r->g, v) ? ANY : of(r, v);
}

static rng node_rng(rctx *r, const gr_node *n)
{
    if (!strcmp(n->op, "getitem"))
        return getitem(r, n);
    if (ir_op_attrs(n->base) & IR_OP_CAST)
        return cast(r, n);
    const ir_opsem *s = ir_opsem_aten(n->base);
    if (s && s->iv)
        return elementwise(r, n, s);
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++)
        if (!strcmp(n->base, rules[k].base))
            return rules[k].fn(r, n);
    return ir_op_attrs(n->base) ? same(r, n) : ANY;
}

/* The integers dtype t holds (a cast wraps a value past them into them). */
static rng held(gr_dtype t) { return t == GR_I32 ? (rng){INT32_MIN, INT32_MAX} : (rng){-0x1p63, 0x1p63}; }

/* Value v's range, its dtype's rounding applied (an integer cast
 * truncates and wraps past the dtype's integers, a bool is 0 or 1). */
static rng of(rctx *r, int v)
{
    const gr_value *x = &r->g->values[v];
    if (x->type.dtype == GR_BOOL)
        return (rng){0, 1};
    if (r->done[v])
        return r->memo[v];
    r->done[v] = 1;
    r->memo[v] = ANY; /* a cycle (none in a sorted graph) proves nothing */
    rng a = x->kind == GR_VAL_INPUT && x->ranged ? (rng){(double)x->lo, (double)x->hi}
            : x->kind == GR_VAL_NODE ? node_rng(r, &r->g->nodes[x->node])
                                     : ANY;
    if (isnan(a.lo) || isnan(a.hi))
        a = ANY;
    if (!dc_is_float(x->type.dtype)) {
        const rng h = held(x->type.dtype);
        a = a.lo >= h.lo && a.hi <= h.hi ? (rng){trunc(a.lo), trunc(a.hi)} : h;
    }
    return r->memo[v] = a;
}

int dc_reads_data(const gr_graph *g, int v)
{
    char *seen = calloc((size_t)g->nvalues + 1, 1);
    if (!seen)
        abort();
    gr_mark_upstream(g, v, seen);
    int r = 0;
    for (int u = 0; u < g->nvalues && !r; u++)
        r = seen[u] && g->values[u].kind != GR_VAL_NODE;
    free(seen);
    return r;
}

int cc_index_unproven(const gr_graph *g, int v, int64_t size, int wrap)
{
    if (g->values[v].kind != GR_VAL_NODE || !dc_reads_data(g, v))
        return 0;
    rctx r = {g, calloc((size_t)g->nvalues + 1, sizeof(rng)), calloc((size_t)g->nvalues + 1, 1)};
    if (!r.memo || !r.done)
        abort();
    rng a = of(&r, v);
    free(r.memo);
    free(r.done);
    return !(a.lo >= (wrap ? -(double)size : 0) && a.hi < (double)size);
}
