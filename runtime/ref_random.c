/* ref_random.c: reference ops whose value is a random draw: rand, randn, their _like forms, randint_like,
 * normal, bernoulli, multinomial, rrelu_with_noise (training).
 *
 * Two modes (docs/validation.md, "Random ops"):
 * - without error tracking (the host fallback, runtime/fallback.c, runs
 *   the device's host op so): a draw from the host's own generator, keyed
 *   by the seed (rt_ref_seed: the run's --seed) and the result's value
 *   name; element k takes the next words of rt_random_word.  It is not
 *   PyTorch's stream: PyTorch's CPU mt19937 is an implementation detail
 *   Inductor does not reproduce either.
 * - with error tracking (--check's reference): no draw.  Each element
 *   holds the middle of the interval every draw could give and, as its
 *   bound, the half-width plus the device's rounding of the drawn value,
 *   so a device value is accepted exactly when some draw gives it.  The
 *   result is marked drawn (E->draws), and --check compares an output that
 *   depends on a draw with this interval, not with PyTorch's draw.
 *
 * Track 1 (the probabilistic scale) of a draw: the half-width, where the
 * middle is the draw's mean (uniform draws: rand, rrelu's slope), so sums
 * of independent draws obey Hoeffding's bound as rounding errors do;
 * infinite where it is not (bernoulli: the mean is p, not 1/2), which
 * leaves the worst case. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A uniform draw in [0, 1), exact in fp32: the top 24 bits of the next word. */
static double draw_uniform(uint64_t *state) { return (double)(rt_random_word(state) >> 40) * 0x1p-24; }

/* A standard normal draw (Box-Muller): u1 in (0, 1] from 53 bits, u2 in [0, 1). */
static double draw_normal(uint64_t *state)
{
    double u1 = (double)((rt_random_word(state) >> 11) + 1) * 0x1p-53, u2 = draw_uniform(state);
    return sqrt(-2 * log(u1)) * cos(2 * 3.14159265358979323846 * u2);
}

/* The generator's state for the current node's result. */
static uint64_t node_state(ex *E) { return rt_random_key(E->seed, E->g->values[E->node->out].name); }

/* Element k of o as the interval [lo, hi] of every draw: its middle, and
 * its half-width (track 0; track 1 the half-width when the middle is the
 * mean, else infinite) plus prop[w] (the argument's bound carried through)
 * and, unless the value is exact (bernoulli's 0 and 1, rrelu's x > 0
 * passed through), the rounding when the device stores it. */
static void set_interval(tens *o, int64_t k, double lo, double hi, const double prop[2], int mean, int exact)
{
    double mid = lo == hi ? lo : lo / 2 + hi / 2, h = hi - mid;
    o->f[k] = (float)mid;
    for (int w = 0; w < 2; w++) {
        double half = (w && !mean && h > 0 ? INFINITY : h) + prop[w];
        o->eb[w][k] = (float)(exact ? half : ref_eb_store(fmax(fabs(lo), fabs(hi)), half, w));
    }
}

enum { R_NORMAL = 1, R_LIKE = 2 };

/* rand(size, dtype=...), rand_like(self, dtype=...): uniform in [0, 1); randn, randn_like: standard
 * normal (no finite interval: an infinite bound, which --check reports as
 * vacuous, on a draw as the value: the interval has no middle). */
static int op_rand(ex *E, int how)
{
    int64_t sz[MAXR];
    int cnt, dt, normal = how & R_NORMAL;
    const tens *like = how & R_LIKE ? ref_arg_tensor(E, 0, "self") : NULL;
    if ((how & R_LIKE && !like) || (!like && ref_arg_ints(E, 0, "size", sz, &cnt, MAXR)) ||
        ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    if (like) {
        cnt = like->rank;
        memcpy(sz, like->shape, sizeof sz);
        dt = dt < 0 ? (int)like->dtype : dt;
    }
    if (cnt < 0)
        return ref_fail(E, "missing argument size");
    if (dt >= 0 && kind_of((gr_dtype)dt) != K_F)
        return ref_fail(E, "draws floats only, not %s", gr_dtype_names[dt]);
    tens *o = ref_new_result(E, K_F, cnt, sz);
    if (!o)
        return -1;
    E->draws = 1;
    uint64_t st = node_state(E);
    static const double none[2] = {0, 0};
    for (int64_t k = 0; k < o->n; k++) {
        if (!o->eb[0])
            o->f[k] = (float)(normal ? draw_normal(&st) : draw_uniform(&st));
        else if (normal) { /* any value, as a draw: a middle of 0s would make a projection singular */
            o->f[k] = (float)draw_normal(&st);
            o->eb[0][k] = o->eb[1][k] = INFINITY;
        } else
            set_interval(o, k, 0, 1, none, 1, 0);
    }
    return 0;
}

/* bernoulli(self) (p = self's elements), bernoulli.p(self, p): 1 with
 * probability p, else 0.  Exact where p is exactly 0 or 1 on the device
 * too (no bound on p, or p an input); {0, 1} elsewhere. */
static int op_bernoulli(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    if (!x)
        return -1;
    const gr_arg *pa = ref_arg(E, 1, "p");
    double pnum = 0.5; /* bernoulli.p's default */
    int scalar = ref_present(pa) ? pa->kind != GR_ARG_VALUE : !strcmp(ref_overload(E->node), "p");
    const tens *pt = ref_present(pa) && !scalar ? ref_tensor_of(E, pa, "p") : x;
    if (!pt || (scalar && ref_arg_num(E, 1, "p", 0.5, &pnum)))
        return -1;
    if (kind_of(x->dtype) != K_F || (!scalar && pt->n != x->n))
        return ref_fail(E, "takes a float tensor and p of its shape or a number");
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    E->draws = 1;
    /* an input's 0 and 1 reach the device exactly (DL16 holds them), whatever its bound says */
    const gr_arg *pv = scalar ? NULL : ref_present(pa) ? pa : ref_arg(E, 0, "self");
    int leaf = pv && E->g->values[pv->value].kind != GR_VAL_NODE;
    uint64_t st = node_state(E);
    for (int64_t k = 0; k < o->n; k++) {
        double p = scalar ? pnum : ldd(pt, k), e = scalar ? 0 : ldb(pt, 0, k);
        if (!(p >= 0 && p <= 1))
            return ref_fail(E, "p = %g is not in [0, 1]", p);
        static const double none[2] = {0, 0};
        int exact = (e == 0 || leaf) && (p == 0 || p == 1);
        if (!o->eb[0])
            o->f[k] = draw_uniform(&st) < p;
        else
            set_interval(o, k, exact ? p : 0, exact ? p : 1, none, 0, 1);
    }
    return 0;
}

/* Does argument a read value v? */
static int reads(const gr_arg *a, int v)
{
    if (a->kind == GR_ARG_VALUE && a->value == v)
        return 1;
    for (int i = 0; i < a->nitems; i++)
        if (reads(&a->items[i], v))
            return 1;
    return 0;
}

/* The line of a node after the current one that reads value v, or 0. */
static int read_later(ex *E, int v)
{
    for (const gr_node *n = E->node + 1; n < E->g->nodes + E->g->nnodes; n++)
        for (int i = 0; i < n->nargs; i++)
            if (reads(&n->args[i], v))
                return n->line;
    return 0;
}

/* rrelu_with_noise(self, noise, lower=1/8, upper=1/3, training=False):
 * x where x > 0; x r where x <= 0, r drawn uniform in [lower, upper] when
 * training, (lower + upper) / 2 otherwise.  Training also writes noise
 * (self's shape): 1 where x > 0, r elsewhere, as PyTorch does; seen as an
 * output, but an op that reads it later is refused: the device's schedule
 * follows values, not writes in place, and may run that op first. */
static int op_rrelu_noise(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self"), *nz = x ? ref_arg_tensor(E, 1, "noise") : NULL;
    double lo, up;
    int train;
    if (!nz || ref_arg_num(E, 2, "lower", 0.125, &lo) || ref_arg_num(E, 3, "upper", 1.0 / 3, &up) ||
        ref_arg_bool(E, 4, "training", 0, &train))
        return -1;
    if (kind_of(x->dtype) != K_F || kind_of(nz->dtype) != K_F || nz->n != x->n || !(lo <= up))
        return ref_fail(E, "takes float self and noise of one shape, and lower <= upper");
    tens *o = ref_new_result(E, K_F, x->rank, x->shape);
    if (!o)
        return -1;
    E->draws = train;
    if (!train)
        lo = up = lo / 2 + up / 2;
    else
        E->wrote = ref_arg(E, 1, "noise")->value;
    int later = train ? read_later(E, E->wrote) : 0;
    if (later)
        return ref_fail(E, "line %d reads noise %%%s after this op writes it in place, an order the device's schedule "
                        "does not keep", later, E->g->values[E->wrote].name);
    uint64_t st = node_state(E);
    tens *noise = (tens *)nz; /* written in place, as PyTorch's schema says (Tensor(a!) noise) */
    double lip = fmax(1, fmax(fabs(lo), fabs(up))); /* how far the result moves per unit of x */
    static const double none[2] = {0, 0};
    for (int64_t k = 0; k < o->n; k++) {
        float v = ldf(x, k), r = !o->eb[0] && v <= 0 ? (float)(lo + (up - lo) * draw_uniform(&st)) : 1;
        if (!o->eb[0]) { /* in fp32, as PyTorch */
            o->f[k] = v > 0 ? v : v * r;
            if (train)
                noise->f[k] = v > 0 ? 1 : r;
            continue;
        }
        double prop[2] = {lip * ldb(x, 0, k), lip * ldb(x, 1, k)};
        set_interval(o, k, v > 0 ? v : v * up, v > 0 ? v : v * lo, prop, 1, v > 0);
        if (!train)
            continue;
        int pos = v - ldb(x, 0, k) > 0, neg = v + ldb(x, 0, k) <= 0; /* x's error may move it across 0 */
        set_interval(noise, k, pos ? 1 : neg ? lo : fmin(lo, 1), pos ? 1 : neg ? up : fmax(up, 1), none, pos || neg,
                     pos);
    }
    return 0;
}

/* Element k of integer (or integer-valued float) o as any integer in [lo, hi]. */
static void set_int_interval(tens *o, int64_t k, int64_t lo, int64_t hi)
{
    int64_t mid = lo + (hi - lo) / 2;
    if (o->f)
        o->f[k] = (float)mid;
    else
        o->i[k] = mid;
    for (int w = 0; w < 2; w++) /* track 1: the middle is not the mean of an even count */
        o->eb[w][k] = (float)(lo == hi ? 0 : w ? INFINITY : (double)(hi - mid));
}

/* randint_like(self, high), randint_like.low_dtype(self, low, high): integers uniform in [low, high), of
 * self's dtype (or dtype=); exact in DL16 up to 2^11. */
static int op_randint_like(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int two = ref_present(ref_arg(E, 2, "high"));
    int64_t lo = 0, hi;
    int dt;
    if (!x || (two && ref_arg_req_int(E, 1, "low", &lo)) || ref_arg_req_int(E, two ? 2 : 1, "high", &hi) ||
        ref_arg_dtype(E, -1, "dtype", &dt))
        return -1;
    kind k = kind_of(dt >= 0 ? (gr_dtype)dt : x->dtype);
    if (!(lo < hi) || k == K_B || (k == K_F && (lo < -2048 || hi > 2049)))
        return ref_fail(E, "needs low < high%s", k == K_F ? ", a float result within DL16's exact +-2048" : "");
    tens *o = ref_new_result(E, k, x->rank, x->shape);
    if (!o)
        return -1;
    E->draws = 1;
    uint64_t st = node_state(E);
    for (int64_t j = 0; j < o->n; j++) {
        int64_t v = lo + (int64_t)(draw_uniform(&st) * (double)(hi - lo));
        if (o->eb[0])
            set_int_interval(o, j, lo, hi - 1);
        else if (o->f)
            o->f[j] = (float)v;
        else
            o->i[j] = v;
    }
    return 0;
}

/* normal(mean, std): mean + std z, z standard normal, mean and std tensors
 * or numbers broadcast together (normal.float_float(mean, std, size) too).
 * No finite interval where std > 0 (an infinite bound on a draw, as randn);
 * exactly mean where std is exactly 0. */
static int op_normal(ex *E, int unused)
{
    (void)unused;
    scalar_box b0, b1;
    const tens *m, *s;
    iter it;
    tens *o;
    if (!strcmp(ref_overload(E->node), "float_float")) {
        int64_t sz[MAXR];
        int cnt;
        double mv, sv;
        if (ref_arg_num(E, 0, "mean", 0, &mv) || ref_arg_num(E, 1, "std", 1, &sv) ||
            ref_arg_ints(E, 2, "size", sz, &cnt, MAXR) || !(o = ref_new_result(E, K_F, cnt < 0 ? 0 : cnt, sz)))
            return -1;
        E->draws = 1;
        uint64_t st = node_state(E);
        for (int64_t k = 0; k < o->n; k++) {
            o->f[k] = (float)(mv + sv * draw_normal(&st));
            for (int w = 0; o->eb[0] && w < 2; w++)
                o->eb[w][k] = sv == 0 ? (float)ref_eb_const(mv) : INFINITY;
        }
        return 0;
    }
    if (!(o = ref_binary_float(E, "mean", "std", &b0, &b1, &m, &s, &it)))
        return -1;
    E->draws = 1;
    uint64_t st = node_state(E);
    for (int64_t k = 0; k < o->n; k++, iter_next(&it)) {
        double mv = ldd(m, it.off[0]), sv = ldd(s, it.off[1]);
        if (!(sv >= 0))
            return ref_fail(E, "std = %g is not >= 0", sv);
        o->f[k] = (float)(mv + sv * draw_normal(&st));
        for (int w = 0; o->eb[0] && w < 2; w++) /* exact std 0: the mean, as the device holds it */
            o->eb[w][k] = sv == 0 && ldb(s, w, it.off[1]) == 0 ? (float)ldb(m, w, it.off[0]) : INFINITY;
        if (o->eb[0] && o->eb[0][k] < INFINITY)
            o->f[k] = (float)mv;
    }
    return 0;
}

/* One draw of multinomial: an index of row p (n weights) by weight, the
 * taken ones (without replacement) zeroed in p. */
static int64_t draw_index(double *p, int64_t n, int replace, uint64_t *st)
{
    double total = 0, acc = 0;
    for (int64_t j = 0; j < n; j++)
        total += p[j];
    double u = draw_uniform(st) * total;
    int64_t pick = -1;
    for (int64_t j = 0; j < n && pick < 0; j++)
        if (p[j] > 0 && (acc += p[j]) > u)
            pick = j;
    for (int64_t j = n; pick < 0 && j-- > 0;) /* u at the top of the last bin, by rounding */
        pick = p[j] > 0 ? j : -1;
    if (!replace)
        p[pick] = 0;
    return pick;
}

/* multinomial(self, num_samples, replacement=False): per row of weights
 * (rank 1 or 2), num_samples indices drawn by weight.  Interval: any index
 * whose weight the device may hold above 0. */
static int op_multinomial(ex *E, int unused)
{
    (void)unused;
    const tens *x = ref_arg_tensor(E, 0, "self");
    int64_t ns;
    int rep;
    if (!x || ref_arg_req_int(E, 1, "num_samples", &ns) || ref_arg_bool(E, 2, "replacement", 0, &rep))
        return -1;
    int64_t n = x->rank ? x->shape[x->rank - 1] : 0, rows = n ? x->n / n : 0, shape[2] = {rows, ns};
    if (kind_of(x->dtype) != K_F || x->rank < 1 || x->rank > 2 || ns < 0 || (!rep && ns > n))
        return ref_fail(E, "takes a float tensor of rank 1 or 2 and at most as many samples as weights "
                           "without replacement");
    tens *o = ref_new_result(E, K_I, x->rank, x->rank == 1 ? shape + 1 : shape);
    double *p = o ? malloc((size_t)(n + 1) * sizeof *p) : NULL;
    if (!p)
        return o ? ref_fail(E, "out of host memory") : -1;
    E->draws = 1;
    uint64_t st = node_state(E);
    int rc = 0;
    for (int64_t r = 0; r < rows && !rc; r++) {
        int64_t lo = n, hi = -1, pos = 0;
        for (int64_t j = 0; j < n; j++) {
            p[j] = ldd(x, r * n + j);
            if (!(p[j] >= 0) || isinf(p[j]))
                rc = ref_fail(E, "weight %g is not finite and >= 0", p[j]);
            if (p[j] + ldb(x, 0, r * n + j) > 0)
                lo = j < lo ? j : lo, hi = j, pos += p[j] > 0;
        }
        if (!rc && ns && (rep ? !pos : pos < ns))
            rc = ref_fail(E, "row %lld has too few positive weights for %lld samples", (long long)r, (long long)ns);
        for (int64_t j = 0; j < ns && !rc; j++) {
            if (o->eb[0])
                set_int_interval(o, r * ns + j, lo, hi);
            else
                o->i[r * ns + j] = draw_index(p, n, rep, &st);
        }
    }
    free(p);
    return rc;
}

static const ref_op ops[] = {
    {"rand", op_rand, 0},
    {"randn", op_rand, R_NORMAL},
    {"rand_like", op_rand, R_LIKE},
    {"randn_like", op_rand, R_NORMAL | R_LIKE},
    {"randint_like", op_randint_like, 0},
    {"normal", op_normal, 0},
    {"multinomial", op_multinomial, 0},
    {"bernoulli", op_bernoulli, 0},
    {"rrelu_with_noise", op_rrelu_noise, 0},
};
const ref_ops ref_random_ops = REF_OPS(ops);
