/* ref_args.c: reading an op's arguments (positional or keyword, as the schema says) for the reference executor. */
#include "ref_internal.h"

#include <string.h>

/* The overload of an op: "Tensor" in aten.add.Tensor, "default" when absent. */
const char *ref_overload(const gr_node *n)
{
    const char *d1 = strchr(n->op, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    return d2 ? d2 + 1 : "default";
}

const gr_arg *ref_arg(ex *E, int pos, const char *key) { return gr_node_arg(E->node, pos, key); }

int ref_present(const gr_arg *a) { return a && a->kind != GR_ARG_NONE; }

/* A value argument holding one tensor. */
const tens *ref_tensor_of(ex *E, const gr_arg *a, const char *what)
{
    if (!a) {
        ref_fail(E, "missing argument %s", what);
        return NULL;
    }
    if (a->kind != GR_ARG_VALUE) {
        ref_fail(E, "argument %s is not a tensor", what);
        return NULL;
    }
    const gr_value *v = &E->g->values[a->value];
    slot *s = &E->vals[a->value];
    if (v->ntuple) {
        ref_fail(E, "argument %s: %%%s is a tuple (take an element with getitem)", what, v->name);
        return NULL;
    }
    if (s->nt != 1) {
        ref_fail(E, "argument %s: %%%s has no value", what, v->name);
        return NULL;
    }
    return &s->t[0];
}

const tens *ref_arg_tensor(ex *E, int pos, const char *key)
{
    return ref_tensor_of(E, ref_arg(E, pos, key), key);
}

/* An integer argument; def when absent or None. */
int ref_arg_int(ex *E, int pos, const char *key, int64_t def, int64_t *v)
{
    const gr_arg *a = ref_arg(E, pos, key);
    if (!ref_present(a)) {
        *v = def;
        return 0;
    }
    if (a->kind == GR_ARG_INT || a->kind == GR_ARG_BOOL) {
        *v = a->i;
        return 0;
    }
    return ref_fail(E, "argument %s is not an integer", key);
}

int ref_arg_req_int(ex *E, int pos, const char *key, int64_t *v)
{
    if (!ref_present(ref_arg(E, pos, key)))
        return ref_fail(E, "missing argument %s", key);
    return ref_arg_int(E, pos, key, 0, v);
}

int ref_arg_bool(ex *E, int pos, const char *key, int def, int *v)
{
    const gr_arg *a = ref_arg(E, pos, key);
    if (!ref_present(a)) {
        *v = def;
        return 0;
    }
    if (a->kind == GR_ARG_BOOL || a->kind == GR_ARG_INT) {
        *v = a->i != 0;
        return 0;
    }
    return ref_fail(E, "argument %s is not a bool", key);
}

/* A number (int, float or bool argument): its value and kind. */
int ref_num_of(ex *E, const gr_arg *a, const char *what, double *v, kind *k)
{
    if (!a)
        return ref_fail(E, "missing argument %s", what);
    switch (a->kind) {
    case GR_ARG_INT:
        *v = (double)a->i;
        *k = K_I;
        return 0;
    case GR_ARG_BOOL:
        *v = (double)a->i;
        *k = K_B;
        return 0;
    case GR_ARG_FLOAT:
        *v = a->f;
        *k = K_F;
        return 0;
    default:
        return ref_fail(E, "argument %s is not a number", what);
    }
}

int ref_arg_num(ex *E, int pos, const char *key, double def, double *v)
{
    const gr_arg *a = ref_arg(E, pos, key);
    kind k;
    if (!ref_present(a)) {
        *v = def;
        return 0;
    }
    return ref_num_of(E, a, key, v, &k);
}

/* A list of integers (a single integer is a list of one).  *cnt = -1 when
 * absent or None. */
int ref_arg_ints(ex *E, int pos, const char *key, int64_t *out, int *cnt, int max)
{
    const gr_arg *a = ref_arg(E, pos, key);
    *cnt = -1;
    if (!ref_present(a))
        return 0;
    if (a->kind == GR_ARG_INT) {
        out[0] = a->i;
        *cnt = 1;
        return 0;
    }
    if (a->kind != GR_ARG_LIST)
        return ref_fail(E, "argument %s is not a list of integers", key);
    if (a->nitems > max)
        return ref_fail(E, "argument %s has more than %d entries", key, max);
    for (int i = 0; i < a->nitems; i++) {
        if (a->items[i].kind != GR_ARG_INT)
            return ref_fail(E, "argument %s is not a list of integers", key);
        out[i] = a->items[i].i;
    }
    *cnt = a->nitems;
    return 0;
}

/* A dtype argument: its dtype, or -1 when absent or None. */
int ref_arg_dtype(ex *E, int pos, const char *key, int *dt)
{
    const gr_arg *a = ref_arg(E, pos, key);
    *dt = -1;
    if (!ref_present(a))
        return 0;
    if (a->kind != GR_ARG_DTYPE)
        return ref_fail(E, "argument %s is not a dtype", key);
    *dt = (int)a->i;
    return 0;
}

const tens *ref_operand(ex *E, const gr_arg *a, const char *what, scalar_box *box)
{
    if (a && a->kind == GR_ARG_VALUE)
        return ref_tensor_of(E, a, what);
    double v = 0;
    kind k = K_F;
    if (ref_num_of(E, a, what, &v, &k))
        return NULL;
    memset(box, 0, sizeof *box);
    box->t.dtype = dtype_of(k);
    box->t.n = 1;
    box->eb = (float)ref_eb_const(v);
    box->t.eb[0] = box->t.eb[1] = &box->eb;
    if (k == K_F) {
        box->f = (float)v;
        box->t.f = &box->f;
    } else {
        box->i = (int64_t)v;
        box->t.i = &box->i;
    }
    return &box->t;
}

tens *ref_binary_float(ex *E, const char *k0, const char *k1, scalar_box *b0, scalar_box *b1, const tens **a,
                       const tens **b, iter *it)
{
    *a = ref_operand(E, ref_arg(E, 0, k0), k0, b0);
    *b = *a ? ref_operand(E, ref_arg(E, 1, k1), k1, b1) : NULL;
    const tens *ts[2] = {*a, *b};
    int rank;
    int64_t shape[MAXR];
    if (!*b || ref_bcast(E, 2, ts, &rank, shape))
        return NULL;
    tens *o = ref_new_result(E, K_F, rank, shape);
    if (o)
        ref_iter_tensors(it, rank, shape, 2, ts);
    return o;
}

int ref_norm_dim(ex *E, int64_t d, int rank, int *out)
{
    int r = rank ? rank : 1;
    if (d < -r || d >= r)
        return ref_fail(E, "dim %lld out of range for a rank-%d tensor", (long long)d, rank);
    *out = (int)(d < 0 ? d + r : d);
    return 0;
}
