/* stepwise.c: a stepwise check (docs/validation.md, "Stepwise checks").
 * The reference runs again with a hook at every value the program holds
 * whole in a scratch tensor (ISA_TF_VALUE, kept by rt_keep_values): there
 * the device's value is compared with the reference's, within the bound
 * the reference carried from the cuts before, and the reference goes on
 * from the device's value, its bound zero.  Each bound then covers only
 * the kernels since the last cut, which keeps it finite in a deep
 * residual network where an end-to-end bound grows without limit. */
#include "rt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cuts out of tolerance (or vacuous) kept for the report; the rest counted. */
#define MAX_REPORTED_CUTS 16

struct rt_stepper {
    rt_program *prog;
    const gr_graph *g;
    int *tensor_of;         /* per value: its kept tensor, or -1 */
    int candidates, cuts;   /* values held whole; those compared (written whole by the run) */
    rt_check_result *noted; /* cuts out of tolerance or vacuous, at most MAX_REPORTED_CUTS */
    int nnoted, bad;        /* noted cuts; cuts out of tolerance, all */
};

int rt_value_tolerance(rt_ref *r, const gr_graph *g, int v, const float *ref, int64_t n, double *tol, char *err,
                       size_t errlen)
{
    const float *w = rt_ref_error(r, v, 0), *s = rt_ref_error(r, v, 1);
    if (!w || !s)
        return isa_errf(err, errlen, "reference: %%%s has no error bound", g->values[v].name);
    for (int64_t i = 0; i < n; i++) {
        /* a NaN bound is a bug of the bound rules, never a verdict: fmin
         * would drop it, and a NaN tolerance would fail the element as a
         * MISMATCH (rt_ref_run reports it first; this is the last guard) */
        if ((isnan(w[i]) || isnan(s[i])) && !isnan(ref[i]))
            return isa_errf(err, errlen, "reference: internal error: %%%s element %lld has a NaN error bound",
                            g->values[v].name, (long long)i);
        tol[i] = fmin((double)w[i], RT_REF_LAMBDA * s[i]) + RT_ABS_FLOOR;
    }
    return 0;
}

/* The kept tensor of graph value v: a scratch tensor of v's name that
 * holds it whole and has host values from the last run.  A value host ops
 * pass to each other in fp32 (ISA_TF_HOST) is none: the reference cannot
 * go on from the device's DL16 copy of it (fallback.c). */
static int kept_tensor(const rt_program *prog, const gr_value *val)
{
    int ti = rt_value_tensor(prog->p, val->name);
    if (ti < 0)
        return -1;
    const isa_tensor *t = &prog->p->tensors[ti];
    int whole = t->role == ISA_ROLE_SCRATCH && (t->flags & ISA_TF_VALUE) && !(t->flags & ISA_TF_HOST) && prog->host[ti];
    return whole && rt_tensor_elems(t) == gr_ttype_numel(&val->type) ? ti : -1;
}

rt_stepper *rt_stepper_new(rt_program *prog, const gr_graph *g)
{
    rt_stepper *s = calloc(1, sizeof *s);
    if (!s || !(s->tensor_of = malloc((g->nvalues ? (size_t)g->nvalues : 1) * sizeof *s->tensor_of))) {
        free(s);
        return NULL;
    }
    s->prog = prog;
    s->g = g;
    for (int v = 0; v < g->nvalues; v++) {
        const gr_value *val = &g->values[v];
        s->tensor_of[v] = val->kind == GR_VAL_NODE && !val->ntuple ? kept_tensor(prog, val) : -1;
        s->candidates += s->tensor_of[v] >= 0;
    }
    return s;
}

int rt_stepper_candidates(const rt_stepper *s) { return s->candidates; }

int rt_stepper_cuts(const rt_stepper *s) { return s->cuts; }

void rt_stepper_free(rt_stepper *s)
{
    if (!s)
        return;
    free(s->tensor_of);
    free(s->noted);
    free(s);
}

/* A cut out of tolerance, or with infinite tolerances, goes in the report. */
static void note_cut(rt_stepper *s, const rt_check_result *res)
{
    s->bad += !res->ok;
    if (s->nnoted == MAX_REPORTED_CUTS)
        return;
    rt_check_result *q = realloc(s->noted, (size_t)(s->nnoted + 1) * sizeof *q);
    if (!q)
        return; /* the count above still fails the check */
    s->noted = q;
    s->noted[s->nnoted++] = *res;
}

/* Compare the device's value of v with the reference's, then continue
 * from the device's. */
static int compare_cut(rt_stepper *s, rt_ref *r, int v, int ti, char *err, size_t errlen)
{
    const isa_tensor *t = &s->prog->p->tensors[ti];
    const float *y = s->prog->host[ti];
    int64_t n = rt_tensor_elems(t);
    gr_ttype ty;
    const float *ref = rt_ref_value(r, v, &ty);
    if (!ref || gr_ttype_numel(&ty) != n || ty.rank > ISA_MAX_RANK)
        return 0; /* an integer or otherwise held value: no cut */
    double *tol = malloc((n ? (size_t)n : 1) * sizeof *tol);
    if (!tol)
        return isa_errf(err, errlen, "reference: out of host memory");
    if (rt_value_tolerance(r, s->g, v, ref, n, tol, err, errlen)) {
        free(tol);
        return -1;
    }
    const gr_value *val = &s->g->values[v];
    rt_refval rv = {.rank = ty.rank, .val = ref, .tol = tol, .line = val->line};
    memcpy(rv.shape, ty.shape, (size_t)ty.rank * sizeof *ty.shape);
    rt_check_result res;
    memset(&res, 0, sizeof res);
    snprintf(res.name, sizeof res.name, "%s", t->name);
    snprintf(res.op, sizeof res.op, "%s", s->g->nodes[val->node].op);
    res.line = val->line;
    res.step = RT_CHECK_CUT;
    rt_compare_values(ISA_HT_F32, y, &rv, n, &res);
    free(tol);
    s->cuts++;
    if (!res.ok || res.vacuous || res.beyond)
        note_cut(s, &res);
    return rt_ref_reseed(r, v, y, n, err, errlen);
}

static int at_value(void *ctx, rt_ref *r, int v, char *err, size_t errlen)
{
    rt_stepper *s = ctx;
    int ti = s->tensor_of[v];
    if (ti < 0)
        return 0;
    const float *y = s->prog->host[ti];
    int64_t n = rt_tensor_elems(&s->prog->p->tensors[ti]);
    for (int64_t k = 0; k < n; k++)
        if (isnan(y[k]))
            return 0; /* left unwritten by the run (rt_poison_values), or a NaN: no cut */
    return compare_cut(s, r, v, ti, err, errlen);
}

void rt_stepper_attach(rt_stepper *s, rt_ref *r)
{
    rt_ref_on_value(r, at_value, s);
}

int rt_stepper_report(const rt_stepper *s, const rt_check_result **cuts)
{
    *cuts = s->noted;
    return s->nnoted;
}

int rt_stepper_bad(const rt_stepper *s) { return s->bad; }
