/* ref_create.c: reference ops that create tensors: full, zeros, ones, *_like, new_*, fill, zero, arange, eye. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

enum { C_FULL, C_ZEROS, C_ONES, C_SCALAR, C_FULL_LIKE, C_ZEROS_LIKE, C_ONES_LIKE, C_NEW_ZEROS, C_NEW_ONES,
       C_NEW_FULL, C_NEW_EMPTY, C_EMPTY, C_FILL, C_ZERO };

static int op_create(ex *E, int how)
{
    int64_t sz[MAXR];
    int cnt = 0, dt;
    const tens *like = NULL;
    double fill = 0;
    kind kf = K_F; /* kind of the fill value */
    int fill_pos = -1;
    switch (how) {
    case C_FULL:
    case C_ZEROS:
    case C_ONES:
    case C_EMPTY:
        if (ref_arg_ints(E, 0, "size", sz, &cnt, MAXR))
            return -1;
        if (cnt < 0)
            return ref_fail(E, "missing argument size");
        fill_pos = how == C_FULL ? 1 : -1;
        break;
    case C_SCALAR:
        fill_pos = 0;
        break;
    default:
        if (!(like = ref_arg_tensor(E, 0, "self")))
            return -1;
        if (how >= C_NEW_ZEROS && how <= C_NEW_EMPTY) {
            if (ref_arg_ints(E, 1, "size", sz, &cnt, MAXR))
                return -1;
            if (cnt < 0)
                return ref_fail(E, "missing argument size");
            fill_pos = how == C_NEW_FULL ? 2 : -1;
        } else {
            cnt = like->rank;
            memcpy(sz, like->shape, sizeof sz);
            fill_pos = how == C_FULL_LIKE || how == C_FILL ? 1 : -1;
        }
        break;
    }
    for (int i = 0; i < cnt; i++)
        if (sz[i] < 0)
            return ref_fail(E, "negative size %lld", (long long)sz[i]);
    if (fill_pos >= 0) {
        const char *key = how == C_SCALAR ? "s" : how == C_FILL ? "value" : "fill_value";
        if (ref_num_of(E, ref_arg(E, fill_pos, key), key, &fill, &kf))
            return -1;
    } else {
        fill = how == C_ONES || how == C_ONES_LIKE || how == C_NEW_ONES;
        kf = K_F;
    }
    if (ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind k;
    if (dt >= 0)
        k = kind_of((gr_dtype)dt);
    else if (like)
        k = kind_of(like->dtype);
    else if (how == C_FULL)
        k = kf; /* torch.full infers the dtype from the fill value */
    else
        k = K_F;
    tens *o = ref_new_result(E, k, cnt, sz);
    if (!o)
        return -1;
    for (int64_t j = 0; j < o->n; j++) {
        if (k == K_F)
            o->f[j] = (float)fill;
        else
            o->i[j] = k == K_B ? fill != 0 : (int64_t)fill;
        for (int w = 0; o->eb[0] && k == K_F && w < 2; w++)
            o->eb[w][j] = (float)ref_eb_const(fill);
    }
    return 0;
}

/* fill.Tensor(self, value): self's shape and kind, every element the 0-d
 * value, with its bound */
static int op_fill_tensor(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *v = x ? ref_arg_tensor(E, 1, "value") : NULL;
    if (!v)
        return -1;
    if (v->n != 1)
        return ref_fail(E, "the fill value must have one element");
    kind k = kind_of(x->dtype);
    tens *o = ref_new_result(E, k, x->rank, x->shape);
    if (!o)
        return -1;
    for (int64_t j = 0; j < o->n; j++) {
        if (k == K_F)
            o->f[j] = ldf(v, 0);
        else
            o->i[j] = k == K_B ? ldd(v, 0) != 0 : ldi(v, 0);
        for (int w = 0; o->eb[0] && w < 2; w++)
            o->eb[w][j] = (float)(k == K_F ? ldb(v, w, 0) : ref_convert_bound(v, 0, k, w));
    }
    return 0;
}

/* fill.Scalar(self, value), fill.Tensor(self, value) */
static int op_fill(ex *E, int unused)
{
    const gr_arg *v = ref_arg(E, 1, "value");
    return v && v->kind == GR_ARG_VALUE ? op_fill_tensor(E, unused) : op_create(E, C_FILL);
}

/* eye(n, m=n, dtype): ones on the diagonal (exact) */
static int op_eye(ex *E, int unused)
{
    (void)unused;
    int64_t sz[2];
    int dt;
    if (ref_arg_req_int(E, 0, "n", &sz[0]) || ref_arg_int(E, 1, "m", sz[0], &sz[1]) ||
        ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    if (sz[0] < 0 || sz[1] < 0)
        return ref_fail(E, "negative size");
    kind k = dt >= 0 ? kind_of((gr_dtype)dt) : K_F;
    tens *o = ref_new_result(E, k, 2, sz);
    if (!o)
        return -1;
    for (int64_t j = 0; j < o->n; j++) {
        int one = j / sz[1] == j % sz[1];
        if (k == K_F)
            o->f[j] = (float)one;
        else
            o->i[j] = one;
    }
    return 0;
}

/* arange(end), arange.start(start, end), arange.start_step(start, end, step) */
static int op_arange(ex *E, int unused)
{
    (void)unused;
    double v[3] = {0, 0, 1};
    kind kv[3] = {K_I, K_I, K_I};
    int npos = 0;
    const gr_node *n = E->node;
    for (int i = 0; i < n->nargs && npos < 3; i++)
        if (!n->args[i].key && n->args[i].kind != GR_ARG_NONE) {
            if (ref_num_of(E, &n->args[i], "start/end/step", &v[npos], &kv[npos]))
                return -1;
            npos++;
        }
    if (npos == 1) {
        v[1] = v[0];
        kv[1] = kv[0];
        v[0] = 0;
        kv[0] = K_I;
    }
    const char *keys[3] = {"start", "end", "step"};
    for (int i = 0; i < 3; i++) {
        const gr_arg *a = ref_arg(E, -1, keys[i]);
        if (ref_present(a) && ref_num_of(E, a, keys[i], &v[i], &kv[i]))
            return -1;
    }
    if (npos == 0 && !ref_present(ref_arg(E, -1, "end")))
        return ref_fail(E, "missing argument end");
    if (v[2] == 0 || isnan(v[0]) || isnan(v[1]) || isnan(v[2]))
        return ref_fail(E, "step must be nonzero and bounds finite");
    double len = ceil((v[1] - v[0]) / v[2]);
    if (len < 0)
        len = 0;
    if (len > (double)((int64_t)1 << 40))
        return ref_fail(E, "arange of %g elements", len);
    int dt;
    if (ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind k = dt >= 0 ? kind_of((gr_dtype)dt) : (kv[0] == K_F || kv[1] == K_F || kv[2] == K_F) ? K_F : K_I;
    int64_t shape[1] = {(int64_t)len};
    tens *o = ref_new_result(E, k, 1, shape);
    if (!o)
        return -1;
    for (int64_t j = 0; j < shape[0]; j++) {
        double x = v[0] + (double)j * v[2];
        if (k == K_F)
            o->f[j] = (float)x;
        else
            o->i[j] = (int64_t)x;
        for (int w = 0; o->eb[0] && k == K_F && w < 2; w++) /* index values: sfp.iota rounds them once */
            o->eb[w][j] = (float)ref_eb_const(x);
    }
    return 0;
}

static const ref_op ops[] = {
    /* creation */
    {"full", op_create, C_FULL},
    {"zeros", op_create, C_ZEROS},
    {"ones", op_create, C_ONES},
    {"empty", op_create, C_EMPTY},       /* zeros (deterministic) */
    {"scalar_tensor", op_create, C_SCALAR},
    {"full_like", op_create, C_FULL_LIKE},
    {"empty_like", op_create, C_ZEROS_LIKE}, /* zeros (deterministic) */
    {"zeros_like", op_create, C_ZEROS_LIKE},
    {"ones_like", op_create, C_ONES_LIKE},
    {"new_zeros", op_create, C_NEW_ZEROS},
    {"new_ones", op_create, C_NEW_ONES},
    {"new_full", op_create, C_NEW_FULL},
    {"new_empty", op_create, C_NEW_EMPTY},
    {"arange", op_arange, 0},
    {"fill", op_fill, 0},                /* self's shape, the value */
    {"zero", op_create, C_ZERO},         /* zeros_like */
    {"eye", op_eye, 0},
};
const ref_ops ref_create_ops = REF_OPS(ops);
