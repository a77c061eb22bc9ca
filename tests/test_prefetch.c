/* test_prefetch: a product whose weight streams down the columns of a
 * grid over the ring has its first K chunks of B loaded by the kernel
 * before it, in that kernel's drain (docs/compiler.md, "B's first chunks
 * loaded ahead"), or past kernels that stream nothing by the last
 * streamed product before it, and a weight a grid holds whole by a kernel
 * before that leaves its loaders idle; its columns' loaders load a block's epilogue
 * operands with the block's last chunk of B, and results for DRAM are
 * stored after the last block; a layer norm's per-column parameters,
 * passed down a tree of cores, are loaded by the kernel before it
 * ("Per-column values loaded ahead").  The simulator's per-kernel
 * DRAM bytes show the move; the outputs are compared with the reference
 * executor. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

/* Two linears of 128 tokens, each forced onto 16 x 2 cores with B
 * streamed in K chunks of 128 rows, one stick a block: every chunk of a
 * column is 128 rows x 1 stick of DL16, 16 KB. */
static const char *ffn_graph = "graph ffn\n"
                               "weights \"weights.safetensors\"\n"
                               "hint work_div k0_mm_relu=16x2r/8x1x128\n"
                               "hint work_div k1_mm=16x2r/8x1x128\n"
                               "input %x: f32[128, 256]\n"
                               "param %w1: f32[1024, 256] = \"w1\"\n"
                               "param %w2: f32[256, 1024] = \"w2\"\n"
                               "%t1: f32[256, 1024] = aten.t.default(%w1)\n"
                               "%h: f32[128, 1024] = aten.mm.default(%x, %t1)\n"
                               "%r: f32[128, 1024] = aten.relu.default(%h)\n"
                               "%t2: f32[1024, 256] = aten.t.default(%w2)\n"
                               "%y: f32[128, 256] = aten.mm.default(%r, %t2)\n"
                               "output %y\n";

/* ffn_graph with a softmax between the linears: a row kernel, which
 * streams nothing, lies between the two streamed products. */
static const char *ffn_softmax_graph = "graph ffn3\n"
                                       "weights \"weights.safetensors\"\n"
                                       "hint work_div k0_mm=16x2r/8x1x128\n"
                                       "hint work_div k2_mm=16x2r/8x1x128\n"
                                       "input %x: f32[128, 256]\n"
                                       "param %w1: f32[1024, 256] = \"w1\"\n"
                                       "param %w2: f32[256, 1024] = \"w2\"\n"
                                       "%t1: f32[256, 1024] = aten.t.default(%w1)\n"
                                       "%h: f32[128, 1024] = aten.mm.default(%x, %t1)\n"
                                       "%s: f32[128, 1024] = aten._softmax.default(%h, -1, False)\n"
                                       "%t2: f32[1024, 256] = aten.t.default(%w2)\n"
                                       "%y: f32[128, 256] = aten.mm.default(%s, %t2)\n"
                                       "output %y\n";

/* A relu on 4 cores, then a linear on 4 x 8 cores with B whole (not
 * streamed): its loaders, the grid's third row (cores 16 to 23), run
 * nothing in the relu. */
static const char *whole_graph = "graph bw\n"
                                 "weights \"weights.safetensors\"\n"
                                 "hint work_div k0_relu=4\n"
                                 "hint work_div k1_mm=4x8r\n"
                                 "input %x: f32[128, 768]\n"
                                 "param %w: f32[768, 768] = \"w\"\n"
                                 "%r: f32[128, 768] = aten.relu.default(%x)\n"
                                 "%t: f32[768, 768] = aten.t.default(%w)\n"
                                 "%y: f32[128, 768] = aten.mm.default(%r, %t)\n"
                                 "output %y\n";

/* One linear with a bias on 16 x 2 cores, B streamed in K chunks of 128
 * rows (16 KB a chunk), one stick a block: 8 blocks a column, the bias
 * loaded for each. */
static const char *bias_graph = "graph lin\n"
                                "weights \"weights.safetensors\"\n"
                                "hint work_div k0_addmm=16x2r/8x1x128\n"
                                "input %x: f32[128, 256]\n"
                                "param %w: f32[1024, 256] = \"w\"\n"
                                "param %b: f32[1024] = \"b\"\n"
                                "%t: f32[256, 1024] = aten.t.default(%w)\n"
                                "%y: f32[128, 1024] = aten.addmm.default(%b, %x, %t)\n"
                                "output %y\n";

/* BERT's output projection, residual add and layer norm (d 768, 128
 * tokens; test_backend's residual_ln_graph with the bias, norm weight and
 * shift as parameters): the product runs as a grid over the ring and the
 * layer norm's per-column values go down a tree of cores from core 0. */
static const char *resln_graph = "graph resln\n"
                                 "weights \"weights.safetensors\"\n"
                                 "input %x: f32[128, 768]\n"
                                 "input %a: f32[128, 768]\n"
                                 "param %w: f32[768, 768] = \"w\"\n"
                                 "param %bias: f32[768] = \"bias\"\n"
                                 "param %g: f32[768] = \"g\"\n"
                                 "param %b: f32[768] = \"b\"\n"
                                 "%wt: f32[768, 768] = aten.t.default(%w)\n"
                                 "%h: f32[128, 768] = aten.addmm.default(%bias, %a, %wt)\n"
                                 "%r: f32[128, 768] = aten.add.Tensor(%h, %x)\n"
                                 "%ln: (f32[128, 768], f32[128, 1], f32[128, 1]) = "
                                 "aten.native_layer_norm.default(%r, [768], %g, %b, 1e-12)\n"
                                 "%y: f32[128, 768] = getitem(%ln, 0)\n"
                                 "output %y\n";

/* Compile dir's graph for spyre, run it, check every output: the outputs
 * not ok (-1: a failure before the check), the run's statistics in *st,
 * the program (not rolled into loops) in *out when out is not NULL. */
static int run_checked_program(const char *dir, sim_stats *st, isa_program **out)
{
    chip_config cfg;
    tu_config("spyre", &cfg);
    char err[1024];
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts opts = {.target = &cfg, .no_reroll = out != NULL};
    cc_result *r = cc_compile(g, &opts, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    if (out) { /* a copy to read: the device takes p */
        r = cc_compile(g, &opts, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        *out = cc_result_take_program(r);
        cc_result_free(r);
    }
    int bad = tu_run_checked(g, &cfg, p, g->name, st);
    gr_graph_free(g);
    return bad;
}

/* The graph text with params ps written to a fresh directory, run and
 * checked (every output must validate): the run's statistics. */
static sim_stats run_graph(const char *text, const tu_param *ps, int nps)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, text, ps, nps);
    sim_stats st = {0};
    CU_ASSERT_EQUAL(run_checked_program(dir, &st, NULL), 0);
    tu_rmtree(dir);
    return st;
}

/* The bytes a dma.ld moves: run sticks times its loops' counts. */
static int64_t ld_bytes(const isa_insn *in)
{
    int64_t n = in->run * 128;
    for (int l = 0; l < ISA_MAX_LOOPS; l++)
        n *= in->n[l] > 0 ? in->n[l] : 1;
    return n;
}

/* The first product reads x and w1 and keeps r in LX for the second,
 * which reads w2 and writes y: the first kernel's DRAM bytes are x's and
 * w1's plus whole chunks of w2 on both columns' loaders (2 x 16 KB each),
 * the second's the rest of w2 and y, and the outputs validate. */
static void test_the_next_products_first_weight_chunks_load_in_the_kernel_before(void)
{
    static const tu_param ps[] = {{"w1", 1024, 256}, {"w2", 256, 1024}};
    const sim_stats st = run_graph(ffn_graph, ps, 2);
    CU_ASSERT_EQUAL_FATAL(st.nkernels, 2);
    const uint64_t x = 128 * 256 * 2, w1 = 1024 * 256 * 2, w2 = 256 * 1024 * 2, y = 128 * 256 * 2, pair = 2 * 16384;
    const uint64_t k0 = st.kernels[0].dram_bytes, k1 = st.kernels[1].dram_bytes;
    CU_ASSERT(k0 > x + w1);
    CU_ASSERT_EQUAL((k0 - x - w1) % pair, 0);
    CU_ASSERT_EQUAL(k0 + k1, x + w1 + w2 + y);
}

/* Past the softmax between them (h and s stay in LX): the first product
 * loads whole chunks of w2 on both columns' loaders behind its own
 * loads, the softmax reads and writes no DRAM, the second product reads
 * the rest of w2 and writes y, and the outputs validate. */
static void test_a_products_first_weight_chunks_load_behind_the_last_streamed_product(void)
{
    static const tu_param ps[] = {{"w1", 1024, 256}, {"w2", 256, 1024}};
    const sim_stats st = run_graph(ffn_softmax_graph, ps, 2);
    CU_ASSERT_EQUAL_FATAL(st.nkernels, 3);
    const uint64_t x = 128 * 256 * 2, w1 = 1024 * 256 * 2, w2 = 256 * 1024 * 2, y = 128 * 256 * 2, pair = 2 * 16384;
    const uint64_t k0 = st.kernels[0].dram_bytes, k1 = st.kernels[1].dram_bytes, k2 = st.kernels[2].dram_bytes;
    CU_ASSERT(k0 > x + w1);
    CU_ASSERT_EQUAL((k0 - x - w1) % pair, 0);
    CU_ASSERT_EQUAL(k1, 0);
    CU_ASSERT_EQUAL(k0 + k1 + k2, x + w1 + w2 + y);
}

/* The linear's loaders load its first K chunks of B (64 rows of every
 * column: 768 x 64 DL16 values a step) in the relu's kernel, which reads
 * x from DRAM and keeps r in LX (sent to the linear's 32 cores by a ring
 * exchange, no DRAM); the linear reads the rest of w and writes y, and
 * the outputs validate. */
static void test_a_whole_weights_first_chunks_load_on_loaders_the_kernel_before_leaves_idle(void)
{
    static const tu_param ps[] = {{"w", 768, 768}};
    const sim_stats st = run_graph(whole_graph, ps, 1);
    CU_ASSERT_EQUAL_FATAL(st.nkernels, 3); /* the relu, r's exchange from 4 cores to 32, the linear */
    const uint64_t x = 128 * 768 * 2, w = 768 * 768 * 2, y = 128 * 768 * 2, step = 768 * 64 * 2;
    const uint64_t k0 = st.kernels[0].dram_bytes, k1 = st.kernels[2].dram_bytes;
    CU_ASSERT(k0 > x);
    CU_ASSERT_EQUAL((k0 - x) % step, 0);
    CU_ASSERT_EQUAL(st.kernels[1].dram_bytes, 0);
    CU_ASSERT_EQUAL(k0 + k1, x + w + y);
}

/* bias_graph's program (not rolled into loops), its outputs checked. */
static isa_program *bias_program(void)
{
    static const tu_param ps[] = {{"w", 1024, 256}, {"b", 1024, 0}};
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, bias_graph, ps, 2);
    sim_stats st = {0};
    isa_program *p = NULL;
    CU_ASSERT_EQUAL(run_checked_program(dir, &st, &p), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    tu_rmtree(dir);
    return p;
}

/* A dmai signal waits for all of its unit's loads to land, so a loader
 * that loaded a block's bias on its own between two chunks of B (signal,
 * bias, signal, next chunk) left the DRAM idle behind it (BERT-base's
 * fused q/k/v product: 500 to 940 cycles a block on each loader).  On
 * the cores that load B (a load of a whole 16 KB chunk), every group of
 * loads that a signal closes holds a chunk of B; the outputs validate. */
static void test_a_loader_loads_the_epilogue_operands_with_a_chunk_of_b(void)
{
    isa_program *p = bias_program();
    int loaders = 0;
    for (int c = 0; c < p->ncores; c++) {
        int64_t most = 0, run = 0;
        int groups = 0, bad = 0;
        for (size_t i = 0; i < p->cores[c].n; i++) {
            const isa_insn *in = &p->cores[c].insns[i];
            if (in->op == ISA_OP_DMA_LD)
                run = run > ld_bytes(in) ? run : ld_bytes(in);
            else if (in->op == ISA_OP_SIG && in->u == ISA_U_DMAI && run > 0) {
                most = most > run ? most : run;
                groups++;
                bad += run < 16384;
                run = 0;
            }
        }
        if (most < 16384)
            continue;
        loaders++;
        CU_ASSERT(groups >= 16); /* 8 blocks of 2 chunks */
        CU_ASSERT_EQUAL(bad, 0);
    }
    CU_ASSERT_EQUAL(loaders, 2);
    isa_program_free(p);
}

/* The same linear's results go to DRAM: with a C of its own for every
 * block, each core stores every block's results after its last product
 * (the loaders' reads of B no longer meet the stores), and the outputs
 * validate. */
static void test_a_streamed_products_results_are_stored_after_its_last_block(void)
{
    isa_program *p = bias_program();
    for (int c = 0; c < p->ncores; c++) {
        size_t last_pt = 0, first_st = 0, nst = 0;
        for (size_t i = 0; i < p->cores[c].n; i++) {
            const int op = p->cores[c].insns[i].op;
            if (op == ISA_OP_PT_MM)
                last_pt = i;
            if (op == ISA_OP_DMA_ST && !nst++)
                first_st = i;
        }
        CU_ASSERT(nst >= 8); /* a store or more a block */
        CU_ASSERT(first_st > last_pt);
    }
    isa_program_free(p);
}

/* The layer norm's per-column parameters (3 x 768 DL16 values) are read
 * once, by core 0, in the product's kernel: the layer norm's own DRAM
 * bytes are x read and y written only (its product's result comes from
 * LX), the product's are a, w and those values; the outputs validate. */
static void test_a_layer_norms_per_column_parameters_load_in_the_kernel_before(void)
{
    static const tu_param ps[] = {{"w", 768, 768}, {"bias", 768, 0}, {"g", 768, 0}, {"b", 768, 0}};
    const sim_stats st = run_graph(resln_graph, ps, 4);
    CU_ASSERT_EQUAL_FATAL(st.nkernels, 2);
    const uint64_t act = 128 * 768 * 2, w = 768 * 768 * 2, cols = 3 * 768 * 2; /* DL16 */
    CU_ASSERT_EQUAL(st.kernels[1].dram_bytes, 2 * act);
    CU_ASSERT_EQUAL(st.kernels[0].dram_bytes, act + w + cols);
}

int main(void)
{
    static const tu_test tests[] = {
        {"the next product's first weight chunks load in the kernel before",
         test_the_next_products_first_weight_chunks_load_in_the_kernel_before},
        {"a product's first weight chunks load behind the last streamed product",
         test_a_products_first_weight_chunks_load_behind_the_last_streamed_product},
        {"a whole weight's first chunks load on loaders the kernel before leaves idle",
         test_a_whole_weights_first_chunks_load_on_loaders_the_kernel_before_leaves_idle},
        {"a loader loads the epilogue operands with a chunk of B", test_a_loader_loads_the_epilogue_operands_with_a_chunk_of_b},
        {"a streamed product's results are stored after its last block",
         test_a_streamed_products_results_are_stored_after_its_last_block},
        {"a layer norm's per-column parameters load in the kernel before",
         test_a_layer_norms_per_column_parameters_load_in_the_kernel_before},
        {NULL, NULL},
    };
    return tu_run("prefetch", tests);
}
