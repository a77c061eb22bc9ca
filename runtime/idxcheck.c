/* idxcheck.c: the computed indices a launch checks.  An index the device
 * computes from inputs (a mask's count minus one, a shifted argmax) is
 * gathered one-hot: out of bounds, it would pick no row and give 0 where
 * PyTorch raises.  The compiler proves most in range (dec_range.c); the
 * others (prog->icheck) are computed here from the launch's inputs by the
 * reference executor, running only the nodes they need, and an
 * out-of-bounds one refuses the launch as PyTorch refuses the call; one
 * through an op the reference lacks refuses it too, never unchecked.  It
 * costs the host, not the device: a timing-only run has no values and
 * checks none. */
#include "rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The marked leaves from their host copies: 1 when all are there, 0 when
 * one is not (no check), -1 on error. */
static int set_leaves(const rt_program *prog, rt_ref *r, const char *mark, char *err, size_t errlen)
{
    const gr_graph *g = prog->igraph;
    for (int v = 0; v < g->nvalues; v++) {
        if (!mark[v] || g->values[v].kind == GR_VAL_NODE)
            continue;
        int t = rt_value_tensor(prog->p, g->values[v].name);
        if (t < 0 || !prog->host[t])
            return 0;
        if (rt_ref_set_value(r, v, prog->host[t], rt_tensor_elems(&prog->p->tensors[t]), err, errlen))
            return -1;
    }
    return 1;
}

/* Check c's values in r: 0, or -1 with the message. */
static int check_one(const rt_program *prog, rt_ref *r, const rt_icheck *c, int *line, char *err, size_t errlen)
{
    const gr_graph *g = prog->igraph;
    gr_ttype t;
    const int64_t *x = rt_ref_value_i64(r, c->value, &t);
    if (!x || rt_ref_drawn(r, c->value)) /* a random draw of the host's is not the device's */
        return 0;
    const gr_node *n = &g->nodes[c->node];
    char where[96];
    for (int64_t k = 0; k < gr_ttype_numel(&t); k++)
        if (x[k] < (c->wrap ? -c->size : 0) || x[k] >= c->size) {
            *line = n->line;
            return isa_errf(err, errlen, "%s: the index %%%s computed from the inputs holds %lld at element %lld, "
                            "out of bounds for %s (PyTorch raises)", n->op,
                            g->values[c->value].name, (long long)x[k], (long long)k,
                            rt_bounds_text(where, sizeof where, c->dim, c->size));
        }
    return 0;
}

/* The first node marked the reference executor cannot run, or -1. */
static int unrunnable(const gr_graph *g, const char *mark)
{
    for (int k = 0; k < g->nnodes; k++)
        if (mark[g->nodes[k].out] && !rt_ref_supports(&g->nodes[k]))
            return k;
    return -1;
}

/* Node u, which the reference executor cannot run, computes an index of
 * the checks: the first such index's refusal (unchecked, its gather could
 * give 0 where PyTorch raises). */
static int uncheckable(const rt_program *prog, int u, int *line, char *err, size_t errlen)
{
    const gr_graph *g = prog->igraph;
    char *mark = calloc((size_t)g->nvalues + 1, 1);
    if (!mark)
        return isa_errf(err, errlen, "out of host memory");
    const rt_icheck *c = prog->icheck;
    for (; c < prog->icheck + prog->nicheck - 1; c++) {
        memset(mark, 0, (size_t)g->nvalues + 1);
        gr_mark_upstream(g, c->value, mark);
        if (mark[g->nodes[u].out])
            break;
    }
    free(mark);
    const gr_node *n = &g->nodes[c->node], *m = &g->nodes[u];
    *line = n->line;
    return isa_errf(err, errlen, "%s: the index %%%s is computed from the inputs through %s (graph line %d), which "
                    "the host cannot run to check it against its bounds before the launch (--no-values runs "
                    "without values)", n->op, g->values[c->value].name, m->op, m->line);
}

/* Node k of g refused its values in the reference ("PATH:LINE: msg"): -1,
 * with *line its line and the message after it, as check_one's. */
static int refused_inner(const gr_graph *g, int k, int *line, char *err)
{
    *line = g->nodes[k].line;
    const char *why = rt_ref_reason(g, k, err);
    memmove(err, why, strlen(why) + 1);
    return -1;
}

int rt_index_check(const rt_program *prog, int *line, char *err, size_t errlen)
{
    if (!prog->nicheck)
        return 0;
    const gr_graph *g = prog->igraph;
    char *mark = calloc((size_t)g->nvalues + 1, 1);
    rt_ref *r = mark ? rt_ref_new_partial(g, err, errlen) : NULL;
    if (!r) {
        free(mark);
        return isa_errf(err, errlen, "out of host memory");
    }
    for (int k = 0; k < prog->nicheck; k++)
        gr_mark_upstream(g, prog->icheck[k].value, mark); /* the nodes it needs, and their leaves */
    const int u = unrunnable(g, mark);
    int rc = u >= 0 ? uncheckable(prog, u, line, err, errlen) : set_leaves(prog, r, mark, err, errlen);
    if (rc == 1) {
        rt_ref_seed(r, prog->seed);
        /* an op refusing its values on the way (an inner index) refuses the launch as PyTorch */
        rc = 0;
        for (int k = 0; !rc && k < g->nnodes; k++)
            rc = mark[g->nodes[k].out] && rt_ref_run_node(r, k, err, errlen) ? refused_inner(g, k, line, err) : 0;
        for (int k = 0; !rc && k < prog->nicheck; k++)
            rc = check_one(prog, r, &prog->icheck[k], line, err, errlen);
    }
    rt_ref_free(r);
    free(mark);
    return rc < 0 ? -1 : 0;
}
