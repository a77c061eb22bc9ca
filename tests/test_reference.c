/* test_reference.c: the reference executor (runtime/ref_*.c) op by op
 * against values worked out by hand, its errors, safetensors files
 * (runtime/safetensors.c) and each corruption they can have, the exported
 * traces against PyTorch's own outputs, and validation of a program whose
 * graph is a full graph (runtime/validate.c). */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "testutil.h"

static char err[2048];

/* ---- Running a graph ---- */

typedef struct {
    gr_graph *g;
    rt_ref *r;
} run_t;

/* Parse text as "t.txt", set its inputs in order from in[], run. */
static int run_text(run_t *t, const char *text, const float *const *in)
{
    memset(t, 0, sizeof *t);
    err[0] = 0;
    if (!(t->g = gr_graph_parse(text, "t.txt", err, sizeof err)))
        return -1;
    if (!(t->r = rt_ref_new(t->g, err, sizeof err)))
        return -1;
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

#define RUN(t, text, ...)                                                                                              \
    do {                                                                                                               \
        const float *ins_[] = {__VA_ARGS__};                                                                           \
        int rc_ = run_text(t, text, ins_);                                                                             \
        if (rc_)                                                                                                       \
            fprintf(stderr, "\n    %s\n", err);                                                                        \
        CU_ASSERT_EQUAL_FATAL(rc_, 0);                                                                                 \
    } while (0)

/* The text must fail (at parse, rt_ref_new or run) with exactly msg. */
static void expect_fail(const char *text, const float *const *in, const char *msg)
{
    run_t t;
    int rc = run_text(&t, text, in);
    CU_ASSERT_EQUAL(rc, -1);
    if (strcmp(err, msg) != 0)
        fprintf(stderr, "\n    expected '%s'\n    got      '%s'\n", msg, err);
    CU_ASSERT_STRING_EQUAL(err, msg);
    done(&t);
}

/* Output i (by name) equals want[] (n elements) to fp32 rounding; NaN
 * and infinities must match exactly. */
static void expect_value(run_t *t, const char *name, const float *want, int64_t n)
{
    int v = gr_graph_find(t->g, name);
    CU_ASSERT_FATAL(v >= 0);
    gr_ttype ty;
    const float *got = rt_ref_value(t->r, v, &ty);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL_FATAL(gr_ttype_numel(&ty), n);
    for (int64_t i = 0; i < n; i++) {
        int ok = isnan(want[i]) ? isnan(got[i])
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

static const float iota24[24] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};

/* ---- Elementwise ---- */

static void test_add_sub_mul_div_broadcast_with_alpha_and_scalars(void)
{
    const float x[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30}, c[] = {2, -1};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %b: f32[3]\ninput %c: f32[2, 1]\n"
        "%add: f32[2, 3] = aten.add.Tensor(%x, %b, alpha=2)\n"
        "%sub: f32[2, 3] = aten.sub.Tensor(%x, %b)\n"
        "%rsub: f32[2, 3] = aten.rsub.Scalar(%x, 1)\n"
        "%mul: f32[2, 3] = aten.mul.Tensor(%x, %c)\n"
        "%div: f32[2, 3] = aten.div.Scalar(%x, 4)\n"
        "%divt: f32[2, 3] = aten.div.Tensor(%b, %c)\n"
        "%adds: f32[2, 3] = aten.add.Scalar(%x, 0.5)\n"
        "%mx: f32[2, 3] = aten.maximum.default(%x, %c)\n"
        "%mn: f32[2, 3] = aten.minimum.default(%x, %c)\n"
        "%pw: f32[2, 3] = aten.pow.Tensor_Scalar(%x, 2)\n"
        "output %add, %sub, %rsub, %mul, %div, %divt, %adds, %mx, %mn, %pw\n",
        x, b, c);
    EXPECT(&t, "add", 21, 42, 63, 24, 45, 66);
    EXPECT(&t, "sub", -9, -18, -27, -6, -15, -24);
    EXPECT(&t, "rsub", 0, -1, -2, -3, -4, -5);
    EXPECT(&t, "mul", 2, 4, 6, -4, -5, -6);
    EXPECT(&t, "div", 0.25, 0.5, 0.75, 1, 1.25, 1.5);
    EXPECT(&t, "divt", 5, 10, 15, -10, -20, -30);
    EXPECT(&t, "adds", 1.5, 2.5, 3.5, 4.5, 5.5, 6.5);
    EXPECT(&t, "mx", 2, 2, 3, 4, 5, 6);
    EXPECT(&t, "mn", 1, 2, 2, -1, -1, -1);
    EXPECT(&t, "pw", 1, 4, 9, 16, 25, 36);
    done(&t);
}

static void test_integer_tensors_promote_divide_and_compare(void)
{
    const float i[] = {-7, -2, 3, 8};
    run_t t;
    RUN(&t,
        "input %i: i64[4]\n"
        "%half: f32[4] = aten.mul.Scalar(%i, 0.5)\n"
        "%tdiv: f32[4] = aten.div.Scalar(%i, 2)\n"
        "%floor: i64[4] = aten.div.Scalar_mode(%i, 2, rounding_mode=\"floor\")\n"
        "%trunc: i64[4] = aten.div.Scalar_mode(%i, 2, rounding_mode=\"trunc\")\n"
        "%inc: i64[4] = aten.add.Scalar(%i, 1)\n"
        "%gt: bool[4] = aten.gt.Scalar(%i, 0)\n"
        "%not: bool[4] = aten.logical_not.default(%gt)\n"
        "%bnot: i64[4] = aten.bitwise_not.default(%i)\n"
        "%bnotb: bool[4] = aten.bitwise_not.default(%gt)\n"
        "%ne: bool[4] = aten.ne.Scalar(%i, 3)\n"
        "%le: bool[4] = aten.le.Scalar(%i, 3)\n"
        "%lt: bool[4] = aten.lt.Scalar(%i, 3)\n"
        "%eq: bool[4] = aten.eq.Scalar(%i, -2)\n"
        "%ge: bool[4] = aten.ge.Tensor(%i, %half)\n"
        "%any: bool[] = aten.any.default(%gt)\n"
        "%gt2: bool[2, 2] = aten.view.default(%gt, [2, 2])\n"
        "%anyd: bool[2] = aten.any.dim(%gt2, 1)\n"
        "%sum: i64[] = aten.sum.default(%i)\n"
        "%f: f32[4] = aten._to_copy.default(%i, dtype=f32)\n"
        "output %half, %tdiv, %floor, %trunc, %inc, %not, %bnot, %bnotb, %ne, %le, %lt, %eq, %ge, %any, %anyd, "
        "%sum, %f\n",
        i);
    EXPECT(&t, "half", -3.5, -1, 1.5, 4);
    EXPECT(&t, "tdiv", -3.5, -1, 1.5, 4);
    EXPECT(&t, "floor", -4, -1, 1, 4);
    EXPECT(&t, "trunc", -3, -1, 1, 4);
    EXPECT(&t, "inc", -6, -1, 4, 9);
    EXPECT(&t, "not", 1, 1, 0, 0);
    EXPECT(&t, "bnot", 6, 1, -4, -9);
    EXPECT(&t, "bnotb", 1, 1, 0, 0);
    EXPECT(&t, "ne", 1, 1, 0, 1);
    EXPECT(&t, "le", 1, 1, 1, 0);
    EXPECT(&t, "lt", 1, 1, 0, 0);
    EXPECT(&t, "eq", 0, 1, 0, 0);
    EXPECT(&t, "ge", 0, 0, 1, 1);
    EXPECT(&t, "any", 1);
    EXPECT(&t, "anyd", 0, 1);
    EXPECT(&t, "sum", 2);
    EXPECT(&t, "f", -7, -2, 3, 8);
    /* integer results keep int64 data */
    gr_ttype ty;
    const int64_t *fl = rt_ref_value_i64(t.r, gr_graph_find(t.g, "floor"), &ty);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fl);
    CU_ASSERT_EQUAL(ty.dtype, GR_I64);
    CU_ASSERT_EQUAL(fl[0], -4);
    CU_ASSERT_PTR_NULL(rt_ref_value_i64(t.r, gr_graph_find(t.g, "half"), NULL));
    done(&t);
}

static void test_unary_functions_give_known_values(void)
{
    const float x[] = {0, 1, -1, 4};
    run_t t;
    RUN(&t,
        "input %x: f32[4]\n"
        "%exp: f32[4] = aten.exp.default(%x)\n"
        "%log: f32[4] = aten.log.default(%x)\n"
        "%sqrt: f32[4] = aten.sqrt.default(%x)\n"
        "%rsqrt: f32[4] = aten.rsqrt.default(%x)\n"
        "%tanh: f32[4] = aten.tanh.default(%x)\n"
        "%sig: f32[4] = aten.sigmoid.default(%x)\n"
        "%relu: f32[4] = aten.relu.default(%x)\n"
        "%gelu: f32[4] = aten.gelu.default(%x)\n"
        "%gelut: f32[4] = aten.gelu.default(%x, approximate=\"tanh\")\n"
        "%silu: f32[4] = aten.silu.default(%x)\n"
        "%neg: f32[4] = aten.neg.default(%x)\n"
        "%sin: f32[4] = aten.sin.default(%x)\n"
        "%cos: f32[4] = aten.cos.default(%x)\n"
        "%clamp: f32[4] = aten.clamp.default(%x, -0.5, 2)\n"
        "%cmin: f32[4] = aten.clamp_min.default(%x, 0.5)\n"
        "%cmax: f32[4] = aten.clamp.default(%x, max=0)\n"
        "output %exp, %log, %sqrt, %rsqrt, %tanh, %sig, %relu, %gelu, %gelut, %silu, %neg, %sin, %cos, %clamp, "
        "%cmin, %cmax\n",
        x);
    EXPECT(&t, "exp", 1, 2.71828183, 0.367879441, 54.59815);
    EXPECT(&t, "log", -INFINITY, 0, NAN, 1.38629436);
    EXPECT(&t, "sqrt", 0, 1, NAN, 2);
    EXPECT(&t, "rsqrt", INFINITY, 1, NAN, 0.5);
    EXPECT(&t, "tanh", 0, 0.761594156, -0.761594156, 0.9993293);
    EXPECT(&t, "sig", 0.5, 0.731058579, 0.268941421, 0.98201379);
    EXPECT(&t, "relu", 0, 1, 0, 4);
    EXPECT(&t, "gelu", 0, 0.841344746, -0.158655254, 3.99987332);
    EXPECT(&t, "gelut", 0, 0.841191991, -0.158808009, 3.99992975);
    EXPECT(&t, "silu", 0, 0.731058579, -0.268941421, 3.92805516);
    EXPECT(&t, "neg", 0, -1, 1, -4);
    EXPECT(&t, "sin", 0, 0.841470985, -0.841470985, -0.756802495);
    EXPECT(&t, "cos", 1, 0.540302306, 0.540302306, -0.653643621);
    EXPECT(&t, "clamp", 0, 1, -0.5, 2);
    EXPECT(&t, "cmin", 0.5, 1, 0.5, 4);
    EXPECT(&t, "cmax", 0, 0, -1, 0);
    done(&t);
}

/* ---- Matrix products ---- */

/* Issue 14: the activations and math the compiler decomposes, against
 * PyTorch's values (torch 1.13, float32). */
static void test_activations_with_parameters_give_pytorchs_values(void)
{
    const float x[] = {-2, -0.5f, 0, 0.75f, 3, 25};
    run_t t;
    RUN(&t,
        "input %x: f32[6]\n"
        "%ht: f32[6] = aten.hardtanh.default(%x, -1, 2)\n"
        "%r6: f32[6] = aten.relu6.default(%x)\n"
        "%lk: f32[6] = aten.leaky_relu.default(%x, 0.1)\n"
        "%el: f32[6] = aten.elu.default(%x, 1.5)\n"
        "%ce: f32[6] = aten.celu.default(%x, 2.0)\n"
        "%se: f32[6] = aten.selu.default(%x)\n"
        "%th: f32[6] = aten.threshold.default(%x, 0.5, -7.0)\n"
        "%hs: f32[6] = aten.hardsigmoid.default(%x)\n"
        "%hw: f32[6] = aten.hardswish.default(%x)\n"
        "%sp: f32[6] = aten.softplus.default(%x, 2.0, 10.0)\n"
        "%mi: f32[6] = aten.mish.default(%x)\n"
        "%fr: f32[6] = aten.frac.default(%x)\n"
        "%hk: f32[6] = aten.hardshrink.default(%x, 0.6)\n"
        "%sk: f32[6] = aten.softshrink.default(%x, 0.6)\n"
        "%ls: (f32[6], f32[6]) = aten.log_sigmoid_forward.default(%x)\n"
        "%l0: f32[6] = getitem(%ls, 0)\n"
        "%l1: f32[6] = getitem(%ls, 1)\n"
        "output %ht, %r6, %lk, %el, %ce, %se, %th, %hs, %hw, %sp, %mi, %fr, %hk, %sk, %l0, %l1\n",
        x);
    EXPECT(&t, "ht", -1, -0.5f, 0, 0.75f, 2, 2);
    EXPECT(&t, "r6", 0, 0, 0, 0.75f, 3, 6);
    EXPECT(&t, "lk", -0.2f, -0.05f, 0, 0.75f, 3, 25);
    EXPECT(&t, "el", -1.29699707f, -0.590204f, 0, 0.75f, 3, 25);
    EXPECT(&t, "ce", -1.2642411f, -0.442398429f, 0, 0.75f, 3, 25);
    EXPECT(&t, "se", -1.52016652f, -0.691758156f, 0, 0.788025737f, 3.15210295f, 26.2675247f);
    EXPECT(&t, "th", -7, -7, -7, 0.75f, 3, 25);
    EXPECT(&t, "hs", 0.166666672f, 0.416666657f, 0.5f, 0.625f, 1, 1);
    EXPECT(&t, "hw", -0.333333343f, -0.208333328f, 0, 0.46875f, 3, 25);
    EXPECT(&t, "sp", 0.00907496456f, 0.156630844f, 0.346573591f, 0.850706637f, 3.00123787f, 25);
    EXPECT(&t, "mi", -0.252501458f, -0.22074376f, 0, 0.610018373f, 2.98653507f, 25);
    EXPECT(&t, "fr", 0, -0.5f, 0, 0.75f, 0, 0);
    EXPECT(&t, "hk", -2, 0, 0, 0.75f, 3, 25);
    EXPECT(&t, "sk", -1.4f, 0, 0, 0.15f, 2.4f, 24.4f);
    EXPECT(&t, "l0", -2.12692809f, -0.974076986f, -0.693147182f, -0.38687101f, -0.048587352f, -1.38879437e-11f);
    EXPECT(&t, "l1", 0.135335281f, 0.606530666f, 1, 0.472366542f, 0.0497870669f, 1.38879437e-11f);
    done(&t);
}

static void test_math_functions_give_pytorchs_values(void)
{
    const float z[] = {0.1f, 0.5f, -0.3f, 0.9f, 2, 0}, a[] = {1, 2, 10, 5000, 0.5f, 1.5f},
                p[] = {0.1f, 0.5f, 0.95f, 0, 1, 0.3f}, pm[] = {-0.4f, 0, 0.45f, -0.5f, 0.5f, -0.2f};
    run_t t;
    RUN(&t,
        "input %z: f32[6]\ninput %a: f32[6]\ninput %p: f32[6]\ninput %pm: f32[6]\n"
        "%an: f32[6] = aten.atan.default(%z)\n"
        "%sn: f32[6] = aten.asin.default(%p)\n"
        "%cs: f32[6] = aten.acos.default(%p)\n"
        "%a2: f32[6] = aten.atan2.default(%z, %pm)\n"
        "%ec: f32[6] = aten.erfc.default(%z)\n"
        "%ag: f32[6] = aten.angle.default(%z)\n"
        "%en: f32[6] = aten.special_entr.default(%z)\n"
        "%hy: f32[6] = aten.hypot.default(%z, %pm)\n"
        "%fd: f32[6] = aten.floor_divide.default(%z, %pm)\n"
        "%z7: f32[6] = aten.mul.Tensor(%z, 7.77)\n"
        "%rd: f32[6] = aten.round.decimals(%z7, decimals=1)\n"
        "%l2: f32[6] = aten.log2.default(%z)\n"
        "%e2: f32[6] = aten.exp2.default(%z)\n"
        "%tn: f32[6] = aten.tan.default(%z)\n"
        "%sh: f32[6] = aten.sinh.default(%z)\n"
        "%ch: f32[6] = aten.cosh.default(%z)\n"
        "%as: f32[6] = aten.asinh.default(%z)\n"
        "%at: f32[6] = aten.atanh.default(%z)\n"
        "%sc: f32[6] = aten.sinc.default(%z)\n"
        "%ac: f32[6] = aten.acosh.default(%a)\n"
        "%lg: f32[6] = aten.logit.default(%p, 0.2)\n"
        "%nn: bool[6] = aten.isnan.default(%l2)\n"
        "output %l2, %e2, %tn, %sh, %ch, %as, %at, %sc, %ac, %lg, %nn, %an, %sn, %cs, %a2, "
        "%ec, %ag, %en, %hy, %fd, %rd\n",
        z, a, p, pm);
    EXPECT(&t, "an", 0.0996686518f, 0.463647604f, -0.291456819f, 0.732815087f, 1.10714877f, 0);
    EXPECT(&t, "sn", 0.100167423f, 0.52359879f, 1.25323582f, 0, 1.57079637f, 0.304692656f);
    EXPECT(&t, "cs", 1.47062886f, 1.04719758f, 0.317560464f, 1.57079637f, 0, 1.26610363f);
    EXPECT(&t, "a2", 2.89661407f, 1.57079637f, -0.588002622f, 2.07789469f, 1.3258177f, 3.14159274f);
    EXPECT(&t, "ec", 0.887537062f, 0.479500115f, 1.32862675f, 0.2030918f, 0.00467773527f, 1);
    EXPECT(&t, "ag", 0, 0, 3.14159274f, 0, 0, 0);
    EXPECT(&t, "en", 0.23025851f, 0.346573591f, -INFINITY, 0.0948244855f, -1.38629436f, 0);
    EXPECT(&t, "hy", 0.41231057f, 0.5f, 0.540832698f, 1.02956295f, 2.06155276f, 0.2f);
    EXPECT(&t, "fd", -1, INFINITY, -1, -2, 4, 0);
    EXPECT(&t, "rd", 0.8f, 3.9f, -2.3f, 7, 15.5f, 0);
    EXPECT(&t, "l2", -3.32192802f, -1, NAN, -0.152003139f, 1, -INFINITY);
    EXPECT(&t, "e2", 1.07177341f, 1.41421354f, 0.812252402f, 1.86606598f, 4, 1);
    EXPECT(&t, "tn", 0.100334674f, 0.546302497f, -0.309336275f, 1.26015818f, -2.18503976f, 0);
    EXPECT(&t, "sh", 0.100166753f, 0.521095276f, -0.304520309f, 1.02651668f, 3.62686038f, 0);
    EXPECT(&t, "ch", 1.00500417f, 1.12762594f, 1.04533851f, 1.4330864f, 3.76219583f, 1);
    EXPECT(&t, "as", 0.0998340771f, 0.481211841f, -0.295673072f, 0.808866858f, 1.44363546f, 0);
    EXPECT(&t, "at", 0.100335345f, 0.549306154f, -0.309519619f, 1.47221935f, NAN, 0);
    EXPECT(&t, "sc", 0.98363167f, 0.636619747f, 0.858393669f, 0.109292418f, 0, 1);
    EXPECT(&t, "ac", 0, 1.31695795f, 2.99322295f, 9.2103405f, NAN, 0.962423682f);
    EXPECT(&t, "lg", -1.38629436f, 0, 1.38629448f, -1.38629436f, 1.38629448f, -0.847297788f);
    EXPECT(&t, "nn", 0, 0, 1, 0, 0, 0);
    done(&t);
}

static void test_binary_ternary_and_reducing_math_give_pytorchs_values(void)
{
    const float x[] = {-2, -0.5f, 0, 0.75f, 3, 25}, y[] = {0.5f, 2, -1, 0, NAN, 3},
                d[] = {1.5f, -1.5f, 1.5f, -0.5f, 2, -7}, m[] = {1, 2, 3, -1, -INFINITY, 0.5f},
                g[] = {1, 2, 3, 4, -1, 0, 5, -2}, lo[] = {-1, -1, -1, -1, -1, -1}, hi[] = {1, 1, 1, 1, 1, 30};
    run_t t;
    RUN(&t,
        "input %x: f32[6]\ninput %y: f32[6]\ninput %d: f32[6]\ninput %m: f32[2, 3]\ninput %g: f32[2, 4]\n"
        "input %lo: f32[6]\ninput %hi: f32[6]\n"
        "%xl: f32[6] = aten.xlogy.Tensor(%x, %y)\n"
        "%la: f32[6] = aten.logaddexp.default(%x, %y)\n"
        "%fx: f32[6] = aten.fmax.default(%x, %y)\n"
        "%rm: f32[6] = aten.remainder.Tensor(%x, %d)\n"
        "%fm: f32[6] = aten.fmod.Tensor(%x, %d)\n"
        "%ad: f32[6] = aten.addcdiv.default(%x, %x, %d, value=0.5)\n"
        "%lp: f32[6] = aten.lerp.Scalar(%x, %d, 0.25)\n"
        "%hv: f32[6] = aten.heaviside.default(%x, %d)\n"
        "%cl: f32[6] = aten.clamp.Tensor(%x, %lo, %hi)\n"
        "%lse: f32[2] = aten.logsumexp.default(%m, [1])\n"
        "%ns: f32[2] = aten.nansum.default(%m, [1])\n"
        "%gl: f32[2, 2] = aten.glu.default(%g, 1)\n"
        "%dt: f32[] = aten.dot.default(%x, %d)\n"
        "output %xl, %la, %fx, %rm, %fm, %ad, %lp, %hv, %cl, %lse, %ns, %gl, %dt\n",
        x, y, d, m, g, lo, hi);
    EXPECT(&t, "xl", 1.38629436f, -0.346573591f, 0, -INFINITY, NAN, 27.4653072f);
    EXPECT(&t, "la", 0.578889728f, 2.07888985f, 0.313261658f, 1.13687098f, NAN, 25);
    EXPECT(&t, "fx", 0.5f, 2, 0, 0.75f, 3, 25);
    EXPECT(&t, "rm", 1, -0.5f, 0, -0.25f, 1, -3);
    EXPECT(&t, "fm", -0.5f, -0.5f, 0, 0.25f, 1, 4);
    EXPECT(&t, "ad", -2.666666667f, -0.333333333f, 0, 0, 3.75f, 23.2142857f);
    EXPECT(&t, "lp", -1.125f, -0.75f, 0.375f, 0.4375f, 2.75f, 17);
    EXPECT(&t, "hv", 0, 0, 1.5f, 1, 1, 1);
    EXPECT(&t, "cl", -1, -0.5f, 0, 0.75f, 1, 25);
    EXPECT(&t, "lse", 3.40760589f, 0.701413333f);
    EXPECT(&t, "ns", 6, -INFINITY);
    EXPECT(&t, "gl", 0.952574134f, 1.96402752f, -0.993307173f, 0);
    EXPECT(&t, "dt", -3 + 0.75f - 0.375f + 6 - 175);
    done(&t);
}

/* The losses the compiler decomposes, each reduction, against PyTorch's values. */
static void test_losses_give_pytorchs_values_for_each_reduction(void)
{
    const float a[] = {1, 2, 3, -1, 0.5f, 4}, b[] = {0.5f, 2.5f, -1};
    run_t t;
    RUN(&t,
        "input %a: f32[2, 3]\ninput %b: f32[3]\n"
        "%mn: f32[2, 3] = aten.mse_loss.default(%a, %b, 0)\n"
        "%mm: f32[] = aten.mse_loss.default(%a, %b)\n"
        "%hs: f32[] = aten.huber_loss.default(%a, %b, 2, 1.5)\n"
        "%sn: f32[2, 3] = aten.smooth_l1_loss.default(%a, %b, 0, 0.8)\n"
        "%s0: f32[] = aten.smooth_l1_loss.default(%a, %b, 1, 0.0)\n"
        "output %mn, %mm, %hs, %sn, %s0\n",
        a, b);
    EXPECT(&t, "mn", 0.25f, 0.25f, 16, 2.25f, 4, 25);
    EXPECT(&t, "mm", 7.95833349f);
    EXPECT(&t, "hs", 14.5f);
    EXPECT(&t, "sn", 0.15625f, 0.15625f, 3.6f, 1.1f, 1.6f, 4.6f);
    EXPECT(&t, "s0", 2.25f);
    done(&t);
}

static void test_matrix_products_use_the_schemas_arguments(void)
{
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12}, w[] = {7, 9, 11, 8, 10, 12};
    const float bias[] = {1, -1}, c[] = {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12}, v[] = {1, 0, -1};
    run_t t;
    RUN(&t,
        "input %a: f32[2, 3]\ninput %b: f32[3, 2]\ninput %w: f32[2, 3]\ninput %bias: f32[2]\n"
        "input %c: f32[2, 2, 3]\ninput %v: f32[3]\n"
        "%mm: f32[2, 2] = aten.mm.default(%a, %b)\n"
        "%addmm: f32[2, 2] = aten.addmm.default(%bias, %a, %b, beta=2, alpha=0.5)\n"
        "%linear: f32[2, 2] = aten.linear.default(%a, %w, %bias)\n"
        "%lin3: f32[2, 2, 2] = aten.linear.default(%c, %w)\n"
        "%bb: f32[2, 3, 2] = aten.expand.default(%b, [2, 3, 2])\n"
        "%bmm: f32[2, 2, 2] = aten.bmm.default(%c, %bb)\n"
        "%bad: f32[2, 2, 2] = aten.baddbmm.default(%bias, %c, %bb)\n"
        "%mat3: f32[2, 2, 2] = aten.matmul.default(%c, %b)\n"
        "%mv: f32[2] = aten.matmul.default(%a, %v)\n"
        "%vm: f32[2] = aten.matmul.default(%v, %b)\n"
        "%dot: f32[] = aten.matmul.default(%v, %v)\n"
        "output %mm, %addmm, %linear, %lin3, %bmm, %bad, %mat3, %mv, %vm, %dot\n",
        a, b, w, bias, c, v);
    EXPECT(&t, "mm", 58, 64, 139, 154);
    EXPECT(&t, "addmm", 31, 30, 71.5, 75);
    EXPECT(&t, "linear", 59, 63, 140, 153);
    EXPECT(&t, "lin3", 58, 64, 139, 154, 116, 128, 278, 308);
    EXPECT(&t, "bmm", 58, 64, 139, 154, 116, 128, 278, 308);
    EXPECT(&t, "bad", 59, 63, 140, 153, 117, 127, 279, 307);
    EXPECT(&t, "mat3", 58, 64, 139, 154, 116, 128, 278, 308);
    EXPECT(&t, "mv", -2, -2);
    EXPECT(&t, "vm", -4, -4);
    EXPECT(&t, "dot", 2);
    done(&t);
}

static void test_matmul_broadcasts_batch_dims(void)
{
    /* e (2, 1, 1, 2) @ f (3, 2, 1) -> (2, 3, 1, 1): e_i . f_j */
    const float e[] = {1, 2, 3, 4}, f[] = {1, 0, 0, 1, 1, 1};
    run_t t;
    RUN(&t,
        "input %e: f32[2, 1, 1, 2]\ninput %f: f32[3, 2, 1]\n"
        "%y: f32[2, 3, 1, 1] = aten.matmul.default(%e, %f)\n"
        "output %y\n",
        e, f);
    EXPECT(&t, "y", 1, 2, 3, 3, 4, 7);
    done(&t);
}

static void test_convolutions_give_hand_worked_values(void)
{
    const float w4[] = {1, 0, 0, 1}, b[] = {1}, w3[] = {1, 1, 1, -1}, w5[] = {1, 1};
    run_t t;
    RUN(&t,
        "input %x4: f32[1, 1, 3, 4]\ninput %w4: f32[1, 1, 2, 2]\ninput %b: f32[1]\n"
        "input %x3: f32[1, 2, 3]\ninput %w3: f32[2, 1, 2]\ninput %x5: f32[1, 1, 5]\ninput %w5: f32[1, 1, 2]\n"
        "%c: f32[1, 1, 2, 3] = aten.convolution.default(%x4, %w4, %b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
        "%s2p1: f32[1, 1, 2, 3] = aten.convolution.default(%x4, %w4, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "%g2: f32[1, 2, 2] = aten.convolution.default(%x3, %w3, None, [1], [0], [1], False, [0], 2)\n"
        "%d2: f32[1, 1, 3] = aten.convolution.default(%x5, %w5, None, [1], [0], [2], False, [0], 1)\n"
        "output %c, %s2p1, %g2, %d2\n",
        iota24, w4, b, iota24, w3, iota24, w5);
    /* c: x[i][j] + x[i+1][j+1] + 1; s2p1: the same taps on x padded by one, every second row and column */
    EXPECT(&t, "c", 6, 8, 10, 14, 16, 18);
    EXPECT(&t, "s2p1", 0, 2, 0, 8, 15, 7);
    EXPECT(&t, "g2", 1, 3, -1, -1);
    EXPECT(&t, "d2", 2, 4, 6);
    done(&t);
    expect_fail("input %x: f32[1, 2, 4]\ninput %w: f32[2, 1, 2]\n"
                "%y: f32[1, 2, 3] = aten.convolution.default(%x, %w, None, [1], [0], [1], True, [1], 1)\noutput %y\n",
                (const float *const[]){iota24, iota24},
                "t.txt:3: aten.convolution.default: output_padding must be smaller than stride or dilation");
}

/* ---- Views ---- */

static void test_views_copy_in_row_major_order(void)
{
    const float b[] = {1, 2, 3};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %y: f32[2, 3, 4]\ninput %b: f32[3, 1]\n"
        "%t: f32[3, 2] = aten.t.default(%x)\n"
        "%tr: f32[3, 2] = aten.transpose.int(%x, -1, 0)\n"
        "%perm: f32[4, 2, 3] = aten.permute.default(%y, [2, 0, -2])\n"
        "%view: f32[3, 2] = aten.view.default(%x, [3, -1])\n"
        "%flat: f32[6] = aten.reshape.default(%x, [-1])\n"
        "%uv: f32[6] = aten._unsafe_view.default(%x, [6])\n"
        "%ra: f32[3, 2] = aten._reshape_alias.default(%x, [3, 2], [2, 1])\n"
        "%exp: f32[2, 3, 2] = aten.expand.default(%b, [2, -1, 2])\n"
        "%expas: f32[2, 3, 2] = aten.expand_as.default(%b, %exp)\n"
        "%un: f32[2, 3, 1] = aten.unsqueeze.default(%x, -1)\n"
        "%sq: f32[2, 3] = aten.squeeze.dim(%un, -1)\n"
        "%sq0: f32[2, 3, 1] = aten.squeeze.dim(%un, 0)\n"
        "%u2: f32[1, 2, 1, 3] = aten.view.default(%x, [1, 2, 1, 3])\n"
        "%sqs: f32[2, 3] = aten.squeeze.dims(%u2, [0, 2])\n"
        "%sqa: f32[2, 3] = aten.squeeze.default(%u2)\n"
        "%sl: f32[2, 2] = aten.slice.Tensor(%x, -1, 1, 9223372036854775807)\n"
        "%sl2: f32[2, 3, 2] = aten.slice.Tensor(%y, 2, 0, -1, 2)\n"
        "%sl3: f32[2, 0] = aten.slice.Tensor(%x, 1, 2, 1)\n"
        "%sl4: f32[1, 3] = aten.slice.Tensor(%x, 0, -1)\n"
        "%sel: f32[3] = aten.select.int(%x, 0, -1)\n"
        "%sel2: f32[2, 3] = aten.select.int(%y, -1, 1)\n"
        "%cl: f32[2, 3] = aten.clone.default(%x, memory_format=\"contiguous_format\")\n"
        "output %t, %tr, %perm, %view, %flat, %uv, %ra, %exp, %expas, %un, %sq, %sq0, %sqs, %sqa, %sl, %sl2, %sl3, "
        "%sl4, %sel, %sel2, %cl\n",
        iota24, iota24, b);
    EXPECT(&t, "t", 0, 3, 1, 4, 2, 5);
    EXPECT(&t, "tr", 0, 3, 1, 4, 2, 5);
    EXPECT(&t, "perm", 0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23);
    EXPECT(&t, "view", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "flat", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "uv", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "ra", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "exp", 1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3);
    EXPECT(&t, "expas", 1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3);
    EXPECT(&t, "un", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "sq", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "sqs", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "sqa", 0, 1, 2, 3, 4, 5);
    EXPECT(&t, "sl", 1, 2, 4, 5);
    EXPECT(&t, "sl2", 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22);
    CU_ASSERT_PTR_NOT_NULL(rt_ref_value(t.r, gr_graph_find(t.g, "sl3"), NULL));
    EXPECT(&t, "sl4", 3, 4, 5);
    EXPECT(&t, "sel", 3, 4, 5);
    EXPECT(&t, "sel2", 1, 5, 9, 13, 17, 21);
    EXPECT(&t, "cl", 0, 1, 2, 3, 4, 5);
    done(&t);
}

static void test_split_forms_give_tuples_read_by_getitem(void)
{
    run_t t;
    RUN(&t,
        "input %x: f32[5, 2]\n"
        "%s: (f32[2, 2], f32[2, 2], f32[1, 2]) = aten.split.Tensor(%x, 2)\n"
        "%s2: f32[1, 2] = getitem(%s, 2)\n"
        "%s1: f32[2, 2] = getitem(%s, -2)\n"
        "%w: (f32[1, 2], f32[4, 2]) = aten.split_with_sizes.default(%x, [1, 4], -2)\n"
        "%w0: f32[1, 2] = getitem(%w, 0)\n"
        "%c: (f32[5, 1], f32[5, 1]) = aten.split.Tensor(%x, 1, -1)\n"
        "%c1: f32[5, 1] = getitem(%c, 1)\n"
        "%u: (f32[5], f32[5]) = aten.unbind.int(%x, 1)\n"
        "%u0: f32[5] = getitem(%u, 0)\n"
        "%k: (f32[3, 2], f32[2, 2]) = aten.chunk.default(%x, 2)\n"
        "%k1: f32[2, 2] = getitem(%k, 1)\n"
        "output %s2, %s1, %w0, %c1, %u0, %k1\n",
        iota24);
    EXPECT(&t, "s2", 8, 9);
    EXPECT(&t, "s1", 4, 5, 6, 7);
    EXPECT(&t, "w0", 0, 1);
    EXPECT(&t, "c1", 1, 3, 5, 7, 9);
    EXPECT(&t, "u0", 0, 2, 4, 6, 8);
    EXPECT(&t, "k1", 6, 7, 8, 9);
    /* a tuple is not a tensor */
    CU_ASSERT_PTR_NULL(rt_ref_value(t.r, gr_graph_find(t.g, "s"), NULL));
    done(&t);
}

static void test_cat_and_stack_along_negative_dims(void)
{
    const float a[] = {1, 2, 3, 4}, b[] = {5, 6};
    run_t t;
    RUN(&t,
        "input %a: f32[2, 2]\ninput %b: f32[2, 1]\ninput %e: f32[0]\n"
        "%c1: f32[2, 3] = aten.cat.default([%a, %b], -1)\n"
        "%c0: f32[4, 2] = aten.cat.default([%a, %a])\n"
        "%ce: f32[2, 2] = aten.cat.default([%a, %e], 0)\n"
        "%st: f32[2, 2, 2] = aten.stack.default([%a, %a], 1)\n"
        "output %c1, %c0, %ce, %st\n",
        a, b, a);
    EXPECT(&t, "c1", 1, 2, 5, 3, 4, 6);
    EXPECT(&t, "c0", 1, 2, 3, 4, 1, 2, 3, 4);
    EXPECT(&t, "ce", 1, 2, 3, 4);
    EXPECT(&t, "st", 1, 2, 1, 2, 3, 4, 3, 4);
    done(&t);
}

/* ---- Normalisations and reductions ---- */

static void test_native_layer_norm_gives_output_mean_and_rstd(void)
{
    const float x[] = {1, 2, 3, 4, 2, 2, 2, 2}, w[] = {1, 1, 2, 2}, b[] = {0, 0, 0, 1};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 4]\ninput %w: f32[4]\ninput %b: f32[4]\n"
        "%ln: (f32[2, 4], f32[2, 1], f32[2, 1]) = aten.native_layer_norm.default(%x, [4], %w, %b, 1e-05)\n"
        "%y: f32[2, 4] = getitem(%ln, 0)\n"
        "%mean: f32[2, 1] = getitem(%ln, 1)\n"
        "%rstd: f32[2, 1] = getitem(%ln, 2)\n"
        "%plain: f32[2, 4] = aten.layer_norm.default(%x, [4], None, None, 1e-05)\n"
        "output %y, %mean, %rstd, %plain\n",
        x, w, b);
    /* row 0: mean 2.5, biased var 1.25, rstd = 1/sqrt(1.25 + 1e-5);
     * row 1: constant, so (x - mean) = 0 and y = b */
    EXPECT(&t, "y", -1.34163542, -0.447211807, 0.894423613, 3.68327084, 0, 0, 0, 1);
    EXPECT(&t, "mean", 2.5, 2);
    EXPECT(&t, "rstd", 0.894423613, 316.227766);
    EXPECT(&t, "plain", -1.34163542, -0.447211807, 0.447211807, 1.34163542, 0, 0, 0, 0);
    done(&t);
}

/* x = iota over (1, 2, 3, 4): two 3 x 4 planes */
static void test_image_padding_and_pooling_give_pytorchs_values(void)
{
    run_t t;
    RUN(&t,
        "input %x: f32[1, 2, 3, 4]\n"
        "%pad: f32[1, 2, 4, 3] = aten.constant_pad_nd.default(%x, [0, -1, 1, 0], 9.5)\n"
        "%mp: (f32[1, 2, 2, 2], i64[1, 2, 2, 2]) = aten.max_pool2d_with_indices.default(%x, [2, 2], [2, 2], [1, 0])\n"
        "%mv: f32[1, 2, 2, 2] = getitem(%mp, 0)\n"
        "%mi: i64[1, 2, 2, 2] = getitem(%mp, 1)\n"
        "%ap: f32[1, 2, 2, 2] = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [1, 0])\n"
        "%apx: f32[1, 2, 2, 2] = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [1, 0], False, False)\n"
        "%apd: f32[1, 2, 1, 2] = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [0, 0], False, True, 3)\n"
        "%aa: f32[1, 2, 2, 1] = aten._adaptive_avg_pool2d.default(%x, [2, 1])\n"
        "%am: (f32[1, 2, 2, 1], i64[1, 2, 2, 1]) = aten.adaptive_max_pool2d.default(%x, [2, 1])\n"
        "%amv: f32[1, 2, 2, 1] = getitem(%am, 0)\n"
        "%ami: i64[1, 2, 2, 1] = getitem(%am, 1)\n"
        "output %pad, %mv, %mi, %ap, %apx, %apd, %aa, %amv, %ami\n",
        iota24);
    /* a row of 9.5 above each plane, the last column cropped */
    EXPECT(&t, "pad", 9.5, 9.5, 9.5, 0, 1, 2, 4, 5, 6, 8, 9, 10, 9.5, 9.5, 9.5, 12, 13, 14, 16, 17, 18, 20, 21, 22);
    /* windows rows {-1, 0} and {1, 2}: the padded row is never the max */
    EXPECT(&t, "mv", 1, 3, 9, 11, 13, 15, 21, 23);
    EXPECT(&t, "mi", 1, 3, 9, 11, 1, 3, 9, 11);
    /* count_include_pad: the padded row counts (divisor 4) or not (2) */
    EXPECT(&t, "ap", 0.25, 1.25, 6.5, 8.5, 6.25, 7.25, 18.5, 20.5);
    EXPECT(&t, "apx", 0.5, 2.5, 6.5, 8.5, 12.5, 14.5, 18.5, 20.5);
    EXPECT(&t, "apd", 10.0 / 3, 18.0 / 3, 58.0 / 3, 66.0 / 3);
    /* adaptive windows rows [0, 2) and [1, 3), all columns */
    EXPECT(&t, "aa", 3.5, 7.5, 15.5, 19.5);
    EXPECT(&t, "amv", 7, 11, 19, 23);
    EXPECT(&t, "ami", 7, 11, 7, 11);
    done(&t);
}

/* x = iota over (1, 1, 2, 3) */
static void test_padding_modes_and_nearest_upsampling_give_pytorchs_values(void)
{
    run_t t;
    RUN(&t,
        "input %x: f32[1, 1, 2, 3]\n"
        "%rf: f32[1, 1, 2, 6] = aten.reflection_pad2d.default(%x, [2, 1, 0, 0])\n"
        "%rp: f32[1, 1, 3, 4] = aten.replication_pad2d.default(%x, [1, 0, 0, 1])\n"
        "%up: f32[1, 1, 4, 6] = aten.upsample_nearest2d.vec(%x, None, [2.0, 2.0])\n"
        "%odd: f32[1, 1, 2, 4] = aten.upsample_nearest2d.vec(%x, [2, 4], None)\n"
        "%ex: f32[1, 1, 3, 5] = aten._upsample_nearest_exact2d.vec(%x, [3, 5], None)\n"
        "%exd: f32[1, 1, 2, 2] = aten._upsample_nearest_exact2d.vec(%x, [2, 2], None)\n"
        "output %rf, %rp, %up, %odd, %ex, %exd\n",
        iota24);
    EXPECT(&t, "rf", 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4);
    EXPECT(&t, "rp", 0, 0, 1, 2, 3, 3, 4, 5, 3, 3, 4, 5);
    EXPECT(&t, "up", 0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 3, 3, 4, 4, 5, 5);
    /* 3 to 4 columns: output j reads floor(j * 0.75): 0, 0, 1, 2 */
    EXPECT(&t, "odd", 0, 0, 1, 2, 3, 3, 4, 5);
    /* nearest-exact reads floor((j + 0.5) * scale): 3 to 5 columns 0, 0, 1, 2, 2; 3 to 2: 0, 2 */
    EXPECT(&t, "ex", 0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 3, 3, 4, 5, 5);
    EXPECT(&t, "exd", 0, 2, 3, 5);
    done(&t);
}

/* batch norm with running statistics, training (instance norm's form) and group norm */
static void test_batch_and_group_norm_give_pytorchs_values(void)
{
    const float x[] = {1, 3, 2, 6, 0, 4, 4, 8}, m[] = {1, 2}, v[] = {4, 16}, w[] = {2, 1}, b[] = {0, 1};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 2, 2]\ninput %m: f32[2]\ninput %v: f32[2]\ninput %w: f32[2]\ninput %b: f32[2]\n"
        "%bn: (f32[2, 2, 2], f32[0], f32[0]) = aten.native_batch_norm.default(%x, %w, %b, %m, %v, False, 0.1, 0.0)\n"
        "%y: f32[2, 2, 2] = getitem(%bn, 0)\n"
        "%bt: (f32[2, 2, 2], f32[2], f32[2]) = aten.native_batch_norm.default(%x, None, None, None, None, True, 0.1, 0.0)\n"
        "%yt: f32[2, 2, 2] = getitem(%bt, 0)\n"
        "%mt: f32[2] = getitem(%bt, 1)\n"
        "%rt: f32[2] = getitem(%bt, 2)\n"
        "%gn: (f32[2, 2, 2], f32[2, 1], f32[2, 1]) = aten.native_group_norm.default(%x, %w, %b, 2, 2, 2, 1, 0.0)\n"
        "%yg: f32[2, 2, 2] = getitem(%gn, 0)\n"
        "%mg: f32[2, 1] = getitem(%gn, 1)\n"
        "output %y, %yt, %mt, %rt, %yg, %mg\n",
        x, m, v, w, b);
    /* channel 0: (x - 1) / 2 * 2; channel 1: (x - 2) / 4 + 1 */
    EXPECT(&t, "y", 0, 2, 1, 2, -1, 3, 1.5, 2.5);
    /* channel 0 over {1, 3, 0, 4}: mean 2, var 2.5; channel 1 over {2, 6, 4, 8}: mean 5, var 5 */
    EXPECT(&t, "mt", 2, 5);
    EXPECT(&t, "rt", 0.632455532, 0.447213595);
    EXPECT(&t, "yt", -0.632455532, 0.632455532, -1.34164079, 0.447213595, -1.26491106, 1.26491106, -0.447213595,
           1.34164079);
    /* one group per sample: {1, 3, 2, 6} mean 3, var 3.5; {0, 4, 4, 8} mean 4, var 8 */
    EXPECT(&t, "mg", 3, 4);
    EXPECT(&t, "yg", -2.13808994, 0, 1 - 0.534522484, 2.60356745, -2.82842712, 0, 1, 2.41421356);
    done(&t);
}

static void test_var_with_correction_and_var_mean(void)
{
    const float x[] = {1, 2, 3, 4, 1, 1, 1, 5};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 4]\n"
        "%v0: f32[2] = aten.var.correction(%x, [1], correction=0)\n"
        "%v1: f32[2, 1] = aten.var.correction(%x, [-1], correction=1, keepdim=True)\n"
        "%vall: f32[] = aten.var.correction(%x)\n"
        "%vdim: f32[4] = aten.var.dim(%x, [0], False)\n"
        "%vdef: f32[] = aten.var.default(%x, False)\n"
        "%vm: (f32[2], f32[2]) = aten.var_mean.correction(%x, [1], correction=0)\n"
        "%vmv: f32[2] = getitem(%vm, 0)\n"
        "%vmm: f32[2] = getitem(%vm, 1)\n"
        "output %v0, %v1, %vall, %vdim, %vdef, %vmv, %vmm\n",
        x);
    EXPECT(&t, "v0", 1.25, 3);
    EXPECT(&t, "v1", 1.66666667, 4);
    EXPECT(&t, "vall", 2.5); /* mean 2.25, squares sum to 17.5, / 7 */
    EXPECT(&t, "vdim", 0, 0.25, 1, 0.25);
    EXPECT(&t, "vdef", 2.1875); /* 17.5 / 8 */
    EXPECT(&t, "vmv", 1.25, 3);
    EXPECT(&t, "vmm", 2.5, 2);
    done(&t);
}

/* cumsum along each dim, of floats and of integers (int64, as PyTorch). */
static void test_cumsum_runs_along_any_dim(void)
{
    const float x[] = {1, -2, 3, 4, 5, -6}, i[] = {-7, 2, 3, 8};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %i: i64[4]\n"
        "%c1: f32[2, 3] = aten.cumsum.default(%x, 1)\n"
        "%c0: f32[2, 3] = aten.cumsum.default(%x, -2)\n"
        "%ci: i64[4] = aten.cumsum.default(%i, 0)\n"
        "output %c1, %c0, %ci\n",
        x, i);
    EXPECT(&t, "c1", 1, -1, 2, 4, 9, 3);
    EXPECT(&t, "c0", 1, -2, 3, 5, 3, -3);
    EXPECT(&t, "ci", -7, -5, -2, 6);
    done(&t);
}

static void test_sum_mean_amax_over_dims_with_keepdim(void)
{
    const float x[] = {1, -2, 3, 4, 5, -6};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %y: f32[2, 3, 2]\n"
        "%s1: f32[2] = aten.sum.dim_IntList(%x, [1])\n"
        "%s0: f32[1, 3] = aten.sum.dim_IntList(%x, [0], True)\n"
        "%sall: f32[] = aten.sum.default(%x)\n"
        "%m1: f32[2, 1] = aten.mean.dim(%x, [-1], True)\n"
        "%mall: f32[] = aten.mean.default(%x)\n"
        "%mboth: f32[] = aten.mean.dim(%x, [0, 1])\n"
        "%a1: f32[2] = aten.amax.default(%x, [1])\n"
        "%aall: f32[] = aten.amax.default(%x)\n"
        "%n0: f32[3] = aten.amin.default(%x, [0])\n"
        "%s02: f32[3] = aten.sum.dim_IntList(%y, [0, 2])\n"
        "%s02k: f32[1, 3, 1] = aten.sum.dim_IntList(%y, [2, 0], True)\n"
        "output %s1, %s0, %sall, %m1, %mall, %mboth, %a1, %aall, %n0, %s02, %s02k\n",
        x, iota24);
    EXPECT(&t, "s1", 2, 3);
    EXPECT(&t, "s0", 5, 3, -3);
    EXPECT(&t, "sall", 5);
    EXPECT(&t, "m1", 0.666666667, 1);
    EXPECT(&t, "mall", 0.833333333);
    EXPECT(&t, "mboth", 0.833333333);
    EXPECT(&t, "a1", 3, 5);
    EXPECT(&t, "aall", 5);
    EXPECT(&t, "n0", 1, -2, -6);
    EXPECT(&t, "s02", 14, 22, 30);
    EXPECT(&t, "s02k", 14, 22, 30);
    done(&t);
}

static void test_softmax_over_any_dim_and_masked_fill_with_minus_inf(void)
{
    const float x[] = {1, 2, 3, 0, 0, 0}, mask[] = {0, 0, 1};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 3]\ninput %mask: bool[1, 3]\n"
        "%m: f32[2, 3] = aten.masked_fill.Scalar(%x, %mask, -inf)\n"
        "%s: f32[2, 3] = aten._softmax.default(%m, -1, False)\n"
        "%s0: f32[2, 3] = aten._softmax.default(%x, 0, False)\n"
        "%ls0: f32[2, 3] = aten._log_softmax.default(%x, 0, False)\n"
        "output %m, %s, %s0, %ls0\n",
        x, mask);
    EXPECT(&t, "m", 1, 2, -INFINITY, 0, 0, -INFINITY);
    EXPECT(&t, "s", 0.268941421, 0.731058579, 0, 0.5, 0.5, 0);
    EXPECT(&t, "s0", 0.731058579, 0.880797078, 0.952574127, 0.268941421, 0.119202922, 0.0474258732);
    EXPECT(&t, "ls0", -0.313261688, -0.126928011, -0.0485873516, -1.31326169, -2.12692801, -3.04858735);
    done(&t);
}

static void test_embedding_gathers_rows_by_index(void)
{
    const float w[] = {0, 1, 10, 11, 20, 21, 30, 31};
    const int64_t ids[] = {3, 0, 1, 3};
    run_t t;
    const char *text = "input %w: f32[4, 2]\ninput %ids: i64[2, 2]\n"
                       "%e: f32[2, 2, 2] = aten.embedding.default(%w, %ids)\n"
                       "output %e\n";
    t.g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t.g);
    t.r = rt_ref_new(t.g, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t.r);
    CU_ASSERT_EQUAL(rt_ref_set(t.r, "w", w, 8, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_set_i64(t.r, "%ids", ids, 4, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_ref_run(t.r, err, sizeof err), 0);
    EXPECT(&t, "e", 30, 31, 0, 1, 10, 11, 30, 31);
    gr_ttype ty;
    const float *y = rt_ref_output(t.r, 0, &ty);
    CU_ASSERT_PTR_NOT_NULL(y);
    CU_ASSERT_EQUAL(ty.rank, 3);
    CU_ASSERT_PTR_NULL(rt_ref_output(t.r, 1, NULL));
    /* out of range */
    const int64_t bad[] = {3, 4, 0, 0};
    CU_ASSERT_EQUAL(rt_ref_set_i64(t.r, "ids", bad, 4, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_run(t.r, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "t.txt:3: aten.embedding.default: index 4 (element 1 of the indices) out of range [0, 4)");
    done(&t);
}

/* ---- Creation, selection, casts ---- */

static void test_creation_ops_infer_dtypes_as_pytorch(void)
{
    const float x[] = {1.7f, -1.7f, 2}, m[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, cond[] = {1, 0, 1}, o[] = {-1};
    run_t t;
    RUN(&t,
        "input %x: f32[3]\ninput %m: f32[3, 3]\ninput %cond: bool[3]\ninput %o: f32[1]\n"
        "%full: f32[2, 2] = aten.full.default([2, 2], 1.5)\n"
        "%fulli: i64[3] = aten.full.default([3], 7)\n"
        "%zeros: f32[2] = aten.zeros.default([2])\n"
        "%ones: i64[2] = aten.ones.default([2], dtype=i64)\n"
        "%sc: f32[] = aten.scalar_tensor.default(-inf)\n"
        "%ol: f32[3] = aten.ones_like.default(%x)\n"
        "%zl: bool[3] = aten.zeros_like.default(%x, dtype=bool)\n"
        "%fl: f32[3] = aten.full_like.default(%x, 3)\n"
        "%nz: f32[1, 2] = aten.new_zeros.default(%x, [1, 2])\n"
        "%no: i64[2] = aten.new_ones.default(%x, [2], dtype=i64)\n"
        "%ar: i64[5] = aten.arange.default(5)\n"
        "%ar2: f32[4] = aten.arange.start_step(0, 1, 0.25)\n"
        "%ar3: i64[3] = aten.arange.start(2, 5)\n"
        "%ar4: f32[3] = aten.arange.default(3, dtype=f32)\n"
        "%triu: f32[3, 3] = aten.triu.default(%m, 1)\n"
        "%tril: f32[3, 3] = aten.tril.default(%m)\n"
        "%trilm: f32[3, 3] = aten.tril.default(%m, -1)\n"
        "%wh: f32[3] = aten.where.self(%cond, %x, %o)\n"
        "%whs: f32[3] = aten.where.ScalarOther(%cond, %x, 0.0)\n"
        "%toi: i64[3] = aten._to_copy.default(%x, dtype=i64)\n"
        "%tob: bool[3] = aten._to_copy.default(%x, dtype=bool)\n"
        "%ri: f32[6] = aten.repeat_interleave.self_int(%x, 2)\n"
        "%m2: f32[2, 2] = aten.slice.Tensor(%full, 0, 0, 2)\n"
        "%rid: f32[2, 4] = aten.repeat_interleave.self_int(%m2, 2, 1)\n"
        "%dr: (f32[3], bool[3]) = aten.native_dropout.default(%x, 0.1, False)\n"
        "%dr0: f32[3] = getitem(%dr, 0)\n"
        "%dr1: bool[3] = getitem(%dr, 1)\n"
        "%z23: f32[2, 3] = aten.zeros.default([2, 3])\n"
        "%cp: f32[2, 3] = aten.copy.default(%z23, %x)\n"
        "%det: f32[3] = aten.detach.default(%x)\n"
        "%al: f32[3] = aten.alias.default(%x)\n"
        "%lf: f32[3] = aten.lift_fresh_copy.default(%x)\n"
        "output %full, %fulli, %zeros, %ones, %sc, %ol, %zl, %fl, %nz, %no, %ar, %ar2, %ar3, %ar4, %triu, %tril, "
        "%trilm, %wh, %whs, %toi, %tob, %ri, %rid, %dr0, %dr1, %cp, %det, %al, %lf\n",
        x, m, cond, o);
    EXPECT(&t, "full", 1.5, 1.5, 1.5, 1.5);
    EXPECT(&t, "fulli", 7, 7, 7);
    EXPECT(&t, "zeros", 0, 0);
    EXPECT(&t, "ones", 1, 1);
    EXPECT(&t, "sc", -INFINITY);
    EXPECT(&t, "ol", 1, 1, 1);
    EXPECT(&t, "zl", 0, 0, 0);
    EXPECT(&t, "fl", 3, 3, 3);
    EXPECT(&t, "nz", 0, 0);
    EXPECT(&t, "no", 1, 1);
    EXPECT(&t, "ar", 0, 1, 2, 3, 4);
    EXPECT(&t, "ar2", 0, 0.25, 0.5, 0.75);
    EXPECT(&t, "ar3", 2, 3, 4);
    EXPECT(&t, "ar4", 0, 1, 2);
    EXPECT(&t, "triu", 0, 2, 3, 0, 0, 6, 0, 0, 0);
    EXPECT(&t, "tril", 1, 0, 0, 4, 5, 0, 7, 8, 9);
    EXPECT(&t, "trilm", 0, 0, 0, 4, 0, 0, 7, 8, 0);
    EXPECT(&t, "wh", 1.7f, -1, 2);
    EXPECT(&t, "whs", 1.7f, 0, 2);
    EXPECT(&t, "toi", 1, -1, 2);
    EXPECT(&t, "tob", 1, 1, 1);
    EXPECT(&t, "ri", 1.7f, 1.7f, -1.7f, -1.7f, 2, 2);
    EXPECT(&t, "rid", 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5);
    EXPECT(&t, "dr0", 1.7f, -1.7f, 2);
    EXPECT(&t, "dr1", 1, 1, 1);
    EXPECT(&t, "cp", 1.7f, -1.7f, 2, 1.7f, -1.7f, 2);
    EXPECT(&t, "det", 1.7f, -1.7f, 2);
    EXPECT(&t, "al", 1.7f, -1.7f, 2);
    EXPECT(&t, "lf", 1.7f, -1.7f, 2);
    done(&t);
}

/* The composite ops the compiler decomposes, run here as written. */
static void test_composite_ops_run_as_written(void)
{
    const float x[] = {1, 2, 3, 4, 1, 1, 1, 5}, eye[] = {1, 0, 0, 1}, v[] = {1, 2, 3, 4}, keep[] = {1, 0, 1, 1};
    const float add[] = {0, -INFINITY, 0, 0};
    run_t t;
    RUN(&t,
        "input %x: f32[2, 4]\ninput %q: f32[1, 2, 2]\ninput %v: f32[1, 2, 2]\ninput %keep: bool[2, 2]\n"
        "input %add: f32[2, 2]\n"
        "%sq: f32[2, 4] = aten.square.default(%x)\n"
        "%std: f32[2] = aten.std.correction(%x, [1])\n"
        "%rep: f32[2, 2, 8] = aten.repeat.default(%x, [2, 1, 2])\n"
        "%fl: f32[8] = aten.flatten.using_ints(%x)\n"
        "%q3: f32[1, 2, 1, 2] = aten.unflatten.int(%v, -1, [1, -1])\n"
        "%uf: f32[2, 2, 2] = aten.unflatten.int(%x, 1, [2, 2])\n"
        "%va: f32[1, 2, 2] = aten.view_as.default(%add, %q)\n"
        "%ti: i64[2, 4] = aten.type_as.default(%x, %ti0)\n"
        "%ti0: i64[1] = aten.zeros.default([1], dtype=i64)\n"
        "%el: f32[1, 2, 2] = aten.empty_like.default(%q)\n"
        "%att: f32[1, 2, 2] = aten.scaled_dot_product_attention.default(%q, %q, %v)\n"
        "%causal: f32[1, 2, 2] = aten.scaled_dot_product_attention.default(%q, %q, %v, is_causal=True)\n"
        "%bm: f32[1, 2, 2] = aten.scaled_dot_product_attention.default(%q, %q, %v, %keep)\n"
        "%fm: f32[1, 2, 2] = aten.scaled_dot_product_attention.default(%q, %q, %v, %add, 0.0, False, 1.0)\n"
        "output %sq, %std, %rep, %fl, %q3, %uf, %va, %ti, %el, %att, %causal, %bm, %fm\n",
        x, eye, v, keep, add);
    EXPECT(&t, "sq", 1, 4, 9, 16, 1, 1, 1, 25);
    EXPECT(&t, "std", 1.29099445, 2);
    EXPECT(&t, "rep", 1, 2, 3, 4, 1, 2, 3, 4, 1, 1, 1, 5, 1, 1, 1, 5, 1, 2, 3, 4, 1, 2, 3, 4, 1, 1, 1, 5, 1, 1, 1, 5);
    EXPECT(&t, "fl", 1, 2, 3, 4, 1, 1, 1, 5);
    EXPECT(&t, "q3", 1, 2, 3, 4);
    EXPECT(&t, "uf", 1, 2, 3, 4, 1, 1, 1, 5);
    EXPECT(&t, "va", 0, -INFINITY, 0, 0);
    EXPECT(&t, "ti", 1, 2, 3, 4, 1, 1, 1, 5);
    EXPECT(&t, "el", 0, 0, 0, 0);
    /* scores = q q^T / sqrt(2) = I / sqrt(2); row 0 weights (p, 1 - p) with
     * p = 1 / (1 + e^(-1/sqrt(2))) */
    EXPECT(&t, "att", 1.6604769, 2.6604769, 2.3395231, 3.3395231);
    EXPECT(&t, "causal", 1, 2, 2.3395231, 3.3395231);
    EXPECT(&t, "bm", 1, 2, 2.3395231, 3.3395231);
    /* scale 1: p = 1 / (1 + e^-1) for row 1; row 0 masked to key 0 */
    EXPECT(&t, "fm", 1, 2, 1 * 0.268941421 + 3 * 0.731058579, 2 * 0.268941421 + 4 * 0.731058579);
    done(&t);
}

/* ---- Errors ---- */

static void test_errors_name_the_line_op_and_shapes(void)
{
    const float a[6] = {0}, b[12] = {0};
    const float *ab[] = {a, b};
    /* a declared shape that is not what the op computes */
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 2] = aten.mm.default(%a, %b)\noutput %y\n", ab,
                "t.txt:3: aten.mm.default: declared f32[2, 2] but computes f32[2, 4]");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 3] = aten.gt.Scalar(%a, 0)\noutput %y\n", ab,
                "t.txt:3: aten.gt.Scalar: declared f32[2, 3] but computes bool[2, 3]");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n"
                "%s: (f32[1, 3], f32[1, 3]) = aten.split.Tensor(%a, 1, 1)\noutput %a\n",
                ab, "t.txt:3: aten.split.Tensor: result 0 declared f32[1, 3] but computes f32[2, 1]");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n"
                "%s: (f32[2, 1], f32[2, 1]) = aten.split.Tensor(%a, 1, 1)\n%t: f32[2, 1] = getitem(%s, 1)\noutput %t\n",
                ab, "t.txt:3: aten.split.Tensor: declares 2 results but the op computes more");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 3] = aten.mm.default(%a, %a)\noutput %y\n", ab,
                "t.txt:3: aten.mm.default: shapes [2, 3] and [2, 3] cannot be multiplied");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 3] = aten.add.Tensor(%a, %b)\noutput %y\n", ab,
                "t.txt:3: aten.add.Tensor: shapes [2, 3] and [3, 4] do not broadcast");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 3] = aten._softmax.default(%a, 2, False)\n"
                "output %y\n",
                ab, "t.txt:3: aten._softmax.default: dim 2 out of range for a rank-2 tensor");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[6] = aten.view.default(%a, [4])\noutput %y\n", ab,
                "t.txt:3: aten.view.default: a view of shape [2, 3] as [4] changes the number of elements");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 3] = aten.relu.default()\noutput %y\n", ab,
                "t.txt:3: aten.relu.default: missing argument self");
    expect_fail("input %a: f32[2, 3]\ninput %b: f32[3, 4]\n%y: f32[2, 3] = aten.native_dropout.default(%a, 0.5, True)\n"
                "output %y\n",
                ab, "t.txt:3: aten.native_dropout.default: dropout with p=0.5 in training is random: the reference "
                    "runs only p=0 or train=False");
    /* an op the executor does not implement: found before running */
    expect_fail("input %a: f32[2, 3]\n\n%y: f32[2, 3] = aten.foo.bar(%a)\noutput %y\n", ab,
                "t.txt:3: unsupported op aten.foo.bar");
    expect_fail("input %a: f32[2, 3]\n%y: f32[2, 3] = prims.add.default(%a, %a)\noutput %y\n", ab,
                "t.txt:2: unsupported op prims.add.default");
}

static void test_inputs_must_be_set_with_the_declared_size(void)
{
    gr_graph *g = gr_graph_parse("input %x: f32[2, 3]\nparam %w: f32[3] = \"w.key\"\n"
                                 "%y: f32[2, 3] = aten.mul.Tensor(%x, %w)\noutput %y\n",
                                 "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    rt_ref *r = rt_ref_new(g, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(rt_ref_run(r, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "t.txt:1: input %x has no value (rt_ref_set or rt_ref_load_inputs first)");
    const float x[6] = {1, 2, 3, 4, 5, 6}, w[3] = {1, 0, -1};
    CU_ASSERT_EQUAL(rt_ref_set(r, "x", x, 5, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "t.txt:1: %x is f32[2, 3] (6 elements) but 5 values were given");
    CU_ASSERT_EQUAL(rt_ref_set(r, "y", x, 6, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "t.txt: y is computed by the graph, not an input or a parameter");
    CU_ASSERT_EQUAL(rt_ref_set(r, "q", x, 6, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "t.txt: no input or parameter q");
    CU_ASSERT_EQUAL(rt_ref_set(r, "x", x, 6, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_run(r, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "t.txt:2: param %w has no value (rt_ref_load_weights first)");
    CU_ASSERT_EQUAL(rt_ref_set(r, "w.key", w, 3, err, sizeof err), 0); /* by weight key */
    CU_ASSERT_EQUAL(rt_ref_run(r, err, sizeof err), 0);
    const float *y = rt_ref_output(r, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_EQUAL(y[0], 1);
    CU_ASSERT_EQUAL(y[2], -3);
    CU_ASSERT_EQUAL(y[5], -6);
    /* running twice gives the same */
    CU_ASSERT_EQUAL(rt_ref_run(r, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_output(r, 0, NULL)[5], -6);
    rt_ref_free(r);
    gr_graph_free(g);
}

/* ---- Safetensors ---- */

static void st_path(const char *name, char *buf, size_t len) { tu_tmpfile(name, buf, len); }

static void test_safetensors_round_trip_every_dtype(void)
{
    char path[512];
    st_path("-rt.safetensors", path, sizeof path);
    const float f32[6] = {1, -2.5f, 3, 0.125f, -0, 65504};
    const uint16_t f16[5] = {0x3C00, 0xC100, 0x7BFF, 0x0001, 0x7C00};  /* 1, -2.5, 65504, 2^-24, inf */
    const uint16_t bf16[3] = {0x3F80, 0xC020, 0xFF80};                  /* 1, -2.5, -inf */
    const double f64[2] = {0.1, -1e300};
    const int64_t i64[3] = {-5, 0, (int64_t)1 << 40};
    const int32_t i32[2] = {-7, 7};
    const uint8_t bools[4] = {0, 1, 1, 0};
    rt_st_entry e[] = {
        {"a.f32", RT_ST_F32, 2, {2, 3}, f32},
        {"f16", RT_ST_F16, 1, {5}, f16},
        {"bf16", RT_ST_BF16, 1, {3}, bf16},
        {"f64", RT_ST_F64, 1, {2}, f64},
        {"i64", RT_ST_I64, 1, {3}, i64},
        {"i32", RT_ST_I32, 2, {1, 2}, i32},
        {"bool", RT_ST_BOOL, 2, {2, 2}, bools},
        {"scalar", RT_ST_F32, 0, {0}, f32},
        {"empty", RT_ST_F32, 2, {0, 3}, f32},
    };
    int n = (int)(sizeof e / sizeof e[0]);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, e, n, err, sizeof err), 0);
    rt_st_file *f = rt_st_read(path, err, sizeof err);
    if (!f)
        fprintf(stderr, "\n    %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL_FATAL(f->ntensors, n);
    for (int i = 0; i < n; i++) {
        const rt_st_tensor *t = rt_st_find(f, e[i].name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_PTR_EQUAL(t, &f->tensors[i]); /* header order kept */
        CU_ASSERT_EQUAL(t->dtype, e[i].dtype);
        CU_ASSERT_EQUAL(t->rank, e[i].rank);
        for (int d = 0; d < t->rank; d++)
            CU_ASSERT_EQUAL(t->shape[d], e[i].shape[d]);
        CU_ASSERT_EQUAL(t->nbytes, (uint64_t)t->numel * rt_st_dtype_size(t->dtype));
        if (t->nbytes)
            CU_ASSERT_EQUAL(memcmp(t->data, e[i].data, (size_t)t->nbytes), 0);
    }
    CU_ASSERT_PTR_NULL(rt_st_find(f, "nope"));
    CU_ASSERT_EQUAL(rt_st_find(f, "scalar")->numel, 1);
    CU_ASSERT_EQUAL(rt_st_find(f, "empty")->numel, 0);
    float v[8];
    rt_st_to_f32(rt_st_find(f, "f16"), v);
    CU_ASSERT(v[0] == 1 && v[1] == -2.5f && v[2] == 65504 && v[3] == 0x1p-24f && isinf(v[4]));
    rt_st_to_f32(rt_st_find(f, "bf16"), v);
    CU_ASSERT(v[0] == 1 && v[1] == -2.5f && isinf(v[2]) && v[2] < 0);
    rt_st_to_f32(rt_st_find(f, "f64"), v);
    CU_ASSERT(v[0] == 0.1f && isinf(v[1]));
    rt_st_to_f32(rt_st_find(f, "i64"), v);
    CU_ASSERT(v[0] == -5 && v[2] == 0x1p40f);
    rt_st_to_f32(rt_st_find(f, "i32"), v);
    CU_ASSERT(v[0] == -7 && v[1] == 7);
    rt_st_to_f32(rt_st_find(f, "bool"), v);
    CU_ASSERT(v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 0);
    int64_t iv[8];
    CU_ASSERT_EQUAL(rt_st_to_i64(rt_st_find(f, "a.f32"), path, iv, err, sizeof err), 0);
    CU_ASSERT(iv[0] == 1 && iv[1] == -2 && iv[3] == 0 && iv[5] == 65504); /* truncated toward zero */
    CU_ASSERT_EQUAL(rt_st_to_i64(rt_st_find(f, "i32"), path, iv, err, sizeof err), 0);
    CU_ASSERT(iv[0] == -7);
    CU_ASSERT_EQUAL(rt_st_to_i64(rt_st_find(f, "f16"), path, iv, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor 'f16': element 4 (inf) does not convert to an integer"));
    CU_ASSERT_STRING_EQUAL(rt_st_dtype_name(RT_ST_BF16), "BF16");
    rt_st_free(f);
    remove(path);
}

/* A file of an 8-byte length (hlen, or the header's length when hlen <
 * 0), the header text and ndata bytes of data. */
static void write_raw(const char *path, long long hlen, const char *header, size_t ndata)
{
    FILE *f = fopen(path, "wb");
    uint64_t h = hlen < 0 ? strlen(header) : (uint64_t)hlen;
    for (int i = 0; i < 8; i++)
        fputc((int)(h >> (8 * i)) & 0xff, f);
    fputs(header, f);
    for (size_t i = 0; i < ndata; i++)
        fputc(0, f);
    fclose(f);
}

static void expect_st_error(const char *header, long long hlen, size_t ndata, const char *msg)
{
    char path[512], want[1024];
    st_path("-bad.safetensors", path, sizeof path);
    write_raw(path, hlen, header, ndata);
    rt_st_file *f = rt_st_read(path, err, sizeof err);
    CU_ASSERT_PTR_NULL(f);
    rt_st_free(f);
    snprintf(want, sizeof want, "%s: %s", path, msg);
    if (strncmp(err, want, strlen(want)) != 0)
        fprintf(stderr, "\n    expected '%s'\n    got      '%s'\n", want, err);
    CU_ASSERT_EQUAL(strncmp(err, want, strlen(want)), 0);
    remove(path);
}

/* expect_st_error for the header of one F32 tensor w of the shape and
 * data_offsets given (JSON arrays). */
static void expect_w_error(const char *shape, const char *offsets, size_t ndata, const char *msg)
{
    char header[256];
    snprintf(header, sizeof header, "{\"w\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":%s}}", shape, offsets);
    expect_st_error(header, -1, ndata, msg);
}

static void test_safetensors_reports_each_corruption(void)
{
    char path[512];
    st_path("-short.safetensors", path, sizeof path);
    FILE *f = fopen(path, "wb");
    fputs("abcd", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(rt_st_read(path, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ": 4 bytes is too short for a safetensors file"));
    remove(path);
    CU_ASSERT_PTR_NULL(rt_st_read(path, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file or directory"));

    const char *w24 = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
    expect_st_error(w24, 1000, 24, "header length 1000 exceeds the");
    expect_st_error("{not json", -1, 0, "header is not valid JSON");
    expect_st_error("[1, 2]", -1, 0, "header is not a JSON object");
    expect_st_error("{} x", -1, 0, "header has text after its JSON object (at byte 3 of the header)");
    expect_st_error("{\"__metadata__\": 3}", -1, 0, "__metadata__ is not an object");
    expect_st_error("{\"w\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", -1, 1,
                    "tensor 'w': unknown dtype \"F8\"");
    expect_st_error("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", -1, 4, "tensor 'w': no \"dtype\" string");
    expect_st_error("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", -1, 4, "tensor 'w': no \"shape\" array");
    expect_w_error("[2,-3]", "[0,24]", 24, "tensor 'w': shape entry 1 is not an integer >= 0");
    expect_w_error("[1,1,1,1,1,1,1,1,1]", "[0,4]", 4, "tensor 'w': rank 9 is more than 8");
    expect_w_error("[2,3]", "[0,20]", 24, "tensor 'w': shape [2, 3] of F32 needs 24 bytes but data_offsets [0, 20] span 20");
    expect_w_error("[2,3]", "[0,48]", 24, "tensor 'w': data_offsets [0, 48] past the end of the data (24 bytes)");
    expect_w_error("[2,3]", "[8,4]", 24, "tensor 'w': data_offsets [8, 4] end before they begin");
    expect_w_error("[2,3]", "[0]", 24, "tensor 'w': \"data_offsets\" is not [begin, end] of integers >= 0");
    expect_st_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                    -1, 24, "tensors 'a' [0, 16] and 'b' [8, 24] overlap");
    expect_st_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                    -1, 8, "tensor 'w' appears twice in the header");
    /* every data byte is some tensor's: a hole or a tail is a file cut or written wrong */
    expect_w_error("[2]", "[0,8]", 12, "data bytes [8, 12) belong to no tensor");
    expect_st_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                    -1, 12, "data bytes [4, 8) belong to no tensor");
    /* metadata and padding blanks are fine */
    st_path("-ok.safetensors", path, sizeof path);
    write_raw(path, -1, "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"I32\",\"shape\":[],"
                        "\"data_offsets\":[0,4]}}    ", 4);
    rt_st_file *ok = rt_st_read(path, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(ok);
    if (ok)
        CU_ASSERT_EQUAL(ok->ntensors, 1);
    rt_st_free(ok);
    remove(path);
}

static void test_weights_and_inputs_load_by_key_and_name(void)
{
    char dir[512], wpath[600], ipath[600], gpath[600];
    tu_tmpfile("-refdir", dir, sizeof dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
    snprintf(wpath, sizeof wpath, "%s/w.safetensors", dir);
    snprintf(ipath, sizeof ipath, "%s/in.safetensors", dir);
    snprintf(gpath, sizeof gpath, "%s/graph.txt", dir);
    FILE *f = fopen(gpath, "w");
    fputs("weights \"w.safetensors\"\n"
          "input %ids: i64[2]\n"
          "param %emb: f32[3, 2] = \"emb.weight\"\n"
          "param %scale: f32[2] = \"scale\"\n"
          "%e: f32[2, 2] = aten.embedding.default(%emb, %ids)\n"
          "%y: f32[2, 2] = aten.mul.Tensor(%e, %scale)\n"
          "output %y\n",
          f);
    fclose(f);
    const float emb[6] = {1, 2, 3, 4, 5, 6}, scale[2] = {10, -1};
    const int64_t ids[2] = {2, 0};
    rt_st_entry w[] = {{"emb.weight", RT_ST_F32, 2, {3, 2}, emb}, {"scale", RT_ST_F32, 1, {2}, scale}};
    rt_st_entry in[] = {{"ids", RT_ST_I64, 1, {2}, ids}};
    CU_ASSERT_EQUAL_FATAL(rt_st_write(wpath, w, 2, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(ipath, in, 1, err, sizeof err), 0);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    rt_ref *r = rt_ref_new(g, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(rt_ref_load_weights(r, NULL, err, sizeof err), 0); /* the graph's weights line */
    CU_ASSERT_EQUAL(rt_ref_load_inputs(r, ipath, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_ref_run(r, err, sizeof err), 0);
    const float *y = rt_ref_output(r, 0, NULL);
    CU_ASSERT(y[0] == 50 && y[1] == -6 && y[2] == 10 && y[3] == -2);
    char want[1400];
    /* a missing key */
    CU_ASSERT_EQUAL_FATAL(rt_st_write(wpath, w, 1, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_load_weights(r, wpath, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: missing weight scale for %%scale (graph line 4)", wpath);
    CU_ASSERT_STRING_EQUAL(err, want);
    /* a wrong shape */
    rt_st_entry w2[] = {{"emb.weight", RT_ST_F32, 2, {2, 3}, emb}, {"scale", RT_ST_F32, 1, {2}, scale}};
    CU_ASSERT_EQUAL_FATAL(rt_st_write(wpath, w2, 2, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_load_weights(r, wpath, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: weight 'emb.weight' has shape [2, 3] but %%emb (graph line 3) is f32[3, 2]",
             wpath);
    CU_ASSERT_STRING_EQUAL(err, want);
    /* integers stored for a float parameter */
    rt_st_entry w3[] = {{"emb.weight", RT_ST_I64, 2, {3, 2}, emb}, {"scale", RT_ST_F32, 1, {2}, scale}};
    int64_t embi[6] = {0};
    w3[0].data = embi;
    CU_ASSERT_EQUAL_FATAL(rt_st_write(wpath, w3, 2, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_ref_load_weights(r, wpath, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: weight 'emb.weight' is I64 but %%emb (graph line 3) is f32[3, 2]", wpath);
    CU_ASSERT_STRING_EQUAL(err, want);
    /* a missing input */
    CU_ASSERT_EQUAL(rt_ref_load_inputs(r, wpath, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: missing input ids for %%ids (graph line 2)", wpath);
    CU_ASSERT_STRING_EQUAL(err, want);
    rt_ref_free(r);
    gr_graph_free(g);
    remove(wpath);
    remove(ipath);
    remove(gpath);
    rmdir(dir);
}

/* ---- Traces exported from PyTorch ---- */

/* Run an export directory; returns the largest |ref - expected| over all
 * outputs, or -1 on an error (printed). */
static double run_trace(const char *dir)
{
    char path[1200];
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    rt_ref *r = g ? rt_ref_new(g, err, sizeof err) : NULL;
    snprintf(path, sizeof path, "%s/inputs.safetensors", dir);
    double worst = -1;
    rt_st_file *f = NULL;
    if (!r || rt_ref_load_weights(r, NULL, err, sizeof err) || rt_ref_load_inputs(r, path, err, sizeof err) ||
        rt_ref_run(r, err, sizeof err))
        goto out;
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    if (!(f = rt_st_read(path, err, sizeof err)))
        goto out;
    worst = 0;
    for (int i = 0; i < g->noutputs; i++) {
        char name[32];
        snprintf(name, sizeof name, "output%d", i);
        const rt_st_tensor *t = rt_st_find(f, name);
        gr_ttype ty;
        const float *y = rt_ref_output(r, i, &ty);
        if (!t || !y || t->numel != gr_ttype_numel(&ty)) {
            snprintf(err, sizeof err, "%s: %s missing or of another size", path, name);
            worst = -1;
            goto out;
        }
        float *e = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *e);
        rt_st_to_f32(t, e);
        for (int64_t k = 0; k < t->numel; k++) {
            double d = fabs((double)y[k] - e[k]);
            if (isnan(d) && !(isnan(y[k]) && isnan(e[k])) && y[k] != e[k])
                d = INFINITY;
            if (d > worst)
                worst = d;
        }
        free(e);
    }
out:
    if (worst < 0)
        fprintf(stderr, "\n    %s: %s\n", dir, err);
    rt_st_free(f);
    rt_ref_free(r);
    gr_graph_free(g);
    return worst;
}

static void test_encoder_small_trace_matches_pytorch(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/traces/encoder_small", SPYRE_SOURCE_DIR);
    double e = run_trace(dir);
    printf("\n    encoder_small: max abs err %.3g against PyTorch ", e);
    CU_ASSERT(e >= 0 && e <= 1e-4);
}

/* Every traces/NAME/ with a graph.txt and under 64 MB of files. */
static void test_every_small_trace_matches_pytorch(void)
{
    char root[1024], dir[1400], file[1600];
    snprintf(root, sizeof root, "%s/traces", SPYRE_SOURCE_DIR);
    DIR *d = opendir(root);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *de;
    int ran = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(dir, sizeof dir, "%s/%s", root, de->d_name);
        snprintf(file, sizeof file, "%s/graph.txt", dir);
        struct stat st;
        if (stat(file, &st) != 0)
            continue;
        const char *files[] = {"weights.safetensors", "inputs.safetensors", "expected.safetensors"};
        off_t total = st.st_size;
        for (int i = 0; i < 3; i++) {
            snprintf(file, sizeof file, "%s/%s", dir, files[i]);
            if (stat(file, &st) == 0)
                total += st.st_size;
        }
        if (total > 64 << 20)
            continue;
        double e = run_trace(dir);
        printf("\n    %s: max abs err %.3g against PyTorch", de->d_name, e);
        CU_ASSERT(e >= 0 && e <= 1e-4);
        ran++;
    }
    closedir(d);
    printf("\n    ");
    CU_ASSERT(ran > 0);
}

/* ---- Error bounds (docs/validation.md, "Error bounds") ---- */

/* The doc's formulas, written again here: u, rho, lambda, and the stored
 * value of track w (values in these tests are far from the flush). */
#define EU 0x1p-10
#define ERHO (EU + 0x1p-21)
#define ELAM RT_REF_LAMBDA

static double lam_w(int w) { return w ? ELAM : 1; }

static double stored(double v, double p, int w)
{
    double r = ERHO * (fabs(v) + lam_w(w) * p);
    return w ? sqrt(p * p + r * r) : p + r;
}

/* Run text with error tracking on. */
static void run_tracked(run_t *t, const char *text, const float *const *in)
{
    memset(t, 0, sizeof *t);
    err[0] = 0;
    t->g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->g);
    t->r = rt_ref_new(t->g, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->r);
    rt_ref_track_errors(t->r, 1);
    for (int v = 0; v < t->g->nvalues; v++)
        rt_ref_keep(t->r, v);
    for (int i = 0; i < t->g->ninputs; i++) {
        const gr_value *v = &t->g->values[t->g->inputs[i]];
        CU_ASSERT_EQUAL_FATAL(rt_ref_set(t->r, v->name, in[i], gr_ttype_numel(&v->type), err, sizeof err), 0);
    }
    int rc = rt_ref_run(t->r, err, sizeof err);
    if (rc)
        fprintf(stderr, "\n    %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* run_tracked with the inputs listed. */
#define RUN_TRACKED(t, text, ...) run_tracked((t), (text), (const float *const[]){__VA_ARGS__})

/* Track w of value name equals want[] (n elements) to 1e-5 relative (the
 * bounds are kept in fp32). */
static void expect_bound(run_t *t, const char *name, int w, const double *want, int n)
{
    int v = gr_graph_find(t->g, name);
    CU_ASSERT_FATAL(v >= 0);
    const float *got = rt_ref_error(t->r, v, w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    for (int i = 0; i < n; i++) {
        int ok = fabs(got[i] - want[i]) <= 1e-5 * fabs(want[i]) + 1e-30;
        if (!ok)
            fprintf(stderr, "\n    %%%s track %d [%d] = %.9g, want %.9g\n", name, w, i, got[i], want[i]);
        CU_ASSERT(ok);
    }
}

/* Elementwise rules on x = (0.75, -1.5), y = (0.5, 2): the inputs' u|x|,
 * add, mul, the quotient's two roundings, exp's swing, relu's selection,
 * and a comparison 2^-10 from its threshold: exact in the worst case
 * (u |x| = 0.00073 < 0.00098) but a possible flip in track 1 (6 u |x|
 * reaches across), so the where that reads it takes the other side,
 * |x - y| / lambda + u |y|, into track 1. */
static void test_error_bounds_of_elementwise_ops_are_the_documented_formulas(void)
{
    const float x[] = {0.75f, -1.5f}, y[] = {0.5f, 2};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[2]\ninput %y: f32[2]\n"
                "%a: f32[2] = aten.add.Tensor(%x, %y)\n"
                "%m: f32[2] = aten.mul.Tensor(%x, %y)\n"
                "%d: f32[2] = aten.div.Tensor(%x, %y)\n"
                "%e: f32[2] = aten.exp.default(%x)\n"
                "%r: f32[2] = aten.relu.default(%x)\n"
                "%c: bool[2] = aten.gt.Scalar(%x, 0.7490234375)\n"
                "%s: f32[2] = aten.where.self(%c, %x, %y)\n"
                "output %a, %m, %d, %e, %r, %s\n",
                x, y);
    for (int w = 0; w < 2; w++) {
        double a[2], m[2], d[2], e[2], r[2], c[2], sel[2];
        for (int i = 0; i < 2; i++) {
            double xv = x[i], yv = y[i], ex = EU * fabs(xv), ey = EU * fabs(yv), L = lam_w(w);
            a[i] = stored(xv + yv, ex + ey, w);
            m[i] = stored(xv * yv, fabs(yv) * ex + fabs(xv) * ey + L * ex * ey, w);
            double q = (ex * fabs(yv) + fabs(xv) * ey) / (fabs(yv) * (fabs(yv) - L * ey));
            d[i] = stored(xv / yv, stored(xv / yv, q, w), w);
            e[i] = stored(exp(xv), (exp(xv + L * ex) - exp(xv)) / L, w);
            r[i] = xv > 0 ? ex : 0;
            int flips = fabs(xv - 0.7490234375) <= L * ex;
            c[i] = flips ? 1 / L : 0;
            sel[i] = xv > 0.7490234375 ? (flips ? fmax(ex, fabs(xv - yv) / L + ey) : ex) : ey;
        }
        expect_bound(&t, "x", w, (double[]){EU * 0.75, EU * 1.5}, 2);
        expect_bound(&t, "a", w, a, 2);
        expect_bound(&t, "m", w, m, 2);
        expect_bound(&t, "d", w, d, 2);
        expect_bound(&t, "e", w, e, 2);
        expect_bound(&t, "r", w, r, 2);
        expect_bound(&t, "c", w, c, 2);
        expect_bound(&t, "s", w, sel, 2);
    }
    /* the flip shows in track 1 only */
    CU_ASSERT_EQUAL(rt_ref_error(t.r, gr_graph_find(t.g, "c"), 0)[0], 0);
    CU_ASSERT(rt_ref_error(t.r, gr_graph_find(t.g, "c"), 1)[0] > 0);
    done(&t);
}

/* A quotient by an infinite constant (x / -inf): the device divides by
 * the stand-in 2^30, so the bound is (|x| + u|x|) / 2^30, stored; it was
 * inf / inf = NaN, an internal error of --check. */
static void test_a_quotient_by_an_infinite_constant_has_the_stand_ins_bound(void)
{
    const float x[] = {3e-30f, 1000};
    run_t t;
    RUN_TRACKED(&t, "input %x: f32[2]\n%d: f32[2] = aten.div.Tensor(%x, -inf)\noutput %d\n", x);
    for (int w = 0; w < 2; w++) {
        double d[2];
        for (int i = 0; i < 2; i++) {
            double q = (fabs(x[i]) + EU * fabs(x[i])) / 0x1p30;
            d[i] = stored(-0.0, stored(-0.0, q, w), w);
        }
        expect_bound(&t, "d", w, d, 2);
    }
    done(&t);
}

/* Sum, mean, amax and softmax over x = (1, -2, 0.5, 3). */
static void test_error_bounds_of_reductions_and_softmax_are_the_documented_formulas(void)
{
    const double xs[4] = {1, -2, 0.5, 3};
    const float x[] = {1, -2, 0.5f, 3};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[1, 4]\n"
                "%s: f32[1] = aten.sum.dim_IntList(%x, [-1])\n"
                "%m: f32[1] = aten.mean.dim(%x, [-1])\n"
                "%a: f32[1] = aten.amax.default(%x, [-1])\n"
                "%y: f32[1, 4] = aten._softmax.default(%x, -1, False)\n"
                "output %s, %m, %a, %y\n",
                x);
    for (int w = 0; w < 2; w++) {
        double L = lam_w(w), sum = 0, pe = 0, pe2 = 0, mag = 0, E[4];
        for (int k = 0; k < 4; k++) {
            E[k] = EU * fabs(xs[k]);
            sum += xs[k];
            pe += E[k];
            pe2 += E[k] * E[k];
            mag += fabs(xs[k]) + E[k];
        }
        double es = stored(sum, (w ? sqrt(pe2) : pe) + (w ? 2 : 4) * 0x1p-23 * mag, w); /* sqrt(4) in track 1 */
        double em = stored(sum / 4, stored(sum / 4, es / 4, w), w);
        expect_bound(&t, "s", w, &es, 1);
        expect_bound(&t, "m", w, &em, 1);
        expect_bound(&t, "a", w, (double[]){EU * 3}, 1);
        /* softmax: D_j, eta, zeta; the max is x_3 = 3 with E = 3u */
        double m = 3, emax = EU * 3, s = 0, y[4], D[4], sp = 0, sm = 0, q2 = 0, want[4];
        for (int k = 0; k < 4; k++)
            s += exp(xs[k] - m);
        for (int k = 0; k < 4; k++) {
            y[k] = exp(xs[k] - m) / s;
            D[k] = E[k] + ERHO * (fabs(xs[k] - m) + E[k] + emax) + ERHO / (1 - ERHO);
            double g = expm1(ELAM * D[k]) / (ELAM * D[k]), tk = y[k] * D[k] * g;
            sp += y[k] * exp(D[k]);
            sm += y[k] * exp(-D[k]);
            q2 += tk * tk;
        }
        double eta = (1 + 4 * 0x1p-23) * (1 + ERHO) - 1 + 4 * 0x1p-31, zeta = (1 + ERHO) * (1 + ERHO) - 1;
        for (int j = 0; j < 4; j++) {
            double r;
            if (w) {
                double g = expm1(ELAM * D[j]) / (ELAM * D[j]), tj = y[j] * D[j] * g;
                r = g * (1 - y[j]) * D[j] + sqrt(q2 - tj * tj) + zeta + eta;
            } else {
                r = fmax(exp(D[j]) / sm * (1 + zeta) / (1 - eta) - 1, 1 - exp(-D[j]) / sp * (1 - zeta) / (1 + eta));
            }
            want[j] = y[j] * r + 2 * 0x1p-31;
        }
        (void)L;
        expect_bound(&t, "y", w, want, 4);
    }
    done(&t);
}

/* A product of inputs: track 0 is the short form's formula of the
 * product (docs/validation.md, "Matrix multiply") plus u^2 (|A||B|), the
 * second-order term E_A E_B written out. */
static void test_error_bound_of_mm_of_inputs_is_the_short_forms_formula_plus_u2(void)
{
    const float a[] = {0.75f, -0.5f, 1.25f, 2, 0.125f, -1}, b[] = {0.5f, -1, 1.5f, 0.25f, -0.75f, 2};
    run_t t;
    RUN_TRACKED(&t,
                "input %a: f32[2, 3]\ninput %b: f32[3, 2]\n"
                "%c: f32[2, 2] = aten.mm.default(%a, %b)\n"
                "output %c\n",
                a, b);
    double w0[4], w1[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double ab = 0, c = 0, t1 = 0, t2 = 0;
            for (int k = 0; k < 3; k++) {
                double av = a[i * 3 + k], bv = b[k * 2 + j], sa = EU * fabs(av), sb = EU * fabs(bv);
                ab += fabs(av * bv);
                c += av * bv;
                t1 += sa * sa * (fabs(bv) + ELAM * sb) * (fabs(bv) + ELAM * sb);
                t2 += av * av * sb * sb;
            }
            w0[i * 2 + j] = (2 * EU * (1 + EU) + EU * EU + 3 * 0x1p-23) * ab + EU * fabs(c);
            double q = (1 + EU) * (sqrt(t1) + sqrt(t2)) + sqrt(3) * 0x1p-23 * ab, r = EU * fabs(c);
            w1[i * 2 + j] = sqrt(q * q + r * r);
        }
    expect_bound(&t, "c", 0, w0, 4);
    expect_bound(&t, "c", 1, w1, 4);
    done(&t);
}

/* A DL16 device's conv: operands rounded to DL16, products exact, fp32
 * sums; with per_tap each tap's (ci) sum is added to the stored partial sum
 * and the result stored in DL16, else one fp32 sum over every term (one PT
 * product).  x (1, 2, 4, 4), w (3, 2, 2, 2), no padding. */
static double device_conv(const float *x, const float *w, int s, int co, int oh, int ow, int per_tap)
{
    float acc = 0;
    for (int t = 0; t < 4; t++) {
        float tap = 0;
        for (int ci = 0; ci < 2; ci++) {
            float xv = isa_dl16_round(x[(ci * 4 + oh * s + t / 2) * 4 + ow * s + t % 2]);
            tap += xv * isa_dl16_round(w[(co * 2 + ci) * 4 + t]);
        }
        acc = per_tap ? isa_dl16_round(acc + tap) : acc + tap;
    }
    return isa_dl16_round(acc);
}

/* A conv whose windows tile its input (stride = kernel, no padding: ViT's
 * patch embedding) is one PT product (docs/compiler.md, "Convolution"): its
 * bound is the matrix product's over K = C kh kw, the fp32 roundings in
 * quadrature in track 1 (sqrt(K) 2^-23 |X||W|), with no stored partial sum;
 * at stride 1 each of the 4 taps' partial sums adds rho |X||W| (track 1:
 * sqrt(4) rho |X||W|).  Both contain a DL16 device's error. */
static void test_a_conv_whose_windows_tile_its_input_is_bounded_as_one_product(void)
{
    float x[32], w[24];
    for (int i = 0; i < 32; i++)
        x[i] = (float)sin(i + 1.0);
    for (int i = 0; i < 24; i++)
        w[i] = (float)(0.5 * cos(3 * i + 1.0));
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[1, 2, 4, 4]\ninput %w: f32[3, 2, 2, 2]\n"
                "%y: f32[1, 3, 2, 2] = aten.convolution.default(%x, %w, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)\n"
                "%z: f32[1, 3, 3, 3] = aten.convolution.default(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
                "output %y, %z\n",
                x, w);
    for (int s = 2; s >= 1; s--) {
        const int n = s == 2 ? 2 : 3;
        double want[2][27];
        for (int co = 0; co < 3; co++)
            for (int o = 0; o < n * n; o++) {
                double ab = 0, c = 0, t1 = 0, t2 = 0;
                for (int k = 0; k < 8; k++) {
                    int ci = k / 4, kh = k % 4 / 2, kw = k % 2;
                    double av = x[(ci * 4 + o / n * s + kh) * 4 + o % n * s + kw], bv = w[co * 8 + k];
                    double sa = EU * fabs(av), sb = EU * fabs(bv);
                    ab += fabs(av * bv);
                    c += av * bv;
                    t1 += sa * sa * (fabs(bv) + ELAM * sb) * (fabs(bv) + ELAM * sb);
                    t2 += av * av * sb * sb;
                }
                double parts = s == 2 ? 0 : 4, r = EU * fabs(c);
                want[0][co * n * n + o] = (2 * EU * (1 + EU) + EU * EU + 8 * 0x1p-23 + parts * ERHO) * ab + r;
                double q = (1 + EU) * (sqrt(t1) + sqrt(t2)) + (sqrt(8) * 0x1p-23 + sqrt(parts) * ERHO) * ab;
                want[1][co * n * n + o] = sqrt(q * q + r * r);
                double dev = device_conv(x, w, s, co, o / n, o % n, s == 1);
                CU_ASSERT(fabs(dev - c) <= fmin(want[0][co * n * n + o], ELAM * want[1][co * n * n + o]));
            }
        expect_bound(&t, s == 2 ? "y" : "z", 0, want[0], 3 * n * n);
        expect_bound(&t, s == 2 ? "y" : "z", 1, want[1], 3 * n * n);
    }
    done(&t);
}

/* A long product whose partial sums are far above its result (the first
 * half of the terms positive, the second negative): track 1 takes the fp32
 * accumulation's K - 1 roundings in quadrature, sqrt(K) 2^-23 |A||B|, and
 * 6 S contains a DL16 device's error (operands rounded, exact products, a
 * sequential fp32 sum, the result rounded). */
static void test_a_long_products_fp32_roundings_add_in_quadrature_in_track_1(void)
{
    enum { K = 4096 };
    static float a[K], b[K];
    double ab = 0, c = 0, t1 = 0, t2 = 0;
    float acc = 0;
    for (int k = 0; k < K; k++) {
        a[k] = (float)((k < K / 2 ? 1 : -1) * (0.5 + 0.5 * fabs(sin(k * 0.7))));
        b[k] = (float)(0.75 + 0.25 * cos(k * 1.3));
        double sa = EU * fabs(a[k]), sb = EU * fabs(b[k]);
        ab += fabs((double)a[k] * b[k]);
        c += (double)a[k] * b[k];
        t1 += sa * sa * (fabs(b[k]) + ELAM * sb) * (fabs(b[k]) + ELAM * sb);
        t2 += (double)a[k] * a[k] * sb * sb;
        acc += isa_dl16_round(a[k]) * isa_dl16_round(b[k]);
    }
    run_t t;
    RUN_TRACKED(&t,
                "input %a: f32[1, 4096]\ninput %b: f32[4096, 1]\n"
                "%c: f32[1, 1] = aten.mm.default(%a, %b)\noutput %c\n",
                a, b);
    double q = (1 + EU) * (sqrt(t1) + sqrt(t2)) + sqrt((double)K) * 0x1p-23 * ab, r = EU * fabs(c);
    double s1 = sqrt(q * q + r * r);
    expect_bound(&t, "c", 1, &s1, 1);
    CU_ASSERT(fabs(isa_dl16_round(acc) - c) <= ELAM * s1);
    done(&t);
}

/* Layer norm follows its decomposition: mean = sum / N, xc = x - mean,
 * var = sum(xc^2) / N, rstd = rsqrt(var + eps), y = xc rstd w + b, each
 * step a stored value with the rules above. */
static void test_error_bound_of_layer_norm_follows_its_decomposition(void)
{
    const float x[] = {1, -2, 0.5f, 3}, wt[] = {0.5f, 1.5f, -1, 2}, bs[] = {0.25f, 0, -0.5f, 1};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[1, 4]\ninput %w: f32[4]\ninput %b: f32[4]\n"
                "%ln: (f32[1, 4], f32[1, 1], f32[1, 1]) = aten.native_layer_norm.default(%x, [4], %w, %b, 0.125)\n"
                "%y: f32[1, 4] = getitem(%ln, 0)\n%rstd: f32[1, 1] = getitem(%ln, 2)\n"
                "output %y, %rstd\n",
                x, wt, bs);
    for (int w = 0; w < 2; w++) {
        double L = lam_w(w), s = 0, p = 0, mag = 0;
        for (int k = 0; k < 4; k++) {
            s += x[k];
            p += w ? EU * EU * x[k] * x[k] : EU * fabs(x[k]);
            mag += (1 + EU) * fabs(x[k]);
        }
        double es = stored(s, (w ? sqrt(p) : p) + (w ? 2 : 4) * 0x1p-23 * mag, w), mean = s / 4;
        double em = stored(mean, stored(mean, es / 4, w), w);
        double xc[4], exc[4], s2 = 0, p2 = 0, mag2 = 0;
        for (int k = 0; k < 4; k++) {
            xc[k] = x[k] - mean;
            exc[k] = stored(xc[k], EU * fabs(x[k]) + em, w);
            double e2 = stored(xc[k] * xc[k], 2 * fabs(xc[k]) * exc[k] + L * exc[k] * exc[k], w);
            s2 += xc[k] * xc[k];
            p2 += w ? e2 * e2 : e2;
            mag2 += xc[k] * xc[k] + e2;
        }
        double ev = stored(s2, (w ? sqrt(p2) : p2) + (w ? 2 : 4) * 0x1p-23 * mag2, w), var = s2 / 4;
        ev = stored(var, stored(var, ev / 4, w), w);
        double ve = var + 0.125, eve = stored(ve, ev, w), rstd = 1 / sqrt(ve);
        double er = stored(rstd, (1 / sqrt(ve - L * eve) - rstd) / L, w), want[4];
        for (int k = 0; k < 4; k++) {
            double y0 = xc[k] * rstd, e0 = stored(y0, fabs(rstd) * exc[k] + fabs(xc[k]) * er + L * exc[k] * er, w);
            double ew = EU * fabs(wt[k]), y1 = y0 * wt[k];
            double e1 = stored(y1, fabs(wt[k]) * e0 + fabs(y0) * ew + L * e0 * ew, w);
            want[k] = stored(y1 + bs[k], e1 + EU * fabs(bs[k]), w);
        }
        expect_bound(&t, "y", w, want, 4);
        expect_bound(&t, "rstd", w, &er, 1);
    }
    done(&t);
}

/* A masked element (-inf) of a softmax is exact (2^-30 for the flush of
 * exp and of y) and does not change the bounds of the others: the row
 * (1, 2, -inf) bounds like the row (1, 2). */
static void test_masked_softmax_elements_are_exact_and_change_no_other_bound(void)
{
    const float x[] = {1, 2, 0}, mask[] = {0, 0, 1}, x2[] = {1, 2};
    run_t t, t2;
    RUN_TRACKED(&t,
                "input %x: f32[1, 3]\ninput %mask: bool[1, 3]\n"
                "%m: f32[1, 3] = aten.masked_fill.Scalar(%x, %mask, -inf)\n"
                "%y: f32[1, 3] = aten._softmax.default(%m, -1, False)\n"
                "output %y\n",
                x, mask);
    RUN_TRACKED(&t2, "input %x: f32[1, 2]\n%y: f32[1, 2] = aten._softmax.default(%x, -1, False)\noutput %y\n",
                x2);
    for (int w = 0; w < 2; w++) {
        const float *e3 = rt_ref_error(t.r, gr_graph_find(t.g, "y"), w);
        const float *e2 = rt_ref_error(t2.r, gr_graph_find(t2.g, "y"), w);
        CU_ASSERT_EQUAL(e3[2], 0x1p-30f);
        CU_ASSERT_EQUAL(e3[0], e2[0]);
        CU_ASSERT_EQUAL(e3[1], e2[1]);
        CU_ASSERT(e3[0] > 0 && e3[0] < 0.05 * 0.27);
    }
    done(&t);
    done(&t2);
}

/* The tolerance of track bounds w0, w1 as rt_check forms it (without the
 * 2^-30 floor). */
static double tol_of(run_t *t, const char *name, int i)
{
    int v = gr_graph_find(t->g, name);
    return fmin(rt_ref_error(t->r, v, 0)[i], ELAM * rt_ref_error(t->r, v, 1)[i]);
}

/* An exact zero (relu of -1: value 0, bound 0) times a value with an
 * infinite bound (the reciprocal of an input that may flush to 0) is
 * exactly 0: its bound is 0, not 0 * inf = NaN.  And a layer norm of a
 * constant row (the softmax of a single element: 1 with a bound, so the
 * variance's bound reaches below -eps and rstd's is infinite) has a bound,
 * not NaN: xc = 0 with a bound times rstd. */
static void test_a_zero_times_an_infinite_bound_is_zero_never_nan(void)
{
    const float x[] = {-1, 0x1p-32f};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[2]\n"
                "%r: f32[2] = aten.relu.default(%x)\n"
                "%q: f32[2] = aten.reciprocal.default(%x)\n"
                "%s: f32[1] = aten.slice.Tensor(%r, 0, 0, 1)\n"
                "%p: f32[1] = aten.slice.Tensor(%q, 0, 1, 2)\n"
                "%y: f32[1] = aten.mul.Tensor(%s, %p)\n"
                "output %y\n",
                x);
    for (int w = 0; w < 2; w++) {
        CU_ASSERT(isinf(rt_ref_error(t.r, gr_graph_find(t.g, "p"), w)[0]));
        expect_bound(&t, "y", w, (double[]){0}, 1);
    }
    done(&t);
    float c[16];
    for (int i = 0; i < 16; i++)
        c[i] = 0.25f * (float)(i - 8);
    RUN_TRACKED(&t,
                "input %x: f32[1, 16]\n"
                "%s: f32[1, 16] = aten._softmax.default(%x, 0, False)\n"
                "%ln: (f32[1, 16], f32[1, 1], f32[1, 1]) = aten.native_layer_norm.default(%s, [16], None, None, 1e-05)\n"
                "%y: f32[1, 16] = getitem(%ln, 0)\n"
                "output %y\n",
                c);
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 16; i++)
            CU_ASSERT(!isnan(rt_ref_error(t.r, gr_graph_find(t.g, "y"), w)[i]));
    done(&t);
}

/* A matrix product's bounds follow the same rule (they are products of
 * bound matrices, which BLAS would turn NaN): a row of A whose first
 * element has an infinite bound times a column of B whose first element
 * is an exact zero gives a finite bound, the same row times a column of
 * nonzero elements an infinite one, neither NaN (ViT-B/16's encoder met
 * the NaN at block 2's first MLP product); so does a convolution's
 * (torchvision's ResNet-50 at 96 x 96 met it in layer4, after its
 * worst-case bounds had overflowed). */
static void test_a_product_of_an_exact_zero_and_an_infinite_bound_is_finite(void)
{
    const float x[] = {0x1p-32f, 1, -1, 1};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[4]\n"
                "%q: f32[4] = aten.reciprocal.default(%x)\n"
                "%qa: f32[2] = aten.slice.Tensor(%q, 0, 0, 2)\n"
                "%a: f32[1, 2] = aten.reshape.default(%qa, [1, 2])\n"
                "%r: f32[4] = aten.relu.default(%x)\n"
                "%rb: f32[2] = aten.slice.Tensor(%r, 0, 2, 4)\n"
                "%b: f32[2, 1] = aten.reshape.default(%rb, [2, 1])\n"
                "%xb: f32[2] = aten.slice.Tensor(%x, 0, 1, 3)\n"
                "%b2: f32[2, 1] = aten.reshape.default(%xb, [2, 1])\n"
                "%y: f32[1, 1] = aten.mm.default(%a, %b)\n"
                "%z: f32[1, 1] = aten.mm.default(%a, %b2)\n"
                "%ac: f32[1, 2, 1, 1] = aten.reshape.default(%qa, [1, 2, 1, 1])\n"
                "%bc: f32[1, 2, 1, 1] = aten.reshape.default(%rb, [1, 2, 1, 1])\n"
                "%c: f32[1, 1, 1, 1] = aten.convolution.default(%ac, %bc, None, [1], [0], [1], False, [0], 1)\n"
                "output %y, %z, %c\n",
                x);
    for (int w = 0; w < 2; w++) {
        CU_ASSERT(isinf(rt_ref_error(t.r, gr_graph_find(t.g, "a"), w)[0]));
        float ey = rt_ref_error(t.r, gr_graph_find(t.g, "y"), w)[0];
        float ez = rt_ref_error(t.r, gr_graph_find(t.g, "z"), w)[0];
        float ec = rt_ref_error(t.r, gr_graph_find(t.g, "c"), w)[0];
        CU_ASSERT(isfinite(ey) && ey > 0 && ey < 0.01f);
        CU_ASSERT(isinf(ez));
        CU_ASSERT(isfinite(ec) && ec > 0 && ec < 0.01f); /* ResNet-50 met NaN in a conv's bound */
    }
    done(&t);
}

/* where(x < y, x, -1.5) with y a hair above x: the condition may flip,
 * and a flipped element is exactly -1.5, off by |x + 1.5|: the whole
 * bound, which fp32 storage (and lambda's division) must not round below
 * it, for any x. */
static void test_a_flipping_where_covers_its_whole_jump(void)
{
    float x[64], y[64];
    for (int i = 0; i < 64; i++) {
        x[i] = -0.5f - (float)i / 97.0f;
        y[i] = x[i] + 0x1p-12f * fabsf(x[i]);
    }
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[64]\ninput %y: f32[64]\n"
                "%m: bool[64] = aten.lt.Tensor(%x, %y)\n"
                "%o: f32[64] = aten.where.self(%m, %x, -1.5)\n"
                "output %o\n",
                x, y);
    for (int i = 0; i < 64; i++) {
        double j = fabs((double)x[i] + 1.5);
        int ok = tol_of(&t, "o", i) >= j;
        if (!ok)
            fprintf(stderr, "\n    x = %.9g: tolerance %.9g < jump %.9g\n", x[i], tol_of(&t, "o", i), j);
        CU_ASSERT(ok);
    }
    done(&t);
}

/* clamp(masked_fill(x, x > z, -10000), -0.5, 0.5) with z a hair below x:
 * the fill may not happen on the device, which then gives clamp(x) = 0.5
 * where the reference is -0.5.  The clamp's bound is its swing over the
 * input's whole interval (both tracks), so the tolerance covers 1. */
static void test_clamp_follows_its_input_over_the_whole_interval(void)
{
    const float x[] = {0.75f}, z[] = {0.75f * (1 - 0x1p-12f)};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[1]\ninput %z: f32[1]\n"
                "%m: bool[1] = aten.gt.Tensor(%x, %z)\n"
                "%f: f32[1] = aten.masked_fill.Scalar(%x, %m, -10000.0)\n"
                "%c: f32[1] = aten.clamp.default(%f, -0.5, 0.5)\n"
                "output %c\n",
                x, z);
    CU_ASSERT(tol_of(&t, "c", 0) >= 1);
    CU_ASSERT(tol_of(&t, "c", 0) <= 1.01);
    done(&t);
}

/* softmax(50000 x) for x = (1, 1 - 2^-11, -1): the logits' bounds (u of
 * 50000, about 49) reach across the gap of the first two (24), so the
 * device may give (0.5, 0.5, 0) where the reference is (1, 0, 0): the
 * first two bounds grow to cover 0.5 and saturate at max(y, 1 - y)
 * (plus the roundings of the last division), the third stays exact. */
static void test_softmax_of_logits_with_large_bounds_saturates(void)
{
    const float x[] = {1, 1 - 0x1p-11f, -1};
    run_t t;
    RUN_TRACKED(&t,
                "input %x: f32[1, 3]\n"
                "%l: f32[1, 3] = aten.mul.Tensor(%x, 50000)\n"
                "%y: f32[1, 3] = aten._softmax.default(%l, -1, False)\n"
                "output %y\n",
                x);
    for (int i = 0; i < 2; i++) {
        double tol = tol_of(&t, "y", i);
        CU_ASSERT(tol >= 0.5);
        CU_ASSERT(tol <= 1.01);
    }
    CU_ASSERT(tol_of(&t, "y", 2) < 1e-8);
    done(&t);
}

/* ---- Validation of a program whose graph is a full graph ---- */

#define CFG4 SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg"

typedef struct {
    const char *name;
    isa_role role;
    int rank;
    int64_t shape[2];
} tdesc;

/* A one-core program holding fp32 tensors (so written values read back
 * exactly) and the graph text. */
static rt_program *load_prog(rt_device *dev, const tdesc *ts, int n, const char *graph)
{
    isa_program *p = isa_program_new(1);
    snprintf(p->config, sizeof p->config, "spyre-4core");
    p->lx_bytes = 262144;
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        int k = isa_program_add_tensor(p, ts[i].name, ts[i].role, ISA_HT_F32, ISA_T_F32, ts[i].rank, ts[i].shape, off);
        isa_tensor *t = &p->tensors[k];
        t->bytes = isa_tensor_device_bytes(t, p->stick_bytes);
        off += (t->bytes + 127) / 128 * 128;
    }
    p->dram_bytes = off ? off : 128;
    p->graph = graph ? strdup(graph) : NULL;
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog)
        fprintf(stderr, "\n    %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    return prog;
}

static const char *mm_relu_graph = "# a full graph\n"
                                   "input %x: f32[4, 8]\n"
                                   "param %w: f32[8, 3] = \"w\"\n"
                                   "%y: f32[4, 3] = aten.mm.default(%x, %w)\n"
                                   "%z: f32[4, 3] = aten.relu.default(%y)\n"
                                   "output %y, %z\n";

static void test_check_runs_a_full_graph_through_the_executor(void)
{
    rt_device *dev = rt_open(CFG4, err, sizeof err);
    if (!dev)
        fprintf(stderr, "\n    %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    tdesc ts[] = {{"x", ISA_ROLE_INPUT, 2, {4, 8}},
                  {"w", ISA_ROLE_WEIGHT, 2, {8, 3}},
                  {"y", ISA_ROLE_OUTPUT, 2, {4, 3}},
                  {"z", ISA_ROLE_OUTPUT, 2, {4, 3}}};
    rt_program *prog = load_prog(dev, ts, 4, mm_relu_graph);
    CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(prog, 5, err, sizeof err), 0);
    const float *x = rt_host_tensor(prog, "x", NULL), *w = rt_host_tensor(prog, "w", NULL);
    float y[12], z[12];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 8; k++)
                s += (double)x[i * 8 + k] * w[k * 3 + j];
            y[i * 3 + j] = (float)s;
            z[i * 3 + j] = s > 0 ? (float)s : 0;
        }
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "y", y, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "z", z, ISA_HT_F32, err, sizeof err), 0);
    rt_check_result *r;
    int n;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(r[0].name, "y");
    CU_ASSERT_STRING_EQUAL(r[0].op, "aten.mm.default");
    CU_ASSERT_EQUAL(r[0].line, 4);
    CU_ASSERT_STRING_EQUAL(r[1].name, "z");
    CU_ASSERT_STRING_EQUAL(r[1].op, "aten.relu.default");
    CU_ASSERT_EQUAL(r[1].line, 5);
    CU_ASSERT(r[0].ok && r[1].ok && r[1].max_abs_err < 1e-6);
    free(r);
    /* one element of z off by 0.5: only that one fails */
    z[7] += 0.5f;
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "z", z, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 1);
    CU_ASSERT(r[0].ok);
    CU_ASSERT_FALSE(r[1].ok);
    CU_ASSERT_EQUAL(r[1].within, 11);
    CU_ASSERT_EQUAL(r[1].worst, 7);
    free(r);
    /* the same through a graph parsed by the caller */
    gr_graph *g = gr_graph_parse(mm_relu_graph, "mine.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(rt_check_graph(prog, g, &r, &n, err, sizeof err), 1);
    CU_ASSERT_EQUAL(n, 2);
    free(r);
    gr_graph_free(g);
    rt_close(dev);
}

/* 1x1: y = x w = -0.375 gets the mm bound of docs/validation.md (the
 * worst case, smaller than 6 times the probabilistic one here): the short
 * form's formula plus u^2 |x||w|; z = relu(y) = 0 is exact, since y's
 * bound (0.0011) does not reach 0: the floor 2^-30 only. */
static void test_check_full_graph_tolerances_are_the_documented_formulas(void)
{
    rt_device *dev = rt_open(CFG4, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    tdesc ts[] = {{"x", ISA_ROLE_INPUT, 2, {1, 1}},
                  {"w", ISA_ROLE_INPUT, 2, {1, 1}},
                  {"y", ISA_ROLE_OUTPUT, 2, {1, 1}},
                  {"output1", ISA_ROLE_OUTPUT, 2, {1, 1}}};
    rt_program *prog = load_prog(dev, ts, 4,
                                 "input %x: f32[1, 1]\ninput %w: f32[1, 1]\n"
                                 "%y: f32[1, 1] = aten.mm.default(%x, %w)\n"
                                 "%z: f32[1, 1] = aten.relu.default(%y)\n"
                                 "output %y, %z\n");
    float x = 0.75f, w = -0.5f;
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", &x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "w", &w, err, sizeof err), 0);
    const double u = 0x1p-10;
    double tol_y = (2 * u * (1 + u) + u * u) * 0.375 + u * 0.375 + 0x1p-23 * 0.375 + 0x1p-30;
    double tol_z = 0x1p-30;
    float yin = (float)(-0.375 + 0.99 * tol_y), zin = (float)(0.99 * tol_z);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "y", &yin, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "output1", &zin, ISA_HT_F32, err, sizeof err), 0);
    rt_check_result *r;
    int n;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(fabs(r[0].worst_tol - tol_y) < 1e-9);
    CU_ASSERT(fabs(r[1].worst_tol - tol_z) < 1e-9);
    CU_ASSERT_STRING_EQUAL(r[1].op, "aten.relu.default"); /* "output1" is the graph's output 1 */
    free(r);
    float yout = (float)(-0.375 + 1.01 * tol_y), zout = (float)(-1.01 * tol_z);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "y", &yout, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "output1", &zout, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 2);
    free(r);
    rt_close(dev);
}

/* A layer norm, a linear layer and a GELU, as a device would compute
 * them: the executor run on the inputs rounded to DL16, its output rounded
 * to DL16 (bias_shift: the bias read one column off).  The check passes
 * that, and fails a wrong element, a wrong row and an off-by-one bias. */
static const char *ln_linear_graph = "input %x: f32[16, 64]\n"
                                     "input %lnw: f32[64]\ninput %lnb: f32[64]\n"
                                     "input %w: f32[32, 64]\ninput %b: f32[32]\n"
                                     "%ln: (f32[16, 64], f32[16, 1], f32[16, 1]) = "
                                     "aten.native_layer_norm.default(%x, [64], %lnw, %lnb, 1e-05)\n"
                                     "%h: f32[16, 64] = getitem(%ln, 0)\n"
                                     "%t: f32[64, 32] = aten.t.default(%w)\n"
                                     "%y: f32[16, 32] = aten.addmm.default(%b, %h, %t)\n"
                                     "%g: f32[16, 32] = aten.gelu.default(%y)\n"
                                     "output %g\n";

static void device_like(const float *const in[5], int bias_shift, float *out)
{
    static const int64_t n[5] = {16 * 64, 64, 64, 32 * 64, 32};
    static const char *names[5] = {"x", "lnw", "lnb", "w", "b"};
    gr_graph *g = gr_graph_parse(ln_linear_graph, "dev.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    rt_ref *r = rt_ref_new(g, err, sizeof err);
    for (int i = 0; i < 5; i++) {
        float *v = malloc((size_t)n[i] * sizeof *v);
        for (int64_t k = 0; k < n[i]; k++)
            v[k] = isa_dl16_round(in[i][i == 4 ? (k + bias_shift) % n[i] : k]);
        CU_ASSERT_EQUAL(rt_ref_set(r, names[i], v, n[i], err, sizeof err), 0);
        free(v);
    }
    CU_ASSERT_EQUAL_FATAL(rt_ref_run(r, err, sizeof err), 0);
    const float *y = rt_ref_output(r, 0, NULL);
    for (int k = 0; k < 16 * 32; k++)
        out[k] = isa_dl16_round(y[k]);
    rt_ref_free(r);
    gr_graph_free(g);
}

static void test_check_catches_a_wrong_element_row_and_broadcast(void)
{
    rt_device *dev = rt_open(CFG4, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    tdesc ts[] = {{"x", ISA_ROLE_INPUT, 2, {16, 64}}, {"lnw", ISA_ROLE_INPUT, 1, {64}}, {"lnb", ISA_ROLE_INPUT, 1, {64}},
                  {"w", ISA_ROLE_INPUT, 2, {32, 64}}, {"b", ISA_ROLE_INPUT, 1, {32}}, {"g", ISA_ROLE_OUTPUT, 2, {16, 32}}};
    rt_program *prog = load_prog(dev, ts, 6, ln_linear_graph);
    static float x[16 * 64], lnw[64], lnb[64], w[32 * 64], b[32], g[16 * 32];
    rt_random_uniform(1, "x", x, 16 * 64);
    rt_random_uniform(2, "lnw", lnw, 64);
    rt_random_uniform(3, "lnb", lnb, 64);
    rt_random_uniform(4, "w", w, 32 * 64);
    rt_random_uniform(5, "b", b, 32);
    for (int k = 0; k < 64; k++) {
        lnw[k] = 1 + 0.25f * lnw[k];
        lnb[k] *= 0.25f;
    }
    for (int k = 0; k < 32 * 64; k++)
        w[k] *= 0.25f;
    const float *const in[5] = {x, lnw, lnb, w, b};
    const char *names[5] = {"x", "lnw", "lnb", "w", "b"};
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(rt_set_input(prog, names[i], in[i], err, sizeof err), 0);
    rt_check_result *r;
    int n;
    char line[512];

    device_like(in, 0, g);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "g", g, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_check(prog, &r, &n, err, sizeof err), 0);
    rt_check_format(&r[0], line, sizeof line);
    printf("\n    device-like: %s", line);
    CU_ASSERT(r[0].ok && r[0].worst_ratio > 0.01 && r[0].worst_ratio < 1);
    free(r);

    /* one element off by 2% of the output's scale: that one fails */
    double scale = 0;
    for (int k = 0; k < 16 * 32; k++)
        scale = fmax(scale, fabs(g[k]));
    g[5 * 32 + 7] += (float)(0.02 * scale);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "g", g, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 1);
    CU_ASSERT_EQUAL(r[0].within, 16 * 32 - 1);
    CU_ASSERT_EQUAL(r[0].worst, 5 * 32 + 7);
    rt_check_format(&r[0], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "worst[5,7]="));
    free(r);

    /* a wrong row: row 4 holds row 3 */
    device_like(in, 0, g);
    memcpy(g + 4 * 32, g + 3 * 32, 32 * sizeof *g);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "g", g, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 1);
    printf("\n    row 4 = row 3: %lld of 32 elements within", (long long)(r[0].within - 15 * 32));
    CU_ASSERT(r[0].within <= 15 * 32 + 2);
    CU_ASSERT_EQUAL(r[0].worst / 32, 4);
    free(r);

    /* the bias broadcast one column off */
    device_like(in, 1, g);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "g", g, ISA_HT_F32, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 1);
    printf("\n    bias off by one column: %lld of 512 elements within\n    ", (long long)r[0].within);
    CU_ASSERT(r[0].within < 16 * 32 / 4);
    free(r);
    rt_close(dev);
}

static void expect_check_error(const char *graph, const char *msg)
{
    rt_device *dev = rt_open(CFG4, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    tdesc ts[] = {{"x", ISA_ROLE_INPUT, 2, {2, 2}}, {"y", ISA_ROLE_OUTPUT, 2, {2, 2}}};
    rt_program *prog = load_prog(dev, ts, 2, graph);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    rt_check_result *r = (rt_check_result *)1;
    int n = 7;
    err[0] = 0;
    CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), -1);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_EQUAL(n, 0);
    if (strcmp(err, msg) != 0)
        fprintf(stderr, "\n    expected '%s'\n    got      '%s'\n", msg, err);
    CU_ASSERT_STRING_EQUAL(err, msg);
    rt_close(dev);
}

static void test_check_full_graph_errors_name_the_graph_line(void)
{
    expect_check_error("input %x: f32[2, 2]\n%y: f32[2, 2] = aten.foo.bar(%x)\noutput %y\n",
                       "reference: graph:2: unsupported op aten.foo.bar");
    expect_check_error("input %x: f32[2, 2]\n%y: f32[2, 2] = aten.relu.default(%x\noutput %y\n",
                       "reference: graph:2:37: expected ',' or ')', found end of line");
    expect_check_error("input %x: f32[2, 2]\n%y: f32[2, 3] = aten.relu.default(%x)\noutput %y\n",
                       "reference: graph:2: aten.relu.default: declared f32[2, 3] but computes f32[2, 2]");
    expect_check_error("input %x: f32[2, 2]\n%q: f32[2, 2] = aten.relu.default(%x)\noutput %q\n",
                       "reference: output y is not computed by the graph");
    expect_check_error("input %x: f32[2, 2]\ninput %v: f32[2]\n%y: f32[2, 2] = aten.add.Tensor(%x, %v)\noutput %y\n",
                       "reference: input %v (graph line 2) is not a tensor of the program");
}

/* The duplicate-name check was quadratic: 200,000 entries took over a
 * minute.  Now sorted: 0.7 s of CPU (mostly cJSON's allocations). */
static void test_safetensors_header_of_200000_entries_loads_fast(void)
{
    enum { N = 200000 };
    char path[512];
    st_path("-many.safetensors", path, sizeof path);
    size_t cap = (size_t)N * 64 + 16, n = 0;
    char *h = malloc(cap);
    h[n++] = '{';
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(h + n, cap - n, "%s\"t%d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}",
                              i ? "," : "", i);
    strcpy(h + n, "}");
    write_raw(path, -1, h, 0);
    /* CPU time, not wall time: the test machine may be busy */
    clock_t t0 = clock();
    rt_st_file *f = rt_st_read(path, err, sizeof err);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->ntensors, N);
#ifdef __SANITIZE_ADDRESS__
    const double limit = 10; /* ASan's allocator is several times slower */
#else
    const double limit = 2;
#endif
    CU_ASSERT(s < limit);
    if (s >= limit)
        fprintf(stderr, "\n    200,000 entries: %.2f s\n", s);
    rt_st_free(f);
    /* and a duplicate among them is still found */
    memcpy(strstr(h, "\"t199999\""), "\"t1\"     ", 9);
    write_raw(path, -1, h, 0);
    CU_ASSERT_PTR_NULL(rt_st_read(path, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "tensor 't1' appears twice in the header"));
    free(h);
    remove(path);
}

static void test_safetensors_header_over_100_mb_is_refused(void)
{
    const char *w24 = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
    expect_st_error(w24, 200000000, 24, "header length 200000000 exceeds the format's limit of 100000000 bytes");
}

static void test_safetensors_fifo_or_directory_is_not_read(void)
{
    char dir[1024], fifo[1100];
    tu_tmpdir(dir, sizeof dir);
    tu_fifo(dir, "weights.safetensors", fifo, sizeof fifo);
    alarm(10); /* a blocking open would hang: fail instead */
    CU_ASSERT_PTR_NULL(rt_st_read(fifo, err, sizeof err));
    alarm(0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "weights.safetensors: not a regular file"));
    CU_ASSERT_PTR_NULL(rt_st_read(dir, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ": not a regular file"));
    tu_rmtree(dir);
}

/* A write that fails part-way leaves the old file as it was. */
static void test_safetensors_failed_write_keeps_the_old_file(void)
{
    char dir[1024], path[1100];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    tu_write_file(path, "old", 3);
    static float big[4096];
    rt_st_entry e = {"big", RT_ST_F32, 1, {4096}, big};
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1000;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = rt_st_write(path, &e, 1, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "out.safetensors: write error"));
    char buf[16] = "";
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(buf, 1, sizeof buf, f), 3);
    fclose(f);
    CU_ASSERT_STRING_EQUAL(buf, "old");
    tu_rmtree(dir);
}

int main(void)
{
    static const tu_test tests[] = {
        {"add sub mul div broadcast with alpha and scalars", test_add_sub_mul_div_broadcast_with_alpha_and_scalars},
        {"integer tensors promote divide and compare", test_integer_tensors_promote_divide_and_compare},
        {"unary functions give known values", test_unary_functions_give_known_values},
        {"activations with parameters give PyTorch's values", test_activations_with_parameters_give_pytorchs_values},
        {"math functions give PyTorch's values", test_math_functions_give_pytorchs_values},
        {"losses give PyTorch's values for each reduction", test_losses_give_pytorchs_values_for_each_reduction},
        {"binary, ternary and reducing math give PyTorch's values",
         test_binary_ternary_and_reducing_math_give_pytorchs_values},
        {"matrix products use the schemas arguments", test_matrix_products_use_the_schemas_arguments},
        {"matmul broadcasts batch dims", test_matmul_broadcasts_batch_dims},
        {"views copy in row-major order", test_views_copy_in_row_major_order},
        {"split forms give tuples read by getitem", test_split_forms_give_tuples_read_by_getitem},
        {"cat and stack along negative dims", test_cat_and_stack_along_negative_dims},
        {"native_layer_norm gives output mean and rstd", test_native_layer_norm_gives_output_mean_and_rstd},
        {"image padding and pooling give pytorch's values", test_image_padding_and_pooling_give_pytorchs_values},
        {"batch and group norm give pytorch's values", test_batch_and_group_norm_give_pytorchs_values},
        {"padding modes and nearest upsampling give pytorch's values",
         test_padding_modes_and_nearest_upsampling_give_pytorchs_values},
        {"var with correction and var_mean", test_var_with_correction_and_var_mean},
        {"sum mean amax over dims with keepdim", test_sum_mean_amax_over_dims_with_keepdim},
        {"cumsum runs along any dim", test_cumsum_runs_along_any_dim},
        {"softmax over any dim and masked_fill with -inf", test_softmax_over_any_dim_and_masked_fill_with_minus_inf},
        {"embedding gathers rows by index", test_embedding_gathers_rows_by_index},
        {"creation ops infer dtypes as PyTorch", test_creation_ops_infer_dtypes_as_pytorch},
        {"composite ops run as written", test_composite_ops_run_as_written},
        {"errors name the line op and shapes", test_errors_name_the_line_op_and_shapes},
        {"inputs must be set with the declared size", test_inputs_must_be_set_with_the_declared_size},
        {"safetensors round trip every dtype", test_safetensors_round_trip_every_dtype},
        {"safetensors reports each corruption", test_safetensors_reports_each_corruption},
        {"safetensors: a header of 200,000 entries loads fast", test_safetensors_header_of_200000_entries_loads_fast},
        {"safetensors: a header over 100 MB is refused", test_safetensors_header_over_100_mb_is_refused},
        {"safetensors: a FIFO or directory is not read", test_safetensors_fifo_or_directory_is_not_read},
        {"safetensors: a failed write keeps the old file", test_safetensors_failed_write_keeps_the_old_file},
        {"weights and inputs load by key and name", test_weights_and_inputs_load_by_key_and_name},
        {"encoder_small trace matches PyTorch", test_encoder_small_trace_matches_pytorch},
        {"every small trace matches PyTorch", test_every_small_trace_matches_pytorch},
        {"error bounds of elementwise ops are the documented formulas",
         test_error_bounds_of_elementwise_ops_are_the_documented_formulas},
        {"a quotient by an infinite constant has the stand-in's bound",
         test_a_quotient_by_an_infinite_constant_has_the_stand_ins_bound},
        {"error bounds of reductions and softmax are the documented formulas",
         test_error_bounds_of_reductions_and_softmax_are_the_documented_formulas},
        {"error bound of mm of inputs is the short form's formula plus u^2",
         test_error_bound_of_mm_of_inputs_is_the_short_forms_formula_plus_u2},
        {"a conv whose windows tile its input is bounded as one product",
         test_a_conv_whose_windows_tile_its_input_is_bounded_as_one_product},
        {"a long product's fp32 roundings add in quadrature in track 1",
         test_a_long_products_fp32_roundings_add_in_quadrature_in_track_1},
        {"error bound of layer norm follows its decomposition", test_error_bound_of_layer_norm_follows_its_decomposition},
        {"masked softmax elements are exact and change no other bound",
         test_masked_softmax_elements_are_exact_and_change_no_other_bound},
        {"a zero times an infinite bound is zero never NaN", test_a_zero_times_an_infinite_bound_is_zero_never_nan},
        {"a product of an exact zero and an infinite bound is finite",
         test_a_product_of_an_exact_zero_and_an_infinite_bound_is_finite},
        {"a flipping where covers its whole jump", test_a_flipping_where_covers_its_whole_jump},
        {"clamp follows its input over the whole interval", test_clamp_follows_its_input_over_the_whole_interval},
        {"softmax of logits with large bounds saturates", test_softmax_of_logits_with_large_bounds_saturates},
        {"convolutions give hand-worked values", test_convolutions_give_hand_worked_values},
        {"check runs a full graph through the executor", test_check_runs_a_full_graph_through_the_executor},
        {"check full graph tolerances are the documented formulas",
         test_check_full_graph_tolerances_are_the_documented_formulas},
        {"check full graph errors name the graph line", test_check_full_graph_errors_name_the_graph_line},
        {"check catches a wrong element row and broadcast", test_check_catches_a_wrong_element_row_and_broadcast},
        {NULL, NULL},
    };
    return tu_run("reference", tests);
}
