/* graphdata.c: a compiled graph's data into its program: inputs from a
 * safetensors file, parameters from the graph's weights file. */
#include "rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_st_check_type(const rt_st_tensor *t, const char *path, const gr_value *val, const char *what, char *err,
                     size_t errlen)
{
    int same = t->rank == val->type.rank;
    for (int d = 0; same && d < t->rank; d++)
        same = t->shape[d] == val->type.shape[d];
    char ts[256];
    gr_ttype_str(&val->type, ts, sizeof ts);
    if (!same) {
        char fs[256] = "[";
        size_t o = 1;
        for (int d = 0; d < t->rank && o < sizeof fs; d++)
            o += (size_t)snprintf(fs + o, sizeof fs - o, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        if (o < sizeof fs)
            snprintf(fs + o, sizeof fs - o, "]");
        snprintf(err, errlen, "%s: %s '%s' has shape %s but %%%s (graph line %d) is %s", path, what, t->name, fs,
                 val->name, val->line, ts);
        return -1;
    }
    int tfloat = t->dtype == RT_ST_F32 || t->dtype == RT_ST_F16 || t->dtype == RT_ST_BF16 || t->dtype == RT_ST_F64;
    gr_dtype d = val->type.dtype;
    int vfloat = d == GR_F32 || d == GR_F16 || d == GR_BF16 || d == GR_F64;
    if (tfloat != vfloat) {
        snprintf(err, errlen, "%s: %s '%s' is %s but %%%s (graph line %d) is %s", path, what, t->name,
                 rt_st_dtype_name(t->dtype), val->name, val->line, ts);
        return -1;
    }
    return 0;
}

/* Write safetensors tensor t (any dtype, converted to fp32) as the
 * program's tensor `name`, checking it against the graph value's declared
 * type (the file is user input) and the program tensor's element count.
 * Its infinities reach the device as every write's do (rt_keep_host).
 * Integer data (token ids) arrives here as fp32 values, exact up to 2^24. */
static int write_st(rt_program *prog, const gr_graph *g, const char *name, const rt_st_tensor *t, const char *path,
                    const char *what, char *err, size_t errlen)
{
    const isa_program *p = rt_program_isa(prog);
    int ti = isa_program_find_tensor(p, name);
    int64_t n = rt_tensor_elems(&p->tensors[ti]);
    int gv = gr_graph_find(g, name);
    if (gv >= 0 && rt_st_check_type(t, path, &g->values[gv], what, err, errlen))
        return -1;
    if (t->numel != n) {
        snprintf(err, errlen, "%s: tensor %s has %lld elements, the program's %s has %lld", path, t->name,
                 (long long)t->numel, name, (long long)n);
        return -1;
    }
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rt_st_to_f32(t, v);
    /* fp32 data for a 16-bit value: as PyTorch would hold it */
    for (int64_t i = 0; p->tensors[ti].host_dtype != ISA_HT_F32 && i < n; i++)
        v[i] = isa_host_round(p->tensors[ti].host_dtype, v[i]);
    /* Integers the device holds in DL16 (all but a gather's row numbers)
     * must be exact there: a wrong position would go unnoticed. */
    gr_dtype gd = gv >= 0 ? g->values[gv].type.dtype : GR_F32;
    for (int64_t i = 0; (gd == GR_I64 || gd == GR_I32) && p->tensors[ti].dev_dtype == ISA_T_DL16 && i < n; i++)
        if (isa_dl16_round(v[i]) != v[i]) {
            snprintf(err, errlen, "%s: %s '%s' holds %.0f at element %lld, an integer DL16 does not hold exactly "
                     "(the device keeps integers up to 1024 exactly)", path, what, t->name, (double)v[i], (long long)i);
            free(v);
            return -1;
        }
    int rc = rt_write_tensor(prog, name, v, ISA_HT_F32, err, errlen);
    free(v);
    return rc;
}

/* Seeded random values (rt_fill_inputs) for a bool or integer input of the
 * graph made values of its kind: a bool 1 where the value is positive, else
 * 0; an integer truncated toward zero (the reference reads them so, and an
 * output that is such an input must hold a bool or an integer). */
static int random_of_kind(rt_program *prog, const isa_tensor *T, gr_dtype d, char *err, size_t errlen)
{
    if (d != GR_BOOL && d != GR_I64 && d != GR_I32)
        return 0;
    int64_t n = rt_tensor_elems(T);
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        return snprintf(err, errlen, "out of memory"), -1;
    int rc = rt_read_tensor(prog, T->name, v, err, errlen);
    for (int64_t i = 0; !rc && i < n; i++)
        v[i] = d == GR_BOOL ? v[i] > 0 : truncf(v[i]);
    if (!rc)
        rc = rt_write_tensor(prog, T->name, v, ISA_HT_F32, err, errlen);
    free(v);
    return rc;
}

int rt_load_graph_tensors(rt_program *prog, const gr_graph *g, const char *inputs_path, char *err, size_t errlen)
{
    const isa_program *p = rt_program_isa(prog);
    rt_st_file *in = NULL, *w = NULL;
    char *wpath = NULL;
    int rc = -1;
    if (inputs_path && !(in = rt_st_read(inputs_path, err, errlen)))
        goto out;
    if (g->weights && !(w = rt_st_read(wpath = gr_graph_relpath(g, g->weights), err, errlen)))
        goto out;
    for (size_t i = 0; i < p->ntensors; i++) {
        const isa_tensor *T = &p->tensors[i];
        /* the value's own name: a long one is shortened in the program */
        int v = gr_graph_find_tensor(g, T->name);
        if (T->role == ISA_ROLE_INPUT) {
            if (!in) {
                if (v >= 0 && random_of_kind(prog, T, g->values[v].type.dtype, err, errlen))
                    goto out;
                continue;
            }
            const char *key = v >= 0 ? g->values[v].name : T->name;
            const rt_st_tensor *t = rt_st_find(in, key);
            if (!t) {
                snprintf(err, errlen, "%s: no tensor %s (an input of the graph)", inputs_path, key);
                goto out;
            }
            if (write_st(prog, g, T->name, t, inputs_path, "input", err, errlen))
                goto out;
        } else if (T->role == ISA_ROLE_WEIGHT && T->const_off < 0) { /* a constant: in the program */
            const char *key = v >= 0 && g->values[v].param_key ? g->values[v].param_key : T->name;
            const rt_st_tensor *t = w ? rt_st_find(w, key) : NULL;
            if (!t) {
                snprintf(err, errlen, "%s: missing weight %s for %%%s", w ? wpath : "graph without weights file", key,
                         T->name);
                goto out;
            }
            if (write_st(prog, g, T->name, t, wpath, "weight", err, errlen))
                goto out;
        }
    }
    rc = 0;
out:
    rt_st_free(in);
    rt_st_free(w);
    free(wpath);
    return rc;
}
