/* ref_loss.c: reference ops: the margin losses soft_margin_loss, multi_margin_loss and
 * multilabel_margin_loss_forward, with PyTorch's reductions (0 none, 1 mean, 2 sum) and its per-sample rules. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>

/* A hinge max(0, z): 1-Lipschitz, so z's bound is its bound on either
 * track (|max(0, a) - max(0, b)| <= |a - b|), and the max adds no rounding. */
static bv hinge(bv z) { return (bv){z.v > 0 ? z.v : 0, z.e, z.w}; }

/* The per-sample (or per-element) losses and their bounds, reduced. */
typedef struct {
    int64_t n;
    double *v;
    bv *b[2];
} terms;

static int terms_new(ex *E, terms *t, int64_t n)
{
    t->n = n;
    t->v = calloc((size_t)(n ? n : 1), sizeof(double));
    t->b[0] = calloc((size_t)(n ? n : 1), sizeof(bv));
    t->b[1] = calloc((size_t)(n ? n : 1), sizeof(bv));
    return t->v && t->b[0] && t->b[1] ? 0 : ref_fail(E, "out of memory");
}

static void terms_free(terms *t)
{
    free(t->v);
    free(t->b[0]);
    free(t->b[1]);
}

/* The result: the terms themselves (reduction none, shape given), or
 * their sum or mean (a 0-d result), the sum as an fp32 accumulation. */
static int terms_out(ex *E, const terms *t, int64_t red, int rank, const int64_t *shape)
{
    int64_t none = 0;
    tens *o = red == 0 ? ref_new_result(E, K_F, rank, shape) : ref_new_result(E, K_F, 0, &none);
    if (!o)
        return -1;
    double s = 0;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}};
    for (int64_t k = 0; k < t->n; k++) {
        s += t->v[k];
        if (red == 0)
            o->f[k] = (float)t->v[k];
        for (int w = 0; o->eb[0] && w < 2; w++) {
            ref_acc_add(&acc[w], t->b[w][k].v, t->b[w][k].e);
            if (red == 0)
                o->eb[w][k] = (float)(isnan(t->b[w][k].e) ? INFINITY : t->b[w][k].e);
        }
    }
    if (red == 0)
        return 0;
    o->f[0] = (float)(red == 1 ? s / (double)t->n : s);
    for (int w = 0; o->eb[0] && w < 2; w++) {
        bv r = ref_acc_sum(&acc[w]);
        if (red == 1)
            r = ref_bv_div(r, ref_bv_k((double)t->n));
        o->eb[w][0] = (float)(isnan(r.e) ? INFINITY : r.e);
    }
    return 0;
}

static int reduction_arg(ex *E, int pos, int64_t *r)
{
    if (ref_arg_int(E, pos, "reduction", 1, r))
        return -1;
    return *r < 0 || *r > 2 ? ref_fail(E, "reduction %lld", (long long)*r) : 0;
}

/* soft_margin_loss(self, target, reduction=1): log(1 + exp(-y x)) per element. */
static int op_soft_margin(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *y = x ? ref_arg_tensor(E, 1, "target") : NULL;
    int64_t red;
    terms t;
    if (!y || reduction_arg(E, 2, &red))
        return -1;
    if (y->n != x->n)
        return ref_fail(E, "input and target differ in size");
    if (terms_new(E, &t, x->n)) {
        terms_free(&t);
        return -1;
    }
    for (int64_t k = 0; k < x->n; k++) {
        t.v[k] = log1p(exp(-ldd(y, k) * ldd(x, k)));
        for (int w = 0; E->bounds && w < 2; w++) {
            bv m = ref_bv_mul((bv){ldd(y, k), ldb(y, w, k), w}, (bv){ldd(x, k), ldb(x, w, k), w});
            m.v = -m.v;
            t.b[w][k] = ref_bv_fn(U_LOG, ref_bv_add(ref_bv_k(1), ref_bv_fn(U_EXP, m)));
        }
    }
    int rc = terms_out(E, &t, red, x->rank, x->shape);
    terms_free(&t);
    return rc;
}

/* Frames and classes: a 0-d or 1-D input is one frame. */
static int frames(ex *E, const tens *x, int64_t *nf, int64_t *dim)
{
    if (x->rank > 2 || kind_of(x->dtype) != K_F)
        return ref_fail(E, "input must be a float tensor of rank 2 or less");
    *nf = x->rank == 2 ? x->shape[0] : 1;
    *dim = x->rank == 0 ? 1 : x->shape[x->rank - 1];
    return 0;
}

/* One frame of multi_margin_loss: sum over d != y of max(0, margin - x[y] + x[d])^p w[y], over dim. */
static void multi_margin_frame(const tens *x, const tens *wt, int64_t base, int64_t dim, int64_t y, int p,
                               double margin, terms *t, int64_t f, int bounds)
{
    double s = 0;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}};
    for (int64_t d = 0; d < dim; d++) {
        if (d == y)
            continue;
        double z = margin - ldd(x, base + y) + ldd(x, base + d), h = z > 0 ? (p == 1 ? z : z * z) : 0;
        s += wt ? h * ldd(wt, y) : h;
        for (int w = 0; bounds && w < 2; w++) {
            bv xy = {ldd(x, base + y), ldb(x, w, base + y), w}, xd = {ldd(x, base + d), ldb(x, w, base + d), w};
            bv hb = hinge(ref_bv_add(ref_bv_sub(ref_bv_k(margin), xy), xd));
            hb = p == 1 ? hb : ref_bv_mul(hb, hb);
            if (wt)
                hb = ref_bv_mul(hb, (bv){ldd(wt, y), ldb(wt, w, y), w});
            ref_acc_add(&acc[w], hb.v, hb.e);
        }
    }
    t->v[f] = s / (double)dim;
    for (int w = 0; bounds && w < 2; w++)
        t->b[w][f] = ref_bv_div(ref_acc_sum(&acc[w]), ref_bv_k((double)dim));
}

/* multi_margin_loss(self, target, p=1, margin=1, weight=None, reduction=1) */
static int op_multi_margin(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *y = x ? ref_arg_tensor(E, 1, "target") : NULL;
    const gr_arg *wa = ref_arg(E, 4, "weight");
    const tens *wt = ref_present(wa) ? ref_tensor_of(E, wa, "weight") : NULL;
    int64_t red, p, nf = 0, dim = 1;
    double margin;
    if (!y || (ref_present(wa) && !wt) || ref_arg_int(E, 2, "p", 1, &p) || ref_arg_num(E, 3, "margin", 1, &margin) ||
        reduction_arg(E, 5, &red) || frames(E, x, &nf, &dim))
        return -1;
    if ((p != 1 && p != 2) || y->n != nf || (wt && wt->n != dim))
        return ref_fail(E, "p must be 1 or 2, target one class per frame, weight one per class");
    terms t;
    int rc = terms_new(E, &t, nf);
    for (int64_t f = 0; !rc && f < nf; f++) {
        int64_t c = ldi(y, f);
        if (c < 0 || c >= dim)
            rc = ref_fail(E, "target %lld is not a class of %lld", (long long)c, (long long)dim);
        else
            multi_margin_frame(x, wt, f * dim, dim, c, (int)p, margin, &t, f, E->bounds);
    }
    if (!rc)
        rc = terms_out(E, &t, red, y->rank > 0, &nf);
    terms_free(&t);
    return rc;
}

/* One frame of multilabel_margin_loss: the targets are y's entries up to the
 * first negative one; sum over targets t and non-targets d of
 * max(0, 1 - x[t] + x[d]), over dim.  istg marks the frame's targets. */
static int multilabel_frame(ex *E, const tens *x, const tens *y, int64_t base, int64_t dim, char *istg, terms *t,
                            int64_t f)
{
    int64_t nt = 0;
    for (; nt < dim && ldi(y, base + nt) >= 0; nt++) {
        if (ldi(y, base + nt) >= dim)
            return ref_fail(E, "target %lld is not a class of %lld", (long long)ldi(y, base + nt), (long long)dim);
        istg[base + ldi(y, base + nt)] = 1;
    }
    double s = 0;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}};
    for (int64_t j = 0; j < nt; j++)
        for (int64_t d = 0, c = ldi(y, base + j); d < dim; d++) {
            if (istg[base + d])
                continue;
            double z = 1 - ldd(x, base + c) + ldd(x, base + d);
            s += z > 0 ? z : 0;
            for (int w = 0; E->bounds && w < 2; w++) {
                bv xc = {ldd(x, base + c), ldb(x, w, base + c), w}, xd = {ldd(x, base + d), ldb(x, w, base + d), w};
                bv h = hinge(ref_bv_add(ref_bv_sub(ref_bv_k(1), xc), xd));
                ref_acc_add(&acc[w], h.v, h.e);
            }
        }
    t->v[f] = s / (double)dim;
    for (int w = 0; E->bounds && w < 2; w++)
        t->b[w][f] = ref_bv_div(ref_acc_sum(&acc[w]), ref_bv_k((double)dim));
    return 0;
}

/* multilabel_margin_loss_forward(self, target, reduction) -> (output, is_target);
 * the output is 0-d unless reduction none of a batch (PyTorch's rule). */
static int op_multilabel_margin(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *y = x ? ref_arg_tensor(E, 1, "target") : NULL;
    int64_t red, nf = 0, dim = 1;
    if (!y || reduction_arg(E, 2, &red) || frames(E, x, &nf, &dim))
        return -1;
    if (y->n != x->n || kind_of(y->dtype) != K_I)
        return ref_fail(E, "target must be integers of the input's size");
    terms t;
    char *istg = calloc((size_t)(x->n ? x->n : 1), 1);
    int rc = terms_new(E, &t, nf) || (!istg && ref_fail(E, "out of memory"));
    for (int64_t f = 0; !rc && f < nf; f++)
        rc = multilabel_frame(E, x, y, f * dim, dim, istg, &t, f);
    if (!rc && (red == 0 && y->rank <= 1 ? terms_out(E, &t, 2, 0, &nf) : terms_out(E, &t, red, 1, &nf)))
        rc = -1;
    tens *it = rc ? NULL : ref_new_result(E, K_F, x->rank, x->shape);
    for (int64_t k = 0; it && k < x->n; k++)
        it->f[k] = istg[k]; /* exact; bounds stay zero */
    terms_free(&t);
    free(istg);
    return rc || !it ? -1 : 0;
}

static const ref_op ops[] = {
    {"soft_margin_loss", op_soft_margin, 0},
    {"multi_margin_loss", op_multi_margin, 0},
    {"multilabel_margin_loss_forward", op_multilabel_margin, 1}, /* (output, is_target) */
};
const ref_ops ref_loss_ops = REF_OPS(ops);
