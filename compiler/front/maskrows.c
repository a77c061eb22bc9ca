/* maskrows.c: which graph inputs are additive softmax masks only, and along
 * which of their axes a softmax row runs (docs/compiler.md, "Infinities").
 * Such an input's rows of -inf are uploaded as NaN (ISA_TF_NANROW), which
 * makes the row's softmax NaN as in PyTorch with no guard on the device. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

enum { AX_NEW = -1, AX_MIXED = -2 }; /* a map's entry besides an input axis */
enum { ROW_NONE = -3 };              /* walk.axis before any softmax */

typedef struct {
    const gr_graph *g;
    int x;      /* the input */
    int axis;   /* the softmaxes' axis of x (-1: x broadcasts along it), ROW_NONE: none seen */
    int budget; /* values still to visit: a long chain is not a mask */
    char *fx;   /* mark_from's */
} walk;

static int is_op(const gr_node *n, const char *const *ops, size_t nops)
{
    for (size_t i = 0; i < nops; i++)
        if (!strcmp(n->base, ops[i]))
            return 1;
    return 0;
}

/* Does argument a (a list: one of its items) use a value marked in fx? */
static int arg_from(const gr_arg *a, const char *fx)
{
    if (a->kind == GR_ARG_VALUE)
        return fx[a->value];
    for (int k = 0; a->kind == GR_ARG_LIST && k < a->nitems; k++)
        if (arg_from(&a->items[k], fx))
            return 1;
    return 0;
}

/* fx[v]: is value v x or computed from it (the nodes are in a topological
 * order)? */
static void mark_from(const gr_graph *g, int x, char *fx)
{
    fx[x] = 1;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k].nargs; i++)
            fx[g->nodes[k].out] |= arg_from(&g->nodes[k].args[i], fx);
}

/* A positive finite number (a scale that keeps -inf and NaN as they are). */
static int positive(const gr_arg *a)
{
    return a && ((a->kind == GR_ARG_FLOAT && a->f > 0 && a->f < 1e30) || (a->kind == GR_ARG_INT && a->i > 0));
}

/* Map of a reshape from in to out: an axis kept whole keeps its entry, a
 * new axis of size 1 is AX_NEW, axes merged or split are AX_MIXED (AX_NEW
 * when all they come from are). */
static void reshape_map(const gr_ttype *in, const int *m, const gr_ttype *out, int *o)
{
    int i = 0, j = 0;
    while (j < out->rank) {
        if (i < in->rank && in->shape[i] == out->shape[j]) {
            o[j++] = m[i++];
        } else if (i < in->rank && in->shape[i] == 1) {
            i++;
        } else if (out->shape[j] == 1 || i >= in->rank) {
            o[j++] = AX_NEW;
        } else {
            int64_t pi = in->shape[i], pj = out->shape[j];
            int all_new = m[i] == AX_NEW, j0 = j++;
            for (i++; pi != pj && (i < in->rank || j < out->rank);)
                if (pi < pj && i < in->rank)
                    all_new &= m[i] == AX_NEW, pi *= in->shape[i++];
                else
                    pj *= out->shape[j++];
            while (j0 < j)
                o[j0++] = all_new ? AX_NEW : AX_MIXED;
        }
    }
}

/* Map of broadcasting value type in (map m) to out: leading new axes. */
static void broadcast_map(const gr_ttype *in, const int *m, const gr_ttype *out, int *o)
{
    for (int j = 0; j < out->rank; j++)
        o[j] = j < out->rank - in->rank ? AX_NEW : m[j - (out->rank - in->rank)];
}

/* A softmax over x's derived value v with map m: its axis of x, which all
 * softmaxes must share. */
static int softmax_row(walk *w, const gr_node *n, int v, const int *m, int added)
{
    const gr_arg *s = gr_node_arg(n, 0, "self"), *d = gr_node_arg(n, 1, "dim");
    const gr_ttype *t = &w->g->values[v].type;
    if (!added || !s || s->kind != GR_ARG_VALUE || s->value != v || !d || d->kind != GR_ARG_INT)
        return -1;
    int64_t a = d->i < 0 ? d->i + t->rank : d->i;
    if (a < 0 || a >= (t->rank ? t->rank : 1) || (t->rank && m[a] == AX_MIXED))
        return -1;
    const gr_ttype *xt = &w->g->values[w->x].type;
    int k = !t->rank || m[a] == AX_NEW || xt->shape[m[a]] == 1 ? -1 : m[a];
    if (w->axis != ROW_NONE && w->axis != k)
        return -1;
    w->axis = k;
    return 0;
}

/* Use node n of value v (map m): its result's map into o, 1 to go on from
 * it, 0 at a softmax, -1 when n may change a row's NaN or -inf. */
static int step(walk *w, const gr_node *n, int v, const int *m, int added, int *o)
{
    static const char *const soft[] = {"_softmax", "softmax", "_log_softmax", "log_softmax"};
    const gr_graph *g = w->g;
    const gr_ttype *in = &g->values[v].type, *out = &g->values[n->out].type;
    if (is_op(n, soft, 4))
        return softmax_row(w, n, v, m, added) ? -1 : 0;
    if (g->values[n->out].ntuple || !ir_dtype_is_float(out->dtype))
        return -1;
    const unsigned a = ir_op_attrs(n->base);
    if ((a & (IR_OP_ALIAS | IR_OP_COPY | IR_OP_CAST)) && out->rank == in->rank) {
        memcpy(o, m, sizeof *o * (size_t)in->rank);
        return 1;
    }
    if ((a & IR_OP_EXPAND) || !strcmp(n->base, "add"))
        broadcast_map(in, m, out, o);
    else if (a & IR_OP_RESHAPE)
        reshape_map(in, m, out, o);
    else if (!strcmp(n->base, "mul") || !strcmp(n->base, "div"))
        memcpy(o, m, sizeof *o * (size_t)in->rank);
    else
        return -1;
    if (!strcmp(n->base, "add")) { /* x added to a term not from x, its sign kept */
        const gr_arg *a = gr_node_arg(n, 0, "self"), *b = gr_node_arg(n, 1, "other");
        const gr_arg *other = a && a->kind == GR_ARG_VALUE && a->value == v ? b : a;
        if (gr_node_arg(n, 99, "alpha") || !other ||
            (other->kind == GR_ARG_VALUE && w->fx[other->value]))
            return -1;
    }
    if (!strcmp(n->base, "mul") || !strcmp(n->base, "div")) { /* by a positive constant */
        const gr_arg *a = gr_node_arg(n, 0, "self"), *b = gr_node_arg(n, 1, "other");
        int first = a && a->kind == GR_ARG_VALUE && a->value == v;
        if (out->rank != in->rank || !positive(first ? b : !strcmp(n->base, "mul") ? a : NULL))
            return -1;
    }
    return 1;
}

/* Follow every use of v (map m: v's axes as x's); -1 when one is not a
 * mask's. */
static int visit(walk *w, int v, const int *m, int added)
{
    const gr_graph *g = w->g;
    if (--w->budget < 0)
        return -1;
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return -1;
    for (int u = 0; u < g->nupdates; u++)
        if (g->updates[u].src == v || g->updates[u].index == v || g->updates[u].state == v)
            return -1;
    for (int k = 0; k < g->nnodes; k++) {
        const gr_node *n = &g->nodes[k];
        int uses = 0;
        for (int i = 0; i < n->nargs; i++)
            uses |= gr_arg_uses(&n->args[i], v);
        if (!uses)
            continue;
        int o[GR_MAX_RANK];
        int r = step(w, n, v, m, added, o);
        if (r < 0 || (r > 0 && visit(w, n->out, o, added || !strcmp(n->base, "add"))))
            return -1;
    }
    return 0;
}

int ir_mask_axis(const gr_graph *g, int x)
{
    const gr_value *X = &g->values[x];
    if (X->kind != GR_VAL_INPUT || !ir_dtype_is_float(X->type.dtype))
        return IR_MASK_NONE;
    walk w = {g, x, ROW_NONE, 256, ir_xalloc((size_t)g->nvalues + 1)};
    mark_from(g, x, w.fx);
    int m[GR_MAX_RANK];
    for (int d = 0; d < X->type.rank; d++)
        m[d] = d;
    int bad = visit(&w, x, m, 0) || w.axis == ROW_NONE;
    free(w.fx);
    return bad ? IR_MASK_NONE : w.axis;
}
