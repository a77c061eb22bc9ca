/* test_rowlx: how row kernels (compiler/be_rows.c) use LX for their
 * temps.  A temp gives its LX back after its last read in the chunk, so
 * wide fused kernels fit a small LX and chunks hold more rows.  Graphs are
 * compiled, run on the simulator (races and deadlocks checked) and every
 * output is compared with the reference executor (rt_check_graph). */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

/* Compile g for cfgname, fill inputs with seeded random values, run,
 * check.  Returns the number of outputs not ok, -1 on a failure before
 * the check (message printed). */
static int run_graph(const cc_graph *g, const char *cfgname)
{
    sim_config cfg;
    tu_config(cfgname, &cfg);
    char err[1024];
    cc_compile_opts o = {0};
    o.target = &cfg;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    if (!r) {
        fprintf(stderr, "compile %s on %s: %s\n", g->name, cfgname, err);
        return -1;
    }
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_device *dev = rt_open_config(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog) {
        fprintf(stderr, "load: %s\n", err);
        rt_close(dev);
        return -1;
    }
    int bad = -1;
    if (rt_fill_inputs(prog, 7, err, sizeof err)) {
        fprintf(stderr, "fill: %s\n", err);
        goto out;
    }
    if (rt_load_graph_tensors(prog, g, NULL, err, sizeof err)) {
        fprintf(stderr, "tensors: %s\n", err);
        goto out;
    }
    rt_run_result res;
    if (rt_launch(prog, &res)) {
        char line[1024];
        rt_run_format(&res, line, sizeof line);
        fprintf(stderr, "%s on %s: %s\n", g->name, cfgname, line);
        goto out;
    }
    rt_check_result *chk = NULL;
    int n = 0;
    bad = rt_check_graph(prog, g, &chk, &n, err, sizeof err);
    if (bad < 0)
        fprintf(stderr, "check: %s\n", err);
    for (int i = 0; i < n; i++) {
        char line[512];
        rt_check_format(&chk[i], line, sizeof line);
        if (!chk[i].ok)
            fprintf(stderr, "%s on %s: %s\n", g->name, cfgname, line);
    }
    CU_ASSERT_EQUAL(n, g->noutputs);
    free(chk);
out:
    rt_unload(prog);
    rt_close(dev);
    return bad;
}

static int run_text(const char *text, const char *cfgname)
{
    char err[512];
    cc_graph *g = cc_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int bad = run_graph(g, cfgname);
    cc_graph_free(g);
    return bad;
}

/* Rows per chunk of the graph's first row kernel on cfgname, from the
 * report's tiles line (-1: not compiled or no such line). */
static long chunk_rows(const char *text, const char *cfgname)
{
    char err[1024];
    cc_graph *g = cc_graph_parse(text, "test.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    sim_config cfg;
    tu_config(cfgname, &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    cc_graph_free(g);
    if (!r) {
        fprintf(stderr, "compile on %s: %s\n", cfgname, err);
        return -1;
    }
    char *rep = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&rep, &len);
    cc_compile_report(r, f);
    fclose(f);
    cc_result_free(r);
    const char *at = strstr(rep, " rows in chunks of ");
    long rows = at ? strtol(at + strlen(" rows in chunks of "), NULL, 10) : -1;
    free(rep);
    return rows;
}

/* ---- tests ---- */

/* BERT's residual + bias + layer norm over 768 columns, one row kernel.
 * With a tile per expression node it needed 170496 bytes of LX for one
 * row, more than spyre-4core's 157312. */
static const char *wide_layer_norm_graph =
    "graph ln768\n"
    "input %x: f32[128, 768]\n"
    "input %r: f32[128, 768]\n"
    "input %bias: f32[768]\n"
    "input %w: f32[768]\n"
    "input %b: f32[768]\n"
    "%a: f32[128, 768] = aten.add.Tensor(%x, %bias)\n"
    "%s: f32[128, 768] = aten.add.Tensor(%a, %r)\n"
    "%ln: (f32[128, 768], f32[128, 1], f32[128, 1]) = aten.native_layer_norm.default(%s, [768], %w, %b, 1e-05)\n"
    "%y: f32[128, 768] = getitem(%ln, 0)\n"
    "output %y\n";

static void test_a_wide_layer_norm_fits_a_small_lx_by_reusing_temps(void)
{
    CU_ASSERT_EQUAL(run_text(wide_layer_norm_graph, "spyre-4core"), 0);
    CU_ASSERT_EQUAL(run_text(wide_layer_norm_graph, "spyre"), 0);
}

/* Every way the evaluator makes a temp of its own: a per-row first
 * operand of sub and div (-(b - a), recip(b) * a), a where whose per-row
 * condition is widened to a tile, a min reduction (-max(-x)); a per-row
 * result read by later nodes, and a value (d) shared between nodes.  The
 * threshold is the midpoint between two DL16 values, so rounding m to DL16
 * never flips it. */
static const char *temps_graph =
    "graph temps\n"
    "input %x: f32[128, 1024]\n"
    "input %m: f32[128, 1]\n"
    "%mn: f32[128, 1] = aten.amin.default(%x, [1], True)\n"
    "%d: f32[128, 1024] = aten.sub.Tensor(%mn, %x)\n"
    "%sq: f32[128, 1024] = aten.mul.Tensor(%x, %x)\n"
    "%den: f32[128, 1024] = aten.add.Tensor(%sq, 1.0)\n"
    "%q: f32[128, 1024] = aten.div.Tensor(%mn, %den)\n"
    "%c: bool[128, 1] = aten.gt.Scalar(%m, 0.250244140625)\n"
    "%z: f32[128, 1024] = aten.where.self(%c, %d, %q)\n"
    "%s: f32[128, 1] = aten.amax.default(%z, [1], True)\n"
    "%y: f32[128, 1024] = aten.sub.Tensor(%s, %z)\n"
    "output %y\n";

static void test_temps_given_back_after_their_last_read_give_chunks_more_rows(void)
{
    CU_ASSERT_EQUAL(run_text(temps_graph, "spyre-4core"), 0);
    CU_ASSERT_EQUAL(run_text(temps_graph, "spyre"), 0);
    /* one kernel of 19 temps, at most 6 live at once: a tile per temp left
     * room for chunks of one row on spyre-4core, six cells for five */
    CU_ASSERT(chunk_rows(temps_graph, "spyre-4core") >= 4);
}

int main(void)
{
    static const tu_test tests[] = {
        {"a wide layer norm fits a small LX by reusing temps", test_a_wide_layer_norm_fits_a_small_lx_by_reusing_temps},
        {"temps given back after their last read give chunks more rows",
         test_temps_given_back_after_their_last_read_give_chunks_more_rows},
        {NULL, NULL},
    };
    return tu_run("rowlx", tests);
}
