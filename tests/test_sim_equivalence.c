/* test_sim_equivalence: the simulator's host-speed work changes no
 * program's cycles.  Every trace graph at traces/NAME or
 * traces/NAME/{prefill,decode} (not serve_tiny's step graphs) and the
 * benchmarks' generated GEMM and softmax are compiled for each shipped
 * chip and run; each one's cycles must equal those the simulator gave
 * the same program before the speed-ups (the table below, recorded with
 * `test_sim_equivalence --record`), with values and timing only alike,
 * and its outputs must still match the reference as `spyre run --check`
 * checks them.
 *
 * Cycles are compared exactly: the timing model is IEEE double arithmetic
 * in a fixed event order with no library maths, so the same program gives
 * the same bits on any host (docs/timing.md, "Determinism").  A row names
 * its program by a hash of its encoded instructions: when the compiler
 * changes a program the row no longer applies and the test says so; re-record
 * it only with a simulator whose cycles are trusted. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "ptprod.h"
#include "rt.h"
#include "testutil.h"

typedef struct {
    const char *trace; /* traces/ directory, or "gemm N" / "softmax R C" */
    const char *chip;
    uint64_t program;  /* FNV-1a of the encoded instructions */
    double cycles;     /* with values */
    double tcycles;    /* timing only: a gather's rows are data, so these can differ */
} recorded;

static const recorded table[] = {
#include "sim_equivalence_cycles.h"
};
static const size_t ntable = sizeof table / sizeof table[0];
static const char *const chips[] = {"spyre", "spyre-4core"};

static uint64_t fnv(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *c = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static uint64_t program_hash(const isa_program *p)
{
    uint64_t h = fnv(1469598103934665603ull, &p->dram_bytes, sizeof p->dram_bytes);
    for (int c = 0; c < p->ncores; c++)
        for (size_t i = 0; i < p->cores[c].n; i++) {
            uint8_t w[ISA_INSN_BYTES];
            char err[256];
            CU_ASSERT_EQUAL_FATAL(isa_encode(&p->cores[c].insns[i], w, err, sizeof err), 0);
            h = fnv(h, w, sizeof w);
        }
    return h;
}

/* The program of a row: a trace's graph compiled (*g gets the graph), or a
 * generated GEMM / softmax. */
static isa_program *build(const char *trace, const chip_config *cfg, gr_graph **g)
{
    char err[1024], path[4096];
    int a, b;
    *g = NULL;
    if (sscanf(trace, "gemm %d", &a) == 1)
        return cc_gen_gemm(cfg, a, a, a, err, sizeof err);
    if (sscanf(trace, "softmax %d %d", &a, &b) == 2)
        return cc_gen_softmax(cfg, a, b, err, sizeof err);
    snprintf(path, sizeof path, "%s/traces/%s/graph.txt", SPYRE_SOURCE_DIR, trace);
    *g = gr_graph_load(path, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*g);
    cc_compile_opts o = {0};
    o.target = cfg;
    cc_result *r = cc_compile(*g, &o, err, sizeof err);
    if (!r)
        fprintf(stderr, "%s: %s\n", trace, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    return p;
}

/* Cycles of one run of p on chip cfg (values with the race check, as
 * `spyre run` does by default, or timing only), inputs as `spyre run`
 * fills them: seed 1, then the export's inputs. */
static double run_cycles(const chip_config *cfg, isa_program *p, const gr_graph *g, const char *trace, int values)
{
    char err[1024], inputs[4096];
    rt_device *dev = rt_open_config(cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    sim_options opt = {.values = values, .detect_races = values};
    rt_set_options(dev, &opt);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    snprintf(inputs, sizeof inputs, "%s/traces/%s/inputs.safetensors", SPYRE_SOURCE_DIR, trace);
    if (g && values)
        CU_ASSERT_EQUAL_FATAL(rt_load_graph_tensors(prog, g, inputs, err, sizeof err), 0);
    rt_run_result *res = malloc(sizeof *res);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, res), 0);
    double cycles = res->stats.cycles;
    if (!g && values) { /* a generated program: its graph text is its reference */
        rt_check_result *r = NULL;
        int n = 0;
        CU_ASSERT_EQUAL(rt_check(prog, &r, &n, err, sizeof err), 0);
        free(r);
    }
    free(res);
    rt_close(dev); /* unloads prog, which owns p */
    return cycles;
}

static const recorded *find_row(const char *trace, const char *chip)
{
    for (size_t i = 0; i < ntable; i++)
        if (!strcmp(table[i].trace, trace) && !strcmp(table[i].chip, chip))
            return &table[i];
    return NULL;
}

/* One row: the program it names, its cycles both ways, its outputs
 * checked by `spyre run --check` (a trace) or rt_check (generated). */
static void check_row(const recorded *row)
{
    chip_config cfg;
    tu_config(row->chip, &cfg);
    gr_graph *g, *g2;
    isa_program *p = build(row->trace, &cfg, &g), *q = build(row->trace, &cfg, &g2);
    gr_graph_free(g2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    uint64_t h = program_hash(p);
    if (h != row->program)
        fprintf(stderr, "%s on %s: the compiler now makes another program (%016llx, recorded %016llx)\n", row->trace,
                row->chip, (unsigned long long)h, (unsigned long long)row->program);
    CU_ASSERT_EQUAL_FATAL(h, row->program);
    double timed = run_cycles(&cfg, p, g, row->trace, 1), tonly = run_cycles(&cfg, q, g, row->trace, 0);
    if (timed != row->cycles || tonly != row->tcycles)
        fprintf(stderr, "%s on %s: cycles %.17g (timing only %.17g), recorded %.17g (%.17g)\n", row->trace, row->chip,
                timed, tonly, row->cycles, row->tcycles);
    CU_ASSERT_EQUAL(timed, row->cycles);
    CU_ASSERT_EQUAL(tonly, row->tcycles);
    if (g) {
        char args[4096], out[1 << 16];
        snprintf(args, sizeof args, "run %s/traces/%s --check --config %s", SPYRE_SOURCE_DIR, row->trace, row->chip);
        int st = tu_spyre(args, out, sizeof out);
        if (st)
            fprintf(stderr, "%s\n", out);
        CU_ASSERT_EQUAL(st, 0);
        gr_graph_free(g);
    }
}

static void test_every_recorded_program_runs_in_its_recorded_cycles_and_checks(void)
{
    for (size_t i = 0; i < ntable; i++)
        check_row(&table[i]);
}

/* C of the generated 1024^3 GEMM after two launches (values and the race
 * check), products on packed operands allowed or not: malloc'd, *n
 * elements. */
static float *gemm_result(const chip_config *cfg, int packed, int64_t *n)
{
    char err[1024];
    sim_pt_packing(packed);
    isa_program *p = cc_gen_gemm(cfg, 1024, 1024, 1024, err, sizeof err);
    rt_device *dev = rt_open_config(cfg, err, sizeof err);
    CU_ASSERT_FATAL(p && dev);
    sim_options opt = {.values = 1, .detect_races = 1};
    rt_set_options(dev, &opt);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_FATAL(prog && !rt_fill_inputs(prog, 1, err, sizeof err));
    rt_run_result *res = malloc(sizeof *res);
    CU_ASSERT_FATAL(res && !rt_launch(prog, res) && !rt_launch(prog, res)); /* the second on warm pools */
    const float *c = rt_host_tensor(prog, "C", n);
    CU_ASSERT_FATAL(c && *n == 1024 * 1024);
    float *copy = malloc(sizeof *copy * (size_t)*n);
    CU_ASSERT_FATAL(copy != NULL);
    memcpy(copy, c, sizeof *copy * (size_t)*n);
    free(res);
    rt_close(dev);
    sim_pt_packing(1);
    return copy;
}

/* A GEMM whose tiles feed several products each: where the host's
 * OpenBLAS lets products run on operands packed once (sim/ptprod.c), the
 * bits are those of every product through cblas_sgemm. */
static void test_a_gemm_gives_the_same_bits_with_operands_packed_or_not(void)
{
    chip_config cfg;
    tu_config("spyre", &cfg);
    int64_t n1, n0;
    const long before = sim_pt_packed_products();
    float *packed = gemm_result(&cfg, 1, &n1);
    const long ran = sim_pt_packed_products() - before;
    float *plain = gemm_result(&cfg, 0, &n0);
    CU_ASSERT_EQUAL(sim_pt_packed_products() - before, ran); /* none with packing off */
    CU_ASSERT_EQUAL_FATAL(n1, n0);
    CU_ASSERT_EQUAL(memcmp(packed, plain, sizeof *packed * (size_t)n1), 0);
    if (tu_openblas_packs())
        CU_ASSERT(ran > 1000); /* where the path is known to be taken: most of 2 x 1024 products */
    free(packed);
    free(plain);
}

/* The graph directories of traces/ (one level of nesting: gpt2_gen/prefill). */
static int list_traces(char names[][256], int max)
{
    int n = 0;
    const char *subs[] = {"", "/prefill", "/decode"};
    DIR *d = opendir(SPYRE_SOURCE_DIR "/traces");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    for (struct dirent *e; (e = readdir(d)) && n < max;)
        for (int s = 0; s < 3 && e->d_name[0] != '.'; s++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/traces/%s%s/graph.txt", SPYRE_SOURCE_DIR, e->d_name, subs[s]);
            FILE *f = fopen(path, "r");
            if (f) {
                fclose(f);
                snprintf(names[n++], 256, "%s%s", e->d_name, subs[s]);
            }
        }
    closedir(d);
    return n;
}

static void test_every_trace_has_a_row_for_every_chip(void)
{
    static char names[64][256];
    int n = list_traces(names, 64);
    CU_ASSERT(n >= 12);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 2; c++) {
            if (!find_row(names[i], chips[c]))
                fprintf(stderr, "traces/%s on %s: no recorded cycles\n", names[i], chips[c]);
            CU_ASSERT_PTR_NOT_NULL(find_row(names[i], chips[c]));
        }
}

/* --record: print the table's rows for the current compiler and simulator. */
static void record(void)
{
    static char names[64][256];
    int n = list_traces(names, 64);
    snprintf(names[n++], 256, "gemm 1024");
    snprintf(names[n++], 256, "softmax 512 1024");
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 2; c++) {
            chip_config cfg;
            tu_config(chips[c], &cfg);
            gr_graph *g, *g2;
            isa_program *p = build(names[i], &cfg, &g), *q = build(names[i], &cfg, &g2);
            uint64_t h = program_hash(p);
            double timed = run_cycles(&cfg, p, g, names[i], 1), tonly = run_cycles(&cfg, q, g, names[i], 0);
            printf("{\"%s\", \"%s\", 0x%016llxull, %.17g, %.17g},\n", names[i], chips[c], (unsigned long long)h, timed,
                   tonly);
            gr_graph_free(g);
            gr_graph_free(g2);
        }
}

int main(int argc, char **argv)
{
    static const tu_test recording[] = {{"record", record}, {NULL, NULL}};
    if (argc > 1 && !strcmp(argv[1], "--record"))
        return tu_run("sim_equivalence", recording);
    static const tu_test tests[] = {
        {"every trace has a row for every chip", test_every_trace_has_a_row_for_every_chip},
        {"a gemm gives the same bits with operands packed or not",
         test_a_gemm_gives_the_same_bits_with_operands_packed_or_not},
        {"every recorded program runs in its recorded cycles and checks",
         test_every_recorded_program_runs_in_its_recorded_cycles_and_checks},
        {NULL, NULL},
    };
    return tu_run("sim_equivalence", tests);
}
