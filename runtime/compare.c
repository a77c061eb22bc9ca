/* compare.c: an output tensor, read from the device, against its reference
 * values and per-element tolerances (rt_check_result), and the one-line
 * report of a comparison (rt_check_format). */
#include "rt_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* An equal infinity is exact, and so is the device's stand-in for it (+-2^30
 * or beyond, the same sign), and an infinity read into a 16-bit host dtype
 * where the reference overflows that dtype (PyTorch's 70000 in fp16).  A
 * finite reference DL16 cannot hold (a -1e30 or torch.finfo(f32).min mask)
 * is held as the finite stand-in +-2^29 (isa_dl16_standin) or as nan_to_num's
 * +-ISA_DL16_TOP; each is taken for it. */
static int same_value(isa_host_dtype hdt, float y, double ref)
{
    if ((double)y == ref)
        return 1;
    int same_sign = (y < 0) == (ref < 0);
    if (isinf(ref))
        return same_sign && fabs(y) >= ISA_DL16_INF;
    if (isa_dl16_beyond(ref))
        return same_sign && (fabs(y) == ISA_DL16_BIG || fabs(y) == ISA_DL16_TOP);
    return same_sign && isinf(y) && (fabs(ref) > FLT_MAX || isinf(isa_host_round(hdt, (float)ref)));
}

/* A reference DL16 cannot hold and a device value of its sign from 2^30 on
 * but no stand-in: computed on from the stand-in (maximum(lgamma(1e10), 2e9)
 * is 2e9 of 2^29) and not within its tolerance, it may be right or wrong:
 * nothing is proven (beyond=N). */
static int held_beyond(float y, double ref)
{
    return isa_dl16_beyond(ref) && (y < 0) == (ref < 0) && fabs(y) >= ISA_DL16_INF;
}

void rt_compare_values(isa_host_dtype hdt, const float *y, const rt_refval *v, int64_t n, rt_check_result *r)
{
    r->rank = v->rank;
    memcpy(r->shape, v->shape, sizeof r->shape);
    r->count = n;
    r->worst = -1;
    double worst_ratio = -1;
    for (int64_t i = 0; i < n; i++) {
        double ref = v->val[i], tol = v->tol[i];
        if (isnan(y[i]) && isnan(ref)) { /* NaN where the reference has one (a mean over no element) */
            r->within++;
            continue;
        }
        if (isnan(y[i])) {
            r->nans++;
            if (worst_ratio < INFINITY) {
                worst_ratio = INFINITY;
                r->worst = i;
            }
            continue;
        }
        r->vacuous += isinf(tol);
        double e = same_value(hdt, y[i], ref) ? 0 : fabs((double)y[i] - ref);
        if (e > tol && held_beyond(y[i], ref)) {
            r->beyond++;
            e = 0;
        }
        r->differ += isinf(tol) && v->exact && e > 0;
        if (e <= tol) /* false when ref is NaN */
            r->within++;
        if (e > r->max_abs_err)
            r->max_abs_err = e;
        double rel = e / fmax(fabs(ref), RT_REL_TINY);
        if (rel > r->max_rel_err)
            r->max_rel_err = rel;
        double ratio = isnan(e) ? INFINITY : e / tol;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            r->worst = i;
        }
    }
    r->worst_ratio = worst_ratio < 0 ? 0 : worst_ratio;
    if (r->worst >= 0) {
        r->worst_value = y[r->worst];
        r->worst_ref = v->val[r->worst];
        r->worst_tol = (float)v->tol[r->worst];
    }
    r->ok = r->within == n && r->nans == 0;
}

int rt_compare(rt_program *prog, const rt_refval *v, int ti, rt_check_result *r, char *err, size_t errlen)
{
    const isa_tensor *t = &prog->p->tensors[ti];
    if (t->rank != v->rank || memcmp(t->shape, v->shape, (size_t)v->rank * sizeof *v->shape) != 0) {
        char ts[192], vs[192];
        rt_dims_str(t->rank, t->shape, ts, sizeof ts);
        rt_dims_str(v->rank, v->shape, vs, sizeof vs);
        return isa_errf(err, errlen, "reference: output %s has shape %s but graph line %d computes shape %s",
                        t->name, ts, v->line, vs);
    }
    int64_t n = rt_tensor_elems(t);
    float *y = malloc((n ? (size_t)n : 1) * sizeof *y);
    if (!y)
        return isa_errf(err, errlen, "reference: out of host memory");
    if (rt_read_tensor(prog, t->name, y, err, errlen)) {
        free(y);
        return -1;
    }
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", t->name);
    snprintf(r->op, sizeof r->op, "%s", v->op);
    r->line = v->line;
    rt_compare_values(t->host_dtype, y, v, n, r);
    free(y);
    return 0;
}

/* A value the graph computes that the program holds as data it reads (an
 * input or a weight) would be filled, not computed, and --check would
 * compare nothing: refused, naming the tensor. */
int rt_computed_as_data(const isa_program *p, const char *name, int line, char *err, size_t errlen)
{
    int i = isa_program_find_tensor(p, name);
    if (i < 0 || (p->tensors[i].role != ISA_ROLE_INPUT && p->tensors[i].role != ISA_ROLE_WEIGHT))
        return 0;
    return isa_errf(err, errlen, "reference: %%%s is computed by the graph (line %d) but the program's tensor %s is %s %s, "
                    "not an output", name, line, name, p->tensors[i].role == ISA_ROLE_INPUT ? "an" : "a",
                    isa_role_names[p->tensors[i].role]);
}

void rt_check_format(const rt_check_result *r, char *buf, size_t len)
{
    char what[128] = "";
    if (r->step == RT_CHECK_STEPWISE)
        snprintf(what, sizeof what, " stepwise (cuts=%d)", r->cuts);
    else if (r->step == RT_CHECK_CUT)
        snprintf(what, sizeof what, " cut (graph line %d, %s)", r->line, r->op);
    int o = snprintf(buf, len, "check %s%s: max_abs_err=%.1e max_rel_err=%.1e within_tol=%.6f (%lld/%lld)", r->name,
                     what, r->max_abs_err, r->max_rel_err, r->count ? (double)r->within / (double)r->count : 1.0,
                     (long long)r->within, (long long)r->count);
    if (o < 0 || (size_t)o >= len)
        return;
    o += snprintf(buf + o, len - (size_t)o, " worst_err_over_tol=%.2g", r->worst_ratio);
    if (o >= 0 && (size_t)o < len && r->vacuous) /* said, not silent: an infinite bound proves nothing */
        o += snprintf(buf + o, len - (size_t)o, " vacuous=%lld", (long long)r->vacuous);
    if (o < 0 || (size_t)o >= len)
        return;
    if (o >= 0 && (size_t)o < len && r->differ) /* an index or count that differs where nothing is proven */
        o += snprintf(buf + o, len - (size_t)o, " differ=%lld", (long long)r->differ);
    if (o >= 0 && (size_t)o < len && r->beyond)
        o += snprintf(buf + o, len - (size_t)o, " beyond=%lld", (long long)r->beyond);
    if (o < 0 || (size_t)o >= len)
        return;
    if (r->ok && (r->differ || r->beyond)) { /* nothing proven of them either way: no "ok" */
        snprintf(buf + o, len - (size_t)o, " vacuous");
        return;
    }
    if (r->ok) {
        snprintf(buf + o, len - (size_t)o, " ok");
        return;
    }
    char idx[160] = "";
    if (r->worst >= 0) {
        int64_t rest = r->worst, sub[ISA_MAX_RANK];
        for (int d = r->rank; d-- > 0;) {
            sub[d] = r->shape[d] ? rest % r->shape[d] : 0;
            rest = r->shape[d] ? rest / r->shape[d] : 0;
        }
        size_t k = 0;
        for (int d = 0; d < r->rank && k < sizeof idx; d++)
            k += (size_t)snprintf(idx + k, sizeof idx - k, "%s%lld", d ? "," : "", (long long)sub[d]);
    }
    if (r->nans)
        o += snprintf(buf + o, len - (size_t)o, " nan=%lld", (long long)r->nans);
    if (o < 0 || (size_t)o >= len)
        return;
    /* a NaN where the reference is infinite is DL16's one NINF pattern (x / 0):
     * the format has no infinity, so the device cannot give PyTorch's */
    const char *why = isnan(r->worst_value) && isinf(r->worst_ref) ? " (DL16 has no infinity: NINF reads back as NaN)" : "";
    if (r->worst >= 0)
        snprintf(buf + o, len - (size_t)o, " worst[%s]=%.6g ref=%.6g tol=%.2e%s MISMATCH", idx,
                 (double)r->worst_value, (double)r->worst_ref, (double)r->worst_tol, why);
    else
        snprintf(buf + o, len - (size_t)o, " MISMATCH");
}
