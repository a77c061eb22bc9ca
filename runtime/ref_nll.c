/* ref_nll.c: reference likelihood losses: nll_loss_forward (cross_entropy's second half) and
 * binary_cross_entropy, with PyTorch's reductions (0 none, 1 mean, 2 sum).
 *
 * Error bounds: each term as the device's sequence of stored operations
 * (a product by the weight, logs, 1 - x), the sums as `sum`, the mean a
 * division; a class picked by a target known only within a bound:
 * infinite (as a gather's). */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

/* The reduction argument: 0 none, 1 mean, 2 sum. */
static int reduction_arg(ex *E, int pos, int64_t *r)
{
    if (ref_arg_int(E, pos, "reduction", 1, r))
        return -1;
    return *r < 0 || *r > 2 ? ref_fail(E, "reduction %lld", (long long)*r) : 0;
}

/* A reduced loss from the sums of the terms (acc) and of the weights (wacc): mean or sum, track w. */
static bv reduced(const eb_acc *acc, const eb_acc *wacc, int64_t reduction)
{
    bv s = ref_acc_sum(acc);
    return reduction == 1 ? ref_bv_div(s, ref_acc_sum(wacc)) : s;
}

/* nll_loss_forward(self, target, weight, reduction, ignore_index) -> (output, total_weight):
 * self [N, C, ...] or [C] of log-probabilities, target [N, ...] or [] of classes (nll_loss2d_forward:
 * two spatial dims) */
static int op_nll(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *t = x ? ref_arg_tensor(E, 1, "target") : NULL;
    const gr_arg *wa = ref_arg(E, 2, "weight");
    const tens *wt = ref_present(wa) ? ref_tensor_of(E, wa, "weight") : NULL;
    int64_t red, ign;
    if (!t || (ref_present(wa) && !wt) || reduction_arg(E, 3, &red) || ref_arg_int(E, 4, "ignore_index", -100, &ign))
        return -1;
    if (x->rank < 1)
        return ref_fail(E, "nll_loss of a rank-0 tensor");
    int batched = x->rank >= 2;
    int64_t C = x->shape[batched], S = batched ? ref_numel(x->rank - 2, x->shape + 2) : 1, N = batched ? x->shape[0] : 1;
    if (t->n != N * S || kind_of(t->dtype) != K_I || (wt && wt->n != C))
        return ref_fail(E, "nll_loss of self [N, C, ...], target [N, ...] and weight [C] only");
    int64_t none = 0;
    tens *o = red == 0 && batched ? ref_new_result(E, K_F, t->rank, t->shape) : ref_new_result(E, K_F, 0, &none);
    if (!o || !ref_new_result(E, K_F, 0, &none))
        return -1;
    o = &E->res[E->nres - 2];
    tens *tw = &E->res[E->nres - 1];
    int exact = 1;
    for (int64_t k = 0; k < t->n; k++)
        exact &= ldb(t, 0, k) == 0 && ldb(t, 1, k) == 0;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}}, wacc[2] = {{.w = 0}, {.w = 1}};
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < N * S; n++) { /* sample n / S at place n % S */
        int64_t c = t->i[n];
        if (c == ign)
            continue;
        if (c < 0 || c >= C)
            return ref_fail(E, "target %lld out of range [0, %lld)", (long long)c, (long long)C);
        int64_t at = ((n / S) * C + c) * S + n % S;
        double wv = wt ? ldd(wt, c) : 1, l = -wv * ldd(x, at);
        sum += l, wsum += wv;
        if (red == 0 && batched)
            o->f[n] = (float)l;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv term = {-ldd(x, at), ldb(x, w, at), w};
            if (wt)
                term = ref_bv_mul(term, (bv){wv, ldb(wt, w, c), w});
            ref_acc_add(&acc[w], term.v, term.e);
            ref_acc_add(&wacc[w], wv, wt ? ldb(wt, w, c) : 0);
            if (red == 0 && batched)
                o->eb[w][n] = exact ? (float)term.e : INFINITY;
        }
    }
    if (red != 0 || !batched)
        o->f[0] = (float)(red == 1 ? sum / wsum : sum);
    tw->f[0] = (float)wsum;
    for (int w = 0; o->eb[0] && w < 2; w++) {
        if (red != 0 || !batched)
            o->eb[w][0] = exact ? (float)reduced(&acc[w], &wacc[w], red).e : INFINITY;
        tw->eb[w][0] = exact ? (float)ref_acc_sum(&wacc[w]).e : INFINITY;
    }
    return 0;
}

/* -max(log v, -100) of a probability (track w): log stored, the clamp a selection. */
static bv clamped_log(bv p)
{
    bv l = ref_bv_fn(U_LOG, p);
    if (l.v < -100 && !(p.e > 0 && log(p.v + ref_eb_lam(p.w) * p.e) > -100))
        return (bv){-100, 0, p.w};
    return l;
}

/* binary_cross_entropy(self, target, weight=None, reduction=1): -w (t log x + (1 - t) log(1 - x)),
 * each log at least -100, as PyTorch */
static int op_bce(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *t = x ? ref_arg_tensor(E, 1, "target") : NULL;
    const gr_arg *wa = ref_arg(E, 2, "weight");
    const tens *wt = ref_present(wa) ? ref_tensor_of(E, wa, "weight") : NULL;
    int64_t red, none = 0;
    if (!t || (ref_present(wa) && !wt) || reduction_arg(E, 3, &red))
        return -1;
    if (t->n != x->n || (wt && wt->n != x->n))
        return ref_fail(E, "binary_cross_entropy of tensors of different sizes");
    tens *o = red == 0 ? ref_new_result(E, K_F, x->rank, x->shape) : ref_new_result(E, K_F, 0, &none);
    if (!o)
        return -1;
    eb_acc acc[2] = {{.w = 0}, {.w = 1}}, cnt[2] = {{.w = 0}, {.w = 1}};
    double sum = 0;
    for (int64_t k = 0; k < x->n; k++) {
        double xv = ldd(x, k), tv = ldd(t, k), wv = wt ? ldd(wt, k) : 1;
        double l = -wv * (tv * fmax(log(xv), -100) + (1 - tv) * fmax(log1p(-xv), -100));
        sum += l;
        if (red == 0)
            o->f[k] = (float)l;
        for (int w = 0; o->eb[0] && w < 2; w++) {
            bv X = {xv, ldb(x, w, k), w}, T = {tv, ldb(t, w, k), w};
            bv a = ref_bv_mul(T, clamped_log(X));
            bv b = ref_bv_mul(ref_bv_sub(ref_bv_k(1), T), clamped_log(ref_bv_sub(ref_bv_k(1), X)));
            bv term = ref_bv_add(a, b);
            term.v = -term.v;
            if (wt)
                term = ref_bv_mul(term, (bv){wv, ldb(wt, w, k), w});
            ref_acc_add(&acc[w], term.v, term.e);
            ref_acc_add(&cnt[w], 1, 0);
            if (red == 0)
                o->eb[w][k] = (float)(isnan(term.e) ? INFINITY : term.e);
        }
    }
    if (red != 0)
        o->f[0] = (float)(red == 1 ? sum / (double)x->n : sum);
    for (int w = 0; red != 0 && o->eb[0] && w < 2; w++) {
        double e = reduced(&acc[w], &cnt[w], red).e;
        o->eb[w][0] = (float)(isnan(e) ? INFINITY : e);
    }
    return 0;
}

static const ref_op ops[] = {
    {"nll_loss_forward", op_nll, 0},             /* (output, total_weight) */
    {"nll_loss2d_forward", op_nll, 0},
    {"binary_cross_entropy", op_bce, 0},
};
const ref_ops ref_nll_ops = REF_OPS(ops);
