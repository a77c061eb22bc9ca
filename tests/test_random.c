/* test_random.c: the host's random ops (runtime/ref_random.c, docs/validation.md "Random ops"): their
 * draws against the distributions they promise (means within 5 sigma over 200,000 draws, every value in
 * range, p = 0 and 1 exact), their reproducibility from the seed, the interval --check's reference gives
 * them, and a run on the simulated chip that draws on the host and validates. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "testutil.h"

#define N 200000 /* draws: 5 sigma of a mean is then 5 / sqrt(12 N) = 0.0032 for rand */

static char err[2048];

typedef struct {
    gr_graph *g;
    rt_ref *r;
} run_t;

/* Parse text, set input %x (if any) from x, run with seed (error bounds on when track). */
static int run_text(run_t *t, const char *text, const float *x, uint64_t seed, int track)
{
    memset(t, 0, sizeof *t);
    if (!(t->g = gr_graph_parse(text, "t.txt", err, sizeof err)) || !(t->r = rt_ref_new(t->g, err, sizeof err)))
        return -1;
    rt_ref_track_errors(t->r, track);
    rt_ref_seed(t->r, seed);
    for (int v = 0; v < t->g->nvalues; v++)
        rt_ref_keep(t->r, v);
    if (t->g->ninputs && rt_ref_set(t->r, "x", x, gr_ttype_numel(&t->g->values[t->g->inputs[0]].type), err,
                                    sizeof err))
        return -1;
    return rt_ref_run(t->r, err, sizeof err);
}

static void done(run_t *t)
{
    rt_ref_free(t->r);
    gr_graph_free(t->g);
}

static const float *value(run_t *t, const char *name)
{
    return rt_ref_value(t->r, gr_graph_find(t->g, name), NULL);
}

static const char rand_graph[] = "graph g\n"
                                 "%r: f32[200000] = aten.rand.default([200000], dtype=f32)\n"
                                 "output %r\n";

static void test_rand_is_uniform_in_0_1_with_mean_one_half_within_5_sigma(void)
{
    run_t t;
    CU_ASSERT_EQUAL_FATAL(run_text(&t, rand_graph, NULL, 1, 0), 0);
    const float *r = value(&t, "r");
    double sum = 0;
    int64_t out = 0, low = 0;
    for (int k = 0; k < N; k++) {
        sum += r[k];
        out += !(r[k] >= 0 && r[k] < 1);
        low += r[k] < 0.25f;
    }
    CU_ASSERT_EQUAL(out, 0);
    CU_ASSERT(fabs(sum / N - 0.5) < 5 * sqrt(1.0 / 12 / N));
    CU_ASSERT(fabs((double)low / N - 0.25) < 5 * sqrt(0.25 * 0.75 / N)); /* uniform, not only centred */
    done(&t);
}

static void test_randn_has_mean_0_and_variance_1_within_5_sigma(void)
{
    run_t t;
    CU_ASSERT_EQUAL_FATAL(run_text(&t, "graph g\n%r: f32[200000] = aten.randn.default([200000])\noutput %r\n", NULL,
                                   1, 0), 0);
    const float *r = value(&t, "r");
    double s1 = 0, s2 = 0;
    for (int k = 0; k < N; k++)
        s1 += r[k], s2 += (double)r[k] * r[k];
    CU_ASSERT(fabs(s1 / N) < 5 * sqrt(1.0 / N));
    CU_ASSERT(fabs(s2 / N - 1) < 5 * sqrt(2.0 / N)); /* var of x^2 is 2 */
    done(&t);
}

static void test_draws_repeat_for_a_seed_and_change_with_it(void)
{
    run_t a, b, c;
    CU_ASSERT_EQUAL_FATAL(run_text(&a, rand_graph, NULL, 7, 0), 0);
    CU_ASSERT_EQUAL_FATAL(run_text(&b, rand_graph, NULL, 7, 0), 0);
    CU_ASSERT_EQUAL_FATAL(run_text(&c, rand_graph, NULL, 8, 0), 0);
    CU_ASSERT(memcmp(value(&a, "r"), value(&b, "r"), N * sizeof(float)) == 0);
    CU_ASSERT(memcmp(value(&a, "r"), value(&c, "r"), N * sizeof(float)) != 0);
    done(&a);
    done(&b);
    done(&c);
}

static const char bern_graph[] = "graph g\n"
                                 "input %x: f32[200002]\n"
                                 "%b: f32[200002] = aten.bernoulli.default(%x)\n"
                                 "output %b\n";

static void test_bernoulli_draws_0_or_1_with_mean_p_and_is_exact_at_p_0_and_1(void)
{
    float *p = malloc((N + 2) * sizeof *p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int k = 0; k < N; k++)
        p[k] = 0.3f;
    p[N] = 0, p[N + 1] = 1;
    run_t t;
    CU_ASSERT_EQUAL_FATAL(run_text(&t, bern_graph, p, 1, 0), 0);
    const float *b = value(&t, "b");
    double sum = 0;
    int64_t other = 0;
    for (int k = 0; k < N; k++) {
        sum += b[k];
        other += b[k] != 0 && b[k] != 1;
    }
    CU_ASSERT_EQUAL(other, 0);
    CU_ASSERT(fabs(sum / N - 0.3) < 5 * sqrt(0.3 * 0.7 / N));
    CU_ASSERT_EQUAL(b[N], 0);
    CU_ASSERT_EQUAL(b[N + 1], 1);
    done(&t);
    /* the reference's interval: {0, 1} as 1/2 +- 1/2, exact where p is exactly 0 or 1 */
    CU_ASSERT_EQUAL_FATAL(run_text(&t, bern_graph, p, 1, 1), 0);
    int v = gr_graph_find(t.g, "b");
    const float *val = rt_ref_value(t.r, v, NULL), *eb = rt_ref_error(t.r, v, 0);
    CU_ASSERT(val[0] == 0.5f && eb[0] >= 0.5f && eb[0] < 0.51f);
    CU_ASSERT(val[N] == 0 && eb[N] == 0 && val[N + 1] == 1 && eb[N + 1] == 0);
    CU_ASSERT(rt_ref_drawn(t.r, v));
    done(&t);
    p[0] = 1.5f;
    CU_ASSERT_NOT_EQUAL(run_text(&t, bern_graph, p, 1, 0), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "p = 1.5 is not in [0, 1]"));
    done(&t);
    free(p);
}

/* bernoulli.p(self, p=0.5): one probability for every element, self only shapes the result */
static void test_bernoulli_p_takes_one_probability_half_by_default(void)
{
    static const char *const graphs[] = {
        "graph g\ninput %x: f32[200000]\n%b: f32[200000] = aten.bernoulli.p(%x)\noutput %b\n",
        "graph g\ninput %x: f32[200000]\n%b: f32[200000] = aten.bernoulli.p(%x, 0.0)\noutput %b\n",
    };
    float *x = calloc(N, sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    for (int i = 0; i < 2; i++) {
        run_t t;
        CU_ASSERT_EQUAL_FATAL(run_text(&t, graphs[i], x, 1, 0), 0);
        const float *b = value(&t, "b");
        double sum = 0;
        for (int k = 0; k < N; k++)
            sum += b[k];
        double want = i == 0 ? 0.5 : 0, sigma = i == 0 ? sqrt(0.25 / N) : 0;
        CU_ASSERT(fabs(sum / N - want) <= 5 * sigma);
        done(&t);
    }
    free(x);
}

static const char rrelu_graph[] = "graph g\n"
                                  "input %x: f32[1000]\n"
                                  "%z: f32[1000] = aten.zeros_like.default(%x)\n"
                                  "%y: f32[1000] = aten.rrelu_with_noise.default(%x, %z, 0.125, 0.5, True)\n"
                                  "output %y, %z\n";

static void test_rrelu_in_training_scales_negatives_by_a_slope_drawn_in_lower_upper(void)
{
    float x[1000];
    for (int k = 0; k < 1000; k++)
        x[k] = (float)(k - 500) / 100;
    run_t t;
    CU_ASSERT_EQUAL_FATAL(run_text(&t, rrelu_graph, x, 1, 0), 0);
    const float *y = value(&t, "y"), *n = value(&t, "z");
    int bad = 0, distinct = 0;
    for (int k = 0; k < 1000; k++) {
        if (x[k] >= 0)
            bad += y[k] != x[k] || (x[k] > 0 && n[k] != 1);
        else
            bad += !(y[k] >= x[k] * 0.5f && y[k] <= x[k] * 0.125f) || !(n[k] >= 0.125f && n[k] <= 0.5f) ||
                   y[k] != x[k] * n[k];
        distinct += k && x[k] < 0 && n[k] != n[k - 1];
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(distinct > 400); /* a slope per element, not one for all */
    done(&t);
    /* the reference's interval: [x upper, x lower] for x < 0, x exactly-ish for x > 0 */
    CU_ASSERT_EQUAL_FATAL(run_text(&t, rrelu_graph, x, 1, 1), 0);
    int v = gr_graph_find(t.g, "y");
    const float *val = rt_ref_value(t.r, v, NULL), *eb = rt_ref_error(t.r, v, 0);
    CU_ASSERT(val[0] - eb[0] <= -5 * 0.5 && val[0] + eb[0] >= -5 * 0.125 && eb[0] < 0.95);
    CU_ASSERT(fabs(val[999] - x[999]) < 1e-6 && eb[999] < 0.02);
    CU_ASSERT(rt_ref_drawn(t.r, v) && rt_ref_drawn(t.r, gr_graph_find(t.g, "z")));
    done(&t);
}

/* On the simulated chip the draws run on the host; --check's interval holds them. */
static void test_a_graph_that_draws_runs_on_the_host_and_validates(void)
{
    static const char text[] = "graph g\n"
                               "input %x: f32[64, 64]\n"
                               "%r: f32[64, 64] = aten.rand.default([64, 64], dtype=f32)\n"
                               "%p: f32[64, 64] = aten.mul.Tensor(%r, 0.5)\n"
                               "%b: f32[64, 64] = aten.bernoulli.default(%p)\n"
                               "%y: f32[64, 64] = aten.add.Tensor(%x, %b)\n"
                               "output %y\n";
    char g[256], out[8192];
    tu_write_tmpfile(".txt", text, strlen(text), g, sizeof g);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "run %s --check --seed 3", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.rand.default"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.bernoulli.default"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " ok"));
    CU_ASSERT_PTR_NULL(strstr(out, "vacuous"));
    remove(g);
}

/* randint_like: integers in [low, high), each about equally often; normal(mean, std): mean and
 * spread within 5 sigma; multinomial: indices by weight, distinct without replacement, never a
 * zero weight's. */
static void test_randint_normal_and_multinomial_draw_from_their_distributions(void)
{
    float *x = calloc(N, sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    run_t t;
    CU_ASSERT_EQUAL_FATAL(run_text(&t, "graph g\ninput %x: f32[200000]\n"
                                       "%r: f32[200000] = aten.randint_like.low_dtype(%x, 2, 10)\n"
                                       "%n: f32[200000] = aten.normal.float_Tensor(3.0, %r)\noutput %r, %n\n",
                                   x, 1, 0), 0);
    const float *r = value(&t, "r"), *n = value(&t, "n");
    int64_t count[8] = {0}, bad = 0;
    double z1 = 0, z2 = 0;
    for (int k = 0; k < N; k++) {
        bad += !(r[k] >= 2 && r[k] <= 9 && r[k] == floorf(r[k]));
        count[((int)r[k] - 2) & 7]++;
        double z = (n[k] - 3) / r[k];
        z1 += z, z2 += z * z;
    }
    CU_ASSERT_EQUAL(bad, 0);
    for (int v = 0; v < 8; v++)
        CU_ASSERT(fabs((double)count[v] / N - 0.125) < 5 * sqrt(0.125 * 0.875 / N));
    CU_ASSERT(fabs(z1 / N) < 5 * sqrt(1.0 / N) && fabs(z2 / N - 1) < 5 * sqrt(2.0 / N));
    done(&t);
    float w[4 * 5] = {0};
    for (int row = 0; row < 4; row++)
        w[row * 5 + 1] = 1, w[row * 5 + 3] = 3, w[row * 5 + 4] = 4;
    CU_ASSERT_EQUAL_FATAL(run_text(&t, "graph g\ninput %x: f32[4, 5]\n"
                                       "%m: i64[4, 3] = aten.multinomial.default(%x, 3)\noutput %m\n",
                                   w, 1, 0), 0);
    const float *m = value(&t, "m");
    for (int row = 0; row < 4; row++) {
        int seen = 0;
        for (int j = 0; j < 3; j++)
            seen |= 1 << (int)m[row * 3 + j];
        CU_ASSERT_EQUAL(seen, 0x1a); /* 1, 3 and 4: every positive weight once */
    }
    done(&t);
    free(x);
}

/* rrelu_with_noise writes noise in place: as an output it comes back from the host and validates;
 * an op reading it later is refused (the device's schedule follows values, not writes in place). */
static void test_rrelu_noise_reaches_an_output_and_a_later_reader_is_refused(void)
{
    static const char *const texts[] = {
        "graph g\ninput %x: f32[64, 64]\n%z: f32[64, 64] = aten.zeros_like.default(%x)\n"
        "%y: f32[64, 64] = aten.rrelu_with_noise.default(%x, %z, 0.1, 0.3, True)\noutput %y, %z\n",
        "graph g\ninput %x: f32[64, 64]\n%z: f32[64, 64] = aten.zeros_like.default(%x)\n"
        "%y: f32[64, 64] = aten.rrelu_with_noise.default(%x, %z, 0.1, 0.3, True)\n"
        "%n: f32[64, 64] = aten.mul.Tensor(%z, 2.0)\noutput %y, %n\n",
    };
    for (int i = 0; i < 2; i++) {
        char g[256], out[8192], cmd[512];
        tu_write_tmpfile(".txt", texts[i], strlen(texts[i]), g, sizeof g);
        snprintf(cmd, sizeof cmd, "run %s --check", g);
        int rc = tu_spyre(cmd, out, sizeof out);
        if (i == 0) {
            CU_ASSERT_EQUAL(rc, 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "check z: "));
            CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
        } else {
            CU_ASSERT_EQUAL(rc, 2);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "line 5 reads noise %z after this op writes it in place"));
        }
        remove(g);
    }
}

/* Against PyTorch's outputs a draw is checked by its interval, not by PyTorch's draw (any 0s
 * and 1s pass); a PyTorch value outside the interval is an error naming the element. */
static void test_a_drawn_output_is_checked_by_its_interval_not_by_pytorchs_draw(void)
{
    static const char text[] = "graph g\ninput %p: f32[64]\n%b: f32[64] = aten.bernoulli.default(%p)\noutput %b\n";
    char dir[256], path[300], cmd[400], out[8192], err2[256];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/graph.txt", dir);
    tu_write_file(path, text, strlen(text));
    static float p[64], want[64];
    for (int k = 0; k < 64; k++)
        p[k] = 0.5f, want[k] = (float)(k % 2); /* a draw the host's generator surely does not repeat */
    rt_st_entry in = {.name = "p", .dtype = RT_ST_F32, .rank = 1, .shape = {64}, .data = p};
    rt_st_entry ex = {.name = "output0", .dtype = RT_ST_F32, .rank = 1, .shape = {64}, .data = want};
    snprintf(path, sizeof path, "%s/inputs.safetensors", dir);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, &in, 1, err2, sizeof err2), 0);
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, &ex, 1, err2, sizeof err2), 0);
    snprintf(cmd, sizeof cmd, "run %s --check", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "MISMATCH"));
    want[5] = 2;
    CU_ASSERT_EQUAL_FATAL(rt_st_write(path, &ex, 1, err2, sizeof err2), 0);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "PyTorch's %b element 5, 2, is outside ["));
    tu_rmtree(dir);
}

/* randn has no finite interval: what depends on it validates vacuously (said so), and the
 * reference's value is a draw, so a projection on it stays well posed (svd_lowrank without
 * --record-draws). */
static void test_a_random_projection_runs_and_is_said_vacuous(void)
{
    static const char text[] = "graph g\n"
                               "input %a: f32[8, 6]\n"
                               "%r: f32[6, 3] = aten.randn.default([6, 3], dtype=f32)\n"
                               "%y: f32[8, 3] = aten.mm.default(%a, %r)\n"
                               "%q: (f32[8, 3], f32[3, 3]) = aten.linalg_qr.default(%y)\n"
                               "%q0: f32[8, 3] = getitem(%q, 0)\n"
                               "output %q0\n";
    char g[256], out[8192], cmd[512];
    tu_write_tmpfile(".txt", text, strlen(text), g, sizeof g);
    snprintf(cmd, sizeof cmd, "run %s --check", g);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fallback aten.randn.default"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "vacuous=24 ok"));
    remove(g);
}

int main(void)
{
    static const tu_test tests[] = {
        {"rand is uniform in [0, 1), mean 1/2 within 5 sigma",
         test_rand_is_uniform_in_0_1_with_mean_one_half_within_5_sigma},
        {"randn has mean 0 and variance 1 within 5 sigma", test_randn_has_mean_0_and_variance_1_within_5_sigma},
        {"draws repeat for a seed and change with it", test_draws_repeat_for_a_seed_and_change_with_it},
        {"bernoulli draws 0 or 1, mean p, exact at p 0 and 1",
         test_bernoulli_draws_0_or_1_with_mean_p_and_is_exact_at_p_0_and_1},
        {"bernoulli.p takes one probability, 1/2 by default", test_bernoulli_p_takes_one_probability_half_by_default},
        {"rrelu in training scales negatives by a slope in [lower, upper]",
         test_rrelu_in_training_scales_negatives_by_a_slope_drawn_in_lower_upper},
        {"a graph that draws runs on the host and validates", test_a_graph_that_draws_runs_on_the_host_and_validates},
        {"randint_like, normal and multinomial draw from their distributions",
         test_randint_normal_and_multinomial_draw_from_their_distributions},
        {"rrelu's noise reaches an output; a later reader is refused",
         test_rrelu_noise_reaches_an_output_and_a_later_reader_is_refused},
        {"a drawn output is checked by its interval, not by PyTorch's draw",
         test_a_drawn_output_is_checked_by_its_interval_not_by_pytorchs_draw},
        {"a random projection runs and is said vacuous", test_a_random_projection_runs_and_is_said_vacuous},
        {NULL, NULL},
    };
    return tu_run("random", tests);
}
