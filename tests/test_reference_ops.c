/* test_reference_ops.c: the reference executor's ordering, indexing, scattering, norm and linear-algebra
 * ops (runtime/ref_sort.c, ref_index.c, ref_vecnorm.c, ref_linalg.c; the fallback-only transposed and
 * 3-D convolution, unpooling, interpolation, 3-D pooling, margin losses, distances, mode, segments,
 * histogram, embedding bags) against values worked out by hand or identities (Q R = A, A inv(A) = I),
 * and their error bounds against the rules their files state. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"
#include "testutil.h"

static char err[2048];

typedef struct {
    gr_graph *g;
    rt_ref *r;
} run_t;

/* Parse text, set its inputs in order from in[], run (error bounds on when track). */
static int run_text(run_t *t, const char *text, const float *const *in, int track)
{
    memset(t, 0, sizeof *t);
    err[0] = 0;
    if (!(t->g = gr_graph_parse(text, "t.txt", err, sizeof err)) || !(t->r = rt_ref_new(t->g, err, sizeof err)))
        return -1;
    rt_ref_track_errors(t->r, track);
    for (int v = 0; v < t->g->nvalues; v++)
        rt_ref_keep(t->r, v);
    for (int i = 0; i < t->g->ninputs; i++) {
        const gr_value *v = &t->g->values[t->g->inputs[i]];
        if (rt_ref_set(t->r, v->name, in[i], gr_ttype_numel(&v->type), err, sizeof err))
            return -1;
    }
    return rt_ref_run(t->r, err, sizeof err);
}

static void done(run_t *t)
{
    rt_ref_free(t->r);
    gr_graph_free(t->g);
}

#define RUN_T(t, track, text, ...)                                                                                     \
    do {                                                                                                               \
        const float *ins_[] = {__VA_ARGS__};                                                                           \
        int rc_ = run_text(t, text, ins_, track);                                                                      \
        if (rc_)                                                                                                       \
            fprintf(stderr, "\n    %s\n", err);                                                                        \
        CU_ASSERT_EQUAL_FATAL(rc_, 0);                                                                                 \
    } while (0)
#define RUN(t, text, ...) RUN_T(t, 0, text, __VA_ARGS__)

/* Value name equals want[] (n elements) to fp32 rounding; NaNs match NaNs, infinities themselves. */
static void expect_value(run_t *t, const char *name, const float *want, int64_t n)
{
    int v = gr_graph_find(t->g, name);
    CU_ASSERT_FATAL(v >= 0);
    gr_ttype ty;
    const float *got = rt_ref_value(t->r, v, &ty);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL_FATAL(gr_ttype_numel(&ty), n);
    for (int64_t i = 0; i < n; i++) {
        int ok = isnan(want[i])   ? isnan(got[i])
                 : isinf(want[i]) ? got[i] == want[i]
                                  : fabs((double)got[i] - want[i]) <= 2e-7 * fmax(1, fabs(want[i]));
        if (!ok)
            fprintf(stderr, "\n    %%%s[%lld] = %.9g, want %.9g\n", name, (long long)i, got[i], want[i]);
        CU_ASSERT(ok);
    }
}

#define EXPECT(t, name, ...)                                                                                           \
    do {                                                                                                               \
        const float w_[] = {__VA_ARGS__};                                                                              \
        expect_value(t, name, w_, (int64_t)(sizeof w_ / sizeof w_[0]));                                                \
    } while (0)

/* Track w of value name equals want[] to 1e-5 relative (bounds are kept in fp32). */
static void expect_bound(run_t *t, const char *name, int w, const double *want, int n)
{
    const float *got = rt_ref_error(t->r, gr_graph_find(t->g, name), w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    for (int i = 0; i < n; i++) {
        int ok = isinf(want[i]) ? isinf(got[i]) : fabs(got[i] - want[i]) <= 1e-5 * fabs(want[i]) + 1e-30;
        if (!ok)
            fprintf(stderr, "\n    %%%s track %d [%d] = %.9g, want %.9g\n", name, w, i, got[i], want[i]);
        CU_ASSERT(ok);
    }
}

/* The failure message of a graph that must not run. */
static void expect_fail(const char *text, const float *const *in, const char *msg)
{
    run_t t;
    CU_ASSERT_EQUAL(run_text(&t, text, in, 0), -1);
    if (strcmp(err, msg) != 0)
        fprintf(stderr, "\n    expected '%s'\n    got      '%s'\n", msg, err);
    CU_ASSERT_STRING_EQUAL(err, msg);
    done(&t);
}

/* ---- Ordering ---- */

static void test_sort_is_stable_puts_nan_last_and_runs_along_any_dim(void)
{
    const float x[] = {3, 1, 2, 1, 0, -1, 5, 0}, n[] = {2, NAN, -1, 2};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 4]\ninput %n: f32[4]\n"
        "%s: (f32[2, 4], i64[2, 4]) = aten.sort.default(%x)\n"
        "%sv: f32[2, 4] = getitem(%s, 0)\n%si: i64[2, 4] = getitem(%s, 1)\n"
        "%d: (f32[2, 4], i64[2, 4]) = aten.sort.stable(%x, stable=True, dim=0, descending=True)\n"
        "%dv: f32[2, 4] = getitem(%d, 0)\n%di: i64[2, 4] = getitem(%d, 1)\n"
        "%m: (f32[4], i64[4]) = aten.sort.default(%n, 0, True)\n"
        "%mv: f32[4] = getitem(%m, 0)\n%mi: i64[4] = getitem(%m, 1)\n"
        "%a: (f32[4], i64[4]) = aten.sort.default(%n)\n"
        "%av: f32[4] = getitem(%a, 0)\n%ai: i64[4] = getitem(%a, 1)\n"
        "output %sv, %si, %dv, %di, %mv, %mi, %av, %ai\n",
        x, n);
    EXPECT(&t, "sv", 1, 1, 2, 3, -1, 0, 0, 5);
    EXPECT(&t, "si", 1, 3, 2, 0, 1, 0, 3, 2); /* equal values keep their order */
    EXPECT(&t, "dv", 3, 1, 5, 1, 0, -1, 2, 0);
    EXPECT(&t, "di", 0, 0, 1, 0, 1, 1, 0, 1);
    EXPECT(&t, "mv", NAN, 2, 2, -1); /* descending: a NaN first */
    EXPECT(&t, "mi", 1, 0, 3, 2);
    EXPECT(&t, "av", -1, 2, 2, NAN);
    EXPECT(&t, "ai", 2, 0, 3, 1);
    done(&t);
}

static void test_topk_kthvalue_argmax_and_max_dim_pick_as_pytorch(void)
{
    const float x[] = {3, 7, 7, -2, 0, 4}, n[] = {1, NAN, 5, NAN};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %n: f32[4]\n"
        "%t: (f32[2, 2], i64[2, 2]) = aten.topk.default(%x, 2)\n"
        "%tv: f32[2, 2] = getitem(%t, 0)\n%ti: i64[2, 2] = getitem(%t, 1)\n"
        "%b: (f32[1, 3], i64[1, 3]) = aten.topk.default(%x, 1, 0, False)\n"
        "%bv: f32[1, 3] = getitem(%b, 0)\n%bi: i64[1, 3] = getitem(%b, 1)\n"
        "%k: (f32[2, 1], i64[2, 1]) = aten.kthvalue.default(%x, 2, -1, True)\n"
        "%kv: f32[2, 1] = getitem(%k, 0)\n%ki: i64[2, 1] = getitem(%k, 1)\n"
        "%am: i64[2] = aten.argmax.default(%x, 1)\n"
        "%an: i64[3] = aten.argmin.default(%x, 0)\n"
        "%af: i64[] = aten.argmax.default(%x)\n"
        "%ak: i64[1, 3] = aten.argmax.default(%x, 0, True)\n"
        "%nn: i64[] = aten.argmin.default(%n)\n"
        "%md: (f32[2], i64[2]) = aten.max.dim(%x, -1)\n"
        "%mdv: f32[2] = getitem(%md, 0)\n%mdi: i64[2] = getitem(%md, 1)\n"
        "%nd: (f32[1, 3], i64[1, 3]) = aten.min.dim(%x, 0, True)\n"
        "%ndv: f32[1, 3] = getitem(%nd, 0)\n%ndi: i64[1, 3] = getitem(%nd, 1)\n"
        "%mx: f32[] = aten.max.default(%x)\n%mn: f32[] = aten.min.default(%x)\n"
        "%nm: f32[] = aten.max.default(%n)\n"
        "output %tv, %ti, %bv, %bi, %kv, %ki, %am, %an, %af, %ak, %nn, %mdv, %mdi, %ndv, %ndi, %mx, %mn, %nm\n",
        x, n);
    EXPECT(&t, "tv", 7, 7, 4, 0);
    EXPECT(&t, "ti", 1, 2, 2, 1);
    EXPECT(&t, "bv", -2, 0, 4);
    EXPECT(&t, "bi", 1, 1, 1);
    EXPECT(&t, "kv", 7, 0);
    EXPECT(&t, "ki", 1, 1);
    EXPECT(&t, "am", 1, 2); /* the first of equal maxima */
    EXPECT(&t, "an", 1, 1, 1);
    EXPECT(&t, "af", 1);
    EXPECT(&t, "ak", 0, 0, 0);
    EXPECT(&t, "nn", 1); /* the first NaN */
    EXPECT(&t, "mdv", 7, 4);
    EXPECT(&t, "mdi", 1, 2);
    EXPECT(&t, "ndv", -2, 0, 4);
    EXPECT(&t, "ndi", 1, 1, 1);
    EXPECT(&t, "mx", 7);
    EXPECT(&t, "mn", -2);
    EXPECT(&t, "nm", NAN);
    done(&t);
}

static void test_cumprod_runs_along_any_dim_and_integers_stay_exact(void)
{
    const float x[] = {1, 2, 3, -1, 0.5f, 4}, i[] = {100000, 100000, 3};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %i: i64[3]\n"
        "%r: f32[2, 3] = aten.cumprod.default(%x, 1)\n"
        "%c: f32[2, 3] = aten.cumprod.default(%x, 0)\n"
        "%p: i64[3] = aten.cumprod.default(%i, 0)\n"
        "output %r, %c, %p\n",
        x, i);
    EXPECT(&t, "r", 1, 2, 6, -1, -0.5, -2);
    EXPECT(&t, "c", 1, 2, 3, -1, 1, 12);
    EXPECT(&t, "p", 100000, 1e10f, 3e10f);
    done(&t);
}

/* Bounds of sort on x = (4, 1, 1.0025) (inputs: u |x|): the two close
 * values' intervals overlap, so their places may swap: values' bounds
 * reach the other's interval end, indices jump by 1; 4 is alone. */
static void test_sort_bounds_cover_a_swap_of_close_values(void)
{
    const float x[] = {4, 1, 1.0025f};
    run_t t;
    RUN_T(&t, 1,
          "input %x: f32[3]\n"
          "%s: (f32[3], i64[3]) = aten.sort.default(%x)\n"
          "%v: f32[3] = getitem(%s, 0)\n%i: i64[3] = getitem(%s, 1)\n"
          "%am: i64[] = aten.argmax.default(%x)\n"
          "output %v, %i, %am\n",
          x);
    for (int w = 0; w < 2; w++) {
        double L = w ? RT_REF_LAMBDA : 1, a = 1, b = (double)1.0025f, ea = 0x1p-10 * a, eb = 0x1p-10 * b;
        /* rank 0: lo = min(a - L ea, b - L eb) = a - L ea, hi = min(a + L ea, b + L eb) */
        double lo0 = fmin(a - L * ea, b - L * eb), hi0 = fmin(a + L * ea, b + L * eb);
        double lo1 = fmax(a - L * ea, b - L * eb), hi1 = fmax(a + L * ea, b + L * eb);
        int swap = a + L * ea >= b - L * eb;
        double v[3] = {fmax(hi0 - a, a - lo0) / L, fmax(hi1 - b, b - lo1) / L, 0x1p-10 * 4};
        double j = swap ? 1 * (1 + 0x1p-20) / L : 0, ix[3] = {j, j, 0};
        expect_bound(&t, "v", w, v, 3);
        expect_bound(&t, "i", w, ix, 3);
        expect_bound(&t, "am", w, (double[]){0}, 1);
    }
    /* 0.0025 apart, u |x| ~ 0.001 each: a swap in track 1 (6 u |x| reaches), not in the worst case */
    CU_ASSERT_EQUAL(rt_ref_error(t.r, gr_graph_find(t.g, "i"), 0)[0], 0);
    CU_ASSERT(rt_ref_error(t.r, gr_graph_find(t.g, "i"), 1)[0] > 0);
    done(&t);
}

/* Exact ties (zeros, whose bounds are 0): PyTorch's topk and kthvalue
 * leave the order of equal elements unspecified (its topk of 33 integers
 * cast to float gave a 0 at index 17 where the stable order has 8), so
 * their indices' bounds reach the farthest equal element; sort (stable)
 * and argmax (the first) stay exact. */
static void test_topk_and_kthvalue_indices_cover_either_order_of_ties(void)
{
    const float x[] = {0, 2, 0, -1, 0};
    run_t t;
    RUN_T(&t, 1,
          "input %x: f32[5]\n"
          "%t: (f32[2], i64[2]) = aten.topk.default(%x, 2)\n%ti: i64[2] = getitem(%t, 1)\n"
          "%k: (f32[], i64[]) = aten.kthvalue.default(%x, 3)\n%ki: i64[] = getitem(%k, 1)\n"
          "%s: (f32[5], i64[5]) = aten.sort.default(%x)\n%si: i64[5] = getitem(%s, 1)\n"
          "%am: i64[] = aten.argmax.default(%x)\n"
          "output %ti, %ki, %si, %am\n",
          x);
    EXPECT(&t, "ti", 1, 0);
    EXPECT(&t, "ki", 2);
    for (int w = 0; w < 2; w++) {
        double L = w ? RT_REF_LAMBDA : 1, j = (1 + 0x1p-20) / L;
        expect_bound(&t, "ti", w, (double[]){0, 4 * j}, 2); /* the 0 at 0 or 4 */
        expect_bound(&t, "ki", w, (double[]){2 * j}, 1);    /* at 2, or 0 or 4 */
        expect_bound(&t, "si", w, (double[]){0, 0, 0, 0, 0}, 5);
        expect_bound(&t, "am", w, (double[]){0}, 1);
    }
    done(&t);
}

/* ---- Views by index ---- */

static void test_flip_roll_diagonal_and_diag_move_elements(void)
{
    const float x[] = {0, 1, 2, 3, 4, 5}, v[] = {1, 2};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %v: f32[2]\n"
        "%f: f32[2, 3] = aten.flip.default(%x, [0, 1])\n"
        "%g: f32[2, 3] = aten.flip.default(%x, [-1])\n"
        "%r: f32[2, 3] = aten.roll.default(%x, [1])\n"
        "%q: f32[2, 3] = aten.roll.default(%x, [1, -1], [0, 1])\n"
        "%d: f32[2] = aten.diagonal.default(%x)\n"
        "%e: f32[2] = aten.diagonal.default(%x, 1)\n"
        "%h: f32[1] = aten.diagonal.default(%x, -1)\n"
        "%dg: f32[2] = aten.diag.default(%x)\n"
        "%m: f32[3, 3] = aten.diag.default(%v, 1)\n"
        "%n: f32[3, 3] = aten.diag.default(%v, -1)\n"
        "output %f, %g, %r, %q, %d, %e, %h, %dg, %m, %n\n",
        x, v);
    EXPECT(&t, "f", 5, 4, 3, 2, 1, 0);
    EXPECT(&t, "g", 2, 1, 0, 5, 4, 3);
    EXPECT(&t, "r", 5, 0, 1, 2, 3, 4);
    EXPECT(&t, "q", 4, 5, 3, 1, 2, 0);
    EXPECT(&t, "d", 0, 4);
    EXPECT(&t, "e", 1, 5);
    EXPECT(&t, "h", 3);
    EXPECT(&t, "dg", 0, 4);
    EXPECT(&t, "m", 0, 1, 0, 0, 0, 2, 0, 0, 0);
    EXPECT(&t, "n", 0, 0, 0, 1, 0, 0, 0, 2, 0);
    done(&t);
}

static void test_gather_take_index_select_and_index_pick_by_index(void)
{
    const float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, g[] = {2, 0, 1, 1}, k[] = {-1, 0, 5}, s[] = {2, 0};
    run_t t;
    RUN(&t,
        "input %x: f32[3, 4]\ninput %g: i64[2, 2]\ninput %k: i64[3]\ninput %s: i64[2]\n"
        "%ga: f32[2, 2] = aten.gather.default(%x, 1, %g)\n"
        "%gb: f32[2, 2] = aten.gather.default(%x, 0, %g)\n"
        "%tk: f32[3] = aten.take.default(%x, %k)\n"
        "%is: f32[3, 2] = aten.index_select.default(%x, 1, %s)\n"
        "%i1: f32[2, 4] = aten.index.Tensor(%x, [%s])\n"
        "%i2: f32[2] = aten.index.Tensor(%x, [%s, %s])\n"
        "%i3: f32[3, 2] = aten.index.Tensor(%x, [None, %s])\n"
        "%i4: f32[2, 2, 4] = aten.index.Tensor(%x, [%g])\n"
        "output %ga, %gb, %tk, %is, %i1, %i2, %i3, %i4\n",
        x, g, k, s);
    EXPECT(&t, "ga", 2, 0, 5, 5);  /* x[0][2], x[0][0], x[1][1], x[1][1] */
    EXPECT(&t, "gb", 8, 1, 4, 5);  /* x[2][0], x[0][1], x[1][0], x[1][1] */
    EXPECT(&t, "tk", 11, 0, 5);
    EXPECT(&t, "is", 2, 0, 6, 4, 10, 8);
    EXPECT(&t, "i1", 8, 9, 10, 11, 0, 1, 2, 3);
    EXPECT(&t, "i2", 10, 0);
    EXPECT(&t, "i3", 2, 0, 6, 4, 10, 8);
    EXPECT(&t, "i4", 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7); /* rows 2, 0, 1, 1 */
    done(&t);
}

/* Advanced indexing with indexed dims apart puts the broadcast dims first. */
static void test_index_with_dims_apart_puts_the_index_dims_first(void)
{
    const float x[24] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
    const float a[] = {1, 0}, c[] = {3, 1};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3, 4]\ninput %a: i64[2]\ninput %c: i64[2]\n"
        "%y: f32[2, 3] = aten.index.Tensor(%x, [%a, None, %c])\n"
        "output %y\n",
        x, a, c);
    /* y[k][j] = x[a[k]][j][c[k]]: x[1][j][3] = 15, 19, 23; x[0][j][1] = 1, 5, 9 */
    EXPECT(&t, "y", 15, 19, 23, 1, 5, 9);
    done(&t);
}

/* ---- Scatters ---- */

static void test_scatters_write_and_reduce_at_their_places(void)
{
    const float x[] = {1, 1, 1, 1, 1, 1}, i[] = {0, 2, 0, 1, 1, 1}, s[] = {5, 6, 7, 8, 9, 10};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %i: i64[2, 3]\ninput %s: f32[2, 3]\ninput %j: i64[1, 2]\n"
        "%sc: f32[2, 3] = aten.scatter.src(%x, 1, %j, %s)\n"
        "%sv: f32[2, 3] = aten.scatter.value(%x, 1, %j, -3.0)\n"
        "%sa: f32[2, 3] = aten.scatter_add.default(%x, 1, %i, %s)\n"
        "%sm: f32[2, 3] = aten.scatter.reduce(%x, 1, %i, %s, reduce=\"multiply\")\n"
        "%rx: f32[2, 3] = aten.scatter_reduce.two(%x, 1, %i, %s, \"amax\", include_self=False)\n"
        "%rm: f32[2, 3] = aten.scatter_reduce.two(%x, 1, %i, %s, \"mean\")\n"
        "%rn: f32[2, 3] = aten.scatter_reduce.two(%x, 1, %i, %s, \"mean\", include_self=False)\n"
        "output %sc, %sv, %sa, %sm, %rx, %rm, %rn\n",
        x, i, s, (const float[]){2, 0});
    EXPECT(&t, "sc", 6, 1, 5, 1, 1, 1);   /* row 0: [0][2] = s[0][0], [0][0] = s[0][1] */
    EXPECT(&t, "sv", -3, 1, -3, 1, 1, 1);
    EXPECT(&t, "sa", 13, 1, 7, 1, 28, 1); /* row 0: 1 + 5 + 7 at 0, 1 + 6 at 2; row 1: 1 + 8 + 9 + 10 at 1 */
    EXPECT(&t, "sm", 35, 1, 6, 1, 720, 1);
    EXPECT(&t, "rx", 7, 1, 6, 1, 10, 1);  /* untouched places keep self */
    EXPECT(&t, "rm", 13.0f / 3, 1, 3.5, 1, 7, 1);
    EXPECT(&t, "rn", 6, 1, 6, 1, 9, 1);
    done(&t);
}

static void test_index_put_index_add_and_slice_scatters_write_their_places(void)
{
    const float x[] = {0, 0, 0, 0, 0, 0}, r[] = {1, 1, 0}, v[] = {1, 2, 3}, c[] = {0, 2}, w[] = {4, 5, 6, 7};
    run_t t;
    RUN(&t,
        "input %x: f32[3, 2]\ninput %r: i64[3]\ninput %v: f32[3]\ninput %c: i64[2]\ninput %w: f32[2, 2]\n"
        "input %u: f32[2]\ninput %d: i64[2]\ninput %e: i64[1]\n"
        "%p: f32[3, 2] = aten.index_put.default(%x, [%r, %r], %v, True)\n"
        "%q: f32[3, 2] = aten.index_put.default(%x, [%c], %w)\n"
        "%b: f32[3, 2] = aten.index_put.default(%x, [%c], %u)\n"
        "%a: f32[3, 2] = aten.index_add.default(%x, 0, %d, %w)\n"
        "%cp: f32[3, 2] = aten.index_copy.default(%x, 0, %c, %w)\n"
        "%fl: f32[3, 2] = aten.index_fill.int_Scalar(%x, 1, %e, 7.5)\n"
        "%ss: f32[3, 2] = aten.slice_scatter.default(%x, %w, 0, 0, 3, 2)\n"
        "%se: f32[3, 2] = aten.select_scatter.default(%x, %v, 1, -1)\n"
        "output %p, %q, %b, %a, %cp, %fl, %ss, %se\n",
        x, r, v, c, w, (const float[]){8, 9}, (const float[]){1, 1}, (const float[]){1});
    EXPECT(&t, "p", 3, 0, 0, 3, 0, 0); /* (1, 1) gets 1 + 2, (0, 0) gets 3 */
    EXPECT(&t, "q", 4, 5, 0, 0, 6, 7);
    EXPECT(&t, "b", 8, 9, 0, 0, 8, 9); /* values broadcast over the indexed rows */
    EXPECT(&t, "a", 0, 0, 10, 12, 0, 0);
    EXPECT(&t, "cp", 4, 5, 0, 0, 6, 7);
    EXPECT(&t, "fl", 0, 7.5, 0, 7.5, 0, 7.5);
    EXPECT(&t, "ss", 4, 5, 0, 0, 6, 7);
    EXPECT(&t, "se", 0, 1, 0, 2, 0, 3);
    done(&t);
}

/* ---- Norms, products and other reductions ---- */

static void test_norms_products_and_counts_give_hand_worked_values(void)
{
    const float x[] = {3, -4, 0, 12}, y[] = {1, 1}, i[] = {2, 3, 4};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 2]\ninput %y: f32[2]\ninput %i: i64[3]\n"
        "%n2: f32[] = aten.linalg_vector_norm.default(%x)\n"
        "%n1: f32[2] = aten.linalg_vector_norm.default(%x, 1, [1])\n"
        "%ni: f32[2] = aten.linalg_vector_norm.default(%x, inf, [0])\n"
        "%nm: f32[] = aten.linalg_vector_norm.default(%x, -inf)\n"
        "%n0: f32[] = aten.linalg_vector_norm.default(%x, 0)\n"
        "%nh: f32[2] = aten.linalg_vector_norm.default(%x, 0.5, [1])\n"
        "%p3: f32[2, 1] = aten.norm.ScalarOpt_dim(%x, 3, [1], True)\n"
        "%di: f32[] = aten.dist.default(%x, %y)\n"
        "%cn: i64[] = aten.count_nonzero.default(%x)\n"
        "%cd: i64[2] = aten.count_nonzero.dim_IntList(%x, [0])\n"
        "%pa: f32[] = aten.prod.default(%x)\n"
        "%pd: f32[2] = aten.prod.dim_int(%x, 1)\n"
        "%pi: i64[] = aten.prod.default(%i)\n"
        "%tr: f32[] = aten.trace.default(%x)\n"
        "%sm: (f32[2], f32[2]) = aten.std_mean.correction(%x, [1], correction=1)\n"
        "%s0: f32[2] = getitem(%sm, 0)\n%s1: f32[2] = getitem(%sm, 1)\n"
        "output %n2, %n1, %ni, %nm, %n0, %nh, %p3, %di, %cn, %cd, %pa, %pd, %pi, %tr, %s0, %s1\n",
        x, y, i);
    EXPECT(&t, "n2", 13);
    EXPECT(&t, "n1", 7, 12);
    EXPECT(&t, "ni", 3, 12);
    EXPECT(&t, "nm", 0);
    EXPECT(&t, "n0", 3);
    EXPECT(&t, "nh", (float)(7 + 4 * sqrt(3)), 12); /* (sqrt 3 + sqrt 4)^2 */
    EXPECT(&t, "p3", (float)cbrt(91), 12);
    EXPECT(&t, "di", (float)sqrt(151)); /* x - y = (2, -5, -1, 11) */
    EXPECT(&t, "cn", 3);
    EXPECT(&t, "cd", 1, 2);
    EXPECT(&t, "pa", 0);
    EXPECT(&t, "pd", -12, 0);
    EXPECT(&t, "pi", 24);
    EXPECT(&t, "tr", 15);
    EXPECT(&t, "s0", (float)sqrt(24.5), (float)sqrt(72));
    EXPECT(&t, "s1", -0.5, 6);
    done(&t);
}

static void test_median_aminmax_and_running_extremes_pick_as_pytorch(void)
{
    const float x[] = {3, -4, 0, 12}, m[] = {5, 1, 4, 2}, n[] = {NAN, 3, 1, NAN, 2}, c[] = {1, 3, 3, 2, NAN, 5};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 2]\ninput %m: f32[4]\ninput %n: f32[5]\ninput %c: f32[6]\n"
        "%md: f32[] = aten.median.default(%m)\n"
        "%mn: f32[] = aten.median.default(%n)\n"
        "%nn: f32[] = aten.nanmedian.default(%n)\n"
        "%mr: (f32[2], i64[2]) = aten.median.dim(%x, 1)\n"
        "%mrv: f32[2] = getitem(%mr, 0)\n%mri: i64[2] = getitem(%mr, 1)\n"
        "%nd: (f32[], i64[]) = aten.nanmedian.dim(%n, 0)\n"
        "%ndv: f32[] = getitem(%nd, 0)\n%ndi: i64[] = getitem(%nd, 1)\n"
        "%ea: (f32[], f32[]) = aten.aminmax.default(%x)\n"
        "%ea0: f32[] = getitem(%ea, 0)\n%ea1: f32[] = getitem(%ea, 1)\n"
        "%ed: (f32[2], f32[2]) = aten.aminmax.default(%x, dim=0)\n"
        "%ed0: f32[2] = getitem(%ed, 0)\n%ed1: f32[2] = getitem(%ed, 1)\n"
        "%ek: (f32[1, 1], f32[1, 1]) = aten.aminmax.default(%x, keepdim=True)\n"
        "%ek1: f32[1, 1] = getitem(%ek, 1)\n"
        "%cx: (f32[6], i64[6]) = aten.cummax.default(%c, 0)\n"
        "%cxv: f32[6] = getitem(%cx, 0)\n%cxi: i64[6] = getitem(%cx, 1)\n"
        "%cm: (f32[6], i64[6]) = aten.cummin.default(%c, 0)\n"
        "%cmv: f32[6] = getitem(%cm, 0)\n%cmi: i64[6] = getitem(%cm, 1)\n"
        "output %md, %mn, %nn, %mrv, %mri, %ndv, %ndi, %ea0, %ea1, %ed0, %ed1, %ek1, %cxv, %cxi, %cmv, %cmi\n",
        x, m, n, c);
    EXPECT(&t, "md", 2); /* the lower median of 1 2 4 5 */
    EXPECT(&t, "mn", NAN);
    EXPECT(&t, "nn", 2);
    EXPECT(&t, "mrv", -4, 0);
    EXPECT(&t, "mri", 1, 0);
    EXPECT(&t, "ndv", 2);
    EXPECT(&t, "ndi", 4);
    EXPECT(&t, "ea0", -4);
    EXPECT(&t, "ea1", 12);
    EXPECT(&t, "ed0", 0, -4);
    EXPECT(&t, "ed1", 3, 12);
    EXPECT(&t, "ek1", 12);
    EXPECT(&t, "cxv", 1, 3, 3, 3, NAN, NAN);
    EXPECT(&t, "cxi", 0, 1, 2, 2, 4, 4); /* an equal value takes over; a NaN stays */
    EXPECT(&t, "cmv", 1, 1, 1, 1, NAN, NAN);
    EXPECT(&t, "cmi", 0, 0, 0, 0, 4, 4);
    done(&t);
}

static void test_bool_masks_index_and_put_their_true_places(void)
{
    const float x[] = {1, 2, 3, 4}, m[] = {1, 0, 0, 1}, r[] = {0, 1};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 2]\ninput %m: bool[2, 2]\ninput %r: bool[2]\n"
        "%g: f32[2] = aten.index.Tensor(%x, [%m])\n"
        "%h: f32[1, 2] = aten.index.Tensor(%x, [%r])\n"
        "%z: f32[] = aten.scalar_tensor.default(0.0)\n"
        "%p: f32[2, 2] = aten.index_put.default(%x, [%m], %z)\n"
        "output %g, %h, %p\n",
        x, m, r);
    EXPECT(&t, "g", 1, 4);
    EXPECT(&t, "h", 3, 4);
    EXPECT(&t, "p", 0, 2, 3, 0);
    done(&t);
}

#define EU 0x1p-10
#define ERHO (EU + 0x1p-21)

static double lam_w(int w) { return w ? RT_REF_LAMBDA : 1; }

/* A value v with propagated bound p, stored in DL16 (docs/validation.md, store). */
static double stored(double v, double p, int w)
{
    double r = ERHO * (fabs(v) + lam_w(w) * p);
    return w ? sqrt(p * p + r * r) : p + r;
}

/* The 2-norm of (3, -4): its elements' relative bound u moves it by 5 u,
 * plus an fp32 sum of 2 terms and the store; a gather by an index that
 * may flip is unbounded; scatter_add is a sum over self and the writes. */
static void test_bounds_of_norms_gathers_and_scatter_adds_follow_their_rules(void)
{
    const float x[] = {3, -4}, a[] = {1, 1.0025f}, z[] = {0, 0, 0}, s[] = {0.5f, 0.25f, 2}, i[] = {0, 0, 2};
    run_t t;
    RUN_T(&t, 1,
          "input %x: f32[2]\ninput %a: f32[1, 2]\ninput %z: f32[3]\ninput %s: f32[3]\ninput %i: i64[3]\n"
          "%n: f32[] = aten.linalg_vector_norm.default(%x)\n"
          "%am: i64[1, 1] = aten.argmax.default(%a, 1, True)\n"
          "%g: f32[1, 1] = aten.gather.default(%a, 1, %am)\n"
          "%sa: f32[3] = aten.scatter_add.default(%z, 0, %i, %s)\n"
          "output %n, %g, %sa\n",
          x, a, z, s, i);
    for (int w = 0; w < 2; w++) {
        expect_bound(&t, "n", w, (double[]){stored(5, 5 * EU + 2 * 0x1p-23 * 5, w)}, 1);
        double e0 = EU * 0.5, e1 = EU * 0.25, e2 = EU * 2;
        double p0 = w ? sqrt(e0 * e0 + e1 * e1) : e0 + e1, mag0 = 0.5 + e0 + 0.25 + e1;
        double sa[3] = {stored(0.75, p0 + 3 * 0x1p-23 * mag0, w), 0, stored(2, e2 + 2 * 0x1p-23 * (2 + e2), w)};
        expect_bound(&t, "sa", w, sa, 3);
    }
    /* 1 and 1.0025 may swap in track 1 only: the gathered value is then unbounded */
    expect_bound(&t, "g", 0, (double[]){EU * (double)1.0025f}, 1);
    expect_bound(&t, "g", 1, (double[]){INFINITY}, 1);
    done(&t);
}

/* ---- Linear algebra ---- */

/* The value of name as doubles (n of them) into out. */
static void read_value(run_t *t, const char *name, double *out, int n)
{
    gr_ttype ty;
    const float *v = rt_ref_value(t->r, gr_graph_find(t->g, name), &ty);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_EQUAL_FATAL(gr_ttype_numel(&ty), n);
    for (int i = 0; i < n; i++)
        out[i] = v[i];
}

/* |(X Y)_ij - Z_ij| <= tol for n x k times k x m. */
static void expect_product(const double *X, const double *Y, const double *Z, int n, int k, int m, double tol)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += X[i * k + l] * Y[l * m + j];
            if (fabs(s - Z[i * m + j]) > tol)
                fprintf(stderr, "\n    product [%d][%d] = %.9g, want %.9g\n", i, j, s, Z[i * m + j]);
            CU_ASSERT(fabs(s - Z[i * m + j]) <= tol);
        }
}

static const float A3[9] = {4, 1, 2, 1, 5, 3, 2, 3, 6}; /* symmetric positive definite */
static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};

/* fp32 LAPACK on a well-conditioned 3 x 3: identities hold to 1e-5. */
static void test_inverse_solve_and_determinants_satisfy_their_identities(void)
{
    const float b[] = {1, 2, 3, 4, 5, 6}, n[] = {1, 2, 2, 4};
    run_t t;
    RUN(&t,
        "input %a: f32[3, 3]\ninput %b: f32[3, 2]\ninput %n: f32[2, 2]\n"
        "%iv: (f32[3, 3], i32[]) = aten.linalg_inv_ex.default(%a)\n%inv: f32[3, 3] = getitem(%iv, 0)\n"
        "%sv: (f32[3, 2], f32[3, 3], i32[3], i32[]) = aten._linalg_solve_ex.default(%a, %b)\n"
        "%x: f32[3, 2] = getitem(%sv, 0)\n"
        "%dt: (f32[], f32[3, 3], i32[3]) = aten._linalg_det.default(%a)\n%det: f32[] = getitem(%dt, 0)\n"
        "%sl: (f32[], f32[], f32[3, 3], i32[3]) = aten._linalg_slogdet.default(%a)\n"
        "%sg: f32[] = getitem(%sl, 0)\n%la: f32[] = getitem(%sl, 1)\n"
        "%sn: (f32[2, 2], i32[]) = aten.linalg_inv_ex.default(%n)\n%sni: i32[] = getitem(%sn, 1)\n"
        "%dn: (f32[], f32[2, 2], i32[2]) = aten._linalg_det.default(%n)\n%dnd: f32[] = getitem(%dn, 0)\n"
        "output %inv, %x, %det, %sg, %la, %sni, %dnd\n",
        A3, b, n);
    double A[9], inv[9], X[6], B[6];
    for (int i = 0; i < 9; i++)
        A[i] = A3[i];
    for (int i = 0; i < 6; i++)
        B[i] = b[i];
    read_value(&t, "inv", inv, 9);
    read_value(&t, "x", X, 6);
    expect_product(A, inv, I3, 3, 3, 3, 1e-5);
    expect_product(A, X, B, 3, 3, 2, 1e-5);
    /* det = 4 (30 - 9) - 1 (6 - 6) + 2 (3 - 10) = 70 */
    EXPECT(&t, "det", 70);
    EXPECT(&t, "sg", 1);
    EXPECT(&t, "la", (float)log(70));
    EXPECT(&t, "sni", 2); /* singular: LAPACK's info, U[2][2] = 0 */
    EXPECT(&t, "dnd", 0);
    done(&t);
}

/* LU with 1-based pivots (P L U = A), Cholesky (L L^T = A), eigh (A v = lambda v,
 * ascending), SVD (U S Vh = A, descending), QR (Q R = A, Q^T Q = I, R upper), pinv
 * (A pinv(A) A = A) and cross. */
static void test_factorizations_reproduce_their_matrix(void)
{
    const float r[] = {1, 2, 3, 4, 5, 6}, u[] = {1, 0, 0}, v[] = {0, 1, 0};
    run_t t;
    RUN(&t,
        "input %a: f32[3, 3]\ninput %r: f32[3, 2]\ninput %u: f32[3]\ninput %v: f32[3]\n"
        "%lf: (f32[3, 3], i32[3], i32[]) = aten.linalg_lu_factor_ex.default(%a)\n"
        "%lu: f32[3, 3] = getitem(%lf, 0)\n%pv: i32[3] = getitem(%lf, 1)\n"
        "%ch: (f32[3, 3], i32[]) = aten.linalg_cholesky_ex.default(%a)\n%l: f32[3, 3] = getitem(%ch, 0)\n"
        "%eh: (f32[3], f32[3, 3]) = aten._linalg_eigh.default(%a)\n"
        "%ev: f32[3] = getitem(%eh, 0)\n%eq: f32[3, 3] = getitem(%eh, 1)\n"
        "%sd: (f32[3, 2], f32[2], f32[2, 2]) = aten._linalg_svd.default(%r, False)\n"
        "%su: f32[3, 2] = getitem(%sd, 0)\n%ss: f32[2] = getitem(%sd, 1)\n%sv: f32[2, 2] = getitem(%sd, 2)\n"
        "%qr: (f32[3, 2], f32[2, 2]) = aten.linalg_qr.default(%r)\n"
        "%q: f32[3, 2] = getitem(%qr, 0)\n%rr: f32[2, 2] = getitem(%qr, 1)\n"
        "%pi: f32[2, 3] = aten.linalg_pinv.atol_rtol_tensor(%r)\n"
        "%cr: f32[3] = aten.linalg_cross.default(%u, %v)\n"
        "output %lu, %pv, %l, %ev, %eq, %su, %ss, %sv, %q, %rr, %pi, %cr\n",
        A3, r, u, v);
    double A[9], R[6], lu[9], pv[3], L[9], LT[9], ev[3], Q[9], su[6], ss[2], sv[4], q[6], rr[4], pi[6];
    for (int i = 0; i < 9; i++)
        A[i] = A3[i];
    for (int i = 0; i < 6; i++)
        R[i] = r[i];
    read_value(&t, "lu", lu, 9);
    read_value(&t, "pv", pv, 3);
    double Lm[9] = {0}, Um[9] = {0}, PA[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            Lm[i * 3 + j] = i == j ? 1 : j < i ? lu[i * 3 + j] : 0;
            Um[i * 3 + j] = j >= i ? lu[i * 3 + j] : 0;
        }
    memcpy(PA, A, sizeof PA); /* apply the row swaps (1-based) to A */
    for (int i = 0; i < 3; i++) {
        int p = (int)pv[i] - 1;
        CU_ASSERT(p >= i && p < 3);
        for (int j = 0; j < 3; j++) {
            double tmp = PA[i * 3 + j];
            PA[i * 3 + j] = PA[p * 3 + j];
            PA[p * 3 + j] = tmp;
        }
    }
    expect_product(Lm, Um, PA, 3, 3, 3, 1e-5);
    read_value(&t, "l", L, 9);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            LT[j * 3 + i] = L[i * 3 + j];
    CU_ASSERT_EQUAL(L[1], 0); /* the upper triangle is zero */
    expect_product(L, LT, A, 3, 3, 3, 1e-5);
    read_value(&t, "ev", ev, 3);
    read_value(&t, "eq", Q, 9);
    CU_ASSERT(ev[0] <= ev[1] && ev[1] <= ev[2]);
    for (int j = 0; j < 3; j++) /* A q_j = lambda_j q_j, q_j a column */
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += A[i * 3 + k] * Q[k * 3 + j];
            CU_ASSERT(fabs(s - ev[j] * Q[i * 3 + j]) <= 1e-4);
        }
    read_value(&t, "su", su, 6);
    read_value(&t, "ss", ss, 2);
    read_value(&t, "sv", sv, 4);
    CU_ASSERT(ss[0] >= ss[1] && ss[1] >= 0);
    double US[6];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            US[i * 2 + j] = su[i * 2 + j] * ss[j];
    expect_product(US, sv, R, 3, 2, 2, 1e-5);
    read_value(&t, "q", q, 6);
    read_value(&t, "rr", rr, 4);
    CU_ASSERT_EQUAL(rr[2], 0);
    expect_product(q, rr, R, 3, 2, 2, 1e-5);
    double QT[6], I2[4] = {1, 0, 0, 1};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            QT[j * 3 + i] = q[i * 2 + j];
    expect_product(QT, q, I2, 2, 3, 2, 1e-5);
    read_value(&t, "pi", pi, 6);
    double RP[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            RP[i * 3 + j] = 0;
            for (int k = 0; k < 2; k++)
                RP[i * 3 + j] += R[i * 2 + k] * pi[k * 3 + j];
        }
    expect_product(RP, R, R, 3, 3, 2, 1e-4);
    EXPECT(&t, "cr", 0, 0, 1);
    done(&t);
}

/* det of diag(2, 4): |A^-1| P has row sums r = lambda u + 6 2^-24 (the input's
 * bound u |a| and the LU's backward error 3 n 2^-24 |L||U|), so det moves by
 * 8 ((1 + r)^2 - 1) / lambda; the inverse's bound covers a real perturbation
 * of the input within its bound. */
static void test_bounds_of_determinant_and_inverse_follow_their_rules(void)
{
    const float d[] = {2, 0, 0, 4}, ap[9] = {4 * (1 + 0x1p-11f), 1, 2, 1, 5, 3 * (1 - 0x1p-11f), 2, 3, 6};
    run_t t, tp;
    const char *g = "input %a: f32[2, 2]\ninput %b: f32[3, 3]\n"
                    "%dt: (f32[], f32[2, 2], i32[2]) = aten._linalg_det.default(%a)\n%det: f32[] = getitem(%dt, 0)\n"
                    "%iv: (f32[3, 3], i32[]) = aten.linalg_inv_ex.default(%b)\n%inv: f32[3, 3] = getitem(%iv, 0)\n"
                    "output %det, %inv\n";
    RUN_T(&t, 1, g, d, A3);
    RUN(&tp, g, d, ap);
    for (int w = 0; w < 2; w++) {
        double r = lam_w(w) * EU + 6 * 0x1p-24;
        expect_bound(&t, "det", w, (double[]){stored(8, 8 * ((1 + r) * (1 + r) - 1) / lam_w(w), w)}, 1);
    }
    double inv[9], invp[9];
    read_value(&t, "inv", inv, 9);
    read_value(&tp, "inv", invp, 9);
    const float *W = rt_ref_error(t.r, gr_graph_find(t.g, "inv"), 0);
    for (int i = 0; i < 9; i++) { /* the perturbation is half the input's bound u |a| */
        CU_ASSERT(W[i] > 0 && isfinite(W[i]));
        CU_ASSERT(fabs(invp[i] - inv[i]) <= W[i]);
    }
    done(&t);
    done(&tp);
}

/* ---- Data-dependent shapes and searches ---- */

static void test_data_dependent_ops_give_hand_worked_values(void)
{
    const float x[] = {0, 1, 2, 0}, m[] = {1, 0}, u[] = {3, 1, 3, 2}, c[] = {1, 1, 2, 2, 1}, s[] = {1, 3, 5, 7},
                v[] = {3, 6, 9};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 2]\ninput %m: bool[2]\ninput %u: f32[4]\ninput %c: f32[5]\ninput %s: f32[4]\n"
        "input %v: f32[3]\n"
        "%nz: i64[2, 2] = aten.nonzero.default(%x)\n"
        "%ms: f32[2] = aten.masked_select.default(%x, %m)\n"
        "%un: (f32[3], i64[4], i64[3]) = aten._unique2.default(%u, True, True, True)\n"
        "%unv: f32[3] = getitem(%un, 0)\n%uni: i64[4] = getitem(%un, 1)\n%unc: i64[3] = getitem(%un, 2)\n"
        "%uc: (f32[3], i64[5], i64[3]) = aten.unique_consecutive.default(%c, True, True)\n"
        "%ucv: f32[3] = getitem(%uc, 0)\n%uci: i64[5] = getitem(%uc, 1)\n%ucc: i64[3] = getitem(%uc, 2)\n"
        "%sl: i64[3] = aten.searchsorted.Tensor(%s, %v)\n"
        "%sr: i64[3] = aten.searchsorted.Tensor(%s, %v, right=True)\n"
        "%bk: i64[3] = aten.bucketize.Tensor(%v, %s)\n"
        "%in: bool[4] = aten.isin.Tensor_Tensor(%u, %v)\n"
        "%ni: bool[4] = aten.isin.Tensor_Tensor(%u, %v, invert=True)\n"
        "output %nz, %ms, %unv, %uni, %unc, %ucv, %uci, %ucc, %sl, %sr, %bk, %in, %ni\n",
        x, m, u, c, s, v);
    EXPECT(&t, "nz", 0, 1, 1, 0);
    EXPECT(&t, "ms", 0, 2); /* the mask's first column of each row */
    EXPECT(&t, "unv", 1, 2, 3);
    EXPECT(&t, "uni", 2, 0, 2, 1);
    EXPECT(&t, "unc", 1, 1, 2);
    EXPECT(&t, "ucv", 1, 2, 1);
    EXPECT(&t, "uci", 0, 0, 1, 1, 2);
    EXPECT(&t, "ucc", 2, 2, 1);
    EXPECT(&t, "sl", 1, 3, 4);
    EXPECT(&t, "sr", 2, 3, 4);
    EXPECT(&t, "bk", 1, 3, 4);
    EXPECT(&t, "in", 1, 0, 1, 0);
    EXPECT(&t, "ni", 0, 1, 0, 1);
    done(&t);
}

static void test_diagonal_embeds_and_masked_scatter_write_their_places(void)
{
    const float d[] = {1, 2}, z[] = {0, 0, 0, 0, 0, 0}, e[] = {7, 8}, m[] = {1, 0, 0, 1}, src[] = {5, 6, 7, 8};
    run_t t;
    RUN(&t,
        "input %d: f32[2]\ninput %z: f32[2, 3]\ninput %e: f32[2]\ninput %m: bool[2, 2]\ninput %s: f32[4]\n"
        "%de: f32[3, 3] = aten.diag_embed.default(%d, 1)\n"
        "%ds: f32[2, 3] = aten.diagonal_scatter.default(%z, %e, 1)\n"
        "%zz: f32[2, 2] = aten.zeros.default([2, 2])\n"
        "%mc: f32[2, 2] = aten.masked_scatter.default(%zz, %m, %s)\n"
        "output %de, %ds, %mc\n",
        d, z, e, m, src);
    EXPECT(&t, "de", 0, 1, 0, 0, 0, 2, 0, 0, 0);
    EXPECT(&t, "ds", 0, 7, 0, 0, 0, 8);
    EXPECT(&t, "mc", 5, 0, 0, 6);
    done(&t);
}

/* ---- Errors ---- */

static void test_bad_arguments_are_refused_naming_the_line(void)
{
    const float x[] = {1, 2, 3}, i[] = {3}, a[] = {1, 2, 3, 4, 5, 6};
    expect_fail("input %x: f32[3]\n%t: (f32[4], i64[4]) = aten.topk.default(%x, 4)\noutput %t\n",
                (const float *const[]){x}, "t.txt:2: aten.topk.default: k = 4 out of range for a dim of size 3");
    expect_fail("input %x: f32[3]\ninput %i: i64[1]\n%g: f32[1] = aten.gather.default(%x, 0, %i)\noutput %g\n",
                (const float *const[]){x, i}, "t.txt:3: aten.gather.default: index 3 out of range for a dim of size 3");
    expect_fail("input %x: f32[3]\ninput %i: i64[1]\n"
                "%s: f32[3] = aten.scatter_reduce.two(%x, 0, %i, %x, \"median\")\noutput %s\n",
                (const float *const[]){x, i}, "t.txt:3: aten.scatter_reduce.two: unknown reduction for argument reduce");
    expect_fail("input %a: f32[2, 3]\n%d: (f32[], f32[2, 3], i32[2]) = aten._linalg_det.default(%a)\noutput %d\n",
                (const float *const[]){a}, "t.txt:2: aten._linalg_det.default: a square matrix is needed, not 2 x 3");
}

/* index_select, index_add, index_copy and index_reduce refuse a negative
 * index as PyTorch 1.13 does (they wrapped it); index_fill counts it from
 * the end. */
static void test_a_negative_index_is_refused_by_index_select_add_and_copy_not_index_fill(void)
{
    const float x[] = {1, 2, 3, 4}, i[] = {-1}, s[] = {9, 9};
    static const struct {
        const char *op, *args, *shape;
    } ops[] = {{"aten.index_select.default", "0, %i", "1, 2"},
               {"aten.index_add.default", "0, %i, %s", "2, 2"},
               {"aten.index_copy.default", "0, %i, %s", "2, 2"},
               {"aten.index_reduce.default", "0, %i, %s, \"prod\"", "2, 2"}};
    char text[512], msg[256];
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        snprintf(text, sizeof text, "input %%x: f32[2, 2]\ninput %%i: i64[1]\ninput %%s: f32[1, 2]\n"
                 "%%y: f32[%s] = %s(%%x, %s)\noutput %%y\n", ops[k].shape, ops[k].op, ops[k].args);
        snprintf(msg, sizeof msg, "t.txt:4: %s: index -1 out of range for a dim of size 2", ops[k].op);
        expect_fail(text, (const float *const[]){x, i, s}, msg);
    }
    run_t t;
    RUN(&t, "input %x: f32[2, 2]\ninput %i: i64[1]\n%y: f32[2, 2] = aten.index_fill.int_Scalar(%x, 0, %i, 5.0)\n"
            "output %y\n", x, i);
    EXPECT(&t, "y", 1, 2, 5, 5);
    done(&t);
}

/* ---- Special functions ---- */

/* Known values, and identities that tie the functions together where no
 * constant is at hand: the Wronskian I0 K1 + I1 K0 = 1/x (in scaled form,
 * across the series / asymptotic switch at 30), Phi(ndtri(p)) = p,
 * erf(erfinv(y)) = y, erfcx(x) = e^(x^2) erfc(x) beyond the switch at 25. */
static void test_special_functions_give_known_values_and_identities(void)
{
    const float x[] = {0.5f, 2, 29, 31, 50}, one[] = {1}, p[] = {0.975f, 1e-6f, 0.5f, 0.999f}, y[] = {0.5f, 1e-6f, -0.999f},
                big[] = {20, 25.5f, 26};
    run_t t;
    RUN(&t,
        "input %x: f32[5]\ninput %one: f32[1]\ninput %p: f32[4]\ninput %y: f32[3]\ninput %big: f32[3]\n"
        "%i0e: f32[5] = aten.special_i0e.default(%x)\n%i1e: f32[5] = aten.special_i1e.default(%x)\n"
        "%k0e: f32[5] = aten.special_scaled_modified_bessel_k0.default(%x)\n"
        "%k1e: f32[5] = aten.special_scaled_modified_bessel_k1.default(%x)\n"
        "%i0: f32[1] = aten.i0.default(%one)\n%i1: f32[1] = aten.special_i1.default(%one)\n"
        "%k0: f32[1] = aten.special_modified_bessel_k0.default(%one)\n"
        "%k1: f32[1] = aten.special_modified_bessel_k1.default(%one)\n"
        "%nd: f32[4] = aten.special_ndtri.default(%p)\n%ln: f32[4] = aten.special_log_ndtr.default(%nd)\n"
        "%ei: f32[3] = aten.erfinv.default(%y)\n%ex: f32[3] = aten.special_erfcx.default(%big)\n"
        "%ex1: f32[1] = aten.special_erfcx.default(%one)\n"
        "%dg: f32[1] = aten.digamma.default(%one)\n%pg1: f32[1] = aten.polygamma.default(1, %one)\n"
        "%pg2: f32[1] = aten.polygamma.default(2, %one)\n%z4: f32[1] = aten.special_zeta.default(4.0, %one)\n"
        "%lg: f32[4] = aten.lgamma.default(%p)\n%mv: f32[3] = aten.mvlgamma.default(%big, 2)\n"
        "%j0: f32[1] = aten.special_bessel_j0.default(%one)\n%y0: f32[1] = aten.special_bessel_y0.default(%one)\n"
        "%sj: f32[5] = aten.special_spherical_bessel_j0.default(%x)\n"
        "output %i0e, %i1e, %k0e, %k1e, %i0, %i1, %k0, %k1, %nd, %ln, %ei, %ex, %ex1, %dg, %pg1, %pg2, %z4, %lg, %j0, %y0, %sj\n",
        x, one, p, y, big);
    double i0e[5], i1e[5], k0e[5], k1e[5], nd[4], ln[4], ei[3], ex[3], sj[5];
    read_value(&t, "i0e", i0e, 5);
    read_value(&t, "i1e", i1e, 5);
    read_value(&t, "k0e", k0e, 5);
    read_value(&t, "k1e", k1e, 5);
    for (int i = 0; i < 5; i++) /* the products are of fp32 values: 1e-6 relative */
        CU_ASSERT(fabs((i0e[i] * k1e[i] + i1e[i] * k0e[i]) * x[i] - 1) <= 1e-6);
    EXPECT(&t, "i0", 1.2660658777520084f);
    EXPECT(&t, "i1", 0.5651591039924851f);
    EXPECT(&t, "k0", 0.42102443824070834f);
    EXPECT(&t, "k1", 0.6019072301972346f);
    read_value(&t, "nd", nd, 4);
    read_value(&t, "ln", ln, 4);
    /* 0.975f is 2.4e-8 above 0.975, where the quantile's slope is 1 / phi(1.96) = 17.1 */
    CU_ASSERT(fabs(nd[0] - 1.959963984540054) <= 17.1 * fabs((double)p[0] - 0.975) + 2e-7 * 1.96);
    CU_ASSERT(fabs(nd[2]) <= 1e-12);
    for (int i = 0; i < 4; i++) /* log Phi of the fp32 quantile: p to the quantile's rounding */
        CU_ASSERT(fabs(exp(ln[i]) - p[i]) <= 1e-6 * p[i] + 2e-7 * fabs(nd[i]) * exp(-nd[i] * nd[i] / 2));
    read_value(&t, "ei", ei, 3);
    for (int i = 0; i < 3; i++)
        CU_ASSERT(fabs(erf(ei[i]) - y[i]) <= 1e-6 * fabs(y[i]) + 2e-7 * fabs(ei[i]) * 2 * exp(-ei[i] * ei[i]));
    read_value(&t, "ex", ex, 3);
    for (int i = 0; i < 3; i++)
        CU_ASSERT(fabs(ex[i] / (exp((double)big[i] * big[i]) * erfc(big[i])) - 1) <= 1e-6);
    EXPECT(&t, "ex1", 0.42758357615580705f);
    EXPECT(&t, "dg", -0.5772156649015329f);
    EXPECT(&t, "pg1", 1.6449340668482264f);  /* pi^2 / 6 */
    EXPECT(&t, "pg2", -2.4041138063191885f); /* -2 zeta(3) */
    EXPECT(&t, "z4", 1.0823232337111382f);   /* pi^4 / 90 */
    double mv[3];
    read_value(&t, "mv", mv, 3);
    for (int i = 0; i < 3; i++) /* log Gamma_2(x) = (1/2) log pi + lgamma(x) + lgamma(x - 1/2) */
        CU_ASSERT(fabs(mv[i] - (0.5 * 1.1447298858494002 + lgamma(big[i]) + lgamma(big[i] - 0.5))) <= 2e-7 * mv[i]);
    EXPECT(&t, "j0", 0.7651976865579666f);
    EXPECT(&t, "y0", 0.08825696421567697f);
    read_value(&t, "sj", sj, 5);
    for (int i = 0; i < 5; i++)
        CU_ASSERT(fabs(sj[i] - sin((double)x[i]) / x[i]) <= 1e-7);
    done(&t);
}

/* unfold's windows, logcumsumexp, renorm (a row of norm 5 scaled to 1, a row of norm 1 kept) and
 * triangular solves from both sides (T X = B, X T = B). */
static void test_windows_running_logsumexp_renorm_and_triangular_solves(void)
{
    const float x[] = {0, 1, 2, 3, 4}, l[] = {0, 0, -INFINITY, 0}, r[] = {3, 4, 0.6f, 0.8f};
    const float T[] = {2, 1, 7, 3}, B[] = {4, 5, 6, 7}; /* upper: [[2, 1], [., 3]] */
    run_t t;
    RUN(&t,
        "input %x: f32[5]\ninput %l: f32[4]\ninput %r: f32[2, 2]\ninput %t: f32[2, 2]\ninput %b: f32[2, 2]\n"
        "%u: f32[2, 3] = aten.unfold.default(%x, 0, 3, 2)\n"
        "%c: f32[4] = aten.logcumsumexp.default(%l, 0)\n"
        "%n: f32[2, 2] = aten.renorm.default(%r, 2, 0, 1.0)\n"
        "%sl: f32[2, 2] = aten.linalg_solve_triangular.default(%t, %b, upper=True)\n"
        "%sr: f32[2, 2] = aten.linalg_solve_triangular.default(%t, %b, upper=True, left=False)\n"
        "%ts: (f32[2, 2], f32[2, 2]) = aten.triangular_solve.default(%b, %t)\n%tx: f32[2, 2] = getitem(%ts, 0)\n"
        "output %u, %c, %n, %sl, %sr, %tx\n",
        x, l, r, T, B);
    EXPECT(&t, "u", 0, 1, 2, 2, 3, 4);
    EXPECT(&t, "c", 0, (float)log(2), (float)log(2), (float)log(3));
    EXPECT(&t, "n", (float)(3 / (5 + 1e-7)), (float)(4 / (5 + 1e-7)), 0.6f, 0.8f);
    /* [[2, 1], [0, 3]] X = [[4, 5], [6, 7]]: X = [[1, 4/3], [2, 7/3]] */
    EXPECT(&t, "sl", 1, 4.0f / 3, 2, 7.0f / 3);
    EXPECT(&t, "tx", 1, 4.0f / 3, 2, 7.0f / 3);
    /* X [[2, 1], [0, 3]] = [[4, 5], [6, 7]]: X = [[2, 1], [3, 4/3]] */
    EXPECT(&t, "sr", 2, 1, 3, 4.0f / 3);
    done(&t);
}

/* The factor forms: linalg_lu's P L U = A, lu_solve from its factors (A X = B,
 * A^T X = B, X A = B), Cholesky solve and inverse, geqrf's reflectors made Q by
 * householder_product (Q R = A) and applied by ormqr (Q^T A = R), LDL^T of a
 * matrix that needs no pivoting. */
static void test_factor_forms_solve_and_rebuild_their_matrix(void)
{
    const float b[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, s[] = {4, 2, 2, 3};
    run_t t;
    RUN(&t,
        "input %a: f32[3, 3]\ninput %b: f32[3, 3]\ninput %s: f32[2, 2]\n"
        "%lu: (f32[3, 3], f32[3, 3], f32[3, 3]) = aten.linalg_lu.default(%a)\n"
        "%p: f32[3, 3] = getitem(%lu, 0)\n%l: f32[3, 3] = getitem(%lu, 1)\n%u: f32[3, 3] = getitem(%lu, 2)\n"
        "%lf: (f32[3, 3], i32[3], i32[]) = aten.linalg_lu_factor_ex.default(%a)\n"
        "%f: f32[3, 3] = getitem(%lf, 0)\n%pv: i32[3] = getitem(%lf, 1)\n"
        "%x: f32[3, 3] = aten.linalg_lu_solve.default(%f, %pv, %b)\n"
        "%xa: f32[3, 3] = aten.linalg_lu_solve.default(%f, %pv, %b, adjoint=True)\n"
        "%xr: f32[3, 3] = aten.linalg_lu_solve.default(%f, %pv, %b, left=False)\n"
        "%ch: (f32[3, 3], i32[]) = aten.linalg_cholesky_ex.default(%a)\n%c: f32[3, 3] = getitem(%ch, 0)\n"
        "%cs: f32[3, 3] = aten.cholesky_solve.default(%b, %c)\n"
        "%ci: f32[3, 3] = aten.cholesky_inverse.default(%c)\n"
        "%gq: (f32[3, 3], f32[3]) = aten.geqrf.default(%a)\n%g: f32[3, 3] = getitem(%gq, 0)\n"
        "%tau: f32[3] = getitem(%gq, 1)\n"
        "%q: f32[3, 3] = aten.linalg_householder_product.default(%g, %tau)\n"
        "%qta: f32[3, 3] = aten.ormqr.default(%g, %tau, %a, True, True)\n"
        "%ld: (f32[2, 2], i32[2], i32[]) = aten.linalg_ldl_factor_ex.default(%s)\n"
        "%ldv: f32[2, 2] = getitem(%ld, 0)\n%ldp: i32[2] = getitem(%ld, 1)\n"
        "output %p, %l, %u, %x, %xa, %xr, %cs, %ci, %g, %q, %qta, %ldv, %ldp\n",
        A3, b, s);
    double A[9], AT[9], B[9], P[9], L[9], U[9], PL[9], X[9], C[9], G[9], Q[9], QTA[9], R[9] = {0};
    for (int i = 0; i < 9; i++) {
        A[i] = A3[i];
        AT[(i % 3) * 3 + i / 3] = A3[i];
        B[i] = b[i];
    }
    read_value(&t, "p", P, 9);
    read_value(&t, "l", L, 9);
    read_value(&t, "u", U, 9);
    for (int i = 0; i < 9; i++) {
        PL[i] = 0;
        for (int k = 0; k < 3; k++)
            PL[i] += P[i / 3 * 3 + k] * L[k * 3 + i % 3];
    }
    expect_product(PL, U, A, 3, 3, 3, 1e-5);
    read_value(&t, "x", X, 9);
    expect_product(A, X, B, 3, 3, 3, 1e-5);
    read_value(&t, "xa", X, 9);
    expect_product(AT, X, B, 3, 3, 3, 1e-5);
    read_value(&t, "xr", X, 9);
    expect_product(X, A, B, 3, 3, 3, 1e-5);
    read_value(&t, "cs", X, 9);
    expect_product(A, X, B, 3, 3, 3, 1e-5);
    read_value(&t, "ci", C, 9);
    expect_product(A, C, I3, 3, 3, 3, 1e-5);
    read_value(&t, "g", G, 9);
    read_value(&t, "q", Q, 9);
    read_value(&t, "qta", QTA, 9);
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
            R[i * 3 + j] = G[i * 3 + j]; /* geqrf's R: its upper triangle */
    expect_product(Q, R, A, 3, 3, 3, 1e-5);
    for (int i = 0; i < 9; i++)
        CU_ASSERT(fabs(QTA[i] - R[i]) <= 1e-5);
    /* [[4, 2], [2, 3]] = L D L^T, L = [[1, 0], [0.5, 1]], D = diag(4, 2), no interchange */
    EXPECT(&t, "ldv", 4, 0, 0.5, 2);
    EXPECT(&t, "ldp", 1, 2);
    done(&t);
}

/* copysign, signbit (a -0.0 counts), sign (of NaN 0), clamp's NaN bound, nextafter, frexp, histc and the incomplete gamma functions
 * (P(1, x) = 1 - e^-x, P(1/2, x) = erf(sqrt x), P(2, x) = 1 - e^-x (1 + x): the series and the
 * continued fraction both). */
static void test_float_bits_histogram_and_incomplete_gamma_give_known_values(void)
{
    const float a[] = {1, -2, 3}, b[] = {-1, 1, -0.0f}, z[] = {-1, 0, -0.0f, 2}, f[] = {8, -3, 0.75f}, sq[] = {NAN, -0.0f, -4},
                h[] = {0.5f, 1.5f, 1.5f, 2.9f, 3.5f}, ga[] = {1, 0.5f, 2}, gx[] = {2, 4, 0.5f};
    run_t t;
    RUN(&t,
        "input %a: f32[3]\ninput %b: f32[3]\ninput %z: f32[4]\ninput %f: f32[3]\ninput %h: f32[5]\n"
        "input %ga: f32[3]\ninput %gx: f32[3]\ninput %sq: f32[3]\n"
        "%cs: f32[3] = aten.copysign.Tensor(%a, %b)\n%cn: f32[3] = aten.copysign.Scalar(%a, -1.0)\n"
        "%sb: bool[4] = aten.signbit.default(%z)\n%sn: f32[3] = aten.sign.default(%sq)\n"
        "%cb: f32[3] = aten.clamp.default(%a, None, nan)\n%cm: f32[3] = aten.clamp_min.default(%a, nan)\n"
        "%ci: f32[3] = aten.clamp_min.default(%a, inf)\n%cq: f32[3] = aten.clamp.default(%a, nan, 0.5)\n"
        "%ri: f32[3] = aten.remainder.Scalar(%a, inf)\n%fi: f32[3] = aten.fmod.Scalar(%a, inf)\n"
        "%na: f32[3] = aten.nextafter.default(%a, %b)\n"
        "%fr: (f32[3], i32[3]) = aten.frexp.Tensor(%f)\n%fm: f32[3] = getitem(%fr, 0)\n%fe: i32[3] = getitem(%fr, 1)\n"
        "%hc: f32[3] = aten.histc.default(%h, 3, 0, 3)\n"
        "%ig: f32[3] = aten.igamma.default(%ga, %gx)\n%ic: f32[3] = aten.igammac.default(%ga, %gx)\n"
        "output %cs, %cn, %sb, %na, %fm, %fe, %hc, %ig, %ic, %sn, %cb, %cm, %ci, %cq, %ri, %fi\n",
        a, b, z, f, h, ga, gx, sq);
    EXPECT(&t, "cs", -1, 2, -3);
    EXPECT(&t, "cn", -1, -2, -3);
    EXPECT(&t, "sb", 1, 0, 1, 0);
    EXPECT(&t, "sn", 0, 0, -1); /* torch 1.13: sign of NaN is 0 */
    EXPECT(&t, "cb", 1, -2, 3);  /* torch 1.13: clamp ignores a NaN bound beside None, clamp_min does not */
    EXPECT(&t, "cm", NAN, NAN, NAN);
    EXPECT(&t, "ci", INFINITY, INFINITY, INFINITY); /* its error bound was inf - inf, an internal error */
    EXPECT(&t, "cq", NAN, NAN, NAN); /* torch 1.13: a NaN bound beside another bound gives NaN */
    EXPECT(&t, "ri", 1, INFINITY, 3); /* a + b where their signs differ */
    EXPECT(&t, "fi", 1, -2, 3);
    /* one fp32 step: 2^-24 below 1, 2^-23 in [1, 2), 2^-22 in [2, 4) */
    EXPECT(&t, "na", 1 - 0x1p-24f, -2 + 0x1p-23f, 3 - 0x1p-22f);
    EXPECT(&t, "fm", 0.5, -0.75, 0.75);
    EXPECT(&t, "fe", 4, 2, 0);
    EXPECT(&t, "hc", 1, 2, 1); /* 3.5 is outside [0, 3] */
    EXPECT(&t, "ig", (float)(1 - exp(-2)), (float)erf(2), (float)(1 - exp(-0.5) * 1.5));
    EXPECT(&t, "ic", (float)exp(-2), (float)erfc(2), (float)(exp(-0.5) * 1.5));
    done(&t);
}

/* bincount (counts up to the largest value, minlength, weights' sums) and nn.utils.weight_norm's
 * _weight_norm_interface (per row along dim 0; dim -1: the whole tensor's norm) by hand. */
static void test_bincount_and_weight_norm_give_hand_worked_values(void)
{
    const float x[] = {1, 3, 1, 0, 3, 3}, w[] = {0.5f, 1, 2, 4, 0.25f, 8}, v[] = {3, 4, 0, 2}, g[] = {10, 1}, s[] = {2};
    run_t t;
    RUN(&t,
        "input %x: i64[6]\ninput %w: f32[6]\ninput %v: f32[2, 2]\ninput %g: f32[2, 1]\ninput %s: f32[]\n"
        "%c: i64[4] = aten.bincount.default(%x)\n%m: i64[6] = aten.bincount.default(%x, minlength=6)\n"
        "%cw: f64[4] = aten.bincount.default(%x, %w)\n"
        "%wn: (f32[2, 2], f32[2, 1]) = aten._weight_norm_interface.default(%v, %g)\n"
        "%ww: f32[2, 2] = getitem(%wn, 0)\n%wr: f32[2, 1] = getitem(%wn, 1)\n"
        "%an: (f32[2, 2], f32[]) = aten._weight_norm_interface.default(%v, %s, -1)\n"
        "%aw: f32[2, 2] = getitem(%an, 0)\n%ar: f32[] = getitem(%an, 1)\n"
        "output %c, %m, %cw, %ww, %wr, %aw, %ar\n",
        x, w, v, g, s);
    EXPECT(&t, "c", 1, 2, 0, 3);
    EXPECT(&t, "m", 1, 2, 0, 3, 0, 0);
    EXPECT(&t, "cw", 4, 2.5f, 0, 9.25f);
    EXPECT(&t, "ww", 6, 8, 0, 1); /* rows of norm 5 and 2 scaled to 10 and 1 */
    EXPECT(&t, "wr", 5, 2);
    EXPECT(&t, "aw", (float)(6 / sqrt(29)), (float)(8 / sqrt(29)), 0, (float)(4 / sqrt(29)));
    EXPECT(&t, "ar", (float)sqrt(29));
    done(&t);
}

/* Each family's p_2 or p_3 at a point worked by hand, n < 0 giving 0, and the bound of T_1(x) = x:
 * its derivative 1 times the input's bound, stored. */
static void test_orthogonal_polynomials_give_hand_worked_values(void)
{
    const float h[] = {0.5f}, o[] = {1}, q[] = {0.75f};
    run_t t;
    RUN_T(&t, 1,
          "input %h: f32[1]\ninput %o: f32[1]\ninput %q: f32[1]\n"
          "%t3: f32[1] = aten.special_chebyshev_polynomial_t.x_scalar(%h, 3)\n"
          "%u2: f32[1] = aten.special_chebyshev_polynomial_u.x_scalar(%h, 2)\n"
          "%v2: f32[1] = aten.special_chebyshev_polynomial_v.x_scalar(%h, 2)\n"
          "%w2: f32[1] = aten.special_chebyshev_polynomial_w.x_scalar(%h, 2)\n"
          "%st: f32[1] = aten.special_shifted_chebyshev_polynomial_t.x_scalar(%q, 2)\n"
          "%h3: f32[1] = aten.special_hermite_polynomial_h.x_scalar(%o, 3)\n"
          "%e3: f32[1] = aten.special_hermite_polynomial_he.x_scalar(%o, 3)\n"
          "%l2: f32[1] = aten.special_laguerre_polynomial_l.x_scalar(%o, 2)\n"
          "%p2: f32[1] = aten.special_legendre_polynomial_p.x_scalar(%h, 2)\n"
          "%neg: f32[1] = aten.special_legendre_polynomial_p.x_scalar(%h, -1)\n"
          "%t1: f32[1] = aten.special_chebyshev_polynomial_t.x_scalar(%h, 1)\n"
          "output %t3, %u2, %v2, %w2, %st, %h3, %e3, %l2, %p2, %neg, %t1\n",
          h, o, q);
    EXPECT(&t, "t3", -1);   /* 4 x^3 - 3 x */
    EXPECT(&t, "u2", 0);    /* 4 x^2 - 1 */
    EXPECT(&t, "v2", -1);   /* 4 x^2 - 2 x - 1 */
    EXPECT(&t, "w2", 1);    /* 4 x^2 + 2 x - 1 */
    EXPECT(&t, "st", -0.5); /* T_2(2 x - 1) = T_2(1/2) */
    EXPECT(&t, "h3", -4);   /* 8 x^3 - 12 x */
    EXPECT(&t, "e3", -2);   /* x^3 - 3 x */
    EXPECT(&t, "l2", -0.5); /* (x^2 - 4 x + 2) / 2 */
    EXPECT(&t, "p2", -0.125); /* (3 x^2 - 1) / 2 */
    EXPECT(&t, "neg", 0);
    for (int w = 0; w < 2; w++)
        expect_bound(&t, "t1", w, (double[]){stored(0.5, EU * 0.5, w)}, 1);
    done(&t);
}

/* Rearrangements and the matrix-vector products, worked by hand. */
static void test_rearrangements_and_matrix_vector_products_give_hand_worked_values(void)
{
    const float p4[] = {1, 2, 3, 4}, x6[] = {0, 1, 2, 3, 4, 5}, row[] = {1, 2}, one[] = {3}, z4[] = {0, 0, 0, 0};
    const float ix[] = {1, -1, 1}, src[] = {5, 6, 7}, o3[] = {1, 1, 1}, ir[] = {0, 0, 2}, sr[] = {2, 3, 4};
    const float m[] = {1, 2, 3, 4}, v[] = {1, 1}, b1[] = {1, 2, 3, 4}, b2[] = {1, 1, 1, -1}, w[] = {3, 4};
    run_t t;
    RUN(&t,
        "input %p: f32[1, 4, 1, 1]\ninput %x: f32[6]\ninput %row: f32[1, 2]\ninput %one: f32[1]\ninput %z: f32[4]\n"
        "input %ix: i64[3]\ninput %src: f32[3]\ninput %o3: f32[3]\ninput %ir: i64[3]\ninput %sr: f32[3]\n"
        "input %m: f32[2, 2]\ninput %v: f32[2]\ninput %b1: f32[2, 2, 1]\ninput %b2: f32[2, 1, 2]\ninput %w: f32[2]\n"
        "%ps: f32[1, 1, 2, 2] = aten.pixel_shuffle.default(%p, 2)\n"
        "%pu: f32[1, 4, 1, 1] = aten.pixel_unshuffle.default(%ps, 2)\n"
        "%nc: f32[3] = aten.narrow_copy.default(%x, 0, 1, 3)\n"
        "%as: f32[2, 2] = aten.as_strided.default(%x, [2, 2], [1, 2], 1)\n"
        "%bd: f32[2, 3] = aten.block_diag.default([%row, %one])\n"
        "%pt: f32[4] = aten.put.default(%z, %ix, %src, True)\n"
        "%rp: f32[3] = aten.index_reduce.default(%o3, 0, %ir, %sr, \"prod\")\n"
        "%rx: f32[3] = aten.index_reduce.default(%o3, 0, %ir, %sr, \"amax\", include_self=False)\n"
        "%zz: f32[2, 2] = aten.zeros.default([2, 2])\n"
        "%ar: f32[2, 2] = aten.addr.default(%zz, %v, %w, alpha=2)\n"
        "%mv: f32[2] = aten.addmv.default(%v, %m, %v, beta=2)\n"
        "%ab: f32[2, 2] = aten.addbmm.default(%zz, %b1, %b2)\n"
        "output %ps, %pu, %nc, %as, %bd, %pt, %rp, %rx, %ar, %mv, %ab\n",
        p4, x6, row, one, z4, ix, src, o3, ir, sr, m, v, b1, b2, w);
    EXPECT(&t, "ps", 1, 2, 3, 4);
    EXPECT(&t, "pu", 1, 2, 3, 4);
    EXPECT(&t, "nc", 1, 2, 3);
    EXPECT(&t, "as", 1, 3, 2, 4); /* element 1 + i + 2 j */
    EXPECT(&t, "bd", 1, 2, 0, 0, 0, 3);
    EXPECT(&t, "pt", 0, 12, 0, 6); /* 5 + 7 at 1, 6 at -1 */
    EXPECT(&t, "rp", 6, 1, 4);     /* 1 2 3 at 0, 1 4 at 2 */
    EXPECT(&t, "rx", 3, 1, 4);
    EXPECT(&t, "ar", 6, 8, 6, 8);  /* 2 (1, 1)^T (3, 4) */
    EXPECT(&t, "mv", 5, 9);        /* 2 (1, 1) + (3, 7) */
    EXPECT(&t, "ab", 4, -2, 6, -2); /* [[1, 1], [2, 2]] + [[3, -3], [4, -4]] */
    done(&t);
}

/* nll_loss with class weights, its mean over the picked weights, an ignored target, and
 * binary_cross_entropy, worked by hand. */
static void test_likelihood_losses_give_hand_worked_values(void)
{
    const float x[] = {-1, -2, -3, -4}, t[] = {1, 0}, ti[] = {1, -100}, w[] = {1, 2}, p[] = {0.5f, 0.25f}, q[] = {1, 0};
    run_t r;
    RUN(&r,
        "input %x: f32[2, 2]\ninput %t: i64[2]\ninput %ti: i64[2]\ninput %w: f32[2]\ninput %p: f32[2]\ninput %q: f32[2]\n"
        "%m: (f32[], f32[]) = aten.nll_loss_forward.default(%x, %t, %w, 1, -100)\n"
        "%mo: f32[] = getitem(%m, 0)\n%mw: f32[] = getitem(%m, 1)\n"
        "%n: (f32[2], f32[]) = aten.nll_loss_forward.default(%x, %t, %w, 0, -100)\n%no: f32[2] = getitem(%n, 0)\n"
        "%g: (f32[], f32[]) = aten.nll_loss_forward.default(%x, %ti, %w, 1, -100)\n%go: f32[] = getitem(%g, 0)\n"
        "%b: f32[2] = aten.binary_cross_entropy.default(%p, %q, None, 0)\n"
        "%bm: f32[] = aten.binary_cross_entropy.default(%p, %q)\n"
        "output %mo, %mw, %no, %go, %b, %bm\n",
        x, t, ti, w, p, q);
    EXPECT(&r, "mo", 7.0f / 3); /* (2 * 2 + 1 * 3) / (2 + 1) */
    EXPECT(&r, "mw", 3);
    EXPECT(&r, "no", 4, 3);
    EXPECT(&r, "go", 2); /* the second target ignored: 4 / 2 */
    EXPECT(&r, "b", (float)log(2), (float)-log(0.75));
    EXPECT(&r, "bm", (float)((log(2) - log(0.75)) / 2));
    done(&r);
}

/* ---- Convolution beyond 2-D, transposed ---- */

static void test_transposed_and_3d_convolutions_give_hand_worked_values(void)
{
    /* Transposed: each input scatters x w at i s - p + k d (plus output_padding at the end). */
    const float x[] = {1, 2}, w[] = {1, 3}, x3[] = {1, 2, 3, 4, 5, 6, 7, 8}, ones[] = {1, 1, 1, 1, 1, 1, 1, 1};
    const float g[] = {3, 5};
    run_t t;
    RUN(&t,
        "input %x: f32[1, 1, 2]\ninput %w: f32[1, 1, 2]\ninput %x3: f32[1, 1, 2, 2, 2]\n"
        "input %k3: f32[1, 1, 2, 2, 2]\ninput %wg: f32[2, 1, 1]\n"
        "%s2: f32[1, 1, 4] = aten.convolution.default(%x, %w, None, [2], [0], [1], True, [0], 1)\n"
        "%s1: f32[1, 1, 3] = aten.convolution.default(%x, %w, None, [1], [0], [1], True, [0], 1)\n"
        "%p1: f32[1, 1, 1] = aten.convolution.default(%x, %w, None, [1], [1], [1], True, [0], 1)\n"
        "%op: f32[1, 1, 5] = aten.convolution.default(%x, %w, None, [2], [0], [1], True, [1], 1)\n"
        "%xg: f32[1, 2, 1] = aten.view.default(%x, [1, 2, 1])\n"
        "%gr: f32[1, 2, 1] = aten.convolution.default(%xg, %wg, None, [1], [0], [1], True, [0], 2)\n"
        "%c3: f32[1, 1, 1, 1, 1] = aten.convolution.default(%x3, %k3, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], "
        "False, [0, 0, 0], 1)\n"
        "%t3: f32[1, 1, 3, 3, 3] = aten.convolution.default(%x3, %k3, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], "
        "True, [0, 0, 0], 1)\n"
        "output %s2, %s1, %p1, %op, %gr, %c3, %t3\n",
        x, w, x3, ones, g);
    EXPECT(&t, "s2", 1, 3, 2, 6);
    EXPECT(&t, "s1", 1, 5, 6);
    EXPECT(&t, "p1", 5); /* padding crops one from each end */
    EXPECT(&t, "op", 1, 3, 2, 6, 0);
    EXPECT(&t, "gr", 3, 10); /* groups: each channel with its own filter */
    EXPECT(&t, "c3", 36);
    /* A 2x2x2 box of ones transposed: the corner sees x[0], the centre the whole sum. */
    int v = gr_graph_find(t.g, "t3");
    gr_ttype ty;
    const float *got = rt_ref_value(t.r, v, &ty);
    CU_ASSERT_EQUAL(got[0], 1);
    CU_ASSERT_EQUAL(got[13], 36);
    CU_ASSERT_EQUAL(got[26], 8);
    done(&t);
}

/* ---- Unpooling and interpolation (runtime/ref_spatial2.c) ---- */

static void test_unpooling_and_interpolation_give_hand_worked_values(void)
{
    const float x[] = {5, 7}, ix[] = {3, 0}, r[] = {0, 10}, sq[] = {0, 1, 4, 9};
    const float c[] = {1, 2, 3, 4, 5, 6, 7, 8};
    run_t t;
    RUN(&t,
        "input %x: f32[1, 1, 1, 2]\ninput %ix: i64[1, 1, 1, 2]\ninput %r: f32[1, 1, 2]\n"
        "input %sq: f32[1, 1, 1, 4]\ninput %c: f32[1, 1, 2, 2, 2]\n"
        "%u: f32[1, 1, 2, 2] = aten.max_unpool2d.default(%x, %ix, [2, 2])\n"
        "%l: f32[1, 1, 4] = aten.upsample_linear1d.vec(%r, [4], False, None)\n"
        "%la: f32[1, 1, 3] = aten.upsample_linear1d.vec(%r, None, True, [1.5])\n"
        "%b: f32[1, 1, 1, 7] = aten.upsample_bicubic2d.vec(%sq, [1, 7], True, None)\n"
        "%t3: f32[1, 1, 1, 1, 1] = aten.upsample_trilinear3d.vec(%c, None, False, [0.5, 0.5, 0.5])\n"
        "output %u, %l, %la, %b, %t3\n",
        x, ix, r, sq, c);
    EXPECT(&t, "u", 7, 0, 0, 5);
    /* half-pixel centres: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25 (past the last: its value) */
    EXPECT(&t, "l", 0, 2.5, 7.5, 10);
    EXPECT(&t, "la", 0, 5, 10); /* corners aligned: sources 0, 0.5, 1 */
    /* Keys' cubic (A = -0.75) at 1.5 weighs 0, 1, 4, 9 by -3/32, 19/32, 19/32, -3/32; at 0 the value itself */
    int v = gr_graph_find(t.g, "b");
    gr_ttype ty;
    const float *got = rt_ref_value(t.r, v, &ty);
    CU_ASSERT_DOUBLE_EQUAL(got[0], 0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(got[3], 2.125, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(got[6], 9, 1e-6);
    EXPECT(&t, "t3", 4.5); /* the centre of a 2x2x2 cube: the mean of its corners */
    done(&t);
}

/* ---- 3-D pooling (runtime/ref_pool3d.c) ---- */

static void test_3d_pooling_gives_hand_worked_values(void)
{
    const float c[] = {1, 2, 3, 4, 5, 6, 7, 8}; /* a 2x2x2 cube: element (z, y, x) is 4 z + 2 y + x + 1 */
    run_t t;
    RUN(&t,
        "input %c: f32[1, 1, 2, 2, 2]\n"
        "%m: (f32[1, 1, 1, 1, 2], i64[1, 1, 1, 1, 2]) = aten.max_pool3d_with_indices.default(%c, [2, 2, 1])\n"
        "%mv: f32[1, 1, 1, 1, 2] = getitem(%m, 0)\n%mi: i64[1, 1, 1, 1, 2] = getitem(%m, 1)\n"
        "%a: f32[1, 1, 3, 3, 3] = aten.avg_pool3d.default(%c, [2, 2, 2], [1, 1, 1], [1, 1, 1], False, False)\n"
        "%ai: f32[1, 1, 3, 3, 3] = aten.avg_pool3d.default(%c, [2, 2, 2], [1, 1, 1], [1, 1, 1])\n"
        "%aa: f32[1, 1, 1, 2, 1] = aten._adaptive_avg_pool3d.default(%c, [1, 2, 1])\n"
        "%am: (f32[1, 1, 1, 1, 1], i64[1, 1, 1, 1, 1]) = aten.adaptive_max_pool3d.default(%c, [1, 1, 1])\n"
        "%amv: f32[1, 1, 1, 1, 1] = getitem(%am, 0)\n%ami: i64[1, 1, 1, 1, 1] = getitem(%am, 1)\n"
        "output %mv, %mi, %a, %ai, %aa, %amv, %ami\n",
        c);
    EXPECT(&t, "mv", 7, 8);
    EXPECT(&t, "mi", 6, 7);
    /* padding 1, stride 1: a corner window holds one element (over 1, or over 8 with the padding
     * counted), the centre window the whole cube */
    const float *a = rt_ref_value(t.r, gr_graph_find(t.g, "a"), &(gr_ttype){0});
    const float *ai = rt_ref_value(t.r, gr_graph_find(t.g, "ai"), &(gr_ttype){0});
    CU_ASSERT(a[0] == 1 && a[13] == 4.5 && a[26] == 8);
    CU_ASSERT(ai[0] == 0.125 && ai[13] == 4.5 && ai[26] == 1);
    EXPECT(&t, "aa", 3.5, 5.5); /* rows y = 0 and y = 1 averaged over z and x */
    EXPECT(&t, "amv", 8);
    EXPECT(&t, "ami", 7);
    done(&t);
}

/* ---- Margin losses (runtime/ref_loss.c) ---- */

static void test_margin_losses_give_hand_worked_values(void)
{
    const float z[] = {0, 0}, pm[] = {1, -1}, x[] = {0.1f, 0.2f, 0.4f}, y[] = {1}, xl[] = {0.1f, 0.2f, 0.4f, 0.8f};
    const float yl[] = {3, 0, -1, 1};
    run_t t;
    RUN(&t,
        "input %z: f32[2]\ninput %pm: f32[2]\ninput %x: f32[1, 3]\ninput %y: i64[1]\n"
        "input %xl: f32[1, 4]\ninput %yl: i64[1, 4]\n"
        "%s: f32[2] = aten.soft_margin_loss.default(%z, %pm, 0)\n"
        "%m1: f32[] = aten.multi_margin_loss.default(%x, %y)\n"
        "%m2: f32[] = aten.multi_margin_loss.default(%x, %y, 2, 1.0, None, 2)\n"
        "%ml: (f32[], f32[1, 4]) = aten.multilabel_margin_loss_forward.default(%xl, %yl, 1)\n"
        "%mlv: f32[] = getitem(%ml, 0)\n%mlt: f32[1, 4] = getitem(%ml, 1)\n"
        "output %s, %m1, %m2, %mlv, %mlt\n",
        z, pm, x, y, xl, yl);
    EXPECT(&t, "s", 0.693147181f, 0.693147181f); /* log(1 + e^0) */
    /* class 1 against 0 and 2: hinges 1 - 0.2 + 0.1 and 1 - 0.2 + 0.4, over 3 classes; squared for p = 2 */
    const float *m1 = rt_ref_value(t.r, gr_graph_find(t.g, "m1"), &(gr_ttype){0});
    const float *m2 = rt_ref_value(t.r, gr_graph_find(t.g, "m2"), &(gr_ttype){0});
    CU_ASSERT_DOUBLE_EQUAL(m1[0], 0.7, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(m2[0], 0.75, 1e-6);
    /* targets 3 and 0 (the -1 ends them) against non-targets 1 and 2: 0.4 + 0.6 + 1.1 + 1.3 over 4 */
    const float *ml = rt_ref_value(t.r, gr_graph_find(t.g, "mlv"), &(gr_ttype){0});
    CU_ASSERT_DOUBLE_EQUAL(ml[0], 0.85, 1e-6);
    EXPECT(&t, "mlt", 1, 0, 0, 1);
    done(&t);
}

/* ---- max-pool indices as PyTorch's (val > max || isnan(val) in window order) ---- */

/* A window of -inf and padding: the first element of x in it (not a
 * padded position); two NaNs: the last one.  PyTorch 1.13's indices, 1-D
 * (a (1, 3) window), 2-D and 3-D. */
static void test_max_pool_indices_are_pytorchs_for_inf_and_nan(void)
{
    run_t t;
    RUN(&t, tu_pool_nan_2d, tu_pool_x2);
    EXPECT(&t, "mi", 0, 7, 8, 7);
    EXPECT(&t, "mi1", 0, 2, 4, 7, 8, 11, 12, 14);
    done(&t);
    float x3[27];
    tu_pool_x3(x3);
    RUN(&t, tu_pool_nan_3d, x3);
    EXPECT(&t, "mi", 0, 14, 16, 17, 22, 23, 25, 25);
    done(&t);
}

/* ---- linspace, logspace (runtime/ref_space.c) ---- */

static void test_linspace_and_logspace_give_hand_worked_values(void)
{
    run_t t;
    RUN(&t,
        "%l: f32[5] = aten.linspace.default(0, 1, 5, dtype=f32)\n"
        "%g: f32[3] = aten.logspace.default(0, 2, 3, dtype=f32)\n"
        "%b: f32[4] = aten.logspace.default(0, 3, 4, 2.0)\n"
        "%i: i64[4] = aten.linspace.default(0, 10, 4, dtype=i64)\n"
        "%e: f32[0] = aten.linspace.default(0, -3, 0, dtype=f32)\n"
        "output %l, %g, %b, %i, %e\n",
        NULL);
    EXPECT(&t, "l", 0, 0.25, 0.5, 0.75, 1);
    EXPECT(&t, "g", 1, 10, 100);
    EXPECT(&t, "b", 1, 2, 4, 8);
    EXPECT(&t, "i", 0, 3, 6, 10); /* 10/3 and 10 - 10/3, truncated */
    done(&t);
}

/* linspace bit for bit as PyTorch 1.13 on the CPU (AVX2): its points within whole blocks of 16
 * run from each 8th one (base + k * step), every other point fused (start + i * step, or in the
 * second half end - (n - 1 - i) * step: the middle of 7 points from -2 is 2 - 3 * step, not 0);
 * logspace's exponents in double, its step of the float difference. */
static void test_linspace_and_logspace_are_pytorchs_bit_for_bit(void)
{
    static const float want50[50] = {
        -10, -9.59183693, -9.18367386, -8.77550983, -8.36734676, -7.95918369, -7.55102062, -7.14285707,
        -6.73469353, -6.32653046, -5.91836691, -5.51020384, -5.10204029, -4.69387722, -4.28571415, -3.8775506,
        -3.46938753, -3.06122422, -2.65306091, -2.24489784, -1.83673441, -1.42857122, -1.02040792, -0.612244606,
        -0.204081297, 0.204081982, 0.612245262, 1.02040851, 1.42857182, 1.83673501, 2.24489832, 2.65306163,
        3.06122422, 3.46938753, 3.87755084, 4.28571415, 4.69387722, 5.10204029, 5.51020384, 5.91836739,
        6.32653046, 6.73469353, 7.14285707, 7.55102015, 7.95918369, 8.36734676, 8.77550983, 9.18367386,
        9.59183693, 10};
    static const float want7[7] = {-2, -1.33333325, -0.666666627, -5.96046448e-08, 0.666666627, 1.33333325, 2};
    static const float want13[13] = {0.0133331986, 0.0318959467, 0.076302126, 0.182531491, 0.436655492,
                                     1.04457605,   2.49885535,   5.97781181,  14.3002424,  34.2093277,
                                     81.8362427,   195.770325,   468.325714};
    run_t t;
    RUN(&t,
        "%a: f32[50] = aten.linspace.default(-10, 10, 50)\n"
        "%b: f32[7] = aten.linspace.default(-2, 2, 7)\n"
        "%g: f32[13] = aten.logspace.default(-3.3, 4.7, 13, 3.7)\n"
        "%li: i64[4] = aten.linspace.default(0.5, 2.5, 4, dtype=i64)\n"
        "%gi: i64[4] = aten.logspace.default(0.5, 2.5, 4, 2, dtype=i64)\n"
        "%g1: f32[1] = aten.logspace.default(1.5, 2.5, 1)\n"
        "output %a, %b, %g, %li, %gi, %g1\n",
        NULL);
    const float *a = rt_ref_value(t.r, gr_graph_find(t.g, "a"), &(gr_ttype){0});
    const float *b = rt_ref_value(t.r, gr_graph_find(t.g, "b"), &(gr_ttype){0});
    const float *g = rt_ref_value(t.r, gr_graph_find(t.g, "g"), &(gr_ttype){0});
    for (int i = 0; i < 50; i++)
        CU_ASSERT_EQUAL(a[i], want50[i]);
    for (int i = 0; i < 7; i++)
        CU_ASSERT_EQUAL(b[i], want7[i]);
    for (int i = 0; i < 13; i++)
        CU_ASSERT_EQUAL(g[i], want13[i]);
    EXPECT(&t, "li", 0, 0, 1, 2); /* start and end cast to the integer type first */
    EXPECT(&t, "gi", 1, 1, 2, 4);
    EXPECT(&t, "g1", 31.6227760);
    done(&t);
}

/* logspace of a base <= 0 is still base ** x (PyTorch 1.13's values), never linspace: a negative base
 * alternates its sign at integer exponents, base 0 gives 1 then 0, one step gives base ** start. */
static void test_logspace_of_a_base_not_above_zero_is_a_power(void)
{
    run_t t;
    RUN(&t,
        "%n: f32[4] = aten.logspace.default(0, 3, 4, -2.0)\n"
        "%h: f32[4] = aten.logspace.default(0, 3, 4, -0.5)\n"
        "%z: f32[4] = aten.logspace.default(0, 3, 4, 0.0)\n"
        "%i: i64[4] = aten.logspace.default(0, 3, 4, -2.0, dtype=i64)\n"
        "%n1: f32[1] = aten.logspace.default(1, 3, 1, -2.0)\n"
        "%z1: f32[1] = aten.logspace.default(1, 3, 1, 0.0)\n"
        "output %n, %h, %z, %i, %n1, %z1\n",
        NULL);
    EXPECT(&t, "n", 1, -2, 4, -8);
    EXPECT(&t, "h", 1, -0.5, 0.25, -0.125);
    EXPECT(&t, "z", 1, 0, 0, 0);
    EXPECT(&t, "i", 1, -2, 4, -8);
    EXPECT(&t, "n1", -2);
    EXPECT(&t, "z1", 0);
    done(&t);
}

/* The factories a model's graph holds, against PyTorch 1.13's values: linspace's middle point
 * comes from the second half (1 - 3 * step, not 0), tril_indices / triu_indices list the
 * triangle's (row, column) pairs row-major, clipped by the offset on either side. */
static void test_factories_give_pytorch_values(void)
{
    run_t t;
    RUN(&t,
        "%l: f32[7] = aten.linspace.default(-1, 1, 7, device=\"cpu\", pin_memory=False)\n"
        "%g: f32[5] = aten.logspace.default(0, 1, 5, 2.0)\n"
        "%lo: i64[2, 6] = aten.tril_indices.default(4, 4, -1, device=\"cpu\", pin_memory=False)\n"
        "%up: i64[2, 6] = aten.triu_indices.default(3, 4, 1)\n"
        "%lw: i64[2, 12] = aten.tril_indices.default(3, 5, 2)\n"
        "%ut: i64[2, 9] = aten.triu_indices.default(4, 3, -1)\n"
        "%no: i64[2, 0] = aten.triu_indices.default(2, 2, 5)\n"
        "%s: f32[] = aten.scalar_tensor.default(1)\n"
        "%nf: f32[2, 2] = aten.new_full.default(%s, [2, 2], 7.5)\n"
        "%e: f32[2, 3] = aten.eye.m(2, 3)\n"
        "output %l, %g, %lo, %up, %lw, %ut, %no, %nf, %e\n",
        NULL);
    EXPECT(&t, "l", -1, -0.6666666269302368, -0.3333333134651184, -2.9802322387695312e-08, 0.3333333134651184,
           0.6666666269302368, 1);
    EXPECT(&t, "g", 1, 1.1892070770263672, 1.4142135381698608, 1.6817928552627563, 2);
    EXPECT(&t, "lo", 1, 2, 2, 3, 3, 3, 0, 0, 1, 0, 1, 2);
    EXPECT(&t, "up", 0, 0, 0, 1, 1, 2, 1, 2, 3, 2, 3, 3);
    EXPECT(&t, "lw", 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 4);
    EXPECT(&t, "ut", 0, 0, 0, 1, 1, 1, 2, 2, 3, 0, 1, 2, 0, 1, 2, 1, 2, 2);
    EXPECT(&t, "nf", 7.5, 7.5, 7.5, 7.5);
    EXPECT(&t, "e", 1, 0, 0, 0, 1, 0);
    done(&t);
}

/* ---- Distances (runtime/ref_dist.c) ---- */

static void test_distances_give_hand_worked_values(void)
{
    const float a[] = {0, 0, 3, 4}, o[] = {0, 0}, r[] = {0, 0, 3, 4, 6, 8};
    run_t t;
    RUN(&t,
        "input %a: f32[1, 2, 2]\ninput %o: f32[1, 1, 2]\ninput %r: f32[3, 2]\n"
        "%c2: f32[1, 2, 1] = aten._cdist_forward.default(%a, %o, 2.0, None)\n"
        "%c1: f32[1, 2, 1] = aten._cdist_forward.default(%a, %o, 1.0, None)\n"
        "%ci: f32[1, 2, 1] = aten._cdist_forward.default(%a, %o, inf, None)\n"
        "%c0: f32[1, 2, 1] = aten._cdist_forward.default(%a, %o, 0.0, None)\n"
        "%p: f32[3] = aten._pdist_forward.default(%r)\n"
        "%o2: f32[2, 1, 2] = aten.view.default(%a, [2, 1, 2])\n"
        "%cb: f32[2, 2, 1] = aten._cdist_forward.default(%a, %o2, 2.0, None)\n"
        "output %c2, %c1, %ci, %c0, %p, %cb\n",
        a, o, r);
    EXPECT(&t, "c2", 0, 5);
    EXPECT(&t, "c1", 0, 7);
    EXPECT(&t, "ci", 0, 4);
    EXPECT(&t, "c0", 0, 2);
    EXPECT(&t, "p", 5, 10, 5); /* rows (0, 1), (0, 2), (1, 2) */
    EXPECT(&t, "cb", 0, 5, 5, 0); /* x1's one batch broadcast against x2's two */
    done(&t);
}

static void test_im2col_lays_each_window_in_a_column(void)
{
    const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    run_t t;
    RUN(&t,
        "input %x: f32[1, 1, 3, 3]\n"
        "%c: f32[1, 4, 4] = aten.im2col.default(%x, [2, 2], [1, 1], [0, 0], [1, 1])\n"
        "%p: f32[1, 4, 4] = aten.im2col.default(%x, [2, 2], [1, 1], [1, 1], [2, 2])\n"
        "output %c, %p\n",
        x);
    /* rows: the taps (0,0), (0,1), (1,0), (1,1); columns: the windows at (0,0), (0,1), (1,0), (1,1) */
    EXPECT(&t, "c", 1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9);
    /* padded by one, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1) */
    EXPECT(&t, "p", 0, 0, 0, 5, 0, 0, 4, 6, 0, 2, 0, 8, 1, 3, 7, 9);
    done(&t);
}

static void test_mode_picks_the_most_frequent_then_the_smallest(void)
{
    const float x[] = {3, 1, 3, 2, 1, 3, 1, 2, 2, 1, 5, 4};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 6]\n"
        "%m: (f32[2], i64[2]) = aten.mode.default(%x)\n"
        "%mv: f32[2] = getitem(%m, 0)\n%mi: i64[2] = getitem(%m, 1)\n"
        "%c: (f32[1, 6], i64[1, 6]) = aten.mode.default(%x, 0, True)\n"
        "%cv: f32[1, 6] = getitem(%c, 0)\n%ci: i64[1, 6] = getitem(%c, 1)\n"
        "output %mv, %mi, %cv, %ci\n",
        x);
    EXPECT(&t, "mv", 3, 1); /* 3 three times; 1 and 2 twice each: the smaller */
    EXPECT(&t, "mi", 5, 3); /* the last occurrence */
    EXPECT(&t, "cv", 1, 1, 2, 1, 1, 3); /* columns of two distinct values: the smaller */
    EXPECT(&t, "ci", 1, 0, 1, 1, 0, 0);
    done(&t);
}

static void test_segment_reduce_reduces_each_segment(void)
{
    const float x[] = {1, 5, 2, 4, 3}, ln[] = {2, 0, 3}, of[] = {0, 2, 2, 5}, m[] = {1, 2, 3, 4, 5, 6};
    const float l2[] = {1, 2};
    run_t t;
    RUN(&t,
        "input %x: f32[5]\ninput %ln: i64[3]\ninput %of: i64[4]\ninput %m: f32[3, 2]\ninput %l2: i64[2]\n"
        "%s: f32[3] = aten.segment_reduce.default(%x, \"sum\", lengths=%ln)\n"
        "%mx: f32[3] = aten.segment_reduce.default(%x, \"max\", offsets=%of)\n"
        "%mi: f32[3] = aten.segment_reduce.default(%x, \"min\", lengths=%ln, initial=0)\n"
        "%mn: f32[3] = aten.segment_reduce.default(%x, \"mean\", lengths=%ln)\n"
        "%p: f32[3] = aten.segment_reduce.default(%x, \"prod\", offsets=%of)\n"
        "%a: f32[2, 2] = aten.segment_reduce.default(%m, \"sum\", lengths=%l2)\n"
        "output %s, %mx, %mi, %mn, %p, %a\n",
        x, ln, of, m, l2);
    EXPECT(&t, "s", 6, 0, 9); /* segments {1, 5}, {}, {2, 4, 3} */
    const float *mx = rt_ref_value(t.r, gr_graph_find(t.g, "mx"), &(gr_ttype){0});
    CU_ASSERT(mx[0] == 5 && mx[1] == -INFINITY && mx[2] == 4); /* an empty max: -inf */
    EXPECT(&t, "mi", 0, 0, 0); /* initial 0 takes part, and fills the empty segment */
    EXPECT(&t, "mn", 3, NAN, 3);
    EXPECT(&t, "p", 5, 1, 24);
    EXPECT(&t, "a", 1, 2, 8, 10); /* rows {0} and {1, 2} of each column */
    done(&t);
}

static void test_histogram_counts_with_the_last_bin_closed(void)
{
    const float x[] = {0, 1, 1.5f, 2, 4}, e[] = {0, 1, 2}, w[] = {1, 2, 3, 4, 5};
    run_t t;
    RUN(&t,
        "input %x: f32[5]\ninput %e: f32[3]\ninput %w: f32[5]\n"
        "%h: (f32[2], f32[3]) = aten.histogram.bins_tensor(%x, %e)\n"
        "%hv: f32[2] = getitem(%h, 0)\n"
        "%c: (f32[4], f32[5]) = aten.histogram.bin_ct(%x, 4)\n"
        "%cv: f32[4] = getitem(%c, 0)\n%ce: f32[5] = getitem(%c, 1)\n"
        "%r: (f32[2], f32[3]) = aten.histogram.bin_ct(%x, 2, range=[0.0, 2.0], weight=%w, density=True)\n"
        "%rv: f32[2] = getitem(%r, 0)\n"
        "output %hv, %cv, %ce, %rv\n",
        x, e, w);
    EXPECT(&t, "hv", 1, 3); /* 0 in [0, 1); 1, 1.5 and 2 in [1, 2], the last bin closed; 4 outside */
    EXPECT(&t, "cv", 1, 2, 1, 1); /* edges from the data's extremes 0 and 4 */
    EXPECT(&t, "ce", 0, 1, 2, 3, 4);
    /* weights 1 | 2 + 3 + 4 of total 10, over bins of width 1 */
    EXPECT(&t, "rv", 0.1f, 0.9f);
    done(&t);
}

static void test_embedding_bag_sums_averages_and_maxes_its_bags(void)
{
    const float w[] = {1, 10, 2, 20, 3, 5}, ix[] = {0, 2, 1, 2}, of[] = {0, 2}, ps[] = {1, 2, 3, 4};
    run_t t;
    RUN(&t,
        "input %w: f32[3, 2]\ninput %ix: i64[4]\ninput %of: i64[2]\ninput %ps: f32[4]\n"
        "%s: (f32[2, 2], i64[0], i64[2], i64[2]) = aten._embedding_bag.default(%w, %ix, %of, False, 0, False, %ps)\n"
        "%sv: f32[2, 2] = getitem(%s, 0)\n"
        "%m: (f32[2, 2], i64[4], i64[2], i64[2]) = aten._embedding_bag.default(%w, %ix, %of, False, 1)\n"
        "%mv: f32[2, 2] = getitem(%m, 0)\n%mo: i64[4] = getitem(%m, 1)\n%mb: i64[2] = getitem(%m, 2)\n"
        "%x: (f32[2, 2], i64[4], i64[2], i64[2, 2]) = aten._embedding_bag.default(%w, %ix, %of, False, 2)\n"
        "%xv: f32[2, 2] = getitem(%x, 0)\n%xi: i64[2, 2] = getitem(%x, 3)\n"
        "%p: (f32[2, 2], i64[4], i64[2], i64[2]) = aten._embedding_bag.default(%w, %ix, %of, False, 0, False, None, "
        "False, 2)\n"
        "%pv: f32[2, 2] = getitem(%p, 0)\n"
        "output %sv, %mv, %mo, %mb, %xv, %xi, %pv\n",
        w, ix, of, ps);
    /* bags {0, 2} and {1, 2}: rows (1, 10), (3, 5) and (2, 20), (3, 5) */
    EXPECT(&t, "sv", 1 + 2 * 3, 10 + 2 * 5, 3 * 2 + 4 * 3, 3 * 20 + 4 * 5);
    EXPECT(&t, "mv", 2, 7.5, 2.5, 12.5);
    EXPECT(&t, "mo", 0, 0, 1, 1);
    EXPECT(&t, "mb", 2, 2);
    EXPECT(&t, "xv", 3, 10, 3, 20);
    EXPECT(&t, "xi", 2, 0, 2, 1);
    EXPECT(&t, "pv", 1, 10, 2, 20); /* padding_idx 2: row 2 left out */
    done(&t);
}

static void test_grid_sampler_interpolates_at_grid_points(void)
{
    const float x[] = {1, 2, 3, 4}, g[] = {-1, -1, 1, 1, 0, 0, 2, 0};
    run_t t;
    RUN(&t,
        "input %x: f32[1, 1, 2, 2]\ninput %g: f32[1, 1, 4, 2]\n"
        "%z: f32[1, 1, 1, 4] = aten.grid_sampler_2d.default(%x, %g, 0, 0, True)\n"
        "%b: f32[1, 1, 1, 4] = aten.grid_sampler_2d.default(%x, %g, 0, 1, True)\n"
        "%n: f32[1, 1, 1, 4] = aten.grid_sampler_2d.default(%x, %g, 1, 0, True)\n"
        "%c: f32[1, 1, 1, 4] = aten.grid_sampler_2d.default(%x, %g, 2, 1, True)\n"
        "output %z, %b, %n, %c\n",
        x, g);
    /* corners, the centre, and x = 2 past the right edge at mid-height: half of (2, 4) by zeros, all by border */
    EXPECT(&t, "z", 1, 4, 2.5, 1.5);
    EXPECT(&t, "b", 1, 4, 2.5, 3);
    EXPECT(&t, "n", 1, 4, 1, 0); /* halves round to even: (0.5, 0.5) reads (0, 0), x = 1.5 reads x = 2: outside */
    const float *c = rt_ref_value(t.r, gr_graph_find(t.g, "c"), &(gr_ttype){0});
    CU_ASSERT_DOUBLE_EQUAL(c[0], 1, 1e-6); /* on a pixel a cubic reads the pixel */
    CU_ASSERT_DOUBLE_EQUAL(c[1], 4, 1e-6);
    done(&t);
}

static void test_trilinear_is_bilinear_forms(void)
{
    const float a[] = {1, 2}, w[] = {1, 0, 0, 1, 0, 1, 1, 0}, b[] = {3, 4};
    run_t t;
    RUN(&t,
        "input %a: f32[1, 2]\ninput %w: f32[2, 2, 2]\ninput %b: f32[1, 2]\n"
        "%y: f32[1, 2] = aten._trilinear.default(%a, %w, %b, [1, 3], [0], [1, 2], [2, 3])\n"
        "output %y\n",
        a, w, b);
    EXPECT(&t, "y", 11, 10); /* a I b and a (swap) b */
    done(&t);
}

static void test_matrix_exp_gives_known_exponentials(void)
{
    const float m[] = {1, 0, 0, 2, 0, 1, 0, 0, 0, -1.5707963705062866f, 1.5707963705062866f, 0};
    run_t t;
    RUN(&t,
        "input %m: f32[3, 2, 2]\n%e: f32[3, 2, 2] = aten.linalg_matrix_exp.default(%m)\noutput %e\n", m);
    const float *e = rt_ref_value(t.r, gr_graph_find(t.g, "e"), &(gr_ttype){0});
    const double want[12] = {exp(1.0), 0, 0, exp(2.0), 1, 1, 0, 1, 0, -1, 1, 0}; /* diagonal, nilpotent, a quarter turn */
    for (int k = 0; k < 12; k++)
        CU_ASSERT_DOUBLE_EQUAL(e[k], want[k], 1e-6 * fmax(1, fabs(want[k])));
    done(&t);
}

/* Airy's Ai at tabulated values (mpmath, 30 digits): each of the three methods (the series on [-8, 2], the
 * K_1/3 integral above, the oscillating expansion below), and the bound of Ai(-16): |Ai'| <= 0.26 + 0.57 M^1/4
 * over the input's interval [-16 (1 + u), -16 (1 - u)], times the upload's u 16, then the store. */
static void test_airy_ai_gives_tabulated_values_and_its_derivative_bound(void)
{
    const float x[] = {0, 1, -1, -4, 3, 5, 10, -10, -20}, m[] = {-16};
    run_t t;
    RUN_T(&t, 1,
          "input %x: f32[9]\ninput %m: f32[1]\n%ai: f32[9] = aten.special_airy_ai.default(%x)\n"
          "%am: f32[1] = aten.special_airy_ai.default(%m)\noutput %ai, %am\n",
          x, m);
    EXPECT(&t, "ai", 0.35502805388781724f, 0.13529241631288142f, 0.53556088329235212f, -0.070265532949289515f,
           0.0065911393574607191f, 0.00010834442813607442f, 1.1047532552898686e-10f, 0.040241238486443191f,
           -0.17640612707798469f);
    double am;
    read_value(&t, "am", &am, 1);
    for (int w = 0; w < 2; w++) {
        double e = EU * 16, lip = 0.26 + 0.57 * pow(16 + lam_w(w) * e, 0.25);
        expect_bound(&t, "am", w, (double[]){stored(am, lip * e, w)}, 1);
    }
    done(&t);
}

/* symeig reads the upper triangle by default: [[2, 1], [99, 2]] is [[2, 1], [1, 2]], eigenvalues 1 and 3,
 * eigenvectors (1, -1) / sqrt 2 and (1, 1) / sqrt 2 up to sign (A V = V diag(1, 3) holds either way); upper=False
 * reads [[2, 99], [99, 2]] (-97, 101); without eigenvectors the second result is empty. */
static void test_symeig_reads_the_upper_triangle_by_default(void)
{
    const float a[] = {2, 1, 99, 2};
    run_t t;
    RUN(&t,
        "input %a: f32[2, 2]\n%s: (f32[2], f32[2, 2]) = aten.symeig.default(%a, True)\n"
        "%w: f32[2] = getitem(%s, 0)\n%v: f32[2, 2] = getitem(%s, 1)\n"
        "%l: (f32[2], f32[0]) = aten.symeig.default(%a, False, False)\n%wl: f32[2] = getitem(%l, 0)\n"
        "output %w, %v, %wl\n",
        a);
    EXPECT(&t, "w", 1, 3);
    EXPECT(&t, "wl", -97, 101);
    double V[4], S[4] = {2, 1, 1, 2}, SV[4];
    read_value(&t, "v", V, 4);
    for (int i = 0; i < 4; i++)
        SV[i] = V[i] * (i % 2 ? 3 : 1); /* V diag(1, 3) */
    expect_product(S, V, SV, 2, 2, 2, 1e-6);
    done(&t);
}

/* CTC by enumerating the paths.  Sample 0: target (1), 2 steps: the paths 11, 01, 10 collapse to it,
 * P = p0(1) p1(1) + p0(0) p1(1) + p0(1) p1(0); sample 1: target (1, 1), 3 steps: only 1 0 1 (a blank must
 * part the repeat); sample 1 with 2 steps: no path (inf).  Padded (N, S) and concatenated 1-D targets
 * agree.  The nll's bound: the sum over the steps of the largest bound of a log-probability of l'
 * (track 1: in quadrature), then the store. */
static void test_ctc_loss_sums_the_paths_that_collapse_to_the_target(void)
{
    const double p[3][2][2] = {{{0.4, 0.6}, {0.2, 0.8}}, {{0.3, 0.7}, {0.9, 0.1}}, {{0.5, 0.5}, {0.25, 0.75}}};
    float lp[12];
    for (int i = 0; i < 12; i++)
        lp[i] = (float)log(p[i / 4][i / 2 % 2][i % 2]);
    const float tg[] = {1, 0, 1, 1}, tc[] = {1, 1, 1}, il[] = {2, 3}, il2[] = {2, 2}, tl[] = {1, 2};
    run_t t;
    RUN_T(&t, 1,
          "input %lp: f32[3, 2, 2]\ninput %tg: i64[2, 2]\ninput %tc: i64[3]\ninput %il: i64[2]\ninput %il2: i64[2]\n"
          "input %tl: i64[2]\n%c: (f32[2], f32[2, 3, 5]) = aten._ctc_loss.Tensor(%lp, %tg, %il, %tl)\n"
          "%nll: f32[2] = getitem(%c, 0)\n%la: f32[2, 3, 5] = getitem(%c, 1)\n"
          "%cc: (f32[2], f32[2, 3, 5]) = aten._ctc_loss.Tensor(%lp, %tc, %il, %tl)\n%nc: f32[2] = getitem(%cc, 0)\n"
          "%c2: (f32[2], f32[2, 3, 5]) = aten._ctc_loss.Tensor(%lp, %tg, %il2, %tl)\n%n2: f32[2] = getitem(%c2, 0)\n"
          "output %nll, %la, %nc, %n2\n",
          lp, tg, tc, il, il2, tl);
    double q[12], P0, P1;
    for (int i = 0; i < 12; i++)
        q[i] = exp((double)lp[i]); /* the probabilities the fp32 inputs stand for */
    P0 = q[1] * q[5] + q[0] * q[5] + q[1] * q[4];
    P1 = q[3] * q[6] * q[11];
    EXPECT(&t, "nll", (float)-log(P0), (float)-log(P1));
    EXPECT(&t, "nc", (float)-log(P0), (float)-log(P1));
    EXPECT(&t, "n2", (float)-log(P0), INFINITY);
    /* sample 0's alphas at t = 1 (blank, 1, blank): p0(0) p1(0), (p0(0) + p0(1)) p1(1), p0(1) p1(0) */
    const float *la = rt_ref_value(t.r, gr_graph_find(t.g, "la"), &(gr_ttype){0});
    CU_ASSERT_DOUBLE_EQUAL(la[5], log(q[0] * q[4]), 2e-7);
    CU_ASSERT_DOUBLE_EQUAL(la[6], log((q[0] + q[1]) * q[5]), 2e-7);
    CU_ASSERT_DOUBLE_EQUAL(la[7], log(q[1] * q[4]), 2e-7);
    const float *eb = rt_ref_error(t.r, gr_graph_find(t.g, "la"), 0);
    CU_ASSERT(isinf(eb[10]) && isinf(eb[3])); /* beyond the input length, beyond 2 L + 1 states: unset */
    double d0 = EU * fmax(fabs(lp[0]), fabs(lp[1])), d1 = EU * fmax(fabs(lp[4]), fabs(lp[5]));
    for (int w = 0; w < 2; w++)
        expect_bound(&t, "nll", w, (double[]){stored(-log(P0), w ? sqrt(d0 * d0 + d1 * d1) : d0 + d1, w)}, 1);
    done(&t);
}

/* ldl_solve from ldl_factor's own factors: 1 x 1 pivots with interchanges, two 2 x 2 blocks, and a 2 x 2
 * block with an interchange: S X = B for each; a batch of 1 x 1 systems with one B.  The bound of a 1 x 1 system d x = b (LD and B uploaded,
 * the pivot exact): P = lambda u |d| + 3 2^-24 |d|, mu = P / |d|, |dx| <= (P |x| + lambda u |b|) / |d| / (1 - mu). */
static void test_ldl_solve_solves_with_ldl_factors_pivots(void)
{
    const float s3[] = {0, 1, 2, 1, 0, 3, 2, 3, 4}, s4[] = {1, 5, 0, 2, 5, 1, 3, 0, 0, 3, 0.5f, 7, 2, 0, 7, 1};
    const float sx[] = {0, 0, 1, 0, 2, 0, 1, 0, 0}, b3[] = {1, 2, 3, 4, 5, 6}, b4[] = {1, -2, 3, 0.5f};
    const float d[] = {4}, one[] = {1}, two[] = {2}, dd[] = {4, -8}, ones[] = {1, 1};
    run_t t;
    RUN_T(&t, 1,
          "input %s3: f32[3, 3]\ninput %s4: f32[4, 4]\ninput %sx: f32[3, 3]\ninput %b3: f32[3, 2]\n"
          "input %b4: f32[4, 1]\ninput %d: f32[1, 1]\ninput %one: i32[1]\ninput %two: f32[1, 1]\n"
          "input %dd: f32[2, 1, 1]\ninput %ones: i32[2, 1]\n"
          "%f3: (f32[3, 3], i32[3], i32[]) = aten.linalg_ldl_factor_ex.default(%s3)\n"
          "%l3: f32[3, 3] = getitem(%f3, 0)\n%p3: i32[3] = getitem(%f3, 1)\n"
          "%x3: f32[3, 2] = aten.linalg_ldl_solve.default(%l3, %p3, %b3)\n"
          "%f4: (f32[4, 4], i32[4], i32[]) = aten.linalg_ldl_factor_ex.default(%s4)\n"
          "%l4: f32[4, 4] = getitem(%f4, 0)\n%p4: i32[4] = getitem(%f4, 1)\n"
          "%x4: f32[4, 1] = aten.linalg_ldl_solve.default(%l4, %p4, %b4)\n"
          "%fx: (f32[3, 3], i32[3], i32[]) = aten.linalg_ldl_factor_ex.default(%sx)\n"
          "%lx: f32[3, 3] = getitem(%fx, 0)\n%px: i32[3] = getitem(%fx, 1)\n"
          "%xx: f32[3, 2] = aten.linalg_ldl_solve.default(%lx, %px, %b3)\n"
          "%x1: f32[1, 1] = aten.linalg_ldl_solve.default(%d, %one, %two)\n"
          "%xb: f32[2, 1, 1] = aten.linalg_ldl_solve.default(%dd, %ones, %two)\n"
          "output %p3, %p4, %px, %x3, %x4, %xx, %x1, %xb\n",
          s3, s4, sx, b3, b4, d, one, two, dd, ones);
    EXPECT(&t, "p3", 3, 2, 3);    /* the kinds of pivot each matrix exercises */
    EXPECT(&t, "p4", -2, -2, -4, -4);
    EXPECT(&t, "px", -3, -3, 3);
    double S3[9], S4[16], SX[9], B3[6], B4[4], X[16];
    for (int i = 0; i < 16; i++) {
        if (i < 9)
            S3[i] = s3[i], SX[i] = sx[i];
        if (i < 6)
            B3[i] = b3[i];
        if (i < 4)
            B4[i] = b4[i];
        S4[i] = s4[i];
    }
    read_value(&t, "x3", X, 6);
    expect_product(S3, X, B3, 3, 3, 2, 1e-5);
    read_value(&t, "x4", X, 4);
    expect_product(S4, X, B4, 4, 4, 1, 1e-5);
    read_value(&t, "xx", X, 6);
    expect_product(SX, X, B3, 3, 3, 2, 1e-5);
    EXPECT(&t, "x1", 0.5f);
    EXPECT(&t, "xb", 0.5f, -0.25f); /* B's batch broadcast over LD's */
    for (int w = 0; w < 2; w++) {
        double L = lam_w(w), P = L * EU * 4 + 3 * 0x1p-24 * 4, mu = P / 4;
        expect_bound(&t, "x1", w, (double[]){stored(0.5, (P * 0.5 + L * EU * 2) / 4 / (1 - mu) / L, w)}, 1);
    }
    done(&t);
}

/* lstsq per driver, by hand: a 2 x 2 system ([[2, 1], [1, 3]] x = (3, 5): x = (0.8, 1.4)); a line through
 * (0, 1), (1, 2), (2, 4) (x = (5/6, 3/2), residual 1/6, singular values sqrt(4 +- sqrt 10) from A^T A =
 * [[3, 3], [3, 5]]); the minimum-norm solution of x1 + x2 = 2 (1, 1); a rank-1 A (x1 + 2 x2 = 1 at
 * minimum norm: (0.2, 0.4), no residuals for gelsd then).  The square system's solution is bounded and
 * its rank exact, the line's by Wedin's rule; residuals are not validated (infinite). */
static void test_lstsq_gives_each_drivers_results(void)
{
    const float a2[] = {2, 1, 1, 3}, b2[] = {3, 5}, al[] = {1, 0, 1, 1, 1, 2}, bl[] = {1, 2, 4}, a1[] = {1, 1},
                b1[] = {2}, ar[] = {1, 2, 2, 4, 3, 6}, br[] = {1, 2, 3};
    run_t t;
    RUN_T(&t, 1,
          "input %a2: f32[2, 2]\ninput %b2: f32[2, 1]\ninput %al: f32[3, 2]\ninput %bl: f32[3, 1]\n"
          "input %a1: f32[1, 2]\ninput %b1: f32[1, 1]\ninput %ar: f32[3, 2]\ninput %br: f32[3]\n"
          "%q: (f32[2, 1], f32[0], i64[], f32[0]) = aten.linalg_lstsq.default(%a2, %b2)\n"
          "%qx: f32[2, 1] = getitem(%q, 0)\n%qk: i64[] = getitem(%q, 2)\n"
          "%l: (f32[2, 1], f32[1], i64[], f32[2]) = aten.linalg_lstsq.default(%al, %bl, driver=\"gelsd\")\n"
          "%lx: f32[2, 1] = getitem(%l, 0)\n%lr: f32[1] = getitem(%l, 1)\n%lk: i64[] = getitem(%l, 2)\n"
          "%ls: f32[2] = getitem(%l, 3)\n"
          "%g: (f32[2, 1], f32[1], i64[0], f32[0]) = aten.linalg_lstsq.default(%al, %bl, driver=\"gels\")\n"
          "%gr: f32[1] = getitem(%g, 1)\n"
          "%u: (f32[2, 1], f32[0], i64[], f32[0]) = aten.linalg_lstsq.default(%a1, %b1, driver=\"gelsy\")\n"
          "%ux: f32[2, 1] = getitem(%u, 0)\n"
          "%r: (f32[2], f32[0], i64[], f32[2]) = aten.linalg_lstsq.default(%ar, %br, driver=\"gelss\")\n"
          "%rx: f32[2] = getitem(%r, 0)\n%rk: i64[] = getitem(%r, 2)\n"
          "output %qx, %qk, %lx, %lr, %lk, %ls, %gr, %ux, %rx, %rk\n",
          a2, b2, al, bl, a1, b1, ar, br);
    /* fp32 LAPACK (QR, SVD) on matrices of condition number below 30: 1e-5 */
    const char *names[] = {"qx", "lx", "lr", "ls", "gr", "ux", "rx"};
    const double want[][2] = {{0.8, 1.4}, {5.0 / 6, 1.5}, {1.0 / 6}, {sqrt(4 + sqrt(10)), sqrt(4 - sqrt(10))},
                              {1.0 / 6}, {1, 1}, {0.2, 0.4}};
    const int cnt[] = {2, 2, 1, 2, 1, 2, 2};
    for (int i = 0; i < 7; i++) {
        int n = cnt[i];
        double v[2];
        read_value(&t, names[i], v, n);
        for (int j = 0; j < n; j++)
            CU_ASSERT_DOUBLE_EQUAL(v[j], want[i][j], 1e-5);
    }
    EXPECT(&t, "qk", 2);
    EXPECT(&t, "lk", 2);
    EXPECT(&t, "rk", 1);
    for (int w = 0; w < 2; w++) {
        const float *qx = rt_ref_error(t.r, gr_graph_find(t.g, "qx"), w);
        const float *qk = rt_ref_error(t.r, gr_graph_find(t.g, "qk"), w);
        const float *lr = rt_ref_error(t.r, gr_graph_find(t.g, "lr"), w);
        CU_ASSERT(isfinite(qx[0]) && qx[0] > 0 && isfinite(qx[1]) && qk[0] == 0);
        CU_ASSERT(isinf(lr[0]));
    }
    /* The line's bound (Wedin) covers the least-squares solution of its uploads' extreme perturbations:
     * each a_ij (1 +- u), b_i (1 +- u) in 64 sign patterns, solved by the normal equations in double. */
    const float *lx = rt_ref_value(t.r, gr_graph_find(t.g, "lx"), &(gr_ttype){0});
    const float *lb = rt_ref_error(t.r, gr_graph_find(t.g, "lx"), 0);
    CU_ASSERT_FATAL(isfinite(lb[0]) && isfinite(lb[1]));
    for (int pat = 0; pat < 64; pat++) {
        double A[6], b[3], g[4] = {0}, h[2] = {0};
        for (int i = 0; i < 6; i++)
            A[i] = al[i] * (1 + ((pat >> i) & 1 ? EU : -EU));
        for (int i = 0; i < 3; i++)
            b[i] = bl[i] * (1 + ((pat >> (i + 3)) & 1 ? -EU : EU));
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                h[j] += A[i * 2 + j] * b[i];
                for (int l = 0; l < 2; l++)
                    g[j * 2 + l] += A[i * 2 + j] * A[i * 2 + l];
            }
        double det = g[0] * g[3] - g[1] * g[2], x0 = (g[3] * h[0] - g[1] * h[1]) / det;
        double x1 = (g[0] * h[1] - g[2] * h[0]) / det;
        CU_ASSERT(fabs(x0 - lx[0]) <= lb[0] && fabs(x1 - lx[1]) <= lb[1]);
    }
    done(&t);
}

int main(void)
{
    static const tu_test tests[] = {
        {"sort is stable, puts NaN last and runs along any dim",
         test_sort_is_stable_puts_nan_last_and_runs_along_any_dim},
        {"topk, kthvalue, argmax and max.dim pick as PyTorch", test_topk_kthvalue_argmax_and_max_dim_pick_as_pytorch},
        {"topk and kthvalue indices cover either order of ties", test_topk_and_kthvalue_indices_cover_either_order_of_ties},
        {"cumprod runs along any dim and integers stay exact", test_cumprod_runs_along_any_dim_and_integers_stay_exact},
        {"sort bounds cover a swap of close values", test_sort_bounds_cover_a_swap_of_close_values},
        {"flip, roll, diagonal and diag move elements", test_flip_roll_diagonal_and_diag_move_elements},
        {"gather, take, index_select and index pick by index",
         test_gather_take_index_select_and_index_pick_by_index},
        {"a negative index is refused by index_select, add and copy, not index_fill",
         test_a_negative_index_is_refused_by_index_select_add_and_copy_not_index_fill},
        {"index with dims apart puts the index dims first", test_index_with_dims_apart_puts_the_index_dims_first},
        {"scatters write and reduce at their places", test_scatters_write_and_reduce_at_their_places},
        {"index_put, index_add and slice scatters write their places",
         test_index_put_index_add_and_slice_scatters_write_their_places},
        {"norms, products and counts give hand-worked values", test_norms_products_and_counts_give_hand_worked_values},
        {"median, aminmax and running extremes pick as PyTorch",
         test_median_aminmax_and_running_extremes_pick_as_pytorch},
        {"bool masks index and put their true places", test_bool_masks_index_and_put_their_true_places},
        {"bounds of norms, gathers and scatter_adds follow their rules",
         test_bounds_of_norms_gathers_and_scatter_adds_follow_their_rules},
        {"inverse, solve and determinants satisfy their identities",
         test_inverse_solve_and_determinants_satisfy_their_identities},
        {"factorizations reproduce their matrix", test_factorizations_reproduce_their_matrix},
        {"bounds of determinant and inverse follow their rules",
         test_bounds_of_determinant_and_inverse_follow_their_rules},
        {"data-dependent ops give hand-worked values", test_data_dependent_ops_give_hand_worked_values},
        {"diagonal embeds and masked_scatter write their places",
         test_diagonal_embeds_and_masked_scatter_write_their_places},
        {"bad arguments are refused naming the line", test_bad_arguments_are_refused_naming_the_line},
        {"special functions give known values and identities", test_special_functions_give_known_values_and_identities},
        {"windows, running logsumexp, renorm and triangular solves",
         test_windows_running_logsumexp_renorm_and_triangular_solves},
        {"factor forms solve and rebuild their matrix", test_factor_forms_solve_and_rebuild_their_matrix},
        {"float bits, histogram and incomplete gamma give known values",
         test_float_bits_histogram_and_incomplete_gamma_give_known_values},
        {"orthogonal polynomials give hand-worked values", test_orthogonal_polynomials_give_hand_worked_values},
        {"bincount and weight_norm give hand-worked values", test_bincount_and_weight_norm_give_hand_worked_values},
        {"rearrangements and matrix-vector products give hand-worked values",
         test_rearrangements_and_matrix_vector_products_give_hand_worked_values},
        {"likelihood losses give hand-worked values", test_likelihood_losses_give_hand_worked_values},
        {"transposed and 3-D convolutions give hand-worked values",
         test_transposed_and_3d_convolutions_give_hand_worked_values},
        {"unpooling and interpolation give hand-worked values",
         test_unpooling_and_interpolation_give_hand_worked_values},
        {"3-D pooling gives hand-worked values", test_3d_pooling_gives_hand_worked_values},
        {"margin losses give hand-worked values", test_margin_losses_give_hand_worked_values},
        {"linspace and logspace give hand-worked values", test_linspace_and_logspace_give_hand_worked_values},
        {"factories give PyTorch's values", test_factories_give_pytorch_values},
        {"linspace and logspace are PyTorch's bit for bit", test_linspace_and_logspace_are_pytorchs_bit_for_bit},
        {"logspace of a base not above zero is a power", test_logspace_of_a_base_not_above_zero_is_a_power},
        {"max-pool indices are PyTorch's for -inf and NaN", test_max_pool_indices_are_pytorchs_for_inf_and_nan},
        {"distances give hand-worked values", test_distances_give_hand_worked_values},
        {"im2col lays each window in a column", test_im2col_lays_each_window_in_a_column},
        {"mode picks the most frequent, then the smallest", test_mode_picks_the_most_frequent_then_the_smallest},
        {"segment_reduce reduces each segment", test_segment_reduce_reduces_each_segment},
        {"histogram counts with the last bin closed", test_histogram_counts_with_the_last_bin_closed},
        {"embedding_bag sums, averages and maxes its bags", test_embedding_bag_sums_averages_and_maxes_its_bags},
        {"grid_sampler interpolates at grid points", test_grid_sampler_interpolates_at_grid_points},
        {"trilinear is bilinear forms", test_trilinear_is_bilinear_forms},
        {"matrix_exp gives known exponentials", test_matrix_exp_gives_known_exponentials},
        {"airy_ai gives tabulated values and its derivative bound",
         test_airy_ai_gives_tabulated_values_and_its_derivative_bound},
        {"symeig reads the upper triangle by default", test_symeig_reads_the_upper_triangle_by_default},
        {"ctc_loss sums the paths that collapse to the target",
         test_ctc_loss_sums_the_paths_that_collapse_to_the_target},
        {"ldl_solve solves with ldl_factor's pivots", test_ldl_solve_solves_with_ldl_factors_pivots},
        {"lstsq gives each driver's results", test_lstsq_gives_each_drivers_results},
        {NULL, NULL},
    };
    return tu_run("reference ops", tests);
}
