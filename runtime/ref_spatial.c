/* ref_spatial.c: reference ops on images: constant padding, batch norm,
 * max and average pooling (plain and adaptive) over the last two dims. */
#include "ref_internal.h"

#include <math.h>
#include <string.h>

/* constant_pad_nd(self, pad, value=0): pad[2k], pad[2k+1] widen dim
 * rank-1-k before and after (negative: crop). */
static int op_constant_pad(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t pad[2 * MAXR], shape[MAXR], lo[MAXR] = {0};
    int cnt;
    double value = 0;
    if (!x || ref_arg_ints(E, 1, "pad", pad, &cnt, 2 * MAXR) || ref_arg_num(E, 2, "value", 0, &value))
        return -1;
    if (cnt < 0 || cnt % 2 || cnt / 2 > x->rank)
        return ref_fail(E, "pad has %d elements: an even number, at most 2 per dimension", cnt);
    memcpy(shape, x->shape, sizeof shape);
    for (int k = 0; k < cnt / 2; k++) {
        int d = x->rank - 1 - k;
        lo[d] = pad[2 * k];
        shape[d] += pad[2 * k] + pad[2 * k + 1];
        if (shape[d] < 0)
            return ref_fail(E, "the padding leaves dimension %d with a negative size", d);
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    int64_t idx[MAXR] = {0};
    for (int64_t k = 0; k < o->n; k++) {
        int64_t src = 0, inside = 1;
        for (int d = 0; d < x->rank; d++) {
            int64_t j = idx[d] - lo[d];
            inside &= j >= 0 && j < x->shape[d];
            src = src * x->shape[d] + j;
        }
        if (o->f)
            o->f[k] = inside ? x->f[src] : (float)value;
        else
            o->i[k] = inside ? x->i[src] : (int64_t)value;
        for (int t = 0; o->eb[0] && t < 2; t++)
            o->eb[t][k] = (float)(inside ? ldb(x, t, src) : ref_eb_const(value));
        for (int d = x->rank - 1; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
    return 0;
}

/* reflection_padNd(self, padding) (code 0), replication_padNd (1): the
 * last padding.size / 2 dims widened by mirrored (edge excluded) or
 * repeated edge elements.  A negative padding crops that side first (the
 * window from[d], n[d] long), and the mirror or edge is the cropped one's,
 * as PyTorch's. */
static int op_mode_pad(ex *E, int replicate)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t pad[2 * MAXR], shape[MAXR], lo[MAXR] = {0}, from[MAXR] = {0}, len[MAXR];
    int cnt;
    if (!x || ref_arg_ints(E, 1, "padding", pad, &cnt, 2 * MAXR))
        return -1;
    if (cnt <= 0 || cnt % 2 || cnt / 2 > x->rank)
        return ref_fail(E, "padding has %d elements: an even number, at most 2 per dimension", cnt);
    memcpy(shape, x->shape, sizeof shape);
    memcpy(len, x->shape, sizeof len);
    for (int k = 0; k < cnt / 2; k++) {
        int d = x->rank - 1 - k;
        int64_t p0 = pad[2 * k], p1 = pad[2 * k + 1];
        from[d] = p0 < 0 ? -p0 : 0;
        len[d] += (p0 < 0 ? p0 : 0) + (p1 < 0 ? p1 : 0);
        lo[d] = p0 < 0 ? 0 : p0;
        int64_t n = len[d], hi = p1 < 0 ? 0 : p1;
        if (n <= 0 || (!replicate && (lo[d] >= n || hi >= n)))
            return ref_fail(E, "padding of dimension %d out of range for its size %lld", d, (long long)x->shape[d]);
        shape[d] = n + lo[d] + hi;
    }
    tens *o = ref_new_result(E, kind_of(x->dtype), x->rank, shape);
    if (!o)
        return -1;
    int64_t idx[MAXR] = {0};
    for (int64_t k = 0; k < o->n; k++) {
        int64_t src = 0;
        for (int d = 0; d < x->rank; d++) {
            int64_t j = idx[d] - lo[d], n = len[d];
            if (replicate)
                j = j < 0 ? 0 : j >= n ? n - 1 : j;
            else
                j = j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
            src = src * x->shape[d] + from[d] + j;
        }
        if (o->f)
            o->f[k] = x->f[src];
        else
            o->i[k] = x->i[src];
        for (int t = 0; o->eb[0] && t < 2; t++)
            o->eb[t][k] = (float)ldb(x, t, src);
        for (int d = x->rank - 1; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
    return 0;
}

/* PyTorch's nearest_idx: the scale and the product in float; nearest-exact's
 * (half 0.5) from the pixel centre, the product in double */
static int64_t nearest_src(int64_t i, double scale, double half)
{
    if (half > 0)
        return (int64_t)floorf((float)(((double)i + half) * (float)scale));
    return (int64_t)floorf((float)i * (float)scale);
}

/* Output k of a nearest resampling of the last 3 axes (leading axes of
 * in, out and sc padded with 1, 1 and 0): the source element's index. */
static int64_t nearest_src_elem(int64_t k, const int64_t in[3], const int64_t out[3], const double sc[3], double half)
{
    int64_t src = 0, plane = k / (out[0] * out[1] * out[2]);
    int64_t at[3] = {k / (out[1] * out[2]) % out[0], k / out[2] % out[1], k % out[2]};
    for (int a = 0; a < 3; a++) {
        int64_t s = nearest_src(at[a], sc[a], half);
        src = src * in[a] + (s < in[a] - 1 ? s : in[a] - 1);
    }
    return plane * in[0] * in[1] * in[2] + src;
}

/* upsample_nearest1d/2d/3d(input, output_size, scales...) and their .vec
 * forms (input, output_size, scale_factors): the last 1 to 3 dims, output
 * index i reads min(floor(i * scale), in - 1), scale 1 / the given factor
 * or in / out (in float, as PyTorch's nearest_idx); _upsample_nearest_exact1d/2d/3d
 * (mode "nearest-exact") read min(floor((i + 0.5) * scale), in - 1). */
static int op_upsample_nearest(ex *E, int nd)
{
    double half = strstr(E->node->base, "exact") ? 0.5 : 0;
    const tens *x = ref_arg_tensor(E, 0, "input");
    int64_t os[3] = {0}, shape[MAXR], in3[3] = {1, 1, 1}, out3[3] = {1, 1, 1};
    double sc[3] = {0};
    int cnt = 0;
    if (!x)
        return -1;
    if (x->rank < nd + 1)
        return ref_fail(E, "input has rank %d (%d or more expected)", x->rank, nd + 1);
    const gr_arg *a1 = ref_arg(E, 1, "output_size");
    if (ref_present(a1) && (ref_arg_ints(E, 1, "output_size", os, &cnt, 3) || cnt != nd))
        return ref_fail(E, "output_size must have %d sizes", nd);
    for (int a = 0; a < nd; a++) {
        const gr_arg *f = gr_upsample_scale(E->node, 2, nd, a);
        double v = 0;
        kind k;
        if (ref_present(f) && ref_num_of(E, f, "scale", &v, &k))
            return -1;
        int64_t in = x->shape[x->rank - nd + a];
        if (!cnt)
            os[a] = (int64_t)floor((double)in * v);
        sc[3 - nd + a] = v > 0 ? 1 / v : os[a] ? (double)in / (double)os[a] : 0;
        if (os[a] < 0 || (os[a] && !in))
            return ref_fail(E, "the output size is negative or the input empty");
        in3[3 - nd + a] = in;
        out3[3 - nd + a] = os[a];
    }
    memcpy(shape, x->shape, sizeof shape);
    for (int a = 0; a < nd; a++)
        shape[x->rank - nd + a] = os[a];
    tens *o = ref_new_result(E, K_F, x->rank, shape);
    if (!o)
        return -1;
    for (int64_t k = 0; k < o->n; k++) {
        int64_t src = nearest_src_elem(k, in3, out3, sc, half);
        o->f[k] = (float)ldd(x, src);
        for (int t = 0; o->eb[0] && t < 2; t++)
            o->eb[t][k] = (float)ldb(x, t, src);
    }
    return 0;
}

/* ---- Batch norm ---- */

/* Batch norm's per-channel statistics: mean and 1/sqrt(var + eps) with
 * their bounds (track w), over the elements of channel ch (N planes of S
 * at stride C*S) when training, else the running statistics. */
typedef struct {
    const tens *x, *w, *b, *rm, *rv;
    int64_t N, C, S;
    double eps;
    int training;
    double scale; /* group norm: 1 / the group's element count */
} bn_args;

/* Channel ch's sum over each sample's S elements, stored, then over the
 * samples: of x (scale 0), or of (x - m)^2 * scale. */
static bv bn_sum(const bn_args *a, int64_t ch, bv m, int w, double scale)
{
    eb_acc outer = {.w = w};
    for (int64_t n = 0; n < a->N; n++) {
        eb_acc inner = {.w = w};
        for (int64_t s = 0; s < a->S; s++) {
            int64_t k = (n * a->C + ch) * a->S + s;
            bv v = {ldd(a->x, k), ldb(a->x, w, k), w};
            if (scale) {
                bv xc = ref_bv_sub(v, m);
                v = ref_bv_mul(ref_bv_mul(xc, xc), ref_bv_k(scale));
            }
            ref_acc_add(&inner, v.v, v.e);
        }
        bv ns = ref_acc_sum(&inner);
        ref_acc_add(&outer, ns.v, ns.e);
    }
    return ref_acc_sum(&outer);
}

static void bn_stats(const bn_args *a, int64_t ch, int w, bv *mean, bv *rstd)
{
    if (!a->training) {
        *mean = (bv){ldd(a->rm, ch), ldb(a->rm, w, ch), w};
        bv var = {ldd(a->rv, ch), ldb(a->rv, w, ch), w};
        *rstd = ref_bv_fn(U_RSQRT, ref_bv_add(var, ref_bv_k(a->eps)));
        return;
    }
    /* the device's decomposition (compiler/front/decompose.c, channel_sums):
     * sums per sample, then over the samples; x - mean, its squares scaled
     * by 1 / count, summed alike */
    double cnt = (double)(a->N * a->S);
    *mean = ref_bv_div(bn_sum(a, ch, ref_bv_k(0), w, 0), ref_bv_k(cnt));
    bv var = bn_sum(a, ch, *mean, w, 1 / cnt);
    *rstd = ref_bv_fn(U_RSQRT, ref_bv_add(var, ref_bv_k(a->eps)));
}

/* The channel's mean and 1/sqrt(var + eps) in double. */
static void bn_values(const bn_args *a, int64_t ch, double *mean, double *rstd)
{
    if (!a->training) {
        *mean = ldd(a->rm, ch);
        *rstd = 1 / sqrt(ldd(a->rv, ch) + a->eps);
        return;
    }
    double s = 0, ss = 0, cnt = (double)(a->N * a->S);
    for (int pass = 0; pass < 2; pass++)
        for (int64_t n = 0; n < a->N; n++)
            for (int64_t i = 0; i < a->S; i++) {
                double v = ldd(a->x, (n * a->C + ch) * a->S + i);
                if (pass)
                    ss += (v - s) * (v - s);
                else
                    s += v / cnt;
            }
    *mean = s;
    *rstd = 1 / sqrt(ss / cnt + a->eps);
}

/* One channel: y = (x - mean) * rstd * weight + bias, values in double,
 * bounds as the device's sequence of operations. */
static void bn_channel(const bn_args *a, int64_t ch, tens *o, double *mv, double *rv, bv m[2], bv r[2])
{
    for (int t = 0; o->eb[0] && t < 2; t++)
        bn_stats(a, ch, t, &m[t], &r[t]);
    bn_values(a, ch, mv, rv);
    double wt = a->w ? ldd(a->w, ch) : 1, bs = a->b ? ldd(a->b, ch) : 0;
    for (int64_t n = 0; n < a->N; n++)
        for (int64_t s = 0; s < a->S; s++) {
            int64_t k = (n * a->C + ch) * a->S + s;
            o->f[k] = (float)((ldd(a->x, k) - *mv) * *rv * wt + bs);
            for (int t = 0; o->eb[0] && t < 2; t++) {
                bv y = ref_bv_mul(ref_bv_sub((bv){ldd(a->x, k), ldb(a->x, t, k), t}, m[t]), r[t]);
                if (a->w)
                    y = ref_bv_mul(y, (bv){wt, ldb(a->w, t, ch), t});
                if (a->b)
                    y = ref_bv_add(y, (bv){bs, ldb(a->b, t, ch), t});
                o->eb[t][k] = (float)y.e;
            }
        }
}

/* Element k of the last two results (a norm's mean and rstd). */
static void stats_out(ex *E, int64_t k, double m, double r, const bv mb[2], const bv rb[2])
{
    tens *om = &E->res[E->nres - 2], *orstd = &E->res[E->nres - 1];
    om->f[k] = (float)m;
    orstd->f[k] = (float)r;
    for (int t = 0; om->eb[0] && t < 2; t++) {
        om->eb[t][k] = (float)mb[t].e;
        orstd->eb[t][k] = (float)rb[t].e;
    }
}

static int bn_optional(ex *E, int pos, const char *key, const tens **t)
{
    const gr_arg *a = ref_arg(E, pos, key);
    *t = NULL;
    return ref_present(a) && !(*t = ref_tensor_of(E, a, key)) ? -1 : 0;
}

/* native_batch_norm(input, weight, bias, running_mean, running_var,
 * training, momentum, eps) -> (out, save_mean, save_invstd);
 * _native_batch_norm_legit_no_training(input, weight, bias, running_mean,
 * running_var, momentum, eps) -> (out, [0], [0]).  The running statistics
 * are not updated (a graph has no state). */
static int op_batch_norm(ex *E, int no_training)
{
    bn_args a = {0};
    if (!(a.x = ref_arg_tensor(E, 0, "input")) || bn_optional(E, 1, "weight", &a.w) ||
        bn_optional(E, 2, "bias", &a.b) || bn_optional(E, 3, "running_mean", &a.rm) ||
        bn_optional(E, 4, "running_var", &a.rv))
        return -1;
    if (!no_training && ref_arg_bool(E, 5, "training", 0, &a.training))
        return -1;
    if (ref_arg_num(E, no_training ? 6 : 7, "eps", 1e-5, &a.eps))
        return -1;
    if (a.x->rank < 2)
        return ref_fail(E, "input has rank %d (2 or more expected)", a.x->rank);
    a.N = a.x->shape[0];
    a.C = a.x->shape[1];
    a.S = ref_numel(a.x->rank - 2, a.x->shape + 2);
    if (!a.training && (!a.rm || !a.rv))
        return ref_fail(E, "needs running_mean and running_var when not training");
    const tens *per[4] = {a.w, a.b, a.training ? NULL : a.rm, a.training ? NULL : a.rv};
    for (int i = 0; i < 4; i++)
        if (per[i] && per[i]->n != a.C)
            return ref_fail(E, "a per-channel tensor does not have the input's %lld channels", (long long)a.C);
    /* eval: empty statistics (PyTorch's CPU kernel), or the running mean and
     * the rstd used where the graph declares them per channel (a trace on
     * the meta device) */
    const gr_value *v = &E->g->values[E->node->out];
    int stats = a.training || (v->ntuple == 3 && v->tuple[1].rank == 1 && v->tuple[1].shape[0] == a.C && a.C);
    int64_t sn = stats ? a.C : 0;
    tens *o = ref_new_result(E, K_F, a.x->rank, a.x->shape);
    if (!o || !ref_new_result(E, K_F, 1, &sn) || !ref_new_result(E, K_F, 1, &sn))
        return -1;
    o = &E->res[E->nres - 3]; /* the array may have moved */
    for (int64_t ch = 0; ch < a.C; ch++) {
        double m, r;
        bv mb[2] = {{0}}, rb[2] = {{0}};
        bn_channel(&a, ch, o, &m, &r, mb, rb);
        if (stats)
            stats_out(E, ch, m, r, mb, rb);
    }
    return 0;
}

/* The device's sum over a group's cpg channels of f(k) (S elements each
 * from base): an fp32 sum per channel, stored, then their fp32 sum. */
typedef bv (*gn_term)(const bn_args *a, int64_t k, bv m, int w);

static bv gn_sum(const bn_args *a, int64_t base, int64_t cpg, gn_term f, bv m, int w)
{
    eb_acc outer = {.w = w};
    for (int64_t ch = 0; ch < cpg; ch++) {
        eb_acc inner = {.w = w};
        for (int64_t s = 0; s < a->S; s++) {
            bv v = f(a, base + ch * a->S + s, m, w);
            ref_acc_add(&inner, v.v, v.e);
        }
        bv cs = ref_acc_sum(&inner);
        ref_acc_add(&outer, cs.v, cs.e);
    }
    return ref_acc_sum(&outer);
}

static bv gn_x(const bn_args *a, int64_t k, bv m, int w)
{
    (void)m;
    return (bv){ldd(a->x, k), ldb(a->x, w, k), w};
}

/* (x - m)^2 / count, as the device scales each square */
static bv gn_sq(const bn_args *a, int64_t k, bv m, int w)
{
    bv xc = ref_bv_sub(gn_x(a, k, m, w), m);
    return ref_bv_mul(ref_bv_mul(xc, xc), ref_bv_k(a->scale));
}

/* One group of a group norm: the cnt = cpg * S elements from base (cpg
 * channels from channel c0), normalized by their own mean and variance,
 * then weight and bias per channel; values in double, bounds as the
 * device's sequence (compiler/front/decompose.c, r_group_norm). */
static void gn_group(bn_args *a, int64_t base, int64_t c0, int64_t cpg, tens *o, double *mv, double *rv, bv m[2],
                     bv r[2])
{
    int64_t cnt = cpg * a->S;
    double s = 0, ss = 0;
    for (int64_t k = 0; k < cnt; k++)
        s += ldd(a->x, base + k) / (double)cnt;
    for (int64_t k = 0; k < cnt; k++)
        ss += (ldd(a->x, base + k) - s) * (ldd(a->x, base + k) - s);
    *mv = s;
    *rv = 1 / sqrt(ss / (double)cnt + a->eps);
    a->scale = 1.0 / (double)cnt;
    for (int t = 0; o->eb[0] && t < 2; t++) {
        m[t] = ref_bv_div(gn_sum(a, base, cpg, gn_x, ref_bv_k(0), t), ref_bv_k((double)cnt));
        bv var = gn_sum(a, base, cpg, gn_sq, m[t], t);
        r[t] = ref_bv_fn(U_RSQRT, ref_bv_add(var, ref_bv_k(a->eps)));
    }
    for (int64_t k = 0; k < cnt; k++) {
        int64_t ch = c0 + k / a->S;
        double wt = a->w ? ldd(a->w, ch) : 1, bs = a->b ? ldd(a->b, ch) : 0;
        o->f[base + k] = (float)((ldd(a->x, base + k) - *mv) * *rv * wt + bs);
        for (int t = 0; o->eb[0] && t < 2; t++) {
            bv y = ref_bv_mul(ref_bv_sub((bv){ldd(a->x, base + k), ldb(a->x, t, base + k), t}, m[t]), r[t]);
            if (a->w)
                y = ref_bv_mul(y, (bv){wt, ldb(a->w, t, ch), t});
            if (a->b)
                y = ref_bv_add(y, (bv){bs, ldb(a->b, t, ch), t});
            o->eb[t][base + k] = (float)y.e;
        }
    }
}

/* native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd) */
static int op_group_norm(ex *E, int unused)
{
    (void)unused;
    bn_args a = {0};
    int64_t G = 0;
    if (!(a.x = ref_arg_tensor(E, 0, "input")) || bn_optional(E, 1, "weight", &a.w) ||
        bn_optional(E, 2, "bias", &a.b) || ref_arg_req_int(E, 6, "group", &G) || ref_arg_num(E, 7, "eps", 1e-5, &a.eps))
        return -1;
    if (a.x->rank < 2)
        return ref_fail(E, "input has rank %d (2 or more expected)", a.x->rank);
    a.N = a.x->shape[0];
    a.C = a.x->shape[1];
    a.S = ref_numel(a.x->rank - 2, a.x->shape + 2);
    if (G <= 0 || a.C % G)
        return ref_fail(E, "%lld groups do not divide %lld channels", (long long)G, (long long)a.C);
    if ((a.w && a.w->n != a.C) || (a.b && a.b->n != a.C))
        return ref_fail(E, "weight or bias does not have the input's %lld channels", (long long)a.C);
    int64_t ss[2] = {a.N, G};
    tens *o = ref_new_result(E, K_F, a.x->rank, a.x->shape);
    if (!o || !ref_new_result(E, K_F, 2, ss) || !ref_new_result(E, K_F, 2, ss))
        return -1;
    o = &E->res[E->nres - 3]; /* the array may have moved */
    int64_t cpg = a.C / G;
    for (int64_t n = 0; n < a.N; n++)
        for (int64_t g = 0; g < G; g++) {
            double m, r;
            bv mb[2] = {{0}}, rb[2] = {{0}};
            gn_group(&a, (n * a.C + g * cpg) * a.S, g * cpg, cpg, o, &m, &r, mb, rb);
            stats_out(E, n * G + g, m, r, mb, rb);
        }
    return 0;
}

/* ---- Pooling over the last two dims ---- */

typedef struct {
    int64_t k[2], s[2], p[2], d[2]; /* kernel, stride, padding, dilation */
    int64_t in[2], out[2];
    int adaptive;
} pool_geom;

/* The window of output position i along axis a: first input index, its
 * step and its count (elements outside the input left out), and *full
 * the count padding included. */
static void pool_window(const pool_geom *g, int a, int64_t i, int64_t *first, int64_t *step, int64_t *n,
                        int64_t *full)
{
    if (g->adaptive) { /* floor(i * in / out) .. ceil((i + 1) * in / out) */
        int64_t s = i * g->in[a] / g->out[a], e = ((i + 1) * g->in[a] + g->out[a] - 1) / g->out[a];
        *first = s;
        *step = 1;
        *n = *full = e - s;
        return;
    }
    int64_t s = i * g->s[a] - g->p[a];
    /* PyTorch's avg pool counts padding up to in + pad, not beyond */
    int64_t fend = s + (g->k[a] - 1) * g->d[a] + 1, lim = g->in[a] + g->p[a];
    *full = (fend < lim ? fend : lim) - s;
    *first = s;
    *step = g->d[a];
    *n = 0;
    while (*first < 0 && *n < g->k[a]) {
        *first += g->d[a];
        (*n)++;
    }
    int64_t cnt = 0;
    for (int64_t j = *first, m = *n; m < g->k[a] && j < g->in[a]; j += g->d[a], m++)
        cnt++;
    *n = cnt;
}

/* Output size of a pooled axis (PyTorch's pooling_output_shape). */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p)
        o--;
    return o;
}

/* kernel_size, stride (default: the kernel), padding, dilation, each one
 * int or two, read into g; ceil_mode into *ceil_mode. */
static int pool_args(ex *E, const tens *x, int with_dilation, pool_geom *g, int *ceil_mode)
{
    int64_t v[4][2] = {{0}, {0}, {0, 0}, {1, 1}};
    const char *keys[4] = {"kernel_size", "stride", "padding", "dilation"};
    for (int i = 0; i < (with_dilation ? 4 : 3); i++) {
        int cnt;
        if (ref_arg_ints(E, i + 1, keys[i], v[i], &cnt, 2))
            return -1;
        if (cnt == 1)
            v[i][1] = v[i][0];
        if (cnt <= 0 && i == 1)
            memcpy(v[1], v[0], sizeof v[1]);
        else if (cnt <= 0 && i == 0)
            return ref_fail(E, "needs a kernel_size");
    }
    if (ref_arg_bool(E, with_dilation ? 5 : 4, "ceil_mode", 0, ceil_mode))
        return -1;
    for (int a = 0; a < 2; a++) {
        g->k[a] = v[0][a], g->s[a] = v[1][a], g->p[a] = v[2][a], g->d[a] = v[3][a];
        if (g->k[a] <= 0 || g->s[a] <= 0 || g->d[a] <= 0 || g->p[a] < 0 || 2 * g->p[a] > g->k[a])
            return ref_fail(E, "kernel, stride and dilation must be positive, padding at most half the kernel");
        g->in[a] = x->shape[x->rank - 2 + a];
        g->out[a] = pool_out(g->in[a], g->k[a], g->s[a], g->p[a], g->d[a], *ceil_mode);
        if (g->out[a] < 0)
            return ref_fail(E, "the window is larger than the padded input");
    }
    return 0;
}

/* The max of one window (the last NaN, else the first maximum: its flat
 * index h * W + w), with the bound of a selection: the largest bound of any
 * element that could be the max; the index is exact unless another
 * element could be. */
static void max_window(const tens *x, int64_t base, const pool_geom *g, int64_t oh, int64_t ow, float *v,
                       int64_t *ix, double eb[2], double ieb[2])
{
    int64_t f[2], st[2], n[2], full[2];
    pool_window(g, 0, oh, &f[0], &st[0], &n[0], &full[0]);
    pool_window(g, 1, ow, &f[1], &st[1], &n[1], &full[1]);
    float m = -INFINITY;
    *ix = n[0] && n[1] ? f[0] * g->in[1] + f[1] : -1;
    for (int64_t a = 0, h = f[0]; a < n[0]; a++, h += st[0])
        for (int64_t b = 0, w = f[1]; b < n[1]; b++, w += st[1]) {
            float xv = x->f[base + h * g->in[1] + w];
            if (xv > m || isnan(xv)) { /* PyTorch's test: the last NaN wins */
                m = xv;
                *ix = h * g->in[1] + w;
            }
        }
    *v = m;
    for (int t = 0; t < 2; t++) {
        double em = x->eb[t] && *ix >= 0 ? ldb(x, t, base + *ix) : 0;
        eb[t] = em;
        ieb[t] = 0;
        for (int64_t a = 0, h = f[0]; x->eb[t] && a < n[0]; a++, h += st[0])
            for (int64_t b = 0, w = f[1]; b < n[1]; b++, w += st[1]) {
                int64_t k = base + h * g->in[1] + w;
                if (k != base + *ix && ref_eb_flips(m - x->f[k], em + ldb(x, t, k), t)) {
                    eb[t] = fmax(eb[t], ldb(x, t, k) + ref_eb_jump(fabs((double)m - x->f[k]), t));
                    ieb[t] = INFINITY;
                }
            }
    }
}

/* The taps of a window along axis a at output position i: its first
 * (padded) input index, step and count (the kernel, or an adaptive
 * window's extent). */
static void pool_taps(const pool_geom *g, int a, int64_t i, int64_t *first, int64_t *step, int64_t *n)
{
    if (g->adaptive) {
        int64_t f, st, full;
        pool_window(g, a, i, &f, &st, n, &full);
        *first = f;
        *step = 1;
        return;
    }
    *first = i * g->s[a] - g->p[a];
    *step = g->d[a];
    *n = g->k[a];
}

/* The mean of one window over the divisor: the padding counted or not,
 * or divisor_override (div != 0).  Bounds as the device computes it (the
 * compiler's decomposition): per row of the window a chain of DL16
 * additions over its column taps, then a chain over those rows, a tap in
 * the padding an exact 0, then one division. */
static void avg_window(const tens *x, int64_t base, const pool_geom *g, int64_t oh, int64_t ow, int incl_pad,
                       int64_t div, float *v, double eb[2])
{
    int64_t f[2], st[2], n[2], full[2], tf[2], ts[2], tn[2];
    pool_window(g, 0, oh, &f[0], &st[0], &n[0], &full[0]);
    pool_window(g, 1, ow, &f[1], &st[1], &n[1], &full[1]);
    pool_taps(g, 0, oh, &tf[0], &ts[0], &tn[0]);
    pool_taps(g, 1, ow, &tf[1], &ts[1], &tn[1]);
    double s = 0;
    bv acc[2] = {{0, 0, 0}, {0, 0, 1}};
    for (int64_t a = 0, h = tf[0]; a < tn[0]; a++, h += ts[0]) {
        bv row[2] = {{0, 0, 0}, {0, 0, 1}};
        for (int64_t b = 0, w = tf[1]; b < tn[1]; b++, w += ts[1]) {
            int in = h >= 0 && h < g->in[0] && w >= 0 && w < g->in[1];
            int64_t k = base + h * g->in[1] + w;
            s += in ? ldd(x, k) : 0;
            for (int t = 0; t < 2; t++) {
                bv tap = in ? (bv){ldd(x, k), ldb(x, t, k), t} : (bv){0, 0, t};
                row[t] = b ? ref_bv_add(row[t], tap) : tap;
            }
        }
        for (int t = 0; t < 2; t++)
            acc[t] = a ? ref_bv_add(acc[t], row[t]) : row[t];
    }
    double cnt = div ? (double)div : incl_pad ? (double)(full[0] * full[1]) : (double)(n[0] * n[1]);
    *v = (float)(s / cnt);
    for (int t = 0; t < 2; t++)
        eb[t] = ref_bv_div(acc[t], ref_bv_k(cnt)).e;
}

/* The result of a pooling (out, and indices for max) over x's planes. */
static int pool_run(ex *E, const tens *x, const pool_geom *g, int is_max, int incl_pad, int64_t div)
{
    int64_t shape[MAXR];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->rank - 2] = g->out[0];
    shape[x->rank - 1] = g->out[1];
    tens *o = ref_new_result(E, K_F, x->rank, shape), *ix = NULL;
    if (!o || (is_max && !(ix = ref_new_result(E, K_I, x->rank, shape))))
        return -1;
    if (is_max)
        o = &E->res[E->nres - 2]; /* the array may have moved */
    int64_t planes = ref_numel(x->rank - 2, x->shape), plane = g->in[0] * g->in[1];
    for (int64_t p = 0, k = 0; p < planes; p++)
        for (int64_t oh = 0; oh < g->out[0]; oh++)
            for (int64_t ow = 0; ow < g->out[1]; ow++, k++) {
                double eb[2], ieb[2];
                if (is_max)
                    max_window(x, p * plane, g, oh, ow, &o->f[k], &ix->i[k], eb, ieb);
                else
                    avg_window(x, p * plane, g, oh, ow, incl_pad, div, &o->f[k], eb);
                for (int t = 0; o->eb[0] && t < 2; t++) {
                    o->eb[t][k] = (float)eb[t];
                    if (ix)
                        ix->eb[t][k] = (float)ieb[t];
                }
            }
    return 0;
}

static const tens *pool_input(ex *E)
{
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (x && (x->rank < 3 || kind_of(x->dtype) != K_F)) {
        ref_fail(E, "input must be a float tensor of rank 3 or more");
        return NULL;
    }
    return x;
}

/* max_pool2d_with_indices(self, kernel_size, stride=[], padding=0,
 * dilation=1, ceil_mode=False) -> (out, indices) */
static int op_max_pool2d(ex *E, int unused)
{
    (void)unused;
    const tens *x = pool_input(E);
    pool_geom g = {0};
    int ceil_mode = 0;
    if (!x || pool_args(E, x, 1, &g, &ceil_mode))
        return -1;
    return pool_run(E, x, &g, 1, 0, 0);
}

/* avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False,
 * count_include_pad=True, divisor_override=None) */
static int op_avg_pool2d(ex *E, int unused)
{
    (void)unused;
    const tens *x = pool_input(E);
    pool_geom g = {0};
    int ceil_mode = 0, incl = 1;
    int64_t div = 0;
    if (!x || pool_args(E, x, 0, &g, &ceil_mode) || ref_arg_bool(E, 5, "count_include_pad", 1, &incl) ||
        ref_arg_int(E, 6, "divisor_override", 0, &div))
        return -1;
    if (ref_present(ref_arg(E, 6, "divisor_override")) && !div)
        return ref_fail(E, "divisor_override must not be zero");
    return pool_run(E, x, &g, 0, incl, div);
}

/* _adaptive_avg_pool2d(self, output_size), adaptive_max_pool2d(self,
 * output_size) -> (out, indices) */
static int op_adaptive_pool2d(ex *E, int is_max)
{
    const tens *x = pool_input(E);
    int64_t os[2];
    int cnt;
    if (!x || ref_arg_ints(E, 1, "output_size", os, &cnt, 2))
        return -1;
    if (cnt != 2 || os[0] < 0 || os[1] < 0)
        return ref_fail(E, "output_size must be two sizes");
    pool_geom g = {.adaptive = 1};
    for (int a = 0; a < 2; a++) {
        g.in[a] = x->shape[x->rank - 2 + a];
        g.out[a] = os[a];
        if (os[a] && !g.in[a])
            return ref_fail(E, "an empty input has no window");
    }
    return pool_run(E, x, &g, is_max, 1, 0);
}

static const ref_op ops[] = {
    {"constant_pad_nd", op_constant_pad, 0},
    {"reflection_pad1d", op_mode_pad, 0},
    {"reflection_pad2d", op_mode_pad, 0},
    {"reflection_pad3d", op_mode_pad, 0},
    {"replication_pad1d", op_mode_pad, 1},
    {"replication_pad2d", op_mode_pad, 1},
    {"replication_pad3d", op_mode_pad, 1},
    {"upsample_nearest1d", op_upsample_nearest, 1},
    {"upsample_nearest2d", op_upsample_nearest, 2},
    {"upsample_nearest3d", op_upsample_nearest, 3},
    {"_upsample_nearest_exact1d", op_upsample_nearest, 1},
    {"_upsample_nearest_exact2d", op_upsample_nearest, 2},
    {"_upsample_nearest_exact3d", op_upsample_nearest, 3},
    {"native_batch_norm", op_batch_norm, 0}, /* (out, save_mean, save_invstd) */
    {"_native_batch_norm_legit_no_training", op_batch_norm, 1},
    {"native_group_norm", op_group_norm, 0}, /* (out, mean, rstd) */
    {"max_pool2d_with_indices", op_max_pool2d, 0}, /* (out, indices) */
    {"avg_pool2d", op_avg_pool2d, 0},
    {"_adaptive_avg_pool2d", op_adaptive_pool2d, 0},
    {"adaptive_max_pool2d", op_adaptive_pool2d, 1}, /* (out, indices) */
};
const ref_ops ref_spatial_ops = REF_OPS(ops);
