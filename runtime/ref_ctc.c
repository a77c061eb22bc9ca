/* ref_ctc.c: reference op _ctc_loss (the connectionist temporal classification loss's forward pass):
 * the alpha recursion of Graves et al. (2006) in double, in log space, as PyTorch's CPU kernel; fallback only.
 *
 * _ctc_loss(log_probs (T, N, C), targets (N, S) padded or 1-D concatenated, input_lengths (N),
 * target_lengths (N), blank=0, zero_infinity=False) -> (neg_log_likelihood (N), log_alpha (N, T, 2 L + 1)),
 * L the largest target length.  Over the extended target l' = (blank, l_1, blank, ..., l_L, blank):
 *   alpha_0(0) = lp_0(blank), alpha_0(1) = lp_0(l_1), alpha_0(s) = -inf beyond;
 *   alpha_t(s) = lp_t(l'_s) + log(e^alpha_t-1(s) + e^alpha_t-1(s-1) [+ e^alpha_t-1(s-2) when l'_s is a
 *   label other than l'_s-2]);
 *   nll = -log(e^alpha_T-1(2L) + e^alpha_T-1(2L - 1)) with T the sample's input length (L = 0: alpha_T-1(0));
 * an input length of 0 gives 0 for an empty target, else inf.  The reductions and zero_infinity are the
 * graph's own ops (PyTorch's forward kernel ignores zero_infinity, which only its backward reads).
 * log_alpha beyond a sample's input length or its 2 L_b + 1 states may be left unset by PyTorch
 * (uninitialized memory): here -inf, not validated (an infinite bound).
 *
 * Error bounds: alpha_t(s) is log sum over the partial paths reaching (t, s) of exp(their score), a
 * score being the sum of one lp_t'(c) per t' <= t.  Moving every lp_t'(c) by at most d_t' moves every
 * score, and so the log-sum-exp, by at most sum over t' <= t of d_t' (exactly, not to first order), with
 * d_t' = max over the labels c of l' of lambda E(lp_t'(c)).  Track 1 adds the d_t' in quadrature (the
 * uploads' errors of different steps independent).  Over lambda, then the store; an infinite value
 * (no path) is exact. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* log(e^a + e^b) in double, -inf when both are. */
static double lse(double a, double b)
{
    double m = a > b ? a : b;
    return m == -INFINITY ? m : m + log(exp(a - m) + exp(b - m));
}

/* One sample's problem: its log-probabilities (stride N C between steps), extended target, lengths. */
typedef struct {
    const tens *lp;
    int64_t off, step; /* element of lp_0(0) and the stride between steps */
    int64_t T, L;      /* input length, target length */
    int64_t *ext;      /* l', 2 L + 1 labels */
} ctc_sample;

/* d_t (track w, before lambda's division) for t < T into d: the largest bound over the labels of l'. */
static void step_bounds(const ctc_sample *c, int w, double *d)
{
    for (int64_t t = 0; t < c->T; t++) {
        d[t] = 0;
        for (int64_t s = 0; s < 2 * c->L + 1; s++)
            d[t] = fmax(d[t], ref_eb_lam(w) * ldb(c->lp, w, c->off + t * c->step + c->ext[s]));
    }
}

/* alpha of one sample into a (Tm rows of S = 2 L_max + 1 states), row by row; returns the nll. */
static double alphas(const ctc_sample *c, double *a, int64_t Tm, int64_t S)
{
    int64_t n = 2 * c->L + 1;
    for (int64_t k = 0; k < Tm * S; k++)
        a[k] = -INFINITY;
    if (c->T == 0)
        return c->L == 0 ? 0 : INFINITY;
    for (int64_t s = 0; s < n && s < 2; s++)
        a[s] = ldd(c->lp, c->off + c->ext[s]);
    for (int64_t t = 1; t < c->T; t++) {
        const double *p = a + (t - 1) * S;
        double *q = a + t * S;
        for (int64_t s = 0; s < n; s++) {
            double v = p[s];
            if (s >= 1)
                v = lse(v, p[s - 1]);
            if (s >= 2 && s % 2 && c->ext[s] != c->ext[s - 2])
                v = lse(v, p[s - 2]);
            q[s] = v + ldd(c->lp, c->off + t * c->step + c->ext[s]);
        }
    }
    const double *last = a + (c->T - 1) * S;
    return -(c->L ? lse(last[2 * c->L], last[2 * c->L - 1]) : last[0]);
}

/* Writes one sample's alpha (T_max x S) and its bounds into la at b, and the nll's into nll. */
static void put_sample(const ctc_sample *c, const double *a, double v, int64_t Tm, int64_t S, tens *la, tens *nll,
                       int64_t b, double *d)
{
    nll->f[b] = (float)v;
    for (int64_t k = 0; k < Tm * S; k++)
        la->f[b * Tm * S + k] = (float)a[k];
    for (int w = 0; nll->eb[0] && w < 2; w++) {
        double L = ref_eb_lam(w), acc = 0;
        step_bounds(c, w, d);
        for (int64_t t = 0; t < Tm; t++) {
            acc = t < c->T ? (w ? sqrt(acc * acc + d[t] * d[t]) : acc + d[t]) : acc;
            for (int64_t s = 0; s < S; s++) {
                double x = a[t * S + s];
                int set = t < c->T && s < 2 * c->L + 1;
                double e = !set ? INFINITY : !isfinite(x) ? 0 : ref_eb_store(x, acc / L, w);
                la->eb[w][b * Tm * S + t * S + s] = (float)e;
            }
        }
        nll->eb[w][b] = (float)(!isfinite(v) ? 0 : ref_eb_store(v, acc / L, w));
    }
}

/* The extended target of sample b into ext (from targets at off), checking the classes. */
static int extend(ex *E, const tens *tg, int64_t off, int64_t L, int64_t blank, int64_t C, int64_t *ext)
{
    for (int64_t s = 0; s < 2 * L + 1; s++) {
        ext[s] = s % 2 ? ldi(tg, off + s / 2) : blank;
        if (ext[s] < 0 || ext[s] >= C)
            return ref_fail(E, "target class %lld is outside [0, %lld)", (long long)ext[s], (long long)C);
    }
    return 0;
}

/* The lengths and targets' layout checked: each sample's target offset into toff, the largest L into *Lm. */
static int ctc_layout(ex *E, const tens *lp, const tens *tg, const tens *il, const tens *tl, int64_t *toff,
                      int64_t *Lm)
{
    int64_t T = lp->shape[0], N = lp->shape[1], acc = 0;
    if (il->n != N || tl->n != N || (tg->rank == 2 && tg->shape[0] != N) || tg->rank < 1 || tg->rank > 2)
        return ref_fail(E, "ctc_loss's targets and lengths do not match the batch of %lld", (long long)N);
    *Lm = 0;
    for (int64_t b = 0; b < N; b++) {
        int64_t L = ldi(tl, b), Ti = ldi(il, b);
        toff[b] = tg->rank == 2 ? b * tg->shape[1] : acc;
        acc += L;
        if (Ti < 0 || Ti > T || L < 0 || (tg->rank == 2 ? L > tg->shape[1] : acc > tg->n))
            return ref_fail(E, "sample %lld: input length %lld or target length %lld out of range", (long long)b,
                            (long long)Ti, (long long)L);
        *Lm = L > *Lm ? L : *Lm;
    }
    return 0;
}

/* _ctc_loss.Tensor (lengths as tensors) -> (neg_log_likelihood, log_alpha) */
static int op_ctc(ex *E, int unused)
{
    (void)unused;
    const tens *lp = ref_arg_tensor(E, 0, "log_probs"), *tg = lp ? ref_arg_tensor(E, 1, "targets") : NULL;
    const tens *il = tg ? ref_arg_tensor(E, 2, "input_lengths") : NULL;
    const tens *tl = il ? ref_arg_tensor(E, 3, "target_lengths") : NULL;
    int64_t blank;
    if (!tl || ref_arg_int(E, 4, "blank", 0, &blank))
        return -1;
    if (lp->rank != 3 || blank < 0 || blank >= lp->shape[2])
        return ref_fail(E, "ctc_loss of (T, N, C) log-probabilities with a blank in [0, C)");
    int64_t T = lp->shape[0], N = lp->shape[1], C = lp->shape[2], Lm = 0;
    int64_t *toff = malloc((size_t)(N + 1) * sizeof *toff);
    if (!toff)
        return ref_fail(E, "out of host memory");
    int rc = ctc_layout(E, lp, tg, il, tl, toff, &Lm), first = E->nres;
    int64_t S = 2 * Lm + 1, ash[3] = {N, T, S};
    if (!rc && (!ref_new_result(E, K_F, 1, &N) || !ref_new_result(E, K_F, 3, ash)))
        rc = -1;
    double *a = rc ? NULL : malloc((size_t)(T * S + 1) * sizeof *a), *d = malloc((size_t)(T + 1) * sizeof *d);
    int64_t *ext = malloc((size_t)(S + 1) * sizeof *ext);
    if (!rc && (!a || !d || !ext))
        rc = ref_fail(E, "out of host memory");
    for (int64_t b = 0; !rc && b < N; b++) {
        ctc_sample c = {lp, b * C, N * C, ldi(il, b), ldi(tl, b), ext};
        if ((rc = extend(E, tg, toff[b], c.L, blank, C, ext)))
            break;
        double v = alphas(&c, a, T, S);
        put_sample(&c, a, v, T, S, &E->res[first + 1], &E->res[first], b, d);
    }
    free(toff);
    free(a);
    free(d);
    free(ext);
    return rc;
}

static const ref_op ops[] = {
    {"_ctc_loss", op_ctc, 0},
};
const ref_ops ref_ctc_ops = REF_OPS(ops);
