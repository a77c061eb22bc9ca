/* ref_copy.c: reference ops: copies and casts (clone, _to_copy, type_as, copy_, dropout). */
#include "ref_internal.h"

#include <string.h>

/* clone, contiguous, alias, detach, lift_fresh_copy, _to_copy, to:
 * a copy, converted when a dtype is given. */
static int op_copy(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    int dt = -1;
    const char *base = E->node->base;
    if (strcmp(base, "_to_copy") == 0 || strcmp(base, "to") == 0) {
        const gr_arg *a = ref_arg(E, strcmp(base, "to") == 0 ? 1 : -1, "dtype");
        if (ref_present(a)) {
            if (a->kind != GR_ARG_DTYPE)
                return ref_fail(E, "argument dtype is not a dtype");
            dt = (int)a->i;
        }
    }
    return ref_result_as(E, x, dt < 0 ? kind_of(x->dtype) : kind_of((gr_dtype)dt), x->rank, x->shape);
}

/* copy(self, src): src broadcast to self's shape, in self's kind. */
static int op_copy_into(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    const tens *s = x ? ref_arg_tensor(E, 1, "src") : NULL;
    if (!s)
        return -1;
    const tens *ts[2] = {x, s};
    int rank = 0;
    int64_t shape[MAXR];
    if (ref_bcast(E, 2, ts, &rank, shape))
        return -1;
    if (rank != x->rank || memcmp(shape, x->shape, (size_t)rank * sizeof *shape))
        return ref_fail(E, "src does not broadcast to self's shape");
    kind kr = kind_of(x->dtype);
    tens *o = ref_new_result(E, kr, x->rank, x->shape);
    if (!o)
        return -1;
    iter it;
    ref_iter_tensors(&it, rank, shape, 2, ts);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        if (kr == K_F)
            o->f[k] = ldf(s, it.off[1]);
        else
            o->i[k] = kr == K_B ? ldd(s, it.off[1]) != 0 : ldi(s, it.off[1]);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][k] = (float)ref_convert_bound(s, it.off[1], kr, w);
    }
    return 0;
}

/* native_dropout(input, p, train) -> (output, mask), dropout(input, p, train):
 * the identity when train is False (or None) or p == 0. */
static int op_dropout(ex *E, int tuple)
{
    const tens *x = ref_arg_tensor(E, 0, "input");
    if (!x)
        return -1;
    double p = 0;
    int train = 0;
    if (ref_arg_num(E, 1, "p", 0, &p) || ref_arg_bool(E, 2, "train", 0, &train))
        return -1;
    if (train && p != 0)
        return ref_fail(E, "dropout with p=%g in training is random: the reference runs only p=0 or train=False", p);
    if (ref_result_as(E, x, kind_of(x->dtype), x->rank, x->shape))
        return -1;
    if (!tuple)
        return 0;
    tens *m = ref_new_result(E, K_B, x->rank, x->shape);
    if (!m)
        return -1;
    for (int64_t k = 0; k < m->n; k++)
        m->i[k] = 1;
    return 0;
}

/* type_as(self, other): self cast to other's dtype */
static int op_type_as(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *o = x ? ref_arg_tensor(E, 1, "other") : NULL;
    return o ? ref_result_as(E, x, kind_of(o->dtype), x->rank, x->shape) : -1;
}

static const ref_op ops[] = {
    /* copies and casts */
    {"clone", op_copy, 0},
    {"contiguous", op_copy, 0},
    {"alias", op_copy, 0},
    {"detach", op_copy, 0},
    {"lift_fresh_copy", op_copy, 0},
    {"_to_copy", op_copy, 0},            /* dtype= casts */
    {"to", op_copy, 0},
    {"type_as", op_type_as, 0},          /* cast to other's dtype */
    {"copy", op_copy_into, 0},           /* src broadcast into self's shape and dtype */
    {"native_dropout", op_dropout, 1},   /* identity and an all-true mask (p=0 or train=False) */
    {"dropout", op_dropout, 0},
};
const ref_ops ref_copy_ops = REF_OPS(ops);
