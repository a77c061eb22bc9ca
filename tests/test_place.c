/* test_place: a kernel that depends on no earlier kernel (with placement
 * free: none since the last bar) runs on the cores the estimates expect
 * free first, beside the kernels before it (docs/compiler.md,
 * "Placement"): its instructions lie on other cores than theirs, the
 * simulator runs it while they run, its ring transfers reach its own
 * cores, and every output matches the reference executor. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

/* serve_tiny's ends: a norm of one row and two heads on a core or two,
 * and an embedding of 64 tokens that reads only the graph's inputs. */
static const char *heads_graph = "graph heads\n"
                                 "weights \"weights.safetensors\"\n"
                                 "input %ids: i64[64]\n"
                                 "input %x: f32[1, 64]\n"
                                 "param %table: f32[256, 64] = \"table\"\n"
                                 "param %w0: f32[128, 64] = \"w0\"\n"
                                 "param %w1: f32[128, 64] = \"w1\"\n"
                                 "%e: f32[64, 64] = aten.embedding.default(%table, %ids)\n"
                                 "%r: f32[1, 64] = aten.relu.default(%x)\n"
                                 "%t0: f32[64, 128] = aten.t.default(%w0)\n"
                                 "%m0: f32[1, 128] = aten.mm.default(%r, %t0)\n"
                                 "%t1: f32[64, 128] = aten.t.default(%w1)\n"
                                 "%m1: f32[1, 128] = aten.mm.default(%r, %t1)\n"
                                 "output %e, %m0, %m1\n";

/* A layer norm on 16 cores, then a product of other inputs on 16 more,
 * its K in 4 parts whose partial sums go to a neighbour over the ring. */
static const char *splitk_graph = "graph splitk\n"
                                  "weights \"weights.safetensors\"\n"
                                  "hint work_div k0_native_layer_norm=16\n"
                                  "hint work_div k1_mm=2x2x4\n"
                                  "input %x: f32[128, 768]\n"
                                  "input %y: f32[128, 768]\n"
                                  "param %w: f32[768, 768] = \"w\"\n"
                                  "param %g: f32[768] = \"g\"\n"
                                  "param %b: f32[768] = \"b\"\n"
                                  "%l: (f32[128, 768], f32[128, 1], f32[128, 1]) = "
                                  "aten.native_layer_norm.default(%y, [768], %g, %b, 1e-12)\n"
                                  "%n: f32[128, 768] = getitem(%l, 0)\n"
                                  "%t: f32[768, 768] = aten.t.default(%w)\n"
                                  "%h: f32[128, 768] = aten.mm.default(%x, %t)\n"
                                  "output %h, %n\n";

/* A relu on one core keeps its result in LX for three products of one
 * core each (q, k and v of a decode step). */
static const char *qkv_graph = "graph qkv\n"
                               "weights \"weights.safetensors\"\n"
                               "hint work_div k0_relu=1\n"
                               "input %x: f32[4, 64]\n"
                               "param %w0: f32[64, 64] = \"w0\"\n"
                               "param %w1: f32[64, 64] = \"w1\"\n"
                               "param %w2: f32[64, 64] = \"w2\"\n"
                               "%r: f32[4, 64] = aten.relu.default(%x)\n"
                               "%t0: f32[64, 64] = aten.t.default(%w0)\n"
                               "%m0: f32[4, 64] = aten.mm.default(%r, %t0)\n"
                               "%t1: f32[64, 64] = aten.t.default(%w1)\n"
                               "%m1: f32[4, 64] = aten.mm.default(%r, %t1)\n"
                               "%t2: f32[64, 64] = aten.t.default(%w2)\n"
                               "%m2: f32[4, 64] = aten.mm.default(%r, %t2)\n"
                               "output %m0, %m1, %m2\n";

/* The graph text with params ps in a fresh directory, compiled for spyre
 * with placement CC_PLACE_* (a copy of the program in *copy), run, every
 * output checked: 0 when all validate; the run's statistics in *st. */
static int run_placed(const char *text, const tu_param *ps, int nps, int placement, isa_program **copy, sim_stats *st)
{
    char dir[512], err[1024];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, text, ps, nps);
    chip_config cfg;
    tu_config("spyre", &cfg);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts opts = {.target = &cfg, .siblings = CC_SIBLINGS_NEVER, /* the products as written */
                            .placement = placement};
    cc_result *r = cc_compile(g, &opts, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    r = cc_compile(g, &opts, err, sizeof err); /* a copy to read: the device takes p */
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    *copy = cc_result_take_program(r);
    cc_result_free(r);
    int bad = tu_run_checked(g, &cfg, p, g->name, st);
    gr_graph_free(g);
    tu_rmtree(dir);
    return bad;
}

/* The cores the kernel `name` has instructions on, as bits. */
static uint64_t cores_of(const isa_program *p, const char *name)
{
    uint64_t m = 0;
    for (size_t k = 0; k < p->nkernels; k++)
        if (!strcmp(p->kernels[k].name, name))
            m |= 1ull << p->kernels[k].core;
    return m;
}

/* Kernel `name`'s figures of a run; the test stops if it has none. */
static const sim_kernel_stats *kernel(const sim_stats *st, const char *name)
{
    const sim_kernel_stats *k = sim_stats_kernel(st, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    return k;
}

/* By default only the embedding, which reads only inputs, moves: off the
 * cores of the norm and both heads, and it starts before the second head
 * ends; with placement none every kernel starts at core 0. */
static void test_a_kernel_that_depends_on_none_before_it_runs_beside_them(void)
{
    static const tu_param ps[] = {{"table", 256, 64}, {"w0", 128, 64}, {"w1", 128, 64}};
    isa_program *p;
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_placed(heads_graph, ps, 3, CC_PLACE_INDEPENDENT, &p, &st), 0);
    const uint64_t before = cores_of(p, "k0_relu") | cores_of(p, "k1_mm") | cores_of(p, "k2_mm");
    CU_ASSERT_EQUAL(cores_of(p, "k1_mm"), cores_of(p, "k2_mm"));
    CU_ASSERT(cores_of(p, "k3_embedding") != 0);
    CU_ASSERT_EQUAL(cores_of(p, "k3_embedding") & before, 0);
    CU_ASSERT(kernel(&st, "k3_embedding")->start < kernel(&st, "k2_mm")->end);
    isa_program_free(p);
    CU_ASSERT_EQUAL(run_placed(heads_graph, ps, 3, CC_PLACE_NONE, &p, &st), 0);
    CU_ASSERT(cores_of(p, "k3_embedding") & 1);
    isa_program_free(p);
}

/* With placement free: the first head reads the norm on other cores, so
 * a bar comes before it and it stays on cores 0 on; the second head (whose
 * input the bar has ordered) and the embedding depend on nothing after
 * that bar: each lies on cores of its own, and all three run at once
 * (each starts before the first head ends). */
static void test_independent_kernels_run_beside_the_kernels_before_them(void)
{
    static const tu_param ps[] = {{"table", 256, 64}, {"w0", 128, 64}, {"w1", 128, 64}};
    isa_program *p;
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_placed(heads_graph, ps, 3, CC_PLACE_FREE, &p, &st), 0);
    const uint64_t h0 = cores_of(p, "k1_mm"), h1 = cores_of(p, "k2_mm"), emb = cores_of(p, "k3_embedding");
    CU_ASSERT(cores_of(p, "k0_relu") & h0 & 1);
    CU_ASSERT(h1 != 0 && emb != 0);
    CU_ASSERT_EQUAL(h0 & h1, 0);
    CU_ASSERT_EQUAL((h0 | h1) & emb, 0);
    const sim_kernel_stats *first = kernel(&st, "k1_mm");
    CU_ASSERT(kernel(&st, "k2_mm")->start < first->end);
    CU_ASSERT(kernel(&st, "k3_embedding")->start < first->end);
    isa_program_free(p);
}

/* The product is placed on cores 16..31, after the layer norm's 0..15;
 * each of its ring transfers (partial sums, their ready signals) goes
 * from one of its cores to another, and its outputs validate. */
static void test_a_placed_kernels_ring_transfers_go_to_its_own_cores(void)
{
    static const tu_param ps[] = {{"w", 768, 768}, {"g", 768, 0}, {"b", 768, 0}};
    isa_program *p;
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_placed(splitk_graph, ps, 3, CC_PLACE_INDEPENDENT, &p, &st), 0);
    CU_ASSERT_EQUAL(cores_of(p, "k0_native_layer_norm"), 0xffffull);
    const uint64_t mm = cores_of(p, "k1_mm");
    CU_ASSERT_EQUAL(mm, 0xffff0000ull);
    int transfers = 0;
    for (size_t k = 0; k < p->nkernels; k++) {
        const isa_kernel *K = &p->kernels[k];
        for (long i = K->first; !strcmp(K->name, "k1_mm") && i <= K->last; i++) {
            const isa_insn *in = &p->cores[K->core].insns[i];
            if (in->op == ISA_OP_RING_SEND || in->op == ISA_OP_RING_RED) {
                transfers++;
                CU_ASSERT(mm >> in->core & 1);
                CU_ASSERT_NOT_EQUAL(in->core, K->core);
            }
        }
    }
    CU_ASSERT(transfers >= 16);
    isa_program_free(p);
}

/* With placement free, the first product reads the relu's result from LX on core 0 with a bar
 * before it, though nothing crosses cores there: the bar lets the other
 * two, which then read the result from DRAM, run on cores 1 and 2 at
 * once with it. */
static void test_a_bar_lets_the_products_after_it_run_at_once_on_other_cores(void)
{
    static const tu_param ps[] = {{"w0", 64, 64}, {"w1", 64, 64}, {"w2", 64, 64}};
    isa_program *p;
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_placed(qkv_graph, ps, 3, CC_PLACE_FREE, &p, &st), 0);
    CU_ASSERT_EQUAL(cores_of(p, "k0_relu"), 1);
    CU_ASSERT_EQUAL(cores_of(p, "k1_mm"), 1);
    CU_ASSERT_EQUAL(cores_of(p, "k2_mm") | cores_of(p, "k3_mm"), 6);
    CU_ASSERT_NOT_EQUAL(cores_of(p, "k2_mm"), cores_of(p, "k3_mm"));
    for (size_t k = 0; k < p->nkernels; k++)
        if (!strcmp(p->kernels[k].name, "k1_mm"))
            CU_ASSERT_EQUAL(p->cores[0].insns[p->kernels[k].first - 1].op, ISA_OP_BAR);
    const sim_kernel_stats *first = kernel(&st, "k1_mm");
    CU_ASSERT(kernel(&st, "k2_mm")->start < first->end);
    CU_ASSERT(kernel(&st, "k3_mm")->start < first->end);
    isa_program_free(p);
}

/* serve_tiny's decode step of 4 sequences (context 128) with placement
 * free: QK^T over the KV pool (one core, after a bar) goes to cores the
 * next kernel, QK^T of the new keys (its batch on the RoPE's 8 cores, for
 * LX), does not use, so that the two run at once (the new keys' product
 * ends before the pool's), and the outputs validate. */
static void test_a_moved_kernel_leaves_the_next_kernels_cores_free(void)
{
    static const tu_param ps[] = {
        {"norm1.weight", 64, 0}, {"norm2.weight", 64, 0},  {"q.weight", 64, 64},    {"k.weight", 32, 64},
        {"v.weight", 32, 64},    {"o.weight", 64, 64},     {"gate.weight", 160, 64}, {"up.weight", 160, 64},
        {"down.weight", 64, 160}, {"rope_cos", 129, 16},   {"rope_sin", 129, 16},    {"k_pool", 1032, 16},
        {"v_pool", 1032, 16}};
    char *text = tu_read_file(SPYRE_SOURCE_DIR "/traces/serve_tiny/decode_b4_c128/graph.txt", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    isa_program *p;
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_placed(text, ps, (int)(sizeof ps / sizeof *ps), CC_PLACE_FREE, &p, &st), 0);
    free(text);
    const uint64_t pool = cores_of(p, "k7_bmm"), fresh = cores_of(p, "k8_bmm");
    CU_ASSERT(pool != 0 && fresh != 0);
    CU_ASSERT_EQUAL(pool & fresh, 0);
    CU_ASSERT(kernel(&st, "k8_bmm")->end < kernel(&st, "k7_bmm")->end);
    isa_program_free(p);
}

int main(void)
{
    static const tu_test tests[] = {
        {"a kernel that depends on none before it runs beside them",
         test_a_kernel_that_depends_on_none_before_it_runs_beside_them},
        {"independent kernels run beside the kernels before them",
         test_independent_kernels_run_beside_the_kernels_before_them},
        {"a placed kernel's ring transfers go to its own cores", test_a_placed_kernels_ring_transfers_go_to_its_own_cores},
        {"a bar lets the products after it run at once on other cores",
         test_a_bar_lets_the_products_after_it_run_at_once_on_other_cores},
        {"a moved kernel leaves the next kernel's cores free", test_a_moved_kernel_leaves_the_next_kernels_cores_free},
        {NULL, NULL},
    };
    return tu_run("place", tests);
}
