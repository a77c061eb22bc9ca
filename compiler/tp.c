/* tp.c: tensor-parallel splitting of an ATen graph (docs/multicard.md), the
 * Megatron way: a linear whose input can be cut along its reduced
 * dimension back to other linears (through per-head attention and
 * pointwise ops) is row-parallel (its weight cut by columns, an allreduce
 * after it) and those linears column-parallel (their weights cut by rows:
 * heads, MLP up/gate columns).  The split is found backwards: each value
 * gets the part every card needs of it (a demand), from its consumers. */
#include "cc.h"
#include "isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Demand states of a value: not yet asked for, needed whole on every card,
 * cut (factors), or (a row-parallel linear's bias) whole on card 0 and
 * zero on the others, so the allreduce adds it once. */
enum { D_UNSET, D_FULL, D_CUT, D_CARD0 };

#define MAXF 2

typedef struct {
    int state, nf, origin; /* origin: the row-parallel linear (node) the cut comes from */
    cc_tp_factor f[MAXF];
} demand;

struct cc_tp_plan {
    const gr_graph *g;
    int ncards;
    demand *dem;       /* per value */
    demand *elem;      /* per value and tuple element (GR_MAX_RANK of each), getitem demands */
    char *row;         /* per node: a row-parallel linear (an allreduce follows) */
    char *cand;        /* per node: may still be tried as row-parallel */
    char *deferred;    /* per node: a state update's index_copy waiting for its source's demand */
    int fail_node;     /* the failure of the last pass */
    int fail_origin;   /* the row-parallel linear whose cut failed there */
    int unknown;       /* it was an op the splitter has no rule for */
    char why[256];
};

static int fail(cc_tp_plan *p, int node, int origin, int unknown, const char *why)
{
    if (p->fail_node < 0) {
        p->fail_node = node;
        p->fail_origin = origin;
        p->unknown = unknown;
        snprintf(p->why, sizeof p->why, "%s", why);
    }
    return -1;
}

static int same_demand(const demand *a, const demand *b)
{
    return a->state == b->state && a->nf == b->nf && !memcmp(a->f, b->f, (size_t)a->nf * sizeof a->f[0]);
}

/* Value v is asked for as d by node n's rule. */
static int ask(cc_tp_plan *p, int node, int v, const demand *d)
{
    demand *have = &p->dem[v];
    if (have->state == D_UNSET) {
        *have = *d;
        return 0;
    }
    if (same_demand(have, d))
        return 0;
    const demand *cut = have->state == D_CUT || have->state == D_CARD0 ? have : d;
    char why[200];
    snprintf(why, sizeof why, "%%%s is needed whole by one use and cut by another", p->g->values[v].name);
    return fail(p, node, cut->origin, 0, why);
}

static demand full(void)
{
    return (demand){.state = D_FULL, .origin = -1};
}

/* ---- One rule per op family: the output's demand to the inputs' ---- */

typedef struct {
    cc_tp_plan *p;
    int node;
    const gr_node *n;
    const demand *out;
    const gr_ttype *ot;
} rule_ctx;

static const gr_ttype *vtype(const cc_tp_plan *p, int v)
{
    return &p->g->values[v].type;
}

/* The output's factors through a reshape onto in's shape (each factor's
 * part index split over the input dims it spans, innermost first). */
static int map_reshape(rule_ctx *c, const gr_ttype *in, demand *d)
{
    *d = *c->out;
    d->nf = 0;
    for (int k = 0; k < c->out->nf; k++) {
        cc_tp_factor F = c->out->f[k];
        int64_t T = F.b, P = F.parts, s = F.stride;
        for (int e = F.dim + 1; e < c->ot->rank; e++)
            T *= c->ot->shape[e];
        int64_t inner = 1;
        for (int e = in->rank - 1; e >= 0 && P > 1; e--) {
            int64_t span = inner * in->shape[e];
            if (T >= span) {
                inner = span;
                continue;
            }
            if (T % inner || in->shape[e] % (T / inner) || d->nf == MAXF)
                return fail(c->p, c->node, c->out->origin, 0, "a reshape mixes the cut dimension with others");
            int64_t bb = T / inner, avail = in->shape[e] / bb;
            if (avail >= P ? avail % P : P % avail)
                return fail(c->p, c->node, c->out->origin, 0, "a reshape cuts the parts across dimensions unevenly");
            int64_t take = avail >= P ? P : avail;
            d->f[d->nf++] = (cc_tp_factor){e, (int)(avail / take), (int)take, bb, (int)s};
            P /= take;
            s *= take;
            T = span;
            inner = span;
        }
        if (P > 1)
            return fail(c->p, c->node, c->out->origin, 0, "a reshape cannot carry the cut");
    }
    return 0;
}

/* Input v of an op that broadcasts to the output (aligned on the right). */
static int ask_broadcast(rule_ctx *c, int v)
{
    const gr_ttype *t = vtype(c->p, v);
    demand d = *c->out;
    d.nf = 0;
    for (int k = 0; k < c->out->nf; k++) {
        int e = c->out->f[k].dim - (c->ot->rank - t->rank);
        if (e < 0 || t->shape[e] == 1)
            continue; /* broadcast along the cut: every card needs all of it */
        d.f[d.nf] = c->out->f[k];
        d.f[d.nf++].dim = e;
    }
    if (!d.nf)
        d = full();
    return ask(c->p, c->node, v, &d);
}

static int r_pointwise(rule_ctx *c)
{
    for (int i = 0; i < c->n->nargs; i++)
        if (c->n->args[i].kind == GR_ARG_VALUE && ask_broadcast(c, c->n->args[i].value))
            return -1;
    return 0;
}

static int r_reshape(rule_ctx *c)
{
    int v = c->n->args[0].value;
    demand d;
    return map_reshape(c, vtype(c->p, v), &d) || ask(c->p, c->node, v, &d);
}

static int64_t int_arg(const gr_node *n, int pos, const char *key, int64_t dflt)
{
    const gr_arg *a = gr_node_arg(n, pos, key);
    return a && a->kind == GR_ARG_INT ? a->i : dflt;
}

static int normdim(int64_t d, int rank)
{
    return (int)(d < 0 ? d + rank : d);
}

/* Output dim o comes from input dim perm[o]. */
static int ask_permuted(rule_ctx *c, int v, const int *perm)
{
    demand d = *c->out;
    for (int k = 0; k < d.nf; k++)
        d.f[k].dim = perm[d.f[k].dim];
    return ask(c->p, c->node, v, &d);
}

static int r_transpose(rule_ctx *c)
{
    int perm[GR_MAX_RANK], r = c->ot->rank;
    for (int i = 0; i < r; i++)
        perm[i] = i;
    int a = r == 2 ? 0 : normdim(int_arg(c->n, 1, "dim0", 0), r), b = r == 2 ? 1 : normdim(int_arg(c->n, 2, "dim1", 1), r);
    if (!strcmp(c->n->base, "permute")) {
        int64_t dims[GR_MAX_RANK];
        gr_arg_ints(gr_node_arg(c->n, 1, "dims"), dims);
        for (int i = 0; i < r; i++)
            perm[i] = normdim(dims[i], r);
    } else if (r >= 2) {
        perm[a] = b;
        perm[b] = a;
    }
    return ask_permuted(c, c->n->args[0].value, perm);
}

static int r_unsqueeze(rule_ctx *c)
{
    int d0 = normdim(int_arg(c->n, 1, "dim", 0), c->ot->rank), perm[GR_MAX_RANK];
    for (int i = 0; i < c->ot->rank; i++)
        perm[i] = i < d0 ? i : i - 1;
    return ask_permuted(c, c->n->args[0].value, perm);
}

/* The cut must not lie along dim (a reduction, a softmax, a cat, a slice). */
static int cut_along(const demand *d, int dim)
{
    for (int k = 0; k < d->nf; k++)
        if (d->f[k].dim == dim)
            return 1;
    return 0;
}

static int r_along(rule_ctx *c)
{
    const char *b = c->n->base;
    int dim = normdim(int_arg(c->n, 1, "dim", 0), c->ot->rank);
    if (!strcmp(b, "slice")) {
        int64_t st = int_arg(c->n, 2, "start", 0), en = int_arg(c->n, 3, "end", INT64_MAX);
        const gr_ttype *it = vtype(c->p, c->n->args[0].value);
        if (!(cut_along(c->out, dim) && (st != 0 || en < it->shape[dim])))
            return r_pointwise(c);
    } else if (!cut_along(c->out, dim)) {
        if (strcmp(b, "cat"))
            return r_pointwise(c);
        for (int i = 0; i < c->n->args[0].nitems; i++)
            if (ask_broadcast(c, c->n->args[0].items[i].value))
                return -1;
        return 0;
    }
    return fail(c->p, c->node, c->out->origin, 0, "it works along the cut dimension");
}

static int r_mean(rule_ctx *c)
{
    int64_t dims[GR_MAX_RANK];
    int nd = gr_arg_ints(gr_node_arg(c->n, 1, "dim"), dims);
    const gr_arg *kd = gr_node_arg(c->n, 2, "keepdim");
    if (nd <= 0 || !kd || !kd->i)
        return fail(c->p, c->node, c->out->origin, 0, "a reduction without keepdim over a cut tensor");
    for (int i = 0; i < nd; i++)
        if (cut_along(c->out, normdim(dims[i], c->ot->rank)))
            return fail(c->p, c->node, c->out->origin, 0, "it reduces along the cut dimension");
    return r_pointwise(c);
}

/* mm / bmm / addmm / baddbmm: a cut of the output's rows goes to A, of its
 * columns to B (and the added input, as it broadcasts). */
static int r_matmul(rule_ctx *c)
{
    int add = !strcmp(c->n->base, "addmm") || !strcmp(c->n->base, "baddbmm");
    int A = c->n->args[add].value, B = c->n->args[add + 1].value, r = c->ot->rank;
    demand da = *c->out, db = *c->out;
    da.nf = db.nf = 0;
    for (int k = 0; k < c->out->nf; k++) {
        cc_tp_factor f = c->out->f[k];
        if (f.dim < r - 1)
            da.f[da.nf++] = f; /* rows (and bmm's batch) */
        if (f.dim != r - 2)
            db.f[db.nf++] = f; /* columns (and bmm's batch) */
    }
    if (!da.nf)
        da = full();
    if (!db.nf)
        db = full();
    if (ask(c->p, c->node, A, &da) || ask(c->p, c->node, B, &db))
        return -1;
    return add ? ask_broadcast(c, c->n->args[0].value) : 0;
}

static int r_expand(rule_ctx *c)
{
    return ask_broadcast(c, c->n->args[0].value);
}

/* split.Tensor: every piece cut the same way along the split dimension
 * makes the input cut with the pieces as its outer factor. */
static int r_split(rule_ctx *c)
{
    const gr_value *t = &c->p->g->values[c->n->out];
    const demand *e0 = &c->p->elem[c->n->out * GR_MAX_RANK];
    int dim = normdim(int_arg(c->n, 2, "dim", 0), t->tuple[0].rank);
    for (int i = 1; i < t->ntuple; i++)
        if (!same_demand(e0, &c->p->elem[c->n->out * GR_MAX_RANK + i]) || t->tuple[i].shape[dim] != t->tuple[0].shape[dim])
            return fail(c->p, c->node, e0->origin, 0, "its pieces are not all cut alike");
    demand d = *e0;
    for (int k = 0; k < d.nf; k++)
        if (d.f[k].dim == dim) {
            if (d.f[k].a != 1)
                return fail(c->p, c->node, e0->origin, 0, "a piece is cut within its own parts");
            d.f[k].a = t->ntuple;
        }
    if (d.state == D_UNSET)
        d = full();
    return ask(c->p, c->node, c->n->args[0].value, &d);
}

/* split_with_sizes: pieces of different sizes, each cut into the same
 * parts of b along the split dimension (a fused QKV weight: q's heads and
 * the k and v heads after it), make the input cut with as many outer
 * blocks as the pieces have together. */
static int r_split_sizes(rule_ctx *c)
{
    const gr_value *t = &c->p->g->values[c->n->out];
    const demand *e = &c->p->elem[c->n->out * GR_MAX_RANK];
    int dim = normdim(int_arg(c->n, 2, "dim", 0), t->tuple[0].rank), a = 0, cut = -1;
    for (int k = 0; k < e[0].nf; k++)
        cut = e[0].f[k].dim == dim ? k : cut;
    for (int i = 0; i < t->ntuple; i++) {
        demand d = e[i];
        if (d.state != e[0].state || (d.state == D_CUT && (d.nf != e[0].nf || cut < 0)))
            return fail(c->p, c->node, e[0].origin, 0, "its pieces are not all cut alike");
        if (d.state != D_CUT)
            continue;
        const cc_tp_factor *f = &d.f[cut];
        if (f->dim != dim || f->b * f->parts * f->a != t->tuple[i].shape[dim])
            return fail(c->p, c->node, e[0].origin, 0, "a piece is cut within its own parts");
        a += f->a;
        d.f[cut].a = e[0].f[cut].a;
        if (!same_demand(&d, &e[0]))
            return fail(c->p, c->node, e[0].origin, 0, "its pieces are not all cut alike");
    }
    demand d = e[0].state == D_CUT ? e[0] : full();
    if (d.state == D_CUT)
        d.f[cut].a = a;
    return ask(c->p, c->node, c->n->args[0].value, &d);
}

static int ask_all_full(cc_tp_plan *p, int node);

/* index_select(x, dim, index): x cut as the output, the index whole. */
static int r_index_select(rule_ctx *c)
{
    int dim = normdim(int_arg(c->n, 1, "dim", 0), c->ot->rank);
    if (cut_along(c->out, dim))
        return fail(c->p, c->node, c->out->origin, 0, "it selects along the cut dimension");
    demand f = full();
    return ask(c->p, c->node, c->n->args[0].value, c->out) || ask(c->p, c->node, c->n->args[2].value, &f);
}

/* index_copy(self, dim, index, src): self and src cut as the output. */
static int r_index_copy(rule_ctx *c)
{
    int dim = normdim(int_arg(c->n, 1, "dim", 0), c->ot->rank);
    if (cut_along(c->out, dim))
        return fail(c->p, c->node, c->out->origin, 0, "it copies along the cut dimension");
    demand f = full();
    return ask(c->p, c->node, c->n->args[0].value, c->out) || ask(c->p, c->node, c->n->args[3].value, c->out) ||
           ask(c->p, c->node, c->n->args[2].value, &f);
}

/* A state's new value (an index_copy nothing else reads) is cut as its
 * source is: decided when the source's demand is final, at its producer. */
static int is_update_value(const cc_tp_plan *p, int v)
{
    for (int i = 0; i < p->g->nupdates; i++)
        if (p->g->updates[i].value == v)
            return 1;
    return 0;
}

static int resolve_deferred(cc_tp_plan *p, int src)
{
    for (int k = 0; k < p->g->nnodes; k++) {
        const gr_node *n = &p->g->nodes[k];
        if (!p->deferred[k] || n->args[3].value != src)
            continue;
        p->deferred[k] = 0;
        p->dem[n->out] = p->dem[src].state == D_UNSET ? full() : p->dem[src];
        rule_ctx c = {p, k, n, &p->dem[n->out], vtype(p, n->out)};
        if (r_index_copy(&c))
            return -1;
    }
    return 0;
}

/* native_layer_norm: its output cut along other dims than those it normalizes. */
static int r_layer_norm(rule_ctx *c)
{
    const gr_value *t = &c->p->g->values[c->n->out];
    const demand *e = &c->p->elem[c->n->out * GR_MAX_RANK];
    int64_t ns[GR_MAX_RANK];
    int nn = gr_arg_ints(gr_node_arg(c->n, 1, "normalized_shape"), ns);
    for (int i = 1; i < t->ntuple; i++)
        if (c->p->elem[c->n->out * GR_MAX_RANK + i].state == D_CUT)
            return fail(c->p, c->node, c->p->elem[c->n->out * GR_MAX_RANK + i].origin, 1, "its mean or rstd is cut");
    if (e->state != D_CUT)
        return ask_all_full(c->p, c->node);
    for (int k = 0; k < e->nf; k++)
        if (e->f[k].dim >= t->tuple[0].rank - nn)
            return fail(c->p, c->node, e->origin, 0, "it normalizes along the cut dimension");
    demand f = full();
    for (int i = 1; i < c->n->nargs; i++)
        if (c->n->args[i].kind == GR_ARG_VALUE && ask(c->p, c->node, c->n->args[i].value, &f))
            return -1;
    return ask(c->p, c->node, c->n->args[0].value, e);
}

typedef int (*rule_fn)(rule_ctx *c);
static const struct {
    const char *base;
    rule_fn fn;
} rules[] = {
    {"view", r_reshape}, {"_unsafe_view", r_reshape}, {"reshape", r_reshape}, {"_reshape_alias", r_reshape},
    {"t", r_transpose}, {"transpose", r_transpose}, {"permute", r_transpose}, {"unsqueeze", r_unsqueeze},
    {"expand", r_expand}, {"slice", r_along}, {"cat", r_along}, {"_softmax", r_along}, {"mean", r_mean},
    {"native_layer_norm", r_layer_norm}, {"index_select", r_index_select}, {"index_copy", r_index_copy}, {"mm", r_matmul}, {"bmm", r_matmul}, {"addmm", r_matmul}, {"baddbmm", r_matmul}, {"split", r_split},
    {"split_with_sizes", r_split_sizes},
    {"clone", r_pointwise}, {"contiguous", r_pointwise}, {"neg", r_pointwise}, {"silu", r_pointwise},
    {"gelu", r_pointwise}, {"relu", r_pointwise}, {"tanh", r_pointwise}, {"sigmoid", r_pointwise},
    {"exp", r_pointwise}, {"rsqrt", r_pointwise}, {"pow", r_pointwise}, {"add", r_pointwise},
    {"sub", r_pointwise}, {"mul", r_pointwise}, {"div", r_pointwise}, {"masked_fill", r_pointwise},
    {"where", r_pointwise}, {"_to_copy", r_pointwise}, {"alias", r_pointwise}, {"detach", r_pointwise},
    {"zeros_like", r_pointwise}, {"ones_like", r_pointwise}, {"full_like", r_pointwise},
};

/* A linear whose weight is a parameter (mm / addmm of t(W)): the node of W's t, else -1. */
static int linear_weight(const cc_tp_plan *p, const gr_node *n)
{
    int add = !strcmp(n->base, "addmm");
    if (strcmp(n->base, "mm") && !add)
        return -1;
    const gr_arg *b = &n->args[add + 1];
    if (b->kind != GR_ARG_VALUE || p->g->values[b->value].kind != GR_VAL_NODE)
        return -1;
    const gr_node *t = &p->g->nodes[p->g->values[b->value].node];
    if (strcmp(t->base, "t") || t->args[0].kind != GR_ARG_VALUE || p->g->values[t->args[0].value].kind != GR_VAL_PARAM)
        return -1;
    return p->g->values[b->value].node;
}

/* Node n as a row-parallel linear: its input cut along K, W by columns,
 * its bias on card 0 only. */
static int seed_row(cc_tp_plan *p, int node)
{
    const gr_node *n = &p->g->nodes[node];
    int add = !strcmp(n->base, "addmm");
    int A = n->args[add].value;
    int64_t K = vtype(p, A)->shape[1];
    demand d = {.state = D_CUT, .nf = 1, .origin = node};
    d.f[0] = (cc_tp_factor){1, 1, p->ncards, K / p->ncards, 1};
    p->row[node] = 1;
    if (ask(p, node, A, &d) || ask(p, node, n->args[add + 1].value, &(demand){D_CUT, 1, node, {{0, 1, p->ncards, K / p->ncards, 1}}}))
        return -1;
    if (add && n->args[0].kind == GR_ARG_VALUE) {
        demand b = {.state = D_CARD0, .origin = node};
        return ask(p, node, n->args[0].value, &b);
    }
    return 0;
}

/* Every value node n reads, whole. */
static int ask_all_full(cc_tp_plan *p, int node)
{
    const gr_node *n = &p->g->nodes[node];
    demand f = full();
    for (int i = 0; i < n->nargs; i++) {
        const gr_arg *a = &n->args[i];
        if (a->kind == GR_ARG_VALUE && ask(p, node, a->value, &f))
            return -1;
        for (int j = 0; j < a->nitems; j++)
            if (a->items[j].kind == GR_ARG_VALUE && ask(p, node, a->items[j].value, &f))
                return -1;
    }
    return 0;
}

static int run_rule(cc_tp_plan *p, int node)
{
    const gr_node *n = &p->g->nodes[node];
    demand *out = &p->dem[n->out];
    if (resolve_deferred(p, n->out))
        return -1;
    if (!strcmp(n->base, "index_copy") && out->state == D_UNSET && n->nargs == 4 &&
        n->args[3].kind == GR_ARG_VALUE && is_update_value(p, n->out)) {
        p->deferred[node] = 1;
        return 0;
    }
    if (!strcmp(n->op, "getitem")) {
        int t = n->args[0].value, i = (int)n->args[1].i;
        p->elem[t * GR_MAX_RANK + i] = out->state == D_UNSET ? full() : *out;
        return 0;
    }
    if (out->state != D_CUT && p->cand[node] && linear_weight(p, n) >= 0 &&
        vtype(p, n->args[!strcmp(n->base, "addmm")].value)->shape[1] % p->ncards == 0)
        return seed_row(p, node);
    int tuple = p->g->values[n->out].ntuple > 0;
    if (!tuple && out->state != D_CUT)
        return ask_all_full(p, node);
    rule_ctx c = {p, node, n, out, vtype(p, n->out)};
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
        if (!strcmp(rules[r].base, n->base))
            return rules[r].fn(&c);
    if (!tuple)
        return fail(p, node, out->origin, 1, "the splitter has no rule for it");
    /* a multi-output op other than split: whole, unless a piece is cut */
    for (int i = 0; i < p->g->values[n->out].ntuple; i++)
        if (p->elem[n->out * GR_MAX_RANK + i].state == D_CUT)
            return fail(p, node, p->elem[n->out * GR_MAX_RANK + i].origin, 1, "the splitter has no rule for it");
    return ask_all_full(p, node);
}

/* One backward pass with the current candidates; 0 or -1 (fail_node set). */
static int solve_once(cc_tp_plan *p)
{
    const gr_graph *g = p->g;
    memset(p->dem, 0, (size_t)g->nvalues * sizeof *p->dem);
    memset(p->elem, 0, (size_t)g->nvalues * GR_MAX_RANK * sizeof *p->elem);
    memset(p->row, 0, (size_t)g->nnodes);
    memset(p->deferred, 0, (size_t)g->nnodes);
    p->fail_node = -1;
    /* an output nothing else cuts is whole; one the attention cuts (a
     * decode step's new keys and values) comes out in parts */
    for (int n = g->nnodes - 1; n >= 0; n--)
        if (run_rule(p, n))
            return -1;
    for (int v = 0; v < g->nvalues; v++) /* sources that are no node's */
        if (g->values[v].kind != GR_VAL_NODE && resolve_deferred(p, v))
            return -1;
    return 0;
}

cc_tp_plan *cc_tp_split(const gr_graph *g, int ncards, char *err, size_t errlen)
{
    cc_tp_plan *p = calloc(1, sizeof *p);
    p->g = g;
    p->ncards = ncards;
    p->dem = calloc((size_t)g->nvalues, sizeof *p->dem);
    p->elem = calloc((size_t)g->nvalues * GR_MAX_RANK, sizeof *p->elem);
    p->row = calloc((size_t)g->nnodes + 1, 1);
    p->cand = calloc((size_t)g->nnodes + 1, 1);
    p->deferred = calloc((size_t)g->nnodes + 1, 1);
    if (!p->dem || !p->elem || !p->row || !p->cand || !p->deferred)
        abort();
    /* one card: nothing to split, no allreduce to add */
    memset(p->cand, ncards > 1, (size_t)g->nnodes);
    /* a linear whose cut runs into a reduction along it (a norm before
     * the LM head) stays whole; one into an op without a rule is an error */
    while (solve_once(p)) {
        const gr_node *n = &g->nodes[p->fail_node];
        int origin = p->fail_origin;
        if (p->unknown || origin < 0 || !p->cand[origin]) {
            isa_errf(err, errlen, "%s:%d: %s: cannot split for tensor parallelism: %s", g->path, n->line, n->op, p->why);
            cc_tp_free(p);
            return NULL;
        }
        p->cand[origin] = 0;
    }
    return p;
}

void cc_tp_free(cc_tp_plan *p)
{
    if (!p)
        return;
    free(p->dem);
    free(p->elem);
    free(p->row);
    free(p->cand);
    free(p->deferred);
    free(p);
}

int cc_tp_rows(const cc_tp_plan *p)
{
    int k = 0;
    for (int n = 0; n < p->g->nnodes; n++)
        k += p->row[n];
    return k;
}


/* ---- A card's graph ---- */

/* Value v's type on a card (element i of a tuple: i >= 0). */
static gr_ttype local_type(const cc_tp_plan *p, int v, int i)
{
    const gr_value *val = &p->g->values[v];
    gr_ttype t = i >= 0 ? val->tuple[i] : val->type;
    const demand *d = i >= 0 ? &p->elem[v * GR_MAX_RANK + i] : &p->dem[v];
    for (int k = 0; d->state == D_CUT && k < d->nf; k++)
        t.shape[d->f[k].dim] /= d->f[k].parts;
    return t;
}

static void print_type(const cc_tp_plan *p, int v, FILE *f)
{
    const gr_value *val = &p->g->values[v];
    char buf[512];
    if (!val->ntuple) {
        gr_ttype t = local_type(p, v, -1);
        gr_ttype_str(&t, buf, sizeof buf);
        fputs(buf, f);
        return;
    }
    fputc('(', f);
    for (int i = 0; i < val->ntuple; i++) {
        gr_ttype t = local_type(p, v, i);
        gr_ttype_str(&t, buf, sizeof buf);
        fprintf(f, "%s%s", i ? ", " : "", buf);
    }
    fputc(')', f);
}

/* A value's name on a card: a cut parameter is a shard of its own. */
static void print_name(const cc_tp_plan *p, int v, FILE *f)
{
    const gr_value *val = &p->g->values[v];
    int cut = val->kind == GR_VAL_PARAM && (p->dem[v].state == D_CUT || p->dem[v].state == D_CARD0);
    fprintf(f, "%%%s%s", val->name, cut ? "_shard" : "");
}

static void print_ints(const int64_t *x, int n, FILE *f)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)x[i]);
    fputc(']', f);
}

static void print_arg(const cc_tp_plan *p, const gr_arg *a, FILE *f)
{
    if (a->key)
        fprintf(f, "%s=", a->key);
    if (a->kind == GR_ARG_VALUE) {
        print_name(p, a->value, f);
    } else if (a->kind == GR_ARG_LIST) {
        fputc('[', f);
        for (int i = 0; i < a->nitems; i++) {
            if (i)
                fputs(", ", f);
            print_arg(p, &a->items[i], f);
        }
        fputc(']', f);
    } else {
        gr_arg a2 = *a;
        a2.key = NULL;
        gr_arg_print(p->g, &a2, f);
    }
}

/* Argument i of node n as the card computes it: shapes are the card's. */
static void print_node_arg(const cc_tp_plan *p, const gr_node *n, int i, FILE *f)
{
    const gr_arg *a = &n->args[i];
    gr_ttype t = local_type(p, n->out, -1);
    const char *b = n->base;
    int shape_arg = i == 1 && (!strcmp(b, "view") || !strcmp(b, "_unsafe_view") || !strcmp(b, "reshape") ||
                               !strcmp(b, "_reshape_alias") || !strcmp(b, "expand"));
    if (a->key)
        fprintf(f, "%s=", a->key);
    if (shape_arg) {
        print_ints(t.shape, t.rank, f);
    } else if (i == 2 && !strcmp(b, "_reshape_alias")) { /* strides of the card's contiguous copy */
        int64_t st[GR_MAX_RANK], s = 1;
        for (int d = t.rank - 1; d >= 0; d--, s *= t.shape[d + 1])
            st[d] = s;
        print_ints(st, t.rank, f);
    } else if (i == 1 && !strcmp(b, "split")) {
        gr_ttype e = local_type(p, n->out, 0);
        int dim = normdim(int_arg(n, 2, "dim", 0), e.rank);
        fprintf(f, "%lld", (long long)e.shape[dim]);
    } else if (i == 1 && !strcmp(b, "split_with_sizes")) { /* each piece's part on a card */
        int np = p->g->values[n->out].ntuple;
        int dim = normdim(int_arg(n, 2, "dim", 0), local_type(p, n->out, 0).rank);
        int64_t sizes[GR_MAX_RANK];
        for (int k = 0; k < np && k < GR_MAX_RANK; k++)
            sizes[k] = local_type(p, n->out, k).shape[dim];
        print_ints(sizes, np, f);
    } else if (i == 3 && !strcmp(b, "slice") && a->kind == GR_ARG_INT) {
        int dim = normdim(int_arg(n, 1, "dim", 0), t.rank);
        int64_t local = local_type(p, n->args[0].value, -1).shape[dim];
        /* the splitter lets only whole slices along a cut dimension through */
        fprintf(f, "%lld", (long long)(a->i == vtype(p, n->args[0].value)->shape[dim] ? local : a->i));
    } else {
        gr_arg a2 = *a;
        a2.key = NULL;
        print_arg(p, &a2, f);
    }
}

static void print_node(const cc_tp_plan *p, int node, FILE *f)
{
    const gr_node *n = &p->g->nodes[node];
    const char *name = p->g->values[n->out].name;
    fprintf(f, "%%%s%s: ", name, p->row[node] ? "_partial" : "");
    print_type(p, n->out, f);
    fprintf(f, " = %s(", n->op);
    for (int i = 0; i < n->nargs; i++) {
        if (i)
            fputs(", ", f);
        print_node_arg(p, n, i, f);
    }
    fputs(")\n", f);
    if (p->row[node]) {
        fprintf(f, "%%%s: ", name);
        print_type(p, n->out, f);
        fprintf(f, " = _c10d_functional.all_reduce.default(%%%s_partial, \"sum\", \"tp\")\n", name);
    }
}

char *cc_tp_graph_text(const cc_tp_plan *p, const char *weights)
{
    const gr_graph *g = p->g;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    fprintf(f, "# %s split for %d cards (docs/multicard.md)\ngraph %s_tp%d\n", g->name, p->ncards, g->name,
            p->ncards);
    if (weights)
        fprintf(f, "weights \"%s\"\n", weights);
    for (int i = 0; i < g->ninputs; i++) {
        fprintf(f, "input %%%s: ", g->values[g->inputs[i]].name);
        print_type(p, g->inputs[i], f);
        fputc('\n', f);
    }
    for (int i = 0; i < g->nparams; i++) {
        int v = g->params[i];
        char key[1024];
        cc_tp_param_key(p, v, key, sizeof key);
        fputs(g->values[v].state ? "state " : "param ", f);
        print_name(p, v, f);
        fputs(": ", f);
        print_type(p, v, f);
        fprintf(f, " = \"%s\"\n", key);
    }
    for (int n = 0; n < g->nnodes; n++)
        print_node(p, n, f);
    fputs("output ", f);
    for (int i = 0; i < g->noutputs; i++)
        fprintf(f, "%s%%%s", i ? ", " : "", g->values[g->outputs[i]].name);
    fputc('\n', f);
    for (int i = 0; i < g->nupdates; i++) {
        fputs("update ", f);
        print_name(p, g->updates[i].state, f);
        fprintf(f, " = %%%s\n", g->values[g->updates[i].value].name);
    }
    fclose(f);
    return text;
}

void cc_tp_param_key(const cc_tp_plan *p, int v, char *buf, size_t len)
{
    const gr_value *val = &p->g->values[v];
    int cut = p->dem[v].state == D_CUT || p->dem[v].state == D_CARD0;
    snprintf(buf, len, "%s%s", val->param_key ? val->param_key : val->name, cut ? ".shard" : "");
}

/* The flat index in value v's whole tensor of element i of card's part. */
static int64_t whole_index(const cc_tp_plan *p, int v, int card, const gr_ttype *lt, int64_t i)
{
    const demand *d = &p->dem[v];
    const gr_ttype *t = &p->g->values[v].type;
    int64_t idx[GR_MAX_RANK], src = 0, stride = 1;
    for (int e = lt->rank - 1; e >= 0; e--) {
        idx[e] = i % lt->shape[e];
        i /= lt->shape[e];
    }
    for (int k = 0; k < d->nf; k++) {
        const cc_tp_factor *F = &d->f[k];
        int64_t part = (card / F->stride) % F->parts, l = idx[F->dim];
        idx[F->dim] = (l / F->b * F->parts + part) * F->b + l % F->b;
    }
    for (int e = t->rank - 1; e >= 0; e--) {
        src += idx[e] * stride;
        stride *= t->shape[e];
    }
    return src;
}

int cc_tp_is_cut(const cc_tp_plan *p, int v)
{
    return p->dem[v].state == D_CUT;
}

int64_t cc_tp_shard(const cc_tp_plan *p, int v, int card, const float *full, float *out)
{
    const demand *d = &p->dem[v];
    int64_t n = gr_ttype_numel(&p->g->values[v].type);
    if (d->state == D_CARD0) { /* a row-parallel linear's bias: added once, by card 0 */
        for (int64_t i = 0; i < n; i++)
            out[i] = card ? 0.0f : full[i];
        return n;
    }
    if (d->state != D_CUT) {
        memcpy(out, full, (size_t)n * sizeof *out);
        return n;
    }
    gr_ttype lt = local_type(p, v, -1);
    int64_t ln = gr_ttype_numel(&lt);
    for (int64_t i = 0; i < ln; i++)
        out[i] = full[whole_index(p, v, card, &lt, i)];
    return ln;
}

void cc_tp_unshard(const cc_tp_plan *p, int v, int card, const float *part, float *full)
{
    gr_ttype lt = local_type(p, v, -1);
    int64_t ln = gr_ttype_numel(&lt);
    for (int64_t i = 0; i < ln; i++)
        full[p->dem[v].state == D_CUT ? whole_index(p, v, card, &lt, i) : i] = part[i];
}
