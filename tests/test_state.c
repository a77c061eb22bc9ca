/* test_state.c: state in the graph format and the runtime
 * (docs/graph-format.md, "State"): a state persists across launches in
 * device DRAM, a launch's update (the program's dma.scatter) writes only
 * the sticks of the positions it names, every loaded program holding the
 * state sees it, the reference check reads the state as the run did, a
 * position outside the state is refused at launch, and malformed
 * updates are refused with the line. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

static char err[1024];

/* A cache of 8 positions x 4 features: the run adds x * 2 at position pos
 * and returns the sum of the cache as it was read. */
static const char *CACHE_GRAPH =
    "graph cache\n"
    "input %x: f32[1, 4]\n"
    "input %pos: i64[1]\n"
    "state %cache: f32[8, 4] = \"cache\"\n"
    "%y: f32[1, 4] = aten.mul.Tensor(%x, 2.0)\n"
    "%c1: f32[8, 4] = aten.index_copy.default(%cache, 0, %pos, %y)\n"
    "%s: f32[4] = aten.sum.dim_IntList(%cache, [0])\n"
    "output %s\n"
    "update %cache = %c1\n";

/* The dma.scatter instructions of p. */
static int count_scatters(const isa_program *p)
{
    int n = 0;
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++)
            n += p->cores[c].insns[i].op == ISA_OP_DMA_SCATTER;
    return n;
}

/* The update of CACHE_GRAPH is the program's: one dma.scatter, after a
 * bar, of the one stick a position of [8, 4] holds (the cache sticked on
 * its features, not on the positions the update indexes). */
static void test_the_compiler_writes_the_update_as_one_scatter_after_a_bar(void)
{
    gr_graph *g = gr_graph_parse(CACHE_GRAPH, "cache.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    chip_config cfg;
    tu_config("spyre-4core", &cfg);
    cc_compile_opts o = {0};
    o.target = &cfg;
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    gr_graph_free(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    char *rep = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&rep, &len);
    cc_compile_report(r, f);
    fclose(f);
    TU_ASSERT_CONTAINS(rep, "\nstate updates: 1 by dma.scatter on 1 core, after a bar that follows the last kernel\n");
    free(rep);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    CU_ASSERT_EQUAL(count_scatters(p), 1);
    const isa_stream *s0 = &p->cores[0];
    CU_ASSERT_FATAL(s0->n >= 3);
    const isa_insn *sc = &s0->insns[s0->n - 2]; /* before the halt */
    CU_ASSERT_EQUAL(sc->op, ISA_OP_DMA_SCATTER);
    int ti = isa_program_find_tensor(p, "cache");
    CU_ASSERT_FATAL(ti >= 0);
    CU_ASSERT_EQUAL(p->tensors[ti].stick_dim, 1);
    CU_ASSERT_EQUAL(sc->d.off, (int64_t)p->tensors[ti].dram_off);
    CU_ASSERT_EQUAL(sc->vl, 8);                 /* rows: the cache's positions */
    CU_ASSERT_EQUAL(sc->ds[0], p->stick_bytes); /* a position is one row of one stick */
    CU_ASSERT_EQUAL(sc->run, 1);
    CU_ASSERT_EQUAL(sc->n[0], 1);
    /* after every kernel a bar, then only the positions and rows loaded,
     * a token from the load engine to the store engine, the scatter */
    size_t bar = 0;
    for (size_t i = 0; i < s0->n; i++)
        bar = s0->insns[i].op == ISA_OP_BAR ? i : bar;
    static const int tail[] = {ISA_OP_BAR, ISA_OP_DMA_LD, ISA_OP_DMA_LD, ISA_OP_SIG, ISA_OP_WAIT, ISA_OP_DMA_SCATTER,
                               ISA_OP_HALT};
    CU_ASSERT_EQUAL_FATAL(s0->n - bar, sizeof tail / sizeof tail[0]);
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        CU_ASSERT_EQUAL(s0->insns[bar + i].op, tail[i]);
    isa_program_free(p);
}

static rt_program *load_graph(rt_device *dev, const char *text)
{
    gr_graph *g = gr_graph_parse(text, "cache.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts o = {0};
    o.target = rt_config(dev);
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    gr_graph_free(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    rt_program *prog = rt_load_program(dev, cc_result_take_program(r), err, sizeof err);
    cc_result_free(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    return prog;
}

/* One launch writing x at position pos. */
static void step(rt_program *prog, const float *x, float pos, rt_run_result *res)
{
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "pos", &pos, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, res), 0);
}

static void test_update_writes_only_the_positions_sticks_in_device_dram(void)
{
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = load_graph(dev, CACHE_GRAPH);
    float zero[32] = {0}, x1[4] = {1, 2, 3, 4}, x2[4] = {0.5f, -1, 8, 0.25f}, cache[32], sum[4];
    CU_ASSERT_EQUAL(rt_set_input(prog, "cache", zero, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL(count_scatters(rt_program_isa(prog)), 1); /* the update is the program's */
    step(prog, x1, 3, &res);
    /* one position of 4 DL16 features is one stick, whatever the cache's size */
    CU_ASSERT_EQUAL(res.state_bytes, rt_program_isa(prog)->stick_bytes);
    step(prog, x2, 5, &res);
    CU_ASSERT_EQUAL(res.xfer.weight_bytes_uploaded, 0); /* the cache is not uploaded again */
    /* the weights region is resident: this reads device DRAM */
    uint64_t addr;
    CU_ASSERT_EQUAL(rt_tensor_addr(prog, "cache", &addr, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "cache", cache, err, sizeof err), 0);
    for (int i = 0; i < 32; i++) {
        float want = i / 4 == 3 ? 2 * x1[i % 4] : i / 4 == 5 ? 2 * x2[i % 4] : 0;
        CU_ASSERT_EQUAL(cache[i], want); /* x * 2 of these values is exact in DL16 */
    }
    /* the second run read the cache before its own update: position 3 only */
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "s", sum, err, sizeof err), 0);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(sum[i], 2 * x1[i]);
    rt_unload(prog);
    rt_close(dev);
}

static void test_check_reads_the_state_as_the_run_did(void)
{
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = load_graph(dev, CACHE_GRAPH);
    float zero[32] = {0}, x[4] = {1, 2, 3, 4};
    CU_ASSERT_EQUAL(rt_set_input(prog, "cache", zero, err, sizeof err), 0);
    rt_run_result res;
    for (int k = 0; k < 3; k++) {
        step(prog, x, (float)k, &res);
        gr_graph *g = gr_graph_parse(rt_program_isa(prog)->graph, "cache.txt", err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        rt_check_result *chk = NULL;
        int n = 0;
        CU_ASSERT_EQUAL(rt_check_graph(prog, g, &chk, &n, err, sizeof err), 0); /* s and y, both ok */
        CU_ASSERT_EQUAL(n, 2);
        free(chk);
        gr_graph_free(g);
    }
    rt_unload(prog);
    rt_close(dev);
}

static void test_two_programs_share_a_state_by_name(void)
{
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *a = load_graph(dev, CACHE_GRAPH), *b = load_graph(dev, CACHE_GRAPH);
    float zero[32] = {0}, x[4] = {1, 2, 3, 4}, sum[4];
    CU_ASSERT_EQUAL(rt_set_input(a, "cache", zero, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(b, "cache", zero, err, sizeof err), 0);
    rt_run_result res;
    step(a, x, 2, &res);
    step(b, zero, 4, &res); /* b reads what a wrote */
    CU_ASSERT_EQUAL(rt_read_tensor(b, "s", sum, err, sizeof err), 0);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(sum[i], 2 * x[i]);
    rt_unload(a);
    rt_unload(b);
    rt_close(dev);
}

/* PyTorch's index_copy refuses it: the launch does too, naming the input,
 * before the scatter would fault on it. */
static void test_a_position_outside_the_state_is_refused_at_launch(void)
{
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = load_graph(dev, CACHE_GRAPH);
    float x[4] = {1, 2, 3, 4}, pos = 8;
    rt_run_result res;
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "pos", &pos, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_launch(prog, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_UNSUPPORTED);
    TU_ASSERT_CONTAINS(res.fault.msg, "input %pos: the value 8 at element 0 is out of bounds for dim 0 of size 8 "
                       "(aten.index_copy.default reads it)");
    rt_unload(prog);
    rt_close(dev);
}

/* A timing-only run's inputs are random, not positions (LX holds no
 * values: the scatter writes row 0): the update is counted as if at the
 * k-th position instead of faulting. */
static void test_a_timing_only_run_counts_its_update_without_data(void)
{
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    sim_options opt = {.values = 0};
    rt_set_options(dev, &opt);
    rt_program *prog = load_graph(dev, CACHE_GRAPH);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 3, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(res.state_bytes, rt_program_isa(prog)->stick_bytes);
    rt_unload(prog);
    rt_close(dev);
}

/* 1,500 positions of 64 features: their rows (192,000 bytes of DL16) do
 * not fit in the 4-core chip's LX at once, so the update goes in chunks,
 * each one scatter, each waiting for the one before; every row lands at
 * its position and no other row changes. */
static void test_an_update_larger_than_lx_goes_in_chunks(void)
{
    enum { N = 1500, ROWS = 2048, F = 64 };
    static const char *graph = "graph big\n"
                               "input %x: f32[1500, 64]\n"
                               "input %pos: i64[1500]\n"
                               "state %cache: f32[2048, 64] = \"cache\"\n"
                               "%y: f32[1500, 64] = aten.mul.Tensor(%x, 2.0)\n"
                               "%c1: f32[2048, 64] = aten.index_copy.default(%cache, 0, %pos, %y)\n"
                               "%s: f32[64] = aten.sum.dim_IntList(%cache, [0])\n"
                               "output %s\n"
                               "update %cache = %c1\n";
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = load_graph(dev, graph);
    CU_ASSERT(count_scatters(rt_program_isa(prog)) > 1);
    float *x = malloc(N * F * sizeof *x), *pos = malloc(N * sizeof *pos), *cache = calloc(ROWS * F, sizeof *cache);
    CU_ASSERT_FATAL(x && pos && cache);
    for (int k = 0; k < N; k++) {
        pos[k] = (float)((k * 7 + 3) % ROWS); /* distinct: 7 is prime to 2048 */
        for (int f = 0; f < F; f++)
            x[k * F + f] = (float)((k + f) % 64) - 32; /* x * 2 is exact in DL16 */
    }
    CU_ASSERT_EQUAL(rt_set_input(prog, "cache", cache, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "pos", pos, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(res.state_bytes, (uint64_t)N * rt_program_isa(prog)->stick_bytes);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "cache", cache, err, sizeof err), 0);
    int bad = 0, *from = malloc(ROWS * sizeof *from);
    CU_ASSERT_FATAL(from != NULL);
    for (int r = 0; r < ROWS; r++)
        from[r] = -1;
    for (int k = 0; k < N; k++)
        from[(int)pos[k]] = k;
    for (int r = 0; r < ROWS; r++)
        for (int f = 0; f < F; f++)
            bad += cache[r * F + f] != (from[r] < 0 ? 0.0f : 2 * x[from[r] * F + f]);
    CU_ASSERT_EQUAL(bad, 0);
    free(from);
    free(x);
    free(pos);
    free(cache);
    rt_unload(prog);
    rt_close(dev);
}

/* A program whose graph updates a state it does not scatter into (one
 * built before the compiler wrote updates) would leave the state as it
 * was: the runtime refuses to load it. */
static void test_a_program_without_its_scatter_is_refused_at_load(void)
{
    rt_device *dev = rt_open(SPYRE_SOURCE_DIR "/chip/configs/spyre-4core.cfg", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    gr_graph *g = gr_graph_parse(CACHE_GRAPH, "cache.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts o = {0};
    o.target = rt_config(dev);
    cc_result *r = cc_compile(g, &o, err, sizeof err);
    gr_graph_free(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++)
            if (p->cores[c].insns[i].op == ISA_OP_DMA_SCATTER)
                isa_insn_init(&p->cores[c].insns[i], ISA_OP_NOP);
    CU_ASSERT_PTR_NULL(rt_load_program(dev, p, err, sizeof err));
    TU_ASSERT_CONTAINS(err, "graph line 9: update of cache: the program has no dma.scatter into it");
    rt_close(dev);
}

static void test_malformed_updates_are_refused_with_the_line(void)
{
    static const struct {
        const char *line9, *msg;
    } cases[] = {
        {"update %x = %c1", "cache.txt:9: update %x: not a state"},
        {"update %cache = %y", "cache.txt:9: update %cache: %y is not defined by aten.index_copy.default"},
        {"update %cache = %c1\nupdate %cache = %c1", "cache.txt:10: update %cache: a second update (the first is line 9)"},
        {"update %cache = %nope", "cache.txt:9: %nope is not defined"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[2048];
        const char *end = strstr(CACHE_GRAPH, "update ");
        snprintf(text, sizeof text, "%.*s%s\n", (int)(end - CACHE_GRAPH), CACHE_GRAPH, cases[k].line9);
        gr_graph *g = gr_graph_parse(text, "cache.txt", err, sizeof err);
        CU_ASSERT_PTR_NULL(g);
        TU_ASSERT_CONTAINS(err, cases[k].msg);
        gr_graph_free(g);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"the compiler writes the update as one scatter after a bar",
         test_the_compiler_writes_the_update_as_one_scatter_after_a_bar},
        {"update writes only the position's sticks in device DRAM", test_update_writes_only_the_positions_sticks_in_device_dram},
        {"check reads the state as the run did", test_check_reads_the_state_as_the_run_did},
        {"two programs share a state by name", test_two_programs_share_a_state_by_name},
        {"a position outside the state is refused at launch", test_a_position_outside_the_state_is_refused_at_launch},
        {"a timing-only run counts its update without data", test_a_timing_only_run_counts_its_update_without_data},
        {"an update larger than LX goes in chunks", test_an_update_larger_than_lx_goes_in_chunks},
        {"a program without its scatter is refused at load", test_a_program_without_its_scatter_is_refused_at_load},
        {"malformed updates are refused with the line", test_malformed_updates_are_refused_with_the_line},
        {NULL, NULL},
    };
    return tu_run("state", tests);
}
