/* validate.c: checking a program's outputs against a host reference.
 *
 * The program's graph text says what it computes, in one of two forms:
 *
 * - a full graph (docs/graph-format.md: typed values, `input`, `param`,
 *   `output` lines): it is parsed (graph/graph.h) and run by the
 *   reference executor (runtime/ref_*.c) on the host copies of the
 *   program's tensors; every op the executor implements can be checked.
 *   rt_check_graph does the same for a graph already parsed.
 * - short lines, one op each, without types:
 *     %C = aten.mm(%A, %B)
 *     %Y = aten._softmax(%X, -1, False)
 *   Lines starting with '#' are comments.  Values flow by name: a line's
 *   arguments are the host copies of the program's tensors or the results
 *   of earlier lines.  Only these two ops are understood (shortform.c).
 *
 * Each output gets a per-element tolerance (docs/validation.md derives
 * them): for the short form the DL16 bounds of mm and softmax; for a full
 * graph the error bounds the reference executor propagates through the
 * whole graph (rt_ref_track_errors: every op's own DL16 rounding plus its
 * arguments' bounds carried through it), the smaller of the worst case
 * and RT_REF_LAMBDA times the probabilistic scale, plus 2^-30.  Every
 * output tensor of the program is read from the device and compared
 * (compare.c), with the executor's values or (rt_check_expected) PyTorch's;
 * an output that depends on a random draw always with the executor's
 * interval (docs/validation.md, "Random ops").
 */
#include "rt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TORCH_REL 0x1p-10 /* PyTorch's fp32 outputs: the tolerance widened by this much of itself */

/* ---- Full graphs: the reference executor ---- */

/* A full graph has typed values or declaration lines; the short form has
 * neither. */
static int is_full_graph(const char *text)
{
    static const char *const words[] = {"graph", "weights", "input", "param", "output", "hint"};
    for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        while (*l == ' ' || *l == '\t')
            l++;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
            size_t k = strlen(words[w]);
            if (strncmp(l, words[w], k) == 0 && (l[k] == ' ' || l[k] == '\t' || l[k] == '%'))
                return 1;
        }
        if (*l == '%') { /* %name: TYPE = ... */
            const char *q = l + 1;
            while (*q && !strchr(" \t:=(\n", *q))
                q++;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == ':')
                return 1;
        }
    }
    return 0;
}

/* A bf16 or fp16 output is read back narrowed toward zero (rt_read_tensor):
 * up to one unit in the last place of its dtype below the DL16 value, so its
 * tolerance grows by that unit; against PyTorch's value, itself rounded to
 * nearest from the exact one, by half a unit more (docs/validation.md). */
static void host_dtype_tolerance(isa_host_dtype hdt, int torch, const float *ref, int64_t n, double *tol)
{
    for (int64_t k = 0; hdt != ISA_HT_F32 && k < n; k++)
        tol[k] += (torch ? 1.5 : 1.0) * isa_host_ulp(hdt, ref[k]);
}

/* The graph value an output tensor of the program stands for: the value of
 * the same name, else "outputN" is the graph's output N. */
static int output_value(const gr_graph *g, const char *name)
{
    int v = gr_graph_find_tensor(g, name);
    if (v >= 0)
        return v;
    char *end;
    if (strncmp(name, "output", 6) == 0 && name[6] >= '0' && name[6] <= '9') {
        long i = strtol(name + 6, &end, 10);
        if (!*end && i < g->noutputs)
            return g->outputs[i];
    }
    return -1;
}

/* The program tensor holding graph leaf v: by name, or by weight key. */
static int leaf_tensor(const isa_program *p, const gr_value *val)
{
    char tn[GR_TENSOR_NAME_MAX];
    gr_tensor_name(val->name, tn);
    int i = isa_program_find_tensor(p, tn);
    if (i < 0 && val->param_key) {
        gr_tensor_name(val->param_key, tn);
        i = isa_program_find_tensor(p, tn);
    }
    return i;
}

/* The graph's output index of value v, or -1. */
static int output_index(const gr_graph *g, int v)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return i;
    return -1;
}

/* PyTorch's value of graph output v ("outputN" of want) as fp32 into out
 * (cnt elements). */
static int expected_values(const rt_st_file *want, const gr_graph *g, int v, int64_t cnt, float *out, char *err,
                           size_t errlen)
{
    char key[32];
    int i = output_index(g, v);
    snprintf(key, sizeof key, "output%d", i);
    const rt_st_tensor *t = i >= 0 ? rt_st_find(want, key) : NULL;
    if (!t)
        return isa_errf(err, errlen, "%s: no tensor %s for %%%s", want->path, key, g->values[v].name);
    if (rt_st_check_type(t, want->path, &g->values[v], "expected output", err, errlen))
        return -1;
    if (t->numel != cnt)
        return isa_errf(err, errlen, "%s: %s has %lld elements but %%%s has %lld", want->path, key,
                        (long long)t->numel, g->values[v].name, (long long)cnt);
    rt_st_to_f32(t, out);
    return 0;
}

/* An output that depends on a random draw is checked against the
 * reference's interval (ref +- tol: every value a draw could give), not
 * against PyTorch's draw, which our generator does not reproduce; PyTorch's
 * own draw must lie in that interval, else the reference's interval is
 * wrong (an error, not a verdict on the device). */
static int torch_draw_within(const gr_value *val, const float *ref, const double *tol, const float *torch,
                             int64_t cnt, char *err, size_t errlen)
{
    for (int64_t k = 0; k < cnt; k++)
        if (!(fabs((double)torch[k] - ref[k]) <= tol[k]) && !(isnan(torch[k]) && isnan(ref[k])))
            return isa_errf(err, errlen,
                            "reference: PyTorch's %%%s element %lld, %g, is outside [%g, %g], the interval "
                            "of every draw (graph line %d)", val->name, (long long)k, (double)torch[k],
                            ref[k] - tol[k], ref[k] + tol[k], val->line);
    return 0;
}

/* Every output of graph g is an output tensor of the program (outv[i]:
 * the graph value tensor i stands for), so --check compares them all. */
static int outputs_covered(const isa_program *p, const gr_graph *g, const int *outv, char *err, size_t errlen)
{
    for (int k = 0; k < g->noutputs; k++) {
        int v = g->outputs[k], found = 0;
        for (size_t i = 0; i < p->ntensors && !found; i++)
            found = outv[i] == v;
        if (found)
            continue;
        const gr_value *val = &g->values[v];
        if (rt_computed_as_data(p, val->name, val->line, err, errlen))
            return -1;
        return isa_errf(err, errlen, "reference: output %d of the graph, %%%s (graph line %d), is not an output tensor "
                        "of the program", k, val->name, val->line);
    }
    return 0;
}

/* rt_check_graph, against the executor (want NULL) or PyTorch's outputs;
 * stepwise when st is not NULL. */
static int check_graph(rt_program *prog, const gr_graph *g, const rt_st_file *want, rt_stepper *st,
                       rt_check_result **results, int *n, char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    const isa_program *p = prog->p;
    char rerr[1024];
    rt_ref *r = rt_ref_new(g, rerr, sizeof rerr);
    if (!r)
        return isa_errf(err, errlen, "reference: %s", rerr);
    rt_ref_track_errors(r, 1);
    if (st)
        rt_stepper_attach(st, r);
    rt_check_result *res = calloc(p->ntensors ? p->ntensors : 1, sizeof *res);
    int rc = res ? 0 : isa_errf(err, errlen, "reference: out of host memory");
    /* Parameters the program does not hold come from the weights file. */
    int need_file = 0;
    for (int i = 0; i < g->nparams; i++)
        need_file |= leaf_tensor(p, &g->values[g->params[i]]) < 0;
    if (!rc && need_file && g->weights && rt_ref_load_weights(r, NULL, rerr, sizeof rerr))
        rc = isa_errf(err, errlen, "reference: %s", rerr);
    for (int k = 0; k < g->ninputs + g->nparams && !rc; k++) {
        int v = k < g->ninputs ? g->inputs[k] : g->params[k - g->ninputs];
        const gr_value *val = &g->values[v];
        int ti = leaf_tensor(p, val);
        if (ti < 0) {
            if (val->kind == GR_VAL_PARAM && g->weights)
                continue; /* loaded from the file */
            rc = isa_errf(err, errlen, "reference: %s %%%s (graph line %d) is not a tensor of the program",
                          val->kind == GR_VAL_INPUT ? "input" : "param", val->name, val->line);
            break;
        }
        if (!prog->host[ti]) {
            rc = isa_errf(err, errlen,
                          "reference: tensor %s (graph line %d) has no host data: write it (rt_write_tensor) or fill "
                          "the inputs (rt_fill_inputs) first", p->tensors[ti].name, val->line);
            break;
        }
        /* a state as the last run read it, before its updates */
        const float *h = rt_state_before(prog, ti) ? rt_state_before(prog, ti) : rt_user_values(prog, ti);
        if (rt_ref_set(r, val->name, h, rt_tensor_elems(&p->tensors[ti]), rerr, sizeof rerr))
            rc = isa_errf(err, errlen, "reference: %s", rerr);
    }
    /* Outputs, in the order of the tensor table. */
    int *outv = malloc((p->ntensors ? p->ntensors : 1) * sizeof *outv);
    if (!rc && !outv)
        rc = isa_errf(err, errlen, "reference: out of host memory");
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor *t = &p->tensors[i];
        outv[i] = -1;
        if (t->role != ISA_ROLE_OUTPUT)
            continue;
        int v = output_value(g, t->name);
        if (v < 0 || g->values[v].ntuple) {
            rc = isa_errf(err, errlen, "reference: output %s is not computed by the graph", t->name);
            break;
        }
        if (want && output_index(g, v) < 0)
            continue; /* a state update's source: PyTorch's outputs do not have it */
        outv[i] = v;
        rt_ref_keep(r, v);
    }
    if (!rc)
        rc = outputs_covered(p, g, outv, err, errlen);
    if (!rc && rt_ref_run(r, rerr, sizeof rerr))
        rc = isa_errf(err, errlen, "reference: %s", rerr);
    int nres = 0, bad = 0;
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        if (outv[i] < 0)
            continue;
        int v = outv[i];
        const gr_value *val = &g->values[v];
        gr_ttype ty;
        const float *ref = rt_ref_value(r, v, &ty);
        if (!ref || ty.rank > ISA_MAX_RANK) {
            rc = isa_errf(err, errlen, "reference: output %s has no reference value", p->tensors[i].name);
            break;
        }
        int64_t cnt = gr_ttype_numel(&ty);
        double *tol = malloc((cnt ? (size_t)cnt : 1) * sizeof *tol);
        if (!tol) {
            rc = isa_errf(err, errlen, "reference: out of host memory");
            break;
        }
        float *torch = want ? malloc((cnt ? (size_t)cnt : 1) * sizeof *torch) : NULL;
        if (want && !torch)
            rc = isa_errf(err, errlen, "reference: out of host memory");
        if (!rc && want)
            rc = expected_values(want, g, v, cnt, torch, err, errlen);
        if (!rc)
            rc = rt_value_tolerance(r, g, v, ref, cnt, tol, err, errlen);
        if (rc) {
            free(tol);
            free(torch);
            break;
        }
        if (torch && rt_ref_drawn(r, v)) /* a draw: the interval, and PyTorch's draw must lie in it */
            rc = torch_draw_within(val, ref, tol, torch, cnt, err, errlen);
        else if (torch) { /* PyTorch's fp32 value for the reference, the tolerance widened by 2^-10 of itself */
            ref = torch;
            for (int64_t k = 0; k < cnt; k++)
                tol[k] += TORCH_REL * (tol[k] - RT_ABS_FLOOR);
        }
        if (rc) {
            free(tol);
            free(torch);
            break;
        }
        host_dtype_tolerance(p->tensors[i].host_dtype, torch != NULL, ref, cnt, tol);
        rt_refval rv;
        memset(&rv, 0, sizeof rv);
        snprintf(rv.name, sizeof rv.name, "%s", val->name);
        rv.rank = ty.rank;
        memcpy(rv.shape, ty.shape, (size_t)ty.rank * sizeof *ty.shape);
        rv.val = ref;
        rv.tol = tol;
        rv.line = val->line;
        rv.op = val->node >= 0 ? g->nodes[val->node].op : val->kind == GR_VAL_INPUT ? "input" : "param";
        rv.exact = val->type.dtype >= GR_I64;
        rc = rt_compare(prog, &rv, (int)i, &res[nres], err, errlen);
        if (st) {
            res[nres].step = RT_CHECK_STEPWISE;
            res[nres].cuts = rt_stepper_cuts(st);
        }
        free(tol);
        free(torch);
        if (!rc && !res[nres].ok)
            bad++;
        nres++;
    }
    free(outv);
    rt_ref_free(r);
    if (rc) {
        free(res);
        return -1;
    }
    *results = res;
    *n = nres;
    return bad;
}

int rt_check_vacuous(const rt_check_result *res, int n)
{
    for (int i = 0; i < n; i++)
        if (res[i].vacuous > 0)
            return 1;
    return 0;
}

/* Does an end-to-end check want a stepwise one after it (rt_keep_values)? */
static int wants_stepwise(const rt_program *prog, const rt_check_result *res, int n)
{
    return prog->keep_values == 2 || (prog->keep_values == 1 && rt_check_vacuous(res, n));
}

/* The stepwise check's results after the end-to-end ones (*res, *n):
 * each output checked stepwise, then the cuts out of tolerance or with
 * infinite tolerances.  Returns how many of them fail, or -1. */
static int add_stepwise(rt_program *prog, const gr_graph *g, rt_check_result **res, int *n, char *err, size_t errlen)
{
    rt_stepper *st = rt_stepper_new(prog, g);
    if (!st)
        return isa_errf(err, errlen, "reference: out of host memory");
    if (!rt_stepper_candidates(st)) { /* no value held whole: nothing to continue from */
        rt_stepper_free(st);
        return 0;
    }
    rt_check_result *sr = NULL;
    int ns = 0, bad = check_graph(prog, g, NULL, st, &sr, &ns, err, errlen);
    const rt_check_result *cuts;
    int nc = bad < 0 ? 0 : rt_stepper_report(st, &cuts);
    rt_check_result *all = bad < 0 ? NULL : realloc(*res, (size_t)(*n + ns + nc + 1) * sizeof *all);
    if (bad >= 0 && !all)
        bad = isa_errf(err, errlen, "reference: out of host memory");
    if (bad >= 0) {
        if (ns) /* memcpy from NULL is undefined even for 0 bytes */
            memcpy(all + *n, sr, (size_t)ns * sizeof *sr);
        if (nc)
            memcpy(all + *n + ns, cuts, (size_t)nc * sizeof *cuts);
        *res = all;
        *n += ns + nc;
        bad += rt_stepper_bad(st);
    }
    free(sr);
    rt_stepper_free(st);
    return bad;
}

int rt_check_graph(rt_program *prog, const gr_graph *g, rt_check_result **results, int *n, char *err, size_t errlen)
{
    int bad = check_graph(prog, g, NULL, NULL, results, n, err, errlen);
    if (bad < 0 || !wants_stepwise(prog, *results, *n))
        return bad;
    int more = add_stepwise(prog, g, results, n, err, errlen);
    if (more < 0) {
        free(*results);
        *results = NULL;
        *n = 0;
        return -1;
    }
    return bad + more;
}

/* Did prog's and probe's last runs give the same bits for every output? */
static int same_outputs(rt_program *prog, rt_program *probe, char *err, size_t errlen)
{
    const isa_program *p = prog->p;
    int rc = 0;
    for (size_t i = 0; i < p->ntensors && !rc; i++) {
        const isa_tensor *t = &p->tensors[i];
        if (t->role != ISA_ROLE_OUTPUT)
            continue;
        int j = isa_program_find_tensor(probe->p, t->name);
        int64_t n = rt_tensor_elems(t);
        if (j < 0 || rt_tensor_elems(&probe->p->tensors[j]) != n)
            return isa_errf(err, errlen, "stepwise: the probe build has no output %s like the run's", t->name);
        float *a = malloc((n ? (size_t)n : 1) * sizeof *a), *b = malloc((n ? (size_t)n : 1) * sizeof *b);
        rc = !a || !b ? isa_errf(err, errlen, "reference: out of host memory") : 0;
        if (!rc && (rt_read_tensor(prog, t->name, a, err, errlen) || rt_read_tensor(probe, t->name, b, err, errlen)))
            rc = -1;
        for (int64_t k = 0; !rc && k < n; k++)
            if (memcmp(&a[k], &b[k], sizeof *a))
                rc = isa_errf(err, errlen, "stepwise: the probe build (every value also written to DRAM) computed "
                              "output %s otherwise (element %lld: %g, not %g): it cannot stand for the run",
                              t->name, (long long)k, (double)b[k], (double)a[k]);
        free(a);
        free(b);
    }
    return rc;
}

int rt_check_stepwise(rt_program *prog, rt_program *probe, const gr_graph *g, rt_check_result **results, int *n,
                      char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    if (same_outputs(prog, probe, err, errlen))
        return -1;
    int bad = add_stepwise(probe, g, results, n, err, errlen);
    if (bad < 0) {
        free(*results);
        *results = NULL;
        *n = 0;
    }
    return bad;
}

int rt_check_expected(rt_program *prog, const gr_graph *g, const char *path, rt_check_result **results, int *n,
                      char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    rt_st_file *want = rt_st_read(path, err, errlen);
    if (!want)
        return -1;
    int rc = check_graph(prog, g, want, NULL, results, n, err, errlen);
    rt_st_free(want);
    return rc;
}

int rt_check(rt_program *prog, rt_check_result **results, int *n, char *err, size_t errlen)
{
    *results = NULL;
    *n = 0;
    const isa_program *p = prog->p;
    if (!p->graph)
        return isa_errf(err, errlen, "reference: the program has no graph, so there is nothing to validate against");
    if (!is_full_graph(p->graph))
        return rt_check_short(prog, results, n, err, errlen);
    char perr[1024];
    gr_graph *g = gr_graph_parse(p->graph, "graph", perr, sizeof perr);
    if (!g)
        return isa_errf(err, errlen, "reference: %s", perr);
    int rc = rt_check_graph(prog, g, results, n, err, errlen);
    gr_graph_free(g);
    return rc;
}
