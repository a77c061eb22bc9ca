/* ref_exec.c: the reference executor (rt.h, "Reference executor"): the op families, values and leaves, the run loop. */
#include "ref_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The op families, each a table in its own file. */
static const ref_ops *const families[] = {
    &ref_matmul_ops, &ref_binary_ops, &ref_unary_ops, &ref_select_ops, &ref_copy_ops,
    &ref_views_ops, &ref_gather_ops, &ref_create_ops, &ref_reductions_ops, &ref_norm_ops, &ref_act_ops,
    &ref_sort_ops, &ref_index_ops, &ref_spatial_ops, &ref_conv_ops, &ref_vecnorm_ops, &ref_linalg_ops,
    &ref_data_ops, &ref_special_ops, &ref_fpbits_ops, &ref_poly_ops, &ref_nll_ops, &ref_spatial2_ops, &ref_pool3d_ops, &ref_loss_ops, &ref_space_ops, &ref_dist_ops, &ref_mode_ops, &ref_segment_ops, &ref_histogram_ops, &ref_embag_ops, &ref_grid_ops, &ref_trilinear_ops, &ref_matexp_ops,
    &ref_ctc_ops, &ref_lstsq_ops, &ref_random_ops,
};

/* The op table row of a node, or NULL. */
static const ref_op *find_op(const gr_node *n)
{
    if (strncmp(n->op, "aten.", 5) != 0 && strcmp(n->op, "getitem") != 0)
        return NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (size_t i = 0; i < families[f]->n; i++)
            if (strcmp(n->base, families[f]->ops[i].base) == 0)
                return &families[f]->ops[i];
    return NULL;
}

/* The executor's state for g, nothing checked. */
static rt_ref *ref_alloc(const gr_graph *g, char *err, size_t errlen)
{
    rt_ref *r = calloc(1, sizeof *r);
    if (!r) {
        isa_errf(err, errlen, "%s: out of host memory", g->path);
        return NULL;
    }
    r->g = g;
    size_t nv = g->nvalues ? (size_t)g->nvalues : 1;
    r->vals = calloc(nv, sizeof *r->vals);
    r->keep = calloc(nv, 1);
    r->last_use = malloc(nv * sizeof *r->last_use);
    r->drawn = calloc(nv, 1);
    r->wrote = -1;
    if (!r->vals || !r->keep || !r->last_use || !r->drawn) {
        rt_ref_free(r);
        isa_errf(err, errlen, "%s: out of host memory", g->path);
        return NULL;
    }
    return r;
}

rt_ref *rt_ref_new_partial(const gr_graph *g, char *err, size_t errlen)
{
    return ref_alloc(g, err, errlen);
}

rt_ref *rt_ref_new(const gr_graph *g, char *err, size_t errlen)
{
    rt_ref *r = ref_alloc(g, err, errlen);
    for (int n = 0; r && n < g->nnodes; n++)
        if (!find_op(&g->nodes[n])) {
            isa_errf(err, errlen, "%s:%d: unsupported op %s", g->path, g->nodes[n].line, g->nodes[n].op);
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
            ref_slot_free(&r->vals[i]);
    free(r->vals);
    free(r->keep);
    free(r->last_use);
    free(r->drawn);
    for (int i = 0; i < r->nres; i++)
        ref_tfree(&r->res[i]);
    free(r->res);
    free(r);
}

void rt_ref_keep(rt_ref *r, int v)
{
    if (v >= 0 && v < r->g->nvalues)
        r->keep[v] = 1;
}

/* The input or parameter called name (value name, %name or weight key). */
static int find_leaf(const gr_graph *g, const char *name)
{
    int v = gr_graph_find(g, name);
    if (v >= 0 && g->values[v].kind != GR_VAL_NODE)
        return v;
    for (int i = 0; i < g->nparams; i++)
        if (strcmp(g->values[g->params[i]].param_key, name) == 0)
            return g->params[i];
    return v >= 0 ? -2 : -1;
}

/* Set leaf v from count values of either type. */
static int set_leaf(rt_ref *r, int v, const float *f, const int64_t *i, int64_t count, char *err, size_t errlen)
{
    const gr_value *val = &r->g->values[v];
    int64_t n = gr_ttype_numel(&val->type);
    if (count != n) {
        char ts[256];
        gr_ttype_str(&val->type, ts, sizeof ts);
        return isa_errf(err, errlen, "%s:%d: %%%s is %s (%lld elements) but %lld values were given", r->g->path,
                        val->line, val->name, ts, (long long)n, (long long)count);
    }
    slot *s = &r->vals[v];
    ref_slot_free(s);
    s->t = calloc(1, sizeof *s->t);
    if (!s->t)
        return isa_errf(err, errlen, "out of host memory");
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
        ref_slot_free(s);
        return isa_errf(err, errlen, "out of host memory for %%%s", val->name);
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
        return isa_errf(err, errlen, "%s: %s is computed by the graph, not an input or a parameter", r->g->path, name);
    if (v < 0)
        return isa_errf(err, errlen, "%s: no input or parameter %s", r->g->path, name);
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
    const gr_value *val = &r->g->values[v];
    if (rt_st_check_type(t, f->path, val, what, err, errlen))
        return -1;
    kind k = kind_of(val->type.dtype);
    int rc;
    if (k == K_F) {
        float *buf = malloc((t->numel ? (size_t)t->numel : 1) * sizeof *buf);
        if (!buf)
            return isa_errf(err, errlen, "out of host memory");
        rt_st_to_f32(t, buf);
        rc = set_leaf(r, v, buf, NULL, t->numel, err, errlen);
        free(buf);
    } else {
        int64_t *buf = malloc((t->numel ? (size_t)t->numel : 1) * sizeof *buf);
        if (!buf)
            return isa_errf(err, errlen, "out of host memory");
        rc = rt_st_to_i64(t, f->path, buf, err, errlen);
        if (!rc)
            rc = set_leaf(r, v, NULL, buf, t->numel, err, errlen);
        free(buf);
    }
    return rc;
}

int rt_ref_load_weights(rt_ref *r, const char *path, char *err, size_t errlen)
{
    const gr_graph *g = r->g;
    char *rel = NULL;
    if (!path) {
        if (!g->nparams)
            return 0;
        if (!g->weights)
            return isa_errf(err, errlen, "%s: the graph has parameters but no weights line", g->path);
        path = rel = gr_graph_relpath(g, g->weights);
    }
    rt_st_file *f = rt_st_read(path, err, errlen);
    int rc = f ? 0 : -1;
    for (int i = 0; f && i < g->nparams && !rc; i++) {
        int v = g->params[i];
        const gr_value *val = &g->values[v];
        const rt_st_tensor *t = rt_st_find(f, val->param_key);
        if (!t)
            rc = isa_errf(err, errlen, "%s: missing weight %s for %%%s (graph line %d)", path, val->param_key,
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
    const gr_graph *g = r->g;
    rt_st_file *f = rt_st_read(path, err, errlen);
    if (!f)
        return -1;
    int rc = 0;
    for (int i = 0; i < g->ninputs && !rc; i++) {
        int v = g->inputs[i];
        const gr_value *val = &g->values[v];
        const rt_st_tensor *t = rt_st_find(f, val->name);
        if (!t)
            rc = isa_errf(err, errlen, "%s: missing input %s for %%%s (graph line %d)", path, val->name, val->name,
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
            t->eb[w][k] = (float)ref_eb_leaf(t->f[k]);
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
                return ref_fail(E, "internal error: the error bound (track %d) of element %lld is NaN for the value %g",
                                w, (long long)k, ldd(t, k));
    return 0;
}

/* Does an argument read a value that depends on a draw? */
static int reads_drawn(const rt_ref *r, const gr_arg *a)
{
    if (a->kind == GR_ARG_VALUE && r->drawn[a->value])
        return 1;
    for (int i = 0; i < a->nitems; i++)
        if (reads_drawn(r, &a->items[i]))
            return 1;
    return 0;
}

static void last_uses(const gr_arg *a, int node, int *last)
{
    if (a->kind == GR_ARG_VALUE)
        last[a->value] = node;
    for (int i = 0; i < a->nitems; i++)
        last_uses(&a->items[i], node, last);
}

/* Run node n on the values of its arguments into its slot. */
static int exec_node(rt_ref *r, int n)
{
    const gr_graph *g = r->g;
    const gr_node *nd = &g->nodes[n];
    r->node = nd;
    r->nres = 0;
    r->draws = 0;
    r->wrote = -1;
    const ref_op *op = find_op(nd);
    int rc;
    if (!op)
        rc = isa_errf(r->err, r->errlen, "%s:%d: unsupported op %s", g->path, nd->line, nd->op);
    else
        rc = op->fn(r, op->code);
    const gr_value *val = &g->values[nd->out];
    int want = val->ntuple ? val->ntuple : 1;
    if (!rc && r->nres != want)
        rc = ref_fail(r, "declares %d result%s but the op computes %d", want, want > 1 ? "s" : "", r->nres);
    for (int i = 0; !rc && i < r->nres; i++)
        rc = check_bounds(r, &r->res[i]);
    if (rc) {
        for (int i = 0; i < r->nres; i++)
            ref_tfree(&r->res[i]);
        r->nres = 0;
        r->node = NULL;
        return -1;
    }
    slot *s = &r->vals[nd->out];
    ref_slot_free(s);
    s->t = malloc((size_t)r->nres * sizeof *s->t);
    if (!s->t) {
        for (int i = 0; i < r->nres; i++)
            ref_tfree(&r->res[i]);
        r->nres = 0;
        return ref_fail(r, "out of host memory");
    }
    memcpy(s->t, r->res, (size_t)r->nres * sizeof *s->t);
    s->nt = r->nres;
    r->nres = 0;
    for (int i = 0; i < nd->nargs && !r->draws; i++)
        r->draws = reads_drawn(r, &nd->args[i]);
    r->drawn[nd->out] = (char)r->draws;
    if (r->wrote >= 0 && r->draws)
        r->drawn[r->wrote] = 1;
    return 0;
}

void rt_ref_seed(rt_ref *r, uint64_t seed) { r->seed = seed; }

void rt_ref_on_value(rt_ref *r, rt_ref_hook fn, void *ctx)
{
    r->on_value = fn;
    r->hook_ctx = ctx;
}

int rt_ref_reseed(rt_ref *r, int v, const float *data, int64_t count, char *err, size_t errlen)
{
    slot *s = v >= 0 && v < r->g->nvalues ? &r->vals[v] : NULL;
    tens *t = s && s->nt == 1 && !r->g->values[v].ntuple ? &s->t[0] : NULL;
    if (!t || !t->f || t->n != count)
        return isa_errf(err, errlen, "%s: %%%s is not a float tensor of %lld elements", r->g->path,
                        v >= 0 && v < r->g->nvalues ? r->g->values[v].name : "?", (long long)count);
    memcpy(t->f, data, (size_t)count * sizeof *data);
    for (int w = 0; w < 2; w++)
        if (t->eb[w])
            memset(t->eb[w], 0, (size_t)count * sizeof *t->eb[w]);
    return 0;
}

int rt_ref_drawn(const rt_ref *r, int v) { return v >= 0 && v < r->g->nvalues && r->drawn[v]; }

int rt_ref_written(const rt_ref *r) { return r->wrote; }

int rt_ref_supports(const gr_node *n)
{
    return find_op(n) != NULL;
}

int rt_ref_set_value(rt_ref *r, int v, const float *data, int64_t count, char *err, size_t errlen)
{
    if (v < 0 || v >= r->g->nvalues || r->g->values[v].ntuple)
        return isa_errf(err, errlen, "%s: no tensor value %d", r->g->path, v);
    return set_leaf(r, v, data, NULL, count, err, errlen);
}

int rt_ref_run_node(rt_ref *r, int n, char *err, size_t errlen)
{
    r->err = err;
    r->errlen = errlen;
    if (n < 0 || n >= r->g->nnodes)
        return isa_errf(err, errlen, "%s: no node %d", r->g->path, n);
    int rc = exec_node(r, n);
    r->node = NULL;
    return rc;
}

const char *rt_ref_reason(const gr_graph *g, int n, const char *msg)
{
    char head[4200];
    const int k = snprintf(head, sizeof head, "%s:%d: ", g->path, g->nodes[n].line);
    return k > 0 && (size_t)k < sizeof head && !strncmp(msg, head, (size_t)k) ? msg + k : msg;
}

int rt_ref_run(rt_ref *r, char *err, size_t errlen)
{
    const gr_graph *g = r->g;
    r->err = err;
    r->errlen = errlen;
    r->node = NULL;
    for (int v = 0; v < g->nvalues; v++) {
        const gr_value *val = &g->values[v];
        if (val->kind == GR_VAL_NODE)
            ref_slot_free(&r->vals[v]);
        else if (r->vals[v].nt != 1)
            return isa_errf(err, errlen, "%s:%d: %s %%%s has no value (%s first)", g->path, val->line,
                            val->kind == GR_VAL_INPUT ? "input" : "param", val->name,
                            val->kind == GR_VAL_INPUT ? "rt_ref_set or rt_ref_load_inputs" : "rt_ref_load_weights");
        else if (r->bounds && !r->vals[v].t[0].eb[0] && leaf_bounds(&r->vals[v].t[0]))
            return isa_errf(err, errlen, "%s: out of host memory for the bounds of %%%s", g->path, val->name);
        r->last_use[v] = -1;
    }
    for (int n = 0; n < g->nnodes; n++)
        for (int i = 0; i < g->nodes[n].nargs; i++)
            last_uses(&g->nodes[n].args[i], n, r->last_use);
    for (int i = 0; i < g->noutputs; i++)
        r->last_use[g->outputs[i]] = INT_MAX;
    for (int n = 0; n < g->nnodes; n++) {
        const gr_node *nd = &g->nodes[n];
        if (exec_node(r, n) || (r->on_value && r->on_value(r->hook_ctx, r, nd->out, err, errlen)))
            return -1;
        slot *s = &r->vals[nd->out];
        /* free what no later node reads */
        for (int i = 0; i < nd->nargs; i++) {
            const gr_arg *a = &nd->args[i];
            for (int j = 0; j < (a->kind == GR_ARG_LIST ? a->nitems : 1); j++) {
                const gr_arg *x = a->kind == GR_ARG_LIST ? &a->items[j] : a;
                if (x->kind == GR_ARG_VALUE && r->last_use[x->value] == n && !r->keep[x->value] &&
                    g->values[x->value].kind == GR_VAL_NODE)
                    ref_slot_free(&r->vals[x->value]);
            }
        }
        if (r->last_use[nd->out] == -1 && !r->keep[nd->out])
            ref_slot_free(s); /* dead value */
    }
    r->node = NULL;
    return 0;
}

const float *rt_ref_value(rt_ref *r, int v, gr_ttype *type)
{
    if (v < 0 || v >= r->g->nvalues)
        return NULL;
    const gr_value *val = &r->g->values[v];
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

const int64_t *rt_ref_value_i64(rt_ref *r, int v, gr_ttype *type)
{
    if (v < 0 || v >= r->g->nvalues)
        return NULL;
    const gr_value *val = &r->g->values[v];
    slot *s = &r->vals[v];
    if (val->ntuple || s->nt != 1 || !s->t[0].i)
        return NULL;
    if (type)
        *type = val->type;
    return s->t[0].i;
}

const float *rt_ref_output(rt_ref *r, int i, gr_ttype *type)
{
    if (i < 0 || i >= r->g->noutputs)
        return NULL;
    return rt_ref_value(r, r->g->outputs[i], type);
}
