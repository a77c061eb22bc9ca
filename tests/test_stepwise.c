/* test_stepwise: stepwise checks (docs/validation.md, "Stepwise checks"):
 * the reference compared with the device at every value the program holds
 * whole and continued from the device's value there. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

/* Three products with a tanh and a sigmoid between them: two values
 * (%t, %s) a kernel writes whole.  chain_sigmoid: %t is a sigmoid. */
#define CHAIN_HEAD                                                                                                     \
    "graph chain\n"                                                                                                    \
    "input %x: f32[64, 64]\n"                                                                                          \
    "input %w: f32[64, 64]\n"                                                                                          \
    "%mm: f32[64, 64] = aten.mm.default(%x, %w)\n"
#define CHAIN_TAIL                                                                                                     \
    "%mm_1: f32[64, 64] = aten.mm.default(%t, %w)\n"                                                                   \
    "%s: f32[64, 64] = aten.sigmoid.default(%mm_1)\n"                                                                  \
    "%mm_2: f32[64, 64] = aten.mm.default(%s, %w)\n"                                                                   \
    "output %mm_2\n"
static const char *chain = CHAIN_HEAD "%t: f32[64, 64] = aten.tanh.default(%mm)\n" CHAIN_TAIL;
static const char *chain_sigmoid = CHAIN_HEAD "%t: f32[64, 64] = aten.sigmoid.default(%mm)\n" CHAIN_TAIL;

static gr_graph *parse(const char *text)
{
    char err[512];
    gr_graph *g = gr_graph_parse(text, "chain.txt", err, sizeof err);
    if (!g)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    return g;
}

typedef struct {
    rt_device *dev;
    rt_program *prog;
} loaded;

/* g compiled for spyre (values kept in LX or not; a probe build writing
 * them to DRAM too), loaded, its inputs from `inputs` or seeded random
 * values, run with rt_keep_values(mode). */
static loaded run_build(const gr_graph *g, int lx_keep, int write_values, const char *inputs, int mode)
{
    chip_config cfg;
    tu_config("spyre", &cfg);
    char err[1024];
    cc_compile_opts o = {0};
    o.target = &cfg;
    o.no_lx_keep = !lx_keep;
    o.write_values = write_values;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    if (!r)
        fprintf(stderr, "compile: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    loaded l;
    l.dev = rt_open_config(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.dev);
    l.prog = rt_load_program(l.dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.prog);
    CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(l.prog, 3, err, sizeof err), 0);
    if (rt_load_graph_tensors(l.prog, g, inputs, err, sizeof err))
        fprintf(stderr, "tensors: %s\n", err);
    rt_keep_values(l.prog, mode);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(l.prog, &res), 0);
    return l;
}

static loaded run(const gr_graph *g, int lx_keep, const char *inputs, int mode)
{
    return run_build(g, lx_keep, 0, inputs, mode);
}

static void done(loaded *l)
{
    rt_unload(l->prog);
    rt_close(l->dev);
}

/* The result of kind step named name, or NULL. */
static const rt_check_result *find(const rt_check_result *r, int n, int step, const char *name)
{
    for (int i = 0; i < n; i++)
        if (r[i].step == step && !strcmp(r[i].name, name))
            return &r[i];
    return NULL;
}

static void test_a_stepwise_check_continues_from_each_value_the_device_wrote(void)
{
    gr_graph *g = parse(chain);
    loaded l = run(g, 0, NULL, 2);
    rt_check_result *r = NULL;
    int n = 0;
    char err[512];
    int bad = rt_check_graph(l.prog, g, &r, &n, err, sizeof err);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(n, 2); /* mm_2 end to end, then stepwise */
    const rt_check_result *e = find(r, n, RT_CHECK_END_TO_END, "mm_2"), *s = find(r, n, RT_CHECK_STEPWISE, "mm_2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(s->cuts, 2); /* %t and %s, both through DRAM */
    CU_ASSERT(s->ok && e->ok);
    char line[512];
    rt_check_format(s, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "check mm_2 stepwise (cuts=2): "));
    free(r);
    done(&l);
    gr_graph_free(g);
}

/* Checked against a graph whose %t is a sigmoid: the one cut out of
 * tolerance is %t (its line and op named); %s, computed on the device from
 * the device's %t, is within its own. */
static void test_a_stepwise_check_names_the_value_where_the_device_leaves_the_reference(void)
{
    gr_graph *g = parse(chain);
    loaded l = run(g, 0, NULL, 2);
    gr_graph *h = parse(chain_sigmoid);
    rt_check_result *r = NULL;
    int n = 0;
    char err[512];
    int bad = rt_check_graph(l.prog, h, &r, &n, err, sizeof err);
    CU_ASSERT(bad >= 1);
    const rt_check_result *cut = find(r, n, RT_CHECK_CUT, "t");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cut);
    CU_ASSERT_FALSE(cut->ok);
    CU_ASSERT_EQUAL(cut->line, 5);
    CU_ASSERT_STRING_EQUAL(cut->op, "aten.sigmoid.default");
    CU_ASSERT_PTR_NULL(find(r, n, RT_CHECK_CUT, "s"));
    const rt_check_result *s = find(r, n, RT_CHECK_STEPWISE, "mm_2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(s->ok);
    char line[512];
    rt_check_format(cut, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "check t cut (graph line 5, aten.sigmoid.default): "));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "MISMATCH"));
    free(r);
    gr_graph_free(h);
    done(&l);
    gr_graph_free(g);
}

/* A value kept in LX is never written to DRAM: it reads back NaN (the
 * runtime fills kept tensors with NaN before the run) and is no cut. */
static void test_a_value_the_run_keeps_in_lx_is_no_cut(void)
{
    gr_graph *g = parse(chain);
    loaded l = run(g, 1, NULL, 2);
    rt_check_result *r = NULL;
    int n = 0;
    char err[512];
    CU_ASSERT_EQUAL(rt_check_graph(l.prog, g, &r, &n, err, sizeof err), 0);
    const rt_check_result *s = find(r, n, RT_CHECK_STEPWISE, "mm_2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(s->cuts, 0);
    CU_ASSERT(s->ok);
    free(r);
    done(&l);
    gr_graph_free(g);
}

/* The default build keeps %t and %s in LX; the probe build of the same
 * graph writes them to DRAM too and computes the same bits, so its values
 * are the cuts of the default build's stepwise check. */
static void test_a_probe_build_gives_the_cuts_of_values_kept_in_lx(void)
{
    gr_graph *g = parse(chain);
    loaded run0 = run(g, 1, NULL, 0), probe = run_build(g, 1, 1, NULL, 2);
    rt_check_result *r = NULL;
    int n = 0;
    char err[512];
    int bad = rt_check_stepwise(run0.prog, probe.prog, g, &r, &n, err, sizeof err);
    if (bad < 0)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(r[0].step, RT_CHECK_STEPWISE);
    CU_ASSERT_EQUAL(r[0].cuts, 2);
    CU_ASSERT(r[0].ok);
    free(r);
    done(&probe);
    done(&run0);
    gr_graph_free(g);
}

/* A probe whose outputs are not the run's bits cannot stand for it. */
static void test_a_probe_that_computes_other_outputs_is_refused(void)
{
    gr_graph *g = parse(chain), *h = parse(chain_sigmoid);
    loaded run0 = run(g, 1, NULL, 0), probe = run_build(h, 1, 1, NULL, 2);
    rt_check_result *r = NULL;
    int n = 0;
    char err[512] = "";
    CU_ASSERT_EQUAL(rt_check_stepwise(run0.prog, probe.prog, g, &r, &n, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "computed output mm_2 otherwise"));
    CU_ASSERT_EQUAL(n, 0);
    free(r);
    done(&probe);
    done(&run0);
    gr_graph_free(h);
    gr_graph_free(g);
}

/* spyre run --stepwise: the probe build's cuts, one line for the output. */
static void test_spyre_run_stepwise_prints_the_stepwise_line(void)
{
    char path[512], args[600], out[8192];
    tu_write_tmpfile(".txt", chain, strlen(chain), path, sizeof path);
    snprintf(args, sizeof args, "run %s --stepwise", path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ncheck mm_2: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ncheck mm_2 stepwise (cuts=2): "));
    remove(path);
}

static void test_a_check_is_end_to_end_only_unless_asked_or_vacuous(void)
{
    gr_graph *g = parse(chain);
    for (int mode = 0; mode < 2; mode++) {
        loaded l = run(g, 0, NULL, mode);
        rt_check_result *r = NULL;
        int n = 0;
        char err[512];
        CU_ASSERT_EQUAL(rt_check_graph(l.prog, g, &r, &n, err, sizeof err), 0);
        CU_ASSERT_EQUAL(n, 1);
        CU_ASSERT_EQUAL(r[0].step, RT_CHECK_END_TO_END);
        CU_ASSERT_EQUAL(r[0].vacuous, 0);
        free(r);
        done(&l);
    }
    gr_graph_free(g);
}

/* nn.Transformer (traces/transformer_small): the end-to-end bounds grow
 * through the residual sublayers to infinity (vacuous); stepwise every
 * tolerance is finite and the device within it. */
static void test_a_vacuous_check_of_a_transformer_goes_on_stepwise_with_finite_bounds(void)
{
    char dir[512], in[600], err[512];
    snprintf(dir, sizeof dir, "%s/traces/transformer_small", SPYRE_SOURCE_DIR);
    snprintf(in, sizeof in, "%s/inputs.safetensors", dir);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    loaded l = run(g, 1, in, 1);
    rt_check_result *r = NULL;
    int n = 0;
    int bad = rt_check_graph(l.prog, g, &r, &n, err, sizeof err);
    if (bad)
        fprintf(stderr, "check: %s\n", bad < 0 ? err : "mismatch");
    CU_ASSERT_EQUAL(bad, 0);
    int e2e_vacuous = 0, stepwise = 0;
    for (int i = 0; i < n; i++) {
        e2e_vacuous += r[i].step == RT_CHECK_END_TO_END && r[i].vacuous > 0;
        CU_ASSERT(r[i].step != RT_CHECK_CUT); /* no cut out of tolerance or vacuous */
        if (r[i].step != RT_CHECK_STEPWISE)
            continue;
        stepwise++;
        CU_ASSERT(r[i].ok);
        CU_ASSERT_EQUAL(r[i].vacuous, 0);
        CU_ASSERT(r[i].cuts >= 10);
    }
    CU_ASSERT(e2e_vacuous > 0);
    CU_ASSERT_EQUAL(stepwise, g->noutputs);
    free(r);
    done(&l);
    gr_graph_free(g);
}

int main(void)
{
    static const tu_test tests[] = {
        {"a stepwise check continues from each value the device wrote",
         test_a_stepwise_check_continues_from_each_value_the_device_wrote},
        {"a stepwise check names the value where the device leaves the reference",
         test_a_stepwise_check_names_the_value_where_the_device_leaves_the_reference},
        {"a value the run keeps in LX is no cut", test_a_value_the_run_keeps_in_lx_is_no_cut},
        {"a probe build gives the cuts of values kept in LX", test_a_probe_build_gives_the_cuts_of_values_kept_in_lx},
        {"a probe that computes other outputs is refused", test_a_probe_that_computes_other_outputs_is_refused},
        {"spyre run --stepwise prints the stepwise line", test_spyre_run_stepwise_prints_the_stepwise_line},
        {"a check is end to end only unless asked or vacuous", test_a_check_is_end_to_end_only_unless_asked_or_vacuous},
        {"a vacuous check of a transformer goes on stepwise with finite bounds",
         test_a_vacuous_check_of_a_transformer_goes_on_stepwise_with_finite_bounds},
        {NULL, NULL},
    };
    return tu_run("stepwise", tests);
}
