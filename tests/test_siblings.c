/* test_siblings: the fuse_siblings pass (docs/compiler.md, "Sibling
 * products").  Products that share their A operand become one product
 * over their weights concatenated along n: each graph is compiled with
 * the pass and without it (cc_compile_opts.no_siblings), run on the
 * simulator, every output compared with the reference executor
 * (rt_check_graph), and the kernels' DRAM bytes from the simulator's
 * per-kernel statistics show that the shared A is read once. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

/* One compiled and checked run: the outputs not ok (-1: a failure before
 * the check), the product kernels, and per kernel its name and DRAM
 * bytes. */
typedef struct {
    int bad, products;
    sim_stats st;
} run_out;

/* ... on chip cfg (cfgname names it in messages). */
static run_out run_cfg(const char *dir, const chip_config *cfg, const char *cfgname, int siblings, const char *const *wd,
                       int nwd)
{
    run_out o = {.bad = -1};
    char err[1024];
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts opts = {.target = cfg, .siblings = siblings, .work_div = wd, .nwork_div = nwd};
    cc_result *r = cc_compile(g, &opts, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    for (int k = 0; k < cc_result_nkernels(r); k++)
        o.products += cc_result_kernel_kind(r, k) == CC_KERNEL_MATMUL;
    isa_program *p = cc_result_take_program(r);
    cc_result_free(r);
    char label[256];
    snprintf(label, sizeof label, "%s on %s", g->name, cfgname);
    o.bad = tu_run_checked(g, cfg, p, label, &o.st);
    gr_graph_free(g);
    return o;
}

static run_out run_opts(const char *dir, const char *cfgname, int siblings, const char *const *wd, int nwd)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    return run_cfg(dir, &cfg, cfgname, siblings, wd, nwd);
}

static run_out run(const char *dir, const char *cfgname, int siblings)
{
    return run_opts(dir, cfgname, siblings, NULL, 0);
}

/* ... with the q/k/v projections fused and the work divisions wd. */
static run_out run_wd(const char *dir, const char *cfgname, const char *const *wd, int nwd)
{
    return run_opts(dir, cfgname, CC_SIBLINGS_ALWAYS, wd, nwd);
}

/* The simulator's DRAM bytes (read and written) of the kernels whose
 * names end in suffix ("_addmm": the projections with their bias adds). */
static uint64_t kernel_bytes(const run_out *o, const char *suffix)
{
    uint64_t b = 0;
    const size_t ls = strlen(suffix);
    for (int k = 0; k < o->st.nkernels; k++) {
        const size_t ln = strlen(o->st.kernels[k].name);
        if (ln >= ls && !strcmp(o->st.kernels[k].name + ln - ls, suffix))
            b += o->st.kernels[k].dram_bytes;
    }
    return b;
}

/* The back half's estimate of the whole program (its kernels and ring
 * exchanges) and its product kernels, compiled with `siblings`. */
static double estimate_total(const char *dir, const char *cfgname, int siblings, int *products)
{
    chip_config cfg;
    tu_config(cfgname, &cfg);
    char err[1024], x[300];
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    cc_compile_opts opts = {.target = &cfg, .siblings = siblings};
    cc_result *r = cc_compile(g, &opts, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    double t = 0;
    *products = 0;
    for (int k = 0; k < cc_result_nkernels(r); k++) {
        snprintf(x, sizeof x, "%s.xchg", cc_result_kernel_name(r, k));
        t += cc_result_estimate(r, cc_result_kernel_name(r, k));
        t += cc_result_estimate(r, x) > 0 ? cc_result_estimate(r, x) : 0;
        *products += cc_result_kernel_kind(r, k) == CC_KERNEL_MATMUL;
    }
    cc_result_free(r);
    gr_graph_free(g);
    return t;
}

/* x [128, 256] and its q, k and v projections (bias adds, weights
 * [256, 256]), the start of both graphs below. */
#define QKV_PROJECTIONS \
    "weights \"weights.safetensors\"\n" \
    "input %x: f32[128, 256]\n" \
    "param %wq: f32[256, 256] = \"wq\"\n" \
    "param %bq: f32[256] = \"bq\"\n" \
    "param %wk: f32[256, 256] = \"wk\"\n" \
    "param %bk: f32[256] = \"bk\"\n" \
    "param %wv: f32[256, 256] = \"wv\"\n" \
    "param %bv: f32[256] = \"bv\"\n" \
    "%tq: f32[256, 256] = aten.t.default(%wq)\n" \
    "%q: f32[128, 256] = aten.addmm.default(%bq, %x, %tq)\n" \
    "%tk: f32[256, 256] = aten.t.default(%wk)\n" \
    "%k: f32[128, 256] = aten.addmm.default(%bk, %x, %tk)\n" \
    "%tv: f32[256, 256] = aten.t.default(%wv)\n" \
    "%v: f32[128, 256] = aten.addmm.default(%bv, %x, %tv)\n"

/* An attention's q, k and v projections of one x [128, 256] (bias adds,
 * weights [256, 256]); q k^T reads q as A and k as B, p v reads v as B. */
static const char *qkv_graph = "graph qkv\n"
                               QKV_PROJECTIONS
                               "%kt: f32[256, 128] = aten.t.default(%k)\n"
                               "%s: f32[128, 128] = aten.mm.default(%q, %kt)\n"
                               "%p: f32[128, 128] = aten._softmax.default(%s, -1, False)\n"
                               "%o: f32[128, 256] = aten.mm.default(%p, %v)\n"
                               "output %o\n";
static const tu_param qkv_params[] = {{"wq", 256, 256}, {"bq", 256, 0}, {"wk", 256, 256},
                                   {"bk", 256, 0},   {"wv", 256, 256}, {"bv", 256, 0}};

/* Fused, the three projections are one product kernel (k0_addmm) that
 * moves at least x, the weights, the biases and the result once each
 * (DL16), and less than x more: x is read once.  The separate kernels
 * read x once as well: the first keeps the rows of x it loads in LX for
 * the other two (docs/compiler.md, "Inputs kept by their first reader";
 * they moved x three times before, 798,720 bytes; x [128, 256] in DL16
 * is 65,536 bytes), so fused moves no more than apart. */
static void test_qkv_projections_are_one_product_that_reads_x_once(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, qkv_graph, qkv_params, 6);
    run_out fused = run(dir, "spyre", CC_SIBLINGS_ESTIMATE), apart = run(dir, "spyre", CC_SIBLINGS_NEVER);
    CU_ASSERT_EQUAL(fused.bad, 0);
    CU_ASSERT_EQUAL(apart.bad, 0);
    CU_ASSERT_EQUAL(fused.products, 3); /* qkv, q k^T, p v */
    CU_ASSERT_EQUAL(apart.products, 5);
    const uint64_t x = 128 * 256 * 2, least = x + 3 * (256 * 256 * 2 + 256 * 2) + 128 * 768 * 2;
    const uint64_t f = kernel_bytes(&fused, "_addmm");
    CU_ASSERT(f >= least && f < least + x); /* measured 661,504 of 656,896 */
    const uint64_t a = kernel_bytes(&apart, "_addmm");
    CU_ASSERT(f <= a && a < least + x); /* measured 667,648 */
    tu_rmtree(dir);
}

static void test_qkv_projections_validate_on_the_4core_chip(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, qkv_graph, qkv_params, 6);
    CU_ASSERT_EQUAL(run(dir, "spyre-4core", CC_SIBLINGS_ALWAYS).bad, 0);
    tu_rmtree(dir);
}

/* Multi-head attention over the fused projections: 4 heads of 64
 * columns, QK^T and PV batched by head (BERT-base's shape, smaller). */
static const char *heads_graph = "graph heads\n"
                                 QKV_PROJECTIONS
                                 "%q4: f32[128, 4, 64] = aten.view.default(%q, [128, 4, 64])\n"
                                 "%qh: f32[4, 128, 64] = aten.transpose.int(%q4, 0, 1)\n"
                                 "%k4: f32[128, 4, 64] = aten.view.default(%k, [128, 4, 64])\n"
                                 "%kh: f32[4, 128, 64] = aten.transpose.int(%k4, 0, 1)\n"
                                 "%kt: f32[4, 64, 128] = aten.transpose.int(%kh, 1, 2)\n"
                                 "%s: f32[4, 128, 128] = aten.bmm.default(%qh, %kt)\n"
                                 "%p: f32[4, 128, 128] = aten._softmax.default(%s, -1, False)\n"
                                 "%v4: f32[128, 4, 64] = aten.view.default(%v, [128, 4, 64])\n"
                                 "%vh: f32[4, 128, 64] = aten.transpose.int(%v4, 0, 1)\n"
                                 "%o: f32[4, 128, 64] = aten.bmm.default(%p, %vh)\n"
                                 "output %o\n";

/* The fused projections on a grid over the ring (16x2r, as BERT-base's)
 * send each head's q, k and v columns straight into the LX of the core
 * that runs that head's QK^T and PV (docs/compiler.md, "q, k and v by
 * head"): the outputs match the reference on both chips, the only DRAM
 * the program writes is its output o (q, k and v, 196,608 bytes, never
 * go there), and the attention kernels read none of q, k, v from DRAM
 * (their DRAM bytes are o's alone).  Through DRAM, as before, the
 * product wrote q, k and v and QK^T and PV read them back. */
static void test_qkv_go_by_head_to_the_attention_cores_without_dram(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, heads_graph, qkv_params, 6);
    static const char *const wd[] = {"k0_addmm=16x2r"};
    run_out sent = run_wd(dir, "spyre", wd, 1);
    CU_ASSERT_EQUAL(sent.bad, 0);
    const uint64_t o = 4 * 128 * 64 * 2;
    CU_ASSERT_EQUAL(sent.st.dram_bytes_written, o);
    CU_ASSERT_EQUAL(kernel_bytes(&sent, "_bmm"), o);
    CU_ASSERT_EQUAL(run_wd(dir, "spyre-4core", NULL, 0).bad, 0);
    tu_rmtree(dir);
}

/* The hand-off's markers signal the chip's last token on the readers'
 * cores by ring.send, whose tok 255 means no token: on a chip of 256
 * tokens the program takes token 254 for them (a marker on 255 signalled
 * nothing, and every reader core waited for it forever), and the outputs
 * match the reference with q, k and v still kept out of DRAM. */
static void test_qkv_by_head_on_a_chip_of_256_tokens_signal_a_real_token(void)
{
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, heads_graph, qkv_params, 6);
    static const char *const wd[] = {"k0_addmm=16x2r"};
    chip_config cfg;
    tu_config("spyre", &cfg);
    cfg.tokens = 256;
    run_out sent = run_cfg(dir, &cfg, "spyre with 256 tokens", CC_SIBLINGS_ALWAYS, wd, 1);
    CU_ASSERT_EQUAL(sent.bad, 0);
    CU_ASSERT_EQUAL(sent.st.dram_bytes_written, 4 * 128 * 64 * 2);
    tu_rmtree(dir);
}

/* A Llama MLP: gate and up products of x without bias, silu(gate) * up
 * reads both halves of the one result, then the down product. */
static const char *mlp_graph = "graph gateup\n"
                               "weights \"weights.safetensors\"\n"
                               "input %x: f32[64, 256]\n"
                               "param %wg: f32[512, 256] = \"wg\"\n"
                               "param %wu: f32[512, 256] = \"wu\"\n"
                               "param %wd: f32[256, 512] = \"wd\"\n"
                               "%tg: f32[256, 512] = aten.t.default(%wg)\n"
                               "%g: f32[64, 512] = aten.mm.default(%x, %tg)\n"
                               "%tu: f32[256, 512] = aten.t.default(%wu)\n"
                               "%u: f32[64, 512] = aten.mm.default(%x, %tu)\n"
                               "%a: f32[64, 512] = aten.silu.default(%g)\n"
                               "%h: f32[64, 512] = aten.mul.Tensor(%a, %u)\n"
                               "%td: f32[512, 256] = aten.t.default(%wd)\n"
                               "%y: f32[64, 256] = aten.mm.default(%h, %td)\n"
                               "output %y\n";

static void test_gate_and_up_products_fused_validate(void)
{
    static const tu_param ps[] = {{"wg", 512, 256}, {"wu", 512, 256}, {"wd", 256, 512}};
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, mlp_graph, ps, 3);
    run_out fused = run(dir, "spyre", CC_SIBLINGS_ALWAYS);
    CU_ASSERT_EQUAL(fused.bad, 0);
    CU_ASSERT_EQUAL(fused.products, 2);
    CU_ASSERT_EQUAL(run(dir, "spyre-4core", CC_SIBLINGS_ALWAYS).bad, 0);
    tu_rmtree(dir);
}

/* By default the program is the one of lower estimate: for the q/k/v
 * graph the fused one, for the gate/up graph (where silu(gate) * up, no
 * longer the up product's epilogue, reads both halves of the result back
 * from DRAM) the separate products. */
static void test_the_default_is_the_program_of_lower_estimate(void)
{
    static const tu_param ps[] = {{"wg", 512, 256}, {"wu", 512, 256}, {"wd", 256, 512}};
    const char *texts[] = {qkv_graph, mlp_graph};
    for (int i = 0; i < 2; i++) {
        char dir[512];
        tu_tmpdir(dir, sizeof dir);
        tu_write_graph(dir, texts[i], i ? ps : qkv_params, i ? 3 : 6);
        int pf, pa, pd;
        const double fused = estimate_total(dir, "spyre", CC_SIBLINGS_ALWAYS, &pf);
        const double apart = estimate_total(dir, "spyre", CC_SIBLINGS_NEVER, &pa);
        const double dflt = estimate_total(dir, "spyre", CC_SIBLINGS_ESTIMATE, &pd);
        CU_ASSERT(pf < pa);
        CU_ASSERT_EQUAL(pd, fused < apart ? pf : pa);
        CU_ASSERT_EQUAL(dflt, fused < apart ? fused : apart);
        CU_ASSERT_EQUAL(fused < apart, i == 0);
        tu_rmtree(dir);
    }
}

/* Weights of 100 rows are not whole sticks (64 DL16 lanes): laid one
 * after another they would not be the concatenation, so the products stay
 * apart, and the graph still validates. */
static void test_siblings_of_partial_sticks_stay_apart(void)
{
    static const char *text = "graph odd\n"
                              "weights \"weights.safetensors\"\n"
                              "input %x: f32[64, 128]\n"
                              "param %wa: f32[100, 128] = \"wa\"\n"
                              "param %wb: f32[100, 128] = \"wb\"\n"
                              "%ta: f32[128, 100] = aten.t.default(%wa)\n"
                              "%a: f32[64, 100] = aten.mm.default(%x, %ta)\n"
                              "%tb: f32[128, 100] = aten.t.default(%wb)\n"
                              "%b: f32[64, 100] = aten.mm.default(%x, %tb)\n"
                              "%y: f32[64, 100] = aten.mul.Tensor(%a, %b)\n"
                              "output %y\n";
    static const tu_param ps[] = {{"wa", 100, 128}, {"wb", 100, 128}};
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    tu_write_graph(dir, text, ps, 2);
    run_out o = run(dir, "spyre", CC_SIBLINGS_ALWAYS);
    CU_ASSERT_EQUAL(o.bad, 0);
    CU_ASSERT_EQUAL(o.products, 2);
    tu_rmtree(dir);
}

/* A model's heads: products of one normed x whose results are graph
 * outputs (one with a bias add, one also read by a later node).  Fused,
 * their results are the outputs laid one after another (stick group
 * after stick group, so for any number of rows): one product kernel,
 * every output checked against the reference, on both chips and for 1
 * and 4 rows. */
static void test_heads_that_are_outputs_are_one_product(void)
{
    static const tu_param ps[] = {{"w0", 128, 64}, {"w1", 128, 64}, {"w2", 256, 64}, {"b2", 256, 0}};
    static const char *const cfgs[] = {"spyre", "spyre-4core"};
    for (int rows = 1; rows <= 4; rows += 3) {
        char text[2048], dir[512];
        snprintf(text, sizeof text,
                 "graph heads\n"
                 "weights \"weights.safetensors\"\n"
                 "input %%x: f32[%d, 64]\n"
                 "param %%w0: f32[128, 64] = \"w0\"\n"
                 "param %%w1: f32[128, 64] = \"w1\"\n"
                 "param %%w2: f32[256, 64] = \"w2\"\n"
                 "param %%b2: f32[256] = \"b2\"\n"
                 "%%n: f32[%d, 64] = aten.relu.default(%%x)\n"
                 "%%t0: f32[64, 128] = aten.t.default(%%w0)\n"
                 "%%h0: f32[%d, 128] = aten.mm.default(%%n, %%t0)\n"
                 "%%t1: f32[64, 128] = aten.t.default(%%w1)\n"
                 "%%h1: f32[%d, 128] = aten.mm.default(%%n, %%t1)\n"
                 "%%t2: f32[64, 256] = aten.t.default(%%w2)\n"
                 "%%h2: f32[%d, 256] = aten.addmm.default(%%b2, %%n, %%t2)\n"
                 "%%s: f32[%d, 128] = aten.mul.Tensor(%%h1, 2)\n"
                 "output %%h0, %%h1, %%h2, %%s\n",
                 rows, rows, rows, rows, rows, rows);
        tu_tmpdir(dir, sizeof dir);
        tu_write_graph(dir, text, ps, 4);
        for (int c = 0; c < 2; c++) {
            run_out o = run(dir, cfgs[c], CC_SIBLINGS_ALWAYS);
            CU_ASSERT_EQUAL(o.bad, 0);
            CU_ASSERT_EQUAL(o.products, 2); /* h0 with h1, h2 (its bias add, not alike) */
            CU_ASSERT_EQUAL(run(dir, cfgs[c], CC_SIBLINGS_NEVER).products, 3);
        }
        tu_rmtree(dir);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"q, k and v projections are one product that reads x once",
         test_qkv_projections_are_one_product_that_reads_x_once},
        {"q, k and v projections validate on the 4-core chip", test_qkv_projections_validate_on_the_4core_chip},
        {"q, k and v go by head to the attention cores without DRAM",
         test_qkv_go_by_head_to_the_attention_cores_without_dram},
        {"on a chip of 256 tokens the hand-off by head signals a real token",
         test_qkv_by_head_on_a_chip_of_256_tokens_signal_a_real_token},
        {"gate and up products fused validate", test_gate_and_up_products_fused_validate},
        {"the default is the program of lower estimate", test_the_default_is_the_program_of_lower_estimate},
        {"siblings of partial sticks stay apart", test_siblings_of_partial_sticks_stay_apart},
        {"heads that are outputs are one product", test_heads_that_are_outputs_are_one_product},
        {NULL, NULL},
    };
    return tu_run("siblings", tests);
}
